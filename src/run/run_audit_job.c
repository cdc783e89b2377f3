/* The audit's trials (the engine of the audit kind, run_audit.c, and of dpo_audit_run): the
 * construction of src/optim/audit_run.c run 2N times, trial t on rank t % P (round t / P),
 * each on MPI_COMM_SELF with its own in-memory ledger; dpopt admm's private methods run here,
 * above src/admm, so src/optim never calls up into it.  Rounds can be saved to a checkpoint and
 * restored, so a stopped audit keeps the trials it ran. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admm/admm_impl.h"
#include "dpopt/admm.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run/run_audit.h"

/* One private run of dpopt admm on s (MPI_COMM_SELF), set up as admm_run.c sets up the run
 * (same calibration, ledger, clipping, defaults):
 *  - dpadmm / dpaccadmm (Xu et al. 2020, Alg. 2 / 3, A = I): out = (x_T, y_T), the released
 *    primal pair.  Per-example L2 clip C, replace-one, sensitivity 2C/n per noised gradient
 *    (T + 1 of them, u0's included).  With lambda = 0 and T = 1, (x_1, y_1) is an invertible
 *    linear map of the two noised gradients, so the audit sees the whole mechanism.
 *  - consensus --private: one party (the trial's rank), its message x + u clipped to L2 <= C
 *    and noised (sensitivity 2C), charged "disjoint" per party; out = z_T.  White box: every
 *    broadcast noised message is observed (dpo__aj_cons_observe). */

/* The white-box adversary of consensus: it knows both candidate shards and sees every
 * broadcast, so it replays the party on D and on D' with the public consensus z (the same
 * code as the party, dpo__cons_party_*) and gets the noiseless message each world would send;
 * the release's log-likelihood ratio is then Gaussian with those two centres. */
typedef struct {
  dpo__wb_obs_t *obs;
  dpo__cons_party_t p[2];
  double zlast[DPO__AUDIT_MAXD];
  double clip;
} dpo__aj_cons_t;

static int dpo__aj_cons_observe(void *arg, const dpo_release_t *r) {
  dpo__aj_cons_t *c = arg;
  double m[2][DPO__AUDIT_MAXD];
  int64_t inner;
  int rc = DPO_OK, pres[2] = {1, 1}; /* replace-one: the canary is in both */
  for (int w = 0; w < 2 && !rc; w++) {
    if (r->step > 1) dpo__cons_party_u(&c->p[w], c->zlast, r->x);
    rc = dpo__cons_party_x(&c->p[w], r->x, NAN, m[w], &inner);
    dpo__cons_clip(m[w], r->d, c->clip);
  }
  memcpy(c->zlast, r->x, (size_t)r->d * sizeof *r->x);
  return rc ? rc : dpo__wb_observe_centres(c->obs, r, m[0], m[1], pres);
}

