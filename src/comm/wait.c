/* Waiting that suits the machine (see comm/wait.h). */
#define _GNU_SOURCE
#include "comm/wait.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dpopt/runout.h"
#include "dpopt/status.h"

/* The policy and the probe's figures hang on the communicator as an attribute, so they are
 * the same on every rank of it; a duplicate shares them (counted, freed with the last). */
typedef struct {
  int mode, refs;
  dpo__wait_probe_t p;
} dpo__wait_attr_t;
static int dpo__wait_key = MPI_KEYVAL_INVALID;

static int dpo__attr_copy(MPI_Comm c, int key, void *x, void *in, void *out, int *flag) {
  (void)c, (void)key, (void)x;
  ((dpo__wait_attr_t *)in)->refs++;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

static int dpo__attr_free(MPI_Comm c, int key, void *v, void *x) {
  (void)c, (void)key, (void)x;
  dpo__wait_attr_t *a = v;
  if (a && --a->refs == 0) free(a);
  return MPI_SUCCESS;
}

#define DPO__PROBE_S 0.010 /* the spin that measures a rank's share of its core */
#define DPO__SHARE_MIN 0.8 /* below this share, the cores count as shared */
#define DPO__MEET_S 0.008 /* the measured meetings last this long (dpo__wait_measure): two
                            * or more of the scheduler's slices; 15 ms decided the same */
#define DPO__SPIN_S 20e-6  /* a gate first polls this long: a peer about to arrive */
#define DPO__SLEEP0_NS 20000L
#define DPO__SLEEP1_NS 500000L /* the longest sleep between two polls */
#define DPO__SLEEPL_NS 5000000L /* ... of a rank that waits for a whole solve */

static double dpo__clock(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The cores the ranks of a node may run on: the union of their affinity masks (Open MPI binds
 * each of 2 ranks to a core of its own, so one rank's mask would count one core). */
static int dpo__node_cpus(MPI_Comm node) {
  cpu_set_t set, all;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < (n > 0 ? n : 1) && c < CPU_SETSIZE; c++) CPU_SET((int)c, &set);
  }
  if (node == MPI_COMM_NULL ||
      MPI_Allreduce(&set, &all, (int)sizeof set, MPI_BYTE, MPI_BOR, node) != MPI_SUCCESS)
    all = set;
  return CPU_COUNT(&all);
}

/* Tasks ready to run on the whole machine now (/proc/loadavg's "R/T" field: ours included, as
 * they spin), or -1 where it cannot be read. */
static int dpo__running(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  int r = -1;
  if (f) {
    if (fscanf(f, "%*f %*f %*f %d/", &r) != 1) r = -1;
    fclose(f);
  }
  return r;
}

/* A synthetic row's work: a dot product and an axpy over DPO__ROW_W doubles (the two passes of
 * a gradient over a row), the entries counted.  No data: the figures it gives are the
 * machine's. */
#define DPO__ROW_W 128
static double dpo__row_work(double *v, double *g, int64_t rows) {
  double s = 0;
  for (int64_t i = 0; i < rows; i++) {
    double dot = 0;
    for (int j = 0; j < DPO__ROW_W; j++) dot += v[j] * g[j];
    for (int j = 0; j < DPO__ROW_W; j++) g[j] += 1e-9 * dot * v[j];
    s += dot;
  }
  return s;
}

/* the synthetic row and its gradient before the work (no data: fixed numbers) */
static void dpo__row_init(double *v, double *g) {
  for (int j = 0; j < DPO__ROW_W; j++) v[j] = 1.0 / (j + 1), g[j] = 0;
}

/* This rank's share of a core while every rank computes at once (after a barrier): CPU time
 * of the thread over wall time; and the fewest tasks ready to run seen meanwhile (three looks).
 * The share alone misleads: a rank that has just slept (start-up, reading its data) is owed
 * time by the scheduler and gets a whole core for a while beside busy loops.  The spin is a
 * synthetic row's work, so it also gives the machine's seconds per entry (wall[0] over
 * wall[1] entries; dpo__wait_measure's, without a window of its own). */
static double dpo__share(int *running, double wall[2]) {
  double w0 = dpo__clock(CLOCK_MONOTONIC), c0 = dpo__clock(CLOCK_THREAD_CPUTIME_ID), w = w0;
  double v[DPO__ROW_W], g[DPO__ROW_W];
  volatile double sink = 0;
  dpo__row_init(v, g);
  int64_t rows = 0;
  int look = 0, r = dpo__running();
  *running = r;
  while (w - w0 < DPO__PROBE_S) {
    sink += dpo__row_work(v, g, 16);
    rows += 16;
    w = dpo__clock(CLOCK_MONOTONIC);
    if (look < 2 && w - w0 >= (look + 1) * DPO__PROBE_S / 2) {
      look++;
      r = dpo__running();
      if (r < *running) *running = r;
    }
  }
  double c = dpo__clock(CLOCK_THREAD_CPUTIME_ID) - c0;
  wall[0] = w - w0, wall[1] = (double)rows * DPO__ROW_W;
  (void)sink;
  return w > w0 ? c / (w - w0) : 1.0;
}

int dpo__wait_env(void) {
  const char *e = getenv("DPOPT_WAIT");
  if (!e || !*e || !strcmp(e, "auto")) return 0;
  if (!strcmp(e, "spin")) return 1;
  if (!strcmp(e, "sleep")) return 2;
  return -1;
}

int dpo__wait_policy(MPI_Comm comm) {
  dpo__wait_attr_t *v = NULL;
  int flag = 0;
  if (dpo__wait_key == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL) return DPO__WAIT_SPIN;
  if (MPI_Comm_get_attr(comm, dpo__wait_key, &v, &flag) != MPI_SUCCESS || !flag || !v)
    return DPO__WAIT_SPIN;
  return ((dpo__wait_attr_t *)v)->mode;
}

void dpo__wait_probed(MPI_Comm comm, dpo__wait_probe_t *p) {
  dpo__wait_attr_t *v = NULL;
  int flag = 0;
  memset(p, 0, sizeof *p);
  if (dpo__wait_key != MPI_KEYVAL_INVALID && comm != MPI_COMM_NULL &&
      MPI_Comm_get_attr(comm, dpo__wait_key, &v, &flag) == MPI_SUCCESS && flag && v)
    *p = v->p;
}

void dpo__node_ranks(MPI_Comm comm, int *lrank, int *lsize) {
  MPI_Comm node = MPI_COMM_NULL;
  *lrank = 0, *lsize = 1;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS ||
      node == MPI_COMM_NULL)
    return;
  MPI_Comm_rank(node, lrank);
  MPI_Comm_size(node, lsize);
  MPI_Comm_free(&node);
}

