/* Checkpoints and --resume of a run (private to src/run/; signals: dpopt/run.h). */
#ifndef DPO_RUN_CKPT_H
#define DPO_RUN_CKPT_H

#include <stdio.h>

#include "dpopt/config.h"
#include "dpopt/parties.h"

/* --resume RUN: *out = RUN/config.ini (the run's own effective settings) overridden by the
 * keys of `given` (command line and --config).  Only run.* keys may change (not run.seed or
 * run.dir); a changed privacy.*, data.*, model.*, algo.* (or any other) key is DPO_EINVAL
 * naming it.  run.dir is set to RUN.  Not collective (every rank reads the same file). */
int dpo__run_resume_config(const dpo_config_t *given, const char *run, dpo_config_t **out);

/* Rank 0, --resume RUN (run.dir): parties over one shared data file, whose rows are split by
 * rank, resume on the rank count their checkpoint was written on.  On another, the rank blocks
 * derived again would move rows from one party to another whose account did not count them
 * (an implied party a rank would also change the parties).  DPO_EINVAL naming both counts,
 * before anything is written; DPO_OK for one party, every party its own file, or no readable
 * checkpoint (refused later, naming it). */
int dpo__run_resume_ranks(const dpo_config_t *cfg, const dpo_parties_t *pt, int size);

/* Rank 0: RUN/config.ini written atomically (key = value ; origin), skipping the one-shot
 * run.resume and run.stop_after. */
int dpo__run_write_config(const dpo_config_t *cfg, const char *run_dir);

/* Rank 0, --resume: cut the trace back to its length at the checkpoint (rows written after
 * it are redone) and position the stream at the end. */
int dpo__run_trace_rewind(FILE *trace, const char *path, long long offset);

#endif
