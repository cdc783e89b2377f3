/* Unit tests for the softmax model (src/model/softmax.c, issue 13): the gradient (weights and
 * the per-class intercepts) against central finite differences and against a naive loop, dense
 * vs CSR vs row-list paths, per-example clipping of the whole K x d gradient, the public
 * bounds (per-example gradient norm, smoothness L) against brute force (they must hold, and an
 * adversarial example must come within 2x so they are not vacuous), K = 2 softmax against
 * logistic regression (w = w_1 - w_0), class labels, and the multiclass model.txt. */
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

enum { N = 30, D = 4, K = 3, D1 = D + 1, P = K * D1 };
static double U[N * D], Y[N];

/* A dense and a CSR shard of the same rows (about a third of the entries zero), class labels
 * 0..nk-1, or +1/-1 (binary = 1) with the same draw (class 1 <-> +1). */
static void make(int nk, int binary, dpo_shard_t *dn, dpo_shard_t *sp, uint64_t seed) {
  rs = seed * 0x9E3779B97F4A7C15ULL + 11;
  memset(dn, 0, sizeof *dn);
  memset(sp, 0, sizeof *sp);
  dn->n = sp->n = dn->n_global = sp->n_global = N;
  dn->d = sp->d = D;
  dn->labels = sp->labels = binary ? DPO_LABELS_BINARY : DPO_LABELS_CLASS;
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
      double v = urand() < 0.33 ? 0.0 : 2 * urand() - 1 + (j == 0 ? 0.5 : 0);
      U[i * D + j] = v;
      if (v != 0) {
        sp->colind[k] = j;
        sp->val[k++] = v;
      }
    }
    sp->rowptr[i + 1] = k;
    int c = (int)(urand() * nk);
    Y[i] = binary ? (c == 1 ? 1.0 : -1.0) : c;
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

static dpo_model_t *softmax(int nk, double lambda, int icpt) {
  dpo_model_t *m;
  cr_assert_eq(dpo_model_create("softmax", lambda, &m), 0);
  cr_assert_eq(dpo_model_set_classes(m, nk), 0);
  cr_assert_eq(dpo_model_set_intercept(m, icpt), 0);
  return m;
}

/* F and grad F (length dpo_model_dim) through the model. */
static double fg(const dpo_model_t *m, const dpo_shard_t *s, const double *x, double *g) {
  double F = 0, gl[P];
  int32_t p = dpo_model_dim(m, s->d);
  cr_assert(p > 0 && p <= P);
  cr_assert_eq(dpo_model_local_grad(m, s, x, NULL, 0, NULL, NULL, &F, g ? g : gl), 0);
  dpo_model_finish(m, p, s->n, x, &F, g ? g : gl);
  return F;
}

/* The objective written out on the raw rows U, W = x as K rows of D + 1 (bias last). */
static double naive(double lambda, const double *x, double *g) {
  double F = 0, xx = 0;
  memset(g, 0, P * sizeof *g);
  for (int i = 0; i < N; i++) {
    double t[K], mx = -INFINITY, Z = 0;
    for (int k = 0; k < K; k++) {
      t[k] = x[k * D1 + D];
      for (int j = 0; j < D; j++) t[k] += x[k * D1 + j] * U[i * D + j];
      if (t[k] > mx) mx = t[k];
    }
    for (int k = 0; k < K; k++) Z += exp(t[k] - mx);
    int y = (int)Y[i];
    F += mx + log(Z) - t[y];
    for (int k = 0; k < K; k++) {
      double r = exp(t[k] - mx) / Z - (k == y);
      for (int j = 0; j < D; j++) g[k * D1 + j] += r * U[i * D + j];
      g[k * D1 + D] += r;
    }
  }
  for (int j = 0; j < P; j++) {
    g[j] = g[j] / N + 2 * lambda * x[j];
    xx += x[j] * x[j];
  }
  return F / N + lambda * xx;
}

Test(softmax, dim_labels_and_classes) {
  dpo_model_t *m;
  cr_assert_eq(dpo_model_create("softmax", 0.0, &m), 0);
  cr_assert_eq(dpo_model_dim(m, 5), -1, "no classes yet: no dimension");
  cr_assert_neq(dpo_model_set_classes(m, 1), 0);
  cr_assert_eq(dpo_model_set_classes(m, 10), 0);
  cr_assert_eq(dpo_model_dim(m, 785), 7850);
  cr_assert_eq(dpo_model_labels(m), DPO_LABELS_CLASS);
  cr_assert_str_eq(dpo_model_metric(m), "accuracy");
  cr_assert_eq(dpo_model_binary(m), 0);
  dpo_model_destroy(m);
  cr_assert_eq(dpo_model_create("logreg", 0.0, &m), 0);
  cr_assert_eq(dpo_model_dim(m, 5), 5);
  cr_assert_eq(dpo_model_set_classes(m, 0), 0);
  cr_assert_neq(dpo_model_set_classes(m, 3), 0, "one-output models take no classes");
  cr_assert_eq(dpo_model_classes(m), 0);
  dpo_model_destroy(m);
}

