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

#include "dpopt/config.h"
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
/* Exact Polya (negative binomial) variates for distributed discrete Laplace (mechanism.c has
 * the derivation): *x ~ NB(1/n, exp(-1/t)), P(x = k) ~ Gamma(k + 1/n) / k! exp(-k/t); *z = the
 * difference of two independent such variates, so that the sum of n independent shares is
 * EXACTLY dpo_mech_discrete_laplace(t).  1 <= t <= 2^50, 1 <= n <= 2^32. */
int dpo_mech_polya(dpo_rng_t *rng, uint64_t t, uint64_t n, int64_t *x);
int dpo_mech_dlaplace_polya_share(dpo_rng_t *rng, uint64_t t, uint64_t n, int64_t *z);

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
/* Inverse (001 (3.5)): the per-step eps0 for a target eps' in [0, 700].  Contract:
 *  - dpo_acct_wor(*eps0, m, n) <= eps' exactly (the ledger's own rounded-up forward map);
 *  - hence *eps0 <= the exact inverse ln(1 + (n/m)(e^eps' - 1)), and *eps0 is within a relative
 *    2^-45 below it (the libm margins of both directions; measured 2^-46.8), except when the
 *    exact inverse exceeds 700, where dpo_acct_wor stops amplifying: then *eps0 <= 700;
 *  - m == n returns eps' itself. */
int dpo_acct_wor_inverse(double eps_target, int64_t m, int64_t n, double *eps0);
/* Thesis Thm 4.1.5 (Lemma 2.2 of Beimel et al.): eps' = 2 (m/n) eps, only for eps <= 1
 * (DPO_EINVAL otherwise); rounded up. */
int dpo_acct_thesis_2gamma(double eps, int64_t m, int64_t n, double *eps_out);
/* Largest double e >= 0 with T * e <= total exactly (per-step share of a budget). */
int dpo_privacy_split(double total, int64_t T, double *per_step);

/* ---------------------------------------------------------------- neighbouring relation */

/* Which data sets are neighbours (privacy.neighbours).  Every calibration and every accountant
 * works under one relation, the ledger journals it and refuses a charge made under another.
 *  REPLACE_ONE (default): D and D' have the same size n and differ in one row.  n is public.
 *    Sampling without replacement (001 (3.3), Wang-Balle-Kasiviswanathan 2019), disjoint
 *    batches and single-pass analyses (003) are replace-one analyses.
 *  ADD_REMOVE: D' = D with one row added or removed.  Poisson subsampling (Mironov-Talwar-Zhang
 *    2019) is an add/remove analysis.
 * Like OpenDP's ChangeOneDistance / InsertDeleteDistance: the only way from a per-example bound
 * to a sensitivity is dpo_sens(), so no call site writes its own factor 2. */
typedef enum { DPO_NEIGHBOURS_REPLACE_ONE = 0, DPO_NEIGHBOURS_ADD_REMOVE = 1 } dpo_neighbours_t;

/* "replace-one" | "add-remove" */
const char *dpo_neighbours_name(dpo_neighbours_t rel);
/* Parse "replace-one" | "add-remove" (NULL = the default, replace-one); DPO_EINVAL otherwise. */
int dpo_neighbours_parse(const char *s, dpo_neighbours_t *rel);
/* The accountants (privacy.accountant): one table (src/privacy/acct_table.c) names them for the
 * run, the ledger and the audit alike.
 *  PLD (default): AUTO, plus the privacy loss distribution bound of all-Gaussian ledgers
 *  AUTO: pure and Gaussian releases composed in one budget (the min of two valid bounds)
 *  BASIC: sequential composition of (eps, delta)
 *  RDP: Renyi DP per order, converted at the budget's delta */
typedef enum { DPO_ACCT_PLD = 0, DPO_ACCT_AUTO = 1, DPO_ACCT_BASIC = 2, DPO_ACCT_RDP = 3 } dpo_acct_t;
/* "pld" | "auto" | "basic" | "rdp" (the names the journal records); NULL for no accountant. */
const char *dpo_acct_name(dpo_acct_t a);
/* Parse a name, ignoring case (NULL = the default, pld); DPO_EINVAL otherwise (no message:
 * the caller names its key and origin). */
int dpo_acct_parse(const char *s, dpo_acct_t *a);

/* The sensitivity of a sum of per-example terms each bounded by b (in the norm the mechanism
 * uses) under rel: replacing one row moves the sum by <= 2b (both terms), adding or removing
 * one row by <= b.  b >= 0; the result is exact (a doubling is exact in binary). */
double dpo_sens(dpo_neighbours_t rel, double b);

/* ---------------------------------------------------------------- what a charge names */

/* A charge's mechanism, sampling and accounting are enums; their names appear only in the
 * journal, through one table (src/privacy/charge_names.c) that maps each value to the name the
 * journal records and back.  0 is "unset" in each, and the ledger refuses an unset field.
 *  DPO_MECH_LAPLACE  "laplace": Laplace noise of scale b for an L1 sensitivity (pure eps); also
 *                    the distributed discrete Laplace of Polya shares (secure aggregation)
 *  DPO_MECH_GAUSSIAN "gaussian": Gaussian noise sigma for an L2 sensitivity ((eps, delta) by the
 *                    classic calibration, or an RDP curve with accounting RDP)
 *  DPO_MECH_RDP_RHO  "rdp-rho": a release known by its RDP curve alpha rho^2 / 2 (amplification
 *                    by iteration, 003 Thm 3.1; the distributed discrete Gaussian of secagg) */
