/* Checkpoint support shared by the algorithms (see ckpt_int.h). */
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

static int dpo__dp_refuse_parties(const dpo__dp_t *dp) {
  if (dp->parties)
    return dpo_err(DPO_EUNSUP, "checkpoints of multi-party runs are not supported yet (the "
                   "active-party set is not saved)");
  return DPO_OK;
}

int dpo__dp_save(const dpo__dp_t *dp, dpo_ckpt_t *w) {
  int rc;
  if ((rc = dpo__dp_refuse_parties(dp))) return rc;
  if (dp->count_eps > 0) /* dpo__dp_create refuses --checkpoint-every / --resume with it */
    return dpo_err(DPO_EUNSUP, "no checkpoint of an add-remove run on a noisy row count "
                   "(declare --public-n N to make the run resumable)");
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
  if ((rc = dpo__dp_refuse_parties(dp))) return rc;
  if ((rc = dpo__ckpt_check_int(r, "dp.sampling", dp->sampling)) ||
      (rc = dpo__ckpt_check_int(r, "dp.m", dp->m)) || (rc = dpo__ckpt_check_int(r, "dp.T", dp->T)) ||
      (rc = dpo__ckpt_check_double(r, "dp.eps", dp->eps)) ||
      (rc = dpo__ckpt_check_double(r, "dp.S1", dp->S1)))
    return rc;
  if (dp->sampling == DPO__DP_SAMPLE_DISJOINT) {
    /* Charges after the checkpoint were journaled for buckets that will be released again:
     * counted as the same disjoint pass they would cost nothing more (parallel composition),
     * which would under-count.  Refuse rather than under-count. */
    if (dpo_solver_resume_orphans(dp->s) > 0)
      return dpo_err(DPO_EUNSUP, "the journal holds %lld charge(s) after the checkpoint inside "
                     "a disjoint pass: redoing those buckets cannot be accounted as the same pass; "
                     "start a new run", (long long)dpo_solver_resume_orphans(dp->s));
    if ((rc = dpo__ckpt_check_int(r, "dp.nbuckets", dp->nbuckets)) ||
        (rc = dpo_ckpt_get_i64(r, "dp.perm", dp->perm, dp->n)))
      return rc;
  }
  return DPO_OK;
}
