/* Serial checks of the private algorithms' schedules (src/optim/dp_common.c) against the
 * papers' closed forms, each recomputed here independently:
 *  - DP-NAG-opt noise b_t for m = n against (001, (4.5)) with the NAG weights of Thm 4.1;
 *  - for m < n: the numerical solution of (4.4) satisfies its own stationarity condition and
 *    spends exactly eps through (3.3), and is NOT (4.5) (subsampling changes the optimum);
 *  - the choice of T (Remark 4.1) against a brute-force minimisation of (4.6);
 *  - the multistage lengths and steps against (001, (4.7)) and the weights of Thm 4.3 against a
 *    direct product;
 *  - minibatch sampling: sorted, distinct, uniform inclusion (chi-square);
 *  - weighted budget splits never exceed eps (exact check through the ledger). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "optim/algos.h"
#include "optim/dp_common.h"

/* a_{T,t}, t = 1..T, of (001, Thm 4.1), written out again */
static void nag_weights(int64_t T, double alpha, double mu, double L, double *a) {
  for (int64_t t = 1; t <= T; t++)
    a[t - 1] = pow(1.0 - sqrt(mu * alpha), (double)(T - t)) * alpha * (1.0 + alpha * L);
}

Test(dp, nag_opt_b_matches_4_5) {
  const int64_t T = 200, n = 100000;
  const double S1 = 40, eps = 1.0, L = 100.25 + 0.02, mu = 0.02, alpha = 1.0 / L;
  double a[200], b[200], e[200];
  nag_weights(T, alpha, mu, L, a);
  cr_assert_eq(dpo__dp_opt_schedule(a, T, S1, n, n, eps, b, e), 0);
  double sum13 = 0, esum = 0;
  for (int64_t j = 0; j < T; j++) sum13 += cbrt(a[j]);
  for (int64_t t = 0; t < T; t++) {
    double b45 = sum13 * S1 / (cbrt(a[t]) * (double)n * eps); /* (4.5) */
    cr_assert(fabs(b[t] / b45 - 1) < 1e-9, "b_%ld = %.17g, (4.5) gives %.17g", (long)t + 1, b[t],
              b45);
    /* eps_t = a^{1/3} / sum a^{1/3} eps (the line after (4.5)) */
    cr_assert(fabs(e[t] / (cbrt(a[t]) / sum13 * eps) - 1) < 1e-9);
    esum += e[t];
  }
  cr_assert(fabs(esum - eps) < 1e-12);
  /* the noise decreases over the iterations (the budget goes to late iterations) */
  cr_assert(b[0] > b[T - 1]);
}

Test(dp, opt_schedule_subsampled_is_stationary) {
  const int64_t T = 100, n = 100000, m = 1000;
  const double S1 = 40, eps = 1.0, L = 10, mu = 0.02, alpha = 1.0 / L;
  double a[100], b[100], e[100];
  nag_weights(T, alpha, mu, L, a);
  cr_assert_eq(dpo__dp_opt_schedule(a, T, S1, n, m, eps, b, e), 0);
  const double s = S1 / (double)m, gam = (double)m / n;
  double tot = 0, lam0 = NAN, maxdev = 0;
  for (int64_t t = 0; t < T; t++) {
    /* (3.3) */
    double et = log((exp(s / b[t]) - 1.0) * gam + 1.0);
    cr_assert(fabs(et / e[t] - 1) < 1e-9);
    tot += et;
    /* Lagrange: 2 a b = lambda * (-d eps/db) with d eps/db = -(s/b^2) gam e^{s/b} / (1 + gam(e^{s/b}-1)) */
    double der = (s / (b[t] * b[t])) * gam * exp(s / b[t]) / (1.0 + gam * expm1(s / b[t]));
    double lam = 2.0 * a[t] * b[t] / der;
    if (t == 0) lam0 = lam;
    double dev = fabs(lam / lam0 - 1);
    if (dev > maxdev) maxdev = dev;
  }
  cr_assert(fabs(tot - eps) < 1e-10, "total %.17g", tot);
  cr_assert(maxdev < 1e-8, "stationarity violated by %g", maxdev);
  /* amplification: the optimum under sampling differs from (4.5) by more than rounding */
  double sum13 = 0;
  for (int64_t j = 0; j < T; j++) sum13 += cbrt(a[j]);
  double b45 = sum13 * S1 / (cbrt(a[0]) * (double)n * eps);
  cr_assert(fabs(b[0] / b45 - 1) > 1e-6);
}

Test(dp, best_T_brute_force) {
  const double S1 = 40, eps = 1, L = 100.27, mu = 0.02, E0 = 10;
  const int64_t n = 100000, Tmax = 1500;
  const int32_t d = 20;
  for (int c = 0; c < 2; c++) {
    double alpha = (c ? 1.0 : 0.1) / L, p[3] = {alpha, mu, L};
    int64_t got = dpo__dp_best_T(Tmax, E0, d, S1, n, eps, dpo__dp_nag_loga, p);
    int64_t best = 0;
    double bv = INFINITY;
    for (int64_t Tp = 1; Tp <= Tmax; Tp++) {
      double q = 1.0 - sqrt(mu * alpha), s = 0;
      for (int64_t j = 1; j <= Tp; j++) s += cbrt(pow(q, (double)(Tp - j)) * alpha * (1 + alpha * L));
      double v = pow(q, (double)Tp) * E0 + d * S1 * S1 / ((double)n * n * eps * eps) * s * s * s;
      if (v < bv) bv = v, best = Tp;
    }
    cr_assert_eq(got, best, "c=%d: T' = %ld, brute force %ld", c, (long)got, (long)best);
    /* c = 1: the bound turns up again before Tmax (Remark 4.1: more iterations can hurt) */
    if (c) cr_assert(got > 1 && got < Tmax, "an interior optimum is expected (T' = %ld)", (long)got);
  }
}

