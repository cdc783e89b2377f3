/* Shared row bookkeeping of the loaders: row count and offset over comm (with per-party files
 * that is the party's own communicator: dpo__run_parties_load), the empty-file and
 * more-ranks-than-rows checks, aligned dense storage, CSR -> dense.  The bottom of the data
 * room with lines.c: every loader and shard.c call down into it; it calls nothing above. */
#include "data/data_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int dpo__finish_rows(MPI_Comm comm, const char *path, dpo_shard_t *s) {
  int size, rank;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int64_t n = s->n, tot = 0, before = 0;
  if (MPI_Allreduce(&n, &tot, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Exscan(&n, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "%s: row count reduction failed", path));
  if (rank == 0) before = 0;
  s->n_global = tot;
  s->row0 = before;
  int st = DPO_OK;
  if (tot == 0) st = dpo_err(DPO_EFORMAT, "%s: empty file: no data rows", path);
  else if (tot < size)
    st = dpo_err(DPO_ERANKS, "%s: %lld rows for %d ranks: more ranks than rows", path,
                 (long long)tot, size);
  return dpo_agree(comm, st);
}

double *dpo__dense_alloc(size_t count) {
  void *p = NULL;
  if (count > SIZE_MAX / sizeof(double)) return NULL;
  size_t len = (count ? count : 1) * sizeof(double);
  if (posix_memalign(&p, 64, len)) return NULL;
  /* a large block's pages made present in one call (advice: refused by old kernels, no
   * harm): the loader's read into fresh memory otherwise takes one page fault per 4 KiB */
  const uintptr_t pg = 4096, a = ((uintptr_t)p + pg - 1) & ~(pg - 1), e = ((uintptr_t)p + len) & ~(pg - 1);
#ifdef MADV_HUGEPAGE
  /* 2 MiB pages where the kernel allows them: 512x fewer pages to fault in and account */
  if (len >= ((size_t)8 << 20) && e > a) madvise((void *)a, e - a, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
  if (len >= ((size_t)8 << 20) && e > a) madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#endif
  return p;
}

int dpo__densify(dpo_shard_t *s) {
  if (!s->sparse) return DPO_OK;
  size_t cnt = (size_t)s->n * (size_t)s->d;
  double *X = dpo__dense_alloc(cnt);
  if (X) memset(X, 0, (cnt ? cnt : 1) * sizeof *X);
  if (!X) return dpo_err(DPO_ENOMEM, "%s: out of memory for dense %lld x %d", s->source,
                         (long long)s->n, (int)s->d);
  for (int64_t i = 0; i < s->n; i++)
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++)
      X[(size_t)i * s->d + s->colind[k]] = s->val[k];
  free(s->rowptr);
  free(s->colind);
  free(s->val);
  s->rowptr = NULL;
  s->colind = NULL;
  s->val = NULL;
  s->X = X;
  s->sparse = 0;
  return DPO_OK;
}
