/* The run behind dpopt admm in phases (admm_job.h; the run driver's admm kind,
 * src/run/run_admm.c, owns the run directory): settings from the config, data loading, the
 * budget store, consensus ADMM (dpo_admm_consensus, Boyd et al. 2011 Sec. 3.3, optionally
 * noised per party) and the model.  dpadmm / dpaccadmm (Xu et al. 2020, Alg. 2 / 3) and
 * admm / accadmm, the same iterations without noise (NON-PRIVATE), run in admm_dp.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/admm.h"
#include "dpopt/comm.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/budget.h"
#include "dpopt/status.h"
#include "privacy/guard.h" /* dpo_guard_journal_check */
#include "admm/admm_job.h"
#include "admm/admm_arun.h"
#include "admm/admm_impl.h" /* dpo__admm_consensus with checkpoints */

static int dpo__arun_read(const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                          dpo__arun_t *s) {
  int rc;
  dpo_config_get_str(cfg, "admm.method", "consensus", &s->meth);
  dpo_config_get_str(cfg, "model.name", "logreg", &s->mname);
  dpo_config_get_str(cfg, "admm.reg", "l1", &s->reg);
  dpo_config_get_str(cfg, "admm.xupdate", "auto", &s->xup);
  dpo_config_get_str(cfg, "admm.graph", NULL, &s->graph);
  dpo_config_get_str(cfg, "admm.graph_from", NULL, &s->gfrom);
  s->spec = spec;
  s->cfg = cfg;
  s->srule = dpo_sigma_rule_name(spec->sigma_rule);
  /* the journal is RUN/ledger.jsonl (dpo_admm_job_solve), like train's */
  if (spec->journal && *spec->journal)
    return dpo_err(DPO_EINVAL, "%s: privacy.journal: dpopt admm keeps its journal in the run "
                   "directory: give --out DIR (the journal is DIR/ledger.jsonl)",
                   dpo_privacy_spec_origin(spec, DPO_SPEC_JOURNAL));
  s->jkey = spec->journal_key;
  dpo_config_get_str(cfg, "data.test", NULL, &s->testp);
  s->trust = dpo_trust_name(spec->trust);
  s->store = spec->store;
  if (s->store && !*s->store) s->store = NULL;
  /* the training default: the releases of DP-ADMM (Gaussian, sampling none, replace-one) are
   * what the PLD accountant bounds; the consensus' disjoint and DP-AccADMM-secagg's rdp-rho
   * charges are mixed ledgers, which pld charges exactly as auto (their RDP) */
  s->acct = dpo_acct_name(spec->accountant);
  if (spec->accountant == DPO_ACCT_BASIC)
    return dpo_err(DPO_EINVAL, "%s: privacy.accountant = '%s': dpopt admm takes pld (the "
                   "default), auto or rdp", dpo_privacy_spec_origin(spec, DPO_SPEC_ACCOUNTANT),
                   s->acct);
  /* dpopt admm's defaults where the settings give none: delta 1e-3 (Xu et al. 2020, Sec. V-B),
   * collude 1 (the coordinator's own party may be curious; secagg reads it in
   * dpo__arun_trust) */
  s->eps = spec->eps;
  s->delta = dpo_privacy_spec_given(spec, DPO_SPEC_DELTA) ? spec->delta : 1e-3;
  s->mu = spec->mu;
  s->clip = spec->clip.norm == DPO_CLIP_L2 ? spec->clip.C : NAN;
  s->sigfix = spec->sigma;
  s->collude = dpo_privacy_spec_given(spec, DPO_SPEC_COLLUDE) ? spec->collude : 1;
  s->seeded = dpo_config_get(cfg, "run.seed") != NULL;
  if ((rc = dpo_config_get_double(cfg, "admm.lambda", 1e-5, &s->lambda)) ||
      (rc = dpo_config_get_double(cfg, "admm.rho", 1.0, &s->rho)) ||
      (rc = dpo_config_get_double(cfg, "admm.alpha", 1.0, &s->alpha)) ||
      (rc = dpo_config_get_double(cfg, "admm.eta", 0.0, &s->eta)) ||
      (rc = dpo_config_get_double(cfg, "admm.inner_rel", 0.1, &s->inrel)) ||
      (rc = dpo_config_get_double(cfg, "admm.eps_abs", 1e-5, &s->eabs)) ||
      (rc = dpo_config_get_double(cfg, "admm.eps_rel", 1e-3, &s->erel)) ||
      (rc = dpo_config_get_double(cfg, "admm.graph_thresh", 0.3, &s->gth)) ||
      (rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &s->b2)) ||
      (rc = dpo_config_get_int(cfg, "admm.maxit", 200, &s->maxit)) ||
      (rc = dpo_config_get_int(cfg, "admm.trace_every", 1, &s->tev)) ||
      (rc = dpo_config_get_int(cfg, "run.seed", 0, &s->seed)) ||
      (rc = dpo_config_get_bool(cfg, "admm.adapt_rho", 1, &s->adapt)) ||
      (rc = dpo_config_get_bool(cfg, "admm.private", 0, &s->priv)) ||
      (rc = dpo_config_get_int(cfg, "admm.restart", 0, &s->restart)) ||
      (rc = dpo_config_get_int(cfg, "parties.count", 0, &s->nparties)))
    return rc;
  /* non-private consensus stops on its residuals: room to converge (a private run pays for
   * every iteration, so its default count stays small) */
  if (!dpo_config_get(cfg, "admm.maxit") && strcmp(s->meth, "consensus") == 0 && !s->priv)
    s->maxit = 1000;
  /* DP-AccADMM restarts its momentum every 50 iterations unless told otherwise (a public
   * schedule, picked once on a9a at eps = 0.1, T = 200 from {0, 10, 20, 50}: 0.3726 against
   * 0.3938 without); the NON-PRIVATE AccADMM runs Alg. 3 as written */
  if (!dpo_config_get(cfg, "admm.restart") && strcmp(s->meth, "dpaccadmm") == 0) s->restart = 50;
  /* trace.csv: each row is a NON-PRIVATE pass over the training data; as train's, about 200
   * rows unless admm.trace_every says otherwise */
  if (!dpo_config_get(cfg, "admm.trace_every") && s->maxit > 200) s->tev = (s->maxit + 199) / 200;
  if (s->restart < 0) return dpo_err(DPO_EINVAL, "admm.restart must be >= 0 (got %lld)", (long long)s->restart);
  return DPO_OK;
}

