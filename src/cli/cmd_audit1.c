/* dpopt audit --one-run: the one-run audit of a real training run (the audit kind's one-run
 * mode, dpo_run_audit1_result in dpopt/run.h, src/run/run_canary.c); this file parses its
 * command line (dpopt train's options and the audit's), cmd_audit.c runs and prints it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/run.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 80

static const dpo_cli_opt_t dpo__audit1_opts[] = {
    {"--one-run", "audit.one_run", NULL, "the one-run audit of the training run the other options describe"},
    {"--canaries", "audit.canaries", "M", "canary rows, each included with probability 1/2 (default 1000)"},
    {"--alpha", "audit.alpha", "A", "the bound holds with confidence 1 - A (default 0.05)"},
    {"--json", "audit.json", "FILE", "also write the result as JSON (summary.json in the run directory has it too)"},
    {NULL, NULL, NULL, NULL}};

static const char dpo__audit1_more[] =
    "Trains once, as dpopt train would with the same options (data, algorithm, budget,\n"
    "schedule), with M canary rows added, each included with probability 1/2 (Steinke, Nasr and\n"
    "Jagielski, \"Privacy auditing with one (1) training run\", 2023).  A canary is a row with\n"
    "one nonzero (the largest the declared row bounds allow) in a feature column of its own;\n"
    "excluded, it is absent (add-remove neighbours) or labelled -1 (replace-one).  The auditor\n"
    "sees every release of the run (each noised gradient the coordinator broadcasts), scores\n"
    "each canary by the likelihood ratio of its column, guesses the highest scores included and the lowest\n"
    "excluded, and turns the number of right guesses into a lower bound on eps, valid with\n"
    "confidence 1 - A whatever the data.  One training run, so a data holder can run it on the\n"
    "real data set; the bound is loose by design (at most about ln(M) for M canaries), a check\n"
    "that the noise is there, not an estimate of the true eps.  Logistic regression; the DP-GD\n"
    "family and dp-sgd-rdp are scored on every release (central or secagg), pnsgd and the\n"
    "phased methods, whose steps are not releases, on the final model's weight on each\n"
    "canary's column.  A lost noise is seen when each canary's share of the claim is large:\n"
    "a pure-eps release whose clip every canary saturates (the canary then carries a / (a + 1)\n"
    "of the sensitivity, a its value); Gaussian releases (delta > 0) give a bound far below\n"
    "their eps at M = 1000 even with the noise halved.  dpopt admm's methods are not audited by\n"
    "one run (use dpopt audit --admm).\n"
    "The run is real: it spends its budget and keeps its journal.  Its run directory (--out,\n"
    "default runs/audit-ALGO-YYYYmmdd-HHMMSS) is train's: config.ini, ledger.jsonl, trace.csv,\n"
    "model.txt (with the canaries' columns), summary.json (train's, with the audit's result and\n"
    "verdict), FAILED, a checkpoint while stopped (dpopt audit --resume RUN continues it).\n"
    "Exit status: 0 bound below the claim, 1 usage, 2 bad data, 4 runtime failure, 5 interrupted\n"
    "(SIGTERM/SIGINT: checkpoint written, continue with --resume RUN),\n"
    "6 the lower bound exceeds the claimed eps (privacy violation found).\n";

int dpo_cmd_audit1_start(const dpo_cli_ctx_t *ctx, int argc, char **argv, dpo_config_t **cfg) {
  dpo_cli_opt_t opts[DPO__MAXOPTS], tmp[DPO__MAXOPTS];
  dpo_cli_opts_cat(tmp, DPO__MAXOPTS, dpo_cli_train_opts, dpo_cli_data_opts);
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, tmp, dpo__audit1_opts);
  char *pos[1];
  int npos, rc;
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--admm"))
      return dpo_cli_fail(ctx, "audit", dpo_err(DPO_EINVAL, "dpopt audit --one-run audits a run of "
                          "dpopt train; dpopt admm's methods (DP-ADMM, DP-AccADMM, private "
                          "consensus) are not audited by one run yet: their parties load their "
                          "rows through dpopt admm's own job, which adds no canaries.  Audit them "
                          "with dpopt audit --admm METHOD [--white-box]"));
  if (dpo_config_create(cfg)) return dpo_cli_fail(ctx, "audit", DPO_ENOMEM);
  rc = dpo_cli_parse(ctx, argc, argv, opts, "usage: mpirun --quiet -np P dpopt audit --one-run [dpopt train's "
                     "options] [--canaries M] [--alpha A] [--json FILE]\n"
                     "       mpirun --quiet -np P dpopt audit --resume RUN",
                     dpo__audit1_more, *cfg, pos, 0, &npos);
  if (rc) return rc > 0 ? 0 : DPO_EXIT_USAGE;
  /* dpopt train's default, never on --resume (config.ini rules) */
  if (!dpo_config_get(*cfg, "run.resume") && !dpo_config_get(*cfg, "model.intercept") &&
      !dpo_config_get(*cfg, "model.no_intercept"))
    dpo_config_set(*cfg, "model.intercept", "1", "default (dpopt train)");
  return -1;
}
