/* Unit tests for the fused kernels (src/linalg/kernels.c) and the objectives (src/model/).
 * Every value is compared with an independent computation: central finite differences, a
 * naive per-example loop, the same data in the other storage format, LAPACK eigenvalues. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/kernels.h"
#include "dpopt/model.h"
#include "dpopt/status.h"
#include "../lib/t_rand.h"

/* LAPACK symmetric eigensolver (Fortran symbol). */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

/* ---- test data: the same rows stored dense and CSR ---- */


typedef struct {
  dpo_shard_t dense, csr;
  double *U; /* n x d reference copy */
} pair_t;

/* density: probability an entry is nonzero; binary: labels +1/-1, else real targets.
 * scale: entries uniform in [-scale, scale]. */
static void make_pair(pair_t *p, int64_t n, int32_t d, double density, int binary, double scale,
                      uint64_t seed) {
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  memset(p, 0, sizeof *p);
  p->U = calloc((size_t)(n * d), sizeof(double));
  double *y = malloc((size_t)n * sizeof(double));
  int64_t *rowptr = malloc((size_t)(n + 1) * sizeof(int64_t));
  int32_t *colind = malloc((size_t)(n * d + 1) * sizeof(int32_t));
  double *val = malloc((size_t)(n * d + 1) * sizeof(double));
  cr_assert(p->U && y && rowptr && colind && val);
  int64_t nnz = 0;
  rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int32_t j = 0; j < d; j++) {
      if (urand() < density) {
        double v = scale * nrand();
        p->U[i * d + j] = v;
        colind[nnz] = j;
        val[nnz++] = v;
      }
    }
    rowptr[i + 1] = nnz;
    y[i] = binary ? (urand() < 0.5 ? -1.0 : 1.0) : 3.0 * nrand();
  }
  dpo_shard_t base = {0};
  base.n = n;
  base.n_global = n;
  base.d = d;
  base.y = y;
  base.labels = binary ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
  p->dense = base;
  p->dense.X = malloc((size_t)(n * d) * sizeof(double));
  cr_assert(p->dense.X);
  memcpy(p->dense.X, p->U, (size_t)(n * d) * sizeof(double));
  p->csr = base;
  p->csr.sparse = 1;
  p->csr.rowptr = rowptr;
  p->csr.colind = colind;
  p->csr.val = val;
}

static void free_pair(pair_t *p) {
  free(p->dense.X);
  free(p->dense.y);
  free(p->csr.rowptr);
  free(p->csr.colind);
  free(p->csr.val);
  free(p->U);
}


/* Independent per-row loss value and derivative (textbook formulas; fine for |t| < 30). */
static double naive_phi(dpo_loss_t loss, double t, double y) {
  return loss == DPO_LOSS_LOGISTIC ? log(1.0 + exp(-y * t)) : 0.5 * (t - y) * (t - y);
}
static double naive_dphi(dpo_loss_t loss, double t, double y) {
  return loss == DPO_LOSS_LOGISTIC ? -y * exp(-y * t) / (1.0 + exp(-y * t)) : t - y;
}

/* Naive double loop over the reference matrix: explicit per-example gradient, its norm,
 * clip, sum. */
static void naive_grad(dpo_loss_t loss, const pair_t *p, const double *x, const int64_t *rows,
                       int64_t nrows, const dpo_clip_t *clip, double *lsum, double *g) {
  int32_t d = p->dense.d;
  int64_t cnt = rows ? nrows : p->dense.n;
  double *gi = malloc((size_t)d * sizeof(double));
  *lsum = 0;
  for (int32_t j = 0; j < d; j++) g[j] = 0;
  for (int64_t k = 0; k < cnt; k++) {
    int64_t i = rows ? rows[k] : k;
    const double *u = p->U + i * d;
    double t = 0;
    for (int32_t j = 0; j < d; j++) t += u[j] * x[j];
    double y = p->dense.y[i];
    *lsum += naive_phi(loss, t, y);
    double c = naive_dphi(loss, t, y), nrm = 0;
    for (int32_t j = 0; j < d; j++) gi[j] = c * u[j];
    if (clip && clip->norm == DPO_CLIP_L1)
      for (int32_t j = 0; j < d; j++) nrm += fabs(gi[j]);
    else if (clip && clip->norm == DPO_CLIP_L2) {
      for (int32_t j = 0; j < d; j++) nrm += gi[j] * gi[j];
      nrm = sqrt(nrm);
    }
    double sc = (clip && clip->norm != DPO_CLIP_NONE && nrm > clip->C) ? clip->C / nrm : 1.0;
    for (int32_t j = 0; j < d; j++) g[j] += sc * gi[j];
  }
  free(gi);
}

/* F(x) and grad F(x) through the public model API. */
static void model_Fg(const dpo_model_t *m, const dpo_shard_t *s, const double *x, double *F,
                     double *g) {
  cr_assert_eq(dpo_model_local_grad(m, s, x, NULL, 0, NULL, NULL, F, g), DPO_OK, "%s",
               dpo_errmsg());
  dpo_model_finish(m, s->d, s->n, x, F, g);
}


