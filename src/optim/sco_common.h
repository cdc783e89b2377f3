/* Shared pieces of the linear-time private SCO algorithms of Feldman, Koren, Talwar 2020
 * (003): sco_pnsgd.c (Alg. 1, Snowball schedules), sco_phased.c (Alg. 2 Phased-SGD).  Rank 0.
 *
 * Constants (privacy rule 1): the Lipschitz constant L of the per-example data term comes from
 * privacy.clip = l2:C (L = C) or, for logistic regression, the declared data.row_l2_bound B2
 * (||grad f(w, x)||_2 <= ||u||_2 <= B2); the smallest that applies.  For logistic loss, L2
 * clipping of the per-example gradient -y u s(-y u.w) gives -y u min(s, C/||u||), the gradient of
 * a convex function with the same smoothness, so the contraction argument of 003 Prop. 2.10
 * still applies.  beta (smoothness, for eta <= 2/beta) comes from the declared row bound.
 * K is the L2 ball of diameter D (algo.D) centred at 0.
 *
 * Batch order: a public permutation of the GLOBAL example ids drawn from algo.shuffle_seed
 * (splitmix64 Fisher-Yates, not the noise stream), fixed before the run; batch t is the next
 * B_t ids of it, sorted for the oracle.  Which rank holds an example never changes a batch.
 */
#ifndef DPO_OPTIM_SCO_COMMON_H
#define DPO_OPTIM_SCO_COMMON_H

#include <stdint.h>

#include "dpopt/privacy.h"

#include "dpopt/optim.h"

typedef struct {
  int32_t d;
  int64_t n;
  double L;      /* Lipschitz constant of the per-example data term */
  double beta;   /* smoothness (NAN if no declared row bound) */
  double D;      /* diameter of K */
  double eps, delta; /* the ledger's budget */
  double rho;    /* target: the whole run is (alpha, alpha rho^2/2)-RDP */
  dpo_neighbours_t rel; /* the ledger's neighbouring relation (dpo_sens takes it) */
  int64_t *perm; /* public order of the n global ids */
  int64_t *ids;  /* scratch batch (sorted) */
} dpo__sco_t;

/* Read L, beta, D, the budget and rho (algo.rho, else the largest rho whose curve
 * alpha rho^2/2 fits the ledger's (eps, delta)), and build the public order. */
int dpo__sco_init(dpo_solver_t *s, dpo__sco_t *c, const char *who);
void dpo__sco_free(dpo__sco_t *c);
/* The keys dpo__sco_init reads: the `shared` table of the 003 algorithms (optim.h). */
extern const dpo_algo_param_t dpo__sco_params[];
/* The refusals of dpo__sco_init that need no data (dpo_algo_check): a public Lipschitz bound,
 * the declared smoothness bound, delta > 0, the relation (from spec).  Not collective. */
int dpo__sco_check(const dpo_config_t *cfg, const dpo_privacy_spec_t *spec, const char *who);
/* The size n_pub that a Poisson sampling rate q = m / n_pub, a step count from epochs and a
 * default batch are computed from.  Under replace-one the neighbours have the same size, so the
 * exact n (c->n) is public and n_pub = n.  Under add-remove the row count itself changes
 * between neighbours: a q or a T read from it would make the mechanism's law depend on the
 * data beyond the one row the analysis covers (and T shows in every output).  Then n_pub is
 *  - privacy.public_n if declared (a public size, e.g. the published size of the data set), or
 *  - a noisy count n + Laplace(1/eps_c) rounded (floor 1), eps_c = privacy.count_eps (default
 *    1% of the budget's eps), charged to the ledger first as an eps_c-DP release (sensitivity 1:
 *    one row added or removed moves the count by 1); what follows is post-processing of it.
 * *count_eps = eps_c (0 when nothing was charged), *count_b its Laplace scale (to replay the
 * charge in a plan check); src (cap bytes) says where n_pub came from.  A run's checkpoints
 * keep the count, and its resume takes it from there, checked against the journal's charge
 * (dpo__count_resumed, ckpt_int.h): one count, charged once, however often the run stops.
 * Rank 0. */
int dpo__sco_public_n(dpo_solver_t *s, const dpo__sco_t *c, const char *who, int64_t *n_pub,
                      double *count_eps, double *count_b, char *src, size_t cap);
/* The same for any algorithm: relation rel, the exact row count n (returned only under
 * replace-one), the budget's eps (the default count_eps is eps / 100).  Rank 0. */
/* dp-sgd-rdp's algo.sampling against the relation: poisson is analysed for add-remove, wor
 * for replace-one (dpo__sco_check, before the run directory; dpsgd_create).  Not collective. */
int dpo__sco_sampling_check(const char *who, const char *samp, dpo_neighbours_t rel);
int dpo__public_n(dpo_solver_t *s, dpo_neighbours_t rel, int64_t n, double eps, const char *who,
                  int64_t *n_pub, double *count_eps, double *count_b, char *src, size_t cap);
