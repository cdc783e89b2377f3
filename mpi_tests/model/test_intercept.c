/* Unit tests for the intercept (bias) of the logistic and squared-loss models (src/model/
 * model.c, issue 13): the augmented shard, the gradient against central finite differences
 * and against a naive loop that never sees the constant column, the public bounds against
 * brute force over the rows, the closed form "least squares with intercept = least squares on
 * centered data", and the model.txt "intercept" line (an old file without it still loads). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/kernels.h"
#include "dpopt/model.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

static uint64_t rs;
static double urand(void) { /* xorshift64*, uniform in [0, 1) */
  rs ^= rs >> 12;
  rs ^= rs << 25;
  rs ^= rs >> 27;
  return (double)((rs * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

enum { N = 40, D = 5 };
static double U[N * D], Y[N];

/* A dense and a CSR shard of the same rows U (about half the entries zero). */
static void make(int binary, dpo_shard_t *dn, dpo_shard_t *sp, uint64_t seed) {
  rs = seed * 0x9E3779B97F4A7C15ULL + 7;
  memset(dn, 0, sizeof *dn);
  memset(sp, 0, sizeof *sp);
  dn->n = sp->n = dn->n_global = sp->n_global = N;
  dn->d = sp->d = D;
  dn->labels = sp->labels = binary ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
  dn->X = malloc(sizeof U);
  dn->y = malloc(sizeof Y);
  sp->y = malloc(sizeof Y);
  sp->rowptr = malloc((N + 1) * sizeof *sp->rowptr);
  sp->colind = malloc(N * D * sizeof *sp->colind);
  sp->val = malloc(N * D * sizeof *sp->val);
  cr_assert(dn->X && dn->y && sp->y && sp->rowptr && sp->colind && sp->val);
  sp->sparse = 1;
  int64_t k = 0;
  sp->rowptr[0] = 0;
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < D; j++) {
      double v = urand() < 0.5 ? 0.0 : 2 * urand() - 1 + (j == 0 ? 1.5 : 0); /* mean != 0 */
      U[i * D + j] = v;
      if (v != 0) {
        sp->colind[k] = j;
        sp->val[k++] = v;
      }
    }
    sp->rowptr[i + 1] = k;
    Y[i] = binary ? (urand() < 0.6 ? 1.0 : -1.0) : 2.0 + 3 * (2 * urand() - 1);
  }
  memcpy(dn->X, U, sizeof U);
  memcpy(dn->y, Y, sizeof Y);
  memcpy(sp->y, Y, sizeof Y);
}

static void drop(dpo_shard_t *s) {
  free(s->X);
  free(s->y);
  free(s->rowptr);
  free(s->colind);
  free(s->val);
}

/* F and grad F through the model (augmented shard, x of length D + 1). */
static double fg(const dpo_model_t *m, const dpo_shard_t *s, const double *x, double *g) {
  double F = 0, gl[D + 1];
  cr_assert_eq(dpo_model_local_grad(m, s, x, NULL, 0, NULL, NULL, &F, g ? g : gl), 0);
  dpo_model_finish(m, D + 1, N, x, &F, g ? g : gl);
  return F;
}

/* The same objective written out on the raw rows with a separate bias b = x[D]. */
static double naive(int logistic, double lambda, const double *x, double *g) {
  double F = 0;
  memset(g, 0, (D + 1) * sizeof *g);
  for (int i = 0; i < N; i++) {
    double t = x[D];
    for (int j = 0; j < D; j++) t += U[i * D + j] * x[j];
    double c;
    if (logistic) {
      double z = -Y[i] * t;
      F += z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
      c = -Y[i] / (1 + exp(-z));
    } else {
      F += 0.5 * (t - Y[i]) * (t - Y[i]);
      c = t - Y[i];
    }
    for (int j = 0; j < D; j++) g[j] += c * U[i * D + j];
    g[D] += c; /* d t / d b = 1 */
  }
  double xx = 0;
  for (int j = 0; j <= D; j++) {
    g[j] = g[j] / N + 2 * lambda * x[j];
    xx += x[j] * x[j];
  }
  return F / N + lambda * xx;
}

