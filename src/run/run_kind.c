/* The run's life cycle (dpopt/run.h) over its kind's ops table (run_impl.h): the order of the
 * calls is checked here, once, and each call goes to the kind named by run.command.  train is
 * the first kind (run.c, run_solve.c, run_out.c), admm the second (run_admm.c), audit the
 * third (run_audit.c: the empirical privacy audit's trials), mf the fourth (run_mf.c).  A new
 * kind is one ops table and one line in dpo__run_kinds.  It sits above the kinds' files (they
 * never call back into it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run/run_ckpt.h"
#include "run/run_impl.h"

const dpo__run_ops_t dpo__run_train_ops = {"train",           dpo__train_setup,
                                           dpo__train_load,   dpo__train_solve,
                                           dpo__train_evaluate, dpo__train_write,
                                           dpo__train_print,  NULL};

static const dpo__run_ops_t *const dpo__run_kinds[] = {&dpo__run_train_ops, &dpo__run_admm_ops,
                                                       &dpo__run_audit_ops, &dpo__run_mf_ops, NULL};

static const dpo__run_ops_t *dpo__run_ops_find(const char *name) {
  for (int i = 0; name && dpo__run_kinds[i]; i++)
    if (!strcmp(dpo__run_kinds[i]->name, name)) return dpo__run_kinds[i];
  return NULL;
}

/* the audit kind's one-run mode of a train run trains as dpopt train does (its auto-pick too);
 * of an admm run (admm.method) it has no algorithm to pick */
static int dpo__run_one_run(const dpo_config_t *cfg, const char *kind) {
  int one = 0;
  return !strcmp(kind, "audit") && !dpo_config_get_bool(cfg, "audit.one_run", 0, &one) && one &&
         !dpo_config_get(cfg, "admm.method");
}

int dpo_run_create(MPI_Comm comm, const dpo_config_t *cfg, dpo_run_t **out) {
  int rc = DPO_OK;
  *out = NULL;
  dpo_run_t *r = calloc(1, sizeof *r);
  if (!r) return dpo_err(DPO_ENOMEM, "out of memory");
  r->t_start = dpo_wtime();
  r->stage = "train";
  r->cfg = cfg;
  r->fstar = r->tr_loss = r->tr_metric = r->te_loss = r->te_metric = NAN;
  r->comm = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &r->comm) != MPI_SUCCESS) {
    free(r);
    return dpo_err(DPO_EMPI, "dpo_run_create: MPI_Comm_dup failed");
  }
  r->rank = dpo__rank(r->comm);
  r->size = dpo__size(r->comm);
  /* --resume RUN: the run's own settings; the caller may change only run.* keys */
  const char *res = dpo_config_get(cfg, "run.resume");
  if (res) {
    r->resuming = 1;
    if (!(rc = dpo__run_resume_config(cfg, res, &r->merged))) r->cfg = r->merged;
  }
  /* privacy.eps without algo.name: the method best at that budget, on a copy of the settings */
  const char *why = NULL;
  const char *kind = dpo_config_get(cfg, "run.command"); /* the CLI's commands set it */
  if (!rc && !res && dpo_config_get(cfg, "privacy.eps") && !dpo_config_get(cfg, "algo.name") &&
      (!kind || !strcmp(kind, "train") || dpo__run_one_run(cfg, kind)) &&
      !(rc = dpo_config_copy(cfg, &r->merged))) {
    r->cfg = r->merged;
    why = dpo_run_auto_algo(r->merged);
  }
  if (!rc) { /* the kind of run (its ops table, run_kind.c); config.ini keeps it for --resume */
    const char *k = NULL;
    dpo_config_get_str(r->cfg, "run.command", "train", &k);
    if (!(r->ops = dpo__run_ops_find(k)))
      rc = dpo_err(DPO_EINVAL, "%s: run.command = '%s': expected train, admm, audit or mf",
                   dpo_config_origin(r->cfg, "run.command"), k);
    else r->stage = r->ops->name;
  }
  if (!rc) rc = dpo_config_get_int(r->cfg, "run.checkpoint_every", 0, &r->ckpt_every);
  if (!rc) rc = dpo_config_get_int(r->cfg, "run.stop_after", 0, &r->stop_after);
  if (!rc && (r->ckpt_every < 0 || r->stop_after < 0))
    rc = dpo_err(DPO_EINVAL, "run.checkpoint_every and run.stop_after must be >= 0");
  /* the kept last released iterate (RUN/last_release.txt, run_solve.c): 0 = default */
  if (!rc) rc = dpo_config_get_int(r->cfg, "run.keep_every", 0, &r->keep_every);
  if (!rc) rc = dpo_config_get_double(r->cfg, "run.keep_seconds", -1.0, &r->keep_seconds);
  if (!rc && (r->keep_every < 0 || !(r->keep_seconds >= 0 || r->keep_seconds == -1.0) ||
              !isfinite(r->keep_seconds)))
    rc = dpo_err(DPO_EINVAL, "run.keep_every must be >= 0 and run.keep_seconds >= 0");
  if (!rc) rc = dpo_config_get_bool(r->cfg, "run.quiet", 0, &r->quiet);
  if (!rc) dpo_msg_set_quiet(r->quiet || r->rank != 0);
  int verbose = 0;
  if (!rc && !(rc = dpo_config_get_bool(r->cfg, "run.verbose", 0, &verbose)))
    dpo_msg_set_verbose(verbose);
  if (!rc && why)
    dpo_msg("no --algo: using %s (%s; %s neighbours; doc/howto/choose-method.md)",
            dpo_config_get(r->cfg, "algo.name"), why, dpo_config_get(r->cfg, "privacy.neighbours"));
  if ((rc = dpo_agree(r->comm, rc))) {
    dpo__run_failed(r, rc);
    dpo_run_destroy(r);
    return rc;
  }
  *out = r;
  return DPO_OK;
}

