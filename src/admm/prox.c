/* Proximal operators and local x-updates of consensus ADMM (Boyd et al. 2011, Sec. 4.4, 7.1).
 *
 * Local objective of rank i: f_i(x) = (1/n) sum_{rows of shard i} loss(u'x, y), n = global
 * rows, so sum_i f_i = mean loss for any number of ranks.  Its x-update minimizes
 * f_i(x) + rho/2 ||x - v||^2 with v = z - u_i:
 *   least squares: (A_i'A_i/n + rho I) x = A_i'b_i/n + rho v  (Cholesky, dpotrf/dpotrs);
 *   logistic:      L-BFGS (Nocedal & Wright Alg. 7.4) warm-started at the previous x_i and with
 *                  the previous curvature pairs, Armijo / approximate-Wolfe backtracking; the
 *                  objective is rho-strongly convex. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "admm/admm_impl.h"
#include "dpopt/status.h"

void dpo_admm_soft_threshold(const double *v, double kappa, int32_t d, double *out) {
  for (int32_t j = 0; j < d; j++) {
    double a = v[j];
    out[j] = a > kappa ? a - kappa : (a < -kappa ? a + kappa : 0.0);
  }
}

void dpo_admm_prox(dpo_admm_g_t g, double lambda, double t, const double *v, int32_t d,
                   double *out) {
  switch (g) {
  case DPO_ADMM_G_L1:
    dpo_admm_soft_threshold(v, t * lambda, d, out);
    break;
  case DPO_ADMM_G_L2: { /* d/dz: 2 lambda z + (z - v)/t = 0 */
    double s = 1.0 / (1.0 + 2.0 * t * lambda);
    for (int32_t j = 0; j < d; j++) out[j] = s * v[j];
    break;
  }
  default:
    if (out != v) memcpy(out, v, (size_t)d * sizeof *out);
  }
}

double dpo_admm_g_value(dpo_admm_g_t g, double lambda, const double *z, int32_t d) {
  if (g == DPO_ADMM_G_L1) return lambda * cblas_dasum(d, z, 1);
  if (g == DPO_ADMM_G_L2) {
    double n2 = cblas_dnrm2(d, z, 1);
    return lambda * n2 * n2;
  }
  return 0.0;
}

int dpo__admm_local_fg(const dpo_model_t *m, const dpo_shard_t *s, const double *x, double *f,
                       double *g) {
  double loss = 0.0;
  int32_t d = s->d;
  memset(g, 0, (size_t)d * sizeof *g);
  int st = dpo_model_local_grad(m, s, x, NULL, 0, NULL, NULL, &loss, g);
  if (st) return st;
  double inv = 1.0 / (double)s->n_global;
  cblas_dscal(d, inv, g, 1);
  if (f) *f = loss * inv;
  return DPO_OK;
}

int dpo__admm_lsq_system(const dpo_model_t *m, const dpo_shard_t *s, double *H, double *r) {
  int32_t d = s->d;
  size_t dd = (size_t)d * (size_t)d;
  memset(H, 0, dd * sizeof *H);
  double *x0 = calloc((size_t)d, sizeof *x0);
  if (!x0) return dpo_err(DPO_ENOMEM, "admm: out of memory");
  int st = dpo_model_local_hess(m, s, x0, H);
  /* grad of (u'x - y)^2 / 2 at x = 0 is -sum y u = -A'b */
  if (!st) st = dpo__admm_local_fg(m, s, x0, NULL, r);
  free(x0);
  if (st) return st;
  double inv = 1.0 / (double)s->n_global;
  cblas_dscal((int)dd, inv, H, 1);
  cblas_dscal(d, -1.0, r, 1);
  return DPO_OK;
}

int dpo__admm_chol(const double *H, double rho, int32_t d, double *L) {
  size_t dd = (size_t)d * (size_t)d;
  memcpy(L, H, dd * sizeof *L);
  for (int32_t j = 0; j < d; j++) L[(size_t)j * d + j] += rho;
  int n = d, info = 0;
  /* H is symmetric, so row-major and column-major views coincide */
  dpotrf_("L", &n, L, &n, &info, 1);
  if (info != 0)
    return dpo_err(DPO_ELAPACK, "admm: dpotrf of A'A/n + rho I failed (info %d, rho %g)", info,
                   rho);
  return DPO_OK;
}

