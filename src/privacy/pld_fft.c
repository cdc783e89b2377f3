/* Linear convolution and powers of real sequences by FFT, for the PLD accountant (pld.c).
 *
 * Each real sequence of (padded) length N = 2M is transformed by one complex FFT of length M
 * (even samples as real parts, odd as imaginary parts, then the split below), the spectra are
 * multiplied (or raised to a power), and one complex inverse FFT of length M gives the real
 * result: half the work of transforming the real input as complex numbers of length N.
 * The complex data are held split (real parts in one array, imaginary parts in another), so a
 * stage's butterflies are the same operations on consecutive elements: loops the compiler
 * runs in vectors (SSE2, the baseline), each lane doing what the scalar code did.  Both
 * transforms are decimation in time; the bit-reversal permutation they need on input is not a
 * pass of its own: the loads (the real input into the forward, the merged spectrum into the
 * inverse) write each value straight to its bit-reversed place.  So every value is the one the
 * interleaved radix-2 transform with a permutation pass gave (the same operations in the same
 * order, no contraction into fused multiply-adds in the baseline build).
 * The twiddles e^{-2 pi i k / N} are computed directly (cos, sin: error O(u) each, no
 * recurrence) for the largest N met so far, into one process-wide table by level (below);
 * dpopt's processes are single-threaded.
 *
 * Error: the result's l2 error is bounded as for the complex transform of length N (pld.c's
 * slack, c u log2(N) (||a||_2 + ||b||_2) sqrt(N)): the length-M transforms have one stage
 * fewer, and the split and merge add at most three roundings per coefficient (one twiddle
 * product, one sum, one halving), which the stage left over covers.
 */
#include "core/clones.h"
#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The twiddles e^{-2 pi i k / len}, k < len / 2, for each len = 2, 4, .., tw_n (the largest
 * transform's real length so far), split: lr, li + len / 2 - 1 hold them, a stage's in order
 * (the real split and merge of m points read the level len = 2m).  The top level is computed
 * (cos, sin of each angle); every lower one copies every (tw_n / len)-th of its entries: the
 * angle (-2 pi r k) / (r len) rounds as (-2 pi k) / len (scaling by 2^j is exact), so the copies
 * are the values sincos would give, and a level's values do not depend on tw_n. */
static int64_t dpo__tw_n;
static double *dpo__lr, *dpo__li;
/* rev[j]: j's bits reversed over log2(tw_n / 2) bits; for a transform of length m the
 * reversal over log2(m) bits is rev[j] >> log2(tw_n / (2 m)) */
static int32_t *dpo__rev;

static int dpo__tw_need(int64_t n) {
  if (n <= dpo__tw_n) return DPO_OK;
  double *lr = malloc(sizeof(double) * (size_t)n), *li = malloc(sizeof(double) * (size_t)n);
  int32_t *rev = malloc(sizeof(int32_t) * (size_t)(n / 2));
  if (!lr || !li || !rev) {
    free(lr), free(li), free(rev);
    return dpo_err(DPO_ENOMEM, "pld: out of memory (twiddles of %lld)", (long long)n);
  }
  /* the table grows as a search moves to finer grids (16x, 4x, the ledger's): the levels up
   * to the old top o are the old table's, and every r-th entry of the new top (r = n / o) is
   * the old top's */
  const int64_t o = dpo__tw_n, r = o > 0 ? n / o : 0;
  if (o > 0) {
    memcpy(lr, dpo__lr, sizeof(double) * (size_t)(o - 1));
    memcpy(li, dpo__li, sizeof(double) * (size_t)(o - 1));
  }
  double *tr = lr + n / 2 - 1, *ti = li + n / 2 - 1;
  const double *orr = o > 0 ? dpo__lr + o / 2 - 1 : NULL, *oi = o > 0 ? dpo__li + o / 2 - 1 : NULL;
  for (int64_t k = 0; k < n / 2; k++) {
    if (r && (k & (r - 1)) == 0) {
      tr[k] = orr[k / r], ti[k] = oi[k / r];
      continue;
    }
    double ang = -2.0 * M_PI * (double)k / (double)n;
    tr[k] = cos(ang);
    ti[k] = sin(ang);
  }
  for (int64_t len = o > 0 ? 2 * o : 2; len < n; len <<= 1)
    for (int64_t k = 0, st = n / len; k < len / 2; k++) {
      lr[len / 2 - 1 + k] = tr[k * st];
      li[len / 2 - 1 + k] = ti[k * st];
    }
  int lgm = 0;
  while (((int64_t)1 << lgm) < n / 2) lgm++;
  rev[0] = 0;
  for (int64_t j = 1; j < n / 2; j++)
    rev[j] = (int32_t)((rev[j >> 1] >> 1) | ((j & 1) << (lgm - 1)));
  free(dpo__lr), free(dpo__li), free(dpo__rev);
  dpo__lr = lr, dpo__li = li, dpo__rev = rev;
  dpo__tw_n = n;
  return DPO_OK;
}

