/* ADMM: consensus ADMM across ranks (each rank a data holder) and the differentially private
 * linearized ADMMs of Xu et al. (004): DP-ADMM (Alg. 2) and DP-AccADMM (Alg. 3).
 *
 * Consensus ADMM (Boyd et al. 2011, Sec. 7.1):  min sum_i f_i(x_i) + g(z)  s.t.  x_i = z,
 * where rank i holds shard i and f_i(x) = (1/n) sum_{rows of shard i} loss(x; row) (n = global
 * rows, so sum_i f_i is the mean loss whatever the number of ranks) and g is lambda ||z||_1,
 * lambda ||z||_2^2 or 0.  Every rank keeps x_i, u_i and a copy of z; one MPI_Allreduce per
 * iteration carries sum_i (xhat_i + u_i) together with the residual scalars, after which every
 * rank forms the same z = prox_g(mean) (the "coordinator" is replicated, so no broadcast).
 *
 * DP-ADMM / DP-AccADMM (004):  min f(x) + g(y)  s.t.  A x - y = c  (B = -I), f the mean loss
 * over all ranks' rows (computed with the coordinator/worker oracle of comm.h), g(y) =
 * lambda ||y||_1.  The x-update is the linearized, noised step (004 eq. (7) closed form); the
 * coordinator (rank 0) adds N(0, sigma^2 I) to the clipped mean gradient and charges the ledger
 * before anything that depends on it leaves rank 0.
 */
#ifndef DPOPT_ADMM_H
#define DPOPT_ADMM_H

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/comm.h"
#include "dpopt/config.h"
#include "dpopt/data.h"
#include "dpopt/model.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ proximal helpers */

typedef enum { DPO_ADMM_G_NONE = 0, DPO_ADMM_G_L1 = 1, DPO_ADMM_G_L2 = 2 } dpo_admm_g_t;

/* out[j] = sign(v[j]) max(|v[j]| - kappa, 0) (soft threshold, prox of kappa ||.||_1).
 * out may equal v.  Not collective. */
void dpo_admm_soft_threshold(const double *v, double kappa, int32_t d, double *out);

/* prox of t g: out = argmin_z g(z) + 1/(2t) ||z - v||^2 for g = lambda ||.||_1
 * (soft threshold at t lambda), lambda ||.||^2 (v / (1 + 2 t lambda)) or none (v). */
void dpo_admm_prox(dpo_admm_g_t g, double lambda, double t, const double *v, int32_t d,
                   double *out);
/* g(z). */
double dpo_admm_g_value(dpo_admm_g_t g, double lambda, const double *z, int32_t d);

/* ------------------------------------------------------------------ consensus ADMM */

typedef enum {
  DPO_ADMM_X_AUTO = 0,   /* exact for least squares, L-BFGS for logistic */
  DPO_ADMM_X_EXACT = 1,  /* least squares only: Cholesky of (A_i'A_i / n + rho I) */
  DPO_ADMM_X_LBFGS = 2,  /* warm-started local L-BFGS on f_i(x) + rho/2 ||x - z + u_i||^2 */
  DPO_ADMM_X_LINEAR = 3  /* one linearized step (the prox-linear update of 004 eq. (7)) */
} dpo_admm_xupdate_t;

/* Private variant of consensus ADMM (data holders who do not trust the coordinator): each
 * rank clips what it sends, m_i = xhat_i + u_i, to L2 norm <= clip and adds N(0, sigma^2 I)
 * (dpo_mech_gaussian, its own rng) before the Allreduce.  Because m_i is a function of the
 * rank's data and of the already released (noised) history, replacing one row changes it by
 * at most 2 clip: each iteration is a Gaussian mechanism with L2 sensitivity 2 clip, charged
 * per party in the ledger as a "disjoint" charge (parties hold disjoint rows: parallel
 * composition, the iteration costs the max over parties).  The charge of iteration k is
 * accepted on rank 0 before any party sends (the first with one extra collective, the others
 * piggybacked on the previous iteration's Allreduce).  Residuals are data dependent, so the
 * private variant runs exactly max_iter iterations with fixed rho and sends nothing else. */
