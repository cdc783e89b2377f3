/* Unit tests for src/mf: MF gradient vs finite differences, partitionings (validity checked
 * independently, balance), compact L-BFGS vs the explicit BFGS inverse (LAPACK), sigma and
 * the pair-acceptance rule, the only-shrinking sigma. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/hamsi.h"
#include "dpopt/status.h"
#include "mf/lbfgs_compact.h"

void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
            const int *ldb, int *info);

static uint64_t st_ = 88172645463325252ULL;
static double urand(void) {
  st_ ^= st_ << 13;
  st_ ^= st_ >> 7;
  st_ ^= st_ << 17;
  return (double)(st_ >> 11) * 0x1.0p-53;
}

Test(mf, gradient_matches_finite_differences) {
  enum { NU = 7, NI = 5, R = 3, N = 22 };
  int32_t u[N], it[N], ud[NU] = {0}, id[NI] = {0};
  double y[N], X1[NU * R], X2[NI * R], g1[NU * R], g2[NI * R], f;
  for (int k = 0; k < N; k++) {
    u[k] = k % NU;
    it[k] = (k * 3 + k / NU) % NI;
    y[k] = 1 + 4 * urand();
    ud[u[k]]++;
    id[it[k]]++;
  }
  for (int k = 0; k < NU * R; k++) X1[k] = urand();
  for (int k = 0; k < NI * R; k++) X2[k] = urand();
  for (int reg = 0; reg < 2; reg++) {
    double lam = reg ? 0.3 : 0;
    cr_assert_eq(dpo_mf_objective(N, u, it, y, NU, NI, R, X1, X2, lam, ud, id, &f, g1, g2), DPO_OK);
    /* f itself against the closed form sum (y - x1'x2)^2 + lam (sum_a c_a ||x1_a||^2 +
     * sum_b c_b ||x2_b||^2), a row's weight c = sqrt(deg / mean deg of its side) */
    double fc = 0, n1 = 0, n2 = 0, m1 = (double)N / NU, m2 = (double)N / NI;
    for (int k = 0; k < N; k++) {
      double p = 0;
      for (int q = 0; q < R; q++) p += X1[u[k] * R + q] * X2[it[k] * R + q];
      fc += (y[k] - p) * (y[k] - p);
    }
    for (int k = 0; k < NU * R; k++) n1 += sqrt(ud[k / R] / m1) * X1[k] * X1[k];
    for (int k = 0; k < NI * R; k++) n2 += sqrt(id[k / R] / m2) * X2[k] * X2[k];
    fc += lam * (n1 + n2);
    cr_assert(fabs(f - fc) <= 1e-12 * fabs(fc), "f %.17g vs closed form %.17g", f, fc);
    for (int w = 0; w < 2; w++) {
      double *X = w ? X2 : X1, *g = w ? g2 : g1;
      int nv = w ? NI * R : NU * R;
      for (int v = 0; v < nv; v++) {
        double h = 1e-6, x0 = X[v], fp, fm;
        X[v] = x0 + h;
        dpo_mf_objective(N, u, it, y, NU, NI, R, X1, X2, lam, ud, id, &fp, NULL, NULL);
        X[v] = x0 - h;
        dpo_mf_objective(N, u, it, y, NU, NI, R, X1, X2, lam, ud, id, &fm, NULL, NULL);
        X[v] = x0;
        double fd = (fp - fm) / (2 * h);
        cr_assert(fabs(fd - g[v]) <= 1e-6 * (1 + fabs(g[v])), "X%d[%d]: grad %.10g vs fd %.10g",
                  w + 1, v, g[v], fd);
      }
    }
  }
}

/* skewed random ratings (a few heavy users and items) */
static int64_t mkratings(int32_t nu, int32_t ni, int64_t n, int32_t *u, int32_t *it) {
  int64_t m = 0;
  char *seen = calloc((size_t)nu * ni, 1);
  while (m < n) {
    double a = urand(), b = urand();
    int32_t uu = (int32_t)(nu * a * a * a), ii = (int32_t)(ni * b * b);
    if (seen[(int64_t)uu * ni + ii]) continue;
    seen[(int64_t)uu * ni + ii] = 1;
    u[m] = uu;
    it[m++] = ii;
  }
  free(seen);
  return m;
}

