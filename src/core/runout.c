#include "dpopt/runout.h"
#include "dpopt/status.h"

#include <errno.h>
#include <json-c/json.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <dirent.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dpo_mkdirs(const char *path) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return dpo_err(DPO_EINVAL, "%s: path too long", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return dpo_err(DPO_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST)
    return dpo_err(DPO_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
  return DPO_OK;
}

/* 1 if path is a directory with no entry but . and .., 0 otherwise */
static int dpo__dir_empty(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
  closedir(d);
  return empty;
}

int dpo_mkdir_new(const char *path, const char *claim, int *exists) {
  char buf[4096], *slash;
  int rc;
  *exists = 0;
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return dpo_err(DPO_EINVAL, "%s: path too long", path);
  while ((slash = strrchr(buf, '/')) && slash > buf && slash[1] == '\0') *slash = '\0';
  if ((slash = strrchr(buf, '/')) && slash > buf) { /* parents: mkdir -p */
    *slash = '\0';
    if ((rc = dpo_mkdirs(buf))) return rc;
    *slash = '/';
  }
  if (mkdir(buf, 0777) != 0) {
    if (errno != EEXIST)
      return dpo_err(DPO_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
    if (!dpo__dir_empty(buf)) {
      *exists = 1;
      return dpo_err(DPO_EINVAL, "%s exists and is not an empty directory", buf);
    }
  }
  /* the claim, exclusive even in an empty directory that existed: one run per directory */
  char cp[4096 + 256];
  snprintf(cp, sizeof cp, "%s/%s", buf, claim);
  int fd = open(cp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (errno != EEXIST) return dpo_err(DPO_EIO, "%s: cannot create: %s", cp, strerror(errno));
    *exists = 1;
    return dpo_err(DPO_EINVAL, "%s exists and is not an empty directory", buf);
  }
  close(fd);
  return DPO_OK;
}

/* mode: the final file's permission bits before the umask (0666), or exactly 0600 for state
 * that holds unreleased values (fchmod: an umask of 0 must not widen it) */
static int dpo__write_atomic_mode(const char *path, const void *buf, size_t len, mode_t mode) {
  char tmp[4096], dir[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return dpo_err(DPO_EINVAL, "%s: path too long", path);
  /* O_NOFOLLOW: a symlink planted at the temporary's name must not redirect the write (the
   * rename below replaces a symlink at path itself, never its target) */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return dpo_err(DPO_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  /* a stale temporary of the same name keeps its old mode through O_CREAT */
  if (mode == 0600 && fchmod(fd, mode) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return dpo_err(DPO_EIO, "%s: cannot restrict to the owner: %s", tmp, strerror(e));
  }
  const char *p = buf;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      unlink(tmp);
      return dpo_err(DPO_EIO, "%s: write failed: %s", tmp, strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(tmp);
    return dpo_err(DPO_EIO, "%s: fsync/close failed: %s", tmp, strerror(errno));
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return dpo_err(DPO_EIO, "%s: rename failed: %s", path, strerror(e));
  }
  /* make the rename itself durable */
  snprintf(dir, sizeof dir, "%s", path);
  int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return DPO_OK;
}

int dpo_write_atomic(const char *path, const void *buf, size_t len) {
  return dpo__write_atomic_mode(path, buf, len, 0666);
}

int dpo_write_atomic_private(const char *path, const void *buf, size_t len) {
  return dpo__write_atomic_mode(path, buf, len, 0600);
}

int dpo_model_write(const char *path, const double *x, int32_t d, const char *comment) {
  return dpo_model_write_k(path, x, d, 0, 0, comment);
}

int dpo_model_write_icpt(const char *path, const double *x, int32_t d, int intercept,
                         const char *comment) {
  return dpo_model_write_k(path, x, d, intercept, 0, comment);
}

/* The header line of the current model format (dpo_model_write_k). */
#define DPO__MODEL_HDR "# dpopt model:"

int dpo_model_write_k(const char *path, const double *x, int32_t d, int intercept, int32_t K,
                      const char *comment) {
  const int32_t nk = K > 0 ? K : 1, row = d + (intercept ? 1 : 0);
  size_t cap = 512 + (comment ? strlen(comment) * 2 : 0) + ((size_t)row * (size_t)nk + 1) * 32;
  char *buf = malloc(cap);
  if (!buf) return dpo_err(DPO_ENOMEM, "model write: out of memory");
  size_t off = 0;
  if (comment) {
    /* every comment line gets a '#' */
    const char *c = comment;
    while (*c) {
      const char *nl = strchr(c, '\n');
      size_t k = nl ? (size_t)(nl - c) : strlen(c);
      off += (size_t)snprintf(buf + off, cap - off, "# %.*s\n", (int)k, c);
      c += k + (nl ? 1 : 0);
    }
  }
  /* the metadata in '#' lines, numbers only otherwise (numpy.loadtxt reads the file) */
  off += (size_t)snprintf(buf + off, cap - off, "%s dimension %d, intercept %s", DPO__MODEL_HDR,
                          (int)d, intercept ? "yes" : "no");
  if (K > 0) off += (size_t)snprintf(buf + off, cap - off, ", classes %d", (int)K);
  if (K > 0)
    off += (size_t)snprintf(buf + off, cap - off, "\n# layout: %d rows (one per class) of %d "
                            "numbers (the %d feature weights%s)\n", (int)K, (int)row, (int)d,
                            intercept ? ", then the intercept" : "");
  else
    off += (size_t)snprintf(buf + off, cap - off, "\n# layout: %d numbers, one per line (the %d "
                            "feature weights%s)\n", (int)row, (int)d,
                            intercept ? ", then the intercept" : "");
  for (int32_t k = 0; k < nk; k++)
    for (int32_t j = 0; j < row; j++)
      off += (size_t)snprintf(buf + off, cap - off, "%.17g%s", x[(int64_t)k * row + j],
                              K > 0 && j + 1 < row ? " " : "\n");
  int rc = dpo_write_atomic(path, buf, off);
  free(buf);
  return rc;
}

int dpo_model_read(const char *path, double **xo, int32_t *d) {
  int icpt = 0, rc = dpo_model_read_icpt(path, xo, d, &icpt);
  if (!rc) *d += icpt;
  return rc;
}

int dpo_model_read_icpt(const char *path, double **xo, int32_t *d, int *intercept) {
  int32_t K = 0;
  int rc = dpo_model_read_k(path, xo, d, intercept, &K);
  if (rc || K == 0) return rc;
  free(*xo);
  *xo = NULL;
  return dpo_err(DPO_EFORMAT, "%s: a multiclass model (classes %d): read it with --model softmax",
                 path, (int)K);
}

/* The current format (dpo_model_write_k) after its header line hdr (line ln): the numbers as
 * the header's layout says, x in the solver's layout already.  f is left open. */
static int dpo__model_read_v2(FILE *f, const char *path, long ln, const char *hdr, double **xo,
                              int32_t *d, int *intercept, int32_t *Kout) {
  long dim = 0, K = 0, n = 0, per = 0;
  char yn[8] = "";
  const char *cl = strstr(hdr, ", classes ");
  if (sscanf(hdr + strlen(DPO__MODEL_HDR), " dimension %ld, intercept %3[a-z]", &dim, yn) != 2 ||
      (strcmp(yn, "yes") && strcmp(yn, "no")) || dim <= 0 || dim > (1L << 30) ||
      (cl && (sscanf(cl, ", classes %ld", &K) != 1 || K < 2 || K > 65536)) ||
      dim * (K ? K : 1) > (1L << 30))
    return dpo_err(DPO_EFORMAT, "%s:%ld: expected \"%s dimension D, intercept yes|no[, classes "
                   "K]\" (D >= 1, 2 <= K <= 65536)", path, ln, DPO__MODEL_HDR);
  const long row = dim + (yn[0] == 'y'), total = row * (K ? K : 1);
  double *x = malloc((size_t)total * sizeof *x);
  char *line = NULL;
  size_t cap = 0;
  int rc = x ? DPO_OK : dpo_err(DPO_ENOMEM, "model read: out of memory");
  while (!rc && getline(&line, &cap, f) > 0) {
    ln++;
    char *p = line, *end;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || *p == '\r' || !*p) continue;
    for (per = 0;; per++) {
      while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
      if (!*p) break;
      double v = strtod(p, &end);
      if (end == p || !isfinite(v) || n >= total) {
        rc = dpo_err(DPO_EFORMAT, "%s:%ld: %s", path, ln, n >= total ? "more numbers than the "
                     "header's layout holds" : "not a finite number");
        break;
      }
      x[n++] = v;
      p = end;
    }
    if (!rc && K && per != row)
      rc = dpo_err(DPO_EFORMAT, "%s:%ld: %ld numbers, a class's row holds %ld", path, ln, per,
                   row);
  }
  if (!rc && n != total)
    rc = dpo_err(DPO_EFORMAT, "%s: %ld numbers, the header's layout holds %ld", path, n, total);
  free(line);
  if (rc) {
    free(x);
    return rc;
  }
  *xo = x;
  *d = (int32_t)dim;
  *intercept = yn[0] == 'y';
  *Kout = (int32_t)K;
  return DPO_OK;
}

int dpo_model_read_k(const char *path, double **xo, int32_t *d, int *intercept, int32_t *Kout) {
  FILE *f = fopen(path, "r");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot open model: %s", path, strerror(errno));
  char line[512];
  long ln = 0;
  long dim = -1, K = 0, nk = 1;
  int64_t k = 0;
  int icpt = 0;
  double *x = NULL, *b = NULL;
  int rc = DPO_OK;
  /* the file holds the K blocks of dim features and then the K biases: read into x in that
   * order, then interleave into rows of dim + 1 if there is an intercept */
  while (fgets(line, sizeof line, f)) {
    ln++;
    if (dim < 0 && K == 0 && !strncmp(line, DPO__MODEL_HDR, strlen(DPO__MODEL_HDR))) {
      rc = dpo__model_read_v2(f, path, ln, line, xo, d, intercept, Kout);
      goto out; /* the current format; below, the older one */
    }
    if (line[0] == '#' || line[0] == '\n') continue;
    char *end;
    if (icpt) {
      rc = dpo_err(DPO_EFORMAT, "%s:%ld: nothing may follow the intercept line", path, ln);
      goto out;
    }
    if (dim < 0 && K == 0 && !strncmp(line, "classes", 7)) {
      K = strtol(line + 7, &end, 10);
      while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
      if (end == line + 7 || *end || K < 2 || K > 65536) {
        rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected \"classes K\" with 2 <= K <= 65536", path, ln);
        goto out;
      }
      nk = K;
      continue;
    }
    if (dim > 0 && k == dim * nk && !strncmp(line, "intercept", 9)) {
      char *q = line + 9;
      for (long c = 0; c < nk; c++) {
        double v = strtod(q, &end);
        if (end == q || !isfinite(v)) {
          rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected \"intercept\" and %ld value%s", path, ln, nk,
                       nk > 1 ? "s (one per class)" : "");
          goto out;
        }
        b[c] = v;
        q = end;
      }
      while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n') q++;
      if (*q) {
        rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected \"intercept\" and %ld value%s", path, ln, nk,
                     nk > 1 ? "s (one per class)" : "");
        goto out;
      }
      icpt = 1;
      continue;
    }
    if (dim < 0) {
      dim = strtol(line, &end, 10);
      if (end == line || dim <= 0 || dim > (1L << 30) || dim * nk > (1L << 30)) {
        rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected the dimension", path, ln);
        goto out;
      }
      /* + nk: a possible intercept per class */
      if (!(x = malloc(((size_t)dim + 1) * (size_t)nk * sizeof *x)) ||
          !(b = malloc((size_t)nk * sizeof *b))) {
        rc = dpo_err(DPO_ENOMEM, "model read: out of memory");
        goto out;
      }
      continue;
    }
    if (k >= dim * nk) {
      rc = dpo_err(DPO_EFORMAT, "%s:%ld: more than %ld coefficients", path, ln, dim * nk);
      goto out;
    }
    double v = strtod(line, &end);
    if (end == line || !isfinite(v)) {
      rc = dpo_err(DPO_EFORMAT, "%s:%ld: not a finite number", path, ln);
      goto out;
    }
    x[k++] = v;
  }
  if (dim < 0 || k != dim * nk) {
    rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected %ld coefficients, found %lld", path, ln, dim * nk,
                 (long long)k);
    goto out;
  }
  if (icpt) /* rows of dim + 1, last class first so nothing is overwritten before it moves */
    for (long c = nk - 1; c >= 0; c--) {
      memmove(x + c * (dim + 1), x + c * dim, (size_t)dim * sizeof *x);
      x[c * (dim + 1) + dim] = b[c];
    }
  *xo = x;
  *d = (int32_t)dim;
  *intercept = icpt;
  *Kout = (int32_t)K;
  x = NULL;
out:
  free(x);
  free(b);
  fclose(f);
  return rc;
}

void dpo_print_confusion(FILE *out, const int64_t *cm, int32_t K) {
  int64_t mx = 1;
  for (int64_t i = 0; i < (int64_t)K * K; i++)
    if (cm[i] > mx) mx = cm[i];
  int w = snprintf(NULL, 0, "%lld", (long long)mx) + 1;
  if (w < 4) w = 4;
  fprintf(out, "confusion       rows: true class, columns: predicted class\n%-8s", "");
  for (int32_t b = 0; b < K; b++) fprintf(out, "%*d", w, (int)b);
  fprintf(out, "\n");
  for (int32_t a = 0; a < K; a++) {
    fprintf(out, "%8d", (int)a);
    for (int32_t b = 0; b < K; b++) fprintf(out, "%*lld", w, (long long)cm[(int64_t)a * K + b]);
    fprintf(out, "\n");
  }
}

struct json_object *dpo_json_double(double v) {
  return isfinite(v) ? json_object_new_double(v) : NULL; /* NULL: json-c writes null */
}
