#include "dpopt/rng.h"
#include "dpopt/status.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define DPO__RNG_BLOCKS 16
#define DPO__RNG_BUF (64 * DPO__RNG_BLOCKS)

struct dpo_rng {
  dpo_rng_state_t st;
  unsigned char buf[DPO__RNG_BUF];
  int have_spare;
  double spare;
};

static void dpo__rng_refill(dpo_rng_t *r) {
  unsigned char nonce[crypto_stream_chacha20_NONCEBYTES];
  memcpy(nonce, &r->st.nonce, sizeof nonce);
  memset(r->buf, 0, sizeof r->buf);
  /* xor with zeros at block counter `counter` = keystream blocks [counter, counter+16) */
  crypto_stream_chacha20_xor_ic(r->buf, r->buf, sizeof r->buf, nonce, r->st.counter, r->st.key);
  r->st.counter += DPO__RNG_BLOCKS;
  r->st.pos = 0;
}

int dpo_rng_create(int seeded, uint64_t seed, uint64_t stream, dpo_rng_t **rng) {
  if (sodium_init() < 0) return dpo_err(DPO_EUNSUP, "libsodium failed to initialize");
  dpo_rng_t *r = calloc(1, sizeof *r);
  if (!r) return dpo_err(DPO_ENOMEM, "rng: out of memory");
  r->st.seeded = seeded ? 1 : 0;
  if (seeded) {
    /* key = BLAKE2b-256("dpopt-seed" || seed): distinct seeds give unrelated streams */
    unsigned char in[18] = "dpopt-seed";
    memcpy(in + 10, &seed, 8);
    crypto_generichash(r->st.key, sizeof r->st.key, in, sizeof in, NULL, 0);
  } else {
    randombytes_buf(r->st.key, sizeof r->st.key);
  }
  r->st.nonce = stream;
  r->st.counter = 0;
  dpo__rng_refill(r);
  *rng = r;
  return DPO_OK;
}

void dpo_rng_destroy(dpo_rng_t *rng) {
  if (!rng) return;
  sodium_memzero(rng, sizeof *rng);
  free(rng);
}

int dpo_rng_is_seeded(const dpo_rng_t *rng) { return rng->st.seeded; }

void dpo_rng_bytes(dpo_rng_t *r, void *buf, size_t len) {
  unsigned char *out = buf;
  while (len > 0) {
    if (r->st.pos == DPO__RNG_BUF) dpo__rng_refill(r);
    size_t k = DPO__RNG_BUF - r->st.pos;
    if (k > len) k = len;
    memcpy(out, r->buf + r->st.pos, k);
    r->st.pos += (uint32_t)k;
    out += k;
    len -= k;
  }
}

uint64_t dpo_rng_u64(dpo_rng_t *r) {
  uint64_t v;
  dpo_rng_bytes(r, &v, sizeof v);
  return v;
}

double dpo_rng_uniform(dpo_rng_t *r) {
  /* (k + 0.5) / 2^53 is never 0 or 1 */
  return ((double)(dpo_rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

uint64_t dpo_rng_below(dpo_rng_t *r, uint64_t n) {
  uint64_t lim = UINT64_MAX - UINT64_MAX % n, v;
  do v = dpo_rng_u64(r);
  while (v >= lim);
  return v % n;
}

double dpo_rng_normal(dpo_rng_t *r) {
  if (r->have_spare) {
    r->have_spare = 0;
    return r->spare;
  }
  double u1 = dpo_rng_uniform(r), u2 = dpo_rng_uniform(r);
  double rad = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
  r->spare = rad * sin(th);
  r->have_spare = 1;
  return rad * cos(th);
}

void dpo_rng_get_state(const dpo_rng_t *r, dpo_rng_state_t *st) { *st = r->st; }

int dpo_rng_set_state(dpo_rng_t *r, const dpo_rng_state_t *st) {
  if (st->pos > DPO__RNG_BUF || st->counter < DPO__RNG_BLOCKS)
    return dpo_err(DPO_EINVAL, "rng: invalid saved state");
  r->st = *st;
  r->st.counter -= DPO__RNG_BLOCKS; /* regenerate the buffer the saved position refers to */
  uint32_t pos = st->pos;
  dpo__rng_refill(r);
  r->st.pos = pos;
  r->have_spare = 0;
  return DPO_OK;
}
