/* dpopt status codes and error details.
 *
 * Every library function that can fail returns int: DPO_OK (0) or a negative DPO_E* code.
 * The function that detects a failure records a human-readable detail (file, line, reason)
 * with dpo_err(); callers read it with dpo_errmsg().  Collective functions make the status
 * and the detail agree on every rank with dpo_agree() before returning, so no rank is left
 * waiting in a collective after another one failed.
 */
#ifndef DPOPT_STATUS_H
#define DPOPT_STATUS_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  DPO_OK = 0,
  DPO_ENOMEM = -1,    /* allocation failed */
  DPO_EIO = -2,       /* cannot open/read/write a file */
  DPO_EFORMAT = -3,   /* malformed input data (file, line, reason in the detail) */
  DPO_EINVAL = -4,    /* invalid argument or option */
  DPO_EMPI = -5,      /* an MPI call failed */
  DPO_ELAPACK = -6,   /* LAPACK/ScaLAPACK reported an error (e.g. not positive definite) */
  DPO_EBUDGET = -7,   /* the privacy ledger refused a charge: budget exhausted */
  DPO_ENOCONV = -8,   /* an iterative method did not reach its tolerance */
  DPO_ERANKS = -9,    /* more ranks than rows, or a rank layout that cannot work */
  DPO_EUNSUP = -10,   /* not supported in this build/configuration */
  DPO_EINTR = -11,    /* interrupted by a signal (SIGTERM/SIGINT) */
  DPO_EREMOTE = -12   /* another rank failed; its message is in the detail */
};

/* Name of a status code, e.g. "DPO_EFORMAT". */
const char *dpo_strerror(int status);

/* The process exit status a front end gives for a status (README, `dpopt --help`): 0 ok,
 * 1 usage (DPO_EINVAL), 2 bad data (DPO_EIO, DPO_EFORMAT, DPO_ERANKS), 3 budget exhausted,
 * 4 runtime failure (the rest), 5 interrupted (DPO_EINTR). */
int dpo_exit_status(int status);

/* Record a failure detail (printf-style) and return `status`, so code can say
 *   return dpo_err(DPO_EFORMAT, "%s:%ld: feature index %d > dimension %d", ...); */
int dpo_err(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The detail recorded by the last dpo_err() on this thread ("" if none). */
const char *dpo_errmsg(void);
void dpo_errclear(void);

/* Collective: every rank passes its local status; all return the first failure (lowest
 * failing rank), and the detail of that rank is copied to every rank, prefixed with the
 * rank that failed.  Returns DPO_OK only if every rank passed DPO_OK. */
int dpo_agree(MPI_Comm comm, int status);

/* Whether the current detail came from a failing dpo_agree (and no dpo_err since): then
 * *first / *last are the lowest / highest failing ranks, *all is 1 if every rank failed, and
 * *msg the first failing rank's detail without the "[reported by rank N]" tail.  Returns 0
 * (outputs untouched) for a detail this rank recorded itself.  Any output may be NULL.  Lets a
 * front end print an agreed error once (rank 0) instead of once per rank. */
int dpo_err_agreed(int *first, int *last, int *all, const char **msg);

/* Wrap an MPI return code. */
#define DPO_MPI_CHECK(call)                                                       \
  do {                                                                            \
    int dpo__mpirc = (call);                                                      \
    if (dpo__mpirc != MPI_SUCCESS)                                                \
      return dpo_err(DPO_EMPI, "%s:%d: MPI call failed (%d): %s", __FILE__,       \
                     __LINE__, dpo__mpirc, #call);                                \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
