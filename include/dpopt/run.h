/* A training run: the privacy guarantee in one library object (what `dpopt train` does, for
 * any MPI program).  PETSc-style lifecycle on an explicit communicator:
 *
 *   dpo_run_create(comm, cfg, &run);   settings: cfg (dpopt train's keys; --resume merged)
 *   dpo_run_setup(run);                validate everything that needs no data, then claim the
 *                                      run directory and open the privacy ledger's journal
 *   dpo_run_load(run);                 training data (one file or one per party), row bounds,
 *                                      held-out data
 *   dpo_run_solve(run);                the algorithm through the solver driver: its release
 *                                      plan is declared and checked, every charge journalled
 *   dpo_run_evaluate(run);             final training / held-out metrics
 *   dpo_run_write(run);                model.txt, summary.json, config.ini in the run directory
 *   dpo_run_destroy(run);
 *
 * The kind of run is the setting run.command: train (the default; the keys of dpopt train),
 * admm (consensus ADMM and DP-(Acc)ADMM; the keys of dpopt admm, data.train its FILE), audit
 * (the empirical privacy audit of dpopt audit: its trials are the solve, its analysis the
 * evaluate, dpo_run_audit_result the result; synthetic data, so no budget) or mf (HAMSI /
 * mb-GD matrix factorization; the keys of dpopt mf, data.train its RATINGS; the model is
 * X1.txt, X2t.txt, biases.txt instead of model.txt).  Every kind has this life cycle and
 * writes the same run directory (config.ini, trace.csv, the model, summary.json,
 * ledger.jsonl for private runs, FAILED, a checkpoint while stopped);
 * what follows describes train where the kinds differ (doc/design.md, "One run driver").
 *
 * Everything privacy-relevant happens inside: the private / seeded decision (a seeded run is
 * labelled NOT PRIVATE everywhere), per-example clipping, declared row bounds, the ledger on
 * rank 0 of comm (budget, accountant, neighbours, party accounts, trust modes), checkpoints and
 * resumption (charges made before an interruption stay spent).  The caller cannot bypass the
 * ledger: the only iterate it can read is the one the algorithm released.
 *
 * Collective calls are made by every rank of comm and return the same status on each
 * (dpo_agree).  The library never uses MPI_COMM_WORLD: comm may be any sub-communicator
 * (examples/ex2_embed.c).  Messages go to stderr on rank 0 of comm unless run.quiet; the
 * one-screen summary (dpo_run_print) only where the caller asks.  A run that fails after its
 * directory was claimed leaves FAILED there (stage, reason, exit status) when destroyed.
 */
#ifndef DPOPT_RUN_H
#define DPOPT_RUN_H

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/audit.h"
#include "dpopt/config.h"
#include "dpopt/kernels.h"
#include "dpopt/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpo_run dpo_run_t;

/* Collective (duplicates comm; the run's traffic never mixes with the caller's).  cfg holds
 * the settings (borrowed: it must outlive the run; getters mark keys read).  With run.resume =
 * RUN the effective settings are RUN/config.ini overridden by cfg, which may change only run.*
 * keys other than run.seed and run.dir (DPO_EINVAL naming the key).  Applies run.quiet to the
 * messages.  Charges nothing, writes nothing. */
int dpo_run_create(MPI_Comm comm, const dpo_config_t *cfg, dpo_run_t **run);

/* Not collective: with privacy.eps and no algo.name (no run.resume or parties.n; privacy.trust
 * unset, central or secagg), set in cfg the keys of the method measured best at that budget (method,
 * relation, clip, batches, schedule; src/run/run_auto.c), never changing a key that is set,
 * and return why (one sentence); else NULL and cfg unchanged.  dpo_run_create calls it on its
 * own copy of the settings, so `dpopt train` and every embedding program get the same plan. */
const char *dpo_run_auto_algo(dpo_config_t *cfg);

