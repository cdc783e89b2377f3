/* The audit's construction and analysis (the run is the audit kind of the run driver,
 * src/run/run_audit.c; dpo_audit_run in dpopt/audit.h): empirical lower bound on the privacy
 * loss of one of dpopt's own private algorithms (statistics in src/privacy/audit.c).
 *
 * From the DECLARED public bounds it builds two neighbouring data sets (privacy.neighbours,
 * default replace-one) on which one row moves the released model as far as the sensitivity
 * allows; the driver runs the algorithm N times on each (in-process through the library, one
 * trial on MPI_COMM_SELF at a time, trials spread over the ranks, secure unseeded noise,
 * in-memory ledger) through dpo__audit_trial; dpo__audit_collect chooses a threshold test of
 * the final model on half the trials and reports the Clopper-Pearson lower bound on eps from
 * the other half, beside the eps the ledger charged.
 *
 * Worst-case construction (every other row is the zero vector, whose gradient is 0 whatever
 * the iterate, so only the audited row differs):
 *  - privacy.clip = l1:C or l2:C: d = 1, the row u = B (B = min(declared row bounds, 4C))
 *    with label +1 in D and -1 in D'.  At x0 = 0 the per-example gradients are -/+ B/2,
 *    clipped to -/+C: their difference 2C is the replace-one sensitivity S1 = 2C exactly.
 *  - declared row bound B only: d = 2, the row B e1 in D and B e2 in D' (label +1), start
 *    x0 = -8/B in every coordinate so the logistic gradients saturate (-B e1 vs -B e2,
 *    an L1 difference of 2B = the sensitivity 2 B1 of (001, (5.2))).
 *  - add-remove: D' is D without the audited row.
 *  - --mechanism laplace: no optimizer, one Laplace release of sum_i y_i u_i (d = 1) with
 *    the sensitivity of the relation (2B replace-one, B add-remove): the power check.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/audit.h"
#include "dpopt/comm.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/audit_int.h"
#include "optim/sco_common.h"
#ifdef DPO_TEST_SWITCHES
#include "privacy/test_switches.h"
#endif

#define DPO__AUDIT_MAXP 64 /* audit.secagg_parties */
#define DPO__TUNE_K 64     /* audit.tune: candidates told apart (tune's DPO__TUNE_MAXC) */

/* The audit's test switches (privacy/test_switches.h): in test builds (-DDPO_TEST_SWITCHES:
 * libdpopt_test.la, dpopt-test) only; set only by dpopt-test's cmd_audit.c.  Elsewhere they
 * are the constants 0: libdpopt.so has no way to set them. */
#ifdef DPO_TEST_SWITCHES
/* --test-drop-share: a secagg trial adds one party's noise share fewer */
static int dpo__audit_drop_share = 0;
void dpo__test_drop_share(int on) { dpo__audit_drop_share = on ? 1 : 0; }
/* --test-keep-all-rows: a secagg trial's party-local sampling keeps every row */
static int dpo__audit_keep_all = 0;
void dpo__test_keep_all_rows(int on) { dpo__audit_keep_all = on ? 1 : 0; }
/* --test-seed S: every trial's noise from a seeded stream */
static int dpo__audit_seeded = 0;
static uint64_t dpo__audit_seed = 0;
void dpo__test_audit_seed(int on, uint64_t seed) {
  dpo__audit_seeded = on ? 1 : 0;
  dpo__audit_seed = seed;
}
#else
#define dpo__audit_drop_share 0
#define dpo__audit_seeded 0
#define dpo__audit_seed ((uint64_t)0)
#endif

int dpo__audit_rng(int rank, dpo_rng_t **rng) {
  return dpo_rng_create(dpo__audit_seeded, dpo__audit_seed, (uint64_t)rank, rng);
}


int dpo__audit_shard_zero(const dpo__audit_t *a, int64_t n, const char *what, dpo_shard_t **out) {
  dpo_shard_t *s = calloc(1, sizeof *s);
  if (!s) return dpo_err(DPO_ENOMEM, "out of memory");
  s->X = calloc((size_t)(n * a->d), sizeof *s->X);
  s->y = malloc((size_t)n * sizeof *s->y);
  if (!s->X || !s->y) {
    dpo_shard_destroy(s);
    return dpo_err(DPO_ENOMEM, "out of memory");
  }
  s->n = s->n_global = n;
  s->d = a->d;
  s->labels = DPO_LABELS_BINARY;
  snprintf(s->source, sizeof s->source, "audit:%s", what);
  for (int64_t i = 0; i < n; i++) s->y[i] = 1;
  *out = s;
  return DPO_OK;
}

/* The data set: zero rows with label +1 and the audited row at index audit.row (default 0;
 * an algorithm that visits rows in a public order may touch it early or late), absent from
 * D' under add-remove. */
int dpo__audit_shard(const dpo__audit_t *a, int which, dpo_shard_t **out) {
  int with_row = !(which == 1 && a->add_remove);
  dpo_shard_t *s = NULL;
  int rc = dpo__audit_shard_zero(a, with_row ? a->n : a->n - 1, which ? "D'" : "D", &s);
  if (rc) return rc;
  if (with_row) {
    int64_t r = a->row;
    if (a->clip_mode) {
      s->X[r] = a->B;
      s->y[r] = which ? -1 : 1;
    } else {
      s->X[r * a->d + (which ? 1 : 0)] = a->B;
    }
  }
  *out = s;
  return DPO_OK;
}