/* Auto: whether any rank's cores are shared, and rank 0's honest word about it. */
static int dpo__wait_detect(MPI_Comm comm, int rank, int *mode, dpo__wait_probe_t *p) {
  int lsize = 1;
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    node = MPI_COMM_NULL;
  if (node != MPI_COMM_NULL) MPI_Comm_size(node, &lsize);
  int cpus = dpo__node_cpus(node);
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  DPO_MPI_CHECK(MPI_Barrier(comm));
  int running = -1;
  double wall[2] = {0, 0}; /* no need to measure the obvious */
  double share = lsize > cpus ? 1.0 : dpo__share(&running, wall);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  /* max of {shared, ranks on the node, -cores, -share in permille, ready tasks} at once */
  int mine[5] = {lsize > cpus, lsize, -cpus, -(int)(share * 1000), running}, all[5];
  if (lsize <= cpus && (share < DPO__SHARE_MIN || (online > 0 && running > online))) mine[0] = 2;
  DPO_MPI_CHECK(MPI_Allreduce(mine, all, 5, MPI_INT, MPI_MAX, comm));
  /* every rank's walls over all their entries (dpo__wait_measure's reason) */
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, wall, 2, MPI_DOUBLE, MPI_SUM, comm));
  if (all[0] != 1) { /* every rank probed */
    p->probed = 1, p->shared = all[0] == 2;
    p->share = -all[3] / 1000.0, p->ready = all[4], p->cores = (int)online;
    p->entry_s = wall[1] > 0 ? wall[0] / wall[1] : 0;
  }
  if (rank == 0 && all[0] == 1)
    dpo_msg("warning: more ranks than cores (up to %d ranks on a node, as few as %d cores for "
            "them): waiting ranks sleep instead of spinning (DPOPT_WAIT=spin to spin)",
            all[1], -all[2]);
  else if (rank == 0 && all[0] == 2)
    dpo_msg("warning: the cores are shared with other work (while all ranks computed, a rank "
            "got %.2f of a core and %d tasks were ready to run on %ld cores): waiting ranks "
            "sleep instead of spinning (DPOPT_WAIT=spin to spin)", -all[3] / 1000.0, all[4],
            sysconf(_SC_NPROCESSORS_ONLN));
  *mode = all[0] ? DPO__WAIT_SLEEP : DPO__WAIT_SPIN;
  return DPO_OK;
}

