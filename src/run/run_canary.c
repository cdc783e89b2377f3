/* The one-run audit (dpopt audit --one-run): Steinke, Nasr and Jagielski, "Privacy auditing
 * with one (1) training run" (NeurIPS 2023), on the data holder's own run.
 *
 * The run is the real one (its data, algorithm, budget and schedule) with m canary rows added,
 * each included independently with probability 1/2 (the secret bits S).  Canary i is a row with one
 * nonzero, in a feature column of its own beyond the declared schema (no real row and no other
 * canary touches it), at the largest value the declared row bounds allow, label +1.  Excluded, it is absent (add-remove neighbours) or the
 * same row with label -1 (replace-one: the two are neighbours, and their logistic gradients on
 * the canary's columns differ by exactly a = sigma(z) + sigma(-z) per column at every point,
 * half the replace-one sensitivity 2 B unless clipping saturates both).  The auditor sees
 * every release (the white box of the threat model: each noised gradient the coordinator
 * broadcasts) and scores each canary by the log-likelihood ratio of its own columns summed over
 * the releases; it guesses the r/2 highest scores included and the r/2 lowest excluded, for r
 * in a fixed grid (a Bonferroni split of beta over the grid), and converts the number of right
 * guesses into a lower bound on eps (dpo_audit1_eps_lb).  Any score gives a valid bound; the
 * likelihood ratio only gives it power.  The methods whose steps are not releases (pnsgd, the
 * phased methods: hidden state, only the final model leaves the run) are scored by the final
 * model alone: canary i's weight on its own column, which its gradient steps move up when it
 * is included (label +1) and down or not at all when it is excluded. */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/audit.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run_impl.h"
#include "run_priv.h"
#include "run_canary.h"

#define DPO__A1_GRID DPO_AUDIT1_GRID

static double dpo__sigm(double z) { return z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z)); }

/* Widen a shard to dtot columns (dense rows are moved to the wider stride). */
static int dpo__a1_widen(dpo_shard_t *s, int32_t dtot) {
  if (!s->sparse && s->n > 0) {
    double *X = realloc(s->X, (size_t)s->n * (size_t)dtot * sizeof *X);
    if (!X) return dpo_err(DPO_ENOMEM, "one-run audit: out of memory");
    for (int64_t i = s->n - 1; i >= 0; i--) {
      memmove(X + i * dtot, X + i * s->d, (size_t)s->d * sizeof *X);
      memset(X + i * dtot + s->d, 0, (size_t)(dtot - s->d) * sizeof *X);
    }
    s->X = X;
  }
  s->d = dtot;
  return DPO_OK;
}

/* The last rank appends the canaries (included ones; under replace-one the excluded ones too,
 * labelled -1), so no other rank's global row ids move. */
static int dpo__a1_append(dpo__a1_t *c, dpo_shard_t *s, int last) {
  int64_t add = 0;
  for (int64_t i = 0; i < c->m; i++) add += c->in[i] || !c->add_remove;
  s->n_global += add;
  if (!last || add == 0) return DPO_OK;
  const int64_t n = s->n, n1 = n + add;
  double *y = realloc(s->y, (size_t)n1 * sizeof *y);
  if (!y) return dpo_err(DPO_ENOMEM, "one-run audit: out of memory");
  s->y = y;
  if (s->sparse) {
    const int64_t nnz = n > 0 ? s->rowptr[n] : 0, nnz1 = nnz + add;
    int64_t *rp = realloc(s->rowptr, (size_t)(n1 + 1) * sizeof *rp);
    if (rp) s->rowptr = rp;
    int32_t *ci = rp ? realloc(s->colind, (size_t)nnz1 * sizeof *ci) : NULL;
    if (ci) s->colind = ci;
    double *v = ci ? realloc(s->val, (size_t)nnz1 * sizeof *v) : NULL;
    if (!v) return dpo_err(DPO_ENOMEM, "one-run audit: out of memory");
    s->val = v;
    if (n == 0) s->rowptr[0] = 0;
    int64_t row = n, p = nnz;
    for (int64_t i = 0; i < c->m; i++) {
      if (!c->in[i] && c->add_remove) continue;
      s->colind[p] = c->d0 + (int32_t)i;
      s->val[p++] = c->a;
      s->y[row++] = c->in[i] ? 1 : -1;
      s->rowptr[row] = p;
    }
  } else {
    double *X = realloc(s->X, (size_t)n1 * (size_t)s->d * sizeof *X);
    if (!X) return dpo_err(DPO_ENOMEM, "one-run audit: out of memory");
    s->X = X;
    memset(X + n * s->d, 0, (size_t)add * (size_t)s->d * sizeof *X);
    int64_t row = n;
    for (int64_t i = 0; i < c->m; i++) {
      if (!c->in[i] && c->add_remove) continue;
      X[row * s->d + c->d0 + i] = c->a;
      s->y[row++] = c->in[i] ? 1 : -1;
    }
  }
  s->n = n1;
  return DPO_OK;
}

