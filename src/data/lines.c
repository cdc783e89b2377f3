/* Byte-range line reader and small helpers shared by the text loaders. */
#include "data/data_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DPO__LR_BLOCK (1u << 20)

ssize_t dpo__pread_full(int fd, void *buf, size_t len, off_t off) {
  size_t done = 0;
  while (done < len) {
    ssize_t k = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) break;
    done += (size_t)k;
  }
  return (ssize_t)done;
}

ssize_t dpo__pwrite_full(int fd, const void *buf, size_t len, off_t off) {
  size_t done = 0;
  while (done < len) {
    ssize_t k = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    done += (size_t)k;
  }
  return (ssize_t)done;
}

/* Fill the buffer after moving the unparsed tail to its front; grows when a line is longer
 * than the buffer.  Returns 0, or DPO_EIO/DPO_ENOMEM. */
static int dpo__lr_fill(dpo__lr_t *lr) {
  if (lr->off > 0) {
    memmove(lr->buf, lr->buf + lr->off, lr->len - lr->off);
    lr->bufpos += (off_t)lr->off;
    lr->len -= lr->off;
    lr->off = 0;
  }
  if (lr->len + 1 >= lr->cap) { /* +1: room for the NUL of a last line without '\n' */
    size_t nc = lr->cap * 2;
    char *nb = realloc(lr->buf, nc);
    if (!nb) return dpo_err(DPO_ENOMEM, "line reader: out of memory (line longer than %zu bytes)", lr->cap);
    lr->buf = nb;
    lr->cap = nc;
  }
  off_t at = lr->bufpos + (off_t)lr->len;
  size_t want = lr->cap - 1 - lr->len;
  if (at >= lr->fsize) {
    lr->eof = 1;
    return DPO_OK;
  }
  if ((off_t)want > lr->fsize - at) want = (size_t)(lr->fsize - at);
  ssize_t k = dpo__pread_full(lr->fd, lr->buf + lr->len, want, at);
  if (k < 0) return dpo_err(DPO_EIO, "read error at offset %lld: %s", (long long)at, strerror(errno));
  lr->len += (size_t)k;
  if ((size_t)k < want || lr->bufpos + (off_t)lr->len >= lr->fsize) lr->eof = 1;
  return DPO_OK;
}

/* Locate the next '\n' at or after lr->off, refilling as needed.  *nl = index or -1 at EOF. */
static int dpo__lr_find_nl(dpo__lr_t *lr, ssize_t *nl) {
  size_t scanned = 0; /* bytes after off already known to hold no '\n' */
  for (;;) {
    char *p = memchr(lr->buf + lr->off + scanned, '\n', lr->len - lr->off - scanned);
    if (p) {
      *nl = p - lr->buf;
      return DPO_OK;
    }
    if (lr->eof) {
      *nl = -1;
      return DPO_OK;
    }
    scanned = lr->len - lr->off;
    int st = dpo__lr_fill(lr);
    if (st) return st;
  }
}

int dpo__lr_open(dpo__lr_t *lr, const char *path, int rank, int size) {
  memset(lr, 0, sizeof *lr);
  lr->fd = open(path, O_RDONLY);
  if (lr->fd < 0) return dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(lr->fd, &sb) != 0) {
    int e = errno;
    close(lr->fd);
    lr->fd = -1;
    return dpo_err(DPO_EIO, "%s: cannot stat: %s", path, strerror(e));
  }
  lr->fsize = sb.st_size;
  /* __int128-free split: size * rank / P without overflow for files < 2^63 / P bytes */
  off_t begin = (off_t)((long double)lr->fsize * rank / size);
  lr->end = rank == size - 1 ? lr->fsize : (off_t)((long double)lr->fsize * (rank + 1) / size);
  if (begin > lr->end) begin = lr->end;
  lr->cap = DPO__LR_BLOCK;
  lr->buf = malloc(lr->cap);
  if (!lr->buf) {
    close(lr->fd);
    lr->fd = -1;
    return dpo_err(DPO_ENOMEM, "%s: line reader: out of memory", path);
  }
  if (begin == 0) {
    lr->bufpos = 0;
    return DPO_OK;
  }
  /* A line starts at `begin` iff byte begin-1 is '\n': start at begin-1 and drop everything
   * through the first '\n' (that part belongs to the previous rank). */
  lr->bufpos = begin - 1;
  ssize_t nl;
  int st = dpo__lr_fill(lr);
  if (!st) st = dpo__lr_find_nl(lr, &nl);
  if (st) {
    dpo__lr_close(lr);
    return st;
  }
  if (nl < 0) { /* the previous rank's line runs to the end of the file */
    lr->off = lr->len;
  } else {
    lr->off = (size_t)nl + 1;
  }
  return DPO_OK;
}

