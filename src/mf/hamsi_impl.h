/* Private state of distributed HAMSI / mb-GD, shared by the files of src/mf/ (not installed).
 *
 * The files, each calling only the ones below it (no cycles):
 *   hamsi.c        driver: options, epoch loop (Alg. 3 lines 5-19), evaluation, result
 *   hamsi_setup.c  layout and partition set-up: held-out split, degrees, cuts, routing of the
 *                  ratings, blocks / generic units, metric weights, initial point, buffers
 *   hamsi_step.c   one block's gradient and update (lines 10-13) and the L-BFGS pair (14-19)
 *   hamsi_snap.c   saved points (last good, best, the safeguard's epoch starts)
 *   hamsi_ckpt.c   checkpoints at the end of an epoch (above hamsi_ring.c)
 *   hamsi_ring.c   item-block ring transfer between strata (STRATA*)
 *   lbfgs_compact.c, partition.c, objective.c  below all of them
 *
 * Variables: rank p keeps the rows of X1 of its user intervals [i0, i1) with their rows of
 * the (s, y) history H (row part); item block c travels as one buffer [x | H].  In stratum k,
 * user interval i meets item block (i + k) mod B, so block c sits at the owner of interval
 * (c - k) mod B; changing stratum is a permutation of the item blocks between ranks.
 * x-bar and g-bar of an item block (line 12) stay on the rank that held it at the first inner
 * step: the first and last strata of an epoch are the same (K = [k, ..., k]), so the block is
 * back there when they are needed (line 14). */
#ifndef DPO_MF_HAMSI_IMPL_H
#define DPO_MF_HAMSI_IMPL_H

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

typedef struct {
  int64_t off, n;       /* ratings [off, off + n) */
  int64_t tuo, tio;     /* touched users / items offsets */
  int32_t ntu, nti;
  int32_t cb;           /* item block */
} dpo__blk_t;

/* A copy of the factor rows this rank holds (item blocks at stratum k), after epoch t. */
typedef struct {
  double *x1, **c;
  int32_t k;
  int64_t t;
} dpo__snap_t;

/* the words of an epoch's reduction (dpo__hm_t.ew): [0] ranks with a failure to report, [1]
 * ranks holding a non-finite factor where no safeguard counts them, [2] rank 0's checkpoint
 * decision */
#define DPO__HM_EW 3

