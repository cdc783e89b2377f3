/* Compact L-BFGS inverse for HAMSI (thesis Alg. 3, lines 13-19; see lbfgs_compact.h). */
#include "mf/lbfgs_compact.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"
#include "mf/mf_impl.h"

int dpo__lbfgs_init(dpo__lbfgs_t *l, int M, double sigma0) {
  memset(l, 0, sizeof *l);
  if (M < 1 || M > 256) return dpo_err(DPO_EINVAL, "L-BFGS memory %d must be in 1..256", M);
  if (!(sigma0 > 0)) return dpo_err(DPO_EINVAL, "sigma0 must be > 0");
  l->M = M;
  l->sigma = sigma0;
  l->age = calloc((size_t)M, sizeof *l->age);
  l->SY = calloc((size_t)M * M, sizeof *l->SY);
  l->YY = calloc((size_t)M * M, sizeof *l->YY);
  l->N = calloc((size_t)4 * M * M, sizeof *l->N);
  if (!l->age || !l->SY || !l->YY || !l->N) {
    dpo__lbfgs_free(l);
    return dpo_err(DPO_ENOMEM, "L-BFGS state (M = %d)", M);
  }
  return DPO_OK;
}

void dpo__lbfgs_free(dpo__lbfgs_t *l) {
  free(l->age);
  free(l->SY);
  free(l->YY);
  free(l->N);
  l->age = NULL;
  l->SY = l->YY = l->N = NULL;
}

void dpo__lbfgs_reset(dpo__lbfgs_t *l, double sigma0) {
  int M = l->M;
  l->m = 0;
  l->sigma = sigma0;
  memset(l->age, 0, sizeof(int) * (size_t)M);
  memset(l->SY, 0, sizeof(double) * (size_t)M * M);
  memset(l->YY, 0, sizeof(double) * (size_t)M * M);
  memset(l->N, 0, sizeof(double) * (size_t)4 * M * M);
}

int dpo__lbfgs_next_slot(const dpo__lbfgs_t *l) { return l->m < l->M ? l->m : l->age[0]; }

/* N in slot order from R, D, C of the m pairs in age order (line 19). */
static int dpo__lbfgs_build_n(dpo__lbfgs_t *l) {
  int M = l->M, m = l->m, M2 = 2 * M;
  double sg = l->sigma;
  memset(l->N, 0, sizeof(double) * (size_t)M2 * M2);
  double *R = calloc((size_t)m * m, sizeof *R), *Ri = calloc((size_t)m * m, sizeof *Ri);
  double *T = calloc((size_t)m * m, sizeof *T);
  int st = DPO_OK;
  if (!R || !Ri || !T) {
    st = dpo_err(DPO_ENOMEM, "L-BFGS N");
    goto out;
  }
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) R[a * m + b] = l->SY[l->age[a] * M + l->age[b]];
  /* R^-1 by back substitution; R's diagonal holds s_i'y_i > 0 of accepted pairs */
  for (int j = 0; j < m; j++) {
    if (!(R[j * m + j] > 0)) {
      st = dpo_err(DPO_ELAPACK, "L-BFGS: R(%d,%d) = %g is not positive", j, j, R[j * m + j]);
      goto out;
    }
    Ri[j * m + j] = 1.0 / R[j * m + j];
    for (int i = j - 1; i >= 0; i--) {
      double s = 0;
      for (int k = i + 1; k <= j; k++) s += R[i * m + k] * Ri[k * m + j];
      Ri[i * m + j] = -s / R[i * m + i];
    }
  }
  /* T = (D + sigma C) R^-1 */
  for (int a = 0; a < m; a++)
    for (int b = 0; b < m; b++) {
      double s = 0;
      for (int k = 0; k < m; k++) {
        double dc = sg * l->YY[l->age[a] * M + l->age[k]] + (a == k ? R[a * m + a] : 0.0);
        s += dc * Ri[k * m + b];
      }
      T[a * m + b] = s;
    }
  /* scatter into slot order: [A, -R^-T; -R^-1, 0], A = R^-T T */
  for (int a = 0; a < m; a++) {
    int sa = l->age[a];
    for (int b = 0; b < m; b++) {
      int sb = l->age[b];
      double s = 0;
      for (int k = 0; k < m; k++) s += Ri[k * m + a] * T[k * m + b];
      l->N[sa * M2 + sb] = s;
      l->N[sa * M2 + M + sb] = -Ri[b * m + a];
      l->N[(M + sa) * M2 + sb] = -Ri[a * m + b];
    }
  }
