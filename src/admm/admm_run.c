/* The run behind dpopt admm in phases (admm_job.h; the run driver's admm kind,
 * src/run/run_admm.c, owns the run directory): settings from the config, data loading, the
 * ledger and noise of the private variants, the run, NON-PRIVATE diagnostics and the model.  consensus: dpo_admm_consensus (Boyd et al. 2011 Sec. 3.3,
 * optionally noised per party); dpadmm / dpaccadmm: 004 Alg. 2 / 3 through dpo_dpadmm_run;
 * admm / accadmm: the same iterations without noise (NON-PRIVATE). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "config.h" /* PACKAGE_VERSION: the plan names the code that encodes */

#include "dpopt/admm.h"
#include "dpopt/comm.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/budget.h"
#include "dpopt/status.h"
#include "privacy/guard.h" /* the party guard (secagg) */
#include "admm/admm_job.h"

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
  int64_t nparties; /* party accounts, one party per rank (0: none) */
  int rank, size;
  const char *store;  /* privacy.store: the data set's budget store */
  dpo_budget_t *bud;  /* rank 0: its handle, opened before the data are loaded */
} dpo__arun_t;

/* the parties' own noise streams (secagg), apart from rank 0's stream 0 */
#define DPO__ARUN_PARTY_STREAM 0x70000000ULL

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
   * collude 1 (the coordinator's own party may be curious) */
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
};

/* the result's privacy part, from the ledger the run charged (rank 0) */
static void dpo__arun_spent(dpo_admm_job_t *j, const dpo_ledger_t *L, double sigma) {
  j->res.sigma = sigma;
  if (L && j->s.rank == 0) dpo_ledger_spent(L, &j->res.spent_eps, &j->res.spent_delta);
}

/* The data set's budget store: the run's whole budget reserved under its journal's id once
 * the ledger is open (before the first release); rid[0] = 0 when nothing was reserved. */
static int dpo__arun_reserve(MPI_Comm comm, const dpo__arun_t *s, dpo_ledger_t *L, char rid[65]) {
  int rc = DPO_OK;
  rid[0] = '\0';
  if (s->bud && s->rank == 0 && !(rc = dpo_ledger_run_id(L, rid)))
    rc = dpo_budget_reserve(s->bud, rid, s->eps, s->delta, "admm", 0);
  if (rc) rid[0] = '\0';
  return dpo_agree(comm, rc);
}

/* ... and settled to what the ledger composed when the run ends (else it stays spent whole) */
static void dpo__arun_settle(const dpo__arun_t *s, dpo_ledger_t *L, const char *rid) {
  dpo_ledger_parts_t p;
  if (rid[0] && s->rank == 0 && (dpo_ledger_parts(L, &p) || dpo_budget_settle(s->bud, rid, &p)))
    fprintf(stderr, "dpopt: warning: budget store %s: the run's reservation stays spent whole: "
            "%s\n", s->store, dpo_errmsg());
}

static int dpo__arun_consensus(dpo_admm_job_t *j, MPI_Comm comm, const dpo__arun_t *s,
                               dpo_model_t *m, const dpo_shard_t *sh, const dpo_shard_t *te,
                               double *x, FILE *rep, int *stop) {
  dpo_ledger_t *L = NULL;
  dpo_rng_t *rng = NULL;
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
    if ((rc = dpo_ledger_open_key(comm, s->eps, s->delta, s->journal, 0, s->acct,
                                  DPO_NEIGHBOURS_REPLACE_ONE, s->jkey, &L)) ||
        (rc = dpo__arun_reserve(comm, s, L, rid)))
      goto out;
    pv.ledger = L;
    o.priv = &pv;
  }
  dpo_admm_info_t inf;
  rc = dpo_admm_consensus(comm, m, sh, &o, x, &inf);
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
  }
  /* NON-PRIVATE diagnostic: objective on the training data */
  double ls = 0, ms = 0, tot[2];
  dpo_model_local_eval(m, sh, x, &ls, &ms);
  double lm[2] = {ls, ms};
  MPI_Allreduce(lm, tot, 2, MPI_DOUBLE, MPI_SUM, comm);
  if (te) {
    double tl2[2] = {0, 0}, tt[2];
    dpo_model_local_eval(m, te, x, &tl2[0], &tl2[1]);
    MPI_Allreduce(tl2, tt, 2, MPI_DOUBLE, MPI_SUM, comm);
    tl = tt[0] / (double)te->n_global;
    tm = tt[1] / (double)te->n_global;
  }
  if (s->rank == 0) {
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
  dpo__arun_settle(s, L, rid);
  dpo_ledger_close(L);
  dpo_rng_destroy(rng);
  return rc;
}

