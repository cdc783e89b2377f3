/* Shared machinery of the private algorithms: public sensitivities, the batches over global
 * ids and the charged-then-noised gradient (central, local, shares and secagg trust).  The budget
 * splits and schedules of (001, Sec. 4) are in dp_schedule.c; sampling, the disjoint buckets
 * and the per-step eps of a sampled step in dp_sample.c.  See dp_common.h. */
#include "optim/dp_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/comm.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/sco_common.h"

void dpo__dp_destroy(dpo__dp_t *dp) {
  if (!dp) return;
  free(dp->perm);
  free(dp->ids);
  free(dp->hash);
  free(dp->gs);
  free(dp->active);
  free(dp->plist);
  free(dp->prow0);
  free(dp->pn);
  dpo_rng_destroy(dp->rng1);
  free(dp);
}

/* Multi-party set-up: the party table comes with the oracle; every party starts active. */
static int dpo__dp_parties_init(dpo__dp_t *dp, dpo_oracle_t *o, const dpo_parties_t *pt) {
  const int P = pt->count;
  if (dpo_ledger_nparties(dpo_solver_ledger(dp->s)) != P)
    return dpo_err(DPO_EINVAL, "dp: %d parties declared but the ledger keeps %d party accounts",
                   P, dpo_ledger_nparties(dpo_solver_ledger(dp->s)));
  dp->active = malloc((size_t)P * sizeof *dp->active);
  dp->plist = malloc((size_t)P * sizeof *dp->plist);
  dp->prow0 = calloc((size_t)P, sizeof *dp->prow0);
  dp->pn = calloc((size_t)P, sizeof *dp->pn);
  if (!dp->active || !dp->plist || !dp->prow0 || !dp->pn)
    return dpo_err(DPO_ENOMEM, "dp: out of memory");
  for (int k = 0; k < P; k++) {
    int64_t r0, nr;
    dp->active[k] = 1;
    for (int r = pt->first_rank[k]; r < pt->first_rank[k] + pt->nranks_of[k]; r++) {
      int rc = dpo_oracle_rank_rows(o, r, &r0, &nr);
      if (rc) return rc;
      if (r == pt->first_rank[k]) dp->prow0[k] = r0;
      dp->pn[k] += nr;
    }
  }
  if (pt->on_exhausted == DPO_EXHAUST_DROP && dp->sampling == DPO__DP_SAMPLE_DISJOINT)
    return dpo_err(DPO_EUNSUP, "privacy.on_party_exhausted = drop is not supported with "
                   "disjoint buckets");
  dp->parties = pt;
  dp->nactive = P;
  dp->n_active = dp->n;
  return DPO_OK;
}

const dpo_algo_param_t dpo__dp_params[] = {
    {"m", "n (full batch)", "batch size (--batch), drawn without replacement"},
    {"iters", "100", "T (--iters): the budget is split over T steps"},
    {"c", "1", "step scale, alpha = c/L"},
    {"noise", "0 (split eps)", "> 0: fixed Laplace scale; the run stops when the ledger refuses"},
    {"accounting", "subsampled", "subsampled (Kuru et al. 2022, (3.5)) | thesis-2gamma (Kuru 2019, Thm 4.1.5)"},
    {NULL, NULL, NULL}};

/* The L1 sensitivity of one example's data-term gradient from the row bound B1: the model's
 * replace-one S1, or under add-remove its per-example bound (a user objective's op bounds
 * differences only, so it has none: -1). */
static double dpo__dp_row_sens(const dpo_model_t *model, double B1, dpo_neighbours_t rel) {
  return rel == DPO_NEIGHBOURS_ADD_REMOVE ? dpo_model_grad_l1_bound(model, B1)
                                          : dpo_model_grad_l1_sens(model, B1);
}

int dpo__dp_check(const dpo_config_t *cfg, const dpo_model_t *model, const dpo_clip_t *clip,
                  dpo_neighbours_t rel, const char *algo) {
  double B1 = NAN;
  int rc = cfg ? dpo_config_get_double(cfg, "data.row_l1_bound", NAN, &B1) : DPO_OK;
  if (rc) return rc;
  /* the minibatch methods sample m of n or split n into buckets: replace-one analyses */
  static const char *const batched[] = {"dp-sgdws", "dp-onlinegdws", "dp-smag"};
  const size_t nb = sizeof batched / sizeof *batched;
  for (size_t i = 0; rel == DPO_NEIGHBOURS_ADD_REMOVE && algo && i < nb; i++)
    if (!strcmp(algo, batched[i]))
      return dpo_err(DPO_EINVAL, "%s samples batches of m of the n rows, whose amplification "
                     "(Kuru et al. 2022, (3.3), disjoint buckets) is proved for replace-one neighbours: set "
                     "privacy.neighbours = replace-one (add-remove: the full-batch methods, or "
                     "dp-sgd-rdp with Poisson batches)", algo);
  if (rel == DPO_NEIGHBOURS_ADD_REMOVE && cfg && dpo_config_get(cfg, "algo.m"))
    return dpo_err(DPO_EINVAL, "algo.m = %s: under add-remove neighbours this algorithm runs on "
                   "the full batch (the papers' amplification by sampling m of n is proved for "
                   "replace-one; Poisson batches: dp-sgd-rdp)", dpo_config_get(cfg, "algo.m"));
  if (rel == DPO_NEIGHBOURS_ADD_REMOVE && cfg && (dpo_config_get(cfg, "parties.n") ||
                                                   dpo_config_get(cfg, "parties.data")))
    return dpo_err(DPO_EINVAL, "this algorithm takes add-remove neighbours with one data owner "
                   "only: with parties set privacy.neighbours = replace-one (add-remove: "
                   "dp-sgd-rdp with algo.sampling = poisson)");
  /* S1 of dpo__dp_create is finite exactly when one of these applies */
  double s1 = isnan(B1) ? -1 : dpo__dp_row_sens(model, B1, rel);
  if (!(clip && clip->norm != DPO_CLIP_NONE) && !(s1 > 0 && isfinite(s1)))
    return dpo_err(DPO_EINVAL,
                   "no public sensitivity for model %s: give privacy.clip (--clip l1:C) or "
                   "data.row_l1_bound (--row-l1-bound B)%s",
                   dpo_model_name(model),
                   dpo_model_grad_l1_sens(model, 1.0) < 0 ? " (this model needs clipping)" : "");
  return DPO_OK;
}

