/* Private pieces shared by src/mf/ (not installed). */
#ifndef DPO_MF_IMPL_H
#define DPO_MF_IMPL_H

#include <stdint.h>

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

/* One rating's term f_ab = (y - x1'x2)^2 + lambda (wu ||x1||^2 + wi ||x2||^2) and its gradient,
 * ADDED to g1, g2 (thesis eq. 3.1 in the partially separable form 3.2).  Returns f_ab. */
static inline double dpo__mf_term(int32_t r, const double *x1, const double *x2, double y,
                                  double lambda, double wu, double wi, double *g1, double *g2) {
  double p = 0;
  for (int32_t q = 0; q < r; q++) p += x1[q] * x2[q];
  double e = p - y, f = e * e;
  double a = 2 * e, bu = 2 * lambda * wu, bi = 2 * lambda * wi;
  if (lambda != 0) {
    double n1 = 0, n2 = 0;
    for (int32_t q = 0; q < r; q++) {
      n1 += x1[q] * x1[q];
      n2 += x2[q] * x2[q];
    }
    f += lambda * (wu * n1 + wi * n2);
  }
  for (int32_t q = 0; q < r; q++) {
    double x1q = x1[q], x2q = x2[q];
    g1[q] += a * x2q + bu * x1q;
    g2[q] += a * x1q + bi * x2q;
  }
  return f;
}

#endif
