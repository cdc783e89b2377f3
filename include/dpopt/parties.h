/* Multi-party runs: who holds which rows, with which budget, and whom to trust with the noise.
 *
 * A party is a block of consecutive ranks of the run's communicator with its own data file(s)
 * and its own privacy budget.  Declared in the configuration (see README, "Multi-party runs"):
 *
 *   [parties]
 *   count = P                  ; number of parties (default: none declared)
 *   data  = parts/a9a.%d       ; optional: party K loads the file with %d replaced by K
 *   budget_store = st/%d       ; optional: party K's budget store (needs data; dpopt/budget.h)
 *   out   = runs/p%d           ; secagg: party K's own run directory (its journal; required for
 *                              ; every party that has a rank other than the coordinator's)
 *   eps   = 1.0                ; default per-party budget (default privacy.eps)
 *   delta = 0                  ; default per-party delta (default privacy.delta)
 *   remaining = 0,2            ; --resume of a secagg run only: the parties (by their number
 *                              ; in the first table) that continue, in rank order
 *   [party.K]                  ; optional per-party overrides
 *   ranks = 2-3                ; its ranks (default: ranks split into P balanced blocks)
 *   data  = FILE
 *   eps   = 0.5
 *   delta = 0
 *   [privacy]
 *   trust = central | local | shares | secagg   (default central)
 *   collude = k                ; secagg: coalitions of up to k parties (default 1, the
 *                              ; coordinator's party; 0 <= k < P)
 *   on_party_exhausted = stop | drop      (default stop)
 *
 * With trust = local or shares and no [parties] section, every rank is one party.
 *
 * Trust modes (what the coordinator, rank 0, can see; rank 0 always draws the minibatch and
 * broadcasts its row ids, so every rank knows the batch):
 *   central  the coordinator receives the exact sum of the parties' gradients and adds the
 *            noise once (the least noise).  The charge (with amplification by subsampling)
 *            holds against observers of the released iterates who do not know the batch; the
 *            coordinator sees everything.
 *   local    every party noises its own contribution (exact grid Laplace, its own stream)
 *            before the reduce; no rank, the coordinator included, receives an un-noised value
 *            of another party.  The charge is UN-amplified (the coordinator chose the batch),
 *            so it holds against the coordinator.  The sum carries P times the central noise
 *            variance.
 *   shares   every rank adds an exact integer share of ONE central discrete Laplace (the
 *            digits of two geometric variables split over the ranks; src/privacy/parties.c):
 *            the released sum carries exactly the central noise, and the charge
 *            (un-amplified) holds against every rank that sees only the released iterates.
 *            Without secure aggregation the coordinator (and the ranks of the reduction tree)
 *            see partial sums with only a share of the noise: NO guarantee against them.
 *   secagg   secure aggregation (src/privacy/secagg.c): every rank encodes its sum in fixed
 *            point mod 2^64 (randomized rounding), every party leader adds a discrete Gaussian
 *            share sized for the P - k honest parties, every rank masks with pairwise
 *            X25519/ChaCha20 masks that cancel in the sum; the coordinator learns only the
 *            masked vectors (uniform) and their sum.  The charge (an rdp-rho release,
 *            Kairouz-Liu-Steinke 2021 Thm 1; un-amplified) holds against any coalition of up
 *            to k parties, the coordinator's included.  Needs an accountant that composes
 *            RDP (not basic).  With delta = 0 (pure eps) the shares are Polya (negative
 *            binomial) differences whose P - k honest ones sum to exactly a discrete Laplace
 *            (Goryczka-Xiong 2017), charged as a pure "laplace" release (DP-GD family).  A
 *            rank that fails or dies ends the run (see README).
 */
#ifndef DPOPT_PARTIES_H
#define DPOPT_PARTIES_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/config.h"
#include "dpopt/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  DPO_TRUST_CENTRAL = 0,
  DPO_TRUST_LOCAL = 1,
  DPO_TRUST_SHARES = 2,
  DPO_TRUST_SECAGG = 3
} dpo_trust_t;
typedef enum { DPO_EXHAUST_STOP = 0, DPO_EXHAUST_DROP = 1 } dpo_exhaust_t;

