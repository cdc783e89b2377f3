/* Unit tests of the fixed-work samplers (src/privacy/mech_ct.c, issue 35): the laws are the
 * exact ones (pmf chi-square and moments beside test_privacy.c's), the work does not follow
 * the value (random words consumed, independent of |noise|), the fixed-work path is the one
 * taken (no fallback, the Polya padding used and never exceeded), the constants certified.
 * The mechanism table's samplers (mech_ops.c) are these mechanisms at the charged scale. */
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"
#include "privacy/mech_ct.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static dpo_rng_t *seeded(uint64_t seed) {
  dpo_rng_t *r = NULL;
  cr_assert_eq(dpo_rng_create(1, seed, 11, &r), DPO_OK);
  return r;
}

/* bytes of the stream consumed (64-byte blocks of the refill counter + position) */
static uint64_t used(dpo_rng_t *r) {
  dpo_rng_state_t st;
  dpo_rng_get_state(r, &st);
  return 64 * st.counter + st.pos;
}

static double chi2_crit(int dof) { /* Wilson-Hilferty, upper tail ~ 1e-6 */
  double h = 2.0 / (9.0 * dof), z = 4.75;
  return dof * pow(1 - h + z * sqrt(h), 3);
}

/* chi-square of a histogram over the bins with >= 20 expected (the rest pooled) */
static void check_chi2(const long *cnt, const double *p, int nb, long N, const char *what) {
  double x2 = 0, pool = 1;
  long opool = N;
  int bins = 0;
  for (int i = 0; i < nb; i++) {
    if (N * p[i] < 20) continue;
    x2 += (cnt[i] - N * p[i]) * (cnt[i] - N * p[i]) / (N * p[i]);
    pool -= p[i];
    opool -= cnt[i];
    bins++;
  }
  if (N * pool >= 20) {
    x2 += (opool - N * pool) * (opool - N * pool) / (N * pool);
    bins++;
  }
  cr_expect(bins >= 4 && x2 < chi2_crit(bins - 1), "%s: chi2 %.1f, %d dof (crit %.1f)", what, x2,
            bins - 1, chi2_crit(bins - 1));
}

Test(mech_ct, constants_certified) { cr_expect(dpo__ct_tables_ok()); }

/* discrete Laplace at t = 1, 2, 10: exact pmf (1-q)/(1+q) q^|k| */
Test(mech_ct, discrete_laplace_pmf) {
  const uint64_t ts[] = {1, 2, 10};
  for (int c = 0; c < 3; c++) {
    dpo_rng_t *r = seeded(100 + c);
    enum { W = 60 };
    long cnt[2 * W + 1] = {0}, N = 200000;
    double p[2 * W + 1], q = exp(-1.0 / ts[c]);
    for (int k = -W; k <= W; k++) p[k + W] = (1 - q) / (1 + q) * pow(q, abs(k));
    for (long i = 0; i < N; i++) {
      int64_t k;
      cr_assert_eq(dpo_mech_discrete_laplace(r, ts[c], &k), DPO_OK);
      if (k >= -W && k <= W) cnt[k + W]++;
    }
    check_chi2(cnt, p, 2 * W + 1, N, "discrete Laplace");
    dpo_rng_destroy(r);
  }
}

/* discrete Gaussian at sigma = 1, 3, 7 (the acceptance at gamma of several units) */
Test(mech_ct, discrete_gaussian_pmf) {
  const uint64_t ss[] = {1, 3, 7};
  for (int c = 0; c < 3; c++) {
    dpo_rng_t *r = seeded(110 + c);
    enum { W = 60 };
    long cnt[2 * W + 1] = {0}, N = 200000;
    double p[2 * W + 1], z = 0, s = (double)ss[c];
    for (int k = -400; k <= 400; k++) z += exp(-(double)k * k / (2 * s * s));
    for (int k = -W; k <= W; k++) p[k + W] = exp(-(double)k * k / (2 * s * s)) / z;
    for (long i = 0; i < N; i++) {
      int64_t k;
      cr_assert_eq(dpo_mech_discrete_gaussian(r, ss[c], &k), DPO_OK);
      if (k >= -W && k <= W) cnt[k + W]++;
    }
    check_chi2(cnt, p, 2 * W + 1, N, "discrete Gaussian");
    dpo_rng_destroy(r);
  }
}

