/* IDX images + labels (MNIST / Fashion-MNIST), plain or gzip.  A gzip stream cannot be
 * seeked, so each rank decompresses up to the end of its row range, keeping only its rows. */
#include "data/data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static uint32_t dpo__be32(const unsigned char *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

/* Read exactly len bytes; DPO_EFORMAT on a short stream. */
static int dpo__gz_read(gzFile g, const char *path, void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    unsigned c = len > (1u << 30) ? (1u << 30) : (unsigned)len;
    int k = gzread(g, p, c);
    if (k < 0) {
      int ze;
      const char *m = gzerror(g, &ze);
      return dpo_err(DPO_EIO, "%s: read error: %s", path, m);
    }
    if (k == 0) return dpo_err(DPO_EFORMAT, "%s: truncated file", path);
    p += k;
    len -= (size_t)k;
  }
  return DPO_OK;
}

/* Discard len bytes of the stream through a small buffer (rows of other ranks). */
static int dpo__gz_skip(gzFile g, const char *path, int64_t len) {
  unsigned char tmp[65536];
  while (len > 0) {
    size_t c = len > (int64_t)sizeof tmp ? sizeof tmp : (size_t)len;
    int st = dpo__gz_read(g, path, tmp, c);
    if (st) return st;
    len -= (int64_t)c;
  }
  return DPO_OK;
}

/* Open an IDX file and read its header: magic 0x0000 08 <ndims>, then ndims big-endian
 * sizes. */
static int dpo__idx_open(const char *path, int ndims, gzFile *g, uint32_t *dims) {
  unsigned char b[16];
  *g = gzopen(path, "rb");
  if (!*g) return dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
  gzbuffer(*g, 1u << 17);
  int st = dpo__gz_read(*g, path, b, 4 + 4 * (size_t)ndims);
  if (st) return st;
  if (b[0] != 0 || b[1] != 0 || b[2] != 0x08 || b[3] != ndims)
    return dpo_err(DPO_EFORMAT, "%s: not an IDX file of unsigned bytes with %d dimensions (magic %02x%02x%02x%02x)",
                   path, ndims, b[0], b[1], b[2], b[3]);
  for (int k = 0; k < ndims; k++) dims[k] = dpo__be32(b + 4 + 4 * k);
  return DPO_OK;
}

/* "...-images-idx3-ubyte[.gz]" -> "...-labels-idx1-ubyte[.gz]" */
static int dpo__idx_labels_path(const char *path, char *out, size_t len) {
  const char *m = strstr(path, "images-idx3-ubyte");
  if (!m) return dpo_err(DPO_EINVAL, "%s: cannot derive the IDX labels file name (pass idx_labels)", path);
  int w = snprintf(out, len, "%.*slabels-idx1-ubyte%s", (int)(m - path), path,
                   m + strlen("images-idx3-ubyte"));
  if (w < 0 || (size_t)w >= len) return dpo_err(DPO_EINVAL, "%s: path too long", path);
  return DPO_OK;
}

