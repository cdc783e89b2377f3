/* Unit test of secure aggregation's mask graph (dpo_secagg_graph, src/privacy/secagg.c,
 * "cheaper rounds"): for n = 1..12 ranks and every coalition bound c, the graph is symmetric
 * (rank r masks with s iff s masks with r, or the masks would not cancel), no rank masks with
 * itself, and deleting ANY set of at most c ranks leaves the others connected (checked over
 * all 2^n subsets by a breadth-first search, independently of the Harary argument); the graph
 * is sparse when c is small against n (degree 2h, h = c/2 + 1), and the bound is tight: some
 * 2h ranks disconnect it, so a smaller degree would fail the check above. */
#include "dpopt/parties.h"
#include "dpopt/status.h"

#include <criterion/criterion.h>
#include <string.h>

enum { NMAX = 12 };

/* adjacency of the graph for n ranks against c corrupt, from every rank's own list */
static void adjacency(int n, int c, unsigned char adj[NMAX][NMAX], int deg[NMAX]) {
  memset(adj, 0, NMAX * NMAX);
  for (int r = 0; r < n; r++) {
    int nbr[NMAX];
    cr_assert_eq(dpo_secagg_graph(n, c, r, nbr, &deg[r]), DPO_OK);
    for (int i = 0; i < deg[r]; i++) {
      cr_assert(nbr[i] >= 0 && nbr[i] < n && nbr[i] != r, "n %d c %d: rank %d lists %d", n, c,
                r, nbr[i]);
      cr_assert(i == 0 || nbr[i] > nbr[i - 1], "n %d c %d: rank %d's list not ascending", n, c,
                r);
      adj[r][nbr[i]] = 1;
    }
  }
}

/* the ranks outside `removed` (a bit set) are connected */
static int connected_without(int n, unsigned char adj[NMAX][NMAX], unsigned removed) {
  int start = -1, seen = 0, left = 0, q[NMAX], qh = 0, qt = 0;
  unsigned vis = removed;
  for (int r = 0; r < n; r++)
    if (!(removed >> r & 1)) {
      left++;
      if (start < 0) start = r;
    }
  if (left <= 1) return 1;
  q[qt++] = start;
  vis |= 1u << start;
  while (qh < qt) {
    int r = q[qh++];
    seen++;
    for (int s = 0; s < n; s++)
      if (adj[r][s] && !(vis >> s & 1)) vis |= 1u << s, q[qt++] = s;
  }
  return seen == left;
}

Test(secagg_graph, symmetric_and_connected_against_every_coalition) {
  for (int n = 1; n <= NMAX; n++)
    for (int c = 0; c < n; c++) {
      unsigned char adj[NMAX][NMAX];
      int deg[NMAX];
      adjacency(n, c, adj, deg);
      for (int r = 0; r < n; r++)
        for (int s = 0; s < n; s++)
          cr_assert_eq(adj[r][s], adj[s][r], "n %d c %d: %d-%d not symmetric", n, c, r, s);
      for (unsigned set = 0; set < 1u << n; set++)
        if (__builtin_popcount(set) <= c)
          cr_assert(connected_without(n, adj, set), "n %d, c %d: removing ranks 0x%x "
                    "disconnects the others", n, c, set);
    }
}

Test(secagg_graph, sparse_and_tight) {
  int sparse = 0;
  for (int n = 4; n <= NMAX; n++)
    for (int c = 0; c < n; c++) {
      unsigned char adj[NMAX][NMAX];
      int deg[NMAX];
      const int h = c / 2 + 1;
      adjacency(n, c, adj, deg);
      for (int r = 0; r < n; r++)
        cr_assert_eq(deg[r], 2 * h >= n - 1 ? n - 1 : 2 * h, "n %d c %d: degree %d", n, c,
                     deg[r]);
      if (2 * h >= n - 1) continue;
      sparse++;
      /* ranks 1..h and the h after n/2: two windows of the circulant cut it in two arcs */
      unsigned cut = 0;
      for (int i = 1; i <= h; i++) cut |= 1u << i | 1u << (n / 2 + i);
      cr_assert(!connected_without(n, adj, cut), "n %d c %d: the cut 0x%x of %d ranks should "
                "disconnect a graph of degree %d", n, c, cut, 2 * h, 2 * h);
    }
  cr_assert_gt(sparse, 20);
  int nbr[NMAX], deg;
  cr_assert_eq(dpo_secagg_graph(0, 0, 0, nbr, &deg), DPO_EINVAL);
  cr_assert_eq(dpo_secagg_graph(4, -1, 0, nbr, &deg), DPO_EINVAL);
  cr_assert_eq(dpo_secagg_graph(4, 0, 4, nbr, &deg), DPO_EINVAL);
}
