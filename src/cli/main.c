/* dpopt: command-line front end.  Every subcommand is collective over MPI_COMM_WORLD (this is
 * the one place that names it); the library only sees the communicator passed down. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/startwatch.h"
#include "comm/wait.h"
#include "run/run_blas.h"
#include "dpopt/config.h"
#include "dpopt/kernels.h"
#include "config.h"

static const struct {
  const char *name;
  int (*fn)(const dpo_cli_ctx_t *, int, char **);
  const char *help;
} dpo__cmds[] = {
    {"train", dpo_cmd_train, "train a model (private or not) on sharded data, write a run directory"},
    {"predict", dpo_cmd_predict, "apply a saved model to a data file: predictions to a file, and metrics"},
    {"eval", dpo_cmd_eval, "metrics (accuracy / MSE, loss) of a saved model on a data file"},
    {"info", dpo_cmd_info, "rows, columns, nonzeros, label balance and norm statistics of a data file"},
    {"convert", dpo_cmd_convert, "convert a data file to the dpopt binary format for fast loading"},
    {"gen", dpo_cmd_gen, "generate synthetic data (logistic, ridge, MovieLens-shaped ratings)"},
    {"newton", dpo_cmd_newton, "reference optimum F* by distributed Newton (ScaLAPACK), non-private"},
    {"mf", dpo_cmd_mf, "matrix factorization of ratings by distributed HAMSI or mb-GD"},
    {"mf-predict", dpo_cmd_mf_predict, "predictions of a dpopt mf run for (user, item) pairs"},
    {"admm", dpo_cmd_admm, "consensus ADMM across ranks, DP-ADMM / DP-AccADMM (graph-guided fused lasso)"},
    {"simulate", dpo_cmd_simulate, "split one data set into P parties' files (iid or skewed by label)"},
    {"ledger", dpo_cmd_ledger, "print the privacy account of a run directory"},
    {"budget", dpo_cmd_budget, "a data set's budget store: init, add data files, show what is spent"},
    {"party-key", dpo_cmd_party_key, "create a party's identity key pair for authenticated secure aggregation"},
    {"tune", dpo_cmd_tune, "private hyperparameter selection: the best of K private trainings, one charge"},
    {"audit", dpo_cmd_audit, "empirical lower bound on a private algorithm's eps (neighbouring data)"},
    {"calibrate", dpo_cmd_calibrate, "Gaussian noise for a target (eps, delta) by the RDP or PLD accountant"},
};
#define DPO__NCMDS (int)(sizeof dpo__cmds / sizeof dpo__cmds[0])

static void dpo__usage(FILE *f) {
  fprintf(f,
          "usage: mpirun --quiet -np P dpopt COMMAND [options]   (or just: dpopt COMMAND ...)\n\n"
          "Distributed, differentially private optimization on MPI.\n\nCommands:\n");
  for (int i = 0; i < DPO__NCMDS; i++) fprintf(f, "  %-9s %s\n", dpo__cmds[i].name, dpo__cmds[i].help);
  fprintf(f,
          "\n'dpopt COMMAND --help' describes a command.  mpirun --quiet (or orte_execute_quiet = 1\n"
          "in $HOME/.openmpi/mca-params.conf) prints no notice of Open MPI's after dpopt's error.\n\n"
          "Exit status: 0 success; 1 usage or configuration error; 2 bad input data or file;\n"
          "3 privacy budget exhausted (the run stopped cleanly, last released iterate kept);\n"
          "4 runtime failure (MPI, linear algebra, no convergence); 5 interrupted (SIGTERM/SIGINT);\n"
          "6 dpopt audit found a lower bound above the claimed eps.\n\n"
          "Environment:\n"
          "  DPOPT_WAIT  auto|spin|sleep: how ranks wait for each other in a run's collectives;\n"
          "              auto (default) spins while each rank has a core of its own, and sleeps\n"
          "              between polls (with one warning) when ranks outnumber the cores or\n"
          "              share them with other work\n"
          "  DPOPT_AGGLOMERATE  auto|off|on: the default of dpopt train's --agglomerate (whether\n"
          "              rank 0 solves alone with every rank's rows when the ranks' meetings\n"
          "              cost more than they save; the option wins)\n"
          "  DPOPT_START_TIMEOUT  seconds MPI start-up may take (default 300, 0 = no bound):\n"
          "              a rank still waiting for its peers then stops with exit 4\n");
}

/* Does an Open MPI parameter file set `key` to a component list of its own, or exclude `comp`
 * ("^...,comp")?  (An exclusion of others leaves `comp` Open MPI's choice.)  The user's and
 * Debian's system file: what the environment below would override. */
