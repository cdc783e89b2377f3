/* dpopt admm: consensus ADMM across ranks (non-private or per-party noised), and DP-ADMM /
 * DP-AccADMM of Xu et al. 2020 (ADMM / AccADMM with --method admm | accadmm: the same
 * iterations without noise, NON-PRIVATE).  The run is the run API's admm kind (dpopt/run.h,
 * run.command = admm: src/run/run_admm.c), with train's run directory, --resume, signals and
 * exit codes; this file parses the command line. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/run.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 64

/* dpopt admm's own option rows (dpopt audit --one-run --admm takes them too) */
const dpo_cli_opt_t dpo_cli_admm_opts[] = {
    {"--method", "admm.method", "M", "consensus | dpadmm | dpaccadmm | admm | accadmm (default consensus)"},
    {"--model", "model.name", "NAME", "lsq | logreg (default logreg)"},
    {"--reg", "admm.reg", "G", "consensus regularizer: l1 | l2 | none (default l1)"},
    {"--lambda", "admm.lambda", "L", "regularization weight (default 1e-5, Xu et al. 2020, Table I)"},
    {"--rho", "admm.rho", "R", "penalty rho (default 1)"},
    {"--alpha", "admm.alpha", "A", "consensus over-relaxation in [1, 1.8] (default 1)"},
    {"--xupdate", "admm.xupdate", "K", "consensus x-update: auto | exact | lbfgs | linear"},
    {"--inner-rel", "admm.inner_rel", "Q", "consensus L-BFGS x-update: inexact tolerance Q min(r, s) (default 0.1; 0 = exact)"},
    {"--eta", "admm.eta", "E", "linearized step (default 1 / public L bound)"},
    {"--eps-abs", "admm.eps_abs", "E", "consensus absolute tolerance (default 1e-5)"},
    {"--eps-rel", "admm.eps_rel", "E", "consensus relative tolerance (default 1e-3, Boyd Sec. 3.3.1)"},
    {"--maxit", "admm.maxit", "K", "iterations: max (non-private consensus, default 1000) or T (private / DP-ADMM, default 200)"},
    {"--adapt-rho", "admm.adapt_rho", NULL, "consensus: residual balancing of rho (default on; --set admm.adapt_rho=false turns it off)"},
    {"--graph", "admm.graph", "FILE", "PUBLIC edge list \"j k\" for A = [W; I] (Xu et al. 2020, eq. (11)); default A = I"},
    {"--graph-from", "admm.graph_from", "PUBFILE", "build the graph from this PUBLIC data set (|corr| >= --graph-thresh), write it to --graph"},
    {"--graph-thresh", "admm.graph_thresh", "C", "correlation threshold for --graph-from (default 0.3)"},
    {"--row-l2-bound", "data.row_l2_bound", "B", "declared public bound on ||u_i||_2 (sets the default eta)"},
    {"--eps", "privacy.eps", "E", "privacy budget eps (private methods)"},
    {"--delta", "privacy.delta", "D", "privacy delta (default 1e-3, Xu et al. 2020, Sec. V-B)"},
    {"--mu", "privacy.mu", "MU", "Xu et al. 2020, Thm 1 split mu (default 0.5)"},
    {"--clip", "privacy.clip", "C", "L2 clip of per-example gradients / consensus messages"},
    {"--sigma", "privacy.sigma", "S", "fixed noise std instead of calibrating from --eps (the ledger refuses past the budget: exit 3)"},
    {"--sigma-rule", "privacy.sigma_rule", "R", "eq8 (Xu et al. 2020, Thm 1) | rdp (RDP calibration) | ledger (smallest sigma the run's ledger accepts for all releases: spends eps)"},
    {"--restart", "admm.restart", "K", "(dp)accadmm: reset the momentum every K iterations, a public schedule (0 = Alg. 3 as written; default 50 for dpaccadmm, 0 for accadmm)"},
    {"--private", "admm.private", NULL, "consensus: noise each party's message (needs --eps, --clip)"},
    {"--trust-coordinator", "privacy.trust_coordinator", NULL, "secagg with privacy.collude = 0: acknowledge that the coordinator is then trusted (its party's noise share is counted as honest); refused without it"},
    {"--budget-store", "privacy.store", "STORE", "the data set's budget store (dpopt budget): the run's budget is reserved there before the data are loaded, refused (exit 3) if it does not fit, settled to what the run composed"},
    {"--journal-key", "privacy.journal_key", "FILE", "key of the journal's hash chain (default $DPOPT_JOURNAL_KEY, else ~/.config/dpopt/journal.key); give it again with --resume"},
    {"--seed", "run.seed", "S", "reproducible randomness: the run is then NOT private"},
    {"--test", "data.test", "FILE", "held-out data for test accuracy"},
    {"--trace-every", "admm.trace_every", "K", "DP-ADMM family: a trace.csv row every K iterations (default: every one up to 200, else about 200 rows; 0: none); each row evaluates the NON-PRIVATE training objective"},
    {"--out", "run.dir", "DIR", "run directory (default runs/METHOD-YYYYmmdd-HHMMSS): config.ini, trace.csv, model.txt, summary.json and, for private methods, ledger.jsonl"},
    {"--quiet", "run.quiet", NULL, "no messages on stderr"},
    {"--verbose", "run.verbose", NULL, "stderr also says how many PLD compositions the ledger's sigma search paid (--sigma-rule ledger)"},
    {"--checkpoint-every", "run.checkpoint_every", "N", "write RUN/checkpoint every N iterations (default 0: only on SIGTERM/SIGINT); consensus: every rank its own part; every method resumes on as many ranks"},
    {"--resume", "run.resume", "RUN", "continue the interrupted run in directory RUN from its checkpoint (no FILE)"},
    {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
    {NULL, NULL, NULL, NULL}};

int dpo_cmd_admm(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, dpo_cli_admm_opts, dpo_cli_data_opts);
  dpo_config_t *cfg = NULL;
  dpo_run_t *run = NULL;
  char *pos[1];
  int npos = 0, rc = DPO_OK, ex = 0;
#ifdef DPO_TEST_SWITCHES
  if ((rc = dpo_cli_test_secagg_args("admm", argc, argv, &argc)))
    return dpo_cli_fail(ctx, "admm", rc);
#endif
  /* the flags --out replaced: a clear refusal, not an unknown option */
  static const char *const gone[][2] = {{"--model-out", "the model is DIR/model.txt"},
                                        {"--journal", "the journal is DIR/ledger.jsonl"},
                                        {"--trace", "the trace is DIR/trace.csv"}};
  for (int i = 1; i < argc; i++)
    for (int g = 0; g < 3; g++)
      if (!strcmp(argv[i], gone[g][0]) ||
          (!strncmp(argv[i], gone[g][0], strlen(gone[g][0])) && argv[i][strlen(gone[g][0])] == '='))
        return dpo_cli_fail(ctx, "admm", dpo_err(DPO_EINVAL, "%s was replaced by --out DIR "
                                                 "(the run directory; %s)", gone[g][0], gone[g][1]));
  if ((ex = dpo_cli_start(ctx, "admm", argc, argv, opts,
                          "usage: mpirun --quiet -np P dpopt admm [options] FILE\n"
                          "       mpirun --quiet -np P dpopt admm --resume RUN\n"
                          "       mpirun --quiet -np P dpopt admm [options] --set parties.data=FILE%d",
                          "consensus: every rank is a data holder (x_i, u_i on its shard), one Allreduce per\n"
                          "iteration forms z = prox_g(mean(x_i + u_i)); stops on primal/dual residuals\n"
                          "(Boyd et al. 2011 Sec. 3.3).  With --private each party clips and noises its\n"
                          "message and is charged in the ledger (fixed --maxit iterations); under\n"
                          "privacy.trust = local each party also charges its own journal before each message.\n"
                          "dpadmm / dpaccadmm: Xu et al. 2020, Alg. 2 / 3 for min f(x) + lambda ||y||_1 s.t. Ax = y, the\n"
                          "coordinator noises the clipped gradient (sigma from eq. (8), RDP or the ledger) and charges\n"
                          "an RDP ledger.  admm / accadmm: the same iterations without noise and without\n"
                          "clipping (NON-PRIVATE references).\n"
                          "The graph must be PUBLIC: --graph-from on private data leaks it.\n"
                          "Outputs in the run directory (--out), as for dpopt train: config.ini, trace.csv, model.txt,\n"
                          "summary.json and, for private methods, ledger.jsonl (under privacy.trust = secagg or local each party\n"
                          "K > 0 keeps PARTYDIR/ledger.partyK.jsonl in its own directory, party.K.out or\n"
                          "parties.out = DIR%d).  There each party may read its own file (parties.data = FILE%d\n"
                          "or party.K.data, in place of FILE) and charge its own budget store (parties.budget_store =\n"
                          "DIR%d or party.K.budget_store, as dpopt train's parties): checked and reserved on its rank\n"
                          "before the first release, settled to its own journal.  Exit status: 0 ok, 1 usage, 2 bad data, 3 budget exhausted,\n"
                          "4 runtime failure (also: consensus stopped at --maxit), 5 interrupted (SIGTERM/SIGINT:\n"
                          "checkpoint written, continue with --resume RUN).\n",
                          &cfg, pos, 1, &npos, NULL)) >= 0)
    goto out;
  const int resume = dpo_config_get(cfg, "run.resume") != NULL;
  /* each party's own file (parties.data, party.K.data) stands for FILE */
  const int own = dpo_config_get(cfg, "parties.data") || dpo_config_get(cfg, "party.0.data");
  if (resume ? npos != 0 : npos != 1 && !(own && npos == 0)) {
    ex = dpo_cli_fail(ctx, "admm", dpo_err(DPO_EINVAL, resume ? "--resume RUN takes no FILE "
                                           "(the run's own data)" : "one FILE expected (see --help)"));
    goto out;
  }
  if ((!resume && npos == 1 && (rc = dpo_config_set(cfg, "data.train", pos[0], "FILE"))) ||
      (rc = dpo_config_set(cfg, "run.command", "admm", "dpopt admm")))
    goto fail;
  /* every method stops at a checkpoint on SIGTERM / SIGINT (consensus: every rank's part) */
  dpo_run_signals_install();
  if ((rc = dpo_run_create(ctx->comm, cfg, &run))) goto fail; /* --resume merged here */
  dpo_run_set_stop(run, dpo_run_signal_flag());
  if (!(rc = dpo_cli_run(ctx, "admm", run, &ex))) goto out;
fail:
  dpo_cli_warn_typos(ctx, run ? dpo_run_config(run) : cfg);
  ex = dpo_cli_fail(ctx, run ? dpo_run_stage(run) : "admm", rc);
out:
  dpo_run_destroy(run); /* after the error is printed: FAILED in a run directory it claimed */
  dpo_config_destroy(cfg);
  dpo_run_signals_restore();
  return ex;
}