/* ---- gradient vs central finite differences of F ---- */

static void check_fd_grad(const char *name, double lambda, int sparse) {
  const int64_t n = 300;
  const int32_t d = 9;
  pair_t p;
  make_pair(&p, n, d, sparse ? 0.4 : 1.0, strcmp(name, "logreg") == 0, 1.0, 11 + sparse);
  const dpo_shard_t *s = sparse ? &p.csr : &p.dense;
  dpo_model_t *m;
  cr_assert_eq(dpo_model_create(name, lambda, &m), DPO_OK, "%s", dpo_errmsg());
  double x[9], g[9], gfd[9], xp[9], F, Fp, Fm, gtmp[9];
  rand_vec(x, d, 0.7);
  model_Fg(m, s, x, &F, g);
  const double h = 1e-5;
  for (int j = 0; j < d; j++) {
    memcpy(xp, x, sizeof x);
    xp[j] = x[j] + h;
    model_Fg(m, s, xp, &Fp, gtmp);
    xp[j] = x[j] - h;
    model_Fg(m, s, xp, &Fm, gtmp);
    gfd[j] = (Fp - Fm) / (2 * h);
  }
  double e = rel2(g, gfd, d);
  cr_expect_lt(e, 1e-6, "%s lambda=%g sparse=%d: grad vs FD rel err %g", name, lambda, sparse,
               e);
  /* F itself against the naive sum + regularizer */
  double ls, gn[9], xx = 0;
  naive_grad(dpo_model_loss(m), &p, x, NULL, 0, NULL, &ls, gn);
  for (int j = 0; j < d; j++) xx += x[j] * x[j];
  cr_expect_lt(fabs(F - (ls / n + lambda * xx)), 1e-12 * fabs(F), "%s: F mismatch", name);
  dpo_model_destroy(m);
  free_pair(&p);
}

Test(model, grad_fd_logreg) {
  check_fd_grad("logreg", 0.0, 0);
  check_fd_grad("logreg", 0.05, 0);
  check_fd_grad("logreg", 0.0, 1);
  check_fd_grad("logreg", 0.05, 1);
}

Test(model, grad_fd_ridge) {
  check_fd_grad("ridge", 0.0, 0);
  check_fd_grad("ridge", 0.05, 0);
  check_fd_grad("ridge", 0.05, 1);
  check_fd_grad("lsq", 0.0, 0);
  check_fd_grad("lsq", 0.0, 1);
}

/* ---- clipped gradients vs a naive per-example loop ---- */

