/* Distributed HAMSI (thesis Chapter 3, Alg. 3) and its mb-GD baseline for matrix
 * factorization.  See dpopt/hamsi.h for the layout; the notes here say why.
 *
 * Variables: rank p keeps the rows of X1 of its user intervals [i0, i1) with their rows of
 * S and Y (row part); item block c travels as one buffer [x | S | Y].  In stratum k, user
 * interval i meets item block (i + k) mod B, so block c sits at the owner of interval
 * (c - k) mod B; changing stratum is a permutation of the item blocks between ranks.
 * x-bar and g-bar of an item block (line 12) stay on the rank that held it at the first inner
 * step: the first and last strata of an epoch are the same (K = [k, ..., k]), so the block is
 * back there when they are needed (line 14).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "dpopt/hamsi.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"
#include "mf/lbfgs_compact.h"
#include "mf/mf_impl.h"

void dpo_hamsi_opts_default(dpo_hamsi_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->method = DPO_MF_HAMSI;
  o->part = DPO_MF_STRATA_B;
  o->sched = DPO_MF_SCHED_DET;
  o->r = 10;
  o->nblocks = 0;
  o->memory = 5;
  /* beta_t = (eta t)^gamma (Alg. 3 line 5) divides every step (line 13; mb-GD x -= sigma0
   * D^-1 g / beta_t).  eta = 1 keeps beta_t >= 1, the hypothesis of Thm 3.1.3 (the thesis's
   * eta = 0.06 gives beta_1 = 0.24, a 4x longer first step).  sigma0 is in degree-scaled
   * units (hamsi.h), so it does not depend on the data size or the number of strata. */
  o->eta = 1;
  o->gamma = 0.51;
  o->sigma0 = 0.2;
  o->lambda = 0;
  o->init_scale = -1; /* <0: 2 sqrt(3 / r), so x1'x2 starts near 3 on a 1..5 scale (public) */
  o->epochs = 20;
  o->time_limit = 0;
  o->holdout = 0.1;
  o->seed = 1;
  o->repro = 0;
  o->eval_every = 1;
}

void dpo_hamsi_result_destroy(dpo_hamsi_result_t *r) {
  if (!r) return;
  free(r->X1);
  free(r->X2t);
  free(r->trace);
  free(r);
}

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

typedef struct {
  int64_t off, n;       /* ratings [off, off + n) */
  int64_t tuo, tio;     /* touched users / items offsets */
  int32_t ntu, nti;
  int32_t cb;           /* item block */
} dpo__blk_t;

typedef struct {
  MPI_Comm comm;
  int rank, size;
  dpo_hamsi_opts_t o;
  int32_t r, M, nu, ni, B, K; /* B: item blocks; K: strata */
  int grid, hamsi;
  int32_t *row_cut, *col_cut, *owner, *uint_of; /* uint_of: user -> interval */
  int32_t i0, i1, u0, u1;
  int64_t nvr;           /* row-part variables */
  double *x1, *S1, *Y1, *xb1, *gb1, *s1, *y1;
  double **cbuf, **cnext, **csend, **xbc, **gbc, **sc, **yc;
  int32_t cur_k;
  MPI_Request *req;
  int nreq;
  /* training ratings, sorted by block */
  int64_t n, ntest;
  int32_t *lu, *li;     /* user - u0, item - col_cut[block] */
  double *y, *wu, *wi;
  int32_t *tu, *ti;
  dpo__blk_t *blk;
  int64_t nblk;
  int64_t *sord, *soff;  /* generic: ratings of stratum k: sord[soff[k] .. soff[k+1]) */
  /* generic partitions on P ranks (see "Generic partitions on P ranks" below): unit g =
   * stratum * nph + phase; this rank's ratings of g are sord[uoff[g] .. uoff[g+1]), the items
   * touched by ANY rank in g are titem[toff[g] .. toff[g+1]) (same on every rank) */
  int dist;              /* generic partition on more than one rank */
  int32_t nph, nch;      /* phases per stratum; user chunks (dot-product / RMSE slots) */
  int64_t *uoff, *toff;
  int32_t *titem, *chunk_cut, *chunk_of;
  double *dx2, *gx2, *xs, *pk; /* item steps, item gradients, snapshot, Allreduce buffer */
  int32_t *tu_u, *tu_i;  /* generic test ratings */
  double *ty;
  double *g1s, *g2s, *d;
  double *w1, *w2;       /* metric weights 1/deg of each variable: row part, all item rows */
  dpo__lbfgs_t lb;
  double sigma;          /* step scale in use (sigma0 until a pair is accepted) */
  double beta;
  double t_hess, t_comm;
  uint64_t k_grad, k_update; /* dpo__block's phase times in dpo__tick units */
  double cal_w;              /* MPI_Wtime and dpo__tick at setup, to convert ticks */
  uint64_t cal_k;
  int64_t processed;
} dpo__hm_t;

/* user chunks of the generic partitionings (fixed reduction slots; also the most ranks) */
#define DPO__MF_NCHUNK 64

static int64_t dpo__nvc(const dpo__hm_t *h, int32_t c) {
  return (int64_t)(h->col_cut[c + 1] - h->col_cut[c]) * h->r;
}
static int64_t dpo__cbsize(const dpo__hm_t *h, int32_t c) {
  return dpo__nvc(h, c) * (1 + 2 * (int64_t)h->M);
}
static int32_t dpo__mod(int64_t a, int32_t b) { return (int32_t)(((a % b) + b) % b); }

/* ---- item-block travel (grid only) ---- */

static int dpo__travel_begin(dpo__hm_t *h, int32_t kfrom, int32_t kto) {
  h->nreq = 0;
  for (int32_t c = 0; c < h->B; c++) h->cnext[c] = h->csend[c] = NULL;
  for (int32_t i = h->i0; i < h->i1; i++) {
    int32_t c = dpo__mod(i + kto, h->B), src = h->owner[dpo__mod(c - kfrom, h->B)];
    if (src == h->rank) {
      h->cnext[c] = h->cbuf[c];
      continue;
    }
    int64_t sz = dpo__cbsize(h, c);
    if (!(h->cnext[c] = malloc(sizeof(double) * (size_t)(sz ? sz : 1))))
      return dpo_err(DPO_ENOMEM, "item block %d (%lld doubles)", c, (long long)sz);
    DPO_MPI_CHECK(MPI_Irecv(h->cnext[c], (int)sz, MPI_DOUBLE, src, 100 + c, h->comm,
                            &h->req[h->nreq++]));
  }
  return DPO_OK;
}

/* Send block c (held now) to where stratum kto needs it, right after its last use. */
static int dpo__travel_send(dpo__hm_t *h, int32_t c, int32_t kto) {
  int dst = h->owner[dpo__mod(c - kto, h->B)];
  if (dst == h->rank) return DPO_OK;
  h->csend[c] = h->cbuf[c];
  DPO_MPI_CHECK(MPI_Isend(h->cbuf[c], (int)dpo__cbsize(h, c), MPI_DOUBLE, dst, 100 + c, h->comm,
                          &h->req[h->nreq++]));
  return DPO_OK;
}