/* the shift that turns rev[j] into j's reversal over log2(m) bits */
static int dpo__rev_shift(int64_t m) {
  int s = 0;
  while ((m << s) < dpo__tw_n / 2) s++;
  return s;
}

/* The butterfly and powering loops below are built for AVX2 beside the baseline, neither with
 * FMA (DPO_CLONES_EXACT, core/clones.h): AVX2 runs the same lanes 4 wide, and every build's
 * values are the baseline's, bit for bit, on every machine. */

#define DPO__FFT_BLOCK 4096 /* complex numbers: 64 KiB split */

/* h butterflies (u_k, v_k) -> (u_k + w_k v_k, u_k - w_k v_k), w conjugated when inv; the
 * product as the interleaved code formed it (for inv, v0 wr - v1 (-wi) is v0 wr + v1 wi, and
 * v0 (-wi) + v1 wr is v1 wr - v0 wi, exactly) */
static inline void dpo__bf(double *restrict ur, double *restrict ui, double *restrict vr,
                           double *restrict vi, const double *restrict wr,
                           const double *restrict wi, int64_t h, int inv) {
  if (!inv) {
#pragma omp simd
    for (int64_t k = 0; k < h; k++) {
      const double xr = vr[k] * wr[k] - vi[k] * wi[k], xi = vr[k] * wi[k] + vi[k] * wr[k];
      vr[k] = ur[k] - xr, vi[k] = ui[k] - xi;
      ur[k] += xr, ui[k] += xi;
    }
  } else {
#pragma omp simd
    for (int64_t k = 0; k < h; k++) {
      const double xr = vr[k] * wr[k] + vi[k] * wi[k], xi = vi[k] * wr[k] - vr[k] * wi[k];
      vr[k] = ur[k] - xr, vi[k] = ui[k] - xi;
      ur[k] += xr, ui[k] += xi;
    }
  }
}

/* one radix-2 stage of span len over m points; len 2 (w = 1) without the products, as before */
DPO_CLONES_EXACT static void dpo__stage(double *re, double *im, int64_t m, int64_t len, int inv) {
  const int64_t half = len >> 1;
  if (half == 1) {
    for (int64_t s = 0; s < m; s += 2) {
      const double vr = re[s + 1], vi = im[s + 1];
      re[s + 1] = re[s] - vr, im[s + 1] = im[s] - vi;
      re[s] += vr, im[s] += vi;
    }
    return;
  }
  const double *wr = dpo__lr + half - 1, *wi = dpo__li + half - 1;
  for (int64_t s = 0; s < m; s += len)
    dpo__bf(re + s, im + s, re + s + half, im + s + half, wr, wi, half, inv);
}

/* the stages of span len and 2 len in one pass (each group of four quarters read and written
 * once while in cache): the same butterflies, with the same twiddles, as dpo__stage twice */
/* one butterfly: (u, v) -> (u + w v, u - w v), w conjugated when inv (dpo__bf's operations) */
static inline void dpo__bf1(double *ur, double *ui, double *vr, double *vi, double wr, double wi,
                            int inv) {
  const double xr = inv ? *vr * wr + *vi * wi : *vr * wr - *vi * wi;
  const double xi = inv ? *vi * wr - *vr * wi : *vr * wi + *vi * wr;
  *vr = *ur - xr, *vi = *ui - xi;
  *ur += xr, *ui += xi;
}

