#include "dpopt/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DPO__ERRLEN 1024
static _Thread_local char dpo__errbuf[DPO__ERRLEN];

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

int dpo_err(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dpo__errbuf, sizeof dpo__errbuf, fmt, ap);
  va_end(ap);
  return status;
}

const char *dpo_errmsg(void) { return dpo__errbuf; }
void dpo_errclear(void) { dpo__errbuf[0] = '\0'; }

int dpo_agree(MPI_Comm comm, int status) {
  int rank, size;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "dpo_agree: invalid communicator");
  int mine = status != DPO_OK ? rank : size, first;
  if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "dpo_agree: MPI_Allreduce failed");
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
  return pkt.code;
}
