/* The ledger journal read back: line-by-line verification, recomputation of every total from
 * the charges (resume), and the human-readable account printed by `dpopt ledger RUN`.  The
 * journal format is described at the top of ledger.c. */
#include "ledger_int.h"

#include "dpopt/status.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ JSON helpers */

json_object *dpo__jd(double x) {
  if (!isfinite(x)) return NULL; /* written as null: JSON has no NaN / Infinity */
  char b[40];
  snprintf(b, sizeof b, "%.17g", x); /* round-trips every double */
  return json_object_new_double_s(x, b);
}

int dpo__jget_d(json_object *o, const char *k, double *v) {
  json_object *x;
  if (!json_object_object_get_ex(o, k, &x)) return 0;
  if (!json_object_is_type(x, json_type_double) && !json_object_is_type(x, json_type_int))
    return 0;
  *v = json_object_get_double(x);
  return isfinite(*v);
}

int dpo__jget_i(json_object *o, const char *k, int64_t *v) {
  json_object *x;
  if (!json_object_object_get_ex(o, k, &x) || !json_object_is_type(x, json_type_int)) return 0;
  *v = json_object_get_int64(x);
  return 1;
}

const char *dpo__jget_s(json_object *o, const char *k) {
  json_object *x;
  if (!json_object_object_get_ex(o, k, &x) || !json_object_is_type(x, json_type_string))
    return NULL;
  return json_object_get_string(x);
}

/* ------------------------------------------------------------ replay */

void dpo__free_pstates(const dpo__acct_ops_t *ops, int n, void **ps) {
  (void)ops;
  if (!ps) return;
  for (int k = 0; k < n; k++) free(ps[k]);
  free(ps);
}

void dpo__replay_free(dpo__replay_t *R) {
  free(R->state);
  dpo__free_pstates(R->ops, R->nparties, R->pstate);
  free(R->pbeps);
  free(R->pbdelta);
  free(R->pcount);
  R->pcount = NULL;
  R->state = NULL;
  R->pstate = NULL;
  R->pbeps = R->pbdelta = NULL;
}

/* The "parties" line: {"kind":"parties","budget_eps":[..],"budget_delta":[..]} */
static int dpo__replay_parties(const char *path, int64_t lineno, json_object *o,
                               dpo__replay_t *R, FILE *out) {
  json_object *be, *bd;
  if (R->nparties > 0 || !R->ops || !json_object_object_get_ex(o, "budget_eps", &be) ||
      !json_object_object_get_ex(o, "budget_delta", &bd) ||
      !json_object_is_type(be, json_type_array) || !json_object_is_type(bd, json_type_array) ||
      json_object_array_length(be) != json_object_array_length(bd) ||
      json_object_array_length(be) < 1 || json_object_array_length(be) > DPO__MAX_PARTIES)
    return dpo_err(DPO_EFORMAT, "%s:%lld: bad or repeated parties line", path, (long long)lineno);
  int n = (int)json_object_array_length(be);
  R->pbeps = calloc((size_t)n, sizeof *R->pbeps);
  R->pbdelta = calloc((size_t)n, sizeof *R->pbdelta);
  R->pstate = calloc((size_t)n, sizeof *R->pstate);
  R->pcount = calloc((size_t)n, sizeof *R->pcount);
  if (!R->pbeps || !R->pbdelta || !R->pstate || !R->pcount)
    return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  R->nparties = n;
  for (int k = 0; k < n; k++) {
    R->pbeps[k] = json_object_get_double(json_object_array_get_idx(be, (size_t)k));
    R->pbdelta[k] = json_object_get_double(json_object_array_get_idx(bd, (size_t)k));
    if (!(R->pbeps[k] > 0) || !isfinite(R->pbeps[k]) || !(R->pbdelta[k] >= 0 && R->pbdelta[k] < 1))
      return dpo_err(DPO_EFORMAT, "%s:%lld: party %d budget (%g, %g) invalid", path,
                     (long long)lineno, k, R->pbeps[k], R->pbdelta[k]);
    if (!(R->pstate[k] = calloc(1, R->ops->state_size)))
      return dpo_err(DPO_ENOMEM, "ledger: out of memory");
    R->ops->init(R->pstate[k]);
  }
  if (out) fprintf(out, "%8s parties: %d accounts\n", "-", n);
  return DPO_OK;
}