/* Collective, private consensus under privacy.trust = local, once the journal is open and
 * before the first release: one account a party (one party a rank) in the coordinator's
 * ledger, the run id, the plan agreed by digest, and on every rank but 0 the party's own guard
 * journalling in its own run directory, as DP-ADMM's local parties (admm_dp.c).  Each party
 * then charges every message it sends (consensus.c, cons_message). */
static int dpo__arun_cons_parties(dpo_admm_job_t *j, MPI_Comm comm, const dpo__arun_t *s,
                                  dpo_ledger_t *L, int32_t d, dpo_guard_t **guard) {
  char run_id[65];
  unsigned char digest[32];
  int rc = dpo__arun_party_accounts(comm, s, L, j->io->resumed);
  if (!rc) rc = dpo__arun_run_id(comm, s, L, run_id);
  if (!rc) rc = dpo__arun_plan(comm, s, d, run_id, digest);
  /* the parties' own stores, before any party (re)opens its journal (a refused resume
   * writes nothing) and before the first message */
  if (!rc) rc = dpo__arun_pstore_reserve(comm, s, L, run_id);
  if (!rc && s->rank != 0) rc = dpo__arun_guard(s, d, run_id, guard, NULL);
  return dpo_agree(comm, rc);
}

static int dpo__arun_consensus(dpo_admm_job_t *j, MPI_Comm comm, const dpo__arun_t *s,
                               dpo_model_t *m, const dpo_shard_t *sh, const dpo_shard_t *te,
                               double *x, FILE *rep, int *stop) {
  dpo_ledger_t *L = NULL;
  dpo_rng_t *rng = NULL;
  dpo_budget_head_t *head = NULL;
  dpo_guard_t *guard = NULL;
  char rid[65] = "";
  int32_t d = sh->d;
  int rc;
  dpo_admm_opts_t o;
  dpo_admm_opts_default(&o);
  o.g = strcmp(s->reg, "l1") == 0 ? DPO_ADMM_G_L1 : strcmp(s->reg, "l2") == 0 ? DPO_ADMM_G_L2 : DPO_ADMM_G_NONE;
  if (o.g == DPO_ADMM_G_NONE && strcmp(s->reg, "none") != 0)
    return dpo_err(DPO_EINVAL, "--reg must be l1, l2 or none (got '%s')", s->reg);
  o.lambda = s->lambda;
  o.rho = s->rho;
  o.alpha = s->alpha;
  o.inner_rel = s->inrel;
  o.eps_abs = s->eabs;
  o.eps_rel = s->erel;
  o.max_iter = s->maxit;
  o.adapt_rho = s->adapt;
  o.lin_eta = s->eta;
  o.xupdate = strcmp(s->xup, "exact") == 0 ? DPO_ADMM_X_EXACT : strcmp(s->xup, "lbfgs") == 0 ? DPO_ADMM_X_LBFGS
            : strcmp(s->xup, "linear") == 0 ? DPO_ADMM_X_LINEAR : DPO_ADMM_X_AUTO;
  dpo_admm_priv_t pv = {0};
  if (s->priv) {
    if (!(s->eps > 0) || !(s->clip > 0))
      return dpo_err(DPO_EINVAL, "--private needs --eps > 0 and --clip > 0");
    /* per-iteration Gaussian of sensitivity 2 clip, calibrated by RDP over maxit releases */
    double z = 0;
    if ((rc = dpo_rdp_calibrate("none", 0, sh->n_global, s->maxit, s->eps * (1 - 1e-6), s->delta, &z)))
      goto out;
    pv.clip = s->clip;
    pv.sigma = s->sigfix > 0 ? s->sigfix : z * 2.0 * s->clip;
    pv.accounting = "rdp";
    if ((rc = dpo_rng_create(s->seeded, (uint64_t)s->seed, (uint64_t)s->rank, &rng))) goto out;
    pv.rng = rng;
    if ((rc = dpo_ledger_open_key(comm, s->eps, s->delta, s->journal, j->io->resumed, s->acct,
                                  DPO_NEIGHBOURS_REPLACE_ONE, s->jkey, &L)) ||
        (rc = dpo__arun_reserve(comm, s, L, rid, &head)))
      goto out;
    pv.ledger = L;
    o.priv = &pv;
    if (s->local && (rc = dpo__arun_cons_parties(j, comm, s, L, d, &guard))) goto out;
  }
  /* checkpoints: each rank saves its own part (cons_ckpt.c); resuming, rank 0's header is
   * checked (ranks, journal) before any rank reads its part */
  dpo_admm_io_t *io = j->io;
  /* under local trust a party's part (its un-noised x_i, u_i) sits in its own directory */
  const char *cdir = s->local && s->rank != 0 ? s->pdir : io->dir;
  dpo__cons_io_t cio = {comm, s->rank, s->size, cdir, L, rng, -1, 0, 0};
  int loaded = 0;
  dpo__cons_ckpt_t ck = {NULL, NULL, &cio, io->ckpt_every, io->stop_after, io->stop, &loaded, 0,
                         guard};
  if (j->ckpt || io->stop) ck.save = dpo__cons_save;
  if (io->resumed) {
    if ((rc = dpo__cons_resume_begin(&cio))) goto out;
    ck.load = dpo__cons_load;
    ck.after = cio.after;
  }
  dpo_admm_info_t inf;
  rc = dpo__admm_consensus(comm, m, sh, &o, &ck, x, &inf);
  if (loaded) {
    io->accepted = 1;
    if (s->rank == 0) dpo_msg("resuming %s at iteration %lld", io->dir, (long long)cio.resume_it + 1);
  }
  if (rc && rc != DPO_ENOCONV && rc != DPO_EBUDGET) goto out;
  *stop = rc;
  rc = DPO_OK;
  const char *pmode = s->priv ? (s->seeded ? " private-mode (seeded: NOT private)" : " private") : "";
  double tl = NAN, tm = NAN;
  if (s->rank == 0) {
    fprintf(rep, "method      consensus ADMM (%s x-update, %s, %d ranks)%s\n", s->xup, s->reg,
            s->size, pmode);
    char stl[160];
    dpo_admm_status_line(&inf, stl, sizeof stl);
    fprintf(rep, "iterations  %s\n", stl);
    fprintf(rep, "rho         %g (%lld changes, %lld factorizations)\n", inf.rho,
            (long long)inf.rho_changes, (long long)inf.factorizations);
    if (inf.inner_evals > 0)
      fprintf(rep, "inner       %lld L-BFGS iterations, %lld loss+gradient passes (rank 0)\n",
              (long long)inf.inner_iters, (long long)inf.inner_evals);
    fprintf(rep, "time        %.4f s (allreduce %.4f s, %.3g s per iteration)\n", inf.t_total,
            inf.t_comm, inf.iters > 0 ? inf.t_total / (double)inf.iters : NAN);
    if (s->priv) fprintf(rep, "sigma       %.6g per coordinate per party\n", pv.sigma);
    if (s->local)
      fprintf(rep, "trust       local, %d parties (one per rank), each charging its own journal "
              "before each message\n", s->size);
  }
  /* NON-PRIVATE diagnostic: objective on the training data (withheld under local trust: the
   * exact loss sums would leave every party un-noised) */
  double lm[2] = {0, 0}, tot[2] = {NAN, NAN};
  if (!s->local) {
    dpo_model_local_eval(m, sh, x, &lm[0], &lm[1]);
    MPI_Allreduce(lm, tot, 2, MPI_DOUBLE, MPI_SUM, comm);
  }
  if (te) {
    double tl2[2] = {0, 0}, tt[2];
    dpo_model_local_eval(m, te, x, &tl2[0], &tl2[1]);
    MPI_Allreduce(tl2, tt, 2, MPI_DOUBLE, MPI_SUM, comm);
    tl = tt[0] / (double)te->n_global;
    tm = tt[1] / (double)te->n_global;
  }
  if (s->rank == 0) {
    if (s->local)
      fprintf(rep, "objective   withheld (privacy.trust = local: no exact training sum leaves "
              "a party)\n");
    else
      fprintf(rep, "objective   %.15g   (NON-PRIVATE: training data)\n",
              tot[0] / (double)sh->n_global + dpo_admm_g_value(o.g, s->lambda, x, d));
    if (te) fprintf(rep, "test        loss %.6g  %s %.6g\n", tl, dpo_model_binary(m) ? "accuracy" : "mse", tm);
  }
  snprintf(j->cm, sizeof j->cm, "dpopt admm consensus %s model, --reg %s --lambda %.17g, %d "
           "ranks%s", s->mname, s->reg, s->lambda, s->size,
           s->priv ? (s->seeded ? ", seeded: NOT private" : ", private") : ", NON-PRIVATE");
  j->res.iters = inf.iters;
  j->res.objective = tot[0] / (double)sh->n_global + dpo_admm_g_value(o.g, s->lambda, x, d);
  j->res.test_metric = tm;
  dpo__arun_spent(j, L, s->priv ? pv.sigma : 0.0);
  if (*stop == DPO_ENOCONV && s->rank == 0)
    fprintf(stderr, "dpopt admm: %s (the last z is reported; raise --maxit)\n", dpo_errmsg());
out:
  dpo_guard_destroy(guard); /* the party's journal closed: what it holds is what ran */
  dpo__arun_pstore_settle(s, L);
  dpo__arun_settle(s, L, rid);
  dpo_ledger_close(L);
  dpo_budget_head_close(head);
  dpo_rng_destroy(rng);
  return rc;
}

