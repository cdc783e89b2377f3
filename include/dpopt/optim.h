/* Algorithms behind one interface, and the run driver.
 *
 * An algorithm is a dpo_algo_t (ops table) in one file of src/optim/ plus one line in the
 * table of src/optim/registry.c.  It runs on rank 0 only: create() reads its parameters,
 * step() performs one iteration, calling dpo_solver_eval*() (which go through the oracle,
 * i.e. through all ranks) as often as it needs, and updates the iterate held by the solver.
 * Private algorithms charge the ledger (dpo_solver_ledger()) for every noised quantity
 * before the next evaluation broadcasts a point that depends on it.
 *
 * The driver dpo_solver_run() is collective: rank 0 loops over step() and writes the trace,
 * the other ranks serve the oracle.
 */
#ifndef DPOPT_OPTIM_H
#define DPOPT_OPTIM_H

#include <signal.h>
#include <stdio.h>
#include <stdint.h>

#include "dpopt/comm.h"
#include "dpopt/config.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpo_solver dpo_solver_t;
typedef struct dpo_ckpt dpo_ckpt_t; /* checkpoint contents (see "checkpoints" below) */

/* One key of section "algo" that an algorithm reads: key (without "algo."), its default as
 * text (a formula of public quantities or a number) and what it means.  Tables end with
 * {NULL, NULL, NULL}.  dpo_solver_param* refuse a key missing from the algorithm's tables, so
 * `dpopt train --help`, generated from them, lists every key each algorithm reads. */
typedef struct {
  const char *key, *def, *meaning;
} dpo_algo_param_t;

typedef struct {
  const char *name;     /* --algo NAME */
  const char *summary;  /* one line for --help */
  int is_private;       /* 1: adds noise and charges the ledger */
  /* Read parameters (dpo_solver_param*), allocate state.  Called on rank 0. */
  int (*create)(dpo_solver_t *s, void **state);
  /* One iteration t = 0, 1, ... on rank 0; set *done = 1 to stop early (converged, schedule
   * finished).  Must update the iterate via dpo_solver_x(). */
  int (*step)(dpo_solver_t *s, void *state, int64_t t, int *done);
  void (*destroy)(void *state);
  /* Optional (both or neither): write / restore everything step() will read later that
   * create() does not recompute from the config (momentum, history, counters, schedules
   * drawn from the stream).  load() runs on a freshly created state.  Without them the
   * algorithm refuses run.checkpoint_every (DPO_EUNSUP). */
  int (*save)(dpo_solver_t *s, void *state, struct dpo_ckpt *w);
  int (*load)(dpo_solver_t *s, void *state, const struct dpo_ckpt *r);
  /* The keys create() reads (NULL: none), and a table shared with other algorithms for the
   * keys a common reader reads on their behalf (dp_common.c, sco_common.c; NULL: none). */
  const dpo_algo_param_t *params;
  const dpo_algo_param_t *shared;
  /* The smoothness bound L (from data.row_l2_bound) the algorithm needs: NULL none, "" always,
   * else the name of the step parameter (e.g. "alpha") whose explicit value replaces c/L.
   * dpo_algo_check refuses a missing bound before any data are read. */
  const char *needs_L;
  /* Likewise for strong convexity mu > 0 (model.lambda > 0): NULL none, "" always, else the
   * parameter whose explicit value makes mu unnecessary (e.g. the momentum "beta"). */
  const char *needs_mu;
  /* 1: with parties, its release plan is one disjoint pass charged whole (dpo_plan_t.one_pass),
   * so it has no checkpoints under secagg (dpo_algo_ckpt_check); the solver refuses a plan
   * declared so by an algorithm without the flag */
  int one_pass;
  /* 1: only its final model leaves the run (its steps are hidden state, not releases: pnsgd,
   * the phased methods), so an audit scores the final model, not the broadcasts */
  int final_only;
  /* 1: under secagg with a file per party, a resume may go on without some parties
   * (parties.remaining, or parties.count lowered): its checkpoint holds nothing sized by the
   * party table (the DP-GD family's keeps the whole table's active-party set, so it has 0) */
  int drops_parties;
  /* Optional: one meeting of the ranks a step instead of the oracle's requests, inside one
   * data holder (dp-sgd-rdp).  Called on every rank before the first step, collective: rank 0
   * decides (want: rank 0 asks; a trace row's sums ride in the meeting) and says so and the iteration limit
   * (*max_iter) to all; when *on, every rank runs step() with a state of its own (*state on
   * the other ranks, destroyed with the solver). */
  int (*step1)(dpo_solver_t *s, void **state, int want, int64_t *max_iter, int *on);
} dpo_algo_t;

