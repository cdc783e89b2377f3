/* Multistage accelerated gradient M-ASG (Aybat et al.; 001, Sec. 4.2, (4.7)), exact gradients.
 *
 * Iterations are split into stages; stage k runs NAG (001, (4.1)) for n_k iterations with
 *   n_1 >= 1,  alpha_1 = c/L,   n_k = 2^k ceil(sqrt(kappa) ln 2^(p+2)),  alpha_k = c/(2^(2k) L)
 * for k >= 2 (001, (4.7), p >= 1), momentum beta_k = (1 - sqrt(mu alpha_k)) / (1 + sqrt(mu
 * alpha_k)) (001, Sec. 5), and each stage restarts the momentum from its first point
 * (x_{-1}^k = x_0^k = last iterate of stage k - 1).  n_1 defaults to ceil(2 sqrt(kappa)
 * ln sqrt(kappa)) (000, after (4.46), "as in [3]").  c (algo.c, default 1) is the step scale
 * of the experiments of (001, Sec. 5); algo.alpha replaces alpha_1 = c/L, algo.beta fixes the
 * momentum for every stage, algo.n1 and algo.p set the schedule. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"

void dpo__masg_schedule(int64_t t, int64_t n1, double kappa, double p, double alpha1,
                        int *stage, double *alpha, int64_t *len, int *first) {
  int64_t start = 0, n = n1 < 1 ? 1 : n1;
  int k = 1;
  double unit = ceil(sqrt(kappa) * (p + 2.0) * log(2.0)); /* ceil(sqrt(kappa) ln 2^(p+2)) */
  if (unit < 1) unit = 1;
  while (t >= start + n) {
    start += n;
    k++;
    /* 2^k unit, saturating (a stage that long is never finished anyway) */
    double nk = ldexp(unit, k);
    n = nk > 4e18 ? (int64_t)4e18 : (int64_t)nk;
  }
  *stage = k;
  *alpha = k == 1 ? alpha1 : ldexp(alpha1, -2 * k);
  *len = n;
  *first = t == start;
}

typedef struct {
  double alpha1, beta, kappa, p, mu;
  int64_t n1;
  double *g, *xprev, *z;
} dpo__masg_t;

static void masg_destroy(void *st) {
  dpo__masg_t *a = st;
  if (!a) return;
  free(a->g);
  free(a->xprev);
  free(a->z);
  free(a);
}

static int masg_create(dpo_solver_t *s, void **state) {
  int rc = DPO_OK;
  double L = NAN, mu = NAN, c = 1.0, n1d = NAN;
  int64_t n1 = -1;
  dpo__masg_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "masg: out of memory");
  if ((rc = dpo_solver_constants(s, &L, &mu))) goto fail;
  if (!(mu > 0)) {
    rc = dpo_err(DPO_EINVAL, "masg: the schedule (Kuru et al. 2022, (4.7)) needs mu > 0 (lambda > 0)");
    goto fail;
  }
  if ((rc = dpo_solver_param(s, "c", 1.0, &c))) goto fail;
  if (!(c > 0) || !isfinite(c)) {
    rc = dpo_err(DPO_EINVAL, "masg: algo.c = %g must be > 0", c);
    goto fail;
  }
  if ((rc = dpo__optim_step(s, "alpha", c, &a->alpha1, NULL))) goto fail;
  if ((rc = dpo_solver_param(s, "beta", NAN, &a->beta))) goto fail;
  if (!isnan(a->beta) && !(a->beta >= 0 && a->beta < 1)) {
    rc = dpo_err(DPO_EINVAL, "masg: algo.beta = %g must be in [0, 1)", a->beta);
    goto fail;
  }
  if ((rc = dpo_solver_param(s, "p", 1.0, &a->p))) goto fail;
  if (!(a->p >= 1) || !isfinite(a->p)) {
    rc = dpo_err(DPO_EINVAL, "masg: algo.p = %g must be >= 1 (Kuru et al. 2022, (4.7))", a->p);
    goto fail;
  }
  a->kappa = L / mu;
  a->mu = mu;
  n1d = ceil(2.0 * sqrt(a->kappa) * log(sqrt(a->kappa)));
  if ((rc = dpo_solver_param_int(s, "n1", n1d < 1 ? 1 : (int64_t)n1d, &n1))) goto fail;
  if (n1 < 1) {
    rc = dpo_err(DPO_EINVAL, "masg: algo.n1 = %ld must be >= 1", (long)n1);
    goto fail;
  }
  a->n1 = n1;
  int32_t d = dpo_solver_dim(s);
  a->g = malloc((size_t)d * sizeof *a->g);
  a->xprev = malloc((size_t)d * sizeof *a->xprev);
  a->z = malloc((size_t)d * sizeof *a->z);
  if (!a->g || !a->xprev || !a->z) {
    rc = dpo_err(DPO_ENOMEM, "masg: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  masg_destroy(a);
  return rc;
}

static int masg_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__masg_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = dpo_solver_dim(s);
  int stage, first;
  int64_t len;
  double alpha;
  dpo__masg_schedule(t, a->n1, a->kappa, a->p, a->alpha1, &stage, &alpha, &len, &first);
  if (first) memcpy(a->xprev, x, (size_t)d * sizeof *x); /* stage restart */
  double beta = a->beta;
  if (isnan(beta)) {
    double r = sqrt(a->mu * alpha);
    beta = (1.0 - r) / (1.0 + r);
  }
  for (int32_t j = 0; j < d; j++) a->z[j] = (1.0 + beta) * x[j] - beta * a->xprev[j];
  int rc = dpo_solver_eval(s, a->z, NULL, a->g);
  if (rc) return rc;
  for (int32_t j = 0; j < d; j++) {
    a->xprev[j] = x[j];
    x[j] = a->z[j] - alpha * a->g[j];
  }
  return DPO_OK;
}

/* checkpoint: x_{t-1} (the stage restart at t overwrites it; otherwise it is the momentum) */
static int masg_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__masg_t *a = st;
  int rc;
  if ((rc = dpo_ckpt_put_double(w, "alpha1", a->alpha1)) ||
      (rc = dpo_ckpt_put_int(w, "n1", a->n1)))
    return rc;
  return dpo_ckpt_put_f64(w, "xprev", a->xprev, (int64_t)dpo_solver_dim(s));
}
static int masg_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__masg_t *a = st;
  int rc;
  if ((rc = dpo__ckpt_check_double(r, "alpha1", a->alpha1)) ||
      (rc = dpo__ckpt_check_int(r, "n1", a->n1)))
    return rc;
  return dpo_ckpt_get_f64(r, "xprev", a->xprev, (int64_t)dpo_solver_dim(s));
}

static const dpo_algo_param_t masg_params[] = {
    {"c", "1", "step scale, alpha_1 = c/L"},
    {"alpha", "c/L", "first-stage step alpha_1 (stage k: alpha_1/2^(2k))"},
    {"beta", "(1 - sqrt(mu alpha_k))/(1 + sqrt(mu alpha_k))", "momentum (fixed for all stages if set)"},
    {"p", "1", "stage-length exponent p >= 1 of (Kuru et al. 2022, (4.7))"},
    {"n1", "ceil(2 sqrt(kappa) ln sqrt(kappa))", "length of stage 1"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_masg = {"masg", "multistage accelerated gradient M-ASG (Kuru et al. 2022, (4.7))", 0,
                                   masg_create, masg_step, masg_destroy, masg_save,
                                   masg_load, masg_params, NULL, NULL, NULL, 0, 0, 0, NULL};
