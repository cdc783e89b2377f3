/* dpopt train: the command line of the run API (dpopt/run.h), which does the work and carries
 * the privacy guarantee: settings, run directory, ledger, data, solve, outputs. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "dpopt/optim.h"
#include "dpopt/run.h"
#include "dpopt/status.h"
#ifdef DPO_TEST_SWITCHES
#include <stdlib.h>

#include "privacy/test_switches.h"
#endif

#define DPO__MAXOPTS 64

const dpo_cli_opt_t dpo_cli_train_opts[] = {
    {"--data", "data.train", "FILE", "training data (libsvm, csv, idx[.gz], bin)"},
    {"--test", "data.test", "FILE", "held-out data for accuracy/loss reports"},
    {"--row-l1-bound", "data.row_l1_bound", "B", "declared public bound on ||u_i||_1"},
    {"--row-l2-bound", "data.row_l2_bound", "B", "declared public bound on ||u_i||_2"},
    {"--row-bound-action", "data.row_bound_action", "A", "reject | clip rows over a declared bound (default: clip for private runs, which refuse reject; reject otherwise)"},
    {"--report-rows", "data.report_rows", NULL, "refused by private runs (which row exceeds a bound is private); non-private runs always name or count such rows"},
    {"--model", "model.name", "NAME", "logreg | ridge | lsq | softmax (K classes, labels 0..K-1; default logreg)"},
    {"--classes", "model.classes", "K", "softmax: the number of classes K (public; needed by --model softmax)"},
    {"--lambda", "model.lambda", "L", "regularization lambda in lambda*||x||^2 (default 1e-4)"},
    {"--intercept", "model.intercept", NULL, "fit a bias term b (the default of dpopt train: model.intercept = 1; regularized by the same lambda; model.txt line \"intercept b\")"},
    {"--no-intercept", "model.no_intercept", NULL, "no bias term (overrides model.intercept; the library's default)"},
    {"--algo", "algo.name", "NAME", "algorithm (list below; default: with --eps the method best at that budget, see below; else gd)"},
    {"--iters", "algo.iters", "T", "iterations (default: a private algorithm's own schedule length, else 100)"},
    {"--gtol", "algo.gtol", "G", "stop when ||grad F|| <= G (non-private algorithms; default 0)"},
    {"--batch", "algo.m", "M", "minibatch size m (default n: full batch)"},
    {"--epochs", "algo.epochs", "E", "minibatch algorithms (dp-sgd-rdp): passes over the data, T = ceil(E n / m) steps"},
    {"--lr", "algo.lr", "ETA", "step size (dp-sgd-rdp: base rate of its schedule)"},
    {"--x0", "algo.x0", "V|FILE", "initial point: every coordinate V (default 0), or a model.txt (warm start; treated as public)"},
    {"--eps", "privacy.eps", "E", "privacy budget epsilon (private algorithms)"},
    {"--delta", "privacy.delta", "D", "privacy budget delta (default 0)"},
    {"--calibrate", "privacy.calibrate", "HOW", "ledger (default: with delta > 0, scale a pure-eps algorithm's per-step budgets to the ledger's composition) | basic (the papers' split by basic composition)"},
    {"--clip", "privacy.clip", "N:C", "per-example gradient clipping, l1:C or l2:C"},
    {"--public-n", "privacy.public_n", "N", "add-remove: a public data set size (dp-sgd-rdp: the Poisson rate m/N, the steps and the default batch; the DP-GD family: the mean's denominator) (default: a noisy row count, charged privacy.count_eps = eps/100 first)"},
    {"--trust-coordinator", "privacy.trust_coordinator", NULL, "secagg with privacy.collude = 0: acknowledge that the coordinator is then trusted (its party's noise share is counted as honest); refused without it"},
    {"--seed", "run.seed", "S", "reproducible randomness: the run is then NOT private"},
    {"--out", "run.dir", "DIR", "run directory (default runs/ALGO-YYYYmmdd-HHMMSS)"},
    {"--budget-store", "privacy.store", "STORE", "the data set's budget store (dpopt budget): "
     "the run's budget is reserved there before the data are loaded, refused (exit 3) if it does "
     "not fit what is left, and settled to what the run composed when it ends"},
    {"--journal-key", "privacy.journal_key", "FILE", "key of the journal's hash chain (default "
     "$DPOPT_JOURNAL_KEY, else ~/.config/dpopt/journal.key, made on first use); never saved in "
     "the run: give it again with --resume"},
    {"--fstar", "run.fstar", "F", "newton | none | a number: F* for the f-f* column (default none)"},
    {"--trace-every", "run.trace_every", "K", "trace row every K iterations (default: every one up to 200, else about 200 rows; each row evaluates F on the training data unless --no-trace-loss)"},
    {"--no-trace-loss", "run.no_trace_loss", NULL, "do not evaluate F(x_t) for the trace"},
    {"--no-train-eval", "run.no_train_eval", NULL, "do not evaluate the final model on the training rows (the non-private train loss, objective and metric: a pass over all rows; summary.json has them null); the test set, if any, is still evaluated"},
    {"--quiet", "run.quiet", NULL, "no progress or messages on stderr"},
    {"--verbose", "run.verbose", NULL, "the summary on stdout also names the accountant, its bound, the neighbouring relation, the journal and the release plan; stderr says how many PLD compositions the noise calibration paid"},
    {"--progress", "run.progress", NULL, "progress lines on stderr even when it is not a terminal (mpirun, logs)"},
    {"--checkpoint-every", "run.checkpoint_every", "N", "write RUN/checkpoint every N iterations (default 0: only on SIGTERM/SIGINT); every --algo (phased methods: an iteration is a phase; a stopped pnsgd pass writes its model once resumed to its end)"},
    {"--resume", "run.resume", "RUN", "continue the interrupted run in directory RUN from its checkpoint"},
    {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
    {"--agglomerate", "run.agglomerate", "HOW", "auto | off | on: solve on rank 0 alone, the other ranks' rows sent to it once, when a step's meetings of the ranks cost more than its work shared among them saves (auto, the default: measured before the solve; one data holder only: no parties, central trust, no checkpoints; summary.json's ranks_solving and agglomerate say what ran and why)"},
    {"--agglomerate-max-mb", "run.agglomerate_max_mb", "MB", "agglomerate only while rank 0 would hold at most MB of rows (the public bound: the data set's size times a row's width; default 256)"},
    {NULL, NULL, NULL, NULL}};

/* One key line of an algorithm's entry. */
static size_t dpo__algo_key_help(char *buf, size_t cap, const dpo_algo_param_t *p) {
  int n = snprintf(buf, cap, "      algo.%-13s %s (default %s)\n", p->key, p->meaning, p->def);
  return n < 0 ? 0 : (size_t)n;
}

