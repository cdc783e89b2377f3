/* dpopt predict / dpopt eval: apply a saved model (model.txt) to a data file loaded in shards
 * like train's.  eval prints the metrics; predict also writes one prediction line per row, in
 * row order, to --out FILE (every rank writes its own rows at its byte offset, MPI-IO), or
 * with --out - or no --out to stdout (through rank 0; the metrics then go to stderr).
 * The numbers come from dpo_model_eval_shard, which sums exactly as train's held-out
 * evaluation does, so `dpopt eval` on train's --test file prints train's test metric.
 * The work is dpo_model_eval_file (dpopt/comm.h); this file parses and prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dpopt/comm.h"
#include "dpopt/model.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 32

static const dpo_cli_opt_t dpo__pred_opts[] = {
    {"--run", "predict.run", "DIR", "a train run directory: its model.txt, and model/lambda from its config.ini"},
    {"--model-file", "predict.model_file", "FILE", "model coefficients (model.txt format; default RUN/model.txt)"},
    {"--data", "predict.data", "FILE", "data to apply the model to (libsvm, csv, idx[.gz], bin)"},
    {"--model", "model.name", "NAME", "logreg | ridge | lsq | softmax (default: the run's, else logreg)"},
    {"--lambda", "model.lambda", "L", "lambda of the objective F (default: the run's; without it F is not printed)"},
    {"--quiet", "run.quiet", NULL, "no messages on stderr"},
    {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
    {NULL, NULL, NULL, NULL}};

static const dpo_cli_opt_t dpo__pred_out_opt[] = {
    {"--out", "predict.out", "FILE", "write the predictions here, one line per row in file order; - or no --out: stdout (the metrics then go to stderr, none with --quiet)"},
    {NULL, NULL, NULL, NULL}};

static const char dpo__pred_more[] =
    "Metrics (stdout): data loss = mean loss over the rows, WITHOUT the regularizer; objective F\n"
    "= data loss + lambda ||x||^2 (only when lambda is known); accuracy (logreg: u'x >= 0\n"
    "predicts +1; softmax: the most probable class, plus the confusion matrix) or mse (ridge,\n"
    "lsq).  All are exact functions of the data file: if it is private data, they are\n"
    "non-private outputs.\n"
    "Prediction lines (predict): logreg \"LABEL PROB\" (LABEL +1 or -1, PROB = P(y = +1) =\n"
    "1 / (1 + exp(-u'x))); softmax \"CLASS PROB\" (class 0..K-1 and its probability); ridge\n"
    "and lsq \"VALUE\" (u'x).\n"
    "The data must match the model: a declared width (--dim D, a FILE.schema beside the data\n"
    "holding '[schema] features = D', a dense file's columns) must be the model's dimension,\n"
    "and no row of a sparse file may use a feature index above it (rows that leave the last\n"
    "features unused are fine); otherwise exit 2.\n";

/* Settings the command line did not give come from RUN/config.ini (model.name,
 * model.lambda; the run used train's default lambda when its config.ini has none). */
static int dpo__from_run(dpo_config_t *cfg, const char *run, int *lambda_known) {
  char p[1024];
  dpo_config_t *rc_cfg = NULL;
  snprintf(p, sizeof p, "%s/config.ini", run);
  int rc = dpo_config_create(&rc_cfg);
  if (rc) return rc;
  if ((rc = dpo_config_load_ini(rc_cfg, p))) goto out;
  if (!dpo_config_get(cfg, "model.name") && dpo_config_get(rc_cfg, "model.name") &&
      (rc = dpo_config_set(cfg, "model.name", dpo_config_get(rc_cfg, "model.name"), p)))
    goto out;
  if (!dpo_config_get(cfg, "model.lambda") &&
      (rc = dpo_config_set(cfg, "model.lambda",
                           dpo_config_get(rc_cfg, "model.lambda")
                               ? dpo_config_get(rc_cfg, "model.lambda") : "1e-4", p)))
    goto out;
  *lambda_known = 1;
out:
  dpo_config_destroy(rc_cfg);
  return rc;
}

