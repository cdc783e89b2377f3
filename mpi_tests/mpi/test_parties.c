/* Multi-party runs (issue 7): per-party ledger accounts, noise shares, local noise in the
 * oracle's worker path.  Run under mpirun -np 4.
 *  1. Ledger (rank 0, serial): releases charged to subsets of 3 parties; the party totals, the
 *     global total and the journal (re-read here with json-c and summed independently) agree;
 *     a party over its budget is refused (nothing recorded, *refused names it) while charges
 *     that do not touch it go on; the global account refuses with *refused = -1; a resumed
 *     ledger restores the party accounts and refuses a larger party budget.
 *  2. Shares (rank 0, serial, fixed seed): the sum of P Laplace shares (Gamma(1/P) differences)
 *     has variance 2 b^2 and kurtosis 6; the sum of P Gaussian shares has variance s^2 and
 *     kurtosis 3 (so shares with the right variance but the wrong law fail); Gamma moments.
 *  3. Oracle (4 ranks): what rank 0 receives for a locally noised request differs from the
 *     exact sum in EVERY coordinate, by noise of variance (ranks with rows) x 2 b^2; shares give
 *     the central variance 2 b^2 (Laplace) and s^2 (Gaussian); a noised request returns no
 *     loss. */
#include <json-c/json.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpopt/comm.h"
#include "dpopt/model.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "mpitest.h"
#include "test_optim_common.h"

static dpo_charge_t pure(double eps, int64_t step) {
  dpo_charge_t c;
  memset(&c, 0, sizeof c);
  c.mechanism = "laplace";
  c.eps = eps;
  c.sampling = "none";
  c.accounting = "pure";
  c.group = 1;
  c.step = step;
  c.dim = 1;
  c.m = c.n = 1;
  return c;
}

/* sums of charge_eps per party and overall, read back from the journal */
static int journal_sums(const char *path, int P, double *party, double *global, int *events) {
  FILE *f = fopen(path, "r");
  char line[8192];
  if (!f) return -1;
  for (int k = 0; k < P; k++) party[k] = 0;
  *global = 0;
  *events = 0;
  while (fgets(line, sizeof line, f)) {
    json_object *o = json_tokener_parse(line), *v, *pa;
    if (!o) { fclose(f); return -1; }
    if (json_object_object_get_ex(o, "event", &v)) (*events)++;
    if (json_object_object_get_ex(o, "charge_eps", &v)) {
      double e = json_object_get_double(v);
      *global += e;
      if (json_object_object_get_ex(o, "parties", &pa))
        for (size_t i = 0; i < json_object_array_length(pa); i++)
          party[json_object_get_int(json_object_array_get_idx(pa, i))] += e;
    }
    json_object_put(o);
  }
  fclose(f);
  return 0;
}

