/* The constraint matrix A of 004's problems and the graph of the graph-guided fused lasso
 * (004 eq. (11)): A = [W; I], one row of W per edge (j, k) with +1 at j and -1 at k.
 *
 * The graph must be public.  004 builds W by sparse inverse covariance selection on the
 * training set, which makes the constraint matrix itself a release of the private data; here the
 * graph is an input file, and dpo_admm_graph_from_public() builds one from a PUBLIC data set. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "admm/admm_impl.h"
#include "dpopt/status.h"

void dpo_admm_A_destroy(dpo_admm_A_t *A) {
  if (!A) return;
  free(A->rowptr);
  free(A->colind);
  free(A->val);
  free(A);
}

/* A with the given edges on top of I_d */
static int build_WI(int32_t d, int64_t ne, const int32_t *ej, const int32_t *ek,
                    dpo_admm_A_t **out) {
  dpo_admm_A_t *A = calloc(1, sizeof *A);
  if (!A) return dpo_err(DPO_ENOMEM, "admm: out of memory");
  int64_t p = ne + d;
  if (p > 2147483647) {
    free(A);
    return dpo_err(DPO_EINVAL, "admm: too many edges (%lld)", (long long)ne);
  }
  A->p = (int32_t)p;
  A->d = d;
  A->rowptr = malloc((size_t)(p + 1) * sizeof *A->rowptr);
  A->colind = malloc((size_t)(2 * ne + d + 1) * sizeof *A->colind);
  A->val = malloc((size_t)(2 * ne + d + 1) * sizeof *A->val);
  if (!A->rowptr || !A->colind || !A->val) {
    dpo_admm_A_destroy(A);
    return dpo_err(DPO_ENOMEM, "admm: out of memory");
  }
  int64_t nz = 0;
  A->rowptr[0] = 0;
  for (int64_t e = 0; e < ne; e++) {
    int32_t a = ej[e] < ek[e] ? ej[e] : ek[e], b = ej[e] < ek[e] ? ek[e] : ej[e];
    A->colind[nz] = a;
    A->val[nz++] = ej[e] == a ? 1.0 : -1.0;
    A->colind[nz] = b;
    A->val[nz++] = ej[e] == a ? -1.0 : 1.0;
    A->rowptr[e + 1] = nz;
  }
  for (int32_t j = 0; j < d; j++) {
    A->colind[nz] = j;
    A->val[nz++] = 1.0;
    A->rowptr[ne + j + 1] = nz;
  }
  *out = A;
  return DPO_OK;
}

int dpo_admm_A_identity(int32_t d, dpo_admm_A_t **A) {
  if (d < 1 || !A) return dpo_err(DPO_EINVAL, "admm_A_identity: d = %d", d);
  return build_WI(d, 0, NULL, NULL, A);
}

void dpo_admm_A_mul(const dpo_admm_A_t *A, const double *x, double *out) {
  for (int32_t r = 0; r < A->p; r++) {
    double s = 0.0;
    for (int64_t q = A->rowptr[r]; q < A->rowptr[r + 1]; q++) s += A->val[q] * x[A->colind[q]];
    out[r] = s;
  }
}

void dpo_admm_A_tmul(const dpo_admm_A_t *A, const double *y, double *out) {
  memset(out, 0, (size_t)A->d * sizeof *out);
  for (int32_t r = 0; r < A->p; r++)
    for (int64_t q = A->rowptr[r]; q < A->rowptr[r + 1]; q++) out[A->colind[q]] += A->val[q] * y[r];
}

/* Largest eigenvalue of the dense A'A by LAPACK dsyev (d small), else power iteration. */
static double norm2sq_dense(const dpo_admm_A_t *A) {
  int d = A->d, lwork = -1, info = 0;
  double *M = calloc((size_t)d * (size_t)d, sizeof *M), *w = malloc((size_t)d * sizeof *w), wq = 0;
  double lam = NAN;
  if (!M || !w) goto done;
  for (int32_t r = 0; r < A->p; r++)
    for (int64_t q = A->rowptr[r]; q < A->rowptr[r + 1]; q++)
      for (int64_t q2 = A->rowptr[r]; q2 < A->rowptr[r + 1]; q2++)
        M[(size_t)A->colind[q] * d + A->colind[q2]] += A->val[q] * A->val[q2];
  dsyev_("N", "U", &d, M, &d, w, &wq, &lwork, &info, 1, 1);
  lwork = (int)wq + 1;
  double *work = malloc((size_t)lwork * sizeof *work);
  if (work) {
    dsyev_("N", "U", &d, M, &d, w, work, &lwork, &info, 1, 1);
    if (info == 0) lam = w[d - 1];
    free(work);
  }
done:
  free(M);
  free(w);
  return lam;
}

