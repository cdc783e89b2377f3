/* HAMSI layout and partition set-up (see hamsi_impl.h): the held-out split and the global
 * training degrees, the user / item cuts and interval owners, the routing of the ratings to
 * the owners of their users, the grid blocks or the generic (stratum, phase) units, the
 * metric weights, the initial point and the buffers.  Collective; the caller agrees. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mf/hamsi_impl.h"
#include "mf/mf_impl.h"

typedef struct {
  int32_t u, i;
  int64_t key;
  double y;
} dpo__rt_t;

static int dpo__rt_cmp(const void *a, const void *b) {
  const dpo__rt_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->u != y->u) return x->u < y->u ? -1 : 1;
  if (x->i != y->i) return x->i < y->i ? -1 : 1;
  return (x->y > y->y) - (x->y < y->y);
}

static int dpo__i32_cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

void dpo__hm_free(dpo__hm_t *h) {
  free(h->row_cut);
  free(h->col_cut);
  free(h->owner);
  free(h->uint_of);
  free(h->x1);
  free(h->H1);
  free(h->xb1);
  free(h->gb1);
  free(h->s1);
  free(h->y1);
  for (int32_t c = 0; c < h->B; c++) {
    if (h->cbuf && !h->hcache) free(h->cbuf[c]); /* with the cache it is pb[c] */
    if (h->pb) free(h->pb[c]);
    if (h->hin) free(h->hin[c]);
    if (h->hout) free(h->hout[c]);
    if (h->xbc) free(h->xbc[c]);
    if (h->gbc) free(h->gbc[c]);
    if (h->sc) free(h->sc[c]);
    if (h->yc) free(h->yc[c]);
  }
  free(h->cbuf);
  free(h->pb);
  free(h->hin);
  free(h->hout);
  free(h->hincap);
  free(h->houtcap);
  free(h->part);
  free(h->known);
  free(h->hlog);
  free(h->nin);
  free(h->slin);
  free(h->cnext);
  for (int32_t c = 0; c < 2 * h->B && h->sfree; c++) free(h->sfree[c]); /* left by an error */
  for (int32_t c = 0; c < h->B && h->cin && h->pend && !h->hcache; c++)
    if (h->pend[c]) free(h->cin[c]);
  free(h->sfree);
  free(h->cin);
  free(h->pend);
  free(h->slast);
  free(h->rreq);
  free(h->sreq);
  free(h->xbc);
  free(h->gbc);
  free(h->sc);
  free(h->yc);
  free(h->lu);
  free(h->li);
  free(h->y);
  free(h->wu);
  free(h->wi);
  free(h->tu);
  free(h->ti);
  free(h->blk);
  free(h->sord);
  free(h->soff);
  free(h->uoff);
  free(h->toff);
  free(h->titem);
  free(h->chunk_cut);
  free(h->chunk_of);
  free(h->dx2);
  free(h->gx2);
  free(h->xs);
  free(h->pk);
  free(h->tu_u);
  free(h->tu_i);
  free(h->ty);
  free(h->g1s);
  free(h->g2s);
  free(h->tn1);
  free(h->tn2);
  free(h->nn1);
  free(h->nn2);
  free(h->d);
  free(h->w1);
  free(h->w2);
  free(h->fpart);
  dpo__snap_t *sn[4] = {&h->good, &h->best, &h->sg_start, &h->sg_prev};
  for (int j = 0; j < 4; j++) {
    free(sn[j]->x1);
    for (int32_t c = 0; sn[j]->c && c < h->B; c++) free(sn[j]->c[c]);
    free(sn[j]->c);
  }
  dpo__lbfgs_free(&h->lb);
}

/* Reorder this rank's training ratings (lu, li, y, wu, wi) to sord's order; sord becomes
 * the identity. */
static int dpo__permute_ratings(dpo__hm_t *h, int64_t n) {
  int32_t *ib = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  double *db = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!ib || !db) {
    free(ib);
    free(db);
    return dpo_err(DPO_ENOMEM, "hamsi: out of memory reordering %ld ratings", (long)n);
  }
  int32_t *iv[2] = {h->lu, h->li};
  double *dv[3] = {h->y, h->wu, h->wi};
  for (int a = 0; a < 2; a++) {
    for (int64_t t = 0; t < n; t++) ib[t] = iv[a][h->sord[t]];
    memcpy(iv[a], ib, sizeof(int32_t) * (size_t)n);
  }
  for (int a = 0; a < 3; a++) {
    for (int64_t t = 0; t < n; t++) db[t] = dv[a][h->sord[t]];
    memcpy(dv[a], db, sizeof(double) * (size_t)n);
  }
  for (int64_t t = 0; t < n; t++) h->sord[t] = t;
  free(ib);
  free(db);
  return DPO_OK;
}

