/* HAMSI on 1..4 ranks: bit-identical factors with repro = 1 (same schedule, item blocks back
 * home), close results without it, convergence on a synthetic low-rank matrix (training
 * RMSE < 0.01, below mb-GD after the same number of epochs), DEFAULT options on
 * MovieLens-100K-shaped ratings at 2 and 3 ranks (finite, well below the initial RMSE and the
 * ratings' standard deviation, HAMSI below mb-GD), and the divergence guard. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/hamsi.h"
#include "dpopt/status.h"
#include "../lib/mpitest.h"

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double unit(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

/* Rank-r0 ratings y = u'v on a random pattern of density dens; rank p of P keeps every P-th
 * rating (in a scrambled order, so the routing inside HAMSI has work to do). */
static dpo_ratings_t *make(MPI_Comm c, int32_t nu, int32_t ni, int r0, double dens,
                           uint64_t seed) {
  int p, P;
  MPI_Comm_rank(c, &p);
  MPI_Comm_size(c, &P);
  dpo_ratings_t *R = calloc(1, sizeof *R);
  int64_t cap = (int64_t)((double)nu * ni * dens * 1.5 / P) + 64, n = 0, g = 0;
  R->user = malloc(sizeof(int32_t) * cap);
  R->item = malloc(sizeof(int32_t) * cap);
  R->r = malloc(sizeof(double) * cap);
  for (int32_t i = ni - 1; i >= 0; i--)
    for (int32_t u = 0; u < nu; u++) {
      uint64_t h = mix(seed ^ mix(((uint64_t)u << 32) | (uint32_t)i));
      /* every user and item gets ratings; some users much more (power-law-like) */
      double du = dens * (0.3 + 2.0 * (double)((u * 7919) % nu) / nu * ((u % 5) == 0 ? 2 : 0.7));
      if (unit(h) >= du) continue;
      if (g++ % P != p) continue;
      double y = 0;
      for (int q = 0; q < r0; q++)
        y += unit(mix(seed + 1000003ULL * u + q)) * unit(mix(~seed + 999983ULL * i + q));
      if (n == cap) {
        cap *= 2;
        R->user = realloc(R->user, sizeof(int32_t) * cap);
        R->item = realloc(R->item, sizeof(int32_t) * cap);
        R->r = realloc(R->r, sizeof(double) * cap);
      }
      R->user[n] = u;
      R->item[n] = i;
      R->r[n] = y;
      n++;
    }
  R->n = n;
  R->n_global = g;
  R->n_users = nu;
  R->n_items = ni;
  strcpy(R->source, "synthetic");
  return R;
}

static void drop(dpo_ratings_t *R) {
  free(R->user);
  free(R->item);
  free(R->r);
  free(R);
}

static dpo_hamsi_result_t *run(MPI_Comm c, const dpo_hamsi_opts_t *o, int32_t nu, int32_t ni,
                               int r0, double dens) {
  dpo_ratings_t *R = make(c, nu, ni, r0, dens, 42);
  dpo_hamsi_result_t *res = NULL;
  int st = dpo_hamsi_run(c, R, o, &res);
  T_CHECK(st == DPO_OK, "dpo_hamsi_run: %s %s", dpo_strerror(st), dpo_errmsg());
  drop(R);
  return res;
}

static int same(const double *a, const double *b, long n) { return !memcmp(a, b, sizeof(double) * n); }

/* the small HAMSI run of sections 2 and 6: rank 4, memory 3, eta 1, sigma0 0.01 */
static void small_opts(dpo_hamsi_opts_t *o) {
  dpo_hamsi_opts_default(o);
  o->r = 4;
  o->memory = 3;
  o->eta = 1;
  o->sigma0 = 0.01;
}

/* on_epoch of section 7: the last rank fails at epoch 2 (its message names it) */
static int fail_epoch(void *ctx, int64_t t) {
  int rank, size;
  MPI_Comm_rank(*(MPI_Comm *)ctx, &rank);
  MPI_Comm_size(*(MPI_Comm *)ctx, &size);
  if (rank == size - 1 && t == 2) return dpo_err(DPO_EIO, "on_epoch failed at epoch 2");
  return DPO_OK;
}

/* MPI_Allreduce calls of this process: this program's definition is the one the library's
 * calls reach (PMPI), so section 6 can count the library's waits for the other ranks */
