/* The party guard (privacy.trust = secagg, local and shares; doc/design.md, "Threat model").
 * Internal to the library: the oracle consults it on every rank but the coordinator, the run
 * builds it.
 *
 * A party does not take the coordinator's word for the noise.  Before any release the parties
 * agree on the public plan (dpo_plan_agree: a BLAKE2b digest of each party's own canonical
 * plan, compared everywhere).  Then, for every secure-aggregation request, each party prices
 * the announced noise itself -- from the header's gamma, share sigma (or Laplace scale t),
 * honest share count and sampling rate, and from its OWN plan: P, k, d, its own public
 * sensitivity bounds and relation -- and refuses (nothing contributed) when
 *  - the announced honest share count is not its P - k,
 *  - the announced noise costs more than the charge the coordinator says it journals,
 *  - the sampling rate's denominator is not its declared public n,
 *  - or its own in-memory account (its own budget, accountant and relation) refuses the charge.
 * A release it admits is charged to that account first.  So what a coalition of the
 * coordinator and up to k parties learns about the party's rows is bounded by what the party's
 * own account has charged; the coordinator's ledger is a view, not the guard.  Under local and
 * shares the same guard prices the noise each rank adds to its own sum (dpo_guard_admit_local). */
#ifndef DPO_PRIVACY_GUARD_H
#define DPO_PRIVACY_GUARD_H

#include <mpi.h>
#include <stdint.h>

#include "dpopt/config.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"

typedef struct dpo_guard dpo_guard_t;

typedef struct {
  int parties, collude;   /* P, k of the party's own configuration */
  int party;              /* this rank's party (messages) */
  int64_t d;              /* model dimension */
  double S1, S2;          /* the party's own public sensitivities of one rank's sum (L1, L2) */
  double eps, delta;      /* the party's own budget */
  const char *accountant; /* privacy.accountant */
  dpo_neighbours_t rel;
  int64_t public_n;       /* > 0: the declared public size (party-local sampling's denominator) */
  const char *journal;    /* non-NULL: the party's own chained journal (each admitted release is
                           * appended and synced before the party contributes); NULL: memory */
  int resume;             /* 1: reopen the journal (its charges stay spent) */
  const char *key_file;   /* the journal's chain key (NULL/"": as dpo_ledger_open_key) */
  const char *run_id;     /* a new journal records the run's id (dpo_secagg_run_id) as its
                           * first line after the header ("run_id HEX"); NULL: none */
  /* privacy.trust = local / shares only (dpo_guard_admit_local; secagg leaves them 0): */
  int trust;              /* DPO_TRUST_LOCAL or DPO_TRUST_SHARES */
  int gaussian;           /* the plan's noise: 1 Gaussian (the SCO family, DP-ADMM), 0 Laplace */
  int nranks;             /* shares: the run's ranks, each adding one share */
} dpo_guard_spec_t;

/* One announced secure-aggregation release (the oracle's request header). */
typedef struct {
  double gamma;       /* fixed-point step */
  uint64_t sigma;     /* share sigma (Gaussian) or the Laplace scale t (lap_honest > 0) */
  int64_t lap_honest; /* > 0: pure-eps Polya shares for this many honest parties */
  int64_t sm, sn;     /* > 0: party-local Poisson sampling at rate sm / sn */
  double claim;       /* the coordinator's charge: rho (Gaussian), eps (Laplace) or the noise
                       * multiplier sigma_h / sens_c (party-local sampling); 0: none */
  int64_t pass;       /* >= 0: a batch of disjoint pass `pass` (the oracle checked that none of
                       * the party's rows repeats in it); -1: none */
} dpo_guard_req_t;

/* Not collective: the file of the party named K's own journal, DIR/ledger.partyK.jsonl, into
 * journal[n] (a party's journal is named by its name, never by its position); DPO_EINVAL when
 * it does not fit.  Every place that opens or checks a party journal names it here. */
int dpo_party_journal_path(const char *dir, int K, char *journal, size_t n);
/* Not collective, nothing written: DIR fits party k's journal DIR/ledger.partyK.jsonl (written
 * to journal[n]): DIR is a directory or missing, and holds that journal when resuming, none
 * otherwise (it would be another run's). */
int dpo_guard_journal_check(const char *dir, int k, int resuming, char *journal, size_t n);
/* Not collective, nothing read or written: the party's own journal that party k's budget store
 * is settled against besides the coordinator's view, on the rank that opens the store (the
 * party's first rank), into journal[n].  The coordinator's party (first rank 0) has none to
 * offer there: journal = "" (threat model: that party is in every coalition the guarantee
 * counts, so its account is the coordinator's).  Any other party's is DIR/ledger.partyK.jsonl
 * in its own run directory; none given: DPO_EINVAL naming the party (its store would be
 * settled on the coordinator's word alone). */
