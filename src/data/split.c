/* The validation split by row content (dpo_load_opts_t.valid_part, dpopt/data.h): a row's part
 * is a hash of its label and its nonzero features (index and value bits) only.  Adding or
 * removing one row therefore changes exactly one part by that row, whatever the rank count,
 * format or position, which is what lets a tune charge a repetition the larger of its training
 * and its score (disjoint rows, doc/design.md "Tune").  The hash is public and fixed: the
 * split needs no secret, only independence of the other rows. */
#include "data/data_internal.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h, uint64_t v) { /* splitmix64 finalizer over a running state */
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

static uint64_t bits(double x) {
  uint64_t u;
  if (x == 0) x = 0; /* -0 and +0 alike */
  memcpy(&u, &x, sizeof u);
  return u;
}

/* 1 if row i falls in the validation fraction f */
static int in_valid(const dpo_shard_t *s, int64_t i, double f) {
  uint64_t h = mix(0x64706f73706c6974ULL, bits(s->y[i]));
  const int32_t nf = s->d - (s->intercept ? 1 : 0); /* the bias column is no feature */
  if (s->sparse) {
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++)
      if (s->val[k] != 0 && s->colind[k] < nf)
        h = mix(mix(h, (uint64_t)s->colind[k]), bits(s->val[k]));
  } else {
    const double *x = s->X + (size_t)i * s->d;
    for (int32_t j = 0; j < nf; j++)
      if (x[j] != 0) h = mix(mix(h, (uint64_t)j), bits(x[j]));
  }
  return (double)(h >> 11) * 0x1p-53 < f;
}

/* 1 if global row g falls in [lo, hi) of the keyed draw (dpo_load_opts_t.part_key) */
static int in_part(uint64_t key, int64_t g, double lo, double hi) {
  double u = (double)(mix(mix(0x706172746974696fULL, key), (uint64_t)g) >> 11) * 0x1p-53;
  return u >= lo && u < hi;
}

/* Keep the local rows with keep[i] set, in order (local). */
static void keep_rows(dpo_shard_t *s, const unsigned char *keep) {
  int64_t j = 0, nz = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (!keep[i]) continue;
    s->y[j] = s->y[i];
    if (s->sparse) {
      int64_t b = s->rowptr[i], e = s->rowptr[i + 1];
      memmove(s->colind + nz, s->colind + b, (size_t)(e - b) * sizeof *s->colind);
      memmove(s->val + nz, s->val + b, (size_t)(e - b) * sizeof *s->val);
      s->rowptr[j] = nz; /* row j < i: its start was already read */
      nz += e - b;
    } else if (j != i) {
      memmove(s->X + (size_t)j * s->d, s->X + (size_t)i * s->d, (size_t)s->d * sizeof *s->X);
    }
    j++;
  }
  if (s->sparse) s->rowptr[j] = nz;
  s->n = j;
}

int dpo__shard_split(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s) {
  const int part = o->part_hi > o->part_lo;
  if (!o->valid_part && !part) return DPO_OK;
  if (o->valid_part &&
      (!(o->valid_frac > 0 && o->valid_frac < 1) || o->valid_part < 1 || o->valid_part > 2))
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "%s: validation fraction %g must be in (0, 1)",
                                   path, o->valid_frac));
  if (part && !(o->part_lo >= 0 && o->part_hi <= 1))
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "%s: row part [%g, %g) not within [0, 1)", path,
                                   o->part_lo, o->part_hi));
  /* the global index of local row 0: the ranks hold consecutive blocks in rank order */
  int64_t g0 = 0, n = s->n;
  if (part) {
    MPI_Exscan(&n, &g0, 1, MPI_INT64_T, MPI_SUM, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) g0 = 0;
  }
  unsigned char *keep = malloc((size_t)(s->n > 0 ? s->n : 1));
  if (!keep) return dpo_agree(comm, dpo_err(DPO_ENOMEM, "%s: out of memory", path));
  for (int64_t i = 0; i < s->n; i++)
    keep[i] = (!o->valid_part || in_valid(s, i, o->valid_frac) == (o->valid_part == 2)) &&
              (!part || in_part(o->part_key, g0 + i, o->part_lo, o->part_hi));
  keep_rows(s, keep);
  free(keep);
  return dpo__finish_rows(comm, path, s);
}