static int dpo__audit_admm_trial(const dpo__audit_t *a, const dpo_model_t *m,
                                 const dpo_shard_t *const sh[2], int which, dpo_rng_t *rng,
                                 double *out, double *spent, double *dspent, dpo__wb_obs_t *obs) {
  const dpo_shard_t *s = sh[which];
  dpo_ledger_t *L = NULL;
  dpo_oracle_t *o = NULL;
  dpo_admm_A_t *A = NULL;
  double own[2 * DPO__AUDIT_MAXD]; /* white box: the released pair is not the output */
  const int32_t nout = out ? a->dout : 2 * a->d;
  if (!out) out = own;
  int rc = dpo__audit_ledger(a, &L);
  for (int32_t j = 0; j < nout; j++) out[j] = j < a->d ? a->x0 : 0.0;
  if (!rc && !strcmp(a->admm, "consensus")) {
    dpo_admm_opts_t op;
    dpo_admm_info_t inf;
    dpo_admm_priv_t pv = {0};
    double z = 0;
    dpo_admm_opts_default(&op);
    op.g = DPO_ADMM_G_L1; /* dpopt admm's default --reg l1 */
    op.lambda = a->lambda;
    op.rho = a->rho;
    op.max_iter = a->iters;
    op.lin_eta = a->eta;
    rc = dpo_rdp_calibrate("none", 0, s->n_global, a->iters, a->eps * (1 - 1e-6), a->delta, &z);
    pv.clip = a->clip.C;
    pv.sigma = a->sigma_fixed > 0 ? a->sigma_fixed : z * 2.0 * a->clip.C;
    pv.accounting = "rdp";
    pv.rng = rng;
    pv.ledger = L;
    op.priv = &pv;
    dpo__aj_cons_t co;
    memset(&co, 0, sizeof co);
    if (obs) {
      co.obs = obs;
      co.clip = a->clip.C;
      memcpy(co.zlast, out, (size_t)a->d * sizeof *out);
      for (int w = 0; w < 2 && !rc; w++)
        rc = dpo__cons_party_init(&co.p[w], m, sh[w], &op, 1, out);
      op.observe = dpo__aj_cons_observe;
      op.observe_arg = &co;
    }
    if (!rc) rc = dpo_admm_consensus(MPI_COMM_SELF, m, s, &op, out, &inf);
    dpo__cons_party_free(&co.p[0]);
    dpo__cons_party_free(&co.p[1]);
  } else if (!rc) {
    dpo_dpadmm_opts_t op;
    dpo_dpadmm_info_t inf;
    dpo_dpadmm_opts_default(&op);
    op.accelerated = !strcmp(a->admm, "dpaccadmm");
    op.lambda = a->lambda;
    op.rho = a->rho;
    op.eta = a->eta;
    op.T = a->iters;
    op.noise = 1;
    op.clip = a->clip.C;
    op.eps = a->eps;
    op.delta = a->delta;
    op.mu = a->mu;
    op.restart = a->restart;
    op.sigma_fixed = a->sigma_fixed;
    op.sigma_rule = !strcmp(a->sigma_rule, "rdp")      ? DPO_DPADMM_SIGMA_RDP
                    : !strcmp(a->sigma_rule, "ledger") ? DPO_DPADMM_SIGMA_LEDGER
                                                       : DPO_DPADMM_SIGMA_EQ8;
    op.rng = rng;
    op.ledger = L;
    if (obs) {
      op.observe = dpo__wb_observe;
      op.observe_arg = obs;
    }
    rc = dpo_oracle_create(MPI_COMM_SELF, m, s, &a->clip, &o);
    if (!rc) rc = dpo_admm_A_identity(a->d, &A);
    if (!rc) rc = dpo_dpadmm_run(o, A, &op, out, out + a->d, &inf);
  }
  if (rc == DPO_EBUDGET || rc == DPO_ENOCONV) rc = DPO_OK; /* the last release is the output */
  if (!rc) rc = dpo_ledger_spent(L, spent, dspent);
  dpo_admm_A_destroy(A);
  dpo_oracle_destroy(o);
  dpo_ledger_close(L);
  return rc;
}

static int dpo__aj_trial(dpo__audit_job_t *j, int which, double *out, double *sp, double *dsp,
                         dpo__wb_obs_t *wb) {
  if (j->tune)
    return dpo__audit_tune_trial(j->tune, j->model, j->sh[which], which, j->rng, out, sp, dsp, wb);
  if (j->a.admm)
    return dpo__audit_admm_trial(&j->a, j->model, (const dpo_shard_t *const *)j->sh, which,
                                 j->rng, out, sp, dsp, wb);
  return dpo__audit_trial(&j->a, j->cfg, j->model, j->sh[which], j->rng, out, sp, dsp, wb);
}

/* A trial on D with the stream rng (out: a->dout before the white box's), observed by wb
 * unless NULL. */
static int dpo__aj_trial_rng(dpo__audit_job_t *j, dpo_rng_t *rng, double *out, double *sp,
                             double *dsp, dpo__wb_obs_t *wb) {
  if (j->tune) return dpo__audit_tune_trial(j->tune, j->model, j->sh[0], 0, rng, out, sp, dsp, wb);
  if (j->a.admm)
    return dpo__audit_admm_trial(&j->a, j->model, (const dpo_shard_t *const *)j->sh, 0, rng, out,
                                 sp, dsp, wb);
  return dpo__audit_trial(&j->a, j->cfg, j->model, j->sh[0], rng, out, sp, dsp, wb);
}

