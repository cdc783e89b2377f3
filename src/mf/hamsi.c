/* Distributed HAMSI (thesis Chapter 3, Alg. 3) and its mb-GD baseline for matrix
 * factorization: the driver (options, the epoch loop of lines 5-19, evaluation, result).
 * See dpopt/hamsi.h for the method and src/mf/hamsi_impl.h for the layout and the files:
 * set-up in hamsi_setup.c, one block's step and the L-BFGS pair in hamsi_step.c, the
 * item-block ring in hamsi_ring.c, the safeguards after an epoch in hamsi_guard.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/hamsi.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"
#include "mf/hamsi_impl.h"
#include "mf/mf_impl.h"

void dpo_hamsi_opts_default(dpo_hamsi_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->method = DPO_MF_HAMSI;
  o->part = DPO_MF_STRATA_B;
  o->sched = DPO_MF_SCHED_DET;
  o->r = 10;
  o->nblocks = 0;
  o->memory = 5;
  /* beta_t = (eta t)^gamma (Alg. 3 line 5) divides every step (line 13; mb-GD x -= sigma0
   * D^-1 g / beta_t).  eta = 1 keeps beta_t >= 1, the hypothesis of Thm 3.1.3 (the thesis's
   * eta = 0.06 gives beta_1 = 0.24, a 4x longer first step).  sigma0 is in degree-scaled
   * units (hamsi.h), so it does not depend on the data size or the number of strata. */
  o->eta = 1;
  o->gamma = 0.51;
  o->eta_late = 0;
  o->eta_from = 30;
  o->sigma0 = 0.2;
  o->metric_pow = 1;
  o->lambda = 0;
  o->init_scale = -1; /* <0: 2 sqrt(3 / r), so x1'x2 starts near 3 on a 1..5 scale (public) */
  o->epochs = 20;
  o->time_limit = 0;
  o->holdout = 0.1;
  o->seed = 1;
  o->repro = 0;
  o->eval_every = 1;
  o->eval_budget = 0;
  o->step_cap = 30;
  o->cache_mb = 256;
  o->reject_tol = 0.1;
}

void dpo_hamsi_result_destroy(dpo_hamsi_result_t *r) {
  if (!r) return;
  free(r->X1);
  free(r->X2t);
  free(r->bu);
  free(r->bi);
  free(r->trace);
  free(r);
}
/* Training RMSE (NON-PRIVATE diagnostic; NaN when !train: the pass over the training ratings
 * is 90% of an evaluation, the held-out split is small) and held-out RMSE at the current
 * point.  rsm (may be NULL): the training RMSE on a fixed sample of about 1/8 of the training
 * ratings (a hash of (user, item), so rank-independent), cheap enough for every early-stopping
 * check. */
#define DPO__ES_PROGRESS 0.005
#define DPO__SAMPLE(u, i) ((dpo__mf_mix(((uint64_t)(uint32_t)(u) << 32) | (uint32_t)(i)) & 7) == 0)
DPO_CLONES_LEVELS static int dpo__eval(dpo__hm_t *h, double *x2full, int64_t ntr, int64_t nte, int train,
                     double *rtr, double *rte, double *rsm) {
  int32_t r = h->r;
  int32_t nparts = h->grid ? h->B : h->nch;
  memset(x2full, 0, sizeof(double) * (size_t)h->ni * r);
  for (int32_t c = 0; c < h->B; c++)
    if (h->cbuf[c])
      memcpy(x2full + (int64_t)h->col_cut[c] * r, h->cbuf[c], sizeof(double) * (size_t)dpo__nvc(h, c));
  /* grid: each item row has exactly one holder, so the sum is exact; generic: X2 is
   * replicated (identical on every rank) */
  if (h->grid)
    DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x2full, h->ni * r, MPI_DOUBLE, MPI_SUM, h->comm));
  /* per part: [training SSE, held-out SSE, sample SSE, sample count] */
  double *part = h->part, out[4];
  memset(part, 0, sizeof(double) * (size_t)nparts * 4);
  for (int64_t b = 0; b < h->nblk && (train || rsm); b++) {
    const dpo__blk_t *bk = &h->blk[b];
    int32_t p = h->grid ? h->i0 + (int32_t)(b / h->B) : 0;
    int64_t c0 = h->col_cut[bk->cb];
    for (int64_t k = bk->off; k < bk->off + bk->n; k++) {
      int smp = rsm && DPO__SAMPLE(h->u0 + h->lu[k], c0 + h->li[k]);
      if (!train && !smp) continue;
      if (!h->grid) p = h->chunk_of[h->u0 + h->lu[k]];
      const double *a = h->x1 + (int64_t)h->lu[k] * r, *x = x2full + (c0 + h->li[k]) * r;
      double pr = dpo__mf_dot(r, a, x);
      double e2 = (pr - h->y[k]) * (pr - h->y[k]);
      if (train) part[4 * p] += e2;
      if (smp) {
        part[4 * p + 2] += e2;
        part[4 * p + 3] += 1;
      }
    }
  }
  for (int64_t k = 0; k < h->ntest; k++) {
    int32_t p = h->grid ? h->uint_of[h->tu_u[k]] : h->chunk_of[h->tu_u[k]];
    const double *a = h->x1 + (int64_t)(h->tu_u[k] - h->u0) * r, *x = x2full + (int64_t)h->tu_i[k] * r;
    double pr = dpo__mf_dot(r, a, x);
    part[4 * p + 1] += (pr - h->ty[k]) * (pr - h->ty[k]);
  }
  int st = dpo__hm_reduce_parts(h, part, nparts, 4, out);
  if (st) return st;
  *rtr = ntr && train ? sqrt(out[0] / ntr) : NAN;
  *rte = nte ? sqrt(out[1] / nte) : NAN;
  if (rsm) *rsm = out[3] > 0 ? sqrt(out[2] / out[3]) : NAN;
  return DPO_OK;
}

