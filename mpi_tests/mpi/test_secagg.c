/* Secure aggregation (privacy.trust = secagg, issue 12).  Run under mpirun -np 4.
 *  1. Exact sum: integer-valued sums (v / gamma integers) come back EXACTLY at rank 0 through
 *     the masked mod-2^64 reduce; fractional ones within ranks * gamma (randomized rounding).
 *  2. What the coordinator receives from one rank (its masked vector) is uniform: chi-square
 *     of the low and the high byte of 32 words x 2000 releases against 256 equal bins.
 *  3. The sum of the 4 ranks' noise shares N_Z(0, 2^2) through the whole protocol has the
 *     exact pmf of the 4-fold convolution (chi-square, bins with >= 20 expected, tails pooled);
 *     with Polya shares (pure eps, n = 4 honest) the sum is exactly the discrete Laplace(3).
 *  4. A rank that signals failure still completes the collective (no hang), every rank returns.
 *  5. Parameters (serial): rho <= target, sigma grows with the coalition size k, the n = 1 bound
 *     is Delta/sigma, and the encoded sensitivity is Delta2/gamma + sqrt(d) with the inflation
 *     sqrt(d) <= 1/64 of Delta2/gamma; the data-free range check admits 2^61 and refuses 2^63. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"
#include "mpitest.h"

/* chi-square critical values at p ~ 1e-6 (Wilson-Hilferty) */
static double chi2_crit(int dof) {
  double z = 4.75, h = 2.0 / (9.0 * dof);
  return dof * pow(1 - h + z * sqrt(h), 3);
}

static void test_exact_sum(MPI_Comm comm, int rank, int size, dpo_rng_t *rng) {
  dpo_secagg_t *sa = NULL;
  T_CHECK(dpo_secagg_create(comm, 0, rng, &sa) == DPO_OK, "create: %s", dpo_errmsg());
  if (!sa) return;
  enum { D = 40 };
  const double gamma = 0x1p-10;
  double v[D], tot[D], want[D];
  for (int frac = 0; frac < 2; frac++) {
    for (int rel = 0; rel < 5; rel++) {
      for (int j = 0; j < D; j++) {
        want[j] = 0;
        for (int r = 0; r < size; r++) {
          double x = (double)((r + 1) * (j - 17) * (rel + 3)) * gamma * (j % 3 ? 1e6 : 1);
          if (frac) x += 0.37 * gamma * (r + 1);
          if (r == rank) v[j] = x;
          want[j] += x;
        }
      }
      int rc = dpo_secagg_round(sa, v, D, gamma, 1, 1, tot, NULL);
      T_CHECK(rc == DPO_OK, "round: %s", dpo_errmsg());
      if (rank == 0)
        for (int j = 0; j < D; j++) {
          if (!frac) T_CHECK(tot[j] == want[j], "exact sum j=%d: %.17g vs %.17g", j, tot[j], want[j]);
          else T_CHECK(fabs(tot[j] - want[j]) <= size * gamma, "rounded sum j=%d: %.17g vs %.17g",
                       j, tot[j], want[j]);
        }
    }
  }
  /* 4: rank 2 fails before the release: the collective completes everywhere but the round is
   * withheld (nothing reduced or decoded: rank 0's total untouched), the ranks that did not
   * fail get DPO_EREMOTE; the next rounds (below) work again */
  double zero[D] = {0};
  for (int j = 0; j < D; j++) tot[j] = NAN;
  int rc = dpo_secagg_round(sa, zero, D, gamma, 1, rank != 2, tot, NULL);
  if (size > 2) {
    T_CHECK(rank == 2 ? rc == DPO_OK : rc == DPO_EREMOTE, "a failed rank withholds the round "
            "(rank %d: %d)", rank, rc);
    if (rank == 0) T_CHECK(isnan(tot[0]) && isnan(tot[D - 1]), "withheld: nothing decoded");
  } else {
    T_CHECK(rc == DPO_OK, "round: %s", dpo_errmsg());
  }
  /* 2: rank 1's masked vector of a constant (non-uniform) encoding */
  enum { R = 2000, DW = 32 };
  long lo[256] = {0}, hi[256] = {0};
  double c[DW];
  uint64_t m[DW];
  for (int j = 0; j < DW; j++) c[j] = 5.0;
  for (int rel = 0; rel < R; rel++) {
    T_CHECK(dpo_secagg_round(sa, c, DW, 1.0, 1, 1, NULL, m) == DPO_OK, "round");
    if (rank == 1)
      for (int j = 0; j < DW; j++) {
        lo[m[j] & 255]++;
        hi[m[j] >> 56]++;
      }
  }
  if (rank == 1) {
    double e = (double)R * DW / 256, x2lo = 0, x2hi = 0;
    for (int b = 0; b < 256; b++) {
      x2lo += (lo[b] - e) * (lo[b] - e) / e;
      x2hi += (hi[b] - e) * (hi[b] - e) / e;
    }
    T_CHECK(x2lo < chi2_crit(255) && x2hi < chi2_crit(255),
            "masked vector not uniform: chi2 low byte %.1f, high byte %.1f (crit %.1f)", x2lo,
            x2hi, chi2_crit(255));
    printf("uniformity of rank 1's masked words: chi2(255) low byte %.1f, high byte %.1f\n", x2lo,
           x2hi);
  }
  dpo_secagg_destroy(sa);
}