typedef enum {
  DPO_MECH_UNSET = 0,
  DPO_MECH_LAPLACE,
  DPO_MECH_GAUSSIAN,
  DPO_MECH_RDP_RHO
} dpo_mech_t;
/* "none" | "wor" | "poisson" | "disjoint" (dpo_charge_t below) */
typedef enum {
  DPO_SAMPLING_UNSET = 0,
  DPO_SAMPLING_NONE,
  DPO_SAMPLING_WOR,
  DPO_SAMPLING_POISSON,
  DPO_SAMPLING_DISJOINT
} dpo_sampling_t;
/* "pure" | "subsampled" | "thesis-2gamma" | "rdp" (dpo_charge_t below) */
typedef enum {
  DPO_ACCOUNTING_UNSET = 0,
  DPO_ACCOUNTING_PURE,
  DPO_ACCOUNTING_SUBSAMPLED,
  DPO_ACCOUNTING_THESIS_2GAMMA,
  DPO_ACCOUNTING_RDP
} dpo_accounting_t;
/* The journal's name of a value; "(unset)" for 0 and "(unknown)" out of range (never NULL). */
const char *dpo_mech_name(dpo_mech_t m);
const char *dpo_sampling_name(dpo_sampling_t s);

/* ---------------------------------------------------------------- releases */

/* A release of a private algorithm as the coordinator broadcasts it (rank 0, after its charge
 * and its noise): v[0..d) is the noised vector before any public term (the regularizer's
 * gradient) is added; mechanism DPO_MECH_LAPLACE | DPO_MECH_GAUSSIAN with noise_scale and sensitivity in
 * the units of v; q the probability that a given row is in the step's sample (1: full batch,
 * 0: not an independent sample, e.g. disjoint buckets); eps the pure eps the release was
 * charged (laplace; 0 otherwise); sampling, m and n as charged; x the point the gradient was
 * taken at.  The white-box audit (src/optim/audit_wb.c) reads every release through it
 * (dpo_solver_set_release_observer; dpo_dpadmm_opts_t.observe). */
typedef struct {
  int64_t step;
  dpo_mech_t mechanism;
  double noise_scale, sensitivity, q, eps;
  dpo_sampling_t sampling; /* none | wor | poisson | disjoint: how the step's rows were drawn */
  int64_t m, n;         /* q = m / n */
  int32_t d;
  const double *v, *x;
  double unit; /* one example's (clipped) gradient in the units of v (e.g. w / m for a mean) */
} dpo_release_t;
typedef int (*dpo_release_fn)(void *arg, const dpo_release_t *r);
const char *dpo_accounting_name(dpo_accounting_t a);
/* Exact journal names only (case matters: the journal is written by the table); DPO_EINVAL
 * without a message for anything else (the caller names its file and line). */
int dpo_mech_parse(const char *name, dpo_mech_t *m);
int dpo_sampling_parse(const char *name, dpo_sampling_t *s);
int dpo_accounting_parse(const char *name, dpo_accounting_t *a);

/* ---------------------------------------------------------------- ledger */

/* One release to be charged.  The cost of a release is computed from these fields (the enums'
 * journal names in quotes):
 *  mechanism   DPO_MECH_LAPLACE "laplace" | DPO_MECH_GAUSSIAN "gaussian" | DPO_MECH_RDP_RHO
 *  eps, delta  the mechanism's own (eps, delta) before sampling, if the caller computed it;
 *  noise_scale, sensitivity, dim
 *              b (or sigma), the public sensitivity (L1 for Laplace, L2 for Gaussian) of the
 *              noised quantity, and the number of coordinates: when noise_scale > 0 the ledger
 *              computes the mechanism eps itself (dpo_mech_*_eps) and charges the MAX of that
 *              and `eps` (never under-counts).  A Gaussian charge needs delta in (0, 1).
 *  m, n        sample size and data size (sampling WOR, POISSON, DISJOINT)
 *  sampling    DPO_SAMPLING_NONE "none" | DPO_SAMPLING_WOR "wor" (m of n without replacement) |
 *              DPO_SAMPLING_DISJOINT "disjoint" (the batch is disjoint from the other batches
 *              of its `group`: parallel composition, the group costs the max of its batches,
 *              not the sum) | DPO_SAMPLING_POISSON "poisson" (each row kept with probability
 *              m/n: Gaussian releases with accounting RDP only, add-remove only)
 *  accounting  DPO_ACCOUNTING_PURE "pure" (no amplification; sampling NONE or DISJOINT) |
 *              DPO_ACCOUNTING_SUBSAMPLED "subsampled" (001 (3.3)) | DPO_ACCOUNTING_THESIS_2GAMMA
 *              "thesis-2gamma" (thesis Thm 4.1.5, pure eps only) | DPO_ACCOUNTING_RDP "rdp"
 *  group       disjoint-pass id: consecutive DISJOINT charges with the same group form one
 *              pass (the partition into batches must not depend on the data).  A different
 *              group id, or any non-disjoint charge in between, closes the pass.
 *  step        iteration number, recorded in the journal. */
