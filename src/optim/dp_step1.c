/* The DP-GD family's full-batch step with one meeting of the ranks (see dp_common.h and
 * comm/step1.h), as dp-sgd-rdp's (sco_dpsgd_step1.c).
 *
 * On the request path rank 0 charges the step, asks the other ranks for the full batch's sums
 * (a header behind the wait policy's gate, the reduction back) and noises them alone.  Inside
 * one data holder (central trust, no parties: dpo__oracle_step1_able) every rank computes the
 * step's charge from the same public numbers (a copy of rank 0's DP state), rank 0 charges it
 * before it joins the step's meeting (a refusal is its status there), one allgather gives every
 * rank the same bits of the sums, and every rank draws the same Laplace noise from its copy of
 * rank 0's stream (its state sent once, before the first step) and takes the same step.  The
 * ranks are one party: the key, x and the partial sums stay inside the data holder, as x and
 * the sums did on the request path; what leaves it is the run's outputs, each release's
 * charge made before the release was computed. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "comm/step1.h"
#include "dpopt/status.h"
#include "optim/dp_common.h"

void dpo__dp_add_reg(dpo__dp_t *dp, const double *x, double w, double *g) {
  memset(dp->gs, 0, (size_t)dp->d * sizeof *dp->gs);
  dpo_model_finish(dpo_oracle_model(dpo_solver_oracle(dp->s)), dp->d, 1, x, NULL, dp->gs);
  for (int32_t j = 0; j < dp->d; j++) g[j] += w * dp->gs[j];
}

int dpo__dp_grad1(dpo__dp_t *dp, const double *x, int64_t t, int st, const dpo_charge_t *c,
                  double w, double *g, double *b_out) {
  dpo_solver_t *s = dp->s;
  dpo_oracle_t *o = dpo_solver_oracle(s);
  const int rank = dpo_oracle_rank(o);
  const int32_t d = dp->d;
  dpo_rng_t *rng = dp->rng1 ? dp->rng1 : dpo_solver_rng(s);
  double charged = 0;
  /* rank 0's charge before anything of the step is computed; its refusal is its status */
  if (!st && rank == 0) st = dpo_ledger_charge(dpo_solver_ledger(s), c, &charged);
  int64_t used = 0;
  int rc = dpo__oracle_step1_sums(o, t, x, NULL, st, dp->gs, &used);
  if (rc == DPO_EREMOTE && rank != 0) { /* another rank ended the meetings: drop the step */
    memset(g, 0, (size_t)d * sizeof *g);
    return DPO_OK;
  }
  if (rc) return rc;
  /* m = n_pub under add-remove: the mean is the sum over the held rows / the public size */
  if (used != dp->n_held)
    rc = dpo_err(DPO_EINVAL, "dp: the oracle used %lld rows for a batch of %lld",
                 (long long)used, (long long)dp->n_held);
  for (int32_t j = 0; j < d; j++) g[j] = w * (dp->gs[j] / (double)dp->m);
  if (!rc) rc = dpo_mech_sample(DPO_MECH_LAPLACE, rng, c->noise_scale, g, d);
  if (rc && rank != 0) { /* told in the next meeting; the step dropped meanwhile */
    dpo__oracle_step1_fail(o, rc);
    memset(g, 0, (size_t)d * sizeof *g);
    return DPO_OK;
  }
  if (rc) return rc;
  if (rank == 0) {
    dp->last_b = c->noise_scale;
    dp->last_eps0 = c->eps;
    dp->last_charged = charged;
    dp->last_delta1 = c->sensitivity;
    dpo_release_t rel = {t, DPO_MECH_LAPLACE, c->noise_scale, c->sensitivity, 1.0, c->eps,
                         c->sampling, dp->m, dp->n, d, g, x, w / (double)dp->m};
    if ((rc = dpo_solver_release(s, &rel))) return rc;
  }
  /* the regularizer's gradient is public given x: added after the noise */
  dpo__dp_add_reg(dp, x, w, g);
  if (b_out) *b_out = c->noise_scale;
  return DPO_OK;
}

