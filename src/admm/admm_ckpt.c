/* Checkpoints of DP-ADMM / DP-AccADMM and their non-private references (dpopt admm --out
 * with --checkpoint-every, run.stop_after, SIGTERM / SIGINT; --resume): rank 0's iteration
 * state in the checkpoint format of dpopt/optim.h ("admm.*" keys), so a seeded run stopped
 * and resumed gives the bytes of an uninterrupted one.  The ledger rule is train's: the
 * journal may hold more charges than the checkpoint knows (they stay spent), never fewer or
 * another chain (dpo_ledger_verify_position). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admm/admm_job.h"
#include "dpopt/optim.h"
#include "dpopt/status.h"

#define DPO__ADMM_CKPT_FORMAT 1

int dpo__admm_ckpt_save(const char *path, const char *method, int ranks,
                        const dpo_dpadmm_state_t *st, FILE *trace, const dpo_ledger_t *L,
                        const dpo_rng_t *rng) {
  dpo_ckpt_t *c = NULL;
  int64_t lines = 0, toff = 0, iv[4] = {st->it, st->restarts, st->releases, ranks};
  unsigned char head[32] = {0};
  int rc = dpo_ckpt_create(&c);
  if (rc) return rc;
  if (trace && (fflush(trace) != 0 || (toff = ftell(trace)) < 0))
    rc = dpo_err(DPO_EIO, "%s: the trace cannot be flushed: %s", path, strerror(errno));
  if (!rc && L) rc = dpo_ledger_position(L, &lines, head);
  if (!rc && !((rc = dpo_ckpt_put_int(c, "admm.format", DPO__ADMM_CKPT_FORMAT)) ||
               (rc = dpo_ckpt_put_bytes(c, "admm.method", method, (int64_t)strlen(method))) ||
               (rc = dpo_ckpt_put_i64(c, "admm.counts", iv, 4)) ||
               (rc = dpo_ckpt_put_double(c, "admm.theta", st->theta)) ||
               (rc = dpo_ckpt_put_double(c, "admm.sigma", st->sigma)) ||
               (rc = dpo_ckpt_put_int(c, "admm.trace_offset", toff)) ||
               (rc = dpo_ckpt_put_int(c, "admm.ledger_lines", L ? lines : -1)) ||
               (rc = dpo_ckpt_put_bytes(c, "admm.ledger_chain", head, sizeof head)) ||
               (rc = dpo_ckpt_put_rng(c, "admm.", rng)))) {
    const double *v[7] = {st->x, st->xh, st->xp, st->u, st->uh, st->up, st->y};
    static const char *const k[7] = {"admm.x", "admm.xh", "admm.xp", "admm.u", "admm.uh",
                                     "admm.up", "admm.y"};
    for (int i = 0; i < 7 && !rc; i++) rc = dpo_ckpt_put_f64(c, k[i], v[i], i < 3 ? st->d : st->p);
  }
  if (!rc) rc = dpo_ckpt_write(c, path);
  dpo_ckpt_destroy(c);
  return rc;
}

void dpo__admm_state_free(dpo_dpadmm_state_t *st) {
  double **v[7] = {&st->x, &st->xh, &st->xp, &st->u, &st->uh, &st->up, &st->y};
  for (int i = 0; i < 7; i++) free(*v[i]), *v[i] = NULL;
}

/* The saved run must be this run: same method, rank count and dimensions. */
static int dpo__admm_ckpt_same(const dpo_ckpt_t *c, const char *path, const char *method,
                               int ranks, int64_t iv[4]) {
  char m[32] = "";
  int64_t fmt = 0, ml = dpo_ckpt_len(c, "admm.method");
  int rc;
  if ((rc = dpo_ckpt_get_int(c, "admm.format", &fmt))) return rc;
  if (fmt != DPO__ADMM_CKPT_FORMAT)
    return dpo_err(DPO_EFORMAT, "%s: not a dpopt admm checkpoint of this version", path);
  if (ml <= 0 || ml >= (int64_t)sizeof m || (rc = dpo_ckpt_get_bytes(c, "admm.method", m, ml)) ||
      strcmp(m, method))
    return rc ? rc : dpo_err(DPO_EFORMAT, "%s: written by another method than %s", path, method);
  if ((rc = dpo_ckpt_get_i64(c, "admm.counts", iv, 4))) return rc;
  if (iv[3] != ranks)
    return dpo_err(DPO_EINVAL, "%s was written by %lld ranks; resume it on as many (one party "
                   "per rank, and the reduction order makes the result)", path, (long long)iv[3]);
  return DPO_OK;
}

int dpo__admm_ckpt_load(const char *path, const char *method, int ranks, int32_t d, int32_t p,
                        dpo_dpadmm_state_t *st, FILE *trace, const dpo_ledger_t *L,
                        dpo_rng_t *rng) {
  dpo_ckpt_t *c = NULL;
  int64_t iv[4], toff = 0, lines = -1;
  unsigned char head[32];
  memset(st, 0, sizeof *st);
  int rc = dpo_ckpt_read(path, &c);
  if (!rc) rc = dpo__admm_ckpt_same(c, path, method, ranks, iv);
  if (!rc && !((rc = dpo_ckpt_get_double(c, "admm.theta", &st->theta)) ||
               (rc = dpo_ckpt_get_double(c, "admm.sigma", &st->sigma)) ||
               (rc = dpo_ckpt_get_int(c, "admm.trace_offset", &toff)) ||
               (rc = dpo_ckpt_get_int(c, "admm.ledger_lines", &lines)) ||
               (rc = dpo_ckpt_get_bytes(c, "admm.ledger_chain", head, sizeof head)) ||
               (rc = dpo_ckpt_get_rng(c, "admm.", NULL, rng)))) {
    double **v[7] = {&st->x, &st->xh, &st->xp, &st->u, &st->uh, &st->up, &st->y};
    static const char *const k[7] = {"admm.x", "admm.xh", "admm.xp", "admm.u", "admm.uh",
                                     "admm.up", "admm.y"};
    for (int i = 0; i < 7 && !rc; i++) {
      int32_t n = i < 3 ? d : p;
      if (!(*v[i] = malloc((size_t)(n ? n : 1) * sizeof **v[i])))
        rc = dpo_err(DPO_ENOMEM, "out of memory");
      else if (dpo_ckpt_len(c, k[i]) != n)
        rc = dpo_err(DPO_EFORMAT, "%s: %s has another dimension than the run's (%d)", path, k[i],
                     (int)n);
      else rc = dpo_ckpt_get_f64(c, k[i], *v[i], n);
    }
  }
  st->it = iv[0], st->restarts = iv[1], st->releases = iv[2], st->d = d, st->p = p;
  /* the journal reaches the checkpoint's line with its tag (more charges stay spent) */
  if (!rc && L && lines >= 0) rc = dpo_ledger_verify_position(L, "checkpoint", lines, head);
  /* the trace goes on from its length at the checkpoint: rows written after it are redone */
  if (!rc && trace) {
    long end;
    if (fflush(trace) != 0 || fseek(trace, 0, SEEK_END) != 0 || (end = ftell(trace)) < toff)
      rc = dpo_err(DPO_EFORMAT, "%s: the trace is shorter than at the checkpoint (%lld bytes)",
                   path, (long long)toff);
    else if (ftruncate(fileno(trace), (off_t)toff) != 0 || fseek(trace, 0, SEEK_END) != 0)
      rc = dpo_err(DPO_EIO, "%s: the trace cannot be cut back: %s", path, strerror(errno));
  }
  dpo_ckpt_destroy(c);
  if (rc) dpo__admm_state_free(st);
  return rc;
}
