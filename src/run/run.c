/* The run API (dpopt/run.h): create, setup, load, accessors, destroy.  Every check that can
 * refuse a run comes before the run directory is claimed and before the data are loaded, so a
 * refused run leaves nothing behind. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "privacy/guard.h" /* dpo_party_store_journal: whose store a resume can settle */
#include "run/run_agglo.h"
#include "run/run_ckpt.h"
#include "run/run_impl.h"
#include "run/run_parties.h"
#include "run/run_priv.h"

int dpo__run_failed(dpo_run_t *r, int rc) {
  if (rc == DPO_OK) return rc;
  /* a typo first, even when the run fails for another reason */
  dpo_config_warn_typos(r->cfg, r->rank == 0 ? stderr : NULL);
  if (r->fail_rc == DPO_OK) {
    r->fail_rc = rc;
    snprintf(r->fail_stage, sizeof r->fail_stage, "%s", r->stage);
    snprintf(r->fail_msg, sizeof r->fail_msg, "%s", dpo_errmsg());
  }
  return rc;
}

int dpo__run_kind_stopped(dpo_run_t *r, int rc) {
  int has = 0;
  if (r->rank == 0) has = access(r->ckpt_path, R_OK) == 0;
  MPI_Bcast(&has, 1, MPI_INT, 0, r->comm);
  if (!has) return dpo__run_failed(r, rc);
  if (r->trace) fflush(r->trace);
  r->run_rc = rc;
  r->state = DPO__RUN_SOLVED;
  return rc;
}

int dpo__run_read_progress(dpo_run_t *r) {
  if (!dpo_config_get(r->cfg, "run.progress")) return DPO_OK; /* unset: automatic (a terminal) */
  int rc = dpo_config_get_bool(r->cfg, "run.progress", 0, &r->progress);
  r->progress = r->progress ? 1 : -1;
  return rc;
}

int dpo__run_setup_claim(dpo_run_t *r, const char *cmd, const char *stage) {
  int rc;
  dpo_config_declare(r->cfg, "run.dir");
  if ((rc = dpo_agree(r->comm, dpo_config_check_known(r->cfg, cmd))))
    return dpo__run_failed(r, rc);
  r->stage = stage;
  if ((rc = dpo__run_claim(r))) return dpo__run_failed(r, rc);
  r->state = DPO__RUN_SETUP;
  return DPO_OK;
}

int dpo__run_expect(const dpo_run_t *r, int want, const char *fn) {
  static const char *name[] = {"dpo_run_create", "dpo_run_setup", "dpo_run_load",
                               "dpo_run_solve", "dpo_run_write"};
  if (!r) return dpo_err(DPO_EINVAL, "%s: NULL run", fn);
  if (r->fail_rc != DPO_OK)
    return dpo_err(DPO_EINVAL, "%s: the run failed earlier (%s)", fn, r->fail_msg);
  if (r->state != want)
    return dpo_err(DPO_EINVAL, "%s: called out of order (the run's last step was %s)", fn,
                   name[r->state]);
  return DPO_OK;
}

struct dpo__algo_keys_arg {
  const dpo_algo_t *algo;
  const dpo_config_t *cfg;
  int rc;
};

static void dpo__algo_key_check(const char *key, const char *v, const char *origin, void *arg) {
  struct dpo__algo_keys_arg *a = arg;
  (void)v;
  if (a->rc || strncmp(key, "algo.", 5) || dpo_config_is_used(a->cfg, key) ||
      !strcmp(key, "algo.m") || !strcmp(key, "algo.release"))
    return;
  const dpo_algo_param_t *tabs[2] = {a->algo->params, a->algo->shared};
  for (int i = 0; i < 2; i++)
    for (const dpo_algo_param_t *q = tabs[i]; q && q->key; q++)
      if (!strcmp(q->key, key + 5)) return;
  a->rc = dpo_err(DPO_EINVAL, "%s: %s is not read by algorithm %s (its keys: dpopt train "
                  "--help; nothing was run or written)", origin, key, a->algo->name);
}

