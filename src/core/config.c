#include "dpopt/config.h"
#include "dpopt/status.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
  char *key, *value, *origin;
  int used;   /* mutable through const getters: "used" is bookkeeping, not state */
  int warned; /* reported by dpo_config_typos */
} dpo__kv_t;

struct dpo_config {
  dpo__kv_t *kv;
  int n, cap;
  /* keys the program knows: asked for by a getter (set or not) or declared; a set key that
   * is none of these and close to one of them is a probable typo */
  char **known;
  int nknown, capknown;
};

int dpo_config_create(dpo_config_t **cfg) {
  *cfg = calloc(1, sizeof **cfg);
  return *cfg ? DPO_OK : dpo_err(DPO_ENOMEM, "config: out of memory");
}

void dpo_config_destroy(dpo_config_t *cfg) {
  if (!cfg) return;
  for (int i = 0; i < cfg->n; i++) {
    free(cfg->kv[i].key);
    free(cfg->kv[i].value);
    free(cfg->kv[i].origin);
  }
  free(cfg->kv);
  for (int i = 0; i < cfg->nknown; i++) free(cfg->known[i]);
  free(cfg->known);
  free(cfg);
}

static int dpo__is_known(const dpo_config_t *cfg, const char *key) {
  for (int i = 0; i < cfg->nknown; i++)
    if (!strcmp(cfg->known[i], key)) return 1;
  return 0;
}

/* Best effort (bookkeeping for typo hints: out of memory only loses a hint). */
static void dpo__add_known(const dpo_config_t *ccfg, const char *key) {
  dpo_config_t *cfg = (dpo_config_t *)ccfg;
  if (dpo__is_known(cfg, key)) return;
  if (cfg->nknown == cfg->capknown) {
    int cap = cfg->capknown ? 2 * cfg->capknown : 64;
    char **nk = realloc(cfg->known, (size_t)cap * sizeof *nk);
    if (!nk) return;
    cfg->known = nk;
    cfg->capknown = cap;
  }
  if ((cfg->known[cfg->nknown] = strdup(key))) cfg->nknown++;
}

void dpo_config_declare(const dpo_config_t *cfg, const char *key) {
  if (cfg && key) dpo__add_known(cfg, key);
}

static dpo__kv_t *dpo__find(const dpo_config_t *cfg, const char *key) {
  for (int i = 0; i < cfg->n; i++)
    if (strcmp(cfg->kv[i].key, key) == 0) return &cfg->kv[i];
  return NULL;
}

/* A run writes its settings to config.ini and --resume reads them back: refuse what would not
 * read back as written (a line break, a control character, an inline " ;" comment, spaces the
 * reader strips, a key the INI syntax cannot hold). */
static int dpo__check_kv(const char *key, const char *value, const char *origin) {
  const char *o = origin ? origin : "?";
  if (!*key) return dpo_err(DPO_EINVAL, "%s: empty setting name", o);
  for (const char *p = key; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == '-'))
      return dpo_err(DPO_EINVAL, "%s: setting name '%.60s' has a character other than letters, "
                     "digits, '_', '-' and '.'", o, key);
  size_t n = strlen(value);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)value[i];
    if (c < 0x20 || c == 0x7f)
      return dpo_err(DPO_EINVAL, "%s: %s: the value holds a control character (line break, tab, "
                     "...), which config.ini could not hold", o, key);
    if (c == ';' && i > 0 && (value[i - 1] == ' '))
      return dpo_err(DPO_EINVAL, "%s: %s: ' ;' in a value starts a comment in config.ini", o, key);
  }
  if (n && (value[0] == ' ' || value[n - 1] == ' '))
    return dpo_err(DPO_EINVAL, "%s: %s = '%s': leading or trailing spaces would be lost in "
                   "config.ini", o, key, value);
  return DPO_OK;
}

