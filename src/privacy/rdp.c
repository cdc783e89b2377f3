/* Renyi DP of the Gaussian mechanism (plain, Poisson-subsampled, m-of-n without replacement),
 * per-order composition, conversion to (eps, delta), the exact Gaussian privacy profile and
 * the analytic Gaussian calibration, noise calibration for a target, amplification by
 * iteration (003 Thm 3.1) and the DP-ADMM rule (004 Thm 1, eq. (8)); the "rdp" accountant
 * of the ledger is acct_rdp.c.
 *
 * Rounding: RDP values are sums of lgamma/exp/log terms in log space.  Their floating-point
 * error is far below DPO__RDP_MARGIN (relative 1e-9 plus absolute 1e-12), which every
 * returned loss is widened by, so results are upper bounds.
 */
#include "privacy_int.h"

#include "dpopt/status.h"

#include <math.h>
#include <string.h>

#define DPO__RDP_REL 1e-9
#define DPO__RDP_ABS 1e-12

static double dpo__rdp_up(double r) {
  if (isinf(r)) return r;
  return r + fabs(r) * DPO__RDP_REL + DPO__RDP_ABS;
}

/* ------------------------------------------------------------ grid of orders */

static const double dpo__orders[] = {
    1.25, 1.5, 1.75, 2,   2.25, 2.5, 2.75, 3,   3.25, 3.5, 3.75, 4,  4.5, 5,  5.5, 6,
    6.5,  7,   7.5,  8,   9,    10,  10.5, 11,  12,   13,  14,   16, 18,  20, 24,  28,
    32,   40,  48,   56,  64,   80,  96,   112, 128,  160, 192,  224, 256};

int dpo_rdp_default_orders(const double **alphas) {
  if (alphas) *alphas = dpo__orders;
  return (int)(sizeof dpo__orders / sizeof dpo__orders[0]);
}

void dpo_rdp_curve_init(dpo_rdp_curve_t *c) {
  const double *a;
  int n = dpo_rdp_default_orders(&a);
  memset(c, 0, sizeof *c);
  c->n = n;
  for (int i = 0; i < n; i++) c->alpha[i] = a[i];
}

/* ------------------------------------------------------------ single-order RDP */

static double dpo__logPhi(double x);

static int dpo__check_alpha(double alpha) {
  if (!(alpha > 1) || !isfinite(alpha))
    return dpo_err(DPO_EINVAL, "rdp: order alpha=%g must be finite and > 1", alpha);
  return DPO_OK;
}
static int dpo__check_z(double z) {
  if (!(z > 0) || !isfinite(z))
    return dpo_err(DPO_EINVAL, "rdp: noise multiplier z=%g must be finite and > 0", z);
  return DPO_OK;
}

int dpo_rdp_gaussian(double z, double alpha, double *rdp) {
  int st;
  if ((st = dpo__check_alpha(alpha)) || (st = dpo__check_z(z))) return st;
  /* alpha / (2 z^2) (Mironov 2017, Prop. 7), directed rounding: exact but for 3 roundings */
  *rdp = dpo__div_up(alpha, dpo__mul_down(2.0 * z, z));
  return DPO_OK;
}

static double dpo__lse(double a, double b) { /* log(e^a + e^b) */
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = fmax(a, b);
  return m + log1p(exp(-fabs(a - b)));
}

static double dpo__lbinom(int64_t a, int64_t k) {
  return lgamma((double)a + 1) - lgamma((double)k + 1) - lgamma((double)(a - k) + 1);
}

/* log A_a for an integer a >= 2, Poisson rate q in (0, 1) (Mironov-Talwar-Zhang 2019, Sec. 3.3):
 *   A_a = sum_k C(a,k) (1-q)^(a-k) q^k exp((k^2 - k) / (2 z^2))
 * = E_{N(0,z^2)}[(mix / N(0,z^2))^a] with mix = (1-q) N(0,z^2) + q N(1,z^2). */
