/* DP-SGD under the Renyi accountant ("dp-sgd-rdp"): the baseline of the 003 experiment.
 * Projected minibatch SGD on K (ball of diameter algo.D) with per-example gradients bounded by
 * L (privacy.clip = l2:C, or the declared row bound for logistic regression, sco_common.h):
 *
 *   B_t = a batch drawn on rank 0 from the solver's dpo_rng_t, exactly as the ledger records it:
 *     algo.sampling = wor (default): m = algo.m of the n examples without replacement
 *       (Wang-Balle-Kasiviswanathan 2019, a replace-one analysis);
 *     algo.sampling = poisson: each example independently with probability q = m/n (an exact
 *       Bernoulli(m/n) from an unbiased integer draw); Mironov-Talwar-Zhang 2019 is an
 *       add/remove analysis.
 *   The sensitivity is dpo_sens(privacy.neighbours, L): 2L under replace-one, L under
 *   add-remove.  Each sampling runs only under the relation its amplification bound is proved
 *   for (wor: replace-one, poisson: add-remove); the other pair is refused at creation.
 *   g_t = (sum_{i in B_t} grad f(x_t, u_i) + N(0, sigma^2 I)) / m + grad of the model's
 *         regularizer (public);  x_{t+1} = Pi_K(x_t - lr g_t)
 *   output: the average of x_1 .. x_T (post-processing of released iterates).
 * T = algo.T (default ceil(n/m), one expected epoch), m = algo.m (default ceil(sqrt n)).
 * Noise: sigma = z * sensitivity with z = dpo_rdp_calibrate(sampling, m, n, T, eps, delta)
 * (the smallest multiplier for which T such releases are (eps, delta)-DP under the RDP
 * accountant), widened for the grid snapping; algo.z overrides z (then the ledger, not the
 * calibration, decides how many steps fit).  lr = algo.lr, default D / sqrt(T (L^2 + d sigma^2
 * / m^2)) (projected SGD with second moment <= L^2 + d sigma^2/m^2).
 * Every step charges its Gaussian release (sampling as drawn) before x_{t+1} is broadcast.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/sco_common.h"

typedef struct {
  dpo__sco_t c;
  int poisson;
  int64_t m, T;
  double z, sigma, sens, lr, mu;
  int64_t *pool; /* wor: running partial Fisher-Yates permutation of 0..n-1 */
  int64_t *ids;
  double *g, *avg;
} dpo__dpsgd_t;

static void dpsgd_destroy(void *st) {
  dpo__dpsgd_t *a = st;
  if (!a) return;
  dpo__sco_free(&a->c);
  free(a->pool);
  free(a->ids);
  free(a->g);
  free(a->avg);
  free(a);
}

static int dpsgd_create(dpo_solver_t *s, void **state) {
  int rc;
  const char *who = "dp-sgd-rdp", *samp = NULL;
  dpo__dpsgd_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "%s: out of memory", who);
  if ((rc = dpo__sco_init(s, &a->c, who))) goto fail;
  int64_t n = a->c.n;
  int32_t d = a->c.d;
  if ((rc = dpo_solver_param_str(s, "sampling", "wor", &samp))) goto fail;
  if (!strcmp(samp, "poisson")) a->poisson = 1;
  else if (strcmp(samp, "wor")) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.sampling = '%s': wor | poisson", who, samp);
    goto fail;
  }
  if ((rc = dpo_solver_param_int(s, "m", (int64_t)ceil(sqrt((double)n)), &a->m))) goto fail;
  if (a->m < 1 || a->m > n) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.m = %lld must be in [1, n=%lld]", who, (long long)a->m,
                 (long long)n);
    goto fail;
  }
  if ((rc = dpo_solver_param_int(s, "T", (n + a->m - 1) / a->m, &a->T))) goto fail;
  if (a->T < 1) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.T must be >= 1", who);
    goto fail;
  }
  if (a->poisson != (a->c.rel == DPO_NEIGHBOURS_ADD_REMOVE)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.sampling = %s is analysed for %s neighbours (%s), but "
                 "privacy.neighbours = %s: set algo.sampling = %s or privacy.neighbours = %s",
                 who, samp, a->poisson ? "add-remove" : "replace-one",
                 a->poisson ? "Mironov-Talwar-Zhang 2019" : "Wang-Balle-Kasiviswanathan 2019",
                 dpo_neighbours_name(a->c.rel), a->poisson ? "wor" : "poisson",
                 a->poisson ? "add-remove" : "replace-one");
    goto fail;
  }
  a->sens = dpo_sens(a->c.rel, a->c.L);
  if ((rc = dpo_solver_param(s, "z", NAN, &a->z))) goto fail;
  if (isnan(a->z) &&
      (rc = dpo_rdp_calibrate(a->poisson ? "poisson" : "wor", a->m, n, a->T, a->c.eps,
                              a->c.delta, &a->z)))
    goto fail;
  if (!(a->z > 0) || !isfinite(a->z)) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.z must be > 0", who);
    goto fail;
  }
  a->sigma = dpo__sco_sigma(a->z, a->sens, d);
  double G2 = a->c.L * a->c.L + (double)d * a->sigma * a->sigma / ((double)a->m * (double)a->m);
  if ((rc = dpo_solver_param(s, "lr", a->c.D / sqrt((double)a->T * G2), &a->lr))) goto fail;
  if ((rc = dpo_solver_constants(s, NULL, &a->mu))) goto fail;
  a->pool = malloc((size_t)n * sizeof *a->pool);
  a->ids = malloc((size_t)n * sizeof *a->ids);
  a->g = malloc((size_t)d * sizeof *a->g);
  a->avg = calloc((size_t)d, sizeof *a->avg);
  if (!a->pool || !a->ids || !a->g || !a->avg) {
    rc = dpo_err(DPO_ENOMEM, "%s: out of memory", who);
    goto fail;
  }
  for (int64_t i = 0; i < n; i++) a->pool[i] = i;
  dpo_msg("%s: %s sampling m=%lld of n=%lld, T=%lld steps, noise multiplier z=%g (sigma=%g, "
          "sensitivity %g), lr=%g, L=%g, D=%g",
          who, a->poisson ? "poisson" : "wor", (long long)a->m, (long long)n, (long long)a->T,
          a->z, a->sigma, a->sens, a->lr, a->c.L, a->c.D);
  dpo_plan_t plan = {.kind = DPO_PLAN_PER_STEP, .steps = a->T};
  snprintf(plan.what, sizeof plan.what, "%lld steps, each charged for its subsampled Gaussian "
           "release before it is made (noise calibrated for all %lld)", (long long)a->T,
           (long long)a->T);
  if ((rc = dpo_solver_declare_plan(s, &plan))) goto fail;
  *state = a;
  return DPO_OK;