/* privacy.trust (data-free, before anything is loaded).  DP-ADMM's release, the noised full
 * gradient, is a sum over the ranks' clipped gradient sums: it runs under secagg (one party
 * per rank, dpadmm.c).  Consensus ADMM's private mode is local noise per agent message. */
static int dpo__arun_trust(const dpo_config_t *cfg, dpo__arun_t *s) {
  const int dp = !strcmp(s->meth, "dpadmm") || !strcmp(s->meth, "dpaccadmm");
  if (dpo_config_get(cfg, "parties.count") && !(dp && s->nparties == s->size))
    return dpo_err(DPO_EINVAL, "parties.count = %lld: dpopt admm keeps one party per rank (%d) "
                   "and takes parties.count for --method dpadmm / dpaccadmm only (consensus ADMM "
                   "under privacy.trust = local makes each rank a party without it)",
                   (long long)s->nparties, s->size);
  if (!strcmp(s->trust, "central")) {
    if (dpo_privacy_spec_given(s->spec, DPO_SPEC_COLLUDE))
      return dpo_err(DPO_EINVAL, "privacy.collude applies to privacy.trust = secagg");
    return DPO_OK; /* with parties.count: party accounts, rank 0 noises as without */
  }
  if (!strcmp(s->trust, "local") && !strcmp(s->meth, "consensus")) {
    /* each agent already noises its own message; under local every party (one a rank) also
     * agrees on the plan and charges its own journal before each message (consensus.c) */
    if (!s->priv)
      return dpo_err(DPO_EINVAL, "privacy.trust = local: consensus ADMM adds noise only with "
                     "--private (admm.private = 1); without it nothing would be private");
    if (dpo_privacy_spec_given(s->spec, DPO_SPEC_COLLUDE))
      return dpo_err(DPO_EINVAL, "privacy.collude applies to privacy.trust = secagg");
    s->local = 1;
    s->nparties = s->size;
    return DPO_OK;
  }
  if (!strcmp(s->trust, "local") && dp) {
    /* every rank (party) noises its own gradient sum: --trace would show the coordinator
     * exact training sums; the rest of the calibration is central's */
    s->notrace = 1; /* the trace's rows show exact training sums */
    if (dpo_privacy_spec_given(s->spec, DPO_SPEC_COLLUDE))
      return dpo_err(DPO_EINVAL, "privacy.collude applies to privacy.trust = secagg");
    s->local = 1;
    s->nparties = s->size;
    return DPO_OK;
  }
  if (strcmp(s->trust, "secagg") != 0)
    return dpo_err(strcmp(s->trust, "local") && strcmp(s->trust, "shares") ? DPO_EINVAL
                                                                           : DPO_EUNSUP,
                   "privacy.trust = %s: dpopt admm takes central (default), local "
                   "(--method dpadmm / dpaccadmm, or consensus with --private) or secagg "
                   "(--method dpadmm / dpaccadmm)",
                   s->trust);
  if (!strcmp(s->meth, "consensus"))
    return dpo_err(DPO_EUNSUP, "privacy.trust = secagg is not implemented for consensus ADMM: "
                   "its --private mode noises each agent's own clipped message x_i + u_i "
                   "before the allreduce (local noise, which already holds against the "
                   "coordinator and every other agent), so there is no central noise to split "
                   "into shares; privacy.trust = local gives every party its own journal, or use "
                   "--method dpadmm or dpaccadmm, whose release (the noised gradient) is a sum "
                   "of the parties' contributions");
  if (strcmp(s->meth, "dpadmm") != 0 && strcmp(s->meth, "dpaccadmm") != 0)
    return dpo_err(DPO_EINVAL, "privacy.trust = secagg applies to the private methods "
                   "(--method dpadmm / dpaccadmm)");
  if (s->sigfix > 0 ||
      (dpo_privacy_spec_given(s->spec, DPO_SPEC_SIGMA_RULE) && s->spec->sigma_rule != DPO_SIGMA_RDP))
    return dpo_err(DPO_EUNSUP, "privacy.trust = secagg calibrates its own noise (rdp: the "
                   "distributed discrete Gaussian for T + 1 releases): drop --sigma and "
                   "--sigma-rule");
  s->notrace = 1; /* the trace's rows show exact training sums */
  if (!(s->delta > 0))
    return dpo_err(DPO_EINVAL, "privacy.trust = secagg needs privacy.delta > 0");
  /* privacy.collude and privacy.trust_coordinator as dpopt train reads them: collude 0 trusts
   * the coordinator with the guarantee, which the user must declare */
  int k = 0;
  int rc = dpo_parties_collude(s->spec, s->size, &k);
  if (rc) return rc;
  s->collude = k;
  s->srule = "rdp";
  s->secagg = 1;
  s->nparties = s->size;
  return DPO_OK;
}

