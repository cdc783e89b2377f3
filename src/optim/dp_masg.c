/* Multistage private methods: DP-MASG and DP-MASG-opt (001, Sec. 4.2), DP-MAG and DP-SMAG
 * (000, Sec. 4.2.2 Alg. 5 and Sec. 4.3.2 Alg. 7).  All run NAG in stages with the lengths of
 * (Kuru et al. 2022, (4.7)) = (000, (4.38)): n_1 (algo.n1, default ceil(2 sqrt(kappa) ln sqrt(kappa)) as in
 * masg.c), n_k = 2^k ceil(sqrt(kappa) ln 2^(p+2)) (algo.p, default 1), restarting the momentum
 * at each stage (x_{-1}^k = x_0^k = last iterate of stage k - 1).
 *  dp-masg      steps alpha_1 = c/L, alpha_k = c/(2^{2k} L) (4.7), beta_k = (1 - sqrt(mu
 *               alpha_k)) / (1 + sqrt(mu alpha_k)) (001 Sec. 5), uniform budget eps/T.
 *  dp-masg-opt  the same stages and steps, budget by (4.4) with the weights of Thm 4.3
 *               a_{T,t} = 2^{s_T - s_t} prod_{i>t} (1 - sqrt(mu alpha^{(s_i)})) alpha^{(s_t)}
 *               (1 + alpha^{(s_t)} L), and T' <= T minimising the bound of Remark 4.1 with
 *               those weights (E0 = algo.E0, default 10).
 *  dp-mag       thesis Alg. 5: K = number of stages met in T iterations (the last one
 *               truncated), eps_k = eps/K per stage and eps_k / n_k per iteration (4.40)-(4.41);
 *               beta = (1 - sqrt(mu/L)) / (1 + sqrt(mu/L)) (Alg. 5 line 10); the noise-aware
 *               step (4.43)
 *                 alpha_k = c / (2^{2(k+1)} 2 L) ((s2^2/(4d) + 2 s1^2/eps0^2) / (1 - beta^2))^{-1/2}
 *               where eps0 = eps/(n_k K) is the step's mechanism eps and s1 = S1/m, s2 = S2/m
 *               are the sensitivities of the gradient the iteration uses (the batch mean):
 *               (4.42) sets the step from Var of that noisy gradient, whose Laplace part has
 *               variance 2 (S1/(m eps0))^2 per coordinate (the units dp-gdws uses for (4.21)).
 *               (4.43) is not invariant under scaling the objective; read in the thesis's SUM
 *               units (L of the sum, per-example S1) it gives alpha ~ 4e-7 on a9a (eps = 1,
 *               T = 100): x never leaves 0 and the output is the majority class.  The step is
 *               capped by the M-ASG step of (4.38) (c/L, then c/(2^{2k} L)) that (4.43) refines.
 *  dp-smag      thesis Alg. 7 (requires m < n): the same with minibatches, eps0 from (4.57)
 *               (thesis-2gamma) or (001, (3.5)), and step (4.59): the variance term becomes
 *               s2^2/(4d) m (1 - (m-1)/(n-1)) + 2 s1^2/eps0^2 (same units, s = S/m).
 *               dp-mag with m < n runs the same method. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/dp_common.h"
#include "optim/ckpt_int.h"

enum { MASG = 0, MASG_OPT = 1, MAG = 2, SMAG = 3 };

typedef struct {
  dpo__dp_t *dp;
  int mode;
  double alpha1, kappa, p, beta_fixed;
  int64_t n1, Tuse;
  double *es;       /* per-step shares [Tuse] */
  double *alpha_k;  /* dp-mag: step per stage [K + 1] */
  int K;
  double *g, *xprev, *z;
} dpo__dpmasg_t;

static void dpmasg_destroy(void *st) {
  dpo__dpmasg_t *a = st;
  if (!a) return;
  dpo__dp_destroy(a->dp);
  free(a->es);
  free(a->alpha_k);
  free(a->g);
  free(a->xprev);
  free(a->z);
  free(a);
}

