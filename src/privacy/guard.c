/* The party guard: each party prices the coordinator's secure-aggregation requests itself and
 * charges them to its own account before it contributes (see guard.h; doc/design.md, "Threat
 * model").  The prices are the ones secagg.c derives, computed from the party's own plan. */
#include "privacy/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpopt/comm.h" /* DPO_ONOISE_*: the noise kinds of the oracle's header */
#include "dpopt/parties.h"
#include "dpopt/status.h"
#include "rounding.h"

struct dpo_guard {
  dpo_guard_spec_t spec;
  dpo_ledger_t *acct; /* the party's own account (in memory) */
  int64_t releases;
  /* added to a disjoint pass's number: a reopened journal's passes are never continued.
   * The record of which rows a pass used (dpo__guard_pass, oracle.c) is this job's, so a
   * pass the killed job began could not be checked; its later batches count as a new pass */
  int64_t pass_base;
};

/* relative slack for the coordinator's rounding of the same price */
#define DPO__GUARD_TOL 1e-12

int dpo_party_journal_path(const char *dir, int K, char *journal, size_t n) {
  if ((size_t)snprintf(journal, n, "%s/ledger.party%d.jsonl", dir, K) >= n)
    return dpo_err(DPO_EINVAL, "party.%d.out = %s: path too long", K, dir);
  return DPO_OK;
}

int dpo_guard_journal_check(const char *dir, int k, int resuming, char *journal, size_t n) {
  struct stat st;
  int rc = dpo_party_journal_path(dir, k, journal, n);
  if (rc) return rc;
  if (!stat(dir, &st) && !S_ISDIR(st.st_mode))
    return dpo_err(DPO_EINVAL, "party.%d.out = %s: not a directory", k, dir);
  int have = !stat(journal, &st);
  if (!resuming && have)
    return dpo_err(DPO_EINVAL, "party.%d.out = %s already holds party %d's journal of another "
                   "run (%s): give a new directory, or --resume that run", k, dir, k, journal);
  if (resuming && !have)
    return dpo_err(DPO_EINVAL, "--resume: party %d's journal %s is missing (%s): give "
                   "party.%d.out = the directory of the run that is resumed", k, journal,
                   strerror(errno), k);
  return DPO_OK;
}

int dpo_party_store_journal(const dpo_parties_t *p, int k, char *journal, size_t n) {
  if (!p || k < 0 || k >= p->count || !journal || n < 1)
    return dpo_err(DPO_EINVAL, "party store journal: bad arguments");
  journal[0] = '\0';
  if (p->first_rank[k] == 0) return DPO_OK; /* the coordinator's party: its view is the account */
  if (!p->out[k])
    return dpo_err(DPO_EINVAL, "party %d keeps a budget store but no journal of its own on its "
                   "rank %d (no party.%d.out or parties.out): its store would be settled on the "
                   "coordinator's word alone; give the party its own run directory (refused: "
                   "nothing was written)", p->name ? p->name[k] : k, p->first_rank[k],
                   p->name ? p->name[k] : k);
  const int K = p->name ? p->name[k] : k; /* its journal is named by the party's name */
  return dpo_party_journal_path(p->out[k], K, journal, n);
}

int dpo_party_journal_rank(const dpo_parties_t *p, int k) {
  int r = p->first_rank[k] == 0 ? 1 : p->first_rank[k];
  return r < p->first_rank[k] + p->nranks_of[k] ? r : -1;
}

