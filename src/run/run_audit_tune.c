/* The audit of dpopt tune (audit.tune, `dpopt audit --tune`): its default search, by parallel
 * composition (src/run/tune_split.c), run in memory on the audit's data sets, one tune a
 * trial through the audit's trial loop (run_audit_job.c).
 *
 * What a trial runs is tune's: the grid and settings (dpo__tune_settings), each candidate's
 * configuration on its part and the final run's (dpo__tune_split_config: its step, epochs,
 * batch and public size), the selection (dpo__tune_split_scale, dpo__tune_split_pick:
 * report-noisy-max of the counts of correct predictions); each run is the audit's run of the
 * candidate's algorithm (dpo__audit_trial, the solver with its own ledger at the whole
 * budget), in memory instead of tune's run directories and files.
 *
 * Where the canary is.  For every fixed partition the tune's output differs between D and D'
 * by one part's mechanism only (tune_split.c's proof), so each part's release can be audited
 * alone; the audit puts the canary (audit_run.c's audited row) in the final part F, whose
 * release is the model the user keeps: F is D or D', and the candidates' parts and the
 * validation part V hold rows that are the same in both worlds (zero rows for the
 * candidates, which train on nothing but noise; V's rows B e_j, two thirds labelled +1, so a
 * noisy model's count depends on its signs and the selection varies).  The adversary sees the chosen
 * candidate and the final model.  A tune whose final run, candidates or selection lose noise
 * releases more through the final model than its one charge allows.
 *
 * The geometric search (tune.mean, tune.c's loop): every repetition draws a candidate, trains
 * on the whole training set (D or D', the canary's), and is scored on V with the tune's
 * Laplace(1/eps0) noise; it stops with probability 1/mean after each.  K and the other
 * repetitions stay hidden; the output is the best one's model and noisy score.  V here is
 * DPO__AT_NV rows B u (u the canary's direction, label +1; more when the score's scale
 * exceeds 3): a model with x > 0 along u scores them all, one with x <= 0 none, far beyond the
 * noise (the test: src/optim/audit_tgeo.c).  At delta > 0 the plan is tune's own
 * (dpo__tune_calibrate: Papernot-Steinke on the RDP curve), the charge its (eps, delta).
 *
 * The validation canary (audit.canary = valid): at delta > 0 most of a repetition's cost is
 * its score, so the canary is a validation row instead: every repetition trains on zero rows
 * in d = 2 (the same in both worlds: x's two signs independent halves), V is the rows B e_0
 * and B e_1 labelled +1 (a model's count is how many of its signs are >= 0) and V' is V plus
 * a zero row labelled +1, which every model without an intercept predicts right (margin 0 is
 * +1): D' adds exactly 1 to every count.  The event and its closed form: audit_tgeo.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"
#include "run/run_audit.h"
#include "run/tune_impl.h"

/* V's rows in the geometric search: the score of a positive model exceeds a negative one's by
 * DPO__AT_NV, against the noise's scale 3 / eps (mean K <= 1000: P(bridged) < 1000 e^-64/2) */
#define DPO__AT_NV 64

struct dpo__audit_tune {
  dpo__tune_t t;
  dpo_config_t *cc[DPO__TUNE_MAXC]; /* candidate i's run on its part */
  dpo_config_t *fc[DPO__TUNE_MAXC]; /* candidate i's final run on F */
  dpo__audit_t ac[DPO__TUNE_MAXC];  /* the construction with candidate i's algorithm */
  dpo_shard_t *part, *valid;        /* a candidate's training part; V */
  dpo_shard_t *valid1;              /* the validation canary's V' (else NULL) */
  double b;                         /* the selection's Laplace scale */
  dpo_privacy_spec_t spec[2];       /* the geometric search: a pure repetition's, a Gaussian's */
  double z;                         /* delta > 0: a Gaussian candidate's multiplier (else NAN) */
};

/* Rows with label +1, zero features; V's row i is B e_(i mod d), label +1 for the first two
 * thirds, -1 after. */
static int dpo__at_shard(const dpo__audit_t *a, int valid, dpo_shard_t **out) {
  const int64_t n = a->n;
  int rc = dpo__audit_shard_zero(a, n, valid ? "tune V" : "tune part", out);
  for (int64_t i = 0; !rc && valid && i < n; i++) {
    (*out)->y[i] = 3 * i >= 2 * n ? -1 : 1; /* 2/3 positive: a model's sign shows */
    (*out)->X[i * a->d + i % a->d] = a->B;
  }
  return rc;
}

