/* DP-ADMM / DP-AccADMM (004 Alg. 2, 3) at 1..4 ranks against computations written here:
 *  - one x-update equals the direct minimizer of 004 eq. (7) (dense normal equations solved by
 *    Gaussian elimination here), for gamma above gamma_min;
 *  - with noise off, T iterations of DP-ADMM and DP-AccADMM equal an independent serial
 *    linearized ADMM / AccADMM on the full data, including u0 = -(1/rho)(A')^+ grad f(x0)
 *    computed here as A (A'A)^{-1}(-g/rho); the ScaLAPACK u0 equals the LAPACK one;
 *  - the noise variance equals eq. (8) computed independently (empirical variance of the
 *    recovered P_1 over many coordinates and seeds, and the sigma used);
 *  - the RDP-calibrated sigma is below eq. (8)'s; a run fits a ledger of exactly its budget;
 *    the ledger refuses the step past a smaller budget and the run stops with DPO_EBUDGET. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/admm.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"
#include "../lib/test_admm_common.h"
#include "../lib/t_gauss.h"

#define N 300
#define D 8

/* dense copy of A (p x d) */
static double *dense_A(const dpo_admm_A_t *A) {
  double *M = calloc((size_t)A->p * A->d, sizeof *M);
  for (int r = 0; r < A->p; r++)
    for (int64_t q = A->rowptr[r]; q < A->rowptr[r + 1]; q++) M[r * A->d + A->colind[q]] = A->val[q];
  return M;
}

static double soft(double v, double k) { return v > k ? v - k : v < -k ? v + k : 0; }

/* Independent serial linearized (Acc)ADMM, B = -I, c = 0, noise-free. */
static void ref_admm(const dpo_shard_t *full, const double *Ad, int p, int d, double lam,
                     double rho, double eta, double gamma, int T, int acc, int u0pinv,
                     double *x) {
  double *u = calloc(p, sizeof *u), *uh = calloc(p, sizeof *uh), *up = calloc(p, sizeof *up),
         *y = calloc(p, sizeof *y), *t = calloc(p, sizeof *t), *g = calloc(d, sizeof *g),
         *xh = calloc(d, sizeof *xh), *xp = calloc(d, sizeof *xp);
  if (u0pinv) { /* u0 = A (A'A)^{-1} (-g/rho) */
    t_l1log_obj(full, x, 0, g);
    double *M = calloc(d * d, sizeof *M), *b = calloc(d, sizeof *b);
    for (int i = 0; i < d; i++) {
      b[i] = -g[i] / rho;
      for (int j = 0; j < d; j++)
        for (int r = 0; r < p; r++) M[i * d + j] += Ad[r * d + i] * Ad[r * d + j];
    }
    t_gauss(M, b, d);
    for (int r = 0; r < p; r++) {
      u[r] = 0;
      for (int j = 0; j < d; j++) u[r] += Ad[r * d + j] * b[j];
    }
    free(M);
    free(b);
  }
  memcpy(uh, u, p * sizeof *u);
  memcpy(up, u, p * sizeof *u);
  memcpy(xh, x, d * sizeof *x);
  memcpy(xp, x, d * sizeof *x);
  double th = 1;
  for (int it = 0; it < T; it++) {
    for (int r = 0; r < p; r++) {
      double a = 0;
      for (int j = 0; j < d; j++) a += Ad[r * d + j] * xh[j];
      y[r] = soft(a + uh[r], lam / rho);
      t[r] = a + uh[r] - y[r];
    }
    t_l1log_obj(full, xh, 0, g);
    for (int j = 0; j < d; j++) {
      double w = 0;
      for (int r = 0; r < p; r++) w += Ad[r * d + j] * t[r];
      x[j] = xh[j] - eta / gamma * (g[j] + rho * w);
    }
    for (int r = 0; r < p; r++) {
      double a = 0;
      for (int j = 0; j < d; j++) a += Ad[r * d + j] * x[j];
      u[r] = uh[r] + a - y[r];
    }
    double m = 0;
    if (acc) {
      double tn = (1 + sqrt(1 + 4 * th * th)) / 2;
      m = (th - 1) / tn;
      th = tn;
    }
    for (int j = 0; j < d; j++) xh[j] = x[j] + m * (x[j] - xp[j]);
    for (int r = 0; r < p; r++) uh[r] = u[r] + m * (u[r] - up[r]);
    memcpy(xp, x, d * sizeof *x);
    memcpy(up, u, p * sizeof *u);
  }
  free(u); free(uh); free(up); free(y); free(t); free(g); free(xh); free(xp);
}

