/* dpopt tune: private hyperparameter selection (dpopt/tune.h).  Settings and candidates, the
 * one charge, then K (random, never released) private trainings through the run API, each
 * scored on the held-out data by a Laplace-noised count of correct predictions (logreg or
 * softmax); only the best is written.  It stops and resumes between repetitions (tune_ckpt.c). */
#define _XOPEN_SOURCE 700
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dpopt/budget.h"
#include "dpopt/comm.h"
#include "dpopt/data.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/run.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "dpopt/tune.h"
#include "privacy/budget_run.h"
#include "run/run_ckpt.h"
#include "run/tune_store.h"

#include "run/tune_impl.h"


static int tune_public_n(dpo__tune_t *t) {
  int gauss = 0;
  for (int i = 0; i < t->nc; i++) gauss |= t->c[i].gauss;
  if (!gauss || t->rel != DPO_NEIGHBOURS_ADD_REMOVE) return DPO_OK;
  if (!dpo_privacy_spec_given(&t->ps, DPO_SPEC_PUBLIC_N))
    return dpo_err(DPO_EINVAL, "tune: under add-remove the training row count is private, and "
                   "dp-sgd-rdp's Poisson rate m/n and steps must not read it: declare a public "
                   "size (--public-n N, privacy.public_n), e.g. the data set's published size");
  t->n = t->ps.public_n; /* read and parsed with the other privacy settings (tune_grid.c) */
  if (t->n < 1) return dpo_err(DPO_EINVAL, "tune: privacy.public_n must be >= 1");
  /* the training part of a split: its expected public size */
  if (t->vfrac > 0) t->n = (int64_t)llround((1 - t->vfrac) * (double)t->n);
  if (t->n < 1) return dpo_err(DPO_EINVAL, "tune: privacy.public_n leaves no training rows");
  return DPO_OK;
}

static void declare_run_key(const char *k, const char *v, const char *o, void *cfg) {
  (void)v, (void)o;
  if (strncmp(k, "tune.", 5)) dpo_config_declare(cfg, k);
}

static void cand_desc(const dpo__cand_t *k, char *b, size_t cap) {
  int n = snprintf(b, cap, "algo=%s", k->algo);
  if (k->gauss)
    snprintf(b + n, cap - (size_t)n, " batch=%lld steps=%lld z=%.6g%s", (long long)k->m,
             (long long)k->T, k->z, "");
  if (k->gauss && !isnan(k->lr)) n = (int)strlen(b), snprintf(b + n, cap - (size_t)n, " lr=%g", k->lr);
  if (k->gauss && !isnan(k->clip)) n = (int)strlen(b), snprintf(b + n, cap - (size_t)n, " clip=l2:%g", k->clip);
  if (k->gauss && !isnan(k->epochs)) n = (int)strlen(b), snprintf(b + n, cap - (size_t)n, " epochs=%g", k->epochs);
  if (!isnan(k->step))
    n = (int)strlen(b), snprintf(b + n, cap - (size_t)n, " %s=%g", k->gauss ? "eta" : "c", k->step);
}

/* Every candidate's data-free refusals (settings, privacy set-up, the algorithm's analysis),
 * by a run set up in a scratch directory and dropped: before the charge.  Collective. */
static int check_cands(dpo__tune_t *t) {
  int rc = DPO_OK;
  for (int i = 0; i < t->nc && !rc; i++) {
    dpo_config_t *c = NULL;
    dpo_run_t *run = NULL;
    if (!(rc = dpo__tune_cand_config(t, &t->c[i], 0, &c)) && !(rc = dpo_run_create(t->comm, c, &run)))
      rc = dpo_run_setup(run);
    dpo_run_destroy(run);
    dpo_config_destroy(c);
    dpo__tune_rm_rep(t);
    rc = dpo_agree(t->comm, rc);
  }
  return rc;
}

/* Rank 0: the whole file p into a new buffer (the repetition's model, kept until the end). */
static int slurp(const char *p, char **buf, size_t *n) {
  FILE *f = fopen(p, "rb");
  long len = -1;
  if (f && fseek(f, 0, SEEK_END) == 0) len = ftell(f);
  if (!f || len < 0 || fseek(f, 0, SEEK_SET) != 0) {
    if (f) fclose(f);
    return dpo_err(DPO_EIO, "%s: cannot read the repetition's model", p);
  }
  char *b = malloc((size_t)len + 1);
  int rc = b && fread(b, 1, (size_t)len, f) == (size_t)len ? DPO_OK
                                                            : dpo_err(DPO_EIO, "%s: cannot read", p);
  fclose(f);
  if (rc) {
    free(b);
    return rc;
  }
  free(*buf);
  *buf = b, *n = (size_t)len;
  return DPO_OK;
}