typedef struct {
  dpo_oracle_t *o;
  const dpo_admm_A_t *A;
  double lambda, t0;
  int every, heldout;
  FILE *f;
  double *Ax;
} dpo__arun_trace_t;

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

/* privacy.trust (data-free, before anything is loaded).  DP-ADMM's release, the noised full
 * gradient, is a sum over the ranks' clipped gradient sums: it runs under secagg (one party
 * per rank, dpadmm.c).  Consensus ADMM's private mode is local noise per agent message. */
static int dpo__arun_trust(const dpo_config_t *cfg, dpo__arun_t *s) {
  const int dp = !strcmp(s->meth, "dpadmm") || !strcmp(s->meth, "dpaccadmm");
  if (dpo_config_get(cfg, "parties.count") && !(dp && s->nparties == s->size))
    return dpo_err(DPO_EINVAL, "parties.count = %lld: dpopt admm keeps one party per rank (%d) "
                   "and only for --method dpadmm / dpaccadmm", (long long)s->nparties, s->size);
  if (!strcmp(s->trust, "central")) {
    if (dpo_privacy_spec_given(s->spec, DPO_SPEC_COLLUDE))
      return dpo_err(DPO_EINVAL, "privacy.collude applies to privacy.trust = secagg");
    return DPO_OK; /* with parties.count: party accounts, rank 0 noises as without */
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
                   "(--method dpadmm / dpaccadmm) or secagg (--method dpadmm / dpaccadmm)",
                   s->trust);
  if (!strcmp(s->meth, "consensus"))
    return dpo_err(DPO_EUNSUP, "privacy.trust = secagg is not implemented for consensus ADMM: "
                   "its --private mode noises each agent's own clipped message x_i + u_i "
                   "before the allreduce (local noise, which already holds against the "
                   "coordinator and every other agent), so there is no central noise to split "
                   "into shares; use --method dpadmm or dpaccadmm, whose release (the noised "
                   "gradient) is a sum of the parties' contributions");
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
  if (s->collude < 0 || s->collude >= s->size)
    return dpo_err(DPO_EINVAL, "privacy.collude = %lld: need 0 <= k < parties (%d, one per "
                   "rank)", (long long)s->collude, s->size);
  s->srule = "rdp";
  s->secagg = 1;
  s->nparties = s->size;
  return DPO_OK;
}

/* secagg, ranks other than 0 (one party per rank): the party's guard prices every announced
 * release from its own settings (the sum's L2 sensitivity 2 clip, replace-one, its own budget
 * and accountant) and charges its own account -- journalled next to privacy.journal as
 * JOURNAL.partyK.jsonl when one is given -- before it contributes (privacy/guard.h). */
static int dpo__arun_guard(const dpo__arun_t *s, int32_t d, dpo_guard_t **g, dpo_oracle_t *orc) {
  const double S2 = 2 * s->clip;
  char path[1100];
  dpo_guard_spec_t sp = {s->size, (int)s->collude, s->rank, d, S2 * sqrt((double)d), S2, s->eps,
                         s->delta, s->acct, DPO_NEIGHBOURS_REPLACE_ONE, 0, NULL, 0, s->jkey};
  if (s->journal && s->journal[0]) {
    size_t n = strlen(s->journal);
    if (n > 6 && !strcmp(s->journal + n - 6, ".jsonl")) n -= 6;
    snprintf(path, sizeof path, "%.*s.party%d.jsonl", (int)n, s->journal, s->rank);
    sp.journal = path;
  }
  int rc = dpo_guard_create(&sp, g);
  return rc ? rc : dpo_oracle_set_guard(orc, *g);
}

/* Collective (secagg), before the first release: the parties agree on the plan by digest, as
 * dpopt train's do (privacy/guard.h: the admm., privacy., parties., party. and model. keys,
 * the schema, the seed, the ranks, d, the trust and the encoding), then
 * make the pairwise keys, signed with the parties' identity keys when every party lists one
 * (party.K.public_key), and the mask graph against `collude` ranks (one party per rank). */