/* per-rank arrays x-bar, g-bar, s, y of item block c (kept where the block starts an epoch) */
static int dpo__cb_aux(dpo__hm_t *h, int32_t c) {
  if (h->xbc[c]) return DPO_OK;
  int64_t nv = dpo__nvc(h, c);
  h->xbc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  h->gbc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  h->sc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  h->yc[c] = malloc(sizeof(double) * (size_t)(nv ? nv : 1));
  if (!h->xbc[c] || !h->gbc[c] || !h->sc[c] || !h->yc[c])
    return dpo_err(DPO_ENOMEM, "item block %d history", c);
  return DPO_OK;
}

/* ---- Generic partitions on P ranks (HOGWILD, COLOR, COLOR-B) ----
 *
 * Their subsets S_k are not split into variable-disjoint row x column blocks, so the item
 * factors cannot travel as blocks.  Instead X2t (with its rows of S, Y and x-bar, g-bar) is
 * replicated; rank p processes the ratings of a unit whose users it owns (it owns those rows
 * of X1), sequentially in the serial order, against its copy, and ONE Allreduce per unit sums
 * the ranks' item steps: afterwards every copy is x2_start + sum_p (steps of rank p).  On the
 * first / last inner step of an epoch the same Allreduce carries the item gradients that
 * Alg. 3 lines 12 and 14 accumulate (g-bar and y).
 *
 * A unit is a stratum: one exchange per stratum, the stratum's blocks (single ratings) run
 * "in parallel" as in Alg. 3 line 9, with the thesis's threads replaced by ranks.  An item
 * that two ranks touch in one stratum gets the sum of their steps, each taken from the
 * stratum's start: the serial sequential pass to first order in the step, so the P-rank run
 * is a different, P-dependent iteration that converges (res->disjoint = 0).  For HOGWILD that
 * is its design.  In quasi-Newton epochs the steps come near the stratum's Newton step (sigma
 * from the pairs up to ~2 against sigma0 = 0.2), and m ranks' full steps from the same start
 * overshoot m-fold where the serial pass corrects itself rating by rating: COLOR at rank 50
 * on 2 ranks went from training RMSE 0.535 to 68 in 13 epochs.  So there an item row gets
 * the average of the steps of the m ranks that moved it (with the user rows fixed the
 * stratum's objective is convex in one item row: the average is no worse than the ranks'
 * proposals on average); gradient
 * epochs keep the sum.  For COLOR / COLOR-B with repro the unit is a (stratum, color) instead: a
 * color is a matching of the conflict graph (thesis Sec. 3.3: no two of its functions share a
 * user or an item), so in a unit each item row is changed by ONE rating on ONE rank, the sum
 * adds zeros to that single step (exact) and x2_start + (-s) == x2_start - s is the serial
 * update bit for bit; users are disjoint too, and units are done in the serial order.  That
 * reproduces the 1-rank factors bit for bit (the 2M L-BFGS inner products use fixed user
 * chunks), at the price of one Allreduce per color: hundreds to thousands an epoch, which on
 * ML-1M-like data left 1 epoch in 10 s at 2 ranks. */
static int dpo__unit(dpo__hm_t *h, int64_t g, double *a1, double *a2, double *fp) {
  int32_t r = h->r;
  int64_t t0 = h->toff[g], nt = h->toff[g + 1] - t0;
  if (!nt) return DPO_OK; /* empty for every rank (the list is global) */
  const int32_t *it = h->titem + t0;
  double *xc = h->cbuf[0];
  int acc = a2 != NULL;
  for (int64_t j = 0; j < nt; j++) {
    int64_t o = (int64_t)it[j] * r;
    memcpy(h->xs + j * r, xc + o, sizeof(double) * (size_t)r);
    memset(h->dx2 + o, 0, sizeof(double) * (size_t)r);
    if (acc) memset(h->gx2 + o, 0, sizeof(double) * (size_t)r);
  }
  for (int64_t t = h->uoff[g]; t < h->uoff[g + 1]; t++)
    dpo__hm_block(h, &h->blk[0], h->sord[t], xc, a1, acc ? h->gx2 : NULL, h->dx2,
                  fp ? fp + 3 * h->chunk_of[h->u0 + h->lu[h->sord[t]]] : NULL);
  double tc = MPI_Wtime();
  /* quasi-Newton epochs, one exchange per stratum: an item's steps proposed by m ranks are
   * averaged, not summed (see above); the last slot counts the proposers */
  int avg = h->hamsi && h->nph == 1 && h->lb.m >= dpo__hm_qn_pairs(h);
  int64_t w = (int64_t)r * (acc ? 2 : 1) + avg;
  for (int64_t j = 0; j < nt; j++) {
    int64_t o = (int64_t)it[j] * r;
    memcpy(h->pk + j * w, h->dx2 + o, sizeof(double) * (size_t)r);
    if (acc) memcpy(h->pk + j * w + r, h->gx2 + o, sizeof(double) * (size_t)r);
    if (avg) {
      int moved = 0;
      for (int32_t q = 0; q < r && !moved; q++) moved = h->dx2[o + q] != 0;
      h->pk[j * w + w - 1] = moved;
    }
  }
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, h->pk, (int)(nt * w), MPI_DOUBLE, MPI_SUM, h->comm));
  h->exchanges++;
  for (int64_t j = 0; j < nt; j++) {
    int64_t o = (int64_t)it[j] * r;
    double m = avg ? h->pk[j * w + w - 1] : 1;
    for (int32_t q = 0; q < r; q++) {
      xc[o + q] = h->xs[j * r + q] + (m > 1 ? h->pk[j * w + q] / m : h->pk[j * w + q]);
      if (acc) a2[o + q] += h->pk[j * w + r + q];
    }
  }
  h->t_comm += MPI_Wtime() - tc;
  return DPO_OK;
}