typedef struct {
  int count;          /* P >= 1 */
  int nranks;
  int *rank_party;    /* [nranks]: party of each rank */
  int *first_rank;    /* [count] */
  int *nranks_of;     /* [count] */
  double *eps;        /* [count] budgets */
  double *delta;      /* [count] */
  char **data;        /* [count] data file of each party, or NULL (data.train split by ranks) */
  char **store;       /* [count] budget store of each party (opened by the party's first rank
                       * only; dpopt/budget.h), or NULL */
  char **out;         /* [count] secagg: each party's own run directory (party.K.out or
                       * parties.out), where its guard keeps its journal; NULL: not given here
                       * (a local path: each party's configuration names its own) */
  dpo_trust_t trust;
  dpo_exhaust_t on_exhausted;
  int collude;        /* secagg: privacy.collude = k, the largest coalition of parties (the
                       * coordinator's included) the guarantee holds against; 0 <= k < P */
  int declared;       /* 1: [parties] given; 0: implied (one party per rank for local/shares) */
  FILE *trace;        /* rank 0, borrowed: party events are written as '#' lines (may be NULL) */
  int64_t *dropped_step; /* [count]: iteration at which party k left (-1: never); written on
                          * rank 0 by the private algorithm (drop policy) */
  int *name;          /* [count]: party k's name, its number in the run's first table (k, or
                       * the k-th of parties.remaining when a secagg run resumes without some
                       * of its parties): the K of party.K.*, of the %d patterns, of its
                       * journal and of its account in the coordinator's ledger */
} dpo_parties_t;

/* Parse parties.* and party.K.* for a run of nranks ranks, with the trust mode, the policy on
 * an exhausted party, the budget and the collusion settings of the run's privacy specification
 * (dpopt/spec.h; NULL: nothing given).  Not collective (every rank gets the same answer from
 * the same config).  *out = NULL (and DPO_OK) when no parties are declared and trust is
 * central: a single data holder, the pre-party behaviour.  Errors name the key. */
struct dpo_privacy_spec;
int dpo_parties_from_config(const dpo_config_t *cfg, const struct dpo_privacy_spec *spec,
                            int nranks, dpo_parties_t **out);
/* The table of a run whose every rank is one party (party k = rank k, named k) with the
 * budget (eps, delta) and the trust mode given (dpopt admm's parties): each party's own data
 * file, budget store and run directory are read and checked as dpo_parties_from_config reads
 * and checks them (party.K.data / budget_store / out, else parties.data / budget_store / out
 * with %d = K; every party names a file, a store, or none does; no two parties name one
 * store; a store needs the party's file; a run directory only under a trust mode whose
 * parties journal, and none for a party 0 that is the coordinator's rank alone).  Reads no
 * other party key: the collusion bound (dpo_parties_collude; collude = 0 here) and every
 * other setting are the caller's to read and check.  Not collective; *out is never NULL on
 * DPO_OK.  Errors name the key or the party. */
int dpo_parties_per_rank(const dpo_config_t *cfg, dpo_trust_t trust, int nranks, double eps,
                         double delta, dpo_parties_t **out);
/* The collusion bound of count parties under spec's trust mode (secagg): privacy.collude = k
 * (default 1, or 0 for a single party), 0 <= k < count; k = 0 with more than one party counts
 * the coordinator's own party's share as honest and is refused unless
 * privacy.trust_coordinator says the coordinator is trusted, which applies to k = 0 only.
 * Under any other trust mode either key is refused.  *collude is set under secagg only.
 * Errors name the key's origin. */
int dpo_parties_collude(const struct dpo_privacy_spec *spec, int64_t count, int *collude);
void dpo_parties_destroy(dpo_parties_t *p);

const char *dpo_trust_name(dpo_trust_t t);
/* One sentence: what the mode protects against and what it does not (for summary.json). */
const char *dpo_trust_protects(dpo_trust_t t);
/* Short clause: what the coordinator sees and whom the charges hold against (printed
 * privacy line, summary.json, the ledger journal). */
const char *dpo_trust_coordinator_sees(dpo_trust_t t);

/* ---- simulated parties (dpopt simulate; src/privacy/split.c) ---- */