typedef struct {
  MPI_Comm comm;
  int rank, size;
  dpo_hamsi_opts_t o;
  int32_t r, M, nu, ni, B, K; /* B: item blocks; K: strata */
  int grid, hamsi;
  int32_t *row_cut, *col_cut, *owner, *uint_of; /* uint_of: user -> interval */
  int32_t i0, i1, u0, u1;
  int64_t nvr;           /* row-part variables */
  double *x1, *xb1, *gb1, *s1, *y1;
  dpo__hist_t *H1; /* the user rows' L-BFGS (s, y) panels (lbfgs_compact.h) */
  double **cbuf, **cnext, **xbc, **gbc, **sc, **yc;
  int32_t cur_k;
  /* ring requests (hamsi_ring.c): rreq[2c ..] block c's x and history receives, pending
   * (pend[c]) into cin[c] until dpo__hm_wait_block; sreq: two travels' sends, 2B each
   * (dpo__hm_sreq), and sfree their buffers to free (no cache); slast[c] the travel that
   * last sent block c from here, tgen the travels begun */
  MPI_Request *rreq, *sreq;
  double **sfree, **cin;
  int32_t *pend;
  int64_t *slast, tgen;
  int64_t npend;         /* blocks pending here; early: blocks computed while one of their
                          * stratum was still pending (the overlap the switch buys) */
  int64_t early;
  /* history cache (opts.cache_mb, hamsi_ring.c): pb[c] the buffer [x | S | Y] of block c on
   * every rank (cbuf[c] = pb[c] while held; the x part is stale otherwise); hgen counts the
   * accepted pairs, hlog[g % M] the slot pair g wrote; known[p B + c] the pair count up to
   * which rank p's copy of block c's history is current (the same table on every rank);
   * hin/hout: packed slots in flight (kept between moves, hincap / houtcap entries: no
   * allocation a move), nin[c] and slin[c M ..] the slots block c receives this move */
  int hcache;
  double **pb;
  dpo__hist_t **hin, **hout;
  int64_t *hincap, *houtcap;
  int64_t hgen, *known;
  int32_t *hlog, *nin, *slin, tr_from;
  int64_t ring_sent;     /* bytes this rank sent in ring moves (x and history parts) */
  int64_t ring_hsent;    /* of which the history parts */
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
  int32_t nph, nch;      /* exchange units per stratum (1, or the colors: COLOR* with repro on
                          * P ranks); user chunks (dot-product / RMSE slots) */
  int64_t *uoff, *toff;
  int32_t *titem, *chunk_cut, *chunk_of;
  double *dx2, *gx2, *xs, *pk; /* item steps, item gradients, snapshot, Allreduce buffer */
  int32_t *tu_u, *tu_i;  /* generic test ratings */
  double *ty;
  double *g1s, *g2s, *d;
  double *part;          /* per-part partial sums of dpo__eval and dpo__hm_pair (set up once) */
  double *tn1, *tn2;     /* gradient steps: per touched row, sum of the partners' squared norms */
  double *nn1, *nn2;     /* and the touched rows' own squared norms */
  double *w1, *w2;       /* metric weights 1/deg of each variable: row part, all item rows */
  dpo__lbfgs_t lb;
  double sigma;          /* step scale in use (sigma0 until a pair is accepted) */
  double beta;
  double t_hess, t_comm;
  uint64_t k_grad, k_update; /* dpo__hm_block's phase times in dpo__tick units */
  double cal_w;              /* MPI_Wtime and dpo__tick at setup, to convert ticks */
  uint64_t cal_k;
  int64_t processed;
  int64_t strata, exchanges; /* inner steps of the epochs; item-factor exchanges among them
                              * (ring moves, or Allreduces of item steps) */
  /* safeguards: per-part [f of the repeated stratum at the start, at the end, non-finite
   * flag] (parts: grid user intervals, generic user chunks), counters */
  double *fpart;
  int64_t undone, capped;
  double damp;           /* gradient-step factor: halved by each undone gradient epoch */
  double qdamp;          /* quasi-Newton step factor: halved by each undone quasi-Newton epoch */
  /* safeguards: the start of the current epoch and of the last accepted one, epochs undone
   * in a row (both methods); mb-GD (dpo__check_gd): the summed stratum objectives F of the
   * last accepted epoch and of the one before (its references) */
  dpo__snap_t sg_start, sg_prev;
  int sg_rejects;
  double gd_fref, gd_fref_prev;
  /* last point that passed the divergence check, kept so that a failing run still returns
   * it (room for every block made before the epochs: keeping it cannot fail); best: the
   * point of the best held-out RMSE (early stopping) */
  dpo__snap_t good, best;
  /* the epoch's words (hamsi.c's loop sets them): they ride with the epoch's one reduction
   * (dpo__hm_reduce_parts2 takes ew_n of them from ew and puts their sums over the ranks
   * back, ew_n then 0), so an epoch meets the other ranks once */
  int ew_n;
  double ew[DPO__HM_EW];
  /* biased model (opts.biases): r = opts.r + 2, the last two columns of an X1 row are
   * [b_u, 1] and of an X2t row [1, b_i]; mu was subtracted from y and ty */
  double mu;
} dpo__hm_t;

/* HAMSI's steps: per-row curvature cap of the gradient steps, and (generic partitions) the
 * same bound on a rating's quasi-Newton step (hamsi_step.c) */
#define DPO__HM_GCAP 0.4
/* The first quasi-Newton steps start once this many pairs are held (at most M): the compact
 * form is exact for m < M pairs, and waiting for all M kept 2 more slow gradient epochs (from
 * N(0, 1) factors at rank 50: RMSE 0.9 at epoch 15 instead of 17-18 with the cap above).
 * After a safeguard reset the memory is refilled to M first: restarting from 3 (or 1, 2)
 * fresh pairs had the next quasi-Newton epoch rejected again and again (COLOR, rank 50: RMSE
 * 0.53 -> 1.5 -> 235).  This is for the grid (STRATA*) only, where it was measured; the
 * generic partitions wait for M pairs (with both caps, COLOR at rank 50 from the default
 * start: training RMSE 0.482 after 20 epochs with M, 0.493 with 3; the earlier "RMSE 67 with
 * 3 pairs" was the uncapped quasi-Newton step of single ratings, see dpo__hm_rating_cap). */
