/* Shared pieces of the 003 algorithms (see sco_common.h). */
#include "optim/sco_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/ckpt_int.h"

static uint64_t dpo__splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void dpo__sco_shuffle(int64_t *p, int64_t n, uint64_t seed) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) p[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    /* unbiased below(i+1) by rejection */
    uint64_t b = (uint64_t)i + 1, lim = UINT64_MAX - UINT64_MAX % b, r;
    do r = dpo__splitmix(&s);
    while (r >= lim);
    int64_t j = (int64_t)(r % b), tmp = p[i];
    p[i] = p[j];
    p[j] = tmp;
  }
}

static int dpo__cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

dpo_batch_t dpo__sco_batch(dpo__sco_t *c, int64_t off, int64_t m) {
  memcpy(c->ids, c->perm + off, (size_t)m * sizeof *c->ids);
  qsort(c->ids, (size_t)m, sizeof *c->ids, dpo__cmp64);
  dpo_batch_t b = {c->ids, m};
  return b;
}

void dpo__sco_project(double *x, int32_t d, double D) {
  double r = D / 2, s = 0;
  for (int32_t j = 0; j < d; j++) s += x[j] * x[j];
  s = sqrt(s);
  if (s > r)
    for (int32_t j = 0; j < d; j++) x[j] *= r / s;
}

int64_t dpo__sco_snowball(int kind, int64_t T, int32_t d, double rho, int64_t *B) {
  int64_t n = 0;
  for (int64_t t = 1; t <= T; t++) {
    double rem = (double)(T - t + 1);
    double b = kind == 1 ? 4 * sqrt(3.0 * d / rem) / rho : 2 * sqrt((double)d / rem) / rho;
    B[t - 1] = (int64_t)ceil(b);
    if (B[t - 1] < 1) B[t - 1] = 1;
    n += B[t - 1];
  }
  return n;
}

void dpo__sco_jnn(int64_t T, double c, double *eta) {
  int ell = 0;
  while ((1LL << ell) < T) ell++; /* ceil(log2 T) */
  /* T_i = T - ceil(T 2^-i) for 0 <= i <= ell, T_{ell+1} = T */
  for (int i = 0; i <= ell; i++) {
    int64_t Ti = T - (int64_t)ceil((double)T * ldexp(1.0, -i));
    int64_t Ti1 = i < ell ? T - (int64_t)ceil((double)T * ldexp(1.0, -(i + 1))) : T;
    for (int64_t t = Ti + 1; t <= Ti1; t++) eta[t - 1] = c * ldexp(1.0, -i) / sqrt((double)T);
  }
}

const dpo_algo_param_t dpo__sco_params[] = {
    {"D", "2", "diameter of the constraint ball K (centred at 0)"},
    {"rho", "largest rho whose curve alpha rho^2/2 fits (eps, delta)", "RDP target of the run"},
    {"shuffle_seed", "1", "seed of the public example order (not the noise stream)"},
    {NULL, NULL, NULL}};

