/* The searches on the PLD bound (pld.c): dpo_pld_calibrate (dpopt calibrate's multiplier, a
 * bisection on a secant bracket) and the secant search the PLD calibrations share
 * (dpopt/privacy.h, dpo_pld_secant): dp-sgd-rdp's
 * multiplier under the pld ledger (src/optim/sco_dpsgd.c) and DP-ADMM's ledger sigma
 * (src/admm/dpadmm.c).  A PLD eps falls as the noise grows (more noise is a post-processing of
 * less), and log eps is close to linear in log z there (slopes -1 to -5 near eps ~ 1), so
 * secant steps on log eps(log z) reach a band of eps in a few evaluations where a bisection
 * on z pays one per halving (DP-ADMM's to 1e-10: 36-64).  The bracket keeps every probe
 * between evaluated points on either side of the target; the answer is an evaluated point,
 * whose eps the caller's ledger then confirms (the same composition: dpo_pld_eps's memo). */
#include "dpopt/privacy.h"
#include "dpopt/status.h"

#include <float.h>
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

/* The bisection of dpo_pld_calibrate, replayed on a bracket.  The PLD eps is the bound of a
 * dominating pair; the true eps of a Gaussian (plain or Poisson-subsampled) only falls as z
 * grows (more noise is a post-processing of less), so a z >= zh, with eps_PLD(zh) <= target
 * evaluated, meets the target by zh's bound.  The bisection below is the first version's,
 * step for step; a probe z is evaluated only inside (zl, zh), where zl < z* <= zh come from a
 * few secant steps first: the same answer from ~5 PLD evaluations instead of ~11. */
typedef struct {
  const char *sampling;
  int64_t m, n, steps;
  double eps, delta, h;
  double zl, zh; /* eps(zl) > target (0: none yet), eps(zh) <= target, both evaluated */
  double lz[2], le[2]; /* the last two evaluations: log z, log eps */
  int nev;
} dpo__pld_cal_t;

static int dpo__cal_eval(dpo__pld_cal_t *c, double z, int *fits) {
  double e;
  int st = dpo_pld_eps(c->sampling, c->m, c->n, z, c->steps, c->delta, c->h, &e);
  if (st) return st;
  *fits = e <= c->eps;
  if (*fits && z < c->zh) c->zh = z;
  if (!*fits && z > c->zl) c->zl = z;
  c->lz[0] = c->lz[1], c->le[0] = c->le[1];
  c->lz[1] = log(z), c->le[1] = log(e > 0 ? e : DBL_MIN);
  c->nev++;
  return DPO_OK;
}

/* does z meet the target?  Decided by the bracket where it can be, else evaluated */
static int dpo__cal_fits(dpo__pld_cal_t *c, double z, int *fits) {
  if (z >= c->zh) return *fits = 1, DPO_OK;
  if (z <= c->zl) return *fits = 0, DPO_OK;
  return dpo__cal_eval(c, z, fits);
}

/* secant steps on log eps(log z) towards the target, each probe nudged 1e-6 to the side whose
 * end is farther, until zh - zl <= 2e-6 zh (or 10 evaluations) */
static int dpo__cal_bracket(dpo__pld_cal_t *c) {
  int st, fits;
  while (c->nev < 10 && !(c->zl > 0 && c->zh - c->zl <= 2e-6 * c->zh)) {
    double sl = (c->le[1] - c->le[0]) / (c->lz[1] - c->lz[0]);
    double z = exp(c->lz[1] + (log(c->eps) - c->le[1]) / sl);
    if (!(sl < 0) || !isfinite(z) || !(z > c->zl && z < c->zh))
      z = c->zl > 0 ? 0.5 * (c->zl + c->zh) : 0.7 * c->zh;
    z *= c->zh - z > z - c->zl ? 1 + 1e-6 : 1 - 1e-6;
    if (!(z > c->zl && z < c->zh)) z = 0.5 * (c->zl + c->zh);
    if ((st = dpo__cal_eval(c, z, &fits))) return st;
  }
  return DPO_OK;
}

int dpo_pld_calibrate(const char *sampling, int64_t m, int64_t n, int64_t steps, double eps,
                      double delta, double *z) {
  int st, fits;
  if (!z || !(eps > 0) || !isfinite(eps) || !(delta > 0 && delta < 1) || steps < 1)
    return dpo_err(DPO_EINVAL, "pld_calibrate: need eps > 0, delta in (0, 1), steps >= 1");
  dpo__pld_cal_t c = {sampling, m, n, steps, eps, delta, dpo_pld_auto_h(eps, steps),
                      0, INFINITY, {0, 0}, {0, 0}, 0};
  /* the RDP multiplier meets the target (its bound is valid, PLD's is tighter): bisect below */
  double hi, lo;
  if ((st = dpo_rdp_calibrate(sampling, m, n, steps, eps, delta, &hi))) return st;
  if ((st = dpo__cal_eval(&c, hi, &fits))) return st;
  if (!fits) { /* discretization coarser than the RDP slack: keep RDP's (valid) answer */
    *z = hi;
    return DPO_OK;
  }
  if ((st = dpo__cal_eval(&c, 0.93 * hi, &fits)) || (st = dpo__cal_bracket(&c))) return st;
  lo = 0.7 * hi; /* PLD gains at most ~30% over RDP here; widened below if not */
  for (;;) {
    if ((st = dpo__cal_fits(&c, lo, &fits))) return st;
    if (!fits) break;
    hi = lo;
    lo *= 0.7;
  }
  while (hi - lo > 1e-3 * hi) {
    double mid = 0.5 * (lo + hi);
    if ((st = dpo__cal_fits(&c, mid, &fits))) return st;
    if (fits) hi = mid;
    else lo = mid;
  }
  *z = hi; /* hi >= zh, whose eps <= target was evaluated (the bracket's note above) */
  return DPO_OK;
}
