/* Fused per-row loss/gradient/Hessian kernels over a shard (see include/dpopt/kernels.h).
 *
 * Dense shards are processed in row blocks small enough to stay in cache: t = X_blk x,
 * per-row coefficients, then g += X_blk' w while the block is still in cache, so the matrix
 * streams from memory once per pass.  The full-gradient pass uses the fused vector loops
 * below (faster than dgemv pairs on short blocks, see jobs/bench/gradient); Hessian,
 * Hessian-vector and evaluation passes use OpenBLAS dgemv/dsyrk.  CSR shards use plain
 * fused loops.  Nothing here is collective and nothing allocates more than one block.
 */
#include "dpopt/kernels.h"
#include "dpopt/status.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
 * time (target_clones), so one binary runs everywhere.  Loads go through memcpy: rows are
 * only 8-byte aligned. */
#ifndef DPO__GRAD_BLK_BYTES /* tuning knob: -DDPO__GRAD_BLK_BYTES=... */
#define DPO__GRAD_BLK_BYTES (4 * 1024)
#endif
#define DPO__GRAD_BLK_MAX 64

typedef double dpo__v4 __attribute__((vector_size(32)));
#define DPO__LD(p) ({ dpo__v4 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define DPO__ST(p, v) do { dpo__v4 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define DPO__MULTIARCH __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef DPO__MULTIARCH
#define DPO__MULTIARCH
#endif

/* t_i = u_i'x for the nb rows of a block (four independent accumulators per row). */
DPO__MULTIARCH
static void dpo__blk_dots(int64_t nb, int32_t d, const double *Xb, const double *x, double *t) {
  for (int64_t i = 0; i < nb; i++) {
    const double *u = Xb + i * (int64_t)d;
    dpo__v4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    int32_t j = 0;
    for (; j + 16 <= d; j += 16) {
      a0 += DPO__LD(u + j) * DPO__LD(x + j);
      a1 += DPO__LD(u + j + 4) * DPO__LD(x + j + 4);
      a2 += DPO__LD(u + j + 8) * DPO__LD(x + j + 8);
      a3 += DPO__LD(u + j + 12) * DPO__LD(x + j + 12);
    }
    for (; j + 4 <= d; j += 4) a0 += DPO__LD(u + j) * DPO__LD(x + j);
    dpo__v4 a = (a0 + a1) + (a2 + a3);
    double sum = (a[0] + a[1]) + (a[2] + a[3]);
    for (; j < d; j++) sum += u[j] * x[j];
    t[i] = sum;
  }
}

/* g += sum_i w_i u_i over a block, one 16-column tile at a time so the tile of g stays in
 * registers across the block's rows (g is loaded and stored once per block). */
DPO__MULTIARCH
static void dpo__blk_axpys(int64_t nb, int32_t d, const double *Xb, const double *w, double *g) {
  int32_t j = 0;
  for (; j + 16 <= d; j += 16) {
    dpo__v4 g0 = DPO__LD(g + j), g1 = DPO__LD(g + j + 4), g2 = DPO__LD(g + j + 8),
            g3 = DPO__LD(g + j + 12);
    for (int64_t i = 0; i < nb; i++) {
      const double *u = Xb + i * (int64_t)d + j;
      dpo__v4 c = {w[i], w[i], w[i], w[i]};
      g0 += c * DPO__LD(u);
      g1 += c * DPO__LD(u + 4);
      g2 += c * DPO__LD(u + 8);
      g3 += c * DPO__LD(u + 12);
    }
    DPO__ST(g + j, g0);
    DPO__ST(g + j + 4, g1);
    DPO__ST(g + j + 8, g2);
    DPO__ST(g + j + 12, g3);
  }
  for (; j + 4 <= d; j += 4) {
    dpo__v4 g0 = DPO__LD(g + j);
    for (int64_t i = 0; i < nb; i++) {
      dpo__v4 c = {w[i], w[i], w[i], w[i]};
      g0 += c * DPO__LD(Xb + i * (int64_t)d + j);
    }
    DPO__ST(g + j, g0);
  }
  for (; j < d; j++) {
    double sum = g[j];
    for (int64_t i = 0; i < nb; i++) sum += w[i] * Xb[i * (int64_t)d + j];
    g[j] = sum;
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
    for (int64_t k = 0; k < cnt; k++) {
      int64_t i = rows ? rows[k] : k;
      int64_t a = s->rowptr[i], b = s->rowptr[i + 1];
      double t = 0.0;
      for (int64_t p = a; p < b; p++) t += s->val[p] * x[s->colind[p]];
      double c;
      lsum += dpo__loss_coef(loss, t, s->y[i], &c);
      if (clipping) {
        double nrm = rownorm ? rownorm[i] : dpo__row_norm(s, i, clip->norm);
        c *= dpo__clip_scale(C, c, nrm);
      }
      if (c != 0.0)
        for (int64_t p = a; p < b; p++) g[s->colind[p]] += c * s->val[p];
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

  /* Small blocks (~4 KB, in L1): measured on jobs/bench/gradient, OpenBLAS dgemv pairs on
   * 48 KB blocks reached 0.41-0.58 of the read bandwidth, these fused loops ~0.75. */
  int64_t B = DPO__GRAD_BLK_BYTES / ((int64_t)d * (int64_t)sizeof(double));
  if (B < 4) B = 4;
  if (B > DPO__GRAD_BLK_MAX) B = DPO__GRAD_BLK_MAX;
  double tbuf[DPO__GRAD_BLK_MAX];
  for (int64_t r0 = 0; r0 < cnt; r0 += B) {
    int64_t nb = cnt - r0 < B ? cnt - r0 : B;
    const double *Xb = s->X + r0 * (int64_t)d;
    /* t = X_blk x  (first touch: the block comes into cache) */
    dpo__blk_dots(nb, d, Xb, x, tbuf);
    if (loss == DPO_LOSS_LOGISTIC && !clipping) {
      /* sum_i log1p(e_i) = log1p(q) with 1 + q = prod_i (1 + e_i): one log per block.
       * q accumulates positive terms only (no cancellation; q <= 2^B - 1). */
      double q = 0.0;
      for (int64_t j = 0; j < nb; j++) {
        double y = s->y[r0 + j], m = y * tbuf[j], e = exp(-fabs(m));
        tbuf[j] = -y * (m >= 0 ? e / (1.0 + e) : 1.0 / (1.0 + e));
        q += e + q * e;
        lsum += m < 0 ? -m : 0.0;
      }
      lsum += log1p(q);
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
