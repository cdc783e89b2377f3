/* The audit's trials as rounds (run_audit_job.c), private to src/run/: the engine of the
 * audit kind (run_audit.c) and of dpo_audit_run (dpopt/audit.h).  Round k runs trial
 * t = rank + k P (data set t % 2, index t / 2) on every rank that has one. */
#ifndef DPO_RUN_AUDIT_H
#define DPO_RUN_AUDIT_H

#include <mpi.h>
#include <signal.h>

#include "dpopt/audit.h"
#include "dpopt/optim.h"
#include "dpopt/rng.h"
#include "optim/audit_int.h"

/* audit.tune: dpopt tune's search run in memory (run_audit_tune.c) */
typedef struct dpo__audit_tune dpo__audit_tune_t;
/* The tune's grid, candidates' and final runs' configurations, parts (not collective). */
int dpo__audit_tune_setup(const dpo_config_t *cfg, const dpo__audit_t *a, dpo__audit_tune_t **out);
/* One tune with the final part F (D or D', world w = 0 or 1): out = (chosen candidate, its
 * final model), or with out NULL the white-box observer wb sees the final run's releases; the
 * largest charge of its parts into *spent, *dspent.  The validation canary (audit.canary =
 * valid) is in the validation rows of world w instead, F unread. */
int dpo__audit_tune_trial(const dpo__audit_tune_t *T, const dpo_model_t *m, const dpo_shard_t *F,
                          int w, dpo_rng_t *rng, double *out, double *spent, double *dspent,
                          dpo__wb_obs_t *wb);
/* White box: every candidate's final run on F once, observed by wb; DPO_EINVAL naming two
 * candidates whose runs release different numbers of times (a trial's record has one length).
 * wb->nrel is then the releases of one final run. */
int dpo__audit_tune_releases(const dpo__audit_tune_t *T, const dpo_model_t *m,
                             const dpo_shard_t *F, dpo_rng_t *rng, dpo__wb_obs_t *wb);
/* After the probe trial: every key a candidate's or final run read is marked read in cfg (not
 * collective). */
void dpo__audit_tune_mark_read(const dpo__audit_tune_t *T, const dpo_config_t *cfg);
/* The geometric search's public plan: the score's Laplace scale b, eps0 and a Gaussian
 * candidate's multiplier z (NAN when the grid has none). */
void dpo__audit_tune_geo(const dpo__audit_tune_t *T, double *b, double *eps0, double *z);
void dpo__audit_tune_free(dpo__audit_tune_t *T);

typedef struct {
  MPI_Comm comm; /* borrowed */
  int rank, size;
  const dpo_config_t *cfg;
  dpo__audit_t a;
  dpo_model_t *model;
  dpo_shard_t *sh[2];
  dpo_rng_t *rng;
  dpo__wb_obs_t obs, *wb;  /* white box: the observer (wb = &obs), else NULL */
  dpo__audit_tune_t *tune; /* audit.tune, else NULL */
  int64_t N, T2, rounds;   /* trials per data set, 2N, rounds to run */
  int64_t done;            /* rounds complete (the same on every rank) */
  double alpha, spent[2];  /* this rank's largest (eps, delta) charged */
  double *mine;            /* this rank's outputs, a.dout per trial */
} dpo__audit_job_t;

/* Collective: audit.trials, audit.alpha and the construction (dpo__audit_setup); no trial. */
int dpo__audit_job_setup(dpo__audit_job_t *j, MPI_Comm comm, const dpo_config_t *cfg,
                         const dpo_privacy_spec_t *spec);
/* Collective: model, the two data sets, the noise stream, the white-box pilot, buffers. */
int dpo__audit_job_load(dpo__audit_job_t *j);
/* Not collective: this rank's trial of round j->done (if it has one); j->done + 1. */
int dpo__audit_job_round(dpo__audit_job_t *j);
/* The rounds from j->done on, the ranks meeting every half second of trials or so (rank 0's
 * stop flag, errors): block(arg) every blk rounds (0: only at the end) and at the last,
 * save(arg) every ckpt_every rounds (0: never) and before a stop; a stop comes from *stop
 * (rank 0's, may be NULL) or after stop_after rounds of this call (0: never).  The callbacks
 * are collective and may be NULL. */
typedef struct {
  int64_t blk, ckpt_every, stop_after;
  volatile sig_atomic_t *stop;
  void (*block)(void *arg);
  int (*save)(void *arg);
  void *arg;
} dpo__audit_loop_t;
/* Collective: DPO_OK with every round done, DPO_EINTR stopped (after save), or an error (the
 * same on every rank).  The engine of the audit kind's solve and of dpo_audit_run. */
int dpo__audit_job_run(dpo__audit_job_t *j, const dpo__audit_loop_t *o);
/* Collective, every round done: gather, analyse (rank 0 fills res; violation everywhere). */
int dpo__audit_job_finish(dpo__audit_job_t *j, dpo_audit_result_t *res);
/* Collective: the rounds done into rank 0's checkpoint c / back from it (c: rank 0's). */
int dpo__audit_job_save(dpo__audit_job_t *j, dpo_ckpt_t *c);
int dpo__audit_job_restore(dpo__audit_job_t *j, const dpo_ckpt_t *c);
void dpo__audit_job_free(dpo__audit_job_t *j);

#endif
