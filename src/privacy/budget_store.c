/* Budget stores (dpopt/budget.h): the file, its chain, its lock, its data files.
 *
 * STORE/records.jsonl, one JSON object per line, each ending in ,"chain":"<64 hex>"} (the run
 * journal's keyed BLAKE2b chain, journal_chain.h, keyed with the journal key):
 *   {"kind":"dpopt-budget-store","version":1,"budget_eps":..,"budget_delta":..,
 *    "orders":[the RDP grid],"nonce":hex}
 *   {"kind":"file","name":BASENAME,"size":N,"hash":hex}   keyed BLAKE2b-256 of the content
 *   {"kind":"reserve","run":ID,"what":..,"eps":..,"delta":..}
 *   {"kind":"settle","run":ID,"eps":..,"delta":..,"pure_eps":..,"approx_eps":..,
 *    "approx_delta":..,"n_pure":..,"n_approx":..,"n_rdp":..,"rdp":[..],"pure_rdp":[..]}
 * A run's latest line is its record.  Writers take an exclusive flock on the file, read and
 * verify it whole, then append one line with one write(2) and fsync it; readers take a shared
 * lock.  A torn last line (a crash inside its write: never fsynced, so the reserve or settle
 * never returned) is ignored, and cut by the next writer.  Every file is opened O_NOFOLLOW.
 */
#include "budget_int.h"
#include "journal_chain.h"
#include "privacy_int.h"

#include "dpopt/budget.h"
#include "dpopt/status.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define DPO__BS_FILE "records.jsonl"
#define DPO__BS_MAXRUNS 100000

typedef struct {
  char name[256];
  int64_t size;
  char hash[65];
} dpo__bfile_t;


/* the store's contents, verified */
typedef struct {
  double beps, bdelta;
  int nfiles, nruns;
  dpo__bfile_t *files;
  dpo__brun_t *runs;
  int64_t lines;
  unsigned char head[DPO__CHAIN_BYTES];
  size_t good_len, torn_len;
} dpo__bstate_t;

struct dpo_budget {
  char dir[1024], path[1100];
  unsigned char key[DPO__CHAIN_BYTES];
  int nf;
  dpo__bfile_t *f; /* the files the run reads, hashed */
  /* the exclusive lock held from a run's check to its reservation (dpo_budget_lock), so no
   * other run reserves in between: held_fd >= 0 and the store as read under it */
  int held_fd;
  dpo__bstate_t held;
};

static void dpo__bstate_free(dpo__bstate_t *s) {
  free(s->files);
  free(s->runs);
  memset(s, 0, sizeof *s);
}

static json_object *dpo__bjd(double x) {
  char b[40];
  snprintf(b, sizeof b, "%.17g", x); /* round-trips every double */
  return json_object_new_double_s(x, b);
}
static int dpo__bget_d(json_object *o, const char *k, double *v) {
  json_object *x;
  if (!json_object_object_get_ex(o, k, &x) ||
      !(json_object_is_type(x, json_type_double) || json_object_is_type(x, json_type_int)))
    return 0;
  *v = json_object_get_double(x);
  return isfinite(*v) && *v >= 0;
}
static int64_t dpo__bget_i(json_object *o, const char *k) {
  json_object *x;
  return json_object_object_get_ex(o, k, &x) ? json_object_get_int64(x) : 0;
}
static const char *dpo__bget_s(json_object *o, const char *k) {
  json_object *x;
  if (!json_object_object_get_ex(o, k, &x) || !json_object_is_type(x, json_type_string))
    return NULL;
  return json_object_get_string(x);
}
static json_object *dpo__bcurve(const dpo_rdp_curve_t *c) {
  json_object *a = json_object_new_array();
  for (int i = 0; a && i < c->n; i++) json_object_array_add(a, dpo__bjd(c->rdp[i]));
  return a;
}
static int dpo__bget_curve(json_object *o, const char *k, dpo_rdp_curve_t *c) {
  json_object *a;
  dpo_rdp_curve_init(c);
  if (!json_object_object_get_ex(o, k, &a) || !json_object_is_type(a, json_type_array) ||
      (int)json_object_array_length(a) != c->n)
    return 0;
  for (int i = 0; i < c->n; i++) {
    json_object *x = json_object_array_get_idx(a, (size_t)i);
    c->rdp[i] = json_object_get_double(x);
    if (!(c->rdp[i] >= 0) || !isfinite(c->rdp[i])) return 0;
  }
  return 1;
}

