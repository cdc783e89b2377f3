/* The privacy side of `dpopt train` (private to src/cli/): secure or seeded noise stream,
 * per-example clipping, the ledger on rank 0, and the labels every output carries. */
#ifndef DPO_TRAIN_PRIV_H
#define DPO_TRAIN_PRIV_H

#include <json-c/json.h>
#include <stdio.h>

#include "cli/cli.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"

typedef struct dpo_train_priv dpo_train_priv_t;

/* Collective: read privacy.* and run.seed, create rank 0's stream, check that a private
 * algorithm has a budget and a public sensitivity source (clipping or a declared bound). */
int dpo_train_priv_setup(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg, const dpo_algo_t *algo,
                         const dpo_shard_t *train, const dpo_model_t *model,
                         dpo_train_priv_t **out);
/* Collective: open rank 0's ledger journal in run_dir (private algorithms). */
int dpo_train_priv_open_ledger(dpo_train_priv_t *p, const char *run_dir);
/* Collective: --resume, reopen the existing journal in run_dir (dpo_ledger_open, resume = 1). */
int dpo_train_priv_reopen_ledger(dpo_train_priv_t *p, const char *run_dir);
const dpo_clip_t *dpo_train_priv_clip(const dpo_train_priv_t *p);
/* privacy.clip = none | l1:C | l2:C (C > 0) into *c; *has = 0 for none (also dpopt audit). */
int dpo_train_parse_clip(const dpo_config_t *cfg, dpo_clip_t *c, int *has);
dpo_rng_t *dpo_train_priv_rng(dpo_train_priv_t *p);
struct dpo_ledger *dpo_train_priv_ledger(dpo_train_priv_t *p);
/* Let the trace's eps_spent column read the ledger. */
void dpo_train_priv_attach(dpo_train_priv_t *p, dpo_solver_t *s);
/* "# ..." lines at the top of trace.csv saying what is private and what is not. */
int dpo_train_priv_trace_note(const dpo_train_priv_t *p, FILE *trace);
/* One line: "PRIVATE (eps=...)", "NOT PRIVATE: seeded" or "NOT PRIVATE: non-private algorithm". */
const char *dpo_train_priv_label(const dpo_train_priv_t *p);
void dpo_train_priv_summary(const dpo_train_priv_t *p, json_object *sum);
void dpo_train_priv_print(const dpo_train_priv_t *p, FILE *out);
void dpo_train_priv_destroy(dpo_train_priv_t *p);

#endif