static int dpo__travel_end(dpo__hm_t *h, int32_t kto) {
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

static int dpo__travel(dpo__hm_t *h, int32_t kto) {
  int st;
  if (!h->grid || kto == h->cur_k) return DPO_OK;
  double t = MPI_Wtime();
  if ((st = dpo__travel_begin(h, h->cur_k, kto))) return st;
  for (int32_t i = h->i0; i < h->i1; i++)
    if ((st = dpo__travel_send(h, dpo__mod(i + h->cur_k, h->B), kto))) return st;
  st = dpo__travel_end(h, kto);
  h->t_comm += MPI_Wtime() - t;
  return st;
}

/* ---- one block: gradient (line 10), accumulation for lines 12/14, update (line 13) ---- */

/* Phase clock of dpo__block, which runs once per RATING under the generic partitions: the
 * time stamp counter (a few ns) instead of MPI_Wtime (40-60 ns through this VM's vDSO; a
 * quarter of a HOGWILD epoch went into reading the clock).  Ticks become seconds in
 * dpo__tick_seconds, calibrated against MPI_Wtime over the run (constant-rate TSC). */
static inline uint64_t dpo__tick(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return (uint64_t)(MPI_Wtime() * 1e9);
#endif
}

static double dpo__tick_seconds(const dpo__hm_t *h, uint64_t k) {
  double dw = MPI_Wtime() - h->cal_w;
  uint64_t dk = dpo__tick() - h->cal_k;
  return dk > 0 ? (double)k * (dw / (double)dk) : 0.0;
}

static void dpo__block(dpo__hm_t *h, const dpo__blk_t *b, int64_t one, double *xc, double *acc1,
                       double *acc2, double *dx2) {
  int32_t r = h->r, M = h->M;
  int64_t nvc = dpo__nvc(h, b->cb);
  double *Sc = xc + nvc, *Yc = Sc + nvc * M;
  const int32_t *tu, *ti;
  int32_t ntu, nti;
  int64_t off, n;
  if (one >= 0) { /* generic partition: one rating per block */
    off = one;
    n = 1;
    tu = h->lu + one;
    ti = h->li + one;
    ntu = nti = 1;
  } else {
    off = b->off;
    n = b->n;
    tu = h->tu + b->tuo;
    ti = h->ti + b->tio;
    ntu = b->ntu;
    nti = b->nti;
  }
  uint64_t k0 = dpo__tick();
  for (int32_t a = 0; a < ntu; a++) memset(h->g1s + (int64_t)tu[a] * r, 0, sizeof(double) * (size_t)r);
  for (int32_t a = 0; a < nti; a++) memset(h->g2s + (int64_t)ti[a] * r, 0, sizeof(double) * (size_t)r);
  for (int64_t k = off; k < off + n; k++) {
    int64_t u = h->lu[k], i = h->li[k];
    dpo__mf_term(r, h->x1 + u * r, xc + i * r, h->y[k], h->o.lambda, h->wu[k], h->wi[k],
                 h->g1s + u * r, h->g2s + i * r);
  }
  h->processed += n;
  if (acc1) {
    for (int32_t a = 0; a < ntu; a++)
      for (int32_t q = 0; q < r; q++) acc1[(int64_t)tu[a] * r + q] += h->g1s[(int64_t)tu[a] * r + q];
    for (int32_t a = 0; a < nti; a++)
      for (int32_t q = 0; q < r; q++) acc2[(int64_t)ti[a] * r + q] += h->g2s[(int64_t)ti[a] * r + q];
  }
  uint64_t k1 = dpo__tick();
  h->k_grad += k1 - k0;
  double ib = 1.0 / h->beta;
  const double *w2c = h->w2 + (int64_t)h->col_cut[b->cb] * r;
  if (h->hamsi && h->lb.m == M) {
    /* x_a -= (1/beta)(sigma D^-1 g_a + W_a N W_a' g_a), right to left (line 13, in the metric
     * D = diag(degrees): H0 = sigma D^-1, see lbfgs_compact.h) */
    double u[512], v[512];
    memset(u, 0, sizeof(double) * 2 * (size_t)M);
    for (int32_t a = 0; a < ntu; a++) {
      int64_t o = (int64_t)tu[a] * r;
      dpo__lbfgs_wtg(&h->lb, r, h->S1 + o * M, h->Y1 + o * M, h->w1 + o, h->g1s + o, u);
    }
    for (int32_t a = 0; a < nti; a++) {
      int64_t o = (int64_t)ti[a] * r;
      dpo__lbfgs_wtg(&h->lb, r, Sc + o * M, Yc + o * M, w2c + o, h->g2s + o, u);
    }
    dpo__lbfgs_nmul(&h->lb, u, v);
    for (int32_t a = 0; a < ntu; a++) {
      int64_t o = (int64_t)tu[a] * r;
      dpo__lbfgs_wmul(&h->lb, r, h->S1 + o * M, h->Y1 + o * M, h->w1 + o, h->g1s + o, v, h->d);
      for (int32_t q = 0; q < r; q++) h->x1[o + q] -= ib * h->d[q];
    }
    for (int32_t a = 0; a < nti; a++) {
      int64_t o = (int64_t)ti[a] * r;
      dpo__lbfgs_wmul(&h->lb, r, Sc + o * M, Yc + o * M, w2c + o, h->g2s + o, v, h->d);
      for (int32_t q = 0; q < r; q++) {
        double sq = ib * h->d[q];
        xc[o + q] -= sq;
        if (dx2) dx2[o + q] -= sq; /* 0 - s = -s and x + (-s) = x - s exactly (generic, P ranks) */
      }
    }
  } else {
    /* gradient step x -= (sigma / beta) D^-1 g until M pairs exist; mb-GD always (sigma stays
     * sigma0).  D^-1: a row's gradient is a sum over its ratings, so dividing by its degree
     * makes the step independent of how many ratings a user / item has (data size). */
    double f = h->sigma * ib;
    for (int32_t a = 0; a < ntu; a++) {
      int64_t o = (int64_t)tu[a] * r;
      for (int32_t q = 0; q < r; q++) h->x1[o + q] -= f * h->w1[o + q] * h->g1s[o + q];
    }
    for (int32_t a = 0; a < nti; a++) {
      int64_t o = (int64_t)ti[a] * r;
      for (int32_t q = 0; q < r; q++) {
        double sq = f * w2c[o + q] * h->g2s[o + q];
        xc[o + q] -= sq;
        if (dx2) dx2[o + q] -= sq;
      }
    }
  }
  h->k_update += dpo__tick() - k1;
}

/* Allreduce of per-part partial sums: repro sums the parts in part order on every rank (x + 0
 * is exact, so each slot of the reduced array is one part's own value); otherwise each rank
 * sums its parts in order and MPI adds the ranks. */
static int dpo__reduce_parts(dpo__hm_t *h, double *part, int32_t nparts, int32_t w, double *out) {
  if (h->o.repro) {
    DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, part, nparts * w, MPI_DOUBLE, MPI_SUM, h->comm));
    for (int32_t j = 0; j < w; j++) out[j] = 0;
    for (int32_t p = 0; p < nparts; p++)
      for (int32_t j = 0; j < w; j++) out[j] += part[(int64_t)p * w + j];
    return DPO_OK;
  }
  for (int32_t j = 0; j < w; j++) out[j] = 0;
  for (int32_t p = 0; p < nparts; p++)
    for (int32_t j = 0; j < w; j++) out[j] += part[(int64_t)p * w + j];
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, out, w, MPI_DOUBLE, MPI_SUM, h->comm));
  return DPO_OK;
}