/* Held-out flags (a hash of user, item and seed: the same on any number of ranks) and the
 * global training degrees (public ids only; the counts stay inside the computation). */
static int dpo__hm_degrees(dpo__hm_t *h, const dpo_ratings_t *in, char *istest, int64_t *udeg,
                           int64_t *ideg) {
  int st = DPO_OK;
  int64_t nin = in ? in->n : 0;
  uint64_t hseed = dpo__mf_mix(h->o.seed ^ 0x4e1dULL);
  for (int64_t k = 0; k < nin; k++) {
    int32_t u = in->user[k], i = in->item[k];
    if (u < 0 || u >= h->nu || i < 0 || i >= h->ni || !isfinite(in->r[k])) {
      st = dpo_err(DPO_EFORMAT, "%s: rating %lld: bad (user %d, item %d, %g)", in->source,
                   (long long)k, u, i, in->r[k]);
      break;
    }
    istest[k] = h->o.holdout > 0 &&
                dpo__mf_unit(dpo__mf_mix(hseed ^ dpo__mf_mix(((uint64_t)u << 32) | (uint32_t)i))) <
                    h->o.holdout;
    if (!istest[k]) {
      udeg[u]++;
      ideg[i]++;
    }
  }
  if ((st = dpo_agree(h->comm, st))) return st;
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, udeg, h->nu, MPI_INT64_T, MPI_SUM, h->comm));
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, ideg, h->ni, MPI_INT64_T, MPI_SUM, h->comm));
  return DPO_OK;
}

/* Strata: grid cuts from the degrees, or for the generic partitions nch fixed user chunks
 * (the slots of the dot products and RMSE sums, so they do not depend on P) of which rank p
 * owns user interval p, a run of whole chunks cut to hold about 1/P of the training ratings. */
static int dpo__hm_layout(dpo__hm_t *h, const int64_t *udeg, const int64_t *ideg) {
  int st = DPO_OK, P = h->size;
  int64_t *cdeg = NULL;
  int32_t *rc = NULL;
  int32_t nint = h->grid ? h->B : P; /* user intervals */
  DPO__ALLOC(h->row_cut, nint + 1);
  DPO__ALLOC(h->col_cut, h->B + 1);
  DPO__ALLOC(h->owner, nint);
  DPO__ALLOC(h->uint_of, h->nu);
  if (h->grid) {
    int bal = h->o.part == DPO_MF_STRATA_B;
    if ((st = dpo_mf_cuts(udeg, h->nu, h->B, bal, h->row_cut)) ||
        (st = dpo_mf_cuts(ideg, h->ni, h->B, bal, h->col_cut)))
      goto fail;
  } else {
    h->nch = h->nu < DPO__MF_NCHUNK ? h->nu : DPO__MF_NCHUNK;
    DPO__ALLOC(h->chunk_cut, h->nch + 1);
    DPO__ALLOC(h->chunk_of, h->nu);
    DPO__ALLOC(cdeg, h->nch);
    DPO__ALLOC(rc, P + 1);
    if ((st = dpo_mf_cuts(udeg, h->nu, h->nch, 0, h->chunk_cut))) goto fail;
    for (int32_t j = 0; j < h->nch; j++)
      for (int32_t u = h->chunk_cut[j]; u < h->chunk_cut[j + 1]; u++) {
        cdeg[j] += udeg[u];
        h->chunk_of[u] = j;
      }
    if ((st = dpo_mf_cuts(cdeg, h->nch, P, 1, rc))) goto fail;
    for (int p = 0; p <= P; p++) h->row_cut[p] = h->chunk_cut[rc[p]];
    h->col_cut[1] = h->ni;
  }
  for (int32_t i = 0; i < nint; i++) {
    h->owner[i] = (int32_t)((int64_t)i * P / nint);
    for (int32_t u = h->row_cut[i]; u < h->row_cut[i + 1]; u++) h->uint_of[u] = i;
  }
  h->i0 = -1;
  for (int32_t i = 0; i < nint; i++)
    if (h->owner[i] == h->rank) {
      if (h->i0 < 0) h->i0 = i;
      h->i1 = i + 1;
    }
  h->u0 = h->row_cut[h->i0];
  h->u1 = h->row_cut[h->i1];
  h->nvr = (int64_t)(h->u1 - h->u0) * h->r;
fail:
  free(cdeg);
  free(rc);
  return st;
}