Test(softmax, gradient_vs_naive_and_finite_differences) {
  dpo_shard_t dn, sp;
  make(K, 0, &dn, &sp, 3);
  const double lambda = 0.03;
  dpo_model_t *m = softmax(K, lambda, 1);
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), 0);
  cr_assert_eq(dpo_model_prepare_shard(m, &sp), 0);
  cr_assert_eq(dn.d, D1);
  cr_assert_eq(dpo_model_dim(m, dn.d), P);
  double x[P], g[P], gs[P], gn[P];
  for (int j = 0; j < P; j++) x[j] = 1.5 * (2 * urand() - 1);
  double F = fg(m, &dn, x, g), Fs = fg(m, &sp, x, gs), Fn = naive(lambda, x, gn);
  cr_assert_float_eq(F, Fn, 1e-12 * (1 + fabs(Fn)), "F %.17g vs naive %.17g", F, Fn);
  cr_assert_float_eq(Fs, Fn, 1e-12 * (1 + fabs(Fn)));
  for (int j = 0; j < P; j++) {
    cr_assert_float_eq(g[j], gn[j], 1e-12, "g[%d] %.17g vs naive %.17g", j, g[j], gn[j]);
    cr_assert_float_eq(gs[j], gn[j], 1e-12);
    /* every coordinate, the K intercepts (j % D1 == D) among them */
    double h = 1e-5, xp[P], xm[P];
    memcpy(xp, x, sizeof x);
    memcpy(xm, x, sizeof x);
    xp[j] += h;
    xm[j] -= h;
    double fd = (fg(m, &dn, xp, NULL) - fg(m, &dn, xm, NULL)) / (2 * h);
    cr_assert_float_eq(g[j], fd, 1e-7, "g[%d] (%s) = %.12g, finite difference %.12g", j,
                       j % D1 == D ? "intercept" : "weight", g[j], fd);
  }
  /* the row-list path (minibatches) sums the same rows */
  int64_t rows[N];
  for (int i = 0; i < N; i++) rows[i] = i;
  double Fr = 0, gr[P], Fd = 0, gd[P];
  cr_assert_eq(dpo_model_local_grad(m, &dn, x, rows, N, NULL, NULL, &Fr, gr), 0);
  cr_assert_eq(dpo_model_local_grad(m, &dn, x, NULL, 0, NULL, NULL, &Fd, gd), 0);
  cr_assert_float_eq(Fr, Fd, 1e-12 * (1 + fabs(Fd)));
  for (int j = 0; j < P; j++) cr_assert_float_eq(gr[j], gd[j], 1e-12);
  dpo_model_destroy(m);
  drop(&dn);
  drop(&sp);
}

/* One row's data-term gradient (rows = {i}), optionally clipped. */
static void row_grad(const dpo_model_t *m, const dpo_shard_t *s, const double *x, int64_t i,
                     const dpo_clip_t *clip, double *g) {
  double l = 0;
  cr_assert_eq(dpo_model_local_grad(m, s, x, &i, 1, clip, NULL, &l, g), 0);
}

static double nrm(const double *g, int p, int l1) {
  double a = 0;
  for (int j = 0; j < p; j++) a += l1 ? fabs(g[j]) : g[j] * g[j];
  return l1 ? a : sqrt(a);
}

Test(softmax, clipping_acts_on_the_whole_gradient) {
  dpo_shard_t dn, sp;
  make(K, 0, &dn, &sp, 5);
  dpo_model_t *m = softmax(K, 0.0, 1);
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), 0);
  cr_assert_eq(dpo_model_prepare_shard(m, &sp), 0);
  double x[P];
  for (int j = 0; j < P; j++) x[j] = 3 * (2 * urand() - 1);
  for (int l1 = 0; l1 <= 1; l1++) {
    dpo_clip_t clip = {l1 ? DPO_CLIP_L1 : DPO_CLIP_L2, 0.4};
    int nclipped = 0;
    for (int64_t i = 0; i < N; i++) {
      double g[P], gc[P], gcs[P];
      row_grad(m, &dn, x, i, NULL, g);
      row_grad(m, &dn, x, i, &clip, gc);
      row_grad(m, &sp, x, i, &clip, gcs);
      double n0 = nrm(g, P, l1), nc = nrm(gc, P, l1);
      cr_assert(nc <= clip.C * (1 + 1e-12), "row %ld: clipped norm %g > C", (long)i, nc);
      double sc = n0 > clip.C ? clip.C / n0 : 1.0; /* the whole K d vector scaled at once */
      nclipped += n0 > clip.C;
      for (int j = 0; j < P; j++) {
        cr_assert_float_eq(gc[j], sc * g[j], 1e-12);
        cr_assert_float_eq(gcs[j], gc[j], 1e-12);
      }
    }
    cr_assert(nclipped > 0 && nclipped < N, "the case must clip some rows and not others");
  }
  dpo_model_destroy(m);
  drop(&dn);
  drop(&sp);
}