/* partial [S'y; Y'Dy] (D = diag(w)) with s'y, y'Dy in the next slot, over nv variables */
static void dpo__pair_dots(const dpo__hm_t *h, int64_t nv, const double *S, const double *Y,
                           const double *w, const double *s, const double *y, int ns,
                           double *out) {
  int M = h->M;
  for (int64_t v = 0; v < nv; v++) {
    double yv = y[v], wy = w[v] * yv;
    for (int j = 0; j < M; j++) {
      if (j == ns) continue;
      out[j] += S[v * M + j] * yv;
      out[M + j] += Y[v * M + j] * wy;
    }
    out[ns] += s[v] * yv;
    out[M + ns] += yv * wy;
  }
}

/* Lines 14-19 after the last inner step: y = g - g-bar, the 2M inner products in ONE
 * Allreduce (2M per part with repro), acceptance, and the new S, Y rows. */
static int dpo__pair(dpo__hm_t *h) {
  int st = DPO_OK, M = h->M, ns = dpo__lbfgs_next_slot(&h->lb), acc = 0;
  /* y = g - g-bar is the gradient difference of the repeated stratum alone (line 14), not
   * rescaled to the whole f: H then models the curvature of one stratum's function, which is
   * what the block model Q of eq. 3.4 (line 10) needs; rescaling y by |I| / |S_k0| was tried
   * and made the steps K times too short (K = 8: RMSE 0.72 instead of 0.60 after 20 epochs). */
  /* slots: grid = user intervals then item blocks; generic = user chunks then the (replicated)
   * item part, added by rank 0 only.  The slots do not depend on the number of ranks. */
  int32_t nparts = h->grid ? 2 * h->B : h->nch + 1;
  double t = MPI_Wtime();
  double *part = calloc((size_t)nparts * 2 * M, sizeof(double)), dots[512];
  if (!part) return dpo_err(DPO_ENOMEM, "pair dots");
  for (int64_t v = 0; v < h->nvr; v++) h->y1[v] -= h->gb1[v];
  if (h->grid) {
    for (int32_t i = h->i0; i < h->i1; i++) {
      int64_t o = (int64_t)(h->row_cut[i] - h->u0) * h->r, nv = (int64_t)(h->row_cut[i + 1] - h->row_cut[i]) * h->r;
      dpo__pair_dots(h, nv, h->S1 + o * M, h->Y1 + o * M, h->w1 + o, h->s1 + o, h->y1 + o, ns,
                     part + (int64_t)i * 2 * M);
    }
  } else {
    for (int32_t j = 0; j < h->nch; j++) {
      int32_t a0 = h->chunk_cut[j], a1 = h->chunk_cut[j + 1];
      if (a0 < h->u0 || a1 > h->u1) continue; /* rank cuts are chunk boundaries */
      int64_t o = (int64_t)(a0 - h->u0) * h->r, nv = (int64_t)(a1 - a0) * h->r;
      dpo__pair_dots(h, nv, h->S1 + o * M, h->Y1 + o * M, h->w1 + o, h->s1 + o, h->y1 + o, ns,
                     part + (int64_t)j * 2 * M);
    }
  }
  for (int32_t c = 0; c < h->B; c++) {
    if (!h->cbuf[c]) continue;
    int64_t nv = dpo__nvc(h, c);
    for (int64_t v = 0; v < nv; v++) h->yc[c][v] -= h->gbc[c][v];
    if (!h->grid && h->rank != 0) continue; /* replicated: counted once */
    dpo__pair_dots(h, nv, h->cbuf[c] + nv, h->cbuf[c] + nv + nv * M,
                   h->w2 + (int64_t)h->col_cut[c] * h->r, h->sc[c], h->yc[c], ns,
                   part + (int64_t)(h->grid ? h->B + c : h->nch) * 2 * M);
  }
  if ((st = dpo__reduce_parts(h, part, nparts, 2 * M, dots))) goto out;
  if ((st = dpo__lbfgs_push(&h->lb, dots, &acc))) goto out;
  if (acc) {
    h->sigma = h->lb.sigma;
    for (int64_t v = 0; v < h->nvr; v++) {
      h->S1[v * M + ns] = h->s1[v];
      h->Y1[v * M + ns] = h->y1[v];
    }
    for (int32_t c = 0; c < h->B; c++) {
      if (!h->cbuf[c]) continue;
      int64_t nv = dpo__nvc(h, c);
      double *S = h->cbuf[c] + nv, *Y = S + nv * M;
      for (int64_t v = 0; v < nv; v++) {
        S[v * M + ns] = h->sc[c][v];
        Y[v * M + ns] = h->yc[c][v];
      }
    }
  }
out:
  free(part);
  h->t_hess += MPI_Wtime() - t;
  return st;
}

/* Training RMSE (NON-PRIVATE diagnostic) and held-out RMSE at the current point. */
static int dpo__eval(dpo__hm_t *h, double *x2full, int64_t ntr, int64_t nte, double *rtr,
                     double *rte) {
  int32_t r = h->r;
  int32_t nparts = h->grid ? h->B : h->nch;
  memset(x2full, 0, sizeof(double) * (size_t)h->ni * r);
  for (int32_t c = 0; c < h->B; c++)
    if (h->cbuf[c])
      memcpy(x2full + (int64_t)h->col_cut[c] * r, h->cbuf[c], sizeof(double) * (size_t)dpo__nvc(h, c));
  /* grid: each item row has exactly one holder, so the sum is exact; generic: X2 is
   * replicated (identical on every rank) */
  if (h->grid)
    DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x2full, h->ni * r, MPI_DOUBLE, MPI_SUM, h->comm));
  double *part = calloc((size_t)nparts * 2, sizeof(double)), out[2];
  if (!part) return dpo_err(DPO_ENOMEM, "eval");
  for (int64_t b = 0; b < h->nblk; b++) {
    const dpo__blk_t *bk = &h->blk[b];
    int32_t p = h->grid ? h->i0 + (int32_t)(b / h->B) : 0;
    int64_t c0 = h->col_cut[bk->cb];
    for (int64_t k = bk->off; k < bk->off + bk->n; k++) {
      if (!h->grid) p = h->chunk_of[h->u0 + h->lu[k]];
      double pr = 0;
      const double *a = h->x1 + (int64_t)h->lu[k] * r, *x = x2full + (c0 + h->li[k]) * r;
      for (int32_t q = 0; q < r; q++) pr += a[q] * x[q];
      part[2 * p] += (pr - h->y[k]) * (pr - h->y[k]);
    }
  }
  for (int64_t k = 0; k < h->ntest; k++) {
    int32_t p = h->grid ? h->uint_of[h->tu_u[k]] : h->chunk_of[h->tu_u[k]];
    double pr = 0;
    const double *a = h->x1 + (int64_t)(h->tu_u[k] - h->u0) * r, *x = x2full + (int64_t)h->tu_i[k] * r;
    for (int32_t q = 0; q < r; q++) pr += a[q] * x[q];
    part[2 * p + 1] += (pr - h->ty[k]) * (pr - h->ty[k]);
  }
  int st = dpo__reduce_parts(h, part, nparts, 2, out);
  free(part);
  if (st) return st;
  *rtr = ntr ? sqrt(out[0] / ntr) : NAN;
  *rte = nte ? sqrt(out[1] / nte) : NAN;
  return DPO_OK;
}

