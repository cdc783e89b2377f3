/* The agglomeration's cost model (src/run/run_agglo.c, dpo__agglo_choose) against its closed
 * form T(1) = rows * width * entry_s, T(P) = T(1) / P + meetings * meet_s, with the figures
 * doc/results.md measured for a9a's DP-SGD step: ~31 us of gradient (256 rows x 124 entries at
 * 1 ns), a meeting 3 us on an idle node (spinning) and 0.4 ms under one busy loop per core. */
#include <criterion/criterion.h>
#include <math.h>

#include "run/run_agglo.h"

static dpo__agglo_facts_t a9a(int P, double meetings, double meet_s) {
  dpo__agglo_facts_t f = {P, 256, 124, 1e-9, meetings, meet_s};
  return f;
}

Test(agglo, idle_node_keeps_the_ranks) {
  dpo__agglo_facts_t f = a9a(2, 1, 3e-6);
  double t1, tP;
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 2);
  cr_assert_float_eq(t1, 256 * 124 * 1e-9, 1e-15);
  cr_assert_float_eq(tP, 256 * 124 * 1e-9 / 2 + 3e-6, 1e-15);
}

Test(agglo, loaded_node_agglomerates) {
  dpo__agglo_facts_t f = a9a(2, 1, 4e-4);
  double t1, tP;
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 1);
  cr_assert_float_eq(tP, 256 * 124 * 1e-9 / 2 + 4e-4, 1e-15);
  f = a9a(3, 3, 4e-4); /* the request path: three meetings a step, at 3 ranks */
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 1);
  cr_assert_float_eq(tP, 256 * 124 * 1e-9 / 3 + 3 * 4e-4, 1e-15);
}

Test(agglo, big_steps_keep_the_ranks_even_when_loaded) {
  /* a full pass of 32561 rows a step: 4 ms of work saves more than a 0.4 ms meeting costs */
  dpo__agglo_facts_t f = {2, 32561, 124, 1e-9, 3, 4e-4};
  double t1, tP;
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 2);
}

Test(agglo, the_break_even_point) {
  /* work w = 1e-4 s: at 2 ranks the saving w / 2 = 5e-5 s against a meeting of m: a tie keeps
   * the ranks, a meeting a little dearer agglomerates */
  dpo__agglo_facts_t f = {2, 100, 1000, 1e-9, 1, 5e-5};
  double t1, tP;
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 2);
  f.meet_s = 5.001e-5;
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 1);
  f.P = 1; /* one rank: nothing to decide, no meetings */
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 1);
  cr_assert_float_eq(tP, t1, 0);
}

Test(agglo, cores_not_shared_keeps_the_ranks_unmeasured) {
  /* the wait policy's probe saw a core for every rank: P whatever the other figures say (the
   * same facts without the flag agglomerate), and no prediction */
  dpo__agglo_facts_t f = a9a(2, 3, 4e-4);
  double t1, tP;
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 1);
  f.cores_free = 1;
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 2);
  cr_assert(isnan(t1) && isnan(tP));
  f.P = 1; /* one rank: still nothing to decide */
  cr_assert_eq(dpo__agglo_choose(&f, &t1, &tP), 1);
}
