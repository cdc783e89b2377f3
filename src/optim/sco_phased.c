/* Phased-SGD (003 Alg. 2, Thm 4.4): iterative localization with one-pass PSGD phases.
 *
 *   k = ceil(log2 n); phase i = 1..k: n_i = floor(2^-i n) fresh examples of the public order,
 *   eta_i = 4^-i eta, eta = (D/L) min(4/sqrt(n), rho/sqrt(d))               (Thm 4.4)
 *   PSGD over K from w_{i-1}, one example per step, average iterate wbar_i;
 *   w_i = wbar_i + N(0, sigma_i^2 I), sigma_i = 4 L eta_i / rho             (Alg. 2, line 5)
 * Privacy (Lemma 4.5): PSGD with eta_i <= 2/beta has L2 sensitivity 2 L eta_i (Lemma 4.3), so
 * each phase output is a Gaussian release; the phases use disjoint examples, so the ledger
 * charges them as one disjoint pass (per-order max = one phase).  Alg. 2's factor 4 makes the
 * charged curve alpha (rho/2)^2 / 2, below the target alpha rho^2 / 2 (at eps = 1, delta = 1e-5
 * the run spends 0.472).  algo.calibrate = ledger instead sets sigma_i = z 2 L eta_i with z the
 * smallest multiplier (bisection to 1e-10 relative) for which a fresh in-memory ledger with the
 * run's accountant, relation and budget accepts every phase's charge: the same guarantee, the
 * budget spent, about half of Alg. 2's noise.  z depends only on public quantities.
 * One driver iteration = one phase (the trace shows the released phase outputs).  The PSGD
 * iterates inside a phase go to the worker ranks serving the oracle and are not released.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"
#include "optim/sco_common.h"

typedef struct {
  dpo__sco_t c;
  int k;
  double eta;
  int64_t off;
  double z; /* noise multiplier sigma_i / (2 L eta_i): 2 / rho (Alg. 2) or the ledger's */
  double *g, *w, *avg;
} dpo__phased_t;

static void phased_destroy(void *st) {
  dpo__phased_t *a = st;
  if (!a) return;
  dpo__sco_free(&a->c);
  free(a->g);
  free(a->w);
  free(a->avg);
  free(a);
}

/* The charge of phase i (1-based) with multiplier z; ni examples of n. */
static dpo_charge_t phased_charge(const dpo__phased_t *a, int i, double z) {
  double eta_i = ldexp(a->eta, -2 * i), sens = dpo_sens(a->c.rel, a->c.L * eta_i);
  int64_t ni = (int64_t)ldexp((double)a->c.n, -i);
  dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = z * sens, .sensitivity = sens,
                     .dim = a->c.d, .sampling = DPO_SAMPLING_DISJOINT,
                     .accounting = DPO_ACCOUNTING_RDP, .group = 1, .m = ni, .n = a->c.n,
                     .step = i - 1, .neighbours = a->c.rel};
  return ch;
}

typedef struct {
  const dpo__phased_t *a;
  double z;
} phased_plan_t;

static int phased_charge_at(void *arg, dpo_ledger_t *F, int64_t i) {
  const phased_plan_t *p = arg;
  dpo_charge_t ch = phased_charge(p->a, (int)i + 1, p->z);
  return dpo_ledger_charge(F, &ch, NULL);
}

/* Does a fresh ledger like the run's accept every phase charged with multiplier z? */
static int phased_fits(const dpo__phased_t *a, const dpo_ledger_t *real, double z, int *fits) {
  int64_t k = 0; /* the phases that run: i = 1 .. k with n 2^-i >= 1 */
  while (k < a->k && (int64_t)ldexp((double)a->c.n, -(int)(k + 1)) >= 1) k++;
  phased_plan_t p = {a, z};
  return dpo_ledger_plan_fits(real, a->c.eps, a->c.delta, k, phased_charge_at, &p, fits);
}

