/* The method best at a budget (dpo_run_auto_algo in dpopt/run.h): `dpopt train --eps E` without
 * --algo, and every program that embeds the run API with privacy.eps and no algo.name, get the
 * same method, clip and relation.  Only public settings decide; a key the user set is never
 * changed (doc/design.md, "The default method"). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dpopt/run.h"

/* delta > 0: DP-SGD with Poisson batches (measured on a9a and Fashion-MNIST, README) */
static const char *dpo__auto_gauss(dpo_config_t *cfg, double eps, int softmax) {
  const char *why;
  /* Binary (logreg) rows: 256 rows, 10 epochs, step eta = 2 below eps 1; from eps 1 on the
   * noise no longer limits the run, its length does: eta 4 (eps >= 1) and 20 epochs
   * (eps >= 3), picked on a validation split of a9a's training rows (README).  Softmax
   * (K classes, d = K (p + 1) coordinates): the Fashion-MNIST recipe jobs/acceps/fmnist.ini
   * (1024 rows, 40 epochs, eta 5 with the snr2 rule, whose step also shrinks with the
   * noise share d sigma^2/m^2 of G^2, which grows with K d).  1024 rows and 40 epochs (the
   * same steps as 512 and 20, each mean gradient with half the noise, twice the work):
   * +0.22 points at eps 1.2 and +0.08 at 0.12 on the validation split, 4 paired seeds;
   * 1024 rows and 20 epochs lost 0.15, 2048 and 80 gained no more.  Public settings only. */
  /* Softmax from eps 3: clip l2:3 and 40 epochs, where the recipe is limited by clipping
   * and length, not by noise (validation split, eps scaled by 60000/50000, 2 runs a cell:
   * 0.8442 against 0.8367 at eps 3, 0.848 against 0.8387 at eps 10; at eps 1 and 0.1 the
   * recipe stays ahead: README). */
  const int sm3 = softmax && eps >= 3;
  const char *m = sm3 ? "512" : softmax ? "1024" : "256";
  const char *ep = softmax ? "40" : eps >= 3 ? "20" : "10";
  const char *eta = softmax ? "5" : eps >= 1 ? "4" : NULL;
  const char *def[][2] = {{"algo.name", "dp-sgd-rdp"}, {"privacy.neighbours", "add-remove"},
                          {"algo.sampling", "poisson"}, {"algo.m", m},
                          {"algo.epochs", ep}, {"privacy.clip", sm3 ? "l2:3" : "l2:1"},
                          {"algo.eta", eta}, {"algo.eta_rule", softmax ? "snr2" : NULL}};
  int rel = dpo_config_get(cfg, "privacy.neighbours") != NULL;
  for (size_t i = 0; i < sizeof def / sizeof def[0]; i++)
    if (def[i][1] && !dpo_config_get(cfg, def[i][0]) && !(rel && i == 2))
      dpo_config_set(cfg, def[i][0], def[i][1], "default (--eps without --algo)");
  if (rel && !strcasecmp(dpo_config_get(cfg, "privacy.neighbours"), "replace-one") &&
      !strcmp(dpo_config_get(cfg, "algo.sampling") ? dpo_config_get(cfg, "algo.sampling") : "", "poisson"))
    dpo_config_set(cfg, "algo.sampling", "wor", "default (--eps without --algo)");
  why = sm3 ? "delta > 0, softmax, eps >= 3: DP-SGD with Poisson batches (512 rows, 40 epochs, step eta 5 "
              "by the snr2 rule, clip l2:3) is the most accurate measured method"
      : softmax ? "delta > 0, softmax: DP-SGD with Poisson batches (1024 rows, 40 epochs, step eta 5 by the snr2 "
                  "rule, clip l2:1; jobs/acceps/fmnist.ini) is the most accurate measured method"
      : eps >= 3 ? "delta > 0, eps >= 3: DP-SGD with Poisson batches (256 rows, 20 epochs, step eta 4, clip l2:1, "
                   "noise from the PLD accountant) is the most accurate measured method"
      : eps >= 1 ? "delta > 0: DP-SGD with Poisson batches (256 rows, 10 epochs, step eta 4, clip l2:1, noise from "
                   "the PLD accountant) is the most accurate measured method at every eps"
                 : "delta > 0: DP-SGD with Poisson batches (256 rows, 10 epochs, clip l2:1, noise from the PLD "
                   "accountant) is the most accurate measured method at every eps";
  return why;
}

