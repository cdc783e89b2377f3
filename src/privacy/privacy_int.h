/* Private interfaces of src/privacy: the cost of a release, accountant ops and their table. */
#ifndef DPO_PRIVACY_INT_H
#define DPO_PRIVACY_INT_H

#include "dpopt/privacy.h"
#include "rounding.h"

#include <stdint.h>
#include <string.h>

/* directed rounding and exact sums: rounding.h (the bottom of the room, calls nothing above) */
/* ---- the cost of one release before composition (validated; eps and delta rounded up). */
int dpo__charge_cost(const dpo_charge_t *c, double *eps, double *delta);

/* ---- accountant ops: how costs compose into totals.  A new kind (RDP) is one more table. */
typedef struct {
  double cost_eps, cost_delta;     /* the release's own cost (after sampling amplification) */
  double charge_eps, charge_delta; /* increase of the totals, rounded up */
  double total_eps, total_delta;   /* totals after the charge, rounded up */
  int fits;                        /* exact totals <= budgets */
} dpo__acct_result_t;

typedef struct {
  const char *name;
  size_t state_size;
  void (*init)(void *state);
  /* Compute the charge of c against the budgets; if commit and it fits, apply it.
   * Deterministic: calling with commit=0 then commit=1 gives the same result. */
  int (*charge)(void *state, const dpo_charge_t *c, double budget_eps, double budget_delta,
                int commit, dpo__acct_result_t *r);
  void (*spent)(const void *state, double *eps, double *delta);
  /* optional (NULL: ignored): the run's plan announces `steps` releases (journalled plan line,
   * replayed in order; strict = 1 from dpo_ledger_plan_fits, which only asks whether the whole
   * plan fits, so a charge may be refused as soon as the plan cannot fit), and which bound gave
   * the spent eps ("pld", "rdp", ...; NULL: the accountant's name) */
  void (*plan)(void *state, int64_t steps, int strict);
  const char *(*bound)(const void *state);
} dpo__acct_ops_t;

/* The basic accountant's state (accountant.c): sequential releases add (thesis Thm 4.1.3,
 * delta adds too); consecutive "disjoint" batches of one group are a parallel composition. */
typedef struct {
  dpo__xsum_t eps, delta;
  int open;        /* a disjoint pass is open */
  int64_t group;   /* its id */
  double gmax_eps; /* max cost so far within the pass */
  double gmax_delta;
} dpo__basic_t;
extern const dpo__acct_ops_t dpo__acct_basic;

/* The Renyi accountant (acct_rdp.c): per-order composition, eps at the budget's delta.  State: the
 * composed curve of closed releases plus, while a disjoint pass is open, the per-order max of
 * its batches (parallel composition: each example is in one batch). */
/* The last release's curve, keyed by its parameters: DP-SGD charges the same release every
 * step, so a step costs O(#orders) instead of a fresh curve (each order a series of up to
 * alpha lgamma terms, or the fractional series). */
typedef struct {
  int valid;
  dpo_mech_t mechanism;
  dpo_sampling_t sampling;
  dpo_accounting_t accounting;
  int64_t m, n, dim;
  double noise_scale, sensitivity, rho;
  dpo_rdp_curve_t curve;
} dpo__rdp_cache_t;

typedef struct {
  dpo__rdp_cache_t cache;
  double sum[DPO_RDP_MAX_ORDERS];
  double gmax[DPO_RDP_MAX_ORDERS];
  int open;
  int64_t group;
  double bdelta; /* the budget's delta, remembered at the first charge (for spent) */
} dpo__rdpacct_t;
extern const dpo__acct_ops_t dpo__acct_rdp;
/* The curve of one RDP release (gaussian with accounting "rdp", or rdp-rho), validated. */
int dpo__rdp_release(const dpo_charge_t *c, dpo_rdp_curve_t *rc);
/* The same through a one-entry cache (a hit copies the cached curve; identical results). */
int dpo__rdp_release_cached(dpo__rdp_cache_t *k, const dpo_charge_t *c, dpo_rdp_curve_t *rc);
/* s += the release curve rc (sampling "disjoint" with the open pass's group: per-order max). */
void dpo__rdpacct_add(dpo__rdpacct_t *s, const dpo_rdp_curve_t *rc, dpo_sampling_t sampling,
                      int64_t group);
