/* Fused per-row loss/gradient/Hessian kernels over a shard (see include/dpopt/kernels.h).
 *
 * Dense shards are processed in row blocks small enough to stay in cache: t = X_blk x,
 * per-row coefficients, then g += X_blk' w while the block is still in cache, so the matrix
 * streams from memory once per pass.  The full-gradient passes (dense and CSR) are the fused
 * vector loops of kern_pass.c, one build per ISA (faster than dgemv pairs on short blocks,
 * see jobs/bench/gradient); Hessian, Hessian-vector and evaluation passes use OpenBLAS
 * dgemv/dsyrk, minibatch rows ddot/daxpy.  Nothing here is collective and nothing allocates
 * more than one block.
 */
#include "config.h"

#include "dpopt/kernels.h"
#include "kern_pass.h"
#include "dpopt/status.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A block of this many bytes of X (plus t, w) fits comfortably in L2 on current x86 cores
 * and leaves room for x and g in L1. */
#define DPO__BLK_BYTES (48 * 1024)
#define DPO__BLK_MAX 256

static int64_t dpo__blk_rows(int32_t d) {
  int64_t b = DPO__BLK_BYTES / ((int64_t)d * (int64_t)sizeof(double));
  if (b < 1) b = 1;
  if (b > DPO__BLK_MAX) b = DPO__BLK_MAX;
  return b;
}

/* ---- software prefetch of the dense and CSR passes, chosen at run time ----
 * Whether a software prefetch helps, and how far ahead, depends on the machine: on one 2-core
 * EPYC VM (read loop 33 GB/s) the hardware prefetcher alone left an earlier pass at 0.52-0.66
 * of the read loop and an 8 KB prefetch raised it to 0.86; on another (23-30 GB/s) that
 * prefetch lowered it from 0.66 to 0.49, and of the prefetches spread over the second touch
 * (kern_pass_body.h) 1-4 KB ahead gained 0-5%, 8 KB lost 10-40%, 16 KB and more lost 30-50%
 * (issue 16); on an Intel Xeon (read loop 9.3-9.8 GB/s) none of those gained, while the same
 * distances on the FIRST touch (prefetcht0 into L1 with the block's own misses) took the pass
 * from 0.76-0.81 to 0.91-0.95 of the read loop, and both touches at once to 0.87-0.89.  So the
 * candidates are a distance on one touch or the other, and the pass times them on its first
 * large call (dpo__timed_pass) and keeps the fastest.  A prefetch changes no arithmetic:
 * results do not depend on the choice. */
typedef struct {
  int touch; /* 1: first touch (dense: the dots; CSR: the row's stream), 2: second, 0: none */
  int64_t bytes;
} dpo__pf_cand_t;
static const dpo__pf_cand_t dpo__pf_dense_cand[] = {
    {0, 0}, {1, 1024}, {1, 2048}, {1, 4096}, {1, 8192}, {2, 1024}, {2, 2048}, {2, 4096}};
/* CSR: values this far ahead (indices the same entries ahead), see kern_pass_body.h */
static const dpo__pf_cand_t dpo__pf_csr_cand[] = {{0, 0}, {1, 1024}, {1, 4096}, {1, 16384}};

/* One pass kind's choice, measured once per process: mode -1 not yet, else an index into
 * cand (0: no prefetch); while calls too small to measure in themselves take turns, best[]
 * holds each candidate's least seconds a byte and seen how many have been timed. */
typedef struct {
  const dpo__pf_cand_t *cand;
  int ncand, mode, seen;
  double best[16]; /* ncand <= 16 */
} dpo__pf_choice_t;
#define DPO__PF_CHOICE(c) {c, (int)(sizeof c / sizeof c[0]), -1, 0, {0}}
static dpo__pf_choice_t dpo__pf_dense = DPO__PF_CHOICE(dpo__pf_dense_cand),
                        dpo__pf_csr = DPO__PF_CHOICE(dpo__pf_csr_cand);