typedef struct {
  dpo_mech_t mechanism;
  double eps, delta;
  double noise_scale, sensitivity;
  int64_t dim;
  int64_t m, n;
  dpo_sampling_t sampling;
  dpo_accounting_t accounting;
  int64_t group;
  int64_t step;
  double rho; /* DPO_MECH_RDP_RHO only (RDP ledger): the release is (alpha, alpha rho^2/2)-RDP */
  /* the relation the sensitivity (or rho) was computed for; 0 = replace-one.  A ledger opened
   * under another relation refuses the charge (DPO_EINVAL).  Sampling "poisson" is accepted only
   * under add-remove; "wor", "disjoint" and "rdp-rho" only under replace-one. */
  dpo_neighbours_t neighbours;
} dpo_charge_t;

/* The mechanisms' own samplers (mech_ops.c, one object with each mechanism's sensitivity rule
 * and privacy maps): v[i] += the noise of mechanism m at scale (b or sigma) for i < d, on the
 * grid of dpo_mech_grid, by m's exact sampler (dpo_mech_laplace / dpo_mech_gaussian: discrete
 * Laplace / Gaussian on rng's stream).  Refused (DPO_EINVAL, nothing modified) for a mechanism
 * with no sampler of its own (rdp-rho: secagg's parties draw its noise shares). */
int dpo_mech_sample(dpo_mech_t m, dpo_rng_t *rng, double scale, double *v, int64_t d);
/* The release an accepted charge describes: its mechanism's noise at its noise_scale, so the
 * noise drawn is the noise the ledger priced. */
int dpo_mech_release(const dpo_charge_t *ch, dpo_rng_t *rng, double *v, int64_t d);

typedef struct dpo_ledger dpo_ledger_t;

/* Open a ledger.  Collective over comm (all ranks return the same status); comm may be
 * MPI_COMM_NULL, meaning "serial: I am the coordinator" (no MPI call is made, MPI need not be
 * initialized).  Only rank 0 of comm holds the budget, the totals and the journal; on other
 * ranks the handle only remembers the communicator.
 *  eps_budget > 0 (finite), delta_budget in [0, 1).
 *  journal_path: JSON Lines file, NULL for an in-memory ledger (no crash safety).
 *  resume = 0: the journal must not exist (refusing to restart a spent budget from zero).
 *  resume = 1: the journal must exist; it is verified line by line (its keyed hash chain, then
 *    every charge recomputed; a bad line is DPO_EFORMAT naming path:line), a torn last line
 *    (crash while writing it: no newline or unparsable) is dropped (cut from the file at the
 *    first write, so a refused resume writes nothing) and reported by dpo_ledger_repaired(),
 *    the totals are recomputed from the charges, and the budget given here must equal the
 *    journal's (a larger budget is DPO_EBUDGET, any other DPO_EINVAL).  A version 1 journal
 *    (no chain) is refused (DPO_EFORMAT).
 *  Journal lines carry a keyed BLAKE2b chain (doc/design.md, "The ledger journal"): the key is
 *  the file $DPOPT_JOURNAL_KEY, else $XDG_CONFIG_HOME/dpopt/journal.key, else
 *  $HOME/.config/dpopt/journal.key, created (0600, 32 random bytes) when a new journal needs it
 *  and missing; never created on resume.  No key, no journal: the open fails.  Symlinked
 *  journals are refused (O_NOFOLLOW).
 * *L is owned by the caller: dpo_ledger_close(). */
int dpo_ledger_open(MPI_Comm comm, double eps_budget, double delta_budget,
                    const char *journal_path, int resume, dpo_ledger_t **L);

/* The general open: accountant "pld" ("auto" plus a PLD bound on all-Gaussian ledgers, the
 * smaller of the two: src/privacy/acct_pld.c), "auto" (pure-eps and Gaussian releases in one
 * budget, below), "basic" or "rdp"; relation rel, journalled in the header (resume refuses
 * another relation, or another accountant unless pld or auto, which follow the journal).  dpo_ledger_open = ("basic", replace-one); dpo_ledger_open_rdp = ("rdp",
 * replace-one).
 * "auto" composes any mix: Gaussian releases with accounting "rdp" and rdp-rho passes on a per-
 * order RDP curve; pure releases (Laplace, any sampling/accounting of the basic accountant) by
 * exact basic composition; (eps, delta) releases (classic Gaussian) add eps and delta.  With
 * eps_P the pure sum, delta_A the (eps, delta) releases' delta sum, R(alpha) the Gaussian curve
 * and delta_R = delta_budget - delta_A, the spent eps is the smaller of two valid bounds:
 *   (A) eps_P + eps_A + eps_R(delta_R)                      (basic composition of the parts)
 *   (B) eps_A + eps(R + P', delta_R), P'(alpha) = sum_i min(eps_i, alpha eps_i^2 / 2)
 * P' is the RDP of the pure releases: eps-DP is (alpha, eps)-RDP (D_alpha <= D_inf) and
 * (eps^2/2)-zCDP (Bun-Steinke 2016 Prop. 3.3), i.e. (alpha, alpha eps^2/2)-RDP.  Both bounds are
 * valid, so the min is.  With a Gaussian part (B) is never above (A) (P'(alpha) <= eps_P at every
 * order); (A) matters for pure-only ledgers, where it spends no delta: one release of eps = 1
 * costs 1 by (A) and 1.019 by (B) at delta 1e-5, while 100 releases of 0.01 cost 1 by (A) and
 * 0.375 by (B).  With delta_budget = 0 only (A) applies (then "auto" is exactly "basic").  The
 * spent delta is delta_A, plus delta_R when the chosen bound used a conversion.  A Gaussian
 * release needs delta_budget > 0. */
