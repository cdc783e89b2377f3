/* Party splits behind dpopt simulate (dpo_parties_split in dpopt/parties.h): split one data set (LIBSVM or CSV text) into P parties' files for
 * multi-party experiments (issue 7).  Serial on rank 0 (a file writer); every data line goes
 * to exactly one party, in its original order, so the parties' files add up to the original.
 *   iid        a random permutation cut into P blocks of n/P rows (sizes differ by <= 1)
 *   label      party 0 gets the fraction f (--pos-frac) of the positive rows, the other
 *              positives and all negatives are dealt iid over the parties in blocks
 *   dirichlet  for each class, party shares ~ Dirichlet(alpha) (--alpha; small = skewed):
 *              Gamma(alpha) variates normalised (dpo_mech_gamma_sample)
 * Every party gets at least one row (a row moves from the largest party if needed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/parties.h"
#include "dpopt/rng.h"
#include "dpopt/runout.h"
#include "dpopt/data.h"
#include "dpopt/status.h"

typedef struct {
  char *buf;
  size_t len;
  char **line; /* data lines (NUL-terminated in buf) */
  int64_t n;
  char *header; /* CSV header line or NULL */
} dpo__text_t;

static int dpo__read_text(const char *path, dpo__text_t *t) {
  FILE *f = fopen(path, "rb");
  memset(t, 0, sizeof *t);
  if (!f) return dpo_err(DPO_EIO, "%s: cannot open", path);
  size_t cap = 1 << 20;
  t->buf = malloc(cap + 1);
  for (size_t r; t->buf && (r = fread(t->buf + t->len, 1, cap - t->len, f)) > 0;) {
    t->len += r;
    if (t->len == cap) {
      char *nb = realloc(t->buf, 2 * cap + 1);
      if (!nb) break;
      t->buf = nb;
      cap *= 2;
    }
  }
  int err = ferror(f);
  fclose(f);
  if (!t->buf || err) return dpo_err(t->buf ? DPO_EIO : DPO_ENOMEM, "%s: cannot read", path);
  t->buf[t->len] = '\0';
  int64_t cnt = 1;
  for (size_t i = 0; i < t->len; i++) cnt += t->buf[i] == '\n';
  if (!(t->line = malloc((size_t)cnt * sizeof *t->line)))
    return dpo_err(DPO_ENOMEM, "out of memory");
  int csv = strlen(path) > 4 && !strcasecmp(path + strlen(path) - 4, ".csv");
  char *p = t->buf;
  int first = 1;
  while (*p) {
    char *e = strchr(p, '\n');
    if (e) *e = '\0';
    size_t l = strlen(p);
    if (l && p[l - 1] == '\r') p[--l] = '\0';
    const char *q = p + strspn(p, " \t");
    if (*q && *q != '#') {
      char *end;
      strtod(q, &end);
      if (csv && first && end == q) t->header = p; /* a non-numeric first field: header */
      else t->line[t->n++] = p;
      first = 0;
    }
    if (!e) break;
    p = e + 1;
  }
  if (t->n == 0) return dpo_err(DPO_EFORMAT, "%s: no data lines", path);
  return DPO_OK;
}

static int dpo__is_pos(const char *line) { return strtod(line, NULL) > 0; }

/* shuffle ids[0..n) */
static void dpo__shuffle(dpo_rng_t *rng, int64_t *a, int64_t n) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)dpo_rng_below(rng, (uint64_t)i + 1), t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* deal ids[0..n) to parties in P contiguous blocks with sizes from weights w (sum 1):
 * floor(n w_k), the remainder to the largest fractional parts */
static void dpo__deal(const int64_t *ids, int64_t n, const double *w, int P, int *party) {
  int64_t *cnt = calloc((size_t)P, sizeof *cnt), given = 0;
  double *fr = calloc((size_t)P, sizeof *fr);
  if (!cnt || !fr) {
    free(cnt);
    free(fr);
    for (int64_t i = 0; i < n; i++) party[ids[i]] = (int)(i % P);
    return;
  }
  for (int k = 0; k < P; k++) {
    double x = w[k] * (double)n;
    cnt[k] = (int64_t)floor(x);
    fr[k] = x - floor(x);
    given += cnt[k];
  }
  while (given < n) {
    int best = 0;
    for (int k = 1; k < P; k++)
      if (fr[k] > fr[best]) best = k;
    cnt[best]++;
    fr[best] = -1;
    given++;
  }
  int64_t i = 0;
  for (int k = 0; k < P; k++)
    for (int64_t c = 0; c < cnt[k] && i < n; c++) party[ids[i++]] = k;
  free(cnt);
  free(fr);
}

/* 0 iid, 1 label, 2 dirichlet, -1 unknown */
static int dpo__split_mode(const char *s) {
  return !strcasecmp(s, "iid") ? 0 : !strcasecmp(s, "label") ? 1 : !strcasecmp(s, "dirichlet") ? 2 : -1;
}

int dpo_split_check(const dpo_split_opts_t *o) {
  if (dpo__split_mode(o->split) < 0 || o->parties < 1 || o->parties > 100000 ||
      !(o->pos_frac >= 0 && o->pos_frac <= 1) || !(o->alpha > 0))
    return dpo_err(DPO_EINVAL, "need --split iid|label|dirichlet, 1 <= P, 0 <= pos-frac <= 1, "
                   "alpha > 0 (got %s, %lld, %g, %g)", o->split, (long long)o->parties,
                   o->pos_frac, o->alpha);
  return DPO_OK;
}

