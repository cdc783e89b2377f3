/* Unit tests of src/privacy: exact samplers, grid mechanisms, accountants, ledger + journal.
 * Serial: the ledger is opened on MPI_COMM_NULL ("I am the coordinator"), MPI is never
 * initialized.  References are closed forms computed independently (long double libm). */
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <float.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static dpo_rng_t *seeded(uint64_t seed) {
  dpo_rng_t *r = NULL;
  cr_assert_eq(dpo_rng_create(1, seed, 7, &r), DPO_OK);
  return r;
}

static dpo_charge_t lap(double eps) {
  dpo_charge_t c = {0};
  c.mechanism = DPO_MECH_LAPLACE;
  c.eps = eps;
  c.sampling = DPO_SAMPLING_NONE;
  c.accounting = DPO_ACCOUNTING_PURE;
  return c;
}

/* ------------------------------------------------------------ exact samplers */

/* N draws of Bernoulli(exp(-num/den)) within 5 sd of N exp(-num/den) */
static void check_bern_exp(dpo_rng_t *r, uint64_t num, uint64_t den, int N) {
  long ones = 0;
  for (int i = 0; i < N; i++) {
    int b;
    cr_assert_eq(dpo_mech_bernoulli_exp(r, num, den, &b), DPO_OK);
    ones += b;
  }
  double p = exp(-(double)num / (double)den), sd = sqrt(N * p * (1 - p));
  cr_expect(fabs(ones - N * p) <= 5 * sd + 1e-9, "exp(-%llu/%llu): %ld ones, expected %.1f",
            (unsigned long long)num, (unsigned long long)den, ones, N * p);
}

Test(sampler, bernoulli_exp_frequency) {
  dpo_rng_t *r = seeded(1);
  const uint64_t num[] = {0, 1, 7, 5}, den[] = {1, 2, 3, 1};
  for (int j = 0; j < 4; j++) check_bern_exp(r, num[j], den[j], 200000);
  dpo_rng_destroy(r);
}

/* the 64 / 128 / 256-bit paths of the exact Bernoullis (mechanism.c): denominators at the
 * edges, where D k crosses 2^63 inside one draw, and gamma > 1 (whole units peeled off) */
Test(sampler, bernoulli_exp_wide_denominators) {
  dpo_rng_t *r = seeded(11);
  const uint64_t top = UINT64_MAX, h = (uint64_t)1 << 63;
  const uint64_t num[] = {h / 3 * 2, h - 2, top / 2, top - 5, 3 * (h / 2) + 7},
                 den[] = {h - 1, h - 1, top, top - 4, h / 2 + 1};
  for (int j = 0; j < 5; j++) check_bern_exp(r, num[j], den[j], 200000);
  /* sigma = 2^40: 2 s^2 t^2 > 2^127, the 256-bit loop; P(|Z| <= sigma) = 0.682689... */
  long in = 0;
  const int M = 40000;
  for (int i = 0; i < M; i++) {
    int64_t z;
    cr_assert_eq(dpo_mech_discrete_gaussian(r, (uint64_t)1 << 40, &z), DPO_OK);
    in += (z < 0 ? -z : z) <= ((int64_t)1 << 40);
  }
  const double p1 = 0.6826894921370859;
  cr_expect(fabs(in - M * p1) <= 5 * sqrt(M * p1 * (1 - p1)), "P(|Z| <= sigma): %ld of %d", in, M);
  dpo_rng_destroy(r);
}

/* per-bin 5-sigma check of a histogram against a closed-form pmf */
static void check_pmf(const long *cnt, int K, long N, double (*pmf)(int, double), double par) {
  double tail = 1;
  for (int k = -K; k <= K; k++) {
    double p = pmf(k, par), sd = sqrt(N * p * (1 - p));
    tail -= p;
    cr_expect(fabs(cnt[k + K] - N * p) <= 5 * sd + 1e-9, "k=%d: %ld vs %.1f", k, cnt[k + K],
              N * p);
  }
  long out = N;
  for (int k = 0; k <= 2 * K; k++) out -= cnt[k];
  cr_expect(fabs(out - N * tail) <= 5 * sqrt(N * fmax(tail, 1e-12)) + 1, "tail %ld vs %.1f", out,
            N * tail);
}

static double dlap_pmf(int k, double t) {
  double q = exp(-1 / t);
  return (1 - q) / (1 + q) * pow(q, abs(k));
}

static double dgauss_pmf(int k, double s) {
  double z = 0;
  for (int j = -200; j <= 200; j++) z += exp(-(double)j * j / (2 * s * s));
  return exp(-(double)k * k / (2 * s * s)) / z;
}

Test(sampler, discrete_laplace_pmf) {
  dpo_rng_t *r = seeded(2);
  enum { K = 15 };
  long cnt[2 * K + 1] = {0}, N = 300000;
  for (long i = 0; i < N; i++) {
    int64_t k;
    cr_assert_eq(dpo_mech_discrete_laplace(r, 3, &k), DPO_OK);
    if (k >= -K && k <= K) cnt[k + K]++;
  }
  check_pmf(cnt, K, N, dlap_pmf, 3.0);
  dpo_rng_destroy(r);
}

