/* Example 2: a private training embedded in a host MPI program, on a sub-communicator.
 * Ranks 0-1 of the host split off a communicator and train dp-nag-opt with an (eps = 1)
 * budget through the run API (dpopt/run.h): it opens the privacy ledger, journals each charge
 * in the run directory, and labels every output PRIVATE.  Rank 2 is free for the host's own
 * work; the library never touches MPI_COMM_WORLD.
 *
 *   mpirun -np 3 ./ex2_embed data/a9a data/a9a.t RUNDIR */
#include <dpopt/dpopt.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, rc = 0;
  MPI_Comm sub;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &sub);
  if (argc != 4 && rank == 0) fprintf(stderr, "usage: %s TRAIN TEST RUNDIR\n", argv[0]);
  if (sub != MPI_COMM_NULL && argc == 4) { /* the training ranks */
    const char *kv[][2] = {{"data.train", argv[1]}, {"data.test", argv[2]}, {"run.dir", argv[3]},
                           {"algo.name", "dp-nag-opt"}, {"privacy.eps", "1"},
                           {"data.row_l1_bound", "14"}, {"data.row_l2_bound", "3.75"},
                           {"model.lambda", "0.01"}, {"run.quiet", "true"}};
    dpo_config_t *cfg = NULL;
    dpo_run_t *run = NULL;
    dpo_run_result_t res;
    if (!(rc = dpo_config_create(&cfg)))
      for (size_t i = 0; i < sizeof kv / sizeof kv[0] && !rc; i++)
        rc = dpo_config_set(cfg, kv[i][0], kv[i][1], "ex2_embed");
    if (!rc && !(rc = dpo_run_create(sub, cfg, &run)) && !(rc = dpo_run_setup(run)) &&
        !(rc = dpo_run_load(run)) && ((rc = dpo_run_solve(run)) == DPO_OK || rc == DPO_EBUDGET) &&
        !(rc = dpo_run_evaluate(run)) && !(rc = dpo_run_write(run)) &&
        !(rc = dpo_run_result(run, &res)) && rank == 0)
      printf("ex2_embed: %s\nex2_embed: test accuracy %.4f after %lld steps, run directory %s\n",
             dpo_run_label(run), res.test_metric, (long long)res.iters, dpo_run_dir(run));
    if (rc && rank == 0) fprintf(stderr, "ex2_embed: %s\n", dpo_errmsg());
    dpo_run_destroy(run); /* a failed run leaves FAILED in its directory */
    dpo_config_destroy(cfg);
    MPI_Comm_free(&sub);
  }
  MPI_Finalize();
  return rc || argc != 4 ? 1 : 0;
}
