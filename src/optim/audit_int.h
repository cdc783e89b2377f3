/* The audit's private state, shared by audit_run.c (the construction, one trial, the
 * analysis), audit_wb.c (the white-box observer and its analysis), which calls nothing in
 * audit_run.c, and the driver above both (src/run/run_audit.c: the trials over the ranks,
 * dpopt admm's methods, the run directory). */
#ifndef DPO_OPTIM_AUDIT_INT_H
#define DPO_OPTIM_AUDIT_INT_H

#include <stdint.h>

#include "dpopt/audit.h"
#include "dpopt/kernels.h"
#include "dpopt/optim.h"
#include "dpopt/privacy.h"

#define DPO__AUDIT_MAXD 2
#define DPO__AUDIT_MAXTA 16 /* audit.tune: candidate algorithms (tune.algo) */

typedef struct {
  const char *algo_name; /* NULL: --mechanism laplace */
  const char *admm;      /* audit.admm: dpadmm | dpaccadmm | consensus (dpopt admm), or NULL */
  int laplace;
  int clip_mode;         /* 1: clipping construction (d = 1) */
  int add_remove;
  int32_t d;            /* features of the data sets */
  int32_t dout;         /* length of the released vector the tests read (d, or d + p for
                           DP-(Acc)ADMM: x_T and y_T) */
  int64_t n;
  int64_t row;           /* index of the audited row (audit.row) */
  int64_t sparties;      /* audit.secagg_parties: parties simulated by a secagg trial */
  double B;              /* norm of the audited row */
  double x0;
  double eps, delta;
  const char *acct; /* privacy.accountant (default pld, as in train) */
  const dpo_privacy_spec_t *spec; /* the caller's (borrowed) */
  dpo_clip_t clip;
  int has_clip;
  const char *model_name;
  double lambda;
  int64_t iters;
  /* dpopt admm's keys (audit.admm): the run's defaults */
  double rho, mu, eta, sigma_fixed;
  int64_t restart;
  const char *sigma_rule;
  int white_box; /* audit.white_box: observe every release (audit_wb.c) */
  int final_model; /* white box on pnsgd / phased-sgd: only x_T is released (dpo__wb_final) */
  int tune;        /* audit.tune: dpopt tune's search by parallel composition (the trials:
                      src/run/run_audit_tune.c); a trial's output is (chosen candidate, x) */
  int tune_mean;   /* audit.tune with tune.mean: the geometric search; a trial's output is
                      (chosen candidate, x, its noisy score) */
  int tune_valid;  /* audit.canary = valid: tune.mean's canary is a validation row (d = 2) */
  double tune_b, tune_eps0, tune_z; /* tune.mean: the score's scale, eps0, a Gaussian z (NAN) */
  int ntune;
  const char *tune_algo[DPO__AUDIT_MAXTA]; /* tune.algo's names (into tune_buf) */
  char tune_buf[256];
} dpo__audit_t;

/* ---- construction, trial, analysis (audit_run.c) ---- */
struct dpo__wb_obs;

/* Settings and the worst-case construction from cfg and the caller's spec (borrowed). */
int dpo__audit_setup(const dpo_config_t *cfg, const dpo_privacy_spec_t *spec, dpo__audit_t *a);
/* n rows of zeros with label +1 in the construction's d ("audit:WHAT"). */
int dpo__audit_shard_zero(const dpo__audit_t *a, int64_t n, const char *what, dpo_shard_t **out);
/* The data set D (which = 0) or D' (which = 1). */
int dpo__audit_shard(const dpo__audit_t *a, int which, dpo_shard_t **out);
/* The in-memory ledger the audited run would have (its accountant and relation). */
int dpo__audit_ledger(const dpo__audit_t *a, dpo_ledger_t **L);
/* This rank's noise stream: secure, or seeded under dpopt-test's --test-seed only. */
int dpo__audit_rng(int rank, dpo_rng_t **rng);
/* One trial of dpopt train's algorithm or the Laplace release (not audit.admm): the
 * released vector into out[0..a->dout) (NULL: the white-box observer obs keeps it), what
 * the ledger spent into *spent, *dspent. */
int dpo__audit_trial(const dpo__audit_t *a, const dpo_config_t *cfg, const dpo_model_t *m,
                     const dpo_shard_t *s, dpo_rng_t *rng, double *out, double *spent,
                     double *dspent, struct dpo__wb_obs *obs);
