/* The audit kind of run (run.command = audit; `dpopt audit`): the empirical privacy audit of
 * src/optim/audit_run.c through the driver's life cycle and run directory.  setup: the
 * settings, the privacy specification and the worst-case construction, checked before the
 * directory is claimed; load: the two synthetic neighbouring data sets, the noise streams and
 * the white-box pilot (run_audit_job.c); solve: the trials in rounds (one trial a rank),
 * trace.csv a row per block of rounds, checkpoints (the outputs so far, so a stopped audit
 * keeps its trials) and the stop flag; evaluate: the analysis; write: summary.json (the bound,
 * the claim, the verdict, what the audit saw, and the audited plan as its ledger charged it)
 * and audit.json when asked.  The trials run on synthetic data: nothing private is read, so
 * the run spends no budget and keeps no journal (ledger.jsonl); its label says so. */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run/run_audit.h"
#include "run/run_ckpt.h"
#include "run/run_impl.h"

typedef struct {
  dpo_privacy_spec_t spec;
  dpo__audit_job_t job;
  dpo_audit_result_t res;
  int64_t blk; /* rounds a trace row */
  char name[48];
} dpo__aud_kind_t;

static dpo__aud_kind_t *dpo__k(const dpo_run_t *r) { return r->kind; }

static const char dpo__aud_label[] =
    "NOT PRIVATE: an audit runs the algorithm on synthetic data sets; it reads no private data "
    "and spends no budget";

static int dpo__aud_setup(dpo_run_t *r) {
  int one = 0; /* audit.one_run: one real training run with canaries, its own hooks */
  int rc1 = dpo_agree(r->comm, dpo_config_get_bool(r->cfg, "audit.one_run", 0, &one));
  if (rc1) return dpo__run_failed(r, rc1);
  if (one) {
    /* admm.method: a run of dpopt admm, else of dpopt train */
    r->ops = dpo_config_get(r->cfg, "admm.method") ? &dpo__run_audit1_admm_ops
                                                    : &dpo__run_audit1_ops;
    return r->ops->setup(r);
  }
  dpo__aud_kind_t *k = calloc(1, sizeof *k);
  int rc = k ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  r->kind = k;
  r->stage = "audit";
  r->klabel = dpo__aud_label;
  if (rc) return dpo__run_failed(r, dpo_agree(r->comm, rc));
  static const char *const unread[] = {"run.keep_every", "run.keep_seconds", NULL};
  for (int i = 0; !rc && unread[i]; i++)
    if (dpo_config_get(r->cfg, unread[i]))
      rc = dpo_err(DPO_EINVAL, "%s: %s is not read by dpopt audit (it releases no iterate: its "
                   "checkpoints are --checkpoint-every)", dpo_config_origin(r->cfg, unread[i]),
                   unread[i]);
  if (!rc) rc = dpo__run_read_progress(r);
  /* --admm audits dpopt admm's methods: their sigma rule, mu and sigma are read too */
  if (!rc)
    rc = dpo_privacy_spec_read(r->cfg, dpo_config_get(r->cfg, "audit.admm")
                                           ? DPO_SPEC_FOR_AUDIT_ADMM : DPO_SPEC_FOR_AUDIT, &k->spec);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  if ((rc = dpo__audit_job_setup(&k->job, r->comm, r->cfg, &k->spec))) return dpo__run_failed(r, rc);
  const dpo__audit_t *a = &k->job.a;
  snprintf(k->name, sizeof k->name, "audit-%s", a->laplace ? "laplace" : a->admm ? a->admm : a->tune ? "tune" : a->algo_name);
  r->dir_name = k->name;
  k->blk = r->ckpt_every > 0 ? r->ckpt_every : k->job.rounds / 20 > 1 ? k->job.rounds / 20 : 1;
  dpo_config_get(r->cfg, "audit.json"); /* written by the write hook */
  return dpo__run_setup_claim(r, "dpopt audit", "audit (run directory)");
}

static int dpo__aud_load(dpo_run_t *r) {
  r->stage = "audit (data sets)";
  int rc = dpo__audit_job_load(&dpo__k(r)->job);
  if (rc) return dpo__run_failed(r, rc);
  r->state = DPO__RUN_LOADED;
  return DPO_OK;
}