void dpo__dp_public_sens(const dpo_model_t *model, const dpo_clip_t *clip,
                         dpo_neighbours_t rel, double B1, double B2, int64_t d, double *S1,
                         double *S2) {
  *S1 = INFINITY;
  *S2 = INFINITY;
  if (clip && clip->norm == DPO_CLIP_L1) {
    *S1 = dpo_sens(rel, clip->C);
    *S2 = dpo_sens(rel, clip->C);
  } else if (clip && clip->norm == DPO_CLIP_L2) {
    *S1 = dpo_sens(rel, clip->C * sqrt((double)d));
    *S2 = dpo_sens(rel, clip->C);
  }
  if (!isnan(B1)) {
    double s1 = dpo__dp_row_sens(model, B1, rel);
    if (s1 > 0 && s1 < *S1) *S1 = s1;
    if (s1 > 0 && s1 < *S2) *S2 = s1; /* ||u||_2 <= ||u||_1 */
  }
  { /* the argument of (5.2) in L2: the model's per-example gradient bound (logistic ||u~||_2,
     * softmax sqrt(2) ||u~||_2, with an intercept u~ = (u, 1); model.h) */
    double g2 = isnan(B2) ? -1 : dpo_model_grad_l2_bound(model, B2);
    if (g2 > 0 && dpo_sens(rel, g2) < *S2) *S2 = dpo_sens(rel, g2);
  }
}

/* dpo__dp_create's settings: eps, the declared bounds, calibration, the relation and public
 * size, batch, length, step scale, fixed noise and accounting (each refusal names its key). */
static int dpo__dp_settings(dpo_solver_t *s, dpo__dp_t *dp, double *B1, double *B2) {
  int rc;
  const dpo_config_t *cfg = dpo_solver_config(s);
  const dpo_privacy_spec_t *spec = dpo_solver_privacy(s);
  dpo_oracle_t *o = dpo_solver_oracle(s);
  const char *acc = "subsampled";
  if (cfg) {
    if ((rc = dpo_config_get_double(cfg, "data.row_l1_bound", NAN, B1)) ||
        (rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, B2)))
      return rc;
  }
  dp->eps = spec->eps;
  if ((rc = dpo_solver_param_str(s, "accounting", "subsampled", &acc))) return rc;
  dp->calibrate = spec->calibrate == DPO_CALIBRATE_LEDGER;
  /* Under add-remove the row count is private: n becomes the public size (sco_common.h),
   * charged first when it is a noisy count; the steps then share what is left of eps. */
  dp->rel = dpo_ledger_neighbours(dpo_solver_ledger(s));
  if ((rc = dpo__dp_check(cfg, dpo_oracle_model(o), dpo_oracle_clip(o), dp->rel,
                          dpo__solver_algo_name(s))))
    return rc;
  dp->n_held = dp->n;
  if (dp->rel == DPO_NEIGHBOURS_ADD_REMOVE) {
    char src[96];
    if (dpo_oracle_parties(o)) {
      rc = dpo_err(DPO_EINVAL, "add-remove neighbours with parties: dp-sgd-rdp only (this "
                   "algorithm takes them with one data owner)");
      return rc;
    }
    if ((rc = dpo__public_n(s, dp->rel, dp->n, dp->eps, "dp", &dp->n, &dp->count_eps,
                            &dp->count_b, src, sizeof src)))
      return rc;
    dp->eps -= dp->count_eps;
  }
  if ((rc = dpo_solver_param_int(s, "m", dp->n, &dp->m)) ||
      (rc = dpo_solver_param_int(s, "iters", 100, &dp->T)) ||
      (rc = dpo_solver_param(s, "c", 1.0, &dp->c)) ||
      (rc = dpo_solver_param(s, "noise", 0.0, &dp->fixed_b)))
    return rc;
  if (dp->m < 1 || dp->m > dp->n) {
    rc = dpo_err(DPO_EINVAL, "algo.m = %lld: the batch size must be in [1, n = %lld]",
                 (long long)dp->m, (long long)dp->n);
    return rc;
  }
  if (dp->T < 1) {
    rc = dpo_err(DPO_EINVAL, "algo.iters = %lld must be >= 1 (the budget is split over it)",
                 (long long)dp->T);
    return rc;
  }
  if (!(dp->c > 0) || !isfinite(dp->c)) {
    rc = dpo_err(DPO_EINVAL, "algo.c = %g must be finite and > 0", dp->c);
    return rc;
  }
  if (!(dp->fixed_b >= 0) || !isfinite(dp->fixed_b)) {
    rc = dpo_err(DPO_EINVAL, "algo.noise = %g must be finite and >= 0", dp->fixed_b);
    return rc;
  }
  if (dp->fixed_b == 0 && !(dp->eps > 0 && isfinite(dp->eps))) {
    rc = dpo_err(DPO_EINVAL, "privacy.eps must be given (> 0): the algorithm splits it over its "
                 "iterations");
    return rc;
  }
  if (!strcasecmp(acc, "subsampled")) dp->accounting = DPO__DP_ACC_SUBSAMPLED;
  else if (!strcasecmp(acc, "thesis-2gamma")) dp->accounting = DPO__DP_ACC_THESIS2G;
  else {
    rc = dpo_err(DPO_EINVAL, "algo.accounting = '%s': expected subsampled or thesis-2gamma", acc);
    return rc;
  }
  return DPO_OK;
}

