/* Example 3: evaluate a saved model.  A model file written by `dpopt train --out RUN`
 * (RUN/model.txt) is read on rank 0 and broadcast, the data file is loaded in shards (each
 * rank reads its own part) and the model's mean loss and accuracy are summed exactly as
 * train's held-out evaluation sums them: at the same rank count the accuracy printed here is
 * train's test_accuracy, bit for bit.  The numbers are functions of the data: if the data
 * are private, they are non-private outputs.
 *   mpirun -np 3 ./ex3_eval RUN/model.txt data/a9a.t [lambda] */
#include <dpopt/dpopt.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD; /* any communicator: the library never assumes the world */
  int rank, rc = DPO_EINVAL;
  MPI_Comm_rank(comm, &rank);
  dpo_model_t *m = NULL;
  dpo_load_opts_t lo;
  dpo_eval_result_t r;
  double lambda = argc > 3 ? atof(argv[3]) : 1e-4; /* dpopt train's default */
  dpo_load_opts_default(&lo); /* format from the file, binary labels, dimension inferred */
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np P %s MODEL DATA [lambda]\n", argv[0]);
  } else if (!(rc = dpo_model_create("logreg", lambda, &m)) &&
             !(rc = dpo_model_eval_file(comm, m, argv[1], argv[2], &lo, NULL, &r)) && rank == 0) {
    printf("ex3_eval: %lld rows, %d features\n", (long long)r.n, (int)r.d);
    printf("data loss   %.17g\n", r.loss);
    printf("objective   %.17g\n", r.loss + lambda * r.xx); /* F = loss + lambda ||x||^2 */
    printf("accuracy    %.17g\n", r.metric);
  }
  if (rc && argc >= 3 && rank == 0) fprintf(stderr, "ex3_eval: %s\n", dpo_errmsg());
  dpo_model_destroy(m);
  MPI_Finalize();
  return rc ? 1 : 0;
}