typedef struct {
  const char *split;  /* iid | label | dirichlet (any case) */
  int64_t parties;    /* P, 1..100000 */
  double pos_frac;    /* label: party 0's fraction of the positive rows, in [0, 1] */
  double alpha;       /* dirichlet: concentration > 0 (small = skewed) */
  uint64_t seed;      /* the split is a seeded, reproducible function of the file */
} dpo_split_opts_t;
/* Not collective: DPO_EINVAL (with the values) unless the settings above are valid. */
int dpo_split_check(const dpo_split_opts_t *o);
/* Not collective (a file writer; call it on one rank): split the data lines of the LIBSVM or
 * CSV text file `in` into o->parties files named by `pattern` with %d replaced by the party
 * index (".%d" appended when the pattern has none; its directory is created).  iid: a random
 * permutation cut into P blocks; label: party 0 gets o->pos_frac of the positive rows, the
 * rest are dealt iid; dirichlet: per-class party shares ~ Dirichlet(o->alpha).  Every line
 * goes to exactly one party in its original order, every party gets at least one row, a CSV
 * header is copied to every file.  A table (party, rows, positives, file) goes to report. */
int dpo_parties_split(const char *in, const char *pattern, const dpo_split_opts_t *o,
                      FILE *report);

/* ---- noise shares (not collective; rng is this rank's own stream) ---- */

/* One Gamma(shape, scale) variate: Marsaglia-Tsang (2000) for shape >= 1, and for shape < 1
 * their boost Gamma(a) = Gamma(a + 1) * U^(1/a).  Floating point: NOT for privacy noise
 * (dpopt simulate uses it for Dirichlet splits). */
int dpo_mech_gamma_sample(dpo_rng_t *rng, double shape, double scale, double *x);
/* *k = share `share` (0 <= share < nshares) of one discrete Laplace(t) variate: exact integer
 * sampling (CKS 2020 Bernoulli(exp(-x)) in integer arithmetic); the sum over the nshares
 * shares, each drawn independently, is EXACTLY discrete Laplace(t), P(k) ~ exp(-|k|/t).
 * 1 <= t <= 2^50.  Derivation in parties.c. */
int dpo_mech_dlaplace_share(dpo_rng_t *rng, uint64_t t, int share, int nshares, int64_t *k);
/* v[i] = Lambda (rint(v[i]/Lambda) + K_i), Lambda = dpo_mech_grid(b), K_i this rank's share
 * (dpo_mech_dlaplace_share with t = ceil(b/Lambda)): the sum over the nshares ranks of such
 * values is the exact central grid mechanism dpo_mech_laplace(b) on the sum of the snapped
 * values; charge dpo_mech_laplace_eps(Delta1, b, d). */
int dpo_mech_laplace_share(dpo_rng_t *rng, double b, int share, int nshares, double *v,
                           int64_t d);
/* The same on the grid of sigma with an exact discrete Gaussian share N_Z(0, s^2),
 * s = ceil(t/sqrt(nshares)), t = ceil(sigma/Lambda).  The SUM is not a discrete Gaussian: a
 * charge must account it by Kairouz-Liu-Steinke 2021 Thm 2; no algorithm charges it today. */
int dpo_mech_gaussian_share(dpo_rng_t *rng, double sigma, int share, int nshares, double *v,
                            int64_t d);

/* ---- secure aggregation (privacy.trust = secagg; src/privacy/secagg.c has the derivation) ----
 * Not collective unless said.  dpo_secagg_params: from the L2 sensitivity delta2 of one rank's
 * sum, d, P parties, a coalition bound k and the per-release target rho: the fixed-point step
 * gamma (a power of two), the integer sigma of each party's share N_Z(0, sigma^2), the rho of
 * the release (<= rho_target; the ledger's rdp-rho charge) and the encoded sensitivity
 * Delta = delta2/gamma + sqrt(d).  dpo_secagg_eps: Kairouz-Liu-Steinke 2021 Thm 1 for n honest
 * shares (rounded up).  encode: x = floor(v/gamma + U) mod 2^64.  mask: x +=/-= the ChaCha20-
 * IETF stream of (key, nonce = release) as d little-endian words (scratch: d words).
 * pair_key: BLAKE2b(X25519(sk, pk_other) || pk_lo || pk_hi). */