/* ------------------------------------------------------------ reading */

static int dpo__bfind_run(dpo__bstate_t *s, const char *id) {
  for (int i = 0; i < s->nruns; i++)
    if (!strcmp(s->runs[i].id, id)) return i;
  return -1;
}

/* one verified line (o parsed) into s */
static int dpo__bline(const char *path, int64_t ln, json_object *o, dpo__bstate_t *s) {
  const char *kind = dpo__bget_s(o, "kind"), *run = dpo__bget_s(o, "run");
  if (ln == 1) {
    json_object *ord;
    const double *a;
    int n = dpo_rdp_default_orders(&a), same;
    if (!kind || strcmp(kind, "dpopt-budget-store") || dpo__bget_i(o, "version") != 1 ||
        !dpo__bget_d(o, "budget_eps", &s->beps) || !dpo__bget_d(o, "budget_delta", &s->bdelta))
      return dpo_err(DPO_EFORMAT, "%s:1: not a dpopt budget store header", path);
    same = json_object_object_get_ex(o, "orders", &ord) &&
           json_object_is_type(ord, json_type_array) && (int)json_object_array_length(ord) == n;
    for (int i = 0; same && i < n; i++)
      same = json_object_get_double(json_object_array_get_idx(ord, (size_t)i)) == a[i];
    if (!same)
      return dpo_err(DPO_EFORMAT, "%s:1: the store's RDP orders are not this dpopt's", path);
    return DPO_OK;
  }
  if (kind && !strcmp(kind, "file")) {
    const char *name = dpo__bget_s(o, "name"), *h = dpo__bget_s(o, "hash");
    if (!name || !h || strlen(h) != 64) return dpo_err(DPO_EFORMAT, "%s:%lld: bad file record", path, (long long)ln);
    dpo__bfile_t *nf = realloc(s->files, (size_t)(s->nfiles + 1) * sizeof *nf);
    if (!nf) return dpo_err(DPO_ENOMEM, "budget store: out of memory");
    s->files = nf;
    snprintf(nf[s->nfiles].name, sizeof nf->name, "%s", name);
    snprintf(nf[s->nfiles].hash, sizeof nf->hash, "%s", h);
    nf[s->nfiles++].size = dpo__bget_i(o, "size");
    return DPO_OK;
  }
  dpo__brun_t r;
  memset(&r, 0, sizeof r);
  int ok = kind && run && strlen(run) == 64 && dpo__bget_d(o, "eps", &r.eps) &&
           dpo__bget_d(o, "delta", &r.delta);
  if (ok && !strcmp(kind, "reserve")) {
    const char *w = dpo__bget_s(o, "what");
    snprintf(r.what, sizeof r.what, "%s", w ? w : "run");
  } else if (ok && !strcmp(kind, "settle")) {
    dpo_ledger_parts_t *p = &r.parts;
    r.settled = 1;
    p->eps = r.eps;
    p->delta = r.delta;
    p->n_pure = dpo__bget_i(o, "n_pure");
    p->n_approx = dpo__bget_i(o, "n_approx");
    p->n_rdp = dpo__bget_i(o, "n_rdp");
    ok = dpo__bget_d(o, "pure_eps", &p->pure_eps) && dpo__bget_d(o, "approx_eps", &p->approx_eps) &&
         dpo__bget_d(o, "approx_delta", &p->approx_delta) && p->n_pure >= 0 &&
         p->n_approx >= 0 && p->n_rdp >= 0 && dpo__bget_curve(o, "rdp", &p->rdp) &&
         dpo__bget_curve(o, "pure_rdp", &p->pure_rdp);
  } else ok = 0;
  if (!ok) return dpo_err(DPO_EFORMAT, "%s:%lld: not a store record", path, (long long)ln);
  snprintf(r.id, sizeof r.id, "%s", run);
  int i = dpo__bfind_run(s, run);
  if (i >= 0) { /* the latest line is the run's record; a settle keeps the reservation's name */
    if (r.settled) snprintf(r.what, sizeof r.what, "%s", s->runs[i].what);
    s->runs[i] = r;
    return DPO_OK;
  }
  if (s->nruns >= DPO__BS_MAXRUNS) return dpo_err(DPO_EFORMAT, "%s: too many runs", path);
  dpo__brun_t *nr = realloc(s->runs, (size_t)(s->nruns + 1) * sizeof *nr);
  if (!nr) return dpo_err(DPO_ENOMEM, "budget store: out of memory");
  s->runs = nr;
  nr[s->nruns++] = r;
  return DPO_OK;
}

