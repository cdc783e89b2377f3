/* Checkpoints, --resume and signals of a run (see run_ckpt.h and dpopt/run.h). */
#include "run/run_ckpt.h"

#include <signal.h>

#include <errno.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/optim.h" /* dpo_ckpt_read */
#include "dpopt/run.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

static volatile sig_atomic_t dpo__stop = 0;
static struct sigaction dpo__old_term, dpo__old_int;
static int dpo__installed = 0;

/* async-signal-safe: one store to a sig_atomic_t, nothing else (no MPI, no stdio) */
static void dpo__on_signal(int sig) {
  (void)sig;
  dpo__stop = 1;
}

void dpo_run_signals_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = dpo__on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* MPI's and our own system calls continue */
  dpo__stop = 0;
  if (sigaction(SIGTERM, &sa, &dpo__old_term) == 0 && sigaction(SIGINT, &sa, &dpo__old_int) == 0)
    dpo__installed = 1;
}

void dpo_run_signals_restore(void) {
  if (!dpo__installed) return;
  sigaction(SIGTERM, &dpo__old_term, NULL);
  sigaction(SIGINT, &dpo__old_int, NULL);
  dpo__installed = 0;
}

volatile sig_atomic_t *dpo_run_signal_flag(void) { return &dpo__stop; }

typedef struct {
  dpo_config_t *cfg;
  int rc;
} dpo__merge_t;

/* keys a resumed run may change: how it runs, never what it computes or spends */
static int dpo__resume_may_change(const char *key) {
  /* where the journal key is, not what is computed: never read from the run directory, whose
   * config.ini could otherwise point a resume at a key the editor of the journal made */
  if (!strcmp(key, "privacy.journal_key")) return 1;
  if (strncmp(key, "run.", 4) != 0) return 0;
  /* run.command: the kind of run (an admm run resumes as admm) */
  return strcmp(key, "run.seed") != 0 && strcmp(key, "run.dir") != 0 &&
         strcmp(key, "run.command") != 0;
}

/* party name n is in the list "a,b,..." (NULL: the first table, 0..count-1) */
static int dpo__names_have(const char *list, long count, long n) {
  if (!list) return n >= 0 && n < count;
  for (const char *c = list; *c;) {
    char *end;
    long v = strtol(c, &end, 10);
    if (end == c) return 0;
    if (v == n) return 1;
    c = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return 0;
  }
  return 0;
}

/* The one change a resume may make to the parties (doc/design.md, "Dropouts"): a secagg run
 * with per-party files continues without some of its parties: parties.remaining names those
 * that continue (any of them: each party keeps its name, the number of its directory, journal,
 * keys and account), or parties.count lowered drops the last ones.  Their rows leave with
 * them, and every rank's new plan differs from the old one only by the lost parties (this rule
 * runs on each party's own ranks, over its own config.ini; the plan agreement checks that
 * they all applied the same). */
static int dpo__resume_drops_parties(const dpo_config_t *cfg, const char *key, const char *was,
                                     const char *value) {
  char *e1, *e2;
  const char *trust = dpo_config_get(cfg, "privacy.trust"), *algo = dpo_config_get(cfg, "algo.name");
  const dpo_algo_t *al = algo ? dpo_algo_find(algo) : NULL; /* its checkpoint's word */
  if (!trust || strcasecmp(trust, "secagg") != 0 || !al || !al->drops_parties ||
      (!dpo_config_get(cfg, "parties.data") && !dpo_config_get(cfg, "party.0.data")))
    return 0;
  if (!strcmp(key, "parties.remaining")) { /* a subset of the parties that took part so far */
    const char *count = dpo_config_get(cfg, "parties.count");
    long P = count ? strtol(count, &e1, 10) : 0, n = 0, prev = -1;
    for (const char *c = value; *c; n++) {
      long v = strtol(c, &e2, 10);
      if (e2 == c || v <= prev || !dpo__names_have(was, P, v) || (*e2 && *e2 != ',')) return 0;
      prev = v;
      c = *e2 ? e2 + 1 : e2;
    }
    return n >= 1; /* dpo_parties_from_config checks the rest (P' > collude, ranks) */
  }
  if (strcmp(key, "parties.count") != 0 || !was || dpo_config_get(cfg, "parties.remaining"))
    return 0;
  long a = strtol(was, &e1, 10), b = strtol(value, &e2, 10);
  return !*e1 && !*e2 && b >= 1 && b < a;
}

/* ranks in "a" or "a-b" (party.K.ranks), 0 when malformed */
static long dpo__range_ranks(const char *v) {
  char *e;
  long a = strtol(v, &e, 10), b = a;
  if (e == v || a < 0) return 0;
  if (*e == '-') {
    const char *c = e + 1;
    b = strtol(c, &e, 10);
    if (e == c) return 0;
  }
  return *e || b < a ? 0 : b - a + 1;
}