/* Route the local ratings to the owners of their user intervals (4 doubles per rating: user,
 * item, rating, held-out flag; ids < 2^31 are exact), split train / held-out, and sort both:
 * sorted order makes every sum independent of how the input was split.  Fills the held-out
 * arrays and the training arrays lu, li, y, wu, wi; *trp gets the sorted training ratings
 * with their block keys (caller frees). */
static int dpo__hm_route(dpo__hm_t *h, const dpo_ratings_t *in, const char *istest,
                         const int64_t *udeg, const int64_t *ideg, dpo__rt_t **trp) {
  int st = DPO_OK, P = h->size;
  int *scnt = NULL, *rcnt = NULL, *sdsp = NULL, *rdsp = NULL, *pos = NULL;
  double *sbuf = NULL, *rbuf = NULL;
  dpo__rt_t *tr = NULL, *te = NULL;
  int32_t *cbof = NULL;
  int64_t nin = in ? in->n : 0;
  DPO__ALLOC(scnt, P);
  DPO__ALLOC(rcnt, P);
  DPO__ALLOC(sdsp, P);
  DPO__ALLOC(rdsp, P);
  for (int64_t k = 0; k < nin; k++) scnt[h->owner[h->uint_of[in->user[k]]]] += 4;
  DPO_MPI_CHECK(MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, h->comm));
  int64_t rtot = 0;
  for (int p = 0; p < P; p++) {
    sdsp[p] = p ? sdsp[p - 1] + scnt[p - 1] : 0;
    rdsp[p] = (int)rtot;
    rtot += rcnt[p];
  }
  DPO__ALLOC(sbuf, 4 * nin);
  DPO__ALLOC(rbuf, rtot);
  DPO__ALLOC(pos, P);
  for (int p = 0; p < P; p++) pos[p] = sdsp[p];
  for (int64_t k = 0; k < nin; k++) {
    int p = h->owner[h->uint_of[in->user[k]]];
    double *q = sbuf + pos[p];
    q[0] = in->user[k];
    q[1] = in->item[k];
    q[2] = in->r[k];
    q[3] = istest[k];
    pos[p] += 4;
  }
  DPO_MPI_CHECK(MPI_Alltoallv(sbuf, scnt, sdsp, MPI_DOUBLE, rbuf, rcnt, rdsp, MPI_DOUBLE, h->comm));
  int64_t nrec = rtot / 4, ntr = 0, nte = 0;
  for (int64_t k = 0; k < nrec; k++) {
    if (rbuf[4 * k + 3] != 0) nte++;
    else ntr++;
  }
  h->n = ntr;
  h->ntest = nte;
  DPO__ALLOC(tr, ntr);
  DPO__ALLOC(h->tu_u, nte);
  DPO__ALLOC(h->tu_i, nte);
  DPO__ALLOC(h->ty, nte);
  DPO__ALLOC(cbof, h->ni); /* item -> block */
  for (int32_t c = 0; c < h->B; c++)
    for (int32_t i = h->col_cut[c]; i < h->col_cut[c + 1]; i++) cbof[i] = c;
  DPO__ALLOC(te, nte);
  int64_t a = 0, b = 0;
  for (int64_t k = 0; k < nrec; k++) {
    dpo__rt_t t = {(int32_t)rbuf[4 * k], (int32_t)rbuf[4 * k + 1], 0, rbuf[4 * k + 2]};
    if (rbuf[4 * k + 3] != 0) {
      te[b++] = t;
    } else {
      t.key = h->grid ? (int64_t)(h->uint_of[t.u] - h->i0) * h->B + cbof[t.i] : 0;
      tr[a++] = t;
    }
  }
  qsort(tr, (size_t)ntr, sizeof *tr, dpo__rt_cmp);
  qsort(te, (size_t)nte, sizeof *te, dpo__rt_cmp);
  for (int64_t k = 0; k < nte; k++) {
    h->tu_u[k] = te[k].u;
    h->tu_i[k] = te[k].i;
    h->ty[k] = te[k].y;
  }
  DPO__ALLOC(h->lu, ntr);
  DPO__ALLOC(h->li, ntr);
  DPO__ALLOC(h->y, ntr);
  DPO__ALLOC(h->wu, ntr);
  DPO__ALLOC(h->wi, ntr);
  /* L2 weights (dpopt/hamsi.h): the mean degrees over the rows with training ratings */
  double s1 = 0, s2 = 0, c1 = 0, c2 = 0, dbar1 = 1, dbar2 = 1;
  for (int32_t a = 0; a < h->nu; a++)
    if (udeg[a] > 0) s1 += (double)udeg[a], c1++;
  for (int32_t b = 0; b < h->ni; b++)
    if (ideg[b] > 0) s2 += (double)ideg[b], c2++;
  if (c1 > 0) dbar1 = s1 / c1;
  if (c2 > 0) dbar2 = s2 / c2;
  for (int64_t k = 0; k < ntr; k++) {
    h->lu[k] = tr[k].u - h->u0;
    h->li[k] = tr[k].i - h->col_cut[cbof[tr[k].i]];
    h->y[k] = tr[k].y;
    h->wu[k] = dpo__mf_l2w((double)udeg[tr[k].u], dbar1);
    h->wi[k] = dpo__mf_l2w((double)ideg[tr[k].i], dbar2);
  }
