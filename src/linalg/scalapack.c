/* Distributed SPD solve over a 2-D BLACS grid (see scalapack.h). */
#include "linalg/scalapack.h"

#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"

void dpo__grid_shape(int P, int *nprow, int *npcol) {
  int r = 1;
  for (int k = 1; (long)k * k <= P; k++)
    if (P % k == 0) r = k;
  *nprow = r;
  *npcol = P / r;
}

int dpo__blacs_open(MPI_Comm comm, const char *fn, dpo__blacs_t *g) {
  int P = 0;
  g->handle = g->ctxt = -1;
  g->nprow = g->npcol = 1;
  g->myrow = g->mycol = 0;
  if (MPI_Comm_size(comm, &P) != MPI_SUCCESS) return dpo_err(DPO_EMPI, "%s: bad comm", fn);
  dpo__grid_shape(P, &g->nprow, &g->npcol);
  g->handle = Csys2blacs_handle(comm);
  g->ctxt = g->handle;
  Cblacs_gridinit(&g->ctxt, "Row", g->nprow, g->npcol);
  Cblacs_gridinfo(g->ctxt, &g->nprow, &g->npcol, &g->myrow, &g->mycol);
  if (g->myrow < 0 || g->mycol < 0) {
    g->myrow = g->mycol = 0;
    return dpo_err(DPO_ELAPACK, "%s: rank not in the %d x %d BLACS grid", fn, g->nprow,
                   g->npcol);
  }
  return DPO_OK;
}

void dpo__blacs_close(dpo__blacs_t *g) {
  if (g->ctxt >= 0) Cblacs_gridexit(g->ctxt);
  if (g->handle >= 0) Cfree_blacs_system_handle(g->handle);
  g->ctxt = g->handle = -1;
}

int dpo__blacs_nb(const dpo__blacs_t *g, int n) {
  const int mx = g->nprow > g->npcol ? g->nprow : g->npcol;
  const int nb = (n + mx - 1) / mx;
  return nb > 64 ? 64 : nb < 1 ? 1 : nb;
}

int dpo__pd_solve(MPI_Comm comm, int d, const double *H, double *b) {
  static const char fn[] = "dpo__pd_solve";
  double *A = NULL, *B = NULL, *p = NULL;
  dpo__blacs_t g;
  if (d <= 0 || !H || !b)
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "%s: d = %d, H or b NULL", fn, d));
  int rc = dpo__blacs_open(comm, fn, &g);
  const int nprow = g.nprow, npcol = g.npcol, myrow = g.myrow, mycol = g.mycol, ctxt = g.ctxt;
  {
    const int nb = dpo__blacs_nb(&g, d), izero = 0, ione = 1;
    int mloc = numroc_(&d, &nb, &myrow, &izero, &nprow);
    int nloc = numroc_(&d, &nb, &mycol, &izero, &npcol);
    int bcols = numroc_(&ione, &ione, &mycol, &izero, &npcol);
    int lld = mloc > 1 ? mloc : 1, info = 0;
    int descA[9], descB[9];
    A = malloc((size_t)lld * (size_t)(nloc > 0 ? nloc : 1) * sizeof *A);
    B = calloc((size_t)lld, sizeof *B);
    p = calloc((size_t)d, sizeof *p);
    if ((!A || !B || !p) && !rc)
      rc = dpo_err(DPO_ENOMEM, "%s: cannot allocate local blocks (%d x %d)", fn, mloc, nloc);
    /* all ranks must enter pdpotrf together or none */
    if ((rc = dpo_agree(comm, rc))) goto out;
    descinit_(descA, &d, &d, &nb, &nb, &izero, &izero, &ctxt, &lld, &info);
    if (info == 0) descinit_(descB, &d, &ione, &nb, &ione, &izero, &izero, &ctxt, &lld, &info);
    if (info != 0) {
      rc = dpo_err(DPO_ELAPACK, "%s: descinit info = %d", fn, info);
      goto out;
    }
    /* local blocks, column-major with leading dimension lld */
    for (int jl = 0; jl < nloc; jl++) {
      int J = dpo__l2g(jl, nb, mycol, npcol);
      for (int il = 0; il < mloc; il++) {
        int I = dpo__l2g(il, nb, myrow, nprow);
        A[il + (size_t)jl * lld] = H[(size_t)I * d + J];
      }
    }
    if (bcols > 0)
      for (int il = 0; il < mloc; il++) B[il] = b[dpo__l2g(il, nb, myrow, nprow)];
    pdpotrf_("L", &d, A, &ione, &ione, descA, &info, 1);
    if (info != 0) {
      rc = info > 0 ? dpo_err(DPO_ELAPACK, "%s: pdpotrf: the Hessian is not positive definite "
                              "(leading minor %d)", fn, info)
                    : dpo_err(DPO_ELAPACK, "%s: pdpotrf: argument %d invalid", fn, -info);
      goto out;
    }
    pdpotrs_("L", &d, &ione, A, &ione, &ione, descA, B, &ione, &ione, descB, &info, 1);
    if (info != 0) {
      rc = dpo_err(DPO_ELAPACK, "%s: pdpotrs: argument %d invalid", fn, -info);
      goto out;
    }
    /* every entry of the solution lives on exactly one process of grid column 0: a sum of one
     * value and zeros is exact, so all ranks get the same bits */
    if (bcols > 0)
      for (int il = 0; il < mloc; il++) p[dpo__l2g(il, nb, myrow, nprow)] = B[il];
  }
out:
  dpo__blacs_close(&g);
  rc = dpo_agree(comm, rc);
  if (!rc) {
    if (MPI_Allreduce(p, b, d, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
      rc = dpo_agree(comm, dpo_err(DPO_EMPI, "%s: MPI_Allreduce of the solution failed", fn));
  }
  free(A);
  free(B);
  free(p);
  return rc;
}
