/* Objective objects: create by name, dispatch through the ops table (model_impl.h), and the
 * parts common to every objective (lambda ||x||^2 regularizer, division by n). */
#include "model/model_impl.h"

#include "dpopt/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  const dpo__model_ops_t *ops;
  int force_zero_lambda;
} dpo__models[] = {
    {"logreg", &dpo__model_logreg, 0},
    {"ridge", &dpo__model_ridge, 0},
    {"lsq", &dpo__model_ridge, 1},
    {"softmax", &dpo__model_softmax, 0},
};

int dpo_model_create(const char *name, double lambda, dpo_model_t **m) {
  if (!m) return dpo_err(DPO_EINVAL, "dpo_model_create: NULL output pointer");
  *m = NULL;
  if (!name) return dpo_err(DPO_EINVAL, "dpo_model_create: NULL model name");
  if (!(lambda >= 0) || !isfinite(lambda))
    return dpo_err(DPO_EINVAL, "model %s: lambda = %g must be finite and >= 0", name, lambda);
  for (size_t k = 0; k < sizeof dpo__models / sizeof dpo__models[0]; k++) {
    if (strcmp(name, dpo__models[k].name) != 0) continue;
    if (dpo__models[k].force_zero_lambda && lambda != 0)
      return dpo_err(DPO_EINVAL,
                     "model lsq is unregularized (lambda = 0), got lambda = %g: use ridge",
                     lambda);
    dpo_model_t *p = calloc(1, sizeof *p);
    if (!p) return dpo_err(DPO_ENOMEM, "dpo_model_create: out of memory");
    p->ops = dpo__models[k].ops;
    snprintf(p->name, sizeof p->name, "%s", dpo__models[k].name);
    p->lambda = lambda;
    *m = p;
    return DPO_OK;
  }
  return dpo_err(DPO_EINVAL, "unknown model \"%s\" (known: logreg, ridge, lsq, softmax)", name);
}

int dpo_model_create_ops(const dpo_model_ops_t *ops, double lambda, dpo_model_t **m) {
  if (!m) return dpo_err(DPO_EINVAL, "dpo_model_create_ops: NULL output pointer");
  *m = NULL;
  if (!ops || !ops->name || !ops->phi)
    return dpo_err(DPO_EINVAL, "dpo_model_create_ops: an ops table with a name and phi is needed");
  if (!(lambda >= 0) || !isfinite(lambda))
    return dpo_err(DPO_EINVAL, "model %s: lambda = %g must be finite and >= 0", ops->name, lambda);
  dpo_model_t *p = calloc(1, sizeof *p);
  if (!p) return dpo_err(DPO_ENOMEM, "dpo_model_create_ops: out of memory");
  p->user = ops;
  snprintf(p->name, sizeof p->name, "%s", ops->name);
  p->lambda = lambda;
  *m = p;
  return DPO_OK;
}

void dpo_model_destroy(dpo_model_t *m) { free(m); }

const char *dpo_model_name(const dpo_model_t *m) { return m->name; }
double dpo_model_lambda(const dpo_model_t *m) { return m->lambda; }
dpo_loss_t dpo_model_loss(const dpo_model_t *m) { return m->user ? DPO_LOSS_USER : m->ops->loss; }
int dpo_model_binary(const dpo_model_t *m) { return m->user ? m->user->binary != 0 : m->ops->binary; }

static int dpo__multi(const dpo_model_t *m) { return !m->user && m->ops->multiclass; }

int dpo_model_multiclass(const dpo_model_t *m) { return m && dpo__multi(m); }

int dpo_model_set_classes(dpo_model_t *m, int32_t K) {
  if (!m) return dpo_err(DPO_EINVAL, "dpo_model_set_classes: NULL model");
  if (!dpo__multi(m)) {
    if (K == 0) return DPO_OK;
    return dpo_err(DPO_EINVAL, "model %s has one output: model.classes = %d applies to model "
                   "softmax only", m->name, (int)K);
  }
  if (K < 2 || K > 65536)
    return dpo_err(DPO_EINVAL, "model softmax: model.classes = %d: expected 2..65536 (the number "
                   "of classes is public; labels are 0..K-1)", (int)K);
  m->classes = K;
  return DPO_OK;
}

int32_t dpo_model_classes(const dpo_model_t *m) { return m && dpo__multi(m) ? m->classes : 0; }

int32_t dpo_model_dim(const dpo_model_t *m, int32_t d) {
  if (!m || !dpo__multi(m)) return d;
  if (m->classes < 2 || d < 0 || (int64_t)m->classes * d > INT32_MAX) return -1;
  return m->classes * d;
}