/* trials of this rank among rounds [0, k) */
static int64_t dpo__aj_mine_in(const dpo__audit_job_t *j, int rank, int64_t k) {
  int64_t n = 0;
  if (rank < j->T2) n = (j->T2 - rank + j->size - 1) / j->size;
  return n < k ? n : k;
}

int dpo__audit_job_setup(dpo__audit_job_t *j, MPI_Comm comm, const dpo_config_t *cfg,
                         const dpo_privacy_spec_t *spec) {
  int rc;
  memset(j, 0, sizeof *j);
  j->comm = comm;
  j->cfg = cfg;
  MPI_Comm_rank(comm, &j->rank);
  MPI_Comm_size(comm, &j->size);
  j->N = DPO_AUDIT_TRIALS;
  j->alpha = 0.05;
  if (!(rc = dpo_config_get_int(cfg, "audit.trials", DPO_AUDIT_TRIALS, &j->N)) &&
      !(rc = dpo_config_get_double(cfg, "audit.alpha", 0.05, &j->alpha)) &&
      (j->N < 4 || j->N > 100000000 || !(j->alpha > 0 && j->alpha < 1)))
    rc = dpo_err(DPO_EINVAL, "audit.trials must be >= 4 and audit.alpha in (0, 1)");
  if (!rc) rc = dpo__audit_setup(cfg, spec, &j->a);
  if (!rc && j->a.tune) rc = dpo__audit_tune_setup(cfg, &j->a, &j->tune);
  if (!rc && j->a.tune_mean) dpo__audit_tune_geo(j->tune, &j->a.tune_b, &j->a.tune_eps0, &j->a.tune_z);
  /* dpopt admm puts lambda in g (l1), not in the model */
  if (!rc && !(rc = dpo_model_create(j->a.model_name, j->a.admm ? 0.0 : j->a.lambda, &j->model)) &&
      !(rc = dpo__audit_shard(&j->a, 0, &j->sh[0])))
    rc = dpo__audit_shard(&j->a, 1, &j->sh[1]);
  /* a probe trial on its own secure stream: every key a trial reads is read (so a key nothing
   * reads is refused before the run directory is claimed) and the algorithm's refusals come
   * first; its output is discarded and the trials' streams are untouched */
  dpo_rng_t *probe = NULL;
  double out[2 * DPO__AUDIT_MAXD], sp = 0, dsp = 0;
  /* white box without audit.trials: the probe's releases tell the plan, and batches without
   * replacement under replace-one (the wsg test: its bound comes from the guesses' accuracy,
   * whose margin shrinks as 1 / sqrt(N)) default to DPO_AUDIT_TRIALS_WOR, the count at which
   * the default dp-sgd-rdp plan's bound reaches 0.7 of the claim (doc/results.md) */
  dpo__wb_obs_t po = {0};
  const int pick = !rc && j->a.white_box && !j->a.final_model && !j->a.admm && !j->a.add_remove &&
                   j->a.algo_name && !strcmp(j->a.algo_name, "dp-sgd-rdp") &&
                   !dpo_config_get(cfg, "audit.trials");
  if (pick) dpo__wb_begin(&po, &j->a);
  if (!rc && !(rc = dpo_rng_create(0, 0, (uint64_t)j->rank, &probe)))
    rc = dpo__aj_trial_rng(j, probe, out, &sp, &dsp, pick ? &po : NULL);
  if (!rc && pick && po.flags == (DPO__WB_GAUSS | DPO__WB_SUB))
    j->N = DPO_AUDIT_TRIALS_WOR;
  /* a white-box tune: every candidate's final run must release alike (refused here, before
   * the run directory is claimed) */
  if (!rc && j->tune && j->a.white_box) {
    dpo__wb_begin(&po, &j->a);
    rc = dpo__audit_tune_releases(j->tune, j->model, j->sh[0], probe, &po);
  }
  if (!rc && j->tune) dpo__audit_tune_mark_read(j->tune, cfg);
  dpo__wb_free(&po);
  dpo_rng_destroy(probe);
  j->T2 = 2 * j->N;
  j->rounds = (j->T2 + j->size - 1) / j->size;
  return dpo_agree(comm, rc);
}

