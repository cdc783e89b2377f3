/* The coordinator/worker gradient oracle (see include/dpopt/comm.h).
 *
 * One request = MPI_Bcast of a 4-word header {type, flag, m, status} from rank 0, then x
 * (d doubles) and, for a batch, the m sorted global ids.  Every rank (rank 0 too: it holds a
 * shard) computes its local sums and one reduction brings [sums..., status] to rank 0.
 *
 * Reproducibility across rank counts: local rows are processed in chunks aligned to global
 * row ids (multiples of DPO__CHUNK), and chunk results are accumulated and reduced in
 * double-double (comm/reduce.h).  A chunk that lies inside one shard is computed with the
 * same floating-point operations whatever the number of ranks, so results at 1..P ranks
 * agree to the last bit or two instead of to ~n * 1e-16.
 */
#include "dpopt/comm.h"

#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "comm/reduce.h"
#include "comm/wait.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"

#include "comm/oracle_int.h"
#include "comm/step1.h"
#include "privacy/guard.h"  /* the party guard (secagg) */
#include "privacy/sample.h" /* dpo__poisson_batch: party-local sampling */
#ifdef DPO_TEST_SWITCHES
#include <signal.h> /* --test-party-kill */
#include <stdio.h>  /* the withheld round's view */

#include "privacy/test_switches.h"
#endif

#ifdef DPO_TEST_SWITCHES
/* Test builds only (privacy/test_switches.h; dpopt-test train --test-coordinator KIND,
 * --test-party-fail N): a coordinator that deviates from the plan from its secure-aggregation
 * request `at` on, and a party (the last rank) that fails in release N.  Process-wide. */
static int dpo__test_dev_kind = 0;
static int64_t dpo__test_dev_at = 1, dpo__test_dev_seen = 0, dpo__test_fail_at = 0;
static int64_t dpo__test_last[DPO__HDR];
static int dpo__test_have_last = 0;
void dpo__oracle_test_deviate(int kind, int64_t at) {
  dpo__test_dev_kind = kind;
  dpo__test_dev_at = at > 0 ? at : 1;
  dpo__test_dev_seen = 0;
  dpo__test_have_last = 0;
}
void dpo__oracle_test_party_fail(int64_t at) { dpo__test_fail_at = at; }
static int64_t dpo__test_kill_at = 0;
void dpo__oracle_test_party_kill(int64_t at) { dpo__test_kill_at = at; }
/* local / shares: the last rank fails in its N-th noised request before its guard is asked (it
 * charges nothing for it), as a party whose guard refuses; every rank must withhold the round */
static int64_t dpo__test_local_seen = 0;
static int dpo__test_local_fail(const dpo_oracle_t *o, int rc) {
  if (rc || dpo__test_fail_at <= 0 || o->rank != o->size - 1 ||
      ++dpo__test_local_seen != dpo__test_fail_at)
    return rc;
  return dpo_err(DPO_EINVAL, "rank %d: [TEST] a planted local failure in noised release %lld "
                 "(as a refusal by its guard)", o->rank, (long long)dpo__test_fail_at);
}
/* rank 0, a local / shares request that failed: what the coordinator received of its sums
 * (nothing of a withheld round may reach it: every rank zeroes them) */
static void dpo__test_withheld_view(const dpo_oracle_t *o) {
  const int32_t d = o->d;
  if (dpo__test_fail_at <= 0 || o->rank != 0 || o->acc[d + 2].hi == DPO_OK) return;
  int32_t nz = 0;
  for (int32_t j = 0; j <= d; j++) nz += o->acc[j].hi != 0.0 || o->acc[j].lo != 0.0;
  fprintf(stderr, "dpopt: [TEST] the coordinator's view of the withheld round: %d of its %d "
          "sums nonzero\n", (int)nz, (int)d + 1);
}
/* rank 0: the header it announces instead of the plan's (secagg; local and shares: the
 * scale of hdr[6], the share count of hdr[5], the kind of hdr[4]) */
static void dpo__test_deviate(int64_t hdr[DPO__HDR]) {
  if (!dpo__test_dev_kind || ++dpo__test_dev_seen < dpo__test_dev_at) return;
  double gamma;
  if (hdr[4] != DPO_ONOISE_SECAGG) {
    switch (dpo__test_dev_kind) {
    case 1: /* the noise scale on the sum halved, the same charge */
      memcpy(&gamma, &hdr[6], sizeof gamma);
      gamma /= 2;
      memcpy(&hdr[6], &gamma, sizeof gamma);
      break;
    case 3: /* shares sized for one rank more (each smaller) */
      if (hdr[4] >= DPO_ONOISE_SHARE_LAPLACE) hdr[5] += 1;
      break;
    case 5: /* the other family at the same scale and charge (Laplace <-> Gaussian) */
      hdr[4] += hdr[4] == DPO_ONOISE_LOCAL_LAPLACE || hdr[4] == DPO_ONOISE_SHARE_LAPLACE ? 1 : -1;
      break;
    default: break;
    }
    return;
  }
  switch (dpo__test_dev_kind) {
  case 1: /* a smaller noise: the share sigma (or Laplace scale) halved, the same charge */
    hdr[7] = hdr[7] / 2 > 0 ? hdr[7] / 2 : 1;
    break;
  case 2: /* a finer encoding: gamma halved (the same integer noise is half the noise) */
    memcpy(&gamma, &hdr[6], sizeof gamma);
    gamma /= 2;
    memcpy(&hdr[6], &gamma, sizeof gamma);
    break;
  case 3: /* pure eps: shares sized for one honest party more (each smaller) */
    if (hdr[5] > 0) hdr[5] += 1;
    break;
  default: break;
  }
}
#endif

