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
#include "dpopt/tune.h"

#define DPO__MAXOPTS 80

static const dpo_cli_opt_t dpo__audit1_opts[] = {
    {"--one-run", "audit.one_run", NULL, "the one-run audit of the training (or dpopt admm) run the other options describe"},
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
    "their eps at M = 1000 even with the noise halved.  dpopt admm's DP-ADMM and DP-AccADMM:\n"
    "dpopt audit --one-run --admm METHOD [dpopt admm's options] FILE (its own --help).\n"
    "dpopt tune's search by parallel composition: dpopt audit --one-run [dpopt tune's options]\n"
    "--tune (its own --help; the canaries are rows of the final part; --tune last, since\n"
    "Open MPI's mpirun reads a --tune followed by more words as its own option).\n"
    "The run is real: it spends its budget and keeps its journal.  Its run directory (--out,\n"
    "default runs/audit-ALGO-YYYYmmdd-HHMMSS) is train's: config.ini, ledger.jsonl, trace.csv,\n"
    "model.txt (with the canaries' columns), summary.json (train's, with the audit's result and\n"
    "verdict), FAILED, a checkpoint while stopped (dpopt audit --resume RUN continues it).\n"
    "Exit status: 0 bound below the claim, 1 usage, 2 bad data, 4 runtime failure, 5 interrupted\n"
    "(SIGTERM/SIGINT: checkpoint written, continue with --resume RUN),\n"
    "6 the lower bound exceeds the claimed eps (privacy violation found).\n";

/* with the rows of dpo__audit1_opts after it */
static const dpo_cli_opt_t dpo__audit1_admm_row[] = {
    {"--admm", "admm.method", "METHOD", "dpadmm or dpaccadmm (as dpopt admm --method)"},
    {NULL, NULL, NULL, NULL}};

static const char dpo__audit1_admm_more[] =
    "Runs DP-ADMM or DP-AccADMM (Xu et al. 2020, Alg. 2 / 3) once, as dpopt admm --method\n"
    "METHOD would with the same options and FILE, with M canary rows added, each included\n"
    "with probability 1/2 (Steinke, Nasr and Jagielski, \"Privacy auditing with one (1)\n"
    "training run\", 2023).  A canary is a row with one nonzero (the declared --row-l2-bound) in\n"
    "a feature column of its own, labelled -1 when excluded (dpopt admm's neighbours are\n"
    "replace-one).  dpopt admm fits no intercept, so a canary's clipped gradient lies in its own\n"
    "column: at the clip it moves the gradient sum by the release's whole sensitivity.  The\n"
    "auditor sees what the coordinator broadcasts: every noised gradient (u0's included) the\n"
    "iterates are computed from; each canary is scored by the likelihood ratio of its column\n"
    "over the releases and the right guesses give a lower bound on eps valid with confidence\n"
    "1 - A whatever the data.  The bound is loose by design: Gaussian releases show a lost\n"
    "factor of noise only with many canaries (a halved noise at eps 2.5, delta 1e-5 with\n"
    "100000 canaries).  Central trust, A = I, logistic regression.  Private consensus ADMM is\n"
    "refused with the numbers of its settings: each party clips its whole message, so the\n"
    "canaries are one a party, as many as ranks, and with so few the bound cannot pass the\n"
    "claim or passes it with the probability the refusal computes (every guess right bounds\n"
    "eps by 1.03 at 16 parties and delta 1e-3).\n"
    "The run is real: it spends its budget and keeps its journal, in dpopt admm's run\n"
    "directory (--out, default runs/audit-METHOD-YYYYmmdd-HHMMSS) with the audit's result and\n"
    "verdict in summary.json; it does not resume (a stopped audit's charges stay spent).\n"
    "Exit status: 0 bound below the claim, 1 usage, 2 bad data, 4 runtime failure, 5 interrupted,\n"
    "6 the lower bound exceeds the claimed eps (privacy violation found).\n";

static const char dpo__audit1_tune_more[] =
    "Runs dpopt tune once with the same options, searched by parallel composition (--split S,\n"
    "the default for a grid), with M canary rows added to the final part's rows, each included\n"
    "with probability 1/2 (Steinke, Nasr and Jagielski, \"Privacy auditing with one (1) training\n"
    "run\", 2023).  The tune partitions the rows by a secret keyed draw into a validation part,\n"
    "one training part a candidate and a final part on which the chosen candidate trains again\n"
    "at the whole budget; each row is in one part, so the tune is (eps, delta)-DP for every\n"
    "partition (McSherry, \"Privacy integrated queries\", 2009).  The canaries are rows of the\n"
    "final part, named by the plan before any row is read: the candidates and the selection\n"
    "never see them, and the final run, dpopt train's run of the chosen settings, is audited\n"
    "as dpopt audit --one-run audits train (canaries in columns of their own, every release of\n"
    "that run observed, the same bound), as strong.  The geometric search (--mean, --valid,\n"
    "--valid-fraction) is refused with the numbers of why (a canary reaches its output through\n"
    "one repetition at a third of the budget); so are a tune without a grid (train's recipe\n"
    "once: audit it with dpopt audit --one-run), softmax, --checkpoint-every and --resume.\n"
    "The run is real: it spends its budget and keeps its journal, in dpopt tune's directory\n"
    "(--out, default runs/tune-YYYYmmdd-HHMMSS) with the audit's result and verdict in\n"
    "summary.json.\n"
    "Exit status: 0 bound below the claim, 1 usage, 2 bad data, 4 runtime failure, 5 interrupted\n"
    "(nothing to resume: the charges stay spent),\n"
    "6 the lower bound exceeds the claimed eps (privacy violation found).\n";

/* dpopt audit --one-run --tune [dpopt tune's options]: the whole audit (dpo_tune_audit1_run) */
static int dpo__audit1_tune(const dpo_cli_ctx_t *ctx, int argc, char **argv, const char *tag,
                            dpo_config_t *cfg) {
  dpo_cli_opt_t opts[DPO__MAXOPTS], tmp[DPO__MAXOPTS];
  dpo_audit1_result_t res;
  char **args = malloc((size_t)(argc + 1) * sizeof *args), *pos[1];
  int n = 0, npos = 0, rc, quiet = 0;
  if (!args) return dpo_cli_fail(ctx, "audit", DPO_ENOMEM);
  for (int i = 0; i < argc; i++)
    if (strcmp(argv[i], "--tune")) args[n++] = argv[i]; /* the mode, not a setting */
  args[n] = NULL;
  dpo_cli_opts_cat(tmp, DPO__MAXOPTS, dpo_cli_tune_opts, dpo_cli_data_opts);
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, tmp, dpo__audit1_opts);
  rc = dpo_cli_parse(ctx, n, args, opts, "usage: mpirun --quiet -np P dpopt audit --one-run "
                     "[dpopt tune's options] [--canaries M] [--alpha A] [--json FILE] --tune",
                     dpo__audit1_tune_more, cfg, pos, 0, &npos);
  free(args);
  if (rc) return rc > 0 ? 0 : DPO_EXIT_USAGE;
  if ((rc = dpo_config_get_bool(cfg, "run.quiet", 0, &quiet)))
    return dpo_cli_fail(ctx, "audit", rc);
  if (!dpo_config_get(cfg, "model.intercept") && !dpo_config_get(cfg, "model.no_intercept"))
    dpo_config_set(cfg, "model.intercept", "1", "default (dpopt tune)");
  dpo_msg_set_quiet(quiet || ctx->rank != 0);
  dpo_run_signals_install();
  rc = dpo_tune_audit1_run(ctx->comm, cfg, ctx->rank == 0 ? stdout : NULL, &res);
  dpo_run_signals_restore();
  if (rc == DPO_EINTR) {
    if (ctx->rank == 0)
      fprintf(stderr, "dpopt audit: %s (the audit does not resume)\n", dpo_errmsg());
    return DPO_EXIT_INTR;
  }
  if (rc) return dpo_cli_fail(ctx, "audit", rc);
  if (ctx->rank == 0) {
    dpo_audit1_print(stdout, &res, tag);
    printf("tune: the canaries are rows of the final part (named before any row was read), "
           "whose run is the chosen candidate's at the whole budget; the candidates, the "
           "selection and the other parts hold none (parallel composition: the claim holds "
           "for each partition of the other rows)\n");
  }
  return res.violation ? DPO_EXIT_AUDIT : 0;
}

