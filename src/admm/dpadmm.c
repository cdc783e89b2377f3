/* DP-ADMM (004 Alg. 2) and DP-AccADMM (004 Alg. 3) for min f(x) + lambda ||y||_1 s.t.
 * A x - y = c (B = -I), trusted-coordinator mode: rank 0 runs the iterations, the other ranks
 * serve gradient requests through the oracle (comm.h).
 *
 *   y_t = argmin_y lambda||y||_1 + rho/2 ||A xh - y - c + uh||^2 = S_{lambda/rho}(A xh - c + uh)
 *   x_t = xh - (eta/gamma) [grad f(xh) + P_t + rho A'(A xh - y_t - c + uh)]   (eq. (7) closed form)
 *   u_t = uh + A x_t - y_t - c
 * with xh = x_{t-1}, uh = u_{t-1} (Alg. 2) or the Nesterov extrapolations of Alg. 3 (steps 5-7,
 * theta_1 = 1).  G = gamma I - eta rho A'A needs gamma >= eta rho ||A'A||_2 + 1 (G >= I).
 *
 * Privacy: grad f is the mean of per-example gradients clipped to L2 norm C (oracle clipping),
 * so one replaced example moves it by <= 2C/n; P_t ~ N(0, sigma^2 I) with sigma from 004 eq. (8)
 * (dpo_admm_thm1_sigma, c = 2C) or from the RDP accountant (dpo_rdp_calibrate) for the same
 * (eps, delta) and number of releases.  Each noised gradient is charged to the ledger
 * BEFORE it is formed; everything released afterwards (x_t, y_t, u_t) is post-processing.
 * The release, grad f(x) + P_t, is the SUM over the ranks of their clipped gradient sums (over
 * n) plus noise, so it runs under privacy.trust = secagg too (opts secagg_parties, admm.h): the
 * coordinator then receives only masked vectors and the noised sum (P_t = the parties' shares),
 * and the iterations are the same post-processing of it.  With parties (opts nparties: one per
 * rank) every release is charged to the global account and to every party (each party's rows
 * enter every full gradient).  privacy.trust = local (opts local_noise): rank 0 adds nothing;
 * every rank adds N(0, (n sigma)^2) to its own clipped gradient SUM before the reduce (exact
 * grid Gaussian on its own stream) and that is the charge (sum units: n sigma on sensitivity
 * 2C, the same multiplier as central's): the coordinator sees each party's noised sum, so each
 * party's own noise must alone carry the charge against it; the full batch leaves nothing to
 * amplify.  The released gradient then carries sqrt(P) sigma. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "admm/admm_impl.h"
#include "dpopt/parties.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

void dpo_dpadmm_opts_default(dpo_dpadmm_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->rho = 1.0;
  o->T = 100;
  o->mu = 0.5;
  o->delta = 1e-3;
  o->u0_pinv = 1;
  o->sigma_rule = DPO_DPADMM_SIGMA_EQ8;
}

typedef struct {
  dpo_oracle_t *o;
  const dpo_dpadmm_opts_t *op;
  int32_t d;
  int64_t n;
  double sigma, sens;
  int64_t releases;
  double *obs; /* rank 0, with an observer: the release without its regularizer term */
  /* secagg: fixed-point step, each party's share sigma, the charged rho, ranks */
  double gamma, rho;
  uint64_t isigma;
  int bits; /* secagg's word width (dpo_secagg_word) */
  int size;
} ctx_t;

/* Rank 0: charge one release, to every party when the ledger keeps party accounts. */
static int charge(ctx_t *c, const dpo_charge_t *ch) {
  int P = c->op->nparties;
  if (P <= 0) return dpo_ledger_charge(c->op->ledger, ch, NULL);
  int *pl = malloc((size_t)P * sizeof *pl), refused = -2, st;
  if (!pl) return dpo_err(DPO_ENOMEM, "dpadmm: out of memory");
  for (int k = 0; k < P; k++) pl[k] = k; /* every party's rows enter every full gradient */
  st = dpo_ledger_charge_parties(c->op->ledger, ch, P, pl, NULL, &refused);
  free(pl);
  return st;
}

/* Rank 0: show the release g (the noised mean gradient at x) to the observer without its
 * public regularizer term 2 lambda x (dpo_model_finish of no rows is that term). */