int dpo_ledger_open_ex(MPI_Comm comm, double eps_budget, double delta_budget,
                       const char *journal_path, int resume, const char *accountant,
                       dpo_neighbours_t rel, dpo_ledger_t **L);
/* dpo_ledger_open_ex with the journal key read from key_file (NULL or "": the environment or
 * the default above; a run passes privacy.journal_key). */
int dpo_ledger_open_key(MPI_Comm comm, double eps_budget, double delta_budget,
                        const char *journal_path, int resume, const char *accountant,
                        dpo_neighbours_t rel, const char *key_file, dpo_ledger_t **L);
/* Rank 0: the journal's position: its complete lines (header included; -1 without a journal)
 * and the last line's chain tag (32 bytes).  A checkpoint records both. */
int dpo_ledger_position(const dpo_ledger_t *L, int64_t *lines, unsigned char head[32]);
/* Rank 0: call fn(arg, lines, head) after every journal line is durable, before the charge
 * returns (a budget store's journal head, dpo_budget_head_write); if fn fails the charge fails
 * and the ledger charges nothing more.  fn = NULL: none. */
int dpo_ledger_on_append(dpo_ledger_t *L, int (*fn)(void *, int64_t, const unsigned char[32]),
                         void *arg);
/* Rank 0: when the journal's lines become durable.  each = 1 (the default): every line is
 * fsynced before its charge returns.  each = 0: every line is still written (one write(2))
 * before its charge returns, so a killed process loses none (the kernel holds it), and fsynced
 * by dpo_ledger_sync or dpo_ledger_close: for a caller that keeps every release on this node
 * until then, so an OS crash that loses unsynced lines loses their releases with them
 * (doc/design.md, "The ledger journal").  A ledger with an on_append hook (a budget store's
 * head) fsyncs every line whatever is set here, as does a ledger without a journal (no lines).
 * *deferring (may be NULL): 1 if lines are now fsynced only by dpo_ledger_sync or close. */
int dpo_ledger_set_sync(dpo_ledger_t *L, int each, int *deferring);
/* Rank 0: fsync the journal if a line was written since its last fsync (each = 0 above). */
int dpo_ledger_sync(dpo_ledger_t *L);
/* Rank 0: does the journal reach line `lines` with chain tag `head` there?  DPO_EFORMAT naming
 * path:line if not (lines deleted, journal truncated or replaced).  what names the record
 * ("the checkpoint") in the message.  OK without a journal. */
int dpo_ledger_verify_position(const dpo_ledger_t *L, const char *what, int64_t lines,
                               const unsigned char head[32]);
/* Rank 0 of a journalled ledger: the charge recorded at journal line `line` (the header is line
 * 1) -- its mechanism, step, noise_scale, sensitivity and dim in *c (the rest zero) -- and the
 * line's chain tag.  DPO_EFORMAT naming path:line when the journal has no such line or it is no
 * charge. */
int dpo_ledger_line_charge(const dpo_ledger_t *L, int64_t line, dpo_charge_t *c,
                           unsigned char tag[32]);
/* Rank 0 of a journalled ledger: tag = the journal's keyed hash over text, from this journal's
 * nonce (journal_chain.h): a record kept outside the journal (a checkpoint's copy of a released
 * value) that nobody without the journal key can forge, valid for this journal only. */
int dpo_ledger_seal(const dpo_ledger_t *L, const char *text, unsigned char tag[32]);
/* The relation the ledger was opened with (rank 0 and elsewhere); its accountant's name. */
dpo_neighbours_t dpo_ledger_neighbours(const dpo_ledger_t *L);
const char *dpo_ledger_accountant(const dpo_ledger_t *L);
/* Rank 0: which bound gave the spent eps: "pld" (the PLD bound of the "pld" accountant), "rdp"
 * (an RDP conversion), "basic"; for the basic and rdp accountants their name.  NULL elsewhere. */
const char *dpo_ledger_bound(const dpo_ledger_t *L);
/* Rank 0: which bound gave the spent eps: "pld" (the PLD bound of the "pld" accountant), "rdp"
 * (an RDP conversion), "basic"; for the basic and rdp accountants their name.  NULL elsewhere. */
const char *dpo_ledger_bound(const dpo_ledger_t *L);

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
/* Not collective: does a plan of n releases fit (eps, delta) under like's accountant and
 * relation?  Opens a fresh in-memory ledger; charge_at(arg, F, i) charges release i into F.
 * *fits = 1 only if every charge was accepted; a DPO_EBUDGET from charge_at means "does not
 * fit" (status DPO_OK), any other failure is returned.  For noise calibrations that search
 * the smallest noise the run's own ledger accepts. */
