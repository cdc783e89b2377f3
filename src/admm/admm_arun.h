/* The admm job's settings and state, shared by admm_run.c (settings, data, consensus ADMM,
 * the job's life cycle) and admm_dp.c (DP-ADMM / DP-AccADMM and their trust modes).
 * Internal to src/admm/. */
#ifndef DPO_ADMM_ARUN_H
#define DPO_ADMM_ARUN_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/admm.h"
#include "dpopt/budget.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "admm/admm_job.h"

/* this rank's party's own data file and budget store (admm_pstore.c) */
typedef struct {
  const char *data, *store; /* party.K.data / parties.data, party.K.budget_store / ...: the
                             * party table's (dpo__arun_t.pt), or NULL */
  dpo_budget_t *bud;  /* the store, opened and locked on the party's rank before loading */
  int reserved;       /* reserved under run_id: to settle */
  char run_id[65];
} dpo__arun_pstore_t;

typedef struct {
  const char *meth, *mname, *reg, *xup, *graph, *gfrom, *srule, *journal, *jkey, *testp;
  int notrace; /* secagg / local: the trace has no rows (they show exact training sums) */
  const char *acct; /* privacy.accountant: pld (default, as in dpopt train) | auto | rdp */
  const dpo_privacy_spec_t *spec; /* the caller's (borrowed) */
  const dpo_config_t *cfg;        /* the caller's (borrowed): the plan's keys (secagg) */
  double lambda, rho, alpha, inrel, sigfix, eta, eabs, erel, eps, delta, mu, clip, b2, gth;
  int64_t maxit, tev, seed;
  int adapt, priv, seeded;
  int64_t restart;
  const char *trust; /* privacy.trust: central | secagg (dpadmm / dpaccadmm only) */
  int64_t collude;
  int secagg, local;
  int resuming;     /* --resume: every party's guard reopens its own journal (secagg) */
  int64_t nparties; /* party accounts, one party per rank (0: none) */
  const char *pdir; /* secagg, local, ranks other than 0: this party's own run directory (its
                     * guard's journal; party.K.out or parties.out), the party table's */
  int rank, size;
  const char *store;  /* privacy.store: the data set's budget store */
  dpo_budget_t *bud;  /* rank 0: its handle, opened before the data are loaded */
  dpo_parties_t *pt;       /* the party table, one party a rank (dpo_parties_per_rank), owned */
  dpo__arun_pstore_t *ps; /* this party's own file and store (never NULL once read) */
} dpo__arun_t;

/* the parties' own noise streams (secagg), apart from rank 0's stream 0 */
#define DPO__ARUN_PARTY_STREAM 0x70000000ULL

struct dpo_admm_job {
  MPI_Comm comm;
  dpo__arun_t s;
  const char *data;
  dpo_model_t *m;
  dpo_load_opts_t lo;
  dpo_shard_t *sh, *te;
  double *x;
  int ckpt; /* checkpoints or a resume asked for (refused where they cannot be written) */
  dpo_admm_io_t *io;
  char journal[1100], ckpt_path[1100], cm[256];
  char *rep; /* rank 0: the report (memstream) */
  size_t rep_len;
  FILE *repf;
  dpo_admm_result_t res;
  /* the one-run audit's hooks (dpo_admm_job_set_audit; NULL in every other run) */
  dpo_admm_rows_fn audit_rows;
  dpo_release_fn audit_observe;
  void *audit_arg;
};

/* admm_dp.c: the result's privacy part from the ledger the run charged (rank 0); the data
 * set's budget store reserved under the journal's id once the ledger is open (collective;
 * rid[0] = 0 when nothing was reserved; a resumed run's as train's) and settled to what the
 * ledger composed; *head, the store's head of the journal, is closed after the ledger. */
void dpo__arun_spent(dpo_admm_job_t *j, const dpo_ledger_t *L, double sigma);
int dpo__arun_reserve(MPI_Comm comm, const dpo__arun_t *s, dpo_ledger_t *L, char rid[65],
                      dpo_budget_head_t **head);
void dpo__arun_settle(const dpo__arun_t *s, dpo_ledger_t *L, const char *rid);

