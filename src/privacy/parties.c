/* Multi-party runs: the party table from the configuration, trust-mode descriptions, and the
 * noise shares of the `shares` trust mode (see include/dpopt/parties.h). */
#include "dpopt/parties.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "dpopt/privacy.h"
#include "dpopt/spec.h"
#include "dpopt/status.h"
#include "mech_ct.h"

void dpo_parties_destroy(dpo_parties_t *p) {
  if (!p) return;
  if (p->data)
    for (int k = 0; k < p->count; k++) free(p->data[k]);
  free(p->data);
  if (p->store)
    for (int k = 0; k < p->count; k++) free(p->store[k]);
  free(p->store);
  if (p->out)
    for (int k = 0; k < p->count; k++) free(p->out[k]);
  free(p->out);
  free(p->rank_party);
  free(p->first_rank);
  free(p->nranks_of);
  free(p->eps);
  free(p->delta);
  free(p->dropped_step);
  free(p->name);
  free(p);
}

const char *dpo_trust_name(dpo_trust_t t) {
  return t == DPO_TRUST_LOCAL    ? "local"
         : t == DPO_TRUST_SHARES ? "shares"
         : t == DPO_TRUST_SECAGG ? "secagg"
                                 : "central";
}

const char *dpo_trust_protects(dpo_trust_t t) {
  switch (t) {
  case DPO_TRUST_LOCAL:
    return "local: every party noises its own contribution (exact grid Laplace, its own "
           "stream) before the reduce, so the coordinator and the other parties never receive "
           "an un-noised value of a party; the coordinator draws the minibatch and sees its row "
           "ids, so each party is charged WITHOUT amplification by subsampling and its charge "
           "holds against the coordinator; the sum carries P times the central noise variance.";
  case DPO_TRUST_SHARES:
    return "shares: every rank adds an exact integer share of one central discrete Laplace "
           "(the digits of two geometric variables split over the ranks), so the released sum "
           "carries exactly the central noise; the charge (without amplification: every rank "
           "knows the batch) holds against every rank and outsider that sees only the released "
           "iterates. Without secure aggregation the coordinator (and the ranks of the "
           "reduction tree) see partial sums carrying only a share of the noise: NO privacy "
           "guarantee against them.";
  case DPO_TRUST_SECAGG:
    return "secagg: secure aggregation: every rank encodes its sum in fixed point mod 2^64 "
           "(randomized rounding), every party adds a noise share (discrete Gaussian; at pure eps "
           "a Polya share, so that honest shares sum to a discrete Laplace) sized so that the "
           "P - k honest parties' shares alone carry the charged noise (privacy.collude = k), "
           "and every rank masks its vector with pairwise X25519/ChaCha20 masks that cancel in "
           "the sum: the coordinator learns only uniform-looking masked vectors and their sum; "
           "the charge (without amplification: the coordinator draws the batch) holds against "
           "any coalition of up to k parties, the coordinator's own party included.";
  default:
    return "central: the coordinator (rank 0) is trusted; it receives the exact sum of the "
           "parties' gradients and adds the noise once; the charge (amplified by subsampling "
           "when the batch is a sample) protects the released iterates against observers who "
           "do not know the batch, not against the coordinator, which sees everything.";
  }
}

/* "a" or "a-b" (inclusive) */
static int dpo__parse_range(const char *s, int *a, int *b) {
  char *end;
  long x = strtol(s, &end, 10), y;
  if (end == s) return 0;
  if (*end == '-') {
    const char *t = end + 1;
    y = strtol(t, &end, 10);
    if (end == t) return 0;
  } else {
    y = x;
  }
  if (*end || x < 0 || y < x) return 0;
  *a = (int)x;
  *b = (int)y;
  return 1;
}

/* party k's path for key `what` (data, budget_store): party.K.WHAT, else the pattern
 * parties.WHAT with its one %d replaced by k; *out = NULL when neither is given */