/* delta = 0: DP-NAG-opt on the schedule measured best at that budget */
static const char *dpo__auto_pure(dpo_config_t *cfg, double eps, int softmax) {
  const char *why;
  /* Pure eps: DP-NAG-opt (001 Sec. 4.1).  Two public choices, picked once from small grids
   * on a validation split of a9a's training rows (not a9a.t), like dp-sgd-rdp's step
   * constant (README, "Choosing a private method"); both change only convergence, never the
   * privacy (every step is charged as before, with the sensitivity of what it releases):
   * - clip l1:B1/3 when the row L1 bound B1 is declared and no clip is given: the L1
   *   sensitivity drops from 2 B1 to 2 B1/3 (Laplace noise / 3) while only rows with
   *   |logistic coefficient| > 1/3 are scaled; the step scale c grows to make up for it.
   * - at small eps (4.6) picks T' = 2 (eps = 0.1) and two steps of 1/L leave the majority
   *   class: a short fixed schedule with a longer step learns instead, beta = 0.5, the
   *   budget still allocated by (4.4) (T below: by the relation).  T is tied to eps, so it
   *   fits data of a9a's size (n ~ 3e4). */
  double B1 = NAN;
  char clip[64] = "";
  const char *src = "default (--eps without --algo)";
  /* add-remove neighbours, as with delta > 0: one row's gradient moves the released sum by
   * its clipped bound, not twice it, at the price of a public size (a noisy count of 1% of
   * eps unless --public-n is given).  A user's replace-one is kept. */
  if (!dpo_config_get(cfg, "privacy.neighbours"))
    dpo_config_set(cfg, "privacy.neighbours", "add-remove", src);
  const int ar = !strcasecmp(dpo_config_get(cfg, "privacy.neighbours"), "add-remove");
  if (softmax) {
    /* Softmax on raw pixels (Fashion-MNIST: d = K (p + 1) = 7850, L = B2^2/2 = 395): (4.6)
     * picks T' = 1 and steps of c/L barely move.  A fixed short schedule, T = 5 / 10 / 30
     * below eps 0.3 / from 0.3 / from 3, step 150/L, clip l1:B1/16 (a softmax gradient
     * has ||g||_1 = ||p - y||_1 ||u||_1 <= 2 B1: the Laplace noise of every step drops 16x,
     * while the step makes up for the scaled gradients), picked once from single runs on
     * a validation split of Fashion-MNIST's training images (README).  Privacy unchanged:
     * every step is charged as before, with the sensitivity of its release. */
    if (!dpo_config_get(cfg, "privacy.clip") &&
        !dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &B1) && B1 > 0 && isfinite(B1)) {
      snprintf(clip, sizeof clip, "l1:%.17g", B1 / 16);
      dpo_config_set(cfg, "privacy.clip", clip, src);
      /* under add-remove (half the noise) longer steps pay: 600/L below eps 0.3 (on T = 2)
       * and from eps 1 (validation split, 3 runs a cell, README) */
      const char *c = ar && (eps < 0.3 || eps >= 1) ? "600" : "150";
      if (!dpo_config_get(cfg, "algo.c")) dpo_config_set(cfg, "algo.c", c, src);
      if (ar && eps < 0.3 && !dpo_config_get(cfg, "algo.iters"))
        dpo_config_set(cfg, "algo.iters", "2", src);
    }
    dpo_config_set(cfg, "algo.name", "dp-nag-opt", src);
    if (!dpo_config_get(cfg, "algo.choose_T")) dpo_config_set(cfg, "algo.choose_T", "0", src);
    if (!dpo_config_get(cfg, "algo.iters"))
      dpo_config_set(cfg, "algo.iters", eps < 0.3 ? "5" : eps < 3 ? "10" : "30", src);
    why = "delta = 0, softmax: DP-NAG-opt on a short fixed schedule (T = 2 to 30, step 150/L or "
          "600/L, clip l1:B1/16) is the most accurate measured pure-eps method";
    return why;
  }
  if (!dpo_config_get(cfg, "privacy.clip") &&
      !dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &B1) && B1 > 0 && isfinite(B1))
    snprintf(clip, sizeof clip, "l1:%.17g", B1 / 3);
  /* the short schedule's range and lengths: under add-remove the noise of a step is half
   * that of replace-one at the same eps, and the long schedule wins from eps 0.15 (validation
   * split, 10 runs a cell: T = 5 below 0.075, 8 below 0.15) */
  const int short_T = eps < (ar ? 0.15 : 1);
  const char *c = short_T ? (clip[0] ? "12" : "4") : (clip[0] ? "4" : NULL);
  dpo_config_set(cfg, "algo.name", "dp-nag-opt", src);
  if (clip[0]) dpo_config_set(cfg, "privacy.clip", clip, src);
  if (c && !dpo_config_get(cfg, "algo.c")) dpo_config_set(cfg, "algo.c", c, src);
  if (short_T) {
    const char *T = ar ? (eps < 0.075 ? "5" : "8") : eps < 0.075 ? "3" : eps < 0.2 ? "5" : "8";
    if (!dpo_config_get(cfg, "algo.choose_T")) dpo_config_set(cfg, "algo.choose_T", "0", src);
    if (!dpo_config_get(cfg, "algo.beta")) dpo_config_set(cfg, "algo.beta", "0.5", src);
    if (!dpo_config_get(cfg, "algo.iters")) dpo_config_set(cfg, "algo.iters", T, src);
    why = clip[0] ? "delta = 0, small eps: DP-NAG-opt on a short fixed schedule (T = 3 to 8, "
                    "step 12/L, momentum 0.5, clip l1:B1/3) is the most accurate measured "
                    "pure-eps method"
                  : "delta = 0, small eps: DP-NAG-opt on a short fixed schedule (T = 3 to 8, "
                    "step 4/L, momentum 0.5) is the most accurate measured pure-eps method";
  } else {
    if (!dpo_config_get(cfg, "algo.iters")) /* T' <= 200 by (4.6), as in the demo */
      dpo_config_set(cfg, "algo.iters", "200", src);
    why = clip[0] ? "delta = 0: DP-NAG-opt is the most accurate measured pure-eps method "
                    "(step 4/L, clip l1:B1/3)"
                  : "delta = 0: DP-NAG-opt is the most accurate measured pure-eps method";
  }
  return why;
}

