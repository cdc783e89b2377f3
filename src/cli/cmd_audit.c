/* dpopt audit: empirical lower bound on the privacy loss of one of dpopt's own private
 * algorithms.  The run (worst-case neighbouring data sets, trials over the ranks, the
 * Clopper-Pearson analysis) is the run API's audit kind (dpopt/run.h, run.command = audit:
 * src/run/run_audit.c), with train's run directory, --resume, signals and exit codes; this
 * file parses the command line and prints the result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/run.h"
#include "dpopt/audit.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#ifdef DPO_TEST_SWITCHES
#include "privacy/test_switches.h"
#endif

static const dpo_cli_opt_t dpo__audit_opts[] = {
    {"--algo", "algo.name", "NAME", "private algorithm to audit (see dpopt train --help)"},
    {"--mechanism", "audit.mechanism", "M", "laplace: audit one Laplace release instead of an algorithm"},
    {"--admm", "audit.admm", "METHOD", "audit a private method of dpopt admm instead: dpadmm, dpaccadmm or consensus (--private)"},
    {"--trials", "audit.trials", "N", "runs on each of the two data sets (default 5000; with --white-box, 50000 for dp-sgd-rdp's batches without replacement, whose test needs them)"},
    {"--rows", "audit.n", "N", "rows of the synthetic data set (default 10)"},
    {"--row", "audit.row", "I", "index of the row that differs (default 0)"},
    {"--alpha", "audit.alpha", "A", "the bound holds with confidence 1 - A (default 0.05)"},
    {"--secagg-parties", "audit.secagg_parties", "P", "privacy.trust = secagg: each trial simulates P parties, their P noise shares sized for the P - k honest (default 1)"},
    {"--white-box", "audit.white_box", NULL, "the adversary sees every release of the run (each noised gradient the coordinator broadcasts), not only the final model"},
    {"--tune", "audit.tune", NULL, "audit dpopt tune's search by parallel composition (--split): each trial one tune over the grid, the canary in the final part; the adversary sees the chosen candidate and its final model"},
    {"--algos", "tune.algo", "A,B", "--tune: the candidates' algorithms (as dpopt tune --algos)"},
    {"--steps", "tune.step", "X,Y", "--tune: candidate step constants (as dpopt tune --steps)"},
    {"--epochs", "tune.epochs", "E,F", "--tune: dp-sgd-rdp candidate epochs (as dpopt tune --epochs)"},
    {"--lrs", "tune.lr", "X,Y", "--tune: dp-sgd-rdp candidate step sizes (as dpopt tune --lrs)"},
    {"--split", "tune.split", "S", "--tune: the fraction of the rows that trains and selects the candidates (default 0.1, as dpopt tune)"},
    {"--mean", "tune.mean", "K", "--tune: audit the geometric search instead (mean number of repetitions, as dpopt tune --mean)"},
    {"--canary", "audit.canary", "WHERE", "--tune --mean: the canary in a training row (train, default) or a validation row (valid: audits the score's noise; the candidates train on zero rows)"},
    {"--json", "audit.json", "FILE", "also write the result as JSON (summary.json in the run directory has it too)"},
    {"--row-l1-bound", "data.row_l1_bound", "B", "declared public bound on ||u_i||_1"},
    {"--row-l2-bound", "data.row_l2_bound", "B", "declared public bound on ||u_i||_2"},
    {"--lambda", "model.lambda", "L", "regularization lambda (default 1e-4)"},
    {"--iters", "algo.iters", "T", "iterations (default 100)"},
    {"--batch", "algo.m", "M", "minibatch size m (default n: full batch)"},
    {"--x0", "algo.x0", "V", "initial point: every coordinate V (default: the saturating start)"},
    {"--eps", "privacy.eps", "E", "privacy budget epsilon"},
    {"--delta", "privacy.delta", "D", "privacy budget delta (default 0)"},
    {"--clip", "privacy.clip", "N:C", "per-example gradient clipping, l1:C or l2:C (--admm: l2:C)"},
    {"--public-n", "privacy.public_n", "N", "add-remove: a public data set size (dp-sgd-rdp: the Poisson rate m/N, the steps and the default batch; the DP-GD family: the mean's denominator) (default: a noisy row count, charged privacy.count_eps = eps/100 first)"},
    {"--rho", "admm.rho", "R", "--admm: ADMM penalty rho (default 1)"},
    {"--mu", "privacy.mu", "M", "--admm dpadmm|dpaccadmm: mu of Xu et al. 2020, Thm 1 (default 0.5)"},
    {"--sigma-rule", "privacy.sigma_rule", "R", "--admm dpadmm|dpaccadmm: eq8 (default), rdp or ledger"},
    {"--restart", "admm.restart", "K", "--admm dpaccadmm: momentum restart every K iterations (default 50)"},
    {"--out", "run.dir", "DIR", "run directory (default runs/audit-NAME-YYYYmmdd-HHMMSS): config.ini, trace.csv (trials done, largest charge, seconds), summary.json (the bound, the claim, the verdict, what the audit saw, the audited plan's ledger)"},
    {"--checkpoint-every", "run.checkpoint_every", "K", "write RUN/checkpoint (the trials done so far) every K trials per rank (default 0: only on SIGTERM/SIGINT)"},
    {"--resume", "run.resume", "RUN", "continue the stopped audit in directory RUN: its trials done are kept"},
    {"--progress", "run.progress", NULL, "a progress line on stderr per block of trials (default: after 10 s)"},
    {"--quiet", "run.quiet", NULL, "no progress on stderr"},
    {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
    {NULL, NULL, NULL, NULL}};

static const char dpo__audit_more[] =
    "Runs the algorithm N times on each of two neighbouring synthetic data sets built from the\n"
    "declared bounds (privacy.neighbours = replace-one | add-remove), picks a threshold test of\n"
    "the released model on half the runs and reports the one-sided Clopper-Pearson lower bound\n"
    "eps_lb = ln((P[S|D]_lo - delta) / P[S|D']_hi) from the other half, beside the eps the\n"
    "ledger charged.  A lower bound, not a proof: eps_lb <= claimed eps is what a correct\n"
    "implementation gives; eps_lb > claimed eps means the charge does not hold.  A negative\n"
    "bound says nothing and is shown as 0 (--json keeps it as eps_lb_raw).\n"
    "--admm METHOD audits dpopt admm's private methods the same way (replace-one, --clip l2:C,\n"
    "--delta default 1e-3, --iters T default 200, eta = 1/L from --row-l2-bound): dpadmm and\n"
    "dpaccadmm release (x_T, y_T) with A = I and --lambda the l1 weight; consensus one party's\n"
    "noised, clipped messages (z_T).\n"
    "--white-box: the adversary sees every release (the coordinator's broadcasts) and tests\n"
    "the sum over the releases of each one's log-likelihood ratio for the audited row (a\n"
    "canary whose clipped gradient is the only signal); Gaussian full-batch runs are bounded\n"
    "through Gaussian DP (mu, Dong-Roth-Su 2019), Laplace runs per release when the canary is\n"
    "at full sensitivity in every release, otherwise distribution-free.  pnsgd and phased-sgd\n"
    "release only their final model (hidden state): the canary is the first row of the public\n"
    "order, its one step taken at the public start, and a threshold on the final model along\n"
    "its direction bounds mu (test final-gdp); phased-erm is refused (its charge is 4x the\n"
    "largest sensitivity one row can have).  Under privacy.trust = secagg the release is the\n"
    "unmasked sum with the parties' noise shares (the DP-GD family: Polya shares at pure eps,\n"
    "discrete Gaussian shares with delta > 0, tested as Gaussian releases).\n"
    "--admm consensus --white-box sees each broadcast noised message; the adversary replays the\n"
    "party on both data sets with the public consensus to know each world's message (test gdp).\n"
    "The line 'white box:' states the test and what it assumes.\n"
    "--tune audits dpopt tune's default search (parallel composition, --split): each trial\n"
    "runs the grid's candidates on their parts, report-noisy-max on the validation part and\n"
    "the chosen candidate's final run on the final part, which is D or D' (the canary's part:\n"
    "for a fixed partition each part's release is bounded alone); the test is a threshold on\n"
    "the final model along the canary, standardised per chosen candidate (test tune); with\n"
    "--white-box every release of the final run is observed and tested as train's (the grid's\n"
    "final runs must release alike; the final-model families are refused).\n"
    "--tune --mean K audits the geometric search: each trial runs K repetitions (geometric,\n"
    "hidden) on D or D' at tune's eps0 each (eps/3 at --delta 0; with --delta, Papernot and\n"
    "Steinke's RDP bound, dp-sgd-rdp candidates at its multiplier), scored by tune's noisy\n"
    "count on rows both sets share; the adversary sees the chosen model and its noisy score;\n"
    "the test (tune-mean) counts 'the chosen x <= 0 along the canary and its score > b/2',\n"
    "fixed in advance, whose ratio grows with the hidden K (Papernot and Steinke,\n"
    "\"Hyperparameter tuning with Renyi differential privacy\", 2022).  With --canary valid\n"
    "the canary is a validation row every model predicts right instead (the score's noise,\n"
    "most of each repetition's cost at delta > 0): the candidates train on zero rows both\n"
    "sets share, and the test (tune-mean-valid) counts 'both signs of the chosen x >= 0 and\n"
    "its score in [1, 2]', likelier without the canary; it does not see the training noise,\n"
    "which the default canary tests (too weakly to catch a halved dp-sgd-rdp noise).\n"
    "--one-run with dpopt train's options audits one real training run instead, with canary\n"
    "rows, in train's run directory (dpopt audit --one-run --help).\n"
    "The trials run on synthetic data: an audit reads no private data, spends no budget and\n"
    "keeps no journal.  Its run directory (--out) is train's: config.ini, trace.csv,\n"
    "summary.json, FAILED, a checkpoint while stopped (--resume RUN keeps the trials done).\n"
    "Exit status: 0 bound below the claim, 1 usage, 4 runtime failure, 5 interrupted\n"
    "(SIGTERM/SIGINT: checkpoint written, continue with --resume RUN),\n"
    "6 the lower bound exceeds the claimed eps (privacy violation found).\n"
#ifdef DPO_TEST_SWITCHES
    "dpopt-test (make check's build of dpopt, never installed) also takes the test switches\n"
    "that plant a fault the audit must catch: --test-break-noise (every noise scale halved),\n"
    "--test-drop-share (secagg: one party's share fewer), --test-keep-all-rows (secagg:\n"
    "party-local sampling keeps every row, the sampled rate charged), --test-seed S (the\n"
    "trials' noise from a seeded stream, so the outcome is reproducible), --test-noise-factor F\n"
    "(every noise scale times F).\n"
#endif
    ;

#ifdef DPO_TEST_SWITCHES
/* dpopt-test only (privacy/test_switches.h): the planted faults, taken out of argv before
 * parsing (so no config key reaches them) and set for this one audit; returns their bits. */
