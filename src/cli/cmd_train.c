/* dpopt train: load shards, build the objective, run an algorithm through the oracle, write
 * the run directory (trace.csv, model.txt, summary.json, config.ini). */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config.h"
#include "dpopt/comm.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "cli/train_priv.h"
#include "cli/train_ckpt.h"
#include "cli/train_parties.h"

#define DPO__MAXOPTS 64

static const dpo_cli_opt_t dpo__train_opts[] = {
    {"--data", "data.train", "FILE", "training data (libsvm, csv, idx[.gz], bin)"},
    {"--test", "data.test", "FILE", "held-out data for accuracy/loss reports"},
    {"--row-l1-bound", "data.row_l1_bound", "B", "declared public bound on ||u_i||_1"},
    {"--row-l2-bound", "data.row_l2_bound", "B", "declared public bound on ||u_i||_2"},
    {"--row-bound-action", "data.row_bound_action", "A", "reject | clip rows over a declared bound (default reject)"},
    {"--report-rows", "data.report_rows", NULL, "name rejected rows / count clipped rows: NON-PRIVATE output (private algorithms)"},
    {"--model", "model.name", "NAME", "logreg | ridge | lsq (default logreg)"},
    {"--lambda", "model.lambda", "L", "regularization lambda in lambda*||x||^2 (default 1e-4)"},
    {"--intercept", "model.intercept", NULL, "fit a bias term b (model.intercept = 1; regularized by the same lambda; model.txt line \"intercept b\")"},
    {"--no-intercept", "model.no_intercept", NULL, "no bias term (the default; overrides model.intercept)"},
    {"--algo", "algo.name", "NAME", "algorithm (list below; default gd)"},
    {"--iters", "algo.iters", "T", "iterations (default: a private algorithm's own schedule length, else 100)"},
    {"--gtol", "algo.gtol", "G", "stop when ||grad F|| <= G (non-private algorithms; default 0)"},
    {"--batch", "algo.m", "M", "minibatch size m (default n: full batch)"},
    {"--epochs", "algo.epochs", "E", "minibatch algorithms (dp-sgd-rdp): passes over the data, T = ceil(E n / m) steps"},
    {"--lr", "algo.lr", "ETA", "step size (dp-sgd-rdp: base rate of its schedule)"},
    {"--x0", "algo.x0", "V|FILE", "initial point: every coordinate V (default 0), or a model.txt (warm start; treated as public)"},
    {"--eps", "privacy.eps", "E", "privacy budget epsilon (private algorithms)"},
    {"--delta", "privacy.delta", "D", "privacy budget delta (default 0)"},
    {"--clip", "privacy.clip", "N:C", "per-example gradient clipping, l1:C or l2:C"},
    {"--seed", "run.seed", "S", "reproducible randomness: the run is then NOT private"},
    {"--out", "run.dir", "DIR", "run directory (default runs/ALGO-YYYYmmdd-HHMMSS)"},
    {"--fstar", "run.fstar", "F", "newton | none | a number: F* for the f-f* column (default none)"},
    {"--trace-every", "run.trace_every", "K", "trace row every K iterations (default 1)"},
    {"--no-trace-loss", "run.no_trace_loss", NULL, "do not evaluate F(x_t) for the trace"},
    {"--quiet", "run.quiet", NULL, "no progress or messages on stderr"},
    {"--progress", "run.progress", NULL, "progress lines on stderr even when it is not a terminal (mpirun, logs)"},
    {"--checkpoint-every", "run.checkpoint_every", "N", "write RUN/checkpoint every N iterations (default 0: only on SIGTERM/SIGINT)"},
    {"--resume", "run.resume", "RUN", "continue the interrupted run in directory RUN from its checkpoint"},
    {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
    {NULL, NULL, NULL, NULL}};

/* One key line of an algorithm's entry. */
static size_t dpo__algo_key_help(char *buf, size_t cap, const dpo_algo_param_t *p) {
  int n = snprintf(buf, cap, "      algo.%-13s %s (default %s)\n", p->key, p->meaning, p->def);
  return n < 0 ? 0 : (size_t)n;
}

/* The algorithm table with, per algorithm, every key it reads: generated from its own
 * parameter tables (dpo_algo_t.params, then the shared ones it does not override), which
 * dpo_solver_param* enforce, so the list cannot drift from what the code reads. */
static void dpo__algo_help(char *buf, size_t cap) {
  size_t off = (size_t)snprintf(buf, cap, "Algorithms (--algo NAME; a key K below is set with "
                                "--set algo.K=V or [algo] K = V in --config):\n");
  for (const dpo_algo_t *const *a = dpo_algo_list(); *a && off < cap; a++) {
    off += (size_t)snprintf(buf + off, cap - off, "  %-12s %s%s\n", (*a)->name, (*a)->summary,
                            (*a)->is_private ? " [private]" : "");
    for (const dpo_algo_param_t *p = (*a)->params; p && p->key && off < cap; p++)
      off += dpo__algo_key_help(buf + off, cap - off, p);
    for (const dpo_algo_param_t *p = (*a)->shared; p && p->key && off < cap; p++) {
      int own = 0;
      for (const dpo_algo_param_t *q = (*a)->params; q && q->key; q++)
        own |= strcmp(q->key, p->key) == 0;
      if (!own) off += dpo__algo_key_help(buf + off, cap - off, p);
    }
  }
  if (off < cap)
    snprintf(buf + off, cap - off,
             "\nOutputs in the run directory: trace.csv (columns marked _nonprivate are computed on\n"
             "the private training data and must not be released), model.txt, summary.json,\n"
             "config.ini (the effective configuration) and, for private runs, ledger.jsonl.\n"
             "Exit status: 0 ok, 1 usage, 2 bad data, 3 budget exhausted, 4 runtime failure,\n"
             "5 interrupted (SIGTERM/SIGINT: checkpoint written, continue with --resume RUN).\n");
}

/* Declared row bounds are public facts about the data domain (privacy rule 1).  Rows over a
 * bound are rejected or scaled onto the bound.  Which row, its norm and how many rows were
 * scaled are facts about the private data that no charge covers: for a private algorithm they
 * are printed only when asked (report = data.report_rows) and labelled NON-PRIVATE; by default
 * a rejection says only that some row of the file exceeds the bound (the same message on every
 * rank, so not even the rank holding the row shows), and clipping is silent.  Non-private
 * algorithms always get the details. */
static int dpo__enforce_bound(MPI_Comm comm, dpo_shard_t *s, int l1, double bound, int clip,
                              int is_private, int report) {
  int rc = DPO_OK, detail = !is_private || report;
  const char *tag = is_private ? "NON-PRIVATE (data.report_rows): " : "";
  double *nrm1 = malloc((size_t)(s->n ? s->n : 1) * sizeof *nrm1);
  double *nrm2 = malloc((size_t)(s->n ? s->n : 1) * sizeof *nrm2);
  int64_t nclip = 0, nclip_all = 0, nover = 0, nover_all = 0;
  if (!nrm1 || !nrm2) {
    rc = dpo_err(DPO_ENOMEM, "out of memory");
    goto out;
  }
  dpo_shard_row_norms(s, nrm1, nrm2);
  for (int64_t i = 0; i < s->n && rc == DPO_OK; i++) {
    double nv = l1 ? nrm1[i] : nrm2[i];
    if (nv <= bound) continue;
    if (!clip) {
      nover++;
      if (detail)
        rc = dpo_err(DPO_EFORMAT,
                     "%s%s: row %lld has L%d norm %.6g over the declared bound %.6g "
                     "(use --row-bound-action clip to scale such rows)",
                     tag, s->source, (long long)(s->row0 + i + 1), l1 ? 1 : 2, nv, bound);
      break;
    }
    double sc = bound / nv;
    if (s->sparse)
      for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++) s->val[k] *= sc;
    else
      for (int32_t j = 0; j < s->d; j++) s->X[i * (int64_t)s->d + j] *= sc;
    nclip++;
  }
out:
  free(nrm1);
  free(nrm2);
  if (!detail && (rc = dpo_agree(comm, rc)) == DPO_OK) {
    MPI_Allreduce(&nover, &nover_all, 1, MPI_INT64_T, MPI_SUM, comm);
    if (nover_all > 0)
      return dpo_err(DPO_EFORMAT,
                     "%s: a row has an L%d norm over the declared bound %.6g (which row is not "
                     "shown: the algorithm is private; --report-rows shows it, NON-PRIVATE): "
                     "fix the data or the bound, or use --row-bound-action clip",
                     s->source, l1 ? 1 : 2, bound);
  }
  rc = dpo_agree(comm, rc);
  if (rc == DPO_OK && detail) {
    MPI_Allreduce(&nclip, &nclip_all, 1, MPI_INT64_T, MPI_SUM, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && nclip_all > 0)
      dpo_msg("%s%lld rows scaled onto the declared L%d bound %g", tag, (long long)nclip_all,
              l1 ? 1 : 2, bound);
  }
  return rc;
}

