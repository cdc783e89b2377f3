/* The privacy ledger: rank 0 of its communicator keeps the budget, the exact totals and an
 * append-only JSON Lines journal.
 *
 * Journal format (one JSON object per line, each line written with one write(2) and fsync'ed
 * before dpo_ledger_charge returns, i.e. before the release it records):
 *   {"kind":"dpopt-ledger","version":2,"accountant":"pld"|"auto"|"basic"|"rdp",
 *    "neighbours":"replace-one"|"add-remove","budget_eps":..,"budget_delta":..,"nonce":hex}
 *   (a header without "neighbours" was written before the relation was journalled: replace-one;
 *   version 1 journals have no chain: printed unverified, never resumed)
 *   {"step":..,"mechanism":..,"sampling":..,"accounting":..,"params":{eps,delta,noise_scale,
 *    sensitivity,dim,m,n,group},"cost_eps":..,"cost_delta":..,"charge_eps":..,"charge_delta":..,
 *    "total_eps":..,"total_delta":..,"budget_eps":..,"budget_delta":..}
 * Every line (version 2) ends in ,"chain":"<hex>"}, its keyed hash chain tag
 * (journal_chain.h): an edit by someone without the key breaks the chain at that line.
 * Doubles are written with 17 significant digits, so they read back bit-identically.
 * A crash can only tear the LAST line (no newline / unparsable): that charge's fsync never
 * completed, so its release never happened; resume drops it (cut at the first append, so a
 * refused resume writes nothing).  Totals are always
 * recomputed from the params by the accountant, never read from the journal.
 */
#include "ledger_int.h"

#include "dpopt/status.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* one write(2) for the whole line (a loop only if the kernel writes partially), then fsync
 * (deferred to dpo_ledger_sync under dpo_ledger_set_sync(L, 0)) */
int dpo__ledger_append(dpo_ledger_t *L, json_object *o) {
  size_t n;
  const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &n);
  if (!s || n < 2 || s[n - 1] != '}')
    return dpo_err(DPO_ENOMEM, "ledger: cannot serialize a journal line");
  /* a resumed journal's torn last line goes only now, at the first write: a refused resume
   * writes nothing */
  if (L->torn) {
    if (ftruncate(L->fd, L->end) != 0 || fsync(L->fd) != 0)
      return dpo_err(DPO_EIO, "ledger: cannot truncate the torn last line: %s", strerror(errno));
    L->torn = 0;
  }
  /* the line as serialized, its closing brace replaced by ,"chain":"<tag>"} and a newline */
  size_t b = n - 1, total = b + DPO__CHAIN_SUFFIX_LEN + 1;
  unsigned char tag[DPO__CHAIN_BYTES];
  char hex[2 * DPO__CHAIN_BYTES + 1];
  char *line = malloc(total);
  if (!line) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  dpo__chain_tag(L->key, L->head, s, b, tag);
  dpo__chain_hex(tag, hex);
  memcpy(line, s, b);
  snprintf(line + b, total - b, ",\"chain\":\"%s\"}", hex);
  line[total - 1] = '\n';
  n = total - 1; /* the loop below writes n + 1 bytes */
  size_t off = 0;
  int st = DPO_OK;
  while (off < n + 1) {
    ssize_t w = write(L->fd, line + off, n + 1 - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      st = dpo_err(DPO_EIO, "ledger: journal write failed: %s", strerror(errno));
      break;
    }
    off += (size_t)w;
  }
  free(line);
  /* a store's head (on_append) must not get ahead of the durable journal: fsync each line */
  const int now = !L->defer || L->on_append;
  if (st == DPO_OK && now && fsync(L->fd) != 0)
    st = dpo_err(DPO_EIO, "ledger: journal fsync failed: %s", strerror(errno));
  if (st == DPO_OK) L->dirty = !now;
  if (st != DPO_OK) {
    /* do not leave a torn line in the middle of later ones; stop charging altogether */
    if (ftruncate(L->fd, L->end) == 0) (void)fsync(L->fd);
    L->failed = 1;
    return st;
  }
  L->end += (off_t)(n + 1);
  memcpy(L->head, tag, sizeof tag); /* only a durable line moves the chain */
  L->lines++;
  /* the position kept outside the run (a budget store's head) moves before the caller
   * releases: if it cannot, nothing more is charged or released (the line stays: counted) */
  if (L->on_append && (st = L->on_append(L->on_append_arg, L->lines, L->head))) L->failed = 1;
  return st;
}