int dpo_ledger_plan_fits(const dpo_ledger_t *like, double eps, double delta, int64_t n,
                         int (*charge_at)(void *arg, dpo_ledger_t *F, int64_t i), void *arg,
                         int *fits);
/* The same with the plan the run announces (dpo_ledger_record_plan: its steps) given apart from
 * the n releases checked, for runs that make releases outside their step plan (a noisy count
 * before the steps, sco_common.h): the check then bounds exactly what the run's ledger will. */
int dpo_ledger_plan_fits_ex(const dpo_ledger_t *like, double eps, double delta, int64_t n,
                            int64_t plan, int (*charge_at)(void *arg, dpo_ledger_t *F, int64_t i),
                            void *arg, int *fits);
/* Rank 0 only: spent totals (rounded up), budgets, number of recorded charges. */
int dpo_ledger_spent(const dpo_ledger_t *L, double *eps, double *delta);
int dpo_ledger_budget(const dpo_ledger_t *L, double *eps, double *delta);
int64_t dpo_ledger_count(const dpo_ledger_t *L);
/* Bytes of a torn last line removed when the journal was resumed (0 = none). */
int64_t dpo_ledger_repaired(const dpo_ledger_t *L);
/* Not collective; frees the handle (closes the journal on rank 0).  NULL is fine. */
int dpo_ledger_close(dpo_ledger_t *L);

/* ---- per-party accounts (multi-party runs, dpopt/parties.h) ----
 * Rank 0 only.  dpo_ledger_set_parties: n accounts with their own budgets, before the first
 * charge; journalled as {"kind":"parties","budget_eps":[..],"budget_delta":[..]}.  On a
 * resumed ledger the journal's accounts are restored and must equal these (a larger budget is
 * DPO_EBUDGET).  dpo_ledger_charge_parties: one release charged to the global account AND to
 * every listed party (increasing ids; each party's data enters the release through the same
 * mechanism, so each account is charged c), atomically: if the global account or any listed
 * party would exceed its budget, nothing is recorded, DPO_EBUDGET is returned and *refused
 * (may be NULL) says who refused (-1 the global account, k >= 0 party k).  The journal line
 * is a charge line plus "parties":[ids] and "party_total_eps":[..]; replay recomputes every
 * account from the charges.  dpo_ledger_party_event journals a non-charge event line
 * {"event":..,"party":k,"step":t} (e.g. "party_dropped"). */
int dpo_ledger_set_parties(dpo_ledger_t *L, int n, const double *eps_budget,
                           const double *delta_budget);
/* The same for a resumed journal whose run continues without some of its parties: position k
 * (what the other party functions and the charges' party lists name) is the journal's account
 * names[k], names increasing (NULL: k); the other accounts stay as the journal left them. */
int dpo_ledger_set_parties_named(dpo_ledger_t *L, int n, const int *names,
                                 const double *eps_budget, const double *delta_budget);
int dpo_ledger_nparties(const dpo_ledger_t *L);
int dpo_ledger_charge_parties(dpo_ledger_t *L, const dpo_charge_t *c, int np, const int *parties,
                              double *charged, int *refused);
int dpo_ledger_party_spent(const dpo_ledger_t *L, int party, double *eps, double *delta);
int dpo_ledger_party_budget(const dpo_ledger_t *L, int party, double *eps, double *delta);
int dpo_ledger_party_event(dpo_ledger_t *L, const char *event, int party, int64_t step);
/* Rank 0: journal the run's release plan {"kind":"plan","algo":..,"plan":"per-step"|"whole",
 * "steps":N,"what":..} (the driver does it before step 0; optim.h "release plans").  Not a
 * charge; `dpopt ledger` prints it and, at the end, plan vs spent. */
int dpo_ledger_record_plan(dpo_ledger_t *L, const char *algo, const char *kind, int64_t steps,
                           const char *what);

/* Human-readable account of a journal (for `dpopt ledger RUN`): the chain verified (with the
 * key of key_file, NULL: the environment or the default; never created), then, if all, one row
 * per charge with the recomputed totals, then budget / spent / remaining / bound / plan.
 * Read-only: a torn last line is reported, not repaired; a journal that fails verification
 * prints nothing (DPO_EFORMAT naming path:line).  A version 1 journal (no chain) is printed
 * with a line saying it is not verified.  dpo_ledger_print = (NULL key file, all). */
int dpo_ledger_print_ex(const char *journal_path, const char *key_file, int all, FILE *out);
int dpo_ledger_print(const char *journal_path, FILE *out);

/* ================================================================ Renyi DP (rdp.c)
 *
 * Renyi differential privacy (Mironov 2017) of the Gaussian mechanism, plain and subsampled,
 * composed per order over a fixed grid of orders, and converted to (eps, delta).  Every RDP
 * value and every eps is rounded UP; every allowance (delta from eps, noise from a target) is
 * rounded so the target is never exceeded.  z = sigma / Delta2 is the noise multiplier.
 * The grid mechanisms (dpo_mech_gaussian) are accounted with the snapped sensitivity
 * Delta2' = Delta2 + sqrt(d) Lambda (see the top of this header); for integer-lattice
 * sensitivities the discrete Gaussian has the continuous Gaussian's RDP (CKS 2020 Thm 14). */

