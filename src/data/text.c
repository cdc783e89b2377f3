/* LIBSVM and CSV text loaders: each rank parses the lines starting in its byte range. */
#include "data/data_internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char *dpo__skip_ws(char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\v' || *p == '\f') p++;
  return p;
}
static int dpo__is_end(char c) { return c == '\0' || c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* One LIBSVM line.  Returns 0 (row appended), 1 (blank/comment), -1 (reason in e). */
static int dpo__libsvm_line(char *p, int64_t ln, const dpo_load_opts_t *o, dpo__perr_t *e,
                            dpo__ivec_t *ci, dpo__dvec_t *va, dpo__dvec_t *y, int64_t *maxidx) {
  char why[200];
  p = dpo__skip_ws(p);
  if (*p == '\0' || *p == '#') return 1;
  char *t = p;
  while (!dpo__is_end(*p)) p++;
  char save = *p;
  *p = '\0';
  double lab;
  if (dpo__parse_label(t, o->labels, o->project, &lab, why, sizeof why)) {
    dpo__perr_set(e, DPO_EFORMAT, ln, "%s", why);
    return -1;
  }
  *p = save;
  if (dpo__dvec_push(y, lab)) return dpo__perr_set(e, DPO_ENOMEM, 0, "oom"), -1;
  long long prev = 0;
  for (;;) {
    p = dpo__skip_ws(p);
    if (*p == '\0' || *p == '#') break;
    t = p;
    while (!dpo__is_end(*p)) p++;
    int tl = (int)(p - t);
    char *end;
    errno = 0;
    long long idx = strtoll(t, &end, 10);
    if (end == t || !(isdigit((unsigned char)*t) || *t == '-' || *t == '+')) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "bad token '%.*s' (expected index:value)", tl > 40 ? 40 : tl, t);
      return -1;
    }
    if (*end != ':') {
      dpo__perr_set(e, DPO_EFORMAT, ln, "missing ':' in token '%.*s'", tl > 40 ? 40 : tl, t);
      return -1;
    }
    char *vs = end + 1, *ve;
    double v = strtod(vs, &ve);
    if (ve == vs || ve != p) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "bad value in token '%.*s'", tl > 40 ? 40 : tl, t);
      return -1;
    }
    if (!isfinite(v)) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "non-finite value (NaN/Inf) in token '%.*s'", tl > 40 ? 40 : tl, t);
      return -1;
    }
    if (o->zero_based && idx < 0) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "feature index %lld < 0 (data.zero_based: indices "
                    "start at 0)", idx);
      return -1;
    }
    if (!o->zero_based && idx < 1) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "feature index %lld < 1 (indices are 1-based%s)", idx,
                    idx == 0 ? "; a file whose indices start at 0, as scikit-learn's "
                    "dump_svmlight_file writes them, needs --zero-based" : "");
      return -1;
    }
    /* from here on idx is the 1-based index; messages quote the file's own (raw) */
    const long long raw = idx, zb = o->zero_based ? 1 : 0;
    if (zb && idx < LLONG_MAX) idx++;
    if (o->d > 0 && idx > o->d && !o->project) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "feature index %lld %s declared dimension %d%s", raw,
                    zb ? ">=" : ">", (int)o->d, zb ? " (zero-based: indices 0 .. d - 1)" : "");
      return -1;
    }
    if (idx > INT32_MAX) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "feature index %lld too large", raw);
      return -1;
    }
    if (idx == prev) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "duplicate feature index %lld", raw);
      return -1;
    }
    if (idx < prev) {
      dpo__perr_set(e, DPO_EFORMAT, ln, "feature indices not increasing (%lld after %lld)", raw,
                    prev - zb);
      return -1;
    }
    prev = idx;
    if (o->project && idx > o->d) continue; /* outside the declared schema: dropped */
    if (idx > *maxidx) *maxidx = idx;
    if (dpo__ivec_push(ci, (int32_t)(idx - 1)) || dpo__dvec_push(va, v))
      return dpo__perr_set(e, DPO_ENOMEM, 0, "oom"), -1;
  }
  return 0;
}