int dpo__audit_job_load(dpo__audit_job_t *j) {
  dpo__audit_t *a = &j->a;
  int rc;
  if ((rc = dpo_agree(j->comm, dpo__audit_rng(j->rank, &j->rng)))) return rc;
  /* white box: a pilot run on D tells the number of releases K (the plan's; the same in
   * every run), and each trial's output is its record of DPO__WB_HDR + K numbers */
  j->wb = a->white_box && !a->final_model ? &j->obs : NULL;
  if (j->wb) {
    double sp = 0, dsp = 0, kmm[2];
    dpo__wb_begin(j->wb, a);
    rc = j->tune ? dpo__audit_tune_releases(j->tune, j->model, j->sh[0], j->rng, j->wb)
                 : dpo__aj_trial(j, 0, NULL, &sp, &dsp, j->wb);
    if ((rc = dpo_agree(j->comm, rc))) return rc;
    double kl[2] = {(double)j->obs.nrel, -(double)j->obs.nrel};
    MPI_Allreduce(kl, kmm, 2, MPI_DOUBLE, MPI_MAX, j->comm);
    const char *name = a->admm ? a->admm : a->algo_name;
    if (kmm[0] < 1)
      rc = dpo_err(DPO_EUNSUP, "dpopt audit --white-box: %s reports no release to the observer "
                   "(observed: the DP-GD family, dp-sgd-rdp, dpadmm and dpaccadmm; final model "
                   "only: pnsgd, phased-sgd, phased-sc, sc-reduce); audit it without --white-box", name);
    else if (kmm[0] != -kmm[1])
      rc = dpo_err(DPO_EINVAL, "dpopt audit --white-box: %s made %g releases on one rank, %g on "
                   "another", name, kmm[0], -kmm[1]);
    if ((rc = dpo_agree(j->comm, rc))) return rc;
    a->dout = DPO__WB_HDR + (int32_t)kmm[0];
  }
  int64_t nmine = dpo__aj_mine_in(j, j->rank, j->rounds);
  if (!(j->mine = malloc((size_t)(nmine * a->dout + 1) * sizeof *j->mine)))
    rc = dpo_err(DPO_ENOMEM, "out of memory");
  return dpo_agree(j->comm, rc);
}

int dpo__audit_job_round(dpo__audit_job_t *j) {
  dpo__audit_t *a = &j->a;
  int64_t t = j->rank + j->done * j->size, k = j->done;
  int rc = DPO_OK;
  j->done++;
  if (t >= j->T2) return DPO_OK; /* the last round: some ranks have no trial */
  double sp = NAN, dsp = NAN, *out = j->mine + k * a->dout;
  if (j->wb) dpo__wb_begin(j->wb, a);
  rc = dpo__aj_trial(j, (int)(t % 2), j->wb ? NULL : out, &sp, &dsp, j->wb);
  if (!rc && j->wb) rc = dpo__wb_record(j->wb, a->dout - DPO__WB_HDR, out);
  if (!rc && !(sp >= 0)) rc = dpo_err(DPO_EINVAL, "%s charged nothing", a->admm ? a->admm : a->algo_name);
  if (!rc) {
    j->spent[0] = fmax(j->spent[0], sp);
    j->spent[1] = fmax(j->spent[1], dsp);
  }
  return rc;
}

