/* Private to src/admm: LAPACK prototypes and shared helpers. */
#ifndef DPO_ADMM_IMPL_H
#define DPO_ADMM_IMPL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "dpopt/admm.h"

/* LAPACK (Fortran ABI, hidden CHARACTER lengths as size_t) */
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *lda,
             double *b, const int *ldb, int *info, size_t);
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
            double *w, double *work, const int *lwork, int *info, size_t, size_t);
void dgelsd_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
             const int *ldb, double *s, const double *rcond, int *rank, double *work,
             const int *lwork, int *iwork, int *info);

/* Local-shard least-squares system: H = A_i'A_i / n (d x d, row-major) and r = A_i'b_i / n. */
int dpo__admm_lsq_system(const dpo_model_t *m, const dpo_shard_t *s, double *H, double *r);
/* Factor H + rho I into L (row-major d x d, lower in LAPACK's column-major sense = upper in
 * row-major; only used through dpo__admm_chol_solve). */
int dpo__admm_chol(const double *H, double rho, int32_t d, double *L);
int dpo__admm_chol_solve(const double *L, int32_t d, double *b);
/* Local L-BFGS on phi(x) = f_i(x) + rho/2 ||x - v||^2.  The workspace persists across the outer
 * ADMM iterations: phi changes with v only in its linear term, so its Hessian (and every stored
 * curvature pair y = grad phi(x') - grad phi(x)) stays valid, and the next x-update starts with
 * a learned curvature model instead of a steepest-descent step (warm start of x AND of the
 * memory).  A change of rho shifts every y by (rho_new - rho_old) s (dpo__admm_lbfgs_set_rho). */
typedef struct {
  int32_t d;
  int mem, k, head;
  double rho; /* rho the pairs were collected with (0: none yet) */
  double *S, *Y, *rh, *al, *g, *p, *xn, *gn;
  /* f_i and grad f_i at xc, where the previous call stopped: the next call (new v) starts
   * from them instead of another pass over the shard */
  double *xc, *gc, fc;
  int cached;
  int64_t evals; /* phi evaluations (one fused loss + gradient pass each), cumulative */
} dpo__admm_lbfgs_t;

int dpo__admm_lbfgs_init(dpo__admm_lbfgs_t *w, int32_t d, int mem);
void dpo__admm_lbfgs_free(dpo__admm_lbfgs_t *w);
void dpo__admm_lbfgs_set_rho(dpo__admm_lbfgs_t *w, double rho);
/* Minimize phi from the warm start x until ||grad phi||_inf <= tol_inf or ||grad phi||_2 <=
 * tol_2 (the inexact-ADMM tolerance; <= 0: unused) or maxit iterations.  *iters = iterations. */
int dpo__admm_lbfgs(const dpo_model_t *m, const dpo_shard_t *s, dpo__admm_lbfgs_t *w, double rho,
                    const double *v, double *x, int maxit, double tol_inf, double tol_2,
                    int64_t *iters);
/* f_i(x) and its gradient (1/n_global scaling). */
int dpo__admm_local_fg(const dpo_model_t *m, const dpo_shard_t *s, const double *x, double *f,
                       double *g);

/* One consensus party's local state (consensus.c): the run's own, and the white-box audit's
 * replay of a party on a known shard (src/run/run_audit_job.c), stepped with the public
 * consensus z only, so the replay computes the message that party would send. */
typedef struct {
  const dpo_model_t *model;
  const dpo_shard_t *shard;
  const dpo_admm_opts_t *opts;
  dpo_admm_xupdate_t xk;
  int N;
  int32_t d;
  double rho, s_prev; /* s_prev: dual residual of the latest z (NaN before the first) */
  double *x, *u, *xh, *v, *gtmp, *H, *Lf, *rhs0;
  dpo__admm_lbfgs_t ws;
  int have_ws;
  int64_t factorizations;
} dpo__cons_party_t;

/* x = z0, u = 0; the local system factored (exact) or the L-BFGS workspace (lbfgs). */
int dpo__cons_party_init(dpo__cons_party_t *p, const dpo_model_t *model,
                         const dpo_shard_t *shard, const dpo_admm_opts_t *opts, int N,
                         const double *z0);
/* The x-update from the consensus z; msg[0..d) = xh + u, the message before clip and noise. */
int dpo__cons_party_x(dpo__cons_party_t *p, const double *z, double r_norm, double *msg,
                      int64_t *inner);
/* After the z-update zprev -> z: u += xh - z and the dual residual s_prev. */
void dpo__cons_party_u(dpo__cons_party_t *p, const double *zprev, const double *z);
/* A message clipped to L2 norm <= clip, as a private party clips it. */
void dpo__cons_clip(double *m, int32_t d, double clip);
void dpo__cons_party_free(dpo__cons_party_t *p);

/* Consensus ADMM's checkpoints.  Each rank's part is its own: x_i, u_i, rho, the lagged
 * residual s_prev and the L-BFGS memory (p), with the consensus z (the same on every rank) and
 * the run's counters (inf), after iteration `it`. */
typedef struct dpo__cons_state {
  int64_t it;
  dpo__cons_party_t *p;
  double *z;
  dpo_admm_info_t *inf;
} dpo__cons_state_t;

/* The run's hooks besides the options: checkpoints and the party's guard.
 * After iteration k < max_iter, save is called on every rank (collective: it agrees) when
 * `every` divides k, when k reaches stop_after (> 0) or when rank 0's *stop was raised (it
 * rides in that iteration's reduce); after the last two the run returns DPO_EINTR.  A private
 * run charges iteration k + 1 only after that checkpoint, so the journal at a checkpoint holds
 * the charges of the releases done, no more.  load (every rank, resuming): fills the state
 * once the party is set up; the run goes on from iteration it + 1. */
typedef struct {
  int (*save)(void *arg, const dpo__cons_state_t *st);
  int (*load)(void *arg, dpo__cons_state_t *st);
  void *arg;
  int64_t every, stop_after;
  volatile sig_atomic_t *stop;
  int *loaded; /* out, every rank: 1 once every rank's load passed */
  int64_t after; /* rank 0, resuming: the journal's charges when it holds more than the
                  * checkpoint knows (else 0): the resumed run's groups start past them */
  struct dpo_guard *guard; /* privacy.trust = local, ranks other than 0: the party's guard,
                            * which charges each of its messages before it is sent (NULL:
                            * none; privacy/guard.h) */
} dpo__cons_ckpt_t;

/* dpo_admm_consensus with checkpoints (ck may be NULL). */
int dpo__admm_consensus(MPI_Comm comm, const dpo_model_t *model, const dpo_shard_t *shard,
                        const dpo_admm_opts_t *opts, const dpo__cons_ckpt_t *ck, double *z,
                        dpo_admm_info_t *info);
/* cons_ckpt.c: the L-BFGS memory as doubles (n: its length for d, mem) and back. */
int64_t dpo__admm_lbfgs_packed_len(int32_t d, int mem);
void dpo__admm_lbfgs_pack(const dpo__admm_lbfgs_t *w, double *out);
void dpo__admm_lbfgs_unpack(dpo__admm_lbfgs_t *w, const double *in);

#endif