static void check_grad(const char *name, double lambda) {
  dpo_shard_t dn, sp;
  make(!strcmp(name, "logreg"), &dn, &sp, 3);
  dpo_model_t *m;
  cr_assert_eq(dpo_model_create(name, lambda, &m), 0);
  cr_assert_eq(dpo_model_intercept(m), 0, "off by default");
  cr_assert_eq(dpo_model_set_intercept(m, 1), 0);
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), 0);
  cr_assert_eq(dpo_model_prepare_shard(m, &sp), 0);
  cr_assert_eq(dn.d, D + 1);
  cr_assert_eq(sp.d, D + 1);
  for (int i = 0; i < N; i++) {
    cr_assert_eq(dn.X[i * (D + 1) + D], DPO_MODEL_ICPT);
    int64_t e = sp.rowptr[i + 1] - 1;
    cr_assert(e >= sp.rowptr[i] && sp.colind[e] == D && sp.val[e] == DPO_MODEL_ICPT);
    for (int64_t p = sp.rowptr[i] + 1; p <= e; p++) cr_assert(sp.colind[p] > sp.colind[p - 1]);
    /* the dense rows were widened in place: every entry where the sparse copy has it */
    for (int64_t p = sp.rowptr[i]; p < e; p++)
      cr_assert_eq(dn.X[i * (D + 1) + sp.colind[p]], sp.val[p], "row %d col %d", i, sp.colind[p]);
  }
  double x[D + 1], g[D + 1], gs[D + 1], gn[D + 1];
  for (int j = 0; j <= D; j++) x[j] = 0.7 * (2 * urand() - 1);
  x[D] = -0.8;
  double F = fg(m, &dn, x, g), Fs = fg(m, &sp, x, gs), Fn = naive(!strcmp(name, "logreg"), lambda, x, gn);
  cr_assert_float_eq(F, Fn, 1e-12 * (1 + fabs(Fn)), "%s: F %.17g vs naive %.17g", name, F, Fn);
  cr_assert_float_eq(Fs, Fn, 1e-12 * (1 + fabs(Fn)));
  for (int j = 0; j <= D; j++) {
    cr_assert_float_eq(g[j], gn[j], 1e-12, "%s: g[%d] %.17g vs naive %.17g", name, j, g[j], gn[j]);
    cr_assert_float_eq(gs[j], gn[j], 1e-12);
    double h = 1e-5, xp[D + 1], xm[D + 1];
    memcpy(xp, x, sizeof x);
    memcpy(xm, x, sizeof x);
    xp[j] += h;
    xm[j] -= h;
    double fd = (fg(m, &dn, xp, NULL) - fg(m, &dn, xm, NULL)) / (2 * h);
    cr_assert_float_eq(g[j], fd, 1e-7, "%s: g[%d] = %.12g, finite difference %.12g", name, j,
                       g[j], fd);
  }
  dpo_model_destroy(m);
  drop(&dn);
  drop(&sp);
}

Test(intercept, logreg_gradient) { check_grad("logreg", 1e-2); }
Test(intercept, ridge_gradient) { check_grad("ridge", 1e-2); }

/* The public constants at the augmented bound, and brute force over the rows: every
 * augmented row and every per-example gradient (unclipped logistic, clipped at C) is within
 * the bound the model states, at random points. */
