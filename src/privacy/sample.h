/* Minibatch samplers of the private SGD algorithms: on rank 0 from the solver's stream, and on
 * every party for party-local sampling (src/comm/oracle.c) from its own secret stream.
 *
 * Poisson sampling (each of n rows kept independently with probability q = m/n) by geometric
 * gaps: the number of rows skipped before the next kept one is G ~ Geometric(q),
 * P(G = k) = q (1 - q)^k, and successive gaps are independent, so the kept set has exactly the
 * law of n independent Bernoulli(q) draws (the law the RDP accountant assumes) while a batch
 * costs O(expected batch) draws instead of O(n).  G is drawn EXACTLY (see sample.c): inversion
 * of a uniform V on [0, 1) revealed 64 bits at a time, G = #{k >= 1 : V < rho^k},
 * rho = (n - m)/n; every comparison is certified (a floating bound with a wide margin, else
 * fixed-point bounds of rho^k refined with more bits of V), so no floating rounding biases G.
 */
#ifndef DPO_PRIVACY_SAMPLE_H
#define DPO_PRIVACY_SAMPLE_H

#include <stdint.h>

#include "dpopt/rng.h"

/* One gap G ~ Geometric(m/n) (failures before the first success), 1 <= m <= n <= 2^53.
 * force_exact = 1 skips the floating fast path (tests). */
int dpo__geom_gap(dpo_rng_t *rng, int64_t m, int64_t n, int force_exact, int64_t *gap);

/* A Poisson batch: the sorted kept ids of 0..rows-1, each kept with probability q = m/n, in
 * (*ids)[0..*mb), *ids grown with realloc as needed (*cap its capacity).  1 <= m <= n; n is
 * the PUBLIC size the rate is defined by (under add-remove the exact row count is private:
 * sco_common.c), rows the rows actually held.  Expected cost O(q rows). */
int dpo__poisson_batch(dpo_rng_t *rng, int64_t m, int64_t n, int64_t rows, int64_t **ids,
                       int64_t *cap, int64_t *mb);

/* A uniform m-subset of 0..n-1 (sampling without replacement), sorted into ids[0..m): m steps
 * of a partial Fisher-Yates shuffle of pool (a permutation of 0..n-1 kept between calls: any
 * permutation gives a uniform subset), then a sort of the m ids.  O(m log m). */
void dpo__wor_batch(dpo_rng_t *rng, int64_t m, int64_t n, int64_t *pool, int64_t *ids);

/* Exact test V < ((n-m)/n)^k for the uniform V whose first *nw 64-bit words (most significant
 * first) are in w[0..DPO__GEOM_WORDS); more words are drawn from rng into w when needed.
 * *out = 1 if V < rho^k.  Exposed for tests. */
#define DPO__GEOM_WORDS 64
int dpo__geom_less(dpo_rng_t *rng, uint64_t *w, int *nw, int64_t m, int64_t n, int64_t k,
                   int *out);

#endif
