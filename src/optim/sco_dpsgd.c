/* DP-SGD under the Renyi accountant ("dp-sgd-rdp"): the baseline of the 003 experiment.
 * Projected minibatch SGD on K (ball of diameter algo.D) with per-example gradients bounded by
 * L (privacy.clip = l2:C, or the declared row bound for logistic regression, sco_common.h):
 *
 *   B_t = a batch drawn on rank 0 from the solver's dpo_rng_t, exactly as the ledger records it:
 *     algo.sampling = wor (default): m = algo.m of the n examples without replacement
 *       (Wang-Balle-Kasiviswanathan 2019, a replace-one analysis);
 *     algo.sampling = poisson: each example independently with probability q = m/n, drawn as
 *       exact Geometric(q) gaps between kept rows (privacy/sample.h: O(m) per step, the law of n
 *       independent Bernoulli(q)); Mironov-Talwar-Zhang 2019 is an add/remove analysis.
 *   n here is the PUBLIC size n_pub (dpo__sco_public_n): under add-remove the row count is
 *   private, so q = m/n_pub, the steps from --epochs and the default m come from a declared
 *   privacy.public_n or from a noisy count charged first (1% of eps by default); the rows held
 *   are still all sampled, each with probability q.
 *   The sensitivity is dpo_sens(privacy.neighbours, L): 2L under replace-one, L under
 *   add-remove.  Each sampling runs only under the relation its amplification bound is proved
 *   for (wor: replace-one, poisson: add-remove); the other pair is refused at creation.
 *   g_t = (sum_{i in B_t} grad f(x_t, u_i) + N(0, sigma^2 I)) / m + grad of the model's
 *         regularizer (public);
 *   v_{t+1} = beta v_t + g_t,  x_{t+1} = Pi_K(x_t - lr_t v_{t+1})   (heavy-ball momentum)
 *   output: the average of the released iterates x_{T0+1} .. x_T (post-processing).
 * m = algo.m (default ceil(sqrt n)).  Steps T, the plan declared before anything runs and the
 * length the noise is calibrated for: algo.T if set, else algo.iters (--iters K: exactly K
 * steps, each charged), else ceil(algo.epochs * n / m) (--epochs, default 1).
 * Noise: sigma = z * sensitivity with z = dpo_rdp_calibrate(sampling, m, n, T, eps, delta)
 * (the smallest multiplier for which T such releases are (eps, delta)-DP under the RDP
 * accountant), widened for the grid snapping; under privacy.accountant = pld (the default) with
 * Poisson or wor batches, z is then lowered to the smallest multiplier whose T releases the run's
 * own ledger accepts (dpsgd_ledger_z: dpo_ledger_plan_fits, the PLD bound; Poisson: 3-6% below
 * RDP on a9a; wor: the dominating pair of Zhu, Dong and Wang 2022 for m-of-n batches under
 * replace-one, pld.c, against which the RDP bound is up to about 3x loose in eps).
 * algo.z overrides z (then the ledger, not the calibration, decides how many steps fit).
 *
 * Step size (algo.schedule), from public quantities only (L, d, m, sigma, T; never the data):
 *   G^2 = L^2 + d sigma^2 / m^2 bounds E||g_t||^2 (per-example gradients <= L, the noise of
 *   the mean has second moment d sigma^2/m^2).
 *   theory:   the 003 baseline: lr = D / (G sqrt T) constant, beta = 0, K = the ball of
 *             diameter algo.D (default 2), output the average of all T iterates (projected
 *             SGD's guarantee D G / sqrt T).  This worst-case step is ~D/sqrt(T) per unit
 *             gradient: on a9a it leaves the model far from the optimum (issue 13).
 *   cosine (default), step, constant: lr_t = lr s(t) with lr = algo.lr, default
 *             DPO__DPSGD_ETA (1 - beta) / G: each step moves the iterate by at most ~ETA in
 *             expectation once momentum has built up (the step in units of the public gradient
 *             bound: invariant to rescaling the clip norm, shorter when the noise dominates,
 *             d sigma^2/m^2 >> L^2); s(t) = (1 + cos(pi t / T)) / 2 (cosine), 1, 0.1 and 0.01
 *             on the three thirds (step), 1 (constant); beta = algo.momentum (default 0.9);
 *             K = R^d (algo.D default inf: DP-SGD's privacy does not depend on K); output the
 *             average of the last algo.avg (default a tenth) of the iterates (suffix
 *             averaging, Rakhlin, Shamir, Sridharan 2012).  A tenth, not the last half: under
 *             the cosine decay the middle iterates still carry the larger steps' noise and
 *             bias; same seeds, paired, on a validation split of Fashion-MNIST (50000 fit,
 *             10000 scored): +0.08 points at eps 1.2 (6 seeds), +0.15 at eps 0.12, 0 at
 *             eps 12 (4 seeds); a9a within 0.05 points at eps 0.05 .. 10 (8 seeds).
 *             ETA = algo.eta, default 2, a fixed constant picked once from {0.5, 1, 2, 4}
 *             on a9a at eps = 1, delta = 1e-5, clip l2:1, batch 256, 10 epochs,
 *             by test accuracy (issue 13 report): like the defaults of Opacus's examples it is
 *             a documented constant, not tuned per data set or budget (that tuning would have
 *             to be charged).  A recipe may set another eta, and algo.eta_rule = snr
 *             (lr = ETA (1 - beta) L / G^2) shrinks the step once more, by L/G (the square root
 *             of the signal fraction L^2/G^2 of E||g_t||^2), so it falls faster where the noise
 *             dominates (small eps); snr2 (lr = ETA (1 - beta) L^2 / G^3) shrinks it by L^2/G^2
 *             and falls faster still: in units of 1/L the step is ETA s^(1/2), s, s^(3/2)
 *             under g, snr, snr2 (s = L^2/G^2).  On Fashion-MNIST snr's step was about 2.5
 *             times the best at eps 0.1 and right at eps 1 (validation split,
 *             jobs/acceps/README); jobs/acceps/fmnist.ini uses eta 5 with snr2.
 * Every step charges its Gaussian release (sampling as drawn) before x_{t+1} is broadcast.
 *
 * Multi-party runs (sco_common.h): every step is charged to the global account and to every
 * party.  privacy.trust = central: the charge and noise of the single-owner path (amplified by
 * sampling: it holds against outsiders, not against the coordinator, as for the DP-GD family);
 * an add-remove noisy count names every party too.  privacy.trust = local: every party adds
 * N(0, sigma^2), sigma = z * sensitivity of the sum, to its own partial sum before the reduce
 * (exact grid Gaussian on its own stream), and that is what is charged: a Gaussian of
 * multiplier z NOT amplified (sampling none, z from dpo_rdp_calibrate("none", T)), because the
 * coordinator draws the batch and sees each party's noised sum, so each party's own noise must
 * alone carry the charge against it; the released sum carries sqrt(ranks) sigma (more noise
 * than central at the same z, the price of not trusting the coordinator).  Add-remove (Poisson)
 * is refused under local (the un-amplified analysis here is replace-one).
 * privacy.trust = secagg: the release is the batch sum, so every party encodes
 * its part and adds a discrete Gaussian share under pairwise masks.
 *  - wor (replace-one): the coordinator draws the batch, so the charge is NOT amplified:
 *    z = dpo_rdp_calibrate("none", T releases) (or algo.z), each release an rdp-rho charge with
 *    rho <= 1/z (KLS 2021 Thm 1, P - k honest shares).  Only full batches (m = n) are taken:
 *    a subsampled wor batch pays un-amplified noise on m rows (about 12 points on a9a) and is
 *    refused with what to set instead (Poisson below).
 *  - poisson (add-remove, privacy.public_n required): every rank keeps each of ITS OWN rows with
 *    probability q = m / n_pub on its own secret stream (dpo_oracle_eval_sums_sampled: no ids
 *    travel, no count comes back), so against the coordinator and up to k colluding parties
 *    the release is the Poisson-subsampled Gaussian (Abadi et al. 2016, Mironov-Talwar-Zhang
 *    2019) with the noise the P - k honest shares carry (Kairouz-Liu-Steinke 2021; the
 *    argument is in secagg.c, "party-local sampling").  It is calibrated and charged exactly as
 *    central: z from RDP then the PLD ledger, sensitivity L + gamma sqrt(d) (the randomized
 *    rounding at the fine step of dpo_secagg_fine_step, <= 0.1% above L), the honest shares
 *    sum to sigma_h = gamma s sqrt(P - k) >= central's sigma, charged as a "gaussian" release
 *    with sampling poisson (m, n_pub).  The gradient is normalised by the public m.  A noisy
 *    count is not offered: it would be a sum of the parties' private counts (another secure
 *    release); a declared public size keeps every count inside its party.
 *  sigma in the step size is the total noise on the sum, gamma sigma_Z sqrt(P).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"
#include "privacy/sample.h"
#include "optim/sco_common.h"
#include "optim/sco_dpsgd.h"

#define DPO__DPSGD_ETA 2.0

static void dpsgd_destroy(void *st) {
  dpo__dpsgd_t *a = st;
  if (!a) return;
  dpo__sco_free(&a->c);
  dpo__sco_secagg_free(&a->sa);
  free(a->pool);
  free(a->ids);
  free(a->g);
  free(a->avg);
  free(a->v);
  dpo_rng_destroy(a->rng1);
  free(a);
}

/* The release of step i, as dpsgd_step charges it (sigma from the multiplier z). */
typedef struct {
  const dpo__dpsgd_t *a;
  double sigma;
} dpsgd_plan_t;

