/* The accountant table: privacy.accountant = NAME picks one of these ops (privacy_int.h).
 * It sits above the accountants it lists (accountant.c, rdp.c, acct_auto.c), so none of them
 * has to call back up to find another; a new kind is one file plus one entry here (and one
 * dpo_acct_t).  The one place an accountant's name is parsed: the run, the ledger and the
 * audit all come through dpo_acct_parse / dpo__acct_find. */
#include "privacy_int.h"

#include <string.h>
#include <strings.h>

#include "dpopt/status.h"

/* indexed by dpo_acct_t */
static const dpo__acct_ops_t *const dpo__acct_table[] = {
    [DPO_ACCT_PLD] = &dpo__acct_pld, [DPO_ACCT_AUTO] = &dpo__acct_auto,
    [DPO_ACCT_BASIC] = &dpo__acct_basic, [DPO_ACCT_RDP] = &dpo__acct_rdp};
#define DPO__NACCT ((int)(sizeof dpo__acct_table / sizeof *dpo__acct_table))

const char *dpo_acct_name(dpo_acct_t a) {
  return (int)a >= 0 && (int)a < DPO__NACCT ? dpo__acct_table[a]->name : NULL;
}

int dpo_acct_parse(const char *s, dpo_acct_t *a) {
  if (!s) {
    *a = DPO_ACCT_PLD;
    return DPO_OK;
  }
  for (int i = 0; i < DPO__NACCT; i++)
    if (!strcasecmp(s, dpo__acct_table[i]->name)) {
      *a = (dpo_acct_t)i;
      return DPO_OK;
    }
  return DPO_EINVAL;
}

/* exact names only: the ledger API and the journal's header carry the table's own names */
const dpo__acct_ops_t *dpo__acct_find(const char *name) {
  dpo_acct_t a;
  if (!name || dpo_acct_parse(name, &a) || strcmp(name, dpo__acct_table[a]->name)) return NULL;
  return dpo__acct_table[a];
}