/* mb-GD safeguard's first reference: F at the initial point, the objective of every training
 * rating (as dpo__hm_block sums it) with the full X2 in x2full (after dpo__eval).  Collective. */
static int dpo__gd_f0(dpo__hm_t *h, const double *x2full) {
  int32_t r = h->r, nparts = h->grid ? h->B : h->nch;
  double lam = h->o.lambda, out[3];
  for (int64_t b = 0; b < h->nblk; b++) {
    const dpo__blk_t *bk = &h->blk[b];
    int32_t p = h->grid ? h->i0 + (int32_t)(b / h->B) : 0;
    int64_t c0 = h->col_cut[bk->cb];
    for (int64_t k = bk->off; k < bk->off + bk->n; k++) {
      if (!h->grid) p = h->chunk_of[h->u0 + h->lu[k]];
      const double *a = h->x1 + (int64_t)h->lu[k] * r, *x = x2full + (c0 + h->li[k]) * r;
      double pr = 0, n1 = 0, n2 = 0;
      for (int32_t q = 0; q < r; q++) {
        pr += a[q] * x[q];
        n1 += a[q] * a[q];
        n2 += x[q] * x[q];
      }
      /* biased model: the constant columns' L2 term is left out, as in dpo__hm_block */
      double f = (pr - h->y[k]) * (pr - h->y[k]) +
                 (lam != 0 ? lam * (h->wu[k] * n1 + h->wi[k] * n2) -
                                 (h->o.biases ? lam * (h->wu[k] + h->wi[k]) : 0)
                           : 0);
      h->fpart[3 * p] += f;
    }
  }
  int st = dpo__hm_reduce_parts(h, h->fpart, nparts, 3, out);
  memset(h->fpart, 0, sizeof(double) * 3 * (size_t)nparts);
  if (!st) h->gd_fref = out[0];
  return st;
}

/* Lines 12 and 14 bookkeeping before the first / last inner step of a HAMSI epoch. */
static int dpo__mark(dpo__hm_t *h, int first, int last) {
  int st = DPO_OK;
  if (first) { /* line 12: x-bar, g-bar (accumulated below); x-bar is also the point an
                * undone epoch returns to */
    memcpy(h->xb1, h->x1, sizeof(double) * (size_t)h->nvr);
    memset(h->gb1, 0, sizeof(double) * (size_t)h->nvr);
  }
  if (last) { /* s = x - x-bar where the last gradient is taken; y accumulates g */
    for (int64_t v = 0; v < h->nvr; v++) h->s1[v] = h->x1[v] - h->xb1[v];
    memset(h->y1, 0, sizeof(double) * (size_t)h->nvr);
  }
  for (int32_t c = 0; c < h->B && (first || last); c++) {
    if (!h->cbuf[c]) continue;
    if ((st = dpo__cb_aux(h, c))) return st;
    int64_t nv = dpo__nvc(h, c);
    if (first) {
      memcpy(h->xbc[c], h->cbuf[c], sizeof(double) * (size_t)nv);
      memset(h->gbc[c], 0, sizeof(double) * (size_t)nv);
    } else {
      for (int64_t v = 0; v < nv; v++) h->sc[c][v] = h->cbuf[c][v] - h->xbc[c][v];
      memset(h->yc[c], 0, sizeof(double) * (size_t)nv);
    }
  }
  return st;
}

/* One outer iteration over the schedule seq[0..L) (thesis Alg. 3, lines 7-19). */
static int dpo__epoch(dpo__hm_t *h, const int32_t *seq, int L) {
  int st = DPO_OK, guard = h->o.reject_tol >= 0;
  if (h->grid && seq[0] != h->cur_k) h->exchanges++;
  if ((st = dpo__hm_travel(h, seq[0]))) return st;
  if (guard && !h->hamsi && (st = dpo__hm_keep(h, &h->sg_start, 0))) return st;
  for (int l = 0; l < L; l++) {
    int32_t k = seq[l], next = l + 1 < L ? seq[l + 1] : -1;
    int first = h->hamsi && l == 0, last = h->hamsi && l == L - 1;
    h->strata++;
    if (h->grid && next >= 0 && next != k) {
      h->exchanges++;
      if ((st = dpo__hm_travel_begin(h, k, next))) return st;
    }
    /* the last stratum reads every held block at its start (line 14's s) */
    if (h->grid && last && (st = dpo__hm_travel_drain(h))) return st;
    if ((st = dpo__mark(h, first, last))) return st;
    double *a1 = first ? h->gb1 : last ? h->y1 : NULL;
    /* HAMSI: f of the repeated stratum at the start / before the last step; mb-GD: the sum
     * over the strata (slot 0) */
    double *fp = !guard ? NULL : !h->hamsi ? h->fpart : (first || last) ? h->fpart + (last ? 1 : 0) : NULL;
    if (h->grid) {
      for (int32_t i = h->i0; i < h->i1; i++) {
        int32_t c = dpo__mod(i + k, h->B);
        double *a2 = first ? h->gbc[c] : last ? h->yc[c] : NULL;
        /* a block from another rank is waited for here, after the ones that stayed (det
         * schedule: the intervals' order puts those first) */
        if (!h->pend[c] && h->npend > 0) h->early++;
        if ((st = dpo__hm_wait_block(h, c))) return st;
        dpo__hm_block(h, &h->blk[(int64_t)(i - h->i0) * h->B + c], -1, h->cbuf[c], a1, a2, NULL,
                      fp ? fp + 3 * i : NULL);
        /* the block is done for this step: send it on while the next block computes */
        if (next >= 0 && next != k && (st = dpo__hm_travel_send(h, c, next))) return st;
      }
      if (next >= 0 && next != k && (st = dpo__hm_travel_switch(h, next))) return st;
      if (next < 0 && (st = dpo__hm_travel_drain(h))) return st; /* the epoch's end */
    } else if (!h->dist) {
      double *a2 = first ? h->gbc[0] : last ? h->yc[0] : NULL;
      for (int64_t t = h->soff[k]; t < h->soff[k + 1]; t++)
        dpo__hm_block(h, &h->blk[0], h->sord[t], h->cbuf[0], a1, a2, NULL,
                      fp ? fp + 3 * h->chunk_of[h->u0 + h->lu[h->sord[t]]] : NULL);
    } else {
      double *a2 = first ? h->gbc[0] : last ? h->yc[0] : NULL;
      for (int32_t ph = 0; ph < h->nph; ph++)
        if ((st = dpo__unit(h, (int64_t)k * h->nph + ph, a1, a2, fp))) return st;
    }
  }
  if (h->hamsi) {
    int undone = 0;
    /* where no safeguard undoes it, a non-finite factor stops the run: its count rides with
     * the pair's reduction (the epoch's words, hamsi.c's loop) */
    if (!guard && h->ew_n) h->ew[1] = dpo__hm_nonfinite(h);
    st = guard ? dpo__hm_check_pair(h, &undone) : dpo__hm_pair(h);
  } else if (guard) {
    st = dpo__hm_check_gd(h);
  }
  return st;
}