/* exact pmf of the sum of n discrete Gaussians N_Z(0, s^2) on [-W, W] */
static void conv_pmf(int n, double s, int W, double *out) {
  const int w = 12 * (int)ceil(s) + 1;
  double *one = calloc(2 * w + 1, sizeof *one), z = 0;
  for (int k = -w; k <= w; k++) z += one[k + w] = exp(-(double)k * k / (2 * s * s));
  for (int k = -w; k <= w; k++) one[k + w] /= z;
  double *cur = calloc(2 * W + 1, sizeof *cur), *nxt = calloc(2 * W + 1, sizeof *nxt);
  cur[W] = 1;
  for (int i = 0; i < n; i++) {
    memset(nxt, 0, (2 * W + 1) * sizeof *nxt);
    for (int a = -W; a <= W; a++)
      if (cur[a + W] > 0)
        for (int k = -w; k <= w; k++)
          if (a + k >= -W && a + k <= W) nxt[a + k + W] += cur[a + W] * one[k + w];
    memcpy(cur, nxt, (2 * W + 1) * sizeof *cur);
  }
  memcpy(out, cur, (2 * W + 1) * sizeof *out);
  free(one);
  free(cur);
  free(nxt);
}

static void test_noise_sum(MPI_Comm comm, int rank, int size, dpo_rng_t *rng) {
  dpo_secagg_t *sa = NULL;
  T_CHECK(dpo_secagg_create(comm, 1, rng, &sa) == DPO_OK, "create: %s", dpo_errmsg());
  if (!sa) return;
  enum { D = 64, R = 400, W = 60 };
  double zero[D] = {0}, tot[D];
  long *cnt = calloc(2 * W + 1, sizeof *cnt), out = 0;
  for (int rel = 0; rel < R; rel++) {
    T_CHECK(dpo_secagg_round(sa, zero, D, 1.0, 2, 1, tot, NULL) == DPO_OK, "round");
    if (rank == 0)
      for (int j = 0; j < D; j++) {
        long k = (long)tot[j];
        if (k >= -W && k <= W) cnt[k + W]++;
        else out++;
      }
  }
  if (rank == 0) {
    double *p = malloc((2 * W + 1) * sizeof *p), x2 = 0, pe = 0, po = 0;
    conv_pmf(size, 2.0, W, p);
    const double N = (double)D * R;
    int bins = 0;
    /* pool from each side until >= 20 expected */
    long oc = out;
    double opool = 0;
    for (int k = -W; k <= W; k++) {
      double e = N * p[k + W];
      if (e >= 20) {
        x2 += (cnt[k + W] - e) * (cnt[k + W] - e) / e;
        bins++;
      } else {
        oc += cnt[k + W];
        opool += e;
      }
    }
    for (int k = -W; k <= W; k++) pe += p[k + W];
    opool += N * (1 - pe > 0 ? 1 - pe : 0);
    if (opool > 0) {
      x2 += (oc - opool) * (oc - opool) / opool;
      bins++;
    }
    po = x2;
    T_CHECK(x2 < chi2_crit(bins - 1), "noise sum vs the %d-fold discrete Gaussian convolution: "
            "chi2 %.1f over %d bins (crit %.1f)", size, x2, bins, chi2_crit(bins - 1));
    printf("sum of %d shares N_Z(0,4): chi2 %.1f over %d bins (crit %.1f)\n", size, po, bins,
           chi2_crit(bins - 1));
    free(p);
  }
  free(cnt);
  dpo_secagg_destroy(sa);
}

/* The same through the protocol with Polya shares (pure eps): every rank adds one share sized
 * for n = size honest parties, so the decoded sum is EXACTLY the discrete Laplace(t = 3),
 * P(k) ~ exp(-|k|/3) (chi-square at p ~ 1e-6, bins with >= 20 expected, the rest pooled); and
 * the parameters of the pure-eps release. */