double dpo_admm_A_norm2sq(const dpo_admm_A_t *A) {
  int32_t d = A->d;
  double lam = NAN;
  if (d <= 2000) {
    lam = norm2sq_dense(A);
    if (isfinite(lam)) return lam * (1.0 + 1e-12) + 1e-300; /* round up (G >= I must hold) */
  }
  double *v = malloc((size_t)d * sizeof *v), *w = malloc((size_t)d * sizeof *w),
         *t = malloc((size_t)A->p * sizeof *t);
  if (!v || !w || !t) goto done;
  /* deterministic pseudo-random start: overlaps every eigenvector generically (a near-constant
   * start is almost orthogonal to a Laplacian's top eigenvector) */
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int32_t j = 0; j < d; j++) {
    h ^= h << 13;
    h ^= h >> 7;
    h ^= h << 17;
    v[j] = (double)(h >> 11) * 0x1.0p-53 - 0.5;
  }
  cblas_dscal(d, 1.0 / cblas_dnrm2(d, v, 1), v, 1);
  lam = 0.0;
  for (int it = 0; it < 100000; it++) {
    dpo_admm_A_mul(A, v, t);
    dpo_admm_A_tmul(A, t, w);
    double rq = cblas_ddot(d, v, 1, w, 1), nw = cblas_dnrm2(d, w, 1);
    if (!(nw > 0)) break;
    lam = nw;
    /* stop on a small eigen-residual ||A'A v - rq v|| */
    double res = 0.0;
    for (int32_t j = 0; j < d; j++) res += (w[j] - rq * v[j]) * (w[j] - rq * v[j]);
    memcpy(v, w, (size_t)d * sizeof *v);
    cblas_dscal(d, 1.0 / nw, v, 1);
    if (it > 10 && sqrt(res) <= 1e-9 * nw) break;
  }
  lam *= 1.0 + 1e-6; /* power iteration approaches from below: round up */
done:
  free(v);
  free(w);
  free(t);
  return lam;
}

int dpo_admm_graph_load(const char *path, int32_t d, dpo_admm_A_t **A) {
  if (!path || !A || d < 1) return dpo_err(DPO_EINVAL, "admm_graph_load: bad argument");
  FILE *f = fopen(path, "r");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot open: %s", path, strerror(errno));
  int st = DPO_OK;
  int64_t ne = 0, cap = 64, line = 0;
  int32_t *ej = malloc((size_t)cap * sizeof *ej), *ek = malloc((size_t)cap * sizeof *ek);
  char buf[512];
  if (!ej || !ek) st = dpo_err(DPO_ENOMEM, "admm: out of memory");
  while (!st && fgets(buf, sizeof buf, f)) {
    line++;
    char *p = buf;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || *p == '\r' || *p == 0) continue;
    long a, b;
    char extra[8];
    int n = sscanf(p, "%ld %ld %7s", &a, &b, extra);
    if (n != 2 || a < 0 || b < 0 || a >= d || b >= d || a == b) {
      st = dpo_err(DPO_EFORMAT, "%s:%lld: expected \"j k\" with 0 <= j != k < %d", path,
                   (long long)line, d);
      break;
    }
    if (ne == cap) {
      cap *= 2;
      int32_t *nj = realloc(ej, (size_t)cap * sizeof *ej);
      if (nj) ej = nj;
      int32_t *nk = realloc(ek, (size_t)cap * sizeof *ek);
      if (nk) ek = nk;
      if (!nj || !nk) {
        st = dpo_err(DPO_ENOMEM, "admm: out of memory");
        break;
      }
    }
    ej[ne] = (int32_t)a;
    ek[ne++] = (int32_t)b;
  }
  if (!st && ferror(f)) st = dpo_err(DPO_EIO, "%s: read error", path);
  fclose(f);
  if (!st) st = build_WI(d, ne, ej, ek, A);
  free(ej);
  free(ek);
  return st;
}

typedef struct {
  double c;
  int32_t j, k;
} edge_t;

