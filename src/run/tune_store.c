/* Per-party budget stores of a multi-party dpopt tune: tune_store.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/budget.h"
#include "dpopt/comm.h"
#include "dpopt/parties.h"
#include "dpopt/status.h"
#include "privacy/budget_run.h"
#include "run/tune_store.h"

struct dpo__tune_pstore {
  MPI_Comm comm;
  int rank, party; /* party: this rank's party if it is the party's first rank, else -1 */
  double eps, delta;
  dpo_parties_t *pt;
  dpo_budget_t *bud;
  int reserved;
  char run_id[65];
};

int dpo__tune_pstore_key(const char *k) {
  const char *dot = strrchr(k, '.');
  return dot && !strcmp(dot, ".budget_store") &&
         (!strncmp(k, "parties.", 8) || !strncmp(k, "party.", 6));
}

static void dpo__tune_pstore_any(const char *k, const char *v, const char *o, void *arg) {
  (void)v, (void)o;
  if (dpo__tune_pstore_key(k)) *(int *)arg = 1;
}

static void dpo__tune_pstore_free(dpo__tune_pstore_t *ps) {
  if (!ps) return;
  dpo_budget_close(ps->bud);
  dpo_parties_destroy(ps->pt);
  free(ps);
}

int dpo__tune_pstore_check(MPI_Comm comm, const dpo_config_t *cfg, const char *key_file,
                           double eps, double delta, int seeded, dpo__tune_pstore_t **out) {
  int any = 0, size, rc = DPO_OK;
  *out = NULL;
  dpo_config_foreach(cfg, dpo__tune_pstore_any, &any);
  if (!any) return DPO_OK;
  dpo__tune_pstore_t *ps = calloc(1, sizeof *ps);
  if (!ps) return dpo_agree(comm, dpo_err(DPO_ENOMEM, "out of memory"));
  ps->comm = comm;
  ps->party = -1;
  ps->eps = eps;
  ps->delta = delta;
  MPI_Comm_rank(comm, &ps->rank);
  MPI_Comm_size(comm, &size);
  if (seeded)
    rc = dpo_err(DPO_EINVAL, "--seed makes the tune NOT private, so it cannot charge the "
                 "parties' budget stores: drop --seed (or parties.budget_store)");
  else if (!(rc = dpo_parties_from_config(cfg, NULL, size, &ps->pt)) && (!ps->pt || !ps->pt->store))
    rc = dpo_err(DPO_EINVAL, "parties.budget_store needs parties (parties.count)");
  if (!rc) {
    int k = ps->pt->rank_party[ps->rank];
    if (ps->rank == ps->pt->first_rank[k] && ps->pt->store[k] && ps->pt->store[k][0]) {
      ps->party = k;
      rc = dpo__budget_party_check(ps->pt->name[k], ps->pt->data[k], ps->pt->store[k], key_file,
                                   eps, delta, "tune", 0, &ps->bud);
    }
  }
  if ((rc = dpo_agree(comm, rc))) {
    dpo__tune_pstore_free(ps);
    return rc;
  }
  *out = ps;
  return DPO_OK;
}

int dpo__tune_pstore_reserve(dpo__tune_pstore_t *ps, const dpo_ledger_t *L) {
  int rc = DPO_OK;
  if (!ps) return DPO_OK;
  if (ps->rank == 0) rc = dpo_ledger_run_id(L, ps->run_id);
  if ((rc = dpo_agree(ps->comm, rc))) return rc;
  MPI_Bcast(ps->run_id, (int)sizeof ps->run_id, MPI_CHAR, 0, ps->comm);
  if (ps->bud && !(rc = dpo_budget_reserve(ps->bud, ps->run_id, ps->eps, ps->delta, "tune", 0)))
    ps->reserved = 1;
  return dpo_agree(ps->comm, rc);
}

void dpo__tune_pstore_finish(dpo__tune_pstore_t *ps, const dpo_ledger_t *L) {
  if (!ps) return;
  dpo_ledger_parts_t v;
  memset(&v, 0, sizeof v);
  v.eps = NAN;
  if (ps->rank == 0 && (!L || dpo_ledger_parts(L, &v))) v.eps = NAN;
  MPI_Bcast(&v, (int)sizeof v, MPI_BYTE, 0, ps->comm);
  if (ps->reserved && (!(v.eps >= 0) || dpo_budget_settle(ps->bud, ps->run_id, &v)))
    fprintf(stderr, "dpopt: warning: party %d: its budget store keeps the tune's reservation "
            "spent whole%s%s\n", ps->party, v.eps >= 0 ? ": " : "",
            v.eps >= 0 ? dpo_errmsg() : "");
  dpo__tune_pstore_free(ps);
}