/* The plan dpo__dp_create declares: every step charges its release before making it. */
static int dpo__dp_plan(dpo_solver_t *s, const dpo__dp_t *dp) {
  /* any prefix of the steps is covered */
  dpo_plan_t plan = {.kind = DPO_PLAN_PER_STEP, .steps = dp->T};
  double beps = NAN, bdelta = NAN;
  if (dp->parties && dp->parties->trust == DPO_TRUST_SECAGG &&
      !dpo_ledger_budget(dpo_solver_ledger(s), &beps, &bdelta) && !(bdelta > 0))
    snprintf(plan.what, sizeof plan.what, "up to %lld steps, each charged for its securely "
             "aggregated distributed discrete Laplace release (Polya shares) before it is made "
             "(pure eps, budget split over the steps)", (long long)dp->T);
  else if (dp->parties && dp->parties->trust == DPO_TRUST_SECAGG)
    snprintf(plan.what, sizeof plan.what, "up to %lld steps, each charged for its securely "
             "aggregated distributed discrete Gaussian release before it is made (rdp-rho, "
             "schedule scaled to fit the budget by RDP composition)", (long long)dp->T);
  else if (dp->count_eps > 0)
    snprintf(plan.what, sizeof plan.what, "a noisy row count (Laplace, eps %.6g; add-remove "
             "neighbours), then up to %lld steps, each charged for its Laplace release before it "
             "is made (pure eps, the rest of the budget split over the steps)", dp->count_eps,
             (long long)dp->T);
  else
    snprintf(plan.what, sizeof plan.what, "up to %lld steps, each charged for its Laplace "
             "release before it is made (pure eps, budget split over the steps)",
             (long long)dp->T);
  return dpo_solver_declare_plan(s, &plan);
}

int dpo__dp_create(dpo_solver_t *s, int need_L, dpo__dp_t **out) {
  int rc = DPO_OK;
  dpo_oracle_t *o = dpo_solver_oracle(s);
  const dpo_model_t *model = dpo_oracle_model(o);
  const dpo_clip_t *clip = dpo_oracle_clip(o);
  double B1 = NAN, B2 = NAN;
  dpo__dp_t *dp = calloc(1, sizeof *dp);
  *out = NULL;
  if (!dp) return dpo_err(DPO_ENOMEM, "dp: out of memory");
  dp->s = s;
  dp->d = dpo_solver_dim(s);
  dp->n = dpo_solver_n(s);
  dp->eps = NAN;
  if (!dpo_solver_ledger(s) || !dpo_solver_rng(s)) {
    rc = dpo_err(DPO_EINVAL, "a private algorithm needs the privacy ledger and a noise stream");
    goto fail;
  }
  if ((rc = dpo__dp_settings(s, dp, &B1, &B2))) goto fail;
  /* Public sensitivities (privacy rule 1): from clipping or declared bounds, never the data.
   * These algorithms average over a public n or sample m of n without replacement (001 (3.3)):
   * replace-one analyses, so the per-example bounds double (dpo_sens); under add-remove (full
   * batch, n = n_pub) the sum moves by the bound itself. */
  dpo__dp_public_sens(model, clip, dp->rel, B1, B2, dp->d, &dp->S1, &dp->S2);
  if (!isfinite(dp->S1)) { /* dpo__dp_check passed: a clip bound C that is not finite */
    rc = dpo_err(DPO_EINVAL, "no finite public sensitivity for model %s", dpo_model_name(model));
    goto fail;
  }
  rc = dpo_solver_constants(s, &dp->L, &dp->mu);
  if (rc) {
    if (need_L) goto fail;
    dp->L = NAN;
    dpo_errclear();
    rc = DPO_OK;
  }
  dp->lambda = dpo_model_lambda(model);
  dp->sampling = DPO__DP_SAMPLE_WOR;
  for (dp->hcap = 16; dp->hcap < 2 * dp->m; dp->hcap *= 2) {
  }
  dp->ids = malloc((size_t)dp->m * sizeof *dp->ids);
  dp->hash = malloc((size_t)dp->hcap * sizeof *dp->hash);
  dp->gs = malloc((size_t)dp->d * sizeof *dp->gs);
  if (!dp->ids || !dp->hash || !dp->gs) {
    rc = dpo_err(DPO_ENOMEM, "dp: out of memory (m = %lld)", (long long)dp->m);
    goto fail;
  }
  if (dpo_oracle_parties(o) && (rc = dpo__dp_parties_init(dp, o, dpo_oracle_parties(o))))
    goto fail;
  if ((rc = dpo__dp_plan(s, dp))) goto fail;
  *out = dp;
  return DPO_OK;
fail:
  dpo__dp_destroy(dp);
  return rc;
}

