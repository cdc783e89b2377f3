/* Example 5: an accountant query.  The Renyi DP of the Poisson-subsampled Gaussian mechanism,
 * composed over T steps and converted to (eps, delta), checked against published values:
 *  - TensorFlow Privacy, rdp_accountant_test.py (test_compute_rdp): q = 0.1, z = 2, T = 10 at
 *    order 5 gives RDP 0.07737; q = 0.01, z = 2.5, T = 50 at orders 5 and 50 gives 0.00218075
 *    and 0.023846;
 *  - Opacus, opacus/tests/accountants_test.py (test_rdp_accountant): q = 0.04, z = 1.5,
 *    T = 2250 steps, delta = 1e-5 gives eps = 7.32911117143 over Opacus's default orders
 *    (1.1, 1.2, ..., 10.9, 12, ..., 63) with the conversion of Balle et al. 2020, Thm 21.
 * dpopt bounds fractional orders from the integer ones and rounds up, so its eps may only be
 * slightly larger.  Pure arithmetic on public parameters: no MPI communication.
 *   mpirun -np 1 ./ex5_accountant        (exit status 0 when every value matches) */
#include <dpopt/dpopt.h>

#include <math.h>
#include <stdio.h>

/* T steps at order a: T * RDP_1(a) (RDP composes additively per order) */
static double rdp(double q, double z, int64_t T, double a) {
  double r = NAN;
  dpo_rdp_poisson_gaussian(q, z, a, &r);
  return (double)T * r;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int bad = 0;
  double tf[3] = {rdp(0.1, 2, 10, 5), rdp(0.01, 2.5, 50, 5), rdp(0.01, 2.5, 50, 50)};
  const double tf_want[3] = {0.07737, 0.00218075, 0.023846};
  for (int k = 0; k < 3; k++) {
    printf("ex5_accountant: RDP %.8f (TF Privacy %.8f)\n", tf[k], tf_want[k]);
    bad |= !(fabs(tf[k] - tf_want[k]) < 5e-6); /* assertAlmostEqual(places=5) */
  }
  double eps = INFINITY, a_opt = 0;
  for (int i = 0; i < 99 + 52; i++) { /* Opacus DEFAULT_ALPHAS */
    double a = i < 99 ? 1 + (i + 1) / 10.0 : 12 + (i - 99), e;
    if (dpo_rdp_eps_balle(a, rdp(0.04, 1.5, 2250, a), 1e-5, &e) == DPO_OK && e < eps) {
      eps = e;
      a_opt = a;
    }
  }
  printf("ex5_accountant: eps %.8f at order %g for delta 1e-5 (Opacus 7.32911117)\n", eps, a_opt);
  bad |= !(eps >= 7.32911117143 - 1e-9 && eps < 7.32911117143 * 1.0005);
  MPI_Finalize();
  return bad;
}