static int observe(ctx_t *c, const double *x, int64_t step, const double *g) {
  double *v = c->obs;
  memset(v, 0, (size_t)c->d * sizeof *v);
  dpo_model_finish(dpo_oracle_model(c->o), c->d, 0, x, NULL, v);
  for (int32_t j = 0; j < c->d; j++) v[j] = g[j] - v[j];
  dpo_release_t r = {step, DPO_MECH_GAUSSIAN, c->sigma, c->sens, 1.0, 0.0, DPO_SAMPLING_NONE, c->n, c->n, c->d,
                     v, x, 1.0 / (double)c->n};
  return c->op->observe(c->op->observe_arg, &r);
}

/* Rank 0: g = grad f(x) + P (P = 0 without noise).  The charge comes first. */
static int noisy_grad(ctx_t *c, const double *x, int64_t step, double *g) {
  int st;
  if (c->op->noise && c->op->secagg_parties > 0) { /* charge, then the masked noised sum */
    dpo_charge_t ch = {.mechanism = DPO_MECH_RDP_RHO, .rho = c->rho, .dim = c->d,
                       .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_RDP, .m = c->n,
                       .n = c->n, .step = step, .neighbours = DPO_NEIGHBOURS_REPLACE_ONE};
    if ((st = charge(c, &ch))) return st;
    /* the claim: every party's guard prices the noise itself and refuses a larger rho */
    dpo_oracle_noise_t nz = {DPO_ONOISE_SECAGG, c->gamma, c->size, c->isigma, 0, c->rho, 0,
                             c->bits};
    int64_t used = 0;
    if ((st = dpo_oracle_eval_sums_noised(c->o, x, NULL, &nz, 0, NULL, g, &used))) return st;
    if (used < 1) return dpo_err(DPO_EINVAL, "dpadmm: no rows");
    dpo_model_finish(dpo_oracle_model(c->o), c->d, used, x, NULL, g);
    c->releases++;
    return DPO_OK;
  }
  const int local = c->op->noise && c->op->local_noise;
  if (c->op->noise) {
    /* local: each party's own noise on its SUM is what is charged (sum units: n sigma on
     * sensitivity n sens = 2 clip), and it alone covers the party against the coordinator,
     * which sees every party's noised sum; full batch, so nothing to amplify */
    double k = local ? (double)c->n : 1.0;
    dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = k * c->sigma,
                       .sensitivity = k * c->sens, .dim = c->d, .sampling = DPO_SAMPLING_NONE,
                       .accounting = DPO_ACCOUNTING_RDP, .step = step};
    if ((st = charge(c, &ch))) return st;
  }
  double loss = 0.0;
  int64_t used = 0;
  if (local) {
    /* the claim: every party's guard prices the noise on its own sensitivity (2 clip) */
    dpo_oracle_noise_t nz = {DPO_ONOISE_LOCAL_GAUSSIAN, (double)c->n * c->sigma, 1, 0, 0,
                             c->sigma / c->sens, 0, 0};
    st = dpo_oracle_eval_sums_noised(c->o, x, NULL, &nz, 0, NULL, g, &used);
  } else {
    st = dpo_oracle_eval_sums(c->o, x, NULL, 0, &loss, g, &used);
  }
  if (st) return st;
  if (used < 1) return dpo_err(DPO_EINVAL, "dpadmm: no rows");
  dpo_model_finish(dpo_oracle_model(c->o), c->d, used, x, NULL, g);
  if (c->op->noise && !local &&
      (st = dpo_mech_sample(DPO_MECH_GAUSSIAN, c->op->rng, c->sigma, g, c->d)))
    return st;
  c->releases++;
  return c->op->noise && !local && c->op->observe ? observe(c, x, step, g) : DPO_OK;
}

/* The run's charges: R Gaussian releases of std sigma, sensitivity sens, dimension d. */
typedef struct {
  double sigma, sens;
  int32_t d;
} gauss_plan_t;

static int gauss_charge(void *arg, dpo_ledger_t *F, int64_t t) {
  const gauss_plan_t *p = arg;
  dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = p->sigma,
                     .sensitivity = p->sens, .dim = p->d, .sampling = DPO_SAMPLING_NONE,
                     .accounting = DPO_ACCOUNTING_RDP, .step = t};
  return dpo_ledger_charge(F, &ch, NULL);
}