/* A request for privacy in any form (a privacy.* or parties.* key) with an algorithm that adds
 * no noise is refused: it must never end as a non-private run.  Not collective. */
static int dpo__run_privacy_asked(const dpo_config_t *cfg, const dpo_algo_t *algo) {
  if (algo->is_private) return DPO_OK;
  static const char *const ask[] = {"privacy.eps", "privacy.delta", "privacy.trust",
                                    "privacy.clip", "privacy.neighbours", "privacy.accountant",
                                    "parties.n", "parties.data", "parties.count", NULL};
  for (int i = 0; ask[i]; i++)
    if (dpo_config_get(cfg, ask[i]))
      return dpo_err(DPO_EINVAL, "%s: %s asks for privacy but algorithm '%s' adds no noise: "
                     "choose a private algorithm (dp-*, or no --algo with --eps) or drop %s",
                     dpo_config_origin(cfg, ask[i]), ask[i], algo->name, ask[i]);
  return DPO_OK;
}

/* Checkpoints asked for in a new multi-party run: a resume settles each party's budget store
 * against the party's own journal (dpo_party_store_journal; never on the coordinator's word
 * alone), which only the parties of a secagg, local or shares run keep (their guard's), so a
 * central run that could stop but never resume is refused before anything is written.  Not
 * collective. */
static int dpo__run_ckpt_stores(const dpo_parties_t *pt) {
  char j[1100];
  for (int k = 0; pt && pt->store && k < pt->count; k++)
    if (pt->store[k] && pt->store[k][0] && dpo_party_store_journal(pt, k, j, sizeof j))
      return dpo_err(DPO_EINVAL, "checkpoints (--checkpoint-every, run.stop_after) of a run "
                     "whose party %d keeps a budget store: a resume settles the store against "
                     "the party's own journal, never on the coordinator's word alone, and "
                     "parties keep their own journals only under privacy.trust = secagg, local "
                     "or shares (with party.K.out or parties.out); use one of those, or drop "
                     "the checkpoints or the party's budget store", pt->name ? pt->name[k] : k);
  return DPO_OK;
}

