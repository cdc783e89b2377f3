/* Unit test of dpo_party_store_journal (src/privacy/guard.c; doc/design.md, "Budget stores",
 * Resume): the journal a party's budget store is settled against besides the coordinator's
 * view when a secagg run resumes.  The coordinator's own party (first rank 0) has none and
 * takes the view (it is in every coalition the guarantee counts); every other party must
 * name its own run directory, and one that does not is refused naming it: before this check
 * such a party's store was settled on the coordinator's word alone. */
#include "dpopt/parties.h"
#include "dpopt/status.h"
#include "privacy/guard.h"

#include <criterion/criterion.h>
#include <string.h>

/* three parties over ranks {0, 1}, {2}, {3} with the given run directories */
static dpo_parties_t table(char *out0, char *out1, char *out2) {
  static int rank_party[4] = {0, 0, 1, 2}, first[3] = {0, 2, 3}, nranks_of[3] = {2, 1, 1};
  static char *out[3];
  out[0] = out0, out[1] = out1, out[2] = out2;
  dpo_parties_t p;
  memset(&p, 0, sizeof p);
  p.count = 3, p.nranks = 4, p.rank_party = rank_party, p.first_rank = first;
  p.nranks_of = nranks_of, p.out = out, p.trust = DPO_TRUST_SECAGG, p.collude = 1;
  return p;
}

Test(store_journal, own_directories) {
  dpo_parties_t p = table(NULL, "runs/p1", "runs/p2");
  char j[64];
  cr_assert_eq(dpo_party_store_journal(&p, 1, j, sizeof j), DPO_OK);
  cr_assert_str_eq(j, "runs/p1/ledger.party1.jsonl");
  cr_assert_eq(dpo_party_store_journal(&p, 2, j, sizeof j), DPO_OK);
  cr_assert_str_eq(j, "runs/p2/ledger.party2.jsonl");
}

Test(store_journal, coordinators_party_takes_the_view) {
  /* party 0's store is opened on rank 0, the coordinator's: its directory (its guard's, on
   * rank 1) does not change whose word the store takes */
  char j[64] = "x";
  dpo_parties_t p = table(NULL, "a", "b");
  cr_assert_eq(dpo_party_store_journal(&p, 0, j, sizeof j), DPO_OK);
  cr_assert_str_eq(j, "");
  p = table("runs/p0", "a", "b");
  strcpy(j, "x");
  cr_assert_eq(dpo_party_store_journal(&p, 0, j, sizeof j), DPO_OK);
  cr_assert_str_eq(j, "");
}

Test(store_journal, party_without_a_journal_refused) {
  char j[64];
  dpo_parties_t p = table(NULL, "runs/p1", NULL);
  cr_assert_eq(dpo_party_store_journal(&p, 2, j, sizeof j), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "party 2 keeps a budget store but no journal of its own"),
            "message: %s", dpo_errmsg());
  cr_assert(strstr(dpo_errmsg(), "nothing was written"), "message: %s", dpo_errmsg());
  p = table(NULL, NULL, "runs/p2");
  cr_assert_eq(dpo_party_store_journal(&p, 1, j, sizeof j), DPO_EINVAL);
  cr_assert(strstr(dpo_errmsg(), "party 1 "), "message: %s", dpo_errmsg());
  /* a path that does not fit is refused, never cut */
  p = table(NULL, "a-long-directory-name-that-will-not-fit-in-the-buffer", "b");
  char small[32];
  cr_assert_eq(dpo_party_store_journal(&p, 1, small, sizeof small), DPO_EINVAL);
}
