/* Privacy loss distribution (PLD) accountant for compositions of the Gaussian mechanism, plain
 * or Poisson-subsampled (add/remove neighbours); the searches on it are in pld_search.c.
 *
 * The privacy loss of a pair (P, Q) is L = log(P/Q)(o), o ~ P; the hockey-stick divergence is
 *   delta(eps) = E_P[(1 - e^(eps - L))_+] + P(L = inf)          (Koskela et al. 2020, Sec. 2)
 * and a k-fold composition has L = L_1 + ... + L_k (independent), so its PLD is the k-fold
 * convolution.  Each step's PLD is put on the grid h Z by connecting the dots (dpo__pmf_step):
 * a discrete pair that dominates the true one, so the delta of the discrete composition bounds
 * the true one, for every eps.  (Rounding every loss up to the grid, Meiser-Mohammadi 2018, is
 * valid too, and was used here first: it costs about h per step of composed loss, about 4% of
 * noise at the Fashion-MNIST recipe's plan, where connecting the dots costs O(h^2).)
 *
 * Tails: the loss range of one step is cut where the remaining mass is below DPO__PLD_TAU; mass
 * below the range is moved up to its first point (rounding up) and mass above it goes to
 * the infinite loss (it counts fully in delta), and after each convolution the same is done to
 * the composed PMF.  A k-fold composition of one step is one transform raised to the power k
 * (dpo__pmf_pow_spec: a window from Chernoff bounds, its rounding bounded); different kinds
 * are convolved.  Floating point: each FFT convolution's error is bounded in l1 by
 * 8 u log2(N) sqrt(N) (||a||_2 + ||b||_2) (u = 2^-53; the usual FFT error bound with a generous
 * constant), which is added to the infinite-loss mass (delta is a sum of masses times weights
 * in [0, 1]); negative bins are set to 0.  Both only raise delta.
 *
 * Pairs (z = sigma / sensitivity, q = m/n; mix = (1-q) N(0, z^2) + q N(1, z^2)):
 *   none:     P = N(0, z^2), Q = N(1, z^2) (symmetric: one direction)
 *   poisson:  remove: P = mix, Q = N(0, z^2);  add: P = N(0, z^2), Q = mix
 *             (the dominating pairs of Zhu-Dong-Wang 2022 / dp_accounting for add/remove); each
 *             is composed k times and delta is the larger of the two.
 *   wor:      m of n without replacement under replace-one, z in units of the replace-one
 *             sensitivity (the charge's): the same pairs at q = m/n.  Zhu, Dong and Wang 2022
 *             ("Optimal accounting of differential privacy via characteristic function", the
 *             subsampling theorem for sampling without replacement under the substitution
 *             relation): if (P, Q) dominates the base mechanism under replace-one, then
 *             (q P + (1 - q) Q, Q) dominates it on m-of-n batches; for the Gaussian P = N(1, z^2),
 *             Q = N(0, z^2), which is the remove pair above.  Replace-one is symmetric, so that
 *             pair alone covers every ordered pair of neighbours; the add pair is composed too
 *             and the larger delta kept (only ever above their bound).
 * With g(x) = log(1 - q + q exp((2x - 1) / (2 z^2))), increasing in x, the losses are
 * L = g(o), o ~ mix (remove) and L = -g(o), o ~ N(0, z^2) (add); q = 1 is the plain Gaussian.
 */
#include "privacy_int.h"

#include "dpopt/status.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DPO__PLD_TAU 1e-13 /* tail mass cut per side, per step and per convolution */
#define DPO__PLD_CUT 8.3   /* Phi(-8.3) < 1e-16 */
/* The composition's window, when eps is read at one delta, leaves out DPO__PLD_TAU_REL delta of
 * the mass on each side (to +inf: delta rises by 2e-5 of itself), where 1e-15 was left out for
 * any delta: 2/3 of the window's width on the 1000-step DP-SGD plan, a transform half the
 * length, whose bound on its rounding (~ sqrt of the length, 1e-3 of delta there) is smaller
 * too: that plan's eps moved by -5.6e-5 relative, a9a's by +1.5e-6. */
#define DPO__PLD_TAU_REL 1e-5
/* The one-step PMF's far tail, where o ~ P leaves less than DPO__PLD_TAILX of its mass beyond,
 * is put on every DPO__PLD_TAILK-th grid point (dpo__pmf_step) */
#define DPO__PLD_TAILX 1e-6
#define DPO__PLD_TAILK 16

typedef struct {
  int64_t off; /* loss of bin i is (off + i) h */
  int64_t len;
  double *p;
  double inf; /* mass at +infinity (plus the slack of every rounding) */
} dpo__pmf_t;

static double dpo__Phi_(double x) { return 0.5 * erfc(-x / M_SQRT2); }

/* e^(c k) on a run of consecutive k, one exp per 256 of them: e^(c (k0 + 256 b)) times a table
 * of e^(c j), j < 256 (dpo__expt_init).  Each value is within 3 u of e^(c k) beyond what exp's
 * own argument rounding costs (two exp within 1 ulp, one product): the bounds that use these
 * values (dpo__pmf_step's slack, the tail sums' rounding, dpo__chernoff's 1.001) allow 4 u. */
typedef struct {
  double c, t[256];
  int64_t base; /* the block whose e^(c base) is in eb */
  double eb;
} dpo__expt_t;

static void dpo__expt_init(dpo__expt_t *e, double c) {
  e->c = c, e->base = INT64_MIN, e->eb = NAN;
  for (int j = 0; j < 256; j++) e->t[j] = exp(c * (double)j);
}

static double dpo__expt(dpo__expt_t *e, int64_t k) {
  const int64_t b = k & ~(int64_t)255; /* floor to a multiple of 256, negative k too */
  if (b != e->base) e->base = b, e->eb = exp(e->c * (double)b);
  return e->eb * e->t[k - b];
}

