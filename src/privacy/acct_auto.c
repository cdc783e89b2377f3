/* The "auto" accountant: whatever mix of releases the algorithms of one run make, in one
 * (eps, delta) budget (privacy.accountant = auto; also the base of the default, pld: acct_pld.c).
 *
 *  part P  pure releases (Laplace; eps-DP after any sampling/accounting of the basic accountant)
 *  part A  (eps, delta) releases (classic Gaussian calibration): basic composition
 *          P and A share the basic accountant's state (exact sums, disjoint passes)
 *  part R  RDP releases (Gaussian with accounting "rdp", rdp-rho passes): per-order curve
 *  P'      the pure releases as RDP: eps-DP implies (alpha, min(eps, alpha eps^2/2))-RDP
 *          (D_alpha <= D_inf = eps; Bun-Steinke 2016 Prop. 3.3: eps-DP => (eps^2/2)-zCDP)
 *
 * Spent eps at the budget's delta D, with delta_A the summed delta of part A, dR = D - delta_A:
 *   (A) eps_P + eps_A + eps_R(dR)               basic composition of the three parts
 *   (B) eps(R + P', dR)  (only when part A is empty) RDP composition, then one conversion
 * both upper bounds on the same composed mechanism, so min(A, B) is valid.  With part R non-empty
 * (B) <= (A) always (P'(alpha) <= eps_P at every order, and the conversion is monotone in the
 * curve); without it, neither dominates: one pure release of eps = 1 costs 1 by (A) (and no
 * delta) but 1.019 by (B) at D = 1e-5 (the conversion's log(1/D)/(alpha-1) term), while 100
 * releases of eps = 0.01 cost 1 by (A) and 0.375 by (B).  When part R is empty and (A) wins, no
 * delta is spent (exactly the basic accountant); otherwise the spent delta is delta_A + dR = D.
 * The totals are recomputed from the charges in order, so a journal replays to the same
 * numbers.
 */
#include "mech_ops.h"
#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <string.h>

static void dpo__auto_init(void *st) {
  dpo__auto_t *s = st;
  memset(s, 0, sizeof *s);
  dpo__acct_basic.init(&s->basic);
}

static int dpo__is_rdp(const dpo_charge_t *c) {
  /* a mechanism with an RDP map goes on the curve when it has no other map, or is charged so */
  const dpo__mech_ops_t *mo = dpo__mech_ops(c->mechanism);
  return mo && mo->rdp && (!mo->approx || c->accounting == DPO_ACCOUNTING_RDP);
}

/* a charge in another part ends this part's disjoint pass (as it would in a single accountant:
 * any release between two batches closes the pass) */
static void dpo__close_rdp(dpo__rdpacct_t *s) {
  dpo_rdp_curve_t zero;
  dpo_rdp_curve_init(&zero);
  dpo__rdpacct_add(s, &zero, DPO_SAMPLING_NONE, 0);
}

/* totals of s at budget delta D: eps, delta, whether they fit (beps, D), and which bound gave
 * them (*bound, may be NULL: "basic" composition, or "rdp" when an RDP curve did) */
static int dpo__auto_total_b(const dpo__auto_t *s, double beps, double D, double *eps,
                             double *delta, int *fits, const char **bound) {
  double eb, db;
  int st;
  const char *dummy;
  if (!bound) bound = &dummy;
  *bound = "basic";
  dpo__acct_basic.spent(&s->basic, &eb, &db);
  if (s->n_rdp == 0 && (s->n_approx > 0 || s->n_pure == 0 || !(D > 0))) {
    /* only (A) applies and it is the basic accountant: exact comparison */
    const dpo__basic_t *b = &s->basic;
    *eps = eb;
    *delta = db;
    *fits = dpo__xsum_cmp(&b->eps, beps) <= 0 && dpo__xsum_cmp(&b->delta, D) <= 0;
    return DPO_OK;
  }
  double dR = dpo__add_down(D, -db);
  if (!(dR > 0)) { /* the (eps, delta) releases used up delta: nothing left to convert */
    *eps = INFINITY;
    *delta = db;
    *fits = 0;
    return DPO_OK;
  }
  dpo_rdp_curve_t R, P;
  dpo__rdpacct_total(&s->rdp, &R);
  double eA = eb, eR = 0, dA = db;
  if (s->n_rdp > 0) {
    if ((st = dpo_rdp_eps(&R, dR, &eR, NULL))) return st;
    eA = dpo__add_up(eb, eR);
    dA = D;
    *bound = "rdp";
  }
  *eps = eA;
  *delta = dA;
  if (s->n_approx == 0 && s->n_pure > 0) {
    double eB;
    dpo__rdpacct_total(&s->pconv, &P);
    for (int i = 0; i < R.n; i++) R.rdp[i] = dpo__add_up(R.rdp[i], P.rdp[i]);
    if ((st = dpo_rdp_eps(&R, D, &eB, NULL))) return st;
    if (eB < eA) { /* the pure releases' RDP conversion (B) is the smaller: it is charged */
      *eps = eB;
      *delta = D;
      *bound = "rdp";
    }
  }
  *fits = *eps <= beps && *delta <= D;
  return DPO_OK;
}

