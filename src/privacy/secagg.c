/* Secure aggregation with distributed discrete Gaussian noise (privacy.trust = secagg, issue 12).
 * API in include/dpopt/parties.h ("secure aggregation").
 *
 * ---------------------------------------------------------------- the protocol, per release
 * Every rank r holds its local sum v_r in R^d (the clipped gradient sum over its rows of the
 * batch).  With gamma = 2^e (a public power of two), U_r uniform in [0,1)^d (this rank's secure
 * stream), Z_r in Z^d and the pairwise keys k_{rs}:
 *   (1) encode     x_r = floor(v_r / gamma + U_r)               (randomized rounding, unbiased)
 *   (2) noise      x_r += Z_r,  Z_r ~ N_Z(0, sigma^2)^d if r leads a party, else 0
 *   (3) mask       y_r = x_r + sum_{s > r} M_{rs} - sum_{s < r} M_{sr}   (mod 2^w, w = 32 or 64;
 *                  s over the neighbours of r in the mask graph: "cheaper rounds" below)
 *                  M_{rs} = ChaCha20-IETF(key k_{rs}, nonce = release number) as d words
 *   (4) reduce     rank 0 receives Y = sum_r y_r = sum_r x_r (mod 2^w): the masks cancel
 *   (5) decode     total = gamma * int_w(Y)  (two's complement)
 * Keys: every rank draws an X25519 key pair from libsodium's CSPRNG (never the seeded stream),
 * the public keys are allgathered once per run, and k_{rs} = BLAKE2b(X25519(sk_r, pk_s) ||
 * pk_min || pk_max) (libsodium's recommended hashing of a raw scalarmult).  The nonce is the
 * release counter kept by each rank (not sent by the coordinator), so a mask is never reused.
 * Without party identity keys the allgather is not authenticated: the MPI transport is trusted
 * not to substitute keys (doc/design.md, "Threat model"); with them (dpo_secagg_create_auth)
 * every rank's public key travels with its party's Ed25519 signature over (the key, the plan
 * digest, a run nonce, the rank), checked by every other rank before any key is used.  A round in which any rank failed is withheld (step (4) is
 * not run): a sum without one rank's data or noise share is not the release that was charged.
 * What a coalition sees: the honest ranks' y_r are uniform among the vectors with their sum
 * (each carries masks with honest neighbours whose keys it does not know; the mask graph keeps
 * the honest ranks connected: "cheaper rounds" below), and Y.  Ranks on a reduction-tree path
 * see partial sums, sums of y_r: nothing more.
 *
 * Why Z_{2^w} rather than a prime field: the masked sum needs only a group in which the masks
 * are uniform; unsigned 32- and 64-bit arithmetic wraps natively (MPI_SUM on MPI_UINT32_T /
 * MPI_UINT64_T, C unsigned overflow is defined), a ChaCha20 word is uniform on Z_{2^w}, and no
 * modular reduction or rejection sampling of masks is needed.  A field buys nothing for a sum.
 *
 * Range (no wrap of the data): one example's clipped gradient has |coordinate| <= S2/2 <= S2,
 * so |sum_r x_r - sum_r Z_r| <= m S2 / gamma + ranks (the rounding adds < 1 per rank).  The
 * caller refuses (data-free: dpo_secagg_check_range) a batch with m S2 / gamma + ranks > 2^62.  The noise: a sum of
 * P discrete Gaussians is (P sigma^2)-subgaussian (Canonne-Kamath-Steinke 2020, Cor. 9), so
 * P(|sum Z_j| > 2^62) <= 2 exp(-2^124 / (2 P sigma^2)); sigma is refused above 2^50 / sqrt(P),
 * making it <= 2 exp(-2^23) per coordinate.  Even then a wrap is a deterministic function of
 * the DP output sum_r x_r (reduction mod 2^64), i.e. post-processing: it costs NO privacy, only
 * accuracy, so no delta is charged for it and the noise is not truncated (truncation would
 * change the distribution the accounting is for).  The ledger label says so.
 *
 * Why the distributed discrete Gaussian and not Skellam (Agarwal, Kairouz, Liu 2021): the
 * Skellam sum is exactly Skellam (Poisson is infinitely divisible), but an exact Poisson(mu)
 * sampler in integer arithmetic costs O(mu) Bernoulli(exp(-x)) draws, and at the scales
 * needed here (sigma ~ 64 sqrt(d) / rho, mu = sigma^2 / 2 ~ 1e7..1e10) that is far too slow;
 * the exact discrete Gaussian sampler of mechanism.c (CKS 2020 Alg. 3) costs O(1) expected
 * draws, and KLS 2021 Thm 1 accounts the sum of independent shares exactly (the tau term).
 *
 * ---------------------------------------------------------------- privacy (the charge)
 * Sensitivity of the encoded sum.  Replace-one: one example changes one rank's v_r by at most
 * Delta2 = S2 in L2 (the other ranks' sums do not move).  Couple the neighbours on the same U
 * (the rounding randomness is independent of the data): floor(a + u) - floor(b + u) is 0 when
 * a = b and at most ceil(|a - b|) <= |a - b| + 1 in absolute value otherwise, so
 *   ||x_r - x'_r||_2 <= || |v_r - v'_r| / gamma + 1 ||_2 <= Delta2 / gamma + sqrt(d)  =: Delta
 * (Minkowski).  For each fixed U the release is the mechanism below with sensitivity Delta,
 * and the Renyi divergence of the mixtures over U is at most the sup over U (quasi-convexity
 * of D_alpha / joint convexity of exp((alpha - 1) D_alpha)), so the bound holds unconditionally:
 * no delta for the rounding (unlike the conditional rounding of Kairouz-Liu-Steinke).
 *
 * Noise.  Kairouz, Liu, Steinke (2021), "The Distributed Discrete Gaussian Mechanism for
 * Federated Learning with Secure Aggregation", ICML, Theorem 1 (Prop. 14 of the arXiv version):
 * for n independent Z_i ~ N_Z(0, sigma^2)^d, sigma >= 1/2, and any Delta-vector h in Z^d,
 *   D_alpha(sum_i Z_i || sum_i Z_i + h) <= alpha eps^2 / 2   for all alpha >= 1,
 *   eps = min{ sqrt(||h||_2^2 / (n sigma^2) + tau d / 2),  ||h||_2 / (sqrt(n) sigma) + tau sqrt(d) },
 *   tau = 10 sum_{k=1}^{n-1} exp(-2 pi^2 sigma^2 k / (k + 1)).
 * (n = 1: tau = 0, the single discrete Gaussian of Canonne-Kamath-Steinke 2020, Thm 4.)
 * That is the ledger's "rdp-rho" release with rho = eps.
 *
 * Honest minority (privacy.collude = k).  Every party leader adds one share N_Z(0, sigma^2).
 * Up to k of the P parties (the coordinator's own party included) may pool what they know:
 * their shares, their data and the masks they share.  Subtracting their shares leaves the sum
 * of the n = P - k honest parties' shares: the theorem above with n = P - k.  sigma is the
 * smallest integer for which eps(P - k, sigma, Delta, d) <= rho_target, so the guarantee holds
 * against any coalition of size <= k; the released total carries P sigma^2 of variance (the
 * price of the honest-minority assumption: P / (P - k) times the central variance).
 *
 * ---------------------------------------------------------------- pure eps (delta = 0)
 * With privacy.delta = 0 the release is a distributed discrete LAPLACE instead (step (2)):
 * every party leader adds Z_r = X_r - Y_r per coordinate, X_r, Y_r ~ NB(1/n, e^{-1/t})
 * independent Polya variates, n = P - k (dpo_mech_dlaplace_polya_share; exact sampler and
 * derivation in mechanism.c).  Goryczka & Xiong (2017, IEEE TDSC, "A comprehensive comparison
 * of multiparty secure additions with differential privacy"): the n honest shares sum to
 * EXACTLY the discrete Laplace P(z) ~ exp(-|z|/t) (NB is infinitely divisible: the n-fold
 * sum of NB(1/n, q) is NB(1, q) = Geometric(q), and G1 - G2 is the discrete Laplace); the
 * remaining P - n shares add independent noise (post-processing).  Sensitivity, in L1: the
 * same coupling on U gives ||x_r - x'_r||_1 <= sum_j (|v_j - v'_j| / gamma + 1) <=
 * Delta1 / gamma + d =: Delta, and the discrete Laplace on Z^d is (Delta / t)-DP for integer
 * shifts of L1 norm <= Delta (pmf ratio exp(||h||_1 / t)); the sup over U again bounds the
 * mixture.  So the release is charged as a pure "laplace" release with eps = Delta / t
 * (rounded up; dpo_secagg_lap_params picks gamma with Delta1/gamma in [1024, 2048) d, so the
 * rounding inflates the sensitivity by at most 1/1024, and t = ceil(Delta / eps_target)).
 * Range: t <= 2^50; P(|sum of the shares| > 2^62) is below 2 P e^{-2^11}, and a wrap is
 * post-processing as above.  The released total carries (P/n) times the variance of the
 * discrete Laplace (the honest-minority price, as for the Gaussian).
 */
