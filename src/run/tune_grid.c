/* dpopt tune's settings, grid and runs' configurations, and the selection's noisy max: what
 * a tune decides before and between its runs, without running one (no call into the run API),
 * so that the audit of tune (src/run/run_audit_tune.c, under the run API's audit kind) runs the
 * same code as tune.c and tune_split.c do. */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/run.h"
#include "dpopt/spec.h"
#include "dpopt/status.h"
#include "run/run_canary.h"
#include "run/tune_impl.h"
#include "run/tune_store.h"

void dpo__tune_copy_key(const char *k, const char *v, const char *o, void *to) {
  /* the tune, not each repetition, charges the data set's budget store: one reservation; and
   * the tune stops and resumes (tune_ckpt.c): a repetition runs whole, or again from scratch */
  if (!strncmp(k, "tune.", 5) || !strcmp(k, "run.dir") || !strcmp(k, "algo.name") ||
      !strcmp(k, "data.test") || !strcmp(k, "run.resume") || !strcmp(k, "run.stop_after") ||
      !strcmp(k, "run.checkpoint_every") || !strncmp(k, "audit.", 6) ||
      !strcmp(k, "privacy.store") || dpo__tune_pstore_key(k))
    return;
  dpo_config_set(to, k, v, o);
}

/* "a,b,c" -> up to DPO__TUNE_MAXV strings (in buf) */
static int split_list(const char *s, char *buf, size_t cap, const char **v, int *nv) {
  *nv = 0;
  if (!s) return DPO_OK;
  if (snprintf(buf, cap, "%s", s) >= (int)cap) return dpo_err(DPO_EINVAL, "tune: list too long");
  for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
    if (*nv == DPO__TUNE_MAXV) return dpo_err(DPO_EINVAL, "tune: more than %d values in a list", DPO__TUNE_MAXV);
    v[(*nv)++] = tok;
  }
  return DPO_OK;
}

static int num_list(const dpo_config_t *cfg, const char *key, double *v, int *nv) {
  char buf[1024];
  const char *s[DPO__TUNE_MAXV];
  int rc = split_list(dpo_config_get(cfg, key), buf, sizeof buf, s, nv);
  for (int i = 0; !rc && i < *nv; i++) {
    char *end;
    v[i] = strtod(s[i], &end);
    if (end == s[i] || *end || !(v[i] > 0) || !isfinite(v[i]))
      rc = dpo_err(DPO_EINVAL, "%s: %s: '%s' is not a positive number", dpo_config_origin(cfg, key),
                   key, s[i]);
  }
  if (!rc && *nv == 0) v[(*nv)++] = NAN; /* not varied */
  return rc;
}

/* The default grid around train's recipe (t->recipe set it in t->cfg): the step (algo.eta of
 * dp-sgd-rdp, default 2; algo.c of the pure-eps methods, default 1) halved, kept and doubled,
 * and for dp-sgd-rdp the epochs halved and kept (each repetition runs at a fraction of the
 * tune's eps, where train's own rule picks fewer epochs).  A list the user gave is kept. */
static int recipe_grid(dpo__tune_t *t, const char *algo, double *ep, int *ne, double *st, int *ns) {
  int rc, gauss = !strcmp(algo, "dp-sgd-rdp");
  double s0 = 0, e0 = 0;
  if ((rc = dpo_config_get_double(t->cfg, gauss ? "algo.eta" : "algo.c", gauss ? 2 : 1, &s0)))
    return rc;
  if (!dpo_config_get(t->cfg, "tune.step")) {
    st[0] = s0 / 2, st[1] = s0, st[2] = 2 * s0;
    *ns = 3;
  }
  if (gauss && !dpo_config_get(t->cfg, "tune.epochs")) {
    if ((rc = dpo_config_get_double(t->cfg, "algo.epochs", 1, &e0))) return rc;
    ep[0] = e0 / 2, ep[1] = e0;
    *ne = 2;
  }
  return DPO_OK;
}

static void is_tune_key(const char *k, const char *v, const char *o, void *any) {
  (void)v, (void)o;
  if (!strncmp(k, "tune.", 5)) *(int *)any = 1;
}

int dpo__tune_any_key(const dpo_config_t *cfg) {
  int any = 0;
  dpo_config_foreach(cfg, is_tune_key, &any);
  return any;
}

