/* Unit tests of the gradient passes' software prefetch (src/linalg/kernels.c): the candidates
 * are timed in turn, on segments of the first full pass over >= 64 MB or on the first calls of
 * a pass in views, and one is kept.  A prefetch changes no arithmetic and the segments split
 * the pass where it splits into the same bits, so the measuring pass, the next pass (with the
 * choice) and the row-list path must agree (issue 16). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/kernels.h"
#include "dpopt/status.h"
#include "../lib/t_rand.h"

/* n x d dense rows, entries uniform in [-1, 1), labels +-1, from seed */
static dpo_shard_t dense_shard(int64_t n, int32_t d, uint64_t seed) {
  dpo_shard_t s = {0};
  s.n = s.n_global = n;
  s.d = d;
  s.labels = DPO_LABELS_BINARY;
  s.X = malloc((size_t)(n * d) * sizeof(double));
  s.y = malloc((size_t)n * sizeof(double));
  cr_assert(s.X && s.y);
  rng_state = seed;
  for (int64_t i = 0; i < n * d; i++) s.X[i] = nrand();
  for (int64_t i = 0; i < n; i++) s.y[i] = urand() < 0.5 ? -1.0 : 1.0;
  return s;
}

/* Two full passes over s with x: the first decides the prefetch (mode() goes from -1 to a
 * choice, or keeps the one made before; bytes() is 0 exactly when the choice is none), the
 * second runs with it; both give the same bits in g1 and *l1. */
static void two_passes(const dpo_shard_t *s, const double *x, double *g1, double *l1,
                       int (*mode_fn)(void), int64_t (*bytes_fn)(void)) {
  double g2[256] = {0}, l2 = 0;
  cr_assert_leq(s->d, 256);
  int before = mode_fn();
  cr_assert_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, s, x, NULL, 0, NULL, NULL, l1, g1), DPO_OK);
  int mode = mode_fn();
  cr_expect(mode >= 0 && (mode == 0) == (bytes_fn() == 0), "prefetch mode %d (%ld bytes)", mode,
            (long)bytes_fn());
  cr_expect(before == -1 || before == mode, "a decided mode changed");
  cr_assert_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, s, x, NULL, 0, NULL, NULL, &l2, g2), DPO_OK);
  cr_expect(memcmp(g1, g2, sizeof(double) * (size_t)s->d) == 0 && *l1 == l2,
            "measuring pass and next pass differ");
}

/* The dense pass's first call over >= 64 MB times its prefetch distances on interleaved
 * segments, then keeps one: the choice changes no arithmetic, so the measuring pass and the
 * next give the same bits (and agree with the row-list path to rounding). */
Test(kernels, prefetch_choice_same_bits) {
  const int32_t d = 100;
  const int64_t n = 84000; /* 67.2 MB: just over the 64 MiB that triggers the measurement */
  dpo_shard_t s = dense_shard(n, d, 4242);
  int64_t *rows = malloc((size_t)n * sizeof(int64_t));
  cr_assert(rows);
  for (int64_t i = 0; i < n; i++) rows[i] = i;
  double x[100], g1[100] = {0}, g3[100] = {0}, l1 = 0, l3 = 0;
  rand_vec(x, d, 0.1);
  two_passes(&s, x, g1, &l1, dpo_kern_prefetch_mode, dpo_kern_prefetch_bytes);
  cr_assert_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &s, x, rows, n, NULL, NULL, &l3, g3), DPO_OK);
  cr_expect_lt(rel2(g1, g3, d), 1e-12, "full pass vs row-list pass");
  cr_expect_lt(fabs(l1 - l3), 1e-12 * fabs(l3));
  free(s.X);
  free(s.y);
  free(rows);
}

/* The same for the CSR pass (a9a-like rows, >= 64 MB of values and indices): the measuring
 * pass runs its candidates on segments of whole superblocks, so it, the next pass (with the
 * chosen prefetch) and the row-list pass (never a prefetch) give the same bits. */
Test(kernels, csr_prefetch_choice_same_bits) {
  const int32_t d = 123;
  const int64_t n = 450000, cap = n * 20;
  dpo_shard_t s = {0};
  s.n = s.n_global = n;
  s.d = d;
  s.sparse = 1;
  s.labels = DPO_LABELS_BINARY;
  s.rowptr = malloc((size_t)(n + 1) * sizeof(int64_t));
  s.colind = malloc((size_t)cap * sizeof(int32_t));
  s.val = malloc((size_t)cap * sizeof(double));
  s.y = malloc((size_t)n * sizeof(double));
  int64_t *rows = malloc((size_t)n * sizeof(int64_t));
  cr_assert(s.rowptr && s.colind && s.val && s.y && rows);
  rng_state = 777;
  int64_t nnz = 0;
  s.rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) { /* 6-20 increasing columns a row */
    int32_t len = 6 + (int32_t)(urand() * 15), j = (int32_t)(urand() * 4);
    for (int32_t k = 0; k < len && j < d && nnz < cap; k++, j += 1 + (int32_t)(urand() * 8)) {
      s.colind[nnz] = j;
      s.val[nnz++] = nrand();
    }
    s.rowptr[i + 1] = nnz;
    s.y[i] = urand() < 0.5 ? -1.0 : 1.0;
    rows[i] = i;
  }
  cr_assert_gt(12 * nnz, (int64_t)64 << 20, "%ld nonzeros: under the 64 MB that trigger it",
               (long)nnz);
  double x[123], g1[123] = {0}, g3[123] = {0}, l1 = 0, l3 = 0;
  rand_vec(x, d, 0.3);
  two_passes(&s, x, g1, &l1, dpo_kern_csr_prefetch_mode, dpo_kern_csr_prefetch_bytes);
  cr_assert_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &s, x, rows, n, NULL, NULL, &l3, g3), DPO_OK);
  cr_expect(memcmp(g1, g3, sizeof g1) == 0 && l1 == l3, "full pass and row-list pass differ");
  free(s.rowptr);
  free(s.colind);
  free(s.val);
  free(s.y);
  free(rows);
}

/* The oracle's way (comm/oracle.c): a pass in 256-row views, each call too small to time in
 * segments of its own.  The calls take turns as segments (6 rounds of the 8 candidates: 48
 * calls of 200 KB), so the choice is made within the first pass, and the views of the next
 * pass (with it) give the same bits. */
Test(kernels, prefetch_choice_across_views) {
  const int32_t d = 100;
  const int64_t n = 64 * 256;
  dpo_shard_t s = dense_shard(n, d, 99);
  double x[100], g[2][100] = {{0}}, l[2] = {0, 0};
  rand_vec(x, d, 0.1);
  cr_assert_eq(dpo_kern_prefetch_mode(), -1);
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t i = 0; i < n; i += 256) {
      dpo_shard_t v = s;
      v.n = 256;
      v.row0 = i;
      v.X = s.X + i * (int64_t)d;
      v.y = s.y + i;
      cr_assert_eq(dpo_kern_loss_grad(DPO_LOSS_LOGISTIC, &v, x, NULL, 0, NULL, NULL, &l[pass],
                                      g[pass]),
                   DPO_OK);
    }
    if (pass == 0)
      cr_expect(dpo_kern_prefetch_mode() >= 0, "no choice after a pass of 64 views of 200 KB");
  }
  cr_expect(memcmp(g[0], g[1], sizeof g[0]) == 0 && l[0] == l[1], "the two passes differ");
  free(s.X);
  free(s.y);
}
