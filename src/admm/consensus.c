/* Global consensus ADMM over the ranks of a communicator (Boyd et al. 2011, Sec. 7.1 with the
 * over-relaxation of Sec. 3.4.3, stopping of Sec. 3.3.1 and residual balancing of Sec. 3.4.1):
 *
 *   x_i   = argmin f_i(x) + rho/2 ||x - z + u_i||^2
 *   xh_i  = alpha x_i + (1 - alpha) z
 *   z     = prox_{g / (N rho)}( mean_i (xh_i + u_i) )
 *   u_i   = u_i + xh_i - z
 *
 * One MPI_Allreduce per iteration of [sum_i (xh_i + u_i) | ||x_i - z||^2, ||x_i||^2, ||u_i||^2
 * of the previous iterate | ledger flag]; the "coordinator" step (prox of the mean) is done
 * redundantly on every rank with identical inputs, so all ranks hold the same z. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "admm/admm_impl.h"
#include "dpopt/status.h"

void dpo_admm_opts_default(dpo_admm_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->g = DPO_ADMM_G_NONE;
  o->xupdate = DPO_ADMM_X_AUTO;
  o->rho = 1.0;
  o->alpha = 1.0;
  o->eps_abs = 1e-6;
  o->eps_rel = 1e-5;
  o->max_iter = 1000;
  o->adapt_mu = 10.0;
  o->adapt_tau = 2.0;
  o->lbfgs_m = 8;
  o->lbfgs_maxit = 100;
  o->lbfgs_tol = 1e-10;
  o->inner_rel = 0.1;
}

static double nrm2sq(const double *a, int32_t d) {
  double s = 0.0;
  for (int32_t j = 0; j < d; j++) s += a[j] * a[j];
  return s;
}

/* One party's charge for iteration `it` (private variant). */
static int charge_parties(dpo_ledger_t *L, const dpo_admm_priv_t *p, int N, int32_t d,
                          int64_t it) {
  for (int i = 0; i < N; i++) {
    int rdp = p->accounting && strcmp(p->accounting, "rdp") == 0;
    dpo_charge_t c = {.mechanism = DPO_MECH_GAUSSIAN, .eps = rdp ? 0.0 : p->eps_step,
                      .delta = rdp ? 0.0 : p->delta_step, .noise_scale = p->sigma,
                      .sensitivity = 2.0 * p->clip, .dim = d, .sampling = DPO_SAMPLING_DISJOINT,
                      .accounting = rdp ? DPO_ACCOUNTING_RDP : DPO_ACCOUNTING_PURE,
                      .group = it, .step = it};
    int st = dpo_ledger_charge(L, &c, NULL);
    if (st) return st;
  }
  return DPO_OK;
}

static const char *cmp_sign(double v, double tol) {
  return v <= tol ? "<=" : v > tol ? ">" : "?"; /* NaN: never tested */
}

int dpo_admm_status_line(const dpo_admm_info_t *inf, char *buf, size_t n) {
  return snprintf(buf, n, "%lld  converged %d  (r %.3e %s %.3e, s %.3e %s %.3e)",
                  (long long)inf->iters, inf->converged, inf->r_norm,
                  cmp_sign(inf->r_norm, inf->eps_pri), inf->eps_pri, inf->s_norm,
                  cmp_sign(inf->s_norm, inf->eps_dual), inf->eps_dual);
}

