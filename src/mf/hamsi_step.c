/* One HAMSI / mb-GD step (thesis Alg. 3): a block's gradient and its update in the compact
 * L-BFGS metric (lines 10-13), and the curvature pair of the repeated stratum (lines 14-19)
 * with its 2M inner products in one Allreduce.  The M x M algebra is in lbfgs_compact.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mf/hamsi_impl.h"
#include "mf/mf_impl.h"

double dpo__hm_tick_seconds(const dpo__hm_t *h, uint64_t k) {
  double dw = MPI_Wtime() - h->cal_w;
  uint64_t dk = dpo__tick() - h->cal_k;
  return dk > 0 ? (double)k * (dw / (double)dk) : 0.0;
}

/* Generic partitions (one rating per block): the longest factor t for the step x -= t d of
 * rating `one` (d = d1 on its user row, d2 on its item row) within its curvature, the
 * quasi-Newton form of the grid's per-row gradient cap DPO__HM_GCAP.  Along -t d the rating's
 * term has slope -g'd and Gauss-Newton curvature c = 2 delta^2 + 2 lambda (wu ||d1||^2 + wi
 * ||d2||^2), delta = x2'd1 + x1'd2 the change of the prediction; its minimizer is t* = g'd / c
 * and t <= 4 GCAP t* keeps the residual e -> e (1 - 4 GCAP) at most, as the gradient cap
 * does (lambda = 0: delta t <= 1.6 e).  Why: H models the curvature of a whole stratum (its
 * pairs come from the repeated stratum), sized by the rows with many ratings there; a rating
 * whose rows have few (rare items, most of them) got a step many times its own Newton step
 * (sigma from the pairs up to 1.1 against sigma0 = 0.2, times the low-rank part), and the
 * first quasi-Newton epoch of COLOR at rank 50 diverged (with the 30x cap: training RMSE 0.90
 * -> 12, then diverged; with the epoch check too, 2.3 at a later one).  g'd > 0 for a positive definite H (g is zero off the two rows);
 * otherwise no step. */
static double dpo__hm_rating_cap(const dpo__hm_t *h, int64_t one, const double *xc,
                                 const double *d1, const double *d2) {
  int32_t r = h->r;
  const double *x1 = h->x1 + (int64_t)h->lu[one] * r, *x2 = xc + (int64_t)h->li[one] * r;
  double p = 0, dl = 0, a1 = 0, a2 = 0, n1 = 0, n2 = 0;
  for (int32_t q = 0; q < r; q++) {
    p += x1[q] * x2[q];
    dl += x2[q] * d1[q] + x1[q] * d2[q];
    a1 += x1[q] * d1[q];
    a2 += x2[q] * d2[q];
    n1 += d1[q] * d1[q];
    n2 += d2[q] * d2[q];
  }
  double lw = h->o.lambda * h->wu[one], li = h->o.lambda * h->wi[one];
  /* the biased model's constant columns have g = d = 0 there, so these sums need no care */
  double gd = 2 * (p - h->y[one]) * dl + 2 * (lw * a1 + li * a2);
  double c = 2 * dl * dl + 2 * (lw * n1 + li * n2);
  if (!(gd > 0) || !isfinite(c)) return 0;
  return c > 0 ? 4 * DPO__HM_GCAP * gd / c : INFINITY;
}

/* Line 13 for a block with M pairs: x_a -= (1/beta)(sigma D^-1 g_a + W_a N W_a' g_a), right to
 * left, in the metric D = diag(degrees) (H0 = sigma D^-1, see lbfgs_compact.h).  d = H g is
 * written over the gradient rows (wmul reads g_k before it writes d_k).  Safeguard step_cap
 * = kappa: ||d||_D <= kappa sigma0 ||g||_D^-1, the length of the gradient step sigma0 D^-1 g
 * of the same block; a longer step keeps its direction and gets that length.  Why: a pair
 * with s'y > 0 but tiny next to ||s||_D ||y||_D^-1 (flat or noisy directions, e.g. rank 50 on
 * ML-100K-sized data) gives H an eigenvalue hundreds of times sigma along s, and the first
 * quasi-Newton epoch then steps ~400x the gradient step and diverges; on healthy runs
 * ||d|| stays below ~15 gradient steps, so the cap does not act. */
/* sum_q g_q^2 over r entries, in 8 fixed lanes.  A row's metric weight is one number (1 /
 * its degree), so ||g||_D^2 = w sum g^2 and ||d||_D^-1^2 = sum d^2 / w: one division a row
 * (the division per entry was ~2% of an epoch at rank 50). */
