/* A bound on MPI start-up.  A node whose daemon or link fails while the job starts leaves the
 * other ranks waiting inside MPI_Init (Open MPI 4.1's wire-up and TCP transport have no timeout
 * of their own), so without this the bound is the launcher's (`mpirun --timeout`, a batch
 * system's limit).  The alarm is armed before MPI_Init and disarmed once every rank has met in
 * a barrier after it; nothing is charged or written before that point, so ending the process
 * from the handler loses nothing.  The handler only calls async-signal-safe functions. */
#include "cli/startwatch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dpo__sw_msg[384];
static size_t dpo__sw_len;

static void dpo__sw_fire(int sig) {
  (void)sig;
  ssize_t w = write(STDERR_FILENO, dpo__sw_msg, dpo__sw_len);
  (void)w;
  _exit(DPO__START_EXIT);
}

/* the rank as the launcher states it: MPI_Comm_rank is not available before MPI_Init */
static const char *dpo__sw_rank(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return v;
  }
  return "?";
}

int dpo__start_watch_arm(void) {
  long secs = DPO__START_DEFAULT;
  int bad = 0;
  const char *e = getenv("DPOPT_START_TIMEOUT");
  if (e && *e) {
    char *end;
    errno = 0;
    long v = strtol(e, &end, 10);
    if (errno || *end || v < 0 || v > 86400) bad = 1; /* refused after MPI_Init, on rank 0 */
    else secs = v;
  }
  if (secs == 0) return bad ? -1 : 0;
  char host[64] = "?";
  if (gethostname(host, sizeof host)) strcpy(host, "?");
  host[sizeof host - 1] = 0;
  int n = snprintf(dpo__sw_msg, sizeof dpo__sw_msg,
                   "dpopt: rank %s on %s: MPI start-up did not finish within %ld s (a node, its "
                   "daemon or the link to it did not come up); stopping, nothing was run or "
                   "charged (DPOPT_START_TIMEOUT=S sets the bound, 0 turns it off)\n",
                   dpo__sw_rank(), host, secs);
  dpo__sw_len = n < 0 ? 0 : (size_t)n < sizeof dpo__sw_msg ? (size_t)n : sizeof dpo__sw_msg - 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = dpo__sw_fire;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGALRM, &sa, NULL)) return bad ? -1 : 0;
  alarm((unsigned)secs);
  return bad ? -1 : 0;
}

void dpo__start_watch_disarm(void) {
  alarm(0);
  signal(SIGALRM, SIG_DFL);
}