static void check_clip(dpo_loss_t loss, dpo_clipnorm_t norm) {
  const int64_t n = 700; /* spans several 256-row blocks plus a remainder */
  const int32_t d = 7;
  pair_t p;
  make_pair(&p, n, d, 0.6, loss == DPO_LOSS_LOGISTIC, 1.0, 23 + norm);
  double x[7];
  rand_vec(x, d, 1.0);
  /* Choose C as the median per-example gradient norm, so about half the rows are clipped. */
  double *gn = malloc((size_t)n * sizeof(double));
  double *rn = malloc((size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; i++) {
    double t = 0, a = 0, b = 0;
    for (int j = 0; j < d; j++) {
      t += p.U[i * d + j] * x[j];
      a += fabs(p.U[i * d + j]);
      b += p.U[i * d + j] * p.U[i * d + j];
    }
    rn[i] = norm == DPO_CLIP_L1 ? a : sqrt(b);
    gn[i] = fabs(naive_dphi(loss, t, p.dense.y[i])) * rn[i];
  }
  double *srt = malloc((size_t)n * sizeof(double));
  memcpy(srt, gn, (size_t)n * sizeof(double));
  for (int64_t i = 1; i < n; i++) /* insertion sort */
    for (int64_t k = i; k > 0 && srt[k - 1] > srt[k]; k--) {
      double tmp = srt[k];
      srt[k] = srt[k - 1];
      srt[k - 1] = tmp;
    }
  dpo_clip_t clip = {norm, srt[n / 2]};
  int64_t nclipped = 0;
  for (int64_t i = 0; i < n; i++) nclipped += gn[i] > clip.C;
  cr_assert(nclipped > n / 4 && nclipped < 3 * n / 4);

  int64_t rows[50];
  for (int k = 0; k < 50; k++) rows[k] = (int64_t)(urand() * n);
  rows[7] = rows[3]; /* a repeated row counts twice */

  const dpo_shard_t *sh[2] = {&p.dense, &p.csr};
  for (int f = 0; f < 2; f++)
    for (int sub = 0; sub < 2; sub++)
      for (int pre = 0; pre < 2; pre++) {
        double gk[7] = {0}, gr[7], lk = 0, lr;
        const int64_t *r = sub ? rows : NULL;
        int64_t nr = sub ? 50 : 0;
        cr_assert_eq(dpo_kern_loss_grad(loss, sh[f], x, r, nr, &clip, pre ? rn : NULL, &lk, gk),
                     DPO_OK, "%s", dpo_errmsg());
        naive_grad(loss, &p, x, r, nr, &clip, &lr, gr);
        double e = rel2(gk, gr, d);
        cr_expect_lt(e, 1e-12, "clip loss=%d norm=%d sparse=%d subset=%d pre=%d: rel %g", loss,
                     norm, f, sub, pre, e);
        cr_expect_lt(fabs(lk - lr), 1e-12 * fabs(lr), "loss sum mismatch");
        /* clipping really changed the result */
        double gu[7];
        naive_grad(loss, &p, x, r, nr, NULL, &lr, gu);
        cr_expect_gt(rel2(gk, gu, d), 1e-3, "clipping had no effect");
      }
  free(gn);
  free(rn);
  free(srt);
  free_pair(&p);
}

Test(kernels, clip_l1_logistic) { check_clip(DPO_LOSS_LOGISTIC, DPO_CLIP_L1); }
Test(kernels, clip_l2_logistic) { check_clip(DPO_LOSS_LOGISTIC, DPO_CLIP_L2); }
Test(kernels, clip_l1_squared) { check_clip(DPO_LOSS_SQUARED, DPO_CLIP_L1); }
Test(kernels, clip_l2_squared) { check_clip(DPO_LOSS_SQUARED, DPO_CLIP_L2); }

/* Every clipped per-example gradient has norm <= C: sum of n of them has norm <= n C. */
Test(kernels, clip_bound_holds) {
  pair_t p;
  make_pair(&p, 200, 5, 1.0, 1, 5.0, 3);
  double x[5];
  rand_vec(x, 5, 3.0);
  dpo_clip_t clip = {DPO_CLIP_L2, 1e-3};
  for (int64_t i = 0; i < 200; i++) {
    double g[5] = {0}, l = 0, nrm = 0;
    int64_t r = i;
    cr_assert_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &p.dense, x, &r, 1, &clip, NULL, &l, g),
                 DPO_OK);
    for (int j = 0; j < 5; j++) nrm += g[j] * g[j];
    cr_expect_leq(sqrt(nrm), 1e-3 * (1 + 1e-12));
  }
  free_pair(&p);
}

/* ---- dense and CSR kernels vs a naive double loop ---- */

/* The ISA builds of the gradient passes (src/linalg/kern_pass.c), forced in turn. */
static const char *const isa_names[] = {"avx512", "avx2", "generic"};
#define N_ISA ((int)(sizeof isa_names / sizeof isa_names[0]))
/* Forces build k: 0 if this CPU cannot run it (then the default stays in force). */
static int force_isa(int k) { return dpo_kern_set_isa(isa_names[k]) == DPO_OK; }

Test(kernels, isa_forcing) {
  cr_assert_eq(dpo_kern_set_isa(NULL), DPO_OK);
  const char *dflt = dpo_kern_isa();
  cr_assert_eq(dpo_kern_set_isa("generic"), DPO_OK); /* every CPU runs the baseline */
  cr_expect_str_eq(dpo_kern_isa(), "generic");
  cr_expect_eq(dpo_kern_set_isa("sse9"), DPO_EINVAL);
  cr_expect_str_eq(dpo_kern_isa(), "generic", "a refused name changed the build");
  int ran = 0;
  for (int k = 0; k < N_ISA; k++)
    if (force_isa(k)) {
      ran++;
      cr_expect(strcmp(dpo_kern_isa(), "generic") != 0 || k == N_ISA - 1);
    }
  cr_expect_geq(ran, 1);
  cr_assert_eq(dpo_kern_set_isa(NULL), DPO_OK);
  cr_expect_str_eq(dpo_kern_isa(), dflt, "NULL did not restore the default build");
}

