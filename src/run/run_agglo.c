/* Agglomeration onto rank 0 (run_agglo.h; doc/design.md "Fewer ranks when meetings cost
 * more").  PETSc's PCTELESCOPE moves a coarse grid's solve onto fewer ranks when its
 * communication outweighs its work; here a DP-SGD step of ~50 us of gradient meets its ranks
 * once, and on a loaded node each meeting waits ~0.4 ms for the scheduler. */
#include "run/run_agglo.h"

#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "comm/reduce.h" /* DPO__FOLD_RANKS */
#include "comm/wait.h"
#include "data/data_internal.h" /* dpo__dense_alloc */
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run/run_impl.h"
#include "run/run_parties.h" /* dpo__run_parties_table */

enum { DPO__AGG_AUTO = 0, DPO__AGG_OFF = 1, DPO__AGG_ON = 2 };
static const char *const dpo__agg_names[] = {"auto", "off", "on"};

struct dpo__agglo {
  int mode;
  int keyed;        /* the mode came from run.agglomerate (else DPOPT_AGGLOMERATE or auto) */
  double cap_mb;
  int done, idle;   /* agglomerated; this rank waits */
  MPI_Comm full, solo;
  int measured;     /* auto measured: the facts below are filled */
  dpo__agglo_facts_t f;
  double share, t1, tP;
  int policy;
  dpo__wait_probe_t probe; /* auto: the wait policy's probe */
  char reason[512];
};

int dpo__agglo_choose(const dpo__agglo_facts_t *f, double *t1, double *tP) {
  const double work = f->rows * f->width * f->entry_s;
  const int P = f->P > 1 ? f->P : 1;
  if (f->cores_free && P > 1) {
    *t1 = *tP = NAN;
    return P;
  }
  *t1 = work;
  *tP = work / P + (P > 1 ? f->meetings * f->meet_s : 0.0);
  return *t1 < *tP ? 1 : P;
}

int dpo__agglo_settings(dpo_run_t *r) {
  const char *m = NULL;
  struct dpo__agglo *a = r->agglo ? r->agglo : calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "out of memory");
  a->full = a->solo = MPI_COMM_NULL;
  r->agglo = a;
  /* the key, else the environment's default for every run (a batch system's, the tests'),
   * else auto */
  const char *env = getenv("DPOPT_AGGLOMERATE");
  a->keyed = dpo_config_get(r->cfg, "run.agglomerate") != NULL;
  int rc = dpo_config_get_str(r->cfg, "run.agglomerate", env && *env ? env : "auto", &m);
  if (!rc) rc = dpo_config_get_double(r->cfg, "run.agglomerate_max_mb", 256.0, &a->cap_mb);
  if (rc) return rc;
  a->mode = -1;
  for (int k = 0; k < 3; k++)
    if (!strcasecmp(m, dpo__agg_names[k])) a->mode = k;
  if (a->mode < 0 && !a->keyed)
    return dpo_err(DPO_EINVAL, "DPOPT_AGGLOMERATE=%s: expected auto, off or on", m);
  if (a->mode < 0)
    return dpo_err(DPO_EINVAL, "%s: run.agglomerate = '%s': expected auto, off or on",
                   dpo_config_origin(r->cfg, "run.agglomerate"), m);
  /* a setting nobody reads is an error: the cap is read only by auto and on */
  if (a->mode == DPO__AGG_OFF && a->keyed && dpo_config_get(r->cfg, "run.agglomerate_max_mb"))
    return dpo_err(DPO_EINVAL, "%s: run.agglomerate_max_mb is read only when run.agglomerate is "
                   "auto or on, and %s sets it off: drop one", dpo_config_origin(r->cfg,
                   "run.agglomerate_max_mb"), dpo_config_origin(r->cfg, "run.agglomerate"));
  if (!(a->cap_mb > 0) || !isfinite(a->cap_mb))
    return dpo_err(DPO_EINVAL, "%s: run.agglomerate_max_mb = %g: expected a number of MB > 0",
                   dpo_config_origin(r->cfg, "run.agglomerate_max_mb"), a->cap_mb);
  return DPO_OK;
}