out:
  free(R);
  free(Ri);
  free(T);
  return st;
}

int dpo__lbfgs_push(dpo__lbfgs_t *l, const double *dots, int *accepted) {
  int M = l->M, slot = dpo__lbfgs_next_slot(l);
  double sy = dots[slot], yy = dots[M + slot];
  *accepted = 0;
  /* line 15: keep the pair only with positive curvature */
  if (!(sy > 0) || !(yy > 0) || !isfinite(sy) || !isfinite(yy)) {
    l->rejected++;
    return DPO_OK;
  }
  /* the slot becomes the newest: drop it from the age list (it is the oldest when full) */
  if (l->m == M) {
    memmove(l->age, l->age + 1, sizeof(int) * (size_t)(M - 1));
    l->m--;
  }
  l->age[l->m++] = slot;
  for (int a = 0; a < l->m; a++) {
    int j = l->age[a];
    /* new column of R (s_j'y_new, j older) and row/column of C (line 18) */
    l->SY[j * M + slot] = dots[j];
    l->YY[j * M + slot] = l->YY[slot * M + j] = dots[M + j];
  }
  l->SY[slot * M + slot] = sy;
  l->YY[slot * M + slot] = yy;
  /* line 16, sigma = s'y / y'y.  With shrink_only it is taken only when it shrinks sigma
   * (from sigma0, or since the last reset), as the thesis authors' hamsi-mf does with its
   * initial scaling: along the repeated strata the ratio swings 100-fold from pair to pair
   * (0.006 .. 0.8 at rank 50 on MovieLens-100K), and each large one lengthened every step
   * outside the pairs' span until the epoch was undone.  The biased model keeps the latest
   * ratio: with the minimum its held-out RMSE got worse (see hamsi_setup.c) */
  if (!l->shrink_only || sy / yy < l->sigma) l->sigma = sy / yy;
  l->accepted++;
  *accepted = 1;
  return dpo__lbfgs_build_n(l);
}

/* The products with W run once per row a block step touches (r variables, 2M panels).  The
 * panels are slot-major (H[j * nvar + v]), so every loop runs along the variables, 8 lanes at
 * a time: with rows of M slots (H[v * M + j]) the loops ran across short strided slot rows,
 * and wmul (out = g in place) fell back to scalar code on the aliasing check.  wmul gets a
 * compile-time M = 1..8.  Fixed lanes and a fixed final sum: the same bits wherever the
 * panels sit in memory, so at every rank count and cache setting.  Each 64 bytes of a panel
 * read come with a prefetch DPO__LB_PFD bytes further on: the panels of a block's rows (5.2
 * MB at rank 50 on ML-100K-sized data in double, 1.3 in bfloat16, twice a step) come from L3
 * or memory, and on the Intel host (1 MB of L2) the products (double panels) ran at ~14
 * GB/s against a 25 GB/s read bound; with it the update phase took 15-20% less (2 or 4 KB
 * ahead alike; prefetches of a whole row's panels at once gained half that). */
#define DPO__LB_PFD 4096
#define DPO__LB_PF(p) __builtin_prefetch((const void *)((uintptr_t)(p) + DPO__LB_PFD), 0, 3)
/* Panel entries widened to doubles: the words at p as a VU vector, s (the high halves,
 * masked) and y (the low halves, shifted up) as VF floats, converted to VD doubles ds, dy. */
