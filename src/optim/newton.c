/* Reference solver for F* (non-private): SPMD Newton's method with a backtracking line
 * search, the Newton system solved with ScaLAPACK over a 2-D BLACS grid, and the power
 * iteration for the largest Hessian eigenvalue.
 *
 * Every reduction of a gradient, loss or Hessian-vector product is done in double-double
 * over global-aligned row chunks (comm/reduce.h) and broadcast from rank 0, so all ranks hold
 * bit-identical values and take identical decisions, and a gradient norm of 1e-10 is resolved
 * (the sum's rounding error is ~1e-16 of the terms, not n * 1e-16).
 *
 * Cost of the Hessian: each rank forms its local d x d data-term sum (n_local d^2 flops), the
 * sum is reduced to rank 0 and broadcast (2 d^2 doubles per rank of traffic, d^2 memory on
 * every rank), and each rank then copies out its block-cyclic blocks for pdpotrf.  This is
 * fine for d up to a few thousand; beyond that a reduce-scatter into the blocks would be
 * needed. */
#include "dpopt/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/reduce.h"
#include "dpopt/status.h"
#include "linalg/scalapack.h"

typedef struct {
  MPI_Comm comm;
  const dpo_model_t *m;
  const dpo_shard_t *s;
  int32_t d;
  int64_t n;
  dpo__dd_t *acc; /* d + 2 + status */
  double *g;
} dpo__nt_t;

/* F and grad F at x, identical on all ranks.  Collective; the status is agreed. */
static int dpo__nt_eval(dpo__nt_t *c, const double *x, double *F, double *g) {
  const int32_t d = c->d;
  const dpo_shard_t *s = c->s;
  int rc = DPO_OK;
  for (int j = 0; j < d + 3; j++) c->acc[j].hi = c->acc[j].lo = 0.0;
  for (int64_t i = 0; i < s->n && !rc;) {
    int64_t e = dpo__chunk_end(s, i);
    dpo_shard_t v;
    dpo__shard_view(s, i, e - i, &v);
    double loss = 0.0;
    rc = dpo_model_local_grad(c->m, &v, x, NULL, 0, NULL, NULL, &loss, c->g);
    if (!rc) {
      dpo__dd_add_vec(c->acc, c->g, d);
      dpo__dd_add(&c->acc[d], loss);
    }
    i = e;
  }
  if (!rc)
    for (int j = 0; j <= d; j++)
      if (!isfinite(c->acc[j].hi)) {
        rc = dpo_err(DPO_EFORMAT, "newton: rows [%ld, %ld): non-finite loss or gradient",
                     (long)s->row0, (long)(s->row0 + s->n));
        break;
      }
  c->acc[d + 2].hi = (double)rc;
  if (dpo__dd_reduce(c->comm, c->acc, d + 2, 0, 1) != DPO_OK && !rc) rc = DPO_EMPI;
  if (!rc && c->acc[d + 2].hi != 0.0) rc = DPO_EREMOTE;
  rc = dpo_agree(c->comm, rc);
  if (rc) return rc;
  double loss = c->acc[d].hi;
  for (int j = 0; j < d; j++) g[j] = c->acc[j].hi;
  dpo_model_finish(c->m, d, c->n, x, &loss, g);
  *F = loss;
  return DPO_OK;
}

static double dpo__dot(const double *a, const double *b, int32_t d) {
  double s = 0.0;
  for (int32_t j = 0; j < d; j++) s += a[j] * b[j];
  return s;
}

