/* Collectives used by the algorithms: the coordinator/worker gradient oracle.
 *
 * Rank 0 (the coordinator) runs an algorithm as an ordinary loop and calls dpo_oracle_eval()
 * whenever it needs F and grad F at a point; every other rank sits in dpo_oracle_serve().
 * One evaluation is: MPI_Bcast of the request (the point x and the batch of GLOBAL row ids)
 * from rank 0 — this broadcast is the release of x, so the caller must have charged the
 * ledger for whatever x depends on — then each rank computes its local data-term sums and
 * one MPI_Reduce brings [grad sum, loss sum, rows used, status] to rank 0.  The reduced
 * status makes a failure on any rank fail the evaluation on rank 0, which then stops the
 * workers; nobody hangs.
 *
 * The exact (un-noised) gradient exists only on rank 0 (trusted-coordinator mode).
 */
#ifndef DPOPT_COMM_H
#define DPOPT_COMM_H

#include <mpi.h>
#include <stdint.h>

#include "dpopt/data.h"
#include "dpopt/model.h"
#include "dpopt/parties.h"
#include "dpopt/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpo_oracle dpo_oracle_t;

/* A batch of global row ids (sorted ascending, no duplicates), chosen on rank 0.
 * ids == NULL means all rows. */
typedef struct {
  const int64_t *ids;
  int64_t m;
} dpo_batch_t;

typedef struct {
  int64_t evals;      /* oracle calls */
  int64_t rows;       /* rows processed, summed over ranks */
  double t_compute;   /* seconds in local kernels (this rank) */
  double t_comm;      /* seconds in bcast + reduce (this rank) */
} dpo_oracle_stats_t;

/* Collective: create the oracle over model + shard (both borrowed, must outlive it).
 * If clip is non-NULL, per-example gradients are clipped (the norms are precomputed once). */
int dpo_oracle_create(MPI_Comm comm, const dpo_model_t *model, const dpo_shard_t *shard,
                      const dpo_clip_t *clip, dpo_oracle_t **oracle);
/* Collective: attach a held-out shard (borrowed) for dpo_oracle_eval_metric(.., 1, ..). */
int dpo_oracle_set_heldout(dpo_oracle_t *o, const dpo_shard_t *heldout);
void dpo_oracle_destroy(dpo_oracle_t *o);

int32_t dpo_oracle_dim(const dpo_oracle_t *o);
int64_t dpo_oracle_nglobal(const dpo_oracle_t *o);
MPI_Comm dpo_oracle_comm(const dpo_oracle_t *o);
int dpo_oracle_rank(const dpo_oracle_t *o);
/* The model the oracle evaluates (borrowed). */
const dpo_model_t *dpo_oracle_model(const dpo_oracle_t *o);
/* The per-example clipping the oracle applies (borrowed), or NULL when it does not clip:
 * private algorithms derive their public sensitivity from it (privacy rule 1). */
const dpo_clip_t *dpo_oracle_clip(const dpo_oracle_t *o);

/* Rank 0 only.  F and g (length d) at x over the batch (NULL = all rows): the mean over the
 * batch of the (clipped) data term plus the regularizer.  want_loss = 0 skips the loss.
 * Returns the status agreed with the workers. */
int dpo_oracle_eval(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch, int want_loss,
                    double *F, double *g);

/* Rank 0 only: the raw global sums before dpo_model_finish (for DP methods that add noise to
 * the sum or the mean themselves). g_sum gets sum of clipped data-term gradients. */
int dpo_oracle_eval_sums(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch,
                         int want_loss, double *loss_sum, double *g_sum, int64_t *n_used);

/* ---- multi-party runs (see dpopt/parties.h) ----
 * A per-evaluation noise spec travels in the request header: every rank adds the noise to
 * its OWN local sums before the reduce, so the coordinator never receives an un-noised value
 * of another rank.  LOCAL_*: a rank with rows in the batch adds the full mechanism
 * (dpo_mech_laplace / dpo_mech_gaussian, scale = b or sigma on the SUM); SHARE_*: every rank
 * adds a 1/nshares share of it (dpo_mech_laplace_share / dpo_mech_gaussian_share), so the sum
 * over nshares ranks carries the central noise.  A noised request returns no loss. */
enum { DPO_ONOISE_NONE = 0, DPO_ONOISE_LOCAL_LAPLACE = 1, DPO_ONOISE_LOCAL_GAUSSIAN = 2,
       DPO_ONOISE_SHARE_LAPLACE = 3, DPO_ONOISE_SHARE_GAUSSIAN = 4, DPO_ONOISE_SECAGG = 5 };
/* SECAGG: secure aggregation (dpopt/parties.h): scale = the fixed-point step gamma, sigma = each
 * party's discrete Gaussian share, or with lap_honest = n > 0 (pure eps) the scale t of the
 * discrete Laplace that n honest Polya shares sum to; every rank needs dpo_oracle_set_secagg. */