/* The loop of Bernoulli(exp(-x)) is split as e^-(i/256) (table) times CKS Alg. 1 on the rest:
 * frequencies of 1e6 draws against exp(-g/t) computed by libm, within 5 standard errors, at
 * fractions on both sides of table steps (i/256 exactly, just below, just above), above 1
 * (e^-n times the loop) and near 0 */
Test(mech_ct, bernoulli_exp_split) {
  const uint64_t t = 1000003, cases[][2] = {
      {0, 1},       {1, 1000},      {t / 256, t},  {t / 256 + 1, t}, {t - 1, t},
      {500000, t},  {2 * t + 7, t}, {3 * t + 3 * t / 4, t}, {255, 256}, {128, 256}, {1, 2}};
  dpo_rng_t *r = seeded(140);
  dpo__ws_t ws = DPO__WS_INIT(r);
  dpo__ct_stats_reset();
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const long N = 1000000;
    long ones = 0;
    for (long i = 0; i < N; i++) {
      int b;
      cr_assert_eq(dpo__ct_bexp_small(&ws, cases[c][0], cases[c][1], &b), DPO_OK);
      ones += b;
    }
    const double p = exp(-(double)cases[c][0] / (double)cases[c][1]), f = (double)ones / N;
    cr_expect(fabs(f - p) <= 5 * sqrt(p * (1 - p) / N) + 1e-12, "exp(-%llu/%llu): %.6f, want %.6f",
              (unsigned long long)cases[c][0], (unsigned long long)cases[c][1], f, p);
  }
  dpo__ct_stats_t st;
  dpo__ct_stats(&st);
  cr_expect_eq(st.fallbacks, 0, "%llu fallbacks", (unsigned long long)st.fallbacks);
  dpo_rng_destroy(r);
}

/* 1e6 draws of the vector sampler at sigma = 2, 30, 1000, 1e5 against the exact pmf
 * exp(-k^2 / (2 s^2)) / Z summed in doubles here (bins of width ceil(s/8) over +-6 s, tails
 * pooled: chi-square); the mean (0) and the variance sum k^2 pmf(k) within 5 standard errors */
Test(mech_ct, discrete_gaussian_pmf_large) {
  const uint64_t ss[] = {2, 30, 1000, 100000};
  enum { N = 1000000, NB = 200 };
  static int64_t k[N];
  for (int c = 0; c < 4; c++) {
    const double s = (double)ss[c];
    const int64_t w = (int64_t)ceil(s / 8), lim = (int64_t)ceil(12 * s) + 10, nb = 2 * 6 * 8 + 2;
    double p[NB] = {0}, z = 0, var = 0;
    long cnt[NB] = {0};
    for (int64_t x = -lim; x <= lim; x++) z += exp(-(double)x * x / (2 * s * s));
    for (int64_t x = -lim; x <= lim; x++) {
      const double q = exp(-(double)x * x / (2 * s * s)) / z;
      const int64_t b = (x + 6 * 8 * w) / w;
      p[x < -6 * 8 * w ? 0 : b >= nb ? nb - 1 : b < 0 ? 0 : b] += q;
      var += (double)x * x * q;
    }
    dpo_rng_t *r = seeded(150 + c);
    cr_assert_eq(dpo__mech_dgauss_n(r, ss[c], N, k), DPO_OK);
    double s1 = 0, s2 = 0, s4 = 0;
    for (long i = 0; i < N; i++) {
      const int64_t b = (k[i] + 6 * 8 * w) / w;
      cnt[k[i] < -6 * 8 * w ? 0 : b >= nb ? nb - 1 : b < 0 ? 0 : b]++;
      const double x = (double)k[i];
      s1 += x;
      s2 += x * x;
      s4 += x * x * x * x;
    }
    check_chi2(cnt, p, (int)nb, N, "discrete Gaussian, 1e6 draws");
    const double m2 = s2 / N, se2 = sqrt((s4 / N - m2 * m2) / N);
    cr_expect(fabs(s1 / N) <= 5 * sqrt(var / N), "sigma %g: mean %g", s, s1 / N);
    cr_expect(fabs(m2 - var) <= 5 * se2, "sigma %g: E k^2 %g, want %g (se %g)", s, m2, var, se2);
    dpo_rng_destroy(r);
  }
}

