/* The best point of K for the 003 SCO jobs (jobs/sco/excess_vs_n.sh): a NON-PRIVATE reference.
 *
 *   mpirun -np P bestk --data FILE --dim D --diam DIAM [--lambda LAM] [--iters N] [--tol T]
 *                      [--idx-class C]
 *
 * Minimizes the mean logistic loss of FILE (the public held-out set) plus lam ||x||^2
 * (default lam = 0: the population risk the excess is measured against) over
 * K = {||x||_2 <= DIAM / 2}, the feasible ball of src/optim/sco_common.c, by accelerated
 * projected gradient (FISTA with restart) with a backtracking step (Beck & Teboulle 2009): each
 * iteration tries L_k = L_{k-1} / 2 and doubles it until the quadratic upper bound
 * F(x+) <= F(y) + g'(x+ - y) + L_k/2 ||x+ - y||^2 holds, never above the public bound
 * L = B^2 / 4 + 2 lam (B the largest row norm of FILE), where it always holds: the bound is far
 * above the true curvature on dense data (Fashion-MNIST, d = 784: B^2/4 = 196), and its fixed
 * step 1 / L did not reach the tolerance in 20000 iterations there.  Prints
 *   F_K <value>       the minimum over K
 *   norm <value>      ||x_K||
 *   residual <value>  ||x - P_K(x - t grad F(x))|| / t with t = 1 / L (the public bound), the
 *                     projected-gradient fixed-point residual (0 exactly at the minimizer of a
 *                     convex F over K)
 *   iterations <k>
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
  double F = 0, Fo = INFINITY, th = 1, Lk = 1.0 / t;
  double *p = malloc((size_t)d * sizeof *p), *gy = malloc((size_t)d * sizeof *gy);
  long k = 0;
  for (; k < iters && !rc; k++) {
    /* x+ = P_K(y - grad F(y) / L_k) with backtracking on L_k; y = x+ + ((th - 1) / th+) (x+ - x)
     * (every quantity is an Allreduce result: all ranks take the same branches) */
    if ((rc = fgrad(comm, m, s, n, y, &F, gy))) break;
    memcpy(xo, x, (size_t)d * sizeof *x);
    double Fx = 0;
    Lk = fmax(Lk / 2, 1e-12 / t);
    for (;;) {
      for (int32_t j = 0; j < d; j++) x[j] = y[j] - gy[j] / Lk;
      project(x, d, r);
      if ((rc = fgrad(comm, m, s, n, x, &Fx, g))) break;
      double q = F, dd = 0;
      for (int32_t j = 0; j < d; j++) {
        double e = x[j] - y[j];
        q += gy[j] * e;
        dd += e * e;
      }
      if (Lk >= 1.0 / t || Fx <= q + 0.5 * Lk * dd + 1e-15 * fabs(F)) break;
      Lk = fmin(2 * Lk, 1.0 / t);
    }
    if (rc) break;
    double th1 = (1 + sqrt(1 + 4 * th * th)) / 2;
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
  free(gy);
  if (rank == 0) {
    if (rc) fprintf(stderr, "bestk: %s\n", dpo_errmsg());
    else
      printf("# NON-PRIVATE reference on %s (n = %lld, d = %d): min over ||x|| <= %g of the "
             "mean loss + %g ||x||^2\nF_K %.17g\nnorm %.17g\nresidual %.3g\niterations %ld\n",
             data, (long long)n, d, r, lam, F, sqrt(nx), res, k);
  }
  free(l1), free(l2), free(x), free(xo), free(y), free(g);
  dpo_model_destroy(m);
  dpo_shard_destroy(s);
  MPI_Finalize();
  return rc ? 1 : res > tol ? 3 : 0;
}