static double dpo__poisson_logA(int64_t a, double q, double z) {
  double lq = log(q), l1q = log1p(-q), acc = -INFINITY;
  for (int64_t k = 0; k <= a; k++) {
    double t = dpo__lbinom(a, k) + (double)(a - k) * l1q + (double)k * lq +
               ((double)k * (double)k - (double)k) / (2.0 * z * z);
    acc = dpo__lse(acc, t);
  }
  return acc > 0 ? acc : 0.0; /* A_a >= 1 (Jensen): clamp rounding below 0 */
}

/* log of the Wang-Balle-Kasiviswanathan (2019, Thm 9) bound at integer a >= 2 for sampling
 * ratio g = m/n and the Gaussian's eps(j) = j / (2 z^2) (eps(inf) = inf, so min{2, .} = 2):
 *   1 + g^2 C(a,2) min{4 (e^eps(2) - 1), 2 e^eps(2)} + sum_{j=3}^a 2 g^j C(a,j) e^((j-1) eps(j)) */
static double dpo__wor_logA(int64_t a, double g, double z) {
  double e2 = 2.0 / (2.0 * z * z);
  double t2 = fmin(log(4.0) + log(expm1(e2)), log(2.0) + e2);
  double lg = log(g);
  double acc = dpo__lse(0.0, 2.0 * lg + dpo__lbinom(a, 2) + t2);
  for (int64_t j = 3; j <= a; j++) {
    double ej = (double)j / (2.0 * z * z);
    acc = dpo__lse(acc, log(2.0) + (double)j * lg + dpo__lbinom(a, j) + (double)(j - 1) * ej);
  }
  return acc;
}

/* Fractional orders: (alpha - 1) D_alpha = log E[(P/Q)^alpha] is convex in alpha (a cumulant
 * generating function), and equals 0 at alpha = 1, so on [a0, a1] with integer a0 < alpha < a1
 * it lies below the chord through (a0, logA(a0)) and (a1, logA(a1)); bounds on logA at the
 * integers give a bound in between. */
static double dpo__interp(double alpha, double (*logA)(int64_t, double, double), double p,
                          double z) {
  double fl = floor(alpha);
  if (fl == alpha) return logA((int64_t)alpha, p, z) / (alpha - 1);
  int64_t a0 = (int64_t)fl, a1 = a0 + 1;
  double l0 = a0 >= 2 ? logA(a0, p, z) : 0.0, l1 = logA(a1, p, z);
  double th = alpha - fl;
  return ((1 - th) * l0 + th * l1) / (alpha - 1);
}

/* log A_alpha for a fractional alpha > 1 (Mironov-Talwar-Zhang 2019, Sec. 3.3, the two-sided
 * series; the same math as TF Privacy's _compute_log_a_frac).  With r(x) = mu1/mu0 (x) =
 * exp((2x - 1) / (2 z^2)), split the line at z0 where q r = 1 - q, z0 = z^2 log(1/q - 1) + 1/2:
 *   x <= z0:  (1 - q + q r)^alpha = sum_i C(alpha,i) (1-q)^(alpha-i) q^i r^i        (q r <= 1-q)
 *   x >= z0:  (q r + 1 - q)^alpha = sum_i C(alpha,i) q^(alpha-i) (1-q)^i r^(alpha-i)
 * both binomial series converge (ratio <= 1) and, with E_mu0[r^t 1{x <= z0}] =
 * exp((t^2 - t)/(2 z^2)) Phi((z0 - t)/z) and E_mu0[r^t 1{x >= z0}] = exp((t^2 - t)/(2 z^2))
 * Phi((t - z0)/z), termwise integration gives A_alpha as two sums of signed terms.  For i > alpha
 * the signs of C(alpha, i) alternate and the terms decrease, so the truncation error is at most
 * the magnitude of the last term, which is added (the loop stops once terms are e^-40 of the
 * sum).  Returns NAN if the series did not settle (the caller keeps the chord). */
