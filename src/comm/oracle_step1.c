/* One meeting per step inside one data holder (see comm/step1.h). */
#include "comm/step1.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/oracle_int.h"
#include "comm/reduce.h"
#include "comm/wait.h"
#include "dpopt/status.h"

void dpo__oracle_step1_trace_plan(dpo_oracle_t *o, int64_t every, int held) {
  if (!o) return;
  o->s1_every = every > 0 ? every : 0;
  o->s1_held = held != 0;
}

/* pairs of a trace block: g (d), loss, rows, [held-out loss, metric, rows], status */
static size_t dpo__step1_tb(const dpo_oracle_t *o) {
  return o->s1_every ? (size_t)o->d + 3 + (o->s1_held ? 3 : 0) : 0;
}

static int dpo__step1_due(const dpo_oracle_t *o, int64_t t) {
  return o->s1_every > 0 && t >= 0 && t % o->s1_every == 0;
}

int dpo__oracle_step1_stream(const dpo_oracle_t *o, dpo_rng_t *rng, double *x, int d,
                             dpo_rng_state_t *st) {
  memset(st, 0, sizeof *st);
  if (o->rank == 0) dpo_rng_get_state(rng, st);
  if (MPI_Bcast(st, (int)sizeof *st, MPI_BYTE, 0, o->comm) != MPI_SUCCESS ||
      MPI_Bcast(x, d, MPI_DOUBLE, 0, o->comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "oracle: MPI_Bcast of the step's stream and point failed");
  return DPO_OK;
}

int dpo__oracle_step1_begin(dpo_oracle_t *o) {
  int rc = DPO_OK;
  /* rank 0's trace plan (the run's public options) to every rank */
  int64_t plan[2] = {o->s1_every, o->s1_held};
  if (MPI_Bcast(plan, 2, MPI_INT64_T, 0, o->comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "oracle: MPI_Bcast of the meetings' trace plan failed");
  dpo__oracle_step1_trace_plan(o, plan[0], (int)plan[1]);
  const size_t tb = dpo__step1_tb(o), k1 = (size_t)o->d + 3 + tb;
  dpo__oracle_step1_free(o);
  o->parts = malloc((size_t)o->size * k1 * sizeof *o->parts);
  if (tb) {
    o->s1_send = malloc(k1 * sizeof *o->s1_send);
    o->s1_tr = malloc(tb * sizeof *o->s1_tr);
    o->s1_xtr = malloc((size_t)o->d * sizeof *o->s1_xtr);
  }
  if (!o->parts || (tb && (!o->s1_send || !o->s1_tr || !o->s1_xtr)))
    rc = dpo_err(DPO_ENOMEM, "oracle: no memory for %d ranks' %d sums", o->size, (int)k1);
  rc = dpo_agree(o->comm, rc);
  if (rc) dpo__oracle_step1_free(o); /* no workspace on any rank: the reductions in pieces */
  else o->ws_k1 = (int)k1;           /* every rank's buffer of k1 pairs a rank */
  o->s1_live = !rc;
  o->s1_steps = 0;
  o->s1_pending = DPO_OK;
  o->s1_xt_t = o->s1_tr_t = -1;
  return rc;
}

void dpo__oracle_step1_point(dpo_oracle_t *o, int64_t t, const double *x) {
  if (!o || !o->s1_live || !dpo__step1_due(o, t)) return;
  memcpy(o->s1_xtr, x, (size_t)o->d * sizeof *x);
  o->s1_xt_t = t;
}

/* The meeting: every rank's k1 pairs (buf) to every rank, waited for as the policy says (the
 * sleeping wait polls the allgather itself: the meeting is the gate). */
static int dpo__step1_meet(dpo_oracle_t *o, dpo__dd_t *buf, size_t k1) {
  const int n = (int)(2 * k1);
  if (dpo__wait_policy(o->comm) != DPO__WAIT_SLEEP) {
    DPO_MPI_CHECK(MPI_Allgather(buf, n, MPI_DOUBLE, o->parts, n, MPI_DOUBLE, o->comm));
    return DPO_OK;
  }
  MPI_Request rq;
  DPO_MPI_CHECK(MPI_Iallgather(buf, n, MPI_DOUBLE, o->parts, n, MPI_DOUBLE, o->comm, &rq));
  return dpo__wait_req(&rq);
}

/* This rank's trace block of step t (tr: tb pairs): the sums of the request path's row, the
 * full pass at the step's point (a SUMS request of every row) and the held-out set's (a
 * METRIC request), or zeros and its failure.  Before the step's sums, as the row is before
 * the step on the request path, so a rank that fails both keeps the row's failure. */
static int dpo__step1_trace_local(dpo_oracle_t *o, int64_t t, dpo__dd_t *tr, size_t tb) {
  const int32_t d = o->d;
  double t0 = dpo__now();
  int ts = o->s1_xt_t == t ? DPO_OK
                           : dpo_err(DPO_EINVAL, "oracle: no point for the trace row of step "
                                     "%lld", (long long)t);
  if (!ts) {
    memcpy(o->x, o->s1_xtr, (size_t)d * sizeof *o->x);
    if (!(ts = dpo__local_sums(o, DPO__M_ALL, 0, 0)))
      memcpy(tr, o->acc, ((size_t)d + 2) * sizeof *tr);
  }
  if (!ts && o->s1_held) {
    dpo__dd_t h[3] = {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}};
    ts = o->heldout ? dpo__shard_metric_add(o->model, o->heldout, o->x, h)
                    : dpo_err(DPO_EINVAL, "oracle: no held-out shard attached");
    if (!ts) memcpy(tr + d + 2, h, sizeof h);
  }
  if (ts) {
    if (o->rank) dpo__note_local_fail(o, ts);
    for (size_t j = 0; j + 1 < tb; j++) tr[j].hi = tr[j].lo = 0.0;
  }
  tr[tb - 1].hi = (double)ts;
  tr[tb - 1].lo = 0.0;
  o->s1_tr_time = dpo__now() - t0;
  return ts;
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

/* The first rank in rank order whose pair at off of its k1 is a failure (-1: none). */
static int dpo__step1_first(const dpo_oracle_t *o, size_t k1, size_t off, int *st) {
  for (int r = 0; r < o->size; r++)
    if ((*st = (int)o->parts[(size_t)r * k1 + off].hi) != DPO_OK) return r;
  return -1;
}

/* After a meeting that rank first failed with st (own: this rank's status): the meetings end
 * and every rank says so as the request path would. */
static int dpo__step1_failed(dpo_oracle_t *o, int first, int st, int own, double *g_sum) {
  o->s1_live = 0;
  memset(g_sum, 0, (size_t)o->d * sizeof *g_sum);
  if (first == o->rank) return own;
  if (o->rank != 0)
    return dpo_err(DPO_EREMOTE, "rank %d ended the step's meeting (%s)", first,
                   dpo_strerror(st));
  o->remote_fail = st;
  return dpo_err(st, "a worker rank failed (%s); its detail is reported when the run "
                 "finishes", dpo_strerror(st));
}

int dpo__oracle_step1_sums(dpo_oracle_t *o, int64_t t, const double *x, const dpo_batch_t *batch,
                           int status, double *g_sum, int64_t *n_used) {
  const int32_t d = o->d;
  if (!o->s1_live) return dpo_err(DPO_EINVAL, "oracle: a step's meeting after the meetings ended");
  const size_t tb = dpo__step1_due(o, t) ? dpo__step1_tb(o) : 0, k1 = (size_t)d + 3 + tb;
  double t0 = dpo__now(), ttr = 0.0;
  int tst = tb ? dpo__step1_trace_local(o, t, o->s1_send + d + 3, tb) : DPO_OK;
  if (tb) ttr = dpo__now() - t0;
  int lrc = dpo__step1_local(o, x, batch, status);
  if (tb) memcpy(o->s1_send, o->acc, ((size_t)d + 3) * sizeof *o->acc);
  double t1 = dpo__now();
  o->st.t_compute += t1 - t0;
  int rc = dpo__step1_meet(o, tb ? o->s1_send : o->acc, k1);
  o->st.t_comm += dpo__now() - t1;
  if (rc) {
    o->s1_live = 0;
    return rc;
  }
  o->st.evals++;
  int st = DPO_OK, first;
  /* the trace row's failure first: the request path evaluates it before the step */
  if (tb && (first = dpo__step1_first(o, k1, k1 - 1, &st)) >= 0)
    return dpo__step1_failed(o, first, st, tst, g_sum);
  if (tb) { /* rank 0 keeps the row's sums, folded as the reduction to it folds them */
    o->st.evals++;
    if (o->rank == 0) {
      double a = dpo__now();
      dpo__dd_fold_at(o->parts + d + 3, o->size, k1, (int)tb, 1, o->s1_tr);
      o->s1_tr_t = t;
      o->s1_tr_time = ttr + dpo__now() - a;
      o->st.rows += (int64_t)o->s1_tr[d + 1].hi;
    } else {
      o->st.rows += (int64_t)o->parts[(size_t)o->rank * k1 + d + 3 + d + 1].hi;
    }
  }
  /* the first failing rank in rank order (rank 0's own status first) */
  if ((first = dpo__step1_first(o, k1, (size_t)d + 2, &st)) >= 0)
    return dpo__step1_failed(o, first, st, lrc, g_sum);
  dpo__dd_fold_at(o->parts, o->size, k1, d + 3, 1, o->acc);
  for (int32_t j = 0; j < d; j++) g_sum[j] = o->acc[j].hi;
  int64_t used = (int64_t)o->acc[d + 1].hi;
  if (n_used) *n_used = used;
  /* as on the request path: rank 0 counts the batch, a worker its own rows */
  o->st.rows += o->rank == 0 ? used : (int64_t)o->parts[(size_t)o->rank * k1 + d + 1].hi;
  o->s1_steps++;
  return DPO_OK;
}

int dpo__oracle_step1_trace(const dpo_oracle_t *o, int64_t t, double *loss, double *g,
                            int64_t *rows, double held[3], double *secs) {
  if (!o || o->rank != 0 || o->s1_tr_t != t || !o->s1_tr)
    return dpo_err(DPO_EINVAL, "oracle: step %lld's meeting gave no trace row", (long long)t);
  const int32_t d = o->d;
  for (int32_t j = 0; j < d; j++) g[j] = o->s1_tr[j].hi;
  *loss = o->s1_tr[d].hi;
  *rows = (int64_t)o->s1_tr[d + 1].hi;
  for (int k = 0; k < 3; k++) held[k] = o->s1_held ? o->s1_tr[d + 2 + k].hi : NAN;
  *secs = o->s1_tr_time;
  return DPO_OK;
}

void dpo__oracle_step1_close(dpo_oracle_t *o) {
  if (o) o->s1_live = 0;
}

int dpo__oracle_step1_live(const dpo_oracle_t *o, int64_t *steps) {
  if (steps) *steps = o ? o->s1_steps : 0;
  return o && o->s1_live;
}

int dpo__oracle_step1_end(dpo_oracle_t *o, int64_t t, int more) {
  if (!o || o->rank != 0 || !o->s1_live || !more) {
    if (o) o->s1_live = 0;
    return DPO_OK;
  }
  /* zeros and rank 0's stop, sized like the meeting of step t the workers wait in (a trace
   * step's with a trace block that did not fail): they leave their loop for the serve */
  const size_t tb = dpo__step1_due(o, t) ? dpo__step1_tb(o) : 0, k1 = (size_t)o->d + 3 + tb;
  dpo__dd_t *buf = tb ? o->s1_send : o->acc;
  for (size_t j = 0; j < k1; j++) buf[j].hi = buf[j].lo = 0.0;
  buf[o->d + 2].hi = (double)DPO_EINTR;
  o->s1_live = 0;
  return dpo__step1_meet(o, buf, k1);
}

void dpo__oracle_step1_fail(dpo_oracle_t *o, int rc) {
  if (!o || !o->rank || rc == DPO_OK) return;
  dpo__note_local_fail(o, rc);
  if (!o->s1_pending) o->s1_pending = rc;
}