static int plan_fits(const dpo_ledger_t *L, double eps, double delta, double sigma, double sens,
                     int32_t d, int64_t R, int *fits) {
  gauss_plan_t p = {sigma, sens, d};
  return dpo_ledger_plan_fits(L, eps, delta, R, gauss_charge, &p, fits);
}

/* The pld ledger's PLD bound of the R releases at sigma (acct_pld.c: one kind, sampling none,
 * the snapped multiplier, grid dpo_pld_auto_h(budget, R)), in sigma: dpo_pld_secant's guide */
typedef struct {
  double sens, beps, bdelta;
  int32_t d;
  int64_t R;
} pld_guide_t;
static int pld_eps_at(void *arg, double sigma, double *e) {
  const pld_guide_t *g = arg;
  const double z = dpo_pld_charge_z(sigma, g->sens, g->d);
  if (!(z > 0)) return dpo_err(DPO_EINVAL, "dpadmm: no grid for the noise %g", sigma);
  return dpo_pld_eps("none", 0, 0, z, g->R, g->bdelta, dpo_pld_auto_h(g->beps, g->R), e);
}

/* Rank 0: the smallest sigma (relative resolution 1e-10) for which the run's ledger composition
 * accepts all R releases within min(eps, the ledger's budget): the same guarantee as eq. (8)
 * with the noise the ledger's own account needs.  hi must fit (eq. (8)'s sigma does).  Under
 * the pld accountant, secant steps on its PLD bound first (dpo_pld_secant: the spent eps within
 * 1e-7 of the budget, ~5 compositions); the ledger's acceptance of that sigma ends the search,
 * else (and under the other accountants, which compose no PLD) the bisection decides. */
static int ledger_sigma(const dpo_ledger_t *L, double eps, double sens, int32_t d, int64_t R,
                        double hi, double *sigma) {
  double beps = NAN, bdelta = NAN, lo = 0;
  int rc, fits = 0;
  const int64_t nc0 = dpo_pld_compositions();
  if ((rc = dpo_ledger_budget(L, &beps, &bdelta))) return rc;
  if (eps < beps) beps = eps;
  for (int k = 0; k < 60; k++) { /* make sure hi fits */
    if ((rc = plan_fits(L, beps, bdelta, hi, sens, d, R, &fits))) return rc;
    if (fits) break;
    lo = hi;
    hi *= 2;
  }
  if (!fits) return dpo_err(DPO_EBUDGET, "dpadmm: no noise level fits the budget");
  const char *acct = dpo_ledger_accountant(L);
  if (lo == 0 && acct && !strcmp(acct, "pld") && bdelta > 0) {
    pld_guide_t g = {sens, beps, bdelta, d, R};
    double e, sl = -1, sb, eb; /* eps ~ 1/sigma for the Gaussian's composition */
    if ((rc = pld_eps_at(&g, hi, &e)) ||
        (rc = dpo_pld_secant(pld_eps_at, &g, beps, 1e-7, 12, hi, hi, e, &sl, &sb, &eb)))
      return rc;
    if (sb < hi && (rc = plan_fits(L, beps, bdelta, sb, sens, d, R, &fits))) return rc;
    if (sb < hi && fits) {
      *sigma = sb;
      if (dpo_msg_verbose()) /* --verbose: the search's cost */
        dpo_msg("dpadmm: ledger sigma %.9g (secant on the PLD bound): %lld PLD compositions",
                sb, (long long)(dpo_pld_compositions() - nc0));
      return DPO_OK;
    }
  }
  if (lo == 0) lo = hi * 1e-3;
  while (hi - lo > 1e-10 * hi) {
    double mid = 0.5 * (lo + hi);
    if ((rc = plan_fits(L, beps, bdelta, mid, sens, d, R, &fits))) return rc;
    if (fits) hi = mid;
    else lo = mid;
  }
  *sigma = hi;
  if (dpo_msg_verbose())
    dpo_msg("dpadmm: ledger sigma %.9g (bisection): %lld PLD compositions", hi,
            (long long)(dpo_pld_compositions() - nc0));
  return DPO_OK;
}

