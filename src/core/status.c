#include "dpopt/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DPO__ERRLEN 1024
static _Thread_local char dpo__errbuf[DPO__ERRLEN];
/* The last failing dpo_agree: who failed and the finder's own words (without the
 * "[reported by rank N]" tail), valid until the next dpo_err / dpo_errclear. */
static _Thread_local struct {
  int set, first, last, all;
  char msg[DPO__ERRLEN - 64];
} dpo__agreed;

const char *dpo_strerror(int status) {
  switch (status) {
  case DPO_OK: return "DPO_OK";
  case DPO_ENOMEM: return "DPO_ENOMEM (out of memory)";
  case DPO_EIO: return "DPO_EIO (input/output error)";
  case DPO_EFORMAT: return "DPO_EFORMAT (malformed input)";
  case DPO_EINVAL: return "DPO_EINVAL (invalid argument)";
  case DPO_EMPI: return "DPO_EMPI (MPI failure)";
  case DPO_ELAPACK: return "DPO_ELAPACK (linear algebra failure)";
  case DPO_EBUDGET: return "DPO_EBUDGET (privacy budget exhausted)";
  case DPO_ENOCONV: return "DPO_ENOCONV (no convergence)";
  case DPO_ERANKS: return "DPO_ERANKS (bad rank layout)";
  case DPO_EUNSUP: return "DPO_EUNSUP (unsupported)";
  case DPO_EINTR: return "DPO_EINTR (interrupted)";
  case DPO_EREMOTE: return "DPO_EREMOTE (another rank failed)";
  default: return "unknown status";
  }
}

int dpo_exit_status(int status) {
  switch (status) {
  case DPO_OK: return 0;
  case DPO_EINVAL: return 1;
  case DPO_EIO:
  case DPO_EFORMAT:
  case DPO_ERANKS: return 2;
  case DPO_EBUDGET: return 3;
  case DPO_EINTR: return 5;
  default: return 4;
  }
}

int dpo_err(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dpo__errbuf, sizeof dpo__errbuf, fmt, ap);
  va_end(ap);
  dpo__agreed.set = 0; /* a fresh detail, known to this rank only */
  return status;
}

const char *dpo_errmsg(void) { return dpo__errbuf; }
void dpo_errclear(void) {
  dpo__errbuf[0] = '\0';
  dpo__agreed.set = 0;
}

int dpo_err_agreed(int *first, int *last, int *all, const char **msg) {
  if (!dpo__agreed.set) return 0;
  if (first) *first = dpo__agreed.first;
  if (last) *last = dpo__agreed.last;
  if (all) *all = dpo__agreed.all;
  if (msg) *msg = dpo__agreed.msg;
  return 1;
}

int dpo_agree(MPI_Comm comm, int status) {
  int rank, size;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "dpo_agree: invalid communicator");
  /* one reduction (MIN) gives the first failing rank, minus the last, and whether all failed */
  int fail = status != DPO_OK;
  int mine[3] = {fail ? rank : size, fail ? -rank : 1, fail}, red[3];
  if (MPI_Allreduce(mine, red, 3, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "dpo_agree: MPI_Allreduce failed");
  int first = red[0];
  if (first == size) return DPO_OK;
  /* One message carries the code and the detail of the first failing rank. */
  struct { int code; char msg[DPO__ERRLEN - 64]; } pkt;
  if (rank == first) {
    pkt.code = status;
    snprintf(pkt.msg, sizeof pkt.msg, "%.*s", (int)sizeof pkt.msg - 1, dpo__errbuf);
  }
  if (MPI_Bcast(&pkt, (int)sizeof pkt, MPI_BYTE, first, comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "dpo_agree: MPI_Bcast failed");
  if (rank != first) {
    if (size > 1)
      snprintf(dpo__errbuf, sizeof dpo__errbuf, "%s [reported by rank %d]", pkt.msg, first);
  }
  memcpy(dpo__agreed.msg, pkt.msg, sizeof pkt.msg);
  dpo__agreed.first = first;
  dpo__agreed.last = -red[1];
  dpo__agreed.all = red[2];
  dpo__agreed.set = 1;
  return pkt.code;
}