/* Every setting, read and checked (stage "train"): nothing touched yet.  Not collective. */
static int dpo__run_settings(dpo_run_t *r) {
  const dpo_config_t *cfg = r->cfg;
  const char *action, *x0s;
  int rc;
  dpo_config_get_str(cfg, "data.train", NULL, &r->train_path);
  dpo_config_get_str(cfg, "data.test", NULL, &r->test_path);
  dpo_config_get_str(cfg, "model.name", "logreg", &r->model_name);
  const char *algo_name;
  dpo_config_get_str(cfg, "algo.name", "gd", &algo_name);
  dpo_config_get_str(cfg, "run.fstar", "none", &r->fstar_s);
  dpo_config_get_str(cfg, "data.row_bound_action", NULL, &action);
  dpo_config_get_str(cfg, "algo.x0", "0", &x0s);
  { /* algo.x0 = a number, or a model file: warm start from its coefficients */
    char *end;
    r->x0v = strtod(x0s, &end);
    if (end == x0s || *end) r->x0_file = x0s, r->x0v = 0.0;
    else if (!isfinite(r->x0v))
      return dpo_err(DPO_EINVAL, "%s: algo.x0 = '%s': expected a finite number or a model file",
                     dpo_config_origin(cfg, "algo.x0"), x0s);
  }
  if ((rc = dpo__run_read_progress(r))) return rc;
  if ((rc = dpo_config_get_double(cfg, "model.lambda", 1e-4, &r->lambda)) ||
      (rc = dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &r->b1)) ||
      (rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &r->b2)) ||
      (rc = dpo_config_get_int(cfg, "algo.iters", 100, &r->iters)) ||
      (rc = dpo_config_get_int(cfg, "run.trace_every", 1, &r->trace_every)) ||
      (rc = dpo_config_get_bool(cfg, "run.no_trace_loss", 0, &r->no_trace_loss)) ||
      (rc = dpo_config_get_bool(cfg, "run.no_train_eval", 0, &r->no_train_eval)) ||
      (rc = dpo_config_get_bool(cfg, "run.verbose", 0, &r->verbose)) ||
      (rc = dpo_config_get_bool(cfg, "data.report_rows", 0, &r->report_rows)))
    return rc;
  if (!r->train_path) dpo_config_get_str(cfg, "parties.data", NULL, &r->train_path);
  if (!r->train_path)
    return dpo_err(DPO_EINVAL, "no training data: give --data FILE or data.train in --config");
  const dpo_algo_t *algo = r->algo = dpo_algo_find(algo_name);
  if (algo && !r->dir_name) r->dir_name = algo->name; /* a kind may have named it */
  if (!algo) {
    const dpo_algo_t *const *al = dpo_algo_list();
    const char *names[64];
    int n = 0;
    for (; al[n] && n < 64; n++) names[n] = al[n]->name;
    const char *sug = dpo_config_nearest(algo_name, names, n);
    char hint[96] = "";
    if (sug) snprintf(hint, sizeof hint, ": did you mean '%s'?", sug);
    return dpo_err(DPO_EINVAL, "%s: unknown algorithm '%s'%s (see dpopt train --help)",
                   dpo_config_origin(cfg, "algo.name") ? dpo_config_origin(cfg, "algo.name")
                                                       : "--algo",
                   algo_name, hint);
  }
  double gtol = 0; /* the driver refuses it too, but only after the data are loaded */
  if ((rc = dpo_config_get_double(cfg, "algo.gtol", 0.0, &gtol))) return rc;
  if (algo->is_private && gtol > 0)
    return dpo_err(DPO_EINVAL, "%s: algo.gtol = %g stops %s on the gradient of the private "
                   "data, a decision no charge covers: drop --gtol (private algorithms run their "
                   "planned steps)", dpo_config_origin(cfg, "algo.gtol"), gtol, algo->name);
  if ((rc = dpo__run_privacy_asked(cfg, algo))) return rc;
  /* a private run clips rows over a declared bound (a public map of each row); refusing the
   * file would release, uncharged, whether some row exceeds the bound */
  if (!action) action = algo->is_private ? "clip" : "reject";
  r->clip_rows = !strcasecmp(action, "clip");
  if (!r->clip_rows && strcasecmp(action, "reject"))
    return dpo_err(DPO_EINVAL, "%s: data.row_bound_action = '%s': expected reject or clip",
                   dpo_config_origin(cfg, "data.row_bound_action"), action);
  if (algo->is_private && !r->clip_rows)
    return dpo_err(DPO_EINVAL, "%s: data.row_bound_action = reject: a private run cannot stop on "
                   "a row over the declared bound (whether one exists is a fact about the data "
                   "that no charge covers); private runs clip such rows (the default)",
                   dpo_config_origin(cfg, "data.row_bound_action"));
  if (algo->is_private && r->report_rows)
    return dpo_err(DPO_EINVAL, "%s: data.report_rows prints which rows were over a bound, a fact "
                   "about the private data that no charge covers: drop --report-rows (a private "
                   "run says nothing about single rows)", dpo_config_origin(cfg, "data.report_rows"));
  if (r->iters < 0 || r->trace_every < 0 || r->lambda < 0 || !(isnan(r->b1) || r->b1 > 0) ||
      !(isnan(r->b2) || r->b2 > 0))
    return dpo_err(DPO_EINVAL, "iters, trace_every, lambda must be >= 0 and row bounds > 0");
  if ((rc = dpo_model_create(r->model_name, r->lambda, &r->model))) return rc;
  { /* model.classes: the number of classes K of softmax, public (labels 0..K-1) */
    int64_t K = 0;
    if ((rc = dpo_config_get_int(cfg, "model.classes", 0, &K))) return rc;
    if (dpo_model_multiclass(r->model) && K == 0)
      return dpo_err(DPO_EINVAL, "model %s needs the number of classes: --classes K "
                     "(model.classes; labels are 0..K-1, K is public)", r->model_name);
    if (K < 0 || K > 65536 || (rc = dpo_model_set_classes(r->model, (int32_t)K)))
      return rc ? rc : dpo_err(DPO_EINVAL, "model.classes = %lld: expected 2..65536", (long long)K);
  }
  int icpt = 0, no_icpt = 0;
  if ((rc = dpo_config_get_bool(cfg, "model.intercept", 0, &icpt)) ||
      (rc = dpo_config_get_bool(cfg, "model.no_intercept", 0, &no_icpt)) ||
      (rc = dpo_model_set_intercept(r->model, icpt && !no_icpt)))
    return rc;
  r->fstar_newton = !strcasecmp(r->fstar_s, "newton");
  if (!r->fstar_newton && strcasecmp(r->fstar_s, "none")) {
    char *end;
    r->fstar = strtod(r->fstar_s, &end);
    if (end == r->fstar_s || *end)
      return dpo_err(DPO_EINVAL, "%s: run.fstar = '%s': expected newton, none or a number",
                     dpo_config_origin(cfg, "run.fstar"), r->fstar_s);
  }
  if ((rc = dpo_load_opts_from_config(cfg, &r->lo))) return rc;
  r->lo.labels = dpo_model_labels(r->model);
  if (r->lo.valid_part) { /* the validation rows of data.train take the test file's place */
    if (r->test_path)
      return dpo_err(DPO_EINVAL, "%s: data.valid_fraction scores on rows of data.train: drop "
                     "data.test (--test)", dpo_config_origin(cfg, "data.valid_fraction"));
    r->test_path = r->train_path;
  }
  return dpo__agglo_settings(r);
}