int dpo__sco_check(const dpo_config_t *cfg, const dpo_privacy_spec_t *spec, const char *who) {
  const char *model = NULL;
  double B2 = NAN, Cl = spec->clip.norm == DPO_CLIP_L2 ? spec->clip.C : NAN;
  const double delta = spec->delta;
  const dpo_neighbours_t rel = spec->rel;
  int rc;
  dpo_config_get_str(cfg, "model.name", "logreg", &model);
  if ((rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &B2))) return rc;
  /* as dpo__sco_init: L from clipping or the declared row bound (logistic) */
  if (!(Cl > 0 && isfinite(Cl)) &&
      !(model && (!strcmp(model, "logreg") || !strcmp(model, "softmax")) && B2 > 0 && isfinite(B2)))
    return dpo_err(DPO_EINVAL, "%s: needs a public Lipschitz bound: privacy.clip = l2:C, or "
                               "data.row_l2_bound with model logreg or softmax", who);
  if (!(B2 > 0) || !isfinite(B2))
    return dpo_err(DPO_EINVAL, "%s: declare data.row_l2_bound (--row-l2-bound): the smoothness "
                               "beta must be public to check eta <= 2/beta (Feldman, Koren and Talwar 2020, Thm 3.1)", who);
  if (!(delta > 0))
    return dpo_err(DPO_EINVAL, "%s: Gaussian noise needs an (eps, delta) budget with delta > 0: "
                               "give --delta D", who);
  if (rel != DPO_NEIGHBOURS_REPLACE_ONE && strcmp(who, "dp-sgd-rdp") != 0)
    return dpo_err(DPO_EINVAL, "%s: its privacy analysis (Feldman, Koren and Talwar 2020) is for replace-one neighbours; "
                   "set privacy.neighbours = replace-one (or use dp-sgd-rdp with "
                   "algo.sampling = poisson for add-remove)", who);
  /* a sampling the relation's analysis does not cover: refused before the run directory */
  const char *samp = cfg && !strcmp(who, "dp-sgd-rdp") ? dpo_config_get(cfg, "algo.sampling") : NULL;
  if (samp && (rc = dpo__sco_sampling_check(who, samp, rel))) return rc;
  return DPO_OK;
}

int dpo__sco_sampling_check(const char *who, const char *samp, dpo_neighbours_t rel) {
  const int poisson = !strcmp(samp, "poisson");
  if (!poisson && strcmp(samp, "wor")) return DPO_OK; /* named by the algorithm's own reader */
  if (poisson == (rel == DPO_NEIGHBOURS_ADD_REMOVE)) return DPO_OK;
  return dpo_err(DPO_EINVAL, "%s: algo.sampling = %s is analysed for %s neighbours (%s), but "
                 "privacy.neighbours = %s: set algo.sampling = %s or privacy.neighbours = %s",
                 who, samp, poisson ? "add-remove" : "replace-one",
                 poisson ? "Mironov-Talwar-Zhang 2019" : "Wang-Balle-Kasiviswanathan 2019",
                 dpo_neighbours_name(rel), poisson ? "wor" : "poisson",
                 poisson ? "add-remove" : "replace-one");
}