/* One repetition (number s->done): train candidate s->next, journal that it finished, then
 * score it (rank 0: noisy count of correct held-out predictions) and keep the best in s.
 * DPO_EINTR when a signal stopped its training (nothing of it used).  Collective. */
static int run_rep(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, dpo__tune_state_t *s) {
  const dpo__cand_t *k = &t->c[s->next];
  dpo_config_t *c = NULL;
  dpo_run_t *run = NULL;
  int rc = dpo__tune_cand_config(t, k, (int)s->done, &c), better = 0;
  if (rc) return dpo_agree(t->comm, rc);
  if (!(rc = dpo_run_create(t->comm, c, &run)) && !(rc = dpo_run_setup(run)) &&
      !(rc = dpo_run_load(run))) {
    dpo_run_set_stop(run, dpo_run_signal_flag());
    rc = dpo_run_solve(run);
    if (rc == DPO_EBUDGET) rc = DPO_OK; /* the last released iterate is kept */
    if (!rc) rc = dpo_run_evaluate(run);
    if (!rc) rc = dpo_run_write(run);
  }
  rc = dpo_agree(t->comm, rc);
  /* journalled before its score is used: a resume never runs a finished repetition again */
  if (!rc) rc = dpo__tune_finished(t, L, s->done);
  if (!rc && t->rank == 0) {
    dpo_run_result_t res;
    double b, v = 0;
    /* The score is the COUNT of correct held-out predictions plus Laplace(1/eb): one held-out
     * row added, removed or replaced moves the count by <= 1 (sensitivity 1 under either
     * relation), and on one held-out set the count and the accuracy order the candidates alike.
     * Not the accuracy with sensitivity 1/(n_test - 1) under add-remove: n_test is private
     * there (it is what a neighbour changes), so the noise scale would depend on the data: the
     * privacy loss of two Laplace laws of different scales grows without bound in the tails
     * (not eps-DP at all) and the released noisy accuracy reveals n_test.  The count is
     * recovered exactly from the accuracy (count / n_test rounded, n_test < 2^52); n_test
     * never leaves this process. */
    if (!(rc = dpo_run_result(run, &res)) && !(rc = dpo_mech_laplace_scale(1.0, t->eb, 1, &b))) {
      v = (double)llround(res.test_metric * (double)t->n_test);
      rc = dpo_mech_sample(DPO_MECH_LAPLACE, rng, b, &v, 1);
    }
    if (!rc && v > s->score) { /* the best model stays with rank 0 until the tune ends */
      char src[700];
      snprintf(src, sizeof src, "%s/.rep/model.txt", t->dir);
      if (!(rc = slurp(src, &s->model, &s->nmodel))) s->score = v, better = 1;
    }
  }
  dpo_run_destroy(run);
  dpo_config_destroy(c);
  dpo__tune_rm_rep(t);
  rc = dpo_agree(t->comm, rc);
  MPI_Bcast(&better, 1, MPI_INT, 0, t->comm);
  if (!rc && better) s->best = s->next;
  return rc;
}