dpo_labels_t dpo_model_labels(const dpo_model_t *m) {
  return dpo__multi(m) ? DPO_LABELS_CLASS : dpo_model_binary(m) ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
}

const char *dpo_model_metric(const dpo_model_t *m) {
  return dpo_model_binary(m) || dpo__multi(m) ? "accuracy" : "mse";
}

static int dpo__need_classes(const dpo_model_t *m) {
  if (m->classes >= 2) return DPO_OK;
  return dpo_err(DPO_EINVAL, "model softmax: the number of classes is not set (model.classes = K, "
                 "--classes K)");
}

int dpo_model_local_classify(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                             int32_t *cls, double *prob) {
  if (!m || !s || !x || (!cls && s->n > 0))
    return dpo_err(DPO_EINVAL, "dpo_model_local_classify: NULL argument");
  if (!dpo__multi(m))
    return dpo_err(DPO_EINVAL, "dpo_model_local_classify: model %s is not multiclass", m->name);
  int rc = dpo__need_classes(m);
  return rc ? rc : dpo__softmax_classify(m->classes, s, x, cls, prob);
}

int dpo_model_local_grad(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                         const int64_t *rows, int64_t nrows, const dpo_clip_t *clip,
                         const double *rownorm, double *loss_sum, double *g) {
  if (!m || !s || !loss_sum || !g)
    return dpo_err(DPO_EINVAL, "dpo_model_local_grad: NULL argument");
  *loss_sum = 0.0;
  if (dpo__multi(m)) {
    int rc = dpo__need_classes(m);
    if (rc) return rc;
    if (s->d > 0) memset(g, 0, (size_t)s->d * (size_t)m->classes * sizeof *g);
    return dpo__softmax_grad(m->classes, s, x, rows, nrows, clip, rownorm, loss_sum, g);
  }
  if (s->d > 0) memset(g, 0, (size_t)s->d * sizeof *g);
  if (m->user) return dpo__user_grad(m->user, s, x, rows, nrows, clip, rownorm, loss_sum, g);
  return dpo_kern_loss_grad(m->ops->loss, s, x, rows, nrows, clip, rownorm, loss_sum, g);
}

void dpo_model_finish(const dpo_model_t *m, int32_t d, int64_t n_used, const double *x,
                      double *F, double *g) {
  /* n_used == 0 leaves the (zero) data sums undivided: only the regularizer remains. */
  double inv = n_used > 0 ? 1.0 / (double)n_used : 1.0;
  double lam = m->lambda, xx = 0.0;
  for (int32_t j = 0; j < d; j++) {
    xx += x[j] * x[j];
    if (g) g[j] = g[j] * inv + 2.0 * lam * x[j];
  }
  if (F) *F = *F * inv + lam * xx;
}

int dpo_model_local_hess(const dpo_model_t *m, const dpo_shard_t *s, const double *x, double *H) {
  if (!m) return dpo_err(DPO_EINVAL, "dpo_model_local_hess: NULL model");
  if (m->user) return dpo_err(DPO_EUNSUP, "model %s: a user objective has no Hessian", m->name);
  if (dpo__multi(m)) return dpo_err(DPO_EUNSUP, "model %s: no Hessian (Newton is for logreg, ridge, lsq)", m->name);
  return dpo_kern_hess(m->ops->loss, s, x, H);
}

int dpo_model_local_eval(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                         double *loss_sum, double *metric_sum) {
  if (!m || !loss_sum || !metric_sum)
    return dpo_err(DPO_EINVAL, "dpo_model_local_eval: NULL argument");
  *loss_sum = 0.0;
  *metric_sum = 0.0;
  if (m->user) return dpo__user_eval(m->user, s, x, loss_sum, metric_sum);
  if (dpo__multi(m)) {
    int rc = dpo__need_classes(m);
    return rc ? rc : dpo__softmax_eval(m->classes, s, x, loss_sum, metric_sum);
  }
  return dpo_kern_eval(m->ops->loss, s, x, loss_sum, metric_sum);
}

