/* Multi-party side of a run (private to src/run/; see run_parties.c). */
#ifndef DPO_RUN_PARTIES_H
#define DPO_RUN_PARTIES_H

#include <json-c/json.h>
#include <stdio.h>

#include "dpopt/config.h"
#include "dpopt/comm.h"
#include "dpopt/data.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/spec.h"

typedef struct dpo__run_parties dpo__run_parties_t;
struct dpo_ledger;

/* Collective: parse the party table and trust mode; local/shares: this rank's own noise
 * stream (rank-specific stream id; seeded with run.seed when given).  Secagg: each party's
 * journal-keeping rank checks its party's own run directory (party.K.out) for the run, new or
 * resumed (resuming), writing nothing. */
int dpo__run_parties_setup(MPI_Comm comm, const dpo_config_t *cfg,
                           const dpo_privacy_spec_t *spec, int is_private, int resuming,
                           dpo__run_parties_t **out);
/* Collective: load the training data: each party's own file over its ranks (parties.data /
 * party.K.data), or `path` split over all ranks. */
int dpo__run_parties_load(dpo__run_parties_t *tp, MPI_Comm comm, const char *path,
                          const dpo_load_opts_t *lo, dpo_shard_t **train);
/* Collective: hand the table to the oracle (rank 0), the noise stream to the oracle (every
 * rank), open the party accounts in the ledger (rank 0).  trace: rank 0's trace file.
 * Under secagg, local and shares the parties agree on the plan and every rank but 0 builds its
 * party's guard; each party's first rank other than 0 journals its own account in its party's
 * own run directory, party.K.out/ledger.partyK.jsonl (party 0: run_dir's by default; reopened
 * when resuming).  run_id: the run's id (dpo__run_priv_run_id_of), part of the agreed plan and
 * recorded by every new party journal; NULL: none.  gaussian: the algorithm's noise under
 * local / shares (1: Gaussian, the SCO family; 0: Laplace, the DP-GD family). */
int dpo__run_parties_attach(dpo__run_parties_t *tp, MPI_Comm comm, dpo_oracle_t *oracle,
                            struct dpo_ledger *ledger, FILE *trace, const char *run_dir,
                            int resuming, const char *run_id, int gaussian);
/* 1 when the coordinator must not receive exact training-data sums (local / shares): the
 * non-private training diagnostics are then skipped. */
/* Not collective: the load options of a private run (dpo_load_opts_private) on `path`, or on
 * every party's file, which must declare the same width. */
int dpo__run_parties_schema(const dpo__run_parties_t *tp, const char *path, dpo_load_opts_t *lo);
int dpo__run_parties_hide_train(const dpo__run_parties_t *tp);
const dpo_parties_t *dpo__run_parties_table(const dpo__run_parties_t *tp);
/* Not collective: under secagg, on ranks other than 0, what this rank's party guard has charged
 * its own account, in parts (1); 0 elsewhere (no guard). */
int dpo__run_parties_own_parts(const dpo__run_parties_t *tp, dpo_ledger_parts_t *own);
/* Rank 0: privacy.trust + privacy.trust_protects, and a "parties" block. */
void dpo__run_parties_summary(const dpo__run_parties_t *tp, struct dpo_ledger *ledger,
                              json_object *sum);
void dpo__run_parties_print(const dpo__run_parties_t *tp, struct dpo_ledger *ledger, FILE *out);
void dpo__run_parties_destroy(dpo__run_parties_t *tp);

#endif
