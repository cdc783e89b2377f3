/* Multi-party side of a run (issue 7): the party table, per-party data files, each
 * rank's own noise stream for the local / shares trust modes, the ledger's party accounts, and
 * the "parties" block of summary.json.  See include/dpopt/parties.h and README. */
#include "run/run_parties.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h" /* PACKAGE_VERSION: the plan names the code that encodes */
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/dp_common.h" /* dpo__dp_public_sens: a party's own sensitivities */
#include "privacy/guard.h"
#include "run/run_impl.h"

/* stream ids of the ranks' own noise streams: distinct from rank 0's solver stream (0) */
#define DPO__PARTY_STREAM 0x70000000ULL

struct dpo__run_parties {
  dpo_parties_t *p;  /* NULL: one data holder, central */
  dpo_rng_t *rng;    /* this rank's noise stream (local / shares / secagg) */
  dpo_secagg_t *sa;  /* trust secagg: pairwise keys, release counter */
  int rank;
  int64_t *rows;     /* rank 0: rows of each party */
  int64_t npub;      /* > 0: the parties' row counts are private (dpo__run_parties_load) */
  const dpo_config_t *cfg; /* borrowed: the run's */
  const dpo_privacy_spec_t *spec; /* borrowed: the run's */
  dpo_guard_t *guard; /* secagg, ranks other than 0: this party's own guard and account */
};

static int dpo__journal_rank(const dpo_parties_t *p, int k) {
  return dpo_party_journal_rank(p, k);
}

/* Not collective, secagg, local, shares: on the rank that keeps its party's journal, the party's own run
 * directory (party.K.out; party 0 defaults to the coordinator's --out) must be given and fit
 * the run: a new run needs a directory without a journal, --resume one with it.  Nothing is
 * written here (the directory is made when the journal is opened, after the plan). */
static int dpo__party_dir_check(const dpo_parties_t *p, int rank, int resuming) {
  const int k = p->rank_party[rank], K = p->name[k];
  if (dpo__journal_rank(p, k) != rank) return DPO_OK;
  if (!p->out[k]) {
    if (k == 0) return DPO_OK; /* the coordinator's party: its run directory is --out's */
    return dpo_err(DPO_EINVAL, "privacy.trust = %s: party %d keeps its own journal in its own "
                   "run directory, and none is given on its rank %d: give party.%d.out = DIR (or "
                   "parties.out = DIR%%d) in the configuration party %d's ranks read (--out is the "
                   "coordinator's directory; no party writes there)", dpo_trust_name(p->trust),
                   K, rank, K, K);
  }
  char journal[1100];
  return dpo_guard_journal_check(p->out[k], K, resuming, journal, sizeof journal);
}

