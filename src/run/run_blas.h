/* OpenBLAS's worker threads and the ranks on a node (doc/design.md, "The way data flows"). */
#ifndef DPO_RUN_BLAS_H
#define DPO_RUN_BLAS_H

/* Before MPI_Init, on every rank: unless the user set OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS
 * or OMP_NUM_THREADS (theirs wins), the BLAS gets this rank's share of the node's CPUs: the
 * CPUs it is bound to, or unbound max(1, CPUs / ranks on this node as the launcher states
 * them).  No-op with a BLAS other than OpenBLAS (configure's check). */
void dpo__blas_threads_setup(void);

/* The BLAS's thread count now (0: not known, a BLAS other than OpenBLAS) and who chose it. */
int dpo__blas_threads(const char **from);

#endif