#define DPO_RDP_MAX_ORDERS 64

/* An RDP curve on a grid of orders: rdp[i] bounds D_alpha[i] of the composed mechanism. */
typedef struct {
  int n;
  double alpha[DPO_RDP_MAX_ORDERS];
  double rdp[DPO_RDP_MAX_ORDERS];
} dpo_rdp_curve_t;

/* The default grid (fractional 1.25 .. 10.5 and integers up to 256); returns its length and
 * points *alphas at a static array. */
int dpo_rdp_default_orders(const double **alphas);
/* c = the default grid with all values 0 (no release yet). */
void dpo_rdp_curve_init(dpo_rdp_curve_t *c);

/* Single-order RDP, rounded up.  alpha > 1.
 *  gaussian:          alpha / (2 z^2)                              (Mironov 2017, Prop. 7)
 *  poisson_gaussian:  Poisson sampling with rate q in [0, 1]: exact for integer alpha
 *                     (Mironov-Talwar-Zhang 2019, binomial expansion in log space); for
 *                     fractional alpha the exact integral is bounded by the integer neighbours
 *                     (log-convexity of the moments: (alpha-1) D_alpha is convex in alpha)
 *  wor_gaussian:      sampling m of n without replacement, replace-one neighbours: Wang, Balle,
 *                     Kasiviswanathan 2019 Thm 9 bound at integer alpha; fractional alpha by
 *                     the same interpolation. */
int dpo_rdp_gaussian(double z, double alpha, double *rdp);
int dpo_rdp_poisson_gaussian(double q, double z, double alpha, double *rdp);
int dpo_rdp_wor_gaussian(int64_t m, int64_t n, double z, double alpha, double *rdp);

/* c += steps compositions of the Gaussian mechanism with multiplier z under `sampling`:
 * "none", "poisson" (q = m/n), "wor" (m of n).  Per order: rdp += steps * rdp_1(alpha). */
int dpo_rdp_curve_add(dpo_rdp_curve_t *c, const char *sampling, int64_t m, int64_t n, double z,
                      int64_t steps);
/* c += the curve alpha * rho^2 / 2 (003 Thm 3.1 amplification by iteration; 003 Lemma 4.2). */
int dpo_rdp_curve_add_rho(dpo_rdp_curve_t *c, double rho);

/* RDP -> (eps, delta) at one order, rounded up:
 *  classic: eps = rdp + log(1/delta) / (alpha - 1)                 (Mironov 2017, Prop. 3)
 *  balle:   eps = rdp + log((alpha-1)/alpha) - (log delta + log alpha) / (alpha - 1)
 *                                                           (Balle et al. 2020, Thm 21) */
int dpo_rdp_eps_classic(double alpha, double rdp, double delta, double *eps);
int dpo_rdp_eps_balle(double alpha, double rdp, double delta, double *eps);
/* The curve's eps at delta: min over the orders of min(classic, balle), >= 0; *alpha_opt (may
 * be NULL) = the minimizing order.  An empty curve (all 0) gives eps = 0. */
int dpo_rdp_eps(const dpo_rdp_curve_t *c, double delta, double *eps, double *alpha_opt);

/* Exact privacy profile of ONE Gaussian release with multiplier z (Balle-Wang 2018, Thm 8):
 *   delta(eps) = Phi(1/(2z) - eps z) - e^eps Phi(-1/(2z) - eps z)     (computed, not bounded)
 * and its inverse eps(delta) by bisection (the smallest eps with delta(eps) <= delta, rounded
 * up to the bisection's tolerance). */
int dpo_gauss_exact_delta(double z, double eps, double *delta);
int dpo_gauss_exact_eps(double z, double delta, double *eps);
/* Analytic Gaussian mechanism (Balle-Wang 2018, Alg. 1): the smallest sigma (rounded up, to a
 * relative 1e-9) for which one release with L2 sensitivity sens is (eps, delta)-DP. */
int dpo_gauss_analytic_sigma(double sens, double eps, double delta, double *sigma);

/* Calibration: the smallest multiplier z (bisection, rounded UP so the target is never
 * exceeded; relative resolution 1e-6) such that `steps` compositions of the Gaussian mechanism
 * under `sampling` ("none" | "poisson" q=m/n | "wor") are (eps, delta)-DP by dpo_rdp_eps. */
int dpo_rdp_calibrate(const char *sampling, int64_t m, int64_t n, int64_t steps, double eps,
                      double delta, double *z);

/* Amplification by iteration for PNSGD (003 Thm 3.1): for L-Lipschitz losses, batch sizes
 * B[t], steps eta[t] and noise sigma[t] (t < T; noise eta_t sigma_t is added to the iterate),
 *   rho = 2 L max_t eta_t / (B_t sqrt(sum_{s >= t} eta_s^2 sigma_s^2)),
 * rounded up; the pass is (alpha, alpha rho^2 / 2)-RDP for all alpha (needs eta_t <= 2/beta)
 * under replace-one neighbours (2L = dpo_sens(replace-one, L); the ledger refuses rdp-rho
 * charges under add-remove). */