/* Claim the run directory, write the trace header and config.ini, open the journal.
 * Collective. */
static int dpo__run_open(dpo_run_t *r) {
  int rc;
  r->stage = DPO__TRAIN_STAGE(r, " (run directory)");
  /* a journal that could not be keyed is found before anything is written */
  if ((rc = dpo_agree(r->comm, r->rank == 0 ? dpo__run_priv_key_check(r->priv, r->resuming)
                                            : DPO_OK)))
    return rc;
  if ((rc = dpo__run_claim(r))) return rc;
  if ((rc = dpo_agree(r->comm, r->rank == 0 && !r->resuming
                                   ? dpo__run_priv_trace_note(r->priv, r->trace) : DPO_OK)))
    return rc;
  if ((rc = dpo__run_priv_open_ledger(r->priv, r->dir, r->resuming))) return rc;
  /* resuming: the directory becomes this run's (FAILED may be written there) only when the
   * checkpoint and the journal agree (run_solve.c, dpo__resume): a refused resume writes
   * nothing */
  r->dir_ready = !r->resuming;
  return DPO_OK;
}

/* Collective: what the algorithm's analysis and release plan refuse without data. */
static int dpo__run_check(dpo_run_t *r) {
  r->stage = DPO__TRAIN_STAGE(r, "");
  return dpo_agree(r->comm, dpo_algo_check(r->algo, r->cfg, &r->spec, r->model));
}

