/* dpopt privacy core: noise mechanisms, accountants, and the rank-0 privacy ledger.
 *
 * Mechanisms (mechanism.c).  Laplace and Gaussian noise are sampled EXACTLY on a power-of-two
 * grid, which defeats Mironov's (2012) floating-point attack on textbook samplers:
 *   Lambda = smallest power of two >= scale * 2^-40          (scale = b or sigma)
 *   out    = Lambda * (rint(v / Lambda) + K)
 * where K is an exact discrete Laplace (scale t = ceil(b/Lambda)) or discrete Gaussian
 * (sigma_Z = ceil(sigma/Lambda)) integer drawn with the Canonne-Kamath-Steinke (2020)
 * algorithms in integer arithmetic from uniform random bits.  v / Lambda and rint are exact in
 * binary floating point, so the only deviation from the ideal discrete mechanism is the
 * snapping of the true value: it moves each coordinate by <= Lambda/2, hence the sensitivity of
 * the snapped query is at most
 *   Delta1' = Delta1 + d * Lambda        (L1, Laplace)
 *   Delta2' = Delta2 + sqrt(d) * Lambda  (L2, Gaussian)
 * with Lambda <= 2^-39 * scale.  The eps functions below and the ledger charge Delta' (not
 * Delta), so the rounding is paid for, not ignored.  The integer -> double conversion of the
 * result happens after the exact mechanism and is post-processing.
 * Noise comes from dpo_rng_t: in a private run it must be an unseeded (OS-keyed) stream.
 *
 * Accountants (accountant.c).  Pure eps basic composition (thesis Thm 4.1.3); amplification by
 * sampling m of n without replacement (001 (3.3), inverse (3.5)); the thesis bound 2*gamma*eps
 * (thesis Thm 4.1.5, requires eps <= 1); parallel composition for disjoint batches
 * (DP-onlineGDwS); (eps, delta) basic composition with the classic Gaussian calibration.
 * Every function that returns a privacy LOSS rounds it up; every function that returns a
 * per-step ALLOWANCE from a target loss rounds it down, so round trips never over-spend.
 *
 * Ledger (ledger.c).  Lives on rank 0 of the communicator it was opened with; only rank 0
 * holds state and the journal.  Budget arithmetic is exact: the spent total is kept as an
 * exact sum (floating-point expansion) of the charged doubles, and a charge fits iff the exact
 * sum spent + charge <= budget.  So 0.5 + 0.5 fits a budget of 1, but ten charges of the
 * double nearest 0.1 (which is 0.1 + 5.55e-18) do NOT fit 1.0: split a budget with
 * dpo_privacy_split(), which returns the largest double e with T * e <= budget exactly.
 */
#ifndef DPOPT_PRIVACY_H
#define DPOPT_PRIVACY_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- mechanisms */

/* Grid step Lambda for a noise scale (b or sigma): smallest power of two >= scale * 2^-40.
 * Fails (DPO_EINVAL) for scale <= 0, non-finite, or so small/large that Lambda would leave the
 * normal double range. */
int dpo_mech_grid(double scale, double *lambda);

/* v[i] += Laplace(b) for i < d, exactly on the grid of dpo_mech_grid(b): every output is an
 * integer multiple of Lambda.  Not collective.  Fails on b <= 0, non-finite b or v[i], d < 0, or
 * |v[i]| / Lambda >= 2^100, i.e. |v[i]| >= ~2^60 b (nothing is modified then: inputs are checked
 * first). */
int dpo_mech_laplace(dpo_rng_t *rng, double b, double *v, int64_t d);
/* v[i] += N(0, sigma^2), same grid construction (discrete Gaussian, CKS 2020 Alg. 3). */
int dpo_mech_gaussian(dpo_rng_t *rng, double sigma, double *v, int64_t d);

/* Scalar noise samples (for tests and for callers that need one value): *x = one Laplace(b)
 * (resp. N(0, sigma^2)) grid sample around 0. */
