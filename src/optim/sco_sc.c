/* Strongly convex private SCO (003 Sec. 5), lambda = the model's public strong convexity mu
 * (2 model.lambda).  Thm 5.4 (PNSGD with fixed step 2 ln T/(lambda T)) is pnsgd's
 * algo.schedule = sc; this file holds the other two.
 *
 * sc-reduce (Sec. 5.1, Thm 5.1): the folklore reduction.  Run the convex algorithm A
 * (algo.base = phased-sgd, 003 Alg. 2 / Thm 4.4, or phased-erm, Alg. 3 / Thm 4.8) k =
 * ceil(log2 log2 n) times, run j = 1..k on n_j = floor(2^(j-2) n / log2 n) fresh examples
 * (doubling; sum n_j <= n), started at the previous run's output, with the radius
 * D_j = min(D, sqrt(2 B_{j-1} / lambda)) in A's step size (shrinking radius: strong convexity
 * gives E||w_{j-1} - w*||^2 <= 2 Delta_{j-1}/lambda), where B_0 = L D bounds F(w_0) - F* on K
 * and B_j = c L D_j (1/sqrt(n_j) + r / n_j) is A's guarantee, r = sqrt(d)/rho (Thm 4.4) or
 * sqrt(d ln(1/delta))/eps (Thm 4.8), c = algo.c_rate (default 10, the constant of Thm 4.4).
 * Privacy: every phase of every run uses its own examples, so all phases form one disjoint
 * pass; the run is as private as one phase of A ("the same privacy parameters as A").
 *
 * phased-sc (Sec. 5.2.2, Thm 5.3): Alg. 2 with k = ceil(ln ln n) phases of n_i = floor(n/k)
 * examples, eta = 4 c k ln n / (lambda n) (c = algo.c, default 2 as the proof needs c >= 2;
 * when lambda is too small for the theorem, the step minimising its proof's bound, psc_create),
 * eta_i = 2^(-2^i) eta, each phase PSGD from w_{i-1} with the weighted average of Lemma 5.2
 * (gamma_t = (1 - eta_i lambda)^-t), then w_i = wbar_i + N(0, sigma_i^2 I), sigma_i =
 * 4 L eta_i / rho (Alg. 2 line 5; sensitivity 2 L eta_i by Lemma 4.3 needs eta_i <= 2/beta,
 * checked: Thm 5.3's condition kappa <= n/(k ln n)).
 *
 * One driver iteration = one phase (a released point); see sco_common.h for the public order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"
#include "optim/sco_common.h"

typedef struct {
  dpo__sco_t c;
  double mu;
  int64_t maxit;
  int nph;
  dpo__sco_phase_t *ph;
} dpo__scalg_t;

static void sc_destroy(void *st) {
  dpo__scalg_t *a = st;
  if (!a) return;
  dpo__sco_free(&a->c);
  free(a->ph);
  free(a);
}

static int sc_common(dpo_solver_t *s, dpo__scalg_t *a, const char *who) {
  int rc;
  if ((rc = dpo__sco_init(s, &a->c, who))) return rc;
  if ((rc = dpo_solver_constants(s, NULL, &a->mu))) return rc;
  if (!(a->mu > 0))
    return dpo_err(DPO_EINVAL, "%s: needs a strongly convex model (model.lambda > 0)", who);
  if ((rc = dpo_solver_param_int(s, "erm_maxit", 1000000, &a->maxit))) return rc;
  a->ph = calloc(256, sizeof *a->ph);
  if (!a->ph) return dpo_err(DPO_ENOMEM, "%s: out of memory", who);
  return DPO_OK;
}

static int sc_check_eta(const dpo__scalg_t *a, double eta, const char *who) {
  if (isfinite(a->c.beta) && !(eta <= 2 / a->c.beta))
    return dpo_err(DPO_EINVAL, "%s: step %g exceeds 2/beta = %g (Lemma 4.3 needs it; Thm 5.1/5.3 "
                               "assume a bounded condition number): more data or a larger "
                               "model.lambda", who, eta, 2 / a->c.beta);
  return DPO_OK;
}

/* every phase output is a Gaussian release charged before the phase runs (dpo__sco_phase_run) */
static int sc_plan(dpo_solver_t *s, const dpo__scalg_t *a) {
  dpo_plan_t plan = {.kind = DPO_PLAN_PER_STEP, .steps = a->nph};
  snprintf(plan.what, sizeof plan.what, "%d phases, each output a Gaussian release charged "
           "before the phase runs (disjoint examples)", a->nph);
  return dpo_solver_declare_plan(s, &plan);
}