static int dpo__load_libsvm(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s) {
  int rank, size, st;
  dpo__lr_t lr;
  dpo__perr_t e = {0};
  dpo__ivec_t ci = {0};
  dpo__dvec_t va = {0}, y = {0};
  dpo__lvec_t rp = {0};
  int64_t maxidx = 0;
  int lr_open = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (o->project && o->d <= 0) /* the caller skipped dpo_shard_width_declared */
    return dpo_err(DPO_EINVAL, "%s: a private run needs the number of features declared "
                   "(data.dim): a sparse file's largest index is a fact about its rows", path);
  st = dpo__lr_open(&lr, path, rank, size);
  if (st) e.code = st; /* detail already recorded (line 0) */
  else lr_open = 1;
  if (!st && dpo__lvec_push(&rp, 0)) e.code = DPO_ENOMEM;
  while (e.code == DPO_OK) {
    char *line;
    int r = dpo__lr_next(&lr, &line);
    if (r < 0) {
      e.code = r;
      break;
    }
    if (r == 0) break;
    r = dpo__libsvm_line(line, lr.nlines, o, &e, &ci, &va, &y, &maxidx);
    if (r < 0) {
      if (e.code == DPO_ENOMEM) dpo_err(DPO_ENOMEM, "%s: out of memory", path);
      break;
    }
    if (r == 0 && dpo__lvec_push(&rp, (int64_t)ci.n)) e.code = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  }
  st = dpo__agree_line(comm, path, &e, lr_open ? lr.nlines : 0);
  if (lr_open) dpo__lr_close(&lr);
  if (st) goto out;
  s->sparse = 1;
  s->n = (int64_t)y.n;
  s->y = y.v;
  s->rowptr = rp.v;
  s->colind = ci.v;
  s->val = va.v;
  y.v = NULL;
  rp.v = NULL;
  ci.v = NULL;
  va.v = NULL;
  if (!s->colind) s->colind = malloc(sizeof(int32_t)); /* keep non-NULL arrays for 0 nnz */
  if (!s->val) s->val = malloc(sizeof(double));
  if (!s->y) s->y = malloc(sizeof(double));
  st = DPO_OK;
  if (!s->colind || !s->val || !s->y) st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  st = dpo_agree(comm, st);
  if (st) goto out;
  st = dpo__finish_rows(comm, path, s);
  if (st) goto out;
  int64_t gmax = 0;
  if (MPI_Allreduce(&maxidx, &gmax, 1, MPI_INT64_T, MPI_MAX, comm) != MPI_SUCCESS)
    st = dpo_err(DPO_EMPI, "%s: MPI_Allreduce of the dimension failed", path);
  else if (o->d > 0) s->d = o->d;
  else if (gmax == 0)
    st = dpo_err(DPO_EFORMAT, "%s: no feature in any row: declare the dimension", path);
  else s->d = (int32_t)gmax;
  st = dpo_agree(comm, st);
out:
  free(ci.v);
  free(va.v);
  free(y.v);
  free(rp.v);
  return st;
}

/* ---- CSV ---- */

/* Split a CSV line in place at commas; fields trimmed.  Returns the field count (<= max). */
static int dpo__csv_split(char *p, char **f, int max) {
  int n = 0;
  for (;;) {
    p = dpo__skip_ws(p);
    char *q = p;
    while (*q && *q != ',') q++;
    char *t = q;
    while (t > p && (t[-1] == ' ' || t[-1] == '\t')) t--;
    char c = *q;
    *t = '\0';
    if (n < max) f[n] = p;
    n++;
    if (c == '\0') break;
    p = q + 1;
  }
  return n;
}

