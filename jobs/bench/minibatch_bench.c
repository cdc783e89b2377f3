/* Minibatch-step benchmark (driver: jobs/bench/minibatch).
 *
 * For each n of --ns (dense n x d logistic data, each rank generating its share), in one run:
 *   (a) a full gradient pass through the oracle (dpo_oracle_eval_sums on all rows), best of
 *       --reps: the unit every other number is divided by;
 *   (b) dp-sgd-rdp through the solver (seeded, algo.z fixed, a budget that never refuses),
 *       --steps steps of batch --m with algo.sampling = poisson, then wor: time per step,
 *       everything included (sampling, broadcast of the ids, gradient of the batch rows,
 *       noise, ledger charge);
 *   (c) the batch samplers alone on rank 0, per step: the exact geometric gaps
 *       (dpo__poisson_batch), the per-row Bernoulli loop they replace (n draws of
 *       dpo_rng_below(n) < m: the sampler before issue 16), and the partial Fisher-Yates;
 *   (d) the parts of a step alone: one batch of m rows through the oracle (grad) and the
 *       Gaussian noise of d coordinates (noise).
 * "poisson before" = (b) - (c, gaps) + (c, per-row loop): the step as it was with the old
 * sampler, estimated in the same run.  Prints one "RESULT" line per n.
 *
 *   mpirun -np P minibatch_bench [--ns "2e4 2e5 1e6"] [--d 100] [--m 1000] [--steps 200]
 *                                [--reps 5] [--steps-only 1]
 * --steps-only 1 measures (a) and (b) only (no internal symbols are called: the binary then
 * also runs against an older libdpopt, for before/after comparisons).
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/comm.h"
#include "dpopt/config.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/spec.h"
#include "dpopt/rng.h"
#include "dpopt/status.h"
#include "bench_common.h"
#include "privacy/sample.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    int rc_ = (call);                                                                        \
    if (rc_) {                                                                               \
      fprintf(stderr, "minibatch_bench: %s: %s\n", #call, dpo_errmsg());                     \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
  } while (0)

static dpo_shard_t *make_shard(MPI_Comm comm, int64_t n, int32_t d) {
  int r, P;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &P);
  int64_t base = n / P, rem = n % P;
  dpo_shard_t *s = calloc(1, sizeof *s);
  s->n = base + (r < rem);
  s->row0 = r * base + (r < rem ? r : rem);
  s->n_global = n;
  s->d = d;
  s->labels = DPO_LABELS_BINARY;
  snprintf(s->source, sizeof s->source, "minibatch_bench");
  s->X = malloc((size_t)(s->n * d + 1) * sizeof *s->X);
  s->y = malloc((size_t)(s->n + 1) * sizeof *s->y);
  if (!s->X || !s->y) {
    fprintf(stderr, "minibatch_bench: out of memory for %lld x %d\n", (long long)s->n, d);
    MPI_Abort(comm, 1);
  }
  uint64_t st = 0x9e3779b97f4a7c15ULL * (uint64_t)(r + 1);
  double sc = 1.0 / sqrt((double)d); /* rows of norm <= 1: the declared row bound */
  for (int64_t i = 0; i < s->n * d; i++) s->X[i] = (2 * xs_unif(&st) - 1) * sc;
  for (int64_t i = 0; i < s->n; i++) s->y[i] = xs_unif(&st) < 0.5 ? 1.0 : -1.0;
  return s;
}

static void free_shard(dpo_shard_t *s) {
  free(s->X);
  free(s->y);
  free(s);
}

