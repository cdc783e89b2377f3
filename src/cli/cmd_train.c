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

#define DPO__MAXOPTS 64

static const dpo_cli_opt_t dpo__train_opts[] = {
    {"--data", "data.train", "FILE", "training data (libsvm, csv, idx[.gz], bin)"},
    {"--test", "data.test", "FILE", "held-out data for accuracy/loss reports"},
    {"--row-l1-bound", "data.row_l1_bound", "B", "declared public bound on ||u_i||_1"},
    {"--row-l2-bound", "data.row_l2_bound", "B", "declared public bound on ||u_i||_2"},
    {"--row-bound-action", "data.row_bound_action", "A", "reject | clip rows over a declared bound (default reject)"},
    {"--report-rows", "data.report_rows", NULL, "name rejected rows / count clipped rows: NON-PRIVATE output (private algorithms)"},
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
    {"--seed", "run.seed", "S", "reproducible randomness: the run is then NOT private"},
    {"--out", "run.dir", "DIR", "run directory (default runs/ALGO-YYYYmmdd-HHMMSS)"},
    {"--fstar", "run.fstar", "F", "newton | none | a number: F* for the f-f* column (default none)"},
    {"--trace-every", "run.trace_every", "K", "trace row every K iterations (default: every one up to 200, else about 200 rows; each row evaluates F on the training data unless --no-trace-loss)"},
    {"--no-trace-loss", "run.no_trace_loss", NULL, "do not evaluate F(x_t) for the trace"},
    {"--quiet", "run.quiet", NULL, "no progress or messages on stderr"},
    {"--progress", "run.progress", NULL, "progress lines on stderr even when it is not a terminal (mpirun, logs)"},
    {"--checkpoint-every", "run.checkpoint_every", "N", "write RUN/checkpoint every N iterations (default 0: only on SIGTERM/SIGINT)"},
    {"--resume", "run.resume", "RUN", "continue the interrupted run in directory RUN from its checkpoint"},
    {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
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
             "config.ini (the effective configuration) and, for private runs, ledger.jsonl.\n"
             "Exit status: 0 ok, 1 usage, 2 bad data, 3 budget exhausted, 4 runtime failure,\n"
             "5 interrupted (SIGTERM/SIGINT: checkpoint written, continue with --resume RUN).\n");
}

/* The method best at a budget, from measured results on a9a (README, "Choosing a private
 * method"; mean test accuracy of 5 unseeded runs, with intercept): with delta > 0, DP-SGD
 * (Poisson batches under add-remove, 256 rows, 10 epochs, clip l2:1) beats every pure-eps
 * method at eps = 0.1, 1 and 10; with delta = 0 DP-NAG-opt is the best pure-eps method, with
 * L1 clipping at a third of the declared row bound and on a short fixed schedule below eps 1.
 * Only public settings decide; a key the user set is never changed. */
