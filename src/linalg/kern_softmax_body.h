/* One build of the softmax (multinomial logistic) pass over consecutive dense rows, included
 * by kern_pass_body.h once per ISA (its V, W, F, LDV, STV, SPLAT, SEL, dpo__exp, dpo__log1p
 * and dpo__hsum8).  Defines dpo__softmax_SFX (dpo__softmax_fn, contract in kern_pass.h).
 *
 * A block of DPO__SM_BLK rows is copied into a zero-padded scratch (row stride dp, a multiple
 * of 8) that stays in L1 with W and the gradient accumulator, then:
 *   T = X_blk W'      register tiles of 4 rows x 4 classes (8 loads per 16 FMAs),
 *   R = s .* (P - Y)  the row-wise log-sum-exp and softmax as vector code, rows in lanes,
 *                     with the per-row clip factor s_i = min(1, C / (||r_i|| ||u_i||)),
 *   G += R' X_blk     register tiles of 4 classes x 4 column vectors.
 * The same arithmetic per row as the naive loop (softmax.c) up to rounding: exp and log here
 * are the inline vector ones (a few ulp from libm), sums in another order.  OpenBLAS's dgemm
 * for these shapes (256 x 100 x 10 per oracle view) spent most of its time packing X for
 * R' X, and the scalar libm exp per class was a third of the rest.  From cache (a 256-row
 * view, K = 10, d = 100, issue 16): 190 ns a row with dgemm, 117 here with AVX-512 (34
 * GFLOP/s of the 4 K d flops a row: ~80% of a 2.6 GHz Zen 4 core's one 512-bit FMA a
 * cycle), 160 with AVX2.  Block sizes 8, 16 and 32 ran the same; 16 keeps the block, W and
 * G in a 32 KB L1 at d = 100, K = 10. */

/* acc[r c] += X[r] . W[c] over the padded columns, for 4 rows and CK classes; sums into
 * T[c B + r]. */
DPO__TGT DPO__AI void F(dpo__sm_fwd)(const double *Xr, int32_t dp, const double *Wk, const int CK,
                                    double *T) {
  V acc[16];
  double s[16];
#pragma GCC unroll 16
  for (int q = 0; q < 16; q++) acc[q] = SPLAT(0.0);
  for (int32_t j = 0; j < dp; j += W) {
    V xv[4], wv[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) xv[r] = LDV(Xr + r * (int64_t)dp + j);
#pragma GCC unroll 4
    for (int c = 0; c < CK; c++) wv[c] = LDV(Wk + c * (int64_t)dp + j);
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
      for (int c = 0; c < CK; c++) acc[r * CK + c] += xv[r] * wv[c];
  }
  F(dpo__hsum8)(acc, s);
  if (CK > 2) F(dpo__hsum8)(acc + 8, s + 8);
#pragma GCC unroll 4
  for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
    for (int c = 0; c < CK; c++) T[c * DPO__SM_BLK + r] = s[r * CK + c];
}

