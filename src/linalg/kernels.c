/* Fused per-row loss/gradient/Hessian kernels over a shard (see include/dpopt/kernels.h).
 *
 * Dense shards are processed in row blocks small enough to stay in cache: t = X_blk x,
 * per-row coefficients, then g += X_blk' w while the block is still in cache, so the matrix
 * streams from memory once per pass.  The full-gradient pass uses the fused vector loops
 * below (faster than dgemv pairs on short blocks, see jobs/bench/gradient); Hessian,
 * Hessian-vector and evaluation passes use OpenBLAS dgemv/dsyrk.  CSR shards use plain
 * fused loops.  Nothing here is collective and nothing allocates more than one block.
 */
#include "config.h"

#include "dpopt/kernels.h"
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

/* ---- fused dense block loops for the full-gradient pass ----
 * Plain C on GCC vector types, compiled for AVX-512 / AVX2 / baseline and picked at load
 * time (target_clones), so one binary runs everywhere; an 8-wide type is one zmm register
 * under AVX-512 and is split by the compiler elsewhere.  Loads go through memcpy: a shard's
 * X is 64-byte aligned (dpo__dense_alloc) but rows start wherever d puts them.  Blocks are
 * DPO__GRAD_BLK rows: with d = 100 that is 6.4 KB, which stays in L1 between the two touches
 * (t = X_blk x, then g += X_blk' w). */
#define DPO__GRAD_BLK 8 /* also the lane count of the logistic block below */

typedef double dpo__v4 __attribute__((vector_size(32)));
typedef double dpo__v8 __attribute__((vector_size(64)));
#define DPO__LD4(p) ({ dpo__v4 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define DPO__ST4(p, v) do { dpo__v4 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
#define DPO__LD8(p) ({ dpo__v8 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define DPO__ST8(p, v) do { dpo__v8 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define DPO__MULTIARCH __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef DPO__MULTIARCH
#define DPO__MULTIARCH
#endif

/* The order GCC's target_clones resolver tries the clones in (the first the CPU supports). */
const char *dpo_kern_isa(void) {
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "AVX-512";
  if (__builtin_cpu_supports("avx2")) return "AVX2";
#endif
#endif
  return "generic";
}

/* Halves of an 8-vector added: lanes (k, k + 4).  (A macro: a function returning a vector
 * type changes the ABI in the baseline clone.) */
#define DPO__FOLD8(a) \
  (__builtin_shufflevector((a), (a), 0, 1, 2, 3) + __builtin_shufflevector((a), (a), 4, 5, 6, 7))

/* Prefetch distance of the first touch, in doubles (8 KB ahead of the row being read).  Whether
 * it helps depends on the machine: on one 2-core EPYC VM (AVX-512, read loop 33 GB/s) the
 * hardware prefetcher alone left the gradient pass at 0.52-0.66 of the read loop and this
 * prefetch raised it to 0.86; on another (read loop 23 GB/s) the same prefetch lowered it from
 * 0.66 to 0.49 (jobs/bench/gradient, issue 16).  So the pass measures both on its first large
 * call (dpo__pf_choose) and keeps the faster.  Non-temporal: the block is used twice from L1
 * and never again.  A prefetch changes no arithmetic: results do not depend on the choice. */
#ifndef DPO__PF_AHEAD
#define DPO__PF_AHEAD 1024
#endif

/* t_i = u_i'x for the nb rows of a block, one row at a time with two 8-lane accumulators.
 * (Four rows sharing the loads of x ran faster from cache but slower from memory.) */
