/* What the two searches of dpopt tune share (tune.c: the Papernot-Steinke repetitions; tune_split.c:
 * the search by parallel composition): the keys a candidate's run inherits and the summary's common
 * fields.  A file of its own so that neither search calls into the other's file. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <json-c/json.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include "dpopt/config.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "run/run_ckpt.h"
#include "run/run_priv.h"
#include "run/tune_impl.h"
#include "run/tune_store.h"


void dpo__tune_json_common(const dpo__tune_t *t, json_object *s, json_object *pj, double acc,
                           const char *label) {
  if (t->recipe) json_object_object_add(s, "grid_centre", json_object_new_string(t->recipe));
  if (t->test) { /* the chosen model on --test: reported, never selected on */
    json_object_object_add(s, "test_data", json_object_new_string(t->test));
    json_object_object_add(s, "test_accuracy", dpo_json_double(acc));
  }
  json_object_object_add(pj, "label", json_object_new_string(label));
  json_object_object_add(pj, "budget_eps", dpo_json_double(t->eps));
  json_object_object_add(pj, "budget_delta", dpo_json_double(t->delta));
  json_object_object_add(pj, "spent_eps", dpo_json_double(t->total_eps));
  json_object_object_add(pj, "spent_delta", dpo_json_double(t->total_delta));
  json_object_object_add(pj, "neighbours", json_object_new_string(dpo_neighbours_name(t->rel)));
  json_object_object_add(pj, "journal", json_object_new_string("ledger.jsonl"));
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

void dpo__tune_rm_tree(const char *p) { nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Rank 0: remove the repetition's scratch run directory DIR/.rep */
void dpo__tune_rm_rep(const dpo__tune_t *t) {
  if (t->rank != 0) return;
  char p[600];
  snprintf(p, sizeof p, "%s/.rep", t->dir);
  dpo__tune_rm_tree(p);
}

/* Rank 0: DIR/config.ini, the tune's own settings (key = value ; origin) with run.dir = DIR */
int dpo__tune_write_config(const dpo__tune_t *t) {
  dpo_config_t *c = NULL;
  int rc = dpo_config_copy(t->cfg, &c);
  if (!rc) rc = dpo_config_set(c, "run.dir", t->dir, "tune (its directory)");
  if (!rc) rc = dpo__run_write_config(c, t->dir);
  dpo_config_destroy(c);
  return rc;
}