/* G[c][j..] += sum_r R[c B + r] X[r][j..] for CK classes and CJ column vectors at j. */
DPO__TGT DPO__AI void F(dpo__sm_bwd)(const double *Xp, int32_t dp, int nr, const double *R,
                                    double *G, int32_t j, const int CK, const int CJ) {
  V acc[4][4];
#pragma GCC unroll 4
  for (int c = 0; c < CK; c++)
#pragma GCC unroll 4
    for (int q = 0; q < CJ; q++) acc[c][q] = LDV(G + c * (int64_t)dp + j + q * W);
  for (int r = 0; r < nr; r++) {
    V xv[4];
#pragma GCC unroll 4
    for (int q = 0; q < CJ; q++) xv[q] = LDV(Xp + r * (int64_t)dp + j + q * W);
#pragma GCC unroll 4
    for (int c = 0; c < CK; c++) {
      V w = SPLAT(R[c * DPO__SM_BLK + r]);
#pragma GCC unroll 4
      for (int q = 0; q < CJ; q++) acc[c][q] += w * xv[q];
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < CK; c++)
#pragma GCC unroll 4
    for (int q = 0; q < CJ; q++) STV(G + c * (int64_t)dp + j + q * W, acc[c][q]);
}

/* The same for all dp columns: tiles of 4 column vectors, then single ones. */
DPO__TGT DPO__AI void F(dpo__sm_bwd_cols)(const double *Xp, int32_t dp, int nr, const double *R,
                                         double *G, const int CK) {
  int32_t j = 0;
  for (; j + 4 * W <= dp; j += 4 * W) F(dpo__sm_bwd)(Xp, dp, nr, R, G, j, CK, 4);
  for (; j < dp; j += W) F(dpo__sm_bwd)(Xp, dp, nr, R, G, j, CK, 1);
}

/* log(z) for z in [1, 2^1023): z = 2^E f with f in [1, 2), log z = E ln 2 + log1p(f - 1)
 * (f - 1 exact, in [0, 1): dpo__log1p's range). */
DPO__TGT DPO__AI V F(dpo__log_ge1)(V z) {
  VI bits = (VI)z;
  VI E = (bits >> 52) - 1023;
  V f1 = (V)((bits & 0x000fffffffffffffLL) | 0x3ff0000000000000LL) - 1.0;
  V Ed = (V)(E + (VI)SPLAT(0x1p52)) - 0x1p52; /* 0 <= E < 2^52: exact */
  return Ed * 0x1.62e42fefa39efp-1 + F(dpo__log1p)(f1);
}

DPO__TGT static double F(dpo__softmax)(const dpo__softmax_t *a) {
  enum { B = DPO__SM_BLK };
  const int32_t K = a->K, d = a->d, dp = a->dp;
  const int clip = a->C > 0, l1 = a->norm == DPO_CLIP_L1;
  double *Xp = a->Xp, *T = a->T, *G = a->Gp;
  double yb[B] __attribute__((aligned(64))), lv[B] __attribute__((aligned(64)));
  int64_t ib[B]; /* the block's rows in X (a row list's or consecutive) */
  double rn[B] __attribute__((aligned(64)));
  double L = 0.0;
  for (int64_t b0 = 0; b0 < a->n; b0 += B) {
    const int nb = a->n - b0 < B ? (int)(a->n - b0) : B;
    /* the block into the padded scratch (padding rows and columns zero) */
    for (int r = 0; r < B; r++) {
      double *dst = Xp + r * (int64_t)dp;
      const int64_t i = ib[r] = a->rows ? (r < nb ? a->rows[b0 + r] : 0) : b0 + r;
      if (r < nb) { /* inline: a memcpy call a row took 10% of the pass */
        const double *src = a->X + i * (int64_t)d;
        int32_t j = 0;
        for (; j + W <= d; j += W) STV(dst + j, LDV(src + j));
        for (; j < d; j++) dst[j] = src[j];
        for (; j < dp; j++) dst[j] = 0.0;
        /* the same row of the next block towards L2 while this block computes: the block's
         * arithmetic issues no misses, so the copy of each block waited on memory (from
         * memory the pass ran at 23 GFLOP/s, from cache at 34; with this 29.5, jobs/bench/
         * gradient; 1, 2 or 4 blocks ahead ran the same, into L1 no faster than without).
         * Addresses as integers: past the view's last row is past its array (a prefetch of
         * any address is harmless, a pointer beyond the array is not defined C). */
        uintptr_t nxt = !a->rows ? (uintptr_t)src + (uintptr_t)B * (uintptr_t)d * sizeof(double)
                        : b0 + B + r < a->n ? (uintptr_t)(a->X + a->rows[b0 + B + r] * (int64_t)d)
                                            : (uintptr_t)src;
        for (int32_t q = 0; q < d; q += 8)
          __builtin_prefetch((const void *)(nxt + (uintptr_t)q * sizeof(double)), 0, 1);
      } else if (b0 + B > a->n) {
        memset(dst, 0, (size_t)dp * sizeof(double));
      }
      yb[r] = r < nb ? a->y[i] : 0.0;
      lv[r] = r < nb;
    }
    /* T = X_blk W' (class-major: T[k B + r]) over the 4-row tiles that hold live rows; the
     * rest of T is 0, what the zero padding rows give (a short block, e.g. a minibatch's
     * rows in one chunk, computed all 16) */
    const int nb4 = (nb + 3) / 4 * 4;
    if (nb4 < B)
      for (int32_t k = 0; k < K; k++)
        memset(T + k * B + nb4, 0, (size_t)(B - nb4) * sizeof(double));
    for (int r0 = 0; r0 < nb4; r0 += 4) {
      const double *Xr = Xp + r0 * (int64_t)dp;
      int32_t k = 0;
      for (; k + 4 <= K; k += 4) F(dpo__sm_fwd)(Xr, dp, a->Wp + k * (int64_t)dp, 4, T + k * B + r0);
      for (; k + 2 <= K; k += 2) F(dpo__sm_fwd)(Xr, dp, a->Wp + k * (int64_t)dp, 2, T + k * B + r0);
      for (; k < K; k++) F(dpo__sm_fwd)(Xr, dp, a->Wp + k * (int64_t)dp, 1, T + k * B + r0);
    }
    /* rows in lanes: loss log sum_k exp(t_k - m) + m - t_y, T := P - e_y */
    double lb[B];
    for (int g = 0; g < B; g += W) {
      V m = LDV(T + g), yv = LDV(yb + g), zero = {0}, Z = zero, ty = zero, ss = zero;
      for (int32_t k = 1; k < K; k++) {
        V t = LDV(T + k * B + g);
        m = SEL(t > m, t, m);
      }
      for (int32_t k = 0; k < K; k++) {
        V t = LDV(T + k * B + g);
        ty += SEL(yv == SPLAT((double)k), t, zero);
        V e = F(dpo__exp)(t - m);
        STV(T + k * B + g, e);
        Z += e;
      }
      V iZ = 1.0 / Z; /* one division for the K classes */
      for (int32_t k = 0; k < K; k++) {
        V r = LDV(T + k * B + g) * iZ - SEL(yv == SPLAT((double)k), SPLAT(1.0), zero);
        STV(T + k * B + g, r);
        ss += l1 ? SEL(r < zero, -r, r) : r * r;
      }
      STV(lb + g, LDV(lv + g) * (F(dpo__log_ge1)(Z) + (m - ty)));
      STV(rn + g, ss);
    }
    for (int r = 0; r < B; r += 2) L += lb[r] + lb[r + 1];
    /* per-row clip factors s_i = min(1, C / (||r_i|| ||u_i||)); padding rows 0 */
    for (int r = 0; r < B; r++) {
      double sc = lv[r];
      if (clip && r < nb) {
        double un = a->rownorm ? a->rownorm[ib[r]] : 0.0;
        if (!a->rownorm) {
          const double *u = Xp + r * (int64_t)dp;
          for (int32_t j = 0; j < d; j++) un += l1 ? fabs(u[j]) : u[j] * u[j];
          if (!l1) un = sqrt(un);
        }
        double gn = (l1 ? rn[r] : sqrt(rn[r])) * un;
        if (gn > a->C) sc = a->C / gn;
      }
      if (sc != 1.0)
        for (int32_t k = 0; k < K; k++) T[k * B + r] *= sc;
    }
    /* G += R' X_blk */
    int32_t k = 0;
    for (; k + 4 <= K; k += 4) F(dpo__sm_bwd_cols)(Xp, dp, nb, T + k * B, G + k * (int64_t)dp, 4);
    for (; k + 2 <= K; k += 2) F(dpo__sm_bwd_cols)(Xp, dp, nb, T + k * B, G + k * (int64_t)dp, 2);
    for (; k < K; k++) F(dpo__sm_bwd_cols)(Xp, dp, nb, T + k * B, G + k * (int64_t)dp, 1);
  }
  return L;
}
