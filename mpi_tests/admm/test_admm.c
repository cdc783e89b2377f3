/* Serial pieces of src/admm against independent computations written here: soft threshold and
 * the L2 prox against direct 1-D minimization (golden section); the exact least-squares local
 * x-update against normal equations solved by Gaussian elimination; the L-BFGS logistic local
 * x-update against Newton's method; ||A'A||_2 of a path graph's [W; I] against its closed form;
 * u0 by dgelsd against A (A'A)^{-1}(-g/rho); edge-list parsing errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/admm.h"
#include "dpopt/status.h"
#include "../lib/t_gauss.h"

/* golden-section minimum of a convex 1-D function on [a, b] */
static double golden(double (*f)(double, const double *), const double *prm, double a, double b) {
  const double r = (sqrt(5.0) - 1) / 2;
  double c = b - r * (b - a), d = a + r * (b - a);
  for (int i = 0; i < 300 && b - a > 1e-13; i++) {
    if (f(c, prm) < f(d, prm)) b = d;
    else a = c;
    c = b - r * (b - a);
    d = a + r * (b - a);
  }
  return 0.5 * (a + b);
}
static double f_l1(double z, const double *p) { return 0.5 * (z - p[0]) * (z - p[0]) + p[1] * fabs(z); }
static double f_l2(double z, const double *p) {
  return (z - p[0]) * (z - p[0]) / (2 * p[2]) + p[1] * z * z;
}

Test(admm, soft_threshold_is_the_l1_prox) {
  double v[9] = {-3, -1.5, -0.7, -0.2, 0, 0.2, 0.7, 1.5, 3}, out[9];
  for (int t = 0; t < 3; t++) {
    double kap = 0.1 + 0.6 * t;
    dpo_admm_soft_threshold(v, kap, 9, out);
    for (int j = 0; j < 9; j++) {
      double prm[2] = {v[j], kap};
      double zs = golden(f_l1, prm, -10, 10);
      cr_assert(fabs(out[j] - zs) < 1e-7, "v %g kappa %g: %g vs direct %g", v[j], kap, out[j], zs);
    }
  }
  /* the prox form: t lambda */
  double o2[9];
  dpo_admm_prox(DPO_ADMM_G_L1, 0.5, 2.0, v, 9, o2);
  dpo_admm_soft_threshold(v, 1.0, 9, out);
  for (int j = 0; j < 9; j++) cr_assert_eq(o2[j], out[j]);
}

Test(admm, l2_prox_against_direct_minimization) {
  double v[5] = {-2, -0.3, 0, 0.8, 4}, out[5];
  dpo_admm_prox(DPO_ADMM_G_L2, 0.7, 0.4, v, 5, out);
  for (int j = 0; j < 5; j++) {
    double prm[3] = {v[j], 0.7, 0.4};
    double zs = golden(f_l2, prm, -10, 10);
    cr_assert(fabs(out[j] - zs) < 1e-7, "%g vs %g", out[j], zs);
  }
  cr_assert_float_eq(dpo_admm_g_value(DPO_ADMM_G_L2, 0.5, v, 5), 0.5 * (4 + 0.09 + 0.64 + 16), 1e-12);
  cr_assert_float_eq(dpo_admm_g_value(DPO_ADMM_G_L1, 0.5, v, 5), 0.5 * (2 + 0.3 + 0.8 + 4), 1e-12);
}

#define NR 30
#define ND 5
static dpo_shard_t *small_shard(int binary) {
  dpo_shard_t *s = calloc(1, sizeof *s);
  s->n = NR;
  s->n_global = 3 * NR; /* the shard is a third of the global set: f_i scales by 1/n_global */
  s->d = ND;
  s->X = malloc(NR * ND * sizeof *s->X);
  s->y = malloc(NR * sizeof *s->y);
  s->labels = binary ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
  for (int i = 0; i < NR; i++) {
    double t = 0;
    for (int j = 0; j < ND; j++) {
      s->X[i * ND + j] = sin(1.3 * i + 0.7 * j * j + 0.1);
      t += s->X[i * ND + j] * (j - 2);
    }
    s->y[i] = binary ? (sin(5.0 * i) + 0.3 * t > 0 ? 1 : -1) : t + 0.2 * cos(3.0 * i);
  }
  return s;
}
static void free_shard(dpo_shard_t *s) {
  free(s->X);
  free(s->y);
  free(s);
}

