/* The ledger's per-party accounts (multi-party runs): each party's budget and state beside the
 * global one, under the same accountant; a release names the parties whose rows it touches and
 * is journalled only if the global budget and every one of theirs admit it.  On ledger.c's
 * journal (dpo__ledger_append) and checks: this file calls into ledger.c, never the reverse. */
#include "ledger_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <stdlib.h>

int dpo_ledger_set_parties(dpo_ledger_t *L, int n, const double *eps_budget,
                           const double *delta_budget) {
  return dpo_ledger_set_parties_named(L, n, NULL, eps_budget, delta_budget);
}

/* resumed: positions 0..n-1 are the journal's accounts names[k] (increasing), with the same
 * budgets; the other accounts (parties lost at the resume) stay as the journal left them */
static int dpo__ledger_map_parties(dpo_ledger_t *L, int n, const int *names, const double *eb,
                                   const double *db) {
  if (L->nparties < n)
    return dpo_err(DPO_EINVAL, "ledger: the journal has %d party accounts, not %d",
                   L->nparties, n);
  int *map = malloc((size_t)n * sizeof *map);
  if (!map) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  for (int k = 0; k < n; k++) {
    int a = map[k] = names ? names[k] : k;
    if (a < 0 || a >= L->nparties || (k > 0 && a <= map[k - 1])) {
      free(map);
      return dpo_err(DPO_EINVAL, "ledger: party %d is not one of the journal's %d accounts (or "
                     "the names are not increasing)", a, L->nparties);
    }
    if (eb[k] != L->pbeps[a] || db[k] != L->pbdelta[a]) {
      free(map);
      return dpo_err(eb[k] > L->pbeps[a] || db[k] > L->pbdelta[a] ? DPO_EBUDGET : DPO_EINVAL,
                     "ledger: party %d budget (%.17g, %.17g) differs from the journal's "
                     "(%.17g, %.17g)", a, eb[k], db[k], L->pbeps[a], L->pbdelta[a]);
    }
  }
  free(L->pmap);
  L->pmap = map;
  L->npos = n;
  return DPO_OK;
}

int dpo_ledger_set_parties_named(dpo_ledger_t *L, int n, const int *names,
                                 const double *eps_budget, const double *delta_budget) {
  int st = dpo__ledger_rank0(L, "ledger_set_parties");
  if (st) return st;
  if (n < 1 || n > DPO__MAX_PARTIES || !eps_budget || !delta_budget)
    return dpo_err(DPO_EINVAL, "ledger_set_parties: %d parties (1..%d) or NULL budgets", n,
                   DPO__MAX_PARTIES);
  for (int k = 0; k < n; k++)
    if (!(eps_budget[k] > 0) || !isfinite(eps_budget[k]) ||
        !(delta_budget[k] >= 0 && delta_budget[k] < 1))
      return dpo_err(DPO_EINVAL, "ledger_set_parties: party %d budget (%g, %g): need eps > 0 "
                     "finite, delta in [0, 1)", names ? names[k] : k, eps_budget[k],
                     delta_budget[k]);
  if (L->nparties > 0) /* resumed: the journal's accounts, or some of them (run_ckpt.c) */
    return dpo__ledger_map_parties(L, n, names, eps_budget, delta_budget);
  for (int k = 0; names && k < n; k++)
    if (names[k] != k)
      return dpo_err(DPO_EINVAL, "ledger_set_parties: a new journal's parties are 0..%d", n - 1);
  if (L->count > 0)
    return dpo_err(DPO_EINVAL, "ledger_set_parties: charges were recorded without party "
                   "accounts");
  L->pbeps = malloc((size_t)n * sizeof *L->pbeps);
  L->pbdelta = malloc((size_t)n * sizeof *L->pbdelta);
  L->pstate = calloc((size_t)n, sizeof *L->pstate);
  L->pcount = calloc((size_t)n, sizeof *L->pcount);
  if (!L->pbeps || !L->pbdelta || !L->pstate || !L->pcount)
    return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  for (int k = 0; k < n; k++) {
    L->pbeps[k] = eps_budget[k];
    L->pbdelta[k] = delta_budget[k];
    if (!(L->pstate[k] = calloc(1, L->ops->state_size)))
      return dpo_err(DPO_ENOMEM, "ledger: out of memory");
    L->ops->init(L->pstate[k]);
  }
  L->nparties = n; /* only now: a failure above leaves the ledger without party accounts */
  if (L->fd >= 0) {
    json_object *o = json_object_new_object(), *be = json_object_new_array(),
                *bd = json_object_new_array();
    if (!o || !be || !bd) {
      json_object_put(o);
      json_object_put(be);
      json_object_put(bd);
      return dpo_err(DPO_ENOMEM, "ledger: out of memory");
    }
    json_object_object_add(o, "kind", json_object_new_string("parties"));
    for (int k = 0; k < n; k++) {
      json_object_array_add(be, dpo__jd(eps_budget[k]));
      json_object_array_add(bd, dpo__jd(delta_budget[k]));
    }
    json_object_object_add(o, "budget_eps", be);
    json_object_object_add(o, "budget_delta", bd);
    st = dpo__ledger_append(L, o);
    json_object_put(o);
  }
  return st;
}

int dpo_ledger_nparties(const dpo_ledger_t *L) {
  return !L ? 0 : L->pmap ? L->npos : L->nparties;
}