/* acc += the sums over the sorted local rows lrows[0..used), in chunks of global ids. */
static int dpo__rows_sums(dpo_oracle_t *o, const int64_t *lrows, int64_t used) {
  const dpo_shard_t *s = o->shard;
  const int32_t d = o->d;
  const dpo_clip_t *clip = o->clipping ? &o->clip : NULL;
  for (int64_t k = 0; k < used;) {
    int64_t c = (lrows[k] + s->row0) / DPO__ROWS_CHUNK, e = k + 1;
    while (e < used && (lrows[e] + s->row0) / DPO__ROWS_CHUNK == c) e++;
    double loss = 0.0;
    int rc = dpo_model_local_grad(o->model, s, o->x, lrows + k, e - k, clip, o->rownorm, &loss,
                                  o->g);
    if (rc) return rc;
    dpo__dd_add_vec(o->acc, o->g, d);
    dpo__dd_add(&o->acc[d], loss);
    k = e;
  }
  return DPO_OK;
}

/* Local part of a SUMS request: accumulators acc[0..d-1] = g, acc[d] = loss, acc[d+1] = rows.
 * m = DPO__M_LOCAL: party-local Poisson sampling (secure aggregation, sco_dpsgd.c): this rank
 * keeps each of its own rows with probability sm / sn, on its own secret stream (the law of
 * independent Bernoulli(sm/sn) coins, privacy/sample.h); the kept rows and their number never
 * leave the rank (the caller zeroes the row count before the reduce). */
int dpo__local_sums(dpo_oracle_t *o, int64_t m, int64_t sm, int64_t sn) {
  const dpo_shard_t *s = o->shard;
  const int32_t d = o->d;
  const dpo_clip_t *clip = o->clipping ? &o->clip : NULL;
  int rc = DPO_OK;
  for (int j = 0; j < d + 2; j++) o->acc[j].hi = o->acc[j].lo = 0.0;
  int64_t used = 0;
  if (m == DPO__M_ALL) {
    for (int64_t i = 0; i < s->n;) {
      int64_t e = dpo__chunk_end(s, i);
      dpo_shard_t v;
      dpo__shard_view(s, i, e - i, &v);
      double loss = 0.0;
      rc = dpo_model_local_grad(o->model, &v, o->x, NULL, 0, clip,
                                o->rownorm ? o->rownorm + i : NULL, &loss, o->g);
      if (rc) return rc;
      dpo__dd_add_vec(o->acc, o->g, d);
      dpo__dd_add(&o->acc[d], loss);
      i = e;
    }
    used = s->n;
  } else if (m == DPO__M_LOCAL) {
    if (!o->noise_rng)
      return dpo_err(DPO_EINVAL, "oracle: rank %d has no secret stream for party-local sampling "
                     "(dpo_oracle_set_noise_rng)", o->rank);
    if (!(sm >= 1 && sm <= sn && sn <= ((int64_t)1 << 53)))
      return dpo_err(DPO_EINVAL, "oracle: party-local sampling rate %lld/%lld", (long long)sm,
                     (long long)sn);
    if (s->n > 0 && (rc = dpo__poisson_batch(o->noise_rng, sm, sn, s->n, &o->lids, &o->lcap,
                                             &used)))
      return rc;
    if ((rc = dpo__rows_sums(o, o->lids, used))) return rc;
  } else {
    /* Rows of this rank: ids in [row0, row0 + n) — a contiguous run of the sorted batch. */
    int64_t lo = 0, hi = m;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (o->ids[mid] < s->row0) lo = mid + 1; else hi = mid;
    }
    int64_t a = lo;
    hi = m;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (o->ids[mid] < s->row0 + s->n) lo = mid + 1; else hi = mid;
    }
    int64_t b = lo;
    for (int64_t k = a; k < b; k++) o->lrows[k - a] = o->ids[k] - s->row0;
    used = b - a;
    if ((rc = dpo__rows_sums(o, o->lrows, used))) return rc;
  }
  dpo__dd_add(&o->acc[d + 1], (double)used);
  for (int j = 0; j <= d; j++)
    if (!isfinite(o->acc[j].hi))
      return dpo_err(DPO_EFORMAT,
                     "%s: rows [%ld, %ld): non-finite %s sum (NaN/Inf in the data or at x)",
                     s->source[0] ? s->source : "shard", (long)s->row0, (long)(s->row0 + s->n),
                     j < d ? "gradient" : "loss");
  return DPO_OK;
}

/* Local part of a METRIC request: acc[0] = loss, acc[1] = metric, acc[2] = rows. */
static int dpo__local_metric(dpo_oracle_t *o, int heldout) {
  const dpo_shard_t *s = heldout ? o->heldout : o->shard;
  for (int j = 0; j < 3; j++) o->acc[j].hi = o->acc[j].lo = 0.0;
  if (!s) return dpo_err(DPO_EINVAL, "oracle: no held-out shard attached");
  return dpo__shard_metric_add(o->model, s, o->x, o->acc);
}

/* Secure aggregation (src/privacy/secagg.c): every rank, whatever its status lrc, takes part
 * in the round; a rank that failed (or whose party guard refused the request) sends nothing
 * decodable and the round is withheld everywhere (secagg.c: a failure flag is all-reduced
 * before the reduce).  Then only the failing rank reports a status, so the run's message is
 * its own.  Rank 0 puts the decoded noised total in its accumulators, the others zeros, so the
 * double-double reduce below carries it unchanged with the row count. */
