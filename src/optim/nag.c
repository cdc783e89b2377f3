/* Nesterov's accelerated gradient (000, (4.6); 001, (4.1) without noise):
 *   z_t = (1 + beta) x_t - beta x_{t-1},   x_{t+1} = z_t - alpha grad F(z_t),
 * with the classical alpha = 1/L, beta = (sqrt(kappa) - 1) / (sqrt(kappa) + 1) (000, Sec. 4.4).
 * Without strong convexity (mu = 0) the convex schedule beta_t = t / (t + 3) is used.
 * algo.alpha / algo.beta override. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"

typedef struct {
  double alpha, beta; /* beta NAN: t / (t + 3) */
  double *g, *xprev, *z;
  int started;
} dpo__nag_t;

static void nag_destroy(void *st) {
  dpo__nag_t *a = st;
  if (!a) return;
  free(a->g);
  free(a->xprev);
  free(a->z);
  free(a);
}

static int nag_create(dpo_solver_t *s, void **state) {
  int rc = DPO_OK;
  double L = NAN, mu = NAN, beta = NAN;
  dpo__nag_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "nag: out of memory");
  if ((rc = dpo__optim_step(s, "alpha", 1.0, &a->alpha, &L)) ||
      (rc = dpo_solver_param(s, "beta", NAN, &beta)))
    goto fail;
  if (isnan(beta)) {
    mu = dpo_solver_mu(s);
    if (mu > 0) {
      if (isnan(L) && (rc = dpo_solver_constants(s, &L, NULL))) goto fail;
      double sk = sqrt(L / mu);
      beta = (sk - 1.0) / (sk + 1.0);
    }
  } else if (!(beta >= 0 && beta < 1)) {
    rc = dpo_err(DPO_EINVAL, "nag: algo.beta = %g must be in [0, 1)", beta);
    goto fail;
  }
  a->beta = beta;
  int32_t d = dpo_solver_dim(s);
  a->g = malloc((size_t)d * sizeof *a->g);
  a->xprev = malloc((size_t)d * sizeof *a->xprev);
  a->z = malloc((size_t)d * sizeof *a->z);
  if (!a->g || !a->xprev || !a->z) {
    rc = dpo_err(DPO_ENOMEM, "nag: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  nag_destroy(a);
  return rc;
}

static int nag_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__nag_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = dpo_solver_dim(s);
  if (!a->started) {
    memcpy(a->xprev, x, (size_t)d * sizeof *x);
    a->started = 1;
  }
  double beta = isnan(a->beta) ? (double)t / ((double)t + 3.0) : a->beta;
  for (int32_t j = 0; j < d; j++) a->z[j] = (1.0 + beta) * x[j] - beta * a->xprev[j];
  int rc = dpo_solver_eval(s, a->z, NULL, a->g);
  if (rc) return rc;
  for (int32_t j = 0; j < d; j++) {
    a->xprev[j] = x[j];
    x[j] = a->z[j] - a->alpha * a->g[j];
  }
  return DPO_OK;
}

/* checkpoint: x_{t-1} and whether it exists */
static int nag_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__nag_t *a = st;
  return dpo__ckpt_put_momentum(w, a->alpha, a->beta, a->started, a->xprev, dpo_solver_dim(s));
}
static int nag_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__nag_t *a = st;
  return dpo__ckpt_get_momentum(r, a->alpha, a->beta, &a->started, a->xprev, dpo_solver_dim(s));
}

static const dpo_algo_param_t nag_params[] = {
    {"alpha", "1/L", "step size"},
    {"beta", "(sqrt kappa - 1)/(sqrt kappa + 1); mu = 0: t/(t+3)", "momentum"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_nag = {"nag", "Nesterov accelerated gradient, alpha 1/L (Kuru 2019, Sec. 4.4)",
                                  0, nag_create, nag_step, nag_destroy, nag_save, nag_load,
                                  nag_params, NULL, NULL, NULL, 0, 0, 0, NULL};
