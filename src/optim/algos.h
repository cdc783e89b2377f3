/* Private: the algorithm table's entries (one per file in src/optim/) and small helpers. */
#ifndef DPO_OPTIM_ALGOS_H
#define DPO_OPTIM_ALGOS_H

#include "dpopt/optim.h"

extern const dpo_algo_t dpo__algo_gd;
extern const dpo_algo_t dpo__algo_hb;
extern const dpo_algo_t dpo__algo_nag;
extern const dpo_algo_t dpo__algo_masg;
extern const dpo_algo_t dpo__algo_lbfgs;
extern const dpo_algo_t dpo__algo_pnsgd;       /* sco_pnsgd.c (issue 4) */
extern const dpo_algo_t dpo__algo_phased_sgd;  /* sco_phased.c (issue 4) */
extern const dpo_algo_t dpo__algo_phased_erm;  /* sco_erm.c (issue 4) */
extern const dpo_algo_t dpo__algo_sc_reduce;   /* sco_sc.c (issue 4) */
extern const dpo_algo_t dpo__algo_phased_sc;   /* sco_sc.c (issue 4) */
extern const dpo_algo_t dpo__algo_dp_sgd_rdp;  /* sco_dpsgd.c (issue 4) */
/* private algorithms (dp_*.c, shared machinery in dp_common.c) */
extern const dpo_algo_t dpo__algo_dp_gd;
extern const dpo_algo_t dpo__algo_dp_hb;
extern const dpo_algo_t dpo__algo_dp_shb;
extern const dpo_algo_t dpo__algo_dp_gdws;
extern const dpo_algo_t dpo__algo_dp_sgdws;
extern const dpo_algo_t dpo__algo_dp_onlinegdws;
extern const dpo_algo_t dpo__algo_dp_nag;
extern const dpo_algo_t dpo__algo_dp_nag_opt;
extern const dpo_algo_t dpo__algo_dp_masg;
extern const dpo_algo_t dpo__algo_dp_masg_opt;
extern const dpo_algo_t dpo__algo_dp_mag;
extern const dpo_algo_t dpo__algo_dp_smag;

/* What dpo_solver_constants and dpo__optim_step will ask of the config once the data are
 * loaded, asked now (registry.c, part of dpo_algo_check): a declared row bound giving a
 * finite L for model m, unless the step is given.  Not collective. */
int dpo__algo_L_check(const dpo_algo_t *a, const dpo_config_t *cfg, const dpo_model_t *m);

/* The name of the solver's algorithm (its table's name). */
const char *dpo__solver_algo_name(const dpo_solver_t *s);

/* A step size: algo.<key> if given, else c / L with L from the declared row bound (so L is
 * only required when the user did not set the step).  *L_out gets L or NAN. */
int dpo__optim_step(const dpo_solver_t *s, const char *key, double c, double *alpha,
                    double *L_out);

/* M-ASG stage schedule of (Kuru et al. 2022, (4.7)): stage k (1-based) and its step size and length for
 * iteration t (0-based), stage 1 of length n1, then n_k = 2^k ceil(sqrt(kappa) ln 2^(p+2)),
 * alpha_k = alpha1 / 2^(2k) (k >= 2).  *first = 1 when t starts a stage. */
void dpo__masg_schedule(int64_t t, int64_t n1, double kappa, double p, double alpha1,
                        int *stage, double *alpha, int64_t *len, int *first);

#endif