int dpo__a1_add_rows(dpo__a1_t *c, dpo_shard_t *train, dpo_shard_t *test, int last) {
  if (train->labels != DPO_LABELS_BINARY || train->n_public)
    return dpo_err(DPO_EUNSUP, "dpopt audit --one-run: binary labels and one data holder only");
  c->d0 = train->d;
  if ((int64_t)c->d0 + c->m > INT32_MAX / 2)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run: too many canary columns");
  c->dtot = c->d0 + (int32_t)c->m;
  int rc = dpo__a1_widen(train, c->dtot);
  if (!rc && test) rc = dpo__a1_widen(test, c->dtot);
  if (!rc) rc = dpo__a1_append(c, train, last);
  return rc;
}

/* dpo_run_t.rows_hook: widen the shards, add the canaries (before the bias column). */
static int dpo__a1_rows(void *arg, dpo_run_t *r) {
  return dpo__a1_add_rows(arg, r->train, r->test, r->rank == r->size - 1);
}

/* The canary's clipped logistic gradient coefficient for label y at margin z (the gradient is
 * g a on its column and g on the bias column). */
static double dpo__a1_coef(const dpo__a1_t *c, double z, double y) {
  double g = -y * dpo__sigm(-y * z);
  if (c->has_clip) {
    double nrm = c->clip.norm == DPO_CLIP_L1 ? fabs(g) * (c->a + c->bias)
                                             : fabs(g) * sqrt(c->a * c->a + c->bias);
    if (nrm > c->clip.C) g *= c->clip.C / nrm;
  }
  return g;
}

/* log f(v; mu) on the canary's column, up to what both hypotheses share */
static double dpo__a1_logf(int gauss, double s, double v, double mu) {
  return gauss ? -(v - mu) * (v - mu) / (2 * s * s) : -fabs(v - mu) / s;
}

/* dpo_release_fn (rank 0): each canary's log-likelihood ratio on its own columns, included
 * (label +1) against excluded (label -1 under replace-one, absent under add-remove), at x_t
 * in the release's units, mixed over the row's presence in the step's sample when q < 1. */
int dpo__a1_observe(void *arg, const dpo_release_t *r) {
  dpo__a1_t *c = arg;
  const int gauss = r->mechanism == DPO_MECH_GAUSSIAN;
  if (!gauss && r->mechanism != DPO_MECH_LAPLACE)
    return dpo_err(DPO_EUNSUP, "dpopt audit --one-run: a '%s' release",
                   dpo_mech_name(r->mechanism));
  if (r->d != c->dtot + c->bias)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run: a release of length %d", r->d);
  c->gauss |= gauss;
  c->lap |= !gauss;
  c->nrel++;
  const double s = r->noise_scale, unit = r->unit > 0 ? r->unit : 1;
  const double b = c->bias ? r->x[c->dtot] : 0;
  for (int64_t i = 0; i < c->m; i++) {
    const double v = r->v[c->d0 + i], z = b + c->a * r->x[c->d0 + i];
    const double mu1 = dpo__a1_coef(c, z, 1) * c->a * unit;
    const double mu0 = c->add_remove ? 0 : dpo__a1_coef(c, z, -1) * c->a * unit;
    double l1 = dpo__a1_logf(gauss, s, v, mu1), l0 = dpo__a1_logf(gauss, s, v, mu0);
    if (r->q < 1 && r->q > 0) { /* the row in the sample with probability q */
      const double e = dpo__a1_logf(gauss, s, v, 0), lq = log(r->q), lp = log1p(-r->q);
      l1 = fmax(lq + l1, lp + e) + log1p(exp(-fabs((lq + l1) - (lp + e))));
      l0 = fmax(lq + l0, lp + e) + log1p(exp(-fabs((lq + l0) - (lp + e))));
    }
    const double l = l1 - l0;
    c->score[i] += l;
  }
  return DPO_OK;
}