int dpo__train_setup(dpo_run_t *r) {
  int rc = dpo_agree(r->comm, dpo__run_settings(r));
  /* the privacy specification: below the run nothing reads a privacy.* key */
  if (!rc) rc = dpo_agree(r->comm, dpo_privacy_spec_from_config(r->cfg, &r->spec));
  /* checkpoints asked for: a usage error before anything is read or charged when the
   * algorithm's plan cannot have them under this trust (its flags, never its name) */
  if (!rc && (r->ckpt_every > 0 || r->stop_after > 0 || r->resuming))
    rc = dpo_agree(r->comm, dpo_algo_ckpt_check(r->algo, &r->spec));
  if (!rc)
    rc = dpo__run_parties_setup(r->comm, r->cfg, &r->spec, r->algo->is_private,
                                r->resuming, &r->parties);
  if (!rc) rc = dpo_agree(r->comm, dpo__agglo_check(r));
  if (!rc && !r->resuming && (r->ckpt_every > 0 || r->stop_after > 0))
    rc = dpo_agree(r->comm, dpo__run_ckpt_stores(dpo__run_parties_table(r->parties)));
  if (!rc && r->resuming)
    rc = dpo_agree(r->comm, r->rank == 0 ? dpo__run_resume_ranks(
                                               r->cfg, dpo__run_parties_table(r->parties), r->size)
                                         : DPO_OK);
  const int parsed = !rc; /* the settings were read: the schema can be checked whatever follows */
  /* privacy set-up: budget, clipping, noise stream (needs no data) */
  if (!rc) {
    r->stage = DPO__TRAIN_STAGE(r, " (privacy set-up)");
    rc = dpo__run_priv_setup(r->comm, r->cfg, &r->spec, r->algo, NULL, r->model, &r->priv);
  }
  /* the release plan's refusals that need no n: before any file or datum (same stage as when
   * the algorithm's create() refuses).  Resuming: after the journal, whose own refusals (a
   * relation or budget that differs from the run's) say more about an edited config.ini.
   * One message names every missing declaration (the budget, a row bound, the width) instead
   * of one failed run each: the plan's refusals need no budget, so they are asked for after a
   * missing --eps too, and the public schema after either */
  char miss[3][1024];
  int nmiss = 0;
  if (rc && parsed && r->algo->is_private && !r->resuming && isnan(r->spec.eps)) {
    snprintf(miss[nmiss++], sizeof miss[0], "%s", dpo_errmsg());
    if (dpo__run_check(r))
      snprintf(miss[nmiss++], sizeof miss[0], "%s", dpo_errmsg());
  } else if (!rc && !r->resuming) {
    rc = dpo__run_check(r);
  }
  if (parsed && r->algo->is_private) {
    if (rc && !nmiss) snprintf(miss[nmiss++], sizeof miss[0], "%s", dpo_errmsg());
    int rs = dpo_agree(r->comm, dpo__run_parties_schema(r->parties, r->train_path, &r->lo));
    if (rs) {
      snprintf(miss[nmiss++], sizeof miss[0], "%s", dpo_errmsg());
      if (!rc) rc = rs;
    }
    if (nmiss == 1)
      dpo_err(rc, "%s", miss[0]); /* the one refusal's message, as it was */
    else if (nmiss == 2)
      rc = dpo_err(rc, "two requirements are missing: (1) %s; (2) %s", miss[0], miss[1]);
    else if (nmiss == 3)
      rc = dpo_err(rc, "three requirements are missing: (1) %s; (2) %s; (3) %s", miss[0],
                   miss[1], miss[2]);
  }
  if (rc) return dpo__run_failed(r, rc);
  /* the algorithm's own keys are read only in create(), after the data: known from its tables */
  const dpo_algo_param_t *tabs[2] = {r->algo->params, r->algo->shared};
  for (int i = 0; i < 2; i++)
    for (const dpo_algo_param_t *q = tabs[i]; q && q->key; q++) {
      char k[96];
      snprintf(k, sizeof k, "algo.%s", q->key);
      dpo_config_declare(r->cfg, k);
    }
  /* keys read later than here, outside the algorithm's tables (the solver, the DP layer) */
  static const char *const later[] = {"privacy.calibrate", "privacy.count_eps",
                                      "privacy.public_n", "run.dir", NULL};
  for (int i = 0; later[i]; i++) dpo_config_declare(r->cfg, later[i]);
  /* an algo.* key the chosen algorithm does not read (a flag of dpopt train, say --lr with
   * gd) is refused too: its tables list every key it reads (algo.m and algo.release are read
   * by the DP layer outside them) */
  struct dpo__algo_keys_arg ak = {r->algo, r->cfg, DPO_OK};
  dpo_config_foreach(r->cfg, dpo__algo_key_check, &ak);
  if ((rc = dpo_agree(r->comm, ak.rc))) return dpo__run_failed(r, rc);
  /* every key is known by now: one nothing reads is refused before anything is written */
  if ((rc = dpo_agree(r->comm, dpo_config_check_known(r->cfg, "dpopt train"))))
    return dpo__run_failed(r, rc);
  /* the data set's budget store: the files registered and the budget left, before anything
   * is claimed or loaded */
  r->stage = DPO__TRAIN_STAGE(r, " (budget store)");
  if ((rc = dpo__run_priv_store_check(r->priv, r->train_path, r->test_path, r->resuming)) ||
      (rc = dpo__run_priv_party_check(r->priv, dpo__run_parties_table(r->parties),
                                      r->resuming)))
    return dpo__run_failed(r, rc);
  if ((rc = dpo__run_open(r)) || (r->resuming && (rc = dpo__run_check(r))))
    return dpo__run_failed(r, rc);
  r->state = DPO__RUN_SETUP;
  return DPO_OK;
}

