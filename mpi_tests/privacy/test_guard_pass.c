/* Unit test of the party guard across a resume (dpo_guard_admit, src/privacy/guard.c;
 * doc/design.md, "Dropouts", *Why pnsgd does not resume under secagg*): batches of one disjoint
 * pass cost the pass once (parallel composition), but the record of which rows a pass used is
 * the job's own (oracle.c), so a guard that reopens its journal never continues a pass an
 * earlier job began: a batch announced in the same pass after the reopening is charged as a
 * new pass.  Checked against the guard's own totals: two batches of pass 0 cost one; after
 * the reopening a third batch "of pass 0" raises the party's total (one more pass of the
 * same price), where continuing the pass would have left it unchanged. */
#include "dpopt/parties.h"
#include "dpopt/status.h"
#include "privacy/guard.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[] = "/tmp/dpo_guard_passXXXXXX";
static char journal[128], key[128];

static dpo_guard_spec_t spec(int resume) {
  dpo_guard_spec_t s = {3, 1, 1, 4, 8.0, 2.0, 50.0, 1e-5, "rdp", DPO_NEIGHBOURS_REPLACE_ONE, 0,
                        journal, resume, key, NULL};
  return s;
}

/* one announced batch of disjoint pass `pass`, its claim the price of its noise (rounded up) */
static dpo_guard_req_t batch(int64_t pass) {
  const double gamma = 0x1p-10, d = 4;
  const uint64_t sigma = 4000;
  double D = (2.0 / gamma + sqrt(d)) * (1 + 1e-9), price = NAN;
  cr_assert_eq(dpo_secagg_eps(D, (double)sigma, 2, 4, &price), DPO_OK);
  dpo_guard_req_t r = {gamma, sigma, 0, 0, 0, price * (1 + 1e-9), pass};
  return r;
}

static double spent(const dpo_guard_t *g, int64_t *releases) {
  double e = NAN, dl = NAN;
  cr_assert_eq(dpo_guard_spent(g, &e, &dl, releases), DPO_OK);
  return e;
}

Test(guard_pass, a_reopened_journal_starts_a_new_pass) {
  cr_assert_not_null(mkdtemp(dir));
  snprintf(journal, sizeof journal, "%s/ledger.party1.jsonl", dir);
  snprintf(key, sizeof key, "%s/journal.key", dir);
  dpo_guard_t *g = NULL;
  dpo_guard_spec_t s = spec(0);
  cr_assert_eq(dpo_guard_create(&s, &g), DPO_OK, "%s", dpo_errmsg());
  dpo_guard_req_t r = batch(0);
  int64_t n = 0;
  cr_assert_eq(dpo_guard_admit(g, &r), DPO_OK, "%s", dpo_errmsg());
  const double one = spent(g, &n);
  cr_assert_eq(dpo_guard_admit(g, &r), DPO_OK, "%s", dpo_errmsg());
  cr_assert(one > 0 && spent(g, &n) == one && n == 2, "one pass of two batches costs one: %g %g",
            one, spent(g, &n));
  dpo_guard_destroy(g);
  /* reopened (a resumed run): the journal's charges stay spent, its pass is not continued */
  s = spec(1);
  cr_assert_eq(dpo_guard_create(&s, &g), DPO_OK, "%s", dpo_errmsg());
  cr_assert(fabs(spent(g, &n) - one) <= 1e-12 * one, "reopened: %g, want %g", spent(g, &n), one);
  cr_assert_eq(dpo_guard_admit(g, &r), DPO_OK, "%s", dpo_errmsg());
  const double two = spent(g, &n);
  cr_assert(two > one * (1 + 1e-6), "a batch of the killed job's pass after the reopening: "
            "total %g, want more than the one pass %g", two, one);
  /* within the new job its own pass is parallel composition again */
  cr_assert_eq(dpo_guard_admit(g, &r), DPO_OK, "%s", dpo_errmsg());
  cr_assert(spent(g, &n) == two, "the new job's pass: %g, want %g", spent(g, &n), two);
  dpo_guard_destroy(g);
  remove(journal);
  remove(key);
  remove(dir);
}
