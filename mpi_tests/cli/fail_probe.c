/* Probe for dpo_cli_fail (run by test_errors.sh under mpirun, not by the test driver):
 *   fail_probe all     every rank records its own error ("rank R failed") and calls it
 *   fail_probe agreed  rank 1 fails, dpo_agree spreads it, every rank calls it
 *   fail_probe one     only rank 1 fails; the others wait in a barrier it never joins
 * The first two must print one line (rank 0); the third must print rank 1's error and end
 * the job (MPI_Abort after DPOPT_FAIL_WAIT seconds) instead of hanging. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/status.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  dpo_cli_ctx_t ctx = {MPI_COMM_WORLD, 0, 1, MPI_COMM_NULL};
  MPI_Comm_rank(ctx.comm, &ctx.rank);
  MPI_Comm_size(ctx.comm, &ctx.size);
  MPI_Comm_dup(ctx.comm, &ctx.errcomm);
  const char *mode = argc > 1 ? argv[1] : "all";
  int ex = 0;
  if (!strcmp(mode, "all")) {
    ex = dpo_cli_fail(&ctx, "probe", dpo_err(DPO_EINVAL, "rank %d failed", ctx.rank));
  } else if (!strcmp(mode, "agreed")) {
    int st = ctx.rank == 1 ? dpo_err(DPO_EFORMAT, "only rank 1 saw this") : DPO_OK;
    ex = dpo_cli_fail(&ctx, "probe", dpo_agree(ctx.comm, st));
  } else if (ctx.rank == 1) {
    ex = dpo_cli_fail(&ctx, "probe", dpo_err(DPO_EFORMAT, "rank 1 alone knows this"));
  } else {
    MPI_Barrier(ctx.comm); /* never completes: rank 1 aborts the job */
  }
  MPI_Comm_free(&ctx.errcomm);
  MPI_Finalize();
  return ex;
}
