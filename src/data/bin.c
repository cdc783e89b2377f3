/* dpopt binary format (layout in dpopt/data.h): balanced row ranges read with pread (or
 * mapped in place: dpo_load_opts_t.map), collective write with MPI-IO. */
#include "core/clones.h"
#include "data/data_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  int64_t n;
  int32_t d, sparse;
  int64_t nnz;
  int32_t labels, reserved;
} dpo__binhdr_t;

static int dpo__little_endian(void) {
  uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

static void dpo__hdr_pack(const dpo__binhdr_t *h, unsigned char *b) {
  memcpy(b, "DPOBIN01", 8);
  memcpy(b + 8, &h->n, 8);
  memcpy(b + 16, &h->d, 4);
  memcpy(b + 20, &h->sparse, 4);
  memcpy(b + 24, &h->nnz, 8);
  memcpy(b + 32, &h->labels, 4);
  memcpy(b + 36, &h->reserved, 4);
}

/* The file size the header describes, or -1 when it exceeds `fsize` (the actual size) or the
 * counts are negative.  Every product is checked against fsize before it is added, so a
 * corrupt header (n, nnz near INT64_MAX) cannot overflow int64. */
static int64_t dpo__bin_size(const dpo__binhdr_t *h, int64_t fsize) {
  if (h->n < 0 || h->d < 0 || h->nnz < 0 || fsize < DPO__BIN_HDR) return -1;
  int64_t room = fsize - DPO__BIN_HDR; /* bytes left for the arrays */
  /* labels: 8 n */
  if (h->n > room / 8) return -1;
  room -= 8 * h->n;
  if (h->sparse) {
    /* row pointers 8 (n + 1), then 4 + 8 bytes per nonzero */
    if (h->n + 1 > room / 8) return -1;
    room -= 8 * (h->n + 1);
    if (h->nnz > room / 12) return -1;
    room -= 12 * h->nnz;
  } else {
    if (h->d > 0 && h->n > room / 8 / h->d) return -1;
    room -= 8 * h->n * (int64_t)h->d;
  }
  return fsize - room;
}

static int dpo__read_at(int fd, const char *path, void *buf, size_t len, int64_t off) {
  if (len == 0) return DPO_OK;
  ssize_t k = dpo__pread_full(fd, buf, len, (off_t)off);
  if (k < 0) return dpo_err(DPO_EIO, "%s: read error at offset %lld: %s", path, (long long)off, strerror(errno));
  if ((size_t)k != len) return dpo_err(DPO_EFORMAT, "%s: truncated file (offset %lld)", path, (long long)off);
  return DPO_OK;
}

/* 1 if the len values at c are all finite.  A value is inf or nan when its exponent bits
 * are all ones; (bits & exponent) + 2^52 then carries into the sign bit, and only then.  So
 * the test is and/add/or over 4 independent lanes, with no compare: the compiler keeps it in
 * vector registers at -O2 (the scalar compare-and-set loop it replaced was a quarter of the
 * load's CPU time, perf). */
typedef uint64_t dpo__u64x4 __attribute__((vector_size(32)));
/* an AVX2 copy chosen at load time where the CPU has it (DPO_CLONES_EXACT, core/clones.h: no
 * FMA, so the norms of dpo__check_rows stay the same doubles): one 4-lane op for the two SSE2
 * ones (in cache, 4-5x faster: 40M values 0.07-0.15 s -> 0.013-0.035 s on this VM) */
DPO_CLONES_EXACT
static int dpo__all_finite(const double *c, size_t len) {
  const uint64_t ex = UINT64_C(0x7ff0000000000000), one = UINT64_C(1) << 52;
  const dpo__u64x4 vex = {ex, ex, ex, ex}, vone = {one, one, one, one};
  dpo__u64x4 acc = {0, 0, 0, 0};
  size_t k = 0;
  for (; k + 4 <= len; k += 4) {
    dpo__u64x4 b;
    memcpy(&b, c + k, sizeof b);
    acc |= (b & vex) + vone;
  }
  uint64_t r = acc[0] | acc[1] | acc[2] | acc[3];
  for (; k < len; k++) {
    uint64_t b;
    memcpy(&b, c + k, 8);
    r |= (b & ex) + one;
  }
  return !(r >> 63);
}

/* The error for the first non-finite value among the len at c (rows of d from row row1). */
static int dpo__nonfinite(const char *path, const double *c, size_t len, int32_t d, int64_t row1) {
  size_t k = 0;
  while (k + 1 < len && isfinite(c[k])) k++;
  return dpo_err(DPO_EFORMAT, "%s: row %lld: non-finite value", path,
                 (long long)(row1 + (int64_t)(k / (size_t)(d > 0 ? d : 1))));
}

/* The chunk's check (nr rows of d values at c, row1 the first's number in the file), with
 * their norms when nrm is given (L1 at nrm[0..], L2 at nrm[cnt..]: dpo_load_opts_t.row_norms).
 * With the norms the check is theirs: a row's L1 norm, a sum of |x_j| >= 0, is finite when all
 * its values are (inf and nan never cancel in it); only a row whose sum overflowed is checked
 * value by value.  One pass over the rows in cache, not three over the shard. */
DPO_CLONES_EXACT
static int dpo__check_rows(const char *path, const double *c, size_t nr, int32_t d,
                           int64_t row1, double *nrm, int64_t cnt) {
  const size_t len = nr * (size_t)d;
  if (!nrm) return dpo__all_finite(c, len) ? DPO_OK : dpo__nonfinite(path, c, len, d, row1);
  dpo__dense_rows_norms(c, nr, (size_t)d, d, nrm, nrm + cnt);
  for (size_t i = 0; i < nr; i++)
    if (!isfinite(nrm[i]) && !dpo__all_finite(c + i * (size_t)d, (size_t)d))
      return dpo__nonfinite(path, c + i * (size_t)d, (size_t)d, d, row1 + (int64_t)i);
  return DPO_OK;
}

/* The dense block (cnt rows of d values, row0's first) read into X at row stride d1 (d, or
 * d + 1 with the bias column of ones last: dpo_load_opts_t.intercept), in chunks of whole rows
 * that stay in cache while they are checked and spread: one pass over memory, as a read loop
 * makes, and no second copy of the shard.  A chunk is read to the start of its rows' final
 * place; its rows then move up to the wider stride from the last one, each to an address at
 * or above its own.  nrm: NULL, or room for the rows' norms (dpo__check_rows). */
#define DPO__BIN_CHUNK ((size_t)1 << 17) /* values: 1 MiB */
static int dpo__read_dense(int fd, const char *path, double *X, int64_t cnt, int32_t d,
                           int32_t d1, int64_t off, int64_t row0, double *nrm) {
  const int64_t rows = d > 0 && (size_t)d < DPO__BIN_CHUNK ? (int64_t)(DPO__BIN_CHUNK / (size_t)d) : 1;
  for (int64_t a = 0; a < cnt; a += rows) {
    const size_t nr = (size_t)(cnt - a < rows ? cnt - a : rows), len = nr * (size_t)d;
    double *c = X + (size_t)a * (size_t)d1;
    int st = dpo__read_at(fd, path, c, len * 8, off + 8 * a * (int64_t)d);
    if (!st) st = dpo__check_rows(path, c, nr, d, row0 + a + 1, nrm ? nrm + a : NULL, cnt);
    if (st) return st;
    for (size_t i = nr; d1 != d && i-- > 0;) {
      if (i > 0) memmove(c + i * (size_t)d1, c + i * (size_t)d, (size_t)d * sizeof *c);
      c[i * (size_t)d1 + (size_t)d] = 1.0;
    }
  }
  return DPO_OK;
}

/* The dense block mapped in place (dpo_load_opts_t.map; the layout kept: row stride d): the
 * whole pages around the rank's own bytes [off, off + 8 cnt d), mapped private.  Read-only
 * while MAP_POPULATE fills the page tables with the page cache's own pages (on a writable
 * private mapping the kernel would break copy-on-write for every page: a copy of it all),
 * writable afterwards (a write, e.g. the validation split's compaction, copies its page
 * only, never into the file).  Checked in the read path's chunks.  1: mapped, 0: not
 * mappable (the caller reads instead), < 0: an error recorded (nothing left mapped). */
static int dpo__map_dense(int fd, const char *path, dpo_shard_t *s, int64_t cnt, int32_t d,
                          int64_t off, int64_t row0, double *nrm) {
  const long pg = sysconf(_SC_PAGESIZE);
  const size_t bytes = (size_t)cnt * (size_t)d * 8;
  int st;
  if (pg <= 0 || bytes == 0) return 0;
  const int64_t a = off - off % pg;
  const size_t len = (size_t)(off - a) + bytes;
  void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)a);
  if (m == MAP_FAILED) return 0;
  if (mprotect(m, len, PROT_READ | PROT_WRITE) != 0) {
    munmap(m, len);
    return 0;
  }
  double *X = (double *)(void *)((char *)m + (off - a));
  const int64_t rows = (size_t)d < DPO__BIN_CHUNK ? (int64_t)(DPO__BIN_CHUNK / (size_t)d) : 1;
  for (int64_t r = 0; r < cnt; r += rows) {
    const size_t nr = (size_t)(cnt - r < rows ? cnt - r : rows);
    st = dpo__check_rows(path, X + (size_t)r * (size_t)d, nr, d, row0 + r + 1, nrm ? nrm + r : NULL, cnt);
    if (st) {
      munmap(m, len);
      return st;
    }
  }
  s->X = X;
  s->map = m;
  s->map_len = len;
  return 1;
}