static int dpo__close_rel(double a, double b) {
  return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* The chain check of one complete line (n bytes, newline excluded); the header's starts from
 * its own nonce.  A v1 journal has no chain (R->version 1: read, never trusted for resume). */
static int dpo__replay_chain(const char *path, int64_t lineno, const char *line, size_t n,
                             json_object *o, const unsigned char *key, dpo__replay_t *R) {
  if (R->version != 2) return DPO_OK;
  if (!key) return dpo_err(DPO_EINVAL, "%s: no key to verify the journal's chain", path);
  if (lineno == 1 && !dpo__chain_unhex(dpo__jget_s(o, "nonce"), R->head))
    return dpo_err(DPO_EFORMAT, "%s:1: the header has no valid nonce (journal edited)", path);
  if (lineno == 1) memcpy(R->nonce, R->head, sizeof R->nonce);
  if (!dpo__chain_verify(key, R->head, line, n, R->head))
    return dpo_err(DPO_EFORMAT, "%s:%lld: journal line fails its chain check: it was edited, "
                   "or a line before it was deleted, reordered or duplicated, or the journal "
                   "was written with another key (the journal is not as the ledger wrote it)",
                   path, (long long)lineno);
  R->lines = lineno;
  return DPO_OK;
}

/* The header (line 1): the budget, relation and accountant whose state the replay builds. */
static int dpo__replay_header(const char *path, json_object *o, dpo__replay_t *R, FILE *out) {
  const char *kind = dpo__jget_s(o, "kind"), *acct = dpo__jget_s(o, "accountant");
  int64_t ver = 0;
  if (!kind || strcmp(kind, "dpopt-ledger") != 0 || !dpo__jget_i(o, "version", &ver) ||
      (ver != 1 && ver != 2) || !dpo__jget_d(o, "budget_eps", &R->beps) ||
      !dpo__jget_d(o, "budget_delta", &R->bdelta) || !(R->ops = dpo__acct_find(acct)) ||
      dpo_neighbours_parse(dpo__jget_s(o, "neighbours"), &R->rel) != DPO_OK) {
    return dpo_err(DPO_EFORMAT, "%s:1: not a dpopt-ledger version 1 or 2 header", path);
  }
  R->version = (int)ver;
  R->state = calloc(1, R->ops->state_size);
  if (!R->state) {
    return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  }
  R->ops->init(R->state);
  R->have_header = 1;
  if (out) {
    fprintf(out, "%8s %-9s %-9s %-13s %14s %12s %12s %12s %12s\n", "step", "mechanism",
            "sampling", "accounting", "m/n", "cost_eps", "cost_delta", "total_eps",
            "total_delta");
  }
  return DPO_OK;
}

/* A plan line: the run's release plan, given to the accountants as dpo_ledger_record_plan did. */
static int dpo__replay_plan(const char *path, int64_t lineno, json_object *o, dpo__replay_t *R,
                            FILE *out) {
  /* the run's release plan (privacy rule 3): recorded before its first charge */
  const char *pk = dpo__jget_s(o, "plan"), *pa = dpo__jget_s(o, "algo"),
             *pw = dpo__jget_s(o, "what");
  if (!pk || !pa || !dpo__jget_i(o, "steps", &R->plan_steps)) {
    return dpo_err(DPO_EFORMAT, "%s:%lld: plan line lacks plan, algo or steps", path,
                   (long long)lineno);
  }
  snprintf(R->plan_kind, sizeof R->plan_kind, "%s", pk);
  if (R->ops->plan) { /* as dpo_ledger_record_plan did */
    R->ops->plan(R->state, R->plan_steps, 0);
    for (int k = 0; k < R->nparties; k++) R->ops->plan(R->pstate[k], R->plan_steps, 0);
  }
  snprintf(R->plan_algo, sizeof R->plan_algo, "%s", pa);
  if (out)
    fprintf(out, "%8s plan: %s, %s, %lld steps: %s\n", "-", pa, pk, (long long)R->plan_steps,
            pw ? pw : "");
  return DPO_OK;
}

static void dpo__replay_event(json_object *o, FILE *out) {
  /* an event (e.g. a party dropped): recorded, not a charge */
  if (out) {
    int64_t pk = -1, sk = -1;
    dpo__jget_i(o, "party", &pk);
    dpo__jget_i(o, "step", &sk);
    if (pk >= 0)
      fprintf(out, "%8lld event: %s (party %lld)\n", (long long)sk, dpo__jget_s(o, "event"),
              (long long)pk);
    else /* a run-wide event (e.g. the trust mode) */
      fprintf(out, "%8lld event: %s\n", (long long)sk, dpo__jget_s(o, "event"));
  }
}

int dpo__charge_parse(const char *path, int64_t lineno, json_object *o, dpo_charge_t *c,
                      double *se, double *sd) {
  json_object *p;
  memset(c, 0, sizeof *c);
  const char *mech = dpo__jget_s(o, "mechanism"), *samp = dpo__jget_s(o, "sampling"),
             *acc = dpo__jget_s(o, "accounting");
  int ok = dpo__jget_i(o, "step", &c->step) && mech && samp && acc &&
           json_object_object_get_ex(o, "params", &p) && dpo__jget_d(p, "eps", &c->eps) &&
           dpo__jget_d(p, "delta", &c->delta) &&
           dpo__jget_d(p, "noise_scale", &c->noise_scale) &&
           dpo__jget_d(p, "sensitivity", &c->sensitivity) && dpo__jget_i(p, "dim", &c->dim) &&
           dpo__jget_i(p, "m", &c->m) && dpo__jget_i(p, "n", &c->n) &&
           dpo__jget_i(p, "group", &c->group) && dpo__jget_d(o, "charge_eps", se) &&
           dpo__jget_d(o, "charge_delta", sd);
  if (ok && !dpo__jget_d(p, "rho", &c->rho)) c->rho = 0; /* optional: rdp-rho only */
  if (!ok)
    return dpo_err(DPO_EFORMAT, "%s:%lld: journal line lacks a charge field", path,
                   (long long)lineno);
  /* the names back to the enums through the table that wrote them (charge_names.c) */
  const char *what = NULL, *bad = NULL;
  if (dpo_mech_parse(mech, &c->mechanism)) what = "mechanism", bad = mech;
  else if (dpo_sampling_parse(samp, &c->sampling)) what = "sampling", bad = samp;
  else if (dpo_accounting_parse(acc, &c->accounting)) what = "accounting", bad = acc;
  if (what)
    return dpo_err(DPO_EFORMAT, "%s:%lld: invalid charge: charge: unknown %s '%s'", path,
                   (long long)lineno, what, bad);
  return DPO_OK;
}

/* A charge line: its names back to the enums, recomputed by the header's accountant and
 * compared with the recorded cost, then charged to every party it names. */
static int dpo__replay_charge(const char *path, int64_t lineno, json_object *o,
                              dpo__replay_t *R, FILE *out) {
  int st;
  dpo_charge_t c;
  double se, sd;
  if ((st = dpo__charge_parse(path, lineno, o, &c, &se, &sd))) return st;
  dpo__acct_result_t r;
  c.neighbours = R->rel; /* every charge was accepted under the header's relation */
  st = dpo__charge_relation(&c, R->rel);
  if (!st) st = R->ops->charge(R->state, &c, R->beps, R->bdelta, 1, &r);
  if (st) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", dpo_errmsg());
    return dpo_err(DPO_EFORMAT, "%s:%lld: invalid charge: %s", path, (long long)lineno, msg);
  }
  if (!r.fits || !dpo__close_rel(r.charge_eps, se) || !dpo__close_rel(r.charge_delta, sd)) {
    return dpo_err(DPO_EFORMAT,
                   "%s:%lld: recorded charge (%.17g, %.17g) does not match the recomputed "
                   "(%.17g, %.17g)%s (journal edited or written by another version)",
                   path, (long long)lineno, se, sd, r.charge_eps, r.charge_delta,
                   r.fits ? "" : " or exceeds the budget");
  }
  /* the parties it touched: each account is charged the same release */
  json_object *pa;
  if (json_object_object_get_ex(o, "parties", &pa)) {
    int okp = json_object_is_type(pa, json_type_array) && R->nparties > 0;
    for (size_t i = 0; okp && i < json_object_array_length(pa); i++) {
      int64_t k = json_object_get_int64(json_object_array_get_idx(pa, i));
      dpo__acct_result_t pr;
      okp = k >= 0 && k < R->nparties &&
            R->ops->charge(R->pstate[k], &c, R->pbeps[k], R->pbdelta[k], 1, &pr) == DPO_OK &&
            pr.fits;
      if (okp) R->pcount[k]++;
    }
    if (!okp) {
      return dpo_err(DPO_EFORMAT, "%s:%lld: the charge's parties are unknown or over their "
                     "budgets (journal edited?)", path, (long long)lineno);
    }
  }
  R->count++;
  if (out) {
    char mn[48] = "-";
    if (c.sampling != DPO_SAMPLING_NONE)
      snprintf(mn, sizeof mn, "%lld/%lld", (long long)c.m, (long long)c.n);
    fprintf(out, "%8lld %-9s %-9s %-13s %14s %12.6g %12.6g %12.6g %12.6g\n",
            (long long)c.step, dpo_mech_name(c.mechanism), dpo_sampling_name(c.sampling),
            dpo_accounting_name(c.accounting), mn, r.cost_eps,
            r.cost_delta, r.total_eps, r.total_delta);
  }
  return DPO_OK;
}