/* max_i ||u~_i|| over the raw rows (features) in L1 / L2 */
static double max_row(int l1) {
  double b = 0;
  for (int i = 0; i < N; i++) {
    double a = 0;
    for (int j = 0; j < D; j++) a += l1 ? fabs(U[i * D + j]) : U[i * D + j] * U[i * D + j];
    a = l1 ? a : sqrt(a);
    if (a > b) b = a;
  }
  return b;
}

Test(softmax, per_example_gradient_bound_brute_force) {
  dpo_shard_t dn, sp;
  make(K, 0, &dn, &sp, 7);
  dpo_model_t *m = softmax(K, 0.0, 1);
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), 0);
  const double B2 = max_row(0), B1 = max_row(1);
  const double G2 = dpo_model_grad_l2_bound(m, B2), S1 = dpo_model_grad_l1_sens(m, B1);
  cr_assert_float_eq(G2, sqrt(2.0) * sqrt(B2 * B2 + 1), 1e-12);
  cr_assert_float_eq(S1, 4 * (B1 + 1), 1e-12);
  cr_assert_float_eq(dpo_model_grad_l1_bound(m, B1), 2 * (B1 + 1), 1e-12); /* add-remove */
  double worst2 = 0, worst1 = 0, x[P], g[P];
  for (int trial = 0; trial < 200; trial++) { /* random points, some with large scores */
    double sc = trial < 100 ? 1.0 : 30.0;
    for (int j = 0; j < P; j++) x[j] = sc * (2 * urand() - 1);
    for (int64_t i = 0; i < N; i++) {
      row_grad(m, &dn, x, i, NULL, g);
      double n2 = nrm(g, P, 0), n1 = nrm(g, P, 1);
      cr_assert(n2 <= G2 * (1 + 1e-12), "||g||_2 = %.17g over the bound %.17g", n2, G2);
      cr_assert(2 * n1 <= S1 * (1 + 1e-12), "||g||_1 = %.17g: 2 ||g||_1 over S1 = %.17g", n1, S1);
      if (n2 > worst2) worst2 = n2;
      if (n1 > worst1) worst1 = n1;
    }
  }
  /* adversarial: the longest row, all its mass on a wrong class (p_y -> 0, one other class
   * -> 1): ||r||_2 -> sqrt(2), ||r||_1 -> 2 */
  int64_t istar = 0;
  for (int64_t i = 0; i < N; i++) {
    double a = 0, b = 0;
    for (int j = 0; j < D; j++) a += U[i * D + j] * U[i * D + j], b += U[istar * D + j] * U[istar * D + j];
    if (a > b) istar = i;
  }
  int y = (int)Y[istar], w = (y + 1) % K;
  memset(x, 0, sizeof x);
  x[w * D1 + D] = 40; /* a wrong class's bias: p_w = 1 - O(e^-40) */
  row_grad(m, &dn, x, istar, NULL, g);
  double n2 = nrm(g, P, 0);
  cr_assert(n2 <= G2 * (1 + 1e-12));
  cr_assert(2 * n2 >= G2, "the bound %.6g is not within 2x of the adversarial %.6g", G2, n2);
  cr_assert(n2 >= 0.99 * G2, "the bound is attained in the limit: %.6g vs %.6g", n2, G2);
  cr_assert(worst2 > 0 && worst1 > 0);
  dpo_model_destroy(m);
  drop(&dn);
  drop(&sp);
}

/* Largest eigenvalue of the Hessian of F at x, by central differences of the gradient and
 * power iteration on the symmetrized matrix (PSD: convex F). */
