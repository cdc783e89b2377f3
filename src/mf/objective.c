/* MF objective and gradient (thesis eq. 3.1 with the optional L2 term of hamsi.h). */
#include <string.h>

#include "dpopt/hamsi.h"
#include "dpopt/status.h"
#include "mf/mf_impl.h"

int dpo_mf_objective(int64_t n, const int32_t *user, const int32_t *item, const double *y,
                     int32_t n_users, int32_t n_items, int32_t r, const double *X1,
                     const double *X2t, double lambda, const int32_t *udeg, const int32_t *ideg,
                     double *f, double *g1, double *g2) {
  if (n < 0 || r < 1 || n_users < 1 || n_items < 1)
    return dpo_err(DPO_EINVAL, "mf objective: bad sizes (n %lld, r %d)", (long long)n, r);
  if (lambda != 0 && (!udeg || !ideg))
    return dpo_err(DPO_EINVAL, "mf objective: lambda != 0 needs the degree arrays");
  double scratch1[1024], scratch2[1024];
  if (r > 1024) return dpo_err(DPO_EINVAL, "mf objective: rank %d > 1024", r);
  if (g1) memset(g1, 0, sizeof(double) * (size_t)n_users * r);
  if (g2) memset(g2, 0, sizeof(double) * (size_t)n_items * r);
  double fs = 0, dbar1 = 1, dbar2 = 1;
  if (lambda != 0) { /* mean degrees over the rows with ratings (the L2 weights' scale) */
    double s1 = 0, s2 = 0, c1 = 0, c2 = 0;
    for (int32_t a = 0; a < n_users; a++)
      if (udeg[a] > 0) s1 += udeg[a], c1++;
    for (int32_t b = 0; b < n_items; b++)
      if (ideg[b] > 0) s2 += ideg[b], c2++;
    if (c1 > 0) dbar1 = s1 / c1;
    if (c2 > 0) dbar2 = s2 / c2;
  }
  for (int64_t k = 0; k < n; k++) {
    int32_t u = user[k], i = item[k];
    if (u < 0 || u >= n_users || i < 0 || i >= n_items)
      return dpo_err(DPO_EINVAL, "mf objective: rating %lld has (user %d, item %d) out of range",
                     (long long)k, u, i);
    double wu = 0, wi = 0;
    if (lambda != 0) {
      if (udeg[u] < 1 || ideg[i] < 1)
        return dpo_err(DPO_EINVAL, "mf objective: degree of user %d / item %d is 0", u, i);
      wu = dpo__mf_l2w(udeg[u], dbar1);
      wi = dpo__mf_l2w(ideg[i], dbar2);
    }
    double *a = g1 ? g1 + (size_t)u * r : scratch1, *b = g2 ? g2 + (size_t)i * r : scratch2;
    fs += dpo__mf_term(r, X1 + (size_t)u * r, X2t + (size_t)i * r, y[k], lambda, wu, wi, a, b);
  }
  if (f) *f = fs;
  return DPO_OK;
}