/* How many ranks a party uses (party.K.ranks) may change at a resume when nothing of the
 * party's state is per rank (doc/design.md, "Dropouts", *A party's ranks*): under secagg its
 * journal and budget store are the party's (PARTYDIR/ledger.partyK.jsonl, on whichever rank is
 * its first after rank 0), its rows are its own file (split over its ranks again), and every
 * rank's streams and keys are new in every job.  Returns 1 when allowed; 0 for another key;
 * else -1 with the reason in *why. */
static int dpo__resume_moves_ranks(const dpo_config_t *cfg, const char *key, const char *was,
                                   const char *value, const char **why) {
  int k = -1, n = 0, own = 1;
  char pk[64];
  if (sscanf(key, "party.%d.ranks%n", &k, &n) != 1 || key[n] || k < 0) return 0;
  const char *trust = dpo_config_get(cfg, "privacy.trust");
  const char *cnt = dpo_config_get(cfg, "parties.count");
  /* every party its own file: moving one party's ranks shifts the ranks of those after it */
  for (long j = 0, P = cnt ? strtol(cnt, NULL, 10) : 0; j < P && own; j++) {
    snprintf(pk, sizeof pk, "party.%ld.data", j);
    own = dpo_config_get(cfg, "parties.data") || dpo_config_get(cfg, pk);
  }
  if (!trust || strcasecmp(trust, "secagg") != 0)
    *why = "outside privacy.trust = secagg the parties' accounts are the coordinator's, kept "
           "per rank block of the run's first table";
  else if (!own || !cnt)
    *why = "the parties share one data file whose rows are split by rank: other ranks would "
           "move rows from one party to another, whose accounts would not have counted them "
           "(give each party its own file: parties.data or party.K.data)";
  else if (!dpo__range_ranks(value))
    *why = "the new value is not a rank or a range a-b";
  else if (k == 0 && (!was || dpo__range_ranks(was) < 2 || dpo__range_ranks(value) < 2))
    *why = "party 0 holds the coordinator's rank 0: its own journal is kept on its second rank, "
           "so it has one only with two or more ranks, and a resume can neither start nor drop "
           "it (party 0 may change between ranges of two or more ranks, declared in both runs)";
  else
    return 1;
  return -1;
}

static void dpo__merge_one(const char *key, const char *value, const char *origin, void *arg) {
  dpo__merge_t *m = arg;
  if (m->rc || !strcmp(key, "run.resume")) return;
  const char *was = dpo_config_get(m->cfg, key), *why = NULL;
  if (!dpo__resume_may_change(key) && !(was && !strcmp(was, value)) &&
      !dpo__resume_drops_parties(m->cfg, key, was, value)) {
    const int mv = dpo__resume_moves_ranks(m->cfg, key, was, value, &why);
    if (mv > 0) goto set;
    if (mv < 0) {
      m->rc = dpo_err(DPO_EINVAL, "%s: --resume cannot change %s (the run has %s%s%s): %s",
                      origin, key, was ? "'" : "", was ? was : "no value", was ? "'" : "", why);
      return;
    }
    m->rc = dpo_err(DPO_EINVAL,
                    "%s: --resume cannot change %s (the run has %s%s%s): only run.* settings other "
                    "than run.seed, run.dir and run.command may change when resuming (and a "
                    "secagg dp-sgd-rdp run with per-party files may continue without some "
                    "parties: parties.remaining = the numbers of those that continue)",
                    origin, key, was ? "'" : "", was ? was : "no value", was ? "'" : "");
    return;
  }
set:
  m->rc = dpo_config_set(m->cfg, key, value, origin);
}

int dpo__run_resume_config(const dpo_config_t *given, const char *run, dpo_config_t **out) {
  char p[1024];
  dpo__merge_t m = {NULL, DPO_OK};
  *out = NULL;
  if (snprintf(p, sizeof p, "%s/config.ini", run) >= (int)sizeof p)
    return dpo_err(DPO_EINVAL, "--resume %s: path too long", run);
  if (access(p, R_OK) != 0)
    return dpo_err(DPO_EIO, "--resume %s: cannot read %s (%s): not a run directory?", run, p,
                   strerror(errno));
  int rc = dpo_config_create(&m.cfg);
  if (rc) return rc;
  if ((rc = dpo_config_load_ini(m.cfg, p))) goto fail;
  /* a hand-added key file in config.ini is ignored (see dpo__resume_may_change) */
  if (dpo_config_get(m.cfg, "privacy.journal_key") &&
      (rc = dpo_config_set(m.cfg, "privacy.journal_key", "", "--resume (config.ini's ignored)")))
    goto fail;
  /* a run agglomerated by run.agglomerate = on and stopped by a signal left a checkpoint; a
   * resume keeps its ranks (run_agglo.c), so the saved on, which would refuse it, becomes
   * auto (it then says why the ranks are kept); an on given to the resume is still refused */
  const char *ag = dpo_config_get(m.cfg, "run.agglomerate");
  if (ag && !strcasecmp(ag, "on") &&
      (rc = dpo_config_set(m.cfg, "run.agglomerate", "auto",
                           "--resume (config.ini's on: a resume keeps its ranks)")))
    goto fail;
  /* the journal's own run directory, whatever the original run.dir said */
  if ((rc = dpo_config_set(m.cfg, "run.dir", run, "--resume"))) goto fail;
  dpo_config_foreach(given, dpo__merge_one, &m);
  if ((rc = m.rc)) goto fail;
  *out = m.cfg;
  return DPO_OK;
fail:
  dpo_config_destroy(m.cfg);
  return rc;
}

