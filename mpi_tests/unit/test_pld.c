/* PLD accountant (src/privacy/pld.c) against independent references:
 *  - the Gaussian: k releases of multiplier z are one release of z / sqrt(k); its exact
 *    profile (Balle-Wang 2018 Thm 8, re-derived here).  Pessimistic rounding moves every
 *    step's loss up by less than h, so exact(eps) <= pld(eps) <= exact(eps - k h) + slack;
 *  - the Poisson-subsampled Gaussian, one step: the hockey-stick divergence of both dominating
 *    pairs (add/remove) integrated numerically, same sandwich with k = 1;
 *  - compositions: PLD eps never above the RDP accountant's for the same releases. */
#include <criterion/criterion.h>
#include <math.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"

static double Phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double exact_delta(double z, double eps) {
  double d = Phi(1 / (2 * z) - eps * z) - exp(eps) * Phi(-1 / (2 * z) - eps * z);
  return d > 0 ? d : 0;
}
static double exact_eps(double z, double delta) {
  double lo = 0, hi = 200;
  if (exact_delta(z, 0) <= delta) return 0;
  for (int i = 0; i < 200; i++) {
    double m = 0.5 * (lo + hi);
    if (exact_delta(z, m) <= delta) hi = m;
    else lo = m;
  }
  return lo;
}

Test(pld, gaussian_compositions_match_exact_curve) {
  double zs[] = {2, 5}, h = 1e-4;
  int ks[] = {1, 4, 16};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      double z = zs[i], k = ks[j], zc = z / sqrt(k);
      double eps_pts[] = {0.5, 1, 2};
      for (int e = 0; e < 3; e++) {
        double d;
        cr_assert_eq(dpo_pld_delta("none", 0, 0, z, ks[j], eps_pts[e], h, &d), DPO_OK);
        double lo = exact_delta(zc, eps_pts[e]), hi = exact_delta(zc, eps_pts[e] - k * h);
        cr_assert(d >= lo, "z=%g k=%g eps=%g: pld delta %.10g below exact %.10g", z, k,
                  eps_pts[e], d, lo);
        cr_assert(d <= hi + 1e-9, "z=%g k=%g eps=%g: pld delta %.10g above %.10g", z, k,
                  eps_pts[e], d, hi);
      }
      double ep, ex = exact_eps(zc, 1e-5);
      cr_assert_eq(dpo_pld_eps("none", 0, 0, z, ks[j], 1e-5, h, &ep), DPO_OK);
      cr_assert(ep >= ex && ep <= ex + k * h + 1e-6, "z=%g k=%g: pld eps %.9g vs exact %.9g", z,
                k, ep, ex);
      /* poisson at q = 1 is the plain Gaussian */
      double eq;
      cr_assert_eq(dpo_pld_eps("poisson", 7, 7, z, ks[j], 1e-5, h, &eq), DPO_OK);
      cr_assert_float_eq(eq, ep, 1e-12);
    }
}

/* hockey-stick divergence of one Poisson-subsampled release, both directions, by the
 * trapezoid rule: P = (1-q) N(0,z^2) + q N(1,z^2), Q = N(0,z^2) */
static double numeric_delta(double q, double z, double eps) {
  double a = -40 * z - 2, b = 1 + 40 * z + 2, dr = 0, da = 0;
  int N = 400000;
  double hx = (b - a) / N;
  for (int i = 0; i <= N; i++) {
    double x = a + i * hx, w = (i == 0 || i == N) ? 0.5 : 1.0;
    double q0 = exp(-x * x / (2 * z * z)), q1 = exp(-(x - 1) * (x - 1) / (2 * z * z));
    double p = (1 - q) * q0 + q * q1;
    double r = p - exp(eps) * q0, s = q0 - exp(eps) * p;
    if (r > 0) dr += w * r;
    if (s > 0) da += w * s;
  }
  double c = hx / (z * sqrt(2 * M_PI));
  return fmax(dr, da) * c;
}

Test(pld, poisson_one_step_matches_integration) {
  double qs[] = {0.01, 0.2}, zs[] = {0.8, 2}, es[] = {0.05, 0.5, 1.5}, h = 1e-4;
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++)
      for (int e = 0; e < 3; e++) {
        double d;
        int64_t n = 1000, m = (int64_t)(qs[i] * n);
        cr_assert_eq(dpo_pld_delta("poisson", m, n, zs[k], 1, es[e], h, &d), DPO_OK);
        double lo = numeric_delta(qs[i], zs[k], es[e]);
        double hi = numeric_delta(qs[i], zs[k], es[e] - h);
        cr_assert(d >= lo * (1 - 1e-6), "q=%g z=%g eps=%g: %.10g below %.10g", qs[i], zs[k],
                  es[e], d, lo);
        cr_assert(d <= hi * (1 + 1e-6) + 1e-12, "q=%g z=%g eps=%g: %.10g above %.10g", qs[i],
                  zs[k], es[e], d, hi);
      }
}

Test(pld, never_above_rdp) {
  struct {
    int64_t m, n, T;
    double z;
  } cs[] = {{256, 32561, 200, 1.0}, {10, 1000, 100, 1.5}, {256, 32561, 1272, 1.38}};
  for (int i = 0; i < 3; i++) {
    double ep, er;
    dpo_rdp_curve_t c;
    dpo_rdp_curve_init(&c);
    cr_assert_eq(dpo_rdp_curve_add(&c, "poisson", cs[i].m, cs[i].n, cs[i].z, cs[i].T), DPO_OK);
    cr_assert_eq(dpo_rdp_eps(&c, 1e-5, &er, NULL), DPO_OK);
    cr_assert_eq(dpo_pld_eps("poisson", cs[i].m, cs[i].n, cs[i].z, cs[i].T, 1e-5, 1e-4, &ep),
                 DPO_OK);
    cr_assert(ep <= er && ep > 0.5 * er, "case %d: pld %.6g vs rdp %.6g", i, ep, er);
  }
  double ep;
  cr_assert_eq(dpo_pld_eps("wor", 10, 100, 1, 10, 1e-5, 0, &ep), DPO_EUNSUP);
}

Test(pld, calibrate_meets_target_below_rdp) {
  double z, zr, e;
  cr_assert_eq(dpo_pld_calibrate("poisson", 256, 32561, 300, 1.0, 1e-5, &z), DPO_OK);
  cr_assert_eq(dpo_rdp_calibrate("poisson", 256, 32561, 300, 1.0, 1e-5, &zr), DPO_OK);
  cr_assert_eq(dpo_pld_eps("poisson", 256, 32561, z, 300, 1e-5, dpo_pld_auto_h(1.0, 300), &e),
               DPO_OK);
  cr_assert(e <= 1.0 && z < zr, "pld z %.6g (eps %.6g) vs rdp z %.6g", z, e, zr);
}