static inline __attribute__((always_inline)) void
dpo__blk_dots_impl(int64_t nb, int32_t d, const double *Xb, const double *x, double *t, int pf) {
  const int32_t d8 = d & ~7;
  for (int64_t i = 0; i < nb; i++) {
    const double *u = Xb + i * (int64_t)d;
    dpo__v8 a0 = {0}, a1 = {0};
    int32_t j = 0;
    for (; j + 16 <= d8; j += 16) {
      if (pf) {
        __builtin_prefetch(u + j + DPO__PF_AHEAD, 0, 0);
        __builtin_prefetch(u + j + 8 + DPO__PF_AHEAD, 0, 0);
      }
      a0 += DPO__LD8(u + j) * DPO__LD8(x + j);
      a1 += DPO__LD8(u + j + 8) * DPO__LD8(x + j + 8);
    }
    if (j < d8) {
      if (pf) __builtin_prefetch(u + j + DPO__PF_AHEAD, 0, 0);
      a0 += DPO__LD8(u + j) * DPO__LD8(x + j);
    }
    dpo__v8 a = a0 + a1;
    dpo__v4 b = DPO__FOLD8(a);
    j = d8;
    if (j + 4 <= d) {
      b += DPO__LD4(u + j) * DPO__LD4(x + j);
      j += 4;
    }
    double sum = (b[0] + b[1]) + (b[2] + b[3]);
    for (; j < d; j++) sum += u[j] * x[j];
    t[i] = sum;
  }
}
DPO__MULTIARCH
static void dpo__blk_dots_pf(int64_t nb, int32_t d, const double *Xb, const double *x,
                             double *t) {
  dpo__blk_dots_impl(nb, d, Xb, x, t, 1);
}
DPO__MULTIARCH
static void dpo__blk_dots(int64_t nb, int32_t d, const double *Xb, const double *x, double *t) {
  dpo__blk_dots_impl(nb, d, Xb, x, t, 0);
}

/* The choice of software prefetch, measured once per process: -1 not yet, 0 hardware
 * prefetch only, 1 the software prefetch above. */
static int dpo__pf_mode = -1;

int dpo_kern_prefetch_mode(void) { return dpo__pf_mode; }

/* The measurement, on the first full pass over at least DPO__PF_MIN_BYTES (data that comes
 * from memory, not cache): DPO__PF_SEGS segments of ~1 MB alternate the two modes in the order
 * 0 1 1 0 0 1 1 0 ... (so a drift of the machine's speed hits both alike); the smaller of each
 * mode's segment times (the least disturbed by other load) decides, software prefetch only
 * when it is 3% faster. */
#define DPO__PF_MIN_BYTES ((int64_t)64 << 20)
#define DPO__PF_SEGS 16
typedef struct {
  int on, seg;
  int64_t seg_rows;
  double t0, best[2];
} dpo__pf_trial_t;

static double dpo__mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void dpo__pf_trial_start(dpo__pf_trial_t *tr, int64_t cnt, int32_t d) {
  int64_t row_bytes = (int64_t)d * (int64_t)sizeof(double);
  tr->on = dpo__pf_mode < 0 && cnt * row_bytes >= DPO__PF_MIN_BYTES;
  tr->seg = 0;
  tr->t0 = 0.0;
  tr->seg_rows = ((((int64_t)1 << 20) / row_bytes) / DPO__GRAD_BLK + 1) * DPO__GRAD_BLK;
  tr->best[0] = tr->best[1] = INFINITY;
}

/* At the start of a segment: time the one that ended, return the mode of the next. */
static int dpo__pf_trial_step(dpo__pf_trial_t *tr) {
  double now = dpo__mono();
  if (tr->seg > 0) {
    int m = ((tr->seg - 1) ^ ((tr->seg - 1) >> 1)) & 1;
    if (now - tr->t0 < tr->best[m]) tr->best[m] = now - tr->t0;
  }
  if (tr->seg == DPO__PF_SEGS) {
    dpo__pf_mode = tr->best[1] < 0.97 * tr->best[0];
    tr->on = 0;
    return dpo__pf_mode;
  }
  tr->t0 = now;
  int m = (tr->seg ^ (tr->seg >> 1)) & 1;
  tr->seg++;
  return m;
}