/* Why this run cannot agglomerate (NULL: it can).  Not collective: the same on every rank. */
static const char *dpo__agglo_unable(const dpo_run_t *r) {
  /* the rows may move only inside one data holder: every rank one party's, trusted centrally */
  if (dpo__run_parties_table(r->parties) || r->spec.trust != DPO_TRUST_CENTRAL)
    return "parties or a trust mode other than central: each party's rows stay with it";
  if (r->resuming || r->ckpt_every > 0 || r->stop_after > 0)
    return "checkpoints or a resume";
  /* the one-run audit (its hooks are set at its load: its kind, known at set-up, says it; by
   * name, as run_kind.c sits above this file) */
  if (!r->ops || strcmp(r->ops->name, "train") || r->rows_hook || r->release_fn)
    return "the one-run audit";
  return NULL;
}

int dpo__agglo_check(const dpo_run_t *r) {
  /* the environment's on is a default for every run: quietly not for these */
  const char *why = r->agglo && r->agglo->mode == DPO__AGG_ON && r->agglo->keyed && r->size > 1
                        ? dpo__agglo_unable(r) : NULL;
  if (!why) return DPO_OK;
  return dpo_err(DPO_EINVAL, "%s: run.agglomerate = on: this run cannot solve on fewer ranks "
                 "(%s); drop it or set it to auto (nothing was run or written)",
                 dpo_config_origin(r->cfg, "run.agglomerate"), why);
}

/* MB a shard's rows take (as dpo__agglo_mb counts them) and the entries of its largest array */
static double dpo__agglo_held_mb(const dpo_shard_t *s) {
  const double n = (double)s->n;
  return (s->sparse ? 12.0 * (double)s->rowptr[s->n] + 16.0 * n : (8.0 * s->d + 8.0) * n) / 1e6;
}

static double dpo__agglo_entries(const dpo_shard_t *s) {
  const double z = s->sparse ? (double)s->rowptr[s->n] : 0;
  return s->sparse ? (z > (double)s->n ? z : (double)s->n) : (double)s->n * (double)s->d;
}

/* Rank 0 after the move, in MB: the training rows' public bound (N rows of d entries: dense
 * 8 bytes an entry, CSR 12, and the label and row pointer) and the test rows.  Collective. */
static double dpo__agglo_mb(const dpo_run_t *r, double N) {
  const dpo_shard_t *s = r->train;
  double row = s->sparse ? 12.0 * s->d + 16.0 : 8.0 * s->d + 8.0;
  double test = r->test ? dpo__agglo_held_mb(r->test) : 0;
  MPI_Allreduce(MPI_IN_PLACE, &test, 1, MPI_DOUBLE, MPI_SUM, r->comm);
  return N * row / 1e6 + test;
}

/* auto: the facts of a step from the settings (public) and the machine (measured). */
static int dpo__agglo_measure(dpo_run_t *r, double N) {
  struct dpo__agglo *a = r->agglo;
  dpo__wait_costs_t c;
  int rc = dpo__wait_measure(r->comm, &c);
  if (rc) return rc;
  int64_t m = 0;
  const int sgd = !strcmp(r->algo->name, "dp-sgd-rdp");
  /* a step's rows: the batch declared, dp-sgd-rdp's default ceil(sqrt N), else a full pass
   * (the DP-GD family's default; the methods of ceil(sqrt n) rows are overestimated, which
   * keeps their ranks) */
  if (dpo_config_get(r->cfg, "algo.m")) dpo_config_get_int(r->cfg, "algo.m", 0, &m);
  double rows = m > 0 ? (double)m : sgd ? ceil(sqrt(N)) : N;
  /* trace rows are full passes: every run.trace_every steps, else about 200 a run (a row every
   * ceil(T / 200) steps when --iters says T; counted as one a step when it does not) */
  const int64_t every = dpo_config_get(r->cfg, "run.trace_every") ? r->trace_every
                        : r->iters > 200                          ? (r->iters + 199) / 200
                                                                  : 1;
  if (every > 0 && !r->no_trace_loss) rows += N / (double)every;
  a->f.P = r->size;
  a->f.rows = rows;
  a->f.width = r->train->d;
  a->f.entry_s = c.entry_s;
  /* one meeting a step, its trace row's sums in it, where the algorithm has that path
   * (dpo_algo_t.step1: dp-sgd-rdp, full-batch dp-gd; comm/step1.h: up to DPO__FOLD_RANKS
   * ranks of one data holder, which agglomeration requires too); else the request path's
   * three */
  a->f.meetings = r->algo->step1 && (sgd || m <= 0) && r->size <= DPO__FOLD_RANKS ? 1 : 3;
  a->f.meet_s = c.meet_s;
  a->share = c.share;
  a->policy = c.policy;
  a->measured = 1;
  return DPO_OK;
}