static void dpo__hm_free(dpo__hm_t *h) {
  free(h->row_cut);
  free(h->col_cut);
  free(h->owner);
  free(h->uint_of);
  free(h->x1);
  free(h->S1);
  free(h->Y1);
  free(h->xb1);
  free(h->gb1);
  free(h->s1);
  free(h->y1);
  for (int32_t c = 0; c < h->B; c++) {
    if (h->cbuf) free(h->cbuf[c]);
    if (h->xbc) free(h->xbc[c]);
    if (h->gbc) free(h->gbc[c]);
    if (h->sc) free(h->sc[c]);
    if (h->yc) free(h->yc[c]);
  }
  free(h->cbuf);
  free(h->cnext);
  free(h->csend);
  free(h->xbc);
  free(h->gbc);
  free(h->sc);
  free(h->yc);
  free(h->req);
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
  free(h->d);
  free(h->w1);
  free(h->w2);
  dpo__lbfgs_free(&h->lb);
}

#define DPO__ALLOC(p, n)                                                                  \
  do {                                                                                    \
    if (!((p) = calloc(((size_t)(n)) > 0 ? ((size_t)(n)) : 1, sizeof *(p)))) {                   \
      st = dpo_err(DPO_ENOMEM, "hamsi: %s (%lld entries)", #p, (long long)(n));           \
      goto fail;                                                                          \
    }                                                                                     \
  } while (0)

/* Route the local ratings to the owners of their user intervals, split train / held-out. */
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

static int dpo__setup(dpo__hm_t *h, const dpo_ratings_t *in, dpo_hamsi_result_t *res) {
  int st = DPO_OK, P = h->size;
  int32_t r = h->r;
  int *scnt = NULL, *rcnt = NULL, *sdsp = NULL, *rdsp = NULL;
  double *sbuf = NULL, *rbuf = NULL;
  int64_t *udeg = NULL, *ideg = NULL, *bcnt = NULL;
  dpo__rt_t *tr = NULL;
  dpo_mf_partition_t *part = NULL;
  int32_t *gu = NULL, *gi = NULL, *cbof = NULL, *rc = NULL;
  int64_t *gs = NULL, *gord = NULL, *stamp = NULL, *cdeg = NULL;
  int64_t nin = in ? in->n : 0;
  uint64_t hseed = dpo__mf_mix(h->o.seed ^ 0x4e1dULL);

  /* global training degrees (public ids only; the counts stay inside the computation) */
  DPO__ALLOC(udeg, h->nu);
  DPO__ALLOC(ideg, h->ni);
  char *istest = NULL;
  DPO__ALLOC(istest, nin);
  for (int64_t k = 0; k < nin; k++) {
    int32_t u = in->user[k], i = in->item[k];
    if (u < 0 || u >= h->nu || i < 0 || i >= h->ni || !isfinite(in->r[k])) {
      st = dpo_err(DPO_EFORMAT, "%s: rating %lld: bad (user %d, item %d, %g)", in->source,
                   (long long)k, u, i, in->r[k]);
      free(istest);
      goto fail;
    }
    istest[k] = h->o.holdout > 0 &&
                dpo__mf_unit(dpo__mf_mix(hseed ^ dpo__mf_mix(((uint64_t)u << 32) | (uint32_t)i))) <
                    h->o.holdout;
    if (!istest[k]) {
      udeg[u]++;
      ideg[i]++;
    }
  }
  st = dpo_agree(h->comm, st);
  if (st) {
    free(istest);
    goto fail;
  }
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, udeg, h->nu, MPI_INT64_T, MPI_SUM, h->comm));
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, ideg, h->ni, MPI_INT64_T, MPI_SUM, h->comm));

  /* strata: grid cuts from the degrees, or a generic partition (one rank) */
  int32_t nint = h->grid ? h->B : P; /* user intervals */
  DPO__ALLOC(h->row_cut, nint + 1);
  DPO__ALLOC(h->col_cut, h->B + 1);
  DPO__ALLOC(h->owner, nint);
  DPO__ALLOC(h->uint_of, h->nu);
  if (h->grid) {
    int bal = h->o.part == DPO_MF_STRATA_B;
    if ((st = dpo_mf_cuts(udeg, h->nu, h->B, bal, h->row_cut)) ||
        (st = dpo_mf_cuts(ideg, h->ni, h->B, bal, h->col_cut))) {
      free(istest);
      goto fail;
    }
  } else {
    /* generic partitions: nch fixed user chunks are the slots of the dot products and RMSE
     * sums (so they do not depend on P); rank p owns user interval p, a run of whole chunks
     * cut to hold about 1/P of the training ratings each */
    h->nch = h->nu < DPO__MF_NCHUNK ? h->nu : DPO__MF_NCHUNK;
    DPO__ALLOC(h->chunk_cut, h->nch + 1);
    DPO__ALLOC(h->chunk_of, h->nu);
    DPO__ALLOC(cdeg, h->nch);
    DPO__ALLOC(rc, P + 1);
    if ((st = dpo_mf_cuts(udeg, h->nu, h->nch, 0, h->chunk_cut))) {
      free(istest);
      goto fail;
    }
    for (int32_t j = 0; j < h->nch; j++)
      for (int32_t u = h->chunk_cut[j]; u < h->chunk_cut[j + 1]; u++) {
        cdeg[j] += udeg[u];
        h->chunk_of[u] = j;
      }
    if ((st = dpo_mf_cuts(cdeg, h->nch, P, 1, rc))) {
      free(istest);
      goto fail;
    }
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
  h->nvr = (int64_t)(h->u1 - h->u0) * r;

  /* route: 4 doubles per rating (user, item, rating, held-out flag); ids < 2^31 are exact */
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
  {
    int *pos = calloc((size_t)P, sizeof(int));
    if (!pos) {
      free(istest);
      st = dpo_err(DPO_ENOMEM, "route");
      goto fail;
    }
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
    free(pos);
  }
  free(istest);
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
  /* item -> block */
  DPO__ALLOC(cbof, h->ni);
  for (int32_t c = 0; c < h->B; c++)
    for (int32_t i = h->col_cut[c]; i < h->col_cut[c + 1]; i++) cbof[i] = c;
  {
    dpo__rt_t *te = NULL;
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
    /* sorted order makes every sum independent of how the input was split */
    qsort(tr, (size_t)ntr, sizeof *tr, dpo__rt_cmp);
    qsort(te, (size_t)nte, sizeof *te, dpo__rt_cmp);
    for (int64_t k = 0; k < nte; k++) {
      h->tu_u[k] = te[k].u;
      h->tu_i[k] = te[k].i;
      h->ty[k] = te[k].y;
    }
    free(te);
  }
  free(sbuf);
  free(rbuf);
  sbuf = rbuf = NULL;

  DPO__ALLOC(h->lu, ntr);
  DPO__ALLOC(h->li, ntr);
  DPO__ALLOC(h->y, ntr);
  DPO__ALLOC(h->wu, ntr);
  DPO__ALLOC(h->wi, ntr);
  for (int64_t k = 0; k < ntr; k++) {
    h->lu[k] = tr[k].u - h->u0;
    h->li[k] = tr[k].i - h->col_cut[cbof[tr[k].i]];
    h->y[k] = tr[k].y;
    h->wu[k] = 1.0 / (double)udeg[tr[k].u];
    h->wi[k] = 1.0 / (double)ideg[tr[k].i];
  }

  /* blocks: grid (i, c) with touched user and item lists; generic: one block per stratum */
  int64_t nb = h->grid ? (int64_t)(h->i1 - h->i0) * h->B : 1;
  h->nblk = nb;
  DPO__ALLOC(h->blk, nb);
  DPO__ALLOC(h->tu, ntr);
  DPO__ALLOC(h->ti, ntr);
  DPO__ALLOC(bcnt, (int64_t)h->B * h->B);
  {
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
  }
  if (h->grid) {
    DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bcnt, h->B * h->B, MPI_INT64_T, MPI_SUM, h->comm));
    /* balance from the global block counts: a synthetic partition view */
    dpo_mf_balance_t *bl = &res->balance;
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
  } else {
    /* generic partition of the GLOBAL training set, computed identically on every rank: the
     * ranks' sorted ratings concatenated in rank order are the globally sorted set (rank p
     * holds user interval p), so the partition does not depend on P.  Strata of single
     * ratings, processed in (phase, index) order. */
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
    int32_t nph = 1;
    for (int64_t k = 0; k < gn; k++)
      if (part->phase[k] + 1 > nph) nph = part->phase[k] + 1;
    h->nph = nph;
    int64_t ng = (int64_t)h->K * nph;
    /* this rank's ratings by unit (stratum, phase) */
    DPO__ALLOC(gs, ng + 1);
    DPO__ALLOC(h->uoff, ng + 1);
    DPO__ALLOC(h->sord, ntr);
    DPO__ALLOC(h->soff, h->K + 1);
#define DPO__UNIT(k) ((int64_t)part->stratum[k] * nph + part->phase[k])
    for (int64_t k = 0; k < ntr; k++) h->uoff[DPO__UNIT(goff + k) + 1]++;
    for (int64_t g = 0; g < ng; g++) h->uoff[g + 1] += h->uoff[g];
    for (int32_t s = 0; s <= h->K; s++) h->soff[s] = h->uoff[(int64_t)s * nph];
    memcpy(gs, h->uoff, sizeof(int64_t) * (size_t)(ng + 1));
    for (int64_t k = 0; k < ntr; k++) h->sord[gs[DPO__UNIT(goff + k)]++] = k;
    /* Store the ratings in unit order, so an epoch reads them sequentially (a unit's
     * ratings are ~K apart in the sorted order: five scattered loads per rating were the
     * largest cost of a HOGWILD epoch).  Within a unit they stay in (user, item) order, and
     * the same on any number of ranks, so every sum keeps its order. */
    if ((st = dpo__permute_ratings(h, ntr))) goto fail;
    /* items touched by any rank in each unit, in the order of first appearance (the same on
     * every rank): the rows combined by the unit's Allreduce */
    memset(gs, 0, sizeof(int64_t) * (size_t)(ng + 1));
    DPO__ALLOC(gord, gn);
    DPO__ALLOC(stamp, h->ni);
    DPO__ALLOC(h->toff, ng + 1);
    DPO__ALLOC(h->titem, gn);
    for (int64_t k = 0; k < gn; k++) gs[DPO__UNIT(k) + 1]++;
    for (int64_t g = 0; g < ng; g++) gs[g + 1] += gs[g];
    for (int64_t k = 0; k < gn; k++) gord[gs[DPO__UNIT(k)]++] = k;
#undef DPO__UNIT
    for (int32_t i = 0; i < h->ni; i++) stamp[i] = -1;
    int64_t nt = 0, a = 0;
    for (int64_t g = 0; g < ng; g++) {
      for (; a < gs[g]; a++) {
        int32_t it = gi[gord[a]];
        if (stamp[it] != g) {
          stamp[it] = g;
          h->titem[nt++] = it;
        }
      }
      h->toff[g + 1] = nt;
    }
    h->dist = P > 1;
    if (h->dist) {
      DPO__ALLOC(h->dx2, (int64_t)h->ni * r);
      DPO__ALLOC(h->gx2, (int64_t)h->ni * r);
      DPO__ALLOC(h->xs, (int64_t)h->ni * r);
      DPO__ALLOC(h->pk, 2 * (int64_t)h->ni * r);
    }
  }
  res->n_train = ntr;
  res->n_test = nte;
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &res->n_train, 1, MPI_INT64_T, MPI_SUM, h->comm));
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &res->n_test, 1, MPI_INT64_T, MPI_SUM, h->comm));
  /* metric weights: 1 / (training ratings of the variable's user or item); 1 for a row with
   * none (it has no gradient) */
  DPO__ALLOC(h->w1, h->nvr);
  DPO__ALLOC(h->w2, (int64_t)h->ni * r);
  for (int64_t v = 0; v < h->nvr; v++) {
    int64_t dg = udeg[h->u0 + v / r];
    h->w1[v] = dg > 0 ? 1.0 / (double)dg : 1.0;
  }
  for (int64_t v = 0; v < (int64_t)h->ni * r; v++) {
    int64_t dg = ideg[v / r];
    h->w2[v] = dg > 0 ? 1.0 / (double)dg : 1.0;
  }

  /* variables: initial point from a hash of the global variable index (rank-independent) */
  int M = h->M;
  uint64_t iseed = dpo__mf_mix(h->o.seed ^ 0x1417ULL);
  double sc = h->o.init_scale;
  DPO__ALLOC(h->x1, h->nvr);
  for (int64_t v = 0; v < h->nvr; v++)
    h->x1[v] = sc * dpo__mf_unit(dpo__mf_mix(iseed + (uint64_t)((int64_t)h->u0 * r + v)));
  if (h->hamsi) {
    DPO__ALLOC(h->S1, h->nvr * M);
    DPO__ALLOC(h->Y1, h->nvr * M);
    DPO__ALLOC(h->xb1, h->nvr);
    DPO__ALLOC(h->gb1, h->nvr);
    DPO__ALLOC(h->s1, h->nvr);
    DPO__ALLOC(h->y1, h->nvr);
  }
  DPO__ALLOC(h->cbuf, h->B);
  DPO__ALLOC(h->cnext, h->B);
  DPO__ALLOC(h->csend, h->B);
  DPO__ALLOC(h->xbc, h->B);
  DPO__ALLOC(h->gbc, h->B);
  DPO__ALLOC(h->sc, h->B);
  DPO__ALLOC(h->yc, h->B);
  DPO__ALLOC(h->req, 2 * h->B + 2);
  int64_t maxc = 0;
  for (int32_t c = 0; c < h->B; c++) {
    if (dpo__nvc(h, c) > maxc) maxc = dpo__nvc(h, c);
    /* home: stratum 0, block c at the owner of user interval c */
    if (h->grid && h->owner[c] != h->rank) continue; /* generic: X2 replicated */
    DPO__ALLOC(h->cbuf[c], dpo__cbsize(h, c));
    for (int64_t v = 0; v < dpo__nvc(h, c); v++)
      h->cbuf[c][v] = sc * dpo__mf_unit(dpo__mf_mix(
                               iseed + (uint64_t)((int64_t)h->nu * r + (int64_t)h->col_cut[c] * r + v)));
  }
  h->cur_k = 0;
  DPO__ALLOC(h->g1s, h->nvr);
  DPO__ALLOC(h->g2s, maxc);
  DPO__ALLOC(h->d, r);
  if (h->hamsi && (st = dpo__lbfgs_init(&h->lb, M, h->o.sigma0))) goto fail;
  h->sigma = h->o.sigma0;
