/* Checkpoints, --resume and signals for `dpopt train` (private to src/cli/). */
#ifndef DPO_TRAIN_CKPT_H
#define DPO_TRAIN_CKPT_H

#include <signal.h>
#include <stdio.h>

#include "cli/cli.h"
#include "dpopt/config.h"

/* Install the SIGTERM / SIGINT handler on this rank (every rank: a worker must not die on
 * the signal mpirun or the scheduler forwards; it waits for rank 0's decision).  The handler
 * only sets the flag returned by dpo_train_stop_flag(); rank 0 reads it between steps. */
void dpo_train_signals_install(void);
/* Restore the previous dispositions. */
void dpo_train_signals_restore(void);
volatile sig_atomic_t *dpo_train_stop_flag(void);

/* --resume RUN: *out = RUN/config.ini (the run's own effective settings) overridden by the
 * keys of `given` (command line and --config).  Only run.* keys may change (not run.seed or
 * run.dir); a changed privacy.*, data.*, model.*, algo.* (or any other) key is DPO_EINVAL
 * naming it.  run.dir is set to RUN.  Not collective (every rank reads the same file). */
int dpo_train_resume_config(const dpo_config_t *given, const char *run, dpo_config_t **out);

/* Rank 0: RUN/config.ini written atomically (key = value ; origin), skipping the one-shot
 * run.resume and run.stop_after. */
int dpo_train_write_config(const dpo_config_t *cfg, const char *run_dir);

/* Rank 0, --resume: cut the trace back to its length at the checkpoint (rows written after
 * it are redone) and position the stream at the end. */
int dpo_train_trace_rewind(FILE *trace, const char *path, long long offset);

#endif
