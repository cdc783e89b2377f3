/* HAMSI's saved points (dpo__snap_t): the last good point, the best one (early stopping) and
 * the safeguard's epoch starts; copies of the factor rows a rank holds. */
#include <stdlib.h>
#include <string.h>

#include "mf/hamsi_impl.h"

/* Copy the current point (after epoch t) into sn: the last good one (it passed the
 * divergence check) or the best one (early stopping). */
int dpo__hm_keep(dpo__hm_t *h, dpo__snap_t *sn, int64_t t) {
  if (!sn->x1 && !(sn->x1 = malloc(sizeof(double) * (size_t)(h->nvr ? h->nvr : 1))))
    return dpo_err(DPO_ENOMEM, "hamsi: saved point");
  if (!sn->c && !(sn->c = calloc((size_t)h->B, sizeof *sn->c)))
    return dpo_err(DPO_ENOMEM, "hamsi: saved point");
  memcpy(sn->x1, h->x1, sizeof(double) * (size_t)h->nvr);
  for (int32_t c = 0; c < h->B; c++) {
    if (!h->cbuf[c]) continue;
    int64_t nv = dpo__nvc(h, c);
    if (!sn->c[c] && !(sn->c[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1))))
      return dpo_err(DPO_ENOMEM, "hamsi: saved point");
    memcpy(sn->c[c], h->cbuf[c], sizeof(double) * (size_t)nv);
  }
  sn->k = h->cur_k;
  sn->t = t;
  return DPO_OK;
}

int dpo__hm_snap_room(dpo__hm_t *h, dpo__snap_t *sn) {
  if (!sn->c && !(sn->c = calloc((size_t)h->B, sizeof *sn->c)))
    return dpo_err(DPO_ENOMEM, "hamsi: saved point");
  for (int32_t c = 0; c < h->B; c++) {
    int64_t nv = dpo__nvc(h, c);
    if (!sn->c[c] && !(sn->c[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1))))
      return dpo_err(DPO_ENOMEM, "hamsi: saved point (item block %d)", c);
  }
  return DPO_OK;
}

/* Back to a saved point (collective: the item blocks first travel back to the ranks that
 * held them then). */
int dpo__hm_restore(dpo__hm_t *h, const dpo__snap_t *sn) {
  int st = dpo__hm_travel(h, sn->k);
  if (st) return st;
  memcpy(h->x1, sn->x1, sizeof(double) * (size_t)h->nvr);
  for (int32_t c = 0; c < h->B; c++)
    if (h->cbuf[c]) memcpy(h->cbuf[c], sn->c[c], sizeof(double) * (size_t)dpo__nvc(h, c));
  return DPO_OK;
}

/* An epoch passed its safeguard: its start becomes the last accepted epoch's start (the
 * buffers swap, no copy) and the run of rejections ends.  HAMSI: the start is x-bar (xb1 and
 * the held blocks' xbc, line 12), so sg_prev takes those buffers and x-bar its old ones
 * (copying the start to sg_start as well was 1.5% of an epoch at rank 50).  mb-GD: sg_start. */
int dpo__hm_sg_accept(dpo__hm_t *h) {
  h->sg_rejects = 0;
  if (!h->hamsi) {
    dpo__snap_t sw = h->sg_prev;
    h->sg_prev = h->sg_start;
    h->sg_start = sw;
    return DPO_OK;
  }
  dpo__snap_t *sn = &h->sg_prev;
  if (!sn->c && !(sn->c = calloc((size_t)h->B, sizeof *sn->c)))
    return dpo_err(DPO_ENOMEM, "hamsi: saved point");
  double *sw = sn->x1;
  sn->x1 = h->xb1;
  if (!(h->xb1 = sw ? sw : malloc(sizeof(double) * (size_t)(h->nvr ? h->nvr : 1))))
    return dpo_err(DPO_ENOMEM, "hamsi: saved point");
  for (int32_t c = 0; c < h->B; c++) {
    if (!h->cbuf[c]) continue; /* the blocks held at the start are those held now (k0) */
    int64_t nv = dpo__nvc(h, c);
    sw = sn->c[c];
    sn->c[c] = h->xbc[c];
    if (!(h->xbc[c] = sw ? sw : malloc(sizeof(double) * (size_t)(nv ? nv : 1))))
      return dpo_err(DPO_ENOMEM, "hamsi: saved point");
  }
  sn->k = h->cur_k;
  sn->t = 0;
  return DPO_OK;
}