static double dpo__poisson_logA_frac(double alpha, double q, double z) {
  double lq = log(q), l1q = log1p(-q), z2 = z * z;
  double z0 = z2 * (log(1 / q - 1)) + 0.5;
  double pos = -INFINITY, neg = -INFINITY, last = -INFINITY;
  double lga = lgamma(alpha + 1);
  for (int64_t i = 0; i < 2000000; i++) {
    double di = (double)i, j = alpha - di;
    int sg;
    double lgj = lgamma_r(j + 1, &sg); /* C(alpha,i) = G(alpha+1) / (G(i+1) G(alpha-i+1)) */
    double lc = lga - lgamma(di + 1) - lgj;
    double s0 = lc + di * lq + j * l1q + (di * di - di) / (2 * z2) + dpo__logPhi((z0 - di) / z);
    double s1 = lc + j * lq + di * l1q + (j * j - j) / (2 * z2) + dpo__logPhi((j - z0) / z);
    double t = dpo__lse(s0, s1);
    if (sg > 0) pos = dpo__lse(pos, t);
    else neg = dpo__lse(neg, t);
    last = t;
    if (di > alpha + 1 && t < pos - 40) break;
  }
  if (!(last < pos - 40)) return NAN;
  /* log(e^pos - e^neg + e^last) */
  double d = neg > -INFINITY ? neg - pos : -INFINITY;
  if (!(d < 0)) return NAN;
  double la = pos + log1p(-exp(d));
  la = dpo__lse(la, last);
  return la > 0 ? la : 0.0;
}

int dpo_rdp_poisson_gaussian(double q, double z, double alpha, double *rdp) {
  int st;
  if ((st = dpo__check_alpha(alpha)) || (st = dpo__check_z(z))) return st;
  if (!(q >= 0 && q <= 1)) return dpo_err(DPO_EINVAL, "rdp: sampling rate q=%g not in [0, 1]", q);
  if (q == 0) {
    *rdp = 0;
    return DPO_OK;
  }
  if (q == 1) return dpo_rdp_gaussian(z, alpha, rdp);
  double r = dpo__interp(alpha, dpo__poisson_logA, q, z);
  if (floor(alpha) != alpha) { /* the exact value, when the series settles, is below the chord */
    double lf = dpo__poisson_logA_frac(alpha, q, z);
    if (isfinite(lf) && lf / (alpha - 1) < r) r = lf / (alpha - 1);
  }
  double g;
  dpo_rdp_gaussian(z, alpha, &g);
  r = dpo__rdp_up(r);
  *rdp = r < g ? r : g; /* sampling never hurts: post-processing of the full-data release */
  return DPO_OK;
}

int dpo_rdp_wor_gaussian(int64_t m, int64_t n, double z, double alpha, double *rdp) {
  int st;
  if ((st = dpo__check_alpha(alpha)) || (st = dpo__check_z(z))) return st;
  if (m < 1 || n < 1 || m > n)
    return dpo_err(DPO_EINVAL, "rdp: need 1 <= m <= n (m=%lld, n=%lld)", (long long)m,
                   (long long)n);
  double g;
  dpo_rdp_gaussian(z, alpha, &g);
  if (m == n || alpha < 2) {
    /* WBK's bound starts at alpha = 2; below, the unsampled value is the valid bound */
    *rdp = g;
    return DPO_OK;
  }
  double r = dpo__rdp_up(dpo__interp(alpha, dpo__wor_logA, (double)m / (double)n, z));
  *rdp = r < g ? r : g;
  return DPO_OK;
}

/* one release of the Gaussian with multiplier z under `sampling` at order alpha */
static int dpo__rdp_one(dpo_sampling_t sampling, int64_t m, int64_t n, double z, double alpha,
                        double *r) {
  switch (sampling) {
  case DPO_SAMPLING_NONE:
  case DPO_SAMPLING_DISJOINT:
    return dpo_rdp_gaussian(z, alpha, r);
  case DPO_SAMPLING_POISSON:
    if (m < 0 || n < 1 || m > n)
      return dpo_err(DPO_EINVAL, "rdp: poisson rate m/n needs 0 <= m <= n, n >= 1 (m=%lld, n=%lld)",
                     (long long)m, (long long)n);
    return dpo_rdp_poisson_gaussian((double)m / (double)n, z, alpha, r);
  case DPO_SAMPLING_WOR:
    return dpo_rdp_wor_gaussian(m, n, z, alpha, r);
  default:
    return dpo_err(DPO_EINVAL, "rdp: unknown sampling '%s' (none, poisson, wor, disjoint)",
                   dpo_sampling_name(sampling));
  }
}