/* Collective: a trace row (trials done, the largest charge so far, seconds). */
static void dpo__aud_trace(dpo_run_t *r) {
  dpo__audit_job_t *j = &dpo__k(r)->job;
  double sp[2] = {0, 0};
  MPI_Reduce(j->spent, sp, 2, MPI_DOUBLE, MPI_MAX, 0, r->comm);
  int64_t trials = j->done * j->size < j->T2 ? j->done * j->size : j->T2;
  double el = dpo_wtime() - r->t_start;
  if (r->rank != 0) return;
  if (r->trace) fprintf(r->trace, "%lld,%.17g,%.17g,%.3f\n", (long long)trials, sp[0], sp[1], el);
  if (!r->quiet && r->progress >= 0 && (r->progress > 0 || el > 10))
    fprintf(stderr, "[dpopt] audit: %lld of %lld trials, %.1f s elapsed\n", (long long)trials,
            (long long)j->T2, el);
}

/* Collective: RUN/checkpoint with the rounds done and the trace's length. */
static int dpo__aud_checkpoint(dpo_run_t *r) {
  dpo_ckpt_t *c = NULL;
  int rc = DPO_OK;
  if (r->rank == 0) {
    if (r->trace) fflush(r->trace);
    rc = dpo_ckpt_create(&c);
    if (!rc) rc = dpo_ckpt_put_int(c, "audit.trace_offset", r->trace ? ftell(r->trace) : 0);
  }
  if (!(rc = dpo_agree(r->comm, rc))) rc = dpo__audit_job_save(&dpo__k(r)->job, c);
  if (!rc && r->rank == 0) rc = dpo_ckpt_write(c, r->ckpt_path);
  dpo_ckpt_destroy(c);
  return dpo_agree(r->comm, rc);
}

/* Collective, --resume: the trials of the checkpoint back, the trace cut to its length. */
static int dpo__aud_restore(dpo_run_t *r) {
  dpo_ckpt_t *c = NULL;
  int64_t off = 0;
  int rc = DPO_OK;
  if (r->rank == 0 && !(rc = dpo_ckpt_read(r->ckpt_path, &c)))
    rc = dpo_ckpt_get_int(c, "audit.trace_offset", &off);
  /* the trials checked (rank count, trial count, seeding) before the trace is touched */
  if (!(rc = dpo_agree(r->comm, rc))) rc = dpo__audit_job_restore(&dpo__k(r)->job, c);
  if (!rc && r->rank == 0) {
    char p[1100];
    snprintf(p, sizeof p, "%s/trace.csv", r->dir);
    rc = dpo__run_trace_rewind(r->trace, p, (long long)off);
  }
  dpo_ckpt_destroy(c);
  return dpo_agree(r->comm, rc);
}

/* dpo__audit_loop_t.block and .save over the kind's trace and checkpoint */
static void dpo__aud_block(void *arg) { dpo__aud_trace(arg); }
static int dpo__aud_save(void *arg) { return dpo__aud_checkpoint(arg); }

static int dpo__aud_solve(dpo_run_t *r) {
  dpo__aud_kind_t *k = dpo__k(r);
  dpo__audit_job_t *j = &k->job;
  int rc = DPO_OK;
  r->stage = "audit (trials)";
  dpo_config_warn_unused(r->cfg, r->rank == 0 ? stderr : NULL);
  double t = dpo_wtime();
  if (r->resuming) rc = dpo__aud_restore(r);
  else if (r->rank == 0 && r->trace)
    fputs("trials_done,eps_charged_max,delta_charged_max,wall_s\n", r->trace);
  if (rc) return dpo__run_failed(r, rc);
  r->dir_ready = 1; /* resuming: the directory is this run's once its checkpoint was accepted */
  const dpo__audit_loop_t lo = {k->blk, r->ckpt_every, r->stop_after, r->stop,
                                dpo__aud_block, dpo__aud_save, r};
  if ((rc = dpo__audit_job_run(j, &lo)) == DPO_EINTR) { /* checkpoint written */
    if (r->trace) fflush(r->trace);
    r->t_solve = dpo_wtime() - t;
    r->run_rc = DPO_EINTR;
    r->state = DPO__RUN_SOLVED;
    return dpo_err(DPO_EINTR, "audit stopped after %lld of %lld trials: checkpoint written, "
                   "continue with --resume %s", (long long)(j->done * j->size),
                   (long long)j->T2, r->dir);
  }
  if (rc) return dpo__run_failed(r, rc);
  r->t_solve = dpo_wtime() - t;
  r->kiters = j->T2;
  r->run_rc = DPO_OK;
  r->state = DPO__RUN_SOLVED;
  return DPO_OK;
}

static int dpo__aud_evaluate(dpo_run_t *r) {
  r->stage = "audit (analysis)";
  int rc = dpo__audit_job_finish(&dpo__k(r)->job, &dpo__k(r)->res);
  if (rc) return dpo__run_failed(r, rc);
  r->evaluated = 1;
  return DPO_OK;
}

