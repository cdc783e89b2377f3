/* Shared machinery of the private algorithms (dp_*.c), rank 0 only.
 *
 * Units.  The oracle returns MEANS over a batch of m rows (m = n: full batch), so every
 * sensitivity here is that of a batch mean: one example changes the mean data-term gradient
 * by at most S1/m in L1 (001, (3.2) and Sec. 5), where S1 is the public per-example constant
 * (replace-one neighbours):
 *   privacy.clip = l1:C  ->  S1 = 2 C            (clipped gradients have ||.||_1 <= C)
 *   privacy.clip = l2:C  ->  S1 = 2 C sqrt(d)    (||v||_1 <= sqrt(d) ||v||_2)
 *   data.row_l1_bound B1 ->  S1 = dpo_model_grad_l1_sens(model, B1)  (logistic: 2 B1, (5.2))
 * (the smallest of those that apply), and S2 (the L2 analogue, used only by the noise-aware
 * step sizes of the thesis) = 2 C, 2 B2 (data.row_l2_bound) or 2 B1.
 * Add-remove neighbours (privacy.neighbours = add-remove): full batch, one owner only.  One
 * row added or removed moves the batch SUM by the per-example bound itself (S1 = C, B1 ...:
 * dpo_sens), but the row count is private, so n (and m = n) is the public size n_pub of
 * dpo__public_n (privacy.public_n, or a noisy count charged first, whose eps the schedule no
 * longer spends) and the mean is sum / n_pub: a public rescaling of the released sum.  The
 * papers' amplification of m-of-n batches is proved for replace-one only.  The thesis writes its
 * objective as a SUM over the data set (000, (4.60)); a batch mean with sensitivities S/m is
 * the same algorithm with the gradient scaled by 1/m (see each step-size formula).
 *
 * One private step (dpo__dp_grad): draw the batch (m of n GLOBAL ids without replacement,
 * sorted, from the solver's stream: the sample never depends on the rank count), turn the
 * step's privacy target into the mechanism's own eps0 (inverse of the accountant), take the
 * Laplace scale b from dpo_mech_laplace_scale (so the grid inflation is paid for), CHARGE THE
 * LEDGER, and only then evaluate: g = w * (batch-mean data gradient) + Laplace(b) + w * grad
 * of the regularizer.  A refused charge returns DPO_EBUDGET before anything data-dependent is
 * computed or broadcast; the driver then keeps the last released iterate.
 */
#ifndef DPO_OPTIM_DP_COMMON_H
#define DPO_OPTIM_DP_COMMON_H

#include <stdint.h>

#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"

enum { DPO__DP_ACC_SUBSAMPLED = 0, DPO__DP_ACC_THESIS2G = 1 };
enum { DPO__DP_SAMPLE_WOR = 0, DPO__DP_SAMPLE_DISJOINT = 1 };

typedef struct {
  dpo_solver_t *s;
  int32_t d;
  int64_t n, m;        /* m = n: full batch; under add-remove n = m = the public size n_pub */
  int64_t n_held;      /* the rows the oracle holds (dpo_solver_n): private under add-remove */
  dpo_neighbours_t rel;
  double count_eps, count_b; /* add-remove without privacy.public_n: the noisy count's charge */
  int64_t T;           /* planned iterations (algo.iters, default 100) */
  double eps;          /* privacy.eps (less count_eps): the budget the schedule spends */
  double S1, S2;       /* public per-example sensitivities (L1, L2) */
  double L, mu;        /* public constants (L NAN when data.row_l2_bound is not declared) */
  double lambda;
  double c;            /* algo.c: step scale, alpha = c / L (001 Sec. 5) */
  double fixed_b;      /* algo.noise > 0: fixed Laplace scale, the run stops when refused */
  int accounting;      /* DPO__DP_ACC_* (algo.accounting) */
  int sampling;        /* DPO__DP_SAMPLE_* */
  /* disjoint buckets (DP-onlineGDwS): a public random permutation of the ids */
  int64_t *perm;
  int64_t nbuckets;
  /* scratch */
  int64_t *ids, *hash;
  int64_t hcap;
  double *gs;
  int calibrate;        /* privacy.calibrate: 1 ledger (default), 0 basic */
  double calib_c;       /* the factor dpo__dp_calibrate applied (1: none) */
  /* multi-party runs: the plan dpo__dp_calibrate saw (releases, sum of squared shares), from
   * which secagg's Gaussian releases take their rdp-rho (dpo__dp_secagg_rho) */
  int64_t plan_T;
  double plan_e2;
  /* last step, for tests and the journal */
  double last_b, last_eps0, last_charged, last_delta1;
  /* multi-party runs (dpo_oracle_parties() != NULL; see dpopt/parties.h and dpo__dp_grad):
   * which parties still take part, their global row ranges, and the rows they hold */
  const dpo_parties_t *parties;
  int *active, *plist;  /* [count]: 1 while party k takes part; scratch list of active ids */
  int64_t *prow0, *pn;  /* [count] */
  int nactive;
  int64_t n_active;
  /* one meeting a step (dp_step1.c): on in this run; a worker's copy of rank 0's stream */
  int one;
  dpo_rng_t *rng1;
} dpo__dp_t;

