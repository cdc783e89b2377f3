/* Private algorithms through the run driver, on sub-communicators of 1..4 ranks:
 *  - every dp-* algorithm: same seed, same data -> the same iterates at 1, 2, 3, 4 ranks (noise
 *    is drawn on rank 0, minibatches over global ids), and the ledger total over the run equals
 *    privacy.eps (to 1e-9) and never exceeds it;
 *  - dp-hb and dp-shb ((001) (3.1) vs (3.6)-(3.7)) produce the same iterates;
 *  - a budget too small for T steps: the ledger refuses, every rank returns DPO_EBUDGET, the
 *    accepted steps are exactly those that fit, and the kept iterate is the last released one;
 *  - the noise actually added in a DP step (noised minus exact gradient at the same point and
 *    batch) has the Laplace scale of the documented formula, recomputed here: b = w S1 /(m eps0)
 *    with eps0 = eps/T (full batch), ln(1 + (n/m)(e^{eps/T} - 1)) (001 (3.5)) or n eps/(2 m T)
 *    (thesis (4.52)), checked through its empirical mean and variance 2 b^2;
 *  - dp-nag-opt's journal: T' from a brute-force minimisation of (4.6) and every b_t equal to
 *    (001, (4.5)) computed here. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/comm.h"
#include "dpopt/config.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"
#include "optim/dp_common.h"
#include "../lib/test_run_common.h"

#define N 700
#define D 8
#define LAMBDA 0.05
#define SEED 5
#define B1 3.0 /* ||u||_1 <= sqrt(8) for the test rows */

typedef struct {
  double x[D];
  int64_t iters, charges;
  double spent;
  int rc;
} result_t;

/* Run algorithm `name` with config kv on the first k ranks, ledger budget `budget`, seeded
 * noise; world rank 0 receives the result.  journal: NULL or a path. */
static int run_dp(int k, const dpo_algo_t *alg, const char *const *kv, int64_t iters,
                  double budget, const char *journal, result_t *res) {
  char it[32];
  snprintf(it, sizeof it, "%ld", (long)iters);
  const char *base[] = {"privacy.eps", "1", "data.row_l1_bound", "3", "data.row_l2_bound", "1",
                        "algo.iters", it, NULL};
  t_run_t f;
  if (t_run_open(&f, k, N, D, SEED, LAMBDA, base, kv, 1234)) return DPO_OK;
  dpo_ledger_t *L = NULL;
  double x0[D];
  for (int j = 0; j < D; j++) x0[j] = 1.0 - 0.25 * j;
  int rc = dpo_ledger_open(f.sub, budget, 0, journal, 0, &L);
  if (!rc) rc = t_run_solver(&f, alg, L, x0);
  if (!rc) {
    dpo_run_opts_t op;
    dpo_run_opts_default(&op);
    op.max_iter = iters;
    op.quiet = 1;
    rc = dpo_solver_run(f.sv, &op);
    int all = 0, mine = rc;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, f.sub);
    T_CHECK(all == rc, "ranks disagree on the status (%d vs %d)", rc, all);
    if (f.rank == 0 && res) {
      memcpy(res->x, dpo_solver_x(f.sv), sizeof res->x);
      res->iters = dpo_solver_iters(f.sv);
      res->charges = dpo_ledger_count(L);
      double dl;
      dpo_ledger_spent(L, &res->spent, &dl);
      res->rc = rc;
    }
  } else if (f.rank == 0) {
    fprintf(stderr, "set-up of %s failed: %s\n", alg->name, dpo_errmsg());
  }
  t_run_close(&f);
  dpo_ledger_close(L);
  return rc;
}

