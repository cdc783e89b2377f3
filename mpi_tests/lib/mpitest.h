/* Helpers for MPI test programs: run the same computation on sub-communicators of 1..P ranks
 * of the world and compare.  Header-only so each test program is one file. */
#ifndef DPO_MPITEST_H
#define DPO_MPITEST_H
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int dpo_t_failures = 0;

#define T_CHECK(cond, ...)                                                         \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      int r_;                                                                      \
      MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                          \
      fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ", r_, __FILE__, __LINE__, \
              #cond);                                                              \
      fprintf(stderr, __VA_ARGS__);                                                \
      fprintf(stderr, "\n");                                                       \
      dpo_t_failures++;                                                            \
    }                                                                              \
  } while (0)

/* Communicator of world ranks [0, k) (MPI_COMM_NULL on the others). */
static inline MPI_Comm dpo_t_subcomm(int k) {
  int r;
  MPI_Comm c;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_split(MPI_COMM_WORLD, r < k ? 0 : MPI_UNDEFINED, r, &c);
  return c;
}

/* max_i |a_i - b_i| / max(1, max_i |b_i|) */
static inline double dpo_t_reldiff(const double *a, const double *b, long n) {
  double num = 0, den = 1;
  for (long i = 0; i < n; i++) {
    double e = fabs(a[i] - b[i]);
    if (!(e <= num)) num = e; /* NaN-propagating */
    if (fabs(b[i]) > den) den = fabs(b[i]);
  }
  return num / den;
}

/* Finish: every rank's failures are summed; rank 0 prints the closing line; exit status. */
static inline int dpo_t_finish(const char *name) {
  int tot = 0, r;
  MPI_Allreduce(&dpo_t_failures, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (r == 0) printf("%s: %s (%d failed checks)\n", name, tot ? "FAIL" : "PASS", tot);
  MPI_Finalize();
  return tot ? 1 : 0;
}
#endif