#include "dpopt/parties.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"
#ifdef DPO_TEST_SWITCHES
#include "privacy/test_switches.h"
#endif
#include "mech_ct.h" /* dpo__mech_dgauss_n: the shares by vector */
#include "rounding.h"

struct dpo_secagg {
  MPI_Comm comm;
  int rank, size;
  int noise;                 /* 1: this rank adds its party's noise share */
  dpo_rng_t *rng;            /* borrowed: the rank's secure stream */
  unsigned char *keys;       /* [size][32] pairwise keys (own slot unused) */
  uint64_t release;          /* releases made (the nonce of the next masks) */
  uint64_t *buf, *mask;      /* [d] */
  uint32_t *buf32;           /* [d]: the words of a 32-bit round */
  int64_t cap;
  int *nbr, nnbr;            /* the ranks this rank shares masks with (the mask graph) */
  int by_release;            /* seeded stream placed by release number (first + release) */
  uint64_t first;
};

/* ---------------------------------------------------------------- parameters */

int dpo_secagg_eps(double delta, double sigma, int n, int64_t d, double *eps) {
  if (!(delta > 0) || !isfinite(delta) || !(sigma >= 0.5) || n < 1 || d < 1 || !eps)
    return dpo_err(DPO_EINVAL, "secagg eps: Delta %g, sigma %g, n %d, d %lld", delta, sigma, n,
                   (long long)d);
  /* tau, rounded up: each exp() widened (libm is not correctly rounded) */
  double tau = 0.0;
  for (int k = 1; k < n; k++) {
    double e = dpo__widen_up(exp(-2.0 * M_PI * M_PI * sigma * sigma * k / (k + 1.0)));
    tau = dpo__add_up(tau, e);
  }
  tau = dpo__mul_up(tau, 10.0);
  double ns2 = dpo__mul_down((double)n, dpo__mul_down(sigma, sigma));
  double a = dpo__sqrt_up(dpo__add_up(dpo__div_up(dpo__mul_up(delta, delta), ns2),
                                      dpo__mul_up(tau, (double)d / 2.0)));
  double b = dpo__add_up(dpo__div_up(delta, dpo__mul_down(sqrt((double)n) * (1 - 1e-15), sigma)),
                         dpo__mul_up(tau, dpo__sqrt_up((double)d)));
  *eps = a < b ? a : b;
  return DPO_OK;
}

int dpo_secagg_check_range(int64_t m, double delta2, double gamma, int ranks) {
  /* m rows of |coordinate| <= delta2 each, in units of gamma, plus one rounding unit a rank */
  if (!((double)m * delta2 / gamma + ranks <= 0x1p62))
    return dpo_err(DPO_EINVAL, "secagg: a batch of %lld rows with sensitivity %g exceeds the "
                   "fixed-point range 2^62 at gamma = %g", (long long)m, delta2, gamma);
  return DPO_OK;
}