Test(kernels, dense_csr_naive) {
  const int32_t d = 13;
  const int64_t n = 1003; /* the passes' last block (8 rows) and superblock (32) are short */
  for (int isa = 0; isa < N_ISA; isa++)
  for (int lo = 0; lo < 2; lo++) {
    if (!force_isa(isa)) continue;
    dpo_loss_t loss = lo ? DPO_LOSS_SQUARED : DPO_LOSS_LOGISTIC;
    pair_t p;
    make_pair(&p, n, d, 0.3, !lo, 1.0, 77 + lo);
    double x[13], v[13];
    rand_vec(x, d, 1.0);
    rand_vec(v, d, 1.0);
    double lr, gr[13];
    naive_grad(loss, &p, x, NULL, 0, NULL, &lr, gr);
    /* naive eval and Hessian-vector product */
    double er = 0, hvr[13] = {0};
    for (int64_t i = 0; i < n; i++) {
      double t = 0, uv = 0, y = p.dense.y[i];
      for (int j = 0; j < d; j++) {
        t += p.U[i * d + j] * x[j];
        uv += p.U[i * d + j] * v[j];
      }
      er += lo ? (t - y) * (t - y) : ((t >= 0 ? 1.0 : -1.0) == y);
      double sg = 1.0 / (1.0 + exp(-t));
      double w = lo ? 1.0 : sg * (1.0 - sg);
      for (int j = 0; j < d; j++) hvr[j] += w * uv * p.U[i * d + j];
    }
    const dpo_shard_t *sh[2] = {&p.dense, &p.csr};
    for (int f = 0; f < 2; f++) {
      double g[13] = {0}, l = 0, le = 0, me = 0, hv[13] = {0};
      cr_assert_eq(dpo_kern_loss_grad(loss, sh[f], x, NULL, 0, NULL, NULL, &l, g), DPO_OK);
      cr_expect_lt(rel2(g, gr, d), 1e-12, "%s loss=%d sparse=%d grad", dpo_kern_isa(), lo, f);
      cr_expect_lt(fabs(l - lr), 1e-12 * fabs(lr), "%s loss=%d sparse=%d loss", dpo_kern_isa(),
                   lo, f);
      cr_assert_eq(dpo_kern_eval(loss, sh[f], x, &le, &me), DPO_OK);
      cr_expect_lt(fabs(le - lr), 1e-12 * fabs(lr));
      cr_expect_lt(fabs(me - er), 1e-12 * fabs(er) + 1e-12, "metric %g vs %g", me, er);
      cr_assert_eq(dpo_kern_hessvec(loss, sh[f], x, v, hv), DPO_OK);
      cr_expect_lt(rel2(hv, hvr, d), 1e-12, "loss=%d sparse=%d hessvec", lo, f);
    }
    free_pair(&p);
  }
  dpo_kern_set_isa(NULL);
}

/* Every tail of the 8-row blocks (n = 1..19, all rows and a reversed row list with a repeat,
 * with and without L2 clipping), both storage formats, against the naive loop; for every ISA
 * build this CPU runs, at widths that reach every column path of the dense pass (32-, 16-,
 * 8-, 4-wide and scalar tails) and with margins |y t| from 0 to ~40 (the lanes' exp and
 * log1p over their whole range short of underflow). */
Test(kernels, block_tails) {
  static const int32_t ds[] = {11, 47, 100};
  for (int isa = 0; isa < N_ISA; isa++)
  for (int di = 0; di < 3; di++)
  for (int lo = 0; lo < 2; lo++)
    for (int64_t n = 1; n <= 19; n++) {
      if (!force_isa(isa)) continue;
      const int32_t d = ds[di];
      dpo_loss_t loss = lo ? DPO_LOSS_SQUARED : DPO_LOSS_LOGISTIC;
      pair_t p;
      make_pair(&p, n, d, 0.4, !lo, 1.0, 300 + n + 50 * lo + 1000 * di);
      double x[100], gr[100], lr;
      rand_vec(x, d, n % 2 ? 1.0 : 4.0);
      int64_t rows[20];
      for (int64_t k = 0; k < n; k++) rows[k] = n - 1 - k;
      rows[n] = n / 2; /* a repeated row counts twice */
      dpo_clip_t clip = {DPO_CLIP_L2, 0.3};
      const dpo_shard_t *sh[2] = {&p.dense, &p.csr};
      for (int f = 0; f < 2; f++)
        for (int mode = 0; mode < 3; mode++) {
          const int64_t *r = mode ? rows : NULL;
          int64_t nr = mode ? n + 1 : 0;
          const dpo_clip_t *c = mode == 2 ? &clip : NULL;
          double g[100] = {0}, l = 0;
          naive_grad(loss, &p, x, r, nr, c, &lr, gr);
          cr_assert_eq(dpo_kern_loss_grad(loss, sh[f], x, r, nr, c, NULL, &l, g), DPO_OK);
          cr_expect_lt(rel2(g, gr, d), 1e-12, "%s d=%d n=%ld loss=%d sparse=%d mode=%d grad",
                       dpo_kern_isa(), d, (long)n, lo, f, mode);
          cr_expect_lt(fabs(l - lr), 1e-12 * fabs(lr), "%s d=%d n=%ld loss=%d sparse=%d mode=%d "
                       "loss", dpo_kern_isa(), d, (long)n, lo, f, mode);
        }
      /* CSR: every row alone (a block of one live lane and seven padding lanes) */
      for (int64_t k = 0; k < n; k++) {
        double g1[100] = {0}, l1 = 0, gk[100];
        cr_assert_eq(dpo_kern_loss_grad(loss, &p.csr, x, &k, 1, NULL, NULL, &l1, g1), DPO_OK);
        naive_grad(loss, &p, x, &k, 1, NULL, &lr, gk);
        cr_expect_lt(rel2(g1, gk, d), 1e-12, "%s n=%ld row %ld alone", dpo_kern_isa(), (long)n,
                     (long)k);
      }
      free_pair(&p);
    }
  dpo_kern_set_isa(NULL);
}