typedef struct {
  int kind;      /* DPO_ONOISE_* */
  double scale;  /* Laplace b or Gaussian sigma of the noise on the sum (the total, for shares) */
  int nshares;   /* shares: number of ranks adding one (the communicator's size) */
  uint64_t sigma; /* SECAGG only */
  int lap_honest;  /* SECAGG only: 0 = discrete Gaussian shares; n > 0 = Polya shares (n honest) */
  double claim;    /* the charge journalled for the release (SECAGG: rho; eps with Polya
                    * shares; the noise multiplier sigma_h / sens_c with party-local sampling.
                    * LOCAL_* / SHARE_*: eps for Laplace, the multiplier sigma / sensitivity for
                    * Gaussian): every party's guard prices the noise itself and refuses a
                    * larger price */
  int64_t pass;    /* g + 1 when the charge is a batch of disjoint pass g (each party's guard
                    * checks that none of its rows repeats within the pass); 0: none */
  int bits;        /* SECAGG only: the word width, 32 or 64 (dpo_secagg_word: public numbers) */
} dpo_oracle_noise_t;
/* Rank 0 only: dpo_oracle_eval_sums with a noise spec (NULL = none). */
int dpo_oracle_eval_sums_noised(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch,
                                const dpo_oracle_noise_t *noise, int want_loss,
                                double *loss_sum, double *g_sum, int64_t *n_used);
/* Rank 0 only: a SECAGG request (Gaussian shares) with party-local Poisson sampling: every rank
 * keeps each of ITS OWN rows independently with probability m / n (public m and n_pub), drawn
 * on its own secret stream (dpo_oracle_set_noise_rng) that never leaves it; no batch ids
 * travel and no row count comes back.  g_sum = the decoded noised sum. */
int dpo_oracle_eval_sums_sampled(dpo_oracle_t *o, const double *x, const dpo_oracle_noise_t *noise,
                                 int64_t m, int64_t n, double *g_sum);
/* Not collective: this rank's secure-aggregation state (borrowed; dpopt/parties.h). */
struct dpo_secagg;
int dpo_oracle_set_secagg(dpo_oracle_t *o, struct dpo_secagg *sa);
/* Not collective: the party guard (borrowed; internal to the library, built by the run API) a
 * rank other than 0 consults before it contributes to a noised release (secagg, local, shares). */
struct dpo_guard;
int dpo_oracle_set_guard(dpo_oracle_t *o, struct dpo_guard *g);
/* Not collective: this rank's own noise stream (borrowed; rank-specific stream id). */
int dpo_oracle_set_noise_rng(dpo_oracle_t *o, dpo_rng_t *rng);
/* Global row range [row0, row0 + n) of a rank's shard (known on every rank). */
int dpo_oracle_rank_rows(const dpo_oracle_t *o, int rank, int64_t *row0, int64_t *n);
/* Rank 0: the run's party table (borrowed; NULL = one data holder), read by the private
 * algorithms (src/optim/dp_common.c). */
int dpo_oracle_set_parties(dpo_oracle_t *o, const dpo_parties_t *p);
const dpo_parties_t *dpo_oracle_parties(const dpo_oracle_t *o);

/* ---- rows fetched to the coordinator (central trust) ----
 * For runs of small sequential steps (pnsgd: ~19k single-row steps on a9a) one collective per
 * step costs far more than the arithmetic.  Rank 0 fetches the rows of many steps at once and
 * evaluates them itself, with the same groups and double-double sums as dpo_oracle_eval, so
 * the values agree with it (to the last bit but for ties of the final rounding).  The rows
 * stay on rank 0: nothing is released, and the coordinator already sees their exact sums. */
typedef struct {
  dpo_shard_t rows;  /* the fetched rows, in the order asked (n = count, row0 = 0) */
  double *rownorm;   /* their clip norms (meaningful when the oracle clips) */
  int64_t *gid;      /* their global ids */
} dpo_oracle_rows_t;
/* Rank 0 only (workers serve it): copies of rows ids[0..m) (global ids, no repeats) into *out
 * (free with dpo_oracle_rows_free).  DPO_EUNSUP in a multi-party run (rows never leave their
 * party) or when the rows exceed one message (2^31 doubles). */
int dpo_oracle_fetch_rows(dpo_oracle_t *o, const int64_t *ids, int64_t m, dpo_oracle_rows_t *out);
void dpo_oracle_rows_free(dpo_oracle_rows_t *r);
/* Rank 0 only, not collective: dpo_oracle_eval over the batch of fetched rows pos[0..m)
 * (positions in r, their global ids strictly increasing). */
int dpo_oracle_eval_rows(dpo_oracle_t *o, const dpo_oracle_rows_t *r, const int64_t *pos,
                         int64_t m, const double *x, int want_loss, double *F, double *g);

/* Rank 0 only: mean loss (data term) and mean metric (accuracy for logistic, MSE for ridge)
 * at x over all rows of the training shards (heldout = 0: a NON-PRIVATE diagnostic) or of
 * the held-out shards (heldout = 1). */
int dpo_oracle_eval_metric(dpo_oracle_t *o, const double *x, int heldout, double *loss_mean,
                           double *metric_mean);

/* Rank 0 only: release workers from dpo_oracle_serve with `status` (DPO_OK for a normal end;
 * an error makes serve return that error on every worker). */