int dpo_secagg_params(double delta2, int64_t d, int P, int collude, double rho_target,
                      double *gamma, uint64_t *sigma, double *rho, double *delta_enc) {
  if (!(delta2 > 0) || !isfinite(delta2) || d < 1 || P < 1 || collude < 0 || collude >= P ||
      !(rho_target > 0) || !isfinite(rho_target))
    return dpo_err(DPO_EINVAL, "secagg: sensitivity %g, d %lld, %d parties, collude %d, rho %g: "
                   "need sensitivity > 0, 0 <= collude < parties, rho > 0", delta2,
                   (long long)d, P, collude, rho_target);
  /* gamma: the power of two with Delta2/gamma in [64, 128) sqrt(d), so the rounding inflation
   * sqrt(d) is at most 1/64 of the scaled sensitivity */
  int e;
  frexp(delta2 / (64.0 * sqrt((double)d)), &e); /* x = f 2^e, f in [0.5, 1) */
  double g = ldexp(1.0, e - 1);                 /* <= x < 2g */
  double D = dpo__add_up(dpo__div_up(delta2, g), dpo__sqrt_up((double)d));
  const int n = P - collude;
  double s0 = ceil(D / (sqrt((double)n) * rho_target));
  if (s0 < 1) s0 = 1;
  if (!(s0 <= ldexp(1.0, 50) / sqrt((double)P)))
    return dpo_err(DPO_EINVAL, "secagg: the per-release target rho = %g needs a noise share "
                   "sigma = %g above 2^50/sqrt(P): too small a budget per step", rho_target, s0);
  uint64_t s = (uint64_t)s0;
  double r;
  for (;;) {
    int rc = dpo_secagg_eps(D, (double)s, n, d, &r);
    if (rc) return rc;
    if (r <= rho_target) break;
    s += 1 + s / 1024;
  }
  *gamma = g;
  *sigma = s;
  *rho = r;
  if (delta_enc) *delta_enc = D;
  return DPO_OK;
}

int dpo_secagg_lap_params(double delta1, int64_t d, double eps_target, double *gamma,
                          uint64_t *t, double *eps, double *delta_enc) {
  if (!(delta1 > 0) || !isfinite(delta1) || d < 1 || !(eps_target > 0) || !isfinite(eps_target))
    return dpo_err(DPO_EINVAL, "secagg (Laplace): sensitivity %g, d %lld, eps %g: need "
                   "sensitivity > 0, eps > 0", delta1, (long long)d, eps_target);
  int e;
  frexp(delta1 / (1024.0 * (double)d), &e); /* x = f 2^e, f in [0.5, 1) */
  double g = ldexp(1.0, e - 1);             /* Delta1/g in [1024 d, 2048 d) */
  double D = dpo__add_up(dpo__div_up(delta1, g), (double)d);
  double t0 = ceil(dpo__div_up(D, eps_target));
  if (t0 < 1) t0 = 1;
  if (!(t0 <= 0x1p50))
    return dpo_err(DPO_EINVAL, "secagg (Laplace): the per-release eps = %g needs a discrete "
                   "Laplace scale t = %g above 2^50: too small a budget per step", eps_target, t0);
  *gamma = g;
  *t = (uint64_t)t0;
  *eps = dpo__div_up(D, t0);
  if (delta_enc) *delta_enc = D;
  return DPO_OK;
}

/* ---------------------------------------------------------------- party-local sampling
 * DP-SGD with Poisson batches under secagg (sco_dpsgd.c, privacy.neighbours = add-remove).
 * Every rank keeps each of ITS OWN rows independently with probability q = m / n_pub (public
 * m and n_pub) on its own secret stream: the coins never leave the rank, nobody else -- the
 * coordinator and the other parties included -- learns which rows were kept or how many.  The
 * release of step t is, in fixed point,
 *   Y = sum_r floor(v_r / gamma + U_r) + sum_{honest j} Z_j + sum_{colluding j} Z_j,
 * v_r the clipped gradient sum over the rows rank r kept, Z_j ~ N_Z(0, s^2)^d the party shares.
 * Claim: against any coalition C of <= k parties (the coordinator's included) that sees Y, its
 * own rows, coins, shares and masks (the masks between honest parties are uniform and unknown
 * to C, so the honest parties' masked vectors tell it nothing beyond their sum), the run is
 * the Poisson-subsampled Gaussian mechanism of multiplier
 *   z = sigma_h / Delta,  sigma_h = gamma s sqrt(P - k),  Delta = S2 + gamma sqrt(d)
 * (S2: a row's L2 clip), composed over the T steps; charged as central charges it.
 * Argument.  Neighbours differ in one row x of an honest party h (a row of a colluding party
 * is known to C: nothing to protect).  Fix everything C does not see except x's coin b ~
 * Bernoulli(q): the other rows' coins (the same product law under both neighbours, because
 * each coin is independent of the others and of the data: the geometric-gap sampler has
 * exactly the law of independent coins, privacy/sample.h) and the rounding uniforms U.  Then,
 * as in the coupling above, h's encoded sum with x kept differs from the one without x by an
 * integer vector e with ||e||_2 <= S2 / gamma + sqrt(d) = Delta / gamma, so C sees
 *   D:  A + b e + W,   D': A + W,   b ~ Bernoulli(q),  W = the sum of the P - k honest shares,
 * A known to C.  W is (up to the tau term below) the discrete Gaussian N_Z(0, (P-k) s^2)^d,
 * so this is the subsampled Gaussian pair of Abadi et al. 2016 / Mironov, Talwar, Zhang 2019:
 * (1 - q) N(0) + q N(e) vs N(0), whose RDP (rdp.c) and PLD (pld.c) bounds the ledger already
 * applies to the central grid Gaussian (discrete noise on a lattice with the same privacy
 * loss as the continuous one, Canonne-Kamath-Steinke 2020), at ||e|| <= Delta / gamma and
 * noise sqrt(P - k) s: multiplier z.  The bound for each fixed (coins of the other rows, U)
 * is the same, and both the hockey-stick divergences (PLD) and exp((alpha - 1) D_alpha) (RDP)
 * are jointly convex, so the mixture over them obeys it too; the T steps use fresh coins,
 * U, shares and masks, so they compose adaptively (the ledger's composition).
 * tau: W is a sum of P - k independent discrete Gaussians, not one.  Completing the square in
 * the convolution of N_Z(0, j s^2) with N_Z(0, s^2) and Poisson summation (the argument behind
 * Kairouz, Liu, Steinke 2021, Thm 1) give a pmf within a factor exp(+-tau) of N_Z(0, (P-k)s^2)
 * per coordinate, tau = 10 sum_{j=1}^{P-k-1} exp(-2 pi^2 s^2 j / (j + 1)) <= 10 P e^{-pi^2 s^2}.
 * dpo_secagg_sampled_share refuses s < 16: tau < 10 P e^{-2526} < 1e-1090, so over d < 2^31
 * coordinates and T < 2^63 steps the probability of any event moves by a factor below
 * exp(1e-1060): the guarantee is (eps + 1e-1060, delta (1 + 1e-1060)), a change below the
 * resolution of any double the ledger can hold (stated, not charged).
 * The range: the batch size is random (at most the rank's rows); the data-free check uses the
 * public n_pub, and a larger sample could only wrap (post-processing, accuracy only).
 * Coalitions: C subtracts its k shares and knows its own rows; the guarantee is for the rows of
 * honest parties only, which is what the per-party accounts record.  Not covered: the loader
 * exchanges the row counts of the ranks (global row ids, rows.c): under add-remove the exact
 * sizes are then known to every rank (see README, "Multi-party runs"); nor is timing: a rank's
 * compute time grows with the rows it kept, and nothing pads it. */

