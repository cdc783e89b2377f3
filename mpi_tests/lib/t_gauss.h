/* Dense solve for the tests' independent references (unit and MPI tests): Gaussian elimination
 * with partial pivoting, written here rather than taken from LAPACK so a reference does not
 * share code with what it checks. */
#ifndef DPO_T_GAUSS_H
#define DPO_T_GAUSS_H

#include <math.h>

/* solve M x = b in place (n x n row-major M is destroyed, b becomes x) */
static inline void t_gauss(double *M, double *b, int n) {
  for (int c = 0; c < n; c++) {
    int pv = c;
    for (int r = c + 1; r < n; r++)
      if (fabs(M[r * n + c]) > fabs(M[pv * n + c])) pv = r;
    for (int j = 0; j < n; j++) {
      double t = M[c * n + j];
      M[c * n + j] = M[pv * n + j];
      M[pv * n + j] = t;
    }
    double t = b[c];
    b[c] = b[pv];
    b[pv] = t;
    for (int r = c + 1; r < n; r++) {
      double f = M[r * n + c] / M[c * n + c];
      for (int j = c; j < n; j++) M[r * n + j] -= f * M[c * n + j];
      b[r] -= f * b[c];
    }
  }
  for (int c = n - 1; c >= 0; c--) {
    for (int j = c + 1; j < n; j++) b[c] -= M[c * n + j] * b[j];
    b[c] /= M[c * n + c];
  }
}

#endif