static int dpo__arun_secagg(MPI_Comm comm, const dpo__arun_t *s, int64_t d, dpo_rng_t *prng,
                            dpo_secagg_t **sa) {
  static const char *const pre[] = {"admm.", "privacy.", "parties.", "party.", "model."};
  char v[320];
  unsigned char digest[32];
  dpo_plantext_t *pl = dpo_plantext_new();
  dpo_plantext_config(pl, s->cfg, pre, (int)(sizeof pre / sizeof *pre));
  snprintf(v, sizeof v, "%d", s->size);
  dpo_plantext_add(pl, "~ranks", v);
  snprintf(v, sizeof v, "%lld", (long long)d);
  dpo_plantext_add(pl, "~dimension", v);
  snprintf(v, sizeof v, "secagg, %d parties (one a rank), collude %lld", s->size,
           (long long)s->collude);
  dpo_plantext_add(pl, "~trust", v);
  snprintf(v, sizeof v, "dpopt " PACKAGE_VERSION " admm secagg: fixed point, randomized "
           "rounding, words of 32 bits when dpo_secagg_word's public bound fits else 64, "
           "X25519 + ChaCha20 pairwise masks on the Harary graph against %lld corrupt ranks",
           (long long)s->collude);
  dpo_plantext_add(pl, "~encoding", v);
  char *plan = dpo_plantext_finish(pl);
  int rc = dpo_agree(comm, plan ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory"));
  if (!rc) rc = dpo_plan_agree(comm, plan, digest);
  free(plan);
  int *rp = rc ? NULL : malloc((size_t)s->size * sizeof *rp);
  if (!rc) rc = dpo_agree(comm, rp ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory"));
  for (int r = 0; r < s->size && !rc; r++) rp[r] = r;
  if (!rc) rc = dpo_plan_secagg(s->cfg, comm, s->size, rp, 1, prng, digest, sa);
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

/* Collective: checkpoints (--checkpoint-every, run.stop_after, the stop flag) and, resuming,
 * rank 0's state from RUN/checkpoint (checked against the journal: rule of dpopt/optim.h) */
static int dpo__arun_ckpt_opts(dpo_admm_job_t *j, int32_t p, dpo__arun_save_t *sv,
                               dpo_dpadmm_opts_t *o, dpo_dpadmm_state_t *rs) {
  dpo_admm_io_t *io = j->io;
  o->stop = io->stop;
  if (!j->ckpt && !io->stop) return DPO_OK;
  if (j->ckpt || (!j->s.secagg && !j->s.local && j->s.nparties == 0 && !j->s.store)) {
    o->save = dpo__arun_save;
    o->save_arg = sv;
    o->ckpt_every = io->ckpt_every;
    o->stop_after = io->stop_after;
  }
  if (!io->resumed) return DPO_OK;
  int rc = DPO_OK;
  if (j->s.rank == 0)
    rc = dpo__admm_ckpt_load(j->ckpt_path, j->s.meth, j->s.size, j->sh->d, p, rs, io->trace,
                             sv->L, (dpo_rng_t *)sv->rng);
  if ((rc = dpo_agree(j->comm, rc))) return rc;
  io->accepted = 1;
  if (j->s.rank == 0)
    dpo_msg("resuming %s at iteration %lld", io->dir, (long long)rs->it + 1);
  o->resumed = 1;
  o->resume = rs;
  return DPO_OK;
}

static int dpo__arun_dp(dpo_admm_job_t *j, MPI_Comm comm, const dpo__arun_t *s,
                        const dpo_load_opts_t *lo, dpo_model_t *m, const dpo_shard_t *sh,
                        const dpo_shard_t *te, double *x, FILE *rep, int *stop) {
  dpo_oracle_t *orc = NULL;
  dpo_admm_A_t *A = NULL;
  dpo_ledger_t *L = NULL;
  dpo_rng_t *rng = NULL, *prng = NULL;
  char rid[65] = "";
  dpo_secagg_t *sa = NULL;
  dpo_guard_t *guard = NULL;
  double *Ax = NULL;
  dpo_dpadmm_state_t rs = {0};
  dpo__arun_save_t sv = {j, NULL, NULL};
  int32_t d = sh->d;
  int rc;
  int dp = strcmp(s->meth, "dpadmm") == 0 || strcmp(s->meth, "dpaccadmm") == 0;
  int acc = strcmp(s->meth, "dpaccadmm") == 0 || strcmp(s->meth, "accadmm") == 0;
  if (!dp && strcmp(s->meth, "admm") != 0 && strcmp(s->meth, "accadmm") != 0)
    return dpo_err(DPO_EINVAL, "--method: consensus | dpadmm | dpaccadmm | admm | accadmm (got '%s')", s->meth);
  /* before the oracle, which would refuse the unset clip (NaN) without saying which flag */
  if (dp && (!(s->clip > 0) || !(s->eps > 0)))
    return dpo_err(DPO_EINVAL, "%s needs %s%s%s", s->meth,
                   s->clip > 0 ? "" : "a clip: --clip C > 0 (each example's gradient is clipped "
                                      "to L2 norm C)",
                   !(s->clip > 0) && !(s->eps > 0) ? " and " : "",
                   s->eps > 0 ? "" : "a budget: --eps E > 0");
  if (!(s->eta > 0))
    return dpo_err(DPO_EINVAL, "DP-ADMM needs --eta or --row-l2-bound (a public smoothness bound)");
  if ((rc = dpo__arun_graph(comm, s, *lo, d, &A))) goto out;
  /* only the private methods clip: the non-private ADMM / AccADMM are the reference, the
   * solution of the problem itself (clipping would change the problem) */
  dpo_clip_t cl = {DPO_CLIP_L2, s->clip};
  if ((rc = dpo_oracle_create(comm, m, sh, dp ? &cl : NULL, &orc))) goto out;
  if (te && (rc = dpo_oracle_set_heldout(orc, te))) goto out;
  dpo_dpadmm_opts_t o;
  dpo_dpadmm_opts_default(&o);
  o.accelerated = acc;
  o.lambda = s->lambda;
  o.rho = s->rho;
  o.eta = s->eta;
  o.T = s->maxit;
  o.noise = dp;
  o.clip = s->clip;
  o.eps = s->eps;
  o.delta = s->delta;
  o.mu = s->mu;
  o.restart = s->restart;
  if (strcmp(s->srule, "eq8") == 0) o.sigma_rule = DPO_DPADMM_SIGMA_EQ8;
  else if (strcmp(s->srule, "rdp") == 0) o.sigma_rule = DPO_DPADMM_SIGMA_RDP;
  else if (strcmp(s->srule, "ledger") == 0) o.sigma_rule = DPO_DPADMM_SIGMA_LEDGER;
  else {
    rc = dpo_err(DPO_EINVAL, "--sigma-rule: eq8 | rdp | ledger (got '%s')", s->srule);
    goto out;
  }
  o.sigma_fixed = s->sigfix;
  if (dp) {
    if (s->rank == 0) rc = dpo_rng_create(s->seeded, (uint64_t)s->seed, 0, &rng);
    rc = dpo_agree(comm, rc);
    if (!rc && (!(s->eps > 0) || !(s->clip > 0)))
      rc = dpo_err(DPO_EINVAL, "private methods need --eps > 0 and --clip > 0");
    if (!rc) /* resuming: reopened, its charges stay spent */
      rc = dpo_ledger_open_key(comm, s->eps, s->delta, s->journal, j->io->resumed, s->acct,
                               DPO_NEIGHBOURS_REPLACE_ONE, s->jkey, &L);
    if (!rc) rc = dpo__arun_reserve(comm, s, L, rid);
    if (rc) goto out;
    o.rng = rng;
    o.ledger = L;
  }
  if (dp && s->nparties > 0) { /* party accounts: each party's budget is the run's */
    if (s->rank == 0) {
      double *pe = malloc((size_t)s->size * sizeof *pe), *pd = malloc((size_t)s->size * sizeof *pd);
      if (!pe || !pd) rc = dpo_err(DPO_ENOMEM, "out of memory");
      for (int k = 0; k < s->size && !rc; k++) pe[k] = s->eps, pd[k] = s->delta;
      if (!rc) rc = dpo_ledger_set_parties(L, s->size, pe, pd);
      if (!rc && !s->secagg) {
        char ev[400];
        snprintf(ev, sizeof ev, "trust %s: %s; one party per rank", s->local ? "local" : "central",
                 dpo_trust_coordinator_sees(s->local ? DPO_TRUST_LOCAL : DPO_TRUST_CENTRAL));
        rc = dpo_ledger_party_event(L, ev, -1, -1);
      }
      free(pe);
      free(pd);
    }
    if ((rc = dpo_agree(comm, rc))) goto out;
    o.nparties = s->size;
  }
  if (dp && s->local) { /* each rank's own noise stream, apart from rank 0's stream 0 */
    rc = dpo_agree(comm, dpo_rng_create(s->seeded, (uint64_t)s->seed,
                                        DPO__ARUN_PARTY_STREAM + (uint64_t)s->rank, &prng));
    if (!rc) rc = dpo_agree(comm, dpo_oracle_set_noise_rng(orc, prng));
    if (rc) goto out;
    o.local_noise = 1;
  }
  if (dp && s->secagg) {
    /* one party per rank: each rank's own stream for its rounding and noise share, pairwise
     * keys once (collective) */
    rc = dpo_agree(comm, dpo_rng_create(s->seeded, (uint64_t)s->seed,
                                        DPO__ARUN_PARTY_STREAM + (uint64_t)s->rank, &prng));
    if (!rc) rc = dpo__arun_secagg(comm, s, dpo_oracle_dim(orc), prng, &sa);
    if (!rc) rc = dpo_agree(comm, dpo_oracle_set_secagg(orc, sa));
    if (!rc && s->rank != 0) rc = dpo__arun_guard(s, dpo_oracle_dim(orc), &guard, orc);
    if (!rc) rc = dpo_agree(comm, rc);
    if (!rc && s->rank == 0) {
      char ev[600];
      snprintf(ev, sizeof ev, "trust secagg, collude %lld of %d: %s; distributed discrete "
               "Gaussian (Kairouz-Liu-Steinke 2021 Thm 1, P - k = %lld honest shares), one "
               "party per rank", (long long)s->collude, s->size,
               dpo_trust_coordinator_sees(DPO_TRUST_SECAGG), (long long)(s->size - s->collude));
      rc = dpo_ledger_party_event(L, ev, -1, -1);
    }
    if ((rc = dpo_agree(comm, rc))) goto out;
    o.secagg_parties = s->size;
    o.secagg_collude = (int)s->collude;
  }
  dpo__arun_trace_t tr = {.o = orc, .A = A, .lambda = s->lambda,
                          .every = s->tev > 0 ? (int)s->tev : 1, .heldout = te != NULL};
  if (s->rank == 0 && j->io->trace && !s->notrace && s->tev > 0) {
    if (!(Ax = malloc((size_t)A->p * sizeof *Ax))) rc = dpo_err(DPO_ENOMEM, "out of memory");
    tr.f = j->io->trace;
    tr.Ax = Ax;
    o.trace = dpo__arun_trace;
    o.trace_arg = &tr;
  }
  if ((rc = dpo_agree(comm, rc))) goto out;
  sv.L = L;
  sv.rng = rng;
  if ((rc = dpo__arun_ckpt_opts(j, A->p, &sv, &o, &rs))) goto out;
  tr.t0 = MPI_Wtime();
  dpo_dpadmm_info_t inf;
  rc = dpo_dpadmm_run(orc, A, &o, x, NULL, &inf);
  double el = MPI_Wtime() - tr.t0;
  if (rc && rc != DPO_EBUDGET) goto out;
  j->res.iters = inf.iters;
  j->res.releases = inf.releases;
  dpo__arun_spent(j, L, dp ? inf.sigma : 0.0);
  *stop = rc;
  rc = DPO_OK;
  /* final diagnostics (collective through the oracle) */
  double loss = NAN, accu = NAN, tl = NAN, ta = NAN;
  /* secagg / local: no exact training sum reaches the coordinator, not even a diagnostic;
   * with neither that nor a test set there is no request (and no serve loop to end) */
  const int diag = (!s->secagg && !s->local) || te;
  if (s->rank == 0 && diag) {
    if (!s->secagg && !s->local) dpo_oracle_eval_metric(orc, x, 0, &loss, &accu);
    if (te) dpo_oracle_eval_metric(orc, x, 1, &tl, &ta);
    dpo_oracle_finish(orc, DPO_OK);
  } else if (diag) {
    dpo_oracle_serve(orc);
  }
  if (s->rank == 0) {
    double *ax = malloc((size_t)A->p * sizeof *ax);
    dpo_admm_A_mul(A, x, ax);
    fprintf(rep, "method      %s (%s)%s\n", s->meth, acc ? "Xu et al. 2020, Alg. 3" : "Xu et al. 2020, Alg. 2",
            dp ? (s->seeded ? " seeded: NOT private" : " private") : " NON-PRIVATE (no noise)");
    fprintf(rep, "iterations  %lld   time %.3f s   gamma %.6g   ||A'A|| %.6g   p %d\n",
            (long long)inf.iters, el, inf.gamma, inf.AtA_norm, A->p);
    if (acc) fprintf(rep, "restarts    %lld (every %lld iterations; 0 = Alg. 3 as written)\n",
                     (long long)inf.restarts, (long long)s->restart);
    if (!dp) fprintf(rep, "clip        none (the NON-PRIVATE reference solves the unclipped problem)\n");
    if (dp) {
      double se = NAN, sd = NAN;
      dpo_ledger_spent(L, &se, &sd);
      fprintf(rep, "sigma       %.6g (%s)   releases %lld   spent eps %.9g delta %.3g (%s "
              "accountant, bound %s)\n", inf.sigma, s->srule, (long long)inf.releases, se, sd,
              s->acct, dpo_ledger_bound(L) ? dpo_ledger_bound(L) : "-");
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
  snprintf(j->cm, sizeof j->cm, "dpopt admm %s %s model, lambda %.17g%s", s->meth, s->mname,
           s->lambda, dp ? (s->seeded ? ", seeded: NOT private" : ", private") : ", NON-PRIVATE");
out:
  dpo__admm_state_free(&rs);
  free(Ax);
  dpo_oracle_destroy(orc);
  dpo_guard_destroy(guard);
  dpo_secagg_destroy(sa);
  dpo_rng_destroy(prng);
  dpo_admm_A_destroy(A);
  dpo__arun_settle(s, L, rid);
  dpo_ledger_close(L);
  dpo_rng_destroy(rng);
  return rc;
}

/* Checkpoints are rank 0's DP-ADMM state: consensus keeps its state on every rank, several
 * parties keep stream and guard states apart, and a budget store's reservation would be made
 * twice: refused up front, before anything is read or written. */
static int dpo__arun_ckpt_check(const dpo__arun_t *s) {
  const char *why = !strcmp(s->meth, "consensus") ? "consensus ADMM keeps its state on every rank"
                    : s->secagg || s->local || s->nparties > 0
                        ? "a multi-party run's streams and guards are not saved"
                    : s->store ? "a budget store's reservation is not carried over" : NULL;
  if (!why) return DPO_OK;
  return dpo_err(DPO_EINVAL, "dpopt admm --method %s: checkpoints are not supported here (%s): "
                 "drop --checkpoint-every / --resume / run.stop_after", s->meth, why);
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
           !(rc = dpo_budget_lock(s->bud))) /* held until the reservation */
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
  j->ckpt = checkpoints;
  j->res.objective = j->res.test_metric = j->res.sigma = NAN;
  j->res.spent_eps = j->res.spent_delta = NAN;
  MPI_Comm_rank(comm, &s->rank);
  MPI_Comm_size(comm, &s->size);
  dpo_config_get_str(cfg, "data.train", NULL, &j->data);
  if (!j->data) rc = dpo_err(DPO_EINVAL, "no training data: give FILE (data.train)");
  else if (!(rc = dpo__arun_read(cfg, spec, s)) && !(rc = dpo__arun_trust(cfg, s)) &&
           !(rc = dpo_model_create(s->mname, 0.0, &j->m)) &&
           !(rc = dpo_load_opts_from_config(cfg, &j->lo))) {
    j->lo.labels = dpo_model_binary(j->m) ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
    /* a private run's width is declared, never read from the rows (dpo_load_opts_private) */
    if (s->priv || !strcmp(s->meth, "dpadmm") || !strcmp(s->meth, "dpaccadmm"))
      rc = dpo_load_opts_private(j->data, &j->lo);
    if (!rc && checkpoints) rc = dpo__arun_ckpt_check(s);
  }
  if (!rc && s->rank == 0 && !(j->repf = open_memstream(&j->rep, &j->rep_len)))
    rc = dpo_err(DPO_ENOMEM, "out of memory");
  if ((rc = dpo_agree(comm, rc)) || (s->store && (rc = dpo__arun_store_check(comm, s, spec, j->data)))) {
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

int dpo_admm_job_load(dpo_admm_job_t *j) {
  dpo__arun_t *s = &j->s;
  int rc;
  if ((rc = dpo_shard_load(j->comm, j->data, &j->lo, &j->sh))) return rc;
  j->lo.d = j->sh->d;
  if (s->testp && (rc = dpo_shard_load(j->comm, s->testp, &j->lo, &j->te))) return rc;
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

int dpo_admm_job_write_model(const dpo_admm_job_t *j, const char *path) {
  return dpo_model_write(path, j->x, j->sh->d, j->cm);
}

void dpo_admm_job_destroy(dpo_admm_job_t *j) {
  if (!j) return;
  dpo_budget_close(j->s.bud);
  if (j->repf) fclose(j->repf);
  free(j->rep);
  free(j->x);
  dpo_shard_destroy(j->sh);
  dpo_shard_destroy(j->te);
  dpo_model_destroy(j->m);
  free(j);
}