typedef struct {
  double clip;          /* L2 clip of each rank's message (public) */
  double sigma;         /* Gaussian noise std per coordinate */
  const char *accounting; /* "rdp" (ledger from dpo_ledger_open_rdp) or "pure" (basic ledger) */
  double eps_step;      /* "pure": per-iteration eps claimed (ledger charges max(this, computed)) */
  double delta_step;    /* "pure": per-iteration delta, in (0, 1) */
  dpo_rng_t *rng;       /* this rank's noise stream (unseeded in a private run) */
  dpo_ledger_t *ledger; /* opened over the same communicator; lives on rank 0 */
} dpo_admm_priv_t;

typedef struct {
  dpo_admm_g_t g;
  double lambda;
  dpo_admm_xupdate_t xupdate;
  double rho;            /* penalty (> 0), default 1 */
  double alpha;          /* over-relaxation in [1, 1.8], default 1 (none) */
  double eps_abs, eps_rel; /* Boyd Sec. 3.3.1 stopping, defaults 1e-6, 1e-5 */
  int64_t max_iter;      /* default 1000 */
  int adapt_rho;         /* residual balancing (Boyd Sec. 3.4.1), default 0 */
  double adapt_mu, adapt_tau; /* defaults 10, 2 */
  double lin_eta;        /* linearized step size, default 1 / (public L bound of f_i) */
  int lbfgs_m;           /* default 8 */
  int lbfgs_maxit;       /* default 100 */
  double lbfgs_tol;      /* inf-norm of the local gradient, default 1e-10 (absolute floor) */
  double inner_rel;      /* inexact ADMM: the L-BFGS x-update of iteration k stops once
                            ||grad||_2 <= inner_rel min(r, s) / sqrt(N) with the latest global
                            residuals (the first: inner_rel ||grad at the warm start||_2), so
                            early x-updates are cheap and the error shrinks with the residuals;
                            at the returned iterate it is below inner_rel of the tolerances.
                            Default 0.1; 0 = solve every x-update to lbfgs_tol */
  const dpo_admm_priv_t *priv; /* NULL: non-private */
  /* optional, called on every rank after each iteration with the new z (same on all ranks) */
  void (*trace)(void *arg, int64_t iter, const double *z, double r_norm, double s_norm,
                double rho);
  void *trace_arg;
  /* optional, private mode: called on every rank after each iteration's Allreduce with the
   * broadcast noised sum (v), the consensus z_{k-1} it was computed from (x), sigma sqrt(N)
   * and one party's sensitivity 2 clip (the white-box audit; a failure ends the run) */
  dpo_release_fn observe;
  void *observe_arg;
} dpo_admm_opts_t;

void dpo_admm_opts_default(dpo_admm_opts_t *o);

typedef struct {
  int64_t iters;         /* iterations whose z is returned */
  int converged;         /* residual test passed */
  double r_norm, s_norm, eps_pri, eps_dual; /* at the tested iterate (NaN if never tested) */
  double rho;            /* final rho */
  int64_t rho_changes, factorizations, inner_iters;
  int64_t inner_evals;   /* L-BFGS: loss + gradient passes over the shard on this rank */
  double t_total, t_comm; /* seconds on this rank */
} dpo_admm_info_t;

/* Collective over comm.  model: "lsq" or "logreg" with lambda 0 (put regularization in g);
 * shard: this rank's rows (may be empty).  z (length d): in = starting point (x_i = z, u_i = 0),
 * out = the consensus solution, identical on every rank.  Stopping: r = sqrt(sum ||x_i - z||^2),
 * s = rho sqrt(N) ||z - z_prev|| against eps_pri = sqrt(N d) eps_abs + eps_rel max(||x||,
 * sqrt(N) ||z||), eps_dual = sqrt(N d) eps_abs + eps_rel rho ||u||.  The residuals of iterate k
 * travel in the Allreduce of iteration k + 1 (one reduction per iteration), so the test lags by
 * one iteration and the z returned is the tested one.  Returns DPO_ENOCONV (z still written) if
 * max_iter is reached without convergence in a non-private run, DPO_EBUDGET if the ledger
 * refused an iteration (z = last released consensus). */