int dpo__audit_ledger(const dpo__audit_t *a, dpo_ledger_t **L) {
  /* the ledger the run would have: the same accountant and neighbouring relation; for dpopt
   * admm an RDP ledger, replace-one (admm_run.c with privacy.accountant = rdp: its default pld
   * would calibrate --sigma-rule ledger by PLD searches in every trial, minutes each) */
  if (a->admm) return dpo_ledger_open_rdp(MPI_COMM_SELF, a->eps, a->delta, NULL, 0, L);
  return dpo_ledger_open_ex(MPI_COMM_SELF, a->eps, a->delta, NULL, 0, a->acct,
                            a->add_remove ? DPO_NEIGHBOURS_ADD_REMOVE : DPO_NEIGHBOURS_REPLACE_ONE,
                            L);
}

/* One Laplace release of sum_i y_i u_i, charged first. */
static int dpo__audit_laplace(const dpo__audit_t *a, const dpo_shard_t *s, dpo_rng_t *rng,
                              double *out, double *spent) {
  dpo_ledger_t *L = NULL;
  const dpo_neighbours_t rel = a->add_remove ? DPO_NEIGHBOURS_ADD_REMOVE : DPO_NEIGHBOURS_REPLACE_ONE;
  double sens = dpo_sens(rel, a->B), b, v = 0, charged, dl;
  int rc = dpo_mech_laplace_scale(sens, a->eps, 1, &b);
  if (!rc) rc = dpo__audit_ledger(a, &L);
  if (!rc) {
    dpo_charge_t c = {.mechanism = DPO_MECH_LAPLACE, .noise_scale = b, .sensitivity = sens,
                      .dim = 1, .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_PURE,
                      .neighbours = rel};
    rc = dpo_ledger_charge(L, &c, &charged);
  }
  if (!rc) {
    for (int64_t i = 0; i < s->n; i++) v += s->y[i] * s->X[i];
    rc = dpo_mech_laplace(rng, b, &v, 1);
  }
  if (!rc) rc = dpo_ledger_spent(L, spent, &dl);
  if (!rc) *out = v;
  dpo_ledger_close(L);
  return rc;
}

/* One run of the algorithm on s (MPI_COMM_SELF); the released model into out[0..d).  The
 * private methods of dpopt admm (audit.admm) are run by src/run/run_audit.c, above admm. */
int dpo__audit_trial(const dpo__audit_t *a, const dpo_config_t *cfg, const dpo_model_t *m,
                     const dpo_shard_t *s, dpo_rng_t *rng, double *out, double *spent,
                     double *dspent, dpo__wb_obs_t *obs) {
  if (a->laplace) {
    *dspent = 0;
    return dpo__audit_laplace(a, s, rng, out, spent);
  }
  dpo_ledger_t *L = NULL;
  dpo_oracle_t *o = NULL;
  dpo_solver_t *sv = NULL;
  double x0[DPO__AUDIT_MAXD];
  for (int32_t j = 0; j < a->d; j++) x0[j] = a->x0;
  dpo_parties_t *pt = NULL;
  dpo_secagg_t *sa = NULL;
  double pe[DPO__AUDIT_MAXP], pd[DPO__AUDIT_MAXP];
  int rc = dpo__audit_ledger(a, &L);
  if (!rc) rc = dpo_oracle_create(MPI_COMM_SELF, m, s, a->has_clip ? &a->clip : NULL, &o);
  /* privacy.trust = secagg: the trial runs on MPI_COMM_SELF (no masks: they cancel exactly,
   * test_secagg, and do not change the release) as audit.secagg_parties = P parties (default
   * 1): party 0 holds the rows, the rank adds the P parties' noise shares, each sized for the
   * P - k honest (privacy.collude = k), so the fixed-point encoding, the shares and the charge
   * are audited.  dpopt-test audit --test-drop-share adds only P - 1 of them (the fault the
   * audit must catch when k = 0). */
  if (!rc && (rc = dpo_parties_from_config(cfg, a->spec, (int)a->sparties, &pt)) == DPO_OK && pt) {
    if (pt->trust != DPO_TRUST_SECAGG) /* central trust with parties.count declared */
      rc = dpo_err(DPO_EUNSUP, "dpopt audit: privacy.trust = %s is not audited with parties "
                   "(only secagg's)", dpo_trust_name(pt->trust));
    for (int k = 0; k < pt->count && !rc; k++) { /* one rank: party 0's; the others hold none */
      pt->first_rank[k] = k ? 1 : 0;
      pt->nranks_of[k] = k ? 0 : 1;
      pe[k] = a->eps;
      pd[k] = a->delta;
    }
    if (pt) pt->nranks = 1;
    const int drop = dpo__audit_drop_share;
    if (!rc) rc = dpo_secagg_create(MPI_COMM_SELF, pt->count - drop, rng, &sa);
    if (!rc) rc = dpo_oracle_set_secagg(o, sa);
    if (!rc) rc = dpo_oracle_set_noise_rng(o, rng);
    if (!rc) rc = dpo_oracle_set_parties(o, pt);
    if (!rc) rc = dpo_ledger_set_parties(L, pt->count, pe, pd);
#ifdef DPO_TEST_SWITCHES
    if (!rc) dpo__oracle_test_keep_all(dpo__audit_keep_all); /* reset after the trial */
#endif
  } /* trust modes and the secagg-only settings without parties: refused by dpo__audit_setup */
  if (!rc)
    rc = dpo_solver_create_spec(o, dpo_algo_find(a->algo_name), cfg, a->spec, rng, L, x0, &sv);
  if (!rc && obs) dpo_solver_set_release_observer(sv, dpo__wb_observe, obs); /* white box */
  if (!rc) {
    dpo_run_opts_t ro;
    dpo_run_opts_default(&ro);
    ro.max_iter = a->iters; /* DPO_ITERS_PLAN unless --iters: the algorithm's own schedule */
    ro.trace_every = 0;
    ro.trace_loss = 0;
    ro.quiet = 1;
    rc = dpo_solver_run(sv, &ro);
    if (rc == DPO_EBUDGET) rc = DPO_OK; /* the last released iterate is the output */
  }
  if (!rc) {
    if (out) memcpy(out, dpo_solver_x(sv), (size_t)a->dout * sizeof *out);
    rc = dpo_ledger_spent(L, spent, dspent);
  }
  dpo_solver_destroy(sv);
  dpo_oracle_destroy(o);
  dpo_secagg_destroy(sa);
  dpo_parties_destroy(pt);
  dpo_ledger_close(L);
#ifdef DPO_TEST_SWITCHES
  dpo__oracle_test_keep_all(0);
#endif
  return rc;
}