Test(sampler, discrete_gaussian_pmf) {
  dpo_rng_t *r = seeded(3);
  enum { K = 10 };
  long cnt[2 * K + 1] = {0}, N = 300000;
  for (long i = 0; i < N; i++) {
    int64_t k;
    cr_assert_eq(dpo_mech_discrete_gaussian(r, 2, &k), DPO_OK);
    if (k >= -K && k <= K) cnt[k + K]++;
  }
  check_pmf(cnt, K, N, dgauss_pmf, 2.0);
  dpo_rng_destroy(r);
}

/* Polya shares (distributed discrete Laplace, mechanism.c): chi-square at p ~ 1e-6 over the
 * bins with >= 20 expected counts (the rest pooled) against closed forms: the NB(1/n, q)
 * marginal, and the sum of n independent shares against the discrete Laplace.  Fixed seeds. */
static double chi2_crit(int dof) { /* Wilson-Hilferty, z = 4.75 (upper tail ~ 1e-6) */
  double h = 2.0 / (9.0 * dof), z = 4.75;
  return dof * pow(1 - h + z * sqrt(h), 3);
}

static double chi2_hist(const long *cnt, const double *p, int nb, long N, int *dof) {
  double x2 = 0, pe = 0, po = 0, pool = 1;
  int bins = 0;
  long opool = N;
  for (int i = 0; i < nb; i++) {
    if (N * p[i] < 20) continue;
    x2 += (cnt[i] - N * p[i]) * (cnt[i] - N * p[i]) / (N * p[i]);
    pool -= p[i];
    opool -= cnt[i];
    bins++;
  }
  pe = N * pool;
  po = (double)opool;
  if (pe >= 20) {
    x2 += (po - pe) * (po - pe) / pe;
    bins++;
  }
  *dof = bins - 1;
  return x2;
}

Test(sampler, polya_marginal_pmf) {
  const uint64_t ts[] = {1, 3, 7}, ns[] = {2, 3, 5};
  for (int c = 0; c < 3; c++) {
    dpo_rng_t *r = seeded(40 + c);
    enum { W = 120 };
    long cnt[W] = {0}, N = 200000;
    double p[W];
    const double q = exp(-1.0 / ts[c]), rr = 1.0 / ns[c];
    for (int k = 0; k < W; k++)
      p[k] = exp(lgamma(k + rr) - lgamma(k + 1.0) - lgamma(rr) + rr * log1p(-q) + k * log(q));
    for (long i = 0; i < N; i++) {
      int64_t x;
      cr_assert_eq(dpo_mech_polya(r, ts[c], ns[c], &x), DPO_OK);
      cr_assert(x >= 0);
      if (x < W) cnt[x]++;
    }
    int dof;
    double x2 = chi2_hist(cnt, p, W, N, &dof);
    cr_expect(dof >= 3 && x2 < chi2_crit(dof), "NB(1/%lu, e^-1/%lu): chi2 %.1f, %d dof (crit %.1f)",
              (unsigned long)ns[c], (unsigned long)ts[c], x2, dof, chi2_crit(dof));
    dpo_rng_destroy(r);
  }
}

Test(sampler, polya_shares_sum_to_discrete_laplace) {
  /* n = 1 (one discrete Laplace), 2, 3, 4 honest shares; t = 2 and 5 */
  const uint64_t ts[] = {2, 5, 2, 5}, ns[] = {1, 2, 3, 4};
  for (int c = 0; c < 4; c++) {
    dpo_rng_t *r = seeded(50 + c);
    enum { W = 80 };
    long cnt[2 * W + 1] = {0}, N = 200000;
    double p[2 * W + 1];
    for (int k = -W; k <= W; k++) p[k + W] = dlap_pmf(k, (double)ts[c]);
    for (long i = 0; i < N; i++) {
      int64_t z = 0, s;
      for (uint64_t j = 0; j < ns[c]; j++) {
        cr_assert_eq(dpo_mech_dlaplace_polya_share(r, ts[c], ns[c], &s), DPO_OK);
        z += s;
      }
      if (z >= -W && z <= W) cnt[z + W]++;
    }
    int dof;
    double x2 = chi2_hist(cnt, p, 2 * W + 1, N, &dof);
    cr_expect(dof >= 5 && x2 < chi2_crit(dof), "sum of %lu shares vs discrete Laplace(%lu): chi2 "
              "%.1f, %d dof (crit %.1f)", (unsigned long)ns[c], (unsigned long)ts[c], x2, dof,
              chi2_crit(dof));
    dpo_rng_destroy(r);
  }
  int64_t z;
  dpo_rng_t *r = seeded(59);
  cr_expect_neq(dpo_mech_dlaplace_polya_share(r, 0, 2, &z), DPO_OK);
  cr_expect_neq(dpo_mech_dlaplace_polya_share(r, 3, 0, &z), DPO_OK);
  cr_expect_eq(dpo_mech_dlaplace_polya_share(r, (uint64_t)1 << 50, 3, &z), DPO_OK);
  dpo_rng_destroy(r);
}

