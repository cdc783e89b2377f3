#include "dpopt/runout.h"
#include "dpopt/status.h"

#include <errno.h>
#include <json-c/json.h>
#include <fcntl.h>
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
  int fd = open(cp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (errno != EEXIST) return dpo_err(DPO_EIO, "%s: cannot create: %s", cp, strerror(errno));
    *exists = 1;
    return dpo_err(DPO_EINVAL, "%s exists and is not an empty directory", buf);
  }
  close(fd);
  return DPO_OK;
}

int dpo_write_atomic(const char *path, const void *buf, size_t len) {
  char tmp[4096], dir[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return dpo_err(DPO_EINVAL, "%s: path too long", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) return dpo_err(DPO_EIO, "%s: cannot create: %s", tmp, strerror(errno));
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

int dpo_model_write(const char *path, const double *x, int32_t d, const char *comment) {
  return dpo_model_write_icpt(path, x, d, 0, comment);
}

int dpo_model_write_icpt(const char *path, const double *x, int32_t d, int intercept,
                         const char *comment) {
  size_t cap = 256 + (comment ? strlen(comment) * 2 : 0) + ((size_t)d + 1) * 32;
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
  off += (size_t)snprintf(buf + off, cap - off, "%d\n", (int)d);
  for (int32_t j = 0; j < d; j++) off += (size_t)snprintf(buf + off, cap - off, "%.17g\n", x[j]);
  if (intercept) off += (size_t)snprintf(buf + off, cap - off, "intercept %.17g\n", x[d]);
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
  FILE *f = fopen(path, "r");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot open model: %s", path, strerror(errno));
  char line[512];
  long ln = 0;
  long dim = -1;
  int32_t k = 0;
  int icpt = 0;
  double *x = NULL;
  int rc = DPO_OK;
  while (fgets(line, sizeof line, f)) {
    ln++;
    if (line[0] == '#' || line[0] == '\n') continue;
    char *end;
    if (icpt) {
      rc = dpo_err(DPO_EFORMAT, "%s:%ld: nothing may follow the intercept line", path, ln);
      goto out;
    }
    if (dim > 0 && k == dim && !strncmp(line, "intercept", 9)) {
      double b = strtod(line + 9, &end);
      while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
      if (end == line + 9 || *end || !isfinite(b)) {
        rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected \"intercept VALUE\"", path, ln);
        goto out;
      }
      x[k] = b;
      icpt = 1;
      continue;
    }
    if (dim < 0) {
      dim = strtol(line, &end, 10);
      if (end == line || dim <= 0 || dim > (1L << 30)) {
        rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected the dimension", path, ln);
        goto out;
      }
      if (!(x = malloc(((size_t)dim + 1) * sizeof *x))) { /* + 1: a possible intercept */
        rc = dpo_err(DPO_ENOMEM, "model read: out of memory");
        goto out;
      }
      continue;
    }
    if (k >= dim) {
      rc = dpo_err(DPO_EFORMAT, "%s:%ld: more than %ld coefficients", path, ln, dim);
      goto out;
    }
    double v = strtod(line, &end);
    if (end == line || !isfinite(v)) {
      rc = dpo_err(DPO_EFORMAT, "%s:%ld: not a finite number", path, ln);
      goto out;
    }
    x[k++] = v;
  }
  if (dim < 0 || k != dim) {
    rc = dpo_err(DPO_EFORMAT, "%s:%ld: expected %ld coefficients, found %d", path, ln, dim, k);
    goto out;
  }
  *xo = x;
  *d = (int32_t)dim;
  *intercept = icpt;
  x = NULL;
out:
  free(x);
  fclose(f);
  return rc;
}

struct json_object *dpo_json_double(double v) {
  return isfinite(v) ? json_object_new_double(v) : NULL; /* NULL: json-c writes null */
}