fail:
  dpsgd_destroy(a);
  return rc;
}

static int cmp64(const void *x, const void *y) {
  int64_t u = *(const int64_t *)x, v = *(const int64_t *)y;
  return (u > v) - (u < v);
}

static int dpsgd_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__dpsgd_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = a->c.d;
  int64_t n = a->c.n, mb = 0;
  dpo_rng_t *rng = dpo_solver_rng(s);
  int rc;
  if (t >= a->T) {
    *done = 1;
    return DPO_OK;
  }
  /* the batch, drawn the way the charge below records it */
  if (a->poisson) {
    for (int64_t i = 0; i < n; i++)
      if ((int64_t)dpo_rng_below(rng, (uint64_t)n) < a->m) a->ids[mb++] = i;
  } else {
    for (int64_t i = 0; i < a->m; i++) { /* partial Fisher-Yates: a uniform m-subset */
      int64_t j = i + (int64_t)dpo_rng_below(rng, (uint64_t)(n - i)), tmp = a->pool[i];
      a->pool[i] = a->pool[j];
      a->pool[j] = tmp;
    }
    memcpy(a->ids, a->pool, (size_t)a->m * sizeof *a->ids);
    mb = a->m;
    qsort(a->ids, (size_t)mb, sizeof *a->ids, cmp64);
  }
  dpo_charge_t ch = {.mechanism = "gaussian", .noise_scale = a->sigma, .sensitivity = a->sens,
                     .dim = d, .sampling = a->poisson ? "poisson" : "wor", .accounting = "rdp",
                     .m = a->m, .n = n, .step = t, .neighbours = a->c.rel};
  if ((rc = dpo_ledger_charge(dpo_solver_ledger(s), &ch, NULL))) return rc;
  if (t == 0) dpo__sco_project(x, d, a->c.D);
  if (mb > 0) {
    dpo_batch_t b = {a->ids, mb};
    int64_t used;
    if ((rc = dpo_oracle_eval_sums(dpo_solver_oracle(s), x, &b, 0, NULL, a->g, &used))) return rc;
  } else {
    memset(a->g, 0, (size_t)d * sizeof *a->g);
  }
  if ((rc = dpo_mech_gaussian(rng, a->sigma, a->g, d))) return rc;
  for (int32_t j = 0; j < d; j++) x[j] -= a->lr * (a->g[j] / (double)a->m + a->mu * x[j]);
  dpo__sco_project(x, d, a->c.D);
  for (int32_t j = 0; j < d; j++) a->avg[j] += (x[j] - a->avg[j]) / (double)(t + 1);
  if (t + 1 >= a->T) {
    memcpy(x, a->avg, (size_t)d * sizeof *x);
    *done = 1;
  }
  return DPO_OK;
}

static const dpo_algo_param_t dpsgd_params[] = {
    {"sampling", "wor", "wor (replace-one) | poisson (add-remove)"},
    {"m", "ceil(sqrt n)", "batch size (--batch)"},
    {"T", "ceil(n/m)", "steps (one expected epoch)"},
    {"z", "calibrated by the RDP accountant", "noise multiplier"},
    {"lr", "D/sqrt(T (L^2 + d sigma^2/m^2))", "step size"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_dp_sgd_rdp = {
    "dp-sgd-rdp", "DP-SGD, Gaussian noise calibrated by the RDP accountant (wor/poisson batches)",
    1, dpsgd_create, dpsgd_step, dpsgd_destroy, NULL, NULL, dpsgd_params, dpo__sco_params};