static json_object *dpo__header(const dpo_ledger_t *L) {
  json_object *o = json_object_new_object();
  if (!o) return NULL;
  json_object_object_add(o, "kind", json_object_new_string("dpopt-ledger"));
  json_object_object_add(o, "version", json_object_new_int(2)); /* 2: chained lines */
  json_object_object_add(o, "accountant", json_object_new_string(L->ops->name));
  json_object_object_add(o, "neighbours", json_object_new_string(dpo_neighbours_name(L->rel)));
  json_object_object_add(o, "budget_eps", dpo__jd(L->beps));
  json_object_object_add(o, "budget_delta", dpo__jd(L->bdelta));
  char hex[2 * DPO__CHAIN_BYTES + 1];
  dpo__chain_hex(L->head, hex); /* the chain starts from this journal's own nonce */
  json_object_object_add(o, "nonce", json_object_new_string(hex));
  return o;
}

json_object *dpo__ledger_charge_line(const dpo_ledger_t *L, const dpo_charge_t *c,
                                     const dpo__acct_result_t *r) {
  json_object *o = json_object_new_object(), *p = json_object_new_object();
  if (!o || !p) {
    json_object_put(o);
    json_object_put(p);
    return NULL;
  }
  json_object_object_add(o, "step", json_object_new_int64(c->step));
  /* the journal's names (charge_names.c): the one place the enums become words */
  json_object_object_add(o, "mechanism", json_object_new_string(dpo_mech_name(c->mechanism)));
  json_object_object_add(o, "sampling", json_object_new_string(dpo_sampling_name(c->sampling)));
  json_object_object_add(o, "accounting",
                         json_object_new_string(dpo_accounting_name(c->accounting)));
  json_object_object_add(p, "eps", dpo__jd(c->eps));
  json_object_object_add(p, "delta", dpo__jd(c->delta));
  json_object_object_add(p, "noise_scale", dpo__jd(c->noise_scale));
  json_object_object_add(p, "sensitivity", dpo__jd(c->sensitivity));
  json_object_object_add(p, "dim", json_object_new_int64(c->dim));
  json_object_object_add(p, "m", json_object_new_int64(c->m));
  json_object_object_add(p, "n", json_object_new_int64(c->n));
  json_object_object_add(p, "group", json_object_new_int64(c->group));
  if (c->rho != 0) json_object_object_add(p, "rho", dpo__jd(c->rho)); /* rdp-rho releases */
  json_object_object_add(o, "params", p);
  json_object_object_add(o, "cost_eps", dpo__jd(r->cost_eps));
  json_object_object_add(o, "cost_delta", dpo__jd(r->cost_delta));
  json_object_object_add(o, "charge_eps", dpo__jd(r->charge_eps));
  json_object_object_add(o, "charge_delta", dpo__jd(r->charge_delta));
  json_object_object_add(o, "total_eps", dpo__jd(r->total_eps));
  json_object_object_add(o, "total_delta", dpo__jd(r->total_delta));
  json_object_object_add(o, "budget_eps", dpo__jd(L->beps));
  json_object_object_add(o, "budget_delta", dpo__jd(L->bdelta));
  return o;
}


