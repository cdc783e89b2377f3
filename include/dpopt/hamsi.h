/* HAMSI: distributed incremental L-BFGS for matrix factorization (thesis 000, Chapter 3).
 *
 * Objective (thesis eq. 3.1 over the observed entries Omega, with optional L2 term):
 *   f(X1, X2) = sum_{(a,b) in Omega} (y_ab - x1_a' x2_b)^2
 *             + lambda * (sum_a c1_a ||x1_a||^2 + sum_b c2_b ||x2_b||^2)  (rows/columns with ratings)
 * written partially separably (eq. 3.2) as a sum of per-rating functions
 *   f_ab = (y_ab - x1_a' x2_b)^2 + lambda (||x1_a||^2 / sqrt(deg_a dbar1) + ||x2_b||^2 / sqrt(deg_b dbar2)),
 * deg = number of training ratings of the user / item, dbar1 / dbar2 the mean deg over the users
 * / items with ratings, so a row's weight is c_a = sqrt(deg_a / dbar): 1 for a row of mean
 * degree, between the fixed weight per row (c = 1) and the weight per rating of LIBMF, Surprise
 * and ALS-WR (c ~ deg; Zhou et al., "Large-scale parallel collaborative filtering for the
 * Netflix Prize", 2008).  On real MovieLens-100K (90/10 split, the default biased model) it
 * gave held-out RMSE 0.908 / 0.905 / 0.905 at rank 10 / 50 / 100 where c = 1 gave 0.922 /
 * 0.908 / 0.921 and c = deg / dbar 0.915 at rank 10.  X1 is K x r (row a = user a), X2 is
 * r x N and is stored transposed (X2t, N x r: row b = column b of X2).
 *
 * Step scaling (scale-free defaults): a row's gradient is a sum over its ratings, so its
 * curvature grows with its degree.  All steps are taken in the diagonal metric D = diag(deg)
 * of each variable's row: mb-GD and the first HAMSI epochs use x -= (sigma0 / beta_t) D^-1 g,
 * and HAMSI's compact L-BFGS uses H0 = sigma D^-1 (Alg. 3 in the coordinates D^1/2 x; s'y and
 * hence the acceptance rule of line 15 are unchanged, sigma = s'y / y'D^-1 y).  So one sigma0
 * works from ML-100K to ML-20M shapes and for any number of strata / ranks.  metric_pow = p
 * < 1 takes D = diag(deg^p dbar^(1-p)) instead (dbar the mean degree of the row's side, so a
 * row of mean degree keeps its step): p = 1 is the above, p = 0 the identity metric of the
 * thesis's Alg. 3 (scaled by dbar).  In it the factors-only model takes longer steps without
 * their epochs being undone (doc/results.md: real MovieLens-100K, rank 50, the same start,
 * epochs to training RMSE 0.9 / 0.8 / 0.7 / 0.5: 8 / 9 / 11 / 27 with p = 1/2 and eta 0.2,
 * 13 / 16 / 20 / 50 with p = 1 and eta 0.5, where eta 0.3 is already undone epoch after epoch).
 *
 * Partitionings (Sec. 3.3): the function set is covered by K strata; each stratum is a set of
 * blocks processed "in parallel" (here: in any order, which gives the same result when the
 * blocks touch disjoint variables).
 *   HOGWILD   random, K equal subsets, one function per block; blocks overlap (not valid).
 *   COLOR     first-fit coloring of the conflict graph of the bipartite graph; colors packed
 *             first-fit into K bins of about |I|/K functions.  A bin is processed color by
 *             color (phase) in the serial order, so the blocks of one phase are
 *             variable-disjoint.
 *   COLOR-B   the same with a random available color (new color only if none is free).
 *   STRATA    B equal-length user intervals x B equal-length item intervals; stratum k holds
 *             the blocks (i, (i + k) mod B), so K = B.
 *   STRATA-B  the same with intervals cut so each holds about |I|/B ratings (Fig. 3.4).
 * STRATA and STRATA-B run on P ranks with the factor-block ring below.  HOGWILD, COLOR and
 * COLOR-B (the thesis runs them with shared-memory threads) run on P ranks with X2 replicated:
 * rank p processes the ratings of each stratum whose users it owns (in the serial order), and
 * one Allreduce per stratum sums the ranks' item steps: equal to the serial pass to first
 * order (items two ranks touch in a stratum get both steps from its start; in quasi-Newton
 * epochs, whose steps come near the stratum's Newton step, they get the average of the ranks'
 * steps instead, as m full steps from the same start overshoot m-fold).  With opts.repro
 * COLOR* exchange once per color instead, which is exact (a color is a matching: each item
 * row gets one step) and costs an Allreduce per color (see src/mf/hamsi.c).
 *
 * Distribution: rank p owns a contiguous range of user intervals (rows of X1) and their
 * ratings; the item blocks of X2, with their rows of the L-BFGS history S and Y, travel
 * between the ranks (nonblocking: the history rows [S | Y] are sent when the stratum starts
 * and travel while it computes, the factor rows as soon as the block is done), one stratum
 * per inner step.  Rank 0 decides the stratum schedule
 * and broadcasts it.  Results do not depend on the number of ranks (STRATA*, and COLOR* with
 * repro); with opts.repro = 1 they are bit-identical (per-block partial sums are reduced in
 * block order).
 */
