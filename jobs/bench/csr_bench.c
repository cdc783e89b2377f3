/* CSR gradient-pass benchmark (driver: jobs/bench/csr; issue 16).
 *
 * Two sparse logistic problems, each rank generating its share of the rows:
 *   a9a-like  n x 123, every entry nonzero with probability 0.11 (value 1, as a9a's one-hot
 *             encoding: ~13.5 nonzeros a row);
 *   wide      n x 1e5, 20 nonzeros a row at uniform random columns, values uniform in [-1, 1].
 * For each, in the same run, best of --reps, time = max over ranks:
 *   (a) a read loop over the same bytes the pass must stream: the values (double) and the
 *       column indices (int32) of every nonzero;
 *   (b) the fused logistic loss+gradient pass (dpo_kern_loss_grad on the CSR shard).
 * Ratio = bandwidth of (b) over (a), counting the same bytes.  Prints the kernel clone in
 * use and one "RESULT" line per problem.
 *
 *   mpirun -np P csr_bench [--n 1e6] [--wide-d 100000] [--wide-nnz 20] [--reps 7] [--seed 1]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/kernels.h"
#include "dpopt/status.h"
#include "bench_common.h"

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Rows [row0, row0 + nl) of problem `wide` (0: a9a-like); data depend on the global row only. */
static int make(dpo_shard_t *s, int wide, int64_t n, int64_t row0, int64_t nl, int32_t d,
                int nnz_row, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->n = nl;
  s->n_global = n;
  s->row0 = row0;
  s->d = d;
  s->sparse = 1;
  s->labels = DPO_LABELS_BINARY;
  int64_t cap = wide ? nl * nnz_row : nl * (int64_t)d / 8 + 64;
  s->rowptr = malloc((size_t)(nl + 1) * sizeof *s->rowptr);
  s->y = malloc((size_t)(nl ? nl : 1) * sizeof *s->y);
  s->colind = malloc((size_t)cap * sizeof *s->colind);
  s->val = malloc((size_t)cap * sizeof *s->val);
  if (!s->rowptr || !s->y || !s->colind || !s->val) return -1;
  int64_t p = 0;
  s->rowptr[0] = 0;
  for (int64_t i = 0; i < nl; i++) {
    uint64_t st = (uint64_t)(row0 + i) * 0xD1B54A32D192ED03ULL + seed + 1;
    if (wide) {
      for (int k = 0; k < nnz_row; k++) s->colind[p + k] = (int32_t)(xs_next(&st) % (uint64_t)d);
      qsort(s->colind + p, (size_t)nnz_row, sizeof *s->colind, cmp_i32);
      for (int k = 0; k < nnz_row; k++) s->val[p + k] = 2 * xs_unif(&st) - 1;
      p += nnz_row; /* a repeated column is a repeated entry: the kernel sums both */
    } else {
      for (int32_t j = 0; j < d; j++)
        if (xs_unif(&st) < 0.11) {
          if (p == cap) {
            cap *= 2;
            int32_t *c = realloc(s->colind, (size_t)cap * sizeof *c);
            if (c) s->colind = c;
            double *v = realloc(s->val, (size_t)cap * sizeof *v);
            if (v) s->val = v;
            if (!c || !v) return -1;
          }
          s->colind[p] = j;
          s->val[p++] = 1.0;
        }
    }
    s->rowptr[i + 1] = p;
    s->y[i] = xs_unif(&st) < 0.5 ? 1.0 : -1.0;
  }
  return 0;
}

