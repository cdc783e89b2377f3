/* Checkpoints of consensus ADMM (dpopt admm --method consensus, private or not, with
 * --checkpoint-every, run.stop_after, SIGTERM / SIGINT; --resume).  The state is each rank's
 * own (x_i, u_i, rho, s_prev, the L-BFGS memory, a seeded noise stream's position; Boyd et al.
 * 2011 Sec. 7.1), so every rank saves its part: rank K > 0 in RUN/checkpoint.rankK.itN, then
 * rank 0 in RUN/checkpoint with the run's header (method, ranks, iteration, the journal's
 * position), which commits the set: a part is only read for the iteration rank 0's file names,
 * so a crash between the writes leaves the previous set whole.  Under central trust (the
 * ranks are the operator's) the parts sit in the run directory; under privacy.trust = local
 * rank K's part (its un-noised x_i, u_i) sits in its party's own directory (party.K.out, with
 * its journal; io->dir is that rank's), never in the coordinator's.  An unseeded stream's key
 * is a secret and is never written (a resumed run draws fresh noise from a new OS key, and
 * charges it). */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admm/admm_arun.h"
#include "admm/admm_impl.h"
#include "dpopt/optim.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

#define DPO__CONS_CKPT_FORMAT 1

int64_t dpo__admm_lbfgs_packed_len(int32_t d, int mem) {
  return 6 + (int64_t)mem * (2 * (int64_t)d + 1) + 2 * (int64_t)d;
}

/* [k, head, cached, rho, fc, evals | S | Y | rh | xc | gc]; al, g, p, xn, gn are scratch */
void dpo__admm_lbfgs_pack(const dpo__admm_lbfgs_t *w, double *o) {
  const size_t md = (size_t)w->mem * (size_t)w->d, D = (size_t)w->d;
  o[0] = w->k, o[1] = w->head, o[2] = w->cached, o[3] = w->rho, o[4] = w->fc;
  o[5] = (double)w->evals;
  o += 6;
  memcpy(o, w->S, md * sizeof *o), o += md;
  memcpy(o, w->Y, md * sizeof *o), o += md;
  memcpy(o, w->rh, (size_t)w->mem * sizeof *o), o += w->mem;
  memcpy(o, w->xc, D * sizeof *o), o += D;
  memcpy(o, w->gc, D * sizeof *o);
}

void dpo__admm_lbfgs_unpack(dpo__admm_lbfgs_t *w, const double *in) {
  const size_t md = (size_t)w->mem * (size_t)w->d, D = (size_t)w->d;
  w->k = (int)in[0], w->head = (int)in[1], w->cached = (int)in[2], w->rho = in[3];
  w->fc = in[4], w->evals = (int64_t)in[5];
  in += 6;
  memcpy(w->S, in, md * sizeof *in), in += md;
  memcpy(w->Y, in, md * sizeof *in), in += md;
  memcpy(w->rh, in, (size_t)w->mem * sizeof *in), in += w->mem;
  memcpy(w->xc, in, D * sizeof *in), in += D;
  memcpy(w->gc, in, D * sizeof *in);
}

static void dpo__cons_part_path(const dpo__cons_io_t *io, int rank, int64_t it, char *p,
                                size_t n) {
  if (rank == 0) snprintf(p, n, "%s/checkpoint", io->dir);
  else snprintf(p, n, "%s/checkpoint.rank%d.it%lld", io->dir, rank, (long long)it);
}

