/* Renyi accountant (src/privacy/rdp.c) against closed forms, an independent numerical
 * integration of the subsampled Gaussian's Renyi divergence, the exact Gaussian privacy
 * profile (Balle-Wang 2018 Thm 8, re-derived here), calibration round trips, 003 Thm 3.1 on a
 * hand-computed case, 004 eq. (8), and the ledger in RDP mode. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"

/* ---- independent references ---- */

/* log of the integrand of E_{mu0}[(mix/mu0)^alpha], mu0 = N(0, z^2), mu1 = N(1, z^2),
 * mix = (1-q) mu0 + q mu1; mix/mu0 = 1 - q + q exp((2x - 1) / (2 z^2)). */
static double log_integrand(double x, double q, double z, double alpha) {
  double lmu0 = -x * x / (2 * z * z) - log(z * sqrt(2 * M_PI));
  double e = (2 * x - 1) / (2 * z * z);
  double lratio = e > 0 ? e + log(q + (1 - q) * exp(-e)) : log1p(q * expm1(e));
  return lmu0 + alpha * lratio;
}

/* D_alpha(mix || mu0) by the trapezoid rule in log space on a wide grid (the integrand is a
 * smooth mixture of Gaussian bumps centred in [0, alpha]: the rule converges geometrically). */
static double numeric_rdp(double q, double z, double alpha) {
  double a = -40 * z - 2, b = alpha + 40 * z + 2;
  int N = 400000;
  double h = (b - a) / N, mx = -INFINITY;
  double *v = malloc(sizeof(double) * (N + 1));
  for (int i = 0; i <= N; i++) {
    v[i] = log_integrand(a + i * h, q, z, alpha);
    if (v[i] > mx) mx = v[i];
  }
  double s = 0;
  for (int i = 0; i <= N; i++) s += (i == 0 || i == N ? 0.5 : 1.0) * exp(v[i] - mx);
  free(v);
  return (mx + log(s * h)) / (alpha - 1);
}

static double Phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
/* Balle-Wang 2018 Thm 8, mu = 1/z */
static double exact_delta(double z, double eps) {
  return Phi(1 / (2 * z) - eps * z) - exp(eps) * Phi(-1 / (2 * z) - eps * z);
}
static double exact_eps(double z, double delta) { /* bisection, to 1e-13 */
  double lo = 0, hi = 200;
  if (exact_delta(z, 0) <= delta) return 0;
  for (int i = 0; i < 200; i++) {
    double m = 0.5 * (lo + hi);
    if (exact_delta(z, m) <= delta) hi = m;
    else lo = m;
  }
  return lo;
}

static double curve_eps(const char *sampling, int64_t m, int64_t n, double z, int64_t T,
                        double delta) {
  dpo_rdp_curve_t c;
  dpo_rdp_curve_init(&c);
  cr_assert_eq(dpo_rdp_curve_add(&c, sampling, m, n, z, T), DPO_OK);
  double e;
  cr_assert_eq(dpo_rdp_eps(&c, delta, &e, NULL), DPO_OK);
  return e;
}

/* ---- tests ---- */

Test(rdp, gaussian_closed_form) {
  double zs[] = {0.5, 1, 3.7}, as[] = {1.25, 2, 7.5, 256};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      double r;
      cr_assert_eq(dpo_rdp_gaussian(zs[i], as[j], &r), DPO_OK);
      double ref = as[j] / (2 * zs[i] * zs[i]);
      cr_assert(r >= ref && r <= ref * (1 + 1e-14), "z=%g a=%g: %.17g vs %.17g", zs[i], as[j],
                r, ref);
    }
  double r;
  cr_assert_neq(dpo_rdp_gaussian(1, 1.0, &r), DPO_OK);
  cr_assert_neq(dpo_rdp_gaussian(0, 2.0, &r), DPO_OK);
}