/* Secure aggregation (privacy.trust = secagg; src/privacy/secagg.c has the derivation).
 * Pure eps (budget delta = 0): the release is the distributed discrete Laplace (Polya shares
 * of the P - k honest parties sum to it exactly), charged un-amplified at the per-step target
 * eps_t with the L1 sensitivity S1 of one rank's sum (dpo_secagg_lap_params: *lap_eps, the
 * spec's sigma = t and lap_honest = P - k).  Otherwise the
 * per-step pure target eps_t of the schedule is mapped to a per-release rho_t = c eps_t with
 * c = sqrt(T / sum_s eps_s^2) / z over the plan dpo__dp_calibrate saw (T / (z eps) for an even
 * split), z the multiplier for which T unsampled Gaussian releases of multiplier z
 * (RDP alpha / (2 z^2) = the rdp-rho curve with rho = 1/z) fit (eps, delta) by the RDP
 * conversion (dpo_rdp_calibrate): sum_t rho_t^2 = T / z^2, and the ledger composes the actual
 * charges.  The L2 sensitivity S2 of one rank's
 * sum sets gamma, sigma (dpo_secagg_params, P - k honest shares).  Data-free range check: the
 * encoded data part of the sum stays below 2^62 (no wrap; see secagg.c). */
static int dpo__dp_secagg_rho(const dpo__dp_t *dp, int64_t na, int64_t m, double eps_target,
                              dpo_oracle_noise_t *nz, double *rho, double *lap_eps) {
  const dpo_parties_t *pt = dp->parties;
  double beps = NAN, bdelta = NAN, z = NAN, gamma = NAN;
  uint64_t sigma = 0;
  int rc, size = 1;
  MPI_Comm_size(dpo_oracle_comm(dpo_solver_oracle(dp->s)), &size);
  if (dp->fixed_b > 0)
    return dpo_err(DPO_EUNSUP, "privacy.trust = secagg calibrates its own noise: algo.noise "
                   "(a fixed Laplace scale) does not apply");
  if ((rc = dpo_ledger_budget(dpo_solver_ledger(dp->s), &beps, &bdelta))) return rc;
  if (!(bdelta > 0)) { /* pure eps: Polya shares, a "laplace" charge */
    uint64_t t = 0;
    if ((rc = dpo_secagg_lap_params(dp->S1, dp->d, eps_target, &gamma, &t, lap_eps, NULL)))
      return rc;
    if ((rc = dpo_secagg_word(m, dp->S1, gamma, size, pt->count > size ? pt->count : size,
                              dp->d, t, pt->count - pt->collude, &nz->bits)))
      return rc;
    nz->kind = DPO_ONOISE_SECAGG;
    nz->scale = gamma;
    nz->nshares = size;
    nz->sigma = t;
    nz->lap_honest = pt->count - pt->collude;
    nz->claim = *lap_eps; /* what the parties' guards compare their own price with */
    *rho = NAN;
    return DPO_OK;
  }
  if (!isfinite(dp->S2) || !(dp->S2 > 0))
    return dpo_err(DPO_EINVAL, "privacy.trust = secagg needs a finite L2 sensitivity (clip or "
                   "--row-l2-bound)");
  double eps = dp->eps < beps ? dp->eps : beps;
  /* The plan's T releases with targets e_t (sum eps) get rho_t = K e_t, K fixed so that
   * sum rho_t^2 = T / z^2: the RDP of T releases of multiplier z, which fits (eps, delta).
   * Equal shares give K = T / (z eps); unequal ones (dp-nag-opt's (4.4)) need the sum of
   * squares, or their largest releases exhaust the budget early.  1 - 1e-9 absorbs rounding. */
  const int planned = dp->plan_T > 0 && dp->plan_e2 > 0;
  const int64_t Tr = planned ? dp->plan_T : dp->T;
  if ((rc = dpo_rdp_calibrate("none", na, na, Tr, eps, bdelta, &z))) return rc;
  double rt = planned ? eps_target * sqrt((double)Tr / dp->plan_e2) / z * (1 - 1e-9)
                  : eps_target * (double)dp->T / (z * eps);
  if ((rc = dpo_secagg_params(dp->S2, dp->d, pt->count, pt->collude, rt, &gamma, &sigma, rho,
                              NULL)))
    return rc;
  if ((rc = dpo_secagg_word(m, dp->S2, gamma, size, pt->count > size ? pt->count : size, dp->d,
                            sigma, 0, &nz->bits)))
    return rc;
  nz->kind = DPO_ONOISE_SECAGG;
  nz->scale = gamma;
  nz->nshares = size;
  nz->sigma = sigma;
  nz->lap_honest = 0;
  nz->claim = *rho;
  *lap_eps = NAN;
  return DPO_OK;
}

/* m of the na active rows (all for a full batch) mapped in order onto the active parties'
 * global ranges (monotone: the ids stay sorted), and how the charge treats the sample. */
