/* The privacy specification's defaults and accessors (dpopt/spec.h).  Reading it from a
 * config is the run's (src/run/run_spec.c); here is what every room below the run may use. */
#include "dpopt/spec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const dpo__spec_keys[DPO_SPEC_NKEYS] = {
    [DPO_SPEC_EPS] = "privacy.eps",
    [DPO_SPEC_DELTA] = "privacy.delta",
    [DPO_SPEC_NEIGHBOURS] = "privacy.neighbours",
    [DPO_SPEC_ACCOUNTANT] = "privacy.accountant",
    [DPO_SPEC_TRUST] = "privacy.trust",
    [DPO_SPEC_CALIBRATE] = "privacy.calibrate",
    [DPO_SPEC_CLIP] = "privacy.clip",
    [DPO_SPEC_PUBLIC_N] = "privacy.public_n",
    [DPO_SPEC_COUNT_EPS] = "privacy.count_eps",
    [DPO_SPEC_ON_EXHAUSTED] = "privacy.on_party_exhausted",
    [DPO_SPEC_COLLUDE] = "privacy.collude",
    [DPO_SPEC_TRUST_COORDINATOR] = "privacy.trust_coordinator",
    [DPO_SPEC_SIGMA_RULE] = "privacy.sigma_rule",
    [DPO_SPEC_MU] = "privacy.mu",
    [DPO_SPEC_SIGMA] = "privacy.sigma",
    [DPO_SPEC_JOURNAL] = "privacy.journal",
    [DPO_SPEC_JOURNAL_KEY] = "privacy.journal_key",
    [DPO_SPEC_STORE] = "privacy.store"};

const char *dpo_sigma_rule_name(dpo_sigma_rule_t r) {
  static const char *const names[] = {"eq8", "rdp", "ledger"};
  return (int)r >= 0 && (int)r < 3 ? names[r] : NULL;
}

const char *dpo_privacy_spec_key(dpo_spec_key_t k) {
  return (int)k >= 0 && k < DPO_SPEC_NKEYS ? dpo__spec_keys[k] : "privacy.?";
}

void dpo_privacy_spec_default(dpo_privacy_spec_t *s) {
  memset(s, 0, sizeof *s);
  s->eps = NAN;
  s->rel = DPO_NEIGHBOURS_REPLACE_ONE;
  s->accountant = DPO_ACCT_PLD;
  s->trust = DPO_TRUST_CENTRAL;
  s->calibrate = DPO_CALIBRATE_LEDGER;
  s->clip.norm = DPO_CLIP_NONE;
  s->public_n = -1;
  s->count_eps = NAN;
  s->on_exhausted = DPO_EXHAUST_STOP;
  s->collude = -1;
  s->sigma_rule = DPO_SIGMA_EQ8;
  s->mu = 0.5;
}

void dpo_privacy_spec_set(dpo_privacy_spec_t *s, dpo_spec_key_t k, const char *origin) {
  if ((int)k < 0 || k >= DPO_SPEC_NKEYS) return;
  s->given |= 1u << k;
  snprintf(s->origin[k], sizeof s->origin[k], "%s", origin ? origin : dpo__spec_keys[k]);
}

int dpo_privacy_spec_given(const dpo_privacy_spec_t *s, dpo_spec_key_t k) {
  return (int)k >= 0 && k < DPO_SPEC_NKEYS && (s->given >> k & 1u);
}

const char *dpo_privacy_spec_origin(const dpo_privacy_spec_t *s, dpo_spec_key_t k) {
  return dpo_privacy_spec_given(s, k) && s->origin[k][0] ? s->origin[k]
                                                          : dpo_privacy_spec_key(k);
}
