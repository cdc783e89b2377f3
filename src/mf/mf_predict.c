/* dpopt mf-predict (dpo_mf_predict_file in dpopt/mf.h): the model of a dpopt mf run directory
 * applied to (user, item) pairs. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "dpopt/hamsi.h"
#include "dpopt/mf.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "mf/mf_impl.h"

/* users, items, r and biases of the run from its summary.json */
static int dpo__mfp_summary(const char *dir, dpo_hamsi_result_t *m) {
  char path[4096];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  json_object *j = json_object_from_file(path), *v;
  if (!j) return dpo_err(DPO_EIO, "%s: cannot read or parse (is %s a dpopt mf run?)", path, dir);
  int st = DPO_OK;
  int64_t val[3];
  static const char *key[3] = {"users", "items", "r"};
  for (int k = 0; k < 3 && !st; k++) {
    if (!json_object_object_get_ex(j, key[k], &v) || !json_object_is_type(v, json_type_int) ||
        (val[k] = json_object_get_int64(v)) < 1 || val[k] > INT32_MAX)
      st = dpo_err(DPO_EFORMAT, "%s: no positive integer \"%s\"", path, key[k]);
  }
  if (!st) {
    m->n_users = (int32_t)val[0];
    m->n_items = (int32_t)val[1];
    m->r = (int32_t)val[2];
    /* runs written before the biased model have no "biases" key: factors only */
    m->biases = json_object_object_get_ex(j, "biases", &v) && json_object_get_boolean(v);
  }
  json_object_put(j);
  return st;
}

/* dir/name into *x with exactly n entries */
static int dpo__mfp_read(const char *dir, const char *name, int64_t n, double **x) {
  char path[4096];
  int32_t d = 0;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int st = dpo_model_read(path, x, &d);
  if (!st && d != n)
    st = dpo_err(DPO_EFORMAT, "%s: %d entries, summary.json implies %lld", path, d, (long long)n);
  return st;
}

/* dir/name, a factor matrix of rows x r (either layout, dpo__mf_matrix_read) */
static int dpo__mfp_factors(const char *dir, const char *name, int32_t rows, int32_t r, double **x) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return dpo__mf_matrix_read(path, rows, r, x);
}

/* the first two fields of a line as ids; 1 if the line holds none (blank or '#') */
static int dpo__mfp_pair(const char *line, long long *a, long long *b) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (!*p || *p == '\n' || *p == '\r' || *p == '#') return 1;
  char *e;
  errno = 0;
  *a = strtoll(p, &e, 10);
  if (e == p || errno) return -1;
  p = e;
  while (*p == ' ' || *p == '\t' || *p == ',' || *p == ':' || *p == ';') p++;
  const char *q = p;
  *b = strtoll(q, &e, 10);
  if (e == q || errno) return -1;
  if (*e && !strchr(" \t,:;\r\n", *e)) return -1;
  return 0;
}

int dpo_mf_predict_file(const char *rundir, const char *pairs, int zero_based, FILE *out,
                        int64_t *n) {
  dpo_hamsi_result_t m;
  memset(&m, 0, sizeof m);
  FILE *f = NULL;
  char line[4096];
  int64_t lineno = 0, np = 0;
  int st = dpo__mfp_summary(rundir, &m);
  if (!st) st = dpo__mfp_factors(rundir, "X1.txt", m.n_users, m.r, &m.X1);
  if (!st) st = dpo__mfp_factors(rundir, "X2t.txt", m.n_items, m.r, &m.X2t);
  double *b = NULL;
  if (!st && m.biases &&
      !(st = dpo__mfp_read(rundir, "biases.txt", 1 + (int64_t)m.n_users + m.n_items, &b))) {
    m.mu = b[0];
    m.bu = b + 1;
    m.bi = b + 1 + m.n_users;
  }
  if (!st && !(f = fopen(pairs, "r"))) st = dpo_err(DPO_EIO, "%s: cannot open: %s", pairs, strerror(errno));
  while (!st && fgets(line, sizeof line, f)) {
    long long a, c;
    lineno++;
    int k = dpo__mfp_pair(line, &a, &c);
    if (k > 0) continue;
    long long off = zero_based ? 0 : 1;
    if (k < 0 || a - off < 0 || a - off >= m.n_users || c - off < 0 || c - off >= m.n_items) {
      st = dpo_err(k < 0 ? DPO_EFORMAT : DPO_EINVAL,
                   "%s:%lld: %s (the model has users and items %lld..%d and %lld..%d)", pairs,
                   (long long)lineno, k < 0 ? "expected 'user item' ids" : "user or item outside the model",
                   off, m.n_users - 1 + (int)off, off, m.n_items - 1 + (int)off);
      break;
    }
    int32_t u = (int32_t)(a - off), i = (int32_t)(c - off);
    double p;
    if ((st = dpo_hamsi_predict(&m, 1, &u, &i, &p))) break;
    fprintf(out, "%lld %lld %.17g\n", a, c, p);
    np++;
  }
  if (!st && f && ferror(f)) st = dpo_err(DPO_EIO, "%s: read failed", pairs);
  if (!st && (fflush(out) || ferror(out))) st = dpo_err(DPO_EIO, "mf-predict: write failed");
  if (f) fclose(f);
  free(m.X1);
  free(m.X2t);
  free(b);
  if (n) *n = np;
  return st;
}