static const double *dpo__a1_sort_key;
static int dpo__a1_cmp(const void *pa, const void *pb) {
  double a = dpo__a1_sort_key[*(const int64_t *)pa], b = dpo__a1_sort_key[*(const int64_t *)pb];
  return a < b ? 1 : a > b ? -1 : 0; /* descending */
}

/* Rank 0: the guesses and the bound (the largest over the grid, each at beta / grid). */
int dpo__a1_bound(const dpo__a1_t *c, double delta, double beta, dpo_audit1_result_t *res) {
  int64_t *ord = malloc((size_t)c->m * sizeof *ord);
  if (!ord) return dpo_err(DPO_ENOMEM, "one-run audit: out of memory");
  for (int64_t i = 0; i < c->m; i++) ord[i] = i;
  dpo__a1_sort_key = c->score;
  qsort(ord, (size_t)c->m, sizeof *ord, dpo__a1_cmp);
  res->eps_lb = 0;
  for (int g = 0; g < DPO__A1_GRID; g++) {
    int64_t h = dpo_audit1_guesses(c->m, g) / 2, v = 0;
    if (h < 1) continue;
    for (int64_t t = 0; t < h; t++) v += c->in[ord[t]] + !c->in[ord[c->m - 1 - t]];
    double lb = dpo_audit1_eps_lb(c->m, 2 * h, v, delta, beta / DPO__A1_GRID);
    res->grid_r[g] = 2 * h;
    res->grid_v[g] = v;
    if (lb > res->eps_lb || g == 0) {
      res->eps_lb = lb;
      res->guesses = 2 * h;
      res->correct = v;
    }
  }
  free(ord);
  return DPO_OK;
}

/* Canary shape: one column at the largest value both declared row bounds allow (the clip's
 * size without bounds).  One column costs the run one coordinate a canary; spreading a
 * canary over k columns would not help: a Gaussian release's log-likelihood ratio grows with
 * the L2 size of the canary's gradient, which the L2 bound caps either way, and a Laplace
 * release's loss is then a sum of k small ones, far from the randomized response the bound
 * counts (tried on a9a, 14 columns of 1 against one of sqrt 14, dp-gd one release at eps 1,
 * l1 clip 1, seed 11: eps_lb 0.07 against 0.59 intact, 0.39 against 1.28 halved). */
void dpo__a1_shape(dpo__a1_t *c, double b1, double b2) {
  double a = fmin(isnan(b1) ? INFINITY : b1, isnan(b2) ? INFINITY : b2);
  c->a = isfinite(a) ? a : c->has_clip ? c->clip.C : 1;
}

/* The one-run audit as a mode of the audit kind (audit.one_run; run.command = audit): train's
 * hooks (run.c, run_solve.c, run_out.c) around the canaries, so the run has train's run
 * directory (config.ini, ledger.jsonl, trace.csv, model.txt with the canaries' columns,
 * summary.json with the audit's result beside train's), --resume, checkpoints, signals and
 * progress.  The data are real: the run spends its budget and keeps its journal. */
static dpo__a1_t *dpo__a1(const dpo_run_t *r) { return r->kind; }

int dpo__a1_read(const dpo_config_t *cfg, dpo__a1_t *c) {
  int rc;
  if ((rc = dpo_config_get_int(cfg, "audit.canaries", 1000, &c->m)) ||
      (rc = dpo_config_get_double(cfg, "audit.alpha", 0.05, &c->alpha)))
    return rc;
  dpo_config_get(cfg, "audit.json"); /* written by the write hook */
  if (c->m < 2 || c->m > INT32_MAX / 4 || !(c->alpha > 0 && c->alpha < 1))
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run: need at least 2 canaries and 0 < alpha < 1");
  return DPO_OK;
}

/* What the audit needs of the settings, checked before train's set-up claims the directory:
 * its own keys, a private algorithm and logistic regression.  Not collective. */
