/* dpopt admm's parties' own data files and budget stores (doc/design.md, "Budget stores",
 * "Per-party stores"): under privacy.trust = secagg or local every party (one a rank) may read
 * its own file (party.K.data, parties.data = FILE%d) and charge its own store
 * (party.K.budget_store, parties.budget_store = DIR%d), read into the party table dpopt
 * train's parties use (dpo_parties_per_rank, privacy/parties.c: the keys read and checked in
 * one place), so one store accounts for a party's data set over train and admm runs.  The
 * store is opened and checked on the party's rank before anything is loaded (the shared check,
 * privacy/budget_run.h), reserved under the run's id before the first release, and settled to
 * the party's OWN journal (rank 0's party: the coordinator's, which is its own), never to what
 * the coordinator says of it; a resume is settled against that journal too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/budget.h"
#include "dpopt/comm.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "privacy/budget_run.h" /* dpo__budget_party_check */
#include "privacy/guard.h"      /* dpo_party_journal_path */
#include "admm/admm_arun.h"

int dpo__arun_pstore_read(const dpo_config_t *cfg, dpo__arun_t *s) {
  int rc;
  if (!(s->ps = calloc(1, sizeof *s->ps))) return dpo_err(DPO_ENOMEM, "out of memory");
  /* the table train's parties read (every party's keys, checked there), one party a rank,
   * each with the run's budget */
  if ((rc = dpo_parties_per_rank(cfg, s->spec->trust, s->size, s->eps, s->delta, &s->pt)))
    return rc;
  s->ps->data = s->pt->data[s->rank];
  s->ps->store = s->pt->store[s->rank];
  const int nd = s->pt->data[0] != NULL, ns = s->pt->store[0] != NULL; /* every party or none */
  if (!nd && !ns) return DPO_OK;
  if (!s->secagg && !s->local)
    return dpo_err(DPO_EINVAL, "%s: each party's own data file and budget store (parties.data, "
                   "parties.budget_store, party.K.*) are read under privacy.trust = secagg "
                   "(--method dpadmm / dpaccadmm) or local (those, or consensus with --private), "
                   "where each party keeps its own journal; not under %s", nd ? "parties.data"
                   : "parties.budget_store", s->trust);
  if (nd && dpo_config_get(cfg, "data.train"))
    return dpo_err(DPO_EINVAL, "%s: FILE (data.train) and per-party files (parties.data): each "
                   "party reads its own file; drop FILE", dpo_config_origin(cfg, "data.train"));
  if (ns && s->seeded) /* not private: no eps describes what it spends */
    return dpo_err(DPO_EINVAL, "--seed makes the run NOT private, so it cannot charge the "
                   "parties' budget stores: drop --seed (or parties.budget_store)");
  if (nd && s->store)
    return dpo_err(DPO_EINVAL, "%s: per-party data files (parties.data) with one budget store: "
                   "the store accounts for one data set; give each party its own store "
                   "(parties.budget_store = DIR%%d or party.K.budget_store)",
                   dpo_privacy_spec_origin(s->spec, DPO_SPEC_STORE));
  return DPO_OK;
}

int dpo__arun_pstore_check(MPI_Comm comm, dpo__arun_t *s) {
  int rc = DPO_OK;
  if (s->ps->store)
    rc = dpo__budget_party_check(s->rank, s->ps->data, s->ps->store, s->jkey, s->eps, s->delta,
                                 "admm", s->resuming, &s->ps->bud);
  return dpo_agree(comm, rc);
}

/* Not collective: what the run has charged this rank's party, from the party's own journal
 * (rank 0's party: the coordinator's journal's account of party 0, which is its own). */
static int dpo__arun_pstore_parts(const dpo__arun_t *s, const dpo_ledger_t *L,
                                  dpo_ledger_parts_t *p) {
  char j[1100];
  int rc;
  if (s->rank == 0) return dpo_ledger_party_parts(L, 0, p);
  if ((rc = dpo_party_journal_path(s->pdir, s->rank, j, sizeof j))) return rc;
  return dpo_ledger_file_parts(j, s->jkey && *s->jkey ? s->jkey : NULL, p);
}

/* Collective: a party's store's refusal, agreed, naming the party (what is left stays with it) */
static int dpo__arun_pstore_refusal(MPI_Comm comm, const dpo__arun_t *s, int rc) {
  return dpo_agree(comm, dpo__budget_party_refused(s->rank, rc,
                                                   s->resuming ? "resumed run" : "run"));
}

int dpo__arun_pstore_reserve(MPI_Comm comm, const dpo__arun_t *s, const dpo_ledger_t *L,
                             const char *run_id) {
  dpo__arun_pstore_t *ps = s->ps;
  dpo_ledger_parts_t now;
  int rc = DPO_OK;
  if (!s->ps->store) return dpo_agree(comm, DPO_OK); /* every party names one, or none does */
  snprintf(ps->run_id, sizeof ps->run_id, "%s", run_id);
  if (s->resuming) {
    /* every party checks under its lock against its own journal before any writes, so a
     * refusal writes nothing: an open reservation (a killed run) is kept, a settled one (a
     * stopped run) reserved whole again if the journal reaches what was settled */
    if ((rc = dpo__arun_pstore_parts(s, L, &now))) { /* no charge journalled yet */
      dpo_errclear();
      memset(&now, 0, sizeof now);
      dpo_rdp_curve_init(&now.rdp);
      dpo_rdp_curve_init(&now.pure_rdp);
    }
    rc = dpo_budget_reserve_resumed(ps->bud, run_id, s->eps, s->delta, "admm", &now, 1);
    if ((rc = dpo__arun_pstore_refusal(comm, s, rc))) return rc;
    rc = dpo_budget_reserve_resumed(ps->bud, run_id, s->eps, s->delta, "admm", &now, 0);
  } else
    rc = dpo_budget_reserve(ps->bud, run_id, s->eps, s->delta, "admm", 0);
  if (!rc) ps->reserved = 1;
  return dpo__arun_pstore_refusal(comm, s, rc);
}

void dpo__arun_pstore_settle(const dpo__arun_t *s, const dpo_ledger_t *L) {
  dpo__arun_pstore_t *ps = s->ps;
  dpo_ledger_parts_t p;
  if (!ps->reserved) return;
  ps->reserved = 0;
  /* the party's journal is closed (its guard destroyed): what it holds is what ran */
  if (dpo__arun_pstore_parts(s, L, &p) || dpo_budget_settle(ps->bud, ps->run_id, &p))
    fprintf(stderr, "dpopt: warning: party %d: its budget store %s keeps the run's reservation "
            "spent whole: %s\n", s->rank, ps->store, dpo_errmsg());
}

void dpo__arun_pstore_free(dpo__arun_t *s) {
  if (s->ps) dpo_budget_close(s->ps->bud); /* an open reservation stays spent whole */
  free(s->ps);
  s->ps = NULL;
  dpo_parties_destroy(s->pt);
  s->pt = NULL;
}