static inline double dpo__hm_sq(int32_t r, const double *g) {
  dpo__mf_v8 a = {0};
  int32_t q = 0;
  for (; q + 8 <= r; q += 8) {
    dpo__mf_v8 g8 = DPO__MF_LD8(g + q);
    a += g8 * g8;
  }
  double t = DPO__MF_HSUM8(a);
  for (; q < r; q++) t += g[q] * g[q];
  return t;
}

DPO_CLONES_LEVELS static void dpo__hm_qn_update(dpo__hm_t *h, int64_t one, const int32_t *tu,
                                             int32_t ntu, const int32_t *ti, int32_t nti,
                                             double *xc, const dpo__hist_t *Hc,
                                             const double *w2c, double *dx2) {
  int32_t r = h->r, M = h->M;
  double u[512], v[512], gn = 0, dn = 0, f = h->qdamp / h->beta;
  memset(u, 0, sizeof(double) * 2 * (size_t)M);
  dpo__lbfgs_wtg_rows(&h->lb, r, h->H1, h->w1, h->g1s, tu, ntu, u);
  dpo__lbfgs_wtg_rows(&h->lb, r, Hc, w2c, h->g2s, ti, nti, u);
  dpo__lbfgs_nmul(&h->lb, u, v);
  for (int32_t a = 0; a < ntu; a++) {
    int64_t o = (int64_t)tu[a] * r;
    double *g = h->g1s + o;
    const double *w = h->w1 + o;
    gn += w[0] * dpo__hm_sq(r, g);
    dpo__lbfgs_wmul(&h->lb, r, h->H1 + o * M, w, g, v, g);
    dn += dpo__hm_sq(r, g) / w[0];
  }
  for (int32_t a = 0; a < nti; a++) {
    int64_t o = (int64_t)ti[a] * r;
    double *g = h->g2s + o;
    const double *w = w2c + o;
    gn += w[0] * dpo__hm_sq(r, g);
    dpo__lbfgs_wmul(&h->lb, r, Hc + o * M, w, g, v, g);
    dn += dpo__hm_sq(r, g) / w[0];
  }
  double lim = h->o.step_cap * h->o.sigma0;
  if (h->o.step_cap > 0 && !(dn <= lim * lim * gn)) {
    f = isfinite(dn) && dn > 0 ? f * lim * sqrt(gn / dn) : 0; /* no step along a non-finite d */
    h->capped++;
  }
  if (one >= 0 && h->o.step_cap > 0) { /* generic partitions: the rating's curvature */
    double c = dpo__hm_rating_cap(h, one, xc, h->g1s + (int64_t)h->lu[one] * r,
                                  h->g2s + (int64_t)h->li[one] * r);
    if (!(f <= c)) {
      f = c;
      h->capped++;
    }
  }
  /* the step, a row at a time (x and d are different arrays: simd, the -O2 build would not) */
  for (int32_t a = 0; a < ntu; a++) {
    int64_t o = (int64_t)tu[a] * r;
#pragma omp simd
    for (int32_t q = 0; q < r; q++) h->x1[o + q] -= f * h->g1s[o + q];
  }
  for (int32_t a = 0; a < nti; a++) {
    int64_t o = (int64_t)ti[a] * r;
#pragma omp simd
    for (int32_t q = 0; q < r; q++) {
      double sq = f * h->g2s[o + q];
      xc[o + q] -= sq;
      if (dx2) dx2[o + q] -= sq; /* 0 - s = -s and x + (-s) = x - s exactly (generic, P ranks) */
    }
  }
}

/* One block: gradient (line 10) with the objective of its ratings added to *fsum (when given;
 * the blocks of a stratum are variable-disjoint, so over a stratum this is the stratum's f at
 * the point where it starts), accumulation for lines 12/14, update (line 13). */