typedef struct dpo_secagg dpo_secagg_t;
int dpo_secagg_eps(double delta, double sigma, int n, int64_t d, double *eps);
int dpo_secagg_params(double delta2, int64_t d, int P, int collude, double rho_target,
                      double *gamma, uint64_t *sigma, double *rho, double *delta_enc);
/* Pure eps (privacy.delta = 0): from the L1 sensitivity delta1 of one rank's sum and the
 * per-release target eps: gamma (Delta1/gamma in [1024 d, 2048 d)), the integer scale t of the
 * discrete Laplace that the n = P - k honest parties' Polya shares sum to, the eps of the
 * release (= Delta / t, rounded up, <= eps_target) and Delta = delta1/gamma + d (L1). */
int dpo_secagg_lap_params(double delta1, int64_t d, double eps_target, double *gamma,
                          uint64_t *t, double *eps, double *delta_enc);
/* Party-local Poisson sampling (dp-sgd-rdp under secagg; the argument is in secagg.c):
 * fine_step: gamma with delta2/gamma in [1024, 2048) sqrt(d) and the charged sensitivity
 * sens_c = gamma (delta2/gamma + sqrt(d)) (rounded up).  sampled_share: the smallest integer
 * share s >= 16 whose P - k honest shares carry sigma_h = gamma s sqrt(P - k) >= sigma_target
 * (sigma_h rounded down: the noise_scale of the charge). */
int dpo_secagg_fine_step(double delta2, int64_t d, double *gamma, double *sens_c);
int dpo_secagg_sampled_share(double sigma_target, double gamma, int P, int collude,
                             uint64_t *s, double *sigma_h);
/* The data-free range check of a release: m rows of L2 sensitivity delta2 at step gamma over
 * `ranks` encoders stay below 2^62 (no wrap of the data part); DPO_EINVAL otherwise. */
int dpo_secagg_check_range(int64_t m, double delta2, double gamma, int ranks);
/* The word width of a release (secagg.c, "cheaper rounds"), from public numbers only: *bits =
 * 32 when the data bound m sens/gamma + ranks plus the noise bound of `shares` shares (Gaussian
 * sigma, or lap_n > 0: Polya shares of scale sigma = t for lap_n honest parties), exceeded with
 * probability <= 2^-64 a release, stays below 2^31; else 64.  Includes dpo_secagg_check_range. */
int dpo_secagg_word(int64_t m, double sens, double gamma, int ranks, int shares, int64_t d,
                    uint64_t sigma, int lap_n, int *bits);
/* The mask graph (SecAgg+'s sparse graph; secagg.c): rank's neighbours among n ranks in the
 * Harary graph C_n(1..h), h = corrupt/2 + 1 (complete when 2h >= n - 1), whose honest part
 * stays connected when any `corrupt` ranks are removed.  nbr: room for n - 1; *deg: their
 * count, ascending. */
int dpo_secagg_graph(int n, int corrupt, int rank, int *nbr, int *deg);
int dpo_secagg_encode(dpo_rng_t *rng, const double *v, double gamma, int64_t d, uint64_t *x);
int dpo_secagg_mask(const unsigned char key[32], uint64_t release, int sign, int64_t d,
                    uint64_t *x, uint64_t *scratch);
/* The same on 32-bit words (x mod 2^32; scratch: d words of 32 bits). */
int dpo_secagg_mask32(const unsigned char key[32], uint64_t release, int sign, int64_t d,
                      uint32_t *x, uint32_t *scratch);
int dpo_secagg_pair_key(const unsigned char sk[32], const unsigned char pk_mine[32],
                        const unsigned char pk_other[32], unsigned char key[32]);
/* Collective: X25519 key pairs (OS CSPRNG) and one allgather of the public keys; adds_noise =
 * the number of party noise shares this rank adds per release (1 on a party's first rank, 0 on
 * its other ranks; dpopt audit simulates P parties on one rank with P); rng (borrowed) = this
 * rank's secure stream. */