/* Release i of the plan check: the noisy count first when one was charged (it is in the run's
 * ledger already), then the T steps. */
static int dpsgd_charge_at(void *arg, dpo_ledger_t *F, int64_t i) {
  const dpsgd_plan_t *p = arg;
  const dpo__dpsgd_t *a = p->a;
  if (a->count_eps > 0 && i-- == 0) return dpo__sco_count_charge(F, a->c.rel, a->count_b, NULL);
  dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = p->sigma,
                     .sensitivity = a->sens, .dim = a->c.d,
                     .sampling = a->poisson ? DPO_SAMPLING_POISSON : DPO_SAMPLING_WOR,
                     .accounting = DPO_ACCOUNTING_RDP, .m = a->m, .n = a->npub, .step = i,
                     .neighbours = a->c.rel};
  return dpo_ledger_charge(F, &ch, NULL);
}

/* The PLD eps of the plan at multiplier z as the ledger will bound it (acct_pld.c: T releases of
 * the snapped multiplier, grid dpo_pld_auto_h(budget, T)); a guess for the search below, which
 * the ledger itself then confirms.  coarse > 1: on a grid that many times coarser (4x: a
 * quarter of the window, so about a quarter of the time; within ~5e-5 of the fine eps on the
 * plans of the search's test), only to place the fine evaluations. */
static int dpsgd_pld_eps(const dpo__dpsgd_t *a, double z, double beps, double bdelta, int coarse,
                         double *e) {
  double ze = dpo_pld_charge_z(dpo__sco_sigma(z, a->sens, a->c.d), a->sens, a->c.d);
  if (!(ze > 0)) return dpo_err(DPO_EINVAL, "dp-sgd-rdp: no grid for the multiplier %g", z);
  return dpo_pld_eps(a->poisson ? "poisson" : "wor", a->m, a->npub, ze, a->T, bdelta,
                     dpo_pld_auto_h(beps, a->T) * coarse, e);
}

/* dpsgd_pld_eps for dpo_pld_secant */
typedef struct {
  const dpo__dpsgd_t *a;
  double beps, bdelta;
  int coarse;
} dpsgd_eps_arg_t;
static int dpsgd_eps_at(void *arg, double z, double *e) {
  const dpsgd_eps_arg_t *p = arg;
  return dpsgd_pld_eps(p->a, z, p->beps, p->bdelta, p->coarse, e);
}

/* The first of z, z grow, z grow^2, .. (tries of them) whose whole plan -- the noisy count if
 * one was charged, then the T steps -- the run's ledger accepts (dpo_ledger_plan_fits_ex: the
 * same accountant, budget and charges, with the plan the run announces); *fits = 0: none. */
