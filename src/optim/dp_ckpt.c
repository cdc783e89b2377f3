/* Checkpoint support shared by the algorithms (see ckpt_int.h). */
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"
#include "optim/ckpt_int.h"

int dpo__ckpt_check_double(const dpo_ckpt_t *r, const char *key, double now) {
  double was;
  int rc = dpo_ckpt_get_double(r, key, &was);
  if (rc) return rc;
  if (memcmp(&was, &now, sizeof was) != 0)
    return dpo_err(DPO_EINVAL, "checkpoint: algorithm parameter %s was %.17g, the configuration "
                   "now gives %.17g: resume with the run's own settings", key, was, now);
  return DPO_OK;
}

int dpo__ckpt_put_momentum(dpo_ckpt_t *w, double alpha, double beta, int started,
                           const double *xprev, int64_t d) {
  int rc;
  if ((rc = dpo_ckpt_put_double(w, "alpha", alpha)) || (rc = dpo_ckpt_put_double(w, "beta", beta)) ||
      (rc = dpo_ckpt_put_int(w, "started", started)))
    return rc;
  return dpo_ckpt_put_f64(w, "xprev", xprev, started ? d : 0);
}

int dpo__ckpt_get_momentum(const dpo_ckpt_t *r, double alpha, double beta, int *started,
                           double *xprev, int64_t d) {
  int64_t st;
  int rc;
  if ((rc = dpo__ckpt_check_double(r, "alpha", alpha)) ||
      (rc = dpo__ckpt_check_double(r, "beta", beta)) || (rc = dpo_ckpt_get_int(r, "started", &st)))
    return rc;
  *started = st != 0;
  return dpo_ckpt_get_f64(r, "xprev", xprev, *started ? d : 0);
}

int dpo__ckpt_check_int(const dpo_ckpt_t *r, const char *key, int64_t now) {
  int64_t was;
  int rc = dpo_ckpt_get_int(r, key, &was);
  if (rc) return rc;
  if (was != now)
    return dpo_err(DPO_EINVAL, "checkpoint: algorithm parameter %s was %lld, the configuration "
                   "now gives %lld: resume with the run's own settings", key, (long long)was,
                   (long long)now);
  return DPO_OK;
}

/* element i of the stored array differs from the recomputed one: name the first */
static int dpo__ckpt_check_arr(const dpo_ckpt_t *r, const char *key, const void *now, int64_t n,
                               int f64) {
  void *was = malloc((size_t)(n > 0 ? n : 1) * 8);
  if (!was) return dpo_err(DPO_ENOMEM, "checkpoint: out of memory");
  int rc = f64 ? dpo_ckpt_get_f64(r, key, was, n) : dpo_ckpt_get_i64(r, key, was, n);
  for (int64_t i = 0; !rc && i < n; i++) {
    if (memcmp((const char *)was + 8 * i, (const char *)now + 8 * i, 8) == 0) continue;
    if (f64)
      rc = dpo_err(DPO_EINVAL, "checkpoint: algorithm parameter %s[%lld] was %.17g, the "
                   "configuration now gives %.17g: resume with the run's own settings", key,
                   (long long)i, ((double *)was)[i], ((const double *)now)[i]);
    else
      rc = dpo_err(DPO_EINVAL, "checkpoint: algorithm parameter %s[%lld] was %lld, the "
                   "configuration now gives %lld: resume with the run's own settings", key,
                   (long long)i, (long long)((int64_t *)was)[i],
                   (long long)((const int64_t *)now)[i]);
  }
  free(was);
  return rc;
}

int dpo__ckpt_check_f64s(const dpo_ckpt_t *r, const char *key, const double *now, int64_t n) {
  return dpo__ckpt_check_arr(r, key, now, n, 1);
}

int dpo__ckpt_check_i64s(const dpo_ckpt_t *r, const char *key, const int64_t *now, int64_t n) {
  return dpo__ckpt_check_arr(r, key, now, n, 0);
}

/* Multi-party (trust secagg: run.c allows no other mode to checkpoint): which parties still
 * take part and the step each one left at (on_party_exhausted = drop); the parties' row ranges
 * come from the loaded data again and every account from the reopened journal. */