/* ------------------------------------------------------------ grid mechanisms */

static double ref_grid(double b) { /* smallest power of two >= b 2^-40, by search */
  double target = b * 0x1p-40, lam = 1;
  while (lam < target) lam *= 2;
  while (lam / 2 >= target) lam /= 2;
  return lam;
}

Test(mechanism, grid_and_outputs_on_grid) {
  const double scales[] = {1.5, 1e-3, 123.456, 0x1p-10, 3.0};
  dpo_rng_t *r = seeded(4);
  for (int j = 0; j < 5; j++) {
    double lam;
    cr_assert_eq(dpo_mech_grid(scales[j], &lam), DPO_OK);
    cr_expect_eq(lam, ref_grid(scales[j]), "grid of %g: %a vs %a", scales[j], lam,
                 ref_grid(scales[j]));
    double v[6] = {0.1, -3.7, 1e6 * M_PI, 1e-300, -0.0, 42};
    cr_assert_eq(dpo_mech_laplace(r, scales[j], v, 6), DPO_OK);
    for (int i = 0; i < 6; i++) cr_expect_eq(v[i] / lam, rint(v[i] / lam), "off grid: %a", v[i]);
    double w[6] = {0.1, -3.7, 1e6 * M_PI, 1e-300, -0.0, 42};
    cr_assert_eq(dpo_mech_gaussian(r, scales[j], w, 6), DPO_OK);
    for (int i = 0; i < 6; i++) cr_expect_eq(w[i] / lam, rint(w[i] / lam), "off grid: %a", w[i]);
  }
  dpo_rng_destroy(r);
}

Test(mechanism, rejects_bad_input_and_modifies_nothing) {
  dpo_rng_t *r = seeded(5);
  double v[3] = {1, NAN, 2}, x;
  cr_expect_eq(dpo_mech_laplace(r, 0.0, v, 1), DPO_EINVAL);
  cr_expect_eq(dpo_mech_laplace(r, -1.0, v, 1), DPO_EINVAL);
  cr_expect_eq(dpo_mech_laplace(r, NAN, v, 1), DPO_EINVAL);
  cr_expect_eq(dpo_mech_gaussian(r, INFINITY, v, 1), DPO_EINVAL);
  cr_expect_eq(dpo_mech_gaussian(r, 0.0, v, 1), DPO_EINVAL);
  cr_expect_eq(dpo_mech_laplace(r, 1.0, v, 3), DPO_EINVAL);
  cr_expect_eq(v[0], 1.0); /* checked before anything is added */
  cr_expect_eq(dpo_mech_laplace_sample(r, -2, &x), DPO_EINVAL);
  dpo_rng_destroy(r);
}

Test(mechanism, seeded_is_reproducible) {
  dpo_rng_t *a = seeded(9), *b = seeded(9);
  double u[8] = {0}, w[8] = {0};
  cr_assert_eq(dpo_mech_gaussian(a, 2.5, u, 8), DPO_OK);
  cr_assert_eq(dpo_mech_gaussian(b, 2.5, w, 8), DPO_OK);
  cr_expect_eq(memcmp(u, w, sizeof u), 0);
  dpo_rng_destroy(a);
  dpo_rng_destroy(b);
}

Test(mechanism, laplace_moments) {
  dpo_rng_t *r = seeded(6);
  const double b = 1.5;
  const long N = 1000000;
  double s = 0, s2 = 0;
  for (long i = 0; i < N; i++) {
    double x;
    cr_assert_eq(dpo_mech_laplace_sample(r, b, &x), DPO_OK);
    s += x;
    s2 += x * x;
  }
  double mean = s / N, var = s2 / N - mean * mean;
  /* Var = 2 b^2; Var of the sample variance = (mu4 - var^2)/N = (24 b^4 - 4 b^4)/N */
  cr_expect(fabs(mean) <= 5 * sqrt(2 * b * b / N), "mean %g", mean);
  cr_expect(fabs(var - 2 * b * b) <= 5 * sqrt(20 * pow(b, 4) / N), "var %g vs %g", var, 2 * b * b);
  dpo_rng_destroy(r);
}

Test(mechanism, gaussian_moments) {
  dpo_rng_t *r = seeded(8);
  const double sg = 0.7;
  const long N = 1000000;
  double s = 0, s2 = 0;
  for (long i = 0; i < N; i++) {
    double x;
    cr_assert_eq(dpo_mech_gaussian_sample(r, sg, &x), DPO_OK);
    s += x;
    s2 += x * x;
  }
  double mean = s / N, var = s2 / N - mean * mean;
  cr_expect(fabs(mean) <= 5 * sg / sqrt(N), "mean %g", mean);
  cr_expect(fabs(var - sg * sg) <= 5 * sqrt(2.0 / N) * sg * sg, "var %g vs %g", var, sg * sg);
  dpo_rng_destroy(r);
}

