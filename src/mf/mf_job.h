/* The HAMSI / mb-GD run in phases, for the run driver's mf kind (src/run/run_mf.c): settings
 * (no data, nothing written), ratings, solve (epochs, trace rows, checkpoints), outputs.  The
 * run directory, config.ini, summary.json, FAILED, signals and exit codes are the driver's, as
 * for train.  Private to the library: programs run it with dpo_run_create and run.command = mf. */
#ifndef DPO_MF_JOB_H
#define DPO_MF_JOB_H

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/config.h"

typedef struct dpo_mf_job dpo_mf_job_t;
struct json_object;

/* Where a solve writes and how it may stop (the driver's run directory and trace). */
typedef struct {
  FILE *trace;                    /* rank 0: RUN/trace.csv, open (empty for a new run) */
  const char *ckpt_path;          /* RUN/checkpoint */
  int resumed;                    /* continue from ckpt_path */
  int64_t ckpt_every, stop_after; /* run.checkpoint_every, run.stop_after (epochs) */
  volatile sig_atomic_t *stop;    /* rank 0's flag stops the run at a checkpoint */
  int progress;                   /* 1 --progress, -1 off, 0 automatic (a terminal) */
  int quiet;
  int accepted; /* out: resuming, the checkpoint was accepted (the directory is this run's) */
} dpo_mf_io_t;

/* Collective: every mf.* setting read and checked, nothing loaded or written. */
int dpo_mf_job_create(MPI_Comm comm, const dpo_config_t *cfg, dpo_mf_job_t **job);
/* The method's name (default run directory: runs/hamsi-..., runs/mbgd-...). */
const char *dpo_mf_job_method(const dpo_mf_job_t *j);
/* Collective: the ratings file (data.train) and the mf.x0 factors. */
int dpo_mf_job_load(dpo_mf_job_t *j, const char *ratings);
/* Collective: the epochs.  DPO_OK; DPO_EINTR after a checkpoint that stopped it; DPO_ENOCONV
 * when it diverged with the last good point kept (dpo_mf_job_write writes it); an error. */
int dpo_mf_job_solve(dpo_mf_job_t *j, dpo_mf_io_t *io);
/* After a solve: the epochs done, the training RMSE (a NON-PRIVATE diagnostic) and the
 * held-out RMSE (NAN without a held-out split). */
void dpo_mf_job_result(const dpo_mf_job_t *j, int64_t *epochs, double *train_rmse,
                       double *test_rmse);
/* Rank 0, after a solve that returned DPO_OK or DPO_ENOCONV: X1.txt, X2t.txt (biases.txt)
 * into dir and mf's fields (RMSEs, epochs, best epoch, phases, ...) into sum. */
int dpo_mf_job_write(const dpo_mf_job_t *j, const char *dir, struct json_object *sum);
/* Rank 0: the report lines of `dpopt mf`, and its warning (stderr) when the model is worse
 * than the mean rating. */
void dpo_mf_job_report(const dpo_mf_job_t *j, FILE *out);
void dpo_mf_job_destroy(dpo_mf_job_t *j);

#endif