/* g^{-1}(s): the x with g(x) = s, -inf for s <= log(1-q); lq = log(q), formed once a PMF */
static double dpo__ginv(double s, double q, double lq, double z) {
  double t = q < 1 ? expm1(s) + q : exp(s); /* e^s - (1 - q) */
  if (!(t > 0)) return -INFINITY;
  return z * z * (log(t) - lq) + 0.5;
}
static double dpo__g(double x, double q, double z) {
  double e = (2 * x - 1) / (2 * z * z);
  if (q == 1) return e;
  return e > 0 ? e + log(q + (1 - q) * exp(-e)) : log1p(q * expm1(e));
}

/* P(o <= x) and P(o > x) for o ~ (1 - w) N(0, z^2) + w N(1, z^2) */
static double dpo__F(double x, double w, double z) {
  if (x == -INFINITY) return 0;
  if (w == 0) return dpo__Phi_(x / z); /* the same value, one erfc fewer */
  return (1 - w) * dpo__Phi_(x / z) + w * dpo__Phi_((x - 1) / z);
}
static double dpo__S(double x, double w, double z) {
  if (x == -INFINITY) return 1;
  if (w == 0) return dpo__Phi_(-x / z);
  return (1 - w) * dpo__Phi_(-x / z) + w * dpo__Phi_((1 - x) / z);
}
/* The last two points of F (side 0) or S (side 1), shared by P and Q: at a point x both are
 * made of the same two normal tails, A = Phi(+-x / z) and B = Phi(+-(x - 1) / z) (B formed
 * when a weight needs it), so a bin's ends cost two erfc where each weight's own pair cost
 * three.  The values are dpo__F's and dpo__S's, bit for bit: the same terms, summed alike. */
typedef struct {
  double x[2], a[2], b[2];
  int side[2];
} dpo__cdfc_t;

static double dpo__cdf_c(int side, double x, double w, double z, dpo__cdfc_t *c) {
  if (x == -INFINITY) return side ? 1 : 0;
  int k = c->side[0] == side && c->x[0] == x ? 0 : c->side[1] == side && c->x[1] == x ? 1 : -1;
  if (k < 0) {
    c->x[1] = c->x[0], c->a[1] = c->a[0], c->b[1] = c->b[0], c->side[1] = c->side[0];
    c->x[0] = x, c->side[0] = side, c->b[0] = NAN, k = 0;
    c->a[0] = dpo__Phi_(side ? -x / z : x / z);
  }
  if (w == 0) return c->a[k];
  if (isnan(c->b[k])) c->b[k] = dpo__Phi_(side ? (1 - x) / z : (x - 1) / z);
  return (1 - w) * c->a[k] + w * c->b[k];
}

/* P(a < o <= b), from the side where it is not a difference of two numbers near 1; *err
 * bounds its rounding error: 16 u times the larger term (a few ulp for each erfc, the weights
 * and the difference, generously); c: the tails at the last points (dpo__cdf_c) */
static double dpo__mass(double a, double b, double w, double z, double *err, dpo__cdfc_t *c) {
  const int up = a > 0.5;
  double t = up ? dpo__cdf_c(1, a, w, z, c) : dpo__cdf_c(0, b, w, z, c);
  double d = t - (up ? dpo__cdf_c(1, b, w, z, c) : dpo__cdf_c(0, a, w, z, c));
  *err = 16 * DBL_EPSILON / 2 * t;
  return d > 0 ? d : 0;
}

/* The one-step PMF on h Z; dir 0 = remove (or the plain Gaussian), 1 = add.  Connect the dots
 * (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, "Connect the Dots: Tighter Discrete
 * Approximations of Privacy Loss Distributions", 2022): a loss l in (e_lo, e_hi], e_hi =
 * e_lo + h, is split between the two grid points, beta = (1 - e^(e_lo - l)) / (1 - e^-h) of its
 * mass to e_hi and the rest to e_lo.  That keeps both P(L in I) and E_P[e^-L; I] = Q(I), and
 * makes the hockey-stick profile delta(eps), as a function of x = e^eps, the chord of the true
 * one between grid points: above it (the profile is convex in x), so the discrete pair
 * dominates the true pair, for every eps, and the domination survives composition.  The
 * error is second order in h (the mean loss is kept to O(h^2)), not the h per step of
 * rounding every loss up.  Per interval, beta integrates to
 *   b = (P(I) - e^e_lo Q(I)) / (1 - e^-h)   (in [0, P(I)]: e^e_lo <= dP/dQ <= e^e_hi on I).
 * Losses at or below the first grid point are rounded up to it; those above the last go to
 * +inf (the tails beyond Phi(-8.3)).  The profile is exact at the grid points, so the bins'
 * rounding errors are added to the +inf mass: an error e_P in P(I) moves delta by at most e_P,
 * and the error (e_P + e^e_lo e_Q) / (1 - e^-h) it makes in b with Q(I)'s moves that much mass
 * one grid step, which moves delta by at most 1 - e^-h times it.  The chord argument holds on
 * any partition whose ends are grid points: in the far tail (less than DPO__PLD_TAILX of P's
 * mass beyond) the intervals span DPO__PLD_TAILK steps (b over 1 - e^(-K h), the same slack),
 * a sixteenth of the CDF evaluations there (most of the bins of the 1000-step DP-SGD plan's
 * remove pair), its O((K h)^2) error on that mass moving eps up by ~3e-7 relative there (5e-6
 * on the search's 4x coarser grid; 1e-9 with 1e-8 beyond). */
/* Where o ~ P (weight w on N(1, z^2)) leaves at most tau of its mass below (upper = 0) or
 * above (upper = 1), within the cut of each component at DPO__PLD_CUT: by bisection.  Bins
 * there would hold less than dpo__truncate keeps (its tau is larger), so they are not formed. */
static double dpo__o_cut(double w, double z, int upper, double tau) {
  double lo = -DPO__PLD_CUT * z, hi = 1 + DPO__PLD_CUT * z;
  if (upper ? dpo__S(lo, w, z) <= tau : dpo__F(hi, w, z) <= tau) return upper ? lo : hi;
  for (int it = 0; it < 60; it++) {
    const double mid = 0.5 * (lo + hi);
    if (upper ? dpo__S(mid, w, z) <= tau : dpo__F(mid, w, z) > tau) hi = mid;
    else lo = mid;
  }
  return upper ? hi : lo;
}

