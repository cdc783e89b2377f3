/* Checkpoint files: a small typed key/value store (see include/dpopt/optim.h).
 *
 * File layout (native byte order; a checkpoint is read back on the machine type that wrote
 * it):
 *   "DPOCKPT1"                      8-byte magic
 *   u64 nrec
 *   nrec x { u32 keylen, key bytes, u8 type (1 = f64, 2 = i64, 3 = bytes), u64 count, data }
 *   u64 FNV-1a hash of every byte before it
 * Doubles are stored as their bytes, so they read back bit-identically.  The whole file is
 * written by dpo_write_atomic_private (owner only: it holds iterates not yet released; temp
 * file, fsync, rename, fsync of the directory): a crash leaves either the previous checkpoint
 * or the new one, never a mixture.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/optim.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

enum { DPO__CK_F64 = 1, DPO__CK_I64 = 2, DPO__CK_BYTES = 3 };

typedef struct {
  char *key;
  int type;
  int64_t n;   /* elements */
  void *data;  /* n * element size bytes */
} dpo__ckrec_t;

struct dpo_ckpt {
  dpo__ckrec_t *rec;
  int64_t nrec, cap;
  char prefix[64];
};

static const char dpo__ck_magic[8] = {'D', 'P', 'O', 'C', 'K', 'P', 'T', '1'};

static size_t dpo__ck_esize(int type) { return type == DPO__CK_BYTES ? 1 : 8; }

static uint64_t dpo__fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    h ^= c[i];
    h *= 1099511628211ULL;
  }
  return h;
}

int dpo_ckpt_create(dpo_ckpt_t **c) {
  if (!c) return dpo_err(DPO_EINVAL, "dpo_ckpt_create: NULL output");
  *c = calloc(1, sizeof **c);
  return *c ? DPO_OK : dpo_err(DPO_ENOMEM, "checkpoint: out of memory");
}

void dpo_ckpt_destroy(dpo_ckpt_t *c) {
  if (!c) return;
  for (int64_t i = 0; i < c->nrec; i++) {
    free(c->rec[i].key);
    free(c->rec[i].data);
  }
  free(c->rec);
  free(c);
}

void dpo_ckpt_set_prefix(dpo_ckpt_t *c, const char *prefix) {
  if (c) snprintf(c->prefix, sizeof c->prefix, "%s", prefix ? prefix : "");
}

static dpo__ckrec_t *dpo__ck_find(const dpo_ckpt_t *c, const char *key) {
  char full[256];
  snprintf(full, sizeof full, "%s%s", c->prefix, key);
  for (int64_t i = 0; i < c->nrec; i++)
    if (strcmp(c->rec[i].key, full) == 0) return &c->rec[i];
  return NULL;
}

static int dpo__ck_put(dpo_ckpt_t *c, const char *key, int type, const void *v, int64_t n) {
  if (!c || !key || n < 0 || (n > 0 && !v))
    return dpo_err(DPO_EINVAL, "checkpoint: bad arguments for key '%s'", key ? key : "(null)");
  char full[256];
  if (snprintf(full, sizeof full, "%s%s", c->prefix, key) >= (int)sizeof full)
    return dpo_err(DPO_EINVAL, "checkpoint: key '%s' too long", key);
  if (dpo__ck_find(c, key))
    return dpo_err(DPO_EINVAL, "checkpoint: key '%s' written twice", full);
  if (c->nrec == c->cap) {
    int64_t nc = c->cap ? 2 * c->cap : 16;
    dpo__ckrec_t *r = realloc(c->rec, (size_t)nc * sizeof *r);
    if (!r) return dpo_err(DPO_ENOMEM, "checkpoint: out of memory");
    c->rec = r;
    c->cap = nc;
  }
  size_t nb = (size_t)n * dpo__ck_esize(type);
  dpo__ckrec_t *r = &c->rec[c->nrec];
  r->key = strdup(full);
  r->data = malloc(nb ? nb : 1);
  if (!r->key || !r->data) {
    free(r->key);
    free(r->data);
    return dpo_err(DPO_ENOMEM, "checkpoint: out of memory for key '%s'", full);
  }
  if (nb) memcpy(r->data, v, nb);
  r->type = type;
  r->n = n;
  c->nrec++;
  return DPO_OK;
}

int dpo_ckpt_put_f64(dpo_ckpt_t *c, const char *key, const double *v, int64_t n) {
  return dpo__ck_put(c, key, DPO__CK_F64, v, n);
}
int dpo_ckpt_put_i64(dpo_ckpt_t *c, const char *key, const int64_t *v, int64_t n) {
  return dpo__ck_put(c, key, DPO__CK_I64, v, n);
}
int dpo_ckpt_put_bytes(dpo_ckpt_t *c, const char *key, const void *v, int64_t n) {
  return dpo__ck_put(c, key, DPO__CK_BYTES, v, n);
}
int dpo_ckpt_put_int(dpo_ckpt_t *c, const char *key, int64_t v) {
  return dpo__ck_put(c, key, DPO__CK_I64, &v, 1);
}
int dpo_ckpt_put_double(dpo_ckpt_t *c, const char *key, double v) {
  return dpo__ck_put(c, key, DPO__CK_F64, &v, 1);
}

