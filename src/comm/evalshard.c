/* dpo_model_eval_shard and dpo_model_local_predict (see include/dpopt/comm.h): apply a model
 * to distributed shards.  The sums are formed exactly as the oracle's METRIC request forms
 * them (chunks aligned to global row ids, double-double accumulation and reduction), so a
 * model evaluated here gives the same loss and metric, bit for bit, as `dpopt train --test`
 * reported for the same data and rank count. */
#include "dpopt/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "comm/reduce.h"
#include "dpopt/status.h"

int dpo_model_eval_shard(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s,
                         const double *x, double *loss_mean, double *metric_mean) {
  static const char fn[] = "dpo_model_eval_shard";
  /* acc[0] loss sum, acc[1] metric sum, acc[2] rows, acc[3] status */
  dpo__dd_t acc[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  int lrc = DPO_OK;
  if (!m || !s || !x) lrc = dpo_err(DPO_EINVAL, "%s: NULL model, shard or x", fn);
  else lrc = dpo__shard_metric_add(m, s, x, acc);
  /* a failure on any rank (with its detail) on every rank, before anything is reduced */
  int rc = dpo_agree(comm, lrc);
  if (rc) return rc;
  if ((rc = dpo_agree(comm, dpo__dd_reduce(comm, acc, 3, 0, 1)))) return rc;
  /* the reduced values are bit-identical on every rank, so every rank takes this branch */
  if (!(acc[2].hi > 0)) return dpo_err(DPO_EINVAL, "%s: no rows to evaluate", fn);
  if (loss_mean) *loss_mean = acc[0].hi / acc[2].hi;
  if (metric_mean) *metric_mean = acc[1].hi / acc[2].hi;
  return DPO_OK;
}

int dpo_model_local_predict(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                            double *t) {
  if (!m || !s || !x || (!t && s->n > 0))
    return dpo_err(DPO_EINVAL, "dpo_model_local_predict: NULL argument");
  if (dpo_model_multiclass(m))
    return dpo_err(DPO_EINVAL, "dpo_model_local_predict: model %s has K outputs: use "
                   "dpo_model_local_classify", dpo_model_name(m));
  if (s->n == 0) return DPO_OK;
  if (s->sparse) {
    /* the same summation order as the evaluation kernel (dpo_kern_eval) */
    for (int64_t i = 0; i < s->n; i++) {
      double v = 0.0;
      for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) v += s->val[p] * x[s->colind[p]];
      t[i] = v;
    }
  } else {
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)s->n, s->d, 1.0, s->X, s->d, x, 1, 0.0, t, 1);
  }
  return DPO_OK;
}

int dpo_model_confusion(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s,
                        const double *x, int64_t *cm) {
  int32_t K = m ? dpo_model_classes(m) : 0;
  int32_t *cls = NULL;
  int rc = DPO_OK;
  if (!m || !s || !x || !cm || K < 2)
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "dpo_model_confusion: a multiclass model with "
                                   "its classes, a shard, x and cm are needed"));
  size_t kk = (size_t)K * (size_t)K;
  memset(cm, 0, kk * sizeof *cm);
  if (!(cls = malloc((size_t)(s->n ? s->n : 1) * sizeof *cls)))
    rc = dpo_err(DPO_ENOMEM, "confusion matrix: out of memory");
  if (!rc) rc = dpo_model_local_classify(m, s, x, cls, NULL);
  for (int64_t i = 0; !rc && i < s->n; i++) {
    double y = s->y[i]; /* a class index: dpo_model_prepare_shard checked it */
    if (!(y >= 0 && y < K)) rc = dpo_err(DPO_EFORMAT, "%s: a label is not a class index", s->source);
    else cm[(size_t)y * (size_t)K + (size_t)cls[i]]++;
  }
  free(cls);
  if ((rc = dpo_agree(comm, rc))) return rc;
  /* counts are integers: the sum is exact in any order */
  if (MPI_Allreduce(MPI_IN_PLACE, cm, (int)kk, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "dpo_model_confusion: MPI_Allreduce failed"));
  return DPO_OK;
}