/* dpopt audit --one-run --admm METHOD [dpopt admm's options] FILE */
static int dpo__audit1_admm_start(const dpo_cli_ctx_t *ctx, int argc, char **argv,
                                  dpo_config_t *cfg) {
  static const char *const drop[] = {"--method", "--alpha", "--resume", "--checkpoint-every",
                                     NULL};
  dpo_cli_opt_t opts[DPO__MAXOPTS], tmp[DPO__MAXOPTS], mine[DPO__MAXOPTS];
  int k = 0, npos = 0, rc;
  for (const dpo_cli_opt_t *o = dpo_cli_admm_opts; o->flag && k < DPO__MAXOPTS - 1; o++) {
    int skip = 0;
    for (int i = 0; drop[i]; i++) skip |= !strcmp(o->flag, drop[i]);
    if (!skip) tmp[k++] = *o;
  }
  memset(&tmp[k], 0, sizeof tmp[k]);
  dpo_cli_opts_cat(mine, DPO__MAXOPTS, dpo__audit1_admm_row, dpo__audit1_opts);
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, mine, tmp);
  dpo_cli_opts_cat(tmp, DPO__MAXOPTS, opts, dpo_cli_data_opts);
  char *pos[1];
  rc = dpo_cli_parse(ctx, argc, argv, tmp, "usage: mpirun --quiet -np P dpopt audit --one-run "
                     "--admm dpadmm|dpaccadmm [dpopt admm's options] [--canaries M] [--alpha A] "
                     "[--json FILE] FILE", dpo__audit1_admm_more, cfg, pos, 1, &npos);
  if (rc) return rc > 0 ? 0 : DPO_EXIT_USAGE;
  if (npos != 1)
    return dpo_cli_fail(ctx, "audit", dpo_err(DPO_EINVAL, "dpopt audit --one-run --admm: one "
                                              "FILE expected (the training data)"));
  if ((rc = dpo_config_set(cfg, "data.train", pos[0], "FILE"))) return dpo_cli_fail(ctx, "audit", rc);
  return -1;
}

