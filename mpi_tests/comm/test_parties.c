/* Multi-party runs (issue 7): per-party ledger accounts, noise shares, local noise in the
 * oracle's worker path.  Run under mpirun -np 4.
 *  1. Ledger (rank 0, serial): releases charged to subsets of 3 parties; the party totals, the
 *     global total and the journal (re-read here with json-c and summed independently) agree;
 *     a party over its budget is refused (nothing recorded, *refused names it) while charges
 *     that do not touch it go on; the global account refuses with *refused = -1; a resumed
 *     ledger restores the party accounts and refuses a larger party budget.
 *  2. Shares (rank 0, serial, fixed seed): the sum of P exact integer shares is discrete
 *     Laplace(t) (chi-square); sums at a real scale lie on the grid with the exact variance;
 *     --check-journal FILE (used by test_parties_cli.sh) checks un-amplified charges.
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
#include "../lib/mpitest.h"
#include "../lib/test_optim_common.h"

static dpo_charge_t pure(double eps, int64_t step) {
  dpo_charge_t c;
  memset(&c, 0, sizeof c);
  c.mechanism = DPO_MECH_LAPLACE;
  c.eps = eps;
  c.sampling = DPO_SAMPLING_NONE;
  c.accounting = DPO_ACCOUNTING_PURE;
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

/* Shares (issue 11 item 3): integer shares whose SUM is exactly discrete Laplace(t).
 * Small t: chi-square of the sum of P shares against (1-q)/(1+q) q^|k|, q = e^{-1/t}, for P
 * = 1, 3 and 10 (10 > the number of pieces: some shares are always 0).  Grid: 20000 sums of P
 * shares of dpo_mech_laplace_share on off-grid values all lie on the grid of b (v/Lambda is
 * an integer; the old Gamma-difference sampler put 199,958 of 200,000 off it) with variance
 * 2q/(1-q)^2 grid units; Gaussian shares are on the grid too. */
static double chi2_dlap(dpo_rng_t *rng, uint64_t t, int P, long N, int *dof) {
  enum { KMAX = 12 };
  long cnt[2 * KMAX + 3] = {0}; /* bins -KMAX..KMAX, tails below and above */
  for (long r = 0; r < N; r++) {
    int64_t sum = 0, k;
    for (int p = 0; p < P; p++) {
      T_CHECK(dpo_mech_dlaplace_share(rng, t, p, P, &k) == DPO_OK, "share: %s", dpo_errmsg());
      sum += k;
    }
    int bin = sum < -KMAX ? 0 : sum > KMAX ? 2 * KMAX + 2 : (int)sum + KMAX + 1;
    cnt[bin]++;
  }
  const double q = exp(-1.0 / (double)t), c = (1 - q) / (1 + q);
  const double tail = c * pow(q, KMAX + 1) / (1 - q); /* P(K > KMAX) = P(K < -KMAX) */
  double chi = 0;
  for (int bin = 0; bin < 2 * KMAX + 3; bin++) {
    double pk = bin == 0 || bin == 2 * KMAX + 2 ? tail : c * pow(q, abs(bin - KMAX - 1));
    double e = pk * (double)N;
    chi += (cnt[bin] - e) * (cnt[bin] - e) / e;
  }
  *dof = 2 * KMAX + 2;
  return chi;
}