/* make the new directory entry durable too */
static void dpo__fsync_dir(const char *path) {
  char *d = strdup(path);
  if (!d) return;
  char *slash = strrchr(d, '/');
  const char *dir = ".";
  if (slash) {
    *slash = '\0';
    dir = slash == d ? "/" : d;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(d);
}

/* ------------------------------------------------------------ open / close */

/* --resume: the journal verified (chain, header, every charge recomputed) and its settings
 * compared with the run's.  Writes nothing: a refusal leaves the file as it was, and a torn
 * last line is cut only at the first append (dpo__ledger_append). */
static int dpo__resume0(dpo_ledger_t *L, const char *path) {
  char *buf = NULL;
  size_t len = 0;
  dpo__replay_t R = {0};
  int st;
  if ((st = dpo__read_all(L->fd, path, &buf, &len))) goto out;
  if ((st = dpo__replay(path, buf, len, L->key, NULL, &R))) goto out;
  if (!R.have_header) {
    st = dpo_err(DPO_EFORMAT, "%s: the journal has no complete header: nothing to resume", path);
    goto out;
  }
  if (R.version != 2) {
    st = dpo_err(DPO_EFORMAT, "%s: a version 1 journal (written before journals were chained): "
                 "its lines cannot be verified, so --resume refuses it (`dpopt ledger` still "
                 "prints it); start a new run", path);
    goto out;
  }
  /* A torn last line is a crash inside its one write(2): it was never fsynced, so
   * dpo_ledger_charge never returned for it and its release never happened; dropping it
   * loses no spent budget.  Every line before it is complete and chained, so nothing else can
   * hide behind this tolerance (a cut inside an earlier line breaks the chain or leaves the
   * journal short of the checkpoint's position, dpo_ledger_verify_position). */
  if (R.torn_len > 0) {
    L->torn = 1;
    L->repaired = (int64_t)R.torn_len;
  }
  L->end = (off_t)R.good_len;
  L->lines = R.lines;
  memcpy(L->head, R.head, sizeof L->head);
  memcpy(L->nonce, R.nonce, sizeof L->nonce);
  if (L->beps > R.beps || L->bdelta > R.bdelta) {
    st = dpo_err(DPO_EBUDGET,
                 "%s: resume with budget (%.17g, %.17g) larger than the journal's (%.17g, "
                 "%.17g): that would re-spend privacy",
                 path, L->beps, L->bdelta, R.beps, R.bdelta);
    goto out;
  }
  if (R.rel != L->rel) {
    st = dpo_err(DPO_EINVAL, "%s: the journal's neighbouring relation is %s, not %s: a "
                 "budget spent under one relation cannot be continued under another (set "
                 "privacy.neighbours = %s)", path, dpo_neighbours_name(R.rel),
                 dpo_neighbours_name(L->rel), dpo_neighbours_name(R.rel));
    goto out;
  }
  /* auto and pld (the defaults) follow the journal: a budget continues as it was spent */
  if (R.ops != L->ops && L->ops != &dpo__acct_auto && L->ops != &dpo__acct_pld) {
    st = dpo_err(DPO_EINVAL, "%s: the journal's accountant is '%s', not '%s'", path,
                 R.ops->name, L->ops->name);
    goto out;
  }
  if (L->beps != R.beps || L->bdelta != R.bdelta) {
    st = dpo_err(DPO_EINVAL, "%s: resume budget (%.17g, %.17g) differs from the journal's "
                             "(%.17g, %.17g)",
                 path, L->beps, L->bdelta, R.beps, R.bdelta);
    goto out;
  }
  free(L->state);
  L->ops = R.ops;
  L->state = R.state;
  R.state = NULL;
  L->count = R.count;
  L->nparties = R.nparties;
  L->pbeps = R.pbeps;
  L->pbdelta = R.pbdelta;
  L->pstate = R.pstate;
  L->pcount = R.pcount;
  R.nparties = 0;
  R.pbeps = R.pbdelta = NULL;
  R.pstate = NULL;
  R.pcount = NULL;
out:
  dpo__replay_free(&R);
  free(buf);
  return st;
}

static int dpo__open0(dpo_ledger_t *L, const char *path, int resume, const char *acct,
                      const char *key_file) {
  int st = DPO_OK;
  L->ops = dpo__acct_find(acct);
  L->state = calloc(1, L->ops->state_size);
  if (!L->state) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  L->ops->init(L->state);
  if (!path) return DPO_OK;
  if (!(L->path = strdup(path))) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  /* the key first: a journal is never written unkeyed, and a resume never creates a key */
  if ((st = dpo__journal_key_load(key_file, !resume, L->key, NULL, 0))) return st;
  /* O_NOFOLLOW: a symlinked journal could make the ledger append to (or a resume truncate)
   * a file outside the run */
  if (!resume) {
    L->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (L->fd < 0)
      return dpo_err(DPO_EIO, "%s: cannot create the ledger journal: %s%s", path,
                     strerror(errno),
                     errno == EEXIST ? " (it exists: resume it, or choose a new run directory)"
                                     : "");
  } else {
    L->fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (L->fd < 0)
      return dpo_err(errno == ELOOP ? DPO_EFORMAT : DPO_EIO,
                     "%s: cannot open the ledger journal to resume: %s", path,
                     errno == ELOOP ? "it is a symbolic link (refused: the journal must be the "
                                      "run's own file)" : strerror(errno));
  }
  /* two processes spending one budget would double-spend it */
  if (flock(L->fd, LOCK_EX | LOCK_NB) != 0)
    return dpo_err(DPO_EIO, "%s: journal is locked by another process (%s)", path,
                   strerror(errno));
  if (resume) return dpo__resume0(L, path);
  dpo__chain_nonce(L->head);
  memcpy(L->nonce, L->head, sizeof L->nonce);
  json_object *h = dpo__header(L);
  if (!h) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  st = dpo__ledger_append(L, h);
  json_object_put(h);
  if (st == DPO_OK) dpo__fsync_dir(path);
  return st;
}

static void dpo__free(dpo_ledger_t *L) {
  if (!L) return;
  dpo__free_pstates(L->ops, L->nparties, L->pstate);
  free(L->pbeps);
  free(L->pbdelta);
  free(L->pcount);
  free(L->pmap);
  if (L->fd >= 0) close(L->fd); /* also drops the flock */
  sodium_memzero(L->key, sizeof L->key);
  free(L->path);
  free(L->state);
  free(L);
}

static int dpo__ledger_open(MPI_Comm comm, double eps_budget, double delta_budget,
                            const char *journal_path, int resume, const char *acct,
                            dpo_neighbours_t rel, const char *key_file, dpo_ledger_t **Lout) {
  int rank = 0, st = DPO_OK;
  dpo_ledger_t *L = NULL;
  if (comm != MPI_COMM_NULL) DPO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  if (!Lout) st = dpo_err(DPO_EINVAL, "ledger_open: NULL output");
  else if (!(eps_budget > 0) || !isfinite(eps_budget) || !(delta_budget >= 0 && delta_budget < 1))
    st = dpo_err(DPO_EINVAL, "ledger_open: need eps budget > 0 finite (got %g), delta budget in "
                             "[0, 1) (got %g)", eps_budget, delta_budget);
  else if (!dpo__acct_find(acct))
    st = dpo_err(DPO_EINVAL, "privacy.accountant = '%s': expected pld, auto, basic or rdp",
                 acct ? acct : "(null)");
  else if (rel != DPO_NEIGHBOURS_REPLACE_ONE && rel != DPO_NEIGHBOURS_ADD_REMOVE)
    st = dpo_err(DPO_EINVAL, "ledger_open: unknown neighbouring relation %d", (int)rel);
  else if (!(L = calloc(1, sizeof *L)))
    st = dpo_err(DPO_ENOMEM, "ledger: out of memory");
  if (L) {
    L->comm = comm;
    L->rank = rank;
    L->fd = -1;
    L->beps = eps_budget;
    L->bdelta = delta_budget;
    L->rel = rel;
    if (rank == 0) st = dpo__open0(L, journal_path, resume, acct, key_file);
  }
  if (comm != MPI_COMM_NULL) st = dpo_agree(comm, st);
  if (st != DPO_OK) {
    dpo__free(L);
    if (Lout) *Lout = NULL;
    return st;
  }
  *Lout = L;
  return DPO_OK;
}

int dpo_ledger_open(MPI_Comm comm, double eps_budget, double delta_budget,
                    const char *journal_path, int resume, dpo_ledger_t **Lout) {
  return dpo__ledger_open(comm, eps_budget, delta_budget, journal_path, resume, "basic",
                          DPO_NEIGHBOURS_REPLACE_ONE, NULL, Lout);
}

/* (eps, delta) budget under the Renyi accountant (rdp.c); delta must be > 0 for the
 * conversion.  Validated on every rank before the collective open (same inputs everywhere). */
static int dpo__ledger_open_rdp(MPI_Comm comm, double eps_budget, double delta_budget,
                                const char *journal_path, int resume, dpo_neighbours_t rel,
                                const char *key_file, dpo_ledger_t **Lout) {
  if (!(delta_budget > 0)) {
    int st = dpo_err(DPO_EINVAL, "ledger_open_rdp: the RDP ledger needs a delta budget in (0, 1) "
                                 "(got %g)", delta_budget);
    if (comm != MPI_COMM_NULL) st = dpo_agree(comm, st);
    if (Lout) *Lout = NULL;
    return st;
  }
  return dpo__ledger_open(comm, eps_budget, delta_budget, journal_path, resume, "rdp", rel,
                          key_file, Lout);
}

int dpo_ledger_open_rdp(MPI_Comm comm, double eps_budget, double delta_budget,
                        const char *journal_path, int resume, dpo_ledger_t **Lout) {
  return dpo__ledger_open_rdp(comm, eps_budget, delta_budget, journal_path, resume,
                              DPO_NEIGHBOURS_REPLACE_ONE, NULL, Lout);
}

int dpo_ledger_open_key(MPI_Comm comm, double eps_budget, double delta_budget,
                        const char *journal_path, int resume, const char *accountant,
                        dpo_neighbours_t rel, const char *key_file, dpo_ledger_t **Lout) {
  if (!accountant) accountant = "auto";
  if (!strcmp(accountant, "rdp"))
    return dpo__ledger_open_rdp(comm, eps_budget, delta_budget, journal_path, resume, rel,
                                key_file, Lout);
  return dpo__ledger_open(comm, eps_budget, delta_budget, journal_path, resume, accountant, rel,
                          key_file, Lout);
}

int dpo_ledger_open_ex(MPI_Comm comm, double eps_budget, double delta_budget,
                       const char *journal_path, int resume, const char *accountant,
                       dpo_neighbours_t rel, dpo_ledger_t **Lout) {
  return dpo_ledger_open_key(comm, eps_budget, delta_budget, journal_path, resume, accountant,
                             rel, NULL, Lout);
}

int dpo_ledger_position(const dpo_ledger_t *L, int64_t *lines, unsigned char head[32]) {
  int st = dpo__ledger_rank0(L, "ledger_position");
  if (st) return st;
  if (lines) *lines = L->fd >= 0 ? L->lines : -1;
  if (head) memcpy(head, L->head, DPO__CHAIN_BYTES);
  return DPO_OK;
}

int dpo_ledger_on_append(dpo_ledger_t *L, int (*fn)(void *, int64_t, const unsigned char[32]),
                         void *arg) {
  int st = dpo__ledger_rank0(L, "ledger_on_append");
  if (st) return st;
  L->on_append = fn;
  L->on_append_arg = arg;
  return DPO_OK;
}

/* The chain is re-walked from the file (the ledger keeps only its last tag): the journal must
 * reach line `lines` and its tag there must be `head`. */
int dpo_ledger_verify_position(const dpo_ledger_t *L, const char *what, int64_t lines,
                               const unsigned char head[32]) {
  int st = dpo__ledger_rank0(L, "ledger_verify_position");
  if (st || L->fd < 0) return st;
  if (!what) what = "the checkpoint";
  if (lines < 1 || lines > L->lines)
    return dpo_err(DPO_EFORMAT, "%s:%lld: missing: the journal has %lld complete lines "
                   "but %s follows line %lld (lines were deleted or the journal was truncated "
                   "or replaced by an older copy)", L->path, (long long)(L->lines + 1),
                   (long long)L->lines, what, (long long)lines);
  char *buf = NULL;
  size_t len = 0, pos = 0;
  unsigned char h[DPO__CHAIN_BYTES] = {0};
  if ((st = dpo__read_all(L->fd, L->path, &buf, &len))) return st;
  /* the lines were verified when the ledger opened (or written by it): only the tags matter */
  for (int64_t i = 1; i <= lines && pos < len; i++) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    size_t bl;
    if (!nl || !dpo__chain_split(buf + pos, (size_t)(nl - buf) - pos, &bl, h)) break;
    pos = (size_t)(nl - buf) + 1;
  }
  free(buf);
  if (sodium_memcmp(h, head, DPO__CHAIN_BYTES) != 0)
    return dpo_err(DPO_EFORMAT, "%s:%lld: the journal's chain there differs from the one %s "
                   "recorded: the journal was replaced (by an older copy or another run's) or "
                   "rewritten", L->path, (long long)lines, what);
  return DPO_OK;
}