static int dpo__load_csv(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s) {
  int rank, size, st;
  dpo__lr_t lr;
  dpo__perr_t e = {0};
  dpo__dvec_t X = {0}, y = {0};
  char **f = NULL;
  int fmax = 1024, ncols = -1, lr_open = 0, seen_first = 0;
  int64_t first_row_line = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  st = dpo__lr_open(&lr, path, rank, size);
  if (st) e.code = st;
  else lr_open = 1;
  if (!st && !(f = malloc((size_t)fmax * sizeof *f))) e.code = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  while (e.code == DPO_OK) {
    char *line, why[200];
    int r = dpo__lr_next(&lr, &line);
    if (r < 0) {
      e.code = r;
      break;
    }
    if (r == 0) break;
    char *p = dpo__skip_ws(line);
    if (*p == '\0' || *p == '#') continue;
    int commas = 0;
    for (char *q = p; *q; q++) commas += *q == ',';
    if (commas + 1 > fmax) {
      char **nf2 = realloc(f, (size_t)(commas + 1) * sizeof *f);
      if (!nf2) {
        e.code = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
        break;
      }
      f = nf2;
      fmax = commas + 1;
    }
    int nf = dpo__csv_split(p, f, fmax);
    /* header: the first data-looking line of the file whose first field is not a number */
    if (!seen_first) {
      seen_first = 1;
      if (rank == 0) {
        char *end;
        (void)strtod(f[0], &end);
        if (end == f[0] || *end != '\0') continue;
      }
    }
    if (nf < 2) {
      dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "expected a label and at least one feature, got %d field%s", nf, nf == 1 ? "" : "s");
      break;
    }
    if (ncols < 0) {
      ncols = nf;
      first_row_line = lr.nlines;
      if (o->d > 0 && nf - 1 != o->d) {
        dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "%d features, declared dimension %d", nf - 1, (int)o->d);
        break;
      }
    } else if (nf != ncols) {
      dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "%d fields, expected %d like the rows before", nf, ncols);
      break;
    }
    double lab;
    if (dpo__parse_label(f[0], o->labels, o->project, &lab, why, sizeof why)) {
      dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "%s", why);
      break;
    }
    if (dpo__dvec_push(&y, lab)) {
      e.code = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
      break;
    }
    for (int k = 1; k < nf && e.code == DPO_OK; k++) {
      char *end;
      double v = strtod(f[k], &end);
      if (*f[k] == '\0') dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "empty field %d", k + 1);
      else if (end == f[k] || *end != '\0')
        dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "bad number '%.40s' in field %d", f[k], k + 1);
      else if (!isfinite(v))
        dpo__perr_set(&e, DPO_EFORMAT, lr.nlines, "non-finite value (NaN/Inf) '%.40s' in field %d", f[k], k + 1);
      else if (dpo__dvec_push(&X, v)) e.code = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    }
  }
  int64_t nlines = lr_open ? lr.nlines : 0;
  /* The field count of the FILE's first row is the reference, whatever the rank count: each
   * rank checked its rows against its own first row, so a rank whose first row differs from
   * the reference fails there (before any later error of its own), and the message is the
   * one a single rank would print. */
  int firstr = size, ref = ncols;
  {
    int have = ncols > 0 ? rank : size;
    if (MPI_Allreduce(&have, &firstr, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS ||
        (firstr < size && MPI_Bcast(&ref, 1, MPI_INT, firstr, comm) != MPI_SUCCESS))
      e.code = dpo_err(DPO_EMPI, "%s: MPI reduction of the column count failed", path), e.line = 0;
    else if (ncols > 0 && ncols != ref) {
      e.code = DPO_OK; /* superseded: the first row comes before any other error of this rank */
      dpo__perr_set(&e, DPO_EFORMAT, first_row_line, "%d fields, expected %d like the rows before",
                    ncols, ref);
    }
  }
  st = dpo__agree_line(comm, path, &e, nlines);
  if (lr_open) dpo__lr_close(&lr);
  if (st) goto out;
  s->d = firstr < size ? ref - 1 : 0;
  s->sparse = 0;
  s->n = (int64_t)y.n;
  /* into aligned storage (dpo__dense_alloc); the grown vector is freed at out */
  if ((s->X = dpo__dense_alloc(X.n)) && X.n) memcpy(s->X, X.v, X.n * sizeof *s->X);
  s->y = y.v ? y.v : malloc(sizeof(double));
  y.v = NULL;
  st = dpo_agree(comm, (!s->X || !s->y) ? dpo_err(DPO_ENOMEM, "%s: out of memory", path) : DPO_OK);
  if (st) goto out;
  st = dpo__finish_rows(comm, path, s);
out:
  free(f);
  free(X.v);
  free(y.v);
  return st;
}

/* CSV is chosen by name (a .csv file); LIBSVM takes whatever no other format claimed, so it
 * stays the last entry of the table in shard.c. */
static int dpo__probe_csv(const char *path, const unsigned char *head, size_t len) {
  size_t a = strlen(path);
  return a >= 4 && strcasecmp(path + a - 4, ".csv") == 0;
}

static int dpo__probe_libsvm(const char *path, const unsigned char *head, size_t len) { return 1; }

/* A CSV file's column count is the same on every row (else it is refused), so it fixes the
 * width of every data set the file could hold; a LIBSVM file's largest index does not. */
static int dpo__fixed_csv(const char *path, int *fixed) { return (void)path, *fixed = 1, DPO_OK; }
static int dpo__fixed_libsvm(const char *path, int *fixed) { return (void)path, *fixed = 0, DPO_OK; }

const dpo__format_t dpo__format_csv = {DPO_FMT_CSV, "csv", dpo__probe_csv, dpo__load_csv,
                                       dpo__fixed_csv};
const dpo__format_t dpo__format_libsvm = {DPO_FMT_LIBSVM, "libsvm", dpo__probe_libsvm,
                                          dpo__load_libsvm, dpo__fixed_libsvm};