Test(mechanism, eps_includes_grid_inflation) {
  double e, lam, b;
  cr_assert_eq(dpo_mech_grid(2.0, &lam), DPO_OK);
  cr_assert_eq(dpo_mech_laplace_eps(1.0, 2.0, 1000, &e), DPO_OK);
  long double ref = (1.0L + 1000.0L * lam) / 2.0L; /* (Delta1 + d Lambda)/b */
  cr_expect((long double)e >= ref && e <= ref * (1 + 1e-15L), "%a vs %La", e, ref);
  cr_assert_eq(dpo_mech_laplace_scale(1.0, 0.5, 1000, &b), DPO_OK);
  cr_assert_eq(dpo_mech_laplace_eps(1.0, b, 1000, &e), DPO_OK);
  /* b > 2 doubles the grid to 2^-38: b = 2 (1 + 1000 2^-38) */
  cr_expect(e <= 0.5 && b >= 2.0 * (1 + 1000 * 0x1p-38) && b <= 2.0 * (1 + 1e-8), "b=%a e=%a", b, e);
  /* classic Gaussian: sigma = Delta2 sqrt(2 ln(1.25/delta))/eps, valid for eps < 1 */
  double sg;
  cr_assert_eq(dpo_mech_gaussian_sigma(1.0, 0.5, 1e-5, 1, &sg), DPO_OK);
  long double sref = sqrtl(2 * logl(1.25L / 1e-5L)) / 0.5L;
  cr_expect(sg >= sref && sg <= sref * (1 + 1e-9L), "sigma %a vs %La", sg, sref);
  cr_assert_eq(dpo_mech_gaussian_eps(1.0, sg, 1e-5, 1, &e), DPO_OK);
  cr_expect(e <= 0.5);
  cr_expect_eq(dpo_mech_gaussian_eps(1.0, 1.0, 1e-5, 1, &e), DPO_EINVAL); /* eps ~ 4.8 >= 1 */
  cr_expect_eq(dpo_mech_gaussian_sigma(1.0, 1.5, 1e-5, 1, &sg), DPO_EINVAL);
}

/* ------------------------------------------------------------ accountants */

static long double wor_ref(long double e, long double q) { return log1pl(q * expm1l(e)); }

Test(accountant, three_subsampled_laplace_steps) {
  dpo_ledger_t *L;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 10.0, 0.0, NULL, 0, &L), DPO_OK);
  dpo_charge_t c = lap(2.0);
  c.sampling = DPO_SAMPLING_WOR;
  c.accounting = DPO_ACCOUNTING_SUBSAMPLED;
  c.m = 20;
  c.n = 100;
  for (int t = 0; t < 3; t++) cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  double e, d;
  cr_assert_eq(dpo_ledger_spent(L, &e, &d), DPO_OK);
  long double ref = 3 * wor_ref(2.0L, 0.2L); /* 3 ln(1 + 0.2 (e^2 - 1)) */
  cr_expect((long double)e >= ref, "under-count: %a < %La", e, ref);
  cr_expect((long double)e <= ref * (1 + 1e-13L), "%a vs %La", e, ref);
  cr_expect_eq(d, 0.0);
  dpo_ledger_close(L);
}

/* The contract of dpo_acct_wor_inverse (privacy.h): the library's own rounded-up forward map
 * of the result never exceeds the target, and the result is within a relative 2^-45 of the
 * exact inverse (001 (3.5)) when that is <= 700.  The reference is long double; its own error
 * (a few long-double ulps of libm) is allowed for by 64 LDBL_EPSILON, so no check depends on
 * one libm's last bit (at m = n the result is t exactly, the reference may be 1 ulp off). */
Test(accountant, wor_inverse_round_trips) {
  const int64_t mn[][2] = {{1, 2},     {20, 100}, {7, 1000}, {1, 60000},         {999, 1000},
                           {5, 5},     {3, 7},    {1, 1},    {1, (int64_t)1 << 53}, {((int64_t)1 << 53) - 1, (int64_t)1 << 53}};
  const long double slack = 64 * LDBL_EPSILON, rtol = 0x1p-45L;
  for (int j = 0; j < 10; j++) {
    long double q = (long double)mn[j][0] / mn[j][1];
    for (double t = 0x1p-1000; t <= 700; t = t < 1e-6 ? t * 1e7 : t < 600 ? t * 1.09 : t + 9) {
      double e0, f;
      cr_assert_eq(dpo_acct_wor_inverse(t, mn[j][0], mn[j][1], &e0), DPO_OK);
      cr_assert_eq(dpo_acct_wor(e0, mn[j][0], mn[j][1], &f), DPO_OK);
      cr_expect(f <= t, "m/n=%Lg t=%a: forward(inverse)=%a > t", q, t, f);
      long double inv = log1pl(expm1l((long double)t) / q); /* (001 (3.5)) */
      if (inv > 700) { /* dpo_acct_wor does not amplify above 700 */
        cr_expect(e0 <= 700, "m/n=%Lg t=%a: %a", q, t, e0);
        continue;
      }
      cr_expect(e0 <= inv * (1 + slack) && e0 >= inv * (1 - rtol - slack),
                "m/n=%Lg t=%a: inverse %a vs exact %La", q, t, e0, inv);
    }
    double e0;
    cr_assert_eq(dpo_acct_wor_inverse(0.0, mn[j][0], mn[j][1], &e0), DPO_OK);
    cr_expect_eq(e0, 0.0);
  }
  /* the forward map is an upper bound, tight to a relative 2^-45 */
  for (int j = 0; j < 3; j++)
    for (double t = 1e-6; t <= 20; t *= 1.7) {
      double g;
      long double q = (long double)mn[j][0] / mn[j][1], fw = wor_ref(t, q); /* (001 (3.3)) */
      cr_assert_eq(dpo_acct_wor(t, mn[j][0], mn[j][1], &g), DPO_OK);
      cr_expect(g >= fw * (1 - slack) && g <= fw * (1 + 0x1p-45L + slack), "forward %a vs %La", g, fw);
    }
  double x;
  cr_expect_eq(dpo_acct_wor(1.0, 0, 10, &x), DPO_EINVAL);
  cr_expect_eq(dpo_acct_wor(1.0, 11, 10, &x), DPO_EINVAL);
  cr_expect_eq(dpo_acct_wor(-1.0, 1, 10, &x), DPO_EINVAL);
}