/* Data-free, on every rank: under secagg and local party K (rank K) keeps its guard's journal
 * in its own run directory, party.K.out or parties.out with %d = K, as dpopt train's parties do (no party
 * writes in the coordinator's --out).  The party table (admm_pstore.c) read it and refused
 * one under central trust, and party.0.out: party 0 is the coordinator's rank alone, so its
 * account is the coordinator's journal.  Checked before anything is written (the directory is
 * made after the plan). */
static int dpo__arun_party_dir(dpo__arun_t *s) {
  char journal[1100];
  const int guarded = s->secagg || s->local; /* the parties' guards journal */
  if (s->rank == 0 || !guarded) return DPO_OK;
  if (!(s->pdir = s->pt->out[s->rank]))
    return dpo_err(DPO_EINVAL, "privacy.trust = %s: party %d keeps its own journal in its own "
                   "run directory, and none is given on its rank %d: give party.%d.out = DIR (or "
                   "parties.out = DIR%%d) in the configuration party %d's rank reads (--out is the "
                   "coordinator's directory; no party writes there)", s->trust, s->rank, s->rank,
                   s->rank, s->rank);
  return dpo_guard_journal_check(s->pdir, s->rank, s->resuming, journal, sizeof journal);
}

/* The data set's budget store: the files registered and the budget left, before loading.
 * Collective. */