int dpo__sco_init(dpo_solver_t *s, dpo__sco_t *c, const char *who) {
  const dpo_config_t *cfg = dpo_solver_config(s);
  int rc;
  memset(c, 0, sizeof *c);
  c->d = dpo_solver_dim(s);
  c->n = dpo_solver_n(s);
  /* L: per-example gradient bound from clipping or the declared row bound (logistic) */
  const dpo_privacy_spec_t *spec = dpo_solver_privacy(s);
  const char *model = NULL;
  double B2 = NAN, Cl = spec->clip.norm == DPO_CLIP_L2 ? spec->clip.C : NAN;
  dpo_config_get_str(cfg, "model.name", "logreg", &model);
  if ((rc = dpo_config_get_double(cfg, "data.row_l2_bound", NAN, &B2))) return rc;
  c->L = INFINITY;
  if (Cl > 0) c->L = Cl;
  /* the bound on the rows the model sees (with an intercept: sqrt(B2^2 + 1), model.h) */
  /* per-example gradient bound: logistic ||u~||_2, softmax sqrt(2) ||u~||_2 (model.h) */
  double g2 = dpo_model_grad_l2_bound(dpo_oracle_model(dpo_solver_oracle(s)), B2);
  if (model && (!strcmp(model, "logreg") || !strcmp(model, "softmax")) && g2 > 0 && g2 < c->L)
    c->L = g2;
  if (!isfinite(c->L))
    return dpo_err(DPO_EINVAL, "%s: needs a public Lipschitz bound: privacy.clip = l2:C, or "
                               "data.row_l2_bound with model logreg or softmax", who);
  double beta;
  if (dpo_solver_constants(s, &beta, NULL) != DPO_OK)
    return dpo_err(DPO_EINVAL, "%s: declare data.row_l2_bound (--row-l2-bound): the smoothness "
                               "beta must be public to check eta <= 2/beta (Feldman, Koren and Talwar 2020, Thm 3.1)", who);
  c->beta = beta;
  if ((rc = dpo_solver_param(s, "D", 2.0, &c->D))) return rc;
  if (!(c->D > 0) || !isfinite(c->D))
    return dpo_err(DPO_EINVAL, "%s: algo.D (diameter of K) must be > 0", who);
  struct dpo_ledger *led = dpo_solver_ledger(s);
  if (!led) return dpo_err(DPO_EINVAL, "%s: a private algorithm needs the ledger", who);
  if ((rc = dpo_ledger_budget(led, &c->eps, &c->delta))) return rc;
  if (!(c->delta > 0))
    return dpo_err(DPO_EINVAL, "%s: Gaussian noise needs an (eps, delta) budget with delta > 0: "
                               "give --delta D", who);
  /* The one-pass and phased analyses of 003 (disjoint examples at fixed positions, amplification
   * by iteration) compare data sets of one public size n: replace-one.  Only dp-sgd-rdp with
   * Poisson batches has an add/remove analysis (MTZ 2019). */
  c->rel = dpo_ledger_neighbours(led);
  if (c->rel != DPO_NEIGHBOURS_REPLACE_ONE && strcmp(who, "dp-sgd-rdp") != 0)
    return dpo_err(DPO_EINVAL, "%s: its privacy analysis (Feldman, Koren and Talwar 2020) is for replace-one neighbours; "
                   "set privacy.neighbours = replace-one (or use dp-sgd-rdp with "
                   "algo.sampling = poisson for add-remove)", who);
  if ((rc = dpo_solver_param(s, "rho", NAN, &c->rho))) return rc;
  if (isnan(c->rho)) {
    /* the curve alpha rho^2/2 is one Gaussian release with z = 1/rho: rho = 1/z_min */
    double z;
    if ((rc = dpo_rdp_calibrate("none", 0, 0, 1, c->eps, c->delta, &z))) return rc;
    c->rho = 1 / z;
    c->rho = nextafter(c->rho, 0); /* 1/z rounded toward less privacy loss */
  }
  if (!(c->rho > 0) || !isfinite(c->rho))
    return dpo_err(DPO_EINVAL, "%s: algo.rho must be > 0", who);
  int64_t seed;
  if ((rc = dpo_solver_param_int(s, "shuffle_seed", 1, &seed))) return rc;
  c->perm = malloc((size_t)c->n * sizeof *c->perm);
  c->ids = malloc((size_t)c->n * sizeof *c->ids);
  if (!c->perm || !c->ids) return dpo_err(DPO_ENOMEM, "%s: out of memory", who);
  dpo__sco_shuffle(c->perm, c->n, (uint64_t)seed);
  return DPO_OK;
}

int dpo__sco_count_charge(dpo_ledger_t *F, dpo_neighbours_t rel, double b, double *charged) {
  dpo_charge_t ch = {.mechanism = DPO_MECH_LAPLACE, .noise_scale = b, .sensitivity = 1, .dim = 1,
                     .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_PURE, .step = -1,
                     .neighbours = rel};
  return dpo_ledger_charge(F, &ch, charged);
}

int dpo__sco_public_n(dpo_solver_t *s, const dpo__sco_t *c, const char *who, int64_t *n_pub,
                      double *count_eps, double *count_b, char *src, size_t cap) {
  return dpo__public_n(s, c->rel, c->n, c->eps, who, n_pub, count_eps, count_b, src, cap);
}

