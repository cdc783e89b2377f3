/* The run driver (see include/dpopt/optim.h).
 *
 * Rank 0 runs the algorithm's step() in an ordinary loop; every evaluation goes through the
 * oracle, so the other ranks sit in dpo_oracle_serve() until rank 0 finishes the oracle with
 * the run's status.  The trace is written by rank 0 only; its loss/gradient columns are
 * computed on the training data and are therefore labelled non-private (privacy rule 4).
 */
#include "dpopt/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "comm/step1.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/solver_int.h"

/* struct dpo_solver: solver_int.h (shared with solver_ckpt.c) */

void dpo_run_opts_default(dpo_run_opts_t *o) {
  if (!o) return;
  o->max_iter = DPO_ITERS_PLAN;
  o->gtol = 0.0;
  o->trace_every = 0;
  o->trace_loss = 1;
  o->heldout_metric = NULL;
  o->quiet = 0;
  o->progress = 0;
  o->fstar = NAN;
  o->trace = NULL;
  o->checkpoint_every = 0;
  o->checkpoint_path = NULL;
  o->stop = NULL;
  o->stop_after = 0;
  o->on_release = NULL;
  o->on_release_arg = NULL;
  o->on_checkpoint = NULL;
  o->on_checkpoint_arg = NULL;
}

static void dpo__solver_privacy_key(const char *k, const char *v, const char *o, void *arg) {
  (void)v, (void)o;
  const char **first = arg;
  if (!*first && !strncmp(k, "privacy.", 8)) *first = k;
}

int dpo_solver_create(dpo_oracle_t *oracle, const dpo_algo_t *algo, const dpo_config_t *cfg,
                      dpo_rng_t *rng, struct dpo_ledger *ledger, const double *x0,
                      dpo_solver_t **out) {
  /* without a specification the solver takes the defaults: a privacy setting in cfg would be
   * ignored, so it is refused (fail closed) rather than read below the run API */
  const char *key = NULL;
  if (cfg) dpo_config_foreach(cfg, dpo__solver_privacy_key, &key);
  if (key) {
    if (out) *out = NULL;
    return dpo_agree(oracle ? dpo_oracle_comm(oracle) : MPI_COMM_SELF,
                     dpo_err(DPO_EINVAL, "dpo_solver_create: the configuration sets %s; pass the "
                             "privacy settings as a specification (dpo_privacy_spec_read, then "
                             "dpo_solver_create_spec)", key));
  }
  return dpo_solver_create_spec(oracle, algo, cfg, NULL, rng, ledger, x0, out);
}

int dpo_solver_create_spec(dpo_oracle_t *oracle, const dpo_algo_t *algo,
                           const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                           dpo_rng_t *rng, struct dpo_ledger *ledger, const double *x0,
                           dpo_solver_t **out) {
  return dpo_solver_create_resume(oracle, algo, cfg, spec, rng, ledger, x0, NULL, out);
}