#define DPO__LB_WIDEN(VU, VF, VD, p, ds, dy)                                              \
  do {                                                                                    \
    VU u_, a_, b_;                                                                        \
    VF fa_, fb_;                                                                          \
    memcpy(&u_, (p), sizeof u_);                                                          \
    a_ = u_ & 0xffff0000u;                                                                \
    b_ = u_ << 16;                                                                        \
    memcpy(&fa_, &a_, sizeof fa_);                                                        \
    memcpy(&fb_, &b_, sizeof fb_);                                                        \
    (ds) = __builtin_convertvector(fa_, VD);                                              \
    (dy) = __builtin_convertvector(fb_, VD);                                              \
  } while (0)
typedef uint32_t dpo__lb_v8u __attribute__((vector_size(32)));
typedef float dpo__lb_v8f __attribute__((vector_size(32)));
typedef uint32_t dpo__lb_v16u __attribute__((vector_size(64)));
typedef float dpo__lb_v16f __attribute__((vector_size(64)));
typedef double dpo__lb_v16d __attribute__((vector_size(128)));
/* 8 entries: s8, y8 */
#define DPO__LB_LD8(p, s8, y8) DPO__LB_WIDEN(dpo__lb_v8u, dpo__lb_v8f, dpo__mf_v8, p, s8, y8)
/* 16 entries as four vectors of 8 doubles (entries 0-7 and 8-15 of s, then of y): widened
 * from 64 bytes at once, GCC 12 emits the 8-wide float -> double conversion of AVX-512; from
 * 32 bytes it splits each into four instructions (the products were compute-bound on them) */
#define DPO__LB_LD16(p, s0, s1, y0, y1)                                                   \
  do {                                                                                    \
    dpo__lb_v16d ds_, dy_;                                                                \
    DPO__LB_WIDEN(dpo__lb_v16u, dpo__lb_v16f, dpo__lb_v16d, p, ds_, dy_);                 \
    (s0) = __builtin_shufflevector(ds_, ds_, 0, 1, 2, 3, 4, 5, 6, 7);                     \
    (s1) = __builtin_shufflevector(ds_, ds_, 8, 9, 10, 11, 12, 13, 14, 15);               \
    (y0) = __builtin_shufflevector(dy_, dy_, 0, 1, 2, 3, 4, 5, 6, 7);                     \
    (y1) = __builtin_shufflevector(dy_, dy_, 8, 9, 10, 11, 12, 13, 14, 15);               \
  } while (0)
/* X(1) .. X(8) for the memory M at hand, each returning; other M fall through */
#define DPO__BY_M(X)                                                                      \
  switch (M) {                                                                            \
  case 1: X(1); return;                                                                   \
  case 2: X(2); return;                                                                   \
  case 3: X(3); return;                                                                   \
  case 4: X(4); return;                                                                   \
  case 5: X(5); return;                                                                   \
  case 6: X(6); return;                                                                   \
  case 7: X(7); return;                                                                   \
  case 8: X(8); return;                                                                   \
  default: break;                                                                         \
  }

/* One panel row p[0..nvar) against g: a += s g and b += y (w g) over the 8-entry steps (16 at
 * a time, then 8: the same sums in the same order), ta and tb over the entries past them.
 * Always inlined: the accumulators stay in the caller's registers. */
static inline __attribute__((always_inline)) void
dpo__lb_row(const dpo__hist_t *p, const double *g, const double *w, int64_t nvar,
            dpo__mf_v8 *a, dpo__mf_v8 *b, double *ta, double *tb) {
  int64_t n8 = nvar & ~(int64_t)7, v = 0;
  for (; v + 16 <= n8; v += 16) {
    DPO__LB_PF(p + v);
    dpo__mf_v8 g0 = DPO__MF_LD8(g + v), g1 = DPO__MF_LD8(g + v + 8), s0, s1, y0, y1;
    dpo__mf_v8 wg0 = w ? DPO__MF_LD8(w + v) * g0 : g0, wg1 = w ? DPO__MF_LD8(w + v + 8) * g1 : g1;
    DPO__LB_LD16(p + v, s0, s1, y0, y1);
    *a += s0 * g0;
    *a += s1 * g1;
    *b += y0 * wg0;
    *b += y1 * wg1;
  }
  if (v < n8) {
    dpo__mf_v8 g8 = DPO__MF_LD8(g + v), wg8 = w ? DPO__MF_LD8(w + v) * g8 : g8, s8, y8;
    DPO__LB_LD8(p + v, s8, y8);
    *a += s8 * g8;
    *b += y8 * wg8;
  }
  for (v = n8; v < nvar; v++) {
    double gv = g[v], wg = w ? w[v] * gv : gv;
    *ta += dpo__hist_s(p[v]) * gv;
    *tb += dpo__hist_y(p[v]) * wg;
  }
}

