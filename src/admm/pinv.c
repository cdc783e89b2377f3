/* u0 = -(1/rho) (A')^+ grad f(x0) of 004 Alg. 2/3 (and Lemma 4): the minimum-norm least-squares
 * solution of A' u = -g / rho.  A is p x d; A' is d x p.  For A = [W; I] (p = |E| + d >= d) the
 * system is underdetermined with full row rank d, and the answer is the minimum-norm solution.
 * LAPACK dgelsd (SVD, handles rank deficiency) on one rank; ScaLAPACK pdgels (QR/LQ, needs full
 * rank) when A is large and distributed over a BLACS grid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "admm/admm_impl.h"
#include "dpopt/status.h"
#include "linalg/scalapack.h"

void pdgels_(const char *trans, const int *m, const int *n, const int *nrhs, double *a,
             const int *ia, const int *ja, const int *desca, double *b, const int *ib,
             const int *jb, const int *descb, double *work, const int *lwork, int *info,
             size_t trans_len);

/* A = I (dpopt admm's default, no graph): (A')^+ = I, so u0 = -g / rho without the dense d x d
 * SVD, which a wide A = I (the one-run audit's canary columns) could not even hold. */
static int dpo__A_is_identity(const dpo_admm_A_t *A) {
  if (A->p != A->d) return 0;
  for (int32_t r = 0; r < A->p; r++)
    if (A->rowptr[r + 1] - A->rowptr[r] != 1 || A->colind[A->rowptr[r]] != r ||
        A->val[A->rowptr[r]] != 1.0)
      return 0;
  return 1;
}

int dpo_admm_u0_lapack(const dpo_admm_A_t *A, const double *g, double rho, double *u0) {
  if (!A || !g || !u0 || !(rho > 0)) return dpo_err(DPO_EINVAL, "admm_u0_lapack: bad argument");
  if (dpo__A_is_identity(A)) {
    for (int32_t i = 0; i < A->d; i++) u0[i] = -g[i] / rho;
    return DPO_OK;
  }
  int m = A->d, n = A->p, nrhs = 1, lda = m > 1 ? m : 1, ldb = m > n ? m : n, rank = 0, info = 0;
  int st = DPO_OK, mn = m < n ? m : n;
  double *At = calloc((size_t)m * (size_t)n, sizeof *At), *b = calloc((size_t)ldb, sizeof *b);
  double *s = malloc((size_t)(mn > 0 ? mn : 1) * sizeof *s), *work = NULL, wq = 0;
  int *iwork = NULL;
  if (!At || !b || !s) {
    st = dpo_err(DPO_ENOMEM, "admm_u0: out of memory");
    goto done;
  }
  /* column-major A' (d x p): A'(i, r) = A(r, i) */
  for (int r = 0; r < n; r++)
    for (int64_t q = A->rowptr[r]; q < A->rowptr[r + 1]; q++)
      At[(size_t)A->colind[q] + (size_t)r * m] = A->val[q];
  for (int i = 0; i < m; i++) b[i] = -g[i] / rho;
  double rcond = -1.0; /* machine precision */
  int lwork = -1, liw = 0;
  int iwq = 0;
  dgelsd_(&m, &n, &nrhs, At, &lda, b, &ldb, s, &rcond, &rank, &wq, &lwork, &iwq, &info);
  if (info != 0) {
    st = dpo_err(DPO_ELAPACK, "admm_u0: dgelsd workspace query info %d", info);
    goto done;
  }
  lwork = (int)wq + 1;
  liw = iwq > 1 ? iwq : 1;
  work = malloc((size_t)lwork * sizeof *work);
  iwork = malloc((size_t)liw * sizeof *iwork);
  if (!work || !iwork) {
    st = dpo_err(DPO_ENOMEM, "admm_u0: out of memory");
    goto done;
  }
  dgelsd_(&m, &n, &nrhs, At, &lda, b, &ldb, s, &rcond, &rank, work, &lwork, iwork, &info);
  if (info != 0) {
    st = dpo_err(DPO_ELAPACK, "admm_u0: dgelsd: the SVD did not converge (info %d)", info);
    goto done;
  }
  memcpy(u0, b, (size_t)n * sizeof *u0);
done:
  free(At);
  free(b);
  free(s);
  free(work);
  free(iwork);
  return st;
}

