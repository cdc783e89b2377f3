/* Mechanisms as objects (OpenDP's Measurement: what runs and what it costs, in one place).  One
 * ops struct per mechanism a charge can name holds its exact sampler, its sensitivity rule and
 * its privacy maps; the algorithms draw their noise through it (dpo_mech_sample,
 * dpo_mech_release: privacy.h) and the accountants (accountant.c, acct_rdp.c, acct_auto.c,
 * acct_pld.c) ask it instead of comparing mechanisms, so a new mechanism is one entry in
 * mech_ops.c. */
#ifndef DPO_MECH_OPS_H
#define DPO_MECH_OPS_H

#include "dpopt/privacy.h"

typedef struct {
  dpo_mech_t id;
  /* pure: its only privacy map is pure eps (no delta, no RDP curve of its own) */
  int pure;
  /* its analysis needs a public n (replace-one only); why, for the refusal under add-remove */
  const char *replace_one_only;
  /* The sensitivity rule: the sensitivity of the snapped query for c's noise scale (the grid
   * rounding moves each coordinate by <= Lambda/2: Delta1 + d Lambda in L1, Delta2 + sqrt(d)
   * Lambda in L2; privacy.h), rounded up.  NULL: the release is known by its curve, not a
   * noise scale. */
  int (*snapped)(const dpo_charge_t *c, double *sens);
  /* Pure eps or (eps, delta) of one release before sampling: the larger of the claimed c->eps
   * and the one computed from the noise scale (never under-counts).  Validated. */
  int (*approx)(const dpo_charge_t *c, double *eps, double *delta);
  /* Its RDP curve under c's sampling (validated).  NULL: not on an RDP ledger. */
  int (*rdp)(const dpo_charge_t *c, dpo_rdp_curve_t *rc);
  /* pld: the PLD accountant composes it (as a Gaussian of multiplier z = noise scale / snapped
   * sensitivity; acct_pld.c) */
  int pld;
  /* The exact sampler: v[i] += its noise at scale on the grid (mechanism.c).  NULL: the noise
   * is not drawn in one place (rdp-rho). */
  int (*sample)(dpo_rng_t *rng, double scale, double *v, int64_t d);
} dpo__mech_ops_t;

/* The ops of m; NULL for DPO_MECH_UNSET or an unknown value. */
const dpo__mech_ops_t *dpo__mech_ops(dpo_mech_t m);

#endif
