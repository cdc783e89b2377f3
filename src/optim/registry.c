/* The algorithm table: one line per algorithm (its dpo_algo_t lives in its own file). */
#include <string.h>

#include "optim/algos.h"

static const dpo_algo_t *const dpo__algos[] = {
    &dpo__algo_gd,
    &dpo__algo_hb,
    &dpo__algo_nag,
    &dpo__algo_masg,
    &dpo__algo_lbfgs,
    NULL,
};

const dpo_algo_t *dpo_algo_find(const char *name) {
  if (!name) return NULL;
  for (const dpo_algo_t *const *a = dpo__algos; *a; a++)
    if (strcmp((*a)->name, name) == 0) return *a;
  return NULL;
}

const dpo_algo_t *const *dpo_algo_list(void) { return dpo__algos; }