static const dpo__pf_cand_t *dpo__pf_cur(const dpo__pf_choice_t *ch) {
  return &ch->cand[ch->mode > 0 ? ch->mode : 0];
}
int dpo_kern_prefetch_mode(void) { return dpo__pf_dense.mode; }
int dpo_kern_prefetch_touch(void) { return dpo__pf_cur(&dpo__pf_dense)->touch; }
int64_t dpo_kern_prefetch_bytes(void) { return dpo__pf_cur(&dpo__pf_dense)->bytes; }
int dpo_kern_csr_prefetch_mode(void) { return dpo__pf_csr.mode; }
int64_t dpo_kern_csr_prefetch_bytes(void) { return dpo__pf_cur(&dpo__pf_csr)->bytes; }

/* The measurement: segments of at least DPO__PF_SEG_MIN bytes cycle through the candidates in
 * an order that alternates direction each round (0 1 2 3 4 4 3 2 1 0 ...), so a drift of the
 * machine's speed hits all alike; after DPO__PF_ROUNDS rounds each candidate's least time a
 * byte (the least disturbed by other load) decides, a prefetch only when it beats none by 3%.
 * A full pass over at least DPO__PF_MIN_BYTES is cut into ~1 MB segments and decides at once;
 * smaller calls of at least DPO__PF_SEG_MIN bytes are one segment each, in turn, so the
 * oracle's passes in 256-row views (comm/oracle.c) decide within their first few MB (32 KB:
 * a view of dense rows of d >= 16, or of CSR rows of >= 11 nonzeros). */
#define DPO__PF_MIN_BYTES ((int64_t)64 << 20)
#define DPO__PF_SEG_MIN ((double)(32 << 10))
#define DPO__PF_ROUNDS 6

static double dpo__mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void dpo__pf_set(dpo__pass_t *a, const dpo__pf_cand_t *c) {
  a->pf_bytes = c->bytes;
  a->pf_touch = c->touch;
}

/* Runs rows [r0, r1) as the next timed segment of the measurement; decides after the last. */
static void dpo__pf_segment(dpo__pf_choice_t *ch, dpo__pass_fn plain, dpo__pass_fn pf,
                            dpo__pass_t *a, int64_t r0, int64_t r1, double bytes, double *lsum,
                            double *g) {
  const int nc = ch->ncand, r = ch->seen / nc, k = ch->seen % nc;
  const int m = r & 1 ? nc - 1 - k : k;
  if (ch->seen == 0)
    for (int j = 0; j < nc; j++) ch->best[j] = INFINITY;
  dpo__pf_set(a, &ch->cand[m]);
  double t0 = dpo__mono();
  (m ? pf : plain)(a, r0, r1, lsum, g);
  double dt = (dpo__mono() - t0) / bytes;
  if (dt < ch->best[m]) ch->best[m] = dt;
  if (++ch->seen < DPO__PF_ROUNDS * nc) return;
  int pick = 0;
  for (int j = 1; j < nc; j++)
    if (ch->best[j] < 0.97 * ch->best[0] && ch->best[j] < ch->best[pick]) pick = j;
  ch->mode = pick;
}

/* Runs a full pass (plain, or pf with the prefetch) over rows [0, cnt) of row_bytes bytes each
 * on average, with the chosen prefetch, or as segments of the measurement: segments are whole
 * multiples of blk rows, where the pass splits into the same bits. */
static void dpo__timed_pass(dpo__pf_choice_t *ch, dpo__pass_fn plain, dpo__pass_fn pf,
                            dpo__pass_t *a, int64_t cnt, double row_bytes, int64_t blk,
                            double *lsum, double *g) {
  const double bytes = (double)cnt * row_bytes;
  if (ch->mode < 0 && bytes >= (double)DPO__PF_MIN_BYTES && ch->seen == 0) {
    const int64_t seg_rows = ((int64_t)((1 << 20) / row_bytes) / blk + 1) * blk;
    int64_t r0 = 0;
    for (; ch->mode < 0 && r0 + seg_rows <= cnt; r0 += seg_rows)
      dpo__pf_segment(ch, plain, pf, a, r0, r0 + seg_rows, (double)seg_rows * row_bytes, lsum,
                      g);
    dpo__pf_set(a, dpo__pf_cur(ch)); /* the rest with the choice */
    (a->pf_touch ? pf : plain)(a, r0, cnt, lsum, g);
    return;
  }
  if (ch->mode < 0 && bytes >= DPO__PF_SEG_MIN) {
    dpo__pf_segment(ch, plain, pf, a, 0, cnt, bytes, lsum, g);
    return;
  }
  dpo__pf_set(a, dpo__pf_cur(ch));
  (a->pf_touch ? pf : plain)(a, 0, cnt, lsum, g);
}

