/* DP-ADMM / DP-AccADMM (Xu et al. 2020, Alg. 2 / 3) and their NON-PRIVATE references for the
 * admm job (admm_arun.h): the PUBLIC graph, the ledger and budget store, the trust modes
 * (central, local, secagg with the parties' plan, keys and guards), the trace, checkpoints
 * and the report, each a step of dpo__arun_dp. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "config.h" /* PACKAGE_VERSION: the plan names the code that encodes */

#include "dpopt/admm.h"
#include "dpopt/budget.h"
#include "dpopt/comm.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "privacy/budget_run.h"
#include "privacy/guard.h" /* the party guard (secagg) */
#include "admm/admm_arun.h"

typedef struct {
  dpo_oracle_t *o;
  const dpo_admm_A_t *A;
  double lambda, t0;
  int every, heldout;
  FILE *f;
  double *Ax;
} dpo__arun_trace_t;

/* the result's privacy part, from the ledger the run charged (rank 0) */
void dpo__arun_spent(dpo_admm_job_t *j, const dpo_ledger_t *L, double sigma) {
  j->res.sigma = sigma;
  if (L && j->s.rank == 0) dpo_ledger_spent(L, &j->res.spent_eps, &j->res.spent_delta);
}

/* The data set's budget store: the run's whole budget reserved under its journal's id once
 * the ledger is open (before the first release), as dpopt train reserves it: a resumed run's
 * open reservation is kept, a settled one reserved whole again, once its journal reaches the
 * store's head for it (dpo__budget_run_reserve); rid[0] = 0 when nothing was reserved. */
int dpo__arun_reserve(MPI_Comm comm, const dpo__arun_t *s, dpo_ledger_t *L, char rid[65],
                      dpo_budget_head_t **head) {
  int rc = DPO_OK;
  rid[0] = '\0';
  *head = NULL;
  if (s->bud && s->rank == 0)
    rc = dpo__budget_run_reserve(s->bud, s->store, s->jkey, L, s->journal, s->eps, s->delta,
                                 "admm", s->resuming, rid, head);
  return dpo_agree(comm, rc);
}

/* ... and settled to what the ledger composed when the run ends (else it stays spent whole) */
void dpo__arun_settle(const dpo__arun_t *s, dpo_ledger_t *L, const char *rid) {
  dpo_ledger_parts_t p;
  if (rid[0] && s->rank == 0 && (dpo_ledger_parts(L, &p) || dpo_budget_settle(s->bud, rid, &p)))
    fprintf(stderr, "dpopt: warning: budget store %s: the run's reservation stays spent whole: "
            "%s\n", s->store, dpo_errmsg());
}

/* rank 0, after each released iterate: NON-PRIVATE training objective, held-out accuracy */
static void dpo__arun_trace(void *arg, int64_t t, const double *x, const double *y) {
  dpo__arun_trace_t *tr = arg;
  if (!tr->f || (t % tr->every) != 0) return;
  double el = MPI_Wtime() - tr->t0, loss = NAN, acc = NAN, tl = NAN, tacc = NAN;
  dpo_oracle_eval_metric(tr->o, x, 0, &loss, &acc);
  if (tr->heldout) dpo_oracle_eval_metric(tr->o, x, 1, &tl, &tacc);
  dpo_admm_A_mul(tr->A, x, tr->Ax);
  double F = loss + tr->lambda * cblas_dasum(tr->A->p, tr->Ax, 1);
  fprintf(tr->f, "%lld,%.6f,%.17g,%.6f,%.6f\n", (long long)t, el, F, acc, tacc);
  (void)y;
}

/* A = [W; I] from the PUBLIC graph (admm.graph, or built from admm.graph_from), else I */
static int dpo__arun_graph(MPI_Comm comm, const dpo__arun_t *s, dpo_load_opts_t lo, int32_t d,
                           dpo_admm_A_t **A) {
  dpo_shard_t *pubsh = NULL;
  int rc;
  if (s->gfrom) {
    lo.labels = DPO_LABELS_BINARY;
    if (!(rc = dpo_shard_load(comm, s->gfrom, &lo, &pubsh)))
      rc = dpo_admm_graph_from_public(comm, pubsh, s->gth, 4 * d, s->graph, A);
  } else if (s->graph) {
    rc = dpo_agree(comm, dpo_admm_graph_load(s->graph, d, A));
  } else {
    rc = dpo_agree(comm, dpo_admm_A_identity(d, A));
  }
  dpo_shard_destroy(pubsh);
  return rc;
}