static void test_shares(void) {
  dpo_rng_t *rng = NULL;
  T_CHECK(dpo_rng_create(1, 20240607, 9, &rng) == DPO_OK, "rng");
  /* exact law of the sum, small t (26 degrees of freedom: 99.99% quantile ~ 63) */
  const int Ps[3] = {1, 3, 10};
  for (int i = 0; i < 3; i++) {
    int dof;
    double chi = chi2_dlap(rng, 3, Ps[i], 60000, &dof);
    T_CHECK(chi < 63.0, "sum of %d dlaplace shares (t=3): chi2 %.1f on %d dof", Ps[i], chi, dof);
    printf("dlaplace shares (t=3, P=%d): chi2 %.1f on %d dof\n", Ps[i], chi, dof);
  }
  /* the wrong law fails the same test: one share of 3 alone is not discrete Laplace(3) */
  {
    enum { KMAX = 12 };
    long N = 60000, cnt[2 * KMAX + 3] = {0};
    for (long r = 0; r < N; r++) {
      int64_t k;
      dpo_mech_dlaplace_share(rng, 3, 0, 3, &k);
      cnt[k < -KMAX ? 0 : k > KMAX ? 2 * KMAX + 2 : (int)k + KMAX + 1]++;
    }
    const double q = exp(-1.0 / 3), c = (1 - q) / (1 + q);
    double chi = 0;
    for (int bin = 1; bin < 2 * KMAX + 2; bin++) {
      double e = c * pow(q, abs(bin - KMAX - 1)) * (double)N;
      chi += (cnt[bin] - e) * (cnt[bin] - e) / e;
    }
    T_CHECK(chi > 1000, "one share alone must not pass as the sum (chi2 %.1f)", chi);
  }
  int64_t k;
  T_CHECK(dpo_mech_dlaplace_share(rng, 3, 3, 3, &k) == DPO_EINVAL, "share index out of range");
  /* on the grid, at a real scale (t in (2^39, 2^40]) */
  const long N = 20000;
  const int P = 4;
  const double b = 1.5;
  double lam, *x = malloc((size_t)N * sizeof *x), var, kurt;
  dpo_mech_grid(b, &lam);
  const double t = ceil(b / lam), q = exp(-1.0 / t), want = 2 * q / ((1 - q) * (1 - q));
  for (long i = 0; i < N; i++) x[i] = 0.0;
  long off = 0;
  for (int p = 0; p < P; p++) {
    double v[64];
    for (long i = 0; i < N; i += 64) {
      int c = (int)(N - i < 64 ? N - i : 64);
      for (int j = 0; j < c; j++) v[j] = 0.1 * (p + 1) + 1e-3 * j; /* off the grid */
      T_CHECK(dpo_mech_laplace_share(rng, b, p, P, v, c) == DPO_OK, "laplace_share: %s",
              dpo_errmsg());
      for (int j = 0; j < c; j++) {
        if (v[j] / lam != rint(v[j] / lam)) off++;
        x[i + j] += v[j] - (double)rint((0.1 * (p + 1) + 1e-3 * j) / lam) * lam;
      }
    }
  }
  for (long i = 0; i < N; i++) {
    if (x[i] / lam != rint(x[i] / lam)) off++;
    x[i] /= lam; /* the sum of the integer shares, in grid units */
  }
  T_CHECK(off == 0, "%ld shares or sums off the grid (Lambda = %g)", off, lam);
  moments(x, N, &var, &kurt);
  T_CHECK(fabs(var / want - 1) < 0.06, "sum of %d Laplace shares: var %g grid^2, want %g", P, var,
          want);
  T_CHECK(fabs(kurt - 6.0) < 1.5, "sum of %d Laplace shares: kurtosis %g, want 6", P, kurt);
  printf("laplace shares (P=%d, b=%g): %ld sums on the grid, var/want %.4f, kurtosis %.2f\n", P,
         b, N, var / want, kurt);
  /* Gaussian shares: on the grid of sigma, variance P s_Z^2 Lambda^2 >= sigma^2 */
  const double sg = 2.0;
  dpo_mech_grid(sg, &lam);
  for (long i = 0; i < N; i++) x[i] = 0.0;
  for (int p = 0; p < P; p++) {
    for (long i = 0; i < N; i++) {
      double v = 0.3;
      T_CHECK(dpo_mech_gaussian_share(rng, sg, p, P, &v, 1) == DPO_OK, "gaussian_share");
      x[i] += v - rint(0.3 / lam) * lam;
    }
  }
  off = 0;
  for (long i = 0; i < N; i++) off += x[i] / lam != rint(x[i] / lam);
  moments(x, N, &var, &kurt);
  T_CHECK(off == 0 && fabs(var / (sg * sg) - 1) < 0.05 && fabs(kurt - 3) < 0.3,
          "Gaussian shares: %ld off grid, var %g (%g), kurtosis %g", off, var, sg * sg, kurt);
  free(x);
  dpo_rng_destroy(rng);
}

/* --check-journal FILE: every charge of a local / shares run with m < n is the UN-amplified
 * cost of its mechanism, recomputed here from the journalled b, sensitivity and d (issue 11
 * item 2; main charged 0.1 per step where the Laplace mechanism's own cost was 1.49). */
static int check_journal(const char *path) {
  FILE *f = fopen(path, "r");
  char line[8192];
  int n = 0, bad = 0;
  if (!f) return printf("cannot open %s\n", path), 1;
  while (fgets(line, sizeof line, f)) {
    json_object *o = json_tokener_parse(line), *v, *p;
    if (!o) continue;
    if (json_object_object_get_ex(o, "charge_eps", &v) &&
        json_object_object_get_ex(o, "params", &p)) {
      double ch = json_object_get_double(v), b = 0, sens = 0, em = 0, amp = 0;
      int64_t d = 0, m = 0, nn = 0;
      json_object *x;
      if (json_object_object_get_ex(p, "noise_scale", &x)) b = json_object_get_double(x);
      if (json_object_object_get_ex(p, "sensitivity", &x)) sens = json_object_get_double(x);
      if (json_object_object_get_ex(p, "dim", &x)) d = json_object_get_int64(x);
      if (json_object_object_get_ex(p, "m", &x)) m = json_object_get_int64(x);
      if (json_object_object_get_ex(p, "n", &x)) nn = json_object_get_int64(x);
      if (dpo_mech_laplace_eps(sens, b, d, &em) || (m < nn && dpo_acct_wor(em, m, nn, &amp))) {
        printf("line %d: %s\n", n + 1, dpo_errmsg());
        bad++;
      } else if (!(ch >= em && ch <= em * (1 + 1e-9)) || !(m < nn) || !(amp < 0.9 * ch)) {
        printf("charge %d: %.17g, mechanism %.17g, amplified %.17g (m %lld of %lld)\n", n + 1,
               ch, em, amp, (long long)m, (long long)nn);
        bad++;
      }
      if (n == 0)
        printf("per-step charge %.6g = un-amplified %.6g (amplified would be %.6g)\n", ch, em,
               amp);
      n++;
    }
    json_object_put(o);
  }
  fclose(f);
  if (n == 0) printf("no charges in %s\n", path);
  return bad || n == 0;
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
  if (argc == 3 && !strcmp(argv[1], "--check-journal")) return check_journal(argv[2]);
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