static int dpo__audit_setup_admm(const dpo_config_t *cfg, double B2, double Bd, dpo__audit_t *a);
static int dpo__audit_setup_tune(const dpo_config_t *cfg, dpo__audit_t *a);
static int dpo__audit_setup_tune_wb(const dpo_config_t *cfg, dpo__audit_t *a);

/* White box on the methods whose steps are not releases (hidden state: only the final model
 * leaves the run, src/optim/sco_pnsgd.c, sco_phased.c; phased-sc and sc-reduce, sco_sc.c, run
 * phases of phased-sgd on disjoint rows of the public order, so the canary is in the first
 * phase only and every later phase post-processes its output): the final-model audit
 * (dpo__wb_final).  The canary must take its one step at the public start, so it is the first
 * row of the public order (algo.shuffle_seed's permutation, sco_common.c) unless audit.row is
 * given.  phased-erm is refused: its charge covers a phase sensitivity of 4 L eta_i (Lemma
 * 4.7 plus the solver's accuracy allowance), while one row moves the minimizer of a phase's
 * objective, (2 / (eta_i n_i))-strongly convex with the row's gradient at most L / n_i apart
 * twice, by at most L eta_i: its true mu is a quarter of the charged one, so even a halved
 * noise stays below the claim and no audit can flag it (measured with this test: mu_lb 0.066
 * against the claim's 0.268 at eps 1, delta 1e-5, 20000 trials, the noise halved). */
static int dpo__audit_setup_final(const dpo_config_t *cfg, dpo__audit_t *a) {
  const char *base = NULL; /* sc-reduce's convex algorithm A (sco_sc.c) */
  if (!strcmp(a->algo_name, "sc-reduce")) dpo_config_get_str(cfg, "algo.base", "phased-sgd", &base);
  if (!strcmp(a->algo_name, "phased-erm") || (base && !strcmp(base, "phased-erm")))
    return dpo_err(DPO_EUNSUP, "dpopt audit --white-box: phased-erm charges each phase for a "
                   "sensitivity of 4 L eta_i, but one row moves a phase's regularized minimizer by "
                   "at most L eta_i: its mu is a quarter of the charged one, so even a halved noise "
                   "stays within the claim (measured: mu_lb 0.066 against the claim's 0.268, 20000 "
                   "trials, noise halved); audit it without --white-box%s",
                   base ? " (sc-reduce with algo.base = phased-erm runs phased-erm's phases)" : "");
  const dpo_algo_t *alg = dpo_algo_find(a->algo_name);
  if (!alg || !alg->final_only) return DPO_OK; /* observed: the pilot run checks its releases */
  a->final_model = 1;
  if (dpo_config_get(cfg, "audit.row")) return DPO_OK;
  int64_t seed, *p = malloc((size_t)a->n * sizeof *p);
  int rc = dpo_config_get_int(cfg, "algo.shuffle_seed", 1, &seed);
  if (!p) return dpo_err(DPO_ENOMEM, "out of memory");
  if (!rc) {
    dpo__sco_shuffle(p, a->n, (uint64_t)seed);
    a->row = p[0];
  }
  free(p);
  return rc;
}

/* audit.tune: dpopt tune's default search, by parallel composition (src/run/tune_split.c),
 * whose trials src/run/run_audit_tune.c runs; here the refusals that need no tune code and
 * the candidates' algorithms (tune.algo), each one checked as --algo would be.  The canary is
 * in the final part: the analysis of parallel composition bounds each part's release alone
 * for every fixed partition, and the final part's is the one a user keeps. */