Test(mf, partitions_valid_and_balanced) {
  enum { NU = 60, NI = 40, N = 700, K = 4 };
  int32_t u[N], it[N];
  mkratings(NU, NI, N, u, it);
  double imb[5];
  for (int kind = 0; kind < 5; kind++) {
    dpo_mf_partition_t *p = NULL;
    cr_assert_eq(dpo_mf_partition((dpo_mf_part_kind_t)kind, K, N, u, it, NU, NI, 7, &p), DPO_OK);
    /* independent O(n^2) check: two ratings of the same (stratum, phase) in different blocks
     * must share neither user nor item */
    int64_t conflicts = 0, per[K] = {0};
    for (int a = 0; a < N; a++) {
      cr_assert(p->stratum[a] >= 0 && p->stratum[a] < K);
      per[p->stratum[a]]++;
      for (int b = a + 1; b < N; b++)
        if (p->stratum[a] == p->stratum[b] && p->phase[a] == p->phase[b] &&
            p->block[a] != p->block[b] && (u[a] == u[b] || it[a] == it[b]))
          conflicts++;
    }
    int64_t tot = 0;
    for (int s = 0; s < K; s++) tot += per[s];
    cr_assert_eq(tot, N);
    int64_t c2;
    int v = dpo_mf_partition_valid(p, u, it, NU, NI, &c2);
    if (kind == DPO_MF_HOGWILD) {
      cr_assert(conflicts > 0, "HOGWILD on a dense set should overlap");
      cr_assert_eq(v, 0);
      cr_assert_eq(p->valid_expected, 0);
    } else {
      cr_assert_eq(conflicts, 0, "%s: %lld conflicting pairs", dpo_mf_part_name(p->kind),
                   (long long)conflicts);
      cr_assert_eq(v, 1, "%s reported invalid", dpo_mf_part_name(p->kind));
    }
    if (kind == DPO_MF_STRATA || kind == DPO_MF_STRATA_B) {
      /* a grid block's ratings lie in its user interval and in item interval (i + k) mod K */
      for (int a = 0; a < N; a++) {
        int32_t i = (int32_t)p->block[a], c = (i + p->stratum[a]) % K;
        cr_assert(u[a] >= p->row_cut[i] && u[a] < p->row_cut[i + 1]);
        cr_assert(it[a] >= p->col_cut[c] && it[a] < p->col_cut[c + 1]);
      }
    }
    if (kind == DPO_MF_HOGWILD) /* equal subsets */
      for (int s = 0; s < K; s++) cr_assert(per[s] == N / K || per[s] == N / K + 1);
    dpo_mf_balance_t bl;
    dpo_mf_partition_balance(p, &bl);
    imb[kind] = bl.imbalance;
    dpo_mf_partition_destroy(p);
  }
  /* STRATA-B balances the skewed blocks better than equal intervals (Fig. 3.4) */
  cr_assert(imb[DPO_MF_STRATA_B] < imb[DPO_MF_STRATA], "strata-b %g vs strata %g",
            imb[DPO_MF_STRATA_B], imb[DPO_MF_STRATA]);
}

Test(mf, cuts_balanced_closed_form) {
  int64_t deg[8] = {4, 4, 4, 4, 4, 4, 4, 4};
  int32_t cut[5];
  cr_assert_eq(dpo_mf_cuts(deg, 8, 4, 1, cut), DPO_OK);
  for (int b = 0; b <= 4; b++) cr_assert_eq(cut[b], 2 * b);
  int64_t d2[6] = {10, 1, 1, 1, 1, 6};
  cr_assert_eq(dpo_mf_cuts(d2, 6, 2, 1, cut), DPO_OK);
  cr_assert_eq(cut[1], 1); /* 10 | 1+1+1+1+6 = 10 */
}

/* Direct BFGS B from B0 = diag(1 / (sigma w)) (w NULL: 1) with the pairs in age order,
 * inverted by LAPACK. */
static void explicit_h(int n, int m, double *S, double *Y, double sigma, const double *w,
                       const double *g, double *h) {
  double *B = calloc((size_t)n * n, sizeof *B), *Bs = malloc(sizeof(double) * n);
  for (int i = 0; i < n; i++) B[i * n + i] = 1 / (sigma * (w ? w[i] : 1.0));
  for (int k = 0; k < m; k++) {
    double *s = S + k * n, *y = Y + k * n, sBs = 0, ys = 0;
    for (int i = 0; i < n; i++) {
      Bs[i] = 0;
      for (int j = 0; j < n; j++) Bs[i] += B[i * n + j] * s[j];
    }
    for (int i = 0; i < n; i++) {
      sBs += s[i] * Bs[i];
      ys += y[i] * s[i];
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) B[i * n + j] += -Bs[i] * Bs[j] / sBs + y[i] * y[j] / ys;
  }
  int N = n, one = 1, info, *ipiv = malloc(sizeof(int) * n);
  memcpy(h, g, sizeof(double) * n);
  dgesv_(&N, &one, B, &N, ipiv, h, &N, &info); /* B symmetric: row/column order irrelevant */
  cr_assert_eq(info, 0);
  free(B);
  free(Bs);
  free(ipiv);
}