int64_t dpo_ckpt_len(const dpo_ckpt_t *c, const char *key) {
  const dpo__ckrec_t *r = c && key ? dpo__ck_find(c, key) : NULL;
  return r ? r->n : -1;
}

static int dpo__ck_get(const dpo_ckpt_t *c, const char *key, int type, void *v, int64_t n) {
  static const char *tn[] = {"?", "f64", "i64", "bytes"};
  if (!c || !key || n < 0 || (n > 0 && !v))
    return dpo_err(DPO_EINVAL, "checkpoint: bad arguments for key '%s'", key ? key : "(null)");
  const dpo__ckrec_t *r = dpo__ck_find(c, key);
  if (!r)
    return dpo_err(DPO_EFORMAT, "checkpoint: no entry '%s%s' (written by another algorithm or "
                   "version?)", c->prefix, key);
  if (r->type != type || r->n != n)
    return dpo_err(DPO_EFORMAT, "checkpoint: entry '%s' holds %lld %s, expected %lld %s", r->key,
                   (long long)r->n, tn[r->type], (long long)n, tn[type]);
  if (n) memcpy(v, r->data, (size_t)n * dpo__ck_esize(type));
  return DPO_OK;
}

int dpo_ckpt_get_f64(const dpo_ckpt_t *c, const char *key, double *v, int64_t n) {
  return dpo__ck_get(c, key, DPO__CK_F64, v, n);
}
int dpo_ckpt_get_i64(const dpo_ckpt_t *c, const char *key, int64_t *v, int64_t n) {
  return dpo__ck_get(c, key, DPO__CK_I64, v, n);
}
int dpo_ckpt_get_bytes(const dpo_ckpt_t *c, const char *key, void *v, int64_t n) {
  return dpo__ck_get(c, key, DPO__CK_BYTES, v, n);
}
int dpo_ckpt_get_int(const dpo_ckpt_t *c, const char *key, int64_t *v) {
  return dpo__ck_get(c, key, DPO__CK_I64, v, 1);
}
int dpo_ckpt_get_double(const dpo_ckpt_t *c, const char *key, double *v) {
  return dpo__ck_get(c, key, DPO__CK_F64, v, 1);
}

/* growable byte buffer for serialization */
typedef struct {
  unsigned char *p;
  size_t len, cap;
  int oom;
} dpo__ckbuf_t;

static void dpo__cb_add(dpo__ckbuf_t *b, const void *v, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + n) nc *= 2;
    unsigned char *q = realloc(b->p, nc);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = nc;
  }
  memcpy(b->p + b->len, v, n);
  b->len += n;
}

int dpo_ckpt_write(const dpo_ckpt_t *c, const char *path) {
  if (!c || !path) return dpo_err(DPO_EINVAL, "dpo_ckpt_write: NULL argument");
  dpo__ckbuf_t b = {NULL, 0, 0, 0};
  uint64_t nrec = (uint64_t)c->nrec;
  dpo__cb_add(&b, dpo__ck_magic, sizeof dpo__ck_magic);
  dpo__cb_add(&b, &nrec, sizeof nrec);
  for (int64_t i = 0; i < c->nrec; i++) {
    const dpo__ckrec_t *r = &c->rec[i];
    uint32_t kl = (uint32_t)strlen(r->key);
    unsigned char ty = (unsigned char)r->type;
    uint64_t n = (uint64_t)r->n;
    dpo__cb_add(&b, &kl, sizeof kl);
    dpo__cb_add(&b, r->key, kl);
    dpo__cb_add(&b, &ty, 1);
    dpo__cb_add(&b, &n, sizeof n);
    dpo__cb_add(&b, r->data, (size_t)r->n * dpo__ck_esize(r->type));
  }
  uint64_t h = b.oom ? 0 : dpo__fnv(14695981039346656037ULL, b.p, b.len);
  dpo__cb_add(&b, &h, sizeof h);
  int rc = b.oom ? dpo_err(DPO_ENOMEM, "checkpoint: out of memory serializing %s", path)
                 : dpo_write_atomic_private(path, b.p, b.len);
  free(b.p);
  return rc;
}

