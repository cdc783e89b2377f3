/* Oracle tests: full-batch, minibatch, clipped and metric evaluations at 1..4 ranks agree
 * (1e-12 relative) and equal a naive serial long-double computation; a NaN in one rank's
 * shard, or a non-finite x, fails every rank with the same status (no hang). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dpopt/comm.h"
#include "dpopt/config.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"
#include "../lib/test_optim_common.h"

#define N 1000
#define NH 300
#define D 12
#define LAMBDA 0.01
#define CLIPC 0.02
#define SEED 11
#define SEEDH 12

/* results of one rank count (filled on world rank 0) */
typedef struct {
  double F, g[D], Fb, gb[D], ls, gs[D], acc_tr, loss_tr, acc_ho, loss_ho;
  int64_t nb;
} res_t;

static int64_t batch_ids(int64_t *ids) {
  int64_t m = 0;
  for (int64_t r = 0; r < N; r++)
    if (t_u01(99, r, 0) < 0.2) ids[m++] = r;
  return m;
}

static void xpoint(double *x) {
  for (int j = 0; j < D; j++) x[j] = 3.0 * sin(1.0 + j);
}

static void run_k(int k, int sparse, res_t *out) {
  MPI_Comm sub = dpo_t_subcomm(k);
  if (sub == MPI_COMM_NULL) return;
  int r;
  MPI_Comm_rank(sub, &r);
  dpo_shard_t *s = t_shard(sub, N, D, sparse, SEED), *h = t_shard(sub, NH, D, sparse, SEEDH);
  dpo_model_t *m = NULL;
  dpo_oracle_t *o1 = NULL, *o2 = NULL;
  dpo_clip_t clip = {DPO_CLIP_L2, CLIPC};
  int rc = dpo_model_create("logreg", LAMBDA, &m);
  T_CHECK(rc == DPO_OK, "model: %s", dpo_errmsg());
  rc = dpo_oracle_create(sub, m, s, NULL, &o1);
  T_CHECK(rc == DPO_OK, "oracle: %s", dpo_errmsg());
  rc = dpo_oracle_create(sub, m, s, &clip, &o2);
  T_CHECK(rc == DPO_OK, "oracle clip: %s", dpo_errmsg());
  rc = dpo_oracle_set_heldout(o1, h);
  T_CHECK(rc == DPO_OK, "heldout: %s", dpo_errmsg());
  T_CHECK(dpo_oracle_dim(o1) == D && dpo_oracle_nglobal(o1) == N, "dims");
  if (r == 0) {
    double x[D];
    int64_t ids[N];
    xpoint(x);
    int64_t m_ = batch_ids(ids);
    dpo_batch_t b = {ids, m_};
    rc = dpo_oracle_eval(o1, x, NULL, 1, &out->F, out->g);
    T_CHECK(rc == DPO_OK, "eval: %s", dpo_errmsg());
    rc = dpo_oracle_eval(o1, x, &b, 1, &out->Fb, out->gb);
    T_CHECK(rc == DPO_OK, "eval batch: %s", dpo_errmsg());
    rc = dpo_oracle_eval_metric(o1, x, 0, &out->loss_tr, &out->acc_tr);
    T_CHECK(rc == DPO_OK, "metric: %s", dpo_errmsg());
    rc = dpo_oracle_eval_metric(o1, x, 1, &out->loss_ho, &out->acc_ho);
    T_CHECK(rc == DPO_OK, "metric heldout: %s", dpo_errmsg());
    dpo_oracle_stats_t st;
    dpo_oracle_get_stats(o1, &st);
    T_CHECK(st.evals == 4, "evals = %ld", (long)st.evals);
    rc = dpo_oracle_finish(o1, DPO_OK);
    T_CHECK(rc == DPO_OK, "finish: %s", dpo_errmsg());
    rc = dpo_oracle_eval_sums(o2, x, &b, 1, &out->ls, out->gs, &out->nb);
    T_CHECK(rc == DPO_OK, "eval sums clip: %s", dpo_errmsg());
    rc = dpo_oracle_finish(o2, DPO_OK);
    T_CHECK(rc == DPO_OK, "finish 2: %s", dpo_errmsg());
  } else {
    rc = dpo_oracle_serve(o1);
    T_CHECK(rc == DPO_OK, "serve: %s", dpo_errmsg());
    rc = dpo_oracle_serve(o2);
    T_CHECK(rc == DPO_OK, "serve 2: %s", dpo_errmsg());
  }
  dpo_oracle_destroy(o1);
  dpo_oracle_destroy(o2);
  dpo_model_destroy(m);
  t_free(s);
  t_free(h);
  MPI_Comm_free(&sub);
}