/* The compact product with H0 = sigma diag(w) (HAMSI's degree metric; w = NULL is the thesis's
 * H0 = sigma I) equals the explicit BFGS inverse from B0 = H0^-1 and the same pairs.  The
 * panels hold bfloat16, so the pairs are rounded to it first (as HAMSI's pair does); the
 * explicit inverse gets the same rounded values.  n = 9 runs the 8-entry and scalar paths of the
 * products; n = 41 also the 16-entry ones (two, then one of 8, then one entry). */
static void compact_vs_explicit(int weighted, int n) {
  enum { M = 3, NP = 5 };
  double A[n * n], wv[n], *w = weighted ? wv : NULL;
  dpo__hist_t Hsl[n * M]; /* slot-major (s, y) panel */
  memset(Hsl, 0, sizeof Hsl);
  double Sa[NP * n], Ya[NP * n], g[n], hc[n], he[n];
  /* SPD A so y = A s has s'y > 0 */
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i; j++) A[i * n + j] = A[j * n + i] = (i == j ? 9 : 0) + urand() - 0.5;
  for (int i = 0; i < n; i++) wv[i] = 1.0 / (1 + (i * 7) % 50); /* 1 / degree */
  dpo__lbfgs_t l;
  cr_assert_eq(dpo__lbfgs_init(&l, M, 1.0), DPO_OK);
  for (int k = 0; k < NP; k++) {
    double *s = Sa + k * n, *y = Ya + k * n, dots[2 * M] = {0};
    for (int i = 0; i < n; i++) s[i] = dpo__bf16_val(dpo__bf16(urand() - 0.5));
    for (int i = 0; i < n; i++) {
      y[i] = 0;
      for (int j = 0; j < n; j++) y[i] += A[i * n + j] * s[j];
      y[i] = dpo__bf16_val(dpo__bf16(y[i]));
    }
    int ns = dpo__lbfgs_next_slot(&l), acc;
    for (int j = 0; j < M; j++)
      for (int i = 0; i < n; i++) {
        double sj = j == ns ? s[i] : dpo__hist_s(Hsl[j * n + i]);
        double yj = j == ns ? y[i] : dpo__hist_y(Hsl[j * n + i]);
        dots[j] += sj * y[i];
        dots[M + j] += yj * (w ? w[i] : 1.0) * y[i];
      }
    cr_assert_eq(dpo__lbfgs_push(&l, dots, &acc), DPO_OK);
    cr_assert_eq(acc, 1);
    for (int i = 0; i < n; i++) {
      Hsl[ns * n + i] = dpo__hist_put(s[i], y[i]); /* exact: s, y are bfloat16 values */
    }
    /* compare with the explicit inverse from the last min(k+1, M) pairs, after each push
     * (exercises the circular buffer once it wraps) */
    int m = k + 1 < M ? k + 1 : M;
    for (int i = 0; i < n; i++) g[i] = urand() - 0.5;
    dpo__lbfgs_apply(&l, n, Hsl, w, g, hc);
    explicit_h(n, m, Sa + (k + 1 - m) * n, Ya + (k + 1 - m) * n, l.sigma, w, g, he);
    double err = 0, nrm = 0;
    for (int i = 0; i < n; i++) {
      err = fmax(err, fabs(hc[i] - he[i]));
      nrm = fmax(nrm, fabs(he[i]));
    }
    cr_assert(err <= 1e-10 * nrm, "pair %d: compact vs explicit max err %g (|h| %g)", k, err, nrm);
    cr_assert_eq(l.m, m);
  }
  dpo__lbfgs_free(&l);
}

/* The panels' rounding: bfloat16 keeps 8 significant bits, ties go to the even one, float's
 * range is kept (1e-30 survives), inf and NaN stay so; s and y share a word and keep apart. */