/* The end of the run against the start of the last accepted epoch (sg_prev): the better by
 * more than reject_tol in training RMSE is kept.  Collective, agreed status. */
static int dpo__final_check(dpo__hm_t *h, double *x2full, int64_t ntr) {
  double r_end, r_prev, te;
  int st = dpo__eval(h, x2full, ntr, 0, 1, &r_end, &te, NULL);
  if (!st) st = dpo__hm_keep(h, &h->sg_start, 0);
  if (!st) st = dpo__hm_restore(h, &h->sg_prev);
  if (!st) st = dpo__eval(h, x2full, ntr, 0, 1, &r_prev, &te, NULL);
  if ((st = dpo_agree(h->comm, st))) return st;
  int back = isfinite(r_prev) && (!isfinite(r_end) || r_end > (1 + h->o.reject_tol) * r_prev);
  if (!back) return dpo_agree(h->comm, dpo__hm_restore(h, &h->sg_start)); /* the end stays */
  h->undone++;
  return DPO_OK;
}

/* h from the options and the communicator; checks the options (agreed status). */
static int dpo__hm_init(dpo__hm_t *h, MPI_Comm comm, const dpo_ratings_t *ratings,
                        const dpo_hamsi_opts_t *opts) {
  int st = DPO_OK;
  h->comm = comm;
  h->cal_w = MPI_Wtime();
  h->cal_k = dpo__tick();
  MPI_Comm_rank(comm, &h->rank);
  MPI_Comm_size(comm, &h->size);
  h->o = *opts;
  const dpo_hamsi_opts_t *o = &h->o;
  h->r = o->r + (o->biases ? 2 : 0); /* biased model: [b_u, 1] / [1, b_i] columns */
  h->hamsi = o->method == DPO_MF_HAMSI;
  h->M = h->hamsi ? o->memory : 0;
  h->grid = o->part == DPO_MF_STRATA || o->part == DPO_MF_STRATA_B;
  /* biased: centred factors of sd 0.1 / sqrt(r) (x1'x2 starts near 0, the centred mean) */
  if (h->o.init_scale < 0)
    h->o.init_scale = o->biases ? sqrt(12.0) * 0.1 / sqrt(o->r > 0 ? o->r : 1)
                                : 2 * sqrt(3.0 / (o->r > 0 ? o->r : 1));
  int32_t nu = ratings ? ratings->n_users : 0, ni = ratings ? ratings->n_items : 0;
  int32_t mx[2] = {nu, ni};
  if (MPI_Allreduce(MPI_IN_PLACE, mx, 2, MPI_INT32_T, MPI_MAX, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "hamsi: Allreduce failed"));
  h->nu = mx[0];
  h->ni = mx[1];
  h->K = o->nblocks > 0 ? o->nblocks : (h->grid ? h->size : 20);
  h->B = h->grid ? h->K : 1;
  if (o->r < 1 || o->r > DPO__HM_RMAX || (h->hamsi && (o->memory < 1 || o->memory > 256)) ||
      !(o->eta > 0) || !(o->gamma > 0) || !(o->sigma0 > 0) || o->lambda < 0 || o->epochs < 0 ||
      !(o->eta_late >= 0) || o->eta_from < 0 || !(o->metric_pow >= 0 && o->metric_pow <= 1) ||
      o->holdout < 0 || o->holdout >= 1 || o->time_limit < 0 || (unsigned)o->part > DPO_MF_STRATA_B ||
      o->early_stop < 0 || o->r + (o->biases ? 2 : 0) > DPO__HM_RMAX || !(o->eval_budget >= 0) ||
      o->eval_budget >= 1)
    st = dpo_err(DPO_EINVAL,
                 "hamsi: bad options (r 1..%d with the bias columns, memory 1..256, eta, gamma, "
                 "sigma0 > 0, eta_late, eta_from, lambda >= 0, metric_pow in [0, 1], holdout and "
                 "eval_budget in [0, 1), early_stop >= 0)", DPO__HM_RMAX);
  else if (o->early_stop > 0 && (o->holdout <= 0 || o->eval_every < 1))
    st = dpo_err(DPO_EINVAL, "hamsi: early stopping needs a held-out split (holdout > 0) and "
                             "evaluations (eval_every >= 1)");
  else if (h->nu < 1 || h->ni < 1)
    st = dpo_err(DPO_EINVAL, "hamsi: no users or items");
  else if (!h->grid && (h->size > h->nu || h->size > DPO__MF_NCHUNK))
    st = dpo_err(DPO_ERANKS, "hamsi: partitioning %s on %d ranks needs at most min(users %d, %d) "
                 "ranks", dpo_mf_part_name(o->part), h->size, h->nu, DPO__MF_NCHUNK);
  else if (h->grid && (h->B < h->size || h->B > h->nu || h->B > h->ni))
    st = dpo_err(DPO_ERANKS, "hamsi: %d strata need %d <= K <= min(users %d, items %d)", h->B,
                 h->size, h->nu, h->ni);
  return dpo_agree(comm, st);
}

