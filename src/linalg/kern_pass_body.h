/* One build of the gradient passes (included by kern_pass.c once per ISA).  In: DPO__VW
 * (doubles per vector: 8, 4 or 2), DPO__SFX (name suffix), DPO__TGT (target attribute).
 * Defines dpo__dense_SFX, dpo__csr_SFX and their software-prefetch forms dpo__dense_pf_SFX,
 * dpo__csr_pf_SFX (dpo__pass_fn), and through kern_softmax_body.h dpo__softmax_SFX (AVX2 and
 * AVX-512 only); everything else is inlined. */
#define DPO__CAT_(a, b) a##_##b
#define DPO__CAT(a, b) DPO__CAT_(a, b)
#define F(name) DPO__CAT(name, DPO__SFX)
#define W DPO__VW

typedef double F(dpo__v) __attribute__((vector_size(8 * W)));
typedef long long F(dpo__vi) __attribute__((vector_size(8 * W)));
#define V F(dpo__v)
#define VI F(dpo__vi)
#define LDV(p) ({ V v_; memcpy(&v_, (p), sizeof v_); v_; })
#define STV(p, v) do { V w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
/* c - 0 is c for every c (0 + c is not for c = -0), so this folds to a broadcast */
#define SPLAT(c) ((c) - (V){0})
/* Lane select m ? a : b for a lane mask m (all ones or zeros) from a vector comparison. */
#define SEL(m, a, b) ((V)(((m) & (VI)(a)) | (~(m) & (VI)(b))))
/* Prefetch of p + k elements, the address as an integer: near the end of the rows it lies past
 * the array, which a prefetch may touch but a pointer may not point to (C). */
#define PFA(p, k, loc) \
  __builtin_prefetch((const void *)((uintptr_t)(p) + (uintptr_t)(k) * sizeof *(p)), 0, loc)
#if W > 2
typedef double F(dpo__h) __attribute__((vector_size(4 * W)));
#define H F(dpo__h)
#define LDH(p) ({ H v_; memcpy(&v_, (p), sizeof v_); v_; })
#define STH(p, v) do { H w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
#endif

/* exp(x) for x <= 0 (here x = -|m|): 0 below -708 (where exp(x) < 3.3e-308, so the logistic
 * pieces it feeds are exact or that small, as with libm past its underflow); x = k ln2 + r
 * with |r| <= ln2/2 (Cody-Waite, ln2 split so k ln2_hi is exact), exp(r) by its Taylor
 * polynomial to degree 13 (remainder < 4e-18 relative), times 2^k built in the exponent
 * bits.  A few ulp from libm's exp. */
DPO__TGT DPO__AI V F(dpo__exp)(V x) {
  const V lo = SPLAT(-708.0), shifter = SPLAT(0x1.8p52);
  VI under = x < lo;
  x = SEL(under, lo, x);
  V kd = x * 0x1.71547652b82fep0 + shifter; /* round(x / ln2) in the low bits */
  VI ki = (VI)kd - (VI)shifter;
  kd -= shifter;
  V r = x - kd * 0x1.62e42fefa3800p-1;
  r = r - kd * 0x1.ef35793c76730p-45;
  /* Estrin's scheme: a chain of 4 FMA levels, not 13 (the block's lanes are one chain) */
  V r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  V q0 = 1.0 + r, q1 = 0x1p-1 + r * (1.0 / 6), q2 = (1.0 / 24) + r * (1.0 / 120),
    q3 = (1.0 / 720) + r * (1.0 / 5040), q4 = (1.0 / 40320) + r * (1.0 / 362880),
    q5 = (1.0 / 3628800) + r * (1.0 / 39916800), q6 = (1.0 / 479001600) + r * (1.0 / 6227020800.0);
  V p = ((q0 + q1 * r2) + (q2 + q3 * r2) * r4) + ((q4 + q5 * r2) + q6 * r4) * r8;
  VI sc = (ki + 1023) << 52;
  return (V)(~under & (VI)(p * (V)sc));
}

/* log1p(e) for e in [0, 1]: log(1 + e) = 2 atanh(e / (2 + e)), or for e above sqrt(2) - 1,
 * ln 2 + 2 atanh((e - 1) / (e + 3)) (= ln 2 + log((1 + e) / 2)); so |s| <= 0.172 and the
 * series 2 s sum_k s^2k / (2k + 1) to k = 10 leaves < 3e-17 relative.  Never forms 1 + e, so
 * tiny e keep their digits. */