/* Intercept (bias) b, derivation of its bounds.  The model is fitted on augmented rows
 * u~ = (u, c) with the public constant c = DPO_MODEL_ICPT = 1 appended as the last feature, so
 * the prediction is t = u'w + c b and every per-row formula (loss, gradient, clipping,
 * Hessian) applies to u~ unchanged.  The regularizer is lambda ||(w, b)||^2, i.e. the bias is
 * regularized with the same lambda as the weights (see dpo_model_set_intercept for why).
 * The declared bounds B1 >= ||u||_1 and B2 >= ||u||_2 are about the user's features; the
 * augmented rows satisfy
 *   ||u~||_1 = ||u||_1 + |c| <= B1 + c,   ||u~||_2 = sqrt(||u||_2^2 + c^2) <= sqrt(B2^2 + c^2),
 * and every public constant is the no-intercept formula at the augmented bound:
 *   smoothness  L = (B2^2 + c^2)/4 + 2 lambda (logistic), B2^2 + c^2 + 2 lambda (squared)
 *               (largest eigenvalue of (1/n) sum w_i u~_i u~_i', w_i <= 1/4 resp. 1);
 *   strong convexity mu = 2 lambda (unchanged: the regularizer covers b too);
 *   per-example gradient norm without clipping (logistic, |coefficient| <= 1):
 *               ||g_i||_2 <= sqrt(B2^2 + c^2), ||g_i||_1 <= B1 + c, so the L1 sensitivity of
 *               (001, 5.2) becomes 2 (B1 + c) and the L2 one 2 sqrt(B2^2 + c^2);
 *   with clipping at C the clipped per-example gradient of u~ has norm <= C: nothing changes. */
double dpo_model_row_bound(const dpo_model_t *m, int l1, double B) {
  if (!m || !m->intercept || !(B >= 0) || !isfinite(B)) return B;
  return l1 ? B + DPO_MODEL_ICPT : sqrt(B * B + DPO_MODEL_ICPT * DPO_MODEL_ICPT);
}

int dpo_model_set_intercept(dpo_model_t *m, int on) {
  if (!m) return dpo_err(DPO_EINVAL, "dpo_model_set_intercept: NULL model");
  m->intercept = on ? 1 : 0;
  return DPO_OK;
}

int dpo_model_intercept(const dpo_model_t *m) { return m->intercept; }

int dpo_model_prepare_shard(const dpo_model_t *m, dpo_shard_t *s) {
  if (!m || !s) return dpo_err(DPO_EINVAL, "dpo_model_prepare_shard: NULL argument");
  if (dpo__multi(m)) { /* class indices 0..K-1 before anything is computed on them */
    int rc = dpo__need_classes(m);
    if (rc || (rc = dpo__softmax_labels(m->classes, s))) return rc;
  }
  if (!m->intercept) {
    if (s->intercept) /* loaded for a model with a bias (dpo_load_opts_t.intercept) */
      return dpo_err(DPO_EINVAL, "%s: the shard has a bias column, the model none", s->source);
    return DPO_OK;
  }
  /* the column of ones: DPO_MODEL_ICPT = 1 (the loader may have appended it already) */
  return dpo_shard_add_intercept(s);
}

double dpo_model_L_bound(const dpo_model_t *m, double row_l2_bound) {
  if (!(row_l2_bound >= 0) || !isfinite(row_l2_bound)) return -1.0;
  double b2 = dpo_model_row_bound(m, 0, row_l2_bound);
  if (m->user) return m->user->L_bound ? m->user->L_bound(m->lambda, b2) : -1.0;
  return m->ops->L_bound(m->lambda, b2);
}

double dpo_model_mu(const dpo_model_t *m) { return 2.0 * m->lambda; }

double dpo_model_grad_l2_bound(const dpo_model_t *m, double row_l2_bound) {
  if (!m || !(row_l2_bound >= 0) || !isfinite(row_l2_bound)) return -1.0;
  double b2 = dpo_model_row_bound(m, 0, row_l2_bound);
  /* a user objective with an L1 sensitivity has |phi'| <= 1 (the rule dp_common applied) */
  if (m->user) return m->user->grad_l1_sens && m->user->grad_l1_sens(1.0) > 0 ? b2 : -1.0;
  return m->ops->grad_l2_bound ? m->ops->grad_l2_bound(b2) : -1.0;
}

double dpo_model_grad_l1_sens(const dpo_model_t *m, double row_l1_bound) {
  if (!(row_l1_bound >= 0) || !isfinite(row_l1_bound)) return -1.0;
  double b1 = dpo_model_row_bound(m, 1, row_l1_bound);
  if (m->user) return m->user->grad_l1_sens ? m->user->grad_l1_sens(b1) : -1.0;
  return m->ops->grad_l1_sens(b1);
}

double dpo_model_grad_l1_bound(const dpo_model_t *m, double row_l1_bound) {
  /* every built-in S1 is twice its per-example bound (logistic |c| <= 1: B1, softmax
   * ||p - y||_1 <= 2: 2 B1); a user's op bounds differences only */
  if (m->user) return -1.0;
  double s1 = dpo_model_grad_l1_sens(m, row_l1_bound);
  return s1 > 0 ? s1 / 2 : -1.0;
}
