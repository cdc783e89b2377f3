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

#define DPO__K(k) (1u << (k))
/* the keys each command reads (dpo_spec_for_t) */
static unsigned dpo__spec_mask(dpo_spec_for_t what) {
  const unsigned train = DPO__K(DPO_SPEC_TRUST_COORDINATOR + 1) - 1; /* eps .. trust_coordinator */
  const unsigned admm3 = DPO__K(DPO_SPEC_SIGMA_RULE) | DPO__K(DPO_SPEC_MU) | DPO__K(DPO_SPEC_SIGMA);
  switch (what) {
  case DPO_SPEC_FOR_TRAIN:
  case DPO_SPEC_FOR_AUDIT: return train;
  case DPO_SPEC_FOR_AUDIT_ADMM: /* what audit_run.c's ADMM trials use */
    return DPO__K(DPO_SPEC_EPS) | DPO__K(DPO_SPEC_DELTA) | DPO__K(DPO_SPEC_NEIGHBOURS) |
           DPO__K(DPO_SPEC_ACCOUNTANT) | DPO__K(DPO_SPEC_CLIP) | admm3;
  case DPO_SPEC_FOR_ADMM:
    return DPO__K(DPO_SPEC_EPS) | DPO__K(DPO_SPEC_DELTA) | DPO__K(DPO_SPEC_TRUST) |
           DPO__K(DPO_SPEC_ACCOUNTANT) | DPO__K(DPO_SPEC_COLLUDE) |
           DPO__K(DPO_SPEC_TRUST_COORDINATOR) | DPO__K(DPO_SPEC_CLIP) | admm3 | DPO__K(DPO_SPEC_JOURNAL) | DPO__K(DPO_SPEC_JOURNAL_KEY) |
           DPO__K(DPO_SPEC_STORE);
  }
  return 0;
}

/* the names of the enum settings in mask: trust, on_party_exhausted, calibrate, relation,
 * accountant, sigma_rule (one not read stays NULL: the default) */