/* a butterfly of span 2 (w = 1, no products, as dpo__stage) */
static inline void dpo__bf_1(double *r, double *i) {
  const double vr = r[1], vi = i[1];
  r[1] = r[0] - vr, i[1] = i[0] - vi;
  r[0] += vr, i[0] += vi;
}

/* the stages of span 2, 4 and 8 in one pass (dpo__stage at 2, then dpo__stage2 at 4: the
 * same butterflies, twiddles and products): twelve butterflies per group of eight points, the
 * groups in vector lanes (a call per two butterflies cost more than the butterflies) */
DPO_CLONES_EXACT static void dpo__stage3_8(double *restrict re, double *restrict im, int64_t m,
                                          int inv) {
  const double *w1r = dpo__lr + 1, *w1i = dpo__li + 1, *w2r = dpo__lr + 3, *w2i = dpo__li + 3;
  const double a0 = w1r[0], a1 = w1r[1], b0 = w1i[0], b1 = w1i[1];
  const double c0 = w2r[0], c1 = w2r[1], c2 = w2r[2], c3 = w2r[3];
  const double d0 = w2i[0], d1 = w2i[1], d2 = w2i[2], d3 = w2i[3];
#pragma omp simd
  for (int64_t g = 0; g < m / 8; g++) {
    double *r = re + 8 * g, *i = im + 8 * g;
    dpo__bf_1(r, i), dpo__bf_1(r + 2, i + 2), dpo__bf_1(r + 4, i + 4), dpo__bf_1(r + 6, i + 6);
    dpo__bf1(r, i, r + 2, i + 2, a0, b0, inv), dpo__bf1(r + 1, i + 1, r + 3, i + 3, a1, b1, inv);
    dpo__bf1(r + 4, i + 4, r + 6, i + 6, a0, b0, inv);
    dpo__bf1(r + 5, i + 5, r + 7, i + 7, a1, b1, inv);
    dpo__bf1(r, i, r + 4, i + 4, c0, d0, inv), dpo__bf1(r + 1, i + 1, r + 5, i + 5, c1, d1, inv);
    dpo__bf1(r + 2, i + 2, r + 6, i + 6, c2, d2, inv);
    dpo__bf1(r + 3, i + 3, r + 7, i + 7, c3, d3, inv);
  }
}

DPO_CLONES_EXACT static void dpo__stage2(double *re, double *im, int64_t m, int64_t len, int inv) {
  const int64_t q = len >> 1;
  const double *w1r = dpo__lr + q - 1, *w1i = dpo__li + q - 1;
  const double *w2r = dpo__lr + len - 1, *w2i = dpo__li + len - 1;
  for (int64_t s = 0; s < m; s += 2 * len) {
    double *ar = re + s, *ai = im + s, *br = ar + q, *bi = ai + q;
    double *cr = ar + len, *ci = ai + len, *dr = cr + q, *di = ci + q;
    for (int64_t k = 0; k < q; k += 512) { /* 4 x 512 points x 16 bytes: in L1 between */
      const int64_t h = q - k < 512 ? q - k : 512;
      dpo__bf(ar + k, ai + k, br + k, bi + k, w1r + k, w1i + k, h, inv); /* span len */
      dpo__bf(cr + k, ci + k, dr + k, di + k, w1r + k, w1i + k, h, inv);
      dpo__bf(ar + k, ai + k, cr + k, ci + k, w2r + k, w2i + k, h, inv); /* span 2 len */
      dpo__bf(br + k, bi + k, dr + k, di + k, w2r + q + k, w2i + q + k, h, inv);
    }
  }
}

/* in-place radix-2 FFT (decimation in time) of m complex numbers given in bit-reversed order
 * (m a power of 2), natural order out; inv: the conjugate twiddles (the inverse, unscaled) */
