#include "run/run_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/budget.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "privacy/guard.h" /* dpo_party_store_journal */
#include "privacy/budget_run.h"
#include "privacy/journal_chain.h"
#include "run/run_impl.h"

struct dpo__run_priv {
  MPI_Comm comm;
  int rank;
  int is_private;   /* the algorithm adds noise */
  int seeded;       /* --seed given: reproducible, NOT private */
  double eps, delta;
  const dpo_privacy_spec_t *spec; /* the run's (borrowed) */
  const char *acct; /* privacy.accountant: pld (default) | auto | basic | rdp */
  dpo_neighbours_t rel; /* privacy.neighbours: replace-one (default) | add-remove */
  dpo_clip_t clip;
  int has_clip;
  dpo_rng_t *rng;   /* rank 0 */
  dpo_ledger_t *ledger;
  char journal[1024];
  char key_file[1024]; /* privacy.journal_key ("": DPOPT_JOURNAL_KEY or the default) */
  char label[256];
  /* the data set's budget store (privacy.store; rank 0): reserved before the first release,
   * settled to the ledger's parts when the run ends */
  const char *store;
  dpo_budget_t *bud;
  char run_id[65];
  int reserved, settled;
  int sresume;              /* --resume: the journal must reach the store's head for the run */
  dpo_budget_head_t *head;  /* the journal's head kept in the store, moved at every line */
  /* multi-party runs with per-party stores (parties.budget_store): on a party's first rank,
   * that party's store, reserved for its budget and settled to its account; the coordinator
   * opens no other party's store */
  const dpo_parties_t *pt;
  int party;         /* this rank's party when it is the party's first rank, else -1 */
  dpo_budget_t *pbud;
  int preserved;
  int presume;       /* --resume, every rank: the stopped run's reservation, found by its id
                      * once the journal reopens (dpo__run_priv_party_now) */
  /* multi-party runs under secagg or with party stores: the run's id, which no party chooses
   * (dpo__run_priv_run_id); the party stores' reservations and the plan ("~run") use it */
  const dpo_parties_t *ptab;
  int presumed;
  char prun_id[65];
  char dir[1024];    /* the run directory (party 0's journal when it names none) */
};