/* The algorithm table with, per algorithm, every key it reads: generated from its own
 * parameter tables (dpo_algo_t.params, then the shared ones it does not override), which
 * dpo_solver_param* enforce, so the list cannot drift from what the code reads. */
static void dpo__algo_help(char *buf, size_t cap) {
  size_t off = (size_t)snprintf(buf, cap, "Algorithms (--algo NAME; a key K below is set with "
                                "--set algo.K=V or [algo] K = V in --config):\n");
  for (const dpo_algo_t *const *a = dpo_algo_list(); *a && off < cap; a++) {
    off += (size_t)snprintf(buf + off, cap - off, "  %-12s %s%s\n", (*a)->name, (*a)->summary,
                            (*a)->is_private ? " [private]" : "");
    for (const dpo_algo_param_t *p = (*a)->params; p && p->key && off < cap; p++)
      off += dpo__algo_key_help(buf + off, cap - off, p);
    for (const dpo_algo_param_t *p = (*a)->shared; p && p->key && off < cap; p++) {
      int own = 0;
      for (const dpo_algo_param_t *q = (*a)->params; q && q->key; q++)
        own |= strcmp(q->key, p->key) == 0;
      if (!own) off += dpo__algo_key_help(buf + off, cap - off, p);
    }
  }
  if (off < cap)
    snprintf(buf + off, cap - off,
             "\nOutputs in the run directory: trace.csv (columns marked _nonprivate are computed on\n"
             "the private training data and must not be released), model.txt, summary.json,\n"
             "config.ini (the effective configuration) and, for private runs, ledger.jsonl; under\n"
             "privacy.trust = secagg, local or shares each party K keeps ledger.partyK.jsonl, its own\n"
             "journal of what it charged, in its own run directory party.K.out (or parties.out =\n"
             "DIR%%d), given in the configuration its ranks read; required for every party with a\n"
             "rank other than the coordinator's (party 0 without it: this directory).\n"
             "A secagg dp-sgd-rdp or DP-GD family run that lost a party's rank is continued by\n"
             "--resume RUN, with its parties (each party's budget store keeps the run's one\n"
             "reservation) or, dp-sgd-rdp with per-party files, without some of them:\n"
             "--set parties.remaining=0,2 (the numbers of those that continue; each keeps its\n"
             "number, files, directory, keys and account) or --set parties.count=P' (the first P').\n"
             "Exit status: 0 ok, 1 usage, 2 bad data, 3 budget exhausted, 4 runtime failure,\n"
             "5 interrupted (SIGTERM/SIGINT: checkpoint written, continue with --resume RUN).\n");
}

