/* Newton on the shipped a9a (LIBSVM, 32561 x 123, sparse) with lambda = 1e-4, loaded by
 * 1..4 ranks: ||grad F|| <= 1e-10 and F* identical across rank counts (1e-12 relative), the
 * solution identical on all ranks of each sub-communicator, and lambda_max of the Hessian at
 * x* between the regularizer 2 lambda and the declared-bound L (a9a rows have 14 ones, so
 * ||u||_2 = sqrt(14) and L = 14/4 + 2 lambda).  Path: $top_srcdir/data/a9a. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/data.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"

#define LAMBDA 1e-4

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (P > 4) P = 4;
  const char *top = getenv("top_srcdir");
  char path[4096];
  snprintf(path, sizeof path, "%s/data/a9a", top ? top : ".");
  if (access(path, R_OK) != 0) {
    if (wr == 0) printf("test_newton_a9a: SKIP (%s not readable)\n", path);
    MPI_Finalize();
    return 77;
  }
  double Fk[5] = {0}, lk[5] = {0};
  for (int k = 1; k <= P; k++) {
    MPI_Comm sub = dpo_t_subcomm(k);
    if (sub == MPI_COMM_NULL) continue;
    dpo_load_opts_t lo;
    dpo_load_opts_default(&lo);
    lo.format = DPO_FMT_LIBSVM;
    lo.d = 123;
    dpo_shard_t *s = NULL;
    dpo_model_t *m = NULL;
    int rc = dpo_shard_load(sub, path, &lo, &s);
    T_CHECK(rc == DPO_OK, "load k=%d: %s", k, dpo_errmsg());
    if (rc == DPO_OK) {
      T_CHECK(s->n_global == 32561 && s->d == 123, "a9a shape %ld x %d", (long)s->n_global,
              (int)s->d);
      dpo_model_create("logreg", LAMBDA, &m);
      double *x = calloc((size_t)s->d, sizeof *x);
      dpo_newton_info_t info;
      rc = dpo_newton_solve(sub, m, s, x, 1e-10, 60, &info);
      T_CHECK(rc == DPO_OK && info.gnorm <= 1e-10, "newton k=%d: %s (gnorm %g)", k,
              dpo_errmsg(), info.gnorm);
      double lm = NAN;
      rc = dpo_hessian_lmax(sub, m, s, x, 20000, 1e-13, &lm);
      T_CHECK(rc == DPO_OK, "lmax k=%d: %s", k, dpo_errmsg());
      T_CHECK(lm > 2 * LAMBDA && lm <= 14.0 / 4 + 2 * LAMBDA, "lmax %g outside its bounds", lm);
      double c[2] = {info.F, lm}, c0[2] = {info.F, lm};
      MPI_Bcast(c0, 2, MPI_DOUBLE, 0, sub);
      T_CHECK(c0[0] == c[0] && c0[1] == c[1], "k=%d: ranks disagree", k);
      if (wr == 0) {
        Fk[k] = info.F;
        lk[k] = lm;
        printf("a9a k=%d: F* = %.17g after %ld Newton iterations, |g| = %.3g, lmax = %.12g\n",
               k, info.F, (long)info.iters, info.gnorm, lm);
      }
      free(x);
      dpo_model_destroy(m);
    }
    dpo_shard_destroy(s);
    MPI_Comm_free(&sub);
  }
  if (wr == 0)
    for (int k = 2; k <= P; k++) {
      T_CHECK(fabs(Fk[k] - Fk[1]) <= 1e-12 * Fk[1], "F* k=%d %.17g vs %.17g", k, Fk[k], Fk[1]);
      T_CHECK(fabs(lk[k] - lk[1]) <= 1e-9 * lk[1], "lmax k=%d %.17g vs %.17g", k, lk[k], lk[1]);
    }
  return dpo_t_finish("test_newton_a9a");
}
