/* dpopt mf: matrix factorization with HAMSI or mb-GD (thesis 000, Chapter 3).  The run is
 * the run API's mf kind (dpopt/run.h, run.command = mf: src/run/run_mf.c), with train's run
 * directory, progress, signals and exit codes; this file parses the command line. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/mf.h"
#include "dpopt/run.h"
#include "dpopt/status.h"

int dpo_cmd_mf(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {
      {"--method", "mf.method", "M", "hamsi | mbgd (default hamsi)"},
      {"--part", "mf.part", "P", "hogwild | color | color-b | strata | strata-b (default strata-b)"},
      {"--sched", "mf.sched", "S", "det | shuffle (default det; Sec. 3.4)"},
      {"--rank", "mf.rank", "R", "factor rank (default 50; --plain: 10)"},
      {"--strata", "mf.strata", "K", "strata K (default: ranks for strata*, 20 otherwise)"},
      {"--memory", "mf.memory", "M", "L-BFGS memory (default 5)"},
      {"--cache-mb", "mf.cache_mb", "MB", "STRATA* on P > 1 ranks: keep every item block's L-BFGS history on every rank when it fits in MB, so a ring move sends only the changed slots (default 256; 0 = off)"},
      {"--eta", "mf.eta", "E", "beta_t = (eta t)^gamma divides each step (default 1: beta_t >= 1; --plain HAMSI: 0.5, with strata / strata-b 0.2)"},
      {"--gamma", "mf.gamma", "G", "(default 0.51)"},
      {"--eta-late", "mf.eta_late", "E", "after epoch T (--eta-from) beta_t = (eta T + E (t - T))^gamma: longer late steps for E < eta (unregularized rank 50, 2400 epochs: training RMSE 0.209 -> 0.181 with 0.3; with --biases / --lambda worse) (default 0: off; --plain HAMSI: 0.1)"},
      {"--eta-from", "mf.eta_from", "T", "the epoch --eta-late starts after (default 30; --plain HAMSI: 15)"},
      {"--metric-pow", "mf.metric_pow", "P", "the steps' metric is diag(deg^P dbar^(1-P)) per factor row (deg its ratings, dbar the mean of its side): 1 = diag(deg), 0 = the identity scaled by dbar (default 1; --plain HAMSI with strata / strata-b: 0.5)"},
      {"--sigma0", "mf.sigma0", "S", "degree-scaled gradient step before M pairs / mb-GD (default 0.2)"},
      {"--lambda", "mf.lambda", "L", "L2 regularization (default 10, chosen on gen ratings --realistic; --plain: 0)"},
      {"--biases", "mf.biases", NULL, "model mu + b_u + b_i + x1'x2: global mean and user/item biases fitted with the factors (the default unless --plain)"},
      {"--plain", "mf.plain", NULL, "the thesis's model: factors only, lambda 0, no early stopping, the last epoch returned (Table 3.1; default off)"},
      {"--early-stop", "mf.early_stop", "P", "stop once the held-out RMSE has not improved for P epochs while the training fit went on improving (a sampled training RMSE 0.5% below its value at the best epoch, so plateaus do not stop the run) and keep the best epoch's factors (default 60; 0 or --plain: off)"},
      {"--step-cap", "mf.step_cap", "C", "safeguard: a quasi-Newton block step is at most C gradient steps long, and (strata*) a row's gradient step within its curvature bound (default 30; 0 = both off)"},
      {"--reject-tol", "mf.reject_tol", "F", "safeguard: undo an epoch that raises its repeated stratum's objective (mb-GD: its summed strata's) by more than F, reset the memory (mb-GD: halve the step) (default 0.1; < 0 = off)"},
      {"--init", "mf.init", "A", "initial factors uniform in (0, A) (default 2 sqrt(3/r))"},
      {"--x0", "mf.x0", "DIR", "initial factors from DIR/X1.txt and DIR/X2t.txt (the --out layout; users x R and items x R)"},
      {"--epochs", "mf.epochs", "T", "outer iterations (default: until early stopping ends the run, at most 500; --plain or without early stopping 20; with --time until the time; 0 with --time: until the time)"},
      {"--time", "mf.time", "SEC", "stop after SEC seconds of training (evaluation excluded)"},
      {"--holdout", "mf.holdout", "F", "held-out fraction for test RMSE (default 0.1)"},
      {"--eval-every", "mf.eval_every", "T", "evaluate every T epochs (default 1; 0 = at the end)"},
      {"--eval-budget", "mf.eval_budget", "F", "skip due evaluations that would take evaluation over F of the wall time, but never the first due epoch nor 10 due epochs in a row, so the trace always has rows (default 0.04; 0 = evaluate every T epochs; with --early-stop the held-out RMSE is still taken every T epochs)"},
      {"--seed", "mf.seed", "S", "seed of init, schedule and split (default 1)"},
      {"--repro", "mf.repro", NULL, "bit-identical results on any number of ranks (COLOR*: one exchange per color instead of per stratum)"},
      {"--zero-based", "mf.zero_based", NULL, "ids in the file start at 0 (default 1, MovieLens)"},
      {"--out", "run.dir", "DIR", "run directory (default runs/METHOD-YYYYmmdd-HHMMSS): config.ini, trace.csv (as the run goes), X1.txt, X2t.txt (factor matrices: a row per user / item), biases.txt (biased model), summary.json; a diverged run leaves its last good point there and FAILED"},
      {"--checkpoint-every", "run.checkpoint_every", "N", "write RUN/checkpoint every N epochs (default 0: only on SIGTERM/SIGINT); a resumed run computes the factors of the uninterrupted one"},
      {"--resume", "run.resume", "RUN", "continue the interrupted run in directory RUN from its checkpoint (no RATINGS; the same number of ranks)"},
      {"--quiet", "run.quiet", NULL, "no progress or messages on stderr"},
      {"--progress", "run.progress", NULL, "progress lines on stderr even when it is not a terminal (mpirun, logs)"},
      {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  dpo_run_t *run = NULL;
  char *pos[1];
  int npos = 0, rc = DPO_OK, ex = 0;
  if ((ex = dpo_cli_start(ctx, "mf", argc, argv, opts, "usage: dpopt mf [options] RATINGS\n"
                          "       dpopt mf --resume RUN",
                          "Factorizes the ratings matrix Y ~ X1 X2 (thesis eq. 3.1) with HAMSI, the\n"
                          "incremental L-BFGS of thesis Alg. 3, or the mb-GD baseline.  Each rank owns\n"
                          "user intervals and their ratings.  strata, strata-b: item blocks travel around\n"
                          "the ranks, one stratum per step.  hogwild, color, color-b: the item factors\n"
                          "are replicated and one Allreduce per subset (color: per color) sums the ranks'\n"
                          "item steps; exact for color/color-b, first-order only for hogwild.\n"
                          "The training RMSE is a NON-PRIVATE diagnostic; the held-out RMSE is the one\n"
                          "to report.  This command adds no privacy noise: its output is not private.\n"
                          "Outputs in the run directory (--out), as for dpopt train: config.ini, trace.csv,\n"
                          "X1.txt, X2t.txt (biases.txt), summary.json.  Exit status: 0 ok, 1 usage, 2 bad\n"
                          "data, 4 runtime failure (a diverged run: its last good point and FAILED),\n"
                          "5 interrupted (SIGTERM/SIGINT: checkpoint written, continue with --resume RUN).\n",
                          &cfg, pos, 1, &npos, NULL)) >= 0)
    goto out;
  const int resume = dpo_config_get(cfg, "run.resume") != NULL;
  if (resume ? npos != 0 : npos != 1) {
    ex = dpo_cli_fail(ctx, "mf", dpo_err(DPO_EINVAL, resume ? "--resume RUN takes no RATINGS "
                                         "(the run's own)" : "one RATINGS file expected (see "
                                         "--help)"));
    goto out;
  }
  if ((!resume && (rc = dpo_config_set(cfg, "data.train", pos[0], "RATINGS"))) ||
      (rc = dpo_config_set(cfg, "run.command", "mf", "dpopt mf")))
    goto fail;
  /* SIGTERM / SIGINT: a checkpoint at the end of the epoch, then exit 5 */
  dpo_run_signals_install();
  if ((rc = dpo_run_create(ctx->comm, cfg, &run))) goto fail; /* --resume merged here */
  dpo_run_set_stop(run, dpo_run_signal_flag());
  if (!(rc = dpo_cli_run(ctx, "mf", run, &ex))) goto out;