/* Read privacy.eps, privacy.clip (through the oracle), data.row_l1_bound / row_l2_bound,
 * algo.m, algo.iters, algo.c, algo.noise, algo.accounting; need_L = 1 fails without a
 * declared L2 row bound.  Rank 0 (called from an algorithm's create()). */
int dpo__dp_create(dpo_solver_t *s, int need_L, dpo__dp_t **dp);
/* Public sensitivities of one rank's gradient sum (privacy rule 1): L1 *S1 and L2 *S2 from the
 * clip, the declared row bounds B1, B2 (NAN: none) and the relation; INFINITY when none
 * applies.  The DP-GD family's, and every party's own under secagg (the party guard). */
void dpo__dp_public_sens(const dpo_model_t *model, const dpo_clip_t *clip,
                         dpo_neighbours_t rel, double B1, double B2, int64_t d, double *S1,
                         double *S2);
/* The refusals of dpo__dp_create that need no data (dpo_algo_check): the relation (add-remove:
 * one owner, and not the minibatch methods of algo, may be NULL) and a public sensitivity
 * source.  Not collective. */
int dpo__dp_check(const dpo_config_t *cfg, const dpo_model_t *model, const dpo_clip_t *clip,
                  dpo_neighbours_t rel, const char *algo);
/* The keys dpo__dp_create reads: the `shared` table of every dp-* algorithm (optim.h). */
extern const dpo_algo_param_t dpo__dp_params[];
void dpo__dp_destroy(dpo__dp_t *dp);

/* Switch to disjoint buckets of size m from a public random permutation (DP-onlineGDwS):
 * nbuckets = floor(n / m); bucket t is charged with sampling "disjoint" (parallel
 * composition: every bucket may spend the whole eps). */
int dpo__dp_use_disjoint(dpo__dp_t *dp);

/* Mechanism eps0 (before amplification) for a per-step target eps_target (after it), for the
 * step's sampling and accounting; rounded down so the accountant's value never exceeds the
 * target. */
int dpo__dp_eps0(const dpo__dp_t *dp, double eps_target, double *eps0);

/* The private step described above, at x, step number t.  eps_target: this step's share of
 * the budget (ignored with algo.noise).  w: weight of the fresh gradient (1, or beta for the
 * smoothed gradients of the thesis: the released quantity is w grad + noise, sensitivity
 * w S1 / m).  g (length d) receives w grad F_B(x) + eta.  *b_out (may be NULL) gets b. */
int dpo__dp_grad(dpo__dp_t *dp, const double *x, int64_t t, double eps_target, double w,
                 double *g, double *b_out);

/* g += w (the regularizer's gradient at x): public given x, added after the noise. */
void dpo__dp_add_reg(dpo__dp_t *dp, const double *x, double w, double *g);

/* dp_step1.c, every rank: dpo__dp_grad's step with one meeting of the ranks (dp->one), the
 * full batch, after the step's charge c was computed (st: its status; every rank computes the
 * same c from the same public numbers).  Rank 0 charges c before the meeting, whose sums every
 * rank noises from its copy of the stream; a worker whose meetings ended (or that failed: its
 * status goes in the next meeting) gets g = 0 and DPO_OK. */
int dpo__dp_grad1(dpo__dp_t *dp, const double *x, int64_t t, int st, const dpo_charge_t *c,
                  double w, double *g, double *b_out);

/* dp_step1.c, every rank, collective (an algorithm's dpo_algo_t.step1): rank 0 (dp: its state,
 * on: its run may take one meeting a step) decides: no parties, the full batch, a ledger, the
 * oracle able (comm/step1.h); then *max_iter, the algorithm's npub public numbers pub, its DP
 * state's numbers, x and its stream's state go to the other ranks, whose *copy (a DP state
 * with the stream's copy) the algorithm wraps; lrc, a rank's status (its wrapper's memory),
 * is agreed on with theirs.  *one = 1 on every rank when on. */
int dpo__dp_step1_begin(dpo_solver_t *s, dpo__dp_t *dp, int on, int lrc, int64_t *max_iter,
                        double *pub, int npub, dpo__dp_t **copy, int *one);