static void dpo__dp_parties_batch(dpo__dp_t *dp, int64_t m, int64_t na, int central,
                                  dpo_batch_t *batch, dpo_sampling_t *sampling,
                                  dpo_accounting_t *accounting) {
  if (m < na) dpo__dp_sample(dpo_solver_rng(dp->s), na, m, dp->ids, dp->hash, dp->hcap);
  else for (int64_t i = 0; i < m; i++) dp->ids[i] = i;
  int k = 0;
  int64_t off = 0; /* active rows before party k */
  for (int64_t i = 0; i < m; i++) {
    while (!dp->active[k] || dp->ids[i] >= off + dp->pn[k]) {
      if (dp->active[k]) off += dp->pn[k];
      k++;
    }
    dp->ids[i] = dp->prow0[k] + (dp->ids[i] - off);
  }
  batch->ids = dp->ids;
  batch->m = m;
  if (m < na) {
    *sampling = DPO_SAMPLING_WOR;
    /* local / shares: the coordinator drew the batch (and broadcast its ids), so
     * amplification by subsampling does not hold against it: the batch is charged
     * un-amplified ("wor" + "pure": sampled, not amplified) */
    *accounting = !central ? DPO_ACCOUNTING_PURE
                  : dp->accounting == DPO__DP_ACC_THESIS2G ? DPO_ACCOUNTING_THESIS_2GAMMA
                                                            : DPO_ACCOUNTING_SUBSAMPLED;
  }
}

/* on_party_exhausted = drop: party `refused` leaves; journal, trace and user are told. */
static int dpo__dp_drop_party(dpo__dp_t *dp, int refused, int64_t t) {
  const dpo_parties_t *pt = dp->parties;
  char why[512];
  snprintf(why, sizeof why, "%s", dpo_errmsg());
  dp->active[refused] = 0;
  dp->nactive--;
  dp->n_active -= dp->pn[refused];
  pt->dropped_step[refused] = t;
  int rc = dpo_ledger_party_event(dpo_solver_ledger(dp->s), "party_dropped", refused, t);
  if (rc) return rc;
  if (pt->trace)
    fprintf(pt->trace, "# step %lld: party %d dropped (its budget is exhausted); %d parties, "
            "%lld rows remain\n", (long long)t, refused, dp->nactive, (long long)dp->n_active);
  dpo_msg("step %lld: %s; party %d leaves, %d parties go on", (long long)t, why, refused,
          dp->nactive);
  return DPO_OK;
}

/* dpo__dp_grad in a multi-party run.  The batch is drawn from the ACTIVE parties' global ids
 * (m of n_active; the full batch is every active row).  The release is charged to the global
 * account and to every active party (dpo_ledger_charge_parties) before anything is computed.
 * A party that would exceed its budget is refused; with privacy.on_party_exhausted = drop it
 * leaves (journal event + trace line), the batch and the charge are redone without it, and
 * the others go on; with stop (or when the global account refuses) DPO_EBUDGET ends the run.
 * Noise by trust mode: central = Laplace(b) on the mean on rank 0, as in dpo__dp_grad;
 * local / shares = noise on the SUM inside the oracle's worker path, before the reduce: one
 * example changes its party's local sum by at most S1 (the party's share of the batch sum;
 * S1/m in the mean), so each rank with rows adds Laplace(bs), bs = scale(S1, eps0) (local), or
 * every rank adds its exact integer share of one discrete Laplace(bs) (shares, see
 * src/privacy/parties.c); g = w (sum + noise) / m is post-processing.
 * Amplification: rank 0 draws the batch and every rank receives its ids, so sampling m of n
 * amplifies only against observers who do not know the batch.  Central keeps it (it protects
 * against outsiders only); local and shares charge eps0 = the per-step target UN-amplified
 * (sampling "wor", accounting "pure"), which holds against the coordinator too (local) or
 * against every rank that sees only the released iterates (shares). */