/* The options, model and private mode dpo_admm_consensus needs (agreed by the caller). */
static int cons_check(const dpo_model_t *model, const dpo_admm_opts_t *opts,
                      dpo_admm_xupdate_t xk, int sq, int rank) {
  const dpo_admm_priv_t *priv = opts->priv;
  const double rho = opts->rho;
  if (!(rho > 0) || !isfinite(rho) || !(opts->alpha >= 1.0 && opts->alpha <= 1.8) ||
      opts->max_iter < 1 || !(opts->lambda >= 0) || !(opts->eps_abs >= 0) ||
      !(opts->eps_rel >= 0) || !(opts->inner_rel >= 0) || (opts->adapt_rho && !(opts->adapt_mu > 1 && opts->adapt_tau > 1)))
    return dpo_err(DPO_EINVAL, "admm_consensus: need rho > 0 (%g), alpha in [1, 1.8] (%g), "
                   "max_iter >= 1, lambda >= 0, eps_abs, eps_rel >= 0, adapt mu, tau > 1",
                   rho, opts->alpha);
  if (dpo_model_lambda(model) != 0.0)
    return dpo_err(DPO_EINVAL, "admm_consensus: the model's own L2 term must be 0; put "
                   "regularization in g (lambda2 ||z||^2)");
  if (xk == DPO_ADMM_X_EXACT && !sq)
    return dpo_err(DPO_EINVAL, "admm_consensus: the exact x-update needs least squares");
  if (priv && (!(priv->clip > 0) || !(priv->sigma > 0) || !priv->rng ||
               (rank == 0 && !priv->ledger)))
    return dpo_err(DPO_EINVAL, "admm_consensus: private mode needs clip > 0, sigma > 0, an rng "
                   "on every rank and the ledger on rank 0");
  /* public bound: f_i's Hessian <= (n_i / n) B^2 c I <= c I for rows with ||u|| <= 1;
   * without a declared row bound the caller must pass lin_eta */
  if (xk == DPO_ADMM_X_LINEAR && !(opts->lin_eta > 0))
    return dpo_err(DPO_EINVAL, "admm_consensus: the linearized x-update needs lin_eta > 0 (from "
                   "a public smoothness bound)");
  return DPO_OK;
}

/* This rank's x-update with v = z - u: exact (Cholesky factor Lf of the local system),
 * inexact L-BFGS (tolerance from the lagged global residuals r_norm, s_prev) or linearized. */
static int cons_xupdate(const dpo_model_t *model, const dpo_shard_t *shard,
                        const dpo_admm_opts_t *opts, dpo_admm_xupdate_t xk, double rho, int N,
                        double r_norm, double s_prev, dpo__admm_lbfgs_t *ws, const double *Lf,
                        const double *rhs0, const double *v, double *x, double *gtmp,
                        int64_t *inner) {
  const int32_t d = shard->d;
  int st = DPO_OK;
  if (xk == DPO_ADMM_X_EXACT) {
    for (int32_t j = 0; j < d; j++) x[j] = rhs0[j] + rho * v[j];
    return dpo__admm_chol_solve(Lf, d, x);
  }
  if (xk == DPO_ADMM_X_LBFGS) {
    /* inexact x-update: the local gradient error may shrink with the global residuals
     * (identical on all ranks); the first iterations use a relative decrease instead */
    double tol2 = 0.0;
    if (opts->inner_rel > 0) {
      double rr = r_norm, ss = s_prev;
      double mres = isnan(rr) ? ss : isnan(ss) ? rr : (rr < ss ? rr : ss);
      if (isnan(mres)) tol2 = -1.0; /* first x-update: relative to its starting gradient */
      else tol2 = opts->inner_rel * mres / sqrt((double)N);
    }
    if (tol2 < 0) {
      double f0;
      st = dpo__admm_local_fg(model, shard, x, &f0, gtmp);
      for (int32_t j = 0; !st && j < d; j++) gtmp[j] += rho * (x[j] - v[j]);
      tol2 = st ? 0.0 : opts->inner_rel * cblas_dnrm2(d, gtmp, 1);
    }
    if (!st)
      st = dpo__admm_lbfgs(model, shard, ws, rho, v, x, opts->lbfgs_maxit, opts->lbfgs_tol,
                           tol2, inner);
    return st;
  }
  /* linearized: argmin <grad f_i(x), y> + rho/2||y - v||^2 + 1/(2 eta)||y - x||^2 */
  const double eta = opts->lin_eta;
  st = dpo__admm_local_fg(model, shard, x, NULL, gtmp);
  if (!st)
    for (int32_t j = 0; j < d; j++)
      x[j] = (x[j] / eta + rho * v[j] - gtmp[j]) / (1.0 / eta + rho);
  return st;
}