static int dpo__audit_test_args(int argc, char **argv, char **args, int *nargs) {
  int test = 0;
  *nargs = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--test-break-noise")) test |= 1;
    else if (!strcmp(argv[i], "--test-drop-share")) test |= 2;
    else if (!strcmp(argv[i], "--test-keep-all-rows")) test |= 8;
    else if (!strcmp(argv[i], "--test-noise-factor") && i + 1 < argc) {
      test |= 16;
      dpo__test_noise_factor(strtod(argv[++i], NULL));
    }
    else if (!strcmp(argv[i], "--test-seed") && i + 1 < argc) {
      test |= 4;
      dpo__test_audit_seed(1, (uint64_t)strtoull(argv[++i], NULL, 10));
    } else args[(*nargs)++] = argv[i];
  }
  args[*nargs] = NULL;
  if (test & 1) dpo__test_noise_factor(0.5);
  if (test & 2) dpo__test_drop_share(1);
  if (test & 8) dpo__test_keep_all_rows(1);
  return test;
}
static void dpo__audit_test_reset(void) {
  dpo__test_noise_factor(1.0);
  dpo__test_drop_share(0);
  dpo__test_keep_all_rows(0);
  dpo__test_audit_seed(0, 0);
}
#endif

/* The table's note of the faults dpopt-test planted (bits of dpo__audit_test_args; none in
 * dpopt). */