static int dpo__party_path(const dpo_config_t *cfg, const char *what, const char *pat, int k,
                           char **out) {
  char key[128], buf[1024];
  const char *ds = NULL;
  snprintf(key, sizeof key, "party.%d.%s", k, what);
  dpo_config_get_str(cfg, key, NULL, &ds);
  if (!ds && pat) {
    const char *pc = strstr(pat, "%d");
    if (!pc || strchr(pc + 2, '%') || strchr(pat, '%') != pc) {
      snprintf(key, sizeof key, "parties.%s", what);
      return dpo_err(DPO_EINVAL, "%s: %s = '%s' must contain exactly one %%d",
                     dpo_config_origin(cfg, key), key, pat);
    }
    snprintf(buf, sizeof buf, pat, k);
    ds = buf;
  }
  if (ds && !(*out = strdup(ds))) return dpo_err(DPO_ENOMEM, "parties: out of memory");
  return DPO_OK;
}

static int dpo__party_same_store(const char *a, const char *b) {
  struct stat sa, sb;
  if (!stat(a, &sa) && !stat(b, &sb)) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return !strcmp(a, b);
}

/* each party holds its store's lock from its check to its reservation: two parties on one
 * store (the same directory, by device and inode, else the same name) would wait for each
 * other; the later party is named */
static int dpo__party_stores_distinct(const dpo_parties_t *p) {
  for (int k = 1; k < p->count; k++)
    for (int i = 0; i < k && p->store[k]; i++)
      if (p->store[i] && dpo__party_same_store(p->store[i], p->store[k]))
        return dpo_err(DPO_EINVAL, "parties: party %d names a budget store another party names: "
                       "each party keeps its own store (one data set's account)", p->name[k]);
  return DPO_OK;
}

/* every party names its WHAT or none does (then the array is all NULL) */
static int dpo__party_all_or_none(char **v, int n, const char *what) {
  int some = 0;
  for (int k = 0; k < n; k++) some += v[k] != NULL;
  if (some && some < n)
    return dpo_err(DPO_EINVAL, "parties: %d of %d parties name their own %s (parties.%s or "
                   "party.K.%s): either every party names one or none does", some, n, what,
                   what, what);
  return DPO_OK;
}

/* A party's own run directory (party.K.out, parties.out) holds its guard's journal: secagg,
 * local and shares, and only for a party with a rank other than the coordinator's (a party of rank 0 alone
 * has no journal of its own: its account is the coordinator's) -- a directory nobody writes is
 * refused; the pattern's entry for such a party 0 is dropped. */
static int dpo__party_out_check(const dpo_config_t *cfg, dpo_parties_t *p) {
  char key[128];
  for (int k = 0; k < p->count; k++) {
    if (!p->out[k]) continue;
    snprintf(key, sizeof key, "party.%d.out", p->name[k]);
    const char *at = dpo_config_get(cfg, key) ? dpo_config_origin(cfg, key)
                                              : dpo_config_origin(cfg, "parties.out");
    if (p->trust == DPO_TRUST_CENTRAL)
      return dpo_err(DPO_EINVAL, "%s: party %d's own run directory (party.K.out, parties.out) "
                     "holds its guard's journal under privacy.trust = secagg, local or shares, "
                     "not central", at, p->name[k]);
    if (k == 0 && p->nranks_of[0] == 1 && !dpo_config_get(cfg, key)) { /* the pattern's */
      free(p->out[0]);
      p->out[0] = NULL;
      continue;
    }
    if (k == 0 && p->nranks_of[0] == 1)
      return dpo_err(DPO_EINVAL, "%s: party 0's only rank is the coordinator's: its account is "
                     "the coordinator's journal (in --out) and nothing is written in party.0.out; "
                     "drop it (or give party 0 a second rank)", at);
  }
  return DPO_OK;
}

/* privacy.collude and privacy.trust_coordinator for count parties under the spec's trust
 * mode: the number of parties that may collude with the coordinator (secagg), or a refusal
 * (dpopt train's parties and dpopt admm's, one party a rank, alike) */
