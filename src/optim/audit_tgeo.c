/* The test of the audit of dpopt tune's geometric search (audit.tune with tune.mean; the
 * trials: src/run/run_audit_tune.c).
 *
 * What the tune releases: the chosen model and its noisy score (the count of correct
 * validation predictions plus Laplace(1/eps0)), not the number of repetitions K (geometric,
 * mean M, stop probability gamma = 1/M), each repetition eps0-DP, charged 3 eps0 (Liu and
 * Talwar 2019; Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy",
 * 2022, Thm 2 with eta = 1 in the pure limit).  The construction: every repetition trains on
 * D or D' (the canary pushes a model's x along the canary up on D, down on D'), and the
 * validation rows, the same in both worlds, give a model with x > 0 all of them and one with
 * x <= 0 none, with more rows than the score's noise could bridge: the tune keeps a positive
 * model whenever one of its K repetitions made one.
 *
 * The event: every repetition made x <= 0 (so the chosen x <= 0) AND the chosen score is high.
 * With F = P(x <= 0) for one repetition (F' > F on D'), P(all K <= 0) = sum_k gamma
 * (1 - gamma)^(k-1) F^k, whose ratio between the worlds grows with K; the chosen score is
 * then the largest of K noise draws, which grows with K too, so a high score weights the
 * large K: the ratio tends to (F' / F) ((1 - (1 - gamma) F) / (1 - (1 - gamma) F'))^2, the
 * square of the selection's factor without the score.  With G = P(one noise draw <= the
 * threshold), P(event) = sum_k gamma (1 - gamma)^(k-1) F^k (1 - G^k) = gamma F / (1 - (1 -
 * gamma) F) - gamma F G / (1 - (1 - gamma) F G) (test_audit_tune_mean.sh checks the counts
 * against it).  For one Laplace step (replace-one,
 * F = e^(-eps0/2) / 2, M = 5, claim 1: eps0 = 1/3) the event {x <= 0, score > b/2} (b = 3 /
 * claim, the claim's score scale) has log ratio 0.634 intact and 1.242 with every noise halved
 * (at any score: 0.515 and 0.966 for x <= 0, halved 1.049 for x beyond the centre -c: on
 * the model alone the margin over the claim is 5%; one halved repetition's release alone is
 * 2 eps0 = 0.667-DP).  The event is fixed before
 * the trials (no selection half) and counted on all N trials of each set; the bound is
 * ln((CP_lower(D') - delta) / CP_upper(D)), each at alpha / 2 (numbers: doc/results.md).
 *
 * At delta > 0 the tune's charge is Papernot-Steinke's RDP bound converted at delta, and its
 * eps0 is what dpo__tune_calibrate leaves (eps 1, delta 1e-5, M = 5: 0.29 with dp-sgd-rdp
 * candidates, 0.32 with pure ones); the event is the same at the score's threshold b/2, b =
 * 1 / eps0.  A dp-sgd-rdp candidate's one step on all rows lands at x <= 0 with F =
 * Phi(-1/(2z)) (replace-one: the canary's +-C against N(0, (2 z C)^2)), z = 12.6 at eps0 =
 * 0.29: log ratio 0.130 intact, 0.272 halved, so the audit can only show the claim is not
 * exceeded; a pure-eps grid's is 0.613 and 1.203, as at delta 0.
 *
 * The validation canary (audit.canary = valid, run_audit_tune.c): the training is the same in
 * both worlds and D' adds 1 to every repetition's count, so the released (type, score) of the
 * chosen one, type t = the signs of (x0, x1) (count c_t = how many are >= 0 on D; p = 1/4,
 * 1/2, 1/4 for 2, 1, 0), has density g p_t f_b(s - c_t - [D']) / (1 - (1 - g) Q(s))^2, Q(s)
 * the chance one repetition scores below s (the sum over K of k repetitions, one at (t, s),
 * the others below it).  The event {both signs >= 0, s in [1, 2]} is likelier on D: a low
 * score for the best type weights the worlds by the repetition's Laplace ratio and the
 * selection's factor squared.  Its log ratio at eps0 = 0.2926: 0.62 intact, 1.15 with the
 * score's noise halved (jobs/audit/tune-valid-canary.py; the training noise does not enter);
 * the bound is ln((CP_lower(D) - delta) / CP_upper(D')). */