Test(accountant, thesis_2gamma_condition) {
  double x;
  cr_assert_eq(dpo_acct_thesis_2gamma(0.5, 10, 100, &x), DPO_OK);
  cr_expect(x >= 0.1 && x <= 0.1 * (1 + 1e-15), "%a", x); /* 2 (10/100) 0.5 */
  cr_expect_eq(dpo_acct_thesis_2gamma(1.5, 10, 100, &x), DPO_EINVAL); /* needs eps <= 1 */
}

Test(accountant, refusal_exactly_at_the_limit) {
  dpo_ledger_t *L;
  double e, ch;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 0.0, NULL, 0, &L), DPO_OK);
  dpo_charge_t h = lap(0.5), tiny = lap(1e-12);
  cr_expect_eq(dpo_ledger_charge(L, &h, &ch), DPO_OK);
  cr_expect_eq(ch, 0.5);
  cr_expect_eq(dpo_ledger_check(L, &h, NULL, NULL), DPO_OK); /* peek: records nothing */
  cr_expect_eq(dpo_ledger_charge(L, &h, NULL), DPO_OK);
  cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
  cr_expect_eq(e, 1.0);
  cr_expect_eq(dpo_ledger_check(L, &tiny, NULL, NULL), DPO_EBUDGET);
  cr_expect_eq(dpo_ledger_charge(L, &tiny, NULL), DPO_EBUDGET);
  cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
  cr_expect_eq(e, 1.0);
  cr_expect_eq(dpo_ledger_count(L), 2);
  dpo_ledger_close(L);

  /* the double nearest 0.1 exceeds 1/10: nine fit, the tenth is refused (exact semantics) */
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 0.0, NULL, 0, &L), DPO_OK);
  dpo_charge_t p1 = lap(0.1);
  for (int i = 0; i < 9; i++) cr_expect_eq(dpo_ledger_charge(L, &p1, NULL), DPO_OK);
  cr_expect_eq(dpo_ledger_charge(L, &p1, NULL), DPO_EBUDGET);
  dpo_ledger_close(L);

  /* ...and the split share fits ten times */
  double s;
  cr_assert_eq(dpo_privacy_split(1.0, 10, &s), DPO_OK);
  cr_expect(s < 0.1 && 10.0L * s <= 1.0L && 10.0L * nextafter(s, 1) > 1.0L, "split %a", s);
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 0.0, NULL, 0, &L), DPO_OK);
  dpo_charge_t ps = lap(s);
  for (int i = 0; i < 10; i++) cr_expect_eq(dpo_ledger_charge(L, &ps, NULL), DPO_OK);
  cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
  cr_expect(e <= 1.0 && (long double)e >= 10.0L * s, "spent %a", e);
  dpo_ledger_close(L);
}

Test(accountant, disjoint_passes_cost_the_max) {
  dpo_ledger_t *L;
  double e, ch;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 5.0, 0.0, NULL, 0, &L), DPO_OK);
  const double pass1[] = {0.3, 0.5, 0.2}, pass2[] = {0.25, 0.25};
  for (int i = 0; i < 3; i++) {
    dpo_charge_t c = lap(pass1[i]);
    c.sampling = DPO_SAMPLING_DISJOINT;
    c.group = 1;
    cr_assert_eq(dpo_ledger_charge(L, &c, &ch), DPO_OK);
    cr_expect_eq(ch, i == 0 ? 0.3 : i == 1 ? 0.5 - 0.3 : 0.0);
  }
  cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
  cr_expect_eq(e, 0.5);
  for (int i = 0; i < 2; i++) {
    dpo_charge_t c = lap(pass2[i]);
    c.sampling = DPO_SAMPLING_DISJOINT;
    c.group = 2;
    cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  }
  dpo_charge_t c = lap(1.0); /* a sequential release in between closes the pass */
  cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  c = lap(0.25);
  c.sampling = DPO_SAMPLING_DISJOINT;
  c.group = 2;
  cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
  cr_expect_eq(e, 0.5 + 0.25 + 1.0 + 0.25);
  dpo_ledger_close(L);
}

