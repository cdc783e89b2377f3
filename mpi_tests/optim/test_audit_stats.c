/* Statistics of dpopt audit (src/privacy/audit.c): the regularized incomplete beta and its
 * inverse against values computed with mpmath (30 digits; betainc(a, b, 0, x,
 * regularized=True) and bisection on it), Clopper-Pearson closed forms at k = 0 and k = n,
 * the published 95% interval for 5 of 100 (0.01643, 0.11283), and the threshold choice. */
#include <criterion/criterion.h>
#include <math.h>

#include "dpopt/audit.h"

#define near(x, ref, tol) cr_expect(fabs((x) - (ref)) <= (tol) * fabs(ref), "%.15g vs %.15g", (x), (ref))

Test(audit, betainc_reference) {
  near(dpo_audit_betainc(2, 3, 0.4), 0.5248, 1e-12);
  near(dpo_audit_betainc(0.5, 0.5, 0.1), 0.204832764699133451649, 1e-12);
  near(dpo_audit_betainc(50, 60, 0.45), 0.464235291430603535850, 1e-10);
  near(dpo_audit_betainc(1000, 500, 0.66), 0.290499935409880878626, 1e-9);
  cr_expect(dpo_audit_betainc(3, 4, 0) == 0 && dpo_audit_betainc(3, 4, 1) == 1);
  cr_expect(isnan(dpo_audit_betainc(-1, 4, 0.5)));
}

Test(audit, beta_ppf_reference) {
  near(dpo_audit_beta_ppf(0.025, 5, 96), 0.0164318791820521592645, 1e-9);
  near(dpo_audit_beta_ppf(0.975, 6, 95), 0.112834911105462765938, 1e-9);
  near(dpo_audit_beta_ppf(0.05, 250, 251), 0.462292309652946466510, 1e-9);
  near(dpo_audit_beta_ppf(0.975, 93, 408), 0.220799070564658302484, 1e-9);
}

Test(audit, clopper_pearson) {
  /* two-sided 95% for 5 of 100: each side at 0.025 */
  near(dpo_audit_cp_lower(5, 100, 0.025), 0.0164318791820521592645, 1e-9);
  near(dpo_audit_cp_upper(5, 100, 0.025), 0.112834911105462765938, 1e-9);
  /* closed forms: lower(n of n) = a^(1/n), upper(0 of n) = 1 - a^(1/n) */
  near(dpo_audit_cp_lower(20, 20, 0.05), pow(0.05, 1.0 / 20), 1e-9);
  near(dpo_audit_cp_upper(0, 20, 0.05), 1 - pow(0.05, 1.0 / 20), 1e-9);
  cr_expect(dpo_audit_cp_lower(0, 20, 0.05) == 0 && dpo_audit_cp_upper(20, 20, 0.05) == 1);
  /* ln((lower(250/500) - 1e-5) / upper(92/500)), each at 0.025 */
  near(dpo_audit_eps_lb(250, 500, 92, 500, 1e-5, 0.05), 0.723649777492451249023, 1e-8);
  cr_expect(isinf(dpo_audit_eps_lb(0, 500, 92, 500, 0, 0.05)));
}

