/* Private SCO algorithms of 003 (pnsgd, phased-sgd) through the run driver with the RDP ledger:
 *  - same seed -> the same final iterate at 1..4 ranks (the batch order is a public shuffle of
 *    global ids, so the rank layout only changes the order of the reduce: 1e-10 relative);
 *  - the ledger's spent eps equals the eps of the curve alpha rho^2/2 with rho recomputed here
 *    from the Snowball batch sizes (003 Thm 3.5 / 3.6) and the Thm 3.1 formula;
 *  - n consumed: the largest T with sum B_t <= N, and Thm 3.5's n <= T + 4 sqrt(dT)/rho;
 *  - phased-sgd's phases cost one Gaussian with z = sigma_i / (2 L eta_i) = 2/rho (Lemma 4.5);
 *  - the output lies in K (ball of diameter algo.D);
 *  - pnsgd's steps on rows fetched to rank 0 (algo.fetch_rows, windows of 7 rows and the
 *    default) give the iterate of one oracle evaluation per step (fetch_rows = 0). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dpopt/comm.h"
#include "dpopt/config.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"
#include "../lib/test_run_common.h"

#define N 500
#define D 6
#define LAMBDA 0.01
#define SEED 5
#define RHO 0.5
#define DIAM 3.0

typedef struct {
  double x[D];
  double spent;
  int64_t iters;
} result_t;

static int run(int k, const char *algo, const char *const *kv, result_t *res) {
  static const char *const base[] = {"data.row_l2_bound", "1", "algo.rho", "0.5", "algo.D", "3",
                                     NULL};
  t_run_t f;
  if (t_run_open(&f, k, N, D, SEED, LAMBDA, base, kv, 77)) return DPO_OK;
  dpo_ledger_t *L = NULL;
  double x0[D];
  for (int j = 0; j < D; j++) x0[j] = 0.3 - 0.1 * j;
  int rc = dpo_ledger_open_rdp(f.sub, 4.0, 1e-5, NULL, 0, &L);
  if (!rc) rc = t_run_solver(&f, dpo_algo_find(algo), L, x0);
  if (!rc) {
    dpo_run_opts_t op;
    dpo_run_opts_default(&op);
    op.max_iter = 100000;
    op.quiet = 1;
    rc = dpo_solver_run(f.sv, &op);
    if (f.rank == 0 && !rc) {
      memcpy(res->x, dpo_solver_x(f.sv), sizeof res->x);
      res->iters = dpo_solver_iters(f.sv);
      dpo_ledger_spent(L, &res->spent, NULL);
    }
  }
  t_run_close(&f);
  dpo_ledger_close(L);
  return rc;
}

/* Snowball n(T) and the Thm 3.1 rho, written out independently */
static int64_t snowball(int jnn, int64_t T, int64_t *B) {
  int64_t n = 0;
  for (int64_t t = 1; t <= T; t++) {
    double rem = (double)(T - t + 1);
    B[t - 1] = (int64_t)ceil(jnn ? 4 * sqrt(3.0 * D / rem) / RHO : 2 * sqrt(D / rem) / RHO);
    n += B[t - 1];
  }
  return n;
}

static double thm31_rho(int64_t T, const int64_t *B, const double *eta, double sigma) {
  double best = 0;
  for (int64_t t = 0; t < T; t++) {
    double suf = 0;
    for (int64_t u = t; u < T; u++) suf += eta[u] * eta[u] * sigma * sigma;
    best = fmax(best, eta[t] / (B[t] * sqrt(suf)));
  }
  return 2 * 1.0 * best; /* L = row bound = 1 */
}

static double rho_eps(double rho) {
  dpo_rdp_curve_t c;
  double e;
  dpo_rdp_curve_init(&c);
  dpo_rdp_curve_add_rho(&c, rho);
  dpo_rdp_eps(&c, 1e-5, &e, NULL);
  return e;
}