int dpo_abi_rho(double L, int64_t T, const int64_t *B, const double *eta, const double *sigma,
                double *rho);

/* DP-ADMM noise of 004 Thm 1, eq. (8): sigma^2 = c^2 alpha T / (2 n^2 eps mu) with
 * alpha = log(1/delta) / ((1 - mu) eps) + 1, i.e. per-iteration L2 sensitivity c / n as in the
 * paper's proof (pass c = 2 * clip for replace-one neighbours).  mu in (0, 1) splits eps
 * between the RDP term (mu eps) and the conversion term.  sigma rounded up; *alpha may be NULL. */
int dpo_admm_thm1_sigma(double c, int64_t n, int64_t T, double eps, double delta, double mu,
                        double *sigma, double *alpha);

/* Not collective: the report of dpopt calibrate from config keys calibrate.eps, .delta,
 * .steps, .sampling (none | poisson | wor), .batch, .n, .sensitivity or .bound (per-example,
 * through dpo_sens and calibrate.neighbours), .admm_mu: the smallest RDP-calibrated Gaussian
 * noise multiplier (rounded up) for the target, the achieved eps, and for one unsampled
 * release the analytic Gaussian sigma (Balle-Wang 2018); with admm_mu also 004 eq. (8).
 * Public parameters only.  Printed to out; DPO_EINVAL for missing or inconsistent keys. */
int dpo_rdp_calibrate_report(const dpo_config_t *cfg, FILE *out);

/* ================================================================ PLD (pld.c)
 * Privacy loss distribution accountant for k-fold compositions of the Gaussian mechanism with
 * multiplier z: sampling "none" (or "disjoint" treated as none) or "poisson" (rate m/n, add/
 * remove neighbours: both dominating pairs, the larger delta).  The PLD is put on the grid h Z
 * by connecting the dots (Doroshenko et al. 2022: a dominating discrete pair, exact at the grid
 * points; tails cut at 1e-13 and moved up or to +inf; rounding bounded and added), composed
 * by powers of its spectrum (one real FFT; the mass outside the window and the rounding go to
 * +inf), so delta(eps) and eps(delta) are upper bounds.
 * h <= 0 takes DPO_PLD_H.  Sampling "wor" (m of n without replacement, replace-one, z in units
 * of the replace-one sensitivity): the dominating pair of Zhu, Dong and Wang 2022 for that
 * sampling, (1 - q) N(0, z^2) + q N(1, z^2) against N(0, z^2) at q = m/n -- poisson's pairs. */
#define DPO_PLD_H 5e-5
int dpo_pld_delta(const char *sampling, int64_t m, int64_t n, double z, int64_t steps,
                  double eps, double h, double *delta);
/* The same at k values eps[0..k) from one composition (delta[i] at eps[i]; each is what
 * dpo_pld_delta returns for it, bit for bit): a caller scanning eps pays one composition. */
int dpo_pld_delta_k(const char *sampling, int64_t m, int64_t n, double z, int64_t steps, int k,
                    const double *eps, double h, double *delta);
int dpo_pld_eps(const char *sampling, int64_t m, int64_t n, double z, int64_t steps,
                double delta, double h, double *eps);
/* How many PLD compositions this process has computed so far (dpo_pld_eps's memo hits not
 * counted; each is one transform of every direction's one-step PMF raised to its power): the
 * cost of a calibration, for its report and the benchmarks.  Not thread-safe, as the memo. */
int64_t dpo_pld_compositions(void);
/* Secant steps on log eps(log z) towards the band [t (1 - tol), t] (pld_search.c), for the
 * searches of the smallest noise a PLD bound accepts: eps_at(arg, z, &e) evaluates eps at z
 * (falling in z); the search starts from the evaluated (z, e) with the slope guess *slope of
 * log eps in log z (< 0; updated), keeps every probe inside the bracket of evaluated points
 * on either side of t and <= zmax, and stops when the smallest evaluated z with eps <= t is in
 * the band, or after max evaluations.  *zh, *eh: that z and its eps (INFINITY: none). */
int dpo_pld_secant(int (*eps_at)(void *arg, double z, double *e), void *arg, double t,
                   double tol, int max, double zmax, double z, double e, double *slope,
                   double *zh, double *eh);
/* The white-box audit's construction under sampling without replacement (replace-one; the
 * releases' only signal a Dirac canary at +C or -C, in the batch with probability q each
 * step, independently): the pair P = (1 - q) N(0, z^2) + q N(1/2, z^2) and its mirror Q (z =
 * sigma / (2 C), the replace-one sensitivity 2 C), composed `steps` times.  The profile of
 * that construction, not a dominating pair of a relation (no ledger uses it); losses rounded
 * up to the grid h (h <= 0: DPO_PLD_H), so delta(eps) and eps(delta) are upper bounds.  Either
 * output may be NULL; *eps is INFINITY when no eps reaches delta. */
int dpo_pld_wor_pair(double q, double z, int64_t steps, double eps, double delta, double h,
                     double *delta_at_eps, double *eps_at_delta);
