/* Serial unit tests of the optim/comm pieces that have closed forms: the M-ASG stage
 * schedule of (001, (4.7)), the algorithm table, the BLACS grid shape and the exactness of
 * the double-double accumulation (scalar and vector forms). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/reduce.h"
#include "dpopt/optim.h"
#include "linalg/scalapack.h"
#include "optim/algos.h"

Test(masg, schedule_closed_form) {
  /* kappa = 100, p = 1: unit = ceil(10 ln 8) = ceil(20.79) = 21, n_k = 2^k 21;
   * n1 = 5: stage 1 = [0, 5), stage 2 = [5, 89) (84), stage 3 = [89, 257) (168) */
  int st, first;
  double a;
  int64_t len;
  const double a1 = 0.1;
  dpo__masg_schedule(0, 5, 100.0, 1.0, a1, &st, &a, &len, &first);
  cr_expect(st == 1 && a == a1 && len == 5 && first);
  dpo__masg_schedule(4, 5, 100.0, 1.0, a1, &st, &a, &len, &first);
  cr_expect(st == 1 && !first);
  dpo__masg_schedule(5, 5, 100.0, 1.0, a1, &st, &a, &len, &first);
  cr_expect(st == 2 && first && len == 84 && a == a1 / 16.0, "stage %d len %ld a %g", st,
            (long)len, a);
  dpo__masg_schedule(88, 5, 100.0, 1.0, a1, &st, &a, &len, &first);
  cr_expect(st == 2 && !first);
  dpo__masg_schedule(89, 5, 100.0, 1.0, a1, &st, &a, &len, &first);
  cr_expect(st == 3 && first && len == 168 && a == a1 / 64.0);
  /* p = 2: unit = ceil(10 * 4 ln 2) = ceil(27.7) = 28, stage 2 has 112 iterations */
  dpo__masg_schedule(5, 5, 100.0, 2.0, a1, &st, &a, &len, &first);
  cr_expect(len == 112);
}

Test(registry, table) {
  const char *names[] = {"gd", "hb", "nag", "masg", "lbfgs"};
  for (int i = 0; i < 5; i++) {
    const dpo_algo_t *a = dpo_algo_find(names[i]);
    cr_assert(a != NULL, "%s missing", names[i]);
    cr_expect(strcmp(a->name, names[i]) == 0 && !a->is_private && a->step && a->create);
  }
  cr_expect(dpo_algo_find("nope") == NULL);
  int n = 0;
  for (const dpo_algo_t *const *l = dpo_algo_list(); *l; l++) n++;
  cr_expect(n >= 5);
}

Test(grid, shape) {
  int r, c;
  const int P[] = {1, 2, 3, 4, 6, 8, 12, 16, 7};
  const int R[] = {1, 1, 1, 2, 2, 2, 3, 4, 1};
  for (int i = 0; i < 9; i++) {
    dpo__grid_shape(P[i], &r, &c);
    cr_expect(r == R[i] && r * c == P[i], "P=%d: %d x %d", P[i], r, c);
  }
}

Test(dd, exact_cancellation) {
  dpo__dd_t a = {0, 0};
  dpo__dd_add(&a, 1e16);
  dpo__dd_add(&a, 1.0);
  dpo__dd_add(&a, -1e16);
  cr_expect(a.hi == 1.0, "%g", a.hi); /* plain doubles give 0 */
  dpo__dd_t b = {0, 0}, c = {0, 0};
  for (int i = 0; i < 1000; i++) dpo__dd_add(&b, 0.1);
  for (int i = 0; i < 500; i++) dpo__dd_add(&c, 0.1);
  dpo__dd_t d = c;
  dpo__dd_add_dd(&c, &d);
  cr_expect(b.hi == c.hi && fabs(b.hi - 100.0) < 1e-13);
}

/* The vector form dpo__dd_add_vec (the chunk sums of the oracle, fetch and newton) gives the
 * same bits as dpo__dd_add element by element: hi and lo after many additions of values
 * spread over 60 binades and both signs, at lengths around the vector widths. */
Test(dd, vector_form_same_bits) {
  static const int64_t ns[] = {1, 7, 8, 9, 33, 7850};
  uint64_t z = 12345;
  for (int t = 0; t < 6; t++) {
    const int64_t n = ns[t];
    dpo__dd_t *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    double *x = malloc((size_t)n * sizeof *x);
    cr_assert(a && b && x);
    for (int rep = 0; rep < 50; rep++) {
      for (int64_t j = 0; j < n; j++) {
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(z >> 11) * 0x1.0p-53;
        x[j] = (z & 1 ? -1 : 1) * ldexp(0.5 + u, (int)((z >> 3) % 60) - 30);
        dpo__dd_add(&a[j], x[j]);
      }
      dpo__dd_add_vec(b, x, n);
    }
    cr_expect(memcmp(a, b, (size_t)n * sizeof *a) == 0, "n=%ld: vector and scalar differ", (long)n);
    free(a);
    free(b);
    free(x);
  }
}
