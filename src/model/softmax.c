/* Multinomial logistic regression (softmax, K classes):
 *   f(W; u, y) = log sum_k exp(w_k'u) - w_y'u + lambda ||W||_F^2,  y in {0, ..., K-1},
 * W in R^{K x d} stored row-major in the solver's vector x (x[k d + j] = W[k][j]; p = K d,
 * dpo_model_dim).  With an intercept the rows u carry the constant column c last
 * (dpo_model_prepare_shard), so column d - 1 of W holds the K class biases, regularized with
 * the same lambda (model.c says why).
 *
 * Per-example gradient: with scores t = W u and probabilities p = softmax(t),
 *   grad_W f = r u',  r = p - e_y,  so ||grad||_F = ||r||_2 ||u||_2, ||grad||_1 = ||r||_1 ||u||_1.
 * Public bounds (privacy rule 1: from the declared row bounds B1 >= ||u||_1, B2 >= ||u||_2):
 *   ||r||_1 = (1 - p_y) + sum_{k != y} p_k = 2 (1 - p_y) <= 2,
 *   ||r||_2^2 = (1 - p_y)^2 + sum_{k != y} p_k^2 <= (1 - p_y)^2 + (sum_{k != y} p_k)^2
 *             = 2 (1 - p_y)^2 <= 2,
 * so ||grad f_i||_2 <= sqrt(2) B2 and ||grad f_i||_1 <= 2 B1; both are approached (p_y -> 0
 * with the mass on one other class), so they are the tight constants.  Replace-one L1
 * sensitivity (the analogue of 001 (5.2)): ||grad f_i - grad f_i'||_1 <= 4 B1.
 * Smoothness: the data-term Hessian of one row is (diag(p) - p p') (x) u u' (Kronecker, in the
 * row-major layout of W); its largest eigenvalue is lambda_max(diag(p) - p p') ||u||_2^2, and
 *   lambda_max(diag(p) - p p') <= 1/2
 * (Gershgorin: row k's diagonal p_k (1 - p_k) plus off-diagonal sum p_k (1 - p_k) is
 * 2 p_k (1 - p_k) <= 1/2; also implied by Boehning's bound diag(p) - p p' <= (I - 1 1'/K) / 2,
 * Boehning 1992, Ann. Inst. Statist. Math. 44(1), 197-200).  It is attained at p = (1/2, 1/2,
 * 0, ...) with v = (1, -1, 0, ...) / sqrt(2).  Hence L = B2^2 / 2 + 2 lambda (the logistic
 * B2^2 / 4 doubles because W carries both w_0 and w_1: with K = 2, w = w_1 - w_0 recovers
 * logistic regression, and the map W -> w has norm sqrt(2)).  mu = 2 lambda as for every model.
 * Per-example clipping acts on the whole K x d gradient: s_i = min(1, C / (||r||_q ||u||_q))
 * in the clip norm q (Frobenius for l2, entrywise for l1), so ||s_i r u'||_q <= C. */
#include "model/model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "dpopt/status.h"
#include "linalg/kern_pass.h"

static double softmax_L_bound(double lambda, double B2) { return 0.5 * B2 * B2 + 2.0 * lambda; }
static double softmax_l1_sens(double B1) { return 4.0 * B1; }
static double softmax_grad_l2(double B2) { return sqrt(2.0) * B2; }

const dpo__model_ops_t dpo__model_softmax = {
    .name = "softmax",
    .loss = DPO_LOSS_SOFTMAX,
    .binary = 0,
    .L_bound = softmax_L_bound,
    .grad_l1_sens = softmax_l1_sens,
    .grad_l2_bound = softmax_grad_l2,
    .multiclass = 1,
};

/* t = W u_i (K scores) */
static void dpo__scores(int32_t K, const dpo_shard_t *s, int64_t i, const double *W, double *t) {
  const int32_t d = s->d;
  if (s->sparse) {
    for (int32_t k = 0; k < K; k++) {
      double v = 0.0;
      for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
        v += s->val[p] * W[(int64_t)k * d + s->colind[p]];
      t[k] = v;
    }
  } else {
    cblas_dgemv(CblasRowMajor, CblasNoTrans, K, d, 1.0, W, d, s->X + i * (int64_t)d, 1, 0.0, t,
                1);
  }
}