/* Rank 0: summary.json's object: the result, what the audit saw, the audited plan. */
static json_object *dpo__aud_summary(const dpo_run_t *r) {
  const dpo__aud_kind_t *k = dpo__k(r);
  const dpo__audit_t *a = &k->job.a;
  const dpo_audit_result_t *res = &k->res;
  json_object *sum = json_object_new_object(), *saw = json_object_new_object();
  json_object *pj = json_object_new_object(), *plan = json_object_new_object();
  json_object_object_add(sum, "dpopt_version", json_object_new_string(PACKAGE_VERSION));
  json_object_object_add(sum, "command", json_object_new_string("audit"));
  json_object_object_add(sum, "algo", json_object_new_string(res->algorithm));
  json_object_object_add(sum, "model", json_object_new_string(a->model_name));
  json_object_object_add(sum, "ranks", json_object_new_int(r->size));
  json_object_object_add(sum, "status", json_object_new_string("ok"));
  json_object_object_add(sum, "verdict", json_object_new_string(res->violation ? "VIOLATION" : "pass"));
  json_object_object_add(sum, "confidence", dpo_json_double(1 - res->alpha));
  json_object_object_add(sum, "wall_time_s", dpo_json_double(r->wall));
  json_object_object_add(sum, "solve_time_s", dpo_json_double(r->t_solve));
  json_object_object_add(sum, "audit", dpo__audit_json(res));
  /* what it saw: the two data sets and the released vector each trial gave */
  json_object_object_add(saw, "rows", json_object_new_int64(a->n));
  json_object_object_add(saw, "features", json_object_new_int(a->d));
  json_object_object_add(saw, "audited_row", json_object_new_int64(a->row));
  json_object_object_add(saw, "row_norm", dpo_json_double(a->B));
  json_object_object_add(saw, "construction", json_object_new_string(
      a->add_remove ? "add-remove: D' lacks the audited row"
      : a->clip_mode ? "replace-one: the audited row's label flipped"
                     : "replace-one: the audited row moved to another coordinate"));
  json_object_object_add(saw, "output", json_object_new_string(
      res->white_box ? "every release of a trial" : "the released model of a trial"));
  json_object_object_add(saw, "trials_per_set", json_object_new_int64(res->trials));
  json_object_object_add(sum, "saw", saw);
  /* the audited plan as its ledger charged it (each trial's own in-memory ledger) */
  json_object_object_add(plan, "accountant", json_object_new_string(a->admm ? "rdp" : a->acct));
  json_object_object_add(plan, "neighbours", json_object_new_string(
      dpo_neighbours_name(a->add_remove ? DPO_NEIGHBOURS_ADD_REMOVE : DPO_NEIGHBOURS_REPLACE_ONE)));
  json_object_object_add(plan, "eps_budget", dpo_json_double(k->spec.eps));
  json_object_object_add(plan, "delta_budget", dpo_json_double(a->admm && !dpo_privacy_spec_given(
      &k->spec, DPO_SPEC_DELTA) ? 1e-3 : k->spec.delta));
  json_object_object_add(plan, "eps_charged", dpo_json_double(res->claimed_eps));
  json_object_object_add(plan, "delta_charged", dpo_json_double(res->claimed_delta));
  if (a->has_clip) {
    json_object_object_add(plan, "clip_norm", json_object_new_string(a->clip.norm == DPO_CLIP_L1 ? "l1" : "l2"));
    json_object_object_add(plan, "clip_C", dpo_json_double(a->clip.C));
  }
  json_object_object_add(pj, "private_algorithm", json_object_new_boolean(0));
  json_object_object_add(pj, "label", json_object_new_string(r->klabel));
  json_object_object_add(pj, "audited_plan", plan);
  json_object_object_add(sum, "privacy", pj);
  return sum;
}

static int dpo__aud_write(dpo_run_t *r) {
  int rc = DPO_OK;
  const char *jpath = NULL;
  r->stage = "audit";
  r->wall = dpo_wtime() - r->t_start;
  if (r->rank == 0) {
    rc = dpo__run_write_summary(r, dpo__aud_summary(r));
    dpo_config_get_str(r->cfg, "audit.json", NULL, &jpath);
    if (!rc && jpath) rc = dpo_audit_write_json(jpath, &dpo__k(r)->res);
  }
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  dpo__run_finish_dir(r);
  r->state = DPO__RUN_WRITTEN;
  return DPO_OK;
}

static void dpo__aud_print(const dpo_run_t *r, FILE *out) {
  dpo_audit_print(out, &dpo__k(r)->res, "");
  fprintf(out, "run directory %s\n", r->dir);
}