#ifndef DPOPT_HAMSI_H
#define DPOPT_HAMSI_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/data.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  DPO_MF_HOGWILD = 0,
  DPO_MF_COLOR,
  DPO_MF_COLOR_B,
  DPO_MF_STRATA,
  DPO_MF_STRATA_B
} dpo_mf_part_kind_t;

typedef enum { DPO_MF_SCHED_DET = 0, DPO_MF_SCHED_SHUFFLE } dpo_mf_sched_t;
typedef enum { DPO_MF_HAMSI = 0, DPO_MF_MBGD } dpo_mf_method_t;

/* "hogwild", "color", "color-b", "strata", "strata-b" (case-insensitive) -> kind. */
int dpo_mf_part_parse(const char *name, dpo_mf_part_kind_t *kind);
const char *dpo_mf_part_name(dpo_mf_part_kind_t kind);

/* ---- objective (local, not collective) ---- */

/* f and its gradient over n ratings (0-based user/item ids) at X1 (n_users x r) and X2t
 * (n_items x r).  udeg/ideg (may be NULL when lambda == 0): degrees used in the per-rating
 * weights above.  g1/g2 (may be NULL) are overwritten with the gradient. */
int dpo_mf_objective(int64_t n, const int32_t *user, const int32_t *item, const double *y,
                     int32_t n_users, int32_t n_items, int32_t r, const double *X1,
                     const double *X2t, double lambda, const int32_t *udeg, const int32_t *ideg,
                     double *f, double *g1, double *g2);

/* ---- partitioning (local; all ratings on one process) ---- */

typedef struct {
  dpo_mf_part_kind_t kind;
  int32_t K;          /* strata */
  int64_t n;          /* functions (ratings) */
  int32_t *stratum;   /* [n] stratum of each rating */
  int32_t *phase;     /* [n] color inside the bin (COLOR*); 0 otherwise */
  int64_t *block;     /* [n] block id inside the stratum (grid: user interval; else rating id) */
  int32_t nb;         /* STRATA*: intervals per dimension (= K) */
  int32_t *row_cut;   /* STRATA*: [nb + 1] user interval bounds */
  int32_t *col_cut;   /* STRATA*: [nb + 1] item interval bounds */
  int32_t ncolors;    /* COLOR*: colors used */
  int valid_expected; /* 0 for HOGWILD */
} dpo_mf_partition_t;

/* Build a partition of the n ratings (user, item) with K strata (STRATA*: K intervals per
 * dimension).  seed drives HOGWILD and COLOR-B.  Caller destroys. */
int dpo_mf_partition(dpo_mf_part_kind_t kind, int32_t K, int64_t n, const int32_t *user,
                     const int32_t *item, int32_t n_users, int32_t n_items, uint64_t seed,
                     dpo_mf_partition_t **out);
void dpo_mf_partition_destroy(dpo_mf_partition_t *p);

/* Interval bounds for STRATA (balanced = 0: equal length) or STRATA-B (balanced = 1: about
 * total/nb ratings each, from the degree counts deg[0..n)).  cut has nb + 1 entries. */
int dpo_mf_cuts(const int64_t *deg, int32_t n, int32_t nb, int balanced, int32_t *cut);

/* Validity: 1 if in every (stratum, phase) the blocks touch disjoint variables and every
 * rating is in exactly one stratum, 0 if not (*conflicts counts the ratings in conflict). */
int dpo_mf_partition_valid(const dpo_mf_partition_t *p, const int32_t *user,
                           const int32_t *item, int32_t n_users, int32_t n_items,
                           int64_t *conflicts);