/* Verify and read the whole store (the caller holds a lock on fd). */
static int dpo__bload(int fd, const char *path, const unsigned char *key, dpo__bstate_t *s) {
  char *buf = NULL;
  size_t len = 0, pos = 0;
  struct stat sb;
  int st = fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)
               ? dpo_err(DPO_EIO, "%s: not a regular file", path)
               : dpo__read_all(fd, path, &buf, &len);
  memset(s, 0, sizeof *s);
  if (st) return st;
  while (pos < len && !st) {
    char *nl = memchr(buf + pos, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
    if (nl) *nl = '\0'; /* the parser sees one line */
    json_object *o = nl ? json_tokener_parse(buf + pos) : NULL;
    if (!nl || !o) { /* a torn line: only the last one may be */
      json_object_put(o);
      if (nl && (size_t)(nl - buf) + 1 < len)
        st = dpo_err(DPO_EFORMAT, "%s:%lld: unreadable line inside the store (edited)", path,
                     (long long)s->lines + 1);
      else s->torn_len = len - pos;
      break;
    }
    int64_t ln = s->lines + 1;
    if (ln == 1 && !dpo__chain_unhex(dpo__bget_s(o, "nonce"), s->head))
      st = dpo_err(DPO_EFORMAT, "%s:1: the header has no valid nonce (edited)", path);
    else if (!dpo__chain_verify(key, s->head, buf + pos, n, s->head))
      st = dpo_err(DPO_EFORMAT, "%s:%lld: the line fails its chain check: the store was edited "
                   "(a line changed, deleted, reordered or duplicated) or it was written with "
                   "another key (give it with --journal-key)", path, (long long)ln);
    else st = dpo__bline(path, ln, o, s);
    json_object_put(o);
    if (st) break;
    s->lines = ln;
    pos += n + 1;
    s->good_len = pos;
  }
  free(buf);
  if (!st && s->lines == 0) st = dpo_err(DPO_EFORMAT, "%s: empty store (no header)", path);
  if (st) dpo__bstate_free(s);
  return st;
}

/* ------------------------------------------------------------ writing */

static int dpo__bwrite_all(int fd, const char *b, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(fd, b + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    off += (size_t)w;
  }
  return 0;
}

/* one chained line (o consumed) with one write(2), then fsync; moves s->head */
static int dpo__bappend(int fd, const char *path, const unsigned char *key, dpo__bstate_t *s,
                        json_object *o) {
  size_t n;
  int st = DPO_OK;
  const char *js = o ? json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &n) : NULL;
  if (!js || n < 2 || js[n - 1] != '}') {
    json_object_put(o);
    return dpo_err(DPO_ENOMEM, "budget store: cannot serialize a record");
  }
  size_t b = n - 1, total = b + DPO__CHAIN_SUFFIX_LEN + 1;
  unsigned char tag[DPO__CHAIN_BYTES];
  char hex[2 * DPO__CHAIN_BYTES + 1], *line = malloc(total + 1);
  if (!line) {
    json_object_put(o);
    return dpo_err(DPO_ENOMEM, "budget store: out of memory");
  }
  if (s->torn_len) { /* a crash inside the last write: cut it before appending */
    if (ftruncate(fd, (off_t)s->good_len) != 0 || fsync(fd) != 0) {
      json_object_put(o);
      free(line);
      return dpo_err(DPO_EIO, "%s: cannot cut the torn last line: %s", path, strerror(errno));
    }
    s->torn_len = 0;
  }
  dpo__chain_tag(key, s->head, js, b, tag);
  dpo__chain_hex(tag, hex);
  memcpy(line, js, b);
  snprintf(line + b, total + 1 - b, ",\"chain\":\"%s\"}\n", hex);
  json_object_put(o);
  if (dpo__bwrite_all(fd, line, total) != 0 || fsync(fd) != 0) {
    st = dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
    if (ftruncate(fd, (off_t)s->good_len) == 0) (void)fsync(fd); /* no torn line left behind */
  } else {
    s->good_len += total;
    s->lines++;
    memcpy(s->head, tag, sizeof tag);
  }
  free(line);
  return st;
}