static int dpo__a1_settings(dpo_run_t *r, dpo__a1_t *c) {
  const dpo_config_t *cfg = r->cfg;
  const char *aname = NULL, *model = NULL;
  int64_t K = 0;
  int rc;
  if ((rc = dpo__a1_read(cfg, c)) || (rc = dpo_config_get_int(cfg, "model.classes", 0, &K)))
    return rc;
  dpo_config_get_str(cfg, "algo.name", "gd", &aname);
  dpo_config_get_str(cfg, "model.name", "logreg", &model);
  const dpo_algo_t *a = dpo_algo_find(aname);
  if (a && !a->is_private)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run: algorithm '%s' adds no noise: audit a "
                   "private algorithm (dp-*, or no --algo with --eps)", aname);
  if (strcmp(model, "logreg") || K > 0)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run: logistic regression (--model logreg) only");
  c->final_model = a && a->final_only; /* its steps are not releases: the final model */
  snprintf(c->name, sizeof c->name, "audit-%s", aname);
  r->dir_name = c->name;
  return DPO_OK;
}

static int dpo__a1_setup(dpo_run_t *r) {
  dpo__a1_t *c = calloc(1, sizeof *c);
  int rc = c ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  r->kind = c;
  r->stage = "audit";
  if (!rc) rc = dpo__a1_settings(r, c);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  if ((rc = dpo__train_setup(r))) return rc; /* the directory claimed, the journal opened */
  r->stage = "audit";
  return DPO_OK;
}

/* dpo_run_opts_t.on_checkpoint (rank 0): the secret bits and the scores of the releases so
 * far, beside the solver's state at the same step. */
static int dpo__a1_save(void *arg, dpo_ckpt_t *ck) {
  const dpo__a1_t *c = arg;
  int rc;
  if ((rc = dpo_ckpt_put_bytes(ck, "audit1.in", c->in, c->m)) ||
      (rc = dpo_ckpt_put_f64(ck, "audit1.score", c->score, c->m)) ||
      (rc = dpo_ckpt_put_int(ck, "audit1.releases", c->nrel)) ||
      (rc = dpo_ckpt_put_int(ck, "audit1.mechanisms", c->gauss | c->lap << 1)))
    return rc;
  return DPO_OK;
}

/* Rank 0, --resume: what dpo__a1_save wrote (the solver checks the rest of the file). */
static int dpo__a1_restore(dpo_run_t *r, dpo__a1_t *c) {
  dpo_ckpt_t *ck = NULL;
  int64_t mech = 0;
  int rc = dpo_ckpt_read(r->ckpt_path, &ck);
  if (!rc && dpo_ckpt_len(ck, "run.audit1.in") != c->m)
    rc = dpo_err(DPO_EFORMAT, "%s: not the checkpoint of a one-run audit with %lld canaries",
                 r->ckpt_path, (long long)c->m);
  if (!rc && !(rc = dpo_ckpt_get_bytes(ck, "run.audit1.in", c->in, c->m)) &&
      !(rc = dpo_ckpt_get_f64(ck, "run.audit1.score", c->score, c->m)) &&
      !(rc = dpo_ckpt_get_int(ck, "run.audit1.releases", &c->nrel)))
    rc = dpo_ckpt_get_int(ck, "run.audit1.mechanisms", &mech);
  c->gauss = (int)(mech & 1);
  c->lap = (int)(mech >> 1 & 1);
  dpo_ckpt_destroy(ck);
  return rc;
}

int dpo__a1_alloc(dpo__a1_t *c, int rank, dpo_rng_t *rng) {
  c->in = malloc((size_t)c->m);
  c->score = calloc((size_t)c->m, sizeof *c->score);
  if (!c->in || !c->score) return dpo_err(DPO_ENOMEM, "one-run audit: out of memory");
  for (int64_t i = 0; rank == 0 && i < c->m; i += 64) {
    uint64_t w = dpo_rng_u64(rng);
    for (int64_t j = i; j < c->m && j < i + 64; j++) c->in[j] = (unsigned char)((w >> (j - i)) & 1);
  }
  return DPO_OK;
}

static int dpo__a1_load(dpo_run_t *r) {
  dpo__a1_t *c = dpo__a1(r);
  int rc = DPO_OK;
  c->bias = dpo_model_intercept(r->model); /* the last column, value DPO_MODEL_ICPT = 1 */
  c->add_remove = dpo_ledger_neighbours(dpo__run_priv_ledger(r->priv)) == DPO_NEIGHBOURS_ADD_REMOVE;
  const dpo_clip_t *clip = dpo__run_priv_clip(r->priv);
  if ((c->has_clip = clip != NULL)) c->clip = *clip;
  dpo__a1_shape(c, r->b1, r->b2);
  /* S: the secret bits (from the run's own noise stream) */
  rc = dpo__a1_alloc(c, r->rank, r->rank == 0 ? dpo__run_priv_rng(r->priv) : NULL);
  /* resumed: the bits the rows were built with (an unseeded stream draws new ones) */
  if (!rc && r->rank == 0 && r->resuming) rc = dpo__a1_restore(r, c);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  MPI_Bcast(c->in, (int)c->m, MPI_UNSIGNED_CHAR, 0, r->comm); /* the last rank writes the rows */
  r->rows_hook = dpo__a1_rows;
  r->rows_arg = c;
  r->release_fn = dpo__a1_observe;
  r->release_arg = c;
  r->ckpt_fn = dpo__a1_save;
  return dpo__train_load(r);
}