static int dpo__spec_names(const dpo_config_t *cfg, unsigned mask, dpo_privacy_spec_t *s) {
  const char *v[DPO_SPEC_NKEYS] = {0};
  for (dpo_spec_key_t k = 0; k < DPO_SPEC_NKEYS; k++)
    if (mask & DPO__K(k) && (k == DPO_SPEC_TRUST || k == DPO_SPEC_ON_EXHAUSTED ||
                             k == DPO_SPEC_CALIBRATE || k == DPO_SPEC_NEIGHBOURS ||
                             k == DPO_SPEC_ACCOUNTANT || k == DPO_SPEC_SIGMA_RULE))
      dpo_config_get_str(cfg, dpo_privacy_spec_key(k), NULL, &v[k]);
  const char *t = v[DPO_SPEC_TRUST], *x = v[DPO_SPEC_ON_EXHAUSTED], *c = v[DPO_SPEC_CALIBRATE];
  const char *r = v[DPO_SPEC_SIGMA_RULE];
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
  if (!r || !strcmp(r, "eq8")) s->sigma_rule = DPO_SIGMA_EQ8;
  else if (!strcmp(r, "rdp")) s->sigma_rule = DPO_SIGMA_RDP;
  else if (!strcmp(r, "ledger")) s->sigma_rule = DPO_SIGMA_LEDGER;
  else
    return dpo_err(DPO_EINVAL, "%s: privacy.sigma_rule = '%s': expected eq8 (Xu et al. 2020, "
                   "Thm 1), rdp or ledger", dpo_privacy_spec_origin(s, DPO_SPEC_SIGMA_RULE), r);
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

/* the clip: l1:C / l2:C, or for dpopt admm a number C (its L2 clip) */
static int dpo__spec_clip(const dpo_config_t *cfg, dpo_spec_for_t what, dpo_privacy_spec_t *s) {
  int has = 0, rc;
  if (what != DPO_SPEC_FOR_ADMM) return dpo_run_parse_clip(cfg, &s->clip, &has);
  double C = NAN;
  if ((rc = dpo_config_get_double(cfg, "privacy.clip", NAN, &C))) return rc;
  if (dpo_privacy_spec_given(s, DPO_SPEC_CLIP)) s->clip = (dpo_clip_t){DPO_CLIP_L2, C};
  return DPO_OK;
}

static int dpo__spec_read(const dpo_config_t *cfg, dpo_spec_for_t what, dpo_privacy_spec_t *s) {
  const unsigned m = dpo__spec_mask(what);
  int rc = DPO_OK;
  for (dpo_spec_key_t k = 0; k < DPO_SPEC_NKEYS; k++)
    if (m & DPO__K(k) && dpo_config_get(cfg, dpo_privacy_spec_key(k)))
      dpo_privacy_spec_set(s, k, dpo_config_origin(cfg, dpo_privacy_spec_key(k)));
#define DPO__RD(k, call) \
  if (!rc && (m & DPO__K(k))) rc = (call)
  DPO__RD(DPO_SPEC_EPS, dpo_config_get_double(cfg, "privacy.eps", NAN, &s->eps));
  DPO__RD(DPO_SPEC_DELTA, dpo_config_get_double(cfg, "privacy.delta", 0.0, &s->delta));
  DPO__RD(DPO_SPEC_CLIP, dpo__spec_clip(cfg, what, s));
  DPO__RD(DPO_SPEC_PUBLIC_N, dpo_config_get_int(cfg, "privacy.public_n", -1, &s->public_n));
  DPO__RD(DPO_SPEC_COUNT_EPS, dpo_config_get_double(cfg, "privacy.count_eps", NAN, &s->count_eps));
  DPO__RD(DPO_SPEC_COLLUDE, dpo_config_get_int(cfg, "privacy.collude", -1, &s->collude));
  DPO__RD(DPO_SPEC_TRUST_COORDINATOR,
          dpo_config_get_bool(cfg, "privacy.trust_coordinator", 0, &s->trust_coordinator));
  DPO__RD(DPO_SPEC_MU, dpo_config_get_double(cfg, "privacy.mu", 0.5, &s->mu));
  DPO__RD(DPO_SPEC_SIGMA, dpo_config_get_double(cfg, "privacy.sigma", 0.0, &s->sigma));
  DPO__RD(DPO_SPEC_JOURNAL, dpo_config_get_str(cfg, "privacy.journal", NULL, &s->journal));
  DPO__RD(DPO_SPEC_JOURNAL_KEY,
          dpo_config_get_str(cfg, "privacy.journal_key", NULL, &s->journal_key));
  DPO__RD(DPO_SPEC_STORE, dpo_config_get_str(cfg, "privacy.store", NULL, &s->store));
#undef DPO__RD
  if (rc || (rc = dpo__spec_names(cfg, m, s))) return rc;
  /* the secagg-only settings (dpo_parties_from_config checks their values against the parties) */
  for (dpo_spec_key_t k = DPO_SPEC_COLLUDE; k <= DPO_SPEC_TRUST_COORDINATOR; k++)
    if (dpo_privacy_spec_given(s, k) && s->trust != DPO_TRUST_SECAGG)
      return dpo_err(DPO_EINVAL, "%s: %s applies to privacy.trust = secagg",
                     dpo_privacy_spec_origin(s, k), dpo_privacy_spec_key(k));
  return DPO_OK;
}

int dpo_privacy_spec_read(const dpo_config_t *cfg, dpo_spec_for_t what, dpo_privacy_spec_t *s) {
  dpo_privacy_spec_default(s);
  if (!cfg) return DPO_OK;
  int rc = dpo__spec_read(cfg, what, s);
  if (rc) dpo_privacy_spec_default(s);
  return rc;
}

int dpo_privacy_spec_from_config(const dpo_config_t *cfg, dpo_privacy_spec_t *s) {
  return dpo_privacy_spec_read(cfg, DPO_SPEC_FOR_TRAIN, s);
}