static int write_summary(const dpo__tune_t *t, const dpo__cand_t *k, double score,
                         double test_acc, const char *label, FILE *out) {
  char sel[700];
  if (t->valid) snprintf(sel, sizeof sel, "%s", t->valid);
  else snprintf(sel, sizeof sel, "a validation split of %s (a fraction %g of its rows, by row "
                "content; the candidates train on the rest)", dpo_config_get(t->cfg, "data.train"),
                t->vfrac);
  char p[600], desc[256];
  cand_desc(k, desc, sizeof desc);
  json_object *s = json_object_new_object(), *pj = json_object_new_object(),
              *cj = json_object_new_object();
  json_object_object_add(s, "command", json_object_new_string("tune"));
  json_object_object_add(cj, "algo", json_object_new_string(k->algo));
  if (k->gauss) {
    json_object_object_add(cj, "batch", json_object_new_int64(k->m));
    json_object_object_add(cj, "steps", json_object_new_int64(k->T));
    json_object_object_add(cj, "noise_multiplier", dpo_json_double(k->z));
    if (!isnan(k->lr)) json_object_object_add(cj, "lr", dpo_json_double(k->lr));
    if (!isnan(k->clip)) json_object_object_add(cj, "clip_l2", dpo_json_double(k->clip));
    if (!isnan(k->epochs)) json_object_object_add(cj, "epochs", dpo_json_double(k->epochs));
  }
  if (!isnan(k->step)) json_object_object_add(cj, k->gauss ? "eta" : "c", dpo_json_double(k->step));
  json_object_object_add(s, "chosen", cj);
  /* the noisy count; its ratio to n_test only where n_test is public (replace-one) */
  json_object_object_add(s, "heldout_correct_noisy", dpo_json_double(score));
  if (t->rel != DPO_NEIGHBOURS_ADD_REMOVE)
    json_object_object_add(s, "heldout_accuracy_noisy", dpo_json_double(score / (double)t->n_test));
  json_object_object_add(s, "candidates_in_grid", json_object_new_int(t->nc));
  json_object_object_add(s, "selected_on", json_object_new_string(sel));
  dpo__tune_json_common(t, s, pj, test_acc, label);
  json_object_object_add(pj, "per_repetition_eps", dpo_json_double(t->eb));
  json_object_object_add(pj, "repetitions", json_object_new_string("geometric (not released)"));
  json_object_object_add(pj, "mean_repetitions", dpo_json_double(t->mean));
  json_object_object_add(pj, "theorem", json_object_new_string(
      t->rdp ? "Papernot-Steinke 2022 Thm 2 (eta = 1) on the RDP curve, converted at delta"
             : "Liu-Talwar 2019 Thm 3.4: 3 eps0 for eps0-DP repetitions"));
  json_object_object_add(s, "privacy", pj);
  const char *txt = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PRETTY);
  snprintf(p, sizeof p, "%s/summary.json", t->dir);
  int rc = dpo_write_atomic(p, txt, strlen(txt));
  if (!rc) { /* config.ini: what dpopt eval / predict --run read, and the chosen settings */
    char ini[2048];
    const char *mname = "logreg", *lam = "0.0001", *ncls = NULL;
    int icpt = 0, noicpt = 0;
    dpo_config_get_str(t->cfg, "model.name", "logreg", &mname);
    dpo_config_get_str(t->cfg, "model.lambda", "0.0001", &lam);
    dpo_config_get_str(t->cfg, "model.classes", NULL, &ncls);
    dpo_config_get_bool(t->cfg, "model.intercept", 0, &icpt);
    dpo_config_get_bool(t->cfg, "model.no_intercept", 0, &noicpt);
    int n = snprintf(ini, sizeof ini, "# dpopt tune: the chosen candidate (running it again is a "
                     "new private run with its own budget)\n[model]\nname = %s\nlambda = %s\n"
                     "intercept = %d\n", mname, lam, icpt && !noicpt);
    if (ncls && !strcmp(mname, "softmax"))
      n += snprintf(ini + n, sizeof ini - (size_t)n, "classes = %s\n", ncls);
    n += snprintf(ini + n, sizeof ini - (size_t)n, "[algo]\nname = %s\n", k->algo);
    if (k->gauss)
      n += snprintf(ini + n, sizeof ini - (size_t)n, "m = %lld\nT = %lld\nz = %.17g\n",
                    (long long)k->m, (long long)k->T, k->z);
    if (k->gauss && !isnan(k->lr)) n += snprintf(ini + n, sizeof ini - (size_t)n, "lr = %.17g\n", k->lr);
    if (!isnan(k->step))
      n += snprintf(ini + n, sizeof ini - (size_t)n, "%s = %.17g\n", k->gauss ? "eta" : "c", k->step);
    if (k->gauss && !isnan(k->clip))
      n += snprintf(ini + n, sizeof ini - (size_t)n, "[privacy]\nclip = l2:%.17g\n", k->clip);
    snprintf(p, sizeof p, "%s/config.ini", t->dir);
    rc = dpo_write_atomic(p, ini, strlen(ini));
  }
  if (out && !rc) {
    /* train's plain lines (the theorem is in summary.json) */
    fprintf(out, "run directory   %s\nprivacy         %s\nspent           eps %.3f of %g", t->dir,
            label, t->total_eps, t->eps);
    if (t->delta > 0) fprintf(out, " and delta %.3g of %g", t->total_delta, t->delta);
    fprintf(out, " in one charge (every repetition and the selection)\nchosen          %s\n"
            "held-out correct predictions (noisy, released): %.1f\n", desc, score);
    if (t->rel != DPO_NEIGHBOURS_ADD_REMOVE)
      fprintf(out, "held-out accuracy (noisy, released): %.4f of %lld rows\n",
              score / (double)t->n_test, (long long)t->n_test);
    fprintf(out, "selected on: %s\n", sel);
    if (t->test)
      fprintf(out, "test accuracy   %.4f   (%s; the chosen model, not used for selection)\n",
              test_acc, t->test);
  }
  json_object_put(s);
  return rc;
}