/* secagg and local, ranks other than 0 (one party per rank): the party's guard prices every announced
 * release from its own settings (the sum's L2 sensitivity 2 clip, replace-one, its own budget
 * and accountant) and charges its own account -- journalled in the party's own run directory
 * as PARTYDIR/ledger.partyK.jsonl (dpo__arun_party_dir), made now that the plan is agreed --
 * before it contributes (privacy/guard.h).  Resuming, the journal is reopened: its charges
 * stay spent and the redone releases are charged again. */
int dpo__arun_guard(const dpo__arun_t *s, int32_t d, const char *run_id, dpo_guard_t **g,
                    dpo_oracle_t *orc) {
  const double S2 = 2 * s->clip;
  char path[1100];
  dpo_guard_spec_t sp = {s->size, (int)s->collude, s->rank, d, S2 * sqrt((double)d), S2, s->eps,
                         s->delta, s->acct, DPO_NEIGHBOURS_REPLACE_ONE, 0, NULL, 0, s->jkey,
                         run_id, 0, 0, 0};
  /* local: the party prices the Gaussian it adds to its own sum (dpadmm.c's claim) */
  if (s->local) sp.trust = DPO_TRUST_LOCAL, sp.gaussian = 1, sp.nranks = s->size;
  if (s->pdir) {
    int rc = dpo_mkdirs(s->pdir);
    if (!rc) rc = dpo_guard_journal_check(s->pdir, s->rank, s->resuming, path, sizeof path);
    if (rc) return rc;
    sp.journal = path;
    sp.resume = s->resuming;
  }
  int rc = dpo_guard_create(&sp, g);
  return rc || !orc ? rc : dpo_oracle_set_guard(orc, *g);
}

/* Collective (secagg), before the plan: the run's id, as dpopt train's (dpo__run_priv_run_id,
 * run_priv.c).  A new run's is every rank's 32 random bytes hashed (dpo_secagg_run_id: no
 * party chooses it), journalled by the coordinator ("run_id" line) and by each party's guard
 * in its own new journal.  A resumed run's is the coordinator's journal's, except on each
 * party's rank, where it is the party's own journal's: a coordinator that resumes another run
 * than the one a party took part in has another plan ("~run") and every such party stops. */
int dpo__arun_run_id(MPI_Comm comm, const dpo__arun_t *s, dpo_ledger_t *L, char id[65]) {
  int rc = DPO_OK;
  char ev[96], path[1100], own[65];
  id[0] = '\0';
  if (!s->resuming) {
    if ((rc = dpo_secagg_run_id(comm, id))) return rc;
    snprintf(ev, sizeof ev, "run_id %s", id);
    return dpo_agree(comm, s->rank == 0 ? dpo_ledger_party_event(L, ev, -1, -1) : DPO_OK);
  }
  if (s->rank == 0 && !(rc = dpo_journal_run_id(s->journal, id)) && !id[0])
    rc = dpo_err(DPO_EFORMAT, "%s names no run id (a journal of an older dpopt): a multi-party "
                 "run resumes only from a journal that does", s->journal);
  if ((rc = dpo_agree(comm, rc))) return rc;
  MPI_Bcast(id, 65, MPI_CHAR, 0, comm);
  if (s->rank != 0 && s->pdir &&
      !(rc = dpo_guard_journal_check(s->pdir, s->rank, 1, path, sizeof path)) &&
      !(rc = dpo_journal_run_id(path, own))) {
    if (!own[0])
      rc = dpo_err(DPO_EFORMAT, "party %d: its journal %s names no run id (a journal of an "
                   "older dpopt): it cannot tell which run it took part in", s->rank, path);
    else memcpy(id, own, sizeof own);
  }
  return dpo_agree(comm, rc);
}

