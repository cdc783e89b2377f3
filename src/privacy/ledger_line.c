/* One journal line read back, and a keyed seal over a value a run released (privacy.h): what a
 * resumed run needs to take a release it made before its checkpoint (the noisy row count) from
 * the checkpoint instead of making it again.  And when the journal's lines are fsynced
 * (dpo_ledger_set_sync, dpo_ledger_sync; ledger.c's append writes each line). */
#include "ledger_int.h"

#include "dpopt/status.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dpo__journalled(const dpo_ledger_t *L, const char *fn) {
  if (!L || L->rank != 0 || L->fd < 0)
    return dpo_err(DPO_EINVAL, "%s: no journal (rank 0 of a journalled ledger only)", fn);
  return DPO_OK;
}

int dpo_ledger_line_charge(const dpo_ledger_t *L, int64_t line, dpo_charge_t *c,
                           unsigned char tag[32]) {
  int st = dpo__journalled(L, "ledger_line_charge");
  if (st) return st;
  if (!c || !tag) return dpo_err(DPO_EINVAL, "ledger_line_charge: NULL argument");
  if (line < 2 || line > L->lines)
    return dpo_err(DPO_EFORMAT, "%s:%lld: missing: the journal has %lld complete lines", L->path,
                   (long long)line, (long long)L->lines);
  char *buf = NULL;
  size_t len = 0, pos = 0, bl = 0;
  if ((st = dpo__read_all(L->fd, L->path, &buf, &len))) return st;
  /* the lines were verified when the ledger opened (or written by it) */
  for (int64_t i = 1; i < line && pos < len; i++) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    pos = nl ? (size_t)(nl - buf) + 1 : len;
  }
  const char *nl = pos < len ? memchr(buf + pos, '\n', len - pos) : NULL;
  json_object *o = NULL;
  json_tokener *tok = json_tokener_new();
  size_t n = nl ? (size_t)(nl - buf) - pos : 0;
  if (tok && nl && dpo__chain_split(buf + pos, n, &bl, tag)) {
    o = json_tokener_parse_ex(tok, buf + pos, (int)n);
    if (o && json_tokener_get_error(tok) != json_tokener_success) {
      json_object_put(o);
      o = NULL;
    }
  }
  json_tokener_free(tok);
  double se, sd;
  if (!o) st = dpo_err(DPO_EFORMAT, "%s:%lld: not a charge line", L->path, (long long)line);
  else st = dpo__charge_parse(L->path, line, o, c, &se, &sd);
  json_object_put(o);
  free(buf);
  return st;
}

int dpo_ledger_seal(const dpo_ledger_t *L, const char *text, unsigned char tag[32]) {
  int st = dpo__journalled(L, "ledger_seal");
  if (st) return st;
  if (!text || !tag) return dpo_err(DPO_EINVAL, "ledger_seal: NULL argument");
  /* the chain's own hash from the header's nonce: no journal line begins with "dpopt seal",
   * so a seal is never a line's tag, and the nonce ties it to this journal */
  char *m = malloc(strlen(text) + 16);
  if (!m) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  size_t n = (size_t)sprintf(m, "dpopt seal: %s", text);
  dpo__chain_tag(L->key, L->nonce, m, n, tag);
  free(m);
  return DPO_OK;
}

static int dpo__rank0_only(const dpo_ledger_t *L, const char *fn) {
  if (!L) return dpo_err(DPO_EINVAL, "%s: NULL ledger", fn);
  if (L->rank != 0) return dpo_err(DPO_EINVAL, "%s: the ledger lives on rank 0 only", fn);
  return DPO_OK;
}

int dpo_ledger_set_sync(dpo_ledger_t *L, int each, int *deferring) {
  int st = dpo__rank0_only(L, "ledger_set_sync");
  if (deferring) *deferring = 0;
  if (st) return st;
  if (each && (st = dpo_ledger_sync(L))) return st; /* what was deferred, durable now */
  L->defer = !each && L->fd >= 0 && !L->on_append;
  if (deferring) *deferring = L->defer;
  return DPO_OK;
}

int dpo_ledger_sync(dpo_ledger_t *L) {
  int st = dpo__rank0_only(L, "ledger_sync");
  if (st || L->fd < 0 || !L->dirty) return st;
  if (L->failed) return dpo_err(DPO_EIO, "ledger: the journal failed earlier: nothing synced");
  if (fsync(L->fd) != 0) {
    L->failed = 1; /* its lines' durability is unknown: charge nothing more */
    return dpo_err(DPO_EIO, "ledger: journal fsync failed: %s", strerror(errno));
  }
  L->dirty = 0;
  return DPO_OK;
}