typedef struct {
  char *buf;
  size_t len, cap;
  int oom;
} dpo__sbuf_t;

static void dpo__ini_line(const char *key, const char *value, const char *origin, void *arg) {
  dpo__sbuf_t *b = arg;
  /* one-shot instructions, not settings of the run */
  if (b->oom || !strcmp(key, "run.resume") || !strcmp(key, "run.stop_after") ||
      !strcmp(key, "privacy.journal_key")) /* a resume must be given the key's place again */
    return;
  size_t need = strlen(key) + strlen(value) + strlen(origin) + 16;
  if (b->len + need > b->cap) {
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + need) nc *= 2;
    char *q = realloc(b->buf, nc);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->buf = q;
    b->cap = nc;
  }
  size_t at = b->len + (size_t)snprintf(b->buf + b->len, b->cap - b->len, "%s = %s    ; ", key,
                                        value);
  b->len = at + (size_t)snprintf(b->buf + at, b->cap - at, "%s\n", origin);
  /* keys and values are checked when set (config.c); an origin is a path or a flag, and a
   * path may hold anything: its control characters would break the line */
  for (size_t i = at; i + 1 < b->len; i++)
    if ((unsigned char)b->buf[i] < 0x20) b->buf[i] = '?';
}

int dpo__run_write_config(const dpo_config_t *cfg, const char *run_dir) {
  char p[1024];
  static const char head[] = "; effective configuration of this run (key = value ; origin)\n";
  dpo__sbuf_t b = {NULL, 0, 0, 0};
  snprintf(p, sizeof p, "%s/config.ini", run_dir);
  b.buf = malloc(sizeof head);
  if (!b.buf) return dpo_err(DPO_ENOMEM, "out of memory");
  memcpy(b.buf, head, sizeof head);
  b.len = sizeof head - 1;
  b.cap = sizeof head;
  dpo_config_foreach(cfg, dpo__ini_line, &b);
  int rc = b.oom ? dpo_err(DPO_ENOMEM, "out of memory") : dpo_write_atomic(p, b.buf, b.len);
  free(b.buf);
  return rc;
}

int dpo__run_trace_rewind(FILE *trace, const char *path, long long offset) {
  if (!trace) return DPO_OK;
  if (fflush(trace) != 0 || fseek(trace, 0, SEEK_END) != 0)
    return dpo_err(DPO_EIO, "%s: cannot seek", path);
  long end = ftell(trace);
  if (offset < 0 || offset > end)
    return dpo_err(DPO_EFORMAT, "%s is %ld bytes, shorter than at the checkpoint (%lld): "
                   "trace lost or replaced", path, end, offset);
  if (ftruncate(fileno(trace), (off_t)offset) != 0 || fseek(trace, 0, SEEK_END) != 0)
    return dpo_err(DPO_EIO, "%s: cannot truncate to %lld bytes: %s", path, offset,
                   strerror(errno));
  return DPO_OK;
}

int dpo__run_resume_ranks(const dpo_config_t *cfg, const dpo_parties_t *pt, int size) {
  const char *dir = dpo_config_get(cfg, "run.dir");
  int shared = 0;
  for (int k = 0; pt && pt->count > 1 && k < pt->count; k++) shared |= !pt->data[k];
  if (!shared || !dir) return DPO_OK;
  char p[1100];
  dpo_ckpt_t *c = NULL;
  int64_t ranks = -1;
  snprintf(p, sizeof p, "%s/checkpoint", dir);
  if (dpo_ckpt_read(p, &c)) return DPO_OK; /* dpo__run_dir and the solver name it */
  dpo_ckpt_set_prefix(c, "solver.");
  int rc = dpo_ckpt_get_int(c, "ranks", &ranks);
  dpo_ckpt_destroy(c);
  if (rc || ranks == size) return DPO_OK;
  return dpo_err(DPO_EINVAL, "--resume %s: its %d parties share one data file, whose rows are "
                 "split by rank, and it ran on %lld ranks: resume it on %lld (on %d the rank "
                 "blocks would move rows from one party to another whose account did not count "
                 "them; per-party files, parties.data or party.K.data, let a party's ranks "
                 "change)", dir, pt->count, (long long)ranks, (long long)ranks, size);
}