/* The blocked softmax pass (src/linalg/kern_softmax_body.h: 16-row blocks, 4-row x 4/2/1-class
 * tiles, columns padded to 8; the baseline build's dgemm path) against a naive per-row loop
 * with libm exp/log, for every ISA build this CPU runs: every class-chunk path (K = 2, 3, 7, 10), widths under and over a
 * vector with padding (d = 3, 13, 100), short and several blocks (n = 1, 15, 17, 40), score
 * spreads up to ~60 (exp deep into its range), unclipped and clipped per example in L2 and
 * L1 (with and without precomputed row norms); each also as a row list (minibatch path). */
static void naive_softmax(int32_t K, int32_t d, int64_t n, const double *U, const double *y,
                          const double *Wt, const dpo_clip_t *clip, double *loss, double *g) {
  double t[10], r[10];
  *loss = 0;
  memset(g, 0, (size_t)K * d * sizeof *g);
  for (int64_t i = 0; i < n; i++) {
    const double *u = U + i * d;
    int yi = (int)y[i];
    double m = -INFINITY, Z = 0, rn = 0, un = 0;
    for (int k = 0; k < K; k++) {
      t[k] = 0;
      for (int j = 0; j < d; j++) t[k] += Wt[k * d + j] * u[j];
      m = fmax(m, t[k]);
    }
    for (int k = 0; k < K; k++) Z += exp(t[k] - m);
    *loss += log(Z) + m - t[yi];
    for (int k = 0; k < K; k++) {
      r[k] = exp(t[k] - m) / Z - (k == yi);
      rn += clip && clip->norm == DPO_CLIP_L1 ? fabs(r[k]) : r[k] * r[k];
    }
    for (int j = 0; j < d; j++) un += clip && clip->norm == DPO_CLIP_L1 ? fabs(u[j]) : u[j] * u[j];
    double a = 1.0;
    if (clip) {
      double gn = clip->norm == DPO_CLIP_L1 ? rn * un : sqrt(rn) * sqrt(un);
      if (gn > clip->C) a = clip->C / gn;
    }
    for (int k = 0; k < K; k++)
      for (int j = 0; j < d; j++) g[k * d + j] += a * r[k] * u[j];
  }
}

Test(kernels, softmax_blocks_vs_naive) {
  static const int32_t Ks[] = {2, 3, 7, 10}, ds[] = {3, 13, 100};
  static const int64_t ns[] = {1, 15, 17, 40};
  double Wt[1000], g[1000], gr[1000], rown[40], Ug[43 * 100], yg[43];
  int64_t rl[43];
  for (int isa = 0; isa < N_ISA; isa++) {
    if (!force_isa(isa)) continue;
    for (int ki = 0; ki < 4; ki++)
      for (int di = 0; di < 3; di++)
        for (int ni = 0; ni < 4; ni++) {
          const int32_t K = Ks[ki], d = ds[di];
          const int64_t n = ns[ni];
          pair_t p;
          make_pair(&p, n, d, 1.0, 0, 1.0, 500 + 13 * ki + 5 * di + ni);
          for (int64_t i = 0; i < n; i++) p.dense.y[i] = (double)((i * 7 + ki) % K);
          p.dense.labels = DPO_LABELS_CLASS;
          rand_vec(Wt, K * d, (ni % 2 ? 6.0 : 1.0) / sqrt((double)d));
          dpo_model_t *m = NULL;
          cr_assert_eq(dpo_model_create("softmax", 0.0, &m), DPO_OK);
          cr_assert_eq(dpo_model_set_classes(m, K), DPO_OK);
          dpo_clip_t clips[3] = {{DPO_CLIP_NONE, 0}, {DPO_CLIP_L2, 0.4}, {DPO_CLIP_L1, 2.0}};
          for (int c = 0; c < 3; c++)
            for (int pre = 0; pre < (c ? 2 : 1); pre++) {
              const dpo_clip_t *cl = c ? &clips[c] : NULL;
              for (int64_t i = 0; i < n; i++) {
                double a = 0;
                for (int j = 0; j < d; j++)
                  a += c == 2 ? fabs(p.U[i * d + j]) : p.U[i * d + j] * p.U[i * d + j];
                rown[i] = c == 2 ? a : sqrt(a);
              }
              double l = 0, lr;
              naive_softmax(K, d, n, p.U, p.dense.y, Wt, cl, &lr, gr);
              cr_assert_eq(dpo_model_local_grad(m, &p.dense, Wt, NULL, 0, cl, pre ? rown : NULL,
                                                &l, g), DPO_OK);
              cr_expect_lt(rel2(g, gr, (int64_t)K * d), 1e-12, "%s K=%d d=%d n=%ld clip=%d pre=%d "
                           "grad", dpo_kern_isa(), K, d, (long)n, c, pre);
              cr_expect_lt(fabs(l - lr), 1e-12 * fabs(lr), "%s K=%d d=%d n=%ld clip=%d loss %.17g "
                           "vs %.17g", dpo_kern_isa(), K, d, (long)n, c, l, lr);
              /* a row list (the minibatch path: rows gathered block by block), out of order
               * and with repeats, against the naive loop over the same rows copied out */
              const int64_t nl = n + 3;
              for (int64_t k = 0; k < nl; k++) {
                rl[k] = (k * 7 + 3) % n;
                memcpy(Ug + k * d, p.U + rl[k] * d, (size_t)d * sizeof(double));
                yg[k] = p.dense.y[rl[k]];
              }
              l = 0;
              naive_softmax(K, d, nl, Ug, yg, Wt, cl, &lr, gr);
              cr_assert_eq(dpo_model_local_grad(m, &p.dense, Wt, rl, nl, cl, pre ? rown : NULL,
                                                &l, g), DPO_OK);
              cr_expect_lt(rel2(g, gr, (int64_t)K * d), 1e-12, "%s K=%d d=%d rows=%ld clip=%d "
                           "pre=%d grad", dpo_kern_isa(), K, d, (long)nl, c, pre);
              cr_expect_lt(fabs(l - lr), 1e-12 * fabs(lr), "%s K=%d d=%d rows=%ld clip=%d loss",
                           dpo_kern_isa(), K, d, (long)nl, c);
            }
          dpo_model_destroy(m);
          free_pair(&p);
        }
  }
  dpo_kern_set_isa(NULL);
}