int dpo__run_priv_setup(MPI_Comm comm, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                        const dpo_algo_t *algo, const dpo_shard_t *train,
                        const dpo_model_t *model, dpo__run_priv_t **out) {
  (void)train;
  (void)model;
  int rc = DPO_OK;
  dpo__run_priv_t *p = calloc(1, sizeof *p);
  if (!p) return dpo_err(DPO_ENOMEM, "out of memory");
  p->comm = comm;
  p->rank = dpo__rank(comm);
  p->party = -1;
  p->is_private = algo->is_private;
  int64_t seed = 0;
  const char *seed_s = dpo_config_get(cfg, "run.seed");
  p->seeded = seed_s != NULL;
  if ((rc = dpo_config_get_int(cfg, "run.seed", 0, &seed))) goto out;
  p->spec = spec;
  p->eps = spec->eps;
  p->delta = spec->delta;
  p->clip = spec->clip;
  p->has_clip = spec->clip.norm != DPO_CLIP_NONE;
  p->acct = dpo_acct_name(spec->accountant);
  p->rel = spec->rel;
  const char *key_s = NULL;
  dpo_config_get_str(cfg, "privacy.journal_key", "", &key_s);
  snprintf(p->key_file, sizeof p->key_file, "%s", key_s ? key_s : "");
  dpo_config_get_str(cfg, "privacy.store", NULL, &p->store);
  if (p->store && !*p->store) p->store = NULL;
  if (!isnan(p->eps) && !(p->eps > 0 && isfinite(p->eps))) {
    rc = dpo_err(DPO_EINVAL, "%s: privacy.eps = %g: eps must be > 0 (and finite)",
                 dpo_privacy_spec_origin(spec, DPO_SPEC_EPS), p->eps);
    goto out;
  }
  if (!p->is_private && !isnan(p->eps)) {
    rc = dpo_err(DPO_EINVAL,
                 "%s: a privacy budget was given but algorithm '%s' adds no noise; choose a "
                 "private algorithm (dp-*) or drop privacy.eps",
                 dpo_privacy_spec_origin(spec, DPO_SPEC_EPS), algo->name);
    goto out;
  }
  if (p->is_private && !(p->eps > 0 && isfinite(p->eps))) {
    rc = dpo_err(DPO_EINVAL, "algorithm '%s' is private: give the budget with --eps E (E > 0)",
                 algo->name);
    goto out;
  }
  if (p->is_private && !(p->delta >= 0 && p->delta < 1)) {
    rc = dpo_err(DPO_EINVAL, "privacy.delta must be in [0, 1)");
    goto out;
  }
  if (p->store && p->seeded) { /* a seeded run is not private: no eps describes what it spends */
    rc = dpo_err(DPO_EINVAL, "%s: --seed makes the run NOT private, so it cannot charge the "
                 "budget store %s: drop --seed (or the store)",
                 dpo_config_origin(cfg, "privacy.store"), p->store);
    goto out;
  }
  if (p->store && dpo_config_get(cfg, "parties.data")) {
    rc = dpo_err(DPO_EINVAL, "%s: per-party data files (parties.data) with one budget store: "
                 "the store accounts for one data set; give each party its own store "
                 "(parties.budget_store = DIR%%d or party.K.budget_store)",
                 dpo_config_origin(cfg, "privacy.store"));
    goto out;
  }
  /* Rank 0 draws all noise and samples.  Unseeded: key from the OS (private).  Seeded:
   * reproducible, and every output says the run is not private. */
  if (dpo__rank(comm) == 0) rc = dpo_rng_create(p->seeded, (uint64_t)seed, 0, &p->rng);
  if (!p->is_private)
    snprintf(p->label, sizeof p->label, "NOT PRIVATE: algorithm %s adds no noise", algo->name);
  else if (p->seeded)
    snprintf(p->label, sizeof p->label,
             "NOT PRIVATE: seeded run (--seed %lld) for reproducibility; budget accounting as if "
             "eps=%g, %s neighbours", (long long)seed, p->eps, dpo_neighbours_name(p->rel));
  else
    snprintf(p->label, sizeof p->label,
             "PRIVATE: (eps=%g, delta=%g) budget, %s neighbours, secure noise", p->eps, p->delta,
             dpo_neighbours_name(p->rel));
out:
  rc = dpo_agree(comm, rc);
  if (rc) {
    dpo__run_priv_destroy(p);
    return rc;
  }
  *out = p;
  return DPO_OK;
}

int dpo__run_priv_store_check(dpo__run_priv_t *p, const char *train, const char *test,
                              int resuming) {
  int rc = DPO_OK;
  if (!p->store || !p->is_private) return DPO_OK;
  p->sresume = resuming;
  if (p->rank == 0) {
    const char *files[2] = {train, test};
    /* checked and (once the journal names the run) reserved under one lock: no other run
     * reserves in between, and a refusal writes nothing */
    if (!(rc = dpo_budget_open(p->store, p->key_file, files, test ? 2 : 1, &p->bud)))
      rc = dpo_budget_lock(p->bud);
    /* a resumed run's id is its journal's, known once the journal is reopened */
    if (!rc && !resuming) rc = dpo_budget_reserve(p->bud, NULL, p->eps, p->delta, "train", 1);
  }
  return dpo_agree(p->comm, rc);
}

int dpo__run_priv_party_check(dpo__run_priv_t *p, const dpo_parties_t *pt, int resuming) {
  int rc = DPO_OK;
  if (pt && p->is_private && (pt->trust != DPO_TRUST_CENTRAL || (pt->store && pt->store[0]))) {
    p->ptab = pt;
    p->presumed = resuming;
  }
  if (!pt || !pt->store || !pt->store[0] || !p->is_private) return DPO_OK;
  p->pt = pt;
  p->presume = resuming;
  int k = pt->rank_party[p->rank];
  if (p->seeded) /* not private: no eps describes what it spends */
    rc = dpo_err(DPO_EINVAL, "--seed makes the run NOT private, so it cannot charge the parties' "
                 "budget stores: drop --seed (or parties.budget_store)");
  else if (p->rank == pt->first_rank[k]) {
    p->party = k;
    char j[1100];
    if (!(pt->eps[k] > 0))
      rc = dpo_err(DPO_EINVAL, "party %d has no budget: give privacy.eps, parties.eps or "
                   "party.%d.eps", pt->name[k], pt->name[k]);
    /* resumed: the store will be settled against the party's own journal (party_now) */
    else if (!resuming || !(rc = dpo_party_store_journal(pt, k, j, sizeof j)))
      rc = dpo__budget_party_check(pt->name[k], pt->data[k], pt->store[k], p->key_file,
                                   pt->eps[k], pt->delta[k], "train", resuming, &p->pbud);
  }
  return dpo_agree(p->comm, rc);
}