/* Rank 0: each rank's outputs of the rounds done, in rank order (counts, displs of P). */
static int dpo__aj_gather(dpo__audit_job_t *j, double **buf, int *counts, int *displs) {
  int cnt = (int)(dpo__aj_mine_in(j, j->rank, j->done) * j->a.dout), rc = DPO_OK;
  int64_t tot = 0;
  MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, j->comm);
  if (j->rank == 0) {
    for (int r = 0; r < j->size; r++) {
      displs[r] = (int)tot;
      tot += counts[r];
    }
    if (!(*buf = malloc((size_t)(tot + 1) * sizeof **buf))) rc = dpo_err(DPO_ENOMEM, "out of memory");
  }
  if ((rc = dpo_agree(j->comm, rc))) return rc;
  if (MPI_Gatherv(j->mine, cnt, MPI_DOUBLE, j->rank == 0 ? *buf : NULL, counts, displs,
                  MPI_DOUBLE, 0, j->comm) != MPI_SUCCESS)
    rc = dpo_err(DPO_EMPI, "MPI_Gatherv of the audit outputs failed");
  return dpo_agree(j->comm, rc);
}

int dpo__audit_job_finish(dpo__audit_job_t *j, dpo_audit_result_t *res) {
  int *counts = NULL, *displs = NULL, rc = DPO_OK;
  double *buf = NULL, *all[2] = {NULL, NULL}, sp[2] = {0, 0};
  memset(res, 0, sizeof *res);
  MPI_Reduce(j->spent, sp, 2, MPI_DOUBLE, MPI_MAX, 0, j->comm);
  if (j->rank == 0) {
    counts = malloc((size_t)j->size * sizeof *counts);
    displs = malloc((size_t)j->size * sizeof *displs);
    all[0] = malloc((size_t)(j->N * j->a.dout) * sizeof *all[0]);
    all[1] = malloc((size_t)(j->N * j->a.dout) * sizeof *all[1]);
    rc = counts && displs && all[0] && all[1] ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  }
  if (!(rc = dpo_agree(j->comm, rc)) && !(rc = dpo__aj_gather(j, &buf, counts, displs))) {
    if (j->rank == 0)
      rc = dpo__audit_collect(&j->a, j->size, displs, buf, all, j->N, j->alpha, sp, res);
    if (!(rc = dpo_agree(j->comm, rc))) MPI_Bcast(&res->violation, 1, MPI_INT, 0, j->comm);
  }
  free(buf);
  free(all[0]);
  free(all[1]);
  free(counts);
  free(displs);
  return rc;
}

/* The checkpoint holds the rounds done, every output of them, the charges' maxima and, for a
 * seeded audit only (dpopt-test), each rank's stream position: a secure stream's OS key is
 * never written, a resumed audit draws fresh noise for the trials left. */
int dpo__audit_job_save(dpo__audit_job_t *j, dpo_ckpt_t *c) {
  int *counts = NULL, *displs = NULL, rc = DPO_OK;
  double *buf = NULL, sp[2] = {0, 0};
  const int seeded = dpo_rng_is_seeded(j->rng);
  dpo_rng_state_t st, *sts = NULL;
  MPI_Reduce(j->spent, sp, 2, MPI_DOUBLE, MPI_MAX, 0, j->comm);
  if (j->rank == 0) {
    counts = malloc((size_t)j->size * sizeof *counts);
    displs = malloc((size_t)j->size * sizeof *displs);
    sts = calloc((size_t)j->size, sizeof *sts);
    rc = counts && displs && sts ? DPO_OK : dpo_err(DPO_ENOMEM, "out of memory");
  }
  if (!(rc = dpo_agree(j->comm, rc)) && !(rc = dpo__aj_gather(j, &buf, counts, displs))) {
    memset(&st, 0, sizeof st);
    if (seeded) dpo_rng_get_state(j->rng, &st);
    MPI_Gather(&st, (int)sizeof st, MPI_BYTE, sts, (int)sizeof st, MPI_BYTE, 0, j->comm);
    if (j->rank == 0) {
      int64_t tot = displs[j->size - 1] + counts[j->size - 1];
      int64_t hdr[5] = {j->size, j->N, j->a.dout, j->done, seeded};
      if (!(rc = dpo_ckpt_put_i64(c, "audit.header", hdr, 5)) &&
          !(rc = dpo_ckpt_put_f64(c, "audit.spent", sp, 2)) &&
          !(rc = dpo_ckpt_put_f64(c, "audit.out", buf, tot)) && seeded)
        rc = dpo_ckpt_put_bytes(c, "audit.rng", sts, (int64_t)(j->size * sizeof *sts));
    }
  }
  free(buf);
  free(counts);
  free(displs);
  free(sts);
  return dpo_agree(j->comm, rc);
}

