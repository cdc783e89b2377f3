/* Statistics of the empirical privacy audit (dpopt/audit.h): Clopper-Pearson bounds through
 * the regularized incomplete beta, and the choice of a threshold event. */
#include "dpopt/audit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/status.h"

/* Continued fraction of I_x(a, b) (modified Lentz; converges fast for x < (a+1)/(a+b+2)). */
static double dpo__betacf(double a, double b, double x) {
  const double tiny = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
  if (fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; m++) {
    int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-15) break;
  }
  return h;
}

double dpo_audit_betainc(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) return NAN;
  if (x == 0) return 0;
  if (x == 1) return 1;
  double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
  double bt = exp(lbt);
  if (x < (a + 1) / (a + b + 2)) return bt * dpo__betacf(a, b, x) / a;
  return 1 - bt * dpo__betacf(b, a, 1 - x) / b;
}

double dpo_audit_beta_ppf(double p, double a, double b) {
  if (!(p >= 0) || !(p <= 1) || !(a > 0) || !(b > 0)) return NAN;
  double lo = 0, hi = 1;
  /* the CDF is increasing in x: 200 halvings reach the double resolution */
  for (int i = 0; i < 200 && hi - lo > 1e-15 * (hi > 1e-3 ? 1 : hi); i++) {
    double mid = 0.5 * (lo + hi);
    if (dpo_audit_betainc(a, b, mid) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

double dpo_audit_cp_lower(int64_t k, int64_t n, double a) {
  if (k <= 0 || n <= 0) return 0;
  if (k > n) k = n;
  return dpo_audit_beta_ppf(a, (double)k, (double)(n - k + 1));
}

double dpo_audit_cp_upper(int64_t k, int64_t n, double a) {
  if (n <= 0 || k >= n) return 1;
  if (k < 0) k = 0;
  return dpo_audit_beta_ppf(1 - a, (double)(k + 1), (double)(n - k));
}

double dpo_audit_eps_lb(int64_t k0, int64_t n0, int64_t k1, int64_t n1, double delta,
                        double alpha) {
  double p0 = dpo_audit_cp_lower(k0, n0, alpha / 2) - delta;
  double p1 = dpo_audit_cp_upper(k1, n1, alpha / 2);
  if (!(p0 > 0) || !(p1 > 0)) return -INFINITY;
  return log(p0 / p1);
}

static int dpo__cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* #{x[i] <= thr} in a sorted array */
static int64_t dpo__count_le(const double *x, int64_t n, double thr) {
  int64_t l = 0, h = n;
  while (l < h) {
    int64_t m = l + (h - l) / 2;
    if (x[m] <= thr) l = m + 1;
    else h = m;
  }
  return l;
}

int dpo_audit_best_event(const double *t0, int64_t n0, const double *t1, int64_t n1, double delta,
                         double alpha, dpo_audit_event_t *ev) {
  if (!ev || n0 <= 0 || n1 <= 0 || !t0 || !t1)
    return dpo_err(DPO_EINVAL, "audit: empty sample");
  double *a = malloc((size_t)n0 * sizeof *a), *b = malloc((size_t)n1 * sizeof *b);
  if (!a || !b) {
    free(a);
    free(b);
    return dpo_err(DPO_ENOMEM, "out of memory");
  }
  for (int64_t i = 0; i < n0; i++) a[i] = t0[i];
  for (int64_t i = 0; i < n1; i++) b[i] = t1[i];
  qsort(a, (size_t)n0, sizeof *a, dpo__cmp);
  qsort(b, (size_t)n1, sizeof *b, dpo__cmp);
  ev->thr = a[0];
  ev->above = 1;
  ev->swap = 0;
  ev->eps_lb = -INFINITY;
  /* candidate thresholds: up to 256 quantiles of the pooled sample (a finer grid only
   * overfits the selection half); at threshold thr, c0 = #{a <= thr}, c1 = #{b <= thr} */
  double best = -INFINITY;
  int64_t ncand = n0 + n1 < 256 ? n0 + n1 : 256;
  /* Scored by the bound at a Bonferroni level over the candidates: the maximum of many plain
   * bounds favours thin tails whose counts are mostly noise (the winner's curse), and then
   * the evaluation half gives far less. */
  double alpha_sel = alpha / (4.0 * (double)ncand);
  double *pool = malloc((size_t)(n0 + n1) * sizeof *pool);
  if (!pool) {
    free(a);
    free(b);
    return dpo_err(DPO_ENOMEM, "out of memory");
  }
  memcpy(pool, a, (size_t)n0 * sizeof *pool);
  memcpy(pool + n0, b, (size_t)n1 * sizeof *pool);
  qsort(pool, (size_t)(n0 + n1), sizeof *pool, dpo__cmp);
  for (int64_t c = 0; c < ncand; c++) {
    double thr = pool[(c * (n0 + n1)) / ncand];
    int64_t below[2] = {dpo__count_le(a, n0, thr), dpo__count_le(b, n1, thr)}, nn[2] = {n0, n1};
    for (int above = 0; above < 2; above++)
      for (int swap = 0; swap < 2; swap++) {
        int p = swap, q = 1 - swap;
        int64_t kp = above ? nn[p] - below[p] : below[p];
        int64_t kq = above ? nn[q] - below[q] : below[q];
        /* a cheap filter first: the point estimate must beat the best bound so far */
        if (kp == 0 || (kq > 0 && log(((double)kp / nn[p]) / ((double)kq / nn[q])) <= best))
          continue;
        double v = dpo_audit_eps_lb(kp, nn[p], kq, nn[q], delta, alpha_sel);
        if (v > best) {
          best = v;
          ev->thr = thr;
          ev->above = above;
          ev->swap = swap;
        }
      }
  }
  free(pool);
  free(a);
  free(b);
  ev->eps_lb = dpo_audit_event_lb(ev, t0, n0, t1, n1, delta, alpha);
  return DPO_OK;
}

int64_t dpo_audit_count(const dpo_audit_event_t *ev, const double *t, int64_t n) {
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) k += ev->above ? t[i] > ev->thr : t[i] <= ev->thr;
  return k;
}

double dpo_audit_event_lb(const dpo_audit_event_t *ev, const double *t0, int64_t n0,
                          const double *t1, int64_t n1, double delta, double alpha) {
  int64_t k0 = dpo_audit_count(ev, t0, n0), k1 = dpo_audit_count(ev, t1, n1);
  return ev->swap ? dpo_audit_eps_lb(k1, n1, k0, n0, delta, alpha)
                  : dpo_audit_eps_lb(k0, n0, k1, n1, delta, alpha);
}

/* ---- Gaussian differential privacy (Dong, Roth & Su 2019) ---- */

double dpo_audit_phi(double x) { return 0.5 * erfc(-x / M_SQRT2); }

double dpo_audit_phi_inv(double p) {
  if (!(p > 0)) return -INFINITY;
  if (!(p < 1)) return INFINITY;
  double lo = -40, hi = 40; /* Phi is monotone: bisection to ~1e-14 is enough here */
  for (int i = 0; i < 200 && hi - lo > 1e-14; i++) {
    double mid = 0.5 * (lo + hi);
    if (dpo_audit_phi(mid) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

/* Dong, Roth & Su 2019, Cor. 2.13: mu-GDP is (eps, delta(eps))-DP for every eps >= 0 with
 * delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2). */
double dpo_audit_gdp_delta(double mu, double eps) {
  if (!(mu > 0)) return 0;
  if (isinf(mu)) return 1;
  return dpo_audit_phi(-eps / mu + mu / 2) - exp(eps) * dpo_audit_phi(-eps / mu - mu / 2);
}

/* delta(eps) decreases in eps: bisection for the smallest eps with delta(eps) <= delta */
double dpo_audit_gdp_eps(double mu, double delta) {
  if (!(mu > 0)) return 0;
  if (isinf(mu)) return INFINITY;
  if (dpo_audit_gdp_delta(mu, 0) <= delta) return 0;
  double lo = 0, hi = 1;
  while (dpo_audit_gdp_delta(mu, hi) > delta && hi < 1e6) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    double mid = 0.5 * (lo + hi);
    if (dpo_audit_gdp_delta(mu, mid) > delta) lo = mid;
    else hi = mid;
  }
  return hi;
}

/* A mu-GDP mechanism's every test has FNR >= Phi(Phi^-1(1 - FPR) - mu) (the tradeoff curve
 * G_mu, Dong, Roth & Su 2019, Def. 2.6), so mu >= Phi^-1(1 - FPR) - Phi^-1(FNR); with the
 * upper Clopper-Pearson bounds on FPR and FNR (each at level alpha/2) the bound holds with
 * confidence 1 - alpha (Nasr et al. 2023, Sec. 4). */
double dpo_audit_mu_lb(int64_t kfp, int64_t n1, int64_t kfn, int64_t n0, double alpha) {
  double fpr = dpo_audit_cp_upper(kfp, n1, alpha / 2), fnr = dpo_audit_cp_upper(kfn, n0, alpha / 2);
  double mu = dpo_audit_phi_inv(1 - fpr) - dpo_audit_phi_inv(fnr);
  return isnan(mu) ? -INFINITY : mu;
}

/* Counts of {t > thr}: k0 in t0 (D: true positives), k1 in t1 (D': false positives). */
static double dpo__mu_at(double thr, const double *a, int64_t n0, const double *b, int64_t n1,
                         double alpha) {
  int64_t tp = n0 - dpo__count_le(a, n0, thr), fp = n1 - dpo__count_le(b, n1, thr);
  return dpo_audit_mu_lb(fp, n1, n0 - tp, n0, alpha);
}

int dpo_audit_best_mu(const double *t0, int64_t n0, const double *t1, int64_t n1, double alpha,
                      double *thr, double *mu_lb) {
  if (n0 <= 0 || n1 <= 0 || !t0 || !t1) return dpo_err(DPO_EINVAL, "audit: empty sample");
  double *a = malloc((size_t)n0 * sizeof *a), *b = malloc((size_t)n1 * sizeof *b);
  if (!a || !b) {
    free(a);
    free(b);
    return dpo_err(DPO_ENOMEM, "out of memory");
  }
  memcpy(a, t0, (size_t)n0 * sizeof *a);
  memcpy(b, t1, (size_t)n1 * sizeof *b);
  qsort(a, (size_t)n0, sizeof *a, dpo__cmp);
  qsort(b, (size_t)n1, sizeof *b, dpo__cmp);
  /* up to 256 quantiles of the pooled sample, scored at a Bonferroni level (the winner's
   * curse, as in dpo_audit_best_event) */
  int64_t nc = n0 + n1 < 256 ? n0 + n1 : 256;
  double alpha_sel = alpha / (double)nc, best = -INFINITY;
  *thr = a[0];
  for (int64_t c = 0; c < nc; c++) {
    int64_t i = (c * (n0 + n1)) / nc;
    double th = i < n0 ? a[i] : b[i - n0]; /* a sample value of either set */
    double v = dpo__mu_at(th, a, n0, b, n1, alpha_sel);
    if (v > best) {
      best = v;
      *thr = th;
    }
  }
  *mu_lb = dpo__mu_at(*thr, a, n0, b, n1, alpha);
  free(a);
  free(b);
  return DPO_OK;
}
