/* The "pld" accountant (privacy.accountant = pld, the training default): the "auto" accountant
 * (acct_auto.c: pure, (eps, delta) and RDP releases in one budget) plus a second bound from the
 * privacy loss distribution accountant (pld.c), for ledgers whose releases are all Gaussian with
 * sampling "none", "poisson" or "wor" (accounting "rdp"): full-batch, Poisson-subsampled and
 * m-of-n DP-SGD, DP-ADMM, the Gaussian one-shot methods.  Both bounds are valid for the same
 * composition, so the smaller is.  "wor" (replace-one only, privacy.h) uses the dominating pair
 * of Zhu, Dong and Wang 2022 for sampling without replacement under substitution (pld.c): the
 * RDP bound for it (Wang, Balle and Kasiviswanathan 2019) is up to about 3x looser in eps.
 *
 *  - Pure (Laplace, eps-DP) releases beside the Gaussian ones, e.g. dp-sgd-rdp's noisy row
 *    count under add-remove (sco_common.c): bound (C) = eps_P + eps_PLD(Gaussian part, D), the
 *    basic composition of the pure part with the Gaussian part's PLD bound -- auto's bound (A)
 *    with the PLD bound in place of the RDP one (the pure part's privacy loss is at most eps_P
 *    pointwise, so the Gaussian part's tail bound at D carries over).  min(auto, C) is charged.
 *  - Mixed ledgers (a classic-Gaussian (eps, delta) release, sampling "disjoint", an
 *    rdp-rho pass, or more than DPO__PLD_KINDS different Gaussian kinds): the PLD bound is not
 *    formed and the ledger charges exactly as "auto" (RDP for the Gaussian part, its bounds (A)
 *    and (B) for the pure part).  Sound, just not tighter.
 *  - The PLD bound costs FFTs, so it is computed only when the auto (RDP) bound would refuse the
 *    charge (and is below DPO__PLD_REACH = 8 times the budget): while that fits, the spent eps
 *    is the RDP one; past it, min(RDP, PLD).  (So the spent eps can step down once when PLD
 *    takes over: both values are valid upper bounds.)
 *  - Plan look-ahead: a run announces its planned number of releases P (dpo_ledger_record_plan,
 *    journalled; dpo_ledger_plan_fits announces its n).  When the ledger holds one kind of
 *    release, j <= P of them, the bound used is eps of P releases if that fits the budget: the
 *    first j releases of an adaptive composition of P are a post-processing of it, so eps(P)
 *    bounds them too, and one PLD evaluation serves the whole run.  Otherwise (no plan, more
 *    releases than planned, several kinds, or eps(P) over budget) the exact count is evaluated.
 *  - The PLD grid is h = dpo_pld_auto_h(budget eps, releases evaluated), as in
 *    dpo_pld_calibrate / `dpopt calibrate --accountant pld`, so the ledger's eps of a plan is the
 *    value calibrate reports for it.  The spent delta is the budget's delta.
 * The bound is a deterministic function of the charges, the plan line and the budget: a journal
 * replays to the same totals.  One PLD evaluation per run in the common case; dpo_pld_eps keeps
 * a process-wide memo of its (pure) values, so repeated ledgers of one plan evaluate it once.
 */
#include "mech_ops.h"
#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <string.h>

#define DPO__PLD_REACH 8.0 /* RDP eps / budget past which no PLD bound is formed (below) */

typedef struct {
  dpo__auto_t a;  /* every release, composed as under "auto" (first: dpo_ledger_parts reads it) */
  int mixed;      /* some release is not a PLD kind: no PLD bound */
  int nk;
  dpo__pld_rel_t k[DPO__PLD_KINDS];
  int64_t plan;   /* releases the run planned (0: none announced) */
  int strict;     /* dpo_ledger_plan_fits: refuse once eps(plan) is over budget */
  double total_eps, total_delta;
  int by_pld;     /* the totals are the PLD bound */
} dpo__pldacct_t;