/* this rank's part into c */
static int dpo__cons_put(dpo_ckpt_t *c, const dpo__cons_io_t *io, const dpo__cons_state_t *st) {
  const dpo__cons_party_t *p = st->p;
  const dpo_admm_info_t *inf = st->inf;
  int64_t iv[6] = {st->it, io->rank, io->size, inf->rho_changes, p->factorizations,
                   inf->inner_iters};
  double dv[6] = {p->rho, p->s_prev, inf->r_norm, inf->s_norm, inf->eps_pri, inf->eps_dual};
  int rc;
  if ((rc = dpo_ckpt_put_int(c, "cons.format", DPO__CONS_CKPT_FORMAT)) ||
      (rc = dpo_ckpt_put_i64(c, "cons.counts", iv, 6)) ||
      (rc = dpo_ckpt_put_f64(c, "cons.scalars", dv, 6)) ||
      (rc = dpo_ckpt_put_f64(c, "cons.x", p->x, p->d)) ||
      (rc = dpo_ckpt_put_f64(c, "cons.u", p->u, p->d)) ||
      (rc = dpo_ckpt_put_f64(c, "cons.z", st->z, p->d)) ||
      (rc = dpo_ckpt_put_rng(c, "cons.", io->rng)))
    return rc;
  if (p->have_ws) {
    int64_t n = dpo__admm_lbfgs_packed_len(p->d, p->ws.mem);
    double *w = malloc((size_t)n * sizeof *w);
    if (!w) return dpo_err(DPO_ENOMEM, "out of memory");
    dpo__admm_lbfgs_pack(&p->ws, w);
    rc = dpo_ckpt_put_f64(c, "cons.lbfgs", w, n);
    free(w);
    if (rc) return rc;
  }
  return rc;
}

static int dpo__cons_write(const dpo__cons_io_t *io, const dpo__cons_state_t *st) {
  char path[1200];
  dpo_ckpt_t *c = NULL;
  int64_t lines = 0;
  unsigned char head[32] = {0};
  int rc = dpo_ckpt_create(&c);
  if (!rc) rc = dpo__cons_put(c, io, st);
  if (!rc && io->rank == 0) { /* the header: what the parts must match */
    if (io->L) rc = dpo_ledger_position(io->L, &lines, head);
    if (!rc && !(rc = dpo_ckpt_put_bytes(c, "admm.method", "consensus", 9)) &&
        !(rc = dpo_ckpt_put_int(c, "admm.ledger_lines", io->L ? lines : -1)))
      rc = dpo_ckpt_put_bytes(c, "admm.ledger_chain", head, sizeof head);
  }
  dpo__cons_part_path(io, io->rank, st->it, path, sizeof path);
  if (!rc) rc = dpo_ckpt_write(c, path);
  dpo_ckpt_destroy(c);
  return rc;
}

int dpo__cons_save(void *arg, const dpo__cons_state_t *st) {
  dpo__cons_io_t *io = arg;
  char old[1200];
  int rc = io->rank == 0 ? DPO_OK : dpo__cons_write(io, st);
  if ((rc = dpo_agree(io->comm, rc))) return rc; /* every part written ... */
  if (io->rank == 0) rc = dpo__cons_write(io, st);  /* ... before rank 0's commits them */
  if ((rc = dpo_agree(io->comm, rc))) return rc;
  if (io->rank != 0 && io->last >= 0 && io->last != st->it) {
    dpo__cons_part_path(io, io->rank, io->last, old, sizeof old);
    unlink(old); /* superseded */
  }
  io->last = st->it;
  return DPO_OK;
}

int dpo__cons_resume_begin(dpo__cons_io_t *io) {
  dpo_ckpt_t *c = NULL;
  char path[1200], m[16] = "";
  int64_t iv[6] = {0}, lines = -1, fmt = 0;
  unsigned char head[32];
  int rc = DPO_OK;
  if (io->rank == 0) {
    dpo__cons_part_path(io, 0, 0, path, sizeof path);
    rc = dpo_ckpt_read(path, &c);
    if (!rc && (dpo_ckpt_len(c, "cons.format") != 1 || dpo_ckpt_get_int(c, "cons.format", &fmt) ||
                fmt != DPO__CONS_CKPT_FORMAT || dpo_ckpt_len(c, "admm.method") != 9 ||
                dpo_ckpt_get_bytes(c, "admm.method", m, 9) || strcmp(m, "consensus")))
      rc = dpo_err(DPO_EFORMAT, "%s: not a consensus ADMM checkpoint of this version", path);
    if (!rc && !(rc = dpo_ckpt_get_i64(c, "cons.counts", iv, 6)) && iv[2] != io->size)
      rc = dpo_err(DPO_EINVAL, "%s was written by %lld ranks and this resume has %d: "
                   "consensus ADMM keeps each rank's own x_i and u_i (its part of the "
                   "checkpoint); resume it on %lld ranks", path, (long long)iv[2], io->size,
                   (long long)iv[2]);
    if (!rc && !(rc = dpo_ckpt_get_int(c, "admm.ledger_lines", &lines)) &&
        !(rc = dpo_ckpt_get_bytes(c, "admm.ledger_chain", head, sizeof head)) && io->L &&
        lines >= 0) /* the journal reaches the checkpoint's line (more charges stay spent) */
      rc = dpo_ledger_verify_position(io->L, "checkpoint", lines, head);
    int64_t now = 0;
    unsigned char tag[32];
    if (!rc && io->L && lines >= 0 && !(rc = dpo_ledger_position(io->L, &now, tag)) && now > lines)
      io->after = dpo_ledger_count(io->L);
    dpo_ckpt_destroy(c);
  }
  if ((rc = dpo_agree(io->comm, rc))) return rc;
  MPI_Bcast(&iv[0], 1, MPI_INT64_T, 0, io->comm);
  io->resume_it = iv[0];
  return DPO_OK;
}