#ifdef DPO_TEST_SWITCHES
/* dpopt-test only (privacy/test_switches.h): a coordinator that deviates from the plan
 * (--test-coordinator sigma|gamma|shares|extra|kind[:N] | key | run=ID, and for dpopt-test admm
 * ignore-refusal: consensus ADMM's coordinator going on past its ledger's refusal) and a party
 * that fails in its N-th secure-aggregation release (--test-party-fail N) or dies in it
 * (--test-party-kill N: SIGKILL), taken out of argv before parsing; the one parser of
 * dpopt-test train and admm (cli.h). */
int dpo_cli_test_secagg_args(const char *cmd, int argc, char **argv, int *nargs) {
  static const char *const kinds[] = {"", "sigma", "gamma", "shares", "extra", "kind"};
  const int admm = !strcmp(cmd, "admm");
  int k = 0, bad = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--test-coordinator") && i + 1 < argc) {
      char kind[16];
      long long at = 1;
      snprintf(kind, sizeof kind, "%s", argv[++i]);
      char *colon = strchr(kind, ':');
      if (colon) *colon = 0, at = atoll(colon + 1);
      int found = !strcmp(kind, "key"); /* a substituted key-agreement key */
      if (found) dpo__secagg_test_substitute_key(1);
      if (!strncmp(argv[i], "run=", 4)) /* an old run's id as the new run's */
        dpo__secagg_test_run_id(argv[i] + 4), found = 1;
      for (int j = 1; j < 6; j++)
        if (!strcmp(kind, kinds[j])) dpo__oracle_test_deviate(j, at), found = 1;
      if (admm && !strcmp(kind, "ignore-refusal")) /* consensus ADMM's coordinator */
        dpo__test_cons_ignore_refusal(1), found = 1;
      bad |= !found;
    } else if (!strcmp(argv[i], "--test-party-fail") && i + 1 < argc) {
      dpo__oracle_test_party_fail(atoll(argv[++i]));
    } else if (!strcmp(argv[i], "--test-step-request")) { /* the request path every step */
      dpo__oracle_test_step_request(1);
    } else if (!strcmp(argv[i], "--test-party-kill") && i + 1 < argc) {
      dpo__oracle_test_party_kill(atoll(argv[++i]));
    } else {
      argv[k++] = argv[i];
    }
  }
  *nargs = k;
  return bad ? dpo_err(DPO_EINVAL, "--test-coordinator: sigma, gamma, shares, extra or kind[:N], "
                       "key or run=ID%s", admm ? ", or ignore-refusal" : "")
             : DPO_OK;
}
#endif

int dpo_cmd_train(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, dpo_cli_train_opts, dpo_cli_data_opts);
  static char more[32768]; /* the algorithm table with every key (dpo__algo_help) */
  dpo__algo_help(more, sizeof more);
  dpo_config_t *cfg = NULL;
  dpo_run_t *run = NULL;
  char *pos[1];
  int npos, rc, ex = 0;

  if (dpo_config_create(&cfg)) return dpo_cli_fail(ctx, "train", DPO_ENOMEM);
#ifdef DPO_TEST_SWITCHES
  if ((rc = dpo_cli_test_secagg_args("train", argc, argv, &argc))) {
    dpo_config_destroy(cfg);
    return dpo_cli_fail(ctx, "train", rc);
  }
#endif
  dpo_run_signals_install(); /* every rank: SIGTERM/SIGINT stop the run after a step */
  rc = dpo_cli_parse(ctx, argc, argv, opts, "usage: mpirun --quiet -np P dpopt train [options]", more, cfg,
                     pos, 0, &npos);
  if (rc) {
    ex = rc > 0 ? 0 : DPO_EXIT_USAGE;
    goto out;
  }
  /* the CLI's default (the library's model.intercept default stays 0): a bias term; never on
   * --resume (config.ini rules) */
  if (!dpo_config_get(cfg, "run.resume") && !dpo_config_get(cfg, "model.intercept") &&
      !dpo_config_get(cfg, "model.no_intercept"))
    dpo_config_set(cfg, "model.intercept", "1", "default (dpopt train)");
  /* with --eps and no --algo the run API picks the method best at that budget
   * (dpo_run_auto_algo, src/run/run_auto.c): the same for every program that embeds it */
  if ((rc = dpo_run_create(ctx->comm, cfg, &run))) goto fail; /* --resume merged here */
  dpo_run_set_stop(run, dpo_run_signal_flag());
  if (!(rc = dpo_cli_run(ctx, "train", run, &ex))) goto out;
fail:
  dpo_cli_warn_typos(ctx, run ? dpo_run_config(run) : cfg); /* a typo first, also on failure */
  ex = dpo_cli_fail(ctx, dpo_run_stage(run), rc);
out:
  dpo_run_destroy(run); /* after the error is printed: FAILED in a run directory it claimed */
  dpo_config_destroy(cfg);
  dpo_run_signals_restore();
  return ex;
}