int dpo_parties_split(const char *in, const char *pattern, const dpo_split_opts_t *o,
                      FILE *report) {
  dpo_rng_t *rng = NULL;
  dpo__text_t t;
  memset(&t, 0, sizeof t);
  int *party = NULL;
  int64_t *ids = NULL, *rows = NULL, *pos_rows = NULL;
  double *w = NULL;
  FILE **out = NULL;
  int64_t P = o->parties;
  int rc, mode = dpo__split_mode(o->split);
  if ((rc = dpo_split_check(o))) return rc;
  char pat[1024];
  const char *pc = strstr(pattern, "%d");
  if (pc && (strchr(pc + 2, '%') || strchr(pattern, '%') != pc)) {
    rc = dpo_err(DPO_EINVAL, "%s: OUT_PATTERN must contain one %%d and no other %%", pattern);
    goto out;
  }
  snprintf(pat, sizeof pat, pc ? "%s" : "%s.%%d", pattern);
  if ((rc = dpo__read_text(in, &t))) goto out;
  if (t.n < P) {
    rc = dpo_err(DPO_EINVAL, "%s: %lld rows cannot make %lld non-empty parties", in,
                 (long long)t.n, (long long)P);
    goto out;
  }
  party = malloc((size_t)t.n * sizeof *party);
  ids = calloc((size_t)t.n, sizeof *ids);
  rows = calloc((size_t)P, sizeof *rows);
  pos_rows = calloc((size_t)P, sizeof *pos_rows);
  w = malloc((size_t)P * sizeof *w);
  out = calloc((size_t)P, sizeof *out);
  if (!party || !ids || !rows || !pos_rows || !w || !out) {
    rc = dpo_err(DPO_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = dpo_rng_create(1, o->seed, 0, &rng))) goto out;
  for (int k = 0; k < P; k++) w[k] = 1.0 / (double)P;
  if (mode == 0) {
    for (int64_t i = 0; i < t.n; i++) ids[i] = i;
    dpo__shuffle(rng, ids, t.n);
    dpo__deal(ids, t.n, w, (int)P, party);
  } else {
    /* the two classes separately */
    for (int cls = 1; cls >= 0; cls--) {
      int64_t nc = 0;
      for (int64_t i = 0; i < t.n; i++)
        if (dpo__is_pos(t.line[i]) == cls) ids[nc++] = i;
      dpo__shuffle(rng, ids, nc);
      if (mode == 1 && cls == 1 && P > 1) {
        w[0] = o->pos_frac;
        for (int k = 1; k < P; k++) w[k] = (1.0 - o->pos_frac) / (double)(P - 1);
      } else if (mode == 1) {
        for (int k = 0; k < P; k++) w[k] = 1.0 / (double)P;
      } else {
        double s = 0;
        for (int k = 0; k < P; k++) {
          if ((rc = dpo_mech_gamma_sample(rng, o->alpha, 1.0, &w[k]))) goto out;
          s += w[k];
        }
        for (int k = 0; k < P; k++) w[k] = s > 0 ? w[k] / s : 1.0 / (double)P;
      }
      dpo__deal(ids, nc, w, (int)P, party);
    }
  }
  for (int64_t i = 0; i < t.n; i++) rows[party[i]]++;
  /* no empty party: move the last row of the largest party */
  for (int k = 0; k < P; k++) {
    if (rows[k] > 0) continue;
    int big = 0;
    for (int j = 1; j < P; j++)
      if (rows[j] > rows[big]) big = j;
    for (int64_t i = t.n - 1; i >= 0; i--)
      if (party[i] == big) {
        party[i] = k;
        rows[big]--;
        rows[k]++;
        break;
      }
  }
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", pat);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    if ((rc = dpo_mkdirs(dir))) goto out;
  }
  for (int k = 0; k < P && !rc; k++) {
    char fn[1100];
    snprintf(fn, sizeof fn, pat, k);
    if (!(out[k] = fopen(fn, "w"))) rc = dpo_err(DPO_EIO, "%s: cannot create", fn);
    else if (t.header) fprintf(out[k], "%s\n", t.header);
  }
  for (int64_t i = 0; i < t.n && !rc; i++) {
    fprintf(out[party[i]], "%s\n", t.line[i]);
    pos_rows[party[i]] += dpo__is_pos(t.line[i]);
  }
  for (int k = 0; k < P; k++)
    if (out[k] && fclose(out[k]) != 0 && !rc) rc = dpo_err(DPO_EIO, "cannot write party %d", k);
  free(out);
  out = NULL;
  { /* the source's declared schema holds for every party's file: copied beside each */
    dpo_load_opts_t so;
    dpo_load_opts_default(&so);
    if (!rc) rc = dpo_load_opts_schema(in, &so);
    for (int k = 0; k < P && !rc && so.d > 0; k++) {
      char fn[1100];
      snprintf(fn, sizeof fn, pat, k);
      rc = dpo_schema_write(fn, so.d);
    }
  }
  if (!rc) {
    fprintf(report, "# dpopt simulate: %s, %lld rows -> %lld parties (%s split, seed %lld)\n", in,
           (long long)t.n, (long long)P, o->split, (long long)o->seed);
    fprintf(report, "party,rows,positives,file\n");
    for (int k = 0; k < P; k++) {
      char fn[1100];
      snprintf(fn, sizeof fn, pat, k);
      fprintf(report, "%d,%lld,%lld,%s\n", k, (long long)rows[k], (long long)pos_rows[k], fn);
    }
  }
out:
  free(out);
  free(party);
  free(ids);
  free(rows);
  free(pos_rows);
  free(w);
  free(t.line);
  free(t.buf);
  dpo_rng_destroy(rng);
  return rc;
}
