/* An LD_PRELOAD shim for test_journal_sync.sh (built as a test-only module, never installed):
 * the N-th fsync(2) of a run's journal (a descriptor whose file ends in ledger.jsonl) fails with
 * EIO, N from DPO_T_FSYNC_FAIL_AT (unset or 0: none fails).  DPO_T_FSYNC_COUNT=FILE: each such
 * fsync writes how many there were so far into FILE (a clean run's count places N). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dpo__seen;

int fsync(int fd) {
  char link[64], path[1024];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(link, path, sizeof path - 1);
  const size_t tl = sizeof "ledger.jsonl" - 1;
  if (len >= (ssize_t)tl && !memcmp(path + len - tl, "ledger.jsonl", tl)) {
    const char *at = getenv("DPO_T_FSYNC_FAIL_AT"), *cnt = getenv("DPO_T_FSYNC_COUNT");
    dpo__seen++;
    FILE *f = cnt ? fopen(cnt, "w") : NULL;
    if (f) fprintf(f, "%d\n", dpo__seen), fclose(f);
    if (at && atoi(at) == dpo__seen) {
      errno = EIO;
      return -1;
    }
  }
  int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return real ? real(fd) : -1;
}
