/* The run behind dpopt mf, in the phases of the run driver's mf kind (mf_job.h; the driver is
 * src/run/run_mf.c): settings from the mf.* config keys, the ratings, HAMSI or mb-GD (thesis
 * 000, Chapter 3), the trace rows, the report and the factor files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <json-c/json.h>

#include "dpopt/data.h"
#include "dpopt/hamsi.h"
#include "dpopt/mf.h"
#include "dpopt/model.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "mf/mf_impl.h"
#include "mf/mf_job.h"

struct dpo_mf_job {
  MPI_Comm comm;
  int rank, size, zb;
  const dpo_config_t *cfg;
  dpo_hamsi_opts_t o;
  const char *method, *part, *x0dir;
  dpo_ratings_t *rt;
  double *x1i, *x2i;
  dpo_hamsi_result_t *res;
  double ph[5], rps[2]; /* phases and ring MB, max over ranks; ratings/s/rank min, -max */
  int64_t rb[4];        /* the epochs' ring bytes: sum over ranks, its history part, the
                         * blocks computed while one was still arriving (sum); the bytes' max */
  dpo_mf_io_t *io;
  /* progress (rank 0) */
  int prog_on, prog_tty, prog_printed, prog_explicit;
  double prog_t0, prog_last;
};

/* mf's fields of summary.json: the run's settings, final RMSEs and the phase times of Fig.
 * 3.7 as the MAXIMUM over ranks (ph[0..3]: gradient, update, Hessian approximation,
 * transfers; ph[4]: MB sent in ring moves). */
static void dpo__mf_summary(json_object *j, const dpo_mf_job_t *jb) {
  const dpo_hamsi_result_t *res = jb->res;
  const dpo_hamsi_opts_t *o = &jb->o;
  const double *ph = jb->ph;
  json_object_object_add(j, "method", json_object_new_string(jb->method));
  json_object_object_add(j, "part", json_object_new_string(jb->part));
  json_object_object_add(j, "sched", json_object_new_string(o->sched ? "shuffle" : "det"));
  json_object_object_add(j, "ranks", json_object_new_int(jb->size));
  json_object_object_add(j, "strata", json_object_new_int(res->K));
  json_object_object_add(j, "r", json_object_new_int(res->r));
  json_object_object_add(j, "eta", dpo_json_double(o->eta));
  json_object_object_add(j, "gamma", dpo_json_double(o->gamma));
  if (o->eta_late > 0) {
    json_object_object_add(j, "eta_late", dpo_json_double(o->eta_late));
    json_object_object_add(j, "eta_from", json_object_new_int64(o->eta_from));
  }
  json_object_object_add(j, "sigma0", dpo_json_double(o->sigma0));
  json_object_object_add(j, "metric_pow", dpo_json_double(o->metric_pow));
  json_object_object_add(j, "lambda", dpo_json_double(o->lambda));
  json_object_object_add(j, "biases", json_object_new_boolean(res->biases));
  if (res->biases) json_object_object_add(j, "mean", dpo_json_double(res->mu));
  json_object_object_add(j, "early_stop", json_object_new_int64(o->early_stop));
  json_object_object_add(j, "eval_every", json_object_new_int(o->eval_every));
  json_object_object_add(j, "eval_budget", dpo_json_double(o->eval_budget));
  if (res->best_epoch > 0) {
    json_object_object_add(j, "best_epoch", json_object_new_int64(res->best_epoch));
    json_object_object_add(j, "best_test_rmse", dpo_json_double(res->best_test_rmse));
  }
  json_object_object_add(j, "epochs", json_object_new_int64(res->epochs));
  json_object_object_add(j, "disjoint", json_object_new_boolean(res->disjoint));
  json_object_object_add(j, "strata_done", json_object_new_int64(res->strata));
  json_object_object_add(j, "exchanges", json_object_new_int64(res->exchanges));
  json_object_object_add(j, "steps_capped", json_object_new_int64(res->steps_capped));
  json_object_object_add(j, "n_train", json_object_new_int64(res->n_train));
  json_object_object_add(j, "users", json_object_new_int64(res->n_users));
  json_object_object_add(j, "items", json_object_new_int64(res->n_items));
  json_object_object_add(j, "n_test", json_object_new_int64(res->n_test));
  json_object_object_add(j, "train_rmse_initial_nonprivate", dpo_json_double(res->train_rmse0));
  json_object_object_add(j, "train_rmse_nonprivate", dpo_json_double(res->train_rmse));
  json_object_object_add(j, "test_rmse", dpo_json_double(res->test_rmse));
  json_object_object_add(j, "mean_test_rmse", dpo_json_double(res->mean_test_rmse));
  json_object_object_add(j, "t_train", dpo_json_double(res->t_train));
  json_object_object_add(j, "t_wall", dpo_json_double(res->t_wall));
  static const char *nm[5] = {"t_grad_max", "t_update_max", "t_hess_max", "t_comm_max",
                              "ring_mb_max"};
  for (int k = 0; k < 5; k++) json_object_object_add(j, nm[k], dpo_json_double(ph[k]));
  /* exact byte counts of the training epochs' ring moves (jobs/costmodel's formula) */
  static const char *nb[4] = {"ring_bytes_epochs_sum", "ring_hist_bytes_epochs_sum",
                              "blocks_early_sum", "ring_bytes_epochs_max"};
  for (int k = 0; k < 4; k++) json_object_object_add(j, nb[k], json_object_new_int64(jb->rb[k]));
  json_object_object_add(j, "pairs_accepted", json_object_new_int64(res->pairs_accepted));
  json_object_object_add(j, "pairs_rejected", json_object_new_int64(res->pairs_rejected));
  json_object_object_add(j, "step_cap", dpo_json_double(o->step_cap));
  json_object_object_add(j, "reject_tol", dpo_json_double(o->reject_tol));
  json_object_object_add(j, "epochs_undone", json_object_new_int64(res->epochs_undone));
  json_object_object_add(j, "failed", json_object_new_boolean(res->failed_epoch > 0));
  if (res->failed_epoch > 0) {
    json_object_object_add(j, "failed_epoch", json_object_new_int64(res->failed_epoch));
    json_object_object_add(j, "error", json_object_new_string(dpo_errmsg()));
  }
  json_object_object_add(j, "private", json_object_new_boolean(0));
}