static int dpo__pmf_step(double q, double z, int dir, double h, dpo__pmf_t *r) {
  /* o ~ P: mix (remove) or N(0, z^2) (add); beyond these o, less than 1e-14 of P's mass */
  const double olo = dpo__o_cut(dir ? 0.0 : q, z, 0, 1e-2 * DPO__PLD_TAU),
               ohi = dpo__o_cut(dir ? 0.0 : q, z, 1, 1e-2 * DPO__PLD_TAU);
  double tlo = dir ? -dpo__g(ohi, q, z) : dpo__g(olo, q, z);
  double thi = dir ? -dpo__g(olo, q, z) : dpo__g(ohi, q, z);
  int64_t ilo = (int64_t)ceil(tlo / h), ihi = (int64_t)ceil(thi / h);
  if ((double)(ihi - ilo) > 5e7)
    return dpo_err(DPO_EINVAL, "pld: %g grid points for one step (raise the interval h=%g)",
                   (double)(ihi - ilo), h);
  r->off = ilo;
  r->len = ihi - ilo + 1;
  r->p = calloc((size_t)r->len, sizeof(double));
  if (!r->p) return dpo_err(DPO_ENOMEM, "pld: out of memory");
  /* o ~ P: mix (remove) or N(0, z^2) (add); Q the other one */
  double wp = dir ? 0.0 : q, wq = dir ? q : 0.0, den = -expm1(-h), slack = 0, lq = log(q);
  dpo__cdfc_t cc = {{NAN, NAN}, {0, 0}, {NAN, NAN}, {-1, -1}};
  double gprev = NAN; /* ginv at the previous end shared with this interval */
  dpo__expt_t ex;
  dpo__expt_init(&ex, h);
  /* the far tail, where o ~ P leaves less than DPO__PLD_TAILX beyond: intervals of
   * DPO__PLD_TAILK grid steps (remove: the losses above ix; add: below it) */
  const double ox = dpo__o_cut(wp, z, 1, DPO__PLD_TAILX);
  const int64_t ix = dir ? (int64_t)floor(-dpo__g(ox, q, z) / h) - ilo
                         : (int64_t)ceil(dpo__g(ox, q, z) / h) - ilo;
  const double denk = -expm1(-DPO__PLD_TAILK * h);
  for (int64_t i = 0, pi = -1, w; i < r->len; pi = i, i += w) {
    /* the next interval's width: 1, or DPO__PLD_TAILK in the far tail */
    w = dir ? (i + DPO__PLD_TAILK <= ix ? DPO__PLD_TAILK : 1)
            : (i >= ix && i + DPO__PLD_TAILK < r->len ? DPO__PLD_TAILK : 1);
    /* the ends as integers times h: each interval ends where the next begins, exactly */
    double hi = (double)(ilo + i) * h, a, b;
    if (!dir) { /* L = g(o) in (lo, hi]  <=>  o in (ginv(lo), ginv(hi)] */
      a = i == 0 ? -INFINITY : gprev, b = gprev = dpo__ginv(hi, q, lq, z);
    } else { /* L = -g(o) in (lo, hi]  <=>  o in [ginv(-hi), ginv(-lo)) */
      a = dpo__ginv(-hi, q, lq, z), b = i == 0 ? INFINITY : gprev;
      gprev = a;
    }
    if (a == b) continue; /* both -inf: no loss in the interval */
    if (i == 0) { /* every loss up to the first grid point, rounded up to it */
      r->p[0] = a == -INFINITY ? dpo__F(b, wp, z) : dpo__S(a, wp, z);
      continue;
    }
    double ep, eq, mp = dpo__mass(a, b, wp, z, &ep, &cc), mq = dpo__mass(a, b, wq, z, &eq, &cc);
    double el = dpo__expt(&ex, ilo + pi); /* e^lo */
    double up = (mp - el * mq) / (i - pi == 1 ? den : i - pi == DPO__PLD_TAILK ? denk
                                                    : -expm1(-(double)(i - pi) * h));
    up = up < 0 ? 0 : up > mp ? mp : up;
    /* + the split's own roundings, and e^lo's (dpo__expt: 4 u of el mq, moved i - pi steps) */
    slack += 2 * ep + el * eq + 4 * DBL_EPSILON * mp + 4 * DBL_EPSILON * el * mq;
    r->p[i] += up;
    r->p[pi] += mp - up;
  }
  /* losses above the last grid point: o above it (remove) or below it (add) */
  r->inf = dir ? dpo__F(dpo__ginv(-(double)ihi * h, q, lq, z), wp, z)
               : dpo__S(dpo__ginv((double)ihi * h, q, lq, z), wp, z);
  r->inf += 8 * DBL_EPSILON * r->inf + slack;
  return DPO_OK;
}

static double dpo__l2(const dpo__pmf_t *a) {
  double s = 0;
  for (int64_t i = 0; i < a->len; i++) s += a->p[i] * a->p[i];
  return sqrt(s);
}

/* cut the tails of r: mass below the first kept bin moves up into it, mass above the last kept
 * bin goes to +inf */
static void dpo__truncate(dpo__pmf_t *r) {
  int64_t lo = 0, hi = r->len - 1;
  double cl = 0, ch = 0;
  while (lo < hi && cl + r->p[lo] <= DPO__PLD_TAU) cl += r->p[lo++];
  while (hi > lo && ch + r->p[hi] <= DPO__PLD_TAU) ch += r->p[hi--];
  r->p[lo] += cl;
  r->inf += ch;
  if (lo > 0) memmove(r->p, r->p + lo, sizeof(double) * (size_t)(hi - lo + 1));
  r->off += lo;
  r->len = hi - lo + 1;
}

