/* Request state both the oracle's serve loop (oracle.c) and a row fetch (fetch.c) use, and the
 * collective part of a row fetch: here, below both files, so neither calls the other. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/oracle_int.h"
#include "comm/wait.h"
#include "dpopt/status.h"

void dpo__note_local_fail(dpo_oracle_t *o, int rc) {
  if (rc == DPO_OK || o->local_fail) return;
  o->local_fail = rc;
  snprintf(o->local_msg, sizeof o->local_msg, "%s", dpo_errmsg());
}

int dpo__ensure_ids(dpo_oracle_t *o, int64_t m) {
  if (m <= o->ids_cap) return DPO_OK;
  int64_t *a = realloc(o->ids, (size_t)m * sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "oracle: cannot allocate a batch of %ld ids", (long)m);
  o->ids = a;
  int64_t *b = realloc(o->lrows, (size_t)m * sizeof *b);
  if (!b) return dpo_err(DPO_ENOMEM, "oracle: cannot allocate a batch of %ld ids", (long)m);
  o->lrows = b;
  o->ids_cap = m;
  return DPO_OK;
}

/* ---- rows fetched to rank 0: the collective part (the rank-0 side is src/comm/fetch.c) ----
 * Request: header {ROWS, 0, m}, the m global ids (in pieces, as for SUMS); every rank packs
 * the listed rows it owns, in list order, as records [y, clip norm, len, values (len),
 * columns as doubles (len, CSR only)], one MPI_Gather brings {status, sparse, doubles} per
 * rank, rank 0 broadcasts go/no-go and one MPI_Gatherv brings the records. */
static int dpo__pack_rows(dpo_oracle_t *o, int64_t m, double **buf, int64_t *len) {
  const dpo_shard_t *s = o->shard;
  int64_t tot = 0;
  *buf = NULL;
  *len = 0;
  for (int64_t k = 0; k < m; k++) {
    int64_t i = o->ids[k] - s->row0;
    if (o->ids[k] < 0 || o->ids[k] >= o->n_global)
      return dpo_err(DPO_EINVAL, "oracle: row id %ld outside [0, %ld)", (long)o->ids[k],
                     (long)o->n_global);
    if (i < 0 || i >= s->n) continue;
    tot += 3 + (s->sparse ? 2 * (s->rowptr[i + 1] - s->rowptr[i]) : s->d);
  }
  double *b = malloc((size_t)(tot > 0 ? tot : 1) * sizeof *b);
  if (!b) return dpo_err(DPO_ENOMEM, "oracle: cannot pack %ld values of fetched rows", (long)tot);
  int64_t p = 0;
  for (int64_t k = 0; k < m; k++) {
    int64_t i = o->ids[k] - s->row0;
    if (i < 0 || i >= s->n) continue;
    b[p++] = s->y[i];
    b[p++] = o->rownorm ? o->rownorm[i] : 0.0;
    if (s->sparse) {
      int64_t a = s->rowptr[i], e = s->rowptr[i + 1];
      b[p++] = (double)(e - a);
      memcpy(b + p, s->val + a, (size_t)(e - a) * sizeof *b);
      p += e - a;
      for (int64_t q = a; q < e; q++) b[p++] = (double)s->colind[q];
    } else {
      b[p++] = (double)s->d;
      memcpy(b + p, s->X + i * (int64_t)s->d, (size_t)s->d * sizeof *b);
      p += s->d;
    }
  }
  *buf = b;
  *len = tot;
  return DPO_OK;
}

int dpo__oracle_hdr_bcast(dpo_oracle_t *o, int64_t hdr[DPO__HDR]) {
  if (dpo__wait_gate(o->comm)) return MPI_ERR_OTHER;
  return MPI_Bcast(hdr, DPO__HDR, MPI_INT64_T, 0, o->comm);
}

/* Every rank: body of a ROWS request (the ids already in o->ids on rank 0).  Rank 0 gets the
 * records of rank r at (*recv)[(*displ)[r] .. (*displ)[r + 1]) (both freed by the caller). */