/* Timing and placement facts for scaling studies (jobs/scaling): per-rank oracle compute and
 * communication seconds reduced to min / max / mean over ranks, and how the ranks sit on
 * nodes (MPI_COMM_TYPE_SHARED).  Collective; the result is valid on rank 0. */
typedef struct {
  double tmin[2], tmax[2], tavg[2]; /* [0] compute, [1] communication */
  int nodes, rpn_min, rpn_max, cpus_min, oversub;
} dpo__timing_t;

static void dpo__timing_reduce(MPI_Comm comm, const dpo_oracle_stats_t *st, dpo__timing_t *t) {
  int size, lrank = 0, lsize = 1;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_size(comm, &size);
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS &&
      node != MPI_COMM_NULL) {
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &lsize);
    MPI_Comm_free(&node);
  }
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  int cpus = nc > 0 ? (int)nc : 1;
  double tc[2] = {st->t_compute, st->t_comm}, tsum[2] = {0, 0};
  /* max of {lsize, -lsize, -cpus, oversubscribed} gives max, min, min and any in one reduce */
  int iv[4] = {lsize, -lsize, -cpus, lsize > cpus}, imax[4] = {0, 0, 0, 0}, leaders = 0;
  int lead = lrank == 0;
  MPI_Reduce(tc, t->tmin, 2, MPI_DOUBLE, MPI_MIN, 0, comm);
  MPI_Reduce(tc, t->tmax, 2, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(tc, tsum, 2, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Reduce(iv, imax, 4, MPI_INT, MPI_MAX, 0, comm);
  MPI_Reduce(&lead, &leaders, 1, MPI_INT, MPI_SUM, 0, comm);
  t->tavg[0] = tsum[0] / size;
  t->tavg[1] = tsum[1] / size;
  t->rpn_max = imax[0];
  t->rpn_min = -imax[1];
  t->cpus_min = -imax[2];
  t->oversub = imax[3];
  t->nodes = leaders;
}

static void dpo__timing_json(json_object *sum, const dpo__timing_t *t, int64_t iters_done) {
  static const char *what[2] = {"compute", "comm"};
  char k[64];
  for (int i = 0; i < 2; i++) {
    snprintf(k, sizeof k, "%s_time_s_min", what[i]);
    json_object_object_add(sum, k, dpo_json_double(t->tmin[i]));
    snprintf(k, sizeof k, "%s_time_s_avg", what[i]);
    json_object_object_add(sum, k, dpo_json_double(t->tavg[i]));
  }
  json_object_object_add(sum, "iterations_done", json_object_new_int64(iters_done));
  json_object_object_add(sum, "nodes", json_object_new_int(t->nodes));
  json_object_object_add(sum, "ranks_per_node", json_object_new_int(t->rpn_max));
  json_object_object_add(sum, "ranks_per_node_min", json_object_new_int(t->rpn_min));
  json_object_object_add(sum, "cpus_per_node_min", json_object_new_int(t->cpus_min));
  json_object_object_add(sum, "oversubscribed", json_object_new_boolean(t->oversub));
  /* a tarball's configure cannot know the revision: the job scripts pass it at run time */
  const char *rev = getenv("DPOPT_GIT_REV");
  json_object_object_add(sum, "git_rev", json_object_new_string(rev && *rev ? rev : "unknown"));
}

/* The run directory, settled before the data are loaded and before anything is written
 * (rank 0 decides, every rank gets the name).  --resume RUN: RUN must still hold a checkpoint
 * (a completed run has none; nothing in it is touched).  A fresh run never writes into an
 * existing run: --out DIR must not exist or be empty (else a usage error naming it), and the
 * default runs/ALGO-DATE-TIME takes the suffix -2, -3, ... when taken; either is created with
 * dpo_mkdir_new (one mkdir plus an exclusive trace.csv), so concurrent runs cannot share one. */
static int dpo__run_dir(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg, const char *algo,
                        int resuming, char *dir, int cap) {
  const char *given = NULL;
  int rc = DPO_OK, exists = 0;
  dpo_config_get_str(cfg, "run.dir", NULL, &given);
  if (ctx->rank == 0) {
    char p[1024];
    if (given && snprintf(dir, (size_t)cap, "%s", given) >= cap)
      rc = dpo_err(DPO_EINVAL, "run directory %s: path too long", given);
    else if (resuming) {
      snprintf(p, sizeof p, "%s/checkpoint", dir);
      if (access(p, R_OK) != 0)
        rc = dpo_err(DPO_EIO, "--resume %s: no checkpoint (%s): the run completed or stopped "
                     "before its first checkpoint; nothing to resume", dir, p);
    } else if (given) {
      if ((rc = dpo_mkdir_new(dir, "trace.csv", &exists)) && exists)
        rc = dpo_err(DPO_EINVAL, "%s: run directory %s exists and is not empty: a new run never "
                     "writes into an existing one; continue an interrupted run with --resume %s, "
                     "or choose another --out",
                     dpo_config_origin(cfg, "run.dir") ? dpo_config_origin(cfg, "run.dir")
                                                       : "--out",
                     dir, dir);
    } else {
      char ts[32];
      time_t now = time(NULL);
      strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", localtime(&now));
      for (int k = 1; k <= 1000; k++) {
        if (k == 1) snprintf(dir, (size_t)cap, "runs/%s-%s", algo, ts);
        else snprintf(dir, (size_t)cap, "runs/%s-%s-%d", algo, ts, k);
        rc = dpo_mkdir_new(dir, "trace.csv", &exists);
        if (!exists) break;
      }
    }
  }
  if ((rc = dpo_agree(ctx->comm, rc))) return rc;
  if (MPI_Bcast(dir, cap, MPI_CHAR, 0, ctx->comm) != MPI_SUCCESS)
    return dpo_agree(ctx->comm, dpo_err(DPO_EMPI, "run directory: MPI_Bcast failed"));
  return DPO_OK;
}

/* A run that fails after its directory exists leaves FAILED there (stage, reason, exit
 * status), so a directory with an empty or short journal is never mistaken for a finished
 * run.  Rank 0 only, best effort: the error itself is reported on stderr by every rank. */
static void dpo__mark_failed(const char *run_dir, const char *stage, int rc) {
  char p[1024], msg[2048];
  snprintf(p, sizeof p, "%s/FAILED", run_dir);
  int n = snprintf(msg, sizeof msg,
                   "dpopt %s failed: %s (%s); exit status %d\n"
                   "Every privacy charge made before the failure is in ledger.jsonl (if the run is "
                   "private) and stays spent.\n",
                   stage, dpo_errmsg(), dpo_strerror(rc), dpo_cli_exit_status(rc));
  if (n > 0) (void)dpo_write_atomic(p, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

static void dpo__unmark_failed(const char *run_dir) {
  char p[1024];
  snprintf(p, sizeof p, "%s/FAILED", run_dir);
  unlink(p);
}

/* --x0 FILE: the coefficients of a model.txt (read on rank 0, broadcast) as the initial point.
 * The file is an input the privacy analysis treats as public (a released model is; a
 * non-private model of the same data is not).  Collective. */
static int dpo__warm_start(const dpo_cli_ctx_t *ctx, const char *path, const char *data,
                           double *x0, int32_t d) {
  double *w = NULL;
  int32_t dw = 0;
  int rc = ctx->rank == 0 ? dpo_model_read(path, &w, &dw) : DPO_OK;
  if (rc == DPO_OK && ctx->rank == 0 && dw != d)
    rc = dpo_err(DPO_EFORMAT, "--x0 %s: dimension mismatch: the model has %d coefficients but "
                 "data %s has %d features", path, (int)dw, data, (int)d);
  if (rc == DPO_OK && ctx->rank == 0) memcpy(x0, w, (size_t)d * sizeof *x0);
  free(w);
  if ((rc = dpo_agree(ctx->comm, rc))) return rc;
  if (MPI_Bcast(x0, d, MPI_DOUBLE, 0, ctx->comm) != MPI_SUCCESS)
    return dpo_agree(ctx->comm, dpo_err(DPO_EMPI, "--x0 %s: MPI_Bcast failed", path));
  return DPO_OK;
}

int dpo_cmd_train(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, dpo__train_opts, dpo_cli_data_opts);
  static char more[32768]; /* the algorithm table with every key (dpo__algo_help) */
  dpo__algo_help(more, sizeof more);
  dpo_config_t *cfg = NULL;
  dpo_shard_t *train = NULL, *test = NULL;
  dpo_model_t *model = NULL;
  dpo_oracle_t *oracle = NULL;
  dpo_solver_t *solver = NULL;
  dpo_train_priv_t *priv = NULL;
  dpo_train_parties_t *parties = NULL; /* multi-party runs (train_parties.c) */
  double *x0 = NULL;
  FILE *trace = NULL;
  json_object *sum = NULL;
  char *pos[1];
  int npos, rc, ex = 0;
  const char *stage = "train";
  /* this run created the run directory (or passed the --resume checks for it): a failure is
   * recorded in it (FAILED); never in a directory another run owns */
  int dir_ready = 0;
  double t_start = dpo_wtime();

  if (dpo_config_create(&cfg)) return dpo_cli_fail(ctx, "train", DPO_ENOMEM);
  dpo_train_signals_install(); /* every rank: SIGTERM/SIGINT stop the run after a step */
  rc = dpo_cli_parse(ctx, argc, argv, opts, "usage: mpirun -np P dpopt train [options]", more, cfg,
                     pos, 0, &npos);
  if (rc) {
    ex = rc > 0 ? 0 : DPO_EXIT_USAGE;
    goto out;
  }
  /* --resume RUN: the run's own settings; the command line may change only run.* keys */
  char resume_dir[512] = "";
  int resuming = 0;
  if (dpo_config_get(cfg, "run.resume")) {
    dpo_config_t *merged = NULL;
    snprintf(resume_dir, sizeof resume_dir, "%s", dpo_config_get(cfg, "run.resume"));
    resuming = 1;
    if ((rc = dpo_train_resume_config(cfg, resume_dir, &merged))) goto fail;
    dpo_config_destroy(cfg);
    cfg = merged;
  }
  int64_t ckpt_every = 0, stop_after = 0;
  if ((rc = dpo_config_get_int(cfg, "run.checkpoint_every", 0, &ckpt_every)) ||
      (rc = dpo_config_get_int(cfg, "run.stop_after", 0, &stop_after)))
    goto fail;
  if (ckpt_every < 0 || stop_after < 0) {
    rc = dpo_err(DPO_EINVAL, "run.checkpoint_every and run.stop_after must be >= 0");
    goto fail;
  }
  int quiet = 0;
  if ((rc = dpo_config_get_bool(cfg, "run.quiet", 0, &quiet))) goto fail;
  dpo_msg_set_quiet(quiet || ctx->rank != 0);
  if ((rc = dpo_cli_check_ranks(ctx, cfg))) goto fail; /* before any collective or file */

  /* ---- configuration ---- */
  const char *train_path, *test_path, *model_name, *algo_name, *fstar_s, *action, *x0s;
  double lambda, x0v = 0.0, b1, b2;
  int64_t iters, trace_every;
  int no_trace_loss, report_rows;
  dpo_config_get_str(cfg, "data.train", NULL, &train_path);
  dpo_config_get_str(cfg, "data.test", NULL, &test_path);
  dpo_config_get_str(cfg, "model.name", "logreg", &model_name);
  dpo_config_get_str(cfg, "algo.name", "gd", &algo_name);
  dpo_config_get_str(cfg, "run.fstar", "none", &fstar_s);
  dpo_config_get_str(cfg, "data.row_bound_action", "reject", &action);
  dpo_config_get_str(cfg, "algo.x0", "0", &x0s);
  const char *x0_file = NULL; /* algo.x0 = a model file: warm start from its coefficients */
  {
    char *end;
    x0v = strtod(x0s, &end);
    if (end == x0s || *end) x0_file = x0s;
    else if (!isfinite(x0v)) {
      rc = dpo_err(DPO_EINVAL, "%s: algo.x0 = '%s': expected a finite number or a model file",
                   dpo_config_origin(cfg, "algo.x0"), x0s);
      goto fail;
    }
  }
  int progress = 0; /* run.progress unset: automatic (a terminal) */
  if (dpo_config_get(cfg, "run.progress")) {
    if ((rc = dpo_config_get_bool(cfg, "run.progress", 0, &progress))) goto fail;
    progress = progress ? 1 : -1;
  }
  if ((rc = dpo_config_get_double(cfg, "model.lambda", 1e-4, &lambda)) ||
      (rc = dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &b1)) ||
      (rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &b2)) ||
      (rc = dpo_config_get_int(cfg, "algo.iters", 100, &iters)) ||
      (rc = dpo_config_get_int(cfg, "run.trace_every", 1, &trace_every)) ||
      (rc = dpo_config_get_bool(cfg, "run.no_trace_loss", 0, &no_trace_loss)) ||
      (rc = dpo_config_get_bool(cfg, "data.report_rows", 0, &report_rows)))
    goto fail;
  if (!train_path) dpo_config_get_str(cfg, "parties.data", NULL, &train_path); /* per party */
  if (!train_path) {
    rc = dpo_err(DPO_EINVAL, "no training data: give --data FILE or data.train in --config");
    goto fail;
  }
  const dpo_algo_t *algo = dpo_algo_find(algo_name);
  if (!algo) {
    rc = dpo_err(DPO_EINVAL, "%s: unknown algorithm '%s' (see dpopt train --help)",
                 dpo_config_origin(cfg, "algo.name") ? dpo_config_origin(cfg, "algo.name") : "--algo",
                 algo_name);
    goto fail;
  }
  if ((ckpt_every > 0 || stop_after > 0 || resuming) && !dpo_algo_can_checkpoint(algo)) {
    rc = dpo_err(DPO_EUNSUP, "algorithm %s cannot write or resume checkpoints: drop "
                 "--checkpoint-every / --resume / run.stop_after", algo->name);
    goto fail;
  }
  double gtol_set = 0; /* the driver refuses it too, but only after the data are loaded */
  if ((rc = dpo_config_get_double(cfg, "algo.gtol", 0.0, &gtol_set))) goto fail;
  if (algo->is_private && gtol_set > 0) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.gtol = %g stops %s on the gradient of the private data, a "
                 "decision no charge covers: drop --gtol (private algorithms run their planned "
                 "steps)", dpo_config_origin(cfg, "algo.gtol"), gtol_set, algo->name);
    goto fail;
  }
  int clip_rows = !strcasecmp(action, "clip");
  if (!clip_rows && strcasecmp(action, "reject")) {
    rc = dpo_err(DPO_EINVAL, "%s: data.row_bound_action = '%s': expected reject or clip",
                 dpo_config_origin(cfg, "data.row_bound_action"), action);
    goto fail;
  }
  if (iters < 0 || trace_every < 0 || lambda < 0 || !(isnan(b1) || b1 > 0) || !(isnan(b2) || b2 > 0)) {
    rc = dpo_err(DPO_EINVAL, "iters, trace_every, lambda must be >= 0 and row bounds > 0");
    goto fail;
  }
  if ((rc = dpo_model_create(model_name, lambda, &model))) goto fail;
  {
    int icpt = 0, no_icpt = 0;
    if ((rc = dpo_config_get_bool(cfg, "model.intercept", 0, &icpt)) ||
        (rc = dpo_config_get_bool(cfg, "model.no_intercept", 0, &no_icpt)) ||
        (rc = dpo_model_set_intercept(model, icpt && !no_icpt)))
      goto fail;
  }
  double fstar = NAN;
  int fstar_newton = !strcasecmp(fstar_s, "newton");
  if (!fstar_newton && strcasecmp(fstar_s, "none")) {
    char *end;
    fstar = strtod(fstar_s, &end);
    if (end == fstar_s || *end) {
      rc = dpo_err(DPO_EINVAL, "%s: run.fstar = '%s': expected newton, none or a number",
                   dpo_config_origin(cfg, "run.fstar"), fstar_s);
      goto fail;
    }
  }

  /* Every check that can refuse the run comes before the run directory is written and before
   * the data are loaded: the configuration above, the budget here, the directory next. */
  dpo_load_opts_t lo;
  if ((rc = dpo_cli_load_opts(cfg, &lo))) goto fail;
  lo.labels = dpo_model_binary(model) ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
  if ((rc = dpo_train_parties_setup(ctx, cfg, algo->is_private, &parties))) goto fail;
  /* ---- privacy set-up (budget, clipping, noise stream; needs no data) ---- */
  stage = "train (privacy set-up)";
  if ((rc = dpo_train_priv_setup(ctx, cfg, algo, NULL, model, &priv))) goto fail;

  dpo_cli_warn_typos(ctx, cfg); /* every key validation reads is known by now */

  /* ---- run directory ---- */
  stage = "train (run directory)";
  char run_dir[512], ckpt_path[1024];
  if ((rc = dpo__run_dir(ctx, cfg, algo->name, resuming, run_dir, (int)sizeof run_dir)))
    goto fail;
  snprintf(ckpt_path, sizeof ckpt_path, "%s/checkpoint", run_dir);
  dir_ready = !resuming; /* created by this run */
  rc = DPO_OK;
  if (ctx->rank == 0) {
    char p[1024];
    snprintf(p, sizeof p, "%s/trace.csv", run_dir);
    if (resuming) { /* appended to after the checkpoint's offset (dpo_train_trace_rewind) */
      if (!(trace = fopen(p, "r+"))) rc = dpo_err(DPO_EIO, "%s: cannot open to resume", p);
    } else if (!(trace = fopen(p, "w"))) rc = dpo_err(DPO_EIO, "%s: cannot create", p);
    else rc = dpo_train_priv_trace_note(priv, trace);
    /* config.ini now, not only at the end: --resume needs it after an interruption */
    if (!rc && !resuming) rc = dpo_train_write_config(cfg, run_dir);
  }
  if ((rc = dpo_agree(ctx->comm, rc))) goto fail;
  if ((rc = resuming ? dpo_train_priv_reopen_ledger(priv, run_dir)
                     : dpo_train_priv_open_ledger(priv, run_dir)))
    goto fail;
  dir_ready = 1; /* resuming: the run's checkpoint and journal are there, it is this run's */

  /* ---- data ---- */
  stage = "train (loading data)";
  if ((rc = dpo_train_parties_load(parties, ctx, train_path, &lo, &train))) goto fail;
  if (!isnan(b1) && (rc = dpo__enforce_bound(ctx->comm, train, 1, b1, clip_rows,
                                             algo->is_private, report_rows)))
    goto fail;
  if (!isnan(b2) && (rc = dpo__enforce_bound(ctx->comm, train, 0, b2, clip_rows,
                                             algo->is_private, report_rows)))
    goto fail;
  if (test_path) {
    lo.d = train->d; /* the test set must live in the training feature space */
    if ((rc = dpo_shard_load(ctx->comm, test_path, &lo, &test))) goto fail;
  }
  /* the bias column, after the declared bounds were checked on the features themselves */
  if ((rc = dpo_model_prepare_shard(model, train)) ||
      (test && (rc = dpo_model_prepare_shard(model, test))))
    goto fail;
  dpo_msg("loaded %s: %lld rows x %d features on %d rank%s", train_path,
          (long long)train->n_global, train->d, ctx->size, ctx->size > 1 ? "s" : "");

  /* ---- reference optimum (non-private diagnostic) ---- */
  if (fstar_newton) {
    stage = "train (Newton reference F*)";
    double *xs = calloc((size_t)train->d, sizeof *xs);
    dpo_newton_info_t ni;
    if (!xs) {
      rc = dpo_err(DPO_ENOMEM, "out of memory");
      goto fail;
    }
    rc = dpo_newton_solve(ctx->comm, model, train, xs, 1e-10, 100, &ni);
    free(xs);
    if (rc) goto fail;
    fstar = ni.F;
    dpo_msg("Newton reference: F* = %.15g after %lld iterations (||grad|| = %.2e) [non-private]",
            ni.F, (long long)ni.iters, ni.gnorm);
  }

  /* ---- solve ---- */
  stage = "train";
  const dpo_clip_t *clip = dpo_train_priv_clip(priv);
  if ((rc = dpo_oracle_create(ctx->comm, model, train, clip, &oracle))) goto fail;
  if (test && (rc = dpo_oracle_set_heldout(oracle, test))) goto fail;
  if ((rc = dpo_train_parties_attach(parties, ctx, oracle, dpo_train_priv_ledger(priv), trace)))
    goto fail;
  if (!(x0 = malloc((size_t)train->d * sizeof *x0))) {
    rc = dpo_err(DPO_ENOMEM, "out of memory");
    goto fail;
  }
  for (int32_t j = 0; j < train->d; j++) x0[j] = x0v;
  /* a resumed run takes its iterate from the checkpoint, not from algo.x0 */
  if (x0_file && !resuming && (rc = dpo__warm_start(ctx, x0_file, train_path, x0, train->d)))
    goto fail;
  if ((rc = dpo_solver_create(oracle, algo, cfg, dpo_train_priv_rng(priv),
                              dpo_train_priv_ledger(priv), x0, &solver)))
    goto fail;
  dpo_train_priv_attach(priv, solver);
  if (resuming) {
    int64_t toff = -1;
    if ((rc = dpo_solver_resume(solver, ckpt_path, &toff))) goto fail;
    if (ctx->rank == 0) {
      char tp[1024];
      snprintf(tp, sizeof tp, "%s/trace.csv", run_dir);
      rc = toff >= 0 ? dpo_train_trace_rewind(trace, tp, (long long)toff) : DPO_OK;
      if (!rc) {
        int64_t orph = dpo_solver_resume_orphans(solver);
        dpo_msg("resuming %s at iteration %lld%s", run_dir, (long long)dpo_solver_start_iter(solver),
                orph ? "" : "");
        if (orph)
          dpo_msg("the journal holds %lld charge(s) after the checkpoint: they stay spent, and "
                  "the steps they belong to are charged again when redone", (long long)orph);
      }
    }
    if ((rc = dpo_agree(ctx->comm, rc))) goto fail;
  }
  dpo_run_opts_t ro;
  dpo_run_opts_default(&ro);
  /* unset: the algorithm's own schedule (its release plan), so a private run stops where its
   * charges say it does (optim.h, "release plans") */
  ro.max_iter = dpo_config_get(cfg, "algo.iters") ? iters : DPO_ITERS_PLAN;
  if ((rc = dpo_config_get_double(cfg, "algo.gtol", 0.0, &ro.gtol))) goto fail;
  ro.trace_every = trace_every;
  ro.trace_loss = !no_trace_loss && !dpo_train_parties_hide_train(parties);
  ro.quiet = quiet;
  ro.progress = progress;
  ro.fstar = fstar;
  ro.trace = trace;
  ro.checkpoint_every = ckpt_every;
  ro.checkpoint_path = ckpt_path;
  ro.stop = dpo_train_stop_flag();
  ro.stop_after = stop_after;
  dpo_cli_warn_unused(ctx, cfg);
  double t_solve = dpo_wtime(); /* the iterations alone, without loading and set-up */
  int run_rc = dpo_solver_run(solver, &ro);
  t_solve = dpo_wtime() - t_solve;
  if (run_rc == DPO_EINTR) {
    /* every rank stopped at the same step; the journal is fsynced charge by charge */
    if (trace) fflush(trace);
    if (ctx->rank == 0)
      fprintf(stderr, "dpopt train: %s; run directory %s\n", dpo_errmsg(), run_dir);
    ex = DPO_EXIT_INTR;
    goto out;
  }
  if (run_rc != DPO_OK && run_rc != DPO_EBUDGET) {
    rc = run_rc;
    goto fail;
  }
  if (run_rc == DPO_EBUDGET && ctx->rank == 0)
    dpo_msg("privacy budget exhausted: %s; keeping the last released iterate", dpo_errmsg());

  /* ---- final evaluation and outputs ---- */
  double *x = dpo_solver_x(solver); /* valid on rank 0 */
  double tr_loss = NAN, tr_metric = NAN, te_loss = NAN, te_metric = NAN;
  if (ctx->rank == 0) {
    /* local / shares: the coordinator receives no exact training sums, not even diagnostics */
    rc = dpo_train_parties_hide_train(parties)
             ? DPO_OK : dpo_oracle_eval_metric(oracle, x, 0, &tr_loss, &tr_metric);
    if (!rc && test) rc = dpo_oracle_eval_metric(oracle, x, 1, &te_loss, &te_metric);
    int frc = dpo_oracle_finish(oracle, rc);
    if (!rc) rc = frc;
  } else {
    /* no request at all when the training metric is withheld and there is no test set */
    rc = dpo_train_parties_hide_train(parties) && !test ? DPO_OK : dpo_oracle_serve(oracle);
  }
  if ((rc = dpo_agree(ctx->comm, rc))) goto fail;
  double wall = dpo_wtime() - t_start;
  dpo_oracle_stats_t ost;
  dpo_oracle_get_stats(oracle, &ost);
  double tc[2] = {ost.t_compute, ost.t_comm}, tcmax[2];
  MPI_Reduce(tc, tcmax, 2, MPI_DOUBLE, MPI_MAX, 0, ctx->comm);
  dpo__timing_t tim;
  dpo__timing_reduce(ctx->comm, &ost, &tim);

  if (ctx->rank == 0) {
    int binary = dpo_model_binary(model);
    const char *metric = binary ? "accuracy" : "mse";
    double xx = 0; /* ||x||^2: F = data loss + lambda ||x||^2 */
    for (int32_t j = 0; j < train->d; j++) xx += x[j] * x[j];
    char p[1024], cm[512];
    snprintf(cm, sizeof cm, "dpopt %s model, algo %s, %s, d=%d\n%s", model_name, algo->name,
             train_path, train->d, dpo_train_priv_label(priv));
    snprintf(p, sizeof p, "%s/model.txt", run_dir);
    int icpt = dpo_model_intercept(model);
    if ((rc = dpo_model_write_icpt(p, x, train->d - icpt, icpt, cm))) goto fail0;
    /* again at the end (atomically): keys the run resolved on the way are in it now */
    if ((rc = dpo_train_write_config(cfg, run_dir))) goto fail0;
    sum = json_object_new_object();
    json_object_object_add(sum, "dpopt_version", json_object_new_string(PACKAGE_VERSION));
    json_object_object_add(sum, "algo", json_object_new_string(algo->name));
    json_object_object_add(sum, "model", json_object_new_string(model_name));
    json_object_object_add(sum, "lambda", dpo_json_double(lambda));
    json_object_object_add(sum, "ranks", json_object_new_int(ctx->size));
    json_object_object_add(sum, "train", json_object_new_string(train_path));
    json_object_object_add(sum, "n", json_object_new_int64(train->n_global));
    json_object_object_add(sum, "d", json_object_new_int(train->d));
    json_object_object_add(sum, "intercept", json_object_new_boolean(icpt));
    json_object_object_add(sum, "iterations", json_object_new_int64(dpo_solver_max_iter(solver)));
    const dpo_plan_t *plan = dpo_solver_plan(solver);
    if (plan->kind != DPO_PLAN_NONE) {
      json_object *pj = json_object_new_object();
      json_object_object_add(pj, "kind", json_object_new_string(dpo_plan_kind_name(plan->kind)));
      json_object_object_add(pj, "steps", json_object_new_int64(plan->steps));
      json_object_object_add(pj, "what", json_object_new_string(plan->what));
      if (plan->batch > 0) json_object_object_add(pj, "batch", json_object_new_int64(plan->batch));
      if (plan->noise_multiplier > 0)
        json_object_object_add(pj, "noise_multiplier", dpo_json_double(plan->noise_multiplier));
      if (plan->lr > 0) json_object_object_add(pj, "lr", dpo_json_double(plan->lr));
      json_object_object_add(sum, "plan", pj);
    }
    json_object_object_add(sum, "status",
                           json_object_new_string(run_rc == DPO_EBUDGET ? "budget_exhausted" : "ok"));
    json_object_object_add(sum, "wall_time_s", dpo_json_double(wall));
    json_object_object_add(sum, "compute_time_s_max", dpo_json_double(tcmax[0]));
    json_object_object_add(sum, "comm_time_s_max", dpo_json_double(tcmax[1]));
    json_object_object_add(sum, "solve_time_s", dpo_json_double(t_solve));
    dpo__timing_json(sum, &tim, dpo_solver_iters(solver));
    json_object_object_add(sum, "oracle_evals", json_object_new_int64(ost.evals));
    char k[64];
    snprintf(k, sizeof k, "train_%s_nonprivate", metric);
    /* "loss" is the data term (no regularizer) everywhere; "objective" is F (README) */
    json_object_object_add(sum, "train_loss_nonprivate", dpo_json_double(tr_loss));
    json_object_object_add(sum, "train_objective_nonprivate",
                           dpo_json_double(isnan(tr_loss) ? NAN : tr_loss + lambda * xx));
    json_object_object_add(sum, k, dpo_json_double(tr_metric));
    if (!isnan(fstar)) {
      json_object_object_add(sum, "fstar_nonprivate", dpo_json_double(fstar));
    }
    if (test) {
      snprintf(k, sizeof k, "test_%s", metric);
      json_object_object_add(sum, "test", json_object_new_string(test_path));
      json_object_object_add(sum, "n_test", json_object_new_int64(test->n_global));
      json_object_object_add(sum, "test_loss", dpo_json_double(te_loss));
      json_object_object_add(sum, k, dpo_json_double(te_metric));
    }
    dpo_train_priv_summary(priv, sum);
    dpo_train_parties_summary(parties, dpo_train_priv_ledger(priv), sum);
    const char *js = json_object_to_json_string_ext(sum, JSON_C_TO_STRING_PRETTY);
    snprintf(p, sizeof p, "%s/summary.json", run_dir);
    if ((rc = dpo_write_atomic(p, js, strlen(js)))) goto fail0;
    /* the human summary on stdout */
    printf("run directory   %s\n", run_dir);
    printf("algorithm       %s (%s, lambda=%g) on %d rank%s, %lld rows x %d features\n", algo->name,
           model_name, lambda, ctx->size, ctx->size > 1 ? "s" : "", (long long)train->n_global,
           train->d);
    printf("status          %s\n", run_rc == DPO_EBUDGET ? "stopped: privacy budget exhausted" : "completed");
    dpo_train_priv_print(priv, stdout);
    if (dpo_solver_plan(solver)->kind != DPO_PLAN_NONE)
      printf("release plan    %s: %s; %lld of %lld steps ran\n",
             dpo_plan_kind_name(dpo_solver_plan(solver)->kind), dpo_solver_plan(solver)->what,
             (long long)dpo_solver_iters(solver), (long long)dpo_solver_plan(solver)->steps);
    dpo_train_parties_print(parties, dpo_train_priv_ledger(priv), stdout);
    printf("train data loss %.6f   [non-private diagnostic]\n", tr_loss);
    printf("train objective F %.6f   [non-private diagnostic; data loss + lambda ||x||^2]\n",
           tr_loss + lambda * xx);
    printf("train %-9s %.4f   [non-private diagnostic]\n", metric, tr_metric);
    if (!isnan(fstar))
      printf("F(x) - F*       %.6e   [non-private diagnostic]\n", tr_loss + lambda * xx - fstar);
    if (test) {
      printf("test data loss  %.6f   (%s, %lld rows)\n", te_loss, test_path, (long long)test->n_global);
      printf("test %-10s %.4f   (%s)\n", metric, te_metric, test_path);
    }
    printf("wall time       %.3f s\n", wall);
  fail0:;
  }
  rc = dpo_agree(ctx->comm, rc);
  if (rc) goto fail;
  ex = run_rc == DPO_EBUDGET ? DPO_EXIT_BUDGET : 0;
  /* the run is complete: a later --resume must not redo (and re-spend) its last steps */
  if (ctx->rank == 0) {
    unlink(ckpt_path);
    dpo__unmark_failed(run_dir); /* a resumed run that completes is no longer failed */
  }
  goto out;
fail:
  dpo_cli_warn_typos(ctx, cfg); /* a typo first, even when the run fails for another reason */
  ex = dpo_cli_fail(ctx, stage, rc); /* before FAILED: writing it may record a new detail */
  if (dir_ready && ctx->rank == 0) dpo__mark_failed(run_dir, stage, rc);
out:
  if (trace) fclose(trace);
  if (sum) json_object_put(sum);
  free(x0);
  dpo_solver_destroy(solver);
  dpo_oracle_destroy(oracle);
  dpo_train_priv_destroy(priv);
  dpo_train_parties_destroy(parties);
  dpo_shard_destroy(test);
  dpo_shard_destroy(train);
  dpo_model_destroy(model);
  dpo_config_destroy(cfg);
  dpo_train_signals_restore();
  return ex;
}