Test(accountant, gaussian_eps_delta_composition) {
  dpo_ledger_t *L;
  double e, d;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-5, NULL, 0, &L), DPO_OK);
  dpo_charge_t g = {.mechanism = DPO_MECH_GAUSSIAN, .eps = 0.25, .delta = 2.5e-6,
                    .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_PURE};
  for (int i = 0; i < 4; i++) cr_expect_eq(dpo_ledger_charge(L, &g, NULL), DPO_OK);
  cr_assert_eq(dpo_ledger_spent(L, &e, &d), DPO_OK);
  cr_expect_eq(e, 1.0);
  cr_expect_eq(d, 1e-5, "%a", d); /* 4 x double(2.5e-6) == double(1e-5): scaling by 4 */
  g.eps = 1e-9;
  cr_expect_eq(dpo_ledger_charge(L, &g, NULL), DPO_EBUDGET);
  /* computed from sigma: classic calibration inverted, then charged the computed eps */
  dpo_ledger_close(L);
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-5, NULL, 0, &L), DPO_OK);
  double sg;
  cr_assert_eq(dpo_mech_gaussian_sigma(1.0, 0.5, 5e-6, 10, &sg), DPO_OK);
  dpo_charge_t h = {.mechanism = DPO_MECH_GAUSSIAN, .delta = 5e-6, .noise_scale = sg,
                    .sensitivity = 1.0, .dim = 10, .sampling = DPO_SAMPLING_NONE,
                    .accounting = DPO_ACCOUNTING_PURE};
  double ch;
  cr_expect_eq(dpo_ledger_charge(L, &h, &ch), DPO_OK);
  cr_expect(ch <= 0.5 && ch >= 0.5 * (1 - 1e-9), "charged %a", ch);
  h.accounting = DPO_ACCOUNTING_THESIS_2GAMMA;
  h.sampling = DPO_SAMPLING_WOR;
  h.m = 1;
  h.n = 2;
  cr_expect_eq(dpo_ledger_charge(L, &h, NULL), DPO_EUNSUP); /* pure-eps bound only */
  h.sampling = DPO_SAMPLING_POISSON;
  h.accounting = DPO_ACCOUNTING_SUBSAMPLED;
  cr_expect_eq(dpo_ledger_charge(L, &h, NULL), DPO_EINVAL); /* add/remove analysis */
  dpo_ledger_close(L);
}

/* ------------------------------------------------------------ journal */

static char tmpdir[64];

