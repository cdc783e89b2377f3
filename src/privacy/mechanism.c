/* Laplace and Gaussian mechanisms sampled exactly on a power-of-two grid, in fixed work.
 *
 * Why: textbook samplers (b * log(u), Box-Muller) produce doubles whose set of reachable values
 * depends on the true value they are added to, which Mironov (2012) used to recover the true
 * value.  Here the released value is Lambda * (rint(v/Lambda) + K) with an exact integer K, so
 * its distribution is that of the ideal discrete mechanism on the snapped value (see privacy.h
 * for the sensitivity inflation Delta' = Delta + d*Lambda (L1), + sqrt(d)*Lambda (L2)).
 *
 * What is exact: K is drawn by the Canonne-Kamath-Steinke (2020) algorithms using only integer
 * arithmetic (up to 256-bit) on uniform random bits; every Bernoulli(p) with rational p compares
 * the random binary expansion of U ~ Uniform[0,1) lazily with the expansion of p, so it has
 * probability exactly p.  The discrete scale is rounded UP to an integer (t = ceil(b/Lambda),
 * sigma_Z = ceil(sigma/Lambda)): the noise is at most 2^-39 relatively larger than asked, never
 * smaller.  The only inexact step is the one rounding double(n + K) of the exact 128-bit integer
 * when |n + K| > 2^53; it is a function of the exact mechanism's output only (post-processing).
 *
 * Constant-time release (issue 35; Jin, McMurtry, Rubinstein & Ohrimenko, IEEE S&P 2022): the
 * samplers of K (discrete Laplace, discrete Gaussian, Polya shares) are those of mech_ct.c,
 * whose work does not depend on the value drawn.
 *  CONSTANT: every accepted round of a rejection loop (CKS Alg. 2 and 3) does a fixed sequence
 *  of operations on a fixed number of random words: U uniform on [0, t) by masking (no
 *  division); Bernoulli(exp(-U/t)) as e^-(i/256), i = floor(256 U/t), from a certified table
 *  times CKS Alg. 1 on the rest y < 2^-8 run exactly 7 times (K = the first failure,
 *  P(K > 7) = y^7/7! < 2^-68); the geometric V (a loop of length V in CKS) as ONE 128-bit uniform
 *  placed among e^-1 .. e^-47 (certified 255-bit constants) by 6 halving steps;
 *  the sign from one word; the
 *  Gaussian (CKS Alg. 3 with t = s, its Laplace and Gaussian rejections one coin:
 *  mech_ct.c) as ONE Bernoulli(exp(-gamma)) a round, e^-floor(gamma) from the table times the
 *  loop on the fraction (the same split).  Each rational Bernoulli is one word compared by
 *  multiplication (no lazy bit loop; the 7 of a loop against floor(c/k), c = floor(2^64 y)
 *  computed once by a public reciprocal), plus one word per batch that settles an undecided
 *  one.  Rejected rounds and the number
 *  of rounds are independent of the value finally kept (i.i.d. trials), so they reveal nothing
 *  about it.  Polya variate: every coin is fixed work, and the coins are padded to public
 *  bounds from (t, n) (Chernoff, exceeded with probability < 2^-65 per variate; a share's two
 *  variates X, Y are padded together, < 2^-65 per share).
 *  NOT CONSTANT: the number of rounds (random, value-independent, so a release's time is
 *  random but carries no information on the noise); the work when a fallback is taken: two
 *  undecided atoms in a batch or an undecided extra word (< 2^-118 a batch), K > 7 (< 2^-68
 *  a loop), V >= 47 (e^-47 < 2^-67), a 128-bit constant comparison undecided (< 2^-121),
 *  the Polya coins beyond their bounds (< 2^-65); in all, below 2^-62 per Laplace or Gaussian
 *  draw (2^-63 per Polya variate, 2^-62 per share of two).  Then the draw takes longer and its time may depend on the
 *  noise: for the timing channel that probability adds to delta (d 2^-62 per release of d
 *  draws).  The law of K is never changed: every fallback continues the same exact comparison.
 *  Micro-architectural effects (caches, branch predictors shared with an attacker on the same
 *  core) are not covered: the table reads at an index (e^-n, (2/e)^(m+1), e^-(i/256): 8 KB; e^-v
 *  by halving for the geometric V: 2 KB)
 *  are in L1.
 *  FAILURE: an error (never a biased sample) if a constant comparison is undecided after 256
 *  bits (< 2^-180), or V, the Polya marks or counts overflow (< 2^-1000).
 * Seeded runs draw other noise than before issue 35 (other random words are consumed), and
 * than before the ct-speed commits (a CKS loop's 22 words are one copy; a share's X and Y are
 * drawn before their common padding), and than before the loop was split as e^-(i/256) times
 * 7 atoms (10 words a loop instead of 22), and than before the discrete Gaussian's two
 * rejections became one coin (about 33 words a draw instead of 43, 2.3x faster for s < 2^26).
 */