/* Declared row bounds are public facts about the data domain (privacy rule 1).  A private run
 * scales rows over a bound onto it, silently: which row, its norm, how many rows, or a refusal
 * would be facts about the private data that no charge covers (dpo__run_settings refuses
 * reject and data.report_rows for private runs).  A non-private run rejects the first such row
 * (file and row named) or scales them and says how many. */
static int dpo__enforce_bound(MPI_Comm comm, dpo_shard_t *s, int l1, double bound, int clip,
                              int is_private) {
  int rc = DPO_OK;
  double *nrm = malloc((size_t)(s->n ? s->n : 1) * sizeof *nrm);
  int64_t nclip = 0, nclip_all = 0;
  if (!nrm) rc = dpo_err(DPO_ENOMEM, "out of memory");
  else dpo_shard_row_norms(s, l1 ? nrm : NULL, l1 ? NULL : nrm);
  for (int64_t i = 0; rc == DPO_OK && i < s->n; i++) {
    if (nrm[i] <= bound) continue;
    if (!clip) {
      rc = dpo_err(DPO_EFORMAT, "%s: row %lld has L%d norm %.6g over the declared bound %.6g "
                   "(use --row-bound-action clip to scale such rows)", s->source,
                   (long long)(s->row0 + i + 1), l1 ? 1 : 2, nrm[i], bound);
      break;
    }
    dpo_shard_scale_row(s, i, bound / nrm[i]); /* the features; the loader's norms follow */
    nclip++;
  }
  free(nrm);
  if ((rc = dpo_agree(comm, rc)) || is_private) return rc;
  MPI_Allreduce(&nclip, &nclip_all, 1, MPI_INT64_T, MPI_SUM, comm);
  if (dpo__rank(comm) == 0 && nclip_all > 0)
    dpo_msg("%lld rows scaled onto the declared L%d bound %g", (long long)nclip_all, l1 ? 1 : 2,
            bound);
  return DPO_OK;
}