int dpo__public_n(dpo_solver_t *s, dpo_neighbours_t rel, int64_t n, double eps, const char *who,
                  int64_t *n_pub, double *count_eps, double *count_b, char *src, size_t cap) {
  const dpo_privacy_spec_t *spec = dpo_solver_privacy(s);
  int64_t np = spec->public_n;
  double ec = isnan(spec->count_eps) ? eps / 100 : spec->count_eps;
  int rc;
  *count_eps = 0, *count_b = 0;
  if (rel != DPO_NEIGHBOURS_ADD_REMOVE) {
    *n_pub = n;
    snprintf(src, cap, "the row count: public under replace-one");
    return DPO_OK;
  }
  if (dpo_privacy_spec_given(spec, DPO_SPEC_PUBLIC_N)) {
    if (np < 1 || np > ((int64_t)1 << 53))
      return dpo_err(DPO_EINVAL, "%s: privacy.public_n = %lld must be in [1, 2^53]", who,
                     (long long)np);
    *n_pub = np;
    snprintf(src, cap, "declared: privacy.public_n");
    return DPO_OK;
  }
  const char *acct = dpo_ledger_accountant(dpo_solver_ledger(s));
  if (acct && (!strcmp(acct, "rdp") || !strcmp(acct, "basic")))
    return dpo_err(DPO_EINVAL, "%s: under add-remove the row count is private and is released "
                   "as a noisy count (a Laplace release), which privacy.accountant = %s does not "
                   "take: declare a public size (privacy.public_n, --public-n N) or use "
                   "privacy.accountant = pld (the default) or auto", who, acct);
  if (!(ec > 0) || !(ec < eps))
    return dpo_err(DPO_EINVAL, "%s: privacy.count_eps = %g must be in (0, eps = %g): under "
                   "add-remove the row count is private, so either a noisy count is charged or "
                   "a public size is declared (privacy.public_n)", who, ec, eps);
  double b, v = (double)n;
  int64_t kept = -1;
  if ((rc = dpo_mech_laplace_scale(1, ec, 1, &b))) return rc;
  /* a resume: the count its run drew and charged, kept in the checkpoint (ckpt_int.h) */
  if ((rc = dpo__count_resumed(s, b, &kept))) return rc;
  if (kept >= 1) {
    *n_pub = kept;
    *count_eps = ec, *count_b = b;
    snprintf(src, cap, "a noisy count charged eps %.3g", ec);
    return DPO_OK;
  }
  /* charged before the count is drawn, let alone used (privacy rule 2).  In a multi-party
   * run (central trust: local refuses add-remove and secagg a noisy count before this) every
   * party's rows enter the count, so it names every party, as the releases after it do. */
  dpo_ledger_t *L = dpo_solver_ledger(s);
  int P = dpo_ledger_nparties(L);
  if (P > 0) {
    int *pl = malloc((size_t)P * sizeof *pl), refused = -2;
    if (!pl) return dpo_err(DPO_ENOMEM, "%s: out of memory", who);
    for (int k = 0; k < P; k++) pl[k] = k;
    dpo_charge_t ch = {.mechanism = DPO_MECH_LAPLACE, .noise_scale = b, .sensitivity = 1, .dim = 1,
                       .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_PURE, .step = -1,
                       .neighbours = rel};
    rc = dpo_ledger_charge_parties(L, &ch, P, pl, NULL, &refused);
    free(pl);
  } else {
    rc = dpo__sco_count_charge(L, rel, b, NULL);
  }
  if (rc) return rc;
  if ((rc = dpo_mech_sample(DPO_MECH_LAPLACE, dpo_solver_rng(s), b, &v, 1))) return rc;
  v = nearbyint(v);
  *n_pub = v < 1 ? 1 : v > 0x1p53 ? ((int64_t)1 << 53) : (int64_t)v;
  if ((rc = dpo__count_note(s, b, *n_pub))) return rc;
  *count_eps = ec, *count_b = b;
  snprintf(src, cap, "a noisy count charged eps %.3g", ec);
  return DPO_OK;
}

