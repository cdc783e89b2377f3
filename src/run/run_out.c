/* The run directory and the outputs of a run (dpopt/run.h): claiming the directory, FAILED,
 * model.txt, summary.json, config.ini, and the human summary. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/wait.h"
#include "config.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run/run_agglo.h"
#include "run/run_blas.h"
#include "run/run_ckpt.h"
#include "run/run_impl.h"
#include "run/run_parties.h"
#include "run/run_priv.h"

/* The run directory, settled before the data are loaded and before anything is written
 * (rank 0 decides, every rank gets the name).  --resume RUN: RUN must still hold a checkpoint
 * (a completed run has none; nothing in it is touched).  A fresh run never writes into an
 * existing run: run.dir must not exist or be empty (else a usage error naming it), and the
 * default runs/ALGO-DATE-TIME takes the suffix -2, -3, ... when taken; either is created with
 * dpo_mkdir_new (one mkdir plus an exclusive trace.csv), so concurrent runs cannot share one. */
int dpo__run_dir(dpo_run_t *r) {
  const dpo_config_t *cfg = r->cfg;
  const char *given = NULL;
  char *dir = r->dir;
  int cap = (int)sizeof r->dir, rc = DPO_OK, exists = 0;
  dpo_config_get_str(cfg, "run.dir", NULL, &given);
  if (r->rank == 0) {
    char p[1024];
    if (given && snprintf(dir, (size_t)cap, "%s", given) >= cap)
      rc = dpo_err(DPO_EINVAL, "run directory %s: path too long", given);
    else if (r->resuming) {
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
        if (k == 1) snprintf(dir, (size_t)cap, "runs/%s-%s", r->dir_name, ts);
        else snprintf(dir, (size_t)cap, "runs/%s-%s-%d", r->dir_name, ts, k);
        rc = dpo_mkdir_new(dir, "trace.csv", &exists);
        if (!exists) break;
      }
    }
  }
  if ((rc = dpo_agree(r->comm, rc))) {
    dir[0] = '\0';
    return rc;
  }
  if (MPI_Bcast(dir, cap, MPI_CHAR, 0, r->comm) != MPI_SUCCESS)
    return dpo_agree(r->comm, dpo_err(DPO_EMPI, "run directory: MPI_Bcast failed"));
  return DPO_OK;
}

/* A run that fails after its directory exists leaves FAILED there (stage, reason, exit
 * status), so a directory with an empty or short journal is never mistaken for a finished
 * run.  Rank 0 only, best effort: the caller reports the error itself. */
