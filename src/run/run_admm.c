/* The admm kind of run (run.command = admm; `dpopt admm`): consensus ADMM, DP-ADMM and
 * DP-AccADMM (Xu et al. 2020, Alg. 2 / 3) and their non-private references, through the
 * driver's life cycle and run directory: config.ini, trace.csv, ledger.jsonl (private
 * methods: always on disk), model.txt, summary.json, FAILED, checkpoints and --resume.  What
 * differs from train is the job of src/admm/admm_job.h; the privacy rules are the same. */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admm/admm_job.h"
#include "config.h"
#include "dpopt/runout.h"
#include "dpopt/spec.h"
#include "dpopt/status.h"
#include "run/run_ckpt.h"
#include "run/run_impl.h"

typedef struct {
  dpo_admm_job_t *job;
  dpo_privacy_spec_t spec;
  char label[300];
  int resume_ok;
} dpo__admm_kind_t;

static dpo__admm_kind_t *dpo__k(const dpo_run_t *r) { return r->kind; }

/* The privacy label every output carries (run.h: dpo_run_label). */
static void dpo__admm_label(dpo_run_t *r, const dpo_admm_result_t *res) {
  dpo__admm_kind_t *k = dpo__k(r);
  if (!res->priv)
    snprintf(k->label, sizeof k->label, "NOT PRIVATE: method %s adds no noise", res->method);
  else if (res->seeded)
    snprintf(k->label, sizeof k->label, "NOT PRIVATE: seeded run (run.seed): the noise is "
             "reproducible");
  else
    snprintf(k->label, sizeof k->label, "PRIVATE: (eps=%g, delta=%g) budget, %s accountant, "
             "replace-one neighbours", res->eps, res->delta, res->accountant);
  r->klabel = k->label;
  r->kprivate = res->priv && !res->seeded;
}

static int dpo__admm_setup(dpo_run_t *r) {
  dpo__admm_kind_t *k = calloc(1, sizeof *k);
  int rc = k ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  r->kind = k;
  r->stage = "admm";
  /* train's settings that no admm run reads are refused, not ignored */
  if (!rc) rc = dpo__run_refuse_keep(r, "admm");
  if (!rc) rc = dpo_privacy_spec_read(r->cfg, DPO_SPEC_FOR_ADMM, &k->spec);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  const int ckpt = r->resuming ? 2 : r->ckpt_every > 0 || r->stop_after > 0;
  /* every setting, the trust mode and the budget store's fit: before any file */
  if ((rc = dpo_admm_job_create(r->comm, r->cfg, &k->spec, ckpt, &k->job)))
    return dpo__run_failed(r, rc);
  dpo__admm_label(r, dpo_admm_job_result(k->job));
  if (!r->dir_name) r->dir_name = dpo_admm_job_method(k->job); /* the audit names its own */
  return dpo__run_setup_claim(r, "dpopt admm", "admm (run directory)");
}

static int dpo__admm_load(dpo_run_t *r) {
  r->stage = "admm (loading data)";
  int rc = dpo_admm_job_load(dpo__k(r)->job);
  if (rc) return dpo__run_failed(r, rc);
  r->state = DPO__RUN_LOADED;
  return DPO_OK;
}

static int dpo__admm_solve(dpo_run_t *r) {
  dpo__admm_kind_t *k = dpo__k(r);
  dpo_admm_io_t io = {r->dir, r->trace, r->resuming, r->ckpt_every, r->stop_after, r->stop, 0};
  int stop = DPO_OK;
  r->stage = "admm";
  dpo_config_warn_unused(r->cfg, r->rank == 0 ? stderr : NULL);
  double t = dpo_wtime();
  int rc = dpo_admm_job_solve(k->job, &io, &stop);
  r->t_solve = dpo_wtime() - t;
  /* resuming: the directory is this run's once its checkpoint and journal were accepted */
  if (io.accepted || !r->resuming) r->dir_ready = 1;
  /* stopped at a checkpoint (every charge journalled): continue with run.resume */
  if (rc == DPO_EINTR) return dpo__run_kind_stopped(r, rc);
  if (rc) return dpo__run_failed(r, rc);
  const dpo_admm_result_t *res = dpo_admm_job_result(k->job);
  r->kx = dpo_admm_job_x(k->job);
  r->kd = res->d;
  r->kiters = res->iters;
  r->knoconv = stop == DPO_ENOCONV;
  r->te_metric = res->test_metric;
  r->tr_loss = res->objective;
  r->run_rc = stop == DPO_EBUDGET ? DPO_EBUDGET : DPO_OK;
  r->state = DPO__RUN_SOLVED;
  return r->run_rc;
}

/* the diagnostics are the job's, computed when its iterations ended (its oracle is gone) */
static int dpo__admm_evaluate(dpo_run_t *r) {
  r->evaluated = 1;
  return DPO_OK;
}