static void test_ledger(void) {
  char dir[] = "/tmp/dpo_parties_XXXXXX", path[256];
  T_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snprintf(path, sizeof path, "%s/ledger.jsonl", dir);
  dpo_ledger_t *L = NULL;
  const double be[3] = {1.0, 0.3, 1.0}, bd[3] = {0, 0, 0};
  T_CHECK(dpo_ledger_open(MPI_COMM_NULL, 0.75, 0.0, path, 0, &L) == DPO_OK, "open");
  T_CHECK(dpo_ledger_set_parties(L, 3, be, bd) == DPO_OK, "set_parties: %s", dpo_errmsg());
  /* plain charges are refused once party accounts exist (an algorithm without party support) */
  dpo_charge_t c0 = pure(0.01, 0);
  T_CHECK(dpo_ledger_charge(L, &c0, NULL) == DPO_EUNSUP, "plain charge with party accounts");
  const int all[3] = {0, 1, 2}, p02[2] = {0, 2}, p1[1] = {1};
  double ch;
  int ref;
  dpo_charge_t c = pure(0.125, 1);
  T_CHECK(dpo_ledger_charge_parties(L, &c, 3, all, &ch, &ref) == DPO_OK && ch == 0.125, "c1");
  c = pure(0.25, 2);
  T_CHECK(dpo_ledger_charge_parties(L, &c, 2, p02, &ch, &ref) == DPO_OK, "c2");
  c = pure(0.125, 3);
  T_CHECK(dpo_ledger_charge_parties(L, &c, 1, p1, &ch, &ref) == DPO_OK, "c3");
  c = pure(0.125, 4); /* party 1 at 0.25 + 0.125 > 0.3: refused */
  T_CHECK(dpo_ledger_charge_parties(L, &c, 1, p1, &ch, &ref) == DPO_EBUDGET && ref == 1,
          "party 1 over budget refused (ref %d)", ref);
  c = pure(0.0625, 5);
  T_CHECK(dpo_ledger_charge_parties(L, &c, 3, all, &ch, &ref) == DPO_EBUDGET && ref == 1,
          "a release touching party 1 refused");
  c = pure(0.0625, 6); /* the others go on */
  T_CHECK(dpo_ledger_charge_parties(L, &c, 2, p02, &ch, &ref) == DPO_OK, "others continue");
  T_CHECK(dpo_ledger_party_event(L, "party_dropped", 1, 6) == DPO_OK, "event");
  c = pure(0.1875, 7); /* global 0.5625 + 0.1875 = 0.75 fits exactly */
  T_CHECK(dpo_ledger_charge_parties(L, &c, 2, p02, &ch, &ref) == DPO_OK, "to the global budget");
  c = pure(0.01, 8);
  T_CHECK(dpo_ledger_charge_parties(L, &c, 1, (const int[]){0}, &ch, &ref) == DPO_EBUDGET &&
              ref == -1, "global account refuses (ref %d)", ref);
  double want[3] = {0.625, 0.25, 0.625}, s, d, js[3], jg;
  int ev;
  for (int k = 0; k < 3; k++) {
    dpo_ledger_party_spent(L, k, &s, &d);
    T_CHECK(s == want[k], "party %d spent %.17g, want %.17g", k, s, want[k]);
  }
  dpo_ledger_spent(L, &s, &d);
  T_CHECK(s == 0.75, "global spent %.17g", s);
  T_CHECK(dpo_ledger_count(L) == 5, "5 charges recorded, got %lld",
          (long long)dpo_ledger_count(L));
  T_CHECK(journal_sums(path, 3, js, &jg, &ev) == 0, "journal parse");
  for (int k = 0; k < 3; k++) {
    dpo_ledger_party_spent(L, k, &s, &d);
    T_CHECK(fabs(js[k] - s) < 1e-12, "journal party %d sum %.17g vs ledger %.17g", k, js[k], s);
  }
  T_CHECK(fabs(jg - 0.75) < 1e-12 && ev == 1, "journal global %.17g, events %d", jg, ev);
  /* no party spends more than the global account, and every charge touched >= 1 party */
  T_CHECK(js[0] <= jg && js[1] <= jg && js[2] <= jg, "party <= global");
  dpo_ledger_close(L);
  /* resume: party accounts restored from the journal */
  T_CHECK(dpo_ledger_open(MPI_COMM_NULL, 0.75, 0.0, path, 1, &L) == DPO_OK, "resume: %s",
          dpo_errmsg());
  T_CHECK(L && dpo_ledger_nparties(L) == 3, "resumed parties");
  if (L) {
    dpo_ledger_party_spent(L, 1, &s, &d);
    T_CHECK(s == 0.25, "resumed party 1 spent %.17g", s);
    const double bigger[3] = {1.0, 0.5, 1.0};
    T_CHECK(dpo_ledger_set_parties(L, 3, bigger, bd) == DPO_EBUDGET, "larger party budget");
    T_CHECK(dpo_ledger_set_parties(L, 3, be, bd) == DPO_OK, "same budgets");
    dpo_ledger_close(L);
  }
  T_CHECK(dpo_ledger_print(path, fopen("/dev/null", "w")) == DPO_OK, "print: %s", dpo_errmsg());
  unlink(path);
  rmdir(dir);
}

static void moments(const double *x, long n, double *var, double *kurt) {
  long double m = 0, m2 = 0, m4 = 0;
  for (long i = 0; i < n; i++) m += x[i];
  m /= n;
  for (long i = 0; i < n; i++) {
    long double e = x[i] - m, e2 = e * e;
    m2 += e2;
    m4 += e2 * e2;
  }
  m2 /= n;
  m4 /= n;
  *var = (double)m2;
  *kurt = (double)(m4 / (m2 * m2));
}

