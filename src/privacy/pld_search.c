/* The secant search the PLD calibrations share (dpopt/privacy.h, dpo_pld_secant): dp-sgd-rdp's
 * multiplier under the pld ledger (src/optim/sco_dpsgd.c) and DP-ADMM's ledger sigma
 * (src/admm/dpadmm.c).  A PLD eps falls as the noise grows (more noise is a post-processing of
 * less), and log eps is close to linear in log z there (slopes -1 to -5 near eps ~ 1), so
 * secant steps on log eps(log z) reach a band of eps in a few evaluations where a bisection
 * on z pays one per halving (DP-ADMM's to 1e-10: 36-64).  The bracket keeps every probe
 * between evaluated points on either side of the target; the answer is an evaluated point,
 * whose eps the caller's ledger then confirms (the same composition: dpo_pld_eps's memo). */
#include "dpopt/privacy.h"
#include "dpopt/status.h"

#include <math.h>

int dpo_pld_secant(int (*eps_at)(void *arg, double z, double *e), void *arg, double t,
                   double tol, int max, double zmax, double z, double e, double *slope,
                   double *zh, double *eh) {
  double zl = 0;
  int rc;
  if (!eps_at || !slope || !zh || !eh || !(t > 0) || !(tol > 0 && tol < 1) || !(z > 0))
    return dpo_err(DPO_EINVAL, "pld_secant: need a target t > 0, tol in (0, 1), z > 0");
  *zh = *eh = INFINITY;
  for (int it = 0;; it++) {
    if (e <= t && z < *zh) *zh = z, *eh = e;
    if (!(e <= t) && z > zl) zl = z;
    if ((*zh < INFINITY && *eh >= t * (1 - tol)) || it == max) return DPO_OK;
    /* aim at the band's middle; outside the bracket (or no usable value): its geometric
     * midpoint, or 20% towards the target beside an open end */
    double zn = exp(log(z) + (log(t * (1 - 0.5 * tol)) - log(e)) / *slope), en;
    if (!(zn > zl && zn < *zh && zn < zmax) || !isfinite(zn) || !(e > 0) || !isfinite(e))
      zn = zl > 0 && *zh < INFINITY ? sqrt(zl * *zh) : zl > 0 ? fmin(1.2 * zl, zmax) : 0.8 * *zh;
    if (!(zn > zl && zn < *zh && zn <= zmax)) return DPO_OK; /* nothing left to try */
    if ((rc = eps_at(arg, zn, &en))) return rc;
    const double s1 = (log(en) - log(e)) / (log(zn) - log(z));
    if (s1 < 0 && isfinite(s1)) *slope = s1;
    z = zn, e = en;
  }
}