static int dpo__a1_solve(dpo_run_t *r) {
  int rc = dpo__train_solve(r);
  r->stage = "audit";
  if (rc == DPO_EINTR) { /* checkpoint written: dpopt audit --resume continues (not train) */
    char msg[512], *cut;
    snprintf(msg, sizeof msg, "%s", dpo_errmsg());
    if ((cut = strstr(msg, "dpopt train --resume"))) *cut = '\0';
    return dpo_err(DPO_EINTR, "%sdpopt audit --resume %s", msg, r->dir);
  }
  if (rc == DPO_EBUDGET) rc = DPO_OK; /* the releases that ran are the audited run */
  const dpo__a1_t *c = dpo__a1(r);
  if (!rc && (rc = dpo_agree(r->comm, r->rank == 0 && !c->final_model && c->nrel == 0
                    ? dpo_err(DPO_EUNSUP, "dpopt audit --one-run: %s makes no release the "
                              "audit can observe", r->algo->name) : DPO_OK)))
    return dpo__run_failed(r, rc);
  return rc;
}

static int dpo__a1_evaluate(dpo_run_t *r) {
  dpo__a1_t *c = dpo__a1(r);
  dpo_audit1_result_t *res = &c->res;
  int rc = dpo__train_evaluate(r);
  r->stage = "audit (analysis)";
  if (rc) return rc;
  double eps = 0, delta = 0;
  if (r->rank == 0) dpo_ledger_budget(dpo__run_priv_ledger(r->priv), &eps, &delta);
  if (r->rank == 0 && c->final_model) { /* the final model's weight on each canary's column */
    const double *x = dpo_solver_x(r->solver);
    for (int64_t i = 0; i < c->m; i++) c->score[i] = x[c->d0 + i];
  }
  if (r->rank == 0) rc = dpo__a1_bound(c, delta, c->alpha, res);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  snprintf(res->algorithm, sizeof res->algorithm, "%s", r->algo->name);
  res->claimed_eps = eps;
  res->claimed_delta = delta;
  res->alpha = c->alpha;
  res->canaries = c->m;
  res->releases = c->nrel;
  res->add_remove = c->add_remove;
  res->gaussian = c->gauss;
  res->seeded = !dpo__run_priv_guaranteed(r->priv);
  for (int64_t i = 0; i < c->m; i++) res->included += c->in[i];
  res->violation = res->eps_lb > eps;
  MPI_Bcast(res, (int)sizeof *res, MPI_BYTE, 0, r->comm);
  return DPO_OK;
}

/* The result as --json and summary.json's "audit" give it. */
json_object *dpo__a1_json(const dpo_audit1_result_t *r) {
  json_object *j = json_object_new_object();
  json_object_object_add(j, "audit", json_object_new_string("one-run"));
  json_object_object_add(j, "algorithm", json_object_new_string(r->algorithm));
  json_object_object_add(j, "claimed_eps", dpo_json_double(r->claimed_eps));
  json_object_object_add(j, "claimed_delta", dpo_json_double(r->claimed_delta));
  json_object_object_add(j, "eps_lb", dpo_json_double(r->eps_lb));
  json_object_object_add(j, "alpha", dpo_json_double(r->alpha));
  json_object_object_add(j, "canaries", json_object_new_int64(r->canaries));
  json_object_object_add(j, "guesses", json_object_new_int64(r->guesses));
  json_object_object_add(j, "correct", json_object_new_int64(r->correct));
  json_object_object_add(j, "releases", json_object_new_int64(r->releases));
  json_object_object_add(j, "scored_by", json_object_new_string(r->releases > 0 ? "releases"
                                                                                : "final model"));
  json_object_object_add(j, "neighbours",
                         json_object_new_string(r->add_remove ? "add-remove" : "replace-one"));
  json_object_object_add(j, "seeded", json_object_new_boolean(r->seeded));
  json_object_object_add(j, "violation", json_object_new_boolean(r->violation));
  return j;
}

