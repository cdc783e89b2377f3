/* Private pieces shared by src/mf/ (not installed). */
#ifndef DPO_MF_IMPL_H
#define DPO_MF_IMPL_H

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

/* The rating loops (dpo__hm_block, the evaluation) and the compact L-BFGS products in one
 * build per x86-64 level, picked by the loader for the CPU (GCC target_clones): the library
 * is compiled for baseline x86-64 (SSE2, no FMA), and these loops are HAMSI's epoch.  Every
 * rank of a run on one machine runs the same clone, so results stay the same at every rank
 * count; across machines they can differ in the last bits (FMA contraction, as the gradient
 * kernels' builds do). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DPO__MF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DPO__MF_CLONES
#endif

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

#endif
