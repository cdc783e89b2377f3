/* The algorithm table: one line per algorithm (its dpo_algo_t lives in its own file). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "optim/algos.h"
#include "optim/dp_common.h"
#include "optim/sco_common.h"
#include "dpopt/model.h"
#include "dpopt/status.h"

static const dpo_algo_t *const dpo__algos[] = {
    &dpo__algo_gd,
    &dpo__algo_hb,
    &dpo__algo_nag,
    &dpo__algo_masg,
    &dpo__algo_lbfgs,
    &dpo__algo_pnsgd,
    &dpo__algo_phased_sgd,
    &dpo__algo_phased_erm,
    &dpo__algo_sc_reduce,
    &dpo__algo_phased_sc,
    &dpo__algo_dp_sgd_rdp,
    &dpo__algo_dp_gd,
    &dpo__algo_dp_hb,
    &dpo__algo_dp_shb,
    &dpo__algo_dp_gdws,
    &dpo__algo_dp_sgdws,
    &dpo__algo_dp_onlinegdws,
    &dpo__algo_dp_nag,
    &dpo__algo_dp_nag_opt,
    &dpo__algo_dp_masg,
    &dpo__algo_dp_masg_opt,
    &dpo__algo_dp_mag,
    &dpo__algo_dp_smag,
    NULL,
};

const dpo_algo_t *dpo_algo_find(const char *name) {
  if (!name) return NULL;
  for (const dpo_algo_t *const *a = dpo__algos; *a; a++)
    if (strcmp((*a)->name, name) == 0) return *a;
  return NULL;
}

const dpo_algo_t *const *dpo_algo_list(void) { return dpo__algos; }

int dpo__algo_L_check(const dpo_algo_t *a, const dpo_config_t *cfg, const dpo_model_t *m) {
  if (!a->needs_L || !cfg || !m) return DPO_OK;
  double B = NAN, step = NAN;
  char key[64];
  int rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &B);
  if (!rc && a->needs_L[0]) {
    snprintf(key, sizeof key, "algo.%s", a->needs_L);
    rc = dpo_config_get_double(cfg, key, NAN, &step);
  }
  if (rc) return rc;
  if (!isnan(step)) return DPO_OK;
  if (isnan(B)) {
    if (a->needs_L[0])
      return dpo_err(DPO_EINVAL, "%s: its step is c/L: declare data.row_l2_bound "
                     "(--row-l2-bound B, public) or give the step algo.%s", a->name, a->needs_L);
    return dpo_err(DPO_EINVAL, "%s needs the smoothness L: declare data.row_l2_bound "
                   "(--row-l2-bound B, public)", a->name);
  }
  double L = (B > 0 && isfinite(B)) ? dpo_model_L_bound(m, B) : NAN;
  if (!(L > 0) || !isfinite(L))
    return dpo_err(DPO_EINVAL, "%s: data.row_l2_bound = %g gives no finite L > 0 for model %s",
                   a->name, B, dpo_model_name(m));
  return DPO_OK;
}

static int dpo__mu_check(const dpo_algo_t *a, const dpo_config_t *cfg, const dpo_model_t *m) {
  if (!a->needs_mu || !m || dpo_model_mu(m) > 0) return DPO_OK;
  double v = NAN;
  char key[64];
  if (a->needs_mu[0] && cfg) {
    snprintf(key, sizeof key, "algo.%s", a->needs_mu);
    int rc = dpo_config_get_double(cfg, key, NAN, &v);
    if (rc) return rc;
    if (!isnan(v)) return DPO_OK;
    return dpo_err(DPO_EINVAL, "%s: mu = 0 (model.lambda = 0): give model.lambda > 0 (--lambda) "
                   "or algo.%s", a->name, a->needs_mu);
  }
  return dpo_err(DPO_EINVAL, "%s needs a strongly convex model: model.lambda > 0 (--lambda)",
                 a->name);
}

int dpo_algo_check(const dpo_algo_t *a, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                   const dpo_model_t *m) {
  if (!a || !a->is_private) return DPO_OK;
  /* secure aggregation covers the algorithms whose every release is a noised SUM of per-party
   * contributions (each party encodes its part and adds a noise share): the DP-GD family of
   * dp_common.c and the batch-sum SCO methods dp-sgd-rdp and pnsgd (sco_common.h).  The phased
   * methods perturb only a PHASE OUTPUT, a nonlinear function (SGD pass, ERM solve) of many
   * unnoised gradients the coordinator computes: not a sum the parties could encode. */
  /* the same holds in every multi-party run (parties.count, or a trust mode other than
   * central): under central and local every party would also receive the unnoised iterates
   * of the phase (the oracle's x), and no party could noise its own part of the output */
  if (!spec) return dpo_err(DPO_EINVAL, "dpo_algo_check: NULL privacy specification");
  int64_t pc = 0;
  if (cfg && dpo_config_get_int(cfg, "parties.count", 0, &pc)) pc = 0;
  const char *trust = dpo_trust_name(spec->trust);
  const int multi = spec->trust != DPO_TRUST_CENTRAL || pc != 0;
  if (multi && a->shared == dpo__sco_params && strcmp(a->name, "dp-sgd-rdp") != 0 &&
      strcmp(a->name, "pnsgd") != 0)
    return dpo_err(DPO_EUNSUP, "privacy.trust = %s with parties: %s releases only a noised "
                   "phase output (output perturbation, Feldman, Koren and Talwar 2020, Alg. 2/3), computed by the "
                   "coordinator from many UNNOISED gradients (one example at a time in the SGD "
                   "phases of phased-sgd / phased-sc, the batch at every step of the ERM solve "
                   "of phased-erm; sc-reduce runs one of them) at iterates every party "
                   "receives: the phase output is not a sum of per-party contributions, so no "
                   "party could noise its part (local) or add a share of its noise (secagg), "
                   "and neither masking nor trusting the coordinator would hide those exact "
                   "gradients from the other parties.  Use dp-sgd-rdp, pnsgd or the DP-GD "
                   "family (dp-gd, dp-hb, dp-nag*, dp-masg*, dp-gdws*)",
                   trust, a->name);
  if (spec->trust == DPO_TRUST_SECAGG && a->shared != dpo__dp_params &&
      strcmp(a->name, "dp-sgd-rdp") != 0 && strcmp(a->name, "pnsgd") != 0) {
    return dpo_err(DPO_EUNSUP, "privacy.trust = secagg is implemented for the releases that are "
                   "sums of per-party contributions (the DP-GD family, dp-sgd-rdp, pnsgd), not "
                   "for %s", a->name);
  }
  /* the family's shared reader decides what its analysis needs (dp_common.c, sco_common.c);
   * a missing sensitivity is named before a missing step constant */
  int rc = DPO_OK;
  if (a->shared == dpo__dp_params)
    rc = dpo__dp_check(cfg, m, spec->clip.norm != DPO_CLIP_NONE ? &spec->clip : NULL,
                       spec->rel, a->name);
  else if (a->shared == dpo__sco_params) rc = dpo__sco_check(cfg, spec, a->name);
  if (!rc) rc = dpo__algo_L_check(a, cfg, m);
  if (!rc) rc = dpo__mu_check(a, cfg, m);
  return rc;
}
