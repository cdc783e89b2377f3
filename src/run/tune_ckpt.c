/* dpopt tune stops and resumes (doc/design.md, "Private hyperparameter selection").
 *
 * The selection's analysis (Papernot & Steinke 2022 for the geometric search, parallel
 * composition and report-noisy-max for the split) covers ONE sample of the whole process, so a
 * resume continues that sample and never draws a used part of it again:
 *  - every finished repetition (geometric) or candidate (split) is journalled (an event line
 *    of the tune's keyed journal, dpo__tune_finished) before its score is used; a checkpoint
 *    records the journal's position, and a resume whose journal holds a line past it (a
 *    repetition that finished after the checkpoint, its score maybe seen) is refused: running
 *    it again would reroll a candidate under the one charge;
 *  - the checkpoint (DIR/checkpoint, owner-only, sealed with the journal key as
 *    dpo_ledger_seal seals a noisy count) holds the state: the repetitions done, the candidate
 *    already drawn for the next one, the best noisy score and its model (geometric), the noisy
 *    counts of the finished candidates and the partition's secret key (split), the seeded
 *    streams (a secure stream's key is never written: a resumed private tune draws what is
 *    still to come afresh, which has the same law: the picks and noises are independent and
 *    the stop, with probability 1/mean after each repetition, is memoryless);
 *  - a repetition or candidate stopped mid-training restarts from scratch: nothing of it was
 *    released or used (its score is computed only once it finished), and its charge is part of
 *    the tune's one up-front charge, which the resume does not make again.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dpopt/optim.h"
#include "dpopt/privacy.h"
#include "dpopt/run.h"
#include "dpopt/status.h"
#include "run/tune_impl.h"

int dpo__tune_ckpt_settings(dpo__tune_t *t) {
  int rc;
  if ((rc = dpo_config_get_int(t->cfg, "run.checkpoint_every", 0, &t->ckpt_every)) ||
      (rc = dpo_config_get_int(t->cfg, "run.stop_after", 0, &t->stop_after)))
    return rc;
  if (t->ckpt_every < 0 || t->stop_after < 0)
    return dpo_err(DPO_EINVAL, "run.checkpoint_every and run.stop_after must be >= 0");
  return DPO_OK;
}

int dpo__tune_finished(const dpo__tune_t *t, dpo_ledger_t *L, int64_t i) {
  int rc = DPO_OK;
  if (t->rank == 0)
    rc = dpo_ledger_party_event(L, t->split > 0 ? "tune: candidate finished"
                                                : "tune: repetition finished", -1, i);
  return dpo_agree(t->comm, rc);
}

static void hex(char *out, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

/* The text the seal covers: every field a resume reads, in one canonical line. */
static int seal_text(const dpo__tune_t *t, const dpo__tune_state_t *s, int64_t lines,
                     const unsigned char head[32], const dpo_ckpt_t *rngc, char **out) {
  unsigned char mh[32];
  char mhex[65], hhex[65], rhex[65] = "-";
  int64_t seeded = -1, pos[3] = {0, 0, 0};
  unsigned char rk[32];
  crypto_generichash(mh, sizeof mh, (const unsigned char *)(s->model ? s->model : ""),
                     s->nmodel, NULL, 0);
  hex(mhex, mh, 32);
  hex(hhex, head, 32);
  if (!dpo_ckpt_get_int(rngc, "tune.rng_seeded", &seeded) && seeded == 1 &&
      !dpo_ckpt_get_bytes(rngc, "tune.rng_key", rk, 32) &&
      !dpo_ckpt_get_i64(rngc, "tune.rng_pos", pos, 3))
    hex(rhex, rk, 32);
  size_t cap = 1024 + 26 * (size_t)DPO__TUNE_MAXC;
  char *b = malloc(cap);
  if (!b) return dpo_err(DPO_ENOMEM, "out of memory");
  int n = snprintf(b, cap, "dpopt tune checkpoint: search %s done %lld next %d stop %d best %d "
                   "score %a key %016llx journal %lld %s model %zu %s rng %lld %s %lld %lld "
                   "%lld noisy", t->split > 0 ? "split" : "geometric", (long long)s->done,
                   s->next, s->stop, s->best, s->score,
                   (unsigned long long)(t->split > 0 ? t->key : 0),
                   (long long)lines, hhex, s->nmodel, mhex, (long long)seeded, rhex,
                   (long long)pos[0], (long long)pos[1], (long long)pos[2]);
  for (int64_t i = 0; i < s->done && i < DPO__TUNE_MAXC && t->split > 0; i++)
    n += snprintf(b + n, cap - (size_t)n, " %a", s->noisy[i]);
  *out = b;
  return DPO_OK;
}

static void ckpt_path(const dpo__tune_t *t, char *p, size_t cap) {
  snprintf(p, cap, "%s/checkpoint", t->dir);
}