int dpo_mech_laplace_sample(dpo_rng_t *rng, double b, double *x);
int dpo_mech_gaussian_sample(dpo_rng_t *rng, double sigma, double *x);

/* Exact integer samplers (CKS 2020).  Bernoulli(exp(-num/den)) for 0 <= num, 0 < den (Alg. 1);
 * discrete Laplace P(k) ~ exp(-|k|/t), 1 <= t <= 2^50 (Alg. 2 with s = 1); discrete Gaussian
 * P(k) ~ exp(-k^2 / (2 sigma^2)) for an integer 1 <= sigma <= 2^50 (Alg. 3). */
int dpo_mech_bernoulli_exp(dpo_rng_t *rng, uint64_t num, uint64_t den, int *out);
int dpo_mech_discrete_laplace(dpo_rng_t *rng, uint64_t t, int64_t *k);
int dpo_mech_discrete_gaussian(dpo_rng_t *rng, uint64_t sigma, int64_t *k);

/* Privacy of the grid mechanisms, rounded up, including the snapping inflation above:
 *   Laplace:  eps = (Delta1 + d*Lambda) / b                         (thesis Thm 4.1.2)
 *   Gaussian (classic): eps = Delta2' sqrt(2 ln(1.25/delta)) / sigma, VALID ONLY FOR eps < 1
 *            (Dwork-Roth Thm A.1): DPO_EINVAL if the result is >= 1 or delta not in (0,1).
 * d = number of noised coordinates (>= 1). */
int dpo_mech_laplace_eps(double delta1, double b, int64_t d, double *eps);
int dpo_mech_gaussian_eps(double delta2, double sigma, double delta, int64_t d, double *eps);
/* Inverses: the smallest-ish noise scale whose eps (as computed above) is <= the target. */
int dpo_mech_laplace_scale(double delta1, double eps, int64_t d, double *b);
int dpo_mech_gaussian_sigma(double delta2, double eps, double delta, int64_t d, double *sigma);

/* ---------------------------------------------------------------- accountants */

/* Amplification by sampling m of n without replacement, replace-one neighbours:
 *   eps' = ln(1 + (m/n)(e^eps - 1))   (001 (3.3)), rounded up;
 * the (eps, delta) version also scales delta' = (m/n) delta (Balle-Barthe-Gaboardi 2018). */
int dpo_acct_wor(double eps, int64_t m, int64_t n, double *eps_out);
/* Inverse (001 (3.5)): the per-step eps0 for a target eps', rounded down so that
 * dpo_acct_wor(eps0) <= eps' holds exactly. */
int dpo_acct_wor_inverse(double eps_target, int64_t m, int64_t n, double *eps0);
/* Thesis Thm 4.1.5 (Lemma 2.2 of Beimel et al.): eps' = 2 (m/n) eps, only for eps <= 1
 * (DPO_EINVAL otherwise); rounded up. */
int dpo_acct_thesis_2gamma(double eps, int64_t m, int64_t n, double *eps_out);
/* Largest double e >= 0 with T * e <= total exactly (per-step share of a budget). */
int dpo_privacy_split(double total, int64_t T, double *per_step);

/* ---------------------------------------------------------------- ledger */

/* One release to be charged.  The cost of a release is computed from these fields:
 *  mechanism   "laplace" | "gaussian"
 *  eps, delta  the mechanism's own (eps, delta) before sampling, if the caller computed it;
 *  noise_scale, sensitivity, dim
 *              b (or sigma), the public sensitivity (L1 for Laplace, L2 for Gaussian) of the
 *              noised quantity, and the number of coordinates: when noise_scale > 0 the ledger
 *              computes the mechanism eps itself (dpo_mech_*_eps) and charges the MAX of that
 *              and `eps` (never under-counts).  A Gaussian charge needs delta in (0, 1).
 *  m, n        sample size and data size (sampling "wor", "poisson", "disjoint")
 *  sampling    "none" | "wor" (m of n without replacement) | "disjoint" (the batch is disjoint
 *              from the other batches of its `group`: parallel composition, the group costs
 *              the max of its batches, not the sum) | "poisson" (refused: DPO_EUNSUP until the
 *              RDP accountant lands)
 *  accounting  "pure" (no amplification; sampling must be "none" or "disjoint") |
 *              "subsampled" (001 (3.3)) | "thesis-2gamma" (thesis Thm 4.1.5, pure eps only)
 *  group       disjoint-pass id: consecutive "disjoint" charges with the same group form one
 *              pass (the partition into batches must not depend on the data).  A different
 *              group id, or any non-disjoint charge in between, closes the pass.
 *  step        iteration number, recorded in the journal. */