int dpo_ledger_party_spent(const dpo_ledger_t *L, int k, double *eps, double *delta) {
  int st = dpo__ledger_rank0(L, "ledger_party_spent");
  if (st) return st;
  const int a = dpo__ledger_acct(L, k);
  if (a < 0) return dpo_err(DPO_EINVAL, "ledger_party_spent: party %d of %d", k, L->nparties);
  L->ops->spent(L->pstate[a], eps, delta);
  return DPO_OK;
}

int dpo_ledger_party_budget(const dpo_ledger_t *L, int k, double *eps, double *delta) {
  int st = dpo__ledger_rank0(L, "ledger_party_budget");
  if (st) return st;
  const int a = dpo__ledger_acct(L, k);
  if (a < 0) return dpo_err(DPO_EINVAL, "ledger_party_budget: party %d of %d", k, L->nparties);
  if (eps) *eps = L->pbeps[a];
  if (delta) *delta = L->pbdelta[a];
  return DPO_OK;
}

int dpo_ledger_charge_parties(dpo_ledger_t *L, const dpo_charge_t *c, int np,
                              const int *parties, double *charged, int *refused) {
  int st = dpo__ledger_rank0(L, "ledger_charge_parties");
  if (refused) *refused = -2;
  if (st) return st;
  if (L->failed) return dpo_err(DPO_EIO, "ledger: an earlier journal write failed; no charges");
  const int npos = dpo_ledger_nparties(L);
  if (np < 0 || (np > 0 && !parties) || np > npos)
    return dpo_err(DPO_EINVAL, "ledger_charge_parties: %d parties of %d", np, npos);
  for (int i = 0; i < np; i++)
    if (parties[i] < 0 || parties[i] >= npos || (i > 0 && parties[i] <= parties[i - 1]))
      return dpo_err(DPO_EINVAL, "ledger_charge_parties: party list not increasing in "
                     "[0, %d)", npos);
  dpo__acct_result_t r, pr;
  if ((st = dpo__charge_relation(c, L->rel))) return st;
  if ((st = L->ops->charge(L->state, c, L->beps, L->bdelta, 0, &r))) return st;
  if (!r.fits) {
    if (refused) *refused = -1;
    return dpo__ledger_refuse(L, c, &r);
  }
  double *ptot = malloc((size_t)(np > 0 ? np : 1) * sizeof *ptot);
  if (!ptot) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  for (int i = 0; i < np; i++) {
    int k = dpo__ledger_acct(L, parties[i]); /* the party's account (its name) */
    if ((st = L->ops->charge(L->pstate[k], c, L->pbeps[k], L->pbdelta[k], 0, &pr))) goto out;
    if (!pr.fits) {
      if (refused) *refused = parties[i];
      st = dpo_err(DPO_EBUDGET, "privacy budget of party %d exhausted: step %lld would raise "
                   "its spent (eps, delta) to (%.17g, %.17g), budget (%.17g, %.17g)", k,
                   (long long)c->step, pr.total_eps, pr.total_delta, L->pbeps[k], L->pbdelta[k]);
      goto out;
    }
    ptot[i] = pr.total_eps;
  }
  if (L->fd >= 0) { /* durable before any total moves and before the caller releases */
    json_object *o = dpo__ledger_charge_line(L, c, &r), *pa = json_object_new_array(),
                *pt = json_object_new_array();
    if (!o || !pa || !pt) {
      json_object_put(o);
      json_object_put(pa);
      json_object_put(pt);
      st = dpo_err(DPO_ENOMEM, "ledger: out of memory");
      goto out;
    }
    for (int i = 0; i < np; i++) {
      json_object_array_add(pa, json_object_new_int(dpo__ledger_acct(L, parties[i])));
      json_object_array_add(pt, dpo__jd(ptot[i]));
    }
    json_object_object_add(o, "parties", pa);
    json_object_object_add(o, "party_total_eps", pt);
    st = dpo__ledger_append(L, o);
    json_object_put(o);
    if (st) goto out;
  }
  if ((st = L->ops->charge(L->state, c, L->beps, L->bdelta, 1, &pr))) goto out;
  for (int i = 0; i < np; i++) {
    int k = dpo__ledger_acct(L, parties[i]);
    if ((st = L->ops->charge(L->pstate[k], c, L->pbeps[k], L->pbdelta[k], 1, &pr))) goto out;
    L->pcount[k]++;
  }
  L->count++;
  if (charged) *charged = r.charge_eps;
  if (refused) *refused = -2;
out:
  free(ptot);
  return st;
}

int dpo_ledger_party_event(dpo_ledger_t *L, const char *event, int party, int64_t step) {
  int st = dpo__ledger_rank0(L, "ledger_party_event");
  if (st) return st;
  if (!event) return dpo_err(DPO_EINVAL, "ledger_party_event: NULL event");
  if (L->fd < 0) return DPO_OK;
  if (L->failed) return dpo_err(DPO_EIO, "ledger: an earlier journal write failed");
  json_object *o = json_object_new_object();
  if (!o) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  json_object_object_add(o, "event", json_object_new_string(event));
  const int a = party >= 0 ? dpo__ledger_acct(L, party) : -1; /* the party's account */
  json_object_object_add(o, "party", json_object_new_int(a >= 0 ? a : party));
  json_object_object_add(o, "step", json_object_new_int64(step));
  st = dpo__ledger_append(L, o);
  json_object_put(o);
  return st;
}
