/* Full-batch L-BFGS (Nocedal & Wright, Alg. 7.4/7.5) with memory m (algo.memory, default 10) and a
 * backtracking Armijo line search with safeguarded quadratic interpolation.
 *
 * One step() = one direction + one line search (several oracle calls).  Near the optimum F
 * cannot resolve the predicted decrease: there a trial is accepted when it lowers ||grad F||
 * (F comparisons would follow rounding); if no trial makes progress the algorithm reports
 * done. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"

typedef struct {
  int m, k, head; /* memory size, pairs stored, index of the newest pair */
  int32_t d;
  double c1;
  int64_t max_ls;
  double *S, *Y, *rho, *al; /* m x d ring buffers */
  double *g, *p, *xn, *gn;
  double F;
  int have;
} dpo__lbfgs_t;

static void lbfgs_destroy(void *st) {
  dpo__lbfgs_t *a = st;
  if (!a) return;
  free(a->S);
  free(a->Y);
  free(a->rho);
  free(a->al);
  free(a->g);
  free(a->p);
  free(a->xn);
  free(a->gn);
  free(a);
}

static int lbfgs_create(dpo_solver_t *s, void **state) {
  int rc = DPO_OK;
  int64_t m = 10;
  dpo__lbfgs_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "lbfgs: out of memory");
  if ((rc = dpo_solver_param_int(s, "memory", 10, &m)) ||
      (rc = dpo_solver_param(s, "c1", 1e-4, &a->c1)) ||
      (rc = dpo_solver_param_int(s, "max_ls", 40, &a->max_ls)))
    goto fail;
  if (m < 1 || m > 1000 || !(a->c1 > 0 && a->c1 < 0.5) || a->max_ls < 1) {
    rc = dpo_err(DPO_EINVAL, "lbfgs: need 1 <= algo.memory = %ld <= 1000, 0 < algo.c1 = %g < 0.5, "
                 "algo.max_ls = %ld >= 1", (long)m, a->c1, (long)a->max_ls);
    goto fail;
  }
  a->m = (int)m;
  a->d = dpo_solver_dim(s);
  size_t md = (size_t)a->m * (size_t)a->d, d = (size_t)a->d;
  /* zeroed: unused history rows are written to checkpoints */
  a->S = calloc(md, sizeof *a->S);
  a->Y = calloc(md, sizeof *a->Y);
  a->rho = calloc((size_t)a->m, sizeof *a->rho);
  a->al = malloc((size_t)a->m * sizeof *a->al);
  a->g = malloc(d * sizeof *a->g);
  a->p = malloc(d * sizeof *a->p);
  a->xn = malloc(d * sizeof *a->xn);
  a->gn = malloc(d * sizeof *a->gn);
  if (!a->S || !a->Y || !a->rho || !a->al || !a->g || !a->p || !a->xn || !a->gn) {
    rc = dpo_err(DPO_ENOMEM, "lbfgs: out of memory for m = %d, d = %d", a->m, (int)a->d);
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  lbfgs_destroy(a);
  return rc;
}

/* p = -H g by the two-loop recursion (N&W Alg. 7.4), H0 = gamma I, gamma = s'y / y'y. */
static void lbfgs_direction(dpo__lbfgs_t *a) {
  const int d = a->d;
  for (int j = 0; j < d; j++) a->p[j] = -a->g[j];
  for (int i = 0; i < a->k; i++) {
    int idx = (a->head - i + a->m) % a->m;
    a->al[idx] = a->rho[idx] * cblas_ddot(d, a->S + (size_t)idx * d, 1, a->p, 1);
    cblas_daxpy(d, -a->al[idx], a->Y + (size_t)idx * d, 1, a->p, 1);
  }
  if (a->k > 0) {
    const double *y = a->Y + (size_t)a->head * d;
    double gamma = 1.0 / (a->rho[a->head] * cblas_ddot(d, y, 1, y, 1));
    cblas_dscal(d, gamma, a->p, 1);
  }
  for (int i = a->k - 1; i >= 0; i--) {
    int idx = (a->head - i + a->m) % a->m;
    double b = a->rho[idx] * cblas_ddot(d, a->Y + (size_t)idx * d, 1, a->p, 1);
    cblas_daxpy(d, a->al[idx] - b, a->S + (size_t)idx * d, 1, a->p, 1);
  }
}