static int dpsgd_first_fit(const dpo__dpsgd_t *a, dpo_solver_t *s, double z, double grow,
                           int tries, double *zfit, int *fits) {
  const dpo_ledger_t *L = dpo_solver_ledger(s);
  double beps, bdelta;
  int rc;
  *fits = 0;
  if ((rc = dpo_ledger_budget(L, &beps, &bdelta))) return rc;
  dpsgd_plan_t p = {a, 0};
  for (int k = 0; k < tries; k++, z *= grow) {
    p.sigma = dpo__sco_sigma(z, a->sens, a->c.d);
    if ((rc = dpo_ledger_plan_fits_ex(L, beps, bdelta, a->T + (a->count_eps > 0), a->T,
                                      dpsgd_charge_at, &p, fits)))
      return rc;
    if (*fits) {
      *zfit = z;
      return DPO_OK;
    }
  }
  return DPO_OK;
}

/* Under the pld accountant (Poisson batches: a PLD kind), a multiplier below the RDP one whose
 * T releases the run's own ledger accepts: secant steps on log eps(log z) of the PLD bound
 * towards the budget, placed on a coarse grid first (dpo_pld_secant: the answer's eps in
 * [(1 - 1e-4) budget, budget] on the ledger's grid), then dpsgd_first_fit decides; *z (the RDP multiplier, which fits by its own bound) is kept when the
 * ledger accepts nothing smaller.  *fits = 1: the ledger accepted *z. */
static int dpsgd_ledger_z_search(const dpo__dpsgd_t *a, dpo_solver_t *s, double beps,
                                 double bdelta, double *z, int *fits, int64_t ncoarse[2]);

/* The search's answer is a function of public numbers only (the plan's charges and the
 * budget of an empty ledger), so a process that sets up the same plan again (dpopt audit's
 * trials, tune's repetitions) reuses it: a PLD composition of T steps costs seconds.  Across
 * processes the calibration cache (calib_cache.c) keeps it under the plan's digest; a cached
 * multiplier is used only after the run's ledger accepted its plan (one composition, which the
 * ledger's first charge then finds in dpo_pld_eps's memo) and otherwise searched again.
 * *cached = 1: the answer came from the cache. */
typedef struct {
  char plan[512]; /* the plan's canonical text, the key of the cache across processes too */
  double z;
  int fits;
} dpsgd_zmemo_t;
static dpsgd_zmemo_t dpsgd_zmemo[8];
static int dpsgd_zmemo_n;

/* the cache's answer for the plan text, confirmed by the ledger; 0: search */
static int dpsgd_cache_z(const dpo__dpsgd_t *a, dpo_solver_t *s, const char *plan, double *z,
                         int *fits, int *cached) {
  double cz;
  int cf, rc;
  if (!dpo_calib_cache_get(plan, &cz, &cf)) return DPO_OK;
  if (!cf && cz == *z) { /* the search found nothing below the RDP multiplier */
    *cached = 1;
    return DPO_OK;
  }
  if (!cf || !(cz < *z)) return DPO_OK;
  if ((rc = dpsgd_first_fit(a, s, cz, 1, 1, &cz, &cf))) return rc;
  if (cf) *z = cz, *fits = 1, *cached = 1;
  return DPO_OK;
}

static int dpsgd_ledger_z(const dpo__dpsgd_t *a, dpo_solver_t *s, double *z, int *fits,
                          int *cached) {
  const dpo_ledger_t *L = dpo_solver_ledger(s);
  const char *acct = dpo_ledger_accountant(L);
  double beps, bdelta;
  int rc;
  *fits = *cached = 0;
  if (!acct || strcmp(acct, "pld")) return DPO_OK; /* poisson, or wor under replace-one */
  if ((rc = dpo_ledger_budget(L, &beps, &bdelta))) return rc;
  const int memo = dpo_ledger_count(L) == 0 && dpo_ledger_nparties(L) == 0;
  /* the plan's canonical text: every number the search's answer depends on, exactly (the
   * sampling too: Poisson and wor batches have different PLD pairs); the key of the memo here
   * and of the calibration cache across processes */
  char plan[512];
  snprintf(plan, sizeof plan, "dpopt %s dp-sgd-rdp pld-ledger-z v2 m=%.17g n=%.17g T=%.17g "
           "sens=%a d=%.17g count_eps=%a rel=%d eps=%a delta=%a z_rdp=%a sampling=%s",
           PACKAGE_VERSION, (double)a->m, (double)a->npub, (double)a->T, a->sens,
           (double)a->c.d, a->count_eps, (int)a->c.rel, beps, bdelta, *z,
           a->poisson ? "poisson" : "wor");
  for (int i = 0; memo && i < dpsgd_zmemo_n; i++)
    if (!strcmp(dpsgd_zmemo[i].plan, plan)) {
      *z = dpsgd_zmemo[i].z;
      *fits = dpsgd_zmemo[i].fits;
      return DPO_OK;
    }
  const double zr = *z;
  const int64_t nc0 = dpo_pld_compositions();
  int64_t ncoarse[2] = {0, 0}; /* on the 16x and the 4x coarser grid */
  if (memo && (rc = dpsgd_cache_z(a, s, plan, z, fits, cached))) return rc;
  if (!*cached && (rc = dpsgd_ledger_z_search(a, s, beps, bdelta, z, fits, ncoarse)))
    return rc;
  /* the calibration's cost in PLD compositions (public: a function of the plan): --verbose */
  if (dpo_msg_verbose())
    dpo_msg("dp-sgd-rdp: PLD multiplier %s: %lld PLD compositions on the ledger's grid, %lld "
            "on a 4x coarser one, %lld on a 16x coarser one", *cached ? "from the cache" : "search",
            (long long)(dpo_pld_compositions() - nc0 - ncoarse[0] - ncoarse[1]),
            (long long)ncoarse[1], (long long)ncoarse[0]);
  if (!memo) return DPO_OK;
  if (!*cached && (*fits || *z == zr)) dpo_calib_cache_put(plan, *z, *fits);
  dpsgd_zmemo_t *e = &dpsgd_zmemo[dpsgd_zmemo_n < 8 ? dpsgd_zmemo_n++ : 7];
  snprintf(e->plan, sizeof e->plan, "%s", plan);
  e->z = *z;
  e->fits = *fits;
  return DPO_OK;
}

