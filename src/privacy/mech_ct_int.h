/* What the fixed-work samplers of mech_ct.c share with the Polya variate's (mech_polya.c):
 * the word stream, the uniform below t, the 64-bit rational atoms and their batch (inline, as
 * they were in one file: a Polya coin is mostly a batch of 3), the (2/e)^p atom and the
 * fallback counters.  Only those two files include it. */
#ifndef DPO_MECH_CT_INT_H
#define DPO_MECH_CT_INT_H

#include "mech_ct.h"

#include <stdint.h>

typedef unsigned __int128 u128;

/* the counters dpo__ct_stats reads (tests) */
extern dpo__ct_stats_t dpo__ct_st;

/* the next random word; 8 fetched at a time (the fetch pattern is fixed by the work) */
static inline uint64_t dpo__w(dpo__ws_t *s) {
  if (!s->left) {
    dpo_rng_bytes(s->rng, s->w, sizeof s->w);
    s->left = 8;
  }
  return s->w[--s->left];
}

/* uniform on [0, t) by masking and rejection: each round one word, and the number of rounds
 * is independent of the value (no division, whose latency depends on its operands) */
static inline uint64_t dpo__below(dpo__ws_t *ws, uint64_t t) {
  const uint64_t mask = t > 1 ? ~(uint64_t)0 >> __builtin_clzll(t - 1) : 0;
  for (;;) {
    uint64_t u = dpo__w(ws) & mask;
    if (u < t) return u;
  }
}

/* the certified constant tables, computed once */
void dpo__ct_tabs(void);
/* one word w against F/D, F <= D < 2^64: 1, 0, or 2 (undecided: *R = F 2^64 - w D in (0, D),
 * and U's next word decides against R/D) */
static inline int dpo__at64(uint64_t w, uint64_t F, uint64_t D, uint64_t *R) {
  u128 wd = (u128)w * D, f = (u128)F << 64;
  int one = wd + D <= f, zero = wd >= f;
  *R = (uint64_t)(f - wd);
  return one + 2 * (1 - one - zero);
}
/* U's further words against R/D, until one decides */
static inline int dpo__lazy64(dpo__ws_t *ws, uint64_t R, uint64_t D) {
  uint64_t R2;
  for (;;) {
    int s = dpo__at64(dpo__w(ws), R, D, &R2);
    if (s < 2) return s;
    R = R2;
  }
}
/* n <= 32 atoms F[i]/D[i]; bit i of the result = atom i.  n + 1 words. */
static inline uint32_t dpo__ct_batch64(dpo__ws_t *ws, int n, const uint64_t *F,
                                       const uint64_t *D) {
  uint32_t A = 0, M = 0;
  uint64_t R[32], Rs = 0, Ds = 1;
  for (int i = 0; i < n; i++) {
    int s = dpo__at64(dpo__w(ws), F[i], D[i], &R[i]);
    uint64_t amb = (uint64_t)(s >> 1), m = -(amb & (M == 0)); /* the first undecided */
    A |= (uint32_t)(s & 1) << i;
    M |= (uint32_t)amb << i;
    Rs = (Rs & ~m) | (R[i] & m);
    Ds = (Ds & ~m) | (D[i] & m);
  }
  uint64_t R2;
  int s = dpo__at64(dpo__w(ws), Rs, Ds, &R2); /* settles the undecided atom, if one */
  if (!(M & (M - 1)) && s < 2) {
    int j = __builtin_ctz(M | (1u << 31));
    return A | ((uint32_t)(s & (M != 0)) << j);
  }
  dpo__ct_st.fallbacks++; /* two undecided, or the extra word undecided: < 2^-118 */
  int j = __builtin_ctz(M);
  A |= (uint32_t)(s < 2 ? s : dpo__lazy64(ws, R2, Ds)) << j;
  for (int i = j + 1; i < n; i++)
    if (M >> i & 1u) A |= (uint32_t)dpo__lazy64(ws, R[i], D[i]) << i;
  return A;
}
/* Bernoulli((2/e)^p) from the table, p >= 0: two words an atom of up to 64 powers */
int dpo__ct_t2e(dpo__ws_t *ws, uint64_t p, int *rc);

#endif