static int dpo__mca_file_sets(const char *key, const char *comp) {
  char user[1024];
  const char *home = getenv("HOME");
  snprintf(user, sizeof user, "%s/.openmpi/mca-params.conf", home ? home : "");
  const char *files[] = {user, "/etc/openmpi/openmpi-mca-params.conf"};
  const size_t kl = strlen(key);
  int set = 0;
  for (int f = 0; f < 2 && !set; f++) {
    FILE *fp = fopen(files[f], "r");
    char line[512];
    while (fp && !set && fgets(line, sizeof line, fp)) {
      char *p = line + strspn(line, " \t");
      if (strncmp(p, key, kl) || !strchr(" \t=", p[kl])) continue;
      p += kl + strspn(p + kl, " \t");
      if (*p == '=') p += 1 + strspn(p + 1, " \t");
      set = *p != '^' || strstr(p, comp) != NULL;
    }
    if (fp) fclose(fp);
  }
  return set;
}

/* Open MPI's start-up probes every messaging layer it was built with; on this VM the cm
 * layer's (psm, psm2) took MPI_Init + MPI_Finalize from 0.10-0.23 s to 0.32-0.48 s (a bare
 * program under mpirun -np 1), a fifth of a 1e6-row DP-SGD epoch's whole run.  When every
 * rank is on this node (Open MPI's launcher says so, or no launcher: one process) the ob1
 * layer over shared memory is the path anyway: ask for it, unless the environment or an
 * Open MPI parameter file chose a layer (command-line --mca pml arrives in the environment). */
static int dpo__pml_set; /* dpo__mpi_local_defaults asked for ob1 (--version says so) */
static void dpo__mpi_local_defaults(void) {
  /* the user's layer, or parameter files of their own (--am, mca_base_param_files) */
  if (getenv("OMPI_MCA_pml") || getenv("OMPI_MCA_mtl") ||
      getenv("OMPI_MCA_mca_base_param_files") || getenv("OMPI_MCA_mca_base_param_file_prefix"))
    return;
  const char *ws = getenv("OMPI_COMM_WORLD_SIZE"), *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (ws || ls) {
    if (!ws || !ls || strcmp(ws, ls)) return; /* ranks on other nodes */
  } else if (getenv("PMIX_RANK") || getenv("PMI_RANK") || getenv("SLURM_PROCID")) {
    return; /* another launcher: where the ranks are is not known here */
  }
  if (!dpo__mca_file_sets("pml", "ob1")) dpo__pml_set = !setenv("OMPI_MCA_pml", "ob1", 0);
}

