/* Directed-rounding arithmetic and exact sums of doubles for src/privacy: the bottom of the
 * privacy room.  mechanism.c, accountant.c, rdp.c, acct_auto.c and the ledger use it; it
 * calls nothing of the library (only libm), so it can sit below all of them. */
#ifndef DPO_ROUNDING_H
#define DPO_ROUNDING_H

/* ---- directed rounding without fesetround: results computed to nearest, then nudged with
 * nextafter when an exact error term (two-sum / fma) shows the nearest result was on the
 * wrong side.  libm transcendental functions are not correctly rounded: the *_up / *_down
 * wrappers widen them by DPO__LIBM_MARGIN relative (glibc documents <= 3 ulp = 2^-50.4). */
#define DPO__LIBM_MARGIN 0x1p-48

double dpo__add_up(double a, double b);
double dpo__add_down(double a, double b);
double dpo__mul_up(double a, double b);   /* a, b >= 0 */
double dpo__mul_down(double a, double b); /* a, b >= 0 */
double dpo__div_up(double a, double b);   /* a >= 0, b > 0 */
double dpo__div_down(double a, double b); /* a >= 0, b > 0 */
double dpo__sqrt_up(double a);
double dpo__widen_up(double r);   /* r >= 0 computed by libm -> upper bound */
double dpo__widen_down(double r); /* r >= 0 computed by libm -> lower bound */

/* ---- exact sum of doubles (Shewchuk expansion: non-overlapping components in increasing
 * magnitude, no zeros).  If it would exceed DPO__XS_MAX components, the two smallest are merged
 * with upward rounding, so the value can only grow: still never an under-count. */
#define DPO__XS_MAX 40
typedef struct {
  int n;
  double c[DPO__XS_MAX];
} dpo__xsum_t;

void dpo__xsum_init(dpo__xsum_t *x);
void dpo__xsum_add(dpo__xsum_t *x, double b);
/* exact sign of (x - b): -1, 0, 1 */
int dpo__xsum_cmp(const dpo__xsum_t *x, double b);
/* smallest double >= x (an upper bound; exact when x is a double) */
double dpo__xsum_up(const dpo__xsum_t *x);

#endif