int dpo__wait_setup(MPI_Comm comm) {
  int rank, size, *v = NULL, flag = 0;
  DPO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DPO_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (dpo__wait_key == MPI_KEYVAL_INVALID)
    DPO_MPI_CHECK(MPI_Comm_create_keyval(dpo__attr_copy, dpo__attr_free, &dpo__wait_key, NULL));
  /* set on every rank at once, so present on all or on none */
  DPO_MPI_CHECK(MPI_Comm_get_attr(comm, dpo__wait_key, &v, &flag));
  if (flag) return DPO_OK;
  int env = rank == 0 ? dpo__wait_env() : 0;
  DPO_MPI_CHECK(MPI_Bcast(&env, 1, MPI_INT, 0, comm));
  if (env < 0 && rank == 0)
    return dpo_err(DPO_EINVAL, "DPOPT_WAIT=%s: unknown wait policy (auto, spin or sleep)",
                   getenv("DPOPT_WAIT"));
  if (env < 0) return dpo_err(DPO_EINVAL, "DPOPT_WAIT: unknown wait policy (rank 0's)");
  dpo__wait_attr_t *a = calloc(1, sizeof *a);
  int rc = dpo_agree(comm, a ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory"));
  if (rc) {
    free(a);
    return rc;
  }
  a->mode = env == 2 ? DPO__WAIT_SLEEP : DPO__WAIT_SPIN;
  a->refs = 1;
  if (env == 0 && size > 1 && (rc = dpo__wait_detect(comm, rank, &a->mode, &a->p))) {
    free(a);
    return rc;
  }
  DPO_MPI_CHECK(MPI_Comm_set_attr(comm, dpo__wait_key, a));
  return DPO_OK;
}

/* Polls rq: first spinning for DPO__SPIN_S, then with sleeps doubling from DPO__SLEEP0_NS up
 * to top_ns between tests. */
static int dpo__wait_poll(MPI_Request *rq, long top_ns) {
  int done = 0;
  DPO_MPI_CHECK(MPI_Test(rq, &done, MPI_STATUS_IGNORE));
  double t0 = done ? 0.0 : dpo__clock(CLOCK_MONOTONIC);
  while (!done && dpo__clock(CLOCK_MONOTONIC) - t0 < DPO__SPIN_S)
    DPO_MPI_CHECK(MPI_Test(rq, &done, MPI_STATUS_IGNORE));
  /* then sleeps that double up to top_ns: a wait of t costs at most about 2t */
  long ns = DPO__SLEEP0_NS;
  while (!done) {
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    if (ns < top_ns) ns = 2 * ns < top_ns ? 2 * ns : top_ns;
    DPO_MPI_CHECK(MPI_Test(rq, &done, MPI_STATUS_IGNORE));
  }
  return DPO_OK;
}

int dpo__wait_req(MPI_Request *rq) { return dpo__wait_poll(rq, DPO__SLEEP1_NS); }

/* A rank that waits a whole solve wakes 200 times a second at most, not 2000: each wake-up
 * takes a time slice from the rank that works beside it on a shared core. */
int dpo__wait_long(MPI_Request *rq) { return dpo__wait_poll(rq, DPO__SLEEPL_NS); }

int dpo__wait_gate(MPI_Comm comm) {
  if (dpo__wait_policy(comm) != DPO__WAIT_SLEEP) return DPO_OK;
  MPI_Request rq;
  DPO_MPI_CHECK(MPI_Ibarrier(comm, &rq));
  return dpo__wait_req(&rq);
}

/* Without the probe's figures (a forced policy): the probe's computation, every rank at once
 * after a barrier; seconds per entry and the least share of a core. */
static int dpo__wait_work(MPI_Comm comm, dpo__wait_costs_t *c) {
  double wall[2];
  int ready;
  DPO_MPI_CHECK(MPI_Barrier(comm));
  double share = dpo__share(&ready, wall);
  /* the ranks' walls over their entries together: one rank descheduled for the whole window
   * (it happens under a load) would otherwise stand for every step */
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, wall, 2, MPI_DOUBLE, MPI_SUM, comm));
  DPO_MPI_CHECK(MPI_Allreduce(&share, &c->share, 1, MPI_DOUBLE, MPI_MIN, comm));
  c->entry_s = wall[0] / wall[1];
  return DPO_OK;
}