Test(mf, hist_bfloat16_rounding) {
  struct { double x; uint32_t b; } c[] = {
      {1.0, 0x3f80},        {-2.5, 0xc020},       {1 + 0x1p-8, 0x3f80}, /* tie: even */
      {1 + 3 * 0x1p-8, 0x3f82},                   {1 + 0x1p-8 + 0x1p-20, 0x3f81},
      {0.0, 0x0000},        {INFINITY, 0x7f80},   {-INFINITY, 0xff80},  {3.4e38, 0x7f80},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    cr_assert_eq(dpo__bf16(c[i].x), c[i].b, "%a -> %#x, not %#x", c[i].x, dpo__bf16(c[i].x),
                 c[i].b);
    dpo__hist_t h = dpo__hist_put(c[i].x, -c[i].x);
    cr_assert_eq(h.b, c[i].b << 16 | dpo__bf16(-c[i].x));
    cr_assert_eq(dpo__hist_s(h), dpo__bf16_val(c[i].b));
    cr_assert_eq(dpo__hist_y(h), -dpo__bf16_val(c[i].b));
  }
  cr_assert(isnan(dpo__hist_s(dpo__hist_put(NAN, 1))) && dpo__hist_y(dpo__hist_put(NAN, 1)) == 1);
  cr_assert(isnan(dpo__hist_y(dpo__hist_put(1, NAN))) && dpo__hist_s(dpo__hist_put(1, NAN)) == 1);
  for (double x = 1e-30; x < 1e30; x *= 7.3) { /* relative error at most 2^-8 */
    double back = dpo__bf16_val(dpo__bf16(x));
    cr_assert(fabs(back - x) <= 0x1p-8 * x * (1 + 1e-6), "%g -> %g", x, back);
    cr_assert_eq(dpo__bf16_val(dpo__bf16(back)), back); /* stored values are exact */
  }
}

Test(mf, compact_lbfgs_equals_explicit_bfgs_inverse) {
  compact_vs_explicit(0, 9);
  compact_vs_explicit(0, 41);
}

Test(mf, compact_lbfgs_degree_metric_equals_explicit) {
  compact_vs_explicit(1, 9);
  compact_vs_explicit(1, 41);
}

/* W'g over a block's rows at once (HAMSI's update: one reduction a block) equals the sum of
 * the per-row products, for row lengths with every path (r = 20: 16 + 4 scalar; 24: 16 + 8;
 * 50: 3 x 16 + 2), memories with a compiled body (5) and without (10), with and without the
 * metric; rows taken out of order and not all of them. */
Test(mf, wtg_over_rows_equals_sum_of_rows) {
  enum { NR = 37 };
  int rs[3] = {20, 24, 50}, Ms[2] = {5, 10};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 2; b++)
      for (int weighted = 0; weighted < 2; weighted++) {
        int r = rs[a], M = Ms[b];
        dpo__hist_t *H = malloc(sizeof *H * (size_t)NR * r * M);
        double *g = malloc(sizeof(double) * NR * r), *w = malloc(sizeof(double) * NR * r);
        int32_t rows[NR];
        int n = 0;
        for (int64_t i = 0; i < (int64_t)NR * r * M; i++)
          H[i] = dpo__hist_put(urand() - 0.5, urand() - 0.5);
        for (int i = 0; i < NR * r; i++) {
          g[i] = urand() - 0.5;
          w[i] = 1.0 / (1 + i / r % 7);
        }
        for (int i = NR - 1; i >= 0; i -= 1 + i % 3) rows[n++] = i;
        dpo__lbfgs_t l;
        cr_assert_eq(dpo__lbfgs_init(&l, M, 1.0), DPO_OK);
        double u[20] = {0}, ref[20] = {0}, *wp = weighted ? w : NULL;
        dpo__lbfgs_wtg_rows(&l, r, H, wp, g, rows, n, u);
        for (int t = 0; t < n; t++) {
          int64_t o = (int64_t)rows[t] * r;
          dpo__lbfgs_wtg(&l, r, H + o * M, wp ? wp + o : NULL, g + o, ref);
        }
        for (int j = 0; j < 2 * M; j++)
          cr_assert(fabs(u[j] - ref[j]) <= 1e-12 * (1 + fabs(ref[j])),
                    "r %d M %d w %d: u[%d] %.17g, per row %.17g", r, M, weighted, j, u[j],
                    ref[j]);
        dpo__lbfgs_free(&l);
        free(H);
        free(g);
        free(w);
      }
}

