/* Linear convolution of two real sequences by FFT, for the PLD accountant (pld.c).
 *
 * Each real sequence of (padded) length N = 2M is transformed by one complex FFT of length M
 * (even samples as real parts, odd as imaginary parts, then the split below), the spectra are
 * multiplied, and one complex inverse FFT of length M gives the real result: half the work of
 * transforming the real input as complex numbers of length N, as the first version did.
 * The twiddles e^{-2 pi i k / N} are computed directly (cos, sin: error O(u) each, no
 * recurrence) into one process-wide table for the largest N met so far; a transform of
 * length L reads every (Nmax / L)-th entry.  dpopt's processes are single-threaded.
 *
 * Error: the result's l2 error is bounded as for the complex transform of length N (pld.c's
 * slack, c u log2(N) (||a||_2 + ||b||_2) sqrt(N)): the length-M transforms have one stage
 * fewer, and the split and merge add at most three roundings per coefficient (one twiddle
 * product, one sum, one halving), which the stage left over covers.
 */
#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double *dpo__tw;   /* tw[2k], tw[2k + 1] = cos, sin of -2 pi k / tw_n, k < tw_n / 2 */
static int64_t dpo__tw_n;
/* the same twiddles by stage: lv + 2 (len / 2 - 1) holds e^{-2 pi i k / len}, k < len / 2, for
 * each len = 2, 4, .., tw_n / 2 (copies of tw's entries, so the transform's values are
 * unchanged); a stage reads them in order instead of every (tw_n / len)-th entry of tw */
static double *dpo__lv;

static int dpo__tw_need(int64_t n) {
  if (n <= dpo__tw_n) return DPO_OK;
  double *t = malloc(sizeof(double) * (size_t)n); /* n / 2 complex entries */
  double *lv = malloc(sizeof(double) * (size_t)n);
  if (!t || !lv) {
    free(t), free(lv);
    return dpo_err(DPO_ENOMEM, "pld: out of memory (twiddles of %lld)", (long long)n);
  }
  /* the table grows as a search moves to finer grids (16x, 4x, the ledger's); every r-th entry
   * (r = n / tw_n, a power of 2) is the old table's: the angle (-2 pi r j) / (r tw_n) rounds as
   * (-2 pi j) / tw_n (scaling by 2^m is exact), so the copies are the values sincos would give */
  const int64_t r = dpo__tw_n > 0 ? n / dpo__tw_n : 0;
  for (int64_t k = 0; k < n / 2; k++) {
    if (r && (k & (r - 1)) == 0) {
      t[2 * k] = dpo__tw[2 * (k / r)];
      t[2 * k + 1] = dpo__tw[2 * (k / r) + 1];
      continue;
    }
    double ang = -2.0 * M_PI * (double)k / (double)n;
    t[2 * k] = cos(ang);
    t[2 * k + 1] = sin(ang);
  }
  for (int64_t len = 2; len <= n / 2; len <<= 1)
    for (int64_t k = 0, st = n / len; k < len / 2; k++) {
      lv[2 * (len / 2 - 1 + k)] = t[2 * k * st];
      lv[2 * (len / 2 - 1 + k) + 1] = t[2 * k * st + 1];
    }
  free(dpo__tw), free(dpo__lv);
  dpo__tw = t, dpo__lv = lv;
  dpo__tw_n = n;
  return DPO_OK;
}

#define DPO__FFT_BLOCK 4096 /* complex numbers: 64 KiB */

/* one radix-2 stage: butterflies of span len over x[0 .. m); the products by w = 1 (len 2) are
 * left out (the same values: v * 1 - v' * 0 is v) */
static void dpo__stage(double *x, int64_t m, int64_t len, int inv) {
  const int64_t half = len >> 1;
  if (half == 1) {
    for (double *u = x, *e = x + 2 * m; u < e; u += 4) {
      const double vr = u[2], vi = u[3];
      u[2] = u[0] - vr, u[3] = u[1] - vi;
      u[0] += vr, u[1] += vi;
    }
    return;
  }
  const double sg = inv ? -1.0 : 1.0, *w = dpo__lv + 2 * (half - 1);
  for (int64_t s = 0; s < m; s += len) {
    double *u = x + 2 * s, *v = u + 2 * half;
    for (int64_t k = 0; k < half; k++) {
      const double wr = w[2 * k], wi = sg * w[2 * k + 1];
      const double vr = v[2 * k] * wr - v[2 * k + 1] * wi, vi = v[2 * k] * wi + v[2 * k + 1] * wr;
      v[2 * k] = u[2 * k] - vr, v[2 * k + 1] = u[2 * k + 1] - vi;
      u[2 * k] += vr, u[2 * k + 1] += vi;
    }
  }
}

