/* The privacy specification (dpopt/spec.h) from a config: the one place the privacy.*
 * settings of a run are read (the struct's defaults and accessors: src/privacy/spec.c).  Names are parsed here (each refusal names the key and its origin); what depends on
 * the algorithm or the data (a budget an algorithm needs, a public size in range) is checked
 * where it is used, from these fields. */
#include "dpopt/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/run.h"
#include "dpopt/status.h"

int dpo_run_parse_clip(const dpo_config_t *cfg, dpo_clip_t *c, int *has) {
  const char *s;
  dpo_config_get_str(cfg, "privacy.clip", NULL, &s);
  *has = 0;
  c->norm = DPO_CLIP_NONE;
  c->C = 0;
  if (!s || !strcasecmp(s, "none")) return DPO_OK;
  const char *colon = strchr(s, ':');
  char *end = NULL;
  double C = colon ? strtod(colon + 1, &end) : NAN;
  if (!colon || end == colon + 1 || *end || !(C > 0) || !isfinite(C))
    return dpo_err(DPO_EINVAL, "%s: privacy.clip = '%s': expected l1:C or l2:C with C > 0",
                   dpo_config_origin(cfg, "privacy.clip"), s);
  if (!strncasecmp(s, "l1", 2) && colon == s + 2) c->norm = DPO_CLIP_L1;
  else if (!strncasecmp(s, "l2", 2) && colon == s + 2) c->norm = DPO_CLIP_L2;
  else
    return dpo_err(DPO_EINVAL, "%s: privacy.clip = '%s': the norm must be l1 or l2",
                   dpo_config_origin(cfg, "privacy.clip"), s);
  c->C = C;
  *has = 1;
  return DPO_OK;
}

/* the names of the enum settings: trust, on_party_exhausted, calibrate, relation, accountant */
static int dpo__spec_names(const dpo_config_t *cfg, dpo_privacy_spec_t *s) {
  const char *v[DPO_SPEC_NKEYS] = {0};
  static const dpo_spec_key_t named[] = {DPO_SPEC_TRUST, DPO_SPEC_ON_EXHAUSTED,
                                         DPO_SPEC_CALIBRATE, DPO_SPEC_NEIGHBOURS,
                                         DPO_SPEC_ACCOUNTANT};
  for (size_t i = 0; i < sizeof named / sizeof *named; i++)
    dpo_config_get_str(cfg, dpo_privacy_spec_key(named[i]), NULL, &v[named[i]]);
  const char *t = v[DPO_SPEC_TRUST], *x = v[DPO_SPEC_ON_EXHAUSTED], *c = v[DPO_SPEC_CALIBRATE];
  if (!t || !strcasecmp(t, "central")) s->trust = DPO_TRUST_CENTRAL;
  else if (!strcasecmp(t, "local")) s->trust = DPO_TRUST_LOCAL;
  else if (!strcasecmp(t, "shares")) s->trust = DPO_TRUST_SHARES;
  else if (!strcasecmp(t, "secagg")) s->trust = DPO_TRUST_SECAGG;
  else
    return dpo_err(DPO_EINVAL, "%s: privacy.trust = '%s': expected central, local, shares or "
                   "secagg", dpo_privacy_spec_origin(s, DPO_SPEC_TRUST), t);
  if (!x || !strcasecmp(x, "stop")) s->on_exhausted = DPO_EXHAUST_STOP;
  else if (!strcasecmp(x, "drop")) s->on_exhausted = DPO_EXHAUST_DROP;
  else
    return dpo_err(DPO_EINVAL, "%s: privacy.on_party_exhausted = '%s': expected stop or drop",
                   dpo_privacy_spec_origin(s, DPO_SPEC_ON_EXHAUSTED), x);
  if (!c || !strcasecmp(c, "ledger")) s->calibrate = DPO_CALIBRATE_LEDGER;
  else if (!strcasecmp(c, "basic")) s->calibrate = DPO_CALIBRATE_BASIC;
  else
    return dpo_err(DPO_EINVAL, "%s: privacy.calibrate = '%s': expected ledger (scale the "
                   "per-step budgets to the ledger's composition) or basic (the papers' eps/T "
                   "split)", dpo_privacy_spec_origin(s, DPO_SPEC_CALIBRATE), c);
  if (dpo_neighbours_parse(v[DPO_SPEC_NEIGHBOURS], &s->rel))
    return dpo_err(DPO_EINVAL, "%s: privacy.neighbours = '%s': expected replace-one or "
                   "add-remove", dpo_privacy_spec_origin(s, DPO_SPEC_NEIGHBOURS),
                   v[DPO_SPEC_NEIGHBOURS]);
  /* pld (the default): auto's composition, and for all-Gaussian ledgers (none/poisson) the
   * smaller of its RDP bound and the PLD bound (src/privacy/acct_pld.c) */
  if (dpo_acct_parse(v[DPO_SPEC_ACCOUNTANT], &s->accountant))
    return dpo_err(DPO_EINVAL, "%s: privacy.accountant = '%s': expected pld (the default: auto, "
                   "plus the PLD bound on Gaussian compositions), auto (pure and Gaussian "
                   "releases in one budget), basic or rdp",
                   dpo_privacy_spec_origin(s, DPO_SPEC_ACCOUNTANT), v[DPO_SPEC_ACCOUNTANT]);
  return DPO_OK;
}

static int dpo__spec_read(const dpo_config_t *cfg, dpo_privacy_spec_t *s) {
  int rc, has_clip = 0;
  for (dpo_spec_key_t k = 0; k < DPO_SPEC_NKEYS; k++)
    if (dpo_config_get(cfg, dpo_privacy_spec_key(k)))
      dpo_privacy_spec_set(s, k, dpo_config_origin(cfg, dpo_privacy_spec_key(k)));
  if ((rc = dpo_config_get_double(cfg, "privacy.eps", NAN, &s->eps)) ||
      (rc = dpo_config_get_double(cfg, "privacy.delta", 0.0, &s->delta)) ||
      (rc = dpo_run_parse_clip(cfg, &s->clip, &has_clip)) ||
      (rc = dpo_config_get_int(cfg, "privacy.public_n", -1, &s->public_n)) ||
      (rc = dpo_config_get_double(cfg, "privacy.count_eps", NAN, &s->count_eps)) ||
      (rc = dpo_config_get_int(cfg, "privacy.collude", -1, &s->collude)) ||
      (rc = dpo_config_get_bool(cfg, "privacy.trust_coordinator", 0, &s->trust_coordinator)) ||
      (rc = dpo__spec_names(cfg, s)))
    return rc;
  /* the secagg-only settings (dpo_parties_from_config checks their values against the parties) */
  for (dpo_spec_key_t k = DPO_SPEC_COLLUDE; k <= DPO_SPEC_TRUST_COORDINATOR; k++)
    if (dpo_privacy_spec_given(s, k) && s->trust != DPO_TRUST_SECAGG)
      return dpo_err(DPO_EINVAL, "%s: %s applies to privacy.trust = secagg",
                     dpo_privacy_spec_origin(s, k), dpo_privacy_spec_key(k));
  return DPO_OK;
}

int dpo_privacy_spec_from_config(const dpo_config_t *cfg, dpo_privacy_spec_t *s) {
  dpo_privacy_spec_default(s);
  if (!cfg) return DPO_OK;
  int rc = dpo__spec_read(cfg, s);
  if (rc) dpo_privacy_spec_default(s);
  return rc;
}