/* ---- Hessian vs FD of the gradient and vs hessvec ---- */

Test(kernels, hessian) {
  const int32_t d = 6;
  const int64_t n = 500;
  for (int lo = 0; lo < 2; lo++)
    for (int f = 0; f < 2; f++) {
      dpo_loss_t loss = lo ? DPO_LOSS_SQUARED : DPO_LOSS_LOGISTIC;
      pair_t p;
      make_pair(&p, n, d, f ? 0.5 : 1.0, !lo, 1.0, 5 + lo);
      const dpo_shard_t *s = f ? &p.csr : &p.dense;
      double x[6], H[36], Hfd[36], xp[6], gp[6], gm[6], l;
      rand_vec(x, d, 1.0);
      for (int k = 0; k < 36; k++) H[k] = 1.0; /* accumulation: H += ... */
      cr_assert_eq(dpo_kern_hess(loss, s, x, H), DPO_OK, "%s", dpo_errmsg());
      for (int k = 0; k < 36; k++) H[k] -= 1.0;
      const double h = 1e-5;
      for (int j = 0; j < d; j++) {
        memcpy(xp, x, sizeof x);
        xp[j] += h;
        memset(gp, 0, sizeof gp);
        dpo_kern_loss_grad(loss, s, xp, NULL, 0, NULL, NULL, &l, gp);
        xp[j] -= 2 * h;
        memset(gm, 0, sizeof gm);
        dpo_kern_loss_grad(loss, s, xp, NULL, 0, NULL, NULL, &l, gm);
        for (int k = 0; k < d; k++) Hfd[k * d + j] = (gp[k] - gm[k]) / (2 * h);
      }
      cr_expect_lt(rel2(H, Hfd, 36), 1e-6, "loss=%d sparse=%d: H vs FD %g", lo, f,
                   rel2(H, Hfd, 36));
      for (int a = 0; a < d; a++)
        for (int b = 0; b < d; b++) cr_expect_eq(H[a * d + b], H[b * d + a]);
      /* H e_j == hessvec(e_j), and H v == hessvec(v) */
      for (int j = 0; j <= d; j++) {
        double v[6] = {0}, hv[6] = {0}, Hv[6] = {0};
        if (j < d) v[j] = 1.0;
        else rand_vec(v, d, 1.0);
        cr_assert_eq(dpo_kern_hessvec(loss, s, x, v, hv), DPO_OK);
        for (int a = 0; a < d; a++)
          for (int b = 0; b < d; b++) Hv[a] += H[a * d + b] * v[b];
        cr_expect_lt(rel2(hv, Hv, d), 1e-12, "loss=%d sparse=%d: H v vs hessvec", lo, f);
      }
      free_pair(&p);
    }
}

/* ---- numerical stability of the logistic loss at |t| = 800 ---- */

