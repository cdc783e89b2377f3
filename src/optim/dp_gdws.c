/* Smoothed-gradient methods of the thesis (000, Sec. 4.2.1 and 4.3.1).
 *   G_0 = beta grad f(x_0) + eta_0,  G_t = (1 - beta) G_{t-1} + beta grad f_{B_t}(x_t) + eta_t
 *   x_{t+1} = x_t - alpha G_t                                               ((4.14)-(4.15))
 * Only beta grad + eta is new information, so its sensitivity is beta S1 / m and the noise
 * (4.17) / (4.52) is b = beta S1 / (m eps0) for the step's mechanism eps0 (eps/T, amplified by
 * sampling through (001, (3.5)) by default or through thesis Thm 4.1.5 with
 * algo.accounting = thesis-2gamma, which is (4.52) exactly).  beta = algo.beta (default 0.1,
 * the thesis's best, Sec. 4.4.1).
 * Step (algo.alpha overrides), with the mean-gradient sensitivities S/m (the thesis sums; the
 * mean over m rows scales the gradient and both sensitivities by 1/m and the step by m):
 *   full batch  alpha = c ((S2^2/(4d) + 2 S1^2 / eps0^2) beta / (2 - beta))^{-1/2}
 *                       * 0.25 / sqrt(T + 1)                                       (4.21)
 *   m < n       alpha = c ((S2^2/(4d) m (1 - (m-1)/(n-1)) + 2 S1^2 / eps0^2)
 *                       * beta / (2 - beta))^{-1/2} * 0.25 / sqrt(T + 1)           (4.55)
 *   (both with S -> S/m.)
 *  dp-gdws        Alg. 4 (m = n) or Alg. 6 (m < n).
 *  dp-sgdws       Alg. 6: requires m < n.
 *  dp-onlinegdws  disjoint buckets of m rows from a public random permutation, each row used
 *                 once (at most floor(n/m) steps): parallel composition, every bucket spends
 *                 the whole eps (thesis Sec. 4.3.1, after [76]); step (4.55) with eps0 = eps and
 *                 T = the number of steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/dp_common.h"
#include "optim/ckpt_int.h"

enum { GDWS = 0, SGDWS = 1, ONLINE = 2 };

typedef struct {
  dpo__dp_t *dp;
  double alpha, beta, e;
  int64_t Tuse;
  double *g, *G;
} dpo__gdws_t;

static void gdws_destroy(void *st) {
  dpo__gdws_t *a = st;
  if (!a) return;
  dpo__dp_destroy(a->dp);
  free(a->g);
  free(a->G);
  free(a);
}

/* The noise-aware step (4.21) / (4.55) in mean units. */
static int gdws_alpha(const dpo__dp_t *dp, double beta, double e, int64_t T, int sampled,
                      double *alpha) {
  double eps0 = NAN;
  int rc;
  if (dp->fixed_b > 0) {
    /* fixed noise b: the eps0 with b = beta S1 / (m eps0) ((4.17)) */
    if ((rc = dpo_mech_laplace_eps(beta * dp->S1 / (double)dp->m, dp->fixed_b, dp->d, &eps0)))
      return rc;
  } else if ((rc = dpo__dp_eps0(dp, e, &eps0))) {
    return rc;
  }
  const double m = (double)dp->m, n = (double)dp->n, d = (double)dp->d;
  const double s1 = dp->S1 / m, s2 = isfinite(dp->S2) ? dp->S2 / m : s1;
  double samp = 1.0;
  if (sampled) samp = n > 1 ? m * (1.0 - (m - 1.0) / (n - 1.0)) : 0.0;
  double V = (s2 * s2 / (4.0 * d) * samp + 2.0 * s1 * s1 / (eps0 * eps0)) * beta / (2.0 - beta);
  *alpha = dp->c / sqrt(V) * 0.25 / sqrt((double)T + 1.0);
  return DPO_OK;
}