int dpo_secagg_fine_step(double delta2, int64_t d, double *gamma, double *sens_c) {
  if (!(delta2 > 0) || !isfinite(delta2) || d < 1)
    return dpo_err(DPO_EINVAL, "secagg: sensitivity %g, d %lld", delta2, (long long)d);
  /* gamma: the power of two with delta2/gamma in [1024, 2048) sqrt(d): the rounding
   * inflation sqrt(d) is at most 1/1024 of the scaled sensitivity */
  int e;
  frexp(delta2 / (1024.0 * sqrt((double)d)), &e);
  double g = ldexp(1.0, e - 1);
  double D = dpo__add_up(dpo__div_up(delta2, g), dpo__sqrt_up((double)d));
  *gamma = g;
  *sens_c = D * g; /* exact: g is a power of two */
  return DPO_OK;
}

int dpo_secagg_sampled_share(double sigma_target, double gamma, int P, int collude,
                             uint64_t *s, double *sigma_h) {
  if (!(sigma_target > 0) || !isfinite(sigma_target) || !(gamma > 0) || P < 1 || collude < 0 ||
      collude >= P)
    return dpo_err(DPO_EINVAL, "secagg: sigma %g, gamma %g, %d parties, collude %d",
                   sigma_target, gamma, P, collude);
  const double n = (double)(P - collude);
  /* sqrt(n) rounded down: sqrt is correctly rounded (IEEE), so one step down bounds it */
  const double rn = nextafter(sqrt(n), 0);
  double s0 = ceil(sigma_target / (gamma * rn));
  if (s0 < 16) s0 = 16; /* the tau term (above) */
  if (!(s0 <= ldexp(1.0, 50) / sqrt((double)P)))
    return dpo_err(DPO_EINVAL, "secagg: a noise share sigma = %g is above 2^50/sqrt(P)", s0);
  while (dpo__mul_down(gamma * s0, rn) < sigma_target) s0 += 1;
  *s = (uint64_t)s0;
  *sigma_h = dpo__mul_down(gamma * s0, rn); /* gamma * s0 exact (power of two) */
  return DPO_OK;
}

/* ---------------------------------------------------------------- the pieces */

int dpo_secagg_encode(dpo_rng_t *rng, const double *v, double gamma, int64_t d, uint64_t *x) {
  for (int64_t j = 0; j < d; j++) {
    double t = v[j] / gamma; /* exact: gamma is a power of two */
    if (!isfinite(t) || !(fabs(t) < 0x1p62))
      return dpo_err(DPO_EINVAL, "secagg: coordinate %lld = %g is out of the fixed-point range "
                     "(gamma %g)", (long long)j, v[j], gamma);
    double f = floor(t), fr = t - f; /* exact for |t| < 2^62 */
    /* Bernoulli(fr) from a 53-bit uniform: floor(t + U) with U on the 2^-53 grid */
    double u = (double)(dpo_rng_u64(rng) >> 11) * 0x1p-53;
    int64_t k = (int64_t)f + (u < fr ? 1 : 0);
    x[j] = (uint64_t)k;
  }
  return DPO_OK;
}

/* the mask stream of (key, nonce = release): nbytes of ChaCha20-IETF into out; the IETF
 * variant's 32-bit block counter covers 256 GiB per nonce: plenty for d words */
static void dpo__mask_stream(const unsigned char key[32], uint64_t release, size_t nbytes,
                             unsigned char *out) {
  unsigned char nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {0};
  for (int i = 0; i < 8; i++) nonce[i] = (unsigned char)(release >> (8 * i));
  crypto_stream_chacha20_ietf(out, (unsigned long long)nbytes, nonce, key);
}

/* word j of the stream, little-endian (endian-independent) */
static inline uint64_t dpo__le(const unsigned char *b, int bytes) {
  uint64_t w = 0;
  for (int i = 0; i < bytes; i++) w |= (uint64_t)b[i] << (8 * i);
  return w;
}