static int phased_create(dpo_solver_t *s, void **state) {
  int rc;
  dpo__phased_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "phased-sgd: out of memory");
  if ((rc = dpo__sco_init(s, &a->c, "phased-sgd"))) goto fail;
  int64_t n = a->c.n;
  a->k = 0;
  while ((1LL << a->k) < n) a->k++; /* ceil(log2 n) */
  if (a->k < 1) a->k = 1;
  double d = (double)a->c.d;
  a->eta = a->c.D / a->c.L * fmin(4 / sqrt((double)n), a->c.rho / sqrt(d));
  if ((rc = dpo_solver_param(s, "eta", a->eta, &a->eta))) goto fail;
  if (isfinite(a->c.beta) && !(a->eta <= 2 / a->c.beta)) {
    rc = dpo_err(DPO_EINVAL, "phased-sgd: eta = %g exceeds 2/beta = %g (Lemma 4.3 needs it)",
                 a->eta, 2 / a->c.beta);
    goto fail;
  }
  a->z = 2 / a->c.rho; /* Alg. 2, line 5: sigma_i = 4 L eta_i / rho */
  const char *cal = "alg2";
  if ((rc = dpo_solver_param_str(s, "calibrate", "alg2", &cal))) goto fail;
  if (!strcmp(cal, "ledger")) {
    /* Alg. 2's z fits (it spends less than the budget); bisect down to the ledger's limit */
    double hi = a->z, lo = 0;
    int fits = 0;
    if ((rc = phased_fits(a, dpo_solver_ledger(s), hi, &fits))) goto fail;
    if (!fits) {
      rc = dpo_err(DPO_EBUDGET, "phased-sgd: the budget does not cover Alg. 2's noise");
      goto fail;
    }
    while (hi - lo > 1e-10 * hi) {
      double mid = 0.5 * (lo + hi);
      if ((rc = phased_fits(a, dpo_solver_ledger(s), mid, &fits))) goto fail;
      if (fits) hi = mid;
      else lo = mid;
    }
    a->z = hi;
  } else if (strcmp(cal, "alg2") != 0) {
    rc = dpo_err(DPO_EINVAL, "phased-sgd: algo.calibrate = '%s': expected alg2 (sigma_i = 4 L "
                 "eta_i / rho, as written) or ledger (the noise the ledger needs)", cal);
    goto fail;
  }
  a->g = malloc((size_t)a->c.d * sizeof *a->g);
  a->w = malloc((size_t)a->c.d * sizeof *a->w);
  a->avg = malloc((size_t)a->c.d * sizeof *a->avg);
  if (!a->g || !a->w || !a->avg) {
    rc = dpo_err(DPO_ENOMEM, "phased-sgd: out of memory");
    goto fail;
  }
  dpo_msg("phased-sgd: k=%d phases, eta=%g, rho=%g, noise multiplier %g (%s), L=%g, D=%g (Thm "
          "4.4 bound 10 L D (1/sqrt n + sqrt d/(rho n)) = %g)",
          a->k, a->eta, a->c.rho, a->z, cal, a->c.L, a->c.D,
          10 * a->c.L * a->c.D * (1 / sqrt((double)n) + sqrt(d) / (a->c.rho * (double)n)));
  dpo_plan_t plan = {.kind = DPO_PLAN_PER_STEP, .steps = a->k};
  snprintf(plan.what, sizeof plan.what, "up to %d phases, each output a Gaussian release "
           "charged before the phase runs (disjoint examples)", a->k);
  if ((rc = dpo_solver_declare_plan(s, &plan))) goto fail;
  *state = a;
  return DPO_OK;
fail:
  phased_destroy(a);
  return rc;
}

static int phased_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__phased_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = a->c.d;
  int rc, i = (int)t + 1;
  int64_t ni = (int64_t)ldexp((double)a->c.n, -i);
  if (i > a->k || ni < 1) {
    *done = 1;
    return DPO_OK;
  }
  double eta_i = ldexp(a->eta, -2 * i);
  /* charge the phase's release before any data-dependent computation (Lemma 4.5) */
  dpo_charge_t ch = phased_charge(a, i, a->z);
  const double sigma_i = ch.noise_scale;
  if ((rc = dpo_ledger_charge(dpo_solver_ledger(s), &ch, NULL))) return rc;
  if (t == 0) dpo__sco_project(x, d, a->c.D);
  for (int32_t j = 0; j < d; j++) {
    a->w[j] = x[j];
    a->avg[j] = 0;
  }
  for (int64_t u = 0; u < ni; u++) {
    dpo_batch_t b = dpo__sco_batch(&a->c, a->off + u, 1);
    if ((rc = dpo_oracle_eval(dpo_solver_oracle(s), a->w, &b, 0, NULL, a->g))) return rc;
    for (int32_t j = 0; j < d; j++) a->w[j] -= eta_i * a->g[j];
    dpo__sco_project(a->w, d, a->c.D);
    /* running mean of the iterates w_1 .. w_ni */
    for (int32_t j = 0; j < d; j++) a->avg[j] += (a->w[j] - a->avg[j]) / (double)(u + 1);
  }
  a->off += ni;
  for (int32_t j = 0; j < d; j++) x[j] = a->avg[j];
  if ((rc = dpo_mech_sample(DPO_MECH_GAUSSIAN, dpo_solver_rng(s), sigma_i, x, d))) return rc;
  if (i >= a->k || (int64_t)ldexp((double)a->c.n, -(i + 1)) < 1) *done = 1;
  return DPO_OK;
}

/* checkpoint (taken between phases, where x is the last phase's released output): the offset
 * of the next phase's examples in the public order; the plan (k, eta, z: public, recomputed
 * from the config) is only checked.  The phases are one disjoint pass, so a journal with a
 * charge after the checkpoint is refused (dpo__sco_ckpt_load). */
static int phased_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  const dpo__phased_t *a = st;
  (void)s;
  return dpo__sco_phase_save(&a->c, w, a->k, a->eta, a->z, a->off);
}

static int phased_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__phased_t *a = st;
  return dpo__sco_phase_load(s, &a->c, r, a->k, a->eta, a->z, &a->off, "phased-sgd");
}

static const dpo_algo_param_t phased_params[] = {
    {"eta", "(D/L) min(4/sqrt n, rho/sqrt d)", "base step (phase i: 4^-i eta; Thm 4.4)"},
    {"calibrate", "alg2", "phase noise: alg2 (sigma_i = 4 L eta_i / rho as written: spends 0.47 of "
     "eps = 1) | ledger (the smallest the run's ledger accepts: spends eps)"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_phased_sgd = {
    "phased-sgd", "Phased-SGD, iterative localization (Feldman, Koren and Talwar 2020, Alg. 2, Thm 4.4 step)", 1,
    phased_create, phased_step, phased_destroy, phased_save, phased_load, phased_params, dpo__sco_params, NULL,
    NULL, 0, 1, 0, NULL};
