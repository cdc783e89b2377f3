/* Collective latency/bandwidth microbenchmark for the cost model (jobs/costmodel).
 *
 *   mpirun -np P jobs/bench/allreduce_bench [--sizes 1,16,128,...] [--reps R] [--trials K]
 *
 * For each message size d (doubles) it times, on the communicator dpopt uses:
 *   allreduce    MPI_Allreduce of d doubles (SUM)
 *   bcastreduce  MPI_Bcast of d doubles from rank 0, then MPI_Reduce of d + 3 doubles to
 *                rank 0: one round of the gradient oracle (src/comm/oracle.c)
 *   ring         MPI_Sendrecv of d doubles to rank+1 from rank-1: one HAMSI item-block step
 *   pingpong     rank 0 sends d doubles to rank 1, which sends them back (the other ranks
 *                wait); t is half the round trip, as osu_latency reports it: one link's
 *                one-way latency and, at large d, 8 d / t its bandwidth
 * Each trial runs R back-to-back operations after a barrier and takes the mean; the reported
 * time is the best of K trials on each rank, then the maximum over ranks (the slowest rank
 * sets the pace).  Output, one line per (op, d), for jobs/costmodel:
 *   RESULT op=allreduce ranks=2 d=1024 t=1.234e-05
 * No timing is asserted anywhere: numbers depend on the machine and on its load. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSIZES 64

static double trial(int op, double *a, double *b, int d, int reps, MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  for (int r = 0; r < reps; r++) {
    switch (op) {
    case 0: MPI_Allreduce(a, b, d, MPI_DOUBLE, MPI_SUM, comm); break;
    case 1:
      MPI_Bcast(a, d, MPI_DOUBLE, 0, comm);
      MPI_Reduce(a, b, d + 3, MPI_DOUBLE, MPI_SUM, 0, comm);
      break;
    case 2: MPI_Sendrecv(a, d, MPI_DOUBLE, next, 7, b, d, MPI_DOUBLE, prev, 7, comm, MPI_STATUS_IGNORE); break;
    default:
      if (rank == 0) {
        MPI_Send(a, d, MPI_DOUBLE, 1, 8, comm);
        MPI_Recv(b, d, MPI_DOUBLE, 1, 8, comm, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(b, d, MPI_DOUBLE, 0, 8, comm, MPI_STATUS_IGNORE);
        MPI_Send(b, d, MPI_DOUBLE, 0, 8, comm);
      }
    }
  }
  return (MPI_Wtime() - t0) / reps / (op == 3 ? 2 : 1);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, size, nsz = 0, reps = 200, trials = 5, err = 0;
  long sizes[MAXSIZES];
  const char *spec = "1,8,64,512,4096,32768,262144";
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--sizes") && i + 1 < argc) spec = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      if (rank == 0)
        printf("usage: mpirun -np P allreduce_bench [--sizes 1,8,64,...] [--reps 200] [--trials 5]\n"
               "Prints RESULT op=allreduce|bcastreduce|ring|pingpong ranks=P d=DOUBLES t=SECONDS per line.\n");
      MPI_Finalize();
      return 0;
    } else err = 1;
  }
  for (const char *p = spec; *p && nsz < MAXSIZES;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > (1L << 26)) { err = 1; break; }
    sizes[nsz++] = v;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') { err = 1; break; }
  }
  if (err || reps < 1 || trials < 1 || nsz == 0) {
    if (rank == 0) fprintf(stderr, "allreduce_bench: bad arguments (see --help)\n");
    MPI_Finalize();
    return 1;
  }
  long maxd = 0;
  for (int i = 0; i < nsz; i++) maxd = sizes[i] > maxd ? sizes[i] : maxd;
  double *a = malloc(sizeof(double) * (size_t)(maxd + 3)), *b = malloc(sizeof(double) * (size_t)(maxd + 3));
  int ok = a && b, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  if (!all_ok) {
    if (rank == 0) fprintf(stderr, "allreduce_bench: out of memory\n");
    MPI_Finalize();
    return 1;
  }
  for (long j = 0; j < maxd + 3; j++) a[j] = 1.0 + (double)j * 1e-9;
  static const char *names[4] = {"allreduce", "bcastreduce", "ring", "pingpong"};
  for (int op = 0; op < (size > 1 ? 4 : 3); op++) {
    for (int i = 0; i < nsz; i++) {
      int d = (int)sizes[i];
      /* fewer repetitions for big messages keep the run short */
      int r = reps;
      if ((long)d * r > 4L * 1000 * 1000) r = (int)(4L * 1000 * 1000 / d) + 1;
      trial(op, a, b, d, r > 10 ? 10 : r, comm); /* warm-up: connections, buffers */
      double best = 1e30;
      for (int k = 0; k < trials; k++) {
        double t = trial(op, a, b, d, r, comm);
        if (t < best) best = t;
      }
      double worst;
      MPI_Reduce(&best, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
      if (rank == 0) printf("RESULT op=%s ranks=%d d=%d t=%.6e\n", names[op], size, d, worst);
    }
  }
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
