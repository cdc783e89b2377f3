/* The double-double reduction's fold at <= 12 ranks (src/comm/reduce.c): gathered in one piece
 * into the caller's workspace (dpo__dd_reduce_ws, the oracle's) or in pieces of 4096 pairs
 * (dpo__dd_reduce, a caller without one), the root gets the same bits as an independent fold
 * of every rank's buffer in the documented order (the last rank's buffer, then ranks size-2 ..
 * 0 added), and the status pair's minimum, at 1 to 4 ranks and for buffers of 1 to 9000 pairs
 * (one piece, exactly one, several). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/reduce.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"

/* rank r's buffer: values of varied magnitudes and signs, so the low words matter */
static void fill(dpo__dd_t *b, int k, int r, int st) {
  uint64_t z = 0x9E3779B97F4A7C15ull * (uint64_t)(r + 1) + (uint64_t)k;
  for (int j = 0; j < k; j++) {
    z ^= z << 13, z ^= z >> 7, z ^= z << 17;
    double u = (double)(z >> 11) / 9007199254740992.0 - 0.5;
    b[j].hi = ldexp(u, (int)(z % 61) - 30);
    b[j].lo = ldexp(u, (int)(z % 61) - 90);
  }
  b[k].hi = (double)st;
  b[k].lo = 0.0;
}

static int same(const dpo__dd_t *a, const dpo__dd_t *b, int n) {
  return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static void one_case(MPI_Comm c, int k) {
  int rank, size;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  const int k1 = k + 1;
  dpo__dd_t *mine = malloc((size_t)k1 * sizeof *mine), *a = malloc((size_t)k1 * sizeof *a);
  dpo__dd_t *b = malloc((size_t)k1 * sizeof *b), *all = malloc((size_t)size * k1 * sizeof *all);
  dpo__dd_t *ref = malloc((size_t)k1 * sizeof *ref), *ws = malloc((size_t)size * k1 * sizeof *ws);
  /* the status: rank 1 fails at k = 4096 (the minimum is kept) */
  fill(mine, k, rank, rank == 1 && k == 4096 ? DPO_EFORMAT : DPO_OK);
  MPI_Allgather(mine, 2 * k1, MPI_DOUBLE, all, 2 * k1, MPI_DOUBLE, c);
  /* the independent fold */
  for (int p = 0; p < k1; p++) ref[p] = all[(size_t)(size - 1) * k1 + p];
  for (int r = size - 2; r >= 0; r--) {
    for (int p = 0; p < k; p++) {
      const dpo__dd_t *x = &all[(size_t)r * k1 + p];
      double s = ref[p].hi + x->hi, bb = s - ref[p].hi;
      double e = (ref[p].hi - (s - bb)) + (x->hi - bb);
      e += ref[p].lo + x->lo;
      ref[p].hi = s + e;
      ref[p].lo = e - (ref[p].hi - s);
    }
    if (all[(size_t)r * k1 + k].hi < ref[k].hi) ref[k] = all[(size_t)r * k1 + k];
  }
  memcpy(a, mine, (size_t)k1 * sizeof *a);
  memcpy(b, mine, (size_t)k1 * sizeof *b);
  T_CHECK(dpo__dd_reduce(c, a, k, 0, 0) == DPO_OK, "pieces, k = %d", k);
  T_CHECK(dpo__dd_reduce_ws(c, b, k, 0, 0, rank == 0 ? ws : NULL, k1) == DPO_OK,
          "workspace, k = %d", k);
  if (rank == 0) {
    T_CHECK(same(a, ref, k1), "pieces: the fold's bits at %d ranks, k = %d", size, k);
    T_CHECK(same(b, ref, k1), "workspace: the fold's bits at %d ranks, k = %d", size, k);
  }
  /* a workspace too small for the buffer: the pieces; allreduce: every rank the root's */
  memcpy(b, mine, (size_t)k1 * sizeof *b);
  T_CHECK(dpo__dd_reduce_ws(c, b, k, 0, 1, rank == 0 ? ws : NULL, k) == DPO_OK, "small ws");
  T_CHECK(same(b, ref, k1), "allreduce, small workspace: the bits at %d ranks, k = %d", size,
          k);
  free(mine), free(a), free(b), free(all), free(ref), free(ws);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  static const int ks[] = {1, 3, 126, 4095, 4096, 9000};
  for (int p = 1; p <= world && p <= DPO__FOLD_RANKS; p++) {
    MPI_Comm c = dpo_t_subcomm(p);
    if (c != MPI_COMM_NULL) {
      for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) one_case(c, ks[i]);
      MPI_Comm_free(&c);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return dpo_t_finish("test_reduce");
}