Test(dp, masg_stages_4_7_and_thm43_weights) {
  const double L = 20, mu = 1, kappa = L / mu, p = 1, alpha1 = 1.0 / L;
  const int64_t n1 = 7, T = 400;
  dpo__dp_stages_t *st = NULL;
  cr_assert_eq(dpo__dp_stages_create(T, n1, kappa, p, alpha1, mu, L, &st), 0);
  /* (4.7): n_k = 2^k ceil(sqrt(kappa) ln 2^{p+2}), alpha_k = 1/(2^{2k} L) */
  int64_t i = 1;
  for (int k = 1; i <= T; k++) {
    int64_t nk = k == 1 ? n1 : (int64_t)(pow(2, k) * ceil(sqrt(kappa) * log(pow(2, p + 2))));
    double ak = k == 1 ? 1.0 / L : 1.0 / (pow(2, 2 * k) * L);
    for (int64_t j = 0; j < nk && i <= T; j++, i++) {
      cr_assert_eq(st->stage[i], k, "iteration %ld: stage %d, want %d", (long)i, st->stage[i], k);
      cr_assert(fabs(st->alpha[i] / ak - 1) < 1e-15);
    }
  }
  /* sqrt(20) ln 8 = 9.30 -> 10: stage 2 has 40 iterations, stage 3 has 80 */
  cr_assert_eq(st->stage[n1 + 40], 2);
  cr_assert_eq(st->stage[n1 + 41], 3);
  /* Thm 4.3 weights by a direct product */
  for (int64_t Tq = 1; Tq <= T; Tq += 37)
    for (int64_t t = 0; t <= Tq; t += 5) {
      double prod = 1;
      for (int64_t j = t + 1; j <= Tq; j++) prod *= 1.0 - sqrt(mu * st->alpha[j]);
      double w = pow(2.0, st->stage[Tq] - (t ? st->stage[t] : 1)) * prod;
      if (t) w *= st->alpha[t] * (1 + st->alpha[t] * L);
      double got = exp(dpo__dp_masg_loga(Tq, t, st));
      cr_assert(fabs(got / w - 1) < 1e-11, "a_{%ld,%ld} = %g, want %g", (long)Tq, (long)t, got, w);
    }
  dpo__dp_stages_destroy(st);
}

Test(dp, minibatch_sampling_uniform) {
  dpo_rng_t *rng = NULL;
  cr_assert_eq(dpo_rng_create(1, 42, 0, &rng), 0);
  enum { N = 50, M = 10, R = 20000 };
  int64_t ids[M], hash[32];
  long cnt[N] = {0};
  for (int r = 0; r < R; r++) {
    dpo__dp_sample(rng, N, M, ids, hash, 32);
    for (int k = 0; k < M; k++) {
      cr_assert(ids[k] >= 0 && ids[k] < N);
      if (k) cr_assert(ids[k] > ids[k - 1], "not sorted / not distinct");
      cnt[ids[k]]++;
    }
  }
  /* inclusion probability M/N for every id: chi-square with 49 dof, 99.99% quantile ~ 95 */
  double chi = 0, ex = (double)R * M / N;
  for (int i = 0; i < N; i++) chi += (cnt[i] - ex) * (cnt[i] - ex) / ex;
  cr_assert(chi < 95, "chi-square %g", chi);
  /* m = n takes every id */
  int64_t all[N], h2[128];
  dpo__dp_sample(rng, N, N, all, h2, 128);
  for (int i = 0; i < N; i++) cr_assert_eq(all[i], i);
  dpo_rng_destroy(rng);
}

Test(dp, weighted_split_fits_budget_exactly) {
  double w[1000], e[1000];
  for (int t = 0; t < 1000; t++) w[t] = 1.0 + 0.1 * sin(t) + t * 1e-3;
  const double eps = 0.7;
  cr_assert_eq(dpo__dp_split_weighted(eps, w, 1000, e), 0);
  dpo_ledger_t *L = NULL;
  cr_assert_eq(dpo_ledger_open(MPI_COMM_NULL, eps, 0, NULL, 0, &L), 0);
  for (int t = 0; t < 1000; t++) {
    dpo_charge_t c = {0};
    c.mechanism = DPO_MECH_LAPLACE;
    c.eps = e[t];
    c.sampling = DPO_SAMPLING_NONE;
    c.accounting = DPO_ACCOUNTING_PURE;
    c.dim = 1;
    c.step = t;
    cr_assert_eq(dpo_ledger_charge(L, &c, NULL), 0, "charge %d refused", t);
  }
  double sp, dl;
  dpo_ledger_spent(L, &sp, &dl);
  cr_assert(sp <= eps && sp > eps * (1 - 1e-9), "spent %.17g", sp);
  /* shares follow the weights */
  cr_assert(fabs(e[999] / e[0] - w[999] / w[0]) < 1e-12);
  dpo_ledger_close(L);
}
