/* The private algorithms' batches (dp_common.h): a uniform m-subset of the n global row ids,
 * the disjoint buckets' public partition, and the per-step eps a sampled step may spend for
 * a target after amplification by subsampling.  Below dp_common.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/dp_common.h"

int dpo__dp_cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void dpo__dp_sample(dpo_rng_t *rng, int64_t n, int64_t m, int64_t *ids, int64_t *hash,
                    int64_t hcap) {
  /* Floyd: for j = n-m .. n-1 take t uniform in [0, j]; if t is taken, take j.  Every m-subset
   * is equally likely.  Membership by open addressing (key + 1, 0 = empty). */
  memset(hash, 0, (size_t)hcap * sizeof *hash);
  int64_t k = 0;
  for (int64_t j = n - m; j < n; j++) {
    int64_t t = (int64_t)dpo_rng_below(rng, (uint64_t)j + 1);
    for (int pass = 0; pass < 2; pass++) {
      uint64_t h = ((uint64_t)t * 0x9e3779b97f4a7c15ULL) & (uint64_t)(hcap - 1);
      while (hash[h] != 0 && hash[h] != t + 1) h = (h + 1) & (uint64_t)(hcap - 1);
      if (hash[h] == 0) {
        hash[h] = t + 1;
        ids[k++] = t;
        break;
      }
      t = j; /* t was taken: j cannot be (it is larger than every earlier candidate) */
    }
  }
  qsort(ids, (size_t)m, sizeof *ids, dpo__dp_cmp_i64);
}

int dpo__dp_use_disjoint(dpo__dp_t *dp) {
  dpo_rng_t *rng = dpo_solver_rng(dp->s);
  if (dp->rel == DPO_NEIGHBOURS_ADD_REMOVE)
    return dpo_err(DPO_EINVAL, "disjoint buckets (parallel composition over a partition of the "
                   "n rows) are analysed for replace-one neighbours: set privacy.neighbours = "
                   "replace-one");
  dp->nbuckets = dp->n / dp->m;
  dp->perm = malloc((size_t)dp->n * sizeof *dp->perm);
  if (!dp->perm) return dpo_err(DPO_ENOMEM, "dp: out of memory for the bucket permutation");
  /* a public, data-independent partition (Fisher-Yates from the solver's stream) */
  for (int64_t i = 0; i < dp->n; i++) dp->perm[i] = i;
  for (int64_t i = dp->n - 1; i > 0; i--) {
    int64_t j = (int64_t)dpo_rng_below(rng, (uint64_t)i + 1);
    int64_t tmp = dp->perm[i];
    dp->perm[i] = dp->perm[j];
    dp->perm[j] = tmp;
  }
  dp->sampling = DPO__DP_SAMPLE_DISJOINT;
  /* every row once: the steps are one disjoint pass, charged whole (optim.h, one_pass) */
  dpo_plan_t plan = *dpo_solver_plan(dp->s);
  plan.one_pass = 1;
  return dpo_solver_declare_plan(dp->s, &plan);
}

int dpo__dp_eps0(const dpo__dp_t *dp, double target, double *eps0) {
  if (!(target > 0) || !isfinite(target))
    return dpo_err(DPO_EINVAL, "dp: per-step privacy target %g must be > 0", target);
  if (dp->m == dp->n || dp->sampling == DPO__DP_SAMPLE_DISJOINT) {
    *eps0 = target;
    return DPO_OK;
  }
  if (dp->accounting == DPO__DP_ACC_SUBSAMPLED)
    return dpo_acct_wor_inverse(target, dp->m, dp->n, eps0); /* (001, (3.5)) */
  /* thesis Thm 4.1.5: 2 (m/n) eps0 = target, valid for eps0 <= 1 ((4.52)) */
  double e = target * (double)dp->n / (2.0 * (double)dp->m), chk;
  if (!(e <= 1.0))
    return dpo_err(DPO_EINVAL,
                   "algo.accounting = thesis-2gamma needs the per-step eps0 = n eps_t / (2 m) = "
                   "%g <= 1 (thesis Thm 4.1.5): use more iterations or accounting subsampled", e);
  for (int k = 0; k < 64; k++) {
    int rc = dpo_acct_thesis_2gamma(e, dp->m, dp->n, &chk);
    if (rc) return rc;
    if (chk <= target) break;
    e = nextafter(e, 0.0);
  }
  *eps0 = e;
  return DPO_OK;
}