/* Not collective: the status line "K  converged C  (r R <= E, s S > F)" of a consensus run
 * into buf (size n); each comparison sign is the outcome of its test (<= passed, > failed,
 * ? not tested).  Returns the snprintf length. */
int dpo_admm_status_line(const dpo_admm_info_t *inf, char *buf, size_t n);

int dpo_admm_consensus(MPI_Comm comm, const dpo_model_t *model, const dpo_shard_t *shard,
                       const dpo_admm_opts_t *opts, double *z, dpo_admm_info_t *info);

/* Not collective: minimize f_i(x) + rho/2 ||x - v||^2 with the local shard only, where
 * f_i(x) = (1/n_global) sum_rows loss.  The building block of the consensus x-update (exposed
 * for tests).  kind: EXACT (lsq; forms and factors the local system each call) or LBFGS; x holds
 * the warm start on entry.  *iters (may be NULL) = inner iterations. */
int dpo_admm_local_prox(const dpo_model_t *model, const dpo_shard_t *shard,
                        dpo_admm_xupdate_t kind, double rho, const double *v, double *x,
                        int64_t *iters);

/* ------------------------------------------------------------------ constraint matrix A */

/* A sparse p x d constraint matrix in CSR (for A = [W; I] of 004 eq. (11)), held in full on
 * every rank (it is public). */
typedef struct {
  int32_t p, d;
  int64_t *rowptr; /* p + 1 */
  int32_t *colind;
  double *val;
} dpo_admm_A_t;

void dpo_admm_A_destroy(dpo_admm_A_t *A);
/* A = I (d x d): plain l1-regularized problem. */
int dpo_admm_A_identity(int32_t d, dpo_admm_A_t **A);
/* out = A x (length p) / out = A' y (length d). */
void dpo_admm_A_mul(const dpo_admm_A_t *A, const double *x, double *out);
void dpo_admm_A_tmul(const dpo_admm_A_t *A, const double *y, double *out);
/* ||A'A||_2 (largest eigenvalue): LAPACK dsyev on the dense d x d A'A for d <= 2000, else
 * power iteration to a 1e-9 eigen-residual, rounded up by 1e-6 relative (it sets gamma_min;
 * over-estimating is safe). */
double dpo_admm_A_norm2sq(const dpo_admm_A_t *A);

/* Graph-guided fused lasso (004 eq. (11)): A = [W; I], W has one row per edge (j, k) with +1 in
 * column j and -1 in column k (so (W x)_e = x_j - x_k and ||W x||_1 is the fused penalty).
 * The graph must be PUBLIC: in 004 W comes from sparse inverse covariance selection on the
 * training data, which leaks it; here it is an input.
 * Edge-list file: one "j k" pair per line, 0-based feature ids < d, '#' comments.  Not
 * collective (every rank reads the same small public file). */
int dpo_admm_graph_load(const char *path, int32_t d, dpo_admm_A_t **A);
/* Edges (j, k), j < k, with |corr(u_j, u_k)| >= thresh over the rows of `pub` (all ranks'
 * shards of a PUBLIC data set; collective over comm: one Allreduce of the d x d moment sums),
 * at most max_edges of the strongest, written as an edge list to path (rank 0) and returned as
 * A = [W; I] on every rank.  WARNING: run on private data this graph is a data-dependent
 * release that no ledger accounts for; use a public or held-out public set only. */
int dpo_admm_graph_from_public(MPI_Comm comm, const dpo_shard_t *pub, double thresh,
                               int32_t max_edges, const char *path, dpo_admm_A_t **A);

/* ------------------------------------------------------------------ DP-ADMM / DP-AccADMM */

