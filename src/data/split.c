/* The validation split by row content (dpo_load_opts_t.valid_part, dpopt/data.h): a row's part
 * is a hash of its label and its nonzero features (index and value bits) only.  Adding or
 * removing one row therefore changes exactly one part by that row, whatever the rank count,
 * format or position, which is what lets a tune charge a repetition the larger of its training
 * and its score (disjoint rows, doc/design.md "Tune").  The hash is public and fixed: the
 * split needs no secret, only independence of the other rows. */
#include "data/data_internal.h"

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
  if (s->sparse) {
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++)
      if (s->val[k] != 0) h = mix(mix(h, (uint64_t)s->colind[k]), bits(s->val[k]));
  } else {
    const double *x = s->X + (size_t)i * s->d;
    for (int32_t j = 0; j < s->d; j++)
      if (x[j] != 0) h = mix(mix(h, (uint64_t)j), bits(x[j]));
  }
  return (double)(h >> 11) * 0x1p-53 < f;
}

int dpo__shard_split(MPI_Comm comm, const char *path, const dpo_load_opts_t *o, dpo_shard_t *s) {
  if (!o->valid_part) return DPO_OK;
  if (!(o->valid_frac > 0 && o->valid_frac < 1) || o->valid_part < 1 || o->valid_part > 2)
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "%s: validation fraction %g must be in (0, 1)",
                                   path, o->valid_frac));
  int64_t j = 0, nz = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (in_valid(s, i, o->valid_frac) != (o->valid_part == 2)) continue;
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
  return dpo__finish_rows(comm, path, s);
}