/* run with every rank of sub (rank 0 gets x) */
static int run(MPI_Comm sub, const dpo_model_t *m, const dpo_shard_t *s, const dpo_clip_t *clip,
               const dpo_admm_A_t *A, dpo_dpadmm_opts_t *o, double *x, dpo_dpadmm_info_t *inf) {
  dpo_oracle_t *orc = NULL;
  int rc = dpo_oracle_create(sub, m, s, clip, &orc);
  if (rc) return rc;
  rc = dpo_dpadmm_run(orc, A, o, x, NULL, inf);
  dpo_oracle_destroy(orc);
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, ws;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  /* a public graph on the D features (edge list file), A = [W; I] */
  char gpath[64];
  snprintf(gpath, sizeof gpath, "admm_test_graph_%d.txt", (int)getpid());
  MPI_Bcast(gpath, sizeof gpath, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (wr == 0) {
    FILE *f = fopen(gpath, "w");
    fprintf(f, "# test graph\n0 1\n1 2\n2 5\n3 4\n6 7\n0 7\n");
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  dpo_admm_A_t *A = NULL;
  int rc = dpo_admm_graph_load(gpath, D, &A);
  T_CHECK(rc == DPO_OK && A->p == 6 + D, "graph load: %s", dpo_errmsg());
  MPI_Barrier(MPI_COMM_WORLD);
  if (wr == 0) unlink(gpath);
  int p = A->p;
  double *Ad = dense_A(A);
  dpo_shard_t *full = t_rows(N, 0, N, D, 0, 51);
  dpo_model_t *m = NULL;
  dpo_model_create("logreg", 0.0, &m);
  const double lam = 0.01, rho = 1.0, eta = 1.0;

  for (int k = 1; k <= ws; k++) {
    MPI_Comm sub = dpo_t_subcomm(k);
    if (sub == MPI_COMM_NULL) continue;
    int r;
    MPI_Comm_rank(sub, &r);
    dpo_shard_t *s = t_shard(sub, N, D, 0, 51);

    /* (a) one x-update against the direct minimizer of eq. (7), gamma = 2 gamma_min, u0 = 0 */
    {
      dpo_dpadmm_opts_t o;
      dpo_dpadmm_opts_default(&o);
      o.lambda = lam; o.rho = rho; o.eta = eta; o.T = 1; o.u0_pinv = 0;
      double AtA = dpo_admm_A_norm2sq(A);
      o.gamma = 2 * (eta * rho * AtA + 1);
      double x0[D], x[D];
      for (int j = 0; j < D; j++) x0[j] = 0.3 * sin(j + 1.0);
      memcpy(x, x0, sizeof x);
      dpo_dpadmm_info_t inf;
      rc = run(sub, m, s, NULL, A, &o, x, &inf);
      T_CHECK(rc == DPO_OK, "eq7 run: %s", dpo_errmsg());
      if (r == 0) {
        /* y1 = S(A x0, lam/rho); minimize <g,x> + rho/2||Ax - y1||^2 + (x-x0)'G(x-x0)/(2 eta),
         * G = gamma I - eta rho A'A:  (rho A'A + G/eta) x = -g + rho A'y1 + G x0 / eta */
        double g[D], y1[6 + D], M[D * D], b[D];
        t_l1log_obj(full, x0, 0, g);
        for (int q = 0; q < p; q++) {
          double a = 0;
          for (int j = 0; j < D; j++) a += Ad[q * D + j] * x0[j];
          y1[q] = soft(a, lam / rho);
        }
        for (int i = 0; i < D; i++) {
          double Gx0 = 0, Aty = 0;
          for (int j = 0; j < D; j++) {
            double ata = 0;
            for (int q = 0; q < p; q++) ata += Ad[q * D + i] * Ad[q * D + j];
            double G = (i == j ? o.gamma : 0) - eta * rho * ata;
            M[i * D + j] = rho * ata + G / eta;
            Gx0 += G * x0[j];
          }
          for (int q = 0; q < p; q++) Aty += Ad[q * D + i] * y1[q];
          b[i] = -g[i] + rho * Aty + Gx0 / eta;
        }
        t_gauss(M, b, D);
        T_CHECK(dpo_t_reldiff(x, b, D) < 1e-12, "eq. (7) closed form vs direct minimizer at %d "
                "ranks: %.3g", k, dpo_t_reldiff(x, b, D));
      }
    }
    /* (b) noise off: iterates equal the independent non-private linearized (Acc)ADMM */
    for (int acc = 0; acc <= 1; acc++)
      for (int sl = 0; sl <= 1; sl++) {
        if (sl && acc) continue;
        dpo_dpadmm_opts_t o;
        dpo_dpadmm_opts_default(&o);
        o.accelerated = acc; o.lambda = lam; o.rho = rho; o.eta = eta; o.T = 40;
        o.u0_pinv = 1; o.u0_scalapack = sl;
        double x[D] = {0}, xr[D] = {0};
        dpo_dpadmm_info_t inf;
        rc = run(sub, m, s, NULL, A, &o, x, &inf);
        T_CHECK(rc == DPO_OK && inf.iters == 40, "noise-off run acc %d: %s", acc, dpo_errmsg());
        if (r == 0) {
          ref_admm(full, Ad, p, D, lam, rho, eta, inf.gamma, 40, acc, 1, xr);
          T_CHECK(dpo_t_reldiff(x, xr, D) < 1e-10, "noise-off %s (scalapack u0 %d) at %d ranks "
                  "differs from the reference by %.3g", acc ? "AccADMM" : "ADMM", sl, k,
                  dpo_t_reldiff(x, xr, D));
          T_CHECK(inf.sigma == 0 && inf.releases == 41, "sigma %g releases %lld", inf.sigma,
                  (long long)inf.releases);
        }
      }
    /* (c) the ScaLAPACK u0 equals LAPACK's, and solves A'u = -g/rho with u in range(A) */
    {
      double g[D], u1[6 + D], u2[6 + D];
      for (int j = 0; j < D; j++) g[j] = cos(3.0 * j);
      int r1 = dpo_admm_u0_lapack(A, g, 2.0, u1);
      int r2 = dpo_admm_u0_scalapack(sub, A, g, 2.0, u2);
      T_CHECK(r1 == DPO_OK && r2 == DPO_OK, "u0: %s", dpo_errmsg());
      T_CHECK(dpo_t_reldiff(u2, u1, p) < 1e-12, "u0 scalapack vs lapack at %d ranks: %.3g", k,
              dpo_t_reldiff(u2, u1, p));
      double Atu[D];
      dpo_admm_A_tmul(A, u1, Atu);
      for (int j = 0; j < D; j++) Atu[j] += g[j] / 2.0;
      double z0[D] = {0};
      T_CHECK(dpo_t_reldiff(Atu, z0, D) < 1e-12, "A'u0 != -g/rho");
    }
    /* (d) noise variance against eq. (8), computed here */
    {
      const double eps = 1.0, delta = 1e-3, mu = 0.5, C = 1.0;
      dpo_clip_t clip = {DPO_CLIP_L2, C};
      double acc2 = 0;
      long cnt = 0;
      double sig_used = 0;
      for (int rep = 0; rep < 40; rep++) {
        dpo_dpadmm_opts_t o;
        dpo_dpadmm_opts_default(&o);
        o.lambda = lam; o.rho = rho; o.eta = eta; o.T = 1; o.u0_pinv = 0;
        o.clip = C; o.eps = eps; o.delta = delta; o.mu = mu;
        double xoff[D] = {0}, xon[D] = {0};
        dpo_dpadmm_info_t inf;
        rc = run(sub, m, s, &clip, A, &o, xoff, &inf);
        T_CHECK(rc == DPO_OK, "noise-off: %s", dpo_errmsg());
        dpo_ledger_t *L = NULL;
        dpo_rng_t *rng = NULL;
        rc = dpo_ledger_open_rdp(sub, eps, delta, NULL, 0, &L);
        dpo_rng_create(1, 1000 + rep, 0, &rng);
        o.noise = 1; o.rng = rng; o.ledger = L;
        rc = run(sub, m, s, &clip, A, &o, xon, &inf);
        T_CHECK(rc == DPO_OK, "noised run: %s %s", dpo_strerror(rc), dpo_errmsg());
        sig_used = inf.sigma;
        if (r == 0)
          for (int j = 0; j < D; j++) {
            double P = (xoff[j] - xon[j]) * inf.gamma / eta;
            acc2 += P * P;
            cnt++;
          }
        dpo_rng_destroy(rng);
        dpo_ledger_close(L);
      }
      if (r == 0) {
        double e1 = eps * (1 - 1e-6); /* the run calibrates a hair under the budget */
        double alpha = log(1 / delta) / ((1 - mu) * e1) + 1;
        double s2 = (2 * C) * (2 * C) * alpha * 1 / (2.0 * N * N * e1 * mu);
        double var = acc2 / cnt, se = s2 * sqrt(2.0 / cnt);
        T_CHECK(fabs(sig_used * sig_used / s2 - 1) < 1e-8, "sigma^2 %.10g vs eq. (8) %.10g",
                sig_used * sig_used, s2);
        T_CHECK(fabs(var - s2) < 5 * se, "empirical noise variance %.4g vs eq. (8) %.4g (se %.2g)",
                var, s2, se);
        if (k == ws) printf("noise variance: empirical %.5g, eq. (8) %.5g (%ld samples)\n", var, s2, cnt);
      }
    }
    /* (e) RDP rule below eq. (8); budget exactly fits; a smaller budget refuses */
    {
      const double eps = 0.5, delta = 1e-3, C = 1.0;
      dpo_clip_t clip = {DPO_CLIP_L2, C};
      double sig[2] = {0, 0};
      for (int rule = 0; rule <= 1; rule++) {
        for (int small = 0; small <= 1; small++) {
          dpo_dpadmm_opts_t o;
          dpo_dpadmm_opts_default(&o);
          o.accelerated = 1; o.lambda = lam; o.rho = rho; o.eta = eta; o.T = 20;
          o.clip = C; o.eps = eps; o.delta = delta; o.noise = 1;
          o.sigma_rule = rule ? DPO_DPADMM_SIGMA_RDP : DPO_DPADMM_SIGMA_EQ8;
          dpo_ledger_t *L = NULL;
          dpo_rng_t *rng = NULL;
          dpo_ledger_open_rdp(sub, small ? eps / 2 : eps, delta, NULL, 0, &L);
          dpo_rng_create(1, 77, 0, &rng);
          o.rng = rng; o.ledger = L;
          double x[D] = {0};
          dpo_dpadmm_info_t inf;
          rc = run(sub, m, s, &clip, A, &o, x, &inf);
          sig[rule] = inf.sigma;
          if (!small) {
            T_CHECK(rc == DPO_OK && inf.iters == 20, "rule %d: full budget run: %s (%lld iters) %s",
                    rule, dpo_strerror(rc), (long long)inf.iters, dpo_errmsg());
          } else {
            T_CHECK(rc == DPO_EBUDGET, "rule %d: expected DPO_EBUDGET, got %s", rule, dpo_strerror(rc));
            T_CHECK(inf.iters >= 1 && inf.iters < 20, "rule %d: %lld iterations before refusal",
                    rule, (long long)inf.iters);
            int fin = 1;
            for (int j = 0; j < D; j++) fin &= isfinite(x[j]);
            T_CHECK(fin, "x after refusal");
          }
          if (r == 0) {
            T_CHECK(dpo_ledger_count(L) == inf.releases && inf.releases == inf.iters + 1,
                    "charges %lld releases %lld iters %lld", (long long)dpo_ledger_count(L),
                    (long long)inf.releases, (long long)inf.iters);
            double se, sd;
            dpo_ledger_spent(L, &se, &sd);
            T_CHECK(se <= (small ? eps / 2 : eps), "spent %.17g", se);
            if (k == ws && small)
              printf("rule %s: sigma %.5g, ledger budget %.3g refused after %lld iterations\n",
                     rule ? "rdp" : "eq8", inf.sigma, eps / 2, (long long)inf.iters);
          }
          dpo_rng_destroy(rng);
          dpo_ledger_close(L);
        }
      }
      T_CHECK(sig[1] > 0 && sig[1] < sig[0], "RDP sigma %.5g should be below eq. (8)'s %.5g", sig[1], sig[0]);
    }
    t_free(s);
    MPI_Comm_free(&sub);
  }
  dpo_admm_A_destroy(A);
  free(Ad);
  t_free(full);
  dpo_model_destroy(m);
  return dpo_t_finish("test_admm_dp");
}
