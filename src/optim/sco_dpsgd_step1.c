/* dp-sgd-rdp with one meeting of the ranks a step (see sco_dpsgd.h and comm/step1.h).
 *
 * On the request path (sco_dpsgd.c) rank 0 draws the batch, charges the step, asks the other
 * ranks for the batch's sums (a header broadcast behind the wait policy's gate, the ids, the
 * reduction back) and noises and applies the step alone.  Here every rank of the one data
 * holder does all of it on its own copy of the state: the same batch and noise from an
 * identical copy of rank 0's stream (its state sent once, before the first step), the same
 * bits of the sums from one allgather folded in the reduction's order, the same update; only
 * rank 0 charges its ledger and shows the release to an observer.  Its charge of step t is
 * made before it joins step t's meeting, and a refusal (another run spent the shared store)
 * rides in that meeting as rank 0's status, so every rank drops the refused step.
 *
 * Why the guarantee is unchanged: the ranks are one party (central trust, no parties
 * declared: dpo__oracle_step1_able refuses an oracle with any), so the key and the partial
 * sums they exchange stay inside the data holder, as the sums and x did on the request path;
 * what leaves it is the run's outputs at the end (the model from rank 0, the journal of
 * charges made before each step was computed).  A trace row's sums ride in its step's
 * meeting (comm/step1.h); a checkpoint is rank 0's state alone; a resumed run sends the
 * checkpoint's momentum, mean and pool to the copies.  Runs that split the data between
 * parties keep the request path.
 */
#include <stdlib.h>

#include <sodium.h>

#include "comm/step1.h"
#include "dpopt/status.h"
#include "optim/sco_dpsgd.h"

/* the public numbers of the step that go to the other ranks */
enum { IV_ON, IV_MAXIT, IV_POISSON, IV_SCHED, IV_M, IV_T, IV_T0, IV_NPUB, IV_N, IV_D, IV_REL, IV_N_ };
enum { DV_SIGMA, DV_SENS, DV_LR, DV_BETA, DV_MU, DV_D, DV_N_ };

/* A worker's copy (no parties, no sco_common state: what dpsgd_destroy would free of it) */
static void dpsgd1_free(dpo__dpsgd_t *a) {
  if (!a) return;
  dpo_rng_destroy(a->rng1);
  free(a->pool), free(a->ids), free(a->g), free(a->avg), free(a->v), free(a);
}

/* A worker's copy of rank 0's state before its first step: zero momentum and average, the
 * identity pool (wor), rank 0's stream. */
static int dpsgd1_replica(const int64_t iv[IV_N_], const double dv[DV_N_],
                          const dpo_rng_state_t *st, dpo__dpsgd_t **out) {
  dpo__dpsgd_t *a = calloc(1, sizeof *a);
  int rc = a ? DPO_OK : DPO_ENOMEM;
  if (a) {
    a->poisson = (int)iv[IV_POISSON], a->sched = (int)iv[IV_SCHED];
    a->m = iv[IV_M], a->T = iv[IV_T], a->T0 = iv[IV_T0], a->npub = iv[IV_NPUB];
    a->c.n = iv[IV_N], a->c.d = (int32_t)iv[IV_D], a->c.rel = (dpo_neighbours_t)iv[IV_REL];
    a->sigma = dv[DV_SIGMA], a->sens = dv[DV_SENS], a->lr = dv[DV_LR], a->beta = dv[DV_BETA];
    a->mu = dv[DV_MU], a->c.D = dv[DV_D];
    a->ids_cap = a->poisson ? (a->m > 0 ? a->m : 1) : (a->c.n > 0 ? a->c.n : 1);
    a->pool = malloc((size_t)(a->poisson ? 1 : a->ids_cap) * sizeof *a->pool);
    a->ids = malloc((size_t)a->ids_cap * sizeof *a->ids);
    a->g = malloc((size_t)a->c.d * sizeof *a->g);
    a->avg = calloc((size_t)a->c.d, sizeof *a->avg);
    a->v = calloc((size_t)a->c.d, sizeof *a->v);
    if (!a->pool || !a->ids || !a->g || !a->avg || !a->v) rc = DPO_ENOMEM;
    for (int64_t i = 0; !rc && !a->poisson && i < a->c.n; i++) a->pool[i] = i;
    if (!rc && (dpo_rng_create(st->seeded, 0, 0, &a->rng1) || dpo_rng_set_state(a->rng1, st)))
      rc = DPO_ENOMEM;
    a->one = 1;
  }
  if (rc) {
    dpsgd1_free(a);
    return dpo_err(rc, "dp-sgd-rdp: no memory for this rank's copy of the step (d = %lld)",
                   (long long)iv[IV_D]);
  }
  *out = a;
  return DPO_OK;
}