DPO_CLONES_LEVELS void dpo__hm_block(dpo__hm_t *h, const dpo__blk_t *b, int64_t one, double *xc, double *acc1,
                   double *acc2, double *dx2, double *fsum) {
  int32_t r = h->r;
  const dpo__hist_t *Hc = dpo__cbhist(h, xc, b->cb);
  const int32_t *tu, *ti;
  int32_t ntu, nti;
  int64_t off, n;
  if (one >= 0) { /* generic partition: one rating per block */
    off = one;
    n = 1;
    tu = h->lu + one;
    ti = h->li + one;
    ntu = nti = 1;
  } else {
    off = b->off;
    n = b->n;
    tu = h->tu + b->tuo;
    ti = h->ti + b->tio;
    ntu = b->ntu;
    nti = b->nti;
  }
  uint64_t k0 = dpo__tick();
  for (int32_t a = 0; a < ntu; a++) memset(h->g1s + (int64_t)tu[a] * r, 0, sizeof(double) * (size_t)r);
  for (int32_t a = 0; a < nti; a++) memset(h->g2s + (int64_t)ti[a] * r, 0, sizeof(double) * (size_t)r);
  double fs = 0;
  if (one < 0 && r <= 8 * DPO__MF_RV) { /* a grid block: its ratings by user runs */
    /* one copy of the loop per number of full 8-wide vectors in a row (r / 8 a constant):
     * no run-time test per vector and rating */
#define DPO__HM_RUNS1(NF, LAM)                                                            \
  for (int64_t k = off, e; k < off + n; k = e) {                                          \
    int64_t u = h->lu[k];                                                                 \
    for (e = k + 1; e < off + n && h->lu[e] == u;) e++;                                  \
    fs += dpo__mf_run_terms(r, NF, LAM, h->x1 + u * r, h->g1s + u * r, xc, h->g2s,        \
                            h->li + k, h->y + k, h->wu + k, h->wi + k, h->o.lambda, e - k); \
  }
#define DPO__HM_RUNS(NF)                                                                  \
  if (h->o.lambda != 0) {                                                                 \
    DPO__HM_RUNS1(NF, 1)                                                                  \
  } else {                                                                                \
    DPO__HM_RUNS1(NF, 0)                                                                  \
  }
    switch (r / 8) {
    case 0: DPO__HM_RUNS(0) break;
    case 1: DPO__HM_RUNS(1) break;
    case 2: DPO__HM_RUNS(2) break;
    case 3: DPO__HM_RUNS(3) break;
    case 4: DPO__HM_RUNS(4) break;
    case 5: DPO__HM_RUNS(5) break;
    case 6: DPO__HM_RUNS(6) break;
    case 7: DPO__HM_RUNS(7) break;
    default: DPO__HM_RUNS(8) break;
    }
#undef DPO__HM_RUNS
#undef DPO__HM_RUNS1
  } else {
    for (int64_t k = off; k < off + n; k++) {
      int64_t u = h->lu[k], i = h->li[k];
      fs += dpo__mf_term(r, h->x1 + u * r, xc + i * r, h->y[k], h->o.lambda, h->wu[k], h->wi[k],
                         h->g1s + u * r, h->g2s + i * r);
    }
  }
  if (h->o.biases) {
    /* the constant columns (X1 column r - 1, X2t column r - 2) stay 1: no gradient there, so
     * s and y are 0 there and no step (gradient or quasi-Newton) moves them; their constant
     * L2 term lambda (wu + wi) per rating is left out of f */
    for (int32_t a = 0; a < ntu; a++) h->g1s[(int64_t)tu[a] * r + r - 1] = 0;
    for (int32_t a = 0; a < nti; a++) h->g2s[(int64_t)ti[a] * r + r - 2] = 0;
    if (h->o.lambda != 0)
      for (int64_t k = off; k < off + n; k++) fs -= h->o.lambda * (h->wu[k] + h->wi[k]);
  }
  if (fsum) *fsum += fs;
  h->processed += n;
  if (acc1) {
    for (int32_t a = 0; a < ntu; a++)
      for (int32_t q = 0; q < r; q++) acc1[(int64_t)tu[a] * r + q] += h->g1s[(int64_t)tu[a] * r + q];
    for (int32_t a = 0; a < nti; a++)
      for (int32_t q = 0; q < r; q++) acc2[(int64_t)ti[a] * r + q] += h->g2s[(int64_t)ti[a] * r + q];
  }
  uint64_t k1 = dpo__tick();
  h->k_grad += k1 - k0;
  const double *w2c = h->w2 + (int64_t)h->col_cut[b->cb] * r;
  if (h->hamsi && h->lb.m >= dpo__hm_qn_pairs(h)) {
    dpo__hm_qn_update(h, one, tu, ntu, ti, nti, xc, Hc, w2c, dx2);
  } else {
    /* gradient step x -= (sigma / beta) D^-1 g until M pairs exist; mb-GD always (sigma stays
     * sigma0).  D^-1: a row's gradient is a sum over its ratings, so dividing by its degree
     * makes the step independent of how many ratings a user / item has (data size). */
    double f = h->sigma * (1.0 / h->beta) * h->damp; /* damp = 1 unless a safeguard acted */
    /* HAMSI (with step_cap > 0): per-row curvature cap.  The metric D = diag(deg) assumes a
     * rating's curvature near that of the default start (||x||^2 ~ 4); a row whose partners
     * in this block have squared norms summing to T has curvature <= 2 T along any
     * direction, so its step is cut to DPO__HM_GCAP / (w T) when longer.  Over one rating,
     * both rows stepping, the residual e becomes e (1 - 4 GCAP) at most: stable for GCAP
     * < 0.5.  From the default start f w T ~ 0.8 / (K beta_t): it acts on rows with
     * above-average partners only (at K = 1 on the first epochs); from N(0, 1) factors at
     * rank 50 (T ~ 50 deg / K) the uncapped first epoch took the RMSE from 8 to 40 and the
     * safeguard's retries and halvings cost 3 epochs, or stalled the run near RMSE 1.  The
     * generic partitions' blocks are single ratings (T = the partner's squared norm): there
     * it keeps rare items' gradient steps within their rating's curvature (COLOR, rank 50:
     * no more gradient epoch that raises the RMSE), as dpo__hm_rating_cap does for the
     * quasi-Newton steps. */
    int gcap = h->hamsi && h->o.step_cap > 0, cut = 0;
    if (gcap) { /* each row's squared norm once, not once a rating (the same sums) */
      for (int32_t a = 0; a < ntu; a++) {
        const double *a1 = h->x1 + (int64_t)tu[a] * r;
        h->tn1[tu[a]] = 0;
        h->nn1[tu[a]] = dpo__mf_dot(r, a1, a1);
      }
      for (int32_t a = 0; a < nti; a++) {
        const double *a2 = xc + (int64_t)ti[a] * r;
        h->tn2[ti[a]] = 0;
        h->nn2[ti[a]] = dpo__mf_dot(r, a2, a2);
      }
      for (int64_t k = off; k < off + n; k++) {
        int64_t u = h->lu[k], i = h->li[k];
        h->tn1[u] += h->nn2[i] + h->o.lambda * h->wu[k];
        h->tn2[i] += h->nn1[u] + h->o.lambda * h->wi[k];
      }
    }
    for (int32_t a = 0; a < ntu; a++) {
      int64_t o = (int64_t)tu[a] * r;
      double fr = f;
      if (gcap && f * h->w1[o] * h->tn1[tu[a]] > DPO__HM_GCAP) {
        fr = DPO__HM_GCAP / (h->w1[o] * h->tn1[tu[a]]);
        cut = 1;
      }
      for (int32_t q = 0; q < r; q++) h->x1[o + q] -= fr * h->w1[o + q] * h->g1s[o + q];
    }
    for (int32_t a = 0; a < nti; a++) {
      int64_t o = (int64_t)ti[a] * r;
      double fr = f;
      if (gcap && f * w2c[o] * h->tn2[ti[a]] > DPO__HM_GCAP) {
        fr = DPO__HM_GCAP / (w2c[o] * h->tn2[ti[a]]);
        cut = 1;
      }
      for (int32_t q = 0; q < r; q++) {
        double sq = fr * w2c[o + q] * h->g2s[o + q];
        xc[o + q] -= sq;
        if (dx2) dx2[o + q] -= sq;
      }
    }
    h->capped += cut;
  }
  h->k_update += dpo__tick() - k1;
}