static int64_t dpo__sco_perm_digest(const dpo__sco_t *c) {
  uint64_t h = 14695981039346656037ULL;
  const unsigned char *p = (const unsigned char *)c->perm;
  for (size_t i = 0; i < (size_t)c->n * sizeof *c->perm; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return (int64_t)h;
}

int dpo__sco_ckpt_save(const dpo__sco_t *c, dpo_ckpt_t *w) {
  int rc;
  if ((rc = dpo_ckpt_put_int(w, "sco.n", c->n)) || (rc = dpo_ckpt_put_int(w, "sco.d", c->d)) ||
      (rc = dpo_ckpt_put_double(w, "sco.L", c->L)) ||
      (rc = dpo_ckpt_put_double(w, "sco.beta", c->beta)) ||
      (rc = dpo_ckpt_put_double(w, "sco.D", c->D)) ||
      (rc = dpo_ckpt_put_double(w, "sco.rho", c->rho)))
    return rc;
  return dpo_ckpt_put_int(w, "sco.order", dpo__sco_perm_digest(c));
}

int dpo__sco_ckpt_load(const dpo_solver_t *s, const dpo__sco_t *c, const dpo_ckpt_t *r,
                       int disjoint, const char *who) {
  int rc;
  if ((rc = dpo__ckpt_check_int(r, "sco.n", c->n)) || (rc = dpo__ckpt_check_int(r, "sco.d", c->d)) ||
      (rc = dpo__ckpt_check_double(r, "sco.L", c->L)) ||
      (rc = dpo__ckpt_check_double(r, "sco.beta", c->beta)) ||
      (rc = dpo__ckpt_check_double(r, "sco.D", c->D)) ||
      (rc = dpo__ckpt_check_double(r, "sco.rho", c->rho)) ||
      (rc = dpo__ckpt_check_int(r, "sco.order", dpo__sco_perm_digest(c))))
    return rc;
  return disjoint ? dpo__ckpt_disjoint_resume(s, who) : DPO_OK;
}

int dpo__sco_phase_save(const dpo__sco_t *c, dpo_ckpt_t *w, int k, double eta, double z,
                        int64_t off) {
  int rc;
  if ((rc = dpo__sco_ckpt_save(c, w)) || (rc = dpo_ckpt_put_int(w, "k", k)) ||
      (rc = dpo_ckpt_put_double(w, "eta", eta)) || (rc = dpo_ckpt_put_double(w, "z", z)))
    return rc;
  return dpo_ckpt_put_int(w, "off", off);
}

int dpo__sco_phase_load(const dpo_solver_t *s, const dpo__sco_t *c, const dpo_ckpt_t *r, int k,
                        double eta, double z, int64_t *off, const char *name) {
  int rc;
  if ((rc = dpo__sco_ckpt_load(s, c, r, 1, "phase")) || (rc = dpo__ckpt_check_int(r, "k", k)) ||
      (rc = dpo__ckpt_check_double(r, "eta", eta)) || (rc = dpo__ckpt_check_double(r, "z", z)) ||
      (rc = dpo_ckpt_get_int(r, "off", off)))
    return rc;
  if (*off < 0 || *off > c->n)
    return dpo_err(DPO_EFORMAT, "checkpoint: %s offset %lld outside 0..%lld", name,
                   (long long)*off, (long long)c->n);
  return DPO_OK;
}

void dpo__sco_free(dpo__sco_t *c) {
  free(c->perm);
  free(c->ids);
  c->perm = c->ids = NULL;
}

/* ---- multi-party runs: central, local, secagg (see sco_common.h) ---- */

/* What every multi-party run sets up: the accounts check, the trust mode, the party list.
 * The secagg noise (gamma, sigma) is left to the two callers below. */
static int sco_parties_base(dpo_solver_t *s, double sens, dpo__sco_sa_t *sa) {
  dpo_oracle_t *o = dpo_solver_oracle(s);
  const dpo_parties_t *pt = dpo_oracle_parties(o);
  memset(sa, 0, sizeof *sa);
  if (!pt) return DPO_OK;
  int P = pt->count;
  /* a secagg run resumed without some of its parties (run_ckpt.c) names the remaining ones'
   * accounts by position (dpo_ledger_set_parties_named); the lost ones' are charged no more */
  if (dpo_ledger_nparties(dpo_solver_ledger(s)) < P)
    return dpo_err(DPO_EINVAL, "parties: %d parties declared but the ledger keeps %d party "
                   "accounts", P, dpo_ledger_nparties(dpo_solver_ledger(s)));
  if (!(sens > 0) || !isfinite(sens))
    return dpo_err(DPO_EINVAL, "privacy.trust = %s needs a finite L2 sensitivity",
                   dpo_trust_name(pt->trust));
  if (pt->trust != DPO_TRUST_SECAGG && pt->trust != DPO_TRUST_CENTRAL &&
      pt->trust != DPO_TRUST_LOCAL)
    return dpo_err(DPO_EUNSUP, "privacy.trust = %s is not implemented for this algorithm: it "
                   "takes central, local or secagg", dpo_trust_name(pt->trust));
  sa->d = dpo_solver_dim(s);
  sa->trust = pt->trust;
  MPI_Comm_size(dpo_oracle_comm(o), &sa->size);
  if (!(sa->plist = malloc((size_t)P * sizeof *sa->plist)))
    return dpo_err(DPO_ENOMEM, "parties: out of memory");
  for (int k = 0; k < P; k++) sa->plist[k] = k;
  sa->np = P;
  sa->sens = sens;
  sa->on = 1;
  return DPO_OK;
}

int dpo__sco_parties_setup(dpo_solver_t *s, double sens, double rho_target, dpo__sco_sa_t *sa) {
  const dpo_parties_t *pt = dpo_oracle_parties(dpo_solver_oracle(s));
  int rc = sco_parties_base(s, sens, sa);
  if (rc || !pt || pt->trust != DPO_TRUST_SECAGG) return rc;
  if ((rc = dpo_secagg_params(sens, sa->d, pt->count, pt->collude, rho_target, &sa->gamma,
                              &sa->sigma, &sa->rho, NULL)))
    return rc;
  sa->sd = sa->gamma * (double)sa->sigma * sqrt((double)pt->count);
  return DPO_OK;
}

int dpo__sco_parties_setup_sampled(dpo_solver_t *s, double gamma, double sens_c,
                                   double sigma_target, int64_t m, int64_t n_pub,
                                   dpo__sco_sa_t *sa) {
  const dpo_parties_t *pt = dpo_oracle_parties(dpo_solver_oracle(s));
  int rc;
  if (!pt || pt->trust != DPO_TRUST_SECAGG)
    return dpo_err(DPO_EINVAL, "party-local sampling needs privacy.trust = secagg");
  if ((rc = sco_parties_base(s, sens_c, sa))) return rc;
  sa->gamma = gamma;
  if ((rc = dpo_secagg_sampled_share(sigma_target, gamma, pt->count, pt->collude, &sa->sigma,
                                     &sa->sigma_h)))
    return rc;
  sa->sd = gamma * (double)sa->sigma * sqrt((double)pt->count);
  sa->local = 1, sa->lm = m, sa->ln = n_pub;
  return DPO_OK;
}

void dpo__sco_secagg_free(dpo__sco_sa_t *sa) {
  free(sa->plist);
  sa->plist = NULL;
  sa->on = 0;
}

/* The noise shares in a secagg sum: one per party (dpopt audit: the virtual parties of one
 * rank), at most one per rank in a run: the larger of the two bounds it. */
static int dpo__sco_shares(dpo_oracle_t *o, int size) {
  const dpo_parties_t *pt = dpo_oracle_parties(o);
  return pt && pt->count > size ? pt->count : size;
}

int dpo__sco_parties_sum(dpo_solver_t *s, dpo__sco_sa_t *sa, const double *x,
                         const dpo_batch_t *b, const dpo_charge_t *ch, double *gsum) {
  dpo_ledger_t *L = dpo_solver_ledger(s);
  dpo_oracle_t *o = dpo_solver_oracle(s);
  dpo_charge_t c = *ch;
  dpo_oracle_noise_t nz = {DPO_ONOISE_NONE, 0.0, 1, 0, 0, 0, 0, 0};
  int rc = DPO_OK;
  if (sa->trust == DPO_TRUST_SECAGG && sa->local) {
    /* party-local Poisson sampling: charged as central's subsampled Gaussian with the honest
     * shares' noise (secagg.c); the range check at the public n_pub (a larger sample only
     * wraps: post-processing) */
    int bits = 64, shares = dpo__sco_shares(o, sa->size);
    if ((rc = dpo_secagg_word(sa->ln, sa->sens, sa->gamma, sa->size, shares, sa->d, sa->sigma, 0,
                              &bits)))
      return rc;
    c = (dpo_charge_t){.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = sa->sigma_h,
                       .sensitivity = sa->sens, .dim = sa->d, .sampling = DPO_SAMPLING_POISSON,
                       .accounting = DPO_ACCOUNTING_RDP, .m = sa->lm, .n = sa->ln,
                       .step = ch->step, .neighbours = dpo_ledger_neighbours(L)};
    nz = (dpo_oracle_noise_t){DPO_ONOISE_SECAGG, sa->gamma, sa->size, sa->sigma, 0,
                              sa->sigma_h / sa->sens, 0, bits};
  } else if (sa->trust == DPO_TRUST_SECAGG) {
    /* data-free range check: the encoded data part stays below 2^62 (no wrap; secagg.c), and
     * the word width from public numbers (32 bits when the data and noise bounds fit) */
    int bits = 64, shares = dpo__sco_shares(o, sa->size);
    if ((rc = dpo_secagg_word(b->m, sa->sens, sa->gamma, sa->size, shares, sa->d, sa->sigma, 0,
                              &bits)))
      return rc;
    c = (dpo_charge_t){.mechanism = DPO_MECH_RDP_RHO, .rho = sa->rho, .dim = sa->d,
                       .sampling = ch->sampling, .accounting = DPO_ACCOUNTING_RDP,
                       .group = ch->group, .m = b->m, .n = ch->n, .step = ch->step,
                       .neighbours = dpo_ledger_neighbours(L)};
    nz = (dpo_oracle_noise_t){DPO_ONOISE_SECAGG, sa->gamma, sa->size, sa->sigma, 0, sa->rho,
                              c.sampling != DPO_SAMPLING_DISJOINT ? 0 : c.group + 1, bits};
  } else if (sa->trust == DPO_TRUST_LOCAL) {
    /* the coordinator draws the batch: a local charge amplified by sampling would not hold
     * against it (refused here as a guard; the callers charge sampling none or disjoint) */
    if (ch->sampling != DPO_SAMPLING_NONE && ch->sampling != DPO_SAMPLING_DISJOINT)
      return dpo_err(DPO_EINVAL, "privacy.trust = local: a release charged with sampling %s "
                     "would be amplified against the coordinator that drew the batch",
                     dpo_sampling_name(ch->sampling));
    /* the claim: every party's guard prices sigma on its own sensitivity (privacy/guard.h) */
    nz = (dpo_oracle_noise_t){DPO_ONOISE_LOCAL_GAUSSIAN, ch->noise_scale, 1, 0, 0,
                              ch->noise_scale / ch->sensitivity,
                              ch->sampling == DPO_SAMPLING_DISJOINT ? ch->group + 1 : 0, 0};
  }
  double charged = 0;
  int refused = -2;
  /* charged BEFORE anything data-dependent is computed (privacy rule 2) */
  if ((rc = dpo_ledger_charge_parties(L, &c, sa->np, sa->plist, &charged, &refused))) return rc;
  int64_t used = 0;
  if (sa->local)
    rc = dpo_oracle_eval_sums_sampled(o, x, &nz, sa->lm, sa->ln, gsum);
  else if (b->m > 0)
    rc = dpo_oracle_eval_sums_noised(o, x, b, nz.kind == DPO_ONOISE_NONE ? NULL : &nz, 0, NULL,
                                     gsum, &used);
  else
    memset(gsum, 0, (size_t)sa->d * sizeof *gsum);
  /* central: rank 0 noises the plain sum (as the single-owner path) */
  if (!rc && sa->trust == DPO_TRUST_CENTRAL)
    rc = dpo_mech_release(ch, dpo_solver_rng(s), gsum, sa->d);
  return rc;
}
