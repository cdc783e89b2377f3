/* Private: rank-count-stable reductions in double-double arithmetic.
 *
 * Sums of local partial sums are carried as (hi, lo) pairs (Knuth/Dekker two-sum), so the
 * result of a reduction no longer depends on the order in which the ranks' contributions
 * are combined, up to ~1e-32 relative: the value a 1-rank run computes and the value a
 * 4-rank run computes agree to the last bit or two.  The last pair of every buffer is a
 * status, combined with MIN so a failure on any rank is seen at the root.
 */
#ifndef DPO_COMM_REDUCE_H
#define DPO_COMM_REDUCE_H

#include <mpi.h>
#include <stdint.h>

#include "dpopt/data.h"
#include "dpopt/model.h"

/* Local rows are processed in chunks aligned to multiples of this many GLOBAL row ids, so a
 * chunk inside one shard is computed with the same operations at any rank count. */
#define DPO__CHUNK 256

/* The same for a row list (a minibatch): its rows are grouped by chunks of this many global
 * ids.  A group's gradient is added to the double-double sums in O(d), so groups of 256 ids,
 * which hold 256 q rows at sampling rate q (4 at Fashion-MNIST's 1024 of 60000), cost more
 * in those additions than in their rows. */
#define DPO__ROWS_CHUNK 4096

typedef struct {
  double hi, lo;
} dpo__dd_t;

/* a += x (exact error term carried in lo). */
static inline void dpo__dd_add(dpo__dd_t *a, double x) {
  double s = a->hi + x;
  double bb = s - a->hi;
  double e = (a->hi - (s - bb)) + (x - bb);
  e += a->lo;
  a->hi = s + e;
  a->lo = e - (a->hi - s);
}

/* a[j] += x[j] for j < n, as dpo__dd_add one element at a time (the same operations, so the
 * same bits), in vector form (reduce.c): a chunk's gradient is added this way, and with
 * minibatches a chunk holds a few rows, so for d = 7850 (softmax on Fashion-MNIST) the
 * scalar loop was 28% of a DP-SGD run. */
void dpo__dd_add_vec(dpo__dd_t *a, const double *x, int64_t n);

/* a += b for two double-doubles. */
static inline void dpo__dd_add_dd(dpo__dd_t *a, const dpo__dd_t *b) {
  double s = a->hi + b->hi;
  double bb = s - a->hi;
  double e = (a->hi - (s - bb)) + (b->hi - bb);
  e += a->lo + b->lo;
  a->hi = s + e;
  a->lo = e - (a->hi - s);
}

/* A view of local rows [i0, i0 + cnt) as a shard of its own (no copy). */
static inline void dpo__shard_view(const dpo_shard_t *s, int64_t i0, int64_t cnt,
                                   dpo_shard_t *v) {
  *v = *s;
  v->n = cnt;
  v->row0 = s->row0 + i0;
  v->y = s->y ? s->y + i0 : NULL;
  if (s->sparse)
    v->rowptr = s->rowptr + i0; /* rowptr keeps absolute offsets into colind/val */
  else
    v->X = s->X ? s->X + i0 * (int64_t)s->d : NULL;
}

/* End (exclusive, local index) of the global-aligned chunk that contains local row i. */
static inline int64_t dpo__chunk_end(const dpo_shard_t *s, int64_t i) {
  int64_t gid = s->row0 + i;
  int64_t e = (gid / DPO__CHUNK + 1) * DPO__CHUNK - s->row0;
  return e < s->n ? e : s->n;
}

/* Up to this many ranks, a reduction's order is ours, not the MPI library's: the ranks' buffers
 * are gathered and folded by dpo__dd_fold (the order of Open MPI's linear reduce for a
 * non-commutative operation).  Open MPI 4.1.4's MPI_Reduce gave the same pairs at 2 to 7 ranks
 * but other low words at 8 to 12 ranks (another tree; the high words the same in that check),
 * so there a sum's last bit may differ from revisions before the fold.  So the one
 * meeting of a DP-SGD step (comm/step1.h), which every rank folds itself after an allgather,
 * gets the same bits as the oracle's reduction to rank 0. */
#define DPO__FOLD_RANKS 12

/* out[0..k1) = the fold of size buffers of k1 pairs each (parts[r * k1 ..]): the last pair
 * of a buffer is its status (the minimum is kept), the others are summed from the last rank's
 * buffer down to rank 0's: acc = parts[size - 1]; acc += parts[r] for r = size - 2 .. 0. */
void dpo__dd_fold(const dpo__dd_t *parts, int size, int k1, dpo__dd_t *out);

/* The same fold of c pairs a rank at parts + r * stride (a block of a longer buffer); status
 * = 1: the last of the c is a status pair. */
void dpo__dd_fold_at(const dpo__dd_t *parts, int size, size_t stride, int c, int status,
                     dpo__dd_t *out);

/* Reduce k double-double values followed by one status pair (buf[k].hi = status as a double,
 * combined with MIN) over comm.  allreduce = 0: result at root only; 1: the root's result is
 * broadcast, so every rank gets bit-identical values.  Returns DPO_OK or DPO_EMPI (an MPI
 * failure, not the reduced status: the caller reads buf[k].hi).  Collective. */
int dpo__dd_reduce(MPI_Comm comm, dpo__dd_t *buf, int k, int root, int allreduce);

/* The same with the caller's workspace for the fold at <= DPO__FOLD_RANKS ranks: ws (the
 * root's; NULL elsewhere) holds ws_k1 pairs for each rank, and ws_k1, the same on every rank
 * (allocated and agreed on before the reduction), >= k + 1 gathers the ranks' buffers in one
 * MPI_Gather instead of pieces of 4096 pairs; the same bits either way. */
int dpo__dd_reduce_ws(MPI_Comm comm, dpo__dd_t *buf, int k, int root, int allreduce,
                      dpo__dd_t *ws, int ws_k1);

/* This rank's part of a model evaluation over shard s at x: acc[0] += loss sum, acc[1] +=
 * metric sum (chunks aligned to global row ids, so the reduced sums do not depend on the rank
 * count), acc[2] += rows.  Not collective; DPO_EFORMAT on a non-finite sum.  Shared by the
 * oracle's METRIC request and dpo_model_eval_shard, which must agree bit for bit. */
int dpo__shard_metric_add(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                          dpo__dd_t acc[3]);

#endif
