/* Item-block ring of HAMSI on the STRATA* grid (see hamsi_impl.h): between two strata every
 * item block moves, with its rows of S and Y, from the rank that used it to the rank whose
 * user interval meets it next.  Nonblocking, in two parts: the history rows [S | Y] (2M of
 * every 2M + 1 doubles) are not changed by a stratum's steps (only by the pair, between
 * epochs), so they are sent as soon as the stratum starts and travel while its blocks compute;
 * the factor rows x are sent right after the block's last use.  The caller posts the receives
 * (dpo__hm_travel_begin, which also sends the histories), sends x (dpo__hm_travel_send) and
 * waits once (dpo__hm_travel_end).  The bytes are the same, so the results are too. */
#include <stdlib.h>

#include "mf/hamsi_impl.h"

/* tags: x part 100 + 2c, history part 101 + 2c */
#define DPO__TAG_X(c) (100 + 2 * (c))
#define DPO__TAG_H(c) (101 + 2 * (c))

int dpo__hm_travel_begin(dpo__hm_t *h, int32_t kfrom, int32_t kto) {
  h->nreq = 0;
  for (int32_t c = 0; c < h->B; c++) h->cnext[c] = h->csend[c] = NULL;
  for (int32_t i = h->i0; i < h->i1; i++) {
    int32_t c = dpo__mod(i + kto, h->B), src = h->owner[dpo__mod(c - kfrom, h->B)];
    if (src == h->rank) {
      h->cnext[c] = h->cbuf[c];
      continue;
    }
    int64_t sz = dpo__cbsize(h, c), nv = dpo__nvc(h, c);
    if (!(h->cnext[c] = malloc(sizeof(double) * (size_t)(sz ? sz : 1))))
      return dpo_err(DPO_ENOMEM, "item block %d (%lld doubles)", c, (long long)sz);
    DPO_MPI_CHECK(MPI_Irecv(h->cnext[c], (int)nv, MPI_DOUBLE, src, DPO__TAG_X(c), h->comm,
                            &h->req[h->nreq++]));
    if (sz > nv)
      DPO_MPI_CHECK(MPI_Irecv(h->cnext[c] + nv, (int)(sz - nv), MPI_DOUBLE, src, DPO__TAG_H(c),
                              h->comm, &h->req[h->nreq++]));
  }
  /* the histories of the blocks held now, to where stratum kto needs them (read-only until
   * the wait: the steps read S and Y, MPI allows reading a buffer being sent) */
  for (int32_t i = h->i0; i < h->i1; i++) {
    int32_t c = dpo__mod(i + kfrom, h->B), dst = h->owner[dpo__mod(c - kto, h->B)];
    int64_t sz = dpo__cbsize(h, c), nv = dpo__nvc(h, c);
    if (dst == h->rank || !h->cbuf[c]) continue;
    h->csend[c] = h->cbuf[c];
    if (sz > nv)
      DPO_MPI_CHECK(MPI_Isend(h->cbuf[c] + nv, (int)(sz - nv), MPI_DOUBLE, dst, DPO__TAG_H(c),
                              h->comm, &h->req[h->nreq++]));
  }
  return DPO_OK;
}

int dpo__hm_travel_send(dpo__hm_t *h, int32_t c, int32_t kto) {
  int dst = h->owner[dpo__mod(c - kto, h->B)];
  if (dst == h->rank) return DPO_OK;
  h->csend[c] = h->cbuf[c];
  DPO_MPI_CHECK(MPI_Isend(h->cbuf[c], (int)dpo__nvc(h, c), MPI_DOUBLE, dst, DPO__TAG_X(c),
                          h->comm, &h->req[h->nreq++]));
  return DPO_OK;
}

int dpo__hm_travel_end(dpo__hm_t *h, int32_t kto) {
  double t = MPI_Wtime();
  DPO_MPI_CHECK(MPI_Waitall(h->nreq, h->req, MPI_STATUSES_IGNORE));
  h->nreq = 0;
  for (int32_t c = 0; c < h->B; c++) {
    free(h->csend[c]);
    h->csend[c] = NULL;
    h->cbuf[c] = h->cnext[c];
  }
  h->cur_k = kto;
  h->t_comm += MPI_Wtime() - t;
  return DPO_OK;
}

int dpo__hm_travel(dpo__hm_t *h, int32_t kto) {
  int st;
  if (!h->grid || kto == h->cur_k) return DPO_OK;
  double t = MPI_Wtime();
  if ((st = dpo__hm_travel_begin(h, h->cur_k, kto))) return st;
  for (int32_t i = h->i0; i < h->i1; i++)
    if ((st = dpo__hm_travel_send(h, dpo__mod(i + h->cur_k, h->B), kto))) return st;
  h->t_comm += MPI_Wtime() - t; /* the wait is counted by dpo__hm_travel_end */
  return dpo__hm_travel_end(h, kto);
}