int dpo__run_parties_setup(MPI_Comm comm, const dpo_config_t *cfg,
                           const dpo_privacy_spec_t *spec, int is_private, int resuming,
                           dpo__run_parties_t **out) {
  int rc = DPO_OK;
  dpo__run_parties_t *tp = calloc(1, sizeof *tp);
  *out = NULL;
  if (!tp) rc = dpo_err(DPO_ENOMEM, "out of memory");
  else {
    tp->rank = dpo__rank(comm);
    tp->cfg = cfg;
    tp->spec = spec;
    rc = dpo_parties_from_config(cfg, spec, dpo__size(comm), &tp->p);
  }
  /* the parties that continue a resumed run, named by their number in its first table: only a
   * resume names them (dpo__resume_drops_parties, run_ckpt.c, says when it may) */
  if (!rc && dpo_config_get(cfg, "parties.remaining") &&
      (!resuming || !tp->p || tp->p->trust != DPO_TRUST_SECAGG))
    rc = dpo_err(DPO_EINVAL, "%s: parties.remaining names the parties that continue a resumed "
                 "secagg run (--resume RUN --set parties.remaining=0,2); a new run declares its "
                 "parties with parties.count", dpo_config_origin(cfg, "parties.remaining"));
  if (!rc && tp->p && tp->p->trust != DPO_TRUST_CENTRAL) {
    if (!is_private) {
      rc = dpo_err(DPO_EINVAL, "privacy.trust = %s applies to private algorithms (dp-*)",
                   dpo_trust_name(tp->p->trust));
    } else {
      int64_t seed = 0;
      int seeded = dpo_config_get(cfg, "run.seed") != NULL;
      if (!(rc = dpo_config_get_int(cfg, "run.seed", 0, &seed)))
        rc = dpo_rng_create(seeded, (uint64_t)seed, DPO__PARTY_STREAM + (uint64_t)dpo__rank(comm),
                            &tp->rng);
    }
  }
  if (!rc && tp->p && tp->p->trust == DPO_TRUST_SECAGG) {
    /* data-free refusals: with delta > 0 the secagg release is an rdp-rho charge (needs an
     * accountant that composes RDP); delta = 0 is the pure-eps distributed discrete Laplace */
    if (spec->delta > 0 && spec->accountant == DPO_ACCT_BASIC)
      rc = dpo_err(DPO_EINVAL, "privacy.trust = secagg needs privacy.accountant = pld, auto or rdp "
                   "(its releases are charged in Renyi DP), not basic");
  }
  if (!rc && tp->p && tp->p->trust == DPO_TRUST_SECAGG && tp->p->data[0]) {
    /* Party counts.  Under add-remove neighbours a party's exact row count is private: its
     * data set and a neighbour differ in size.  With per-party files no rank may learn another
     * party's count before a charge, so the loader numbers rows within each party only and
     * everything that needs a size uses the declared public size (doc/design.md). */
    if (spec->rel == DPO_NEIGHBOURS_ADD_REMOVE) {
      if (!dpo_privacy_spec_given(spec, DPO_SPEC_PUBLIC_N))
        rc = dpo_err(DPO_EINVAL, "privacy.trust = secagg with add-remove neighbours and per-party "
                     "data (parties.data): declare the public data set size (privacy.public_n, "
                     "--public-n N); the parties' row counts are private and are not exchanged");
      else if (spec->public_n < 1)
        rc = dpo_err(DPO_EINVAL, "privacy.public_n = %lld must be >= 1", (long long)spec->public_n);
      if (!rc) tp->npub = spec->public_n;
    }
  }
  if (!rc && tp->p && tp->p->trust != DPO_TRUST_CENTRAL && is_private)
    rc = dpo__party_dir_check(tp->p, tp->rank, resuming);
  rc = dpo_agree(comm, rc);
  if (!rc && tp->p && tp->p->trust == DPO_TRUST_SECAGG) {
    /* read when the pairwise keys are made (dpo__run_parties_attach, after the plan) */
    char key[48];
    int64_t first = tp->p->count; /* the first table's parties (parties.remaining's are some) */
    static const char *const lost[] = {"ranks", "eps", "delta", "data", "out", "budget_store"};
    dpo_config_get_int(cfg, "parties.count", first, &first);
    dpo_config_declare(cfg, "parties.key");
    for (int k = 0; k < first; k++) {
      snprintf(key, sizeof key, "party.%d.key", k);
      dpo_config_declare(cfg, key);
      snprintf(key, sizeof key, "party.%d.public_key", k);
      dpo_config_declare(cfg, key);
      /* a lost party's settings were the first job's; its name stays taken */
      for (size_t i = 0; first > tp->p->count && i < sizeof lost / sizeof *lost; i++) {
        snprintf(key, sizeof key, "party.%d.%s", k, lost[i]);
        dpo_config_declare(cfg, key);
      }
    }
  }
  if (rc) {
    dpo__run_parties_destroy(tp);
    return rc;
  }
  *out = tp;
  return DPO_OK;
}

const dpo_parties_t *dpo__run_parties_table(const dpo__run_parties_t *tp) {
  return tp ? tp->p : NULL;
}

int dpo__run_parties_own_parts(const dpo__run_parties_t *tp, dpo_ledger_parts_t *own) {
  return tp && tp->guard && !dpo_guard_parts(tp->guard, own);
}

