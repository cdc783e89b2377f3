/* Objectives: F(x) = (1/n) sum_i f(x; u_i, z_i) with the L2 term folded into f as in the
 * papers: f(x; u, z) = log(1 + exp(-z u'x)) + lambda ||x||^2 (logistic regression, 001 Sec. 5)
 * or (u'x - z)^2 / 2 + lambda ||x||^2 (least squares / ridge).
 *
 * The model is an opaque object with an ops table (one file per objective in src/model/).
 * Local functions are not collective; they return sums over the local rows of the DATA term
 * only, and dpo_model_finish() turns global sums into F and grad F (divide by n, add the
 * regularizer) on whichever rank holds them.
 *
 * Public bounds come from declared data-domain bounds, never from the data (privacy rule 1).
 */
#ifndef DPOPT_MODEL_H
#define DPOPT_MODEL_H

#include "dpopt/data.h"
#include "dpopt/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpo_model dpo_model_t;

/* name: "logreg", "ridge" or "softmax"; "lsq" is ridge with lambda = 0 (a nonzero lambda is
 * DPO_EINVAL).  softmax needs dpo_model_set_classes before use.
 * lambda must be finite and >= 0.  The caller owns *m (dpo_model_destroy). */
int dpo_model_create(const char *name, double lambda, dpo_model_t **m);
void dpo_model_destroy(dpo_model_t *m);
const char *dpo_model_name(const dpo_model_t *m);
double dpo_model_lambda(const dpo_model_t *m);
dpo_loss_t dpo_model_loss(const dpo_model_t *m);
/* 1 if the model needs binary labels (logistic). */
int dpo_model_binary(const dpo_model_t *m);

/* ---- multiclass: softmax (multinomial logistic regression, src/model/softmax.c) ----
 * f(W; u, y) = log sum_k exp(w_k'u) - w_y'u + lambda ||W||_F^2 with labels y = class index
 * 0..K-1 (DPO_LABELS_CLASS).  The parameter vector is W in R^{K x d} row-major: x[k d + j] =
 * coefficient j of class k, d the shard's columns (with an intercept the last column, so each
 * class has its own bias x[k d + d - 1]).  dpo_model_dim gives its length p = K d (d for the
 * one-output models, -1 if softmax has no classes yet or K d overflows): every buffer that
 * holds a point or a gradient (oracle, solver, algorithms, checkpoints, model files) has p
 * entries.  Public bounds (derived in softmax.c): per-example ||grad||_2 <= sqrt(2) ||u||_2,
 * ||grad||_1 <= 2 ||u||_1, L = B2^2 / 2 + 2 lambda; per-example clipping clips the whole K d
 * gradient.  dpo_model_set_classes fails for K != 0 on one-output models (K = 0 is a no-op
 * there); dpo_model_classes is 0 for them.  dpo_model_labels is the label kind a loader must
 * produce for the model; dpo_model_metric its evaluation metric ("accuracy" or "mse"). */
int dpo_model_set_classes(dpo_model_t *m, int32_t K);
int32_t dpo_model_classes(const dpo_model_t *m);
int dpo_model_multiclass(const dpo_model_t *m);
int32_t dpo_model_dim(const dpo_model_t *m, int32_t d);
dpo_labels_t dpo_model_labels(const dpo_model_t *m);
const char *dpo_model_metric(const dpo_model_t *m);
/* Local (multiclass only): cls[i] = argmax_k of row i's scores (ties: the lowest class) and,
 * if prob is not NULL, prob[i] = its softmax probability. */
int dpo_model_local_classify(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                             int32_t *cls, double *prob);

/* ---- intercept (bias term) ----
 * With the intercept on, the model is fitted on augmented rows (u, DPO_MODEL_ICPT): the bias
 * is the LAST coordinate of x (dimension d + 1 for d features) and is regularized with the
 * same lambda as the weights, so mu = 2 lambda still holds for every algorithm that relies on
 * it (an unregularized bias would make mu = 0 and void every strongly convex rate and the
 * output-perturbation sensitivities); lambda b^2 shifts the bias by O(lambda).  Off by default
 * (the objectives of the papers reproduced in jobs/ have no bias).
 * dpo_model_prepare_shard appends the constant column to a loaded shard (nothing when the
 * intercept is off); every other function then sees d + 1 columns.
 * dpo_model_row_bound maps a declared bound on the features' norm (l1: L1, else L2) to the
 * bound on the augmented rows: B + c (L1), sqrt(B^2 + c^2) (L2); the identity without
 * intercept.  dpo_model_L_bound and dpo_model_grad_l1_sens take the FEATURE bound and apply it
 * themselves (derivation in src/model/model.c and doc/design.md). */
#define DPO_MODEL_ICPT 1.0
int dpo_model_set_intercept(dpo_model_t *m, int on);
int dpo_model_intercept(const dpo_model_t *m);
int dpo_model_prepare_shard(const dpo_model_t *m, dpo_shard_t *s);
double dpo_model_row_bound(const dpo_model_t *m, int l1, double B);