int dpo_parties_collude(const dpo_privacy_spec_t *spec, int64_t count, int *collude) {
  const dpo_trust_t tm = spec->trust;
  const int given_k = dpo_privacy_spec_given(spec, DPO_SPEC_COLLUDE);
  const char *k_at = dpo_privacy_spec_origin(spec, DPO_SPEC_COLLUDE);
  const char *tc_at = dpo_privacy_spec_origin(spec, DPO_SPEC_TRUST_COORDINATOR);
  if (tm == DPO_TRUST_SECAGG) {
    /* default: the coordinator's own party may be curious (k = 1), or 0 for a
     * single party */
    int64_t k = given_k ? spec->collude : count > 1 ? 1 : 0;
    if (k < 0 || k >= count) {
      return dpo_err(DPO_EINVAL,
                     "%s: privacy.collude = %lld: need 0 <= k < parties (%lld): at "
                     "least one party must be honest",
                     k_at, (long long)k, (long long)count);
    }
    *collude = (int)k;
    /* k = 0 counts every party's share as honest, the coordinator's own party's
     * too: the coordinator is then trusted with the guarantee, which must be
     * said explicitly */
    const int trusted = spec->trust_coordinator;
    if (k == 0 && count > 1 && !trusted) {
      return dpo_err(DPO_EINVAL,
                     "%s: privacy.collude = 0 counts the coordinator's own party's "
                     "noise share as honest, so the guarantee then holds only if the "
                     "coordinator "
                     "(rank 0) adds its share and does not collude with anyone: the "
                     "coordinator "
                     "is trusted.  Acknowledge it with privacy.trust_coordinator = 1 "
                     "(--trust-coordinator), or keep privacy.collude >= 1",
                     k_at);
    }
    if (trusted && k != 0) {
      return dpo_err(DPO_EINVAL,
                     "%s: privacy.trust_coordinator applies to privacy.collude = 0 "
                     "(here %lld)",
                     tc_at, (long long)k);
    }
  } else if (dpo_privacy_spec_given(spec, DPO_SPEC_TRUST_COORDINATOR)) {
    return dpo_err(DPO_EINVAL, "%s: privacy.trust_coordinator applies to privacy.trust = secagg",
                   tc_at);
  } else if (given_k) {
    return dpo_err(DPO_EINVAL, "%s: privacy.collude applies to privacy.trust = secagg", k_at);
  }
  return DPO_OK;
}

/* parties.remaining = "a,b,...": the names (numbers in the first table of `count` parties) of
 * the parties that continue, strictly increasing; *n = how many (0: not given) */
static int dpo__parties_remaining(const dpo_config_t *cfg, int64_t count, int *names, int *n) {
  const char *s = NULL;
  *n = 0;
  dpo_config_get_str(cfg, "parties.remaining", NULL, &s);
  if (!s) return DPO_OK;
  const char *at = dpo_config_origin(cfg, "parties.remaining");
  for (const char *c = s; *c;) {
    char *end;
    long v = strtol(c, &end, 10);
    if (end == c || v < 0 || v >= count || (*n > 0 && v <= names[*n - 1]) || *n >= count ||
        (*end && *end != ','))
      return dpo_err(DPO_EINVAL, "%s: parties.remaining = '%s': expected the numbers of the "
                     "parties that continue, increasing, each in 0..%lld (parties.count = %lld)",
                     at, s, (long long)count - 1, (long long)count);
    names[(*n)++] = (int)v;
    c = *end ? end + 1 : end;
  }
  if (*n == 0)
    return dpo_err(DPO_EINVAL, "%s: parties.remaining is empty", at);
  return DPO_OK;
}

/* A table of count parties on nranks ranks, every array allocated, party k named k, none
 * dropped; NULL when out of memory. */
static dpo_parties_t *dpo__parties_new(int64_t count, int nranks) {
  dpo_parties_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->count = (int)count;
  p->nranks = nranks;
  p->name = malloc((size_t)count * sizeof *p->name);
  p->rank_party = malloc((size_t)nranks * sizeof *p->rank_party);
  p->first_rank = calloc((size_t)count, sizeof *p->first_rank);
  p->nranks_of = calloc((size_t)count, sizeof *p->nranks_of);
  p->eps = calloc((size_t)count, sizeof *p->eps);
  p->delta = calloc((size_t)count, sizeof *p->delta);
  p->data = calloc((size_t)count, sizeof *p->data);
  p->store = calloc((size_t)count, sizeof *p->store);
  p->out = calloc((size_t)count, sizeof *p->out);
  p->dropped_step = malloc((size_t)count * sizeof *p->dropped_step);
  if (!p->name || !p->rank_party || !p->first_rank || !p->nranks_of || !p->eps || !p->delta ||
      !p->data || !p->store || !p->out || !p->dropped_step) {
    dpo_parties_destroy(p);
    return NULL;
  }
  for (int k = 0; k < count; k++) {
    p->name[k] = k;
    p->dropped_step[k] = -1;
  }
  return p;
}

