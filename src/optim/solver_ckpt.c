/* The solver's checkpoints (see include/dpopt/optim.h, "checkpoints"): the file written at
 * the top of an iteration (the solver's state, the ledger's position, a seeded stream's
 * position, the algorithm's save() and the caller's on_checkpoint), and --resume: every check
 * of the file against this run before its state is restored. */
#include <stdio.h>
#include <stdlib.h>
#include <sodium.h>
#include <string.h>

#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/ckpt_int.h"
#include "optim/solver_int.h"

int dpo_algo_can_checkpoint(const dpo_algo_t *a) { return a && a->save && a->load; }

int64_t dpo_solver_start_iter(const dpo_solver_t *s) { return s->t0; }
int64_t dpo_solver_resume_orphans(const dpo_solver_t *s) { return s->orphans; }

#define DPO__CKPT_FORMAT 2 /* 2: the journal position (lines, chain tag) */

/* A plan whose pass is charged whole (dpo_plan_t.one_pass) has no checkpoint under secagg:
 * each party's guard checks from a record in its memory that no row of a pass repeats, and
 * numbers a resumed job's passes above every earlier one (guard.c), so a resumed pass would be
 * a second pass, past the budget the first one spends (doc/design.md, "Dropouts", *Why pnsgd
 * does not resume under secagg*). */
static int dpo__one_pass_refusal(const char *name, int code) {
  return dpo_err(code, "--algo %s under privacy.trust = secagg cannot write or resume "
                 "checkpoints: its steps are the batches of one disjoint pass, charged together "
                 "as one step's price (the whole budget), so a step redone after a resume would "
                 "release its rows again (a second pass, past the budget), and no party's guard "
                 "could check after a resume that the pass's rows do not repeat (its record of "
                 "the pass lives in the killed job); use dp-sgd-rdp or a DP-GD method that is "
                 "not one pass, which resume, or drop --checkpoint-every / --resume / "
                 "run.stop_after", name);
}

int dpo_algo_ckpt_check(const dpo_algo_t *a, const dpo_privacy_spec_t *spec) {
  if (!a || !spec) return dpo_err(DPO_EINVAL, "dpo_algo_ckpt_check: NULL argument");
  if (a->one_pass && spec->trust == DPO_TRUST_SECAGG) return dpo__one_pass_refusal(a->name, DPO_EINVAL);
  if (!dpo_algo_can_checkpoint(a))
    return dpo_err(DPO_EINVAL, "--algo %s cannot write or resume checkpoints: drop "
                   "--checkpoint-every / --resume / run.stop_after", a->name);
  return DPO_OK;
}

/* Asked for, refused before step 0 (solver.c) or at the resume; on a signal the run stops
 * without one (DPO_EUNSUP) */
int dpo__solver_ckpt_refused(const dpo_solver_t *s, int code) {
  if (!s->plan.one_pass || s->spec.trust != DPO_TRUST_SECAGG) return DPO_OK;
  return dpo__one_pass_refusal(s->algo->name, code);
}

int dpo__solver_ckpt_save(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t t) {
  dpo_ckpt_t *c = NULL;
  int rc = dpo__solver_ckpt_refused(s, DPO_EUNSUP), size = 1;
  if (!rc) rc = dpo_ckpt_create(&c);
  if (rc) return rc;
  MPI_Comm_size(dpo_oracle_comm(s->oracle), &size);
  int64_t toff = -1;
  if (o->trace) {
    fflush(o->trace);
    long p = ftell(o->trace);
    toff = p < 0 ? -1 : (int64_t)p;
  }
  dpo_ckpt_set_prefix(c, "solver.");
  if ((rc = dpo_ckpt_put_int(c, "format", DPO__CKPT_FORMAT)) ||
      (rc = dpo_ckpt_put_bytes(c, "algo", s->algo->name, (int64_t)strlen(s->algo->name))) ||
      (rc = dpo_ckpt_put_int(c, "d", s->d)) || (rc = dpo_ckpt_put_int(c, "n", s->n)) ||
      (rc = dpo_ckpt_put_int(c, "ranks", size)) || (rc = dpo_ckpt_put_int(c, "t", t)) ||
      (rc = dpo_ckpt_put_f64(c, "x", s->x, s->d)) ||
      (rc = dpo_ckpt_put_int(c, "trace_offset", toff)))
    goto out;
  /* ledger position: charges recorded and the exact totals at this point */
  int64_t cnt = -1, lines = -1;
  double se = 0.0, sd = 0.0;
  unsigned char head[32] = {0};
  if (s->ledger) {
    cnt = dpo_ledger_count(s->ledger);
    if ((rc = dpo_ledger_spent(s->ledger, &se, &sd)) ||
        (rc = dpo_ledger_position(s->ledger, &lines, head)))
      goto out;
  }
  /* the journal's line count and chain tag here: a resume refuses a journal that does not
   * reach this line with this tag (cut back, or replaced by an older copy) */
  if ((rc = dpo_ckpt_put_int(c, "ledger_count", cnt)) ||
      (rc = dpo_ckpt_put_double(c, "ledger_eps", se)) ||
      (rc = dpo_ckpt_put_double(c, "ledger_delta", sd)) ||
      (rc = dpo_ckpt_put_int(c, "ledger_lines", lines)) ||
      (rc = dpo_ckpt_put_bytes(c, "ledger_chain", head, sizeof head)))
    goto out;
  if ((rc = dpo_ckpt_put_rng(c, "", s->rng))) goto out;
  /* the noisy row count, with its journal line and seal: a resume takes it from here */
  if (s->count.noted &&
      ((rc = dpo_ckpt_put_int(c, "count", s->count.value)) ||
       (rc = dpo_ckpt_put_double(c, "count_b", s->count.b)) ||
       (rc = dpo_ckpt_put_int(c, "count_line", s->count.line)) ||
       (rc = dpo_ckpt_put_bytes(c, "count_seal", s->count.seal, sizeof s->count.seal))))
    goto out;
  dpo_ckpt_set_prefix(c, "algo.");
  if ((rc = s->algo->save(s, s->state, c))) goto out;
  dpo_ckpt_set_prefix(c, "run.");
  if (o->on_checkpoint && (rc = o->on_checkpoint(o->on_checkpoint_arg, c))) goto out;
  dpo_ckpt_set_prefix(c, "");
  rc = dpo_ckpt_write(c, o->checkpoint_path);
out:
  dpo_ckpt_destroy(c);
  return rc;
}