static int dpo__arun_store_check(MPI_Comm comm, dpo__arun_t *s, const dpo_privacy_spec_t *spec,
                                 const char *data) {
  int rc = DPO_OK;
  int dp = s->priv || !strcmp(s->meth, "dpadmm") || !strcmp(s->meth, "dpaccadmm");
  const char *files[2] = {data, s->testp};
  if (!dp || s->seeded)
    rc = dpo_err(DPO_EINVAL, "%s: a budget store (privacy.store) is charged by private runs: %s",
                 dpo_privacy_spec_origin(spec, DPO_SPEC_STORE),
                 !dp ? "this method adds no noise" : "--seed makes the run NOT private");
  else if (s->rank == 0 && !(rc = dpo_budget_open(s->store, s->jkey, files, s->testp ? 2 : 1,
                                                  &s->bud)) &&
           !(rc = dpo_budget_lock(s->bud)) && /* held until the reservation */
           !s->resuming) /* a resumed run's fit is checked with its id (its record may be open) */
    rc = dpo_budget_reserve(s->bud, NULL, s->eps, s->delta, "admm", 1);
  return dpo_agree(comm, rc);
}

int dpo_admm_job_create(MPI_Comm comm, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                        int checkpoints, dpo_admm_job_t **out) {
  int rc;
  dpo_admm_job_t *j = calloc(1, sizeof *j);
  *out = NULL;
  if (!j) return dpo_agree(comm, dpo_err(DPO_ENOMEM, "out of memory"));
  dpo__arun_t *s = &j->s;
  j->comm = comm;
  j->ckpt = checkpoints > 0;
  s->resuming = checkpoints == 2;
  j->res.objective = j->res.test_metric = j->res.sigma = NAN;
  j->res.spent_eps = j->res.spent_delta = NAN;
  MPI_Comm_rank(comm, &s->rank);
  MPI_Comm_size(comm, &s->size);
  dpo_config_get_str(cfg, "data.train", NULL, &j->data);
  if (!(rc = dpo__arun_read(cfg, spec, s)) && !(rc = dpo__arun_trust(cfg, s)) &&
      !(rc = dpo__arun_pstore_read(cfg, s)) && !(rc = dpo__arun_party_dir(s)) &&
      !(rc = (j->data = j->data ? j->data : s->ps->data)
                 ? DPO_OK : dpo_err(DPO_EINVAL, "no training data: give FILE (data.train), or "
                                    "each party's own file (parties.data = FILE%%d)")) &&
      !(rc = dpo_model_create(s->mname, 0.0, &j->m)) &&
           !(rc = dpo_load_opts_from_config(cfg, &j->lo))) {
    j->lo.labels = dpo_model_binary(j->m) ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
    /* a private run's width is declared, never read from the rows (dpo_load_opts_private) */
    if (s->priv || !strcmp(s->meth, "dpadmm") || !strcmp(s->meth, "dpaccadmm"))
      rc = dpo_load_opts_private(j->data, &j->lo);
    int dp, acc; /* the linearized methods' own needs, before anything is claimed */
    if (!rc && strcmp(s->meth, "consensus")) rc = dpo__arun_dp_check(s, &dp, &acc);
  }
  if (!rc && s->rank == 0 && !(j->repf = open_memstream(&j->rep, &j->rep_len)))
    rc = dpo_err(DPO_ENOMEM, "out of memory");
  /* the data set's store (rank 0), each party's own store (its rank): before any file */
  if ((rc = dpo_agree(comm, rc)) ||
      (s->store && (rc = dpo__arun_store_check(comm, s, spec, j->data))) ||
      (rc = dpo__arun_pstore_check(comm, s))) {
    dpo_admm_job_destroy(j);
    return rc;
  }
  j->res.method = s->meth;
  j->res.model = s->mname;
  j->res.accountant = s->acct;
  j->res.sigma_rule = s->srule;
  j->res.trust = s->trust;
  j->res.priv = s->priv || !strcmp(s->meth, "dpadmm") || !strcmp(s->meth, "dpaccadmm");
  j->res.seeded = s->seeded;
  j->res.lambda = s->lambda;
  j->res.eps = s->eps;
  j->res.delta = s->delta;
  j->res.test_metric_name = dpo_model_binary(j->m) ? "accuracy" : "mse";
  *out = j;
  return DPO_OK;
}

