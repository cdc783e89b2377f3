/* Item-block ring of HAMSI on the STRATA* grid (see hamsi_impl.h): between two strata every
 * item block moves, with its rows of the (s, y) history H, from the rank that used it to the
 * rank whose user interval meets it next.  Nonblocking, in two parts: the history rows H (M
 * bfloat16 (s, y) pairs, 4 bytes each, to every double of x) are not changed by a stratum's
 * steps (only by the pair, between epochs), so they are sent as soon as the stratum starts and
 * travel while its blocks compute; the factor rows x are sent right after the block's last
 * use.  The caller posts the receives (dpo__hm_travel_begin, which also sends the histories),
 * sends x (dpo__hm_travel_send) and then either waits for everything (dpo__hm_travel_end) or
 * only switches to the next stratum (dpo__hm_travel_switch) and waits for each block right
 * before its first use (dpo__hm_wait_block): a rank then computes the blocks it kept (K > P
 * strata: c = K / P a rank, c - 1 of them stay) while the one from its neighbour travels, and
 * its own x sends stay in flight (two travels' sends are tracked; a travel waits for those of
 * the travel before the last, or of the last one when a block comes back at once).  The
 * bytes and the arithmetic are the same, so the results are too.
 *
 * History cache (h->hcache, opts.cache_mb): every rank keeps a buffer for every block, so
 * after a move the sender still has the history it sent.  A pair writes one slot of every
 * block's history and every rank logs which (hgen, hlog); the table known[p B + c] says up to
 * which pair rank p's copy of block c is current.  The table changes only with the schedule
 * and the agreed pairs and resets, so every rank computes the same one, and sender and
 * receiver agree on what travels without asking: the slots written since the receiver last
 * held the block (packed), the whole history when that is M or more pairs ago, or nothing.
 * A reset zeroes every copy, which makes them all current.  On ML-100K-sized data at rank 50
 * and 2 ranks the history was 10 of the 11 units a move sent (issue 15). */
#include <stdlib.h>
#include <string.h>

#include "mf/hamsi_impl.h"

/* tags: x part 100 + 2c, history part 101 + 2c */
#define DPO__TAG_X(c) (100 + 2 * (c))
#define DPO__TAG_H(c) (101 + 2 * (c))

/* The history slots of block c that rank p lacks into sl[0..n): returns n, or -1 for all. */
static int dpo__hm_lacks(const dpo__hm_t *h, int p, int32_t c, int32_t *sl) {
  int64_t kn = h->known[(int64_t)p * h->B + c];
  if (h->hgen - kn >= h->M) return -1;
  int n = 0;
  for (int64_t g = kn + 1; g <= h->hgen; g++) {
    int32_t s = h->hlog[g % h->M], dup = 0;
    for (int j = 0; j < n; j++) dup |= sl[j] == s;
    if (!dup) sl[n++] = s;
  }
  return n;
}

/* Slots sl[0..n) of the history H (rows of r variables, each with M slot-major (s, y)
 * panels; nv variables) to or from the packed buf (rows of n panels). */
static void dpo__hm_pack(dpo__hist_t *H, int64_t nv, int r, int M, const int32_t *sl, int n,
                         dpo__hist_t *buf, int unpack) {
  size_t rb = sizeof(dpo__hist_t) * (size_t)r;
  for (int64_t o = 0; o < nv; o += r)
    for (int j = 0; j < n; j++) {
      dpo__hist_t *a = H + o * M + (int64_t)sl[j] * r, *p = buf + o * n + (int64_t)j * r;
      if (unpack)
        memcpy(a, p, rb);
      else
        memcpy(p, a, rb);
    }
}

/* *p holds at least n entries afterwards (grown, never shrunk: the buffers stay for the run). */
static int dpo__hm_room(dpo__hist_t **p, int64_t *cap, int64_t n, int32_t c) {
  if (n <= *cap) return DPO_OK;
  dpo__hist_t *q = realloc(*p, sizeof(dpo__hist_t) * (size_t)n);
  if (!q) return dpo_err(DPO_ENOMEM, "history slots of item block %d", c);
  *p = q;
  *cap = n;
  return DPO_OK;
}

/* The history part of block c (held here, going to dst): all of it, its lacking slots
 * packed, or nothing. */