int dpo_secagg_mask(const unsigned char key[32], uint64_t release, int sign, int64_t d,
                    uint64_t *x, uint64_t *scratch) {
  const unsigned char *b = (const unsigned char *)scratch;
  dpo__mask_stream(key, release, (size_t)d * 8, (unsigned char *)scratch);
  for (int64_t j = 0; j < d; j++) {
    const uint64_t w = dpo__le(b + 8 * j, 8);
    x[j] = sign > 0 ? x[j] + w : x[j] - w;
  }
  return DPO_OK;
}

int dpo_secagg_mask32(const unsigned char key[32], uint64_t release, int sign, int64_t d,
                      uint32_t *x, uint32_t *scratch) {
  const unsigned char *b = (const unsigned char *)scratch;
  dpo__mask_stream(key, release, (size_t)d * 4, (unsigned char *)scratch);
  for (int64_t j = 0; j < d; j++) {
    const uint32_t w = (uint32_t)dpo__le(b + 4 * j, 4);
    x[j] = sign > 0 ? x[j] + w : x[j] - w;
  }
  return DPO_OK;
}

/* ---------------------------------------------------------------- cheaper rounds
 * Word width.  The masked sum needs a group in which the decoded total is unique: with words of
 * w bits the reduce returns sum_r x_r mod 2^w, which equals the true integer total when
 * |total| < 2^(w-1).  Kairouz, Liu and Steinke (2021) and TensorFlow Federated's distributed DP
 * use a modulus of 2^32 or less; so does this when a DATA-FREE bound fits:
 *   data:  |sum_r x_r - noise| <= m sens / gamma + ranks   (dpo_secagg_check_range's bound)
 *   noise: Gaussian shares (n_s of them, sigma each): the sum is n_s sigma^2-subgaussian
 *          (Canonne-Kamath-Steinke 2020, Cor. 9), P(|Z| >= B) <= 2 exp(-B^2 / (2 n_s sigma^2));
 *          Polya shares X - Y, X, Y ~ NB(1/n, q), q = e^{-1/t}: the n_s shares' X sum to
 *          NB(r, q), r = n_s / n, whose moment generating function at 1/(2t) is
 *          ((1 - q) / (1 - q^{1/2}))^r = (1 + q^{1/2})^r <= 2^r, so by Markov
 *          P(|Z| >= B) <= P(X >= B) + P(Y >= B) <= 2 2^r e^{-B/(2t)}.
 *   B is chosen so that the union over the d coordinates is <= 2^-64 per release, and w = 32
 *   when data + B + 2 <= 2^31, else 64.  The choice reads only public numbers (m, the public
 *   sensitivity, gamma, the share parameters, d), so it is the same on every rank and says
 *   nothing about the data; the rule is part of the agreed plan (run_parties.c, "~encoding").
 *   A total outside the range (probability <= 2^-64 a release, or a party whose sample exceeds
 *   the public bound) wraps: a deterministic function of the DP output sum mod 2^w, i.e.
 *   post-processing, at no privacy cost (as for 2^64 above).  The masks are uniform on
 *   Z_{2^32}^d (a ChaCha20 word of 32 bits), so the argument of the protocol is unchanged.
 * Mask graph (SecAgg+, Bell, Bohler, Gascon, Lepoint, Raykova 2020).  A rank shares masks only
 * with its neighbours in the circulant graph C_n(1, ..., h), rank r adjacent to r +- 1..h mod n,
 * the Harary graph H_{2h,n}: its vertex connectivity is 2h (Harary 1962), so deleting any
 * c <= 2h - 1 ranks leaves the rest connected.  With c the most ranks a coalition can hold (the
 * ranks of the privacy.collude largest parties, the coordinator's among them), h = floor(c/2)+1
 * (2h >= c + 1), and the complete graph when 2h >= n - 1.  Why connectivity suffices: the
 * coalition sees (functions of) the masked vectors y_r; for the honest ranks H the masks on the
 * edges of a spanning tree of H's induced graph (connected, its pairwise keys unknown to the
 * coalition) are independent uniforms, and adding u to y_a and subtracting it from y_b for each
 * tree edge (a, b) maps (y_r)_{r in H} bijectively onto the vectors with the same sum: so given
 * the coalition's own keys, (y_r)_{r in H} is uniform among the vectors with sum
 * sum_{r in H} x_r + (the masks to the coalition, known to it), and the coalition learns only
 * that honest sum, as with the complete graph.  A disconnected honest graph would reveal each
 * component's sum (a component of one party: its vector with one noise share), which is why
 * the degree grows with c.  Partial sums on a reduction-tree path are sums of y_r: covered.
 * Work per rank and release: 2h masks of d words instead of n - 1. */

int dpo_secagg_word(int64_t m, double sens, double gamma, int ranks, int shares, int64_t d,
                    uint64_t sigma, int lap_n, int *bits) {
  int rc = dpo_secagg_check_range(m, sens, gamma, ranks);
  if (rc) return rc;
  if (shares < 0 || d < 1 || lap_n < 0 || !bits)
    return dpo_err(DPO_EINVAL, "secagg word: %d shares, d %lld, lap_n %d", shares,
                   (long long)d, lap_n);
  const double data = (double)m * sens / gamma + ranks, L = log(2.0 * (double)d) + 64 * M_LN2;
  double B = 0;
  if (shares > 0 && lap_n > 0) {
    const double r = (double)shares / lap_n;
    B = 2.0 * (double)sigma * (L + r * M_LN2);
  } else if (shares > 0) {
    B = (double)sigma * sqrt(2.0 * shares * L);
  }
  *bits = data + B * (1 + 1e-9) + 2 <= 0x1p31 ? 32 : 64;
  return DPO_OK;
}