/* Collective, after dpo__audit_job_load: c is rank 0's (NULL elsewhere). */
int dpo__audit_job_restore(dpo__audit_job_t *j, const dpo_ckpt_t *c) {
  int64_t hdr[5] = {0, 0, 0, 0, 0};
  int rc = DPO_OK, *counts = NULL, *displs = NULL;
  double *buf = NULL, sp[2] = {0, 0};
  dpo_rng_state_t st, *sts = NULL;
  if (j->rank == 0) {
    if ((rc = dpo_ckpt_get_i64(c, "audit.header", hdr, 5)) ||
        (rc = dpo_ckpt_get_f64(c, "audit.spent", sp, 2)))
      ;
    else if (hdr[0] != j->size)
      rc = dpo_err(DPO_EINVAL, "--resume: the audit ran on %lld ranks: resume it on %lld (its "
                   "trials are given to the ranks by number)", (long long)hdr[0], (long long)hdr[0]);
    else if (hdr[1] != j->N || hdr[2] != j->a.dout || hdr[3] < 0 || hdr[3] > j->rounds)
      rc = dpo_err(DPO_EFORMAT, "--resume: the checkpoint's trials do not match this audit");
    else if (hdr[4] != dpo_rng_is_seeded(j->rng))
      rc = dpo_err(DPO_EINVAL, "--resume: the audit was %s; resume it the same way",
                   hdr[4] ? "seeded (dpopt-test --test-seed)" : "not seeded");
  }
  if ((rc = dpo_agree(j->comm, rc))) return rc;
  MPI_Bcast(hdr, 5, MPI_INT64_T, 0, j->comm);
  j->done = hdr[3];
  if (j->rank == 0) {
    j->spent[0] = sp[0];
    j->spent[1] = sp[1];
    counts = malloc((size_t)j->size * sizeof *counts);
    displs = malloc((size_t)j->size * sizeof *displs);
    sts = calloc((size_t)j->size, sizeof *sts);
    int64_t tot = 0;
    for (int r = 0; counts && displs && r < j->size; r++) {
      counts[r] = (int)(dpo__aj_mine_in(j, r, j->done) * j->a.dout);
      displs[r] = (int)tot;
      tot += counts[r];
    }
    if (!counts || !displs || !sts || !(buf = malloc((size_t)(tot + 1) * sizeof *buf)))
      rc = dpo_err(DPO_ENOMEM, "out of memory");
    else if (!(rc = dpo_ckpt_get_f64(c, "audit.out", buf, tot)) && hdr[4])
      rc = dpo_ckpt_get_bytes(c, "audit.rng", sts, (int64_t)(j->size * sizeof *sts));
  }
  if (!(rc = dpo_agree(j->comm, rc))) {
    int cnt = (int)(dpo__aj_mine_in(j, j->rank, j->done) * j->a.dout);
    MPI_Scatterv(buf, counts, displs, MPI_DOUBLE, j->mine, cnt, MPI_DOUBLE, 0, j->comm);
    MPI_Scatter(sts, (int)sizeof st, MPI_BYTE, &st, (int)sizeof st, MPI_BYTE, 0, j->comm);
    if (hdr[4]) rc = dpo_rng_set_state(j->rng, &st);
    rc = dpo_agree(j->comm, rc);
  }
  free(buf);
  free(counts);
  free(displs);
  free(sts);
  return rc;
}

void dpo__audit_job_free(dpo__audit_job_t *j) {
  dpo__audit_tune_free(j->tune);
  dpo__wb_free(&j->obs);
  free(j->mine);
  dpo_rng_destroy(j->rng);
  dpo_shard_destroy(j->sh[0]);
  dpo_shard_destroy(j->sh[1]);
  dpo_model_destroy(j->model);
  memset(j, 0, sizeof *j);
}

