/* Exact Poisson minibatches by geometric gaps (see sample.h).
 *
 * G = #{k >= 1 : V < rho^k} for V uniform on [0, 1) and rho = (n - m)/n has
 * P(G >= k) = P(V < rho^k) = rho^k, i.e. G ~ Geometric(q = m/n) exactly.  V is revealed 64 bits
 * at a time (V in [z 2^-64, (z + 1) 2^-64) after the first word), and G is returned only when
 * the comparisons that define it hold for EVERY V in that interval:
 *  - fast path: k = floor(ln V / ln rho) in doubles, accepted only if
 *    (z + 1) 2^-64 < rho^k (1 - tol) and z 2^-64 > rho^(k+1) (1 + tol), where rho^k is computed
 *    as exp(k ln rho).  ln rho comes from log1p(-m/n) (q <= 1/2) or log((n-m)/n) (q > 1/2), so
 *    its relative error is a few ulps (the rounding of m/n moves ln(1 - q) by at most
 *    2 q/(1 - q) ulp relative to |ln(1 - q)| >= q), and exp(k ln rho) is within
 *    ~ (3 + 4 |k ln rho|) 2^-53 relative of rho^k.  tol = 1e-13 (1 + |(k+1) ln rho|) is > 100x
 *    that bound, so a libm that is off in its last bits (or by 10 ulps) cannot bias G: an
 *    uncertified draw only costs a trip to the exact path.  The fast path fails with
 *    probability ~ 1e-12 per gap.
 *  - exact path: rho^k is bracketed in fixed point with 64 (nw + 2) fraction bits by k steps of
 *    x <- floor(x (n-m) / n) (lower bound) and floor(x (n-m) / n) + 1 (upper bound); V is
 *    compared with the bracket, and one more word of V is drawn while they overlap (the
 *    bracket is <= 2k ulps wide, the interval of V 2^128 ulps, so they overlap only when
 *    rho^k falls inside the interval of V; each extra word shrinks it 2^64-fold, and the loop
 *    ends with probability 1).  Cost O(k nw) limb operations: it is the rare path.
 * Nothing here depends on floating-point rounding: the doubles only decide when the fast
 * path may answer, never what it answers beyond the certified comparisons.
 */
#include "privacy/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"

typedef unsigned __int128 u128;

/* x <- floor(x a / n) on nl limbs (x[0] most significant); tmp has nl + 1 limbs. */
static void fx_muldiv(uint64_t *x, int nl, uint64_t a, uint64_t n, uint64_t *tmp) {
  uint64_t carry = 0;
  for (int i = nl - 1; i >= 0; i--) {
    u128 p = (u128)x[i] * a + carry;
    tmp[i + 1] = (uint64_t)p;
    carry = (uint64_t)(p >> 64);
  }
  tmp[0] = carry;
  uint64_t rem = 0;
  for (int i = 0; i <= nl; i++) {
    u128 cur = ((u128)rem << 64) | tmp[i];
    tmp[i] = (uint64_t)(cur / n);
    rem = (uint64_t)(cur % n);
  }
  memcpy(x, tmp + 1, (size_t)nl * sizeof *x); /* tmp[0] = 0: a < n */
}

static void fx_inc(uint64_t *x, int top) { /* x += 1 ulp at limb `top` */
  for (int i = top; i >= 0; i--)
    if (++x[i]) break;
}