Test(rdp, poisson_integer_orders_match_integration) {
  double qs[] = {0.01, 0.1, 0.5}, zs[] = {0.8, 1.1, 2, 4}, as[] = {2, 3, 8, 32};
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 4; k++)
      for (int j = 0; j < 4; j++) {
        double r, ref = numeric_rdp(qs[i], zs[k], as[j]);
        cr_assert_eq(dpo_rdp_poisson_gaussian(qs[i], zs[k], as[j], &r), DPO_OK);
        double g = as[j] / (2 * zs[k] * zs[k]);
        if (ref > g) ref = g; /* our value is capped by the unsampled Gaussian (valid) */
        cr_assert(r >= ref * (1 - 1e-7) - 1e-13, "q=%g z=%g a=%g: %.12g below %.12g", qs[i],
                  zs[k], as[j], r, ref);
        cr_assert(r <= ref * (1 + 1e-6) + 1e-11, "q=%g z=%g a=%g: %.12g above %.12g", qs[i],
                  zs[k], as[j], r, ref);
      }
}

Test(rdp, poisson_fractional_orders_bound_integration) {
  double qs[] = {0.01, 0.2}, zs[] = {0.9, 2}, as[] = {1.25, 1.5, 2.5, 7.3, 20.5};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++)
      for (int j = 0; j < 5; j++) {
        double r, ref = numeric_rdp(qs[i], zs[k], as[j]);
        cr_assert_eq(dpo_rdp_poisson_gaussian(qs[i], zs[k], as[j], &r), DPO_OK);
        /* a valid bound ... */
        cr_assert(r >= ref * (1 - 1e-9), "q=%g z=%g a=%g: %.12g below exact %.12g", qs[i],
                  zs[k], as[j], r, ref);
        /* ... and exact: the two-sided series (MTZ 2019 Sec. 3.3), no longer the chord of
         * the neighbouring integer orders (1.33x above at alpha = 1.5) */
        double g = as[j] / (2 * zs[k] * zs[k]);
        if (ref > g) ref = g;
        cr_assert(r <= ref * (1 + 1e-6) + 1e-11, "q=%g z=%g a=%g: %.12g vs exact %.12g", qs[i],
                  zs[k], as[j], r, ref);
      }
}

/* Published values: TF Privacy rdp_accountant_test.py test_compute_rdp_sequence (also in
 * dp_accounting): compute_rdp(q=0.01, sigma=2.5, steps=50, orders) at 1.5, 2.5, 5, 50, 100,
 * delta=1e-5 there; test_compute_rdp_scalar: (0.1, 2, 10 steps, order 5) = 0.07737 (5 places).
 * Ours must be within the published tolerance and never below the published value. */
Test(rdp, poisson_published_values) {
  double as[] = {1.5, 2.5, 5, 50, 100}, pub[] = {0.00065, 0.001085, 0.00218075, 0.023846,
                                                 167.416307};
  for (int j = 0; j < 5; j++) {
    double r;
    cr_assert_eq(dpo_rdp_poisson_gaussian(0.01, 2.5, as[j], &r), DPO_OK);
    r *= 50;
    cr_assert(fabs(r - pub[j]) <= 1e-5 && r >= pub[j] - 1e-9 * pub[j] - 1e-12,
              "order %g: %.9g vs published %.9g", as[j], r, pub[j]);
  }
  double r;
  cr_assert_eq(dpo_rdp_poisson_gaussian(0.1, 2, 5, &r), DPO_OK);
  cr_assert(fabs(10 * r - 0.07737) <= 5e-6, "%.9g vs 0.07737", 10 * r);
}

Test(rdp, wor_between_mixture_and_gaussian) {
  /* replace-one: P = (1-g) N(0) + g N(1) vs Q = N(0) is one pair of neighbouring outputs, so
   * the WOR RDP is at least the mixture divergence; sampling never exceeds the full release */
  int64_t ms[] = {10, 100}, n = 1000;
  double zs[] = {1, 3}, as[] = {2, 4, 16, 2.5};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++)
      for (int j = 0; j < 4; j++) {
        double r, lo = numeric_rdp((double)ms[i] / n, zs[k], as[j]);
        cr_assert_eq(dpo_rdp_wor_gaussian(ms[i], n, zs[k], as[j], &r), DPO_OK);
        cr_assert(r >= lo * (1 - 1e-9), "m=%lld z=%g a=%g: %.12g < %.12g", (long long)ms[i],
                  zs[k], as[j], r, lo);
        cr_assert(r <= as[j] / (2 * zs[k] * zs[k]) * (1 + 1e-12));
      }
  double r;
  cr_assert_eq(dpo_rdp_wor_gaussian(5, 5, 2, 3, &r), DPO_OK);
  cr_assert_float_eq(r, 3 / 8.0, 1e-12);
}