int dpo__run_parties_hide_train(const dpo__run_parties_t *tp) {
  return tp && tp->p && tp->p->trust != DPO_TRUST_CENTRAL;
}

int dpo__run_parties_schema(const dpo__run_parties_t *tp, const char *path,
                            dpo_load_opts_t *lo) {
  const dpo_parties_t *p = tp->p;
  if (!p || !p->data[0]) return dpo_load_opts_private(path, lo);
  /* every party's file declares the same width (data.dim, or each file's schema) */
  dpo_load_opts_t first = *lo;
  for (int k = 0; k < p->count; k++) {
    dpo_load_opts_t o = *lo;
    int rc = dpo_load_opts_private(p->data[k], &o);
    if (rc) return rc;
    if (k == 0) first = o;
    else if (o.d != first.d)
      return dpo_err(DPO_EINVAL, "%s declares %d features, %s %d: the parties must declare one "
                     "schema", p->data[0], (int)first.d, p->data[k], (int)o.d);
  }
  *lo = first;
  return DPO_OK;
}

int dpo__run_parties_load(dpo__run_parties_t *tp, MPI_Comm comm, const char *path,
                          const dpo_load_opts_t *lo, dpo_shard_t **train) {
  const dpo_parties_t *p = tp->p;
  if (!p || !p->data[0]) return dpo_shard_load(comm, path, lo, train);
  /* every party loads its own file over its own ranks, then the shards are renumbered so
   * the global row ids follow the parties in rank order */
  int rc = DPO_OK, k = p->rank_party[dpo__rank(comm)];
  MPI_Comm pc = MPI_COMM_NULL;
  dpo_shard_t *s = NULL;
  dpo_load_opts_t o = *lo;
  o.intercept = 0; /* the parties first agree on the width; dpo_model_prepare_shard adds it */
  if (MPI_Comm_split(comm, k, dpo__rank(comm), &pc) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "MPI_Comm_split failed"));
  rc = dpo_agree(comm, dpo_shard_load(pc, p->data[k], &o, &s));
  if (rc) goto out;
  /* the parties' files need not all reach the last feature: agree on the dimension */
  int32_t dv[2] = {s->d, -s->d}, dm[2];
  int sp = s->sparse, allsp = 0;
  MPI_Allreduce(dv, dm, 2, MPI_INT32_T, MPI_MAX, comm);
  MPI_Allreduce(&sp, &allsp, 1, MPI_INT, MPI_MIN, comm);
  if (dm[0] != -dm[1]) {
    if (o.d != 0) {
      rc = dpo_agree(comm, dpo_err(DPO_EFORMAT, "the parties' data files disagree on the "
                                        "dimension"));
      goto out;
    }
    if (allsp) {
      s->d = dm[0]; /* CSR column ids stay valid in the wider space */
    } else { /* dense: reload in the common dimension */
      dpo_shard_destroy(s);
      s = NULL;
      o.d = dm[0];
      rc = dpo_agree(comm, dpo_shard_load(pc, p->data[k], &o, &s));
      if (rc) goto out;
    }
  }
  if (tp->npub > 0) { /* party counts private: row0 stays party-local (dpo__finish_rows on
                      * the party's own communicator), no count crosses a party */
    s->n_global = tp->npub;
    s->n_public = 1;
    goto out;
  }
  int64_t n_here = s->n, before = 0, tot = 0;
  MPI_Exscan(&n_here, &before, 1, MPI_INT64_T, MPI_SUM, comm);
  if (dpo__rank(comm) == 0) before = 0;
  MPI_Allreduce(&n_here, &tot, 1, MPI_INT64_T, MPI_SUM, comm);
  s->row0 = before;
  s->n_global = tot;
  if (dpo__rank(comm) == 0 && !(tp->rows = calloc((size_t)p->count, sizeof *tp->rows)))
    rc = dpo_err(DPO_ENOMEM, "out of memory");
  int64_t *pr = calloc((size_t)p->count, sizeof *pr);
  if (!pr) rc = dpo_err(DPO_ENOMEM, "out of memory");
  else {
    pr[k] = n_here;
    MPI_Reduce(pr, tp->rows, p->count, MPI_INT64_T, MPI_SUM, 0, comm);
    free(pr);
  }
  rc = dpo_agree(comm, rc);