Test(mf, sigma_and_pair_acceptance) {
  enum { M = 2 };
  dpo__lbfgs_t l;
  int acc;
  cr_assert_eq(dpo__lbfgs_init(&l, M, 0.25), DPO_OK);
  double bad[2 * M] = {-1.0, 0, 4.0, 0}; /* s'y < 0: rejected (Alg. 3 line 15) */
  cr_assert_eq(dpo__lbfgs_push(&l, bad, &acc), DPO_OK);
  cr_assert_eq(acc, 0);
  cr_assert_eq(l.m, 0);
  cr_assert_eq(l.sigma, 0.25);
  double zero[2 * M] = {0.0, 0, 4.0, 0}; /* s'y = 0 is not > 0 */
  dpo__lbfgs_push(&l, zero, &acc);
  cr_assert_eq(acc, 0);
  double good[2 * M] = {3.0, 0, 4.0, 0};
  cr_assert_eq(dpo__lbfgs_push(&l, good, &acc), DPO_OK);
  cr_assert_eq(acc, 1);
  cr_assert_eq(l.m, 1);
  cr_assert_eq(l.sigma, 3.0 / 4.0); /* line 16: s'y / y'y */
  /* next pair goes to slot 1; a rejected one leaves sigma and the memory alone */
  cr_assert_eq(dpo__lbfgs_next_slot(&l), 1);
  double bad2[2 * M] = {0.5, -2.0, 0.1, 1.0};
  dpo__lbfgs_push(&l, bad2, &acc);
  cr_assert_eq(acc, 0);
  cr_assert_eq(l.sigma, 0.75);
  cr_assert_eq(l.rejected, 3);
  cr_assert_eq(l.accepted, 1);
  dpo__lbfgs_free(&l);
}

/* shrink_only (the factors-only model's rule, as hamsi-mf): sigma is the smallest s'y / y'y
 * of the pairs accepted since the last reset, never above sigma0, whatever the order of the
 * pairs and whether they are still held; checked against that minimum computed here from
 * the vectors, over 12 pairs (rejected ones among them) through a memory of 3 and a reset. */
Test(mf, sigma_shrink_only_is_min_of_accepted_ratios) {
  enum { M = 3, N = 8, P = 12 };
  const double sigma0 = 0.5;
  /* y ~ s / c: ratio ~ c; c < 0 gives s'y < 0 (rejected); pair 8 is after the reset */
  const double c[P] = {0.9, 0.3, 2.0, -1.0, 0.1, 0.7, 0.05, 1.5, 3.0, 0.4, -0.5, 0.2};
  double S[M][N], Y[M][N], s[N], y[N];
  dpo__lbfgs_t l;
  int acc, n_acc = 0, n_rej = 0, latest_above = 0;
  cr_assert_eq(dpo__lbfgs_init(&l, M, sigma0), DPO_OK);
  l.shrink_only = 1;
  double want = sigma0;
  for (int p = 0; p < P; p++) {
    if (p == 8) {
      dpo__lbfgs_reset(&l, sigma0);
      want = sigma0;
      cr_assert_eq(l.sigma, sigma0);
      cr_assert_eq(l.shrink_only, 1, "reset keeps the rule");
    }
    for (int i = 0; i < N; i++) {
      s[i] = urand() - 0.5;
      y[i] = s[i] / c[p] + 0.05 * (urand() - 0.5);
    }
    int slot = dpo__lbfgs_next_slot(&l);
    double dots[2 * M] = {0};
    for (int a = 0; a < l.m; a++) {
      int j = l.age[a];
      for (int i = 0; i < N; i++) dots[j] += S[j][i] * y[i], dots[M + j] += Y[j][i] * y[i];
    }
    double sy = 0, yy = 0;
    for (int i = 0; i < N; i++) sy += s[i] * y[i], yy += y[i] * y[i];
    dots[slot] = sy, dots[M + slot] = yy;
    cr_assert_eq(dpo__lbfgs_push(&l, dots, &acc), DPO_OK);
    cr_assert_eq(acc, sy > 0, "pair %d: accepted iff s'y > 0", p);
    if (acc) {
      memcpy(S[slot], s, sizeof s);
      memcpy(Y[slot], y, sizeof y);
      n_acc++;
      if (sy / yy < want) want = sy / yy;
      if (sy / yy > want) latest_above++;
    } else {
      n_rej++;
    }
    cr_assert_eq(l.sigma, want, "pair %d: sigma %g, min of the accepted ratios %g", p, l.sigma,
                 want);
  }
  cr_assert_eq(l.accepted, n_acc);
  cr_assert_eq(l.rejected, n_rej);
  cr_assert(n_rej == 2 && latest_above >= 4, "the pairs exercise the rule (%d, %d)", n_rej,
            latest_above);
  dpo__lbfgs_free(&l);
}