Test(admm, exact_lsq_xupdate_against_normal_equations) {
  dpo_shard_t *s = small_shard(0);
  dpo_model_t *m = NULL;
  cr_assert_eq(dpo_model_create("lsq", 0, &m), DPO_OK);
  double rho = 0.3, v[ND] = {0.5, -1, 0.25, 2, 0}, x[ND] = {0}, M[ND * ND] = {0}, b[ND];
  /* (X'X / n + rho I) x = X'y / n + rho v */
  double n = (double)s->n_global;
  for (int i = 0; i < ND; i++) {
    b[i] = rho * v[i];
    for (int r = 0; r < NR; r++) b[i] += s->X[r * ND + i] * s->y[r] / n;
    for (int j = 0; j < ND; j++) {
      for (int r = 0; r < NR; r++) M[i * ND + j] += s->X[r * ND + i] * s->X[r * ND + j] / n;
      if (i == j) M[i * ND + j] += rho;
    }
  }
  t_gauss(M, b, ND);
  cr_assert_eq(dpo_admm_local_prox(m, s, DPO_ADMM_X_EXACT, rho, v, x, NULL), DPO_OK, "%s", dpo_errmsg());
  for (int j = 0; j < ND; j++) cr_assert(fabs(x[j] - b[j]) < 1e-12, "x[%d] %g vs %g", j, x[j], b[j]);
  dpo_model_destroy(m);
  free_shard(s);
}

Test(admm, lbfgs_logistic_xupdate_against_newton) {
  dpo_shard_t *s = small_shard(1);
  dpo_model_t *m = NULL;
  cr_assert_eq(dpo_model_create("logreg", 0, &m), DPO_OK);
  double rho = 0.05, v[ND] = {0.5, -1, 0.25, 2, 0}, x[ND] = {1, 1, 1, 1, 1}, z[ND] = {0};
  double n = (double)s->n_global;
  /* Newton on (1/n) sum log(1 + exp(-y u'z)) + rho/2 ||z - v||^2 */
  for (int it = 0; it < 50; it++) {
    double g[ND], H[ND * ND];
    for (int i = 0; i < ND; i++) {
      g[i] = rho * (z[i] - v[i]);
      for (int j = 0; j < ND; j++) H[i * ND + j] = i == j ? rho : 0;
    }
    for (int r = 0; r < NR; r++) {
      double t = 0;
      for (int j = 0; j < ND; j++) t += s->X[r * ND + j] * z[j];
      double sg = 1 / (1 + exp(s->y[r] * t)); /* sigma(-y t) */
      for (int i = 0; i < ND; i++) {
        g[i] += -s->y[r] * sg * s->X[r * ND + i] / n;
        for (int j = 0; j < ND; j++) H[i * ND + j] += sg * (1 - sg) * s->X[r * ND + i] * s->X[r * ND + j] / n;
      }
    }
    t_gauss(H, g, ND);
    for (int j = 0; j < ND; j++) z[j] -= g[j];
  }
  int64_t its = 0;
  cr_assert_eq(dpo_admm_local_prox(m, s, DPO_ADMM_X_LBFGS, rho, v, x, &its), DPO_OK);
  for (int j = 0; j < ND; j++) cr_assert(fabs(x[j] - z[j]) < 1e-9, "x[%d] %.12g vs Newton %.12g", j, x[j], z[j]);
  cr_assert(its > 0);
  dpo_model_destroy(m);
  free_shard(s);
}

Test(admm, path_graph_norm_and_u0) {
  const int d = 7;
  char path[64];
  snprintf(path, sizeof path, "/tmp/admm_unit_graph_%d.txt", (int)getpid());
  FILE *f = fopen(path, "w");
  fprintf(f, "# path\n");
  for (int j = 0; j + 1 < d; j++) fprintf(f, "%d %d\n", j, j + 1);
  fclose(f);
  dpo_admm_A_t *A = NULL;
  cr_assert_eq(dpo_admm_graph_load(path, d, &A), DPO_OK, "%s", dpo_errmsg());
  unlink(path);
  cr_assert_eq(A->p, d - 1 + d);
  /* A'A = Laplacian(path) + I: largest eigenvalue 1 + 2 - 2 cos(pi (d-1) / d) */
  double lam = 3.0 - 2.0 * cos(M_PI * (d - 1) / d), est = dpo_admm_A_norm2sq(A);
  cr_assert(est >= lam && est <= lam * (1 + 1e-5), "||A'A|| %.12g vs %.12g", est, lam);
  /* u0 = A (A'A)^{-1} (-g / rho) (min-norm solution; A' has full row rank) */
  double g[7], b[7], M[49] = {0}, u[13], ur[13];
  for (int j = 0; j < d; j++) b[j] = -(g[j] = sin(j + 0.5)) / 0.5;
  for (int i = 0; i < d; i++) {
    M[i * d + i] = 1 + (i > 0) + (i < d - 1);
    if (i > 0) M[i * d + i - 1] = -1;
    if (i < d - 1) M[i * d + i + 1] = -1;
  }
  t_gauss(M, b, d);
  dpo_admm_A_mul(A, b, ur);
  cr_assert_eq(dpo_admm_u0_lapack(A, g, 0.5, u), DPO_OK);
  for (int r = 0; r < A->p; r++) cr_assert(fabs(u[r] - ur[r]) < 1e-12, "u0[%d] %g vs %g", r, u[r], ur[r]);
  dpo_admm_A_destroy(A);
}