static int dpo__secagg_sums(dpo_oracle_t *o, const int64_t hdr[DPO__HDR], int lrc) {
  const int32_t d = o->d;
  double gamma, claim;
  memcpy(&gamma, &hdr[6], sizeof gamma);
  memcpy(&claim, &hdr[10], sizeof claim);
  int rc = o->secagg ? DPO_OK
                     : dpo_err(DPO_EINVAL, "oracle: rank %d has no secure-aggregation state",
                               o->rank);
  /* the party guard: this party prices the announced noise from its own plan and charges its
   * own account before anything of its rows is encoded (privacy/guard.h) */
  /* ... for the releases its rows are in: a rank none of whose rows is in the batch (a party
   * dropped on exhaustion, a batch elsewhere) adds only its noise share and masks, so its data
   * are not in the release and nothing is charged to it (party-local samples always count) */
  const int64_t used = (int64_t)o->acc[d + 1].hi;
  const int mine = hdr[2] == DPO__M_LOCAL || (hdr[2] == DPO__M_ALL ? o->shard->n > 0 : used > 0);
  if (!rc && !lrc && o->guard && mine) {
    dpo_guard_req_t q = {gamma, (uint64_t)hdr[7], hdr[5], hdr[2] == DPO__M_LOCAL ? hdr[8] : 0,
                         hdr[2] == DPO__M_LOCAL ? hdr[9] : 0, claim, hdr[11] - 1};
    rc = hdr[11] > 0 ? dpo__guard_pass(o, hdr) : DPO_OK;
    if (!rc) rc = dpo_guard_admit(o->guard, &q);
  }
#ifdef DPO_TEST_SWITCHES
  if (!rc && !lrc && dpo__test_fail_at > 0 && o->rank == o->size - 1 &&
      o->secagg && (int64_t)dpo_secagg_releases(o->secagg) + 1 == dpo__test_fail_at)
    rc = dpo_err(DPO_EINVAL, "rank %d: [TEST] a planted local failure in release %lld", o->rank,
                 (long long)dpo__test_fail_at);
  if (!rc && !lrc && dpo__test_kill_at > 0 && o->rank == o->size - 1 && o->secagg &&
      (int64_t)dpo_secagg_releases(o->secagg) + 1 == dpo__test_kill_at)
    raise(SIGKILL); /* a party that dies mid-round: no clean exit, no share */
#endif
  for (int32_t j = 0; j < d; j++) o->g[j] = o->acc[j].hi + o->acc[j].lo;
  if (o->secagg) {
    /* hdr[5] > 0: pure eps, Polya shares for hdr[5] honest parties, hdr[7] = t */
    /* hdr[3]: the word width, public (32 or 64; any other withholds the round everywhere) */
    const int bits = (int)hdr[3];
    int src = hdr[5] > 0 ? dpo_secagg_round_lap(o->secagg, o->g, d, gamma, (uint64_t)hdr[7],
                                                (int)hdr[5], bits, !lrc && !rc, o->g, NULL)
                         : dpo_secagg_round(o->secagg, o->g, d, gamma, (uint64_t)hdr[7], bits,
                                            !lrc && !rc, o->g, NULL);
    if (!rc && src != DPO_EREMOTE) rc = src; /* withheld for another rank: its status says why */
    if (src == DPO_EREMOTE) memset(o->g, 0, (size_t)d * sizeof *o->g);
  }
  for (int32_t j = 0; j <= d; j++) {
    o->acc[j].hi = o->rank == 0 && j < d ? o->g[j] : 0.0;
    o->acc[j].lo = 0.0;
  }
  return lrc ? lrc : rc;
}

/* Body of one request on every rank after the header arrived: receive x (and ids), compute,
 * reduce.  Returns an MPI failure only; the computation's status travels in the reduction
 * (and is returned in *lrc). */
static int dpo__serve_one(dpo_oracle_t *o, const int64_t hdr[DPO__HDR], int *lrc) {
  const int32_t d = o->d;
  if (hdr[0] == DPO__REQ_ROWS) {
    *lrc = DPO_OK;
    return dpo__serve_rows(o, hdr[2], NULL, NULL);
  }
  double t0 = dpo__now();
  DPO_MPI_CHECK(MPI_Bcast(o->x, d, MPI_DOUBLE, 0, o->comm));
  int rc = DPO_OK;
  int k;
  if (hdr[0] == DPO__REQ_SUMS) {
    int64_t m = hdr[2];
    if (m > 0) {
      /* rank 0 already holds the ids in o->ids.  The ids go in pieces of DPO__IDS_PIECE so a
       * worker that cannot allocate the batch can still drain the broadcast into a small
       * buffer (and report the failure in the reduction) instead of leaving rank 0 hanging. */
      int erc = o->rank ? dpo__ensure_ids(o, m) : DPO_OK;
      static int64_t drain[DPO__IDS_PIECE];
      for (int64_t off = 0; off < m; off += DPO__IDS_PIECE) {
        int cnt = (int)(m - off < DPO__IDS_PIECE ? m - off : DPO__IDS_PIECE);
        DPO_MPI_CHECK(MPI_Bcast(erc ? drain : o->ids + off, cnt, MPI_INT64_T, 0, o->comm));
      }
      rc = erc;
    }
    double t1 = dpo__now();
    o->st.t_comm += t1 - t0;
    if (!rc) rc = dpo__local_sums(o, m, hdr[8], hdr[9]);
    if (hdr[4] == DPO_ONOISE_SECAGG) rc = dpo__secagg_sums(o, hdr, rc);
    else if (hdr[4] != DPO_ONOISE_NONE) {
#ifdef DPO_TEST_SWITCHES
      rc = dpo__test_local_fail(o, rc);
#endif
      rc = dpo__local_round(o, hdr, rc);
    }
    /* party-local sampling: how many rows a rank kept is its own secret (the reduce below is
     * in the clear); a worker does not add it to its statistics either */
    if (m == DPO__M_LOCAL) o->acc[d + 1].hi = o->acc[d + 1].lo = 0.0;
    k = d + 2;
    o->st.t_compute += dpo__now() - t1;
  } else {
    double t1 = dpo__now();
    o->st.t_comm += t1 - t0;
    rc = dpo__local_metric(o, (int)hdr[1]);
    k = 3;
    o->st.t_compute += dpo__now() - t1;
  }
  if (rc) {
    dpo__note_local_fail(o, rc);
    for (int j = 0; j < k; j++) o->acc[j].hi = o->acc[j].lo = 0.0;
  }
  o->acc[k].hi = (double)rc;
  o->acc[k].lo = 0.0;
  double t2 = dpo__now();
  int mrc = dpo__dd_reduce_ws(o->comm, o->acc, k, 0, 0, o->parts, o->ws_k1);
  o->st.t_comm += dpo__now() - t2;
  o->st.evals++;
  if (o->rank != 0 && !rc) o->st.rows += (int64_t)o->acc[k - 1].hi;
  *lrc = rc;
  return mrc;
}

