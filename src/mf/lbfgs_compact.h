/* Compact limited-memory BFGS inverse (Byrd, Nocedal, Schnabel 1994) as used by HAMSI
 * (thesis Alg. 3, lines 13-19):  H g = sigma g + W N W' g,  W = [S, sigma Y],
 *   N = [ R^-T (D + sigma C) R^-1   -R^-T ]
 *       [ -R^-1                      0    ],   R = triu(S'Y), D = diag(R), C = Y'Y.
 * Optional diagonal metric: with per-variable weights w (w = NULL means w = 1) the initial
 * inverse is H0 = sigma diag(w) instead of sigma I, i.e. Alg. 3 run in the coordinates
 * z = diag(w)^-1/2 x.  Then W = [S, sigma diag(w) Y], C = Y' diag(w) Y and sigma = s'y / y'diag(w)y
 * (line 16 in those coordinates; s'y, hence the acceptance test of line 15, is unchanged).
 * Pairs live in a circular buffer of M slots; S and Y are stored by the caller next to the
 * variables, so they can travel with them, in one panel H of (s, y) entries (dpo__hist_t),
 * slot-major over a run of nvar variables (HAMSI: one factor row of r): H[j * nvar + v] is
 * slot j of variable v.  This object holds only the
 * small M x M matrices, sigma and N, identical on every rank.  Local, not collective.
 * The panels hold bfloat16 (dpo__hist_t): the products read every panel of a block's rows
 * twice a step, and the bytes decide their time; the sums are in double, and the pair's inner
 * products (dots of push) are those of the rounded s and y that the panels hold, so H is the
 * exact compact inverse of the stored pairs.  Rank 50, ML-100K-sized, 2 ranks, 300 epochs
 * (Intel host): double -> float panels, update phase 0.76-0.83 -> 0.53-0.56 s, ring 0.33-0.37
 * -> 0.23-0.26 s; float -> bfloat16: see the README of doc/results/bench-hamsi.  Epochs to
 * RMSE 0.9 / 0.8 / 0.7 / 0.5 stayed 14 / 16 / 22 / 48 with each. */
#ifndef DPO_MF_LBFGS_COMPACT_H
#define DPO_MF_LBFGS_COMPACT_H

#include <stdint.h>
#include <string.h>

/* Rounded to the nearest bfloat16 (float's top 16 bits: 8 significant bits, float's range)
 * by way of float (ties to even; inf stays inf, a NaN stays a NaN): its 16 bits. */
static inline uint32_t dpo__bf16(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40; /* NaN: a quiet one */
  u += 0x7fffu + ((u >> 16) & 1);
  return u >> 16;
}
static inline double dpo__bf16_val(uint32_t b) {
  uint32_t u = b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* One variable's entry of one stored pair: s_j[v] and y_j[v] as bfloat16, s in the high half
 * of the word, y in the low one.  The products read s_j and y_j of the same variables
 * together, and two bit operations widen both to float.  Why bfloat16: half of float's bytes
 * and float's range (s = x - x-bar reaches 1e-8 late in a run; half precision would flush
 * it).  Why one word for both: with two 16-bit panels the widening cost more instructions
 * than the halved bytes saved (rank 50, 300 epochs: update phase 0.53 -> 0.78 s).  A struct,
 * so no arithmetic on the bits compiles; dpo__hist_put / _s / _y convert. */
typedef struct {
  uint32_t b;
} dpo__hist_t;

static inline dpo__hist_t dpo__hist_put(double s, double y) {
  return (dpo__hist_t){dpo__bf16(s) << 16 | dpo__bf16(y)};
}
static inline double dpo__hist_s(dpo__hist_t h) { return dpo__bf16_val(h.b >> 16); }
static inline double dpo__hist_y(dpo__hist_t h) { return dpo__bf16_val(h.b & 0xffffu); }

typedef struct {
  int M;          /* memory */
  int m;          /* pairs held (<= M) */
  int *age;       /* [M] slots, oldest first (first m valid) */
  double sigma;   /* s'y / y'y of the last accepted pair (sigma0 before); with shrink_only the
                   * smallest since the last reset, at most sigma0 */
  int shrink_only; /* set by the caller after init; kept by reset */
  double *SY;     /* [M*M] SY[i*M + j] = s_i'y_j (slots; needed for i older than or = j) */
  double *YY;     /* [M*M] y_i'y_j */
  double *N;      /* [2M*2M] in slot order (rows/cols of unused slots are 0) */
  int64_t accepted, rejected;
} dpo__lbfgs_t;

int dpo__lbfgs_init(dpo__lbfgs_t *l, int M, double sigma0);
void dpo__lbfgs_free(dpo__lbfgs_t *l);
/* Forget every pair (m = 0, sigma = sigma0); the counters are kept. */
void dpo__lbfgs_reset(dpo__lbfgs_t *l, double sigma0);
/* Slot the next accepted pair goes to (a free one, else the oldest). */
int dpo__lbfgs_next_slot(const dpo__lbfgs_t *l);
/* dots has 2M entries: dots[j] = s_j'y and dots[M + j] = y_j'diag(w)y for the slots j kept, and at
 * j = next slot: dots[j] = s'y, dots[M + j] = y'y of the new pair (thesis Alg. 3, line 14).
 * The pair is accepted only when s'y > 0 (line 15; also y'y > 0 and both finite): then
 * sigma = s'y / y'y (line 16; min(sigma, s'y / y'y) with shrink_only), the column of R and row/column of C of that slot are updated
 * (line 18) and N rebuilt (line 19).  *accepted says which.  The caller writes s, y into the
 * slot's entries of its S and Y rows when accepted.  Returns DPO_ELAPACK if R is singular. */
int dpo__lbfgs_push(dpo__lbfgs_t *l, const double *dots, int *accepted);
/* u[j] += s_j'g, u[M + j] += y_j'diag(w)g (j < M) for the (s, y) panels P_j of nvar variables
 * and weights w (NULL: 1).  Fixed lanes and order: the same bits wherever the panels are. */
void dpo__lbfgs_dots(int M, int64_t nvar, const dpo__hist_t *const *P, const double *w,
                     const double *g, double *u);
/* u[2M] += [S'g; Y'diag(w)g] over nvar variables with the slot-major panel H (M x nvar) and
 * weights w (NULL: 1); call it on each run of a block's variables, starting from u = 0. */
void dpo__lbfgs_wtg(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *H, const double *w,
                    const double *g, double *u);
/* The same over the rows rows[0..n) of r variables each (row k: H + k r M, w + k r, g + k r),
 * with one reduction for all of them: a fixed order for a given row list. */
void dpo__lbfgs_wtg_rows(const dpo__lbfgs_t *l, int32_t r, const dpo__hist_t *H, const double *w,
                         const double *g, const int32_t *rows, int32_t n, double *u);
/* v[2M] = N W'g = N [u1; sigma u2] for u from dpo__lbfgs_wtg. */
void dpo__lbfgs_nmul(const dpo__lbfgs_t *l, const double *u, double *v);
/* out = sigma diag(w) g + W v (slot-major H; w NULL: 1), variable by variable (out may be g). */
void dpo__lbfgs_wmul(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *H, const double *w,
                     const double *g, const double *v, double *out);
/* out = H g = sigma diag(w) g + W (N (W' g)), right to left (tests, single-process use). */
void dpo__lbfgs_apply(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *H,
                      const double *w, const double *g, double *out);
#endif
