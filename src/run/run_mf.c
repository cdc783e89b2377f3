/* The mf kind of run (run.command = mf; `dpopt mf`): matrix factorization by HAMSI or mb-GD
 * (src/mf/mf_job.h) through the driver's life cycle and run directory: config.ini, trace.csv,
 * X1.txt / X2t.txt (biases.txt), summary.json, FAILED, checkpoints and --resume.  Not
 * private: the label says so everywhere.  The private MF of a later issue is this table with
 * a ledger: its setup opens RUN/ledger.jsonl as train's does, its job charges each release
 * before making it, and nothing here or in run_kind.c changes (doc/design.md). */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "mf/mf_job.h"
#include "run/run_impl.h"

typedef struct {
  dpo_mf_job_t *job;
  const char *train;
  int failed; /* the solve diverged: its last good point was written */
} dpo__mf_kind_t;

static dpo__mf_kind_t *dpo__k(const dpo_run_t *r) { return r->kind; }

static int dpo__mf_setup(dpo_run_t *r) {
  dpo__mf_kind_t *k = calloc(1, sizeof *k);
  int rc = k ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  r->kind = k;
  r->stage = "mf";
  /* settings no mf run reads are refused, not ignored; mf adds no noise, so a privacy
   * setting could only be a request this run cannot honour */
  if (!rc) rc = dpo__run_refuse_keep(r, "mf");
  if (!rc && dpo_config_get(r->cfg, "mf.out"))
    rc = dpo_err(DPO_EINVAL, "%s: mf.out was replaced by --out DIR (run.dir: the run "
                 "directory)", dpo_config_origin(r->cfg, "mf.out"));
  if (!rc && dpo_config_get(r->cfg, "privacy.eps"))
    rc = dpo_err(DPO_EINVAL, "%s: privacy.eps: dpopt mf adds no noise and cannot give a "
                 "privacy guarantee; drop it", dpo_config_origin(r->cfg, "privacy.eps"));
  if (!rc) rc = dpo__run_read_progress(r);
  if (!rc && !(rc = dpo_config_get_str(r->cfg, "data.train", NULL, &k->train)) && !k->train)
    rc = dpo_err(DPO_EINVAL, "no ratings: give RATINGS or data.train in --config");
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  if ((rc = dpo_mf_job_create(r->comm, r->cfg, &k->job))) return dpo__run_failed(r, rc);
  r->klabel = "NOT PRIVATE: dpopt mf adds no noise (seeded, reproducible)";
  r->kprivate = 0;
  r->kmetric = "rmse";
  r->dir_name = dpo_mf_job_method(k->job);
  return dpo__run_setup_claim(r, "dpopt mf", "mf (run directory)");
}

static int dpo__mf_load(dpo_run_t *r) {
  r->stage = "mf (loading ratings)";
  int rc = dpo_mf_job_load(dpo__k(r)->job, dpo__k(r)->train);
  if (rc) return dpo__run_failed(r, rc);
  r->state = DPO__RUN_LOADED;
  return DPO_OK;
}

/* Rank 0: summary.json's object (train's names where the fact is the same), with mf's own
 * fields from the job; status "failed" for a diverged run's last good point. */
static json_object *dpo__mf_summary(const dpo_run_t *r) {
  json_object *sum = json_object_new_object(), *pj = json_object_new_object();
  json_object_object_add(sum, "dpopt_version", json_object_new_string(PACKAGE_VERSION));
  json_object_object_add(sum, "command", json_object_new_string("mf"));
  json_object_object_add(sum, "algo", json_object_new_string(dpo_mf_job_method(dpo__k(r)->job)));
  json_object_object_add(sum, "train", json_object_new_string(dpo__k(r)->train));
  json_object_object_add(sum, "iterations_done", json_object_new_int64(r->kiters));
  json_object_object_add(sum, "status", json_object_new_string(dpo__k(r)->failed ? "failed"
                                                                                 : "ok"));
  json_object_object_add(sum, "wall_time_s", dpo_json_double(dpo_wtime() - r->t_start));
  json_object_object_add(sum, "solve_time_s", dpo_json_double(r->t_solve));
  json_object_object_add(pj, "private_algorithm", json_object_new_boolean(0));
  json_object_object_add(pj, "label", json_object_new_string(r->klabel));
  json_object_object_add(sum, "privacy", pj);
  return sum;
}

