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
#include "dpopt/run.h"
#include "dpopt/spec.h"

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
  dpo_privacy_spec_t ps;       /* the privacy.* settings as read (run_spec.c): the declared size */
  int64_t n, n_test;
  int nc;
  dpo__cand_t c[DPO__TUNE_MAXC];
  double total_eps, total_delta;
  char dir[512];
  /* stop and resume (tune_ckpt.c): --resume DIR, --checkpoint-every N (finished repetitions
   * or candidates), run.stop_after N; no_ckpt: the parties keep budget stores (no checkpoint) */
  int resuming, no_ckpt;
  int64_t ckpt_every, stop_after, resumed_at;
  /* audit.one_run (dpopt audit --one-run --tune): the final part's run is train's one-run
   * audit, its canaries in the final part's rows; a1 its result (every rank) */
  int audit1;
  dpo_audit1_result_t a1;
} dpo__tune_t;

/* What a stopped tune continues from (tune_ckpt.c; doc/design.md, "Private hyperparameter
 * selection", stop and resume).  done counts the finished repetitions (geometric search) or
 * candidates (split), each journalled before its score was used. */
typedef struct {
  int64_t done;
  int next, stop;  /* geometric: the candidate drawn for repetition `done`; stop drawn after it */
  int best;        /* the best so far: its candidate (-1: none yet) */
  double score;    /* geometric: its noisy score (-inf: none) */
  double noisy[DPO__TUNE_MAXC]; /* split: the noisy counts of candidates 0 .. done-1 */
  char *model;     /* geometric, rank 0: the best model's model.txt bytes (released at the end) */
  size_t nmodel;
} dpo__tune_state_t;

/* tune_grid.c: the candidate grid and the settings from t->cfg (data-free, not collective; also the
 * audit's, src/run/run_audit_tune.c) */
int dpo__tune_settings(dpo__tune_t *t);
/* tune_grid.c: does cfg hold a tune.* key (a plain tune, train's recipe once, holds none) */
int dpo__tune_any_key(const dpo_config_t *cfg);

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
/* tune_grid.c, not collective, before the directory: audit.one_run's settings (t->audit1)
 * and what such an audit refuses (a plain tune, the geometric search, softmax, stop and
 * resume); asked: the caller wants the audit's result (dpo_tune_audit1_run) */
int dpo__tune_audit1_settings(dpo__tune_t *t, int asked);
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
int dpo__tune_split_run(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, dpo__tune_state_t *s,
                        const char *label, FILE *out);
/* tune_split.c, collective, --resume: the journal's part accounts restored (before its check) */
int dpo__tune_split_parties(dpo__tune_t *t, dpo_ledger_t *L);

/* tune_ckpt.c: run.checkpoint_every, run.stop_after of t->cfg (not collective) */
int dpo__tune_ckpt_settings(dpo__tune_t *t);
/* tune_ckpt.c, collective: journal "finished" for repetition or candidate i (rank 0) before its
 * score is used, so a resume can tell it from one the checkpoint knows */
int dpo__tune_finished(const dpo__tune_t *t, dpo_ledger_t *L, int64_t i);
/* tune_ckpt.c, collective, at the boundary before repetition / candidate s->done: the periodic
 * checkpoint, and on SIGTERM/SIGINT or run.stop_after a checkpoint and DPO_EINTR */
int dpo__tune_pause(const dpo__tune_t *t, dpo_ledger_t *L, const dpo_rng_t *rng,
                    const dpo__tune_state_t *s);
/* tune_ckpt.c, collective: after a repetition's own run stopped on a signal (DPO_EINTR), the
 * checkpoint of the boundary before it (the repetition restarts from scratch) */
int dpo__tune_interrupted(const dpo__tune_t *t, dpo_ledger_t *L, const dpo_rng_t *rng,
                          const dpo__tune_state_t *s);
/* tune_ckpt.c, collective, --resume: DIR/checkpoint read (owner-only, its seal checked with the
 * journal key), the reopened journal exactly at its position; s, the streams (seeded) and
 * t->key restored; every rank gets done, next, stop, best, key */
int dpo__tune_resume(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, dpo__tune_state_t *s);
/* tune_ckpt.c, rank 0: --resume DIR is a stopped tune (a checkpoint, no summary.json) */
int dpo__tune_resume_dir(const char *dir);
/* tune_ckpt.c, rank 0, once summary.json is written: the checkpoint (it holds the partition's
 * key and the unreleased state) removed */
int dpo__tune_ckpt_remove(const dpo__tune_t *t);

#endif
