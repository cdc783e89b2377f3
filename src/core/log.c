#include "dpopt/runout.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int dpo__quiet = 0;
static int dpo__progress_open = 0;

void dpo_msg_set_quiet(int quiet) { dpo__quiet = quiet; }
int dpo_msg_quiet(void) { return dpo__quiet; }
static int dpo__verbose = 0;
void dpo_msg_set_verbose(int verbose) { dpo__verbose = verbose; }
int dpo_msg_verbose(void) { return dpo__verbose; }

void dpo_msg(const char *fmt, ...) {
  if (dpo__quiet) return;
  dpo_progress_end();
  va_list ap;
  va_start(ap, fmt);
  fputs("dpopt: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void dpo_progress(const char *fmt, ...) {
  if (dpo__quiet || !isatty(STDERR_FILENO)) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("\r\033[K", stderr);
  vfprintf(stderr, fmt, ap);
  fflush(stderr);
  va_end(ap);
  dpo__progress_open = 1;
}

void dpo_progress_end(void) {
  if (dpo__progress_open) {
    fputc('\n', stderr);
    dpo__progress_open = 0;
  }
}

double dpo_wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