int dpo_config_set(dpo_config_t *cfg, const char *key, const char *value, const char *origin) {
  int rc = dpo__check_kv(key, value, origin);
  if (rc) return rc;
  dpo__kv_t *e = dpo__find(cfg, key);
  char *v = strdup(value), *o = strdup(origin ? origin : "?");
  if (!v || !o) {
    free(v);
    free(o);
    return dpo_err(DPO_ENOMEM, "config: out of memory");
  }
  if (!e) {
    if (cfg->n == cfg->cap) {
      int cap = cfg->cap ? 2 * cfg->cap : 32;
      dpo__kv_t *nk = realloc(cfg->kv, (size_t)cap * sizeof *nk);
      if (!nk) {
        free(v);
        free(o);
        return dpo_err(DPO_ENOMEM, "config: out of memory");
      }
      cfg->kv = nk;
      cfg->cap = cap;
    }
    e = &cfg->kv[cfg->n];
    memset(e, 0, sizeof *e);
    if (!(e->key = strdup(key))) {
      free(v);
      free(o);
      return dpo_err(DPO_ENOMEM, "config: out of memory");
    }
    cfg->n++;
  }
  free(e->value);
  free(e->origin);
  e->value = v;
  e->origin = o;
  return DPO_OK;
}

typedef struct {
  dpo_config_t *cfg;
  const char *path;
  int status;
  FILE *f;
  int lineno; /* Debian's inih is built without INI_HANDLER_LINENO: count lines ourselves */
} dpo__ini_ctx_t;

static char *dpo__ini_reader(char *str, int num, void *stream) {
  dpo__ini_ctx_t *c = stream;
  char *r = fgets(str, num, c->f);
  if (r) c->lineno++;
  return r;
}

static int dpo__ini_handler(void *user, const char *section, const char *name,
                            const char *value) {
  dpo__ini_ctx_t *c = user;
  int lineno = c->lineno;
  char key[256], origin[512];
  if (!section[0])
    snprintf(key, sizeof key, "%s", name);
  else
    snprintf(key, sizeof key, "%s.%s", section, name);
  snprintf(origin, sizeof origin, "%s:%d", c->path, lineno);
  c->status = dpo_config_set(c->cfg, key, value, origin);
  return c->status == DPO_OK;
}

int dpo_config_load_ini(dpo_config_t *cfg, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot open config file: %s", path, strerror(errno));
  dpo__ini_ctx_t c = {cfg, path, DPO_OK, f, 0};
  int rc = ini_parse_stream(dpo__ini_reader, &c, dpo__ini_handler, &c);
  fclose(f);
  if (c.status != DPO_OK) return c.status;
  if (rc > 0) return dpo_err(DPO_EINVAL, "%s:%d: malformed line in config file", path, rc);
  if (rc < 0) return dpo_err(DPO_EIO, "%s: cannot read config file", path);
  return DPO_OK;
}

const char *dpo_config_get(const dpo_config_t *cfg, const char *key) {
  dpo__kv_t *e = dpo__find(cfg, key);
  if (!e) {
    dpo__add_known(cfg, key);
    return NULL;
  }
  e->used = 1;
  return e->value;
}

const char *dpo_config_origin(const dpo_config_t *cfg, const char *key) {
  dpo__kv_t *e = dpo__find(cfg, key);
  return e ? e->origin : NULL;
}

int dpo_config_get_str(const dpo_config_t *cfg, const char *key, const char *def,
                       const char **out) {
  const char *v = dpo_config_get(cfg, key);
  *out = v ? v : def;
  return DPO_OK;
}

int dpo_config_get_double(const dpo_config_t *cfg, const char *key, double def, double *out) {
  const char *v = dpo_config_get(cfg, key);
  if (!v) {
    *out = def;
    return DPO_OK;
  }
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  while (*end == ' ' || *end == '\t') end++;
  if (end == v || *end || errno == ERANGE || isnan(x))
    return dpo_err(DPO_EINVAL, "%s: %s = '%s' is not a number", dpo_config_origin(cfg, key), key,
                   v);
  *out = x;
  return DPO_OK;
}