/* dpo_rdp_curve_add with the sampling as the charge carries it */
int dpo__rdp_curve_add_s(dpo_rdp_curve_t *c, dpo_sampling_t sampling, int64_t m, int64_t n,
                         double z, int64_t steps);
/* The composed curve of s (closed releases + the open pass), rounded up. */
void dpo__rdpacct_total(const dpo__rdpacct_t *s, dpo_rdp_curve_t *tot);

/* The "auto" accountant (acct_auto.c): pure / (eps, delta) releases and RDP releases in one
 * budget (dpo_ledger_open_ex in privacy.h). */
/* Its state (flat: copied by assignment), also the fallback part of the "pld" accountant. */
typedef struct {
  dpo__basic_t basic;   /* parts P and A */
  dpo__rdpacct_t rdp;   /* part R */
  dpo__rdpacct_t pconv; /* P' */
  int64_t n_rdp, n_approx, n_pure;
  double bdelta; /* the budget's delta, remembered at each charge (for spent) */
} dpo__auto_t;
extern const dpo__acct_ops_t dpo__acct_auto;
/* Which bound gave auto's totals: "basic", or "rdp" (an RDP curve: Gaussian releases, or the
 * pure releases' RDP conversion when it is the smaller). */
const char *dpo__auto_bound(const void *state);

/* The "pld" accountant (acct_pld.c): "auto", plus a PLD bound (pld.c) on the Gaussian releases
 * when every release of the ledger is a Gaussian one with sampling none or poisson. */
extern const dpo__acct_ops_t dpo__acct_pld;
/* One kind of release in a PLD composition: count Gaussian releases of multiplier z (after the
 * grid snapping), unsampled, Poisson-subsampled at rate m/n, or m of n without replacement. */
#define DPO__PLD_KINDS 8
typedef struct {
  int poisson; /* the sampled pair at q = m/n (poisson, or wor under replace-one: pld.c) */
  int wor;     /* charged as wor: RDP's bound for it is far looser (acct_pld.c) */
  int64_t m, n;
  double z;
  int64_t count;
} dpo__pld_rel_t;
/* eps at delta of the composition of k kinds (pld.c; grid h, dominating as dpo_pld_eps). */
int dpo__pld_eps_mix(int k, const dpo__pld_rel_t *r, double delta, double h, double *eps);
/* c[0 .. na + nb - 2] = the linear convolution of a and b (real), by real FFTs of length
 * 2^*lg (pld_fft.c); negative results are set to 0; b == a squares. */
int dpo__pld_rconv(const double *a, int64_t na, const double *b, int64_t nb, double *c,
                   int *lg);
/* c[0 .. n) = the t-fold circular convolution of x (length nx, folded modulo n; n a power of
 * 2, >= 4) with itself: one real FFT, each coefficient to the power t (0 where that power is
 * below 1e-200), one inverse (pld_fft.c); c is not clipped at 0 (pld.c bounds the error and
 * clips). */
int dpo__pld_rpow(const double *x, int64_t nx, int64_t n, int64_t t, double *c);

/* The accountant table (acct_table.c, above the accountants).  NULL if unknown.  "basic": pure / (eps, delta) basic composition with disjoint passes;
 * "rdp": dpo__acct_rdp; "auto": dpo__acct_auto; "pld": dpo__acct_pld. */
const dpo__acct_ops_t *dpo__acct_find(const char *name);

/* Whether charge c may enter a ledger under relation rel: c states rel, and its sampling's
 * analysis holds under rel (poisson: add-remove; wor, disjoint, rdp-rho: replace-one).
 * DPO_EINVAL with a message saying which setting to change. */
int dpo__charge_relation(const dpo_charge_t *c, dpo_neighbours_t rel);

#endif