int dpo__rdp_curve_add_s(dpo_rdp_curve_t *c, dpo_sampling_t sampling, int64_t m, int64_t n,
                         double z, int64_t steps) {
  if (!c || steps < 0) return dpo_err(DPO_EINVAL, "rdp_curve_add: NULL curve or steps < 0");
  double add[DPO_RDP_MAX_ORDERS];
  for (int i = 0; i < c->n; i++) {
    int st = dpo__rdp_one(sampling, m, n, z, c->alpha[i], &add[i]);
    if (st) return st;
  }
  for (int i = 0; i < c->n; i++)
    c->rdp[i] = dpo__add_up(c->rdp[i], dpo__mul_up((double)steps, add[i]));
  return DPO_OK;
}

int dpo_rdp_curve_add(dpo_rdp_curve_t *c, const char *sampling, int64_t m, int64_t n, double z,
                      int64_t steps) {
  dpo_sampling_t s;
  if (dpo_sampling_parse(sampling, &s))
    return dpo_err(DPO_EINVAL, "rdp: unknown sampling '%s' (none, poisson, wor, disjoint)",
                   sampling ? sampling : "(null)");
  return dpo__rdp_curve_add_s(c, s, m, n, z, steps);
}

int dpo_rdp_curve_add_rho(dpo_rdp_curve_t *c, double rho) {
  if (!c || !(rho >= 0) || !isfinite(rho))
    return dpo_err(DPO_EINVAL, "rdp_curve_add_rho: rho=%g must be finite and >= 0", rho);
  for (int i = 0; i < c->n; i++)
    c->rdp[i] = dpo__add_up(c->rdp[i], dpo__mul_up(c->alpha[i], dpo__mul_up(rho, rho) / 2));
  return DPO_OK;
}

/* ------------------------------------------------------------ conversion */

static int dpo__check_delta(double delta) {
  if (!(delta > 0 && delta < 1))
    return dpo_err(DPO_EINVAL, "rdp: delta=%g must be in (0, 1)", delta);
  return DPO_OK;
}

int dpo_rdp_eps_classic(double alpha, double rdp, double delta, double *eps) {
  int st;
  if ((st = dpo__check_alpha(alpha)) || (st = dpo__check_delta(delta))) return st;
  if (!(rdp >= 0)) return dpo_err(DPO_EINVAL, "rdp: value %g must be >= 0", rdp);
  /* Mironov 2017, Prop. 3 */
  *eps = dpo__rdp_up(rdp + log(1 / delta) / (alpha - 1));
  return DPO_OK;
}

int dpo_rdp_eps_balle(double alpha, double rdp, double delta, double *eps) {
  int st;
  if ((st = dpo__check_alpha(alpha)) || (st = dpo__check_delta(delta))) return st;
  if (!(rdp >= 0)) return dpo_err(DPO_EINVAL, "rdp: value %g must be >= 0", rdp);
  /* Balle, Barthe, Gaboardi, Hsu, Sato 2020, Thm 21 */
  double e = rdp + log1p(-1 / alpha) - (log(delta) + log(alpha)) / (alpha - 1);
  *eps = dpo__rdp_up(e);
  return DPO_OK;
}

