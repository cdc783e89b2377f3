/* Private: one meeting per step inside one data holder (src/comm/oracle_step1.c).
 *
 * The request path meets the ranks three times a step: a header broadcast behind the wait
 * policy's gate, the batch, the reduction of the sums to rank 0.  When every rank belongs to
 * one party (central trust, no parties declared) and runs an identical copy of rank 0's
 * stream, every rank draws the batch itself, computes its rows' sums, and one allgather of
 * the ranks' double-double sums, folded by every rank in dpo__dd_fold's order (the order of
 * the reduction to rank 0, comm/reduce.h), gives every rank the same bits rank 0 gets on the
 * request path.  A status pair of every rank rides in the same meeting: rank 0's says whether
 * its ledger accepted the step's charge, which it made before the meeting.
 */
#ifndef DPO_COMM_STEP1_H
#define DPO_COMM_STEP1_H

#include <stdint.h>

#include "dpopt/comm.h"
#include "dpopt/rng.h"

/* Whether this oracle may run steps of one meeting: at most DPO__FOLD_RANKS ranks, global row
 * ids known, no parties, secure aggregation, party guard or per-rank noise stream.  Not
 * collective (every rank answers the same). */
int dpo__oracle_step1_able(const dpo_oracle_t *o);

/* Rank 0, before dpo__oracle_step1_begin: a trace row at every step t with t % every == 0
 * (0: none), with the held-out set's sums (held = 1); begin sends the plan to the others. */
void dpo__oracle_step1_trace_plan(dpo_oracle_t *o, int64_t every, int held);

/* Collective: rank 0's stream state (key, nonce, position) into *st on every rank, and rank
 * 0's x (d) into x: what every rank's copy of the step starts from.  Only inside one data
 * holder (the callers have checked dpo__oracle_step1_able); the caller wipes *st
 * (sodium_memzero) once its copy is made.  DPO_OK or DPO_EMPI on every rank. */
int dpo__oracle_step1_stream(const dpo_oracle_t *o, dpo_rng_t *rng, double *x, int d,
                             dpo_rng_state_t *st);

/* Collective: on = 1 (the same on every rank) allocates every rank's buffer of the ranks'
 * sums and starts the meetings; DPO_OK on every rank or the same failure on every rank. */
int dpo__oracle_step1_begin(dpo_oracle_t *o);

/* Every rank, at the top of step t, before the step moves x: the point of step t's trace
 * row when the plan has one there (a copy).  Not collective. */
void dpo__oracle_step1_point(dpo_oracle_t *o, int64_t t, const double *x);

/* Collective, every rank, one meeting (step t): the sums over the sorted global ids of batch
 * (NULL: every row) at x, status = this rank's status before the meeting (rank 0: its
 * charge); at a trace step also the full pass's sums at the step's point (and the held-out
 * set's), which rank 0 folds and keeps (dpo__oracle_step1_trace).  g_sum (d) and *n_used get
 * the same bits on every rank.  Returns DPO_EMPI, or a trace sum's failure (the first rank's:
 * the request path evaluates the row before the step), or rank 0's status, or (rank 0) an
 * error saying a worker failed (its detail comes at the finish), or (a worker) DPO_EREMOTE
 * when another rank failed; any status but DPO_OK ends the meetings. */
int dpo__oracle_step1_sums(dpo_oracle_t *o, int64_t t, const double *x, const dpo_batch_t *batch,
                           int status, double *g_sum, int64_t *n_used);

/* Rank 0, after step t's meeting: the sums of its trace row (the same bits as the request
 * path's reductions): loss and g (d) over rows, held = the held-out loss, metric and rows;
 * *secs the time this rank spent on them.  DPO_EINVAL when that meeting gave none. */
int dpo__oracle_step1_trace(const dpo_oracle_t *o, int64_t t, double *loss, double *g,
                            int64_t *rows, double held[3], double *secs);

/* The meetings end on every rank (the plan's last step, a failure after the meeting that
 * every rank meets alike).  Not collective. */
void dpo__oracle_step1_close(dpo_oracle_t *o);

/* Whether the ranks still meet, and how many steps they met in. */
int dpo__oracle_step1_live(const dpo_oracle_t *o, int64_t *steps);

/* Rank 0, at the end of its loop: when the workers still wait for a step (more = 1 and the
 * meetings live), one last meeting that tells them to stop, shaped like the meeting of step
 * t they wait in.  DPO_OK or DPO_EMPI. */
int dpo__oracle_step1_end(dpo_oracle_t *o, int64_t t, int more);

/* A worker's failure outside a meeting: its status in the next meeting (which ends the
 * meetings on every rank), and its detail when rank 0 finishes the oracle. */
void dpo__oracle_step1_fail(dpo_oracle_t *o, int rc);

#endif