/* admm_pstore.c, each party's own data file and budget store (secagg, local): read (not
 * collective, data-free: the party table built, one party a rank, as train's parties' keys
 * are read, this rank's file and store kept, the combinations refused that cannot hold; run
 * before the parties' run directories are checked), check (collective, before loading: the party's store opened, its file
 * registered and unchanged, the fit checked under its lock; writes nothing), reserve
 * (collective, once the run id is agreed and before the first release; resuming, against the
 * party's own journal), settle (not collective, once the party's journal is closed: to what
 * it holds), free. */
int dpo__arun_pstore_read(const dpo_config_t *cfg, dpo__arun_t *s);
int dpo__arun_pstore_check(MPI_Comm comm, dpo__arun_t *s);
int dpo__arun_pstore_reserve(MPI_Comm comm, const dpo__arun_t *s, const dpo_ledger_t *L,
                             const char *run_id);
void dpo__arun_pstore_settle(const dpo__arun_t *s, const dpo_ledger_t *L);
void dpo__arun_pstore_free(dpo__arun_t *s);

/* The linearized methods (admm, accadmm, dpadmm, dpaccadmm) and the settings they need,
 * checked before the run directory is claimed and anything is loaded or noised: *dp private,
 * *acc accelerated.  Not collective (admm_dp.c). */
int dpo__arun_dp_check(const dpo__arun_t *s, int *dp, int *acc);
/* admm_dp.c, collective: dpadmm / dpaccadmm (noised) and admm / accadmm (NON-PRIVATE). */
int dpo__arun_dp(dpo_admm_job_t *j, MPI_Comm comm, const dpo__arun_t *s,
                 const dpo_load_opts_t *lo, dpo_model_t *m, const dpo_shard_t *sh,
                 const dpo_shard_t *te, double *x, FILE *rep, int *stop);

/* admm_dp.c, for every multi-party trust mode (secagg, local; consensus ADMM's local too):
 * party_accounts (collective): rank 0's ledger keeps one account a rank, each with the run's
 * budget, and (a new run, not secagg) journals the trust mode; run_id (collective, before the
 * plan): a new run's id from every rank, a resumed one's from the journals (each party's rank
 * takes its own journal's); plan (collective): the parties agree on the plan's digest
 * (dpo_plan_agree); guard (not collective, ranks other than 0): the party's guard on the
 * sum's L2 sensitivity 2 clip, journalled in its own run directory, attached to the oracle
 * orc (NULL: none, the caller consults it). */
struct dpo_guard;
struct dpo_oracle;
int dpo__arun_party_accounts(MPI_Comm comm, const dpo__arun_t *s, dpo_ledger_t *L, int resumed);
int dpo__arun_run_id(MPI_Comm comm, const dpo__arun_t *s, dpo_ledger_t *L, char id[65]);
int dpo__arun_plan(MPI_Comm comm, const dpo__arun_t *s, int64_t d, const char *run_id,
                   unsigned char digest[32]);
int dpo__arun_guard(const dpo__arun_t *s, int32_t d, const char *run_id, struct dpo_guard **g,
                    struct dpo_oracle *orc);

/* cons_ckpt.c: consensus ADMM's checkpoints, each rank's part saved by itself (admm_impl.h,
 * dpo__cons_ckpt_t).  save is collective (every part, then rank 0's header commits them);
 * resume_begin (collective) reads rank 0's header, refuses another rank count and checks the
 * journal (rank 0), and tells every rank the iteration; load reads this rank's part;
 * ckpt_remove deletes this rank's parts once the run is complete (rank 0's is the driver's). */
struct dpo__cons_state; /* admm_impl.h */
typedef struct {
  MPI_Comm comm;
  int rank, size;
  const char *dir;        /* RUN */
  const dpo_ledger_t *L;  /* rank 0, private runs */
  dpo_rng_t *rng;         /* this rank's noise stream (private runs) */
  int64_t last;           /* the iteration of this rank's latest part (-1: none) */
  int64_t resume_it;      /* resuming: the checkpoint's iteration */
  int64_t after;          /* rank 0, resuming: the journal's charges if more than the
                           * checkpoint's (they stay spent), else 0 */
} dpo__cons_io_t;
int dpo__cons_save(void *arg, const struct dpo__cons_state *st);
int dpo__cons_resume_begin(dpo__cons_io_t *io);
int dpo__cons_load(void *arg, struct dpo__cons_state *st);
void dpo__cons_ckpt_remove(const char *dir, int rank);

#endif