/* Rows of a file (collective; only the count is kept).  Public under replace-one; under
 * add-remove the held-out count only turns the run's accuracy back into a count of correct
 * predictions (run_rep) and is never released. */
static int count_rows(dpo__tune_t *t, const char *path, int part, int64_t *n, int32_t *d) {
  dpo_load_opts_t lo;
  dpo_shard_t *sh = NULL;
  int rc = dpo_load_opts_from_config(t->cfg, &lo);
  lo.labels = t->multi ? DPO_LABELS_CLASS : DPO_LABELS_BINARY; /* as the runs load them */
  if (*d > 0) lo.d = *d; /* the held-out data in the training feature space, as the runs load it */
  lo.valid_frac = t->vfrac, lo.valid_part = part;
  /* every repetition is private: the width is declared, never read from the rows */
  if (!rc) rc = dpo_load_opts_private(path, &lo);
  if (!rc) rc = dpo_shard_load(t->comm, path, &lo, &sh);
  if (!rc) *n = sh->n_global, *d = sh->d;
  dpo_shard_destroy(sh);
  return rc;
}

/* The chosen model (DIR/model.txt) on --test: accuracy, for the report only.  Collective. */
static int test_accuracy(dpo__tune_t *t, int32_t d, double *acc) {
  dpo_model_t *m = NULL;
  dpo_eval_result_t r = {0};
  dpo_load_opts_t lo;
  const char *mname = "logreg";
  char mf[600];
  double lambda = 1e-4;
  *acc = NAN;
  if (!t->test) return DPO_OK;
  snprintf(mf, sizeof mf, "%s/model.txt", t->dir);
  dpo_config_get_str(t->cfg, "model.name", "logreg", &mname);
  int rc = dpo_config_get_double(t->cfg, "model.lambda", 1e-4, &lambda);
  if (!rc) rc = dpo_load_opts_from_config(t->cfg, &lo);
  if (!rc) rc = dpo_model_create(mname, lambda, &m);
  if (!rc) {
    lo.labels = dpo_model_labels(m);
    lo.d = d;
    lo.valid_part = 0;
    rc = dpo_load_opts_private(t->test, &lo);
  }
  if ((rc = dpo_agree(t->comm, rc)) == DPO_OK &&
      (rc = dpo_model_eval_file(t->comm, m, mf, t->test, &lo, NULL, &r)) == DPO_OK)
    *acc = r.metric;
  free(r.confusion);
  dpo_model_destroy(m);
  return rc;
}

/* No tune.* setting (t->plain): what dpopt train does with the same settings, train's recipe
 * at the whole (eps, delta), in the tune's directory; its own ledger, plan and budget store
 * charge it as it runs, and it stops (signals, run.stop_after, --checkpoint-every) and
 * resumes (res: --resume DIR, the run's own) as train does.  Says so first.  Collective. */
static int tune_plain(dpo__tune_t *t, const char *res, FILE *out) {
  dpo_run_t *run = NULL;
  dpo_config_t *c = NULL;
  int rc = dpo_config_copy(t->cfg, &c), solved = DPO_OK;
  if (!rc) rc = dpo_config_set(c, "run.dir", t->dir, "tune");
  if (!rc && res) rc = dpo_config_set(c, "run.resume", res, "--resume");
  if ((rc = dpo_agree(t->comm, rc))) {
    dpo_config_destroy(c);
    return rc;
  }
  rc = dpo_run_create(t->comm, c, &run);
  if (!rc) rc = dpo_run_setup(run);
  if (!rc && out && !res) /* once set up: a refused tune does not announce a run */
    fprintf(out, "tune: no grid given: train's recipe at the whole budget, one private run and "
            "no selection (on a9a no search over the grid around this recipe beat it: the "
            "geometric one leaves each candidate about a third of eps and lost, the one by "
            "parallel composition was at best level within noise); give a grid (--algos, "
            "--steps, --epochs, --lrs, --clips) to search by --split 0.1, or --mean K\n");
  if (!rc && !(rc = dpo_run_load(run))) {
    dpo_run_set_stop(run, dpo_run_signal_flag());
    solved = dpo_run_solve(run);
    if (solved == DPO_EINTR) { /* the run's own message names train's command */
      char m[600];
      snprintf(m, sizeof m, "%s", dpo_errmsg());
      solved = dpo_err(DPO_EINTR, "%s (a tune: dpopt tune --resume %s)", m, t->dir);
    }
    if (solved != DPO_OK && solved != DPO_EBUDGET) rc = solved;
    if (!rc && !(rc = dpo_run_evaluate(run)) && !(rc = dpo_run_write(run)) && out)
      dpo_run_print(run, out);
  }
  dpo_run_destroy(run);
  dpo_config_destroy(c);
  return rc ? rc : solved;
}