int dpo_config_get_int(const dpo_config_t *cfg, const char *key, int64_t def, int64_t *out) {
  const char *v = dpo_config_get(cfg, key);
  if (!v) {
    *out = def;
    return DPO_OK;
  }
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  /* accept 1e5-style integers too: users write n=1e5 */
  if (*end == 'e' || *end == 'E' || *end == '.') {
    double dx = strtod(v, &end);
    if (dx == floor(dx) && fabs(dx) < 9e15) x = (long long)dx;
    else end = (char *)v;
  }
  while (*end == ' ' || *end == '\t') end++;
  if (end == v || *end || errno == ERANGE)
    return dpo_err(DPO_EINVAL, "%s: %s = '%s' is not an integer", dpo_config_origin(cfg, key),
                   key, v);
  *out = x;
  return DPO_OK;
}

int dpo_config_get_bool(const dpo_config_t *cfg, const char *key, int def, int *out) {
  const char *v = dpo_config_get(cfg, key);
  if (!v) {
    *out = def;
    return DPO_OK;
  }
  if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
      !strcasecmp(v, "on"))
    *out = 1;
  else if (!strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
           !strcasecmp(v, "off"))
    *out = 0;
  else
    return dpo_err(DPO_EINVAL, "%s: %s = '%s' is not a boolean (true/false)",
                   dpo_config_origin(cfg, key), key, v);
  return DPO_OK;
}

int dpo_config_unused(const dpo_config_t *cfg, void (*fn)(const char *, const char *, void *),
                      void *arg) {
  int c = 0;
  for (int i = 0; i < cfg->n; i++)
    if (!cfg->kv[i].used && !cfg->kv[i].warned) {
      c++;
      if (fn) fn(cfg->kv[i].key, cfg->kv[i].origin, arg);
    }
  return c;
}

int dpo_config_copy(const dpo_config_t *cfg, dpo_config_t **out) {
  int rc = dpo_config_create(out);
  for (int i = 0; !rc && i < cfg->n; i++)
    rc = dpo_config_set(*out, cfg->kv[i].key, cfg->kv[i].value, cfg->kv[i].origin);
  for (int i = 0; !rc && i < cfg->nknown; i++) dpo__add_known(*out, cfg->known[i]);
  if (rc) {
    dpo_config_destroy(*out);
    *out = NULL;
  }
  return rc;
}

void dpo_config_foreach(const dpo_config_t *cfg,
                        void (*fn)(const char *, const char *, const char *, void *), void *arg) {
  for (int i = 0; i < cfg->n; i++) fn(cfg->kv[i].key, cfg->kv[i].value, cfg->kv[i].origin, arg);
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions), ignoring case;
 * words longer than 127 characters are not compared (returns a large distance). */
static int dpo__osa(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 127 || lb > 127) return 1 << 20;
  int d[128][128];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
      int v = d[i - 1][j - 1] + (ca != cb);
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

/* the part a reader types: after the last '.' of a key, after the leading dashes of a flag */
static const char *dpo__name(const char *w) {
  const char *dot = strrchr(w, '.');
  if (dot) return dot + 1;
  while (*w == '-') w++;
  return w;
}

const char *dpo_config_nearest(const char *word, const char *const *cands, int n) {
  const char *best = NULL;
  int bestd = 1 << 20;
  for (int i = 0; i < n; i++) {
    if (!cands[i] || !strcmp(cands[i], word)) continue;
    const char *nw = dpo__name(word), *nc = dpo__name(cands[i]);
    int lw = (int)strlen(nw), lc = (int)strlen(nc), m = lw < lc ? lw : lc;
    int d = dpo__osa(word, cands[i]);
    /* the right name in the wrong section (or without one) is a typo of any length */
    if (m > 0 && !strcasecmp(nw, nc) && d > 0) d = 1, m = 2;
    /* short names are too close to each other: one edit from a 2-letter name, two from a
     * 5-letter one (algo.D and algo.m are both real keys) */
    int ok = d == 0 || (d == 1 && m >= 2) || (d == 2 && m >= 5);
    if (ok && d < bestd) {
      best = cands[i];
      bestd = d;
    }
  }
  return best;
}

