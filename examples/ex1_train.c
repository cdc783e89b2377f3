/* Example 1: train an l1-logistic model on a9a with consensus ADMM (non-private) and print the
 * training accuracy.  Built against an installed dpopt with pkg-config:
 *
 *   mpicc ex1_train.c $(pkg-config --cflags --libs dpopt) -o ex1_train
 *   mpirun -np 2 ./ex1_train data/a9a [iterations]
 *
 * Only the umbrella header is needed. */
#include <dpopt/dpopt.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD; /* the library itself never assumes the world */
  int rank, rc;
  MPI_Comm_rank(comm, &rank);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np P %s DATA [iterations]\n", argv[0]);
    MPI_Finalize();
    return 1;
  }
  dpo_load_opts_t lo;
  dpo_shard_t *sh = NULL;
  dpo_model_t *m = NULL;
  double *x = NULL;
  dpo_load_opts_default(&lo);
  if ((rc = dpo_model_create("logreg", 0.0, &m)) || (rc = dpo_shard_load(comm, argv[1], &lo, &sh)))
    goto done;
  if (!(x = calloc((size_t)sh->d, sizeof *x))) {
    rc = DPO_ENOMEM;
    goto done;
  }
  dpo_admm_opts_t o;
  dpo_admm_opts_default(&o);
  o.g = DPO_ADMM_G_L1;
  o.lambda = 1e-5;
  o.rho = 0.05;
  o.adapt_rho = 1;
  o.max_iter = argc > 2 ? atoi(argv[2]) : 10;
  dpo_admm_info_t inf;
  rc = dpo_admm_consensus(comm, m, sh, &o, x, &inf);
  if (rc == DPO_ENOCONV) rc = DPO_OK; /* a few iterations only: the last z is fine */
  if (rc) goto done;
  double lm[2] = {0, 0}, tot[2];
  dpo_model_local_eval(m, sh, x, &lm[0], &lm[1]);
  MPI_Allreduce(lm, tot, 2, MPI_DOUBLE, MPI_SUM, comm);
  if (rank == 0)
    printf("ex1_train: %lld iterations, training loss %.4f, accuracy %.4f (NON-PRIVATE)\n",
           (long long)inf.iters, tot[0] / (double)sh->n_global, tot[1] / (double)sh->n_global);
done:
  if (rc && rank == 0) fprintf(stderr, "ex1_train: %s\n", dpo_errmsg());
  free(x);
  dpo_shard_destroy(sh);
  dpo_model_destroy(m);
  MPI_Finalize();
  return rc ? 1 : 0;
}