/* run.dir, else runs/tune-YYYYmmdd-HHMMSS */
static void tune_dir(dpo__tune_t *t) {
  const char *dir = NULL;
  dpo_config_get_str(t->cfg, "run.dir", NULL, &dir);
  if (dir) snprintf(t->dir, sizeof t->dir, "%s", dir);
  else {
    char ts[32];
    time_t now = time(NULL);
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", localtime(&now));
    snprintf(t->dir, sizeof t->dir, "runs/tune-%s", ts);
  }
}

/* The candidate grid and the settings; data-free.  Not collective. */
static void multi_party_key(const char *k, const char *v, const char *o, void *any) {
  (void)v, (void)o;
  if (!strncmp(k, "parties.", 8) || !strncmp(k, "party.", 6)) *(int *)any = 1;
}

int dpo__tune_settings(dpo__tune_t *t) {
  const dpo_config_t *cfg = t->cfg;
  const char *algos = NULL;
  dpo_privacy_spec_t ps; /* the privacy.* settings, read where train's are (run_spec.c) */
  int rc;
  static char abuf[1024]; /* the algorithm names point into it (one tune per process) */
  const char *an[DPO__TUNE_MAXV];
  double lr[DPO__TUNE_MAXV], clip[DPO__TUNE_MAXV], ep[DPO__TUNE_MAXV], st[DPO__TUNE_MAXV];
  int na, nl, nk, ne, ns;
  /* every missing requirement in one message */
  const char *miss[2];
  int nm = 0;
  if ((rc = dpo_privacy_spec_from_config(cfg, &ps))) return rc;
  if (!dpo_config_get(cfg, "data.train")) miss[nm++] = "--data FILE (the training rows)";
  if (!dpo_privacy_spec_given(&ps, DPO_SPEC_EPS))
    miss[nm++] = "--eps E (the total budget: every candidate training and the selection)";
  if (nm)
    return dpo_err(DPO_EINVAL, "tune: give %s%s%s", miss[0], nm > 1 ? " and " : "",
                   nm > 1 ? miss[1] : "");
  t->eps = ps.eps, t->delta = ps.delta;
  if ((rc = dpo_config_get_double(cfg, "tune.mean", 5, &t->mean))) return rc;
  if (!(t->eps > 0) || !isfinite(t->eps))
    return dpo_err(DPO_EINVAL, "tune: give the total budget --eps E (> 0): it covers every "
                   "candidate training and the selection");
  if (!(t->delta >= 0 && t->delta < 1)) return dpo_err(DPO_EINVAL, "tune: delta must be in [0, 1)");
  if (!(t->mean >= 1 && t->mean <= 1000) || t->mean != floor(t->mean))
    return dpo_err(DPO_EINVAL, "tune.mean = %g: the mean number of repetitions must be an integer "
                   "in [1, 1000]", t->mean);
  t->rdp = t->delta > 0;
  const char *mname = "logreg";
  dpo_config_get_str(cfg, "model.name", "logreg", &mname);
  if (strcmp(mname, "logreg") && strcmp(mname, "softmax")) /* the score counts correct labels */
    return dpo_err(DPO_EINVAL, "tune: model %s: the score is a count of correct held-out "
                   "predictions (logreg or softmax)", mname);
  t->multi = !strcmp(mname, "softmax");
  /* dpopt tune --resume reaches here without run.resume (dpo__run_resume_config merged the
   * stopped tune's settings); the audit of a tune does not resume one */
  if (dpo_config_get(cfg, "run.resume"))
    return dpo_err(DPO_EINVAL, "tune: run.resume is not read here (dpopt tune --resume DIR "
                   "continues a stopped tune; an audit of a tune is not resumed)");
  /* no --algos: train's auto-picked recipe at the tune's budget (run_auto.c) is the centre of
   * the grid; its settings reach every repetition like the user's */
  if (!dpo_config_get(cfg, "tune.algo")) t->recipe = dpo_run_auto_algo(t->cfg);
  /* No grid and no tune.* setting: train's recipe once at the whole budget.  A selection over
   * the default grid leaves each repetition about 0.3 of eps (Papernot-Steinke, geometric K),
   * and on a9a it lost to train's recipe at every eps measured (doc/results.md, "Tune against
   * train"); the decision reads only the settings, never the data. */
  if (t->recipe && !dpo__tune_any_key(cfg)) {
    t->plain = 1;
    tune_dir(t);
    return DPO_OK;
  }
  /* the recipe wrote its privacy defaults (neighbours, clip) into the config: read them */
  if (t->recipe && (rc = dpo_privacy_spec_from_config(cfg, &ps))) return rc;
  t->rel = ps.rel;
  t->ps = ps;
  if ((rc = dpo__tune_split_settings(t))) return rc;
  /* A search scores each repetition by the exact count of correct held-out predictions,
   * reduced to rank 0 and noised there: with several parties that count leaves each party
   * un-noised, which only central trust (the coordinator trusted with the rows) allows. */
  int mp = 0;
  dpo_config_foreach(cfg, multi_party_key, &mp);
  if (mp && ps.trust != DPO_TRUST_CENTRAL)
    return dpo_err(DPO_EINVAL, "%s: privacy.trust = %s: a multi-party tune scores each "
                   "repetition by an exact count of correct held-out predictions that the "
                   "coordinator noises, so it runs under central trust only (or give no grid: "
                   "train's recipe, trained once, keeps the trust mode)",
                   dpo_privacy_spec_origin(&ps, DPO_SPEC_TRUST), dpo_trust_name(ps.trust));
  dpo_config_get_str(cfg, "tune.valid", NULL, &t->valid);
  dpo_config_get_str(cfg, "data.test", NULL, &t->test);
  if ((rc = dpo_config_get_double(cfg, "tune.valid_fraction", 0.1, &t->vfrac))) return rc;
  if (!dpo_config_get(cfg, "data.train"))
    return dpo_err(DPO_EINVAL, "tune: give --data (the training rows)");
  if (t->valid || t->split > 0) t->vfrac = 0;
  else if (!(t->vfrac > 0 && t->vfrac <= 0.5))
    return dpo_err(DPO_EINVAL, "%s: tune.valid_fraction = %g: expected a fraction in (0, 0.5]",
                   dpo_config_origin(cfg, "tune.valid_fraction"), t->vfrac);
  else if (t->rel != DPO_NEIGHBOURS_ADD_REMOVE) /* a replaced row may change part: two changes */
    return dpo_err(DPO_EINVAL, "tune: the validation split of --data needs add-remove neighbours "
                   "(under replace-one a replaced row may move from the training part to the "
                   "validation part); give a separate validation file --valid FILE");
  dpo_config_get_str(cfg, "tune.algo", t->recipe ? dpo_config_get(cfg, "algo.name")
                                       : t->rdp ? "dp-sgd-rdp" : "dp-nag-opt", &algos);
  if ((rc = split_list(algos, abuf, sizeof abuf, an, &na)) ||
      (rc = num_list(cfg, "tune.lr", lr, &nl)) || (rc = num_list(cfg, "tune.clip", clip, &nk)) ||
      (rc = num_list(cfg, "tune.epochs", ep, &ne)) || (rc = num_list(cfg, "tune.step", st, &ns)))
    return rc;
  if (t->recipe && (rc = recipe_grid(t, an[0], ep, &ne, st, &ns))) return rc;
  t->nc = 0;
  for (int a = 0; a < na; a++) {
    const dpo_algo_t *al = dpo_algo_find(an[a]);
    int gauss = al && !strcmp(al->name, "dp-sgd-rdp");
    if (!al || !al->is_private || (!gauss && strncmp(al->name, "dp-", 3)))
      return dpo_err(DPO_EINVAL, "tune.algo: '%s': a tune runs dp-sgd-rdp or the pure-eps "
                     "algorithms dp-* (see dpopt train --help)", an[a]);
    if (gauss && !t->rdp)
      return dpo_err(DPO_EINVAL, "tune.algo: dp-sgd-rdp needs delta > 0 (--delta)");
    for (int i = 0; i < (gauss ? nl : 1); i++)
      for (int j = 0; j < (gauss ? nk : 1); j++)
        for (int k = 0; k < (gauss ? ne : 1); k++)
          for (int h = 0; h < ns; h++) {
            if (t->nc == DPO__TUNE_MAXC)
              return dpo_err(DPO_EINVAL, "tune: more than %d candidates", DPO__TUNE_MAXC);
            dpo__cand_t *c = &t->c[t->nc++];
            *c = (dpo__cand_t){al->name, gauss, gauss ? lr[i] : NAN, gauss ? clip[j] : NAN,
                               gauss ? ep[k] : NAN, st[h], 0, 0, NAN};
          }
  }
  if (t->nc == 0) return dpo_err(DPO_EINVAL, "tune.algo: no candidate");
  /* one candidate: the repetitions and the selection would only split the budget of a plain
   * train run of the same settings (Liu-Talwar: a third of eps) */
  if (t->nc == 1)
    return dpo_err(DPO_EINVAL, "tune: the grid holds one candidate (%s): a tune of it would "
                   "spend the budget on repetitions and a selection and train with a fraction "
                   "of eps; run dpopt train with these settings, or give more values (--algos, "
                   "--steps, --lrs, --clips, --epochs)", t->c[0].algo);
  tune_dir(t);
  return DPO_OK;
}