static int reduce_create(dpo_solver_t *s, void **state) {
  int rc;
  const char *who = "sc-reduce", *base = NULL;
  dpo__scalg_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "%s: out of memory", who);
  if ((rc = sc_common(s, a, who))) goto fail;
  if ((rc = dpo_solver_param_str(s, "base", "phased-sgd", &base))) goto fail;
  int erm = !strcmp(base, "phased-erm");
  if (!erm && strcmp(base, "phased-sgd")) {
    rc = dpo_err(DPO_EINVAL, "%s: algo.base = '%s': phased-sgd | phased-erm", who, base);
    goto fail;
  }
  double crate, zerm = NAN;
  if ((rc = dpo_solver_param(s, "c_rate", 10, &crate))) goto fail;
  int64_t n = a->c.n;
  double d = (double)a->c.d, L = a->c.L, lg = log2((double)n);
  double r = erm ? sqrt(d * log(1 / a->c.delta)) / a->c.eps : sqrt(d) / a->c.rho;
  if (erm) {
    double zr;
    if ((rc = dpo_rdp_calibrate("none", 0, 0, 1, a->c.eps, a->c.delta, &zr))) goto fail;
    zerm = fmax(sqrt(log(1 / a->c.delta)) / a->c.eps, zr); /* as phased-erm (sco_erm.c) */
  }
  int k = lg > 1 ? (int)ceil(log2(lg)) : 1;
  if (k < 1) k = 1;
  double Bprev = L * a->c.D;
  int64_t off = 0;
  for (int j = 1; j <= k; j++) {
    int64_t nj = (int64_t)floor(ldexp((double)n, j - 2) / lg);
    if (nj < 1) continue;
    double Dj = fmin(a->c.D, sqrt(2 * Bprev / a->mu));
    double eta = Dj / L * fmin(4 / sqrt((double)nj), 1 / r); /* Thm 4.4 / 4.8 with D_j, n_j */
    int kj = 0;
    while ((1LL << kj) < nj) kj++;
    if (kj < 1) kj = 1;
    for (int i = 1; i <= kj; i++) {
      int64_t m = (int64_t)ldexp((double)nj, -i);
      if (m < 1) break;
      if (a->nph >= 256) break;
      dpo__sco_phase_t *p = &a->ph[a->nph++];
      p->erm = erm;
      p->off = off;
      p->m = m;
      p->eta = ldexp(eta, -2 * i);
      if (erm) {
        p->sens = dpo_sens(a->c.rel, L * p->eta) + 2 * L * p->eta; /* as in sco_erm.c */
        p->sigma = dpo__sco_sigma(zerm, p->sens, a->c.d);
      } else {
        if ((rc = sc_check_eta(a, p->eta, who))) goto fail;
        p->sens = dpo_sens(a->c.rel, L * p->eta);
        p->sigma = 4 * L * p->eta / a->c.rho;
      }
      off += m; /* the next phase (and the next run) starts after every example used */
    }
    Bprev = crate * L * Dj * (1 / sqrt((double)nj) + r / (double)nj);
    dpo_msg("%s: run %d/%d of %s on n_%d=%lld examples, D_%d=%g, eta=%g", who, j, k, base, j,
            (long long)nj, j, Dj, eta);
  }
  if (a->nph < 1) {
    rc = dpo_err(DPO_EINVAL, "%s: n=%lld is too small for one run", who, (long long)n);
    goto fail;
  }
  if ((rc = sc_plan(s, a))) goto fail;
  *state = a;
  return DPO_OK;
fail:
  sc_destroy(a);
  return rc;
}