static int edge_cmp(const void *a, const void *b) {
  const edge_t *x = a, *y = b;
  if (x->c != y->c) return x->c > y->c ? -1 : 1; /* strongest first */
  if (x->j != y->j) return x->j < y->j ? -1 : 1;
  return x->k < y->k ? -1 : (x->k > y->k);
}

int dpo_admm_graph_from_public(MPI_Comm comm, const dpo_shard_t *pub, double thresh,
                               int32_t max_edges, const char *path, dpo_admm_A_t **A) {
  int st = DPO_OK, rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (!pub || !A || !(thresh >= 0 && thresh <= 1) || max_edges < 0)
    return dpo_agree(comm, dpo_err(DPO_EINVAL, "admm_graph_from_public: bad argument"));
  int32_t d = pub->d;
  size_t D = (size_t)d, nb = D * D + D + 1;
  /* moment sums: [sum u u' | sum u | n] */
  double *m = calloc(nb, sizeof *m), *M = malloc(nb * sizeof *M);
  edge_t *E = NULL;
  int32_t *ej = NULL, *ek = NULL;
  int64_t ne = 0;
  if (!m || !M) st = dpo_err(DPO_ENOMEM, "admm: out of memory");
  if (!st) {
    double *row = calloc(D, sizeof *row);
    if (!row) st = dpo_err(DPO_ENOMEM, "admm: out of memory");
    for (int64_t i = 0; !st && i < pub->n; i++) {
      if (pub->sparse) {
        memset(row, 0, D * sizeof *row);
        for (int64_t q = pub->rowptr[i]; q < pub->rowptr[i + 1]; q++) row[pub->colind[q]] = pub->val[q];
      } else {
        memcpy(row, pub->X + (size_t)i * D, D * sizeof *row);
      }
      cblas_dger(CblasRowMajor, d, d, 1.0, row, 1, row, 1, m, d);
      cblas_daxpy(d, 1.0, row, 1, m + D * D, 1);
    }
    m[nb - 1] = (double)pub->n;
    free(row);
  }
  st = dpo_agree(comm, st);
  if (!st && MPI_Allreduce(m, M, (int)nb, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
    st = dpo_err(DPO_EMPI, "admm_graph_from_public: MPI_Allreduce failed");
  st = dpo_agree(comm, st);
  if (st) goto done;
  double n = M[nb - 1];
  E = malloc((D * (D - 1) / 2 + 1) * sizeof *E);
  if (!E) st = dpo_err(DPO_ENOMEM, "admm: out of memory");
  for (int32_t j = 0; !st && j < d; j++) {
    double mj = M[D * D + j] / n, vj = M[(size_t)j * D + j] / n - mj * mj;
    for (int32_t k = j + 1; k < d; k++) {
      double mk = M[D * D + k] / n, vk = M[(size_t)k * D + k] / n - mk * mk;
      if (!(vj > 1e-300 && vk > 1e-300)) continue; /* constant column: no correlation */
      double c = (M[(size_t)j * D + k] / n - mj * mk) / sqrt(vj * vk);
      if (fabs(c) >= thresh) E[ne++] = (edge_t){fabs(c), j, k};
    }
  }
  if (!st) {
    qsort(E, (size_t)ne, sizeof *E, edge_cmp);
    if (ne > max_edges) ne = max_edges;
    ej = malloc((size_t)(ne + 1) * sizeof *ej);
    ek = malloc((size_t)(ne + 1) * sizeof *ek);
    if (!ej || !ek) st = dpo_err(DPO_ENOMEM, "admm: out of memory");
    for (int64_t e = 0; !st && e < ne; e++) {
      ej[e] = E[e].j;
      ek[e] = E[e].k;
    }
  }
  if (!st && rank == 0 && path) {
    FILE *f = fopen(path, "w");
    if (!f) st = dpo_err(DPO_EIO, "%s: cannot create: %s", path, strerror(errno));
    else {
      fprintf(f, "# dpopt graph: |corr| >= %g on the PUBLIC set %s (%lld edges, d = %d)\n",
              thresh, pub->source, (long long)ne, d);
      for (int64_t e = 0; e < ne; e++) fprintf(f, "%d %d\n", ej[e], ek[e]);
      if (fclose(f) != 0) st = dpo_err(DPO_EIO, "%s: write failed", path);
    }
  }
  if (!st) st = build_WI(d, ne, ej, ek, A);
  st = dpo_agree(comm, st);
done:
  free(m);
  free(M);
  free(E);
  free(ej);
  free(ek);
  return st;
}