/* The method best at a budget, from measured results on a9a (README, "Choosing a private
 * method"; mean test accuracy of 5 unseeded runs, with intercept): with delta > 0, DP-SGD
 * (Poisson batches under add-remove, 256 rows, 10 epochs, clip l2:1) beats every pure-eps
 * method at eps = 0.1, 1 and 10; with delta = 0 DP-NAG-opt is the best pure-eps method, with
 * L1 clipping at a third of the declared row bound and on a short fixed schedule below eps 1.
 * Only public settings decide; a key the user set is never changed. */
const char *dpo_run_auto_algo(dpo_config_t *cfg) {
  double eps = NAN, delta = 0;
  if (dpo_config_get(cfg, "algo.name") || dpo_config_get(cfg, "run.resume") ||
      !dpo_config_get(cfg, "privacy.eps") || dpo_config_get_double(cfg, "privacy.eps", NAN, &eps) ||
      dpo_config_get_double(cfg, "privacy.delta", 0, &delta) || dpo_config_get(cfg, "parties.n"))
    return NULL;
  /* central and secagg take the same method: under secagg its Poisson batches are drawn by
   * every party from its own rows (amplified as in central: a9a, 3 parties, doc/results.md),
   * where the coordinator's wor batches would lose about 12 points; local: none picked */
  const char *trust = dpo_config_get(cfg, "privacy.trust");
  if (trust && strcasecmp(trust, "central") && strcasecmp(trust, "secagg")) return NULL;
  const char *model = dpo_config_get(cfg, "model.name");
  int softmax = model && !strcmp(model, "softmax");
  return delta > 0 ? dpo__auto_gauss(cfg, eps, softmax) : dpo__auto_pure(cfg, eps, softmax);
}
