/* Secure-aggregation release benchmark (driver: jobs/bench/secagg; issue 12).
 *
 * One release of a d-vector sum over P ranks, two ways, in the same run on the same vectors:
 *   central: MPI_Reduce of the doubles to rank 0, then rank 0 adds N(0, sigma_c^2) to every
 *            coordinate (dpo_mech_gaussian, the exact discrete sampler on the grid);
 *   secagg:  dpo_secagg_round: fixed-point encoding with randomized rounding, a discrete
 *            Gaussian share on every rank (one party per rank), pairwise ChaCha20 masks against
 *            the P - 1 other ranks, MPI_Reduce of uint64 mod 2^64, decoding on rank 0.
 * sigma_c is the central noise of the same rho (rho-zCDP: sigma_c = delta2 / sqrt(2 rho));
 * the secagg share comes from dpo_secagg_params(delta2, d, P, collude, rho).  Each release is
 * timed between barriers (max over ranks); --reps releases each, interleaved, median and best
 * reported.  The parts of a secagg release are timed alone as well (encode, noise share of d
 * coordinates, masks of P - 1 pairs, reduce of d uint64) on every rank, max over ranks.
 * Keys are set up once (dpo_secagg_create) outside the timing, as in a run.
 * Prints one "RESULT" line.
 *
 *   mpirun -np P secagg_bench [--d 1e4] [--reps 50] [--rho 0.01] [--collude 1]
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD; /* a benchmark program, not the library */
  int rank, P;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  int64_t d = 10000;
  int reps = 50, collude = 1;
  double rho = 0.01;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--d")) d = (int64_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rho")) rho = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--collude")) collude = atoi(argv[i + 1]);
    else {
      if (rank == 0) fprintf(stderr, "secagg_bench: unknown option %s\n", argv[i]);
      MPI_Abort(comm, 2);
    }
  }
  if (reps < 1 || d < 1) MPI_Abort(comm, 2);
  if (collude >= P) collude = P - 1;

  /* each rank's sum: |v_j| <= 1/sqrt(d), so ||v||_2 <= 1 = delta2 */
  const double delta2 = 1.0;
  double *v = malloc((size_t)d * sizeof *v), *tot = malloc((size_t)d * sizeof *tot);
  uint64_t *x = malloc((size_t)d * sizeof *x), *scr = malloc((size_t)d * sizeof *scr);
  double *tc = malloc((size_t)reps * sizeof *tc), *ts = malloc((size_t)reps * sizeof *ts);
  if (!v || !tot || !x || !scr || !tc || !ts) MPI_Abort(comm, 3);
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

  /* warm-up: one of each (page faults, MPI connections) */
  CHECK(dpo_secagg_round(sa, v, d, gamma, sigma, 1, tot, NULL));
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
    CHECK(dpo_secagg_round(sa, v, d, gamma, sigma, 1, tot, NULL));
    ts[r] = tmax(comm, MPI_Wtime() - t0);
  }
  double ratios[2] = {0, 0};
  double *rr = malloc((size_t)reps * sizeof *rr);
  for (int r = 0; r < reps; r++) rr[r] = ts[r] / tc[r];
  ratios[0] = median(rr, reps);
  double mc = median(tc, reps), ms = median(ts, reps);
  double bc = tc[0], bs = ts[0]; /* sorted by median() */
  ratios[1] = bs / bc;

  /* the parts alone, median over reps, max over ranks */
  double *tp = malloc((size_t)reps * sizeof *tp), part[4];
  for (int k = 0; k < 4; k++) {
    for (int r = 0; r < reps; r++) {
      MPI_Barrier(comm);
      double t0 = MPI_Wtime();
      if (k == 0) CHECK(dpo_secagg_encode(rng, v, gamma, d, x));
      else if (k == 1)
        for (int64_t j = 0; j < d; j++) {
          int64_t z;
          CHECK(dpo_mech_discrete_gaussian(rng, sigma, &z));
          x[j] += (uint64_t)z;
        }
      else if (k == 2) {
        unsigned char key[32];
        memset(key, rank + 1, sizeof key); /* the cost of a mask does not depend on the key */
        for (int q = 0; q < P - 1; q++) CHECK(dpo_secagg_mask(key, (uint64_t)r, 1, d, x, scr));
      } else
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : x, x, (int)d, MPI_UINT64_T, MPI_SUM, 0, comm);
      tp[r] = tmax(comm, MPI_Wtime() - t0);
    }
    part[k] = median(tp, reps);
  }
  if (rank == 0)
    printf("RESULT ranks=%d d=%lld reps=%d collude=%d rho=%g gamma=%g sigma_share=%llu "
           "rho_secagg=%.6g sigma_central=%.6g t_central=%.6e t_secagg=%.6e ratio=%.4f "
           "t_central_best=%.6e t_secagg_best=%.6e ratio_best=%.4f t_encode=%.6e t_noise=%.6e "
           "t_mask=%.6e t_reduce_u64=%.6e\n",
           P, (long long)d, reps, collude, rho, gamma, (unsigned long long)sigma, rho_sa, sigma_c,
           mc, ms, ratios[0], bc, bs, ratios[1], part[0], part[1], part[2], part[3]);
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
