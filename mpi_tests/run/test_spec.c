/* The privacy specification read from a config (dpopt/spec.h, src/run/run_spec.c):
 *  - every setting lands in its field, with its given bit and origin; the defaults otherwise;
 *  - names ignore case and come from the one accountant table (dpo_acct_name round trip);
 *  - a bad name or value is refused naming the key and where it came from, and leaves the
 *    defaults;
 *  - each command reads only its keys: a key dpopt admm does not use stays unread (so
 *    dpo_config_check_known refuses it), and admm's clip is a number;
 *  - the secagg-only settings are refused under another trust mode. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "dpopt/config.h"
#include "dpopt/spec.h"
#include "dpopt/status.h"

static dpo_config_t *cfg_of(const char *const *kv) {
  dpo_config_t *c = NULL;
  cr_assert_eq(dpo_config_create(&c), DPO_OK);
  for (; kv && kv[0]; kv += 2) cr_assert_eq(dpo_config_set(c, kv[0], kv[1], "t.ini:7"), DPO_OK);
  return c;
}

Test(spec, defaults_without_settings) {
  dpo_config_t *c = cfg_of(NULL);
  dpo_privacy_spec_t s;
  cr_assert_eq(dpo_privacy_spec_from_config(c, &s), DPO_OK);
  cr_assert(isnan(s.eps) && s.delta == 0 && isnan(s.count_eps));
  cr_assert(s.rel == DPO_NEIGHBOURS_REPLACE_ONE && s.accountant == DPO_ACCT_PLD);
  cr_assert(s.trust == DPO_TRUST_CENTRAL && s.calibrate == DPO_CALIBRATE_LEDGER);
  cr_assert(s.clip.norm == DPO_CLIP_NONE && s.public_n == -1 && s.collude == -1);
  cr_assert_eq(s.given, 0u);
  cr_assert_str_eq(dpo_privacy_spec_origin(&s, DPO_SPEC_EPS), "privacy.eps");
  dpo_config_destroy(c);
}

Test(spec, every_setting_with_its_origin) {
  const char *kv[] = {"privacy.eps", "0.5", "privacy.delta", "1e-6", "privacy.neighbours",
                      "Add-Remove", "privacy.accountant", "RDP", "privacy.trust", "secagg",
                      "privacy.calibrate", "basic", "privacy.clip", "L2:2.5", "privacy.public_n",
                      "1000", "privacy.count_eps", "0.01", "privacy.on_party_exhausted", "drop",
                      "privacy.collude", "0", "privacy.trust_coordinator", "1", NULL};
  dpo_config_t *c = cfg_of(kv);
  dpo_privacy_spec_t s;
  cr_assert_eq(dpo_privacy_spec_from_config(c, &s), DPO_OK, "%s", dpo_errmsg());
  cr_assert(s.eps == 0.5 && s.delta == 1e-6 && s.count_eps == 0.01 && s.public_n == 1000);
  cr_assert(s.rel == DPO_NEIGHBOURS_ADD_REMOVE && s.accountant == DPO_ACCT_RDP);
  cr_assert(s.trust == DPO_TRUST_SECAGG && s.calibrate == DPO_CALIBRATE_BASIC);
  cr_assert(s.clip.norm == DPO_CLIP_L2 && s.clip.C == 2.5);
  cr_assert(s.on_exhausted == DPO_EXHAUST_DROP && s.collude == 0 && s.trust_coordinator == 1);
  for (dpo_spec_key_t k = 0; k <= DPO_SPEC_TRUST_COORDINATOR; k++) {
    cr_assert(dpo_privacy_spec_given(&s, k), "%s not given", dpo_privacy_spec_key(k));
    cr_assert_str_eq(dpo_privacy_spec_origin(&s, k), "t.ini:7");
  }
  /* the train reader leaves dpopt admm's keys alone */
  cr_assert(!dpo_privacy_spec_given(&s, DPO_SPEC_SIGMA_RULE) && s.mu == 0.5 && s.sigma == 0);
  dpo_config_destroy(c);
}

Test(spec, accountant_names_round_trip) {
  const dpo_acct_t all[] = {DPO_ACCT_PLD, DPO_ACCT_AUTO, DPO_ACCT_BASIC, DPO_ACCT_RDP};
  const char *const names[] = {"pld", "auto", "basic", "rdp"};
  for (int i = 0; i < 4; i++) {
    dpo_acct_t a;
    cr_assert_str_eq(dpo_acct_name(all[i]), names[i]);
    cr_assert_eq(dpo_acct_parse(names[i], &a), DPO_OK);
    cr_assert_eq(a, all[i]);
  }
  dpo_acct_t a = DPO_ACCT_RDP;
  cr_assert_eq(dpo_acct_parse(NULL, &a), DPO_OK);
  cr_assert_eq(a, DPO_ACCT_PLD);
  cr_assert_neq(dpo_acct_parse("renyi", &a), DPO_OK);
  cr_assert_null(dpo_acct_name((dpo_acct_t)9));
}