int dpo__train_load(dpo_run_t *r) {
  int rc;
  r->stage = DPO__TRAIN_STAGE(r, " (loading data)");
  int priv = r->algo->is_private;
  double t0 = MPI_Wtime(), w0 = dpo_wtime();
  r->t_setup = w0 - r->t_start;
  /* the bias column read with the rows: the shard allocated once at its final size (a widening
   * afterwards held it twice or moved it all); the audit's canary columns go before the bias,
   * so with them it is appended afterwards (dpo_model_prepare_shard) */
  dpo_load_opts_t tlo = r->lo;
  tlo.intercept = dpo_model_intercept(r->model) && !r->rows_hook;
  /* a dense binary file read in place where the shard keeps its layout; not for private runs,
   * whose row checks must hold for the whole run (the file could change under a mapping),
   * nor with the audit's canaries, which widen the rows (dpo_load_opts_t.map) */
  tlo.map = !priv && !r->rows_hook;
  /* the declared bounds' norms taken in the loader's pass over the rows (dpo__enforce_bound) */
  tlo.row_norms = !isnan(r->b1) || !isnan(r->b2);
  if ((rc = dpo__run_parties_load(r->parties, r->comm, r->train_path, &tlo, &r->train)))
    return dpo__run_failed(r, rc);
  /* the loader's own time, beside the read loop in jobs/bench/loadmem (the load agreed): the
   * slowest rank's, but rank 0's own where the coordinator is not trusted with the parties'
   * rows (a party's load time follows its private row count); the row checks' phase is timed
   * from rank 0's own load (the slowest rank's may exceed rank 0's whole window) */
  const double own_load = MPI_Wtime() - t0;
  r->t_load = own_load;
  if (!dpo__run_parties_hide_train(r->parties))
    MPI_Allreduce(MPI_IN_PLACE, &r->t_load, 1, MPI_DOUBLE, MPI_MAX, r->comm);
  if (!isnan(r->b1) && (rc = dpo__enforce_bound(r->comm, r->train, 1, r->b1, r->clip_rows, priv)))
    return dpo__run_failed(r, rc);
  if (!isnan(r->b2) && (rc = dpo__enforce_bound(r->comm, r->train, 0, r->b2, r->clip_rows, priv)))
    return dpo__run_failed(r, rc);
  dpo_shard_drop_norms(r->train); /* read by the bounds only: nothing keeps them current after */
  if (r->test_path) {
    dpo_load_opts_t lo = tlo;
    lo.row_norms = 0;
    /* the test set must live in the training feature space */
    lo.d = r->train->d - (r->train->intercept ? 1 : 0);
    if (lo.valid_part) lo.valid_part = 2;
    lo.part_lo = r->test_part_lo, lo.part_hi = r->test_part_hi; /* dpo_run_set_rows */
    if ((rc = dpo_shard_load(r->comm, r->test_path, &lo, &r->test))) return dpo__run_failed(r, rc);
  }
  if (r->rows_hook && (rc = dpo_agree(r->comm, r->rows_hook(r->rows_arg, r))))
    return dpo__run_failed(r, rc);
  /* private: a class label above the declared K - 1 is moved onto it (the loader already
   * moved negative and fractional ones), like every other row outside the schema */
  const int32_t K = dpo_model_classes(r->model);
  for (dpo_shard_t *sh = r->lo.project && K > 0 ? r->train : NULL; sh;
       sh = sh == r->train ? r->test : NULL)
    for (int64_t i = 0; i < sh->n; i++)
      if (sh->y[i] > K - 1) sh->y[i] = K - 1;
  /* the bias column, unless loaded with the rows (the bounds above left it out) */
  if ((rc = dpo_agree(r->comm, dpo_model_prepare_shard(r->model, r->train))) ||
      (r->test && (rc = dpo_agree(r->comm, dpo_model_prepare_shard(r->model, r->test)))))
    return dpo__run_failed(r, rc);
  r->t_checks = dpo_wtime() - w0 - own_load;
  if (r->train->n_public) /* secagg, add-remove, per-party data: counts stay in the parties */
    dpo_msg("loaded %s: public size %lld (privacy.public_n; the parties' row counts are "
            "private) x %d features on %d rank%s", r->train_path, (long long)r->train->n_global,
            r->train->d, r->size, r->size > 1 ? "s" : "");
  else if (dpo__run_n_private(r)) /* rule 2: the count is the data owner's only */
    dpo_msg("loaded %s: %lld rows [non-private diagnostic: under add-remove neighbours the row "
            "count is private and released nowhere] x %d features on %d rank%s", r->train_path,
            (long long)r->train->n_global, r->train->d, r->size, r->size > 1 ? "s" : "");
  else
    dpo_msg("loaded %s: %lld rows x %d features on %d rank%s", r->train_path,
            (long long)r->train->n_global, r->train->d, r->size, r->size > 1 ? "s" : "");
  r->state = DPO__RUN_LOADED;
  return DPO_OK;
}