/* Allreduce of per-part partial sums: repro sums the parts in part order on every rank (x + 0
 * is exact, so each slot of the reduced array is one part's own value); otherwise each rank
 * sums its parts in order and MPI adds the ranks.  part holds na parts of wa sums, then nb of
 * wb (two reductions in one Allreduce: each is a synchronization of the ranks, which on
 * loaded cores costs more than the sums); out gets the wa sums, then the wb. */
int dpo__hm_reduce_parts2(dpo__hm_t *h, double *part, int32_t na, int32_t wa, int32_t nb,
                          int32_t wb, double *out) {
  const double *pb = part + (int64_t)na * wa;
  int32_t n = na * wa + nb * wb, ne = h->ew_n; /* the epoch's words ride with this one */
  h->ew_n = 0;
  if (h->o.repro) {
    memcpy(part + n, h->ew, sizeof(double) * (size_t)ne);
    DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, part, n + ne, MPI_DOUBLE, MPI_SUM, h->comm));
    memcpy(h->ew, part + n, sizeof(double) * (size_t)ne);
  }
  for (int32_t j = 0; j < wa + wb; j++) out[j] = 0;
  for (int32_t p = 0; p < na; p++)
    for (int32_t j = 0; j < wa; j++) out[j] += part[(int64_t)p * wa + j];
  for (int32_t p = 0; p < nb; p++)
    for (int32_t j = 0; j < wb; j++) out[wa + j] += pb[(int64_t)p * wb + j];
  if (!h->o.repro) {
    double buf[2 * 256 + 4 + DPO__HM_EW]; /* wa + wb <= 2M + 3 or 4 */
    memcpy(buf, out, sizeof(double) * (size_t)(wa + wb));
    memcpy(buf + wa + wb, h->ew, sizeof(double) * (size_t)ne);
    DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, wa + wb + ne, MPI_DOUBLE, MPI_SUM, h->comm));
    memcpy(out, buf, sizeof(double) * (size_t)(wa + wb));
    memcpy(h->ew, buf + wa + wb, sizeof(double) * (size_t)ne);
  }
  return DPO_OK;
}