/* Rank 0: sched[0] = 1 to stop before epoch t, else the strata of epoch t in sched[1..]
 * (SETSCHEDULE, line 6). */
static void dpo__hm_schedule(const dpo__hm_t *h, dpo_rng_t *rng, int64_t t, double t_train,
                             int32_t *sched) {
  const dpo_hamsi_opts_t *o = &h->o;
  sched[0] = (t > o->epochs && o->epochs > 0) || (o->epochs == 0 && o->time_limit <= 0) ||
             (o->time_limit > 0 && t_train >= o->time_limit);
  int32_t *s = sched + 1, K = h->K;
  if (o->sched == DPO_MF_SCHED_DET) {
    for (int32_t l = 0; l < K; l++) s[l] = (int32_t)((t - 1 + l) % K); /* one cyclic left shift */
  } else {
    for (int32_t l = 0; l < K; l++) s[l] = l;
    for (int32_t l = K - 1; l > 0; l--) {
      int32_t j = (int32_t)dpo_rng_below(rng, (uint64_t)l + 1), x = s[l];
      s[l] = s[j];
      s[j] = x;
    }
  }
  if (h->hamsi) s[K] = s[0]; /* the first stratum repeated (Sec. 3.1) */
}

/* Biased model: res->X1 (nu x r+2: [x1, b_u, 1]) and X2t (ni x r+2: [x2, 1, b_i]) become
 * the r factor columns, bu, bi and mu.  Local. */
static int dpo__split_biases(const dpo__hm_t *h, dpo_hamsi_result_t *res) {
  int32_t R = h->r, r = R - 2;
  if (!(res->bu = malloc(sizeof(double) * (size_t)h->nu)) ||
      !(res->bi = malloc(sizeof(double) * (size_t)h->ni)))
    return dpo_err(DPO_ENOMEM, "hamsi: biases");
  for (int64_t u = 0; u < h->nu; u++) {
    res->bu[u] = res->X1[u * R + r];
    memmove(res->X1 + u * r, res->X1 + u * R, sizeof(double) * (size_t)r);
  }
  for (int64_t i = 0; i < h->ni; i++) {
    res->bi[i] = res->X2t[i * R + r + 1];
    memmove(res->X2t + i * r, res->X2t + i * R, sizeof(double) * (size_t)r);
  }
  res->biases = 1;
  res->mu = h->mu;
  res->r = r;
  return DPO_OK;
}

int dpo_hamsi_predict(const dpo_hamsi_result_t *m, int64_t n, const int32_t *user,
                      const int32_t *item, double *pred) {
  int32_t r = m->r;
  for (int64_t k = 0; k < n; k++) {
    int32_t u = user[k], i = item[k];
    if (u < 0 || u >= m->n_users || i < 0 || i >= m->n_items)
      return dpo_err(DPO_EINVAL, "mf predict: pair %lld (user %d, item %d) outside the model's "
                     "%d users x %d items (0-based)", (long long)k, u, i, m->n_users, m->n_items);
    const double *a = m->X1 + (int64_t)u * r, *b = m->X2t + (int64_t)i * r;
    /* the factor columns (as training sums them), then b_u (x 1), then b_i (1 x) */
    double p = dpo__mf_dot(r, a, b);
    if (m->biases) p = (p + m->bu[u]) + m->bi[i] + m->mu;
    pred[k] = p;
  }
  return DPO_OK;
}

/* After the last epoch: every item block home, final RMSEs, times, and the factors on every
 * rank (res takes x2full).  Collective, agreed status. */