/* The CSR entries of the cnt rows whose (checked) row pointers rp hold file entry numbers
 * from k0, read into colind/val (room for the entries plus one per row with the bias) in
 * chunks of whole rows: a chunk is read at its final start shifted by its rows' bias slots,
 * then compacted forward in cache (each entry to an address at or below its own) while it is
 * checked.  Entries at columns >= dp are dropped (private runs on a sparse file: the
 * declared width dp replaces the header's hd, dpo_load_opts_t.project); with extra each row
 * ends with the bias entry (column dp, value 1).  rp is rewritten to the kept positions. */
static int dpo__read_csr(int fd, const char *path, dpo_shard_t *s, int64_t cnt, int64_t k0,
                         int64_t cbase, int64_t nnz, int32_t hd, int32_t dp, int extra) {
  int64_t *rp = s->rowptr, w = 0;
  for (int64_t a = 0; a < cnt;) {
    int64_t b = a + 1;
    while (b < cnt && rp[b + 1] - rp[a] <= (int64_t)DPO__BIN_CHUNK) b++;
    const int64_t e = rp[b] - rp[a], sh = w + extra * (b - a);
    int st = dpo__read_at(fd, path, s->colind + sh, (size_t)e * 4, cbase + 4 * (k0 + rp[a]));
    if (!st) st = dpo__read_at(fd, path, s->val + sh, (size_t)e * 8, cbase + 4 * nnz + 8 * (k0 + rp[a]));
    if (st) return st;
    for (int64_t i = a, p = sh; i < b; i++) {
      const int64_t len = rp[i + 1] - rp[i];
      rp[i] = w;
      for (int64_t q = 0; q < len; q++, p++) {
        const int32_t c = s->colind[p];
        const double v = s->val[p];
        if (c < 0 || c >= hd || (q > 0 && c <= s->colind[p - 1]))
          return dpo_err(DPO_EFORMAT, "%s: row %lld: column index %d out of order or outside "
                         "[0, %d)", path, (long long)(s->row0 + i + 1), (int)c, (int)hd);
        if (!isfinite(v))
          return dpo_err(DPO_EFORMAT, "%s: row %lld: non-finite value", path,
                         (long long)(s->row0 + i + 1));
        if (c < dp) s->colind[w] = c, s->val[w++] = v;
      }
      if (extra) s->colind[w] = dp, s->val[w++] = 1.0;
    }
    a = b;
  }
  rp[cnt] = w;
  return DPO_OK;
}

