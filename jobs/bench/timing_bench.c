/* Noise-timing benchmark (issue 35, "constant-time release"; driver: jobs/bench/timing).
 *
 * Does the time of one release depend on the noise it drew (Jin, McMurtry, Rubinstein &
 * Ohrimenko, IEEE S&P 2022)?  For each sampler, --n releases of ONE draw each (d = 1, through
 * the public calls a run uses), each timed alone with CLOCK_MONOTONIC, are sorted by |noise|
 * (in grid units); printed: the median time of the bottom and the top decile of |noise|, their
 * ratio (goal: < 1.05, within measurement noise), and the median time of all draws (ns, the
 * cost per draw, clock reads included).  Samplers:
 *   laplace   dpo_mech_laplace(b = 1, d = 1)       discrete Laplace, t in (2^39, 2^40]
 *   gaussian  dpo_mech_gaussian(sigma = 1, d = 1)  discrete Gaussian, sigma_Z in (2^39, 2^40]
 *   polya-n2, polya-n3  dpo_mech_dlaplace_polya_share(t = --t, n = 2, 3): one party's share
 *             of the distributed discrete Laplace of secure aggregation (privacy.delta = 0)
 * Then the time of a release of d = 124 and d = 1e4 coordinates (median of --reps, per
 * coordinate).  Only public calls: the binary also runs against an older libdpopt (before /
 * after).  One line "RESULT sampler=... bottom_ns=... top_ns=... ratio=... median_ns=..." per
 * sampler.
 *
 *   timing_bench [--n 200000] [--npolya 20000] [--t 1048576] [--reps 21] [--seed 1]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"

typedef struct {
  uint64_t mag; /* |noise| in grid units */
  double ns;
} dpo_tb_draw_t;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

static int by_mag(const void *a, const void *b) {
  uint64_t x = ((const dpo_tb_draw_t *)a)->mag, y = ((const dpo_tb_draw_t *)b)->mag;
  return x < y ? -1 : x > y;
}
static int by_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, by_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { LAP, GAUSS, POLYA2, POLYA3, NKIND };
static const char *names[NKIND] = {"laplace", "gaussian", "polya-n2", "polya-n3"};

/* one release of d = 1; returns |noise| in grid units */
static uint64_t one(dpo_rng_t *r, int kind, uint64_t t, double lam) {
  double v = 0;
  int64_t z = 0;
  int rc = kind == LAP     ? dpo_mech_laplace(r, 1.0, &v, 1)
           : kind == GAUSS ? dpo_mech_gaussian(r, 1.0, &v, 1)
                           : dpo_mech_dlaplace_polya_share(r, t, kind == POLYA2 ? 2 : 3, &z);
  if (rc) {
    fprintf(stderr, "timing_bench: %s: %s\n", names[kind], dpo_errmsg());
    exit(1);
  }
  if (kind <= GAUSS) return (uint64_t)fabs(v / lam);
  return (uint64_t)(z < 0 ? -z : z);
}

static void deciles(dpo_rng_t *r, int kind, long n, uint64_t t, double lam) {
  dpo_tb_draw_t *dr = malloc((size_t)n * sizeof *dr);
  double *tmp = malloc((size_t)n * sizeof *tmp);
  if (!dr || !tmp) exit(1);
  for (long i = 0; i < n / 50 + 10; i++) one(r, kind, t, lam); /* warm up */
  for (long i = 0; i < n; i++) {
    double t0 = now_ns();
    uint64_t m = one(r, kind, t, lam);
    dr[i].ns = now_ns() - t0;
    dr[i].mag = m;
  }
  for (long i = 0; i < n; i++) tmp[i] = dr[i].ns;
  double med = median(tmp, (size_t)n);
  qsort(dr, (size_t)n, sizeof *dr, by_mag);
  long dec = n / 10;
  for (long i = 0; i < dec; i++) tmp[i] = dr[i].ns;
  double bot = median(tmp, (size_t)dec);
  for (long i = 0; i < dec; i++) tmp[i] = dr[n - dec + i].ns;
  double top = median(tmp, (size_t)dec);
  printf("%-9s %9.0f %9.0f %7.3f %10.0f   |noise| deciles: bottom <= %llu, top >= %llu\n",
         names[kind], bot, top, top / bot, med, (unsigned long long)dr[dec - 1].mag,
         (unsigned long long)dr[n - dec].mag);
  printf("RESULT sampler=%s bottom_ns=%.1f top_ns=%.1f ratio=%.4f median_ns=%.1f\n", names[kind],
         bot, top, top / bot, med);
  free(dr);
  free(tmp);
}

/* a release of d coordinates: median over reps, ns per coordinate */
static double release(dpo_rng_t *r, int kind, int64_t d, int reps, uint64_t t) {
  double *v = calloc((size_t)d, sizeof *v), *ts = malloc((size_t)reps * sizeof *ts);
  if (!v || !ts) exit(1);
  for (int k = 0; k < reps; k++) {
    double t0 = now_ns();
    int rc = DPO_OK;
    if (kind == LAP) rc = dpo_mech_laplace(r, 1.0, v, d);
    else if (kind == GAUSS) rc = dpo_mech_gaussian(r, 1.0, v, d);
    else
      for (int64_t j = 0; j < d && !rc; j++) {
        int64_t z;
        rc = dpo_mech_dlaplace_polya_share(r, t, kind == POLYA2 ? 2 : 3, &z);
        v[j] += (double)z;
      }
    if (rc) {
      fprintf(stderr, "timing_bench: %s: %s\n", names[kind], dpo_errmsg());
      exit(1);
    }
    ts[k] = (now_ns() - t0) / (double)d;
    memset(v, 0, (size_t)d * sizeof *v);
  }
  double m = median(ts, (size_t)reps);
  free(v);
  free(ts);
  return m;
}

int main(int argc, char **argv) {
  long n = 200000, npolya = 20000;
  uint64_t t = (uint64_t)1 << 20, seed = 1;
  int reps = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--n")) n = (long)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--npolya")) npolya = (long)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--t")) t = (uint64_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed")) seed = (uint64_t)atof(argv[i + 1]);
    else {
      fprintf(stderr, "timing_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (n < 100 || npolya < 100 || t < 1 || reps < 1) return 2;
  dpo_rng_t *r;
  double lam;
  if (dpo_rng_create(1, seed, 0, &r) || dpo_mech_grid(1.0, &lam)) return 1;
  printf("per release of d = 1 (ns, CLOCK_MONOTONIC around each call; %ld draws, polya %ld, "
         "polya t = %llu)\n", n, npolya, (unsigned long long)t);
  printf("%-9s %9s %9s %7s %10s\n", "sampler", "bottom", "top", "ratio", "median");
  for (int k = 0; k < NKIND; k++) deciles(r, k, k <= GAUSS ? n : npolya, t, lam);
  printf("\nper coordinate of one release (ns, median of %d releases)\n", reps);
  printf("%-9s %10s %10s\n", "sampler", "d=124", "d=1e4");
  for (int k = 0; k < NKIND; k++) {
    double a = release(r, k, 124, reps, t), b = release(r, k, k <= GAUSS ? 10000 : 1000, reps, t);
    printf("%-9s %10.0f %10.0f%s\n", names[k], a, b, k <= GAUSS ? "" : "  (polya: d = 1e3)");
    printf("RESULT release=%s d124_ns=%.1f dbig_ns=%.1f\n", names[k], a, b);
  }
  dpo_rng_destroy(r);
  return 0;
}