static void dpo__cfft(double *re, double *im, int64_t m, int inv) {
  /* the stages of length <= DPO__FFT_BLOCK run block by block (each block's data stays in
   * cache through them), the longer ones over the whole array */
  const int64_t blk = m < DPO__FFT_BLOCK ? m : DPO__FFT_BLOCK;
  for (int64_t b = 0; b < m; b += blk) {
    int64_t len = 16;
    if (blk >= 8) {
      dpo__stage3_8(re + b, im + b, blk, inv);
    } else {
      dpo__stage(re + b, im + b, blk, 2, inv);
      len = 4;
    }
    for (; 2 * len <= blk; len <<= 2) dpo__stage2(re + b, im + b, blk, len, inv);
    if (len <= blk) dpo__stage(re + b, im + b, blk, len, inv);
  }
  int64_t len = 2 * blk;
  for (; 2 * len <= m; len <<= 2) dpo__stage2(re, im, m, len, inv);
  if (len <= m) dpo__stage(re, im, m, len, inv);
}

/* zr + i zi = the real a (length na <= 2m, zero padded) as m complex numbers a_2j + i a_2j+1,
 * each at j's bit-reversed place (dpo__cfft's input order) */
static void dpo__load(const double *a, int64_t na, int64_t m, double *zr, double *zi) {
  const int32_t *rev = dpo__rev;
  const int sh = dpo__rev_shift(m);
  /* written in order, read from the reversed places (rev is its own inverse): scattered
   * reads of pairs cost less than scattered writes */
  for (int64_t p = 0; p < m; p++) {
    const int64_t j = rev[p] >> sh;
    zr[p] = 2 * j < na ? a[2 * j] : 0, zi[p] = 2 * j + 1 < na ? a[2 * j + 1] : 0;
  }
}

/* c[2j] + i c[2j + 1] = s z_j for 2j < nc (c[nc - 1] alone when nc is odd); negative values
 * set to 0 when clip */
DPO_CLONES_EXACT static void dpo__unload(const double *restrict zr, const double *restrict zi,
                                        int64_t m, double s, double *restrict c, int64_t nc,
                                        int clip) {
  const int64_t h = nc / 2 < m ? nc / 2 : m;
  if (clip) {
#pragma omp simd
    for (int64_t j = 0; j < h; j++) {
      const double v0 = zr[j] * s, v1 = zi[j] * s;
      c[2 * j] = v0 > 0 ? v0 : 0, c[2 * j + 1] = v1 > 0 ? v1 : 0;
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < h; j++) c[2 * j] = zr[j] * s, c[2 * j + 1] = zi[j] * s;
  }
  if (h < m && 2 * h < nc) {
    const double v0 = zr[h] * s;
    c[2 * h] = clip && !(v0 > 0) ? 0 : v0;
  }
}

/* X_k = E_k + W^k O_k (W = e^{-2 pi i / 2m}) from Z_k and conj Z_{m - k} of the packed
 * transform: the even samples' spectrum E = (Z_k + conj Z_{m-k}) / 2, the odd ones' O = (Z_k -
 * conj Z_{m-k}) / 2i */
static inline void dpo__split1(double ar, double ai, double cr, double ci, double wr, double wi,
                               double *xr, double *xi) {
  const double er = 0.5 * (ar + cr), ei = 0.5 * (ai + ci);
  const double orr = 0.5 * (ai - ci), oi = -0.5 * (ar - cr);
  *xr = er + wr * orr - wi * oi;
  *xi = ei + wr * oi + wi * orr;
}

/* X_k for 0 < k < m; tr, ti: W^k, k < m */
DPO_CLONES_EXACT static void dpo__split(const double *restrict zr, const double *restrict zi,
                                       int64_t m, const double *restrict tr,
                                       const double *restrict ti, double *restrict xr,
                                       double *restrict xi) {
#pragma omp simd
  for (int64_t k = 1; k < m; k++)
    dpo__split1(zr[k], zi[k], zr[m - k], -zi[m - k], tr[k], ti[k], &xr[k], &xi[k]);
}

/* spectrum X[0..m] (m + 1 complex, split into xr, xi) of the real a (length na <= 2m, zero
 * padded to 2m); zr, zi are scratch of m */
static void dpo__rfft(const double *a, int64_t na, int64_t m, double *zr, double *zi,
                      double *xr, double *xi) {
  dpo__load(a, na, m, zr, zi);
  dpo__cfft(zr, zi, m, 0);
  const double *tr = dpo__lr + m - 1, *ti = dpo__li + m - 1; /* e^{-2 pi i k / 2m}, k < m */
  dpo__split1(zr[0], zi[0], zr[0], -zi[0], tr[0], ti[0], &xr[0], &xi[0]);
  dpo__split(zr, zi, m, tr, ti, xr, xi);
  dpo__split1(zr[0], zi[0], zr[0], -zi[0], -1.0, 0.0, &xr[m], &xi[m]);
}