Test(rdp, conversion_never_below_exact_gaussian) {
  double zs[] = {0.3, 0.7, 1, 2, 5, 20}, ds[] = {1e-3, 1e-5, 1e-9};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) {
      double e = curve_eps("none", 0, 0, zs[i], 1, ds[j]), ex = exact_eps(zs[i], ds[j]);
      cr_assert(e >= ex, "z=%g delta=%g: rdp eps %.12g below exact %.12g", zs[i], ds[j], e, ex);
      cr_assert(e <= 1.6 * ex + 0.2, "z=%g delta=%g: rdp eps %.12g vs exact %.12g", zs[i], ds[j],
                e, ex);
      double e2;
      cr_assert_eq(dpo_gauss_exact_eps(zs[i], ds[j], &e2), DPO_OK);
      cr_assert(e2 >= ex - 1e-9 && e2 <= ex + 1e-9 * (1 + ex), "exact eps %.12g vs %.12g", e2, ex);
    }
  /* the per-order conversions themselves */
  double e1, e2;
  cr_assert_eq(dpo_rdp_eps_classic(3, 0.5, 1e-5, &e1), DPO_OK);
  cr_assert_float_eq(e1, 0.5 + log(1e5) / 2, 1e-7);
  cr_assert_eq(dpo_rdp_eps_balle(3, 0.5, 1e-5, &e2), DPO_OK);
  cr_assert_float_eq(e2, 0.5 + log(2.0 / 3) - (log(1e-5) + log(3.0)) / 2, 1e-7);
  cr_assert(e2 < e1);
}

Test(rdp, composition_adds_per_order) {
  dpo_rdp_curve_t a, b;
  dpo_rdp_curve_init(&a);
  dpo_rdp_curve_init(&b);
  for (int i = 0; i < 7; i++) cr_assert_eq(dpo_rdp_curve_add(&a, "poisson", 3, 100, 1.3, 1), 0);
  cr_assert_eq(dpo_rdp_curve_add(&b, "poisson", 3, 100, 1.3, 7), 0);
  for (int i = 0; i < a.n; i++) cr_assert_float_eq(a.rdp[i], b.rdp[i], 1e-12 * (1 + b.rdp[i]));
  for (int i = 0; i < a.n; i++) {
    double r;
    dpo_rdp_poisson_gaussian(0.03, 1.3, a.alpha[i], &r);
    cr_assert_float_eq(b.rdp[i], 7 * r, 1e-12 * (1 + b.rdp[i]));
  }
}

Test(rdp, calibrate_round_trip) {
  struct {
    const char *s;
    int64_t m, n, T;
    double eps, delta;
  } cs[] = {{"none", 0, 0, 1, 1.0, 1e-5},
            {"none", 0, 0, 100, 2.0, 1e-6},
            {"poisson", 256, 60000, 14000, 2.0, 1e-5},
            {"poisson", 1, 100, 1000, 0.5, 1e-5},
            {"wor", 100, 10000, 500, 1.0, 1e-5}};
  /* twice round: the second answers come from the process's memo of plans, so a memo that
   * answered for another plan (or kept a wrong z) fails the round trip here */
  for (int k = 0; k < 10; k++) {
    const int i = k % 5;
    double z;
    cr_assert_eq(dpo_rdp_calibrate(cs[i].s, cs[i].m, cs[i].n, cs[i].T, cs[i].eps, cs[i].delta, &z),
                 DPO_OK);
    double e = curve_eps(cs[i].s, cs[i].m, cs[i].n, z, cs[i].T, cs[i].delta);
    double e99 = curve_eps(cs[i].s, cs[i].m, cs[i].n, 0.99 * z, cs[i].T, cs[i].delta);
    cr_assert(e <= cs[i].eps, "%s: calibrated z=%g gives eps %.12g > %g", cs[i].s, z, e, cs[i].eps);
    cr_assert(e99 > cs[i].eps, "%s: 1%% less noise still within target (%.12g)", cs[i].s, e99);
  }
  /* a single Gaussian: the RDP calibration needs more noise than the exact profile */
  double z;
  cr_assert_eq(dpo_rdp_calibrate("none", 0, 0, 1, 1.0, 1e-5, &z), DPO_OK);
  cr_assert(exact_delta(z, 1.0) <= 1e-5);
}