/* Noise calibration: eq. (8) of 004 Thm 1 is dpo_admm_thm1_sigma() in privacy.h (c = 2 clip,
 * the replace-one bound of the clipped mean gradient being 2 clip / n); RDP is the RDP
 * accountant's dpo_rdp_calibrate() for the same (eps, delta) and number of releases; LEDGER is
 * the smallest sigma (bisection to 1e-10 relative) for which a fresh in-memory ledger with the
 * run ledger's accountant, relation and budget accepts every release of the run (the same
 * guarantee as eq. (8), which is loose: at eps = 0.1 it spends about half), so the run spends
 * its eps by the ledger's own account. */
typedef enum {
  DPO_DPADMM_SIGMA_EQ8 = 0,
  DPO_DPADMM_SIGMA_RDP = 1,
  DPO_DPADMM_SIGMA_LEDGER = 2
} dpo_dpadmm_sigma_rule_t;

struct dpo_dpadmm_state; /* below: the state a checkpoint saves */

typedef struct {
  int accelerated;   /* 0: DP-ADMM (Alg. 2), 1: DP-AccADMM (Alg. 3) */
  double lambda;     /* g(y) = lambda ||y||_1 */
  double rho;        /* default 1 (004 Sec. V-B) */
  double eta;        /* step, default 1 / (public L bound of f) */
  double gamma;      /* 0: gamma_min = eta rho ||A'A||_2 + 1 (smallest allowed); else >= that */
  int64_t T;         /* iterations */
  int64_t restart;   /* accelerated: reset the momentum (theta = 1) every `restart` iterations,
                        a public schedule (0: Alg. 3 as written, the default).  Alg. 3's momentum
                        (theta_t - 1)/theta_{t+1} -> 1 carries every step's noise P_t on, so with
                        noise the iterates wander (and diverge on flat problems); a restart
                        bounds the carried noise to the last `restart` steps */
  const double *c;   /* constraint right side (length p) or NULL (= 0) */
  int u0_pinv;       /* 1: u0 = -(1/rho) (A')^+ grad f(x0) (Alg. 2/3 input); 0: u0 = 0.  With
                        noise the gradient at x0 is a release too (noised and charged like the
                        others: 004 uses it un-noised, which would leak), so T + 1 releases are
                        calibrated */
  int u0_scalapack;  /* 1: solve for u0 with ScaLAPACK (pdgels) over the oracle's comm */
  /* privacy: noise = 0 runs the same iterations without noise (non-private ADMM/AccADMM) */
  int noise;
  double clip;       /* L2 clip C of per-example gradients (public), > 0 when noise = 1 */
  double eps, delta, mu; /* total (eps, delta) and Thm 1's mu (004 Sec. V-B: mu = 0.5) */
  dpo_dpadmm_sigma_rule_t sigma_rule;
  double sigma_fixed; /* > 0: use this noise std instead of calibrating it from (eps, delta);
                         the ledger still charges every release and refuses the one past the
                         budget (a run that cannot afford T steps stops with DPO_EBUDGET) */
  dpo_rng_t *rng;    /* rank 0: noise stream */
  dpo_ledger_t *ledger; /* rank 0: an RDP ledger (dpo_ledger_open_rdp), charged before each
                           release; NULL only when noise = 0 */
  /* privacy.trust = secagg (dpopt/parties.h): secagg_parties = P > 0 parties (one per rank of
   * the oracle, which must have dpo_oracle_set_secagg on every rank), secagg_collude = k.  Each
   * noised gradient is then the masked SUM of the ranks' clipped gradient sums with the
   * parties' discrete Gaussian shares (src/privacy/secagg.c), charged rdp-rho (KLS 2021 Thm 1,
   * P - k honest shares) with rho <= 1/z, z = dpo_rdp_calibrate for the T (+ 1) releases;
   * sigma_rule and sigma_fixed do not apply.  0: central (rank 0 adds the noise). */
  int secagg_parties, secagg_collude;
  /* parties, one per rank (privacy.trust = central with parties.count, local, secagg):
   * nparties > 0 makes every charge name parties 0..nparties-1 (the ledger keeps that many
   * party accounts, dpo_ledger_set_parties).  local_noise = 1 (privacy.trust = local): rank 0
   * adds nothing; every rank adds the calibrated Gaussian, n sigma on the SUM, to its own
   * clipped gradient sum before the reduce (exact grid Gaussian on the rank's noise stream,
   * dpo_oracle_set_noise_rng), so the released gradient carries sqrt(P) sigma. */
  int nparties, local_noise;
  /* rank 0, optional: after each iteration t (x_t, y_t released) */
  void (*trace)(void *arg, int64_t t, const double *x, const double *y);
  void *trace_arg;
  /* rank 0, optional: every central noised gradient as released (dpopt/privacy.h), its
   * regularizer term taken out; a nonzero return stops the run (the white-box audit) */
  dpo_release_fn observe;
  void *observe_arg;
  /* checkpoints (rank 0 decides; central trust, no parties): after iteration t < T, save is
   * called with the state when ckpt_every divides t, when t reaches stop_after (> 0) or when
   * *stop is raised; after the last two the run returns DPO_EINTR on every rank.  resumed = 1
   * (every rank) continues from *resume (rank 0: a saved state; no u0 release is redone). */
  int (*save)(void *arg, const struct dpo_dpadmm_state *st);
  void *save_arg;
  int64_t ckpt_every, stop_after;
  volatile sig_atomic_t *stop;
  int resumed;
  const struct dpo_dpadmm_state *resume;
} dpo_dpadmm_opts_t;