/* The noisy count's charge (dpo__sco_public_n) on ledger F: for plan checks. */
int dpo__sco_count_charge(dpo_ledger_t *F, dpo_neighbours_t rel, double b, double *charged);
/* Checkpoints of the 003 methods (their save/load ops): the public constants every one derives
 * from the config -- n, d, L, beta, D, rho and the public order (by an FNV-1a digest of perm) --
 * stored under "sco.*"; load checks them against the recomputed ones (a checkpoint of another
 * plan is refused) and, when disjoint != 0 (the releases form one disjoint pass), refuses a
 * journal with charges after the checkpoint (dpo__ckpt_disjoint_resume, ckpt_int.h). */
int dpo__sco_ckpt_save(const dpo__sco_t *c, dpo_ckpt_t *w);
int dpo__sco_ckpt_load(const dpo_solver_t *s, const dpo__sco_t *c, const dpo_ckpt_t *r,
                       int disjoint, const char *who);
/* The phased methods' checkpoint (Phased-SGD, Phased-ERM), taken between phases: the common
 * constants above, the phase plan (k, eta, z: recomputed from the config and only checked on
 * load) and the next phase's offset in the public order (read back into *off, checked to lie
 * in 0..n).  One disjoint pass: a journal with a charge after the checkpoint is refused. */
int dpo__sco_phase_save(const dpo__sco_t *c, dpo_ckpt_t *w, int k, double eta, double z,
                        int64_t off);
int dpo__sco_phase_load(const dpo_solver_t *s, const dpo__sco_t *c, const dpo_ckpt_t *r, int k,
                        double eta, double z, int64_t *off, const char *name);
/* Batch of the ids perm[off .. off + m) (sorted copy in c->ids). */
dpo_batch_t dpo__sco_batch(dpo__sco_t *c, int64_t off, int64_t m);
/* Euclidean projection onto the ball of radius D/2 around 0. */
void dpo__sco_project(double *x, int32_t d, double D);
/* Public permutation of 0..n-1 from a seed (Fisher-Yates on splitmix64). */
void dpo__sco_shuffle(int64_t *p, int64_t n, uint64_t seed);

/* Snowball batch sizes (003): kind 0 = Thm 3.5 / Thm 5.4 (constant step):
 * B_t = ceil(2 sqrt(d / (T - t + 1)) / rho); kind 1 = Thm 3.6 (JNN steps):
 * B_t = ceil(4 sqrt(3 d / (T - t + 1)) / rho) (the proof's condition B_t^2 >= 48 d /
 * ((T-t+1) rho^2)).  t = 1..T stored at B[t-1].  Returns n = sum B_t. */
int64_t dpo__sco_snowball(int kind, int64_t T, int32_t d, double rho, int64_t *B);
/* JNN step sizes (003 Def. 3.3) eta_t = c 2^-i / sqrt(T) for T_i < t <= T_{i+1}. */
void dpo__sco_jnn(int64_t T, double c, double *eta);

/* ---- localization phases (003 Alg. 2 / Alg. 3; sco_erm.c), shared by phased-erm and the
 * strongly convex algorithms of sco_sc.c ---- */

/* Solve of one Phased-ERM phase objective (003 Alg. 3, line 4):
 *   F_i(w) = F_batch(w) + reg ||w - center||^2  over K (ball of diameter D around 0),
 * F_batch = the oracle's mean (clipped) loss over the batch plus the model's regularizer.
 * Deterministic projected gradient descent, step 1/M with M = beta + 2 reg (beta: public
 * smoothness of F_batch), from w (in: start, out: solution), for exactly `iters` steps (one
 * oracle call each).  dpo__sco_erm_iters gives the count from public constants only: the
 * number of steps after which F_i(w) - min_K F_i <= target is guaranteed for
 * mu-strongly convex F_i (mu = mu_model + 2 reg), derivation in sco_erm.c; DPO_EINVAL when it
 * exceeds maxit (decided before any data are touched). */
typedef struct {
  int64_t iters; /* gradient evaluations */
} dpo__sco_erm_info_t;
int dpo__sco_erm_iters(double beta, double reg, double mu_model, double D, double target,
                       int64_t maxit, int64_t *iters);
int dpo__sco_erm_solve(dpo_oracle_t *o, const dpo_batch_t *b, const double *center, double reg,
                       double beta, double D, int64_t iters, double *w,
                       dpo__sco_erm_info_t *info);

/* One phase: either PSGD (Alg. 2 line 4: one pass, one example per step, step eta; output the
 * average iterate, weighted by gamma_t = (1 - eta wlam)^-t when wlam > 0, 003 Lemma 5.2) or
 * the regularized ERM of Alg. 3 line 4 (reg = 1/(eta m), accuracy L^2 eta / m); then
 * w = output + N(0, sigma^2 I).  The ledger is charged for the release (Gaussian, L2
 * sensitivity sens, sampling "disjoint", group 1: the phases use disjoint examples) BEFORE
 * any data-dependent computation of the phase.  mu_model: the model's public strong
 * convexity (for the step count), maxit: cap on the ERM solver's public step count. */