static int lbfgs_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__lbfgs_t *a = st;
  double *x = dpo_solver_x(s);
  const int d = a->d;
  int rc;
  if (!a->have) {
    if ((rc = dpo_solver_eval(s, x, &a->F, a->g))) return rc;
    a->have = 1;
  }
  double gnorm = cblas_dnrm2(d, a->g, 1);
  if (gnorm == 0.0) {
    *done = 1;
    return DPO_OK;
  }
  lbfgs_direction(a);
  double gtp = cblas_ddot(d, a->g, 1, a->p, 1);
  if (!(gtp < 0)) { /* not a descent direction (numerical trouble): restart from -g */
    a->k = 0;
    for (int j = 0; j < d; j++) a->p[j] = -a->g[j];
    gtp = -gnorm * gnorm;
  }
  /* without curvature pairs the direction is -g: start with a unit-length step */
  double step = a->k == 0 ? fmin(1.0, 1.0 / gnorm) : 1.0, Fn = NAN;
  int accepted = 0;
  for (int64_t ls = 0; ls < a->max_ls; ls++) {
    for (int j = 0; j < d; j++) a->xn[j] = x[j] + step * a->p[j];
    if ((rc = dpo_solver_eval(s, a->xn, &Fn, a->gn))) return rc;
    if (fabs(step * gtp) <= 1e-13 * (fabs(a->F) + 1e-300)) {
      /* predicted decrease below the resolution of F: comparing F values would follow their
       * rounding (which differs with the number of ranks), so the gradient decides alone */
      if (isfinite(Fn) && cblas_dnrm2(d, a->gn, 1) < gnorm) {
        accepted = 1;
        break;
      }
    } else if (isfinite(Fn) && Fn <= a->F + a->c1 * step * gtp) {
      accepted = 1;
      break;
    }
    /* minimizer of the quadratic through F, gtp and Fn, kept in [0.1, 0.5] * step */
    double next = 0.5 * step;
    if (isfinite(Fn)) {
      double den = 2.0 * (Fn - a->F - gtp * step);
      if (den > 0) next = -gtp * step * step / den;
      if (!(next >= 0.1 * step)) next = 0.1 * step;
      if (next > 0.5 * step) next = 0.5 * step;
    }
    step = next;
  }
  if (!accepted) { /* no progress possible at this precision */
    *done = 1;
    return DPO_OK;
  }
  /* curvature pair s = x_new - x, y = g_new - g; skipped when s'y is not safely positive */
  int nxt = (a->head + 1) % a->m;
  double *sv = a->S + (size_t)nxt * d, *yv = a->Y + (size_t)nxt * d;
  for (int j = 0; j < d; j++) {
    sv[j] = a->xn[j] - x[j];
    yv[j] = a->gn[j] - a->g[j];
  }
  double sy = cblas_ddot(d, sv, 1, yv, 1);
  if (sy > 1e-10 * cblas_dnrm2(d, sv, 1) * cblas_dnrm2(d, yv, 1) && sy > 0) {
    a->head = nxt;
    a->rho[nxt] = 1.0 / sy;
    if (a->k < a->m) a->k++;
  }
  memcpy(x, a->xn, (size_t)d * sizeof *x);
  memcpy(a->g, a->gn, (size_t)d * sizeof *a->g);
  a->F = Fn;
  return DPO_OK;
}

/* checkpoint: the curvature pairs (ring buffers with their head and count) and the current
 * F, grad F (evaluated once and carried from step to step) */
static int lbfgs_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__lbfgs_t *a = st;
  int64_t iv[4] = {a->m, a->k, a->head, a->have};
  int64_t md = (int64_t)a->m * a->d;
  int rc;
  (void)s;
  if ((rc = dpo_ckpt_put_i64(w, "mkhead", iv, 4)) || (rc = dpo_ckpt_put_double(w, "F", a->F)) ||
      (rc = dpo_ckpt_put_f64(w, "g", a->g, a->d)) || (rc = dpo_ckpt_put_f64(w, "S", a->S, md)) ||
      (rc = dpo_ckpt_put_f64(w, "Y", a->Y, md)) || (rc = dpo_ckpt_put_f64(w, "rho", a->rho, a->m)))
    return rc;
  return DPO_OK;
}
static int lbfgs_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__lbfgs_t *a = st;
  int64_t iv[4], md = (int64_t)a->m * a->d;
  int rc;
  (void)s;
  if ((rc = dpo_ckpt_get_i64(r, "mkhead", iv, 4))) return rc;
  if (iv[0] != a->m || iv[1] < 0 || iv[1] > a->m || iv[2] < 0 || iv[2] >= a->m)
    return dpo_err(DPO_EINVAL, "checkpoint: L-BFGS memory %lld (k %lld, head %lld), the "
                   "configuration now gives memory %d", (long long)iv[0], (long long)iv[1],
                   (long long)iv[2], a->m);
  a->k = (int)iv[1];
  a->head = (int)iv[2];
  a->have = iv[3] != 0;
  if ((rc = dpo_ckpt_get_double(r, "F", &a->F)) || (rc = dpo_ckpt_get_f64(r, "g", a->g, a->d)) ||
      (rc = dpo_ckpt_get_f64(r, "S", a->S, md)) || (rc = dpo_ckpt_get_f64(r, "Y", a->Y, md)) ||
      (rc = dpo_ckpt_get_f64(r, "rho", a->rho, a->m)))
    return rc;
  return DPO_OK;
}

static const dpo_algo_param_t lbfgs_params[] = {
    {"memory", "10", "curvature pairs kept"},
    {"c1", "1e-4", "Armijo constant"},
    {"max_ls", "40", "line-search trials per step"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_lbfgs = {"lbfgs", "full-batch L-BFGS, memory algo.memory, Armijo search",
                                    0, lbfgs_create, lbfgs_step, lbfgs_destroy,
                                    lbfgs_save, lbfgs_load, lbfgs_params, NULL, NULL, NULL, 0, 0, 0, NULL};