int dpo__tune_split_settings(dpo__tune_t *t) {
  static const char *const other[] = {"tune.valid", "tune.valid_fraction", "tune.mean", NULL};
  dpo_config_t *cfg = t->cfg;
  int rc, mp = 0;
  dpo_config_foreach(cfg, multi_party_key, &mp);
  /* a search by default: parallel composition at S = 0.1, unless a setting of the geometric
   * search is given or the data are several parties' (doc/results.md, "Tune against train":
   * within 2 standard errors of train's recipe at eps 0.1, 0.3, 1, 3 and 10 over 5 runs,
   * where S = 0.2 and 0.3 fell below it and the geometric search a whole point below) */
  if (!dpo_config_get(cfg, "tune.split")) {
    for (int i = 0; other[i]; i++)
      if (dpo_config_get(cfg, other[i])) return DPO_OK;
    if (mp) return DPO_OK;
    if ((rc = dpo_config_set(cfg, "tune.split", DPO__TUNE_SPLIT_DEFAULT,
                             "default (a search without --mean, --valid or --valid-fraction)")))
      return rc;
  }
  if ((rc = dpo_config_get_double(cfg, "tune.split", NAN, &t->split))) return rc;
  if (!(t->split >= 0.05 && t->split <= 0.5))
    return dpo_err(DPO_EINVAL, "%s: tune.split = %g: expected the selection's fraction of the "
                   "rows in [0.05, 0.5]", dpo_config_origin(cfg, "tune.split"), t->split);
  for (int i = 0; other[i]; i++)
    if (dpo_config_get(cfg, other[i]))
      return dpo_err(DPO_EINVAL, "%s: %s is not read by a tune with --split (it selects on its "
                     "own part of --data, once)", dpo_config_origin(cfg, other[i]), other[i]);
  if (mp)
    return dpo_err(DPO_EINVAL, "tune: --split partitions one data set by row position; a "
                   "multi-party tune is not supported with it");
  return DPO_OK;
}