int dpo__replay(const char *path, const char *buf, size_t len, const unsigned char *key,
                FILE *out, dpo__replay_t *R) {
  int st = DPO_OK;
  size_t pos = 0;
  int64_t lineno = 0;
  json_tokener *tok = json_tokener_new();
  if (!tok) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  memset(R, 0, sizeof *R);
  R->plan_steps = -1;
  while (pos < len) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    lineno++;
    if (!nl) { /* no newline: the write of this line never completed */
      R->torn_len = len - pos;
      break;
    }
    size_t n = (size_t)(nl - (buf + pos));
    json_tokener_reset(tok);
    json_object *o = n > 0 ? json_tokener_parse_ex(tok, buf + pos, (int)n) : NULL;
    if (o && (json_tokener_get_error(tok) != json_tokener_success ||
              json_tokener_get_parse_end(tok) != n || !json_object_is_type(o, json_type_object))) {
      json_object_put(o);
      o = NULL;
    }
    if (!o) {
      if ((size_t)(nl - buf) + 1 == len) { /* unparsable last line: torn too */
        R->torn_len = len - pos;
        break;
      }
      st = dpo_err(DPO_EFORMAT, "%s:%lld: journal line is not a JSON object (corrupt journal)",
                   path, (long long)lineno);
      goto done;
    }
    if (lineno == 1) { /* the header says whether there is a chain to check */
      int64_t ver = 0;
      R->version = dpo__jget_i(o, "version", &ver) ? (int)ver : 0;
    }
    if ((st = dpo__replay_chain(path, lineno, buf + pos, n, o, key, R))) {
      json_object_put(o);
      goto done;
    }
    const char *kind = dpo__jget_s(o, "kind");
    if (!R->have_header) st = dpo__replay_header(path, o, R, out);
    else if (kind && !strcmp(kind, "parties")) st = dpo__replay_parties(path, lineno, o, R, out);
    else if (kind && !strcmp(kind, "plan")) st = dpo__replay_plan(path, lineno, o, R, out);
    else if (dpo__jget_s(o, "event")) dpo__replay_event(o, out);
    else st = dpo__replay_charge(path, lineno, o, R, out);
    if (st) {
      json_object_put(o);
      goto done;
    }
    json_object_put(o);
    pos = (size_t)(nl - buf) + 1;
    R->good_len = pos;
  }
