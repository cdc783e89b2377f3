/* Double-double reductions (see reduce.h). */
#include "comm/reduce.h"
#include "core/clones.h"
#include "comm/wait.h"

#include <math.h>
#include <stdlib.h>

#include "dpopt/status.h"

/* One build per x86-64 level, picked by the loader (as src/mf's rating loops): the library
 * is compiled for baseline x86-64.  Only additions and subtractions, so no FMA contraction
 * can change a bit between the builds; the pairs are split into hi and lo vectors by the
 * compiler (omp simd over the array of structs). */
DPO_CLONES_LEVELS
void dpo__dd_add_vec(dpo__dd_t *a, const double *x, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; j++) dpo__dd_add(&a[j], x[j]);
}

static MPI_Op dpo__dd_op = MPI_OP_NULL;

/* MPI user op over one element = a whole buffer of (k + 1) pairs: pairs 0..k-1 are summed
 * in double-double, the last pair (the status) takes the minimum. */
static void dpo__dd_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
  int sz = 0;
  MPI_Type_size(*dt, &sz);
  int pairs = sz / (int)sizeof(dpo__dd_t);
  dpo__dd_t *a = in, *b = inout;
  for (int e = 0; e < *len; e++, a += pairs, b += pairs) {
    for (int p = 0; p < pairs - 1; p++) dpo__dd_add_dd(&b[p], &a[p]);
    if (a[pairs - 1].hi < b[pairs - 1].hi) b[pairs - 1] = a[pairs - 1];
  }
}

void dpo__dd_fold_at(const dpo__dd_t *parts, int size, size_t stride, int c, int status,
                     dpo__dd_t *out) {
  const dpo__dd_t *last = parts + (size_t)(size - 1) * stride;
  const int sums = status ? c - 1 : c;
  for (int p = 0; p < c; p++) out[p] = last[p];
  for (int r = size - 2; r >= 0; r--) {
    const dpo__dd_t *a = parts + (size_t)r * stride;
    for (int p = 0; p < sums; p++) dpo__dd_add_dd(&out[p], &a[p]);
    if (status && a[c - 1].hi < out[c - 1].hi) out[c - 1] = a[c - 1];
  }
}

/* The fold of c pairs a rank; status = 1: the last of them is the status pair. */
static void dpo__dd_fold_n(const dpo__dd_t *parts, int size, int c, int status, dpo__dd_t *out) {
  dpo__dd_fold_at(parts, size, (size_t)c, c, status, out);
}

void dpo__dd_fold(const dpo__dd_t *parts, int size, int k1, dpo__dd_t *out) {
  dpo__dd_fold_n(parts, size, k1, 1, out);
}

/* Few ranks: gathered to the root and folded there (dpo__dd_fold's order).  With a workspace
 * of ws_k1 >= k + 1 pairs a rank (the caller's, allocated and agreed on before, so the same
 * choice on every rank), one gather; without one, pieces of at most DPO__FOLD_PIECE pairs a
 * rank through a static buffer, so a root short of memory cannot leave the others waiting in
 * a gather it never joins (one piece up to d = 4093). */
#define DPO__FOLD_PIECE 4096
static dpo__dd_t dpo__fold_buf[DPO__FOLD_RANKS * DPO__FOLD_PIECE];

static int dpo__dd_gather_fold(MPI_Comm comm, int rank, int size, dpo__dd_t *buf, int k,
                               int root, dpo__dd_t *ws, int ws_k1) {
  const int k1 = k + 1;
  /* the root waits here for the slowest rank's sums (comm/wait.h: the same gather after) */
  int rc = dpo__wait_gate(comm);
  if (!rc && ws_k1 >= k1) {
    if (MPI_Gather(buf, 2 * k1, MPI_DOUBLE, ws, 2 * k1, MPI_DOUBLE, root, comm) != MPI_SUCCESS)
      return dpo_err(DPO_EMPI, "dpo__dd_reduce: MPI_Gather of %d values failed", k);
    if (rank == root) dpo__dd_fold_n(ws, size, k1, 1, buf);
    return DPO_OK;
  }
  for (int off = 0; !rc && off < k1; off += DPO__FOLD_PIECE) {
    /* pairs [off, off + c) of every rank; the last piece ends with the status pair */
    const int c = k1 - off < DPO__FOLD_PIECE ? k1 - off : DPO__FOLD_PIECE;
    if (MPI_Gather(buf + off, 2 * c, MPI_DOUBLE, dpo__fold_buf, 2 * c, MPI_DOUBLE, root, comm) !=
        MPI_SUCCESS)
      return dpo_err(DPO_EMPI, "dpo__dd_reduce: MPI_Gather of %d values failed", k);
    if (rank == root) dpo__dd_fold_n(dpo__fold_buf, size, c, off + c == k1, buf + off);
  }
  return rc;
}

