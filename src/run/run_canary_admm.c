/* The one-run audit of a run of dpopt admm (dpopt audit --one-run --admm dpadmm | dpaccadmm):
 * Steinke, Nasr and Jagielski, "Privacy auditing with one (1) training run" (NeurIPS 2023),
 * on DP-ADMM / DP-AccADMM (Xu et al. 2020, Alg. 2 / 3) as the data holder runs them.
 *
 * The canaries are train's one-run canaries (run_canary.c): m rows, each with one nonzero in
 * a feature column of its own beyond the declared schema, at the declared L2 row bound, label
 * +1 when included and -1 when excluded (dpopt admm's neighbours are replace-one), each
 * included with probability 1/2 from a noise stream of their own.  dpopt admm fits no
 * intercept, so a canary's clipped logistic gradient lies in its own column alone: once the
 * clip saturates (value / 2 >= C at the start), its label moves that column of the gradient
 * sum by +-C, the release's whole sensitivity 2C.  The threat model is the coordinator's
 * broadcasts: every noised gradient (u0's included) the iterates x_t are computed from, seen
 * through dpo_dpadmm_opts_t.observe at the charged scale; each canary is scored by its
 * column's log-likelihood ratio summed over the releases and the bound is train's.  The run is
 * the admm kind's (run_admm.c: its run directory, journal, budget and report), with the
 * canaries added by the admm job's rows hook once the data are loaded.  Private consensus ADMM
 * is refused with the numbers that show why (dpo__a1a_consensus). */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "admm/admm_job.h"
#include "dpopt/audit.h"
#include "dpopt/privacy.h"
#include "dpopt/spec.h"
#include "dpopt/rng.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run_canary.h"
#include "run_impl.h"

/* the canaries' bits: a stream of their own (a seeded run's noise is stream 0 on rank 0) */
#define DPO__A1A_STREAM 0x41554431ULL

static dpo__a1_t *dpo__a1a(const dpo_run_t *r) { return r->release_arg; }

/* Private consensus ADMM in one run: refused, with the numbers of the run's own settings that
 * show why.  A party clips its whole message x_i + u_i to L2 norm C, so its canaries share one
 * clip (m of them move it by about C / sqrt(m) each): one canary a party, as many as ranks.
 * Whatever a canary's shape, a party's T messages are Gaussians of sensitivity 2C at sigma,
 * so each canary is at most mu-GDP, mu = sqrt(T) 2C / sigma (2 mu with the noise halved), and
 * with so few canaries the audit's bound cannot pass the claim, or passes it with a probability
 * dpo_audit1_power_gdp bounds (doc/results.md, "One-run audit"). */
static int dpo__a1a_consensus(const dpo_run_t *r, const dpo__a1_t *c) {
  dpo_privacy_spec_t sp;
  int64_t T = 200;
  int priv = 0;
  int rc = dpo_privacy_spec_read(r->cfg, DPO_SPEC_FOR_ADMM, &sp);
  if (!rc) rc = dpo_config_get_int(r->cfg, "admm.maxit", 200, &T);
  if (!rc) rc = dpo_config_get_bool(r->cfg, "admm.private", 0, &priv);
  if (rc) return rc;
  const double delta = dpo_privacy_spec_given(&sp, DPO_SPEC_DELTA) ? sp.delta : 1e-3; /* admm's */
  const double C = sp.clip.norm == DPO_CLIP_L2 ? sp.clip.C : NAN;
  if (!priv || !(sp.eps > 0) || !(C > 0) || T < 1)
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --admm consensus: not built (a party's "
                   "canaries share its message's clip); private consensus needs --private, --eps "
                   "and --clip, and is audited by dpopt audit --admm consensus --white-box");
  double z = sp.sigma > 0 ? sp.sigma / (2 * C) : 0;
  if (!(sp.sigma > 0) &&
      (rc = dpo_rdp_calibrate("none", 0, 1, T, sp.eps * (1 - 1e-6), delta, &z)))
    return rc;
  const double mu = sqrt((double)T) / z;
  const int64_t m = r->size;
  return dpo_err(DPO_EINVAL, "dpopt audit --one-run --admm consensus: not built: it would "
                 "rarely see a lost noise.  Each party clips its whole message to L2 norm C, so its "
                 "canaries share one clip: one canary a party, %lld here (one a rank).  With "
                 "every guess right the bound would be %.3g (claimed eps %g); each canary is at "
                 "most %.3g-GDP (%lld messages of sensitivity 2C at sigma %.4g C), %.3g with the "
                 "noise halved, so the bound would exceed the claim with probability at most "
                 "%.2g intact and %.2g with the noise halved (Steinke, Nasr and Jagielski, \"Privacy "
                 "auditing with one (1) training run\", 2023, Theorem 3.1).  Audit private consensus with dpopt audit --admm consensus "
                 "--white-box", (long long)m, dpo_audit1_ceiling(m, delta, c->alpha), sp.eps, mu,
                 (long long)T, 2 * z, 2 * mu,
                 dpo_audit1_power_gdp(m, sp.eps, delta, c->alpha, mu),
                 dpo_audit1_power_gdp(m, sp.eps, delta, c->alpha, 2 * mu));
}