const char *dpo_admm_job_method(const dpo_admm_job_t *j) { return j->s.meth; }

/* Collective: each party's own file, loaded by its rank alone, the rows numbered across the
 * parties in rank order (replace-one: the counts are public, as data.train split by ranks
 * makes them); every party declares one width (its schema). */
static int dpo__arun_party_load(dpo_admm_job_t *j) {
  int rc = dpo_agree(j->comm, dpo_shard_load(MPI_COMM_SELF, j->data, &j->lo, &j->sh));
  if (rc) return rc;
  int32_t dv[2] = {j->sh->d, -j->sh->d}, dm[2];
  int64_t n = j->sh->n, before = 0, tot = 0;
  MPI_Allreduce(dv, dm, 2, MPI_INT32_T, MPI_MAX, j->comm);
  if (dm[0] != -dm[1])
    return dpo_agree(j->comm, dpo_err(DPO_EFORMAT, "the parties' files declare %d to %d "
                                      "features: every party declares one width (data.dim or "
                                      "its file's schema)", (int)-dm[1], (int)dm[0]));
  MPI_Exscan(&n, &before, 1, MPI_INT64_T, MPI_SUM, j->comm);
  MPI_Allreduce(&n, &tot, 1, MPI_INT64_T, MPI_SUM, j->comm);
  j->sh->row0 = j->s.rank == 0 ? 0 : before;
  j->sh->n_global = tot;
  return DPO_OK;
}