static void test_shares(void) {
  dpo_rng_t *rng = NULL;
  T_CHECK(dpo_rng_create(1, 20240607, 9, &rng) == DPO_OK, "rng");
  const long N = 200000;
  const int P = 4;
  double *x = calloc((size_t)N, sizeof *x), var, kurt;
  /* Gamma(0.25, 2): mean 0.5, variance 1 (the boost branch) */
  long double gm = 0, gv = 0;
  for (long i = 0; i < N; i++) {
    double g;
    dpo_mech_gamma_sample(rng, 0.25, 2.0, &g);
    x[i] = g;
    gm += g;
  }
  gm /= N;
  for (long i = 0; i < N; i++) gv += (x[i] - gm) * (x[i] - gm);
  gv /= N;
  T_CHECK(fabs((double)gm - 0.5) < 0.02 && fabs((double)gv - 1.0) < 0.05,
          "Gamma(0.25, 2): mean %g (0.5), var %g (1)", (double)gm, (double)gv);
  /* Laplace shares: sum of P shares ~ Laplace(b): var 2 b^2, kurtosis 6 */
  const double b = 1.5;
  memset(x, 0, (size_t)N * sizeof *x);
  for (int p = 0; p < P; p++) dpo_mech_laplace_share(rng, b, P, x, N);
  moments(x, N, &var, &kurt);
  T_CHECK(fabs(var / (2 * b * b) - 1) < 0.03, "Laplace shares: var %g, want %g", var, 2 * b * b);
  T_CHECK(fabs(kurt - 6.0) < 0.6, "Laplace shares: kurtosis %g, want 6", kurt);
  printf("laplace shares (P=%d, b=%g): var %.4f (want %.4f), kurtosis %.3f (want 6)\n", P, b, var,
         2 * b * b, kurt);
  /* one share alone has variance 2 b^2 / P: it is not central-level noise */
  memset(x, 0, (size_t)N * sizeof *x);
  dpo_mech_laplace_share(rng, b, P, x, N);
  moments(x, N, &var, &kurt);
  T_CHECK(fabs(var / (2 * b * b / P) - 1) < 0.05, "one Laplace share: var %g, want %g", var,
          2 * b * b / P);
  /* Gaussian shares: var s^2, kurtosis 3 */
  const double sg = 2.0;
  memset(x, 0, (size_t)N * sizeof *x);
  for (int p = 0; p < P; p++) dpo_mech_gaussian_share(rng, sg, P, x, N);
  moments(x, N, &var, &kurt);
  T_CHECK(fabs(var / (sg * sg) - 1) < 0.03, "Gaussian shares: var %g, want %g", var, sg * sg);
  T_CHECK(fabs(kurt - 3.0) < 0.15, "Gaussian shares: kurtosis %g, want 3", kurt);
  printf("gaussian shares (P=%d, s=%g): var %.4f (want %.4f), kurtosis %.3f (want 3)\n", P, sg,
         var, sg * sg, kurt);
  free(x);
  dpo_rng_destroy(rng);
}

/* rank 0: K noised evaluations, residuals against the exact sum */
static void noised_residuals(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch,
                             const dpo_oracle_noise_t *nz, const double *exact, int32_t d, int K,
                             double *res, int *exact_hits) {
  double *g = malloc((size_t)d * sizeof *g), loss = 0;
  int64_t used;
  for (int k = 0; k < K; k++) {
    int rc = dpo_oracle_eval_sums_noised(o, x, batch, nz, 1, &loss, g, &used);
    T_CHECK(rc == DPO_OK, "noised eval: %s", dpo_errmsg());
    if (k == 0) T_CHECK(isnan(loss), "a noised request returns no loss (%g)", loss);
    for (int32_t j = 0; j < d; j++) {
      res[(long)k * d + j] = g[j] - exact[j];
      if (g[j] == exact[j]) (*exact_hits)++;
    }
  }
  free(g);
}

