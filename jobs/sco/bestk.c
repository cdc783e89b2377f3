/* The best point of K for the 003 SCO jobs (jobs/sco/excess_vs_n.sh): a NON-PRIVATE reference.
 *
 *   mpirun -np P bestk --data FILE --dim D --diam DIAM [--lambda LAM] [--iters N] [--tol T]
 *                      [--idx-class C]
 *
 * Minimizes the mean logistic loss of FILE (the public held-out set) plus lam ||x||^2
 * (default lam = 0: the population risk the excess is measured against) over
 * K = {||x||_2 <= DIAM / 2}, the feasible ball of src/optim/sco_common.c, by accelerated
 * projected gradient (FISTA with restart) with step t = 1 / L, L the public bound
 * B^2 / 4 + 2 lam, B the largest row norm of FILE.  Prints
 *   F_K <value>       the minimum over K
 *   norm <value>      ||x_K||
 *   residual <value>  ||x - P_K(x - t grad F(x))|| / t, the projected-gradient fixed-point
 *                     residual (0 exactly at the minimizer of a convex F over K)
 * and exits non-zero if the residual is above --tol (default 1e-7). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/data.h"
#include "dpopt/model.h"
#include "dpopt/status.h"

static void project(double *x, int32_t d, double r) {
  double s = 0;
  for (int32_t j = 0; j < d; j++) s += x[j] * x[j];
  s = sqrt(s);
  if (s > r)
    for (int32_t j = 0; j < d; j++) x[j] *= r / s;
}

/* F and its gradient over all rows of every rank (collective) */
static int fgrad(MPI_Comm comm, const dpo_model_t *m, const dpo_shard_t *s, int64_t n,
                 const double *x, double *F, double *g) {
  int32_t d = s->d;
  double loss = 0;
  int rc = dpo_model_local_grad(m, s, x, NULL, s->n, NULL, NULL, &loss, g);
  if (rc) return rc;
  MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, g, d, MPI_DOUBLE, MPI_SUM, comm);
  *F = loss;
  dpo_model_finish(m, d, n, x, F, g);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank;
  MPI_Comm_rank(comm, &rank);
  const char *data = NULL;
  double diam = NAN, lam = 0, tol = 1e-7;
  long iters = 20000, dim = 0, cls = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--data")) data = argv[i + 1];
    else if (!strcmp(argv[i], "--dim")) dim = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--diam")) diam = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--lambda")) lam = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--tol")) tol = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--idx-class")) cls = atol(argv[i + 1]);
    else {
      if (rank == 0) fprintf(stderr, "bestk: unknown option %s\n", argv[i]);
      MPI_Finalize();
      return 2;
    }
  }
  if (!data || !(diam > 0) || iters < 1) {
    if (rank == 0) fprintf(stderr, "usage: bestk --data FILE --diam DIAM [--dim D] [...]\n");
    MPI_Finalize();
    return 2;
  }
  dpo_load_opts_t lo;
  dpo_load_opts_default(&lo);
  lo.labels = DPO_LABELS_BINARY;
  if (dim > 0) lo.d = (int32_t)dim;
  if (cls >= 0) lo.idx_class = (int)cls;
  dpo_shard_t *s = NULL;
  dpo_model_t *m = NULL;
  int rc = dpo_shard_load(comm, data, &lo, &s);
  if (!rc) rc = dpo_model_create("logreg", lam, &m);
  if (!rc) rc = dpo_model_prepare_shard(m, s);
  if (rc) {
    if (rank == 0) fprintf(stderr, "bestk: %s\n", dpo_errmsg());
    MPI_Finalize();
    return 1;
  }
  const int32_t d = s->d;
  const int64_t n = s->n_global;
  const double r = diam / 2;
  /* the step from the largest row norm of this (public, held-out) file */
  double *l1 = malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof *l1);
  double *l2 = malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof *l2);
  double B = 0;
  dpo_shard_row_norms(s, l1, l2);
  for (int64_t i = 0; i < s->n; i++) B = l2[i] > B ? l2[i] : B;
  MPI_Allreduce(MPI_IN_PLACE, &B, 1, MPI_DOUBLE, MPI_MAX, comm);
  const double t = 1.0 / dpo_model_L_bound(m, B);
  double *x = calloc((size_t)d, sizeof *x), *xo = calloc((size_t)d, sizeof *xo);
  double *y = calloc((size_t)d, sizeof *y), *g = calloc((size_t)d, sizeof *g);
  double F = 0, Fo = INFINITY, th = 1;
  double *p = malloc((size_t)d * sizeof *p);
  for (long k = 0; k < iters && !rc; k++) {
    /* x+ = P_K(y - t grad F(y)); y = x+ + ((th - 1) / th+) (x+ - x) */
    if ((rc = fgrad(comm, m, s, n, y, &F, g))) break;
    memcpy(xo, x, (size_t)d * sizeof *x);
    for (int32_t j = 0; j < d; j++) x[j] = y[j] - t * g[j];
    project(x, d, r);
    double th1 = (1 + sqrt(1 + 4 * th * th)) / 2, Fx;
    if ((rc = fgrad(comm, m, s, n, x, &Fx, g))) break;
    /* stop once x is a fixed point to a tenth of the tolerance (the same on every rank) */
    double rk = 0;
    for (int32_t j = 0; j < d; j++) p[j] = x[j] - t * g[j];
    project(p, d, r);
    for (int32_t j = 0; j < d; j++) rk += (x[j] - p[j]) * (x[j] - p[j]);
    if (sqrt(rk) / t <= 0.1 * tol) break;
    if (Fx > Fo) { /* adaptive restart (O'Donoghue-Candes): drop the momentum */
      th1 = 1;
      memcpy(y, x, (size_t)d * sizeof *x);
    } else {
      for (int32_t j = 0; j < d; j++) y[j] = x[j] + (th - 1) / th1 * (x[j] - xo[j]);
    }
    th = th1;
    Fo = Fx;
  }
  /* the fixed-point residual at x */
  double res = 0, nx = 0;
  if (!rc) rc = fgrad(comm, m, s, n, x, &F, g);
  if (!rc) {
    for (int32_t j = 0; j < d; j++) p[j] = x[j] - t * g[j];
    project(p, d, r);
    for (int32_t j = 0; j < d; j++) res += (x[j] - p[j]) * (x[j] - p[j]), nx += x[j] * x[j];
    res = sqrt(res) / t;
  }
  free(p);
  if (rank == 0) {
    if (rc) fprintf(stderr, "bestk: %s\n", dpo_errmsg());
    else
      printf("# NON-PRIVATE reference on %s (n = %lld, d = %d): min over ||x|| <= %g of the "
             "mean loss + %g ||x||^2\nF_K %.17g\nnorm %.17g\nresidual %.3g\n",
             data, (long long)n, d, r, lam, F, sqrt(nx), res);
  }
  free(l1), free(l2), free(x), free(xo), free(y), free(g);
  dpo_model_destroy(m);
  dpo_shard_destroy(s);
  MPI_Finalize();
  return rc ? 1 : res > tol ? 3 : 0;
}