static int dpo__auto_total(const dpo__auto_t *s, double beps, double D, double *eps,
                           double *delta, int *fits) {
  return dpo__auto_total_b(s, beps, D, eps, delta, fits, NULL);
}

static int dpo__auto_charge(void *state, const dpo_charge_t *c, double beps, double bdelta,
                            int commit, dpo__acct_result_t *r) {
  dpo__auto_t *s = state, ns = *s;
  int st;
  if (!c || !c->mechanism || !c->sampling || !c->accounting)
    return dpo_err(DPO_EINVAL, "charge: mechanism, sampling and accounting must be set");
  if (dpo__is_rdp(c)) {
    dpo_rdp_curve_t rc;
    if (!(bdelta > 0))
      return dpo_err(DPO_EINVAL, "charge: a Gaussian (RDP) release needs a delta budget > 0: "
                                 "give --delta D (privacy.delta)");
    if ((st = dpo__rdp_release_cached(&ns.rdp.cache, c, &rc))) return st;
    if ((st = dpo_rdp_eps(&rc, bdelta, &r->cost_eps, NULL))) return st;
    r->cost_delta = bdelta;
    dpo__rdpacct_add(&ns.rdp, &rc, c->sampling, c->group);
    /* close the other parts' passes: a zero-cost non-disjoint step does exactly that */
    ns.basic.open = 0;
    dpo__close_rdp(&ns.pconv);
    ns.n_rdp++;
  } else {
    dpo__acct_result_t rb;
    /* the basic accountant computes the cost and composes parts P and A; the budget test is
     * done below on the combined totals */
    if ((st = dpo__acct_basic.charge(&ns.basic, c, INFINITY, INFINITY, 1, &rb))) return st;
    r->cost_eps = rb.cost_eps;
    r->cost_delta = rb.cost_delta;
    dpo__close_rdp(&ns.rdp);
    if (rb.cost_delta > 0) {
      ns.n_approx++;
      dpo__close_rdp(&ns.pconv);
    } else {
      dpo_rdp_curve_t pc;
      double e = rb.cost_eps;
      dpo_rdp_curve_init(&pc);
      for (int i = 0; i < pc.n; i++) {
        double z = dpo__mul_up(dpo__mul_up(0.5 * pc.alpha[i], e), e); /* alpha eps^2 / 2 */
        pc.rdp[i] = z < e ? z : e;
      }
      dpo__rdpacct_add(&ns.pconv, &pc, c->sampling, c->group);
      ns.n_pure++;
    }
  }
  double eo, dold, en, dn;
  int fo, fn;
  if ((st = dpo__auto_total(s, beps, bdelta, &eo, &dold, &fo)) ||
      (st = dpo__auto_total(&ns, beps, bdelta, &en, &dn, &fn)))
    return st;
  r->total_eps = en;
  r->total_delta = dn;
  r->charge_eps = en > eo ? dpo__add_up(en, -eo) : 0.0;
  r->charge_delta = dn > dold ? dpo__add_up(dn, -dold) : 0.0;
  r->fits = fn;
  ns.bdelta = bdelta;
  if (commit && r->fits) *s = ns;
  return DPO_OK;
}

static void dpo__auto_spent(const void *state, double *eps, double *delta) {
  const dpo__auto_t *s = state;
  double e = 0, d = 0;
  int f;
  if (dpo__auto_total(s, INFINITY, s->bdelta, &e, &d, &f)) e = INFINITY;
  if (eps) *eps = e;
  if (delta) *delta = d;
}

const char *dpo__auto_bound(const void *state) {
  const dpo__auto_t *s = state;
  double e, d;
  int f;
  const char *b = "basic";
  if (dpo__auto_total_b(s, INFINITY, s->bdelta, &e, &d, &f, &b)) return s->n_rdp ? "rdp" : "basic";
  return b;
}

const dpo__acct_ops_t dpo__acct_auto = {"auto", sizeof(dpo__auto_t), dpo__auto_init,
                                        dpo__auto_charge, dpo__auto_spent, NULL, dpo__auto_bound};
