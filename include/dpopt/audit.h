/* Empirical privacy audit (dpopt audit): statistics.
 *
 * An audit runs a private algorithm many times on two neighbouring data sets D, D' and looks
 * for an event S of the released output with P[S | D] much larger than P[S | D'].  If the
 * algorithm is (eps, delta)-DP then P[S | D] <= e^eps P[S | D'] + delta for every S, so
 *   eps >= ln((p_D - delta) / p_D')
 * and with one-sided Clopper-Pearson bounds (p_D from below, p_D' from above, each at level
 * alpha/2) the bound eps_lb = ln((p_D,lo - delta) / p_D',hi) holds with confidence >= 1 - alpha.
 * The event (a statistic, a threshold, a side, which set plays D) must be chosen on data
 * independent of the data the bound is computed from (the caller splits its trials in two).
 * A lower bound only: an audit that finds nothing proves nothing.
 */
#ifndef DPOPT_AUDIT_H
#define DPOPT_AUDIT_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/config.h"
#include "dpopt/kernels.h"
#include "dpopt/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Regularized incomplete beta I_x(a, b), a, b > 0, x in [0, 1] (continued fraction). */
double dpo_audit_betainc(double a, double b, double x);
/* Quantile of Beta(a, b): the x with I_x(a, b) = p, by bisection on the CDF (to ~1e-13). */
double dpo_audit_beta_ppf(double p, double a, double b);
/* One-sided Clopper-Pearson bounds on a binomial rate from k successes in n trials at level
 * 1 - a: lower = Beta^-1(a; k, n-k+1) (0 if k = 0), upper = Beta^-1(1-a; k+1, n-k) (1 if
 * k = n). */
double dpo_audit_cp_lower(int64_t k, int64_t n, double a);
double dpo_audit_cp_upper(int64_t k, int64_t n, double a);
/* ln((cp_lower(k0, n0) - delta) / cp_upper(k1, n1)), each at level alpha/2; -INFINITY when
 * the numerator is <= 0. */
double dpo_audit_eps_lb(int64_t k0, int64_t n0, int64_t k1, int64_t n1, double delta, double alpha);

/* The one-run audit (Steinke, Nasr and Jagielski 2023; src/privacy/audit1.c): m canaries each
 * included with probability 1/2, r guesses, v right.  The p-value of v under (eps, delta)-DP
 * (P[Bin(r, q) >= v] plus the delta term, q = e^eps / (1 + e^eps)), and the largest eps whose
 * p-value is below beta (0 if none; NaN for arguments out of range). */
double dpo_audit1_pvalue(int64_t m, int64_t r, int64_t v, double eps, double delta);
double dpo_audit1_eps_lb(int64_t m, int64_t r, int64_t v, double delta, double beta);
/* The guesses the one-run audit tries with m canaries: r = 2 floor(f m / 2) for f in 0.1, 0.2,
 * 0.5, 1 (grid point g < DPO_AUDIT1_GRID; 0 when r < 2), each bound at alpha / DPO_AUDIT1_GRID
 * and the largest reported. */
#define DPO_AUDIT1_GRID 4
int64_t dpo_audit1_guesses(int64_t m, int g);
/* What the audit can reach with m canaries, before it runs (claimed delta, confidence
 * 1 - alpha): the ceiling, the largest bound it can report (every guess right); and, when each
 * canary is mu-GDP (Dong, Roth and Su 2019) with respect to its inclusion, an upper bound on the
 * probability that the reported bound exceeds eps: for each grid point the p-value of the
 * smallest count whose bound exceeds eps, minimised over the (eps', delta'(eps')) that mu-GDP
 * implies, summed over the grid (0 when the ceiling is at most eps). */
double dpo_audit1_ceiling(int64_t m, double delta, double alpha);
double dpo_audit1_power_gdp(int64_t m, double eps, double delta, double alpha, double mu);

/* Best threshold event of one scalar statistic: t0[0..n0) from D, t1[0..n1) from D'.  Events
 * S = {T > thr} or {T <= thr} with thr at every observed value, and either set in the role of
 * D in eps_lb; the one maximizing eps_lb(counts, delta, alpha) on these samples is returned
 * (its side: 1 for T > thr, 0 for T <= thr; swap: 1 when D' plays D).  Returns that eps_lb
 * (-INFINITY if none is positive). */
typedef struct {
  double thr;
  int above, swap;
  double eps_lb;
} dpo_audit_event_t;
int dpo_audit_best_event(const double *t0, int64_t n0, const double *t1, int64_t n1, double delta,
                         double alpha, dpo_audit_event_t *ev);
/* Counts of the event in a sample (for the evaluation half). */
int64_t dpo_audit_count(const dpo_audit_event_t *ev, const double *t, int64_t n);
/* eps_lb of a fixed event on an evaluation sample. */
double dpo_audit_event_lb(const dpo_audit_event_t *ev, const double *t0, int64_t n0,
                          const double *t1, int64_t n1, double delta, double alpha);

