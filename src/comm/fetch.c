/* Rows fetched to the coordinator (see dpo_oracle_fetch_rows in include/dpopt/comm.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/oracle_int.h"
#include "comm/reduce.h"
#include "dpopt/status.h"

/* The collective part (request, packing on the owners, gather) is dpo__serve_rows in
 * src/comm/oracle_rows.c; here rank 0 unpacks the records into a shard and evaluates batches of
 * it.  The rows stay on rank 0 (central trust: the coordinator already sees exact sums of
 * them; nothing is released). */
void dpo_oracle_rows_free(dpo_oracle_rows_t *r) {
  if (!r) return;
  free(r->rows.X);
  free(r->rows.rowptr);
  free(r->rows.colind);
  free(r->rows.val);
  free(r->rows.y);
  free(r->rownorm);
  free(r->gid);
  memset(r, 0, sizeof *r);
}

/* Rank 0: records gathered from every rank (recv, displs in doubles) into out, rows in the
 * order of o->ids. */
static int dpo__unpack_rows(dpo_oracle_t *o, int64_t m, int sparse, const double *recv,
                            const int64_t *displ, dpo_oracle_rows_t *out) {
  const int32_t d = o->shard->d; /* features (o->d counts parameters: K d for softmax) */
  int64_t nnz = 0, *cur = malloc((size_t)o->size * sizeof *cur), *first = NULL;
  first = malloc((size_t)(o->size + 1) * sizeof *first);
  if (!cur || !first) {
    free(cur);
    free(first);
    return dpo_err(DPO_ENOMEM, "oracle: out of memory");
  }
  first[0] = 0;
  for (int r = 0; r < o->size; r++) {
    cur[r] = displ[r];
    first[r + 1] = first[r] + o->rank_n[r];
  }
  int64_t total = displ[o->size];
  if (sparse) nnz = (total - 3 * m) / 2;
  dpo_shard_t *s = &out->rows;
  s->n = m;
  s->n_global = m;
  s->row0 = 0;
  s->d = d;
  s->sparse = sparse;
  s->labels = o->shard->labels;
  snprintf(s->source, sizeof s->source, "%.200s (fetched rows)", o->shard->source);
  s->y = malloc((size_t)(m > 0 ? m : 1) * sizeof *s->y);
  out->rownorm = malloc((size_t)(m > 0 ? m : 1) * sizeof *out->rownorm);
  out->gid = malloc((size_t)(m > 0 ? m : 1) * sizeof *out->gid);
  void *xp = NULL;
  if (sparse) {
    s->rowptr = malloc((size_t)(m + 1) * sizeof *s->rowptr);
    s->colind = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *s->colind);
    s->val = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *s->val);
  } else if (!posix_memalign(&xp, 64, (size_t)(m > 0 ? m : 1) * (size_t)d * sizeof(double))) {
    s->X = xp; /* 64-byte aligned like the loaders' dense storage */
  }
  int rc = DPO_OK;
  if (!s->y || !out->rownorm || !out->gid || (sparse ? !s->rowptr || !s->colind || !s->val : !s->X))
    rc = dpo_err(DPO_ENOMEM, "oracle: cannot hold %ld fetched rows", (long)m);
  int64_t p = 0;
  if (sparse && !rc) s->rowptr[0] = 0;
  for (int64_t k = 0; k < m && !rc; k++) {
    int r = 0;
    while (r + 1 < o->size && o->ids[k] >= first[r + 1]) r++;
    const double *b = recv + cur[r];
    int64_t len = (int64_t)b[2];
    out->gid[k] = o->ids[k];
    s->y[k] = b[0];
    out->rownorm[k] = b[1];
    if (sparse) {
      memcpy(s->val + p, b + 3, (size_t)len * sizeof *s->val);
      for (int64_t q = 0; q < len; q++) s->colind[p + q] = (int32_t)b[3 + len + q];
      p += len;
      s->rowptr[k + 1] = p;
      cur[r] += 3 + 2 * len;
    } else {
      memcpy(s->X + k * (int64_t)d, b + 3, (size_t)d * sizeof(double));
      cur[r] += 3 + d;
    }
  }
  free(cur);
  free(first);
  if (rc) dpo_oracle_rows_free(out);
  return rc;
}