int dpo_solver_create_resume(dpo_oracle_t *oracle, const dpo_algo_t *algo,
                             const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                             dpo_rng_t *rng, struct dpo_ledger *ledger, const double *x0,
                             const char *ckpt, dpo_solver_t **out) {
  if (!oracle) return dpo_err(DPO_EINVAL, "dpo_solver_create: NULL oracle");
  MPI_Comm comm = dpo_oracle_comm(oracle);
  int rc = DPO_OK;
  dpo_solver_t *s = NULL;
  if (out) *out = NULL;
  if (!algo || !out) {
    rc = dpo_err(DPO_EINVAL, "dpo_solver_create: NULL algorithm or output");
    goto out;
  }
  s = calloc(1, sizeof *s);
  if (!s) {
    rc = dpo_err(DPO_ENOMEM, "dpo_solver_create: out of memory");
    goto out;
  }
  s->oracle = oracle;
  s->algo = algo;
  s->cfg = cfg;
  if (spec) s->spec = *spec;
  else dpo_privacy_spec_default(&s->spec);
  s->rng = rng;
  s->ledger = ledger;
  s->rank = dpo_oracle_rank(oracle);
  s->d = dpo_oracle_dim(oracle);
  s->n = dpo_oracle_nglobal(oracle);
  s->x = calloc((size_t)s->d, sizeof *s->x);
  s->cx = calloc((size_t)s->d, sizeof *s->cx);
  s->cg = calloc((size_t)s->d, sizeof *s->cg);
  s->xstart = calloc((size_t)s->d, sizeof *s->xstart);
  if (!s->x || !s->cx || !s->cg || !s->xstart) {
    rc = dpo_err(DPO_ENOMEM, "dpo_solver_create: out of memory for d = %d", (int)s->d);
    goto out;
  }
  if (x0) memcpy(s->x, x0, (size_t)s->d * sizeof *x0);
  /* a resume: what the run released before its first step comes from the checkpoint */
  if (s->rank == 0 && ckpt && dpo_algo_can_checkpoint(algo))
    rc = dpo__solver_ckpt_count_read(s, ckpt);
  if (!rc && s->rank == 0 && algo->create) rc = algo->create(s, &s->state);
  if (!rc && s->rank == 0 && algo->is_private && s->plan.kind == DPO_PLAN_NONE)
    rc = dpo_err(DPO_EINVAL, "private algorithm %s declares no release plan (privacy rule 3)",
                 algo->name);
out:
  rc = dpo_agree(comm, rc);
  if (!rc) { /* the plan is public (config and n): every rank knows it */
    int64_t kv[2] = {(int64_t)s->plan.kind, s->plan.steps};
    if (MPI_Bcast(kv, 2, MPI_INT64_T, 0, comm) != MPI_SUCCESS ||
        MPI_Bcast(s->plan.what, (int)sizeof s->plan.what, MPI_CHAR, 0, comm) != MPI_SUCCESS)
      rc = dpo_agree(comm, dpo_err(DPO_EMPI, "dpo_solver_create: MPI_Bcast of the plan failed"));
    s->plan.kind = (dpo_plan_kind_t)kv[0];
    s->plan.steps = kv[1];
  }
  /* x0 is public; rank 0's copy is the one the algorithm starts from */
  if (!rc && MPI_Bcast(s->x, s->d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS)
    rc = dpo_agree(comm, dpo_err(DPO_EMPI, "dpo_solver_create: MPI_Bcast of x0 failed"));
  if (rc) {
    dpo_solver_destroy(s);
    return rc;
  }
  *out = s;
  return DPO_OK;
}

void dpo_solver_destroy(dpo_solver_t *s) {
  if (!s) return;
  if (s->state && s->algo && s->algo->destroy) s->algo->destroy(s->state);
  free(s->x);
  free(s->cx);
  free(s->cg);
  free(s->xstart);
  dpo_ckpt_destroy(s->rckpt);
  free(s->rckpt_path);
  free(s);
}

int32_t dpo_solver_dim(const dpo_solver_t *s) { return s->d; }
int64_t dpo_solver_n(const dpo_solver_t *s) { return s->n; }
double *dpo_solver_x(dpo_solver_t *s) { return s->x; }
dpo_oracle_t *dpo_solver_oracle(dpo_solver_t *s) { return s->oracle; }
dpo_rng_t *dpo_solver_rng(dpo_solver_t *s) { return s->rng; }
void dpo_solver_set_release_observer(dpo_solver_t *s, dpo_release_fn fn, void *arg) {
  s->release_fn = fn;
  s->release_arg = arg;
}
int dpo_solver_release(dpo_solver_t *s, const dpo_release_t *r) {
  return s->release_fn ? s->release_fn(s->release_arg, r) : DPO_OK;
}
struct dpo_ledger *dpo_solver_ledger(dpo_solver_t *s) { return s->ledger; }
const dpo_config_t *dpo_solver_config(const dpo_solver_t *s) { return s->cfg; }
const dpo_privacy_spec_t *dpo_solver_privacy(const dpo_solver_t *s) { return &s->spec; }
int64_t dpo_solver_iters(const dpo_solver_t *s) { return s->iters; }
int64_t dpo_solver_max_iter(const dpo_solver_t *s) { return s->max_iter; }

int dpo_solver_declare_plan(dpo_solver_t *s, const dpo_plan_t *p) {
  if (!s || !p || p->kind == DPO_PLAN_NONE || p->steps < 1)
    return dpo_err(DPO_EINVAL, "dpo_solver_declare_plan: a plan needs a kind and steps >= 1");
  if (p->kind == DPO_PLAN_WHOLE && !p->whole.mechanism)
    return dpo_err(DPO_EINVAL, "dpo_solver_declare_plan: a whole plan needs its charge");
  /* the front end refused secagg checkpoints from the table's flag, before any data */
  if (p->one_pass && !s->algo->one_pass && dpo_oracle_parties(s->oracle))
    return dpo_err(DPO_EINVAL, "dpo_solver_declare_plan: %s declares a one-pass plan with "
                   "parties but not dpo_algo_t.one_pass", s->algo->name);
  s->plan = *p;
  s->plan.what[sizeof s->plan.what - 1] = '\0';
  return DPO_OK;
}

const dpo_plan_t *dpo_solver_plan(const dpo_solver_t *s) { return &s->plan; }

const char *dpo_plan_kind_name(dpo_plan_kind_t k) {
  return k == DPO_PLAN_PER_STEP ? "per-step" : k == DPO_PLAN_WHOLE ? "whole" : "none";
}

/* The iteration limit of a run: max_iter, or the plan's length for DPO_ITERS_PLAN. */
static int64_t dpo__resolve_iters(const dpo_solver_t *s, const dpo_run_opts_t *o) {
  if (o->max_iter >= 0) return o->max_iter;
  return s->plan.kind != DPO_PLAN_NONE ? s->plan.steps : 100;
}

/* The plan goes into the journal before the first charge (a resumed run's is there already). */
static int dpo__plan_record(dpo_solver_t *s) {
  if (!s->ledger || s->resumed) return DPO_OK;
  return dpo_ledger_record_plan(s->ledger, s->algo->name, dpo_plan_kind_name(s->plan.kind),
                                s->plan.steps, s->plan.what);
}

/* Rank 0, before step 0: refuse run options that disagree with the plan (privacy rule 3),
 * then make a whole plan's one charge.  Nothing has been released yet. */
static int dpo__plan_start(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t max_iter) {
  const dpo_plan_t *p = &s->plan;
  const char *name = s->algo->name;
  int rc;
  if (!s->algo->is_private) return DPO_OK;
  if (o->gtol > 0)
    return dpo_err(DPO_EINVAL, "algo.gtol (--gtol) = %g stops %s on the gradient of the private "
                   "data, a decision no charge covers: drop --gtol (private algorithms run their "
                   "planned steps)", o->gtol, name);
  if ((o->checkpoint_every > 0 || o->stop_after > 0 || s->resumed) &&
      (rc = dpo__solver_ckpt_refused(s, DPO_EINVAL)))
    return rc;
  if (p->kind != DPO_PLAN_WHOLE) return dpo__plan_record(s);
  if (max_iter < p->steps)
    return dpo_err(DPO_EINVAL, "%s charges its whole %lld-step schedule at once, a charge "
                   "that holds only if the schedule runs to its end: --iters %lld would cut it; "
                   "drop --iters (algo.iters) to run the schedule's own length, or shorten the "
                   "schedule itself (e.g. algo.T = %lld)", name, (long long)p->steps,
                   (long long)max_iter, (long long)max_iter);
  /* a stop that writes a checkpoint only pauses the pass (its iterate is withheld until the
   * resumed pass ends) */
  if (o->stop_after > 0 && o->stop_after < p->steps && !dpo_algo_can_checkpoint(s->algo))
    return dpo_err(DPO_EINVAL, "run.stop_after = %lld would cut %s's whole %lld-step plan",
                   (long long)o->stop_after, name, (long long)p->steps);
  if (!s->ledger) return dpo_err(DPO_EINVAL, "%s: a private run needs the ledger", name);
  if (s->resumed) {
    /* the charge was made before step 0, so before any checkpoint: the journal the resume
     * checked against the checkpoint holds it, and the pass goes on under it uncharged */
    if (dpo_ledger_count(s->ledger) < 1)
      return dpo_err(DPO_EFORMAT, "%s: the resumed journal holds no charge for the whole "
                     "%lld-step plan", name, (long long)p->steps);
    return DPO_OK;
  }
  /* the plan is journalled first; a refused charge records nothing, so the check is the charge */
  rc = dpo__plan_record(s);
  if (!rc) rc = dpo_ledger_charge(s->ledger, &p->whole, NULL);
  if (rc == DPO_EBUDGET) {
    double be = NAN, bd = NAN, se = NAN, sd = NAN;
    dpo_ledger_budget(s->ledger, &be, &bd);
    dpo_ledger_spent(s->ledger, &se, &sd);
    return dpo_err(DPO_EINVAL, "%s needs its whole plan charged at once (%s) but the budget "
                   "cannot cover it (eps %g already spent of %g): raise --eps or use a fresh "
                   "budget", name, p->what, se, be);
  }
  return rc;
}

void dpo_solver_set_spent(dpo_solver_t *s, double (*spent)(void *), void *arg) {
  if (!s) return;
  s->spent = spent;
  s->spent_arg = arg;
}

/* The key must be in the algorithm's own or shared table (optim.h): what --help lists is
 * what the algorithm reads. */
static int dpo__param_declared(const dpo_solver_t *s, const char *key) {
  const dpo_algo_param_t *tabs[2] = {s->algo ? s->algo->params : NULL,
                                     s->algo ? s->algo->shared : NULL};
  for (int k = 0; k < 2; k++)
    for (const dpo_algo_param_t *p = tabs[k]; p && p->key; p++)
      if (strcmp(p->key, key) == 0) return DPO_OK;
  return dpo_err(DPO_EINVAL, "internal error: algorithm %s reads algo.%s, which its parameter "
                 "table does not declare", s->algo ? s->algo->name : "?", key);
}

int dpo_solver_param(const dpo_solver_t *s, const char *key, double def, double *out) {
  char full[128];
  if (!key || !out) return dpo_err(DPO_EINVAL, "dpo_solver_param: NULL key or output");
  int rc = dpo__param_declared(s, key);
  if (rc) return rc;
  snprintf(full, sizeof full, "algo.%s", key);
  if (!s->cfg) {
    *out = def;
    return DPO_OK;
  }
  return dpo_config_get_double(s->cfg, full, def, out);
}

int dpo_solver_param_int(const dpo_solver_t *s, const char *key, int64_t def, int64_t *out) {
  char full[128];
  if (!key || !out) return dpo_err(DPO_EINVAL, "dpo_solver_param_int: NULL key or output");
  int rc = dpo__param_declared(s, key);
  if (rc) return rc;
  snprintf(full, sizeof full, "algo.%s", key);
  if (!s->cfg) {
    *out = def;
    return DPO_OK;
  }
  return dpo_config_get_int(s->cfg, full, def, out);
}

int dpo_solver_param_str(const dpo_solver_t *s, const char *key, const char *def,
                         const char **out) {
  char full[128];
  if (!key || !out) return dpo_err(DPO_EINVAL, "dpo_solver_param_str: NULL key or output");
  int rc = dpo__param_declared(s, key);
  if (rc) return rc;
  snprintf(full, sizeof full, "algo.%s", key);
  *out = def;
  if (!s->cfg) return DPO_OK;
  return dpo_config_get_str(s->cfg, full, def, out);
}

int dpo_solver_constants(const dpo_solver_t *s, double *L, double *mu) {
  const dpo_model_t *m = dpo_oracle_model(s->oracle);
  if (mu) *mu = dpo_model_mu(m);
  if (!L) return DPO_OK;
  double B = NAN;
  int rc = s->cfg ? dpo_config_get_double(s->cfg, "data.row_l2_bound", NAN, &B) : DPO_OK;
  if (rc) return rc;
  if (isnan(B))
    return dpo_err(DPO_EINVAL, "data.row_l2_bound must be declared (public bound)");
  if (!(B > 0) || !isfinite(B))
    return dpo_err(DPO_EINVAL, "data.row_l2_bound = %g must be finite and > 0 (%s)", B,
                   dpo_config_origin(s->cfg, "data.row_l2_bound")
                       ? dpo_config_origin(s->cfg, "data.row_l2_bound") : "?");
  *L = dpo_model_L_bound(m, B);
  if (!(*L > 0) || !isfinite(*L))
    return dpo_err(DPO_EINVAL, "model %s gives L = %g from row bound %g", dpo_model_name(m), *L,
                   B);
  return DPO_OK;
}

double dpo_solver_L(const dpo_solver_t *s) {
  double L = NAN;
  if (dpo_solver_constants(s, &L, NULL)) return NAN;
  return L;
}

double dpo_solver_mu(const dpo_solver_t *s) { return dpo_model_mu(dpo_oracle_model(s->oracle)); }

/* ---- progress on stderr (rank 0) ----
 * On when opts->progress > 0 (--progress), or when it is 0 (automatic) and someone watches:
 * stderr is a terminal, or a launcher (mpirun) pipes rank 0's output and the process still has
 * a controlling terminal.  quiet wins.  On a terminal one line is redrawn ("\r") at most once
 * a second; otherwise whole lines, at most one a second and only on a new tenth of the run
 * (or after 30 s without one), and a last line at the end (always with --progress, else only
 * if something was shown). */
typedef struct {
  int on, tty, explicit_on, printed;
  double t0, last;
  int64_t t_first, last_tenth, last_t;
} dpo__prog_t;

static int dpo__launched_interactive(void) {
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_RANK") && !getenv("PMIX_RANK")) return 0;
  if (isatty(STDIN_FILENO)) return 1;
  int fd = open("/dev/tty", O_RDONLY | O_NOCTTY);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

static void dpo__prog_init(dpo__prog_t *p, const dpo_run_opts_t *o, int64_t t_first, double t0) {
  memset(p, 0, sizeof *p);
  p->tty = isatty(STDERR_FILENO);
  p->explicit_on = o->progress > 0;
  p->on = !o->quiet && (p->explicit_on || (o->progress == 0 && (p->tty || dpo__launched_interactive())));
  p->t0 = p->last = t0;
  p->t_first = t_first;
  p->last_tenth = p->last_t = -1;
}

/* t_done iterations of max_iter are complete; final: the run has ended. */
static void dpo__prog_show(dpo__prog_t *p, const dpo_solver_t *s, int64_t t_done,
                           int64_t max_iter, int final) {
  if (!p->on) return;
  double now = MPI_Wtime(), el = now - p->t0;
  int64_t tenth = max_iter > 0 ? t_done * 10 / max_iter : 0;
  if (final) {
    if (!p->explicit_on && !p->printed) return;
    if (p->printed && !p->tty && p->last_t == t_done) return; /* that line is already there */
  } else if (now - p->last < 1.0) {
    return;
  } else if (!p->tty && tenth == p->last_tenth && now - p->last < 30.0) {
    return;
  }
  char eta[48] = "", eps[48] = "";
  int64_t ran = t_done - p->t_first;
  if (!final && ran > 0 && max_iter > t_done)
    snprintf(eta, sizeof eta, ", ETA %.1f s", el / (double)ran * (double)(max_iter - t_done));
  if (s->spent) snprintf(eps, sizeof eps, ", eps spent %.4g", s->spent(s->spent_arg));
  fprintf(stderr, "%s[dpopt] %s: iteration %ld/%ld (%d%%), %.1f s elapsed%s%s%s",
          p->tty && p->printed ? "\r" : "", s->algo->name, (long)t_done, (long)max_iter,
          max_iter > 0 ? (int)(100 * t_done / max_iter) : 100, el, eta, eps,
          p->tty && !final ? "    " : "\n");
  fflush(stderr);
  p->printed = 1;
  p->last = now;
  p->last_tenth = tenth;
  p->last_t = t_done;
}

/* A worker's steps of one meeting each (dpo_algo_t.step1): the same steps as rank 0's loop,
 * until the plan or the iteration limit ends them or a meeting says rank 0 stopped; then the
 * oracle serves what rank 0 asks after its loop.  A failure of this rank's own is reported
 * when rank 0 finishes the oracle; only an MPI failure returns. */
static int dpo__solver_steps1(dpo_solver_t *s, int64_t max_iter) {
  int rc = DPO_OK;
  for (int64_t t = s->t0; dpo__oracle_step1_live(s->oracle, NULL) && t < max_iter; t++) {
    int fin = 0;
    dpo__oracle_step1_point(s->oracle, t, s->x); /* x_t, for a trace row in the meeting */
    if ((rc = s->algo->step(s, s->state, t, &fin)) || fin) break;
  }
  dpo__oracle_step1_close(s->oracle);
  if (rc && rc != DPO_EMPI) dpo__oracle_step1_fail(s->oracle, rc), rc = DPO_OK;
  return rc;
}

/* Every rank, collective: rank 0's choice of one meeting a step and its iteration limit; the
 * trace rows whose sums the meetings carry (rank 0's plan, sent on by the oracle).  Nothing
 * else between the steps asks the other ranks: a checkpoint or a stop is rank 0's alone. */
static int dpo__solver_begin1(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t *max_iter,
                              int *one) {
  const int rows = s->rank == 0 && o->trace && o->trace_every > 0 && o->trace_loss;
  dpo__oracle_step1_trace_plan(s->oracle, rows ? o->trace_every : 0,
                               rows && o->heldout_metric);
  int rc = s->algo->step1(s, &s->state, s->rank == 0, max_iter, one);
  s->max_iter = *max_iter;
  s->one = *one;
  return rc;
}

/* Rank 0 after its loop: the other ranks wait in a step's meeting unless the steps ended for
 * all (the plan's end, the limit, a meeting that failed); then one meeting tells them to stop.
 * Their loop ran from t0 (a resumed run's checkpoint), so the limit is on t0 + met. */
static int dpo__solver_end1(dpo_solver_t *s, int rc, int ended, int64_t max_iter) {
  int64_t met = 0;
  dpo__oracle_step1_live(s->oracle, &met);
  int mrc = dpo__oracle_step1_end(s->oracle, s->t0 + met, !ended && s->t0 + met < max_iter);
  return mrc && !rc ? mrc : rc;
}

/* Rank 0 at the top of iteration t < max_iter, before its trace row: a checkpoint (periodic,
 * or on a stop), from which a resumed run redoes exactly iterations t, t+1, ... (the trace is
 * truncated to this point).  Returns 1 when the loop ends here (*rc says why). */
static int dpo__solver_top(dpo_solver_t *s, const dpo_run_opts_t *opts, int64_t t,
                           int64_t max_iter, int *rc) {
  int intr = (opts->stop && *opts->stop) || (opts->stop_after > 0 && t >= opts->stop_after);
  int periodic = opts->checkpoint_every > 0 && t > s->t0 && t % opts->checkpoint_every == 0;
  if (!intr && !periodic) return 0;
  if (opts->trace && opts->trace_every > 0) fflush(opts->trace);
  int saved = 0;
  char why[200] = "the algorithm cannot write one";
  if (dpo_algo_can_checkpoint(s->algo) && opts->checkpoint_path) {
    /* the checkpoint holds released iterates: their charges durable first */
    *rc = s->ledger && s->rank == 0 ? dpo_ledger_sync(s->ledger) : DPO_OK;
    if (!*rc) *rc = dpo__solver_ckpt_save(s, opts, t);
    saved = !*rc;
    /* a run the algorithm cannot checkpoint (refused up front when asked for) still stops
     * cleanly on a signal, without one */
    if (*rc == DPO_EUNSUP && intr) snprintf(why, sizeof why, "%s", dpo_errmsg()), *rc = 0;
    if (*rc) return 1;
  }
  if (!intr) return 0;
  s->iters = t;
  if (saved)
    *rc = dpo_err(DPO_EINTR, "interrupted before iteration %ld of %ld: checkpoint written, "
                  "continue with dpopt train --resume RUN", (long)t, (long)max_iter);
  else
    *rc = dpo_err(DPO_EINTR, "interrupted before iteration %ld of %ld: no checkpoint (%s)",
                  (long)t, (long)max_iter, why);
  return 1;
}

int dpo_solver_run(dpo_solver_t *s, const dpo_run_opts_t *opts) {
  if (!s) return dpo_err(DPO_EINVAL, "dpo_solver_run: NULL solver");
  MPI_Comm comm = dpo_oracle_comm(s->oracle);
  dpo_run_opts_t defo;
  if (!opts) {
    dpo_run_opts_default(&defo);
    opts = &defo;
  }
  int rc = DPO_OK, one = 0, ended = 0;
  int64_t max_iter = s->max_iter = dpo__resolve_iters(s, opts);
  s->one = 0;
  s->row.t = -1;
  if (s->algo->step1) rc = dpo__solver_begin1(s, opts, &max_iter, &one);
  if (s->rank != 0) {
    if (!rc && one) rc = dpo__solver_steps1(s, max_iter);
    if (rc != DPO_EMPI) rc = dpo_oracle_serve(s->oracle);
  } else {
    double *g = malloc((size_t)s->d * sizeof *g);
    double *xsave = malloc((size_t)s->d * sizeof *xsave);
    const size_t nb = (size_t)s->d * sizeof *g;
    int tracing = opts->trace && opts->trace_every > 0;
    double t0 = MPI_Wtime(), diag = 0.0;
    dpo__prog_t prog;
    dpo__prog_init(&prog, opts, s->t0, t0);
    int64_t t = 0, last_row = -1;
    if (rc) goto done0;
    if (!g || !xsave) {
      rc = dpo_err(DPO_ENOMEM, "dpo_solver_run: out of memory");
      goto done0;
    }
    if (opts->checkpoint_every < 0 || opts->stop_after < 0) {
      rc = dpo_err(DPO_EINVAL, "checkpoint_every and stop_after must be >= 0");
      goto done0;
    }
    if (opts->checkpoint_every > 0 && !dpo_algo_can_checkpoint(s->algo)) {
      rc = dpo_err(DPO_EUNSUP, "algorithm %s cannot write checkpoints (no save/load): drop "
                   "run.checkpoint_every (--checkpoint-every)", s->algo->name);
      goto done0;
    }
    if ((opts->checkpoint_every > 0 || opts->stop_after > 0) && !opts->checkpoint_path) {
      rc = dpo_err(DPO_EINVAL, "checkpoints requested without a checkpoint path");
      goto done0;
    }
    memcpy(s->xstart, s->x, nb);
    if ((rc = dpo__plan_start(s, opts, max_iter))) goto done0;
    /* the held-out columns last: the first six keep their places */
    if (tracing && !s->resumed &&
        (fprintf(opts->trace, "iter,time_s,objective_nonprivate,gradnorm_nonprivate,"
                 "f_minus_fstar_nonprivate,eps_spent") < 0 ||
         (opts->trace_loss && opts->heldout_metric &&
          fprintf(opts->trace, ",heldout_loss_nonprivate,heldout_%s_nonprivate",
                  opts->heldout_metric) < 0) ||
         fputc('\n', opts->trace) == EOF)) {
      rc = dpo_err(DPO_EIO, "cannot write the trace header");
      goto done0;
    }
    for (t = s->t0;; t++) {
      if (t < max_iter && dpo__solver_top(s, opts, t, max_iter, &rc)) break;
      if (tracing && t % opts->trace_every == 0) {
        if ((rc = dpo__trace_row(s, opts, t, t0, &diag, g, t < max_iter))) break;
        last_row = t;
      }
      if (t >= max_iter) break;
      if (opts->gtol > 0 && !s->algo->is_private) {
        /* exact gradient at x_t: a cache hit for algorithms that evaluate at x_t anyway */
        if ((rc = dpo_solver_eval(s, s->x, NULL, g))) break;
        if (dpo__nrm2(g, s->d) <= opts->gtol) break;
      }
      int fin = 0;
      memcpy(xsave, s->x, nb);
      const int64_t charges0 = dpo_ledger_count(s->ledger);
      rc = s->algo->step(s, s->state, t, &fin);
      rc = dpo__trace_after(s, opts, t, &diag, g, xsave, rc); /* a row the meeting brought */
      if (rc == DPO_EBUDGET) {
        /* the refused release never happened: keep the last released iterate */
        memcpy(s->x, xsave, nb);
        break;
      }
      if (rc) break;
      const int64_t charges = dpo_ledger_count(s->ledger);
      if (opts->on_release && s->plan.kind == DPO_PLAN_PER_STEP && charges > charges0 &&
          (rc = opts->on_release(opts->on_release_arg, s->x, t + 1, charges)))
        break;
      dpo__prog_show(&prog, s, t + 1, max_iter, 0);
      if (fin) {
        t++;
        ended = 1;
        break;
      }
    }
    s->iters = t;
    if (s->plan.kind == DPO_PLAN_WHOLE && t < s->plan.steps) {
      /* the whole-schedule charge does not cover a cut pass: withhold its iterate */
      memcpy(s->x, s->xstart, nb);
      if (rc == DPO_OK || rc == DPO_EBUDGET)
        rc = dpo_err(DPO_EINVAL, "%s stopped after %lld of the %lld steps its charge covers: "
                     "the iterate is withheld", s->algo->name, (long long)t,
                     (long long)s->plan.steps);
    }
    if ((rc == DPO_OK || rc == DPO_EBUDGET) && tracing && last_row != t) {
      int trc = dpo__trace_row(s, opts, t, t0, &diag, g, 0);
      if (trc) rc = trc;
    }
    if (tracing) fflush(opts->trace);
    dpo__prog_show(&prog, s, t, max_iter, 1);
  done0:
    free(g);
    free(xsave);
    if (one) rc = dpo__solver_end1(s, rc, ended, max_iter);
    rc = dpo_oracle_finish(s->oracle, rc);
  }
  /* Final iterate and iteration count to every rank (x_T is post-processing of releases
   * that were already charged). */
  if (rc == DPO_OK || rc == DPO_EBUDGET) {
    if (MPI_Bcast(s->x, s->d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS ||
        MPI_Bcast(&s->iters, 1, MPI_INT64_T, 0, comm) != MPI_SUCCESS)
      rc = dpo_err(DPO_EMPI, "dpo_solver_run: MPI_Bcast of the final iterate failed");
  }
  return rc;
}

const char *dpo_solver_step_kind(const dpo_solver_t *s) {
  return s && s->one ? "one-meeting" : "request";
}

const char *dpo__solver_algo_name(const dpo_solver_t *s) {
  return s && s->algo ? s->algo->name : NULL;
}

int dpo__optim_step(const dpo_solver_t *s, const char *key, double c, double *alpha,
                    double *L_out) {
  double a = NAN, L = NAN;
  int rc = dpo_solver_param(s, key, NAN, &a);
  if (rc) return rc;
  if (isnan(a) || L_out) {
    rc = dpo_solver_constants(s, &L, NULL);
    if (rc && isnan(a)) return rc;
    if (rc) L = NAN, dpo_errclear();
  }
  if (isnan(a)) a = c / L;
  if (!(a > 0) || !isfinite(a))
    return dpo_err(DPO_EINVAL, "algo.%s = %g: the step size must be finite and > 0", key, a);
  *alpha = a;
  if (L_out) *L_out = L;
  return DPO_OK;
}
