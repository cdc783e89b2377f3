/* The one-run audit's statistics: Steinke, Nasr and Jagielski, "Privacy auditing with one (1)
 * training run" (NeurIPS 2023).  m canaries, each included independently with probability 1/2;
 * the auditor guesses r of them (included or not) from the output and is right v times.  For an
 * (eps, delta)-DP algorithm (with respect to each canary's inclusion), Theorem 3.1 with its
 * delta term (their Proposition 5.7 / Algorithm 2, as we read it): for every v,
 *   P[V >= v] <= P[Bin(r, q) >= v] + 2 m delta max_{i = 1..v} P[v - i <= Bin(r, q) < v] / i,
 * q = e^eps / (1 + e^eps), the accuracy of eps-DP randomized response.  The lower bound is the
 * largest eps at which this p-value is still below beta. */
#include <math.h>

#include "dpopt/audit.h"

/* ln P[Bin(r, q) = k] */
static double dpo__lbinom_pmf(int64_t r, int64_t k, double q) {
  return lgamma((double)r + 1) - lgamma((double)k + 1) - lgamma((double)(r - k) + 1) +
         (double)k * log(q) + (double)(r - k) * log1p(-q);
}

double dpo_audit1_pvalue(int64_t m, int64_t r, int64_t v, double eps, double delta) {
  if (!(v >= 0 && v <= r && r <= m && eps >= 0 && delta >= 0 && delta <= 1)) return NAN;
  if (v == 0) return 1;
  const double q = 1 / (1 + exp(-eps));
  /* P[Bin(r, q) >= v] = I_q(v, r - v + 1) */
  double p = dpo_audit_betainc((double)v, (double)(r - v + 1), q);
  if (delta > 0) {
    double sum = 0, best = 0;
    for (int64_t i = 1; i <= v; i++) {
      sum += exp(dpo__lbinom_pmf(r, v - i, q)); /* P[v - i <= Bin < v] */
      if (sum / (double)i > best) best = sum / (double)i;
    }
    p += 2 * (double)m * delta * best;
  }
  return p < 1 ? p : 1;
}

double dpo_audit1_eps_lb(int64_t m, int64_t r, int64_t v, double delta, double beta) {
  if (!(v >= 0 && v <= r && r <= m && beta > 0 && beta < 1)) return NAN;
  if (dpo_audit1_pvalue(m, r, v, 0, delta) >= beta) return 0; /* not even eps = 0 rejected */
  double lo = 0, hi = 1; /* p(lo) < beta <= p(hi): the p-value grows with eps */
  while (dpo_audit1_pvalue(m, r, v, hi, delta) < beta && hi < 1e3) lo = hi, hi *= 2;
  for (int it = 0; it < 60; it++) {
    double mid = 0.5 * (lo + hi);
    if (dpo_audit1_pvalue(m, r, v, mid, delta) < beta) lo = mid;
    else hi = mid;
  }
  return lo;
}

int64_t dpo_audit1_guesses(int64_t m, int g) {
  static const double frac[DPO_AUDIT1_GRID] = {0.1, 0.2, 0.5, 1.0};
  if (g < 0 || g >= DPO_AUDIT1_GRID || m < 2) return 0;
  int64_t r = 2 * (int64_t)(frac[g] * (double)m / 2);
  return r >= 2 ? r : 0;
}

double dpo_audit1_ceiling(int64_t m, double delta, double alpha) {
  double best = 0;
  for (int g = 0; g < DPO_AUDIT1_GRID; g++) {
    const int64_t r = dpo_audit1_guesses(m, g);
    if (r) best = fmax(best, dpo_audit1_eps_lb(m, r, r, delta, alpha / DPO_AUDIT1_GRID));
  }
  return best;
}

/* the smallest count right of r whose bound exceeds eps (r + 1: none); the bound grows with v */
static int64_t dpo__a1_vstar(int64_t m, int64_t r, double eps, double delta, double beta) {
  int64_t lo = 0, hi = r + 1; /* bound(lo) <= eps (v = 0 bounds nothing), bound(hi) > eps */
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (dpo_audit1_eps_lb(m, r, mid, delta, beta) > eps) hi = mid;
    else lo = mid;
  }
  return hi;
}

double dpo_audit1_power_gdp(int64_t m, double eps, double delta, double alpha, double mu) {
  if (!(mu >= 0 && eps >= 0 && alpha > 0 && alpha < 1)) return NAN;
  double p = 0;
  for (int g = 0; g < DPO_AUDIT1_GRID; g++) {
    const int64_t r = dpo_audit1_guesses(m, g);
    const int64_t v = r ? dpo__a1_vstar(m, r, eps, delta, alpha / DPO_AUDIT1_GRID) : 0;
    if (!r || v > r) continue;
    /* mu-GDP is (e, delta'(e))-DP for every e >= 0: any e gives a valid tail bound */
    double best = 1;
    for (int k = 0; k <= 600; k++) {
      const double e = k * 0.1, dl = mu > 0 ? dpo_audit_gdp_delta(mu, e) : 0;
      if (dl >= 1) continue;
      const double pv = dpo_audit1_pvalue(m, r, v, e, dl < 0 ? 0 : dl);
      if (pv < best) best = pv;
    }
    p += best;
  }
  return p < 1 ? p : 1;
}