/* The one reader of the parties' own files: each party's data file, budget store and run
 * directory (party.K.data / budget_store / out, else the parties.* pattern with %d = K, its
 * name), then what holds in every table: every party names its file (its store) or none
 * does, the run directories suit the trust mode, no two parties name one store, and a store
 * accounts for the party's own file. */
static int dpo__parties_files(const dpo_config_t *cfg, dpo_parties_t *p) {
  static const char *const what[3] = {"data", "budget_store", "out"};
  char **const dst[3] = {p->data, p->store, p->out};
  for (int w = 0; w < 3; w++) {
    char key[64];
    const char *pat = NULL;
    snprintf(key, sizeof key, "parties.%s", what[w]);
    dpo_config_get_str(cfg, key, NULL, &pat);
    for (int k = 0; k < p->count; k++) {
      int rc = dpo__party_path(cfg, what[w], pat, p->name[k], &dst[w][k]);
      if (rc) return rc;
    }
  }
  int rc;
  if ((rc = dpo__party_all_or_none(p->data, p->count, "data")) ||
      (rc = dpo__party_all_or_none(p->store, p->count, "budget_store")) ||
      (rc = dpo__party_out_check(cfg, p)) || (rc = dpo__party_stores_distinct(p)))
    return rc;
  if (p->store[0] && !p->data[0])
    return dpo_err(DPO_EINVAL, "parties: a party's budget store (parties.budget_store or "
                   "party.K.budget_store) needs the party's own data file (parties.data or "
                   "party.K.data)");
  return DPO_OK;
}

int dpo_parties_per_rank(const dpo_config_t *cfg, dpo_trust_t trust, int nranks, double eps,
                         double delta, dpo_parties_t **out) {
  *out = NULL;
  if (!cfg || nranks < 1) return dpo_err(DPO_EINVAL, "parties: NULL config or no ranks");
  dpo_parties_t *p = dpo__parties_new(nranks, nranks);
  if (!p) return dpo_err(DPO_ENOMEM, "parties: out of memory");
  p->trust = trust;
  for (int k = 0; k < nranks; k++) {
    p->rank_party[k] = p->first_rank[k] = k;
    p->nranks_of[k] = 1;
    p->eps[k] = eps;
    p->delta[k] = delta;
  }
  int rc = dpo__parties_files(cfg, p);
  if (rc) {
    dpo_parties_destroy(p);
    return rc;
  }
  *out = p;
  return DPO_OK;
}

