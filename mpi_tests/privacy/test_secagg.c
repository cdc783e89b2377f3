/* Secure aggregation (privacy.trust = secagg, issue 12).  Run under mpirun -np 4.
 *  1. Exact sum: integer-valued sums (v / gamma integers) come back EXACTLY at rank 0 through
 *     the masked reduce mod 2^32 and mod 2^64, at 2, 3 and 5 ranks (5 when run with 5: the
 *     np5 script), on the complete and on the sparse (ring) mask graph; fractional ones within
 *     ranks * gamma (randomized rounding); a 32-bit total beyond 2^31 wraps by a multiple of
 *     2^32.  dpo_secagg_word picks 32 bits only when its data and noise bounds fit.
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
#include "../lib/mpitest.h"

/* chi-square critical values at p ~ 1e-6 (Wilson-Hilferty) */
static double chi2_crit(int dof) {
  double z = 4.75, h = 2.0 / (9.0 * dof);
  return dof * pow(1 - h + z * sqrt(h), 3);
}

/* 1: the masked sum of `size` ranks on the mask graph against `corrupt` ranks, in words of
 * `bits`, equals the sum computed in the clear (doubles, exact for these integers): exactly for
 * integer encodings, within size * gamma for fractional ones; with 32-bit words a total beyond
 * 2^31 wraps to the true total minus a multiple of 2^32 (wrap-around, as with 2^64). */
static void exact_sums(MPI_Comm comm, int rank, int size, dpo_rng_t *rng, int corrupt,
                       int bits) {
  dpo_secagg_t *sa = NULL;
  T_CHECK(dpo_secagg_create(comm, 0, rng, &sa) == DPO_OK, "create: %s", dpo_errmsg());
  if (!sa) return;
  T_CHECK(dpo_secagg_set_graph(sa, corrupt) == DPO_OK, "graph: %s", dpo_errmsg());
  enum { D = 40 };
  const double gamma = 0x1p-10, big = bits == 32 ? 1e5 : 1e9; /* 32: |total| < 2^31 */
  double v[D], tot[D], want[D];
  for (int frac = 0; frac < 3; frac++) { /* 2: a 32-bit total out of range (wraps) */
    for (int rel = 0; rel < 5; rel++) {
      for (int j = 0; j < D; j++) {
        want[j] = 0;
        for (int r = 0; r < size; r++) {
          double x = (double)((r + 1) * (j - 17) * (rel + 3)) * gamma * (j % 3 ? big : 1);
          if (frac == 1) x += 0.37 * gamma * (r + 1);
          if (frac == 2) x = (j % 2 ? 1 : -1) * (0x1p30 + 12345.0 * (j + 1)) * gamma;
          if (r == rank) v[j] = x;
          want[j] += x;
        }
      }
      int rc = dpo_secagg_round(sa, v, D, gamma, 1, bits, 1, tot, NULL);
      T_CHECK(rc == DPO_OK, "round: %s", dpo_errmsg());
      if (rank == 0)
        for (int j = 0; j < D; j++) {
          if (frac == 0)
            T_CHECK(tot[j] == want[j], "%d ranks, %d bits, corrupt %d: exact sum j=%d: %.17g vs "
                    "%.17g", size, bits, corrupt, j, tot[j], want[j]);
          else if (frac == 1)
            T_CHECK(fabs(tot[j] - want[j]) <= size * gamma, "rounded sum j=%d: %.17g vs %.17g",
                    j, tot[j], want[j]);
          else if (bits == 32) { /* want = tot + a non-zero multiple of 2^32 */
            double q = (want[j] - tot[j]) / gamma / 0x1p32;
            T_CHECK(q == floor(q) && q != 0 && fabs(tot[j] / gamma) <= 0x1p31,
                    "wrapped sum j=%d: %.17g vs %.17g", j, tot[j], want[j]);
          } else {
            T_CHECK(tot[j] == want[j], "64-bit sum j=%d: %.17g vs %.17g", j, tot[j], want[j]);
          }
        }
    }
  }
  dpo_secagg_destroy(sa);
}