int dpo__admm_chol_solve(const double *L, int32_t d, double *b) {
  int n = d, one = 1, info = 0;
  dpotrs_("L", &n, &one, L, &n, b, &n, &info, 1);
  if (info != 0) return dpo_err(DPO_ELAPACK, "admm: dpotrs failed (info %d)", info);
  return DPO_OK;
}

/* phi(x) = f_i(x) + rho/2 ||x - v||^2 and its gradient: one fused loss + gradient pass over
 * the shard (dpo_model_local_grad -> the CSR / dense kernels), O(d) on top. */
static int phi_fg(const dpo_model_t *m, const dpo_shard_t *s, dpo__admm_lbfgs_t *w, double rho,
                  const double *v, const double *x, double *f, double *g) {
  w->evals++;
  int st = dpo__admm_local_fg(m, s, x, f, g);
  if (st) return st;
  double q = 0.0;
  for (int32_t j = 0; j < s->d; j++) {
    double e = x[j] - v[j];
    q += e * e;
    g[j] += rho * e;
  }
  *f += 0.5 * rho * q;
  return DPO_OK;
}

static double inf_norm(const double *a, int32_t d) {
  double m = 0.0;
  for (int32_t j = 0; j < d; j++)
    if (fabs(a[j]) > m) m = fabs(a[j]);
  return m;
}

int dpo__admm_lbfgs_init(dpo__admm_lbfgs_t *w, int32_t d, int mem) {
  memset(w, 0, sizeof *w);
  if (mem < 1) mem = 1;
  size_t D = (size_t)d;
  w->d = d;
  w->mem = mem;
  w->head = -1;
  w->S = malloc((size_t)mem * D * sizeof *w->S);
  w->Y = malloc((size_t)mem * D * sizeof *w->Y);
  w->rh = malloc((size_t)mem * sizeof *w->rh);
  w->al = malloc((size_t)mem * sizeof *w->al);
  w->g = malloc(D * sizeof *w->g);
  w->p = malloc(D * sizeof *w->p);
  w->xn = malloc(D * sizeof *w->xn);
  w->gn = malloc(D * sizeof *w->gn);
  w->xc = malloc(D * sizeof *w->xc);
  w->gc = malloc(D * sizeof *w->gc);
  if (!w->S || !w->Y || !w->rh || !w->al || !w->g || !w->p || !w->xn || !w->gn || !w->xc ||
      !w->gc) {
    dpo__admm_lbfgs_free(w);
    return dpo_err(DPO_ENOMEM, "admm: out of memory (L-BFGS, d = %d, m = %d)", d, mem);
  }
  return DPO_OK;
}

void dpo__admm_lbfgs_free(dpo__admm_lbfgs_t *w) {
  free(w->S);
  free(w->Y);
  free(w->rh);
  free(w->al);
  free(w->g);
  free(w->p);
  free(w->xn);
  free(w->gn);
  free(w->xc);
  free(w->gc);
  w->S = w->Y = w->rh = w->al = w->g = w->p = w->xn = w->gn = w->xc = w->gc = NULL;
  w->k = 0;
  w->cached = 0;
}

/* y = grad f_i(x') - grad f_i(x) + rho s, so a new rho shifts y by (rho_new - rho_old) s; s'y
 * stays > 0 (f_i convex, rho_new > 0). */
void dpo__admm_lbfgs_set_rho(dpo__admm_lbfgs_t *w, double rho) {
  if (w->k > 0 && w->rho > 0 && rho != w->rho) {
    size_t D = (size_t)w->d;
    for (int i = 0; i < w->k; i++) {
      int j = (w->head - i + w->mem) % w->mem;
      cblas_daxpy(w->d, rho - w->rho, w->S + j * D, 1, w->Y + j * D, 1);
      double sy = cblas_ddot(w->d, w->S + j * D, 1, w->Y + j * D, 1);
      if (!(sy > 0)) { /* cannot happen in exact arithmetic; drop the memory */
        w->k = 0;
        w->head = -1;
        break;
      }
      w->rh[j] = 1.0 / sy;
    }
  }
  w->rho = rho;
}