/* the inverse of the split: Z_k = E_k + i O_k, E = (X_k + conj X_{m-k}) / 2, O = (X_k - conj
 * X_{m-k}) / 2 divided by W^k (times wr + i wi = conj W^k) */
static inline void dpo__merge1(double ar, double ai, double cr, double ci, double wr, double wi,
                               double *zr, double *zi) {
  const double er = 0.5 * (ar + cr), ei = 0.5 * (ai + ci);
  const double dr = 0.5 * (ar - cr), di = 0.5 * (ai - ci);
  const double orr = dr * wr - di * wi, oi = dr * wi + di * wr;
  *zr = er - oi;
  *zi = ei + orr;
}

/* Z_k and Z_{m-k} for 0 < k < m / 2, in place of X_k and X_{m-k} (each pair reads both) */
DPO_CLONES_EXACT static void dpo__merge(double *restrict xr, double *restrict xi, int64_t m,
                                       const double *restrict tr, const double *restrict ti) {
#pragma omp simd
  for (int64_t k = 1; k < m / 2; k++) {
    const double ar = xr[k], ai = xi[k], cr = xr[m - k], ci = xi[m - k];
    dpo__merge1(ar, ai, cr, -ci, tr[k], -ti[k], &xr[k], &xi[k]);
    dpo__merge1(cr, ci, ar, -ai, tr[m - k], -ti[m - k], &xr[m - k], &xi[m - k]);
  }
}

/* the real c (length 2m) from its spectrum X[0..m] (overwritten): into c[0 .. min(2m, nc))
 * scaled by 1/m, negative values set to 0 when clip; zr, zi are scratch of m */
static void dpo__irfft(double *xr, double *xi, int64_t m, double *zr, double *zi, double *c,
                       int64_t nc, int clip) {
  const double *tr = dpo__lr + m - 1, *ti = dpo__li + m - 1;
  const int32_t *rev = dpo__rev;
  const int sh = dpo__rev_shift(m);
  double z0r, z0i, z1r, z1i; /* Z_0 (from X_0, X_m) and Z_{m/2} (from X_{m/2} twice) */
  dpo__merge1(xr[0], xi[0], xr[m], -xi[m], tr[0], -ti[0], &z0r, &z0i);
  dpo__merge1(xr[m / 2], xi[m / 2], xr[m / 2], -xi[m / 2], tr[m / 2], -ti[m / 2], &z1r, &z1i);
  dpo__merge(xr, xi, m, tr, ti);
  xr[0] = z0r, xi[0] = z0i, xr[m / 2] = z1r, xi[m / 2] = z1i;
  for (int64_t p = 0; p < m; p++) { /* to dpo__cfft's input order, written in order */
    const int32_t k = rev[p] >> sh;
    zr[p] = xr[k], zi[p] = xi[k];
  }
  dpo__cfft(zr, zi, m, 1);
  dpo__unload(zr, zi, m, 1.0 / (double)m, c, nc, clip);
}

int dpo__pld_rconv(const double *a, int64_t na, const double *b, int64_t nb, double *c,
                   int *lg_out) {
  const int64_t len = na + nb - 1;
  int64_t n = 4, lg = 2;
  while (n < len) n <<= 1, lg++;
  const int64_t m = n / 2;
  int st = dpo__tw_need(n);
  if (st) return st;
  const int sq = a == b && na == nb;
  /* zr, zi (m each), then X and Y (m + 1 each, real and imaginary parts) */
  double *z = malloc(sizeof(double) * (size_t)(2 * m + 4 * (m + 1)));
  if (!z) return dpo_err(DPO_ENOMEM, "pld: out of memory (FFT of %lld)", (long long)n);
  double *zr = z, *zi = z + m, *xr = z + 2 * m, *xi = xr + m + 1;
  double *yr = sq ? xr : xi + m + 1, *yi = sq ? xi : yr + m + 1;
  dpo__rfft(a, na, m, zr, zi, xr, xi);
  if (!sq) dpo__rfft(b, nb, m, zr, zi, yr, yi);
  for (int64_t k = 0; k <= m; k++) {
    const double ar = xr[k], ai = xi[k], br = yr[k], bi = yi[k];
    xr[k] = ar * br - ai * bi;
    xi[k] = ar * bi + ai * br;
  }
  dpo__irfft(xr, xi, m, zr, zi, c, len, 1);
  free(z);
  *lg_out = (int)lg;
  return DPO_OK;
}

