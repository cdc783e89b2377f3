/* Budget splits and schedules of the DP methods (dp_common.h): the weighted split of a budget
 * over T steps, the optimal noise allocation and T' of (001, Sec. 4, (4.4)-(4.6)), and the
 * stages of DP-MASG (001 (4.7)).  Pure functions of public quantities. */
#include "optim/dp_common.h"

#include <math.h>
#include <stdlib.h>

#include "dpopt/status.h"
#include "optim/algos.h"

int dpo__dp_split_weighted(double eps, const double *wt, int64_t T, double *e) {
  long double W = 0, S = 0;
  for (int64_t t = 0; t < T; t++) {
    if (!(wt[t] > 0) || !isfinite(wt[t]))
      return dpo_err(DPO_EINVAL, "dp: budget weight %lld = %g must be > 0", (long long)t, wt[t]);
    W += wt[t];
  }
  double scale = 1.0 - 1e-12;
  for (int k = 0; k < 60; k++) {
    S = 0;
    for (int64_t t = 0; t < T; t++) {
      e[t] = (double)((long double)eps * wt[t] / W) * scale;
      S += e[t];
    }
    /* long double sum error <= T 2^-64 S, far below the 1e-12 margin */
    if (S <= (long double)eps * (1.0L - 1e-15L)) return DPO_OK;
    scale *= 1.0 - 1e-12;
  }
  return dpo_err(DPO_EINVAL, "dp: cannot split eps = %g over %lld steps", eps, (long long)T);
}

/* ln g(b) = ln(1 + (n/m - 1) e^{-s/b}), s = S/m */
static double dpo__lng(double u, double s, double r) { return log1p(r * exp(-s / exp(u))); }

/* b_t for a given multiplier Lambda (log): solve ln a + 3u + ln g(e^u) = Lam by bisection */
static double dpo__opt_u(double la, double Lam, double s, double r) {
  double hi = (Lam - la) / 3.0, lo = (Lam - la - log1p(r)) / 3.0;
  for (int k = 0; k < 200 && hi - lo > 1e-15 * (1.0 + fabs(hi)); k++) {
    double mid = 0.5 * (lo + hi);
    if (la + 3.0 * mid + dpo__lng(mid, s, r) > Lam) hi = mid;
    else lo = mid;
  }
  return 0.5 * (lo + hi);
}

static double dpo__opt_total(const double *a, int64_t T, double Lam, double s, double gam,
                             double r, double *b, double *e) {
  double tot = 0;
  for (int64_t t = 0; t < T; t++) {
    double u = dpo__opt_u(log(a[t]), Lam, s, r);
    double bt = exp(u), et = log1p(gam * expm1(s / bt)); /* (3.3) */
    if (b) b[t] = bt;
    if (e) e[t] = et;
    tot += et;
  }
  return tot;
}

int dpo__dp_opt_schedule(const double *a, int64_t T, double S1, int64_t n, int64_t m, double eps,
                         double *b, double *e) {
  if (T < 1 || !(S1 > 0) || n < 1 || m < 1 || m > n || !(eps > 0))
    return dpo_err(DPO_EINVAL, "dp_opt_schedule: bad arguments");
  for (int64_t t = 0; t < T; t++)
    if (!(a[t] > 0) || !isfinite(a[t]))
      return dpo_err(DPO_EINVAL, "dp_opt_schedule: weight a[%lld] = %g", (long long)t, a[t]);
  const double s = S1 / (double)m, gam = (double)m / (double)n, r = 1.0 / gam - 1.0;
  /* start from the m = n solution (4.5): a_t b_t^3 = Lambda */
  double sum13 = 0;
  for (int64_t t = 0; t < T; t++) sum13 += cbrt(a[t]);
  double b1 = sum13 * S1 / (cbrt(a[0]) * (double)n * eps);
  double Lam = log(a[0]) + 3.0 * log(b1);
  double lo = Lam - 1.0, hi = Lam + 1.0;
  /* total loss is decreasing in Lambda: bracket, then bisect */
  for (int k = 0; k < 200 && dpo__opt_total(a, T, lo, s, gam, r, NULL, NULL) < eps; k++) lo -= 2.0;
  for (int k = 0; k < 200 && dpo__opt_total(a, T, hi, s, gam, r, NULL, NULL) > eps; k++) hi += 2.0;
  for (int k = 0; k < 200 && hi - lo > 1e-14 * (1.0 + fabs(hi)); k++) {
    double mid = 0.5 * (lo + hi);
    if (dpo__opt_total(a, T, mid, s, gam, r, NULL, NULL) > eps) lo = mid;
    else hi = mid;
  }
  dpo__opt_total(a, T, 0.5 * (lo + hi), s, gam, r, b, e);
  return DPO_OK;
}