/* r = a * b (PMF convolution); a and b are kept */
static int dpo__conv(const dpo__pmf_t *a, const dpo__pmf_t *b, dpo__pmf_t *r) {
  int64_t len = a->len + b->len - 1;
  double *p = calloc((size_t)len, sizeof(double));
  if (!p) return dpo_err(DPO_ENOMEM, "pld: out of memory");
  double slack = 0;
  if ((double)a->len * (double)b->len < 4e6) { /* direct: error far below the slack added */
    for (int64_t i = 0; i < a->len; i++)
      for (int64_t j = 0; j < b->len; j++) p[i + j] += a->p[i] * b->p[j];
    slack = (double)len * 4e-16 * (double)(a->len + b->len) * dpo__l2(a) * dpo__l2(b);
  } else {
    /* pld_fft.c: real transforms of length n = 2^lg >= len */
    int lg = 0, st = dpo__pld_rconv(a->p, a->len, b->p, b->len, p, &lg);
    if (st) {
      free(p);
      return st;
    }
    /* ||error||_2 <= c u log2(N) (||a||_2 ||b||_1 + ||a||_1 ||b||_2) for the forward FFTs, the
     * product and the inverse (||A||_inf <= ||a||_1 <= 1); ||.||_1 <= sqrt(N) ||.||_2; c = 8,
     * doubled for the real transforms' split and merge (pld_fft.c) */
    slack = sqrt((double)((int64_t)1 << lg)) * 16.0 * 1.12e-16 * (double)(lg + 1) *
            (dpo__l2(a) + dpo__l2(b));
  }
  r->p = p;
  r->len = len;
  r->off = a->off + b->off;
  r->inf = a->inf + b->inf + slack; /* >= 1 - (1 - a)(1 - b) */
  dpo__truncate(r);
  return DPO_OK;
}

/* Bounds on the t-fold composition's tails beyond a window, from one step's PMF a (Chernoff:
 * for s > 0, the mass of sums >= b is at most e^(-s b) (sum_i a_i e^(s l_i))^t, whatever the
 * other steps; s < 0 likewise below).  For s = +-2^j, j = -3..9, e^(+-l / 8) (dpo__expt) and
 * squarings; *blo, *bhi: the window in units of h, its ends the tightest over s with the mass
 * beyond each end at most tau (rounding covered by the 1.001 on tau at the caller). */
#define DPO__CH_J 13
static void dpo__chernoff(const dpo__pmf_t *a, double h, int64_t t, double tau, double *blo,
                          double *bhi) {
  double lmin = (double)a->off * h, lmax = (double)(a->off + a->len - 1) * h;
  double sp[DPO__CH_J] = {0}, sm[DPO__CH_J] = {0};
  dpo__expt_t ep, em; /* e^(s (l - lmax)), e^(-s (l - lmin)) at s = 1/8 */
  dpo__expt_init(&ep, 0.125 * h), dpo__expt_init(&em, -0.125 * h);
  for (int64_t i = 0; i < a->len; i++) {
    if (!(a->p[i] > 0)) continue;
    double wp = dpo__expt(&ep, i - (a->len - 1)), wm = dpo__expt(&em, i);
    for (int j = 0; j < DPO__CH_J; j++) {
      sp[j] += a->p[i] * wp, sm[j] += a->p[i] * wm;
      wp *= wp, wm *= wm;
    }
  }
  double hi = (double)t * lmax, lo = (double)t * lmin; /* the composition's whole support */
  for (int j = 0; j < DPO__CH_J; j++) {
    const double s = ldexp(1.0, j - 3);
    /* log sum a_i e^(s l_i) = s lmax + log sp (upper), -s lmin + log sm (lower) */
    if (sp[j] > 0) hi = fmin(hi, (double)t * (lmax + log(sp[j]) / s) - log(tau) / s);
    if (sm[j] > 0) lo = fmax(lo, (double)t * (lmin - log(sm[j]) / s) + log(tau) / s);
  }
  *blo = floor(lo / h), *bhi = ceil(hi / h);
}

/* An upper bound on the t-fold composition's delta at eps from one step's PMF a: delta(eps) =
 * E[(1 - e^(eps - L))_+] + P(some step at +inf), and (1 - e^-x)_+ <= C(s) e^(s x) for every x,
 * C(s) = max_x>=0 (1 - e^-x) e^(-s x) = (s / (1 + s))^s / (1 + s), so the expectation is at
 * most C(s) e^(-s eps) (sum_i a_i e^(s l_i))^t for each s > 0 (over the finite part: Chernoff
 * on the hockey stick, 15-50x below P(L > eps) here); s = 2^(k/4) / 8, k = 0..51, by squaring
 * four chains.  Rounding: each term within (2^(j+1) + 2) u <= 2^14 u after
 * j <= 12 squarings, the sum (len) u more, underflowed terms below DBL_MIN each; the power t
 * multiplies the relative error by t: covered by the factor 1 + 2 t (2^14 + len + 4) u. */
static double dpo__chernoff_delta(const dpo__pmf_t *a, double h, int64_t t, double eps) {
  const double lmax = (double)(a->off + a->len - 1) * h, u = 1.12e-16;
  double sp[4][DPO__CH_J] = {{0}}, s0[4], best = INFINITY;
  for (int k = 0; k < 4; k++) s0[k] = 0.125 * exp2(0.25 * k);
  for (int64_t i = 0; i < a->len; i++) {
    if (!(a->p[i] > 0)) continue;
    const double l = (double)(a->off + i) * h - lmax; /* <= 0 */
    for (int k = 0; k < 4; k++) {
      double w = exp(s0[k] * l);
      for (int j = 0; j < DPO__CH_J; j++) sp[k][j] += a->p[i] * w, w *= w;
    }
  }
  for (int k = 0; k < 4; k++)
    for (int j = 0; j < DPO__CH_J; j++) {
      const double s = ldexp(s0[k], j), v = sp[k][j] + (double)a->len * DBL_MIN;
      best = fmin(best, (double)t * (s * lmax + log(v)) - s * eps - log1p(s) +
                            s * (log(s) - log1p(s)));
    }
  const double pinf = -expm1((double)t * log1p(-fmin(a->inf, 1.0)));
  return (pinf + exp(best)) * (1 + 2 * (double)t * (16384.0 + (double)a->len + 4) * u) + 1e-300;
}

