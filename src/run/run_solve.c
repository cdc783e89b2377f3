/* The run API (dpopt/run.h): solve (oracle, solver, release plan, checkpoint, driver) and the
 * final evaluation of the released iterate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/wait.h" /* dpo__node_ranks */
#include "dpopt/comm.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/sco_common.h" /* dpo__sco_params: the algorithms whose noise is Gaussian */
#include "run/run_agglo.h"
#include "run/run_ckpt.h"
#include "run/run_impl.h"
#include "run/run_parties.h"
#include "run/run_priv.h"

/* algo.x0 = FILE: the coefficients of a model.txt (read on rank 0, broadcast) as the initial
 * point.  The file is an input the privacy analysis treats as public (a released model is; a
 * non-private model of the same data is not).  Collective. */
static int dpo__warm_start(const dpo_run_t *r, double *x0, int32_t p) {
  double *w = NULL;
  int32_t dw = 0, K = 0, Km = dpo_model_classes(r->model);
  int icpt = 0;
  const char *path = r->x0_file;
  /* the same collective reader dpopt predict/eval use: every rank gets the vector or the
   * same error; the bias, if the file has one, is the last coefficient (of each class) */
  int rc = dpo_model_read_bcast_k(r->comm, path, &w, &dw, &icpt, &K);
  if (rc) return rc;
  int64_t pw = (int64_t)(dw + icpt) * (K > 0 ? K : 1);
  if (K != Km)
    rc = dpo_err(DPO_EFORMAT, "--x0 %s: the model has %d classes, model %s %d", path, (int)K,
                 r->model_name, (int)Km);
  else if (pw != p)
    rc = dpo_err(DPO_EFORMAT, "--x0 %s: dimension mismatch: the model has %lld coefficients but "
                 "data %s needs %d", path, (long long)pw, r->train_path, (int)p);
  else memcpy(x0, w, (size_t)p * sizeof *x0);
  free(w);
  return rc; /* the same on every rank: dw, icpt and d are */
}

/* run.fstar = newton: the reference optimum F* of the training objective (non-private
 * diagnostic for the f - f* column).  Collective. */
static int dpo__newton_ref(dpo_run_t *r) {
  r->stage = DPO__TRAIN_STAGE(r, " (Newton reference F*)");
  double *xs = calloc((size_t)r->train->d, sizeof *xs);
  dpo_newton_info_t ni;
  if (!xs) return dpo_err(DPO_ENOMEM, "out of memory");
  int rc = dpo_newton_solve(r->comm, r->model, r->train, xs, 1e-10, 100, &ni);
  free(xs);
  if (rc) return rc;
  r->fstar = ni.F;
  dpo_msg("Newton reference: F* = %.15g after %lld iterations (||grad|| = %.2e) [non-private]",
          ni.F, (long long)ni.iters, ni.gnorm);
  return DPO_OK;
}

/* Rank 0: last_release.txt names the journal line (and its chain tag) of the last kept
 * release, usually after the checkpoint: a journal cut back behind it lost charges whose
 * releases happened.  (The file itself is not keyed: deleting it hides the cut; see
 * doc/design.md.)  No file, or none of that line (an older run): nothing to check. */
static int dpo__resume_check_keep(const dpo_run_t *r) {
  const dpo_ledger_t *L = dpo__run_priv_ledger(r->priv);
  FILE *f = L ? fopen(r->keep_path, "r") : NULL;
  char line[512], hex[65];
  long long n = -1;
  unsigned char head[32];
  if (!f) return DPO_OK;
  while (n < 0 && fgets(line, sizeof line, f))
    if (sscanf(line, "# journal line %lld chain %64[0-9a-f]", &n, hex) != 2) n = -1;
  fclose(f);
  if (n < 0 || strlen(hex) != 64) return DPO_OK;
  for (int i = 0; i < 32; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    head[i] = (unsigned char)v;
  }
  return dpo_ledger_verify_position(L, "last_release.txt", n, head);
}

/* --resume: the solver's state from the checkpoint, the trace cut back to its length then.
 * Every check comes before the first write (the trace's truncation, FAILED). */