int dpo_parties_from_config(const dpo_config_t *cfg,
                            const dpo_privacy_spec_t *spec, int nranks,
                            dpo_parties_t **out) {
  int rc = DPO_OK;
  dpo_parties_t *p = NULL;
  const char *pat = NULL;
  int64_t count = 0;
  char key[128];
  dpo_privacy_spec_t none;
  *out = NULL;
  if (!cfg || nranks < 1)
    return dpo_err(DPO_EINVAL, "parties: NULL config or no ranks");
  if (!spec) { /* nothing given */
    dpo_privacy_spec_default(&none);
    spec = &none;
  }
  double geps = spec->eps, gdelta = spec->delta;
  dpo_config_get_str(cfg, "parties.data", NULL, &pat);
  if ((rc = dpo_config_get_int(cfg, "parties.count", 0, &count)) ||
      (rc = dpo_config_get_double(cfg, "parties.eps", geps, &geps)) ||
      (rc = dpo_config_get_double(cfg, "parties.delta", gdelta, &gdelta)))
    return rc;
  const dpo_trust_t tm = spec->trust;
  const dpo_exhaust_t ex = spec->on_exhausted;
  int declared = count != 0;
  if (!declared && tm == DPO_TRUST_CENTRAL) {
    if (pat)
      return dpo_err(DPO_EINVAL, "%s: parties.data needs parties.count",
                     dpo_config_origin(cfg, "parties.data"));
    return DPO_OK;
  }
  if (!declared) count = nranks; /* local / shares: one party per rank */
  /* (parties.remaining: the table is the remaining parties, checked below) */
  if (count < 1 || (count > nranks && !dpo_config_get(cfg, "parties.remaining")))
    return dpo_err(DPO_EINVAL, "%s: parties.count = %lld: need 1 <= count <= ranks (%d): a party "
                   "is one or more ranks", dpo_config_origin(cfg, "parties.count"),
                   (long long)count, nranks);
  if (!(p = dpo__parties_new(count, nranks))) return dpo_err(DPO_ENOMEM, "parties: out of memory");
  int nrem = 0;
  if ((rc = dpo__parties_remaining(cfg, count, p->name, &nrem))) goto fail;
  if (nrem > 0) count = nrem; /* the table: the remaining parties, each under its name */
  if (nrem > nranks) {
    rc = dpo_err(DPO_EINVAL, "%s: %d parties remain on %d ranks: a party is one or more ranks",
                 dpo_config_origin(cfg, "parties.remaining"), nrem, nranks);
    goto fail;
  }
  p->count = (int)count; /* the arrays hold the first table's count >= the remaining ones */
  p->trust = tm;
  p->on_exhausted = ex;
  p->declared = declared;
  if ((rc = dpo_parties_collude(spec, count, &p->collude))) goto fail;
  /* default ranks: P balanced contiguous blocks */
  for (int k = 0; k < p->count; k++) {
    int64_t a = (int64_t)k * nranks / count, b = (int64_t)(k + 1) * nranks / count;
    p->first_rank[k] = (int)a;
    p->nranks_of[k] = (int)(b - a);
  }
  int next = 0;
  for (int k = 0; k < p->count; k++) {
    const char *rs = NULL;
    snprintf(key, sizeof key, "party.%d.ranks", p->name[k]);
    dpo_config_get_str(cfg, key, NULL, &rs);
    if (rs) {
      int a, b;
      if (!dpo__parse_range(rs, &a, &b) || b >= nranks)
        { rc = dpo_err(DPO_EINVAL, "%s: %s = '%s': expected a rank or a range a-b within 0..%d",
                       dpo_config_origin(cfg, key), key, rs, nranks - 1); goto fail; }
      p->first_rank[k] = a;
      p->nranks_of[k] = b - a + 1;
    }
    /* parties must tile the ranks in order: the oracle's global row ids follow rank order */
    if (p->first_rank[k] != next) {
      rc = dpo_err(DPO_EINVAL, "party %d starts at rank %d, expected %d: parties must be "
                   "consecutive blocks of ranks in order (party.K.ranks)", p->name[k],
                   p->first_rank[k], next);
      goto fail;
    }
    next += p->nranks_of[k];
    snprintf(key, sizeof key, "party.%d.eps", p->name[k]);
    if ((rc = dpo_config_get_double(cfg, key, geps, &p->eps[k]))) goto fail;
    snprintf(key, sizeof key, "party.%d.delta", p->name[k]);
    if ((rc = dpo_config_get_double(cfg, key, gdelta, &p->delta[k]))) goto fail;
    if (!(p->delta[k] >= 0 && p->delta[k] < 1) || (!isnan(p->eps[k]) && !(p->eps[k] > 0))) {
      rc = dpo_err(DPO_EINVAL, "party %d: budget eps = %g, delta = %g: need eps > 0, delta in "
                   "[0, 1)", p->name[k], p->eps[k], p->delta[k]);
      goto fail;
    }
    for (int r = p->first_rank[k]; r < p->first_rank[k] + p->nranks_of[k]; r++)
      p->rank_party[r] = k;
  }
  if (next != nranks) {
    rc = dpo_err(DPO_EINVAL, "parties cover ranks 0..%d of 0..%d: every rank must belong to a "
                 "party", next - 1, nranks - 1);
    goto fail;
  }
  if ((rc = dpo__parties_files(cfg, p))) goto fail;
  *out = p;
  return DPO_OK;
fail:
  dpo_parties_destroy(p);
  return rc;
}