#define DPO__POW_BLOCK 256

/* X[k] = X[k]^t for k < nk by binary powering (the squarings of the composition, done on the
 * spectrum), 0 where |X[k]|^2 < thr: block by block, each bit of t one vector loop over the
 * block; every coefficient sees the same products in the same order as a scalar loop would */
DPO_CLONES_EXACT static void dpo__pow_block(double *restrict xr, double *restrict xi,
                                           int64_t nk, int64_t t, double thr) {
  double rr[DPO__POW_BLOCK], ri[DPO__POW_BLOCK], br[DPO__POW_BLOCK], bi[DPO__POW_BLOCK];
  /* a coefficient below thr powers from 0: no subnormals on the way, the result +0 as set;
   * a block with none above (most of a long window's high frequencies) is not powered */
  int any = 0;
#pragma omp simd reduction(| : any)
  for (int64_t k = 0; k < nk; k++) {
    const int lo = xr[k] * xr[k] + xi[k] * xi[k] < thr;
    br[k] = lo ? 0.0 : xr[k], bi[k] = lo ? 0.0 : xi[k];
    rr[k] = 1, ri[k] = 0;
    any |= !lo;
  }
  if (!any) {
    memset(xr, 0, sizeof(double) * (size_t)nk), memset(xi, 0, sizeof(double) * (size_t)nk);
    return;
  }
  for (int64_t e = t; e > 0; e >>= 1) {
    if (e & 1) {
#pragma omp simd
      for (int64_t k = 0; k < nk; k++) {
        const double r = rr[k] * br[k] - ri[k] * bi[k];
        ri[k] = rr[k] * bi[k] + ri[k] * br[k];
        rr[k] = r;
      }
    }
    if (e > 1) {
#pragma omp simd
      for (int64_t k = 0; k < nk; k++) {
        const double r = br[k] * br[k] - bi[k] * bi[k];
        bi[k] = br[k] * bi[k] + bi[k] * br[k];
        br[k] = r;
      }
    }
  }
  memcpy(xr, rr, sizeof(double) * (size_t)nk);
  memcpy(xi, ri, sizeof(double) * (size_t)nk);
}

int dpo__pld_rpow(const double *x, int64_t nx, int64_t n, int64_t t, double *c) {
  const int64_t m = n / 2;
  int st = dpo__tw_need(n);
  if (st) return st;
  double *f = nx > n ? calloc((size_t)n, sizeof(double)) : NULL; /* x folded modulo n */
  double *z = malloc(sizeof(double) * (size_t)(2 * m + 2 * (m + 1)));
  if (!z || (nx > n && !f)) {
    free(f), free(z);
    return dpo_err(DPO_ENOMEM, "pld: out of memory (FFT of %lld)", (long long)n);
  }
  if (f)
    for (int64_t i = 0; i < nx; i++) f[i & (n - 1)] += x[i];
  double *zr = z, *zi = z + m, *xr = z + 2 * m, *xi = xr + m + 1;
  dpo__rfft(f ? f : x, f ? n : nx, m, zr, zi, xr, xi);
  /* a coefficient whose power is below 1e-200 (|X|^2 < e^(-921 / t)) is set to 0 (pld.c adds
   * that to its bound): most of a long window's are, and their powers underflowed through
   * subnormals on the way */
  const double thr = exp(-921.0 / (double)t);
  for (int64_t k = 0; k <= m; k += DPO__POW_BLOCK)
    dpo__pow_block(xr + k, xi + k, m + 1 - k < DPO__POW_BLOCK ? m + 1 - k : DPO__POW_BLOCK, t,
                   thr);
  dpo__irfft(xr, xi, m, zr, zi, c, n, 0);
  free(f), free(z);
  return DPO_OK;
}