/* The label of row i as a class index, or -1 if it is not one of 0..K-1. */
static int32_t dpo__label(int32_t K, const dpo_shard_t *s, int64_t i) {
  double v = s->y[i];
  return v >= 0 && v < K && v == floor(v) ? (int32_t)v : -1;
}

/* From scores t: the loss log sum exp(t) - t_y, t overwritten with r = p - e_y (y = -1: p). */
static double dpo__resid(int32_t K, double *t, int32_t y) {
  double m = t[0], Z = 0.0;
  for (int32_t k = 1; k < K; k++)
    if (t[k] > m) m = t[k];
  double ty = y >= 0 ? t[y] : m;
  for (int32_t k = 0; k < K; k++) Z += (t[k] = exp(t[k] - m));
  for (int32_t k = 0; k < K; k++) t[k] /= Z;
  if (y >= 0) t[y] -= 1.0;
  return log(Z) + (m - ty);
}

/* Clip factor of one row: the gradient r u' has norm ||r|| ||u|| in the clip norm. */
static double dpo__clip_factor(int32_t K, const double *r, const dpo_clip_t *clip, double un) {
  double rn = 0.0;
  for (int32_t k = 0; k < K; k++) rn += clip->norm == DPO_CLIP_L1 ? fabs(r[k]) : r[k] * r[k];
  double gn = (clip->norm == DPO_CLIP_L1 ? rn : sqrt(rn)) * un;
  return gn > clip->C ? clip->C / gn : 1.0;
}

static double dpo__unorm(const dpo_shard_t *s, int64_t i, dpo_clipnorm_t norm) {
  int64_t k0 = s->sparse ? s->rowptr[i] : i * s->d, k1 = s->sparse ? s->rowptr[i + 1] : k0 + s->d;
  const double *v = s->sparse ? s->val : s->X;
  double a = 0.0;
  for (int64_t k = k0; k < k1; k++) a += norm == DPO_CLIP_L1 ? fabs(v[k]) : v[k] * v[k];
  return norm == DPO_CLIP_L1 ? a : sqrt(a);
}

static int dpo__bad_label(const dpo_shard_t *s, int32_t K) {
  return dpo_err(DPO_EFORMAT, "%s: a label is not a class index 0..%d (model softmax with "
                 "model.classes = %d)", s->source[0] ? s->source : "shard", (int)K - 1, (int)K);
}

/* The baseline build's pass over consecutive dense rows: T = X W' and G += R' X as two
 * GEMMs (OpenBLAS packs X for the second; the ISA builds' blocked pass is 1.6x faster). */
static int dpo__softmax_gemm(int32_t K, const dpo_shard_t *s, const double *W,
                             const dpo_clip_t *clip, const double *rownorm, double *loss_sum,
                             double *g) {
  const int64_t n = s->n;
  const int32_t d = s->d;
  double *T = malloc((size_t)n * (size_t)K * sizeof *T);
  if (!T) return dpo_err(DPO_ENOMEM, "model softmax: out of memory");
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, K, d, 1.0, s->X, d, W, d, 0.0, T,
              K);
  for (int64_t i = 0; i < n; i++) {
    double *r = T + i * K;
    *loss_sum += dpo__resid(K, r, dpo__label(K, s, i));
    if (clip) {
      double a = dpo__clip_factor(K, r, clip, rownorm ? rownorm[i] : dpo__unorm(s, i, clip->norm));
      if (a != 1.0)
        for (int32_t k = 0; k < K; k++) r[k] *= a;
    }
  }
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, d, (int)n, 1.0, T, K, s->X, d, 1.0, g,
              d);
  free(T);
  return DPO_OK;
}