/* ---- a probe algorithm: records noised - exact gradient at a fixed point ---- */
#define PROBE_T 400
static dpo__dp_t *probe_dp;
static double probe_w;
static double probe_noise[PROBE_T * D];
static double probe_b;
static int probe_create(dpo_solver_t *s, void **st) {
  *st = NULL;
  int rc = dpo__dp_create(s, 0, &probe_dp);
  if (rc) return rc;
  return dpo_solver_param(s, "w", 1.0, &probe_w);
}
static int probe_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  double g[D], gx[D], e;
  const double *x = dpo_solver_x(s); /* never moved: every step at x0 */
  int rc = dpo_privacy_split(probe_dp->eps, probe_dp->T, &e);
  if (!rc) rc = dpo__dp_grad(probe_dp, x, t, e, probe_w, g, &probe_b);
  if (rc) return rc;
  if (probe_dp->m < probe_dp->n) {
    dpo_batch_t b = {probe_dp->ids, probe_dp->m}; /* the batch the step used */
    rc = dpo_oracle_eval(dpo_solver_oracle(s), x, &b, 0, NULL, gx);
  } else {
    rc = dpo_solver_eval(s, x, NULL, gx);
  }
  if (rc) return rc;
  for (int j = 0; j < D; j++) probe_noise[t * D + j] = g[j] - probe_w * gx[j];
  return DPO_OK;
}
static void probe_destroy(void *st) {
  dpo__dp_destroy(probe_dp);
  probe_dp = NULL;
}
static const dpo_algo_param_t probe_params[] = {{"w", "1", "gradient weight"}, {NULL, NULL, NULL}};
static const dpo_algo_t probe = {"probe", "test", 1, probe_create, probe_step, probe_destroy,
                                 NULL, NULL, probe_params, dpo__dp_params};

/* eps0: the mechanism eps; the grid of dpo_mech_laplace_scale may raise b by at most
 * d Lambda / eps0 <= d 2^-39 b / (Delta eps0)... i.e. relatively by d 2^-39 / eps0 */