static int dpsgd_ledger_z_search(const dpo__dpsgd_t *a, dpo_solver_t *s, double beps,
                                 double bdelta, double *z, int *fits, int64_t ncoarse[2]) {
  const double zr = *z, tgt = beps - a->count_eps; /* the ledger adds the count's eps (C) */
  double sl = -3, zc = zr, e, zb, eb; /* the log-log slope near eps ~ 1: -2.5 to -5 */
  int rc;
  /* placed on coarse grids from RDP's multiplier (an upper bound: PLD needs less noise): on a
   * 16x coarser one to 1e-3 of the budget (a sixteenth of the window: the far steps from RDP's
   * multiplier cost ~0.3 of a 4x one each), then on a 4x coarser one to a tenth of the band
   * (its answer within ~1% of the 16x one: 1-3 steps), then the same steps on the ledger's
   * grid from there, with the coarse slope: 1-2 fine compositions where the search from RDP's
   * multiplier paid 4-7.  A grid on which RDP's multiplier misses the budget is passed over. */
  static const int grid[2] = {16, 4};
  static const double band[2] = {1e-3, 2e-5};
  dpsgd_eps_arg_t g = {a, beps, bdelta, 1};
  for (int i = 0; i < 2; i++) {
    const int64_t n0 = dpo_pld_compositions();
    g.coarse = grid[i];
    if ((rc = dpsgd_eps_at(&g, zc, &e))) return rc;
    zb = INFINITY;
    if ((e <= tgt || zc < zr) &&
        (rc = dpo_pld_secant(dpsgd_eps_at, &g, tgt * (1 - 4e-5), band[i], 8, zr, zc, e, &sl,
                             &zb, &eb)))
      return rc;
    if (zb < INFINITY) zc = zb;
    ncoarse[i] = dpo_pld_compositions() - n0;
  }
  g.coarse = 1;
  if ((rc = dpsgd_eps_at(&g, zc, &e)) ||
      (rc = dpo_pld_secant(dpsgd_eps_at, &g, tgt, 1e-4, 6, zr, zc, e, &sl, &zb, &eb)))
    return rc;
  if (!(zb < *z)) return DPO_OK;
  return dpsgd_first_fit(a, s, zb, 1 + 1e-4, 3, z, fits);
}

/* dpsgd_create's parts, in order; each returns a status (a refusal names the key). */
typedef struct {
  const dpo_parties_t *pt;
  int secagg, sampled, unamp; /* trust modes (the header) */
  const char *sch, *zfrom;
  double tail, gamma;
  char nsrc[160];
} dpo__dpsgd_setup_t;

/* algo.sampling against the relation and the trust mode (every data-free refusal first:
 * under add-remove the noisy count is a charge) */
static int dpsgd_setup_sampling(dpo_solver_t *s, dpo__dpsgd_t *a, const char *who,
                                dpo__dpsgd_setup_t *u) {
  int rc;
  const char *samp = NULL;
  if ((rc = dpo_solver_param_str(s, "sampling", "wor", &samp))) return rc;
  if (!strcmp(samp, "poisson")) a->poisson = 1;
  else if (strcmp(samp, "wor")) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.sampling = '%s': wor | poisson", who, samp);
    return rc;
  }
  if ((rc = dpo__sco_sampling_check(who, samp, a->c.rel))) return rc;
  const dpo_parties_t *pt = u->pt = dpo_oracle_parties(dpo_solver_oracle(s));
  const int secagg = u->secagg = pt && pt->trust == DPO_TRUST_SECAGG;
  /* secagg + Poisson: every party samples its own rows (the header, secagg.c), amplified */
  const int sampled = u->sampled = secagg && a->poisson;
  /* local, and secagg with wor: the coordinator draws the batch, so nothing is amplified
   * against it */
  u->unamp = pt && pt->trust != DPO_TRUST_CENTRAL && !sampled;
  if (pt && pt->trust == DPO_TRUST_LOCAL && a->poisson) {
    rc = dpo_err(DPO_EINVAL, "%s: under privacy.trust = local the coordinator draws the batch "
                 "and the charge is not amplified (a replace-one analysis): set "
                 "privacy.neighbours = replace-one (algo.sampling = wor), or use "
                 "privacy.trust = secagg, where every party samples its own rows", who);
    return rc;
  }
  if (sampled && !dpo_privacy_spec_given(dpo_solver_privacy(s), DPO_SPEC_PUBLIC_N)) {
    /* the noisy count would be the sum of the parties' private counts: a release of its own
     * through secure aggregation; a declared size keeps every count inside its party */
    rc = dpo_err(DPO_EINVAL, "%s: under privacy.trust = secagg with add-remove neighbours "
                 "(Poisson batches drawn by every party) declare the public data set size "
                 "(privacy.public_n, --public-n N): the rate m/N, the steps and the "
                 "normalisation come from it, and no party's row count is released", who);
    return rc;
  }
  return DPO_OK;
}