int dpo__lr_next(dpo__lr_t *lr, char **line) {
  if (lr->off == lr->len && !lr->eof) {
    int st = dpo__lr_fill(lr);
    if (st) return st;
  }
  off_t start = lr->bufpos + (off_t)lr->off;
  if (start >= lr->end || start >= lr->fsize) return 0;
  ssize_t nl;
  int st = dpo__lr_find_nl(lr, &nl);
  if (st) return st;
  start = lr->bufpos + (off_t)lr->off; /* refill may have moved the buffer */
  size_t e;
  if (nl < 0) {
    e = lr->len; /* last line without '\n'; fill() keeps one spare byte for the NUL */
    if (e == lr->off) return 0;
  } else {
    e = (size_t)nl;
  }
  char *s = lr->buf + lr->off;
  lr->buf[e] = '\0';
  if (e > lr->off && lr->buf[e - 1] == '\r') lr->buf[e - 1] = '\0';
  lr->off = nl < 0 ? e : e + 1;
  lr->nlines++;
  *line = s;
  return 1;
}

void dpo__lr_close(dpo__lr_t *lr) {
  if (lr->fd >= 0) close(lr->fd);
  lr->fd = -1;
  free(lr->buf);
  lr->buf = NULL;
}

int dpo__perr_set(dpo__perr_t *e, int code, int64_t line, const char *fmt, ...) {
  if (e->code != DPO_OK) return e->code;
  e->code = code;
  e->line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->why, sizeof e->why, fmt, ap);
  va_end(ap);
  return code;
}

int dpo__agree_line(MPI_Comm comm, const char *path, const dpo__perr_t *e, int64_t nlines) {
  int rank;
  int64_t before = 0;
  MPI_Comm_rank(comm, &rank);
  /* Every rank takes part even if it failed: the count is how far it got, and the lowest
   * failing rank is the one reported, so every rank before it counted all its lines. */
  if (MPI_Exscan(&nlines, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "%s: MPI_Exscan of line counts failed", path));
  if (rank == 0) before = 0;
  if (e->code != DPO_OK && e->line > 0)
    dpo_err(e->code, "%s:%lld: %s", path, (long long)(before + e->line), e->why);
  return dpo_agree(comm, e->code);
}

#define DPO__PUSH(T, a, x)                                              \
  do {                                                                  \
    if ((a)->n == (a)->cap) {                                           \
      size_t nc = (a)->cap ? (a)->cap * 2 : 1024;                       \
      T *nv = realloc((a)->v, nc * sizeof(T));                          \
      if (!nv) return dpo_err(DPO_ENOMEM, "data: out of memory");       \
      (a)->v = nv;                                                      \
      (a)->cap = nc;                                                    \
    }                                                                   \
    (a)->v[(a)->n++] = (x);                                             \
    return DPO_OK;                                                      \
  } while (0)

int dpo__dvec_push(dpo__dvec_t *a, double x) { DPO__PUSH(double, a, x); }
int dpo__ivec_push(dpo__ivec_t *a, int32_t x) { DPO__PUSH(int32_t, a, x); }
int dpo__lvec_push(dpo__lvec_t *a, int64_t x) { DPO__PUSH(int64_t, a, x); }

int dpo__parse_label(const char *tok, dpo_labels_t kind, int project, double *y, char *why,
                     size_t wl) {
  char *end;
  errno = 0;
  double v = strtod(tok, &end);
  if (end == tok || *end != '\0') {
    snprintf(why, wl, "bad label '%.40s'", tok);
    return -1;
  }
  if (!isfinite(v)) {
    snprintf(why, wl, "non-finite label '%.40s'", tok);
    return -1;
  }
  if (dpo__project_label(kind, project, &v)) {
    snprintf(why, wl, kind == DPO_LABELS_BINARY
                          ? "unknown label '%.40s' (binary labels are +1/-1 or 0/1)"
                          : "unknown label '%.40s' (class labels are integers 0, 1, 2, ...)",
             tok);
    return -1;
  }
  *y = v;
  return 0;
}

int dpo__project_label(dpo_labels_t kind, int project, double *y) {
  double v = *y;
  if (kind == DPO_LABELS_BINARY) {
    if (v == 1.0 || v == -1.0) return 0;
    if (v == 0.0) return *y = -1.0, 0; /* 0/1 labels: 0 -> -1 */
    if (!project) return -1;
    *y = v > 0 ? 1.0 : -1.0; /* the declared label set {-1, +1}: by sign */
  } else if (kind == DPO_LABELS_CLASS && !(v >= 0 && v <= 1e9 && v == floor(v))) {
    if (!project) return -1;
    *y = v > 0 ? floor(fmin(v, 1e9)) : 0.0;
  }
  return 0;
}

void dpo__row_range(int64_t n, int rank, int size, int64_t *row0, int64_t *cnt) {
  int64_t q = n / size, r = n % size;
  *cnt = q + (rank < r ? 1 : 0);
  *row0 = rank * q + (rank < r ? rank : r);
}