/* Tighter accounting (privacy.calibrate = ledger, the default).  The shares e of a per-step
 * plan (e[t], or e[0] for every step when ne == 1; T steps; weight w as in dpo__dp_grad) come
 * from basic composition (sum = eps).  With delta > 0 the ledger composes the same releases
 * to much less (accountant auto: RDP of the pure releases, acct_auto.c), so they are scaled
 * by the largest c (bisection to 1e-6 relative) for which a fresh in-memory ledger with the
 * run ledger's accountant, relation and budget (privacy.eps, ledger delta) ACCEPTS every
 * charge of the plan, built by the same function as dpo__dp_grad's charges: a c the ledger
 * would refuse is never returned (lo is always an accepted c).  The relative allocation (e.g.
 * dp-nag-opt's (001, (4.4))) is kept.  Public: the plan and the budget only.  No-op (c = 1)
 * with delta = 0, privacy.calibrate = basic, algo.noise, disjoint buckets or parties.  On
 * c > 1 the plan's "what" says so.  Call before anything that uses the shares (steps). */
int dpo__dp_calibrate(dpo__dp_t *dp, double w, double *e, int64_t ne, int64_t T);

/* Per-step shares of eps proportional to weights wt[0..T-1] (> 0), scaled down by 1e-12
 * relative and checked in long double so that their exact sum never exceeds eps. */
int dpo__dp_split_weighted(double eps, const double *wt, int64_t T, double *e);

/* Optimal budget allocation of (001, (4.4)) for weights a[0..T-1] (a_{T,1..T}):
 *   minimise sum a_t b_t^2  s.t.  sum ln(1 + (m/n)(e^{S/(b_t m)} - 1)) = eps   ((3.3))
 * solved numerically from the stationarity condition a_t b_t^3 g(b_t) = lambda with
 * g(b) = 1 + (n/m - 1) e^{-S/(b m)} (increasing in b; g = 1 when m = n, giving (4.5)).
 * b[t] (may be NULL) gets the Laplace scale of the mean gradient, e[t] the step's privacy
 * loss; sum e = eps to ~1e-13 relative. */
int dpo__dp_opt_schedule(const double *a, int64_t T, double S1, int64_t n, int64_t m, double eps,
                         double *b, double *e);

/* Remark 4.1: the T' in [1, Tmax] minimising the bound (4.6)
 *   a_{T',0} E0 + d S1^2 / (n^2 eps^2) (sum_{j=1}^{T'} a_{T',j}^{1/3})^3
 * for log-weights given by la(T', j, arg) = ln a_{T',j} (j = 0..T'). */
int64_t dpo__dp_best_T(int64_t Tmax, double E0, int32_t d, double S1, int64_t n, double eps,
                       double (*la)(int64_t Tp, int64_t j, void *arg), void *arg);

/* ln a_{T,t} of (001, Thm 4.1 / (4.3)) for NAG: (1 - sqrt(mu alpha))^T (t = 0),
 * (1 - sqrt(mu alpha))^{T-t} alpha (1 + alpha L) (t >= 1).  arg: double[3] = {alpha, mu, L}. */
double dpo__dp_nag_loga(int64_t T, int64_t t, void *arg);

/* Multistage schedule of (Kuru et al. 2022, (4.7)) with the stage of every iteration precomputed for
 * (001, Thm 4.3): stage[i], alpha[i] for i = 1..Tmax (paper indexing; iteration i of the paper
 * is step i - 1 of the driver). */
typedef struct {
  int64_t Tmax;
  int *stage;       /* [Tmax + 1] */
  double *alpha;    /* [Tmax + 1] */
  double *logq;     /* prefix sums: logq[i] = sum_{j<=i} ln(1 - sqrt(mu alpha_j)) */
  double mu, L;
} dpo__dp_stages_t;
int dpo__dp_stages_create(int64_t Tmax, int64_t n1, double kappa, double p, double alpha1,
                          double mu, double L, dpo__dp_stages_t **st);
void dpo__dp_stages_destroy(dpo__dp_stages_t *st);
/* ln a_{T,t} of (001, Thm 4.3, (4.8)); arg: dpo__dp_stages_t. */
double dpo__dp_masg_loga(int64_t T, int64_t t, void *arg);

/* qsort's comparison of int64_t ids, ascending (dp_sample.c). */
int dpo__dp_cmp_i64(const void *a, const void *b);
/* Fill ids[0..m-1] with m distinct sorted ids of [0, n), uniform (Floyd's algorithm).
 * hash: scratch of hcap >= 2m entries (power of two). */
void dpo__dp_sample(dpo_rng_t *rng, int64_t n, int64_t m, int64_t *ids, int64_t *hash,
                    int64_t hcap);

#endif