/* The iteration state after iteration `it` (rank 0): enough to continue bit-identically. */
typedef struct dpo_dpadmm_state {
  int64_t it, restarts, releases;
  double theta, sigma;
  int32_t d, p;
  double *x, *xh, *xp, *u, *uh, *up, *y; /* d, d, d, p, p, p, p */
} dpo_dpadmm_state_t;

void dpo_dpadmm_opts_default(dpo_dpadmm_opts_t *o);

typedef struct {
  int64_t iters;
  double sigma;         /* noise std used (0 when noise = 0) */
  double gamma;         /* gamma used */
  double AtA_norm;      /* ||A'A||_2 */
  int64_t releases;     /* noised gradients released (T, + 1 when u0 uses grad f(x0)) */
  int64_t restarts;     /* momentum restarts (accelerated with restart) */
} dpo_dpadmm_info_t;

/* Collective over the oracle's communicator (workers serve gradient requests; rank 0 runs the
 * iterations; *info is rank 0's, on every rank).  x (length d): in = x0, out = x_T on rank 0.  y (length p, rank 0, may be NULL):
 * out = y_T.  The oracle must have been created with per-example clipping at opts->clip
 * (L2) when noise = 1.  Returns DPO_EBUDGET when the ledger refused a step (x, y = last
 * released), after which the workers are released; the status is agreed on all ranks. */
int dpo_dpadmm_run(dpo_oracle_t *oracle, const dpo_admm_A_t *A, const dpo_dpadmm_opts_t *opts,
                   double *x, double *y, dpo_dpadmm_info_t *info);

/* Not collective: u0 = -(1/rho) (A')^+ g, the minimum-norm least-squares solution of
 * A' u = -g / rho (p unknowns, d equations) by LAPACK dgelsd.  u0 has length p. */
int dpo_admm_u0_lapack(const dpo_admm_A_t *A, const double *g, double rho, double *u0);
/* Collective over comm: the same with ScaLAPACK pdgels on a BLACS grid of all ranks (A' must
 * have full rank: for A = [W; I], rank d, the underdetermined minimum-norm branch).  Every rank
 * passes the same A and g and gets u0. */
int dpo_admm_u0_scalapack(MPI_Comm comm, const dpo_admm_A_t *A, const double *g, double rho,
                          double *u0);

/* ---- a whole run from a configuration: dpo_run_create (dpopt/run.h) with run.command =
 * admm runs admm.method = consensus | dpadmm | dpaccadmm | admm | accadmm with the keys of
 * dpopt admm --help, in a run directory like train's (src/run/run_admm.c). */

#ifdef __cplusplus
}
#endif
#endif