/* Private mode: the message buf[0..d) leaves this rank clipped to L2 <= clip and noised, its
 * residual pieces (data dependent) zeroed; rank 0 charges the NEXT iteration now, so its
 * acceptance (buf[d + 3]) travels with this reduce. */
static int cons_message(const dpo_admm_priv_t *priv, int rank, int N, int32_t d, int64_t k,
                        int64_t max_iter, double *buf) {
  const size_t D = (size_t)d;
  double nm = sqrt(nrm2sq(buf, d));
  if (nm > priv->clip) cblas_dscal(d, priv->clip / nm, buf, 1);
  int st = dpo_mech_sample(DPO_MECH_GAUSSIAN, priv->rng, priv->sigma, buf, d);
  buf[D] = buf[D + 1] = buf[D + 2] = 0.0; /* residuals are data dependent: not sent */
  if (!st && rank == 0 && k < max_iter) {
    int cs = charge_parties(priv->ledger, priv, N, d, k + 1);
    if (cs == DPO_OK) buf[D + 3] = 1.0;
    else if (cs != DPO_EBUDGET) st = cs;
  }
  return st;
}

/* Boyd et al. 2011 Sec. 3.3.1 on the reduced residual pieces rbuf[d..d+2] of iterate k-1:
 * fills the residuals and tolerances of *inf; 1 when both residuals are within them. */
static int cons_converged(const dpo_admm_opts_t *opts, const double *rbuf, const double *z,
                          int32_t d, int N, double rho, double s_prev, dpo_admm_info_t *inf) {
  const size_t D = (size_t)d;
  double r = sqrt(rbuf[D]), xn = sqrt(rbuf[D + 1]), un = sqrt(rbuf[D + 2]);
  double sq_nd = sqrt((double)N * (double)d);
  double zn = sqrt((double)N * nrm2sq(z, d));
  inf->r_norm = r;
  inf->s_norm = s_prev;
  inf->eps_pri = sq_nd * opts->eps_abs + opts->eps_rel * (xn > zn ? xn : zn);
  inf->eps_dual = sq_nd * opts->eps_abs + opts->eps_rel * rho * un;
  if (!(r <= inf->eps_pri && s_prev <= inf->eps_dual)) return 0;
  inf->converged = 1;
  return 1;
}

/* Residual balancing (Boyd et al. 2011 Sec. 3.4.1) on the lagged residuals, the same decision
 * on every rank: rho and the scaled dual u change together; the exact x-update refactors. */
static int cons_adapt(const dpo_admm_opts_t *opts, dpo_admm_xupdate_t xk, int32_t d,
                      const double *H, double *rho, double *u, double *Lf, dpo_admm_info_t *inf) {
  double r = inf->r_norm, s = inf->s_norm, f = 1.0;
  if (r > opts->adapt_mu * s) f = opts->adapt_tau;
  else if (s > opts->adapt_mu * r) f = 1.0 / opts->adapt_tau;
  if (f == 1.0) return DPO_OK;
  *rho *= f;
  cblas_dscal(d, 1.0 / f, u, 1); /* u = y / rho is rescaled with rho */
  inf->rho_changes++;
  if (xk != DPO_ADMM_X_EXACT) return DPO_OK;
  inf->factorizations++;
  return dpo__admm_chol(H, *rho, d, Lf); /* a failure is reported in the next reduce */
}