/* open records.jsonl (no symlink), lock it, verify it; excl: for writing (a torn last line is
 * cut at the first append: a refusal writes nothing) */
static int dpo__bopen(const char *dir, const unsigned char *key, int excl, int *fdp,
                      dpo__bstate_t *s) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, DPO__BS_FILE);
  int fd = open(path, (excl ? O_RDWR | O_APPEND : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return dpo_err(DPO_EIO, "budget store %s: cannot open %s: %s%s", dir, path, strerror(errno),
                   errno == ENOENT ? " (create the store with dpopt budget init)" :
                   errno == ELOOP ? " (a symbolic link: refused)" : "");
  int st;
  while (flock(fd, excl ? LOCK_EX : LOCK_SH) != 0)
    if (errno != EINTR) {
      close(fd);
      return dpo_err(DPO_EIO, "%s: cannot lock: %s", path, strerror(errno));
    }
  if ((st = dpo__bload(fd, path, key, s))) {
    close(fd); /* closing releases the lock */
    return st;
  }
  *fdp = fd;
  return DPO_OK;
}

/* keyed BLAKE2b-256 of a file's bytes (domain-separated from the chain tags) */
static int dpo__bhash(const unsigned char *key, const char *file, dpo__bfile_t *f) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0) return dpo_err(DPO_EIO, "%s: cannot open: %s", file, strerror(errno));
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return dpo_err(DPO_EIO, "%s: not a regular file", file);
  }
  static const char dom[] = "dpopt budget store data v1";
  crypto_generichash_state h;
  unsigned char out[32], *b = malloc(1 << 20);
  if (!b) {
    close(fd);
    return dpo_err(DPO_ENOMEM, "budget store: out of memory");
  }
  crypto_generichash_init(&h, key, DPO__CHAIN_BYTES, sizeof out);
  crypto_generichash_update(&h, (const unsigned char *)dom, sizeof dom);
  ssize_t r;
  int64_t size = 0;
  while ((r = read(fd, b, 1 << 20)) != 0) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    crypto_generichash_update(&h, b, (size_t)r);
    size += r;
  }
  free(b);
  close(fd);
  if (r < 0) return dpo_err(DPO_EIO, "%s: read failed: %s", file, strerror(errno));
  crypto_generichash_final(&h, out, sizeof out);
  sodium_bin2hex(f->hash, sizeof f->hash, out, sizeof out);
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", file);
  snprintf(f->name, sizeof f->name, "%s", basename(tmp));
  f->size = size;
  return DPO_OK;
}

static int dpo__bregistered(const dpo__bstate_t *s, const dpo__bfile_t *f) {
  for (int i = 0; i < s->nfiles; i++)
    if (!strcmp(s->files[i].hash, f->hash)) return 1;
  return 0;
}

static json_object *dpo__bfile_line(const dpo__bfile_t *f) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "kind", json_object_new_string("file"));
  json_object_object_add(o, "name", json_object_new_string(f->name));
  json_object_object_add(o, "size", json_object_new_int64(f->size));
  json_object_object_add(o, "hash", json_object_new_string(f->hash));
  return o;
}

/* ------------------------------------------------------------ the commands */

static void dpo__bfsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

