/* How a budget store composes its runs (doc/design.md "Budget stores").
 *
 * Each run is one mechanism on the data set, run after the ones before it, with a plan fixed
 * before it starts (its declared budget, checked and reserved before its first release).  So
 * the runs compose like the releases of one ledger: the store forms the "auto" accountant's
 * bounds over the runs' parts (acct_auto.c):
 *   (A) pure sum + (eps, delta) sum + eps of the summed RDP curves at D - (summed delta)
 *   (B) (no (eps, delta) part) eps of the summed RDP curves plus the pure parts as RDP, at D
 * A reserved run, and in the second bound every run, enters as its whole (eps, delta): pure
 * when delta = 0 (then also as the RDP curve min(eps, alpha eps^2/2), Bun-Steinke 2016), else
 * an (eps, delta) part.  Both bounds hold for the same composition, so the smaller is spent.
 * Sums round up (rounding.h), as the ledger's do.
 */
#include "budget_int.h"
#include "privacy_int.h"

#include "dpopt/budget.h"
#include "dpopt/status.h"

#include <math.h>
#include <string.h>

typedef struct {
  double pure, aeps, adelta;
  int64_t npure, napprox, nrdp;
  dpo_rdp_curve_t R, P;
} dpo__bacc_t;

static void dpo__bacc_init(dpo__bacc_t *a) {
  memset(a, 0, sizeof *a);
  dpo_rdp_curve_init(&a->R);
  dpo_rdp_curve_init(&a->P);
}

/* a run as one (eps, delta) mechanism */
static void dpo__bacc_whole(dpo__bacc_t *a, double eps, double delta) {
  if (!(eps > 0) && !(delta > 0)) return; /* nothing released */
  if (delta > 0) {
    a->aeps = dpo__add_up(a->aeps, eps);
    a->adelta = dpo__add_up(a->adelta, delta);
    a->napprox++;
    return;
  }
  a->pure = dpo__add_up(a->pure, eps);
  a->npure++;
  for (int i = 0; i < a->P.n; i++) { /* eps-DP => (alpha, min(eps, alpha eps^2 / 2))-RDP */
    double z = dpo__mul_up(dpo__mul_up(0.5 * a->P.alpha[i], eps), eps);
    a->P.rdp[i] = dpo__add_up(a->P.rdp[i], z < eps ? z : eps);
  }
}

static double dpo__dmax(double x, double y) { return x >= y || isnan(y) ? x : y; }

int dpo_budget_parts_max(dpo_ledger_parts_t *a, const dpo_ledger_parts_t *b) {
  if (a->rdp.n != b->rdp.n || a->pure_rdp.n != b->pure_rdp.n ||
      memcmp(a->rdp.alpha, b->rdp.alpha, sizeof(double) * (size_t)a->rdp.n) ||
      memcmp(a->pure_rdp.alpha, b->pure_rdp.alpha, sizeof(double) * (size_t)a->pure_rdp.n))
    return dpo_err(DPO_EINVAL, "budget: two accounts on different RDP orders");
  a->eps = dpo__dmax(a->eps, b->eps);
  a->delta = dpo__dmax(a->delta, b->delta);
  a->pure_eps = dpo__dmax(a->pure_eps, b->pure_eps);
  a->approx_eps = dpo__dmax(a->approx_eps, b->approx_eps);
  a->approx_delta = dpo__dmax(a->approx_delta, b->approx_delta);
  a->n_pure = a->n_pure > b->n_pure ? a->n_pure : b->n_pure;
  a->n_approx = a->n_approx > b->n_approx ? a->n_approx : b->n_approx;
  a->n_rdp = a->n_rdp > b->n_rdp ? a->n_rdp : b->n_rdp;
  for (int i = 0; i < a->rdp.n; i++) a->rdp.rdp[i] = dpo__dmax(a->rdp.rdp[i], b->rdp.rdp[i]);
  for (int i = 0; i < a->pure_rdp.n; i++)
    a->pure_rdp.rdp[i] = dpo__dmax(a->pure_rdp.rdp[i], b->pure_rdp.rdp[i]);
  return DPO_OK;
}

static void dpo__bacc_parts(dpo__bacc_t *a, const dpo_ledger_parts_t *p) {
  if (p->n_pure > 0) {
    a->pure = dpo__add_up(a->pure, p->pure_eps);
    a->npure += p->n_pure;
    for (int i = 0; i < a->P.n; i++) a->P.rdp[i] = dpo__add_up(a->P.rdp[i], p->pure_rdp.rdp[i]);
  }
  if (p->n_approx > 0) {
    a->aeps = dpo__add_up(a->aeps, p->approx_eps);
    a->adelta = dpo__add_up(a->adelta, p->approx_delta);
    a->napprox += p->n_approx;
  }
  if (p->n_rdp > 0) {
    a->nrdp += p->n_rdp;
    for (int i = 0; i < a->R.n; i++) a->R.rdp[i] = dpo__add_up(a->R.rdp[i], p->rdp.rdp[i]);
  }
}

/* the auto accountant's totals (acct_auto.c, dpo__auto_total_b) of the parts in a */
static int dpo__bacc_total(const dpo__bacc_t *a, double D, double *eps, double *delta) {
  int st;
  if (a->nrdp == 0 && (a->napprox > 0 || a->npure == 0 || !(D > 0))) {
    *eps = dpo__add_up(a->pure, a->aeps);
    *delta = a->adelta;
    return DPO_OK;
  }
  double dR = dpo__add_down(D, -a->adelta);
  if (!(dR > 0)) { /* the (eps, delta) parts used up delta: nothing left to convert */
    *eps = INFINITY;
    *delta = a->adelta;
    return DPO_OK;
  }
  double eA = dpo__add_up(a->pure, a->aeps), dA = a->adelta;
  if (a->nrdp > 0) {
    double eR;
    if ((st = dpo_rdp_eps(&a->R, dR, &eR, NULL))) return st;
    eA = dpo__add_up(eA, eR);
    dA = D;
  }
  *eps = eA;
  *delta = dA;
  if (a->napprox == 0 && a->npure > 0) {
    dpo_rdp_curve_t RP = a->R;
    double eB;
    for (int i = 0; i < RP.n; i++) RP.rdp[i] = dpo__add_up(RP.rdp[i], a->P.rdp[i]);
    if ((st = dpo_rdp_eps(&RP, D, &eB, NULL))) return st;
    if (eB < eA) {
      *eps = eB;
      *delta = D;
    }
  }
  return DPO_OK;
}

int dpo__budget_total(const dpo__brun_t *runs, int n, const dpo__brun_t *extra, double D,
                      double *eps, double *delta, const char **how) {
  dpo__bacc_t parts, whole;
  int st;
  dpo__bacc_init(&parts);
  dpo__bacc_init(&whole);
  for (int i = 0; i <= n; i++) {
    const dpo__brun_t *r = i < n ? &runs[i] : extra;
    if (!r) continue;
    dpo__bacc_whole(&whole, r->eps, r->delta);
    if (r->settled) dpo__bacc_parts(&parts, &r->parts);
    else dpo__bacc_whole(&parts, r->eps, r->delta);
  }
  double e1, d1, e2, d2;
  if ((st = dpo__bacc_total(&parts, D, &e1, &d1)) || (st = dpo__bacc_total(&whole, D, &e2, &d2)))
    return st;
  int p = e1 <= e2;
  *eps = p ? e1 : e2;
  *delta = p ? d1 : d2;
  if (how) *how = p ? "parts" : "runs";
  return DPO_OK;
}
