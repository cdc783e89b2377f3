/* Multi-party runs: who holds which rows, with which budget, and whom to trust with the noise.
 *
 * A party is a block of consecutive ranks of the run's communicator with its own data file(s)
 * and its own privacy budget.  Declared in the configuration (see README, "Multi-party runs"):
 *
 *   [parties]
 *   count = P                  ; number of parties (default: none declared)
 *   data  = parts/a9a.%d       ; optional: party K loads the file with %d replaced by K
 *   eps   = 1.0                ; default per-party budget (default privacy.eps)
 *   delta = 0                  ; default per-party delta (default privacy.delta)
 *   [party.K]                  ; optional per-party overrides
 *   ranks = 2-3                ; its ranks (default: ranks split into P balanced blocks)
 *   data  = FILE
 *   eps   = 0.5
 *   delta = 0
 *   [privacy]
 *   trust = central | local | shares      (default central)
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
 */
#ifndef DPOPT_PARTIES_H
#define DPOPT_PARTIES_H

#include <stdint.h>
#include <stdio.h>

#include "dpopt/config.h"
#include "dpopt/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DPO_TRUST_CENTRAL = 0, DPO_TRUST_LOCAL = 1, DPO_TRUST_SHARES = 2 } dpo_trust_t;
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
  dpo_trust_t trust;
  dpo_exhaust_t on_exhausted;
  int declared;       /* 1: [parties] given; 0: implied (one party per rank for local/shares) */
  FILE *trace;        /* rank 0, borrowed: party events are written as '#' lines (may be NULL) */
  int64_t *dropped_step; /* [count]: iteration at which party k left (-1: never); written on
                          * rank 0 by the private algorithm (drop policy) */
} dpo_parties_t;

/* Parse parties.*, party.K.* and privacy.trust / privacy.on_party_exhausted for a run of
 * nranks ranks.  Not collective (every rank gets the same answer from the same config).
 * *out = NULL (and DPO_OK) when no parties are declared and trust is central: a single data
 * holder, the pre-party behaviour.  Errors name the key. */
int dpo_parties_from_config(const dpo_config_t *cfg, int nranks, dpo_parties_t **out);
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

#ifdef __cplusplus
}
#endif
#endif