static int dpo__hm_finish(dpo__hm_t *h, dpo_hamsi_result_t *res, double **x2fullp, int64_t t,
                          double t_start, double t_train, int check) {
  int st = DPO_OK;
  int *cnts = NULL, *dsps = NULL;
  double rtr = NAN, rte = NAN;
  res->epochs = t;
  /* every item block back to its home rank (stratum 0) */
  if ((st = dpo_agree(h->comm, dpo__hm_travel(h, 0)))) return st;
  int home = 1;
  for (int32_t c = 0; c < h->B; c++) {
    int mine = h->grid ? h->owner[c] == h->rank : 1;
    if ((h->cbuf[c] != NULL) != mine) home = 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, &home, 1, MPI_INT, MPI_MIN, h->comm);
  res->home_ok = home;
  /* COLOR* on P ranks without repro sums the ranks' steps of a stratum (one exchange each) */
  res->disjoint = h->o.part != DPO_MF_HOGWILD && (h->grid || !h->dist || h->nph > 1);
  res->exchanges = h->exchanges;
  res->strata = h->strata;
  st = dpo__eval(h, *x2fullp, res->n_train, res->n_test, 1, &rtr, &rte, NULL);
  if (!st && check && res->n_train > 0) st = dpo__hm_diverged(h, t, &rtr);
  if ((st = dpo_agree(h->comm, st))) return st;
  res->train_rmse = rtr;
  res->test_rmse = rte;
  res->t_train = t_train;
  res->t_wall = MPI_Wtime() - t_start;
  res->t_grad = dpo__hm_tick_seconds(h, h->k_grad);
  res->t_update = dpo__hm_tick_seconds(h, h->k_update);
  res->t_hess = h->t_hess;
  res->t_comm = h->t_comm;
  res->ring_mb = 1e-6 * (double)h->ring_sent;
  res->ratings_per_sec = t_train > 0 ? (double)h->processed / t_train : 0;
  res->pairs_accepted = h->hamsi ? h->lb.accepted : 0;
  res->pairs_rejected = h->hamsi ? h->lb.rejected : 0;
  res->sigma = h->sigma;
  res->epochs_undone = h->undone;
  res->steps_capped = h->capped;
  /* factors on every rank */
  res->X2t = *x2fullp;
  *x2fullp = NULL;
  if (!(res->X1 = malloc(sizeof(double) * (size_t)h->nu * h->r)) ||
      !(cnts = malloc(sizeof(int) * (size_t)h->size)) || !(dsps = malloc(sizeof(int) * (size_t)h->size)))
    st = dpo_err(DPO_ENOMEM, "hamsi factors");
  if (!(st = dpo_agree(h->comm, st))) {
    int mine = (int)h->nvr;
    MPI_Allgather(&mine, 1, MPI_INT, cnts, 1, MPI_INT, h->comm);
    for (int p = 0; p < h->size; p++) dsps[p] = p ? dsps[p - 1] + cnts[p - 1] : 0;
    st = MPI_Allgatherv(h->x1, mine, MPI_DOUBLE, res->X1, cnts, dsps, MPI_DOUBLE, h->comm) ==
                 MPI_SUCCESS
             ? DPO_OK
             : dpo_err(DPO_EMPI, "hamsi: Allgatherv of X1 failed");
    st = dpo_agree(h->comm, st);
  }
  free(cnts);
  free(dsps);
  if (!st && h->o.biases) st = dpo_agree(h->comm, dpo__split_biases(h, res));
  return st;
}

/* Before epoch t: the schedule (dpo__hm_schedule) and what to evaluate after it, into
 * sched[0] (bit 1 full evaluation, bit 2 held-out only).  wall: the run's wall time so far,
 * dt the last epoch's, c_eval the last evaluation's.  Every rank plans; where a clock decides
 * (dpo__hm_clocked) rank 0's plan is the one broadcast. */
static void dpo__hm_plan_epoch(dpo__hm_t *h, dpo_rng_t *rng, int64_t t, double t_train, double wall,
                               double dt, double c_eval, int64_t *last_full, int32_t *sched) {
  const dpo_hamsi_opts_t *o = &h->o;
  dpo__hm_schedule(h, rng, t, t_train, sched);
  int due = o->eval_every > 0 && t % o->eval_every == 0;
  /* budget: evaluating now keeps evaluation <= eval_budget of the wall time
   * (the next epoch is assumed to last as long as the last one) */
  double over = wall - t_train;
  /* the budget never starves the trace: the first due epoch and every
   * DPO_HAMSI_EVAL_FORCE-th due epoch since the last full evaluation are
   * evaluated whatever the load (a busy machine's time outside training can
   * exceed any budget) */
  int full = due && (o->eval_budget <= 0 || !*last_full ||
                     t - *last_full >= (int64_t)DPO_HAMSI_EVAL_FORCE * o->eval_every ||
                     over + c_eval <= o->eval_budget * (wall + dt + c_eval));
  if (full)
    *last_full = t;
  /* early stopping compares every due epoch (the kept point must not depend on
   * the clock): the held-out RMSE at least, the cheap part */
  int test = due && !full && o->early_stop > 0;
  sched[0] |= (full << 1) | (test << 2);
}

/* Does epoch t's plan read a clock (a time limit, or an evaluation due under a budget of
 * wall time)?  Only then is rank 0's plan broadcast: the schedule itself is drawn by every
 * rank (the det order, or the seeded stream every rank holds), and the rest follows from
 * public settings.  The same answer on every rank. */
static int dpo__hm_clocked(const dpo_hamsi_opts_t *o, int64_t t) {
  return o->time_limit > 0 || (o->eval_every > 0 && t % o->eval_every == 0 && o->eval_budget > 0);
}

/* Epoch t over seq[0..L) with its words (dpo__hm_t.ew), which ride with its one reduction (the
 * pair's; dpo__hm_words where it has none): ranks with a failure to report (*pend: at the
 * last epoch's end or after its reduction), ranks with a non-finite factor (dpo__epoch), and
 * rank 0's checkpoint decision due for this epoch, asked before it runs.  They were three
 * agreements and a broadcast an epoch, each a wait of alpha log2 P on every rank.  Returns the
 * agreed status of a failure the words reported; a local one after the reduction goes into
 * *pend for the next. */
static int dpo__hm_epoch_words(dpo__hm_t *h, const int32_t *seq, int L, int64_t t, int *pend,
                               int64_t due[2]) {
  const dpo_hamsi_opts_t *o = &h->o;
  h->ew[0] = *pend != DPO_OK;
  h->ew[1] = 0;
  if (h->rank == 0 && o->ckpt_due && o->ckpt_path) due[0] = o->ckpt_due(o->ckpt_ctx, t, &due[1]);
  h->ew[2] = (double)due[0];
  h->ew_n = DPO__HM_EW;
  int st = dpo__epoch(h, seq, L);
  if (!st && h->ew_n) { /* no reduction in the epoch (mb-GD without its safeguard) */
    h->ew[1] = dpo__hm_nonfinite(h);
    st = dpo__hm_words(h);
  }
  /* a rank failed or holds a non-finite factor: the first failing rank's status, agreed */
  if (h->ew_n == 0 && (h->ew[0] > 0 || h->ew[1] > 0))
    return dpo_agree(h->comm, *pend ? *pend : st ? st : dpo__hm_diverged(h, t, NULL));
  if (st && !*pend) *pend = st;
  return DPO_OK;
}