/* ------------------------------------------------------------ shares */

/* standard normal from two uniforms (Box-Muller, cosine branch only: no cached state, so the
 * stream position alone determines the future) */
static double dpo__normal(dpo_rng_t *rng) {
  double u1 = dpo_rng_uniform(rng), u2 = dpo_rng_uniform(rng);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

int dpo_mech_gamma_sample(dpo_rng_t *rng, double shape, double scale, double *x) {
  if (!rng || !x) return dpo_err(DPO_EINVAL, "gamma: NULL argument");
  if (!(shape > 0) || !isfinite(shape) || !(scale > 0) || !isfinite(scale))
    return dpo_err(DPO_EINVAL, "gamma: shape %g and scale %g must be finite and > 0", shape,
                   scale);
  double a = shape < 1.0 ? shape + 1.0 : shape;
  /* Marsaglia & Tsang (2000): d = a - 1/3, c = 1/sqrt(9d); accept v = (1 + c Z)^3 when
   * ln U < Z^2/2 + d - d v + d ln v (squeeze first). */
  double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d), g;
  for (;;) {
    double z = dpo__normal(rng), v = 1.0 + c * z;
    if (v <= 0) continue;
    v = v * v * v;
    double u = dpo_rng_uniform(rng);
    if (u < 1.0 - 0.0331 * z * z * z * z) { g = d * v; break; }
    if (log(u) < 0.5 * z * z + d * (1.0 - v + log(v))) { g = d * v; break; }
  }
  /* boost for shape < 1: Gamma(a) = Gamma(a + 1) U^(1/a), in logs (U^(1/a) underflows for
   * small a; the variate is then 0, which is the correct limit) */
  if (shape < 1.0) g = exp(log(g) + log(dpo_rng_uniform(rng)) / shape);
  *x = g * scale;
  return DPO_OK;
}

/* ------------------------------------------------------------ exact integer noise shares
 *
 * Laplace shares whose SUM is exactly the central discrete Laplace.  Derivation:
 *
 * (1) Discrete Laplace(t), P(K = k) = (1-q)/(1+q) q^|k| with q = e^{-1/t} (the law that
 *     dpo_mech_discrete_laplace samples, Canonne-Kamath-Steinke 2020 Def. 2 / Alg. 2), is
 *     G1 - G2 with G1, G2 independent geometric, P(G = g) = (1-q) q^g, g >= 0:
 *       P(G1 - G2 = k) = sum_g (1-q)^2 q^g q^{g+|k|} = (1-q)^2 q^|k| / (1-q^2).
 * (2) The binary digits of a geometric variable are independent (its pmf is a product over
 *     the digits).  Write g = sum_{i<J} 2^i b_i + 2^J h, b_i in {0,1}, h >= 0; then
 *       q^g = prod_{i<J} (q^{2^i})^{b_i} * (q^{2^J})^h,
 *     so b_0..b_{J-1}, h are independent with
 *       b_i ~ Bernoulli(x_i / (1 + x_i)),  x_i = q^{2^i} = exp(-2^i / t),
 *       h   ~ Geometric(q^{2^J}),          P(h) = (1 - x_J) x_J^h,
 *     and the normalisation checks: (1-q) prod_{i<J} (1 + q^{2^i}) / (1 - q^{2^J}) = 1 since
 *     prod_{i<J} (1 + q^{2^i}) = (1 - q^{2^J}) / (1 - q).
 * (3) So K = G1 - G2 is a sum of 2(J+1) INDEPENDENT integer pieces: +2^i b_i and +2^J h from
 *     G1, -2^i b'_i and -2^J h' from G2.  Piece p goes to share p mod P (a public schedule):
 *     each rank draws only its own pieces from its own stream, and the sum over the P shares
 *     is K exactly, whatever P (shares with no piece are 0).
 * (4) Exact samplers, integer arithmetic only: Bernoulli(x/(1+x)) by rejection from a fair
 *     bit C and Bernoulli(x) (CKS Alg. 1, dpo_mech_bernoulli_exp): C = 0 -> 0; C = 1 and
 *     Bernoulli(x) -> 1; else retry; P(1) = (x/2) / (1/2 + x/2) = x/(1+x).  h counts the
 *     successes of Bernoulli(exp(-2^J/t)) before the first failure.  J is the smallest with
 *     2^J >= 2t, so x_J <= e^-2 and h is small.  In fixed work (issue 35): Bernoulli(x) is
 *     mech_ct.c's dpo__ct_bexp_small, and h is read off 23 draws (more only if all 23 succeed,
 *     probability <= e^-46).
 * On the grid: Lambda = dpo_mech_grid(b) and t = ceil(b/Lambda), exactly as the central
 * mechanism; each rank snaps its own sum (rint(v/Lambda)) and adds its integer share, so the
 * released total is Lambda (sum_k rint(v_k/Lambda) + K): one example moves one rank's snapped
 * sum by at most Delta1/Lambda + d grid units (L1), and the total is the central discrete
 * Laplace mechanism on it -- the charge dpo_mech_laplace_eps(Delta1, b, d) covers the SUM.
 * What one share alone hides: nothing in general (a share takes values on a sparse set of
 * integers), so shares without secure aggregation give no guarantee against whoever sees a
 * partial sum (the coordinator, ranks on the reduction path); see dpo_trust_protects.
 */

