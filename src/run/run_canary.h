/* The one-run audit's canaries, scores and bound (run_canary.c), shared by its two modes: a
 * run of dpopt train (run_canary.c, dpo__run_audit1_ops) and a run of dpopt admm's DP-ADMM /
 * DP-AccADMM (run_canary_admm.c, dpo__run_audit1_admm_ops).  Internal to src/run/. */
#ifndef DPO_RUN_CANARY_H
#define DPO_RUN_CANARY_H

#include <stdint.h>

#include "dpopt/data.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/run.h"

struct json_object;

typedef struct {
  int64_t m;
  int bias, add_remove;
  double a;           /* the canary's one value, in column d0 + i (dpo__a1_shape) */
  int32_t d0, dtot;   /* declared features; with the canaries' columns */
  dpo_clip_t clip;
  int has_clip;
  unsigned char *in;  /* S: canary i included (every rank, for the last rank's rows) */
  double *score;      /* rank 0 */
  int64_t nrel;
  int gauss, lap;
  int final_model;    /* hidden state: scored by the final model (dpo_algo_t.final_only, evaluate) */
  double alpha;       /* the bound's confidence is 1 - alpha (audit.alpha) */
  char name[48];      /* the default run directory's stem: audit-ALGO */
  dpo_audit1_result_t res;
} dpo__a1_t;

/* Not collective: audit.canaries, audit.alpha (checked) and audit.json (marked read). */
int dpo__a1_read(const dpo_config_t *cfg, dpo__a1_t *c);
/* The canary's value from the declared row bounds b1 (L1), b2 (L2) (NaN: not declared). */
void dpo__a1_shape(dpo__a1_t *c, double b1, double b2);
/* c->in and c->score allocated; rank 0 draws the secret bits from rng. Not collective. */
int dpo__a1_alloc(dpo__a1_t *c, int rank, dpo_rng_t *rng);
/* Widen train (and test, may be NULL) to d0 + m columns and append the canaries to train on
 * the last rank (n_global on every rank); c->d0 is train's declared width. */
int dpo__a1_add_rows(dpo__a1_t *c, dpo_shard_t *train, dpo_shard_t *test, int last);
/* dpo_release_fn (rank 0): each canary's log-likelihood ratio, added to its score. */
int dpo__a1_observe(void *arg, const dpo_release_t *r);
/* Rank 0: the guesses and the bound (the largest over the grid, each at beta / grid). */
int dpo__a1_bound(const dpo__a1_t *c, double delta, double beta, dpo_audit1_result_t *res);
/* Rank 0: the result as --json and summary.json's "audit" give it; summary.json's audit
 * fields added to sum; audit.json written when asked. */
struct json_object *dpo__a1_json(const dpo_audit1_result_t *r);
void dpo__a1_summary_add(struct json_object *sum, const dpo_audit1_result_t *res);
int dpo__a1_write_json(const dpo_config_t *cfg, const dpo_audit1_result_t *res);
void dpo__a1_free(dpo__a1_t *c);

#endif
