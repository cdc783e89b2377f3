/* Privacy accountants: per-release costs (amplification by sampling) and their composition.
 *
 * Rounding rule: a privacy LOSS is always rounded up, an ALLOWANCE derived from a target loss
 * is rounded down, and budget totals are exact sums (expansions) of the charged doubles.
 */
#include "mech_ops.h"
#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ amplification by sampling */

static int dpo__check_mn(int64_t m, int64_t n) {
  if (m < 1 || n < m || n > ((int64_t)1 << 53))
    return dpo_err(DPO_EINVAL, "sampling: need 1 <= m <= n <= 2^53 (m=%lld, n=%lld)",
                   (long long)m, (long long)n);
  return DPO_OK;
}

int dpo_acct_wor(double eps, int64_t m, int64_t n, double *out) {
  int st = dpo__check_mn(m, n);
  if (st) return st;
  if (!out || !(eps >= 0) || !isfinite(eps))
    return dpo_err(DPO_EINVAL, "acct_wor: eps=%g must be finite and >= 0", eps);
  if (m == n || eps > 700) { /* no amplification (or the bound ~ eps + ln(m/n) is moot) */
    *out = eps;
    return DPO_OK;
  }
  /* (001 (3.3)): ln(1 + (m/n)(e^eps - 1)), every step rounded up */
  double q = dpo__div_up((double)m, (double)n);
  double a = dpo__mul_up(q, dpo__widen_up(expm1(eps)));
  double r = dpo__widen_up(log1p(a));
  *out = r < eps ? r : eps; /* the true value is <= eps, so clamping stays an upper bound */
  return DPO_OK;
}

int dpo_acct_wor_inverse(double eps_target, int64_t m, int64_t n, double *eps0) {
  int st = dpo__check_mn(m, n);
  if (st) return st;
  if (!eps0 || !(eps_target >= 0) || !(eps_target <= 700))
    return dpo_err(DPO_EINVAL, "acct_wor_inverse: target eps=%g must be in [0, 700]", eps_target);
  if (m == n) {
    *eps0 = eps_target;
    return DPO_OK;
  }
  /* (001 (3.5)): ln(1 + (n/m)(e^eps' - 1)), every step rounded down */
  double q = dpo__div_up((double)m, (double)n);
  double a = dpo__div_down(dpo__widen_down(expm1(eps_target)), q);
  double e = isfinite(a) ? dpo__widen_down(log1p(a)) : dpo__widen_down(eps_target - log(q));
  /* above 700 dpo_acct_wor charges eps itself (no amplification), so no e > 700 can pass the
   * round trip below; start there instead of stepping down one ulp at a time from ~700 - ln q */
  if (e > 700) e = 700;
  /* guarantee the round trip: forward(e) <= target exactly as the ledger computes it */
  for (;;) {
    double f;
    if ((st = dpo_acct_wor(e, m, n, &f))) return st;
    if (f <= eps_target || e == 0) break;
    e = nextafter(e, 0.0);
  }
  *eps0 = e;
  return DPO_OK;
}

int dpo_acct_thesis_2gamma(double eps, int64_t m, int64_t n, double *out) {
  int st = dpo__check_mn(m, n);
  if (st) return st;
  /* (thesis Thm 4.1.5, Lemma 2.2 of Beimel et al.): requires the sampled algorithm to be
   * eps <= 1 differentially private */
  if (!out || !(eps >= 0) || !(eps <= 1))
    return dpo_err(DPO_EINVAL, "thesis-2gamma accounting needs 0 <= eps <= 1 (got %g)", eps);
  *out = dpo__div_up(dpo__mul_up(2.0 * eps, (double)m), (double)n);
  return DPO_OK;
}

int dpo_privacy_split(double total, int64_t T, double *per_step) {
  if (!per_step || !(total >= 0) || !isfinite(total) || T < 1 || T > ((int64_t)1 << 53))
    return dpo_err(DPO_EINVAL, "privacy_split: need total >= 0 finite and 1 <= T <= 2^53");
  double t = (double)T, e = total / t;
  /* exact test of T * e <= total via the fma residual */
#define DPO__FITS(x) (t * (x) < total || (t * (x) == total && fma(t, (x), -(t * (x))) <= 0))
  while (e > 0 && !DPO__FITS(e)) e = nextafter(e, 0.0);
  for (;;) {
    double up = nextafter(e, INFINITY);
    if (DPO__FITS(up)) e = up;
    else break;
  }
#undef DPO__FITS
  *per_step = e;
  return DPO_OK;
}

