/* dpopt simulate: split one data set (LIBSVM or CSV text) into P parties' files for
 * multi-party experiments (issue 7).  The split is dpo_parties_split (dpopt/parties.h), run
 * on rank 0 (a file writer); this file parses the command line. */
#include <stdio.h>

#include "cli/cli.h"
#include "dpopt/parties.h"
#include "dpopt/status.h"

int dpo_cmd_simulate(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {
      {"--parties", "simulate.parties", "P", "number of parties (default 2)"},
      {"--split", "simulate.split", "S", "iid | label | dirichlet (default iid)"},
      {"--pos-frac", "simulate.pos_frac", "F", "label: party 0 gets this fraction of the positives (default 0.8)"},
      {"--alpha", "simulate.alpha", "A", "dirichlet: concentration (default 0.5; large = iid)"},
      {"--seed", "simulate.seed", "S", "random seed of the split (default 1)"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[2];
  int npos, rc, ex;
  int64_t seed = 1;
  dpo_split_opts_t o = {.split = "iid", .parties = 2, .pos_frac = 0.8, .alpha = 0.5};
  if ((ex = dpo_cli_start(ctx, "simulate", argc, argv, opts,
                          "usage: dpopt simulate [options] IN OUT_PATTERN",
                          "Splits the data lines of IN (LIBSVM or CSV text) into P files named by\n"
                          "OUT_PATTERN with %d replaced by the party index 0..P-1 (\".%d\" is appended\n"
                          "when the pattern has none).  Use them with parties.data = OUT_PATTERN.\n"
                          "Splits: iid (equal random blocks), label (party 0 gets --pos-frac of the\n"
                          "positives), dirichlet (per-class Dirichlet(--alpha) shares).\n",
                          &cfg, pos, 2, &npos, "IN and OUT_PATTERN expected")) >= 0)
    goto out;
  dpo_config_get_str(cfg, "simulate.split", "iid", &o.split);
  if ((rc = dpo_config_get_int(cfg, "simulate.parties", 2, &o.parties)) ||
      (rc = dpo_config_get_int(cfg, "simulate.seed", 1, &seed)) ||
      (rc = dpo_config_get_double(cfg, "simulate.pos_frac", 0.8, &o.pos_frac)) ||
      (rc = dpo_config_get_double(cfg, "simulate.alpha", 0.5, &o.alpha)) ||
      (rc = dpo_split_check(&o)))
    goto fail;
  o.seed = (uint64_t)seed;
  dpo_cli_warn_unused(ctx, cfg);
  rc = ctx->rank == 0 ? dpo_parties_split(pos[0], pos[1], &o, stdout) : DPO_OK;
  ex = 0;
  if (!(rc = dpo_agree(ctx->comm, rc))) goto out;
fail:
  ex = dpo_cli_fail(ctx, "simulate", rc);
out:
  dpo_config_destroy(cfg);
  return ex;
}