fail:
  free(scnt);
  free(rcnt);
  free(sdsp);
  free(rdsp);
  free(pos);
  free(sbuf);
  free(rbuf);
  free(te);
  free(cbof);
  if (st) free(tr);
  else *trp = tr;
  return st;
}

/* Balance report of the grid from the global (stratum, block) counts bcnt: a synthetic
 * partition view. */
static void dpo__hm_balance(const dpo__hm_t *h, const int64_t *bcnt, dpo_mf_balance_t *bl) {
  memset(bl, 0, sizeof *bl);
  bl->K = h->B;
  int64_t tot = 0;
  bl->block_min = -1;
  for (int32_t s = 0; s < h->B; s++) {
    int64_t cs = 0;
    for (int32_t i = 0; i < h->B; i++) {
      int64_t v = bcnt[(int64_t)s * h->B + i];
      cs += v;
      if (!v) continue;
      bl->nblocks++;
      if (bl->block_min < 0 || v < bl->block_min) bl->block_min = v;
      if (v > bl->block_max) bl->block_max = v;
    }
    if (!s || cs < bl->stratum_min) bl->stratum_min = cs;
    if (cs > bl->stratum_max) bl->stratum_max = cs;
    tot += cs;
  }
  bl->stratum_mean = (double)tot / h->B;
  bl->block_mean = (double)tot / ((double)h->B * h->B);
  bl->imbalance = bl->block_mean > 0 ? bl->block_max / bl->block_mean : 0;
}

/* Blocks: grid (i, c) with their touched user and item lists (and the balance report);
 * generic: one block holding every local rating. */
static int dpo__hm_blocks(dpo__hm_t *h, const dpo__rt_t *tr, dpo_hamsi_result_t *res) {
  int st = DPO_OK;
  int64_t ntr = h->n, *bcnt = NULL;
  int64_t nb = h->grid ? (int64_t)(h->i1 - h->i0) * h->B : 1;
  h->nblk = nb;
  DPO__ALLOC(h->blk, nb);
  DPO__ALLOC(h->tu, ntr);
  DPO__ALLOC(h->ti, ntr);
  DPO__ALLOC(bcnt, (int64_t)h->B * h->B);
  int64_t k = 0, tuo = 0, tio = 0;
  for (int64_t b = 0; b < nb; b++) {
    dpo__blk_t *bk = &h->blk[b];
    bk->off = k;
    bk->cb = h->grid ? (int32_t)(b % h->B) : 0;
    while (k < ntr && tr[k].key == b) k++;
    bk->n = k - bk->off;
    bk->tuo = tuo;
    bk->tio = tio;
    for (int64_t j = bk->off; j < k; j++)
      if (j == bk->off || h->lu[j] != h->lu[j - 1]) h->tu[tuo++] = h->lu[j];
    for (int64_t j = bk->off; j < k; j++) h->ti[tio + j - bk->off] = h->li[j];
    qsort(h->ti + tio, (size_t)bk->n, sizeof(int32_t), dpo__i32_cmp);
    int64_t w = 0;
    for (int64_t j = 0; j < bk->n; j++)
      if (!w || h->ti[tio + j] != h->ti[tio + w - 1]) h->ti[tio + w++] = h->ti[tio + j];
    bk->ntu = (int32_t)(tuo - bk->tuo);
    bk->nti = (int32_t)w;
    tio += w;
    if (h->grid) {
      int32_t i = h->i0 + (int32_t)(b / h->B);
      bcnt[(int64_t)dpo__mod(bk->cb - i, h->B) * h->B + i] += bk->n; /* (stratum, block) */
    }
  }
  if (h->grid) {
    DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bcnt, h->B * h->B, MPI_INT64_T, MPI_SUM, h->comm));
    dpo__hm_balance(h, bcnt, &res->balance);
  }
fail:
  free(bcnt);
  return st;
}