int dpo_party_store_journal(const dpo_parties_t *p, int k, char *journal, size_t n);
/* The rank that keeps party k's own journal under secagg: the party's first rank other than
 * the coordinator's; -1 when its only rank is rank 0 (its account is the coordinator's). */
int dpo_party_journal_rank(const dpo_parties_t *p, int k);
/* Not collective: the run id a chained journal records ("run_id HEX" event line, written
 * when it was created) into id[65]; "" when it records none.  Read only; the caller has
 * verified the journal's chain (it reopened it, or replayed it). */
int dpo_journal_run_id(const char *path, char id[65]);

/* Not collective.  Opens the party's account: in memory, or its own journal (spec->journal). */
int dpo_guard_create(const dpo_guard_spec_t *spec, dpo_guard_t **out);
void dpo_guard_destroy(dpo_guard_t *g);
/* Not collective.  DPO_OK: the release is in the plan and charged to the party's account; else
 * DPO_EINVAL naming what differed, or the account's refusal (an honest coordinator's ledger,
 * which charges every party's account too, refuses such a release before it asks). */
int dpo_guard_admit(dpo_guard_t *g, const dpo_guard_req_t *r);
/* One announced local / shares release (the oracle's request header under privacy.trust =
 * local or shares: the noise every rank adds to its own sum before the reduce). */
typedef struct {
  int kind;        /* DPO_ONOISE_LOCAL_* / DPO_ONOISE_SHARE_* (dpopt/comm.h) */
  double scale;    /* Laplace b / Gaussian sigma on the sum (the total of the shares) */
  int64_t nshares; /* shares: the number of ranks adding one */
  double claim;    /* the coordinator's charge: eps (Laplace) or the noise multiplier sigma /
                    * sensitivity (Gaussian); 0: none */
  int64_t pass;    /* >= 0: a batch of disjoint pass `pass` (checked by the oracle); -1: none */
} dpo_guard_lreq_t;
/* Not collective.  As dpo_guard_admit for a local / shares release: the kind must be the
 * plan's (its trust mode and noise family), a share count the party's own rank count, and the
 * price of the announced scale, from the party's own sensitivity, at most the claim; then the
 * release is charged to the party's account (and journal) before any noise is added. */
int dpo_guard_admit_local(dpo_guard_t *g, const dpo_guard_lreq_t *r);
/* The party's account: spent (eps, delta) and releases admitted. */
int dpo_guard_spent(const dpo_guard_t *g, double *eps, double *delta, int64_t *releases);
/* The party's account in parts (dpo_ledger_parts): what the party's budget store keeps. */
int dpo_guard_parts(const dpo_guard_t *g, dpo_ledger_parts_t *p);

/* Collective: every rank hashes its own canonical plan text (lines "key = value\n") with
 * BLAKE2b-256 and the digests are compared on every rank.  Equal: DPO_OK.  Otherwise rank 0's
 * text is broadcast so each rank can name the first line that differs, and every rank returns
 * DPO_EINVAL (the agreed message of the first rank that differs).  Rank 0's text is only used
 * to name the difference: the decision is the digests'.  digest (may be NULL): this rank's. */
int dpo_plan_agree(MPI_Comm comm, const char *plan, unsigned char digest[32]);

/* The canonical plan text (plan.c), shared by dpopt train and dpopt admm.  new: an empty plan
 * (NULL: out of memory; every call below takes NULL and finish returns NULL).  add: one line
 * "key = value" (numbers in one spelling).  add_config: the configuration keys under the given
 * prefixes plus the data schema's keys and run.seed, without local paths (data files, secret
 * key files, per-party stores, the journal key).  finish: the lines sorted into one text
 * (caller frees; NULL when out of memory) and the plan freed. */
typedef struct dpo_plantext dpo_plantext_t;
dpo_plantext_t *dpo_plantext_new(void);
void dpo_plantext_add(dpo_plantext_t *pl, const char *key, const char *value);
void dpo_plantext_config(dpo_plantext_t *pl, const dpo_config_t *cfg,
                         const char *const *prefixes, int n);
char *dpo_plantext_finish(dpo_plantext_t *pl);
/* Collective (secagg), after dpo_plan_agree: the pairwise keys.  With party.K.public_key
 * listed for every one of the nparties parties (the .pub files of dpopt party-key; part of the
 * agreed plan), every rank signs its key-agreement key with its party's secret identity key
 * (party.K.key, or parties.key with %d = K: a local path) over the plan digest and a run
 * nonce, and a key that does not verify stops the run on every rank; without listed keys the
 * exchange is unauthenticated (dpo_secagg_create).  rank_party: each rank's party; names:
 * each party's name, the K of its keys (NULL: its position; a run resumed without some
 * parties, dpopt/parties.h); adds: the noise shares this rank adds. */
int dpo_plan_secagg(const dpo_config_t *cfg, MPI_Comm comm, int nparties, const int *rank_party,
                    const int *names, int adds, dpo_rng_t *rng, const unsigned char digest[32],
                    dpo_secagg_t **sa);


#endif