typedef struct {
  int erm;
  int64_t off, m;     /* the examples perm[off .. off + m) */
  double eta, wlam;
  double sens, sigma;
} dpo__sco_phase_t;
int dpo__sco_phase_run(dpo_solver_t *s, dpo__sco_t *c, const dpo__sco_phase_t *ph, int64_t step,
                       double *x, double mu_model, int64_t maxit, dpo__sco_erm_info_t *info);

/* ---- multi-party runs (dpopt/parties.h) for the algorithms whose release is the noised SUM of
 * per-example gradients over a batch (dp-sgd-rdp, pnsgd).  Every release is charged to the
 * global account AND to every party (dpo_ledger_charge_parties: all P parties, as the DP-GD
 * family charges every active one) before anything data-dependent is computed, so the journal
 * keeps per-party accounts.  By privacy.trust:
 *  - central: the plain reduce, rank 0 adds N(0, sigma^2) (the caller's Gaussian charge, which
 *    may be amplified by sampling: it holds against outsiders only, as for the DP-GD family);
 *  - local: every rank with rows in the batch adds its own exact grid Gaussian of the CHARGED
 *    sigma to its own partial sum before the reduce (DPO_ONOISE_LOCAL_GAUSSIAN, its own noise
 *    stream), so against the coordinator each party's sum alone carries the charged noise; the
 *    coordinator draws the batch, so the caller must charge it un-amplified (sampling none or
 *    disjoint); the sum then carries sqrt(ranks) sigma;
 *  - secagg (src/privacy/secagg.c): every rank encodes its part of the sum, every party leader
 *    adds a discrete Gaussian share, the pairwise masks cancel in the reduce
 *    (DPO_ONOISE_SECAGG); the charge is the KLS 2021 Thm 1 rho with the P - k honest shares
 *    (rho_target: each release's rdp-rho target), never amplified; except with party-local
 *    sampling (dpo__sco_parties_setup_sampled), where the coordinator draws no batch.
 * sens: the L2 sensitivity of the sum (dpo_sens(relation, L)).  setup: sa->on = 0 outside a
 * multi-party run, sa->trust the mode. */
typedef struct {
  int on, trust;
  int32_t d;
  double sens, gamma, rho, sd; /* secagg. sd: std of the total noise on the sum, gamma sigma sqrt(P) */
  uint64_t sigma;
  int np, size;
  int *plist;
  /* secagg with party-local Poisson sampling (dpo__sco_parties_setup_sampled) */
  int local;
  int64_t lm, ln;   /* every rank keeps each of its rows with probability lm / ln */
  double sigma_h;   /* the honest shares' noise gamma sigma sqrt(P - k): the charge's scale */
} dpo__sco_sa_t;
int dpo__sco_parties_setup(dpo_solver_t *s, double sens, double rho_target, dpo__sco_sa_t *sa);
/* secagg, add-remove, Poisson batches drawn by every party on its own rows (src/privacy/secagg.c
 * "party-local sampling"): gamma and sens_c from dpo_secagg_fine_step, sigma_target the noise
 * the honest shares must carry (central's sigma at sensitivity sens_c), m / n_pub the public
 * rate.  Every release is then charged as central charges it -- a Gaussian of noise_scale
 * sa->sigma_h (>= sigma_target), sensitivity sens_c, sampling poisson (m, n_pub) -- to the
 * global account and every party; no batch or row count reaches the coordinator. */
int dpo__sco_parties_setup_sampled(dpo_solver_t *s, double gamma, double sens_c,
                                   double sigma_target, int64_t m, int64_t n_pub,
                                   dpo__sco_sa_t *sa);
void dpo__sco_secagg_free(dpo__sco_sa_t *sa);
/* Charge, then release: gsum = the noised sum over the batch.  ch: the Gaussian charge of the
 * release (central, local: charged as is; its noise_scale is the sigma added, by rank 0 or by
 * every party); under secagg only its sampling, group, m, n and step are used (the charge is
 * rdp-rho; with party-local sampling b is ignored and the charge is the Poisson Gaussian of
 * dpo__sco_parties_setup_sampled). */
int dpo__sco_parties_sum(dpo_solver_t *s, dpo__sco_sa_t *sa, const double *x,
                         const dpo_batch_t *b, const dpo_charge_t *ch, double *gsum);

/* Gaussian noise for sensitivity sens at multiplier z, widened so that the ledger's snapped
 * sensitivity sens + sqrt(d) Lambda (Lambda < 2^-39 sigma) still gives a multiplier >= z. */
double dpo__sco_sigma(double z, double sens, int32_t d);

#endif