int dpo_admm_job_load(dpo_admm_job_t *j) {
  dpo__arun_t *s = &j->s;
  int rc = s->ps->data ? dpo__arun_party_load(j) : dpo_shard_load(j->comm, j->data, &j->lo, &j->sh);
  if (rc) return rc;
  j->lo.d = j->sh->d;
  if (s->testp && (rc = dpo_shard_load(j->comm, s->testp, &j->lo, &j->te))) return rc;
  /* the one-run audit's canaries, before the solution is sized by the shard's width */
  if (j->audit_rows && (rc = dpo_agree(j->comm, j->audit_rows(j->audit_arg, j->sh, j->te,
                                                              s->rank == s->size - 1))))
    return rc;
  if (!(j->x = calloc((size_t)j->sh->d, sizeof *j->x)))
    return dpo_agree(j->comm, dpo_err(DPO_ENOMEM, "out of memory"));
  /* default step from the PUBLIC row bound: L = B2^2 / 4 (logistic) or B2^2 (lsq) */
  if (!(s->eta > 0) && isfinite(s->b2) && s->b2 > 0) s->eta = 1.0 / dpo_model_L_bound(j->m, s->b2);
  if (s->seeded && s->rank == 0)
    fprintf(stderr, "dpopt admm: NOT PRIVATE: seeded run (--seed %lld) for reproducibility\n",
            (long long)s->seed);
  j->res.n = j->sh->n_global;
  j->res.d = j->sh->d;
  return DPO_OK;
}

