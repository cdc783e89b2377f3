/* DP-SHB / DP-HB (001, Sec. 3): heavy ball on the noised (minibatch) gradient,
 *   x_{t+1} = x_t - alpha (grad F_{B_t}(x_t) + eta_t) + beta (x_t - x_{t-1})       (3.1)
 * with eta_t ~ Laplace(b)^d, b = S1 / (m eps0), eps0 from (3.5) for the per-step share eps/T
 * (Prop. 3.1).  alpha = c / L (algo.c, algo.alpha), beta = (1 - sqrt(alpha mu)) /
 * (1 + sqrt(alpha mu)) as in the experiments of (001, Sec. 5) (algo.beta overrides).
 *  dp-hb   runs (3.1) as written;
 *  dp-shb  runs the same method in its smoothed-gradient form (3.6)-(3.7):
 *          u_t = beta u_{t-1} + (1 - beta)(grad F_{B_t}(x_t) + eta_t),  u_{-1} = 0,
 *          x_{t+1} = x_t - alpha / (1 - beta) u_t,
 *          i.e. a geometrically weighted average of all noised gradients; the two forms agree
 *          to rounding (tested). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/dp_common.h"
#include "optim/ckpt_int.h"

typedef struct {
  dpo__dp_t *dp;
  double alpha, beta, e;
  int smoothed, started;
  double *g, *xprev, *u;
} dpo__dphb_t;

static void dphb_destroy(void *st) {
  dpo__dphb_t *a = st;
  if (!a) return;
  dpo__dp_destroy(a->dp);
  free(a->g);
  free(a->xprev);
  free(a->u);
  free(a);
}

static int dphb_create_mode(dpo_solver_t *s, void **state, int smoothed) {
  int rc;
  dpo__dphb_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "dp-hb: out of memory");
  a->smoothed = smoothed;
  if ((rc = dpo__dp_create(s, 0, &a->dp))) goto fail;
  if ((rc = dpo__optim_step(s, "alpha", a->dp->c, &a->alpha, NULL))) goto fail;
  if ((rc = dpo_solver_param(s, "beta", NAN, &a->beta))) goto fail;
  if (isnan(a->beta)) {
    if (!(a->dp->mu > 0)) {
      rc = dpo_err(DPO_EINVAL, "dp-hb: mu = 0 (lambda = 0): give the momentum algo.beta");
      goto fail;
    }
    double r = sqrt(a->alpha * a->dp->mu);
    a->beta = (1.0 - r) / (1.0 + r);
  }
  if (!(a->beta >= 0 && a->beta < 1)) {
    rc = dpo_err(DPO_EINVAL, "dp-hb: momentum beta = %g must be in [0, 1)", a->beta);
    goto fail;
  }
  if (a->dp->fixed_b == 0 && ((rc = dpo_privacy_split(a->dp->eps, a->dp->T, &a->e)) ||
                              (rc = dpo__dp_calibrate(a->dp, 1.0, &a->e, 1, a->dp->T))))
    goto fail;
  size_t nb = (size_t)dpo_solver_dim(s) * sizeof(double);
  a->g = malloc(nb);
  a->xprev = malloc(nb);
  a->u = calloc(1, nb);
  if (!a->g || !a->xprev || !a->u) {
    rc = dpo_err(DPO_ENOMEM, "dp-hb: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  dphb_destroy(a);
  return rc;
}

static int dphb_create(dpo_solver_t *s, void **st) { return dphb_create_mode(s, st, 0); }
static int dpshb_create(dpo_solver_t *s, void **st) { return dphb_create_mode(s, st, 1); }

static int dphb_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__dphb_t *a = st;
  double *x = dpo_solver_x(s);
  const int32_t d = a->dp->d;
  if (!a->started) {
    memcpy(a->xprev, x, (size_t)d * sizeof *x);
    a->started = 1;
  }
  int rc = dpo__dp_grad(a->dp, x, t, a->e, 1.0, a->g, NULL);
  if (rc) return rc;
  if (!a->smoothed) {
    for (int32_t j = 0; j < d; j++) {
      double xn = x[j] - a->alpha * a->g[j] + a->beta * (x[j] - a->xprev[j]);
      a->xprev[j] = x[j];
      x[j] = xn;
    }
  } else {
    const double k = a->alpha / (1.0 - a->beta);
    for (int32_t j = 0; j < d; j++) {
      a->u[j] = a->beta * a->u[j] + (1.0 - a->beta) * a->g[j]; /* (3.7) */
      x[j] -= k * a->u[j];                                       /* (3.6) */
    }
  }
  return DPO_OK;
}

/* checkpoint: x_{t-1} (dp-hb) or the smoothed gradient u (dp-shb) */
static int dphb_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__dphb_t *a = st;
  const int64_t d = a->dp->d;
  int rc;
  (void)s;
  if ((rc = dpo__dp_save(a->dp, w)) || (rc = dpo_ckpt_put_double(w, "e", a->e)) ||
      (rc = dpo__ckpt_put_momentum(w, a->alpha, a->beta, a->started, a->xprev, d)) ||
      (rc = dpo_ckpt_put_f64(w, "u", a->u, d)))
    return rc;
  return DPO_OK;
}
static int dphb_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__dphb_t *a = st;
  const int64_t d = a->dp->d;
  int rc;
  (void)s;
  if ((rc = dpo__dp_load(a->dp, r)) || (rc = dpo__ckpt_check_double(r, "e", a->e)) ||
      (rc = dpo__ckpt_get_momentum(r, a->alpha, a->beta, &a->started, a->xprev, d)) ||
      (rc = dpo_ckpt_get_f64(r, "u", a->u, d)))
    return rc;
  return DPO_OK;
}

static const dpo_algo_param_t dphb_params[] = {
    {"alpha", "c/L", "step size"},
    {"beta", "(1 - sqrt(alpha mu))/(1 + sqrt(alpha mu))", "momentum (Kuru et al. 2022, Sec. 5)"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_dp_hb = {"dp-hb", "DP heavy ball (Kuru et al. 2022, (3.1)), alpha c/L", 1, dphb_create,
                                    dphb_step, dphb_destroy, dphb_save, dphb_load,
                                    dphb_params, dpo__dp_params, "alpha", "beta", 0, 0, 0, NULL};
const dpo_algo_t dpo__algo_dp_shb = {"dp-shb",
                                     "DP-SHB as smoothed noisy gradients (Kuru et al. 2022, (3.6)-(3.7))", 1,
                                     dpshb_create, dphb_step, dphb_destroy,
                                     dphb_save, dphb_load, dphb_params, dpo__dp_params, "alpha",
                                     "beta", 0, 0, 0, NULL};
