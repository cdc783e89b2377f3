/* The set-up the solver MPI tests share (test_optim_algos, test_dp_algos, test_sco,
 * test_sco2): on the first k world ranks, a synthetic logistic shard (t_shard), the logreg
 * model, a config from key/value lists, a seeded noise stream on rank 0, then an oracle and a
 * solver.  The test opens its own ledger (collective on f.sub) before t_run_solver and closes
 * it after t_run_close. */
#ifndef DPO_TEST_RUN_COMMON_H
#define DPO_TEST_RUN_COMMON_H

#include "dpopt/comm.h"
#include "dpopt/config.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/rng.h"
#include "dpopt/spec.h"
#include "mpitest.h"
#include "test_optim_common.h"

typedef struct {
  MPI_Comm sub; /* MPI_COMM_NULL on ranks outside the first k: nothing else is set */
  int rank;
  dpo_shard_t *s;
  dpo_model_t *m;
  dpo_config_t *cfg;
  dpo_rng_t *rng; /* rank 0 only; NULL when rng_seed is 0 */
  dpo_oracle_t *o;
  dpo_solver_t *sv;
} t_run_t;

/* Returns 0 when this rank takes part (f->sub != MPI_COMM_NULL).  kv0 then kv1: key/value
 * lists ending in NULL (either may be NULL; kv1 overrides kv0). */
static inline int t_run_open(t_run_t *f, int k, int64_t n, int32_t d, uint64_t seed,
                             double lambda, const char *const *kv0, const char *const *kv1,
                             uint64_t rng_seed) {
  memset(f, 0, sizeof *f);
  f->sub = dpo_t_subcomm(k);
  if (f->sub == MPI_COMM_NULL) return 1;
  MPI_Comm_rank(f->sub, &f->rank);
  f->s = t_shard(f->sub, n, d, 0, seed);
  dpo_model_create("logreg", lambda, &f->m);
  dpo_config_create(&f->cfg);
  for (; kv0 && kv0[0]; kv0 += 2) dpo_config_set(f->cfg, kv0[0], kv0[1], "test");
  for (; kv1 && kv1[0]; kv1 += 2) dpo_config_set(f->cfg, kv1[0], kv1[1], "test");
  if (f->rank == 0 && rng_seed) dpo_rng_create(1, rng_seed, 0, &f->rng);
  return 0;
}

/* The oracle and a solver of alg from x0, charging L (NULL for non-private algorithms), with
 * the privacy specification read from the config as a run reads it (dpopt/spec.h). */
static inline int t_run_solver(t_run_t *f, const dpo_algo_t *alg, dpo_ledger_t *L,
                               const double *x0) {
  dpo_privacy_spec_t spec;
  int rc = dpo_privacy_spec_from_config(f->cfg, &spec);
  if (!rc) rc = dpo_oracle_create(f->sub, f->m, f->s, NULL, &f->o);
  if (!rc) rc = dpo_solver_create_spec(f->o, alg, f->cfg, &spec, f->rng, L, x0, &f->sv);
  return rc;
}

static inline void t_run_close(t_run_t *f) {
  if (f->sub == MPI_COMM_NULL) return;
  dpo_solver_destroy(f->sv);
  dpo_oracle_destroy(f->o);
  dpo_rng_destroy(f->rng);
  dpo_config_destroy(f->cfg);
  dpo_model_destroy(f->m);
  t_free(f->s);
  MPI_Comm_free(&f->sub);
}

#endif