static double hess_lmax(const dpo_model_t *m, const dpo_shard_t *s, const double *x) {
  static double H[P * P];
  double xp[P], xm[P], gp[P], gm[P], h = 1e-5;
  for (int j = 0; j < P; j++) {
    memcpy(xp, x, sizeof xp);
    memcpy(xm, x, sizeof xm);
    xp[j] += h;
    xm[j] -= h;
    fg(m, s, xp, gp);
    fg(m, s, xm, gm);
    for (int k = 0; k < P; k++) H[k * P + j] = (gp[k] - gm[k]) / (2 * h);
  }
  double v[P], w[P], lam = 0;
  for (int j = 0; j < P; j++) v[j] = 1.0 + 0.1 * j;
  for (int it = 0; it < 2000; it++) {
    double nv = 0;
    for (int k = 0; k < P; k++) {
      w[k] = 0;
      for (int j = 0; j < P; j++) w[k] += 0.5 * (H[k * P + j] + H[j * P + k]) * v[j];
      nv += w[k] * w[k];
    }
    nv = sqrt(nv);
    lam = nv;
    for (int k = 0; k < P; k++) v[k] = w[k] / nv;
  }
  return lam;
}

Test(softmax, smoothness_bound_brute_force) {
  dpo_shard_t dn, sp;
  make(K, 0, &dn, &sp, 9);
  const double lambda = 0.01;
  dpo_model_t *m = softmax(K, lambda, 1);
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), 0);
  const double B2 = max_row(0), L = dpo_model_L_bound(m, B2);
  cr_assert_float_eq(L, (B2 * B2 + 1) / 2 + 2 * lambda, 1e-12);
  double x[P];
  for (int trial = 0; trial < 5; trial++) {
    for (int j = 0; j < P; j++) x[j] = (trial + 1) * 0.5 * (2 * urand() - 1);
    double lm = hess_lmax(m, &dn, x);
    cr_assert(lm <= L * (1 + 1e-6), "lambda_max(H) = %.9g over the bound L = %.9g", lm, L);
  }
  /* adversarial: all rows equal to the longest row, p = (1/2, 1/2, 0) (classes 0 and 1 tie,
   * class 2 far below): lambda_max = ||u~||^2 / 2 + 2 lambda = L */
  int64_t istar = 0;
  double best = -1;
  for (int64_t i = 0; i < N; i++) {
    double a = 0;
    for (int j = 0; j < D; j++) a += U[i * D + j] * U[i * D + j];
    if (a > best) best = a, istar = i;
  }
  for (int64_t i = 0; i < N; i++)
    memcpy(dn.X + i * D1, dn.X + istar * D1, D1 * sizeof *dn.X);
  memset(x, 0, sizeof x);
  x[2 * D1 + D] = -40;
  double lm = hess_lmax(m, &dn, x);
  cr_assert(lm <= L * (1 + 1e-6), "lambda_max(H) = %.9g over L = %.9g", lm, L);
  cr_assert(2 * lm >= L, "L = %.9g is not within 2x of the adversarial %.9g", L, lm);
  cr_assert_float_eq(lm, L, 1e-4 * L, "attained: %.9g vs %.9g", lm, L);
  dpo_model_destroy(m);
  drop(&dn);
  drop(&sp);
}

