/* dpopt newton | ledger */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/model.h"
#include "dpopt/optim.h"
#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 48

int dpo_cmd_newton(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t own[] = {
      {"--model", "model.name", "NAME", "logreg | ridge | lsq (default logreg)"},
      {"--lambda", "model.lambda", "L", "regularization lambda (default 1e-4)"},
      {"--gtol", "newton.gtol", "G", "stop at ||grad F|| <= G (default 1e-10)"},
      {"--maxit", "newton.maxit", "K", "maximum Newton iterations (default 100)"},
      {"--lmax", "newton.lmax", NULL, "also print the Hessian's largest eigenvalue at x*"},
      {"--out", "newton.out", "FILE", "write x* as a model file"},
      {NULL, NULL, NULL, NULL}};
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, own, dpo_cli_data_opts);
  dpo_config_t *cfg = NULL;
  dpo_shard_t *sh = NULL;
  dpo_model_t *m = NULL;
  double *x = NULL;
  char *pos[1];
  int npos, rc, ex = 0;
  if ((ex = dpo_cli_start(ctx, "newton", argc, argv, opts, "usage: mpirun --quiet -np P dpopt newton [options] FILE",
                          "Solves min F(x) to ||grad F|| <= gtol with Newton's method: each rank forms its\n"
                          "part of the Hessian, the system is solved with ScaLAPACK (pdpotrf/pdpotrs) on a\n"
                          "2-D process grid.  F* is a NON-PRIVATE reference value (it is computed on the\n"
                          "private data without noise): use it for f - f* diagnostics, never release it.\n",
                          &cfg, pos, 1, &npos,
                          "one FILE expected (see --help)")) >= 0)
    goto out;
  ex = 0;
  const char *mname, *outp;
  double lambda, gtol;
  int64_t maxit;
  int lmax;
  dpo_config_get_str(cfg, "model.name", "logreg", &mname);
  dpo_config_get_str(cfg, "newton.out", NULL, &outp);
  dpo_load_opts_t lo;
  if ((rc = dpo_config_get_double(cfg, "model.lambda", 1e-4, &lambda)) ||
      (rc = dpo_config_get_double(cfg, "newton.gtol", 1e-10, &gtol)) ||
      (rc = dpo_config_get_int(cfg, "newton.maxit", 100, &maxit)) ||
      (rc = dpo_config_get_bool(cfg, "newton.lmax", 0, &lmax)) ||
      (rc = dpo_model_create(mname, lambda, &m)) || (rc = dpo_load_opts_from_config(cfg, &lo)))
    goto fail;
  lo.labels = dpo_model_binary(m) ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
  if ((rc = dpo_shard_load(ctx->comm, pos[0], &lo, &sh))) goto fail;
  if (!(x = calloc((size_t)sh->d, sizeof *x))) {
    rc = dpo_err(DPO_ENOMEM, "out of memory");
    goto fail;
  }
  dpo_newton_info_t ni;
  double t0 = dpo_wtime();
  if ((rc = dpo_newton_solve(ctx->comm, m, sh, x, gtol, (int)maxit, &ni))) goto fail;
  double t1 = dpo_wtime();
  double lm = NAN;
  if (lmax && (rc = dpo_hessian_lmax(ctx->comm, m, sh, x, 1000, 1e-12, &lm))) goto fail;
  if (ctx->rank == 0) {
    printf("# NON-PRIVATE reference solution (computed on the private data without noise)\n");
    printf("F*          %.17g\n||grad F||  %.3e\niterations  %lld\ntime        %.3f s on %d rank%s\n",
           ni.F, ni.gnorm, (long long)ni.iters, t1 - t0, ctx->size, ctx->size > 1 ? "s" : "");
    if (lmax) printf("lambda_max  %.10g   (Hessian at x*, data-derived: non-private)\n", lm);
    if (outp) rc = dpo_model_write(outp, x, sh->d, "NON-PRIVATE Newton reference solution");
  }
  if ((rc = dpo_agree(ctx->comm, rc))) goto fail;
  goto out;