/* Bernoulli(x/(1+x)), x = exp(-num/t), num < 4t: each round a fair bit and a fixed-work
 * Bernoulli(x) (mech_ct.c), both always drawn; the number of rounds is independent of the
 * result (P(1 at round r) / P(0 at round r) is the same for every r), so the work reveals
 * nothing of it */
static int dpo__bern_logistic(dpo__ws_t *ws, uint64_t num, uint64_t t, int *out) {
  for (;;) {
    int b, c = dpo__ct_bit(ws);
    int rc = dpo__ct_bexp_small(ws, num, t, &b);
    if (rc) return rc;
    if ((!c) | b) {
      *out = c & b;
      return DPO_OK;
    }
  }
}

static int dpo__share_J(uint64_t t) {
  int J = 0;
  while (J < 62 && ((uint64_t)1 << J) < 2 * t) J++;
  return J;
}

int dpo_mech_dlaplace_share(dpo_rng_t *rng, uint64_t t, int share, int nshares, int64_t *k) {
  if (!rng || !k || t < 1 || t > ((uint64_t)1 << 50) || nshares < 1 || share < 0 ||
      share >= nshares)
    return dpo_err(DPO_EINVAL, "dlaplace_share: bad argument (t=%llu, share %d of %d)",
                   (unsigned long long)t, share, nshares);
  const int J = dpo__share_J(t);
  dpo__ws_t ws = DPO__WS_INIT(rng);
  int64_t sum = 0;
  for (int p = share; p < 2 * (J + 1); p += nshares) {
    const int sign = p <= J ? 1 : -1, i = p <= J ? p : p - (J + 1);
    int64_t piece = 0;
    int rc, b;
    if (i < J) {
      if ((rc = dpo__bern_logistic(&ws, (uint64_t)1 << i, t, &b))) return rc;
      piece = b ? (int64_t)1 << i : 0;
    } else { /* h ~ Geometric(x_J), x_J <= e^-2: 23 Bernoulli(x_J) always (P(h >= 23) <=
              * e^-46 < 2^-66), h = the first failure; past 23 the loop goes on (exact) */
      int64_t h = -1;
      for (int r = 0; r < 23 || h < 0; r++) {
        if ((rc = dpo__ct_bexp_small(&ws, (uint64_t)1 << J, t, &b))) return rc;
        h = h < 0 && !b ? r : h;
        if (r > 1024) /* keeps h 2^J < 2^62 for every t <= 2^50 */
          return dpo_err(DPO_EUNSUP, "dlaplace_share: geometric overflow (probability e^-2048)");
      }
      piece = h << J;
    }
    sum += sign * piece;
  }
  *k = sum;
  return DPO_OK;
}