int dpo_secagg_graph(int n, int corrupt, int rank, int *nbr, int *deg) {
  if (n < 1 || corrupt < 0 || rank < 0 || rank >= n || !nbr || !deg)
    return dpo_err(DPO_EINVAL, "secagg graph: %d ranks, %d corrupt, rank %d", n, corrupt, rank);
  const int h = corrupt / 2 + 1;
  int k = 0;
  if (2 * h >= n - 1) { /* complete */
    for (int s = 0; s < n; s++)
      if (s != rank) nbr[k++] = s;
  } else {
    for (int s = 0; s < n; s++) {
      int dist = s > rank ? s - rank : rank - s;
      if (n - dist < dist) dist = n - dist;
      if (dist >= 1 && dist <= h) nbr[k++] = s;
    }
  }
  *deg = k;
  return DPO_OK;
}

int dpo_secagg_set_graph(dpo_secagg_t *sa, int corrupt) {
  if (!sa) return dpo_err(DPO_EINVAL, "secagg graph: NULL");
  if (sa->release > 0)
    return dpo_err(DPO_EINVAL, "secagg graph: set after %llu releases (every rank must mask "
                   "with the same graph from the first)", (unsigned long long)sa->release);
  return dpo_secagg_graph(sa->size, corrupt, sa->rank, sa->nbr, &sa->nnbr);
}

int dpo_secagg_degree(const dpo_secagg_t *sa) { return sa ? sa->nnbr : 0; }

int dpo_secagg_pair_key(const unsigned char sk[32], const unsigned char pk_mine[32],
                        const unsigned char pk_other[32], unsigned char key[32]) {
  unsigned char q[crypto_scalarmult_BYTES];
  if (crypto_scalarmult(q, sk, pk_other) != 0)
    return dpo_err(DPO_EINVAL, "secagg: X25519 with a degenerate public key");
  const unsigned char *lo = memcmp(pk_mine, pk_other, 32) < 0 ? pk_mine : pk_other;
  const unsigned char *hi = lo == pk_mine ? pk_other : pk_mine;
  crypto_generichash_state h;
  crypto_generichash_init(&h, NULL, 0, 32);
  crypto_generichash_update(&h, q, sizeof q);
  crypto_generichash_update(&h, lo, 32);
  crypto_generichash_update(&h, hi, 32);
  crypto_generichash_final(&h, key, 32);
  sodium_memzero(q, sizeof q);
  return DPO_OK;
}

/* ---------------------------------------------------------------- the collective object */

void dpo_secagg_destroy(dpo_secagg_t *sa) {
  if (!sa) return;
  if (sa->keys) sodium_memzero(sa->keys, (size_t)sa->size * 32);
  free(sa->keys);
  free(sa->nbr);
  free(sa->buf);
  free(sa->buf32);
  free(sa->mask);
  free(sa);
}

#ifdef DPO_TEST_SWITCHES
/* Test builds only (privacy/test_switches.h; dpopt-test train --test-coordinator key). */
static int dpo__test_sub_key = 0;
void dpo__secagg_test_substitute_key(int on) { dpo__test_sub_key = on ? 1 : 0; }
/* (dpopt-test train --test-coordinator run=HEX): rank 0 takes HEX as the new run's id */
static char dpo__test_run_id[65];
void dpo__secagg_test_run_id(const char *hex) {
  snprintf(dpo__test_run_id, sizeof dpo__test_run_id, "%s", hex ? hex : "");
}
#endif

/* A new multi-party run's id: no party chooses it.  Every rank contributes 32 bytes from the
 * OS generator and takes the BLAKE2b hash of all contributions, so the id is fresh as long as
 * one rank is honest (a coordinator cannot make it an old run's, whose budget store records or
 * journals it would then continue), and the parties check that they hold the same one by the
 * plan digest (run_parties.c, "~run"). */
int dpo_secagg_run_id(MPI_Comm comm, char id[65]) {
  int size = 1, rank = 0, rc = DPO_OK;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  unsigned char mine[32], h[32], *all = malloc((size_t)size * 32);
  if (sodium_init() < 0) rc = dpo_err(DPO_EUNSUP, "libsodium failed to initialize");
  else randombytes_buf(mine, sizeof mine);
  if (!all) rc = dpo_err(DPO_ENOMEM, "run id: out of memory");
  if ((rc = dpo_agree(comm, rc))) {
    free(all);
    return rc;
  }
  if (MPI_Allgather(mine, 32, MPI_BYTE, all, 32, MPI_BYTE, comm) != MPI_SUCCESS)
    rc = dpo_err(DPO_EMPI, "run id: MPI_Allgather failed");
  crypto_generichash(h, sizeof h, all, (size_t)size * 32, (const unsigned char *)"dpopt run id 1",
                     14);
  free(all);
  sodium_bin2hex(id, 65, h, sizeof h);
#ifdef DPO_TEST_SWITCHES
  if (rank == 0 && dpo__test_run_id[0]) snprintf(id, 65, "%s", dpo__test_run_id);
#endif
  return dpo_agree(comm, rc);
}

/* What a rank signs with its party's identity key: its key-agreement public key, bound to the
 * agreed plan, to this run (a nonce every rank contributed to, so no old signature replays)
 * and to its rank. */
enum { DPO__KEYMSG = 20 + 32 + 32 + 32 + 4 };
static void dpo__key_msg(const unsigned char pk[32], const unsigned char digest[32],
                         const unsigned char nonce[32], int rank, unsigned char *m) {
  memcpy(m, "dpopt secagg key 1\n", 20);
  memcpy(m + 20, pk, 32);
  memcpy(m + 52, digest, 32);
  memcpy(m + 84, nonce, 32);
  for (int i = 0; i < 4; i++) m[116 + i] = (unsigned char)((unsigned)rank >> (8 * i));
}

int dpo_secagg_create(MPI_Comm comm, int adds_noise, dpo_rng_t *rng, dpo_secagg_t **out) {
  return dpo_secagg_create_auth(comm, adds_noise, rng, NULL, out);
}