/* batch, length, schedule, averaging and momentum; the public size */
static int dpsgd_setup_schedule(dpo_solver_t *s, dpo__dpsgd_t *a, const char *who,
                                dpo__dpsgd_setup_t *u) {
  int rc;
  int64_t m0 = -1, iters = -1, T0 = -1;
  double epochs = 1, tail = 0.1;
  if ((rc = dpo_solver_param_int(s, "m", -1, &m0)) ||
      (rc = dpo_solver_param(s, "epochs", 1.0, &epochs)) ||
      (rc = dpo_solver_param_int(s, "iters", -1, &iters)) ||
      (rc = dpo_solver_param_int(s, "T", -1, &T0)))
    return rc;
  if (dpo_config_get(dpo_solver_config(s), "algo.m") && m0 < 1) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.m = %lld must be >= 1", who, (long long)m0);
    return rc;
  }
  if (!(epochs > 0) || !(epochs < 1e12)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.epochs = %g must be > 0 (and give < 1e12 steps)", who,
                 epochs);
    return rc;
  }
  const char *sch = NULL;
  if ((rc = dpo_solver_param_str(s, "schedule", "cosine", &sch))) return rc;
  u->sch = sch;
  if (!strcmp(sch, "theory")) a->sched = SCHED_THEORY;
  else if (!strcmp(sch, "constant")) a->sched = SCHED_CONSTANT;
  else if (!strcmp(sch, "cosine")) a->sched = SCHED_COSINE;
  else if (!strcmp(sch, "step")) a->sched = SCHED_STEP;
  else {
    rc = dpo_err(DPO_EINVAL, "%s: algo.schedule = '%s': cosine | step | constant | theory", who,
                 sch);
    return rc;
  }
  if (a->sched != SCHED_THEORY) { /* K = R^d unless algo.D is given */
    if ((rc = dpo_solver_param(s, "D", INFINITY, &a->c.D))) return rc;
  }
  if ((rc = dpo_solver_param(s, "avg", a->sched == SCHED_THEORY ? 1.0 : 0.1, &tail))) return rc;
  if (!(tail > 0 && tail <= 1)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.avg = %g must be in (0, 1]: the fraction of the last "
                 "iterates averaged into the output", who, tail);
    return rc;
  }
  if ((rc = dpo_solver_param(s, "momentum", a->sched == SCHED_THEORY ? 0.0 : 0.9, &a->beta)))
    return rc;
  if (!(a->beta >= 0 && a->beta < 1)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.momentum = %g must be in [0, 1)", who, a->beta);
    return rc;
  }
  /* the public size: n under replace-one; under add-remove declared or a charged noisy count */
  if ((rc = dpo__sco_public_n(s, &a->c, who, &a->npub, &a->count_eps, &a->count_b, u->nsrc,
                              sizeof u->nsrc)))
    return rc;
  a->m = m0 >= 1 ? m0 : (int64_t)ceil(sqrt((double)a->npub));
  if (a->m > a->npub && a->count_eps > 0) {
    /* a noisy count below the batch: q = 1 (post-processing of the count) */
    a->npub = a->m;
    snprintf(u->nsrc + strlen(u->nsrc), sizeof u->nsrc - strlen(u->nsrc), ", raised to the batch m");
  }
  if (a->m > a->npub) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.m = %lld must be in [1, n=%lld]", who, (long long)a->m,
                 (long long)a->npub);
    return rc;
  }
  if (u->secagg && !a->poisson && a->m < a->npub) {
    /* secagg with wor: the coordinator draws the batch, so nothing is amplified and the noise
     * of an un-subsampled release goes on a batch of m rows (a9a in 3 parties: test accuracy
     * 0.72 against central's 0.84); party-local Poisson batches are amplified as in central
     * (doc/results.md).  Full batches lose nothing: kept. */
    rc = dpo_err(DPO_EINVAL, "%s: under privacy.trust = secagg, batches of m = %lld of n = %lld "
                 "rows drawn by the coordinator (algo.sampling = wor) get no amplification by "
                 "subsampling (the coordinator knows the batch), which cost about 12 points of "
                 "accuracy on a9a: let every party sample its own rows with "
                 "privacy.neighbours = add-remove, algo.sampling = poisson and privacy.public_n "
                 "= N (--public-n N), or use full batches (algo.m = %lld)", who,
                 (long long)a->m, (long long)a->npub, (long long)a->npub);
    return rc;
  }
  /* the plan's length: algo.T (older configs), else --iters, else --epochs, from public n */
  if (!(epochs * (double)a->npub / (double)a->m < 1e12)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.epochs = %g gives >= 1e12 steps", who, epochs);
    return rc;
  }
  a->T = T0 >= 0 ? T0 : iters >= 0 ? iters
                                   : (int64_t)ceil(epochs * (double)a->npub / (double)a->m - 1e-9);
  if (a->T < 1) {
    rc = dpo_err(DPO_EINVAL, "%s: the number of steps (algo.T / --iters / --epochs) must be "
                 ">= 1", who);
    return rc;
  }
  /* output: the mean of x_{T0+1} .. x_T, the last ceil(tail T) iterates, at least x_T (the
   * 1e-9: 0.1 x 20 is 2.0000000000000004 in binary) */
  int64_t kept = (int64_t)ceil(tail * (double)a->T - 1e-9);
  a->T0 = a->T - (kept > 1 ? kept : 1);
  return DPO_OK;
}

