/* Read bandwidth for jobs/bench/hamsi's bound: the best of REPS timed sums over a buffer of
 * BYTES bytes (64-bit integer adds, which the compiler may reorder and vectorize, so the adds
 * do not limit it), after one untimed pass.  The script runs P copies at once, as P ranks read at once.
 * usage: hamsi_readbw BYTES REPS  -> prints the bandwidth in bytes per second */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hamsi_readbw BYTES REPS\n");
    return 2;
  }
  size_t n = (size_t)strtod(argv[1], NULL) / sizeof(double);
  int reps = atoi(argv[2]);
  if (n < 4) n = 4;
  n -= n % 4;
  uint64_t *a = malloc(n * sizeof *a), sink = 0;
  double best = 1e300;
  if (!a) return 1;
  for (size_t i = 0; i < n; i++) a[i] = i & 7;
  /* passes of at least ~20 ms, so the clock's resolution does not matter */
  size_t passes = 1 + (size_t)(2.5e6 / (double)n);
  for (int k = 0; k <= reps; k++) {
    double t0 = now();
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t p = 0; p < passes; p++)
      for (size_t i = 0; i < n; i += 4) {
        s0 += a[i];
        s1 += a[i + 1];
        s2 += a[i + 2];
        s3 += a[i + 3];
      }
    double dt = (now() - t0) / (double)passes;
    sink += s0 + s1 + s2 + s3;
    if (k > 0 && dt < best) best = dt;
  }
  printf("%.6g\n", (double)(n * sizeof *a) / best);
  free(a);
  return sink == 1; /* never (a pass sums i & 7 over >= 4 elements: >= 6); keeps the sums */
}
