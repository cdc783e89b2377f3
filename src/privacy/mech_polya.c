/* The Polya (negative binomial) variate of fixed work, from mech_ct.c's atoms (mech_ct_int.h).
 *
 * The compound-Poisson sampler of mechanism.c (regions: dyadic blocks j < J and the tail
 * [K0, oo)), every coin of fixed work, and the number of coins padded to a public bound.
 * A coin of region j succeeds with probability lambda_j = nu(region) and then carries a mark
 * k ~ nu|region; its parts are all drawn, whatever their values:
 *   block: k = 2^j + uniform(2^j); atoms 1/n, 2^j/k; Bernoulli(exp(-k/t)) (k < 2^J < 4t);
 *   tail:  m = the zeros of a word before its first 1 (Geometric(1/2)), k = K0 + m t + u, u
 *          uniform(t); atoms 1/n, t/k; (2/e)^(m+1) from the table; Bernoulli(exp(-(K0 - t +
 *          u)/t)): the product is mechanism.c's ratio (1/n)(t/k) 2 e^{-K0/t} (2/e)^m e^{-u/t}.
 * Each coin also draws the atom 1/i of the 1/N! acceptance (i = the success it would be), so a
 * trial is rejected as soon as one of them fails (the accepted trials keep their law).  The
 * coins of a variate are counted and, at the end, dummy coins are drawn up to the bounds
 * B_block, B_tail (for a share's X and Y together: dpo__ct_polya2, about 1.5x fewer coins
 * than two paddings): Chernoff bounds on the coin counts with P(count > B) < 2^-66 each (for
 * lambda_j above its upper bound, which only adds coins).  Beyond a bound the variate is still
 * exact but takes longer (counted: polya_over). */
#include "mech_ct_int.h"

#include "dpopt/status.h"

#include <math.h>

/* one coin; i = the index of the success it would be (its acceptance atom is 1/i) */
static int dpo__coin(dpo__ws_t *ws, uint64_t t, uint64_t n, int j, int J, uint64_t i,
                     uint64_t *k, int *ok, int *acc) {
  int rc = DPO_OK, e, r = 1;
  uint64_t F[3] = {1, 0, 1}, D[3] = {n, 0, i};
  if (j < J) {
    const uint64_t lo = (uint64_t)1 << j;
    *k = lo + dpo__below(ws, lo);
    F[1] = lo;
    D[1] = *k;
    rc = dpo__ct_bexp_small(ws, *k, t, &e);
  } else {
    const uint64_t K0 = (uint64_t)1 << J;
    uint64_t w = dpo__w(ws), m = (uint64_t)__builtin_ctzll(w | ((uint64_t)1 << 63));
    if (!w) { /* 64 zeros (probability 2^-64): count on */
      dpo__ct_st.fallbacks++;
      for (m = 64; !(w = dpo__w(ws)) && m <= 1000; m += 64) {}
      m += (uint64_t)__builtin_ctzll(w | ((uint64_t)1 << 63));
    }
    if (m > 1000) return dpo_err(DPO_EUNSUP, "Polya share: tail overflow (probability 2^-1000)");
    const uint64_t u = dpo__below(ws, t);
    *k = K0 + m * t + u; /* < 2^51 + 1001 * 2^50 < 2^61 */
    F[1] = t;
    D[1] = *k;
    r = dpo__ct_t2e(ws, m + 1, &rc); /* (2/e)^(m+1) */
    if (!rc) rc = dpo__ct_bexp_small(ws, K0 - t + u, t, &e);
  }
  const uint32_t A = dpo__ct_batch64(ws, 3, F, D);
  *ok = (int)(A & (A >> 1) & 1u) & r & e;
  *acc = (int)(A >> 2 & 1u);
  return rc;
}

/* smallest c with P(coins of the regions > c) <= 2^-66 (Chernoff, z over a grid): a region's
 * coins have generating function f / (1 - g), f = (1 - l) z e^{l z} (accepted trial),
 * g = (l z - 1)(e^{l z} - 1) + l z (a trial rejected at its i-th success, i >= 2) */
static int dpo__pbound(const double *lam, int m) {
  double best = 1e300;
  for (double z = 1.005; z < 64; z *= 1.01) {
    double sum = 0;
    int ok = 1;
    for (int j = 0; j < m && ok; j++) {
      const double x = lam[j] * z, g = (x - 1) * expm1(x) + x, f = (1 - lam[j]) * z * exp(x);
      if (!(g < 1)) ok = 0;
      else sum += log(f / (1 - g));
    }
    if (ok) best = fmin(best, (sum + 66 * M_LN2) / log(z));
  }
  return (int)ceil(best * 1.01) + 2;
}

static _Thread_local struct {
  uint64_t t, n;
  int b[4]; /* block, tail coins: one variate, two variates */
} dpo__pb;