/* the noise multiplier (given, RDP, or the ledger's PLD), sigma and the parties' shares */
static int dpsgd_setup_noise(dpo_solver_t *s, dpo__dpsgd_t *a, const char *who,
                             dpo__dpsgd_setup_t *u) {
  int rc;
  const int64_t n = a->c.n;
  const int32_t d = a->c.d;
  const int sampled = u->sampled, unamp = u->unamp, secagg = u->secagg;
  const dpo_parties_t *pt = u->pt;
  a->sens = dpo_sens(a->c.rel, a->c.L);
  double gamma = 0;
  /* party-local sampling: the charge's sensitivity includes the randomized rounding at the
   * fine step gamma (secagg.c), so the calibration below works with it (<= 0.1% above L) */
  if (sampled && (rc = dpo_secagg_fine_step(a->sens, d, &gamma, &a->sens))) return rc;
  if ((rc = dpo_solver_param(s, "z", NAN, &a->z))) return rc;
  const char *zfrom = "given";
  if (isnan(a->z) && unamp) {
    /* not amplified: the coordinator draws the batch (see the header) */
    if ((rc = dpo_rdp_calibrate("none", n, n, a->T, a->c.eps, a->c.delta, &a->z))) return rc;
    zfrom = "RDP, not amplified";
  } else if (isnan(a->z)) {
    /* RDP for the Gaussian part of the budget (the noisy count takes count_eps: auto's basic
     * composition (A)), then the ledger's own PLD bound; the ledger confirms either */
    if ((rc = dpo_rdp_calibrate(a->poisson ? "poisson" : "wor", a->m, a->npub, a->T,
                                a->c.eps - a->count_eps, a->c.delta, &a->z)))
      return rc;
    double zr = a->z;
    int fits = 0, cached = 0;
    if ((rc = dpsgd_ledger_z(a, s, &a->z, &fits, &cached))) return rc;
    zfrom = a->z < zr ? (cached ? "PLD, the ledger's accountant; cached calibration"
                                : "PLD, the ledger's accountant")
                      : "RDP";
    /* with the noisy count, RDP's multiplier for eps - count_eps fits by auto's bound (A); the
     * ledger's own arithmetic confirms it (steps of 0.1% up otherwise) */
    if (a->count_eps > 0 && !fits) {
      double z0 = a->z;
      if ((rc = dpsgd_first_fit(a, s, z0, 1.001, 64, &a->z, &fits))) return rc;
      if (!fits) {
        rc = dpo_err(DPO_EBUDGET, "%s: no noise multiplier from %g to %g fits the noisy count "
                     "and %lld steps in the budget", who, z0, z0 * pow(1.001, 63),
                     (long long)a->T);
        return rc;
      }
    }
  }
  if (!(a->z > 0) || !isfinite(a->z)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.z must be > 0", who);
    return rc;
  }
  a->sigma = dpo__sco_sigma(a->z, a->sens, d);
  /* parties: secagg's rdp-rho curve alpha rho^2/2 with rho = 1/z is the Gaussian of
   * multiplier z; central and local charge the Gaussian sigma (sco_common.h) */
  if (sampled) {
    /* the honest shares carry >= sigma (the central noise at this multiplier) */
    if ((rc = dpo__sco_parties_setup_sampled(s, gamma, a->sens, a->sigma, a->m, a->npub,
                                             &a->sa)))
      return rc;
    a->sigma = a->sa.sigma_h;
  } else if (pt && (rc = dpo__sco_parties_setup(s, a->sens, nextafter(1 / a->z, 0), &a->sa))) {
    return rc;
  }
  a->sd = a->sigma; /* the std of the noise on the released sum */
  if (secagg) a->sd = a->sa.sd;
  /* local: every rank with rows adds sigma, each alone carrying the charge against the
   * coordinator; the sum carries up to sqrt(ranks) sigma (the bound the step size uses) */
  else if (unamp) a->sd = a->sigma * sqrt((double)a->sa.size);
  u->zfrom = zfrom;
  return DPO_OK;
}

/* the step size: algo.lr, else the schedule's rule from eta and the public G */
static int dpsgd_setup_lr(dpo_solver_t *s, dpo__dpsgd_t *a, const char *who) {
  int rc;
  const int32_t d = a->c.d;
  double G2 = a->c.L * a->c.L + (double)d * a->sd * a->sd / ((double)a->m * (double)a->m);
  double eta = DPO__DPSGD_ETA; /* algo.eta: the default lr's step in units of G (public) */
  if ((rc = dpo_solver_param(s, "eta", DPO__DPSGD_ETA, &eta))) return rc;
  if (!(eta > 0) || !isfinite(eta)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.eta = %g must be finite and > 0", who, eta);
    return rc;
  }
  /* algo.eta_rule: the g rule's step times (L/G)^k, k = 0 (g), 1 (snr), 2 (snr2): in units of
   * 1/L the step is eta s^(1/2 + k/2) with s = L^2/G^2 the signal fraction of E||g_t||^2 */
  const char *rule = NULL;
  if ((rc = dpo_solver_param_str(s, "eta_rule", "g", &rule))) return rc;
  const int k = !strcmp(rule, "g") ? 0 : !strcmp(rule, "snr") ? 1 : !strcmp(rule, "snr2") ? 2 : -1;
  if (k < 0) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.eta_rule = '%s': g | snr | snr2", who, rule);
    return rc;
  }
  const double G = sqrt(G2);
  double lr0 = a->c.D / sqrt((double)a->T * G2); /* theory: the 003 baseline's step */
  if (a->sched != SCHED_THEORY) {
    lr0 = eta * (1 - a->beta) / G;
    for (int i = 0; i < k; i++) lr0 *= a->c.L / G;
  }
  if ((rc = dpo_solver_param(s, "lr", lr0, &a->lr))) return rc;
  if (!(a->lr > 0) || !isfinite(a->lr)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.lr = %g must be finite and > 0", who, a->lr);
    return rc;
  }
  return DPO_OK;
}