int dpo__tune_audit1_settings(dpo__tune_t *t, int asked) {
  static const char *const stops[] = {"run.checkpoint_every", "run.stop_after", NULL};
  dpo__a1_t probe;
  int rc;
  if (!dpo_config_get(t->cfg, "audit.one_run")) return DPO_OK;
  if ((rc = dpo_config_get_bool(t->cfg, "audit.one_run", 0, &t->audit1))) return rc;
  if (!t->audit1) return dpo_err(DPO_EINVAL, "%s: audit.one_run = 0 is not read by dpopt tune",
                                 dpo_config_origin(t->cfg, "audit.one_run"));
  if (!asked)
    return dpo_err(DPO_EINVAL, "%s: audit.one_run: dpopt audit --one-run --tune audits a tune "
                   "(dpopt tune would not print the audit)",
                   dpo_config_origin(t->cfg, "audit.one_run"));
  memset(&probe, 0, sizeof probe);
  if ((rc = dpo__a1_read(t->cfg, &probe))) return rc; /* canaries and alpha, checked */
  if (t->plain)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --tune: no grid and no tune option: the "
                   "tune is train's recipe trained once; audit that run with dpopt audit "
                   "--one-run and train's options, or give a grid (--split, --algos, --steps)");
  /* results.md, "One-run audit": what a one-run audit of the geometric search could reach */
  if (t->split == 0)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --tune: the geometric search (--mean, "
                   "--valid, --valid-fraction) is not audited in one run: a training canary "
                   "reaches its output through the chosen repetition's model, a repetition at "
                   "eps / 3 (pure eps: Liu and Talwar, \"Private selection from private "
                   "candidates\", 2019); where the one-run audit of train sees most (one Laplace "
                   "release, the l1 clip saturated, a9a's row bounds) each canary is then 0.26 "
                   "eps randomized response (0.53 eps with the noise halved), and 1000 canaries "
                   "bound eps by a median 0.35 at eps 1 and 0.83 at eps 2 with the noise halved, "
                   "never above the claim in 400 modelled runs.  Validation canaries reach it "
                   "through one noisy count, which tells how many were included, not which.  "
                   "The search by parallel composition (--split) is audited: its canaries are "
                   "rows of the final part.  Audit the geometric search with dpopt audit --tune");
  if (t->multi)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --tune: logistic regression only");
  for (int i = 0; stops[i]; i++)
    if (dpo_config_get(t->cfg, stops[i]))
      return dpo_err(DPO_EINVAL, "%s: %s: a one-run audit of a tune does not stop and resume "
                     "(its canaries are drawn by the final run)",
                     dpo_config_origin(t->cfg, stops[i]), stops[i]);
  return DPO_OK;
}

