/* Helpers for the optim/comm MPI tests: synthetic shards built by hand (every row generated
 * from its GLOBAL id, so any rank layout holds the same global data set), and a naive serial
 * logistic objective in long double as the independent reference. */
#ifndef DPO_TEST_OPTIM_COMMON_H
#define DPO_TEST_OPTIM_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/data.h"

static inline uint64_t t_mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
/* uniform in [0, 1) from (seed, row, column) */
static inline double t_u01(uint64_t seed, int64_t r, int64_t j) {
  uint64_t h = t_mix(seed ^ t_mix((uint64_t)r * 0x100000001b3ULL + (uint64_t)j + 7));
  return (double)(h >> 11) * 0x1.0p-53;
}

/* Feature j of global row r: 0 (sparse pattern) or uniform in [-1, 1] / sqrt(d), so
 * ||u_r||_2 <= 1 (the declared row bound of the tests). */
static inline double t_feat(uint64_t seed, int64_t r, int32_t j, int32_t d, int sparse) {
  if (sparse && j != 0 && t_u01(seed + 3, r, j) >= 0.3) return 0.0;
  return (2.0 * t_u01(seed, r, j) - 1.0) / sqrt((double)d);
}
/* Label of global row r: drawn from a logistic model with a fixed x_true. */
static inline double t_label(uint64_t seed, int64_t r, int32_t d, int sparse) {
  double t = 0.0;
  for (int32_t j = 0; j < d; j++)
    t += t_feat(seed, r, j, d, sparse) * (4.0 * t_u01(seed + 1, -1, j) - 2.0);
  double p = 1.0 / (1.0 + exp(-3.0 * t));
  return t_u01(seed + 2, r, 0) < p ? 1.0 : -1.0;
}

/* Global rows [row0, row0 + n) of a data set with n_global rows. */
static inline dpo_shard_t *t_rows(int64_t n_global, int64_t row0, int64_t n, int32_t d,
                                  int sparse, uint64_t seed) {
  dpo_shard_t *s = calloc(1, sizeof *s);
  s->n = n;
  s->n_global = n_global;
  s->row0 = row0;
  s->d = d;
  s->sparse = sparse;
  s->labels = DPO_LABELS_BINARY;
  snprintf(s->source, sizeof s->source, "synthetic(seed=%llu)", (unsigned long long)seed);
  s->y = malloc((size_t)(n > 0 ? n : 1) * sizeof *s->y);
  if (sparse) {
    s->rowptr = malloc((size_t)(n + 1) * sizeof *s->rowptr);
    s->colind = malloc((size_t)(n * d + 1) * sizeof *s->colind);
    s->val = malloc((size_t)(n * d + 1) * sizeof *s->val);
    int64_t nz = 0;
    s->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
      for (int32_t j = 0; j < d; j++) {
        double v = t_feat(seed, row0 + i, j, d, 1);
        if (v != 0.0) {
          s->colind[nz] = j;
          s->val[nz++] = v;
        }
      }
      s->rowptr[i + 1] = nz;
    }
  } else {
    s->X = malloc((size_t)(n * d + 1) * sizeof *s->X);
    for (int64_t i = 0; i < n; i++)
      for (int32_t j = 0; j < d; j++) s->X[i * d + j] = t_feat(seed, row0 + i, j, d, 0);
  }
  for (int64_t i = 0; i < n; i++) s->y[i] = t_label(seed, row0 + i, d, sparse);
  return s;
}

/* This rank's slice of n rows split as evenly as possible over comm. */
static inline dpo_shard_t *t_shard(MPI_Comm comm, int64_t n, int32_t d, int sparse,
                                   uint64_t seed) {
  int r, P;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &P);
  int64_t base = n / P, rem = n % P;
  int64_t nl = base + (r < rem), row0 = r * base + (r < rem ? r : rem);
  return t_rows(n, row0, nl, d, sparse, seed);
}

static inline void t_free(dpo_shard_t *s) {
  if (!s) return;
  free(s->X);
  free(s->rowptr);
  free(s->colind);
  free(s->val);
  free(s->y);
  free(s);
}

static inline long double t_row_dot(const dpo_shard_t *s, int64_t i, const double *x) {
  long double t = 0;
  if (s->sparse) {
    for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
      t += (long double)s->val[p] * x[s->colind[p]];
  } else {
    for (int32_t j = 0; j < s->d; j++) t += (long double)s->X[i * s->d + j] * x[j];
  }
  return t;
}

/* Naive serial logistic objective over the listed local rows (NULL = all) of a full shard:
 * F = mean log(1 + exp(-y u'x)) + lambda ||x||^2, g its gradient, with optional per-example
 * L2 clipping at C (C <= 0: none).  Long double throughout.  Returns the row count. */
static inline int64_t t_naive(const dpo_shard_t *s, const double *x, double lambda,
                              const int64_t *rows, int64_t m, double C, double *F, double *g,
                              int finish) {
  const int32_t d = s->d;
  long double *G = calloc((size_t)d, sizeof *G), L = 0;
  int64_t cnt = rows ? m : s->n;
  for (int64_t k = 0; k < cnt; k++) {
    int64_t i = rows ? rows[k] : k;
    long double t = t_row_dot(s, i, x), y = s->y[i], mrg = y * t;
    L += mrg > 0 ? log1pl(expl(-mrg)) : -mrg + log1pl(expl(mrg));
    long double c = -y / (1.0L + expl(mrg));
    if (C > 0) {
      long double nrm = 0;
      if (s->sparse)
        for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
          nrm += (long double)s->val[p] * s->val[p];
      else
        for (int32_t j = 0; j < d; j++) nrm += (long double)s->X[i * d + j] * s->X[i * d + j];
      nrm = sqrtl(nrm) * fabsl(c);
      if (nrm > C) c *= C / nrm;
    }
    if (s->sparse)
      for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) G[s->colind[p]] += c * s->val[p];
    else
      for (int32_t j = 0; j < d; j++) G[j] += c * s->X[i * d + j];
  }
  long double xx = 0;
  for (int32_t j = 0; j < d; j++) xx += (long double)x[j] * x[j];
  if (finish) {
    *F = (double)(L / cnt + lambda * xx);
    for (int32_t j = 0; j < d; j++) g[j] = (double)(G[j] / cnt + 2.0L * lambda * x[j]);
  } else {
    *F = (double)L;
    for (int32_t j = 0; j < d; j++) g[j] = (double)G[j];
  }
  free(G);
  return cnt;
}

static inline double t_norm(const double *v, int32_t d) {
  double s = 0;
  for (int32_t j = 0; j < d; j++) s += v[j] * v[j];
  return sqrt(s);
}
#endif