/* Without a budget: the other requirements of the method the tune would train (its first
 * --algos, else train's recipe's method for the delta), asked of train's own set-up, which
 * refuses a private run without eps before reading a row or writing anything, and names every
 * missing declaration in one message (in msg; 0 when there is nothing more to say).
 * Collective (every rank gets here with the same settings).  Here, not in tune_grid.c: that
 * file makes no call into the run API (the tune audit runs it). */
static int missing_beside_eps(dpo__tune_t *t, char *msg, size_t cap) {
  dpo_config_t *c = NULL;
  dpo_run_t *run = NULL;
  char first[128] = "";
  dpo_privacy_spec_t ps;
  const char *algos = dpo_config_get(t->cfg, "tune.algo");
  double delta = 0; /* a spec that does not read: train's set-up below says why */
  if (algos) sscanf(algos, " %127[^, ]", first);
  else if (!dpo_privacy_spec_from_config(t->cfg, &ps)) delta = ps.delta;
  if (!first[0]) snprintf(first, sizeof first, "%s", delta > 0 ? "dp-sgd-rdp" : "dp-nag-opt");
  const dpo_algo_t *al = dpo_algo_find(first);
  if (!al || !al->is_private || dpo_config_create(&c)) return DPO_OK;
  dpo_config_foreach(t->cfg, dpo__tune_copy_key, c); /* no tune.* key, no run.dir */
  dpo_config_set(c, "algo.name", al->name, "tune (the method it would train)");
  int rc = dpo_run_create(t->comm, c, &run);
  if (!rc) rc = dpo_run_setup(run);
  if (rc) snprintf(msg, cap, "%s", dpo_errmsg());
  dpo_run_destroy(run);
  dpo_config_destroy(c);
  return rc && strstr(msg, "requirements are missing");
}

/* The geometric search once the charge is made (or, resumed, the checkpoint read into s):
 * repetitions until the stop drawn after one says so; each pick drawn before the boundary it
 * is checkpointed at, so a resume continues with the same candidate.  Collective. */
static int geo_search(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, dpo__tune_state_t *s) {
  int rc;
  if (!t->resuming) {
    s->best = -1, s->score = -INFINITY;
    if (t->rank == 0) s->next = dpo__tune_geo_pick(t, rng);
    MPI_Bcast(&s->next, 1, MPI_INT, 0, t->comm);
  }
  while (!s->stop) {
    if ((rc = dpo__tune_pause(t, L, rng, s))) return rc;
    if ((rc = run_rep(t, L, rng, s)))
      return rc == DPO_EINTR ? dpo__tune_interrupted(t, L, rng, s) : rc;
    s->done++;
    if (t->rank == 0 && !(s->stop = dpo__tune_geo_stop(t, rng))) s->next = dpo__tune_geo_pick(t, rng);
    int v[2] = {s->stop, s->next};
    MPI_Bcast(v, 2, MPI_INT, 0, t->comm);
    s->stop = v[0], s->next = v[1];
  }
  return DPO_OK;
}

/* Rank 0, at the end of the geometric search: the chosen model released as DIR/model.txt. */
static int keep_model(const dpo__tune_t *t, const dpo__tune_state_t *s) {
  char p[600];
  snprintf(p, sizeof p, "%s/model.txt", t->dir);
  if (s->best < 0 || !s->model) return dpo_err(DPO_EIO, "%s: no repetition finished", p);
  return dpo_write_atomic(p, s->model, s->nmodel);
}

/* The data set's budget store (privacy.store), rank 0: the files registered and the tune's
 * budget left, before the data are read or anything is written (resumed: checked with the
 * run's id once the journal is reopened, dpo__budget_run_reserve). */