/* this rank's part of the checkpoint io->resume_it into st (not collective) */
int dpo__cons_load(void *arg, dpo__cons_state_t *st) {
  dpo__cons_io_t *io = arg;
  dpo__cons_party_t *p = st->p;
  dpo_admm_info_t *inf = st->inf;
  dpo_ckpt_t *c = NULL;
  char path[1200];
  int64_t iv[6];
  double dv[6];
  dpo__cons_part_path(io, io->rank, io->resume_it, path, sizeof path);
  if (io->rank != 0 && access(path, R_OK) != 0)
    return dpo_err(DPO_EFORMAT, "%s: rank %d's part of the checkpoint of iteration %lld is "
                   "missing: resume with the run directory every rank wrote", path, io->rank,
                   (long long)io->resume_it);
  int rc = dpo_ckpt_read(path, &c);
  if (!rc && !(rc = dpo_ckpt_get_i64(c, "cons.counts", iv, 6)) &&
      (iv[0] != io->resume_it || iv[1] != io->rank || iv[2] != io->size))
    rc = dpo_err(DPO_EFORMAT, "%s: rank %lld's part of %lld ranks after iteration %lld, not "
                 "rank %d's after %lld", path, (long long)iv[1], (long long)iv[2],
                 (long long)iv[0], io->rank, (long long)io->resume_it);
  if (!rc && !((rc = dpo_ckpt_get_f64(c, "cons.scalars", dv, 6)) ||
               (rc = dpo_ckpt_get_f64(c, "cons.x", p->x, p->d)) ||
               (rc = dpo_ckpt_get_f64(c, "cons.u", p->u, p->d)) ||
               (rc = dpo_ckpt_get_f64(c, "cons.z", st->z, p->d)) ||
               (rc = dpo_ckpt_get_rng(c, "cons.", NULL, io->rng)))) {
    st->it = iv[0];
    inf->rho_changes = iv[3], inf->inner_iters = iv[5];
    inf->r_norm = dv[2], inf->s_norm = dv[3], inf->eps_pri = dv[4], inf->eps_dual = dv[5];
    p->s_prev = dv[1];
    if (dv[0] != p->rho) { /* residual balancing moved rho: the exact x-update refactors */
      p->rho = dv[0];
      if (p->xk == DPO_ADMM_X_EXACT) rc = dpo__admm_chol(p->H, p->rho, p->d, p->Lf);
    }
    p->factorizations = iv[4];
  }
  if (!rc && p->have_ws) {
    int64_t n = dpo__admm_lbfgs_packed_len(p->d, p->ws.mem);
    double *w = malloc((size_t)n * sizeof *w);
    if (!w) rc = dpo_err(DPO_ENOMEM, "out of memory");
    else if (!(rc = dpo_ckpt_get_f64(c, "cons.lbfgs", w, n))) dpo__admm_lbfgs_unpack(&p->ws, w);
    free(w);
  }
  dpo_ckpt_destroy(c);
  if (!rc) io->last = io->resume_it;
  return rc;
}

void dpo__cons_ckpt_remove(const char *dir, int rank) {
  char pat[1200];
  glob_t g;
  if (rank == 0) return; /* RUN/checkpoint is the driver's to remove */
  snprintf(pat, sizeof pat, "%s/checkpoint.rank%d.it*", dir, rank);
  if (glob(pat, GLOB_NOSORT, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
  globfree(&g);
}