/* The epoch's words alone, for an epoch that made no reduction (mb-GD without its safeguard). */
int dpo__hm_words(dpo__hm_t *h) {
  int ne = h->ew_n;
  h->ew_n = 0;
  DPO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, h->ew, ne, MPI_DOUBLE, MPI_SUM, h->comm));
  return DPO_OK;
}

int dpo__hm_reduce_parts(dpo__hm_t *h, double *part, int32_t nparts, int32_t w, double *out) {
  return dpo__hm_reduce_parts2(h, part, nparts, w, 0, 0, out);
}

/* partial [S'y; Y'Dy] (D = diag(w)) with s'y, y'Dy in the next slot, over nv variables: rows
 * of r, each with its slot-major (s, y) panels.  s and y are rounded to the panels' precision
 * first (y in place, as it is also the vector the panels are multiplied by), so every product
 * here is of stored values and R and C are those of the stored pairs. */
DPO_CLONES_LEVELS static void dpo__pair_dots(const dpo__hm_t *h, int64_t nv, const dpo__hist_t *H,
                                          const double *w, const double *s, double *y, int ns,
                                          double *out) {
  int M = h->M, r = h->r;
  const dpo__hist_t *P[256];
  dpo__hist_t hf[DPO__HM_RMAX];
  for (int64_t o = 0; o < nv; o += r) {
#pragma omp simd
    for (int32_t q = 0; q < r; q++) {
      hf[q] = dpo__hist_put(s[o + q], y[o + q]);
      y[o + q] = dpo__hist_y(hf[q]);
    }
    for (int j = 0; j < M; j++) P[j] = j == ns ? hf : H + o * M + (int64_t)j * r;
    dpo__lbfgs_dots(M, r, P, w + o, y + o, out);
  }
}

/* slot ns of the panel of nv variables (rows of r) from s and y (the rounding of pair_dots) */
DPO_CLONES_LEVELS static void dpo__pair_store(int64_t nv, int r, int M, int ns, dpo__hist_t *H,
                                           const double *s, const double *y) {
  for (int64_t o = 0; o < nv; o += r) {
    dpo__hist_t *a = H + o * M + (int64_t)ns * r;
#pragma omp simd
    for (int32_t q = 0; q < r; q++) a[q] = dpo__hist_put(s[o + q], y[o + q]);
  }
}

/* Lines 14-19 after the last inner step, local part: y = g - g-bar and the 2M inner products
 * of each part into h->part (2M per part: *nparts parts). */
