/* Newton reference solver (ScaLAPACK over a BLACS grid of 1..4 ranks) and the power iteration
 * for the largest Hessian eigenvalue:
 *  - ||grad F|| <= 1e-10 on a synthetic logistic problem (n = 2000, d = 20, dense and CSR);
 *  - F* identical across 1..4 ranks (1e-12 relative) and equal to a serial LAPACK (dposv)
 *    Newton written here over the full data (long-double gradient sums);
 *  - lambda_max(Hessian at x*) by dpo_hessian_lmax equals LAPACK dsyev on the full Hessian. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"
#include "../lib/test_optim_common.h"

#define N 2000
#define D 20
#define LAMBDA 1e-3
#define SEED 31

void dposv_(const char *uplo, const int *n, const int *nrhs, double *a, const int *lda,
            double *b, const int *ldb, int *info, size_t);
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
            double *w, double *work, const int *lwork, int *info, size_t, size_t);

/* full Hessian of F at x (row-major = column-major: symmetric) */
static void serial_hess(const dpo_shard_t *s, const double *x, double *H) {
  memset(H, 0, sizeof(double) * D * D);
  double u[D];
  for (int64_t i = 0; i < s->n; i++) {
    memset(u, 0, sizeof u);
    if (s->sparse)
      for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) u[s->colind[p]] = s->val[p];
    else
      memcpy(u, s->X + i * D, sizeof u);
    double t = (double)t_row_dot(s, i, x), sg = 1.0 / (1.0 + exp(-t)), w = sg * (1.0 - sg);
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) H[a * D + b] += w * u[a] * u[b];
  }
  for (int a = 0; a < D * D; a++) H[a] /= (double)s->n;
  for (int a = 0; a < D; a++) H[a * D + a] += 2.0 * LAMBDA;
}

/* Serial Newton with LAPACK dposv and Armijo backtracking; returns F*. */
static double serial_newton(const dpo_shard_t *s, double *x, double *gnorm) {
  double F, g[D], H[D * D], p[D], xt[D], Ft, gt[D];
  const int n = D, one = 1;
  int info;
  memset(x, 0, sizeof(double) * D);
  t_naive(s, x, LAMBDA, NULL, 0, 0, &F, g, 1);
  for (int it = 0; it < 60 && t_norm(g, D) > 1e-13; it++) {
    serial_hess(s, x, H);
    for (int j = 0; j < D; j++) p[j] = -g[j];
    dposv_("L", &n, &one, H, &n, p, &n, &info, 1);
    if (info) return NAN;
    double gtp = 0, t = 1;
    for (int j = 0; j < D; j++) gtp += g[j] * p[j];
    for (int ls = 0; ls < 60; ls++, t *= 0.5) {
      for (int j = 0; j < D; j++) xt[j] = x[j] + t * p[j];
      t_naive(s, xt, LAMBDA, NULL, 0, 0, &Ft, gt, 1);
      if (Ft <= F + 1e-4 * t * gtp || (fabs(gtp) < 1e-20 && t_norm(gt, D) < t_norm(g, D))) break;
    }
    memcpy(x, xt, sizeof xt);
    memcpy(g, gt, sizeof gt);
    F = Ft;
  }
  *gnorm = t_norm(g, D);
  return F;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (P > 4) P = 4;
  for (int sparse = 0; sparse <= 1; sparse++) {
    double Fk[5], xk[5][D], lk[5];
    for (int k = 1; k <= P; k++) {
      MPI_Comm sub = dpo_t_subcomm(k);
      if (sub == MPI_COMM_NULL) continue;
      dpo_shard_t *s = t_shard(sub, N, D, sparse, SEED);
      dpo_model_t *m = NULL;
      dpo_model_create("logreg", LAMBDA, &m);
      double x[D] = {0};
      dpo_newton_info_t info;
      int rc = dpo_newton_solve(sub, m, s, x, 1e-10, 50, &info);
      T_CHECK(rc == DPO_OK, "sparse=%d k=%d newton: %s", sparse, k, dpo_errmsg());
      T_CHECK(info.gnorm <= 1e-10 && info.iters > 2, "k=%d: gnorm %g after %ld iterations", k,
              info.gnorm, (long)info.iters);
      double lm = NAN;
      rc = dpo_hessian_lmax(sub, m, s, x, 10000, 1e-14, &lm);
      T_CHECK(rc == DPO_OK, "k=%d lmax: %s", k, dpo_errmsg());
      /* identical on every rank of the sub-communicator */
      double chk[D + 2], c0[D + 2];
      memcpy(chk, x, sizeof x);
      chk[D] = info.F;
      chk[D + 1] = lm;
      memcpy(c0, chk, sizeof chk);
      MPI_Bcast(c0, D + 2, MPI_DOUBLE, 0, sub);
      T_CHECK(memcmp(c0, chk, sizeof chk) == 0, "k=%d: ranks disagree on x*, F* or lmax", k);
      if (wr == 0) {
        Fk[k] = info.F;
        lk[k] = lm;
        memcpy(xk[k], x, sizeof x);
      }
      dpo_model_destroy(m);
      t_free(s);
      MPI_Comm_free(&sub);
    }
    if (wr == 0) {
      dpo_shard_t *full = t_rows(N, 0, N, D, sparse, SEED);
      double xs[D], gn = NAN, H[D * D], w[D], work[10 * D];
      double Fs = serial_newton(full, xs, &gn);
      T_CHECK(gn < 1e-12, "serial Newton did not converge (%g)", gn);
      const int n = D, lwork = 10 * D;
      int info;
      serial_hess(full, xs, H);
      dsyev_("N", "U", &n, H, &n, w, work, &lwork, &info, 1, 1);
      T_CHECK(info == 0, "dsyev info %d", info);
      printf("sparse=%d F* = %.17g, lmax = %.17g (dsyev %.17g)\n", sparse, Fk[1], lk[1],
             w[D - 1]);
      for (int k = 1; k <= P; k++) {
        T_CHECK(fabs(Fk[k] - Fk[1]) <= 1e-12 * Fk[1], "F* k=%d vs 1: %.17g %.17g", k, Fk[k],
                Fk[1]);
        T_CHECK(fabs(Fk[k] - Fs) <= 1e-12 * Fs, "F* k=%d vs serial: %.17g %.17g", k, Fk[k], Fs);
        T_CHECK(dpo_t_reldiff(xk[k], xs, D) <= 1e-9, "x* k=%d vs serial: %g", k,
                dpo_t_reldiff(xk[k], xs, D));
        T_CHECK(fabs(lk[k] - w[D - 1]) <= 1e-9 * w[D - 1], "lmax k=%d: %.17g vs dsyev %.17g", k,
                lk[k], w[D - 1]);
        /* the top eigenvalue is well separated from the rest (else the check is weak) */
        T_CHECK(w[D - 2] < 0.99 * w[D - 1], "eigen gap too small");
      }
      t_free(full);
    }
  }
  return dpo_t_finish("test_newton");
}