/* Failure injection: NaN in the shard of sub-rank `bad` (or a bad x when bad < 0). */
static void fail_k(int k, int bad, int through_solver) {
  MPI_Comm sub = dpo_t_subcomm(k);
  if (sub == MPI_COMM_NULL) return;
  int r;
  MPI_Comm_rank(sub, &r);
  dpo_shard_t *s = t_shard(sub, N, D, 0, SEED);
  if (r == bad) s->X[3 * D + 1] = NAN;
  dpo_model_t *m = NULL;
  dpo_oracle_t *o = NULL;
  dpo_model_create("logreg", LAMBDA, &m);
  int rc = dpo_oracle_create(sub, m, s, NULL, &o);
  T_CHECK(rc == DPO_OK, "oracle: %s", dpo_errmsg());
  int expect = bad >= 0 ? DPO_EFORMAT : DPO_EINVAL;
  if (through_solver) {
    dpo_config_t *cfg = NULL;
    dpo_config_create(&cfg);
    dpo_config_set(cfg, "data.row_l2_bound", "1", "test");
    dpo_solver_t *sv = NULL;
    /* a privacy setting without a specification would be ignored: refused, on every rank */
    dpo_config_set(cfg, "privacy.public_n", "100", "test");
    rc = dpo_solver_create(o, dpo_algo_find("gd"), cfg, NULL, NULL, NULL, &sv);
    T_CHECK(rc == DPO_EINVAL && !sv && strstr(dpo_errmsg(), "privacy.public_n"),
            "solver with privacy.public_n and no spec: %s (%s)", dpo_strerror(rc), dpo_errmsg());
    dpo_config_destroy(cfg);
    dpo_config_create(&cfg);
    dpo_config_set(cfg, "data.row_l2_bound", "1", "test");
    rc = dpo_solver_create(o, dpo_algo_find("gd"), cfg, NULL, NULL, NULL, &sv);
    T_CHECK(rc == DPO_OK, "solver: %s", dpo_errmsg());
    dpo_run_opts_t op;
    dpo_run_opts_default(&op);
    op.max_iter = 5;
    op.quiet = 1;
    rc = dpo_solver_run(sv, &op);
    dpo_solver_destroy(sv);
    dpo_config_destroy(cfg);
  } else if (r == 0) {
    double x[D];
    xpoint(x);
    if (bad < 0) x[2] = NAN;
    int erc = dpo_oracle_eval(o, x, NULL, 1, NULL, x);
    T_CHECK(erc == expect, "k=%d bad=%d: eval returned %s", k, bad, dpo_strerror(erc));
    rc = dpo_oracle_finish(o, erc);
  } else {
    rc = dpo_oracle_serve(o);
  }
  T_CHECK(rc == expect, "k=%d bad=%d solver=%d: rank %d returned %s (%s), expected %s", k, bad,
          through_solver, r, dpo_strerror(rc), dpo_errmsg(), dpo_strerror(expect));
  if (bad >= 0)
    T_CHECK(strstr(dpo_errmsg(), "non-finite") != NULL, "detail of the failing rank: %s",
            dpo_errmsg());
  dpo_oracle_destroy(o);
  dpo_model_destroy(m);
  t_free(s);
  MPI_Comm_free(&sub);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (P > 4) P = 4;
  for (int sparse = 0; sparse <= 1; sparse++) {
    res_t res[5];
    memset(res, 0, sizeof res);
    for (int k = 1; k <= P; k++) run_k(k, sparse, &res[k]);
    if (wr == 0) {
      /* the same computation at 2..P ranks */
      for (int k = 2; k <= P; k++) {
        double a[1] = {res[k].F}, b[1] = {res[1].F};
        T_CHECK(dpo_t_reldiff(a, b, 1) <= 1e-12, "sparse=%d k=%d F", sparse, k);
        T_CHECK(dpo_t_reldiff(res[k].g, res[1].g, D) <= 1e-12, "sparse=%d k=%d g: %g", sparse,
                k, dpo_t_reldiff(res[k].g, res[1].g, D));
        T_CHECK(dpo_t_reldiff(res[k].gb, res[1].gb, D) <= 1e-12, "sparse=%d k=%d gb", sparse, k);
        T_CHECK(dpo_t_reldiff(res[k].gs, res[1].gs, D) <= 1e-12, "sparse=%d k=%d gs", sparse, k);
        T_CHECK(fabs(res[k].Fb - res[1].Fb) <= 1e-12 * fabs(res[1].Fb), "Fb k=%d", k);
        T_CHECK(fabs(res[k].ls - res[1].ls) <= 1e-12 * fabs(res[1].ls), "ls k=%d", k);
        T_CHECK(res[k].nb == res[1].nb, "n_used k=%d", k);
        T_CHECK(res[k].acc_tr == res[1].acc_tr && res[k].acc_ho == res[1].acc_ho, "acc k=%d", k);
        T_CHECK(fabs(res[k].loss_ho - res[1].loss_ho) <= 1e-12 * res[1].loss_ho, "lossho k=%d",
                k);
      }
      /* against the naive serial computation over the full data set */
      dpo_shard_t *full = t_rows(N, 0, N, D, sparse, SEED);
      dpo_shard_t *hfull = t_rows(NH, 0, NH, D, sparse, SEEDH);
      double x[D], F, g[D], ls, gs[D];
      int64_t ids[N];
      xpoint(x);
      int64_t mb = batch_ids(ids);
      t_naive(full, x, LAMBDA, NULL, 0, 0, &F, g, 1);
      for (int k = 1; k <= P; k++) {
        T_CHECK(fabs(res[k].F - F) <= 1e-12 * fabs(F), "sparse=%d k=%d F %.17g vs naive %.17g",
                sparse, k, res[k].F, F);
        T_CHECK(dpo_t_reldiff(res[k].g, g, D) <= 1e-12, "sparse=%d k=%d g vs naive: %g", sparse,
                k, dpo_t_reldiff(res[k].g, g, D));
      }
      t_naive(full, x, LAMBDA, ids, mb, 0, &F, g, 1);
      T_CHECK(fabs(res[1].Fb - F) <= 1e-12 * fabs(F), "batch F vs naive");
      T_CHECK(dpo_t_reldiff(res[1].gb, g, D) <= 1e-12, "batch g vs naive: %g",
              dpo_t_reldiff(res[1].gb, g, D));
      int64_t cnt = t_naive(full, x, LAMBDA, ids, mb, CLIPC, &ls, gs, 0);
      T_CHECK(res[1].nb == cnt, "clip n_used %ld vs %ld", (long)res[1].nb, (long)cnt);
      T_CHECK(fabs(res[1].ls - ls) <= 1e-12 * fabs(ls), "clip loss sum vs naive");
      T_CHECK(dpo_t_reldiff(res[1].gs, gs, D) <= 1e-12, "clip g sum vs naive: %g",
              dpo_t_reldiff(res[1].gs, gs, D));
      /* clipping must actually bind on this data: the clipped sum differs from the raw one */
      t_naive(full, x, LAMBDA, ids, mb, 0, &F, g, 0);
      T_CHECK(dpo_t_reldiff(gs, g, D) > 1e-3, "clip threshold does not bind (test too weak)");
      double gn = 0;
      for (int j = 0; j < D; j++) gn = fmax(gn, fabs(gs[j]));
      T_CHECK(gn <= CLIPC * cnt, "clipped sum exceeds m C");
      /* metrics: accuracy and mean loss */
      for (int pass = 0; pass < 2; pass++) {
        dpo_shard_t *sh = pass ? hfull : full;
        long double L = 0;
        double correct = 0;
        for (int64_t i = 0; i < sh->n; i++) {
          long double t = t_row_dot(sh, i, x), mrg = sh->y[i] * t;
          L += mrg > 0 ? log1pl(expl(-mrg)) : -mrg + log1pl(expl(mrg));
          correct += ((t >= 0 ? 1.0 : -1.0) == sh->y[i]);
        }
        double lm = (double)(L / sh->n), am = correct / sh->n;
        double lo = pass ? res[1].loss_ho : res[1].loss_tr;
        double ao = pass ? res[1].acc_ho : res[1].acc_tr;
        T_CHECK(fabs(lo - lm) <= 1e-12 * lm, "metric loss pass %d: %.17g vs %.17g", pass, lo, lm);
        T_CHECK(fabs(ao - am) <= 1e-15, "accuracy pass %d: %g vs %g", pass, ao, am);
      }
      t_free(full);
      t_free(hfull);
    }
  }
  /* failures: a worker's NaN (last rank), rank 0's own NaN, a non-finite x; direct and
   * through the solver driver */
  for (int k = 1; k <= P; k++) {
    fail_k(k, k - 1, 0);
    fail_k(k, -1, 0);
    fail_k(k, k - 1, 1);
  }
  if (P >= 3) fail_k(P, 1, 0);
  return dpo_t_finish("test_optim_oracle");
}