int dpo_oracle_fetch_rows(dpo_oracle_t *o, const int64_t *ids, int64_t m, dpo_oracle_rows_t *out) {
  static const char fn[] = "dpo_oracle_fetch_rows";
  if (!o || !out || (m > 0 && !ids)) return dpo_err(DPO_EINVAL, "%s: NULL argument", fn);
  memset(out, 0, sizeof *out);
  if (o->rank != 0) return dpo_err(DPO_EINVAL, "%s: called on rank %d (rank 0 only)", fn, o->rank);
  if (o->parties)
    return dpo_err(DPO_EUNSUP, "%s: a party's rows do not leave it (multi-party run)", fn);
  if (m < 0 || m > o->n_global)
    return dpo_err(DPO_EINVAL, "%s: %ld rows (n = %ld)", fn, (long)m, (long)o->n_global);
  for (int64_t k = 0; k < m; k++)
    if (ids[k] < 0 || ids[k] >= o->n_global)
      return dpo_err(DPO_EINVAL, "%s: row id %ld outside [0, %ld)", fn, (long)ids[k],
                     (long)o->n_global);
  int rc = dpo__ensure_ids(o, m);
  if (rc) return rc;
  if (m > 0) memcpy(o->ids, ids, (size_t)m * sizeof *ids);
  o->finished = 0;
  int64_t hdr[DPO__HDR] = {DPO__REQ_ROWS, 0, m, 0, DPO_ONOISE_NONE, 0, 0, 0};
  DPO_MPI_CHECK(dpo__oracle_hdr_bcast(o, hdr));
  double *recv = NULL;
  int64_t *displ = NULL;
  rc = dpo__serve_rows(o, m, &recv, &displ);
  if (!rc) rc = dpo__unpack_rows(o, m, o->shard->sparse, recv, displ, out);
  free(recv);
  free(displ);
  return rc;
}

int dpo_oracle_eval_rows(dpo_oracle_t *o, const dpo_oracle_rows_t *r, const int64_t *pos,
                         int64_t m, const double *x, int want_loss, double *F, double *g) {
  static const char fn[] = "dpo_oracle_eval_rows";
  if (!o || !r || !pos || !g) return dpo_err(DPO_EINVAL, "%s: NULL argument", fn);
  int rc = dpo__check_req(o, fn, x);
  if (rc) return rc;
  if (m <= 0) return dpo_err(DPO_EINVAL, "%s: empty batch (mean undefined)", fn);
  for (int64_t k = 0; k < m; k++)
    if (pos[k] < 0 || pos[k] >= r->rows.n || (k > 0 && r->gid[pos[k]] <= r->gid[pos[k - 1]]))
      return dpo_err(DPO_EINVAL, "%s: position %ld out of range or ids not increasing", fn,
                     (long)k);
  /* The groups dpo__local_sums forms on the owner ranks: consecutive ids of one owner and one
   * DPO__ROWS_CHUNK, each summed by the model's kernel, the group sums added in double-double. */
  const int32_t d = o->d;
  const dpo_clip_t *clip = o->clipping ? &o->clip : NULL;
  double t0 = dpo__now();
  for (int j = 0; j < d + 1; j++) o->acc[j].hi = o->acc[j].lo = 0.0;
  int owner = 0;
  int64_t end = o->rank_n[0];
  for (int64_t k = 0; k < m;) {
    int64_t id = r->gid[pos[k]], c = id / DPO__ROWS_CHUNK, e = k + 1;
    while (id >= end) end += o->rank_n[++owner];
    while (e < m && r->gid[pos[e]] / DPO__ROWS_CHUNK == c && r->gid[pos[e]] < end) e++;
    double loss = 0.0;
    rc = dpo_model_local_grad(o->model, &r->rows, x, pos + k, e - k, clip,
                              o->clipping ? r->rownorm : NULL, &loss, o->g);
    if (rc) return rc;
    dpo__dd_add_vec(o->acc, o->g, d);
    dpo__dd_add(&o->acc[d], loss);
    k = e;
  }
  for (int j = 0; j <= d; j++)
    if (!isfinite(o->acc[j].hi))
      return dpo_err(DPO_EFORMAT, "%s: non-finite %s sum (NaN/Inf in the data or at x)", fn,
                     j < d ? "gradient" : "loss");
  double loss = o->acc[d].hi;
  for (int32_t j = 0; j < d; j++) g[j] = o->acc[j].hi;
  dpo_model_finish(o->model, d, m, x, &loss, g);
  if (F) *F = want_loss ? loss : NAN;
  o->st.evals++;
  o->st.rows += m;
  o->st.t_compute += dpo__now() - t0;
  return DPO_OK;
}
