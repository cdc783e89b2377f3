/* dpopt budget stores: one privacy budget per data set, spent by every private run on it.
 *
 * A store is a directory the data holder keeps beside the data.  Its one file, records.jsonl,
 * holds the budget, the registered data files (a keyed content hash each: the same bytes under
 * another path are the same data set) and one line per reservation or settlement of a run, every
 * line chained with the journal key (the run journal's keyed BLAKE2b chain, doc/design.md "Budget
 * stores").  A private run naming a store (privacy.store) reserves its whole declared budget
 * (eps, delta) before the data are loaded and before its first release; at its end the
 * reservation is settled to what its ledger composed (the run's parts: pure, (eps, delta) and RDP
 * curve), and the store composes the runs' parts as the "auto" accountant composes releases.
 * A run that does not fit is refused (DPO_EBUDGET) and nothing is written.  Writers hold an
 * exclusive flock on records.jsonl; every line is one write(2), fsynced.
 *
 * Not collective: rank 0 calls these (the run API agrees the status). */
#ifndef DPOPT_BUDGET_H
#define DPOPT_BUDGET_H

#include <stdio.h>

#include "dpopt/privacy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpo_budget dpo_budget_t;

/* Create store directory `store` (new, or empty) with budget (eps, delta) and register files.
 * The key: key_file, else $DPOPT_JOURNAL_KEY, else the default journal key (created if
 * missing, as for a journal).  Nothing is left behind on failure. */
int dpo_budget_init(const char *store, double eps, double delta, const char *const *files,
                    int nfiles, const char *key_file);
/* Register more data files in a store (a file already registered is reported, not added). */
int dpo_budget_add(const char *store, const char *const *files, int nfiles,
                   const char *key_file, FILE *out);
/* Print budget, spent (composed), remaining, registered files and one line per run. */
int dpo_budget_show(const char *store, const char *key_file, FILE *out);

/* The store's budget and spent (eps, delta), composed (what show prints); any may be NULL. */
int dpo_budget_spent(const char *store, const char *key_file, double *budget_eps,
                     double *budget_delta, double *eps, double *delta);

/* A run's handle on a store: the key loaded (never created), the files it will read hashed
 * and each checked to be registered (DPO_EINVAL naming the file and how to register it). */
int dpo_budget_open(const char *store, const char *key_file, const char *const *files,
                    int nfiles, dpo_budget_t **B);
/* Would a run of budget (eps, delta) fit?  With dry = 1 nothing is written (the check made
 * before a run claims anything); with dry = 0 the reservation is appended under the lock
 * (run_id: dpo_ledger_run_id; a run id whose reservation is still open is not charged again,
 * so a resumed run never pays twice).  DPO_EBUDGET if it does not fit.  A settled run resumed
 * (its journal reopened) passes its ledger's parts now: a journal that holds less than the
 * store settled for the run was rolled back, and is refused (DPO_EFORMAT); otherwise its whole
 * budget is reserved again in place of the settlement (dry = 1: only checked, as above). */
int dpo_budget_reserve(dpo_budget_t *B, const char *run_id, double eps, double delta,
                       const char *what, int dry);
int dpo_budget_reserve_resumed(dpo_budget_t *B, const char *run_id, double eps, double delta,
                               const char *what, const dpo_ledger_parts_t *now, int dry);
/* Take the store's exclusive lock now and keep it until the next dpo_budget_reserve* with
 * dry = 0 (or dpo_budget_close): a run checks (dry = 1) and reserves under one lock, so no other
 * run can reserve in between and a run refused at its reservation has written nothing. */
int dpo_budget_lock(dpo_budget_t *B);
/* Settle run_id's reservation to the parts of its ledger (NULL: nothing was released). */
int dpo_budget_settle(dpo_budget_t *B, const char *run_id, const dpo_ledger_parts_t *p);
void dpo_budget_close(dpo_budget_t *B);
/* A run's journal head in the store (STORE/head-RUNID): the journal's line count and chain
 * tag, keyed, rewritten in place (pwrite + fdatasync) after every journal line, before the
 * release it charges (dpo_ledger_on_append), so a journal cut back at a line boundary is
 * refused on resume.  read: *lines = -1 if the run has no head yet; DPO_EFORMAT if the head
 * fails its keyed check.  write has dpo_ledger_on_append's signature (arg: the head). */
typedef struct dpo_budget_head dpo_budget_head_t;
int dpo_budget_head_open(const char *store, const char *key_file, const char *run_id,
                         dpo_budget_head_t **H);
int dpo_budget_head_read(dpo_budget_head_t *H, int64_t *lines, unsigned char tag[32]);
int dpo_budget_head_write(void *H, int64_t lines, const unsigned char tag[32]);
void dpo_budget_head_close(dpo_budget_head_t *H);
/* a = the per-part (and per-order) larger of a and b: parts that bound both accounts (each part
 * of the composition only grows), so valid when either is.  DPO_EINVAL if the order grids
 * differ. */
int dpo_budget_parts_max(dpo_ledger_parts_t *a, const dpo_ledger_parts_t *b);

#ifdef __cplusplus
}
#endif
#endif
