/* Least squares / ridge regression:
 *   f(x; u, z) = (u'x - z)^2 / 2 + lambda ||x||^2.
 * Data-term gradient (u'x - z) u: its coefficient is unbounded in x and z, so no public
 * sensitivity exists without a declared bound on targets and iterates; DP use needs
 * per-example clipping. */
#include "model/model_impl.h"

/* Data-term Hessian (1/n) sum u u' has largest eigenvalue <= max ||u||_2^2. */
static double ridge_L_bound(double lambda, double B2) { return B2 * B2 + 2.0 * lambda; }

static double ridge_l1_sens(double B1) {
  (void)B1;
  return -1.0;
}

const dpo__model_ops_t dpo__model_ridge = {
    .name = "ridge",
    .loss = DPO_LOSS_SQUARED,
    .binary = 0,
    .L_bound = ridge_L_bound,
    .grad_l1_sens = ridge_l1_sens,
};
