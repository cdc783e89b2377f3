/* dpopt admm: consensus ADMM across ranks (non-private or per-party noised), and DP-ADMM /
 * DP-AccADMM of 004 (ADMM / AccADMM with --method admm | accadmm: the same iterations without
 * noise, NON-PRIVATE). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cli/cli.h"
#include "dpopt/admm.h"
#include "dpopt/comm.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 64

typedef struct {
  dpo_oracle_t *o;
  const dpo_admm_A_t *A;
  double lambda, t0;
  int every, heldout;
  FILE *f;
  double *Ax;
} trace_t;

/* rank 0, after each released iterate: NON-PRIVATE training objective, held-out accuracy */
static void dp_trace(void *arg, int64_t t, const double *x, const double *y) {
  trace_t *tr = arg;
  if (!tr->f || (t % tr->every) != 0) return;
  double el = MPI_Wtime() - tr->t0, loss = NAN, acc = NAN, tl = NAN, tacc = NAN;
  dpo_oracle_eval_metric(tr->o, x, 0, &loss, &acc);
  if (tr->heldout) dpo_oracle_eval_metric(tr->o, x, 1, &tl, &tacc);
  dpo_admm_A_mul(tr->A, x, tr->Ax);
  double F = loss + tr->lambda * cblas_dasum(tr->A->p, tr->Ax, 1);
  fprintf(tr->f, "%lld,%.6f,%.17g,%.6f,%.6f\n", (long long)t, el, F, acc, tacc);
  (void)y;
}