/* The vector sampler (secagg's shares) draws what n scalar calls draw, from the same bytes of
 * the stream; and the stream of a seed is pinned: FNV-1a hashes of 5000 draws made since the
 * discrete Gaussian's two rejections became one coin with t = s (another stream than before;
 * its law is checked by discrete_gaussian_pmf_large and moments_at_large_scale). */
Test(mech_ct, discrete_gaussian_vector_stream) {
  const uint64_t ss[] = {1, 100000, (uint64_t)1 << 44};
  const uint64_t pinned[] = {0x508474332aa4983bULL, 0x501f721ef69ee543ULL, 0xd63525a05da9b017ULL};
  enum { N = 5000 };
  static int64_t a[N], b[N];
  for (int c = 0; c < 3; c++) {
    dpo_rng_t *r1 = NULL, *r2 = NULL;
    cr_assert_eq(dpo_rng_create(1, 130, 11, &r1), DPO_OK);
    cr_assert_eq(dpo_rng_create(1, 130, 11, &r2), DPO_OK);
    for (int i = 0; i < N; i++) cr_assert_eq(dpo_mech_discrete_gaussian(r1, ss[c], &a[i]), DPO_OK);
    cr_assert_eq(dpo__mech_dgauss_n(r2, ss[c], N, b), DPO_OK);
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < N; i++) {
      cr_assert_eq(a[i], b[i], "sigma %llu: draw %d: scalar %lld, vector %lld",
                   (unsigned long long)ss[c], i, (long long)a[i], (long long)b[i]);
      h = (h ^ (uint64_t)a[i]) * 1099511628211ULL;
    }
    cr_expect_eq(used(r1), used(r2), "sigma %llu: the same bytes consumed",
                 (unsigned long long)ss[c]);
    cr_expect_eq(h, pinned[c], "sigma %llu: the seeded stream changed (hash %016llx)",
                 (unsigned long long)ss[c], (unsigned long long)h);
    dpo_rng_destroy(r1);
    dpo_rng_destroy(r2);
  }
  dpo_rng_t *r = seeded(1);
  int64_t k;
  cr_expect_eq(dpo__mech_dgauss_n(r, 0, 1, &k), DPO_EINVAL);
  cr_expect_eq(dpo__mech_dgauss_n(r, 1, -1, &k), DPO_EINVAL);
  cr_expect_eq(dpo__mech_dgauss_n(r, 1, 0, NULL), DPO_OK);
  dpo_rng_destroy(r);
}

/* at the grid mechanism's scale (t ~ 2^40): variance 2 q / (1 - q)^2 ~ 2 t^2 and sigma^2 */
Test(mech_ct, moments_at_large_scale) {
  dpo_rng_t *r = seeded(120);
  const uint64_t t = (uint64_t)1 << 40;
  const long N = 100000;
  double s1 = 0, s2 = 0, g2 = 0;
  for (long i = 0; i < N; i++) {
    int64_t k, g;
    cr_assert_eq(dpo_mech_discrete_laplace(r, t, &k), DPO_OK);
    cr_assert_eq(dpo_mech_discrete_gaussian(r, t, &g), DPO_OK);
    double x = (double)k / (double)t, y = (double)g / (double)t;
    s1 += x;
    s2 += x * x;
    g2 += y * y;
  }
  /* Var(x^2) = E x^4 - 4 = 24 - 4 (Laplace), 2 (Gaussian) */
  cr_expect(fabs(s1 / N) < 5 * sqrt(2.0 / N), "Laplace mean %g", s1 / N);
  cr_expect(fabs(s2 / N - 2) < 5 * sqrt(20.0 / N), "Laplace E x^2 %g (2)", s2 / N);
  cr_expect(fabs(g2 / N - 1) < 5 * sqrt(2.0 / N), "Gaussian E x^2 %g (1)", g2 / N);
  dpo_rng_destroy(r);
  /* either side of the discrete Gaussian's switch from the 64-bit to the 256-bit loop
   * (2 s^2 < 2^53): the variance s^2 (Var(x^2) = 2 for x = g / s) */
  const uint64_t sw[] = {((uint64_t)1 << 26) - 1, (uint64_t)1 << 26};
  for (int c = 0; c < 2; c++) {
    r = seeded(121 + c);
    double m2 = 0;
    for (long i = 0; i < N; i++) {
      int64_t g;
      cr_assert_eq(dpo_mech_discrete_gaussian(r, sw[c], &g), DPO_OK);
      m2 += ((double)g / (double)sw[c]) * ((double)g / (double)sw[c]);
    }
    cr_expect(fabs(m2 / N - 1) < 5 * sqrt(2.0 / N), "s = %llu: E (g/s)^2 %g (1)",
              (unsigned long long)sw[c], m2 / N);
    dpo_rng_destroy(r);
  }
}