int dpo_oracle_create(MPI_Comm comm, const dpo_model_t *model, const dpo_shard_t *shard,
                      const dpo_clip_t *clip, dpo_oracle_t **oracle) {
  int rc = DPO_OK;
  dpo_oracle_t *o = NULL;
  if (oracle) *oracle = NULL;
  if (comm == MPI_COMM_NULL) return dpo_err(DPO_EINVAL, "dpo_oracle_create: null communicator");
  if (!model || !shard || !oracle) {
    rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: NULL model, shard or output");
    goto out;
  }
  o = calloc(1, sizeof *o);
  if (!o) {
    rc = dpo_err(DPO_ENOMEM, "dpo_oracle_create: out of memory");
    goto out;
  }
  o->comm = comm;
  MPI_Comm_rank(comm, &o->rank);
  MPI_Comm_size(comm, &o->size);
  o->model = model;
  o->shard = shard;
  o->d = dpo_model_dim(model, shard->d);
  o->n_global = shard->n_global;
  if (shard->d <= 0 || shard->n < 0) {
    rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: shard with d = %d, n = %ld", (int)shard->d,
                 (long)shard->n);
    goto out;
  }
  if (o->d <= 0) {
    rc = dpo_model_classes(model) < 2
             ? dpo_err(DPO_EINVAL, "model %s: the number of classes is not set (model.classes)",
                       dpo_model_name(model))
             : dpo_err(DPO_EINVAL, "model %s: %d classes x %d features is too many parameters",
                       dpo_model_name(model), (int)dpo_model_classes(model), (int)shard->d);
    goto out;
  }
  if (clip && clip->norm != DPO_CLIP_NONE) {
    if (clip->norm != DPO_CLIP_L1 && clip->norm != DPO_CLIP_L2) {
      rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: unknown clip norm %d", (int)clip->norm);
      goto out;
    }
    if (!(clip->C > 0 && isfinite(clip->C))) {
      rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: clip threshold C = %g must be > 0", clip->C);
      goto out;
    }
    o->clipping = 1;
    o->clip = *clip;
    /* per-row norms once: the clip factor needs ||u_i|| at every evaluation */
    o->rownorm = malloc((size_t)(shard->n > 0 ? shard->n : 1) * sizeof *o->rownorm);
    if (!o->rownorm) {
      rc = dpo_err(DPO_ENOMEM, "dpo_oracle_create: cannot allocate %ld row norms",
                   (long)shard->n);
      goto out;
    }
    for (int64_t i = 0; i < shard->n; i++) {
      const double *v;
      int len;
      if (shard->sparse) {
        v = shard->val + shard->rowptr[i];
        len = (int)(shard->rowptr[i + 1] - shard->rowptr[i]);
      } else {
        v = shard->X + i * (int64_t)shard->d;
        len = shard->d;
      }
      o->rownorm[i] = len == 0 ? 0.0
                      : clip->norm == DPO_CLIP_L1 ? cblas_dasum(len, v, 1)
                                                  : cblas_dnrm2(len, v, 1);
    }
  }
  o->x = calloc((size_t)o->d, sizeof *o->x);
  o->g = calloc((size_t)o->d, sizeof *o->g);
  o->acc = calloc((size_t)o->d + 3, sizeof *o->acc);
  if (!o->x || !o->g || !o->acc) {
    rc = dpo_err(DPO_ENOMEM, "dpo_oracle_create: out of memory for d = %d", (int)o->d);
    goto out;
  }