static void dpo__pldacct_init(void *st) {
  dpo__pldacct_t *s = st;
  memset(s, 0, sizeof *s);
  dpo__acct_auto.init(&s->a);
}

/* Is c a PLD kind?  Then *k = its kind (count 1), z as the RDP accountant computes it: the grid
 * mechanism's snapping inflates the sensitivity (privacy.h). */
static int dpo__pld_kind(const dpo_charge_t *c, dpo__pld_rel_t *k) {
  const dpo__mech_ops_t *mo = dpo__mech_ops(c->mechanism);
  if (!mo || !mo->pld || c->accounting != DPO_ACCOUNTING_RDP ||
      !(c->sampling == DPO_SAMPLING_NONE || c->sampling == DPO_SAMPLING_POISSON ||
        (c->sampling == DPO_SAMPLING_WOR && c->neighbours == DPO_NEIGHBOURS_REPLACE_ONE)))
    return 0;
  memset(k, 0, sizeof *k);
  k->wor = c->sampling == DPO_SAMPLING_WOR; /* the same pair as poisson at q = m/n (pld.c) */
  k->poisson = c->sampling == DPO_SAMPLING_POISSON || k->wor;
  k->m = k->poisson ? c->m : 0;
  k->n = k->poisson ? c->n : 0;
  k->z = dpo_pld_charge_z(c->noise_scale, c->sensitivity, c->dim); /* 0: auto validated it */
  k->count = 1;
  return k->z > 0 && isfinite(k->z);
}

/* the Gaussian's own snapping rule (mech_ops.c), so the calibration and the ledger agree */
double dpo_pld_charge_z(double sigma, double sens, int64_t dim) {
  const dpo_charge_t c = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = sigma,
                          .sensitivity = sens, .dim = dim};
  double s2;
  if (dpo__mech_ops(DPO_MECH_GAUSSIAN)->snapped(&c, &s2)) {
    dpo_errclear();
    return 0;
  }
  return dpo__div_down(sigma, s2);
}

static int dpo__same_kind(const dpo__pld_rel_t *a, const dpo__pld_rel_t *b) {
  return a->poisson == b->poisson && a->wor == b->wor && a->m == b->m && a->n == b->n &&
         a->z == b->z;
}

/* the PLD bound of ns's releases (module top): one kind, cnt <= plan releases: eps(plan) if it
 * fits, else eps(K) at the next multiple K of plan/64 if that fits (at most 64 evaluations
 * while a run over-spends its plan), else eps(cnt); several kinds: the exact counts */
static int dpo__pld_bound(const dpo__pldacct_t *ns, double beps, double bdelta, double *eps) {
  int64_t cnt = 0;
  int st;
  for (int i = 0; i < ns->nk; i++) cnt += ns->k[i].count;
  if (ns->nk == 1 && ns->plan > cnt) {
    int64_t g = ns->plan / 64 > 1 ? ns->plan / 64 : 1, K[2] = {ns->plan, (cnt + g - 1) / g * g};
    for (int i = 0; i < (ns->strict ? 1 : 2); i++) {
      dpo__pld_rel_t p = ns->k[0];
      p.count = K[i];
      if (i == 1 && (K[1] <= cnt || K[1] >= ns->plan)) break;
      if ((st = dpo__pld_eps_mix(1, &p, bdelta, dpo_pld_auto_h(beps, K[i]), eps)))
        return st;
      if (*eps <= beps || ns->strict) return DPO_OK; /* strict: the plan cannot fit */
    }
  }
  return dpo__pld_eps_mix(ns->nk, ns->k, bdelta, dpo_pld_auto_h(beps, cnt), eps);
}

