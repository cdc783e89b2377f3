/* Secure-aggregation release benchmark (driver: jobs/bench/secagg; issue 12).
 *
 * One release of a d-vector sum over P ranks, two ways, in the same run on the same vectors:
 *   central: MPI_Reduce of the doubles to rank 0, then rank 0 adds N(0, sigma_c^2) to every
 *            coordinate (dpo_mech_gaussian, the exact discrete sampler on the grid);
 *   secagg:  dpo_secagg_round: fixed-point encoding with randomized rounding, a discrete
 *            Gaussian share on every rank (one party per rank), pairwise ChaCha20 masks with
 *            the rank's neighbours in the mask graph (dpo_secagg_set_graph against --collude),
 *            MPI_Reduce of 32- or 64-bit words (dpo_secagg_word for a batch of every rank's
 *            --rows), decoding on rank 0.
 * sigma_c is the central noise of the same rho (rho-zCDP: sigma_c = delta2 / sqrt(2 rho));
 * the secagg share comes from dpo_secagg_params(delta2, d, P, collude, rho).
 * (1) wall: each release timed between barriers (max over ranks); --reps releases each,
 *     interleaved, median and best reported.  On fewer cores than ranks this measures the
 *     machine: the P shares are drawn one after the other on the shared cores.
 * (2) critical path with a core per party: every phase run alone, its THREAD CPU time
 *     (CLOCK_THREAD_CPUTIME_ID: not counting time the rank waits for a core) on every rank,
 *     median over --reps per rank; the communication (the reduce of d doubles or d uint64)
 *     as the best wall time of the reduce alone between barriers over the repeats (the
 *     median, printed as well, also counts ranks that wait for a core after the barrier on
 *     a shared machine).  Then
 *       central = max_r grad_r + reduce_f64 + noise_0 (rank 0's d samples)
 *       secagg  = max_r (grad_r + encode_r + share_r + masks_r) + reduce_u64 + decode_0
 *     per release (grad = 0) and per STEP, where every rank first computes its gradient sum:
 *     a logistic loss+gradient pass with per-example L2 clipping (dpo_kern_loss_grad, as the
 *     oracle runs it, row norms precomputed) over a synthetic sparse shard of --rows rows
 *     (default 1e4 per party) x d columns with --nnz nonzeros per row at uniform columns
 *     (default 100, 1% dense; values uniform in [-1, 1]).
 * (3) whole steps, wall time: every rank's gradient pass then the release (central: reduce
 *     of doubles + rank 0's noise; secagg: dpo_secagg_round), between barriers, interleaved,
 *     max over ranks; the median over --reps of the per-repeat ratio.  Beside it, the CPU
 *     time of a step, which a loaded machine does not inflate: (a) the work, summed over
 *     ranks, from (2)'s phases (central: every grad + rank 0's noise; secagg: every grad +
 *     encode + share + masks, + rank 0's decode; the reduces left out); (b) each rank's
 *     thread CPU time over the whole measured step, summed over ranks (median over --reps),
 *     which also counts MPI's polling while a rank waits in the reduce.
 * Keys are set up once (dpo_secagg_create) outside the timing, as in a run.
 * Prints one "RESULT" line.
 *
 *   mpirun -np P secagg_bench [--d 1e4] [--reps 50] [--rho 0.01] [--collude 1] [--rows 1e4]
 *                             [--nnz 100]
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpopt/data.h"
#include "dpopt/kernels.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"
#include "bench_common.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    int rc_ = (call);                                                                        \
    if (rc_) {                                                                               \
      fprintf(stderr, "secagg_bench: %s: %s\n", #call, dpo_errmsg());                        \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
  } while (0)

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}
/* the time of the slowest rank: what the release costs the run */
static double tmax(MPI_Comm c, double t) {
  double m;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, c);
  return m;
}

/* this thread's CPU time: what the phase costs a rank that has its own core */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* nl rows x d, nnz nonzeros a row at uniform columns (sorted; a repeat is summed), values
 * uniform in [-1, 1], labels +-1: this rank's shard for the gradient pass */
