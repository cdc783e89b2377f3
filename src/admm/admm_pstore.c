/* dpopt admm's parties' own data files and budget stores (doc/design.md, "Budget stores",
 * "Per-party stores"): under privacy.trust = secagg or local every party (one a rank) may read
 * its own file (party.K.data, parties.data = FILE%d) and charge its own store
 * (party.K.budget_store, parties.budget_store = DIR%d), the same stores and keys dpopt train's
 * parties use, so one store accounts for a party's data set over train and admm runs.  The
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
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "privacy/budget_run.h" /* dpo__budget_party_check */
#include "privacy/guard.h"      /* dpo_party_path, dpo_party_journal_path, dpo_party_stores_distinct */
#include "admm/admm_arun.h"

int dpo__arun_pstore_read(const dpo_config_t *cfg, dpo__arun_t *s) {
  int nd = 0, ns = 0, rc = DPO_OK;
  char **sts = calloc((size_t)s->size, sizeof *sts);
  if (!sts || !(s->ps = calloc(1, sizeof *s->ps))) {
    free(sts);
    return dpo_err(DPO_ENOMEM, "out of memory");
  }
  /* every rank reads every party's keys (each is then a key the run reads) and keeps its own */
  for (int k = 0; k < s->size && !rc; k++) {
    char *d = NULL;
    if (!(rc = dpo_party_path(cfg, "data", k, &d)))
      rc = dpo_party_path(cfg, "budget_store", k, &sts[k]);
    nd += d != NULL;
    ns += sts[k] != NULL;
    if (k == s->rank) s->ps->data = d;
    else free(d);
  }
  /* each party holds its store's lock from its check to its reservation: two parties on one
   * store would wait for each other */
  int drc = rc ? DPO_OK : dpo_party_stores_distinct(sts, NULL, s->size);
  s->ps->store = sts[s->rank]; /* this rank's party's own, kept */
  sts[s->rank] = NULL;
  for (int k = 0; k < s->size; k++) free(sts[k]);
  free(sts);
  if (rc || (!nd && !ns)) return rc;
  if (drc) return drc;
  if (!s->secagg && !s->local)
    return dpo_err(DPO_EINVAL, "%s: each party's own data file and budget store (parties.data, "
                   "parties.budget_store, party.K.*) are read under privacy.trust = secagg "
                   "(--method dpadmm / dpaccadmm) or local (those, or consensus with --private), "
                   "where each party keeps its own journal; not under %s", nd ? "parties.data"
                   : "parties.budget_store", s->trust);
  if (nd && nd != s->size)
    return dpo_err(DPO_EINVAL, "parties: %d of %d parties name their own data file: every party "
                   "(one a rank) names one (parties.data = FILE%%d or party.K.data), or none does",
                   nd, s->size);
  if (ns && ns != s->size)
    return dpo_err(DPO_EINVAL, "parties: %d of %d parties name a budget store: every party "
                   "names one (parties.budget_store = DIR%%d or party.K.budget_store), or none "
                   "does", ns, s->size);
  if (ns && !nd) /* a party's store accounts for the file the party registered in it */
    return dpo_err(DPO_EINVAL, "parties: a party's budget store (parties.budget_store or "
                   "party.K.budget_store) needs the party's own data file (parties.data or "
                   "party.K.data)");
  if (nd && dpo_config_get(cfg, "data.train"))
    return dpo_err(DPO_EINVAL, "%s: FILE (data.train) and per-party files (parties.data): each "
                   "party reads its own file; drop FILE", dpo_config_origin(cfg, "data.train"));
  if (ns && s->seeded) /* not private: no eps describes what it spends */
    return dpo_err(DPO_EINVAL, "--seed makes the run NOT private, so it cannot charge the "
                   "parties' budget stores: drop --seed (or parties.budget_store)");
  if (nd && s->store)
    return dpo_err(DPO_EUNSUP, "%s: per-party data files (parties.data) with one budget store: "
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
  if (!s->ps) return;
  dpo_budget_close(s->ps->bud); /* an open reservation stays spent whole */
  free(s->ps->data);
  free(s->ps->store);
  free(s->ps);
  s->ps = NULL;
}
