/* Shared pieces of the dpopt command-line tool (private to src/cli/). */
#ifndef DPO_CLI_H
#define DPO_CLI_H

#include <mpi.h>

#include "dpopt/config.h"
#include "dpopt/data.h"
#include "dpopt/run.h"

/* Exit statuses (documented in README and --help). */
enum {
  DPO_EXIT_OK = 0,
  DPO_EXIT_USAGE = 1,   /* bad command line or config */
  DPO_EXIT_DATA = 2,    /* bad input data or file */
  DPO_EXIT_BUDGET = 3,  /* the ledger refused a charge: run ended cleanly, last release kept */
  DPO_EXIT_RUNTIME = 4, /* MPI, linear algebra, convergence or other runtime failure */
  DPO_EXIT_INTR = 5,    /* interrupted by SIGTERM/SIGINT after a clean checkpoint */
  DPO_EXIT_AUDIT = 6    /* dpopt audit: the empirical lower bound exceeds the claimed eps */
};

/* A command-line option that maps onto a config key. */
typedef struct {
  const char *flag;   /* "--eps" */
  const char *key;    /* "privacy.eps"; NULL for special flags handled by the command */
  const char *arg;    /* "X" shown in help; NULL for a boolean switch (sets "true") */
  const char *help;
} dpo_cli_opt_t;

typedef struct {
  MPI_Comm comm;
  int rank, size;
  MPI_Comm errcomm; /* a duplicate of comm only dpo_cli_fail uses (MPI_COMM_NULL: none) */
} dpo_cli_ctx_t;

/* Parse argv against the option table into cfg (after loading --config FILE first, so flags
 * override the file).  Positional arguments are returned in pos[] (up to maxpos).  Returns 0,
 * 1 if --help was printed, or -1 after printing an error (on rank 0 only; all ranks agree since
 * every rank parses the same argv). */
int dpo_cli_parse(const dpo_cli_ctx_t *ctx, int argc, char **argv, const dpo_cli_opt_t *opts,
                  const char *usage, const char *more_help, dpo_config_t *cfg, char **pos,
                  int maxpos, int *npos);

/* The start every command shares: create *cfg (the caller destroys it, whatever the result),
 * parse argv with dpo_cli_parse, and unless npos_err is NULL require exactly maxpos
 * positional arguments (else print "dpopt CMD: error: NPOS_ERR" once).  Returns -1 to go on,
 * or the exit status to return now (0 after --help). */
int dpo_cli_start(const dpo_cli_ctx_t *ctx, const char *cmd, int argc, char **argv,
                  const dpo_cli_opt_t *opts, const char *usage, const char *more,
                  dpo_config_t **cfg, char **pos, int maxpos, int *npos, const char *npos_err);

/* Map a library status to an exit status. */
int dpo_cli_exit_status(int status);

/* Print "dpopt CMD: error: <detail> (<code>)" once, on rank 0, and return the exit status.
 * Every rank with the error calls it.  An agreed error (dpo_agree) is printed as is; an error
 * a rank recorded itself is first agreed on ctx->errcomm (the ranks normally all have it:
 * flags and config are the same everywhere).  The rank that found it is named ("[rank 2]")
 * unless every rank did.  A rank whose error the others never join prints it itself after
 * DPOPT_FAIL_WAIT seconds (default 10) and aborts the job (MPI_Abort): no rank hangs. */
int dpo_cli_fail(const dpo_cli_ctx_t *ctx, const char *cmd, int status);

/* Warn about config keys nothing read (probable typos; "did you mean" when one is close). */
void dpo_cli_warn_unused(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg);
/* Not collective: warn (rank 0) about set keys nothing read so far that are one or two edits
 * from a known key ("did you mean"), each key once.  Call before the data are loaded and
 * before printing an error, so a typo shows even when the run fails for another reason. */
void dpo_cli_warn_typos(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg);

/* Not collective: DPO_EINVAL (with a message naming both counts) if config key
 * run.expect_ranks is set (> 0) and differs from the MPI world size; DPO_OK otherwise.
 * Every rank evaluates the same condition, so every rank fails (dpo_cli_fail prints it once). */
int dpo_cli_check_ranks(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg);

/* Collective: a created run's life cycle as every run command drives it (the rank check,
 * setup, load, solve, evaluate, write, the printed summary).  DPO_OK with *ex the exit status
 * (0; 3 budget exhausted; 4 consensus ADMM stopped at its maxit; 5 interrupted, checkpoint
 * written, said on stderr), else the failing status for dpo_cli_fail. */
int dpo_cli_run(const dpo_cli_ctx_t *ctx, const char *cmd, dpo_run_t *run, int *ex);

int dpo_cmd_train(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_info(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_convert(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_gen(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_newton(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_ledger(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_simulate(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_calibrate(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_mf(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_mf_predict(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_admm(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_audit(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_predict(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_eval(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_tune(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_budget(const dpo_cli_ctx_t *ctx, int argc, char **argv);
int dpo_cmd_party_key(const dpo_cli_ctx_t *ctx, int argc, char **argv);

/* dpopt train's own option rows (cmd_train.c; dpopt audit --one-run takes them too). */
extern const dpo_cli_opt_t dpo_cli_train_opts[];
/* dpopt admm's own option rows (cmd_admm.c; dpopt audit --one-run --admm takes them too). */
extern const dpo_cli_opt_t dpo_cli_admm_opts[];
/* dpopt tune's own option rows (cmd_tune.c; dpopt audit --one-run --tune takes them too). */
extern const dpo_cli_opt_t dpo_cli_tune_opts[];
/* dpopt audit --one-run's command line (cmd_audit1.c) into *cfg (created here; the caller
 * destroys it): -1 to go on, else the exit status to return now (0 after --help).  With
 * --tune the whole audit of a tune runs here, its table printed with tag (dpopt-test's note). */
int dpo_cmd_audit1_start(const dpo_cli_ctx_t *ctx, int argc, char **argv, const char *tag,
                         dpo_config_t **cfg);
/* The option rows shared by every command that loads data (terminated by a NULL row). */
extern const dpo_cli_opt_t dpo_cli_data_opts[];
/* Concatenate option tables into out (capacity cap rows incl. terminator). */
void dpo_cli_opts_cat(dpo_cli_opt_t *out, int cap, const dpo_cli_opt_t *a, const dpo_cli_opt_t *b);

#ifdef DPO_TEST_SWITCHES
/* dpopt-test only (cmd_train.c): take --test-coordinator KIND[:N], --test-party-fail N and
 * --test-party-kill N out of dpopt-test CMD's argv (CMD "train" or "admm"; *nargs: what is
 * left) and plant them; DPO_EINVAL naming the kinds CMD takes for an unknown KIND. */
int dpo_cli_test_secagg_args(const char *cmd, int argc, char **argv, int *nargs);
#endif

#endif
