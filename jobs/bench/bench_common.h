/* Pieces shared by the benchmarks in jobs/bench/ (not part of the library).
 *
 * xs_next / xs_unif: xorshift64* generator for synthetic data (deterministic per seed).
 * bench_read_sum: the read-bandwidth loop every ratio is measured against: a sum of all
 * entries with 8 independent accumulators, so it is limited by memory, not by the latency of
 * one floating-point add chain (no -ffast-math needed).
 * bench_read_sum_i32: the same over 32-bit integers (the column indices of a CSR matrix). */
#ifndef DPO_BENCH_COMMON_H
#define DPO_BENCH_COMMON_H

#include <stdint.h>

static inline uint64_t xs_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 2685821657736338717ULL;
}
static inline double xs_unif(uint64_t *s) { return (double)(xs_next(s) >> 11) * 0x1.0p-53; }

static inline double bench_read_sum(const double *a, int64_t len) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    s0 += a[i];
    s1 += a[i + 1];
    s2 += a[i + 2];
    s3 += a[i + 3];
    s4 += a[i + 4];
    s5 += a[i + 5];
    s6 += a[i + 6];
    s7 += a[i + 7];
  }
  for (; i < len; i++) s0 += a[i];
  return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

static inline int64_t bench_read_sum_i32(const int32_t *a, int64_t len) {
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    s0 += a[i];
    s1 += a[i + 1];
    s2 += a[i + 2];
    s3 += a[i + 3];
    s4 += a[i + 4];
    s5 += a[i + 5];
    s6 += a[i + 6];
    s7 += a[i + 7];
  }
  for (; i < len; i++) s0 += a[i];
  return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

#endif