out:
  if (rc) dpo_shard_destroy(s);
  else *train = s;
  MPI_Comm_free(&pc);
  return rc;
}

/* ---- the parties' guard (privacy/guard.h; doc/design.md, "Threat model") ---- */

/* The most ranks a coalition can hold: those of the privacy.collude largest parties (the
 * coordinator's party among them); the mask graph keeps the other ranks connected. */
static int dpo__corrupt_ranks(const dpo_parties_t *p) {
  int c = 0;
  char *used = calloc((size_t)p->count, 1);
  for (int i = 0; i < p->collude && used; i++) {
    int best = -1;
    for (int k = 0; k < p->count; k++)
      if (!used[k] && (best < 0 || p->nranks_of[k] > p->nranks_of[best])) best = k;
    if (best < 0) break;
    used[best] = 1;
    c += p->nranks_of[best];
  }
  if (!used) c = p->nranks; /* no memory: assume the worst (the complete graph) */
  free(used);
  return c;
}

/* This rank's canonical plan: the plan keys of its own configuration, sorted, and what the run
 * derived from them (ranks, dimension, party table, encoding).  Caller frees. */
static char *dpo__plan_text(const dpo__run_parties_t *tp, MPI_Comm comm, int64_t d,
                            int gaussian, const char *run_id) {
  static const char *const pre[] = {"algo.", "privacy.", "parties.", "party.", "model."};
  const dpo_parties_t *p = tp->p;
  dpo_plantext_t *pl = dpo_plantext_new();
  char v[320];
  dpo_plantext_config(pl, tp->cfg, pre, (int)(sizeof pre / sizeof *pre));
  snprintf(v, sizeof v, "%d", dpo__size(comm));
  dpo_plantext_add(pl, "~ranks", v);
  snprintf(v, sizeof v, "%lld", (long long)d);
  dpo_plantext_add(pl, "~dimension", v);
  snprintf(v, sizeof v, "%s, %d parties, collude %d", dpo_trust_name(p->trust), p->count,
           p->collude);
  dpo_plantext_add(pl, "~trust", v);
  for (int k = 0; k < p->count; k++) {
    char key[32];
    snprintf(key, sizeof key, "~party %d", p->name[k]); /* by name: what the keys use */
    snprintf(v, sizeof v, "ranks %d+%d, eps %.17g, delta %.17g", p->first_rank[k],
             p->nranks_of[k], p->eps[k], p->delta[k]);
    dpo_plantext_add(pl, key, v);
  }
  if (p->trust == DPO_TRUST_SECAGG)
    snprintf(v, sizeof v, "dpopt " PACKAGE_VERSION " secagg: fixed point, randomized rounding, "
             "words of 32 bits when dpo_secagg_word's public bound fits else 64, X25519 + "
             "ChaCha20 pairwise masks on the Harary graph against %d corrupt ranks",
             dpo__corrupt_ranks(p));
  else /* the noise each rank adds to its own sum (oracle.c), priced by the guards */
    snprintf(v, sizeof v, "dpopt " PACKAGE_VERSION " %s: exact grid %s noise %s, in the clear",
             dpo_trust_name(p->trust), gaussian ? "Gaussian" : "Laplace",
             p->trust == DPO_TRUST_LOCAL ? "on each rank's own sum"
                                         : "in integer shares, one a rank");
  dpo_plantext_add(pl, "~encoding", v);
  /* the run this rank takes part in (dpo__run_priv_run_id_of): derived by all, or, resumed,
   * the one its party's own journal records */
  if (run_id) dpo_plantext_add(pl, "~run", run_id);
  return dpo_plantext_finish(pl);
}