static void stage_of(const dpo__dpmasg_t *a, int64_t t, int *k, double *alpha, int64_t *start,
                     int64_t *len, int *first) {
  dpo__masg_schedule(t, a->n1, a->kappa, a->p, a->alpha1, k, alpha, len, first);
  /* start of the stage: walk back is cheap enough only via the schedule itself */
  if (start) {
    int64_t s0 = 0, n = a->n1;
    int kk = 1;
    while (kk < *k) {
      s0 += n;
      kk++;
      int st2, fi;
      double al;
      dpo__masg_schedule(s0, a->n1, a->kappa, a->p, a->alpha1, &st2, &al, &n, &fi);
    }
    *start = s0;
  }
}

static int plan_opt(dpo__dpmasg_t *a, dpo_solver_t *s) {
  dpo__dp_t *dp = a->dp;
  double E0 = 10.0;
  int64_t choose = 1;
  int rc;
  dpo__dp_stages_t *st = NULL;
  double *w = NULL;
  if ((rc = dpo_solver_param(s, "E0", 10.0, &E0)) ||
      (rc = dpo_solver_param_int(s, "choose_T", 1, &choose)))
    return rc;
  if (dp->fixed_b > 0)
    return dpo_err(DPO_EINVAL, "dp-masg-opt allocates the budget itself: drop algo.noise");
  if (!(a->alpha1 * dp->L <= 1.0 + 1e-12))
    return dpo_err(DPO_EINVAL, "dp-masg-opt: Thm 4.3 of Kuru et al. 2022 needs alpha^{(k)} <= 1/L (c <= 1)");
  if ((rc = dpo__dp_stages_create(dp->T, a->n1, a->kappa, a->p, a->alpha1, dp->mu, dp->L, &st)))
    return rc;
  a->Tuse = choose ? dpo__dp_best_T(dp->T, E0, dp->d, dp->S1, dp->n, dp->eps, dpo__dp_masg_loga,
                                    st)
                   : dp->T;
  w = malloc((size_t)a->Tuse * sizeof *w);
  a->es = malloc((size_t)a->Tuse * sizeof *a->es);
  if (!w || !a->es) {
    rc = dpo_err(DPO_ENOMEM, "dp-masg-opt: out of memory");
    goto out;
  }
  for (int64_t k = 0; k < a->Tuse; k++) w[k] = exp(dpo__dp_masg_loga(a->Tuse, k + 1, st));
  rc = dpo__dp_opt_schedule(w, a->Tuse, dp->S1, dp->n, dp->m, dp->eps, NULL, a->es);
  if (!rc) rc = dpo__dp_split_weighted(dp->eps, a->es, a->Tuse, a->es);
  if (!rc) rc = dpo__dp_calibrate(dp, 1.0, a->es, a->Tuse, a->Tuse); /* same allocation */
out:
  free(w);
  dpo__dp_stages_destroy(st);
  return rc;
}

