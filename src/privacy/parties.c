/* Multi-party runs: the party table from the configuration, trust-mode descriptions, and the
 * noise shares of the `shares` trust mode (see include/dpopt/parties.h). */
#include "dpopt/parties.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"

void dpo_parties_destroy(dpo_parties_t *p) {
  if (!p) return;
  if (p->data)
    for (int k = 0; k < p->count; k++) free(p->data[k]);
  free(p->data);
  free(p->rank_party);
  free(p->first_rank);
  free(p->nranks_of);
  free(p->eps);
  free(p->delta);
  free(p->dropped_step);
  free(p);
}

const char *dpo_trust_name(dpo_trust_t t) {
  return t == DPO_TRUST_LOCAL ? "local" : t == DPO_TRUST_SHARES ? "shares" : "central";
}

const char *dpo_trust_protects(dpo_trust_t t) {
  switch (t) {
  case DPO_TRUST_LOCAL:
    return "local: every party noises its own contribution against its own budget before the "
           "reduce, so the coordinator and the other parties never receive an un-noised value "
           "of a party; it protects against an honest-but-curious coordinator, at the price of "
           "P times the central noise variance; it does not protect a party against itself or "
           "against a coordinator that changes the query points adaptively beyond the charged "
           "releases.";
  case DPO_TRUST_SHARES:
    return "shares: every rank adds a share of the central noise (Gaussian s^2/P, Laplace as "
           "differences of Gamma(1/P, b)), so the released sum carries exactly the central "
           "noise and outsiders see a central-level release; without secure aggregation the "
           "coordinator sees the individual partial sums, whose noise is only a 1/P share: "
           "they are NOT private at the central level, and parties that collude can subtract "
           "their own shares.";
  default:
    return "central: the coordinator (rank 0) is trusted; it receives the exact sum of the "
           "parties' gradients and adds the noise once, which protects the released iterates "
           "against everyone outside the run but not against the coordinator itself.";
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

int dpo_parties_from_config(const dpo_config_t *cfg, int nranks, dpo_parties_t **out) {
  int rc = DPO_OK;
  dpo_parties_t *p = NULL;
  const char *trust = "central", *pol = "stop", *pat = NULL;
  int64_t count = 0;
  double geps = NAN, gdelta = 0.0;
  char key[128];
  *out = NULL;
  if (!cfg || nranks < 1) return dpo_err(DPO_EINVAL, "parties: NULL config or no ranks");
  dpo_config_get_str(cfg, "privacy.trust", "central", &trust);
  dpo_config_get_str(cfg, "privacy.on_party_exhausted", "stop", &pol);
  dpo_config_get_str(cfg, "parties.data", NULL, &pat);
  if ((rc = dpo_config_get_int(cfg, "parties.count", 0, &count)) ||
      (rc = dpo_config_get_double(cfg, "privacy.eps", NAN, &geps)) ||
      (rc = dpo_config_get_double(cfg, "privacy.delta", 0.0, &gdelta)) ||
      (rc = dpo_config_get_double(cfg, "parties.eps", geps, &geps)) ||
      (rc = dpo_config_get_double(cfg, "parties.delta", gdelta, &gdelta)))
    return rc;
  dpo_trust_t tm;
  if (!strcasecmp(trust, "central")) tm = DPO_TRUST_CENTRAL;
  else if (!strcasecmp(trust, "local")) tm = DPO_TRUST_LOCAL;
  else if (!strcasecmp(trust, "shares")) tm = DPO_TRUST_SHARES;
  else
    return dpo_err(DPO_EINVAL, "%s: privacy.trust = '%s': expected central, local or shares",
                   dpo_config_origin(cfg, "privacy.trust"), trust);
  dpo_exhaust_t ex;
  if (!strcasecmp(pol, "stop")) ex = DPO_EXHAUST_STOP;
  else if (!strcasecmp(pol, "drop")) ex = DPO_EXHAUST_DROP;
  else
    return dpo_err(DPO_EINVAL, "%s: privacy.on_party_exhausted = '%s': expected stop or drop",
                   dpo_config_origin(cfg, "privacy.on_party_exhausted"), pol);
  int declared = count != 0;
  if (!declared && tm == DPO_TRUST_CENTRAL) {
    if (pat)
      return dpo_err(DPO_EINVAL, "%s: parties.data needs parties.count",
                     dpo_config_origin(cfg, "parties.data"));
    return DPO_OK;
  }
  if (!declared) count = nranks; /* local / shares: one party per rank */
  if (count < 1 || count > nranks)
    return dpo_err(DPO_EINVAL, "%s: parties.count = %lld: need 1 <= count <= ranks (%d): a party "
                   "is one or more ranks", dpo_config_origin(cfg, "parties.count"),
                   (long long)count, nranks);
  if (!(p = calloc(1, sizeof *p))) return dpo_err(DPO_ENOMEM, "parties: out of memory");
  p->count = (int)count;
  p->nranks = nranks;
  p->trust = tm;
  p->on_exhausted = ex;
  p->declared = declared;
  p->rank_party = malloc((size_t)nranks * sizeof *p->rank_party);
  p->first_rank = calloc((size_t)count, sizeof *p->first_rank);
  p->nranks_of = calloc((size_t)count, sizeof *p->nranks_of);
  p->eps = calloc((size_t)count, sizeof *p->eps);
  p->delta = calloc((size_t)count, sizeof *p->delta);
  p->data = calloc((size_t)count, sizeof *p->data);
  p->dropped_step = malloc((size_t)count * sizeof *p->dropped_step);
  if (!p->rank_party || !p->first_rank || !p->nranks_of || !p->eps || !p->delta || !p->data ||
      !p->dropped_step) {
    rc = dpo_err(DPO_ENOMEM, "parties: out of memory");
    goto fail;
  }
  /* default ranks: P balanced contiguous blocks */
  for (int k = 0; k < p->count; k++) {
    int64_t a = (int64_t)k * nranks / count, b = (int64_t)(k + 1) * nranks / count;
    p->dropped_step[k] = -1;
    p->first_rank[k] = (int)a;
    p->nranks_of[k] = (int)(b - a);
  }
  int next = 0;
  for (int k = 0; k < p->count; k++) {
    const char *rs = NULL, *ds = NULL;
    snprintf(key, sizeof key, "party.%d.ranks", k);
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
                   "consecutive blocks of ranks in order (party.K.ranks)", k, p->first_rank[k], next);
      goto fail;
    }
    next += p->nranks_of[k];
    snprintf(key, sizeof key, "party.%d.eps", k);
    if ((rc = dpo_config_get_double(cfg, key, geps, &p->eps[k]))) goto fail;
    snprintf(key, sizeof key, "party.%d.delta", k);
    if ((rc = dpo_config_get_double(cfg, key, gdelta, &p->delta[k]))) goto fail;
    snprintf(key, sizeof key, "party.%d.data", k);
    dpo_config_get_str(cfg, key, NULL, &ds);
    char buf[1024];
    if (!ds && pat) {
      const char *pc = strstr(pat, "%d");
      if (!pc || strchr(pc + 2, '%') || strchr(pat, '%') != pc) {
        rc = dpo_err(DPO_EINVAL, "%s: parties.data = '%s' must contain exactly one %%d",
                     dpo_config_origin(cfg, "parties.data"), pat);
        goto fail;
      }
      snprintf(buf, sizeof buf, pat, k);
      ds = buf;
    }
    if (ds && !(p->data[k] = strdup(ds))) {
      rc = dpo_err(DPO_ENOMEM, "parties: out of memory");
      goto fail;
    }
    if (!(p->delta[k] >= 0 && p->delta[k] < 1) || (!isnan(p->eps[k]) && !(p->eps[k] > 0))) {
      rc = dpo_err(DPO_EINVAL, "party %d: budget eps = %g, delta = %g: need eps > 0, delta in "
                   "[0, 1)", k, p->eps[k], p->delta[k]);
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
  int some = 0, all = 1;
  for (int k = 0; k < p->count; k++) {
    some |= p->data[k] != NULL;
    all &= p->data[k] != NULL;
  }
  if (some && !all) {
    rc = dpo_err(DPO_EINVAL, "parties: either every party names its data (parties.data or "
                 "party.K.data) or none does");
    goto fail;
  }
  if (!some) {
    for (int k = 0; k < p->count; k++) {
      free(p->data[k]);
      p->data[k] = NULL;
    }
  }
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

int dpo_mech_laplace_share(dpo_rng_t *rng, double b, int nshares, double *v, int64_t d) {
  if (!rng || (!v && d > 0) || d < 0) return dpo_err(DPO_EINVAL, "laplace_share: bad argument");
  if (nshares < 1) return dpo_err(DPO_EINVAL, "laplace_share: %d shares", nshares);
  if (!(b > 0) || !isfinite(b)) return dpo_err(DPO_EINVAL, "laplace_share: scale %g", b);
  double a = 1.0 / nshares;
  for (int64_t i = 0; i < d; i++) {
    double g1, g2;
    int rc = dpo_mech_gamma_sample(rng, a, b, &g1);
    if (!rc) rc = dpo_mech_gamma_sample(rng, a, b, &g2);
    if (rc) return rc;
    v[i] += g1 - g2;
  }
  return DPO_OK;
}

int dpo_mech_gaussian_share(dpo_rng_t *rng, double sigma, int nshares, double *v, int64_t d) {
  if (nshares < 1) return dpo_err(DPO_EINVAL, "gaussian_share: %d shares", nshares);
  return dpo_mech_gaussian(rng, sigma / sqrt((double)nshares), v, d);
}