static void test_oracle(void) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int32_t d = 16;
  const int K = 1500;
  dpo_shard_t *sh = t_shard(MPI_COMM_WORLD, 400, d, 0, 11);
  dpo_model_t *model = NULL;
  dpo_oracle_t *o = NULL;
  dpo_rng_t *rng = NULL;
  dpo_model_create("logreg", 0.0, &model);
  T_CHECK(dpo_oracle_create(MPI_COMM_WORLD, model, sh, NULL, &o) == DPO_OK, "oracle");
  dpo_rng_create(1, 77, 0x70000000ULL + (uint64_t)rank, &rng); /* each rank its own stream */
  dpo_oracle_set_noise_rng(o, rng);
  double x[16];
  for (int j = 0; j < d; j++) x[j] = 0.1 * (j % 5) - 0.2;
  if (rank == 0) {
    double exact[16], *res = malloc((size_t)K * d * sizeof *res), var, kurt;
    int64_t used;
    int hits = 0;
    T_CHECK(dpo_oracle_eval_sums(o, x, NULL, 0, NULL, exact, &used) == DPO_OK && used == 400,
            "exact");
    const double b = 0.5;
    dpo_oracle_noise_t loc = {DPO_ONOISE_LOCAL_LAPLACE, b, 1};
    noised_residuals(o, x, NULL, &loc, exact, d, K, res, &hits);
    moments(res, (long)K * d, &var, &kurt);
    T_CHECK(hits == 0, "local: rank 0 received %d un-noised coordinates", hits);
    T_CHECK(fabs(var / (size * 2 * b * b) - 1) < 0.06, "local, all ranks: var %g, want %g", var,
            size * 2 * b * b);
    printf("local (%d ranks with rows, b=%g): residual var %.4f (want %.4f)\n", size, b, var,
           size * 2 * b * b);
    /* a batch inside rank 1's rows only: only that rank noises (the others hold no row of it) */
    int64_t r0, n1, ids[20];
    dpo_oracle_rank_rows(o, size > 1 ? 1 : 0, &r0, &n1);
    for (int i = 0; i < 20; i++) ids[i] = r0 + i;
    dpo_batch_t bt = {ids, 20};
    T_CHECK(dpo_oracle_eval_sums(o, x, &bt, 0, NULL, exact, &used) == DPO_OK && used == 20, "exact batch");
    hits = 0;
    noised_residuals(o, x, &bt, &loc, exact, d, K, res, &hits);
    moments(res, (long)K * d, &var, &kurt);
    T_CHECK(hits == 0 && fabs(var / (2 * b * b) - 1) < 0.06,
            "local, one rank with rows: var %g, want %g (%d exact)", var, 2 * b * b, hits);
    T_CHECK(fabs(kurt - 6) < 1.2, "local, one rank: kurtosis %g, want 6 (Laplace)", kurt);
    /* shares: every rank adds a share; the sum is central Laplace(b) */
    T_CHECK(dpo_oracle_eval_sums(o, x, NULL, 0, NULL, exact, &used) == DPO_OK, "exact");
    dpo_oracle_noise_t shl = {DPO_ONOISE_SHARE_LAPLACE, b, size};
    hits = 0;
    noised_residuals(o, x, NULL, &shl, exact, d, K, res, &hits);
    moments(res, (long)K * d, &var, &kurt);
    T_CHECK(fabs(var / (2 * b * b) - 1) < 0.06, "shares Laplace: var %g, want %g", var,
            2 * b * b);
    T_CHECK(fabs(kurt - 6) < 1.2, "shares Laplace: kurtosis %g, want 6", kurt);
    printf("shares laplace (%d ranks, b=%g): var %.4f (want %.4f), kurtosis %.2f\n", size, b, var,
           2 * b * b, kurt);
    dpo_oracle_noise_t shg = {DPO_ONOISE_SHARE_GAUSSIAN, 1.0, size};
    noised_residuals(o, x, NULL, &shg, exact, d, K, res, &hits);
    moments(res, (long)K * d, &var, &kurt);
    T_CHECK(fabs(var - 1) < 0.06 && fabs(kurt - 3) < 0.4,
            "shares Gaussian: var %g (1), kurtosis %g (3)", var, kurt);
    printf("shares gaussian (%d ranks, s=1): var %.4f, kurtosis %.2f\n", size, var, kurt);
    dpo_oracle_noise_t bad = {DPO_ONOISE_LOCAL_LAPLACE, -1.0, 1};
    T_CHECK(dpo_oracle_eval_sums_noised(o, x, NULL, &bad, 0, NULL, exact, &used) == DPO_EINVAL,
            "bad noise spec refused");
    free(res);
    dpo_oracle_finish(o, DPO_OK);
  } else {
    T_CHECK(dpo_oracle_serve(o) == DPO_OK, "serve");
  }
  /* a rank without a noise stream fails the noised request on every rank, nobody hangs */
  dpo_oracle_set_noise_rng(o, rank == size - 1 ? NULL : rng);
  if (rank == 0) {
    double g[16];
    dpo_oracle_noise_t shl = {DPO_ONOISE_SHARE_LAPLACE, 1.0, size};
    int rc = dpo_oracle_eval_sums_noised(o, x, NULL, &shl, 0, NULL, g, NULL);
    T_CHECK(rc != DPO_OK, "a rank without a noise stream must fail the request");
    dpo_oracle_finish(o, rc);
  } else {
    int rc = dpo_oracle_serve(o);
    T_CHECK(rc != DPO_OK, "workers see the failure");
  }
  dpo_oracle_destroy(o);
  dpo_rng_destroy(rng);
  dpo_model_destroy(model);
  t_free(sh);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    test_ledger();
    test_shares();
  }
  test_oracle();
  return dpo_t_finish("test_parties");
}