/* r->summary_fn (rank 0): train's summary.json with the audit's result and verdict. */
void dpo__a1_summary_add(json_object *sum, const dpo_audit1_result_t *res) {
  json_object_object_add(sum, "command", json_object_new_string("audit"));
  json_object_object_add(sum, "verdict", json_object_new_string(res->violation ? "VIOLATION" : "pass"));
  json_object_object_add(sum, "confidence", dpo_json_double(1 - res->alpha));
  json_object_object_add(sum, "audit", dpo__a1_json(res));
}

static void dpo__a1_summary(const dpo_run_t *r, json_object *sum) {
  dpo__a1_summary_add(sum, &dpo__a1(r)->res);
}

int dpo__a1_write_json(const dpo_config_t *cfg, const dpo_audit1_result_t *res) {
  const char *jpath = NULL;
  int rc = DPO_OK;
  if (!dpo_config_get_str(cfg, "audit.json", NULL, &jpath) && jpath) {
    json_object *j = dpo__a1_json(res);
    const char *js = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
    rc = dpo_write_atomic(jpath, js, strlen(js));
    json_object_put(j);
  }
  return rc;
}

static int dpo__a1_write(dpo_run_t *r) {
  int rc = DPO_OK;
  r->summary_fn = dpo__a1_summary;
  if (r->rank == 0) rc = dpo__a1_write_json(r->cfg, &dpo__a1(r)->res);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  rc = dpo__train_write(r);
  r->stage = "audit";
  return rc;
}

void dpo_audit1_print(FILE *out, const dpo_audit1_result_t *r, const char *tag) {
  fprintf(out, "%-14s %-11s %-11s %-10s %-9s %s\n", "algorithm", "claimed_eps", "delta",
          "eps_lb", "canaries", "guesses");
  fprintf(out, "%-14s %-11.6g %-11.3g %-10.4f %-9lld %lld right of %lld%s", r->algorithm,
          r->claimed_eps, r->claimed_delta, r->eps_lb, (long long)r->canaries,
          (long long)r->correct, (long long)r->guesses, tag ? tag : "");
  if (r->seeded) fprintf(out, "  [seeded: not private]");
  if (r->releases > 0)
    fprintf(out, "\none run: %lld releases observed (the coordinator's broadcasts)",
            (long long)r->releases);
  else /* final_only: only the final model leaves the run */
    fprintf(out, "\none run: the final model only (its steps are not releases: hidden state), "
            "each canary scored by its weight");
  fprintf(out, "; each canary one value in a column of its own, %s; guesses tried",
          r->add_remove ? "absent when excluded (add-remove)"
                        : "labelled -1 when excluded (replace-one)");
  for (int g = 0; g < DPO__A1_GRID; g++)
    if (r->grid_r[g] > 0) fprintf(out, " %lld:%lld", (long long)r->grid_r[g], (long long)r->grid_v[g]);
  fprintf(out, " (right:of, each at alpha/4)\nassumes: the adversary sees %s and knows "
          "the canaries; the bound holds with confidence %g for any data (Steinke, Nasr and "
          "Jagielski 2023, Theorem 3.1 with its delta term)\n",
          r->releases > 0 ? "every release" : "the final model", 1 - r->alpha);
  if (r->violation)
    fprintf(out, "VIOLATION: the lower bound %.4f exceeds the claimed eps %.6g (confidence %g)\n",
            r->eps_lb, r->claimed_eps, 1 - r->alpha);
}

static void dpo__a1_print(const dpo_run_t *r, FILE *out) {
  dpo_audit1_print(out, &dpo__a1(r)->res, "");
  fprintf(out, "run directory %s\n", r->dir);
}

void dpo__a1_free(dpo__a1_t *c) {
  if (!c) return;
  free(c->in);
  free(c->score);
  free(c);
}

static void dpo__a1_destroy(dpo_run_t *r) {
  dpo__a1_free(dpo__a1(r));
  r->kind = NULL;
}

const dpo__run_ops_t dpo__run_audit1_ops = {"audit",         dpo__a1_setup,    dpo__a1_load,
                                            dpo__a1_solve,   dpo__a1_evaluate, dpo__a1_write,
                                            dpo__a1_print,   dpo__a1_destroy};
