/* The minibatch samplers of privacy/sample.h against the laws the accountant assumes:
 * exact comparisons against 128-bit integer arithmetic, the fast geometric path equal draw for
 * draw to the exact one, Geometric(q) gaps, Poisson batch sizes ~ Binomial(n, q) and row
 * inclusion frequencies q; without-replacement batches of m distinct rows, each row in a
 * fraction m/n of them.  Seeded streams; tolerances of 5-6 standard errors (a failure is a
 * wrong law, not bad luck: the seeds are fixed). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "dpopt/rng.h"
#include "privacy/sample.h"

typedef unsigned __int128 u128;

/* chi-square of observed counts against expected ones (bins with expectation >= 5) */
static double chi2(const double *obs, const double *expc, int nb, int *df) {
  double c = 0;
  *df = -1;
  for (int i = 0; i < nb; i++) {
    c += (obs[i] - expc[i]) * (obs[i] - expc[i]) / expc[i];
    (*df)++;
  }
  return c;
}
/* a chi-square(df) value this large has probability < 1e-6 */
static double chi2_bound(int df) { return df + 7.0 * sqrt(2.0 * df) + 10.0; }

Test(sample, less_matches_int128) {
  dpo_rng_t *rng;
  cr_assert_eq(dpo_rng_create(1, 7, 0, &rng), 0);
  int checked = 0;
  for (int k = 0; k <= 12; k++) {
    u128 a = 1, b = 1;
    for (int j = 0; j < k; j++) a *= 4, b *= 7; /* rho = 4/7 */
    for (int r = 0; r < 200; r++) {
      uint64_t w[DPO__GEOM_WORDS];
      int nw = 1, out = -1;
      w[0] = r == 0 ? 0 : r == 1 ? UINT64_MAX : dpo_rng_u64(rng);
      u128 lhs = (u128)w[0] * b, rhs = a << 64; /* V < rho^k <=> z 7^k < 4^k 2^64 (one word) */
      cr_assert_eq(dpo__geom_less(rng, w, &nw, 3, 7, k, &out), 0);
      if (lhs + b <= rhs) cr_assert_eq(out, 1, "k=%d z=%llu", k, (unsigned long long)w[0]);
      else if (lhs >= rhs) cr_assert_eq(out, 0, "k=%d z=%llu", k, (unsigned long long)w[0]);
      else continue;
      cr_assert_eq(nw, 1, "decided by the first word, none drawn");
      checked++;
    }
    /* a V interval that contains rho^k: more words are drawn */
    if (k > 0) {
      uint64_t w[DPO__GEOM_WORDS];
      int nw = 1, out = -1;
      w[0] = (uint64_t)(((u128)a << 64) / b);
      cr_assert_eq(dpo__geom_less(rng, w, &nw, 3, 7, k, &out), 0);
      cr_assert(nw >= 2 && (out == 0 || out == 1));
    }
  }
  cr_assert_gt(checked, 2500);
  dpo_rng_destroy(rng);
}

Test(sample, fast_path_equals_exact_path) {
  const int64_t mn[][2] = {{1, 10}, {5, 7}, {1000, 200000}, {1, 3}};
  for (int c = 0; c < 4; c++) {
    dpo_rng_t *r1, *r2;
    cr_assert_eq(dpo_rng_create(1, 11 + c, 0, &r1), 0);
    cr_assert_eq(dpo_rng_create(1, 11 + c, 0, &r2), 0);
    for (int i = 0; i < (c == 2 ? 100 : 2000); i++) {
      int64_t g1, g2;
      cr_assert_eq(dpo__geom_gap(r1, mn[c][0], mn[c][1], 0, &g1), 0);
      cr_assert_eq(dpo__geom_gap(r2, mn[c][0], mn[c][1], 1, &g2), 0);
      cr_assert_eq(g1, g2, "m=%lld n=%lld draw %d", (long long)mn[c][0], (long long)mn[c][1], i);
    }
    dpo_rng_destroy(r1);
    dpo_rng_destroy(r2);
  }
}

static void check_geometric(int64_t m, int64_t n, int N, int exact, uint64_t seed) {
  dpo_rng_t *rng;
  cr_assert_eq(dpo_rng_create(1, seed, 0, &rng), 0);
  double q = (double)m / (double)n, obs[64] = {0}, expc[64];
  int nb = 0; /* bins 0..nb-2, tail bin nb-1 */
  double p = q, tail = 1;
  while (nb < 63 && N * p >= 5 && N * (tail - p) >= 5) {
    expc[nb++] = N * p;
    tail -= p;
    p *= 1 - q;
  }
  expc[nb++] = N * tail;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    int64_t g;
    cr_assert_eq(dpo__geom_gap(rng, m, n, exact, &g), 0);
    cr_assert_geq(g, 0);
    obs[g < nb - 1 ? g : nb - 1] += 1;
    sum += (double)g;
  }
  int df;
  double c = chi2(obs, expc, nb, &df);
  cr_assert_lt(c, chi2_bound(df), "m=%lld n=%lld: chi2 %g df %d", (long long)m, (long long)n, c,
               df);
  double mean = (1 - q) / q, sd = sqrt((1 - q) / (q * q) / N);
  cr_assert_lt(fabs(sum / N - mean), 6 * sd, "mean gap %g, expected %g", sum / N, mean);
  dpo_rng_destroy(rng);
}

Test(sample, geometric_law) {
  check_geometric(1, 10, 20000, 0, 1);
  check_geometric(5, 7, 20000, 0, 2);
  check_geometric(3, 1000, 20000, 0, 3);
  check_geometric(1, 10, 3000, 1, 4); /* the exact path alone */
  check_geometric(2, 3, 3000, 1, 5);
}