/* Rank 0: summary.json's object (train's names where the fact is the same). */
static json_object *dpo__admm_summary(const dpo_run_t *r, const dpo_admm_result_t *res) {
  json_object *sum = json_object_new_object(), *pj = json_object_new_object();
  json_object_object_add(sum, "dpopt_version", json_object_new_string(PACKAGE_VERSION));
  json_object_object_add(sum, "command", json_object_new_string("admm"));
  json_object_object_add(sum, "algo", json_object_new_string(res->method));
  json_object_object_add(sum, "model", json_object_new_string(res->model));
  json_object_object_add(sum, "lambda", dpo_json_double(res->lambda));
  json_object_object_add(sum, "ranks", json_object_new_int(r->size));
  const char *tr = dpo_config_get(r->cfg, "data.train"); /* else each party's own file */
  json_object_object_add(sum, "train", json_object_new_string(tr ? tr : "parties.data"));
  json_object_object_add(sum, "n", json_object_new_int64(res->n)); /* replace-one: public */
  json_object_object_add(sum, "d", json_object_new_int(res->d));
  json_object_object_add(sum, "iterations_done", json_object_new_int64(res->iters));
  json_object_object_add(sum, "status", json_object_new_string(
      r->run_rc == DPO_EBUDGET ? "budget_exhausted" : r->knoconv ? "not_converged" : "ok"));
  json_object_object_add(sum, "wall_time_s", dpo_json_double(r->wall));
  json_object_object_add(sum, "solve_time_s", dpo_json_double(r->t_solve));
  json_object_object_add(sum, "train_objective_nonprivate", dpo_json_double(res->objective));
  const char *te = dpo_config_get(r->cfg, "data.test");
  if (te) {
    char key[64];
    snprintf(key, sizeof key, "test_%s", res->test_metric_name);
    json_object_object_add(sum, "test", json_object_new_string(te));
    json_object_object_add(sum, key, dpo_json_double(res->test_metric));
  }
  json_object_object_add(pj, "private_algorithm", json_object_new_boolean(res->priv));
  json_object_object_add(pj, "seeded_not_private", json_object_new_boolean(res->seeded));
  json_object_object_add(pj, "label", json_object_new_string(r->klabel));
  if (res->priv) {
    char jp[1100];
    snprintf(jp, sizeof jp, "%s/ledger.jsonl", r->dir);
    json_object_object_add(pj, "neighbours", json_object_new_string("replace-one"));
    json_object_object_add(pj, "accountant", json_object_new_string(res->accountant));
    json_object_object_add(pj, "trust", json_object_new_string(res->trust));
    json_object_object_add(pj, "eps_budget", dpo_json_double(res->eps));
    json_object_object_add(pj, "delta_budget", dpo_json_double(res->delta));
    json_object_object_add(pj, "eps_spent", dpo_json_double(res->spent_eps));
    json_object_object_add(pj, "delta_spent", dpo_json_double(res->spent_delta));
    json_object_object_add(pj, "sigma", dpo_json_double(res->sigma));
    json_object_object_add(pj, "releases", json_object_new_int64(res->releases));
    json_object_object_add(pj, "journal", json_object_new_string(jp));
  }
  json_object_object_add(sum, "privacy", pj);
  return sum;
}

static int dpo__admm_write(dpo_run_t *r) {
  dpo__admm_kind_t *k = dpo__k(r);
  int rc = DPO_OK;
  r->stage = "admm";
  r->wall = dpo_wtime() - r->t_start;
  if (r->rank == 0) {
    char p[1100];
    snprintf(p, sizeof p, "%s/model.txt", r->dir);
    rc = dpo_admm_job_write_model(k->job, p);
    json_object *sum = rc ? NULL : dpo__admm_summary(r, dpo_admm_job_result(k->job));
    if (sum && r->summary_fn) r->summary_fn(r, sum); /* the one-run audit's result */
    if (!rc) rc = dpo__run_write_summary(r, sum);
  }
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  dpo__run_finish_dir(r);
  dpo_admm_job_finish(k->job, r->dir); /* consensus: every rank's checkpoint part */
  r->state = DPO__RUN_WRITTEN;
  return DPO_OK;
}

static void dpo__admm_print(const dpo_run_t *r, FILE *out) {
  fprintf(out, "run directory %s\n", r->dir);
  fputs(dpo_admm_job_report(dpo__k(r)->job), out);
  fprintf(out, "privacy     %s\n", r->klabel);
}

static void dpo__admm_destroy(dpo_run_t *r) {
  dpo__admm_kind_t *k = dpo__k(r);
  if (!k) return;
  dpo_admm_job_destroy(k->job);
  free(k);
  r->kind = NULL;
}

struct dpo_admm_job *dpo__run_admm_job(const dpo_run_t *r) { return dpo__k(r)->job; }

const dpo__run_ops_t dpo__run_admm_ops = {"admm",           dpo__admm_setup,   dpo__admm_load,
                                          dpo__admm_solve,  dpo__admm_evaluate, dpo__admm_write,
                                          dpo__admm_print,  dpo__admm_destroy};