/* Authenticated exchange: the run nonce (every rank's random contribution, hashed), then every
 * rank's signature over its public key; each rank verifies every other's with the identity
 * key listed for that rank's party.  Collective; returns this rank's local status. */
static int dpo__secagg_sign(MPI_Comm comm, int rank, int size, const dpo_secagg_auth_t *auth,
                            unsigned char pk[32], unsigned char sk[32], unsigned char sig[64],
                            int rc) {
  unsigned char mine[32], nonce[32], msg[DPO__KEYMSG];
  /* size * 32 bytes: small enough that the key table above (the same size) fails first */
  unsigned char *all = calloc((size_t)size, 32);
  randombytes_buf(mine, sizeof mine);
  if (!all) return dpo_err(DPO_ENOMEM, "secagg: out of memory for the run nonce");
  if (MPI_Allgather(mine, 32, MPI_BYTE, all, 32, MPI_BYTE, comm) != MPI_SUCCESS && !rc)
    rc = dpo_err(DPO_EMPI, "secagg: nonce exchange failed");
  crypto_generichash(nonce, sizeof nonce, all, (size_t)size * 32, NULL, 0);
  free(all);
  dpo__key_msg(pk, auth->digest, nonce, rank, msg);
  crypto_sign_detached(sig, NULL, msg, sizeof msg, auth->sk);
#ifdef DPO_TEST_SWITCHES
  if (rank == 0 && dpo__test_sub_key) crypto_box_keypair(pk, sk); /* publishes another key */
#else
  (void)sk;
#endif
  memcpy(auth->nonce_out, nonce, 32);
  return rc;
}

int dpo_secagg_create_auth(MPI_Comm comm, int adds_noise, dpo_rng_t *rng,
                           const dpo_secagg_auth_t *auth, dpo_secagg_t **out) {
  int rc = DPO_OK;
  dpo_secagg_t *sa = calloc(1, sizeof *sa);
  unsigned char sk[32], pk[96], *all = NULL;
  *out = NULL;
  if (!sa) rc = dpo_err(DPO_ENOMEM, "secagg: out of memory");
  else if (sodium_init() < 0) rc = dpo_err(DPO_EUNSUP, "libsodium failed to initialize");
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int item = auth ? 96 : 32; /* public key, and its signature when authenticated */
  if (!rc) {
    sa->rank = rank;
    sa->size = size;
    sa->comm = comm;
    sa->noise = adds_noise;
    sa->rng = rng;
    sa->keys = calloc((size_t)sa->size, 32);
    sa->nbr = calloc((size_t)sa->size, sizeof *sa->nbr);
    all = calloc((size_t)sa->size, (size_t)item);
    if (!sa->keys || !sa->nbr || !all) rc = dpo_err(DPO_ENOMEM, "secagg: out of memory");
    for (int s = 0; s < size && sa->nbr; s++) /* the complete graph until dpo_secagg_set_graph */
      if (s != rank) sa->nbr[sa->nnbr++] = s;
    if (!rng) rc = dpo_err(DPO_EINVAL, "secagg: no noise stream");
  }
  memset(pk, 0, sizeof pk);
  if (!rc) crypto_box_keypair(pk, sk); /* X25519 key pair from the OS CSPRNG */
  else memset(sk, 0, sizeof sk);
  if (auth) rc = dpo__secagg_sign(comm, rank, size, auth, pk, sk, pk + 32, rc);
  unsigned char *dst = all ? all : malloc((size_t)size * (size_t)item); /* the collective runs */
  if (MPI_Allgather(pk, item, MPI_BYTE, dst, item, MPI_BYTE, comm) != MPI_SUCCESS && !rc)
    rc = dpo_err(DPO_EMPI, "secagg: key exchange failed");
  for (int s = 0; s < size && !rc && auth; s++) {
    unsigned char msg[DPO__KEYMSG];
    if (s == rank) continue;
    dpo__key_msg(all + (size_t)item * s, auth->digest, auth->nonce_out, s, msg);
    if (crypto_sign_verify_detached(all + (size_t)item * s + 32, msg, sizeof msg,
                                    auth->pks + 32 * s) != 0)
      rc = dpo_err(DPO_EINVAL, "rank %d's key-agreement key is not signed by the identity key "
                   "listed for its party (party.%d.public_key) over this plan and run: a "
                   "substituted or unsigned key; the run stops before any release", s,
                   auth->rank_party ? auth->rank_party[s] : s);
  }
  for (int s = 0; s < size && !rc; s++)
    if (s != sa->rank)
      rc = dpo_secagg_pair_key(sk, pk, all + (size_t)item * s, sa->keys + 32 * s);
  sodium_memzero(sk, sizeof sk);
  if (dst != all) free(dst);
  free(all);
  rc = dpo_agree(comm, rc);
  if (rc) {
    dpo_secagg_destroy(sa);
    return rc;
  }
  *out = sa;
  return DPO_OK;
}

uint64_t dpo_secagg_releases(const dpo_secagg_t *sa) { return sa ? sa->release : 0; }

int dpo_secagg_seeded_releases(dpo_secagg_t *sa, uint64_t first) {
  if (!sa) return dpo_err(DPO_EINVAL, "secagg: NULL");
  if (first > ((uint64_t)1 << 30))
    return dpo_err(DPO_EINVAL, "secagg: release %llu is past the stream's places",
                   (unsigned long long)first);
  sa->by_release = sa->rng && dpo_rng_is_seeded(sa->rng);
  sa->first = first - sa->release; /* the next release is number `first` */
  return DPO_OK;
}

/* A seeded stream at release r's own place: 2^32 blocks (256 GiB of stream) a release, far
 * beyond what one release's rounding and shares draw. */
static int dpo__secagg_place(dpo_secagg_t *sa) {
  dpo_rng_state_t st;
  dpo_rng_get_state(sa->rng, &st);
  st.counter = (sa->first + sa->release + 1) << 32;
  st.pos = 0;
  return dpo_rng_set_state(sa->rng, &st);
}