static int dpsgd_create(dpo_solver_t *s, void **state) {
  int rc;
  const char *who = "dp-sgd-rdp";
  dpo__dpsgd_setup_t u = {0};
  dpo__dpsgd_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "%s: out of memory", who);
  if ((rc = dpo__sco_init(s, &a->c, who)) || (rc = dpsgd_setup_sampling(s, a, who, &u)) ||
      (rc = dpsgd_setup_schedule(s, a, who, &u)) || (rc = dpsgd_setup_noise(s, a, who, &u)) ||
      (rc = dpsgd_setup_lr(s, a, who)))
    goto fail;
  const int64_t n = a->c.n;
  const int32_t d = a->c.d;
  const char *nsrc = u.nsrc, *sch = u.sch, *zfrom = u.zfrom;
  const int sampled = u.sampled, secagg = u.secagg, unamp = u.unamp;
  if ((rc = dpo_solver_constants(s, NULL, &a->mu))) goto fail;
  /* poisson: no pool, and ids for about the batch (grown if a draw is larger): two arrays of
   * n ids were 16 MB written at n = 1e6 for nothing */
  a->ids_cap = a->poisson ? (int64_t)fmin((double)n, a->m + 10 * sqrt((double)a->m) + 64) : n;
  if (a->ids_cap < 1) a->ids_cap = 1;
  a->pool = malloc((size_t)(a->poisson ? 1 : n) * sizeof *a->pool);
  a->ids = malloc((size_t)a->ids_cap * sizeof *a->ids);
  a->g = malloc((size_t)d * sizeof *a->g);
  a->avg = calloc((size_t)d, sizeof *a->avg);
  a->v = calloc((size_t)d, sizeof *a->v);
  if (!a->pool || !a->ids || !a->g || !a->avg || !a->v) {
    rc = dpo_err(DPO_ENOMEM, "%s: out of memory", who);
    goto fail;
  }
  for (int64_t i = 0; !a->poisson && i < n; i++) a->pool[i] = i;
  /* the public size only: under add-remove the exact n is private */
  dpo_msg("%s: %s sampling m=%lld of n=%lld (%s), T=%lld steps, noise multiplier z=%.9g (%s; "
          "sigma=%g, sensitivity %g, noise sd on the sum %g), lr=%g (%s), momentum %g, L=%g, D=%g",
          who, a->poisson ? "poisson" : "wor", (long long)a->m, (long long)a->npub, nsrc,
          (long long)a->T, a->z, zfrom, a->sigma, a->sens, a->sd, a->lr, sch, a->beta, a->c.L,
          a->c.D);
  dpo_plan_t plan = {.kind = DPO_PLAN_PER_STEP, .steps = a->T, .batch = a->m,
                     .noise_multiplier = a->z, .lr = a->lr};
  if (sampled)
    snprintf(plan.what, sizeof plan.what, "%lld steps, each charged for its securely aggregated "
             "subsampled Gaussian release before it is made (every party samples its own rows, "
             "q = %lld/%lld, n declared; the honest shares carry sigma %.9g)", (long long)a->T,
             (long long)a->m, (long long)a->npub, a->sa.sigma_h);
  else if (secagg)
    snprintf(plan.what, sizeof plan.what, "%lld steps, each charged for its securely aggregated "
             "distributed discrete Gaussian release before it is made (rdp-rho %.6g, not "
             "amplified: the coordinator draws the batch)", (long long)a->T, a->sa.rho);
  else if (unamp)
    snprintf(plan.what, sizeof plan.what, "%lld steps, each charged to every party for its "
             "Gaussian release before it is made (every party adds sigma %.9g to its own sum: "
             "sd %.9g on the sum; not amplified: the coordinator draws the batch)",
             (long long)a->T, a->sigma, a->sd);
  else
    snprintf(plan.what, sizeof plan.what, "%lld steps, each charged for its subsampled "
             "Gaussian release before it is made (noise calibrated for all %lld; q = %lld/%lld, "
             "n from %s)", (long long)a->T, (long long)a->T, (long long)a->m,
             (long long)a->npub, nsrc);
  if ((rc = dpo_solver_declare_plan(s, &plan))) goto fail;
  *state = a;
  return DPO_OK;
fail:
  dpsgd_destroy(a);
  return rc;
}

static int dpsgd_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__dpsgd_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = a->c.d;
  int64_t n = a->c.n, mb = 0;
  dpo_rng_t *rng = a->rng1 ? a->rng1 : dpo_solver_rng(s); /* a worker: rank 0's stream */
  int rc, brc = DPO_OK;
  if (t >= a->T) {
    *done = 1;
    return DPO_OK;
  }
  a->ran = 1;
  /* the batch, drawn the way the charge below records it (party-local: by every party; one
   * meeting a step: by every rank, a failure told in the meeting) */
  if (a->sa.local) {
    mb = 0;
  } else if (a->poisson) { /* exact geometric gaps: O(m) draws, same law as n Bernoulli(m/n) */
    brc = dpo__poisson_batch(rng, a->m, a->npub, n, &a->ids, &a->ids_cap, &mb);
    if (brc && !a->one) return brc;
  } else {
    dpo__wor_batch(rng, a->m, n, a->pool, a->ids); /* partial Fisher-Yates: O(m log m) */
    mb = a->m;
  }
  if (t == 0 && isfinite(a->c.D)) dpo__sco_project(x, d, a->c.D);
  dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = a->sigma,
                     .sensitivity = a->sens, .dim = d,
                     .sampling = a->poisson ? DPO_SAMPLING_POISSON : DPO_SAMPLING_WOR,
                     .accounting = DPO_ACCOUNTING_RDP, .m = a->m, .n = a->npub, .step = t,
                     .neighbours = a->c.rel};
  if (a->sa.on) { /* parties: charge every party, then the noised sum (sco_common.h) */
    dpo_batch_t b = {a->ids, mb};
    /* local / secagg: the coordinator drew the batch, so the charge is not amplified; local
     * charges the Gaussian each party adds to its own sum (sigma, multiplier z) */
    if (a->sa.trust != DPO_TRUST_CENTRAL && !a->sa.local)
      ch.sampling = DPO_SAMPLING_NONE, ch.m = mb, ch.n = n;
    if ((rc = dpo__sco_parties_sum(s, &a->sa, x, &b, &ch, a->g))) return rc;
  } else if (a->one) { /* every rank: one meeting (sco_dpsgd_step1.c) */
    int skip = 0;
    if ((rc = dpo__dpsgd_step1(s, a, t, &ch, brc, mb, &skip)) || skip) return rc;
  } else {
    if ((rc = dpo_ledger_charge(dpo_solver_ledger(s), &ch, NULL))) return rc;
    if (mb > 0) {
      dpo_batch_t b = {a->ids, mb};
      int64_t used;
      if ((rc = dpo_oracle_eval_sums(dpo_solver_oracle(s), x, &b, 0, NULL, a->g, &used)))
        return rc;
    } else {
      memset(a->g, 0, (size_t)d * sizeof *a->g);
    }
    if ((rc = dpo_mech_release(&ch, rng, a->g, d))) return rc;
    dpo_release_t rel = {t, DPO_MECH_GAUSSIAN, a->sigma, a->sens, (double)a->m / (double)a->npub,
                         0, ch.sampling, a->m, a->npub, d, a->g, x, 1.0};
    if ((rc = dpo_solver_release(s, &rel))) return rc;
  }
  double f = (double)t / (double)a->T, lr = a->lr; /* the schedule: public (t, T) only */
  if (a->sched == SCHED_COSINE) lr *= 0.5 * (1 + cos(M_PI * f));
  else if (a->sched == SCHED_STEP) lr *= 3 * t < a->T ? 1 : 3 * t < 2 * a->T ? 0.1 : 0.01;
  for (int32_t j = 0; j < d; j++) {
    a->v[j] = a->beta * a->v[j] + a->g[j] / (double)a->m + a->mu * x[j];
    x[j] -= lr * a->v[j];
  }
  if (isfinite(a->c.D)) dpo__sco_project(x, d, a->c.D);
  if (t >= a->T0) /* running mean of x_{T0+1} .. x_{t+1} */
    for (int32_t j = 0; j < d; j++) a->avg[j] += (x[j] - a->avg[j]) / (double)(t + 1 - a->T0);
  if (t + 1 >= a->T) {
    memcpy(x, a->avg, (size_t)d * sizeof *x);
    *done = 1;
  }
  return DPO_OK;
}