/* The same with delta_at_eps[i] at each eps[i], i < k (eps >= 0), from one composition. */
int dpo_pld_wor_pair_k(double q, double z, int64_t steps, int k, const double *eps,
                       double delta, double h, double *delta_at_eps, double *eps_at_delta);
/* The smallest multiplier (to 1e-3 relative, found below the RDP one) whose PLD eps at delta
 * is <= eps on the grid dpo_pld_auto_h; RDP's multiplier when PLD cannot improve on it.
 * (A bisection from the RDP multiplier, its probes decided by a secant bracket where they
 * can be: ~5 PLD evaluations.) */
/* The grid dpo_pld_calibrate (and the pld ledger) uses: min(DPO_PLD_H max(1, eps),
 * eps / (10 steps)), at least 1e-6 (each step rounds its loss up by < h, so the composition's
 * bias stays below eps / 10). */
double dpo_pld_auto_h(double eps, int64_t steps);
int dpo_pld_calibrate(const char *sampling, int64_t m, int64_t n, int64_t steps, double eps,
                      double delta, double *z);
/* The multiplier the pld accountant composes for a Gaussian release of noise sigma,
 * sensitivity sens and dimension dim: sigma / (sens + sqrt(dim) lambda), the grid
 * mechanism's snapping lambda inflating the sensitivity, rounded down (acct_pld.c).  A caller
 * that searches for the multiplier evaluates exactly what the ledger will (and hits
 * dpo_pld_eps's memo).  0 when sigma has no grid. */
double dpo_pld_charge_z(double sigma, double sens, int64_t dim);
/* The calibration cache across processes (calib_cache.c): the answer of a multiplier search
 * for the plan text `plan` (one line, canonical: every number that decides the answer), kept
 * under $XDG_CACHE_HOME/dpopt/calib (else ~/.cache/dpopt/calib; DPOPT_CALIB_CACHE=off: none)
 * in a file named by the plan's BLAKE2b digest.  get returns 1 and the stored answer only when
 * the file's plan text is exactly `plan`, else 0; put is best effort.  Public arithmetic only,
 * never trusted for privacy: the caller's ledger confirms a cached multiplier. */
int dpo_calib_cache_get(const char *plan, double *z, int *fits);
void dpo_calib_cache_put(const char *plan, double z, int fits);

/* A ledger's composition in parts, the form a budget store (dpopt/budget.h) keeps of a run
 * and composes with other runs' as the "auto" accountant composes releases: the pure releases
 * (basic sum, and as an RDP curve min(eps, alpha eps^2/2)), the (eps, delta) releases (basic
 * sum) and the Gaussian (RDP) releases' curve on the grid dpo_rdp_default_orders.  A pure and
 * an (eps, delta) part that the accountant summed together are given as one (eps, delta) part.
 * eps, delta: the ledger's own spent bound (dpo_ledger_spent).  Rank 0 only. */
typedef struct {
  double eps, delta;
  double pure_eps, approx_eps, approx_delta;
  int64_t n_pure, n_approx, n_rdp;
  dpo_rdp_curve_t rdp, pure_rdp;
} dpo_ledger_parts_t;
int dpo_ledger_parts(const dpo_ledger_t *L, dpo_ledger_parts_t *p);
/* Rank 0: the same parts of party k's account (multi-party runs, dpo_ledger_set_parties): what
 * a party's own budget store keeps of the run. */
int dpo_ledger_party_parts(const dpo_ledger_t *L, int party, dpo_ledger_parts_t *p);
/* Not collective: the parts of the journal file `path` (its chain verified with the key of
 * key_file, as dpopt ledger reads it: nothing is written, a torn last line is left out), e.g.
 * a party's own journal under secure aggregation, read when its run is resumed. */
int dpo_ledger_file_parts(const char *path, const char *key_file, dpo_ledger_parts_t *p);
/* Rank 0: the journal's nonce (64 hex + NUL): a run's id in a budget store, the same when the
 * run is resumed.  DPO_EINVAL without a journal. */
int dpo_ledger_run_id(const dpo_ledger_t *L, char id[65]);

/* Open a ledger whose accountant is "rdp": the budget is (eps_budget, delta_budget) with
 * delta_budget in (0, 1); charges compose per order and the spent eps is dpo_rdp_eps at
 * delta_budget (spent delta reported = delta_budget once anything is charged).  Charges:
 *   mechanism "gaussian", noise_scale sigma > 0, sensitivity Delta2 > 0, dim >= 1,
 *     sampling "none" | "poisson" (each example included independently with q = m/n) |
 *     "wor" (m of n) | "disjoint" (parallel composition within `group`: per-order max),
 *     accounting "rdp";
 *   mechanism "rdp-rho": the curve alpha rho^2 / 2 with rho in the charge (amplification by
 *     iteration for a whole PNSGD pass, 003 Thm 3.1), sampling "none" or "disjoint".
 * Same resume / journal rules as dpo_ledger_open (the journal header names the accountant). */
int dpo_ledger_open_rdp(MPI_Comm comm, double eps_budget, double delta_budget,
                        const char *journal_path, int resume, dpo_ledger_t **L);

#ifdef __cplusplus
}
#endif
#endif