static int dpo__load_idx(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s) {
  int rank, size, st = DPO_OK;
  gzFile gi = NULL, gl = NULL;
  uint32_t di[3] = {0, 0, 0}, dl[1] = {0};
  char lpath[4096];
  unsigned char *buf = NULL;
  const char *lp = o->idx_labels;
  double scale = o->idx_scale > 0 ? o->idx_scale : 1.0 / 255.0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (!lp) {
    st = dpo__idx_labels_path(path, lpath, sizeof lpath);
    lp = lpath;
  }
  if (!st) st = dpo__idx_open(path, 3, &gi, di);
  if (!st) st = dpo__idx_open(lp, 1, &gl, dl);
  if (!st && di[0] != dl[0])
    st = dpo_err(DPO_EFORMAT, "%s: %u images but %s has %u labels", path, di[0], lp, dl[0]);
  if (!st && (di[1] == 0 || di[2] == 0 || (uint64_t)di[1] * di[2] > INT32_MAX))
    st = dpo_err(DPO_EFORMAT, "%s: bad image size %u x %u", path, di[1], di[2]);
  if (!st && o->d > 0 && (int64_t)o->d != (int64_t)di[1] * di[2])
    st = dpo_err(DPO_EFORMAT, "%s: images have %u x %u pixels, declared dimension %d", path, di[1],
                 di[2], (int)o->d);
  /* the header's counts against the files' sizes before anything is allocated from them
   * (fuzzing: a 41-byte file asked for 7 GB); deflate expands at most 1032:1 */
  for (int k = 0; !st && k < 2; k++) {
    const char *p = k ? lp : path;
    gzFile g = k ? gl : gi;
    struct stat sb;
    uint64_t need = k ? 8 + (uint64_t)dl[0] : 16 + (uint64_t)di[0] * di[1] * di[2];
    if (stat(p, &sb) != 0) continue; /* opened a moment ago: a read error will say */
    uint64_t have = gzdirect(g) ? (uint64_t)sb.st_size : 1032 * (uint64_t)sb.st_size + 64;
    if (need > have)
      st = dpo_err(DPO_EFORMAT, "%s: truncated file: its header needs %llu bytes, the file %s %lld",
                   p, (unsigned long long)need, gzdirect(g) ? "has" : "is compressed to",
                   (long long)sb.st_size);
  }
  st = dpo_agree(comm, st);
  if (st) goto out;
  int64_t n = di[0], row0, cnt, d = (int64_t)di[1] * di[2];
  dpo__row_range(n, rank, size, &row0, &cnt);
  s->n = cnt;
  s->d = (int32_t)d;
  s->sparse = 0;
  s->labels = o->labels == DPO_LABELS_CLASS ? DPO_LABELS_CLASS : DPO_LABELS_BINARY;
  st = dpo__finish_rows(comm, path, s);
  if (st) goto out;
  s->row0 = row0;
  s->X = dpo__dense_alloc((size_t)(cnt * d));
  s->y = malloc((size_t)(cnt ? cnt : 1) * sizeof *s->y);
  buf = malloc((size_t)d * 64);
  if (!s->X || !s->y || !buf) st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  /* labels: skip, read own, stop */
  if (!st) st = dpo__gz_skip(gl, lp, row0);
  for (int64_t i = 0; !st && i < cnt; i += 64 * d) {
    int64_t c = cnt - i < 64 * d ? cnt - i : 64 * d;
    st = dpo__gz_read(gl, lp, buf, (size_t)c);
    for (int64_t k = 0; !st && k < c; k++) /* class: all labels; binary: one-vs-rest */
      s->y[i + k] = s->labels == DPO_LABELS_CLASS ? (double)buf[k]
                    : buf[k] == (unsigned)o->idx_class ? 1.0 : -1.0;
  }
  /* images: rows of the preceding ranks are decompressed and dropped */
  if (!st) st = dpo__gz_skip(gi, path, row0 * d);
  for (int64_t i = 0; !st && i < cnt; i += 64) {
    int64_t c = cnt - i < 64 ? cnt - i : 64;
    st = dpo__gz_read(gi, path, buf, (size_t)(c * d));
    for (int64_t k = 0; !st && k < c * d; k++) s->X[i * d + k] = scale * buf[k];
  }
  st = dpo_agree(comm, st);
out:
  if (gi) gzclose(gi);
  if (gl) gzclose(gl);
  free(buf);
  return st;
}

/* The IDX magic of an images file, plain or as the first bytes inside a gzip stream; a gzip
 * file that is not IDX is refused here (no other format reads gzip). */
static int dpo__probe_idx(const char *path, const unsigned char *m, size_t k) {
  if (k >= 4 && m[0] == 0 && m[1] == 0 && m[2] == 0x08 && m[3] == 0x03) return 1;
  if (k < 2 || m[0] != 0x1f || m[1] != 0x8b) return 0;
  gzFile g = gzopen(path, "rb");
  if (!g) return dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno));
  unsigned char z[4] = {0};
  int r = gzread(g, z, 4);
  gzclose(g);
  if (r == 4 && z[0] == 0 && z[1] == 0 && z[2] == 0x08 && z[3] == 0x03) return 1;
  return dpo_err(DPO_EUNSUP, "%s: gzip-compressed file that is not IDX images (decompress it "
                             "first)", path);
}

/* An IDX header gives the image size: the width of every data set the file could hold. */
static int dpo__fixed_idx(const char *path, int *fixed) { return (void)path, *fixed = 1, DPO_OK; }

const dpo__format_t dpo__format_idx = {DPO_FMT_IDX, "idx", dpo__probe_idx, dpo__load_idx,
                                       dpo__fixed_idx};