static int dpo__ckpt_load(dpo_solver_t *s, const char *path, int64_t *toff) {
  dpo_ckpt_t *c = NULL;
  int rc = DPO_OK, size = 1;
  if (s->rckpt && !strcmp(s->rckpt_path, path)) c = s->rckpt, s->rckpt = NULL; /* read at create */
  else if ((rc = dpo_ckpt_read(path, &c))) return rc;
  MPI_Comm_size(dpo_oracle_comm(s->oracle), &size);
  int64_t fmt = 0, d = 0, n = 0, ranks = 0, t = 0, cnt = 0, seeded = 0, lines = -1;
  unsigned char head[32];
  double se = 0, sd = 0;
  char name[128] = "";
  dpo_ckpt_set_prefix(c, "solver.");
  int64_t nl = dpo_ckpt_len(c, "algo");
  if ((rc = dpo_ckpt_get_int(c, "format", &fmt))) goto out;
  if (fmt != DPO__CKPT_FORMAT) {
    rc = dpo_err(DPO_EFORMAT, "%s: checkpoint format %lld, this dpopt reads %d%s", path,
                 (long long)fmt, DPO__CKPT_FORMAT,
                 fmt == 1 ? " (format 1 predates chained journals: start a new run)" : "");
    goto out;
  }
  if (nl < 0 || nl >= (int64_t)sizeof name) {
    rc = dpo_err(DPO_EFORMAT, "%s: no algorithm name in the checkpoint", path);
    goto out;
  }
  if ((rc = dpo_ckpt_get_bytes(c, "algo", name, nl))) goto out;
  name[nl] = '\0';
  if (strcmp(name, s->algo->name) != 0) {
    rc = dpo_err(DPO_EINVAL, "%s: checkpoint of algorithm %s, this run is %s", path, name,
                 s->algo->name);
    goto out;
  }
  if ((rc = dpo_ckpt_get_int(c, "d", &d)) || (rc = dpo_ckpt_get_int(c, "n", &n)) ||
      (rc = dpo_ckpt_get_int(c, "ranks", &ranks)) || (rc = dpo_ckpt_get_int(c, "t", &t)) ||
      (rc = dpo_ckpt_get_int(c, "trace_offset", toff)) ||
      (rc = dpo_ckpt_get_int(c, "ledger_count", &cnt)) ||
      (rc = dpo_ckpt_get_double(c, "ledger_eps", &se)) ||
      (rc = dpo_ckpt_get_double(c, "ledger_delta", &sd)) ||
      (rc = dpo_ckpt_get_int(c, "ledger_lines", &lines)) ||
      (rc = dpo_ckpt_get_bytes(c, "ledger_chain", head, sizeof head)) ||
      (rc = dpo_ckpt_get_int(c, "rng_seeded", &seeded)))
    goto out;
  if (d != s->d || n != s->n || t < 0) {
    rc = dpo_err(DPO_EINVAL, "%s: checkpoint of a %lld x %lld problem (t = %lld), the data here "
                 "is %lld x %d", path, (long long)n, (long long)d, (long long)t,
                 (long long)s->n, (int)s->d);
    goto out;
  }
  if ((rc = dpo_ckpt_get_f64(c, "x", s->x, s->d))) goto out;
  /* the ledger: the journal may only be ahead of the checkpoint (see optim.h) */
  if ((cnt >= 0) != (s->ledger != NULL)) {
    rc = dpo_err(DPO_EINVAL, "%s: the checkpoint %s a ledger, this run %s", path,
                 cnt >= 0 ? "has" : "has no", s->ledger ? "has one" : "has none");
    goto out;
  }
  s->orphans = 0;
  if (s->ledger) {
    int64_t jc = dpo_ledger_count(s->ledger);
    double je = 0, jd = 0;
    /* first the chain: the journal must reach the checkpoint's line with its tag */
    if ((rc = dpo_ledger_verify_position(s->ledger, "the checkpoint", lines, head)) ||
        (rc = dpo_ledger_spent(s->ledger, &je, &jd)))
      goto out;
    if (jc < cnt || (jc == cnt && (je != se || jd != sd)) || je < se || jd < sd) {
      rc = dpo_err(DPO_EFORMAT, "%s: the ledger journal (%lld charges, eps %.17g) is behind or "
                   "differs from the checkpoint (%lld charges, eps %.17g): refusing to resume "
                   "(a journal may never lose charges)", path, (long long)jc, je,
                   (long long)cnt, se);
      goto out;
    }
    s->orphans = jc - cnt;
  }
  if ((seeded == 1) != (s->rng && dpo_rng_is_seeded(s->rng))) {
    rc = dpo_err(DPO_EINVAL, "%s: the checkpoint is of a %s run, this run is %s", path,
                 seeded == 1 ? "seeded" : "unseeded",
                 s->rng && dpo_rng_is_seeded(s->rng) ? "seeded" : "unseeded");
    goto out;
  }
  /* a count the checkpoint holds and this run did not take: another plan (a size declared
   * since), or a solver made by dpo_solver_create_spec, which drew and charged its own */
  if (dpo_ckpt_len(c, "count_seal") >= 0 && !s->count.taken) {
    rc = dpo_err(DPO_EINVAL, "%s: the checkpoint holds the run's noisy row count, which this "
                 "run %s", path, s->count.resuming ? "does not use (a public size declared "
                 "since, or another relation)" : "drew again (a resume must create its solver "
                 "with dpo_solver_create_resume)");
    goto out;
  }
  dpo_ckpt_set_prefix(c, "algo.");
  if ((rc = s->algo->load(s, s->state, c))) goto out;
  /* the stream last: create() and load() may have drawn from it */
  dpo_ckpt_set_prefix(c, "solver.");
  if (seeded == 1 && (rc = dpo_ckpt_get_rng(c, "", NULL, s->rng))) goto out;
  if (ranks != size)
    fprintf(stderr, "dpopt: warning: %s was written by %lld ranks, resuming on %d: the result "
            "is not bit-identical to an uninterrupted run (reduction order)\n", path,
            (long long)ranks, size);
  s->t0 = t;
  s->iters = t;
  s->resumed = 1;
  s->cvalid = 0;
out:
  dpo_ckpt_destroy(c);
  return rc;
}