/* Rank 0 gets every rank's rows, in rank order (so exactly a 1-rank run's shard).  Collective. */
static int dpo__agglo_gather(MPI_Comm comm, int rank, int size, dpo_shard_t **ps) {
  dpo_shard_t *s = *ps, *t = NULL;
  int64_t mine[2] = {s->n, s->sparse ? s->rowptr[s->n] : 0}, *cnt = NULL;
  int *rc_n = NULL, *dn = NULL, *rc_z = NULL, *dz = NULL, rc = DPO_OK;
  if (rank == 0 && !(cnt = malloc(2 * (size_t)size * sizeof *cnt)))
    rc = dpo_err(DPO_ENOMEM, "out of memory");
  if ((rc = dpo_agree(comm, rc))) return rc;
  MPI_Gather(mine, 2, MPI_INT64_T, cnt, 2, MPI_INT64_T, 0, comm);
  /* every count and offset below fits an int: dpo__agglo_begin checked the ranks' entries
   * together (dpo__agglo_entries) before calling this */
  const int w = s->sparse ? 1 : s->d; /* entries of X a row holds (dense) */
  if (rank == 0) {
    int64_t N = 0, Z = 0;
    for (int k = 0; k < size; k++) N += cnt[2 * k], Z += cnt[2 * k + 1];
    rc_n = malloc(4 * (size_t)size * sizeof *rc_n);
    t = calloc(1, sizeof *t);
    if (!rc && (!rc_n || !t)) rc = dpo_err(DPO_ENOMEM, "out of memory");
    if (!rc) {
      *t = *s;
      t->X = NULL, t->rowptr = NULL, t->colind = NULL, t->val = NULL, t->norms = NULL;
      t->map = NULL, t->map_len = 0;
      t->n = N, t->row0 = 0;
      t->y = malloc((size_t)(N ? N : 1) * sizeof *t->y);
      if (s->sparse) {
        t->rowptr = malloc((size_t)(N + 1) * sizeof *t->rowptr);
        t->colind = malloc((size_t)(Z ? Z : 1) * sizeof *t->colind);
        t->val = malloc((size_t)(Z ? Z : 1) * sizeof *t->val);
        if (!t->rowptr || !t->colind || !t->val) rc = DPO_ENOMEM;
      } else if (!(t->X = dpo__dense_alloc((size_t)(N ? N : 1) * (size_t)w))) {
        /* the loader's 64-byte aligned storage: the gradient kernel may assume it */
        rc = DPO_ENOMEM;
      }
      if (!t->y) rc = DPO_ENOMEM;
      if (rc) rc = dpo_err(rc, "agglomeration: out of memory for %lld rows on rank 0",
                           (long long)N);
    }
    if (!rc) {
      dn = rc_n + size, rc_z = rc_n + 2 * size, dz = rc_n + 3 * size;
      int64_t on = 0, oz = 0;
      for (int k = 0; k < size; k++) {
        rc_n[k] = (int)cnt[2 * k], dn[k] = (int)on, rc_z[k] = (int)cnt[2 * k + 1];
        dz[k] = (int)oz;
        on += cnt[2 * k], oz += cnt[2 * k + 1];
      }
    }
  }
  if ((rc = dpo_agree(comm, rc))) goto out;
  int e = MPI_Gatherv(s->y, (int)s->n, MPI_DOUBLE, rank ? NULL : t->y, rc_n, dn, MPI_DOUBLE, 0,
                      comm);
  if (!s->sparse) {
    if (rank == 0)
      for (int k = 0; k < size; k++) rc_n[k] *= w, dn[k] *= w;
    if (!e) e = MPI_Gatherv(s->X, (int)(s->n * w), MPI_DOUBLE, rank ? NULL : t->X, rc_n, dn,
                            MPI_DOUBLE, 0, comm);
  } else {
    /* each rank's row ends (rowptr[1..n]), rebased below by the entries before the rank */
    if (!e) e = MPI_Gatherv(s->rowptr + 1, (int)s->n, MPI_INT64_T, rank ? NULL : t->rowptr + 1,
                            rc_n, dn, MPI_INT64_T, 0, comm);
    if (!e) e = MPI_Gatherv(s->colind, (int)mine[1], MPI_INT32_T, rank ? NULL : t->colind,
                            rc_z, dz, MPI_INT32_T, 0, comm);
    if (!e) e = MPI_Gatherv(s->val, (int)mine[1], MPI_DOUBLE, rank ? NULL : t->val, rc_z, dz,
                            MPI_DOUBLE, 0, comm);
    if (!e && rank == 0) {
      t->rowptr[0] = 0;
      for (int k = 0; k < size; k++)
        for (int64_t i = 0; i < cnt[2 * k]; i++) t->rowptr[1 + dn[k] + i] += dz[k];
    }
  }
  if ((rc = dpo_agree(comm, e ? dpo_err(DPO_EMPI, "agglomeration: MPI_Gatherv failed") : 0)))
    goto out;
  if (rank == 0) {
    dpo_shard_destroy(s);
    *ps = t;
    t = NULL;
  }
out:
  dpo_shard_destroy(t);
  free(cnt);
  free(rc_n);
  return rc;
}