/* The settings dpo_dpadmm_run needs, checked on every rank (agreed by the caller). */
static int run_check(const dpo_admm_A_t *A, const dpo_dpadmm_opts_t *op, int rank, int32_t d,
                     const double *x) {
  if (!A || !op || A->d != d)
    return dpo_err(DPO_EINVAL, "dpadmm_run: need A with %d columns and options", d);
  if (!(op->rho > 0) || !(op->eta > 0) || op->T < 1 || !(op->lambda >= 0) || !(op->gamma >= 0))
    return dpo_err(DPO_EINVAL, "dpadmm_run: need rho > 0 (%g), eta > 0 (%g), T >= 1, lambda >= 0, "
                   "gamma >= 0", op->rho, op->eta);
  if (op->noise && !(op->clip > 0 && op->eps > 0 && op->delta > 0 && op->delta < 1 &&
                     op->mu > 0 && op->mu < 1))
    return dpo_err(DPO_EINVAL, "dpadmm_run: noise needs clip > 0, eps > 0, delta and mu in (0, 1)");
  if (op->noise && rank == 0 && (!op->rng || !op->ledger))
    return dpo_err(DPO_EINVAL, "dpadmm_run: noise needs an rng and a ledger on rank 0");
  if (rank == 0 && !x) return dpo_err(DPO_EINVAL, "dpadmm_run: NULL x on rank 0");
  return DPO_OK;
}

/* Collective (the ledger rule agrees and broadcasts rank 0's bisection): the noise of the R
 * releases, c->sens and c->sigma (secagg: its fixed-point step, share sigma and word). */
static int run_sigma(ctx_t *c, MPI_Comm comm, int rank, int64_t R) {
  const dpo_dpadmm_opts_t *op = c->op;
  int st = DPO_OK;
  /* 004 Thm 1: the average over the n rows of clipped terms, replace-one (c = 2 clip) */
  c->sens = dpo_sens(DPO_NEIGHBOURS_REPLACE_ONE, op->clip) / (double)c->n;
  /* calibrate a hair under the budget: the ledger accounts the grid-snapped sensitivity */
  double ecal = op->eps * (1.0 - 1e-6);
  if (op->secagg_parties > 0) {
    /* the rdp-rho curve alpha rho^2/2 with rho = 1/z is the Gaussian of multiplier z; the
     * sensitivity of the SUM is 2 clip (replace-one); data-free range check (secagg.c) */
    double z = 0, ssum = dpo_sens(DPO_NEIGHBOURS_REPLACE_ONE, op->clip);
    MPI_Comm_size(comm, &c->size);
    st = dpo_rdp_calibrate("none", 0, c->n, R, ecal, op->delta, &z);
    if (!st)
      st = dpo_secagg_params(ssum, c->d, op->secagg_parties, op->secagg_collude,
                             nextafter(1 / z, 0), &c->gamma, &c->isigma, &c->rho, NULL);
    if (!st)
      st = dpo_secagg_word(c->n, ssum, c->gamma, c->size,
                           op->secagg_parties > c->size ? op->secagg_parties : c->size, c->d,
                           c->isigma, 0, &c->bits);
    /* the std of the noise on the mean gradient (reported) */
    c->sigma = c->gamma * (double)c->isigma * sqrt((double)op->secagg_parties) / (double)c->n;
  } else if (op->sigma_fixed > 0) {
    c->sigma = op->sigma_fixed;
  } else if (op->sigma_rule == DPO_DPADMM_SIGMA_RDP) {
    double z = 0;
    st = dpo_rdp_calibrate("none", 0, c->n, R, ecal, op->delta, &z);
    c->sigma = z * c->sens;
  } else {
    st = dpo_admm_thm1_sigma(dpo_sens(DPO_NEIGHBOURS_REPLACE_ONE, op->clip), c->n, R, ecal,
                             op->delta, op->mu, &c->sigma, NULL);
    /* ledger: eq. (8)'s sigma fits the ledger (it is looser); shrink it until the ledger's
     * own composition of the R releases reaches eps (rank 0 holds the ledger) */
    if (!st && op->sigma_rule == DPO_DPADMM_SIGMA_LEDGER) {
      double sg = c->sigma;
      if (rank == 0) st = ledger_sigma(op->ledger, op->eps, c->sens, c->d, R, sg, &sg);
      if (!(st = dpo_agree(comm, st)) && MPI_Bcast(&sg, 1, MPI_DOUBLE, 0, comm) != MPI_SUCCESS)
        st = dpo_err(DPO_EMPI, "dpadmm_run: MPI_Bcast failed");
      c->sigma = sg;
    }
  }
  return st;
}