int dpo_rdp_eps(const dpo_rdp_curve_t *c, double delta, double *eps, double *alpha_opt) {
  int st;
  if (!c || !eps) return dpo_err(DPO_EINVAL, "rdp_eps: NULL argument");
  if ((st = dpo__check_delta(delta))) return st;
  int any = 0;
  for (int i = 0; i < c->n; i++) any |= c->rdp[i] > 0;
  if (!any) { /* nothing released */
    *eps = 0;
    if (alpha_opt) *alpha_opt = NAN;
    return DPO_OK;
  }
  double best = INFINITY, ba = NAN;
  for (int i = 0; i < c->n; i++) {
    double e1, e2;
    if ((st = dpo_rdp_eps_classic(c->alpha[i], c->rdp[i], delta, &e1)) ||
        (st = dpo_rdp_eps_balle(c->alpha[i], c->rdp[i], delta, &e2)))
      return st;
    double e = fmin(e1, e2);
    if (e < best) {
      best = e;
      ba = c->alpha[i];
    }
  }
  *eps = best > 0 ? best : 0.0;
  if (alpha_opt) *alpha_opt = ba;
  return DPO_OK;
}

/* ------------------------------------------------------------ exact single Gaussian */

static double dpo__Phi(double x) { return 0.5 * erfc(-x / M_SQRT2); }

/* log Phi(x), accurate in the far left tail too */
static double dpo__logPhi(double x) {
  if (x > -30) return log(dpo__Phi(x));
  /* Mills ratio asymptotics: Phi(x) ~ phi(x)/|x| (1 - 1/x^2 + 3/x^4) */
  double x2 = x * x;
  return -x2 / 2 - log(-x) - 0.5 * log(2 * M_PI) + log1p(-1 / x2 + 3 / (x2 * x2));
}

int dpo_gauss_exact_delta(double z, double eps, double *delta) {
  int st;
  if ((st = dpo__check_z(z))) return st;
  if (!(eps >= 0) || !isfinite(eps)) return dpo_err(DPO_EINVAL, "gauss: eps=%g must be >= 0", eps);
  /* Balle-Wang 2018, Thm 8 with mu = Delta/sigma = 1/z */
  double a = 1 / (2 * z), b = eps * z;
  double t1 = dpo__Phi(a - b), t2 = exp(eps + dpo__logPhi(-a - b));
  double d = t1 - t2;
  *delta = d > 0 ? d : 0.0;
  return DPO_OK;
}

int dpo_gauss_exact_eps(double z, double delta, double *eps) {
  int st;
  if ((st = dpo__check_z(z)) || (st = dpo__check_delta(delta))) return st;
  double d0;
  dpo_gauss_exact_delta(z, 0, &d0);
  if (d0 <= delta) {
    *eps = 0;
    return DPO_OK;
  }
  double lo = 0, hi = 1, d;
  for (;;) { /* delta(eps) decreases in eps */
    dpo_gauss_exact_delta(z, hi, &d);
    if (d <= delta) break;
    lo = hi;
    hi *= 2;
    if (hi > 1e6) return dpo_err(DPO_EINVAL, "gauss_exact_eps: no eps for z=%g delta=%g", z, delta);
  }
  for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
    double mid = 0.5 * (lo + hi);
    dpo_gauss_exact_delta(z, mid, &d);
    if (d <= delta) hi = mid;
    else lo = mid;
  }
  *eps = hi;
  return DPO_OK;
}

int dpo_gauss_analytic_sigma(double sens, double eps, double delta, double *sigma) {
  int st;
  if ((st = dpo__check_delta(delta))) return st;
  if (!(sens > 0) || !isfinite(sens) || !(eps > 0) || !isfinite(eps))
    return dpo_err(DPO_EINVAL, "analytic gaussian: need sens > 0 and eps > 0 (got %g, %g)", sens,
                   eps);
  /* Balle-Wang 2018: the smallest sigma whose exact profile delta(eps) (Thm 8) is <= delta.
   * delta(eps) decreases as z = sigma/sens grows; bisect on z, keep the side that satisfies a
   * slightly tightened target (covers the profile's rounding error) and return it. */
  double target = delta * (1 - 1e-9), lo = 1e-3, hi = 1, d;
  for (;;) {
    dpo_gauss_exact_delta(hi, eps, &d);
    if (d <= target) break;
    lo = hi;
    hi *= 2;
    if (hi > 1e12) return dpo_err(DPO_EINVAL, "analytic gaussian: no sigma found");
  }
  for (int it = 0; it < 300 && hi - lo > 1e-10 * hi; it++) {
    double mid = 0.5 * (lo + hi);
    dpo_gauss_exact_delta(mid, eps, &d);
    if (d <= target) hi = mid;
    else lo = mid;
  }
  *sigma = dpo__mul_up(hi, sens);
  return DPO_OK;
}

