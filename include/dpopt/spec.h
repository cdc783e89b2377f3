/* The privacy specification of a run: every privacy.* setting of `dpopt train` (and of a
 * program embedding the run API) as enums and numbers, parsed and checked once, in src/run/
 * (dpo_privacy_spec_from_config).  Below the run nothing reads a privacy.* key: the solver, its
 * algorithms (dpo_solver_privacy) and the parties' table (dpo_parties_from_config) are handed
 * this struct.  A program that has no INI file (bindings, another front end) fills it itself:
 * dpo_privacy_spec_default, then the fields, and dpo_privacy_spec_set for each one it sets (the
 * checks that "a key was given" follow the `given` bits).  Messages still name the key
 * (privacy.eps = ...) and where its value came from (origin). */
#ifndef DPOPT_SPEC_H
#define DPOPT_SPEC_H

#include <stdint.h>

#include "dpopt/config.h"
#include "dpopt/kernels.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"

/* The settings, one bit each in dpo_privacy_spec_t.given. */
typedef enum {
  DPO_SPEC_EPS = 0,          /* privacy.eps */
  DPO_SPEC_DELTA,            /* privacy.delta */
  DPO_SPEC_NEIGHBOURS,       /* privacy.neighbours */
  DPO_SPEC_ACCOUNTANT,       /* privacy.accountant */
  DPO_SPEC_TRUST,            /* privacy.trust */
  DPO_SPEC_CALIBRATE,        /* privacy.calibrate */
  DPO_SPEC_CLIP,             /* privacy.clip */
  DPO_SPEC_PUBLIC_N,         /* privacy.public_n */
  DPO_SPEC_COUNT_EPS,        /* privacy.count_eps */
  DPO_SPEC_ON_EXHAUSTED,     /* privacy.on_party_exhausted */
  DPO_SPEC_COLLUDE,          /* privacy.collude */
  DPO_SPEC_TRUST_COORDINATOR, /* privacy.trust_coordinator */
  /* dpopt admm's (Xu et al. 2020) and its audit's */
  DPO_SPEC_SIGMA_RULE,       /* privacy.sigma_rule */
  DPO_SPEC_MU,               /* privacy.mu */
  DPO_SPEC_SIGMA,            /* privacy.sigma */
  /* dpopt admm's files (a training run keeps its journal in its run directory) */
  DPO_SPEC_JOURNAL,          /* privacy.journal */
  DPO_SPEC_JOURNAL_KEY,      /* privacy.journal_key */
  DPO_SPEC_STORE,            /* privacy.store */
  DPO_SPEC_NKEYS
} dpo_spec_key_t;

/* Which command's settings to read: each reads only the keys it uses, so a key the command
 * does not use stays unread and is refused as such (dpo_config_check_known).
 *  TRAIN       the run API, dpopt train / tune: the keys eps .. trust_coordinator
 *  AUDIT       dpopt audit of a training algorithm: the same
 *  AUDIT_ADMM  dpopt audit --admm: eps, delta, neighbours, accountant, clip, sigma_rule, mu,
 *              sigma
 *  ADMM        dpopt admm: eps, delta, trust, accountant, collude, clip (a number C: the L2
 *              clip), sigma_rule, mu, sigma, journal, journal_key, store */
typedef enum {
  DPO_SPEC_FOR_TRAIN = 0,
  DPO_SPEC_FOR_AUDIT = 1,
  DPO_SPEC_FOR_AUDIT_ADMM = 2,
  DPO_SPEC_FOR_ADMM = 3
} dpo_spec_for_t;

/* DP-ADMM's noise (Xu et al. 2020): EQ8 their Thm 1 (eq. (8)), RDP the RDP calibration, LEDGER
 * the smallest sigma the run's ledger accepts for all releases. */
typedef enum { DPO_SIGMA_EQ8 = 0, DPO_SIGMA_RDP = 1, DPO_SIGMA_LEDGER = 2 } dpo_sigma_rule_t;
/* "eq8" | "rdp" | "ledger" */
const char *dpo_sigma_rule_name(dpo_sigma_rule_t r);

/* How the DP-GD family splits its budget over the steps: LEDGER scales the per-step budgets
 * to the ledger's composition, BASIC is the papers' eps/T split. */
typedef enum { DPO_CALIBRATE_LEDGER = 0, DPO_CALIBRATE_BASIC = 1 } dpo_calibrate_t;

typedef struct dpo_privacy_spec {
  double eps;                  /* NAN: no budget given */
  double delta;                /* 0 */
  dpo_neighbours_t rel;        /* replace-one */
  dpo_acct_t accountant;       /* pld */
  dpo_trust_t trust;           /* central */
  dpo_calibrate_t calibrate;   /* ledger */
  dpo_clip_t clip;             /* norm DPO_CLIP_NONE: no clipping */
  int64_t public_n;            /* the declared public data set size (range checked where used) */
  double count_eps;            /* NAN: eps / 100, the noisy row count's share under add-remove */
  dpo_exhaust_t on_exhausted;  /* stop */
  int64_t collude;             /* -1: the default (1 with several parties, else 0) */
  int trust_coordinator;       /* 0 */
  dpo_sigma_rule_t sigma_rule; /* eq8 */
  double mu;                   /* 0.5: the split of Xu et al. 2020, Thm 1 */
  double sigma;                /* 0: calibrate; > 0 a fixed noise std */
  /* dpopt admm's files (borrowed from the config; NULL: none) */
  const char *journal, *journal_key, *store;
  unsigned given;              /* bit DPO_SPEC_*: the setting was given */
  char origin[DPO_SPEC_NKEYS][96]; /* where each given setting came from ("run.ini:12", "--eps") */
} dpo_privacy_spec_t;

/* Defaults: nothing given (no budget, replace-one, pld, central, no clipping). */
void dpo_privacy_spec_default(dpo_privacy_spec_t *s);
/* Not collective: read and check the privacy.* settings of command `what` from cfg (values that
 * do not parse, unknown names, a malformed clip: DPO_EINVAL naming the origin).  Reads no other
 * key.  On error *s holds the defaults. */
int dpo_privacy_spec_read(const dpo_config_t *cfg, dpo_spec_for_t what, dpo_privacy_spec_t *s);
/* dpo_privacy_spec_read(cfg, DPO_SPEC_FOR_TRAIN, s): what the run API reads. */
int dpo_privacy_spec_from_config(const dpo_config_t *cfg, dpo_privacy_spec_t *s);
/* Mark k given, from origin (NULL: the key's name). */
void dpo_privacy_spec_set(dpo_privacy_spec_t *s, dpo_spec_key_t k, const char *origin);
int dpo_privacy_spec_given(const dpo_privacy_spec_t *s, dpo_spec_key_t k);
/* Where k came from, or its key name ("privacy.collude") when it was not given. */
const char *dpo_privacy_spec_origin(const dpo_privacy_spec_t *s, dpo_spec_key_t k);
/* "privacy.eps", ... */
const char *dpo_privacy_spec_key(dpo_spec_key_t k);

#endif
