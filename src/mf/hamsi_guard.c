/* The safeguards of distributed HAMSI and mb-GD (src/mf/hamsi.c's epoch loop calls them after
 * each epoch): the undone epoch and its damped steps, the divergence guard.  Thesis Chapter 3,
 * Alg. 3; the rules for the factors-only model and the biased one are stated at dpo__check_decide. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dpopt/status.h"
#include "mf/hamsi_impl.h"
#include "mf/mf_impl.h"

/* Does any of x[0, n) have the all-ones exponent (inf, NaN)?  The largest exponent field, a
 * reduction that vectorizes (the isfinite loop with an early exit did not: 2% of an epoch). */
DPO_CLONES_LEVELS static int dpo__bad_any(const double *x, int64_t n) {
  const uint64_t e = 0x7ff0000000000000ULL;
  uint64_t mx = 0;
#pragma omp simd reduction(max : mx)
  for (int64_t v = 0; v < n; v++) {
    uint64_t b;
    memcpy(&b, x + v, sizeof b);
    b &= e;
    mx = b > mx ? b : mx;
  }
  return mx == e;
}

int dpo__hm_nonfinite(const dpo__hm_t *h) {
  int bad = dpo__bad_any(h->x1, h->nvr);
  for (int32_t c = 0; c < h->B && !bad; c++)
    if (h->cbuf[c]) bad = dpo__bad_any(h->cbuf[c], dpo__nvc(h, c));
  return bad;
}

/* The epoch's safeguard sums (collective): out[0], out[1] the objective parts the epoch
 * accumulated in fpart, out[2] the number of ranks with a non-finite factor; fpart is cleared. */
static int dpo__check_sums(dpo__hm_t *h, double out[3]) {
  int32_t nparts = h->grid ? h->B : h->nch, p0 = h->grid ? h->i0 : h->chunk_of[h->u0];
  h->fpart[3 * p0 + 2] = dpo__hm_nonfinite(h);
  int st = dpo__hm_reduce_parts(h, h->fpart, nparts, 3, out);
  memset(h->fpart, 0, sizeof(double) * 3 * (size_t)nparts);
  return st;
}

/* Safeguard after the strata of a HAMSI epoch, before its pair (collective).  The first and
 * the last inner step work on the same stratum k0, and its blocks are variable-disjoint, so
 * the sums of the blocks' objectives (dpo__hm_block, fixed parts: rank-independent with repro)
 * are f_k0 at the start of the epoch and before its last step, for free.  If f_k0 rose by more
 * than reject_tol, or a factor is not finite, the epoch is undone (back to x-bar, which is the
 * start of the epoch, the blocks being where they were then).  Factors-only model: after a
 * quasi-Newton epoch the quasi-Newton steps are halved for the rest of the run and the memory
 * kept: resetting it cost M more gradient epochs each time, which barely move (real
 * MovieLens-100K, rank 50: 6 resets in 100 epochs, RMSE 0.586 -> 0.574 over such a refill).
 * Biased model: the memory is reset after any undone epoch (the next epochs take gradient
 * steps with the smaller 1/beta_t and refill it).  Over-long gradient steps (too large sigma0,
 * too small eta) are halved until they pass, and the memory reset.  So a bad step costs one
 * epoch instead of the run.  *undone says whether it acted.
 * The decision on the summed out[3] (f_k0 at the start, before the last step, the number of
 * ranks with a non-finite factor). */
static int dpo__check_decide(dpo__hm_t *h, const double out[3], int *undone) {
  if (out[2] == 0 && out[1] <= (1 + h->o.reject_tol) * out[0]) return dpo__hm_sg_accept(h);
  *undone = 1;
  /* a gradient epoch (no quasi-Newton step yet) that raised f: the step scale is too large
   * for these data, so halve it for the rest of the run; after a quasi-Newton epoch the
   * curvature pairs are to blame: halve the quasi-Newton steps (factors only) or reset.
   * Which kind the epoch was is decided before the count below, which raises the pairs the
   * grid waits for (dpo__hm_qn_pairs): counted first, the first undone quasi-Newton epoch of
   * the factors-only model (3 pairs) was taken for a gradient one, and the memory reset
   * and gradient steps halved instead (300 x 500 uniform ratings, rank 50, metric
   * diag(sqrt(deg dbar)), eta 0.2: training RMSE 0.766 after 20 epochs, 14 pairs rejected;
   * 0.327 and none so).  The biased model keeps the earlier order (its iterates unchanged). */
  int gd = h->lb.m < dpo__hm_qn_pairs(h);
  h->undone++;
  if (h->o.biases) gd = h->lb.m < dpo__hm_qn_pairs(h);
  if (gd) h->damp *= 0.5;
  if (gd || h->o.biases)
    dpo__hm_reset_memory(h);
  else
    h->qdamp *= 0.5;
  /* f_k0 is taken BEFORE the last step, so it cannot see that step's damage: an accepted
   * epoch may end at a bad point (from an N(0, 1) start at rank 50 the first epoch's last
   * gradient step took the RMSE from 8 to 40), and retrying from there only undoes epoch
   * after epoch.  So the second rejection in a row goes back to the start of the last
   * accepted epoch. */
  if (++h->sg_rejects == 2 && h->sg_prev.x1) return dpo__hm_restore(h, &h->sg_prev);
  memcpy(h->x1, h->xb1, sizeof(double) * (size_t)h->nvr);
  for (int32_t c = 0; c < h->B; c++)
    if (h->cbuf[c]) memcpy(h->cbuf[c], h->xbc[c], sizeof(double) * (size_t)dpo__nvc(h, c));
  return DPO_OK;
}