/* ------------------------------------------------------------ cost of one release */

int dpo__charge_cost(const dpo_charge_t *c, double *eps, double *delta) {
  if (!c || !c->mechanism || !c->sampling || !c->accounting)
    return dpo_err(DPO_EINVAL, "charge: mechanism, sampling and accounting must be set");
  double e0 = c->eps, d0 = c->delta;
  if (!(e0 >= 0) || !isfinite(e0))
    return dpo_err(DPO_EINVAL, "charge: eps=%g must be finite and >= 0", e0);
  if (!(d0 >= 0 && d0 < 1)) return dpo_err(DPO_EINVAL, "charge: delta=%g must be in [0, 1)", d0);
  if (!(c->noise_scale >= 0) || !isfinite(c->noise_scale))
    return dpo_err(DPO_EINVAL, "charge: noise_scale=%g must be finite and >= 0", c->noise_scale);
  if (!(e0 > 0) && !(c->noise_scale > 0))
    return dpo_err(DPO_EINVAL, "charge: give eps > 0 or the noise scale and sensitivity");
  int st;
  /* the mechanism's own pure or (eps, delta) map (mech_ops.c) */
  const dpo__mech_ops_t *mo = dpo__mech_ops(c->mechanism);
  if (!mo || !mo->approx)
    return dpo_err(DPO_EINVAL, "charge: unknown mechanism '%s'", dpo_mech_name(c->mechanism));
  if ((st = mo->approx(c, &e0, &d0))) return st;
  if (c->sampling == DPO_SAMPLING_POISSON)
    return dpo_err(DPO_EUNSUP, "charge: Poisson sampling needs the RDP accountant (not built)");
  if (c->sampling == DPO_SAMPLING_NONE || c->sampling == DPO_SAMPLING_DISJOINT) {
    if (c->accounting != DPO_ACCOUNTING_PURE)
      return dpo_err(DPO_EINVAL, "charge: accounting '%s' needs sampling 'wor'",
                     dpo_accounting_name(c->accounting));
    *eps = e0;
    *delta = d0;
    return DPO_OK;
  }
  if (c->sampling != DPO_SAMPLING_WOR)
    return dpo_err(DPO_EINVAL, "charge: unknown sampling '%s'", dpo_sampling_name(c->sampling));
  if ((st = dpo__check_mn(c->m, c->n))) return st;
  if (c->accounting == DPO_ACCOUNTING_PURE) { /* sampled but not amplified: still valid */
    *eps = e0;
    *delta = d0;
    return DPO_OK;
  }
  if (c->accounting == DPO_ACCOUNTING_SUBSAMPLED) {
    if ((st = dpo_acct_wor(e0, c->m, c->n, eps))) return st;
    /* delta' = (m/n) delta for sampling without replacement (Balle-Barthe-Gaboardi 2018) */
    *delta = d0 > 0 ? dpo__mul_up(d0, dpo__div_up((double)c->m, (double)c->n)) : 0.0;
    return DPO_OK;
  }
  if (c->accounting == DPO_ACCOUNTING_THESIS_2GAMMA) {
    if (d0 > 0) return dpo_err(DPO_EUNSUP, "charge: thesis-2gamma accounting is for pure eps only");
    *delta = 0;
    return dpo_acct_thesis_2gamma(e0, c->m, c->n, eps);
  }
  return dpo_err(DPO_EINVAL, "charge: unknown accounting '%s'",
                 dpo_accounting_name(c->accounting));
}

/* ------------------------------------------------------------ basic composition */

/* Sequential releases add (thesis Thm 4.1.3, and delta adds too); consecutive "disjoint"
 * batches of one group are a parallel composition: the pass costs the max of its batches
 * (dpo__basic_t in privacy_int.h). */

static void dpo__basic_init(void *s) {
  dpo__basic_t *b = s;
  memset(b, 0, sizeof *b);
  dpo__xsum_init(&b->eps);
  dpo__xsum_init(&b->delta);
}

