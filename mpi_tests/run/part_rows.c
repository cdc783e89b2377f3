/* part_rows FILE LO HI: the rows of a LIBSVM file (123 features) whose keyed draw falls in
 * [LO, HI) for a fixed key (dpo_load_opts_t.part_key, what dpo_run_set_rows sets for dpopt
 * tune --split), printed as one count by rank 0; test_tune_split.sh checks the parts add up,
 * that a row changed in place stays in its part, and that the rank count does not matter. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "dpopt/data.h"
#include "dpopt/status.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, rc = DPO_OK;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  dpo_load_opts_t lo;
  dpo_shard_t *sh = NULL;
  dpo_load_opts_default(&lo);
  lo.d = 123;
  lo.part_key = 0x0123456789abcdefULL;
  if (argc != 4) rc = dpo_err(DPO_EINVAL, "usage: part_rows FILE LO HI");
  else lo.part_lo = strtod(argv[2], NULL), lo.part_hi = strtod(argv[3], NULL);
  if (!rc) rc = dpo_shard_load(MPI_COMM_WORLD, argv[1], &lo, &sh);
  if (!rc && rank == 0) printf("%lld\n", (long long)sh->n_global);
  if (rc && rank == 0) fprintf(stderr, "part_rows: %s\n", dpo_errmsg());
  dpo_shard_destroy(sh);
  MPI_Finalize();
  return rc ? 1 : 0;
}