/* dp-mag / dp-smag: per-stage budget (4.40)-(4.41) and step (4.43) / (4.59) */
static int plan_mag(dpo__dpmasg_t *a) {
  dpo__dp_t *dp = a->dp;
  int rc, k;
  int64_t T = dp->T, len, start, first_len = 0;
  int first;
  double al;
  (void)first_len;
  stage_of(a, T - 1, &a->K, &al, NULL, &len, &first);
  double ek = NAN, eps0 = NAN;
  if (dp->fixed_b == 0 && (rc = dpo_privacy_split(dp->eps, a->K, &ek))) return rc;
  a->es = malloc((size_t)T * sizeof *a->es);
  a->alpha_k = malloc((size_t)(a->K + 1) * sizeof *a->alpha_k);
  if (!a->es || !a->alpha_k) return dpo_err(DPO_ENOMEM, "dp-mag: out of memory");
  const double m = (double)dp->m, n = (double)dp->n, d = (double)dp->d;
  const double S2 = isfinite(dp->S2) ? dp->S2 : dp->S1;
  const double b2 = a->beta_fixed * a->beta_fixed;
  int64_t t = 0;
  for (k = 1; k <= a->K; k++) { /* the shares eps_k / n_k of (4.41) */
    int kk;
    stage_of(a, t, &kk, &al, &start, &len, &first);
    int64_t nk = start + len > T ? T - start : len; /* the last stage is truncated at T */
    double e = NAN;
    if (dp->fixed_b == 0 && (rc = dpo_privacy_split(ek, nk, &e))) return rc;
    for (int64_t i = 0; i < nk; i++) a->es[start + i] = e;
    t = start + nk;
  }
  /* with delta > 0 the shares are scaled to the ledger's composition before the steps (4.43)
   * are computed from them */
  if (dp->fixed_b == 0 && (rc = dpo__dp_calibrate(dp, 1.0, a->es, T, T))) return rc;
  t = 0;
  for (k = 1; k <= a->K; k++) {
    int kk;
    stage_of(a, t, &kk, &al, &start, &len, &first);
    int64_t nk = start + len > T ? T - start : len;
    const double e = a->es[start];
    if (dp->fixed_b > 0) {
      if ((rc = dpo_mech_laplace_eps(dp->S1 / m, dp->fixed_b, dp->d, &eps0))) return rc;
    } else if ((rc = dpo__dp_eps0(dp, e, &eps0))) {
      return rc;
    }
    double samp = dp->m < dp->n ? (n > 1 ? m * (1.0 - (m - 1.0) / (n - 1.0)) : 0.0) : 1.0;
    const double s1 = dp->S1 / m, s2 = S2 / m; /* the batch mean's sensitivities */
    double V = (s2 * s2 / (4.0 * d) * samp + 2.0 * s1 * s1 / (eps0 * eps0)) / (1.0 - b2);
    double alk = dp->c / (ldexp(1.0, 2 * (k + 1)) * 2.0 * dp->L) / sqrt(V); /* (4.43), (4.59) */
    double cap = dp->c / ((k == 1 ? 1.0 : ldexp(1.0, 2 * k)) * dp->L);     /* (4.38) */
    a->alpha_k[k] = alk < cap ? alk : cap;
    t = start + nk;
  }
  a->Tuse = T;
  return DPO_OK;
}