static int dpo__dp_grad_parties(dpo__dp_t *dp, const double *x, int64_t t, double eps_target,
                                double w, double *g, double *b_out) {
  dpo_solver_t *s = dp->s;
  dpo_oracle_t *o = dpo_solver_oracle(s);
  const dpo_parties_t *pt = dp->parties;
  const int32_t d = dp->d;
  const int central = pt->trust == DPO_TRUST_CENTRAL;
  int rc;
  if (!(w > 0) || !isfinite(w)) return dpo_err(DPO_EINVAL, "dp: gradient weight %g", w);
  for (;;) {
    const int64_t na = dp->n_active;
    const int64_t m = dp->m == dp->n || dp->m > na ? na : dp->m;
    double eps0 = NAN, b = NAN, sens, charged = 0, rc2rho = NAN;
    dpo_batch_t batch = {NULL, na};
    dpo_sampling_t sampling = DPO_SAMPLING_NONE;
    dpo_accounting_t accounting = DPO_ACCOUNTING_PURE;
    if (dp->sampling == DPO__DP_SAMPLE_DISJOINT) {
      if (t >= dp->nbuckets)
        return dpo_err(DPO_EINVAL, "dp: step %lld but only %lld disjoint buckets", (long long)t,
                       (long long)dp->nbuckets);
      memcpy(dp->ids, dp->perm + t * dp->m, (size_t)dp->m * sizeof *dp->ids);
      qsort(dp->ids, (size_t)dp->m, sizeof *dp->ids, dpo__dp_cmp_i64);
      batch.ids = dp->ids;
      batch.m = dp->m;
      sampling = DPO_SAMPLING_DISJOINT;
    } else if (m < na || dp->nactive < pt->count) { /* parties, a minibatch or a drop */
      dpo__dp_parties_batch(dp, m, na, central, &batch, &sampling, &accounting);
    }
    dpo__dp_t tmp = *dp; /* amplification over the active rows: m of na (central only) */
    tmp.m = central ? m : na;
    tmp.n = na;
    dpo_oracle_noise_t sz = {DPO_ONOISE_NONE, 0.0, 1, 0, 0, 0, 0, 0};
    if (pt->trust == DPO_TRUST_SECAGG) {
      if ((rc = dpo__dp_secagg_rho(dp, na, m, eps_target, &sz, &rc2rho, &eps0))) return rc;
      sens = sz.lap_honest ? dp->S1 : dp->S2;
      b = sz.lap_honest ? sz.scale * (double)sz.sigma : NAN; /* gamma t, on the sum */
    } else if (central) {
      sens = w * dp->S1 / (double)m;
      if (dp->fixed_b > 0) {
        b = dp->fixed_b;
        rc = dpo_mech_laplace_eps(sens, b, d, &eps0);
      } else {
        rc = dpo__dp_eps0(&tmp, eps_target, &eps0);
        if (!rc) rc = dpo_mech_laplace_scale(sens, eps0, d, &b);
      }
    } else {
      sens = dp->S1; /* on the sum */
      if (dp->fixed_b > 0) {
        b = dp->fixed_b * (double)m / w;
        rc = dpo_mech_laplace_eps(sens, b, d, &eps0);
      } else {
        rc = dpo__dp_eps0(&tmp, eps_target, &eps0);
        if (!rc) rc = dpo_mech_laplace_scale(sens, eps0, d, &b);
      }
    }
    if (rc) return rc;
    dpo_charge_t c;
    memset(&c, 0, sizeof c);
    c.mechanism = DPO_MECH_LAPLACE;
    c.eps = eps0;
    c.noise_scale = b;
    c.sensitivity = sens;
    c.dim = d;
    c.m = m;
    c.n = na;
    c.sampling = sampling;
    c.accounting = accounting;
    c.group = 1;
    c.step = t;
    if (pt->trust == DPO_TRUST_SECAGG && sz.lap_honest) { /* pure, un-amplified */
      c.sampling = DPO_SAMPLING_NONE;
      c.accounting = DPO_ACCOUNTING_PURE;
    } else if (pt->trust == DPO_TRUST_SECAGG) { /* un-amplified: the coordinator drew the batch */
      c.mechanism = DPO_MECH_RDP_RHO;
      c.rho = rc2rho;
      c.eps = 0;
      c.noise_scale = 0;
      c.sampling = DPO_SAMPLING_NONE;
      c.accounting = DPO_ACCOUNTING_RDP;
      c.neighbours = dpo_ledger_neighbours(dpo_solver_ledger(s));
    }
    int np = 0, refused = -2;
    for (int k = 0; k < pt->count; k++)
      if (dp->active[k]) dp->plist[np++] = k;
    /* Charge BEFORE anything data-dependent is computed or released (privacy rule 2). */
    rc = dpo_ledger_charge_parties(dpo_solver_ledger(s), &c, np, dp->plist, &charged, &refused);
    if (rc == DPO_EBUDGET && refused >= 0 && pt->on_exhausted == DPO_EXHAUST_DROP &&
        dp->nactive > 1 && dp->sampling != DPO__DP_SAMPLE_DISJOINT) {
      if ((rc = dpo__dp_drop_party(dp, refused, t))) return rc;
      dpo_errclear();
      continue;
    }
    if (rc) return rc;
    dp->last_eps0 = eps0;
    dp->last_charged = charged;
    dp->last_delta1 = central ? sens : w * sens / (double)m;
    dp->last_b = central ? b : w * b / (double)m; /* the scale seen in the mean */
    dpo_oracle_noise_t nz = {DPO_ONOISE_NONE, 0.0, 1, 0, 0, 0, 0, 0};
    if (pt->trust == DPO_TRUST_SECAGG) {
      nz = sz;
      /* the Laplace scale with the same variance as the total noise (trace column only) */
      if (sz.lap_honest) {
        dp->last_b = w * b * sqrt((double)pt->count / sz.lap_honest) / (double)m;
      } else {
        dp->last_b = w * sz.scale * (double)sz.sigma * sqrt((double)pt->count / 2.0) / (double)m;
        dp->last_eps0 = rc2rho;
      }
    } else if (!central) {
      MPI_Comm comm = dpo_oracle_comm(o);
      int size = 1;
      MPI_Comm_size(comm, &size);
      nz.kind = pt->trust == DPO_TRUST_LOCAL ? DPO_ONOISE_LOCAL_LAPLACE : DPO_ONOISE_SHARE_LAPLACE;
      nz.scale = b;
      nz.nshares = pt->trust == DPO_TRUST_LOCAL ? 1 : size;
      nz.claim = eps0; /* every party's guard prices b itself (privacy/guard.h) */
      nz.pass = c.sampling == DPO_SAMPLING_DISJOINT ? c.group + 1 : 0;
    }
    int64_t used = 0;
    rc = dpo_oracle_eval_sums_noised(o, x, batch.ids ? &batch : NULL, central ? NULL : &nz, 0,
                                     NULL, dp->gs, &used);
    if (rc) return rc;
    if (used != m)
      return dpo_err(DPO_EINVAL, "dp: the oracle used %lld rows for a batch of %lld",
                     (long long)used, (long long)m);
    for (int32_t j = 0; j < d; j++) g[j] = w * (dp->gs[j] / (double)used);
    if (central && (rc = dpo_mech_sample(DPO_MECH_LAPLACE, dpo_solver_rng(s), b, g, d))) return rc;
    if (pt->trust == DPO_TRUST_SECAGG && sz.lap_honest) {
      /* the coordinator sees the unmasked sum plus the honest Polya shares: the discrete
       * Laplace of scale b on the sum, charged eps0 (the white-box audit's release) */
      const double u = w / (double)m, q = batch.ids && m < na ? (double)m / (double)na : 1.0;
      dpo_release_t rel = {t, DPO_MECH_LAPLACE, u * b, u * sens, q, eps0,
                           c.sampling, m, na, d, g, x, u};
      if ((rc = dpo_solver_release(s, &rel))) return rc;
    } else if (pt->trust == DPO_TRUST_SECAGG) {
      /* discrete Gaussian shares (Kairouz, Liu and Steinke 2021): the coordinator sees the
       * decoded sum, the rounded data plus the shares; the charge counts the P - k honest
       * ones, each of sigma steps gamma, on one party's L2 sensitivity S2 (the white-box
       * audit's release: a Gaussian of the honest shares' variance) */
      const double u = w / (double)m, q = batch.ids && m < na ? (double)m / (double)na : 1.0;
      const double sh = sz.scale * (double)sz.sigma * sqrt((double)(pt->count - pt->collude));
      dpo_release_t rel = {t, DPO_MECH_GAUSSIAN, u * sh, u * sens, q, NAN,
                           c.sampling, m, na, d, g, x, u};
      if ((rc = dpo_solver_release(s, &rel))) return rc;
    }
    dpo__dp_add_reg(dp, x, w, g);
    if (b_out) *b_out = dp->last_b;
    return DPO_OK;
  }
}