static int psc_create(dpo_solver_t *s, void **state) {
  int rc;
  const char *who = "phased-sc";
  dpo__scalg_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "%s: out of memory", who);
  if ((rc = sc_common(s, a, who))) goto fail;
  double c;
  if ((rc = dpo_solver_param(s, "c", 2, &c))) goto fail;
  int64_t n = a->c.n;
  double lnn = log((double)n);
  int k = lnn > 1 ? (int)ceil(log(lnn)) : 1;
  if (k < 1) k = 1;
  int64_t ni = n / k;
  /* Thm 5.3's step eta = 4 c k ln n / (lambda n) makes the start term of its proof vanish
   * (e^{eta_1 lambda n_1} >= n^c), which needs kappa <= n/(k ln n).  When lambda is small
   * (a9a: kappa ~ 1.8e4 > n/(k ln n) ~ 1e3) that step is far above 2/beta and, capped there,
   * the phase noise sigma_i = 4 L eta_i / rho swamps the iterate.  Then the default is the
   * eta minimising the proof's own bound (the last display of Thm 5.3's proof) with the start term
   * bounded through K instead: E||xi_0||^2 <= D^2 and e^a - 1 >= a give
   *   B(eta) = 2 D^2 / (eta_1 n_1)                                   (start)
   *          + sum_{i=2}^k 2 d sigma_{i-1}^2 / (eta_i n_i)           (noise of phase i - 1)
   *          + (L^2/2) sum_i eta_i + L sqrt(d) sigma_k                (SGD variance, last noise)
   * with eta_i = r_i eta, sigma_i = s r_i eta (s = 4L/rho): B = A/eta + C eta, minimised at
   * eta = sqrt(A/C).  All public (L, d, D, rho, n, k, beta); used (if smaller) only when the
   * theorem's condition fails; capped so that eta_1 = eta/4 <= 2/beta (Lemma 4.3). */
  double eta = 4 * c * k * lnn / (a->mu * (double)n);
  if (isfinite(a->c.beta) && a->c.beta / a->mu > (double)n / (k * lnn)) {
    const double sd = 4 * a->c.L / a->c.rho, dd = (double)a->c.d;
    double A = 0, C = 0, rprev = 0;
    for (int i = 1; i <= k; i++) {
      double r = exp2(-exp2((double)i));
      if (i == 1) A = 2 * a->c.D * a->c.D / (r * (double)ni);
      else C += 2 * dd * sd * sd * rprev * rprev / (r * (double)ni);
      C += a->c.L * a->c.L / 2 * r;
      if (i == k) C += a->c.L * sqrt(dd) * sd * r;
      rprev = r;
    }
    double eb = sqrt(A / C);
    if (ni >= 1 && eb > 0 && eb < eta) eta = eb;
  }
  if (isfinite(a->c.beta) && eta > 8 / a->c.beta) eta = 8 / a->c.beta;
  if ((rc = dpo_solver_param(s, "eta", eta, &eta))) goto fail;
  for (int i = 1; i <= k && ni >= 1; i++) {
    dpo__sco_phase_t *p = &a->ph[a->nph++];
    p->off = (int64_t)(i - 1) * ni;
    p->m = ni;
    p->eta = eta * exp2(-exp2((double)i)); /* 2^(-2^i) eta */
    if (!(p->eta * a->mu <= 0.5)) {
      rc = dpo_err(DPO_EINVAL, "%s: eta_%d lambda = %g > 1/2 (Lemma 5.2 needs <= 1/2)", who, i,
                   p->eta * a->mu);
      goto fail;
    }
    if ((rc = sc_check_eta(a, p->eta, who))) goto fail;
    p->wlam = a->mu;
    p->sens = dpo_sens(a->c.rel, a->c.L * p->eta);
    p->sigma = 4 * a->c.L * p->eta / a->c.rho;
  }
  dpo_msg("%s: k=%d phases of n_i=%lld, eta=%g, lambda=%g, rho=%g, L=%g", who, k, (long long)ni,
          eta, a->mu, a->c.rho, a->c.L);
  if ((rc = sc_plan(s, a))) goto fail;
  *state = a;
  return DPO_OK;
fail:
  sc_destroy(a);
  return rc;
}

static int sc_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__scalg_t *a = st;
  int rc;
  if (t >= a->nph) {
    *done = 1;
    return DPO_OK;
  }
  if ((rc = dpo__sco_phase_run(s, &a->c, &a->ph[t], t, dpo_solver_x(s), a->mu, a->maxit, NULL)))
    return rc;
  if (t + 1 >= a->nph) *done = 1;
  return DPO_OK;
}