int dpo_newton_solve(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s, double *x,
                     double gtol, int maxit, dpo_newton_info_t *info) {
  static const char fn[] = "dpo_newton_solve";
  int rc = DPO_OK, rank = 0;
  dpo__nt_t c = {comm, m, s, 0, 0, NULL, NULL};
  double *g = NULL, *gt = NULL, *xt = NULL, *p = NULL, *H = NULL;
  double F = NAN, gnorm = NAN;
  int64_t it = 0;
  if (comm == MPI_COMM_NULL) return dpo_err(DPO_EINVAL, "%s: null communicator", fn);
  MPI_Comm_rank(comm, &rank);
  if (!m || !s || !x || s->d <= 0 || !(gtol >= 0) || maxit < 0) {
    rc = dpo_err(DPO_EINVAL, "%s: bad arguments", fn);
    goto fail;
  }
  if (dpo_model_multiclass(m)) { /* its Hessian is K d x K d: not built here */
    rc = dpo_err(DPO_EUNSUP, "Newton (run.fstar = newton, dpopt newton) supports logreg, ridge "
                 "and lsq, not model %s", dpo_model_name(m));
    goto fail;
  }
  c.d = s->d;
  c.n = s->n_global;
  const int32_t d = s->d;
  const double twolam = 2.0 * dpo_model_lambda(m);
  c.acc = calloc((size_t)d + 3, sizeof *c.acc);
  c.g = malloc((size_t)d * sizeof *c.g);
  g = malloc((size_t)d * sizeof *g);
  gt = malloc((size_t)d * sizeof *gt);
  xt = malloc((size_t)d * sizeof *xt);
  p = malloc((size_t)d * sizeof *p);
  H = malloc((size_t)d * (size_t)d * sizeof *H);
  if (!c.acc || !c.g || !g || !gt || !xt || !p || !H)
    rc = dpo_err(DPO_ENOMEM, "%s: cannot allocate a %d x %d Hessian", fn, (int)d, (int)d);
  /* rank 0's start point for everybody, so the iterates are identical */
  if ((rc = dpo_agree(comm, rc))) goto fail;
  if (MPI_Bcast(x, d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS) {
    rc = dpo_agree(comm, dpo_err(DPO_EMPI, "%s: MPI_Bcast failed", fn));
    goto fail;
  }
  if ((rc = dpo__nt_eval(&c, x, &F, g))) goto fail;
  for (it = 0;; it++) {
    gnorm = sqrt(dpo__dot(g, g, d));
    if (gnorm <= gtol) break;
    if (it >= maxit) {
      rc = dpo_agree(comm, dpo_err(DPO_ENOCONV, "%s: ||grad F|| = %.3g > gtol = %.3g after %d "
                                   "iterations", fn, gnorm, gtol, maxit));
      goto fail;
    }
    /* Hessian: local data-term sums, reduced to rank 0 and broadcast (identical on all) */
    memset(H, 0, (size_t)d * (size_t)d * sizeof *H);
    int lrc = dpo_model_local_hess(m, s, x, H);
    if ((rc = dpo_agree(comm, lrc))) goto fail;
    if (MPI_Reduce(rank == 0 ? MPI_IN_PLACE : H, H, d * d, MPI_DOUBLE, MPI_SUM, 0, comm) !=
            MPI_SUCCESS ||
        MPI_Bcast(H, d * d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS) {
      rc = dpo_agree(comm, dpo_err(DPO_EMPI, "%s: Hessian reduction failed", fn));
      goto fail;
    }
    for (int32_t a = 0; a < d; a++) {
      for (int32_t b = 0; b < d; b++) H[(size_t)a * d + b] /= (double)c.n;
      H[(size_t)a * d + a] += twolam;
    }
    for (int32_t j = 0; j < d; j++) p[j] = -g[j];
    if ((rc = dpo__pd_solve(comm, d, H, p))) goto fail;
    double gtp = dpo__dot(g, p, d);
    if (!(gtp < 0)) {
      rc = dpo_agree(comm, dpo_err(DPO_ENOCONV, "%s: Newton direction is not a descent "
                                   "direction (g'p = %g)", fn, gtp));
      goto fail;
    }
    /* backtracking on F; once the predicted decrease is below what F resolves (~1e-16 |F|),
     * a full step that lowers ||grad F|| is accepted: near the optimum the gradient norm is
     * the meaningful measure (Newton converges quadratically there) */
    double t = 1.0, Ft = NAN;
    int ok = 0;
    for (int ls = 0; ls < 60; ls++) {
      for (int32_t j = 0; j < d; j++) xt[j] = x[j] + t * p[j];
      if ((rc = dpo__nt_eval(&c, xt, &Ft, gt))) goto fail;
      if (Ft <= F + 1e-4 * t * gtp) {
        ok = 1;
        break;
      }
      if (fabs(t * gtp) <= 1e-12 * (fabs(F) + 1e-300) && Ft <= F + 1e-14 * fabs(F) &&
          sqrt(dpo__dot(gt, gt, d)) < gnorm) {
        ok = 1;
        break;
      }
      t *= 0.5;
    }
    if (!ok) {
      rc = dpo_agree(comm, dpo_err(DPO_ENOCONV, "%s: line search failed at iteration %ld "
                                   "(||grad F|| = %.3g)", fn, (long)it, gnorm));
      goto fail;
    }
    memcpy(x, xt, (size_t)d * sizeof *x);
    memcpy(g, gt, (size_t)d * sizeof *g);
    F = Ft;
  }
  rc = DPO_OK;
fail:
  if (info) {
    info->iters = it;
    info->F = F;
    info->gnorm = gnorm;
  }
  free(c.acc);
  free(c.g);
  free(g);
  free(gt);
  free(xt);
  free(p);
  free(H);
  return rc;
}

int dpo_hessian_lmax(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                     int maxit, double tol, double *lmax) {
  static const char fn[] = "dpo_hessian_lmax";
  int rc = DPO_OK;
  double *v = NULL, *hv = NULL, *tmp = NULL;
  dpo__dd_t *acc = NULL;
  if (comm == MPI_COMM_NULL) return dpo_err(DPO_EINVAL, "%s: null communicator", fn);
  if (!m || !s || !x || !lmax || s->d <= 0 || maxit < 1 || !(tol > 0)) {
    rc = dpo_err(DPO_EINVAL, "%s: bad arguments", fn);
    return dpo_agree(comm, rc);
  }
  if (dpo_model_multiclass(m))
    return dpo_agree(comm, dpo_err(DPO_EUNSUP, "%s: model %s has no Hessian here", fn,
                                   dpo_model_name(m)));
  const int32_t d = s->d;
  const double twolam = 2.0 * dpo_model_lambda(m);
  const double n = (double)s->n_global;
  v = malloc((size_t)d * sizeof *v);
  hv = malloc((size_t)d * sizeof *hv);
  tmp = malloc((size_t)d * sizeof *tmp);
  acc = calloc((size_t)d + 1, sizeof *acc);
  if (!v || !hv || !tmp || !acc) rc = dpo_err(DPO_ENOMEM, "%s: out of memory", fn);
  if ((rc = dpo_agree(comm, rc))) goto out;
  /* a fixed start with components along every direction (not orthogonal to the top one
   * except by accident of measure zero) */
  double nv = 0.0;
  for (int32_t j = 0; j < d; j++) {
    v[j] = 1.0 + 0.5 * sin(1.0 + 3.7 * j);
    nv += v[j] * v[j];
  }
  nv = sqrt(nv);
  for (int32_t j = 0; j < d; j++) v[j] /= nv;
  double lam = NAN, prev = NAN;
  int conv = 0;
  for (int it = 0; it < maxit && !conv; it++) {
    /* Hv = (1/n) sum_i w_i u_i u_i'v + 2 lambda v, chunked and reduced in double-double */
    for (int32_t j = 0; j <= d; j++) acc[j].hi = acc[j].lo = 0.0;
    int lrc = DPO_OK;
    for (int64_t i = 0; i < s->n && !lrc;) {
      int64_t e = dpo__chunk_end(s, i);
      dpo_shard_t w;
      dpo__shard_view(s, i, e - i, &w);
      memset(tmp, 0, (size_t)d * sizeof *tmp);
      lrc = dpo_kern_hessvec(dpo_model_loss(m), &w, x, v, tmp);
      if (!lrc)
        dpo__dd_add_vec(acc, tmp, d);
      i = e;
    }
    acc[d].hi = (double)lrc;
    if (dpo__dd_reduce(comm, acc, d, 0, 1) != DPO_OK && !lrc) lrc = DPO_EMPI;
    if (!lrc && acc[d].hi != 0.0) lrc = DPO_EREMOTE;
    if ((rc = dpo_agree(comm, lrc))) goto out;
    double rq = 0.0, nh = 0.0;
    for (int32_t j = 0; j < d; j++) {
      hv[j] = acc[j].hi / n + twolam * v[j];
      rq += v[j] * hv[j];
      nh += hv[j] * hv[j];
    }
    nh = sqrt(nh);
    prev = lam;
    lam = rq; /* Rayleigh quotient of the unit vector v */
    if (!(nh > 0)) break;
    for (int32_t j = 0; j < d; j++) v[j] = hv[j] / nh;
    if (it > 0 && fabs(lam - prev) <= tol * fabs(lam)) conv = 1;
  }
  *lmax = lam;
  if (!conv && !(lam == 0.0))
    rc = dpo_err(DPO_ENOCONV, "%s: power iteration not converged in %d iterations (estimate %g)",
                 fn, maxit, lam);
  rc = dpo_agree(comm, rc);
out:
  free(v);
  free(hv);
  free(tmp);
  free(acc);
  return rc;
}