DPO__TGT DPO__AI V F(dpo__log1p)(V e) {
  VI big = e > 0x1.6a09e667f3bcdp-2;
  V num = SEL(big, e - 1.0, e), den = SEL(big, e + 3.0, e + 2.0);
  V sv = num / den, s2 = sv * sv;
  V z2 = s2 * s2, z4 = z2 * z2, z8 = z4 * z4; /* Estrin, as in dpo__exp */
  V p = ((1.0 + s2 * (1.0 / 3)) + ((1.0 / 5) + s2 * (1.0 / 7)) * z2) +
        (((1.0 / 9) + s2 * (1.0 / 11)) + ((1.0 / 13) + s2 * (1.0 / 15)) * z2) * z4 +
        (((1.0 / 17) + s2 * (1.0 / 19)) + z2 * (1.0 / 21)) * z8;
  return SEL(big, SPLAT(0x1.62e42fefa39efp-1), SPLAT(0.0)) + 2.0 * sv * p;
}

/* Loss pieces of the 8 lanes of a block: c_k = d phi / d t at t_k, phi_k masked by live.
 * Logistic, with m = y t and e = exp(-|m|) in [0, 1] (never overflows):
 *   phi = log1p(e) + max(-m, 0),  c = -y sigma(-m) = -y (m >= 0 ? e : 1) / (1 + e).
 * Inline vector code (it was a libmvec call of exp and of log1p per block; with them the
 * block's compute was a long chain with no loads, during which memory idled: from memory the
 * squared loss ran at 0.83 of the read loop, the logistic at 0.61).  Squared: c = t - y,
 * phi = (t - y)^2 / 2.  Returns the block's loss in a fixed order. */
DPO__TGT DPO__AI double F(dpo__lanes)(dpo_loss_t loss, const double *restrict t,
                                      const double *restrict y, const double *restrict live,
                                      double *restrict c) {
  double ph[8];
  for (int q = 0; q < 8; q += W) {
    V tv = LDV(t + q), yv = LDV(y + q), lv = LDV(live + q), zero = {0};
    if (loss == DPO_LOSS_LOGISTIC) {
      V m = yv * tv;
      V e = F(dpo__exp)(SEL(m < zero, m, -m));
      V num = SEL(m >= zero, e, SPLAT(1.0));
      STV(c + q, -yv * (num / (1.0 + e)));
      STV(ph + q, lv * (F(dpo__log1p)(e) + SEL(m < zero, -m, zero)));
    } else {
      V r = tv - yv;
      STV(c + q, lv * r);
      STV(ph + q, lv * (0.5 * r * r));
    }
  }
  return ((ph[0] + ph[1]) + (ph[2] + ph[3])) + ((ph[4] + ph[5]) + (ph[6] + ph[7]));
}

/* out[i] = the sum of acc[i]'s lanes, i < 8: a transposed tree, ((l0 + l1) + (l2 + l3)) +
 * ((l4 + l5) + ...) for every vector, 3 shuffle levels for the 8 instead of a fold each. */
DPO__TGT DPO__AI void F(dpo__hsum8)(const V *acc, double *out) {
#if W == 8
#define PAIR(p, q) (__builtin_shufflevector(p, q, 0, 8, 2, 10, 4, 12, 6, 14) + \
                    __builtin_shufflevector(p, q, 1, 9, 3, 11, 5, 13, 7, 15))
#define QUAD(p, q) (__builtin_shufflevector(p, q, 0, 1, 8, 9, 4, 5, 12, 13) + \
                    __builtin_shufflevector(p, q, 2, 3, 10, 11, 6, 7, 14, 15))
  V c0 = QUAD(PAIR(acc[0], acc[1]), PAIR(acc[2], acc[3]));
  V c1 = QUAD(PAIR(acc[4], acc[5]), PAIR(acc[6], acc[7]));
  /* c0 lanes: rows 0-3 over columns 0-3 of the vector, then rows 0-3 over columns 4-7 */
  STV(out, __builtin_shufflevector(c0, c1, 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(c0, c1, 4, 5, 6, 7, 12, 13, 14, 15));
#undef PAIR
#undef QUAD
#elif W == 4
  for (int q = 0; q < 8; q += 4) {
    V b01 = __builtin_shufflevector(acc[q], acc[q + 1], 0, 4, 2, 6) +
            __builtin_shufflevector(acc[q], acc[q + 1], 1, 5, 3, 7);
    V b23 = __builtin_shufflevector(acc[q + 2], acc[q + 3], 0, 4, 2, 6) +
            __builtin_shufflevector(acc[q + 2], acc[q + 3], 1, 5, 3, 7);
    STV(out + q, __builtin_shufflevector(b01, b23, 0, 1, 4, 5) +
                 __builtin_shufflevector(b01, b23, 2, 3, 6, 7));
  }
#else
  for (int q = 0; q < 8; q += 2)
    STV(out + q, __builtin_shufflevector(acc[q], acc[q + 1], 0, 2) +
                 __builtin_shufflevector(acc[q], acc[q + 1], 1, 3));
#endif
}