static int dpo__load_bin(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s) {
  int rank, size, st = DPO_OK, fd = -1;
  dpo__binhdr_t h = {0};
  unsigned char b[DPO__BIN_HDR];
  int64_t row0 = 0, cnt = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (!dpo__little_endian()) st = dpo_err(DPO_EUNSUP, "%s: dpopt binary files need a little-endian host", path);
  if (!st && (fd = open(path, O_RDONLY)) < 0) st = dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (!st && fstat(fd, &sb) != 0) st = dpo_err(DPO_EIO, "%s: cannot stat: %s", path, strerror(errno));
  if (!st) {
    if (sb.st_size < DPO__BIN_HDR) st = dpo_err(DPO_EFORMAT, "%s: truncated file: %lld bytes, no full header", path, (long long)sb.st_size);
    else st = dpo__read_at(fd, path, b, DPO__BIN_HDR, 0);
  }
  if (!st) {
    memcpy(&h.n, b + 8, 8);
    memcpy(&h.d, b + 16, 4);
    memcpy(&h.sparse, b + 20, 4);
    memcpy(&h.nnz, b + 24, 8);
    memcpy(&h.labels, b + 32, 4);
    /* magic first: the counts of a file that is not ours mean nothing */
    if (memcmp(b, "DPOBIN01", 8) != 0) st = dpo_err(DPO_EFORMAT, "%s: not a dpopt binary file (bad magic)", path);
    else if ((h.sparse != 0 && h.sparse != 1) || (h.labels < 0 || h.labels > 2) || h.n < 0 ||
             h.d < 0 || h.nnz < 0 || (!h.sparse && h.nnz != 0))
      st = dpo_err(DPO_EFORMAT, "%s: corrupt header (n=%lld d=%d sparse=%d nnz=%lld labels=%d)", path,
                   (long long)h.n, (int)h.d, (int)h.sparse, (long long)h.nnz, (int)h.labels);
    else if (o->d > 0 && o->d != h.d && !(o->project && h.sparse))
      st = dpo_err(DPO_EFORMAT, "%s: file has dimension %d, declared %d", path, (int)h.d, (int)o->d);
    else {
      int64_t want = dpo__bin_size(&h, (int64_t)sb.st_size);
      if (want < 0)
        st = dpo_err(DPO_EFORMAT, "%s: truncated file: %lld bytes, less than the header's counts "
                     "(n=%lld d=%d nnz=%lld) need", path, (long long)sb.st_size, (long long)h.n,
                     (int)h.d, (long long)h.nnz);
      else if (sb.st_size > want)
        st = dpo_err(DPO_EFORMAT, "%s: %lld trailing bytes after the data the header describes", path,
                     (long long)(sb.st_size - want));
    }
  }
  st = dpo_agree(comm, st);
  if (st) goto out;
  dpo__row_range(h.n, rank, size, &row0, &cnt);
  s->n = cnt;
  s->d = h.d;
  s->labels = (dpo_labels_t)h.labels;
  s->sparse = h.sparse;
  st = dpo__finish_rows(comm, path, s); /* empty file, more ranks than rows */
  if (st) goto out;
  s->row0 = row0;
  /* labels */
  if (!(s->y = malloc((size_t)(cnt ? cnt : 1) * sizeof *s->y))) st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  if (!st) st = dpo__read_at(fd, path, s->y, (size_t)cnt * 8, DPO__BIN_HDR + 8 * row0);
  for (int64_t i = 0; !st && i < cnt; i++) {
    double v = s->y[i];
    if (o->project && isfinite(v)) dpo__project_label((dpo_labels_t)h.labels, 1, &s->y[i]);
    v = s->y[i];
    if (!isfinite(v)) st = dpo_err(DPO_EFORMAT, "%s: row %lld: non-finite label", path, (long long)(row0 + i + 1));
    else if (h.labels == DPO_LABELS_CLASS && !(v >= 0 && v == floor(v)))
      st = dpo_err(DPO_EFORMAT, "%s: row %lld: class label %g is not an integer >= 0", path,
                   (long long)(row0 + i + 1), v);
    else if (h.labels == DPO_LABELS_BINARY && v != 1.0 && v != -1.0)
      st = dpo_err(DPO_EFORMAT, "%s: row %lld: unknown label %g (binary labels are +1/-1)", path,
                   (long long)(row0 + i + 1), v);
  }
  int64_t base = DPO__BIN_HDR + 8 * h.n;
  /* the final arrays allocated once: the bias column's slots too (the width is public: the
   * header's or the declared d) */
  const int extra = o->intercept ? 1 : 0;
  if (!st && extra && h.d >= INT32_MAX - 1) st = dpo_err(DPO_EINVAL, "%s: too many features", path);
  if (!st && !h.sparse) {
    const int32_t d1 = h.d + extra;
    const int64_t off = base + 8 * row0 * (int64_t)h.d;
    if (o->row_norms && !(s->norms = malloc((size_t)(cnt ? 2 * cnt : 1) * sizeof *s->norms)))
      st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    int mapped = !st && o->map && !extra ? dpo__map_dense(fd, path, s, cnt, h.d, off, row0, s->norms) : 0;
    if (mapped < 0) st = mapped;
    else if (!st && !mapped && !(s->X = dpo__dense_alloc((size_t)cnt * (size_t)d1)))
      st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    if (!st && !mapped) st = dpo__read_dense(fd, path, s->X, cnt, h.d, d1, off, row0, s->norms);
    if (!st) s->d = d1, s->intercept = extra;
  } else if (!st) {
    if (!(s->rowptr = malloc((size_t)(cnt + 1) * sizeof *s->rowptr))) st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    if (!st) st = dpo__read_at(fd, path, s->rowptr, (size_t)(cnt + 1) * 8, base + 8 * row0);
    int64_t k0 = st ? 0 : s->rowptr[0], k1 = st ? 0 : s->rowptr[cnt];
    if (!st && rank == 0 && k0 != 0) st = dpo_err(DPO_EFORMAT, "%s: corrupt row pointers: first is %lld, not 0", path, (long long)k0);
    if (!st && rank == size - 1 && k1 != h.nnz)
      st = dpo_err(DPO_EFORMAT, "%s: corrupt row pointers: last is %lld, header nnz %lld", path, (long long)k1, (long long)h.nnz);
    for (int64_t i = 0; !st && i < cnt; i++)
      if (s->rowptr[i] > s->rowptr[i + 1] || s->rowptr[i] < 0 || s->rowptr[i + 1] > h.nnz)
        st = dpo_err(DPO_EFORMAT, "%s: row %lld: corrupt row pointer", path, (long long)(row0 + i + 1));
    size_t m = st ? 0 : (size_t)(k1 - k0) + (size_t)extra * (size_t)cnt;
    if (!st && (!(s->colind = malloc((m ? m : 1) * 4)) || !(s->val = malloc((m ? m : 1) * 8))))
      st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    for (int64_t i = 0; !st && i <= cnt; i++) s->rowptr[i] -= k0;
    const int32_t dp = o->project && o->d > 0 ? o->d : h.d;
    if (!st) st = dpo__read_csr(fd, path, s, cnt, k0, base + 8 * (h.n + 1), h.nnz, h.d, dp, extra);
    if (!st) s->d = dp + extra, s->intercept = extra;
  }
  st = dpo_agree(comm, st);
out:
  if (fd >= 0) close(fd);
  return st;
}

