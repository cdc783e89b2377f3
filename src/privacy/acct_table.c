/* The accountant table: privacy.accountant = NAME picks one of these ops (privacy_int.h).
 * It sits above the accountants it lists (accountant.c, rdp.c, acct_auto.c), so none of them
 * has to call back up to find another; a new kind is one file plus one entry here. */
#include "privacy_int.h"

#include <string.h>

static const dpo__acct_ops_t *const dpo__acct_table[] = {&dpo__acct_basic, &dpo__acct_rdp,
                                                         &dpo__acct_auto, &dpo__acct_pld, NULL};

const dpo__acct_ops_t *dpo__acct_find(const char *name) {
  for (int i = 0; name && dpo__acct_table[i]; i++)
    if (strcmp(name, dpo__acct_table[i]->name) == 0) return dpo__acct_table[i];
  return NULL;
}