fail:
  free(scnt);
  free(rcnt);
  free(sdsp);
  free(rdsp);
  free(sbuf);
  free(rbuf);
  free(udeg);
  free(ideg);
  free(bcnt);
  free(tr);
  free(gu);
  free(gi);
  free(cbof);
  free(rc);
  free(gs);
  free(gord);
  free(stamp);
  free(cdeg);
  dpo_mf_partition_destroy(part);
  return st;
}

/* per-rank arrays x-bar, g-bar, s, y of item block c (kept where the block starts an epoch) */
static int dpo__cb_aux(dpo__hm_t *h, int32_t c) {
  if (h->xbc[c]) return DPO_OK;
  int64_t nv = dpo__nvc(h, c);
  h->xbc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  h->gbc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  h->sc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  h->yc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  if (!h->xbc[c] || !h->gbc[c] || !h->sc[c] || !h->yc[c])
    return dpo_err(DPO_ENOMEM, "item block %d history", c);
  return DPO_OK;
}

/* ---- Generic partitions on P ranks (HOGWILD, COLOR, COLOR-B) ----
 *
 * Their subsets S_k are not split into variable-disjoint row x column blocks, so the item
 * factors cannot travel as blocks.  Instead X2t (with its rows of S, Y and x-bar, g-bar) is
 * replicated; rank p processes the ratings of a unit (stratum k, phase c) whose users it owns
 * (it owns those rows of X1), sequentially, against its copy, and ONE Allreduce per unit sums
 * the ranks' item steps: afterwards every copy is x2_start + sum_p (steps of rank p).  On the
 * first / last inner step of an epoch the same Allreduce carries the item gradients that
 * Alg. 3 lines 12 and 14 accumulate (g-bar and y).
 *
 * When it equals the serial run: a COLOR / COLOR-B phase is a color of the conflict graph, a
 * matching (thesis Sec. 3.3: no two of its functions share a user or an item).  So in a phase
 * each item row is changed by ONE rating on ONE rank, the sum adds zeros to that single step
 * (exact) and x2_start + (-s) == x2_start - s is the serial update bit for bit; users are
 * disjoint too, and phases are done in the serial order.  COLOR and COLOR-B therefore give the
 * serial factors exactly for mb-GD, and for HAMSI up to the rounding of the 2M L-BFGS inner
 * products (their slots are fixed user chunks, so with repro = 1 they are bit-identical on
 * any number of ranks).  HOGWILD subsets are not variable-disjoint (an item appears several
 * times in S_k, under users of different ranks): the summed steps equal the serial sequential
 * pass only to first order in the step (the HOGWILD approximation itself), so HOGWILD on P
 * ranks is a different, P-dependent iteration that converges but is not bit-identical. */