/* a panel at a time, each read front to back: per panel one vector sum, then its scalar tail
 * (no accumulator array: zeroing one per row cost 8% of the pass) */
DPO_CLONES_LEVELS void dpo__lbfgs_dots(int M, int64_t nvar, const dpo__hist_t *const *P,
                                    const double *w, const double *g, double *u) {
  for (int j = 0; j < M; j++) {
    dpo__mf_v8 a = {0}, b = {0};
    double ta = 0, tb = 0;
    dpo__lb_row(P[j], g, w, nvar, &a, &b, &ta, &tb);
    u[j] += DPO__MF_HSUM8(a) + ta;
    u[M + j] += DPO__MF_HSUM8(b) + tb;
  }
}

void dpo__lbfgs_wtg(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *H, const double *w,
                    const double *g, double *u) {
  const dpo__hist_t *P[256];
  for (int j = 0; j < l->M; j++) P[j] = H + j * nvar;
  dpo__lbfgs_dots(l->M, nvar, P, w, g, u);
}

/* wtg over a block's rows: the vector sums run across all of them and are reduced once (the
 * per-row reductions, 2M of them a row, were a third of the products' instructions at r =
 * 50). */
#define DPO__DOTR(MM)                                                                     \
  do {                                                                                    \
    dpo__mf_v8 a_[(MM)], b_[(MM)];                                                        \
    double ta_[(MM)], tb_[(MM)];                                                          \
    for (int j = 0; j < (MM); j++) {                                                      \
      a_[j] = b_[j] = (dpo__mf_v8){0};                                                    \
      ta_[j] = tb_[j] = 0;                                                                \
    }                                                                                     \
    for (int32_t t = 0; t < n; t++) {                                                     \
      int64_t o = (int64_t)rows[t] * r;                                                   \
      _Pragma("GCC unroll 8") for (int j = 0; j < (MM); j++)                             \
        dpo__lb_row(H + o * (MM) + j * r, g + o, w ? w + o : NULL, r, &a_[j], &b_[j],     \
                    &ta_[j], &tb_[j]);                                                    \
    }                                                                                     \
    for (int j = 0; j < (MM); j++) {                                                      \
      u[j] += DPO__MF_HSUM8(a_[j]) + ta_[j];                                              \
      u[(MM) + j] += DPO__MF_HSUM8(b_[j]) + tb_[j];                                       \
    }                                                                                     \
  } while (0)

DPO_CLONES_LEVELS void dpo__lbfgs_wtg_rows(const dpo__lbfgs_t *l, int32_t r, const dpo__hist_t *H,
                                        const double *w, const double *g, const int32_t *rows,
                                        int32_t n, double *u) {
  int M = l->M;
  DPO__BY_M(DPO__DOTR)
  for (int32_t t = 0; t < n; t++) { /* M > 8: a row at a time */
    int64_t o = (int64_t)rows[t] * r;
    dpo__lbfgs_wtg(l, r, H + o * M, w ? w + o : NULL, g + o, u);
  }
}
#undef DPO__DOTR

void dpo__lbfgs_nmul(const dpo__lbfgs_t *l, const double *u, double *v) {
  int M = l->M, M2 = 2 * M;
  for (int i = 0; i < M2; i++) {
    double s = 0;
    const double *row = l->N + (size_t)i * M2;
    for (int j = 0; j < M; j++) s += row[j] * u[j];
    for (int j = M; j < M2; j++) s += row[j] * (l->sigma * u[j]); /* W = [S, sigma Y] */
    v[i] = s;
  }
}

