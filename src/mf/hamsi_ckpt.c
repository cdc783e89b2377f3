/* HAMSI / mb-GD checkpoints at the end of an epoch (opts.ckpt_path): everything the next
 * epochs read, so a resumed run computes the bytes of the uninterrupted one.
 *   every rank: its user rows x1 and their L-BFGS history rows H1, the item blocks it holds
 *               ([x | H], where the ring left them: stratum cur_k), the safeguard's start of
 *               the last accepted epoch (sg_prev) and the early-stopping point (best), its
 *               counters and phase times;
 *   rank 0:     the epoch, the loop's state (training time, evaluation cadence, best held-out
 *               RMSE, stop), the shared scalars (sigma, damping, rejections, references), the
 *               compact L-BFGS matrices (the same on every rank), the schedule stream and the
 *               caller's aux number (the trace's length).
 * Not saved, because the next epoch rebuilds them: x-bar, g-bar, s, y (lines 12-14 set them
 * at the epoch's first and last step), the last good point (the current one), mb-GD's epoch
 * start.  The history cache (opts.cache_mb) is not saved either: after a resume every
 * rank's copy counts as stale, so the first moves send whole histories (the same bytes the
 * cached moves would have completed).  Rank 0 gathers the ranks' parts and writes one file
 * atomically; a resume needs the same number of ranks and settings (checked). */
#include <stdlib.h>
#include <string.h>

#include "dpopt/runout.h"
#include "mf/hamsi_impl.h"