static int dpo__resume(dpo_run_t *r) {
  int64_t toff = -1;
  int rc = dpo_solver_resume(r->solver, r->ckpt_path, &toff);
  if (!rc && r->rank == 0) rc = dpo__resume_check_keep(r);
  if ((rc = dpo_agree(r->comm, rc))) return rc;
  r->dir_ready = 1; /* accepted: from here a failure is this run's (FAILED) */
  if (r->rank == 0) {
    char tp[1024];
    snprintf(tp, sizeof tp, "%s/trace.csv", r->dir);
    rc = toff >= 0 ? dpo__run_trace_rewind(r->trace, tp, (long long)toff) : DPO_OK;
    if (!rc) {
      int64_t orph = dpo_solver_resume_orphans(r->solver);
      dpo_msg("resuming %s at iteration %lld", r->dir, (long long)dpo_solver_start_iter(r->solver));
      if (orph)
        dpo_msg("the journal holds %lld charge(s) after the checkpoint: they stay spent, and "
                "the steps they belong to are charged again when redone", (long long)orph);
    }
  }
  return dpo_agree(r->comm, rc);
}

/* Oracle and solver (the algorithm declares its release plan in create). Collective. */
static int dpo__make_solver(dpo_run_t *r) {
  int rc;
  double *x0 = NULL;
  r->stage = DPO__TRAIN_STAGE(r, "");
  if ((rc = dpo_oracle_create(r->comm, r->model, r->train, dpo__run_priv_clip(r->priv),
                              &r->oracle)))
    return rc;
  if (r->test && (rc = dpo_oracle_set_heldout(r->oracle, r->test))) return rc;
  if ((rc = dpo__run_parties_attach(r->parties, r->comm, r->oracle,
                                    dpo__run_priv_ledger(r->priv), r->trace, r->dir,
                                    r->resuming, dpo__run_priv_run_id_of(r->priv),
                                    r->algo && r->algo->shared == dpo__sco_params)))
    return rc;
  /* the parameter vector: d (features + intercept), K d for softmax (dpo_model_dim) */
  const int32_t p = dpo_oracle_dim(r->oracle);
  if (!(x0 = malloc((size_t)p * sizeof *x0)))
    return dpo_agree(r->comm, dpo_err(DPO_ENOMEM, "out of memory"));
  for (int32_t j = 0; j < p; j++) x0[j] = r->x0v;
  /* a resumed run takes its iterate from the checkpoint, not from algo.x0 */
  if (r->x0_file && !r->resuming) rc = dpo__warm_start(r, x0, p);
  if (!rc)
    rc = dpo_solver_create_resume(r->oracle, r->algo, r->cfg, &r->spec,
                                  dpo__run_priv_rng(r->priv), dpo__run_priv_ledger(r->priv), x0,
                                  r->resuming ? r->ckpt_path : NULL, &r->solver);
  free(x0);
  if (rc) return rc;
  dpo__run_priv_attach(r->priv, r->solver);
  if (r->release_fn) dpo_solver_set_release_observer(r->solver, r->release_fn, r->release_arg);
  return r->resuming ? dpo__resume(r) : DPO_OK;
}

/* Dropouts (issue 12, doc/design.md "Dropouts").  A rank that dies (SIGKILL) ends the whole
 * job: Open MPI's error handler is fatal, so no rank writes model.txt.  Rank 0 therefore keeps
 * the last released iterate in RUN/last_release.txt (model.txt format, written to a temporary
 * and renamed: a reader sees the old or the new file, never a torn one), only after a step
 * whose release the ledger accepted (an iterate the journal covers; never one of a
 * whole-plan pass, solver.c), at most every run.keep_every releases or run.keep_seconds
 * seconds (the first release is always kept).  Default: time only, at most once a second (the
 * write is fsynced, ~13 ms on this VM even at d = 124: after every release it made 300 steps
 * of dp-gd on a9a 6x slower; once a second costs ~1%).  A run that completes removes it
 * (model.txt is the output); its presence is the marker of a run that did not finish, and its
 * header names the iteration and the ledger charge it follows. */