/* seconds per step of dp-sgd-rdp with the given sampling (max over ranks) */
static double run_dpsgd(MPI_Comm comm, const dpo_model_t *mdl, const dpo_shard_t *s,
                        const char *samp, int64_t m, int64_t steps) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  int poisson = !strcmp(samp, "poisson");
  char ms[32], ts[32], ns[32];
  snprintf(ms, sizeof ms, "%lld", (long long)m);
  snprintf(ts, sizeof ts, "%lld", (long long)steps);
  snprintf(ns, sizeof ns, "%lld", (long long)s->n_global);
  dpo_config_t *cfg;
  CHECK(dpo_config_create(&cfg));
  /* Poisson batches are add-remove: the rate's size must be public (the rdp ledger takes no
   * noisy count); the bench's data are public */
  const char *kv[] = {"data.row_l2_bound", "1", "algo.sampling", samp, "algo.m", ms,
                      "algo.iters", ts, "algo.z", "1.0", "privacy.public_n", ns, NULL};
  for (int i = 0; kv[i]; i += 2) CHECK(dpo_config_set(cfg, kv[i], kv[i + 1], "bench"));
  dpo_rng_t *rng = NULL;
  if (rank == 0) CHECK(dpo_rng_create(1, 5, 0, &rng));
  dpo_ledger_t *L;
  CHECK(dpo_ledger_open_ex(comm, 1e9, 0.5, NULL, 0, "rdp",
                           poisson ? DPO_NEIGHBOURS_ADD_REMOVE : DPO_NEIGHBOURS_REPLACE_ONE, &L));
  dpo_oracle_t *o;
  dpo_solver_t *sv;
  double *x0 = calloc((size_t)s->d, sizeof *x0);
  CHECK(dpo_oracle_create(comm, mdl, s, NULL, &o));
  dpo_privacy_spec_t spec;
  CHECK(dpo_privacy_spec_read(cfg, DPO_SPEC_FOR_TRAIN, &spec));
  CHECK(dpo_solver_create_spec(o, dpo_algo_find("dp-sgd-rdp"), cfg, &spec, rng, L, x0, &sv));
  dpo_run_opts_t op;
  dpo_run_opts_default(&op);
  op.max_iter = steps + 10;
  op.quiet = 1;
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  CHECK(dpo_solver_run(sv, &op));
  double t = MPI_Wtime() - t0, tmax;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
  dpo_solver_destroy(sv);
  dpo_oracle_destroy(o);
  dpo_ledger_close(L);
  dpo_rng_destroy(rng);
  dpo_config_destroy(cfg);
  free(x0);
  return tmax / (double)steps;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, P;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  const char *ns = "2e4 2e5 1e6";
  int32_t d = 100;
  int64_t m = 1000, steps = 200;
  int reps = 5, steps_only = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--ns")) ns = argv[i + 1];
    else if (!strcmp(argv[i], "--d")) d = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--m")) m = (int64_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps")) steps = (int64_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps-only")) steps_only = atoi(argv[i + 1]);
    else {
      if (!rank) fprintf(stderr, "minibatch_bench: unknown option %s\n", argv[i]);
      MPI_Abort(comm, 2);
    }
  }
  char *list = strdup(ns), *save = NULL;
  if (!rank)
    printf("%9s %9s %10s %10s %10s %10s %9s %9s %9s %9s %9s %10s %8s\n", "n", "full[ms]",
           "pois[ms]", "wor[ms]", "pois/full", "wor/full", "gaps[us]", "rows[us]", "fy[us]",
           "grad[us]", "noise[us]", "before/now", "steps/s");
  for (char *tok = strtok_r(list, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
    int64_t n = (int64_t)atof(tok);
    if (n < m) continue;
    dpo_shard_t *s = make_shard(comm, n, d);
    dpo_model_t *mdl;
    CHECK(dpo_model_create("logreg", 0.0, &mdl));
    /* (a) full passes */
    dpo_oracle_t *o;
    CHECK(dpo_oracle_create(comm, mdl, s, NULL, &o));
    double tfull = INFINITY, tbatch = 0, tnoise = 0;
    if (rank == 0) {
      double *x = calloc((size_t)d, sizeof *x), *g = malloc((size_t)d * sizeof *g);
      for (int32_t j = 0; j < d; j++) x[j] = 0.01 * (j % 7);
      int64_t used;
      for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        CHECK(dpo_oracle_eval_sums(o, x, NULL, 0, NULL, g, &used));
        double t = MPI_Wtime() - t0;
        if (t < tfull) tfull = t;
      }
      if (steps_only) goto full_done;
      /* one batch of m rows through the oracle (the gradient part of a step) */
      dpo_rng_t *br;
      CHECK(dpo_rng_create(1, 4, 0, &br));
      int64_t *bid = NULL, bcap = 0, bm;
      double tb = 0;
      for (int r = 0; r < 20; r++) {
        CHECK(dpo__poisson_batch(br, m, n, n, &bid, &bcap, &bm));
        dpo_batch_t b = {bid, bm};
        double t0 = MPI_Wtime();
        CHECK(dpo_oracle_eval_sums(o, x, &b, 0, NULL, g, &used));
        tb += MPI_Wtime() - t0;
      }
      tbatch = tb / 20;
      /* the Gaussian noise of one step (exact discrete sampler, d coordinates) */
      double t0 = MPI_Wtime();
      for (int r = 0; r < 20; r++) CHECK(dpo_mech_gaussian(br, 1.0, g, d));
      tnoise = (MPI_Wtime() - t0) / 20;
      free(bid);
      dpo_rng_destroy(br);
    full_done:
      CHECK(dpo_oracle_finish(o, 0));
      free(x);
      free(g);
    } else {
      CHECK(dpo_oracle_serve(o));
    }
    dpo_oracle_destroy(o);
    MPI_Bcast(&tfull, 1, MPI_DOUBLE, 0, comm);
    /* (b) DP-SGD steps */
    double tp = run_dpsgd(comm, mdl, s, "poisson", m, steps);
    double tw = run_dpsgd(comm, mdl, s, "wor", m, steps);
    /* (c) samplers alone, rank 0 */
    double tgap = 0, trow = 0, tfy = 0;
    if (rank == 0 && steps_only) {
      printf("%9lld %9.3f %10.3f %10.3f %10.4f %10.4f (steps only)\n", (long long)n, 1e3 * tfull,
             1e3 * tp, 1e3 * tw, tp / tfull, tw / tfull);
      fflush(stdout);
    } else if (rank == 0) {
      dpo_rng_t *rng;
      CHECK(dpo_rng_create(1, 3, 0, &rng));
      int64_t *ids = NULL, cap = 0, mb, *pool = malloc((size_t)n * sizeof *pool);
      int64_t *wids = malloc((size_t)m * sizeof *wids), acc = 0;
      for (int64_t i = 0; i < n; i++) pool[i] = i;
      int R = 50;
      CHECK(dpo__poisson_batch(rng, m, n, n, &ids, &cap, &mb)); /* warm-up: grow ids once */
      double t0 = MPI_Wtime();
      for (int r = 0; r < R; r++) {
        CHECK(dpo__poisson_batch(rng, m, n, n, &ids, &cap, &mb));
        acc += mb;
      }
      tgap = (MPI_Wtime() - t0) / R;
      int Rr = n > 200000 ? 3 : 10;
      t0 = MPI_Wtime();
      for (int r = 0; r < Rr; r++) /* the sampler before issue 16 */
        for (int64_t i = 0; i < n; i++) acc += (int64_t)dpo_rng_below(rng, (uint64_t)n) < m;
      trow = (MPI_Wtime() - t0) / Rr;
      t0 = MPI_Wtime();
      for (int r = 0; r < R; r++) {
        dpo__wor_batch(rng, m, n, pool, wids);
        acc += wids[0];
      }
      tfy = (MPI_Wtime() - t0) / R;
      if (acc == 42) printf(" ");
      free(ids);
      free(pool);
      free(wids);
      dpo_rng_destroy(rng);
      double before = tp - tgap + trow;
      printf("%9lld %9.3f %10.3f %10.3f %10.4f %10.4f %9.1f %9.1f %9.1f %9.1f %9.1f %10.2f %8.0f"
             "\n", (long long)n, 1e3 * tfull, 1e3 * tp, 1e3 * tw, tp / tfull, tw / tfull,
             1e6 * tgap, 1e6 * trow, 1e6 * tfy, 1e6 * tbatch, 1e6 * tnoise, before / tp, 1.0 / tp);
      printf("RESULT ranks=%d n=%lld d=%d m=%lld t_full=%.6g t_poisson=%.6g t_wor=%.6g "
             "t_gaps=%.6g t_rows=%.6g t_fy=%.6g t_grad=%.6g t_noise=%.6g poisson_ratio=%.6g wor_ratio=%.6g "
             "poisson_before_ratio=%.6g\n",
             P, (long long)n, d, (long long)m, tfull, tp, tw, tgap, trow, tfy, tbatch, tnoise, tp / tfull,
             tw / tfull, before / tfull);
      fflush(stdout);
    }
    dpo_model_destroy(mdl);
    free_shard(s);
  }
  free(list);
  MPI_Finalize();
  return 0;
}