static void dpo__auto_algo(const dpo_cli_ctx_t *ctx, dpo_config_t *cfg) {
  double eps = NAN, delta = 0;
  if (dpo_config_get(cfg, "algo.name") || dpo_config_get(cfg, "run.resume") ||
      !dpo_config_get(cfg, "privacy.eps") || dpo_config_get_double(cfg, "privacy.eps", NAN, &eps) ||
      dpo_config_get_double(cfg, "privacy.delta", 0, &delta) || dpo_config_get(cfg, "parties.n") ||
      dpo_config_get(cfg, "privacy.trust"))
    return;
  const char *why;
  const char *model = dpo_config_get(cfg, "model.name");
  int softmax = model && !strcmp(model, "softmax");
  if (delta > 0) {
    /* Binary (logreg) rows: 256 rows, 10 epochs, step eta = 2 below eps 1; from eps 1 on the
     * noise no longer limits the run, its length does: eta 4 (eps >= 1) and 20 epochs
     * (eps >= 3), picked on a validation split of a9a's training rows (README).  Softmax
     * (K classes, d = K (p + 1) coordinates): the Fashion-MNIST recipe jobs/acceps/fmnist.ini
     * (1024 rows, 40 epochs, eta 5 with the snr2 rule, whose step also shrinks with the
     * noise share d sigma^2/m^2 of G^2, which grows with K d).  1024 rows and 40 epochs (the
     * same steps as 512 and 20, each mean gradient with half the noise, twice the work):
     * +0.22 points at eps 1.2 and +0.08 at 0.12 on the validation split, 4 paired seeds;
     * 1024 rows and 20 epochs lost 0.15, 2048 and 80 gained no more.  Public settings only. */
    /* Softmax from eps 3: clip l2:3 and 40 epochs, where the recipe is limited by clipping
     * and length, not by noise (validation split, eps scaled by 60000/50000, 2 runs a cell:
     * 0.8442 against 0.8367 at eps 3, 0.848 against 0.8387 at eps 10; at eps 1 and 0.1 the
     * recipe stays ahead: README). */
    const int sm3 = softmax && eps >= 3;
    const char *m = sm3 ? "512" : softmax ? "1024" : "256";
    const char *ep = softmax ? "40" : eps >= 3 ? "20" : "10";
    const char *eta = softmax ? "5" : eps >= 1 ? "4" : NULL;
    const char *def[][2] = {{"algo.name", "dp-sgd-rdp"}, {"privacy.neighbours", "add-remove"},
                            {"algo.sampling", "poisson"}, {"algo.m", m},
                            {"algo.epochs", ep}, {"privacy.clip", sm3 ? "l2:3" : "l2:1"},
                            {"algo.eta", eta}, {"algo.eta_rule", softmax ? "snr2" : NULL}};
    int rel = dpo_config_get(cfg, "privacy.neighbours") != NULL;
    for (size_t i = 0; i < sizeof def / sizeof def[0]; i++)
      if (def[i][1] && !dpo_config_get(cfg, def[i][0]) && !(rel && i == 2))
        dpo_config_set(cfg, def[i][0], def[i][1], "default (--eps without --algo)");
    if (rel && !strcasecmp(dpo_config_get(cfg, "privacy.neighbours"), "replace-one") &&
        !strcmp(dpo_config_get(cfg, "algo.sampling") ? dpo_config_get(cfg, "algo.sampling") : "", "poisson"))
      dpo_config_set(cfg, "algo.sampling", "wor", "default (--eps without --algo)");
    why = sm3 ? "delta > 0, softmax, eps >= 3: DP-SGD with Poisson batches (512 rows, 40 epochs, step eta 5 "
                "by the snr2 rule, clip l2:3) is the most accurate measured method"
        : softmax ? "delta > 0, softmax: DP-SGD with Poisson batches (1024 rows, 40 epochs, step eta 5 by the snr2 "
                    "rule, clip l2:1; jobs/acceps/fmnist.ini) is the most accurate measured method"
        : eps >= 3 ? "delta > 0, eps >= 3: DP-SGD with Poisson batches (256 rows, 20 epochs, step eta 4, clip l2:1, "
                     "noise from the PLD accountant) is the most accurate measured method"
        : eps >= 1 ? "delta > 0: DP-SGD with Poisson batches (256 rows, 10 epochs, step eta 4, clip l2:1, noise from "
                     "the PLD accountant) is the most accurate measured method at every eps"
                   : "delta > 0: DP-SGD with Poisson batches (256 rows, 10 epochs, clip l2:1, noise from the PLD "
                     "accountant) is the most accurate measured method at every eps";
  } else {
    /* Pure eps: DP-NAG-opt (001 Sec. 4.1).  Two public choices, picked once from small grids
     * on a validation split of a9a's training rows (not a9a.t), like dp-sgd-rdp's step
     * constant (README, "Choosing a private method"); both change only convergence, never the
     * privacy (every step is charged as before, with the sensitivity of what it releases):
     * - clip l1:B1/3 when the row L1 bound B1 is declared and no clip is given: the L1
     *   sensitivity drops from 2 B1 to 2 B1/3 (Laplace noise / 3) while only rows with
     *   |logistic coefficient| > 1/3 are scaled; the step scale c grows to make up for it.
     * - at small eps (4.6) picks T' = 2 (eps = 0.1) and two steps of 1/L leave the majority
     *   class: a short fixed schedule with a longer step learns instead, beta = 0.5, the
     *   budget still allocated by (4.4) (T below: by the relation).  T is tied to eps, so it
     *   fits data of a9a's size (n ~ 3e4). */
    double B1 = NAN;
    char clip[64] = "";
    const char *src = "default (--eps without --algo)";
    /* add-remove neighbours, as with delta > 0: one row's gradient moves the released sum by
     * its clipped bound, not twice it, at the price of a public size (a noisy count of 1% of
     * eps unless --public-n is given).  A user's replace-one is kept. */
    if (!dpo_config_get(cfg, "privacy.neighbours"))
      dpo_config_set(cfg, "privacy.neighbours", "add-remove", src);
    const int ar = !strcasecmp(dpo_config_get(cfg, "privacy.neighbours"), "add-remove");
    if (softmax) {
      /* Softmax on raw pixels (Fashion-MNIST: d = K (p + 1) = 7850, L = B2^2/2 = 395): (4.6)
       * picks T' = 1 and steps of c/L barely move.  A fixed short schedule, T = 5 / 10 / 30
       * below eps 0.3 / from 0.3 / from 3, step 150/L, clip l1:B1/16 (a softmax gradient
       * has ||g||_1 = ||p - y||_1 ||u||_1 <= 2 B1: the Laplace noise of every step drops 16x,
       * while the step makes up for the scaled gradients), picked once from single runs on
       * a validation split of Fashion-MNIST's training images (README).  Privacy unchanged:
       * every step is charged as before, with the sensitivity of its release. */
      if (!dpo_config_get(cfg, "privacy.clip") &&
          !dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &B1) && B1 > 0 && isfinite(B1)) {
        snprintf(clip, sizeof clip, "l1:%.17g", B1 / 16);
        dpo_config_set(cfg, "privacy.clip", clip, src);
        /* under add-remove (half the noise) longer steps pay: 600/L below eps 0.3 (on T = 2)
         * and from eps 1 (validation split, 3 runs a cell, README) */
        const char *c = ar && (eps < 0.3 || eps >= 1) ? "600" : "150";
        if (!dpo_config_get(cfg, "algo.c")) dpo_config_set(cfg, "algo.c", c, src);
        if (ar && eps < 0.3 && !dpo_config_get(cfg, "algo.iters"))
          dpo_config_set(cfg, "algo.iters", "2", src);
      }
      dpo_config_set(cfg, "algo.name", "dp-nag-opt", src);
      if (!dpo_config_get(cfg, "algo.choose_T")) dpo_config_set(cfg, "algo.choose_T", "0", src);
      if (!dpo_config_get(cfg, "algo.iters"))
        dpo_config_set(cfg, "algo.iters", eps < 0.3 ? "5" : eps < 3 ? "10" : "30", src);
      why = "delta = 0, softmax: DP-NAG-opt on a short fixed schedule (T = 2 to 30, step 150/L or "
            "600/L, clip l1:B1/16) is the most accurate measured pure-eps method";
      goto say;
    }
    if (!dpo_config_get(cfg, "privacy.clip") &&
        !dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &B1) && B1 > 0 && isfinite(B1))
      snprintf(clip, sizeof clip, "l1:%.17g", B1 / 3);
    /* the short schedule's range and lengths: under add-remove the noise of a step is half
     * that of replace-one at the same eps, and the long schedule wins from eps 0.15 (validation
     * split, 10 runs a cell: T = 5 below 0.075, 8 below 0.15) */
    const int short_T = eps < (ar ? 0.15 : 1);
    const char *c = short_T ? (clip[0] ? "12" : "4") : (clip[0] ? "4" : NULL);
    dpo_config_set(cfg, "algo.name", "dp-nag-opt", src);
    if (clip[0]) dpo_config_set(cfg, "privacy.clip", clip, src);
    if (c && !dpo_config_get(cfg, "algo.c")) dpo_config_set(cfg, "algo.c", c, src);
    if (short_T) {
      const char *T = ar ? (eps < 0.075 ? "5" : "8") : eps < 0.075 ? "3" : eps < 0.2 ? "5" : "8";
      if (!dpo_config_get(cfg, "algo.choose_T")) dpo_config_set(cfg, "algo.choose_T", "0", src);
      if (!dpo_config_get(cfg, "algo.beta")) dpo_config_set(cfg, "algo.beta", "0.5", src);
      if (!dpo_config_get(cfg, "algo.iters")) dpo_config_set(cfg, "algo.iters", T, src);
      why = clip[0] ? "delta = 0, small eps: DP-NAG-opt on a short fixed schedule (T = 3 to 8, "
                      "step 12/L, momentum 0.5, clip l1:B1/3) is the most accurate measured "
                      "pure-eps method"
                    : "delta = 0, small eps: DP-NAG-opt on a short fixed schedule (T = 3 to 8, "
                      "step 4/L, momentum 0.5) is the most accurate measured pure-eps method";
    } else {
      if (!dpo_config_get(cfg, "algo.iters")) /* T' <= 200 by (4.6), as in the demo */
        dpo_config_set(cfg, "algo.iters", "200", src);
      why = clip[0] ? "delta = 0: DP-NAG-opt is the most accurate measured pure-eps method "
                      "(step 4/L, clip l1:B1/3)"
                    : "delta = 0: DP-NAG-opt is the most accurate measured pure-eps method";
    }
  }
