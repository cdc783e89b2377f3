/* Shard lifecycle: the format table (detection and dispatch), norms, statistics. */
#include "data/data_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void dpo_load_opts_default(dpo_load_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->format = DPO_FMT_AUTO;
  o->labels = DPO_LABELS_BINARY;
  o->d = 0;
  o->dense = 0;
  o->idx_labels = NULL;
  o->idx_class = 0;
  o->idx_scale = 1.0 / 255.0;
}

void dpo_shard_destroy(dpo_shard_t *s) {
  if (!s) return;
  if (s->map) munmap(s->map, s->map_len);
  else free(s->X);
  free(s->rowptr);
  free(s->colind);
  free(s->val);
  free(s->y);
  free(s->norms);
  free(s);
}

/* The format table: auto-detection takes the first entry whose probe says yes, so the formats
 * known by their magic bytes come first and LIBSVM (which takes anything) last.  A new format is
 * one loader file defining its dpo__format_t plus one line here (doc/design.md). */
static const dpo__format_t *const dpo__formats[] = {
    &dpo__format_bin, &dpo__format_idx, &dpo__format_csv, &dpo__format_libsvm, NULL};

/* Local: the table entry of `path`, from its first bytes or its name. */
static int dpo__detect(const char *path, const dpo__format_t **fmt) {
  unsigned char m[8] = {0};
  int fd = open(path, O_RDONLY);
  if (fd < 0) return dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno));
  ssize_t k = dpo__pread_full(fd, m, sizeof m, 0);
  close(fd);
  if (k < 0) return dpo_err(DPO_EIO, "%s: read error: %s", path, strerror(errno));
  for (int i = 0; dpo__formats[i]; i++) {
    int r = dpo__formats[i]->probe(path, m, (size_t)k);
    if (r < 0) return r;
    if (r) {
      *fmt = dpo__formats[i];
      return DPO_OK;
    }
  }
  return dpo_err(DPO_EUNSUP, "%s: no loader recognises this file", path);
}

/* Local: the table entry for opts->format (explicit or detected). */
static int dpo__format_of(const char *path, const dpo_load_opts_t *o, const dpo__format_t **f) {
  *f = NULL;
  if (o->format == DPO_FMT_AUTO) return dpo__detect(path, f);
  for (int i = 0; dpo__formats[i]; i++)
    if (dpo__formats[i]->format == o->format) *f = dpo__formats[i];
  return *f ? DPO_OK : dpo_err(DPO_EINVAL, "%s: unknown format %d", path, (int)o->format);
}

int dpo_shard_width_declared(const char *path, const dpo_load_opts_t *opts, int *declared) {
  const dpo__format_t *f;
  *declared = 0;
  if (!path || !opts) return dpo_err(DPO_EINVAL, "dpo_shard_width_declared: NULL argument");
  if (opts->d > 0) return *declared = 1, DPO_OK;
  int rc = dpo__format_of(path, opts, &f);
  return rc ? rc : f->fixed_width(path, declared);
}

int dpo_shard_load(MPI_Comm comm, const char *path, const dpo_load_opts_t *opts,
                   dpo_shard_t **shard) {
  dpo_load_opts_t o;
  dpo_shard_t *s = NULL;
  const dpo__format_t *f = NULL;
  int st = DPO_OK;
  *shard = NULL;
  if (opts) o = *opts;
  else dpo_load_opts_default(&o);
  if (!path) st = dpo_err(DPO_EINVAL, "dpo_shard_load: no path");
  else if (o.d < 0) st = dpo_err(DPO_EINVAL, "%s: declared dimension %d < 0", path, (int)o.d);
  else if (o.labels != DPO_LABELS_BINARY && o.labels != DPO_LABELS_REAL &&
           o.labels != DPO_LABELS_CLASS)
    st = dpo_err(DPO_EINVAL, "%s: unknown label kind %d", path, (int)o.labels);
  if (!st && !(s = calloc(1, sizeof *s))) st = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
  if (!st) {
    snprintf(s->source, sizeof s->source, "%s", path);
    s->labels = o.labels;
    st = dpo__format_of(path, &o, &f);
  }
  st = dpo_agree(comm, st);
  if (st) goto fail;
  st = f->load(comm, path, &o, s);
  if (st) goto fail;
  if (o.dense && s->sparse) st = dpo_agree(comm, dpo__densify(s));
  if (!st && o.intercept && !s->intercept) st = dpo_agree(comm, dpo_shard_add_intercept(s));
  if (!st) st = dpo__shard_split(comm, path, &o, s);
  if (st) goto fail;
  if (o.valid_part || o.part_hi > o.part_lo) dpo_shard_drop_norms(s); /* rows dropped: not theirs */
  *shard = s;
  return DPO_OK;
fail:
  dpo_shard_destroy(s);
  return st;
}