int dpo_journal_run_id(const char *path, char id[65]) {
  static const char tag[] = "\"event\":\"run_id ";
  char line[512];
  id[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return dpo_err(DPO_EIO, "%s: %s", path, strerror(errno));
  for (int n = 0; n < 4 && fgets(line, sizeof line, f); n++) { /* near the header */
    const char *t = strstr(line, tag);
    if (t && strspn(t + sizeof tag - 1, "0123456789abcdef") >= 64) {
      memcpy(id, t + sizeof tag - 1, 64);
      id[64] = '\0';
      break;
    }
  }
  fclose(f);
  return DPO_OK;
}

int dpo_guard_create(const dpo_guard_spec_t *spec, dpo_guard_t **out) {
  *out = NULL;
  /* local / shares price with the one sensitivity of the plan's noise (L1 Laplace, L2
   * Gaussian); secagg needs both (the Polya shares' L1, the discrete Gaussian's L2) */
  const int lg = spec && (spec->trust == DPO_TRUST_LOCAL || spec->trust == DPO_TRUST_SHARES);
  if (!spec || spec->parties < 1 || spec->collude < 0 || spec->collude >= spec->parties ||
      spec->d < 1 || (!(spec->S1 > 0) && !(lg && spec->gaussian)) ||
      (!(spec->S2 > 0) && !(lg && !spec->gaussian)) ||
      (spec->trust == DPO_TRUST_SHARES && spec->nranks < 1))
    return dpo_err(DPO_EINVAL, "party guard: bad plan (P %d, k %d, d %lld, S1 %g, S2 %g)",
                   spec ? spec->parties : 0, spec ? spec->collude : 0,
                   spec ? (long long)spec->d : 0LL, spec ? spec->S1 : 0, spec ? spec->S2 : 0);
  dpo_guard_t *g = calloc(1, sizeof *g);
  if (!g) return dpo_err(DPO_ENOMEM, "party guard: out of memory");
  g->spec = *spec;
  g->spec.accountant = g->spec.journal = g->spec.key_file = g->spec.run_id = NULL; /* the ledger copies them */
  /* MPI_COMM_NULL: this rank alone writes the journal (the party's own, not the coordinator's) */
  int rc = dpo_ledger_open_key(MPI_COMM_NULL, spec->eps, spec->delta, spec->journal,
                               spec->journal ? spec->resume : 0,
                               spec->accountant ? spec->accountant : "pld", spec->rel,
                               spec->key_file && spec->key_file[0] ? spec->key_file : NULL,
                               &g->acct);
  if (rc) {
    free(g);
    return rc;
  }
  /* a new journal says which run it accounts for (checked at a resume through the plan) */
  if (spec->journal && !spec->resume && spec->run_id && spec->run_id[0]) {
    char ev[96];
    snprintf(ev, sizeof ev, "run_id %.64s", spec->run_id);
    if ((rc = dpo_ledger_party_event(g->acct, ev, -1, -1))) {
      dpo_ledger_close(g->acct);
      free(g);
      return rc;
    }
  }
  /* every earlier job's pass numbers lie below (a pass has at most one charge a release) */
  if (spec->journal && spec->resume) g->pass_base = (dpo_ledger_count(g->acct) + 1) << 24;
  *out = g;
  return DPO_OK;
}

void dpo_guard_destroy(dpo_guard_t *g) {
  if (!g) return;
  dpo_ledger_close(g->acct);
  free(g);
}

int dpo_guard_spent(const dpo_guard_t *g, double *eps, double *delta, int64_t *releases) {
  if (!g) return dpo_err(DPO_EINVAL, "party guard: NULL");
  if (releases) *releases = g->releases;
  return dpo_ledger_spent(g->acct, eps, delta);
}

int dpo_guard_parts(const dpo_guard_t *g, dpo_ledger_parts_t *p) {
  if (!g) return dpo_err(DPO_EINVAL, "party guard: NULL");
  return dpo_ledger_parts(g->acct, p);
}

static int dpo__refuse(const dpo_guard_t *g, const char *what) {
  return dpo_err(DPO_EINVAL, "party %d refuses release %lld of the coordinator: %s; nothing "
                 "contributed, the round is withheld", g->spec.party,
                 (long long)g->releases + 1, what);
}

/* A charge of this party's next release: one release of its own d and relation, unsampled
 * (the caller sets the mechanism and, for a disjoint pass, the sampling). */
static void dpo__guard_charge_init(const dpo_guard_t *g, dpo_charge_t *c) {
  memset(c, 0, sizeof *c);
  c->dim = g->spec.d;
  c->m = c->n = 1;
  c->group = 1;
  c->step = g->releases;
  c->neighbours = g->spec.rel;
  c->sampling = DPO_SAMPLING_NONE;
}

/* The admitted release charged to the party's own account (journalled and synced first). */
static int dpo__guard_charge(dpo_guard_t *g, const dpo_charge_t *c) {
  char why[400];
  double charged = 0;
  int rc = dpo_ledger_charge(g->acct, c, &charged);
  if (rc == DPO_EBUDGET || (rc && rc != DPO_ENOMEM)) {
    snprintf(why, sizeof why, "its own account refuses the charge (%s)", dpo_errmsg());
    return dpo__refuse(g, why); /* an honest coordinator's ledger refuses first */
  }
  if (rc) return rc;
  g->releases++;
  return DPO_OK;
}

int dpo_guard_admit(dpo_guard_t *g, const dpo_guard_req_t *r) {
  const dpo_guard_spec_t *p = &g->spec;
  const int n = p->parties - p->collude; /* honest shares of this party's own plan */
  const double d = (double)p->d;
  char why[400];
  int e;
  if (!(r->gamma > 0) || !isfinite(r->gamma) || frexp(r->gamma, &e) != 0.5 || r->sigma < 1) {
    snprintf(why, sizeof why, "the announced fixed-point step %g / noise %llu is not a "
             "secure-aggregation encoding", r->gamma, (unsigned long long)r->sigma);
    return dpo__refuse(g, why);
  }
  if (!(r->claim > 0) || !isfinite(r->claim))
    return dpo__refuse(g, "the request names no charge for its noise");
  dpo_charge_t c;
  dpo__guard_charge_init(g, &c);
  if (r->lap_honest > 0) { /* pure eps: the honest Polya shares sum to the discrete Laplace(t) */
    if (r->lap_honest != n) {
      snprintf(why, sizeof why, "it announces noise shares for %lld honest parties; this "
               "party's plan (%d parties, privacy.collude = %d) has %d", (long long)r->lap_honest,
               p->parties, p->collude, n);
      return dpo__refuse(g, why);
    }
    /* secagg.c: Delta = Delta1/gamma + d in L1, eps = Delta / t */
    double D = dpo__add_up(dpo__div_up(p->S1, r->gamma), d);
    double price = dpo__div_up(D, (double)r->sigma);
    if (price > r->claim * (1 + DPO__GUARD_TOL)) {
      snprintf(why, sizeof why, "its noise (Laplace scale t = %llu at gamma = %g) costs eps = "
               "%.6g a release, more than the eps = %.6g its ledger charges",
               (unsigned long long)r->sigma, r->gamma, price, r->claim);
      return dpo__refuse(g, why);
    }
    c.mechanism = DPO_MECH_LAPLACE;
    c.eps = r->claim;
    c.noise_scale = r->gamma * (double)r->sigma;
    c.sensitivity = p->S1;
    c.accounting = DPO_ACCOUNTING_PURE;
  } else if (r->sn > 0) { /* party-local Poisson sampling: the subsampled Gaussian (secagg.c) */
    if (p->rel != DPO_NEIGHBOURS_ADD_REMOVE || !(r->sm >= 1 && r->sm <= r->sn) ||
        (p->public_n > 0 && r->sn != p->public_n)) {
      snprintf(why, sizeof why, "it announces party-local sampling at rate %lld/%lld; this "
               "party's plan has %s neighbours and public n = %lld", (long long)r->sm,
               (long long)r->sn, dpo_neighbours_name(p->rel), (long long)p->public_n);
      return dpo__refuse(g, why);
    }
    const double rn = nextafter(sqrt((double)n), 0);
    double sigma_h = dpo__mul_down(r->gamma * (double)r->sigma, rn);
    double sens = dpo__add_up(p->S2, dpo__mul_up(r->gamma, dpo__sqrt_up(d)));
    double z = sigma_h / sens;
    if (z < r->claim * (1 - DPO__GUARD_TOL)) {
      snprintf(why, sizeof why, "its noise (share sigma %llu at gamma = %g, %d honest shares) "
               "has multiplier %.6g, below the %.6g its ledger charges",
               (unsigned long long)r->sigma, r->gamma, n, z, r->claim);
      return dpo__refuse(g, why);
    }
    c.mechanism = DPO_MECH_GAUSSIAN;
    c.noise_scale = sigma_h;
    c.sensitivity = sens;
    c.sampling = DPO_SAMPLING_POISSON;
    c.accounting = DPO_ACCOUNTING_RDP;
    c.m = r->sm;
    c.n = r->sn;
  } else { /* distributed discrete Gaussian: Kairouz-Liu-Steinke 2021 Thm 1 with n shares */
    double D = dpo__add_up(dpo__div_up(p->S2, r->gamma), dpo__sqrt_up(d)), price = NAN;
    int rc = dpo_secagg_eps(D, (double)r->sigma, n, p->d, &price);
    if (rc) return dpo__refuse(g, "its noise cannot be priced");
    if (price > r->claim * (1 + DPO__GUARD_TOL)) {
      snprintf(why, sizeof why, "its noise (share sigma %llu at gamma = %g, %d honest shares) "
               "costs rho = %.6g a release, more than the rho = %.6g its ledger charges",
               (unsigned long long)r->sigma, r->gamma, n, price, r->claim);
      return dpo__refuse(g, why);
    }
    c.mechanism = DPO_MECH_RDP_RHO;
    c.rho = r->claim;
    c.accounting = DPO_ACCOUNTING_RDP;
    if (r->pass >= 0) /* parallel composition, within this job's passes only */
      c.sampling = DPO_SAMPLING_DISJOINT, c.group = g->pass_base + r->pass;
  }
  return dpo__guard_charge(g, &c);
}

/* The guard of privacy.trust = local and shares: the noise every rank adds to its own sum
 * (oracle_noise.c, dpo__local_noise) at the scale the header announces.  Local: each party's
 * release is its own noised sum, so its guarantee is that of its own mechanism whatever the other
 * parties do (independent of P - k): the exact grid Laplace of scale b on a sum of L1
 * sensitivity S1 costs eps = (S1 + d Lambda) / b (thesis Thm 4.1.2 with the snapped
 * sensitivity, dpo_mech_laplace_eps), the Gaussian of sigma on L2 sensitivity S2 the
 * multiplier z = sigma / S2 (its RDP, the ledger's; doc/privacy.md).  Shares: the shares of
 * all nshares ranks sum to one central noise of that scale, priced the same way; a share count
 * other than the party's own rank count would size every share for a sum that is not made. */
int dpo_guard_admit_local(dpo_guard_t *g, const dpo_guard_lreq_t *r) {
  const dpo_guard_spec_t *p = &g->spec;
  const int shares = p->trust == DPO_TRUST_SHARES;
  const int want = shares ? (p->gaussian ? DPO_ONOISE_SHARE_GAUSSIAN : DPO_ONOISE_SHARE_LAPLACE)
                          : (p->gaussian ? DPO_ONOISE_LOCAL_GAUSSIAN : DPO_ONOISE_LOCAL_LAPLACE);
  static const char *const kn[] = {"no", "local Laplace", "local Gaussian", "shared "
                                   "Laplace", "shared Gaussian", "secure-aggregation"};
  char why[400];
  if (p->trust != DPO_TRUST_LOCAL && !shares)
    return dpo_err(DPO_EINVAL, "party guard: not built for privacy.trust = local or shares");
  if (r->kind != want) {
    snprintf(why, sizeof why, "it asks for %s noise; this party's plan (privacy.trust = %s, %s "
             "noise) has %s", r->kind >= 0 && r->kind <= 5 ? kn[r->kind] : "unknown",
             dpo_trust_name(p->trust), p->gaussian ? "Gaussian" : "Laplace", kn[want]);
    return dpo__refuse(g, why);
  }
  if (shares && r->nshares != p->nranks) {
    snprintf(why, sizeof why, "it announces %lld noise shares; this party's plan has %d ranks, "
             "each adding one", (long long)r->nshares, p->nranks);
    return dpo__refuse(g, why);
  }
  if (!(r->scale > 0) || !isfinite(r->scale) || !(r->claim > 0) || !isfinite(r->claim)) {
    snprintf(why, sizeof why, "the request names no usable noise scale (%g) or charge (%g)",
             r->scale, r->claim);
    return dpo__refuse(g, why);
  }
  dpo_charge_t c;
  dpo__guard_charge_init(g, &c);
  c.noise_scale = r->scale;
  if (!p->gaussian) {
    double price = NAN;
    if (dpo_mech_laplace_eps(p->S1, r->scale, p->d, &price))
      return dpo__refuse(g, "its noise cannot be priced");
    if (price > r->claim * (1 + DPO__GUARD_TOL)) {
      snprintf(why, sizeof why, "its noise (Laplace scale %.6g on the sum) costs eps = %.6g a "
               "release, more than the eps = %.6g its ledger charges", r->scale, price, r->claim);
      return dpo__refuse(g, why);
    }
    c.mechanism = DPO_MECH_LAPLACE;
    c.eps = r->claim; /* not below the price (checked): the coordinator's charge */
    c.sensitivity = p->S1;
    c.accounting = DPO_ACCOUNTING_PURE;
  } else {
    const double z = r->scale / p->S2;
    if (z < r->claim * (1 - DPO__GUARD_TOL)) {
      snprintf(why, sizeof why, "its noise (Gaussian sigma %.6g on the sum) has multiplier "
               "%.6g, below the %.6g its ledger charges", r->scale, z, r->claim);
      return dpo__refuse(g, why);
    }
    c.mechanism = DPO_MECH_GAUSSIAN; /* what runs, on the party's own sensitivity */
    c.sensitivity = p->S2;
    c.accounting = DPO_ACCOUNTING_RDP;
  }
  if (r->pass >= 0) /* parallel composition, within this job's passes only */
    c.sampling = DPO_SAMPLING_DISJOINT, c.group = g->pass_base + r->pass;
  return dpo__guard_charge(g, &c);
}

/* ---------------------------------------------------------------- the plan */

/* The value of `key` in a plan text ("key = value" lines), or NULL; *len its length. */
static const char *dpo__plan_value(const char *text, const char *key, size_t klen, size_t *len) {
  for (const char *l = text; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t n = e ? (size_t)(e - l) : strlen(l);
    if (n > klen + 3 && !memcmp(l, key, klen) && !memcmp(l + klen, " = ", 3)) {
      *len = n - klen - 3;
      return l + klen + 3;
    }
    l = e ? e + 1 : NULL;
  }
  return NULL;
}

/* The first key whose value differs between this party's plan `a` and the coordinator's `b`
 * (or that only one of them has), named with both values. */
static void dpo__first_diff(const char *a, const char *b, char *out, size_t len) {
  for (int pass = 0; pass < 2; pass++) {
    const char *x = pass ? b : a, *y = pass ? a : b;
    for (const char *l = x; l && *l;) {
      const char *e = strchr(l, '\n'), *eq = strstr(l, " = ");
      size_t n = e ? (size_t)(e - l) : strlen(l);
      if (eq && eq < l + n) {
        size_t klen = (size_t)(eq - l), vx = n - klen - 3, vy = 0;
        const char *v = dpo__plan_value(y, l, klen, &vy);
        if (!v || vy != vx || memcmp(v, eq + 3, vx)) {
          const char *vh = pass ? v : eq + 3, *vc = pass ? eq + 3 : v;
          size_t nh = pass ? vy : vx, nc = pass ? vx : vy;
          snprintf(out, len, "%.*s is %s%.*s%s here, %s%.*s%s at the coordinator",
                   (int)(klen > 80 ? 80 : klen), l, vh ? "'" : "", vh ? (int)(nh > 80 ? 80 : nh)
                   : 5, vh ? vh : "unset", vh ? "'" : "", vc ? "'" : "",
                   vc ? (int)(nc > 80 ? 80 : nc) : 5, vc ? vc : "unset", vc ? "'" : "");
          return;
        }
      }
      l = e ? e + 1 : NULL;
    }
  }
  snprintf(out, len, "the texts hold the same settings but their digests differ");
}

int dpo_plan_agree(MPI_Comm comm, const char *plan, unsigned char digest[32]) {
  int rank = 0, size = 1, rc = DPO_OK;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  unsigned char mine[32], *all = malloc((size_t)size * 32);
  if (sodium_init() < 0) rc = dpo_err(DPO_EUNSUP, "libsodium failed to initialize");
  crypto_generichash(mine, sizeof mine, (const unsigned char *)plan, strlen(plan), NULL, 0);
  if (digest) memcpy(digest, mine, sizeof mine);
  if (!all) return dpo_agree(comm, dpo_err(DPO_ENOMEM, "plan: out of memory"));
  if (MPI_Allgather(mine, 32, MPI_BYTE, all, 32, MPI_BYTE, comm) != MPI_SUCCESS)
    rc = dpo_err(DPO_EMPI, "plan: MPI_Allgather failed");
  int differ = 0, me_differs = 0;
  for (int r = 0; r < size && !rc; r++)
    if (memcmp(all + 32 * r, all, 32)) differ = 1, me_differs |= r == rank;
  free(all);
  rc = dpo_agree(comm, rc);
  if (rc || !differ) return rc;
  /* name the difference: rank 0's text to everyone (the digests already decided) */
  long long len = rank == 0 ? (long long)strlen(plan) : 0;
  MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm);
  char *text = rank == 0 ? (char *)plan : calloc((size_t)len + 1, 1);
  int ok = text != NULL, allok = 0;
  MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, comm);
  if (allok) MPI_Bcast(text, (int)len, MPI_CHAR, 0, comm);
  char what[400] = "";
  unsigned char theirs[32];
  if (allok && rank != 0) {
    crypto_generichash(theirs, sizeof theirs, (const unsigned char *)text, (size_t)len, NULL, 0);
    if (memcmp(theirs, mine, 32)) dpo__first_diff(plan, text, what, sizeof what);
  } else if (me_differs) {
    snprintf(what, sizeof what, "(the coordinator's plan could not be received to name the "
             "difference)");
  }
  if (rank != 0) free(text);
  /* the ranks whose plan differs from the coordinator's fail (rank 0 never does, so the first
   * failing rank names the difference in the agreed message) */
  int st = what[0] ? dpo_err(DPO_EINVAL, "the parties do not agree on the plan (rank %d's "
                             "digest differs from the coordinator's): %s; nothing was released",
                             rank, what)
                   : DPO_OK;
  return dpo_agree(comm, st);
}

