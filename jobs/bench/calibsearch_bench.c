/* PLD multiplier search benchmark (driver: jobs/bench/calib --old-lib).
 *
 * Replays dp-sgd-rdp's cold multiplier search under the pld ledger (src/optim/sco_dpsgd.c,
 * dpsgd_ledger_z_search) through the library's public calls, in this process: the RDP
 * multiplier, secant steps (dpo_pld_secant) towards the budget from it on a 16x coarser PLD
 * grid, then on a 4x coarser one, then on the ledger's grid (dpo_pld_auto_h), then the
 * ledger's confirming composition (a memo hit).  The multiplier is not snapped to the ledger's grid of noise scales (the same
 * work).  Prints one line: the plan, the multiplier, its eps, the compositions (fine, coarse)
 * (coarse: on both coarse grids, 16x and 4x beside) and the search's CPU time: this thread's
 * (CLOCK_THREAD_CPUTIME_ID), what other jobs' load inflates least; the process's clock also
 * counted the BLAS library's idle worker threads, whose yielding on a loaded machine put
 * 2-3x spikes into ~1 in 4 runs (the search itself runs on this thread alone).
 * Run against another revision's libdpopt.so (LD_LIBRARY_PATH) it times that revision's
 * composition with the same search.
 *
 *   calibsearch_bench M N T EPS DELTA     (Poisson M of N, T steps, the budget (EPS, DELTA)) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dpopt/privacy.h"

typedef struct {
  int64_t m, n, t;
  double eps, delta;
  int coarse;
} plan_t;

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int eps_at(void *arg, double z, double *e) {
  const plan_t *p = arg;
  return dpo_pld_eps("poisson", p->m, p->n, z, p->t, p->delta,
                     dpo_pld_auto_h(p->eps, p->t) * p->coarse, e);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s M N T EPS DELTA\n", argv[0]);
    return 2;
  }
  plan_t p = {atoll(argv[1]), atoll(argv[2]), atoll(argv[3]), atof(argv[4]), atof(argv[5]), 16};
  double zr, zc, e, zb = INFINITY, eb, sl = -3; /* the search's starting slope, as sco_dpsgd */
  int64_t nc[2];
  const double t0 = cpu_s();
  if (dpo_rdp_calibrate("poisson", p.m, p.n, p.t, p.eps, p.delta, &zr)) return 1;
  zc = zr;
  for (int i = 0; i < 2; i++) { /* the 16x and the 4x coarser grid, as sco_dpsgd.c */
    const int64_t n0 = dpo_pld_compositions();
    p.coarse = i ? 4 : 16;
    if (eps_at(&p, zc, &e)) return 1;
    zb = INFINITY;
    if ((e <= p.eps || zc < zr) && dpo_pld_secant(eps_at, &p, p.eps * (1 - 4e-5), i ? 2e-5 : 1e-3,
                                                  8, zr, zc, e, &sl, &zb, &eb))
      return 1;
    if (zb < INFINITY) zc = zb;
    nc[i] = dpo_pld_compositions() - n0;
  }
  const int64_t n0 = dpo_pld_compositions();
  p.coarse = 1;
  if (eps_at(&p, zc, &e) || dpo_pld_secant(eps_at, &p, p.eps, 1e-4, 6, zr, zc, e, &sl, &zb, &eb))
    return 1;
  if (!(zb < INFINITY)) zb = zr; /* nothing below the RDP multiplier fits */
  if (eps_at(&p, zb, &e)) return 1; /* the ledger's confirmation: a memo hit */
  const double t1 = cpu_s();
  printf("plan %lld/%lld T=%lld eps=%g: z %.10g eps %.10g fine %lld coarse %lld (16x %lld, 4x "
         "%lld) search_cpu_s %.4f\n", (long long)p.m, (long long)p.n, (long long)p.t, p.eps, zb, e,
         (long long)(dpo_pld_compositions() - n0), (long long)(nc[0] + nc[1]), (long long)nc[0],
         (long long)nc[1], t1 - t0);
  return 0;
}