int dpo_solver_resume(dpo_solver_t *s, const char *path, int64_t *trace_offset) {
  if (!s) return dpo_err(DPO_EINVAL, "dpo_solver_resume: NULL solver");
  MPI_Comm comm = dpo_oracle_comm(s->oracle);
  int rc = DPO_OK;
  int64_t toff = -1;
  if (s->rank == 0) {
    if (!path) rc = dpo_err(DPO_EINVAL, "dpo_solver_resume: NULL path");
    else if (!dpo_algo_can_checkpoint(s->algo))
      rc = dpo_err(DPO_EUNSUP, "algorithm %s cannot resume from checkpoints (no save/load)",
                   s->algo->name);
    else if (!(rc = dpo__solver_ckpt_refused(s, DPO_EINVAL))) rc = dpo__ckpt_load(s, path, &toff);
  }
  rc = dpo_agree(comm, rc);
  if (!rc && (MPI_Bcast(s->x, s->d, MPI_DOUBLE, 0, comm) != MPI_SUCCESS ||
              MPI_Bcast(&s->t0, 1, MPI_INT64_T, 0, comm) != MPI_SUCCESS))
    rc = dpo_agree(comm, dpo_err(DPO_EMPI, "dpo_solver_resume: MPI_Bcast failed"));
  if (!rc) {
    s->resumed = 1;
    s->iters = s->t0;
  }
  if (trace_offset) *trace_offset = toff;
  return rc;
}

/* ---- the noisy row count (ckpt_int.h) ---- */