/* Stable logistic pieces at margin m = y t, with e = exp(-|m|) in (0, 1] (never overflows):
 *   phi = log(1 + exp(-m)) = log1p(e) + max(-m, 0)
 *   sigma(-m) = 1 / (1 + exp(m)) = e / (1 + e) if m >= 0, 1 / (1 + e) otherwise. */
static inline double dpo__sigma_neg(double m) {
  if (m >= 0) {
    double e = exp(-m);
    return e / (1.0 + e);
  }
  return 1.0 / (1.0 + exp(m));
}

/* (phi, c) with c = d phi / d t. */
static inline double dpo__loss_coef(dpo_loss_t loss, double t, double y, double *c) {
  if (loss == DPO_LOSS_LOGISTIC) {
    double m = y * t, e = exp(-fabs(m)); /* one exp serves phi and sigma */
    *c = -y * (m >= 0 ? e / (1.0 + e) : 1.0 / (1.0 + e));
    return log1p(e) + (m < 0 ? -m : 0.0);
  }
  double r = t - y;
  *c = r;
  return 0.5 * r * r;
}

/* Curvature w = d^2 phi / dt^2: sigma(t)(1 - sigma(t)) (symmetric in t, so y drops out) or 1. */
static inline double dpo__loss_curv(dpo_loss_t loss, double t) {
  if (loss == DPO_LOSS_LOGISTIC) {
    double p = dpo__sigma_neg(fabs(t)); /* in (0, 1/2]: 1 - p has no cancellation */
    return p * (1.0 - p);
  }
  return 1.0;
}

/* Clip factor min(1, C / (|c| ||u||)); 1 when the per-example gradient is zero. */
static inline double dpo__clip_scale(double C, double c, double nrm) {
  double gn = fabs(c) * nrm;
  return gn > C ? C / gn : 1.0;
}

static int dpo__check_shard(const char *fn, const dpo_shard_t *s) {
  if (!s) return dpo_err(DPO_EINVAL, "%s: shard is NULL", fn);
  if (s->d <= 0) return dpo_err(DPO_EINVAL, "%s: shard dimension %d <= 0", fn, (int)s->d);
  if (s->n < 0) return dpo_err(DPO_EINVAL, "%s: shard has %ld rows", fn, (long)s->n);
  if (s->n > 0 && !s->y) return dpo_err(DPO_EINVAL, "%s: shard has no labels", fn);
  if (s->sparse) {
    if (!s->rowptr || (s->rowptr[s->n] > 0 && (!s->colind || !s->val)))
      return dpo_err(DPO_EINVAL, "%s: CSR shard without rowptr/colind/val", fn);
  } else if (s->n > 0 && !s->X) {
    return dpo_err(DPO_EINVAL, "%s: dense shard without X", fn);
  }
  return DPO_OK;
}

static int dpo__check_loss(const char *fn, dpo_loss_t loss) {
  if (loss != DPO_LOSS_LOGISTIC && loss != DPO_LOSS_SQUARED)
    return dpo_err(DPO_EINVAL, "%s: unknown loss %d", fn, (int)loss);
  return DPO_OK;
}