/* out = H0 g + S v1 + sigma diag(w) Y v2 (out may be g), in runs of up to 64 variables: the
 * sums a = S v1, b = Y v2 a panel at a time (each read front to back), then out.  Per
 * variable the order is that of the formula: a = s_0 v_0 + s_1 v_1 + ..., out = a + sigma w
 * (g + b). */
#define DPO__WMUL(MM)                                                                     \
  do {                                                                                    \
    for (int64_t k0 = 0; k0 < nvar; k0 += 64) {                                           \
      int64_t nk = nvar - k0 < 64 ? nvar - k0 : 64, n8 = nk & ~(int64_t)7;                 \
      int nc = (int)(n8 / 8);                                                             \
      dpo__mf_v8 a_[8] = {{0}}, b_[8] = {{0}}; /* fully unrolled: registers */           \
      double at_[8], bt_[8];                                                              \
      for (int j = 0; j < (MM); j++) {                                                    \
        const dpo__hist_t *hj = H + k0 + j * nvar;                                        \
        _Pragma("GCC unroll 4") for (int c = 0; c < 8; c += 2) {                         \
          dpo__mf_v8 s0, s1, y0, y1;                                                      \
          if (c + 1 < nc) {                                                               \
            DPO__LB_PF(hj + 8 * c);                                                       \
            DPO__LB_LD16(hj + 8 * c, s0, s1, y0, y1);                                     \
            a_[c + 1] = j ? a_[c + 1] + s1 * v[j] : s1 * v[0];                            \
            b_[c + 1] = j ? b_[c + 1] + y1 * v[(MM) + j] : y1 * v[(MM)];                  \
          } else if (c < nc) {                                                            \
            DPO__LB_LD8(hj + 8 * c, s0, y0);                                              \
          }                                                                               \
          if (c < nc) {                                                                   \
            a_[c] = j ? a_[c] + s0 * v[j] : s0 * v[0];                                    \
            b_[c] = j ? b_[c] + y0 * v[(MM) + j] : y0 * v[(MM)];                          \
          }                                                                               \
        }                                                                                 \
        for (int64_t c = n8; c < nk; c++) {                                               \
          double sv = dpo__hist_s(hj[c]) * v[j], yv = dpo__hist_y(hj[c]) * v[(MM) + j];  \
          at_[c - n8] = j ? at_[c - n8] + sv : sv;                                        \
          bt_[c - n8] = j ? bt_[c - n8] + yv : yv;                                        \
        }                                                                                 \
      }                                                                                   \
      const double *g_ = g + k0, *w_ = w ? w + k0 : NULL;                                 \
      _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) if (c < nc) {                  \
        dpo__mf_v8 w8 = w_ ? DPO__MF_LD8(w_ + 8 * c) : (dpo__mf_v8){0} + 1.0;             \
        DPO__MF_ST8(out + k0 + 8 * c, a_[c] + sg * w8 * (DPO__MF_LD8(g_ + 8 * c) + b_[c])); \
      }                                                                                   \
      for (int64_t c = n8; c < nk; c++)                                                   \
        out[k0 + c] = at_[c - n8] + sg * (w_ ? w_[c] : 1.0) * (g_[c] + bt_[c - n8]);     \
    }                                                                                     \
  } while (0)

DPO_CLONES_LEVELS void dpo__lbfgs_wmul(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *H,
                                    const double *w, const double *g, const double *v,
                                    double *out) {
  int M = l->M;
  double sg = l->sigma;
  DPO__BY_M(DPO__WMUL)
  DPO__WMUL(M);
}
#undef DPO__WMUL
#undef DPO__BY_M
#undef DPO__LB_PF
#undef DPO__LB_PFD
#undef DPO__LB_LD8
#undef DPO__LB_LD16
#undef DPO__LB_WIDEN

void dpo__lbfgs_apply(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *H,
                      const double *w, const double *g, double *out) {
  double u[512] = {0}, v[512];
  dpo__lbfgs_wtg(l, nvar, H, w, g, u);
  dpo__lbfgs_nmul(l, u, v);
  dpo__lbfgs_wmul(l, nvar, H, w, g, v, out);
}
