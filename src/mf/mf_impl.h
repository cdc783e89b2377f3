/* Private pieces shared by src/mf/ (not installed). */
#ifndef DPO_MF_IMPL_H
#define DPO_MF_IMPL_H

#include "core/clones.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* splitmix64: a counter-based hash for initial points and the held-out split (not privacy
 * noise: those come from dpopt/privacy.h). */
static inline uint64_t dpo__mf_mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
/* Uniform in [0, 1) from a hash. */
static inline double dpo__mf_unit(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

/* The rating loops (dpo__hm_block, the evaluation) and the compact L-BFGS products, HAMSI's
 * epoch, are built once per x86-64 level (DPO_CLONES_LEVELS, core/clones.h): every rank of a
 * run on one machine runs the same build, so results stay the same at every rank count. */

/* x1'x2 over r entries, in 8 partial sums (entries q = j mod 8: four 2-wide vectors, four
 * independent chains) added as a tree, then the tail: as one scalar chain of r dependent adds
 * it was most of HAMSI's epoch (perf, rank 50: 2/3 of the time in dpo__hm_block, on the add
 * latency).  The order is fixed, so a run is reproducible and the same at every rank count. */
typedef double dpo__mf_v2 __attribute__((vector_size(16)));
static inline dpo__mf_v2 dpo__mf_ld2(const double *p) {
  dpo__mf_v2 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline double dpo__mf_dot(int32_t r, const double *x1, const double *x2) {
  dpo__mf_v2 s0 = {0, 0}, s1 = {0, 0}, s2 = {0, 0}, s3 = {0, 0};
  int32_t q = 0;
  for (; q + 8 <= r; q += 8) {
    s0 += dpo__mf_ld2(x1 + q) * dpo__mf_ld2(x2 + q);
    s1 += dpo__mf_ld2(x1 + q + 2) * dpo__mf_ld2(x2 + q + 2);
    s2 += dpo__mf_ld2(x1 + q + 4) * dpo__mf_ld2(x2 + q + 4);
    s3 += dpo__mf_ld2(x1 + q + 6) * dpo__mf_ld2(x2 + q + 6);
  }
  dpo__mf_v2 t = (s0 + s1) + (s2 + s3);
  double p = t[0] + t[1];
  for (; q < r; q++) p += x1[q] * x2[q];
  return p;
}

/* The L2 weight of one rating of a row with deg training ratings, dbar the mean degree of its
 * side (users or items with ratings): 1 / sqrt(deg dbar), so the row's ratings sum to
 * sqrt(deg / dbar) (dpopt/hamsi.h) */
static inline double dpo__mf_l2w(double deg, double dbar) { return 1.0 / sqrt(deg * dbar); }

/* One rating's term f_ab = (y - x1'x2)^2 + lambda (wu ||x1||^2 + wi ||x2||^2) and its gradient,
 * ADDED to g1, g2 (thesis eq. 3.1 in the partially separable form 3.2).  Returns f_ab. */
static inline double dpo__mf_term(int32_t r, const double *restrict x1,
                                  const double *restrict x2, double y, double lambda, double wu,
                                  double wi, double *restrict g1, double *restrict g2) {
  double p = dpo__mf_dot(r, x1, x2);
  double e = p - y, f = e * e;
  double a = 2 * e, bu = 2 * lambda * wu, bi = 2 * lambda * wi;
  if (lambda != 0) f += lambda * (wu * dpo__mf_dot(r, x1, x1) + wi * dpo__mf_dot(r, x2, x2));
#pragma omp simd
  for (int32_t q = 0; q < r; q++) {
    double x1q = x1[q], x2q = x2[q];
    g1[q] += a * x2q + bu * x1q;
    g2[q] += a * x1q + bi * x2q;
  }
  return f;
}

/* The grid blocks' rating loop (dpo__mf_run_terms below) in 8-wide vectors. */
typedef double dpo__mf_v8 __attribute__((vector_size(64)));
#define DPO__MF_RV 8
/* loads and stores as statement macros: no function takes or returns a vector */
#define DPO__MF_LD8(p) ({ dpo__mf_v8 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define DPO__MF_ST8(p, v) do { dpo__mf_v8 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
/* the sum of a vector's 8 lanes, in one fixed order */
#define DPO__MF_HSUM8(v)                                                                  \
  ({                                                                                      \
    dpo__mf_v8 h_ = (v);                                                                  \
    ((h_[0] + h_[1]) + (h_[2] + h_[3])) + ((h_[4] + h_[5]) + (h_[6] + h_[7]));            \
  })
/* the same by halves (lanes i and i + 4, then i and i + 2): three vector adds, a short
 * chain for the rating loop's dot product */
typedef double dpo__mf_v4 __attribute__((vector_size(32)));
#define DPO__MF_HSUM8H(v)                                                                 \
  ({                                                                                      \
    dpo__mf_v8 h_ = (v);                                                                  \
    dpo__mf_v4 q_ = __builtin_shufflevector(h_, h_, 0, 1, 2, 3) +                         \
                    __builtin_shufflevector(h_, h_, 4, 5, 6, 7);                          \
    dpo__mf_v2 d_ = __builtin_shufflevector(q_, q_, 0, 1) + __builtin_shufflevector(q_, q_, 2, 3); \
    d_[0] + d_[1];                                                                        \
  })
/* One rating's residual x1'x2 - y: the first nf 8-wide products in two chains summed by
 * halves, the entries past the last 8 apart from that chain.  Always inlined (as the helpers
 * below), so it runs in the caller's clone (a call would run baseline code). */
static inline __attribute__((always_inline)) double
dpo__mf_resid(int32_t r, const int32_t nf, const dpo__mf_v8 *xa, const double *restrict x1,
              const double *restrict x2, double y) {
  dpo__mf_v8 s0 = {0}, s1 = {0};
#pragma GCC unroll 8
  for (int v = 0; v < DPO__MF_RV; v += 2) {
    if (v < nf) s0 += xa[v] * DPO__MF_LD8(x2 + 8 * v);
    if (v + 1 < nf) s1 += xa[v + 1] * DPO__MF_LD8(x2 + 8 * v + 8);
  }
  double t = 0;
  for (int32_t q = 8 * nf; q < r; q++) t += x1[q] * x2[q];
  return DPO__MF_HSUM8H(s0 + s1) + t - y;
}

/* One rating's gradient, a = 2 e: g1 += a x2 + bu x1 (its vector part in ga), g2 += a x1 +
 * bi x2.  lam = 0 (a constant): no L2 terms, and a x2 is fused into the sums. */
static inline __attribute__((always_inline)) void
dpo__mf_grad(int32_t r, const int32_t nf, const int lam, dpo__mf_v8 *ga, const dpo__mf_v8 *xa,
             const double *restrict x1, double *restrict g1, const double *restrict x2,
             double *restrict g2, double a, double bu, double bi) {
#pragma GCC unroll 8
  for (int v = 0; v < DPO__MF_RV; v++)
    if (v < nf) {
      dpo__mf_v8 xb = DPO__MF_LD8(x2 + 8 * v);
      if (lam) {
        ga[v] += a * xb + bu * xa[v];
        DPO__MF_ST8(g2 + 8 * v, DPO__MF_LD8(g2 + 8 * v) + (a * xa[v] + bi * xb));
      } else {
        ga[v] += a * xb;
        DPO__MF_ST8(g2 + 8 * v, DPO__MF_LD8(g2 + 8 * v) + a * xa[v]);
      }
    }
  for (int32_t q = 8 * nf; q < r; q++) {
    double x1q = x1[q], x2q = x2[q];
    g1[q] += lam ? a * x2q + bu * x1q : a * x2q;
    g2[q] += lam ? a * x1q + bi * x2q : a * x1q;
  }
}

/* One rating's term f (thesis eq. 3.2, e = its residual) returned and its gradient added. */
static inline __attribute__((always_inline)) double
dpo__mf_rate(int32_t r, const int32_t nf, const int lam, dpo__mf_v8 *ga, const dpo__mf_v8 *xa,
             const double *restrict x1, double *restrict g1, const double *restrict x2,
             double *restrict g2, double e, double lambda, double n1, const double *wu,
             const double *wi) {
  double f = e * e, bu = 0, bi = 0;
  if (lam) {
    bu = 2 * lambda * *wu;
    bi = 2 * lambda * *wi;
    f += lambda * (*wu * n1 + *wi * dpo__mf_dot(r, x2, x2));
  }
  dpo__mf_grad(r, nf, lam, ga, xa, x1, g1, x2, g2, 2 * e, bu, bi);
  return f;
}

/* The terms of one user's run of ratings in a grid block (ratings sorted by user; r <= 8 *
 * DPO__MF_RV): dpo__mf_term for each, with the user's row x1 and its gradient sum g1 held in
 * 8-wide vectors for the whole run, and the item rows read and updated 8 entries at a time.
 * Items it[k], ratings y, wu, wi [0, n) (wu, wi read only if lam).  Two ratings a turn: a
 * rating's chain (products, sum, residual, gradient) is ~60 cycles and ~100 instructions, so
 * one at a time left the core waiting on it (perf: the samples on the sum and residual;
 * with the item rows in L1 the loop ran no faster).  No software prefetch of the item rows
 * (4 ratings ahead it had paid with one rating a turn): with two, dropping it took the
 * gradient phase from 0.96-1.28 to 0.72-1.03 s (2 ranks) and 2.8-3.6 to 2.1-2.4 s (1 rank),
 * rank 50, 300 epochs, alternated.  The order of operations is fixed (ratings in order): the
 * same bits at every rank count. */
static inline __attribute__((always_inline)) double
dpo__mf_run_terms(int32_t r, const int32_t nf, const int lam, const double *restrict x1,
                  double *restrict g1, const double *restrict X2, double *restrict G2,
                  const int32_t *restrict it, const double *restrict y,
                  const double *restrict wu, const double *restrict wi, double lambda,
                  int64_t n) {
  dpo__mf_v8 xa[DPO__MF_RV], ga[DPO__MF_RV];
#pragma GCC unroll 8
  for (int v = 0; v < DPO__MF_RV; v++) {
    xa[v] = v < nf ? DPO__MF_LD8(x1 + 8 * v) : (dpo__mf_v8){0};
    ga[v] = v < nf ? DPO__MF_LD8(g1 + 8 * v) : (dpo__mf_v8){0};
  }
  double n1 = lam ? dpo__mf_dot(r, x1, x1) : 0, fs = 0;
  for (int64_t k = 0; k < n; k += 2) {
    int two = k + 1 < n;
    const double *xp = X2 + (int64_t)it[k] * r, *xq = X2 + (int64_t)it[k + two] * r;
    double ep = dpo__mf_resid(r, nf, xa, x1, xp, y[k]);
    double eq = two ? dpo__mf_resid(r, nf, xa, x1, xq, y[k + 1]) : 0;
    fs += dpo__mf_rate(r, nf, lam, ga, xa, x1, g1, xp, G2 + (int64_t)it[k] * r, ep, lambda,
                       n1, wu + k, wi + k);
    if (two)
      fs += dpo__mf_rate(r, nf, lam, ga, xa, x1, g1, xq, G2 + (int64_t)it[k + 1] * r, eq,
                         lambda, n1, wu + k + 1, wi + k + 1);
  }
#pragma GCC unroll 8
  for (int v = 0; v < DPO__MF_RV; v++)
    if (v < nf) DPO__MF_ST8(g1 + 8 * v, ga[v]);
  return fs;
}

/* Factor matrices of dpopt mf --out (mf_files.c): header "# dpopt mf factors: ROWS x COLS",
 * the comment line, then ROWS lines of COLS numbers (%.17g; numpy.loadtxt reads the matrix).
 * The reader also takes older one-number-per-line files (dpo_model_read); *x is malloc'ed,
 * errors name the file (and line). */
int dpo__mf_matrix_write(const char *path, const double *x, int32_t rows, int32_t cols,
                         const char *comment);
int dpo__mf_matrix_read(const char *path, int32_t rows, int32_t cols, double **x);

#endif
