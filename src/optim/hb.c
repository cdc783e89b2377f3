/* Polyak's heavy ball, x_{t+1} = x_t - alpha grad F(x_t) + beta (x_t - x_{t-1})  (000, (4.5)).
 *
 * Default parameters are the "classical" ones of the thesis (000, Sec. 4.4):
 *   alpha = 1/L,  beta = ((sqrt(kappa) - 1) / (sqrt(kappa) + 1))^2,  kappa = L / mu.
 * algo.params = polyak selects Polyak's optimal pair for quadratics instead,
 *   alpha = 4 / (sqrt(L) + sqrt(mu))^2 with the same beta.
 * algo.alpha / algo.beta override either. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"

typedef struct {
  double alpha, beta;
  double *g, *xprev;
  int started;
} dpo__hb_t;

static void hb_destroy(void *st) {
  dpo__hb_t *a = st;
  if (!a) return;
  free(a->g);
  free(a->xprev);
  free(a);
}

static int hb_create(dpo_solver_t *s, void **state) {
  int rc = DPO_OK;
  double L = NAN, mu = NAN, alpha = NAN, beta = NAN;
  const char *params = "thesis";
  dpo__hb_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "hb: out of memory");
  if ((rc = dpo_solver_param(s, "alpha", NAN, &alpha)) ||
      (rc = dpo_solver_param(s, "beta", NAN, &beta)))
    goto fail;
  if ((rc = dpo_solver_param_str(s, "params", "thesis", &params))) goto fail;
  if (strcmp(params, "thesis") != 0 && strcmp(params, "polyak") != 0) {
    rc = dpo_err(DPO_EINVAL, "algo.params = %s: expected thesis or polyak", params);
    goto fail;
  }
  if (isnan(alpha) || isnan(beta)) {
    if ((rc = dpo_solver_constants(s, &L, &mu))) goto fail;
    if (!(mu > 0)) {
      rc = dpo_err(DPO_EINVAL, "hb: the classical parameters need mu > 0 (lambda > 0); set "
                   "algo.alpha and algo.beta");
      goto fail;
    }
    double sk = sqrt(L / mu), r = (sk - 1.0) / (sk + 1.0);
    if (isnan(beta)) beta = r * r;
    if (isnan(alpha))
      alpha = strcmp(params, "polyak") == 0 ? 4.0 / ((sqrt(L) + sqrt(mu)) * (sqrt(L) + sqrt(mu)))
                                            : 1.0 / L;
  }
  if (!(alpha > 0) || !isfinite(alpha) || !(beta >= 0 && beta < 1)) {
    rc = dpo_err(DPO_EINVAL, "hb: alpha = %g must be > 0 and beta = %g in [0, 1)", alpha, beta);
    goto fail;
  }
  a->alpha = alpha;
  a->beta = beta;
  a->g = malloc((size_t)dpo_solver_dim(s) * sizeof *a->g);
  a->xprev = malloc((size_t)dpo_solver_dim(s) * sizeof *a->xprev);
  if (!a->g || !a->xprev) {
    rc = dpo_err(DPO_ENOMEM, "hb: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  hb_destroy(a);
  return rc;
}

static int hb_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__hb_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = dpo_solver_dim(s);
  if (!a->started) { /* x_{-1} = x_0: the first step is a gradient step */
    memcpy(a->xprev, x, (size_t)d * sizeof *x);
    a->started = 1;
  }
  int rc = dpo_solver_eval(s, x, NULL, a->g);
  if (rc) return rc;
  for (int32_t j = 0; j < d; j++) {
    double xn = x[j] - a->alpha * a->g[j] + a->beta * (x[j] - a->xprev[j]);
    a->xprev[j] = x[j];
    x[j] = xn;
  }
  return DPO_OK;
}

/* checkpoint: x_{t-1} and whether it exists */
static int hb_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__hb_t *a = st;
  return dpo__ckpt_put_momentum(w, a->alpha, a->beta, a->started, a->xprev, dpo_solver_dim(s));
}
static int hb_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__hb_t *a = st;
  return dpo__ckpt_get_momentum(r, a->alpha, a->beta, &a->started, a->xprev, dpo_solver_dim(s));
}

static const dpo_algo_param_t hb_params[] = {
    {"alpha", "1/L (polyak: 4/(sqrt L + sqrt mu)^2)", "step size"},
    {"beta", "((sqrt kappa - 1)/(sqrt kappa + 1))^2", "momentum, kappa = L/mu"},
    {"params", "thesis", "thesis | polyak: which default pair (Kuru 2019, Sec. 4.4)"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_hb = {"hb", "heavy ball, classical alpha/beta (Kuru 2019, Sec. 4.4)", 0,
                                 hb_create, hb_step, hb_destroy, hb_save, hb_load, hb_params,
                                 NULL, NULL, NULL, 0, 0, 0, NULL};