static int dpo__keep_release(void *arg, const double *x, int64_t iters, int64_t charges) {
  dpo_run_t *r = arg;
  const double now = dpo_wtime();
  r->keep_pending++;
  if (!(r->keep_last < 0 || (r->keep_every > 0 && r->keep_pending >= r->keep_every) ||
        now - r->keep_last >= r->keep_seconds))
    return DPO_OK;
  char cm[1200], hex[65];
  const int icpt = dpo_model_intercept(r->model);
  int64_t lines = -1;
  unsigned char head[32];
  /* the journal's position after this release's charge: a resume refuses a journal cut
   * back behind it (dpo__resume_check_keep) */
  int rc = dpo_ledger_position(dpo__run_priv_ledger(r->priv), &lines, head);
  if (rc) return rc;
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", head[i]);
  snprintf(cm, sizeof cm, "dpopt last released iterate: the run had not finished (no "
           "summary.json yet): iteration %lld, after ledger charge %lld\n"
           "dpopt %s model, algo %s, %s, d=%d\n%s\njournal line %lld chain %s",
           (long long)iters, (long long)charges, r->model_name, r->algo->name, r->train_path,
           r->train->d, dpo__run_priv_label(r->priv), (long long)lines, hex);
  /* the file outlives an OS crash: the charges it follows must too (dpo__journal_defer) */
  if ((rc = dpo_ledger_sync(dpo__run_priv_ledger(r->priv)))) return rc;
  rc = dpo_model_write_k(r->keep_path, x, r->train->d - icpt, icpt,
                             dpo_model_classes(r->model), cm);
  r->keep_pending = 0;
  r->keep_last = dpo_wtime();
  return rc;
}

/* The journal's fsync per charge cost ~0.2 ms quiet and 1-2 ms on a busy disk, per step (a
 * DP-SGD epoch of 1000 steps: up to 2 s, beside 0.7 s of computing).  During the solve every
 * line is still written before its release (a killed process loses none), but fsynced only
 * before a release leaves this node in a form that outlives it -- the kept last release, a
 * checkpoint (solver.c), and after the solve, before the model, summary or a budget store see
 * it -- when nothing else can carry one off the node meanwhile: every rank on rank 0's node
 * (an OS crash ends them all, and the unsynced lines' releases with them), no parties (their
 * guards and the coordinator are separate owners), no release observer (the audit's), no
 * budget store (its head must not get ahead of the journal: dpo_ledger_set_sync).
 * Collective; returns whether rank 0 deferred. */
static int dpo__journal_defer(dpo_run_t *r) {
  int lrank, lsize, size = dpo__size(r->comm);
  dpo__node_ranks(r->comm, &lrank, &lsize);
  int one = lsize == size; /* rank 0's node holds every rank iff every node's count is all */
  MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_LAND, r->comm);
  dpo_ledger_t *L = dpo__run_priv_ledger(r->priv);
  if (r->rank != 0 || !L || !one || dpo__run_parties_table(r->parties) || r->release_fn)
    return 0;
  int deferring = 0;
  return !dpo_ledger_set_sync(L, 0, &deferring) && deferring;
}