/* The safeguard above and, unless it undoes the epoch, the pair (dpo__hm_pair), with the sums
 * of both in ONE Allreduce: each is a wait for the other ranks, which on loaded cores costs
 * more than the sums (of about five an epoch: the ring's moves, this one, the status).  The
 * pair's inner products are taken before the decision: they read s, y and the histories,
 * which an accepted epoch's bookkeeping does not touch; an undone epoch discards them and its
 * y, which the next epoch recomputes.  The iterates are those of the check then the pair. */
int dpo__hm_check_pair(dpo__hm_t *h, int *undone) {
  int32_t nf = h->grid ? h->B : h->nch, p0 = h->grid ? h->i0 : h->chunk_of[h->u0], np;
  int M = h->M;
  double out[512 + 3], t = MPI_Wtime();
  *undone = 0;
  h->fpart[3 * p0 + 2] = dpo__hm_nonfinite(h);
  dpo__hm_pair_local(h, &np);
  memcpy(h->part + (int64_t)np * 2 * M, h->fpart, sizeof(double) * 3 * (size_t)nf);
  memset(h->fpart, 0, sizeof(double) * 3 * (size_t)nf);
  int st = dpo__hm_reduce_parts2(h, h->part, np, 2 * M, nf, 3, out);
  if (!st) st = dpo__check_decide(h, out + 2 * M, undone);
  if (!st && !*undone) st = dpo__hm_pair_push(h, out);
  h->t_hess += MPI_Wtime() - t;
  return st;
}


/* Safeguard of mb-GD after an epoch (collective).  mb-GD visits each stratum once, so there
 * is no repeated stratum to compare; instead F, the sum over the epoch's strata of each
 * stratum's objective just before its step (free: dpo__hm_block computes it), is compared
 * with the reference: the last accepted epoch's F (the first epoch's: f at the initial
 * point, dpo__gd_f0).  For small steps F tracks f; a step scale too large for the data makes
 * it grow geometrically.  An epoch with F above (1 + reject_tol) times the reference, or a
 * non-finite factor or F, is undone (the item blocks travel back, every factor returns to the
 * epoch's start) and the step scale halved for the rest of the run.  F does not see the
 * damage of the epoch's LAST step (it shows in the next epoch's first term), so the second
 * rejection in a row goes back one more epoch, to the start of the last accepted epoch, with
 * that epoch's own reference; retries then start from there with ever smaller steps, whose F
 * tends to that point's f.  After DPO__GD_FORCE rejections in a row a finite epoch is
 * accepted as the new reference, so the run cannot stall; a non-finite one never is. */
#define DPO__GD_FORCE 8
int dpo__hm_check_gd(dpo__hm_t *h) {
  double out[3];
  int st = dpo__check_sums(h, out);
  if (st) return st;
  int finite = out[2] == 0 && isfinite(out[0]);
  if (finite && (out[0] <= (1 + h->o.reject_tol) * h->gd_fref || h->sg_rejects >= DPO__GD_FORCE)) {
    if ((st = dpo__hm_sg_accept(h))) return st;
    h->gd_fref_prev = h->gd_fref;
    h->gd_fref = out[0];
    return DPO_OK;
  }
  h->undone++;
  h->damp *= 0.5;
  if (++h->sg_rejects == 2 && h->sg_prev.x1) {
    h->gd_fref = h->gd_fref_prev;
    return dpo__hm_restore(h, &h->sg_prev);
  }
  return dpo__hm_restore(h, &h->sg_start);
}

/* Divergence guard (local; the caller agrees on the status): every factor this rank holds
 * and, when given, the RMSE must be finite. */
int dpo__hm_diverged(const dpo__hm_t *h, int64_t t, const double *rmse) {
  int bad = (rmse && !isfinite(*rmse)) || dpo__hm_nonfinite(h);
  if (!bad) return DPO_OK;
  return dpo_err(DPO_ENOCONV, "diverged at epoch %lld (%s non-finite): try a smaller --sigma0 or "
                 "a larger --eta (beta_t = (eta t)^gamma divides the step)", (long long)t,
                 rmse && !isfinite(*rmse) ? "training RMSE" : "a factor");
}

