/* Unit tests of the party table's file keys (src/privacy/parties.c): dpo_parties_per_rank
 * (dpopt admm's table, one party a rank) reads each party's data file, budget store and run
 * directory as dpo_parties_from_config does, with the same checks, and reads no other party
 * key.  Serial; the expected paths are written out by hand. */
#include "dpopt/config.h"
#include "dpopt/parties.h"
#include "dpopt/spec.h"
#include "dpopt/status.h"

#include <criterion/criterion.h>
#include <string.h>

static dpo_config_t *cfg_of(const char *const *kv) {
  dpo_config_t *c = NULL;
  cr_assert_eq(dpo_config_create(&c), DPO_OK);
  for (int i = 0; kv[i]; i += 2) cr_assert_eq(dpo_config_set(c, kv[i], kv[i + 1], "test"), DPO_OK);
  return c;
}

static void str_is(const char *got, const char *want, const char *what) {
  if (!want) cr_assert_null(got, "%s: '%s', want none", what, got);
  else cr_assert(got && !strcmp(got, want), "%s: '%s', want '%s'", what, got ? got : "(none)", want);
}

Test(party_table, per_rank_reads_the_files) {
  static const char *const kv[] = {"parties.data", "d%d", "party.2.data", "x",
                                   "parties.budget_store", "s%d", "parties.out", "o%d",
                                   "party.1.eps", "0.5", NULL};
  dpo_config_t *c = cfg_of(kv);
  dpo_parties_t *p = NULL;
  cr_assert_eq(dpo_parties_per_rank(c, DPO_TRUST_SECAGG, 3, 1.5, 1e-5, &p), DPO_OK, "%s",
               dpo_errmsg());
  cr_assert_eq(p->count, 3);
  for (int k = 0; k < 3; k++) {
    cr_assert(p->rank_party[k] == k && p->first_rank[k] == k && p->nranks_of[k] == 1 &&
              p->name[k] == k && p->dropped_step[k] == -1, "party %d is not rank %d", k, k);
    cr_assert(p->eps[k] == 1.5 && p->delta[k] == 1e-5, "party %d's budget", k);
  }
  str_is(p->data[0], "d0", "data 0");
  str_is(p->data[2], "x", "data 2 (party.2.data over the pattern)");
  str_is(p->store[1], "s1", "store 1");
  str_is(p->out[0], NULL, "out 0 (party 0 is the coordinator's rank alone)");
  str_is(p->out[2], "o2", "out 2");
  /* the table reads no budget key: admm charges each party the run's budget */
  cr_assert(!dpo_config_is_used(c, "party.1.eps"), "party.1.eps was read");
  dpo_parties_destroy(p);
  dpo_config_destroy(c);
}

/* each refusal, for per_rank and for dpo_parties_from_config on the same keys */
static void refused(const char *const *kv, dpo_trust_t tm, const char *why) {
  dpo_config_t *c = cfg_of(kv);
  dpo_privacy_spec_t sp;
  dpo_parties_t *p = NULL;
  cr_assert_eq(dpo_parties_per_rank(c, tm, 3, 1, 0, &p), DPO_EINVAL, "per_rank: not refused (%s)",
               why);
  cr_assert_null(p);
  cr_assert(strstr(dpo_errmsg(), why), "per_rank: '%s', want '%s'", dpo_errmsg(), why);
  dpo_privacy_spec_default(&sp);
  sp.trust = tm;
  sp.eps = 1;
  cr_assert_eq(dpo_parties_from_config(c, &sp, 3, &p), DPO_EINVAL,
               "from_config: not refused (%s)", why);
  cr_assert(strstr(dpo_errmsg(), why), "from_config: '%s', want '%s'", dpo_errmsg(), why);
  dpo_config_destroy(c);
}

Test(party_table, refusals) {
  static const char *const one_store[] = {"parties.data", "d%d", "party.1.budget_store", "s",
                                          NULL};
  refused(one_store, DPO_TRUST_LOCAL, "1 of 3 parties name their own budget_store");
  static const char *const same[] = {"parties.data", "d%d", "parties.budget_store", "s%d",
                                     "party.2.budget_store", "s0", NULL};
  refused(same, DPO_TRUST_LOCAL, "party 2 names a budget store another party names");
  static const char *const nodata[] = {"parties.budget_store", "s%d", NULL};
  refused(nodata, DPO_TRUST_LOCAL, "needs the party's own data file");
  static const char *const central_out[] = {"parties.count", "3", "parties.out", "o%d", NULL};
  refused(central_out, DPO_TRUST_CENTRAL, "not central");
  static const char *const pattern[] = {"parties.data", "d", NULL};
  refused(pattern, DPO_TRUST_LOCAL, "must contain exactly one %d");
}