static int dpo__pldacct_charge(void *state, const dpo_charge_t *c, double beps, double bdelta,
                               int commit, dpo__acct_result_t *r) {
  dpo__pldacct_t *s = state, ns = *s;
  dpo__acct_result_t ra;
  dpo__pld_rel_t k;
  int st;
  /* the auto part composes every release; its budget test is replaced by the one below */
  if ((st = dpo__acct_auto.charge(&ns.a, c, INFINITY, bdelta, 1, &ra))) return st;
  *r = ra;
  if (!ra.fits) return DPO_OK; /* the (eps, delta) releases exhausted delta: refused */
  const dpo__mech_ops_t *mo = dpo__mech_ops(c->mechanism);
  const int pure = mo && mo->pure &&
                   ra.cost_delta == 0 && ns.a.n_approx == 0;
  if (!ns.mixed && pure) {
    /* part P of bound (C): composed by the auto part's basic accountant */
  } else if (!ns.mixed && dpo__pld_kind(c, &k)) {
    int i = 0;
    while (i < ns.nk && !dpo__same_kind(&ns.k[i], &k)) i++;
    if (i < ns.nk) ns.k[i].count++;
    else if (ns.nk < DPO__PLD_KINDS) ns.k[ns.nk++] = k;
    else ns.mixed = 1;
  } else {
    ns.mixed = 1;
  }
  double e = ra.total_eps, d = ra.total_delta;
  ns.by_pld = 0;
  /* Past DPO__PLD_REACH times the budget by RDP the PLD bound is not formed: a tiny multiplier
   * (a calibration's probe) would need a huge grid.  The RDP bound is well above the PLD one at
   * small sampling rates and many steps: 2.29 against 1.0 for 1000 Poisson steps at q = 1e-3
   * (Opacus-sized epoch), about 3x for wor kinds (4 of 10 rows, 3 steps: 1.0 against 0.368);
   * a reach of 2 refused the PLD multiplier of such plans and ran them with the RDP one.  A
   * PLD failure (grid too large, memory) leaves the auto bound: skipping a valid bound is
   * always sound. */
  if (!(e <= beps) && e <= DPO__PLD_REACH * beps && !ns.mixed && ns.nk > 0 && bdelta > 0) {
    double ep = INFINITY;
    if (dpo__pld_bound(&ns, beps, bdelta, &ep)) {
      dpo_errclear();
      ep = INFINITY;
    }
    if (isfinite(ep) && ns.a.n_pure > 0) { /* (C): plus the pure part, exactly summed */
      double eP, dP;
      dpo__acct_basic.spent(&ns.a.basic, &eP, &dP);
      ep = dP == 0 ? dpo__add_up(ep, eP) : INFINITY;
    }
    if (ep < e) {
      e = ep;
      d = bdelta;
      ns.by_pld = 1;
    }
  }
  r->total_eps = e;
  r->total_delta = d;
  r->charge_eps = e > s->total_eps ? dpo__add_up(e, -s->total_eps) : 0.0;
  r->charge_delta = d > s->total_delta ? dpo__add_up(d, -s->total_delta) : 0.0;
  r->fits = e <= beps && d <= bdelta;
  ns.total_eps = e;
  ns.total_delta = d;
  if (commit && r->fits) *s = ns;
  return DPO_OK;
}

static void dpo__pldacct_spent(const void *state, double *eps, double *delta) {
  const dpo__pldacct_t *s = state;
  if (eps) *eps = s->total_eps;
  if (delta) *delta = s->total_delta;
}

static void dpo__pldacct_plan(void *state, int64_t steps, int strict) {
  dpo__pldacct_t *s = state;
  s->plan = steps > 0 ? steps : 0;
  s->strict = strict;
}

static const char *dpo__pldacct_bound(const void *state) {
  const dpo__pldacct_t *s = state;
  return s->by_pld ? "pld" : dpo__auto_bound(&s->a); /* rdp also when (B) converted the pure part */
}

const dpo__acct_ops_t dpo__acct_pld = {"pld",
                                       sizeof(dpo__pldacct_t),
                                       dpo__pldacct_init,
                                       dpo__pldacct_charge,
                                       dpo__pldacct_spent,
                                       dpo__pldacct_plan,
                                       dpo__pldacct_bound};