dpo_neighbours_t dpo_ledger_neighbours(const dpo_ledger_t *L) {
  return L ? L->rel : DPO_NEIGHBOURS_REPLACE_ONE;
}
const char *dpo_ledger_accountant(const dpo_ledger_t *L) {
  return L && L->ops ? L->ops->name : NULL;
}

const char *dpo_ledger_bound(const dpo_ledger_t *L) {
  if (!L || !L->ops || L->rank != 0) return NULL;
  return L->ops->bound ? L->ops->bound(L->state) : L->ops->name;
}

int dpo_ledger_close(dpo_ledger_t *L) {
  int st = DPO_OK;
  if (L && L->fd >= 0 && !L->failed && fsync(L->fd) != 0)
    st = dpo_err(DPO_EIO, "ledger: final fsync failed: %s", strerror(errno));
  dpo__free(L);
  return st;
}

/* ------------------------------------------------------------ charging */

int dpo__ledger_rank0(const dpo_ledger_t *L, const char *fn) {
  if (!L) return dpo_err(DPO_EINVAL, "%s: NULL ledger", fn);
  if (L->rank != 0) return dpo_err(DPO_EINVAL, "%s: the ledger lives on rank 0 only", fn);
  return DPO_OK;
}

int dpo__ledger_refuse(const dpo_ledger_t *L, const dpo_charge_t *c, const dpo__acct_result_t *r) {
  return dpo_err(DPO_EBUDGET,
                 "privacy budget exhausted: step %lld would raise the spent (eps, delta) to "
                 "(%.17g, %.17g), budget (%.17g, %.17g)",
                 (long long)c->step, r->total_eps, r->total_delta, L->beps, L->bdelta);
}

