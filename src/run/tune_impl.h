/* The state of one dpopt tune, shared by tune_grid.c (settings, grid, the runs'
 * configurations, the noisy max), tune.c (the geometric search) and tune_split.c (the search
 * by parallel composition). */
#ifndef DPO_RUN_TUNE_IMPL_H
#define DPO_RUN_TUNE_IMPL_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/config.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"

#define DPO__TUNE_MAXC 64
#define DPO__TUNE_MAXV 16
/* tune.split of a search given none of tune.mean, tune.valid, tune.valid_fraction, tune.split */
#define DPO__TUNE_SPLIT_DEFAULT "0.1"

typedef struct {
  const char *algo;
  int gauss;              /* dp-sgd-rdp: Gaussian, RDP-accounted; else a pure-eps algorithm */
  double lr, clip, epochs; /* NAN: the algorithm's own default */
  double step;             /* algo.eta (dp-sgd-rdp) or algo.c (pure eps); NAN: the recipe's */
  int64_t m, T;
  double z;
} dpo__cand_t;

typedef struct {
  MPI_Comm comm;
  int rank;
  dpo_config_t *cfg;       /* the user's settings and, by default, train's recipe (owned) */
  double eps, delta, mean, eb; /* budget; E[K]; per-repetition eps (training and score) */
  int rdp;                     /* delta > 0: Papernot-Steinke on the RDP curve */
  double vfrac;                /* > 0: score on this fraction of data.train (split by row) */
  const char *valid, *test;    /* tune.valid: the scoring file; data.test: reported only */
  const char *recipe;          /* train's auto-pick the grid is centred on (NULL: none) */
  int multi;                   /* softmax: class labels 0..K-1 */
  int plain;                   /* no tune.* setting: train's recipe at the whole budget */
  double split;                /* > 0: parallel composition, this fraction selects (tune_split.c) */
  uint64_t key;                /* split: the partition's secret key (every rank; never written) */
  dpo_neighbours_t rel;
  int64_t n, n_test;
  int nc;
  dpo__cand_t c[DPO__TUNE_MAXC];
  double total_eps, total_delta;
  char dir[512];
} dpo__tune_t;

/* tune_grid.c: the candidate grid and the settings from t->cfg (data-free, not collective; also the
 * audit's, src/run/run_audit_tune.c) */
int dpo__tune_settings(dpo__tune_t *t);

/* tune_plan.c: the geometric search's per-repetition eps t->eb and totals (and each Gaussian
 * candidate's steps, batch and z) from public settings; repetition r's configuration (the
 * candidate k's run at t->eb).  Also the audit's (run_audit_tune.c). */
int dpo__tune_calibrate(dpo__tune_t *t);
int dpo__tune_cand_config(const dpo__tune_t *t, const dpo__cand_t *k, int r, dpo_config_t **out);
/* tune_plan.c: the geometric search's two draws (Liu and Talwar 2019), tune.c's loop's and its
 * audit's: the next repetition's candidate, uniform over t->nc, and after it whether to stop,
 * with probability 1 / t->mean (so K is geometric).  Rank 0's stream. */
int dpo__tune_geo_pick(const dpo__tune_t *t, dpo_rng_t *rng);
int dpo__tune_geo_stop(const dpo__tune_t *t, dpo_rng_t *rng);

struct json_object;
/* tune_grid.c: the options every repetition shares (the user's, minus the tune's own keys
 * and the stores), and summary.json's fields every search writes (grid centre, --test accuracy;
 * in pj the label, budget and spending) */
void dpo__tune_copy_key(const char *k, const char *v, const char *o, void *to);
void dpo__tune_json_common(const dpo__tune_t *t, struct json_object *s, struct json_object *pj,
                           double acc, const char *label);
/* tune_common.c: remove the repetition's scratch directory DIR/.rep (rank 0); remove a tree */
void dpo__tune_rm_rep(const dpo__tune_t *t);
void dpo__tune_rm_tree(const char *path);
/* tune_common.c, rank 0: DIR/config.ini, the tune's own settings (what the user ran and the
 * recipe filled in; run.dir = DIR), describing the tune rather than one of its runs */
int dpo__tune_write_config(const dpo__tune_t *t);

/* tune_grid.c: tune.split (t->split, 0 for the geometric search), DPO__TUNE_SPLIT_DEFAULT
 * when the search is not the geometric one's (tune.mean, tune.valid, tune.valid_fraction) and
 * one data set's, and the keys it refuses beside it */
int dpo__tune_split_settings(dpo__tune_t *t);
/* tune_grid.c: the configuration of candidate k's run on its part (r: its seed offset) */
int dpo__tune_split_config(const dpo__tune_t *t, const dpo__cand_t *k, int r, dpo_config_t **out);
/* tune_grid.c: the selection's report-noisy-max, Laplace scale *b for counts of correct
 * predictions (monotone under add-remove: 1/eps; replace-one: 2/eps); candidate i's count,
 * noised from rng, into noisy[i], and *best the argmax of noisy[0..i] so far (rank 0; the
 * tune's and the audit's trials) */
int dpo__tune_split_scale(const dpo__tune_t *t, double *b);
int dpo__tune_split_pick(double *noisy, int i, double count, double b, dpo_rng_t *rng, int *best);
/* tune_split.c, collective, once the ledger L is open (rank 0) and the store reserved: the
 * charge per part, the candidates, the selection, the final run, summary.json. */
int dpo__tune_split_run(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, const char *label,
                        FILE *out);

#endif