/* ---------------------------------------------------------------- party identity keys */

static void dpo__hex(const unsigned char *b, size_t n, char *out) {
  sodium_bin2hex(out, 2 * n + 1, b, n);
}

static int dpo__unhex(const char *s, unsigned char *b, size_t n) {
  size_t got = 0;
  const char *end = NULL;
  if (sodium_hex2bin(b, n, s, strlen(s), " \t\r\n", &got, &end) != 0 || got != n) return -1;
  while (end && *end && strchr(" \t\r\n", *end)) end++;
  return end && *end ? -1 : 0;
}

int dpo_party_key_create(const char *path) {
  if (!path || !path[0]) return dpo_err(DPO_EINVAL, "party-key: no path");
  if (sodium_init() < 0) return dpo_err(DPO_EUNSUP, "libsodium failed to initialize");
  char pub[4096];
  if (snprintf(pub, sizeof pub, "%s.pub", path) >= (int)sizeof pub)
    return dpo_err(DPO_EINVAL, "party-key: path too long");
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  char hsk[2 * sizeof sk + 1], hpk[2 * sizeof pk + 1];
  crypto_sign_keypair(pk, sk);
  dpo__hex(sk, sizeof sk, hsk);
  dpo__hex(pk, sizeof pk, hpk);
  sodium_memzero(sk, sizeof sk);
  int rc = DPO_OK;
  /* never overwrite a key: a party's identity is what the others list */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (fd < 0) rc = dpo_err(DPO_EIO, "party-key: cannot create %s: %s", path, strerror(errno));
  else {
    char buf[sizeof hsk + 64];
    int n = snprintf(buf, sizeof buf, "dpopt party key 1\n%s\n", hsk);
    if (write(fd, buf, (size_t)n) != n || fsync(fd) != 0)
      rc = dpo_err(DPO_EIO, "party-key: cannot write %s: %s", path, strerror(errno));
    sodium_memzero(buf, sizeof buf);
    close(fd);
  }
  sodium_memzero(hsk, sizeof hsk);
  if (!rc) {
    FILE *f = fopen(pub, "wx");
    if (!f || fprintf(f, "%s\n", hpk) < 0 || fclose(f) != 0) {
      rc = dpo_err(DPO_EIO, "party-key: cannot create %s: %s", pub, strerror(errno));
      unlink(path);
    }
  }
  return rc;
}