int dpo_ledger_check(const dpo_ledger_t *L, const dpo_charge_t *c, double *charge_eps,
                     double *charge_delta) {
  int st = dpo__ledger_rank0(L, "ledger_check");
  if (st) return st;
  dpo__acct_result_t r;
  if ((st = dpo__charge_relation(c, L->rel))) return st;
  if ((st = L->ops->charge(L->state, c, L->beps, L->bdelta, 0, &r))) return st;
  if (charge_eps) *charge_eps = r.charge_eps;
  if (charge_delta) *charge_delta = r.charge_delta;
  return r.fits ? DPO_OK : dpo__ledger_refuse(L, c, &r);
}

int dpo_ledger_charge(dpo_ledger_t *L, const dpo_charge_t *c, double *charged) {
  int st = dpo__ledger_rank0(L, "ledger_charge");
  if (st) return st;
  if (L->failed) return dpo_err(DPO_EIO, "ledger: an earlier journal write failed; no charges");
  if (L->nparties > 0)
    return dpo_err(DPO_EUNSUP, "the ledger keeps per-party accounts: a release must name the "
                   "parties it touches (dpo_ledger_charge_parties); this algorithm does not "
                   "support multi-party runs");
  dpo__acct_result_t r;
  if ((st = dpo__charge_relation(c, L->rel))) return st;
  if ((st = L->ops->charge(L->state, c, L->beps, L->bdelta, 0, &r))) return st;
  if (!r.fits) return dpo__ledger_refuse(L, c, &r);
  if (L->fd >= 0) { /* durable before the totals move and before the caller releases */
    json_object *o = dpo__ledger_charge_line(L, c, &r);
    if (!o) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
    st = dpo__ledger_append(L, o);
    json_object_put(o);
    if (st) return st;
  }
  dpo__acct_result_t r2;
  if ((st = L->ops->charge(L->state, c, L->beps, L->bdelta, 1, &r2))) return st;
  L->count++;
  if (charged) *charged = r.charge_eps;
  return DPO_OK;
}