static int dpo__audit_setup_tune(const dpo_config_t *cfg, dpo__audit_t *a) {
  static const char *const geo[] = {"tune.valid", "tune.valid_fraction", NULL};
  const char *list = NULL;
  for (int i = 0; geo[i]; i++)
    if (dpo_config_get(cfg, geo[i]))
      return dpo_err(DPO_EINVAL, "%s: dpopt audit --tune places the validation rows itself "
                     "(both worlds share them); %s is not read", dpo_config_origin(cfg, geo[i]),
                     geo[i]);
  /* tune.mean: the geometric search (run_audit_tune.c, the test in audit_tgeo.c) */
  a->tune_mean = dpo_config_get(cfg, "tune.mean") != NULL;
  if (a->tune_mean && a->white_box)
    return dpo_err(DPO_EINVAL, "%s: the geometric search's repetitions all train on the same "
                   "rows and its charge covers the chosen one's release only, so their "
                   "broadcasts are not what the tune releases: audit it without --white-box",
                   dpo_config_origin(cfg, "tune.mean"));
  const char *where = NULL;
  dpo_config_get_str(cfg, "audit.canary", "train", &where);
  a->tune_valid = !strcmp(where, "valid");
  if (!a->tune_valid && strcmp(where, "train"))
    return dpo_err(DPO_EINVAL, "%s: --canary '%s': give train or valid",
                   dpo_config_origin(cfg, "audit.canary"), where);
  if (a->tune_valid && !a->tune_mean)
    return dpo_err(DPO_EINVAL, "%s: --canary valid audits the geometric search's score: give "
                   "--mean too", dpo_config_origin(cfg, "audit.canary"));
  if (dpo_config_get(cfg, "tune.clip"))
    return dpo_err(DPO_EINVAL, "%s: dpopt audit --tune: candidates with their own clip (--clips) "
                   "are not audited; give one --clip", dpo_config_origin(cfg, "tune.clip"));
  if (a->admm || a->algo_name || a->sparties > 1 || a->spec->trust != DPO_TRUST_CENTRAL)
    return dpo_err(DPO_EINVAL, "dpopt audit --tune: give the candidates with --algos (and "
                   "--steps, --epochs, --lrs), not --algo or --admm (the adversary sees the "
                   "tune's output: the chosen candidate and its final model, with --white-box "
                   "every release of the final run; central trust)");
  dpo_config_get_str(cfg, "tune.algo", NULL, &list);
  if (!list)
    return dpo_err(DPO_EINVAL, "dpopt audit --tune: give the candidates' algorithms (--algos A,B)");
  if (snprintf(a->tune_buf, sizeof a->tune_buf, "%s", list) >= (int)sizeof a->tune_buf)
    return dpo_err(DPO_EINVAL, "dpopt audit --tune: --algos too long");
  a->ntune = 0;
  for (char *p = a->tune_buf; *p && a->ntune < DPO__AUDIT_MAXTA;) { /* "a,b" or "a, b" */
    p += strspn(p, ", ");
    if (!*p) break;
    a->tune_algo[a->ntune++] = p;
    p += strcspn(p, ", ");
    if (*p) *p++ = '\0';
  }
  if (!a->ntune) return dpo_err(DPO_EINVAL, "dpopt audit --tune: --algos names no algorithm");
  a->algo_name = a->tune_algo[0]; /* the construction's checks below; the trials run each */
  return DPO_OK;
}

/* What the audit of a train algorithm needs that was not given, in one message (as dpopt
 * train lists its missing requirements): a public bound or a clip for the worst case, and
 * the declared L2 bound the algorithm's step takes its L from (unless the step is given). */
static int dpo__audit_needs(const dpo_config_t *cfg, const dpo__audit_t *a, const dpo_algo_t *algo,
                            double Bd) {
  char miss[2][512];
  int nm = 0;
  dpo_model_t *m = NULL;
  if (!a->has_clip && !isfinite(Bd))
    snprintf(miss[nm++], sizeof miss[0], "declare a public bound (--row-l1-bound / "
             "--row-l2-bound) or --clip: the audit builds its worst case from them");
  int rc = dpo_model_create(a->model_name, a->lambda, &m);
  if (!rc && dpo__algo_L_check(algo, cfg, m))
    snprintf(miss[nm++], sizeof miss[0], "%s", dpo_errmsg());
  dpo_model_destroy(m);
  if (rc) return rc;
  if (nm == 2)
    return dpo_err(DPO_EINVAL, "two requirements are missing: (1) %s; (2) %s", miss[0], miss[1]);
  return nm ? dpo_err(DPO_EINVAL, "%s", miss[0]) : DPO_OK;
}

/* Settings and the worst-case construction from the configuration. */
int dpo__audit_setup(const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                     dpo__audit_t *a) {
  int rc;
  const char *mech;
  double B1, B2;
  memset(a, 0, sizeof *a);
  a->spec = spec;
  a->eps = spec->eps;
  a->delta = spec->delta;
  dpo_config_get_str(cfg, "audit.mechanism", NULL, &mech);
  dpo_config_get_str(cfg, "algo.name", NULL, &a->algo_name);
  dpo_config_get_str(cfg, "audit.admm", NULL, &a->admm);
  dpo_config_get_str(cfg, "model.name", "logreg", &a->model_name);
  if ((rc = dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &B1)) ||
      (rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &B2)) ||
      (rc = dpo_config_get_double(cfg, "model.lambda", 1e-4, &a->lambda)) ||
      (rc = dpo_config_get_int(cfg, "algo.iters", DPO_ITERS_PLAN, &a->iters)) ||
      (rc = dpo_config_get_int(cfg, "audit.n", 10, &a->n)) ||
      (rc = dpo_config_get_int(cfg, "audit.row", 0, &a->row)) ||
      (rc = dpo_config_get_int(cfg, "audit.secagg_parties", 1, &a->sparties)) ||
      (rc = dpo_config_get_bool(cfg, "audit.white_box", 0, &a->white_box)) ||
      (rc = dpo_config_get_bool(cfg, "audit.tune", 0, &a->tune)))
    return rc;
  if (a->tune && (rc = mech ? dpo_err(DPO_EINVAL, "give --tune or --mechanism, not both")
                            : dpo__audit_setup_tune(cfg, a)))
    return rc;
  if (!a->tune && dpo_config_get(cfg, "audit.canary"))
    return dpo_err(DPO_EINVAL, "%s: --canary places the canary of the geometric search's "
                   "audit: give --tune --mean too", dpo_config_origin(cfg, "audit.canary"));
  /* privacy.trust = secagg: the coordinator's view is the unmasked noised sum (dp_common.c
   * reports the pure-eps Polya shares' sum; other secagg releases are refused by the pilot) */
  if (a->white_box && (mech || (dpo_privacy_spec_given(spec, DPO_SPEC_TRUST) &&
                                spec->trust != DPO_TRUST_SECAGG)))
    return dpo_err(DPO_EINVAL, "dpopt audit --white-box observes the noised releases of a "
                   "central or secagg run of dpopt train's algorithms or of --admm dpadmm | "
                   "dpaccadmm | consensus (not --mechanism or privacy.trust = local)");
  if (a->sparties < 1 || a->sparties > DPO__AUDIT_MAXP)
    return dpo_err(DPO_EINVAL, "audit.secagg_parties = %lld: need 1 .. %d", (long long)a->sparties,
                   DPO__AUDIT_MAXP);
  /* what the trials would refuse, refused first: a mode that cannot be audited at all is the
   * one thing to say, before the requirements of dpo__audit_needs */
  const dpo_trust_t trust = spec->trust; /* the spec's default: central */
  if (trust != DPO_TRUST_CENTRAL && trust != DPO_TRUST_SECAGG)
    return dpo_err(DPO_EUNSUP, "dpopt audit: privacy.trust = %s is not audited (central or "
                   "secagg)", dpo_trust_name(trust));