/* Collective.  Reads and validates every setting before any data are read or file written:
 * data.*, model.*, algo.* (the algorithm, its checkpoint support, gtol refused for private
 * algorithms), privacy.* (eps > 0 and finite, delta, clip, accountant, neighbours; a budget
 * for a non-private algorithm is refused), parties and trust mode, and what the release plan
 * needs that does not depend on n (a public sensitivity source, declared bounds).  Creates
 * rank 0's noise stream (secure, or seeded: NOT private).  Warns (rank 0) about misspelled
 * keys, also when it fails.  Then claims the run directory (run.dir: new or empty; default
 * runs/ALGO-DATE-TIME; resuming: RUN must hold a checkpoint), writes config.ini and the trace
 * header, and opens the ledger journal ledger.jsonl (resuming: reopens it; its charges stay
 * spent).  Charges nothing. */
int dpo_run_setup(dpo_run_t *run);

/* Collective.  Loads the training data (data.train split over the ranks, or each party's own
 * file over its ranks: parties.data / party.K.data), enforces the declared row bounds (reject
 * or clip; which row is never shown for a private algorithm unless data.report_rows), loads
 * data.test in the training feature space.  Charges nothing; nothing leaves a rank. */
int dpo_run_load(dpo_run_t *run);

/* Not collective; after dpo_run_setup, before dpo_run_load (same arguments on every rank).
 * Train on the rows of data.train whose keyed draw u(key, row) falls in [lo, hi), and score on
 * data.test's rows in [test_lo, test_hi) (test_hi = test_lo: all of them): a partition by
 * position and a secret key, never by content (dpo_load_opts_t.part_key; dpopt tune's
 * parallel composition).  The key is not written anywhere by the run. */
int dpo_run_set_rows(dpo_run_t *run, uint64_t key, double lo, double hi, double test_lo,
                     double test_hi);

/* Collective.  Optional run.fstar = newton reference (non-private diagnostic), then creates the
 * oracle and solver (the algorithm declares its release plan; the driver refuses options that
 * disagree with it), restores the checkpoint when resuming, and runs: every release is
 * charged to the ledger before it is made.  Returns DPO_OK, DPO_EBUDGET (the ledger refused a
 * charge: the last released iterate is kept and the run may still be evaluated and written),
 * DPO_EINTR (the stop flag was raised: a checkpoint was written, continue with run.resume) or
 * an error. */
int dpo_run_solve(dpo_run_t *run);
/* 1 when dpo_run_solve ended the run's iterations (DPO_OK, or DPO_EBUDGET from the ledger)
 * so that it may be evaluated and written; 0 when it failed, e.g. DPO_EBUDGET from a budget
 * store that refused the run before its first release (dpopt admm's parties' stores). */
int dpo_run_solved(const dpo_run_t *run);

/* Collective, after dpo_run_solve returned DPO_OK or DPO_EBUDGET.  The training loss and
 * metric (non-private diagnostics; withheld under the local / shares trust modes, which keep
 * exact training sums from the coordinator) and the held-out loss and metric (data.test).
 * Charges nothing: evaluates only the released iterate. */
int dpo_run_evaluate(dpo_run_t *run);

/* Collective, after dpo_run_solve (and dpo_run_evaluate, else the metrics are null).  Rank 0
 * writes model.txt (with the privacy label), config.ini and summary.json atomically in the run
 * directory and removes the checkpoint, so a finished run cannot be resumed (and re-spent). */
int dpo_run_write(dpo_run_t *run);

/* Not collective (rank 0 of comm prints, others do nothing): the human summary of a written
 * run (directory, algorithm, status, privacy label and spending, release plan, parties,
 * metrics), as `dpopt train` prints it. */
void dpo_run_print(const dpo_run_t *run, FILE *out);

/* Not collective.  Frees the run; a run that failed after claiming its directory leaves FAILED
 * there (rank 0), so an empty or short journal is never mistaken for a finished run. */
void dpo_run_destroy(dpo_run_t *run);

/* Not collective: stop the run cleanly (checkpoint, then DPO_EINTR from dpo_run_solve) when
 * *flag becomes non-zero, e.g. from a signal handler; rank 0's flag decides for every rank.
 * Call before dpo_run_solve.  NULL: never. */
void dpo_run_set_stop(dpo_run_t *run, volatile sig_atomic_t *flag);
/* Process-wide SIGTERM / SIGINT handler that only raises dpo_run_signal_flag() (a worker rank
 * must not die on the signal the launcher forwards; it waits for rank 0).  restore puts back
 * the previous dispositions. */