static int store_check(dpo__tune_t *t, const char *store, const char *jkey, int seeded,
                       dpo_budget_t **bud) {
  const char *files[3] = {NULL, NULL, NULL};
  int nf = 1, rc;
  if (!store || !*store || t->rank != 0) return DPO_OK;
  dpo_config_get_str(t->cfg, "data.train", NULL, &files[0]);
  if (t->valid) files[nf++] = t->valid;
  if (t->test) files[nf++] = t->test;
  if (seeded)
    return dpo_err(DPO_EINVAL, "--seed makes the tune NOT private, so it cannot charge the "
                   "budget store %s", store);
  if (!(rc = dpo_budget_open(store, jkey, files, nf, bud)) &&
      !(rc = dpo_budget_lock(*bud)) && !t->resuming) /* held until the reservation */
    rc = dpo_budget_reserve(*bud, NULL, t->eps, t->delta, "tune", 1);
  return rc;
}

/* The tune's directory: new (its settings written at once, for --resume) or, resumed, the
 * stopped tune's.  Rank 0's stream and the partition's key.  Collective. */
static int open_dir(dpo__tune_t *t, const dpo_config_t *ucfg, int seeded, int64_t seed,
                    dpo_rng_t **rng) {
  int rc = DPO_OK, exists = 0;
  if (t->rank == 0) {
    if (t->resuming) rc = dpo__tune_resume_dir(t->dir);
    else if ((rc = dpo_mkdir_new(t->dir, "summary.json", &exists)) && exists)
      rc = dpo_err(DPO_EINVAL, "run directory %s exists and is not empty: choose another --out", t->dir);
    if (!rc) rc = dpo_rng_create(seeded, (uint64_t)seed, 0x74756e65, rng);
    if (!rc) t->key = dpo_rng_u64(*rng); /* the partition's key (split): never released */
  }
  if ((rc = dpo_agree(t->comm, rc))) return rc;
  MPI_Bcast(&t->key, 1, MPI_UINT64_T, 0, t->comm);
  if (t->resuming) return DPO_OK; /* checked when the tune started; its settings unchanged */
  if ((rc = check_cands(t))) { /* nothing charged or written: leave nothing behind */
    if (t->rank == 0) dpo__tune_rm_tree(t->dir);
    return rc;
  }
  /* the settings as given (run.dir the directory), what --resume reads back; the geometric
   * search replaces it by the chosen candidate's at the end */
  dpo_config_t *c = NULL;
  if (t->rank == 0 && !(rc = dpo_config_copy(ucfg, &c)) &&
      !(rc = dpo_config_set(c, "run.dir", t->dir, "tune (its directory)")))
    rc = dpo__run_write_config(c, t->dir);
  dpo_config_destroy(c);
  return dpo_agree(t->comm, rc);
}

/* The one charge (new tune) or its journal reopened at the checkpoint (resumed).  Collective. */
static int charge_once(dpo__tune_t *t, dpo_ledger_t *L) {
  char what[256];
  int rc = DPO_OK;
  if (t->resuming) /* the charge was made before the first repetition: the journal holds it */
    return dpo_agree(t->comm, t->rank == 0 && dpo_ledger_count(L) != 1
                                  ? dpo_err(DPO_EFORMAT, "%s/ledger.jsonl: a tune's journal holds "
                                            "one charge", t->dir)
                                  : DPO_OK);
  snprintf(what, sizeof what, "private selection: geometric repetitions, mean %g, each %.6g; %s",
           t->mean, t->eb, t->rdp ? "Papernot-Steinke 2022 Thm 2 (RDP)" : "Liu-Talwar 2019 (3 eps0)");
  dpo_charge_t ch = {.mechanism = t->rdp ? DPO_MECH_GAUSSIAN : DPO_MECH_LAPLACE,
                     .eps = t->total_eps, .delta = t->total_delta, .sampling = DPO_SAMPLING_NONE,
                     .accounting = DPO_ACCOUNTING_PURE, .neighbours = t->rel};
  if (t->rank == 0) rc = dpo_ledger_record_plan(L, "tune", "whole", 1, what);
  if ((rc = dpo_agree(t->comm, rc))) return rc;
  return dpo_ledger_charge_all(L, &ch, NULL);
}