static int dpmasg_create_mode(dpo_solver_t *s, void **state, int mode) {
  int rc;
  double n1d, alpha;
  dpo__dpmasg_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "dp-masg: out of memory");
  a->mode = mode;
  if ((rc = dpo__dp_create(s, 1, &a->dp))) goto fail;
  dpo__dp_t *dp = a->dp;
  if (!(dp->mu > 0)) {
    rc = dpo_err(DPO_EINVAL, "the stages of (Kuru et al. 2022, (4.7)) need mu > 0 (lambda > 0)");
    goto fail;
  }
  /* default batch ceil(sqrt n) (public, as dp-sgdws); the common default is the full batch */
  if (mode == SMAG && !(dpo_solver_config(s) && dpo_config_get(dpo_solver_config(s), "algo.m")))
    dp->m = (int64_t)ceil(sqrt((double)dp->n));
  if (mode == SMAG && dp->m >= dp->n) {
    rc = dpo_err(DPO_EINVAL, "dp-smag samples minibatches: give algo.m (--batch) < n = %lld",
                 (long long)dp->n);
    goto fail;
  }
  a->kappa = dp->L / dp->mu;
  if ((rc = dpo__optim_step(s, "alpha", dp->c, &a->alpha1, NULL))) goto fail;
  if ((rc = dpo_solver_param(s, "p", 1.0, &a->p))) goto fail;
  if (!(a->p >= 1) || !isfinite(a->p)) {
    rc = dpo_err(DPO_EINVAL, "algo.p = %g must be >= 1 (Kuru et al. 2022, (4.7))", a->p);
    goto fail;
  }
  n1d = ceil(2.0 * sqrt(a->kappa) * log(sqrt(a->kappa)));
  if ((rc = dpo_solver_param_int(s, "n1", n1d < 1 ? 1 : (int64_t)n1d, &a->n1))) goto fail;
  if (a->n1 < 1) {
    rc = dpo_err(DPO_EINVAL, "algo.n1 = %lld must be >= 1", (long long)a->n1);
    goto fail;
  }
  (void)alpha;
  a->Tuse = dp->T;
  if (mode == MASG) {
    double e = NAN;
    if (dp->fixed_b == 0 && (rc = dpo_privacy_split(dp->eps, dp->T, &e))) goto fail;
    if (!(a->es = malloc((size_t)dp->T * sizeof *a->es))) {
      rc = dpo_err(DPO_ENOMEM, "dp-masg: out of memory");
      goto fail;
    }
    for (int64_t t = 0; t < dp->T; t++) a->es[t] = e;
    if (dp->fixed_b == 0 && (rc = dpo__dp_calibrate(dp, 1.0, a->es, dp->T, dp->T))) goto fail;
  } else if (mode == MASG_OPT) {
    if ((rc = plan_opt(a, s))) goto fail;
  } else {
    double r = sqrt(dp->mu / dp->L);
    a->beta_fixed = (1.0 - r) / (1.0 + r);
    if ((rc = plan_mag(a))) goto fail;
  }
  size_t nb = (size_t)dp->d * sizeof(double);
  a->g = malloc(nb);
  a->xprev = malloc(nb);
  a->z = malloc(nb);
  if (!a->g || !a->xprev || !a->z) {
    rc = dpo_err(DPO_ENOMEM, "dp-masg: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  dpmasg_destroy(a);
  return rc;
}

static int masg_create(dpo_solver_t *s, void **st) { return dpmasg_create_mode(s, st, MASG); }
static int masgopt_create(dpo_solver_t *s, void **st) { return dpmasg_create_mode(s, st, MASG_OPT); }
static int mag_create(dpo_solver_t *s, void **st) { return dpmasg_create_mode(s, st, MAG); }
static int smag_create(dpo_solver_t *s, void **st) { return dpmasg_create_mode(s, st, SMAG); }

static int dpmasg_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__dpmasg_t *a = st;
  double *x = dpo_solver_x(s);
  const int32_t d = a->dp->d;
  if (t >= a->Tuse) {
    *done = 1;
    return DPO_OK;
  }
  int k, first;
  int64_t len;
  double alpha, beta;
  dpo__masg_schedule(t, a->n1, a->kappa, a->p, a->alpha1, &k, &alpha, &len, &first);
  if (first) memcpy(a->xprev, x, (size_t)d * sizeof *x); /* stage restart */
  if (a->mode == MAG || a->mode == SMAG) {
    alpha = a->alpha_k[k];
    beta = a->beta_fixed;
  } else {
    double r = sqrt(a->dp->mu * alpha);
    beta = r < 1 ? (1.0 - r) / (1.0 + r) : 0.0;
  }
  for (int32_t j = 0; j < d; j++) a->z[j] = (1.0 + beta) * x[j] - beta * a->xprev[j];
  int rc = dpo__dp_grad(a->dp, a->z, t, a->es[t], 1.0, a->g, NULL);
  if (rc) return rc;
  for (int32_t j = 0; j < d; j++) {
    a->xprev[j] = x[j];
    x[j] = a->z[j] - alpha * a->g[j];
  }
  if (t + 1 >= a->Tuse) *done = 1;
  return DPO_OK;
}