/* Not collective: what the audit needs of the admm settings, before the admm kind's setup
 * claims the directory (its own checks follow there). */
static int dpo__a1a_settings(dpo_run_t *r, dpo__a1_t *c) {
  const dpo_config_t *cfg = r->cfg;
  const char *meth = NULL, *model = NULL, *trust = NULL;
  dpo_config_get_str(cfg, "admm.method", "consensus", &meth);
  dpo_config_get_str(cfg, "model.name", "logreg", &model);
  dpo_config_get_str(cfg, "privacy.trust", "central", &trust);
  if (r->resuming)
    return dpo_err(DPO_EINVAL, "dpopt audit --resume: a one-run audit of dpopt admm does not "
                   "resume (its canaries' scores are not in DP-ADMM's checkpoint); the stopped "
                   "run's charges stay spent in its journal");
  static const char *const nockpt[] = {"run.checkpoint_every", "run.stop_after", NULL};
  for (int i = 0; nockpt[i]; i++)
    if (dpo_config_get(cfg, nockpt[i]))
      return dpo_err(DPO_EINVAL, "%s: dpopt audit --one-run --admm writes no checkpoint to "
                     "resume from (its canaries' scores are not in DP-ADMM's checkpoint)",
                     dpo_config_origin(cfg, nockpt[i]));
  if (!strcmp(meth, "consensus")) return dpo__a1a_consensus(r, c);
  if (strcmp(meth, "dpadmm") && strcmp(meth, "dpaccadmm"))
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --admm %s: %s", meth,
                   strcmp(meth, "admm") && strcmp(meth, "accadmm")
                       ? "expected dpadmm or dpaccadmm"
                       : "the method adds no noise: audit dpadmm or dpaccadmm");
  if (strcmp(model, "logreg"))
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --admm: logistic regression (--model "
                   "logreg) only");
  if (strcmp(trust, "central") || dpo_config_get(cfg, "parties.count"))
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --admm: central trust only (under local "
                   "and secagg trust the coordinator's releases are the parties' sums, which "
                   "the audit does not observe)");
  if (dpo_config_get(cfg, "admm.graph") || dpo_config_get(cfg, "admm.graph_from"))
    return dpo_err(DPO_EINVAL, "dpopt audit --one-run --admm: A = I only (a graph --graph / "
                   "--graph-from names the declared columns, not the canaries')");
  snprintf(c->name, sizeof c->name, "audit-%s", meth);
  r->dir_name = c->name;
  return DPO_OK;
}

/* dpo_admm_rows_fn: the canaries into the loaded shards */
static int dpo__a1a_rows(void *arg, dpo_shard_t *train, dpo_shard_t *test, int last) {
  return dpo__a1_add_rows(arg, train, test, last);
}

static int dpo__a1a_setup(dpo_run_t *r) {
  dpo__a1_t *c = calloc(1, sizeof *c);
  int rc = c ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  r->release_arg = c; /* owned (dpo__a1a_destroy); r->kind is the admm kind's */
  r->stage = "audit";
  if (!rc) rc = dpo__a1_read(r->cfg, c);
  if (!rc) rc = dpo__a1a_settings(r, c);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  if ((rc = dpo__run_admm_ops.setup(r))) return rc; /* the directory claimed */
  dpo_admm_job_set_audit(dpo__run_admm_job(r), dpo__a1a_rows, dpo__a1_observe, c);
  r->stage = "audit";
  return DPO_OK;
}

static int dpo__a1a_load(dpo_run_t *r) {
  dpo__a1_t *c = dpo__a1a(r);
  double clip, b2;
  int64_t seed = 0;
  dpo_rng_t *rng = NULL;
  dpo_admm_job_bounds(dpo__run_admm_job(r), &clip, &b2);
  c->bias = 0; /* dpopt admm fits no intercept */
  c->add_remove = 0;
  c->has_clip = 1;
  c->clip = (dpo_clip_t){DPO_CLIP_L2, clip};
  dpo__a1_shape(c, NAN, b2);
  const int seeded = dpo_config_get(r->cfg, "run.seed") != NULL;
  int rc = dpo_config_get_int(r->cfg, "run.seed", 0, &seed);
  if (!rc && r->rank == 0) rc = dpo_rng_create(seeded, (uint64_t)seed, DPO__A1A_STREAM, &rng);
  if (!rc) rc = dpo__a1_alloc(c, r->rank, rng);
  dpo_rng_destroy(rng);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  MPI_Bcast(c->in, (int)c->m, MPI_UNSIGNED_CHAR, 0, r->comm); /* the last rank writes the rows */
  return dpo__run_admm_ops.load(r);
}