static int dpo__unit(dpo__hm_t *h, int64_t g, double *a1, double *a2) {
  int32_t r = h->r;
  int64_t t0 = h->toff[g], nt = h->toff[g + 1] - t0;
  if (!nt) return DPO_OK; /* empty for every rank (the list is global) */
  const int32_t *it = h->titem + t0;
  double *xc = h->cbuf[0];
  int acc = a2 != NULL;
  for (int64_t j = 0; j < nt; j++) {
    int64_t o = (int64_t)it[j] * r;
    memcpy(h->xs + j * r, xc + o, sizeof(double) * (size_t)r);
    memset(h->dx2 + o, 0, sizeof(double) * (size_t)r);
    if (acc) memset(h->gx2 + o, 0, sizeof(double) * (size_t)r);
  }
  for (int64_t t = h->uoff[g]; t < h->uoff[g + 1]; t++)
    dpo__block(h, &h->blk[0], h->sord[t], xc, a1, acc ? h->gx2 : NULL, h->dx2);
  double tc = MPI_Wtime();
  int64_t w = (int64_t)r * (acc ? 2 : 1);
  for (int64_t j = 0; j < nt; j++) {
    int64_t o = (int64_t)it[j] * r;
    memcpy(h->pk + j * w, h->dx2 + o, sizeof(double) * (size_t)r);
    if (acc) memcpy(h->pk + j * w + r, h->gx2 + o, sizeof(double) * (size_t)r);
  }
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, h->pk, (int)(nt * w), MPI_DOUBLE, MPI_SUM, h->comm));
  for (int64_t j = 0; j < nt; j++) {
    int64_t o = (int64_t)it[j] * r;
    for (int32_t q = 0; q < r; q++) {
      xc[o + q] = h->xs[j * r + q] + h->pk[j * w + q];
      if (acc) a2[o + q] += h->pk[j * w + r + q];
    }
  }
  h->t_comm += MPI_Wtime() - tc;
  return DPO_OK;
}