/* g += sum_i w_i u_i over a block, one 32-column tile at a time so the tile of g stays in
 * registers across the block's rows (g is loaded and stored once per block). */
DPO__MULTIARCH
static void dpo__blk_axpys(int64_t nb, int32_t d, const double *Xb, const double *w, double *g) {
  const int64_t ld = d;
  int32_t j = 0;
  for (; j + 32 <= d; j += 32) {
    dpo__v8 g0 = DPO__LD8(g + j), g1 = DPO__LD8(g + j + 8), g2 = DPO__LD8(g + j + 16),
            g3 = DPO__LD8(g + j + 24);
    for (int64_t i = 0; i < nb; i++) {
      const double *u = Xb + i * ld + j;
      dpo__v8 c = {w[i], w[i], w[i], w[i], w[i], w[i], w[i], w[i]};
      g0 += c * DPO__LD8(u);
      g1 += c * DPO__LD8(u + 8);
      g2 += c * DPO__LD8(u + 16);
      g3 += c * DPO__LD8(u + 24);
    }
    DPO__ST8(g + j, g0);
    DPO__ST8(g + j + 8, g1);
    DPO__ST8(g + j + 16, g2);
    DPO__ST8(g + j + 24, g3);
  }
  for (; j + 8 <= d; j += 8) {
    dpo__v8 g0 = DPO__LD8(g + j);
    for (int64_t i = 0; i < nb; i++) {
      dpo__v8 c = {w[i], w[i], w[i], w[i], w[i], w[i], w[i], w[i]};
      g0 += c * DPO__LD8(Xb + i * ld + j);
    }
    DPO__ST8(g + j, g0);
  }
  if (j + 4 <= d) {
    dpo__v4 g0 = DPO__LD4(g + j);
    for (int64_t i = 0; i < nb; i++) {
      dpo__v4 c = {w[i], w[i], w[i], w[i]};
      g0 += c * DPO__LD4(Xb + i * ld + j);
    }
    DPO__ST4(g + j, g0);
    j += 4;
  }
  for (; j < d; j++) {
    double sum = g[j];
    for (int64_t i = 0; i < nb; i++) sum += w[i] * Xb[i * ld + j];
    g[j] = sum;
  }
}

/* Logistic pieces of one block, all lanes at once: for margins m_k = y_k t_k (k < nb),
 *   c_k = -y_k sigma(-m_k)  and  sum_k phi(m_k),  phi(m) = log1p(e) + max(-m, 0),
 * with e = exp(-|m|) (formulas at dpo__loss_coef).  With -fopenmp-simd and -fno-math-errno
 * (set by configure when the compiler takes them) the fixed-length loop becomes calls of
 * glibc's libmvec (_ZGVeN8v_exp / _log1p, ...; at most 4 ulp from the scalar functions).
 * Every lane, including the padding of a short block, goes through the same variant, so a
 * row's value does not depend on its position in the block.  Without those flags the loop is
 * scalar and still correct. */
/* dpo__live[n][k] = 1 for k < n: lane masks of a block with n live rows. */
static const double dpo__live[DPO__GRAD_BLK + 1][DPO__GRAD_BLK] = {
#define DPO__L(n) {0 < n, 1 < n, 2 < n, 3 < n, 4 < n, 5 < n, 6 < n, 7 < n}
    DPO__L(0), DPO__L(1), DPO__L(2), DPO__L(3), DPO__L(4), DPO__L(5), DPO__L(6), DPO__L(7),
    DPO__L(8)
#undef DPO__L
};
#if DPO__GRAD_BLK != 8
#error "dpo__live assumes DPO__GRAD_BLK == 8"
#endif

