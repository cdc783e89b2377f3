/* The mechanisms a charge can name, as objects (mech_ops.h): the Laplace and Gaussian grid
 * mechanisms of mechanism.c (also the distributed discrete Laplace of Polya shares, whose sum is
 * the same Laplace) and the releases known only by an RDP curve alpha rho^2 / 2 (amplification
 * by iteration, 003 Thm 3.1; the distributed discrete Gaussian of secure aggregation, priced by
 * the party guard).  Above the mathematics they use (mechanism.c, rdp.c), below the
 * accountants that compose them. */
#include "mech_ops.h"

#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>

/* ---------------------------------------------------------------- Laplace */

static int dpo__lap_snapped(const dpo_charge_t *c, double *sens) {
  double lam;
  int st = dpo_mech_grid(c->noise_scale, &lam);
  if (!st) *sens = dpo__add_up(c->sensitivity, dpo__mul_up((double)c->dim, lam));
  return st;
}

static int dpo__lap_approx(const dpo_charge_t *c, double *eps, double *delta) {
  double e0 = c->eps, em;
  int st;
  if (c->delta != 0)
    return dpo_err(DPO_EINVAL, "charge: the Laplace mechanism is pure (delta=%g)", c->delta);
  if (c->noise_scale > 0) {
    if ((st = dpo_mech_laplace_eps(c->sensitivity, c->noise_scale, c->dim, &em))) return st;
    if (em > e0) e0 = em; /* the larger of the claimed and the computed loss */
  }
  *eps = e0;
  *delta = 0;
  return DPO_OK;
}

/* ---------------------------------------------------------------- Gaussian */

static int dpo__gauss_snapped(const dpo_charge_t *c, double *sens) {
  double lam;
  int st = dpo_mech_grid(c->noise_scale, &lam);
  if (!st) *sens = dpo__add_up(c->sensitivity, dpo__mul_up(dpo__sqrt_up((double)c->dim), lam));
  return st;
}

static int dpo__gauss_approx(const dpo_charge_t *c, double *eps, double *delta) {
  double e0 = c->eps, em;
  int st;
  if (!(c->delta > 0))
    return dpo_err(DPO_EINVAL, "charge: a Gaussian release needs delta in (0, 1)");
  if (c->noise_scale > 0) {
    if ((st = dpo_mech_gaussian_eps(c->sensitivity, c->noise_scale, c->delta, c->dim, &em)))
      return st;
    if (em > e0) e0 = em;
  }
  *eps = e0;
  *delta = c->delta;
  return DPO_OK;
}

static int dpo__gauss_rdp(const dpo_charge_t *c, dpo_rdp_curve_t *rc) {
  double s2;
  int st;
  if (c->accounting != DPO_ACCOUNTING_RDP)
    return dpo_err(DPO_EINVAL, "charge: the rdp ledger needs accounting 'rdp' (got '%s')",
                   dpo_accounting_name(c->accounting));
  if (!(c->noise_scale > 0) || !isfinite(c->noise_scale) || !(c->sensitivity > 0) ||
      !isfinite(c->sensitivity) || c->dim < 1)
    return dpo_err(DPO_EINVAL, "charge: a gaussian RDP charge needs noise_scale > 0, "
                               "sensitivity > 0 and dim >= 1");
  if ((st = dpo__gauss_snapped(c, &s2))) return st;
  return dpo__rdp_curve_add_s(rc, c->sampling, c->m, c->n, dpo__div_down(c->noise_scale, s2), 1);
}

/* ---------------------------------------------------------------- rdp-rho */

static int dpo__rho_rdp(const dpo_charge_t *c, dpo_rdp_curve_t *rc) {
  if (c->sampling != DPO_SAMPLING_NONE && c->sampling != DPO_SAMPLING_DISJOINT)
    return dpo_err(DPO_EINVAL, "charge: an rdp-rho release takes sampling none or disjoint");
  if (!(c->rho > 0) || !isfinite(c->rho))
    return dpo_err(DPO_EINVAL, "charge: rdp-rho needs rho > 0 (got %g)", c->rho);
  return dpo_rdp_curve_add_rho(rc, c->rho);
}

/* ---------------------------------------------------------------- the table */

static const dpo__mech_ops_t dpo__mechs[] = {
    [DPO_MECH_LAPLACE] = {DPO_MECH_LAPLACE, 1, NULL, dpo__lap_snapped, dpo__lap_approx, NULL,
                          0, dpo_mech_laplace},
    [DPO_MECH_GAUSSIAN] = {DPO_MECH_GAUSSIAN, 0, NULL, dpo__gauss_snapped, dpo__gauss_approx,
                           dpo__gauss_rdp, 1, dpo_mech_gaussian},
    [DPO_MECH_RDP_RHO] = {DPO_MECH_RDP_RHO, 0,
                          "amplification by iteration (Feldman, Koren and Talwar 2020, Thm 3.1)",
                          NULL, NULL, dpo__rho_rdp, 0, NULL},
};

const dpo__mech_ops_t *dpo__mech_ops(dpo_mech_t m) {
  int i = (int)m;
  return i > 0 && i < (int)(sizeof dpo__mechs / sizeof *dpo__mechs) ? &dpo__mechs[i] : NULL;
}

int dpo_mech_sample(dpo_mech_t m, dpo_rng_t *rng, double scale, double *v, int64_t d) {
  const dpo__mech_ops_t *op = dpo__mech_ops(m);
  if (!op || !op->sample)
    return dpo_err(DPO_EINVAL, "noise: the %s mechanism has no sampler of its own",
                   op ? dpo_mech_name(m) : "unknown");
  return op->sample(rng, scale, v, d);
}

int dpo_mech_release(const dpo_charge_t *ch, dpo_rng_t *rng, double *v, int64_t d) {
  if (!ch) return dpo_err(DPO_EINVAL, "noise: NULL charge");
  return dpo_mech_sample(ch->mechanism, rng, ch->noise_scale, v, d);
}
