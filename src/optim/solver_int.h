/* Private to the solver's files: the solver object (solver.c: the driver; solver_ckpt.c: its
 * checkpoints and --resume). */
#ifndef DPO_OPTIM_SOLVER_INT_H
#define DPO_OPTIM_SOLVER_INT_H

#include "dpopt/optim.h"
#include "dpopt/privacy.h"

struct dpo_solver {
  dpo_oracle_t *oracle;
  const dpo_algo_t *algo;
  const dpo_config_t *cfg;
  dpo_privacy_spec_t spec; /* a copy of the run's; without one, nothing given */
  dpo_rng_t *rng;
  struct dpo_ledger *ledger;
  int rank;
  int32_t d;
  int64_t n;
  double *x;
  void *state;
  double (*spent)(void *);
  void *spent_arg;
  dpo_release_fn release_fn; /* the white-box audit's observer, or NULL */
  void *release_arg;
  int64_t iters;
  /* one-entry cache of the last full-batch evaluation: the gtol test and the trace evaluate
   * at x_t, which most algorithms evaluate anyway */
  double *cx, *cg, cF;
  int cvalid;
  /* resume (dpo_solver_resume): first iteration, journal charges the checkpoint did not know */
  int64_t t0, orphans;
  int resumed;
  /* created for a resume (rank 0): the checkpoint as read then and its path; dpo_solver_resume
   * from the same path takes it, so the count and the state come from one read of the file */
  dpo_ckpt_t *rckpt;
  char *rckpt_path;
  /* the noisy row count (dpo__public_n): drawn by this run (noted for its checkpoints), or,
   * created for a resume (dpo_solver_create_resume), the checkpoint's record of it, taken
   * instead of a second draw.  line: its charge's journal line (-1: none); seal: the journal's
   * keyed hash over the record (dpo__count_text) */
  struct {
    int noted, resuming, in_ckpt, taken;
    int64_t value, line;
    double b;
    unsigned char seal[32];
  } count;
  /* the release plan (rule 3), the start point (public; what a cut whole plan leaves) and
   * the iteration limit the last run resolved */
  dpo_plan_t plan;
  double *xstart;
  int64_t max_iter;
  int one; /* the last run took one meeting of the ranks a step (dpo_algo_t.step1) */
  /* rank 0: the trace row of iteration t that step t's meeting brings (t = -1: none), its
   * time and eps_spent before the step (solver_trace.c) */
  struct {
    int64_t t;
    double time, eps;
  } row;
};

/* Rank 0: the full state at the top of iteration t into opts->checkpoint_path (see optim.h,
 * "checkpoints"); solver_ckpt.c. */
int dpo__solver_ckpt_save(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t t);
/* Rank 0: the refusal (with status code) of checkpoints of a plan charged whole as one pass
 * under secagg (optim.h, one_pass); DPO_OK otherwise. */
int dpo__solver_ckpt_refused(const dpo_solver_t *s, int code);
/* Rank 0, before the algorithm's create of a resumed run: the checkpoint's record of the noisy
 * row count (if it has one) into s->count; solver_ckpt.c. */
int dpo__solver_ckpt_count_read(dpo_solver_t *s, const char *path);

/* solver_trace.c, rank 0: the trace row of iteration t at x_t (may_defer: a run of one
 * meeting a step may bring its sums in step t's meeting, and the row is written after the
 * step by dpo__trace_after, with xt = x_t and rc the step's status; it returns the row's
 * failure, else rc).  *diag accumulates the time of the non-private evaluation, which is
 * excluded from time_s. */
int dpo__trace_row(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t t, double t0, double *diag,
                   double *g, int may_defer);
int dpo__trace_after(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t t, double *diag,
                     double *g, const double *xt, int rc);
/* The 2-norm of v (d), scaled so that huge gradients do not overflow. */
double dpo__nrm2(const double *v, int32_t d);

#endif
