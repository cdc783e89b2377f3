/* The factor files of dpopt mf --out (X1.txt, X2t.txt) as matrices: one row per user / item,
 * r numbers each, so numpy.loadtxt gives the n x r matrix; the metadata in '#' lines.  Files
 * of older runs (one number per line, dpo_model_write's layouts) are still read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "mf/mf_impl.h"

#define DPO__MF_HDR "# dpopt mf factors:"

int dpo__mf_matrix_write(const char *path, const double *x, int32_t rows, int32_t cols,
                         const char *comment) {
  size_t cap = 256 + strlen(comment) + ((size_t)rows * (size_t)cols + 1) * 25, off = 0;
  char *buf = malloc(cap);
  if (!buf) return dpo_err(DPO_ENOMEM, "%s: %zu bytes", path, cap);
  off += (size_t)snprintf(buf, cap, "%s %d x %d\n# %s\n", DPO__MF_HDR, (int)rows, (int)cols,
                          comment);
  for (int64_t i = 0; i < rows; i++)
    for (int32_t q = 0; q < cols; q++)
      off += (size_t)snprintf(buf + off, cap - off, "%.17g%c", x[i * cols + q],
                              q + 1 < cols ? ' ' : '\n');
  int st = dpo_write_atomic(path, buf, off);
  free(buf);
  return st;
}

/* The matrix after its header (line *ln): rows lines of cols numbers. */
static int dpo__mf_matrix_body(FILE *f, const char *path, long *ln, int32_t rows, int32_t cols,
                               double *x) {
  char *line = NULL;
  size_t cap = 0;
  int64_t i = 0;
  int st = DPO_OK;
  while (!st && getline(&line, &cap, f) >= 0) {
    ++*ln;
    char *p = line, *e;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || *p == '\r' || !*p) continue;
    if (i == rows) {
      st = dpo_err(DPO_EFORMAT, "%s:%ld: more than the header's %d rows", path, *ln, (int)rows);
      break;
    }
    for (int32_t q = 0; q < cols && !st; q++, p = e) {
      errno = 0;
      x[i * cols + q] = strtod(p, &e);
      if (e == p || errno == ERANGE)
        st = dpo_err(DPO_EFORMAT, "%s:%ld: expected %d numbers", path, *ln, (int)cols);
    }
    while (!st && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    if (!st && *p) st = dpo_err(DPO_EFORMAT, "%s:%ld: more than %d numbers", path, *ln, (int)cols);
    i++;
  }
  free(line);
  if (!st && ferror(f)) st = dpo_err(DPO_EIO, "%s: read failed", path);
  if (!st && i != rows)
    st = dpo_err(DPO_EFORMAT, "%s: %lld rows, the header says %d", path, (long long)i, (int)rows);
  return st;
}

int dpo__mf_matrix_read(const char *path, int32_t rows, int32_t cols, double **xo) {
  FILE *f = fopen(path, "r");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  long ln = 0;
  int hdr = 0, st = DPO_OK;
  long hr = 0, hc = 0;
  /* the header comes before the first number; without it, an older file */
  while (getline(&line, &cap, f) >= 0) {
    ln++;
    if (!strncmp(line, DPO__MF_HDR, strlen(DPO__MF_HDR))) {
      hdr = 1;
      if (sscanf(line + strlen(DPO__MF_HDR), " %ld x %ld", &hr, &hc) != 2)
        st = dpo_err(DPO_EFORMAT, "%s:%ld: expected \"%s ROWS x COLUMNS\"", path, ln, DPO__MF_HDR);
      break;
    }
    if (line[0] != '#') break;
  }
  free(line);
  if (!st && hdr && (hr != rows || hc != cols))
    st = dpo_err(DPO_EFORMAT, "%s:%ld: a %ld x %ld matrix, the ratings and --rank need %d x %d",
                 path, ln, hr, hc, (int)rows, (int)cols);
  double *x = NULL;
  if (!st && hdr && !(x = malloc(sizeof(double) * ((size_t)rows * (size_t)cols + 1))))
    st = dpo_err(DPO_ENOMEM, "%s: %d x %d", path, (int)rows, (int)cols);
  if (!st && hdr) st = dpo__mf_matrix_body(f, path, &ln, rows, cols, x);
  fclose(f);
  if (!st && !hdr) { /* one number per line */
    int32_t d = 0;
    if (!(st = dpo_model_read(path, &x, &d)) && d != (int64_t)rows * cols)
      st = dpo_err(DPO_EFORMAT, "%s: %d entries, the ratings and --rank need %d x %d = %lld",
                   path, d, (int)rows, (int)cols, (long long)rows * cols);
  }
  if (st) {
    free(x);
    x = NULL;
  }
  *xo = x;
  return st;
}
