/* The privacy cost of a tune (dpopt/tune.h): Liu & Talwar (2019) for pure eps, Papernot &
 * Steinke (2022, Thm 2) on the Renyi curve.  Public parameters only. */
#include <math.h>

#include "dpopt/status.h"
#include "dpopt/tune.h"

/* x rounded up by a relative margin wider than the libm error of the terms (a few ulps) */
static double up(double x) { return x > 0 ? x * (1 + 1e-12) + 1e-300 : x * (1 - 1e-12); }

int dpo_tune_pure_eps(double eps0, double *eps) {
  if (!(eps0 > 0) || !isfinite(eps0)) return dpo_err(DPO_EINVAL, "tune: eps0 = %g must be > 0", eps0);
  double c = 3 * eps0;
  if (fma(3, eps0, -c) > 0) c = nextafter(c, INFINITY); /* never below the exact 3 eps0 */
  *eps = c;
  return DPO_OK;
}

void dpo_tune_pure_curve(double eps, dpo_rdp_curve_t *c) {
  dpo_rdp_curve_init(c);
  for (int i = 0; i < c->n; i++) {
    double a = c->alpha[i] * eps * eps / 2; /* zCDP (Bun-Steinke 2016 Prop. 3.3) */
    c->rdp[i] = up(a < eps ? a : eps);
  }
}

int dpo_tune_rdp(const dpo_rdp_curve_t *base, double mean, dpo_rdp_curve_t *out) {
  if (!(mean >= 1) || !isfinite(mean))
    return dpo_err(DPO_EINVAL, "tune: mean number of repetitions %g must be >= 1", mean);
  int n = base->n;
  double lm = log(mean), best = INFINITY, tmp[DPO_RDP_MAX_ORDERS];
  /* the lambda^ term: min over the grid of (1 - 1/l) e(l) + log(1/gamma)/l, gamma = 1/mean */
  for (int j = 0; j < n; j++) {
    double l = base->alpha[j], v = (1 - 1 / l) * base->rdp[j] + lm / l;
    if (v < best) best = v;
  }
  for (int i = 0; i < n; i++) { /* (1 + eta) = 2 for the geometric distribution */
    double l = base->alpha[i];
    tmp[i] = up(base->rdp[i] + lm / (l - 1) + 2 * up(best));
  }
  /* monotone in the order: D_l <= D_l' for l <= l' */
  for (int i = n - 1; i >= 0; i--)
    if (i + 1 < n && tmp[i + 1] < tmp[i] && base->alpha[i + 1] >= base->alpha[i]) tmp[i] = tmp[i + 1];
  out->n = n;
  for (int i = 0; i < n; i++) {
    out->alpha[i] = base->alpha[i];
    out->rdp[i] = tmp[i];
  }
  return DPO_OK;
}