/* Generic partition (HOGWILD, COLOR, COLOR-B) of the GLOBAL training set, computed
 * identically on every rank: the ranks' sorted ratings concatenated in rank order are the
 * globally sorted set (rank p holds user interval p), so the partition does not depend on P.
 * Strata of single ratings, processed in (phase, index) order.  Exchange units g = stratum *
 * nph + phase hold this rank's ratings and the items touched by any rank (see hamsi.c): one
 * unit per stratum (nph = 1), or with repro on P ranks one per (stratum, color) of COLOR*
 * (nph = the number of colors), which reproduces the serial pass bit for bit. */
static int dpo__hm_generic(dpo__hm_t *h, const dpo__rt_t *tr, dpo_hamsi_result_t *res) {
  int st = DPO_OK, P = h->size;
  int32_t r = h->r;
  int64_t ntr = h->n;
  int *scnt = NULL, *sdsp = NULL;
  int32_t *gu = NULL, *gi = NULL;
  int64_t *gs = NULL, *gord = NULL, *stamp = NULL;
  dpo_mf_partition_t *part = NULL;
  DPO__ALLOC(scnt, P);
  DPO__ALLOC(sdsp, P);
  int mine = (int)ntr;
  int64_t gn = 0;
  DPO_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, scnt, 1, MPI_INT, h->comm));
  for (int p = 0; p < P; p++) {
    sdsp[p] = (int)gn;
    gn += scnt[p];
  }
  int64_t goff = sdsp[h->rank];
  DPO__ALLOC(gu, gn);
  DPO__ALLOC(gi, gn);
  for (int64_t k = 0; k < ntr; k++) {
    gu[goff + k] = tr[k].u;
    gi[goff + k] = tr[k].i;
  }
  DPO_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT32_T, gu, scnt, sdsp, MPI_INT32_T, h->comm));
  DPO_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT32_T, gi, scnt, sdsp, MPI_INT32_T, h->comm));
  if ((st = dpo_mf_partition(h->o.part, h->K, gn, gu, gi, h->nu, h->ni, h->o.seed, &part)))
    goto fail;
  dpo_mf_partition_balance(part, &res->balance);
  int32_t nc = 1; /* colors (1: HOGWILD) */
  for (int64_t k = 0; k < gn; k++)
    if (part->phase[k] + 1 > nc) nc = part->phase[k] + 1;
  int64_t nf = (int64_t)h->K * nc; /* (stratum, color) keys: the serial order */
  h->dist = P > 1;
  /* COLOR*: a color is a matching, so an exchange per color gives the serial factors, but
   * costs (colors) Allreduces an epoch (ML-1M-like data: ~1 epoch in 10 s at 2 ranks);
   * without repro one per stratum, as for HOGWILD: each rank still takes its ratings in the
   * serial (color, index) order, and items that two ranks touch in one stratum get the sum of
   * their steps (first order the serial result; the blocks of the stratum run "in
   * parallel", Alg. 3 line 9, as the thesis's threads do) */
  int32_t nph = h->dist && h->o.repro ? nc : 1;
  h->nph = nph;
  int64_t ng = (int64_t)h->K * nph;
  /* this rank's ratings in (stratum, color, index) order, offsets by unit */
  DPO__ALLOC(gs, nf + 1);
  DPO__ALLOC(h->uoff, ng + 1);
  DPO__ALLOC(h->sord, ntr);
  DPO__ALLOC(h->soff, h->K + 1);
