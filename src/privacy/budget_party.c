/* A party's own budget store in a multi-party run (doc/design.md, "Budget stores", "Per-party
 * stores"): the check every party's first rank makes before anything is loaded or claimed,
 * shared by dpopt train and tune (src/run) and dpopt admm (src/admm), so the three keep one
 * rule and one message. */
#include "budget_run.h"

#include <stdio.h>
#include <string.h>

#include "dpopt/budget.h"
#include "dpopt/status.h"

int dpo__budget_party_refused(int K, int rc, const char *what) {
  char why[600];
  if (rc == DPO_EBUDGET)
    /* what the store has left is the party's own business: not even its own rank prints it,
     * since mpirun forwards every rank's stderr to whoever launched the job */
    return dpo_err(rc, "party %d: its budget store refused the %s (the party's budget for it "
                   "does not fit what its store has left; the party sees its account with "
                   "dpopt budget show on its store); nothing was written", K, what);
  if (rc) {
    snprintf(why, sizeof why, "%s", dpo_errmsg());
    return dpo_err(rc, "party %d: its budget store refused the %s: %s", K, what, why);
  }
  return DPO_OK;
}

int dpo__budget_party_check(int K, const char *data, const char *store, const char *key_file,
                            double eps, double delta, const char *kind, int resuming,
                            dpo_budget_t **bud) {
  const char *files[1] = {data};
  int rc;
  if (!data)
    rc = dpo_err(DPO_EINVAL, "a party budget store needs the party's own file (parties.data or "
                 "party.%d.data)", K);
  else if (!(rc = dpo_budget_open(store, key_file, files, 1, bud)) &&
           !(rc = dpo_budget_lock(*bud)) && /* held until the reservation */
           !resuming) /* a resumed run's fit is checked with its id (its record may be open) */
    rc = dpo_budget_reserve(*bud, NULL, eps, delta, kind, 1);
  return dpo__budget_party_refused(K, rc, strcmp(kind, "tune") ? "run" : "tune");
}
