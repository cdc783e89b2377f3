/* PLD multiplier search benchmark (driver: jobs/bench/calib --old-lib).
 *
 * Replays dp-sgd-rdp's cold multiplier search under the pld ledger (src/optim/sco_dpsgd.c,
 * dpsgd_ledger_z_search) through the library's public calls, in this process: the RDP
 * multiplier, secant steps (dpo_pld_secant) on a 4x coarser PLD grid towards the budget from
 * it, then on the ledger's grid (dpo_pld_auto_h), then the ledger's confirming composition
 * (a memo hit).  The multiplier is not snapped to the ledger's grid of noise scales (the same
 * work).  Prints one line: the plan, the multiplier, its eps, the compositions (fine, coarse)
 * and the search's CPU time (CLOCK_PROCESS_CPUTIME_ID: what other jobs' load inflates least).
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
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int eps_at(void *arg, double z, double *e) {
  const plan_t *p = arg;
  return dpo_pld_eps("poisson", p->m, p->n, z, p->t, p->delta,
                     dpo_pld_auto_h(p->eps, p->t) * (p->coarse ? 4 : 1), e);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s M N T EPS DELTA\n", argv[0]);
    return 2;
  }
  plan_t p = {atoll(argv[1]), atoll(argv[2]), atoll(argv[3]), atof(argv[4]), atof(argv[5]), 1};
  double zr, zc, e, zb = INFINITY, eb, sl = -3; /* the search's starting slope, as sco_dpsgd */
  const double t0 = cpu_s();
  if (dpo_rdp_calibrate("poisson", p.m, p.n, p.t, p.eps, p.delta, &zr) || eps_at(&p, zr, &e))
    return 1;
  const int64_t n0 = dpo_pld_compositions();
  zc = zr;
  if (e <= p.eps) {
    if (dpo_pld_secant(eps_at, &p, p.eps * (1 - 4e-5), 2e-5, 8, zr, zr, e, &sl, &zb, &eb))
      return 1;
    if (zb < INFINITY) zc = zb;
  }
  const int64_t nc = dpo_pld_compositions() - n0 + 1; /* + the RDP multiplier's */
  p.coarse = 0;
  if (eps_at(&p, zc, &e) || dpo_pld_secant(eps_at, &p, p.eps, 1e-4, 6, zr, zc, e, &sl, &zb, &eb))
    return 1;
  if (!(zb < INFINITY)) zb = zr; /* nothing below the RDP multiplier fits */
  if (eps_at(&p, zb, &e)) return 1; /* the ledger's confirmation: a memo hit */
  const double t1 = cpu_s();
  printf("plan %lld/%lld T=%lld eps=%g: z %.10g eps %.10g fine %lld coarse %lld "
         "search_cpu_s %.4f\n", (long long)p.m, (long long)p.n, (long long)p.t, p.eps, zb, e,
         (long long)(dpo_pld_compositions() - n0 - nc + 1), (long long)nc, t1 - t0);
  return 0;
}
