/* Agglomeration of a train run onto rank 0 (run_agglo.c; PETSc's PCTELESCOPE for coarse grids
 * is the model): when a step is too small for its ranks' meetings to pay, the ranks of one data
 * holder send their rows to rank 0, which solves alone; the others sleep until it is done. */
#ifndef DPO_RUN_AGGLO_H
#define DPO_RUN_AGGLO_H

#include <mpi.h>
#include <stdint.h>

struct dpo_run;

/* The cost model's facts (per step) and its prediction: T(P) = serial + work / P + meetings
 * * cost, T(1) = serial + work; the serial part (the noise, the ledger's charge) is the same
 * on both sides and cancels, so it is not asked for. */
typedef struct {
  int P;              /* ranks */
  double rows;        /* rows a step touches (its batch) */
  double width;       /* entries a row's gradient touches (the public width d) */
  double entry_s;     /* seconds per entry, measured under the present load */
  double meetings;    /* meetings of the ranks a step */
  double meet_s;      /* seconds a meeting costs beyond the work */
  int cores_free;     /* the wait policy's probe saw every rank with (nearly) a core of its
                       * own: meetings cost microseconds, the ranks are kept unmeasured */
} dpo__agglo_facts_t;

/* Pure: the predicted seconds of a step's parallel part at 1 and at P ranks, and the count with
 * the least (1 or P; P on a tie: agglomeration must win to be chosen).  Returns that count.
 * With cores_free: P, and no prediction (NaN; the other figures are not read). */
int dpo__agglo_choose(const dpo__agglo_facts_t *f, double *t1, double *tP);

/* Not collective, in train's settings: run.agglomerate (auto | off | on) and
 * run.agglomerate_max_mb, read into the run. */
int dpo__agglo_settings(struct dpo_run *r);
/* Not collective, after the parties' set-up: run.agglomerate = on refused (naming the key) for
 * a run that cannot agglomerate (parties, a trust mode other than central, checkpoints, a
 * resume). */
int dpo__agglo_check(const struct dpo_run *r);
/* Collective, before the solve: decide (auto: measure and predict), and when agglomerating move
 * every rank's rows to rank 0, whose r->comm becomes a communicator of itself.  N: the
 * training set's public size (0: none, the ranks are kept).  On the other ranks *idle is set:
 * they skip the solve and evaluation (dpo__agglo_end). */
int dpo__agglo_begin(struct dpo_run *r, double N, int *idle);
/* Rank 0 of an agglomerated run, after its solve or evaluation: r->comm back to the whole
 * run's and rc sent to the waiting ranks.  Other ranks: wait (sleeping) for rank 0's rc, which
 * they return (an error of rank 0's under a message saying so; the caller records it).
 * Collective over the whole run; a run that did not agglomerate returns rc. */
int dpo__agglo_end(struct dpo_run *r, int rc);
/* Rank 0 of an agglomerated run, before its evaluation: r->comm its own again. */
void dpo__agglo_resume(struct dpo_run *r);
/* 1 on the ranks that wait while rank 0 solves alone. */
int dpo__agglo_idle(const struct dpo_run *r);
/* The communicator the solve ran on: rank 0's own after agglomerating, else r->comm. */
MPI_Comm dpo__agglo_solve_comm(const struct dpo_run *r);
/* Rank 0: summary.json's ranks_solving, agglomerated_from, agglomerate_reason. */
struct json_object;
void dpo__agglo_summary(const struct dpo_run *r, struct json_object *sum);
void dpo__agglo_destroy(struct dpo_run *r);

#endif