#include "mech_ct.h"
#include "rounding.h"

#include "dpopt/privacy.h"
#include "dpopt/status.h"

#include <math.h>
#include <string.h>

#ifdef DPO_TEST_SWITCHES
#include "privacy/test_switches.h"
#endif

/* ------------------------------------------------------------ random bits */

typedef struct {
  dpo_rng_t *rng;
  uint64_t buf;
  int left;
} dpo__bits_t;

static int dpo__bit(dpo__bits_t *b) {
  if (b->left == 0) {
    b->buf = dpo_rng_u64(b->rng);
    b->left = 64;
  }
  int r = (int)(b->buf & 1u);
  b->buf >>= 1;
  b->left--;
  return r;
}

/* ------------------------------------------------------------ 256-bit unsigned */

typedef unsigned __int128 dpo__u128;
typedef struct {
  uint64_t w[4]; /* little-endian limbs */
} dpo__u256;

static dpo__u256 u256_from(dpo__u128 x) {
  dpo__u256 r = {{(uint64_t)x, (uint64_t)(x >> 64), 0, 0}};
  return r;
}

static int u256_cmp(const dpo__u256 *a, const dpo__u256 *b) {
  for (int i = 3; i >= 0; i--)
    if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

static int u256_iszero(const dpo__u256 *a) { return !(a->w[0] | a->w[1] | a->w[2] | a->w[3]); }

static dpo__u256 u256_sub(dpo__u256 a, const dpo__u256 *b) { /* a >= b */
  uint64_t borrow = 0;
  for (int i = 0; i < 4; i++) {
    uint64_t bi = b->w[i], ai = a.w[i];
    uint64_t d = ai - bi - borrow;
    borrow = (ai < bi) || (ai == bi && borrow) ? 1u : 0u;
    a.w[i] = d;
  }
  return a;
}

static dpo__u256 u256_shl1(dpo__u256 a) {
  for (int i = 3; i > 0; i--) a.w[i] = (a.w[i] << 1) | (a.w[i - 1] >> 63);
  a.w[0] <<= 1;
  return a;
}

/* a * k for a < 2^190, k < 2^64: no overflow */
static dpo__u256 u256_mul64(const dpo__u256 *a, uint64_t k) {
  dpo__u256 r;
  dpo__u128 carry = 0;
  for (int i = 0; i < 4; i++) {
    dpo__u128 p = (dpo__u128)a->w[i] * k + carry;
    r.w[i] = (uint64_t)p;
    carry = p >> 64;
  }
  return r;
}

/* ------------------------------------------------------------ exact Bernoullis */

/* dpo__bern_frac's loop in 64 / 128-bit words: 0 < n < q < 2^63 (2^127), so 2 n fits */
static int dpo__bern_frac64(dpo__bits_t *bits, uint64_t n, uint64_t q) {
  for (;;) {
    n <<= 1;
    int d = n >= q;
    if (d) n -= q;
    int r = dpo__bit(bits);
    if (r != d) return r < d; /* first differing bit decides U < p */
  }
}
static int dpo__bern_frac128(dpo__bits_t *bits, dpo__u128 n, dpo__u128 q) {
  if (!(q >> 63)) return dpo__bern_frac64(bits, (uint64_t)n, (uint64_t)q);
  for (;;) {
    n <<= 1;
    int d = n >= q;
    if (d) n -= q;
    int r = dpo__bit(bits);
    if (r != d) return r < d;
  }
}

/* Bernoulli(num/den), 0 <= num, 0 < den < 2^255: lazy comparison of U's random bits with the
 * binary expansion of num/den (long division); ends with probability 1, expected 2 bits.
 * Speed: the long division runs in the narrowest of 64, 128 or 256 bits that holds 2 den
 * (nearly all calls of the samplers: dlap's den = k t < 2^63, dgauss's 2 s^2 t^2 < 2^127 for
 * s < 2^31).  The same digits are compared with the same random bits in the same order, so
 * the result and the bits consumed are identical to the 256-bit loop (seeded runs unchanged). */
static int dpo__bern_frac(dpo__bits_t *bits, dpo__u256 num, const dpo__u256 *den) {
  if (u256_cmp(&num, den) >= 0) return 1;
  if (u256_iszero(&num)) return 0;
  if (!(den->w[3] | den->w[2]) && !(den->w[1] >> 63)) /* den < 2^127 */
    return dpo__bern_frac128(bits, ((dpo__u128)num.w[1] << 64) | num.w[0],
                             ((dpo__u128)den->w[1] << 64) | den->w[0]);
  for (;;) {
    num = u256_shl1(num);
    int d = u256_cmp(&num, den) >= 0;
    if (d) num = u256_sub(num, den);
    int r = dpo__bit(bits);
    if (r != d) return r < d; /* first differing bit decides U < p */
  }
}

/* Bernoulli(exp(-N/D)), CKS 2020 Alg. 1; D < 2^190 so D*K never overflows. */
static int dpo__bern_exp(dpo__bits_t *bits, dpo__u256 N, dpo__u256 D) {
  /* gamma > 1: exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac): peel off whole units */
  while (u256_cmp(&N, &D) > 0) {
    if (!dpo__bern_exp(bits, u256_from(1), u256_from(1))) return 0;
    N = u256_sub(N, &D);
  }
  /* gamma in [0, 1]: K = first k with Bernoulli(gamma/k) = 0; P(K odd) = exp(-gamma) */
  uint64_t k = 1;
  if (!(D.w[3] | D.w[2]) && !(D.w[1] >> 63)) { /* D < 2^127: the same coins in 128-bit words */
    dpo__u128 n = ((dpo__u128)N.w[1] << 64) | N.w[0], d = ((dpo__u128)D.w[1] << 64) | D.w[0];
    for (dpo__u128 Dk = d; !(Dk >> 127); Dk += d, k++) { /* Dk = D k < 2^127 */
      if (n >= Dk) continue; /* Bernoulli(>= 1) */
      if (!n || !dpo__bern_frac128(bits, n, Dk)) return (int)(k & 1u);
    }
    /* D k >= 2^127: the 256-bit loop goes on from this k */
  }
  for (;;) {
    dpo__u256 Dk = u256_mul64(&D, k);
    if (!dpo__bern_frac(bits, N, &Dk)) break;
    k++;
  }
  return (int)(k & 1u);
}

int dpo_mech_bernoulli_exp(dpo_rng_t *rng, uint64_t num, uint64_t den, int *out) {
  if (!rng || !out || den == 0) return dpo_err(DPO_EINVAL, "bernoulli_exp: need rng and den > 0");
  dpo__bits_t bits = {rng, 0, 0};
  *out = dpo__bern_exp(&bits, u256_from(num), u256_from(den));
  return DPO_OK;
}

/* ------------------------------------------------------------ discrete Laplace / Gaussian */

#define DPO__TMAX ((uint64_t)1 << 50)

int dpo_mech_discrete_laplace(dpo_rng_t *rng, uint64_t t, int64_t *k) {
  if (!rng || !k || t < 1 || t > DPO__TMAX)
    return dpo_err(DPO_EINVAL, "discrete Laplace: scale t=%llu must be in [1, 2^50]",
                   (unsigned long long)t);
  dpo__ws_t ws = DPO__WS_INIT(rng);
  return dpo__ct_dlap(&ws, t, k);
}

#define DPO__SMAX ((uint64_t)1 << 44)

int dpo_mech_discrete_gaussian(dpo_rng_t *rng, uint64_t sigma, int64_t *k) {
  if (!rng || !k || sigma < 1 || sigma > DPO__SMAX)
    return dpo_err(DPO_EINVAL, "discrete Gaussian: sigma=%llu must be in [1, 2^44]",
                   (unsigned long long)sigma);
  dpo__ws_t ws = DPO__WS_INIT(rng);
  return dpo__ct_dgauss(&ws, sigma, k);
}

int dpo__mech_dgauss_n(dpo_rng_t *rng, uint64_t sigma, int64_t n, int64_t *k) {
  if (!rng || (!k && n > 0) || n < 0 || sigma < 1 || sigma > DPO__SMAX)
    return dpo_err(DPO_EINVAL, "discrete Gaussian: sigma=%llu must be in [1, 2^44], n=%lld >= 0",
                   (unsigned long long)sigma, (long long)n);
  dpo__ws_t ws = DPO__WS_INIT(rng);
  int rc = DPO_OK;
  for (int64_t i = 0; i < n && !rc; i++) {
    ws.left = 0; /* a draw's unused words are dropped, as a scalar call drops them: the same
                  * stream; the divisions cached in ws depend on sigma only (public) */
    rc = dpo__ct_dgauss(&ws, sigma, &k[i]);
  }
  return rc;
}

/* ------------------------------------------------------------ Polya (negative binomial) shares
 *
 * Distributed discrete Laplace for secure aggregation (src/privacy/secagg.c).  Goryczka & Xiong
 * (2017, "A comprehensive comparison of multiparty secure additions with differential
 * privacy", IEEE TDSC), and the infinite divisibility of the negative binomial:
 *   NB(r, q): P(X = k) = Gamma(k + r) / (k! Gamma(r)) (1 - q)^r q^k,  pgf ((1-q)/(1-qs))^r,
 * so a sum of n independent NB(1/n, q) is NB(1, q) = Geometric(q), and with Xi, Yi ~ NB(1/n, q)
 * all independent, sum_{i<n} (Xi - Yi) = G1 - G2 is EXACTLY the discrete Laplace
 * P(k) ~ q^|k| (see parties.c (1)); with q = exp(-1/t) that is dpo_mech_discrete_laplace(t).
 * More than n such shares sum to that discrete Laplace plus independent noise.
 *
 * The sampler (exact: integer arithmetic and exact Bernoullis only).  NB(r, q) is compound
 * Poisson with Levy measure nu(k) = r q^k / k, k >= 1 (log pgf = r sum_k q^k (s^k - 1) / k): X
 * is the sum of the points of a Poisson process on {1, 2, ...} with intensity nu.  Split it in
 * regions R: the dyadic blocks [2^j, 2^{j+1}), j < J, and the tail [K0, oo), K0 = 2^J >= 2t.
 * (a) A coin for R: a proposal k ~ pi on R, success with probability nu(k) / pi(k) <= 1: the
 *     success probability is lambda_R = nu(R) and, given success, k ~ nu|R / lambda_R.
 *     block j: k uniform (pi = 2^-j), ratio = (1/n) (2^j / k) exp(-k/t);
 *     tail: k = K0 + m t + u, m ~ Geometric(1/2) (pi(m) = 2^-(m+1)), u uniform on [0, t):
 *       ratio = (1/n) (t / k) (2/e) exp(-(K0 - t)/t) (2/e)^m exp(-u/t),  every factor <= 1.
 *     Bernoulli(exp(-a/b)) is CKS Alg. 1; Bernoulli(2/e): K = the first k >= 1 with
 *     Bernoulli(1/k) = 0 has P(K = k) = (k-1)/k! and P(K odd) = 1/e (CKS Alg. 1 at gamma = 1);
 *     answer 1 if K is odd, else Bernoulli(k / ((k+1)(k-1))) = P(K = k+1) / P(K = k): the even
 *     K then add P(K odd) again, 2/e in all.  Rational Bernoullis by lazy bit comparison.
 * (b) Poisson(lambda_R) points from the coin (lambda_R <= 1/n <= 1/2): flip it until it fails
 *     (the successes N ~ Geometric, P(N = k) = (1 - lambda) lambda^k, their marks i.i.d. from
 *     nu|R / lambda_R and independent of N) and accept with probability 1/N! (N Bernoulli(1/i));
 *     else redo.  Accepted, P(N = k) ~ lambda^k / k!: Poisson(lambda_R), marks unchanged (the
 *     Bernoulli-factory Poisson generator of Flajolet, Pelletier & Soria 2011, "On Buffon
 *     machines and numbers", SODA).  Expected work O(J) coin flips per variate (J ~ log2 t).
 * n = 1: the share is one discrete Laplace (CKS Alg. 2), the same law.  The only failure is
 * an error (never a biased sample) with probability < 2^-1000 (m or the mark sum too large).
 * The code (mech_ct.c, dpo__ct_polya) draws every part of every coin and pads the number of
 * coins to a public bound: the same law, in work independent of the variate. */

int dpo_mech_polya(dpo_rng_t *rng, uint64_t t, uint64_t n, int64_t *x) {
  if (!rng || !x || t < 1 || t > DPO__TMAX || n < 1 || n > ((uint64_t)1 << 32))
    return dpo_err(DPO_EINVAL, "Polya: need 1 <= t <= 2^50 and 1 <= n <= 2^32 (t %llu, n %llu)",
                   (unsigned long long)t, (unsigned long long)n);
  dpo__ws_t ws = DPO__WS_INIT(rng);
  if (n == 1) { /* NB(1, q) = Geometric(q) = U + t V as in CKS Alg. 2 (no sign) */
    uint64_t g;
    int rc = dpo__ct_geom(&ws, t, &g);
    if (!rc) *x = (int64_t)g;
    return rc;
  }
  return dpo__ct_polya(&ws, t, n, x);
}

int dpo_mech_dlaplace_polya_share(dpo_rng_t *rng, uint64_t t, uint64_t n, int64_t *z) {
  if (!rng || !z || t < 1 || t > DPO__TMAX || n < 1 || n > ((uint64_t)1 << 32))
    return dpo_err(DPO_EINVAL, "Polya share: need 1 <= t <= 2^50 and 1 <= n <= 2^32 (t %llu, "
                   "n %llu)", (unsigned long long)t, (unsigned long long)n);
  dpo__ws_t ws = DPO__WS_INIT(rng);
  if (n == 1) return dpo__ct_dlap(&ws, t, z); /* G1 - G2 itself */
  int64_t x, y;
  int rc = dpo__ct_polya2(&ws, t, n, &x, &y);
  if (!rc) *z = x - y;
  return rc;
}

/* ------------------------------------------------------------ grid mechanisms */

int dpo_mech_grid(double scale, double *lambda) {
  if (!lambda) return dpo_err(DPO_EINVAL, "mech_grid: NULL output");
  if (!(scale > 0) || !isfinite(scale) || scale < 0x1p-960 || scale > 0x1p960)
    return dpo_err(DPO_EINVAL, "noise scale %g must be finite, > 0 and in [2^-960, 2^960]", scale);
  int e;
  double f = frexp(scale * 0x1p-40, &e); /* exact: a power-of-two scaling of a normal number */
  *lambda = f == 0.5 ? ldexp(1.0, e - 1) : ldexp(1.0, e);
  return DPO_OK;
}

#ifdef DPO_TEST_SWITCHES
/* Test builds only (privacy/test_switches.h): dpopt-test audit --test-break-noise sets this
 * below 1 to check that the audit catches a broken mechanism.  Not in libdpopt.so. */
static double dpo__noise_factor = 1.0;
void dpo__test_noise_factor(double factor) { dpo__noise_factor = factor > 0 ? factor : 1.0; }
double dpo__test_noise_factor_get(void) { return dpo__noise_factor; }
#endif

/* Shared body: check inputs first (so a failure modifies nothing), then add Lambda * K. */
static int dpo__mech_grid_add(dpo_rng_t *rng, double scale, int gauss, double *v, int64_t d) {
  double lam;
#ifdef DPO_TEST_SWITCHES
  scale *= dpo__noise_factor;
#endif
  int st = dpo_mech_grid(scale, &lam);
  if (st) return st;
  if (!rng) return dpo_err(DPO_EINVAL, "mechanism: NULL rng");
  if (d < 0 || (d > 0 && !v)) return dpo_err(DPO_EINVAL, "mechanism: bad vector (d=%lld)", (long long)d);
  uint64_t t = (uint64_t)ceil(scale / lam); /* scale/lam is exact, in (2^39, 2^40] */
  for (int64_t i = 0; i < d; i++) {
    if (!isfinite(v[i]))
      return dpo_err(DPO_EINVAL, "mechanism: v[%lld] is not finite", (long long)i);
    if (!(fabs(v[i] / lam) < 0x1p100))
      return dpo_err(DPO_EINVAL, "mechanism: |v[%lld]| = %g is too large for noise scale %g",
                     (long long)i, fabs(v[i]), scale);
  }
  dpo__ws_t ws = DPO__WS_INIT(rng);
  for (int64_t i = 0; i < d; i++) {
    __int128 n = (__int128)rint(v[i] / lam); /* exact snapping to the grid */
    int64_t K;
    st = gauss ? dpo__ct_dgauss(&ws, t, &K) : dpo__ct_dlap(&ws, t, &K);
    if (st) return st;
    /* the exact integer n + K, rounded once to double (post-processing of the exact output:
     * never fl(n + fl(K)), whose double rounding would depend on n and K separately) */
    v[i] = (double)(n + K) * lam;
  }
  return DPO_OK;
}

int dpo_mech_laplace(dpo_rng_t *rng, double b, double *v, int64_t d) {
  return dpo__mech_grid_add(rng, b, 0, v, d);
}

int dpo_mech_gaussian(dpo_rng_t *rng, double sigma, double *v, int64_t d) {
  return dpo__mech_grid_add(rng, sigma, 1, v, d);
}

int dpo_mech_laplace_sample(dpo_rng_t *rng, double b, double *x) {
  if (!x) return dpo_err(DPO_EINVAL, "laplace_sample: NULL output");
  double v = 0;
  int st = dpo__mech_grid_add(rng, b, 0, &v, 1);
  if (st == DPO_OK) *x = v;
  return st;
}

int dpo_mech_gaussian_sample(dpo_rng_t *rng, double sigma, double *x) {
  if (!x) return dpo_err(DPO_EINVAL, "gaussian_sample: NULL output");
  double v = 0;
  int st = dpo__mech_grid_add(rng, sigma, 1, &v, 1);
  if (st == DPO_OK) *x = v;
  return st;
}

/* ------------------------------------------------------------ privacy of the mechanisms */

int dpo_mech_laplace_eps(double delta1, double b, int64_t d, double *eps) {
  double lam;
  if (!eps || !(delta1 >= 0) || !isfinite(delta1) || d < 1 || d > ((int64_t)1 << 53))
    return dpo_err(DPO_EINVAL, "laplace_eps: need sensitivity >= 0 (got %g) and d >= 1", delta1);
  int st = dpo_mech_grid(b, &lam);
  if (st) return st;
  /* (thesis Thm 4.1.2) with the snapped sensitivity Delta1 + d*Lambda */
  double sens = dpo__add_up(delta1, dpo__mul_up((double)d, lam));
  *eps = dpo__div_up(sens, b);
  if (!isfinite(*eps)) return dpo_err(DPO_EINVAL, "laplace_eps: eps overflows");
  return DPO_OK;
}

/* classic calibration constant sqrt(2 ln(1.25/delta)), rounded up */
static int dpo__gauss_c(double delta, double *c) {
  if (!(delta > 0 && delta < 1))
    return dpo_err(DPO_EINVAL, "Gaussian mechanism: delta=%g must be in (0, 1)", delta);
  double l = dpo__widen_up(log(dpo__div_up(1.25, delta)));
  *c = dpo__sqrt_up(2.0 * l);
  return DPO_OK;
}

int dpo_mech_gaussian_eps(double delta2, double sigma, double delta, int64_t d, double *eps) {
  double lam, c;
  if (!eps || !(delta2 >= 0) || !isfinite(delta2) || d < 1 || d > ((int64_t)1 << 53))
    return dpo_err(DPO_EINVAL, "gaussian_eps: need sensitivity >= 0 (got %g) and d >= 1", delta2);
  int st = dpo_mech_grid(sigma, &lam);
  if (st) return st;
  if ((st = dpo__gauss_c(delta, &c))) return st;
  double sens = dpo__add_up(delta2, dpo__mul_up(dpo__sqrt_up((double)d), lam));
  double e = dpo__div_up(dpo__mul_up(sens, c), sigma);
  /* sigma = Delta2 sqrt(2 ln(1.25/delta))/eps is (eps, delta)-DP only for eps < 1
   * (Dwork-Roth 2014, Thm A.1) */
  if (!(e < 1))
    return dpo_err(DPO_EINVAL,
                   "Gaussian mechanism: classic calibration gives eps=%g >= 1 where it is not "
                   "valid (sigma=%g, Delta2=%g, delta=%g)", e, sigma, delta2, delta);
  *eps = e;
  return DPO_OK;
}

int dpo_mech_laplace_scale(double delta1, double eps, int64_t d, double *b) {
  if (!b || !(delta1 > 0) || !isfinite(delta1) || !(eps > 0) || !isfinite(eps))
    return dpo_err(DPO_EINVAL, "laplace_scale: need sensitivity > 0, eps > 0");
  double x = dpo__div_up(delta1, eps), e;
  for (int it = 0; it < 200; it++) {
    int st = dpo_mech_laplace_eps(delta1, x, d, &e);
    if (st) return st;
    if (e <= eps) {
      *b = x;
      return DPO_OK;
    }
    x = nextafter(dpo__mul_up(x, dpo__div_up(e, eps)), INFINITY);
  }
  return dpo_err(DPO_ENOCONV, "laplace_scale: no scale found for eps=%g", eps);
}

int dpo_mech_gaussian_sigma(double delta2, double eps, double delta, int64_t d, double *sigma) {
  double c, e;
  if (!sigma || !(delta2 > 0) || !isfinite(delta2) || !(eps > 0) || !(eps < 1))
    return dpo_err(DPO_EINVAL, "gaussian_sigma: need sensitivity > 0 and 0 < eps < 1 (classic "
                               "calibration), got eps=%g", eps);
  int st = dpo__gauss_c(delta, &c);
  if (st) return st;
  double x = dpo__div_up(dpo__mul_up(delta2, c), eps);
  for (int it = 0; it < 200; it++) {
    st = dpo_mech_gaussian_eps(delta2, x, delta, d, &e);
    if (st == DPO_OK && e <= eps) {
      *sigma = x;
      return DPO_OK;
    }
    if (st && st != DPO_EINVAL) return st;
    x = nextafter(dpo__mul_up(x, st ? 2.0 : dpo__div_up(e, eps)), INFINITY);
  }
  return dpo_err(DPO_ENOCONV, "gaussian_sigma: no sigma found for eps=%g", eps);
}
