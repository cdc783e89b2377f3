/* Private: the oracle's state and the pieces src/comm/oracle.c shares with
 * src/comm/fetch.c (rows fetched to rank 0). */
#ifndef DPO_COMM_ORACLE_INT_H
#define DPO_COMM_ORACLE_INT_H

#include <stdint.h>

#include "comm/reduce.h"
#include "dpopt/comm.h"
#include "dpopt/parties.h"

#define DPO__IDS_PIECE 65536

enum { DPO__REQ_SUMS = 1, DPO__REQ_METRIC = 2, DPO__REQ_FINISH = 3, DPO__REQ_ROWS = 4 };
/* request header: {type, flag, m, status (FINISH; secagg SUMS: the word width), noise kind, noise shares, noise scale (bits), sigma,
 * local sampling m, local sampling n, the coordinator's charge (bits; secagg: what the party
 * guard compares its own price with), its disjoint pass + 1 (0: none)} (m = DPO__M_LOCAL:
 * party-local Poisson sampling) */
#define DPO__HDR 12
#define DPO__M_ALL (-1)   /* m: every row of every rank (the full pass) */
#define DPO__M_LOCAL (-2) /* m: party-local Poisson sampling */

struct dpo_oracle {
  MPI_Comm comm;
  int rank, size;
  const dpo_model_t *model;
  const dpo_shard_t *shard, *heldout;
  int32_t d;       /* parameters: dpo_model_dim(model, shard->d) (K d for softmax) */
  int n_public;    /* shard->n_public: rank_n holds only this rank's count (others -1) */
  int64_t n_global, heldout_nglobal;
  int clipping;
  dpo_clip_t clip;
  double *rownorm; /* per local row, matching clip.norm (NULL without clipping) */
  double *x;       /* request point (workers receive into it) */
  double *g;       /* chunk gradient scratch */
  dpo__dd_t *acc;  /* d + 2 accumulators + status */
  int64_t *ids, *lrows;
  int64_t ids_cap;
  int finished;
  int remote_fail;   /* rank 0: status of a failure a worker reported */
  int local_fail;    /* first local failure (its detail is kept in local_msg) */
  char local_msg[512];
  dpo_oracle_stats_t st;
  /* multi-party runs */
  int64_t *rank_n;          /* [size]: rows of every rank (gathered at create) */
  dpo_rng_t *noise_rng;     /* this rank's own noise stream (borrowed; local/shares modes) */
  const dpo_parties_t *parties; /* rank 0, borrowed */
  dpo_secagg_t *secagg;     /* every rank, borrowed (trust secagg) */
  int64_t *lids, lcap;      /* party-local Poisson sample of this rank's rows (local ids) */
  struct dpo_guard *guard;  /* ranks other than 0, borrowed (trust secagg): the party guard */
  unsigned char *pass_used; /* guard: local rows used in the current disjoint pass */
  int64_t pass;             /* guard: that pass + 1 (0: none yet) */
  /* one meeting per step (comm/step1.h): every rank's sums, the steps met, whether the ranks
   * still meet (0: a meeting failed, or the run's steps are over) */
  dpo__dd_t *parts;
  int ws_k1; /* the reductions' fold gathers into parts (ws_k1 pairs a rank; 0: in pieces) */
  int64_t s1_steps;
  int s1_live, s1_pending; /* pending: a worker's failure the next meeting tells */
  /* trace rows in the meetings: every s1_every steps (0: none) the full pass's sums at
   * s1_xtr (and the held-out set's with s1_held) ride in the step's meeting; s1_send is this
   * rank's part then, s1_tr (rank 0) the folded trace block of step s1_tr_t */
  int64_t s1_every, s1_xt_t, s1_tr_t;
  int s1_held;
  double *s1_xtr, s1_tr_time;
  dpo__dd_t *s1_send, *s1_tr;
};

static inline double dpo__now(void) { return MPI_Wtime(); }
/* oracle_rows.c (below oracle.c and fetch.c, which both use it): */
/* First local failure of this rank (its detail kept for the end of the run). */
void dpo__note_local_fail(dpo_oracle_t *o, int rc);
/* o->ids / o->lrows hold at least m ids. */
int dpo__ensure_ids(dpo_oracle_t *o, int64_t m);
/* Every rank: body of a ROWS request, the ids already in o->ids on rank 0, which gets the
 * records of rank r at (*recv)[(*displ)[r] .. (*displ)[r + 1]) (it frees both). */
int dpo__serve_rows(dpo_oracle_t *o, int64_t m, double **recv, int64_t **displ);

/* oracle_rows.c, collective, at create: rank 0's workspace for the fold of the reductions
 * to it (o->parts, up to DPO__WS_BYTES), the same choice on every rank; DPO_OK or DPO_EMPI. */
#define DPO__WS_BYTES ((size_t)64 << 20)
int dpo__oracle_ws_setup(dpo_oracle_t *o);
/* oracle_rows.c: the meetings' buffers and the fold's workspace freed (no workspace). */
void dpo__oracle_step1_free(dpo_oracle_t *o);

/* oracle.c: this rank's part of a SUMS request at o->x: acc[0..d-1] = g, acc[d] = loss,
 * acc[d+1] = rows; m ids in o->ids, DPO__M_ALL (every row) or DPO__M_LOCAL (sampled by the
 * party itself at rate sm / sn).  Not collective. */
int dpo__local_sums(dpo_oracle_t *o, int64_t m, int64_t sm, int64_t sn);

/* A request's header from rank 0 to all (every request, from oracle.c and fetch.c alike): the
 * workers wait here between requests while rank 0 steps, behind the wait policy's gate
 * (comm/wait.h), so every rank passes the same gates.  MPI_SUCCESS or an MPI error. */
int dpo__oracle_hdr_bcast(dpo_oracle_t *o, int64_t hdr[DPO__HDR]);
/* oracle.c: rank 0's checks before a request is broadcast (x finite, rank 0, reopens a
 * session). */
int dpo__check_req(dpo_oracle_t *o, const char *fn, const double *x);

/* oracle_noise.c: every rank's part of a local / shares SUMS request after its local sums
 * (status lrc): its party guard's pricing and charge, its noise, the round withheld everywhere
 * when any rank failed.  Returns this rank's status. */
int dpo__local_round(dpo_oracle_t *o, const int64_t hdr[DPO__HDR], int lrc);
/* oracle_noise.c: the party guard's check of a batch charged as one of disjoint pass hdr[11]
 * - 1: none of this rank's rows was in an earlier batch of the pass. */
int dpo__guard_pass(dpo_oracle_t *o, const int64_t hdr[DPO__HDR]);

#endif