done:
  json_tokener_free(tok);
  return st;
}

/* ------------------------------------------------------------ printing */

/* The journal read through no symlink, its key loaded (never created: reading writes nothing)
 * and replayed; rows printed to rows (NULL: none). */
static int dpo__print_load(const char *path, const char *key_file, FILE *rows, char **buf,
                           dpo__replay_t *R, char *kpath, size_t kcap) {
  unsigned char key[DPO__CHAIN_BYTES];
  size_t len = 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), st;
  if (fd < 0)
    return dpo_err(DPO_EIO, "%s: cannot open: %s%s", path, strerror(errno),
                   errno == ELOOP ? " (a symbolic link: a journal is read only as itself)" : "");
  st = dpo__read_all(fd, path, buf, &len);
  close(fd);
  if (st) return st;
  /* a version 1 journal (no chain) needs no key: a missing key matters only for version 2 */
  char kmsg[768] = "";
  int kst = dpo__journal_key_load(key_file, 0, key, kpath, kcap);
  if (kst) {
    snprintf(kmsg, sizeof kmsg, "%s", dpo_errmsg());
    dpo_errclear();
  }
  st = dpo__replay(path, *buf, len, kst ? NULL : key, rows, R);
  if (st && kst && R->version == 2)
    st = dpo_err(kst, "%s: cannot verify the journal: %s", path, kmsg);
  sodium_memzero(key, sizeof key);
  if (!st && !R->have_header)
    st = dpo_err(DPO_EFORMAT, "%s: no ledger header (empty or torn journal)", path);
  return st;
}