static int dpo__probe_bin(const char *path, const unsigned char *head, size_t len) {
  return len == 8 && memcmp(head, "DPOBIN01", 8) == 0;
}

/* A dense file's header fixes the width of every data set it could hold; a sparse file's header
 * d was possibly inferred from the rows (dpopt convert without --dim): not a declaration. */
static int dpo__fixed_bin(const char *path, int *fixed) {
  unsigned char b[24];
  int fd = open(path, O_RDONLY), st = DPO_OK;
  if (fd < 0) return dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno));
  int32_t sparse = 1;
  if (dpo__pread_full(fd, b, sizeof b, 0) != (ssize_t)sizeof b)
    st = dpo_err(DPO_EFORMAT, "%s: truncated file: no full header", path);
  else memcpy(&sparse, b + 20, 4);
  close(fd);
  *fixed = !st && sparse == 0;
  return st;
}

const dpo__format_t dpo__format_bin = {DPO_FMT_BIN, "bin", dpo__probe_bin, dpo__load_bin,
                                       dpo__fixed_bin};

/* MPI_File_write_at in pieces whose element count fits an int. */
static int dpo__mpi_write(MPI_File fh, int64_t off, const void *buf, int64_t count, MPI_Datatype t, int esz) {
  const int64_t chunk = 1 << 26;
  const char *p = buf;
  while (count > 0) {
    int c = (int)(count < chunk ? count : chunk);
    MPI_Status ms;
    if (MPI_File_write_at(fh, (MPI_Offset)off, p, c, t, &ms) != MPI_SUCCESS) return -1;
    off += (int64_t)c * esz;
    p += (int64_t)c * esz;
    count -= c;
  }
  return 0;
}