/* Collective, --resume (secagg: doc/design.md, "Budget stores", Resume): on party k's first
 * rank, what the run has charged party k so far, the larger per part of the coordinator's
 * view (its reopened journal's account of party k, sent by rank 0) and the party's own journal
 * replayed (read only): the same pair its settlement takes.  Both journals only grow, so this
 * is never below what the store settled for the run.  Only the coordinator's own party takes
 * the view alone (dpo_party_store_journal): any other party without its own journal is
 * refused, so no deviating coordinator can have a party's store settled on its word. */
static int dpo__run_priv_party_now(dpo__run_priv_t *p, dpo_ledger_parts_t *now) {
  const dpo_parties_t *pt = p->pt;
  dpo_ledger_parts_t w;
  int rc = DPO_OK;
  if (p->rank == 0) {
    for (int k = 0; k < pt->count; k++) {
      /* no party account in the journal: it charged no party yet */
      if (dpo_ledger_party_parts(p->ledger, k, &w)) {
        dpo_errclear();
        memset(&w, 0, sizeof w);
        dpo_rdp_curve_init(&w.rdp);
        dpo_rdp_curve_init(&w.pure_rdp);
      }
      if (pt->first_rank[k] == 0) *now = w;
      else MPI_Send(&w, (int)sizeof w, MPI_BYTE, pt->first_rank[k], 1, p->comm);
    }
  } else if (p->party >= 0) {
    MPI_Recv(now, (int)sizeof *now, MPI_BYTE, 0, 1, p->comm, MPI_STATUS_IGNORE);
    /* the party's own journal (its guard reopens it after the plan; here it is only read) */
    char j[1100];
    if (!(rc = dpo_party_store_journal(pt, p->party, j, sizeof j)) && j[0] &&
        !(rc = dpo_ledger_file_parts(j, p->key_file[0] ? p->key_file : NULL, &w)))
      rc = dpo_budget_parts_max(now, &w);
  }
  return rc;
}

/* Collective: a party's store's refusal, agreed, naming the party (the amounts stay with it). */
static int dpo__run_priv_party_refusal(const dpo__run_priv_t *p, int rc) {
  if (rc && p->party >= 0)
    rc = dpo__budget_party_refused(p->pt->name[p->party], rc,
                                   p->presume ? "resumed run" : "run");
  return dpo_agree(p->comm, rc);
}

/* after the journal: each party's whole budget reserved in its store under the run's id (a
 * resumed run's open reservation is kept, a settled one is reserved whole again) */
static int dpo__run_priv_party_reserve(dpo__run_priv_t *p) {
  int rc = DPO_OK;
  if (!p->pt) return DPO_OK;
  const double eps = p->party >= 0 ? p->pt->eps[p->party] : 0;
  const double delta = p->party >= 0 ? p->pt->delta[p->party] : 0;
  dpo_ledger_parts_t now;
  /* resumed: every party checks (under the lock it keeps) before any writes, so a refusal
   * writes nothing; a new run's fit was checked at dpo__run_priv_party_check */
  if (p->presume) {
    if (!(rc = dpo__run_priv_party_now(p, &now)) && p->pbud)
      rc = dpo_budget_reserve_resumed(p->pbud, p->prun_id, eps, delta, "train", &now, 1);
    if ((rc = dpo__run_priv_party_refusal(p, rc))) return rc; /* agreed: nobody writes */
    if (p->pbud) rc = dpo_budget_reserve_resumed(p->pbud, p->prun_id, eps, delta, "train", &now, 0);
  } else if (p->pbud)
    rc = dpo_budget_reserve(p->pbud, p->prun_id, eps, delta, "train", 0);
  if (!rc && p->pbud) p->preserved = 1;
  return dpo__run_priv_party_refusal(p, rc);
}