/* Lookup in the algorithm table; NULL if unknown. */
const dpo_algo_t *dpo_algo_find(const char *name);
/* Not collective (every rank decides the same): the refusals of algorithm a's privacy analysis
 * and release plan that depend only on public settings, not on the data -- a public
 * sensitivity source for the dp-* family (privacy.clip, or data.row_l1_bound for a model with
 * an L1 gradient bound), a public Lipschitz bound and smoothness for the SCO family
 * (privacy.clip = l2:C or data.row_l2_bound with logreg; data.row_l2_bound), delta > 0 for
 * Gaussian noise, the neighbouring relation of the analysis, from spec (NULL: nothing
 * given) and cfg's data.* and algo.* keys -- with the messages create()
 * gives.  create() runs only once the data are loaded; a front end calls this first, so a
 * refused run loads and writes nothing.  DPO_OK for non-private algorithms. */
int dpo_algo_check(const dpo_algo_t *a, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                   const dpo_model_t *m);
/* NULL-terminated table, for --help listings. */
const dpo_algo_t *const *dpo_algo_list(void);
/* Not collective, data-free: DPO_OK when a run of a under spec can write and resume
 * checkpoints, else the reason (DPO_EINVAL): a without save/load, or a plan charged whole as
 * one pass under privacy.trust = secagg (dpo_algo_t.one_pass).  A front end asks before
 * anything is written; dpo_solver_run and dpo_solver_resume refuse the same from the plan. */
int dpo_algo_ckpt_check(const dpo_algo_t *a, const dpo_privacy_spec_t *spec);

/* ---- release plans (privacy rule 3: what is charged is what ran) ----
 * Every private algorithm declares in create() (dpo_solver_declare_plan) how its charges
 * relate to the steps that run:
 *  DPO_PLAN_PER_STEP  each step charges its releases before making them, so every prefix of
 *                     the schedule is covered: the run may stop after any step (budget
 *                     refused, SIGTERM, --iters below the schedule) and keep its iterate.
 *  DPO_PLAN_WHOLE     one charge covers a fixed schedule of `steps` steps and is valid only if
 *                     the schedule runs to its end (e.g. PNSGD's amplification by iteration,
 *                     003 Thm 3.1, bounds the final iterate of the FULL pass; a truncated pass
 *                     has less noise after the last step and a larger rho).  The driver makes
 *                     `whole` before step 0, refuses stopping rules that could cut the
 *                     schedule, and withholds the iterate of a run that stops early anyway.
 * The driver refuses run options that disagree with the plan before anything is released
 * (dpo_solver_run): gtol on a private algorithm (a stopping decision on the private
 * gradient), max_iter < steps for a whole plan, a budget that cannot cover a whole plan. */
typedef enum { DPO_PLAN_NONE = 0, DPO_PLAN_PER_STEP = 1, DPO_PLAN_WHOLE = 2 } dpo_plan_kind_t;
typedef struct {
  dpo_plan_kind_t kind;
  int64_t steps;      /* the schedule's natural length (the algorithm sets done at its end) */
  dpo_charge_t whole; /* DPO_PLAN_WHOLE: the one charge (its string fields must be literals) */
  char what[240];     /* one line for the ledger, summary.json and the privacy lines */
  /* Public run parameters for summary.json (0: not applicable, not reported): batch size,
   * noise multiplier z (sigma / sensitivity) and base step size of minibatch algorithms. */
  int64_t batch;
  double noise_multiplier, lr;
  /* 1: the steps are the batches of ONE disjoint pass, charged together as one step's price
   * (parallel composition), so the pass is charged whole: a step redone after a resume would
   * release its rows a second time within it.  Under privacy.trust = secagg the driver refuses
   * checkpoints of such a plan (dpo_solver_run: each party's guard keeps its record of the pass
   * in memory, doc/design.md "Dropouts"); with one data holder a cleanly stopped pass resumes
   * and a journal with charges after the checkpoint is refused. */
  int one_pass;
} dpo_plan_t;

/* Rank 0, from an algorithm's create(): record its plan (copied). */
int dpo_solver_declare_plan(dpo_solver_t *s, const dpo_plan_t *p);
/* Any rank after dpo_solver_create: the plan (kind DPO_PLAN_NONE for non-private ones). */
const dpo_plan_t *dpo_solver_plan(const dpo_solver_t *s);
/* "per-step" | "whole" | "none" */
const char *dpo_plan_kind_name(dpo_plan_kind_t k);