int dpo_shard_write_bin(MPI_Comm comm, const dpo_shard_t *s, const char *path) {
  int rank, size, st = DPO_OK;
  MPI_File fh = MPI_FILE_NULL;
  int64_t *rp = NULL;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (!dpo__little_endian()) st = dpo_err(DPO_EUNSUP, "%s: dpopt binary files need a little-endian host", path);
  st = dpo_agree(comm, st);
  if (st) return st;
  /* layout agreement: d, sparse and label kind must be the same everywhere */
  int64_t nnz = s->sparse ? s->rowptr[s->n] : 0;
  int64_t loc[2] = {s->n, nnz}, tot[2], before[2] = {0, 0};
  int mm[6] = {s->d, s->sparse, (int)s->labels, -s->d, -s->sparse, -(int)s->labels}, gm[6];
  if (MPI_Allreduce(loc, tot, 2, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Exscan(loc, before, 2, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Allreduce(mm, gm, 6, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "%s: write: reductions failed", path));
  if (rank == 0) before[0] = before[1] = 0;
  if (gm[0] != -gm[3] || gm[1] != -gm[4] || gm[2] != -gm[5])
    st = dpo_err(DPO_EINVAL, "%s: shards disagree on dimension, storage or label kind", path);
  if (!st && s->sparse && !(rp = malloc((size_t)(s->n + 1) * sizeof *rp)))
    st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  st = dpo_agree(comm, st);
  if (st) goto out;
  /* remove an older file first so a shorter new file leaves no tail behind */
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Barrier(comm);
  if (MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
    fh = MPI_FILE_NULL;
    st = dpo_agree(comm, dpo_err(DPO_EIO, "%s: cannot create file", path));
    goto out;
  }
  dpo__binhdr_t h = {tot[0], s->d, s->sparse, s->sparse ? tot[1] : 0, (int32_t)s->labels, 0};
  unsigned char hb[DPO__BIN_HDR];
  dpo__hdr_pack(&h, hb);
  int bad = 0;
  int64_t base = DPO__BIN_HDR + 8 * h.n;
  if (rank == 0) bad |= dpo__mpi_write(fh, 0, hb, DPO__BIN_HDR, MPI_BYTE, 1);
  bad |= dpo__mpi_write(fh, DPO__BIN_HDR + 8 * before[0], s->y, s->n, MPI_DOUBLE, 8);
  if (!s->sparse) {
    bad |= dpo__mpi_write(fh, base + 8 * before[0] * (int64_t)s->d, s->X, s->n * (int64_t)s->d, MPI_DOUBLE, 8);
  } else {
    for (int64_t i = 0; i <= s->n; i++) rp[i] = s->rowptr[i] + before[1];
    /* each rank writes its n row starts; the last rank also writes the final nnz */
    bad |= dpo__mpi_write(fh, base + 8 * before[0], rp, s->n + (rank == size - 1), MPI_INT64_T, 8);
    int64_t cbase = base + 8 * (h.n + 1);
    bad |= dpo__mpi_write(fh, cbase + 4 * before[1], s->colind, nnz, MPI_INT32_T, 4);
    bad |= dpo__mpi_write(fh, cbase + 4 * h.nnz + 8 * before[1], s->val, nnz, MPI_DOUBLE, 8);
  }
  if (bad) st = dpo_err(DPO_EIO, "%s: write failed", path);
  if (MPI_File_close(&fh) != MPI_SUCCESS && !st) st = dpo_err(DPO_EIO, "%s: close failed", path);
  st = dpo_agree(comm, st);
out:
  free(rp);
  return st;
}

int dpo__bin_write_header(int fd, const char *path, int64_t n, int32_t d, int sparse, int64_t nnz,
                          int labels) {
  if (!dpo__little_endian()) return dpo_err(DPO_EUNSUP, "%s: dpopt binary files need a little-endian host", path);
  dpo__binhdr_t h = {n, d, sparse, nnz, labels, 0};
  unsigned char hb[DPO__BIN_HDR];
  dpo__hdr_pack(&h, hb);
  if (dpo__pwrite_full(fd, hb, sizeof hb, 0) != (ssize_t)sizeof hb)
    return dpo_err(DPO_EIO, "%s: write failed: %s", path, strerror(errno));
  return DPO_OK;
}
