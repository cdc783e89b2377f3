/* Helpers for the ADMM MPI tests: least-squares targets on the synthetic rows of
 * test_optim_common.h, and independent serial references written here (coordinate descent for
 * the lasso, FISTA for l1-logistic), run on the full data set that every rank builds itself. */
#ifndef DPO_TEST_ADMM_COMMON_H
#define DPO_TEST_ADMM_COMMON_H

#include "test_optim_common.h"

/* Replace labels by y = u'x_true + 0.1 noise (x_true sparse-ish), from the global row id. */
static inline void t_lsq_targets(dpo_shard_t *s, uint64_t seed) {
  s->labels = DPO_LABELS_REAL;
  for (int64_t i = 0; i < s->n; i++) {
    double t = 0;
    for (int32_t j = 0; j < s->d; j++) {
      double xt = (j % 3 == 0) ? 0.0 : (4.0 * t_u01(seed + 11, -1, j) - 2.0);
      double v = s->sparse ? 0.0 : s->X[i * s->d + j];
      if (s->sparse)
        for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
          if (s->colind[p] == j) v = s->val[p];
      t += v * xt;
    }
    s->y[i] = t + 0.1 * (2.0 * t_u01(seed + 12, s->row0 + i, 0) - 1.0);
  }
}

static inline double t_dense(const dpo_shard_t *s, int64_t i, int32_t j) {
  if (!s->sparse) return s->X[i * s->d + j];
  for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
    if (s->colind[p] == j) return s->val[p];
  return 0.0;
}

/* (1/n) sum 0.5 (u'z - y)^2 + lambda ||z||_1 (long double accumulation) */
static inline double t_lasso_obj(const dpo_shard_t *s, const double *z, double lambda) {
  long double L = 0;
  for (int64_t i = 0; i < s->n; i++) {
    long double e = t_row_dot(s, i, z) - s->y[i];
    L += 0.5L * e * e;
  }
  long double a = 0;
  for (int32_t j = 0; j < s->d; j++) a += fabsl((long double)z[j]);
  return (double)(L / s->n + lambda * a);
}

/* Cyclic coordinate descent for the lasso to max coordinate change < 1e-14. */
static inline void t_lasso_cd(const dpo_shard_t *s, double lambda, double *z) {
  int32_t d = s->d;
  int64_t n = s->n;
  double *X = malloc((size_t)(n * d) * sizeof *X), *r = malloc((size_t)n * sizeof *r),
         *cn = calloc((size_t)d, sizeof *cn);
  for (int64_t i = 0; i < n; i++)
    for (int32_t j = 0; j < d; j++) {
      X[i * d + j] = t_dense(s, i, j);
      cn[j] += X[i * d + j] * X[i * d + j] / n;
    }
  for (int32_t j = 0; j < d; j++) z[j] = 0;
  for (int64_t i = 0; i < n; i++) r[i] = s->y[i];
  for (int sweep = 0; sweep < 200000; sweep++) {
    double mx = 0;
    for (int32_t j = 0; j < d; j++) {
      if (cn[j] == 0) continue;
      double rho = 0;
      for (int64_t i = 0; i < n; i++) rho += X[i * d + j] * (r[i] + X[i * d + j] * z[j]);
      rho /= n;
      double nz = rho > lambda ? (rho - lambda) / cn[j] : rho < -lambda ? (rho + lambda) / cn[j] : 0;
      double dz = nz - z[j];
      if (dz != 0) {
        for (int64_t i = 0; i < n; i++) r[i] -= X[i * d + j] * dz;
        z[j] = nz;
      }
      if (fabs(dz) > mx) mx = fabs(dz);
    }
    if (mx < 1e-14) break;
  }
  free(X);
  free(r);
  free(cn);
}

/* (1/n) sum log(1 + exp(-y u'z)) + lambda ||z||_1 and the smooth part's gradient */
static inline double t_l1log_obj(const dpo_shard_t *s, const double *z, double lambda, double *g) {
  int32_t d = s->d;
  long double L = 0;
  if (g)
    for (int32_t j = 0; j < d; j++) g[j] = 0;
  for (int64_t i = 0; i < s->n; i++) {
    long double m = s->y[i] * t_row_dot(s, i, z);
    L += m > 0 ? log1pl(expl(-m)) : -m + log1pl(expl(m));
    if (g) {
      double c = (double)(-s->y[i] / (1.0L + expl(m))) / s->n;
      for (int32_t j = 0; j < d; j++) g[j] += c * t_dense(s, i, j);
    }
  }
  long double a = 0;
  for (int32_t j = 0; j < d; j++) a += fabsl((long double)z[j]);
  return (double)(L / s->n + lambda * a);
}

/* FISTA (Beck-Teboulle 2009) with step 1/L, L = max ||u||^2 / 4 <= 1/4, 20000 iterations with
 * restart on objective increase. */
static inline void t_l1log_fista(const dpo_shard_t *s, double lambda, double *z) {
  int32_t d = s->d;
  double *yk = calloc((size_t)d, sizeof *yk), *zp = calloc((size_t)d, sizeof *zp),
         *g = malloc((size_t)d * sizeof *g);
  double t = 1, step = 4.0, Fp = INFINITY;
  for (int32_t j = 0; j < d; j++) z[j] = 0;
  for (int it = 0; it < 20000; it++) {
    t_l1log_obj(s, yk, lambda, g);
    memcpy(zp, z, (size_t)d * sizeof *z);
    for (int32_t j = 0; j < d; j++) {
      double v = yk[j] - step * g[j], k = step * lambda;
      z[j] = v > k ? v - k : v < -k ? v + k : 0;
    }
    double F = t_l1log_obj(s, z, lambda, NULL);
    double tn = 0.5 * (1 + sqrt(1 + 4 * t * t));
    if (F > Fp) { /* adaptive restart (O'Donoghue-Candes) */
      tn = 1;
      memcpy(yk, z, (size_t)d * sizeof *z);
    } else {
      for (int32_t j = 0; j < d; j++) yk[j] = z[j] + (t - 1) / tn * (z[j] - zp[j]);
    }
    t = tn;
    Fp = F;
  }
  free(yk);
  free(zp);
  free(g);
}
#endif