void dpo__audit_tune_free(dpo__audit_tune_t *T) {
  if (!T) return;
  for (int i = 0; i < DPO__TUNE_MAXC; i++) {
    dpo_config_destroy(T->cc[i]);
    dpo_config_destroy(T->fc[i]);
  }
  dpo_config_destroy(T->t.cfg);
  dpo_shard_destroy(T->part);
  dpo_shard_destroy(T->valid);
  dpo_shard_destroy(T->valid1);
  free(T);
}

/* The geometric search's V: DPO__AT_NV rows B u, label +1 (u = e_0, or e_0 - e_1 in d = 2:
 * the direction the canary moves x[0] - x[1]), more at a score scale b above 3 (delta > 0:
 * eps0 is about a tenth of eps), so that they stay DPO__AT_NV / 3 scales apart. */
static int dpo__at_geo_valid(const dpo__audit_t *a, double b, dpo_shard_t **out) {
  const int64_t nv = b > 3 ? (int64_t)ceil(DPO__AT_NV * b / 3) : DPO__AT_NV;
  int rc = dpo__audit_shard_zero(a, nv, "tune V", out);
  for (int64_t i = 0; !rc && i < nv; i++) {
    (*out)->X[i * a->d] = a->B;
    if (a->d == 2) (*out)->X[i * a->d + 1] = -a->B;
  }
  return rc;
}

/* The validation canary's V (w = 0: B e_0, B e_1) and V' (w = 1: and the zero row), all
 * labelled +1; the candidates' training rows are n zero rows. */
static int dpo__at_geo_vcanary(const dpo__audit_t *a, dpo__audit_tune_t *T) {
  int rc = dpo__audit_shard_zero(a, a->n, "tune part", &T->part);
  for (int w = 0; !rc && w < 2; w++) {
    dpo_shard_t **v = w ? &T->valid1 : &T->valid;
    if (!(rc = dpo__audit_shard_zero(a, 2 + w, w ? "tune V'" : "tune V", v))) {
      (*v)->X[0] = a->B;                   /* row 0: B e_0 */
      (*v)->X[a->d + 1] = a->B;            /* row 1: B e_1 (a->d = 2) */
    }
  }
  return rc;
}

/* The geometric search: eps0 and each candidate's run at eps0 by tune's code.  Pure eps
 * (delta 0): Liu-Talwar's 3 eps0, every candidate eps0-DP.  delta > 0: Papernot-Steinke's RDP
 * bound (dpo__tune_calibrate), the Gaussian candidates (dp-sgd-rdp) at the multiplier z the
 * calibration gives them, their runs' own budget only admitting the steps (4 eps0 + 1, as
 * tune_plan.c sets it), the pure ones at eps0; the score is Laplace(1/eps0) either way. */
static int dpo__at_geo_setup(dpo__audit_tune_t *T, const dpo__audit_t *a) {
  T->t.n = a->n; /* public: the audit's rows (replace-one), or the declared size */
  if (T->t.rdp && a->add_remove && dpo_privacy_spec_given(a->spec, DPO_SPEC_PUBLIC_N))
    T->t.n = a->spec->public_n;
  int rc = dpo__tune_calibrate(&T->t);
  if (!rc) rc = dpo_mech_laplace_scale(1.0, T->t.eb, 1, &T->b); /* tune.c's run_rep */
  for (int g = 0; g < 2; g++) {
    T->spec[g] = *a->spec;
    T->spec[g].eps = g ? 4 * T->t.eb + 1 : T->t.eb;
    T->spec[g].delta = g ? T->t.delta : 0;
  }
  T->z = NAN;
  for (int i = 0; !rc && i < T->t.nc; i++) {
    const int g = T->t.c[i].gauss;
    T->ac[i] = *a;
    T->ac[i].algo_name = T->t.c[i].algo;
    T->ac[i].dout = a->d;
    T->ac[i].tune = T->ac[i].tune_mean = 0;
    T->ac[i].spec = &T->spec[g];
    T->ac[i].eps = T->spec[g].eps;
    T->ac[i].delta = T->spec[g].delta;
    if (g) T->z = T->t.c[i].z;
    rc = dpo__tune_cand_config(&T->t, &T->t.c[i], 0, &T->cc[i]);
  }
  if (!rc) rc = a->tune_valid ? dpo__at_geo_vcanary(a, T) : dpo__at_geo_valid(a, T->b, &T->valid);
  return rc;
}

