/* The run object shared by the files of src/run/ (private; the API is dpopt/run.h).
 * run_kind.c: the lifecycle calls, dispatched through the kind's ops table (run.command:
 * train, admm, audit, mf); run.c: create, train's setup (settings, run directory, journal) and
 * load, accessors, destroy; run_admm.c: the admm kind; run_audit.c: the audit kind (its
 * trials: run_audit_job.c, run_audit.h); run_mf.c: the mf kind;
 * run_solve.c: solve and evaluate; run_out.c: run directory, FAILED, summary, print;
 * run_priv.c: privacy settings, noise stream, ledger, labels; run_parties.c: parties and
 * trust modes; run_ckpt.c: --resume settings, config.ini, trace rewind, signals. */
#ifndef DPO_RUN_IMPL_H
#define DPO_RUN_IMPL_H

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "dpopt/comm.h"
#include "dpopt/data.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/run.h"

static inline int dpo__rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
static inline int dpo__size(MPI_Comm comm) {
  int s = 1;
  MPI_Comm_size(comm, &s);
  return s;
}

struct dpo__run_priv;
struct dpo__run_parties;
struct json_object;

/* A kind of run (PETSc's KSP/PC types are the model): what a command supplies; the driver
 * does the rest (lifecycle order, run directory, config.ini, FAILED, signals, checkpoint
 * removal once written, accessors).  Each hook is called once, in order, after the driver
 * checked the lifecycle position; it sets r->state and records failures (dpo__run_failed).
 * setup: every setting read and checked, the run directory claimed (dpo__run_claim), the
 * journal opened; nothing charged.  load: the data.  solve: the releases, each charged first;
 * checkpoints are the kind's (RUN/checkpoint), DPO_EINTR after one that stopped it.
 * evaluate, write: diagnostics, then model.txt and summary.json (dpo__run_finish_dir). */
typedef struct dpo__run_ops {
  const char *name; /* run.command */
  int (*setup)(dpo_run_t *r);
  int (*load)(dpo_run_t *r);
  int (*solve)(dpo_run_t *r);
  int (*evaluate)(dpo_run_t *r);
  int (*write)(dpo_run_t *r);
  void (*print)(const dpo_run_t *r, FILE *out);
  void (*destroy)(dpo_run_t *r); /* the kind's own state (r->kind) */
} dpo__run_ops_t;

extern const dpo__run_ops_t dpo__run_train_ops; /* run.c, run_solve.c, run_out.c */
extern const dpo__run_ops_t dpo__run_admm_ops;  /* run_admm.c */
extern const dpo__run_ops_t dpo__run_audit_ops; /* run_audit.c over run_audit_job.c */
extern const dpo__run_ops_t dpo__run_mf_ops;    /* run_mf.c */
/* the audit kind's one-run mode (audit.one_run): train's hooks around canaries (run_canary.c) */
extern const dpo__run_ops_t dpo__run_audit1_ops;
/* ... over a run of dpopt admm's DP-ADMM / DP-AccADMM (admm.method; run_canary_admm.c), with
 * the admm kind's hooks and the admm job (run_admm.c's, after its setup) */
extern const dpo__run_ops_t dpo__run_audit1_admm_ops;
struct dpo_admm_job *dpo__run_admm_job(const dpo_run_t *r);

/* A stage of train's hooks, labelled with the command that runs them: the one-run audit
 * (run_canary.c, the audit kind) runs train's setup, load and solve, and its failures are
 * `dpopt audit`'s.  what: "" or " (part)". */
#define DPO__TRAIN_STAGE(r, what) \
  ((r)->ops && !strcmp((r)->ops->name, "audit") ? "audit" what : "train" what)

/* lifecycle position: each call checks it is made in order */
enum { DPO__RUN_CREATED, DPO__RUN_SETUP, DPO__RUN_LOADED, DPO__RUN_SOLVED, DPO__RUN_WRITTEN };