#define DPO__FINE(k) ((int64_t)part->stratum[k] * nc + part->phase[k])
#define DPO__UNIT(k) ((int64_t)part->stratum[k] * nph + (nph > 1 ? part->phase[k] : 0))
  for (int64_t k = 0; k < ntr; k++) h->uoff[DPO__UNIT(goff + k) + 1]++;
  for (int64_t g = 0; g < ng; g++) h->uoff[g + 1] += h->uoff[g];
  for (int32_t s = 0; s <= h->K; s++) h->soff[s] = h->uoff[(int64_t)s * nph];
  for (int64_t k = 0; k < ntr; k++) gs[DPO__FINE(goff + k) + 1]++;
  for (int64_t g = 0; g < nf; g++) gs[g + 1] += gs[g];
  for (int64_t k = 0; k < ntr; k++) h->sord[gs[DPO__FINE(goff + k)]++] = k;
  /* Store the ratings in unit order, so an epoch reads them sequentially (a unit's
   * ratings are ~K apart in the sorted order: five scattered loads per rating were the
   * largest cost of a HOGWILD epoch).  Within a color they stay in (user, item) order, and
   * the same on any number of ranks, so every sum keeps its order. */
  if ((st = dpo__permute_ratings(h, ntr))) goto fail;
  /* items touched by any rank in each unit, in the order of first appearance in the serial
   * order (the same on every rank): the rows combined by the unit's Allreduce */
  memset(gs, 0, sizeof(int64_t) * (size_t)(nf + 1));
  DPO__ALLOC(gord, gn);
  DPO__ALLOC(stamp, h->ni);
  DPO__ALLOC(h->toff, ng + 1);
  DPO__ALLOC(h->titem, gn);
  for (int64_t k = 0; k < gn; k++) gs[DPO__FINE(k) + 1]++;
  for (int64_t g = 0; g < nf; g++) gs[g + 1] += gs[g];
  for (int64_t k = 0; k < gn; k++) gord[gs[DPO__FINE(k)]++] = k;
  for (int32_t i = 0; i < h->ni; i++) stamp[i] = -1;
  int64_t nt = 0, cur = 0; /* toff[0 .. cur] are set */
  for (int64_t a = 0; a < gn; a++) {
    int64_t g = DPO__UNIT(gord[a]);
    int32_t it = gi[gord[a]];
    while (cur < g) h->toff[++cur] = nt;
    if (stamp[it] != g) {
      stamp[it] = g;
      h->titem[nt++] = it;
    }
  }
  while (cur < ng) h->toff[++cur] = nt;
#undef DPO__FINE
#undef DPO__UNIT
  if (h->dist) {
    DPO__ALLOC(h->dx2, (int64_t)h->ni * r);
    DPO__ALLOC(h->gx2, (int64_t)h->ni * r);
    DPO__ALLOC(h->xs, (int64_t)h->ni * r);
    DPO__ALLOC(h->pk, (2 * (int64_t)r + 1) * h->ni); /* [step, gradient, proposers] per item */
  }
fail:
  free(scnt);
  free(sdsp);
  free(gu);
  free(gi);
  free(gs);
  free(gord);
  free(stamp);
  dpo_mf_partition_destroy(part);
  return st;
}

/* the mean degree over the rows that have ratings */
static double dpo__hm_mean_deg(const int64_t *deg, int32_t n) {
  double s = 0;
  int64_t c = 0;
  for (int32_t a = 0; a < n; a++)
    if (deg[a] > 0) s += (double)deg[a], c++;
  return c ? s / (double)c : 1;
}
/* a row's metric weight 1 / (deg^p dbar^(1-p)); p = 1 exactly 1 / deg */
static double dpo__hm_metric_w(int64_t deg, double p, double dbar) {
  if (deg <= 0) return 1.0;
  if (p == 1) return 1.0 / (double)deg;
  return 1.0 / (pow((double)deg, p) * pow(dbar, 1 - p));
}