#ifdef DPO_TEST_SWITCHES
  if (trust != DPO_TRUST_SECAGG && (dpo__audit_drop_share || dpo__audit_keep_all))
    return dpo_err(DPO_EINVAL, "dpopt audit %s needs privacy.trust = secagg",
                   dpo__audit_drop_share ? "--test-drop-share" : "--test-keep-all-rows");
#endif
  if (trust != DPO_TRUST_SECAGG && a->sparties > 1)
    return dpo_err(DPO_EINVAL, "dpopt audit --secagg-parties needs privacy.trust = secagg");
  if (spec->clip.norm != DPO_CLIP_NONE) {
    a->clip = spec->clip;
    a->has_clip = 1;
  }
  a->acct = dpo_acct_name(spec->accountant);
  a->add_remove = spec->rel == DPO_NEIGHBOURS_ADD_REMOVE;
  if (!(a->eps > 0) || !isfinite(a->eps) || !(a->delta >= 0 && a->delta < 1))
    return dpo_err(DPO_EINVAL, "give the claimed budget: --eps E (E > 0) and --delta in [0, 1)");
  if (a->n < 2 || (a->iters < 1 && a->iters != DPO_ITERS_PLAN) || a->row < 0 || a->row >= a->n)
    return dpo_err(DPO_EINVAL, "audit.n must be >= 2, algo.iters >= 1 and 0 <= audit.row < audit.n");
  if (strcasecmp(a->model_name, "logreg"))
    return dpo_err(DPO_EUNSUP, "dpopt audit builds logistic-regression data sets (model.name = logreg)");
  double Bd = fmin(isnan(B1) ? INFINITY : B1, isnan(B2) ? INFINITY : B2);
  if (mech) {
    if (strcasecmp(mech, "laplace"))
      return dpo_err(DPO_EINVAL, "audit.mechanism = '%s': expected laplace", mech);
    a->laplace = 1;
    a->clip_mode = 1; /* the label-flip construction in d = 1 */
    a->algo_name = NULL;
    a->admm = NULL;
    a->d = a->dout = 1;
    a->B = isfinite(Bd) ? Bd : 1.0;
    return DPO_OK;
  }
  if (a->admm) return dpo__audit_setup_admm(cfg, B2, Bd, a);
  const dpo_algo_t *algo = a->algo_name ? dpo_algo_find(a->algo_name) : NULL;

  if (!algo || !algo->is_private) {
    /* a typo of a private algorithm's name gets that name */
    const dpo_algo_t *const *al = dpo_algo_list();
    const char *names[64], *sug = NULL;
    int n = 0;
    for (int i = 0; al[i] && n < 64; i++)
      if (al[i]->is_private) names[n++] = al[i]->name;
    if (!algo && a->algo_name) sug = dpo_config_nearest(a->algo_name, names, n);
    char hint[96] = "";
    if (sug) snprintf(hint, sizeof hint, "did you mean '%s'? ", sug);
    return dpo_err(DPO_EINVAL, "--algo '%s': %sgive one of the private algorithms of dpopt train "
                   "--help (or --mechanism laplace)", a->algo_name ? a->algo_name : "", hint);
  }
  if ((rc = dpo__audit_needs(cfg, a, algo, Bd))) return rc;
  for (int i = 1; a->tune && i < a->ntune && !rc; i++) { /* a tune's other candidates */
    const dpo_algo_t *ai = dpo_algo_find(a->tune_algo[i]);
    rc = ai && ai->is_private ? dpo__audit_needs(cfg, a, ai, Bd)
                              : dpo_err(DPO_EINVAL, "--algos '%s': give private algorithms of "
                                        "dpopt train --help", a->tune_algo[i]);
  }
  if (rc) return rc;
  if (a->has_clip) {
    a->clip_mode = 1;
    a->d = 1;
    a->B = fmin(Bd, 4 * a->clip.C); /* |grad| = B/2 >= C at x0 = 0 when B >= 2C */
    a->x0 = 0;
  } else {
    a->d = 2;
    a->B = Bd;
    a->x0 = -8.0 / Bd; /* sigmoid(8) = 0.9997: both rows' gradients saturate */
  }
  if (a->tune_valid) { /* the candidates train on zero rows: x's two signs independent halves */
    a->d = 2;
    a->x0 = 0;
  }
  if ((rc = dpo_config_get_double(cfg, "algo.x0", a->x0, &a->x0))) return rc;
  /* tune: the chosen candidate, then its final model (the geometric search: then its score) */
  a->dout = a->tune ? a->d + 1 + a->tune_mean : a->d;
  if (a->tune && a->white_box) return dpo__audit_setup_tune_wb(cfg, a);
  return a->white_box ? dpo__audit_setup_final(cfg, a) : DPO_OK;
}