/* t_k = u_k'x for the 8 rows of a block, one row at a time: two accumulators over steps of
 * 2W columns and a W step give a vector per row; the 8 vectors are then summed across
 * their lanes all at once (dpo__hsum8; a fold per row was the hot spot in perf); the columns
 * past the last W step (a W/2 step and a scalar tail) are added after.  Row after row keeps the first touch one sequential stream: over
 * 32-column tiles of x held in registers for the 8 rows at once (one load of X per FMA, not
 * two) the pass ran 5-10% faster from L1 but at 0.26-0.67 of the read loop from memory
 * instead of 0.75, the hardware prefetcher losing the 8 interleaved streams; two rows
 * sharing the loads of x did the same.  With pfd > 0 every 64 bytes of a row come with a
 * prefetch pfd doubles ahead into L1 (prefetcht0): the first touch is where the block's
 * misses are, and a stream that runs ahead of it keeps memory busy while the block's lanes
 * and second touch compute, which the hardware prefetcher (it follows demand misses) does not
 * (an Intel Xeon with a 9.8 GB/s read loop: 0.76-0.81 of it without, 0.88-0.91 at 2-4 KB; into
 * L2 only, prefetcht1/t2: 0.84-0.86; non-temporal: 0.33-0.50). */
DPO__TGT DPO__AI void F(dpo__dots8)(int32_t d, const double *Xb, const double *x, double *t,
                                    const int pf_on, int64_t pfd) {
  V acc[8];
  double tail[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    const double *u = Xb + i * (int64_t)d;
    V a0 = {0}, a1 = {0};
    int32_t j = 0;
    for (; j + 2 * W <= d; j += 2 * W) {
      if (pf_on && (W == 8 || (j & 7) == 0)) {
        PFA(u + j, pfd, 3);
        if (W == 8) PFA(u + j + 8, pfd, 3);
      }
      a0 += LDV(u + j) * LDV(x + j);
      a1 += LDV(u + j + W) * LDV(x + j + W);
    }
    if (j + W <= d) {
      a0 += LDV(u + j) * LDV(x + j);
      j += W;
    }
    acc[i] = a0 + a1;
    double sum = 0.0;
#if W > 2
    if (j + W / 2 <= d) {
      H b = LDH(u + j) * LDH(x + j);
#if W == 8
      sum = (b[0] + b[1]) + (b[2] + b[3]);
#else
      sum = b[0] + b[1];
#endif
      j += W / 2;
    }
#endif
    for (; j < d; j++) sum += u[j] * x[j];
    tail[i] = sum;
  }
  double sums[8] __attribute__((aligned(64)));
  F(dpo__hsum8)(acc, sums);
  for (int q = 0; q < 8; q += W) STV(t + q, LDV(sums + q) + LDV(tail + q));
}

/* g += sum_k c_k u_k over the 8 rows, one tile of 4W columns of g in registers at a time.
 * With pfd > 0 each load of X comes with a prefetch pfd doubles ahead (locality 1): the
 * loads of this second touch hit L1, so without it memory would idle while the block is
 * computed on (the hardware prefetcher runs ahead of demand misses only).  Spread over the
 * loads: a burst of a block's prefetches at once ran slower. */