static void mk_tmp(void) {
  strcpy(tmpdir, "/tmp/dpo_privacy_XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(const char *path) {
  unlink(path);
  rmdir(tmpdir);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void append_raw(const char *path, const char *s) {
  FILE *f = fopen(path, "ab");
  cr_assert_not_null(f);
  fputs(s, f);
  fclose(f);
}

/* a fixed mix of charges: subsampled Laplace, Laplace from its scale, Gaussian, disjoint */
static dpo_charge_t mix(int i) {
  dpo_charge_t c = lap(0.01 + 0.001 * i);
  c.step = i;
  switch (i % 4) {
  case 0:
    c.sampling = DPO_SAMPLING_WOR;
    c.accounting = DPO_ACCOUNTING_SUBSAMPLED;
    c.m = 30;
    c.n = 1000;
    break;
  case 1:
    c.eps = 0;
    c.noise_scale = 40.0 + i;
    c.sensitivity = 0.5;
    c.dim = 17;
    break;
  case 2:
    c.mechanism = DPO_MECH_GAUSSIAN;
    c.delta = 1e-7;
    break;
  default:
    c.sampling = DPO_SAMPLING_DISJOINT;
    c.group = i / 8;
  }
  return c;
}

Test(journal, write_resume_totals_equal) {
  mk_tmp();
  char path[128];
  snprintf(path, sizeof path, "%s/ledger.jsonl", tmpdir);
  dpo_ledger_t *L;
  double e1, d1, e2, d2;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 2.0, 1e-5, path, 0, &L), DPO_OK);
  cr_expect_eq(dpo_ledger_charge(L, &(dpo_charge_t){0}, NULL), DPO_EINVAL); /* no fields */
  for (int i = 0; i < 12; i++) {
    dpo_charge_t c = mix(i);
    cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK, "%s", dpo_errmsg());
  }
  cr_assert_eq(dpo_ledger_spent(L, &e1, &d1), DPO_OK);
  cr_assert_eq(dpo_ledger_close(L), DPO_OK);

  /* every line parses independently and the header says what it is */
  size_t len;
  char *buf = slurp(path, &len);
  int lines = 0;
  for (char *p = buf, *nl; (nl = strchr(p, '\n')); p = nl + 1, lines++) {
    *nl = 0;
    json_object *o = json_tokener_parse(p);
    cr_assert_not_null(o, "line %d unparsable: %s", lines, p);
    json_object *k;
    if (lines == 0) {
      cr_expect(json_object_object_get_ex(o, "kind", &k) &&
                strcmp(json_object_get_string(k), "dpopt-ledger") == 0);
    } else {
      cr_expect(json_object_object_get_ex(o, "step", &k) && json_object_get_int(k) == lines - 1);
      cr_expect(json_object_object_get_ex(o, "total_eps", &k));
    }
    json_object_put(o);
  }
  cr_expect_eq(lines, 13);
  free(buf);

  /* existing journal without resume: refused (would restart the spent budget from zero) */
  cr_expect_eq(dpo_ledger_open(MPI_COMM_NULL, 2.0, 1e-5, path, 0, &L), DPO_EIO);
  /* larger budget on resume: refused */
  cr_expect_eq(dpo_ledger_open(MPI_COMM_NULL, 3.0, 1e-5, path, 1, &L), DPO_EBUDGET);
  cr_expect_eq(dpo_ledger_open(MPI_COMM_NULL, 2.0, 2e-5, path, 1, &L), DPO_EBUDGET);
  cr_expect_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-5, path, 1, &L), DPO_EINVAL);

  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 2.0, 1e-5, path, 1, &L), DPO_OK);
  cr_assert_eq(dpo_ledger_spent(L, &e2, &d2), DPO_OK);
  cr_expect_eq(e2, e1);
  cr_expect_eq(d2, d1);
  cr_expect_eq(dpo_ledger_count(L), 12);
  cr_expect_eq(dpo_ledger_repaired(L), 0);
  /* a resumed ledger continues exactly like one that never stopped */
  for (int i = 12; i < 16; i++) {
    dpo_charge_t c = mix(i);
    cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  }
  cr_assert_eq(dpo_ledger_spent(L, &e2, &d2), DPO_OK);
  dpo_ledger_close(L);
  dpo_ledger_t *M;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 2.0, 1e-5, NULL, 0, &M), DPO_OK);
  for (int i = 0; i < 16; i++) {
    dpo_charge_t c = mix(i);
    cr_assert_eq(dpo_ledger_charge(M, &c, NULL), DPO_OK);
  }
  cr_assert_eq(dpo_ledger_spent(M, &e1, &d1), DPO_OK);
  cr_expect_eq(e2, e1);
  cr_expect_eq(d2, d1);
  dpo_ledger_close(M);

  /* the printed account shows the count and the exact spent total */
  char *txt = NULL;
  size_t tl = 0;
  FILE *mf = open_memstream(&txt, &tl);
  cr_assert_eq(dpo_ledger_print(path, mf), DPO_OK);
  fclose(mf);
  char want[64];
  snprintf(want, sizeof want, "eps = %.17g", e1);
  cr_expect(strstr(txt, "charges: 16") != NULL, "%s", txt);
  cr_expect(strstr(txt, want) != NULL, "%s", txt);
  free(txt);
  rm_tmp(path);
}

Test(journal, torn_and_tampered_lines) {
  mk_tmp();
  char path[128];
  snprintf(path, sizeof path, "%s/ledger.jsonl", tmpdir);
  dpo_ledger_t *L;
  double e0, e;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 0, &L), DPO_OK);
  for (int i = 0; i < 3; i++) {
    dpo_charge_t c = mix(i);
    cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  }
  dpo_ledger_spent(L, &e0, NULL);
  dpo_ledger_close(L);
  size_t len0;
  char *orig = slurp(path, &len0);

  /* torn: no newline */
  const char *torn = "{\"step\":3,\"mechanism\":\"lapl";
  append_raw(path, torn);
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 1, &L), DPO_OK);
  cr_expect_eq(dpo_ledger_repaired(L), (int64_t)strlen(torn));
  cr_expect_eq(dpo_ledger_count(L), 3);
  dpo_ledger_spent(L, &e, NULL);
  cr_expect_eq(e, e0);
  dpo_ledger_close(L);
  struct stat sb;
  stat(path, &sb); /* a resume that charges nothing writes nothing (a refused one neither) */
  cr_expect_eq((size_t)sb.st_size, len0 + strlen(torn), "a resume without a charge wrote");
  /* the torn bytes go at the first append: the new line follows the last good one */
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 1, &L), DPO_OK);
  {
    dpo_charge_t c = mix(3);
    cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK, "%s", dpo_errmsg());
  }
  dpo_ledger_spent(L, &e0, NULL);
  dpo_ledger_close(L);
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 1, &L), DPO_OK, "%s",
               dpo_errmsg());
  cr_expect_eq(dpo_ledger_repaired(L), 0);
  cr_expect_eq(dpo_ledger_count(L), 4);
  dpo_ledger_close(L);

  /* torn: a last line that is complete garbage */
  stat(path, &sb);
  append_raw(path, "\x01\x02garbage\n");
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 1, &L), DPO_OK);
  cr_expect_eq(dpo_ledger_repaired(L), 10);
  dpo_ledger_close(L);
  cr_assert_eq(truncate(path, sb.st_size), 0); /* (no charge followed: still there) */

  /* a stored total edited (the last line's total_eps set to 0): the chain refuses it, naming
   * the line (the totals are recomputed from the params in any case) */
  {
    size_t n;
    char *b = slurp(path, &n);
    b[n - 1] = 0;
    char *last = strrchr(b, '\n') + 1;
    json_object *o = json_tokener_parse(last);
    cr_assert_not_null(o);
    json_object_object_add(o, "total_eps", json_object_new_double(0.0));
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, (size_t)(last - b), f);
    fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    fclose(f);
    json_object_put(o);
    free(b);
  }
  cr_expect_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 1, &L), DPO_EFORMAT);
  cr_expect(strstr(dpo_errmsg(), "ledger.jsonl:5: journal line fails its chain check") != NULL,
            "%s", dpo_errmsg());

  /* a tampered charge, or garbage in the middle, is corruption, not a crash */
  {
    char *bad = strdup(orig), *p = strstr(bad, "\"charge_eps\":");
    cr_assert_not_null(p);
    p += strlen("\"charge_eps\":");
    *p = *p == '9' ? '1' : '9'; /* change the leading digit of the first charge */
    FILE *f = fopen(path, "wb");
    fputs(bad, f);
    fclose(f);
    free(bad);
  }
  cr_expect_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 1, &L), DPO_EFORMAT);
  {
    FILE *f = fopen(path, "wb");
    char *nl = strchr(orig, '\n');
    fwrite(orig, 1, (size_t)(nl - orig) + 1, f);
    fputs("not json\n", f);
    fputs(nl + 1, f);
    fclose(f);
  }
  cr_expect_eq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-6, path, 1, &L), DPO_EFORMAT);
  free(orig);
  rm_tmp(path);
}