void dpo_run_signals_install(void);
void dpo_run_signals_restore(void);
volatile sig_atomic_t *dpo_run_signal_flag(void);

/* ---- accessors (not collective) ---- */
/* The effective configuration (cfg, or the merge with RUN/config.ini when resuming). */
const dpo_config_t *dpo_run_config(const dpo_run_t *run);
/* What the run is doing ("train", "train (loading data)", ...), for error messages. */
const char *dpo_run_stage(const dpo_run_t *run);
/* The run directory ("" before dpo_run_setup claimed it). */
const char *dpo_run_dir(const dpo_run_t *run);
/* "PRIVATE: (eps=..., delta=...) budget, ...", "NOT PRIVATE: seeded run ..." or "NOT
 * PRIVATE: algorithm ... adds no noise" (after dpo_run_setup; "" before). */
const char *dpo_run_label(const dpo_run_t *run);
/* 1 when the run's outputs carry a differential-privacy guarantee (private algorithm, not
 * seeded), after dpo_run_setup. */
int dpo_run_is_private(const dpo_run_t *run);
/* The objective's model (after dpo_run_setup). */
const dpo_model_t *dpo_run_model(const dpo_run_t *run);
/* Rank 0, after dpo_run_solve: the released iterate (length *d = dpo_model_dim: the features
 * plus the intercept, times K for softmax, class-major), else NULL. */
const double *dpo_run_x(const dpo_run_t *run, int32_t *d);
/* After dpo_run_solve: "accuracy" (binary and class labels) or "mse", the losses and metrics of
 * dpo_run_evaluate (NAN when not computed; values on rank 0 only) and the iterations that
 * ran.  DPO_EINVAL before dpo_run_solve. */
typedef struct {
  const char *metric;
  double train_loss, train_metric; /* non-private diagnostics */
  double test_loss, test_metric;   /* held-out data */
  int64_t iters;                   /* iterations that ran */
  int budget_exhausted;            /* dpo_run_solve returned DPO_EBUDGET */
  int not_converged;               /* admm consensus stopped at admm.maxit (its last z kept) */
} dpo_run_result_t;
int dpo_run_result(const dpo_run_t *run, dpo_run_result_t *res);
/* An audit run (run.command = audit), after dpo_run_evaluate: its result (complete on rank
 * 0; res->violation on every rank).  DPO_EINVAL for another kind or before. */
int dpo_run_audit_result(const dpo_run_t *run, dpo_audit_result_t *res);
/* Rank 0, after dpo_run_write: summary.json's text, else NULL. */
const char *dpo_run_summary_json(const dpo_run_t *run);

/* The one-run audit (dpopt audit --one-run; Steinke, Nasr and Jagielski 2023): the audit
 * kind with audit.one_run = 1 (run.command = audit) trains the run the settings describe (its
 * data, algorithm, budget, schedule; logistic regression, one data holder) with
 * audit.canaries canary rows added, each included with probability 1/2, observed release by
 * release; the eps lower bound holds with confidence 1 - audit.alpha.  The run is train's
 * (run directory, journal, checkpoints, --resume); src/run/run_canary.c says how.
 * After dpo_run_evaluate: its result (every rank).  DPO_EINVAL for another run or before. */
typedef struct {
  char algorithm[32];
  double claimed_eps, claimed_delta, eps_lb, alpha;
  int64_t canaries, included, guesses, correct, releases;
  int64_t grid_r[4], grid_v[4]; /* each guess count tried and its right guesses */
  int add_remove, gaussian, seeded, violation;
} dpo_audit1_result_t;
int dpo_run_audit1_result(const dpo_run_t *run, dpo_audit1_result_t *res);
/* The result as a table, what the audit assumed and the verdict; tag (may be NULL) is
 * appended to the table's row. */
void dpo_audit1_print(FILE *out, const dpo_audit1_result_t *res, const char *tag);

/* Not collective: privacy.clip = none | l1:C | l2:C (C > 0) into *c; *has = 0 for none. */
int dpo_run_parse_clip(const dpo_config_t *cfg, dpo_clip_t *c, int *has);

#ifdef __cplusplus
}
#endif
#endif