/* Collective (secagg, local, shares): the parties agree on the plan, then every rank but the
 * coordinator builds its party's guard from its own configuration and hands it to the oracle.
 * gaussian: the plan's noise under local / shares (the algorithm's: 1 Gaussian, 0 Laplace). */
static int dpo__run_parties_guard(dpo__run_parties_t *tp, MPI_Comm comm, dpo_oracle_t *o,
                                  const char *run_dir, int resuming, const char *run_id,
                                  int gaussian) {
  const dpo_parties_t *p = tp->p;
  const int64_t d = dpo_oracle_dim(o);
  const int secagg = p->trust == DPO_TRUST_SECAGG;
  unsigned char digest[32];
  char *plan = dpo__plan_text(tp, comm, d, gaussian, run_id);
  int rc = plan ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  rc = dpo_agree(comm, rc);
  if (!rc) rc = dpo_plan_agree(comm, plan, digest);
  free(plan);
  /* pairwise keys once per run (authenticated when the parties list identity keys); each
   * party's first rank adds the party's noise share */
  if (!rc && secagg)
    rc = dpo_plan_secagg(tp->cfg, comm, p->count, p->rank_party, p->name,
                         p->first_rank[p->rank_party[tp->rank]] == tp->rank, tp->rng, digest,
                         &tp->sa);
  if (!rc && secagg) rc = dpo_secagg_set_graph(tp->sa, dpo__corrupt_ranks(p)); /* same on every rank */
  if (!rc && secagg) rc = dpo_oracle_set_secagg(o, tp->sa);
  if (rc || tp->rank == 0) return dpo_agree(comm, rc);
  const char *key = "";
  double B1 = NAN, B2 = NAN;
  const int party = p->rank_party[tp->rank];
  dpo_guard_spec_t sp = {p->count, p->collude, p->name[party], d, NAN, NAN, p->eps[party],
                         p->delta[party], NULL, DPO_NEIGHBOURS_REPLACE_ONE, 0, NULL, 0, NULL,
                         NULL, 0, 0, 0};
  if (!secagg) sp.trust = p->trust, sp.gaussian = gaussian, sp.nranks = dpo__size(comm);
  /* the party's first rank after the coordinator keeps the party's own journal in the party's
   * own run directory: what it charged, each line synced before it contributes (doc/design.md,
   * "Threat model"); the coordinator's party may keep it in the coordinator's */
  const char *dir = p->out[party] ? p->out[party] : run_dir;
  char journal[1100];
  if (dpo__journal_rank(p, party) == tp->rank && dir && dir[0] &&
      !(rc = p->out[party] ? dpo_mkdirs(dir) : DPO_OK) &&
      !(rc = dpo_party_journal_path(dir, p->name[party], journal, sizeof journal))) {
    sp.journal = journal;
    sp.resume = resuming;
    sp.run_id = run_id; /* a new journal records it */
    dpo_config_get_str(tp->cfg, "privacy.journal_key", "", &key);
    sp.key_file = key;
  }
  if (!rc && !(rc = dpo_config_get_double(tp->cfg, "data.row_l1_bound", NAN, &B1)) &&
      !(rc = dpo_config_get_double(tp->cfg, "data.row_l2_bound", NAN, &B2))) {
    sp.rel = tp->spec->rel;
    sp.accountant = dpo_acct_name(tp->spec->accountant);
    sp.public_n = dpo_privacy_spec_given(tp->spec, DPO_SPEC_PUBLIC_N) ? tp->spec->public_n : 0;
    dpo__dp_public_sens(dpo_oracle_model(o), dpo_oracle_clip(o), sp.rel, B1, B2, d, &sp.S1,
                        &sp.S2);
    if ((rc = dpo_guard_create(&sp, &tp->guard)) == DPO_OK)
      rc = dpo_oracle_set_guard(o, tp->guard);
  }
  return dpo_agree(comm, rc);
}

