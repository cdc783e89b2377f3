/* User objectives (dpo_model_create_ops): the data term row by row through the user's phi,
 * with the contracts of the fused kernels (dpo_kern_loss_grad, dpo_kern_eval in
 * dpopt/kernels.h) so the oracle, clipping and evaluation treat them alike.  Slower than the
 * fused kernels (no blocking): for objectives the library does not ship. */
#include "model/model_impl.h"

#include <math.h>

#include "dpopt/status.h"

/* t = u_i'x */
static double dpo__row_dot(const dpo_shard_t *s, int64_t i, const double *x) {
  double t = 0.0;
  if (s->sparse)
    for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) t += s->val[p] * x[s->colind[p]];
  else
    for (int32_t j = 0; j < s->d; j++) t += s->X[i * s->d + j] * x[j];
  return t;
}

/* g += a u_i */
static void dpo__row_axpy(const dpo_shard_t *s, int64_t i, double a, double *g) {
  if (s->sparse)
    for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) g[s->colind[p]] += a * s->val[p];
  else
    for (int32_t j = 0; j < s->d; j++) g[j] += a * s->X[i * s->d + j];
}

/* ||u_i|| in the clip norm */
static double dpo__row_norm(const dpo_shard_t *s, int64_t i, dpo_clipnorm_t norm) {
  double a = 0.0;
  int64_t k0 = s->sparse ? s->rowptr[i] : i * s->d, k1 = s->sparse ? s->rowptr[i + 1] : k0 + s->d;
  const double *v = s->sparse ? s->val : s->X;
  for (int64_t k = k0; k < k1; k++) a += norm == DPO_CLIP_L1 ? fabs(v[k]) : v[k] * v[k];
  return norm == DPO_CLIP_L1 ? a : sqrt(a);
}

int dpo__user_grad(const dpo_model_ops_t *u, const dpo_shard_t *s, const double *x,
                   const int64_t *rows, int64_t nrows, const dpo_clip_t *clip,
                   const double *rownorm, double *loss_sum, double *g) {
  int clipping = clip && clip->norm != DPO_CLIP_NONE;
  if (clipping && !(clip->C > 0 && isfinite(clip->C)))
    return dpo_err(DPO_EINVAL, "model %s: clip threshold %g must be finite and > 0", u->name, clip->C);
  int64_t n = rows ? nrows : s->n;
  for (int64_t k = 0; k < n; k++) {
    int64_t i = rows ? rows[k] : k;
    double c = 0.0, phi = u->phi(dpo__row_dot(s, i, x), s->y[i], &c), a = 1.0;
    if (!isfinite(phi) || !isfinite(c))
      return dpo_err(DPO_EFORMAT, "model %s: non-finite loss or derivative at row %ld", u->name,
                     (long)(s->row0 + i));
    if (clipping) { /* s_i = min(1, C / (|c_i| ||u_i||)), as the kernels clip */
      double gn = fabs(c) * (rownorm ? rownorm[i] : dpo__row_norm(s, i, clip->norm));
      if (gn > clip->C) a = clip->C / gn;
    }
    *loss_sum += phi;
    dpo__row_axpy(s, i, a * c, g);
  }
  return DPO_OK;
}

int dpo__user_eval(const dpo_model_ops_t *u, const dpo_shard_t *s, const double *x,
                   double *loss_sum, double *metric_sum) {
  for (int64_t i = 0; i < s->n; i++) {
    double t = dpo__row_dot(s, i, x), c;
    *loss_sum += u->phi(t, s->y[i], &c);
    if (u->binary) *metric_sum += (t >= 0 ? 1.0 : -1.0) == s->y[i];
    else *metric_sum += (t - s->y[i]) * (t - s->y[i]);
  }
  return DPO_OK;
}