static long n_allreduce;
int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  n_allreduce++;
  return PMPI_Allreduce(sb, rb, n, t, op, c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wr, ws;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  const int32_t nu = 90, ni = 70;
  dpo_hamsi_opts_t o;

  /* 1. bit-identical across rank counts (repro), HAMSI and mb-GD, both schedules; 6 blocks so
   * ranks hold 1 or 2 user intervals and item blocks */
  for (int var = 0; var < 4; var++) {
    dpo_hamsi_opts_default(&o);
    o.method = var < 2 ? DPO_MF_HAMSI : DPO_MF_MBGD;
    o.sched = var % 2 ? DPO_MF_SCHED_SHUFFLE : DPO_MF_SCHED_DET;
    o.part = var == 1 ? DPO_MF_STRATA : DPO_MF_STRATA_B;
    o.r = 4;
    o.nblocks = 6;
    o.memory = 3;
    o.eta = 1;
    o.sigma0 = 0.01;
    o.lambda = var == 0 ? 0.05 : 0;
    o.epochs = 12; /* two full cycles of the 6 strata */
    o.repro = 1;
    dpo_hamsi_result_t *ref = NULL;
    MPI_Comm c1 = dpo_t_subcomm(1);
    if (c1 != MPI_COMM_NULL) {
      ref = run(c1, &o, nu, ni, 3, 0.3);
      MPI_Comm_free(&c1);
    }
    for (int k = 2; k <= ws; k++) {
      MPI_Comm ck = dpo_t_subcomm(k);
      if (ck == MPI_COMM_NULL) continue;
      dpo_hamsi_result_t *res = run(ck, &o, nu, ni, 3, 0.3);
      if (res) {
        T_CHECK(res->home_ok == 1, "var %d, %d ranks: item blocks not back home", var, k);
        if (wr == 0 && ref) {
          T_CHECK(res->n_train == ref->n_train && res->n_test == ref->n_test,
                  "var %d, %d ranks: split differs", var, k);
          T_CHECK(same(res->X1, ref->X1, (long)nu * o.r), "var %d, %d ranks: X1 not bit-identical "
                  "(reldiff %g)", var, k, dpo_t_reldiff(res->X1, ref->X1, (long)nu * o.r));
          T_CHECK(same(res->X2t, ref->X2t, (long)ni * o.r), "var %d, %d ranks: X2 not bit-identical "
                  "(reldiff %g)", var, k, dpo_t_reldiff(res->X2t, ref->X2t, (long)ni * o.r));
          T_CHECK(res->ntrace == ref->ntrace && res->train_rmse == ref->train_rmse &&
                      res->test_rmse == ref->test_rmse,
                  "var %d, %d ranks: rmse %.17g vs %.17g", var, k, res->train_rmse, ref->train_rmse);
          T_CHECK(res->pairs_accepted == ref->pairs_accepted, "var %d: pairs %lld vs %lld", var,
                  (long long)res->pairs_accepted, (long long)ref->pairs_accepted);
        }
        dpo_hamsi_result_destroy(res);
      }
      MPI_Comm_free(&ck);
    }
    if (wr == 0 && ref) {
      T_CHECK(ref->home_ok == 1, "serial: home");
      T_CHECK(o.method == DPO_MF_MBGD || ref->pairs_accepted > 0, "var %d: no pair accepted", var);
      T_CHECK(ref->train_rmse < ref->trace[0].train_rmse, "var %d: RMSE did not decrease (%g -> %g)",
              var, ref->trace[0].train_rmse, ref->train_rmse);
    }
    dpo_hamsi_result_destroy(ref);
  }

  /* 2. without repro: the sums differ in rounding only */
  {
    small_opts(&o);
    o.nblocks = 4;
    o.epochs = 8;
    dpo_hamsi_result_t *ref = NULL;
    MPI_Comm c1 = dpo_t_subcomm(1);
    if (c1 != MPI_COMM_NULL) {
      ref = run(c1, &o, nu, ni, 3, 0.3);
      MPI_Comm_free(&c1);
    }
    MPI_Comm ck = dpo_t_subcomm(ws);
    dpo_hamsi_result_t *res = run(ck, &o, nu, ni, 3, 0.3);
    if (wr == 0 && res && ref) {
      double d1 = dpo_t_reldiff(res->X1, ref->X1, (long)nu * o.r);
      double d2 = dpo_t_reldiff(res->X2t, ref->X2t, (long)ni * o.r);
      T_CHECK(d1 < 1e-9 && d2 < 1e-9, "no repro, %d ranks: reldiff %g %g", ws, d1, d2);
    }
    dpo_hamsi_result_destroy(res);
    dpo_hamsi_result_destroy(ref);
    MPI_Comm_free(&ck);
  }

  /* 6. HOGWILD, COLOR, COLOR-B on 2..4 ranks (X2 replicated, one Allreduce of the ranks' item
   * steps per stratum; with repro one per (stratum, color) for COLOR*).  With repro a color is
   * a matching, so COLOR* must reproduce the 1-rank factors bit for bit (HAMSI and mb-GD) and
   * exchange more than once per stratum; without repro they must exchange exactly once per
   * stratum (the old per-color exchange fails this: ~10 colors per stratum here), say that
   * the result is not rank-independent, and still converge, close to the 1-rank run (the
   * ranks' steps are summed: equal to first order).  HOGWILD: not variable-disjoint, one
   * exchange per stratum, converges. */
  for (int var = 0; var < 6; var++) {
    dpo_hamsi_opts_default(&o);
    static const dpo_mf_part_kind_t pk[6] = {DPO_MF_COLOR, DPO_MF_COLOR_B, DPO_MF_COLOR,
                                             DPO_MF_COLOR_B, DPO_MF_COLOR, DPO_MF_HOGWILD};
    o.part = pk[var];
    o.method = var == 2 ? DPO_MF_MBGD : DPO_MF_HAMSI;
    o.sched = var % 2 ? DPO_MF_SCHED_SHUFFLE : DPO_MF_SCHED_DET;
    o.repro = var < 3;
    o.r = 4;
    o.nblocks = 5;
    o.memory = 3;
    o.lambda = var == 0 ? 0.05 : 0;
    o.epochs = var == 5 ? 30 : 10;
    const char *nm = dpo_mf_part_name(o.part);
    dpo_hamsi_result_t *ref = NULL;
    MPI_Comm c1 = dpo_t_subcomm(1);
    if (c1 != MPI_COMM_NULL) {
      ref = run(c1, &o, nu, ni, 3, 0.3);
      MPI_Comm_free(&c1);
    }
    for (int k = 2; k <= ws; k++) {
      MPI_Comm ck = dpo_t_subcomm(k);
      if (ck == MPI_COMM_NULL) continue;
      dpo_hamsi_result_t *res = run(ck, &o, nu, ni, 3, 0.3);
      if (res && wr == 0 && ref) {
        double d1 = dpo_t_reldiff(res->X1, ref->X1, (long)nu * o.r);
        double d2 = dpo_t_reldiff(res->X2t, ref->X2t, (long)ni * o.r);
        T_CHECK(res->n_train == ref->n_train && res->epochs == ref->epochs,
                "%s var %d, %d ranks: split or epochs differ", nm, var, k);
        T_CHECK(res->strata == res->epochs * (o.method == DPO_MF_HAMSI ? o.nblocks + 1 : o.nblocks),
                "%s var %d, %d ranks: %lld strata in %lld epochs", nm, var, k,
                (long long)res->strata, (long long)res->epochs);
        T_CHECK(ref->exchanges == 0, "%s var %d: 1 rank exchanged %lld times", nm, var,
                (long long)ref->exchanges);
        if (o.repro) {
          T_CHECK(res->disjoint == 1, "%s: not disjoint", nm);
          T_CHECK(res->exchanges > 2 * res->strata, "%s var %d, %d ranks, repro: %lld exchanges for "
                  "%lld strata, not one per color", nm, var, k, (long long)res->exchanges,
                  (long long)res->strata);
          T_CHECK(same(res->X1, ref->X1, (long)nu * o.r) && same(res->X2t, ref->X2t, (long)ni * o.r),
                  "%s var %d, %d ranks: factors not bit-identical to 1 rank (reldiff %g %g)", nm,
                  var, k, d1, d2);
          T_CHECK(res->pairs_accepted == ref->pairs_accepted, "%s var %d: pairs %lld vs %lld", nm,
                  var, (long long)res->pairs_accepted, (long long)ref->pairs_accepted);
          T_CHECK(res->train_rmse == ref->train_rmse && res->test_rmse == ref->test_rmse,
                  "%s var %d, %d ranks: rmse %.17g vs %.17g", nm, var, k, res->train_rmse,
                  ref->train_rmse);
        } else {
          T_CHECK(res->exchanges == res->strata, "%s var %d, %d ranks: %lld exchanges for %lld "
                  "strata (one per stratum expected)", nm, var, k, (long long)res->exchanges,
                  (long long)res->strata);
          T_CHECK(res->disjoint == 0, "%s, %d ranks: claims a rank-independent result", nm, k);
          T_CHECK(res->train_rmse < 0.9 * res->train_rmse0, "%s var %d, %d ranks: RMSE %g not < "
                  "0.9 x initial %g", nm, var, k, res->train_rmse, res->train_rmse0);
          if (var != 5)
            T_CHECK(fabs(res->train_rmse - ref->train_rmse) < 0.2 * ref->train_rmse,
                    "%s var %d, %d ranks: RMSE %g far from 1 rank's %g", nm, var, k,
                    res->train_rmse, ref->train_rmse);
          printf("%s var %d, %d ranks: RMSE %.4g (1 rank %.4g, initial %.4g), factors reldiff "
                 "%.2g, %lld exchanges for %lld strata\n", nm, var, k, res->train_rmse,
                 ref->train_rmse, res->train_rmse0, d1 > d2 ? d1 : d2, (long long)res->exchanges,
                 (long long)res->strata);
        }
      }
      dpo_hamsi_result_destroy(res);
      MPI_Comm_free(&ck);
    }
    if (wr == 0 && ref) {
      T_CHECK(ref->disjoint == (var != 5), "%s: disjoint %d", nm, ref->disjoint);
      T_CHECK(ref->train_rmse < 0.9 * ref->train_rmse0, "%s var %d, 1 rank: RMSE %g not < 0.9 x "
              "initial %g", nm, var, ref->train_rmse, ref->train_rmse0);
      T_CHECK(o.method == DPO_MF_MBGD || ref->pairs_accepted > 0, "%s var %d: no pair", nm, var);
    }
    dpo_hamsi_result_destroy(ref);
  }

  /* 3. convergence on a noiseless low-rank matrix, all ranks: HAMSI < 0.01 training RMSE and
   * better than mb-GD after the same number of epochs, mb-GD given the best of several step
   * scales (so the comparison is not won by a bad mb-GD step) */
  {
    const double steps[] = {0.2, 0.05, 0.1, 0.2, 0.5}; /* [0]: HAMSI's default sigma0 */
    double rh = 0, rg = INFINITY;
    for (int m = 0; m < 5; m++) {
      dpo_hamsi_opts_default(&o);
      o.method = m == 0 ? DPO_MF_HAMSI : DPO_MF_MBGD;
      o.r = 3;
      o.nblocks = 4;
      o.memory = 5;
      o.sigma0 = steps[m]; /* eta, gamma: defaults */
      o.epochs = 200;
      o.holdout = 0;
      o.eval_every = 10;
      dpo_hamsi_result_t *res = run(MPI_COMM_WORLD, &o, 200, 150, 3, 0.3);
      if (res) {
        if (m == 0)
          rh = res->train_rmse;
        else if (isfinite(res->train_rmse) && res->train_rmse < rg)
          rg = res->train_rmse;
        dpo_hamsi_result_destroy(res);
      }
    }
    if (wr == 0) printf("convergence: HAMSI rmse %.3g, best mb-GD rmse %.3g after 200 epochs\n", rh, rg);
    T_CHECK(rh < 0.01, "HAMSI training RMSE %g >= 0.01", rh);
    T_CHECK(rh < rg, "HAMSI %g not below mb-GD %g", rh, rg);
  }
  /* 4. defaults on ML-100K-shaped data (dpo_gen_ratings, the generator of `dpopt gen ratings
   * --size ml-100k`), 2 and 3 ranks: the step scaling must not need tuning per data set or
   * rank count (before the fix the defaults diverged to NaN here). */
  {
    char path[64] = "/tmp/dpo_test_hamsi_XXXXXX";
    int gst = DPO_OK;
    if (wr == 0) {
      int fd = mkstemp(path);
      if (fd < 0) gst = DPO_EIO;
      else {
        close(fd);
        gst = dpo_gen_ratings(path, 943, 1682, 100000, 10, 1);
      }
    }
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(&gst, 1, MPI_INT, 0, MPI_COMM_WORLD);
    T_CHECK(gst == DPO_OK, "dpo_gen_ratings: %s", dpo_strerror(gst));
    for (int k = 2; k <= 3 && k <= ws && gst == DPO_OK; k++) {
      MPI_Comm ck = dpo_t_subcomm(k);
      if (ck == MPI_COMM_NULL) continue;
      int ck_rank;
      MPI_Comm_rank(ck, &ck_rank);
      dpo_ratings_t *rt = NULL;
      int st = dpo_ratings_load(ck, path, 1, &rt);
      T_CHECK(st == DPO_OK, "load %s: %s %s", path, dpo_strerror(st), dpo_errmsg());
      if (st == DPO_OK) {
        /* standard deviation of all ratings (train + held out), computed here independently */
        double sm[3] = {(double)rt->n, 0, 0};
        for (int64_t a = 0; a < rt->n; a++) {
          sm[1] += rt->r[a];
          sm[2] += rt->r[a] * rt->r[a];
        }
        MPI_Allreduce(MPI_IN_PLACE, sm, 3, MPI_DOUBLE, MPI_SUM, ck);
        double mean = sm[1] / sm[0], sd = sqrt(sm[2] / sm[0] - mean * mean);
        double rm[2] = {NAN, NAN};
        for (int m = 0; m < 2; m++) {
          dpo_hamsi_opts_default(&o); /* defaults only: method below */
          o.method = m == 0 ? DPO_MF_HAMSI : DPO_MF_MBGD;
          dpo_hamsi_result_t *res = NULL;
          st = dpo_hamsi_run(ck, rt, &o, &res);
          T_CHECK(st == DPO_OK, "ml-100k %s, %d ranks: %s %s", m ? "mb-GD" : "HAMSI", k,
                  dpo_strerror(st), dpo_errmsg());
          if (!res) continue;
          rm[m] = res->train_rmse;
          T_CHECK(isfinite(res->train_rmse) && isfinite(res->test_rmse),
                  "ml-100k %d ranks: non-finite RMSE %g / %g", k, res->train_rmse, res->test_rmse);
          T_CHECK(res->epochs == 20, "epochs %lld", (long long)res->epochs);
          if (m == 0) {
            T_CHECK(res->train_rmse < 0.9 * res->train_rmse0, "ml-100k HAMSI, %d ranks: RMSE %g "
                    "not < 0.9 x initial %g", k, res->train_rmse, res->train_rmse0);
            T_CHECK(res->train_rmse < sd, "ml-100k HAMSI, %d ranks: RMSE %g not < std %g", k,
                    res->train_rmse, sd);
            T_CHECK(res->pairs_accepted > 0, "ml-100k HAMSI: no L-BFGS pair accepted");
          }
          if (ck_rank == 0)
            printf("ml-100k defaults, %d ranks: %s train RMSE %.4f (initial %.4f, std %.4f), "
                   "held-out %.4f, pairs %lld/%lld\n", k, m ? "mb-GD" : "HAMSI", res->train_rmse,
                   res->train_rmse0, sd, res->test_rmse, (long long)res->pairs_accepted,
                   (long long)res->pairs_rejected);
          dpo_hamsi_result_destroy(res);
        }
        T_CHECK(rm[0] < rm[1], "ml-100k, %d ranks: HAMSI %g not below mb-GD %g", k, rm[0], rm[1]);

        /* HOGWILD (defaults: K = 20 subsets) on P ranks: not variable-disjoint, converges */
        {
          dpo_hamsi_opts_default(&o);
          o.part = DPO_MF_HOGWILD;
          dpo_hamsi_result_t *res = NULL;
          st = dpo_hamsi_run(ck, rt, &o, &res);
          T_CHECK(st == DPO_OK, "ml-100k hogwild, %d ranks: %s %s", k, dpo_strerror(st), dpo_errmsg());
          if (res) {
            T_CHECK(res->disjoint == 0, "ml-100k hogwild: claims disjoint blocks");
            T_CHECK(res->train_rmse < 0.9 * res->train_rmse0, "ml-100k hogwild, %d ranks: RMSE %g "
                    "not < 0.9 x initial %g", k, res->train_rmse, res->train_rmse0);
            if (ck_rank == 0)
              printf("ml-100k defaults, %d ranks: HAMSI hogwild train RMSE %.4f (initial %.4f), "
                     "held-out %.4f\n", k, res->train_rmse, res->train_rmse0, res->test_rmse);
          }
          dpo_hamsi_result_destroy(res);
        }

        /* 5. divergence guard: without the safeguard (reject_tol < 0) a step far too long
         * must stop every rank with DPO_ENOCONV and a message naming the epoch, never return
         * NaN factors; with mb-GD's safeguard (default) the same step is halved until it
         * passes and the run ends with a finite RMSE */
        dpo_hamsi_opts_default(&o);
        o.method = DPO_MF_MBGD;
        o.sigma0 = 1e4;
        o.eval_every = 0;
        o.reject_tol = -1;
        dpo_hamsi_result_t *res = NULL;
        st = dpo_hamsi_run(ck, rt, &o, &res);
        T_CHECK(st == DPO_ENOCONV && res == NULL, "%d ranks: sigma0 1e4 gave %s, not DPO_ENOCONV", k,
                dpo_strerror(st));
        T_CHECK(strstr(dpo_errmsg(), "diverged at epoch") != NULL, "guard message: %s", dpo_errmsg());
        dpo_hamsi_result_destroy(res);
        res = NULL;
        o.reject_tol = 0.1;
        st = dpo_hamsi_run(ck, rt, &o, &res);
        T_CHECK(st == DPO_OK && res && isfinite(res->train_rmse) && res->epochs_undone > 0 &&
                    res->train_rmse < res->train_rmse0,
                "%d ranks: mb-GD sigma0 1e4 with the safeguard: %s, RMSE %g (initial %g), %lld undone",
                k, dpo_strerror(st), res ? res->train_rmse : NAN, res ? res->train_rmse0 : NAN,
                res ? (long long)res->epochs_undone : -1LL);
        dpo_hamsi_result_destroy(res);
      }
      dpo_ratings_destroy(rt);
      MPI_Comm_free(&ck);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (wr == 0) unlink(path);
  }
  /* 6. HAMSI's safeguard costs no Allreduce of its own: its sums ride with the pair's (one
   * wait for the other ranks an epoch fewer), and when it undoes nothing the iterates are
   * those of the run without it.  Allreduces an epoch = (count at 8 epochs - at 4) / 4. */
  {
    MPI_Comm ck = dpo_t_subcomm(ws >= 2 ? 2 : 1);
    if (ck != MPI_COMM_NULL) {
      long per[2];
      dpo_hamsi_result_t *end[2] = {NULL, NULL};
      for (int g = 0; g < 2; g++) {
        long cnt[2];
        for (int e = 0; e < 2; e++) {
          small_opts(&o);
          o.eval_every = 0;
          o.epochs = e ? 8 : 4;
          o.reject_tol = g ? 0.1 : -1;
          long c0 = n_allreduce;
          dpo_hamsi_result_t *res = run(ck, &o, nu, ni, 3, 0.3);
          cnt[e] = n_allreduce - c0;
          if (e) end[g] = res;
          else dpo_hamsi_result_destroy(res);
        }
        per[g] = (cnt[1] - cnt[0]) / 4;
      }
      T_CHECK(per[1] == per[0], "HAMSI with the safeguard: %ld Allreduces an epoch, without: %ld",
              per[1], per[0]);
      if (wr == 0) /* the factors are gathered on rank 0 */
        T_CHECK(end[0] && end[1] && end[1]->epochs_undone == 0 && end[1]->pairs_accepted > 0 &&
                    same(end[0]->X1, end[1]->X1, (long)nu * 4) &&
                    same(end[0]->X2t, end[1]->X2t, (long)ni * 4),
                "HAMSI with the safeguard (nothing undone) differs from the run without it");
      dpo_hamsi_result_destroy(end[0]);
      dpo_hamsi_result_destroy(end[1]);
      MPI_Comm_free(&ck);
    }
  }
  /* 7. A failure at an epoch's end on one rank (on_epoch, the last rank at epoch 2) travels
   * with the next epoch's one reduction: every rank stops with that rank's status and message,
   * no rank hangs in the next epoch's ring, and no result is returned. */
  {
    MPI_Comm ck = dpo_t_subcomm(ws >= 2 ? 2 : 1);
    if (ck != MPI_COMM_NULL) {
      small_opts(&o);
      o.eval_every = 0;
      o.epochs = 6;
      o.on_epoch = fail_epoch;
      o.epoch_ctx = &ck;
      dpo_ratings_t *R = make(ck, nu, ni, 3, 0.3, 42);
      dpo_hamsi_result_t *res = NULL;
      int st = dpo_hamsi_run(ck, R, &o, &res);
      T_CHECK(st == DPO_EIO && res == NULL && strstr(dpo_errmsg(), "on_epoch failed at epoch 2"),
              "on_epoch's failure on one rank: %s (%s)", dpo_strerror(st), dpo_errmsg());
      dpo_hamsi_result_destroy(res);
      drop(R);
      MPI_Comm_free(&ck);
    }
  }
  return dpo_t_finish("test_hamsi");
}
