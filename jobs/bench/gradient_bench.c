/* Gradient-pass benchmark (driver: jobs/bench/gradient).
 *
 * Each rank generates its share of a dense n x d logistic data set, then measures in the same
 * run, best of --reps repeats, time = max over ranks:
 *   (a) a plain read-bandwidth loop over the same matrix (sum of all entries), and
 *   (b) the fused logistic loss+gradient pass (dpo_kern_loss_grad) followed by the
 *       MPI_Allreduce of (loss, gradient), i.e. what one full-gradient step costs, and
 *   (c) with P > 1 ranks, the same kernel on the same shards one rank after another
 *       (serial time on the same pages; in-run speedup = (c) / kernel time of (b)), and
 *   (d) with --classes K > 0 (default 10), the softmax model's local gradient pass
 *       (dpo_model_local_grad, model "softmax", class = global row mod K) on the same X, in
 *       views of 256 rows as the gradient oracle calls it, and
 *   (e) with --classes K > 0, the core's floating-point peak as OpenBLAS's dgemm reaches it
 *       on 256 x 256 matrices held in cache: the softmax pass does 4 K d flops a row (K d
 *       multiply-adds for the logits, K d for the gradient) against 8 d bytes, so at K = 10
 *       one core's pass is bound by arithmetic, not memory; its ceiling is the larger of the
 *       read loop's time and flops / peak (the "roofline"), printed beside the read-loop ratio.
 * Prints a human-readable summary and one machine-readable line starting with "RESULT".
 *
 *   mpirun -np P gradient_bench [--n 1e6] [--d 100] [--reps 7] [--seed 1] [--classes 10]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "dpopt/kernels.h"
#include "dpopt/model.h"
#include "dpopt/status.h"
#include "bench_common.h"

/* OpenBLAS (the project's BLAS, linked by configure): the dgemm peak is one core's, whatever
 * OPENBLAS_NUM_THREADS says; declared here, as Debian's cblas.h may be another BLAS's. */
void openblas_set_num_threads(int num_threads);

/* Receive the token from rank `from`, sleeping between polls so a waiting rank leaves its
 * core (and memory bandwidth) to the rank that is measuring. */
static void dpo_bench_wait(MPI_Comm comm, int from) {
  int flag = 0, tok;
  struct timespec ts = {0, 50000};
  while (MPI_Iprobe(from, 7, comm, &flag, MPI_STATUS_IGNORE), !flag) nanosleep(&ts, NULL);
  MPI_Recv(&tok, 1, MPI_INT, from, 7, comm, MPI_STATUS_IGNORE);
}