/* After the epochs (st their status, t the epoch that ended them): the result's
 * point and figures, or on divergence with result_on_failure the last good
 * point. */
static int dpo__hm_end(dpo__hm_t *h, dpo_hamsi_result_t *res, double **x2full, int st, int64_t t,
                       double t_start, double t_train) {
  const dpo_hamsi_opts_t *o = &h->o;
  /* the epochs' ring bytes, before the moves home (jobs/costmodel's formula counts these) */
  res->ring_bytes_epochs = h->ring_sent;
  res->ring_hist_bytes_epochs = h->ring_hsent;
  res->blocks_early = h->early;
  if (st == DPO_ENOCONV && o->result_on_failure) {
    /* diverged: the result holds the last good point, the status stays
     * DPO_ENOCONV */
    res->failed_epoch = t;
    int st2 = dpo_agree(h->comm, dpo__hm_restore(h, &h->good));
    /* the last good point's factors are finite; its RMSE may not be (overflow):
     * still returned, without the divergence check */
    if (!st2)
      st2 = dpo__hm_finish(h, res, x2full, h->good.t, t_start, t_train, 0);
    if (st2) {
      st = st2;
      res->failed_epoch = 0; /* no point to return: res is freed below */
    }
  } else if (!st) {
    /* the safeguards see an epoch's last step only in the next epoch: a run
     * that stops right after a bad one would return it.  So compare the end
     * with the start of the last accepted epoch and keep that start if the
     * end's training RMSE is more than reject_tol above it (rank-independent
     * sums; one or two evaluations) */
    if (o->reject_tol >= 0 && h->sg_prev.x1 && res->n_train > 0 &&
        !(o->early_stop > 0 && h->best.x1))
      st = dpo__final_check(h, *x2full, res->n_train);
    /* early stopping: the best evaluated point (its held-out RMSE is the best
     * in the trace) */
    if (o->early_stop > 0 && h->best.x1) {
      res->best_epoch = h->best.t;
      st = dpo_agree(h->comm, dpo__hm_restore(h, &h->best));
    }
    if (!st)
      st = dpo__hm_finish(h, res, x2full, t - 1, t_start, t_train, 1);
    if (!st && res->best_epoch > 0)
      res->best_test_rmse = res->test_rmse;
  }
  return st;
}