static int dpo__secagg_round(dpo_secagg_t *sa, const double *v, int64_t d, double gamma,
                             uint64_t sigma, uint64_t lap_n, int bits, int ok, double *total,
                             uint64_t *masked);

int dpo_secagg_round(dpo_secagg_t *sa, const double *v, int64_t d, double gamma, uint64_t sigma,
                     int bits, int ok, double *total, uint64_t *masked) {
  return dpo__secagg_round(sa, v, d, gamma, sigma, 0, bits, ok, total, masked);
}

int dpo_secagg_round_lap(dpo_secagg_t *sa, const double *v, int64_t d, double gamma, uint64_t t,
                         int honest, int bits, int ok, double *total, uint64_t *masked) {
  if (honest < 1) ok = 0; /* still runs the collective; the caller checked */
  return dpo__secagg_round(sa, v, d, gamma, t, honest < 1 ? 1 : (uint64_t)honest, bits, ok,
                           total, masked);
}

/* sigma: the Gaussian share's sigma, or (lap_n > 0) the discrete Laplace scale t of the sum of
 * lap_n honest Polya shares */
static int dpo__secagg_round(dpo_secagg_t *sa, const double *v, int64_t d, double gamma,
                             uint64_t sigma, uint64_t lap_n, int bits, int ok, double *total,
                             uint64_t *masked) {
  int rc = DPO_OK;
  if (bits != 32 && bits != 64) { /* the same on every rank (a public argument): withheld */
    rc = dpo_err(DPO_EINVAL, "secagg: words of %d bits (32 or 64)", bits);
    bits = 64;
  }
  if (d > sa->cap) {
    uint64_t *b = realloc(sa->buf, (size_t)d * sizeof *b), *m = NULL;
    if (b) sa->buf = b;
    uint32_t *b32 = NULL;
    if (b && (m = realloc(sa->mask, (size_t)d * sizeof *m))) sa->mask = m;
    if (m && (b32 = realloc(sa->buf32, (size_t)d * sizeof *b32))) sa->buf32 = b32;
    if (!b32) return dpo_err(DPO_ENOMEM, "secagg: out of memory for d = %lld", (long long)d);
    sa->cap = d;
  }
  uint64_t *x = sa->buf;
#ifdef DPO_TEST_SWITCHES /* dpopt-test audit --test-break-noise: the shares' sigma scaled too */
  const double nf = dpo__test_noise_factor_get();
  if (nf != 1.0) sigma = (uint64_t)fmax(1.0, floor((double)sigma * nf));
#endif
  if (ok && sa->by_release) rc = dpo__secagg_place(sa);
  if (ok && !rc) rc = dpo_secagg_encode(sa->rng, v, gamma, d, x);
  if (!ok || rc) memset(x, 0, (size_t)d * sizeof *x); /* the collective still runs */
  /* this rank's party shares: 1 for a party leader in a run, 0 for its other ranks; dpopt
   * audit's virtual parties: one per party (the share count given to dpo_secagg_create) */
  for (int sh = 0; sh < sa->noise && !rc && ok; sh++) {
    if (!lap_n) { /* all d at once (sa->mask as scratch: the masks come after) */
      int64_t *z = (int64_t *)sa->mask;
      if (!(rc = dpo__mech_dgauss_n(sa->rng, sigma, d, z)))
        for (int64_t j = 0; j < d; j++) x[j] += (uint64_t)z[j];
      continue;
    }
    for (int64_t j = 0; j < d && !rc; j++) {
      int64_t z;
      if ((rc = dpo_mech_dlaplace_polya_share(sa->rng, sigma, lap_n, &z))) break;
      x[j] += (uint64_t)z;
    }
  }
  const uint64_t rel = sa->release++; /* every rank counts; never reused, even after a failure */
  uint32_t *x32 = sa->buf32; /* 32-bit words: x mod 2^32 */
  if (bits == 32)
    for (int64_t j = 0; j < d; j++) x32[j] = (uint32_t)x[j];
  for (int i = 0; i < sa->nnbr && !rc; i++) {
    const int s = sa->nbr[i];
    rc = bits == 32 ? dpo_secagg_mask32(sa->keys + 32 * s, rel, s > sa->rank ? 1 : -1, d, x32,
                                        (uint32_t *)sa->mask)
                    : dpo_secagg_mask(sa->keys + 32 * s, rel, s > sa->rank ? 1 : -1, d, x,
                                      sa->mask);
  }
  if (rc) memset(x, 0, (size_t)d * sizeof *x), memset(x32, 0, (size_t)d * sizeof *x32);
  if (masked)
    for (int64_t j = 0; j < d; j++) masked[j] = bits == 32 ? (uint64_t)x32[j] : x[j];
  /* A round in which any rank failed (or refused) is withheld: its sum would lack that rank's
   * data or noise share, one honest share fewer than was charged.  So every rank learns of a
   * failure before anything is reduced, and nothing is reduced or decoded. */
  int bad = !ok || rc, anybad = 0;
  if (MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, sa->comm) != MPI_SUCCESS) {
    if (!rc) rc = dpo_err(DPO_EMPI, "secagg: MPI_Allreduce failed");
    return rc;
  }
  if (anybad) return bad ? rc : DPO_EREMOTE; /* another rank's status says why */
  void *w = bits == 32 ? (void *)x32 : (void *)x;
  if (MPI_Reduce(sa->rank == 0 ? MPI_IN_PLACE : w, w, (int)d,
                 bits == 32 ? MPI_UINT32_T : MPI_UINT64_T, MPI_SUM, 0, sa->comm) != MPI_SUCCESS &&
      !rc)
    rc = dpo_err(DPO_EMPI, "secagg: MPI_Reduce failed");
  if (sa->rank == 0 && total && !rc)
    for (int64_t j = 0; j < d; j++)
      total[j] = (bits == 32 ? (double)(int32_t)x32[j] : (double)(int64_t)x[j]) * gamma;
  return rc;
}