say:;
  int quiet = 0;
  dpo_config_get_bool(cfg, "run.quiet", 0, &quiet);
  if (ctx->rank == 0 && !quiet)
    fprintf(stderr, "dpopt train: no --algo: using %s (%s; %s neighbours; README \"Choosing a "
            "private method\")\n", dpo_config_get(cfg, "algo.name"), why,
            dpo_config_get(cfg, "privacy.neighbours")); /* both branches set it */
}

int dpo_cmd_train(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, dpo__train_opts, dpo_cli_data_opts);
  static char more[32768]; /* the algorithm table with every key (dpo__algo_help) */
  dpo__algo_help(more, sizeof more);
  dpo_config_t *cfg = NULL;
  dpo_run_t *run = NULL;
  char *pos[1];
  int npos, rc, ex = 0;

  if (dpo_config_create(&cfg)) return dpo_cli_fail(ctx, "train", DPO_ENOMEM);
  dpo_run_signals_install(); /* every rank: SIGTERM/SIGINT stop the run after a step */
  rc = dpo_cli_parse(ctx, argc, argv, opts, "usage: mpirun -np P dpopt train [options]", more, cfg,
                     pos, 0, &npos);
  if (rc) {
    ex = rc > 0 ? 0 : DPO_EXIT_USAGE;
    goto out;
  }
  /* the CLI's defaults (the library's model.intercept default stays 0): a bias term, and with
   * --eps but no --algo the method best at that budget; never on --resume (config.ini rules) */
  if (!dpo_config_get(cfg, "run.resume") && !dpo_config_get(cfg, "model.intercept") &&
      !dpo_config_get(cfg, "model.no_intercept"))
    dpo_config_set(cfg, "model.intercept", "1", "default (dpopt train)");
  dpo__auto_algo(ctx, cfg);
  if ((rc = dpo_run_create(ctx->comm, cfg, &run))) goto fail; /* --resume merged here */
  dpo_run_set_stop(run, dpo_run_signal_flag());
  if ((rc = dpo_cli_check_ranks(ctx, dpo_run_config(run)))) goto fail; /* before any file */
  if ((rc = dpo_run_setup(run)) || (rc = dpo_run_load(run))) goto fail;
  int solved = dpo_run_solve(run);
  if (solved == DPO_EINTR) { /* checkpoint written, every charge journalled */
    if (ctx->rank == 0)
      fprintf(stderr, "dpopt train: %s; run directory %s\n", dpo_errmsg(), dpo_run_dir(run));
    ex = DPO_EXIT_INTR;
    goto out;
  }
  if ((rc = solved) != DPO_OK && rc != DPO_EBUDGET) goto fail;
  if ((rc = dpo_run_evaluate(run)) || (rc = dpo_run_write(run))) goto fail;
  dpo_run_print(run, stdout);
  ex = solved == DPO_EBUDGET ? DPO_EXIT_BUDGET : 0;
  goto out;
fail:
  dpo_cli_warn_typos(ctx, run ? dpo_run_config(run) : cfg); /* a typo first, also on failure */
  ex = dpo_cli_fail(ctx, dpo_run_stage(run), rc);
out:
  dpo_run_destroy(run); /* after the error is printed: FAILED in a run directory it claimed */
  dpo_config_destroy(cfg);
  dpo_run_signals_restore();
  return ex;
}