/* Metric weights, the initial point and the buffers; totals of the split in res. */
static int dpo__hm_vars(dpo__hm_t *h, const int64_t *udeg, const int64_t *ideg,
                        dpo_hamsi_result_t *res) {
  int st = DPO_OK;
  int32_t r = h->r;
  res->n_train = h->n;
  res->n_test = h->ntest;
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &res->n_train, 1, MPI_INT64_T, MPI_SUM, h->comm));
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &res->n_test, 1, MPI_INT64_T, MPI_SUM, h->comm));
  /* metric weights: 1 / (training ratings of the variable's user or item), or with metric_pow
   * p < 1 1 / (deg^p dbar^(1-p)) (dpopt/hamsi.h); 1 for a row with none (it has no
   * gradient).  From the global degrees: rank-independent. */
  DPO__ALLOC(h->w1, h->nvr);
  DPO__ALLOC(h->w2, (int64_t)h->ni * r);
  double p = h->o.metric_pow, db1 = dpo__hm_mean_deg(udeg, h->nu), db2 = dpo__hm_mean_deg(ideg, h->ni);
  for (int64_t v = 0; v < h->nvr; v++)
    h->w1[v] = dpo__hm_metric_w(udeg[h->u0 + v / r], p, db1);
  for (int64_t v = 0; v < (int64_t)h->ni * r; v++)
    h->w2[v] = dpo__hm_metric_w(ideg[v / r], p, db2);

  /* variables: initial point from a hash of the global variable index (rank-independent) */
  int M = h->M;
  uint64_t iseed = dpo__mf_mix(h->o.seed ^ 0x1417ULL);
  double sc = h->o.init_scale;
  /* biased model: factors centred (the ratings are), bias 0, constant column 1 */
  int bz = h->o.biases;
  double sh = bz ? 0.5 : 0;
  DPO__ALLOC(h->x1, h->nvr);
  for (int64_t v = 0; v < h->nvr; v++) {
    int32_t q = (int32_t)(v % r);
    h->x1[v] = bz && q >= r - 2 ? (q == r - 1)
               : h->o.x1_init ? h->o.x1_init[((int64_t)h->u0 + v / r) * h->o.r + q]
               : sc * (dpo__mf_unit(dpo__mf_mix(iseed + (uint64_t)((int64_t)h->u0 * r + v))) - sh);
  }
  if (h->hamsi) {
    DPO__ALLOC(h->H1, h->nvr * M);
    DPO__ALLOC(h->xb1, h->nvr);
    DPO__ALLOC(h->gb1, h->nvr);
    DPO__ALLOC(h->s1, h->nvr);
    DPO__ALLOC(h->y1, h->nvr);
  }
  /* the history cache: every block's [x | H] on every rank, and the P x B table */
  double cache_bytes =
      (8.0 + M * (double)sizeof(dpo__hist_t)) * (double)h->ni * r + 8.0 * h->size * h->B;
  h->hcache = h->grid && h->hamsi && h->size > 1 && h->o.cache_mb > 0 &&
              cache_bytes <= h->o.cache_mb * 1e6;
  if (h->hcache) {
    DPO__ALLOC(h->pb, h->B);
    DPO__ALLOC(h->hin, h->B);
    DPO__ALLOC(h->hout, h->B);
    DPO__ALLOC(h->hincap, h->B);
    DPO__ALLOC(h->houtcap, h->B);
    DPO__ALLOC(h->known, (int64_t)h->size * h->B); /* 0: all start with zero histories */
    DPO__ALLOC(h->hlog, M);
    DPO__ALLOC(h->nin, h->B);
    DPO__ALLOC(h->slin, (int64_t)h->B * M);
  }
  DPO__ALLOC(h->cbuf, h->B);
  DPO__ALLOC(h->cnext, h->B);
  DPO__ALLOC(h->sfree, 2 * (int64_t)h->B);
  DPO__ALLOC(h->cin, h->B);
  DPO__ALLOC(h->pend, h->B);
  DPO__ALLOC(h->slast, h->B);
  DPO__ALLOC(h->xbc, h->B);
  DPO__ALLOC(h->gbc, h->B);
  DPO__ALLOC(h->sc, h->B);
  DPO__ALLOC(h->yc, h->B);
  DPO__ALLOC(h->rreq, 2 * (int64_t)h->B); /* per block: x and history receives */
  DPO__ALLOC(h->sreq, 4 * (int64_t)h->B);  /* and sends, two travels' */
  for (int64_t q = 0; q < 4 * (int64_t)h->B; q++) {
    if (q < 2 * (int64_t)h->B) h->rreq[q] = MPI_REQUEST_NULL;
    h->sreq[q] = MPI_REQUEST_NULL;
  }
  int64_t maxc = 0;
  for (int32_t c = 0; c < h->B; c++) {
    if (dpo__nvc(h, c) > maxc) maxc = dpo__nvc(h, c);
    /* home: stratum 0, block c at the owner of user interval c */
    if (h->hcache) DPO__ALLOC(h->pb[c], dpo__cbsize(h, c));
    if (h->grid && h->owner[c] != h->rank) continue; /* generic: X2 replicated */
    if (h->hcache)
      h->cbuf[c] = h->pb[c];
    else
      DPO__ALLOC(h->cbuf[c], dpo__cbsize(h, c));
    for (int64_t v = 0; v < dpo__nvc(h, c); v++) {
      int32_t q = (int32_t)(v % r);
      h->cbuf[c][v] =
          bz && q >= r - 2 ? (q == r - 2)
          : h->o.x2t_init ? h->o.x2t_init[((int64_t)h->col_cut[c] + v / r) * h->o.r + q]
          : sc * (dpo__mf_unit(dpo__mf_mix(iseed + (uint64_t)((int64_t)h->nu * r +
                                                              (int64_t)h->col_cut[c] * r + v))) - sh);
    }
  }
  h->cur_k = 0;
  DPO__ALLOC(h->g1s, h->nvr);
  DPO__ALLOC(h->g2s, maxc);
  DPO__ALLOC(h->tn1, h->nvr / (h->r > 0 ? h->r : 1) + 1);
  DPO__ALLOC(h->tn2, maxc / (h->r > 0 ? h->r : 1) + 1);
  DPO__ALLOC(h->nn1, h->nvr / (h->r > 0 ? h->r : 1) + 1);
  DPO__ALLOC(h->nn2, maxc / (h->r > 0 ? h->r : 1) + 1);
  DPO__ALLOC(h->d, r);
  DPO__ALLOC(h->fpart, 3 * (int64_t)(h->grid ? h->B : h->nch) + DPO__HM_EW);
  /* dpo__eval: 4 sums a part (B or nch parts); dpo__hm_pair: 2M a part (2B or nch + 1),
   * followed by the safeguard's 3 a part (B or nch) when dpo__hm_check_pair reduces both;
   * then the epoch's words (fpart too) */
  DPO__ALLOC(h->part, (2 * (int64_t)(h->grid ? h->B : h->nch) + 1) * (2 * M > 4 ? 2 * M : 4) +
                          3 * (int64_t)(h->grid ? h->B : h->nch) + DPO__HM_EW);
  if (h->hamsi && (st = dpo__lbfgs_init(&h->lb, M, h->o.sigma0))) goto fail;
  /* the factors-only model (the thesis's objective, thesis eq. (3.1)) takes the only-shrinking
   * sigma of hamsi-mf (see lbfgs_compact.c) and keeps its memory when dpo__check undoes a
   * quasi-Newton epoch.  The biased model keeps the latest pair's sigma and the reset: with
   * both rules its held-out RMSE on rank-3 data with noise 0.3 (test_mf_model) rose from below
   * 0.36 to 0.53 */
  h->lb.shrink_only = !h->o.biases;
  h->sigma = h->o.sigma0;
  h->damp = 1;
  h->qdamp = 1;
  h->gd_fref = -1;