int dpo_cmd_admm(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t own[] = {
      {"--method", "admm.method", "M", "consensus | dpadmm | dpaccadmm | admm | accadmm (default consensus)"},
      {"--model", "model.name", "NAME", "lsq | logreg (default logreg)"},
      {"--reg", "admm.reg", "G", "consensus regularizer: l1 | l2 | none (default l1)"},
      {"--lambda", "admm.lambda", "L", "regularization weight (default 1e-5, 004 Table I)"},
      {"--rho", "admm.rho", "R", "penalty rho (default 1)"},
      {"--alpha", "admm.alpha", "A", "consensus over-relaxation in [1, 1.8] (default 1)"},
      {"--xupdate", "admm.xupdate", "K", "consensus x-update: auto | exact | lbfgs | linear"},
      {"--inner-rel", "admm.inner_rel", "Q", "consensus L-BFGS x-update: inexact tolerance Q min(r, s) (default 0.1; 0 = exact)"},
      {"--eta", "admm.eta", "E", "linearized step (default 1 / public L bound)"},
      {"--eps-abs", "admm.eps_abs", "E", "consensus absolute tolerance (default 1e-5)"},
      {"--eps-rel", "admm.eps_rel", "E", "consensus relative tolerance (default 1e-3, Boyd Sec. 3.3.1)"},
      {"--maxit", "admm.maxit", "K", "iterations: max (non-private consensus, default 1000) or T (private / DP-ADMM, default 200)"},
      {"--adapt-rho", "admm.adapt_rho", NULL, "consensus: residual balancing of rho (default on; --set admm.adapt_rho=false turns it off)"},
      {"--graph", "admm.graph", "FILE", "PUBLIC edge list \"j k\" for A = [W; I] (004 eq. (11)); default A = I"},
      {"--graph-from", "admm.graph_from", "PUBFILE", "build the graph from this PUBLIC data set (|corr| >= --graph-thresh), write it to --graph"},
      {"--graph-thresh", "admm.graph_thresh", "C", "correlation threshold for --graph-from (default 0.3)"},
      {"--row-l2-bound", "data.row_l2_bound", "B", "declared public bound on ||u_i||_2 (sets the default eta)"},
      {"--eps", "privacy.eps", "E", "privacy budget eps (private methods)"},
      {"--delta", "privacy.delta", "D", "privacy delta (default 1e-3, 004 Sec. V-B)"},
      {"--mu", "privacy.mu", "MU", "004 Thm 1 split mu (default 0.5)"},
      {"--clip", "privacy.clip", "C", "L2 clip of per-example gradients / consensus messages"},
      {"--sigma", "privacy.sigma", "S", "fixed noise std instead of calibrating from --eps (the ledger refuses past the budget: exit 3)"},
      {"--sigma-rule", "privacy.sigma_rule", "R", "eq8 (004 Thm 1) | rdp (RDP calibration)"},
      {"--private", "admm.private", NULL, "consensus: noise each party's message (needs --eps, --clip)"},
      {"--journal", "privacy.journal", "FILE", "ledger journal (JSON lines); default in-memory"},
      {"--seed", "run.seed", "S", "reproducible randomness: the run is then NOT private"},
      {"--test", "data.test", "FILE", "held-out data for test accuracy"},
      {"--trace", "admm.trace", "FILE", "DP-ADMM: CSV iter,time,objective(NON-PRIVATE),train_acc,test_acc"},
      {"--model-out", "admm.model_out", "FILE", "write the solution (z, or x_T) as a model file (rank 0)"},
      {"--trace-every", "admm.trace_every", "K", "trace every K iterations (default 1)"},
      {NULL, NULL, NULL, NULL}};
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, own, dpo_cli_data_opts);
  dpo_config_t *cfg = NULL;
  dpo_shard_t *sh = NULL, *te = NULL, *pubsh = NULL;
  dpo_model_t *m = NULL;
  dpo_oracle_t *orc = NULL;
  dpo_admm_A_t *A = NULL;
  dpo_ledger_t *L = NULL;
  dpo_rng_t *rng = NULL;
  FILE *tf = NULL;
  double *x = NULL, *Ax = NULL;
  char *pos[1];
  int npos, rc, ex = 0;
  if (dpo_config_create(&cfg)) return dpo_cli_fail(ctx, "admm", DPO_ENOMEM);
  rc = dpo_cli_parse(ctx, argc, argv, opts, "usage: mpirun -np P dpopt admm [options] FILE",
                     "consensus: every rank is a data holder (x_i, u_i on its shard), one Allreduce per\n"
                     "iteration forms z = prox_g(mean(x_i + u_i)); stops on primal/dual residuals\n"
                     "(Boyd et al. 2011 Sec. 3.3).  With --private each party clips and noises its\n"
                     "message and is charged in the ledger (fixed --maxit iterations).\n"
                     "dpadmm / dpaccadmm: 004 Alg. 2 / 3 for min f(x) + lambda ||y||_1 s.t. Ax = y, the\n"
                     "coordinator noises the clipped gradient (sigma from eq. (8) or RDP) and charges an\n"
                     "RDP ledger.  admm / accadmm: the same iterations without noise (NON-PRIVATE).\n"
                     "The graph must be PUBLIC: --graph-from on private data leaks it.\n",
                     cfg, pos, 1, &npos);
  if (rc) {
    ex = rc > 0 ? 0 : DPO_EXIT_USAGE;
    goto out;
  }
  if (npos != 1) {
    if (ctx->rank == 0) fprintf(stderr, "dpopt admm: error: one FILE expected (see --help)\n");
    ex = DPO_EXIT_USAGE;
    goto out;
  }
  const char *meth, *mname, *reg, *xup, *graph, *gfrom, *srule, *journal, *testp, *tracep, *mout;
  double lambda, rho, alpha, inrel, sigfix, eta, eabs, erel, eps, delta, mu, clip, b2, gth;
  int64_t maxit, tev, seed = 0;
  int adapt, priv;
  dpo_config_get_str(cfg, "admm.method", "consensus", &meth);
  dpo_config_get_str(cfg, "model.name", "logreg", &mname);
  dpo_config_get_str(cfg, "admm.reg", "l1", &reg);
  dpo_config_get_str(cfg, "admm.xupdate", "auto", &xup);
  dpo_config_get_str(cfg, "admm.graph", NULL, &graph);
  dpo_config_get_str(cfg, "admm.graph_from", NULL, &gfrom);
  dpo_config_get_str(cfg, "privacy.sigma_rule", "eq8", &srule);
  dpo_config_get_str(cfg, "privacy.journal", NULL, &journal);
  dpo_config_get_str(cfg, "data.test", NULL, &testp);
  dpo_config_get_str(cfg, "admm.trace", NULL, &tracep);
  dpo_config_get_str(cfg, "admm.model_out", NULL, &mout);
  int seeded = dpo_config_get(cfg, "run.seed") != NULL;
  dpo_load_opts_t lo;
  if ((rc = dpo_config_get_double(cfg, "admm.lambda", 1e-5, &lambda)) ||
      (rc = dpo_config_get_double(cfg, "admm.rho", 1.0, &rho)) ||
      (rc = dpo_config_get_double(cfg, "admm.alpha", 1.0, &alpha)) ||
      (rc = dpo_config_get_double(cfg, "admm.eta", 0.0, &eta)) ||
      (rc = dpo_config_get_double(cfg, "admm.inner_rel", 0.1, &inrel)) ||
      (rc = dpo_config_get_double(cfg, "admm.eps_abs", 1e-5, &eabs)) ||
      (rc = dpo_config_get_double(cfg, "admm.eps_rel", 1e-3, &erel)) ||
      (rc = dpo_config_get_double(cfg, "admm.graph_thresh", 0.3, &gth)) ||
      (rc = dpo_config_get_double(cfg, "privacy.eps", NAN, &eps)) ||
      (rc = dpo_config_get_double(cfg, "privacy.delta", 1e-3, &delta)) ||
      (rc = dpo_config_get_double(cfg, "privacy.mu", 0.5, &mu)) ||
      (rc = dpo_config_get_double(cfg, "privacy.clip", NAN, &clip)) ||
      (rc = dpo_config_get_double(cfg, "privacy.sigma", 0.0, &sigfix)) ||
      (rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &b2)) ||
      (rc = dpo_config_get_int(cfg, "admm.maxit", 200, &maxit)) ||
      (rc = dpo_config_get_int(cfg, "admm.trace_every", 1, &tev)) ||
      (rc = dpo_config_get_int(cfg, "run.seed", 0, &seed)) ||
      (rc = dpo_config_get_bool(cfg, "admm.adapt_rho", 1, &adapt)) ||
      (rc = dpo_config_get_bool(cfg, "admm.private", 0, &priv)) ||
      (rc = dpo_model_create(mname, 0.0, &m)) || (rc = dpo_cli_load_opts(cfg, &lo)))
    goto fail;
  /* non-private consensus stops on its residuals: room to converge (a private run pays for
   * every iteration, so its default count stays small) */
  if (!dpo_config_get(cfg, "admm.maxit") && strcmp(meth, "consensus") == 0 && !priv) maxit = 1000;
  lo.labels = dpo_model_binary(m) ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
  if ((rc = dpo_shard_load(ctx->comm, pos[0], &lo, &sh))) goto fail;
  lo.d = sh->d;
  if (testp && (rc = dpo_shard_load(ctx->comm, testp, &lo, &te))) goto fail;
  int32_t d = sh->d;
  if (!(x = calloc((size_t)d, sizeof *x))) {
    rc = dpo_err(DPO_ENOMEM, "out of memory");
    goto fail;
  }
  /* default step from the PUBLIC row bound: L = B2^2 / 4 (logistic) or B2^2 (lsq) */
  if (!(eta > 0) && isfinite(b2) && b2 > 0)
    eta = 1.0 / dpo_model_L_bound(m, b2);
  if (seeded && ctx->rank == 0)
    fprintf(stderr, "dpopt admm: NOT PRIVATE: seeded run (--seed %lld) for reproducibility\n",
            (long long)seed);

  if (strcmp(meth, "consensus") == 0) {
    dpo_admm_opts_t o;
    dpo_admm_opts_default(&o);
    o.g = strcmp(reg, "l1") == 0 ? DPO_ADMM_G_L1 : strcmp(reg, "l2") == 0 ? DPO_ADMM_G_L2 : DPO_ADMM_G_NONE;
    if (o.g == DPO_ADMM_G_NONE && strcmp(reg, "none") != 0) {
      rc = dpo_err(DPO_EINVAL, "--reg must be l1, l2 or none (got '%s')", reg);
      goto fail;
    }
    o.lambda = lambda;
    o.rho = rho;
    o.alpha = alpha;
    o.inner_rel = inrel;
    o.eps_abs = eabs;
    o.eps_rel = erel;
    o.max_iter = maxit;
    o.adapt_rho = adapt;
    o.lin_eta = eta;
    o.xupdate = strcmp(xup, "exact") == 0 ? DPO_ADMM_X_EXACT : strcmp(xup, "lbfgs") == 0 ? DPO_ADMM_X_LBFGS
              : strcmp(xup, "linear") == 0 ? DPO_ADMM_X_LINEAR : DPO_ADMM_X_AUTO;
    dpo_admm_priv_t pv = {0};
    if (priv) {
      if (!(eps > 0) || !(clip > 0)) {
        rc = dpo_err(DPO_EINVAL, "--private needs --eps > 0 and --clip > 0");
        goto fail;
      }
      /* per-iteration Gaussian of sensitivity 2 clip, calibrated by RDP over maxit releases */
      double z = 0;
      if ((rc = dpo_rdp_calibrate("none", 0, sh->n_global, maxit, eps * (1 - 1e-6), delta, &z)))
        goto fail;
      pv.clip = clip;
      pv.sigma = sigfix > 0 ? sigfix : z * 2.0 * clip;
      pv.accounting = "rdp";
      if ((rc = dpo_rng_create(seeded, (uint64_t)seed, (uint64_t)ctx->rank, &rng))) goto fail;
      pv.rng = rng;
      if ((rc = dpo_ledger_open_rdp(ctx->comm, eps, delta, journal, 0, &L))) goto fail;
      pv.ledger = L;
      o.priv = &pv;
    }
    dpo_admm_info_t inf;
    rc = dpo_admm_consensus(ctx->comm, m, sh, &o, x, &inf);
    if (rc && rc != DPO_ENOCONV && rc != DPO_EBUDGET) goto fail;
    double tl = NAN, tm = NAN;
    if (ctx->rank == 0) {
      printf("method      consensus ADMM (%s x-update, %s, %d ranks)%s\n", xup, reg, ctx->size,
             priv ? (seeded ? " private-mode (seeded: NOT private)" : " private") : "");
      char stl[160];
      dpo_admm_status_line(&inf, stl, sizeof stl);
      printf("iterations  %s\n", stl);
      printf("rho         %g (%lld changes, %lld factorizations)\n", inf.rho,
             (long long)inf.rho_changes, (long long)inf.factorizations);
      if (inf.inner_evals > 0)
        printf("inner       %lld L-BFGS iterations, %lld loss+gradient passes (rank 0)\n",
               (long long)inf.inner_iters, (long long)inf.inner_evals);
      printf("time        %.4f s (allreduce %.4f s, %.3g s per iteration)\n", inf.t_total,
             inf.t_comm, inf.iters > 0 ? inf.t_total / (double)inf.iters : NAN);
      if (priv) printf("sigma       %.6g per coordinate per party\n", pv.sigma);
    }
    /* NON-PRIVATE diagnostic: objective on the training data */
    double ls = 0, ms = 0, tot[2];
    dpo_model_local_eval(m, sh, x, &ls, &ms);
    double lm[2] = {ls, ms};
    MPI_Allreduce(lm, tot, 2, MPI_DOUBLE, MPI_SUM, ctx->comm);
    if (te) {
      double tl2[2] = {0, 0}, tt[2];
      dpo_model_local_eval(m, te, x, &tl2[0], &tl2[1]);
      MPI_Allreduce(tl2, tt, 2, MPI_DOUBLE, MPI_SUM, ctx->comm);
      tl = tt[0] / (double)te->n_global;
      tm = tt[1] / (double)te->n_global;
    }
    if (ctx->rank == 0) {
      printf("objective   %.15g   (NON-PRIVATE: training data)\n",
             tot[0] / (double)sh->n_global + dpo_admm_g_value(o.g, lambda, x, d));
      if (te) printf("test        loss %.6g  %s %.6g\n", tl, dpo_model_binary(m) ? "accuracy" : "mse", tm);
    }
    if (mout) {
      char cm[256];
      snprintf(cm, sizeof cm, "dpopt admm consensus %s model, --reg %s --lambda %.17g, %d ranks%s",
               mname, reg, lambda, ctx->size, priv ? (seeded ? ", seeded: NOT private" : ", private") : "");
      int wr = ctx->rank == 0 ? dpo_model_write(mout, x, d, cm) : DPO_OK;
      if ((wr = dpo_agree(ctx->comm, wr))) {
        rc = wr;
        goto fail;
      }
    }
    if (rc == DPO_ENOCONV && ctx->rank == 0)
      fprintf(stderr, "dpopt admm: %s (the last z is reported; raise --maxit)\n", dpo_errmsg());
    ex = rc == DPO_EBUDGET ? DPO_EXIT_BUDGET : rc ? DPO_EXIT_RUNTIME : 0;
    goto out;
  }

  int dp = strcmp(meth, "dpadmm") == 0 || strcmp(meth, "dpaccadmm") == 0;
  int acc = strcmp(meth, "dpaccadmm") == 0 || strcmp(meth, "accadmm") == 0;
  if (!dp && strcmp(meth, "admm") != 0 && strcmp(meth, "accadmm") != 0) {
    rc = dpo_err(DPO_EINVAL, "--method: consensus | dpadmm | dpaccadmm | admm | accadmm (got '%s')", meth);
    goto fail;
  }
  if (!(eta > 0)) {
    rc = dpo_err(DPO_EINVAL, "DP-ADMM needs --eta or --row-l2-bound (a public smoothness bound)");
    goto fail;
  }
  if (gfrom) {
    lo.labels = DPO_LABELS_BINARY;
    if ((rc = dpo_shard_load(ctx->comm, gfrom, &lo, &pubsh))) goto fail;
    if ((rc = dpo_admm_graph_from_public(ctx->comm, pubsh, gth, 4 * d, graph, &A))) goto fail;
  } else if (graph) {
    rc = dpo_agree(ctx->comm, dpo_admm_graph_load(graph, d, &A));
  } else {
    rc = dpo_agree(ctx->comm, dpo_admm_A_identity(d, &A));
  }
  if (rc) goto fail;
  dpo_clip_t cl = {DPO_CLIP_L2, clip};
  if ((rc = dpo_oracle_create(ctx->comm, m, sh, dp ? &cl : (clip > 0 ? &cl : NULL), &orc))) goto fail;
  if (te && (rc = dpo_oracle_set_heldout(orc, te))) goto fail;
  dpo_dpadmm_opts_t o;
  dpo_dpadmm_opts_default(&o);
  o.accelerated = acc;
  o.lambda = lambda;
  o.rho = rho;
  o.eta = eta;
  o.T = maxit;
  o.noise = dp;
  o.clip = clip;
  o.eps = eps;
  o.delta = delta;
  o.mu = mu;
  o.sigma_rule = strcmp(srule, "rdp") == 0 ? DPO_DPADMM_SIGMA_RDP : DPO_DPADMM_SIGMA_EQ8;
  o.sigma_fixed = sigfix;
  if (dp) {
    if (ctx->rank == 0) rc = dpo_rng_create(seeded, (uint64_t)seed, 0, &rng);
    rc = dpo_agree(ctx->comm, rc);
    if (!rc && (!(eps > 0) || !(clip > 0)))
      rc = dpo_err(DPO_EINVAL, "private methods need --eps > 0 and --clip > 0");
    if (!rc) rc = dpo_ledger_open_rdp(ctx->comm, eps, delta, journal, 0, &L);
    if (rc) goto fail;
    o.rng = rng;
    o.ledger = L;
  }
  trace_t tr = {.o = orc, .A = A, .lambda = lambda, .every = tev > 0 ? (int)tev : 1,
                .heldout = te != NULL};
  if (ctx->rank == 0 && tracep) {
    tf = fopen(tracep, "w");
    Ax = malloc((size_t)A->p * sizeof *Ax);
    if (tf && Ax) {
      fprintf(tf, "# %s: objective and train_acc are NON-PRIVATE diagnostics on the training data\n", meth);
      fprintf(tf, "iter,time,objective,train_acc,test_acc\n");
      tr.f = tf;
      tr.Ax = Ax;
      o.trace = dp_trace;
      o.trace_arg = &tr;
    }
  }
  tr.t0 = MPI_Wtime();
  dpo_dpadmm_info_t inf;
  rc = dpo_dpadmm_run(orc, A, &o, x, NULL, &inf);
  double el = MPI_Wtime() - tr.t0;
  if (rc && rc != DPO_EBUDGET) goto fail;
  int rc2 = rc;
  /* final diagnostics (collective through the oracle) */
  double loss = NAN, accu = NAN, tl = NAN, ta = NAN;
  if (ctx->rank == 0) {
    dpo_oracle_eval_metric(orc, x, 0, &loss, &accu);
    if (te) dpo_oracle_eval_metric(orc, x, 1, &tl, &ta);
    dpo_oracle_finish(orc, DPO_OK);
  } else {
    dpo_oracle_serve(orc);
  }
  if (ctx->rank == 0) {
    double *ax = malloc((size_t)A->p * sizeof *ax);
    dpo_admm_A_mul(A, x, ax);
    printf("method      %s (%s)%s\n", meth, acc ? "004 Alg. 3" : "004 Alg. 2",
           dp ? (seeded ? " seeded: NOT private" : " private") : " NON-PRIVATE (no noise)");
    printf("iterations  %lld   time %.3f s   gamma %.6g   ||A'A|| %.6g   p %d\n",
           (long long)inf.iters, el, inf.gamma, inf.AtA_norm, A->p);
    if (dp) {
      double se = NAN, sd = NAN;
      dpo_ledger_spent(L, &se, &sd);
      printf("sigma       %.6g (%s)   releases %lld   spent eps %.6g delta %.3g\n", inf.sigma,
             srule, (long long)inf.releases, se, sd);
    }
    printf("objective   %.15g   (NON-PRIVATE: training data)\n", loss + lambda * cblas_dasum(A->p, ax, 1));
    if (te) printf("test        accuracy %.6f\n", ta);
    free(ax);
  }
  if (mout) {
    char cm[256];
    snprintf(cm, sizeof cm, "dpopt admm %s %s model, lambda %.17g%s", meth, mname, lambda,
             dp ? (seeded ? ", seeded: NOT private" : ", private") : ", NON-PRIVATE");
    int wr = ctx->rank == 0 ? dpo_model_write(mout, x, d, cm) : DPO_OK;
    if ((wr = dpo_agree(ctx->comm, wr))) {
      rc = wr;
      goto fail;
    }
  }
  ex = rc2 == DPO_EBUDGET ? DPO_EXIT_BUDGET : 0;
  goto out;
fail:
  ex = dpo_cli_fail(ctx, "admm", rc);
out:
  if (tf) fclose(tf);
  free(Ax);
  free(x);
  dpo_oracle_destroy(orc);
  dpo_admm_A_destroy(A);
  dpo_ledger_close(L);
  dpo_rng_destroy(rng);
  dpo_shard_destroy(sh);
  dpo_shard_destroy(te);
  dpo_shard_destroy(pubsh);
  dpo_model_destroy(m);
  dpo_config_destroy(cfg);
  return ex;
}