/* Rank 0: DIR/checkpoint of state s at the journal's current position. */
static int save(const dpo__tune_t *t, dpo_ledger_t *L, const dpo_rng_t *rng,
                const dpo__tune_state_t *s) {
  dpo_ckpt_t *c = NULL;
  int64_t lines = -1;
  unsigned char head[32], seal[32];
  char p[600], *txt = NULL;
  int64_t st[5] = {s->done, s->next, s->stop, s->best, t->split > 0};
  uint64_t key = t->key;
  int rc = dpo_ckpt_create(&c);
  if (!rc) rc = dpo_ledger_position(L, &lines, head);
  if (!rc) rc = dpo_ckpt_put_i64(c, "tune.state", st, 5);
  if (!rc) rc = dpo_ckpt_put_double(c, "tune.score", s->score);
  if (!rc && t->split > 0) rc = dpo_ckpt_put_f64(c, "tune.noisy", s->noisy, s->done);
  if (!rc && t->split > 0) rc = dpo_ckpt_put_bytes(c, "tune.key", &key, sizeof key);
  if (!rc) rc = dpo_ckpt_put_bytes(c, "tune.model", s->model, (int64_t)s->nmodel);
  if (!rc) rc = dpo_ckpt_put_int(c, "tune.journal_lines", lines);
  if (!rc) rc = dpo_ckpt_put_bytes(c, "tune.journal_head", head, 32);
  if (!rc) rc = dpo_ckpt_put_rng(c, "tune.", rng);
  if (!rc) rc = seal_text(t, s, lines, head, c, &txt);
  if (!rc) rc = dpo_ledger_seal(L, txt, seal);
  if (!rc) rc = dpo_ckpt_put_bytes(c, "tune.seal", seal, 32);
  ckpt_path(t, p, sizeof p);
  if (!rc) rc = dpo_ckpt_write(c, p); /* owner-only, atomic */
  free(txt);
  dpo_ckpt_destroy(c);
  return rc;
}

int dpo__tune_interrupted(const dpo__tune_t *t, dpo_ledger_t *L, const dpo_rng_t *rng,
                          const dpo__tune_state_t *s) {
  /* a one-run audit of a tune does not resume (dpo__tune_audit1_settings): no checkpoint
   * that dpopt tune --resume would take and then refuse */
  if (t->audit1)
    return dpo_err(DPO_EINTR, "interrupted: no checkpoint (the charges journalled stay spent)");
  int rc = t->rank == 0 && !t->no_ckpt ? save(t, L, rng, s) : DPO_OK;
  if ((rc = dpo_agree(t->comm, rc))) return rc;
  if (t->no_ckpt)
    return dpo_err(DPO_EINTR, "interrupted: no checkpoint (the parties' budget stores keep "
                   "the tune's reservation spent whole; a tune with party stores does not "
                   "resume)");
  return dpo_err(DPO_EINTR, "interrupted between %s: checkpoint written, continue with dpopt "
                 "tune --resume %s", t->split > 0 ? "candidates" : "repetitions", t->dir);
}

int dpo__tune_pause(const dpo__tune_t *t, dpo_ledger_t *L, const dpo_rng_t *rng,
                    const dpo__tune_state_t *s) {
  volatile sig_atomic_t *f = dpo_run_signal_flag();
  int sig = f && *f, intr;
  /* every rank stops at the same boundary (mpirun forwards a signal to each rank, not at
   * the same instant) */
  MPI_Allreduce(&sig, &intr, 1, MPI_INT, MPI_MAX, t->comm);
  intr = intr || (t->stop_after > 0 && s->done >= t->stop_after);
  if (intr) return dpo__tune_interrupted(t, L, rng, s);
  if (t->ckpt_every > 0 && !t->no_ckpt && s->done > t->resumed_at &&
      s->done % t->ckpt_every == 0)
    return dpo_agree(t->comm, t->rank == 0 ? save(t, L, rng, s) : DPO_OK);
  return DPO_OK;
}

int dpo__tune_resume_dir(const char *dir) {
  char p[1100];
  struct stat st;
  snprintf(p, sizeof p, "%s/summary.json", dir);
  /* an empty summary.json is the claim the new directory was made with (dpo_mkdir_new) */
  if (stat(p, &st) == 0 && st.st_size > 0)
    return dpo_err(DPO_EINVAL, "--resume %s: the tune finished (%s exists); a new tune is a "
                   "new charge", dir, p);
  snprintf(p, sizeof p, "%s/checkpoint", dir);
  if (lstat(p, &st) != 0)
    return dpo_err(DPO_EINVAL, "--resume %s: no checkpoint (%s: %s): the tune stopped before "
                   "writing one (--checkpoint-every N writes one every N finished "
                   "repetitions; SIGTERM and run.stop_after write one), so it cannot continue; "
                   "its charge stays spent", dir, p, strerror(errno));
  if (!S_ISREG(st.st_mode) || (st.st_mode & 077))
    return dpo_err(DPO_EINVAL, "--resume %s: %s is not an owner-only regular file (mode %o): "
                   "refusing a checkpoint others could have written", dir, p,
                   (unsigned)(st.st_mode & 0777));
  return DPO_OK;
}