#if defined(__x86_64__) && defined(DPO_HAVE_LIBMVEC)
extern double exp(double) __attribute__((simd("notinbranch")));
extern double log1p(double) __attribute__((simd("notinbranch")));
#endif
DPO__MULTIARCH
static void dpo__blk_logistic(const double *restrict t, const double *restrict y,
                              const double *restrict live, double *restrict c,
                              double *restrict phi) {
  /* Branch-free (selects, one division) so the loop vectorizes at every ISA level; the
   * per-lane losses are summed by the caller in a fixed order. */
#ifdef DPO_HAVE_LIBMVEC
#pragma omp simd
#endif
  for (int k = 0; k < DPO__GRAD_BLK; k++) {
    double m = y[k] * t[k], e = exp(-fabs(m)), num = m >= 0 ? e : 1.0;
    c[k] = -y[k] * (num / (1.0 + e));
    phi[k] = live[k] * (log1p(e) + (m < 0 ? -m : 0.0));
  }
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

/* Norm of one row matching the clip norm. */
static double dpo__row_norm(const dpo_shard_t *s, int64_t i, dpo_clipnorm_t norm) {
  if (s->sparse) {
    int64_t a = s->rowptr[i], b = s->rowptr[i + 1];
    if (b == a) return 0.0;
    return norm == DPO_CLIP_L1 ? cblas_dasum((int)(b - a), s->val + a, 1)
                               : cblas_dnrm2((int)(b - a), s->val + a, 1);
  }
  const double *u = s->X + i * (int64_t)s->d;
  return norm == DPO_CLIP_L1 ? cblas_dasum(s->d, u, 1) : cblas_dnrm2(s->d, u, 1);
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

  if (s->sparse) {
    /* Blocks of DPO__GRAD_BLK rows (all rows, or the listed ones in list order): the dots
     * (independent chains the core overlaps), one vector call of exp/log1p for the block's
     * logistic pieces, then the scatters.  ~1.5x faster than one scalar exp + log1p a row on
     * jobs/bench/csr (a9a-like and 1e5-column problems). */
    double tb[DPO__GRAD_BLK] __attribute__((aligned(64))), yb[DPO__GRAD_BLK],
        cb[DPO__GRAD_BLK] __attribute__((aligned(64))), pb[DPO__GRAD_BLK]
        __attribute__((aligned(64)));
    int64_t ib[DPO__GRAD_BLK];
    for (int64_t k0 = 0; k0 < cnt; k0 += DPO__GRAD_BLK) {
      int64_t nb = cnt - k0 < DPO__GRAD_BLK ? cnt - k0 : DPO__GRAD_BLK;
      for (int64_t j = 0; j < DPO__GRAD_BLK; j++) {
        if (j >= nb) { /* padding lanes of a short block: masked out of the sum */
          tb[j] = yb[j] = 0.0;
          continue;
        }
        int64_t i = rows ? rows[k0 + j] : k0 + j;
        double t = 0.0;
        for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) t += s->val[p] * x[s->colind[p]];
        ib[j] = i;
        tb[j] = t;
        yb[j] = s->y[i];
      }
      if (loss == DPO_LOSS_LOGISTIC) {
        dpo__blk_logistic(tb, yb, dpo__live[nb], cb, pb);
        lsum += ((pb[0] + pb[1]) + (pb[2] + pb[3])) + ((pb[4] + pb[5]) + (pb[6] + pb[7]));
      } else {
        for (int64_t j = 0; j < nb; j++) lsum += dpo__loss_coef(loss, tb[j], yb[j], &cb[j]);
      }
      for (int64_t j = 0; j < nb; j++) {
        int64_t i = ib[j];
        double c = cb[j];
        if (clipping) {
          double nrm = rownorm ? rownorm[i] : dpo__row_norm(s, i, clip->norm);
          c *= dpo__clip_scale(C, c, nrm);
        }
        if (c != 0.0)
          for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) g[s->colind[p]] += c * s->val[p];
      }
    }
    *loss_sum += lsum;
    return DPO_OK;
  }

  if (rows) {
    /* Scattered rows (minibatches): each row is dotted and then axpy'd while it is in L1. */
    for (int64_t k = 0; k < cnt; k++) {
      int64_t i = rows[k];
      const double *u = s->X + i * (int64_t)d;
      double t = cblas_ddot(d, u, 1, x, 1), c;
      lsum += dpo__loss_coef(loss, t, s->y[i], &c);
      if (clipping) {
        double nrm = rownorm ? rownorm[i] : dpo__row_norm(s, i, clip->norm);
        c *= dpo__clip_scale(C, c, nrm);
      }
      if (c != 0.0) cblas_daxpy(d, c, u, 1, g, 1);
    }
    *loss_sum += lsum;
    return DPO_OK;
  }

  /* Blocks of DPO__GRAD_BLK rows (in L1).  Measured on jobs/bench/gradient (d = 100):
   * OpenBLAS dgemv pairs on 48 KB blocks reached 0.41-0.58 of the read loop's bandwidth, these
   * fused loops 0.8-0.95 (README "Tests and benchmarks"); 16-row blocks and four rows per dot
   * product were faster from cache but slower from memory. */
  double tbuf[DPO__GRAD_BLK] __attribute__((aligned(64)));
  double cb[DPO__GRAD_BLK] __attribute__((aligned(64))), pb[DPO__GRAD_BLK]
      __attribute__((aligned(64))), ypad[DPO__GRAD_BLK];
  dpo__pf_trial_t tr;
  dpo__pf_trial_start(&tr, cnt, d);
  int pf = dpo__pf_mode > 0;
  for (int64_t r0 = 0; r0 < cnt; r0 += DPO__GRAD_BLK) {
    int64_t nb = cnt - r0 < DPO__GRAD_BLK ? cnt - r0 : DPO__GRAD_BLK;
    const double *Xb = s->X + r0 * (int64_t)d;
    const double *yb = s->y + r0;
    if (tr.on && r0 % tr.seg_rows == 0) pf = dpo__pf_trial_step(&tr);
    /* t = X_blk x  (first touch: the block comes into cache) */
    if (pf) dpo__blk_dots_pf(nb, d, Xb, x, tbuf);
    else dpo__blk_dots(nb, d, Xb, x, tbuf);
    if (loss == DPO_LOSS_LOGISTIC) {
      const double *yl = yb, *live = dpo__live[DPO__GRAD_BLK];
      if (nb < DPO__GRAD_BLK) { /* short last block: zero-padded lanes, masked out of the sum */
        for (int64_t j = 0; j < DPO__GRAD_BLK; j++) {
          tbuf[j] = j < nb ? tbuf[j] : 0.0;
          ypad[j] = j < nb ? yb[j] : 0.0;
        }
        yl = ypad;
        live = dpo__live[nb];
      }
      dpo__blk_logistic(tbuf, yl, live, cb, pb);
      lsum += ((pb[0] + pb[1]) + (pb[2] + pb[3])) + ((pb[4] + pb[5]) + (pb[6] + pb[7]));
      for (int64_t j = 0; j < nb; j++) {
        double c = cb[j];
        if (clipping) {
          double nrm = rownorm ? rownorm[r0 + j] : dpo__row_norm(s, r0 + j, clip->norm);
          c *= dpo__clip_scale(C, c, nrm);
        }
        tbuf[j] = c;
      }
    } else {
      for (int64_t j = 0; j < nb; j++) {
        int64_t i = r0 + j;
        double c;
        lsum += dpo__loss_coef(loss, tbuf[j], s->y[i], &c);
        if (clipping) {
          double nrm = rownorm ? rownorm[i] : dpo__row_norm(s, i, clip->norm);
          c *= dpo__clip_scale(C, c, nrm);
        }
        tbuf[j] = c;
      }
    }
    /* g += X_blk' w  (second touch: the block is still in cache) */
    dpo__blk_axpys(nb, d, Xb, tbuf, g);
  }
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
