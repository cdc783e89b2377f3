/* Private: dp-sgd-rdp's state (sco_dpsgd.c), shared with its one-meeting step
 * (sco_dpsgd_step1.c), which builds a copy of it on every rank of one data holder. */
#ifndef DPO_OPTIM_SCO_DPSGD_H
#define DPO_OPTIM_SCO_DPSGD_H

#include <stdint.h>

#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "optim/sco_common.h"

enum { SCHED_THEORY, SCHED_CONSTANT, SCHED_COSINE, SCHED_STEP };

typedef struct {
  dpo__sco_t c;
  int poisson, sched;
  int64_t m, T, T0; /* T0: iterates x_{T0+1} .. x_T are averaged */
  int64_t npub;     /* the public size q, T and the default m come from (dpo__sco_public_n) */
  double count_eps, count_b; /* the noisy count's charge (0: none) */
  double z, sigma, sens, lr, mu, beta;
  double *v;        /* momentum */
  int64_t *pool; /* wor: running partial Fisher-Yates permutation of 0..n-1 */
  int64_t *ids;
  int64_t ids_cap; /* poisson: ids grows with the largest batch drawn (dpo__poisson_batch) */
  double *g, *avg;
  dpo__sco_sa_t sa; /* multi-party runs (sco_common.h) */
  double sd;        /* std of the noise on the released sum (sigma; local sqrt(ranks) sigma) */
  /* one meeting per step (sco_dpsgd_step1.c): on in this run; a step was taken (a later run
   * of the same solver keeps the request path); a worker's copy of rank 0's stream */
  int one, ran;
  dpo_rng_t *rng1;
} dpo__dpsgd_t;

/* Every rank, before the first step (dpo_algo_t.step1): rank 0 decides (want: its run's
 * options allow it; its state has taken no step; no parties; dpo__oracle_step1_able) and
 * sends the decision and *max_iter; when on, the step's public numbers, x and its stream's
 * state go to the other ranks, which build their copy of the state in *state.  Collective. */
int dpo__dpsgd_step1_begin(dpo_solver_t *s, void **state, int want, int64_t *max_iter, int *on);

/* Every rank, step t of a run with one meeting a step, after the batch ids[0..mb) was drawn
 * (brc: the draw's status): rank 0 charges ch, the meeting gives every rank the batch's sums
 * in a->g, every rank adds the noise from its stream, rank 0 shows the release to the
 * observer.  *skip = 1 (a worker): another rank ended the meetings, drop the step. */
int dpo__dpsgd_step1(dpo_solver_t *s, dpo__dpsgd_t *a, int64_t t, const dpo_charge_t *ch,
                     int brc, int64_t mb, int *skip);

#endif