int dpo_shard_add_intercept(dpo_shard_t *s) {
  if (!s) return dpo_err(DPO_EINVAL, "dpo_shard_add_intercept: NULL shard");
  if (s->intercept) return DPO_OK;
  if (s->d >= INT32_MAX - 1) return dpo_err(DPO_EINVAL, "%s: too many features", s->source);
  int32_t d = s->d, d1 = d + 1;
  if (s->sparse) {
    /* widened in place, as the dense block below: the text loaders' CSR arrays were copied
     * into new ones here, which held the shard twice (peak RSS 2x the data).  Each row's
     * entries move up by the bias entries of the rows before it, from the last row down, each
     * to an address at or above its own. */
    int64_t end = s->n > 0 ? s->rowptr[s->n] : 0;
    const size_t tot = (size_t)(end + s->n ? end + s->n : 1);
    int32_t *ci = realloc(s->colind, tot * sizeof *ci);
    if (!ci) return dpo_err(DPO_ENOMEM, "intercept column: out of memory");
    s->colind = ci; /* longer, the same entries: the shard stays valid if the next one fails */
    double *v = realloc(s->val, tot * sizeof *v);
    if (!v) return dpo_err(DPO_ENOMEM, "intercept column: out of memory");
    s->val = v;
    for (int64_t i = s->n - 1; i >= 0; i--) {
      const int64_t a = s->rowptr[i], len = end - a;
      memmove(ci + a + i, ci + a, (size_t)len * sizeof *ci);
      memmove(v + a + i, v + a, (size_t)len * sizeof *v);
      ci[a + i + len] = d; /* columns stay increasing: d is the largest */
      v[a + i + len] = 1.0;
      s->rowptr[i + 1] = a + i + len + 1;
      end = a;
    }
  } else {
    /* widened in place: realloc (large blocks are remapped, not copied) and the rows moved
     * up from the last one, each to an address at or above its own.  The binary loader
     * needs none of this (dpo_load_opts_t.intercept): it allocates the final size */
    size_t cnt = (size_t)(s->n ? s->n : 1) * (size_t)d1;
    const int ok = cnt / (size_t)d1 == (size_t)(s->n ? s->n : 1);
    /* a mapped block (dpo_load_opts_t.map) cannot grow: the rows are copied out of it */
    double *X = !ok ? NULL : s->map ? dpo__dense_alloc(cnt) : realloc(s->X, cnt * sizeof *X);
    if (!X) return dpo_err(DPO_ENOMEM, "intercept column: out of memory");
    const double *src = s->map ? s->X : X;
    for (int64_t i = s->n - 1; i >= 0; i--) {
      if (d > 0) memmove(X + i * d1, src + i * d, (size_t)d * sizeof *X);
      X[i * d1 + d] = 1.0;
    }
    if (s->map) munmap(s->map, s->map_len);
    s->map = NULL;
    s->map_len = 0;
    s->X = X;
  }
  s->d = d1;
  s->intercept = 1;
  return DPO_OK;
}