static int fx_cmp(const uint64_t *a, const uint64_t *b, int nl) {
  for (int i = 0; i < nl; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

int dpo__geom_less(dpo_rng_t *rng, uint64_t *w, int *nw, int64_t m, int64_t n, int64_t k,
                   int *out) {
  int rc = DPO_OK;
  uint64_t *buf = NULL;
  for (;;) {
    int nl = *nw + 3; /* integer limb, nw words of V, two guard limbs */
    uint64_t *nb = realloc(buf, (size_t)(5 * nl + 1) * sizeof *buf);
    if (!nb) {
      rc = dpo_err(DPO_ENOMEM, "poisson sampling: out of memory");
      goto cleanup;
    }
    buf = nb;
    uint64_t *lo = buf, *hi = lo + nl, *vlo = hi + nl, *vhi = vlo + nl, *tmp = vhi + nl;
    memset(lo, 0, (size_t)nl * sizeof *lo);
    lo[0] = 1;
    memcpy(hi, lo, (size_t)nl * sizeof *lo);
    for (int64_t j = 0; j < k; j++) {
      fx_muldiv(lo, nl, (uint64_t)(n - m), (uint64_t)n, tmp);
      fx_muldiv(hi, nl, (uint64_t)(n - m), (uint64_t)n, tmp);
      fx_inc(hi, nl - 1);
    }
    memset(vlo, 0, (size_t)nl * sizeof *vlo);
    memcpy(vlo + 1, w, (size_t)*nw * sizeof *w);
    memcpy(vhi, vlo, (size_t)nl * sizeof *vlo);
    fx_inc(vhi, *nw); /* + 2^(-64 nw) */
    if (fx_cmp(vhi, lo, nl) <= 0) { /* V < vhi <= lo <= rho^k */
      *out = 1;
      break;
    }
    if (fx_cmp(vlo, hi, nl) >= 0) { /* V >= vlo >= hi >= rho^k */
      *out = 0;
      break;
    }
    if (*nw >= DPO__GEOM_WORDS) { /* probability < 2^-4000 */
      rc = dpo_err(DPO_ENOCONV, "poisson sampling: comparison undecided after %d words", *nw);
      goto cleanup;
    }
    w[(*nw)++] = dpo_rng_u64(rng);
  }
cleanup:
  free(buf);
  return rc;
}

static int dpo__geom_check(int64_t m, int64_t n) {
  if (m < 1 || m > n || n > ((int64_t)1 << 53))
    return dpo_err(DPO_EINVAL, "poisson sampling: need 1 <= m <= n <= 2^53 (m=%lld, n=%lld)",
                   (long long)m, (long long)n);
  return DPO_OK;
}

/* ln rho < 0, rho = (n - m)/n: the fast path's constant, the same for every gap of a plan */
static double dpo__geom_lg(int64_t m, int64_t n) {
  double q = (double)m / (double)n;
  return q <= 0.5 ? log1p(-q) : log((double)(n - m) / (double)n);
}

/* One gap with lg = dpo__geom_lg(m, n), m < n checked by the caller. */
static int dpo__geom_gap_lg(dpo_rng_t *rng, int64_t m, int64_t n, double lg, int force_exact,
                            int64_t *gap) {
  uint64_t w[DPO__GEOM_WORDS];
  int nw = 1, rc, lt;
  w[0] = dpo_rng_u64(rng);
  double vlo = (double)w[0] * 0x1p-64, vhi = ((double)w[0] + 1.0) * 0x1p-64;
  double x = log(((double)w[0] + 0.5) * 0x1p-64) / lg; /* ~ ln V / ln rho >= 0 */
  int64_t k = x < 1e15 ? (int64_t)x : (int64_t)1e15;
  if (!force_exact && w[0] > 0) {
    double xk = (double)k * lg, xk1 = (double)(k + 1) * lg;
    double tol = 1e-13 * (1.0 - xk1);
    if ((k == 0 || vhi < exp(xk) * (1.0 - tol)) && vlo > exp(xk1) * (1.0 + tol)) {
      *gap = k;
      return DPO_OK;
    }
  }
  /* exact path: G = the k with V < rho^k (or k = 0) and V >= rho^(k+1) */
  while (k > 0) {
    if ((rc = dpo__geom_less(rng, w, &nw, m, n, k, &lt))) return rc;
    if (lt) break;
    k--;
  }
  for (;;) {
    if ((rc = dpo__geom_less(rng, w, &nw, m, n, k + 1, &lt))) return rc;
    if (!lt) break;
    k++;
  }
  *gap = k;
  return DPO_OK;
}

int dpo__geom_gap(dpo_rng_t *rng, int64_t m, int64_t n, int force_exact, int64_t *gap) {
  int rc = !rng || !gap ? dpo_err(DPO_EINVAL, "poisson sampling: no stream")
                        : dpo__geom_check(m, n);
  if (rc) return rc;
  if (m == n) { /* q = 1: every row */
    *gap = 0;
    return DPO_OK;
  }
  return dpo__geom_gap_lg(rng, m, n, dpo__geom_lg(m, n), force_exact, gap);
}

int dpo__poisson_batch(dpo_rng_t *rng, int64_t m, int64_t n, int64_t rows, int64_t **ids,
                       int64_t *cap, int64_t *mb) {
  int64_t i = -1, c = 0, g = 0;
  int rc = !rng ? dpo_err(DPO_EINVAL, "poisson sampling: no stream") : dpo__geom_check(m, n);
  if (rc) return rc;
  const double lg = m < n ? dpo__geom_lg(m, n) : 0.0; /* once a batch, not once a gap */
  for (;;) {
    if (m < n && (rc = dpo__geom_gap_lg(rng, m, n, lg, 0, &g))) return rc;
    if (g > rows - 2 - i) break; /* the next kept row would be past the end */
    i += g + 1;
    if (c == *cap) {
      int64_t nc = *cap < 64 ? 64 : 2 * *cap;
      if (nc > rows) nc = rows;
      int64_t *p = realloc(*ids, (size_t)nc * sizeof *p);
      if (!p) return dpo_err(DPO_ENOMEM, "poisson sampling: cannot grow a batch to %lld ids",
                             (long long)nc);
      *ids = p;
      *cap = nc;
    }
    (*ids)[c++] = i;
  }
  *mb = c;
  return DPO_OK;
}

static int cmp64(const void *x, const void *y) {
  int64_t u = *(const int64_t *)x, v = *(const int64_t *)y;
  return (u > v) - (u < v);
}

void dpo__wor_batch(dpo_rng_t *rng, int64_t m, int64_t n, int64_t *pool, int64_t *ids) {
  for (int64_t i = 0; i < m; i++) {
    int64_t j = i + (int64_t)dpo_rng_below(rng, (uint64_t)(n - i)), tmp = pool[i];
    pool[i] = pool[j];
    pool[j] = tmp;
  }
  memcpy(ids, pool, (size_t)m * sizeof *ids);
  qsort(ids, (size_t)m, sizeof *ids, cmp64);
}