/* the work (words consumed) does not follow |noise|: mean bytes in the lower and upper half
 * of |noise| agree within 5 standard errors, and no draw left the fixed-work path */
static void check_work(int kind, uint64_t t, long N, uint64_t seed) {
  dpo_rng_t *r = seeded(seed);
  double *b = malloc((size_t)N * sizeof *b);
  uint64_t *m = malloc((size_t)N * sizeof *m), *srt = malloc((size_t)N * sizeof *srt);
  cr_assert(b && m && srt);
  dpo__ct_stats_reset();
  for (long i = 0; i < N; i++) {
    uint64_t u0 = used(r);
    int64_t k;
    int rc = kind == 0   ? dpo_mech_discrete_laplace(r, t, &k)
             : kind == 1 ? dpo_mech_discrete_gaussian(r, t, &k)
                         : dpo_mech_dlaplace_polya_share(r, t, (uint64_t)kind, &k);
    cr_assert_eq(rc, DPO_OK);
    b[i] = (double)(used(r) - u0);
    m[i] = srt[i] = (uint64_t)(k < 0 ? -k : k);
  }
  for (long i = 1; i < N; i++) /* median of |noise| by insertion into a sorted copy */
    for (long j = i; j > 0 && srt[j - 1] > srt[j]; j--) {
      uint64_t x = srt[j];
      srt[j] = srt[j - 1];
      srt[j - 1] = x;
    }
  const uint64_t med = srt[N / 2];
  double s[2] = {0}, q[2] = {0};
  long n[2] = {0};
  for (long i = 0; i < N; i++) {
    int h = m[i] > med;
    s[h] += b[i];
    q[h] += b[i] * b[i];
    n[h]++;
  }
  double mu0 = s[0] / n[0], mu1 = s[1] / n[1];
  double se = sqrt((q[0] / n[0] - mu0 * mu0) / n[0] + (q[1] / n[1] - mu1 * mu1) / n[1]);
  cr_expect(fabs(mu1 - mu0) <= 5 * se + 1e-9, "kind %d: bytes %.2f (low |noise|) vs %.2f (high)",
            kind, mu0, mu1);
  dpo__ct_stats_t st;
  dpo__ct_stats(&st);
  cr_expect_eq(st.fallbacks, 0, "kind %d: %llu fallbacks", kind, (unsigned long long)st.fallbacks);
  cr_expect_eq(st.polya_over, 0);
  if (kind >= 2) cr_expect(st.polya_pad > 0, "the Polya coins are padded");
  free(b);
  free(m);
  free(srt);
  dpo_rng_destroy(r);
}

Test(mech_ct, work_independent_of_noise) {
  check_work(0, (uint64_t)1 << 40, 4000, 130);
  check_work(1, (uint64_t)1 << 40, 4000, 131);
  check_work(1, 100000, 4000, 134); /* the 64-bit loop (secagg's shares) */
  check_work(2, 1000, 1500, 132);
  check_work(3, 1000, 1500, 133);
}