int dpo_admm_u0_scalapack(MPI_Comm comm, const dpo_admm_A_t *A, const double *g, double rho,
                          double *u0) {
  static const char fn[] = "admm_u0_scalapack";
  double *a = NULL, *b = NULL, *sol = NULL, *work = NULL;
  dpo__blacs_t grid;
  if (!A || !g || !u0 || !(rho > 0))
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "%s: bad argument", fn));
  const int m = A->d, n = A->p, mb = m > n ? m : n;
  int rc = dpo__blacs_open(comm, fn, &grid);
  const int nprow = grid.nprow, npcol = grid.npcol, myrow = grid.myrow, mycol = grid.mycol;
  const int ctxt = grid.ctxt;
  {
    const int nb = dpo__blacs_nb(&grid, m < n ? m : n), izero = 0, ione = 1;
    int mloc = numroc_(&m, &nb, &myrow, &izero, &nprow);
    int nloc = numroc_(&n, &nb, &mycol, &izero, &npcol);
    int bloc = numroc_(&mb, &nb, &myrow, &izero, &nprow);
    int bcols = numroc_(&ione, &nb, &mycol, &izero, &npcol);
    int lda = mloc > 1 ? mloc : 1, ldb = bloc > 1 ? bloc : 1, info = 0;
    int descA[9], descB[9];
    a = calloc((size_t)lda * (size_t)(nloc > 0 ? nloc : 1), sizeof *a);
    b = calloc((size_t)ldb, sizeof *b);
    sol = calloc((size_t)n, sizeof *sol);
    if ((!a || !b || !sol) && !rc) rc = dpo_err(DPO_ENOMEM, "%s: out of memory", fn);
    if ((rc = dpo_agree(comm, rc))) goto out;
    descinit_(descA, &m, &n, &nb, &nb, &izero, &izero, &ctxt, &lda, &info);
    if (info == 0) descinit_(descB, &mb, &ione, &nb, &nb, &izero, &izero, &ctxt, &ldb, &info);
    if (info != 0) {
      rc = dpo_agree(comm, dpo_err(DPO_ELAPACK, "%s: descinit info %d", fn, info));
      goto out;
    }
    /* local blocks of A' (column-major, leading dimension lda): A'(I, J) = A(J, I) */
    for (int jl = 0; jl < nloc; jl++) {
      int J = dpo__l2g(jl, nb, mycol, npcol);
      for (int64_t q = A->rowptr[J]; q < A->rowptr[J + 1]; q++) {
        int I = A->colind[q];
        if ((I / nb) % nprow != myrow) continue;
        int il = (I / (nb * nprow)) * nb + I % nb;
        a[il + (size_t)jl * lda] = A->val[q];
      }
    }
    if (bcols > 0)
      for (int il = 0; il < bloc; il++) {
        int I = dpo__l2g(il, nb, myrow, nprow);
        b[il] = I < m ? -g[I] / rho : 0.0;
      }
    double wq = 0;
    int lwork = -1;
    pdgels_("N", &m, &n, &ione, a, &ione, &ione, descA, b, &ione, &ione, descB, &wq, &lwork,
            &info, 1);
    lwork = (int)wq + 1;
    work = malloc((size_t)lwork * sizeof *work);
    rc = work ? DPO_OK : dpo_err(DPO_ENOMEM, "%s: out of memory", fn);
    if ((rc = dpo_agree(comm, rc))) goto out;
    pdgels_("N", &m, &n, &ione, a, &ione, &ione, descA, b, &ione, &ione, descB, work, &lwork,
            &info, 1);
    if (info != 0) rc = dpo_err(DPO_ELAPACK, "%s: pdgels info %d (A' must have full rank)", fn, info);
    /* each solution entry lives on one process of grid column 0: the sum is exact */
    if (!rc && bcols > 0)
      for (int il = 0; il < bloc; il++) {
        int I = dpo__l2g(il, nb, myrow, nprow);
        if (I < n) sol[I] = b[il];
      }
  }
out:
  dpo__blacs_close(&grid);
  rc = dpo_agree(comm, rc);
  if (!rc && MPI_Allreduce(sol, u0, n, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
    rc = dpo_agree(comm, dpo_err(DPO_EMPI, "%s: MPI_Allreduce failed", fn));
  free(a);
  free(b);
  free(sol);
  free(work);
  return rc;
}