/* smallest integer s with s^2 P >= t^2 (so the share's s_Z is never below t / sqrt(P)) */
static uint64_t dpo__share_sigma(uint64_t t, int P) {
  unsigned __int128 t2 = (unsigned __int128)t * t;
  uint64_t s = (uint64_t)ceil((double)t / sqrt((double)P));
  while (s > 1 && (unsigned __int128)(s - 1) * (s - 1) * (unsigned)P >= t2) s--;
  while ((unsigned __int128)s * s * (unsigned)P < t2) s++;
  return s;
}

/* Shared body: snap v to the grid of the TOTAL scale, add this rank's integer share. */
static int dpo__share_add(dpo_rng_t *rng, double scale, int gauss, int share, int nshares,
                          double *v, int64_t d) {
  double lam;
  if (!rng || (!v && d > 0) || d < 0)
    return dpo_err(DPO_EINVAL, "noise share: bad argument");
  if (nshares < 1 || share < 0 || share >= nshares)
    return dpo_err(DPO_EINVAL, "noise share: share %d of %d", share, nshares);
  int rc = dpo_mech_grid(scale, &lam);
  if (rc) return rc;
  uint64_t t = (uint64_t)ceil(scale / lam); /* exact, in (2^39, 2^40], as the central mechanism */
  for (int64_t i = 0; i < d; i++)
    if (!isfinite(v[i]) || !(fabs(v[i] / lam) < 0x1p100))
      return dpo_err(DPO_EINVAL, "noise share: v[%lld] = %g is not finite or too large for "
                     "noise scale %g", (long long)i, v[i], scale);
  uint64_t sz = gauss ? dpo__share_sigma(t, nshares) : 0;
  for (int64_t i = 0; i < d; i++) {
    __int128 n = (__int128)rint(v[i] / lam);
    int64_t K;
    rc = gauss ? dpo_mech_discrete_gaussian(rng, sz, &K)
               : dpo_mech_dlaplace_share(rng, t, share, nshares, &K);
    if (rc) return rc;
    v[i] = (double)(n + K) * lam; /* one rounding of the exact integer (post-processing) */
  }
  return DPO_OK;
}

int dpo_mech_laplace_share(dpo_rng_t *rng, double b, int share, int nshares, double *v,
                           int64_t d) {
  return dpo__share_add(rng, b, 0, share, nshares, v, d);
}

/* Gaussian: there is no exact-sum construction (the discrete Gaussian is not infinitely
 * divisible); each share is an exact discrete Gaussian N_Z(0, s^2) on the grid of sigma with
 * s = ceil(t / sqrt(P)), t = ceil(sigma / Lambda), and the SUM of the P shares is NOT a
 * discrete Gaussian: a charge for it must use Kairouz, Liu, Steinke 2021, "The distributed
 * discrete Gaussian mechanism for federated learning with secure aggregation", Thm 2 (with
 * its tau term).  No private algorithm of dpopt charges Gaussian shares today. */
int dpo_mech_gaussian_share(dpo_rng_t *rng, double sigma, int share, int nshares, double *v,
                            int64_t d) {
  return dpo__share_add(rng, sigma, 1, share, nshares, v, d);
}

const char *dpo_trust_coordinator_sees(dpo_trust_t t) {
  switch (t) {
  case DPO_TRUST_LOCAL:
    return "the coordinator sees only party sums noised by their own party; charges are not "
           "amplified by subsampling and hold against the coordinator";
  case DPO_TRUST_SHARES:
    return "the coordinator sees partial sums carrying only a share of the noise (no guarantee "
           "against it); charges are not amplified and hold for the released iterates";
  case DPO_TRUST_SECAGG:
    return "the coordinator sees only masked vectors (uniform mod 2^64) and their noised sum; "
           "charges are not amplified (but for Poisson batches every party draws from its own "
           "rows: dp-sgd-rdp, see the release plan) and hold against coalitions of up to "
           "privacy.collude parties";
  default:
    return "the coordinator sees the exact sums (trusted); charges hold against outsiders";
  }
}