static int dpo__a1a_solve(dpo_run_t *r) {
  int rc = dpo__run_admm_ops.solve(r);
  r->stage = "audit";
  if (rc == DPO_EINTR) /* stopped by a signal: no resume (dpo__a1a_settings) */
    return dpo_err(DPO_EINTR, "stopped by a signal; the one-run audit of dpopt admm does not "
                   "resume: its charges stay spent in %s/ledger.jsonl", r->dir);
  if (rc == DPO_EBUDGET) rc = DPO_OK; /* the releases that ran are the audited run */
  const dpo__a1_t *c = dpo__a1a(r);
  if (!rc && (rc = dpo_agree(r->comm, r->rank == 0 && c->nrel == 0
                    ? dpo_err(DPO_EUNSUP, "dpopt audit --one-run --admm: the run made no "
                              "release the audit could observe") : DPO_OK)))
    return dpo__run_failed(r, rc);
  return rc;
}

static int dpo__a1a_evaluate(dpo_run_t *r) {
  dpo__a1_t *c = dpo__a1a(r);
  dpo_audit1_result_t *res = &c->res;
  int rc = dpo__run_admm_ops.evaluate(r);
  r->stage = "audit (analysis)";
  if (rc) return rc;
  const dpo_admm_result_t *ar = dpo_admm_job_result(dpo__run_admm_job(r));
  if (r->rank == 0) rc = dpo__a1_bound(c, ar->delta, c->alpha, res);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  snprintf(res->algorithm, sizeof res->algorithm, "%s", ar->method);
  res->claimed_eps = ar->eps; /* the budget the ledger charged against */
  res->claimed_delta = ar->delta;
  res->alpha = c->alpha;
  res->canaries = c->m;
  res->releases = c->nrel;
  res->add_remove = 0;
  res->gaussian = c->gauss;
  res->seeded = ar->seeded;
  for (int64_t i = 0; i < c->m; i++) res->included += c->in[i];
  res->violation = res->eps_lb > ar->eps;
  MPI_Bcast(res, (int)sizeof *res, MPI_BYTE, 0, r->comm);
  return DPO_OK;
}

/* r->summary_fn (rank 0): the admm run's summary.json with the audit's result and verdict */
static void dpo__a1a_summary(const dpo_run_t *r, json_object *sum) {
  dpo__a1_summary_add(sum, &dpo__a1a(r)->res);
}

static int dpo__a1a_write(dpo_run_t *r) {
  int rc = DPO_OK;
  r->summary_fn = dpo__a1a_summary;
  if (r->rank == 0) rc = dpo__a1_write_json(r->cfg, &dpo__a1a(r)->res);
  if ((rc = dpo_agree(r->comm, rc))) return dpo__run_failed(r, rc);
  rc = dpo__run_admm_ops.write(r);
  r->stage = "audit";
  return rc;
}

static void dpo__a1a_print(const dpo_run_t *r, FILE *out) {
  dpo__run_admm_ops.print(r, out);
  dpo_audit1_print(out, &dpo__a1a(r)->res, "");
}

static void dpo__a1a_destroy(dpo_run_t *r) {
  dpo__run_admm_ops.destroy(r);
  dpo__a1_free(r->release_arg);
  r->release_arg = NULL;
}

const dpo__run_ops_t dpo__run_audit1_admm_ops = {
    "audit",           dpo__a1a_setup, dpo__a1a_load,  dpo__a1a_solve, dpo__a1a_evaluate,
    dpo__a1a_write,    dpo__a1a_print, dpo__a1a_destroy};

/* Both modes' result (here, as this file calls into run_canary.c and not the other way): the
 * train mode's state is its kind's, the admm mode's is beside the admm kind's. */
int dpo_run_audit1_result(const dpo_run_t *r, dpo_audit1_result_t *res) {
  const int admm = r && r->ops == &dpo__run_audit1_admm_ops;
  if (!r || !res || (r->ops != &dpo__run_audit1_ops && !admm) || !r->evaluated)
    return dpo_err(DPO_EINVAL, "dpo_run_audit1_result: not a one-run audit that was evaluated");
  *res = ((const dpo__a1_t *)(admm ? r->release_arg : r->kind))->res;
  return DPO_OK;
}
