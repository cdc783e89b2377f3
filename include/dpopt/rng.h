/* Random streams.
 *
 * A dpo_rng_t is a ChaCha20 keystream (libsodium).  Unseeded streams take their 256-bit key
 * from the kernel (getrandom via libsodium's randombytes_buf): this is the only kind that may
 * feed privacy noise in a private run.  Seeded streams derive the key from a 64-bit seed and a
 * stream id, so runs are reproducible — and NOT private: the CLI says so in every output.
 * The state (key, nonce, block counter, position) is small and can be checkpointed.
 * Not collective; not thread-safe (one stream per thread).
 */
#ifndef DPOPT_RNG_H
#define DPOPT_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpo_rng dpo_rng_t;

typedef struct {
  unsigned char key[32];
  uint64_t nonce;   /* stream id */
  uint64_t counter; /* 64-byte block counter of the next refill */
  uint32_t pos;     /* bytes consumed from the current buffer */
  int seeded;
} dpo_rng_state_t;

/* Create a stream.  seeded=0: secure key from the OS (seed ignored); seeded=1: key derived
 * from (seed, stream) — reproducible and not private. */
int dpo_rng_create(int seeded, uint64_t seed, uint64_t stream, dpo_rng_t **rng);
void dpo_rng_destroy(dpo_rng_t *rng);
int dpo_rng_is_seeded(const dpo_rng_t *rng);

void dpo_rng_bytes(dpo_rng_t *rng, void *buf, size_t len);
uint64_t dpo_rng_u64(dpo_rng_t *rng);
/* Uniform in the open interval (0, 1), 53 random bits. */
double dpo_rng_uniform(dpo_rng_t *rng);
/* Uniform integer in [0, n), unbiased (rejection). n > 0. */
uint64_t dpo_rng_below(dpo_rng_t *rng, uint64_t n);
/* Standard normal by Box-Muller on doubles: for data generation and shuffles ONLY; privacy
 * noise uses the samplers of dpopt/privacy.h. */
double dpo_rng_normal(dpo_rng_t *rng);

/* Checkpoint support: the stream continues bit-identically after set_state(get_state()). */
void dpo_rng_get_state(const dpo_rng_t *rng, dpo_rng_state_t *st);
int dpo_rng_set_state(dpo_rng_t *rng, const dpo_rng_state_t *st);

#ifdef __cplusplus
}
#endif
#endif