int dpo__audit_job_run(dpo__audit_job_t *j, const dpo__audit_loop_t *o) {
  int rc = DPO_OK, stop = 0;
  /* the ranks meet (stop flag, errors) every `step` rounds, rank 0 sizing it to about half a
   * second of trials, and at every block, checkpoint and stop_after: a cheap trial costs less
   * than a collective on a busy machine.  Which trials run is fixed by the round numbers, so
   * where the ranks meet changes no result. */
  int64_t step = 1, start = j->done, blk = o->blk > 0 ? o->blk : j->rounds;
  while (j->done < j->rounds) {
    int64_t until = j->done + step, b = (j->done / blk + 1) * blk;
    if (until > b) until = b;
    if (o->ckpt_every > 0 && until > (b = (j->done / o->ckpt_every + 1) * o->ckpt_every)) until = b;
    if (o->stop_after > 0 && until > start + o->stop_after) until = start + o->stop_after;
    if (until > j->rounds) until = j->rounds;
    double t0 = dpo_wtime();
    int64_t from = j->done;
    while (!rc && j->done < until) rc = dpo__audit_job_round(j);
    j->done = until; /* a rank that failed stops early; the status is agreed below */
    /* rank 0's flag decides for every rank (a launcher may signal only some) */
    double el = dpo_wtime() - t0, grow = 4.0 * (double)step + 1;
    int64_t msg[2];
    msg[0] = (o->stop && *o->stop) || (o->stop_after > 0 && j->done - start >= o->stop_after);
    msg[1] = (int64_t)(el > 0 ? fmin(grow, fmax(1.0, 0.5 * (double)(until - from) / el)) : grow);
    MPI_Bcast(msg, 2, MPI_INT64_T, 0, j->comm);
    stop = (int)msg[0];
    step = msg[1];
    if ((rc = dpo_agree(j->comm, rc))) return rc;
    if (o->block && (j->done % blk == 0 || j->done == j->rounds)) o->block(o->arg);
    if (j->done < j->rounds && o->save &&
        (stop || (o->ckpt_every > 0 && j->done % o->ckpt_every == 0)) && (rc = o->save(o->arg)))
      return rc;
    if (stop && j->done < j->rounds) return DPO_EINTR;
  }
  return DPO_OK;
}

/* dpo_audit_run's progress (rank 0): a line every 10 s or so, at block boundaries */
typedef struct {
  const dpo__audit_job_t *j;
  int quiet;
  double t0, next;
} dpo__audit_prog_t;
static void dpo__audit_prog(void *arg) {
  dpo__audit_prog_t *p = arg;
  const double el = dpo_wtime() - p->t0;
  if (p->j->rank != 0 || p->quiet || el < p->next) return;
  fprintf(stderr, "dpopt audit: %lld of %lld runs on rank 0 (%.0f s)\n", (long long)p->j->done,
          (long long)p->j->rounds, el);
  p->next = el + 10;
}

/* dpopt/audit.h: the audit in memory, no run directory (the audit kind writes one). */
int dpo_audit_run(MPI_Comm comm, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                  int quiet, dpo_audit_result_t *res) {
  dpo__audit_job_t j;
  memset(&j, 0, sizeof j);
  memset(res, 0, sizeof *res);
  int rc = dpo__audit_job_setup(&j, comm, cfg, spec);
  if (!rc) rc = dpo__audit_job_load(&j);
  /* the audit kind's rounds (dpo__audit_job_run) without a directory: no checkpoint, no stop */
  dpo__audit_prog_t p = {&j, quiet, dpo_wtime(), 10};
  const dpo__audit_loop_t lo = {j.rounds / 20 > 1 ? j.rounds / 20 : 1, 0, 0, NULL,
                                dpo__audit_prog, NULL, &p};
  if (!rc) rc = dpo__audit_job_run(&j, &lo);
  if (!rc) rc = dpo__audit_job_finish(&j, res);
  dpo__audit_job_free(&j);
  return rc;
}
