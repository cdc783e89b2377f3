/* Per-party budget stores of a multi-party dpopt tune (parties.budget_store,
 * party.K.budget_store: doc/design.md, "Per-party stores").  The tune's one charge bounds every
 * party's rows (its ledger has no party accounts), so each party's first rank checks and
 * reserves the tune's whole (eps, delta) in its own store and settles it to the tune ledger's
 * parts; the repetitions never see the keys (they are not runs of their own). */
#ifndef DPO_RUN_TUNE_STORE_H
#define DPO_RUN_TUNE_STORE_H

#include <mpi.h>

#include "dpopt/config.h"
#include "dpopt/privacy.h"

typedef struct dpo__tune_pstore dpo__tune_pstore_t;

/* Collective, before the data are read: each party's first rank opens its store (the party's
 * file registered and unchanged) and checks under the store's lock that (eps, delta) fits;
 * writes nothing.  A refusal is agreed and names the party, not what its store has left.
 * *out = NULL when no party names a store. */
int dpo__tune_pstore_check(MPI_Comm comm, const dpo_config_t *cfg, const char *key_file,
                           double eps, double delta, int seeded, dpo__tune_pstore_t **out);
/* Collective, once the journal is open (L on rank 0): every first rank reserves under the
 * journal's run id, before the charge. */
int dpo__tune_pstore_reserve(dpo__tune_pstore_t *ps, const dpo_ledger_t *L);
/* Collective, at the end (whatever happened): rank 0's ledger parts go to every rank and each
 * reserved party settles to them (no ledger or no parts: the reservations stay whole);
 * frees ps. */
void dpo__tune_pstore_finish(dpo__tune_pstore_t *ps, const dpo_ledger_t *L);
/* 1 for the keys the tune keeps from its repetitions */
int dpo__tune_pstore_key(const char *key);

#endif