typedef struct {
  int32_t K;
  int64_t stratum_min, stratum_max; /* functions per stratum */
  double stratum_mean;
  int64_t nblocks;                  /* non-empty blocks */
  int64_t block_min, block_max;     /* functions per non-empty block */
  double block_mean;
  double imbalance;                 /* max / mean functions per stratum (grid: per block) */
} dpo_mf_balance_t;

void dpo_mf_partition_balance(const dpo_mf_partition_t *p, dpo_mf_balance_t *b);
/* Human-readable report (balance, validity, the HOGWILD overlap note). */
void dpo_mf_partition_report(FILE *f, const dpo_mf_partition_t *p, const int32_t *user,
                             const int32_t *item, int32_t n_users, int32_t n_items);

/* ---- HAMSI / mb-GD ---- */

typedef struct {
  int64_t epoch;
  double t_train;     /* seconds of training so far (evaluation excluded) */
  double t_wall;      /* seconds since the start, evaluation included */
  double train_rmse;  /* NON-PRIVATE diagnostic: computed on the training ratings */
  double test_rmse;   /* held-out ratings (NaN when there are none) */
  double sigma;
  int32_t npairs;
} dpo_hamsi_trace_t;

typedef struct {
  dpo_mf_method_t method;
  dpo_mf_part_kind_t part;
  dpo_mf_sched_t sched;
  int32_t r;           /* factor rank (default 10; the thesis uses 50) */
  int32_t nblocks;     /* K: strata (STRATA*: intervals per dimension); 0 = ranks (STRATA*),
                          20 (others) */
  int32_t memory;      /* L-BFGS memory M (default 5) */
  double eta, gamma;   /* beta_t = (eta t)^gamma (thesis Alg. 3, line 5) */
  double eta_late;     /* > 0: after epoch eta_from, beta_t = (eta T + eta_late (t - T))^gamma,
                          T = eta_from: the same class of sequence (increasing, >= beta_T,
                          (eta_late t)^gamma in the end), with longer late steps for
                          eta_late < eta (default 0: off) */
  int64_t eta_from;    /* T (default 30) */
  double sigma0;       /* step scale before M pairs exist (and mb-GD): x -= sigma0 D^-1 g / beta_t
                          (default 0.2; eta default 1, gamma 0.51) */
  double metric_pow;   /* p in [0, 1]: the metric D = diag(deg^p dbar^(1-p)) of every step (see
                          "Step scaling" above; default 1: D = diag(deg)) */
  double lambda;       /* L2 weight */
  double init_scale;   /* initial factors uniform in (0, init_scale) */
  int64_t epochs;      /* outer iterations */
  double time_limit;   /* seconds of training (evaluation excluded); 0 = none */
  double holdout;      /* fraction of ratings held out for test RMSE (hash of user, item, seed) */
  uint64_t seed;       /* initial point, schedule shuffles, HOGWILD/COLOR-B, held-out split */
  int repro;           /* 1: bit-identical across rank counts (per-block reduction slots) */
  int eval_every;      /* evaluate RMSE every this many epochs (0 = only at the end) */
  double eval_budget;  /* > 0: an evaluation due by eval_every is made only when the time spent
                          evaluating stays <= this fraction of the wall time (rank 0's clock,
                          so which epochs appear in the trace depends on timing; the factors
                          do not), except the first due epoch and every
                          DPO_HAMSI_EVAL_FORCE-th due epoch after the last evaluated one,
                          which are always evaluated (the trace is never empty).  With early_stop the held-out RMSE of every due epoch is
                          still computed (the training RMSE of a skipped one is NaN), so the
                          kept point does not depend on timing.  Default 0: every due epoch. */
  /* Safeguards (inactive on well-behaved runs; see src/mf/hamsi.c):
   * step_cap     a block's quasi-Newton step is at most step_cap times as long (in the metric
   *              D) as its gradient step sigma0 D^-1 g / beta_t; longer ones are shortened
   *              (default 30; 0 = off).  With it, a row's gradient step is cut to 0.4 / (w T)
   *              (T: its partners' squared norms summed over the block), and under HOGWILD /
   *              COLOR* (single-rating blocks) a quasi-Newton step to 1.6 times the minimizer
   *              of its rating's Gauss-Newton model along it (the same residual bound).
   * reject_tol   an epoch after which the repeated stratum's objective is larger than
   *              (1 + reject_tol) times its value at the start of the epoch, or a factor is not
   *              finite, is undone (factors back to the start of the epoch) and the L-BFGS
   *              memory is reset (default 0.1; < 0 = off).  mb-GD: an epoch whose summed
   *              stratum objectives (each before its step) exceed (1 + reject_tol) times the
   *              last accepted epoch's (the first: f at the initial point), or a non-finite
   *              factor, is undone and the step scale halved.  Both methods: a second
   *              rejection in a row goes back to the start of the last accepted epoch, and
   *              at the end of the run that start is returned if the end's training RMSE
   *              is more than reject_tol above its own (without early stopping). */
  double step_cap;
  double reject_tol;
  /* STRATA* HAMSI on P > 1 ranks: every rank keeps a copy of every item block's history rows
   * [S | Y] when all of them take at most cache_mb MB (with a P x B table), so a ring move
   * sends the block's factor rows and only the history slots that changed since the
   * receiving rank last held it (one (s, y) slot a pair, instead of all M); the same bytes
   * arrive, so the factors are the same.  Default 256; 0 = off (every move sends the whole
   * history). */
  double cache_mb;
  /* Optional: called on every rank after each trace row is made (e.g. rank 0 appends it to a
   * file and flushes it), so no progress is lost if the run fails later.  A non-zero return
   * stops the run with that status (the callback agrees on it itself if it differs by rank). */
  int (*on_trace)(void *ctx, const dpo_hamsi_trace_t *row);
  void *trace_ctx;
  /* Optional: called on every rank after each epoch t (its point kept), e.g. for progress
   * lines; a non-zero return on any rank stops the run with that status on every rank, after
   * the next epoch (the ranks learn of it with that epoch's one reduction) or at the end. */
  int (*on_epoch)(void *ctx, int64_t t);
  void *epoch_ctx;
  /* Optional checkpoints at the end of an epoch (src/mf/hamsi_ckpt.c): before epoch t runs,
   * rank 0's ckpt_due(t) says 0 (go on), 1 (write ckpt_path after it) or 2 (write it and stop:
   * DPO_EINTR); the decision travels with the epoch's reduction.  When it said 1 or 2 it is
   * called again after the epoch (and on_epoch), where only *aux is read: a number saved with
   * the checkpoint (dpopt mf: the trace's length).  With
   * resume = 1 the run starts from ckpt_path instead of the initial point (the same ranks and
   * options), calling ckpt_loaded (rank 0) with the epoch and aux it holds.  A resumed run
   * computes the bytes of the uninterrupted one; res->trace then holds only the rows after
   * the resume. */
  const char *ckpt_path;
  int resume;
  int (*ckpt_due)(void *ctx, int64_t t, int64_t *aux);
  int (*ckpt_loaded)(void *ctx, int64_t t, int64_t aux);
  void *ckpt_ctx;
  int result_on_failure; /* 1: a diverged run still returns its last good point (dpo_hamsi_run) */
  /* Biased model: prediction mu + b_u + b_i + x1_a'x2_b.  mu is the mean training
   * rating (subtracted before training); b_u, b_i are fitted with the factors as two extra
   * columns: X1 rows [x1_a, b_u, 1], X2t rows [x2_b, 1, b_i], the constant columns held at 1
   * (their gradient is zeroed, so s, y and every L-BFGS step are 0 there too).  The L2 term
   * covers the biases (lambda b_u^2 per user, as for a factor row).  Factors start uniform in
   * (-init_scale/2, init_scale/2) (the centred ratings have mean 0), biases at 0. */
  int biases;
  /* Early stopping: stop when the held-out RMSE has not improved for early_stop epochs
   * (evaluated every eval_every epochs; 0 = off) and the training RMSE on a fixed 1/8 sample
   * of the training ratings has meanwhile fallen 0.5% below its value at the best epoch (the
   * fit moved on, the held-out error did not follow: overfitting; on a plateau both are flat
   * and the run goes on), and return the best evaluated point. */
  int64_t early_stop;
  /* Optional initial factors (NULL: uniform from the seed, as above): x1_init n_users x r and
   * x2t_init n_items x r (row-major, the factor columns only; biases still start at 0), on
   * every rank, with n_users / n_items the maxima over the ranks' ratings (the caller checks
   * the lengths).  Used to start two implementations from the same point (jobs/bench/hamsi). */
  const double *x1_init, *x2t_init;
} dpo_hamsi_opts_t;