int dpo_kern_loss_grad(dpo_loss_t loss, const dpo_shard_t *s, const double *x,
                       const int64_t *rows, int64_t nrows, const dpo_clip_t *clip,
                       const double *rownorm, double *loss_sum, double *g) {
  static const char fn[] = "dpo_kern_loss_grad";
  int rc;
  if ((rc = dpo__check_loss(fn, loss)) || (rc = dpo__check_shard(fn, s))) return rc;
  if (!x || !g || !loss_sum) return dpo_err(DPO_EINVAL, "%s: NULL x, g or loss_sum", fn);
  int clipping = clip && clip->norm != DPO_CLIP_NONE;
  if (clip && clip->norm != DPO_CLIP_NONE && clip->norm != DPO_CLIP_L1 &&
      clip->norm != DPO_CLIP_L2)
    return dpo_err(DPO_EINVAL, "%s: unknown clip norm %d", fn, (int)clip->norm);
  if (clipping && !(clip->C > 0 && isfinite(clip->C)))
    return dpo_err(DPO_EINVAL, "%s: clip threshold C = %g must be finite and > 0", fn, clip->C);
  int64_t cnt = rows ? nrows : s->n;
  if (cnt < 0) return dpo_err(DPO_EINVAL, "%s: nrows = %ld < 0", fn, (long)nrows);
  if (rows)
    for (int64_t k = 0; k < cnt; k++)
      if (rows[k] < 0 || rows[k] >= s->n)
        return dpo_err(DPO_EINVAL, "%s: row index %ld outside [0, %ld)", fn, (long)rows[k],
                       (long)s->n);
  const int32_t d = s->d;
  const double C = clipping ? clip->C : 0.0;
  double lsum = 0.0;

  dpo__pass_t pa = {loss, s, x, rows, C, clipping ? clip->norm : DPO_CLIP_NONE, rownorm, 0, 0,
                    NULL};
  if (s->sparse) { /* all rows or the listed ones, in list order (kern_pass.c) */
    const dpo__pass_isa_t *isa = dpo__pass_isa();
    if (rows || cnt == 0) /* a row list is no stream: no prefetch */
      isa->csr(&pa, 0, cnt, &lsum, g);
    else /* 12 bytes a nonzero; the pass splits at superblocks into the same bits */
      dpo__timed_pass(&dpo__pf_csr, isa->csr, isa->csr_pf, &pa, cnt,
                      12.0 * (double)(s->rowptr[cnt] - s->rowptr[0]) / (double)cnt,
                      DPO__CSR_SB, &lsum, g);
    *loss_sum += lsum;
    return DPO_OK;
  }

  if (rows) {
    /* Scattered rows (minibatches): each row is dotted and then axpy'd while it is in L1.
     * A minibatch's rows lie far apart (a Poisson batch of 1000 of 1e6 rows: ~800 KB between
     * rows), so no hardware prefetcher sees the next one coming and every row began with a
     * miss to memory; the row DPO__ROWS_AHEAD on is fetched while this one is used (no
     * arithmetic changes: the same bits). */
    enum { DPO__ROWS_AHEAD = 2 };
    const size_t rb = (size_t)d * sizeof(double);
    for (int64_t k = 0; k < cnt; k++) {
      int64_t i = rows[k];
      const double *u = s->X + i * (int64_t)d;
      if (k + DPO__ROWS_AHEAD < cnt) {
        const int64_t ia = rows[k + DPO__ROWS_AHEAD];
        const char *pa = (const char *)(s->X + ia * (int64_t)d);
        for (size_t o = 0; o < rb; o += 64) __builtin_prefetch(pa + o, 0, 3);
        __builtin_prefetch(pa + rb - 1, 0, 3);
        __builtin_prefetch(s->y + ia, 0, 3);
        if (rownorm) __builtin_prefetch(rownorm + ia, 0, 3);
      }
      double t = cblas_ddot(d, u, 1, x, 1), c;
      lsum += dpo__loss_coef(loss, t, s->y[i], &c);
      if (clipping) {
        double nrm = rownorm ? rownorm[i] : dpo__kern_row_norm(s, i, clip->norm);
        c *= dpo__clip_scale(C, c, nrm);
      }
      if (c != 0.0) cblas_daxpy(d, c, u, 1, g, 1);
    }
    *loss_sum += lsum;
    return DPO_OK;
  }

  /* Blocks of 8 rows in L1, one ISA build of the whole pass (kern_pass.c).  A short last
   * block goes through a zero-padded copy: one block of scratch. */
  if (cnt % DPO__GRAD_BLK) {
    pa.xpad = malloc((size_t)DPO__GRAD_BLK * (size_t)d * sizeof(double));
    if (!pa.xpad) return dpo_err(DPO_ENOMEM, "%s: cannot allocate an 8 x %d block", fn, d);
  }
  const dpo__pass_isa_t *isa = dpo__pass_isa();
  dpo__timed_pass(&dpo__pf_dense, isa->dense, isa->dense_pf, &pa, cnt,
                  (double)d * (double)sizeof(double), DPO__GRAD_BLK, &lsum, g);
  free(pa.xpad);
  *loss_sum += lsum;
  return DPO_OK;
}