fail:
  dpo_cli_warn_typos(ctx, run ? dpo_run_config(run) : cfg);
  ex = dpo_cli_fail(ctx, run ? dpo_run_stage(run) : "mf", rc);
out:
  dpo_run_destroy(run); /* after the error is printed: FAILED in a run directory it claimed */
  dpo_config_destroy(cfg);
  dpo_run_signals_restore();
  return ex;
}

/* dpopt mf-predict: the run's model for (user, item) pairs (dpo_mf_predict_file, rank 0). */
int dpo_cmd_mf_predict(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {
      {"--run", "mfp.run", "DIR", "a dpopt mf --out directory (required)"},
      {"--out", "mfp.out", "FILE", "write the predictions to FILE (default standard output)"},
      {"--zero-based", "mfp.zero_based", NULL, "ids in PAIRS start at 0 (default 1, MovieLens)"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[1];
  int npos, rc, ex, zb = 0;
  const char *run = NULL, *opath = NULL;
  FILE *out = NULL;
  if ((ex = dpo_cli_start(ctx, "mf-predict", argc, argv, opts,
                          "usage: dpopt mf-predict --run DIR [--out FILE] PAIRS",
                          "Predicts the rating of each (user, item) pair of PAIRS (one per line, the\n"
                          "first two fields; a ratings file works: its ratings are ignored) with the\n"
                          "model of a dpopt mf run: mean + b_u + b_i + X1[u]'X2t[i] with --biases, else\n"
                          "X1[u]'X2t[i].  Output lines: user item prediction.\n",
                          &cfg, pos, 1, &npos, "one PAIRS file expected (see --help)")) >= 0)
    goto out;
  if (!(rc = dpo_config_get_str(cfg, "mfp.run", NULL, &run)) &&
      !(rc = dpo_config_get_str(cfg, "mfp.out", NULL, &opath)) &&
      !(rc = dpo_config_get_bool(cfg, "mfp.zero_based", 0, &zb)) && !run)
    rc = dpo_err(DPO_EINVAL, "mf-predict: --run DIR is required");
  if (!rc && ctx->rank == 0) {
    if (opath && !(out = fopen(opath, "w"))) rc = dpo_err(DPO_EIO, "%s: cannot write", opath);
    if (!rc) rc = dpo_mf_predict_file(run, pos[0], zb, out ? out : stdout, NULL);
    if (out && fclose(out) && !rc) rc = dpo_err(DPO_EIO, "%s: write failed", opath);
  }
  if ((rc = dpo_agree(ctx->comm, rc))) {
    ex = dpo_cli_fail(ctx, "mf-predict", rc);
    goto out;
  }
  ex = 0;
  dpo_cli_warn_unused(ctx, cfg);
out:
  dpo_config_destroy(cfg);
  return ex;
}
