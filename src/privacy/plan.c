/* The public plan's canonical text and the parties' authenticated key agreement under secure
 * aggregation (privacy/guard.h; doc/design.md, "Threat model"): shared by dpopt train
 * (run_parties.c) and dpopt admm (admm_run.c), so both agree on a plan the same way and sign
 * their per-run keys the same way. */
#include "privacy/guard.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/config.h"
#include "dpopt/status.h"

struct dpo_plantext {
  char **lines;
  int n, cap;
  const char *const *pre; /* with dpo_plantext_config: the key prefixes of the plan */
  int npre;
};

dpo_plantext_t *dpo_plantext_new(void) { return calloc(1, sizeof(dpo_plantext_t)); }

void dpo_plantext_add(dpo_plantext_t *pl, const char *key, const char *value) {
  if (!pl) return;
  if (pl->n == pl->cap) {
    int cap = pl->cap ? 2 * pl->cap : 64;
    char **l = realloc(pl->lines, (size_t)cap * sizeof *l);
    if (!l) return; /* the plan then lacks the line: its digest differs, the run stops */
    pl->lines = l, pl->cap = cap;
  }
  /* a number in one spelling (1, 1.0 and 1e0 are one plan) */
  char num[64], *end = NULL;
  double v = strtod(value, &end);
  if (end && end != value && !*end) snprintf(num, sizeof num, "%.17g", v), value = num;
  size_t len = strlen(key) + strlen(value) + 5;
  if ((pl->lines[pl->n] = malloc(len))) snprintf(pl->lines[pl->n++], len, "%s = %s\n", key, value);
}

/* the configuration keys that are the public plan: what is run on which data schema, with
 * which budget, noise and party table (not local paths: data files, the parties' own run
 * directories, the journal key).  dpopt admm's output paths are in it: its model output is
 * written by rank 0 with every rank's agreement, so ranks that differ in it must stop before
 * the run, not in it */
static void dpo__plan_key(const char *key, const char *value, const char *origin, void *arg) {
  (void)origin;
  dpo_plantext_t *pl = arg;
  static const char *const data[] = {"data.dim", "data.labels", "data.row_l1_bound",
                                     "data.row_l2_bound", "data.row_bound_action", "run.seed"};
  int in = 0;
  for (int i = 0; i < pl->npre; i++) in |= !strncmp(key, pl->pre[i], strlen(pl->pre[i]));
  for (size_t i = 0; i < sizeof data / sizeof *data; i++) in |= !strcmp(key, data[i]);
  const char *dot = strrchr(key, '.');
  if (dot && !strcmp(dot, ".journal_key")) return; /* a local path to a secret */
  if (dot && (!strcmp(dot, ".data") || !strcmp(dot, ".key") || !strcmp(dot, ".budget_store") ||
              !strcmp(dot, ".out")) &&
      (!strncmp(key, "parties.", 8) || !strncmp(key, "party.", 6)))
    in = 0;
  if (in) dpo_plantext_add(pl, key, value);
}

void dpo_plantext_config(dpo_plantext_t *pl, const dpo_config_t *cfg,
                         const char *const *prefixes, int n) {
  if (!pl) return;
  pl->pre = prefixes;
  pl->npre = n;
  dpo_config_foreach(cfg, dpo__plan_key, pl);
}

static int dpo__plan_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char *dpo_plantext_finish(dpo_plantext_t *pl) {
  if (!pl) return NULL;
  qsort(pl->lines, (size_t)pl->n, sizeof *pl->lines, dpo__plan_cmp);
  size_t len = 1;
  for (int i = 0; i < pl->n; i++) len += strlen(pl->lines[i]);
  char *text = malloc(len);
  if (text) {
    text[0] = 0;
    for (int i = 0; i < pl->n; i++) strcat(text, pl->lines[i]);
  }
  for (int i = 0; i < pl->n; i++) free(pl->lines[i]);
  free(pl->lines);
  free(pl);
  return text;
}

int dpo_plan_secagg(const dpo_config_t *cfg, MPI_Comm comm, int nparties, const int *rank_party,
                    const int *names, int adds, dpo_rng_t *rng, const unsigned char digest[32],
                    dpo_secagg_t **sa) {
  int r = 0, nranks = 1;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &nranks);
  const int k = rank_party[r], K = names ? names[k] : k; /* keys are named by the party's name */
  char key[48], path[2048];
  int rc = DPO_OK, listed = 0;
  unsigned char *pks = calloc((size_t)nranks, 32), sk[64], nonce[32];
  unsigned char *ppk = calloc((size_t)nparties, 32);
  if (!pks || !ppk) rc = dpo_err(DPO_ENOMEM, "out of memory");
  for (int j = 0; j < nparties && !rc; j++) {
    snprintf(key, sizeof key, "party.%d.public_key", names ? names[j] : j);
    const char *v = dpo_config_get(cfg, key);
    if (v) listed++, rc = dpo_party_pub_parse(v, ppk + 32 * j);
    if (rc) {
      char why[300];
      snprintf(why, sizeof why, "%s", dpo_errmsg());
      rc = dpo_err(rc, "%s: %s: %s", dpo_config_origin(cfg, key), key, why);
    }
  }
  if (!rc && listed && listed != nparties)
    rc = dpo_err(DPO_EINVAL, "%d of %d parties list an identity key (party.K.public_key): list "
                 "one for every party, or none", listed, nparties);
  if (!rc && listed) { /* this rank's party's secret key */
    const char *kp = NULL;
    snprintf(key, sizeof key, "party.%d.key", K);
    if (!(kp = dpo_config_get(cfg, key))) {
      const char *pat = dpo_config_get(cfg, "parties.key");
      if (pat && strstr(pat, "%d")) {
        const char *at = strstr(pat, "%d");
        snprintf(path, sizeof path, "%.*s%d%s", (int)(at - pat), pat, K, at + 2);
        kp = path;
      } else {
        kp = pat;
      }
    }
    if (!kp)
      rc = dpo_err(DPO_EINVAL, "the parties list identity keys, but party %d has no secret key "
                   "here: give party.%d.key (or parties.key with %%d) = the file dpopt party-key "
                   "wrote", K, K);
    else if (!(rc = dpo_party_key_load(kp, sk)) && memcmp(sk + 32, ppk + 32 * k, 32))
      rc = dpo_err(DPO_EINVAL, "the key %s is not party %d's: its public half differs from "
                   "party.%d.public_key", kp, K, K);
  }
  rc = dpo_agree(comm, rc);
  if (!rc && listed) {
    int *rname = malloc((size_t)nranks * sizeof *rname); /* messages name parties by name */
    for (int s = 0; s < nranks; s++) {
      memcpy(pks + 32 * s, ppk + 32 * rank_party[s], 32);
      if (rname) rname[s] = names ? names[rank_party[s]] : rank_party[s];
    }
    dpo_secagg_auth_t au = {sk, pks, rname, digest, nonce};
    rc = dpo_secagg_create_auth(comm, adds, rng, &au, sa);
    free(rname);
  } else if (!rc) {
    rc = dpo_secagg_create(comm, adds, rng, sa);
  }
  sodium_memzero(sk, sizeof sk);
  free(pks);
  free(ppk);
  return rc;
}