int dpo__serve_rows(dpo_oracle_t *o, int64_t m, double **recv_out, int64_t **displ_out) {
  double t0 = dpo__now();
  int erc = o->rank ? dpo__ensure_ids(o, m) : DPO_OK;
  static int64_t drain[DPO__IDS_PIECE];
  for (int64_t off = 0; off < m; off += DPO__IDS_PIECE) {
    int cnt = (int)(m - off < DPO__IDS_PIECE ? m - off : DPO__IDS_PIECE);
    DPO_MPI_CHECK(MPI_Bcast(erc ? drain : o->ids + off, cnt, MPI_INT64_T, 0, o->comm));
  }
  double *buf = NULL, *recv = NULL;
  int64_t len = 0, *info = NULL, *displ = NULL;
  int *cnts = NULL, *dis = NULL;
  if (!erc) erc = dpo__pack_rows(o, m, &buf, &len);
  int64_t mine[3] = {erc, o->shard->sparse, len};
  if (o->rank == 0) {
    info = malloc((size_t)o->size * 3 * sizeof *info);
    displ = malloc((size_t)(o->size + 1) * sizeof *displ);
    cnts = malloc((size_t)o->size * sizeof *cnts);
    dis = malloc((size_t)o->size * sizeof *dis);
    if (!info || !displ || !cnts || !dis) { /* MPI_Gather needs the receive buffer: abort */
      free(info);
      free(displ);
      free(cnts);
      free(dis);
      free(buf);
      return dpo_err(DPO_EMPI, "oracle: out of memory for a row fetch (cannot continue)");
    }
  }
  int go = dpo__wait_gate(o->comm); /* rank 0 waits for the rows (comm/wait.h) */
  if (go) goto out;
  if (MPI_Gather(mine, 3, MPI_INT64_T, info, 3, MPI_INT64_T, 0, o->comm) != MPI_SUCCESS) {
    go = dpo_err(DPO_EMPI, "oracle: MPI_Gather of a row fetch failed");
    goto out;
  }
  if (o->rank == 0) {
    displ[0] = 0;
    for (int r = 0; r < o->size && !go; r++) {
      if (r == 0 && erc) {
        go = erc; /* rank 0's own failure: its detail is current */
      } else if (info[3 * r]) {
        go = o->remote_fail = (int)info[3 * r];
        go = dpo_err(go, "oracle: rank %d failed to pack fetched rows (%s); its detail is "
                     "reported when the run finishes", r, dpo_strerror(go));
      } else if (info[3 * r + 1] != o->shard->sparse) {
        go = dpo_err(DPO_EUNSUP, "oracle: ranks hold dense and sparse shards: rows not fetched");
      }
      displ[r + 1] = displ[r] + info[3 * r + 2];
      if (!go && displ[r + 1] > INT32_MAX)
        go = dpo_err(DPO_EUNSUP, "oracle: %ld values of fetched rows exceed one message",
                     (long)displ[r + 1]);
    }
    if (!go && !(recv = malloc((size_t)(displ[o->size] > 0 ? displ[o->size] : 1) * sizeof *recv)))
      go = dpo_err(DPO_ENOMEM, "oracle: cannot receive %ld values of fetched rows",
                   (long)displ[o->size]);
    for (int r = 0; r < o->size && !go; r++) {
      cnts[r] = (int)info[3 * r + 2];
      dis[r] = (int)displ[r];
    }
  } else if (erc) {
    dpo__note_local_fail(o, erc);
  }
  if (MPI_Bcast(&go, 1, MPI_INT, 0, o->comm) != MPI_SUCCESS) {
    go = dpo_err(DPO_EMPI, "oracle: MPI_Bcast of a row fetch failed");
    goto out;
  }
  if (go) goto out;
  if (MPI_Gatherv(buf, (int)len, MPI_DOUBLE, recv, cnts, dis, MPI_DOUBLE, 0, o->comm) !=
      MPI_SUCCESS) {
    go = dpo_err(DPO_EMPI, "oracle: MPI_Gatherv of a row fetch failed");
    goto out;
  }
  if (o->rank == 0) {
    *recv_out = recv;
    *displ_out = displ;
    recv = NULL;
    displ = NULL;
  }
out:
  o->st.t_comm += dpo__now() - t0;
  free(buf);
  free(recv);
  free(info);
  free(displ);
  free(cnts);
  free(dis);
  /* workers: only an MPI failure ends serve(); a refused fetch was reported to rank 0 */
  return o->rank == 0 || go == DPO_EMPI ? go : DPO_OK;
}

/* The buffers of the meetings and the fold (oracle_int.h): here, below oracle.c (create,
 * destroy) and oracle_step1.c (the meetings), which both use them. */
void dpo__oracle_step1_free(dpo_oracle_t *o) {
  free(o->parts), free(o->s1_send), free(o->s1_tr), free(o->s1_xtr);
  o->parts = o->s1_send = o->s1_tr = NULL;
  o->s1_xtr = NULL;
  o->ws_k1 = 0;
}

/* The fold's workspace is allocated before any reduction and its size told to every rank, so
 * no rank enters a gather that the root, short of memory, would not join. */
int dpo__oracle_ws_setup(dpo_oracle_t *o) {
  const size_t k1 = (size_t)o->d + 3, bytes = (size_t)o->size * k1 * sizeof *o->parts;
  int have = 0;
  if (o->rank == 0 && o->size <= DPO__FOLD_RANKS && bytes <= DPO__WS_BYTES)
    have = (o->parts = malloc(bytes)) != NULL;
  if (MPI_Bcast(&have, 1, MPI_INT, 0, o->comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "oracle: MPI_Bcast of the fold's workspace failed");
  o->ws_k1 = have ? (int)k1 : 0;
  return DPO_OK;
}