int dpo_admm_consensus(MPI_Comm comm, const dpo_model_t *model, const dpo_shard_t *shard,
                       const dpo_admm_opts_t *opts, double *z, dpo_admm_info_t *info) {
  int st = DPO_OK, rank = 0, N = 1, have_ws = 0;
  dpo__admm_lbfgs_t ws;
  double t0 = MPI_Wtime(), tcomm = 0.0;
  dpo_admm_info_t inf;
  memset(&inf, 0, sizeof inf);
  inf.r_norm = inf.s_norm = inf.eps_pri = inf.eps_dual = NAN;
  double *x = NULL, *u = NULL, *xh = NULL, *buf = NULL, *rbuf = NULL, *zprev = NULL,
         *H = NULL, *Lf = NULL, *rhs0 = NULL, *gtmp = NULL, *v = NULL;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &N) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "admm_consensus: bad communicator");
  if (!model || !shard || !opts || !z) {
    st = dpo_err(DPO_EINVAL, "admm_consensus: NULL argument");
    return dpo_agree(comm, st);
  }
  const dpo_admm_priv_t *priv = opts->priv;
  int32_t d = shard->d;
  size_t D = (size_t)d;
  double rho = opts->rho;
  dpo_admm_xupdate_t xk = opts->xupdate;
  int sq = dpo_model_loss(model) == DPO_LOSS_SQUARED;
  if (xk == DPO_ADMM_X_AUTO) xk = sq ? DPO_ADMM_X_EXACT : DPO_ADMM_X_LBFGS;
  st = cons_check(model, opts, xk, sq, rank);
  st = dpo_agree(comm, st);
  if (st) return st;

  size_t nb = D + 5; /* [message | r^2, ||x||^2, ||u||^2 | ledger flag | failure flag] */
  x = malloc(D * sizeof *x);
  u = calloc(D, sizeof *u);
  xh = malloc(D * sizeof *xh);
  v = malloc(D * sizeof *v);
  zprev = malloc(D * sizeof *zprev);
  gtmp = malloc(D * sizeof *gtmp);
  buf = malloc(nb * sizeof *buf);
  rbuf = malloc(nb * sizeof *rbuf);
  if (!x || !u || !xh || !v || !zprev || !gtmp || !buf || !rbuf)
    st = dpo_err(DPO_ENOMEM, "admm_consensus: out of memory");
  if (!st && xk == DPO_ADMM_X_EXACT) {
    H = malloc(D * D * sizeof *H);
    Lf = malloc(D * D * sizeof *Lf);
    rhs0 = malloc(D * sizeof *rhs0);
    if (!H || !Lf || !rhs0) st = dpo_err(DPO_ENOMEM, "admm_consensus: out of memory (d = %d)", d);
    /* the local system is formed and factored once; again only when rho changes */
    if (!st) st = dpo__admm_lsq_system(model, shard, H, rhs0);
    if (!st) st = dpo__admm_chol(H, rho, d, Lf);
    if (!st) inf.factorizations++;
  }
  if (!st && xk == DPO_ADMM_X_LBFGS) {
    st = dpo__admm_lbfgs_init(&ws, d, opts->lbfgs_m);
    have_ws = !st;
  }
  if (!st && priv && rank == 0) st = charge_parties(priv->ledger, priv, N, d, 1);
  st = dpo_agree(comm, st);
  if (st) goto done;

  memcpy(x, z, D * sizeof *x);
  memcpy(zprev, z, D * sizeof *zprev);
  double s_prev = NAN; /* dual residual of the current z (NaN before the first update) */
  int64_t k;
  int released = 0; /* private: z holds a released consensus */
  for (k = 1; k <= opts->max_iter; k++) {
    /* residual pieces of the iterate (x^{k-1}, z^{k-1}, u^{k-1}) */
    double rloc = 0.0;
    for (int32_t j = 0; j < d; j++) {
      double e = x[j] - z[j];
      rloc += e * e;
    }
    buf[D] = rloc;
    buf[D + 1] = nrm2sq(x, d);
    buf[D + 2] = nrm2sq(u, d);
    buf[D + 3] = 0.0;
    buf[D + 4] = 0.0;

    /* x-update with v = z - u (skipped after a local failure, which travels in the reduce) */
    for (int32_t j = 0; j < d; j++) v[j] = z[j] - u[j];
    int64_t inner = 1;
    if (!st)
      st = cons_xupdate(model, shard, opts, xk, rho, N, inf.r_norm, s_prev, &ws, Lf, rhs0, v,
                        x, gtmp, &inner);
    inf.inner_iters += inner;
    for (int32_t j = 0; j < d; j++) {
      xh[j] = opts->alpha * x[j] + (1.0 - opts->alpha) * z[j];
      buf[j] = xh[j] + u[j];
    }
    if (!st && priv) st = cons_message(priv, rank, N, d, k, opts->max_iter, buf);
    /* a local failure rides in the same reduce, so nobody is left waiting in a collective */
    if (st) buf[D + 4] = 1.0;
    double tc = MPI_Wtime();
    if (MPI_Allreduce(buf, rbuf, (int)nb, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS) {
      st = dpo_err(DPO_EMPI, "admm_consensus: MPI_Allreduce failed");
      goto done; /* an MPI failure is fatal for the communicator anyway */
    }
    tcomm += MPI_Wtime() - tc;
    if (rbuf[D + 4] > 0) goto done; /* dpo_agree below brings the failing rank's status */

    /* stopping test on iterate k-1 (Boyd Sec. 3.3.1) */
    if (!priv && k > 1 && cons_converged(opts, rbuf, z, d, N, rho, s_prev, &inf)) {
      inf.iters = k - 1;
      break;
    }
    /* z-update: argmin g(z) + N rho / 2 ||z - mean||^2 */
    memcpy(zprev, z, D * sizeof *z);
    for (int32_t j = 0; j < d; j++) v[j] = rbuf[j] / (double)N;
    dpo_admm_prox(opts->g, opts->lambda, 1.0 / ((double)N * rho), v, d, z);
    released = 1;
    for (int32_t j = 0; j < d; j++) {
      u[j] += xh[j] - z[j];
      double e = z[j] - zprev[j];
      gtmp[j] = e;
    }
    s_prev = rho * sqrt((double)N) * sqrt(nrm2sq(gtmp, d));
    inf.iters = k;
    if (opts->trace) opts->trace(opts->trace_arg, k, z, inf.r_norm, s_prev, rho);

    if (priv && k < opts->max_iter && !(rbuf[D + 3] > 0.5)) {
      st = dpo_err(DPO_EBUDGET, "admm_consensus: the ledger refused iteration %lld",
                   (long long)(k + 1));
      break;
    }
    /* residual balancing on the lagged residuals (same decision on every rank) */
    if (!priv && opts->adapt_rho && k > 1) st = cons_adapt(opts, xk, d, H, &rho, u, Lf, &inf);
  }
  (void)released;
  if (!st && !priv && !inf.converged && inf.iters == opts->max_iter) {
    st = dpo_err(DPO_ENOCONV, "admm_consensus: no convergence in %lld iterations (r %.3g > "
                 "%.3g or s %.3g > %.3g)", (long long)opts->max_iter, inf.r_norm, inf.eps_pri,
                 inf.s_norm, inf.eps_dual);
  }
done:
  if (have_ws) {
    inf.inner_evals = ws.evals;
    dpo__admm_lbfgs_free(&ws);
  }
  inf.rho = rho;
  inf.t_total = MPI_Wtime() - t0;
  inf.t_comm = tcomm;
  if (info) *info = inf;
  free(x);
  free(u);
  free(xh);
  free(v);
  free(zprev);
  free(gtmp);
  free(buf);
  free(rbuf);
  free(H);
  free(Lf);
  free(rhs0);
  return dpo_agree(comm, st);
}