int dpo_budget_init(const char *store, double eps, double delta, const char *const *files,
                    int nfiles, const char *key_file) {
  unsigned char key[DPO__CHAIN_BYTES];
  char path[1100], tmp[1200];
  int st, fd = -1, made = 0;
  dpo__bstate_t s;
  memset(&s, 0, sizeof s);
  if (!store || !*store) return dpo_err(DPO_EINVAL, "budget init: no store directory");
  if (!(eps > 0) || !isfinite(eps) || !(delta >= 0 && delta < 1))
    return dpo_err(DPO_EINVAL, "budget init: the budget needs eps > 0 and delta in [0, 1)");
  if ((st = dpo__journal_key_load(key_file, 1, key, NULL, 0))) return st;
  /* the data first: an unreadable file leaves nothing behind */
  dpo__bfile_t *f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *f);
  if (!f) return dpo_err(DPO_ENOMEM, "budget store: out of memory");
  for (int i = 0; i < nfiles && !st; i++) st = dpo__bhash(key, files[i], &f[i]);
  if (st) goto out;
  if (mkdir(store, 0700) == 0) made = 1;
  else if (errno != EEXIST) {
    st = dpo_err(DPO_EIO, "%s: cannot create the store directory: %s", store, strerror(errno));
    goto out;
  }
  snprintf(path, sizeof path, "%s/%s", store, DPO__BS_FILE);
  snprintf(tmp, sizeof tmp, "%s.new.%ld", path, (long)getpid());
  /* written whole to a temporary, then linked into place: a store is complete or absent */
  if ((fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
    st = dpo_err(DPO_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    goto out;
  }
  json_object *h = json_object_new_object(), *ord = json_object_new_array();
  const double *a;
  int no = dpo_rdp_default_orders(&a);
  for (int i = 0; i < no; i++) json_object_array_add(ord, dpo__bjd(a[i]));
  char hex[2 * DPO__CHAIN_BYTES + 1];
  dpo__chain_nonce(s.head);
  dpo__chain_hex(s.head, hex);
  json_object_object_add(h, "kind", json_object_new_string("dpopt-budget-store"));
  json_object_object_add(h, "version", json_object_new_int(1));
  json_object_object_add(h, "budget_eps", dpo__bjd(eps));
  json_object_object_add(h, "budget_delta", dpo__bjd(delta));
  json_object_object_add(h, "orders", ord);
  json_object_object_add(h, "nonce", json_object_new_string(hex));
  st = dpo__bappend(fd, tmp, key, &s, h);
  for (int i = 0; i < nfiles && !st; i++) {
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= !strcmp(f[i].hash, f[j].hash);
    if (!dup) st = dpo__bappend(fd, tmp, key, &s, dpo__bfile_line(&f[i]));
  }
  close(fd);
  if (!st && link(tmp, path) != 0)
    st = errno == EEXIST ? dpo_err(DPO_EINVAL, "%s: a store is already there (its budget is "
                                   "fixed: register more data with dpopt budget add)", path)
                         : dpo_err(DPO_EIO, "%s: %s", path, strerror(errno));
  unlink(tmp);
  if (!st) dpo__bfsync_dir(store);
out:
  if (st && made) rmdir(store);
  sodium_memzero(key, sizeof key);
  free(f);
  return st;
}

int dpo_budget_add(const char *store, const char *const *files, int nfiles,
                   const char *key_file, FILE *out) {
  unsigned char key[DPO__CHAIN_BYTES];
  int st, fd = -1;
  dpo__bstate_t s;
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", store, DPO__BS_FILE);
  if ((st = dpo__journal_key_load(key_file, 0, key, NULL, 0))) return st;
  dpo__bfile_t *f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *f);
  if (!f) return dpo_err(DPO_ENOMEM, "budget store: out of memory");
  for (int i = 0; i < nfiles && !st; i++) st = dpo__bhash(key, files[i], &f[i]);
  if (!st && !(st = dpo__bopen(store, key, 1, &fd, &s))) {
    for (int i = 0; i < nfiles && !st; i++) {
      if (dpo__bregistered(&s, &f[i])) {
        if (out) fprintf(out, "%s: already registered (same content)\n", files[i]);
        continue;
      }
      if (!(st = dpo__bappend(fd, path, key, &s, dpo__bfile_line(&f[i])))) {
        dpo__bfile_t *nf = realloc(s.files, (size_t)(s.nfiles + 1) * sizeof *nf);
        if (nf) s.files = nf, nf[s.nfiles++] = f[i];
        if (out) fprintf(out, "%s: registered (%lld bytes)\n", files[i], (long long)f[i].size);
      }
    }
    close(fd);
    dpo__bstate_free(&s);
  }
  sodium_memzero(key, sizeof key);
  free(f);
  return st;
}