static int dpo__train_solve_here(dpo_run_t *r) {
  int rc;
  if (r->fstar_newton && (rc = dpo__newton_ref(r))) return dpo__run_failed(r, rc);
  double t0 = dpo_wtime();
  if ((rc = dpo__make_solver(r))) return dpo__run_failed(r, rc);
  r->t_plan = dpo_wtime() - t0;
  dpo_run_opts_t ro;
  dpo_run_opts_default(&ro);
  /* unset: the algorithm's own schedule (its release plan), so a private run stops where its
   * charges say it does (optim.h, "release plans") */
  ro.max_iter = dpo_config_get(r->cfg, "algo.iters") ? r->iters : DPO_ITERS_PLAN;
  if ((rc = dpo_config_get_double(r->cfg, "algo.gtol", 0.0, &ro.gtol)))
    return dpo__run_failed(r, dpo_agree(r->comm, rc));
  ro.trace_every = r->trace_every;
  if (r->rank == 0 && !dpo_config_get(r->cfg, "run.trace_every")) {
    /* default: about 200 rows.  Each row's F(x_t) is a full pass over the data, so a row per
     * step made long runs of cheap steps trace-bound (pnsgd on a9a: 19335 one-row steps, 16 s
     * with a row each, 0.7 s without); --trace-every 1 keeps every step */
    const dpo_plan_t *p = dpo_solver_plan(r->solver);
    int64_t T = ro.max_iter >= 0 ? ro.max_iter : p->kind != DPO_PLAN_NONE ? p->steps : 100;
    ro.trace_every = T > 200 ? (T + 199) / 200 : 1;
  }
  ro.trace_loss = !r->no_trace_loss && !dpo__run_parties_hide_train(r->parties);
  /* the held-out data (data.test or the validation part of data.train) in the trace too */
  ro.heldout_metric = r->test ? dpo_model_metric(r->model) : NULL;
  ro.quiet = r->quiet;
  ro.progress = r->progress;
  ro.fstar = r->fstar;
  ro.trace = r->trace;
  ro.checkpoint_every = r->ckpt_every;
  ro.checkpoint_path = r->ckpt_path;
  ro.stop = r->stop;
  ro.stop_after = r->stop_after;
  ro.on_checkpoint = r->ckpt_fn;
  ro.on_checkpoint_arg = r->release_arg;
  if (r->rank == 0 && r->dir_ready && dpo__run_priv_ledger(r->priv)) {
    if (r->keep_seconds < 0) r->keep_seconds = r->keep_every > 0 ? INFINITY : 1.0;
    r->keep_pending = 0;
    r->keep_last = -1;
    ro.on_release = dpo__keep_release;
    ro.on_release_arg = r;
  }
  dpo_config_warn_unused(r->cfg, r->rank == 0 ? stderr : NULL);
  const int deferred = r->journal_deferred = dpo__journal_defer(r);
  double t = dpo_wtime(); /* the iterations alone, without loading and set-up */
  rc = dpo_solver_run(r->solver, &ro);
  /* every charge durable before anything after the solve sees its releases.  rc is the same
   * on every rank here (dpo_solver_run agrees it); rank 0's sync is agreed too, so a failed
   * fsync stops every rank alike (not rank 0 alone, aborted after DPOPT_FAIL_WAIT).  A failed
   * solve keeps its own error; its lines are fsynced when the journal closes. */
  if (rc == DPO_OK || rc == DPO_EBUDGET || rc == DPO_EINTR) {
    int src = deferred ? dpo_ledger_set_sync(dpo__run_priv_ledger(r->priv), 1, NULL) : DPO_OK;
    if ((src = dpo_agree(r->comm, src))) rc = src;
  }
  r->t_solve = dpo_wtime() - t;
  dpo__run_priv_settle(r->priv); /* the releases are over: the budget store gets what ran */
  dpo_ledger_parts_t own; /* secagg: the party's own account, not the coordinator's word */
  int has_own = dpo__run_parties_own_parts(r->parties, &own);
  dpo__run_priv_settle_parties(r->priv, has_own ? &own : NULL); /* each party's store */
  if (rc == DPO_EINTR) {
    /* every rank stopped at the same step; the journal is fsynced charge by charge: the run
     * is not failed, it continues with run.resume */
    if (r->trace) fflush(r->trace);
    r->run_rc = rc;
    r->state = DPO__RUN_SOLVED;
    return rc;
  }
  if (rc != DPO_OK && rc != DPO_EBUDGET) return dpo__run_failed(r, rc);
  if (rc == DPO_EBUDGET && r->rank == 0)
    dpo_msg("privacy budget exhausted: %s; keeping the last released iterate", dpo_errmsg());
  r->run_rc = rc;
  r->state = DPO__RUN_SOLVED;
  return rc;
}

/* Softmax with a test set: the K x K confusion matrix of the released iterate on the test
 * rows (like the test accuracy, a function of the test data only).  Collective. */