/* 2: the fifth shared scalar is qdamp (0 in format 1, which would zero the quasi-Newton steps) */
#define DPO__CK_MAGIC "DPOMFCK2"
/* an MPI call of the save / load: its failure is the status (st), then out */
#define DPO__CK_MPI(call)                                                     \
  do {                                                                        \
    if ((call) != MPI_SUCCESS) {                                              \
      st = dpo_err(DPO_EMPI, "hamsi checkpoint: %s failed", #call);           \
      goto out;                                                               \
    }                                                                         \
  } while (0)

typedef struct {
  char *p;
  size_t n, cap, at;
  int bad;
} dpo__ckb_t;

static void dpo__put(dpo__ckb_t *b, const void *x, size_t len) {
  if (b->bad) return;
  if (b->n + len > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + len) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->bad = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  if (len) memcpy(b->p + b->n, x, len);
  b->n += len;
}

static void dpo__get(dpo__ckb_t *b, void *x, size_t len) {
  if (b->bad || b->at + len > b->n) {
    b->bad = 1;
    memset(x, 0, len);
    return;
  }
  memcpy(x, b->p + b->at, len);
  b->at += len;
}

/* Does this rank hold item block c at stratum k? */
static int dpo__holds(const dpo__hm_t *h, int32_t k, int32_t c) {
  return h->grid ? h->owner[dpo__mod(c - k, h->B)] == h->rank : 1;
}

/* A saved point's factor rows (dpo__snap_t: x1 and the x part of the blocks held at sn->k). */
/* the compact L-BFGS memory, written (save) or read back in the same order */
static void dpo__xfer_lbfgs(dpo__ckb_t *b, dpo__lbfgs_t *l, size_t M, int save) {
  struct {
    void *p;
    size_t len;
  } f[] = {{&l->m, sizeof l->m},       {&l->sigma, sizeof l->sigma},
           {&l->accepted, sizeof l->accepted}, {&l->rejected, sizeof l->rejected},
           {l->age, sizeof(int) * M},  {l->SY, sizeof(double) * M * M},
           {l->YY, sizeof(double) * M * M}, {l->N, sizeof(double) * 4 * M * M}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    save ? dpo__put(b, f[i].p, f[i].len) : dpo__get(b, f[i].p, f[i].len);
}

static void dpo__put_snap(dpo__ckb_t *b, const dpo__hm_t *h, const dpo__snap_t *sn) {
  int32_t has = sn->x1 != NULL;
  dpo__put(b, &has, sizeof has);
  if (!has) return;
  dpo__put(b, &sn->k, sizeof sn->k);
  dpo__put(b, &sn->t, sizeof sn->t);
  dpo__put(b, sn->x1, sizeof(double) * (size_t)h->nvr);
  for (int32_t c = 0; c < h->B; c++)
    if (dpo__holds(h, sn->k, c)) dpo__put(b, sn->c[c], sizeof(double) * (size_t)dpo__nvc(h, c));
}

static int dpo__get_snap(dpo__ckb_t *b, const dpo__hm_t *h, dpo__snap_t *sn) {
  int32_t has = 0;
  dpo__get(b, &has, sizeof has);
  if (!has || b->bad) return DPO_OK;
  dpo__get(b, &sn->k, sizeof sn->k);
  dpo__get(b, &sn->t, sizeof sn->t);
  if (b->bad || sn->k < 0 || sn->k >= h->K) return DPO_OK;
  if ((!sn->x1 && !(sn->x1 = malloc(sizeof(double) * (size_t)(h->nvr ? h->nvr : 1)))) ||
      (!sn->c && !(sn->c = calloc((size_t)h->B, sizeof *sn->c))))
    return dpo_err(DPO_ENOMEM, "hamsi checkpoint: saved point");
  dpo__get(b, sn->x1, sizeof(double) * (size_t)h->nvr);
  for (int32_t c = 0; c < h->B; c++) {
    if (!dpo__holds(h, sn->k, c)) continue;
    int64_t nv = dpo__nvc(h, c);
    if (!sn->c[c] && !(sn->c[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1))))
      return dpo_err(DPO_ENOMEM, "hamsi checkpoint: saved point");
    dpo__get(b, sn->c[c], sizeof(double) * (size_t)nv);
  }
  return DPO_OK;
}

/* This rank's part. */
static void dpo__put_rank(dpo__ckb_t *b, const dpo__hm_t *h) {
  dpo__put(b, &h->nvr, sizeof h->nvr);
  dpo__put(b, h->x1, sizeof(double) * (size_t)h->nvr);
  if (h->hamsi) dpo__put(b, h->H1, sizeof(dpo__hist_t) * (size_t)(h->nvr * h->M));
  for (int32_t c = 0; c < h->B; c++)
    if (dpo__holds(h, h->cur_k, c))
      dpo__put(b, h->cbuf[c], sizeof(double) * (size_t)dpo__cbsize(h, c));
  dpo__put_snap(b, h, &h->sg_prev);
  dpo__put_snap(b, h, &h->best);
  int64_t iv[4] = {h->capped, h->processed, h->ring_sent, h->ring_hsent};
  uint64_t kv[2] = {h->k_grad, h->k_update};
  double tv[2] = {h->t_hess, h->t_comm};
  dpo__put(b, iv, sizeof iv);
  dpo__put(b, kv, sizeof kv);
  dpo__put(b, tv, sizeof tv);
}

static int dpo__get_rank(dpo__ckb_t *b, dpo__hm_t *h) {
  int64_t nvr = -1;
  dpo__get(b, &nvr, sizeof nvr);
  if (b->bad || nvr != h->nvr)
    return dpo_err(DPO_EFORMAT, "hamsi checkpoint: rank %d's part does not match its user rows "
                   "(%lld, expected %lld)", h->rank, (long long)nvr, (long long)h->nvr);
  dpo__get(b, h->x1, sizeof(double) * (size_t)h->nvr);
  if (h->hamsi) dpo__get(b, h->H1, sizeof(dpo__hist_t) * (size_t)(h->nvr * h->M));
  for (int32_t c = 0; c < h->B; c++)
    if (dpo__holds(h, h->cur_k, c))
      dpo__get(b, h->cbuf[c], sizeof(double) * (size_t)dpo__cbsize(h, c));
  int st = dpo__get_snap(b, h, &h->sg_prev);
  if (!st) st = dpo__get_snap(b, h, &h->best);
  int64_t iv[4];
  uint64_t kv[2];
  double tv[2];
  dpo__get(b, iv, sizeof iv);
  dpo__get(b, kv, sizeof kv);
  dpo__get(b, tv, sizeof tv);
  h->capped = iv[0];
  h->processed = iv[1];
  h->ring_sent = iv[2];
  h->ring_hsent = iv[3];
  h->k_grad = kv[0];
  h->k_update = kv[1];
  h->t_hess = tv[0];
  h->t_comm = tv[1];
  if (!st && b->bad) st = dpo_err(DPO_EFORMAT, "hamsi checkpoint: rank %d's part is short", h->rank);
  return st;
}

/* The shape a checkpoint must match: ranks, blocks, strata, row length, memory, users, items,
 * method, grid. */
static void dpo__shape(const dpo__hm_t *h, int32_t sh[9]) {
  int32_t v[9] = {h->size, h->B, h->K, h->r, h->M, h->nu, h->ni, h->hamsi, h->grid};
  memcpy(sh, v, sizeof v);
}

/* Rank 0's part: the loop, the shared scalars, L-BFGS, the schedule stream. */
static void dpo__put_global(dpo__ckb_t *b, const dpo__hm_t *h, const dpo__hm_loop_t *lp,
                            const dpo_rng_t *rng) {
  int32_t sh[9];
  dpo__shape(h, sh);
  dpo__put(b, sh, sizeof sh);
  dpo__put(b, lp, sizeof *lp);
  double dv[5] = {h->sigma, h->damp, h->gd_fref, h->gd_fref_prev, h->qdamp};
  int64_t iv[5] = {h->undone, h->sg_rejects, h->strata, h->exchanges, h->hgen};
  dpo__put(b, dv, sizeof dv);
  dpo__put(b, iv, sizeof iv);
  dpo__put(b, &h->cur_k, sizeof h->cur_k);
  if (h->hamsi) dpo__xfer_lbfgs(b, (dpo__lbfgs_t *)&h->lb, (size_t)h->M, 1);
  dpo_rng_state_t rs;
  memset(&rs, 0, sizeof rs);
  if (rng) dpo_rng_get_state(rng, &rs);
  dpo__put(b, &rs, sizeof rs);
}

static int dpo__get_global(dpo__ckb_t *b, dpo__hm_t *h, dpo__hm_loop_t *lp, dpo_rng_t *rng,
                           const char *path) {
  int32_t sh[9], want[9];
  dpo__shape(h, want);
  dpo__get(b, sh, sizeof sh);
  if (b->bad) return dpo_err(DPO_EFORMAT, "%s: not a dpopt mf checkpoint (short)", path);
  if (sh[0] != want[0])
    return dpo_err(DPO_EINVAL, "%s: written by a run on %d ranks; resume it on %d (this run "
                   "has %d): each rank's factor rows and item blocks are in it", path, sh[0],
                   sh[0], want[0]);
  if (memcmp(sh, want, sizeof sh))
    return dpo_err(DPO_EFORMAT, "%s: written for another problem (blocks %d, strata %d, row %d, "
                   "memory %d, %d users x %d items; this run: %d, %d, %d, %d, %d x %d)", path,
                   sh[1], sh[2], sh[3], sh[4], sh[5], sh[6], want[1], want[2], want[3],
                   want[4], want[5], want[6]);
  dpo__get(b, lp, sizeof *lp);
  double dv[5];
  int64_t iv[5];
  dpo__get(b, dv, sizeof dv);
  dpo__get(b, iv, sizeof iv);
  dpo__get(b, &h->cur_k, sizeof h->cur_k);
  h->sigma = dv[0];
  h->damp = dv[1];
  h->gd_fref = dv[2];
  h->gd_fref_prev = dv[3];
  h->qdamp = dv[4];
  h->undone = iv[0];
  h->sg_rejects = (int)iv[1];
  h->strata = iv[2];
  h->exchanges = iv[3];
  h->hgen = iv[4];
  if (h->hamsi) dpo__xfer_lbfgs(b, &h->lb, (size_t)h->M, 0);
  dpo_rng_state_t rs;
  dpo__get(b, &rs, sizeof rs);
  if (b->bad) return dpo_err(DPO_EFORMAT, "%s: not a dpopt mf checkpoint (short)", path);
  if (rng && !rs.seeded) return dpo_err(DPO_EFORMAT, "%s: no schedule stream", path);
  return rng ? dpo_rng_set_state(rng, &rs) : DPO_OK;
}

int dpo__hm_ckpt_save(dpo__hm_t *h, const char *path, const dpo__hm_loop_t *lp,
                      const dpo_rng_t *rng) {
  dpo__ckb_t mine = {0}, all = {0};
  int st = DPO_OK, *cnt = NULL, *dsp = NULL;
  dpo__put_rank(&mine, h);
  int n = mine.bad || mine.n > (size_t)1 << 30 ? -1 : (int)mine.n;
  if (h->rank == 0 && (!(cnt = malloc(sizeof(int) * (size_t)h->size)) ||
                       !(dsp = malloc(sizeof(int) * (size_t)h->size))))
    st = dpo_err(DPO_ENOMEM, "hamsi checkpoint");
  if (!st && n < 0) st = dpo_err(DPO_ENOMEM, "hamsi checkpoint: rank %d's part", h->rank);
  if ((st = dpo_agree(h->comm, st))) goto out;
  DPO__CK_MPI(MPI_Gather(&n, 1, MPI_INT, cnt, 1, MPI_INT, 0, h->comm));
  int64_t tot = 0;
  if (h->rank == 0) {
    dpo__put(&all, DPO__CK_MAGIC, 8);
    dpo__put_global(&all, h, lp, rng);
    for (int p = 0; p < h->size; p++) {
      int64_t c = cnt[p];
      dpo__put(&all, &c, sizeof c);
    }
    size_t head = all.n;
    for (int p = 0; p < h->size; p++) {
      dsp[p] = (int)tot;
      tot += cnt[p];
    }
    if (tot > (int64_t)1 << 31) st = dpo_err(DPO_EUNSUP, "hamsi checkpoint over 2 GB");
    else {
      if (!all.bad && all.cap < head + (size_t)tot) { /* room for the ranks' parts */
        char *q = realloc(all.p, head + (size_t)tot + 1);
        if (!q) all.bad = 1;
        else all.p = q, all.cap = head + (size_t)tot + 1;
      }
      if (all.bad) st = dpo_err(DPO_ENOMEM, "hamsi checkpoint");
    }
  }
  if ((st = dpo_agree(h->comm, st))) goto out;
  DPO__CK_MPI(MPI_Gatherv(mine.p, n, MPI_BYTE, h->rank == 0 ? all.p + all.n : NULL, cnt,
                                 dsp, MPI_BYTE, 0, h->comm));
  if (h->rank == 0) st = dpo_write_atomic_private(path, all.p, all.n + (size_t)tot);
  st = dpo_agree(h->comm, st);
out:
  free(cnt);
  free(dsp);
  free(mine.p);
  free(all.p);
  return st;
}

/* Rank 0 reads the file and checks its shape; every rank gets its part. */
int dpo__hm_ckpt_load(dpo__hm_t *h, const char *path, dpo__hm_loop_t *lp, dpo_rng_t *rng) {
  dpo__ckb_t all = {0}, mine = {0};
  int st = DPO_OK, *cnt = NULL, *dsp = NULL, n = 0;
  int32_t k = 0;
  if (h->rank == 0) {
    FILE *f = fopen(path, "rb");
    long len = -1;
    if (!f) st = dpo_err(DPO_EIO, "%s: cannot read the checkpoint", path);
    else if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 8 || fseek(f, 0, SEEK_SET))
      st = dpo_err(DPO_EFORMAT, "%s: not a dpopt mf checkpoint", path);
    else if (!(all.p = malloc((size_t)len)) || fread(all.p, 1, (size_t)len, f) != (size_t)len)
      st = dpo_err(DPO_EIO, "%s: cannot read the checkpoint", path);
    if (f) fclose(f);
    all.n = len > 0 ? (size_t)len : 0;
    char mg[8];
    if (!st) dpo__get(&all, mg, 8);
    if (!st && memcmp(mg, DPO__CK_MAGIC, 8))
      st = dpo_err(DPO_EFORMAT, "%s: not a dpopt mf checkpoint", path);
    if (!st) st = dpo__get_global(&all, h, lp, rng, path);
    if (!st && (!(cnt = malloc(sizeof(int) * (size_t)h->size)) ||
                !(dsp = malloc(sizeof(int) * (size_t)h->size))))
      st = dpo_err(DPO_ENOMEM, "hamsi checkpoint");
    int64_t tot = 0;
    for (int p = 0; !st && p < h->size; p++) {
      int64_t c = -1;
      dpo__get(&all, &c, sizeof c);
      if (all.bad || c < 0 || c > INT32_MAX) st = dpo_err(DPO_EFORMAT, "%s: bad part size", path);
      else cnt[p] = (int)c, dsp[p] = (int)tot, tot += c;
    }
    if (!st && all.at + (size_t)tot != all.n)
      st = dpo_err(DPO_EFORMAT, "%s: truncated (the ranks' parts)", path);
    k = h->cur_k;
  }
  if ((st = dpo_agree(h->comm, st))) goto out;
  DPO__CK_MPI(MPI_Bcast(&k, 1, MPI_INT32_T, 0, h->comm));
  DPO__CK_MPI(MPI_Scatter(cnt, 1, MPI_INT, &n, 1, MPI_INT, 0, h->comm));
  if (!(mine.p = malloc((size_t)n + 1))) st = dpo_err(DPO_ENOMEM, "hamsi checkpoint");
  if ((st = dpo_agree(h->comm, st))) goto out;
  mine.n = (size_t)n;
  DPO__CK_MPI(MPI_Scatterv(h->rank == 0 ? all.p + all.at : NULL, cnt, dsp, MPI_BYTE,
                                  mine.p, n, MPI_BYTE, 0, h->comm));
  /* the shared scalars (rank 0 read them) */
  double dv[5] = {h->sigma, h->damp, h->gd_fref, h->gd_fref_prev, h->qdamp};
  int64_t iv[5] = {h->undone, h->sg_rejects, h->strata, h->exchanges, h->hgen};
  DPO__CK_MPI(MPI_Bcast(dv, 5, MPI_DOUBLE, 0, h->comm));
  DPO__CK_MPI(MPI_Bcast(iv, 5, MPI_INT64_T, 0, h->comm));
  DPO__CK_MPI(MPI_Bcast(lp, (int)sizeof *lp, MPI_BYTE, 0, h->comm));
  if (rng) { /* every rank draws the schedule from the stream (src/mf/hamsi.c) */
    dpo_rng_state_t rs;
    if (h->rank == 0) dpo_rng_get_state(rng, &rs);
    DPO__CK_MPI(MPI_Bcast(&rs, (int)sizeof rs, MPI_BYTE, 0, h->comm));
    if (h->rank != 0) st = dpo_rng_set_state(rng, &rs);
    if ((st = dpo_agree(h->comm, st))) goto out;
  }
  h->sigma = dv[0], h->damp = dv[1], h->gd_fref = dv[2], h->gd_fref_prev = dv[3];
  h->qdamp = dv[4];
  h->undone = iv[0], h->sg_rejects = (int)iv[1], h->strata = iv[2], h->exchanges = iv[3];
  h->hgen = iv[4];
  if (h->hamsi) {
    dpo__lbfgs_t *l = &h->lb;
    int M = h->M, mi[2] = {l->m, 0};
    int64_t ar[2] = {l->accepted, l->rejected};
    DPO__CK_MPI(MPI_Bcast(mi, 2, MPI_INT, 0, h->comm));
    DPO__CK_MPI(MPI_Bcast(ar, 2, MPI_INT64_T, 0, h->comm));
    DPO__CK_MPI(MPI_Bcast(&l->sigma, 1, MPI_DOUBLE, 0, h->comm));
    DPO__CK_MPI(MPI_Bcast(l->age, M, MPI_INT, 0, h->comm));
    DPO__CK_MPI(MPI_Bcast(l->SY, M * M, MPI_DOUBLE, 0, h->comm));
    DPO__CK_MPI(MPI_Bcast(l->YY, M * M, MPI_DOUBLE, 0, h->comm));
    DPO__CK_MPI(MPI_Bcast(l->N, 4 * M * M, MPI_DOUBLE, 0, h->comm));
    l->m = mi[0], l->accepted = ar[0], l->rejected = ar[1];
  }
  /* every cached history copy counts as stale (the same table on every rank): the next
   * moves send whole histories; then the ring puts every item block where stratum k has it
   * (setup left them at stratum 0), and the blocks' bytes are read into them */
  if (h->hcache)
    for (int64_t q = 0; q < (int64_t)h->size * h->B; q++) h->known[q] = h->hgen - h->M;
  h->cur_k = 0;
  if ((st = dpo_agree(h->comm, dpo__hm_travel(h, k)))) goto out;
  st = dpo__get_rank(&mine, h);
  if (!st && h->rank == 0 && h->o.ckpt_loaded)
    st = h->o.ckpt_loaded(h->o.ckpt_ctx, lp->t, lp->aux);
  st = dpo_agree(h->comm, st);
out:
  free(cnt);
  free(dsp);
  free(mine.p);
  free(all.p);
  return st;
}

int dpo__hm_ckpt_epoch(dpo__hm_t *h, dpo__hm_loop_t *lp, const dpo_rng_t *rng,
                       const int64_t due[2]) {
  const dpo_hamsi_opts_t *o = &h->o;
  if (!due[0]) return DPO_OK;
  lp->aux = due[1];
  int st = dpo__hm_ckpt_save(h, o->ckpt_path, lp, rng);
  if (st || due[0] != 2) return st;
  char of[48] = "";
  if (o->epochs > 0) snprintf(of, sizeof of, " of %lld", (long long)o->epochs);
  return dpo_err(DPO_EINTR, "stopped after epoch %lld%s, checkpoint written", (long long)lp->t, of);
}
