/* A private run's side of its data set's budget store, shared by dpopt train (src/run) and
 * dpopt admm (src/admm): the reservation once the run's journal is open, a resumed run's
 * included, and the journal head that follows it (budget_head.c); a party's own store's
 * check in a multi-party run (budget_party.c). */
#ifndef DPO_BUDGET_RUN_H
#define DPO_BUDGET_RUN_H

#include "dpopt/budget.h"
#include "dpopt/privacy.h"

/* Rank 0, once the ledger L is open on `journal` (reopened when resumed): the run's whole
 * budget reserved in store B (its handle on `store`, locked) under the journal's id (run_id
 * out).  Resumed: the journal must reach the head the store keeps for the run (a journal cut
 * back at a line boundary keeps a valid chain) and what it holds now is never less than the
 * store settled (dpo_budget_reserve_resumed: an open reservation is kept, a settled one is
 * reserved whole again).  Then the head follows every journal line; *head is the caller's, to
 * close after the ledger.  run_id[0] = 0 when nothing was reserved (else the reservation
 * stands, to settle, even when the head then fails). */
int dpo__budget_run_reserve(dpo_budget_t *B, const char *store, const char *key_file,
                            dpo_ledger_t *L, const char *journal, double eps, double delta,
                            const char *what, int resumed, char run_id[65],
                            dpo_budget_head_t **head);

/* Not collective, party K's first rank in a multi-party run (budget_party.c): open the party's
 * own store (its file `data` registered and unchanged), take the store's lock (kept until the
 * reservation) and, unless resuming (the resumed run's record is found by its id at the
 * reservation), check that (eps, delta) fits, writing nothing; kind is the record's ("train",
 * "tune", "admm").  A refusal names party K, never what its store has left.  *bud is set once
 * opened (close it on failure too). */
int dpo__budget_party_check(int K, const char *data, const char *store, const char *key_file,
                            double eps, double delta, const char *kind, int resuming,
                            dpo_budget_t **bud);

/* Not collective, party K's first rank: a refusal rc of its store for the `what` ("run",
 * "resumed run", "tune") as the error every rank may see, naming party K and never what its
 * store has left; DPO_EBUDGET's full account (the store, the amounts) is printed on this rank
 * alone.  DPO_OK stays DPO_OK. */
int dpo__budget_party_refused(int K, int rc, const char *what);

#endif