#include <math.h>
#include <stdio.h>

#include "dpopt/audit.h"
#include "dpopt/status.h"
#include "optim/audit_int.h"

/* The validation canary's test: the event fixed before the trials (counts, not scales). */
static int dpo__tgeo_valid(const dpo__audit_t *a, double *const X[2], int64_t N, double alpha,
                           dpo_audit_result_t *res) {
  const int32_t R = a->dout;
  int64_t k[2] = {0, 0};
  for (int w = 0; w < 2; w++)
    for (int64_t i = 0; i < N; i++) {
      const double *x = X[w] + i * R + 1;
      k[w] += x[0] >= 0 && x[1] >= 0 && x[2] >= 1 && x[2] <= 2;
    }
  res->ev.thr = 1;
  res->ev.above = 1;
  res->ev.swap = 0;
  res->lb_select = -INFINITY;
  res->lb = dpo_audit_eps_lb(k[0], N, k[1], N, a->delta, alpha);
  snprintf(res->stat, sizeof res->stat, "chosen x[0], x[1] >= 0, score in [1, 2] (%lld / %lld on "
           "D, D')", (long long)k[0], (long long)k[1]);
  snprintf(res->method, sizeof res->method, "tune-mean-valid");
  snprintf(res->assumption, sizeof res->assumption,
           "the canary a validation row all models predict right; scores Laplace(%.6g) (eps0 = "
           "%.6g); training rows both worlds share; the event fixed before the trials",
           a->tune_b, a->tune_eps0);
  return DPO_OK;
}

int dpo__audit_tgeo_analyse(const dpo__audit_t *a, double *const X[2], int64_t N, double alpha,
                            double claimed, dpo_audit_result_t *res) {
  const int32_t d = a->d, R = a->dout;
  if (!(claimed > 0) || !(a->tune_b > 0))
    return dpo_err(DPO_EINVAL, "dpopt audit --tune: no charge to audit");
  /* half the score's Laplace scale b = 1 / eps0 (sensitivity 1): public, fixed before the
   * trials (3 / (2 claim) in the pure search) */
  if (a->tune_valid) return dpo__tgeo_valid(a, X, N, alpha, res);
  const double thr = 0.5 * a->tune_b;
  int64_t k[2] = {0, 0}; /* [set]: trials in the event */
  for (int w = 0; w < 2; w++)
    for (int64_t i = 0; i < N; i++) {
      const double *x = X[w] + i * R + 1, s = d == 1 ? x[0] : x[0] - x[1];
      k[w] += s <= 0 && x[d] > thr;
    }
  res->ev.thr = thr;
  res->ev.above = 1;
  res->ev.swap = 1;
  res->lb_select = -INFINITY; /* fixed before the trials: no selection half */
  res->lb = dpo_audit_eps_lb(k[1], N, k[0], N, a->delta, alpha);
  snprintf(res->stat, sizeof res->stat, "score of a chosen %s <= 0 (%lld / %lld on D', D)",
           d == 1 ? "x[0]" : "x[0]-x[1]", (long long)k[1], (long long)k[0]);
  snprintf(res->method, sizeof res->method, "tune-mean");
  char g[48] = "";
  if (isfinite(a->tune_z)) snprintf(g, sizeof g, ", Gaussian ones at z = %.6g", a->tune_z);
  snprintf(res->assumption, sizeof res->assumption,
           "every repetition on D or D' at eps0 = %.6g%s; no x <= 0 chosen while an x > 0 was "
           "made (the validation rows); the event fixed before the trials", a->tune_eps0, g);
  return DPO_OK;
}