out:;
  /* Shards must tile [0, n_global) in rank order with one dimension.  With n_public (the
   * parties' counts are private) no count is reduced, scanned or gathered across ranks. */
  const int hide = !rc && shard->n_public;
  int64_t mine[3] = {rc || hide ? 0 : shard->n, rc ? 0 : shard->d, rc ? 0 : -shard->d}, tot[3];
  int64_t before = 0, n_here = rc ? 0 : shard->n, zero = 0;
  if (MPI_Allreduce(mine, tot, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Allreduce(mine + 1, tot + 1, 2, MPI_INT64_T, MPI_MAX, comm) != MPI_SUCCESS ||
      MPI_Exscan(hide ? &zero : &n_here, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS) {
    if (!rc) rc = dpo_err(DPO_EMPI, "dpo_oracle_create: MPI_Allreduce failed");
  } else if (!rc) {
    if (o->rank == 0) before = 0;
    if (hide) { /* the parties' counts stay private: only the dimension is checked */
      if (tot[1] != -tot[2]) rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: ranks disagree on d");
    } else if (tot[0] != shard->n_global)
      rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: shards hold %ld rows, n_global = %ld",
                   (long)tot[0], (long)shard->n_global);
    else if (tot[1] != -tot[2])
      rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: ranks disagree on the dimension");
    else if (before != shard->row0)
      rc = dpo_err(DPO_EINVAL, "dpo_oracle_create: shard row0 = %ld, expected %ld (shards "
                   "must be contiguous in rank order)", (long)shard->row0, (long)before);
  }
  if (!rc && !(o->rank_n = malloc((size_t)o->size * sizeof *o->rank_n)))
    rc = dpo_err(DPO_ENOMEM, "dpo_oracle_create: out of memory");
  rc = dpo_agree(comm, rc);
  /* how ranks wait in the requests: decided once per communicator, collective */
  if (!rc) rc = dpo_agree(comm, dpo__wait_setup(comm));
  if (!rc) rc = dpo__oracle_ws_setup(o);
  if (!rc && hide) { /* every rank knows only its own count; dpo_oracle_rank_rows refuses */
    for (int r = 0; r < o->size; r++) o->rank_n[r] = r == o->rank ? n_here : -1;
    o->n_public = 1;
  } else if (!rc && MPI_Allgather(&n_here, 1, MPI_INT64_T, o->rank_n, 1, MPI_INT64_T, comm) !=
                 MPI_SUCCESS)
    rc = dpo_err(DPO_EMPI, "dpo_oracle_create: MPI_Allgather failed");
  if (rc) {
    dpo_oracle_destroy(o);
    return rc;
  }
  *oracle = o;
  return DPO_OK;
}

int dpo_oracle_set_heldout(dpo_oracle_t *o, const dpo_shard_t *heldout) {
  int rc = DPO_OK;
  int64_t n = 0, tot = 0;
  if (!o) return dpo_err(DPO_EINVAL, "dpo_oracle_set_heldout: NULL oracle");
  if (!heldout)
    rc = dpo_err(DPO_EINVAL, "dpo_oracle_set_heldout: NULL shard");
  else if (heldout->d != o->shard->d)
    rc = dpo_err(DPO_EINVAL, "dpo_oracle_set_heldout: held-out dimension %d != %d",
                 (int)heldout->d, (int)o->shard->d);
  else
    n = heldout->n;
  if (MPI_Allreduce(&n, &tot, 1, MPI_INT64_T, MPI_SUM, o->comm) != MPI_SUCCESS && !rc)
    rc = dpo_err(DPO_EMPI, "dpo_oracle_set_heldout: MPI_Allreduce failed");
  rc = dpo_agree(o->comm, rc);
  if (rc) return rc;
  o->heldout = heldout;
  o->heldout_nglobal = tot;
  return DPO_OK;
}

void dpo_oracle_destroy(dpo_oracle_t *o) {
  if (!o) return;
  free(o->rownorm);
  free(o->x);
  free(o->g);
  free(o->acc);
  free(o->ids);
  free(o->lrows);
  free(o->lids);
  free(o->rank_n);
  free(o->pass_used);
  dpo__oracle_step1_free(o);
  free(o);
}

int32_t dpo_oracle_dim(const dpo_oracle_t *o) { return o->d; }
int64_t dpo_oracle_nglobal(const dpo_oracle_t *o) { return o->n_global; }
MPI_Comm dpo_oracle_comm(const dpo_oracle_t *o) { return o->comm; }
int dpo_oracle_rank(const dpo_oracle_t *o) { return o->rank; }
const dpo_model_t *dpo_oracle_model(const dpo_oracle_t *o) { return o->model; }
const dpo_clip_t *dpo_oracle_clip(const dpo_oracle_t *o) {
  return o && o->clipping ? &o->clip : NULL;
}

/* Rank 0: common checks before a request is broadcast. */
int dpo__check_req(dpo_oracle_t *o, const char *fn, const double *x) {
  if (o->rank != 0) return dpo_err(DPO_EINVAL, "%s: called on rank %d (rank 0 only)", fn, o->rank);
  /* A request after finish() opens a new session: the workers must have re-entered serve(). */
  o->finished = 0;
  if (!x) return dpo_err(DPO_EINVAL, "%s: NULL x", fn);
  for (int32_t j = 0; j < o->d; j++)
    if (!isfinite(x[j]))
      return dpo_err(DPO_EINVAL, "%s: x[%d] = %g is not finite", fn, (int)j, x[j]);
  return DPO_OK;
}

/* Rank 0: reading the reduced status after a request. */
static int dpo__req_status(dpo_oracle_t *o, const char *fn, int lrc, int k) {
  int st = (int)o->acc[k].hi;
  if (st == DPO_OK) return DPO_OK;
  if (lrc) return lrc; /* rank 0's own failure: its detail is current */
  o->remote_fail = st;
  return dpo_err(st, "%s: a worker rank failed (%s); its detail is reported when the run "
                 "finishes", fn, dpo_strerror(st));
}