#define DPO__HM_QN_PAIRS 3
static inline int dpo__hm_qn_pairs(const dpo__hm_t *h) {
  return !h->grid || h->undone > 0 || h->M < DPO__HM_QN_PAIRS ? h->M : DPO__HM_QN_PAIRS;
}

/* eta t of beta_t = (eta t)^gamma (Alg. 3 line 5), or past the knee T = eta_from the
 * continuation eta T + eta_late (t - T).  Why a knee: with eta = 1 the late quasi-Newton steps
 * are short (beta = 53 at epoch 2400); rank 50, ML-100K-sized ratings from N(0, 1) factors,
 * 2400 epochs: training RMSE 0.207 with eta = 1, 0.174 with eta_late = 0.1 after T = 30,
 * the first 30 epochs unchanged.  A constant smaller eta lengthens the early steps too and
 * the safeguard undoes epoch after epoch (eta 0.25-0.5).  Not the default: with 0.1 rank 10
 * ends higher, and with 0.3 (no worse at rank 10, 0.209 -> 0.181 at rank 50) the biased,
 * regularized model does (--biases --lambda 10: training RMSE 0.643 -> 0.929, 31 epochs
 * undone); see doc/results/bench-hamsi. */
static inline double dpo__hm_eta_t(const dpo_hamsi_opts_t *o, int64_t t) {
  if (!(o->eta_late > 0) || t <= o->eta_from) return o->eta * (double)t;
  return o->eta * (double)o->eta_from + o->eta_late * (double)(t - o->eta_from);
}

/* the largest row: r with the bias columns (dpo__hm_init checks) */
#define DPO__HM_RMAX 1024
/* the MPI type of a panel entry (dpo__hist_t: one 32-bit word) */
#define DPO__HIST_MPI MPI_UINT32_T
_Static_assert(sizeof(dpo__hist_t) == sizeof(uint32_t), "DPO__HIST_MPI assumes 32-bit entries");

/* user chunks of the generic partitionings (fixed reduction slots; also the most ranks) */
#define DPO__MF_NCHUNK 64

static inline int64_t dpo__nvc(const dpo__hm_t *h, int32_t c) {
  return (int64_t)(h->col_cut[c + 1] - h->col_cut[c]) * h->r;
}
/* an item block's buffer [x | H]: nv doubles, then M nv (s, y) panel entries (dpo__hist_t,
 * rounded up to whole doubles); its size in doubles, and its panel */
static inline int64_t dpo__cbsize(const dpo__hm_t *h, int32_t c) {
  int64_t nv = dpo__nvc(h, c), hb = (int64_t)h->M * nv * (int64_t)sizeof(dpo__hist_t);
  return nv + (hb + (int64_t)sizeof(double) - 1) / (int64_t)sizeof(double);
}
static inline dpo__hist_t *dpo__cbhist(const dpo__hm_t *h, double *cb, int32_t c) {
  return (dpo__hist_t *)(cb + dpo__nvc(h, c));
}
static inline int32_t dpo__mod(int64_t a, int32_t b) { return (int32_t)(((a % b) + b) % b); }
/* the send slots [x, history] of block c in travel g */
static inline MPI_Request *dpo__hm_sreq(const dpo__hm_t *h, int64_t g, int32_t c) {
  return h->sreq + (g & 1) * 2 * (int64_t)h->B + 2 * (int64_t)c;
}

/* Phase clock of dpo__hm_block, which runs once per RATING under the generic partitions: the
 * time stamp counter (a few ns) instead of MPI_Wtime (40-60 ns through this VM's vDSO; a
 * quarter of a HOGWILD epoch went into reading the clock).  Ticks become seconds in
 * dpo__hm_tick_seconds, calibrated against MPI_Wtime over the run (constant-rate TSC). */
static inline uint64_t dpo__tick(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return (uint64_t)(MPI_Wtime() * 1e9);
#endif
}