#define DPO_ITERS_PLAN (-1) /* max_iter: the algorithm's own schedule length (100 without one) */

typedef struct {
  int64_t max_iter;      /* iterations (T); DPO_ITERS_PLAN: the plan's steps */
  double gtol;           /* stop when ||grad F|| <= gtol (refused for private algorithms) */
  int64_t trace_every;   /* trace row every k iterations (0: none) */
  int trace_loss;        /* evaluate F(x_t) for the trace (non-private diagnostic) */
  const char *heldout_metric; /* with trace_loss and a held-out set on the oracle: the trace's
                               * last two columns, the held-out loss and this metric ("accuracy",
                               * "mse"); NULL: no such columns */
  int quiet;             /* no progress on stderr (overrides progress) */
  int progress;          /* 1: progress lines on stderr (--progress); 0: only when someone
                          * watches (a terminal); -1: never.  Rank 0. */
  double fstar;          /* known F* for the f - f* column (NAN if unknown) */
  FILE *trace;           /* rank 0: CSV trace stream (NULL: none) */
  /* Checkpoints (rank 0): every checkpoint_every iterations (0: never), when *stop becomes
   * non-zero (set asynchronously, e.g. by a SIGTERM handler; NULL: never) and after
   * stop_after iterations (0: never), the full state is written atomically to
   * checkpoint_path.  A stop ends the run on every rank with DPO_EINTR after the current
   * step and the checkpoint. */
  int64_t checkpoint_every;
  const char *checkpoint_path;
  volatile sig_atomic_t *stop;
  int64_t stop_after;
  /* Rank 0: called after every step during which the ledger accepted a charge (per-step
   * plans only: a whole-plan charge covers the final iterate of the full pass, never an
   * intermediate one), with x_{t+1} (post-processing of released values), the iteration
   * count t + 1 and the ledger's charge count.  A non-zero return fails the run.  NULL: none.
   * The run layer persists the last released iterate with it (dropouts). */
  int (*on_release)(void *arg, const double *x, int64_t iters, int64_t charges);
  void *on_release_arg;
  /* Rank 0: called while a checkpoint is written, keys prefixed "run.", for state of the
   * caller's that must match the solver's at that step (the one-run audit's scores of the
   * releases so far).  The caller reads them back from the file itself.  NULL: none. */
  int (*on_checkpoint)(void *arg, dpo_ckpt_t *c);
  void *on_checkpoint_arg;
} dpo_run_opts_t;

void dpo_run_opts_default(dpo_run_opts_t *o);

/* Collective.  cfg: parameters (borrowed); rng: rank 0's noise/sampling stream (borrowed, may
 * be NULL for non-private algorithms); ledger: rank 0's ledger (borrowed, may be NULL).  The
 * privacy settings are the defaults: a cfg that sets any privacy.* key is refused (DPO_EINVAL
 * naming it), since nothing would read it; use dpo_solver_create_spec. */
struct dpo_ledger;
int dpo_solver_create(dpo_oracle_t *oracle, const dpo_algo_t *algo, const dpo_config_t *cfg,
                      dpo_rng_t *rng, struct dpo_ledger *ledger, const double *x0,
                      dpo_solver_t **s);
/* The same with the run's privacy specification (copied; NULL: nothing given), which the
 * private algorithms read (dpo_solver_privacy) instead of any privacy.* key. */
int dpo_solver_create_spec(dpo_oracle_t *oracle, const dpo_algo_t *algo,
                           const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                           dpo_rng_t *rng, struct dpo_ledger *ledger, const double *x0,
                           dpo_solver_t **s);
/* The same for a run that resumes from the checkpoint at ckpt (then dpo_solver_resume with
 * it): a release the run made before its first step, on which its schedule is built -- the
 * noisy row count of an add-remove run without a declared size -- is taken from the checkpoint
 * (checked against the reopened journal), never drawn or charged again.  ckpt = NULL:
 * dpo_solver_create_spec. */
int dpo_solver_create_resume(dpo_oracle_t *oracle, const dpo_algo_t *algo,
                             const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                             dpo_rng_t *rng, struct dpo_ledger *ledger, const double *x0,
                             const char *ckpt, dpo_solver_t **s);
void dpo_solver_destroy(dpo_solver_t *s);

/* Collective: run to completion.  Returns DPO_OK, DPO_EBUDGET (ledger refused: the last
 * released iterate is kept), or an error; the same status on every rank. */
int dpo_solver_run(dpo_solver_t *s, const dpo_run_opts_t *opts);