int dpo__dpsgd_step1_begin(dpo_solver_t *s, void **state, int want, int64_t *max_iter, int *on) {
  dpo_oracle_t *o = dpo_solver_oracle(s);
  MPI_Comm comm = dpo_oracle_comm(o);
  const int rank = dpo_oracle_rank(o);
  dpo__dpsgd_t *a = rank == 0 ? *state : NULL;
  int64_t iv[IV_N_] = {0};
  double dv[DV_N_] = {0};
  *on = 0;
  if (a) {
    iv[IV_ON] = want && !a->ran && !a->sa.on && dpo_solver_ledger(s) && dpo__oracle_step1_able(o);
    iv[IV_MAXIT] = *max_iter;
    iv[IV_POISSON] = a->poisson, iv[IV_SCHED] = a->sched, iv[IV_M] = a->m, iv[IV_T] = a->T;
    iv[IV_T0] = a->T0, iv[IV_NPUB] = a->npub, iv[IV_N] = a->c.n, iv[IV_D] = a->c.d;
    iv[IV_REL] = (int64_t)a->c.rel;
    dv[DV_SIGMA] = a->sigma, dv[DV_SENS] = a->sens, dv[DV_LR] = a->lr, dv[DV_BETA] = a->beta;
    dv[DV_MU] = a->mu, dv[DV_D] = a->c.D;
  }
  if (MPI_Bcast(iv, IV_N_, MPI_INT64_T, 0, comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "dp-sgd-rdp: MPI_Bcast of the step's plan failed");
  *max_iter = iv[IV_MAXIT];
  if (rank == 0 && a) a->one = 0;
  if (!iv[IV_ON]) return DPO_OK;
  /* the key, nonce and position of rank 0's stream: inside the data holder only */
  dpo_rng_state_t st;
  int rc = MPI_Bcast(dv, DV_N_, MPI_DOUBLE, 0, comm) != MPI_SUCCESS
               ? dpo_err(DPO_EMPI, "dp-sgd-rdp: MPI_Bcast of the step's plan failed")
               : DPO_OK;
  if (!rc)
    rc = dpo__oracle_step1_stream(o, dpo_solver_rng(s), dpo_solver_x(s), (int)iv[IV_D], &st);
  dpo__dpsgd_t *copy = NULL;
  if (!rc && rank != 0) {
    if (*state) dpsgd1_free(*state), *state = NULL;
    rc = dpsgd1_replica(iv, dv, &st, &copy);
  }
  sodium_memzero(&st, sizeof st);
  rc = dpo_agree(comm, rc);
  /* a resumed run: the checkpoint's momentum, running mean and (wor) pool, from rank 0's
   * loaded state to the copies (a fresh run's are zeros and the identity) */
  if (!rc && dpo_solver_start_iter(s) > 0) {
    dpo__dpsgd_t *b = rank == 0 ? a : copy;
    const int d = (int)iv[IV_D];
    int brc = MPI_Bcast(b->v, d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS ||
              MPI_Bcast(b->avg, d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS;
    for (int64_t off = 0; !brc && !b->poisson && off < b->c.n; off += 1 << 24) {
      const int cnt = (int)(b->c.n - off < (1 << 24) ? b->c.n - off : 1 << 24);
      brc = MPI_Bcast(b->pool + off, cnt, MPI_INT64_T, 0, comm) != MPI_SUCCESS;
    }
    if (brc) rc = dpo_err(DPO_EMPI, "dp-sgd-rdp: MPI_Bcast of the resumed state failed");
  }
  if (!rc) rc = dpo__oracle_step1_begin(o);
  if (rc) {
    dpsgd1_free(copy);
    return rc;
  }
  if (rank != 0) *state = copy;
  else a->one = 1;
  *on = 1;
  return DPO_OK;
}

int dpo__dpsgd_step1(dpo_solver_t *s, dpo__dpsgd_t *a, int64_t t, const dpo_charge_t *ch,
                     int brc, int64_t mb, int *skip) {
  dpo_oracle_t *o = dpo_solver_oracle(s);
  const int rank = dpo_oracle_rank(o);
  const int32_t d = a->c.d;
  dpo_rng_t *rng = a->rng1 ? a->rng1 : dpo_solver_rng(s);
  *skip = 0;
  /* rank 0's charge before anything of the step is computed; its refusal is its status */
  int st = brc;
  if (!st && rank == 0) st = dpo_ledger_charge(dpo_solver_ledger(s), ch, NULL);
  dpo_batch_t b = {a->ids, mb};
  int rc = dpo__oracle_step1_sums(o, t, dpo_solver_x(s), &b, st, a->g, NULL);
  if (rc == DPO_EREMOTE && rank != 0) {
    *skip = 1;
    return DPO_OK;
  }
  if (rc) return rc;
  /* the plan's last meeting: the workers leave their loop after this step whatever follows
   * on rank 0 (a failing release or hook), so its end must not call them to another */
  if (t + 1 >= a->T) dpo__oracle_step1_close(o);
  /* the same inputs and stream on every rank: the same noise.  A failure here is rank 0's to
   * return (its driver then stops the others) or a worker's to tell in the next meeting (it
   * drops the step meanwhile) */
  if ((rc = dpo_mech_release(ch, rng, a->g, d)) && rank != 0) {
    dpo__oracle_step1_fail(o, rc);
    *skip = 1;
    return DPO_OK;
  }
  if (rc) return rc;
  if (rank != 0) return DPO_OK;
  dpo_release_t rel = {t, DPO_MECH_GAUSSIAN, a->sigma, a->sens, (double)a->m / (double)a->npub,
                       0, ch->sampling, a->m, a->npub, d, a->g, dpo_solver_x(s), 1.0};
  return dpo_solver_release(s, &rel);
}
