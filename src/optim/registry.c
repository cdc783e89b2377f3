/* The algorithm table: one line per algorithm (its dpo_algo_t lives in its own file). */
#include <string.h>
#include <strings.h>

#include "optim/algos.h"
#include "optim/dp_common.h"
#include "optim/sco_common.h"
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

int dpo_algo_check(const dpo_algo_t *a, const dpo_config_t *cfg, const dpo_model_t *m,
                   const dpo_clip_t *clip, dpo_neighbours_t rel, double delta) {
  if (!a || !a->is_private) return DPO_OK;
  /* secure aggregation covers the algorithms whose releases are per-party gradient sums of
   * dp_common.c (DP-GD/HB/NAG/MASG/GDwS); the others charge without party accounts */
  const char *trust = NULL;
  if (cfg) dpo_config_get_str(cfg, "privacy.trust", NULL, &trust);
  if (trust && !strcasecmp(trust, "secagg") && a->shared != dpo__dp_params)
    return dpo_err(DPO_EUNSUP, "privacy.trust = secagg is implemented for the DP-GD family "
                   "(dp-gd, dp-hb, dp-nag*, dp-masg*, dp-gdws*), not for %s: use trust central "
                   "or local with it, or one of those algorithms", a->name);
  /* the family's shared reader decides what its analysis needs (dp_common.c, sco_common.c) */
  if (a->shared == dpo__dp_params) return dpo__dp_check(cfg, m, clip, rel);
  if (a->shared == dpo__sco_params) return dpo__sco_check(cfg, rel, delta, a->name);
  return DPO_OK;
}