static int dpo__predict_main(const dpo_cli_ctx_t *ctx, int argc, char **argv, int predict) {
  const char *cmd = predict ? "predict" : "eval";
  dpo_cli_opt_t opts[DPO__MAXOPTS], base[DPO__MAXOPTS];
  dpo_cli_opts_cat(base, DPO__MAXOPTS, dpo__pred_opts, predict ? dpo__pred_out_opt : NULL);
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, base, dpo_cli_data_opts);
  dpo_config_t *cfg = NULL;
  dpo_model_t *model = NULL;
  dpo_eval_result_t r = {0};
  char *pos[1], usage[160], mpath[1024];
  int npos, rc, ex, quiet = 0, lambda_known = 0;
  snprintf(usage, sizeof usage,
           "usage: mpirun --quiet -np P dpopt %s (--run DIR | --model-file FILE) --data FILE%s [options]",
           cmd, predict ? " [--out FILE|-]" : "");
  if ((ex = dpo_cli_start(ctx, cmd, argc, argv, opts, usage, dpo__pred_more, &cfg, pos, 0, &npos,
                          NULL)) >= 0)
    goto out;
  if ((rc = dpo_config_get_bool(cfg, "run.quiet", 0, &quiet))) goto fail;
  dpo_msg_set_quiet(quiet || ctx->rank != 0);
  if ((rc = dpo_cli_check_ranks(ctx, cfg))) goto fail;

  const char *run = NULL, *mfile = NULL, *dpath = NULL, *opath = NULL, *mname;
  double lambda;
  dpo_config_get_str(cfg, "predict.run", NULL, &run);
  dpo_config_get_str(cfg, "predict.model_file", NULL, &mfile);
  dpo_config_get_str(cfg, "predict.data", NULL, &dpath);
  dpo_config_get_str(cfg, "predict.out", NULL, &opath);
  lambda_known = dpo_config_get(cfg, "model.lambda") != NULL;
  if (run && (rc = dpo__from_run(cfg, run, &lambda_known))) goto fail;
  if (!mfile && run) {
    snprintf(mpath, sizeof mpath, "%s/model.txt", run);
    mfile = mpath;
  }
  if (!mfile || !dpath) {
    rc = dpo_err(DPO_EINVAL, "%s needs%s%s (see dpopt %s --help)", cmd,
                 mfile ? "" : " --run DIR or --model-file FILE", dpath ? "" : " --data FILE", cmd);
    goto fail;
  }
  if (predict && !opath) opath = "-";
  /* predictions on stdout: stdout holds them alone, the metrics go to stderr */
  FILE *mo = predict && !strcmp(opath, "-") ? (quiet ? NULL : stderr) : stdout;
  dpo_config_get_str(cfg, "model.name", "logreg", &mname);
  if ((rc = dpo_config_get_double(cfg, "model.lambda", 1e-4, &lambda))) goto fail;
  if (!strcmp(mname, "lsq") && !dpo_config_get(cfg, "model.lambda")) lambda = 0, lambda_known = 1;
  if ((rc = dpo_model_create(mname, lambda, &model))) goto fail;
  dpo_load_opts_t lo;
  if ((rc = dpo_load_opts_from_config(cfg, &lo))) goto fail;
  lo.labels = dpo_model_labels(model);
  dpo_cli_warn_unused(ctx, cfg);

  if ((rc = dpo_model_eval_file(ctx->comm, model, mfile, dpath, &lo, predict ? opath : NULL, &r)))
    goto fail;
  if (ctx->rank == 0 && mo) {
    int binary = dpo_model_binary(model), multi = dpo_model_multiclass(model);
    char kc[32] = "";
    if (multi) snprintf(kc, sizeof kc, ", %d classes", (int)r.classes);
    fprintf(mo, "model           %s (%s, d=%d%s%s%s)\n", mfile, mname, (int)r.d, kc,
           r.intercept ? ", intercept" : "",
           lambda_known ? "" : ", lambda unknown: give --lambda or --run for F");
    fprintf(mo, "data            %s: %lld rows x %d features on %d rank%s\n", dpath,
           (long long)r.n, (int)r.d, ctx->size, ctx->size > 1 ? "s" : "");
    fprintf(mo, "data loss       %.17g   (mean %s loss, no regularizer)\n", r.loss,
           multi ? "cross-entropy" : binary ? "logistic" : "squared");
    if (lambda_known)
      fprintf(mo, "objective F     %.17g   (data loss + lambda ||x||^2, lambda=%g)\n",
             r.loss + lambda * r.xx, lambda);
    fprintf(mo, "%-15s %.17g\n", dpo_model_metric(model), r.metric);
    if (r.confusion) dpo_print_confusion(mo, r.confusion, r.classes);
    if (predict)
      fprintf(mo, "predictions     %s (%lld lines: %s)\n", strcmp(opath, "-") ? opath : "stdout",
              (long long)r.n,
             multi ? "class probability" : binary ? "label probability" : "value");
  }
  ex = 0;
  goto out;
fail:
  ex = dpo_cli_fail(ctx, cmd, rc);
out:
  free(r.confusion);
  dpo_model_destroy(model);
  dpo_config_destroy(cfg);
  return ex;
}

int dpo_cmd_predict(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  return dpo__predict_main(ctx, argc, argv, 1);
}

int dpo_cmd_eval(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  return dpo__predict_main(ctx, argc, argv, 0);
}