void dpo__run_priv_settle_parties(dpo__run_priv_t *p, const dpo_ledger_parts_t *own) {
  if (!p || !p->pt) return;
  const dpo_parties_t *pt = p->pt;
  /* party k's account in parts (the ledger composes each party's account apart), sent only
   * to party k's first rank; eps = NAN: unknown */
  dpo_ledger_parts_t v, w;
  v.eps = NAN;
  if (p->rank == 0) {
    for (int k = 0; k < pt->count; k++) {
      if (!p->ledger || dpo_ledger_party_parts(p->ledger, k, &w)) w.eps = NAN;
      if (pt->first_rank[k] == 0) v = w;
      else MPI_Send(&w, (int)sizeof w, MPI_BYTE, pt->first_rank[k], 0, p->comm);
    }
  } else if (p->party >= 0)
    MPI_Recv(&v, (int)sizeof v, MPI_BYTE, 0, 0, p->comm, MPI_STATUS_IGNORE);
  if (!p->preserved) return;
  p->preserved = 0;
  /* settled like a single store, to the parts; under secagg the party does not take the
   * coordinator's word for less than its own guard charged: the larger per part and order */
  const char *why = "the party's account is unknown";
  if (!(v.eps >= 0) || (own && dpo_budget_parts_max(&v, own) && (why = dpo_errmsg()))) {
    fprintf(stderr, "dpopt: warning: party %d: its budget store keeps the run's reservation "
            "spent whole: %s\n", pt->name[p->party], why);
    return;
  }
  if (dpo_budget_settle(p->pbud, p->prun_id, &v))
    fprintf(stderr, "dpopt: warning: party %d: its budget store keeps the run's reservation "
            "spent whole: %s\n", pt->name[p->party], dpo_errmsg());
}

/* Collective, after the coordinator's journal opened, before any party store reserves: the
 * run's id.  A new run's is every rank's contribution hashed (dpo_secagg_run_id), recorded in
 * the coordinator's journal and, when its guard opens it, in every party's own.  A resumed
 * run's is the coordinator's journal's, except on the rank that keeps a party's journal: there
 * it is that journal's, so a coordinator that resumes another run than the one the party took
 * part in has another plan digest ("~run", run_parties.c) and every such party stops. */
static int dpo__run_priv_run_id(dpo__run_priv_t *p) {
  const dpo_parties_t *pt = p->ptab;
  int rc = DPO_OK;
  char ev[96];
  if (!pt) return DPO_OK;
  if (!p->presumed) {
    if ((rc = dpo_secagg_run_id(p->comm, p->prun_id))) return rc;
    snprintf(ev, sizeof ev, "run_id %s", p->prun_id);
    return dpo_agree(p->comm, p->rank == 0 ? dpo_ledger_party_event(p->ledger, ev, -1, -1) : rc);
  }
  if (p->rank == 0 && !(rc = dpo_journal_run_id(p->journal, p->prun_id)) && !p->prun_id[0])
    rc = dpo_err(DPO_EFORMAT, "%s names no run id (a journal of an older dpopt): a multi-party "
                 "run resumes only from a journal that does", p->journal);
  if ((rc = dpo_agree(p->comm, rc))) return rc;
  MPI_Bcast(p->prun_id, (int)sizeof p->prun_id, MPI_CHAR, 0, p->comm);
  const int k = pt->rank_party[p->rank];
  if (pt->trust != DPO_TRUST_CENTRAL && p->rank != 0 && dpo_party_journal_rank(pt, k) == p->rank) {
    char j[1100], own[65];
    rc = dpo_party_journal_path(pt->out[k] ? pt->out[k] : p->dir, pt->name[k], j, sizeof j);
    if (!rc && !(rc = dpo_journal_run_id(j, own)) && !own[0])
      rc = dpo_err(DPO_EFORMAT, "party %d: its journal %s names no run id (a journal of an older "
                   "dpopt): it cannot tell which run it took part in", pt->name[k], j);
    if (!rc) memcpy(p->prun_id, own, sizeof own);
  }
  return dpo_agree(p->comm, rc);
}

const char *dpo__run_priv_run_id_of(const dpo__run_priv_t *p) {
  return p && p->ptab ? p->prun_id : NULL;
}