int dpo_oracle_eval_sums(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch,
                         int want_loss, double *loss_sum, double *g_sum, int64_t *n_used) {
  return dpo_oracle_eval_sums_noised(o, x, batch, NULL, want_loss, loss_sum, g_sum, n_used);
}

/* The SUMS request behind dpo_oracle_eval_sums_noised and _sampled: sm / sn > 0 is the rate
 * of party-local Poisson sampling (secagg only; no batch), 0 / 0 none. */
static int dpo__eval_sums(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch,
                          const dpo_oracle_noise_t *noise, int want_loss, int64_t sm, int64_t sn,
                          double *loss_sum, double *g_sum, int64_t *n_used) {
  static const char fn[] = "dpo_oracle_eval_sums";
  if (!o) return dpo_err(DPO_EINVAL, "%s: NULL oracle", fn);
  int rc = dpo__check_req(o, fn, x);
  if (rc) return rc;
  if (!g_sum) return dpo_err(DPO_EINVAL, "%s: NULL g_sum", fn);
  int64_t m = DPO__M_ALL;
  if (batch && batch->ids) {
    m = batch->m;
    if (o->n_public) /* global row ids need every rank's count */
      return dpo_err(DPO_EUNSUP, "%s: no global row ids (the parties' counts are private)", fn);
    if (m < 0 || m > o->n_global)
      return dpo_err(DPO_EINVAL, "%s: batch of %ld rows (n = %ld)", fn, (long)m,
                     (long)o->n_global);
    for (int64_t k = 0; k < m; k++)
      if (batch->ids[k] < 0 || batch->ids[k] >= o->n_global ||
          (k > 0 && batch->ids[k] <= batch->ids[k - 1]))
        return dpo_err(DPO_EINVAL, "%s: batch id %ld at position %ld is out of range or not "
                       "strictly increasing", fn, (long)batch->ids[k], (long)k);
    if ((rc = dpo__ensure_ids(o, m))) return rc;
    if (m > 0) memcpy(o->ids, batch->ids, (size_t)m * sizeof *o->ids);
  }
  memcpy(o->x, x, (size_t)o->d * sizeof *x);
  int64_t hdr[DPO__HDR] = {DPO__REQ_SUMS, want_loss ? 1 : 0, m, 0, DPO_ONOISE_NONE, 0, 0, 0};
  if (noise && noise->kind == DPO_ONOISE_SECAGG) {
    memcpy(&hdr[10], &noise->claim, sizeof noise->claim);
    hdr[11] = noise->pass;
    if (!o->secagg || !(noise->scale > 0) || !isfinite(noise->scale) || noise->sigma < 1 ||
        noise->sigma > ((uint64_t)1 << 62) || noise->lap_honest < 0 ||
        (noise->bits != 32 && noise->bits != 64))
      return dpo_err(DPO_EINVAL, "%s: bad secure-aggregation spec (gamma %g, sigma %llu, words "
                     "of %d bits)%s", fn, noise->scale, (unsigned long long)noise->sigma,
                     noise->bits, o->secagg ? "" : ": no dpo_oracle_set_secagg");
    hdr[3] = noise->bits;
    hdr[4] = noise->kind;
    memcpy(&hdr[6], &noise->scale, sizeof noise->scale);
    hdr[7] = (int64_t)noise->sigma;
    hdr[5] = noise->lap_honest;
    want_loss = 0;
    if (sn > 0) { /* party-local Poisson sampling: no ids, no count back */
      if (m != DPO__M_ALL || noise->lap_honest || !(sm >= 1) || sm > sn ||
          sn > ((int64_t)1 << 53))
        return dpo_err(DPO_EINVAL, "%s: party-local sampling takes no batch, Gaussian shares "
                       "and 1 <= m <= n <= 2^53 (m %lld, n %lld)", fn, (long long)sm,
                       (long long)sn);
      hdr[2] = DPO__M_LOCAL;
      hdr[8] = sm;
      hdr[9] = sn;
    }
  } else if (noise && noise->kind != DPO_ONOISE_NONE) {
    if (noise->kind < DPO_ONOISE_LOCAL_LAPLACE || noise->kind > DPO_ONOISE_SHARE_GAUSSIAN ||
        !(noise->scale > 0) || !isfinite(noise->scale) || noise->nshares < 1 ||
        (noise->kind >= DPO_ONOISE_SHARE_LAPLACE && noise->nshares != o->size))
      return dpo_err(DPO_EINVAL, "%s: bad noise spec (kind %d, scale %g, %d shares)", fn,
                     noise->kind, noise->scale, noise->nshares);
    hdr[4] = noise->kind;
    hdr[5] = noise->nshares;
    memcpy(&hdr[6], &noise->scale, sizeof noise->scale);
    /* what every party's guard compares its own price with (privacy/guard.h) */
    memcpy(&hdr[10], &noise->claim, sizeof noise->claim);
    hdr[11] = noise->pass;
    want_loss = 0;
  }
#ifdef DPO_TEST_SWITCHES
  int64_t plan_hdr[DPO__HDR];
  memcpy(plan_hdr, hdr, sizeof plan_hdr);
  if (hdr[4] != DPO_ONOISE_NONE) dpo__test_deviate(hdr);
#endif
  double t0 = dpo__now();
  DPO_MPI_CHECK(dpo__oracle_hdr_bcast(o, hdr));
  o->st.t_comm += dpo__now() - t0;
#ifdef DPO_TEST_SWITCHES
  /* local / shares: the parties got the deviation, rank 0 adds its own noise by the plan */
  if (hdr[4] != DPO_ONOISE_NONE && hdr[4] != DPO_ONOISE_SECAGG && plan_hdr[4] != DPO_ONOISE_SECAGG)
    memcpy(hdr, plan_hdr, sizeof plan_hdr);
#endif
  int lrc = DPO_OK;
  if ((rc = dpo__serve_one(o, hdr, &lrc))) return rc;
#ifdef DPO_TEST_SWITCHES
  if (hdr[4] != DPO_ONOISE_NONE && hdr[4] != DPO_ONOISE_SECAGG) dpo__test_withheld_view(o);
#endif
  if ((rc = dpo__req_status(o, fn, lrc, o->d + 2))) return rc;
#ifdef DPO_TEST_SWITCHES
  if (hdr[4] != DPO_ONOISE_NONE && dpo__test_dev_kind == 4) /* an extra release, later */
    memcpy(dpo__test_last, hdr, sizeof dpo__test_last), dpo__test_have_last = 1;
#endif
  for (int32_t j = 0; j < o->d; j++) g_sum[j] = o->acc[j].hi;
  if (loss_sum) *loss_sum = want_loss ? o->acc[o->d].hi : NAN;
  int64_t used = hdr[2] == DPO__M_LOCAL ? -1 : (int64_t)o->acc[o->d + 1].hi;
  if (n_used) *n_used = used;
  if (used > 0) o->st.rows += used;
  return DPO_OK;
}