int dpo__dd_reduce(MPI_Comm comm, dpo__dd_t *buf, int k, int root, int allreduce) {
  return dpo__dd_reduce_ws(comm, buf, k, root, allreduce, NULL, 0);
}

int dpo__dd_reduce_ws(MPI_Comm comm, dpo__dd_t *buf, int k, int root, int allreduce,
                      dpo__dd_t *ws, int ws_k1) {
  int rank, size, rc = DPO_OK;
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  DPO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DPO_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size <= DPO__FOLD_RANKS) {
    if ((rc = dpo__dd_gather_fold(comm, rank, size, buf, k, root, ws, ws_k1))) return rc;
    if (allreduce && MPI_Bcast(buf, 2 * (k + 1), MPI_DOUBLE, root, comm) != MPI_SUCCESS)
      return dpo_err(DPO_EMPI, "dpo__dd_reduce: MPI_Bcast of %d values failed", k);
    return DPO_OK;
  }
  if (dpo__dd_op == MPI_OP_NULL) {
    /* Declared non-commutative: MPI then combines in rank order, a fixed order for a given
     * rank count (the double-double sum makes the order matter only at ~1e-32). */
    DPO_MPI_CHECK(MPI_Op_create(dpo__dd_fn, 0, &dpo__dd_op));
  }
  DPO_MPI_CHECK(MPI_Type_contiguous(2 * (k + 1), MPI_DOUBLE, &dt));
  if (MPI_Type_commit(&dt) != MPI_SUCCESS) {
    rc = dpo_err(DPO_EMPI, "dpo__dd_reduce: MPI_Type_commit failed");
    goto out;
  }
  /* the root waits here for the slowest rank's sums (comm/wait.h: the same reduction after) */
  if ((rc = dpo__wait_gate(comm))) goto out;
  if (MPI_Reduce(rank == root ? MPI_IN_PLACE : buf, buf, 1, dt, dpo__dd_op, root, comm) !=
      MPI_SUCCESS) {
    rc = dpo_err(DPO_EMPI, "dpo__dd_reduce: MPI_Reduce of %d values failed", k);
    goto out;
  }
  if (allreduce && MPI_Bcast(buf, 2 * (k + 1), MPI_DOUBLE, root, comm) != MPI_SUCCESS) {
    rc = dpo_err(DPO_EMPI, "dpo__dd_reduce: MPI_Bcast of %d values failed", k);
    goto out;
  }
out:
  if (dt != MPI_DATATYPE_NULL) MPI_Type_free(&dt);
  return rc;
}

int dpo__shard_metric_add(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                          dpo__dd_t acc[3]) {
  for (int64_t i = 0; i < s->n;) {
    int64_t e = dpo__chunk_end(s, i);
    dpo_shard_t v;
    dpo__shard_view(s, i, e - i, &v);
    double l = 0.0, mt = 0.0;
    int rc = dpo_model_local_eval(m, &v, x, &l, &mt);
    if (rc) return rc;
    dpo__dd_add(&acc[0], l);
    dpo__dd_add(&acc[1], mt);
    i = e;
  }
  dpo__dd_add(&acc[2], (double)s->n);
  if (!isfinite(acc[0].hi) || !isfinite(acc[1].hi))
    return dpo_err(DPO_EFORMAT, "%s: rows [%ld, %ld): non-finite loss or metric",
                   s->source[0] ? s->source : "shard", (long)s->row0, (long)(s->row0 + s->n));
  return DPO_OK;
}