typedef struct {
  const char *mechanism;
  double eps, delta;
  double noise_scale, sensitivity;
  int64_t dim;
  int64_t m, n;
  const char *sampling;
  const char *accounting;
  int64_t group;
  int64_t step;
} dpo_charge_t;

typedef struct dpo_ledger dpo_ledger_t;

/* Open a ledger.  Collective over comm (all ranks return the same status); comm may be
 * MPI_COMM_NULL, meaning "serial: I am the coordinator" (no MPI call is made, MPI need not be
 * initialized).  Only rank 0 of comm holds the budget, the totals and the journal; on other
 * ranks the handle only remembers the communicator.
 *  eps_budget > 0 (finite), delta_budget in [0, 1).
 *  journal_path: JSON Lines file, NULL for an in-memory ledger (no crash safety).
 *  resume = 0: the journal must not exist (refusing to restart a spent budget from zero).
 *  resume = 1: the journal must exist; it is verified line by line, a torn last line (crash
 *    while writing it: no newline or unparsable) is truncated away and reported by
 *    dpo_ledger_repaired(), the totals are recomputed from the charges, and the budget given
 *    here must equal the journal's (a larger budget is DPO_EBUDGET, any other DPO_EINVAL).
 * *L is owned by the caller: dpo_ledger_close(). */
int dpo_ledger_open(MPI_Comm comm, double eps_budget, double delta_budget,
                    const char *journal_path, int resume, dpo_ledger_t **L);

/* Rank 0 only (DPO_EINVAL elsewhere).  Compute the charge of release c; if the exact new
 * totals fit the budget, append a journal line with one write(2), fsync it, update the totals
 * and return DPO_OK — all BEFORE the caller releases anything.  Otherwise DPO_EBUDGET and
 * nothing is recorded.  *charged (may be NULL) = increase of the spent eps (rounded up; 0 for
 * a disjoint batch that does not raise its pass's max). */
int dpo_ledger_charge(dpo_ledger_t *L, const dpo_charge_t *c, double *charged);
/* Collective variant: rank 0 charges; every rank returns the same status and *charged. */
int dpo_ledger_charge_all(dpo_ledger_t *L, const dpo_charge_t *c, double *charged);
/* Rank 0 only: would c fit?  DPO_OK or DPO_EBUDGET; never records.  *charge_eps / *charge_delta
 * (may be NULL) receive the increase it would cause. */
int dpo_ledger_check(const dpo_ledger_t *L, const dpo_charge_t *c, double *charge_eps,
                     double *charge_delta);
/* Rank 0 only: spent totals (rounded up), budgets, number of recorded charges. */
int dpo_ledger_spent(const dpo_ledger_t *L, double *eps, double *delta);
int dpo_ledger_budget(const dpo_ledger_t *L, double *eps, double *delta);
int64_t dpo_ledger_count(const dpo_ledger_t *L);
/* Bytes of a torn last line removed when the journal was resumed (0 = none). */
int64_t dpo_ledger_repaired(const dpo_ledger_t *L);
/* Not collective; frees the handle (closes the journal on rank 0).  NULL is fine. */
int dpo_ledger_close(dpo_ledger_t *L);

/* Human-readable account of a journal (for `dpopt ledger RUN`): one row per charge with the
 * recomputed totals, then budget / spent / remaining.  Read-only: a torn last line is reported,
 * not repaired. */
int dpo_ledger_print(const char *journal_path, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