/* n (at least 1) zeroed entries into p, or DPO_ENOMEM and goto fail; the pages are touched
 * here (calloc maps large blocks lazily) so the first epochs do not pay the page faults:
 * 4-5 ms of the first three epochs at rank 50 on ML-100K-sized data, 5% of the time to RMSE 0.9 */
#define DPO__ALLOC(p, n)                                                                  \
  do {                                                                                    \
    size_t n_ = ((size_t)(n)) > 0 ? ((size_t)(n)) : 1;                                    \
    if (n_ > SIZE_MAX / sizeof *(p) || !((p) = malloc(n_ * sizeof *(p)))) {               \
      st = dpo_err(DPO_ENOMEM, "hamsi: %s (%lld entries)", #p, (long long)(n));           \
      goto fail;                                                                          \
    }                                                                                     \
    memset((p), 0, n_ * sizeof *(p)); /* zeroed and touched: no page faults in epoch 1 */ \
  } while (0)

/* ---- hamsi_setup.c (collective: every rank calls, the caller agrees on the status) ---- */
/* Layout, partition, ratings, weights, initial point and buffers for h (h->o, r, M, nu, ni,
 * B, K, grid, hamsi set); fills res->balance, n_train, n_test. */
int dpo__hm_setup(dpo__hm_t *h, const dpo_ratings_t *in, dpo_hamsi_result_t *res);
void dpo__hm_free(dpo__hm_t *h);

/* ---- hamsi_ring.c (grid only; collective over the ranks exchanging blocks) ---- */
/* Post the receives of the blocks stratum kto needs here (from where stratum kfrom has them). */
int dpo__hm_travel_begin(dpo__hm_t *h, int32_t kfrom, int32_t kto);
/* Send block c (held now) to where stratum kto needs it, right after its last use. */
int dpo__hm_travel_send(dpo__hm_t *h, int32_t c, int32_t kto);
/* Stratum kto begins: the blocks arriving are waited for one by one (dpo__hm_wait_block
 * before a block's first use), the sends stay in flight. */
int dpo__hm_travel_switch(dpo__hm_t *h, int32_t kto);
int dpo__hm_wait_block(dpo__hm_t *h, int32_t c);
/* Every block arrived and every send done (before the whole held set is read). */
int dpo__hm_travel_drain(dpo__hm_t *h);
/* Switch and drain: the blocks of stratum kto are now here. */
int dpo__hm_travel_end(dpo__hm_t *h, int32_t kto);
/* All three at once: move the blocks from stratum h->cur_k to kto (no-op if equal). */
int dpo__hm_travel(dpo__hm_t *h, int32_t kto);
/* History cache: an accepted pair wrote slot ns of every block (on the rank holding it at
 * stratum cur_k).  Local, called identically on every rank. */
void dpo__hm_hist_pair(dpo__hm_t *h, int32_t ns);

/* ---- hamsi_snap.c (local) ---- */
/* Copy the factor rows held now (after epoch t) into sn. */
int dpo__hm_keep(dpo__hm_t *h, dpo__snap_t *sn, int64_t t);
/* Room in sn for every item block, so that keeping into it cannot fail later. */
int dpo__hm_snap_room(dpo__hm_t *h, dpo__snap_t *sn);
/* Back to sn (collective: the item blocks first travel back to where they were then). */
int dpo__hm_restore(dpo__hm_t *h, const dpo__snap_t *sn);
/* The epoch passed its safeguard: its start becomes sg_prev (buffer swaps, no copy). */
int dpo__hm_sg_accept(dpo__hm_t *h);

/* ---- hamsi_ckpt.c (collective, agreed status) ---- */
/* The epoch loop's own state (dpo_hamsi_run), saved with the point by rank 0. */
typedef struct {
  int64_t t;              /* epochs done */
  double t_train, t_wall; /* training seconds, wall seconds since the start */
  int64_t last_full;      /* the last epoch evaluated in full (eval_budget) */
  double best, best_rsm;  /* early stopping: best held-out RMSE, its sampled training RMSE */
  int64_t stop;           /* early stopping decided to stop */
  double rmse0[2];        /* the initial point's training and held-out RMSE */
  int64_t aux;            /* the caller's number (opts.ckpt_due: the trace's length) */
} dpo__hm_loop_t;
/* After epoch lp->t: every rank's factor rows, histories, item blocks and saved points, and
 * rank 0's loop state, shared scalars, L-BFGS matrices and schedule stream (rng: rank 0's,
 * NULL elsewhere) into path (rank 0 writes it atomically). */
int dpo__hm_ckpt_save(dpo__hm_t *h, const char *path, const dpo__hm_loop_t *lp,
                      const dpo_rng_t *rng);
/* Right after dpo__hm_setup: the state of path back (the same ranks and problem, else
 * DPO_EINVAL / DPO_EFORMAT naming the file); lp on every rank; then rank 0's
 * opts.ckpt_loaded. */
int dpo__hm_ckpt_load(dpo__hm_t *h, const char *path, dpo__hm_loop_t *lp, dpo_rng_t *rng);
/* After epoch lp->t: rank 0's opts.ckpt_due decided due[0] (the epoch's reduction carried
 * it to every rank): nothing, a checkpoint, or a checkpoint and DPO_EINTR ("stopped after
 * epoch ..."); lp->aux is set from due[1]. */
int dpo__hm_ckpt_epoch(dpo__hm_t *h, dpo__hm_loop_t *lp, const dpo_rng_t *rng,
                       const int64_t due[2]);

/* ---- hamsi_step.c ---- */
/* Reset the L-BFGS memory to sigma0 (safeguard after an undone epoch); zeroes the S, Y rows
 * this rank holds.  Local. */
void dpo__hm_reset_memory(dpo__hm_t *h);
/* Gradient of one block (grid: b; generic: the single rating `one` >= 0) against item
 * factors xc, added to acc1 / acc2 when given (lines 12 / 14), then the step (line 13); dx2
 * (generic on P ranks) receives the item step; the block's objective is added to *fsum
 * when fsum is given.  Local. */
void dpo__hm_block(dpo__hm_t *h, const dpo__blk_t *b, int64_t one, double *xc, double *acc1,
                   double *acc2, double *dx2, double *fsum);
/* Allreduce of per-part partial sums (w doubles per part) into out[w] (collective); the 2
 * form reduces na parts of wa sums and nb of wb, laid one after the other, in one Allreduce
 * into out[wa + wb].  The epoch's words (h->ew_n of h->ew) ride with it: part has room for
 * them after its parts (DPO__HM_EW); dpo__hm_words reduces them alone. */
int dpo__hm_reduce_parts(dpo__hm_t *h, double *part, int32_t nparts, int32_t w, double *out);
int dpo__hm_reduce_parts2(dpo__hm_t *h, double *part, int32_t na, int32_t wa, int32_t nb,
                          int32_t wb, double *out);
int dpo__hm_words(dpo__hm_t *h);
/* Lines 14-19 after the last inner step (collective): dpo__hm_pair_local (local: y and the
 * parts' 2M inner products into h->part), the reduction, dpo__hm_pair_push (local: acceptance
 * and the new S, Y rows). */
int dpo__hm_pair(dpo__hm_t *h);
void dpo__hm_pair_local(dpo__hm_t *h, int32_t *nparts);
int dpo__hm_pair_push(dpo__hm_t *h, const double *dots);
/* Seconds of k ticks (dpo__tick). */
double dpo__hm_tick_seconds(const dpo__hm_t *h, uint64_t k);

/* hamsi_guard.c: after a HAMSI epoch's strata: undo an epoch that raised the repeated
 * stratum's f or left a non-finite factor (*undone says so), else take its pair, both sums in
 * one Allreduce; after an mb-GD epoch, the same against the last accepted epoch's sum; the
 * divergence guard (local: every factor this rank holds and, when given, the RMSE finite).
 * The first two are collective. */
int dpo__hm_check_pair(dpo__hm_t *h, int *undone);
int dpo__hm_check_gd(dpo__hm_t *h);
int dpo__hm_diverged(const dpo__hm_t *h, int64_t t, const double *rmse);
/* Does a factor this rank holds have a non-finite entry?  Local. */
int dpo__hm_nonfinite(const dpo__hm_t *h);

#endif
