/* Gradient descent with a constant step, x_{t+1} = x_t - alpha grad F(x_t)
 * (000, (4.4)); alpha = 1/L from the declared row bound unless algo.alpha is set. */
#include <stdlib.h>

#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"

typedef struct {
  double alpha;
  double *g;
} dpo__gd_t;

static void gd_destroy(void *st) {
  dpo__gd_t *a = st;
  if (!a) return;
  free(a->g);
  free(a);
}

static int gd_create(dpo_solver_t *s, void **state) {
  dpo__gd_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "gd: out of memory");
  int rc = dpo__optim_step(s, "alpha", 1.0, &a->alpha, NULL);
  if (rc) goto fail;
  a->g = malloc((size_t)dpo_solver_dim(s) * sizeof *a->g);
  if (!a->g) {
    rc = dpo_err(DPO_ENOMEM, "gd: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  gd_destroy(a);
  return rc;
}

static int gd_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__gd_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = dpo_solver_dim(s);
  int rc = dpo_solver_eval(s, x, NULL, a->g);
  if (rc) return rc;
  for (int32_t j = 0; j < d; j++) x[j] -= a->alpha * a->g[j];
  return DPO_OK;
}

/* checkpoint: no state across steps but the step size (checked against the config) */
static int gd_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  (void)s;
  return dpo_ckpt_put_double(w, "alpha", ((dpo__gd_t *)st)->alpha);
}
static int gd_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  (void)s;
  return dpo__ckpt_check_double(r, "alpha", ((dpo__gd_t *)st)->alpha);
}

static const dpo_algo_param_t gd_params[] = {
    {"alpha", "1/L", "step size (L from --row-l2-bound)"}, {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_gd = {"gd", "gradient descent, step 1/L (algo.alpha)", 0, gd_create,
                                 gd_step, gd_destroy, gd_save, gd_load, gd_params, NULL, NULL,
                                 NULL, 0, 0, 0, NULL};