int dpo_run_setup(dpo_run_t *r) {
  int rc = dpo__run_expect(r, DPO__RUN_CREATED, "dpo_run_setup");
  return rc ? rc : r->ops->setup(r);
}

int dpo_run_load(dpo_run_t *r) {
  int rc = dpo__run_expect(r, DPO__RUN_SETUP, "dpo_run_load");
  return rc ? rc : r->ops->load(r);
}

int dpo_run_set_rows(dpo_run_t *r, uint64_t key, double lo, double hi, double test_lo,
                     double test_hi) {
  int rc = dpo__run_expect(r, DPO__RUN_SETUP, "dpo_run_set_rows");
  if (!rc && !(0 <= lo && lo < hi && hi <= 1 && 0 <= test_lo && test_lo <= test_hi && test_hi <= 1))
    rc = dpo_err(DPO_EINVAL, "dpo_run_set_rows: parts [%g, %g) and [%g, %g) not within [0, 1)",
                 lo, hi, test_lo, test_hi);
  if (rc) return rc;
  r->lo.part_key = key, r->lo.part_lo = lo, r->lo.part_hi = hi;
  r->test_part_lo = test_lo, r->test_part_hi = test_hi;
  return DPO_OK;
}

int dpo_run_solve(dpo_run_t *r) {
  int rc = dpo__run_expect(r, DPO__RUN_LOADED, "dpo_run_solve");
  return rc ? rc : r->ops->solve(r);
}

int dpo_run_solved(const dpo_run_t *r) {
  return r && r->fail_rc == DPO_OK && r->state >= DPO__RUN_SOLVED;
}

/* after a solve that ended (not one stopped at a checkpoint) */
static int dpo__run_solved(const dpo_run_t *r, const char *fn) {
  int rc = dpo__run_expect(r, DPO__RUN_SOLVED, fn);
  if (!rc && r->run_rc == DPO_EINTR)
    rc = dpo_err(DPO_EINVAL, "%s: the run was interrupted (resume it first)", fn);
  return rc;
}

int dpo_run_evaluate(dpo_run_t *r) {
  int rc = dpo__run_solved(r, "dpo_run_evaluate");
  if (!rc && r->evaluated) rc = dpo_err(DPO_EINVAL, "dpo_run_evaluate: called twice");
  return rc ? rc : r->ops->evaluate(r);
}

int dpo_run_write(dpo_run_t *r) {
  int rc = dpo__run_solved(r, "dpo_run_write");
  return rc ? rc : r->ops->write(r);
}

void dpo_run_print(const dpo_run_t *r, FILE *out) {
  if (!r || r->rank != 0 || r->state != DPO__RUN_WRITTEN) return;
  r->ops->print(r, out);
}