static int dpo__basic_charge(void *state, const dpo_charge_t *c, double beps, double bdelta,
                             int commit, dpo__acct_result_t *r) {
  dpo__basic_t *b = state, nb = *b;
  double ce, cd;
  int st = dpo__charge_cost(c, &ce, &cd);
  if (st) return st;
  r->cost_eps = ce;
  r->cost_delta = cd;
  int in_pass = c->sampling == DPO_SAMPLING_DISJOINT && b->open && b->group == c->group;
  if (in_pass) {
    /* total grows by max(0, cost - max so far), added exactly as + cost - max */
    r->charge_eps = ce > b->gmax_eps ? dpo__add_up(ce, -b->gmax_eps) : 0.0;
    r->charge_delta = cd > b->gmax_delta ? dpo__add_up(cd, -b->gmax_delta) : 0.0;
    if (ce > b->gmax_eps) {
      dpo__xsum_add(&nb.eps, ce);
      dpo__xsum_add(&nb.eps, -b->gmax_eps);
      nb.gmax_eps = ce;
    }
    if (cd > b->gmax_delta) {
      dpo__xsum_add(&nb.delta, cd);
      dpo__xsum_add(&nb.delta, -b->gmax_delta);
      nb.gmax_delta = cd;
    }
  } else {
    r->charge_eps = ce;
    r->charge_delta = cd;
    dpo__xsum_add(&nb.eps, ce);
    dpo__xsum_add(&nb.delta, cd);
    nb.open = c->sampling == DPO_SAMPLING_DISJOINT;
    nb.group = c->group;
    nb.gmax_eps = ce;
    nb.gmax_delta = cd;
  }
  r->fits = dpo__xsum_cmp(&nb.eps, beps) <= 0 && dpo__xsum_cmp(&nb.delta, bdelta) <= 0;
  r->total_eps = dpo__xsum_up(&nb.eps);
  r->total_delta = dpo__xsum_up(&nb.delta);
  if (commit && r->fits) *b = nb;
  return DPO_OK;
}

static void dpo__basic_spent(const void *state, double *eps, double *delta) {
  const dpo__basic_t *b = state;
  if (eps) *eps = dpo__xsum_up(&b->eps);
  if (delta) *delta = dpo__xsum_up(&b->delta);
}

const dpo__acct_ops_t dpo__acct_basic = {
    "basic", sizeof(dpo__basic_t), dpo__basic_init, dpo__basic_charge, dpo__basic_spent, NULL, NULL};

int dpo__charge_relation(const dpo_charge_t *c, dpo_neighbours_t rel) {
  if (!c || !c->sampling || !c->mechanism)
    return dpo_err(DPO_EINVAL, "charge: mechanism, sampling and accounting must be set");
  if (c->neighbours != DPO_NEIGHBOURS_REPLACE_ONE && c->neighbours != DPO_NEIGHBOURS_ADD_REMOVE)
    return dpo_err(DPO_EINVAL, "charge: unknown neighbouring relation %d", (int)c->neighbours);
  if (c->neighbours != rel)
    return dpo_err(DPO_EINVAL, "charge at step %lld was calibrated for %s neighbours, but the "
                   "ledger's relation is %s: the two guarantees are not comparable (set "
                   "privacy.neighbours to one relation for the whole budget)",
                   (long long)c->step, dpo_neighbours_name(c->neighbours),
                   dpo_neighbours_name(rel));
  /* Poisson subsampling amplification (Mironov-Talwar-Zhang 2019) is an add/remove analysis;
   * sampling m of n without replacement (001 (3.3), WBK 2019 Thm 9), disjoint batches of a
   * public partition of the n rows and the one-pass bound of 003 Thm 3.1 need a public n and
   * row positions: replace-one analyses.  Neither converts for free, so refuse. */
  if (rel == DPO_NEIGHBOURS_REPLACE_ONE && c->sampling == DPO_SAMPLING_POISSON)
    return dpo_err(DPO_EINVAL, "charge: Poisson subsampling is analysed for add-remove "
                   "neighbours (Mironov-Talwar-Zhang 2019); under privacy.neighbours = "
                   "replace-one sample without replacement (algo.sampling = wor), or set "
                   "privacy.neighbours = add-remove");
  const dpo__mech_ops_t *mo = dpo__mech_ops(c->mechanism);
  const char *rone = mo ? mo->replace_one_only : NULL;
  if (rel == DPO_NEIGHBOURS_ADD_REMOVE &&
      (c->sampling == DPO_SAMPLING_WOR || c->sampling == DPO_SAMPLING_DISJOINT || rone))
    return dpo_err(DPO_EINVAL, "charge: %s is a replace-one analysis (fixed public n); under "
                   "privacy.neighbours = add-remove use Poisson sampling (dp-sgd-rdp "
                   "algo.sampling = poisson), or set privacy.neighbours = replace-one",
                   rone                              ? rone
                   : c->sampling == DPO_SAMPLING_WOR ? "sampling without replacement"
                                                     : "a disjoint-batch pass");
  return DPO_OK;
}