/* a^t (t-fold composition), by powers of a's spectrum (dpo__pld_rpow) on a window of the
 * composition's losses [A h, (A + N) h) holding all but tau of its mass below and above
 * (dpo__chernoff); that mass goes to +inf, and so does the mass folded into the window from
 * outside it (only ever raising bins).  *a is consumed.  Rounding, in l1 over the result
 * (u = 1.12e-16, lg = log2 N, c = 16 as in dpo__conv): the forward transform's error
 * e1 <= c u (lg + 1) sqrt(N) ||a||_2 in l2 per spectrum coefficient set; the power t of a
 * coefficient moves by at most t (1 + e1)^(t - 1) times its error (|a's spectrum| <= 1), and
 * binary powering's own 2 log2(t) + 2 complex products (each within sqrt(5) u, each raised to
 * a power <= t) add a relative t (2 log2 t + 2) sqrt(5) u; the inverse maps l2 errors of the
 * half spectrum to sqrt(2 / N) of them in l2 and adds c u (lg + 1) ||.||_2; l1 <= sqrt(N) l2.
 * tau: 1e-15, or DPO__PLD_TAU_REL delta when the caller reads eps at one delta (dpo_pld_eps). */
static int dpo__pmf_pow_spec(dpo__pmf_t *a, int64_t t, double h, double tau, dpo__pmf_t *r) {
  int st = DPO_OK;
  dpo__truncate(a);
  if (t == 1) {
    *r = *a;
    a->p = NULL;
    return DPO_OK;
  }
  double blo, bhi;
  dpo__chernoff(a, h, t, tau, &blo, &bhi);
  int64_t n = 4, lg = 2;
  while ((double)n < bhi - blo + 1) n <<= 1, lg++;
  if (n > ((int64_t)1 << 28)) {
    free(a->p), a->p = NULL;
    return dpo_err(DPO_EINVAL, "pld: a window of %g grid points (raise the interval h=%g)",
                   bhi - blo + 1, h);
  }
  double *c = malloc(sizeof(double) * (size_t)n), *p = calloc((size_t)n, sizeof(double));
  if (!c || !p) st = dpo_err(DPO_ENOMEM, "pld: out of memory (window of %lld)", (long long)n);
  if (!st) st = dpo__pld_rpow(a->p, a->len, n, t, c);
  if (st) {
    free(c), free(p), free(a->p), a->p = NULL;
    return st;
  }
  /* bin k of the circular result holds the losses (t off + k + i N) h: window index
   * j = k + t off - A modulo N */
  const int64_t A = (int64_t)blo, sh = ((t * a->off - A) % n + n) % n;
  for (int64_t k = 0; k < n; k++) p[(k + sh) & (n - 1)] = c[k] > 0 ? c[k] : 0;
  const double u = 1.12e-16, sn = sqrt((double)n), lt = log2((double)t) + 2;
  const double l2 = a->len <= n ? dpo__l2(a) : 1.0; /* folded: ||.||_2 <= ||.||_1 <= 1 */
  const double e1 = 16 * u * (double)(lg + 1) * sn * l2, gr = exp((double)t * e1);
  const double pw = (double)t * 2 * lt * sqrt(5.0) * u * 1.0001;
  /* + the coefficients set to 0 (dpo__pld_rpow: each power below 1e-200, generously) */
  const double slack = M_SQRT2 * ((double)t * gr * e1 + pw * gr * sqrt((double)(n / 2 + 1))) +
                       16 * u * (double)(lg + 1) * 2 * sn + 1e-190;
  /* P(some step at +inf) = 1 - (1 - inf)^t, rounded up */
  const double pinf = fmin(1.0, -expm1((double)t * log1p(-fmin(a->inf, 1.0))) * (1 + 1e-12));
  free(c);
  free(a->p);
  a->p = NULL;
  r->p = p;
  r->off = A;
  r->len = n;
  r->inf = pinf + slack + 2 * 1.001 * tau;
  dpo__truncate(r);
  return DPO_OK;
}

static double dpo__pmf_delta(const dpo__pmf_t *r, double h, double eps) {
  double d = 0;
  for (int64_t i = r->len - 1; i >= 0; i--) {
    double t = (double)(r->off + i) * h;
    if (t <= eps) break;
    d += r->p[i] * -expm1(eps - t);
  }
  return d + r->inf;
}

/* ---- public */

struct dpo__pld_comp {
  dpo__pmf_t dir[2];
  int ndir, nall; /* directions composed; of the pair's (2: add and remove) */
  double h, q, z, tau; /* tau: the window's cut each side (dpo__pmf_pow_spec) */
  int64_t steps;
  double *sum[2]; /* dpo__comp_sums: each direction's tail sums, or NULL */
};

/* Tail sums of r for delta(eps) in O(1): s[i] = sum_{j >= i} p_j, s[len + 1 + i] =
 * sum_{j >= i} p_j e^-l_j, so the sum over the losses above eps of p (1 - e^(eps - l)) is
 * s[i] - e^eps s[len + 1 + i] (i the first bin above eps).  NULL (the direct sum is used) if
 * some |l| > 700 or memory is short. */
static double *dpo__pmf_sums(const dpo__pmf_t *r, double h) {
  if (fabs((double)r->off * h) > 700 || fabs((double)(r->off + r->len) * h) > 700) return NULL;
  double *s = malloc(sizeof(double) * 2 * (size_t)(r->len + 1));
  if (!s) return NULL;
  double *s2 = s + r->len + 1;
  s[r->len] = s2[r->len] = 0;
  dpo__expt_t e; /* e^-l: each within 4 u (dpo__expt), covered below */
  dpo__expt_init(&e, -h);
  for (int64_t i = r->len - 1; i >= 0; i--) {
    s[i] = s[i + 1] + r->p[i];
    s2[i] = s2[i + 1] + r->p[i] * dpo__expt(&e, r->off + i);
  }
  return s;
}