static int dpo__hm_send_hist(dpo__hm_t *h, int32_t c, int dst) {
  int64_t nv = dpo__nvc(h, c), nh = (int64_t)h->M * nv; /* panel entries */
  int32_t sl[256];
  int n = h->hcache ? dpo__hm_lacks(h, dst, c, sl) : -1;
  if (nh == 0 || n == 0) return DPO_OK;
  int64_t bytes = (int64_t)sizeof(dpo__hist_t) * (n < 0 ? nh : n * nv);
  h->ring_sent += bytes;
  h->ring_hsent += bytes;
  MPI_Request *rq = dpo__hm_sreq(h, h->tgen, c) + 1;
  if (n < 0) {
    DPO_MPI_CHECK(MPI_Isend(dpo__cbhist(h, h->cbuf[c], c), (int)nh, DPO__HIST_MPI, dst,
                            DPO__TAG_H(c), h->comm, rq));
    return DPO_OK;
  }
  int st = dpo__hm_room(&h->hout[c], &h->houtcap[c], n * nv, c);
  if (st) return st;
  dpo__hm_pack(dpo__cbhist(h, h->cbuf[c], c), nv, h->r, h->M, sl, n, h->hout[c], 0);
  DPO_MPI_CHECK(MPI_Isend(h->hout[c], (int)(n * nv), DPO__HIST_MPI, dst, DPO__TAG_H(c),
                          h->comm, rq));
  return DPO_OK;
}

/* The sends of travel g (its generation's slots) complete; their buffers (no cache) freed. */
static int dpo__hm_sends_done(dpo__hm_t *h, int64_t g) {
  MPI_Request *q = h->sreq + (g & 1) * 2 * (int64_t)h->B;
  DPO_MPI_CHECK(MPI_Waitall(2 * h->B, q, MPI_STATUSES_IGNORE));
  double **f = h->sfree + (g & 1) * (int64_t)h->B;
  for (int32_t c = 0; c < h->B; c++) {
    free(f[c]);
    f[c] = NULL;
  }
  return DPO_OK;
}

int dpo__hm_wait_block(dpo__hm_t *h, int32_t c) {
  if (!h->pend[c]) return DPO_OK;
  double t = MPI_Wtime();
  DPO_MPI_CHECK(MPI_Waitall(2, h->rreq + 2 * (int64_t)c, MPI_STATUSES_IGNORE));
  if (h->hcache && h->nin[c] > 0) { /* the slots received into this rank's copy */
    dpo__hm_pack(dpo__cbhist(h, h->pb[c], c), dpo__nvc(h, c), h->r, h->M,
                 h->slin + (int64_t)c * h->M, h->nin[c], h->hin[c], 1);
    h->nin[c] = 0;
  }
  h->cbuf[c] = h->cin[c];
  h->pend[c] = 0;
  h->npend--;
  h->t_comm += MPI_Wtime() - t;
  return DPO_OK;
}