/* A worker's copy before its algorithm owns it (then dpo__dp_destroy frees it): its sums and
 * its stream are all it holds. */
static void dpo__dp_free1(dpo__dp_t *dp) {
  if (!dp) return;
  dpo_rng_destroy(dp->rng1);
  free(dp->gs);
  free(dp);
}

/* A worker's copy of rank 0's DP state: its numbers (a byte copy), its pointers its own. */
static int dpo__dp_replica(dpo_solver_t *s, const dpo__dp_t *src, const dpo_rng_state_t *st,
                           dpo__dp_t **out) {
  dpo__dp_t *dp = malloc(sizeof *dp);
  int rc = dp ? DPO_OK : DPO_ENOMEM;
  if (dp) {
    *dp = *src;
    dp->s = s;
    dp->perm = dp->ids = dp->hash = dp->prow0 = dp->pn = NULL;
    dp->active = dp->plist = NULL;
    dp->parties = NULL;
    dp->rng1 = NULL;
    dp->one = 1;
    dp->gs = malloc((size_t)(dp->d > 0 ? dp->d : 1) * sizeof *dp->gs);
    if (!dp->gs || dpo_rng_create(st->seeded, 0, 0, &dp->rng1) || dpo_rng_set_state(dp->rng1, st))
      rc = DPO_ENOMEM;
  }
  if (rc) {
    dpo__dp_free1(dp);
    return dpo_err(rc, "dp: no memory for this rank's copy of the step");
  }
  *out = dp;
  return DPO_OK;
}

int dpo__dp_step1_begin(dpo_solver_t *s, dpo__dp_t *dp, int on, int lrc, int64_t *max_iter,
                        double *pub, int npub, dpo__dp_t **copy, int *one) {
  dpo_oracle_t *o = dpo_solver_oracle(s);
  MPI_Comm comm = dpo_oracle_comm(o);
  const int rank = dpo_oracle_rank(o);
  int64_t iv[2] = {0, *max_iter};
  *one = 0;
  *copy = NULL;
  if (rank == 0 && dp) {
    iv[0] = on && !dp->parties && dp->m == dp->n && dp->sampling != DPO__DP_SAMPLE_DISJOINT &&
            dpo_solver_ledger(s) && dpo__oracle_step1_able(o);
    dp->one = 0;
  }
  if (MPI_Bcast(iv, 2, MPI_INT64_T, 0, comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "dp: MPI_Bcast of the step's plan failed");
  *max_iter = iv[1];
  if (!iv[0]) return DPO_OK;
  /* the state's numbers and the stream's key, nonce and position: inside the data holder */
  dpo__dp_t num;
  dpo_rng_state_t st;
  memset(&num, 0, sizeof num);
  if (rank == 0) num = *dp;
  int rc = DPO_OK;
  if (MPI_Bcast(&num, (int)sizeof num, MPI_BYTE, 0, comm) != MPI_SUCCESS ||
      (npub > 0 && MPI_Bcast(pub, npub, MPI_DOUBLE, 0, comm) != MPI_SUCCESS))
    rc = dpo_err(DPO_EMPI, "dp: MPI_Bcast of the step's plan failed");
  if (!rc) rc = dpo__oracle_step1_stream(o, dpo_solver_rng(s), dpo_solver_x(s),
                                         dpo_solver_dim(s), &st);
  if (!rc) rc = lrc;
  if (!rc && rank != 0) rc = dpo__dp_replica(s, &num, &st, copy);
  sodium_memzero(&st, sizeof st);
  rc = dpo_agree(comm, rc);
  if (!rc) rc = dpo__oracle_step1_begin(o);
  if (rc) {
    dpo__dp_free1(*copy);
    *copy = NULL;
    return rc;
  }
  if (rank == 0) dp->one = 1;
  *one = 1;
  return DPO_OK;
}