static void unmake(dpo_shard_t *s) {
  free(s->rowptr);
  free(s->y);
  free(s->colind);
  free(s->val);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, size, rc = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double nd = 1e6, wd = 1e5;
  int reps = 7, wnnz = 20;
  uint64_t seed = 1;
  for (int a = 1; a < argc; a++) {
    if (a + 1 < argc && !strcmp(argv[a], "--n")) nd = strtod(argv[++a], NULL);
    else if (a + 1 < argc && !strcmp(argv[a], "--wide-d")) wd = strtod(argv[++a], NULL);
    else if (a + 1 < argc && !strcmp(argv[a], "--wide-nnz")) wnnz = atoi(argv[++a]);
    else if (a + 1 < argc && !strcmp(argv[a], "--reps")) reps = atoi(argv[++a]);
    else if (a + 1 < argc && !strcmp(argv[a], "--seed")) seed = strtoull(argv[++a], NULL, 10);
    else {
      if (rank == 0)
        fprintf(stderr, "usage: csr_bench [--n ROWS] [--wide-d COLS] [--wide-nnz K] [--reps R] "
                        "[--seed S]\n");
      MPI_Finalize();
      return 2;
    }
  }
  int64_t n = (int64_t)nd;
  if (n < size || wd < 1 || wnnz < 1 || reps < 1) {
    if (rank == 0) fprintf(stderr, "csr_bench: need n >= ranks, wide-d, wide-nnz, reps >= 1\n");
    MPI_Finalize();
    return 2;
  }
  int64_t nl = n / size + (rank < n % size),
          row0 = rank * (n / size) + (rank < n % size ? rank : n % size);
  if (rank == 0)
    printf("csr_bench: ranks=%d n=%ld reps=%d kernels=%s (best of reps, max over ranks)\n", size,
           (long)n, reps, dpo_kern_isa());
  for (int wide = 0; wide < 2 && !rc; wide++) {
    int32_t d = wide ? (int32_t)wd : 123;
    dpo_shard_t s;
    int ok = make(&s, wide, n, row0, nl, d, wnnz, seed) == 0, allok;
    double *x = malloc((size_t)d * sizeof *x), *g = malloc((size_t)(d + 1) * sizeof *g);
    ok = ok && x && g;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, comm);
    if (!allok) {
      if (rank == 0) fprintf(stderr, "csr_bench: out of memory\n");
      rc = 1;
    }
    uint64_t xsd = seed * 0x9E3779B97F4A7C15ULL + 7;
    for (int32_t j = 0; allok && j < d; j++) x[j] = (2 * xs_unif(&xsd) - 1) / 10;
    int64_t nnz = allok ? s.rowptr[nl] : 0, gnnz = 0;
    MPI_Allreduce(&nnz, &gnnz, 1, MPI_INT64_T, MPI_SUM, comm);
    double bytes = (double)gnnz * (sizeof(double) + sizeof(int32_t));
    double best_rd = 1e300, best_gr = 1e300, chk = 0;
    volatile double sink = 0;
    for (int r = 0; allok && r < reps; r++) {
      double t0, tl, tm, L = 0;
      MPI_Barrier(comm);
      t0 = MPI_Wtime();
      double sv = bench_read_sum(s.val, nnz);
      int64_t si = bench_read_sum_i32(s.colind, nnz);
      tl = MPI_Wtime() - t0;
      sink = sv + (double)si;
      MPI_Allreduce(&tl, &tm, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (tm < best_rd) best_rd = tm;
      MPI_Barrier(comm);
      memset(g, 0, (size_t)(d + 1) * sizeof *g);
      t0 = MPI_Wtime();
      int st = dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &s, x, NULL, 0, NULL, NULL, &L, g);
      tl = MPI_Wtime() - t0;
      if (st != DPO_OK) {
        fprintf(stderr, "[rank %d] dpo_kern_loss_grad: %s\n", rank, dpo_errmsg());
        rc = 1;
      }
      MPI_Allreduce(&tl, &tm, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (tm < best_gr) best_gr = tm;
      chk += L;
    }
    (void)sink;
    if (allok && rank == 0) {
      double br = bytes / best_rd / 1e9, bg = bytes / best_gr / 1e9;
      const char *name = wide ? "wide" : "a9a-like";
      printf("  %-8s %ld x %d, %.1f nnz/row, %.1f MB of values+indices\n", name, (long)n, (int)d,
             (double)gnnz / (double)n, bytes / 1e6);
      printf("    read loop (values+indices) %9.4f s  %7.2f GB/s\n", best_rd, br);
      printf("    CSR logistic gradient      %9.4f s  %7.2f GB/s  (%.1f ns/row)\n", best_gr, bg,
             best_gr / (double)n * size * 1e9);
      printf("    ratio gradient/read %.3f (software prefetch %ld bytes of values ahead, chosen at "
             "run time; 0: none)\n", bg / br, (long)dpo_kern_csr_prefetch_bytes());
      printf("RESULT problem=%s ranks=%d n=%ld d=%d nnz=%ld t_read=%.6f t_grad=%.6f "
             "gbs_read=%.3f gbs_grad=%.3f ratio=%.4f kernels=%s prefetch=%ld\n",
             name, size, (long)n, (int)d, (long)gnnz, best_rd, best_gr, br, bg, bg / br,
             dpo_kern_isa(), (long)dpo_kern_csr_prefetch_bytes());
    }
    unmake(&s);
    free(x);
    free(g);
  }
  MPI_Finalize();
  return rc;
}