void dpo_hamsi_opts_default(dpo_hamsi_opts_t *o);
/* eval_budget: at least every this many due epochs are evaluated in full */
#define DPO_HAMSI_EVAL_FORCE 10

typedef struct {
  int32_t n_users, n_items, r;
  double *X1;          /* n_users x r, on every rank (the factors only, without bias columns) */
  double *X2t;         /* n_items x r, on every rank */
  int biases;          /* opts.biases: mu, bu, bi below are set */
  double mu;           /* mean training rating (0 without biases) */
  double *bu, *bi;     /* [n_users], [n_items] biases (NULL without biases) */
  int64_t best_epoch;  /* early stopping: the epoch whose factors are returned (else 0) */
  double best_test_rmse; /* early stopping: its held-out RMSE (= test_rmse) */
  int64_t n_train, n_test;
  int64_t epochs;
  int32_t K;           /* strata */
  double train_rmse, test_rmse;  /* at the end; train_rmse is a NON-PRIVATE diagnostic */
  double train_rmse0, test_rmse0; /* at the initial factors (same caveat) */
  double mean_test_rmse;         /* held-out RMSE of the mean training rating (the baseline a
                                    model should beat; NaN without held-out ratings) */
  double t_wall, t_train;        /* with and without evaluation */
  double t_grad, t_update, t_hess, t_comm;  /* phases on this rank (Fig. 3.7) */
  double ratings_per_sec;        /* processed by this rank per second of training */
  int64_t pairs_accepted, pairs_rejected;
  double sigma;
  int64_t epochs_undone;   /* safeguard: epochs undone (memory reset) */
  int64_t steps_capped;    /* safeguard: block steps shortened (this rank): quasi-Newton steps
                              over step_cap or their rating's curvature bound, and gradient
                              steps with a row cut to its curvature bound (hamsi_step.c) */
  int64_t failed_epoch;    /* 0, or the epoch at which the run diverged (result_on_failure) */
  int64_t strata;      /* inner steps (strata) of the training epochs, undone ones included */
  int64_t exchanges;   /* item-factor exchanges among them: ring moves (STRATA*) or
                          Allreduces of the ranks' item steps (generic partitions on P ranks;
                          one per stratum, one per color for COLOR* with repro); 0 on 1 rank */
  int home_ok;         /* 1: at the end every item block is back at its home rank */
  int disjoint;        /* 1: the blocks processed together touch disjoint variables, so the
                          result does not depend on the number of ranks (STRATA*, any
                          partition on 1 rank, COLOR* with repro); 0: HOGWILD, and COLOR*
                          without repro on P ranks, whose runs sum the ranks' item steps of
                          a stratum (first order) */
  dpo_hamsi_trace_t *trace;
  int64_t ntrace;
  dpo_mf_balance_t balance;      /* of the global partition (STRATA*: block counts) */
  double ring_mb;      /* MB of item blocks this rank sent in ring moves (STRATA* on P ranks;
                          opts.cache_mb cuts it); the summary has the max over ranks */
  int64_t ring_bytes_epochs;      /* bytes this rank sent in the ring moves of the training
                                     epochs (undone epochs' moves back included; not the
                                     moves home after the last epoch) */
  int64_t ring_hist_bytes_epochs; /* of them the L-BFGS history (the rest: factor rows) */
  int64_t blocks_early;  /* blocks this rank computed while another block of the same stratum
                            was still on its way here (STRATA* with more strata than ranks;
                            counted by this process: a resumed run from its resume) */
} dpo_hamsi_result_t;