/* One outer iteration over the schedule seq[0..L) (thesis Alg. 3, lines 7-19). */
static int dpo__epoch(dpo__hm_t *h, const int32_t *seq, int L) {
  int st = DPO_OK;
  if ((st = dpo__travel(h, seq[0]))) return st;
  for (int l = 0; l < L; l++) {
    int32_t k = seq[l], next = l + 1 < L ? seq[l + 1] : -1;
    int first = h->hamsi && l == 0, last = h->hamsi && l == L - 1;
    if (h->grid && next >= 0 && next != k && (st = dpo__travel_begin(h, k, next))) return st;
    if (first) { /* line 12: x-bar, g-bar (accumulated below) */
      memcpy(h->xb1, h->x1, sizeof(double) * (size_t)h->nvr);
      memset(h->gb1, 0, sizeof(double) * (size_t)h->nvr);
    }
    if (last) { /* s = x - x-bar where the last gradient is taken; y accumulates g */
      for (int64_t v = 0; v < h->nvr; v++) h->s1[v] = h->x1[v] - h->xb1[v];
      memset(h->y1, 0, sizeof(double) * (size_t)h->nvr);
    }
    for (int32_t c = 0; c < h->B && (first || last); c++) {
      if (!h->cbuf[c]) continue;
      if ((st = dpo__cb_aux(h, c))) return st;
      int64_t nv = dpo__nvc(h, c);
      if (first) {
        memcpy(h->xbc[c], h->cbuf[c], sizeof(double) * (size_t)nv);
        memset(h->gbc[c], 0, sizeof(double) * (size_t)nv);
      } else {
        for (int64_t v = 0; v < nv; v++) h->sc[c][v] = h->cbuf[c][v] - h->xbc[c][v];
        memset(h->yc[c], 0, sizeof(double) * (size_t)nv);
      }
    }
    double *a1 = first ? h->gb1 : last ? h->y1 : NULL;
    if (h->grid) {
      for (int32_t i = h->i0; i < h->i1; i++) {
        int32_t c = dpo__mod(i + k, h->B);
        double *a2 = first ? h->gbc[c] : last ? h->yc[c] : NULL;
        dpo__block(h, &h->blk[(int64_t)(i - h->i0) * h->B + c], -1, h->cbuf[c], a1, a2, NULL);
        /* the block is done for this step: send it on while the next block computes */
        if (next >= 0 && next != k && (st = dpo__travel_send(h, c, next))) return st;
      }
      if (next >= 0 && next != k && (st = dpo__travel_end(h, next))) return st;
    } else if (!h->dist) {
      double *a2 = first ? h->gbc[0] : last ? h->yc[0] : NULL;
      for (int64_t t = h->soff[k]; t < h->soff[k + 1]; t++)
        dpo__block(h, &h->blk[0], h->sord[t], h->cbuf[0], a1, a2, NULL);
    } else {
      double *a2 = first ? h->gbc[0] : last ? h->yc[0] : NULL;
      for (int32_t ph = 0; ph < h->nph; ph++)
        if ((st = dpo__unit(h, (int64_t)k * h->nph + ph, a1, a2))) return st;
    }
  }
  if (h->hamsi) st = dpo__pair(h);
  return st;
}

/* Divergence guard (local; the caller agrees on the status): every factor this rank holds
 * and, when given, the RMSE must be finite. */
static int dpo__diverged(const dpo__hm_t *h, int64_t t, const double *rmse) {
  int bad = rmse && !isfinite(*rmse);
  for (int64_t v = 0; v < h->nvr && !bad; v++) bad = !isfinite(h->x1[v]);
  for (int32_t c = 0; c < h->B && !bad; c++) {
    if (!h->cbuf[c]) continue;
    int64_t nv = dpo__nvc(h, c);
    for (int64_t v = 0; v < nv && !bad; v++) bad = !isfinite(h->cbuf[c][v]);
  }
  if (!bad) return DPO_OK;
  return dpo_err(DPO_ENOCONV, "diverged at epoch %lld (%s non-finite): try a smaller --sigma0 or "
                 "a larger --eta (beta_t = (eta t)^gamma divides the step)", (long long)t,
                 rmse && !isfinite(*rmse) ? "training RMSE" : "a factor");
}