/* audit.tune with the white box: every release of the final run is observed (the threat
 * model of train's white box: the final run's broadcasts); the candidates train on rows both
 * worlds share, so their releases and the selection carry nothing of the canary.  A candidate
 * whose steps are not releases (the final-model families) has nothing to observe. */
static int dpo__audit_setup_tune_wb(const dpo_config_t *cfg, dpo__audit_t *a) {
  const char *first = a->algo_name;
  int rc = DPO_OK;
  for (int i = 0; i < a->ntune && !rc; i++) {
    a->algo_name = a->tune_algo[i];
    if (!(rc = dpo__audit_setup_final(cfg, a)) && a->final_model)
      rc = dpo_err(DPO_EUNSUP, "dpopt audit --tune --white-box observes the final run's "
                   "releases; %s releases only its final model: audit the tune without "
                   "--white-box", a->algo_name);
  }
  a->algo_name = first;
  return rc;
}

/* audit.admm: the private methods of dpopt admm, with its keys and defaults (admm_run.c). */
static int dpo__audit_setup_admm(const dpo_config_t *cfg, double B2, double Bd, dpo__audit_t *a) {
  int rc;
  const char *M = a->admm;
  if (strcmp(M, "dpadmm") && strcmp(M, "dpaccadmm") && strcmp(M, "consensus"))
    return dpo_err(DPO_EINVAL, "audit.admm = '%s': expected dpadmm, dpaccadmm or consensus (the "
                   "private methods of dpopt admm)", M);
  if (a->algo_name) return dpo_err(DPO_EINVAL, "give --algo or --admm, not both");
  /* their charges are replace-one (2C/n per gradient, 2C per consensus message) */
  if (a->add_remove)
    return dpo_err(DPO_EUNSUP, "dpopt admm charges replace-one neighbours: audit it with "
                   "privacy.neighbours = replace-one");
  if (!a->has_clip || a->clip.norm != DPO_CLIP_L2)
    return dpo_err(DPO_EINVAL, "the private methods of dpopt admm clip in L2: give --clip l2:C");
  if (!dpo_privacy_spec_given(a->spec, DPO_SPEC_DELTA)) a->delta = 1e-3; /* dpopt admm's default */
  if (!(a->delta > 0))
    return dpo_err(DPO_EINVAL, "the private methods of dpopt admm need --delta > 0");
  /* the spec was read with DPO_SPEC_FOR_AUDIT_ADMM (dpopt/spec.h): sigma rule, mu, sigma */
  a->sigma_rule = dpo_sigma_rule_name(a->spec->sigma_rule);
  a->mu = a->spec->mu;
  a->sigma_fixed = a->spec->sigma;
  if ((rc = dpo_config_get_double(cfg, "admm.rho", 1.0, &a->rho)) ||
      (rc = dpo_config_get_double(cfg, "admm.eta", 0.0, &a->eta)) ||
      (rc = dpo_config_get_int(cfg, "admm.restart", !strcmp(M, "dpaccadmm") ? 50 : 0, &a->restart)))
    return rc;
  if (a->iters == DPO_ITERS_PLAN) a->iters = 200; /* dpopt admm's --maxit default */
  if (!(a->rho > 0) || a->restart < 0)
    return dpo_err(DPO_EINVAL, "admm.rho must be > 0 and admm.restart >= 0");
  /* the label-flip construction (d = 1, row B = min(bound, 4C), x0 = 0) of the clipped runs */
  a->clip_mode = 1;
  a->d = 1;
  a->dout = strcmp(M, "consensus") ? 2 : 1;
  a->B = fmin(Bd, 4 * a->clip.C);
  a->x0 = 0;
  /* eta = 1 / L from the declared L2 row bound, as dpopt admm (else the audited row's norm) */
  if (!(a->eta > 0)) a->eta = 4.0 / (isnan(B2) ? a->B * a->B : B2 * B2);
  return DPO_OK;
}

/* Candidate statistics of a released vector x (length d): the coordinates, their
 * differences, and the projection on dir (mean difference of the selection half). */
static int dpo__audit_nstats(int32_t d) { return d + d * (d - 1) / 2 + 1; }
static double dpo__audit_stat(int k, const double *x, int32_t d, const double *dir) {
  if (k < d) return x[k];
  k -= d;
  for (int32_t i = 0; i < d; i++)
    for (int32_t j = i + 1; j < d; j++)
      if (k-- == 0) return x[i] - x[j];
  double p = 0;
  for (int32_t j = 0; j < d; j++) p += dir[j] * x[j];
  return p;
}
static void dpo__audit_statname(int k, int32_t d, char *buf, size_t cap) {
  if (k < d) {
    snprintf(buf, cap, "x[%d]", k);
    return;
  }
  k -= d;
  for (int32_t i = 0; i < d; i++)
    for (int32_t j = i + 1; j < d; j++)
      if (k-- == 0) {
        snprintf(buf, cap, "x[%d]-x[%d]", i, j);
        return;
      }
  snprintf(buf, cap, "projection on the mean difference");
}