/* Rank 0: read and check DIR/checkpoint against the reopened journal L. */
static int load(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, dpo__tune_state_t *s) {
  dpo_ckpt_t *c = NULL;
  char p[600], *txt = NULL;
  int64_t st[5], lines = -1, now = -1;
  unsigned char head[32], nowh[32], seal[32], want[32];
  uint64_t key = 0;
  ckpt_path(t, p, sizeof p);
  int rc = dpo__tune_resume_dir(t->dir);
  if (!rc) rc = dpo_ckpt_read(p, &c);
  if (!rc && ((rc = dpo_ckpt_get_i64(c, "tune.state", st, 5)) ||
              (rc = dpo_ckpt_get_double(c, "tune.score", &s->score)) ||
              (rc = dpo_ckpt_get_int(c, "tune.journal_lines", &lines)) ||
              (rc = dpo_ckpt_get_bytes(c, "tune.journal_head", head, 32)) ||
              (rc = dpo_ckpt_get_bytes(c, "tune.seal", seal, 32))))
    rc = dpo_err(DPO_EFORMAT, "%s: not a checkpoint of dpopt tune", p);
  if (!rc && (st[4] != (t->split > 0) || st[0] < 0 || (t->split > 0 && st[0] > t->nc) ||
              st[1] < -1 || st[1] >= t->nc || st[3] < -1 || st[3] >= t->nc))
    rc = dpo_err(DPO_EFORMAT, "%s: a checkpoint of another search or grid", p);
  if (!rc) {
    s->done = st[0], s->next = (int)st[1], s->stop = (int)st[2], s->best = (int)st[3];
    int64_t nm = dpo_ckpt_len(c, "tune.model");
    s->nmodel = nm > 0 ? (size_t)nm : 0;
    if (nm > 0 && !(s->model = malloc((size_t)nm))) rc = dpo_err(DPO_ENOMEM, "out of memory");
    if (!rc && nm > 0) rc = dpo_ckpt_get_bytes(c, "tune.model", s->model, nm);
    if (!rc && t->split > 0 && s->done > 0)
      rc = dpo_ckpt_get_f64(c, "tune.noisy", s->noisy, s->done);
    if (!rc && t->split > 0 && !(rc = dpo_ckpt_get_bytes(c, "tune.key", &key, sizeof key)))
      t->key = key;
  }
  /* the seal first: nothing of an edited checkpoint is used */
  if (!rc) rc = seal_text(t, s, lines, head, c, &txt);
  if (!rc) rc = dpo_ledger_seal(L, txt, want);
  if (!rc && sodium_memcmp(want, seal, 32) != 0)
    rc = dpo_err(DPO_EFORMAT, "%s does not carry the seal of this tune's journal key: edited, "
                 "or from another tune; refusing to resume", p);
  if (!rc) rc = dpo_ledger_verify_position(L, "the checkpoint", lines, head);
  if (!rc) rc = dpo_ledger_position(L, &now, nowh);
  if (!rc && now != lines)
    rc = dpo_err(DPO_EFORMAT, "%s/ledger.jsonl holds %lld line(s) after the checkpoint's: a %s "
                 "finished (journalled) after the checkpoint was written, and resuming would draw "
                 "it again under the same charge; refusing to resume", t->dir,
                 (long long)(now - lines), t->split > 0 ? "candidate" : "repetition");
  if (!rc) rc = dpo_ckpt_get_rng(c, "tune.", NULL, rng);
  free(txt);
  dpo_ckpt_destroy(c);
  return rc;
}

int dpo__tune_resume(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, dpo__tune_state_t *s) {
  int rc = t->rank == 0 ? load(t, L, rng, s) : DPO_OK;
  if ((rc = dpo_agree(t->comm, rc))) return rc;
  int64_t v[4] = {s->done, s->next, s->stop, s->best};
  MPI_Bcast(v, 4, MPI_INT64_T, 0, t->comm);
  MPI_Bcast(&t->key, 1, MPI_UINT64_T, 0, t->comm);
  s->done = v[0], s->next = (int)v[1], s->stop = (int)v[2], s->best = (int)v[3];
  t->resumed_at = s->done;
  return DPO_OK;
}

int dpo__tune_ckpt_remove(const dpo__tune_t *t) {
  char p[600];
  ckpt_path(t, p, sizeof p);
  if (remove(p) != 0 && errno != ENOENT)
    return dpo_err(DPO_EIO, "%s: cannot remove: %s", p, strerror(errno));
  return DPO_OK;
}