#define PFX(q) do { if (pf_on) PFA(q, pfd, 1); } while (0)
DPO__TGT DPO__AI void F(dpo__axpys8)(int32_t d, const double *Xb, const double *c, double *g,
                                     const int pf_on, int64_t pfd) {
  const int64_t ld = d;
  int32_t j = 0;
  for (; j + 4 * W <= d; j += 4 * W) {
    V g0 = LDV(g + j), g1 = LDV(g + j + W), g2 = LDV(g + j + 2 * W), g3 = LDV(g + j + 3 * W);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
      const double *u = Xb + k * ld + j;
      V w = SPLAT(c[k]);
#if W == 8
      PFX(u);
      PFX(u + 8);
      PFX(u + 16);
      PFX(u + 24);
#elif W == 4
      PFX(u);
      PFX(u + 8);
#else
      PFX(u);
#endif
      g0 += w * LDV(u);
      g1 += w * LDV(u + W);
      g2 += w * LDV(u + 2 * W);
      g3 += w * LDV(u + 3 * W);
    }
    STV(g + j, g0);
    STV(g + j + W, g1);
    STV(g + j + 2 * W, g2);
    STV(g + j + 3 * W, g3);
  }
  for (; j + W <= d; j += W) {
    V g0 = LDV(g + j);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
      if (W == 8 || (j & 7) == 0) PFX(Xb + k * ld + j);
      g0 += SPLAT(c[k]) * LDV(Xb + k * ld + j);
    }
    STV(g + j, g0);
  }
#if W > 2
  if (j + W / 2 <= d) {
    H g0 = LDH(g + j);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) g0 += ((H){0} + c[k]) * LDH(Xb + k * ld + j);
    STH(g + j, g0);
    j += W / 2;
  }
#endif
  for (; j < d; j++) {
    double sum = g[j];
    for (int k = 0; k < 8; k++) sum += c[k] * Xb[k * ld + j];
    g[j] = sum;
  }
}
#undef PFX

/* Dense pass over rows [r0, r1) (r0 a multiple of 8), with the software prefetch compiled
 * in or out (pf_on: a test in the inner loop cost 5% from cache). */
DPO__TGT DPO__AI void F(dpo__dense_body)(const dpo__pass_t *a, int64_t r0, int64_t r1,
                                         double *lsum, double *g, const int pf_on) {
  const dpo_shard_t *s = a->s;
  const int32_t d = s->d;
  double t[8] __attribute__((aligned(64))), c[8] __attribute__((aligned(64))), yb[8];
  int64_t ib[8];
  double L = *lsum;
  for (int64_t b0 = r0; b0 < r1; b0 += 8) {
    int nb = r1 - b0 < 8 ? (int)(r1 - b0) : 8;
    const double *Xb = dpo__blk_src(a, b0, nb);
    /* first touch: the block comes into L1 (no prefetch from the padded copy; literal
     * flags, so each call inlines without the test in its loop) */
    const int pf = pf_on && nb == 8 ? a->pf_touch : 0;
    const int64_t pfd = a->pf_bytes / (int64_t)sizeof(double);
    if (pf == 1)
      F(dpo__dots8)(d, Xb, a->x, t, 1, pfd);
    else
      F(dpo__dots8)(d, Xb, a->x, t, 0, 0);
    for (int k = 0; k < 8; k++) {
      yb[k] = k < nb ? s->y[b0 + k] : 0.0;
      ib[k] = b0 + k;
    }
    L += F(dpo__lanes)(a->loss, t, yb, dpo__live8[nb], c);
    if (a->C > 0) dpo__clip_lanes(a, ib, nb, c);
    for (int k = nb; k < 8; k++) c[k] = 0.0;
    /* second touch, from L1 */
    if (pf == 2)
      F(dpo__axpys8)(d, Xb, c, g, 1, pfd);
    else
      F(dpo__axpys8)(d, Xb, c, g, 0, 0);
  }
  *lsum = L;
}
DPO__TGT static void F(dpo__dense)(const dpo__pass_t *a, int64_t r0, int64_t r1, double *lsum,
                                   double *g) {
  F(dpo__dense_body)(a, r0, r1, lsum, g, 0);
}
DPO__TGT static void F(dpo__dense_pf)(const dpo__pass_t *a, int64_t r0, int64_t r1,
                                      double *lsum, double *g) {
  F(dpo__dense_body)(a, r0, r1, lsum, g, 1);
}