Test(audit, best_event) {
  /* D: values 1..100, D': values -99..0 shifted down: {T > 0} separates them completely */
  double a[100], b[100];
  for (int i = 0; i < 100; i++) {
    a[i] = i + 1;
    b[i] = -i;
  }
  dpo_audit_event_t ev;
  cr_assert_eq(dpo_audit_best_event(a, 100, b, 100, 0, 0.05, &ev), 0);
  /* {T > 0} on D or, equally good, {T <= 0} on D' */
  int64_t k0 = dpo_audit_count(&ev, a, 100), k1 = dpo_audit_count(&ev, b, 100);
  cr_expect(ev.thr >= 0 && ev.thr < 1, "thr %g", ev.thr);
  cr_expect(ev.swap ? k0 == 0 && k1 == 100 : k0 == 100 && k1 == 0, "counts %lld %lld",
            (long long)k0, (long long)k1);
  /* the bound of a perfect separation: ln(lower(100/100) / upper(0/100)) at 0.025 each */
  near(ev.eps_lb, log(pow(0.025, 0.01) / (1 - pow(0.025, 0.01))), 1e-9);
  /* the roles swapped: D' is the more likely one, the event is T <= thr or swap */
  cr_assert_eq(dpo_audit_best_event(b, 100, a, 100, 0, 0.05, &ev), 0);
  near(ev.eps_lb, log(pow(0.025, 0.01) / (1 - pow(0.025, 0.01))), 1e-9);
  /* identical samples: no positive bound */
  cr_assert_eq(dpo_audit_best_event(a, 100, a, 100, 0, 0.05, &ev), 0);
  cr_expect(!(ev.eps_lb > 0));
}

/* Gaussian DP (issue 39's white-box audit): closed forms of Dong, Roth & Su 2019. */
Test(audit, gdp_closed_forms) {
  /* Phi and its inverse: Phi(1.959963985) = 0.975 */
  cr_assert(fabs(dpo_audit_phi(1.959963985) - 0.975) < 1e-9);
  cr_assert(fabs(dpo_audit_phi_inv(0.975) - 1.959963985) < 1e-8);
  /* delta(0) of mu-GDP is the total variation 2 Phi(mu/2) - 1: 0.382924922548 at mu = 1 */
  cr_assert(fabs(dpo_audit_gdp_delta(1.0, 0.0) - 0.382924922548) < 1e-10);
  /* eps(delta) inverts delta(eps) */
  for (double mu = 0.25; mu <= 4; mu *= 2) {
    double e = dpo_audit_gdp_eps(mu, 1e-5);
    cr_assert(fabs(dpo_audit_gdp_delta(mu, e) - 1e-5) < 1e-9, "mu %g eps %g", mu, e);
  }
  /* more noise, less eps */
  cr_assert(dpo_audit_gdp_eps(0.5, 1e-5) < dpo_audit_gdp_eps(1.0, 1e-5));
  /* mu bound of a test: FPR = FNR = Phi(-1) on huge samples is mu = 2 from below */
  int64_t n = 100000000, k = (int64_t)(n * dpo_audit_phi(-1.0));
  double mu = dpo_audit_mu_lb(k, n, k, n, 0.05);
  cr_assert(mu < 2 && mu > 1.99, "mu_lb %g", mu);
  /* no test: FPR = 1 - FNR gives no positive bound */
  cr_assert(dpo_audit_mu_lb(500, 1000, 500, 1000, 0.05) < 0);
}

/* The one-run audit's bound (Steinke, Nasr and Jagielski 2023): against an independent
 * computation (Python, the binomial tail by direct summation of lgamma pmf terms instead of the
 * incomplete beta; the reference algorithm's binary search) at beta = 0.05. */
Test(audit, one_run_bound) {
  static const struct { int64_t m, r, v; double delta, lb, p1; } c[] = {
      {1000, 600, 600, 1e-5, 5.2703994635, 0.000106928576747},
      {100, 100, 100, 1e-5, 3.4902159553, 5.6330898432e-05},
      {1000, 100, 70, 0, 0.4716718616, 0.793631818552},
      {1000, 200, 150, 1e-5, 0.8199729122, 0.304422512435},
      {500, 500, 500, 0, 5.1144221700, 9.46430787651e-69},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    double lb = dpo_audit1_eps_lb(c[i].m, c[i].r, c[i].v, c[i].delta, 0.05);
    double p1 = dpo_audit1_pvalue(c[i].m, c[i].r, c[i].v, 1.0, c[i].delta);
    cr_assert(fabs(lb - c[i].lb) < 1e-8, "case %zu: eps_lb %.10f, expected %.10f", i, lb, c[i].lb);
    cr_assert(fabs(p1 - c[i].p1) <= 1e-9 * c[i].p1, "case %zu: p(1) %.12g vs %.12g", i, p1, c[i].p1);
  }
  /* half right is no evidence; out-of-range arguments are refused */
  cr_assert_eq(dpo_audit1_eps_lb(1000, 100, 50, 0, 0.05), 0.0);
  cr_assert(isnan(dpo_audit1_eps_lb(10, 20, 5, 0, 0.05)));
}