/* The calibration evaluates at each bisection probe only the orders that met the target at the
 * bracket's upper end (an order's eps falls as z grows); the answer must be the bisection's
 * over every order, bit for bit, here replayed with all 45 orders at every probe. */
static double all_orders_z(const char *s, int64_t m, int64_t n, int64_t T, double eps,
                           double delta) {
  double lo = 1e-3, hi = 1;
  while (curve_eps(s, m, n, hi, T, delta) > eps) lo = hi, hi *= 2;
  while (hi - lo > 1e-7 * hi) {
    const double mid = 0.5 * (lo + hi);
    if (curve_eps(s, m, n, mid, T, delta) <= eps) hi = mid;
    else lo = mid;
  }
  return hi;
}

Test(rdp, calibrate_pruned_orders) {
  struct {
    const char *s;
    int64_t m, n, T;
    double eps, delta;
  } cs[] = {{"poisson", 1000, 1000000, 1000, 1.0, 1e-5}, {"poisson", 256, 32561, 1272, 1.0, 1e-5},
            {"poisson", 256, 60000, 14000, 2.0, 1e-5},  {"poisson", 50, 100, 20, 8.0, 1e-6},
            {"poisson", 0, 100, 10, 1.0, 1e-5},         {"wor", 100, 10000, 500, 1.0, 1e-5},
            {"none", 0, 0, 100, 0.3, 1e-6}};
  for (int i = 0; i < 7; i++) {
    double z;
    cr_assert_eq(dpo_rdp_calibrate(cs[i].s, cs[i].m, cs[i].n, cs[i].T, cs[i].eps, cs[i].delta, &z),
                 DPO_OK);
    const double zr = all_orders_z(cs[i].s, cs[i].m, cs[i].n, cs[i].T, cs[i].eps, cs[i].delta);
    cr_assert(z == zr, "%s %lld/%lld T=%lld: z %.17g, all orders %.17g", cs[i].s,
              (long long)cs[i].m, (long long)cs[i].n, (long long)cs[i].T, z, zr);
  }
}

Test(rdp, analytic_gaussian) {
  double es[] = {0.1, 0.5, 1, 4}, ds[] = {1e-5, 1e-8};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++) {
      double s;
      cr_assert_eq(dpo_gauss_analytic_sigma(2.0, es[i], ds[j], &s), DPO_OK);
      cr_assert(exact_delta(s / 2.0, es[i]) <= ds[j]);
      cr_assert(exact_delta(0.99 * s / 2.0, es[i]) > ds[j]);
      if (es[i] < 1) /* tighter than the classic calibration (Dwork-Roth Thm A.1) */
        cr_assert(s < 2.0 * sqrt(2 * log(1.25 / ds[j])) / es[i]);
    }
}

Test(rdp, abi_rho_hand_computed) {
  /* T=3, L=1: suffix sums of eta^2 sigma^2 = 3, 2, 1 (from t = 1); eta_t/(B_t sqrt(.)) =
   * 1/(2 sqrt 3) = 0.2887, 0.5/sqrt 2 = 0.3536, 0.5/1 = 0.5; rho = 2 * 0.5 = 1 */
  int64_t B[] = {2, 1, 1};
  double eta[] = {1, 0.5, 0.5}, sig[] = {1, 2, 2}, rho;
  cr_assert_eq(dpo_abi_rho(1.0, 3, B, eta, sig, &rho), DPO_OK);
  cr_assert(rho >= 1.0 && rho <= 1.0 + 1e-12, "rho=%.17g", rho);
  /* the first step dominates when it has the small batch */
  int64_t B2[] = {1, 4, 4};
  cr_assert_eq(dpo_abi_rho(3.0, 3, B2, eta, sig, &rho), DPO_OK);
  double ref = 2 * 3.0 * fmax(1 / sqrt(3.0), fmax(0.5 / (4 * sqrt(2.0)), 0.5 / 4));
  cr_assert_float_eq(rho, ref, 1e-12);
}