int dpo__audit_tune_setup(const dpo_config_t *cfg, const dpo__audit_t *a, dpo__audit_tune_t **out) {
  static const char *const keys[] = {"tune.algo", "tune.step", "tune.epochs", "tune.lr",
                                     "tune.split", NULL};
  dpo__audit_tune_t *T = calloc(1, sizeof *T);
  *out = NULL;
  if (!T) return dpo_err(DPO_ENOMEM, "out of memory");
  /* tune reads its copy of the settings; the keys it reads are the audit's, read here */
  for (int i = 0; keys[i]; i++) dpo_config_get(cfg, keys[i]);
  T->t.comm = MPI_COMM_SELF;
  int rc = dpo_config_copy(cfg, &T->t.cfg);
  if (!rc) rc = dpo_config_set(T->t.cfg, "data.train", "audit:D", "dpopt audit --tune");
  if (!rc) rc = dpo_config_set(T->t.cfg, "run.dir", "audit", "dpopt audit --tune");
  /* the geometric search's scoring rows are the audit's V (a file of their own to tune) */
  if (!rc && a->tune_mean) rc = dpo_config_set(T->t.cfg, "tune.valid", "audit:V", "dpopt audit --tune");
  if (!rc) rc = dpo__tune_settings(&T->t);
  if (!rc && (T->t.split > 0) == a->tune_mean) /* dpo__audit_setup read tune.mean */
    rc = dpo_err(DPO_EINVAL, "dpopt audit --tune: tune.mean and tune.split together");
  if (!rc && a->tune_mean) {
    if ((rc = dpo__at_geo_setup(T, a))) {
      dpo__audit_tune_free(T);
      return rc;
    }
    *out = T;
    return DPO_OK;
  }
  if (!rc) rc = dpo__tune_split_scale(&T->t, &T->b);
  for (int i = 0; !rc && i < T->t.nc; i++) {
    T->ac[i] = *a;
    T->ac[i].algo_name = T->t.c[i].algo;
    T->ac[i].dout = a->d; /* each run's output is its model */
    T->ac[i].tune = 0;
    if (!(rc = dpo__tune_split_config(&T->t, &T->t.c[i], i, &T->cc[i])))
      rc = dpo__tune_split_config(&T->t, &T->t.c[i], -1, &T->fc[i]);
  }
  if (!rc) rc = dpo__at_shard(a, 0, &T->part);
  if (!rc) rc = dpo__at_shard(a, 1, &T->valid);
  if (rc) {
    dpo__audit_tune_free(T);
    return rc;
  }
  *out = T;
  return DPO_OK;
}

/* One geometric search (tune.c's loop) on F: out = (chosen candidate, its model, its noisy
 * score); *spent, *dspent the tune's one charge (3 eps0, or Papernot-Steinke's (eps, delta);
 * each repetition's ledger holds it to its own budget).  The validation canary: trained on
 * the zero rows, scored on world w's V. */
static int dpo__at_geo_trial(const dpo__audit_tune_t *T, const dpo_model_t *m,
                             const dpo_shard_t *F, int w, dpo_rng_t *rng, double *out,
                             double *spent, double *dspent) {
  const dpo_shard_t *V = T->valid1 && w ? T->valid1 : T->valid;
  if (T->valid1) F = T->part;
  double x[DPO__AUDIT_MAXD], best = -INFINITY, sp = 0, dsp = 0, loss, right;
  int rc = DPO_OK;
  *spent = T->t.total_eps;
  *dspent = T->t.total_delta;
  for (int stop = 0; !rc && !stop;) {
    const int k = dpo__tune_geo_pick(&T->t, rng);
    rc = dpo__audit_trial(&T->ac[k], T->cc[k], m, F, rng, x, &sp, &dsp, NULL);
    if (!rc) rc = dpo_model_local_eval(m, V, x, &loss, &right);
    if (!rc) rc = dpo_mech_sample(DPO_MECH_LAPLACE, rng, T->b, &right, 1);
    if (!rc && right > best) {
      best = right;
      if (out) {
        out[0] = k;
        for (int32_t j = 0; j < T->ac[k].d; j++) out[1 + j] = x[j];
        out[1 + T->ac[k].d] = right;
      }
    }
    stop = dpo__tune_geo_stop(&T->t, rng);
  }
  return rc;
}