Test(intercept, bounds) {
  dpo_shard_t dn, sp;
  make(1, &dn, &sp, 5);
  dpo_model_t *m, *m0;
  cr_assert_eq(dpo_model_create("logreg", 0.01, &m), 0);
  cr_assert_eq(dpo_model_create("logreg", 0.01, &m0), 0);
  dpo_model_set_intercept(m, 1);
  double B1 = 0, B2 = 0;
  for (int i = 0; i < N; i++) {
    double a = 0, b = 0;
    for (int j = 0; j < D; j++) a += fabs(U[i * D + j]), b += U[i * D + j] * U[i * D + j];
    B1 = fmax(B1, a);
    B2 = fmax(B2, sqrt(b));
  }
  cr_assert_float_eq(dpo_model_row_bound(m, 0, 3.0), sqrt(10.0), 1e-15);
  cr_assert_float_eq(dpo_model_row_bound(m, 1, 3.0), 4.0, 1e-15);
  cr_assert_eq(dpo_model_row_bound(m0, 0, 3.0), 3.0);
  cr_assert_float_eq(dpo_model_L_bound(m, 3.0), 10.0 / 4 + 0.02, 1e-15);
  cr_assert_float_eq(dpo_model_grad_l1_sens(m, 3.0), 8.0, 1e-15);
  cr_assert_float_eq(dpo_model_mu(m), 0.02, 1e-15, "the bias is regularized: mu stays 2 lambda");
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), 0);
  double b2 = dpo_model_row_bound(m, 0, B2), b1 = dpo_model_row_bound(m, 1, B1);
  for (int trial = 0; trial < 5; trial++) {
    double x[D + 1];
    for (int j = 0; j <= D; j++) x[j] = 4 * (2 * urand() - 1);
    for (int64_t i = 0; i < N; i++) {
      double g[D + 1], l = 0, n1 = 0, n2 = 0, gc[D + 1], nc = 0;
      memset(g, 0, sizeof g);
      memset(gc, 0, sizeof gc);
      cr_assert_eq(dpo_model_local_grad(m, &dn, x, &i, 1, NULL, NULL, &l, g), 0);
      dpo_clip_t clip = {DPO_CLIP_L2, 0.3};
      cr_assert_eq(dpo_model_local_grad(m, &dn, x, &i, 1, &clip, NULL, &l, gc), 0);
      for (int j = 0; j <= D; j++) n1 += fabs(g[j]), n2 += g[j] * g[j], nc += gc[j] * gc[j];
      cr_assert(n1 <= b1 * (1 + 1e-12) && sqrt(n2) <= b2 * (1 + 1e-12),
                "row %lld: |g|_1 %g |g|_2 %g over %g %g", (long long)i, n1, sqrt(n2), b1, b2);
      cr_assert(sqrt(nc) <= 0.3 * (1 + 1e-12), "clipped gradient %g over C", sqrt(nc));
    }
  }
  /* smoothness: the largest eigenvalue of (1/n) sum (1/4) u~ u~' by power iteration is <= L */
  double v[D + 1], w[D + 1], lam = 0;
  for (int j = 0; j <= D; j++) v[j] = 1;
  for (int it = 0; it < 200; it++) {
    memset(w, 0, sizeof w);
    for (int i = 0; i < N; i++) {
      double t = 0;
      for (int j = 0; j <= D; j++) t += dn.X[i * (D + 1) + j] * v[j];
      for (int j = 0; j <= D; j++) w[j] += 0.25 * t * dn.X[i * (D + 1) + j] / N;
    }
    double nw = 0;
    for (int j = 0; j <= D; j++) nw += w[j] * w[j];
    lam = sqrt(nw);
    for (int j = 0; j <= D; j++) v[j] = w[j] / lam;
  }
  cr_assert(lam + 0.02 <= dpo_model_L_bound(m, B2) * (1 + 1e-12), "lambda_max %g vs L %g",
            lam + 0.02, dpo_model_L_bound(m, B2));
  dpo_model_destroy(m);
  dpo_model_destroy(m0);
  drop(&dn);
  drop(&sp);
}

/* Gaussian elimination with partial pivoting on a k x k system (k <= D + 1). */
static void solve(int k, double *A, double *b) {
  for (int c = 0; c < k; c++) {
    int p = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(A[r * k + c]) > fabs(A[p * k + c])) p = r;
    for (int j = 0; j < k; j++) {
      double t = A[c * k + j];
      A[c * k + j] = A[p * k + j];
      A[p * k + j] = t;
    }
    double t = b[c];
    b[c] = b[p];
    b[p] = t;
    for (int r = c + 1; r < k; r++) {
      double f = A[r * k + c] / A[c * k + c];
      for (int j = c; j < k; j++) A[r * k + j] -= f * A[c * k + j];
      b[r] -= f * b[c];
    }
  }
  for (int c = k - 1; c >= 0; c--) {
    for (int j = c + 1; j < k; j++) b[c] -= A[c * k + j] * b[j];
    b[c] /= A[c * k + c];
  }
}