/* mf.x0 DIR: the initial factors from DIR/X1.txt and DIR/X2t.txt (dpopt mf --out layout, the
 * factor columns), read on rank 0 and broadcast; *x1 / *x2t NULL without mf.x0.  Collective,
 * agreed status. */
static int dpo__mf_x0(MPI_Comm comm, const char *dir, const dpo_ratings_t *rt, int32_t r,
                      double **x1, double **x2t) {
  int rank, st = DPO_OK;
  MPI_Comm_rank(comm, &rank);
  int32_t n[2] = {rt->n_users, rt->n_items};
  if (MPI_Allreduce(MPI_IN_PLACE, n, 2, MPI_INT32_T, MPI_MAX, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "mf.x0: Allreduce failed"));
  const char *name[2] = {"X1.txt", "X2t.txt"};
  double **x[2] = {x1, x2t};
  for (int k = 0; k < 2 && !st; k++) {
    int64_t want = (int64_t)n[k] * r;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name[k]);
    if (rank == 0) {
      st = dpo__mf_matrix_read(path, n[k], r, x[k]);
    } else if (!(*x[k] = malloc(sizeof(double) * (size_t)(want ? want : 1)))) {
      st = dpo_err(DPO_ENOMEM, "mf.x0: %lld doubles", (long long)want);
    }
    if ((st = dpo_agree(comm, st))) break;
    if (MPI_Bcast(*x[k], (int)want, MPI_DOUBLE, 0, comm) != MPI_SUCCESS)
      st = dpo_err(DPO_EMPI, "mf.x0: broadcast failed");
    st = dpo_agree(comm, st);
  }
  return st;
}