static void dpo__pbounds(uint64_t t, uint64_t n) {
  if (dpo__pb.t == t && dpo__pb.n == n) return;
  int J = 0;
  while (((uint64_t)1 << J) < 2 * t) J++;
  double lam[128];
  const double r = 1.0 / (double)n, td = (double)t, K0 = ldexp(1.0, J);
  /* nu(block) <= r min(1, ln 2 + 2^-(j+1)) e^{-2^j/t}: sum_{a <= k < 2a} 1/k = H_2a - H_a +
   * 1/(2a) < ln 2 + 1/(2a) */
  for (int j = 0; j < J; j++)
    lam[j] = lam[J + j] =
        r * fmin(1.0, ldexp(1.0, -j - 1) + M_LN2) * exp(-ldexp(1.0, j) / td) * (1 + 1e-9);
  /* nu(tail) <= r q^K0 / (K0 (1 - q)), 1 - q >= (1/t)(1 - 1/(2t)) */
  const double lt = fmin(r, r * exp(-K0 / td) * td / K0 / (1 - 0.5 / td) * (1 + 1e-9));
  dpo__pb.b[0] = dpo__pbound(lam, J);
  dpo__pb.b[1] = dpo__pbound(&lt, 1);
  dpo__pb.b[2] = dpo__pbound(lam, 2 * J); /* the coins of two variates, counted together */
  dpo__pb.b[3] = dpo__pbound((double[]){lt, lt}, 2);
  dpo__pb.t = t;
  dpo__pb.n = n;
}

int dpo__ct_polya_bounds(uint64_t t, uint64_t n, int *bB, int *bT) {
  dpo__pbounds(t, n);
  *bB = dpo__pb.b[0];
  *bT = dpo__pb.b[1];
  return DPO_OK;
}

int dpo__ct_polya2_bounds(uint64_t t, uint64_t n, int *bB, int *bT) {
  dpo__pbounds(t, n);
  *bB = dpo__pb.b[2];
  *bT = dpo__pb.b[3];
  return DPO_OK;
}

/* one variate, its coins counted in *cB (blocks), *cT (tail); no padding */
static int dpo__polya_draw(dpo__ws_t *ws, uint64_t t, uint64_t n, int J, int *cB, int *cT,
                           int64_t *x) {
  int rc, ok, acc;
  u128 sum = 0;
  for (int j = 0; j <= J; j++) {
    for (;;) { /* trials: coins until a failure; kept if every acceptance atom passed */
      u128 marks = 0;
      uint64_t N = 0, k;
      int keep = 1;
      for (;;) {
        if ((rc = dpo__coin(ws, t, n, j, J, N + 1, &k, &ok, &acc))) return rc;
        if (j < J) ++*cB;
        else ++*cT;
        if (!ok) break;
        N++;
        marks += k;
        keep &= acc;
        if (!keep) break;
        if (N > 1000)
          return dpo_err(DPO_EUNSUP, "Polya share: too many points (probability below 2^-1000)");
      }
      if (!keep) continue; /* rejected: one of the N atoms 1/i (1/N! in all) failed */
      sum += marks;
      break;
    }
  }
  if (sum >= ((u128)1 << 62)) return dpo_err(DPO_EUNSUP, "Polya share: variate above 2^62");
  *x = (int64_t)sum;
  return DPO_OK;
}

/* dummy coins up to the public bounds */
static int dpo__polya_pad(dpo__ws_t *ws, uint64_t t, uint64_t n, int J, int cB, int cT, int bB,
                          int bT) {
  int rc = DPO_OK, ok, acc;
  if (cB > bB || cT > bT) dpo__ct_st.polya_over++;
  dpo__ct_st.polya_pad += (uint64_t)(cB < bB ? bB - cB : 0) + (uint64_t)(cT < bT ? bT - cT : 0);
  for (uint64_t k; cB < bB && !rc; cB++) rc = dpo__coin(ws, t, n, J - 1, J, 2, &k, &ok, &acc);
  for (uint64_t k; cT < bT && !rc; cT++) rc = dpo__coin(ws, t, n, J, J, 2, &k, &ok, &acc);
  return rc;
}

int dpo__ct_polya(dpo__ws_t *ws, uint64_t t, uint64_t n, int64_t *x) {
  dpo__ct_tabs();
  int J = 0, bB, bT, cB = 0, cT = 0;
  while (((uint64_t)1 << J) < 2 * t) J++; /* K0 = 2^J >= 2t, J <= 51 */
  dpo__ct_polya_bounds(t, n, &bB, &bT);
  int64_t v;
  int rc = dpo__polya_draw(ws, t, n, J, &cB, &cT, &v);
  if (!rc) rc = dpo__polya_pad(ws, t, n, J, cB, cT, bB, bT);
  if (!rc) *x = v;
  return rc;
}

int dpo__ct_polya2(dpo__ws_t *ws, uint64_t t, uint64_t n, int64_t *x, int64_t *y) {
  dpo__ct_tabs();
  int J = 0, bB, bT, cB = 0, cT = 0;
  while (((uint64_t)1 << J) < 2 * t) J++;
  dpo__ct_polya2_bounds(t, n, &bB, &bT);
  int64_t u, v;
  int rc = dpo__polya_draw(ws, t, n, J, &cB, &cT, &u);
  if (!rc) rc = dpo__polya_draw(ws, t, n, J, &cB, &cT, &v);
  if (!rc) rc = dpo__polya_pad(ws, t, n, J, cB, cT, bB, bT);
  if (!rc) {
    *x = u;
    *y = v;
  }
  return rc;
}