/* The charge of step t with target eps_target and weight w (single-owner runs): a pure
 * function of public quantities, shared by dpo__dp_grad and dpo__dp_calibrate, so that the
 * calibration composes exactly the charges the run will make. */
static int dpo__dp_step_charge(const dpo__dp_t *dp, int64_t t, double eps_target, double w,
                               dpo_charge_t *c) {
  const double delta1 = w * dp->S1 / (double)dp->m;
  double eps0 = NAN, b = NAN;
  int rc;
  if (!(w > 0) || !isfinite(w)) return dpo_err(DPO_EINVAL, "dp: gradient weight %g", w);
  if (dp->fixed_b > 0) {
    b = dp->fixed_b;
    if ((rc = dpo_mech_laplace_eps(delta1, b, dp->d, &eps0))) return rc;
  } else {
    if ((rc = dpo__dp_eps0(dp, eps_target, &eps0))) return rc;
    if ((rc = dpo_mech_laplace_scale(delta1, eps0, dp->d, &b))) return rc;
  }
  memset(c, 0, sizeof *c);
  c->mechanism = DPO_MECH_LAPLACE;
  c->eps = eps0;
  c->noise_scale = b;
  c->sensitivity = delta1;
  c->dim = dp->d;
  c->m = dp->m;
  c->n = dp->n;
  c->sampling = DPO_SAMPLING_NONE;
  c->accounting = DPO_ACCOUNTING_PURE;
  if (dp->sampling == DPO__DP_SAMPLE_DISJOINT) {
    c->sampling = DPO_SAMPLING_DISJOINT;
  } else if (dp->m < dp->n) {
    c->sampling = DPO_SAMPLING_WOR;
    c->accounting = dp->accounting == DPO__DP_ACC_THESIS2G ? DPO_ACCOUNTING_THESIS_2GAMMA
                                                      : DPO_ACCOUNTING_SUBSAMPLED;
  }
  c->group = 1;
  c->step = t;
  c->neighbours = dp->rel;
  return DPO_OK;
}

typedef struct {
  const dpo__dp_t *dp;
  double w, c;
  const double *e;
  int64_t ne;
} dpo__dp_plan_t;

/* Release t of the plan into the trial ledger F: the noisy count first when one was charged
 * (it is in the run's ledger already), then step t charged for target c * e[t or 0]. */
static int dpo__dp_plan_charge(void *arg, dpo_ledger_t *F, int64_t t) {
  const dpo__dp_plan_t *p = arg;
  if (p->dp->count_eps > 0 && t-- == 0)
    return dpo__sco_count_charge(F, p->dp->rel, p->dp->count_b, NULL);
  dpo_charge_t ch;
  const double et = p->e[p->ne == 1 ? 0 : t] * p->c; /* the same product the caller stores */
  int rc = dpo__dp_step_charge(p->dp, t, et, p->w, &ch);
  if (!rc) rc = dpo_ledger_charge(F, &ch, NULL);
  return rc == DPO_EINVAL ? DPO_EBUDGET : rc; /* no mechanism for so large a target: no fit */
}

/* Does that plan (t < T) fit (beps, bdelta) under the run ledger's accountant and relation? */
static int dpo__dp_plan_fits(const dpo__dp_t *dp, double w, const double *e, int64_t ne,
                             int64_t T, double c, double beps, double bdelta, int *fits) {
  dpo__dp_plan_t p = {dp, w, c, e, ne};
  const int64_t nc = T + (dp->count_eps > 0);
  return dpo_ledger_plan_fits_ex(dpo_solver_ledger(dp->s), beps, bdelta, nc, nc,
                                 dpo__dp_plan_charge, &p, fits);
}

