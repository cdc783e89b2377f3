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
#include "dpopt/comm.h"    /* DPO_ONOISE_LOCAL_GAUSSIAN: what a party's guard prices */
#include "dpopt/status.h"
#include "privacy/guard.h" /* the party guard (privacy.trust = local) */
#ifdef DPO_TEST_SWITCHES
#include "privacy/test_switches.h"

/* Test builds only (privacy/test_switches.h; dpopt-test admm --test-coordinator ignore-refusal):
 * rank 0 announces every next iteration accepted, its own ledger's refusal ignored. */
static int dpo__test_ignore_refusal_on = 0;
void dpo__test_cons_ignore_refusal(int on) { dpo__test_ignore_refusal_on = on != 0; }
#endif

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

/* One party's charge for iteration `it` (private variant): the parties' charges of one
 * iteration are one disjoint group, numbered it + gb (gb > 0 after a resume whose journal holds
 * charges the checkpoint does not know: a redone iteration is never the open group of its
 * first release, so it is composed with it, not taken as the same pass). */
static int charge_parties(dpo_ledger_t *L, const dpo_admm_priv_t *p, int N, int32_t d,
                          int64_t it, int64_t gb) {
  /* with party accounts (privacy.trust = local: one party a rank), agent i's charge is party
   * i's, the account its own guard's journal replays to */
  const int parties = dpo_ledger_nparties(L) == N;
  int st = DPO_OK;
  for (int i = 0; i < N && !st; i++) {
    int rdp = p->accounting && strcmp(p->accounting, "rdp") == 0;
    dpo_charge_t c = {.mechanism = DPO_MECH_GAUSSIAN, .eps = rdp ? 0.0 : p->eps_step,
                      .delta = rdp ? 0.0 : p->delta_step, .noise_scale = p->sigma,
                      .sensitivity = 2.0 * p->clip, .dim = d, .sampling = DPO_SAMPLING_DISJOINT,
                      .accounting = rdp ? DPO_ACCOUNTING_RDP : DPO_ACCOUNTING_PURE,
                      .group = it + gb, .step = it};
    st = parties ? dpo_ledger_charge_parties(L, &c, 1, &i, NULL, NULL)
                 : dpo_ledger_charge(L, &c, NULL);
  }
#ifdef DPO_TEST_SWITCHES
  if (st == DPO_EBUDGET && dpo__test_ignore_refusal_on) st = DPO_OK; /* a deviating coordinator */
#endif
  return st;
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

/* This party's x-update with v = z - u: exact (Cholesky factor Lf of the local system),
 * inexact L-BFGS (tolerance from the lagged global residuals r_norm, s_prev) or linearized. */
static int cons_xupdate(dpo__cons_party_t *p, double r_norm, int64_t *inner) {
  const dpo_admm_opts_t *opts = p->opts;
  const int32_t d = p->d;
  const double rho = p->rho, s_prev = p->s_prev;
  double *x = p->x, *v = p->v, *gtmp = p->gtmp;
  int st = DPO_OK;
  if (p->xk == DPO_ADMM_X_EXACT) {
    for (int32_t j = 0; j < d; j++) x[j] = p->rhs0[j] + rho * v[j];
    return dpo__admm_chol_solve(p->Lf, d, x);
  }
  if (p->xk == DPO_ADMM_X_LBFGS) {
    /* inexact x-update: the local gradient error may shrink with the global residuals
     * (identical on all ranks); the first iterations use a relative decrease instead */
    double tol2 = 0.0;
    if (opts->inner_rel > 0) {
      double rr = r_norm, ss = s_prev;
      double mres = isnan(rr) ? ss : isnan(ss) ? rr : (rr < ss ? rr : ss);
      if (isnan(mres)) tol2 = -1.0; /* first x-update: relative to its starting gradient */
      else tol2 = opts->inner_rel * mres / sqrt((double)p->N);
    }
    if (tol2 < 0) {
      double f0;
      st = dpo__admm_local_fg(p->model, p->shard, x, &f0, gtmp);
      for (int32_t j = 0; !st && j < d; j++) gtmp[j] += rho * (x[j] - v[j]);
      tol2 = st ? 0.0 : opts->inner_rel * cblas_dnrm2(d, gtmp, 1);
    }
    if (!st)
      st = dpo__admm_lbfgs(p->model, p->shard, &p->ws, rho, v, x, opts->lbfgs_maxit,
                           opts->lbfgs_tol, tol2, inner);
    return st;
  }
  /* linearized: argmin <grad f_i(x), y> + rho/2||y - v||^2 + 1/(2 eta)||y - x||^2 */
  const double eta = opts->lin_eta;
  st = dpo__admm_local_fg(p->model, p->shard, x, NULL, gtmp);
  if (!st)
    for (int32_t j = 0; j < d; j++)
      x[j] = (x[j] / eta + rho * v[j] - gtmp[j]) / (1.0 / eta + rho);
  return st;
}

int dpo__cons_party_init(dpo__cons_party_t *p, const dpo_model_t *model,
                         const dpo_shard_t *shard, const dpo_admm_opts_t *opts, int N,
                         const double *z0) {
  memset(p, 0, sizeof *p);
  const int32_t d = shard->d;
  const size_t D = (size_t)d;
  int sq = dpo_model_loss(model) == DPO_LOSS_SQUARED, st = DPO_OK;
  p->model = model;
  p->shard = shard;
  p->opts = opts;
  p->N = N;
  p->d = d;
  p->rho = opts->rho;
  p->s_prev = NAN;
  p->xk = opts->xupdate == DPO_ADMM_X_AUTO ? (sq ? DPO_ADMM_X_EXACT : DPO_ADMM_X_LBFGS)
                                           : opts->xupdate;
  p->x = malloc(D * sizeof *p->x);
  p->u = calloc(D, sizeof *p->u);
  p->xh = malloc(D * sizeof *p->xh);
  p->v = malloc(D * sizeof *p->v);
  p->gtmp = malloc(D * sizeof *p->gtmp);
  if (!p->x || !p->u || !p->xh || !p->v || !p->gtmp)
    return dpo_err(DPO_ENOMEM, "admm_consensus: out of memory");
  memcpy(p->x, z0, D * sizeof *p->x);
  if (p->xk == DPO_ADMM_X_EXACT) {
    p->H = malloc(D * D * sizeof *p->H);
    p->Lf = malloc(D * D * sizeof *p->Lf);
    p->rhs0 = malloc(D * sizeof *p->rhs0);
    if (!p->H || !p->Lf || !p->rhs0)
      return dpo_err(DPO_ENOMEM, "admm_consensus: out of memory (d = %d)", d);
    /* the local system is formed and factored once; again only when rho changes */
    if (!(st = dpo__admm_lsq_system(model, shard, p->H, p->rhs0)))
      st = dpo__admm_chol(p->H, p->rho, d, p->Lf);
    if (!st) p->factorizations++;
  }
  if (!st && p->xk == DPO_ADMM_X_LBFGS) {
    st = dpo__admm_lbfgs_init(&p->ws, d, opts->lbfgs_m);
    p->have_ws = !st;
  }
  return st;
}

int dpo__cons_party_x(dpo__cons_party_t *p, const double *z, double r_norm, double *msg,
                      int64_t *inner) {
  const double alpha = p->opts->alpha;
  for (int32_t j = 0; j < p->d; j++) p->v[j] = z[j] - p->u[j];
  int st = cons_xupdate(p, r_norm, inner);
  for (int32_t j = 0; j < p->d; j++) {
    p->xh[j] = alpha * p->x[j] + (1.0 - alpha) * z[j];
    msg[j] = p->xh[j] + p->u[j];
  }
  return st;
}

void dpo__cons_party_u(dpo__cons_party_t *p, const double *zprev, const double *z) {
  double e2 = 0.0;
  for (int32_t j = 0; j < p->d; j++) {
    p->u[j] += p->xh[j] - z[j];
    e2 += (z[j] - zprev[j]) * (z[j] - zprev[j]);
  }
  p->s_prev = p->rho * sqrt((double)p->N) * sqrt(e2);
}

void dpo__cons_clip(double *m, int32_t d, double clip) {
  double nm = sqrt(nrm2sq(m, d));
  if (nm > clip) cblas_dscal(d, clip / nm, m, 1);
}

void dpo__cons_party_free(dpo__cons_party_t *p) {
  if (p->have_ws) dpo__admm_lbfgs_free(&p->ws);
  free(p->x);
  free(p->u);
  free(p->xh);
  free(p->v);
  free(p->gtmp);
  free(p->H);
  free(p->Lf);
  free(p->rhs0);
  memset(p, 0, sizeof *p);
}

/* Private mode: the message buf[0..d) leaves this rank clipped to L2 <= clip and noised, its
 * residual pieces (data dependent) zeroed; rank 0 charges the NEXT iteration now, so its
 * acceptance (buf[d + 3]) travels with this reduce -- unless a checkpoint follows this
 * iteration (pre = 0: the charge is made after it).  With a party guard (privacy.trust =
 * local, ranks other than 0) the party first charges this release to its own account and
 * journal at the sigma it derived itself, and refuses (nothing sent: the message is zeroed by
 * the caller) when its account does.  The coordinator's acceptance is only its view. */
static int cons_message(const dpo_admm_priv_t *priv, dpo_guard_t *guard, int rank, int N,
                        int32_t d, int64_t k, int64_t max_iter, int pre, int64_t gb,
                        double *buf) {
  const size_t D = (size_t)d;
  int st = DPO_OK;
  if (guard) {
    /* the party's own price: the Gaussian of its sigma on its 2 clip, its iteration's own
     * group as in the coordinator's view (charge_parties), so both compose alike */
    dpo_guard_lreq_t q = {DPO_ONOISE_LOCAL_GAUSSIAN, priv->sigma, 1,
                          priv->sigma / (2.0 * priv->clip), k};
    if ((st = dpo_guard_admit_local(guard, &q))) return st;
  }
  dpo__cons_clip(buf, d, priv->clip);
  st = dpo_mech_sample(DPO_MECH_GAUSSIAN, priv->rng, priv->sigma, buf, d);
  buf[D] = buf[D + 1] = buf[D + 2] = 0.0; /* residuals are data dependent: not sent */
  if (!st && rank == 0 && k < max_iter && pre) {
    int cs = charge_parties(priv->ledger, priv, N, d, k + 1, gb);
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
static int cons_adapt(const dpo_admm_opts_t *opts, dpo__cons_party_t *p, dpo_admm_info_t *inf) {
  double r = inf->r_norm, s = inf->s_norm, f = 1.0;
  if (r > opts->adapt_mu * s) f = opts->adapt_tau;
  else if (s > opts->adapt_mu * r) f = 1.0 / opts->adapt_tau;
  if (f == 1.0) return DPO_OK;
  p->rho *= f;
  cblas_dscal(p->d, 1.0 / f, p->u, 1); /* u = y / rho is rescaled with rho */
  inf->rho_changes++;
  if (p->xk != DPO_ADMM_X_EXACT) return DPO_OK;
  p->factorizations++;
  return dpo__admm_chol(p->H, p->rho, p->d, p->Lf); /* a failure is reported in the next reduce */
}

/* Private mode with an observer: the broadcast noised sum of iteration k (what every party and
 * the wire see), computed from the consensus zprev = z_{k-1}. */
static int cons_observe(const dpo_admm_opts_t *opts, int N, int32_t d, int64_t k,
                        const double *sum, const double *zprev) {
  const dpo_admm_priv_t *priv = opts->priv;
  dpo_release_t r = {.step = k, .mechanism = DPO_MECH_GAUSSIAN,
                     .noise_scale = priv->sigma * sqrt((double)N), .sensitivity = 2.0 * priv->clip,
                     .q = 1.0, .sampling = DPO_SAMPLING_NONE, .m = 1, .n = 1, .d = d, .v = sum,
                     .x = zprev, .unit = 1.0};
  return opts->observe(opts->observe_arg, &r);
}

/* After iteration k: the checkpoint every rank saves (collective; a failure of this rank's
 * iteration, st, is agreed with it) and, a private run going on, rank 0's charge of iteration
 * k + 1 with its acceptance (*acc), which the reduce would have carried. */
static int cons_checkpoint(MPI_Comm comm, const dpo_admm_opts_t *opts, const dpo__cons_ckpt_t *ck,
                           dpo__cons_state_t *cs, int halt, int st, int rank, int N, int64_t gb,
                           int *acc) {
  const dpo_admm_priv_t *priv = opts->priv;
  const int64_t k = cs->it;
  if (!st && ck->save) st = ck->save(ck->arg, cs);
  if ((st = dpo_agree(comm, st))) return st;
  if (halt)
    return dpo_err(DPO_EINTR, "stopped after iteration %lld of %lld, %s", (long long)k,
                   (long long)opts->max_iter, ck->save ? "checkpoint written"
                                                       : "no checkpoint (this run cannot be resumed)");
  if (!priv) return DPO_OK;
  int a = 1;
  if (rank == 0) {
    st = charge_parties(priv->ledger, priv, N, cs->p->d, k + 1, gb);
    if (st == DPO_EBUDGET) st = DPO_OK, a = 0;
  }
  if ((st = dpo_agree(comm, st))) return st;
  MPI_Bcast(&a, 1, MPI_INT, 0, comm);
  *acc = a;
  return DPO_OK;
}

int dpo_admm_consensus(MPI_Comm comm, const dpo_model_t *model, const dpo_shard_t *shard,
                       const dpo_admm_opts_t *opts, double *z, dpo_admm_info_t *info) {
  return dpo__admm_consensus(comm, model, shard, opts, NULL, z, info);
}

int dpo__admm_consensus(MPI_Comm comm, const dpo_model_t *model, const dpo_shard_t *shard,
                        const dpo_admm_opts_t *opts, const dpo__cons_ckpt_t *ck, double *z,
                        dpo_admm_info_t *info) {
  int st = DPO_OK, rank = 0, N = 1;
  double t0 = MPI_Wtime(), tcomm = 0.0;
  dpo_admm_info_t inf;
  dpo__cons_party_t p;
  memset(&p, 0, sizeof p);
  memset(&inf, 0, sizeof inf);
  inf.r_norm = inf.s_norm = inf.eps_pri = inf.eps_dual = NAN;
  double *buf = NULL, *rbuf = NULL, *zprev = NULL, *v = NULL;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &N) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "admm_consensus: bad communicator");
  if (!model || !shard || !opts || !z) {
    st = dpo_err(DPO_EINVAL, "admm_consensus: NULL argument");
    return dpo_agree(comm, st);
  }
  const dpo_admm_priv_t *priv = opts->priv;
  int32_t d = shard->d;
  size_t D = (size_t)d;
  dpo_admm_xupdate_t xk = opts->xupdate;
  int sq = dpo_model_loss(model) == DPO_LOSS_SQUARED;
  if (xk == DPO_ADMM_X_AUTO) xk = sq ? DPO_ADMM_X_EXACT : DPO_ADMM_X_LBFGS;
  st = cons_check(model, opts, xk, sq, rank);
  st = dpo_agree(comm, st);
  if (st) return st;

  size_t nb = D + 6; /* [message | r^2, ||x||^2, ||u||^2 | ledger flag | failure | stop] */
  v = malloc(D * sizeof *v);
  zprev = malloc(D * sizeof *zprev);
  buf = malloc(nb * sizeof *buf);
  rbuf = malloc(nb * sizeof *rbuf);
  if (!v || !zprev || !buf || !rbuf) st = dpo_err(DPO_ENOMEM, "admm_consensus: out of memory");
  if (!st) st = dpo__cons_party_init(&p, model, shard, opts, N, z);
  dpo__cons_state_t cs = {0, &p, z, &inf};
  if (ck && ck->load) {
    if ((st = dpo_agree(comm, st ? st : ck->load(ck->arg, &cs)))) goto done;
    if (ck->loaded) *ck->loaded = 1;
  }
  /* the first iteration's charge (resumed: the one after the checkpoint, which never ran) */
  const int64_t gb = ck ? ck->after * (opts->max_iter + 1) : 0;
  if (!st && priv && rank == 0) st = charge_parties(priv->ledger, priv, N, d, cs.it + 1, gb);
  st = dpo_agree(comm, st);
  if (st) goto done;

  memcpy(zprev, z, D * sizeof *zprev);
  int64_t k;
  for (k = cs.it + 1; k <= opts->max_iter; k++) {
    /* a checkpoint after this iteration: on schedule (every rank knows) or rank 0's stop flag,
     * which rides in this reduce */
    const int sched = ck && k < opts->max_iter &&
                      ((ck->every > 0 && k % ck->every == 0) ||
                       (ck->stop_after > 0 && k >= ck->stop_after));
    const int flag = ck && ck->stop && rank == 0 && k < opts->max_iter && *ck->stop;
    /* residual pieces of the iterate (x^{k-1}, z^{k-1}, u^{k-1}) */
    double rloc = 0.0;
    for (int32_t j = 0; j < d; j++) {
      double e = p.x[j] - z[j];
      rloc += e * e;
    }
    buf[D] = rloc;
    buf[D + 1] = nrm2sq(p.x, d);
    buf[D + 2] = nrm2sq(p.u, d);
    buf[D + 3] = 0.0;
    buf[D + 4] = 0.0;
    buf[D + 5] = flag ? 1.0 : 0.0;

    /* x-update with v = z - u (a local failure travels in the reduce); buf = xh + u */
    int64_t inner = 1;
    if (!st) st = dpo__cons_party_x(&p, z, inf.r_norm, buf, &inner);
    else memset(buf, 0, D * sizeof *buf);
    inf.inner_iters += inner;
    if (!st && priv)
      st = cons_message(priv, ck ? ck->guard : NULL, rank, N, d, k, opts->max_iter,
                        !(sched || flag), gb, buf);
    /* a local failure rides in the same reduce, so nobody is left waiting in a collective;
     * the failing rank sends nothing of its own (its message may be un-noised), and nobody
     * applies the round (each other message carries its own party's charged noise) */
    if (st) {
      memset(buf, 0, (D + 4) * sizeof *buf);
      buf[D + 4] = 1.0;
    }
    double tc = MPI_Wtime();
    if (MPI_Allreduce(buf, rbuf, (int)nb, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS) {
      st = dpo_err(DPO_EMPI, "admm_consensus: MPI_Allreduce failed");
      goto done; /* an MPI failure is fatal for the communicator anyway */
    }
    tcomm += MPI_Wtime() - tc;
    if (rbuf[D + 4] > 0) goto done; /* dpo_agree below brings the failing rank's status */

    /* stopping test on iterate k-1 (Boyd Sec. 3.3.1) */
    if (!priv && k > 1 && cons_converged(opts, rbuf, z, d, N, p.rho, p.s_prev, &inf)) {
      inf.iters = k - 1;
      break;
    }
    /* z-update: argmin g(z) + N rho / 2 ||z - mean||^2 */
    memcpy(zprev, z, D * sizeof *z);
    for (int32_t j = 0; j < d; j++) v[j] = rbuf[j] / (double)N;
    dpo_admm_prox(opts->g, opts->lambda, 1.0 / ((double)N * p.rho), v, d, z);
    dpo__cons_party_u(&p, zprev, z);
    inf.iters = k;
    if (opts->trace) opts->trace(opts->trace_arg, k, z, inf.r_norm, p.s_prev, p.rho);
    if (priv && opts->observe && (st = cons_observe(opts, N, d, k, rbuf, zprev))) break;
    /* residual balancing on the lagged residuals (same decision on every rank) */
    if (!priv && opts->adapt_rho && k > 1) st = cons_adapt(opts, &p, &inf);
    int acc = rbuf[D + 3] > 0.5;
    const int halt = rbuf[D + 5] > 0.5 || (sched && ck->stop_after > 0 && k >= ck->stop_after);
    if (sched || halt) {
      cs.it = k;
      if ((st = cons_checkpoint(comm, opts, ck, &cs, halt, st, rank, N, gb, &acc))) break;
    }
    if (priv && k < opts->max_iter && !acc) {
      st = dpo_err(DPO_EBUDGET, "admm_consensus: the ledger refused iteration %lld",
                   (long long)(k + 1));
      break;
    }
  }
  if (!st && !priv && !inf.converged && inf.iters == opts->max_iter) {
    st = dpo_err(DPO_ENOCONV, "admm_consensus: no convergence in %lld iterations (r %.3g > "
                 "%.3g or s %.3g > %.3g)", (long long)opts->max_iter, inf.r_norm, inf.eps_pri,
                 inf.s_norm, inf.eps_dual);
  }
done:
  if (p.have_ws) inf.inner_evals = p.ws.evals;
  inf.factorizations = p.factorizations;
  inf.rho = p.rho;
  inf.t_total = MPI_Wtime() - t0;
  inf.t_comm = tcomm;
  if (info) *info = inf;
  dpo__cons_party_free(&p);
  free(v);
  free(zprev);
  free(buf);
  free(rbuf);
  return dpo_agree(comm, st);
}