static void test_noise_sum_lap(MPI_Comm comm, int rank, int size, dpo_rng_t *rng) {
  dpo_secagg_t *sa = NULL;
  T_CHECK(dpo_secagg_create(comm, 1, rng, &sa) == DPO_OK, "create: %s", dpo_errmsg());
  if (!sa) return;
  enum { D = 64, R = 400, W = 60 };
  double zero[D] = {0}, tot[D];
  long *cnt = calloc(2 * W + 1, sizeof *cnt), out = 0;
  for (int rel = 0; rel < R; rel++) {
    T_CHECK(dpo_secagg_round_lap(sa, zero, D, 1.0, 3, size, 1, tot, NULL) == DPO_OK, "round");
    if (rank == 0)
      for (int j = 0; j < D; j++) {
        long k = (long)tot[j];
        if (k >= -W && k <= W) cnt[k + W]++;
        else out++;
      }
  }
  if (rank == 0) {
    const double q = exp(-1.0 / 3), N = (double)D * R;
    double x2 = 0, opool = 0;
    long oc = out;
    int bins = 0;
    for (int k = -W; k <= W; k++) {
      double e = N * (1 - q) / (1 + q) * pow(q, abs(k));
      if (e >= 20) {
        x2 += (cnt[k + W] - e) * (cnt[k + W] - e) / e;
        bins++;
      } else {
        oc += cnt[k + W];
        opool += e;
      }
    }
    opool += N * 2 * pow(q, W + 1) / (1 + q); /* P(|k| > W) */
    if (opool >= 20) {
      x2 += (oc - opool) * (oc - opool) / opool;
      bins++;
    }
    T_CHECK(bins > 10 && x2 < chi2_crit(bins - 1), "sum of %d Polya shares vs discrete Laplace(3): "
            "chi2 %.1f over %d bins (crit %.1f)", size, x2, bins, chi2_crit(bins - 1));
    printf("sum of %d Polya shares (n = %d): chi2 %.1f over %d bins (crit %.1f)\n", size, size, x2,
           bins, chi2_crit(bins - 1));
    double g, e, Dl;
    uint64_t t;
    T_CHECK(dpo_secagg_lap_params(8.0, 123, 0.1, &g, &t, &e, &Dl) == DPO_OK, "lap params");
    T_CHECK(8.0 / g >= 1024 * 123 && 8.0 / g < 2048 * 123 && Dl >= 8.0 / g + 123 && e <= 0.1 &&
            e > 0.1 * (1 - 1e-6) && t == (uint64_t)ceil(Dl / 0.1),
            "lap params: gamma %g, t %llu, eps %g, Delta %g", g, (unsigned long long)t, e, Dl);
    T_CHECK(dpo_secagg_lap_params(8.0, 123, 1e-12, &g, &t, &e, &Dl) == DPO_EINVAL,
            "t above 2^50 refused");
  }
  free(cnt);
  dpo_secagg_destroy(sa);
}

static void test_params(void) {
  double g, rho, D, e;
  uint64_t s0, s2;
  T_CHECK(dpo_secagg_params(7.5, 123, 4, 0, 0.2, &g, &s0, &rho, &D) == DPO_OK, "params");
  T_CHECK(rho <= 0.2 && rho > 0.19, "rho %g for target 0.2", rho);
  T_CHECK(D == 7.5 / g + sqrt(123.0) || D > 7.5 / g + sqrt(123.0), "Delta %g", D);
  T_CHECK(sqrt(123.0) <= 7.5 / g / 64 * 1.0000001 && 7.5 / g < 128 * sqrt(123.0),
          "gamma %g: Delta2/gamma %g not in [64, 128) sqrt(d)", g, 7.5 / g);
  T_CHECK(dpo_secagg_params(7.5, 123, 4, 2, 0.2, &g, &s2, &rho, &D) == DPO_OK, "params k=2");
  T_CHECK(s2 > s0 && fabs((double)s2 / s0 - sqrt(2.0)) < 0.01,
          "sigma for 2 of 4 honest (%llu) vs 4 of 4 (%llu): ratio sqrt(2)", (unsigned long long)s2,
          (unsigned long long)s0);
  T_CHECK(dpo_secagg_eps(10.0, 5.0, 1, 50, &e) == DPO_OK && e >= 2.0 && e < 2.0 * (1 + 1e-12),
          "n = 1: eps = Delta/sigma (got %.17g)", e);
  T_CHECK(dpo_secagg_params(7.5, 123, 4, 4, 0.2, &g, &s0, &rho, &D) == DPO_EINVAL,
          "collude = P refused");
  /* the range: 2^29 rows of sensitivity 2^20 at gamma 2^-12 encode to 2^61 (+ ranks); 2^31
   * rows to 2^63, which could wrap */
  T_CHECK(dpo_secagg_check_range((int64_t)1 << 29, 0x1p20, 0x1p-12, 4) == DPO_OK,
          "2^61 + 4 fits below 2^62");
  T_CHECK(dpo_secagg_check_range((int64_t)1 << 31, 0x1p20, 0x1p-12, 4) == DPO_EINVAL,
          "2^63 + 4 refused");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  dpo_rng_t *rng = NULL;
  if (dpo_rng_create(1, 11, 0x70000000ULL + rank, &rng) != DPO_OK) MPI_Abort(MPI_COMM_WORLD, 2);
  if (rank == 0) test_params();
  if (size >= 2) {
    test_exact_sum(MPI_COMM_WORLD, rank, size, rng);
    test_noise_sum(MPI_COMM_WORLD, rank, size, rng);
    test_noise_sum_lap(MPI_COMM_WORLD, rank, size, rng);
  }
  dpo_rng_destroy(rng);
  return dpo_t_finish("test_secagg");
}
