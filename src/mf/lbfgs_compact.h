/* Compact limited-memory BFGS inverse (Byrd, Nocedal, Schnabel 1994) as used by HAMSI
 * (thesis Alg. 3, lines 13-19):  H g = sigma g + W N W' g,  W = [S, sigma Y],
 *   N = [ R^-T (D + sigma C) R^-1   -R^-T ]
 *       [ -R^-1                      0    ],   R = triu(S'Y), D = diag(R), C = Y'Y.
 * Optional diagonal metric: with per-variable weights w (w = NULL means w = 1) the initial
 * inverse is H0 = sigma diag(w) instead of sigma I, i.e. Alg. 3 run in the coordinates
 * z = diag(w)^-1/2 x.  Then W = [S, sigma diag(w) Y], C = Y' diag(w) Y and sigma = s'y / y'diag(w)y
 * (line 16 in those coordinates; s'y, hence the acceptance test of line 15, is unchanged).
 * Pairs live in a circular buffer of M slots; S and Y are stored by the caller next to the
 * variables, so they can travel with them, slot-major over a run of nvar variables (HAMSI:
 * one factor row of r): S[j * nvar + v] is slot j of variable v.  This object holds only the
 * small M x M matrices, sigma and N, identical on every rank.  Local, not collective.
 * The panels are single precision (dpo__hist_t): the products read every panel of a block's
 * rows twice a step, and the bytes decide their time; the sums are in double, and the pair's
 * inner products (dots of push) are those of the rounded s and y that the panels hold, so H
 * is the exact compact inverse of the stored pairs.  Rank 50, ML-100K-sized, 2 ranks, 300
 * epochs (Intel host): update phase 0.76-0.83 -> 0.53-0.56 s, ring 0.33-0.37 -> 0.23-0.26 s;
 * the same epochs to RMSE 0.9 / 0.8 / 0.7 / 0.5 as with double panels. */
#ifndef DPO_MF_LBFGS_COMPACT_H
#define DPO_MF_LBFGS_COMPACT_H

#include <stdint.h>

typedef float dpo__hist_t; /* an entry of an S or Y panel */

typedef struct {
  int M;          /* memory */
  int m;          /* pairs held (<= M) */
  int *age;       /* [M] slots, oldest first (first m valid) */
  double sigma;   /* s'y / y'y of the last accepted pair (sigma0 before) */
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
 * sigma = s'y / y'y (line 16), the column of R and row/column of C of that slot are updated
 * (line 18) and N rebuilt (line 19).  *accepted says which.  The caller writes s, y into the
 * slot's entries of its S and Y rows when accepted.  Returns DPO_ELAPACK if R is singular. */
int dpo__lbfgs_push(dpo__lbfgs_t *l, const double *dots, int *accepted);
/* u[j] += P_j'g, u[M + j] += Q_j'diag(w)g (j < M) for panels P_j, Q_j of nvar variables and
 * weights w (NULL: 1).  Fixed lanes and order: the same bits wherever the panels are. */
void dpo__lbfgs_dots(int M, int64_t nvar, const dpo__hist_t *const *P,
                     const dpo__hist_t *const *Q, const double *w, const double *g, double *u);
/* u[2M] += [S'g; Y'diag(w)g] over nvar variables with slot-major S, Y (M x nvar) and weights w
 * (NULL: 1); call it on each run of a block's variables, starting from u = 0. */
void dpo__lbfgs_wtg(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *S,
                    const dpo__hist_t *Y, const double *w, const double *g, double *u);
/* v[2M] = N W'g = N [u1; sigma u2] for u from dpo__lbfgs_wtg. */
void dpo__lbfgs_nmul(const dpo__lbfgs_t *l, const double *u, double *v);
/* out = sigma diag(w) g + W v (slot-major S, Y; w NULL: 1), variable by variable (out may be g). */
void dpo__lbfgs_wmul(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *S,
                     const dpo__hist_t *Y, const double *w, const double *g, const double *v,
                     double *out);
/* out = H g = sigma diag(w) g + W (N (W' g)), right to left (tests, single-process use). */
void dpo__lbfgs_apply(const dpo__lbfgs_t *l, int64_t nvar, const dpo__hist_t *S,
                      const dpo__hist_t *Y, const double *w, const double *g, double *out);
#endif
