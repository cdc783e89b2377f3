/* dpopt calibrate: the Gaussian noise needed for a target (eps, delta), given the sampling and
 * the number of steps, from the Renyi accountant (bisection on the noise multiplier, rounded
 * up so the target is never exceeded).  Pure arithmetic on public parameters: no data is read.
 * The neighbouring relation (--neighbours) decides the sensitivity of a per-example bound
 * (--bound B: dpo_sens, 2B replace-one, B add-remove) and which sampling analyses apply
 * (poisson: add-remove, wor: replace-one; the default is the sampling's own relation).
 * Rank 0 computes and prints (dpo_rdp_calibrate_report, dpopt/privacy.h); every rank returns
 * the same exit status. */
#include <stdio.h>

#include "cli/cli.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"

int dpo_cmd_calibrate(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {
      {"--eps", "calibrate.eps", "E", "target eps (> 0)"},
      {"--delta", "calibrate.delta", "D", "target delta (in (0, 1))"},
      {"--steps", "calibrate.steps", "T", "number of noised releases composed (default 1)"},
      {"--sampling", "calibrate.sampling", "S",
       "none | poisson (each example kept with prob. M/N) | wor (M of N without replacement)"},
      {"--batch", "calibrate.batch", "M", "batch size (expected batch size for poisson)"},
      {"--n", "calibrate.n", "N", "data set size"},
      {"--sensitivity", "calibrate.sensitivity", "S",
       "L2 sensitivity of one release (default 1: print the noise multiplier)"},
      {"--bound", "calibrate.bound", "B",
       "per-example L2 bound instead: sensitivity 2B (replace-one) or B (add-remove)"},
      {"--neighbours", "calibrate.neighbours", "R",
       "replace-one | add-remove (default: the sampling's own; poisson is add-remove)"},
      {"--accountant", "calibrate.accountant", "A",
       "rdp | pld | auto (default: the smaller noise of the two; pld: none/poisson/wor)"},
      {"--admm-mu", "calibrate.admm_mu", "MU",
       "also print the DP-ADMM noise of Xu et al. 2020, eq. (8) with this split mu in (0, 1)"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[1];
  int npos, rc, ex;
  if ((ex = dpo_cli_start(ctx, "calibrate", argc, argv, opts,
                          "usage: dpopt calibrate --eps E --delta D [--steps T] [--sampling S "
                          "--batch M --n N] [--sensitivity S | --bound B] [--neighbours R]",
                          "Prints the smallest Gaussian noise (found by bisection with the Renyi\n"
                          "accountant, rounded up) for which T releases are (eps, delta)-DP.  Uses\n"
                          "only public parameters.\n",
                          &cfg, pos, 1, &npos, NULL)) >= 0)
    goto out;
  ex = DPO_EXIT_USAGE;
  if (npos != 0) {
    if (ctx->rank == 0) fprintf(stderr, "dpopt calibrate: error: no positional arguments\n");
    goto out;
  }
  ex = DPO_EXIT_OK;
  rc = ctx->rank == 0 ? dpo_rdp_calibrate_report(cfg, stdout) : DPO_OK;
  if ((rc = dpo_agree(ctx->comm, rc))) ex = dpo_cli_fail(ctx, "calibrate", rc);
out:
  dpo_config_destroy(cfg);
  return ex;
}