int dpo__admm_lbfgs(const dpo_model_t *m, const dpo_shard_t *s, dpo__admm_lbfgs_t *w, double rho,
                    const double *v, double *x, int maxit, double tol_inf, double tol_2,
                    int64_t *iters) {
  int32_t d = s->d;
  size_t D = (size_t)d;
  int st = DPO_OK, it = 0, mem = w->mem;
  double *S = w->S, *Y = w->Y, *rh = w->rh, *al = w->al, *g = w->g, *p = w->p, *xn = w->xn,
         *gn = w->gn;
  dpo__admm_lbfgs_set_rho(w, rho);
  double F;
  if (w->cached && memcmp(x, w->xc, D * sizeof *x) == 0) {
    double q = 0.0;
    for (int32_t j = 0; j < d; j++) {
      double e = x[j] - v[j];
      q += e * e;
      g[j] = w->gc[j] + rho * e;
    }
    F = w->fc + 0.5 * rho * q;
  } else if ((st = phi_fg(m, s, w, rho, v, x, &F, g))) {
    goto done;
  }
  w->cached = 0;
  for (it = 0; it < maxit; it++) {
    if (inf_norm(g, d) <= tol_inf || (tol_2 > 0 && cblas_dnrm2(d, g, 1) <= tol_2)) break;
    /* two-loop recursion: p = -H g */
    memcpy(p, g, D * sizeof *p);
    for (int i = 0; i < w->k; i++) {
      int j = (w->head - i + mem) % mem;
      al[j] = rh[j] * cblas_ddot(d, S + j * D, 1, p, 1);
      cblas_daxpy(d, -al[j], Y + j * D, 1, p, 1);
    }
    /* initial scaling: s'y / y'y of the newest pair; before any pair a unit step of length
     * at most 1 (the shard's curvature is unknown: no public bound is assumed here) */
    double gn2 = cblas_dnrm2(d, g, 1);
    double h0 = 1.0 / (rho + 0.25);
    if (w->k > 0) {
      double yy = cblas_ddot(d, Y + w->head * D, 1, Y + w->head * D, 1);
      h0 = 1.0 / (rh[w->head] * yy);
    } else if (h0 * gn2 > 1.0) {
      h0 = 1.0 / gn2;
    }
    cblas_dscal(d, h0, p, 1);
    for (int i = w->k - 1; i >= 0; i--) {
      int j = (w->head - i + mem) % mem;
      double b = rh[j] * cblas_ddot(d, Y + j * D, 1, p, 1);
      cblas_daxpy(d, al[j] - b, S + j * D, 1, p, 1);
    }
    cblas_dscal(d, -1.0, p, 1);
    double gp = cblas_ddot(d, g, 1, p, 1);
    if (!(gp < 0)) { /* lost descent (round-off): restart from steepest descent */
      w->k = 0;
      w->head = -1;
      double sc = gn2 > 0 ? fmin(1.0 / (rho + 0.25), 1.0 / gn2) : 0.0;
      for (int32_t j = 0; j < d; j++) p[j] = -g[j] * sc;
      gp = cblas_ddot(d, g, 1, p, 1);
      if (!(gp < 0)) break; /* zero gradient */
    }
    /* Backtracking from the unit step with safeguarded quadratic interpolation.  Acceptance:
     * Armijo (c1 = 1e-4), or, when F can no longer resolve the decrease near the optimum,
     * Hager-Zhang's approximate Wolfe conditions (2 delta - 1) phi'(0) >= phi'(t) >= sigma
     * phi'(0) with F(t) <= F + 1e-10 |F| (delta = 0.1, sigma = 0.9): the directional derivative
     * is computed to full relative precision even where the objective's differences are not. */
    double t = 1.0, Fn = 0.0;
    int ok = 0;
    for (int ls = 0; ls < 20; ls++) {
      for (int32_t j = 0; j < d; j++) xn[j] = x[j] + t * p[j];
      if ((st = phi_fg(m, s, w, rho, v, xn, &Fn, gn))) goto done;
      if (Fn <= F + 1e-4 * t * gp) {
        ok = 1;
        break;
      }
      double dphi = cblas_ddot(d, gn, 1, p, 1);
      if (Fn <= F + 1e-10 * fabs(F) && dphi <= -0.8 * gp && dphi >= 0.9 * gp) {
        ok = 1;
        break;
      }
      double den = 2.0 * (Fn - F - gp * t);
      double tq = den > 0 ? -gp * t * t / den : 0.5 * t;
      if (!isfinite(tq) || tq < 0.1 * t) tq = 0.1 * t;
      if (tq > 0.5 * t) tq = 0.5 * t;
      t = tq;
    }
    if (!ok) break; /* no progress possible at double precision */
    w->head = (w->head + 1) % mem;
    double *sv = S + w->head * D, *yv = Y + w->head * D;
    for (int32_t j = 0; j < d; j++) {
      sv[j] = xn[j] - x[j];
      yv[j] = gn[j] - g[j];
    }
    double sy = cblas_ddot(d, sv, 1, yv, 1);
    if (sy > 1e-16 * cblas_ddot(d, yv, 1, yv, 1) && sy > 0) {
      rh[w->head] = 1.0 / sy;
      if (w->k < mem) w->k++;
    } else {
      w->head = (w->head - 1 + mem) % mem; /* skip a pair without positive curvature */
      if (w->head < 0) w->head += mem;
      if (w->k == 0) w->head = -1;
    }
    memcpy(x, xn, D * sizeof *x);
    memcpy(g, gn, D * sizeof *g);
    F = Fn;
  }
  if (!st) { /* remember f_i, grad f_i at the returned x for the next call */
    double q = 0.0;
    for (int32_t j = 0; j < d; j++) {
      double e = x[j] - v[j];
      q += e * e;
      w->gc[j] = g[j] - rho * e;
    }
    w->fc = F - 0.5 * rho * q;
    memcpy(w->xc, x, D * sizeof *x);
    w->cached = 1;
  }
done:
  if (iters) *iters = it;
  return st;
}

