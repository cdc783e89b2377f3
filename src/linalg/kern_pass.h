/* Internal: the full-gradient passes of dpo_kern_loss_grad (kern_pass.c), one build per ISA,
 * picked at run time (dpo_kern_isa / dpo_kern_set_isa). */
#ifndef DPO_LINALG_KERN_PASS_H
#define DPO_LINALG_KERN_PASS_H

#include "dpopt/kernels.h"

/* Rows per block of the passes (and lanes of the vector logistic). */
#define DPO__GRAD_BLK 8
/* Rows per superblock of the CSR pass: a pass split at multiples of it gives the same bits. */
#define DPO__CSR_SB 32

/* One pass over rows [r0, r1) of a shard (dense: all rows, r0 a multiple of DPO__GRAD_BLK;
 * CSR: rows[r0..r1) if rows is set, else rows r0..r1-1).  Clip: C > 0 clips at C with the
 * row norms rownorm[] (precomputed or NULL: computed here with norm).  Accumulates the loss
 * into *lsum (in row order, one block at a time, so splitting a pass at block boundaries
 * gives the same bits) and the gradient into g.  pf_bytes: software prefetch distance of the
 * dense pass (0: none), issued on a row block's first touch (pf_touch 1) or its second (2).
 * xpad: scratch of DPO__GRAD_BLK * d doubles for a dense pass whose last block is short (NULL
 * otherwise). */
typedef struct {
  dpo_loss_t loss;
  const dpo_shard_t *s;
  const double *x;
  const int64_t *rows;
  double C;
  dpo_clipnorm_t norm;
  const double *rownorm;
  int64_t pf_bytes;
  int pf_touch;
  double *xpad;
} dpo__pass_t;

typedef void (*dpo__pass_fn)(const dpo__pass_t *a, int64_t r0, int64_t r1, double *lsum,
                             double *g);

/* Rows per block of the softmax pass (kern_softmax_body.h): a multiple of 8.  The block's
 * padded copy, W and the gradient accumulator stay in L1 at d = 100, K = 10. */
#define DPO__SM_BLK 16

/* The softmax pass over the n consecutive dense rows X (n x d) with class labels y (checked
 * by the caller): returns the loss sum, accumulates the gradient of W into Gp.  dp: d rounded
 * up to a multiple of 8, the row stride of Wp (W, K x dp, zero-padded), Gp (K x dp) and the
 * scratch Xp (DPO__SM_BLK x dp); T: K x DPO__SM_BLK scratch.  Clip as dpo__pass_t. */
typedef struct {
  int32_t K, d, dp;
  int64_t n;
  const int64_t *rows; /* NULL: rows 0..n-1 of X; else rows[0..n) (y and rownorm alike) */
  const double *X, *y, *Wp;
  double C;
  dpo_clipnorm_t norm;
  const double *rownorm;
  double *Gp, *Xp, *T;
} dpo__softmax_t;
typedef double (*dpo__softmax_fn)(const dpo__softmax_t *a);

/* The ISA builds in use: set once from the CPU, or by dpo_kern_set_isa. */
typedef struct {
  const char *name;
  dpo__pass_fn dense, dense_pf, csr, csr_pf; /* _pf: with the software prefetch */
  dpo__softmax_fn softmax; /* NULL: none (the baseline build; softmax.c uses dgemm) */
} dpo__pass_isa_t;
const dpo__pass_isa_t *dpo__pass_isa(void);

/* The softmax loss sum and gradient of the dense rows of s (all of them, or rows[0..nrows)
 * in that order when rows is set: a minibatch), in the ISA build in use, which must have a
 * softmax pass, through 64-byte aligned padded copies: *loss_sum += the loss, g (K x d) +=
 * the gradient.  clip: C > 0 clips each row's gradient r_i u_i' at C in norm (rownorm[],
 * indexed by shard row, or computed). */
int dpo__kern_softmax_dense(int32_t K, const dpo_shard_t *s, const double *W, const int64_t *rows,
                            int64_t nrows, double C, dpo_clipnorm_t norm, const double *rownorm,
                            double *loss_sum, double *g);

/* Norm of one row matching the clip norm (kern_pass.c). */
double dpo__kern_row_norm(const dpo_shard_t *s, int64_t i, dpo_clipnorm_t norm);

#endif