/* checkpoint: the momentum v, the running mean of the kept iterates, and the wor sampler's
 * pool (its running permutation: an unseeded run's pool came from the OS key, so it is
 * stored, not redrawn).  Everything create() derives from the config (the plan, z, sigma,
 * lr) is recomputed and only checked, n_pub from the noisy row count the solver's checkpoint
 * keeps (dpo__public_n).  With parties the party accounts are the reopened journal's (central,
 * local) and each party's noise (local) or share (secagg) follows from the plan on every rank;
 * under secagg each party's account is also its own journal, reopened by its guard. */
static int dpsgd_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  const dpo__dpsgd_t *a = st;
  const int32_t d = a->c.d;
  int rc;
  (void)s;
  if ((rc = dpo_ckpt_put_int(w, "poisson", a->poisson)) || (rc = dpo_ckpt_put_int(w, "m", a->m)) ||
      (rc = dpo_ckpt_put_int(w, "T", a->T)) || (rc = dpo_ckpt_put_int(w, "T0", a->T0)) ||
      (rc = dpo_ckpt_put_int(w, "npub", a->npub)) || (rc = dpo_ckpt_put_double(w, "z", a->z)) ||
      (rc = dpo_ckpt_put_double(w, "sigma", a->sigma)) ||
      (rc = dpo_ckpt_put_double(w, "lr", a->lr)) || (rc = dpo_ckpt_put_double(w, "beta", a->beta)) ||
      (rc = dpo_ckpt_put_f64(w, "v", a->v, d)) || (rc = dpo_ckpt_put_f64(w, "avg", a->avg, d)))
    return rc;
  return dpo_ckpt_put_i64(w, "pool", a->pool, a->poisson ? 0 : a->c.n);
}

static int dpsgd_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__dpsgd_t *a = st;
  const int32_t d = a->c.d;
  int rc;
  (void)s;
  /* secagg: sigma is the honest shares' noise, rounded up to an integer share sigma for this
   * run's P - k shares, which a resume without lost parties changes (doc/design.md,
   * "Dropouts"); set-up keeps it >= z times the sensitivity, and z is checked.  The step size
   * derived from it stays the run's (a public choice: the schedule goes on unchanged). */
  const int shares = a->sa.on && a->sa.trust == DPO_TRUST_SECAGG;
  if ((rc = dpo__ckpt_check_int(r, "poisson", a->poisson)) ||
      (rc = dpo__ckpt_check_int(r, "m", a->m)) || (rc = dpo__ckpt_check_int(r, "T", a->T)) ||
      (rc = dpo__ckpt_check_int(r, "T0", a->T0)) || (rc = dpo__ckpt_check_int(r, "npub", a->npub)) ||
      (rc = dpo__ckpt_check_double(r, "z", a->z)) ||
      (rc = shares ? DPO_OK : dpo__ckpt_check_double(r, "sigma", a->sigma)) ||
      (rc = shares ? dpo_ckpt_get_double(r, "lr", &a->lr) : dpo__ckpt_check_double(r, "lr", a->lr)) ||
      (rc = dpo__ckpt_check_double(r, "beta", a->beta)) || (rc = dpo_ckpt_get_f64(r, "v", a->v, d)) ||
      (rc = dpo_ckpt_get_f64(r, "avg", a->avg, d)))
    return rc;
  return dpo_ckpt_get_i64(r, "pool", a->pool, a->poisson ? 0 : a->c.n);
}

static const dpo_algo_param_t dpsgd_params[] = {
    {"sampling", "wor", "wor (replace-one) | poisson (add-remove)"},
    {"m", "ceil(sqrt n)", "batch size (--batch)"},
    {"epochs", "1", "passes over the data (--epochs): T = ceil(epochs n / m)"},
    {"iters", "from epochs", "steps (--iters): the plan is exactly this many, each charged"},
    {"T", "iters, else ceil(epochs n/m)", "steps (same as iters; older configs)"},
    {"z", "calibrated by the ledger's accountant (pld: PLD for poisson and wor batches; else RDP)", "noise multiplier"},
    {"schedule", "cosine", "cosine | step | constant | theory (the baseline of Feldman, Koren and Talwar 2020: lr D/sqrt(T G^2), no momentum, average of all iterates)"},
    {"lr", "eta (1 - momentum)/G, G^2 = L^2 + d sigma^2/m^2 (theory: D/(G sqrt T))", "base step size (--lr), scaled by the schedule"},
    {"eta", "2", "the default lr's step in units of the public gradient bound G (ignored with algo.lr or theory)"},
    {"eta_rule", "g", "g: lr = eta (1 - momentum)/G | snr: lr = eta (1 - momentum) L/G^2 | snr2: lr = eta (1 - momentum) L^2/G^3 (the step falls faster as the noise share of G^2 grows)"},
    {"momentum", "0.9 (theory: 0)", "heavy-ball momentum beta"},
    {"D", "inf (theory: 2)", "diameter of the ball K the iterates are projected on"},
    {"avg", "0.1 (theory: 1)", "fraction of the last iterates whose mean is the output (suffix averaging)"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_dp_sgd_rdp = {
    "dp-sgd-rdp", "DP-SGD, Gaussian noise calibrated by the RDP accountant (wor/poisson batches)",
    1, dpsgd_create, dpsgd_step, dpsgd_destroy, dpsgd_save, dpsgd_load, dpsgd_params, dpo__sco_params, NULL,
    NULL, 0, 0, 1, dpo__dpsgd_step1_begin};