int dpo_admm_local_prox(const dpo_model_t *model, const dpo_shard_t *shard,
                        dpo_admm_xupdate_t kind, double rho, const double *v, double *x,
                        int64_t *iters) {
  if (!model || !shard || !v || !x || !(rho > 0))
    return dpo_err(DPO_EINVAL, "admm_local_prox: bad argument (rho %g)", rho);
  int32_t d = shard->d;
  if (kind == DPO_ADMM_X_AUTO)
    kind = dpo_model_loss(model) == DPO_LOSS_SQUARED ? DPO_ADMM_X_EXACT : DPO_ADMM_X_LBFGS;
  if (kind == DPO_ADMM_X_EXACT) {
    if (dpo_model_loss(model) != DPO_LOSS_SQUARED)
      return dpo_err(DPO_EINVAL, "admm: the exact x-update needs the least-squares loss");
    size_t dd = (size_t)d * (size_t)d;
    double *H = malloc(dd * sizeof *H), *L = malloc(dd * sizeof *L);
    int st = (!H || !L) ? dpo_err(DPO_ENOMEM, "admm: out of memory") : DPO_OK;
    if (!st) st = dpo__admm_lsq_system(model, shard, H, x);
    if (!st) st = dpo__admm_chol(H, rho, d, L);
    if (!st) {
      cblas_daxpy(d, rho, v, 1, x, 1);
      st = dpo__admm_chol_solve(L, d, x);
    }
    if (iters) *iters = 1;
    free(H);
    free(L);
    return st;
  }
  if (kind == DPO_ADMM_X_LBFGS) {
    dpo__admm_lbfgs_t w;
    int st = dpo__admm_lbfgs_init(&w, d, 8);
    if (!st) st = dpo__admm_lbfgs(model, shard, &w, rho, v, x, 500, 1e-12, 0.0, iters);
    dpo__admm_lbfgs_free(&w);
    return st;
  }
  return dpo_err(DPO_EINVAL, "admm_local_prox: kind %d is not a minimization", (int)kind);
}