int dpo_oracle_eval_sums_noised(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch,
                                const dpo_oracle_noise_t *noise, int want_loss,
                                double *loss_sum, double *g_sum, int64_t *n_used) {
  return dpo__eval_sums(o, x, batch, noise, want_loss, 0, 0, loss_sum, g_sum, n_used);
}

#ifdef DPO_TEST_SWITCHES
/* Test builds only (privacy/test_switches.h; dpopt-test audit --test-keep-all-rows). */
static int dpo__keep_all = 0;
void dpo__oracle_test_keep_all(int on) { dpo__keep_all = on ? 1 : 0; }
#endif

int dpo_oracle_eval_sums_sampled(dpo_oracle_t *o, const double *x, const dpo_oracle_noise_t *noise,
                                 int64_t m, int64_t n, double *g_sum) {
  if (!o || !noise || noise->kind != DPO_ONOISE_SECAGG || !(n > 0))
    return dpo_err(DPO_EINVAL, "dpo_oracle_eval_sums_sampled: needs a secure-aggregation spec "
                   "and n > 0");
#ifdef DPO_TEST_SWITCHES
  if (dpo__keep_all) m = n;
#endif
  return dpo__eval_sums(o, x, NULL, noise, 0, m, n, NULL, g_sum, NULL);
}

#ifdef DPO_TEST_SWITCHES
/* Test builds only (privacy/test_switches.h; dpopt-test train --test-step-request). */
static int dpo__step_request = 0;
void dpo__oracle_test_step_request(int on) { dpo__step_request = on ? 1 : 0; }
#endif

/* comm/step1.h; here beside the test switch that keeps the request path */
int dpo__oracle_step1_able(const dpo_oracle_t *o) {
#ifdef DPO_TEST_SWITCHES
  if (dpo__step_request) return 0;
#endif
  return o && o->size <= DPO__FOLD_RANKS && !o->n_public && !o->parties && !o->secagg &&
         !o->guard && !o->noise_rng;
}

int dpo_oracle_eval(dpo_oracle_t *o, const double *x, const dpo_batch_t *batch, int want_loss,
                    double *F, double *g) {
  double loss = 0.0;
  int64_t used = 0;
  int rc = dpo_oracle_eval_sums(o, x, batch, 1, &loss, g, &used);
  if (rc) return rc;
  if (used <= 0) return dpo_err(DPO_EINVAL, "dpo_oracle_eval: empty batch (mean undefined)");
  dpo_model_finish(o->model, o->d, used, x, &loss, g);
  if (F) *F = want_loss ? loss : NAN;
  return DPO_OK;
}

int dpo_oracle_eval_metric(dpo_oracle_t *o, const double *x, int heldout, double *loss_mean,
                           double *metric_mean) {
  static const char fn[] = "dpo_oracle_eval_metric";
  if (!o) return dpo_err(DPO_EINVAL, "%s: NULL oracle", fn);
  int rc = dpo__check_req(o, fn, x);
  if (rc) return rc;
  if (heldout && !o->heldout) return dpo_err(DPO_EINVAL, "%s: no held-out set attached", fn);
  memcpy(o->x, x, (size_t)o->d * sizeof *x);
  int64_t hdr[DPO__HDR] = {DPO__REQ_METRIC, heldout ? 1 : 0, 0, 0, DPO_ONOISE_NONE, 0, 0, 0};
  double t0 = dpo__now();
  DPO_MPI_CHECK(dpo__oracle_hdr_bcast(o, hdr));
  o->st.t_comm += dpo__now() - t0;
  int lrc = DPO_OK;
  if ((rc = dpo__serve_one(o, hdr, &lrc))) return rc;
  if ((rc = dpo__req_status(o, fn, lrc, 3))) return rc;
  double n = o->acc[2].hi;
  if (!(n > 0)) return dpo_err(DPO_EINVAL, "%s: no rows to evaluate", fn);
  if (loss_mean) *loss_mean = o->acc[0].hi / n;
  if (metric_mean) *metric_mean = o->acc[1].hi / n;
  return DPO_OK;
}