int dpo_ledger_print_ex(const char *path, const char *key_file, int all, FILE *out) {
  if (!path || !out) return dpo_err(DPO_EINVAL, "ledger_print: NULL argument");
  char *buf = NULL, kpath[1024] = "";
  dpo__replay_t R = {0};
  int st;
  /* the rows go to a memory stream first: nothing is printed of a journal that fails */
  char *rows = NULL;
  size_t rlen = 0;
  FILE *rf = all ? open_memstream(&rows, &rlen) : NULL;
  if (all && !rf) return dpo_err(DPO_ENOMEM, "ledger: out of memory");
  st = dpo__print_load(path, key_file, rf, &buf, &R, kpath, sizeof kpath);
  if (rf) fclose(rf);
  if (st) goto out;
  double se, sd;
  R.ops->spent(R.state, &se, &sd);
  /* remaining is an allowance: round it down */
  double re = dpo__add_down(R.beps, -se), rd = dpo__add_down(R.bdelta, -sd);
  fprintf(out, "privacy ledger %s (accountant %s, %s neighbours)\nbudget: eps = %.17g, "
               "delta = %.17g\n", path, R.ops->name, dpo_neighbours_name(R.rel), R.beps, R.bdelta);
  if (R.version == 2)
    fprintf(out, "chain:     verified, %lld lines (key %s)\n", (long long)R.lines, kpath);
  else
    fprintf(out, "chain:     NONE: a version 1 journal (written before journals were chained); "
                 "its lines are NOT verified and --resume refuses it\n");
  if (all) fprintf(out, "\n%s", rows ? rows : "");
  fprintf(out, "\ncharges: %lld\nspent:     eps = %.17g, delta = %.17g\n", (long long)R.count,
          se, sd);
  fprintf(out, "remaining: eps = %.17g, delta = %.17g\n", re > 0 ? re : 0.0, rd > 0 ? rd : 0.0);
  fprintf(out, "bound:     %s (accountant %s)\n",
          R.ops->bound ? R.ops->bound(R.state) : R.ops->name, R.ops->name);
  if (R.plan_steps >= 0) /* plan vs spent */
    fprintf(out, "plan:      %s, %s charge, %lld steps planned; %lld charges recorded, eps %.6g "
                 "of %.6g spent\n", R.plan_algo, R.plan_kind, (long long)R.plan_steps,
            (long long)R.count, se, R.beps);
  for (int k = 0; k < R.nparties; k++) {
    double pe, pd;
    R.ops->spent(R.pstate[k], &pe, &pd);
    fprintf(out, "party %d:   eps = %.17g of %.17g, delta = %.17g of %.17g\n", k, pe, R.pbeps[k],
            pd, R.pbdelta[k]);
  }
  if (R.torn_len > 0)
    fprintf(out, "note: torn last line of %zu bytes (crash while writing it; its release never "
                 "happened; resuming the run removes it)\n", R.torn_len);
  if (!all) fprintf(out, "(dpopt ledger --all lists every charge)\n");
out:
  free(rows);
  dpo__replay_free(&R);
  free(buf);
  return st;
}

int dpo_ledger_print(const char *path, FILE *out) {
  return dpo_ledger_print_ex(path, NULL, 1, out);
}

/* ------------------------------------------------------------ parts (budget stores) */