/* Collective: train on the ratings this rank holds (any split of the global set; they are
 * routed to the owner of their user interval).  ratings->n_users / n_items give K and N (the
 * maximum over ranks is used).  Returns the same status on every rank: DPO_ENOCONV
 * ("diverged at epoch E ...") as soon as a factor or the training RMSE is not finite.  Then,
 * with opts.result_on_failure, *res is still set (caller destroys): the trace so far,
 * failed_epoch = E, and the factors and RMSEs of the last point that passed the check (the
 * end of epoch E - 1, finite but possibly far off); otherwise, and on any other error, *res
 * is NULL. */
int dpo_hamsi_run(MPI_Comm comm, const dpo_ratings_t *ratings, const dpo_hamsi_opts_t *opts,
                  dpo_hamsi_result_t **res);
void dpo_hamsi_result_destroy(dpo_hamsi_result_t *r);

/* Predictions mu + bu[u] + bi[i] + X1[u]'X2t[i] of the fitted model for n (user, item)
 * pairs (0-based; out of range is DPO_EINVAL naming the pair).  Local. */
int dpo_hamsi_predict(const dpo_hamsi_result_t *m, int64_t n, const int32_t *user,
                      const int32_t *item, double *pred);

#ifdef __cplusplus
}
#endif
#endif
