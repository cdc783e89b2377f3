/* The "rdp" accountant of the ledger (privacy.accountant = rdp; also the RDP part of auto and
 * pld): each release's curve from its mechanism's RDP map (mech_ops.c), composed per order,
 * disjoint passes by their per-order max, eps at the budget's delta (rdp.c). */
#include "mech_ops.h"
#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ the "rdp" accountant */

static void dpo__rdpacct_init(void *s) { memset(s, 0, sizeof(dpo__rdpacct_t)); }

/* the release's own curve: the mechanism's RDP map (mech_ops.c) */
int dpo__rdp_release(const dpo_charge_t *c, dpo_rdp_curve_t *rc) {
  dpo_rdp_curve_init(rc);
  if (!c || !c->mechanism || !c->sampling || !c->accounting)
    return dpo_err(DPO_EINVAL, "charge: mechanism, sampling and accounting must be set");
  const dpo__mech_ops_t *mo = dpo__mech_ops(c->mechanism);
  if (!mo || !mo->rdp)
    return dpo_err(DPO_EINVAL, "charge: the rdp accountant takes gaussian or rdp-rho releases "
                               "(got '%s')", dpo_mech_name(c->mechanism));
  return mo->rdp(c, rc);
}

static int dpo__cache_hit(const dpo__rdp_cache_t *k, const dpo_charge_t *c) {
  return k->valid && k->mechanism == c->mechanism && k->sampling == c->sampling &&
         k->accounting == c->accounting && k->m == c->m && k->n == c->n &&
         k->dim == c->dim && k->noise_scale == c->noise_scale &&
         k->sensitivity == c->sensitivity && k->rho == c->rho;
}

/* Behind every ledger's own entry, a few per thread: a Poisson-subsampled curve at the
 * fractional orders takes ~0.2 s, and dpopt tune and dpopt audit open a new ledger for every
 * training or trial with the same releases.  The curve is a pure function of the key. */
#define DPO__RDP_SHARED 4
static _Thread_local dpo__rdp_cache_t dpo__rdp_shared[DPO__RDP_SHARED];
static _Thread_local int dpo__rdp_shared_next;

int dpo__rdp_release_cached(dpo__rdp_cache_t *k, const dpo_charge_t *c, dpo_rdp_curve_t *rc) {
  if (!c) return dpo__rdp_release(c, rc); /* validates and reports */
  if (dpo__cache_hit(k, c)) {
    *rc = k->curve;
    return DPO_OK;
  }
  for (int i = 0; i < DPO__RDP_SHARED; i++)
    if (dpo__cache_hit(&dpo__rdp_shared[i], c)) {
      *k = dpo__rdp_shared[i];
      *rc = k->curve;
      return DPO_OK;
    }
  int st = dpo__rdp_release(c, rc);
  if (st) return st;
  memset(k, 0, sizeof *k);
  k->mechanism = c->mechanism;
  k->sampling = c->sampling;
  k->accounting = c->accounting;
  k->m = c->m;
  k->n = c->n;
  k->dim = c->dim;
  k->noise_scale = c->noise_scale;
  k->sensitivity = c->sensitivity;
  k->rho = c->rho;
  k->curve = *rc;
  k->valid = 1;
  dpo__rdp_shared[dpo__rdp_shared_next] = *k;
  dpo__rdp_shared_next = (dpo__rdp_shared_next + 1) % DPO__RDP_SHARED;
  return DPO_OK;
}

void dpo__rdpacct_add(dpo__rdpacct_t *s, const dpo_rdp_curve_t *rc, dpo_sampling_t sampling,
                      int64_t group) {
  int disjoint = sampling == DPO_SAMPLING_DISJOINT;
  if (disjoint && s->open && s->group == group) {
    for (int i = 0; i < rc->n; i++) s->gmax[i] = fmax(s->gmax[i], rc->rdp[i]);
    return;
  }
  for (int i = 0; i < rc->n; i++) {
    s->sum[i] = dpo__add_up(s->sum[i], s->gmax[i]); /* close the previous pass */
    s->gmax[i] = 0;
  }
  s->open = disjoint;
  s->group = group;
  for (int i = 0; i < rc->n; i++) {
    if (disjoint) s->gmax[i] = rc->rdp[i];
    else s->sum[i] = dpo__add_up(s->sum[i], rc->rdp[i]);
  }
}

void dpo__rdpacct_total(const dpo__rdpacct_t *s, dpo_rdp_curve_t *tot) {
  dpo_rdp_curve_init(tot);
  for (int i = 0; i < tot->n; i++) tot->rdp[i] = dpo__add_up(s->sum[i], s->gmax[i]);
}

static int dpo__rdpacct_charge(void *state, const dpo_charge_t *c, double beps, double bdelta,
                               int commit, dpo__acct_result_t *r) {
  dpo__rdpacct_t *s = state, ns = *s;
  dpo_rdp_curve_t rc, tot, old;
  int st = dpo__rdp_release_cached(&ns.cache, c, &rc);
  if (st) return st;
  if ((st = dpo_rdp_eps(&rc, bdelta, &r->cost_eps, NULL))) return st;
  r->cost_delta = bdelta;
  dpo__rdpacct_add(&ns, &rc, c->sampling, c->group);
  dpo__rdpacct_total(&ns, &tot);
  dpo__rdpacct_total(s, &old);
  double eo, en;
  if ((st = dpo_rdp_eps(&old, bdelta, &eo, NULL)) || (st = dpo_rdp_eps(&tot, bdelta, &en, NULL)))
    return st;
  r->total_eps = en;
  r->total_delta = bdelta;
  r->charge_eps = en > eo ? dpo__add_up(en, -eo) : 0.0;
  r->charge_delta = eo == 0 && en > 0 ? bdelta : 0.0;
  r->fits = en <= beps;
  ns.bdelta = bdelta;
  if (commit && r->fits) *s = ns;
  return DPO_OK;
}

static void dpo__rdpacct_spent(const void *state, double *eps, double *delta) {
  const dpo__rdpacct_t *s = state;
  double e = 0;
  if (s->bdelta > 0) {
    dpo_rdp_curve_t tot;
    dpo__rdpacct_total(s, &tot);
    if (dpo_rdp_eps(&tot, s->bdelta, &e, NULL)) e = INFINITY;
  }
  if (eps) *eps = e;
  if (delta) *delta = e > 0 ? s->bdelta : 0.0;
}

const dpo__acct_ops_t dpo__acct_rdp = {"rdp", sizeof(dpo__rdpacct_t), dpo__rdpacct_init,
                                        dpo__rdpacct_charge, dpo__rdpacct_spent, NULL, NULL};
