/* Private: ScaLAPACK / BLACS prototypes (Debian's libscalapack-openmpi ships no header) and
 * the distributed SPD solve used by the Newton reference solver.
 *
 * Fortran routines take the hidden lengths of their CHARACTER arguments at the end (gfortran
 * ABI, size_t), declared here so the calls are well-defined. */
#ifndef DPO_LINALG_SCALAPACK_H
#define DPO_LINALG_SCALAPACK_H

#include <mpi.h>
#include <stddef.h>

/* BLACS C interface */
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);

/* ScaLAPACK tools and solvers (Fortran) */
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc,
            const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja,
              const int *desca, int *info, size_t uplo_len);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *ia,
              const int *ja, const int *desca, double *b, const int *ib, const int *jb,
              const int *descb, int *info, size_t uplo_len);

/* Collective over comm: solve H p = b for a symmetric positive definite d x d matrix H that
 * every rank holds in full (row-major, identical on all ranks); b (length d) on every rank is
 * overwritten with the solution, identical on all ranks.  The matrix is distributed
 * block-cyclically over an nprow x npcol BLACS grid (as square as possible, all ranks of
 * comm) and factored with pdpotrf, solved with pdpotrs.  DPO_ELAPACK if H is not positive
 * definite.  Returns the same status on every rank. */
int dpo__pd_solve(MPI_Comm comm, int d, const double *H, double *b);

/* The process grid chosen for P ranks: nprow <= npcol, nprow * npcol = P, nprow maximal. */
void dpo__grid_shape(int P, int *nprow, int *npcol);

/* A BLACS grid over all ranks of a communicator (dpo__grid_shape), its context made from THAT
 * communicator (not the world's default context), so a solve works on any sub-communicator,
 * and this rank's place in it. */
typedef struct {
  int handle, ctxt, nprow, npcol, myrow, mycol;
} dpo__blacs_t;
/* Collective: open g on comm; DPO_ELAPACK (naming fn) on a rank outside the grid, whose place
 * is then 0, 0 (only to size local arrays nobody uses): the caller agrees the status before
 * the first ScaLAPACK call, and closes g whatever it returned. */
int dpo__blacs_open(MPI_Comm comm, const char *fn, dpo__blacs_t *g);
void dpo__blacs_close(dpo__blacs_t *g);
/* The block size for a matrix side of n: small enough that every process row and column of
 * g holds part of it, at most 64. */
int dpo__blacs_nb(const dpo__blacs_t *g, int n);
/* Global index (0-based) of local index l (0-based) in a block-cyclic distribution with
 * block nb over np processes, this process being ip (source process 0). */
static inline int dpo__l2g(int l, int nb, int ip, int np) {
  return ((l / nb) * np + ip) * nb + l % nb;
}

#endif