static void check_pnsgd(int jnn) {
  int wr, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const char *kv[] = {"algo.schedule", jnn ? "jnn" : "const", NULL, NULL, NULL};
  result_t res[5], alt[3];
  memset(res, 0, sizeof res);
  memset(alt, 0, sizeof alt);
  for (int k = 1; k <= P; k++) {
    int rc = run(k, "pnsgd", kv, &res[k]);
    T_CHECK(rc == DPO_OK, "pnsgd %s at %d ranks: %s", kv[1], k, dpo_errmsg());
  }
  /* the same run at P ranks with one oracle call per step, and with windows of 7 rows */
  static const char *const fr[] = {"0", "7"};
  for (int v = 0; v < 2; v++) {
    kv[2] = "algo.fetch_rows";
    kv[3] = fr[v];
    int rc = run(P, "pnsgd", kv, &alt[v]);
    T_CHECK(rc == DPO_OK, "pnsgd %s fetch_rows=%s: %s", kv[1], fr[v], dpo_errmsg());
  }
  kv[2] = NULL;
  if (wr != 0) return;
  for (int v = 0; v < 2; v++)
    T_CHECK(dpo_t_reldiff(alt[v].x, res[P].x, D) <= 1e-12 && alt[v].iters == res[P].iters,
            "pnsgd %s at %d ranks: fetch_rows=%s differs from the default by %g", kv[1], P,
            fr[v], dpo_t_reldiff(alt[v].x, res[P].x, D));
  for (int k = 2; k <= P; k++)
    T_CHECK(dpo_t_reldiff(res[k].x, res[1].x, D) <= 1e-10, "pnsgd %s: x at %d ranks differs "
            "from 1 rank by %g", kv[1], k, dpo_t_reldiff(res[k].x, res[1].x, D));
  /* the schedule the algorithm must have used: the largest T that fits N */
  static int64_t B[N];
  int64_t T = 0;
  while (T + 1 <= N && snowball(jnn, T + 1, B) <= N) T++;
  int64_t n = snowball(jnn, T, B);
  T_CHECK(res[1].iters == T, "pnsgd %s: %lld steps, expected T=%lld", kv[1],
          (long long)res[1].iters, (long long)T);
  if (!jnn) T_CHECK(n <= T + 4 * sqrt((double)D * T) / RHO, "Thm 3.5 bound on n fails");
  static double eta[N];
  double Lip = 1.0;
  if (!jnn) {
    for (int64_t t = 0; t < T; t++) eta[t] = DIAM / (Lip * sqrt(2.0 * T));
  } else { /* 003 Def. 3.3 with c = D / (sqrt 2 L) */
    int ell = (int)ceil(log2((double)T));
    for (int i = 0; i <= ell; i++) {
      int64_t a = T - (int64_t)ceil(T * pow(2, -i)),
              b = i < ell ? T - (int64_t)ceil(T * pow(2, -(i + 1))) : T;
      for (int64_t t = a + 1; t <= b; t++) eta[t - 1] = DIAM / (sqrt(2.0) * Lip) * pow(2, -i) / sqrt((double)T);
    }
  }
  double rho = thm31_rho(T, B, eta, Lip / sqrt((double)D));
  T_CHECK(rho <= RHO * (1 + 1e-12), "pnsgd %s: schedule's rho %g exceeds the target %g", kv[1],
          rho, RHO);
  double e = rho_eps(rho);
  T_CHECK(fabs(res[1].spent - e) <= 1e-6 * e, "pnsgd %s: spent %.12g, Thm 3.1 curve gives %.12g",
          kv[1], res[1].spent, e);
  double nrm = 0;
  for (int j = 0; j < D; j++) nrm += res[1].x[j] * res[1].x[j];
  T_CHECK(sqrt(nrm) <= DIAM / 2 * (1 + 1e-12), "pnsgd output outside K");
}

static void check_phased(void) {
  int wr, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  result_t res[5];
  memset(res, 0, sizeof res);
  for (int k = 1; k <= P; k++) {
    int rc = run(k, "phased-sgd", NULL, &res[k]);
    T_CHECK(rc == DPO_OK, "phased-sgd at %d ranks: %s", k, dpo_errmsg());
  }
  if (wr != 0) return;
  for (int k = 2; k <= P; k++)
    T_CHECK(dpo_t_reldiff(res[k].x, res[1].x, D) <= 1e-10, "phased-sgd: x at %d ranks differs "
            "by %g", k, dpo_t_reldiff(res[k].x, res[1].x, D));
  /* phases i <= k = ceil(log2 N) with n_i = floor(N / 2^i) >= 1 */
  int64_t ph = 0;
  for (int i = 1; i <= 10; i++) ph += (N >> i) >= 1;
  T_CHECK(res[1].iters == ph, "phased-sgd ran %lld phases, expected %lld", (long long)res[1].iters,
          (long long)ph);
  dpo_rdp_curve_t c;
  double e;
  dpo_rdp_curve_init(&c);
  dpo_rdp_curve_add(&c, "none", 0, 0, 2 / RHO, 1); /* sigma_i / (2 L eta_i) = 2 / rho */
  dpo_rdp_eps(&c, 1e-5, &e, NULL);
  T_CHECK(res[1].spent >= e && res[1].spent <= e * (1 + 1e-6),
          "phased-sgd: spent %.12g, one phase costs %.12g", res[1].spent, e);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  check_pnsgd(0);
  check_pnsgd(1);
  check_phased();
  return dpo_t_finish("test_sco");
}