/* checkpoint: nothing runs across phases (phase t is the step index; x is the last phase's
 * released output), so the checkpoint holds the phase table recomputed from the config, only
 * checked: a checkpoint of another plan is refused.  One disjoint pass: a journal with a
 * charge after the checkpoint is refused. */
enum { SC_OFF, SC_M, SC_ETA, SC_SENS, SC_SIGMA, SC_WLAM, SC_NCOL };
static const char *const sc_cols[SC_NCOL] = {"ph.off", "ph.m", "ph.eta", "ph.sens", "ph.sigma",
                                             "ph.wlam"};

static void sc_table(const dpo__scalg_t *a, int col, int64_t *iv, double *fv) {
  for (int i = 0; i < a->nph; i++) {
    const dpo__sco_phase_t *p = &a->ph[i];
    if (col == SC_OFF) iv[i] = p->off;
    else if (col == SC_M) iv[i] = p->m;
    else fv[i] = col == SC_ETA ? p->eta : col == SC_SENS ? p->sens : col == SC_SIGMA ? p->sigma
                                                                                    : p->wlam;
  }
}

static int sc_ckpt(const dpo__scalg_t *a, dpo_ckpt_t *w, const dpo_ckpt_t *r) {
  int64_t iv[256];
  double fv[256];
  int rc = w ? dpo_ckpt_put_int(w, "nph", a->nph) : dpo__ckpt_check_int(r, "nph", a->nph);
  if (!rc) rc = w ? dpo_ckpt_put_int(w, "erm", a->nph > 0 && a->ph[0].erm)
                  : dpo__ckpt_check_int(r, "erm", a->nph > 0 && a->ph[0].erm);
  for (int col = 0; !rc && col < SC_NCOL; col++) {
    sc_table(a, col, iv, fv);
    if (col <= SC_M)
      rc = w ? dpo_ckpt_put_i64(w, sc_cols[col], iv, a->nph)
             : dpo__ckpt_check_i64s(r, sc_cols[col], iv, a->nph);
    else
      rc = w ? dpo_ckpt_put_f64(w, sc_cols[col], fv, a->nph)
             : dpo__ckpt_check_f64s(r, sc_cols[col], fv, a->nph);
  }
  return rc;
}

static int sc_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  const dpo__scalg_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__sco_ckpt_save(&a->c, w)) || (rc = dpo_ckpt_put_int(w, "erm_maxit", a->maxit)))
    return rc;
  return sc_ckpt(a, w, NULL);
}

static int sc_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__scalg_t *a = st;
  int rc;
  if ((rc = dpo__sco_ckpt_load(s, &a->c, r, 1, "phase")) ||
      (rc = dpo__ckpt_check_int(r, "erm_maxit", a->maxit)))
    return rc;
  return sc_ckpt(a, NULL, r);
}

#define SC_MAXIT {"erm_maxit", "1000000", "cap on the public step count of an ERM solve"}
static const dpo_algo_param_t reduce_params[] = {
    {"base", "phased-sgd", "phased-sgd | phased-erm: the convex algorithm A"},
    {"c_rate", "10", "constant of A's guarantee (Thm 4.4) for the shrinking radius"},
    SC_MAXIT, {NULL, NULL, NULL}};
static const dpo_algo_param_t psc_params[] = {
    {"c", "2", "step constant (Thm 5.3 needs c >= 2)"},
    {"eta", "min(4 c k ln n/(lambda n) (Thm 5.3; if kappa > n/(k ln n): the minimiser of its proof's bound with ||w0 - w*|| <= D), 8/beta)",
     "base step (phase i: 2^(-2^i) eta)"},
    SC_MAXIT, {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_sc_reduce = {
    "sc-reduce", "strongly convex reduction: doubling runs of phased-sgd/erm (Feldman, Koren and Talwar 2020, Sec. 5.1)", 1,
    reduce_create, sc_step, sc_destroy, sc_save, sc_load, reduce_params, dpo__sco_params, NULL, "", 0, 1, 0, NULL};
const dpo_algo_t dpo__algo_phased_sc = {
    "phased-sc", "Phased-SGD for strongly convex losses (Feldman, Koren and Talwar 2020, Thm 5.3, Lemma 5.2 averaging)", 1,
    psc_create, sc_step, sc_destroy, sc_save, sc_load, psc_params, dpo__sco_params, NULL, "", 0, 1, 0, NULL};