fail:
  ex = dpo_cli_fail(ctx, "newton", rc);
out:
  free(x);
  dpo_shard_destroy(sh);
  dpo_model_destroy(m);
  dpo_config_destroy(cfg);
  return ex;
}

int dpo_cmd_ledger(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {
      {"--all", "ledger.all", NULL, "list every charge (step, mechanism, sampling, m/n, cost, "
                                    "running totals) before the summary"},
      {"--journal-key", "privacy.journal_key", "FILE", "the key the journal was written with "
                        "(default: $DPOPT_JOURNAL_KEY, else $XDG_CONFIG_HOME/dpopt/journal.key "
                        "or ~/.config/dpopt/journal.key)"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[1];
  int npos, rc, ex = 0, all = 0;
  const char *key = NULL;
  if ((ex = dpo_cli_start(ctx, "ledger", argc, argv, opts, "usage: dpopt ledger [--all] RUN_DIR | JOURNAL.jsonl",
                          "Prints the privacy account of a run: plan, budget, spent, remaining,\n"
                          "accountant and bound, the number of charges, all recomputed from the\n"
                          "journal after its keyed hash chain was verified (a missing, edited,\n"
                          "reordered, duplicated or cut line is refused, exit 2, naming the line).\n"
                          "--all also lists every accepted charge with the running totals.\n",
                          &cfg, pos, 1, &npos,
                          "RUN_DIR expected (see --help)")) >= 0)
    goto out;
  ex = 0;
  if ((rc = dpo_config_get_bool(cfg, "ledger.all", 0, &all))) {
    ex = dpo_cli_fail(ctx, "ledger", dpo_agree(ctx->comm, rc));
    goto out;
  }
  dpo_config_get_str(cfg, "privacy.journal_key", NULL, &key);
  char path[2048];
  size_t L = strlen(pos[0]);
  if (L > 6 && !strcmp(pos[0] + L - 6, ".jsonl"))
    snprintf(path, sizeof path, "%s", pos[0]);
  else
    snprintf(path, sizeof path, "%s/ledger.jsonl", pos[0]);
  rc = ctx->rank == 0 ? dpo_ledger_print_ex(path, key, all, stdout) : DPO_OK;
  if ((rc = dpo_agree(ctx->comm, rc))) ex = dpo_cli_fail(ctx, "ledger", rc);
out:
  dpo_config_destroy(cfg);
  return ex;
}

/* dpopt party-key PATH: a party's long-term identity key (Ed25519) for authenticated secure
 * aggregation; the library writes it (privacy/guard.h), this prints what to do with it. */
int dpo_cmd_party_key(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {{NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[1];
  int npos, rc, ex;
  if ((ex = dpo_cli_start(ctx, "party-key", argc, argv, opts, "usage: dpopt party-key PATH",
                          "Creates a party's identity key pair for privacy.trust = secagg: the\n"
                          "secret key in PATH (mode 0600, never overwritten) and the public key\n"
                          "in PATH.pub (64 hex digits).  Every party lists every party's public\n"
                          "key in the configuration (party.K.public_key = the contents of party K's\n"
                          ".pub file) and its own secret key file (party.K.key = PATH, or\n"
                          "parties.key = a path with %d for K).  Each party then signs its per-run\n"
                          "key-agreement key with it, over the agreed plan and a run nonce, and a\n"
                          "key that does not verify (a substituted key) stops the run before any\n"
                          "release.\n",
                          &cfg, pos, 1, &npos, "PATH expected (see --help)")) >= 0)
    goto out;
  ex = 0;
  rc = ctx->rank == 0 ? dpo_party_key_create(pos[0]) : DPO_OK;
  if ((rc = dpo_agree(ctx->comm, rc))) ex = dpo_cli_fail(ctx, "party-key", rc);
  else if (ctx->rank == 0)
    printf("secret key  %s (keep it: only this party's ranks read it)\n"
           "public key  %s.pub (give it to every party: party.K.public_key)\n", pos[0], pos[0]);
out:
  dpo_config_destroy(cfg);
  return ex;
}