/* Rank 0's line under --verbose, and the reason summary.json keeps. */
static void dpo__agglo_say(dpo_run_t *r) {
  struct dpo__agglo *a = r->agglo;
  if (r->rank == 0 && a->reason[0] && dpo_msg_verbose())
    dpo_msg(a->done ? "solving on rank 0 alone, with the rows of all %d ranks: %s"
                    : "solving on all %d ranks: %s", r->size, a->reason);
}

int dpo__agglo_begin(dpo_run_t *r, double N, int *idle) {
  struct dpo__agglo *a = r->agglo;
  *idle = 0;
  if (!a || r->size == 1) return DPO_OK;
  /* rank 0's mode (DPOPT_AGGLOMERATE could differ between ranks): one path everywhere */
  if (MPI_Bcast(&a->mode, 1, MPI_INT, 0, r->comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "agglomeration: MPI_Bcast failed");
  if (a->mode == DPO__AGG_OFF) return DPO_OK;
  const char *why = dpo__agglo_unable(r);
  if (why) {
    snprintf(a->reason, sizeof a->reason, "%s: %s", dpo__agg_names[a->mode], why);
    return DPO_OK;
  }
  if (!(N > 0)) {
    snprintf(a->reason, sizeof a->reason, "%s: no public data set size (--public-n) to "
             "bound the rows moved", dpo__agg_names[a->mode]);
    dpo__agglo_say(r);
    return DPO_OK;
  }
  const double mb = dpo__agglo_mb(r, N);
  if (mb > a->cap_mb) {
    snprintf(a->reason, sizeof a->reason, "%s: rank 0 would hold up to %.1f MB of rows, over "
             "run.agglomerate_max_mb = %g", dpo__agg_names[a->mode], mb, a->cap_mb);
    dpo__agglo_say(r);
    return DPO_OK;
  }
  int P = r->size, rc;
  if (a->mode == DPO__AGG_ON) {
    P = 1;
    snprintf(a->reason, sizeof a->reason, "on: forced (%s), %.1f MB of rows at most on rank 0",
             a->keyed ? "run.agglomerate = on" : "DPOPT_AGGLOMERATE=on", mb);
  } else {
    /* the wait policy's probe (set up now if not yet) first: cores of their own, and the
     * meetings cost microseconds; measured only when it matters */
    if ((rc = dpo__wait_setup(r->comm))) return rc;
    dpo__wait_probed(r->comm, &a->probe);
    a->f.P = r->size;
    a->f.cores_free = a->probe.probed && !a->probe.shared;
    if (!a->f.cores_free && (rc = dpo__agglo_measure(r, N))) return rc;
    P = r->rank == 0 ? dpo__agglo_choose(&a->f, &a->t1, &a->tP) : 0;
    MPI_Bcast(&P, 1, MPI_INT, 0, r->comm); /* rank 0's word: one decision everywhere */
    if (a->f.cores_free)
      snprintf(a->reason, sizeof a->reason, "auto: every rank had a core of its own (the wait "
               "policy's probe: at least %.2f of a core while all computed, %d tasks ready to "
               "run on %d cores), so a meeting costs microseconds: the ranks kept, nothing "
               "more measured", a->probe.share, a->probe.ready, a->probe.cores);
    else
      snprintf(a->reason, sizeof a->reason, "auto: a step's work %.3g s (%.0f rows x %.0f "
               "entries at %.3g s, a rank got %.2f of a core), %.0f meeting%s of %.3g s (%s "
               "wait): predicted %.3g s a step on 1 rank, %.3g s on %d",
               a->f.rows * a->f.width * a->f.entry_s, a->f.rows, a->f.width, a->f.entry_s,
               a->share, a->f.meetings, a->f.meetings == 1 ? "" : "s", a->f.meet_s,
               a->policy == DPO__WAIT_SLEEP ? "sleeping" : "spinning", a->t1, a->tP, r->size);
  }
  if (P != 1) {
    dpo__agglo_say(r);
    return DPO_OK;
  }
  /* the cap again on the rows the ranks hold (a public size declared below them must not let
   * rank 0 hold more), and each shard's move within one MPI message's int counts */
  double held[3] = {dpo__agglo_held_mb(r->train) + (r->test ? dpo__agglo_held_mb(r->test) : 0),
                    dpo__agglo_entries(r->train), r->test ? dpo__agglo_entries(r->test) : 0};
  if (MPI_Allreduce(MPI_IN_PLACE, held, 3, MPI_DOUBLE, MPI_SUM, r->comm) != MPI_SUCCESS)
    return dpo_err(DPO_EMPI, "agglomeration: MPI_Allreduce failed");
  if (held[0] > a->cap_mb || held[1] > INT_MAX || held[2] > INT_MAX) {
    snprintf(a->reason, sizeof a->reason, "%s: the rows the ranks hold exceed %s: the ranks "
             "kept", dpo__agg_names[a->mode], held[0] > a->cap_mb
             ? "run.agglomerate_max_mb" : "one MPI message");
    dpo__agglo_say(r);
    return DPO_OK;
  }
  if ((rc = dpo__agglo_gather(r->comm, r->rank, r->size, &r->train)) ||
      (r->test && (rc = dpo__agglo_gather(r->comm, r->rank, r->size, &r->test))))
    return rc;
  a->done = 1;
  a->full = r->comm;
  if (r->rank == 0) {
    if (MPI_Comm_dup(MPI_COMM_SELF, &a->solo) != MPI_SUCCESS) a->solo = MPI_COMM_NULL;
    rc = a->solo == MPI_COMM_NULL ? dpo_err(DPO_EMPI, "agglomeration: MPI_Comm_dup failed") : 0;
  }
  if ((rc = dpo_agree(r->comm, rc))) return rc;
  dpo__agglo_say(r);
  if (r->rank == 0) r->comm = a->solo;
  else *idle = a->idle = 1;
  return DPO_OK;
}

void dpo__agglo_resume(dpo_run_t *r) {
  if (r->agglo && r->agglo->done && !r->agglo->idle) r->comm = r->agglo->solo;
}

int dpo__agglo_idle(const dpo_run_t *r) { return r->agglo && r->agglo->idle; }

MPI_Comm dpo__agglo_solve_comm(const dpo_run_t *r) {
  return r->agglo && r->agglo->done && !r->agglo->idle ? r->agglo->solo : r->comm;
}

int dpo__agglo_end(dpo_run_t *r, int rc) {
  struct dpo__agglo *a = r->agglo;
  if (!a || !a->done) return rc;
  /* rank 0's status, lifecycle position and iterations (dpo_run_result on every rank) */
  int64_t v[5] = {rc, r->state, r->evaluated, r->run_rc,
                  r->solver ? dpo_solver_iters(r->solver) : 0};
  if (!a->idle) r->comm = a->full;
  MPI_Request rq;
  /* the others sleep until rank 0 is done (dpo__wait_long): no spinning beside it */
  if (MPI_Ibcast(v, 5, MPI_INT64_T, 0, a->full, &rq) != MPI_SUCCESS || dpo__wait_long(&rq))
    return dpo_err(DPO_EMPI, "agglomeration: MPI_Ibcast of rank 0's status failed");
  /* a failure: rank 0's message agreed on every rank (printed once, by rank 0) */
  if (v[0] != DPO_OK && v[0] != DPO_EBUDGET && v[0] != DPO_EINTR)
    return dpo_agree(a->full, a->idle ? DPO_OK : rc);
  if (!a->idle) return rc;
  r->run_rc = (int)v[3];
  r->state = (int)v[1];
  r->evaluated = (int)v[2];
  r->kiters = v[4]; /* dpo_run_result's iterations where there is no solver */
  return (int)v[0];
}

void dpo__agglo_summary(const dpo_run_t *r, json_object *sum) {
  const struct dpo__agglo *a = r->agglo;
  json_object_object_add(sum, "ranks_solving", json_object_new_int(a && a->done ? 1 : r->size));
  if (!a || r->size == 1) return;
  if (a->done) json_object_object_add(sum, "agglomerated_from", json_object_new_int(r->size));
  json_object *o = json_object_new_object();
  json_object_object_add(o, "mode", json_object_new_string(dpo__agg_names[a->mode]));
  /* summary.json's wait is rank 0's, alone; the others slept on its status (dpo__wait_long) */
  if (a->done) json_object_object_add(o, "others_wait", json_object_new_string("sleep"));
  if (a->reason[0]) json_object_object_add(o, "reason", json_object_new_string(a->reason));
  if (a->f.cores_free) {
    json_object_object_add(o, "core_share", dpo_json_double(a->probe.share));
    json_object_object_add(o, "ready_tasks", json_object_new_int(a->probe.ready));
    json_object_object_add(o, "cores", json_object_new_int(a->probe.cores));
  }
  if (a->measured) {
    json_object_object_add(o, "core_share", dpo_json_double(a->share));
    json_object_object_add(o, "entry_s", dpo_json_double(a->f.entry_s));
    json_object_object_add(o, "rows_per_step", dpo_json_double(a->f.rows));
    json_object_object_add(o, "meetings_per_step", dpo_json_double(a->f.meetings));
    json_object_object_add(o, "meeting_s", dpo_json_double(a->f.meet_s));
    json_object_object_add(o, "predicted_step_s_1", dpo_json_double(a->t1));
    json_object_object_add(o, "predicted_step_s_all", dpo_json_double(a->tP));
  }
  json_object_object_add(sum, "agglomerate", o);
}

void dpo__agglo_destroy(dpo_run_t *r) {
  if (!r->agglo) return;
  if (r->agglo->solo != MPI_COMM_NULL) MPI_Comm_free(&r->agglo->solo);
  free(r->agglo);
  r->agglo = NULL;
}