/* The public size of a part of width w (the declared size, scaled), and a batch of at most
 * half of it (a recipe's batch fits the whole data, not a candidate's small part). */
static void part_public_n(const dpo__tune_t *t, dpo_config_t *c, double w) {
  double n = NAN, m = NAN;
  char b[32];
  if (!dpo_privacy_spec_given(&t->ps, DPO_SPEC_PUBLIC_N) || !(t->ps.public_n > 0)) return;
  n = fmax(1, round((double)t->ps.public_n * w));
  snprintf(b, sizeof b, "%.0f", n);
  dpo_config_set(c, "privacy.public_n", b, "tune (the part's share of privacy.public_n)");
  if (!dpo_config_get_double(c, "algo.m", NAN, &m) && m > floor(n / 2)) {
    snprintf(b, sizeof b, "%.0f", fmax(1, floor(n / 2)));
    dpo_config_set(c, "algo.m", b, "tune (half the part's public size)");
  }
}

static void setd(dpo_config_t *c, const char *k, double v) {
  char b[64];
  snprintf(b, sizeof b, "%.17g", v);
  dpo_config_set(c, k, b, "tune");
}

/* r >= 0: candidate run r on its part P_r, scored on V; r < 0: the final run on F */
int dpo__tune_split_config(const dpo__tune_t *t, const dpo__cand_t *k, int r, dpo_config_t **out) {
  dpo_config_t *c;
  char dir[600];
  int rc = dpo_config_create(&c);
  if (rc) return rc;
  dpo_config_foreach(t->cfg, dpo__tune_copy_key, c);
  snprintf(dir, sizeof dir, "%s/.rep", t->dir);
  dpo_config_set(c, "run.dir", dir, "tune");
  dpo_config_set(c, "run.quiet", "1", "tune");
  dpo_config_set(c, "run.no_trace_loss", "1", "tune");
  dpo_config_set(c, "algo.name", k->algo, "tune");
  if (!isnan(k->step)) setd(c, k->gauss ? "algo.eta" : "algo.c", k->step);
  if (k->gauss && !isnan(k->epochs)) setd(c, "algo.epochs", k->epochs);
  if (k->gauss && !isnan(k->lr)) setd(c, "algo.lr", k->lr);
  if (k->gauss && !isnan(k->clip)) {
    char b[64];
    snprintf(b, sizeof b, "l2:%.17g", k->clip);
    dpo_config_set(c, "privacy.clip", b, "tune");
  }
  const char *seed = dpo_config_get(t->cfg, "run.seed");
  if (seed) setd(c, "run.seed", strtod(seed, NULL) + (r < 0 ? t->nc : r) + 1);
  if (r < 0 && t->audit1) { /* the final run is train's one-run audit (run_canary.c) */
    static const char *const ak[] = {"audit.canaries", "audit.alpha", "audit.json", NULL};
    dpo_config_set(c, "run.command", "audit", "tune (the one-run audit of the final part)");
    dpo_config_set(c, "audit.one_run", "1", "tune (the one-run audit of the final part)");
    for (int i = 0; ak[i]; i++)
      if (dpo_config_get(t->cfg, ak[i]))
        dpo_config_set(c, ak[i], dpo_config_get(t->cfg, ak[i]), dpo_config_origin(t->cfg, ak[i]));
  }
  if (r >= 0) { /* scored on V, a part of data.train */
    dpo_config_set(c, "data.test", dpo_config_get(t->cfg, "data.train"), "tune");
    part_public_n(t, c, 0.75 * t->split / t->nc);
  } else {
    if (t->test) dpo_config_set(c, "data.test", t->test, "tune");
    part_public_n(t, c, 1 - t->split);
  }
  *out = c;
  return DPO_OK;
}

int dpo__tune_split_scale(const dpo__tune_t *t, double *b) {
  return dpo_mech_laplace_scale(t->rel == DPO_NEIGHBOURS_ADD_REMOVE ? 1.0 : 2.0, t->eps, 1, b);
}

int dpo__tune_split_pick(double *noisy, int i, double count, double b, dpo_rng_t *rng, int *best) {
  noisy[i] = count;
  int rc = dpo_mech_sample(DPO_MECH_LAPLACE, rng, b, &noisy[i], 1);
  if (!rc && (i == 0 || noisy[i] > noisy[*best])) *best = i;
  return rc;
}