static const char *dpo__audit_tag(int test, char *buf, size_t cap) {
  buf[0] = '\0';
#ifdef DPO_TEST_SWITCHES
  snprintf(buf, cap, "%s%s", test & 1 ? "  [TEST: noise halved]"
                             : test & 2 ? "  [TEST: one noise share dropped]"
                             : test & 8 ? "  [TEST: every row kept, the sampled rate charged]"
                             : test & 16 ? "  [TEST: noise scaled]" : "",
           test & 4 ? "  [TEST: seeded]" : "");
#else
  (void)test;
  (void)cap;
#endif
  return buf;
}

int dpo_cmd_audit(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_config_t *cfg = NULL;
  dpo_run_t *run = NULL;
  char *pos[1], tag[128];
  int npos, rc, ex, test = 0, one = 0;
  dpo_audit_result_t res;
  dpo_audit1_result_t res1;

#ifdef DPO_TEST_SWITCHES
  char **args = malloc((size_t)(argc + 1) * sizeof *args);
  if (!args) return dpo_cli_fail(ctx, "audit", DPO_ENOMEM);
  test = dpo__audit_test_args(argc, argv, args, &argc);
  argv = args;
#endif
  for (int i = 0; i < argc; i++) one |= !strcmp(argv[i], "--one-run");
  /* --one-run: a real training run, audited once (dpopt train's options, cmd_audit1.c) */
  dpo__audit_tag(test, tag, sizeof tag);
  if ((ex = one ? dpo_cmd_audit1_start(ctx, argc, argv, tag, &cfg)
                : dpo_cli_start(ctx, "audit", argc, argv, dpo__audit_opts,
                                "usage: mpirun --quiet -np P dpopt audit --algo NAME | --admm METHOD --eps E [options]\n"
                                "       mpirun --quiet -np P dpopt audit --resume RUN",
                                dpo__audit_more, &cfg, pos, 0, &npos, NULL)) >= 0)
    goto out;
  if ((rc = dpo_config_set(cfg, "run.command", "audit", "dpopt audit"))) goto fail;
  dpo_run_signals_install();
  if ((rc = dpo_run_create(ctx->comm, cfg, &run))) goto fail; /* --resume merged here */
  dpo_run_set_stop(run, dpo_run_signal_flag());
  /* every key checked (the kind's setup) before the run directory is claimed */
  if ((rc = dpo_cli_check_ranks(ctx, dpo_run_config(run))) || (rc = dpo_run_setup(run)) ||
      (rc = dpo_run_load(run)))
    goto fail;
  if ((rc = dpo_run_solve(run)) == DPO_EINTR) { /* checkpoint written: the work done kept */
    if (ctx->rank == 0) fprintf(stderr, "dpopt audit: %s\n", dpo_errmsg());
    ex = DPO_EXIT_INTR;
    goto out;
  }
  if (rc || (rc = dpo_run_evaluate(run)) || (rc = dpo_run_write(run))) goto fail;
  /* the one-run mode is the run's (a --resume RUN of one has no --one-run) */
  one = dpo_run_audit1_result(run, &res1) == DPO_OK;
  if (!one && (rc = dpo_run_audit_result(run, &res))) goto fail;
  if (ctx->rank == 0) {
    dpo__audit_tag(test, tag, sizeof tag);
    if (one) dpo_audit1_print(stdout, &res1, tag);
    else dpo_audit_print(stdout, &res, tag);
    printf("run directory %s\n", dpo_run_dir(run));
  }
  ex = (one ? res1.violation : res.violation) ? DPO_EXIT_AUDIT : 0;
  goto out;
fail:
  dpo_cli_warn_typos(ctx, run ? dpo_run_config(run) : cfg);
  ex = dpo_cli_fail(ctx, run ? dpo_run_stage(run) : "audit", rc);
out:
#ifdef DPO_TEST_SWITCHES
  dpo__audit_test_reset();
  free(args);
#endif
  dpo_run_destroy(run); /* after the error is printed: FAILED in a run directory it claimed */
  dpo_config_destroy(cfg);
  dpo_run_signals_restore();
  return ex;
}