/* ph[0..4] of the summary (Fig. 3.7 phases, ring MB): the slowest rank sets the pace, so the
 * maximum over ranks; rb: the epochs' ring bytes summed over ranks, their history part, the
 * blocks computed early (summed) and the most bytes one rank sent (collective) */
static int dpo__mf_phases(MPI_Comm comm, const dpo_hamsi_result_t *res, double ph[5],
                          int64_t rb[4]) {
  ph[0] = res->t_grad;
  ph[1] = res->t_update;
  ph[2] = res->t_hess;
  ph[3] = res->t_comm;
  ph[4] = res->ring_mb;
  if (MPI_Allreduce(MPI_IN_PLACE, ph, 5, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "mf: phase-time reduction failed");
  rb[0] = rb[3] = res->ring_bytes_epochs;
  rb[1] = res->ring_hist_bytes_epochs;
  rb[2] = res->blocks_early;
  if (MPI_Allreduce(MPI_IN_PLACE, rb, 3, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Allreduce(MPI_IN_PLACE, rb + 3, 1, MPI_INT64_T, MPI_MAX, comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "mf: ring byte reduction failed");
  return DPO_OK;
}

/* trace.csv rows (rank 0), written as the run goes and flushed, so a run that fails or is
 * stopped keeps every evaluation made before. */
static int dpo__mf_trace_row(void *ctx, const dpo_hamsi_trace_t *r) {
  dpo_mf_job_t *j = ctx;
  FILE *f = j->io ? j->io->trace : NULL;
  if (j->rank != 0 || !f) return DPO_OK;
  fprintf(f, "%lld,%.6f,%.6f,%.10g,%.10g,%.6g,%d\n", (long long)r->epoch, r->t_train, r->t_wall,
          r->train_rmse, r->test_rmse, r->sigma, r->npairs);
  return fflush(f) ? dpo_err(DPO_EIO, "trace.csv: write failed") : DPO_OK;
}

/* Progress on stderr (rank 0), as train's: --progress, or automatic on a terminal; at most a
 * line a second (redrawn on a terminal), and the last one at the end. */
static void dpo__mf_progress(dpo_mf_job_t *j, int64_t t, int final) {
  if (!j->prog_on) return;
  double now = MPI_Wtime();
  if (!final && now - j->prog_last < 1.0) return;
  if (final && !j->prog_printed && !j->prog_explicit) return;
  char of[64] = "";
  if (j->o.epochs > 0) snprintf(of, sizeof of, "/%lld", (long long)j->o.epochs);
  fprintf(stderr, "%s[dpopt] mf: epoch %lld%s, %.1f s elapsed%s", j->prog_tty && j->prog_printed
          ? "\r" : "", (long long)t, of, now - j->prog_t0, j->prog_tty && !final ? "    " : "\n");
  fflush(stderr);
  j->prog_printed = 1;
  j->prog_last = now;
}

static int dpo__mf_epoch(void *ctx, int64_t t) {
  dpo_mf_job_t *j = ctx;
  if (j->rank == 0) dpo__mf_progress(j, t, 0);
  return DPO_OK;
}

/* Rank 0 after epoch t: a checkpoint every ckpt_every epochs (1), or one and stop (2) at
 * run.stop_after or when the stop flag (SIGTERM / SIGINT) is up; *aux = the trace's length,
 * so a resume cuts off the rows written after it. */
static int dpo__mf_ckpt_due(void *ctx, int64_t t, int64_t *aux) {
  dpo_mf_job_t *j = ctx;
  const dpo_mf_io_t *io = j->io;
  int stop = (io->stop && *io->stop) || (io->stop_after > 0 && t == io->stop_after);
  int save = stop || (io->ckpt_every > 0 && t % io->ckpt_every == 0);
  if (!save) return 0;
  *aux = 0;
  if (io->trace) {
    long off = fflush(io->trace) ? -1 : ftell(io->trace);
    *aux = off > 0 ? off : 0;
  }
  return stop ? 2 : 1;
}

/* Rank 0, resuming after epoch t: the trace is cut back to its length at the checkpoint
 * (its later rows are redone) and written on from there. */
static int dpo__mf_ckpt_loaded(void *ctx, int64_t t, int64_t aux) {
  dpo_mf_job_t *j = ctx;
  FILE *f = j->io->trace;
  if (f && (fflush(f) || ftruncate(fileno(f), (off_t)aux) || fseek(f, (long)aux, SEEK_SET)))
    return dpo_err(DPO_EIO, "trace.csv: cannot cut back to the checkpoint's %lld bytes",
                   (long long)aux);
  j->io->accepted = 1;
  if (!j->io->quiet)
    fprintf(stderr, "dpopt mf: resuming %s at epoch %lld\n", j->io->ckpt_path, (long long)t + 1);
  return DPO_OK;
}

/* Not collective: the settings into j->o (nothing read from files). */
static int dpo__mf_settings(dpo_mf_job_t *j) {
  const dpo_config_t *cfg = j->cfg;
  dpo_hamsi_opts_t *o = &j->o;
  dpo_hamsi_opts_default(o);
  const char *sched;
  int64_t r, K, M, T, ev, seed;
  int bz = 0, plain = 0, rc;
  if ((rc = dpo_config_get_str(cfg, "mf.method", "hamsi", &j->method)) ||
      (rc = dpo_config_get_str(cfg, "mf.part", "strata-b", &j->part)) ||
      (rc = dpo_config_get_str(cfg, "mf.sched", "det", &sched)) ||
      (rc = dpo_config_get_str(cfg, "mf.x0", NULL, &j->x0dir)) ||
      (rc = dpo_config_get_bool(cfg, "mf.plain", 0, &plain)))
    return rc;
  if (plain && !strcasecmp(j->method, "hamsi")) {
    /* the thesis's plain model (eq. (3.1)) with HAMSI: the metric diag(sqrt(deg dbar))
     * instead of diag(deg) (dpopt/hamsi.h), longer steps (beta_t = (eta t)^gamma in the
     * model (3.4) smaller, still meeting (3.8)) and longer still past epoch 15.  Real
     * MovieLens-100K, rank 50, 2 ranks, hamsi-mf's N(0, 1) start: epochs to training RMSE 0.9
     * / 0.8 / 0.7 / 0.5 with diag(deg): 15 / 18 / 23 / 77 at eta 1, 13 / 16 / 20 / 50 at 0.5
     * (longer steps are undone: at 0.3 RMSE 1.24 after 80 epochs); with diag(sqrt(deg
     * dbar)): 9 / 11 / 13 / 38 at 0.5, 8 / 9 / 11 / 27 at 0.2, 7 / 8 / 10 / 24 at 0.1, at the
     * edge (0.05: epochs undone, 15 / 19 / 26 / -).  The biased, regularized default keeps
     * diag(deg) and eta 1 (with a late eta of 0.3 it got worse, see hamsi.c); the other
     * partitions keep diag(deg) and eta 0.5 */
    o->eta = 0.5;
    o->eta_late = 0.1;
    o->eta_from = 15;
    if (!strncasecmp(j->part, "strata", 6)) { /* measured there; COLOR* and HOGWILD keep them */
      o->metric_pow = 0.5;
      o->eta = 0.2;
    }
  }
  if ((rc = dpo_config_get_int(cfg, "mf.rank", plain ? o->r : DPO_MF_RANK, &r)) ||
      (rc = dpo_config_get_int(cfg, "mf.strata", 0, &K)) ||
      (rc = dpo_config_get_int(cfg, "mf.memory", o->memory, &M)) ||
      (rc = dpo_config_get_int(cfg, "mf.epochs", o->epochs, &T)) ||
      (rc = dpo_config_get_int(cfg, "mf.eval_every", o->eval_every, &ev)) ||
      (rc = dpo_config_get_int(cfg, "mf.seed", 1, &seed)) ||
      (rc = dpo_config_get_double(cfg, "mf.eta", o->eta, &o->eta)) ||
      (rc = dpo_config_get_double(cfg, "mf.gamma", o->gamma, &o->gamma)) ||
      (rc = dpo_config_get_double(cfg, "mf.eta_late", o->eta_late, &o->eta_late)) ||
      (rc = dpo_config_get_int(cfg, "mf.eta_from", o->eta_from, &o->eta_from)) ||
      (rc = dpo_config_get_double(cfg, "mf.sigma0", o->sigma0, &o->sigma0)) ||
      (rc = dpo_config_get_double(cfg, "mf.metric_pow", o->metric_pow, &o->metric_pow)) ||
      (rc = dpo_config_get_double(cfg, "mf.step_cap", o->step_cap, &o->step_cap)) ||
      (rc = dpo_config_get_double(cfg, "mf.cache_mb", o->cache_mb, &o->cache_mb)) ||
      (rc = dpo_config_get_double(cfg, "mf.reject_tol", o->reject_tol, &o->reject_tol)) ||
      (rc = dpo_config_get_double(cfg, "mf.init", o->init_scale, &o->init_scale)) ||
      (rc = dpo_config_get_double(cfg, "mf.time", 0, &o->time_limit)) ||
      (rc = dpo_config_get_double(cfg, "mf.holdout", o->holdout, &o->holdout)) ||
      (rc = dpo_config_get_double(cfg, "mf.eval_budget", DPO_MF_EVAL_BUDGET, &o->eval_budget)) ||
      (rc = dpo_config_get_bool(cfg, "mf.repro", 0, &o->repro)) ||
      (rc = dpo_config_get_bool(cfg, "mf.zero_based", 0, &j->zb)) ||
      /* the default model is the one users of LIBMF and Surprise expect; --plain is the
       * thesis's (eq. 3.1: factors only, no L2, the last epoch returned) */
      (rc = dpo_config_get_bool(cfg, "mf.biases", !plain, &bz)) ||
      (rc = dpo_config_get_int(cfg, "mf.early_stop",
                               !plain && o->holdout > 0 && ev >= 1 ? DPO_MF_PATIENCE : 0,
                               &o->early_stop)) ||
      /* the biased model is meant to be deployed: its default lambda generalizes */
      (rc = dpo_config_get_double(cfg, "mf.lambda", bz ? DPO_MF_LAMBDA_BIASED : o->lambda,
                                  &o->lambda)) ||
      (rc = dpo_mf_part_parse(j->part, &o->part)))
    return rc;
  if (plain && bz)
    return dpo_err(DPO_EINVAL, "%s: mf.plain (the thesis's model, factors only) and mf.biases "
                   "exclude each other: drop one", dpo_config_origin(cfg, "mf.biases"));
  if (!strcasecmp(j->method, "hamsi")) o->method = DPO_MF_HAMSI;
  else if (!strcasecmp(j->method, "mbgd") || !strcasecmp(j->method, "mb-gd")) o->method = DPO_MF_MBGD;
  else return dpo_err(DPO_EINVAL, "%s: mf.method = '%s': expected hamsi or mbgd",
                      dpo_config_origin(cfg, "mf.method"), j->method);
  if (!strcasecmp(sched, "det")) o->sched = DPO_MF_SCHED_DET;
  else if (!strcasecmp(sched, "shuffle") || !strcasecmp(sched, "stoc")) o->sched = DPO_MF_SCHED_SHUFFLE;
  else return dpo_err(DPO_EINVAL, "%s: mf.sched = '%s': expected det or shuffle",
                      dpo_config_origin(cfg, "mf.sched"), sched);
  if (r < 1 || r > 1024 || K < 0 || K > (1 << 20) || M < 1 || M > 256 || T < 0 || ev < 0 ||
      ev > (1 << 30))
    return dpo_err(DPO_EINVAL, "mf: rank 1..1024, strata >= 0, memory 1..256, epochs >= 0");
  o->r = (int32_t)r;
  o->biases = bz;
  o->nblocks = (int32_t)K;
  o->memory = (int32_t)M;
  /* a time limit alone means "train until the time is up", not the default epoch count; the
   * early-stopped default model runs until it stops, within DPO_MF_EPOCHS */
  if (o->time_limit > 0 && !dpo_config_get(cfg, "mf.epochs")) T = 0;
  else if (o->early_stop > 0 && !dpo_config_get(cfg, "mf.epochs")) T = DPO_MF_EPOCHS;
  o->epochs = T;
  o->eval_every = (int)ev;
  o->seed = (uint64_t)seed;
  return DPO_OK;
}

int dpo_mf_job_create(MPI_Comm comm, const dpo_config_t *cfg, dpo_mf_job_t **out) {
  *out = NULL;
  dpo_mf_job_t *j = calloc(1, sizeof *j);
  int rc = j ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  if (!rc) {
    j->comm = comm;
    j->cfg = cfg;
    MPI_Comm_rank(comm, &j->rank);
    MPI_Comm_size(comm, &j->size);
    rc = dpo__mf_settings(j);
  }
  if ((rc = dpo_agree(comm, rc))) {
    dpo_mf_job_destroy(j);
    return rc;
  }
  *out = j;
  return DPO_OK;
}

const char *dpo_mf_job_method(const dpo_mf_job_t *j) {
  return j->o.method == DPO_MF_HAMSI ? "hamsi" : "mbgd";
}

int dpo_mf_job_load(dpo_mf_job_t *j, const char *ratings) {
  int rc = dpo_ratings_load(j->comm, ratings, !j->zb, &j->rt);
  if (!rc && j->x0dir) rc = dpo__mf_x0(j->comm, j->x0dir, j->rt, j->o.r, &j->x1i, &j->x2i);
  return rc;
}

int dpo_mf_job_solve(dpo_mf_job_t *j, dpo_mf_io_t *io) {
  dpo_hamsi_opts_t o = j->o;
  int rc = DPO_OK;
  j->io = io;
  if (j->rank == 0) {
    j->prog_tty = isatty(STDERR_FILENO);
    j->prog_explicit = io->progress > 0;
    j->prog_on = !io->quiet && (j->prog_explicit || (io->progress == 0 && j->prog_tty));
    j->prog_t0 = j->prog_last = MPI_Wtime();
  }
  if (j->rank == 0 && io->trace && !io->resumed) {
    fprintf(io->trace, "# train_rmse is a NON-PRIVATE diagnostic computed on the training "
                       "ratings; test_rmse is on held-out ratings\n# seeded run: reproducible, "
                       "not private\n");
    fprintf(io->trace, "epoch,t_train,t_wall,train_rmse_nonprivate,test_rmse,sigma,npairs\n");
    if (fflush(io->trace)) rc = dpo_err(DPO_EIO, "trace.csv: write failed");
  }
  if ((rc = dpo_agree(j->comm, rc))) return rc;
  o.on_trace = dpo__mf_trace_row;
  o.trace_ctx = j;
  o.on_epoch = dpo__mf_epoch;
  o.epoch_ctx = j;
  o.result_on_failure = 1;
  if (io->ckpt_every > 0 || io->stop_after > 0 || io->stop || io->resumed) {
    o.ckpt_path = io->ckpt_path;
    o.resume = io->resumed;
    o.ckpt_due = dpo__mf_ckpt_due;
    o.ckpt_loaded = dpo__mf_ckpt_loaded;
    o.ckpt_ctx = j;
  }
  o.x1_init = j->x1i;
  o.x2t_init = j->x2i;
  int st = dpo_hamsi_run(j->comm, j->rt, &o, &j->res);
  /* resuming: every rank learns that rank 0 accepted the checkpoint */
  if (io->resumed) MPI_Bcast(&io->accepted, 1, MPI_INT, 0, j->comm);
  if (st && !(st == DPO_ENOCONV && j->res)) return st;
  /* diverged: the library returned the last good point; it is written with the trace */
  char msg[1000];
  if (st) snprintf(msg, sizeof msg, "%s", dpo_errmsg());
  rc = dpo__mf_phases(j->comm, j->res, j->ph, j->rb);
  /* per-rank throughput: the minimum and maximum over ranks show the imbalance */
  j->rps[0] = j->res->ratings_per_sec;
  j->rps[1] = -j->res->ratings_per_sec;
  if (!rc && MPI_Allreduce(MPI_IN_PLACE, j->rps, 2, MPI_DOUBLE, MPI_MIN, j->comm) != MPI_SUCCESS)
    rc = dpo_err(DPO_EMPI, "mf: throughput reduction failed");
  if ((rc = dpo_agree(j->comm, rc))) return rc;
  if (j->rank == 0) dpo__mf_progress(j, j->res->epochs, 1);
  if (st)
    return dpo_err(st, "%s; X1.txt, X2t.txt and summary.json hold the last good point (end of "
                   "epoch %lld), trace.csv the evaluations made before the failure", msg,
                   (long long)j->res->epochs);
  return DPO_OK;
}

void dpo_mf_job_result(const dpo_mf_job_t *j, int64_t *epochs, double *train_rmse,
                       double *test_rmse) {
  *epochs = j->res ? j->res->epochs : 0;
  *train_rmse = j->res ? j->res->train_rmse : NAN;
  *test_rmse = j->res ? j->res->test_rmse : NAN;
}

/* X1.txt, X2t.txt, biases.txt and mf's summary fields (rank 0); after a failed solve they
 * hold the last good point. */
int dpo_mf_job_write(const dpo_mf_job_t *j, const char *dir, json_object *sum) {
  const dpo_hamsi_result_t *res = j->res;
  int st = DPO_OK;
  char path[4096], cm[512];
  snprintf(cm, sizeof cm, "X1: row u = the factors of user u (0-based; the ratings' ids minus "
           "1 unless --zero-based); %s %s", j->method, j->part);
  snprintf(path, sizeof path, "%s/X1.txt", dir);
  if ((st = dpo__mf_matrix_write(path, res->X1, res->n_users, res->r, cm))) return st;
  snprintf(cm, sizeof cm, "X2 transposed: row i = the factors of item i (0-based, as X1); "
           "%s %s", j->method, j->part);
  snprintf(path, sizeof path, "%s/X2t.txt", dir);
  if ((st = dpo__mf_matrix_write(path, res->X2t, res->n_items, res->r, cm))) return st;
  if (res->biases) { /* mu, then b_u per user, then b_i per item (dpopt mf-predict reads it) */
    int64_t nb = 1 + (int64_t)res->n_users + res->n_items;
    double *b = malloc(sizeof(double) * (size_t)nb);
    if (!b) return dpo_err(DPO_ENOMEM, "biases.txt");
    b[0] = res->mu;
    memcpy(b + 1, res->bu, sizeof(double) * (size_t)res->n_users);
    memcpy(b + 1 + res->n_users, res->bi, sizeof(double) * (size_t)res->n_items);
    snprintf(cm, sizeof cm, "biases: mean rating, then b_u of the %d users, then b_i of the %d "
             "items; prediction = mean + b_u + b_i + X1[u]'X2t[i]", res->n_users, res->n_items);
    snprintf(path, sizeof path, "%s/biases.txt", dir);
    st = dpo_model_write(path, b, (int32_t)nb, cm);
    free(b);
    if (st) return st;
  }
  dpo__mf_summary(sum, j);
  return DPO_OK;
}

void dpo_mf_job_report(const dpo_mf_job_t *j, FILE *report) {
  const dpo_hamsi_result_t *res = j->res;
  const dpo_hamsi_opts_t *o = &j->o;
  if (j->rank != 0 || !res) return;
  fprintf(report, "method          %s (%s, %s schedule, K = %d strata, r = %d)\n", j->method,
          dpo_mf_part_name(o->part), o->sched ? "shuffled" : "deterministic", res->K, o->r);
  fprintf(report, "ratings         %lld training, %lld held out; %d users x %d items\n",
          (long long)res->n_train, (long long)res->n_test, res->n_users, res->n_items);
  fprintf(report, "blocks          per stratum %lld..%lld ratings; fullest block / mean = %.3f\n",
          (long long)res->balance.stratum_min, (long long)res->balance.stratum_max,
          res->balance.imbalance);
  fprintf(report, "disjoint        %s\n", res->disjoint
             ? "yes: blocks processed together touch disjoint variables (rank-independent result)"
             : o->part == DPO_MF_HOGWILD
                   ? "NO: HOGWILD subsets share variables; on P ranks the ranks' item steps are "
                     "summed (equal to the serial pass to first order only)"
                   : "NO: on P ranks the ranks' item steps of a stratum are summed (one exchange "
                     "per stratum; equal to the serial pass to first order; --repro: exact, one "
                     "per color)");
  fprintf(report, "epochs          %lld (%lld strata, %lld item exchanges)\n",
          (long long)res->epochs, (long long)res->strata, (long long)res->exchanges);
  if (res->best_epoch > 0)
    fprintf(report, "early stopping  best held-out RMSE at epoch %lld (patience %lld): its "
            "factors are kept\n", (long long)res->best_epoch, (long long)o->early_stop);
  fprintf(report, "model           %s, lambda %g\n",
          res->biases ? "mean + user/item biases + factors" : "factors only", o->lambda);
  fprintf(report, "train RMSE      %.6g   (NON-PRIVATE diagnostic)\n", res->train_rmse);
  fprintf(report, "held-out RMSE   %.6g (global mean: %.6g)\n", res->test_rmse,
          res->mean_test_rmse);
  fprintf(report, "wall time       %.3f s (training without evaluation %.3f s)\n", res->t_wall,
          res->t_train);
  fprintf(report, "train RMSE init %.6g   (initial factors; NON-PRIVATE diagnostic)\n",
          res->train_rmse0);
  fprintf(report, "phases max/rank gradient %.3f s, update %.3f s, Hessian approx %.3f s, "
          "transfers %.3f s\n", j->ph[0], j->ph[1], j->ph[2], j->ph[3]);
  fprintf(report, "ratings/s/rank  %.4g .. %.4g\n", j->rps[0], -j->rps[1]);
  if (o->method == DPO_MF_HAMSI) {
    fprintf(report, "L-BFGS pairs    %lld accepted, %lld rejected (s'y <= 0); sigma %.4g\n",
            (long long)res->pairs_accepted, (long long)res->pairs_rejected, res->sigma);
    /* the factors-only model keeps its memory after an undone quasi-Newton epoch (hamsi.c) */
    fprintf(report, "safeguards      %lld epochs undone (%s), %lld block steps capped (rank 0)\n",
            (long long)res->epochs_undone,
            res->biases ? "memory reset" : "memory reset, or kept and quasi-Newton steps halved",
            (long long)res->steps_capped);
  }
  fprintf(report, "privacy         none: seeded, reproducible, NOT private\n");
  if (res->test_rmse > res->mean_test_rmse)
    fprintf(stderr, "dpopt mf: warning: held-out RMSE %.4g is worse than predicting the mean "
            "training rating (%.4g)%s\n", res->test_rmse, res->mean_test_rmse,
            res->biases ? "" : "; the default model (biases, L2, early stopping) is the one "
                               "to deploy");
}

void dpo_mf_job_destroy(dpo_mf_job_t *j) {
  if (!j) return;
  free(j->x1i);
  free(j->x2i);
  dpo_hamsi_result_destroy(j->res);
  dpo_ratings_destroy(j->rt);
  free(j);
}