int dpo_party_key_load(const char *path, unsigned char sk[64]) {
  struct stat st;
  char buf[512] = "";
  int fd = open(path, O_RDONLY | O_NOFOLLOW);
  if (fd < 0) return dpo_err(DPO_EIO, "party key %s: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0 || (st.st_mode & 077)) {
    close(fd);
    return dpo_err(DPO_EINVAL, "party key %s: readable by others (mode %o): chmod 600 it", path,
                   (unsigned)(st.st_mode & 0777));
  }
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  const char *hdr = "dpopt party key 1\n";
  int bad = n <= 0 || strncmp(buf, hdr, strlen(hdr)) ||
            dpo__unhex(buf + strlen(hdr), sk, crypto_sign_SECRETKEYBYTES);
  sodium_memzero(buf, sizeof buf);
  if (bad)
    return dpo_err(DPO_EFORMAT, "party key %s: not a key written by dpopt party-key", path);
  return DPO_OK;
}

int dpo_party_pub_parse(const char *hex, unsigned char pk[32]) {
  if (!hex || dpo__unhex(hex, pk, crypto_sign_PUBLICKEYBYTES))
    return dpo_err(DPO_EINVAL, "'%s' is not a party public key (64 hex digits, the .pub file "
                   "dpopt party-key writes)", hex ? hex : "");
  return DPO_OK;
}