/* Collective: u0 = -(1/rho) (A')^+ grad f(x0) (Alg. 2/3 input), from a charged release. */
static int run_u0(ctx_t *c, const dpo_admm_A_t *A, MPI_Comm comm, int rank, const double *x,
                  double *g0, double *u) {
  int st;
  if (rank == 0) {
    st = noisy_grad(c, x, 0, g0);
    dpo_oracle_finish(c->o, st);
  } else {
    st = dpo_oracle_serve(c->o);
  }
  if ((st = dpo_agree(comm, st))) return st;
  if (c->op->u0_scalapack) {
    /* the noised gradient was charged: it may leave rank 0 */
    if (MPI_Bcast(g0, c->d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS)
      st = dpo_err(DPO_EMPI, "dpadmm_run: MPI_Bcast failed");
    if ((st = dpo_agree(comm, st))) return st;
    if ((st = dpo_admm_u0_scalapack(comm, A, g0, c->op->rho, u))) return st;
  } else if (rank == 0) {
    st = dpo_admm_u0_lapack(A, g0, c->op->rho, u);
  }
  return dpo_agree(comm, st);
}

/* Rank 0's iterates: x_t, the extrapolations xh / uh, the previous xp / up, y_t (yl), the
 * released gradient g, work vectors t (p) and w (d), Alg. 3's theta. */
typedef struct {
  double *x, *xh, *xp, *u, *uh, *up, *g, *t, *yl, *w;
  double theta;
} iter_t;

/* Rank 0: iteration it of Alg. 2 / 3 (the charge comes before the gradient is formed). */
static int run_step(ctx_t *c, const dpo_admm_A_t *A, iter_t *v, int64_t it, double gam,
                    dpo_dpadmm_info_t *inf) {
  const dpo_dpadmm_opts_t *op = c->op;
  const int32_t d = c->d, p = A->p;
  const size_t D = (size_t)d, Pn = (size_t)p;
  const double kap = op->lambda / op->rho, step = op->eta / gam, *cv = op->c;
  int st;
  /* y-update: soft threshold of A xh - c + uh */
  dpo_admm_A_mul(A, v->xh, v->t);
  for (int32_t r = 0; r < p; r++) v->t[r] += v->uh[r] - (cv ? cv[r] : 0.0);
  double *ynew = malloc(Pn * sizeof *ynew);
  if (!ynew) return dpo_err(DPO_ENOMEM, "dpadmm_run: out of memory");
  dpo_admm_soft_threshold(v->t, kap, p, ynew);
  /* the noised gradient at xh (charged first; a refusal keeps the last release) */
  if ((st = noisy_grad(c, v->xh, it, v->g))) {
    free(ynew);
    return st;
  }
  /* x-update, eq. (7) closed form: A xh - y - c + uh = t - y */
  for (int32_t r = 0; r < p; r++) v->t[r] -= ynew[r];
  dpo_admm_A_tmul(A, v->t, v->w);
  for (int32_t j = 0; j < d; j++) v->x[j] = v->xh[j] - step * (v->g[j] + op->rho * v->w[j]);
  /* u-update */
  dpo_admm_A_mul(A, v->x, v->t);
  for (int32_t r = 0; r < p; r++) v->u[r] = v->uh[r] + v->t[r] - ynew[r] - (cv ? cv[r] : 0.0);
  memcpy(v->yl, ynew, Pn * sizeof *v->yl);
  free(ynew);
  if (op->accelerated) { /* Alg. 3 steps 5-7 */
    /* restart every op->restart iterations (a public schedule, nothing read from the data):
     * the momentum (theta_t - 1)/theta_{t+1} -> 1 of Alg. 3 carries the noise P_t of every
     * step on, so the noise of the last K steps accumulates in x_t; resetting theta = 1 every
     * K steps bounds that sum at K terms (Alg. 3 as written: restart = 0) */
    if (op->restart > 0 && it % op->restart == 0) {
      v->theta = 1.0;
      inf->restarts++;
      memcpy(v->xh, v->x, D * sizeof *v->x);
      memcpy(v->uh, v->u, Pn * sizeof *v->u);
    } else {
      double th1 = 0.5 * (1.0 + sqrt(1.0 + 4.0 * v->theta * v->theta)), m = (v->theta - 1.0) / th1;
      for (int32_t j = 0; j < d; j++) v->xh[j] = v->x[j] + m * (v->x[j] - v->xp[j]);
      for (int32_t r = 0; r < p; r++) v->uh[r] = v->u[r] + m * (v->u[r] - v->up[r]);
      v->theta = th1;
    }
  } else {
    memcpy(v->xh, v->x, D * sizeof *v->x);
    memcpy(v->uh, v->u, Pn * sizeof *v->u);
  }
  memcpy(v->xp, v->x, D * sizeof *v->x);
  memcpy(v->up, v->u, Pn * sizeof *v->u);
  return DPO_OK;
}

/* Rank 0: the iterations from it0 to T, with the trace, checkpoints and the stop flag. */
static int run_iterations(ctx_t *c, const dpo_admm_A_t *A, iter_t *v, int64_t it0,
                          dpo_dpadmm_info_t *inf) {
  const dpo_dpadmm_opts_t *op = c->op;
  int st = DPO_OK;
  for (int64_t it = it0; it <= op->T; it++) {
    if ((st = run_step(c, A, v, it, inf->gamma, inf))) break;
    inf->iters = it;
    if (op->trace) op->trace(op->trace_arg, it, v->x, v->yl);
    if (it < op->T && (op->save || op->stop)) { /* rank 0's flag decides: the workers serve */
      int halt = (op->stop && *op->stop) || (op->stop_after > 0 && it >= op->stop_after);
      if (op->save && (halt || (op->ckpt_every > 0 && it % op->ckpt_every == 0))) {
        dpo_dpadmm_state_t ss = {it, inf->restarts, c->releases, v->theta, c->sigma, c->d, A->p,
                                 v->x, v->xh, v->xp, v->u, v->uh, v->up, v->yl};
        if ((st = op->save(op->save_arg, &ss))) break;
      }
      if (halt) {
        st = dpo_err(DPO_EINTR, "stopped after iteration %lld of %lld, %s", (long long)it,
                     (long long)op->T, op->save ? "checkpoint written"
                                                : "no checkpoint (this run cannot be resumed)");
        break;
      }
    }
  }
  return st;
}

int dpo_dpadmm_run(dpo_oracle_t *oracle, const dpo_admm_A_t *A, const dpo_dpadmm_opts_t *op,
                   double *x, double *y, dpo_dpadmm_info_t *info) {
  if (!oracle) return dpo_err(DPO_EINVAL, "dpadmm_run: NULL oracle");
  MPI_Comm comm = dpo_oracle_comm(oracle);
  int rank = dpo_oracle_rank(oracle), st;
  int32_t d = dpo_oracle_dim(oracle);
  int64_t n = dpo_oracle_nglobal(oracle);
  ctx_t c = {.o = oracle, .op = op, .d = d, .n = n};
  dpo_dpadmm_info_t inf;
  memset(&inf, 0, sizeof inf);
  iter_t v = {.x = x, .theta = 1.0};
  double *g0 = NULL;
  int32_t p = A ? A->p : 0;
  if ((st = dpo_agree(comm, run_check(A, op, rank, d, x)))) return st;

  /* public constants */
  inf.AtA_norm = dpo_admm_A_norm2sq(A);
  double gmin = op->eta * op->rho * inf.AtA_norm + 1.0;
  inf.gamma = op->gamma > 0 ? op->gamma : gmin;
  if (!(inf.gamma >= gmin))
    st = dpo_err(DPO_EINVAL, "dpadmm_run: gamma = %g < eta rho ||A'A|| + 1 = %g (G must be >= I)",
                 inf.gamma, gmin);
  int64_t R = op->T + (op->u0_pinv ? 1 : 0);
  if (!st && op->resumed && rank == 0 && (!op->resume || op->resume->d != d || op->resume->p != p))
    st = dpo_err(DPO_EFORMAT, "dpadmm_run: the saved state has other dimensions than the run");
  if (!st && op->noise) st = run_sigma(&c, comm, rank, R);
  /* resumed: the noise of the interrupted run (the ledger rule's bisection would now see its
   * charges); rank 0 alone draws and charges */
  if (!st && op->resumed && rank == 0) c.sigma = op->resume->sigma;
  /* the std of the noise on the released mean gradient: local sums P parties' own noise */
  inf.sigma = op->local_noise && op->nparties > 0 ? c.sigma * sqrt((double)op->nparties)
                                                  : c.sigma;
  if ((st = dpo_agree(comm, st))) return st;

  size_t D = (size_t)d, Pn = (size_t)p;
  g0 = calloc(D, sizeof *g0);
  v.u = calloc(Pn, sizeof *v.u);
  if (rank == 0 && op->noise && op->observe) c.obs = malloc(D * sizeof *c.obs);
  if (!g0 || !v.u || (rank == 0 && op->noise && op->observe && !c.obs))
    st = dpo_err(DPO_ENOMEM, "dpadmm_run: out of memory");
  if ((st = dpo_agree(comm, st))) goto out;
  if (op->u0_pinv && !op->resumed && (st = run_u0(&c, A, comm, rank, x, g0, v.u))) goto out;
  if (rank != 0) {
    st = dpo_oracle_serve(oracle);
    goto out;
  }

  /* ---- rank 0: the iterations */
  v.xh = malloc(D * sizeof *v.xh);
  v.xp = malloc(D * sizeof *v.xp);
  v.g = malloc(D * sizeof *v.g);
  v.w = malloc(D * sizeof *v.w);
  v.uh = malloc(Pn * sizeof *v.uh);
  v.up = malloc(Pn * sizeof *v.up);
  v.t = malloc(Pn * sizeof *v.t);
  v.yl = calloc(Pn, sizeof *v.yl);
  if (!v.xh || !v.xp || !v.g || !v.w || !v.uh || !v.up || !v.t || !v.yl) {
    st = dpo_err(DPO_ENOMEM, "dpadmm_run: out of memory");
    goto finish;
  }
  memcpy(v.xh, x, D * sizeof *x);
  memcpy(v.xp, x, D * sizeof *x);
  memcpy(v.uh, v.u, Pn * sizeof *v.u);
  memcpy(v.up, v.u, Pn * sizeof *v.u);
  int64_t it0 = 1;
  if (op->resumed) { /* rank 0: the state after iteration it, as saved */
    const dpo_dpadmm_state_t *rs = op->resume;
    memcpy(x, rs->x, D * sizeof *x);
    memcpy(v.xh, rs->xh, D * sizeof *x);
    memcpy(v.xp, rs->xp, D * sizeof *x);
    memcpy(v.u, rs->u, Pn * sizeof *v.u);
    memcpy(v.uh, rs->uh, Pn * sizeof *v.u);
    memcpy(v.up, rs->up, Pn * sizeof *v.u);
    memcpy(v.yl, rs->y, Pn * sizeof *v.u);
    v.theta = rs->theta;
    inf.iters = rs->it;
    inf.restarts = rs->restarts;
    c.releases = rs->releases;
    it0 = rs->it + 1;
  }
  st = run_iterations(&c, A, &v, it0, &inf);
  /* on a refusal x still holds the last released iterate: x is only written after the charge */
  if (y) memcpy(y, v.yl, Pn * sizeof *y);
finish:
  dpo_oracle_finish(oracle, st);
out:
  inf.releases = c.releases;
  /* every rank returns rank 0's account of the run */
  MPI_Bcast(&inf, (int)sizeof inf, MPI_BYTE, 0, comm);
  if (info) *info = inf;
  free(v.xh);
  free(v.xp);
  free(v.u);
  free(v.uh);
  free(v.up);
  free(v.g);
  free(v.t);
  free(v.yl);
  free(v.w);
  free(g0);
  free(c.obs);
  return dpo_agree(comm, st);
}