static int dpo__dp_save_parties(const dpo__dp_t *dp, dpo_ckpt_t *w) {
  const dpo_parties_t *pt = dp->parties;
  if (!pt) return DPO_OK;
  int64_t *a = malloc((size_t)pt->count * sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "out of memory");
  for (int k = 0; k < pt->count; k++) a[k] = dp->active[k];
  int rc = dpo_ckpt_put_int(w, "dp.parties", pt->count);
  if (!rc) rc = dpo_ckpt_put_i64(w, "dp.active", a, pt->count);
  if (!rc) rc = dpo_ckpt_put_i64(w, "dp.dropped", pt->dropped_step, pt->count);
  free(a);
  return rc;
}

static int dpo__dp_load_parties(dpo__dp_t *dp, const dpo_ckpt_t *r) {
  const dpo_parties_t *pt = dp->parties;
  if (!pt) return DPO_OK;
  int64_t *a = malloc((size_t)pt->count * sizeof *a);
  int rc = a ? dpo__ckpt_check_int(r, "dp.parties", pt->count)
             : dpo_err(DPO_ENOMEM, "out of memory");
  if (!rc) rc = dpo_ckpt_get_i64(r, "dp.active", a, pt->count);
  if (!rc) rc = dpo_ckpt_get_i64(r, "dp.dropped", pt->dropped_step, pt->count);
  if (!rc) {
    dp->nactive = 0;
    dp->n_active = dp->n; /* less the rows of the parties that left, as dpo__dp_drop_party */
    for (int k = 0; k < pt->count; k++) {
      dp->active[k] = a[k] != 0;
      dp->nactive += dp->active[k];
      if (!dp->active[k]) dp->n_active -= dp->pn[k];
    }
    if (dp->nactive == 0) rc = dpo_err(DPO_EFORMAT, "checkpoint: no party is active");
  }
  free(a);
  return rc;
}

int dpo__ckpt_disjoint_resume(const dpo_solver_t *s, const char *who) {
  const int64_t k = dpo_solver_resume_orphans(s);
  if (k > 0)
    return dpo_err(DPO_EUNSUP, "the journal holds %lld charge(s) after the checkpoint inside a "
                   "disjoint pass: redoing %s releases cannot be accounted as the same pass; "
                   "start a new run", (long long)k, who);
  return DPO_OK;
}

int dpo__dp_save(const dpo__dp_t *dp, dpo_ckpt_t *w) {
  int rc;
  if ((rc = dpo__dp_save_parties(dp, w))) return rc;
  if ((rc = dpo_ckpt_put_int(w, "dp.sampling", dp->sampling)) ||
      (rc = dpo_ckpt_put_int(w, "dp.m", dp->m)) || (rc = dpo_ckpt_put_int(w, "dp.T", dp->T)) ||
      (rc = dpo_ckpt_put_double(w, "dp.eps", dp->eps)) ||
      (rc = dpo_ckpt_put_double(w, "dp.S1", dp->S1)))
    return rc;
  if (dp->sampling == DPO__DP_SAMPLE_DISJOINT &&
      ((rc = dpo_ckpt_put_int(w, "dp.nbuckets", dp->nbuckets)) ||
       (rc = dpo_ckpt_put_i64(w, "dp.perm", dp->perm, dp->n))))
    return rc;
  return DPO_OK;
}

int dpo__dp_load(dpo__dp_t *dp, const dpo_ckpt_t *r) {
  int rc;
  if ((rc = dpo__dp_load_parties(dp, r))) return rc;
  if ((rc = dpo__ckpt_check_int(r, "dp.sampling", dp->sampling)) ||
      (rc = dpo__ckpt_check_int(r, "dp.m", dp->m)) || (rc = dpo__ckpt_check_int(r, "dp.T", dp->T)) ||
      (rc = dpo__ckpt_check_double(r, "dp.eps", dp->eps)) ||
      (rc = dpo__ckpt_check_double(r, "dp.S1", dp->S1)))
    return rc;
  if (dp->sampling == DPO__DP_SAMPLE_DISJOINT) {
    /* Charges after the checkpoint were journaled for buckets that will be released again:
     * counted as the same disjoint pass they would cost nothing more (parallel composition),
     * which would under-count.  Refuse rather than under-count. */
    if ((rc = dpo__ckpt_disjoint_resume(dp->s, "the bucket")) ||
        (rc = dpo__ckpt_check_int(r, "dp.nbuckets", dp->nbuckets)) ||
        (rc = dpo_ckpt_get_i64(r, "dp.perm", dp->perm, dp->n)))
      return rc;
  }
  return DPO_OK;
}