/* The text the seal covers: the value, its scale and the charge's line and tag. */
static void dpo__count_text(const dpo_solver_t *s, const unsigned char tag[32], char *t,
                            size_t cap) {
  char hex[65];
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", tag[i]);
  snprintf(t, cap, "noisy row count %lld, Laplace scale %a, journal line %lld chain %s",
           (long long)s->count.value, s->count.b, (long long)s->count.line, hex);
}

int dpo__solver_ckpt_count_read(dpo_solver_t *s, const char *path) {
  dpo_ckpt_t *c = NULL;
  int rc = dpo_ckpt_read(path, &c);
  if (rc) return rc;
  /* kept for dpo_solver_resume (dpo__ckpt_load): the state from the same bytes */
  dpo_ckpt_destroy(s->rckpt);
  free(s->rckpt_path);
  s->rckpt = NULL;
  if ((s->rckpt_path = strdup(path))) s->rckpt = c;
  s->count.resuming = 1;
  dpo_ckpt_set_prefix(c, "solver.");
  if (dpo_ckpt_len(c, "count_seal") >= 0) {
    s->count.in_ckpt = 1;
    if ((rc = dpo_ckpt_get_int(c, "count", &s->count.value)) ||
        (rc = dpo_ckpt_get_double(c, "count_b", &s->count.b)) ||
        (rc = dpo_ckpt_get_int(c, "count_line", &s->count.line)) ||
        (rc = dpo_ckpt_get_bytes(c, "count_seal", s->count.seal, sizeof s->count.seal))) {
      char why[400];
      snprintf(why, sizeof why, "%s", dpo_errmsg());
      rc = dpo_err(rc, "%s: the checkpoint's noisy row count: %s", path, why);
    }
  }
  if (!s->rckpt) dpo_ckpt_destroy(c);
  return rc;
}

int dpo__count_note(dpo_solver_t *s, double b, int64_t value) {
  int64_t lines = -1;
  unsigned char head[32];
  char t[256];
  int rc = dpo_ledger_position(s->ledger, &lines, head);
  if (rc || lines < 0) return rc; /* no journal: nothing to resume from, nothing kept */
  s->count.value = value, s->count.b = b, s->count.line = lines;
  dpo__count_text(s, head, t, sizeof t);
  if ((rc = dpo_ledger_seal(s->ledger, t, s->count.seal))) return rc;
  s->count.noted = 1;
  return DPO_OK;
}

int dpo__count_resumed(dpo_solver_t *s, double b, int64_t *value) {
  *value = -1;
  if (!s->count.resuming) return DPO_OK;
  if (!s->count.in_ckpt)
    return dpo_err(DPO_EINVAL, "the checkpoint holds no noisy row count, which this run's "
                   "schedule needs: a resume takes the count from the checkpoint and never draws "
                   "or charges a second (a checkpoint of a run with a declared size, "
                   "privacy.public_n, or an edited one?)");
  dpo_charge_t c;
  unsigned char tag[32], seal[32];
  char t[256];
  int rc = dpo_ledger_line_charge(s->ledger, s->count.line, &c, tag);
  if (rc) {
    char why[400];
    snprintf(why, sizeof why, "%s", dpo_errmsg());
    return dpo_err(DPO_EFORMAT, "the checkpoint's noisy row count names journal line %lld, "
                   "which is not its charge: %s", (long long)s->count.line, why);
  }
  if (c.mechanism != DPO_MECH_LAPLACE || c.step != -1 || c.noise_scale != s->count.b ||
      c.sensitivity != 1 || c.dim != 1)
    return dpo_err(DPO_EFORMAT, "journal line %lld, which the checkpoint names as the noisy row "
                   "count's charge, is a %s release at step %lld of scale %.17g, not the count's "
                   "(laplace, step -1, scale %.17g)", (long long)s->count.line,
                   dpo_mech_name(c.mechanism), (long long)c.step, c.noise_scale, s->count.b);
  if (s->count.b != b)
    return dpo_err(DPO_EINVAL, "the checkpoint's noisy row count was charged at Laplace scale "
                   "%.17g, this run's privacy.count_eps gives %.17g", s->count.b, b);
  dpo__count_text(s, tag, t, sizeof t);
  if ((rc = dpo_ledger_seal(s->ledger, t, seal))) return rc;
  if (sodium_memcmp(seal, s->count.seal, sizeof seal) != 0)
    return dpo_err(DPO_EFORMAT, "the checkpoint's noisy row count %lld does not carry the seal "
                   "the run wrote with its journal key (the checkpoint was edited, or is another "
                   "run's)", (long long)s->count.value);
  if (s->count.value < 1 || s->count.value > ((int64_t)1 << 53))
    return dpo_err(DPO_EFORMAT, "the checkpoint's noisy row count %lld is outside [1, 2^53]",
                   (long long)s->count.value);
  s->count.taken = s->count.noted = 1;
  *value = s->count.value;
  return DPO_OK;
}