/* a1: dpo_tune_audit1_run's result (NULL: dpopt tune) */
static int tune_run(MPI_Comm comm, const dpo_config_t *ucfg, FILE *out, dpo_audit1_result_t *a1) {
  dpo__tune_t *t = calloc(1, sizeof *t);
  dpo_ledger_t *L = NULL;
  dpo_rng_t *rng = NULL;
  dpo_budget_t *bud = NULL; /* the data set's budget store (privacy.store), rank 0 */
  dpo_budget_head_t *head = NULL;
  dpo__tune_pstore_t *pst = NULL; /* the parties' own stores (tune_store.h) */
  dpo_config_t *merged = NULL;
  dpo__tune_state_t s;
  dpo_ledger_parts_t parts;
  char rid[65] = "";
  const char *store = NULL, *jkey = NULL, *res = dpo_config_get(ucfg, "run.resume");
  int rc, seeded = 0;
  memset(&s, 0, sizeof s);
  if (!t) return dpo_agree(comm, dpo_err(DPO_ENOMEM, "out of memory"));
  t->comm = comm;
  MPI_Comm_rank(comm, &t->rank);
  int64_t seed = 0;
  if (a1 && res) { /* its canaries are drawn by the final run: nothing to continue */
    free(t);
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "dpopt audit --one-run --tune: no --resume (a "
                                   "stopped audit's charges stay spent)"));
  }
  /* --resume DIR: the stopped tune's own settings; only run.* keys may change (as for train) */
  /* a finished tune (either search or plain) is refused first: its config.ini is the chosen
   * candidate's, not the tune's */
  rc = res ? dpo_agree(comm, t->rank == 0 ? dpo__tune_resume_dir(res) : DPO_OK) : DPO_OK;
  if (!rc && res) rc = dpo__run_resume_config(ucfg, res, &merged);
  /* a search's settings always hold a tune.* key, a plain tune's run's config.ini none: that
   * run resumes as train's does */
  if (!rc && res && !dpo__tune_any_key(merged)) {
    snprintf(t->dir, sizeof t->dir, "%s", res);
    if (!(rc = dpo_agree(comm, dpo_config_copy(ucfg, &t->cfg)))) rc = tune_plain(t, res, out);
    goto out;
  }
  if (!rc && res) ucfg = merged, t->resuming = 1;
  if (!rc) rc = dpo_config_copy(ucfg, &t->cfg); /* train's recipe goes into the copy */
  dpo_config_t *cfg = t->cfg;
  char more[1536];
  if (!rc && dpo_config_get(cfg, "data.train") && !dpo_config_get(cfg, "privacy.eps") &&
      missing_beside_eps(t, more, sizeof more))
    rc = dpo_err(DPO_EINVAL, "tune: %s", more);
  if (!rc) rc = dpo__tune_settings(t);
  if (!rc) rc = dpo__tune_audit1_settings(t, a1 != NULL);
  if (!rc && t->plain) {
    rc = tune_plain(t, res, out);
    goto out;
  }
  if (!rc) rc = dpo__tune_ckpt_settings(t);
  /* fail closed: a tune.* key dpo__tune_settings did not read is refused here; every other key is
   * checked by the repetitions' own set-up (dpo_run_setup), before the charge */
  if (!rc) {
    dpo_config_foreach(cfg, declare_run_key, (void *)cfg);
    rc = dpo_config_check_known(cfg, "dpopt tune");
  }
  if (!rc && dpo_config_get(cfg, "run.seed")) {
    seeded = 1;
    rc = dpo_config_get_int(cfg, "run.seed", 0, &seed);
  }
  if ((rc = dpo_agree(comm, rc))) goto out;
  dpo_config_get_str(cfg, "privacy.store", NULL, &store);
  dpo_config_get_str(t->cfg, "privacy.journal_key", NULL, &jkey);
  /* each party's own store, checked by the party's first rank (the repetitions are not runs
   * of their own: the tune's one charge is what every party's rows are released under) */
  if ((rc = dpo__tune_pstore_check(comm, cfg, jkey, t->eps, t->delta, seeded, &pst))) goto out;
  t->no_ckpt = pst != NULL; /* a party store settles at the end only (tune_store.h) */
  if (t->no_ckpt && (t->resuming || t->ckpt_every > 0 || t->stop_after > 0) &&
      (rc = dpo_agree(comm, dpo_err(DPO_EINVAL, "a tune whose parties keep budget stores "
                                    "(parties.budget_store) has no checkpoints: drop "
                                    "--checkpoint-every, run.stop_after and --resume"))))
    goto out;
  if ((rc = dpo_agree(comm, store_check(t, store, jkey, seeded, &bud)))) goto out;
  /* the sizes (public under replace-one), then the calibration: all before the directory */
  int32_t d = 0;
  const char *train = dpo_config_get(cfg, "data.train");
  if (t->split > 0) goto made; /* each part's run sizes itself (tune_split.c) */
  if ((rc = count_rows(t, train, t->valid ? 0 : 1, &t->n, &d)) ||
      (rc = count_rows(t, t->valid ? t->valid : train, t->valid ? 0 : 2, &t->n_test, &d)))
    goto out;
  /* under add-remove the training row count is private (sco_common.h, dpo__sco_public_n): the
   * Gaussian candidates' rate q = m/n, steps and default batch come from a declared public size,
   * passed to every repetition (privacy.public_n) so each samples at the rate the curve is for */
  if ((rc = dpo_agree(comm, tune_public_n(t)))) goto out;
  if (t->n_test < 1 && (rc = dpo_agree(comm, dpo_err(DPO_EINVAL, "tune: the held-out data are "
                                                    "empty"))))
    goto out;
  if ((rc = dpo_agree(comm, dpo__tune_calibrate(t)))) goto out;