/* the pure and (eps, delta) parts of a basic state: summed together, so one (eps, delta) part
 * unless one kind is absent (known from the counts) */
static void dpo__parts_basic(const dpo__basic_t *b, int64_t n_pure, int64_t n_approx,
                             dpo_ledger_parts_t *p) {
  double e, d;
  dpo__acct_basic.spent(b, &e, &d);
  if (n_approx == 0 && n_pure > 0 && d == 0) {
    p->pure_eps = e;
    p->n_pure = n_pure;
  } else if (n_pure + n_approx > 0 && (e > 0 || d > 0)) {
    p->approx_eps = e;
    p->approx_delta = d;
    p->n_approx = n_pure + n_approx;
  }
}

static void dpo__parts_auto(const dpo__auto_t *a, dpo_ledger_parts_t *p) {
  dpo__parts_basic(&a->basic, a->n_pure, a->n_approx, p);
  if (p->n_pure) dpo__rdpacct_total(&a->pconv, &p->pure_rdp);
  if (a->n_rdp) {
    dpo__rdpacct_total(&a->rdp, &p->rdp);
    p->n_rdp = a->n_rdp;
  }
}

/* the parts of one account (the ledger's, or a party's: same accountant) of `count` charges */
static void dpo__parts_of(const dpo__acct_ops_t *ops, const void *state, int64_t count,
                          dpo_ledger_parts_t *p) {
  memset(p, 0, sizeof *p);
  dpo_rdp_curve_init(&p->rdp);
  dpo_rdp_curve_init(&p->pure_rdp);
  ops->spent(state, &p->eps, &p->delta);
  if (ops == &dpo__acct_auto) dpo__parts_auto(state, p);
  else if (ops == &dpo__acct_pld) dpo__parts_auto(state, p); /* auto is its first member */
  else if (ops == &dpo__acct_rdp) {
    dpo__rdpacct_total(state, &p->rdp);
    p->n_rdp = count;
  } else /* basic: pure and (eps, delta) releases in one sum */
    dpo__parts_basic(state, 0, count, p);
}

int dpo_ledger_parts(const dpo_ledger_t *L, dpo_ledger_parts_t *p) {
  if (!L || !p) return dpo_err(DPO_EINVAL, "ledger_parts: NULL argument");
  if (L->rank != 0) return dpo_err(DPO_EINVAL, "ledger_parts: rank 0 only");
  dpo__parts_of(L->ops, L->state, L->count, p);
  return DPO_OK;
}

int dpo_ledger_party_parts(const dpo_ledger_t *L, int k, dpo_ledger_parts_t *p) {
  if (!L || !p) return dpo_err(DPO_EINVAL, "ledger_party_parts: NULL argument");
  if (L->rank != 0) return dpo_err(DPO_EINVAL, "ledger_party_parts: rank 0 only");
  const int a = dpo__ledger_acct(L, k);
  if (a < 0) return dpo_err(DPO_EINVAL, "ledger_party_parts: party %d of %d", k, L->nparties);
  dpo__parts_of(L->ops, L->pstate[a], L->pcount[a], p);
  return DPO_OK;
}

int dpo_ledger_file_parts(const char *path, const char *key_file, dpo_ledger_parts_t *p) {
  if (!path || !p) return dpo_err(DPO_EINVAL, "ledger_file_parts: NULL argument");
  char *buf = NULL, kpath[1024];
  dpo__replay_t R = {0};
  int st = dpo__print_load(path, key_file, NULL, &buf, &R, kpath, sizeof kpath);
  if (!st && R.version != 2) /* unverified lines cannot vouch for what a party spent */
    st = dpo_err(DPO_EFORMAT, "%s: a version 1 journal (not chained): its lines cannot be "
                 "verified", path);
  if (!st) dpo__parts_of(R.ops, R.state, R.count, p);
  dpo__replay_free(&R);
  free(buf);
  return st;
}

int dpo_ledger_run_id(const dpo_ledger_t *L, char id[65]) {
  if (!L || L->rank != 0 || L->fd < 0)
    return dpo_err(DPO_EINVAL, "ledger_run_id: no journal (rank 0 of a journalled ledger only)");
  dpo__chain_hex(L->nonce, id);
  return DPO_OK;
}