/* dpo__pmf_delta from the tail sums: the difference cancels, so its rounding is bounded and
 * added (recursive sums of n non-negative terms are within n u of theirs; e^-l (dpo__expt),
 * the product and the difference a few u more): the value stays an upper bound */
static double dpo__pmf_delta_sums(const dpo__pmf_t *r, const double *s, double h, double eps) {
  int64_t i = (int64_t)floor(eps / h) - r->off;
  if (i < 0) i = 0;
  while (i < r->len && (double)(r->off + i) * h <= eps) i++;
  while (i > 0 && (double)(r->off + i - 1) * h > eps) i--;
  if (i >= r->len) return r->inf;
  const double a = s[i], b = exp(eps) * s[r->len + 1 + i], d = a - b;
  return (d > 0 ? d : 0) + (double)(r->len + 12) * 1.12e-16 * (a + b) + r->inf;
}

/* compositions computed in this process (memo hits excluded): dpo_pld_compositions */
static int64_t dpo__pld_ncomp;
int64_t dpo_pld_compositions(void) { return dpo__pld_ncomp; }

/* the t-fold composition of direction d (dpo__pmf_step) into c->dir[d] */
static int dpo__pld_dir(struct dpo__pld_comp *c, int d) {
  dpo__pmf_t one;
  int st = dpo__pmf_step(c->q, c->z, d, c->h, &one);
  if (!st) st = dpo__pmf_pow_spec(&one, c->steps, c->h, c->tau, &c->dir[d]);
  return st;
}

/* first: the first direction only (dpo_pld_eps decides whether the other is needed); delta:
 * the one delta the caller reads eps at (its window's cut: DPO__PLD_TAU_REL delta), else 0 */
static int dpo__pld_build(const char *sampling, int64_t m, int64_t n, double z, int64_t steps,
                          double h, int first, double delta, struct dpo__pld_comp *c) {
  memset(c, 0, sizeof *c);
  if (!(z > 0) || !isfinite(z) || steps < 1 || !(h > 0) || !isfinite(h))
    return dpo_err(DPO_EINVAL, "pld: need z > 0, steps >= 1, interval h > 0 (got %g, %lld, %g)",
                   z, (long long)steps, h);
  double q = 1;
  if (sampling && (!strcmp(sampling, "poisson") || !strcmp(sampling, "wor"))) {
    if (m < 0 || n < 1 || m > n)
      return dpo_err(DPO_EINVAL, "pld: %s rate m/n needs 0 <= m <= n (m=%lld, n=%lld)",
                     sampling, (long long)m, (long long)n);
    q = (double)m / (double)n;
  } else if (!sampling || (strcmp(sampling, "none") && strcmp(sampling, "disjoint"))) {
    return dpo_err(DPO_EUNSUP, "pld: sampling '%s' not supported (none, poisson or wor)",
                   sampling ? sampling : "(null)");
  }
  c->h = h, c->q = q, c->z = z, c->steps = steps;
  c->tau = delta > 0 ? fmax(1e-15, DPO__PLD_TAU_REL * delta) : 1e-15;
  c->nall = q == 0 ? 0 : q < 1 ? 2 : 1; /* q = 0: nothing released */
  for (int d = 0; d < (first && c->nall ? 1 : c->nall); d++) {
    int st = dpo__pld_dir(c, d);
    if (st) {
      for (int e = 0; e < d; e++) free(c->dir[e].p);
      c->ndir = 0;
      return st;
    }
    c->ndir = d + 1;
  }
  dpo__pld_ncomp++;
  return DPO_OK;
}

static void dpo__pld_free(struct dpo__pld_comp *c) {
  for (int d = 0; d < c->ndir; d++) free(c->dir[d].p);
  free(c->sum[0]), free(c->sum[1]);
  c->sum[0] = c->sum[1] = NULL;
  c->ndir = 0;
}

static double dpo__comp_delta(const struct dpo__pld_comp *c, double eps) {
  double d = 0;
  for (int i = 0; i < c->ndir; i++)
    d = fmax(d, c->sum[i] ? dpo__pmf_delta_sums(&c->dir[i], c->sum[i], c->h, eps)
                          : dpo__pmf_delta(&c->dir[i], c->h, eps));
  return d;
}

/* smallest eps on a fine bisection with delta(eps) <= delta; INFINITY if none */
static double dpo__comp_eps(struct dpo__pld_comp *c, double delta) {
  for (int i = 0; i < c->ndir; i++) /* ~100 evaluations of delta below: O(1) each */
    if (!c->sum[i]) c->sum[i] = dpo__pmf_sums(&c->dir[i], c->h);
  if (c->ndir == 0 || dpo__comp_delta(c, 0) <= delta) return 0;
  double hi = 0;
  for (int i = 0; i < c->ndir; i++)
    hi = fmax(hi, (double)(c->dir[i].off + c->dir[i].len) * c->h);
  if (dpo__comp_delta(c, hi) > delta) return INFINITY; /* the +inf mass alone exceeds delta */
  double lo = 0;
  for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; it++) {
    double mid = 0.5 * (lo + hi);
    if (dpo__comp_delta(c, mid) <= delta) hi = mid;
    else lo = mid;
  }
  return hi;
}

/* eps at delta of c, built by its first direction (remove) only: the other (add) is composed
 * only when a bound on its delta at that eps, from one step on a grid k times coarser (k <= 64,
 * k h <= 3.2e-3)
 * (dpo__chernoff_delta: the connect-the-dots pair there dominates the true pair, as on h), is
 * above 0.9 delta; else the pair's eps is the first direction's (the max over both directions
 * is then that one, and the add direction's bound on h, below the coarse one, is below delta
 * at every eps >= it).  On the plans of dp-sgd's 1000-step epoch the add direction's losses
 * stay below ~0.5 but for 1e-15 of their mass: its composition was half the work. */
