/* Private helpers of the data room: byte-range line reader, growable arrays, collective
 * error reporting with global line numbers (lines.c); the format table (shard.c walks it);
 * row bookkeeping (rows.c). */
#ifndef DPO_DATA_INTERNAL_H
#define DPO_DATA_INTERNAL_H

#include "dpopt/data.h"
#include "dpopt/status.h"

#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Streaming reader of the lines a rank owns: those that START inside its byte range
 * [begin, end) of the file (the line crossing `end` is finished by its owner; the line
 * crossing `begin` belongs to the previous rank).  Reads with pread in blocks, so memory is
 * one block plus the longest line. */
typedef struct {
  int fd;
  off_t fsize;
  off_t end;      /* lines starting at >= end belong to the next rank */
  off_t bufpos;   /* file offset of buf[0] */
  char *buf;
  size_t cap, len, off; /* buffer capacity, valid bytes, parse position */
  int eof;        /* no more bytes after buf[len] */
  int64_t nlines; /* owned lines returned so far (blank and comment lines included) */
} dpo__lr_t;

/* Open `path` and position at the first line starting in rank/size's byte range.
 * Local (not collective); errors DPO_EIO with the detail recorded. */
int dpo__lr_open(dpo__lr_t *lr, const char *path, int rank, int size);
/* Next owned line, NUL-terminated, '\n' and a trailing '\r' removed (the buffer may be
 * modified by the caller until the next call).  Returns 1 (line), 0 (no more), <0 error. */
int dpo__lr_next(dpo__lr_t *lr, char **line);
void dpo__lr_close(dpo__lr_t *lr);

/* Local parse failure, reported collectively by dpo__agree_line. */
typedef struct {
  int code;        /* DPO_OK or the failure */
  int64_t line;    /* local 1-based line number of the failure (0: detail already recorded) */
  char why[400];
} dpo__perr_t;

