/* dpopt audit --one-run: the one-run audit of a real training run (dpo_run_audit1 in
 * dpopt/run.h, src/run/run_canary.c); this file parses the command line and prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/run.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 80

static const dpo_cli_opt_t dpo__audit1_opts[] = {
    {"--one-run", "audit.one_run", NULL, "the one-run audit of the training run the other options describe"},
    {"--canaries", "audit.canaries", "M", "canary rows, each included with probability 1/2 (default 1000)"},
    {"--alpha", "audit.alpha", "A", "the bound holds with confidence 1 - A (default 0.05)"},
    {"--json", "audit.json", "FILE", "also write the result as JSON"},
    {NULL, NULL, NULL, NULL}};

static const char dpo__audit1_more[] =
    "Trains once, as dpopt train would with the same options (data, algorithm, budget,\n"
    "schedule), with M canary rows added, each included with probability 1/2 (Steinke, Nasr and\n"
    "Jagielski, \"Privacy auditing with one (1) training run\", 2023).  A canary is a row with\n"
    "one nonzero (the largest the declared row bounds allow) in a feature column of its own;\n"
    "excluded, it is absent (add-remove neighbours) or labelled -1 (replace-one).  The auditor\n"
    "sees every release of the run (each noised gradient the coordinator broadcasts), scores\n"
    "each canary by the likelihood ratio of its column, guesses the highest scores included and the lowest\n"
    "excluded, and turns the number of right guesses into a lower bound on eps, valid with\n"
    "confidence 1 - A whatever the data.  One training run, so a data holder can run it on the\n"
    "real data set; the bound is loose by design (at most about ln(M) for M canaries), a check\n"
    "that the noise is there, not an estimate of the true eps.  Nothing is written but the\n"
    "output (the run's directory is temporary).  Logistic regression, one data holder, the\n"
    "algorithms whose releases the audit observes (the DP-GD family, dp-sgd-rdp).\n"
    "Exit status: 0 bound below the claim, 1 usage, 2 bad data, 4 runtime failure,\n"
    "6 the lower bound exceeds the claimed eps (privacy violation found).\n";

static int dpo__audit1_json(const char *path, const dpo_audit1_result_t *r, double alpha) {
  FILE *f = fopen(path, "w");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot write", path);
  fprintf(f, "{\"audit\":\"one-run\",\"algorithm\":\"%s\",\"claimed_eps\":%.17g,"
             "\"claimed_delta\":%.17g,\"eps_lb\":%.17g,\"alpha\":%.17g,\"canaries\":%lld,"
             "\"guesses\":%lld,\"correct\":%lld,\"releases\":%lld,"
             "\"neighbours\":\"%s\",\"seeded\":%s,\"violation\":%s}\n",
          r->algorithm, r->claimed_eps, r->claimed_delta, r->eps_lb, alpha,
          (long long)r->canaries, (long long)r->guesses, (long long)r->correct,
          (long long)r->releases, r->add_remove ? "add-remove" : "replace-one",
          r->seeded ? "true" : "false", r->violation ? "true" : "false");
  return fclose(f) ? dpo_err(DPO_EIO, "%s: write failed", path) : DPO_OK;
}

static void dpo__audit1_print(const dpo_audit1_result_t *r, double alpha, int test) {
  printf("%-14s %-11s %-11s %-10s %-9s %s\n", "algorithm", "claimed_eps", "delta", "eps_lb",
         "canaries", "guesses");
  printf("%-14s %-11.6g %-11.3g %-10.4f %-9lld %lld right of %lld", r->algorithm, r->claimed_eps,
         r->claimed_delta, r->eps_lb, (long long)r->canaries, (long long)r->correct,
         (long long)r->guesses);
  if (test & 16) printf("  [TEST: noise scaled]");
  if (r->seeded) printf("  [seeded: not private]");
  printf("\none run: %lld releases observed (the coordinator's broadcasts); each canary one value "
         "in a column of its own, %s; guesses tried", (long long)r->releases,
         r->add_remove ? "absent when excluded (add-remove)"
                                           : "labelled -1 when excluded (replace-one)");
  for (int g = 0; g < 4; g++)
    if (r->grid_r[g] > 0)
      printf(" %lld:%lld", (long long)r->grid_r[g], (long long)r->grid_v[g]);
  printf(" (right:of, each at alpha/4)\nassumes: the adversary sees every release and knows the "
         "canaries; the bound holds with confidence %g for any data (Steinke, Nasr and Jagielski "
         "2023, Theorem 3.1 with its delta term)\n", 1 - alpha);
  if (r->violation)
    printf("VIOLATION: the lower bound %.4f exceeds the claimed eps %.6g (confidence %g)\n",
           r->eps_lb, r->claimed_eps, 1 - alpha);
}

int dpo_cmd_audit1(const dpo_cli_ctx_t *ctx, int argc, char **argv, int test) {
  dpo_cli_opt_t opts[DPO__MAXOPTS], tmp[DPO__MAXOPTS];
  dpo_cli_opts_cat(tmp, DPO__MAXOPTS, dpo_cli_train_opts, dpo_cli_data_opts);
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, tmp, dpo__audit1_opts);
  dpo_config_t *cfg = NULL;
  dpo_audit1_result_t res;
  char *pos[1];
  int npos, rc, ex = 0;
  int64_t m = 1000;
  double alpha = 0.05;
  const char *jpath = NULL;

  if (dpo_config_create(&cfg)) return dpo_cli_fail(ctx, "audit", DPO_ENOMEM);
  rc = dpo_cli_parse(ctx, argc, argv, opts, "usage: mpirun -np P dpopt audit --one-run [dpopt train's "
                     "options] [--canaries M] [--alpha A] [--json FILE]",
                     dpo__audit1_more, cfg, pos, 0, &npos);
  if (rc) {
    ex = rc > 0 ? 0 : DPO_EXIT_USAGE;
    goto out;
  }
  if (!dpo_config_get(cfg, "model.intercept") && !dpo_config_get(cfg, "model.no_intercept"))
    dpo_config_set(cfg, "model.intercept", "1", "default (dpopt train)");
  dpo_config_get(cfg, "audit.one_run");
  if ((rc = dpo_config_get_int(cfg, "audit.canaries", 1000, &m)) ||
      (rc = dpo_config_get_double(cfg, "audit.alpha", 0.05, &alpha)) ||
      (rc = dpo_config_get_str(cfg, "audit.json", NULL, &jpath)))
    goto fail;
  if ((rc = dpo_cli_check_ranks(ctx, cfg))) goto fail;
  if ((rc = dpo_run_audit1(ctx->comm, cfg, m, alpha, &res))) goto fail;
  if (ctx->rank == 0) {
    dpo__audit1_print(&res, alpha, test);
    fflush(stdout);
  }
  rc = ctx->rank == 0 && jpath ? dpo__audit1_json(jpath, &res, alpha) : DPO_OK;
  if ((rc = dpo_agree(ctx->comm, rc))) goto fail;
  ex = res.violation ? DPO_EXIT_AUDIT : 0;
  goto out;
fail:
  dpo_cli_warn_typos(ctx, cfg);
  ex = dpo_cli_fail(ctx, "audit", rc);
out:
  dpo_config_destroy(cfg);
  return ex;
}