const char *dpo_config_suggest(const dpo_config_t *cfg, const char *key) {
  const char *best = dpo_config_nearest(key, (const char *const *)cfg->known, cfg->nknown);
  if (best) return best;
  /* keys that were set and read are known too */
  for (int i = 0; i < cfg->n && !best; i++)
    if (cfg->kv[i].used) {
      const char *c = cfg->kv[i].key;
      best = dpo_config_nearest(key, &c, 1);
    }
  return best;
}

int dpo_config_typos(const dpo_config_t *cfg,
                     void (*fn)(const char *, const char *, const char *, void *), void *arg) {
  int c = 0;
  for (int i = 0; i < cfg->n; i++) {
    dpo__kv_t *e = &cfg->kv[i];
    if (e->used || e->warned || dpo__is_known(cfg, e->key)) continue;
    const char *sug = dpo_config_suggest(cfg, e->key);
    if (!sug) continue;
    e->warned = 1;
    c++;
    if (fn) fn(e->key, e->origin, sug, arg);
  }
  return c;
}

/* The two warnings every front end prints (moved down from the CLI so the run API gives an
 * embedding program the same typo hints). */
static void dpo__warn_typo(const char *key, const char *origin, const char *sug, void *arg) {
  fprintf((FILE *)arg, "dpopt: warning: %s: unknown setting '%s': did you mean '%s'?\n", origin,
          key, sug);
}

int dpo_config_warn_typos(const dpo_config_t *cfg, FILE *out) {
  if (!cfg) return 0;
  int c = dpo_config_typos(cfg, out ? dpo__warn_typo : NULL, out);
  if (out) fflush(out);
  return c;
}

int dpo_config_is_used(const dpo_config_t *cfg, const char *key) {
  const dpo__kv_t *e = cfg ? dpo__find(cfg, key) : NULL;
  return e && e->used;
}

int dpo_config_check_known(const dpo_config_t *cfg, const char *what) {
  if (!cfg) return DPO_OK;
  char list[1536];
  size_t off = 0;
  int nbad = 0;
  for (int i = 0; i < cfg->n; i++) {
    dpo__kv_t *e = &cfg->kv[i];
    if (e->used || dpo__is_known(cfg, e->key)) continue;
    const char *sug = dpo_config_suggest(cfg, e->key);
    e->warned = 1; /* named here: no warning repeats it */
    if (off < sizeof list) {
      int k = sug ? snprintf(list + off, sizeof list - off, "%s%s: unknown setting '%s': did you "
                             "mean '%s'?", nbad ? "; " : "", e->origin, e->key, sug)
                  : snprintf(list + off, sizeof list - off, "%s%s: setting '%s' is not used by "
                             "%s", nbad ? "; " : "", e->origin, e->key, what);
      off += k > 0 ? (size_t)k : 0;
    }
    nbad++;
  }
  if (!nbad) return DPO_OK;
  return dpo_err(DPO_EINVAL, "%s (%s reads no such key: a misspelling, or a key of another "
                 "command, see --help; nothing was run or written)", list, what);
}

static void dpo__warn_unused(const char *key, const char *origin, void *arg) {
  const dpo_config_t *cfg = ((void **)arg)[0];
  FILE *out = ((void **)arg)[1];
  const char *sug = dpo_config_suggest(cfg, key);
  if (sug)
    fprintf(out, "dpopt: warning: %s: unused setting '%s': did you mean '%s'?\n", origin, key, sug);
  else
    fprintf(out, "dpopt: warning: %s: unused setting '%s' (misspelled?)\n", origin, key);
}

int dpo_config_warn_unused(const dpo_config_t *cfg, FILE *out) {
  if (!cfg || !out) return 0;
  void *arg[2] = {(void *)cfg, out};
  return dpo_config_unused(cfg, dpo__warn_unused, arg);
}
