/* The privacy side of a run (private to src/run/): secure or seeded noise stream,
 * per-example clipping, the ledger on rank 0, and the labels every output carries. */
#ifndef DPO_RUN_PRIV_H
#define DPO_RUN_PRIV_H

#include <json-c/json.h>
#include <stdio.h>

#include "dpopt/budget.h"
#include "dpopt/config.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/parties.h"
#include "dpopt/run.h"
#include "dpopt/spec.h"

typedef struct dpo__run_priv dpo__run_priv_t;

/* Collective: from the run's privacy specification (spec, borrowed for the run's life),
 * run.seed and the journal and store settings, create rank 0's stream, check that a private
 * algorithm has a budget and a public sensitivity source (clipping or a declared bound). */
int dpo__run_priv_setup(MPI_Comm comm, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                        const dpo_algo_t *algo, const dpo_shard_t *train,
                        const dpo_model_t *model, dpo__run_priv_t **out);
/* Collective, before the run directory is claimed: with privacy.store, check that the files
 * the run reads (train, test: may be NULL) are registered in the store and (unless resuming)
 * that the run's budget fits what is left; writes nothing.  The reservation itself is made
 * when the journal is opened (below), under the run's id. */
int dpo__run_priv_store_check(dpo__run_priv_t *p, const char *train, const char *test,
                              int resuming);
/* Collective, multi-party runs whose parties name their own budget stores: each party's first
 * rank opens its party's store (the party's file registered and unchanged) and checks, under
 * the store's lock, that the party's budget fits (resuming: at the reservation, under the
 * run's id, against what the journals hold); writes nothing.  A refusal is agreed and
 * names the party, not what its store has left.  pt is borrowed for the run's life. */
int dpo__run_priv_party_check(dpo__run_priv_t *p, const dpo_parties_t *pt, int resuming);
/* Before the run directory is claimed (rank 0, where the journal opens): can the journal be
 * keyed?  Writes nothing.  A run that is not private has no journal. */
int dpo__run_priv_key_check(const dpo__run_priv_t *p, int resume);
/* Collective: open rank 0's ledger journal in run_dir (private algorithms), a new one, or with
 * resume (--resume) the existing one, every charge in it still spent; then the budget store's
 * reservation. */
int dpo__run_priv_open_ledger(dpo__run_priv_t *p, const char *run_dir, int resume);
const dpo_clip_t *dpo__run_priv_clip(const dpo__run_priv_t *p);
dpo_rng_t *dpo__run_priv_rng(dpo__run_priv_t *p);
struct dpo_ledger *dpo__run_priv_ledger(dpo__run_priv_t *p);
/* 1: a private run under add-remove neighbours, whose exact row count is itself private
 * (printed only as a labelled non-private diagnostic, released nowhere). */
int dpo__run_priv_n_private(const dpo__run_priv_t *p);
/* Let the trace's eps_spent column read the ledger. */
void dpo__run_priv_attach(dpo__run_priv_t *p, dpo_solver_t *s);
/* "# ..." lines at the top of trace.csv saying what is private and what is not. */
int dpo__run_priv_trace_note(const dpo__run_priv_t *p, FILE *trace);
/* One line: "PRIVATE (eps=...)", "NOT PRIVATE: seeded" or "NOT PRIVATE: non-private algorithm". */
const char *dpo__run_priv_label(const dpo__run_priv_t *p);
/* A multi-party run's id once the journal opened (secagg, or party budget stores): 64 hex
 * digits no party chose (dpo_secagg_run_id), or, resumed, the run the journals record; NULL
 * for other runs. */
const char *dpo__run_priv_run_id_of(const dpo__run_priv_t *p);
/* 1: a private algorithm with secure (unseeded) noise: the outputs carry the guarantee. */
int dpo__run_priv_guaranteed(const dpo__run_priv_t *p);
void dpo__run_priv_summary(const dpo__run_priv_t *p, json_object *sum);
/* The privacy lines of the printed summary: the privacy setting, and with verbose the
 * ledger's spent totals with the accountant, its bound, the relation and the journal. */
void dpo__run_priv_print(const dpo__run_priv_t *p, FILE *out, int verbose);
/* Rank 0, not collective: after the last release, settle the budget store's reservation to
 * what the ledger composed (a warning if that fails: the reservation then stays whole). */
void dpo__run_priv_settle(dpo__run_priv_t *p);
/* Collective, after the last release: rank 0 sends each party's first rank the parts of what
 * the ledger charged that party (dpo_ledger_party_parts), which settles its store's
 * reservation to them, each part and order at least own's, the party's own account under
 * secagg (NULL: none).  A run that never gets here leaves every party's reservation whole. */
void dpo__run_priv_settle_parties(dpo__run_priv_t *p, const dpo_ledger_parts_t *own);
void dpo__run_priv_destroy(dpo__run_priv_t *p);

#endif