made:
  if ((rc = open_dir(t, ucfg, seeded, seed, &rng))) goto out;
  char jp[600];
  snprintf(jp, sizeof jp, "%s/ledger.jsonl", t->dir);
  if ((rc = dpo_ledger_open_key(comm, t->eps, t->delta, jp, t->resuming, "basic", t->rel, jkey, &L)))
    goto out;
  /* resumed: the checkpoint against the journal before anything is written */
  if (t->resuming && ((t->split > 0 && (rc = dpo__tune_split_parties(t, L))) ||
                      (rc = charge_once(t, L)) || (rc = dpo__tune_resume(t, L, rng, &s))))
    goto out;
  /* the store's reservation under the journal's id, before the charge and any repetition; a
   * resumed tune's is carried over (an open one kept, a settled one reserved whole again) */
  if (bud && t->rank == 0)
    rc = dpo__budget_run_reserve(bud, store, jkey, L, jp, t->eps, t->delta, "tune", t->resuming,
                                 rid, &head);
  if ((rc = dpo_agree(comm, rc)) || (rc = dpo__tune_pstore_reserve(pst, L))) goto out;
  const char *label = seeded ? "NOT PRIVATE: seeded run (--seed), reproducible for testing"
                             : "PRIVATE: one charge covers every repetition and the selection";
  if (t->split > 0) {
    rc = dpo__tune_split_run(t, L, rng, &s, label, out);
    goto out;
  }
  /* the one charge: before any candidate runs or anything is released */
  if (!t->resuming && (rc = charge_once(t, L))) goto out;
  if ((rc = geo_search(t, L, rng, &s))) goto out;
  double tacc = NAN;
  if ((rc = dpo_agree(comm, t->rank == 0 ? keep_model(t, &s) : DPO_OK)) ||
      (rc = test_accuracy(t, d, &tacc)))
    goto out;
  if (t->rank == 0) rc = write_summary(t, &t->c[s.best], s.score, tacc, label, out);
  if (!rc && t->rank == 0) rc = dpo__tune_ckpt_remove(t);
  rc = dpo_agree(comm, rc);
out:
  /* the reservation becomes the tune's one charge (a failed settle leaves it spent whole);
   * a stopped tune's too: its resume reserves it whole again under the same id */
  if (rid[0] && (dpo_ledger_parts(L, &parts) || dpo_budget_settle(bud, rid, &parts)))
    fprintf(stderr, "dpopt: warning: budget store %s: the tune's reservation stays spent "
            "whole: %s\n", store, dpo_errmsg());
  dpo_budget_close(bud);
  dpo__tune_pstore_finish(pst, L); /* collective: every rank gets here */
  dpo_ledger_close(L);
  dpo_budget_head_close(head);
  dpo_rng_destroy(rng);
  dpo_config_destroy(t->cfg);
  dpo_config_destroy(merged);
  free(s.model);
  if (a1 && !rc) *a1 = t->a1;
  free(t);
  return rc;
}

int dpo_tune_run_config(MPI_Comm comm, const dpo_config_t *cfg, FILE *out) {
  return tune_run(comm, cfg, out, NULL);
}

int dpo_tune_audit1_run(MPI_Comm comm, const dpo_config_t *cfg, FILE *out,
                        dpo_audit1_result_t *res) {
  return tune_run(comm, cfg, out, res);
}