/* Rank 0: the factor files and summary.json (and config.ini again). */
static int dpo__mf_outputs(dpo_run_t *r) {
  json_object *sum = dpo__mf_summary(r);
  int rc = dpo_mf_job_write(dpo__k(r)->job, r->dir, sum);
  if (rc) {
    json_object_put(sum);
    return rc;
  }
  return dpo__run_write_summary(r, sum);
}

static int dpo__mf_solve(dpo_run_t *r) {
  dpo__mf_kind_t *k = dpo__k(r);
  dpo_mf_io_t io = {r->trace,  r->ckpt_path, r->resuming, r->ckpt_every, r->stop_after,
                    r->stop,   r->progress,  r->quiet,    0};
  r->stage = "mf";
  dpo_config_warn_unused(r->cfg, r->rank == 0 ? stderr : NULL);
  double t = dpo_wtime();
  int rc = dpo_mf_job_solve(k->job, &io);
  r->t_solve = dpo_wtime() - t;
  /* resuming: the directory is this run's once its checkpoint was accepted */
  if (io.accepted || !r->resuming) r->dir_ready = 1;
  if (r->trace) fflush(r->trace);
  /* stopped at a checkpoint: continue with run.resume */
  if (rc == DPO_EINTR) return dpo__run_kind_stopped(r, rc);
  if (rc != DPO_OK && rc != DPO_ENOCONV) return dpo__run_failed(r, rc);
  dpo_mf_job_result(k->job, &r->kiters, &r->tr_metric, &r->te_metric);
  if (rc == DPO_ENOCONV) {
    /* diverged: the last good point and the evaluations before are kept, FAILED says so */
    char msg[1000];
    snprintf(msg, sizeof msg, "%s", dpo_errmsg());
    k->failed = 1;
    (void)dpo_agree(r->comm, r->rank == 0 ? dpo__mf_outputs(r) : DPO_OK);
    return dpo__run_failed(r, dpo_err(rc, "%s", msg));
  }
  r->run_rc = DPO_OK;
  r->state = DPO__RUN_SOLVED;
  return DPO_OK;
}

/* the RMSEs are the job's, computed when its epochs ended */
static int dpo__mf_evaluate(dpo_run_t *r) {
  r->evaluated = 1;
  return DPO_OK;
}

static int dpo__mf_write(dpo_run_t *r) {
  r->stage = "mf";
  r->wall = dpo_wtime() - r->t_start;
  int rc = dpo_agree(r->comm, r->rank == 0 ? dpo__mf_outputs(r) : DPO_OK);
  if (rc) return dpo__run_failed(r, rc);
  dpo__run_finish_dir(r);
  r->state = DPO__RUN_WRITTEN;
  return DPO_OK;
}

static void dpo__mf_print(const dpo_run_t *r, FILE *out) {
  fprintf(out, "run directory   %s\n", r->dir);
  dpo_mf_job_report(dpo__k(r)->job, out);
}

static void dpo__mf_destroy(dpo_run_t *r) {
  dpo__mf_kind_t *k = dpo__k(r);
  if (!k) return;
  dpo_mf_job_destroy(k->job);
  free(k);
  r->kind = NULL;
}

const dpo__run_ops_t dpo__run_mf_ops = {"mf",           dpo__mf_setup,    dpo__mf_load,
                                        dpo__mf_solve,  dpo__mf_evaluate, dpo__mf_write,
                                        dpo__mf_print,  dpo__mf_destroy};