int dpo_oracle_finish(dpo_oracle_t *o, int status);

/* Ranks != 0: serve evaluation requests until rank 0 calls dpo_oracle_finish; returns the
 * status rank 0 finished with.  On rank 0 it returns DPO_OK immediately. */
int dpo_oracle_serve(dpo_oracle_t *o);

void dpo_oracle_get_stats(const dpo_oracle_t *o, dpo_oracle_stats_t *st);

/* ---- applying a saved model (dpopt predict / eval) ---- */
/* Collective over comm: evaluate the model (coefficients x, length s->d, the same on every
 * rank) on the distributed shards s.  *loss_mean gets the mean data term (1/n) sum_i
 * loss(u_i'x, z_i) WITHOUT the regularizer; *metric_mean the accuracy (logistic: sign
 * prediction, u'x = 0 predicts +1) or the mean squared error (ridge/lsq).  Either may be NULL.
 * The sums are chunked and reduced like dpo_oracle_eval_metric's, so the values equal, bit for
 * bit, what that call gives at the same rank count (e.g. train's test_accuracy); every rank
 * gets the same values and status.  Empty data (n_global = 0) is DPO_EINVAL. */
int dpo_model_eval_shard(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s,
                         const double *x, double *loss_mean, double *metric_mean);
/* Not collective: the linear predictor t_i = u_i'x of every local row into t (length s->n),
 * summed as the evaluation kernel sums it (so sign(t_i) reproduces its accuracy count). */
int dpo_model_local_predict(const dpo_model_t *m, const dpo_shard_t *s, const double *x,
                            double *t);

/* Collective over comm: read a model file (model.txt format, dpo_model_read_icpt) on rank 0
 * and broadcast it: every rank gets *d features, *intercept (0/1) and *x (length
 * *d + *intercept, the bias last; the caller frees it) or the same error. */
int dpo_model_read_bcast(MPI_Comm comm, const char *path, double **x, int32_t *d, int *intercept);
/* The same for a file of either kind (dpo_model_read_k): *K classes (0: one output), x of
 * length (*d + *intercept) * max(*K, 1).  dpo_model_read_bcast refuses a multiclass file. */
int dpo_model_read_bcast_k(MPI_Comm comm, const char *path, double **x, int32_t *d,
                           int *intercept, int32_t *K);
/* Collective over comm: the K x K confusion matrix of a multiclass model on the distributed
 * shards s (cm[true * K + predicted] = rows; predicted = dpo_model_local_classify), on every
 * rank.  A function of the data: a non-private output if s is private. */
int dpo_model_confusion(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s,
                        const double *x, int64_t *cm);
/* Collective over comm: write one prediction line per row of the distributed shards s, in
 * global row order, to `path` (created or truncated; MPI-IO, each rank at its byte offset;
 * "-": rank 0 prints them all on stdout).
 * Binary models: "LABEL PROB" (LABEL +1 or -1 = sign of u'x, u'x = 0 gives +1; PROB =
 * P(y = +1) = 1 / (1 + exp(-u'x))); multiclass "CLASS PROB" (the most probable class and its
 * softmax probability); others "VALUE" (u'x).  %.17g throughout. */
int dpo_model_write_predictions(MPI_Comm comm, const char *path, const dpo_model_t *m,
                                const dpo_shard_t *s, const double *x);

typedef struct {
  int32_t d;     /* coefficients of the model (= features of the data) */
  int64_t n;     /* rows evaluated */
  double loss;   /* mean data loss, no regularizer (dpo_model_eval_shard) */
  double metric; /* accuracy (binary models) or mean squared error */
  double xx;     /* ||x||^2 (bias included), for F = loss + lambda ||x||^2 */
  int intercept; /* 1: the model file has an intercept line (the bias is applied) */
  int32_t classes;   /* multiclass files: K; 0 otherwise */
  int64_t *confusion; /* K x K (dpo_model_confusion), malloc'ed: the caller frees it; or NULL */
} dpo_eval_result_t;
/* Collective over comm: apply the model file `model_file` (read on rank 0, broadcast) with
 * the objective m to the data file `data`, loaded in shards with *lo in the model's feature
 * space.  The file must match the model: a declared width (lo->d, the schema file
 * `data`.schema, or a dense format's columns / header) equal to the model's d, or, for a
 * sparse file without one, no row with a feature index above d (a file whose rows leave the
 * last features unused is fine); DPO_EFORMAT names both files otherwise.  Fills *res on every rank; with pred_out
 * (not NULL) also writes the predictions there (dpo_model_write_predictions).  The values
 * are functions of the data: non-private outputs if the data are private.  m's intercept
 * setting and number of classes are set from the file (a multiclass file needs a multiclass
 * m and the other way round; DPO_EINVAL otherwise). */
int dpo_model_eval_file(MPI_Comm comm, dpo_model_t *m, const char *model_file,
                        const char *data, const dpo_load_opts_t *lo, const char *pred_out,
                        dpo_eval_result_t *res);

#ifdef __cplusplus
}
#endif
#endif