int dpo_kern_hess(dpo_loss_t loss, const dpo_shard_t *s, const double *x, double *H) {
  static const char fn[] = "dpo_kern_hess";
  int rc;
  if ((rc = dpo__check_loss(fn, loss)) || (rc = dpo__check_shard(fn, s))) return rc;
  if (!H || (loss == DPO_LOSS_LOGISTIC && !x))
    return dpo_err(DPO_EINVAL, "%s: NULL H or x", fn);
  const int32_t d = s->d;
  const int64_t dd = (int64_t)d;

  if (s->sparse) {
    for (int64_t i = 0; i < s->n; i++) {
      int64_t a = s->rowptr[i], b = s->rowptr[i + 1];
      double w = 1.0;
      if (loss == DPO_LOSS_LOGISTIC) {
        double t = 0.0;
        for (int64_t p = a; p < b; p++) t += s->val[p] * x[s->colind[p]];
        w = dpo__loss_curv(loss, t);
      }
      /* w * (v_p v_q) rather than (w v_p) v_q keeps H exactly symmetric */
      for (int64_t p = a; p < b; p++) {
        double vp = s->val[p];
        double *Hr = H + (int64_t)s->colind[p] * dd;
        for (int64_t q = a; q < b; q++) Hr[s->colind[q]] += w * (vp * s->val[q]);
      }
    }
    return DPO_OK;
  }

  if (s->n == 0) return DPO_OK;
  /* dsyrk fills one triangle; accumulate into a scratch upper triangle and mirror it so the
   * caller's H gets the full symmetric update. */
  int64_t B = dpo__blk_rows(d);
  double *T = calloc((size_t)(dd * dd), sizeof *T);
  double *Z = NULL, *tb = NULL;
  if (!T) {
    rc = dpo_err(DPO_ENOMEM, "%s: cannot allocate %d x %d scratch", fn, d, d);
    goto out;
  }
  if (loss == DPO_LOSS_SQUARED) {
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, (int)s->n, 1.0, s->X, d, 0.0, T, d);
  } else {
    Z = malloc((size_t)(B * dd) * sizeof *Z);
    tb = malloc((size_t)B * sizeof *tb);
    if (!Z || !tb) {
      rc = dpo_err(DPO_ENOMEM, "%s: cannot allocate a %ld x %d block", fn, (long)B, d);
      goto out;
    }
    for (int64_t r0 = 0; r0 < s->n; r0 += B) {
      int64_t nb = s->n - r0 < B ? s->n - r0 : B;
      const double *Xb = s->X + r0 * dd;
      cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, d, 1.0, Xb, d, x, 1, 0.0, tb, 1);
      for (int64_t j = 0; j < nb; j++) {
        double sw = sqrt(dpo__loss_curv(loss, tb[j]));
        const double *u = Xb + j * dd;
        double *z = Z + j * dd;
        for (int64_t k = 0; k < dd; k++) z[k] = sw * u[k];
      }
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, (int)nb, 1.0, Z, d, 1.0, T, d);
    }
  }
  for (int64_t a = 0; a < dd; a++) {
    H[a * dd + a] += T[a * dd + a];
    for (int64_t b = a + 1; b < dd; b++) {
      H[a * dd + b] += T[a * dd + b];
      H[b * dd + a] += T[a * dd + b];
    }
  }
  rc = DPO_OK;