static void test_exact_sum(MPI_Comm comm, int rank, int size, dpo_rng_t *rng) {
  dpo_secagg_t *sa = NULL;
  T_CHECK(dpo_secagg_create(comm, 0, rng, &sa) == DPO_OK, "create: %s", dpo_errmsg());
  if (!sa) return;
  /* a sparse graph at 4 ranks: the ring (each rank masks with 2 of the 3 others) */
  T_CHECK(dpo_secagg_set_graph(sa, 1) == DPO_OK &&
          dpo_secagg_degree(sa) == (size >= 4 ? 2 : size - 1), "graph: degree %d at %d ranks",
          dpo_secagg_degree(sa), size);
  enum { D = 40 };
  const double gamma = 0x1p-10;
  double tot[D];
  /* 4: rank 2 fails before the release: the collective completes everywhere but the round is
   * withheld (nothing reduced or decoded: rank 0's total untouched), the ranks that did not
   * fail get DPO_EREMOTE; the next rounds (below) work again */
  double zero[D] = {0};
  for (int j = 0; j < D; j++) tot[j] = NAN;
  int rc = dpo_secagg_round(sa, zero, D, gamma, 1, 32, rank != 2, tot, NULL);
  if (size > 2) {
    T_CHECK(rank == 2 ? rc == DPO_OK : rc == DPO_EREMOTE, "a failed rank withholds the round "
            "(rank %d: %d)", rank, rc);
    if (rank == 0) T_CHECK(isnan(tot[0]) && isnan(tot[D - 1]), "withheld: nothing decoded");
  } else {
    T_CHECK(rc == DPO_OK, "round: %s", dpo_errmsg());
  }
  /* 2: rank 1's masked vector of a constant (non-uniform) encoding, in 64-bit words and in
   * 32-bit words (the high byte is then bits 24..31), on the sparse graph */
  enum { R = 2000, DW = 32 };
  long lo[256] = {0}, hi[256] = {0};
  double c[DW];
  uint64_t m[DW];
  for (int j = 0; j < DW; j++) c[j] = 5.0;
  for (int rel = 0; rel < R; rel++) {
    const int bits = rel % 2 ? 32 : 64;
    T_CHECK(dpo_secagg_round(sa, c, DW, 1.0, 1, bits, 1, NULL, m) == DPO_OK, "round");
    if (rank == 1)
      for (int j = 0; j < DW; j++) {
        lo[m[j] & 255]++;
        hi[m[j] >> (bits - 8)]++;
        if (bits == 32) T_CHECK(m[j] >> 32 == 0, "a 32-bit word above 2^32");
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
    T_CHECK(dpo_secagg_round(sa, zero, D, 1.0, 2, 32, 1, tot, NULL) == DPO_OK, "round");
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
    T_CHECK(dpo_secagg_round_lap(sa, zero, D, 1.0, 3, size, 64, 1, tot, NULL) == DPO_OK, "round");
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
  /* the word width: data bound m sens / gamma + ranks, noise bound for 2^-64 a release */
  int bits = 0;
  T_CHECK(dpo_secagg_word(1000, 1.0, 0x1p-10, 4, 4, 100, 1000, 0, &bits) == DPO_OK && bits == 32,
          "1e6 data + small noise: 32 bits (%d)", bits);
  T_CHECK(dpo_secagg_word((int64_t)1 << 21, 1.0, 0x1p-10, 4, 4, 100, 1, 0, &bits) == DPO_OK &&
          bits == 64, "2^31 data: 64 bits (%d)", bits);
  /* Gaussian: B = sigma sqrt(2 shares (ln 2d + 64 ln 2)), at d = 100, 4 shares: 19.67 sigma */
  const double Lg = sqrt(2 * 4 * (log(200.0) + 64 * M_LN2));
  uint64_t sg = (uint64_t)(0x1p31 / Lg);
  T_CHECK(dpo_secagg_word(1, 1.0, 1.0, 1, 4, 100, sg - 1000, 0, &bits) == DPO_OK && bits == 32,
          "Gaussian noise just inside: 32 bits (%d)", bits);
  T_CHECK(dpo_secagg_word(1, 1.0, 1.0, 1, 4, 100, sg + 1000, 0, &bits) == DPO_OK && bits == 64,
          "Gaussian noise just outside: 64 bits (%d)", bits);
  /* Polya: B = 2 t (ln 2d + (shares / n) ln 2 + 64 ln 2) */
  const double Ll = 2 * (log(200.0) + 2 * M_LN2 + 64 * M_LN2);
  uint64_t tl = (uint64_t)(0x1p31 / Ll);
  T_CHECK(dpo_secagg_word(1, 1.0, 1.0, 1, 4, 100, tl - 1000, 2, &bits) == DPO_OK && bits == 32,
          "Laplace noise just inside: 32 bits (%d)", bits);
  T_CHECK(dpo_secagg_word(1, 1.0, 1.0, 1, 4, 100, tl + 1000, 2, &bits) == DPO_OK && bits == 64,
          "Laplace noise just outside: 64 bits (%d)", bits);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  dpo_rng_t *rng = NULL;
  if (dpo_rng_create(1, 11, 0x70000000ULL + rank, &rng) != DPO_OK) MPI_Abort(MPI_COMM_WORLD, 2);
  if (rank == 0) test_params();
  /* 1 at 2, 3 and 5 ranks (5: mpi_tests/privacy/test_secagg_np5.sh), complete and sparse graphs
   * (corrupt 0: the ring, 1: h = 1 as well, size - 1: complete), 32- and 64-bit words */
  const int ns[] = {2, 3, 5};
  for (int i = 0; i < 3; i++) {
    if (ns[i] > size) continue;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank < ns[i], rank, &sub);
    if (rank < ns[i])
      for (int corrupt = 0; corrupt < ns[i]; corrupt += ns[i] > 2 ? ns[i] - 2 : 1)
        for (int bits = 32; bits <= 64; bits += 32)
          exact_sums(sub, rank, ns[i], rng, corrupt, bits);
    MPI_Comm_free(&sub);
  }
  if (size >= 2) {
    test_exact_sum(MPI_COMM_WORLD, rank, size, rng);
    test_noise_sum(MPI_COMM_WORLD, rank, size, rng);
    test_noise_sum_lap(MPI_COMM_WORLD, rank, size, rng);
  }
  dpo_rng_destroy(rng);
  return dpo_t_finish("test_secagg");
}