/* lsq with intercept: the normal equations of the augmented rows (Hessian from the model's
 * kernel, right-hand side = -grad at 0) against the centering solution
 *   w = argmin ||(U - 1 ubar')w - (y - ybar)||^2,  b = ybar - ubar'w. */
Test(intercept, lsq_equals_centering) {
  dpo_shard_t dn, sp;
  make(0, &dn, &sp, 11);
  dpo_model_t *m;
  cr_assert_eq(dpo_model_create("lsq", 0, &m), 0);
  dpo_model_set_intercept(m, 1);
  cr_assert_eq(dpo_model_prepare_shard(m, &sp), 0);
  double H[(D + 1) * (D + 1)] = {0}, x0[D + 1] = {0}, g[D + 1], l = 0;
  cr_assert_eq(dpo_model_local_hess(m, &sp, x0, H), 0);
  cr_assert_eq(dpo_model_local_grad(m, &sp, x0, NULL, 0, NULL, NULL, &l, g), 0);
  for (int j = 0; j <= D; j++) g[j] = -g[j];
  solve(D + 1, H, g); /* g = (w, b) */
  double ub[D] = {0}, yb = 0, A[D * D] = {0}, r[D] = {0};
  for (int i = 0; i < N; i++) {
    yb += Y[i] / N;
    for (int j = 0; j < D; j++) ub[j] += U[i * D + j] / N;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < D; j++) {
      double cj = U[i * D + j] - ub[j];
      r[j] += cj * (Y[i] - yb);
      for (int k = 0; k < D; k++) A[j * D + k] += cj * (U[i * D + k] - ub[k]);
    }
  solve(D, A, r);
  double b = yb;
  for (int j = 0; j < D; j++) {
    b -= ub[j] * r[j];
    cr_assert_float_eq(g[j], r[j], 1e-9, "w[%d]: %.15g vs centered %.15g", j, g[j], r[j]);
  }
  cr_assert_float_eq(g[D], b, 1e-9, "b: %.15g vs ybar - ubar'w = %.15g", g[D], b);
  cr_assert(fabs(b) > 0.5, "the test needs a nonzero intercept (b = %g)", b);
  dpo_model_destroy(m);
  drop(&dn);
  drop(&sp);
}

/* model.txt: the intercept line round-trips; a file without it (the old format) loads as a
 * model without intercept; junk after the intercept line is refused. */
Test(intercept, model_file) {
  char p[] = "/tmp/dpo_icpt_XXXXXX";
  int fd = mkstemp(p);
  cr_assert(fd >= 0);
  close(fd);
  double x[3] = {0.25, -1.5, 0.1 + 0.2}, *r = NULL;
  int32_t d = 0;
  int ic = -1;
  cr_assert_eq(dpo_model_write_icpt(p, x, 2, 1, "test\nmodel"), 0);
  cr_assert_eq(dpo_model_read_icpt(p, &r, &d, &ic), 0);
  cr_assert(d == 2 && ic == 1 && r[0] == x[0] && r[1] == x[1] && r[2] == x[2]);
  free(r);
  cr_assert_eq(dpo_model_read(p, &r, &d), 0);
  cr_assert(d == 3 && r[2] == x[2], "dpo_model_read: the whole vector, bias last");
  free(r);
  FILE *f = fopen(p, "w");
  fputs("# old format\n2\n0.5\n-2\n", f);
  fclose(f);
  cr_assert_eq(dpo_model_read_icpt(p, &r, &d, &ic), 0);
  cr_assert(d == 2 && ic == 0 && r[0] == 0.5 && r[1] == -2);
  free(r);
  f = fopen(p, "w");
  fputs("2\n0.5\n-2\nintercept 1\n3\n", f);
  fclose(f);
  cr_assert_eq(dpo_model_read_icpt(p, &r, &d, &ic), DPO_EFORMAT);
  f = fopen(p, "w");
  fputs("2\n0.5\nintercept 1\n", f);
  fclose(f);
  cr_assert_neq(dpo_model_read_icpt(p, &r, &d, &ic), 0, "intercept before all coefficients");
  unlink(p);
}