Test(rdp, admm_eq8) {
  double s, a;
  cr_assert_eq(dpo_admm_thm1_sigma(2.0, 1000, 50, 1.0, 1e-5, 0.5, &s, &a), DPO_OK);
  double aref = log(1e5) / 0.5 + 1;
  cr_assert_float_eq(a, aref, 1e-12);
  cr_assert_float_eq(s, sqrt(4.0 * aref * 50 / (2.0 * 1e6 * 1.0 * 0.5)), 1e-8);
  /* its guarantee holds under our accountant: T Gaussian steps with z = sigma / (c/n) */
  double e = curve_eps("none", 0, 0, s / (2.0 / 1000), 50, 1e-5);
  cr_assert(e <= 1.0, "eq. (8) noise gives eps %.6g > 1 under the RDP accountant", e);
}

/* ---- the ledger in RDP mode ---- */

Test(rdp, ledger_counts_steps_like_the_curve) {
  double sigma = 3.0, sens = 1.0, lambda;
  int64_t dim = 10;
  cr_assert_eq(dpo_mech_grid(sigma, &lambda), DPO_OK);
  double z = sigma / (sens + sqrt((double)dim) * lambda);
  /* how many Poisson steps fit (eps=1, delta=1e-5)? computed from the curve directly */
  int64_t kmax = 0;
  for (int64_t k = 1; k < 100000; k++)
    if (curve_eps("poisson", 50, 1000, z, k, 1e-5) <= 1.0) kmax = k;
    else break;
  cr_assert(kmax > 10);
  dpo_ledger_t *L;
  char path[] = "/tmp/dpo_rdp_ledgerXXXXXX";
  int fd = mkstemp(path);
  close(fd);
  unlink(path);
  /* Poisson subsampling is an add/remove analysis (MTZ 2019) */
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 1.0, 1e-5, path, 0, "rdp",
                                  DPO_NEIGHBOURS_ADD_REMOVE, &L), DPO_OK);
  dpo_charge_t c = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = sigma, .sensitivity = sens,
                    .dim = dim, .m = 50, .n = 1000, .sampling = DPO_SAMPLING_POISSON,
                    .accounting = DPO_ACCOUNTING_RDP, .neighbours = DPO_NEIGHBOURS_ADD_REMOVE};
  int64_t k = 0;
  for (;; k++) {
    c.step = k;
    int st = dpo_ledger_charge(L, &c, NULL);
    if (st == DPO_EBUDGET) break;
    cr_assert_eq(st, DPO_OK, "%s", dpo_errmsg());
  }
  cr_assert_eq(k, kmax, "ledger accepted %lld steps, curve says %lld", (long long)k,
               (long long)kmax);
  double e, d, e_ref = curve_eps("poisson", 50, 1000, z, kmax, 1e-5);
  cr_assert_eq(dpo_ledger_spent(L, &e, &d), DPO_OK);
  cr_assert_float_eq(e, e_ref, 1e-12);
  cr_assert_eq(d, 1e-5);
  cr_assert_eq(dpo_ledger_close(L), DPO_OK);
  /* resume recomputes the same totals; a basic-ledger resume of an rdp journal is refused */
  cr_assert_neq(dpo_ledger_open(MPI_COMM_NULL, 1.0, 1e-5, path, 1, &L), DPO_OK);
  /* ... and so is a resume under the other neighbouring relation */
  cr_assert_eq(dpo_ledger_open_rdp(MPI_COMM_NULL, 1.0, 1e-5, path, 1, &L), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "relation is add-remove, not replace-one"), "%s", dpo_errmsg());
  cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 1.0, 1e-5, path, 1, "rdp",
                                  DPO_NEIGHBOURS_ADD_REMOVE, &L), DPO_OK);
  cr_assert_eq(dpo_ledger_count(L), kmax);
  double e2;
  cr_assert_eq(dpo_ledger_spent(L, &e2, NULL), DPO_OK);
  cr_assert_eq(e2, e);
  cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_EBUDGET);
  dpo_ledger_close(L);
  FILE *devnull = fopen("/dev/null", "w");
  cr_assert_eq(dpo_ledger_print(path, devnull), DPO_OK);
  fclose(devnull);
  unlink(path);
}