static int dpo__pld_second(struct dpo__pld_comp *c, double delta, double *eps) {
  *eps = dpo__comp_eps(c, delta);
  if (c->nall < 2 || !isfinite(*eps)) return DPO_OK;
  dpo__pmf_t one;
  const double hc = c->h * fmax(1, fmin(64, floor(3.2e-3 / c->h))); /* k h: nested grids */
  int st = dpo__pmf_step(c->q, c->z, 1, hc, &one);
  if (st) return st;
  dpo__truncate(&one);
  const double u = dpo__chernoff_delta(&one, hc, c->steps, *eps);
  free(one.p);
  if (u <= 0.9 * delta) return DPO_OK;
  if ((st = dpo__pld_dir(c, 1))) return st;
  c->ndir = 2;
  *eps = dpo__comp_eps(c, delta);
  return DPO_OK;
}

int dpo_pld_delta(const char *sampling, int64_t m, int64_t n, double z, int64_t steps,
                  double eps, double h, double *delta) {
  return dpo_pld_delta_k(sampling, m, n, z, steps, 1, &eps, h, delta);
}

/* delta at each of k eps on one composition (dpo__comp_delta, capped at 1) */
static void dpo__comp_delta_k(const struct dpo__pld_comp *c, int k, const double *eps,
                              double *delta) {
  for (int i = 0; i < k; i++) {
    double d = dpo__comp_delta(c, eps[i]);
    delta[i] = d < 1 ? d : 1.0;
  }
}

int dpo_pld_delta_k(const char *sampling, int64_t m, int64_t n, double z, int64_t steps, int k,
                    const double *eps, double h, double *delta) {
  struct dpo__pld_comp c;
  if (!delta || !eps || k < 1) return dpo_err(DPO_EINVAL, "pld_delta: no eps asked for");
  for (int i = 0; i < k; i++)
    if (!(eps[i] >= 0)) return dpo_err(DPO_EINVAL, "pld_delta: need eps >= 0");
  int st = dpo__pld_build(sampling, m, n, z, steps, h > 0 ? h : DPO_PLD_H, 0, 0, &c);
  if (st) return st;
  dpo__comp_delta_k(&c, k, eps, delta);
  dpo__pld_free(&c);
  return DPO_OK;
}

/* A process-wide memo of dpo_pld_eps, a pure function of its arguments (so a hit returns what
 * the computation would): a run's calibration, its ledger's plan look-ahead and an audit's
 * repeated runs ask for the same compositions.  dpopt's processes are single-threaded. */
#define DPO__PLD_MEMO 16
static struct {
  int used, poisson;
  int64_t m, n, steps;
  double z, delta, h, eps;
} dpo__pld_memo[DPO__PLD_MEMO];
static int dpo__pld_memo_next;

int dpo_pld_eps(const char *sampling, int64_t m, int64_t n, double z, int64_t steps,
                double delta, double h, double *eps) {
  struct dpo__pld_comp c;
  if (!eps || !(delta > 0 && delta < 1))
    return dpo_err(DPO_EINVAL, "pld_eps: delta=%g must be in (0, 1)", delta);
  if (!(h > 0)) h = DPO_PLD_H;
  /* wor's pair is poisson's at q = m/n (module top): one memo entry serves both */
  int poisson = sampling && (!strcmp(sampling, "poisson") || !strcmp(sampling, "wor"));
  for (int i = 0; i < DPO__PLD_MEMO; i++)
    if (dpo__pld_memo[i].used && dpo__pld_memo[i].poisson == poisson &&
        (!poisson || (dpo__pld_memo[i].m == m && dpo__pld_memo[i].n == n)) &&
        dpo__pld_memo[i].z == z && dpo__pld_memo[i].steps == steps &&
        dpo__pld_memo[i].delta == delta && dpo__pld_memo[i].h == h &&
        (poisson || !strcmp(sampling ? sampling : "", "none") ||
         !strcmp(sampling ? sampling : "", "disjoint"))) {
      *eps = dpo__pld_memo[i].eps;
      return DPO_OK;
    }
  int st = dpo__pld_build(sampling, m, n, z, steps, h, 1, delta, &c);
  if (!st) st = dpo__pld_second(&c, delta, eps);
  dpo__pld_free(&c);
  if (st) return st;
  int k = dpo__pld_memo_next;
  dpo__pld_memo_next = (k + 1) % DPO__PLD_MEMO;
  dpo__pld_memo[k].used = 1;
  dpo__pld_memo[k].poisson = poisson;
  dpo__pld_memo[k].m = m;
  dpo__pld_memo[k].n = n;
  dpo__pld_memo[k].steps = steps;
  dpo__pld_memo[k].z = z;
  dpo__pld_memo[k].delta = delta;
  dpo__pld_memo[k].h = h;
  dpo__pld_memo[k].eps = *eps;
  return DPO_OK;
}

/* The audit's wor pair (privacy.h): one step's losses L(o) = log P(o) / Q(o), increasing in
 * o, on cells of o narrow enough that L moves by at most h across one; each cell's P-mass goes
 * to the grid point at or above L at its right end (every loss rounded up: an upper bound). */
static double dpo__wor_loss(double o, double q, double z) {
  double a = (o - 0.25) / (2 * z * z), b = (-o - 0.25) / (2 * z * z), m = fmax(fmax(a, b), 0);
  /* log((1 - q) + q e^a) - log((1 - q) + q e^b), each by log-sum-exp */
  return log((1 - q) * exp(-m) + q * exp(a - m)) - log((1 - q) * exp(-m) + q * exp(b - m));
}

/* P(o <= x) for o ~ P = (1 - q) N(0, z^2) + q N(1/2, z^2) */
static double dpo__wor_cdf(double x, double q, double z) {
  return (1 - q) * dpo__Phi_(x / z) + q * dpo__Phi_((x - 0.5) / z);
}

