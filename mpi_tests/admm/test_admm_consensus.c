/* Consensus ADMM across 1, 2, 3, 4 ranks against independent serial references written here:
 *  - lasso (exact Cholesky x-update; plain, over-relaxed alpha = 1.6, adaptive rho) against
 *    coordinate descent: objective within 1e-6, and the same z at every rank count;
 *  - l1-logistic (warm-started L-BFGS x-update) against FISTA: objective within 1e-6;
 *  - linearized x-update (lasso) against the same reference, looser (first-order inner step);
 *  - the private variant: every message clipped + noised, the ledger charges per party per
 *    iteration and refuses the iteration past the budget (run ends with DPO_EBUDGET after
 *    exactly the affordable number of iterations). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/admm.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"
#include "../lib/test_admm_common.h"

#define N 240
#define D 12
#define LAM 0.01

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, ws;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);

  /* independent references on the full data (every rank computes them) */
  dpo_shard_t *full_ls = t_rows(N, 0, N, D, 0, 41);
  t_lsq_targets(full_ls, 41);
  double zref[D], zlog[D];
  t_lasso_cd(full_ls, LAM, zref);
  double Fref = t_lasso_obj(full_ls, zref, LAM);
  dpo_shard_t *full_lg = t_rows(N, 0, N, D, 1, 43);
  t_l1log_fista(full_lg, LAM, zlog);
  double Flog = t_l1log_obj(full_lg, zlog, LAM, NULL);
  int nz = 0;
  for (int j = 0; j < D; j++) nz += zref[j] != 0;
  if (wr == 0) printf("reference lasso F* = %.12g (%d nonzeros), l1-logistic F* = %.12g\n", Fref, nz, Flog);
  T_CHECK(nz > 0 && nz < D, "the lasso reference should be sparse but not zero (%d)", nz);

  dpo_model_t *mls = NULL, *mlg = NULL;
  dpo_model_create("lsq", 0.0, &mls);
  dpo_model_create("logreg", 0.0, &mlg);
  double z1[3][D]; /* z at 1 rank, per variant, to compare with other rank counts */

  for (int k = 1; k <= ws; k++) {
    MPI_Comm sub = dpo_t_subcomm(k);
    if (sub == MPI_COMM_NULL) continue;
    dpo_shard_t *s = t_shard(sub, N, D, 0, 41);
    t_lsq_targets(s, 41);
    for (int var = 0; var < 3; var++) {
      dpo_admm_opts_t o;
      dpo_admm_opts_default(&o);
      o.g = DPO_ADMM_G_L1;
      o.lambda = LAM;
      o.rho = 0.05;
      o.eps_abs = 1e-10;
      o.eps_rel = 1e-9;
      o.max_iter = 20000;
      if (var == 1) o.alpha = 1.6;
      if (var == 2) o.adapt_rho = 1;
      double z[D] = {0};
      dpo_admm_info_t inf;
      int rc = dpo_admm_consensus(sub, mls, s, &o, z, &inf);
      T_CHECK(rc == DPO_OK, "lasso var %d at %d ranks: %s %s", var, k, dpo_strerror(rc), dpo_errmsg());
      double F = t_lasso_obj(full_ls, z, LAM);
      T_CHECK(fabs(F - Fref) <= 1e-6, "lasso var %d at %d ranks: F - F* = %.3g", var, k, F - Fref);
      T_CHECK(dpo_t_reldiff(z, zref, D) < 1e-5, "lasso var %d at %d ranks: |z - z*| = %.3g", var,
              k, dpo_t_reldiff(z, zref, D));
      if (k == 1) memcpy(z1[var], z, sizeof z);
      else if (wr == 0) /* z1 lives on world rank 0 (the 1-rank run) */
        T_CHECK(dpo_t_reldiff(z, z1[var], D) < 1e-6, "var %d: z at %d ranks differs from 1 rank",
                   var, k);
      if (var == 2 && k == 1)
        T_CHECK(inf.factorizations == 1 + inf.rho_changes, "refactor only on rho change: %lld vs %lld",
                (long long)inf.factorizations, (long long)inf.rho_changes);
      if (wr == 0)
        printf("lasso var %d ranks %d: iters %lld, F - F* = %.2e, rho %.3g (%lld changes)\n", var,
               k, (long long)inf.iters, F - Fref, inf.rho, (long long)inf.rho_changes);
    }
    /* linearized x-update: each step is the prox-linear update, eta = 1/L_i with L_i <= 1 */
    {
      dpo_admm_opts_t o;
      dpo_admm_opts_default(&o);
      o.g = DPO_ADMM_G_L1;
      o.lambda = LAM;
      o.rho = 0.05;
      o.xupdate = DPO_ADMM_X_LINEAR;
      o.lin_eta = 1.0;
      o.eps_abs = 1e-10;
      o.eps_rel = 1e-9;
      o.max_iter = 200000;
      double z[D] = {0};
      dpo_admm_info_t inf;
      int rc = dpo_admm_consensus(sub, mls, s, &o, z, &inf);
      double F = t_lasso_obj(full_ls, z, LAM);
      T_CHECK(rc == DPO_OK && fabs(F - Fref) <= 1e-6, "linearized at %d ranks: %s F - F* = %.3g",
              k, dpo_strerror(rc), F - Fref);
      if (wr == 0) printf("lasso linearized ranks %d: iters %lld, F - F* = %.2e\n", k, (long long)inf.iters, F - Fref);
    }
    t_free(s);
    /* l1-logistic with L-BFGS x-updates */
    s = t_shard(sub, N, D, 1, 43);
    {
      dpo_admm_opts_t o;
      dpo_admm_opts_default(&o);
      o.g = DPO_ADMM_G_L1;
      o.lambda = LAM;
      o.rho = 0.05;
      o.eps_abs = 1e-10;
      o.eps_rel = 1e-9;
      o.max_iter = 20000;
      o.lbfgs_tol = 1e-12;
      double z[D] = {0};
      dpo_admm_info_t inf;
      int rc = dpo_admm_consensus(sub, mlg, s, &o, z, &inf);
      double F = t_l1log_obj(full_lg, z, LAM, NULL);
      T_CHECK(rc == DPO_OK, "l1-logistic at %d ranks: %s %s", k, dpo_strerror(rc), dpo_errmsg());
      T_CHECK(fabs(F - Flog) <= 1e-6, "l1-logistic at %d ranks: F - F* = %.3g", k, F - Flog);
      if (wr == 0)
        printf("l1-logistic ranks %d: iters %lld (inner %lld, %lld passes), F - F* = %.2e\n", k,
               (long long)inf.iters, (long long)inf.inner_iters, (long long)inf.inner_evals,
               F - Flog);
      /* inexact x-updates (default inner_rel 0.1) against x-updates solved to lbfgs_tol: the
       * same solution, with no more loss+gradient passes (counted, not timed) */
      dpo_admm_info_t inf0;
      double z0[D] = {0};
      o.inner_rel = 0.0;
      rc = dpo_admm_consensus(sub, mlg, s, &o, z0, &inf0);
      double F0 = t_l1log_obj(full_lg, z0, LAM, NULL);
      T_CHECK(rc == DPO_OK && fabs(F0 - Flog) <= 1e-6, "l1-logistic exact x-updates at %d ranks: "
              "%s F - F* = %.3g", k, dpo_strerror(rc), F0 - Flog);
      T_CHECK(dpo_t_reldiff(z, z0, D) < 1e-5, "inexact vs exact x-updates: |z - z0| = %.3g",
              dpo_t_reldiff(z, z0, D));
      T_CHECK(inf.inner_evals > 0 && inf.inner_evals <= inf0.inner_evals,
              "inexact x-updates used %lld passes, exact %lld", (long long)inf.inner_evals,
              (long long)inf0.inner_evals);
      if (wr == 0)
        printf("l1-logistic ranks %d, exact x-updates: iters %lld (inner %lld, %lld passes)\n", k,
               (long long)inf0.iters, (long long)inf0.inner_iters, (long long)inf0.inner_evals);
    }
    t_free(s);

    /* private variant: budget for exactly 3 iterations of k parties */
    s = t_shard(sub, N, D, 0, 41);
    t_lsq_targets(s, 41);
    {
      int r;
      MPI_Comm_rank(sub, &r);
      dpo_ledger_t *L = NULL;
      int rc = dpo_ledger_open(sub, 0.35, 1e-5, NULL, 0, &L);
      T_CHECK(rc == DPO_OK, "ledger open: %s", dpo_errmsg());
      dpo_rng_t *rng = NULL;
      dpo_rng_create(1, 7, (uint64_t)r, &rng);
      dpo_admm_priv_t pv = {.clip = 2.0, .accounting = "pure", .eps_step = 0.1,
                            .delta_step = 1e-6, .rng = rng, .ledger = L};
      rc = dpo_mech_gaussian_sigma(2.0 * pv.clip, pv.eps_step, pv.delta_step, D, &pv.sigma);
      T_CHECK(rc == DPO_OK, "sigma: %s", dpo_errmsg());
      dpo_admm_opts_t o;
      dpo_admm_opts_default(&o);
      o.g = DPO_ADMM_G_L1;
      o.lambda = LAM;
      o.max_iter = 10;
      o.priv = &pv;
      double z[D] = {0};
      dpo_admm_info_t inf;
      rc = dpo_admm_consensus(sub, mls, s, &o, z, &inf);
      T_CHECK(rc == DPO_EBUDGET, "private at %d ranks: expected DPO_EBUDGET, got %s", k, dpo_strerror(rc));
      T_CHECK(inf.iters == 3, "private at %d ranks: %lld iterations released, expected 3", k,
              (long long)inf.iters);
      if (r == 0) {
        double e, dl;
        dpo_ledger_spent(L, &e, &dl);
        T_CHECK(dpo_ledger_count(L) == 3 * k, "charges %lld, expected %d", (long long)dpo_ledger_count(L), 3 * k);
        T_CHECK(e <= 0.35 && e >= 0.3 - 1e-12, "spent eps %.17g", e);
      }
      int fin = 1;
      for (int j = 0; j < D; j++) fin &= isfinite(z[j]);
      T_CHECK(fin, "private z not finite");
      /* every rank holds the same released z */
      double zmax[D];
      MPI_Allreduce(z, zmax, D, MPI_DOUBLE, MPI_MAX, sub);
      T_CHECK(dpo_t_reldiff(z, zmax, D) == 0.0, "ranks disagree on z");
      dpo_rng_destroy(rng);
      dpo_ledger_close(L);
    }
    t_free(s);
    MPI_Comm_free(&sub);
  }
  dpo_model_destroy(mls);
  dpo_model_destroy(mlg);
  t_free(full_ls);
  t_free(full_lg);
  return dpo_t_finish("test_admm_consensus");
}
