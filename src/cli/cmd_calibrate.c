/* dpopt calibrate: the Gaussian noise needed for a target (eps, delta), given the sampling and
 * the number of steps, from the Renyi accountant (bisection on the noise multiplier, rounded
 * up so the target is never exceeded).  Pure arithmetic on public parameters: no data is read.
 * The neighbouring relation (--neighbours) decides the sensitivity of a per-example bound
 * (--bound B: dpo_sens, 2B replace-one, B add-remove) and which sampling analyses apply
 * (poisson: add-remove, wor: replace-one; the default is the sampling's own relation).
 * Rank 0 computes and prints; every rank returns the same exit status. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"

static int dpo__calibrate(const dpo_config_t *cfg, FILE *out) {
  double eps, delta, sens, mu, bound;
  int64_t steps, m, n;
  const char *sampling, *rel_s;
  dpo_neighbours_t rel;
  int rc;
  if ((rc = dpo_config_get_double(cfg, "calibrate.eps", NAN, &eps)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.delta", NAN, &delta)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.sensitivity", NAN, &sens)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.bound", NAN, &bound)) ||
      (rc = dpo_config_get_str(cfg, "calibrate.neighbours", NULL, &rel_s)) ||
      (rc = dpo_config_get_double(cfg, "calibrate.admm_mu", NAN, &mu)) ||
      (rc = dpo_config_get_int(cfg, "calibrate.steps", 1, &steps)) ||
      (rc = dpo_config_get_int(cfg, "calibrate.batch", 0, &m)) ||
      (rc = dpo_config_get_int(cfg, "calibrate.n", 0, &n)) ||
      (rc = dpo_config_get_str(cfg, "calibrate.sampling", "none", &sampling)))
    return rc;
  if (!(eps > 0) || !(delta > 0 && delta < 1))
    return dpo_err(DPO_EINVAL, "give the target with --eps E (> 0) and --delta D (in (0, 1))");
  int poisson = !strcmp(sampling, "poisson"), sampled = strcmp(sampling, "none") != 0;
  if (!rel_s) rel = poisson ? DPO_NEIGHBOURS_ADD_REMOVE : DPO_NEIGHBOURS_REPLACE_ONE;
  else if ((rc = dpo_neighbours_parse(rel_s, &rel))) return rc;
  if (sampled && poisson != (rel == DPO_NEIGHBOURS_ADD_REMOVE))
    return dpo_err(DPO_EINVAL, "--sampling %s is analysed for %s neighbours, not %s", sampling,
                   poisson ? "add-remove (Mironov-Talwar-Zhang 2019)"
                           : "replace-one (Wang-Balle-Kasiviswanathan 2019)",
                   dpo_neighbours_name(rel));
  if (!isnan(bound) && !isnan(sens))
    return dpo_err(DPO_EINVAL, "give --bound (per-example) or --sensitivity, not both");
  if (!isnan(bound)) {
    if (!(bound > 0) || !isfinite(bound)) return dpo_err(DPO_EINVAL, "--bound must be > 0");
    sens = dpo_sens(rel, bound);
  } else if (isnan(sens)) {
    sens = 1.0;
  }
  if (!(sens > 0) || !isfinite(sens))
    return dpo_err(DPO_EINVAL, "--sensitivity must be > 0");
  if (sampled && (m < 1 || n < m))
    return dpo_err(DPO_EINVAL, "--sampling %s needs --batch M and --n N with 1 <= M <= N",
                   sampling);
  double z, e, a_opt;
  if ((rc = dpo_rdp_calibrate(sampling, m, n, steps, eps, delta, &z))) return rc;
  dpo_rdp_curve_t c;
  dpo_rdp_curve_init(&c);
  if ((rc = dpo_rdp_curve_add(&c, sampling, m, n, z, steps)) ||
      (rc = dpo_rdp_eps(&c, delta, &e, &a_opt)))
    return rc;
  fprintf(out, "# Gaussian noise for (eps=%g, delta=%g) over %lld step%s, sampling %s", eps, delta,
          (long long)steps, steps == 1 ? "" : "s", sampling);
  if (sampled)
    fprintf(out, " (%s %lld of %lld, q = %.6g)", strcmp(sampling, "poisson") ? "m" : "expected",
            (long long)m, (long long)n, (double)m / (double)n);
  fprintf(out, "\n# Renyi accountant: orders 1.25..256, conversion min(classic, Balle et al. 2020 "
               "Thm 21); noise rounded up\n");
  fprintf(out, "neighbours        %s\n", dpo_neighbours_name(rel));
  fprintf(out, "noise_multiplier  %.9g\n", z);
  fprintf(out, "sigma             %.9g   (= multiplier * sensitivity %g)\n", z * sens, sens);
  fprintf(out, "achieved_eps      %.9g   (at order %g; target %g)\n", e, a_opt, eps);
  if (steps == 1 && !sampled) {
    double s_an;
    if ((rc = dpo_gauss_analytic_sigma(sens, eps, delta, &s_an))) return rc;
    fprintf(out, "analytic_sigma    %.9g   (Balle-Wang 2018, exact for one release)\n", s_an);
  }
  if (!isnan(mu)) {
    double s8, a8;
    if (sampled) return dpo_err(DPO_EINVAL, "--admm-mu compares full-batch steps: --sampling none");
    /* 004 eq. (8) with c/n = sensitivity */
    if ((rc = dpo_admm_thm1_sigma(sens, 1, steps, eps, delta, mu, &s8, &a8))) return rc;
    fprintf(out, "admm_eq8_sigma    %.9g   (004 Thm 1 eq. (8), mu=%g, alpha=%g; ratio to RDP "
                 "%.4g)\n", s8, mu, a8, s8 / (z * sens));
  }
  return DPO_OK;
}

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
      {"--admm-mu", "calibrate.admm_mu", "MU",
       "also print the DP-ADMM noise of 004 eq. (8) with this split mu in (0, 1)"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[1];
  int npos, rc, ex = DPO_EXIT_OK;
  if (dpo_config_create(&cfg)) return dpo_cli_fail(ctx, "calibrate", DPO_ENOMEM);
  rc = dpo_cli_parse(ctx, argc, argv, opts,
                     "usage: dpopt calibrate --eps E --delta D [--steps T] [--sampling S "
                     "--batch M --n N] [--sensitivity S | --bound B] [--neighbours R]",
                     "Prints the smallest Gaussian noise (found by bisection with the Renyi\n"
                     "accountant, rounded up) for which T releases are (eps, delta)-DP.  Uses\n"
                     "only public parameters.\n",
                     cfg, pos, 1, &npos);
  if (rc) {
    ex = rc > 0 ? DPO_EXIT_OK : DPO_EXIT_USAGE;
    goto out;
  }
  if (npos != 0) {
    if (ctx->rank == 0) fprintf(stderr, "dpopt calibrate: error: no positional arguments\n");
    ex = DPO_EXIT_USAGE;
    goto out;
  }
  rc = ctx->rank == 0 ? dpo__calibrate(cfg, stdout) : DPO_OK;
  if ((rc = dpo_agree(ctx->comm, rc))) ex = dpo_cli_fail(ctx, "calibrate", rc);
out:
  dpo_config_destroy(cfg);
  return ex;
}