int dpo_oracle_finish(dpo_oracle_t *o, int status) {
  if (!o) return dpo_err(DPO_EINVAL, "dpo_oracle_finish: NULL oracle");
  if (o->rank != 0) return dpo_err(DPO_EINVAL, "dpo_oracle_finish: rank 0 only");
  if (o->finished) return status;
#ifdef DPO_TEST_SWITCHES
  if (status == DPO_OK && dpo__test_dev_kind == 4 && dpo__test_have_last) {
    /* a coordinator that asks for one release more than the plan, at its end */
    int lrc = DPO_OK;
    dpo__test_have_last = 0;
    DPO_MPI_CHECK(dpo__oracle_hdr_bcast(o, dpo__test_last));
    int mrc = dpo__serve_one(o, dpo__test_last, &lrc);
    if (mrc) return mrc;
    status = dpo__req_status(o, "dpo_oracle_finish", lrc, o->d + 2);
  }
#endif
  o->finished = 1;
  /* remote = 1: the failure was a worker's; its rank supplies code and detail in dpo_agree */
  int remote = status != DPO_OK && o->remote_fail != 0;
  char keep[512];
  snprintf(keep, sizeof keep, "%s", dpo_errmsg());
  int64_t hdr[DPO__HDR] = {DPO__REQ_FINISH, remote, 0, status, DPO_ONOISE_NONE, 0, 0, 0};
  DPO_MPI_CHECK(dpo__oracle_hdr_bcast(o, hdr));
  if (status != DPO_OK && !remote) dpo_err(status, "%s", keep);
  int rc = dpo_agree(o->comm, remote ? DPO_OK : status);
  if (rc == DPO_OK && status != DPO_OK) rc = dpo_err(status, "%s", keep);
  return rc;
}

int dpo_oracle_serve(dpo_oracle_t *o) {
  if (!o) return dpo_err(DPO_EINVAL, "dpo_oracle_serve: NULL oracle");
  if (o->rank == 0) return DPO_OK;
  o->finished = 0;
  for (;;) {
    int64_t hdr[DPO__HDR];
    double t0 = dpo__now();
    DPO_MPI_CHECK(dpo__oracle_hdr_bcast(o, hdr));
    o->st.t_comm += dpo__now() - t0;
    if (hdr[0] == DPO__REQ_FINISH) {
      int status = (int)hdr[3], remote = (int)hdr[1];
      int mine;
      if (o->local_fail) {
        dpo_err(o->local_fail, "%s", o->local_msg);
        mine = o->local_fail;
      } else {
        mine = remote ? DPO_OK : status;
      }
      o->finished = 1;
      int rc = dpo_agree(o->comm, mine);
      if (rc == DPO_OK && status != DPO_OK)
        rc = dpo_err(status, "finished by rank 0 with %s", dpo_strerror(status));
      return rc;
    }
    if (hdr[0] != DPO__REQ_SUMS && hdr[0] != DPO__REQ_METRIC && hdr[0] != DPO__REQ_ROWS)
      return dpo_err(DPO_EMPI, "dpo_oracle_serve: unknown request type %ld", (long)hdr[0]);
    int lrc;
    int rc = dpo__serve_one(o, hdr, &lrc);
    if (rc) return rc;
  }
}

void dpo_oracle_get_stats(const dpo_oracle_t *o, dpo_oracle_stats_t *st) {
  if (o && st) *st = o->st;
}

/* ---- multi-party runs ---- */

int dpo_oracle_set_secagg(dpo_oracle_t *o, dpo_secagg_t *sa) {
  if (!o) return dpo_err(DPO_EINVAL, "dpo_oracle_set_secagg: NULL oracle");
  o->secagg = sa;
  return DPO_OK;
}

int dpo_oracle_set_guard(dpo_oracle_t *o, struct dpo_guard *g) {
  if (!o) return dpo_err(DPO_EINVAL, "dpo_oracle_set_guard: NULL oracle");
  o->guard = g;
  return DPO_OK;
}

int dpo_oracle_set_noise_rng(dpo_oracle_t *o, dpo_rng_t *rng) {
  if (!o) return dpo_err(DPO_EINVAL, "dpo_oracle_set_noise_rng: NULL oracle");
  o->noise_rng = rng;
  return DPO_OK;
}

int dpo_oracle_rank_rows(const dpo_oracle_t *o, int rank, int64_t *row0, int64_t *n) {
  if (!o || rank < 0 || rank >= o->size)
    return dpo_err(DPO_EINVAL, "dpo_oracle_rank_rows: rank %d out of range", rank);
  if (o->n_public)
    return dpo_err(DPO_EUNSUP, "the parties' row counts are private (secagg, add-remove, "
                   "parties.data): no rank's row range is known");
  int64_t r0 = 0;
  for (int r = 0; r < rank; r++) r0 += o->rank_n[r];
  if (row0) *row0 = r0;
  if (n) *n = o->rank_n[rank];
  return DPO_OK;
}

int dpo_oracle_set_parties(dpo_oracle_t *o, const dpo_parties_t *p) {
  if (!o) return dpo_err(DPO_EINVAL, "dpo_oracle_set_parties: NULL oracle");
  if (p && p->nranks != o->size)
    return dpo_err(DPO_EINVAL, "dpo_oracle_set_parties: parties declared for %d ranks, the run "
                   "has %d", p->nranks, o->size);
  o->parties = p;
  return DPO_OK;
}

const dpo_parties_t *dpo_oracle_parties(const dpo_oracle_t *o) { return o ? o->parties : NULL; }