int dpo_ledger_charge_all(dpo_ledger_t *L, const dpo_charge_t *c, double *charged) {
  if (!L) return dpo_err(DPO_EINVAL, "ledger_charge_all: NULL ledger");
  double ch = 0;
  int st = L->rank == 0 ? dpo_ledger_charge(L, c, &ch) : DPO_OK;
  if (L->comm == MPI_COMM_NULL) {
    if (st == DPO_OK && charged) *charged = ch;
    return st;
  }
  st = dpo_agree(L->comm, st);
  if (st != DPO_OK) return st;
  DPO_MPI_CHECK(MPI_Bcast(&ch, 1, MPI_DOUBLE, 0, L->comm));
  if (charged) *charged = ch;
  return DPO_OK;
}

int dpo_ledger_plan_fits(const dpo_ledger_t *like, double eps, double delta, int64_t n,
                         int (*charge_at)(void *arg, dpo_ledger_t *F, int64_t i), void *arg,
                         int *fits) {
  return dpo_ledger_plan_fits_ex(like, eps, delta, n, n, charge_at, arg, fits);
}

int dpo_ledger_plan_fits_ex(const dpo_ledger_t *like, double eps, double delta, int64_t n,
                            int64_t plan, int (*charge_at)(void *arg, dpo_ledger_t *F, int64_t i),
                            void *arg, int *fits) {
  if (!like || !charge_at || !fits) return dpo_err(DPO_EINVAL, "ledger_plan_fits: NULL argument");
  dpo_ledger_t *F = NULL;
  *fits = 0;
  int rc = dpo_ledger_open_ex(MPI_COMM_NULL, eps, delta, NULL, 0, dpo_ledger_accountant(like),
                              dpo_ledger_neighbours(like), &F);
  if (rc) return rc;
  if (F->ops->plan) F->ops->plan(F->state, plan, 1); /* as the run will announce it */
  for (int64_t i = 0; i < n && !rc; i++) rc = charge_at(arg, F, i);
  if (!rc) *fits = 1;
  else if (rc == DPO_EBUDGET) {
    dpo_errclear();
    rc = DPO_OK;
  }
  dpo_ledger_close(F);
  return rc;
}