static void dpo__aud_destroy(dpo_run_t *r) {
  dpo__aud_kind_t *k = dpo__k(r);
  if (!k) return;
  dpo__audit_job_free(&k->job);
  free(k);
  r->kind = NULL;
}

const dpo__run_ops_t dpo__run_audit_ops = {"audit",          dpo__aud_setup,    dpo__aud_load,
                                           dpo__aud_solve,   dpo__aud_evaluate, dpo__aud_write,
                                           dpo__aud_print,   dpo__aud_destroy};

int dpo_run_audit_result(const dpo_run_t *r, dpo_audit_result_t *res) {
  if (!r || !res || r->ops != &dpo__run_audit_ops || !r->evaluated)
    return dpo_err(DPO_EINVAL, "dpo_run_audit_result: not an audit run that was evaluated");
  *res = dpo__k(r)->res;
  return DPO_OK;
}

/* A lower bound below 0 says nothing (every eps >= 0 is consistent with it): the table shows
 * 0, the JSON keeps the raw value beside (eps_lb_raw). */
static double dpo__lb0(double v) { return isfinite(v) && v > 0 ? v : 0.0; }

void dpo_audit_print(FILE *out, const dpo_audit_result_t *r, const char *tag) {
  fprintf(out, "%-14s %-11s %-11s %-10s %-8s %s\n", "algorithm", "claimed_eps", "delta",
          "eps_lb", "trials", "statistic");
  fprintf(out, "%-14s %-11.6g %-11.3g %-10.4f %-8lld %s %s %.6g%s%s\n", r->algorithm,
          r->claimed_eps, r->claimed_delta, dpo__lb0(r->lb), (long long)r->trials, r->stat,
          r->ev.above ? ">" : "<=", r->ev.thr, r->ev.swap ? " (more likely on D')" : "",
          tag ? tag : "");
  if (r->white_box && !strcmp(r->method, "final-gdp")) {
    fprintf(out, "white box: the final model only (its steps are not releases: hidden state); "
            "canary at the first step; test final-gdp: mu_lb %.4f vs mu_claim %.4f (the claim's "
            "mu-GDP at delta); distribution-free bound %.4f\nassumes: %s\n", dpo__lb0(r->mu_lb),
            r->mu_claim, dpo__lb0(r->lb_summed), r->assumption);
  } else if (r->white_box) {
    fprintf(out, "white box: %lld releases a run observed (the coordinator's broadcasts); canary "
            "at full sensitivity in %.1f%% of them; test %s", (long long)r->releases,
            100 * r->saturated, r->method);
    if (!strcmp(r->method, "gdp"))
      fprintf(out, ": mu_lb %.4f vs mu_claim %.4f", dpo__lb0(r->mu_lb), r->mu_claim);
    if (!strcmp(r->method, "psg") || !strcmp(r->method, "wsg"))
      fprintf(out, ": noise multiplier at most %.4g vs %.4g charged", r->z_ub, r->z_claim);
    if (!strcmp(r->method, "per-release"))
      fprintf(out, ": one release's eps_lb %.5f vs its charge %.5f", dpo__lb0(r->rel_lb),
              r->rel_claim);
    fprintf(out, "; distribution-free bound of the summed statistic %.4f\nassumes: %s\n",
            dpo__lb0(r->lb_summed), r->assumption);
  }
  if (r->white_box && !strcmp(r->algorithm, "tune"))
    fprintf(out, "tune: the adversary sees the chosen candidate and every release of its final "
            "run; canary in the final part (the partition fixed)\n");
  if (!strcmp(r->method, "tune-mean"))
    fprintf(out, "tune: the geometric search; the adversary sees the chosen model and its noisy "
            "score (not the number of repetitions); canary in the rows every repetition trains "
            "on\nassumes: %s\n", r->assumption);
  if (!strcmp(r->method, "tune-mean-valid"))
    fprintf(out, "tune: the geometric search; the adversary sees the chosen model and its noisy "
            "score (not the number of repetitions); canary in the validation rows (the score's "
            "noise audited, not the training's)\nassumes: %s\n", r->assumption);
  if (!strcmp(r->method, "tune"))
    fprintf(out, "tune: the adversary sees the chosen candidate and its final model; canary in "
            "the final part\nassumes: %s\n", r->assumption);
  if (r->violation)
    fprintf(out, "VIOLATION: the lower bound %.4f exceeds the claimed eps %.6g (confidence %g)\n",
            r->lb, r->claimed_eps, 1 - r->alpha);
}