int dpo__dp_calibrate(dpo__dp_t *dp, double w, double *e, int64_t ne, int64_t T) {
  double beps = NAN, bdelta = 0, lo = 1, hi = 2;
  int rc, fits = 0;
  dp->calib_c = 1;
  if (dp->parties && T > 0) { /* kept for secagg's rho_t (dpo__dp_secagg_rho) */
    long double s2 = 0;
    for (int64_t i = 0; i < T; i++) s2 += (long double)e[ne == 1 ? 0 : i] * e[ne == 1 ? 0 : i];
    dp->plan_T = T;
    dp->plan_e2 = (double)s2;
  }
  if (!dp->calibrate || dp->fixed_b > 0 || dp->parties || dp->sampling == DPO__DP_SAMPLE_DISJOINT)
    return DPO_OK;
  if ((rc = dpo_ledger_budget(dpo_solver_ledger(dp->s), &beps, &bdelta))) return rc;
  if (!(bdelta > 0)) return DPO_OK; /* pure budget: the ledger composes by the basic sum */
  if (dp->eps + dp->count_eps < beps) beps = dp->eps + dp->count_eps;
  /* c = 1 is the basic split, which every accountant accepts (the ledger's bound (A) is the
   * basic sum); grow hi until refused, then bisect; lo is always a c the ledger accepted */
  for (;;) {
    if ((rc = dpo__dp_plan_fits(dp, w, e, ne, T, hi, beps, bdelta, &fits))) return rc;
    if (!fits) break;
    lo = hi;
    if (hi >= 0x1p20) break;
    hi *= 2;
  }
  while (fits == 0 && hi - lo > 1e-6 * lo) {
    double mid = 0.5 * (lo + hi);
    if ((rc = dpo__dp_plan_fits(dp, w, e, ne, T, mid, beps, bdelta, &fits))) return rc;
    if (fits) lo = mid;
    else hi = mid;
    fits = 0;
  }
  if (lo > 1) {
    for (int64_t i = 0; i < ne; i++) e[i] = e[i] * lo;
    dp->calib_c = lo;
    dpo_plan_t plan = *dpo_solver_plan(dp->s);
    size_t len = strlen(plan.what);
    snprintf(plan.what + len, sizeof plan.what - len, "; per-step budgets scaled by c = %.6g to "
             "use the ledger's composition (privacy.calibrate = ledger)", lo);
    if ((rc = dpo_solver_declare_plan(dp->s, &plan))) return rc;
  }
  return DPO_OK;
}

int dpo__dp_grad(dpo__dp_t *dp, const double *x, int64_t t, double eps_target, double w,
                 double *g, double *b_out) {
  if (dp->parties) return dpo__dp_grad_parties(dp, x, t, eps_target, w, g, b_out);
  dpo_solver_t *s = dp->s;
  const int32_t d = dp->d;
  double charged = 0;
  int rc;
  dpo_charge_t c;
  rc = dpo__dp_step_charge(dp, t, eps_target, w, &c);
  if (dp->one) return dpo__dp_grad1(dp, x, t, rc, &c, w, g, b_out); /* dp_step1.c */
  if (rc) return rc;
  const double b = c.noise_scale, delta1 = c.sensitivity, eps0 = c.eps;
  /* the batch: data-independent randomness, so drawing it before the charge reveals nothing */
  dpo_batch_t batch = {NULL, dp->n};
  if (dp->sampling == DPO__DP_SAMPLE_DISJOINT) {
    if (t >= dp->nbuckets)
      return dpo_err(DPO_EINVAL, "dp: step %lld but only %lld disjoint buckets of %lld rows",
                     (long long)t, (long long)dp->nbuckets, (long long)dp->m);
    memcpy(dp->ids, dp->perm + t * dp->m, (size_t)dp->m * sizeof *dp->ids);
    qsort(dp->ids, (size_t)dp->m, sizeof *dp->ids, dpo__dp_cmp_i64);
    batch.ids = dp->ids;
    batch.m = dp->m;
  } else if (dp->m < dp->n) {
    dpo__dp_sample(dpo_solver_rng(s), dp->n, dp->m, dp->ids, dp->hash, dp->hcap);
    batch.ids = dp->ids;
    batch.m = dp->m;
  }
  /* Charge BEFORE anything data-dependent is computed or released (privacy rule 2). */
  if ((rc = dpo_ledger_charge(dpo_solver_ledger(s), &c, &charged))) return rc;
  dp->last_b = b;
  dp->last_eps0 = eps0;
  dp->last_charged = charged;
  dp->last_delta1 = delta1;
  int64_t used = 0;
  rc = dpo_oracle_eval_sums(dpo_solver_oracle(s), x, batch.ids ? &batch : NULL, 0, NULL, dp->gs,
                            &used);
  if (rc) return rc;
  /* m = n_pub under add-remove: the mean is the sum over the held rows / the public size */
  if (used != (batch.ids ? dp->m : dp->n_held))
    return dpo_err(DPO_EINVAL, "dp: the oracle used %lld rows for a batch of %lld",
                   (long long)used, (long long)(batch.ids ? dp->m : dp->n_held));
  for (int32_t j = 0; j < d; j++) g[j] = w * (dp->gs[j] / (double)dp->m);
  if ((rc = dpo_mech_sample(DPO_MECH_LAPLACE, dpo_solver_rng(s), b, g, d))) return rc;
  {
    const double q = dp->sampling == DPO__DP_SAMPLE_DISJOINT ? 0.0
                     : batch.ids ? (double)dp->m / (double)dp->n : 1.0;
    dpo_release_t rel = {t,  DPO_MECH_LAPLACE, b, delta1, q,    eps0,
                         c.sampling, dp->m, dp->n, d, g, x,
                         w / (double)dp->m};
    if ((rc = dpo_solver_release(s, &rel))) return rc;
  }
  /* the regularizer's gradient is public given x: added after the noise */
  dpo__dp_add_reg(dp, x, w, g);
  if (b_out) *b_out = b;
  return DPO_OK;
}