Test(kernels, logistic_stable_800) {
  double X[1] = {1.0}, y[1];
  dpo_shard_t s = {0};
  s.n = 1;
  s.n_global = 1;
  s.d = 1;
  s.X = X;
  s.y = y;
  const double ts[2] = {800.0, -800.0}, ys[2] = {1.0, -1.0};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      double x[1] = {ts[a]}, g[1] = {0}, l = 0, H[1] = {0}, le = 0, me = 0;
      y[0] = ys[b];
      double m = ys[b] * ts[a];
      cr_assert_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &s, x, NULL, 0, NULL, NULL, &l, g),
                   DPO_OK);
      cr_assert(isfinite(l) && isfinite(g[0]), "t=%g y=%g: l=%g g=%g", ts[a], ys[b], l, g[0]);
      if (m > 0) {
        /* log(1 + e^-800) = e^-800 (below the double range): 0; gradient -y e^-800 -> 0 */
        cr_expect_leq(l, 1e-300);
        cr_expect_leq(fabs(g[0]), 1e-300);
      } else {
        /* asymptote log(1 + e^800) = 800 + log1p(e^-800) = 800; gradient -y */
        cr_expect_eq(l, 800.0);
        cr_expect_eq(g[0], -ys[b]);
      }
      cr_assert_eq(dpo_kern_hess(DPO_LOSS_LOGISTIC, &s, x, H), DPO_OK);
      cr_expect(isfinite(H[0]) && H[0] >= 0 && H[0] < 1e-300);
      cr_assert_eq(dpo_kern_eval(DPO_LOSS_LOGISTIC, &s, x, &le, &me), DPO_OK);
      cr_expect(isfinite(le) && le == l);
      cr_expect_eq(me, m > 0 ? 1.0 : 0.0);
    }
  /* moderate margins: match the textbook formula */
  for (double t = -30; t <= 30; t += 2.5) {
    double x[1] = {t}, g[1] = {0}, l = 0;
    y[0] = 1.0;
    dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &s, x, NULL, 0, NULL, NULL, &l, g);
    cr_expect_lt(fabs(l - log1p(exp(-t))), 1e-14 * fmax(1.0, fabs(l)));
    cr_expect_lt(fabs(g[0] + 1.0 / (1.0 + exp(t))), 1e-15);
  }
}

/* ---- public bounds ---- */

static double lmax_sym(double *A, int d) {
  double w[64], work[64 * 8];
  int lwork = 64 * 8, info;
  dsyev_("N", "U", &d, A, &d, w, work, &lwork, &info);
  cr_assert_eq(info, 0);
  return w[d - 1];
}

static void check_L_bound(const char *name, double lambda, double spread) {
  const int32_t d = 8;
  const int64_t n = 400;
  pair_t p;
  make_pair(&p, n, d, 1.0, strcmp(name, "logreg") == 0, 1.0, 99);
  /* spread < 1 pulls rows toward one direction: the bound is then nearly attained */
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < d; j++) {
      double v = (1 - spread) * (j == 0 ? 2.0 : 0.3) + spread * p.U[i * d + j];
      p.U[i * d + j] = p.dense.X[i * d + j] = v;
    }
  double B2 = 0;
  for (int64_t i = 0; i < n; i++) {
    double r = 0;
    for (int j = 0; j < d; j++) r += p.U[i * d + j] * p.U[i * d + j];
    if (r > B2) B2 = r;
  }
  B2 = sqrt(B2);
  dpo_model_t *m;
  cr_assert_eq(dpo_model_create(name, lambda, &m), DPO_OK);
  double L = dpo_model_L_bound(m, B2);
  double worst = 0;
  for (int trial = 0; trial < 4; trial++) {
    double x[8] = {0}, H[64] = {0};
    if (trial) rand_vec(x, d, 0.5); /* x = 0 maximizes the logistic curvature */
    cr_assert_eq(dpo_model_local_hess(m, &p.dense, x, H), DPO_OK);
    for (int k = 0; k < 64; k++) H[k] /= (double)n;
    for (int j = 0; j < d; j++) H[j * d + j] += 2 * lambda;
    double lm = lmax_sym(H, d);
    cr_expect_geq(L, lm, "%s: L bound %g < lambda_max %g", name, L, lm);
    if (lm > worst) worst = lm;
  }
  if (spread < 0.2) /* nearly parallel rows: the bound must be nearly tight, not just large */
    cr_expect_gt(worst, 0.8 * L, "%s: bound %g far above %g", name, L, worst);
  cr_expect_eq(dpo_model_mu(m), 2 * lambda);
  dpo_model_destroy(m);
  free_pair(&p);
}

Test(model, L_bound) {
  check_L_bound("logreg", 0.0, 1.0);
  check_L_bound("logreg", 0.01, 0.1);
  check_L_bound("ridge", 0.0, 1.0);
  check_L_bound("ridge", 0.3, 0.1);
}

/* S1 = 2 B1 bounds ||grad f_i - grad f_j||_1 for every pair and x (001, eq. 5.2), and
 * dpo_model_grad_l1_bound = B1 bounds ||grad f_i||_1 (the add-remove sensitivity). */