out:
  free(T);
  free(Z);
  free(tb);
  return rc;
}

int dpo_kern_hessvec(dpo_loss_t loss, const dpo_shard_t *s, const double *x, const double *v,
                     double *out) {
  static const char fn[] = "dpo_kern_hessvec";
  int rc;
  if ((rc = dpo__check_loss(fn, loss)) || (rc = dpo__check_shard(fn, s))) return rc;
  if (!v || !out || (loss == DPO_LOSS_LOGISTIC && !x))
    return dpo_err(DPO_EINVAL, "%s: NULL x, v or out", fn);
  const int32_t d = s->d;

  if (s->sparse) {
    for (int64_t i = 0; i < s->n; i++) {
      int64_t a = s->rowptr[i], b = s->rowptr[i + 1];
      double t = 0.0, uv = 0.0;
      for (int64_t p = a; p < b; p++) {
        if (loss == DPO_LOSS_LOGISTIC) t += s->val[p] * x[s->colind[p]];
        uv += s->val[p] * v[s->colind[p]];
      }
      double c = dpo__loss_curv(loss, t) * uv;
      for (int64_t p = a; p < b; p++) out[s->colind[p]] += c * s->val[p];
    }
    return DPO_OK;
  }

  const int64_t B = dpo__blk_rows(d);
  double tb[DPO__BLK_MAX], sb[DPO__BLK_MAX];
  for (int64_t r0 = 0; r0 < s->n; r0 += B) {
    int64_t nb = s->n - r0 < B ? s->n - r0 : B;
    const double *Xb = s->X + r0 * (int64_t)d;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, d, 1.0, Xb, d, v, 1, 0.0, sb, 1);
    if (loss == DPO_LOSS_LOGISTIC) {
      cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, d, 1.0, Xb, d, x, 1, 0.0, tb, 1);
      for (int64_t j = 0; j < nb; j++) sb[j] *= dpo__loss_curv(loss, tb[j]);
    }
    cblas_dgemv(CblasRowMajor, CblasTrans, (int)nb, d, 1.0, Xb, d, sb, 1, 1.0, out, 1);
  }
  return DPO_OK;
}

int dpo_kern_eval(dpo_loss_t loss, const dpo_shard_t *s, const double *x, double *loss_sum,
                  double *metric_sum) {
  static const char fn[] = "dpo_kern_eval";
  int rc;
  if ((rc = dpo__check_loss(fn, loss)) || (rc = dpo__check_shard(fn, s))) return rc;
  if (!x || !loss_sum || !metric_sum)
    return dpo_err(DPO_EINVAL, "%s: NULL x, loss_sum or metric_sum", fn);
  const int32_t d = s->d;
  const int64_t B = dpo__blk_rows(d);
  double tb[DPO__BLK_MAX];
  double lsum = 0.0, msum = 0.0;
  for (int64_t r0 = 0; r0 < s->n; r0 += B) {
    int64_t nb = s->n - r0 < B ? s->n - r0 : B;
    if (s->sparse) {
      for (int64_t j = 0; j < nb; j++) {
        int64_t i = r0 + j;
        double t = 0.0;
        for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
          t += s->val[p] * x[s->colind[p]];
        tb[j] = t;
      }
    } else {
      cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, d, 1.0, s->X + r0 * (int64_t)d, d, x,
                  1, 0.0, tb, 1);
    }
    for (int64_t j = 0; j < nb; j++) {
      double y = s->y[r0 + j], c;
      lsum += dpo__loss_coef(loss, tb[j], y, &c);
      if (loss == DPO_LOSS_LOGISTIC) {
        /* prediction sign(t), ties (t == 0) predicted +1 */
        double pred = tb[j] >= 0 ? 1.0 : -1.0;
        msum += pred == y ? 1.0 : 0.0;
      } else {
        msum += (tb[j] - y) * (tb[j] - y);
      }
    }
  }
  *loss_sum += lsum;
  *metric_sum += msum;
  return DPO_OK;
}