int dpo_hamsi_run(MPI_Comm comm, const dpo_ratings_t *ratings, const dpo_hamsi_opts_t *opts,
                  dpo_hamsi_result_t **resp) {
  int st = DPO_OK;
  dpo__hm_t H, *h = &H;
  memset(h, 0, sizeof H);
  dpo_hamsi_result_t *res = NULL;
  dpo_rng_t *rng = NULL;
  int32_t *sched = NULL;
  double *x2full = NULL;
  int *cnts = NULL, *dsps = NULL;
  *resp = NULL;
  h->comm = comm;
  h->cal_w = MPI_Wtime();
  h->cal_k = dpo__tick();
  MPI_Comm_rank(comm, &h->rank);
  MPI_Comm_size(comm, &h->size);
  h->o = *opts;
  const dpo_hamsi_opts_t *o = &h->o;
  h->r = o->r;
  h->hamsi = o->method == DPO_MF_HAMSI;
  h->M = h->hamsi ? o->memory : 0;
  h->grid = o->part == DPO_MF_STRATA || o->part == DPO_MF_STRATA_B;
  if (h->o.init_scale < 0) h->o.init_scale = 2 * sqrt(3.0 / (o->r > 0 ? o->r : 1));
  int32_t nu = ratings ? ratings->n_users : 0, ni = ratings ? ratings->n_items : 0;
  int32_t mx[2] = {nu, ni};
  if (MPI_Allreduce(MPI_IN_PLACE, mx, 2, MPI_INT32_T, MPI_MAX, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "hamsi: Allreduce failed"));
  h->nu = mx[0];
  h->ni = mx[1];
  h->K = o->nblocks > 0 ? o->nblocks : (h->grid ? h->size : 20);
  h->B = h->grid ? h->K : 1;
  if (o->r < 1 || o->r > 1024 || (h->hamsi && (o->memory < 1 || o->memory > 256)) ||
      !(o->eta > 0) || !(o->gamma > 0) || !(o->sigma0 > 0) || o->lambda < 0 || o->epochs < 0 ||
      o->holdout < 0 || o->holdout >= 1 || o->time_limit < 0 || (unsigned)o->part > DPO_MF_STRATA_B)
    st = dpo_err(DPO_EINVAL, "hamsi: bad options (r 1..1024, memory 1..256, eta, gamma, sigma0 > 0, "
                             "lambda >= 0, holdout in [0, 1))");
  else if (h->nu < 1 || h->ni < 1)
    st = dpo_err(DPO_EINVAL, "hamsi: no users or items");
  else if (!h->grid && (h->size > h->nu || h->size > DPO__MF_NCHUNK))
    st = dpo_err(DPO_ERANKS, "hamsi: partitioning %s on %d ranks needs at most min(users %d, %d) "
                 "ranks", dpo_mf_part_name(o->part), h->size, h->nu, DPO__MF_NCHUNK);
  else if (h->grid && (h->B < h->size || h->B > h->nu || h->B > h->ni))
    st = dpo_err(DPO_ERANKS, "hamsi: %d strata need %d <= K <= min(users %d, items %d)", h->B,
                 h->size, h->nu, h->ni);
  if ((st = dpo_agree(comm, st))) return st;

  if (!(res = calloc(1, sizeof *res))) st = dpo_err(DPO_ENOMEM, "hamsi result");
  if (!st) st = dpo__setup(h, ratings, res);
  if ((st = dpo_agree(comm, st))) goto out;
  res->n_users = h->nu;
  res->n_items = h->ni;
  res->r = h->r;
  res->K = h->K;
  int L = h->hamsi ? h->K + 1 : h->K;
  int64_t cap = (o->eval_every > 0 ? o->epochs / o->eval_every : 0) + 2;
  if (o->time_limit > 0 && o->eval_every > 0) cap = 1024;
  if (!(sched = malloc(sizeof(int32_t) * ((size_t)L + 1))) ||
      !(x2full = malloc(sizeof(double) * (size_t)h->ni * h->r)) ||
      !(res->trace = calloc((size_t)cap, sizeof *res->trace)))
    st = dpo_err(DPO_ENOMEM, "hamsi schedule/trace");
  if (!st && h->rank == 0) st = dpo_rng_create(1, o->seed, 0x5c4ed, &rng);
  if ((st = dpo_agree(comm, st))) goto out;

  double t_start = MPI_Wtime(), t_train = 0, rtr = NAN, rte = NAN;
  int64_t t;
  /* RMSE of the initial factors (reference for the trace; evaluation time excluded) */
  st = dpo__eval(h, x2full, res->n_train, res->n_test, &res->train_rmse0, &res->test_rmse0);
  if ((st = dpo_agree(comm, st))) goto out;
  for (t = 1;; t++) {
    /* rank 0 decides whether to go on and the schedule (SETSCHEDULE, line 6), then broadcasts */
    if (h->rank == 0) {
      sched[0] = (t > o->epochs && o->epochs > 0) || (o->epochs == 0 && o->time_limit <= 0) ||
                 (o->time_limit > 0 && t_train >= o->time_limit);
      int32_t *s = sched + 1, K = h->K;
      if (o->sched == DPO_MF_SCHED_DET) {
        for (int32_t l = 0; l < K; l++) s[l] = (int32_t)((t - 1 + l) % K); /* one cyclic left shift */
      } else {
        for (int32_t l = 0; l < K; l++) s[l] = l;
        for (int32_t l = K - 1; l > 0; l--) {
          int32_t j = (int32_t)dpo_rng_below(rng, (uint64_t)l + 1), x = s[l];
          s[l] = s[j];
          s[j] = x;
        }
      }
      if (h->hamsi) s[K] = s[0]; /* the first stratum repeated (Sec. 3.1) */
    }
    if (MPI_Bcast(sched, L + 1, MPI_INT32_T, 0, comm) != MPI_SUCCESS) {
      st = dpo_err(DPO_EMPI, "hamsi: schedule broadcast failed");
      break;
    }
    if (sched[0]) break;
    double t0 = MPI_Wtime();
    h->beta = pow(o->eta * (double)t, o->gamma); /* line 5 */
    st = dpo__epoch(h, sched + 1, L);
    if (!st) st = dpo__diverged(h, t, NULL);
    if ((st = dpo_agree(comm, st))) break;
    t_train += MPI_Wtime() - t0;
    if (o->eval_every > 0 && t % o->eval_every == 0 && res->ntrace < cap) {
      st = dpo__eval(h, x2full, res->n_train, res->n_test, &rtr, &rte);
      if (!st && res->n_train > 0) st = dpo__diverged(h, t, &rtr);
      if ((st = dpo_agree(comm, st))) break;
      dpo_hamsi_trace_t *tr = &res->trace[res->ntrace++];
      tr->epoch = t;
      tr->t_train = t_train;
      tr->t_wall = MPI_Wtime() - t_start;
      tr->train_rmse = rtr;
      tr->test_rmse = rte;
      tr->sigma = h->sigma;
      tr->npairs = h->hamsi ? h->lb.m : 0;
    }
  }
  if (st) goto out;
  res->epochs = t - 1;
  /* every item block back to its home rank (stratum 0) */
  if ((st = dpo_agree(comm, dpo__travel(h, 0)))) goto out;
  int home = 1;
  for (int32_t c = 0; c < h->B; c++) {
    int mine = h->grid ? h->owner[c] == h->rank : 1;
    if ((h->cbuf[c] != NULL) != mine) home = 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, &home, 1, MPI_INT, MPI_MIN, comm);
  res->home_ok = home;
  res->disjoint = o->part != DPO_MF_HOGWILD;
  st = dpo__eval(h, x2full, res->n_train, res->n_test, &rtr, &rte);
  if (!st && res->n_train > 0) st = dpo__diverged(h, t - 1, &rtr);
  if ((st = dpo_agree(comm, st))) goto out;
  res->train_rmse = rtr;
  res->test_rmse = rte;
  res->t_train = t_train;
  res->t_wall = MPI_Wtime() - t_start;
  res->t_grad = dpo__tick_seconds(h, h->k_grad);
  res->t_update = dpo__tick_seconds(h, h->k_update);
  res->t_hess = h->t_hess;
  res->t_comm = h->t_comm;
  res->ratings_per_sec = t_train > 0 ? (double)h->processed / t_train : 0;
  res->pairs_accepted = h->hamsi ? h->lb.accepted : 0;
  res->pairs_rejected = h->hamsi ? h->lb.rejected : 0;
  res->sigma = h->sigma;
  /* factors on every rank */
  res->X2t = x2full;
  x2full = NULL;
  if (!(res->X1 = malloc(sizeof(double) * (size_t)h->nu * h->r)) ||
      !(cnts = malloc(sizeof(int) * (size_t)h->size)) || !(dsps = malloc(sizeof(int) * (size_t)h->size)))
    st = dpo_err(DPO_ENOMEM, "hamsi factors");
  if ((st = dpo_agree(comm, st))) goto out;
  int mine = (int)h->nvr;
  MPI_Allgather(&mine, 1, MPI_INT, cnts, 1, MPI_INT, comm);
  for (int p = 0; p < h->size; p++) dsps[p] = p ? dsps[p - 1] + cnts[p - 1] : 0;
  st = MPI_Allgatherv(h->x1, mine, MPI_DOUBLE, res->X1, cnts, dsps, MPI_DOUBLE, comm) == MPI_SUCCESS
           ? DPO_OK
           : dpo_err(DPO_EMPI, "hamsi: Allgatherv of X1 failed");
  st = dpo_agree(comm, st);
out:
  dpo_rng_destroy(rng);
  free(sched);
  free(x2full);
  free(cnts);
  free(dsps);
  dpo__hm_free(h);
  if (st)
    dpo_hamsi_result_destroy(res);
  else
    *resp = res;
  return st;
}