/* ------------------------------------------------------------ calibration */

static int dpo__rdp_calibrate(const char *sampling, int64_t m, int64_t n, int64_t steps,
                              double eps, double delta, double *z);

/* A calibration is a function of its public arguments only; a process that calibrates the
 * same plan again (dpopt audit's thousands of trials, tune's repetitions) reuses the answer:
 * a Poisson plan's bisection costs about a second of lgamma/log1p. */
typedef struct {
  char sampling[16];
  int64_t m, n, steps;
  double eps, delta, z;
} dpo__zmemo_t;
static dpo__zmemo_t dpo__zmemo[8];
static int dpo__zmemo_n;

int dpo_rdp_calibrate(const char *sampling, int64_t m, int64_t n, int64_t steps, double eps,
                      double delta, double *z) {
  dpo__zmemo_t k;
  memset(&k, 0, sizeof k);
  if (sampling && strlen(sampling) < sizeof k.sampling) strcpy(k.sampling, sampling);
  k.m = m, k.n = n, k.steps = steps, k.eps = eps, k.delta = delta;
  const int memo = z && sampling && k.sampling[0];
  for (int i = 0; memo && i < dpo__zmemo_n; i++) {
    k.z = dpo__zmemo[i].z;
    if (!memcmp(&dpo__zmemo[i], &k, sizeof k)) {
      *z = k.z;
      return DPO_OK;
    }
  }
  int st = dpo__rdp_calibrate(sampling, m, n, steps, eps, delta, z);
  if (st || !memo) return st;
  k.z = *z;
  dpo__zmemo[dpo__zmemo_n < 8 ? dpo__zmemo_n++ : 7] = k;
  return DPO_OK;
}

/* Keep in c the orders whose own eps is within the target; *fits: any was.  The eps of one
 * order falls as z grows (more noise is a post-processing of less), so an order that misses
 * the target at z misses it at every smaller z: the bisection below, whose probes lie under
 * its upper end, evaluates only the orders that met the target there (1-3 of the 45 near the
 * answer).  Rounding could only drop an order that would have fit: the answer is never
 * smaller than the all-orders bisection's, and its eps <= target is evaluated either way. */
static int dpo__rdp_keep_fits(dpo_rdp_curve_t *c, double delta, double eps, int *fits) {
  int k = 0, st, any = 0;
  for (int i = 0; i < c->n; i++) any |= c->rdp[i] > 0;
  if (!any) return *fits = 1, DPO_OK; /* nothing released (q = 0): eps 0, as dpo_rdp_eps */
  for (int i = 0; i < c->n; i++) {
    double e1, e2;
    if ((st = dpo_rdp_eps_classic(c->alpha[i], c->rdp[i], delta, &e1)) ||
        (st = dpo_rdp_eps_balle(c->alpha[i], c->rdp[i], delta, &e2)))
      return st;
    if (fmin(e1, e2) <= eps) c->alpha[k++] = c->alpha[i];
  }
  *fits = k > 0;
  if (k) c->n = k;
  return DPO_OK;
}

/* c's orders (the default grid, or those kept), no release yet, then T releases at z */
static int dpo__rdp_probe(dpo_rdp_curve_t *c, const char *sampling, int64_t m, int64_t n,
                          double z, int64_t steps, double delta, double eps, int *fits) {
  memset(c->rdp, 0, sizeof c->rdp);
  int st = dpo_rdp_curve_add(c, sampling, m, n, z, steps);
  return st ? st : dpo__rdp_keep_fits(c, delta, eps, fits);
}