int64_t dpo__dp_best_T(int64_t Tmax, double E0, int32_t d, double S1, int64_t n, double eps,
                       double (*la)(int64_t, int64_t, void *), void *arg) {
  int64_t best = 1;
  double bestv = INFINITY, k = (double)d * S1 * S1 / ((double)n * n * eps * eps);
  for (int64_t Tp = 1; Tp <= Tmax; Tp++) {
    double sum = 0;
    for (int64_t j = 1; j <= Tp; j++) sum += exp(la(Tp, j, arg) / 3.0);
    double v = exp(la(Tp, 0, arg)) * E0 + k * sum * sum * sum; /* (4.6) */
    if (v < bestv) {
      bestv = v;
      best = Tp;
    }
  }
  return best;
}

double dpo__dp_nag_loga(int64_t T, int64_t t, void *arg) {
  const double *p = arg; /* alpha, mu, L */
  double lq = log1p(-sqrt(p[1] * p[0]));
  if (t == 0) return (double)T * lq;
  return (double)(T - t) * lq + log(p[0] * (1.0 + p[0] * p[2]));
}

void dpo__dp_stages_destroy(dpo__dp_stages_t *st) {
  if (!st) return;
  free(st->stage);
  free(st->alpha);
  free(st->logq);
  free(st);
}

int dpo__dp_stages_create(int64_t Tmax, int64_t n1, double kappa, double p, double alpha1,
                          double mu, double L, dpo__dp_stages_t **out) {
  dpo__dp_stages_t *st = calloc(1, sizeof *st);
  *out = NULL;
  if (!st) return dpo_err(DPO_ENOMEM, "dp: out of memory");
  st->Tmax = Tmax;
  st->mu = mu;
  st->L = L;
  st->stage = malloc((size_t)(Tmax + 1) * sizeof *st->stage);
  st->alpha = malloc((size_t)(Tmax + 1) * sizeof *st->alpha);
  st->logq = malloc((size_t)(Tmax + 1) * sizeof *st->logq);
  if (!st->stage || !st->alpha || !st->logq) {
    dpo__dp_stages_destroy(st);
    return dpo_err(DPO_ENOMEM, "dp: out of memory");
  }
  st->stage[0] = 1;
  st->alpha[0] = alpha1;
  st->logq[0] = 0;
  for (int64_t i = 1; i <= Tmax; i++) {
    int64_t len;
    int first;
    dpo__masg_schedule(i - 1, n1, kappa, p, alpha1, &st->stage[i], &st->alpha[i], &len, &first);
    st->logq[i] = st->logq[i - 1] + log1p(-sqrt(mu * st->alpha[i]));
  }
  *out = st;
  return DPO_OK;
}

double dpo__dp_masg_loga(int64_t T, int64_t t, void *arg) {
  const dpo__dp_stages_t *st = arg;
  /* (001, (4.8)): 2^{s_T - s_t} prod_{i=t+1}^T (1 - sqrt(mu alpha_i)) [alpha_t (1 + alpha_t L)] */
  double v = (double)(st->stage[T] - st->stage[t]) * M_LN2 + st->logq[T] - st->logq[t];
  if (t == 0) return v;
  return v + log(st->alpha[t] * (1.0 + st->alpha[t] * st->L));
}