/* A = I takes no SVD (pinv.c): u0 = -g / rho, the min-norm solution of I u = -g / rho; an
 * identity with one entry scaled is not I and goes through dgelsd: u0[j] = -g[j] / (rho a) */
Test(admm, u0_identity) {
  const int d = 5;
  dpo_admm_A_t *A = NULL;
  double g[5], u[5];
  for (int j = 0; j < d; j++) g[j] = cos(j + 0.25);
  cr_assert_eq(dpo_admm_A_identity(d, &A), DPO_OK);
  cr_assert_eq(dpo_admm_u0_lapack(A, g, 0.5, u), DPO_OK);
  for (int j = 0; j < d; j++) cr_assert(u[j] == -g[j] / 0.5, "u0[%d] %g vs %g", j, u[j], -g[j] / 0.5);
  A->val[2] = 2.0;
  cr_assert_eq(dpo_admm_u0_lapack(A, g, 0.5, u), DPO_OK);
  for (int j = 0; j < d; j++) {
    const double want = -g[j] / 0.5 / (j == 2 ? 2.0 : 1.0);
    cr_assert(fabs(u[j] - want) < 1e-12, "u0[%d] %g vs %g", j, u[j], want);
  }
  dpo_admm_A_destroy(A);
}

Test(admm, graph_file_errors) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/admm_unit_bad_%d.txt", (int)getpid());
  FILE *f = fopen(path, "w");
  fprintf(f, "0 1\n2 9\n");
  fclose(f);
  dpo_admm_A_t *A = NULL;
  cr_assert_eq(dpo_admm_graph_load(path, 5, &A), DPO_EFORMAT);
  cr_assert(strstr(dpo_errmsg(), ":2:") != NULL, "%s", dpo_errmsg());
  unlink(path);
  cr_assert_eq(dpo_admm_graph_load("/nonexistent/graph", 5, &A), DPO_EIO);
}

/* issue 14: the status line printed "s 7.491e-03 <= 1.572e-05" for a failed test */
Test(admm, status_line_signs_follow_the_tests) {
  dpo_admm_info_t inf;
  memset(&inf, 0, sizeof inf);
  char b[160];
  inf.iters = 200;
  inf.r_norm = 1.98e-6;
  inf.eps_pri = 5.854e-5;
  inf.s_norm = 7.491e-3;
  inf.eps_dual = 1.572e-5;
  dpo_admm_status_line(&inf, b, sizeof b);
  cr_assert_str_eq(b, "200  converged 0  (r 1.980e-06 <= 5.854e-05, s 7.491e-03 > 1.572e-05)");
  inf.r_norm = 1e-3;
  inf.s_norm = 1e-6;
  inf.converged = 0;
  dpo_admm_status_line(&inf, b, sizeof b);
  cr_assert_str_eq(b, "200  converged 0  (r 1.000e-03 > 5.854e-05, s 1.000e-06 <= 1.572e-05)");
  inf.r_norm = inf.eps_pri; /* equality passes (Boyd: r <= eps_pri) */
  inf.converged = 1;
  dpo_admm_status_line(&inf, b, sizeof b);
  cr_assert_str_eq(b, "200  converged 1  (r 5.854e-05 <= 5.854e-05, s 1.000e-06 <= 1.572e-05)");
  inf.r_norm = inf.s_norm = inf.eps_pri = inf.eps_dual = NAN;
  dpo_admm_status_line(&inf, b, sizeof b);
  cr_assert(strstr(b, "r nan ? nan, s nan ? nan") != NULL, "%s", b);
}