int main(int argc, char **argv) {
  int provided;
  dpo__mpi_local_defaults();
  dpo__blas_threads_setup(); /* OpenBLAS's threads: this rank's share of the node (run_blas.c) */
  /* a peer that never comes up must not hold this rank in MPI_Init for ever */
  int swbad = dpo__start_watch_arm();
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "dpopt: MPI_Init failed\n");
    return 4;
  }
  dpo_cli_ctx_t ctx = {MPI_COMM_WORLD, 0, 1, MPI_COMM_NULL};
  MPI_Comm_rank(ctx.comm, &ctx.rank);
  MPI_Comm_size(ctx.comm, &ctx.size);
  /* errors on MPI calls come back as codes, the library turns them into statuses */
  MPI_Comm_set_errhandler(ctx.comm, MPI_ERRORS_RETURN);
  /* dpo_cli_fail's own channel: ranks agreeing on an error never meet a library collective */
  if (ctx.size > 1 && MPI_Comm_dup(ctx.comm, &ctx.errcomm) != MPI_SUCCESS) ctx.errcomm = MPI_COMM_NULL;
  /* every rank is up and reachable: start-up is over */
  if (ctx.size > 1) MPI_Barrier(ctx.comm);
  dpo__start_watch_disarm();
  int rc;
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    if (ctx.rank == 0) dpo__usage(stdout);
    rc = argc < 2 ? 1 : 0;
  } else if (!strcmp(argv[1], "--version")) {
    if (ctx.rank == 0) {
      char lib[MPI_MAX_LIBRARY_VERSION_STRING];
      int len = 0;
      if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) len = 0;
      lib[len] = 0;
      char *nl = strchr(lib, ','); /* "Open MPI v4.1.4, package: ..." -> its name and version */
      if (nl) *nl = 0;
      printf("dpopt %s\nkernels: %s (chosen on this CPU at first use; DPOPT_KERNELS=avx512|avx2|generic forces one)\nMPI: %s\n", PACKAGE_VERSION,
             dpo_kern_isa(), len ? lib : "unknown");
      if (dpo__pml_set)
        printf("MPI start-up: pml ob1 (every rank on this node; OMPI_MCA_pml or --mca pml "
               "chooses another)\n");
    }
    rc = 0;
  } else {
    /* rank 0's DPOPT_WAIT rules the run (dpo__wait_setup): a bad one is refused here, before a
     * command writes anything */
    int env0[2] = {ctx.rank == 0 ? dpo__wait_env() : 0, swbad}; /* so is DPOPT_START_TIMEOUT */
    MPI_Bcast(env0, 2, MPI_INT, 0, ctx.comm);
    int wenv = env0[0];
    swbad = env0[1];
    int i = 0;
    for (; i < DPO__NCMDS; i++)
      if (!strcmp(argv[1], dpo__cmds[i].name)) break;
    if (swbad) {
      if (ctx.rank == 0)
        fprintf(stderr, "dpopt: DPOPT_START_TIMEOUT=%s: not a number of seconds from 0 to 86400\n",
                getenv("DPOPT_START_TIMEOUT"));
      rc = 1;
    } else if (wenv < 0) {
      if (ctx.rank == 0)
        fprintf(stderr, "dpopt: DPOPT_WAIT=%s: unknown wait policy (auto, spin or sleep)\n",
                getenv("DPOPT_WAIT"));
      rc = 1;
    } else if (i == DPO__NCMDS) {
      const char *names[DPO__NCMDS];
      for (int k = 0; k < DPO__NCMDS; k++) names[k] = dpo__cmds[k].name;
      const char *sug = dpo_config_nearest(argv[1], names, DPO__NCMDS);
      /* a likely typo gets one line; anything else the command list */
      if (ctx.rank == 0 && sug)
        fprintf(stderr, "dpopt: unknown command '%s': did you mean '%s'? (dpopt --help lists "
                "the commands)\n", argv[1], sug);
      else if (ctx.rank == 0) {
        fprintf(stderr, "dpopt: unknown command '%s'\n\n", argv[1]);
        dpo__usage(stderr);
      }
      rc = 1;
    } else {
      rc = dpo__cmds[i].fn(&ctx, argc - 1, argv + 1);
    }
  }
  fflush(stdout);
  fflush(stderr);
  if (ctx.errcomm != MPI_COMM_NULL) MPI_Comm_free(&ctx.errcomm);
  MPI_Finalize();
  return rc;
}