Test(softmax, two_classes_are_logistic_regression) {
  dpo_shard_t cd, cs, bd, bs;
  make(2, 0, &cd, &cs, 13);
  make(2, 1, &bd, &bs, 13); /* the same rows, labels 1 <-> +1, 0 <-> -1 */
  for (int i = 0; i < N; i++) cr_assert_eq(bd.y[i], cd.y[i] == 1 ? 1.0 : -1.0);
  dpo_model_t *sm = softmax(2, 0.0, 1), *lr;
  cr_assert_eq(dpo_model_create("logreg", 0.0, &lr), 0);
  cr_assert_eq(dpo_model_set_intercept(lr, 1), 0);
  cr_assert_eq(dpo_model_prepare_shard(sm, &cd), 0);
  cr_assert_eq(dpo_model_prepare_shard(lr, &bd), 0);
  for (int trial = 0; trial < 5; trial++) {
    double W[2 * D1], w[D1], gs[2 * D1], gl[D1], ls = 0, ll = 0;
    for (int j = 0; j < 2 * D1; j++) W[j] = 2 * (2 * urand() - 1);
    for (int j = 0; j < D1; j++) w[j] = W[D1 + j] - W[j]; /* w = w_1 - w_0 */
    cr_assert_eq(dpo_model_local_grad(sm, &cd, W, NULL, 0, NULL, NULL, &ls, gs), 0);
    cr_assert_eq(dpo_model_local_grad(lr, &bd, w, NULL, 0, NULL, NULL, &ll, gl), 0);
    cr_assert_float_eq(ls, ll, 1e-12 * (1 + ll), "data loss %.17g vs logistic %.17g", ls, ll);
    for (int j = 0; j < D1; j++) { /* dF/dw_1 = dF/dw, dF/dw_0 = -dF/dw */
      cr_assert_float_eq(gs[D1 + j], gl[j], 1e-12);
      cr_assert_float_eq(gs[j], -gl[j], 1e-12);
    }
    double es = 0, ms = 0, el = 0, ml = 0;
    cr_assert_eq(dpo_model_local_eval(sm, &cd, W, &es, &ms), 0);
    cr_assert_eq(dpo_model_local_eval(lr, &bd, w, &el, &ml), 0);
    cr_assert_eq(ms, ml, "correct predictions %g vs logistic %g", ms, ml);
    cr_assert_float_eq(es, el, 1e-12 * (1 + el));
    int32_t cls[N];
    double pr[N];
    cr_assert_eq(dpo_model_local_classify(sm, &cd, W, cls, pr), 0);
    for (int i = 0; i < N; i++) { /* the same predicted label and probability */
      double t = 0;
      for (int j = 0; j < D1; j++) t += bd.X[i * D1 + j] * w[j];
      cr_assert_eq(cls[i], t > 0 ? 1 : 0);
      cr_assert_float_eq(pr[i], 1 / (1 + exp(-fabs(t))), 1e-12);
    }
  }
  /* the bounds: W -> w = w_1 - w_0 has norm sqrt(2), so the softmax constants are the
   * logistic ones times sqrt(2) (gradient) and 2 (smoothness) */
  cr_assert_float_eq(dpo_model_grad_l2_bound(sm, 3.0), sqrt(2) * dpo_model_grad_l2_bound(lr, 3.0), 1e-12);
  cr_assert_float_eq(dpo_model_L_bound(sm, 3.0), 2 * dpo_model_L_bound(lr, 3.0), 1e-12);
  dpo_model_destroy(sm);
  dpo_model_destroy(lr);
  drop(&cd);
  drop(&cs);
  drop(&bd);
  drop(&bs);
}

Test(softmax, labels_are_class_indices) {
  dpo_shard_t dn, sp;
  make(K, 0, &dn, &sp, 17);
  dpo_model_t *m = softmax(K, 0.0, 0);
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), 0);
  dn.y[4] = K; /* one past the last class */
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), DPO_EFORMAT);
  dn.y[4] = 0.5;
  cr_assert_eq(dpo_model_prepare_shard(m, &dn), DPO_EFORMAT);
  double x[K * D] = {0}, l = 0, g[K * D];
  cr_assert_eq(dpo_model_local_grad(m, &dn, x, NULL, 0, NULL, NULL, &l, g), DPO_EFORMAT);
  dpo_model_destroy(m);
  drop(&dn);
  drop(&sp);
}

Test(softmax, model_file_round_trip) {
  char path[] = "/tmp/dpo_softmax_modelXXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  double x[P], *r = NULL;
  for (int j = 0; j < P; j++) x[j] = (j + 1) * 0.1 - 1.0 / 3;
  cr_assert_eq(dpo_model_write_k(path, x, D, 1, K, "softmax test\nsecond line"), 0);
  int32_t d = 0, k = 0;
  int icpt = 0;
  cr_assert_eq(dpo_model_read_k(path, &r, &d, &icpt, &k), 0);
  cr_assert(d == D && icpt == 1 && k == K);
  for (int j = 0; j < P; j++) cr_assert_eq(r[j], x[j], "x[%d]", j); /* %.17g round trips */
  free(r);
  r = NULL;
  cr_assert_eq(dpo_model_read_icpt(path, &r, &d, &icpt), DPO_EFORMAT, "one-output reader refuses");
  cr_assert_null(r);
  /* without intercept, and the one-output format read by the new reader */
  cr_assert_eq(dpo_model_write_k(path, x, D, 0, K, NULL), 0);
  cr_assert_eq(dpo_model_read_k(path, &r, &d, &icpt, &k), 0);
  cr_assert(d == D && icpt == 0 && k == K);
  for (int j = 0; j < K * D; j++) cr_assert_eq(r[j], x[j]);
  free(r);
  cr_assert_eq(dpo_model_write_icpt(path, x, D, 1, NULL), 0);
  cr_assert_eq(dpo_model_read_k(path, &r, &d, &icpt, &k), 0);
  cr_assert(d == D && icpt == 1 && k == 0);
  for (int j = 0; j < D1; j++) cr_assert_eq(r[j], x[j]);
  free(r);
  unlink(path);
}