static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}
static int make_shard(dpo_shard_t *s, int64_t nl, int32_t d, int nnz, int rank) {
  memset(s, 0, sizeof *s);
  s->n = nl;
  s->n_global = nl;
  s->d = d;
  s->sparse = 1;
  s->labels = DPO_LABELS_BINARY;
  s->rowptr = malloc((size_t)(nl + 1) * sizeof *s->rowptr);
  s->y = malloc((size_t)(nl ? nl : 1) * sizeof *s->y);
  s->colind = malloc((size_t)(nl * nnz + 1) * sizeof *s->colind);
  s->val = malloc((size_t)(nl * nnz + 1) * sizeof *s->val);
  if (!s->rowptr || !s->y || !s->colind || !s->val) return -1;
  uint64_t st = 0xD1B54A32D192ED03ULL * (uint64_t)(rank + 1);
  s->rowptr[0] = 0;
  for (int64_t i = 0; i < nl; i++) {
    int64_t p = i * nnz;
    for (int k = 0; k < nnz; k++) s->colind[p + k] = (int32_t)(xs_next(&st) % (uint64_t)d);
    qsort(s->colind + p, (size_t)nnz, sizeof *s->colind, cmp_i32);
    for (int k = 0; k < nnz; k++) s->val[p + k] = 2 * xs_unif(&st) - 1;
    s->rowptr[i + 1] = p + nnz;
    s->y[i] = xs_unif(&st) < 0.5 ? 1.0 : -1.0;
  }
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD; /* a benchmark program, not the library */
  int rank, P;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  int64_t d = 10000;
  int reps = 50, collude = 1, nnz = 100;
  double rho = 0.01, rows = 1e4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--d")) d = (int64_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rho")) rho = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--collude")) collude = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rows")) rows = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--nnz")) nnz = atoi(argv[i + 1]);
    else {
      if (rank == 0) fprintf(stderr, "secagg_bench: unknown option %s\n", argv[i]);
      MPI_Abort(comm, 2);
    }
  }
  if (reps < 1 || d < 1 || d > INT32_MAX || rows < 1 || nnz < 1) MPI_Abort(comm, 2);
  if (collude >= P) collude = P - 1;

  /* each rank's sum: |v_j| <= 1/sqrt(d), so ||v||_2 <= 1 = delta2 */
  const double delta2 = 1.0;
  double *v = malloc((size_t)d * sizeof *v), *tot = malloc((size_t)d * sizeof *tot);
  uint64_t *x = malloc((size_t)d * sizeof *x), *scr = malloc((size_t)d * sizeof *scr);
  uint32_t *x32 = malloc((size_t)d * sizeof *x32);
  double *tc = malloc((size_t)reps * sizeof *tc), *ts = malloc((size_t)reps * sizeof *ts);
  if (!v || !tot || !x || !x32 || !scr || !tc || !ts) MPI_Abort(comm, 3);
  uint64_t s = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(rank + 1);
  for (int64_t j = 0; j < d; j++) v[j] = (2 * xs_unif(&s) - 1) / sqrt((double)d);

  dpo_rng_t *rng = NULL;
  CHECK(dpo_rng_create(1, 7, (uint64_t)rank, &rng)); /* seeded: a benchmark, not a release */
  double gamma, rho_sa, denc;
  uint64_t sigma;
  CHECK(dpo_secagg_params(delta2, d, P, collude, rho, &gamma, &sigma, &rho_sa, &denc));
  const double sigma_c = delta2 / sqrt(2 * rho);
  dpo_secagg_t *sa = NULL;
  CHECK(dpo_secagg_create(comm, 1, rng, &sa));
  /* as a run sets them: the mask graph against `collude` corrupt ranks (one party per rank)
   * and the word width of a batch of every rank's rows (run_parties.c, sco_common.c) */
  CHECK(dpo_secagg_set_graph(sa, collude));
  const int deg = dpo_secagg_degree(sa);
  int bits = 64;
  CHECK(dpo_secagg_word((int64_t)rows * P, delta2, gamma, P, P, d, sigma, 0, &bits));

  /* warm-up: one of each (page faults, MPI connections) */
  CHECK(dpo_secagg_round(sa, v, d, gamma, sigma, bits, 1, tot, NULL));
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : v, rank == 0 ? tot : NULL, (int)d, MPI_DOUBLE, MPI_SUM, 0,
             comm);

  for (int r = 0; r < reps; r++) {
    /* central */
    memcpy(tot, v, (size_t)d * sizeof *tot);
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : tot, tot, (int)d, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) CHECK(dpo_mech_gaussian(rng, sigma_c, tot, d));
    tc[r] = tmax(comm, MPI_Wtime() - t0);
    /* secagg */
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    CHECK(dpo_secagg_round(sa, v, d, gamma, sigma, bits, 1, tot, NULL));
    ts[r] = tmax(comm, MPI_Wtime() - t0);
  }
  double ratios[2] = {0, 0};
  double *rr = malloc((size_t)reps * sizeof *rr);
  for (int r = 0; r < reps; r++) rr[r] = ts[r] / tc[r];
  ratios[0] = median(rr, reps);
  double mc = median(tc, reps), ms = median(ts, reps);
  double bc = tc[0], bs = ts[0]; /* sorted by median() */
  ratios[1] = bs / bc;

  /* (2) the phases alone: thread CPU time per rank (median over reps), and the reduces' wall
   * time (median over reps of the max over ranks).  0 encode, 1 share (d samples), 2 masks
   * (P - 1 pairs), 3 reduce u64, 4 decode (rank 0), 5 central noise (rank 0), 6 reduce f64,
   * 7 gradient pass over this rank's shard. */
  enum { ENC, SHARE, MASK, RED_U, DEC, NOISE_C, RED_D, GRAD, NPH };
  const int64_t nl = (int64_t)rows;
  dpo_shard_t sh;
  double *xm = malloc((size_t)d * sizeof *xm), *g = malloc((size_t)(d + 1) * sizeof *g),
         *l1 = malloc((size_t)nl * sizeof *l1), *l2 = malloc((size_t)nl * sizeof *l2);
  if (!xm || !g || !l1 || !l2 || make_shard(&sh, nl, (int32_t)d, nnz, rank)) MPI_Abort(comm, 3);
  dpo_shard_row_norms(&sh, l1, l2);
  for (int64_t j = 0; j < d; j++) xm[j] = (2 * xs_unif(&s) - 1) / 10;
  const dpo_clip_t clip = {DPO_CLIP_L2, 1.0};
  double *tp = malloc((size_t)NPH * reps * sizeof *tp),
         *tw = malloc((size_t)NPH * reps * sizeof *tw);
  /* this rank's median CPU time of each phase; wall: median (best) over reps of the max over
   * ranks */
  double cpu[NPH], wall[NPH], wbest[NPH];
  if (!tp || !tw) MPI_Abort(comm, 3);
  for (int r = 0; r < reps; r++) /* the phases interleaved: each rep sees the same machine */
    for (int k = 0; k < NPH; k++) {
      if (k == NOISE_C || k == RED_D) memcpy(tot, v, (size_t)d * sizeof *tot);
      if (k == GRAD) memset(g, 0, (size_t)(d + 1) * sizeof *g);
      MPI_Barrier(comm);
      double t0 = MPI_Wtime(), c0 = cpu_now();
      if (k == ENC) CHECK(dpo_secagg_encode(rng, v, gamma, d, x));
      else if (k == SHARE)
        for (int64_t j = 0; j < d; j++) {
          int64_t z;
          CHECK(dpo_mech_discrete_gaussian(rng, sigma, &z));
          x[j] += (uint64_t)z;
        }
      else if (k == MASK) {
        unsigned char key[32];
        memset(key, rank + 1, sizeof key); /* the cost of a mask does not depend on the key */
        if (bits == 32)
          for (int64_t j = 0; j < d; j++) x32[j] = (uint32_t)x[j];
        for (int q = 0; q < deg; q++)
          CHECK(bits == 32 ? dpo_secagg_mask32(key, (uint64_t)r, 1, d, x32, (uint32_t *)scr)
                           : dpo_secagg_mask(key, (uint64_t)r, 1, d, x, scr));
      } else if (k == RED_U) {
        void *w = bits == 32 ? (void *)x32 : (void *)x;
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : w, w, (int)d, bits == 32 ? MPI_UINT32_T : MPI_UINT64_T,
                   MPI_SUM, 0, comm);
      } else if (k == DEC) {
        if (rank == 0)
          for (int64_t j = 0; j < d; j++)
            tot[j] = (bits == 32 ? (double)(int32_t)x32[j] : (double)(int64_t)x[j]) * gamma;
      } else if (k == NOISE_C) {
        if (rank == 0) CHECK(dpo_mech_gaussian(rng, sigma_c, tot, d));
      } else if (k == RED_D)
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : tot, tot, (int)d, MPI_DOUBLE, MPI_SUM, 0, comm);
      else {
        double L = 0;
        CHECK(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &sh, xm, NULL, 0, &clip, l2, &L, g));
      }
      tp[k * reps + r] = cpu_now() - c0;
      tw[k * reps + r] = tmax(comm, MPI_Wtime() - t0);
    }
  /* (3) whole steps, wall time between barriers (max over ranks), interleaved: central = the
   * gradient pass + MPI_Reduce of doubles + rank 0's noise; secagg = the gradient pass +
   * dpo_secagg_round (encode, share, masks, reduce, decode) */
  double *wc = malloc((size_t)reps * sizeof *wc), *wsg = malloc((size_t)reps * sizeof *wsg),
         *uc = malloc((size_t)reps * sizeof *uc), *us = malloc((size_t)reps * sizeof *us);
  if (!wc || !wsg || !uc || !us) MPI_Abort(comm, 3);
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++) {
      double L = 0;
      memset(g, 0, (size_t)(d + 1) * sizeof *g);
      MPI_Barrier(comm);
      double t0 = MPI_Wtime(), c0 = cpu_now();
      CHECK(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &sh, xm, NULL, 0, &clip, l2, &L, g));
      if (k == 0) {
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : g, g, (int)d, MPI_DOUBLE, MPI_SUM, 0, comm);
        if (rank == 0) CHECK(dpo_mech_gaussian(rng, sigma_c, g, d));
        uc[r] = cpu_now() - c0;
        wc[r] = tmax(comm, MPI_Wtime() - t0);
        MPI_Allreduce(MPI_IN_PLACE, &uc[r], 1, MPI_DOUBLE, MPI_SUM, comm);
      } else {
        CHECK(dpo_secagg_round(sa, g, d, gamma, sigma, bits, 1, tot, NULL));
        us[r] = cpu_now() - c0;
        wsg[r] = tmax(comm, MPI_Wtime() - t0);
        MPI_Allreduce(MPI_IN_PLACE, &us[r], 1, MPI_DOUBLE, MPI_SUM, comm);
      }
    }
  for (int r = 0; r < reps; r++) rr[r] = wsg[r] / wc[r];
  const double sw_ratio = median(rr, reps), sw_c = median(wc, reps), sw_s = median(wsg, reps);
  const double sw_best = wsg[0] / wc[0]; /* sorted by median() */
  for (int r = 0; r < reps; r++) rr[r] = us[r] / uc[r];
  const double su_ratio = median(rr, reps), su_c = median(uc, reps), su_s = median(us, reps);
  for (int k = 0; k < NPH; k++) {
    cpu[k] = median(tp + k * reps, reps);
    wall[k] = median(tw + k * reps, reps);
    wbest[k] = tw[k * reps]; /* sorted by median() */
  }
  /* critical path with a core per party: CPU work per rank, max over ranks, plus the
   * measured reduce; rank 0's decode / central noise */
  double own_s = cpu[ENC] + cpu[SHARE] + cpu[MASK];
  double c_grad = tmax(comm, cpu[GRAD]), c_sown = tmax(comm, own_s),
         c_sstep = tmax(comm, cpu[GRAD] + own_s), c_enc = tmax(comm, cpu[ENC]),
         c_share = tmax(comm, cpu[SHARE]), c_mask = tmax(comm, cpu[MASK]);
  double c_dec = cpu[DEC], c_noise = cpu[NOISE_C]; /* rank 0's (printed by rank 0) */
  /* the reduce: its best wall time over the repeats.  With a core per rank a reduce of d words
   * takes the same time every repeat; on a shared or oversubscribed machine the median also
   * counts ranks waiting for a core after the barrier (the median-reduce ratio is printed too) */
  double cp_c = wbest[RED_D] + c_noise, cp_s = c_sown + wbest[RED_U] + c_dec;
  double cps_c = c_grad + cp_c, cps_s = c_sstep + wbest[RED_U] + c_dec;
  double mps_c = c_grad + wall[RED_D] + c_noise, mps_s = c_sstep + wall[RED_U] + c_dec;
  /* (3a) the work of a step summed over ranks (the reduces left out) */
  double wk[2] = {cpu[GRAD] + (rank == 0 ? c_noise : 0),
                  cpu[GRAD] + own_s + (rank == 0 ? c_dec : 0)};
  MPI_Allreduce(MPI_IN_PLACE, wk, 2, MPI_DOUBLE, MPI_SUM, comm);
  long long gnnz = (long long)sh.rowptr[nl];
  if (rank == 0)
    printf("RESULT ranks=%d d=%lld reps=%d collude=%d rho=%g gamma=%g sigma_share=%llu "
           "rho_secagg=%.6g sigma_central=%.6g t_central=%.6e t_secagg=%.6e ratio=%.4f "
           "t_central_best=%.6e t_secagg_best=%.6e ratio_best=%.4f t_reduce_u64=%.6e "
           "t_reduce_f64=%.6e cpu_encode=%.6e cpu_share=%.6e "
           "cpu_mask=%.6e cpu_decode=%.6e cpu_noise_central=%.6e cpu_grad=%.6e rows=%lld "
           "nnz_row=%d nnz=%lld crit_central=%.6e crit_secagg=%.6e crit_ratio=%.4f "
           "step_central=%.6e step_secagg=%.6e step_ratio=%.4f t_reduce_u64_best=%.6e "
           "t_reduce_f64_best=%.6e step_ratio_median_reduce=%.4f bits=%d degree=%d "
           "wall_step_central=%.6e wall_step_secagg=%.6e wall_step_ratio=%.4f "
           "wall_step_ratio_best=%.4f work_step_central=%.6e work_step_secagg=%.6e "
           "work_step_ratio=%.4f cpu_step_central=%.6e cpu_step_secagg=%.6e cpu_step_ratio=%.4f\n",
           P, (long long)d, reps, collude, rho, gamma, (unsigned long long)sigma, rho_sa, sigma_c,
           mc, ms, ratios[0], bc, bs, ratios[1], wall[RED_U], wall[RED_D],
           c_enc, c_share, c_mask, c_dec, c_noise, c_grad, (long long)nl, nnz, gnnz, cp_c, cp_s,
           cp_s / cp_c, cps_c, cps_s, cps_s / cps_c, wbest[RED_U], wbest[RED_D], mps_s / mps_c, bits, deg, sw_c,
           sw_s, sw_ratio, sw_best, wk[0], wk[1], wk[1] / wk[0], su_c, su_s, su_ratio);
  free(sh.rowptr);
  free(sh.y);
  free(sh.colind);
  free(sh.val);
  free(xm);
  free(g);
  free(l1);
  free(l2);
  free(tw);
  free(wc);
  free(wsg);
  free(uc);
  free(us);
  free(x32);
  dpo_secagg_destroy(sa);
  dpo_rng_destroy(rng);
  free(v);
  free(tot);
  free(x);
  free(scr);
  free(tc);
  free(ts);
  free(rr);
  free(tp);
  MPI_Finalize();
  return 0;
}
