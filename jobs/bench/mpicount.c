/* mpicount: how often a program's ranks meet, counted through MPI's profiling interface.
 *
 * Built as a shared object and preloaded (jobs/clusterstudy does both:
 *   mpicc -shared -fPIC -O2 -o mpicount.so jobs/bench/mpicount.c
 *   DPO_MPICOUNT=FILE mpirun --quiet -x LD_PRELOAD=./mpicount.so ... ), it counts on every rank the
 * calls that make ranks wait for each other: collectives ("coll": bcast, reduce,
 * allreduce, gather, scatter, allgather, alltoall, barrier, and the non-blocking allgather,
 * bcast and allreduce the sleeping wait polls, each one meeting), the sleeping wait's non-blocking
 * barriers ("gate": MPI_Ibarrier, src/comm/wait.c), and point-to-point waits ("p2p": Wait,
 * Waitall and the blocking Send, Recv, Sendrecv), with the bytes the collectives carry as
 * seen by the calling rank.  At MPI_Finalize rank r appends one line to FILE.r:
 *   MPICOUNT rank=R coll=N gate=N p2p=N coll_bytes=B
 * Two runs that differ only in their iteration count give the meetings an iteration makes
 * (the difference over the iterations' difference): what the cost model charges a latency
 * for, counted from the code as it runs rather than from its description. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long long n_coll, n_gate, n_p2p, coll_bytes;

static long long dpo__bytes(int count, MPI_Datatype t) {
  int sz = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &sz) != MPI_SUCCESS) return 0;
  return (long long)count * sz;
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(n, t);
  return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(n, t);
  return PMPI_Reduce(s, r, n, t, op, root, c);
}
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(n, t);
  return PMPI_Allreduce(s, r, n, t, op, c);
}
int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
               int root, MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(sn, st);
  return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
}
int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[],
                const int displs[], MPI_Datatype rt, int root, MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(sn, st);
  return PMPI_Gatherv(s, sn, st, r, rn, displs, rt, root, c);
}
int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                int root, MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(rn, rt);
  return PMPI_Scatter(s, sn, st, r, rn, rt, root, c);
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(sn, st);
  return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}
/* the one-meeting step's allgather under the sleeping wait (src/comm/oracle_step1.c): a
 * collective the wait polls, so it is its own gate, one meeting (not a gate besides) */
int MPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                   MPI_Comm c, MPI_Request *rq) {
  n_coll++, coll_bytes += dpo__bytes(sn, st);
  return PMPI_Iallgather(s, sn, st, r, rn, rt, c, rq);
}
int MPI_Ibcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *rq) {
  n_coll++, coll_bytes += dpo__bytes(n, t);
  return PMPI_Ibcast(b, n, t, root, c, rq);
}
int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   MPI_Request *rq) {
  n_coll++, coll_bytes += dpo__bytes(n, t);
  return PMPI_Iallreduce(s, r, n, t, op, c, rq);
}
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                 MPI_Comm c) {
  n_coll++, coll_bytes += dpo__bytes(sn, st);
  return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
}
int MPI_Barrier(MPI_Comm c) {
  n_coll++;
  return PMPI_Barrier(c);
}
int MPI_Ibarrier(MPI_Comm c, MPI_Request *rq) {
  n_gate++;
  return PMPI_Ibarrier(c, rq);
}
int MPI_Wait(MPI_Request *rq, MPI_Status *st) {
  n_p2p++;
  return PMPI_Wait(rq, st);
}
int MPI_Waitall(int n, MPI_Request rq[], MPI_Status st[]) {
  n_p2p++;
  return PMPI_Waitall(n, rq, st);
}
int MPI_Send(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c) {
  n_p2p++;
  return PMPI_Send(b, n, t, dst, tag, c);
}
int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st) {
  n_p2p++;
  return PMPI_Recv(b, n, t, src, tag, c, st);
}
int MPI_Sendrecv(const void *s, int sn, MPI_Datatype st, int dst, int stag, void *r, int rn,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *status) {
  n_p2p++;
  return PMPI_Sendrecv(s, sn, st, dst, stag, r, rn, rt, src, rtag, c, status);
}

int MPI_Finalize(void) {
  const char *f = getenv("DPO_MPICOUNT");
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (f && *f) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", f, rank);
    FILE *fp = fopen(path, "a");
    if (fp) {
      fprintf(fp, "MPICOUNT rank=%d coll=%lld gate=%lld p2p=%lld coll_bytes=%lld\n", rank, n_coll,
              n_gate, n_p2p, coll_bytes);
      fclose(fp);
    }
  }
  return PMPI_Finalize();
}
