/* dpopt admm: consensus ADMM across ranks (non-private or per-party noised), and DP-ADMM /
 * DP-AccADMM of 004 (ADMM / AccADMM with --method admm | accadmm: the same iterations without
 * noise, NON-PRIVATE).  The run is dpo_admm_run_config (dpopt/admm.h); this file parses the
 * command line. */
#include <stdio.h>

#include "cli/cli.h"
#include "dpopt/admm.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 64

int dpo_cmd_admm(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t own[] = {
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
      {"--journal", "privacy.journal", "FILE", "ledger journal (JSON lines); default in-memory; under privacy.trust = secagg each party K > 0 journals its own charges in FILE.partyK.jsonl"},
      {"--budget-store", "privacy.store", "STORE", "the data set's budget store (dpopt budget; needs --journal): the run's budget is reserved there before the data are loaded, refused (exit 3) if it does not fit, settled to what the run composed"},
      {"--seed", "run.seed", "S", "reproducible randomness: the run is then NOT private"},
      {"--test", "data.test", "FILE", "held-out data for test accuracy"},
      {"--trace", "admm.trace", "FILE", "DP-ADMM: CSV iter,time,objective(NON-PRIVATE),train_acc,test_acc"},
      {"--model-out", "admm.model_out", "FILE", "write the solution (z, or x_T) as a model file (rank 0)"},
      {"--trace-every", "admm.trace_every", "K", "trace every K iterations (default 1)"},
      {NULL, NULL, NULL, NULL}};
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, own, dpo_cli_data_opts);
  dpo_config_t *cfg = NULL;
  char *pos[1];
  int npos, rc, ex, stop;
  dpo_privacy_spec_t spec;
#ifdef DPO_TEST_SWITCHES
  if (dpo_cli_test_secagg_args(argc, argv, &argc))
    return dpo_cli_fail(ctx, "admm", dpo_err(DPO_EINVAL, "--test-coordinator: sigma, gamma, "
                                             "shares or extra[:N], or key"));
#endif
  if ((ex = dpo_cli_start(ctx, "admm", argc, argv, opts,
                          "usage: mpirun -np P dpopt admm [options] FILE",
                          "consensus: every rank is a data holder (x_i, u_i on its shard), one Allreduce per\n"
                          "iteration forms z = prox_g(mean(x_i + u_i)); stops on primal/dual residuals\n"
                          "(Boyd et al. 2011 Sec. 3.3).  With --private each party clips and noises its\n"
                          "message and is charged in the ledger (fixed --maxit iterations).\n"
                          "dpadmm / dpaccadmm: Xu et al. 2020, Alg. 2 / 3 for min f(x) + lambda ||y||_1 s.t. Ax = y, the\n"
                          "coordinator noises the clipped gradient (sigma from eq. (8), RDP or the ledger) and charges\n"
                          "an RDP ledger.  admm / accadmm: the same iterations without noise and without\n"
                          "clipping (NON-PRIVATE references).\n"
                          "The graph must be PUBLIC: --graph-from on private data leaks it.\n",
                          &cfg, pos, 1, &npos, "one FILE expected (see --help)")) >= 0)
    goto out;
  if ((rc = dpo_privacy_spec_read(cfg, DPO_SPEC_FOR_ADMM, &spec)) ||
      (rc = dpo_admm_run_config(ctx->comm, cfg, &spec, pos[0], stdout, &stop))) {
    ex = dpo_cli_fail(ctx, "admm", rc);
    goto out;
  }
  ex = stop == DPO_EBUDGET ? DPO_EXIT_BUDGET : stop ? DPO_EXIT_RUNTIME : 0;
out:
  dpo_config_destroy(cfg);
  return ex;
}