int dpo__run_parties_attach(dpo__run_parties_t *tp, MPI_Comm comm, dpo_oracle_t *oracle,
                            struct dpo_ledger *ledger, FILE *trace, const char *run_dir,
                            int resuming, const char *run_id, int gaussian) {
  int rc = DPO_OK;
  dpo_parties_t *p = tp->p;
  if (!p) return DPO_OK;
  if (tp->rng) rc = dpo_oracle_set_noise_rng(oracle, tp->rng);
  rc = dpo_agree(comm, rc);
  /* every trust but central: no party takes the coordinator's word for its noise */
  if (!rc && tp->rng && p->trust != DPO_TRUST_CENTRAL &&
      (rc = dpo__run_parties_guard(tp, comm, oracle, run_dir, resuming, run_id, gaussian)))
    return rc;
  if (dpo__rank(comm) == 0 && !rc) {
    p->trace = trace;
    rc = dpo_oracle_set_parties(oracle, p);
    if (!rc && ledger) {
      for (int k = 0; k < p->count && !rc; k++)
        if (!(p->eps[k] > 0))
          rc = dpo_err(DPO_EINVAL, "party %d has no budget: give privacy.eps, parties.eps or "
                       "party.%d.eps", p->name[k], p->name[k]);
      /* each party's account is its name's (a resume without some parties keeps theirs) */
      if (!rc) rc = dpo_ledger_set_parties_named(ledger, p->count, p->name, p->eps, p->delta);
      if (!rc && !resuming) { /* the journal says whom its charges hold against (once) */
        char ev[800];
        double be = NAN, bd = NAN;
        if (p->trust == DPO_TRUST_SECAGG && !dpo_ledger_budget(ledger, &be, &bd) && !(bd > 0))
          snprintf(ev, sizeof ev, "trust secagg, collude %d of %d: %s; distributed discrete "
                   "Laplace (Polya shares, Goryczka-Xiong 2017: the P - k = %d honest shares sum "
                   "to exactly a discrete Laplace; pure eps), fixed point mod 2^64 with "
                   "randomized rounding (L1 sensitivity Delta1/gamma + d), wrap-around is "
                   "post-processing (noise not truncated)", p->collude, p->count,
                   dpo_trust_coordinator_sees(p->trust), p->count - p->collude);
        else if (p->trust == DPO_TRUST_SECAGG)
          snprintf(ev, sizeof ev, "trust secagg, collude %d of %d: %s; distributed discrete "
                   "Gaussian (Kairouz-Liu-Steinke 2021 Thm 1, P - k = %d honest shares), fixed "
                   "point mod 2^64 with randomized rounding (sensitivity Delta2/gamma + sqrt(d)), "
                   "wrap-around is post-processing (no delta charged, noise not truncated)",
                   p->collude, p->count, dpo_trust_coordinator_sees(p->trust),
                   p->count - p->collude);
        else
          snprintf(ev, sizeof ev, "trust %s: %s", dpo_trust_name(p->trust),
                   dpo_trust_coordinator_sees(p->trust));
        rc = dpo_ledger_party_event(ledger, ev, -1, -1);
      }
    }
    if (!rc && !tp->rows && !tp->npub) { /* parties over data.train: rows from the oracle's rank ranges */
      if (!(tp->rows = calloc((size_t)p->count, sizeof *tp->rows)))
        rc = dpo_err(DPO_ENOMEM, "out of memory");
      for (int r = 0; r < p->nranks && !rc; r++) {
        int64_t n;
        if (!(rc = dpo_oracle_rank_rows(oracle, r, NULL, &n))) tp->rows[p->rank_party[r]] += n;
      }
    }
  }
  return dpo_agree(comm, rc);
}