void dpo_run_destroy(dpo_run_t *r) {
  if (!r) return;
  if (r->ops && r->ops->destroy) r->ops->destroy(r);
  if (r->fail_rc != DPO_OK && r->dir_ready && r->rank == 0) dpo__run_mark_failed(r);
  if (r->trace) fclose(r->trace);
  free(r->summary);
  free(r->confusion);
  dpo_solver_destroy(r->solver);
  dpo_oracle_destroy(r->oracle);
  dpo__run_priv_destroy(r->priv);
  dpo__run_parties_destroy(r->parties);
  dpo_shard_destroy(r->test);
  dpo_shard_destroy(r->train);
  dpo_model_destroy(r->model);
  dpo_config_destroy(r->merged);
  dpo__agglo_destroy(r);
  if (r->comm != MPI_COMM_NULL) MPI_Comm_free(&r->comm);
  free(r);
}

void dpo_run_set_stop(dpo_run_t *r, volatile sig_atomic_t *flag) {
  if (r) r->stop = flag;
}

const dpo_config_t *dpo_run_config(const dpo_run_t *r) { return r ? r->cfg : NULL; }
const char *dpo_run_stage(const dpo_run_t *r) { return r ? r->stage : "train"; }
const char *dpo_run_dir(const dpo_run_t *r) { return r ? r->dir : ""; }
const char *dpo_run_label(const dpo_run_t *r) {
  return r && r->priv ? dpo__run_priv_label(r->priv) : r && r->klabel ? r->klabel : "";
}
int dpo_run_is_private(const dpo_run_t *r) {
  return r && r->priv ? dpo__run_priv_guaranteed(r->priv) : r ? r->kprivate : 0;
}
const dpo_model_t *dpo_run_model(const dpo_run_t *r) { return r ? r->model : NULL; }

const double *dpo_run_x(const dpo_run_t *r, int32_t *d) {
  if (!r || r->rank != 0 || r->state < DPO__RUN_SOLVED) return NULL;
  if (!r->solver) { /* a kind without a solver (admm) */
    if (d) *d = r->kd;
    return r->kx;
  }
  if (d) *d = dpo_solver_dim(r->solver); /* K x (features + intercept) for softmax */
  return dpo_solver_x(r->solver);
}

int dpo_run_result(const dpo_run_t *r, dpo_run_result_t *res) {
  if (!r || !res || r->state < DPO__RUN_SOLVED)
    return dpo_err(DPO_EINVAL, "dpo_run_result: the run has not been solved");
  memset(res, 0, sizeof *res);
  res->metric = r->model ? dpo_model_metric(r->model) : r->kmetric ? r->kmetric : "accuracy";
  res->train_loss = r->tr_loss;
  res->train_metric = r->tr_metric;
  res->test_loss = r->te_loss;
  res->test_metric = r->te_metric;
  res->iters = r->solver ? dpo_solver_iters(r->solver) : r->kiters;
  res->budget_exhausted = r->run_rc == DPO_EBUDGET;
  res->not_converged = r->knoconv;
  return DPO_OK;
}

const char *dpo_run_summary_json(const dpo_run_t *r) { return r ? r->summary : NULL; }