static void check_noise(const char *what, const char *const *kv, double b_expect, double eps0) {
  result_t res;
  int rc = run_dp(4, &probe, kv, PROBE_T, 1.0, NULL, &res);
  int wr;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  if (wr != 0) return;
  T_CHECK(rc == DPO_OK, "%s: %s", what, dpo_errmsg());
  if (rc) return;
  double tol = 2.0 * D * ldexp(1.0, -39) / eps0 + 1e-12;
  T_CHECK(probe_b >= b_expect * (1 - 1e-12) && probe_b / b_expect - 1 < tol,
          "%s: b = %.17g, formula %.17g (tolerance %.2g)", what, probe_b, b_expect, tol);
  const int K = PROBE_T * D;
  double mean = 0, m2 = 0;
  for (int i = 0; i < K; i++) mean += probe_noise[i];
  mean /= K;
  for (int i = 0; i < K; i++) m2 += probe_noise[i] * probe_noise[i];
  m2 /= K;
  /* Laplace(b): E X^2 = 2 b^2, Var X^2 = 20 b^4; 6 standard errors */
  double b2 = b_expect * b_expect;
  T_CHECK(fabs(mean) < 6 * sqrt(2 * b2 / K), "%s: noise mean %g (b = %g)", what, mean, b_expect);
  T_CHECK(fabs(m2 - 2 * b2) < 6 * sqrt(20 * b2 * b2 / K), "%s: E noise^2 = %g, 2 b^2 = %g", what,
          m2, 2 * b2);
  printf("noise %-26s b = %.6g  mean %.3g  E[noise^2] / (2 b^2) = %.4f\n", what, b_expect, mean,
         m2 / (2 * b2));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (P > 4) P = 4;
  const int64_t T = 30;

  /* ---- every algorithm: rank independence and the budget spent ---- */
  static const struct {
    const char *name;
    const char *kv[7];
  } runs[] = {
      {"dp-gd", {NULL}},
      {"dp-gd", {"algo.m", "100", "algo.schedule", "const", NULL}},
      {"dp-hb", {"algo.m", "100", NULL}},
      {"dp-shb", {NULL}},
      {"dp-gdws", {NULL}},
      {"dp-sgdws", {"algo.m", "100", NULL}},
      {"dp-sgdws", {"algo.m", "50", "algo.accounting", "thesis-2gamma", NULL}},
      {"dp-onlinegdws", {"algo.m", "20", NULL}},
      {"dp-nag", {NULL}},
      {"dp-nag", {"algo.m", "100", "algo.c", "0.1", NULL}},
      {"dp-nag-opt", {NULL}},
      {"dp-nag-opt", {"algo.m", "100", "algo.choose_T", "0", NULL}},
      {"dp-masg", {"algo.n1", "5", NULL}},
      {"dp-masg-opt", {"algo.n1", "5", "algo.choose_T", "0", NULL}},
      {"dp-masg-opt", {"algo.n1", "5", "algo.m", "200", NULL}},
      {"dp-mag", {"algo.n1", "5", NULL}},
      {"dp-smag", {"algo.n1", "5", "algo.m", "100", NULL}},
  };
  const int NR = (int)(sizeof runs / sizeof runs[0]);
  for (int i = 0; i < NR; i++) {
    const dpo_algo_t *alg = dpo_algo_find(runs[i].name);
    T_CHECK(alg && alg->is_private, "%s is not a registered private algorithm", runs[i].name);
    if (!alg) continue;
    result_t ref = {0}, res = {0};
    for (int k = 1; k <= P; k++) {
      int rc = run_dp(k, alg, runs[i].kv, T, 1.0, NULL, k == 1 ? &ref : &res);
      if (wr != 0) continue;
      T_CHECK(rc == DPO_OK, "%s (%d ranks): %s", runs[i].name, k, dpo_errmsg());
      result_t *q = k == 1 ? &ref : &res;
      int finite = 1;
      for (int j = 0; j < D; j++) finite &= isfinite(q->x[j]);
      T_CHECK(finite, "%s: non-finite iterate", runs[i].name);
      T_CHECK(q->spent <= 1.0 && q->spent > 1.0 - 1e-9,
              "%s (%d ranks): spent %.17g of 1 in %ld charges", runs[i].name, k, q->spent,
              (long)q->charges);
      if (k > 1) {
        double rd = dpo_t_reldiff(res.x, ref.x, D);
        T_CHECK(rd <= 1e-9 && res.iters == ref.iters && res.charges == ref.charges,
                "%s: %d ranks differ from 1 rank by %g (iters %ld vs %ld)", runs[i].name, k, rd,
                (long)res.iters, (long)ref.iters);
      }
    }
    if (wr == 0)
      printf("%-14s %-34s iters %3ld charges %3ld spent %.15f x0 %+.6f\n", runs[i].name,
             runs[i].kv[0] ? runs[i].kv[0] : "", (long)ref.iters, (long)ref.charges, ref.spent,
             ref.x[0]);
  }

  /* ---- (3.1) and (3.6)-(3.7) are the same method ---- */
  {
    result_t a = {0}, b = {0};
    const char *kv[] = {"algo.m", "50", NULL};
    run_dp(P, dpo_algo_find("dp-hb"), kv, T, 1.0, NULL, &a);
    run_dp(P, dpo_algo_find("dp-shb"), kv, T, 1.0, NULL, &b);
    if (wr == 0) {
      double rd = dpo_t_reldiff(a.x, b.x, D);
      T_CHECK(rd < 1e-10, "dp-hb and dp-shb differ by %g", rd);
      double moved = 0;
      for (int j = 0; j < D; j++) moved += fabs(a.x[j] - (1.0 - 0.25 * j));
      T_CHECK(moved > 1e-3, "the iterate did not move");
    }
  }

  /* ---- budget too small for T steps: refusal, every rank stops, last released x kept ---- */
  for (int k = 1; k <= P; k++) {
    result_t cut = {0};
    int rc = run_dp(k, dpo_algo_find("dp-nag"), NULL, T, 0.5, NULL, &cut);
    if (wr == 0) {
      T_CHECK(rc == DPO_EBUDGET, "%d ranks: status %d, want DPO_EBUDGET", k, rc);
      /* 15 * (eps/30) <= 0.5 exactly: the 16th charge is the first refused */
      T_CHECK(cut.iters == 15 && cut.charges == 15, "refused run: %ld iters, %ld charges",
              (long)cut.iters, (long)cut.charges);
      T_CHECK(cut.spent <= 0.5, "refused run spent %.17g > 0.5", cut.spent);
    }
  }
  {
    /* iterate kept after the refusal == iterate after 15 accepted steps (same seed) */
    result_t cut = {0}, ref15 = {0};
    run_dp(P, dpo_algo_find("dp-nag"), NULL, T, 0.5, NULL, &cut);
    /* budget 1 and algo.iters = 30, but the driver stops at 15 */
    const char *kv[] = {"algo.iters", "30", NULL};
    run_dp(P, dpo_algo_find("dp-nag"), kv, 15, 1.0, NULL, &ref15);
    if (wr == 0)
      T_CHECK(dpo_t_reldiff(cut.x, ref15.x, D) == 0.0, "kept iterate differs from x_15 by %g",
              dpo_t_reldiff(cut.x, ref15.x, D));
  }

  /* ---- the noise actually added ---- */
  {
    const double S1 = 2 * B1, eps = 1;
    const char *kv1[] = {"algo.w", "0.3", NULL};
    check_noise("full batch, w = 0.3", kv1, 0.3 * S1 / (N * (eps / PROBE_T)), eps / PROBE_T);
    const char *kv2[] = {"algo.m", "70", NULL};
    double e0 = log(1.0 + (double)N / 70 * expm1(eps / PROBE_T)); /* (3.5) */
    check_noise("m = 70, subsampled (3.5)", kv2, S1 / (70 * e0), e0);
    const char *kv3[] = {"algo.m", "70", "algo.accounting", "thesis-2gamma", NULL};
    double e4 = N * eps / (2.0 * 70 * PROBE_T); /* (4.52) */
    check_noise("m = 70, thesis (4.52)", kv3, S1 / (70 * e4), e4);
  }

  /* ---- dp-nag-opt: T' of (4.6) and b_t of (4.5) from the journal ---- */
  {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dpo_test_dp_%ld.jsonl", (long)getpid());
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (wr == 0) unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
    const int64_t Tmax = 200;
    const char *kv[] = {"algo.E0", "10", NULL};
    result_t res = {0};
    int rc = run_dp(P, dpo_algo_find("dp-nag-opt"), kv, Tmax, 1.0, path, &res);
    if (wr == 0) {
      T_CHECK(rc == DPO_OK, "dp-nag-opt: %s", dpo_errmsg());
      /* independent: L = B2^2/4 + 2 lambda, mu = 2 lambda, alpha = 1/L, S1 = 2 B1 */
      const double L = 0.25 + 2 * LAMBDA, mu = 2 * LAMBDA, al = 1 / L, S1 = 2 * B1, q = 1 - sqrt(mu * al);
      int64_t best = 0;
      double bv = INFINITY;
      for (int64_t Tp = 1; Tp <= Tmax; Tp++) {
        double s = 0;
        for (int64_t j = 1; j <= Tp; j++) s += cbrt(pow(q, (double)(Tp - j)) * al * (1 + al * L));
        double v = pow(q, (double)Tp) * 10 + D * S1 * S1 / ((double)N * N) * s * s * s;
        if (v < bv) bv = v, best = Tp;
      }
      T_CHECK(res.iters == best && res.charges == best, "T' = %ld (charges %ld), (4.6) gives %ld",
              (long)res.iters, (long)res.charges, (long)best);
      double s13 = 0;
      for (int64_t j = 1; j <= best; j++) s13 += cbrt(pow(q, (double)(best - j)) * al * (1 + al * L));
      FILE *f = fopen(path, "r");
      char line[4096];
      int64_t t = 0;
      double maxrel = 0;
      while (f && fgets(line, sizeof line, f)) {
        char *p = strstr(line, "\"noise_scale\":");
        if (!p) continue;
        double b = strtod(p + 14, NULL);
        t++; /* paper iteration t */
        double b45 = s13 * S1 / (cbrt(pow(q, (double)(best - t)) * al * (1 + al * L)) * N * 1.0);
        double rel = fabs(b / b45 - 1);
        if (rel > maxrel) maxrel = rel;
      }
      if (f) fclose(f);
      T_CHECK(t == best, "journal has %ld noised steps, want %ld", (long)t, (long)best);
      T_CHECK(maxrel < 1e-8, "b_t differs from (4.5) by %g relative", maxrel);
      printf("dp-nag-opt: T' = %ld of %ld (4.6), max |b_t/(4.5) - 1| = %.2e\n", (long)best,
             (long)Tmax, maxrel);
      unlink(path);
    }
  }
  return dpo_t_finish("test_dp_algos");
}
