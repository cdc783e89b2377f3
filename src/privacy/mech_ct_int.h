/* What the fixed-work samplers of mech_ct.c share with the Polya variate's (mech_polya.c):
 * the word stream, the uniform below t, a batch of rational atoms, the (2/e)^p atom and the
 * fallback counters.  Only those two files include it. */
#ifndef DPO_MECH_CT_INT_H
#define DPO_MECH_CT_INT_H

#include "mech_ct.h"

#include <stdint.h>

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
/* n <= 32 atoms F[i]/D[i]; bit i of the result = atom i.  n + 1 words. */
uint32_t dpo__ct_batch64(dpo__ws_t *ws, int n, const uint64_t *F, const uint64_t *D);
/* Bernoulli((2/e)^p) from the table, p >= 0: two words an atom of up to 64 powers */
int dpo__ct_t2e(dpo__ws_t *ws, uint64_t p, int *rc);

#endif