int dpo_budget_open(const char *store, const char *key_file, const char *const *files,
                    int nfiles, dpo_budget_t **out) {
  dpo_budget_t *B = calloc(1, sizeof *B);
  dpo__bstate_t s;
  int st, fd = -1;
  *out = NULL;
  if (!B || !(B->f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *B->f))) {
    free(B);
    return dpo_err(DPO_ENOMEM, "budget store: out of memory");
  }
  B->held_fd = -1;
  snprintf(B->dir, sizeof B->dir, "%s", store);
  snprintf(B->path, sizeof B->path, "%s/%s", store, DPO__BS_FILE);
  B->nf = nfiles;
  /* the key is never created here: a store is made with it */
  if ((st = dpo__journal_key_load(key_file, 0, B->key, NULL, 0))) goto fail;
  for (int i = 0; i < nfiles && !st; i++) st = dpo__bhash(B->key, files[i], &B->f[i]);
  if (st || (st = dpo__bopen(store, B->key, 0, &fd, &s))) goto fail;
  for (int i = 0; i < nfiles && !st; i++) {
    if (dpo__bregistered(&s, &B->f[i])) continue;
    int same_name = 0;
    for (int j = 0; j < s.nfiles; j++) same_name |= !strcmp(s.files[j].name, B->f[i].name);
    st = dpo_err(DPO_EINVAL, "%s: %s the budget store %s%s: a private run on it would get no "
                 "account.  If it is data of this store's data set, register it with: dpopt "
                 "budget add %s %s (nothing was run or written)", files[i],
                 same_name ? "differs from the file of that name registered in"
                           : "is not registered in", store,
                 same_name ? " (changed since it was registered?)" : "", store, files[i]);
  }
  close(fd);
  dpo__bstate_free(&s);
  if (st) goto fail;
  *out = B;
  return DPO_OK;
fail:
  dpo_budget_close(B);
  return st;
}

void dpo_budget_close(dpo_budget_t *B) {
  if (!B) return;
  if (B->held_fd >= 0) { /* a run that stopped between its check and its reservation */
    close(B->held_fd);
    dpo__bstate_free(&B->held);
  }
  sodium_memzero(B->key, sizeof B->key);
  free(B->f);
  free(B);
}

