/* Fused per-row kernels over a shard (OpenBLAS underneath).
 *
 * One pass over the rows: t_i = u_i'x, (phi_i, c_i) = loss(t_i, y_i), loss += phi_i,
 * g += s_i c_i u_i where s_i = min(1, C / (|c_i| ||u_i||)) when per-example clipping is on.
 * Dense rows are processed in cache-sized blocks so the data is read from memory once for
 * both matrix-vector products.  Not collective; results are local sums (not divided by n).
 */
#ifndef DPOPT_KERNELS_H
#define DPOPT_KERNELS_H

#include "dpopt/data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DPO_LOSS_USER: an objective given by its own per-row function (dpo_model_create_ops); the
 * fused kernels refuse it (DPO_EINVAL), the model layer runs it row by row. */
typedef enum {
  DPO_LOSS_LOGISTIC = 0,
  DPO_LOSS_SQUARED = 1,
  DPO_LOSS_USER = 2,
  DPO_LOSS_SOFTMAX = 3 /* multiclass (K x d parameters): the model layer runs it (softmax.c) */
} dpo_loss_t;
typedef enum { DPO_CLIP_NONE = 0, DPO_CLIP_L1 = 1, DPO_CLIP_L2 = 2 } dpo_clipnorm_t;

typedef struct {
  dpo_clipnorm_t norm;
  double C; /* clip threshold on the per-example gradient norm (public) */
} dpo_clip_t;

/* Local sums over `rows` (local indices; NULL = all rows, nrows ignored).
 * clip: NULL or norm DPO_CLIP_NONE = no clipping; otherwise C must be finite and > 0.
 * rownorm: per-row norm matching clip->norm (L1 or L2), indexed by local row (length s->n),
 * precomputed by the caller (dpo_shard_row_norms), or NULL (computed on the fly).
 * loss_sum and g are ACCUMULATED into (caller zeroes them).
 * Logistic: phi = log(1 + exp(-y t)) computed stably; squared: phi = (t - y)^2 / 2. */
int dpo_kern_loss_grad(dpo_loss_t loss, const dpo_shard_t *s, const double *x,
                       const int64_t *rows, int64_t nrows, const dpo_clip_t *clip,
                       const double *rownorm, double *loss_sum, double *g);

/* Local Hessian of the data term: H += sum_i w_i u_i u_i' (full d x d, row-major), with
 * w_i = sigma(t)(1 - sigma(t)) (logistic) or 1 (squared). */
int dpo_kern_hess(dpo_loss_t loss, const dpo_shard_t *s, const double *x, double *H);

/* Local Hessian-vector product of the data term: out += sum_i w_i u_i (u_i'v).
 * x may be NULL for the squared loss (w = 1). */
int dpo_kern_hessvec(dpo_loss_t loss, const dpo_shard_t *s, const double *x, const double *v,
                     double *out);

/* Local evaluation: loss sum, and #correct sign predictions (logistic; t = 0 predicts +1) or
 * squared error sum (t - y)^2 (squared).  Both are ACCUMULATED into. */
int dpo_kern_eval(dpo_loss_t loss, const dpo_shard_t *s, const double *x, double *loss_sum,
                  double *metric_sum);

/* Which build of the gradient passes runs: "AVX-512", "AVX2" or "generic".  Chosen once per
 * process: the environment variable DPOPT_KERNELS (avx512, avx2, generic) if the CPU runs it,
 * else the best the CPU runs (avx512f+dq before avx2+fma before the baseline). */
const char *dpo_kern_isa(void);
/* Force a build (names as above, case-insensitive; NULL: back to the default).  DPO_EINVAL if
 * unknown or this CPU cannot run it.  The builds differ in rounding only (tests, benchmarks). */
int dpo_kern_set_isa(const char *name);
/* Software prefetch of the dense gradient pass: -1 not decided yet, 0 none (the hardware
 * prefetcher alone), k > 0 the k-th candidate: dpo_kern_prefetch_bytes() ahead on the row
 * block's first touch (dpo_kern_prefetch_touch() 1) or its second (2; 0 with none).  Decided
 * by timing the candidates in turn: on ~1 MB segments of the process's first pass over
 * >= 64 MB, or on its first full passes of >= 32 KB each (the oracle's 256-row views), 6
 * rounds (the choice changes speed only, never a result). */
int dpo_kern_prefetch_mode(void);
int64_t dpo_kern_prefetch_bytes(void);
int dpo_kern_prefetch_touch(void);
/* The same for the CSR gradient pass (full passes; a row list never prefetches): -1, 0 none,
 * k > 0 values dpo_kern_csr_prefetch_bytes() ahead, their column indices as many entries. */
int dpo_kern_csr_prefetch_mode(void);
int64_t dpo_kern_csr_prefetch_bytes(void);

#ifdef __cplusplus
}
#endif
#endif