int dpo_hamsi_run(MPI_Comm comm, const dpo_ratings_t *ratings,
                  const dpo_hamsi_opts_t *opts, dpo_hamsi_result_t **resp) {
  int st = DPO_OK;
  dpo__hm_t H, *h = &H;
  memset(h, 0, sizeof H);
  dpo_hamsi_result_t *res = NULL;
  dpo_rng_t *rng = NULL;
  int32_t *sched = NULL;
  double *x2full = NULL;
  *resp = NULL;
  if ((st = dpo__hm_init(h, comm, ratings, opts))) return st;
  const dpo_hamsi_opts_t *o = &h->o;

  if (!(res = calloc(1, sizeof *res))) st = dpo_err(DPO_ENOMEM, "hamsi result");
  if (!st) st = dpo__hm_setup(h, ratings, res);
  if ((st = dpo_agree(comm, st))) goto out;
  res->n_users = h->nu;
  res->n_items = h->ni;
  res->r = h->r;
  res->K = h->K;
  int L = h->hamsi ? h->K + 1 : h->K;
  int64_t cap = 64; /* trace rows; grows */
  if (!(sched = malloc(sizeof(int32_t) * ((size_t)L + 1))) ||
      !(x2full = malloc(sizeof(double) * (size_t)h->ni * h->r)) ||
      !(res->trace = calloc((size_t)cap, sizeof *res->trace)))
    st = dpo_err(DPO_ENOMEM, "hamsi schedule/trace");
  if (!st) st = dpo_rng_create(1, o->seed, 0x5c4ed, &rng); /* the schedule's: every rank */
  if ((st = dpo_agree(comm, st))) goto out;

  double t_start = MPI_Wtime(), t_train = 0, rtr = NAN, rte = NAN, best = INFINITY;
  /* evaluation cadence (rank 0's clock decides, the schedule broadcast carries it): c_eval is
   * the last evaluation's wall time, dt the last epoch's.  The budget counts all the wall time
   * outside training (evaluations, the trace, the kept points, waiting at the schedule
   * broadcast): what t_wall - t_train of the trace shows. */
  double c_eval = 0, dt = 0, rsm = NAN, best_rsm = NAN;
  int64_t t, last_full = 0; /* rank 0: the last epoch with a full evaluation */
  int stop = 0; /* early stopping: no held-out improvement for early_stop epochs */
  dpo__hm_loop_t lp;
  memset(&lp, 0, sizeof lp);
  if (o->ckpt_path && o->resume) { /* the state after epoch lp.t, instead of the start */
    st = dpo__hm_ckpt_load(h, o->ckpt_path, &lp, rng);
    t_train = lp.t_train;
    t_start -= lp.t_wall;
    last_full = lp.last_full;
    best = lp.best;
    best_rsm = lp.best_rsm;
    stop = (int)lp.stop;
    res->train_rmse0 = lp.rmse0[0];
    res->test_rmse0 = lp.rmse0[1];
  } else { /* RMSE of the initial factors (reference for the trace; evaluation excluded) */
    st = dpo__eval(h, x2full, res->n_train, res->n_test, 1, &res->train_rmse0,
                   &res->test_rmse0, NULL);
    if (!st && !h->hamsi && o->reject_tol >= 0) st = dpo__gd_f0(h, x2full);
  }
  if (!st) st = dpo__hm_keep(h, &h->good, lp.t);
  if (!st) st = dpo__hm_snap_room(h, &h->good); /* keeping it after an epoch cannot fail */
  if ((st = dpo_agree(comm, st))) goto out;
  /* a failure at an epoch's end (its point kept, on_epoch) or after its reduction: the next
   * epoch's reduction carries it, or the agreement after the last one */
  int pend = DPO_OK;
  c_eval = MPI_Wtime() - t_start - lp.t_wall;
  for (t = lp.t + 1;; t++) {
    /* whether to go on, the schedule and what to evaluate after the epoch: sched[0] bit 0
     * stop, bit 1 full evaluation, bit 2 held-out only; rank 0's flags where a clock decides */
    dpo__hm_plan_epoch(h, rng, t, t_train, MPI_Wtime() - t_start, dt, c_eval, &last_full, sched);
    if (dpo__hm_clocked(o, t) && MPI_Bcast(sched, 1, MPI_INT32_T, 0, comm) != MPI_SUCCESS) {
      st = dpo_err(DPO_EMPI, "hamsi: the epoch's plan broadcast failed");
      break;
    }
    if ((sched[0] & 1) || stop) break;
    int64_t due[2] = {0, 0}; /* rank 0's checkpoint decision: go on, save, save and stop */
    double t0 = MPI_Wtime();
    h->beta = pow(dpo__hm_eta_t(o, t), o->gamma); /* line 5 */
    if ((st = dpo__hm_epoch_words(h, sched + 1, L, t, &pend, due))) break;
    t_train += (dt = MPI_Wtime() - t0);
    if (sched[0] & 6) {
      double te = MPI_Wtime();
      int full = (sched[0] & 2) != 0;
      if (res->ntrace == cap) {
        dpo_hamsi_trace_t *nt = realloc(res->trace, sizeof *nt * (size_t)(2 * cap));
        if (nt) {
          res->trace = nt;
          cap *= 2;
        } else {
          st = dpo_err(DPO_ENOMEM, "hamsi trace (%lld rows)", (long long)cap);
        }
      }
      if (!st) st = dpo__eval(h, x2full, res->n_train, res->n_test, full, &rtr, &rte,
                               o->early_stop > 0 ? &rsm : NULL);
      if (!st && full && res->n_train > 0) st = dpo__hm_diverged(h, t, &rtr);
      if ((st = dpo_agree(comm, st))) break;
      dpo_hamsi_trace_t *tr = &res->trace[res->ntrace++];
      tr->epoch = t;
      tr->t_train = t_train;
      tr->t_wall = MPI_Wtime() - t_start;
      tr->train_rmse = rtr;
      tr->test_rmse = rte;
      tr->sigma = h->sigma;
      tr->npairs = h->hamsi ? h->lb.m : 0;
      if (o->on_trace && (st = dpo_agree(comm, o->on_trace(o->trace_ctx, tr)))) break;
      if (o->early_stop > 0) {
        /* rank 0's values decide, so every rank keeps the same point */
        double v[2] = {rte, rsm};
        if (MPI_Bcast(v, 2, MPI_DOUBLE, 0, comm) != MPI_SUCCESS) {
          st = dpo_err(DPO_EMPI, "hamsi: held-out RMSE broadcast failed");
          break;
        }
        if (v[0] < best) {
          best = v[0];
          best_rsm = v[1];
          if ((st = dpo_agree(comm, dpo__hm_keep(h, &h->best, t)))) break;
        }
        /* patience runs out only once the fit has moved on without the held-out RMSE
         * following: the sampled training RMSE fell DPO__ES_PROGRESS below its value at the
         * best epoch.  On a plateau (rank 50 with --biases sits at the bias-only fit for ~60
         * epochs while the factors leave the saddle at 0, training RMSE flat) the clock
         * waits; once the model overfits (training falls, held-out does not) it stops. */
        stop = t - h->best.t >= o->early_stop && v[1] < (1 - DPO__ES_PROGRESS) * best_rsm;
      }
      c_eval = MPI_Wtime() - te;
    }
    if (!pend) pend = dpo__hm_keep(h, &h->good, t); /* its room was made: cannot fail */
    if (!pend && o->on_epoch) pend = o->on_epoch(o->epoch_ctx, t);
    if (h->ew[2] > 0) { /* rank 0's decision, summed with the other ranks' 0 */
      due[0] = (int64_t)h->ew[2];
      if (h->rank == 0) (void)o->ckpt_due(o->ckpt_ctx, t, &due[1]); /* aux with the trace row */
      if ((st = dpo_agree(comm, pend))) break; /* no checkpoint of a failed epoch */
      dpo__hm_loop_t cp = {t, t_train, MPI_Wtime() - t_start, last_full, best, best_rsm, stop,
                           {res->train_rmse0, res->test_rmse0}, 0};
      if ((st = dpo__hm_ckpt_epoch(h, &cp, rng, due))) break;
    }
  }
  if (!st) st = dpo_agree(comm, pend); /* a failure at the last epoch's end */
  st = dpo__hm_end(h, res, &x2full, st, t, t_start, t_train);
out:
  dpo_rng_destroy(rng);
  free(sched);
  free(x2full);
  dpo__hm_free(h);
  if (st && !(st == DPO_ENOCONV && res && res->failed_epoch > 0 && h->o.result_on_failure))
    dpo_hamsi_result_destroy(res);
  else
    *resp = res;
  return st;
}
