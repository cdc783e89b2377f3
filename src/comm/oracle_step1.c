/* One meeting per step inside one data holder (see comm/step1.h). */
#include "comm/step1.h"

#include <stdlib.h>
#include <string.h>

#include "comm/oracle_int.h"
#include "comm/reduce.h"
#include "comm/wait.h"
#include "dpopt/status.h"

int dpo__oracle_step1_begin(dpo_oracle_t *o) {
  int rc = DPO_OK;
  const size_t k1 = (size_t)o->d + 3;
  if (!o->parts && !(o->parts = malloc((size_t)o->size * k1 * sizeof *o->parts)))
    rc = dpo_err(DPO_ENOMEM, "oracle: no memory for %d ranks' %d sums", o->size, (int)o->d);
  rc = dpo_agree(o->comm, rc);
  o->s1_live = !rc;
  o->s1_steps = 0;
  o->s1_pending = DPO_OK;
  return rc;
}

/* The meeting: every rank's d + 3 pairs to every rank, waited for as the policy says (the
 * sleeping wait polls the allgather itself: the meeting is the gate). */
static int dpo__step1_meet(dpo_oracle_t *o) {
  const int n = 2 * (o->d + 3);
  if (dpo__wait_policy(o->comm) != DPO__WAIT_SLEEP) {
    DPO_MPI_CHECK(MPI_Allgather(o->acc, n, MPI_DOUBLE, o->parts, n, MPI_DOUBLE, o->comm));
    return DPO_OK;
  }
  MPI_Request rq;
  DPO_MPI_CHECK(MPI_Iallgather(o->acc, n, MPI_DOUBLE, o->parts, n, MPI_DOUBLE, o->comm, &rq));
  return dpo__wait_req(&rq);
}

/* This rank's part before the meeting: its rows' sums, or zeros and its failure. */
static int dpo__step1_local(dpo_oracle_t *o, const double *x, const dpo_batch_t *b, int st) {
  const int32_t d = o->d;
  int64_t m = DPO__M_ALL;
  memcpy(o->x, x, (size_t)d * sizeof *x);
  if (!st && b) {
    m = b->m;
    st = dpo__ensure_ids(o, m > 0 ? m : 1);
    if (!st && m > 0) memcpy(o->ids, b->ids, (size_t)m * sizeof *o->ids);
  }
  if (!st) st = o->s1_pending; /* a failure after the last meeting (dpo__oracle_step1_fail) */
  if (!st) st = dpo__local_sums(o, m, 0, 0);
  if (st) {
    if (o->rank) dpo__note_local_fail(o, st);
    for (int32_t j = 0; j < d + 2; j++) o->acc[j].hi = o->acc[j].lo = 0.0;
  }
  o->acc[d + 2].hi = (double)st;
  o->acc[d + 2].lo = 0.0;
  return st;
}

int dpo__oracle_step1_sums(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch,
                           int status, double *g_sum, int64_t *n_used) {
  const int32_t d = o->d;
  if (!o->s1_live) return dpo_err(DPO_EINVAL, "oracle: a step's meeting after the meetings ended");
  double t0 = dpo__now();
  int lrc = dpo__step1_local(o, x, batch, status);
  double t1 = dpo__now();
  o->st.t_compute += t1 - t0;
  int rc = dpo__step1_meet(o);
  o->st.t_comm += dpo__now() - t1;
  if (rc) {
    o->s1_live = 0;
    return rc;
  }
  o->st.evals++;
  /* the first failing rank in rank order (rank 0's own status first) */
  int first = -1, st = DPO_OK;
  for (int r = 0; r < o->size && first < 0; r++) {
    st = (int)o->parts[(size_t)r * (size_t)(d + 3) + (size_t)d + 2].hi;
    if (st != DPO_OK) first = r;
  }
  if (first >= 0) {
    o->s1_live = 0;
    memset(g_sum, 0, (size_t)d * sizeof *g_sum);
    if (first == o->rank) return lrc;
    if (o->rank != 0)
      return dpo_err(DPO_EREMOTE, "rank %d ended the step's meeting (%s)", first,
                     dpo_strerror(st));
    o->remote_fail = st;
    return dpo_err(st, "a worker rank failed (%s); its detail is reported when the run "
                   "finishes", dpo_strerror(st));
  }
  dpo__dd_fold(o->parts, o->size, d + 3, o->acc);
  for (int32_t j = 0; j < d; j++) g_sum[j] = o->acc[j].hi;
  int64_t used = (int64_t)o->acc[d + 1].hi;
  if (n_used) *n_used = used;
  /* as on the request path: rank 0 counts the batch, a worker its own rows */
  o->st.rows += o->rank == 0 ? used
                             : (int64_t)o->parts[(size_t)o->rank * (size_t)(d + 3) + d + 1].hi;
  o->s1_steps++;
  return DPO_OK;
}

void dpo__oracle_step1_close(dpo_oracle_t *o) {
  if (o) o->s1_live = 0;
}

int dpo__oracle_step1_live(const dpo_oracle_t *o, int64_t *steps) {
  if (steps) *steps = o ? o->s1_steps : 0;
  return o && o->s1_live;
}

int dpo__oracle_step1_end(dpo_oracle_t *o, int more) {
  if (!o || o->rank != 0 || !o->s1_live || !more) {
    if (o) o->s1_live = 0;
    return DPO_OK;
  }
  /* zeros and rank 0's stop: the workers leave their loop for the oracle's serve */
  for (int32_t j = 0; j < o->d + 2; j++) o->acc[j].hi = o->acc[j].lo = 0.0;
  o->acc[o->d + 2].hi = (double)DPO_EINTR;
  o->acc[o->d + 2].lo = 0.0;
  o->s1_live = 0;
  return dpo__step1_meet(o);
}

void dpo__oracle_step1_fail(dpo_oracle_t *o, int rc) {
  if (!o || !o->rank || rc == DPO_OK) return;
  dpo__note_local_fail(o, rc);
  if (!o->s1_pending) o->s1_pending = rc;
}