/* eps of charge i in the kill test */
static double kill_eps(int i) { return 1e-4 * (1 + i % 7); }

Test(journal, sigkill_mid_loop_leaves_a_prefix) {
  mk_tmp();
  char path[128];
  snprintf(path, sizeof path, "%s/ledger.jsonl", tmpdir);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    dpo_ledger_t *L;
    if (dpo_ledger_open(MPI_COMM_NULL, 1e6, 0.0, path, 0, &L)) _exit(3);
    for (int i = 0; i < 100000000; i++) {
      dpo_charge_t c = lap(kill_eps(i));
      c.step = i;
      if (dpo_ledger_charge(L, &c, NULL)) _exit(4);
    }
    _exit(5); /* should never get here: killed first */
  }
  /* wait until the child has recorded a good number of charges, then kill it mid-loop */
  struct stat sb;
  for (int w = 0; w < 6000; w++) {
    if (stat(path, &sb) == 0 && sb.st_size > 60000) break; /* ~150 chained lines */
    usleep(5000);
  }
  cr_assert_eq(kill(pid, SIGKILL), 0);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child was not killed (%d)",
            status);

  size_t len;
  char *buf = slurp(path, &len);
  int lines = 0;
  long double sum = 0;
  char *p = buf, *nl;
  for (; (nl = strchr(p, '\n')); p = nl + 1, lines++) {
    *nl = 0;
    json_object *o = json_tokener_parse(p), *x, *pp;
    cr_assert_not_null(o, "line %d does not parse", lines);
    if (lines > 0) { /* charge i = lines - 1, in order: a prefix of the loop */
      int i = lines - 1;
      cr_assert(json_object_object_get_ex(o, "step", &x) && json_object_get_int(x) == i);
      cr_assert(json_object_object_get_ex(o, "params", &pp) &&
                json_object_object_get_ex(pp, "eps", &x));
      cr_assert_eq(json_object_get_double(x), kill_eps(i));
      sum += kill_eps(i);
      cr_assert(json_object_object_get_ex(o, "total_eps", &x));
      double tot = json_object_get_double(x);
      /* the ledger's total is the exact sum rounded up; this long double sum of i + 1
       * positive terms is within (i + 1) 2^-64 of it, relative (how many lines the child
       * wrote before the kill depends on the load) */
      long double slack = (long double)(i + 1) * 0x1p-64L;
      cr_assert((long double)tot >= sum * (1 - slack) && tot <= sum * (1 + 1e-14L + slack),
                "line %d: total %a vs %La", lines, tot, sum);
    }
    json_object_put(o);
  }
  size_t tail = len - (size_t)(p - buf); /* bytes of a torn last line, if the kill tore one */
  cr_expect(lines > 100, "only %d lines before the kill", lines);
  free(buf);

  dpo_ledger_t *L;
  double e;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, 1e6, 0.0, path, 1, &L), DPO_OK);
  cr_expect_eq(dpo_ledger_count(L), lines - 1);
  cr_expect_eq(dpo_ledger_repaired(L), (int64_t)tail);
  dpo_ledger_spent(L, &e, NULL);
  long double slack = (long double)lines * 0x1p-64L;
  cr_expect((long double)e >= sum * (1 - slack) && e <= sum * (1 + 1e-14L + slack), "%a vs %La",
            e, sum);
  dpo_ledger_close(L);
  rm_tmp(path);
}