/* checkpoint: x_{t-1} (momentum within a stage), the per-step shares and stage steps */
static int dpmasg_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__dpmasg_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_save(a->dp, w)) || (rc = dpo_ckpt_put_int(w, "mode", a->mode)) ||
      (rc = dpo_ckpt_put_double(w, "alpha1", a->alpha1)) ||
      (rc = dpo_ckpt_put_int(w, "Tuse", a->Tuse)) ||
      (rc = dpo_ckpt_put_f64(w, "es", a->es, a->es ? a->Tuse : 0)) ||
      (rc = dpo_ckpt_put_f64(w, "alpha_k", a->alpha_k, a->alpha_k ? a->K + 1 : 0)) ||
      (rc = dpo_ckpt_put_f64(w, "xprev", a->xprev, a->dp->d)))
    return rc;
  return DPO_OK;
}
static int dpmasg_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__dpmasg_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_load(a->dp, r)) || (rc = dpo__ckpt_check_int(r, "mode", a->mode)) ||
      (rc = dpo__ckpt_check_double(r, "alpha1", a->alpha1)) ||
      (rc = dpo__ckpt_check_int(r, "Tuse", a->Tuse)) ||
      (rc = dpo_ckpt_get_f64(r, "es", a->es, a->es ? a->Tuse : 0)) ||
      (rc = dpo_ckpt_get_f64(r, "alpha_k", a->alpha_k, a->alpha_k ? a->K + 1 : 0)) ||
      (rc = dpo_ckpt_get_f64(r, "xprev", a->xprev, a->dp->d)))
    return rc;
  return DPO_OK;
}

#define DPMASG_PARAMS                                                                        \
  {"alpha", "c/L", "first-stage step alpha_1 (stage k: alpha_1/2^(2k))"},                     \
  {"p", "1", "stage-length exponent p >= 1 of (Kuru et al. 2022, (4.7))"},                                 \
  {"n1", "ceil(2 sqrt(kappa) ln sqrt(kappa))", "length of stage 1"}
static const dpo_algo_param_t dpmasg_params[] = {DPMASG_PARAMS, {NULL, NULL, NULL}};
static const dpo_algo_param_t dpmasgopt_params[] = {
    DPMASG_PARAMS, {"E0", "10", "public guess of F(x_0) - F* for T' (Kuru et al. 2022, Remark 4.1)"},
    {"choose_T", "1", "1: run the T' <= T minimising the bound; 0: keep T"}, {NULL, NULL, NULL}};
static const dpo_algo_param_t dpsmag_params[] = {
    DPMASG_PARAMS, {"m", "ceil(sqrt n)", "minibatch size (--batch), < n"}, {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_dp_masg = {"dp-masg", "DP multistage accelerated gradient (Kuru et al. 2022, (4.7))",
                                      1, masg_create, dpmasg_step, dpmasg_destroy,
                                      dpmasg_save, dpmasg_load, dpmasg_params, dpo__dp_params, "",
                                      "", 0, 0, 0, NULL};
const dpo_algo_t dpo__algo_dp_masg_opt = {
    "dp-masg-opt", "DP-MASG with optimal noise from the weights of (Kuru et al. 2022, Thm 4.3)", 1,
    masgopt_create, dpmasg_step, dpmasg_destroy, dpmasg_save, dpmasg_load, dpmasgopt_params,
    dpo__dp_params, "", "", 0, 0, 0, NULL};
const dpo_algo_t dpo__algo_dp_mag = {"dp-mag",
                                     "DP-MAG: per-stage budget, step (Kuru 2019, (4.40)-(4.43))", 1,
                                     mag_create, dpmasg_step, dpmasg_destroy, dpmasg_save,
                                     dpmasg_load, dpmasg_params, dpo__dp_params, "", "", 0, 0, 0, NULL};
const dpo_algo_t dpo__algo_dp_smag = {"dp-smag",
                                      "DP-SMAG: DP-MAG on minibatches (Kuru 2019, Alg. 7, (4.57)-(4.59))",
                                      1, smag_create, dpmasg_step, dpmasg_destroy,
                                      dpmasg_save, dpmasg_load, dpsmag_params, dpo__dp_params, "",
                                      "", 0, 0, 0, NULL};