int dpo_ledger_spent(const dpo_ledger_t *L, double *eps, double *delta) {
  int st = dpo__ledger_rank0(L, "ledger_spent");
  if (st) return st;
  L->ops->spent(L->state, eps, delta);
  return DPO_OK;
}

int dpo_ledger_budget(const dpo_ledger_t *L, double *eps, double *delta) {
  int st = dpo__ledger_rank0(L, "ledger_budget");
  if (st) return st;
  if (eps) *eps = L->beps;
  if (delta) *delta = L->bdelta;
  return DPO_OK;
}

int64_t dpo_ledger_count(const dpo_ledger_t *L) { return L ? L->count : 0; }
int64_t dpo_ledger_repaired(const dpo_ledger_t *L) { return L ? L->repaired : 0; }


int dpo_ledger_record_plan(dpo_ledger_t *L, const char *algo, const char *kind, int64_t steps,
                           const char *what) {
  int st = dpo__ledger_rank0(L, "ledger_record_plan");
  if (st) return st;
  if (!algo || !kind || steps < 0) return dpo_err(DPO_EINVAL, "ledger_record_plan: bad plan");
  if (L->ops->plan) { /* the accountant may look ahead (acct_pld.c); replay does the same */
    L->ops->plan(L->state, steps, 0);
    for (int k = 0; k < L->nparties; k++) L->ops->plan(L->pstate[k], steps, 0);
  }
  if (L->fd < 0) return DPO_OK;
  if (L->failed) return dpo_err(DPO_EIO, "ledger: an earlier journal write failed");
  json_object *o = json_object_new_object();
  if (!o) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  json_object_object_add(o, "kind", json_object_new_string("plan"));
  json_object_object_add(o, "algo", json_object_new_string(algo));
  json_object_object_add(o, "plan", json_object_new_string(kind));
  json_object_object_add(o, "steps", json_object_new_int64(steps));
  json_object_object_add(o, "what", json_object_new_string(what ? what : ""));
  st = dpo__ledger_append(L, o);
  json_object_put(o);
  return st;
}
