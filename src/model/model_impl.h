/* Private: the ops table behind dpo_model_t.  A new objective is one file in src/model/
 * defining a const dpo__model_ops_t plus one line in the table in model.c. */
#ifndef DPO_MODEL_IMPL_H
#define DPO_MODEL_IMPL_H

#include "dpopt/model.h"

typedef struct {
  const char *name;
  dpo_loss_t loss;  /* per-row loss the fused kernels evaluate */
  int binary;       /* needs +1/-1 labels */
  /* Public smoothness bound of F from the declared row L2 bound B2 (>= 0). */
  double (*L_bound)(double lambda, double B2);
  /* Public L1 sensitivity of one example's data-term gradient from the row L1 bound B1,
   * or a negative value when none exists. */
  double (*grad_l1_sens)(double B1);
  /* Public bound on one example's data-term gradient in L2 from the row L2 bound B2, or a
   * negative value when none exists (NULL: none). */
  double (*grad_l2_bound)(double B2);
  int multiclass;   /* 1: softmax over model.classes classes (x is K x d, dpo_model_dim) */
} dpo__model_ops_t;

struct dpo_model {
  const dpo__model_ops_t *ops;
  const dpo_model_ops_t *user; /* a user objective (dpo_model_create_ops; ops is NULL) */
  char name[16];   /* name it was created with ("lsq" stays "lsq") */
  double lambda;
  int intercept;   /* 1: the last coordinate is a bias on a constant feature DPO_MODEL_ICPT */
  int32_t classes; /* multiclass models: K (0 until dpo_model_set_classes) */
};

extern const dpo__model_ops_t dpo__model_logreg;
extern const dpo__model_ops_t dpo__model_ridge;
extern const dpo__model_ops_t dpo__model_softmax;

/* Softmax (softmax.c), the contracts of dpo_kern_loss_grad and dpo_kern_eval for K classes:
 * W is K x d row-major (row k: class k's coefficients over the d columns of s), labels are
 * class indices 0..K-1 (dpo__softmax_labels checks them). */
int dpo__softmax_grad(int32_t K, const dpo_shard_t *s, const double *W, const int64_t *rows,
                      int64_t nrows, const dpo_clip_t *clip, const double *rownorm,
                      double *loss_sum, double *g);
int dpo__softmax_eval(int32_t K, const dpo_shard_t *s, const double *W, double *loss_sum,
                      double *metric_sum);
int dpo__softmax_classify(int32_t K, const dpo_shard_t *s, const double *W, int32_t *cls,
                          double *prob);
int dpo__softmax_labels(int32_t K, const dpo_shard_t *s);

/* User objectives row by row (user.c): the same contracts as dpo_kern_loss_grad (sums
 * accumulated, per-example clipping min(1, C / (|phi'| ||u||))) and dpo_kern_eval. */
int dpo__user_grad(const dpo_model_ops_t *u, const dpo_shard_t *s, const double *x,
                   const int64_t *rows, int64_t nrows, const dpo_clip_t *clip,
                   const double *rownorm, double *loss_sum, double *g);
int dpo__user_eval(const dpo_model_ops_t *u, const dpo_shard_t *s, const double *x,
                   double *loss_sum, double *metric_sum);

#endif
