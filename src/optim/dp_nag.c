/* DP-NAG and DP-NAG-opt (001, Sec. 4.1).
 *   z_t = (1 + beta) x_t - beta x_{t-1},  x_{t+1} = z_t - alpha (grad F_{B_t}(z_t) + eta_t)  (4.1)
 * alpha = c / L (algo.c / algo.alpha), beta = (1 - sqrt(alpha mu)) / (1 + sqrt(alpha mu))
 * (Thm 4.1, Sec. 5; algo.beta overrides; mu = 0 falls back to t / (t + 3)).
 *  dp-nag      every step spends eps / T: b = S1 / (m eps0), eps0 from (3.5).
 *  (both: with delta > 0 the shares are scaled by one factor c to the ledger's composition,
 *  dpo__dp_calibrate, keeping the relative allocation)
 *  dp-nag-opt  the budget follows the optimal allocation of (4.4): with
 *              a_{T,t} = (1 - sqrt(mu alpha))^{T-t} alpha (1 + alpha L) (Thm 4.1),
 *              b_t = sum_j a_{T,j}^{1/3} S1 / (a_{T,t}^{1/3} n eps) when m = n (Prop. 4.2, (4.5));
 *              for m < n (4.4) is solved numerically (dpo__dp_opt_schedule, which reduces to
 *              (4.5) at m = n).  T itself is replaced by the T' <= T minimising the bound (4.6)
 *              for the public guess E0 = algo.E0 (default 10, Remark 4.1; algo.choose_T = 0
 *              keeps T).  Iteration t of the paper (1-based) is driver step t - 1.
 *              Its default momentum is capped at 0.9 (see dpnag_create_mode). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/dp_common.h"
#include "optim/ckpt_int.h"

#define DPO__NAG_OPT_BETA_MAX 0.9

typedef struct {
  dpo__dp_t *dp;
  double alpha, beta; /* beta NAN: t / (t + 3) */
  double e;           /* uniform share (dp-nag) */
  double *es;         /* per-step shares (dp-nag-opt), length Tuse */
  int64_t Tuse;
  int started;
  double *g, *xprev, *z;
} dpo__dpnag_t;

static void dpnag_destroy(void *st) {
  dpo__dpnag_t *a = st;
  if (!a) return;
  dpo__dp_destroy(a->dp);
  free(a->es);
  free(a->g);
  free(a->xprev);
  free(a->z);
  free(a);
}

/* The dp-nag-opt shares for T steps (also used by the tests through dpo__dp_opt_schedule). */
static int dpnag_opt_plan(dpo__dpnag_t *a, dpo_solver_t *s) {
  dpo__dp_t *dp = a->dp;
  double E0 = 10.0, p[3] = {a->alpha, dp->mu, dp->L};
  int64_t choose = 1;
  int rc;
  if ((rc = dpo_solver_param(s, "E0", 10.0, &E0)) ||
      (rc = dpo_solver_param_int(s, "choose_T", 1, &choose)))
    return rc;
  if (!(dp->mu > 0) || !(dp->L > 0) || !(a->alpha * dp->mu < 1))
    return dpo_err(DPO_EINVAL, "dp-nag-opt needs mu > 0, a declared L (data.row_l2_bound) and "
                   "alpha mu < 1 for the weights a_{T,t} of (Kuru et al. 2022, Thm 4.1)");
  if (!(E0 >= 0) || !isfinite(E0)) return dpo_err(DPO_EINVAL, "algo.E0 = %g must be >= 0", E0);
  if (dp->fixed_b > 0)
    return dpo_err(DPO_EINVAL, "dp-nag-opt allocates the budget itself: drop algo.noise");
  a->Tuse = choose ? dpo__dp_best_T(dp->T, E0, dp->d, dp->S1, dp->n, dp->eps, dpo__dp_nag_loga, p)
                   : dp->T;
  double *w = malloc((size_t)a->Tuse * sizeof *w);
  a->es = malloc((size_t)a->Tuse * sizeof *a->es);
  if (!w || !a->es) {
    free(w);
    return dpo_err(DPO_ENOMEM, "dp-nag-opt: out of memory");
  }
  for (int64_t k = 0; k < a->Tuse; k++) w[k] = exp(dpo__dp_nag_loga(a->Tuse, k + 1, p));
  rc = dpo__dp_opt_schedule(w, a->Tuse, dp->S1, dp->n, dp->m, dp->eps, NULL, a->es);
  /* exact budget: rescale the numerical shares so that their exact sum is <= eps */
  if (!rc) rc = dpo__dp_split_weighted(dp->eps, a->es, a->Tuse, a->es);
  /* with delta > 0: the same allocation, scaled to the ledger's composition */
  if (!rc) rc = dpo__dp_calibrate(dp, 1.0, a->es, a->Tuse, a->Tuse);
  free(w);
  return rc;
}

