/* libFuzzer target for one data loader (make fuzz; not part of make check).  Built once per
 * format with -DDPO_FUZZ_FMT=DPO_FMT_LIBSVM | DPO_FMT_CSV | DPO_FMT_IDX | DPO_FMT_BIN, or
 * -DDPO_FUZZ_RATINGS for the rating-triplet loader.  MPI is initialised once (a singleton, no
 * mpirun) and the loaders run on MPI_COMM_SELF; the input is written to a temporary file
 * (the loaders read files).  IDX: the first two bytes give the length L of the labels file
 * that follows them, the rest is the images file. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/data.h"
#include "dpopt/status.h"

static char dpo__dir[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const char *t = getenv("TMPDIR");
  snprintf(dpo__dir, sizeof dpo__dir, "%s/dpofuzz.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dpo__dir)) abort();
  return 0;
}

static void dpo__put(const char *path, const uint8_t *d, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (n && fwrite(d, 1, n, f) != n) abort();
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[300], lpath[300];
#ifdef DPO_FUZZ_RATINGS
  snprintf(path, sizeof path, "%s/r.txt", dpo__dir);
  dpo__put(path, data, size);
  dpo_ratings_t *r = NULL;
  if (dpo_ratings_load(MPI_COMM_SELF, path, 1, &r) == DPO_OK) dpo_ratings_destroy(r);
#else
  dpo_load_opts_t o;
  dpo_load_opts_default(&o);
  o.format = DPO_FUZZ_FMT;
  snprintf(path, sizeof path, "%s/in.%s", dpo__dir, o.format == DPO_FMT_CSV ? "csv" : "dat");
  if (o.format == DPO_FMT_IDX) {
    if (size < 2) return 0;
    size_t l = (size_t)data[0] | (size_t)data[1] << 8;
    if (l > size - 2) l = size - 2;
    snprintf(lpath, sizeof lpath, "%s/labels", dpo__dir);
    dpo__put(lpath, data + 2, l);
    dpo__put(path, data + 2 + l, size - 2 - l);
    o.idx_labels = lpath;
  } else {
    dpo__put(path, data, size);
  }
  dpo_shard_t *s = NULL;
  if (dpo_shard_load(MPI_COMM_SELF, path, &o, &s) == DPO_OK) {
    /* touch what a caller reads */
    double acc = 0;
    if (s->sparse)
      for (int64_t k = 0; k < s->rowptr[s->n]; k++) acc += s->val[k] + s->colind[k];
    else
      for (int64_t k = 0; k < s->n * (int64_t)s->d; k++) acc += s->X[k];
    for (int64_t i = 0; i < s->n; i++) acc += s->y[i];
    if (acc != acc) abort(); /* loaders refuse NaN */
    dpo_shard_destroy(s);
  }
#endif
  return 0;
}