int dpo_cmd_audit1_start(const dpo_cli_ctx_t *ctx, int argc, char **argv, const char *tag,
                         dpo_config_t **cfg) {
  dpo_cli_opt_t opts[DPO__MAXOPTS], tmp[DPO__MAXOPTS];
  dpo_cli_opts_cat(tmp, DPO__MAXOPTS, dpo_cli_train_opts, dpo_cli_data_opts);
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, tmp, dpo__audit1_opts);
  char *pos[1];
  int npos, rc, admm = 0, tune = 0;
  for (int i = 0; i < argc; i++) {
    admm |= !strcmp(argv[i], "--admm") || !strncmp(argv[i], "--admm=", 7);
    tune |= !strcmp(argv[i], "--tune");
  }
  if (dpo_config_create(cfg)) return dpo_cli_fail(ctx, "audit", DPO_ENOMEM);
  if (tune) return dpo__audit1_tune(ctx, argc, argv, tag, *cfg);
  /* a run of dpopt admm (run_canary_admm.c): its options and FILE */
  if (admm) return dpo__audit1_admm_start(ctx, argc, argv, *cfg);
  rc = dpo_cli_parse(ctx, argc, argv, opts, "usage: mpirun --quiet -np P dpopt audit --one-run [dpopt train's "
                     "options] [--canaries M] [--alpha A] [--json FILE]\n"
                     "       mpirun --quiet -np P dpopt audit --one-run --admm METHOD [dpopt admm's options] FILE\n"
                     "       mpirun --quiet -np P dpopt audit --one-run [dpopt tune's options] --tune\n"
                     "       mpirun --quiet -np P dpopt audit --resume RUN",
                     dpo__audit1_more, *cfg, pos, 0, &npos);
  if (rc) return rc > 0 ? 0 : DPO_EXIT_USAGE;
  /* dpopt train's default, never on --resume (config.ini rules) */
  if (!dpo_config_get(*cfg, "run.resume") && !dpo_config_get(*cfg, "model.intercept") &&
      !dpo_config_get(*cfg, "model.no_intercept"))
    dpo_config_set(*cfg, "model.intercept", "1", "default (dpopt train)");
  return -1;
}