/* The one-run audit's power where test_audit_onerun_power.sh runs it (one Laplace release at
 * eps 1, the l1 clip saturated, canary value a = sqrt(14)): each canary is eps' = a / (a + 1)
 * randomized response, twice that with the noise halved, and 500 guesses are right with
 * probability q(eps') = 1 / (1 + e^-eps').  Three standard deviations below the halved
 * expectation the bound (at alpha / 4, one of four guess counts) exceeds the claim; three above
 * the intact one it stays below; the smallest count over the claim is 388 (the Python
 * computation of the previous test's cases). */
Test(audit, one_run_power) {
  const double a = sqrt(14.0), e1 = a / (a + 1);
  for (int half = 0; half <= 1; half++) {
    const double q = 1 / (1 + exp(-(half ? 2 : 1) * e1)), E = 500 * q, sd = sqrt(500 * q * (1 - q));
    const int64_t v = (int64_t)(half ? floor(E - 3 * sd) : ceil(E + 3 * sd));
    const double lb = dpo_audit1_eps_lb(1000, 500, v, 0, 0.05 / 4);
    cr_assert(half ? lb > 1 : lb < 1, "noise %s: %lld right of 500 (expected %.1f): eps_lb %g",
              half ? "halved" : "intact", (long long)v, E, lb);
  }
  cr_assert(dpo_audit1_eps_lb(1000, 500, 388, 0, 0.05 / 4) > 1);
  cr_assert(dpo_audit1_eps_lb(1000, 500, 387, 0, 0.05 / 4) <= 1);
}

/* What the one-run audit can reach before it runs.  16 canaries: every guess right at r = 16
 * bounds eps by ln(q / (1 - q)), q = (alpha / 4)^(1/16) (1.15502 at alpha 0.05), the ceiling;
 * 15 right bound it by 0.673 and 8 of 8 by 0.316, so a claim of 1 is exceeded only by 16 of 16,
 * which canaries that carry nothing (mu = 0) reach with probability 2^-16.  A claim above the
 * ceiling is never exceeded; canaries that carry everything (mu = 40) exceed it (the bound on
 * that probability is then 1); the bound grows with mu. */
Test(audit, one_run_reach) {
  const double q = pow(0.05 / 4, 1.0 / 16);
  near(dpo_audit1_ceiling(16, 0, 0.05), log(q / (1 - q)), 1e-9);
  cr_assert_eq(dpo_audit1_guesses(16, 0), 0);
  cr_assert_eq(dpo_audit1_guesses(16, 1), 2);
  cr_assert_eq(dpo_audit1_guesses(16, 2), 8);
  cr_assert_eq(dpo_audit1_guesses(16, 3), 16);
  cr_assert_eq(dpo_audit1_guesses(1000, 0), 100);
  near(dpo_audit1_power_gdp(16, 1, 0, 0.05, 0), pow(2, -16), 1e-9);
  cr_assert_eq(dpo_audit1_power_gdp(16, 1.2, 0, 0.05, 40), 0.0);
  cr_assert(dpo_audit1_power_gdp(16, 1, 0, 0.05, 40) >= 0.999);
  const double p1 = dpo_audit1_power_gdp(16, 1, 1e-3, 0.05, 0.5),
               p2 = dpo_audit1_power_gdp(16, 1, 1e-3, 0.05, 1.0);
  cr_assert(p1 > pow(2, -16) && p1 < p2 && p2 < 1, "mu 0.5: %g, mu 1: %g", p1, p2);
}