fail:
  return st;
}

/* mu = the mean training rating and res->mean_test_rmse, the held-out RMSE of predicting it
 * (the baseline any model should beat), both summed in the fixed parts of the RMSE (grid: user
 * intervals; generic: user chunks), so rank-independent.  Biased model: mu is subtracted from
 * the training and held-out ratings. */
static int dpo__hm_center(dpo__hm_t *h, dpo_hamsi_result_t *res) {
  int32_t nparts = h->grid ? h->B : h->nch;
  double *part = calloc((size_t)nparts, sizeof(double)), tot = 0, sse = 0;
  if (!part) return dpo_err(DPO_ENOMEM, "hamsi: mean");
  for (int64_t b = 0; b < h->nblk; b++) {
    const dpo__blk_t *bk = &h->blk[b];
    for (int64_t k = bk->off; k < bk->off + bk->n; k++)
      part[h->grid ? h->i0 + (int32_t)(b / h->B) : h->chunk_of[h->u0 + h->lu[k]]] += h->y[k];
  }
  int st = dpo__hm_reduce_parts(h, part, nparts, 1, &tot);
  double mu = res->n_train > 0 ? tot / (double)res->n_train : 0;
  memset(part, 0, sizeof(double) * (size_t)nparts);
  for (int64_t k = 0; k < h->ntest && !st; k++)
    part[h->grid ? h->uint_of[h->tu_u[k]] : h->chunk_of[h->tu_u[k]]] +=
        (h->ty[k] - mu) * (h->ty[k] - mu);
  if (!st) st = dpo__hm_reduce_parts(h, part, nparts, 1, &sse);
  free(part);
  if (st) return st;
  res->mean_test_rmse = res->n_test > 0 ? sqrt(sse / (double)res->n_test) : NAN;
  if (!h->o.biases) return DPO_OK;
  h->mu = mu;
  for (int64_t k = 0; k < h->n; k++) h->y[k] -= h->mu;
  for (int64_t k = 0; k < h->ntest; k++) h->ty[k] -= h->mu;
  return DPO_OK;
}

int dpo__hm_setup(dpo__hm_t *h, const dpo_ratings_t *in, dpo_hamsi_result_t *res) {
  int st = DPO_OK;
  int64_t *udeg = NULL, *ideg = NULL, nin = in ? in->n : 0;
  char *istest = NULL;
  dpo__rt_t *tr = NULL;
  DPO__ALLOC(udeg, h->nu);
  DPO__ALLOC(ideg, h->ni);
  DPO__ALLOC(istest, nin);
  if ((st = dpo__hm_degrees(h, in, istest, udeg, ideg)) || (st = dpo__hm_layout(h, udeg, ideg)) ||
      (st = dpo__hm_route(h, in, istest, udeg, ideg, &tr)) || (st = dpo__hm_blocks(h, tr, res)) ||
      (!h->grid && (st = dpo__hm_generic(h, tr, res))) || (st = dpo__hm_vars(h, udeg, ideg, res)) || 
      (st = dpo__hm_center(h, res)))
    goto fail;
fail:
  free(udeg);
  free(ideg);
  free(istest);
  free(tr);
  return st;
}