/* after the journal: the run's whole budget reserved in the store under the journal's id (a
 * resumed run whose reservation is still open is not charged again; its journal must reach
 * the head the store keeps for it), the head following every line from then on */
static int dpo__run_priv_reserve(dpo__run_priv_t *p) {
  int rc = DPO_OK;
  if (p->bud && p->rank == 0) {
    rc = dpo__budget_run_reserve(p->bud, p->store, p->key_file, p->ledger, p->journal, p->eps,
                                 p->delta, "train", p->sresume, p->run_id, &p->head);
    p->reserved = p->run_id[0] != '\0';
  }
  rc = dpo_agree(p->comm, rc);
  if (!rc) rc = dpo__run_priv_run_id(p);
  return rc ? rc : dpo__run_priv_party_reserve(p);
}

int dpo__run_priv_key_check(const dpo__run_priv_t *p, int resume) {
  return p && p->is_private ? dpo__journal_key_check(p->key_file, resume) : DPO_OK;
}

/* resume: the run's journal must exist; every charge in it stays spent */
int dpo__run_priv_open_ledger(dpo__run_priv_t *p, const char *run_dir, int resume) {
  if (!p->is_private) return DPO_OK;
  snprintf(p->dir, sizeof p->dir, "%s", run_dir);
  snprintf(p->journal, sizeof p->journal, "%s/ledger.jsonl", run_dir);
  int rc = dpo_ledger_open_key(p->comm, p->eps, p->delta, p->journal, resume != 0, p->acct,
                               p->rel, p->key_file, &p->ledger);
  return rc ? rc : dpo__run_priv_reserve(p);
}

const dpo_clip_t *dpo__run_priv_clip(const dpo__run_priv_t *p) {
  return p->has_clip ? &p->clip : NULL;
}
dpo_rng_t *dpo__run_priv_rng(dpo__run_priv_t *p) { return p->rng; }
struct dpo_ledger *dpo__run_priv_ledger(dpo__run_priv_t *p) { return p->ledger; }

int dpo__run_priv_n_private(const dpo__run_priv_t *p) {
  return p && p->is_private && p->rel == DPO_NEIGHBOURS_ADD_REMOVE;
}

static double dpo__spent(void *arg) {
  double e = NAN, d;
  if (arg && dpo_ledger_spent(arg, &e, &d)) return NAN;
  return e;
}

void dpo__run_priv_attach(dpo__run_priv_t *p, dpo_solver_t *s) {
  if (p->ledger) dpo_solver_set_spent(s, dpo__spent, p->ledger);
}

int dpo__run_priv_trace_note(const dpo__run_priv_t *p, FILE *trace) {
  fprintf(trace, "# dpopt trace: %s\n", p->label);
  fprintf(trace, "# columns ending in _nonprivate are computed on the private training data: "
                 "diagnostics, not for release\n");
  return ferror(trace) ? dpo_err(DPO_EIO, "cannot write the trace") : DPO_OK;
}

const char *dpo__run_priv_label(const dpo__run_priv_t *p) { return p->label; }
int dpo__run_priv_guaranteed(const dpo__run_priv_t *p) { return p->is_private && !p->seeded; }