static void usage(void) {
  fprintf(stderr, "usage: gradient_bench [--n ROWS] [--d COLS] [--reps R] [--seed S] "
                  "[--classes K]\n");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, size, rc = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double nd = 1e6;
  int d = 100, reps = 7, K = 10;
  uint64_t seed = 1;
  for (int a = 1; a < argc; a++) {
    if (a + 1 < argc && !strcmp(argv[a], "--n")) nd = strtod(argv[++a], NULL);
    else if (a + 1 < argc && !strcmp(argv[a], "--d")) d = atoi(argv[++a]);
    else if (a + 1 < argc && !strcmp(argv[a], "--reps")) reps = atoi(argv[++a]);
    else if (a + 1 < argc && !strcmp(argv[a], "--seed")) seed = strtoull(argv[++a], NULL, 10);
    else if (a + 1 < argc && !strcmp(argv[a], "--classes")) K = atoi(argv[++a]);
    else {
      if (rank == 0) usage();
      MPI_Finalize();
      return 2;
    }
  }
  int64_t n = (int64_t)nd;
  if (n < size || d < 1 || reps < 1) {
    if (rank == 0) fprintf(stderr, "gradient_bench: need n >= ranks, d >= 1, reps >= 1\n");
    MPI_Finalize();
    return 2;
  }
  /* rows [row0, row0 + nl) of the global matrix */
  int64_t nl = n / size + (rank < n % size), row0 = rank * (n / size) + (rank < n % size ? rank : n % size);

  dpo_shard_t s = {0};
  s.n = nl;
  s.n_global = n;
  s.row0 = row0;
  s.d = d;
  s.labels = DPO_LABELS_BINARY;
  /* 64-byte aligned, as the library's loaders allocate X (dpo__dense_alloc) */
  void *xp = NULL;
  s.X = posix_memalign(&xp, 64, (size_t)(nl ? nl : 1) * (size_t)d * sizeof(double)) ? NULL : xp;
  s.y = malloc((size_t)nl * sizeof(double));
  double *x = malloc((size_t)d * sizeof(double));
  double *g = malloc((size_t)(d + 1) * sizeof(double));
  double *gg = malloc((size_t)(d + 1) * sizeof(double));
  int ok = s.X && s.y && x && g && gg, allok;
  MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, comm);
  if (!allok) {
    if (rank == 0) fprintf(stderr, "gradient_bench: out of memory (%ld x %d)\n", (long)n, d);
    rc = 1;
    goto out;
  }
  /* Data depends on the global row id only, so every rank count sees the same matrix.
   * Entries uniform in [-1, 1]; labels from a logistic model around a random x_true. */
  uint64_t xsd = seed * 0x9E3779B97F4A7C15ULL + 7;
  for (int j = 0; j < d; j++) x[j] = (2 * xs_unif(&xsd) - 1) / d;
  for (int64_t i = 0; i < nl; i++) {
    uint64_t st = (uint64_t)(row0 + i) * 0xD1B54A32D192ED03ULL + seed + 1;
    double *u = s.X + i * (int64_t)d, t = 0;
    for (int j = 0; j < d; j++) {
      u[j] = 2 * xs_unif(&st) - 1;
      t += u[j] * x[j] * 3;
    }
    s.y[i] = xs_unif(&st) < 1.0 / (1.0 + __builtin_exp(-t)) ? 1.0 : -1.0;
  }

  const double bytes = (double)n * d * sizeof(double); /* the matrix, all ranks */
  volatile double sink = 0;
  double best_bw = 1e300, best_gr = 1e300, best_comp = 1e300, best_solo = 1e300,
         best_rsolo = 1e300, best_views = 1e300, chk = 0, loss = 0;
  for (int r = 0; r < reps; r++) {
    double t0, t1, tl, tm, sum, gs;
    /* (a) read bandwidth */
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    sum = bench_read_sum(s.X, nl * (int64_t)d);
    t1 = MPI_Wtime();
    tl = t1 - t0;
    MPI_Allreduce(&tl, &tm, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&sum, &gs, 1, MPI_DOUBLE, MPI_SUM, comm); /* keeps the loop alive */
    chk += gs;
    if (tm < best_bw) best_bw = tm;

    /* (b) fused gradient pass + allreduce */
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    memset(g, 0, (size_t)(d + 1) * sizeof(double));
    int st = dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &s, x, NULL, 0, NULL, NULL, &g[d], g);
    double tc = MPI_Wtime() - t0;
    MPI_Allreduce(g, gg, d + 1, MPI_DOUBLE, MPI_SUM, comm);
    t1 = MPI_Wtime();
    if (st != DPO_OK) {
      fprintf(stderr, "[rank %d] dpo_kern_loss_grad: %s: %s\n", rank, dpo_strerror(st),
              dpo_errmsg());
      rc = 1;
    }
    tl = t1 - t0;
    MPI_Allreduce(&tl, &tm, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (tm < best_gr) best_gr = tm;
    MPI_Allreduce(&tc, &tm, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (tm < best_comp) best_comp = tm;
    loss = gg[d] / n;

    /* (b') the same pass as the oracle runs it: in views of DPO's 256-row chunks */
    MPI_Barrier(comm);
    memset(g, 0, (size_t)(d + 1) * sizeof(double));
    t0 = MPI_Wtime();
    for (int64_t i = 0; st == DPO_OK && i < nl; i += 256) {
      dpo_shard_t v = s;
      v.n = nl - i < 256 ? nl - i : 256;
      v.row0 = s.row0 + i;
      v.X = s.X + i * (int64_t)d;
      v.y = s.y + i;
      st = dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &v, x, NULL, 0, NULL, NULL, &g[d], g);
    }
    tl = MPI_Wtime() - t0;
    MPI_Allreduce(&tl, &tm, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (tm < best_views) best_views = tm;

    /* (c) the same shards one rank at a time (the others sleep, not spin): the serial time
     * of this problem on these very pages, so the speedup below is measured in one run and
     * does not mix two launches' memory placements. */
    if (size > 1) {
      double solo = 0, tsum;
      int tok = 0;
      MPI_Barrier(comm);
      if (rank > 0) dpo_bench_wait(comm, rank - 1);
      memset(g, 0, (size_t)(d + 1) * sizeof(double));
      t0 = MPI_Wtime();
      dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &s, x, NULL, 0, NULL, NULL, &g[d], g);
      solo = MPI_Wtime() - t0;
      t0 = MPI_Wtime();
      sink = bench_read_sum(s.X, nl * (int64_t)d); /* volatile: the sum is not optimized away */
      double rsolo = MPI_Wtime() - t0, rsum;
      if (rank + 1 < size) MPI_Send(&tok, 1, MPI_INT, rank + 1, 7, comm);
      MPI_Allreduce(&solo, &tsum, 1, MPI_DOUBLE, MPI_SUM, comm);
      MPI_Allreduce(&rsolo, &rsum, 1, MPI_DOUBLE, MPI_SUM, comm);
      if (tsum < best_solo) best_solo = tsum;
      if (rsum < best_rsolo) best_rsolo = rsum;
    }
  }
  (void)sink;

  /* (d) the softmax pass over the same X (K classes), best of reps, max over ranks */
  double best_sm = 1e300;
  if (K > 0 && !rc) {
    dpo_model_t *m = NULL;
    dpo_shard_t s2 = s;
    double *yk = malloc((size_t)(nl ? nl : 1) * sizeof(double));
    double *W = calloc((size_t)K * (size_t)d, sizeof(double));
    double *gk = malloc((size_t)K * (size_t)d * sizeof(double));
    int st = yk && W && gk ? dpo_model_create("softmax", 0.0, &m) : DPO_ENOMEM;
    if (st == DPO_OK) st = dpo_model_set_classes(m, K);
    if (st == DPO_OK) {
      for (int64_t i = 0; i < nl; i++) yk[i] = (double)((row0 + i) % K);
      s2.y = yk;
      s2.labels = DPO_LABELS_CLASS;
      uint64_t wsd = seed + 99;
      for (int64_t k = 0; k < (int64_t)K * d; k++) W[k] = (2 * xs_unif(&wsd) - 1) / d;
    }
    for (int r = 0; st == DPO_OK && r < reps; r++) {
      double L = 0, t0, tl, tm;
      memset(gk, 0, (size_t)K * (size_t)d * sizeof(double));
      MPI_Barrier(comm);
      t0 = MPI_Wtime();
      /* in 256-row views, as the oracle calls it (its fixed chunks, src/comm/oracle.c) */
      for (int64_t i = 0; st == DPO_OK && i < nl; i += 256) {
        dpo_shard_t v = s2;
        v.n = nl - i < 256 ? nl - i : 256;
        v.row0 = row0 + i;
        v.X = s2.X + i * (int64_t)d;
        v.y = s2.y + i;
        st = dpo_model_local_grad(m, &v, W, NULL, 0, NULL, NULL, &L, gk);
      }
      tl = MPI_Wtime() - t0;
      MPI_Allreduce(&tl, &tm, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (tm < best_sm) best_sm = tm;
    }
    if (st != DPO_OK) {
      fprintf(stderr, "[rank %d] softmax pass: %s: %s\n", rank, dpo_strerror(st), dpo_errmsg());
      rc = 1;
    }
    dpo_model_destroy(m);
    free(yk);
    free(W);
    free(gk);
  }
  /* (e) the dgemm peak, every rank at once (as the passes ran), best of reps, min over ranks */
  double peak = 0;
  if (K > 0 && !rc) {
    const int q = 256, calls = 16;
    double *A = malloc(sizeof(double) * 3 * (size_t)q * q), best = 1e300, gf = 0;
    openblas_set_num_threads(1);
    if (A) {
      uint64_t sd = seed + 7;
      for (int64_t k = 0; k < 3 * (int64_t)q * q; k++) A[k] = 2 * xs_unif(&sd) - 1;
    }
    for (int r = 0; r < reps + 1; r++) { /* the first call warms the caches */
      MPI_Barrier(comm); /* every rank, whatever its allocation did */
      double t0 = MPI_Wtime();
      for (int c = 0; A && c < calls; c++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, q, q, q, 1e-3, A, q,
                    A + (size_t)q * q, q, 0.5, A + 2 * (size_t)q * q, q);
      double tl = MPI_Wtime() - t0;
      if (r > 0 && tl < best) best = tl;
    }
    if (A) gf = 2.0 * q * q * (double)q * calls / best / 1e9;
    else rc = 1; /* out of memory: every rank learns it from the reduction below */
    MPI_Allreduce(&gf, &peak, 1, MPI_DOUBLE, MPI_MIN, comm);
    free(A);
  }
  int anyfail;
  MPI_Allreduce(&rc, &anyfail, 1, MPI_INT, MPI_MAX, comm);
  if (anyfail) {
    rc = 1;
    goto out;
  }
  if (rank == 0) {
    double bw = bytes / best_bw / 1e9, gr = bytes / best_gr / 1e9;
    printf("gradient_bench: ranks=%d n=%ld d=%d matrix=%.1f MB reps=%d (best of reps, max over "
           "ranks)\n",
           size, (long)n, d, bytes / 1e6, reps);
    if (dpo_kern_prefetch_mode() < 0)
      printf("  kernels: %s build, software prefetch not measured (passes too small)\n",
             dpo_kern_isa());
    else
      printf("  kernels: %s build, software prefetch %ld bytes ahead%s (chosen at run time; 0: "
             "none)\n", dpo_kern_isa(), (long)dpo_kern_prefetch_bytes(),
             dpo_kern_prefetch_touch() == 1   ? " on the first touch"
             : dpo_kern_prefetch_touch() == 2 ? " on the second touch"
                                              : "");
    printf("  read-bandwidth loop     %9.4f s  %7.2f GB/s   (checksum %.6g)\n", best_bw, bw,
           chk / reps);
    printf("  fused logistic gradient %9.4f s  %7.2f GB/s   (kernel only %.4f s; mean loss "
           "%.6f)\n",
           best_gr, gr, best_comp, loss);
    printf("  ratio gradient/bandwidth %.3f\n", gr / bw);
    printf("  the same in 256-row views, as the oracle runs it %9.4f s  %7.2f GB/s   ratio "
           "%.3f\n", best_views, bytes / best_views / 1e9, best_bw / best_views);
    /* per rank: its rows' flops at the peak one core reached, against its share of the read */
    double sm_flops = 4.0 * K * (double)d * (double)n / size, sm_roof = 0;
    if (K > 0) {
      double t_flop = peak > 0 ? sm_flops / (peak * 1e9) : 0;
      sm_roof = (t_flop > best_bw ? t_flop : best_bw) / best_sm;
      printf("  softmax pass, %d classes %9.4f s  %7.2f GB/s   ratio to the read loop %.3f\n", K,
             best_sm, bytes / best_sm / 1e9, best_bw / best_sm);
      printf("  softmax arithmetic      %7.2f GFLOP/s a rank (4 K d flops a row); dgemm peak of\n"
             "  one core in this run %.2f GFLOP/s: flops at that peak take %.4f s, the read loop\n"
             "  %.4f s; ratio to that ceiling (roofline) %.3f\n",
             sm_flops / best_sm / 1e9, peak, t_flop, best_bw, sm_roof);
    }
    if (size > 1)
      printf("  same shards one rank at a time: kernel %.4f s, read loop %.4f s\n"
             "  in-run speedup %.2f (the read loop's own in-run scaling, the ceiling for a\n"
             "  memory-bound pass on this machine now: %.2f)\n",
             best_solo, best_rsolo, best_solo / best_comp, best_rsolo / best_bw);
    printf("RESULT ranks=%d n=%ld d=%d t_read=%.6f t_grad=%.6f t_kernel=%.6f gbs_read=%.3f "
           "gbs_grad=%.3f ratio=%.4f t_solo=%.6f t_read_solo=%.6f kernels=%s prefetch=%ld "
           "pf_touch=%d t_views=%.6f ratio_views=%.4f t_softmax=%.6f ratio_softmax=%.4f "
           "gflops_peak=%.3f roofline_softmax=%.4f\n",
           size, (long)n, d, best_bw, best_gr, best_comp, bw, gr, gr / bw,
           size > 1 ? best_solo : best_comp, size > 1 ? best_rsolo : best_bw, dpo_kern_isa(),
           (long)dpo_kern_prefetch_bytes(), dpo_kern_prefetch_touch(), best_views,
           best_bw / best_views, K > 0 ? best_sm : 0.0,
           K > 0 ? best_bw / best_sm : 0.0, peak, sm_roof);
  }
out:
  free(s.X);
  free(s.y);
  free(x);
  free(g);
  free(gg);
  MPI_Finalize();
  return rc;
}