struct dpo_run {
  MPI_Comm comm; /* a duplicate of the caller's */
  int rank, size, state;
  const dpo__run_ops_t *ops; /* the kind (run.command) */
  void *kind;                /* its own state (admm: run_admm.c) */
  const char *dir_name;      /* the default directory's stem: runs/NAME-DATE-TIME */
  /* a kind without a solver (admm): the released iterate and its account, for the accessors */
  const double *kx;
  int32_t kd;
  int64_t kiters;
  int kprivate, knoconv;
  const char *klabel;
  const char *kmetric; /* dpo_run_result's metric of a kind without a model (mf: "rmse") */
  const dpo_config_t *cfg; /* effective settings */
  dpo_config_t *merged;    /* owned: the --resume merge (cfg points to it) */
  const char *stage;
  double t_start;
  /* settings (dpo_run_setup) */
  const dpo_algo_t *algo;
  const char *train_path, *test_path, *model_name, *x0_file, *fstar_s;
  double lambda, x0v, b1, b2, fstar;
  int64_t iters, trace_every, ckpt_every, stop_after;
  /* the last released iterate kept in RUN/last_release.txt (run_solve.c): at most every
   * keep_every accepted releases or keep_seconds seconds (rank 0) */
  int64_t keep_every, keep_pending;
  double keep_seconds, keep_last;
  int resuming, quiet, progress, no_trace_loss, report_rows, clip_rows, fstar_newton;
  int no_train_eval; /* run.no_train_eval: no final pass over the training rows */
  int verbose; /* run.verbose: the accountant's and the plan's lines in the printed summary */
  dpo_load_opts_t lo;
  double test_part_lo, test_part_hi; /* dpo_run_set_rows: data.test's part (lo.part_key) */
  dpo_privacy_spec_t spec; /* every privacy.* setting, read once (run_spec.c) */
  dpo_model_t *model;
  struct dpo__run_priv *priv;
  struct dpo__run_parties *parties;
  /* run directory: claimed by this run (or passed the --resume checks), so a failure is
   * recorded in it (FAILED); never in a directory another run owns */
  char dir[512], ckpt_path[1024], keep_path[1024];
  int dir_ready;
  FILE *trace; /* rank 0 */
  /* a failure of a lifecycle call, recorded for FAILED (written by dpo_run_destroy) */
  int fail_rc;
  char fail_stage[64], fail_msg[1000];
  /* data and solve */
  dpo_shard_t *train, *test;
  dpo_oracle_t *oracle;
  dpo_solver_t *solver;
  struct dpo__agglo *agglo; /* run.agglomerate: the decision and rank 0's own comm (run_agglo.c) */
  volatile sig_atomic_t *stop;
  int run_rc;
  double t_solve;
  double t_load; /* the training file's loading alone, the slowest rank's (s) */
  /* rank 0's other phases (s), so a whole run's wall is accounted for (summary.json
   * "phases_s"): set-up before the load, the rest of the load (row checks, test file), the
   * solver's set-up (the noise calibration), the final evaluation */
  double t_setup, t_checks, t_plan, t_eval;
  double t_agglo; /* run.agglomerate's measurement and the rows' move (run_agglo.c) */
  int journal_deferred; /* rank 0: the solve's journal lines fsynced in groups (run_solve.c) */
  /* evaluate, write */
  int evaluated;
  double tr_loss, tr_metric, te_loss, te_metric, wall;
  int64_t *confusion; /* softmax with a test set: K x K on the test rows (rank 0) */
  char *summary; /* rank 0: summary.json text */
  /* the one-run audit (run_canary.c): rows added after the data are loaded (before the bias
   * column), the observer of every release and its state in each checkpoint (rank 0), and
   * its result in summary.json (rank 0); NULL in every other run.  Its admm mode
   * (run_canary_admm.c) keeps its state in release_arg and its result in summary_fn only:
   * its rows and releases go through the admm job's hooks */
  int (*rows_hook)(void *arg, struct dpo_run *r);
  void *rows_arg;
  dpo_release_fn release_fn;
  void *release_arg;
  int (*ckpt_fn)(void *arg, dpo_ckpt_t *c);
  void (*summary_fn)(const struct dpo_run *r, struct json_object *sum);
};

/* Record a failing status of a lifecycle call (stage, detail) for FAILED and print the typo
 * hints (rank 0), so a misspelled key shows even when the run fails for another reason.
 * Returns rc. */
int dpo__run_failed(dpo_run_t *r, int rc);
/* Collective, a kind's solve that returned DPO_EINTR: stopped at its checkpoint (RUN/checkpoint
 * exists: the run is SOLVED with run_rc DPO_EINTR, continue with run.resume), else failed. */
int dpo__run_kind_stopped(dpo_run_t *r, int rc);
/* run.progress into r->progress: 1 on, -1 off, left 0 when unset (automatic: progress lines
 * when stderr is a terminal); train, mf and audit read it alike.  Not collective. */
int dpo__run_read_progress(dpo_run_t *r);
/* Collective, the end of a kind's setup (admm, mf, audit): run.dir declared, every key read or
 * refused by name (cmd: "dpopt admm"), then under stage the run directory claimed
 * (dpo__run_claim); the run is SETUP, or failed. */
int dpo__run_setup_claim(dpo_run_t *r, const char *cmd, const char *stage);
/* Lifecycle order: DPO_EINVAL naming fn unless r->state == want. */
int dpo__run_expect(const dpo_run_t *r, int want, const char *fn);

/* run_out.c */
/* Collective: settle the run directory (rank 0 decides, every rank gets the name). */
int dpo__run_dir(dpo_run_t *r);
/* Collective: the run directory claimed (dpo__run_dir), its checkpoint paths set, trace.csv
 * opened (rank 0; resuming: for rewinding) and, for a new run, config.ini written. */
int dpo__run_claim(dpo_run_t *r);
/* Rank 0, once the outputs are written: the checkpoint, last_release.txt and FAILED go (a
 * finished run cannot be resumed and re-spent). */
void dpo__run_finish_dir(const dpo_run_t *r);
/* Rank 0: FAILED in the run directory, best effort; remove it. */
void dpo__run_mark_failed(const dpo_run_t *r);
void dpo__run_unmark_failed(const dpo_run_t *r);
/* Rank 0, the run's last write: config.ini again (keys the run resolved on the way are in it
 * now) and summary.json from sum (consumed; kept as r->summary), both atomically. */
int dpo__run_write_summary(dpo_run_t *r, struct json_object *sum);
/* Not collective: DPO_EINVAL naming the key when run.keep_every / run.keep_seconds are set
 * for a kind that keeps no last release (admm, mf: dpopt CMD). */
int dpo__run_refuse_keep(const dpo_run_t *r, const char *cmd);
/* Collective: the final outputs of dpo_run_write. */
int dpo__run_write_outputs(dpo_run_t *r);
/* train's hooks (run.c, run_solve.c, run_out.c) */
int dpo__train_setup(dpo_run_t *r);
int dpo__train_load(dpo_run_t *r);
int dpo__train_solve(dpo_run_t *r);
int dpo__train_evaluate(dpo_run_t *r);
int dpo__train_write(dpo_run_t *r);
void dpo__train_print(const dpo_run_t *r, FILE *out);
/* 1: the exact training row count is private (a private run under add-remove neighbours
 * with no declared public size): every output labels it a non-private diagnostic. */
int dpo__run_n_private(const dpo_run_t *r);

#endif
