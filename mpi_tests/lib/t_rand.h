/* The unit tests' pseudo-random data and vector distance (test_model, test_kern_prefetch):
 * xorshift64* from a state the test seeds, so every test's data are fixed. */
#ifndef DPO_T_RAND_H
#define DPO_T_RAND_H

#include <math.h>
#include <stdint.h>

static uint64_t rng_state;
static inline double urand(void) { /* xorshift64*, uniform in [0, 1) */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}
static inline double nrand(void) { return urand() * 2.0 - 1.0; } /* uniform in [-1, 1) */
static inline void rand_vec(double *x, int n, double sc) {
  for (int i = 0; i < n; i++) x[i] = sc * nrand();
}
/* ||a - b|| / ||b|| (or ||a - b|| when b = 0) */
static inline double rel2(const double *a, const double *b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return sqrt(num) / (den > 0 ? sqrt(den) : 1.0);
}
#endif