/* Rank 0: the outputs of P ranks (rank r's trials t = r, r + P, ... at buf + displs[r]),
 * sorted into all[set], analysed against the claim sp = (eps, delta) spent; fills res. */
int dpo__audit_collect(dpo__audit_t *a, int P, const int *displs, const double *buf,
                       double *const all[2], int64_t N, double alpha, const double sp[2],
                       dpo_audit_result_t *res);
/* Rank 0, audit.tune with tune.mean (audit_tgeo.c): X[set][trial * (d + 2)] = (chosen
 * candidate, x, noisy score), the fixed event's bound against the claim. */
int dpo__audit_tgeo_analyse(const dpo__audit_t *a, double *const X[2], int64_t N, double alpha,
                            double claimed, dpo_audit_result_t *res);
/* The result as dpo_audit_write_json writes it (with the test switches planted, in test
 * builds); NULL when out of memory. */
struct json_object;
struct json_object *dpo__audit_json(const dpo_audit_result_t *res);

/* ---- white-box audit (audit_wb.c) ---- */

/* A trial's record: DPO__WB_HDR numbers, then one per release (the release's log-likelihood
 * ratio, over its charged pure eps for Laplace releases). */
#define DPO__WB_HDR 10
enum { DPO__WB_S = 0, DPO__WB_NREL, DPO__WB_NSAT, DPO__WB_MU2, DPO__WB_EPSMAX, DPO__WB_FLAGS,
       DPO__WB_M, DPO__WB_N, DPO__WB_Z };
/* flags: mechanisms seen; subsampled; not independent (disjoint); Poisson; the noise
 * multiplier sigma / sensitivity varies over the releases */
enum { DPO__WB_GAUSS = 1, DPO__WB_LAP = 2, DPO__WB_SUB = 4, DPO__WB_DEP = 8, DPO__WB_POIS = 16,
       DPO__WB_ZVAR = 32 };

typedef struct dpo__wb_obs {
  const dpo__audit_t *a;
  double S, nsat, mu2, epsmax, z, m, n;
  int flags;
  int64_t nrel, cap;
  double *l; /* per-release values */
} dpo__wb_obs_t;

/* Start a trial (frees nothing: the buffer is reused). */
void dpo__wb_begin(dpo__wb_obs_t *o, const dpo__audit_t *a);
/* The solver's release observer (dpo_release_fn): arg is a dpo__wb_obs_t. */
int dpo__wb_observe(void *arg, const dpo_release_t *r);
/* The same with the two worlds' noiseless releases c0 (D), c1 (D') given by the caller (the
 * replayed consensus party, run_audit_job.c); pres[w]: the canary is in world w's data. */
int dpo__wb_observe_centres(dpo__wb_obs_t *o, const dpo_release_t *r, const double *c0,
                            const double *c1, const int pres[2]);
/* The trial's record into rec[0 .. DPO__WB_HDR + K); DPO_EINVAL if it made a number of
 * releases other than K. */
int dpo__wb_record(const dpo__wb_obs_t *o, int64_t K, double *rec);
void dpo__wb_free(dpo__wb_obs_t *o);
/* The statistics of N trials in two halves, per set: t[half][set] (half 0 selects the test,
 * half 1 bounds it), len zeros each; after a failure free what was made with
 * dpo__wb_halves_free (t starts NULL).  Shared with audit_run.c's analyses. */
int dpo__wb_halves_new(double *t[2][2], int64_t len);
void dpo__wb_halves_free(double *t[2][2]);
/* Rank 0: the analysis of N records of each set (rec[set][trial * (HDR + K) + j]). */
int dpo__wb_analyse(const dpo__audit_t *a, double *const rec[2], int64_t N, int64_t K,
                    double alpha, double delta, double claimed, dpo_audit_result_t *res);

/* Rank 0, the hidden-state audit of the final model (audit.white_box on pnsgd and
 * phased-sgd, whose steps are not releases): X[set][trial * d + j] are the final models; a
 * threshold on x_T along the canary's direction bounds mu (the gdp test of one release). */
int dpo__wb_final(const dpo__audit_t *a, double *const X[2], int64_t N, double alpha,
                  double delta, double claimed, dpo_audit_result_t *res);

#endif