/* v *= w (w conjugated when inv), then u, v = u + v, u - v: one butterfly of a stage */
static inline void dpo__bfly(double *u, double *v, const double *w, double sg) {
  const double wr = w[0], wi = sg * w[1];
  const double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
  v[0] = u[0] - vr, v[1] = u[1] - vi;
  u[0] += vr, u[1] += vi;
}

/* the stages of span len and 2 len in one pass over x (each group of four points read and
 * written once): the same butterflies, with the same twiddles, as dpo__stage twice */
static void dpo__stage2(double *x, int64_t m, int64_t len, int inv) {
  const int64_t q = len >> 1; /* len / 2: the first stage's half, the second's is len */
  const double sg = inv ? -1.0 : 1.0, *w1 = dpo__lv + 2 * (q - 1), *w2 = dpo__lv + 2 * (len - 1);
  for (int64_t s = 0; s < m; s += 2 * len) {
    double *a = x + 2 * s, *b = a + 2 * q, *c = a + 2 * len, *d = c + 2 * q;
    for (int64_t k = 0; k < q; k++) {
      dpo__bfly(a + 2 * k, b + 2 * k, w1 + 2 * k, sg); /* span len: (a, b), (c, d) */
      dpo__bfly(c + 2 * k, d + 2 * k, w1 + 2 * k, sg);
      dpo__bfly(a + 2 * k, c + 2 * k, w2 + 2 * k, sg); /* span 2 len: (a, c), (b, d) */
      dpo__bfly(b + 2 * k, d + 2 * k, w2 + 2 * (k + q), sg);
    }
  }
}

/* in-place radix-2 FFT of m complex numbers (interleaved re, im; m a power of 2); inv: the
 * conjugate twiddles (the inverse transform, unscaled) */
static void dpo__cfft(double *x, int64_t m, int inv) {
  for (int64_t i = 1, j = 0; i < m; i++) {
    int64_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double r = x[2 * i], s = x[2 * i + 1];
      x[2 * i] = x[2 * j], x[2 * i + 1] = x[2 * j + 1];
      x[2 * j] = r, x[2 * j + 1] = s;
    }
  }
  /* the stages of length <= DPO__FFT_BLOCK run block by block (each block's data stays in
   * cache through them), the longer ones over the whole array */
  const int64_t blk = m < DPO__FFT_BLOCK ? m : DPO__FFT_BLOCK;
  for (int64_t b = 0; b < m; b += blk) {
    int64_t len = 2;
    dpo__stage(x + 2 * b, blk, len, inv);
    for (len = 4; 2 * len <= blk; len <<= 2) dpo__stage2(x + 2 * b, blk, len, inv);
    if (len <= blk) dpo__stage(x + 2 * b, blk, len, inv);
  }
  int64_t len = 2 * blk;
  for (; 2 * len <= m; len <<= 2) dpo__stage2(x, m, len, inv);
  if (len <= m) dpo__stage(x, m, len, inv);
}

/* spectrum X[0..m] (m + 1 complex) of the real a (length na <= 2m, zero padded to 2m); z is
 * scratch of m complex */
static void dpo__rfft(const double *a, int64_t na, int64_t m, double *z, double *X) {
  memset(z, 0, sizeof(double) * 2 * (size_t)m);
  memcpy(z, a, sizeof(double) * (size_t)na); /* z_j = a_2j + i a_2j+1 */
  dpo__cfft(z, m, 0);
  const int64_t st = dpo__tw_n / (2 * m);
  for (int64_t k = 0; k <= m; k++) {
    const int64_t k1 = k % m, k2 = (m - k) % m;
    double zr = z[2 * k1], zi = z[2 * k1 + 1], cr = z[2 * k2], ci = -z[2 * k2 + 1];
    double er = 0.5 * (zr + cr), ei = 0.5 * (zi + ci);  /* even part */
    double orr = 0.5 * (zi - ci), oi = -0.5 * (zr - cr); /* odd part: (z - conj) / 2i */
    double wr = k < m ? dpo__tw[2 * k * st] : -1.0, wi = k < m ? dpo__tw[2 * k * st + 1] : 0.0;
    X[2 * k] = er + wr * orr - wi * oi;
    X[2 * k + 1] = ei + wr * oi + wi * orr;
  }
}