DPO_CLONES_LEVELS void dpo__hm_pair_local(dpo__hm_t *h, int32_t *nparts) {
  int M = h->M, ns = dpo__lbfgs_next_slot(&h->lb);
  /* y = g - g-bar is the gradient difference of the repeated stratum alone (line 14), not
   * rescaled to the whole f: H then models the curvature of one stratum's function, which is
   * what the block model Q of eq. 3.4 (line 10) needs; rescaling y by |I| / |S_k0| was tried
   * and made the steps K times too short (K = 8: RMSE 0.72 instead of 0.60 after 20 epochs). */
  /* slots: grid = user intervals then item blocks; generic = user chunks then the (replicated)
   * item part, added by rank 0 only.  The slots do not depend on the number of ranks. */
  int32_t np = *nparts = h->grid ? 2 * h->B : h->nch + 1;
  double *part = h->part;
  memset(part, 0, sizeof(double) * (size_t)np * 2 * M);
#pragma omp simd
  for (int64_t v = 0; v < h->nvr; v++) h->y1[v] -= h->gb1[v];
  if (h->grid) {
    for (int32_t i = h->i0; i < h->i1; i++) {
      int64_t o = (int64_t)(h->row_cut[i] - h->u0) * h->r, nv = (int64_t)(h->row_cut[i + 1] - h->row_cut[i]) * h->r;
      dpo__pair_dots(h, nv, h->H1 + o * M, h->w1 + o, h->s1 + o, h->y1 + o, ns,
                     part + (int64_t)i * 2 * M);
    }
  } else {
    for (int32_t j = 0; j < h->nch; j++) {
      int32_t a0 = h->chunk_cut[j], a1 = h->chunk_cut[j + 1];
      if (a0 < h->u0 || a1 > h->u1) continue; /* rank cuts are chunk boundaries */
      int64_t o = (int64_t)(a0 - h->u0) * h->r, nv = (int64_t)(a1 - a0) * h->r;
      dpo__pair_dots(h, nv, h->H1 + o * M, h->w1 + o, h->s1 + o, h->y1 + o, ns,
                     part + (int64_t)j * 2 * M);
    }
  }
  for (int32_t c = 0; c < h->B; c++) {
    if (!h->cbuf[c]) continue;
    int64_t nv = dpo__nvc(h, c);
    double *yc = h->yc[c];
    const double *gbc = h->gbc[c];
#pragma omp simd
    for (int64_t v = 0; v < nv; v++) yc[v] -= gbc[v];
    if (!h->grid && h->rank != 0) continue; /* replicated: counted once */
    dpo__pair_dots(h, nv, dpo__cbhist(h, h->cbuf[c], c), h->w2 + (int64_t)h->col_cut[c] * h->r,
                   h->sc[c], h->yc[c], ns, part + (int64_t)(h->grid ? h->B + c : h->nch) * 2 * M);
  }
}

/* Lines 14-19, after the reduction: acceptance of the pair with the summed inner products
 * dots[2M], and the new S, Y rows. */
DPO_CLONES_LEVELS int dpo__hm_pair_push(dpo__hm_t *h, const double *dots) {
  int st, M = h->M, ns = dpo__lbfgs_next_slot(&h->lb), acc = 0;
  if ((st = dpo__lbfgs_push(&h->lb, dots, &acc)) || !acc) return st;
  h->sigma = h->lb.sigma;
  dpo__pair_store(h->nvr, h->r, M, ns, h->H1, h->s1, h->y1);
  for (int32_t c = 0; c < h->B; c++) {
    if (!h->cbuf[c]) continue;
    int64_t nv = dpo__nvc(h, c);
    dpo__pair_store(nv, h->r, M, ns, dpo__cbhist(h, h->cbuf[c], c), h->sc[c], h->yc[c]);
  }
  if (h->hcache) /* the pair is agreed: every rank logs it, and who holds each block */
    dpo__hm_hist_pair(h, ns);
  return DPO_OK;
}

/* Lines 14-19 after the last inner step: the 2M inner products in ONE Allreduce (2M per
 * part with repro), acceptance, and the new S, Y rows. */
int dpo__hm_pair(dpo__hm_t *h) {
  double t = MPI_Wtime(), dots[512];
  int32_t np;
  dpo__hm_pair_local(h, &np);
  int st = dpo__hm_reduce_parts(h, h->part, np, 2 * h->M, dots);
  if (!st) st = dpo__hm_pair_push(h, dots);
  h->t_hess += MPI_Wtime() - t;
  return st;
}

void dpo__hm_reset_memory(dpo__hm_t *h) {
  int64_t M = h->M;
  dpo__lbfgs_reset(&h->lb, h->o.sigma0);
  h->sigma = h->o.sigma0;
  /* stale rows would only meet zero entries of N, but 0 * inf is NaN: clear them */
  memset(h->H1, 0, sizeof(dpo__hist_t) * (size_t)(h->nvr * M));
  for (int32_t c = 0; c < h->B; c++) {
    double *b = h->hcache ? h->pb[c] : h->cbuf[c]; /* cached copies too: all current again */
    if (b) memset(dpo__cbhist(h, b, c), 0, sizeof(dpo__hist_t) * (size_t)(M * dpo__nvc(h, c)));
  }
  if (h->hcache)
    for (int64_t q = 0; q < (int64_t)h->size * h->B; q++) h->known[q] = h->hgen;
}