/* Collective (secagg, local), before the first release: the parties agree on the plan by
 * digest, as dpopt train's do (privacy/guard.h: the admm., privacy., parties., party. and
 * model. keys, the schema, the seed, the ranks, d, the trust and the encoding). */
int dpo__arun_plan(MPI_Comm comm, const dpo__arun_t *s, int64_t d, const char *run_id,
                   unsigned char digest[32]) {
  static const char *const pre[] = {"admm.", "privacy.", "parties.", "party.", "model."};
  char v[320];
  dpo_plantext_t *pl = dpo_plantext_new();
  dpo_plantext_config(pl, s->cfg, pre, (int)(sizeof pre / sizeof *pre));
  snprintf(v, sizeof v, "%d", s->size);
  dpo_plantext_add(pl, "~ranks", v);
  snprintf(v, sizeof v, "%lld", (long long)d);
  dpo_plantext_add(pl, "~dimension", v);
  if (s->secagg)
    snprintf(v, sizeof v, "secagg, %d parties (one a rank), collude %lld", s->size,
             (long long)s->collude);
  else
    snprintf(v, sizeof v, "local, %d parties (one a rank)", s->size);
  dpo_plantext_add(pl, "~trust", v);
  if (s->secagg)
    snprintf(v, sizeof v, "dpopt " PACKAGE_VERSION " admm secagg: fixed point, randomized "
             "rounding, words of 32 bits when dpo_secagg_word's public bound fits else 64, "
             "X25519 + ChaCha20 pairwise masks on the Harary graph against %lld corrupt ranks",
             (long long)s->collude);
  else if (!strcmp(s->meth, "consensus")) /* each agent's own message (consensus.c) */
    snprintf(v, sizeof v, "dpopt " PACKAGE_VERSION " admm consensus local: each rank's message "
             "x_i + u_i clipped to L2 norm clip, exact grid Gaussian noise of the sigma every "
             "party derives itself, in the clear");
  else /* the noise each party adds to its own sum (oracle.c), priced by its guard */
    snprintf(v, sizeof v, "dpopt " PACKAGE_VERSION " admm local: exact grid Gaussian noise on "
             "each rank's own sum, in the clear");
  dpo_plantext_add(pl, "~encoding", v);
  dpo_plantext_add(pl, "~run", run_id);
  char *plan = dpo_plantext_finish(pl);
  int rc = dpo_agree(comm, plan ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory"));
  if (!rc) rc = dpo_plan_agree(comm, plan, digest);
  free(plan);
  return rc;
}

/* Collective (secagg): the plan, then the pairwise keys, signed with the parties' identity keys
 * when every party lists one (party.K.public_key), and the mask graph against `collude` ranks
 * (one party per rank). */
static int dpo__arun_secagg(MPI_Comm comm, const dpo__arun_t *s, int64_t d, const char *run_id,
                            dpo_rng_t *prng, dpo_secagg_t **sa) {
  unsigned char digest[32];
  int rc = dpo__arun_plan(comm, s, d, run_id, digest);
  int *rp = rc ? NULL : malloc((size_t)s->size * sizeof *rp);
  if (!rc) rc = dpo_agree(comm, rp ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory"));
  for (int r = 0; r < s->size && !rc; r++) rp[r] = r;
  if (!rc) rc = dpo_plan_secagg(s->cfg, comm, s->size, rp, NULL, 1, prng, digest, sa);
  free(rp);
  if (!rc) rc = dpo_agree(comm, dpo_secagg_set_graph(*sa, (int)s->collude));
  return rc;
}

/* DP-ADMM's checkpoints: the file, the ledger and the stream they record */
typedef struct {
  dpo_admm_job_t *j;
  const dpo_ledger_t *L;
  const dpo_rng_t *rng;
} dpo__arun_save_t;

static int dpo__arun_save(void *arg, const dpo_dpadmm_state_t *st) {
  const dpo__arun_save_t *v = arg;
  return dpo__admm_ckpt_save(v->j->ckpt_path, v->j->s.meth, v->j->s.size, st, v->j->io->trace,
                             v->L, v->rng);
}

/* Collective, resuming under local trust: each party noises its own sum from its own stream,
 * which the checkpoint (rank 0's state) does not hold.  Unseeded, a party's OS-keyed stream is
 * new in every job, as under secagg.  Seeded (NOT private), each party's stream is moved on
 * past the draws of the `done` releases made before the checkpoint: each drew one Gaussian
 * vector of d values at scale n sigma on a party with rows (dpo__local_noise, oracle.c), and
 * a draw's consumption of the stream depends on neither the values nor the data, so drawing
 * that many onto zeros leaves the stream where the uninterrupted run's was.  sigma is the
 * checkpoint's (public: every charge in the journal names it). */
static int dpo__arun_local_replay(dpo_admm_job_t *j, dpo_oracle_t *orc, dpo_rng_t *prng,
                                  const dpo_dpadmm_state_t *rs, int64_t done) {
  double sigma = j->s.rank == 0 ? rs->sigma : 0.0;
  MPI_Bcast(&sigma, 1, MPI_DOUBLE, 0, j->comm);
  if (!prng || !dpo_rng_is_seeded(prng) || j->sh->n < 1) return dpo_agree(j->comm, DPO_OK);
  const int32_t d = dpo_oracle_dim(orc);
  const double scale = (double)dpo_oracle_nglobal(orc) * sigma;
  double *z = calloc((size_t)(d ? d : 1), sizeof *z);
  int rc = z ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  for (int64_t r = 0; r < done && !rc; r++) {
    memset(z, 0, (size_t)d * sizeof *z);
    rc = dpo_mech_gaussian(prng, scale, z, d);
  }
  free(z);
  return dpo_agree(j->comm, rc);
}

/* Collective: checkpoints (--checkpoint-every, run.stop_after, the stop flag) and, resuming,
 * rank 0's state from RUN/checkpoint (checked against the journal: rule of dpopt/optim.h) */
static int dpo__arun_ckpt_opts(dpo_admm_job_t *j, int32_t p, dpo__arun_save_t *sv,
                               dpo_dpadmm_opts_t *o, dpo_dpadmm_state_t *rs, dpo_secagg_t *sa,
                               dpo_oracle_t *orc, dpo_rng_t *prng) {
  dpo_admm_io_t *io = j->io;
  o->stop = io->stop;
  if (!j->ckpt && !io->stop) return DPO_OK;
  o->save = dpo__arun_save;
  o->save_arg = sv;
  o->ckpt_every = io->ckpt_every;
  o->stop_after = io->stop_after;
  if (!io->resumed) return DPO_OK;
  int rc = DPO_OK;
  if (j->s.rank == 0)
    rc = dpo__admm_ckpt_load(j->ckpt_path, j->s.meth, j->s.size, j->sh->d, p, rs, io->trace,
                             sv->L, (dpo_rng_t *)sv->rng);
  if ((rc = dpo_agree(j->comm, rc))) return rc;
  /* secagg: a seeded run's shares are drawn by release number, so the resumed run continues
   * the uninterrupted one's draws (every rank learns the count: public, the plan's) */
  int64_t done = j->s.rank == 0 ? rs->releases : 0;
  MPI_Bcast(&done, 1, MPI_INT64_T, 0, j->comm);
  if (sa && (rc = dpo_agree(j->comm, dpo_secagg_seeded_releases(sa, (uint64_t)done)))) return rc;
  if (j->s.local && (rc = dpo__arun_local_replay(j, orc, prng, rs, done))) return rc;
  io->accepted = 1;
  if (j->s.rank == 0)
    dpo_msg("resuming %s at iteration %lld", io->dir, (long long)rs->it + 1);
  o->resumed = 1;
  o->resume = rs;
  return DPO_OK;
}


/* The resources of one DP-ADMM run, released together by dpo__arun_res_free. */
typedef struct {
  dpo_oracle_t *orc;
  dpo_admm_A_t *A;
  dpo_ledger_t *L;
  dpo_rng_t *rng, *prng;
  dpo_secagg_t *sa;
  dpo_guard_t *guard;
  double *Ax;
  char rid[65];
  char run_id[65]; /* secagg: the run's id (dpo__arun_run_id) */
  dpo_budget_head_t *head; /* the store's head of the journal (closed after it) */
} dpo__arun_res_t;

static void dpo__arun_res_free(const dpo__arun_t *s, dpo__arun_res_t *r) {
  free(r->Ax);
  dpo_oracle_destroy(r->orc);
  dpo_guard_destroy(r->guard); /* the party's journal closed: what it holds is what ran */
  dpo__arun_pstore_settle(s, r->L);
  dpo_secagg_destroy(r->sa);
  dpo_rng_destroy(r->prng);
  dpo_admm_A_destroy(r->A);
  dpo__arun_settle(s, r->L, r->rid);
  dpo_ledger_close(r->L);
  dpo_budget_head_close(r->head);
  dpo_rng_destroy(r->rng);
}

int dpo__arun_dp_check(const dpo__arun_t *s, int *dp, int *acc) {
  *dp = strcmp(s->meth, "dpadmm") == 0 || strcmp(s->meth, "dpaccadmm") == 0;
  *acc = strcmp(s->meth, "dpaccadmm") == 0 || strcmp(s->meth, "accadmm") == 0;
  if (!*dp && strcmp(s->meth, "admm") != 0 && strcmp(s->meth, "accadmm") != 0)
    return dpo_err(DPO_EINVAL, "--method: consensus | dpadmm | dpaccadmm | admm | accadmm (got '%s')", s->meth);
  /* before the oracle, which would refuse the unset clip (NaN) without saying which flag */
  if (*dp && (!(s->clip > 0) || !(s->eps > 0)))
    return dpo_err(DPO_EINVAL, "%s needs %s%s%s", s->meth,
                   s->clip > 0 ? "" : "a clip: --clip C > 0 (each example's gradient is clipped "
                                      "to L2 norm C)",
                   !(s->clip > 0) && !(s->eps > 0) ? " and " : "",
                   s->eps > 0 ? "" : "a budget: --eps E > 0");
  /* the default eta is set from the row bound once the data are loaded (dpo_admm_job_load) */
  if (!(s->eta > 0) && !(isfinite(s->b2) && s->b2 > 0))
    return dpo_err(DPO_EINVAL, "%s needs --eta or --row-l2-bound (a public smoothness bound)",
                   s->meth);
  return DPO_OK;
}

/* dpo_dpadmm_run's options from the settings (no ledger, streams or trust yet) */
static int dpo__arun_dp_opts(const dpo__arun_t *s, int dp, int acc, dpo_dpadmm_opts_t *o) {
  dpo_dpadmm_opts_default(o);
  o->accelerated = acc;
  o->lambda = s->lambda;
  o->rho = s->rho;
  o->eta = s->eta;
  o->T = s->maxit;
  o->noise = dp;
  o->clip = s->clip;
  o->eps = s->eps;
  o->delta = s->delta;
  o->mu = s->mu;
  o->restart = s->restart;
  if (strcmp(s->srule, "eq8") == 0) o->sigma_rule = DPO_DPADMM_SIGMA_EQ8;
  else if (strcmp(s->srule, "rdp") == 0) o->sigma_rule = DPO_DPADMM_SIGMA_RDP;
  else if (strcmp(s->srule, "ledger") == 0) o->sigma_rule = DPO_DPADMM_SIGMA_LEDGER;
  else return dpo_err(DPO_EINVAL, "--sigma-rule: eq8 | rdp | ledger (got '%s')", s->srule);
  o->sigma_fixed = s->sigfix;
  return DPO_OK;
}

/* Collective, private methods: the noise stream, the ledger (reopened when resuming: its
 * charges stay spent), the budget store's reservation and the party accounts. */
static int dpo__arun_dp_ledger(dpo_admm_job_t *j, MPI_Comm comm, const dpo__arun_t *s,
                               dpo__arun_res_t *r, dpo_dpadmm_opts_t *o) {
  int rc = DPO_OK;
  if (s->rank == 0) rc = dpo_rng_create(s->seeded, (uint64_t)s->seed, 0, &r->rng);
  rc = dpo_agree(comm, rc);
  if (!rc && (!(s->eps > 0) || !(s->clip > 0)))
    rc = dpo_err(DPO_EINVAL, "private methods need --eps > 0 and --clip > 0");
  if (!rc)
    rc = dpo_ledger_open_key(comm, s->eps, s->delta, s->journal, j->io->resumed, s->acct,
                             DPO_NEIGHBOURS_REPLACE_ONE, s->jkey, &r->L);
  if (!rc) rc = dpo__arun_reserve(comm, s, r->L, r->rid, &r->head);
  if (rc) return rc;
  o->rng = r->rng;
  o->ledger = r->L;
  if (s->nparties <= 0) return DPO_OK;
  if ((rc = dpo__arun_party_accounts(comm, s, r->L, j->io->resumed))) return rc;
  o->nparties = s->size;
  return DPO_OK;
}

int dpo__arun_party_accounts(MPI_Comm comm, const dpo__arun_t *s, dpo_ledger_t *L, int resumed) {
  int rc = DPO_OK;
  if (s->rank == 0) { /* party accounts: each party's budget is the run's */
    double *pe = malloc((size_t)s->size * sizeof *pe), *pd = malloc((size_t)s->size * sizeof *pd);
    if (!pe || !pd) rc = dpo_err(DPO_ENOMEM, "out of memory");
    for (int k = 0; k < s->size && !rc; k++) pe[k] = s->eps, pd[k] = s->delta;
    if (!rc) rc = dpo_ledger_set_parties(L, s->size, pe, pd);
    if (!rc && !s->secagg && !resumed) { /* a resumed journal holds it */
      char ev[400];
      snprintf(ev, sizeof ev, "trust %s: %s; one party per rank", s->local ? "local" : "central",
               dpo_trust_coordinator_sees(s->local ? DPO_TRUST_LOCAL : DPO_TRUST_CENTRAL));
      rc = dpo_ledger_party_event(L, ev, -1, -1);
    }
    free(pe);
    free(pd);
  }
  return dpo_agree(comm, rc);
}

/* Collective, private methods under trust local or secagg: each rank's own stream (apart
 * from rank 0's stream 0) for its noise, or for its rounding and noise share with the
 * pairwise keys and the parties' guards (secagg). */
static int dpo__arun_dp_trust(MPI_Comm comm, const dpo__arun_t *s, dpo__arun_res_t *r,
                              dpo_dpadmm_opts_t *o) {
  int rc;
  if (s->local) {
    unsigned char digest[32];
    rc = dpo_agree(comm, dpo_rng_create(s->seeded, (uint64_t)s->seed,
                                        DPO__ARUN_PARTY_STREAM + (uint64_t)s->rank, &r->prng));
    if (!rc) rc = dpo_agree(comm, dpo_oracle_set_noise_rng(r->orc, r->prng));
    /* no party takes the coordinator's word for its noise: the plan, then each party's guard
     * (as under secagg) */
    if (!rc) rc = dpo__arun_run_id(comm, s, r->L, r->run_id);
    if (!rc) rc = dpo__arun_plan(comm, s, dpo_oracle_dim(r->orc), r->run_id, digest);
    /* the parties' own stores, once the plan is agreed and before any party (re)opens its
     * journal: a refused resume writes nothing */
    if (!rc) rc = dpo__arun_pstore_reserve(comm, s, r->L, r->run_id);
    if (!rc && s->rank != 0)
      rc = dpo__arun_guard(s, dpo_oracle_dim(r->orc), r->run_id, &r->guard, r->orc);
    if ((rc = dpo_agree(comm, rc))) return rc;
    o->local_noise = 1;
  }
  if (!s->secagg) return DPO_OK;
  rc = dpo_agree(comm, dpo_rng_create(s->seeded, (uint64_t)s->seed,
                                      DPO__ARUN_PARTY_STREAM + (uint64_t)s->rank, &r->prng));
  if (!rc) rc = dpo__arun_run_id(comm, s, r->L, r->run_id);
  if (!rc) rc = dpo__arun_secagg(comm, s, dpo_oracle_dim(r->orc), r->run_id, r->prng, &r->sa);
  if (!rc) rc = dpo__arun_pstore_reserve(comm, s, r->L, r->run_id); /* as under local */
  if (!rc) rc = dpo_agree(comm, dpo_oracle_set_secagg(r->orc, r->sa));
  /* a seeded run draws each release's shares at its number's place (a resume moves it on) */
  if (!rc) rc = dpo_agree(comm, dpo_secagg_seeded_releases(r->sa, 0));
  if (!rc && s->rank != 0) rc = dpo__arun_guard(s, dpo_oracle_dim(r->orc), r->run_id, &r->guard, r->orc);
  if (!rc) rc = dpo_agree(comm, rc);
  if (!rc && s->rank == 0) {
    char ev[600];
    snprintf(ev, sizeof ev, "trust secagg, collude %lld of %d: %s; distributed discrete "
             "Gaussian (Kairouz-Liu-Steinke 2021 Thm 1, P - k = %lld honest shares), one "
             "party per rank", (long long)s->collude, s->size,
             dpo_trust_coordinator_sees(DPO_TRUST_SECAGG), (long long)(s->size - s->collude));
    rc = dpo_ledger_party_event(r->L, ev, -1, -1);
  }
  if ((rc = dpo_agree(comm, rc))) return rc;
  o->secagg_parties = s->size;
  o->secagg_collude = (int)s->collude;
  return DPO_OK;
}

/* Rank 0, after the run: the report lines and the result's objective and test metric (the
 * diagnostics are NON-PRIVATE; secagg / local withhold the training objective). */
static void dpo__arun_dp_report(dpo_admm_job_t *j, const dpo__arun_t *s, const dpo__arun_res_t *r,
                                const dpo_dpadmm_info_t *inf, const double *x, double el,
                                double loss, double ta, int dp, int acc, int te, FILE *rep) {
  const dpo_admm_A_t *A = r->A;
  double *ax = malloc((size_t)A->p * sizeof *ax);
  dpo_admm_A_mul(A, x, ax);
  fprintf(rep, "method      %s (%s)%s\n", s->meth, acc ? "Xu et al. 2020, Alg. 3" : "Xu et al. 2020, Alg. 2",
          dp ? (s->seeded ? " seeded: NOT private" : " private") : " NON-PRIVATE (no noise)");
  fprintf(rep, "iterations  %lld   time %.3f s   gamma %.6g   ||A'A|| %.6g   p %d\n",
          (long long)inf->iters, el, inf->gamma, inf->AtA_norm, A->p);
  if (acc) fprintf(rep, "restarts    %lld (every %lld iterations; 0 = Alg. 3 as written)\n",
                   (long long)inf->restarts, (long long)s->restart);
  if (!dp) fprintf(rep, "clip        none (the NON-PRIVATE reference solves the unclipped problem)\n");
  if (dp) {
    double se = NAN, sd = NAN;
    dpo_ledger_spent(r->L, &se, &sd);
    fprintf(rep, "sigma       %.6g (%s)   releases %lld   spent eps %.9g delta %.3g (%s "
            "accountant, bound %s)\n", inf->sigma, s->srule, (long long)inf->releases, se, sd,
            s->acct, dpo_ledger_bound(r->L) ? dpo_ledger_bound(r->L) : "-");
  }
  if (s->secagg)
    fprintf(rep, "trust       secagg, collude %lld of %d parties (one per rank); the training "
            "objective is withheld\n", (long long)s->collude, s->size);
  else if (s->local)
    fprintf(rep, "trust       local, %d parties (one per rank), each noising its own sum "
            "(sigma above: the total, sqrt(P) times one party's); the training objective is "
            "withheld\n", s->size);
  if (!s->secagg && !s->local)
    fprintf(rep, "objective   %.15g   (NON-PRIVATE: training data)\n",
            loss + s->lambda * cblas_dasum(A->p, ax, 1));
  if (te) fprintf(rep, "test        accuracy %.6f\n", ta);
  if (!s->secagg && !s->local) j->res.objective = loss + s->lambda * cblas_dasum(A->p, ax, 1);
  j->res.test_metric = ta;
  free(ax);
}

/* Collective: DP-ADMM / DP-AccADMM (noised) or ADMM / AccADMM (the NON-PRIVATE reference)
 * through dpo_dpadmm_run, with its ledger, trust, trace and checkpoints. */
int dpo__arun_dp(dpo_admm_job_t *j, MPI_Comm comm, const dpo__arun_t *s,
                 const dpo_load_opts_t *lo, dpo_model_t *m, const dpo_shard_t *sh,
                 const dpo_shard_t *te, double *x, FILE *rep, int *stop) {
  dpo__arun_res_t r = {0};
  dpo_dpadmm_state_t rs = {0};
  dpo__arun_save_t sv = {j, NULL, NULL};
  int dp, acc;
  int rc = dpo__arun_dp_check(s, &dp, &acc);
  if (rc) return rc;
  if ((rc = dpo__arun_graph(comm, s, *lo, sh->d, &r.A))) goto out;
  /* only the private methods clip: the non-private ADMM / AccADMM are the reference, the
   * solution of the problem itself (clipping would change the problem) */
  dpo_clip_t cl = {DPO_CLIP_L2, s->clip};
  if ((rc = dpo_oracle_create(comm, m, sh, dp ? &cl : NULL, &r.orc))) goto out;
  if (te && (rc = dpo_oracle_set_heldout(r.orc, te))) goto out;
  dpo_dpadmm_opts_t o;
  if ((rc = dpo__arun_dp_opts(s, dp, acc, &o))) goto out;
  o.observe = j->audit_observe; /* the one-run audit (dpo_admm_job_set_audit), else NULL */
  o.observe_arg = j->audit_arg;
  if (dp && ((rc = dpo__arun_dp_ledger(j, comm, s, &r, &o)) ||
             (rc = dpo__arun_dp_trust(comm, s, &r, &o))))
    goto out;
  dpo__arun_trace_t tr = {.o = r.orc, .A = r.A, .lambda = s->lambda,
                          .every = s->tev > 0 ? (int)s->tev : 1, .heldout = te != NULL};
  if (s->rank == 0 && j->io->trace && !s->notrace && s->tev > 0) {
    if (!(r.Ax = malloc((size_t)r.A->p * sizeof *r.Ax))) rc = dpo_err(DPO_ENOMEM, "out of memory");
    tr.f = j->io->trace;
    tr.Ax = r.Ax;
    o.trace = dpo__arun_trace;
    o.trace_arg = &tr;
  }
  if ((rc = dpo_agree(comm, rc))) goto out;
  sv.L = r.L;
  sv.rng = r.rng;
  if ((rc = dpo__arun_ckpt_opts(j, r.A->p, &sv, &o, &rs, r.sa, r.orc, r.prng))) goto out;
  tr.t0 = MPI_Wtime();
  dpo_dpadmm_info_t inf;
  rc = dpo_dpadmm_run(r.orc, r.A, &o, x, NULL, &inf);
  double el = MPI_Wtime() - tr.t0;
  if (rc && rc != DPO_EBUDGET) goto out;
  j->res.iters = inf.iters;
  j->res.releases = inf.releases;
  dpo__arun_spent(j, r.L, dp ? inf.sigma : 0.0);
  *stop = rc;
  rc = DPO_OK;
  /* final diagnostics (collective through the oracle).  secagg / local: no exact training
   * sum reaches the coordinator, not even a diagnostic; with neither that nor a test set
   * there is no request (and no serve loop to end) */
  double loss = NAN, accu = NAN, tl = NAN, ta = NAN;
  const int diag = (!s->secagg && !s->local) || te;
  if (s->rank == 0 && diag) {
    if (!s->secagg && !s->local) dpo_oracle_eval_metric(r.orc, x, 0, &loss, &accu);
    if (te) dpo_oracle_eval_metric(r.orc, x, 1, &tl, &ta);
    dpo_oracle_finish(r.orc, DPO_OK);
  } else if (diag) {
    dpo_oracle_serve(r.orc);
  }
  if (s->rank == 0) dpo__arun_dp_report(j, s, &r, &inf, x, el, loss, ta, dp, acc, te != NULL, rep);
  snprintf(j->cm, sizeof j->cm, "dpopt admm %s %s model, lambda %.17g%s", s->meth, s->mname,
           s->lambda, dp ? (s->seeded ? ", seeded: NOT private" : ", private") : ", NON-PRIVATE");
out:
  dpo__admm_state_free(&rs);
  dpo__arun_res_free(s, &r);
  return rc;
}