/* ---- for algorithm implementations (rank 0) ---- */
int32_t dpo_solver_dim(const dpo_solver_t *s);
int64_t dpo_solver_n(const dpo_solver_t *s);
double *dpo_solver_x(dpo_solver_t *s);          /* current iterate (length d), read-write */
dpo_oracle_t *dpo_solver_oracle(dpo_solver_t *s);
dpo_rng_t *dpo_solver_rng(dpo_solver_t *s);
struct dpo_ledger *dpo_solver_ledger(dpo_solver_t *s);
const dpo_config_t *dpo_solver_config(const dpo_solver_t *s);
/* The privacy specification the solver was created with (never NULL). */
const dpo_privacy_spec_t *dpo_solver_privacy(const dpo_solver_t *s);
/* Parameter lookups in section "algo" of the config, with defaults; errors name the key. */
int dpo_solver_param(const dpo_solver_t *s, const char *key, double def, double *out);
int dpo_solver_param_int(const dpo_solver_t *s, const char *key, int64_t def, int64_t *out);
int dpo_solver_param_str(const dpo_solver_t *s, const char *key, const char *def,
                         const char **out);
/* All three: DPO_EINVAL (an internal error naming the key) when the key is in neither of the
 * algorithm's tables (params, shared). */
/* Full-batch F and grad F at x (through the oracle). */
int dpo_solver_eval(dpo_solver_t *s, const double *x, double *F, double *g);
/* Public problem constants (from declared bounds, privacy rule 1): L, mu, and the row bounds. */
double dpo_solver_L(const dpo_solver_t *s);
double dpo_solver_mu(const dpo_solver_t *s);
/* The same with a status: DPO_EINVAL when "data.row_l2_bound" is not declared (L is never
 * taken from the data).  Either pointer may be NULL (mu alone needs no declared bound). */
int dpo_solver_constants(const dpo_solver_t *s, double *L, double *mu);

/* Rank 0: hook for the trace's eps_spent column: spent(arg) returns the privacy budget
 * spent so far (e.g. from the ledger).  Without a hook the column is "nan". */
void dpo_solver_set_spent(dpo_solver_t *s, double (*spent)(void *arg), void *arg);
/* dpo_release_t and dpo_release_fn: dpopt/privacy.h */
/* Rank 0: observe every release of the run (fn NULL: none).  The observer only reads what
 * is released anyway; a nonzero return stops the run with that status. */
void dpo_solver_set_release_observer(dpo_solver_t *s, dpo_release_fn fn, void *arg);
/* Called by the private algorithms right after a release's noise (DPO_OK without observer). */
int dpo_solver_release(dpo_solver_t *s, const dpo_release_t *r);
/* Iterations performed by the last dpo_solver_run (rank 0; broadcast to all ranks). */
int64_t dpo_solver_iters(const dpo_solver_t *s);
/* The iteration limit that run used (max_iter resolved against the plan; all ranks). */
int64_t dpo_solver_max_iter(const dpo_solver_t *s);
/* How the last run's steps met the ranks: "one-meeting" (every rank ran each step, one
 * collective a step, a trace row's sums in it: dp-sgd-rdp inside one data holder) or
 * "request" (rank 0 stepped, the others answered its requests).  All ranks. */
const char *dpo_solver_step_kind(const dpo_solver_t *s);

/* ---- checkpoints ----
 * dpo_solver_run writes, at the top of iteration t (before its trace row), the file
 *   solver.*  format, algorithm name, d, n, ranks, t, the iterate x_t, the trace file offset,
 *             the ledger position (charges, spent totals, the journal's line count and
 *             chain tag: dpo_ledger_position) and, for seeded runs only, the
 *             RNG position (an unseeded run's key is a secret and is never written: a resumed
 *             unseeded run draws fresh noise from a new OS key);
 *   algo.*    whatever the algorithm's save() writes.
 * Resume rule for the ledger: the journal may hold MORE charges than the checkpoint knows
 * (the process died after a charge and before the next checkpoint).  Those releases may have
 * happened, so they stay spent: the ledger is reopened from the whole journal, and the steps
 * after the checkpoint are charged again when they are redone (never re-spend budget that
 * the journal does not hold; a disjoint pass is closed, so a redone bucket is not counted
 * as parallel composition with its first release).  A journal with FEWER charges than the
 * checkpoint, different totals at the same count, or a chain that does not reach the
 * checkpoint's line with its tag (cut back, replaced by an older copy) is refused
 * (DPO_EFORMAT, dpo_ledger_verify_position). */
