/* dpopt tune's geometric search, its plan from public settings only: the per-repetition eps
 * (Liu-Talwar, Papernot-Steinke) and each repetition's configuration.  Apart from tune.c, which
 * runs the repetitions through the run API, so the audit of the search (run_audit_tune.c)
 * uses the same code without a cycle through the run kinds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"
#include "dpopt/tune.h"

#include "run/tune_impl.h"

/* The curve of one repetition at per-repetition eps e: every candidate's training curve and
 * the score's, per order the max (one of two disjoint parts changes). */
static int rep_curve(dpo__tune_t *t, double e, dpo_rdp_curve_t *q) {
  dpo_rdp_curve_t c;
  int rc;
  dpo_tune_pure_curve(e, q); /* the score; and every pure candidate (e-DP) */
  for (int i = 0; i < t->nc; i++) {
    dpo__cand_t *k = &t->c[i];
    if (!k->gauss) continue;
    const char *samp = t->rel == DPO_NEIGHBOURS_ADD_REMOVE ? "poisson" : "wor";
    if ((rc = dpo_rdp_calibrate(samp, k->m, t->n, k->T, e, t->delta, &k->z))) return rc;
    dpo_rdp_curve_init(&c);
    if ((rc = dpo_rdp_curve_add(&c, samp, k->m, t->n, k->z, k->T))) return rc;
    for (int j = 0; j < q->n; j++)
      if (c.rdp[j] > q->rdp[j]) q->rdp[j] = c.rdp[j];
  }
  return DPO_OK;
}

static int tuned_eps(dpo__tune_t *t, double e, double *eps) {
  dpo_rdp_curve_t q;
  int rc;
  if ((rc = rep_curve(t, e, &q)) || (rc = dpo_tune_rdp(&q, t->mean, &q))) return rc;
  return dpo_rdp_eps(&q, t->delta, eps, NULL);
}

/* Per-repetition eps (and each Gaussian candidate's z) so that the tune's total fits.  n is
 * public: the row count under replace-one, the declared privacy.public_n under add-remove. */
int dpo__tune_calibrate(dpo__tune_t *t) {
  int rc;
  for (int i = 0; i < t->nc; i++) { /* steps and batch of the Gaussian candidates (public) */
    dpo__cand_t *k = &t->c[i];
    if (!k->gauss) continue;
    int64_t m = 0;
    double ep = isnan(k->epochs) ? 1 : k->epochs;
    if ((rc = dpo_config_get_int(t->cfg, "algo.m", (int64_t)ceil(sqrt((double)t->n)), &m))) return rc;
    if (m < 1 || m > t->n) return dpo_err(DPO_EINVAL, "tune: algo.m = %lld not in [1, n]", (long long)m);
    if (isnan(k->epochs)) dpo_config_get_double(t->cfg, "algo.epochs", 1, &ep);
    k->m = m;
    k->T = (int64_t)ceil(ep * (double)t->n / (double)m - 1e-9);
    if (k->T < 1) k->T = 1;
  }
  if (!t->rdp) { /* Liu-Talwar: 3 eps0 <= eps exactly */
    if ((rc = dpo_privacy_split(t->eps, 3, &t->eb))) return rc;
    t->total_delta = 0;
    return dpo_tune_pure_eps(t->eb, &t->total_eps);
  }
  double lo = 0, hi = t->eps, e;
  for (int it = 0; it < 50; it++) { /* the largest e whose tuned total fits (monotone in e) */
    double mid = 0.5 * (lo + hi);
    if ((rc = tuned_eps(t, mid, &e)) == DPO_OK && e <= t->eps) lo = mid;
    else hi = mid;
  }
  if (!(lo > 0) || (rc = tuned_eps(t, lo, &e)) || !(e <= t->eps))
    return dpo_err(DPO_EBUDGET, "tune: the budget eps = %g at delta = %g cannot cover a tune "
                   "with mean %g repetitions (the selection alone costs more): raise --eps or "
                   "lower tune.mean", t->eps, t->delta, t->mean);
  t->eb = lo;
  t->total_eps = e;
  t->total_delta = t->delta;
  return DPO_OK;
}

static void set(dpo_config_t *c, const char *k, const char *fmt, double v) {
  char b[64];
  snprintf(b, sizeof b, fmt, v);
  dpo_config_set(c, k, b, "tune");
}

/* The configuration of repetition r (candidate k). */
int dpo__tune_cand_config(const dpo__tune_t *t, const dpo__cand_t *k, int r, dpo_config_t **out) {
  if (t->split > 0) return dpo__tune_split_config(t, k, r, out);
  dpo_config_t *c;
  int rc = dpo_config_create(&c);
  if (rc) return rc;
  dpo_config_foreach(t->cfg, dpo__tune_copy_key, c);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/.rep", t->dir);
  dpo_config_set(c, "run.dir", dir, "tune");
  dpo_config_set(c, "run.quiet", "1", "tune");
  /* the repetition's trace is dropped with DIR/.rep: F(x_t) on every row at every step would be
   * most of a minibatch run's time */
  dpo_config_set(c, "run.no_trace_loss", "1", "tune");
  dpo_config_set(c, "algo.name", k->algo, "tune");
  /* the score's rows: the validation file, or the validation part of data.train */
  if (t->valid) dpo_config_set(c, "data.test", t->valid, "tune");
  else set(c, "data.valid_fraction", "%.17g", t->vfrac);
  if (!isnan(k->step)) set(c, k->gauss ? "algo.eta" : "algo.c", "%.17g", k->step);
  const char *seed = dpo_config_get(t->cfg, "run.seed");
  if (seed) set(c, "run.seed", "%.0f", strtod(seed, NULL) + r + 1);
  if (k->gauss) {
    /* z from the tune's calibration; the run's own budget only needs to admit its T steps
     * (the privacy is the tune's curve, computed for this z) */
    set(c, "privacy.eps", "%.17g", 4 * t->eb + 1);
    set(c, "privacy.delta", "%.17g", t->delta);
    set(c, "algo.z", "%.17g", k->z);
    set(c, "algo.T", "%.0f", (double)k->T);
    set(c, "algo.m", "%.0f", (double)k->m);
    /* the repetition samples at the rate the tune's curve was computed for (q = m / n: n the
     * declared public size under add-remove, the public row count under replace-one) */
    set(c, "privacy.public_n", "%.0f", (double)t->n);
    dpo_config_set(c, "algo.sampling", t->rel == DPO_NEIGHBOURS_ADD_REMOVE ? "poisson" : "wor", "tune");
    if (!isnan(k->lr)) set(c, "algo.lr", "%.17g", k->lr);
    if (!isnan(k->clip)) set(c, "privacy.clip", "l2:%.17g", k->clip);
  } else { /* a pure-eps run: its own ledger holds it to eb with delta 0 */
    set(c, "privacy.eps", "%.17g", t->eb);
    dpo_config_set(c, "privacy.delta", "0", "tune");
  }
  *out = c;
  return DPO_OK;
}

int dpo__tune_geo_pick(const dpo__tune_t *t, dpo_rng_t *rng) {
  return (int)dpo_rng_below(rng, (uint64_t)t->nc);
}

int dpo__tune_geo_stop(const dpo__tune_t *t, dpo_rng_t *rng) {
  return dpo_rng_below(rng, (uint64_t)t->mean) == 0;
}