int dpo_admm_job_solve(dpo_admm_job_t *j, dpo_admm_io_t *io, int *stop) {
  dpo__arun_t *s = &j->s;
  *stop = DPO_OK;
  j->io = io;
  snprintf(j->ckpt_path, sizeof j->ckpt_path, "%s/checkpoint", io->dir);
  if (j->res.priv) { /* the run directory holds the journal, as train's */
    snprintf(j->journal, sizeof j->journal, "%s/ledger.jsonl", io->dir);
    s->journal = j->journal;
  }
  if (s->rank == 0 && io->trace && !io->resumed) {
    if (strcmp(s->meth, "consensus") == 0 || s->notrace || s->tev <= 0)
      fprintf(io->trace, "# %s: no per-iteration rows (%s)\n", s->meth,
              strcmp(s->meth, "consensus") == 0 ? "consensus ADMM reports its residuals only"
              : s->tev <= 0 ? "admm.trace_every = 0"
                            : "they would show the coordinator exact training sums");
    else
      fprintf(io->trace, "# %s: objective and train_acc are NON-PRIVATE diagnostics on the "
              "training data\niter,time,objective,train_acc,test_acc\n", s->meth);
    fflush(io->trace);
  }
  if (strcmp(s->meth, "consensus") == 0)
    return dpo__arun_consensus(j, j->comm, s, j->m, j->sh, j->te, j->x, j->repf, stop);
  return dpo__arun_dp(j, j->comm, s, &j->lo, j->m, j->sh, j->te, j->x, j->repf, stop);
}

const char *dpo_admm_job_report(const dpo_admm_job_t *j) {
  if (!j->repf) return "";
  fflush(j->repf);
  return j->rep ? j->rep : "";
}

const dpo_admm_result_t *dpo_admm_job_result(const dpo_admm_job_t *j) { return &j->res; }
const double *dpo_admm_job_x(const dpo_admm_job_t *j) { return j->x; }

void dpo_admm_job_finish(const dpo_admm_job_t *j, const char *dir) {
  if (!strcmp(j->s.meth, "consensus"))
    dpo__cons_ckpt_remove(j->s.local && j->s.rank != 0 ? j->s.pdir : dir, j->s.rank);
}

int dpo_admm_job_write_model(const dpo_admm_job_t *j, const char *path) {
  return dpo_model_write(path, j->x, j->sh->d, j->cm);
}

void dpo_admm_job_set_audit(dpo_admm_job_t *j, dpo_admm_rows_fn rows, dpo_release_fn observe,
                            void *arg) {
  j->audit_rows = rows;
  j->audit_observe = observe;
  j->audit_arg = arg;
}

void dpo_admm_job_bounds(const dpo_admm_job_t *j, double *clip, double *b2) {
  *clip = j->s.clip;
  *b2 = j->s.b2;
}

void dpo_admm_job_destroy(dpo_admm_job_t *j) {
  if (!j) return;
  dpo_budget_close(j->s.bud);
  dpo__arun_pstore_free(&j->s);
  if (j->repf) fclose(j->repf);
  free(j->rep);
  free(j->x);
  dpo_shard_destroy(j->sh);
  dpo_shard_destroy(j->te);
  dpo_model_destroy(j->m);
  free(j);
}