void dpo__run_priv_summary(const dpo__run_priv_t *p, json_object *sum) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "private_algorithm", json_object_new_boolean(p->is_private));
  json_object_object_add(o, "seeded_not_private", json_object_new_boolean(p->seeded));
  json_object_object_add(o, "label", json_object_new_string(p->label));
  if (p->is_private) {
    json_object_object_add(o, "neighbours", json_object_new_string(dpo_neighbours_name(p->rel)));
    /* the ledger's own accountant: a resumed pld/auto ledger follows its journal's */
    const char *a = p->ledger && p->rank == 0 ? dpo_ledger_accountant(p->ledger) : p->acct;
    json_object_object_add(o, "accountant", json_object_new_string(a ? a : p->acct));
  }
  if (p->has_clip) {
    json_object_object_add(o, "clip_norm", json_object_new_string(p->clip.norm == DPO_CLIP_L1 ? "l1" : "l2"));
    json_object_object_add(o, "clip_C", dpo_json_double(p->clip.C));
  }
  if (p->ledger) {
    double e = NAN, d = NAN, be = NAN, bd = NAN;
    dpo_ledger_spent(p->ledger, &e, &d);
    dpo_ledger_budget(p->ledger, &be, &bd);
    json_object_object_add(o, "eps_budget", dpo_json_double(be));
    json_object_object_add(o, "delta_budget", dpo_json_double(bd));
    json_object_object_add(o, "eps_spent", dpo_json_double(e));
    json_object_object_add(o, "delta_spent", dpo_json_double(d));
    json_object_object_add(o, "charges", json_object_new_int64(dpo_ledger_count(p->ledger)));
    const char *bd_s = dpo_ledger_bound(p->ledger); /* which bound gave eps_spent */
    if (bd_s) json_object_object_add(o, "eps_bound", json_object_new_string(bd_s));
    json_object_object_add(o, "journal", json_object_new_string(p->journal));
  }
  double se, sd, be, bd; /* the data set's account, after this run's settlement */
  if ((p->reserved || p->settled) && p->rank == 0 && !dpo_budget_spent(p->store, p->key_file, &be, &bd, &se, &sd)) {
    json_object *b = json_object_new_object();
    json_object_object_add(b, "store", json_object_new_string(p->store));
    json_object_object_add(b, "run", json_object_new_string(p->run_id));
    json_object_object_add(b, "settled", json_object_new_boolean(p->settled));
    json_object_object_add(b, "eps_budget", dpo_json_double(be));
    json_object_object_add(b, "delta_budget", dpo_json_double(bd));
    json_object_object_add(b, "eps_spent", dpo_json_double(se));
    json_object_object_add(b, "delta_spent", dpo_json_double(sd));
    json_object_object_add(o, "budget_store", b);
  }
  json_object_object_add(sum, "privacy", o);
}

void dpo__run_priv_print(const dpo__run_priv_t *p, FILE *out, int verbose) {
  fprintf(out, "privacy         %s\n", p->label);
  if (p->ledger && verbose) {
    double e = NAN, d = NAN, be = NAN, bd = NAN;
    dpo_ledger_spent(p->ledger, &e, &d);
    dpo_ledger_budget(p->ledger, &be, &bd);
    const char *a = dpo_ledger_accountant(p->ledger), *bs = dpo_ledger_bound(p->ledger);
    fprintf(out, "privacy spent   eps = %.6g of %.6g, delta = %.3g of %.3g (%lld charges, "
                 "accountant %s, bound %s, %s neighbours, %s)\n", e, be, d, bd,
            (long long)dpo_ledger_count(p->ledger), a ? a : p->acct, bs ? bs : "-",
            dpo_neighbours_name(p->rel), p->journal);
  }
  double se, sd, be, bd;
  if ((p->reserved || p->settled) && p->rank == 0 && !dpo_budget_spent(p->store, p->key_file, &be, &bd, &se, &sd))
    fprintf(out, "data set budget eps = %.6g of %.6g, delta = %.3g of %.3g spent by every run "
                 "on the data, composed (budget store %s%s)\n", se, be, sd, bd, p->store,
            p->settled ? "" : "; this run counted whole");
}

void dpo__run_priv_settle(dpo__run_priv_t *p) {
  /* the releases are over (finished, failed or stopped): the reservation becomes what the
   * ledger composed; if this fails the whole reservation stays spent */
  dpo_ledger_parts_t parts;
  if (!p || !p->reserved) return;
  p->reserved = 0;
  if (dpo_ledger_parts(p->ledger, &parts) || dpo_budget_settle(p->bud, p->run_id, &parts))
    fprintf(stderr, "dpopt: warning: budget store %s: the run's reservation stays spent whole: "
            "%s\n", p->store, dpo_errmsg());
  else p->settled = 1;
}

void dpo__run_priv_destroy(dpo__run_priv_t *p) {
  if (!p) return;
  dpo__run_priv_settle(p); /* a run that ended before its solver did */
  dpo_budget_close(p->bud);
  dpo_budget_close(p->pbud); /* a party's open reservation stays spent whole */
  dpo_ledger_close(p->ledger);
  dpo_budget_head_close(p->head); /* after the ledger, which wrote through it */
  dpo_rng_destroy(p->rng);
  free(p);
}