int dpo__audit_tune_trial(const dpo__audit_tune_t *T, const dpo_model_t *m, const dpo_shard_t *F,
                          int w, dpo_rng_t *rng, double *out, double *spent, double *dspent,
                          dpo__wb_obs_t *wb) {
  if (T->t.split == 0) return dpo__at_geo_trial(T, m, F, w, rng, out, spent, dspent);
  double x[DPO__AUDIT_MAXD], noisy[DPO__TUNE_MAXC], sp = 0, dsp = 0, loss, right;
  int best = 0, rc = DPO_OK;
  /* the selection is charged eps on V's account; each run its own part's (parallel
   * composition: the tune's total is the largest) */
  *spent = T->t.eps;
  *dspent = 0;
  for (int i = 0; !rc && i < T->t.nc; i++) {
    rc = dpo__audit_trial(&T->ac[i], T->cc[i], m, T->part, rng, x, &sp, &dsp, NULL);
    if (!rc) rc = dpo_model_local_eval(m, T->valid, x, &loss, &right);
    if (!rc) rc = dpo__tune_split_pick(noisy, i, right, T->b, rng, &best);
    *spent = fmax(*spent, sp);
    *dspent = fmax(*dspent, dsp);
  }
  /* the final run, observed release by release under the white box (out NULL) */
  if (!rc) rc = dpo__audit_trial(&T->ac[best], T->fc[best], m, F, rng, out ? out + 1 : NULL, &sp,
                                 &dsp, wb);
  if (out) out[0] = best;
  *spent = fmax(*spent, sp);
  *dspent = fmax(*dspent, dsp);
  return rc;
}

/* A key a candidate's run read is read by the audit: the candidates' configurations are
 * copies (dpo__tune_split_config), so without this a key only the algorithm reads
 * (algo.sampling, algo.choose_T) would be refused as unused, though tune itself passes it on */
static void dpo__at_mark(const char *k, const char *v, const char *o, void *arg) {
  const dpo_config_t *const *cc = arg; /* {candidate's config, the audit's} */
  (void)v, (void)o;
  if (dpo_config_is_used(cc[0], k)) dpo_config_get(cc[1], k);
}

void dpo__audit_tune_mark_read(const dpo__audit_tune_t *T, const dpo_config_t *cfg) {
  for (int i = 0; i < T->t.nc; i++)
    for (int f = 0; f < 2; f++) {
      const dpo_config_t *cc[2] = {f ? T->fc[i] : T->cc[i], cfg};
      if (!cc[0]) continue; /* the geometric search has no final runs */
      dpo_config_foreach(cc[0], dpo__at_mark, (void *)cc);
    }
}

int dpo__audit_tune_releases(const dpo__audit_tune_t *T, const dpo_model_t *m,
                             const dpo_shard_t *F, dpo_rng_t *rng, dpo__wb_obs_t *wb) {
  int64_t K = -1;
  int k0 = 0, rc = DPO_OK;
  for (int i = 0; !rc && i < T->t.nc; i++) {
    double sp, dsp;
    dpo__wb_begin(wb, &T->ac[i]);
    rc = dpo__audit_trial(&T->ac[i], T->fc[i], m, F, rng, NULL, &sp, &dsp, wb);
    if (!rc && K >= 0 && wb->nrel != K)
      rc = dpo_err(DPO_EINVAL, "dpopt audit --tune --white-box: the final runs of the grid's "
                   "candidates make different numbers of releases (candidate %d (%s): %lld, "
                   "candidate %d (%s): %lld); give a grid whose final runs have one schedule",
                   k0 + 1, T->t.c[k0].algo, (long long)K, i + 1, T->t.c[i].algo,
                   (long long)wb->nrel);
    if (K < 0) K = wb->nrel;
  }
  return rc;
}

void dpo__audit_tune_geo(const dpo__audit_tune_t *T, double *b, double *eps0, double *z) {
  *b = T->b;
  *eps0 = T->t.eb;
  *z = T->z;
}