static int dpnag_create_mode(dpo_solver_t *s, void **state, int opt) {
  int rc;
  dpo__dpnag_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "dp-nag: out of memory");
  if ((rc = dpo__dp_create(s, opt, &a->dp))) goto fail;
  if ((rc = dpo__optim_step(s, "alpha", a->dp->c, &a->alpha, NULL))) goto fail;
  if ((rc = dpo_solver_param(s, "beta", NAN, &a->beta))) goto fail;
  if (isnan(a->beta) && a->dp->mu > 0) {
    double r = sqrt(a->alpha * a->dp->mu);
    a->beta = r < 1 ? (1.0 - r) / (1.0 + r) : 0.0;
    /* dp-nag-opt: at most DPO__NAG_OPT_BETA_MAX.  With mu = 2 lambda small (1e-4: beta =
     * 0.985) the momentum sums the Laplace noise of ~1/(1 - beta) steps, and the T' of (4.6),
     * whose contraction 1 - sqrt(alpha mu) is just as slow, grows with eps (a9a: T' = 20 at
     * eps = 1, 168 at eps = 10): the run at eps = 10 ended worse than at eps = 1 (issue 13).
     * The cap keeps (4.4)-(4.6) (they read alpha, mu, L, not beta) and makes accuracy monotone
     * in eps (README, "dp-nag-opt and eps"). */
    if (opt && a->beta > DPO__NAG_OPT_BETA_MAX) a->beta = DPO__NAG_OPT_BETA_MAX;
  } else if (!isnan(a->beta) && !(a->beta >= 0 && a->beta < 1)) {
    rc = dpo_err(DPO_EINVAL, "dp-nag: algo.beta = %g must be in [0, 1)", a->beta);
    goto fail;
  }
  a->Tuse = a->dp->T;
  if (opt) {
    if ((rc = dpnag_opt_plan(a, s))) goto fail;
  } else if (a->dp->fixed_b == 0 &&
             ((rc = dpo_privacy_split(a->dp->eps, a->dp->T, &a->e)) ||
              (rc = dpo__dp_calibrate(a->dp, 1.0, &a->e, 1, a->dp->T)))) {
    goto fail;
  }
  size_t nb = (size_t)dpo_solver_dim(s) * sizeof(double);
  a->g = malloc(nb);
  a->xprev = malloc(nb);
  a->z = malloc(nb);
  if (!a->g || !a->xprev || !a->z) {
    rc = dpo_err(DPO_ENOMEM, "dp-nag: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  dpnag_destroy(a);
  return rc;
}

static int dpnag_create(dpo_solver_t *s, void **st) { return dpnag_create_mode(s, st, 0); }
static int dpnagopt_create(dpo_solver_t *s, void **st) { return dpnag_create_mode(s, st, 1); }

static int dpnag_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__dpnag_t *a = st;
  double *x = dpo_solver_x(s);
  const int32_t d = a->dp->d;
  if (!a->started) {
    memcpy(a->xprev, x, (size_t)d * sizeof *x);
    a->started = 1;
  }
  if (a->es && t >= a->Tuse) {
    *done = 1; /* schedule finished (T' < T): nothing is spent or released */
    return DPO_OK;
  }
  double beta = isnan(a->beta) ? (double)t / ((double)t + 3.0) : a->beta;
  for (int32_t j = 0; j < d; j++) a->z[j] = (1.0 + beta) * x[j] - beta * a->xprev[j];
  int rc = dpo__dp_grad(a->dp, a->z, t, a->es ? a->es[t] : a->e, 1.0, a->g, NULL);
  if (rc) return rc;
  for (int32_t j = 0; j < d; j++) {
    a->xprev[j] = x[j];
    x[j] = a->z[j] - a->alpha * a->g[j];
  }
  if (a->es && t + 1 >= a->Tuse) *done = 1;
  return DPO_OK;
}

/* checkpoint: x_{t-1} and the per-step budget shares of dp-nag-opt (restored as planned) */
static int dpnag_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__dpnag_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_save(a->dp, w)) || (rc = dpo_ckpt_put_double(w, "e", a->e)) ||
      (rc = dpo_ckpt_put_int(w, "Tuse", a->Tuse)) ||
      (rc = dpo_ckpt_put_f64(w, "es", a->es, a->es ? a->Tuse : 0)) ||
      (rc = dpo__ckpt_put_momentum(w, a->alpha, a->beta, a->started, a->xprev, a->dp->d)))
    return rc;
  return DPO_OK;
}
static int dpnag_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__dpnag_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_load(a->dp, r)) || (rc = dpo__ckpt_check_double(r, "e", a->e)) ||
      (rc = dpo__ckpt_check_int(r, "Tuse", a->Tuse)) ||
      (rc = dpo_ckpt_get_f64(r, "es", a->es, a->es ? a->Tuse : 0)))
    return rc;
  return dpo__ckpt_get_momentum(r, a->alpha, a->beta, &a->started, a->xprev, a->dp->d);
}

#define DPNAG_PARAMS                                                                         \
  {"alpha", "c/L", "step size"},                                                              \
  {"beta", "(1 - sqrt(alpha mu))/(1 + sqrt(alpha mu)); mu = 0: t/(t+3)", "momentum"}
static const dpo_algo_param_t dpnag_params[] = {DPNAG_PARAMS, {NULL, NULL, NULL}};
static const dpo_algo_param_t dpnagopt_params[] = {
    {"alpha", "c/L", "step size"},
    {"beta", "min(0.9, (1 - sqrt(alpha mu))/(1 + sqrt(alpha mu))); mu = 0: t/(t+3)", "momentum"}, {"E0", "10", "public guess of F(x_0) - F* for T' (Kuru et al. 2022, Remark 4.1)"},
    {"choose_T", "1", "1: run the T' <= T minimising (4.6); 0: keep T"}, {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_dp_nag = {"dp-nag", "DP Nesterov accelerated gradient (Kuru et al. 2022, (4.1))", 1,
                                     dpnag_create, dpnag_step, dpnag_destroy, dpnag_save,
                                     dpnag_load, dpnag_params, dpo__dp_params, "alpha", NULL, 0, 0, 0, NULL};
const dpo_algo_t dpo__algo_dp_nag_opt = {
    "dp-nag-opt", "DP-NAG with the optimal noise b_t of (Kuru et al. 2022, Prop. 4.2) and T of (4.6)", 1,
    dpnagopt_create, dpnag_step, dpnag_destroy, dpnag_save, dpnag_load, dpnagopt_params,
    dpo__dp_params, "", "", 0, 0, 0, NULL};