/* CSR pass over rows [r0, r1) of the row list (or of the shard), in superblocks of 32 rows:
 * the dots (two accumulators a row, rows independent so the core overlaps them), the loss
 * lanes of the four 8-row groups back to back, then the scatters g[col] += c v.  perf: the
 * time is in the gathers of x and the scatters into g (latency of L1 for a9a-like rows, of
 * L2/L3 for 1e5 columns), and the pass is as fast from memory as from cache.  A software
 * prefetch of x[col] and g[col] one to four blocks ahead ran 1.3-1.5x slower on both
 * (jobs/bench/csr, issue 16).  One 8-row group's lanes are a latency chain (exp, log1p, two
 * divisions) that the rows' short loops around it did not overlap: four independent chains
 * back to back took a9a-like rows from 33 to 32 ns a row, the wide ones from 55 to 51.
 * Rows with no loop whose trip count is their length (products in one flat loop, masked
 * 16-lane sums) ran faster from L3 but not from memory; AVX-512 masked gathers and scatters
 * of 8 entries ran 1.2-1.4x slower on an Intel Xeon.  With pf_on (a full pass: the rows are
 * one stream) each row prefetches two lines of values and one of column indices pf_bytes of
 * values ahead (the same entry for the indices): on that Xeon the a9a-like pass went from
 * 0.27-0.28 to 0.31-0.33 of its read loop, the wide one from 0.20 to 0.21-0.23. */
DPO__TGT DPO__AI void F(dpo__csr_body)(const dpo__pass_t *a, int64_t r0, int64_t r1,
                                       double *lsum, double *g, const int pf_on) {
  const dpo_shard_t *s = a->s;
  const int64_t *rp = s->rowptr;
  const int32_t *ci = s->colind;
  const double *val = s->val, *x = a->x;
  double t[DPO__CSR_SB] __attribute__((aligned(64))), c[DPO__CSR_SB] __attribute__((aligned(64)));
  const int64_t ahead = a->pf_bytes / (int64_t)sizeof(double); /* entries, for the prefetch */
  double yb[DPO__CSR_SB];
  int64_t ib[DPO__CSR_SB];
  double L = *lsum;
  for (int64_t b0 = r0; b0 < r1; b0 += DPO__CSR_SB) {
    int nb = r1 - b0 < DPO__CSR_SB ? (int)(r1 - b0) : DPO__CSR_SB;
    for (int k = 0; k < DPO__CSR_SB; k++) {
      if (k >= nb) { /* padding lanes: masked out of the sum, c = 0 */
        t[k] = yb[k] = 0.0;
        ib[k] = -1;
        continue;
      }
      int64_t i = a->rows ? a->rows[b0 + k] : b0 + k;
      int64_t p = rp[i], e = rp[i + 1];
      if (pf_on) {
        PFA(val + p, ahead, 3);
        PFA(val + p + 8, ahead, 3);
        PFA(ci + p, ahead, 3);
      }
      double s0 = 0.0, s1 = 0.0;
      for (; p + 2 <= e; p += 2) {
        s0 += val[p] * x[ci[p]];
        s1 += val[p + 1] * x[ci[p + 1]];
      }
      if (p < e) s0 += val[p] * x[ci[p]];
      ib[k] = i;
      t[k] = s0 + s1;
      yb[k] = s->y[i];
    }
    /* the loss sum in the order of the 8-row blocks, as before the superblocks */
    for (int g0 = 0; g0 < nb; g0 += 8)
      L += F(dpo__lanes)(a->loss, t + g0, yb + g0, dpo__live8[nb - g0 < 8 ? nb - g0 : 8], c + g0);
    if (a->C > 0) dpo__clip_lanes(a, ib, nb, c);
    for (int k = 0; k < nb; k++) {
      double ck = c[k];
      if (ck == 0.0) continue;
      int64_t i = ib[k];
      for (int64_t p = rp[i]; p < rp[i + 1]; p++) g[ci[p]] += ck * val[p];
    }
  }
  *lsum = L;
}
DPO__TGT static void F(dpo__csr)(const dpo__pass_t *a, int64_t r0, int64_t r1, double *lsum,
                                 double *g) {
  F(dpo__csr_body)(a, r0, r1, lsum, g, 0);
}
DPO__TGT static void F(dpo__csr_pf)(const dpo__pass_t *a, int64_t r0, int64_t r1, double *lsum,
                                    double *g) {
  F(dpo__csr_body)(a, r0, r1, lsum, g, 1);
}

#if W > 2 /* the baseline build (16 xmm registers) spills the tiles: softmax.c uses dgemm */
#include "kern_softmax_body.h"
#endif

#undef V
#undef VI
#undef H
#undef LDV
#undef STV
#undef LDH
#undef STH
#undef SPLAT
#undef SEL
#undef PFA
#undef W
#undef F
#undef DPO__VW
#undef DPO__SFX
#undef DPO__TGT