Test(model, l1_sensitivity) {
  dpo_model_t *m, *r;
  cr_assert_eq(dpo_model_create("logreg", 0.01, &m), DPO_OK);
  cr_assert_eq(dpo_model_create("ridge", 0.01, &r), DPO_OK);
  pair_t p;
  make_pair(&p, 60, 5, 1.0, 1, 2.0, 4);
  double B1 = 0;
  for (int64_t i = 0; i < 60; i++) {
    double a = 0;
    for (int j = 0; j < 5; j++) a += fabs(p.U[i * 5 + j]);
    if (a > B1) B1 = a;
  }
  double S1 = dpo_model_grad_l1_sens(m, B1), worst = 0, worst1 = 0;
  const double b1 = dpo_model_grad_l1_bound(m, B1);
  cr_expect_eq(S1, 2 * B1);
  cr_expect_eq(b1, B1);
  for (int trial = 0; trial < 20; trial++) {
    double x[5];
    rand_vec(x, 5, 20.0); /* large x saturates the coefficients toward +-1 */
    for (int64_t i = 0; i < 60; i++)
      for (int64_t k = 0; k < 60; k++) {
        double gi[5] = {0}, gk[5] = {0}, l = 0, diff = 0, one = 0;
        dpo_model_local_grad(m, &p.dense, x, &i, 1, NULL, NULL, &l, gi);
        dpo_model_local_grad(m, &p.dense, x, &k, 1, NULL, NULL, &l, gk);
        for (int j = 0; j < 5; j++) diff += fabs(gi[j] - gk[j]), one += fabs(gi[j]);
        cr_expect_leq(diff, S1);
        cr_expect_leq(one, b1); /* add-remove: one example's gradient itself */
        if (diff > worst) worst = diff;
        if (one > worst1) worst1 = one;
      }
  }
  cr_expect_gt(worst, 0.5 * S1); /* the bound is of the right size */
  cr_expect_gt(worst1, 0.5 * b1);
  cr_expect_lt(dpo_model_grad_l1_sens(r, B1), 0);
  cr_expect_lt(dpo_model_grad_l1_bound(r, B1), 0);
  cr_expect_lt(dpo_model_grad_l1_sens(m, -1.0), 0);
  dpo_model_destroy(m);
  dpo_model_destroy(r);
  free_pair(&p);
}

Test(model, create_and_errors) {
  dpo_model_t *m = NULL;
  cr_expect_eq(dpo_model_create("logreg", 0.5, &m), DPO_OK);
  cr_expect_str_eq(dpo_model_name(m), "logreg");
  cr_expect_eq(dpo_model_lambda(m), 0.5);
  cr_expect_eq(dpo_model_binary(m), 1);
  cr_expect_eq(dpo_model_loss(m), DPO_LOSS_LOGISTIC);
  dpo_model_destroy(m);
  cr_expect_eq(dpo_model_create("lsq", 0.0, &m), DPO_OK);
  cr_expect_str_eq(dpo_model_name(m), "lsq");
  cr_expect_eq(dpo_model_binary(m), 0);
  cr_expect_eq(dpo_model_loss(m), DPO_LOSS_SQUARED);
  dpo_model_destroy(m);
  cr_expect_eq(dpo_model_create("lsq", 0.1, &m), DPO_EINVAL);
  cr_expect_null(m);
  cr_expect_eq(dpo_model_create("svm", 0.1, &m), DPO_EINVAL);
  cr_expect(strstr(dpo_errmsg(), "svm") != NULL);
  cr_expect_eq(dpo_model_create("ridge", -1.0, &m), DPO_EINVAL);
  cr_expect_eq(dpo_model_create("ridge", NAN, &m), DPO_EINVAL);

  pair_t p;
  make_pair(&p, 10, 3, 1.0, 1, 1.0, 1);
  double x[3] = {0}, g[3], l;
  dpo_clip_t bad = {DPO_CLIP_L2, 0.0};
  int64_t rows[2] = {0, 10};
  cr_expect_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &p.dense, x, NULL, 0, &bad, NULL, &l, g),
               DPO_EINVAL);
  cr_expect_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &p.dense, x, rows, 2, NULL, NULL, &l, g),
               DPO_EINVAL);
  cr_expect_eq(dpo_kern_loss_grad((dpo_loss_t)7, &p.dense, x, NULL, 0, NULL, NULL, &l, g),
               DPO_EINVAL);
  free_pair(&p);
}

/* finish(): F = sum/n + lambda ||x||^2, g = g/n + 2 lambda x. */
Test(model, finish) {
  dpo_model_t *m;
  cr_assert_eq(dpo_model_create("ridge", 0.25, &m), DPO_OK);
  double x[2] = {1.0, -2.0}, g[2] = {4.0, 8.0}, F = 10.0;
  dpo_model_finish(m, 2, 4, x, &F, g);
  cr_expect_eq(F, 2.5 + 0.25 * 5.0);
  cr_expect_eq(g[0], 1.0 + 0.5);
  cr_expect_eq(g[1], 2.0 - 1.0);
  dpo_model_destroy(m);
}