static int dpo__breserve(dpo_budget_t *B, const char *run_id, double eps, double delta,
                         const char *what, int dry, const dpo_ledger_parts_t *now) {
  dpo__bstate_t s;
  int fd = -1, st = DPO_OK;
  if (!(eps > 0) || !isfinite(eps) || !(delta >= 0 && delta < 1))
    return dpo_err(DPO_EINVAL, "budget store: a reservation needs eps > 0 and delta in [0, 1)");
  int held = B->held_fd >= 0;
  if (held) { /* under the lock taken by dpo_budget_lock: the store as read then */
    fd = B->held_fd;
    s = B->held;
  } else if ((st = dpo__bopen(B->dir, B->key, !dry, &fd, &s)))
    return st;
  int i = run_id ? dpo__bfind_run(&s, run_id) : -1;
  if (i >= 0 && !s.runs[i].settled) goto out; /* reserved and not settled: a resumed run */
  if (i >= 0 && (!now || now->eps < s.runs[i].eps || now->delta < s.runs[i].delta)) {
    /* a journal only grows: one behind the store's settlement was cut or replaced */
    st = dpo_err(DPO_EFORMAT, "budget store %s: run %.12s was settled at eps = %.17g, delta = "
                 "%.3g, but its journal now holds eps = %.17g: the run directory was rolled back "
                 "or replaced; refused", B->dir, run_id, s.runs[i].eps, s.runs[i].delta,
                 now ? now->eps : 0.0);
    goto out;
  }
  dpo__brun_t r;
  memset(&r, 0, sizeof r);
  r.eps = eps;
  r.delta = delta;
  dpo__brun_t was;
  if (i >= 0) { /* replaced by r in the sums; kept as read for a reservation after a dry check */
    was = s.runs[i];
    s.runs[i].eps = s.runs[i].delta = 0, s.runs[i].settled = 0;
  }
  double te, td, pe, pd;
  const char *how;
  st = dpo__budget_total(s.runs, s.nruns, &r, s.bdelta, &te, &td, &how);
  if (!st) st = dpo__budget_total(s.runs, s.nruns, NULL, s.bdelta, &pe, &pd, NULL);
  if (i >= 0) s.runs[i] = was;
  if (st) goto out;
  if (!(te <= s.beps && td <= s.bdelta)) {
    /* what is true when: a new run's check comes before its data are loaded; a resumed run's
     * (its id is its reopened journal's) before its next release, dpopt admm's after its data
     * are loaded; either writes nothing.  The run's own record is not one of the others. */
    const int others = s.nruns - (i >= 0);
    const char *when = now ? "the resumed run is refused before its next release: nothing "
                             "more was released, nothing written"
                     : dry ? "refused before the data were loaded, nothing was run or written"
                           : "refused before the run's first release";
    st = dpo_err(DPO_EBUDGET, "budget store %s: this run's budget (eps = %g, delta = %g) does "
                 "not fit what is left of the data set's budget (eps = %g, delta = %g; spent "
                 "eps = %.6g, delta = %.3g by %d other run%s; with this run eps = %.6g, delta = "
                 "%.3g): %s (dpopt budget show %s)", B->dir, eps, delta, s.beps, s.bdelta, pe,
                 pd, others, others == 1 ? "" : "s", te, td, when, B->dir);
    goto out;
  }
  if (dry) goto out;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "kind", json_object_new_string("reserve"));
  json_object_object_add(o, "run", json_object_new_string(run_id));
  json_object_object_add(o, "what", json_object_new_string(what ? what : "run"));
  json_object_object_add(o, "eps", dpo__bjd(eps));
  json_object_object_add(o, "delta", dpo__bjd(delta));
  st = dpo__bappend(fd, B->path, B->key, &s, o);
out:
  if (held && dry && st == DPO_OK) { /* checked: keep the lock for the reservation */
    B->held = s;
    return st;
  }
  B->held_fd = -1; /* a reservation made or refused: the lock goes */
  memset(&B->held, 0, sizeof B->held);
  close(fd);
  dpo__bstate_free(&s);
  return st;
}

int dpo_budget_lock(dpo_budget_t *B) {
  if (B->held_fd >= 0) return DPO_OK;
  return dpo__bopen(B->dir, B->key, 1, &B->held_fd, &B->held);
}

int dpo_budget_reserve(dpo_budget_t *B, const char *run_id, double eps, double delta,
                       const char *what, int dry) {
  return dpo__breserve(B, run_id, eps, delta, what, dry, NULL);
}

int dpo_budget_reserve_resumed(dpo_budget_t *B, const char *run_id, double eps, double delta,
                               const char *what, const dpo_ledger_parts_t *now, int dry) {
  return dpo__breserve(B, run_id, eps, delta, what, dry, now);
}