/* Gaussian differential privacy (Dong, Roth & Su 2019): the standard normal CDF and its
 * inverse; delta(eps) of mu-GDP (Cor. 2.13: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2));
 * the smallest eps >= 0 with delta(eps) <= delta. */
double dpo_audit_phi(double x);
double dpo_audit_phi_inv(double p);
double dpo_audit_gdp_delta(double mu, double eps);
double dpo_audit_gdp_eps(double mu, double delta);
/* Lower confidence bound (level 1 - alpha) on mu from a test with kfp false positives among
 * n1 runs on D' and kfn false negatives among n0 runs on D: Phi^-1(1 - FPR_hi) -
 * Phi^-1(FNR_hi), each a Clopper-Pearson upper bound at alpha/2 (a mu-GDP mechanism has
 * FNR >= Phi(Phi^-1(1 - FPR) - mu) for every test). */
double dpo_audit_mu_lb(int64_t kfp, int64_t n1, int64_t kfn, int64_t n0, double alpha);
/* The threshold thr of the test {T > thr} (T larger on D: t0) that maximizes that bound on
 * these samples (scored at a Bonferroni level over the candidates), and its mu_lb at alpha.
 * Choose on one half of the trials, evaluate with dpo_audit_mu_lb on the other. */
int dpo_audit_best_mu(const double *t0, int64_t n0, const double *t1, int64_t n1, double alpha,
                      double *thr, double *mu_lb);

/* ---- the audit run (construction and analysis: src/optim/audit_run.c; the trials:
 * src/run/run_audit_job.c; with a run directory: the run API's audit kind, dpopt/run.h) ---- */

#define DPO_AUDIT_TRIALS 5000 /* default trials per data set (README: power at eps = 1) */
/* the default under the white box for batches without replacement under replace-one (the wsg
 * test: eps_lb / claim >= 0.7 at dp-sgd-rdp's default plan, doc/results.md) */
#define DPO_AUDIT_TRIALS_WOR 50000

typedef struct {
  char algorithm[32];   /* algo.name, or "laplace" (audit.mechanism) */
  double claimed_eps;   /* what the ledger charged (the largest over the trials) */
  double claimed_delta;
  double lb;            /* eps lower bound on the evaluation half (-INFINITY: none) */
  double lb_select;     /* the same on the selection half (biased upwards: not the result) */
  int64_t trials;       /* runs on each data set */
  double alpha;         /* the bound holds with confidence 1 - alpha */
  int add_remove;       /* neighbouring relation: 1 add-remove, 0 replace-one */
  char stat[64];        /* the statistic the test uses ("x[0]", "projection on ...") */
  dpo_audit_event_t ev; /* the chosen event */
  int violation;        /* lb > claimed_eps */
  /* white-box audit (audit.white_box; src/optim/audit_wb.c): every release is observed */
  int white_box;
  char method[16];      /* "gdp" | "per-release" | "summed": which test gave lb */
  char assumption[200]; /* what the bound assumes beyond the releases being observed */
  int64_t releases;     /* releases per run */
  double lb_summed;     /* distribution-free bound of the summed statistic (always valid) */
  double mu_lb, mu_claim; /* gdp: the GDP parameter, bound and claim */
  double rel_lb, rel_claim; /* per-release: pure eps of one release, bound and largest charge */
  double z_ub, z_claim; /* psg: the noise multiplier, upper bound and charge */
  double saturated;     /* fraction of releases in which the canary was at full sensitivity */
} dpo_audit_result_t;

/* Collective on comm: audit one private algorithm (config algo.name, model.lambda,
 * algo.iters, algo.m, algo.x0, data.row_l1_bound / data.row_l2_bound; the budget, relation,
 * accountant, trust mode and clipping from spec, the privacy specification the caller read,
 * dpopt/spec.h) or one Laplace release (audit.mechanism = laplace).  Builds the two
 * worst-case neighbouring data sets from the declared bounds or from the clipping, runs
 * audit.trials (default DPO_AUDIT_TRIALS; DPO_AUDIT_TRIALS_WOR for the white box's wsg plan)
 * trials on each, spread over the ranks (each on MPI_COMM_SELF, secure unseeded noise, an
 * in-memory ledger with the run's accountant), and
 * fills *res on rank 0 (res->violation on every rank).  quiet: no progress on stderr.  The
 * same status on every rank. */
int dpo_audit_run(MPI_Comm comm, const dpo_config_t *cfg, const dpo_privacy_spec_t *spec,
                  int quiet, dpo_audit_result_t *res);
/* Not collective: write *res as JSON to path (atomically). */
int dpo_audit_write_json(const char *path, const dpo_audit_result_t *res);
/* Not collective: the result table as `dpopt audit` prints it (tag: appended to its data
 * line, "" for none), the white-box test's line and VIOLATION when the bound exceeds the
 * claim. */
void dpo_audit_print(FILE *out, const dpo_audit_result_t *res, const char *tag);

#ifdef __cplusplus
}
#endif
#endif
