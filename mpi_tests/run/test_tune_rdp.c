/* The cost of a private selection (dpopt/tune.h, src/run/tune_cost.c) against independent
 * computations: the Liu-Talwar 3 eps0 and, for a Gaussian base (rho-zCDP: e(l) = rho l), the
 * closed form of Papernot & Steinke (2022) Thm 2 with eta = 1, gamma = 1/mean, where the min
 * over lambda^ is taken over all reals:
 *   e'(l) = rho (l - 1) + log(mean)/(l - 1) + 4 sqrt(rho log(mean)) - rho,
 * and below l* = 1 + sqrt(log(mean)/rho) the value at l* (RDP is monotone in the order); the
 * same expression as dp_accounting's test of RepeatAndSelectDpEvent with shape 1. */
#include <criterion/criterion.h>
#include <math.h>

#include "dpopt/privacy.h"
#include "dpopt/tune.h"

static double closed(double rho, double mean, double l) {
  double ls = 1 + sqrt(log(mean) / rho);
  if (l < ls) l = ls;
  return rho * (l - 1) + log(mean) / (l - 1) + 4 * sqrt(rho * log(mean)) - rho;
}

Test(tune, gaussian_base_matches_closed_form) {
  const double zs[] = {2.0, 7.0710678118654755, 20.0}, means[] = {1.0, 5.0, 30.0};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      double z = zs[a], mean = means[b], rho = 1 / (2 * z * z);
      dpo_rdp_curve_t c, t;
      dpo_rdp_curve_init(&c);
      cr_assert_eq(dpo_rdp_curve_add(&c, "none", 1, 1, z, 1), 0);
      cr_assert_eq(dpo_tune_rdp(&c, mean, &t), 0);
      for (int i = 0; i < t.n; i++) {
        double want = closed(rho, mean, t.alpha[i]);
        /* never below the theorem (the grid's min over lambda^ can only be larger), and
         * close to it: the grid has an order within ~10% of the best lambda^ */
        cr_assert(t.rdp[i] >= want * (1 - 1e-12), "z %g mean %g order %g: %.17g < %.17g", z,
                  mean, t.alpha[i], t.rdp[i], want);
        if (mean > 1 && sqrt(log(mean) / rho) <= 200)
          cr_assert(t.rdp[i] <= want * 1.03, "z %g mean %g order %g: %.17g vs %.17g", z, mean,
                    t.alpha[i], t.rdp[i], want);
      }
    }
}

/* mean = 1 is one repetition: log(mean) = 0 and the min over lambda^ of (1 - 1/l) e(l) is at
 * the smallest order: the bound is e(l) + 2 (1 - 1/1.25) e(1.25) */
Test(tune, one_repetition) {
  dpo_rdp_curve_t c, t;
  dpo_rdp_curve_init(&c);
  cr_assert_eq(dpo_rdp_curve_add(&c, "none", 1, 1, 3.0, 1), 0);
  cr_assert_eq(dpo_tune_rdp(&c, 1.0, &t), 0);
  double e0 = 1.25 / 18;
  for (int i = 0; i < t.n; i++) {
    double want = t.alpha[i] / 18 + 2 * 0.2 * e0;
    cr_assert(t.rdp[i] >= want && t.rdp[i] <= want * (1 + 1e-9), "order %g: %.17g vs %.17g",
              t.alpha[i], t.rdp[i], want);
  }
  cr_assert_neq(dpo_tune_rdp(&c, 0.5, &t), 0, "mean < 1 refused");
}

Test(tune, pure_liu_talwar) {
  double e0, e;
  cr_assert_eq(dpo_privacy_split(1.0, 3, &e0), 0);
  cr_assert_eq(dpo_tune_pure_eps(e0, &e), 0);
  cr_assert(e >= 3 * e0 && e <= 1.0, "3 eps0 = %.17g, fits 1", e);
  cr_assert_eq(dpo_tune_pure_eps(0.25, &e), 0);
  cr_assert_eq(e, 0.75);
  cr_assert_neq(dpo_tune_pure_eps(0, &e), 0);
  dpo_rdp_curve_t c;
  dpo_tune_pure_curve(0.5, &c);
  for (int i = 0; i < c.n; i++) {
    double want = fmin(0.5, c.alpha[i] * 0.125);
    cr_assert(c.rdp[i] >= want && c.rdp[i] <= want * (1 + 1e-9));
  }
}