int dpo_ckpt_read(const char *path, dpo_ckpt_t **out) {
  if (!path || !out) return dpo_err(DPO_EINVAL, "dpo_ckpt_read: NULL argument");
  *out = NULL;
  int rc = DPO_OK;
  unsigned char *buf = NULL;
  dpo_ckpt_t *c = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot open checkpoint: %s", path, strerror(errno));
  long sz = -1;
  if (fseek(f, 0, SEEK_END) == 0) sz = ftell(f);
  if (sz < 0 || fseek(f, 0, SEEK_SET) != 0) {
    rc = dpo_err(DPO_EIO, "%s: cannot size the checkpoint", path);
    goto out;
  }
  buf = malloc((size_t)sz + 1);
  if (!buf) {
    rc = dpo_err(DPO_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
    rc = dpo_err(DPO_EIO, "%s: short read", path);
    goto out;
  }
  size_t len = (size_t)sz, off = 16;
  uint64_t nrec, h;
  if (len < 24 || memcmp(buf, dpo__ck_magic, 8) != 0) {
    rc = dpo_err(DPO_EFORMAT, "%s: not a dpopt checkpoint (bad magic or too short)", path);
    goto out;
  }
  memcpy(&h, buf + len - 8, 8);
  if (h != dpo__fnv(14695981039346656037ULL, buf, len - 8)) {
    rc = dpo_err(DPO_EFORMAT, "%s: checkpoint checksum mismatch (corrupt file)", path);
    goto out;
  }
  len -= 8;
  memcpy(&nrec, buf + 8, 8);
  if ((rc = dpo_ckpt_create(&c))) goto out;
  for (uint64_t i = 0; i < nrec; i++) {
    uint32_t kl;
    unsigned char ty;
    uint64_t n;
    char key[256];
    if (off + 4 > len) goto torn;
    memcpy(&kl, buf + off, 4);
    off += 4;
    if (kl == 0 || kl >= sizeof key || off + kl + 9 > len) goto torn;
    memcpy(key, buf + off, kl);
    key[kl] = '\0';
    off += kl;
    ty = buf[off++];
    memcpy(&n, buf + off, 8);
    off += 8;
    if (ty < DPO__CK_F64 || ty > DPO__CK_BYTES) goto torn;
    size_t es = dpo__ck_esize(ty);
    if (n > (len - off) / es) goto torn;
    if ((rc = dpo__ck_put(c, key, ty, buf + off, (int64_t)n))) goto out;
    off += (size_t)n * es;
  }
  if (off != len) goto torn;
  *out = c;
  c = NULL;
  goto out;
torn:
  rc = dpo_err(DPO_EFORMAT, "%s: malformed checkpoint record at byte %zu", path, off);
out:
  if (f) fclose(f);
  free(buf);
  dpo_ckpt_destroy(c);
  return rc;
}

/* The key p + name, e.g. "admm." + "rng_key". */
static const char *dpo__ck_key(char *buf, size_t n, const char *p, const char *name) {
  snprintf(buf, n, "%s%s", p ? p : "", name);
  return buf;
}

int dpo_ckpt_put_rng(dpo_ckpt_t *c, const char *p, const dpo_rng_t *rng) {
  char k[96];
  int seeded = rng ? dpo_rng_is_seeded(rng) : -1;
  int rc = dpo_ckpt_put_int(c, dpo__ck_key(k, sizeof k, p, "rng_seeded"), seeded);
  if (rc || seeded != 1) return rc; /* an OS key is a secret: never written */
  dpo_rng_state_t st;
  dpo_rng_get_state(rng, &st);
  int64_t pos[3] = {(int64_t)st.nonce, (int64_t)st.counter, (int64_t)st.pos};
  if ((rc = dpo_ckpt_put_bytes(c, dpo__ck_key(k, sizeof k, p, "rng_key"), st.key, sizeof st.key)))
    return rc;
  return dpo_ckpt_put_i64(c, dpo__ck_key(k, sizeof k, p, "rng_pos"), pos, 3);
}

int dpo_ckpt_get_rng(const dpo_ckpt_t *c, const char *p, int64_t *seeded, dpo_rng_t *rng) {
  char k[96];
  int64_t s = -1, pos[3];
  int rc = dpo_ckpt_get_int(c, dpo__ck_key(k, sizeof k, p, "rng_seeded"), &s);
  if (seeded) *seeded = s;
  if (rc || s != 1 || !rng) return rc;
  dpo_rng_state_t st;
  dpo_rng_get_state(rng, &st);
  if ((rc = dpo_ckpt_get_bytes(c, dpo__ck_key(k, sizeof k, p, "rng_key"), st.key, sizeof st.key)) ||
      (rc = dpo_ckpt_get_i64(c, dpo__ck_key(k, sizeof k, p, "rng_pos"), pos, 3)))
    return rc;
  st.nonce = (uint64_t)pos[0], st.counter = (uint64_t)pos[1], st.pos = (uint32_t)pos[2];
  st.seeded = 1; /* the stream goes on where it stopped */
  return dpo_rng_set_state(rng, &st);
}
