/* OpenBLAS starts its worker threads when it is loaded, one per CPU the process may run on.
 * Ranks that are not bound to cores (mpirun --oversubscribe, many ranks on few cores) each
 * start that many: P ranks on C cores hold P * C threads, whose spinning after every threaded
 * call competes with the ranks themselves.  dpopt's per-rank BLAS work is small (a batch's
 * products, d x d Hessians), so each rank gets its share of the node's CPUs. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "config.h"

#include "run/run_blas.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
/* declared here: only OpenBLAS's own cblas.h has them (configure found the symbols) */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

/* the CPUs this process may run on (its affinity: a rank bound to one core sees 1) */
static long dpo__cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (!sched_getaffinity(0, sizeof set, &set) && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}
#endif

static const char *dpo__blas_from = "the BLAS's default";

static int dpo__env_set(const char *k) {
  const char *v = getenv(k);
  return v && *v;
}

void dpo__blas_threads_setup(void) {
  /* OpenBLAS read these when it was loaded: the user's count is already in force */
  if (dpo__env_set("OPENBLAS_NUM_THREADS") || dpo__env_set("GOTO_NUM_THREADS") ||
      dpo__env_set("OMP_NUM_THREADS")) {
    dpo__blas_from = "environment";
    return;
  }
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
  /* a rank bound to fewer CPUs than the node's has them as its own share; an unbound rank
   * shares the node with the ranks Open MPI's launcher states (without one: a single process) */
  const long cpus = dpo__cpus(), online = sysconf(_SC_NPROCESSORS_ONLN);
  const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  long local = ls ? strtol(ls, NULL, 10) : 1, t = cpus;
  if (cpus >= online && local > 1) t = cpus / local;
  openblas_set_num_threads(t > 1 ? (int)t : 1);
  dpo__blas_from = "dpopt: this rank's share of the node's CPUs";
#endif
}

int dpo__blas_threads(const char **from) {
  if (from) *from = dpo__blas_from;
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
  return openblas_get_num_threads();
#else
  return 0;
#endif
}