/* Rank 0: outputs X[set][trial * d + j]; choose on even trials, bound on odd ones. */
static int dpo__audit_analyse(const dpo__audit_t *a, double *const X[2], int64_t N, double alpha,
                              dpo_audit_result_t *res) {
  int32_t d = a->dout;
  int64_t ns = (N + 1) / 2, ne = N / 2;
  double dir[DPO__AUDIT_MAXD] = {0};
  double *t[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [half][set] */
  int rc = dpo__wb_halves_new(t, ns + 1);
  if (rc) goto out;
  for (int k = 0; k < 2; k++)
    for (int64_t i = 0; i < N; i += 2)
      for (int32_t j = 0; j < d; j++) dir[j] += (k ? -1.0 : 1.0) * X[k][i * d + j] / (double)ns;
  res->lb_select = -INFINITY;
  res->lb = -INFINITY;
  for (int s = 0; s < dpo__audit_nstats(d); s++) {
    if (d == 1 && s > 0) break; /* one coordinate: every candidate is the same test */
    for (int k = 0; k < 2; k++)
      for (int64_t i = 0; i < N; i++)
        t[i % 2][k][i / 2] = dpo__audit_stat(s, X[k] + i * d, d, dir);
    dpo_audit_event_t ev;
    if ((rc = dpo_audit_best_event(t[0][0], ns, t[0][1], ns, a->delta, alpha, &ev))) goto out;
    if (ev.eps_lb > res->lb_select || s == 0) {
      res->lb_select = ev.eps_lb;
      res->ev = ev;
      dpo__audit_statname(s, d, res->stat, sizeof res->stat);
      res->lb = ne > 0 ? dpo_audit_event_lb(&ev, t[1][0], ne, t[1][1], ne, a->delta, alpha)
                       : -INFINITY;
    }
  }
out:
  dpo__wb_halves_free(t);
  return rc;
}


/* Rank 0, audit.tune: outputs X[set][trial * (d + 1)] = (chosen candidate k, final model x).
 * The canary is in the final part, so the choice does not depend on it, but the final
 * model's law does depend on the choice (each candidate's step scales it): the statistic is
 * x along the canary's direction (x[0], or x[0] - x[1] in d = 2), standardised by its mean
 * and spread among the selection half's trials (both sets) with the same k; the threshold is
 * chosen on that half and bounded on the other (dpo_audit_best_event, as the plain audit). */
static int dpo__audit_tune_analyse(const dpo__audit_t *a, double *const X[2], int64_t N,
                                   double alpha, dpo_audit_result_t *res) {
  const int32_t d = a->d, R = a->dout;
  const int64_t ns = (N + 1) / 2, ne = N / 2;
  double s1[DPO__TUNE_K + 1] = {0}, s2[DPO__TUNE_K + 1] = {0}, cnt[DPO__TUNE_K + 1] = {0};
  double *t[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [half][set] */
  int rc = dpo__wb_halves_new(t, ns + 1);
  if (rc) goto out;
#define DPO__TK(x) ((x)[0] >= 0 && (x)[0] < DPO__TUNE_K ? (int)(x)[0] : DPO__TUNE_K)
#define DPO__TS(x) (d == 1 ? (x)[1] : (x)[1] - (x)[2])
  for (int w = 0; w < 2; w++) /* per-candidate moments of the selection half (and pooled) */
    for (int64_t i = 0; i < N; i += 2) {
      const double *x = X[w] + i * R, v = DPO__TS(x);
      const int k = DPO__TK(x);
      s1[k] += v, s2[k] += v * v, cnt[k] += 1;
    }
  double pool[3] = {0, 0, 0};
  for (int k = 0; k <= DPO__TUNE_K; k++) pool[0] += s1[k], pool[1] += s2[k], pool[2] += cnt[k];
  for (int w = 0; w < 2; w++)
    for (int64_t i = 0; i < N; i++) {
      const double *x = X[w] + i * R;
      const int k = DPO__TK(x);
      const double *m = cnt[k] >= 2 ? (const double[3]){s1[k], s2[k], cnt[k]} : pool;
      const double mu = m[0] / m[2], var = m[1] / m[2] - mu * mu;
      t[i % 2][w][i / 2] = (DPO__TS(x) - mu) / (var > 0 ? sqrt(var) : 1.0);
    }
#undef DPO__TK
#undef DPO__TS
  dpo_audit_event_t ev;
  if ((rc = dpo_audit_best_event(t[0][0], ns, t[0][1], ns, a->delta, alpha, &ev))) goto out;
  res->ev = ev;
  res->lb_select = ev.eps_lb;
  res->lb = ne > 0 ? dpo_audit_event_lb(&ev, t[1][0], ne, t[1][1], ne, a->delta, alpha) : -INFINITY;
  snprintf(res->stat, sizeof res->stat, "%s standardised per chosen candidate",
           d == 1 ? "x[0]" : "x[0]-x[1]");
  snprintf(res->method, sizeof res->method, "tune");
  snprintf(res->assumption, sizeof res->assumption,
           "the tune's output (chosen candidate, final model); canary in the final part, the "
           "partition fixed (parallel composition bounds each part's release alone)");
out:
  dpo__wb_halves_free(t);
  return rc;
}

/* Rank 0: the runs of rank r are t = r, r + P, ... (set t % 2, index t / 2); sort them into
 * all[set], analyse, and fill res. */
int dpo__audit_collect(dpo__audit_t *a, int P, const int *displs, const double *buf,
                       double *const all[2], int64_t N, double alpha, const double sp[2],
                       dpo_audit_result_t *res) {
  int64_t T2 = 2 * N;
  for (int r = 0; r < P; r++)
    for (int64_t t = r, k = 0; t < T2; t += P, k++)
      memcpy(all[t % 2] + (t / 2) * a->dout, buf + displs[r] + k * a->dout, (size_t)a->dout * sizeof *buf);
  /* the claim under test is what the ledger spent: (eps, delta) = sp */
  a->delta = sp[1];
  /* a tune with the white box: the final run's records, analysed as train's */
  int rc = a->tune_mean ? dpo__audit_tgeo_analyse(a, all, N, alpha, sp[0], res)
           : a->tune && !a->white_box ? dpo__audit_tune_analyse(a, all, N, alpha, res)
           : a->final_model ? dpo__wb_final(a, all, N, alpha, sp[1], sp[0], res)
           : a->white_box ? dpo__wb_analyse(a, all, N, a->dout - DPO__WB_HDR, alpha, sp[1], sp[0], res)
                          : dpo__audit_analyse(a, all, N, alpha, res);
  if (rc) return rc;
  snprintf(res->algorithm, sizeof res->algorithm, "%s",
           a->laplace ? "laplace" : a->admm ? a->admm : a->tune ? "tune" : a->algo_name);
  res->claimed_eps = sp[0];
  res->claimed_delta = sp[1];
  res->trials = N;
  res->alpha = alpha;
  res->add_remove = a->add_remove;
  res->violation = res->lb > sp[0];
  return DPO_OK;
}

json_object *dpo__audit_json(const dpo_audit_result_t *res) {
  json_object *j = json_object_new_object();
  if (!j) return NULL;
  json_object_object_add(j, "algorithm", json_object_new_string(res->algorithm));
  json_object_object_add(j, "claimed_eps", json_object_new_double(res->claimed_eps));
  json_object_object_add(j, "claimed_delta", json_object_new_double(res->claimed_delta));
  /* eps_lb as the table shows it (a negative bound says nothing: 0); the raw one beside */
  json_object_object_add(j, "eps_lb",
                         json_object_new_double(isfinite(res->lb) && res->lb > 0 ? res->lb : 0));
  json_object_object_add(j, "eps_lb_raw",
                         isfinite(res->lb) ? json_object_new_double(res->lb) : NULL);
  json_object_object_add(j, "eps_lb_selection_half",
                         json_object_new_double(isfinite(res->lb_select) ? res->lb_select : 0));
  json_object_object_add(j, "trials", json_object_new_int64(res->trials));
  json_object_object_add(j, "alpha", json_object_new_double(res->alpha));
  json_object_object_add(j, "neighbours",
                         json_object_new_string(res->add_remove ? "add-remove" : "replace-one"));
  json_object_object_add(j, "statistic", json_object_new_string(res->stat));
  json_object_object_add(j, "threshold", json_object_new_double(res->ev.thr));
  json_object_object_add(j, "side", json_object_new_string(res->ev.above ? ">" : "<="));
  json_object_object_add(j, "violation", json_object_new_boolean(res->violation));
  json_object_object_add(j, "white_box", json_object_new_boolean(res->white_box));
  if (!strncmp(res->method, "tune", 4)) {
    json_object_object_add(j, "method", json_object_new_string(res->method));
    json_object_object_add(j, "assumption", json_object_new_string(res->assumption));
  }
  if (res->white_box) {
    json_object_object_add(j, "method", json_object_new_string(res->method));
    json_object_object_add(j, "assumption", json_object_new_string(res->assumption));
    json_object_object_add(j, "releases", json_object_new_int64(res->releases));
    json_object_object_add(j, "saturated", json_object_new_double(res->saturated));
    json_object_object_add(j, "eps_lb_summed",
                           json_object_new_double(isfinite(res->lb_summed) ? res->lb_summed : 0));
    if (isfinite(res->mu_claim)) {
      json_object_object_add(j, "mu_lb", json_object_new_double(isfinite(res->mu_lb) ? res->mu_lb : 0));
      json_object_object_add(j, "mu_claim", json_object_new_double(res->mu_claim));
    }
    if (isfinite(res->z_claim)) {
      json_object_object_add(j, "z_ub", json_object_new_double(isfinite(res->z_ub) ? res->z_ub : -1));
      json_object_object_add(j, "z_claim", json_object_new_double(res->z_claim));
    }
    if (isfinite(res->rel_claim)) {
      json_object_object_add(j, "release_eps_lb",
                             json_object_new_double(isfinite(res->rel_lb) ? res->rel_lb : 0));
      json_object_object_add(j, "release_eps_claim", json_object_new_double(res->rel_claim));
    }
  }
#ifdef DPO_TEST_SWITCHES /* dpopt-test: which faults were planted */
  json_object_object_add(j, "test_break_noise",
                         json_object_new_boolean(dpo__test_noise_factor_get() != 1.0));
  json_object_object_add(j, "test_drop_share", json_object_new_boolean(dpo__audit_drop_share));
  json_object_object_add(j, "test_keep_all_rows", json_object_new_boolean(dpo__audit_keep_all));
  json_object_object_add(j, "test_seeded", json_object_new_boolean(dpo__audit_seeded));
#endif
  return j;
}

int dpo_audit_write_json(const char *path, const dpo_audit_result_t *res) {
  json_object *j = dpo__audit_json(res);
  if (!j) return dpo_err(DPO_ENOMEM, "out of memory");
  const char *js = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY);
  int rc = dpo_write_atomic(path, js, strlen(js));
  json_object_put(j);
  return rc;
}