/* a Polya share's coins never exceed the public bounds, and the bounds exceed the mean */
Test(mech_ct, polya_bounds) {
  int bB, bT;
  cr_assert_eq(dpo__ct_polya_bounds((uint64_t)1 << 20, 2, &bB, &bT), DPO_OK);
  cr_expect(bB > 21 && bB < 400 && bT >= 2 && bT < 100, "bounds %d, %d", bB, bT);
  int pB, pT; /* a share's two variates padded together: more than one's, less than two's */
  cr_assert_eq(dpo__ct_polya2_bounds((uint64_t)1 << 20, 2, &pB, &pT), DPO_OK);
  cr_expect(pB > bB && pB < 2 * bB && pT >= bT && pT < 2 * bT, "pair bounds %d, %d", pB, pT);
}

/* dpo_mech_sample / dpo_mech_release draw, word for word, what the mechanism's own sampler
 * draws on the same stream at the charge's noise scale; the two mechanisms differ (a swapped
 * table would show); rdp-rho and an unset mechanism are refused, nothing modified. */
Test(ops, samplers_are_the_mechanisms) {
  const int64_t d = 16;
  double a[16], b[16], c[16];
  for (int gauss = 0; gauss < 2; gauss++) {
    dpo_rng_t *r1 = NULL, *r2 = NULL, *r3 = NULL;
    cr_assert_eq(dpo_rng_create(1, 41, 3, &r1), DPO_OK);
    cr_assert_eq(dpo_rng_create(1, 41, 3, &r2), DPO_OK);
    cr_assert_eq(dpo_rng_create(1, 41, 3, &r3), DPO_OK);
    for (int64_t j = 0; j < d; j++) a[j] = b[j] = c[j] = 0.25 * (double)j;
    dpo_mech_t m = gauss ? DPO_MECH_GAUSSIAN : DPO_MECH_LAPLACE;
    dpo_charge_t ch = {.mechanism = m, .noise_scale = 1.75};
    cr_assert_eq(gauss ? dpo_mech_gaussian(r1, 1.75, a, d) : dpo_mech_laplace(r1, 1.75, a, d),
                 DPO_OK);
    cr_assert_eq(dpo_mech_sample(m, r2, 1.75, b, d), DPO_OK);
    cr_assert_eq(dpo_mech_release(&ch, r3, c, d), DPO_OK);
    cr_expect_eq(memcmp(a, b, sizeof a), 0, "%s: the table's sampler differs", dpo_mech_name(m));
    cr_expect_eq(memcmp(a, c, sizeof a), 0, "%s: the release differs", dpo_mech_name(m));
    dpo_rng_destroy(r1);
    dpo_rng_destroy(r2);
    dpo_rng_destroy(r3);
  }
  dpo_rng_t *r1 = NULL, *r2 = NULL;
  cr_assert_eq(dpo_rng_create(1, 41, 3, &r1), DPO_OK);
  cr_assert_eq(dpo_rng_create(1, 41, 3, &r2), DPO_OK);
  for (int64_t j = 0; j < d; j++) a[j] = b[j] = 0;
  cr_assert_eq(dpo_mech_sample(DPO_MECH_LAPLACE, r1, 1.75, a, d), DPO_OK);
  cr_assert_eq(dpo_mech_sample(DPO_MECH_GAUSSIAN, r2, 1.75, b, d), DPO_OK);
  cr_expect_neq(memcmp(a, b, sizeof a), 0, "Laplace and Gaussian draw the same noise");
  for (int64_t j = 0; j < d; j++) a[j] = 1;
  cr_expect_eq(dpo_mech_sample(DPO_MECH_RDP_RHO, r1, 1.75, a, d), DPO_EINVAL);
  cr_expect_eq(dpo_mech_sample(DPO_MECH_UNSET, r1, 1.75, a, d), DPO_EINVAL);
  for (int64_t j = 0; j < d; j++) cr_expect_eq(a[j], 1.0, "a refused draw modified v");
  dpo_rng_destroy(r1);
  dpo_rng_destroy(r2);
}
