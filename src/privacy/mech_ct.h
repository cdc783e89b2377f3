/* Fixed-work exact samplers (mech_ct.c; the Polya variate: mech_polya.c): the discrete
 * Laplace, the discrete Gaussian and the Polya (negative binomial) variate whose work does not
 * depend on the value drawn.  Used by
 * mechanism.c (grid mechanisms, Polya shares) and parties.c (exact integer shares).  What is
 * constant and what is not: the header comment of mechanism.c. */
#ifndef DPO_MECH_CT_H
#define DPO_MECH_CT_H

#include "dpopt/rng.h"

#include <stdint.h>

/* random words, fetched 8 at a time (the fetch pattern is fixed by the work, not the values),
 * and the public reciprocals of the scale (mech_ct.c: dpo__qr64, dpo__qr256), once a call */
typedef struct {
  dpo_rng_t *rng;
  uint64_t w[8];
  int left;
  uint64_t rD, qD[4];
  unsigned __int128 rv, qv;
  int qsh;
} dpo__ws_t;

#define DPO__WS_INIT(r) {(r), {0}, 0, 0, {0}, 0, 0, 0}

/* P(x) ~ exp(-x/t), x >= 0, 1 <= t <= 2^50 */
int dpo__ct_geom(dpo__ws_t *ws, uint64_t t, uint64_t *x);
/* P(k) ~ exp(-|k|/t), 1 <= t <= 2^50 */
int dpo__ct_dlap(dpo__ws_t *ws, uint64_t t, int64_t *out);
/* P(k) ~ exp(-k^2/(2 s^2)), 1 <= s <= 2^44 */
int dpo__ct_dgauss(dpo__ws_t *ws, uint64_t s, int64_t *out);
/* n such draws into k[0..n-1] (mechanism.c): the same values, from the same stream, as n calls
 * of dpo_mech_discrete_gaussian, with the public per-scale divisions made once (secagg's
 * noise shares, secagg.c) */
int dpo__mech_dgauss_n(dpo_rng_t *rng, uint64_t sigma, int64_t n, int64_t *k);
/* X ~ NB(1/n, exp(-1/t)), 1 <= t <= 2^50, 2 <= n <= 2^32 */
int dpo__ct_polya(dpo__ws_t *ws, uint64_t t, uint64_t n, int64_t *x);
/* two independent such X, Y, their coins padded together (fewer than twice one's bound) */
int dpo__ct_polya2(dpo__ws_t *ws, uint64_t t, uint64_t n, int64_t *x, int64_t *y);
/* Bernoulli(exp(-g/t)), g < 4t, t <= 2^50: fixed work */
int dpo__ct_bexp_small(dpo__ws_t *ws, uint64_t g, uint64_t t, int *out);
/* one fair bit (one word) */
int dpo__ct_bit(dpo__ws_t *ws);

/* TEST ONLY: counters of the fixed-work paths (a draw that left them: rare fallbacks) */
typedef struct {
  uint64_t fallbacks, polya_pad, polya_over;
} dpo__ct_stats_t;
void dpo__ct_stats(dpo__ct_stats_t *s);
void dpo__ct_stats_reset(void);
/* TEST ONLY: the certified constant tables are narrow and hold e^-n, (2/e)^i, e^-(i/256) */
int dpo__ct_tables_ok(void);
/* TEST ONLY: the Polya padding bounds (block coins, tail coins) for (t, n) */
int dpo__ct_polya_bounds(uint64_t t, uint64_t n, int *bound_block, int *bound_tail);
/* TEST ONLY: the same for dpo__ct_polya2 (the coins of both variates) */
int dpo__ct_polya2_bounds(uint64_t t, uint64_t n, int *bound_block, int *bound_tail);

#endif