void dpo__run_parties_summary(const dpo__run_parties_t *tp, struct dpo_ledger *ledger,
                              json_object *sum) {
  const dpo_parties_t *p = tp ? tp->p : NULL;
  json_object *pv = NULL;
  if (!json_object_object_get_ex(sum, "privacy", &pv)) pv = sum;
  dpo_trust_t t = p ? p->trust : DPO_TRUST_CENTRAL;
  json_object_object_add(pv, "trust", json_object_new_string(dpo_trust_name(t)));
  json_object_object_add(pv, "trust_protects", json_object_new_string(dpo_trust_protects(t)));
  json_object_object_add(pv, "trust_coordinator_sees",
                         json_object_new_string(dpo_trust_coordinator_sees(t)));
  if (!p) return;
  json_object *o = json_object_new_object(), *arr = json_object_new_array();
  json_object_object_add(o, "count", json_object_new_int(p->count));
  json_object_object_add(o, "declared", json_object_new_boolean(p->declared));
  json_object_object_add(o, "on_party_exhausted",
                         json_object_new_string(p->on_exhausted == DPO_EXHAUST_DROP ? "drop"
                                                                                    : "stop"));
  json_object_object_add(o, "sensitivity_note",
                         json_object_new_string(
                             "one example changes only its own party's local gradient sum, by "
                             "at most S1 (its share of the batch: S1/m in the batch mean); "
                             "central and shares calibrate the noise of the total to that, "
                             "local noises each party's sum with it; local and shares charge "
                             "without amplification by subsampling (the coordinator draws the "
                             "batch)"));
  for (int k = 0; k < p->count; k++) {
    json_object *e = json_object_new_object();
    json_object_object_add(e, "party", json_object_new_int(p->name[k]));
    json_object_object_add(e, "first_rank", json_object_new_int(p->first_rank[k]));
    json_object_object_add(e, "ranks", json_object_new_int(p->nranks_of[k]));
    if (p->data[k]) json_object_object_add(e, "data", json_object_new_string(p->data[k]));
    if (tp->rows) json_object_object_add(e, "rows", json_object_new_int64(tp->rows[k]));
    double be = NAN, bd = NAN, se = NAN, sd = NAN;
    if (ledger && dpo_ledger_nparties(ledger) >= p->count) {
      dpo_ledger_party_budget(ledger, k, &be, &bd);
      dpo_ledger_party_spent(ledger, k, &se, &sd);
      json_object_object_add(e, "eps_budget", dpo_json_double(be));
      json_object_object_add(e, "delta_budget", dpo_json_double(bd));
      json_object_object_add(e, "eps_spent", dpo_json_double(se));
      json_object_object_add(e, "delta_spent", dpo_json_double(sd));
    }
    json_object_object_add(e, "dropped_at_step",
                           p->dropped_step[k] >= 0 ? json_object_new_int64(p->dropped_step[k])
                                                   : NULL);
    json_object_array_add(arr, e);
  }
  json_object_object_add(o, "parties", arr);
  json_object_object_add(sum, "parties", o);
}

void dpo__run_parties_print(const dpo__run_parties_t *tp, struct dpo_ledger *ledger,
                            FILE *out) {
  const dpo_parties_t *p = tp ? tp->p : NULL;
  if (!p) return;
  fprintf(out, "parties         %d, trust %s, on exhaustion %s\n", p->count,
          dpo_trust_name(p->trust), p->on_exhausted == DPO_EXHAUST_DROP ? "drop" : "stop");
  fprintf(out, "trust           %s: %s\n", dpo_trust_name(p->trust),
          dpo_trust_coordinator_sees(p->trust));
  if (!ledger || dpo_ledger_nparties(ledger) < p->count) return;
  for (int k = 0; k < p->count; k++) {
    double be, bd, se, sd;
    dpo_ledger_party_budget(ledger, k, &be, &bd);
    dpo_ledger_party_spent(ledger, k, &se, &sd);
    fprintf(out, "  party %-3d     eps = %.6g of %.6g%s\n", p->name[k], se, be,
            p->dropped_step[k] >= 0 ? " (dropped: budget exhausted)" : "");
  }
}

void dpo__run_parties_destroy(dpo__run_parties_t *tp) {
  if (!tp) return;
  dpo_parties_destroy(tp->p);
  dpo_secagg_destroy(tp->sa);
  dpo_guard_destroy(tp->guard);
  dpo_rng_destroy(tp->rng);
  free(tp->rows);
  free(tp);
}