int dpo__wait_measure(MPI_Comm comm, dpo__wait_costs_t *c) {
  int rc = dpo__wait_setup(comm), size = 1;
  if (rc) return rc;
  DPO_MPI_CHECK(MPI_Comm_size(comm, &size));
  memset(c, 0, sizeof *c);
  c->policy = dpo__wait_policy(comm);
  double v[DPO__ROW_W], g[DPO__ROW_W];
  volatile double sink = 0;
  dpo__row_init(v, g);
  dpo__wait_probe_t p;
  dpo__wait_probed(comm, &p);
  if (p.probed && p.entry_s > 0) { /* the probe computed already: its figures */
    c->share = p.share, c->entry_s = p.entry_s;
  } else if ((rc = dpo__wait_work(comm, c))) {
    return rc;
  }
  /* meetings as a step has them: some work (about 50 us at the rate just measured; rank 0
   * twice that, as it charges the ledger and keeps the trace while the others wait), then one
   * collective of a few doubles behind the comm's wait, for DPO__MEET_S of rank 0's clock
   * (its flag rides in the collective), long enough to span several of the scheduler's time
   * slices.  A meeting's cost is what rank 0, the last to arrive, waits in it for the others
   * to wake and answer: under a load, a waiting rank that slept finds its core taken.  The
   * mean over the rounds, rank 0's */
  int64_t wrows = (int64_t)(50e-6 / (c->entry_s * DPO__ROW_W)) + 1;
  int rank = 0;
  DPO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  if (rank == 0) wrows *= 2;
  double meet = 0, m0 = dpo__clock(CLOCK_MONOTONIC);
  int rounds = 0;
  for (double y = 0; size > 1 && y == 0; rounds++) {
    sink += dpo__row_work(v, g, wrows);
    double t0 = dpo__clock(CLOCK_MONOTONIC);
    double x = rounds >= 7 && t0 - m0 >= DPO__MEET_S ? 1.0 : 0.0;
    if (c->policy == DPO__WAIT_SLEEP) {
      MPI_Request rq;
      DPO_MPI_CHECK(MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, comm, &rq));
      if ((rc = dpo__wait_req(&rq))) return rc;
    } else {
      DPO_MPI_CHECK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, comm));
    }
    meet += dpo__clock(CLOCK_MONOTONIC) - t0;
  }
  if (rounds) meet /= rounds;
  DPO_MPI_CHECK(MPI_Bcast(&meet, 1, MPI_DOUBLE, 0, comm));
  c->meet_s = meet;
  (void)sink;
  return DPO_OK;
}
