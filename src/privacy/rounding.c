/* Directed rounding without changing the FPU mode, and exact sums (Shewchuk expansions).
 * Used by the mechanisms (losses of a noise scale, rounded up), the accountants (costs and
 * totals rounded up, allowances down) and the ledger; it calls nothing above it. */
#include "rounding.h"

#include <math.h>
#include <string.h>

static void dpo__two_sum(double a, double b, double *s, double *e) {
  double x = a + b, bb = x - a;
  *s = x;
  *e = (a - (x - bb)) + (b - bb); /* Knuth: a + b = x + e exactly */
}

double dpo__add_up(double a, double b) {
  double s, e;
  dpo__two_sum(a, b, &s, &e);
  return e > 0 ? nextafter(s, INFINITY) : s;
}

double dpo__add_down(double a, double b) {
  double s, e;
  dpo__two_sum(a, b, &s, &e);
  return e < 0 ? nextafter(s, -INFINITY) : s;
}

/* fma gives the exact residual unless results are near underflow; there we nudge anyway */
#define DPO__TINY 0x1p-960

double dpo__mul_up(double a, double b) {
  double p = a * b, e = fma(a, b, -p);
  return (e > 0 || (p != 0 && fabs(p) < DPO__TINY)) ? nextafter(p, INFINITY) : p;
}

double dpo__mul_down(double a, double b) {
  double p = a * b, e = fma(a, b, -p);
  return (e < 0 || (p != 0 && fabs(p) < DPO__TINY)) ? nextafter(p, 0.0) : p;
}

double dpo__div_up(double a, double b) {
  double q = a / b, r = fma(-q, b, a); /* a - q b exactly */
  return (r > 0 || (q != 0 && fabs(q) < DPO__TINY)) ? nextafter(q, INFINITY) : q;
}

double dpo__div_down(double a, double b) {
  double q = a / b, r = fma(-q, b, a);
  return (r < 0 || (q != 0 && fabs(q) < DPO__TINY)) ? nextafter(q, 0.0) : q;
}

double dpo__sqrt_up(double a) {
  double s = sqrt(a);
  return fma(s, s, -a) < 0 ? nextafter(s, INFINITY) : s;
}

double dpo__widen_up(double r) { return nextafter(r + r * DPO__LIBM_MARGIN, INFINITY); }

double dpo__widen_down(double r) {
  double x = nextafter(r - r * DPO__LIBM_MARGIN, 0.0);
  return x > 0 ? x : 0.0;
}

/* ------------------------------------------------------------ exact sums */

void dpo__xsum_init(dpo__xsum_t *x) { x->n = 0; }

static double dpo__xsum_near(const dpo__xsum_t *x) {
  double s = 0;
  for (int i = 0; i < x->n; i++) s += x->c[i];
  return s;
}

/* Shewchuk's GROW-EXPANSION with zero elimination: exact. */
static int dpo__xsum_grow(const dpo__xsum_t *x, double b, double *h) {
  double q = b;
  int k = 0;
  for (int i = 0; i < x->n; i++) {
    double s, e;
    dpo__two_sum(q, x->c[i], &s, &e);
    if (e != 0) h[k++] = e;
    q = s;
  }
  if (q != 0) h[k++] = q;
  return k;
}

double dpo__xsum_up(const dpo__xsum_t *x) {
  /* nearest sum is within a few ulps; walk to the smallest double >= x using exact compares */
  double s = dpo__xsum_near(x);
  while (dpo__xsum_cmp(x, s) > 0) s = nextafter(s, INFINITY);
  for (;;) {
    double lo = nextafter(s, -INFINITY);
    if (dpo__xsum_cmp(x, lo) <= 0) s = lo;
    else break;
  }
  return s;
}

void dpo__xsum_add(dpo__xsum_t *x, double b) {
  double h[DPO__XS_MAX + 1];
  int k = dpo__xsum_grow(x, b, h);
  if (k > DPO__XS_MAX) {
    /* out of room: replace by an upper bound (never an under-count), smallest first */
    double s = 0;
    for (int i = 0; i < k; i++) s = dpo__add_up(s, h[i]);
    x->n = s != 0 ? 1 : 0;
    x->c[0] = s;
    return;
  }
  memcpy(x->c, h, (size_t)k * sizeof *h);
  x->n = k;
}

int dpo__xsum_cmp(const dpo__xsum_t *x, double b) {
  double h[DPO__XS_MAX + 1];
  int k = dpo__xsum_grow(x, -b, h);
  /* non-overlapping components: the largest (last) one carries the sign */
  if (k == 0) return 0;
  return h[k - 1] > 0 ? 1 : -1;
}