int dpo_ckpt_create(dpo_ckpt_t **c);
void dpo_ckpt_destroy(dpo_ckpt_t *c);
/* Atomic (temp file, fsync, rename, fsync of the directory). */
int dpo_ckpt_write(const dpo_ckpt_t *c, const char *path);
/* Read and verify (magic, checksum, record structure); *c owned by the caller. */
int dpo_ckpt_read(const char *path, dpo_ckpt_t **c);
/* Prepended to every key of later put/get calls (the driver sets "algo." around save/load). */
void dpo_ckpt_set_prefix(dpo_ckpt_t *c, const char *prefix);
/* Typed entries; a key may be written once.  get: DPO_EFORMAT when the key is missing or its
 * type or length differs from what the caller expects. */
int dpo_ckpt_put_f64(dpo_ckpt_t *c, const char *key, const double *v, int64_t n);
int dpo_ckpt_put_i64(dpo_ckpt_t *c, const char *key, const int64_t *v, int64_t n);
int dpo_ckpt_put_bytes(dpo_ckpt_t *c, const char *key, const void *v, int64_t n);
int dpo_ckpt_put_int(dpo_ckpt_t *c, const char *key, int64_t v);
int dpo_ckpt_put_double(dpo_ckpt_t *c, const char *key, double v);
int dpo_ckpt_get_f64(const dpo_ckpt_t *c, const char *key, double *v, int64_t n);
int dpo_ckpt_get_i64(const dpo_ckpt_t *c, const char *key, int64_t *v, int64_t n);
int dpo_ckpt_get_bytes(const dpo_ckpt_t *c, const char *key, void *v, int64_t n);
int dpo_ckpt_get_int(const dpo_ckpt_t *c, const char *key, int64_t *v);
int dpo_ckpt_get_double(const dpo_ckpt_t *c, const char *key, double *v);
/* Number of elements stored under key, -1 if absent. */
int64_t dpo_ckpt_len(const dpo_ckpt_t *c, const char *key);
/* A noise stream's place under the key stem p ("" or e.g. "admm."): p"rng_seeded" always (-1
 * no stream, 0 an OS key, 1 seeded), and for a seeded stream its key and position.  An OS key
 * is a secret and is never written: a resumed unseeded run draws from a new OS key.
 * get_rng reads the flag into *seeded (may be NULL) and, when the saved stream was seeded and
 * rng is given, sets rng to the saved position; the caller checks the flag against its run. */
int dpo_ckpt_put_rng(dpo_ckpt_t *c, const char *p, const dpo_rng_t *rng);
int dpo_ckpt_get_rng(const dpo_ckpt_t *c, const char *p, int64_t *seeded, dpo_rng_t *rng);

/* 1 if the algorithm implements save/load. */
int dpo_algo_can_checkpoint(const dpo_algo_t *a);
/* Collective: restore the solver (after dpo_solver_create, before dpo_solver_run) from the
 * checkpoint at path, read on rank 0: checks algorithm, dimensions and the ledger position
 * (rule above), restores x, t, the algorithm's state and a seeded RNG.  dpo_solver_run then
 * continues at iteration t, appending to the trace.  *trace_offset (rank 0, may be NULL)
 * gets the trace file's length at the checkpoint (truncate the trace there before appending).
 * Same status on every rank.  A checkpoint holding a noisy row count is refused unless the
 * solver was made by dpo_solver_create_resume with it (any other create drew and charged a
 * second count). */
int dpo_solver_resume(dpo_solver_t *s, const char *path, int64_t *trace_offset);
/* Rank 0, after dpo_solver_resume: the iteration the run continues at, and the journal
 * charges the checkpoint did not know (kept spent, see above). */
int64_t dpo_solver_start_iter(const dpo_solver_t *s);
int64_t dpo_solver_resume_orphans(const dpo_solver_t *s);

/* ---- reference solver for F* (non-private) ---- */
/* Collective SPMD Newton's method with backtracking: each rank forms its part of the Hessian,
 * the d x d system is distributed block-cyclically over a 2-D BLACS grid and solved with
 * ScaLAPACK pdpotrf/pdpotrs.  x: in = start, out = solution (same on all ranks). */
typedef struct {
  int64_t iters;
  double F, gnorm;
} dpo_newton_info_t;
int dpo_newton_solve(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s, double *x,
                     double gtol, int maxit, dpo_newton_info_t *info);

/* Collective, NON-PRIVATE diagnostic: largest eigenvalue of the Hessian of F at x by power
 * iteration over distributed Hessian-vector products (data-derived L). */
int dpo_hessian_lmax(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                     int maxit, double tol, double *lmax);

#ifdef __cplusplus
}
#endif
#endif