static int dpo__test_confusion(dpo_run_t *r) {
  const int32_t p = dpo_solver_dim(r->solver), K = dpo_model_classes(r->model);
  double *x = malloc((size_t)p * sizeof *x);
  int rc = DPO_OK;
  if (!x || !(r->confusion = calloc((size_t)K * (size_t)K, sizeof *r->confusion)))
    rc = dpo_err(DPO_ENOMEM, "confusion matrix: out of memory");
  if (!rc && r->rank == 0) memcpy(x, dpo_solver_x(r->solver), (size_t)p * sizeof *x);
  /* rank 0's iterate is the released one: every rank evaluates that */
  if (!(rc = dpo_agree(r->comm, rc)) && MPI_Bcast(x, p, MPI_DOUBLE, 0, r->comm) != MPI_SUCCESS)
    rc = dpo_agree(r->comm, dpo_err(DPO_EMPI, "confusion matrix: MPI_Bcast failed"));
  if (!rc) rc = dpo_model_confusion(r->comm, r->model, r->test, x, r->confusion);
  free(x);
  return rc;
}

static int dpo__train_evaluate_here(dpo_run_t *r) {
  int rc;
  r->stage = DPO__TRAIN_STAGE(r, "");
  /* withheld (parties) or not asked for (--no-train-eval): no pass over the training rows */
  int hide = dpo__run_parties_hide_train(r->parties) || r->no_train_eval;
  const double t0 = dpo_wtime();
  if (r->rank == 0) {
    double *x = dpo_solver_x(r->solver);
    /* local / shares: the coordinator receives no exact training sums, not even diagnostics */
    rc = hide ? DPO_OK : dpo_oracle_eval_metric(r->oracle, x, 0, &r->tr_loss, &r->tr_metric);
    if (!rc && r->test) rc = dpo_oracle_eval_metric(r->oracle, x, 1, &r->te_loss, &r->te_metric);
    int frc = dpo_oracle_finish(r->oracle, rc);
    if (!rc) rc = frc;
  } else {
    /* no request at all when the training metric is withheld and there is no test set */
    rc = hide && !r->test ? DPO_OK : dpo_oracle_serve(r->oracle);
  }
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  if (r->test && dpo_model_multiclass(r->model) && (rc = dpo__test_confusion(r)))
    return dpo__run_failed(r, rc);
  r->t_eval = dpo_wtime() - t0;
  r->evaluated = 1;
  return DPO_OK;
}

int dpo__train_write(dpo_run_t *r) {
  int rc;
  r->stage = DPO__TRAIN_STAGE(r, "");
  if ((rc = dpo__run_write_outputs(r))) return dpo__run_failed(r, rc);
  r->state = DPO__RUN_WRITTEN;
  return DPO_OK;
}

/* run.agglomerate (run_agglo.c): decided before the solve; when rank 0 solves alone the other
 * ranks skip the solve and evaluation and sleep until rank 0 sends its status. */
static int dpo__agglo_status(dpo_run_t *r, int rc) {
  if (dpo__agglo_idle(r) && rc != DPO_OK && rc != DPO_EBUDGET && rc != DPO_EINTR)
    dpo__run_failed(r, rc); /* rank 0's failure, recorded on the ranks that waited */
  return rc;
}

int dpo__train_solve(dpo_run_t *r) {
  int idle = 0;
  const double t0 = dpo_wtime();
  /* the public size bounds the rows moved: privacy.public_n, else the row count where it is
   * not private */
  const double N = r->spec.public_n > 0 ? (double)r->spec.public_n
                   : dpo__run_n_private(r) ? 0.0 : (double)r->train->n_global;
  int rc = dpo__agglo_begin(r, N, &idle);
  r->t_agglo = dpo_wtime() - t0;
  if (rc) return dpo__run_failed(r, dpo_agree(r->comm, rc));
  return dpo__agglo_status(r, dpo__agglo_end(r, idle ? DPO_OK : dpo__train_solve_here(r)));
}

int dpo__train_evaluate(dpo_run_t *r) {
  dpo__agglo_resume(r);
  return dpo__agglo_status(
      r, dpo__agglo_end(r, dpo__agglo_idle(r) ? DPO_OK : dpo__train_evaluate_here(r)));
}