static int dpo__wor_step(double q, double z, double h, dpo__pmf_t *r) {
  const double olo = -0.5 - DPO__PLD_CUT * z, ohi = 0.5 + DPO__PLD_CUT * z;
  const double lmax = dpo__wor_loss(ohi, q, z);
  const int64_t ilo = (int64_t)ceil(-lmax / h) - 1, ihi = (int64_t)ceil(lmax / h);
  const double w = h * z * z; /* 0 <= dL/do <= 1 / z^2 */
  const int64_t cells = (int64_t)ceil((ohi - olo) / w);
  if (cells > 50000000 || ihi - ilo > 50000000)
    return dpo_err(DPO_EINVAL, "pld: the wor pair needs %lld cells (raise h=%g)",
                   (long long)cells, h);
  r->off = ilo;
  r->len = ihi - ilo + 1;
  r->p = calloc((size_t)r->len, sizeof(double));
  if (!r->p) return dpo_err(DPO_ENOMEM, "pld: out of memory");
  double prev = dpo__wor_cdf(olo, q, z);
  r->p[0] += prev; /* losses below L(olo), rounded up to the first grid point */
  for (int64_t c = 1; c <= cells; c++) {
    double o = c == cells ? ohi : olo + (double)c * w;
    double cur = dpo__wor_cdf(o, q, z), l = dpo__wor_loss(o, q, z);
    int64_t i = (int64_t)ceil(l / h) - ilo;
    if (i < 0) i = 0;
    if (i >= r->len) i = r->len - 1;
    r->p[i] += cur - prev > 0 ? cur - prev : 0;
    prev = cur;
  }
  /* beyond ohi, plus each cell's rounding: a difference of two CDF values in [0, 1] */
  r->inf = (1 - prev) + (double)(cells + 1) * 4 * DBL_EPSILON;
  return DPO_OK;
}

int dpo_pld_wor_pair(double q, double z, int64_t steps, double eps, double delta, double h,
                     double *delta_at_eps, double *eps_at_delta) {
  eps = eps >= 0 ? eps : 0;
  return dpo_pld_wor_pair_k(q, z, steps, delta_at_eps ? 1 : 0, &eps, delta, h, delta_at_eps,
                            eps_at_delta);
}

int dpo_pld_wor_pair_k(double q, double z, int64_t steps, int k, const double *eps,
                       double delta, double h, double *delta_at_eps, double *eps_at_delta) {
  if (!(q > 0 && q <= 1) || !(z > 0) || !isfinite(z) || steps < 1)
    return dpo_err(DPO_EINVAL, "pld_wor_pair: need q in (0, 1], z > 0, steps >= 1");
  struct dpo__pld_comp c = {.ndir = 1, .h = h > 0 ? h : DPO_PLD_H};
  dpo__pmf_t one;
  int st = dpo__wor_step(q, z, c.h, &one);
  if (!st) st = dpo__pmf_pow_spec(&one, steps, c.h, 1e-15, &c.dir[0]);
  if (st) return st;
  dpo__pld_ncomp++;
  if (delta_at_eps && k > 0) dpo__comp_delta_k(&c, k, eps, delta_at_eps);
  if (eps_at_delta) *eps_at_delta = dpo__comp_eps(&c, delta);
  dpo__pld_free(&c);
  return DPO_OK;
}

int dpo__pld_eps_mix(int k, const dpo__pld_rel_t *r, double delta, double h, double *eps) {
  /* each kind's k-fold power, then their product per direction: the remove pairs compose with
   * the remove pairs, the add pairs with the add pairs; an unsampled kind's pair is symmetric
   * and serves both directions (the sampled pairs are the dominating pairs of module top) */
  struct dpo__pld_comp c[DPO__PLD_KINDS], tot;
  int st = DPO_OK, nb = 0;
  if (!eps || k < 1 || k > DPO__PLD_KINDS || !r || !(delta > 0 && delta < 1) || !(h > 0))
    return dpo_err(DPO_EINVAL, "pld_eps_mix: %d kinds (1..%d), delta %g", k, DPO__PLD_KINDS,
                   delta);
  if (k == 1) /* one kind: dpo_pld_eps (and its memo) */
    return dpo_pld_eps(r->poisson ? "poisson" : "none", r->m, r->n, r->z, r->count, delta, h,
                       eps);
  memset(&tot, 0, sizeof tot);
  tot.h = h;
  for (; nb < k && !st; nb++)
    st = dpo__pld_build(r[nb].poisson ? "poisson" : "none", r[nb].m, r[nb].n, r[nb].z,
                        r[nb].count, h, 0, delta / k, &c[nb]);
  if (st) goto out;
  for (int i = 0; i < k; i++)
    if (c[i].ndir > tot.ndir) tot.ndir = c[i].ndir;
  for (int d = 0; d < tot.ndir && !st; d++) {
    dpo__pmf_t acc = {0, 0, NULL, 0}, t;
    for (int i = 0; i < k && !st; i++) {
      if (c[i].ndir == 0) continue; /* q = 0: nothing released */
      const dpo__pmf_t *f = &c[i].dir[d < c[i].ndir ? d : 0];
      if (!acc.p) {
        acc = *f;
        if (!(acc.p = malloc(sizeof(double) * (size_t)f->len))) {
          st = dpo_err(DPO_ENOMEM, "pld: out of memory");
          break;
        }
        memcpy(acc.p, f->p, sizeof(double) * (size_t)f->len);
      } else if (!(st = dpo__conv(&acc, f, &t))) {
        free(acc.p);
        acc = t;
      }
    }
    if (st) {
      free(acc.p);
      tot.ndir = d;
      break;
    }
    tot.dir[d] = acc;
  }
  if (!st) *eps = dpo__comp_eps(&tot, delta);
out:
  dpo__pld_free(&tot);
  for (int i = 0; i < nb; i++) dpo__pld_free(&c[i]);
  return st;
}

double dpo_pld_auto_h(double eps, int64_t steps) {
  /* steps * h <= eps / 10 (the bound of rounding every loss up; connecting the dots is far
   * tighter there: at the recipe's plans eps moves by < 5e-5 relative from h to h / 4);
   * above eps = 1 the cap grows with eps (the same relative resolution: at eps 10 the losses
   * of a small multiplier span ~10x more, and a 5e-5 grid would cost ~10 s of FFTs a run) */
  double h = steps > 0 && eps > 0 ? eps / (10.0 * (double)steps) : DPO_PLD_H;
  return fmax(1e-6, fmin(DPO_PLD_H * (eps > 1 ? eps : 1.0), h));
}