Test(rdp, ledger_disjoint_and_rho) {
  dpo_ledger_t *L;
  cr_assert_eq(dpo_ledger_open_rdp(MPI_COMM_NULL, 5.0, 1e-6, NULL, 0, &L), DPO_OK);
  /* one pass of 4 disjoint phases with rho = 0.5 each costs one rho = 0.5 curve */
  dpo_charge_t c = {.mechanism = DPO_MECH_RDP_RHO, .rho = 0.5, .sampling = DPO_SAMPLING_DISJOINT,
                    .accounting = DPO_ACCOUNTING_RDP, .group = 1};
  for (int i = 0; i < 4; i++) cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  double e, ref;
  dpo_rdp_curve_t cv;
  dpo_rdp_curve_init(&cv);
  dpo_rdp_curve_add_rho(&cv, 0.5);
  dpo_rdp_eps(&cv, 1e-6, &ref, NULL);
  cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
  cr_assert_float_eq(e, ref, 1e-12);
  /* a sequential release closes the pass: curves add */
  c.sampling = DPO_SAMPLING_NONE;
  cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK);
  dpo_rdp_curve_add_rho(&cv, 0.5);
  dpo_rdp_eps(&cv, 1e-6, &ref, NULL);
  cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
  cr_assert_float_eq(e, ref, 1e-12);
  /* the rho curve is the Gaussian curve with z = 1/rho */
  double eg = curve_eps("none", 0, 0, 1 / 0.5, 2, 1e-6);
  cr_assert_float_eq(e, eg, 1e-9);
  /* wrong kinds are refused */
  dpo_charge_t bad = {.mechanism = DPO_MECH_LAPLACE, .eps = 1, .sampling = DPO_SAMPLING_NONE,
                      .accounting = DPO_ACCOUNTING_PURE};
  cr_assert_eq(dpo_ledger_charge(L, &bad, NULL), DPO_EINVAL);
  dpo_ledger_close(L);
  cr_assert_neq(dpo_ledger_open_rdp(MPI_COMM_NULL, 1.0, 0.0, NULL, 0, &L), DPO_OK);
}

/* The per-thread curves shared by successive ledgers (rdp.c, dpo__rdp_release_cached): six
 * releases (more than its four entries, so some are evicted and recomputed) charged in turn
 * on fresh ledgers, three rounds; every ledger's spent eps must be the one computed from the
 * release's own curve, never another key's. */
Test(rdp, shared_curve_cache_keys) {
  const double sigma[3] = {2.0, 3.0, 5.0};
  const int64_t m[2] = {20, 50};
  double lambda[3];
  for (int i = 0; i < 3; i++) cr_assert_eq(dpo_mech_grid(sigma[i], &lambda[i]), DPO_OK);
  for (int round = 0; round < 3; round++)
    for (int k = 0; k < 6; k++) {
      int i = k % 3, j = k / 3;
      dpo_ledger_t *L;
      cr_assert_eq(dpo_ledger_open_ex(MPI_COMM_NULL, 100.0, 1e-5, NULL, 0, "rdp",
                                      DPO_NEIGHBOURS_ADD_REMOVE, &L), DPO_OK);
      dpo_charge_t c = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = sigma[i], .sensitivity = 1.0,
                        .dim = 4, .m = m[j], .n = 1000, .sampling = DPO_SAMPLING_POISSON,
                        .accounting = DPO_ACCOUNTING_RDP, .neighbours = DPO_NEIGHBOURS_ADD_REMOVE};
      cr_assert_eq(dpo_ledger_charge(L, &c, NULL), DPO_OK, "%s", dpo_errmsg());
      double e, z = sigma[i] / (1.0 + 2.0 * lambda[i]);
      cr_assert_eq(dpo_ledger_spent(L, &e, NULL), DPO_OK);
      cr_assert_float_eq(e, curve_eps("poisson", m[j], 1000, z, 1, 1e-5), 1e-12,
                         "round %d release %d: %.17g", round, k, e);
      dpo_ledger_close(L);
    }
}
