/* Example 4: a custom objective plugged in through the model ops table.  The squared hinge
 * loss phi(t, z) = max(0, 1 - z t)^2 (a smooth SVM) plus lambda ||x||^2 is given by its
 * per-row function; the oracle and the algorithms use it like a built-in model.  It is solved
 * by L-BFGS (non-private) and checked independently: the gradient of F, summed here by hand
 * over each rank's rows, must vanish at x*.      mpirun -np 2 ./ex4_objective data/a9a */
#include <dpopt/dpopt.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double sqhinge(double t, double z, double *dphi) {
  double m = fmax(0.0, 1.0 - z * t);
  return *dphi = -2.0 * z * m, m * m;
}
/* name, binary labels, phi; no public smoothness or sensitivity bounds (non-private use) */
static const dpo_model_ops_t sqhinge_ops = {"sqhinge", 1, sqhinge, NULL, NULL};

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, rc = DPO_EINVAL;
  MPI_Comm_rank(comm, &rank);
  const double lambda = 1e-3;
  dpo_load_opts_t lo; /* defaults: format from the file, binary labels */
  dpo_run_opts_t ro;
  dpo_shard_t *sh = NULL; /* LIBSVM data: CSR rows */
  dpo_model_t *m = NULL;
  dpo_oracle_t *o = NULL;
  dpo_solver_t *sv = NULL;
  dpo_config_t *cfg = NULL; /* empty: lbfgs with its defaults */
  double *x0 = NULL, *g = NULL, gmax = 0;
  dpo_load_opts_default(&lo);
  dpo_run_opts_default(&ro);
  ro.max_iter = 500, ro.gtol = 1e-8, ro.quiet = 1;
  if (argc < 2 || (rc = dpo_model_create_ops(&sqhinge_ops, lambda, &m)) ||
      (rc = dpo_shard_load(comm, argv[1], &lo, &sh)) || (rc = dpo_config_create(&cfg)) ||
      (rc = dpo_oracle_create(comm, m, sh, NULL, &o)) ||
      (rc = (x0 = calloc(sh->d, sizeof *x0)) && (g = calloc(sh->d, sizeof *g)) ? 0 : DPO_ENOMEM) ||
      (rc = dpo_solver_create(o, dpo_algo_find("lbfgs"), cfg, NULL, NULL, x0, &sv)) ||
      (rc = dpo_solver_run(sv, &ro)))
    goto done;
  const double *x = dpo_solver_x(sv); /* x* on every rank after the run */
  /* independent check: grad F = (1/n) sum_i phi'(u_i'x, z_i) u_i + 2 lambda x */
  for (int64_t i = 0; i < sh->n; i++) {
    double t = 0, c;
    for (int64_t p = sh->rowptr[i]; p < sh->rowptr[i + 1]; p++) t += sh->val[p] * x[sh->colind[p]];
    sqhinge(t, sh->y[i], &c);
    for (int64_t p = sh->rowptr[i]; p < sh->rowptr[i + 1]; p++) g[sh->colind[p]] += c * sh->val[p];
  }
  MPI_Allreduce(MPI_IN_PLACE, g, sh->d, MPI_DOUBLE, MPI_SUM, comm);
  for (int32_t j = 0; j < sh->d; j++)
    gmax = fmax(gmax, fabs(g[j] / (double)sh->n_global + 2 * lambda * x[j]));
  if (rank == 0) printf("ex4_objective: %s, %lld L-BFGS iterations, max |grad F(x*)| = %.3e\n",
                        dpo_model_name(m), (long long)dpo_solver_iters(sv), gmax);
  rc = gmax < 1e-6 ? DPO_OK : DPO_ENOCONV;
done:
  if (rc && rank == 0) fprintf(stderr, "ex4_objective: %s\n", argc < 2 ? "give DATA" : dpo_errmsg());
  dpo_solver_destroy(sv), dpo_oracle_destroy(o), dpo_config_destroy(cfg);
  dpo_shard_destroy(sh), dpo_model_destroy(m), free(x0), free(g);
  MPI_Finalize();
  return rc ? 1 : 0;
}
