/* Private: how ranks wait for each other in the oracle's collectives.
 *
 * Open MPI waits by spinning: a rank blocked in MPI_Bcast or MPI_Reduce polls its queues at
 * full speed.  That is the fastest wait while every rank has a core of its own, and a
 * collapse when the cores are shared (more ranks than cores, or other work on them): the
 * waiting rank burns the time slice the rank it waits for needs, and ranks that meet several
 * times per step wait a scheduler period at each meeting.  On a communicator set up with
 * dpo__wait_setup, a rank that would wait in one of the oracle's collectives first meets the
 * others at a non-blocking barrier it tests with a growing sleep in between (dpo__wait_gate),
 * then runs the same blocking collective as before, which no longer waits: the results are
 * the same bits under either policy.
 *
 * Policy (environment DPOPT_WAIT, read on rank 0): auto (default) sleeps when the ranks of
 * some node outnumber the cores they may run on, or when, while every rank spins for 10 ms, a
 * rank gets less than 0.8 of a core or more tasks are ready to run than the machine has cores
 * (/proc/loadavg); then rank 0 says so once.  The spin is a synthetic row's work, whose rate
 * dpo__wait_measure reuses.  spin and sleep force a
 * policy.  One rank runs always spin: nothing waits.
 */
#ifndef DPO_COMM_WAIT_H
#define DPO_COMM_WAIT_H

#include <mpi.h>

enum { DPO__WAIT_SPIN = 0, DPO__WAIT_SLEEP = 1 };

/* This process's DPOPT_WAIT: -1 unknown, 0 auto (or unset), 1 spin, 2 sleep.  The tool checks
 * it before a command writes anything; dpo__wait_setup uses rank 0's. */
int dpo__wait_env(void);

/* Decides the policy of comm (once: a communicator already set up keeps its policy) and
 * stores it on comm.  Collective.  DPO_EINVAL (on every rank) for an unknown DPOPT_WAIT. */
int dpo__wait_setup(MPI_Comm comm);

/* The policy of comm: DPO__WAIT_SPIN unless dpo__wait_setup chose sleep.  Not collective. */
int dpo__wait_policy(MPI_Comm comm);

/* This rank's place on its node: its rank among comm's ranks on the same node and their
 * number (MPI_COMM_TYPE_SHARED); 0 and 1 when MPI cannot say.  Collective. */
void dpo__node_ranks(MPI_Comm comm, int *lrank, int *lsize);

/* Before a collective where ranks may wait long: with the sleep policy, a non-blocking
 * barrier waited for by sleeping; nothing with spin.  Collective (every rank of comm calls it
 * at the same point); DPO_OK or DPO_EMPI. */
int dpo__wait_gate(MPI_Comm comm);

/* Completes a non-blocking request by polling it, first for a few microseconds, then with a
 * growing sleep in between (the sleeping wait of the gate).  DPO_OK or DPO_EMPI. */
int dpo__wait_req(MPI_Request *rq);

/* The same for a wait of seconds (a rank waiting while rank 0 solves alone): the sleeps grow
 * to 5 ms, so the waiting rank wakes at most 200 times a second.  DPO_OK or DPO_EMPI. */
int dpo__wait_long(MPI_Request *rq);

/* What auto's probe saw (dpo__wait_setup): probed 0 where it did not run (a forced policy, one
 * rank, a node with more ranks than cores). */
typedef struct {
  int probed;
  int shared;     /* the cores are shared: a share under 0.8 or more ready tasks than cores */
  double share;   /* the least share of a core a rank got while every rank computed */
  int ready;      /* the most tasks ready to run seen (/proc/loadavg), -1 unread */
  int cores;      /* the machine's cores online */
  double entry_s; /* seconds per entry of the probe's synthetic rows (dpo__wait_costs_t) */
} dpo__wait_probe_t;

/* comm's probe figures (all zero before dpo__wait_setup).  Not collective. */
void dpo__wait_probed(MPI_Comm comm, dpo__wait_probe_t *p);

/* What a step of work and a meeting of comm's ranks cost now (dpo__wait_measure). */
typedef struct {
  double share;   /* the least share of a core a rank got while every rank computed */
  double entry_s; /* seconds per entry of a row's dot product and axpy (all ranks' walls over
                   * all their entries) */
  double meet_s;  /* seconds one meeting of the ranks costs beyond their work (0 at 1 rank) */
  int policy;     /* comm's wait policy (dpo__wait_setup), under which the meetings ran */
} dpo__wait_costs_t;

/* Sets comm's wait policy up (dpo__wait_setup), then takes the work's figures from its probe
 * (without one, every rank computes a synthetic row's work for 10 ms at once), and for 8 ms
 * the ranks meet as a step's meetings do.  Nothing of any data is touched: the figures are
 * the machine's load.  The same figures on every rank.
 * Collective; DPO_OK, DPO_EINVAL (DPOPT_WAIT) or DPO_EMPI. */
int dpo__wait_measure(MPI_Comm comm, dpo__wait_costs_t *c);

#endif