int dpo_secagg_create(MPI_Comm comm, int adds_noise, dpo_rng_t *rng, dpo_secagg_t **out);
/* Collective: a new multi-party run's id, 64 hex digits and a NUL: the BLAKE2b hash of 32
 * random bytes from every rank, so no party (the coordinator included) chooses it. */
int dpo_secagg_run_id(MPI_Comm comm, char id[65]);
/* Party identity keys (Ed25519, libsodium crypto_sign).  create: a new key pair, the secret in
 * PATH (0600, never overwritten), the public key as 64 hex digits in PATH.pub (what the other
 * parties list as party.K.public_key).  load: the secret key of PATH (refused when others may
 * read it).  pub_parse: 64 hex digits.  Not collective (src/privacy/guard.c). */
int dpo_party_key_create(const char *path);
int dpo_party_key_load(const char *path, unsigned char sk[64]);
int dpo_party_pub_parse(const char *hex, unsigned char pk[32]);
/* dpo_secagg_create with authenticated keys: every rank signs (its X25519 public key, the plan digest,
 * a run nonce every rank contributed random bytes to, its rank) with its party's Ed25519
 * identity key, and every rank verifies every other rank's signature with the public key
 * listed for that rank's party; a key that does not verify stops the run on every rank. */
typedef struct {
  const unsigned char *sk;     /* 64 bytes: this rank's party identity secret key */
  const unsigned char *pks;    /* [size][32]: the identity public key of each rank's party */
  const int *rank_party;       /* [size]: each rank's party (messages; may be NULL) */
  const unsigned char *digest; /* 32 bytes: the agreed plan (dpo_plan_agree) */
  unsigned char *nonce_out;    /* 32 bytes: receives the run nonce */
} dpo_secagg_auth_t;
int dpo_secagg_create_auth(MPI_Comm comm, int adds_noise, dpo_rng_t *rng,
                           const dpo_secagg_auth_t *auth, dpo_secagg_t **out);
void dpo_secagg_destroy(dpo_secagg_t *sa);
/* Not collective, but every rank must call it with the same `corrupt` (the most ranks a
 * coalition holds) before the first release: masks with the neighbours of dpo_secagg_graph
 * only (the default is the complete graph).  degree: this rank's neighbour count. */
int dpo_secagg_set_graph(dpo_secagg_t *sa, int corrupt);
int dpo_secagg_degree(const dpo_secagg_t *sa);
/* Collective: one release.  v = this rank's sum.  ok = 0 (this rank failed, or refused the
 * request): the round is withheld on every rank -- a failure flag is all-reduced first, nothing
 * is reduced or decoded, the ranks that did not fail return DPO_EREMOTE (no message set; the
 * failing rank's status says why) and total is left untouched.  Otherwise on rank 0 total[d] =
 * gamma * (the decoded sum of every rank's encoding + noise shares).  masked (may be NULL):
 * this rank's masked vector, what the coordinator receives (tests; 32-bit words zero-extended).
 * Masks use the release counter, which advances on every call.  bits: the word width, 32 or 64
 * (dpo_secagg_word), the same on every rank; another value withholds the round. */
int dpo_secagg_round(dpo_secagg_t *sa, const double *v, int64_t d, double gamma, uint64_t sigma,
                     int bits, int ok, double *total, uint64_t *masked);
/* The same with the pure-eps noise: each share is dpo_mech_dlaplace_polya_share(t, honest),
 * so that any `honest` of the shares sum to the discrete Laplace(t). */
int dpo_secagg_round_lap(dpo_secagg_t *sa, const double *v, int64_t d, double gamma, uint64_t t,
                         int honest, int bits, int ok, double *total, uint64_t *masked);
uint64_t dpo_secagg_releases(const dpo_secagg_t *sa);
/* Not collective: with a SEEDED stream (dpo_rng_is_seeded: reproducible, not private) this
 * rank's rounding and noise share of its r-th release from now on are drawn at a place of the
 * stream fixed by first + r alone, so a seeded run resumed at release `first` draws what the
 * uninterrupted run drew there (the masks cancel whatever their keys).  An unseeded stream is
 * never moved (a no-op).  Call it before the releases it applies to. */
int dpo_secagg_seeded_releases(dpo_secagg_t *sa, uint64_t first);

#ifdef __cplusplus
}
#endif
#endif