int dpo__softmax_grad(int32_t K, const dpo_shard_t *s, const double *W, const int64_t *rows,
                      int64_t nrows, const dpo_clip_t *clip, const double *rownorm,
                      double *loss_sum, double *g) {
  int clipping = clip && clip->norm != DPO_CLIP_NONE;
  if (clipping && !(clip->C > 0 && isfinite(clip->C)))
    return dpo_err(DPO_EINVAL, "model softmax: clip threshold %g must be finite and > 0", clip->C);
  const int64_t n = rows ? nrows : s->n;
  const int32_t d = s->d;
  if (n <= 0) return DPO_OK;
  const int blocked = !s->sparse && dpo__pass_isa()->softmax;
  if (blocked || (!rows && !s->sparse)) {
    for (int64_t k = 0; k < n; k++)
      if (dpo__label(K, s, rows ? rows[k] : k) < 0) return dpo__bad_label(s, K);
    /* dense rows, all or a row list (a minibatch, gathered block by block; one dgemv and one
     * dger a row took 2/3 of a Fashion-MNIST DP-SGD run): blocked T = X W', R = s .* (P - Y),
     * G += R' X in the AVX2 or AVX-512 build (src/linalg/kern_softmax_body.h), else for all
     * rows two dgemms */
    if (blocked)
      return dpo__kern_softmax_dense(K, s, W, rows, n, clipping ? clip->C : 0.0,
                                     clipping ? clip->norm : DPO_CLIP_NONE, rownorm, loss_sum, g);
    return dpo__softmax_gemm(K, s, W, clipping ? clip : NULL, rownorm, loss_sum, g);
  }
  double *r = malloc((size_t)K * sizeof *r);
  if (!r) return dpo_err(DPO_ENOMEM, "model softmax: out of memory");
  for (int64_t k = 0; k < n; k++) {
    int64_t i = rows ? rows[k] : k;
    int32_t y = dpo__label(K, s, i);
    if (y < 0) {
      free(r);
      return dpo__bad_label(s, K);
    }
    dpo__scores(K, s, i, W, r);
    *loss_sum += dpo__resid(K, r, y);
    double a = clipping ? dpo__clip_factor(K, r, clip, rownorm ? rownorm[i]
                                                               : dpo__unorm(s, i, clip->norm))
                        : 1.0;
    if (s->sparse) {
      for (int32_t c = 0; c < K; c++) {
        double rc = a * r[c];
        double *gc = g + (int64_t)c * d;
        for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) gc[s->colind[p]] += rc * s->val[p];
      }
    } else {
      cblas_dger(CblasRowMajor, K, d, a, r, 1, s->X + i * (int64_t)d, 1, g, d);
    }
  }
  free(r);
  return DPO_OK;
}

int dpo__softmax_eval(int32_t K, const dpo_shard_t *s, const double *W, double *loss_sum,
                      double *metric_sum) {
  double *t = malloc((size_t)K * sizeof *t);
  if (!t) return dpo_err(DPO_ENOMEM, "model softmax: out of memory");
  for (int64_t i = 0; i < s->n; i++) {
    int32_t y = dpo__label(K, s, i), best = 0;
    if (y < 0) {
      free(t);
      return dpo__bad_label(s, K);
    }
    dpo__scores(K, s, i, W, t);
    for (int32_t k = 1; k < K; k++)
      if (t[k] > t[best]) best = k; /* ties: the lowest class */
    *metric_sum += best == y;
    *loss_sum += dpo__resid(K, t, y);
  }
  free(t);
  return DPO_OK;
}

int dpo__softmax_classify(int32_t K, const dpo_shard_t *s, const double *W, int32_t *cls,
                          double *prob) {
  double *t = malloc((size_t)K * sizeof *t);
  if (!t) return dpo_err(DPO_ENOMEM, "model softmax: out of memory");
  for (int64_t i = 0; i < s->n; i++) {
    int32_t best = 0;
    dpo__scores(K, s, i, W, t);
    for (int32_t k = 1; k < K; k++)
      if (t[k] > t[best]) best = k;
    dpo__resid(K, t, -1); /* t = p */
    cls[i] = best;
    if (prob) prob[i] = t[best];
  }
  free(t);
  return DPO_OK;
}

int dpo__softmax_labels(int32_t K, const dpo_shard_t *s) {
  for (int64_t i = 0; i < s->n; i++)
    if (dpo__label(K, s, i) < 0) return dpo__bad_label(s, K);
  return DPO_OK;
}