/* one bad setting: refused, the message names the key, the value and the origin */
static void refused(const char *key, const char *value, const char *why) {
  const char *kv[] = {key, value, NULL};
  dpo_config_t *c = cfg_of(kv);
  dpo_privacy_spec_t s;
  cr_assert_eq(dpo_privacy_spec_from_config(c, &s), DPO_EINVAL, "%s = %s accepted", key, value);
  const char *m = dpo_errmsg();
  cr_assert(strstr(m, "t.ini:7") && strstr(m, key), "%s = %s: message '%s'", key, value, m);
  cr_assert(why == NULL || strstr(m, why), "%s = %s: message '%s'", key, value, m);
  cr_assert(isnan(s.eps) && s.given == 0, "the defaults after a refusal");
  dpo_config_destroy(c);
}

Test(spec, bad_settings_name_key_and_origin) {
  refused("privacy.accountant", "renyi", "expected pld");
  refused("privacy.neighbours", "swap-one", "replace-one or add-remove");
  refused("privacy.trust", "somewhat", "central, local, shares or secagg");
  refused("privacy.calibrate", "exact", "ledger");
  refused("privacy.on_party_exhausted", "pause", "stop or drop");
  refused("privacy.clip", "l3:1", "l1 or l2");
  refused("privacy.clip", "l2:-1", "C > 0");
  refused("privacy.eps", "one", NULL);
  /* secagg-only settings under central trust */
  refused("privacy.collude", "1", "applies to privacy.trust = secagg");
  refused("privacy.trust_coordinator", "1", "applies to privacy.trust = secagg");
}

Test(spec, admm_reads_its_own_keys_only) {
  const char *kv[] = {"privacy.eps", "1", "privacy.clip", "0.5", "privacy.sigma_rule", "rdp",
                      "privacy.mu", "0.3", "privacy.journal", "j.jsonl",
                      "privacy.neighbours", "add-remove", NULL};
  dpo_config_t *c = cfg_of(kv);
  dpo_privacy_spec_t s;
  cr_assert_eq(dpo_privacy_spec_read(c, DPO_SPEC_FOR_ADMM, &s), DPO_OK, "%s", dpo_errmsg());
  cr_assert(s.clip.norm == DPO_CLIP_L2 && s.clip.C == 0.5, "admm's clip is a number: L2");
  cr_assert(s.sigma_rule == DPO_SIGMA_RDP && s.mu == 0.3 && !strcmp(s.journal, "j.jsonl"));
  cr_assert_str_eq(dpo_sigma_rule_name(s.sigma_rule), "rdp");
  /* dpopt admm has no relation setting: the key stays unread, and is refused as such */
  cr_assert(!dpo_privacy_spec_given(&s, DPO_SPEC_NEIGHBOURS) && s.rel == DPO_NEIGHBOURS_REPLACE_ONE);
  cr_assert(!dpo_config_is_used(c, "privacy.neighbours"));
  cr_assert_eq(dpo_config_check_known(c, "dpopt admm"), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "privacy.neighbours"), "%s", dpo_errmsg());
  dpo_config_destroy(c);
  /* the train reader refuses admm's number clip */
  const char *kv2[] = {"privacy.clip", "0.5", NULL};
  c = cfg_of(kv2);
  cr_assert_eq(dpo_privacy_spec_from_config(c, &s), DPO_EINVAL);
  dpo_config_destroy(c);
}

Test(spec, filled_without_a_config) {
  dpo_privacy_spec_t s;
  dpo_privacy_spec_default(&s);
  s.eps = 2;
  dpo_privacy_spec_set(&s, DPO_SPEC_EPS, NULL);
  cr_assert(dpo_privacy_spec_given(&s, DPO_SPEC_EPS) && !dpo_privacy_spec_given(&s, DPO_SPEC_DELTA));
  cr_assert_str_eq(dpo_privacy_spec_origin(&s, DPO_SPEC_EPS), "privacy.eps");
  dpo_privacy_spec_set(&s, DPO_SPEC_DELTA, "python");
  cr_assert_str_eq(dpo_privacy_spec_origin(&s, DPO_SPEC_DELTA), "python");
}