static int dpo__rdp_calibrate(const char *sampling, int64_t m, int64_t n, int64_t steps,
                              double eps, double delta, double *z) {
  int st, fits;
  if (!z) return dpo_err(DPO_EINVAL, "rdp_calibrate: NULL output");
  if ((st = dpo__check_delta(delta))) return st;
  if (!(eps > 0) || !isfinite(eps) || steps < 1)
    return dpo_err(DPO_EINVAL, "rdp_calibrate: need eps > 0 and steps >= 1 (got %g, %lld)", eps,
                   (long long)steps);
  dpo_rdp_curve_t c, t;
  double lo = 1e-3, hi = 1;
  /* eps(z) decreases in z: find hi with eps(hi) <= target, then bisect */
  for (;;) {
    dpo_rdp_curve_init(&c);
    if ((st = dpo__rdp_probe(&c, sampling, m, n, hi, steps, delta, eps, &fits))) return st;
    if (fits) break;
    lo = hi;
    hi *= 2;
    if (hi > 1e9) return dpo_err(DPO_EINVAL, "rdp_calibrate: target eps=%g unreachable", eps);
  }
  while (hi - lo > 1e-7 * hi) { /* c: the orders that meet the target at hi */
    double mid = 0.5 * (lo + hi);
    t = c;
    if ((st = dpo__rdp_probe(&t, sampling, m, n, mid, steps, delta, eps, &fits))) return st;
    if (fits) hi = mid, c = t;
    else lo = mid;
  }
  *z = hi; /* eps(hi) <= target was verified for this exact double */
  return DPO_OK;
}

/* ------------------------------------------------------------ 003 Thm 3.1, 004 Thm 1 */

int dpo_abi_rho(double L, int64_t T, const int64_t *B, const double *eta, const double *sigma,
                double *rho) {
  if (!B || !eta || !sigma || !rho || T < 1 || !(L >= 0) || !isfinite(L))
    return dpo_err(DPO_EINVAL, "abi_rho: need L >= 0, T >= 1 and the schedules");
  double suffix = 0, best = 0; /* suffix = sum_{s >= t} eta_s^2 sigma_s^2, rounded down */
  for (int64_t t = T - 1; t >= 0; t--) {
    if (B[t] < 1 || !(eta[t] > 0) || !(sigma[t] > 0) || !isfinite(eta[t]) || !isfinite(sigma[t]))
      return dpo_err(DPO_EINVAL, "abi_rho: step %lld needs B >= 1, eta > 0, sigma > 0",
                     (long long)t);
    double es = dpo__mul_down(eta[t], sigma[t]);
    suffix = dpo__add_down(suffix, dpo__mul_down(es, es));
    double den = dpo__mul_down((double)B[t], dpo__widen_down(sqrt(suffix)));
    double r = dpo__div_up(eta[t], den);
    if (r > best) best = r;
  }
  /* 003 Thm 3.1 compares data sets that differ in the row at one position: replace-one */
  *rho = dpo__mul_up(dpo_sens(DPO_NEIGHBOURS_REPLACE_ONE, L), best);
  return DPO_OK;
}

int dpo_admm_thm1_sigma(double c, int64_t n, int64_t T, double eps, double delta, double mu,
                        double *sigma, double *alpha) {
  int st;
  if ((st = dpo__check_delta(delta))) return st;
  if (!(c > 0) || n < 1 || T < 1 || !(eps > 0) || !(mu > 0 && mu < 1) || !sigma)
    return dpo_err(DPO_EINVAL, "admm_thm1_sigma: need c > 0, n >= 1, T >= 1, eps > 0, mu in (0,1)");
  /* (004, eq. (13)): alpha = log(1/delta) / ((1 - mu) eps) + 1 */
  double a = log(1 / delta) / ((1 - mu) * eps) + 1;
  /* (004, eq. (8)): sigma^2 = c^2 alpha T / (2 n^2 eps mu) */
  double s2 = c * c * a * (double)T / (2.0 * (double)n * (double)n * eps * mu);
  *sigma = dpo__rdp_up(sqrt(s2));
  if (alpha) *alpha = a;
  return DPO_OK;
}