/* Record a local parse failure (first one wins). Returns code. */
int dpo__perr_set(dpo__perr_t *e, int code, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Collective: turn local line numbers into global ones (Exscan of the line counts of the
 * preceding ranks), record "path:LINE: why" on the failing rank, and agree. */
int dpo__agree_line(MPI_Comm comm, const char *path, const dpo__perr_t *e, int64_t nlines);

/* Growable arrays. */
typedef struct { double *v; size_t n, cap; } dpo__dvec_t;
typedef struct { int32_t *v; size_t n, cap; } dpo__ivec_t;
typedef struct { int64_t *v; size_t n, cap; } dpo__lvec_t;
int dpo__dvec_push(dpo__dvec_t *a, double x);
int dpo__ivec_push(dpo__ivec_t *a, int32_t x);
int dpo__lvec_push(dpo__lvec_t *a, int64_t x);

/* Parse a label token (whole string) by the label kind; 0 ok, else reason in why.  project:
 * a label outside the kind's set is projected onto it (dpo_load_opts_t.project). */
int dpo__parse_label(const char *tok, dpo_labels_t kind, int project, double *y, char *why,
                     size_t wl);
/* A finite label *y checked against the kind's set: 0 ok (0/1 binary labels mapped to -1/+1),
 * -1 outside it; with project, moved onto the set instead (sign, or max(0, floor)). */
int dpo__project_label(dpo_labels_t kind, int project, double *y);

/* A file format: one const struct in the loader's file, one line in the table in shard.c,
 * which walks it (auto-detection: the first entry whose probe says yes; an explicit
 * opts.format: the entry with that id).  Loaders call down into lines.c and rows.c only. */
typedef struct {
  dpo_format_t format;
  const char *name;
  /* Local: is `path` in this format?  head holds the file's first len (<= 8) bytes.
   * 1 yes, 0 no, < 0 an error recorded with dpo_err (e.g. a gzip file that is not IDX). */
  int (*probe)(const char *path, const unsigned char *head, size_t len);
  /* Collective: fill s (n, d, row0, n_global, storage, y); return the agreed status. */
  int (*load)(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s);
  /* Local: *fixed = 1 if the format fixes the width of every data set the file could hold
   * (header or column count), 0 if the width would be read from the rows (sparse). */
  int (*fixed_width)(const char *path, int *fixed);
} dpo__format_t;

extern const dpo__format_t dpo__format_bin;    /* bin.c: magic "DPOBIN01" */
extern const dpo__format_t dpo__format_idx;    /* idx.c: IDX magic, plain or inside gzip */
extern const dpo__format_t dpo__format_csv;    /* text.c: name ends in .csv */
extern const dpo__format_t dpo__format_libsvm; /* text.c: anything else (last in the table) */

/* ---- rows.c: the row bookkeeping every loader shares. */
/* Collective: n_global, row0, the empty-file and more-ranks-than-rows checks. */
int dpo__finish_rows(MPI_Comm comm, const char *path, dpo_shard_t *s);
/* Convert a CSR shard to dense in place (local). */
int dpo__densify(dpo_shard_t *s);
/* Collective: keep the part o->valid_part of the rows (split.c); no-op if 0. */
int dpo__shard_split(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s);

/* Storage for a dense X of count doubles (at least one), 64-byte aligned so the gradient
 * kernel's vector loads of rows whose byte length is a multiple of 64 or 32 never straddle
 * a cache line (jobs/bench/gradient: 16-byte-aligned rows of d = 100 ran ~20% slower).
 * Freed with free(); NULL when out of memory. */
double *dpo__dense_alloc(size_t count);

/* The L1 and L2 norms of the nf values at x, summed in index order: the one definition the
 * loader's fused pass (dpo_load_opts_t.row_norms) and dpo_shard_row_norms share, so that a
 * norm taken while loading is the same double as one taken afterwards. */
__attribute__((always_inline)) static inline void dpo__dense_row_norms(const double *x, int32_t nf,
                                                                       double *l1, double *l2) {
  double a = 0, b = 0;
  for (int32_t j = 0; j < nf; j++) {
    a += fabs(x[j]);
    b += x[j] * x[j];
  }
  *l1 = a;
  *l2 = sqrt(b);
}

/* The same for nr rows of nf values at row stride ld, into l1[i] and l2[i]: four rows at a
 * time, each still summed in index order (the same doubles), but with eight independent sums
 * in flight instead of two (one row's sums wait on each other's adds). */
__attribute__((always_inline)) static inline void dpo__dense_rows_norms(const double *x, size_t nr,
                                                                        size_t ld, int32_t nf,
                                                                        double *l1, double *l2) {
  size_t i = 0;
  for (; i + 4 <= nr; i += 4) {
    const double *r0 = x + i * ld, *r1 = r0 + ld, *r2 = r1 + ld, *r3 = r2 + ld;
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
    for (int32_t j = 0; j < nf; j++) {
      a0 += fabs(r0[j]), b0 += r0[j] * r0[j];
      a1 += fabs(r1[j]), b1 += r1[j] * r1[j];
      a2 += fabs(r2[j]), b2 += r2[j] * r2[j];
      a3 += fabs(r3[j]), b3 += r3[j] * r3[j];
    }
    l1[i] = a0, l1[i + 1] = a1, l1[i + 2] = a2, l1[i + 3] = a3;
    l2[i] = sqrt(b0), l2[i + 1] = sqrt(b1), l2[i + 2] = sqrt(b2), l2[i + 3] = sqrt(b3);
  }
  for (; i < nr; i++) dpo__dense_row_norms(x + i * ld, nf, &l1[i], &l2[i]);
}

/* Balanced row range: n/P rows, the remainder to the first ranks. */
void dpo__row_range(int64_t n, int rank, int size, int64_t *row0, int64_t *cnt);

/* pread/pwrite the whole count or fail (EIO/short read -> return bytes done). */
ssize_t dpo__pread_full(int fd, void *buf, size_t len, off_t off);
ssize_t dpo__pwrite_full(int fd, const void *buf, size_t len, off_t off);

/* dpopt binary header (see data.h). */
#define DPO__BIN_HDR 40
/* Serial: write the 40-byte header at offset 0 of an open file. */
int dpo__bin_write_header(int fd, const char *path, int64_t n, int32_t d, int sparse, int64_t nnz,
                          int labels);
#endif