int dpo__hm_travel_begin(dpo__hm_t *h, int32_t kfrom, int32_t kto) {
  int st;
  h->tr_from = kfrom;
  /* this travel's send slots are those of the travel before the last: done by now */
  if ((st = dpo__hm_sends_done(h, ++h->tgen))) return st;
  for (int32_t c = 0; c < h->B; c++) h->cnext[c] = NULL;
  for (int32_t i = h->i0; i < h->i1; i++) {
    int32_t c = dpo__mod(i + kto, h->B), src = h->owner[dpo__mod(c - kfrom, h->B)];
    if (src == h->rank) continue; /* stays (maybe still arriving: dpo__hm_travel_switch) */
    /* back at once from where it went: its buffer may still be in the last travel's send */
    if (h->hcache && h->slast[c] == h->tgen - 1 && (st = dpo__hm_sends_done(h, h->tgen - 1)))
      return st;
    int64_t sz = dpo__cbsize(h, c), nv = dpo__nvc(h, c), nh = (int64_t)h->M * nv;
    int n = -1;
    MPI_Request *rq = h->rreq + 2 * (int64_t)c;
    if (h->hcache) {
      h->cnext[c] = h->pb[c];
      n = h->nin[c] = dpo__hm_lacks(h, h->rank, c, h->slin + (int64_t)c * h->M);
    } else if (!(h->cnext[c] = malloc(sizeof(double) * (size_t)(sz ? sz : 1)))) {
      return dpo_err(DPO_ENOMEM, "item block %d (%lld doubles)", c, (long long)sz);
    }
    DPO_MPI_CHECK(MPI_Irecv(h->cnext[c], (int)nv, MPI_DOUBLE, src, DPO__TAG_X(c), h->comm, rq));
    if (nh == 0 || n == 0) continue;
    if (n < 0) {
      DPO_MPI_CHECK(MPI_Irecv(dpo__cbhist(h, h->cnext[c], c), (int)nh, DPO__HIST_MPI, src,
                              DPO__TAG_H(c), h->comm, rq + 1));
      continue;
    }
    if ((st = dpo__hm_room(&h->hin[c], &h->hincap[c], n * nv, c))) return st;
    DPO_MPI_CHECK(MPI_Irecv(h->hin[c], (int)(n * nv), DPO__HIST_MPI, src, DPO__TAG_H(c),
                            h->comm, rq + 1));
  }
  /* the histories of the blocks held now, to where stratum kto needs them (read-only until
   * the wait: the steps read H, MPI allows reading a buffer being sent); a block still
   * arriving is waited for first */
  for (int32_t i = h->i0; i < h->i1; i++) {
    int32_t c = dpo__mod(i + kfrom, h->B), dst = h->owner[dpo__mod(c - kto, h->B)];
    if (dst == h->rank) continue;
    if ((st = dpo__hm_wait_block(h, c))) return st;
    if (!h->cbuf[c]) continue;
    if (h->hcache && h->slast[c] == h->tgen - 1 && (st = dpo__hm_sends_done(h, h->tgen - 1)))
      return st; /* its packed history buffer may still be in the last travel's send */
    h->slast[c] = h->tgen;
    if (!h->hcache) h->sfree[(h->tgen & 1) * (int64_t)h->B + c] = h->cbuf[c];
    if ((st = dpo__hm_send_hist(h, c, dst))) return st;
  }
  return DPO_OK;
}

int dpo__hm_travel_send(dpo__hm_t *h, int32_t c, int32_t kto) {
  int dst = h->owner[dpo__mod(c - kto, h->B)];
  if (dst == h->rank) return DPO_OK;
  h->slast[c] = h->tgen;
  if (!h->hcache) h->sfree[(h->tgen & 1) * (int64_t)h->B + c] = h->cbuf[c];
  h->ring_sent += sizeof(double) * (size_t)dpo__nvc(h, c);
  DPO_MPI_CHECK(MPI_Isend(h->cbuf[c], (int)dpo__nvc(h, c), MPI_DOUBLE, dst, DPO__TAG_X(c),
                          h->comm, dpo__hm_sreq(h, h->tgen, c)));
  return DPO_OK;
}

int dpo__hm_travel_switch(dpo__hm_t *h, int32_t kto) {
  for (int32_t c = 0; c < h->B; c++) {
    int32_t from = h->owner[dpo__mod(c - h->tr_from, h->B)], to = h->owner[dpo__mod(c - kto, h->B)];
    if (from != h->rank && to == h->rank) { /* arriving: used once waited for */
      h->cin[c] = h->cnext[c];
      h->pend[c] = 1;
      h->npend++;
      h->cbuf[c] = NULL;
    } else if (to == h->rank) { /* stayed: h->cbuf[c], or still arriving from the last one */
    } else {
      h->cbuf[c] = NULL;
    }
    /* every move of the step, not only this rank's: its receiver is now current */
    if (h->hcache && from != to) h->known[(int64_t)to * h->B + c] = h->hgen;
  }
  h->cur_k = kto;
  return DPO_OK;
}

int dpo__hm_travel_drain(dpo__hm_t *h) {
  int st;
  for (int32_t c = 0; c < h->B; c++)
    if ((st = dpo__hm_wait_block(h, c))) return st; /* each counts its own wait */
  double t = MPI_Wtime();
  if ((st = dpo__hm_sends_done(h, h->tgen)) || (st = dpo__hm_sends_done(h, h->tgen - 1))) return st;
  h->t_comm += MPI_Wtime() - t;
  return DPO_OK;
}

int dpo__hm_travel_end(dpo__hm_t *h, int32_t kto) {
  int st = dpo__hm_travel_switch(h, kto);
  return st ? st : dpo__hm_travel_drain(h);
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

void dpo__hm_hist_pair(dpo__hm_t *h, int32_t ns) {
  h->hgen++;
  h->hlog[h->hgen % h->M] = ns;
  for (int32_t c = 0; c < h->B; c++)
    h->known[(int64_t)h->owner[dpo__mod(c - h->cur_k, h->B)] * h->B + c] = h->hgen;
}