Test(sample, poisson_batches_binomial_and_uniform) {
  /* n = 200 rows held, the rate q = m / npub from a public size npub != n (add-remove) */
  const int64_t n = 200, m = 20, npub = 250;
  const int R = 20000;
  const double q = (double)m / (double)npub;
  dpo_rng_t *rng;
  cr_assert_eq(dpo_rng_create(1, 99, 0, &rng), 0);
  int64_t *ids = NULL, cap = 0, mb;
  double rows[200] = {0}, sizes[201] = {0};
  for (int r = 0; r < R; r++) {
    cr_assert_eq(dpo__poisson_batch(rng, m, npub, n, &ids, &cap, &mb), 0);
    for (int64_t k = 0; k < mb; k++) {
      cr_assert(ids[k] >= 0 && ids[k] < n && (k == 0 || ids[k] > ids[k - 1]));
      rows[ids[k]] += 1;
    }
    sizes[mb] += 1;
  }
  /* batch sizes against Binomial(n, q), sizes with small expectations pooled into the tails */
  double obs[201], expc[201], pmf[201];
  for (int k = 0; k <= n; k++)
    pmf[k] = exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + k * log(q) +
                 (n - k) * log1p(-q));
  int lo = 0, hi = (int)n;
  double plo = pmf[0], olo = sizes[0], phi = pmf[n], ohi = sizes[n];
  while (R * plo < 5) plo += pmf[++lo], olo += sizes[lo];
  while (R * phi < 5) phi += pmf[--hi], ohi += sizes[hi];
  int nb = 0;
  obs[nb] = olo, expc[nb++] = R * plo;
  for (int k = lo + 1; k < hi; k++) obs[nb] = sizes[k], expc[nb++] = R * pmf[k];
  obs[nb] = ohi, expc[nb++] = R * phi;
  int df;
  double c = chi2(obs, expc, nb, &df);
  cr_assert_lt(c, chi2_bound(df), "batch sizes: chi2 %g df %d", c, df);
  /* every row kept in a fraction q of the batches: counts ~ Binomial(R, q) */
  double sd = sqrt(R * q * (1 - q)), cr = 0;
  for (int i = 0; i < n; i++) {
    cr_assert_lt(fabs(rows[i] - R * q), 6 * sd, "row %d kept %g times, expected %g", i, rows[i],
                 R * q);
    cr += (rows[i] - R * q) * (rows[i] - R * q) / (sd * sd);
  }
  cr_assert_lt(cr, chi2_bound((int)n), "row frequencies: chi2 %g df %d", cr, (int)n);
  /* m = n keeps every row */
  cr_assert_eq(dpo__poisson_batch(rng, n, n, n, &ids, &cap, &mb), 0);
  cr_assert_eq(mb, n);
  free(ids);
  dpo_rng_destroy(rng);
}

/* a batch's gaps are dpo__geom_gap's draws from the same stream (the batch computes ln rho once
 * for all its gaps, dpo__geom_gap once per gap): both rates' paths (q <= 1/2 and q > 1/2) */
Test(sample, poisson_batch_is_geom_gaps) {
  const int64_t mn[][3] = {{1000, 1000000, 1000000}, {7, 10, 200}, {20, 250, 200}, {1, 3, 50}};
  for (int c = 0; c < 4; c++) {
    dpo_rng_t *r1, *r2;
    cr_assert_eq(dpo_rng_create(1, 42 + c, 0, &r1), 0);
    cr_assert_eq(dpo_rng_create(1, 42 + c, 0, &r2), 0);
    int64_t *ids = NULL, cap = 0, mb;
    for (int b = 0; b < (c == 0 ? 20 : 500); b++) {
      cr_assert_eq(dpo__poisson_batch(r1, mn[c][0], mn[c][1], mn[c][2], &ids, &cap, &mb), 0);
      int64_t i = -1, k = 0, g;
      for (;;) {
        cr_assert_eq(dpo__geom_gap(r2, mn[c][0], mn[c][1], 0, &g), 0);
        if (g > mn[c][2] - 2 - i) break;
        i += g + 1;
        cr_assert(k < mb && ids[k] == i, "case %d batch %d: id %lld", c, b, (long long)k);
        k++;
      }
      cr_assert_eq(k, mb, "case %d batch %d: %lld ids, %lld gaps", c, b, (long long)mb,
                   (long long)k);
    }
    free(ids);
    dpo_rng_destroy(r1);
    dpo_rng_destroy(r2);
  }
}

Test(sample, wor_batches_uniform) {
  const int64_t n = 150, m = 10;
  const int R = 20000;
  const double q = (double)m / (double)n;
  dpo_rng_t *rng;
  cr_assert_eq(dpo_rng_create(1, 5, 0, &rng), 0);
  int64_t pool[150], ids[10];
  double rows[150] = {0};
  for (int i = 0; i < n; i++) pool[i] = i;
  for (int r = 0; r < R; r++) {
    dpo__wor_batch(rng, m, n, pool, ids);
    for (int k = 0; k < m; k++) {
      cr_assert(ids[k] >= 0 && ids[k] < n && (k == 0 || ids[k] > ids[k - 1]));
      rows[ids[k]] += 1;
    }
  }
  /* each row in a fraction m/n of the batches (the counts sum to R m: n - 1 degrees) */
  double sd = sqrt(R * q * (1 - q)), cr = 0;
  for (int i = 0; i < n; i++) {
    cr_assert_lt(fabs(rows[i] - R * q), 6 * sd, "row %d in %g batches", i, rows[i]);
    cr += (rows[i] - R * q) * (rows[i] - R * q) / (R * q);
  }
  cr_assert_lt(cr, chi2_bound((int)n - 1), "row frequencies: chi2 %g", cr);
  dpo_rng_destroy(rng);
}
