/* Internals of budget stores (dpopt/budget.h): the runs a store holds and how they compose
 * (budget_compose.c), below the store's file handling (budget_store.c). */
#ifndef DPO_BUDGET_INT_H
#define DPO_BUDGET_INT_H

#include "dpopt/privacy.h"

/* One run's latest record: a reservation (its declared budget, the most its ledger can spend)
 * or a settlement (its ledger's parts, and the ledger's own spent bound as its whole). */
typedef struct {
  char id[65];
  char what[32];
  int settled;
  double eps, delta; /* the run as one (eps, delta) (pure when delta = 0) */
  dpo_ledger_parts_t parts; /* settled only */
} dpo__brun_t;

/* The composition of runs[0..n) (plus *extra, a reservation being checked, if not NULL) at the
 * store's delta D: the smaller of two valid bounds, every run as its whole (eps, delta), or the
 * settled runs by their parts (pure, (eps, delta) and RDP curves composed as the "auto"
 * accountant composes releases) and the reserved ones as wholes.  *how: "parts" or "runs". */
int dpo__budget_total(const dpo__brun_t *runs, int n, const dpo__brun_t *extra, double D,
                      double *eps, double *delta, const char **how);

#endif