void dpo_shard_row_norms(const dpo_shard_t *s, double *l1, double *l2) {
  if (s->norms) { /* taken by the loader (dpo_load_opts_t.row_norms) */
    if (l1 && s->n) memcpy(l1, s->norms, (size_t)s->n * sizeof *l1);
    if (l2 && s->n) memcpy(l2, s->norms + s->n, (size_t)s->n * sizeof *l2);
    return;
  }
  const int32_t nf = s->d - (s->intercept ? 1 : 0); /* the features; the bias column last */
  if (!s->sparse) { /* in blocks of rows, into both arrays (scratch for the one not asked) */
    double t1[256], t2[256];
    for (int64_t i = 0; i < s->n; i += 256) {
      const size_t nr = (size_t)(s->n - i < 256 ? s->n - i : 256);
      dpo__dense_rows_norms(s->X + (size_t)i * (size_t)s->d, nr, (size_t)s->d, nf,
                            l1 ? l1 + i : t1, l2 ? l2 + i : t2);
    }
    return;
  }
  for (int64_t i = 0; i < s->n; i++) {
    double a = 0, b = 0;
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++) {
      if (s->colind[k] >= nf) continue;
      a += fabs(s->val[k]);
      b += s->val[k] * s->val[k];
    }
    if (l1) l1[i] = a;
    if (l2) l2[i] = sqrt(b);
  }
}

void dpo_shard_drop_norms(dpo_shard_t *s) {
  free(s->norms);
  s->norms = NULL;
}

void dpo_shard_scale_row(dpo_shard_t *s, int64_t i, double sc) {
  const int32_t nf = s->d - (s->intercept ? 1 : 0); /* the features, not the bias column */
  if (s->sparse) {
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++)
      if (s->colind[k] < nf) s->val[k] *= sc;
  } else {
    double *x = s->X + (size_t)i * s->d;
    for (int32_t j = 0; j < nf; j++) x[j] *= sc;
    if (s->norms) dpo__dense_row_norms(x, nf, &s->norms[i], &s->norms[s->n + i]);
  }
}

int dpo_shard_stats(MPI_Comm comm, const dpo_shard_t *s, dpo_shard_stats_t *st) {
  int rc = DPO_OK;
  double *l1 = NULL, *l2 = NULL;
  /* sums: n, nnz, n_pos, n_neg as int64; doubles: y_sum, l1_sum, l2_sum; max: y_max, -y_min,
   * l1_max, l2_max */
  int64_t li[4] = {s->n, 0, 0, 0}, gi[4];
  double ls[3] = {0, 0, 0}, gs[3];
  double lm[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, gm[4];
  memset(st, 0, sizeof *st);
  if (s->n > 0) {
    l1 = malloc((size_t)s->n * sizeof *l1);
    l2 = malloc((size_t)s->n * sizeof *l2);
    if (!l1 || !l2) rc = dpo_err(DPO_ENOMEM, "%s: stats: out of memory", s->source);
  }
  if (!rc) {
    dpo_shard_row_norms(s, l1, l2);
    if (s->sparse) {
      li[1] = s->rowptr[s->n];
    } else {
      for (size_t k = 0; k < (size_t)s->n * s->d; k++) li[1] += s->X[k] != 0.0;
    }
    for (int64_t i = 0; i < s->n; i++) {
      li[2] += s->y[i] > 0;
      li[3] += s->y[i] < 0;
      ls[0] += s->y[i];
      ls[1] += l1[i];
      ls[2] += l2[i];
      if (s->y[i] > lm[0]) lm[0] = s->y[i];
      if (-s->y[i] > lm[1]) lm[1] = -s->y[i];
      if (l1[i] > lm[2]) lm[2] = l1[i];
      if (l2[i] > lm[3]) lm[3] = l2[i];
    }
  }
  rc = dpo_agree(comm, rc);
  if (rc) goto out;
  if (MPI_Allreduce(li, gi, 4, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Allreduce(ls, gs, 3, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Allreduce(lm, gm, 4, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS)
    rc = dpo_err(DPO_EMPI, "%s: stats reduction failed", s->source);
  if (!rc) {
    st->n = gi[0];
    st->nnz = gi[1];
    st->n_pos = gi[2];
    st->n_neg = gi[3];
    st->d = s->d;
    st->sparse = s->sparse;
    double nn = gi[0] > 0 ? (double)gi[0] : 1.0;
    st->y_mean = gs[0] / nn;
    st->l1_mean = gs[1] / nn;
    st->l2_mean = gs[2] / nn;
    st->y_max = gm[0];
    st->y_min = -gm[1];
    st->l1_max = gm[2];
    st->l2_max = gm[3];
  }
  rc = dpo_agree(comm, rc);
out:
  free(l1);
  free(l2);
  return rc;
}