static int gdws_create_mode(dpo_solver_t *s, void **state, int mode) {
  int rc;
  dpo__gdws_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "dp-gdws: out of memory");
  if ((rc = dpo__dp_create(s, 0, &a->dp))) goto fail;
  dpo__dp_t *dp = a->dp;
  if ((rc = dpo_solver_param(s, "beta", 0.1, &a->beta))) goto fail;
  if (!(a->beta > 0 && a->beta <= 1)) {
    rc = dpo_err(DPO_EINVAL, "algo.beta = %g: the smoothing weight must be in (0, 1]", a->beta);
    goto fail;
  }
  /* a minibatch / bucket method's default batch: ceil(sqrt n), a public function of n (as
   * dp-sgd-rdp; with m = n dp-onlinegdws would have one bucket, one step);
   * the common reader's default is the full batch (its arrays hold n >= m ids) */
  if (mode != GDWS && !(dpo_solver_config(s) && dpo_config_get(dpo_solver_config(s), "algo.m")))
    dp->m = (int64_t)ceil(sqrt((double)dp->n));
  if (mode == SGDWS && dp->m >= dp->n) {
    rc = dpo_err(DPO_EINVAL, "dp-sgdws samples minibatches: give algo.m (--batch) < n = %lld",
                 (long long)dp->n);
    goto fail;
  }
  a->Tuse = dp->T;
  if (mode == ONLINE) {
    if ((rc = dpo__dp_use_disjoint(dp))) goto fail;
    if (dp->nbuckets < a->Tuse) a->Tuse = dp->nbuckets;
    a->e = dp->eps; /* parallel composition: each row is used once */
  } else if (dp->fixed_b == 0 && ((rc = dpo_privacy_split(dp->eps, dp->T, &a->e)) ||
                                   (rc = dpo__dp_calibrate(dp, a->beta, &a->e, 1, dp->T)))) {
    goto fail;
  }
  if ((rc = dpo_solver_param(s, "alpha", NAN, &a->alpha))) goto fail;
  if (isnan(a->alpha) &&
      (rc = gdws_alpha(dp, a->beta, a->e, a->Tuse, mode == ONLINE || dp->m < dp->n, &a->alpha)))
    goto fail;
  if (!(a->alpha > 0) || !isfinite(a->alpha)) {
    rc = dpo_err(DPO_EINVAL, "dp-gdws: step %g must be finite and > 0", a->alpha);
    goto fail;
  }
  size_t nb = (size_t)dp->d * sizeof(double);
  a->g = malloc(nb);
  a->G = calloc(1, nb);
  if (!a->g || !a->G) {
    rc = dpo_err(DPO_ENOMEM, "dp-gdws: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  gdws_destroy(a);
  return rc;
}

static int gdws_create(dpo_solver_t *s, void **st) { return gdws_create_mode(s, st, GDWS); }
static int sgdws_create(dpo_solver_t *s, void **st) { return gdws_create_mode(s, st, SGDWS); }
static int online_create(dpo_solver_t *s, void **st) { return gdws_create_mode(s, st, ONLINE); }

static int gdws_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__gdws_t *a = st;
  double *x = dpo_solver_x(s);
  if (t >= a->Tuse) {
    *done = 1; /* every bucket used */
    return DPO_OK;
  }
  int rc = dpo__dp_grad(a->dp, x, t, a->e, a->beta, a->g, NULL);
  if (rc) return rc;
  const double keep = t == 0 ? 0.0 : 1.0 - a->beta;
  for (int32_t j = 0; j < a->dp->d; j++) {
    a->G[j] = keep * a->G[j] + a->g[j]; /* (4.15): g = beta grad + eta */
    x[j] -= a->alpha * a->G[j];         /* (4.14) */
  }
  if (t + 1 >= a->Tuse) *done = 1;
  return DPO_OK;
}

/* checkpoint: the smoothed gradient G (and the bucket permutation, in the common state) */
static int gdws_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__gdws_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_save(a->dp, w)) || (rc = dpo_ckpt_put_double(w, "alpha", a->alpha)) ||
      (rc = dpo_ckpt_put_double(w, "beta", a->beta)) || (rc = dpo_ckpt_put_double(w, "e", a->e)) ||
      (rc = dpo_ckpt_put_int(w, "Tuse", a->Tuse)) ||
      (rc = dpo_ckpt_put_f64(w, "G", a->G, a->dp->d)))
    return rc;
  return DPO_OK;
}
static int gdws_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__gdws_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_load(a->dp, r)) || (rc = dpo__ckpt_check_double(r, "alpha", a->alpha)) ||
      (rc = dpo__ckpt_check_double(r, "beta", a->beta)) ||
      (rc = dpo__ckpt_check_double(r, "e", a->e)) ||
      (rc = dpo__ckpt_check_int(r, "Tuse", a->Tuse)) ||
      (rc = dpo_ckpt_get_f64(r, "G", a->G, a->dp->d)))
    return rc;
  return DPO_OK;
}

#define GDWS_PARAMS                                                                          \
  {"beta", "0.1", "smoothing weight of the fresh gradient (Kuru 2019, Sec. 4.4.1)"},                \
  {"alpha", "noise-aware (Kuru 2019, (4.21) / (4.55))", "step size"}
static const dpo_algo_param_t gdws_params[] = {GDWS_PARAMS, {NULL, NULL, NULL}};
static const dpo_algo_param_t sgdws_params[] = {
    GDWS_PARAMS, {"m", "ceil(sqrt n)", "minibatch size (--batch), < n"}, {NULL, NULL, NULL}};
static const dpo_algo_param_t online_params[] = {
    GDWS_PARAMS, {"m", "ceil(sqrt n)", "bucket size (--batch): floor(n/m) steps, each row once"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_dp_gdws = {"dp-gdws",
                                      "DP smoothed gradient descent (Kuru 2019, Alg. 4/6, (4.21))", 1,
                                      gdws_create, gdws_step, gdws_destroy,
                                      gdws_save, gdws_load, gdws_params, dpo__dp_params, NULL,
                                      NULL, 0, 0, 0, NULL};
const dpo_algo_t dpo__algo_dp_sgdws = {"dp-sgdws",
                                       "DP smoothed SGD on minibatches (Kuru 2019, Alg. 6, (4.55))", 1,
                                       sgdws_create, gdws_step, gdws_destroy,
                                       gdws_save, gdws_load, sgdws_params, dpo__dp_params, NULL,
                                       NULL, 0, 0, 0, NULL};
const dpo_algo_t dpo__algo_dp_onlinegdws = {
    "dp-onlinegdws", "DP smoothed GD on disjoint buckets, each row once (Kuru 2019, Sec. 4.3.1)", 1,
    online_create, gdws_step, gdws_destroy, gdws_save, gdws_load, online_params, dpo__dp_params,
    NULL, NULL, 1, 0, 0, NULL};
