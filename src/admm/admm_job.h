/* The ADMM run in phases, for the run driver's admm kind (src/run/run_admm.c): settings (no
 * data, nothing written), data, solve (ledger, noise, checkpoints), model.  The run directory,
 * config.ini, summary.json, FAILED, signals and exit codes are the driver's, as for train.
 * Private to the library: programs run it with dpo_run_create and run.command = admm. */
#ifndef DPO_ADMM_JOB_H
#define DPO_ADMM_JOB_H

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/admm.h"

typedef struct dpo_admm_job dpo_admm_job_t;

/* Where a solve writes and how it may stop (the driver's run directory and trace). */
typedef struct {
  const char *dir;                /* RUN: ledger.jsonl (private methods), checkpoint */
  FILE *trace;                    /* rank 0: RUN/trace.csv, open (rows after its header) */
  int resumed;                    /* continue from RUN/checkpoint */
  int64_t ckpt_every, stop_after; /* run.checkpoint_every, run.stop_after */
  volatile sig_atomic_t *stop;    /* rank 0's flag stops the run at a checkpoint */
  int accepted;                   /* out: resuming, the checkpoint and journal were accepted */
} dpo_admm_io_t;

/* What the run did, for summary.json (rank 0's values on rank 0). */
typedef struct {
  const char *method, *model, *accountant, *sigma_rule, *trust;
  int priv, seeded;                /* noised method; seeded (NOT private) */
  int64_t n, iters, releases;
  int32_t d;
  double lambda, eps, delta, sigma, spent_eps, spent_delta;
  double objective, test_metric;   /* NAN when withheld or absent */
  const char *test_metric_name;
} dpo_admm_result_t;

/* Collective: every setting read and checked (method, trust, budget store fits), nothing
 * loaded or written.  checkpoints: 1 when checkpoints are asked for, 2 for a resume (refused,
 * naming why, for the runs that cannot write them: DP-ADMM under local trust; 0: neither). */
int dpo_admm_job_create(MPI_Comm comm, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                        int checkpoints, dpo_admm_job_t **job);
/* The method's name (default run directory, messages) and whether it can checkpoint. */
const char *dpo_admm_job_method(const dpo_admm_job_t *j);
/* Collective: the training data (data.train) and data.test. */
int dpo_admm_job_load(dpo_admm_job_t *j);
/* Collective: the run; *stop tells how its iterations ended (DPO_OK, DPO_ENOCONV, DPO_EBUDGET).
 * Returns DPO_EINTR after a checkpoint that stopped it.  The report lines go to a buffer
 * (dpo_admm_job_report), the trace rows to io->trace. */
int dpo_admm_job_solve(dpo_admm_job_t *j, dpo_admm_io_t *io, int *stop);
/* Rank 0, after a solve: the report text, the result, the solution and its model comment. */
const char *dpo_admm_job_report(const dpo_admm_job_t *j);
const dpo_admm_result_t *dpo_admm_job_result(const dpo_admm_job_t *j);
const double *dpo_admm_job_x(const dpo_admm_job_t *j);
/* Every rank, once the run is complete: its own checkpoint parts removed (consensus). */
void dpo_admm_job_finish(const dpo_admm_job_t *j, const char *dir);
/* Rank 0: write the solution as a model file (z, or x_T) with its privacy label. */
int dpo_admm_job_write_model(const dpo_admm_job_t *j, const char *path);
void dpo_admm_job_destroy(dpo_admm_job_t *j);

/* The one-run audit's hooks (src/run/run_canary_admm.c), set before dpo_admm_job_load: rows
 * (every rank, collective in effect: its status is agreed) changes the loaded shards before
 * the solution is sized (the canary rows and columns; last: this is the last rank); observe
 * (rank 0) sees every central noised gradient of dpadmm / dpaccadmm as released
 * (dpo_dpadmm_opts_t.observe).  Neither changes a noise scale, a charge or a setting. */
typedef int (*dpo_admm_rows_fn)(void *arg, dpo_shard_t *train, dpo_shard_t *test, int last);
void dpo_admm_job_set_audit(dpo_admm_job_t *j, dpo_admm_rows_fn rows, dpo_release_fn observe,
                            void *arg);
/* The public settings the audit's canaries are shaped by: the L2 clip (privacy.clip, NaN when
 * unset) and the declared L2 row bound (data.row_l2_bound, NaN when unset). */
void dpo_admm_job_bounds(const dpo_admm_job_t *j, double *clip, double *b2);

/* admm_ckpt.c: rank 0, the DP-ADMM state with the trace offset, the ledger position and a
 * seeded stream's position (an OS key is never written) saved to path / read back and
 * checked against the run (method, dimensions, ranks, journal).  *st's arrays are owned by
 * the caller (dpo_admm_state_free). */
int dpo__admm_ckpt_save(const char *path, const char *method, int ranks,
                        const dpo_dpadmm_state_t *st, FILE *trace, const dpo_ledger_t *L,
                        const dpo_rng_t *rng);
int dpo__admm_ckpt_load(const char *path, const char *method, int ranks, int32_t d, int32_t p,
                        dpo_dpadmm_state_t *st, FILE *trace, const dpo_ledger_t *L,
                        dpo_rng_t *rng);
void dpo__admm_state_free(dpo_dpadmm_state_t *st);

#endif