int dpo_budget_settle(dpo_budget_t *B, const char *run_id, const dpo_ledger_parts_t *p) {
  dpo__bstate_t s;
  dpo_ledger_parts_t none;
  int fd = -1, st;
  if (!p) {
    memset(&none, 0, sizeof none);
    dpo_rdp_curve_init(&none.rdp);
    dpo_rdp_curve_init(&none.pure_rdp);
    p = &none;
  }
  if ((st = dpo__bopen(B->dir, B->key, 1, &fd, &s))) return st;
  int i = dpo__bfind_run(&s, run_id);
  if (i < 0 || s.runs[i].settled) goto out; /* nothing reserved to settle */
  json_object *o = json_object_new_object();
  json_object_object_add(o, "kind", json_object_new_string("settle"));
  json_object_object_add(o, "run", json_object_new_string(run_id));
  json_object_object_add(o, "eps", dpo__bjd(p->eps));
  json_object_object_add(o, "delta", dpo__bjd(p->delta));
  json_object_object_add(o, "pure_eps", dpo__bjd(p->pure_eps));
  json_object_object_add(o, "approx_eps", dpo__bjd(p->approx_eps));
  json_object_object_add(o, "approx_delta", dpo__bjd(p->approx_delta));
  json_object_object_add(o, "n_pure", json_object_new_int64(p->n_pure));
  json_object_object_add(o, "n_approx", json_object_new_int64(p->n_approx));
  json_object_object_add(o, "n_rdp", json_object_new_int64(p->n_rdp));
  json_object_object_add(o, "rdp", dpo__bcurve(&p->rdp));
  json_object_object_add(o, "pure_rdp", dpo__bcurve(&p->pure_rdp));
  st = dpo__bappend(fd, B->path, B->key, &s, o);
out:
  close(fd);
  dpo__bstate_free(&s);
  return st;
}

int dpo_budget_spent(const char *store, const char *key_file, double *budget_eps,
                     double *budget_delta, double *eps, double *delta) {
  unsigned char key[DPO__CHAIN_BYTES];
  dpo__bstate_t s;
  int fd = -1, st;
  double e, d;
  if ((st = dpo__journal_key_load(key_file, 0, key, NULL, 0))) return st;
  st = dpo__bopen(store, key, 0, &fd, &s);
  sodium_memzero(key, sizeof key);
  if (st) return st;
  close(fd);
  if (!(st = dpo__budget_total(s.runs, s.nruns, NULL, s.bdelta, &e, &d, NULL))) {
    if (budget_eps) *budget_eps = s.beps;
    if (budget_delta) *budget_delta = s.bdelta;
    if (eps) *eps = e;
    if (delta) *delta = d;
  }
  dpo__bstate_free(&s);
  return st;
}

int dpo_budget_show(const char *store, const char *key_file, FILE *out) {
  unsigned char key[DPO__CHAIN_BYTES];
  dpo__bstate_t s;
  int fd = -1, st;
  if ((st = dpo__journal_key_load(key_file, 0, key, NULL, 0))) return st;
  st = dpo__bopen(store, key, 0, &fd, &s);
  sodium_memzero(key, sizeof key);
  if (st) return st;
  close(fd);
  double e, d;
  const char *how;
  if (!(st = dpo__budget_total(s.runs, s.nruns, NULL, s.bdelta, &e, &d, &how))) {
    fprintf(out, "budget store    %s (%lld records, chain verified%s)\n", store,
            (long long)s.lines, s.torn_len ? "; a torn last line is ignored" : "");
    fprintf(out, "budget          eps = %.6g, delta = %.3g\n", s.beps, s.bdelta);
    fprintf(out, "spent           eps = %.17g, delta = %.3g (composed by %s)\n", e, d,
            !strcmp(how, "parts") ? "the runs' parts: RDP curves, pure and (eps, delta) parts"
                                  : "the runs' whole budgets (basic composition)");
    fprintf(out, "remaining       eps = %.6g\n", e < s.beps ? dpo__add_down(s.beps, -e) : 0.0);
    for (int i = 0; i < s.nfiles; i++)
      fprintf(out, "data            %s (%lld bytes)\n", s.files[i].name, (long long)s.files[i].size);
    fprintf(out, "runs            %d\n", s.nruns);
    for (int i = 0; i < s.nruns; i++) {
      const dpo__brun_t *r = &s.runs[i];
      fprintf(out, "  run %.12s  %-6s %s eps = %.6g, delta = %.3g", r->id, r->what,
              r->settled ? "settled " : "reserved", r->eps, r->delta);
      if (r->settled)
        fprintf(out, " (%lld Gaussian, %lld pure, %lld (eps, delta) releases)",
                (long long)r->parts.n_rdp, (long long)r->parts.n_pure,
                (long long)r->parts.n_approx);
      fprintf(out, "\n");
    }
  }
  dpo__bstate_free(&s);
  return st;
}