void dpo__run_mark_failed(const dpo_run_t *r) {
  char p[1024], msg[2048];
  snprintf(p, sizeof p, "%s/FAILED", r->dir);
  int n = snprintf(msg, sizeof msg,
                   "dpopt %s failed: %s (%s); exit status %d\n"
                   "Every privacy charge made before the failure is in ledger.jsonl (if the run is "
                   "private) and stays spent.\n",
                   r->fail_stage, r->fail_msg, dpo_strerror(r->fail_rc),
                   dpo_exit_status(r->fail_rc));
  if (n > 0) (void)dpo_write_atomic(p, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

void dpo__run_unmark_failed(const dpo_run_t *r) {
  char p[1024];
  snprintf(p, sizeof p, "%s/FAILED", r->dir);
  unlink(p);
}

/* Timing and placement facts for scaling studies (jobs/scaling): per-rank oracle compute and
 * communication seconds reduced to min / max / mean over ranks, and how the ranks sit on
 * nodes (MPI_COMM_TYPE_SHARED).  Collective; the result is valid on rank 0. */
typedef struct {
  double tmin[2], tmax[2], tavg[2]; /* [0] compute, [1] communication */
  int nodes, rpn_min, rpn_max, cpus_min, oversub;
  int wait; /* how the oracle's ranks waited (comm/wait.h) */
} dpo__timing_t;

/* own: each rank's times follow its rows, so where the coordinator is not trusted with the
 * parties' rows (trust other than central) rank 0 reports its own times only: the other
 * ranks add nothing to the reductions */
static void dpo__timing_reduce(MPI_Comm comm, const dpo_oracle_stats_t *st, int own,
                               dpo__timing_t *t) {
  int size, lrank, lsize, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  dpo__node_ranks(comm, &lrank, &lsize);
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  int cpus = nc > 0 ? (int)nc : 1;
  const int add = !own || rank == 0;
  double tc[2] = {st->t_compute, st->t_comm}, tsum[2] = {0, 0};
  double tlo[2] = {add ? tc[0] : HUGE_VAL, add ? tc[1] : HUGE_VAL};
  double thi[2] = {add ? tc[0] : -HUGE_VAL, add ? tc[1] : -HUGE_VAL};
  double tad[2] = {add ? tc[0] : 0.0, add ? tc[1] : 0.0};
  /* max of {lsize, -lsize, -cpus, oversubscribed} gives max, min, min and any in one reduce */
  int iv[4] = {lsize, -lsize, -cpus, lsize > cpus}, imax[4] = {0, 0, 0, 0}, leaders = 0;
  int lead = lrank == 0;
  MPI_Reduce(tlo, t->tmin, 2, MPI_DOUBLE, MPI_MIN, 0, comm);
  MPI_Reduce(thi, t->tmax, 2, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(tad, tsum, 2, MPI_DOUBLE, MPI_SUM, 0, comm);
  if (own) size = 1;
  MPI_Reduce(iv, imax, 4, MPI_INT, MPI_MAX, 0, comm);
  MPI_Reduce(&lead, &leaders, 1, MPI_INT, MPI_SUM, 0, comm);
  t->tavg[0] = tsum[0] / size;
  t->tavg[1] = tsum[1] / size;
  t->rpn_max = imax[0];
  t->rpn_min = -imax[1];
  t->cpus_min = -imax[2];
  t->oversub = imax[3];
  t->nodes = leaders;
  t->wait = dpo__wait_policy(comm);
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
  json_object_object_add(sum, "wait",
                         json_object_new_string(t->wait == DPO__WAIT_SLEEP ? "sleep" : "spin"));
  /* a tarball's configure cannot know the revision: the job scripts pass it at run time */
  const char *rev = getenv("DPOPT_GIT_REV");
  json_object_object_add(sum, "git_rev", json_object_new_string(rev && *rev ? rev : "unknown"));
}

/* ||x||^2 (F = data loss + lambda ||x||^2) */
static double dpo__xx(const dpo_run_t *r) {
  const double *x = dpo_solver_x(r->solver);
  double xx = 0;
  for (int32_t j = 0; j < dpo_solver_dim(r->solver); j++) xx += x[j] * x[j];
  return xx;
}

/* Rank 0: summary.json's object. */
static json_object *dpo__summary(const dpo_run_t *r,
                                 const dpo_oracle_stats_t *ost, const dpo__timing_t *tim) {
  const char *metric = dpo_model_metric(r->model);
  double xx = dpo__xx(r);
  json_object *sum = json_object_new_object();
  json_object_object_add(sum, "dpopt_version", json_object_new_string(PACKAGE_VERSION));
  json_object_object_add(sum, "algo", json_object_new_string(r->algo->name));
  json_object_object_add(sum, "model", json_object_new_string(r->model_name));
  json_object_object_add(sum, "lambda", dpo_json_double(r->lambda));
  json_object_object_add(sum, "ranks", json_object_new_int(r->size));
  json_object_object_add(sum, "train", json_object_new_string(r->train_path));
  /* under add-remove the exact row count is private: a non-private diagnostic (rule 6) */
  json_object_object_add(sum, dpo__run_n_private(r) ? "n_nonprivate" : "n",
                         json_object_new_int64(r->train->n_global));
  json_object_object_add(sum, "d", json_object_new_int(r->train->d));
  json_object_object_add(sum, "intercept", json_object_new_boolean(dpo_model_intercept(r->model)));
  if (dpo_model_multiclass(r->model))
    json_object_object_add(sum, "classes", json_object_new_int(dpo_model_classes(r->model)));
  json_object_object_add(sum, "iterations", json_object_new_int64(dpo_solver_max_iter(r->solver)));
  json_object_object_add(sum, "step", json_object_new_string(dpo_solver_step_kind(r->solver)));
  const dpo_plan_t *plan = dpo_solver_plan(r->solver);
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
  json_object_object_add(sum, "status", json_object_new_string(r->run_rc == DPO_EBUDGET
                                                                   ? "budget_exhausted" : "ok"));
  json_object_object_add(sum, "wall_time_s", dpo_json_double(r->wall));
  json_object_object_add(sum, "compute_time_s_max", dpo_json_double(tim->tmax[0]));
  json_object_object_add(sum, "comm_time_s_max", dpo_json_double(tim->tmax[1]));
  json_object_object_add(sum, "solve_time_s", dpo_json_double(r->t_solve));
  json_object_object_add(sum, "load_time_s", dpo_json_double(r->t_load));
  /* rank 0's rows read in place from a mapping of the file (never in a private run, run.c) */
  { /* rank 0's phases: with wall_time_s (from the run's creation to here, before the model
     * and this summary are written) they account for the run's whole wall */
    json_object *ph = json_object_new_object();
    json_object_object_add(ph, "setup", dpo_json_double(r->t_setup));
    json_object_object_add(ph, "load", dpo_json_double(r->t_load));
    json_object_object_add(ph, "row_checks", dpo_json_double(r->t_checks));
    json_object_object_add(ph, "agglomerate", dpo_json_double(r->t_agglo));
    json_object_object_add(ph, "plan", dpo_json_double(r->t_plan));
    json_object_object_add(ph, "solve", dpo_json_double(r->t_solve));
    json_object_object_add(ph, "evaluate", dpo_json_double(r->t_eval));
    json_object_object_add(sum, "phases_s", ph);
  }
  { /* the BLAS's worker threads of this rank (run_blas.c), null when not known */
    const char *from;
    int bt = dpo__blas_threads(&from);
    json_object_object_add(sum, "blas_threads", bt > 0 ? json_object_new_int(bt) : NULL);
    json_object_object_add(sum, "blas_threads_from", json_object_new_string(from));
  }
  json_object_object_add(sum, "load_mapped", json_object_new_boolean(r->train->map != NULL));
  dpo__timing_json(sum, tim, dpo_solver_iters(r->solver));
  json_object_object_add(sum, "oracle_evals", json_object_new_int64(ost->evals));
  char k[64];
  snprintf(k, sizeof k, "train_%s_nonprivate", metric);
  /* "loss" is the data term (no regularizer) everywhere; "objective" is F (README) */
  json_object_object_add(sum, "train_loss_nonprivate", dpo_json_double(r->tr_loss));
  json_object_object_add(sum, "train_objective_nonprivate",
                         dpo_json_double(isnan(r->tr_loss) ? NAN : r->tr_loss + r->lambda * xx));
  json_object_object_add(sum, k, dpo_json_double(r->tr_metric));
  if (!isnan(r->fstar)) json_object_object_add(sum, "fstar_nonprivate", dpo_json_double(r->fstar));
  if (r->test) {
    snprintf(k, sizeof k, "test_%s", metric);
    json_object_object_add(sum, "test", json_object_new_string(r->test_path));
    json_object_object_add(sum, "n_test", json_object_new_int64(r->test->n_global));
    json_object_object_add(sum, "test_loss", dpo_json_double(r->te_loss));
    json_object_object_add(sum, k, dpo_json_double(r->te_metric));
    if (r->confusion) { /* rows: true class, columns: predicted class */
      const int32_t K = dpo_model_classes(r->model);
      json_object *cm = json_object_new_array();
      for (int32_t a = 0; a < K; a++) {
        json_object *row = json_object_new_array();
        for (int32_t b = 0; b < K; b++)
          json_object_array_add(row, json_object_new_int64(r->confusion[(int64_t)a * K + b]));
        json_object_array_add(cm, row);
      }
      json_object_object_add(sum, "test_confusion", cm);
    }
  }
  if (dpo__run_priv_ledger(r->priv)) /* when the journal's lines became durable (run_solve.c) */
    json_object_object_add(sum, "journal_fsync", json_object_new_string(
        r->journal_deferred ? "deferred: before a release left the node (one node, one owner)"
                            : "every charge"));
  dpo__agglo_summary(r, sum);
  dpo__run_priv_summary(r->priv, sum);
  dpo__run_parties_summary(r->parties, dpo__run_priv_ledger(r->priv), sum);
  if (r->summary_fn) r->summary_fn(r, sum);
  return sum;
}

int dpo__run_write_outputs(dpo_run_t *r) {
  int rc = DPO_OK;
  r->wall = dpo_wtime() - r->t_start;
  dpo_oracle_stats_t ost;
  memset(&ost, 0, sizeof ost); /* no oracle on the ranks that waited (run_agglo.c) */
  dpo_oracle_get_stats(r->oracle, &ost);
  dpo__timing_t tim;
  dpo__timing_reduce(r->comm, &ost, dpo__run_parties_hide_train(r->parties), &tim);
  /* how the solve's ranks waited: rank 0's own communicator when it solved alone (the full
   * one had no policy set up; the others slept on rank 0's status, agglomerate says so) */
  tim.wait = dpo__wait_policy(dpo__agglo_solve_comm(r));
  if (r->rank == 0) {
    char p[1024], cm[512];
    snprintf(cm, sizeof cm, "dpopt %s model, algo %s, %s, d=%d\n%s", r->model_name,
             r->algo->name, r->train_path, r->train->d, dpo__run_priv_label(r->priv));
    snprintf(p, sizeof p, "%s/model.txt", r->dir);
    int icpt = dpo_model_intercept(r->model);
    rc = dpo_model_write_k(p, dpo_solver_x(r->solver), r->train->d - icpt, icpt,
                           dpo_model_classes(r->model), cm);
    if (!rc) rc = dpo__run_write_summary(r, dpo__summary(r, &ost, &tim));
  }
  if ((rc = dpo_agree(r->comm, rc))) return rc;
  dpo__run_finish_dir(r);
  return DPO_OK;
}

int dpo__run_write_summary(dpo_run_t *r, json_object *sum) {
  char p[1024];
  int rc = dpo__run_write_config(r->cfg, r->dir);
  if (!rc) {
    const char *js = json_object_to_json_string_ext(sum, JSON_C_TO_STRING_PRETTY);
    snprintf(p, sizeof p, "%s/summary.json", r->dir);
    free(r->summary);
    if (!(r->summary = strdup(js))) rc = dpo_err(DPO_ENOMEM, "out of memory");
    else rc = dpo_write_atomic(p, js, strlen(js));
  }
  json_object_put(sum);
  return rc;
}

void dpo__run_finish_dir(const dpo_run_t *r) {
  /* the run is complete: a later --resume must not redo (and re-spend) its last steps */
  if (r->rank == 0) {
    unlink(r->ckpt_path);
    unlink(r->keep_path); /* model.txt is the output now (run_solve.c, dropouts) */
    dpo__run_unmark_failed(r); /* a resumed run that completes is no longer failed */
  }
}

int dpo__run_claim(dpo_run_t *r) {
  int rc;
  if ((rc = dpo__run_dir(r))) return rc;
  snprintf(r->ckpt_path, sizeof r->ckpt_path, "%s/checkpoint", r->dir);
  snprintf(r->keep_path, sizeof r->keep_path, "%s/last_release.txt", r->dir);
  r->dir_ready = !r->resuming; /* created by this run; a resumed one once its resume passed */
  rc = DPO_OK;
  if (r->rank == 0) {
    char p[1024];
    snprintf(p, sizeof p, "%s/trace.csv", r->dir);
    /* through no symlink: the resume truncates the trace (dpo__run_trace_rewind) */
    int fd = open(p, (r->resuming ? O_RDWR : O_WRONLY | O_TRUNC) | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && !(r->trace = fdopen(fd, r->resuming ? "r+" : "w"))) close(fd);
    if (r->resuming) { /* appended to after the checkpoint's offset (dpo__run_trace_rewind) */
      if (!r->trace) rc = dpo_err(DPO_EIO, "%s: cannot open to resume: %s", p, strerror(errno));
    } else if (!r->trace) rc = dpo_err(DPO_EIO, "%s: cannot create: %s", p, strerror(errno));
    /* config.ini now, not only at the end: --resume needs it after an interruption */
    if (!rc && !r->resuming) rc = dpo__run_write_config(r->cfg, r->dir);
  }
  return dpo_agree(r->comm, rc);
}

int dpo__run_refuse_keep(const dpo_run_t *r, const char *cmd) {
  static const char *const unread[] = {"run.keep_every", "run.keep_seconds", NULL};
  for (int i = 0; unread[i]; i++)
    if (dpo_config_get(r->cfg, unread[i]))
      return dpo_err(DPO_EINVAL, "%s: %s is not read by dpopt %s (it keeps no last release: "
                     "its checkpoints are --checkpoint-every)",
                     dpo_config_origin(r->cfg, unread[i]), unread[i], cmd);
  return DPO_OK;
}

int dpo__run_n_private(const dpo_run_t *r) {
  return dpo__run_priv_n_private(r->priv) && r->train && !r->train->n_public;
}

/* The plain privacy line: what the run spent of its budget and in how many steps, and why
 * that many (the plan's length, the method's own choice below its cap, or the budget).  The
 * accountant, its bound and the plan's mechanics are --verbose's (dpo__run_priv_print). */
static void dpo__run_print_spent(const dpo_run_t *r, FILE *out) {
  const dpo_ledger_t *L = dpo__run_priv_ledger(r->priv);
  const dpo_plan_t *plan = dpo_solver_plan(r->solver);
  double e = NAN, d = NAN, be = NAN, bd = NAN;
  if (!L || dpo_ledger_spent(L, &e, &d) || dpo_ledger_budget(L, &be, &bd)) return;
  long long ran = (long long)dpo_solver_iters(r->solver), cap = (long long)plan->steps;
  char dl[96] = "", why[160] = "";
  if (bd > 0) snprintf(dl, sizeof dl, " and delta %.3g of %g", d, bd);
  if (plan->kind == DPO_PLAN_NONE) snprintf(why, sizeof why, "no release plan");
  else if (r->run_rc == DPO_EBUDGET)
    snprintf(why, sizeof why, "stopped: the budget could not cover step %lld of %lld", ran + 1, cap);
  else if (ran == cap) snprintf(why, sizeof why, "T = %lld, as planned", ran);
  else snprintf(why, sizeof why, "T = %lld chosen by the method; cap %lld", ran, cap);
  fprintf(out, "spent           eps %.3f of %g%s in %lld step%s (%s)\n", e, be, dl, ran,
          ran == 1 ? "" : "s", why);
}

void dpo__train_print(const dpo_run_t *r, FILE *out) {
  const char *metric = dpo_model_metric(r->model);
  const dpo_plan_t *plan = dpo_solver_plan(r->solver);
  double F = r->tr_loss + r->lambda * dpo__xx(r);
  fprintf(out, "run directory   %s\n", r->dir);
  fprintf(out, "algorithm       %s (%s, lambda=%g) on %d rank%s, %lld rows%s x %d features\n",
          r->algo->name, r->model_name, r->lambda, r->size, r->size > 1 ? "s" : "",
          (long long)r->train->n_global,
          dpo__run_n_private(r) ? " [non-private diagnostic: private under add-remove]" : "",
          r->train->d);
  fprintf(out, "status          %s\n",
          r->run_rc == DPO_EBUDGET ? "stopped: privacy budget exhausted" : "completed");
  dpo__run_priv_print(r->priv, out, r->verbose);
  dpo__run_print_spent(r, out);
  if (plan->kind != DPO_PLAN_NONE && r->verbose)
    fprintf(out, "release plan    %s: %s; %lld of %lld steps ran\n", dpo_plan_kind_name(plan->kind),
            plan->what, (long long)dpo_solver_iters(r->solver), (long long)plan->steps);
  dpo__run_parties_print(r->parties, dpo__run_priv_ledger(r->priv), out);
  if (dpo__run_parties_hide_train(r->parties)) /* never computed: not a nan */
    fprintf(out, "train metrics   withheld (the coordinator receives no exact training sums)\n");
  else if (r->no_train_eval)
    fprintf(out, "train metrics   not evaluated (--no-train-eval)\n");
  else {
    fprintf(out, "train data loss %.6f   [non-private diagnostic]\n", r->tr_loss);
    fprintf(out, "train objective F %.6f   [non-private diagnostic; data loss + lambda "
            "||x||^2]\n", F);
    fprintf(out, "train %-9s %.4f   [non-private diagnostic]\n", metric, r->tr_metric);
  }
  if (!isnan(r->fstar) && !isnan(F))
    fprintf(out, "F(x) - F*       %.6e   [non-private diagnostic]\n", F - r->fstar);
  if (r->test) {
    fprintf(out, "test data loss  %.6f   (%s, %lld rows)\n", r->te_loss, r->test_path,
            (long long)r->test->n_global);
    fprintf(out, "test %-10s %.4f   (%s)\n", metric, r->te_metric, r->test_path);
    if (r->confusion) dpo_print_confusion(out, r->confusion, dpo_model_classes(r->model));
  }
  fprintf(out, "wall time       %.3f s\n", r->wall);
}