/* Local data-term sums (rows: local indices, NULL = all).  loss_sum and g (dpo_model_dim(m,
 * s->d) entries) are overwritten. */
int dpo_model_local_grad(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                         const int64_t *rows, int64_t nrows, const dpo_clip_t *clip,
                         const double *rownorm, double *loss_sum, double *g);

/* From global sums over n_used rows, in place: *F (holding loss_sum) becomes
 * loss_sum / n_used + lambda ||x||^2 and g becomes g / n_used + 2 lambda x.  F or g may be
 * NULL.  Not collective. */
void dpo_model_finish(const dpo_model_t *m, int32_t d, int64_t n_used, const double *x,
                      double *F, double *g);

/* Local data-term Hessian sum H += sum w_i u_i u_i' (d x d row-major). */
int dpo_model_local_hess(const dpo_model_t *m, const dpo_shard_t *s, const double *x, double *H);

/* Local evaluation sums (overwritten): loss and metric (#correct for logistic and softmax, SSE
 * for ridge). */
int dpo_model_local_eval(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                         double *loss_sum, double *metric_sum);

/* Public smoothness and strong-convexity bounds of F from the declared row bound
 * B2 >= max ||u_i||_2 (of the features; with an intercept B2^2 below reads B2^2 + 1):
 * logistic L = B2^2 / 4 + 2 lambda, ridge L = B2^2 + 2 lambda;
 * mu = 2 lambda for both.  A negative or non-finite B2 returns -1. */
double dpo_model_L_bound(const dpo_model_t *m, double row_l2_bound);
double dpo_model_mu(const dpo_model_t *m);

/* Public L1 sensitivity constant S1 of one example's data-term gradient under replace-one
 * neighbours, from the declared L1 row bound B1 >= max ||u_i||_1.  Logistic: the gradient
 * coefficient satisfies |c| <= 1, so ||grad f_i - grad f_i'||_1 <= 2 B1 = S1 (001, eq. 5.2);
 * the mean gradient's sensitivity is S1 / n.  Ridge: the coefficient u'x - z is unbounded
 * without declared bounds on targets and iterates, so it returns a negative value: callers
 * must clip per example (clip C in L1 gives S1 = 2 C).  A negative or non-finite B1 also
 * returns a negative value. */
double dpo_model_grad_l1_sens(const dpo_model_t *m, double row_l1_bound);
/* The per-example bound behind it: max ||grad f_i||_1 from B1 (logistic B1, softmax 2 B1, with
 * the intercept applied), the sensitivity under add-remove neighbours (dpo_sens).  A user
 * objective's op bounds replace-one differences only, so it (and ridge) returns -1. */
double dpo_model_grad_l1_bound(const dpo_model_t *m, double row_l1_bound);

/* Public bound on one example's data-term gradient norm in L2 from the declared FEATURE bound
 * B2 (the intercept applied as above), without clipping: logistic B2 (|coefficient| <= 1),
 * softmax sqrt(2) B2, a user objective with an L1 sensitivity B2; ridge, or a bad B2: -1. */
double dpo_model_grad_l2_bound(const dpo_model_t *m, double row_l2_bound);

/* ---- user objectives: a custom ops table ---- */

/* A margin objective f(x; u, z) = phi(u'x, z) + lambda ||x||^2 given by its per-row function.
 * Everything that goes through the model (the gradient oracle and with it every algorithm of
 * dpopt train, the evaluation, per-example clipping) uses it; the fused kernels and the
 * Hessian (Newton, exact ADMM x-updates) do not (DPO_EUNSUP). */
typedef struct {
  const char *name; /* reported by dpo_model_name (up to 15 characters are kept) */
  int binary;       /* 1: labels +1/-1, metric = accuracy of sign(u'x) (u'x = 0 predicts +1);
                     * 0: real targets, metric = squared error (u'x - z)^2 */
  /* phi(t, z) at the margin t = u'x with label or target z; *dphi = d phi / d t. */
  double (*phi)(double t, double z, double *dphi);
  /* Public smoothness bound of F from the declared row bound B2 (NULL: none, L_bound = -1). */
  double (*L_bound)(double lambda, double B2);
  /* Public L1 sensitivity of one example's data-term gradient from the row bound B1 (NULL:
   * none; private use then needs per-example clipping). */
  double (*grad_l1_sens)(double B1);
} dpo_model_ops_t;

/* Not collective: a model from a user ops table (borrowed: it must outlive *m); lambda as in
 * dpo_model_create.  dpo_model_loss reports DPO_LOSS_USER. */
int dpo_model_create_ops(const dpo_model_ops_t *ops, double lambda, dpo_model_t **m);

#ifdef __cplusplus
}
#endif
#endif