/* the real c (length 2m, into z as m complex numbers, scaled by 1/m) from its spectrum
 * X[0..m] */
static void dpo__irfft(const double *X, int64_t m, double *z) {
  const int64_t st = dpo__tw_n / (2 * m);
  for (int64_t k = 0; k < m; k++) {
    double xr = X[2 * k], xi = X[2 * k + 1], cr = X[2 * (m - k)], ci = -X[2 * (m - k) + 1];
    double er = 0.5 * (xr + cr), ei = 0.5 * (xi + ci);
    double dr = 0.5 * (xr - cr), di = 0.5 * (xi - ci); /* W^k Zo: divide by W^k */
    double wr = dpo__tw[2 * k * st], wi = -dpo__tw[2 * k * st + 1];
    double orr = dr * wr - di * wi, oi = dr * wi + di * wr;
    z[2 * k] = er - oi; /* Ze + i Zo */
    z[2 * k + 1] = ei + orr;
  }
  dpo__cfft(z, m, 1);
  const double s = 1.0 / (double)m;
  for (int64_t j = 0; j < 2 * m; j++) z[j] *= s;
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
  double *z = malloc(sizeof(double) * 2 * (size_t)m);
  double *X = malloc(sizeof(double) * 2 * (size_t)(m + 1));
  double *Y = sq ? X : malloc(sizeof(double) * 2 * (size_t)(m + 1));
  if (!z || !X || !Y) {
    free(z), free(X);
    if (!sq) free(Y);
    return dpo_err(DPO_ENOMEM, "pld: out of memory (FFT of %lld)", (long long)n);
  }
  dpo__rfft(a, na, m, z, X);
  if (!sq) dpo__rfft(b, nb, m, z, Y);
  for (int64_t k = 0; k <= m; k++) {
    double xr = X[2 * k], xi = X[2 * k + 1], yr = Y[2 * k], yi = Y[2 * k + 1];
    X[2 * k] = xr * yr - xi * yi;
    X[2 * k + 1] = xr * yi + xi * yr;
  }
  dpo__irfft(X, m, z);
  for (int64_t i = 0; i < len; i++) c[i] = z[i] > 0 ? z[i] : 0;
  free(z), free(X);
  if (!sq) free(Y);
  *lg_out = (int)lg;
  return DPO_OK;
}

/* (re, im) *= (br, bi) */
static void dpo__cmul(double *re, double *im, double br, double bi) {
  const double r = *re * br - *im * bi;
  *im = *re * bi + *im * br;
  *re = r;
}

int dpo__pld_rpow(const double *x, int64_t nx, int64_t n, int64_t t, double *c) {
  const int64_t m = n / 2;
  int st = dpo__tw_need(n);
  if (st) return st;
  double *f = calloc((size_t)n, sizeof(double)); /* x folded modulo n */
  double *z = malloc(sizeof(double) * 2 * (size_t)m);
  double *X = malloc(sizeof(double) * 2 * (size_t)(m + 1));
  if (!f || !z || !X) {
    free(f), free(z), free(X);
    return dpo_err(DPO_ENOMEM, "pld: out of memory (FFT of %lld)", (long long)n);
  }
  for (int64_t i = 0; i < nx; i++) f[i & (n - 1)] += x[i];
  dpo__rfft(f, n, m, z, X);
  /* each coefficient to the power t by binary powering: the squarings of the composition,
   * done on the spectrum; a coefficient whose power is below 1e-200 (|X|^2 < e^(-921 / t)) is
   * set to 0 (pld.c adds that to its bound): most of a long window's are, and their powers
   * underflowed through subnormals on the way */
  const double thr = exp(-921.0 / (double)t);
  for (int64_t k = 0; k <= m; k++) {
    double br = X[2 * k], bi = X[2 * k + 1], rr = 1, ri = 0;
    if (br * br + bi * bi < thr) {
      X[2 * k] = X[2 * k + 1] = 0;
      continue;
    }
    for (int64_t e = t; e > 0; e >>= 1) {
      if (e & 1) dpo__cmul(&rr, &ri, br, bi);
      if (e > 1) dpo__cmul(&br, &bi, br, bi);
    }
    X[2 * k] = rr, X[2 * k + 1] = ri;
  }
  dpo__irfft(X, m, z);
  memcpy(c, z, sizeof(double) * (size_t)n);
  free(f), free(z), free(X);
  return DPO_OK;
}
