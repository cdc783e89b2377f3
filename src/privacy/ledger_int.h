/* Internals shared by ledger.c (open, charge), ledger_party.c (per-party accounts) and
 * ledger_replay.c (journal replay and printing). */
#ifndef DPO_LEDGER_INT_H
#define DPO_LEDGER_INT_H

#include "journal_chain.h"
#include "privacy_int.h"

#include <json-c/json.h>
#include <stdio.h>
#include <sys/types.h>

struct dpo_ledger {
  MPI_Comm comm; /* MPI_COMM_NULL: serial, this process is the coordinator */
  int rank;
  double beps, bdelta;
  dpo_neighbours_t rel; /* the neighbouring relation of every charge */
  const dpo__acct_ops_t *ops;
  void *state;
  int fd;           /* journal, -1 if none or not rank 0 */
  char *path;       /* the journal's path (messages name path:line) */
  off_t end;        /* journal length after the last complete line */
  int failed;       /* a journal write failed: refuse every further charge */
  int defer;        /* dpo_ledger_set_sync(L, 0): lines fsynced by dpo_ledger_sync, not each */
  int dirty;        /* a line was written since the last fsync */
  int64_t count;    /* charges recorded */
  int64_t repaired; /* bytes of a torn last line removed on resume */
  int torn;         /* resumed with a torn last line: cut at the first append (no write before) */
  /* the keyed chain (journal_chain.h): the key, the last line's tag, lines written */
  unsigned char key[DPO__CHAIN_BYTES], head[DPO__CHAIN_BYTES];
  unsigned char nonce[DPO__CHAIN_BYTES]; /* the header's nonce: the run's id in a budget store */
  int64_t lines;
  /* per-party accounts (multi-party runs): same accountant, own budgets and state */
  int nparties;
  double *pbeps, *pbdelta;
  void **pstate;
  int64_t *pcount; /* charges to each party (its parts' release count) */
  /* a run that resumed without some of its parties: position k of its party table (what the
   * callers name) is account pmap[k] (the party's name); NULL: position k is account k */
  int *pmap, npos;
  /* told each new durable line's position (dpo_ledger_on_append): a budget store's head */
  int (*on_append)(void *arg, int64_t lines, const unsigned char head[32]);
  void *on_append_arg;
};

#define DPO__MAX_PARTIES 4096

/* the account of the party table's position k, or -1 */
static inline int dpo__ledger_acct(const dpo_ledger_t *L, int k) {
  if (L->pmap) return k >= 0 && k < L->npos ? L->pmap[k] : -1;
  return k >= 0 && k < L->nparties ? k : -1;
}

/* ledger.c, for ledger_party.c (the per-party accounts call into ledger.c, never the
 * reverse): the journal's one append (a chained line, fsynced unless deferred, on_append
 * told), a charge's journal line, the rank-0 check and the global budget's refusal. */
int dpo__ledger_append(dpo_ledger_t *L, json_object *o);
json_object *dpo__ledger_charge_line(const dpo_ledger_t *L, const dpo_charge_t *c,
                                     const dpo__acct_result_t *r);
int dpo__ledger_rank0(const dpo_ledger_t *L, const char *fn);
int dpo__ledger_refuse(const dpo_ledger_t *L, const dpo_charge_t *c, const dpo__acct_result_t *r);

/* (ledger_replay.c: ledger.c calls down into it, never the reverse) */
void dpo__free_pstates(const dpo__acct_ops_t *ops, int n, void **ps);

/* JSON helpers: doubles written with 17 significant digits (read back bit-identically); the
 * getters return 0 when the key is missing or of another type. */
json_object *dpo__jd(double x);
/* A journal charge line's fields into *c (names back to their enums, charge_names.c) and its
 * recorded cost into *se, *sd; DPO_EFORMAT naming path:lineno and the missing or unknown
 * field (ledger_replay.c: the replay's and dpo_ledger_line_charge's one reader). */
int dpo__charge_parse(const char *path, int64_t lineno, json_object *o, dpo_charge_t *c,
                      double *se, double *sd);
int dpo__jget_d(json_object *o, const char *k, double *v);
int dpo__jget_i(json_object *o, const char *k, int64_t *v);
const char *dpo__jget_s(json_object *o, const char *k);

/* A journal being verified: the header's budget, accountant and relation, the recomputed
 * state, and where the good lines end. */
typedef struct {
  int have_header;
  double beps, bdelta;
  dpo_neighbours_t rel;
  const dpo__acct_ops_t *ops;
  void *state;
  int64_t count;
  int version;      /* 2: chained; 1: written before the chain (cannot be verified) */
  int64_t lines;    /* complete lines verified (header included) */
  unsigned char head[DPO__CHAIN_BYTES]; /* the last verified line's tag */
  unsigned char nonce[DPO__CHAIN_BYTES]; /* the header's nonce */
  size_t good_len;  /* bytes up to and including the last good line */
  size_t torn_len;  /* bytes of a torn last line (0 if none) */
  int nparties;     /* from a {"kind":"parties"} line */
  double *pbeps, *pbdelta;
  void **pstate;
  int64_t *pcount;
  int64_t plan_steps; /* the last {"kind":"plan"} line: steps planned (-1: none) */
  char plan_kind[16], plan_algo[64];
} dpo__replay_t;

void dpo__replay_free(dpo__replay_t *R);
/* Verify the journal text buf[0, len) line by line (the chain with key; a version 1 journal
 * has none and is read unverified, R->version says so) and recompute the totals into R (whose
 * state is allocated here; dpo__replay_free).  If out != NULL print one row per charge. */
int dpo__replay(const char *path, const char *buf, size_t len, const unsigned char *key,
                FILE *out, dpo__replay_t *R);

#endif
