/* dpopt predict / dpopt eval: apply a saved model (model.txt) to a data file loaded in shards
 * like train's.  eval prints the metrics; predict also writes one prediction line per row, in
 * row order, to --out FILE (every rank writes its own rows at its byte offset, MPI-IO).
 * The numbers come from dpo_model_eval_shard, which sums exactly as train's held-out
 * evaluation does, so `dpopt eval` on train's --test file prints train's test metric. */
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
/* bytes per MPI_File_write_at call (an int count) */
#define DPO__WRITE_PIECE (1 << 28)

static const dpo_cli_opt_t dpo__pred_opts[] = {
    {"--run", "predict.run", "DIR", "a train run directory: its model.txt, and model/lambda from its config.ini"},
    {"--model-file", "predict.model_file", "FILE", "model coefficients (model.txt format; default RUN/model.txt)"},
    {"--data", "predict.data", "FILE", "data to apply the model to (libsvm, csv, idx[.gz], bin)"},
    {"--model", "model.name", "NAME", "logreg | ridge | lsq (default: the run's, else logreg)"},
    {"--lambda", "model.lambda", "L", "lambda of the objective F (default: the run's; without it F is not printed)"},
    {"--quiet", "run.quiet", NULL, "no messages on stderr"},
    {"--expect-ranks", "run.expect_ranks", "N", "fail (exit 1) unless MPI runs exactly N ranks (batch scripts)"},
    {NULL, NULL, NULL, NULL}};

static const dpo_cli_opt_t dpo__pred_out_opt[] = {
    {"--out", "predict.out", "FILE", "write the predictions here, one line per row in file order (required)"},
    {NULL, NULL, NULL, NULL}};

static const char dpo__pred_more[] =
    "Metrics (stdout): data loss = mean loss over the rows, WITHOUT the regularizer; objective F\n"
    "= data loss + lambda ||x||^2 (only when lambda is known); accuracy (logreg: u'x >= 0\n"
    "predicts +1) or mse (ridge, lsq).  All are exact functions of the data file: if it is\n"
    "private data, they are non-private outputs.\n"
    "Prediction lines (predict): logreg \"LABEL PROB\" (LABEL +1 or -1, PROB = P(y = +1) =\n"
    "1 / (1 + exp(-u'x))); ridge and lsq \"VALUE\" (u'x).\n"
    "The model's dimension must match the data's (a sparse file that does not use the last\n"
    "features is fine); --dim D declares the data's dimension.\n";

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

/* Collective: this rank's prediction lines, written at its offset of `path` (ranks hold
 * consecutive row ranges in rank order, so rank order is row order). */
static int dpo__write_preds(MPI_Comm comm, const char *path, const dpo_model_t *m,
                            const dpo_shard_t *s, const double *x) {
  double *t = malloc((size_t)(s->n ? s->n : 1) * sizeof *t);
  size_t cap = (size_t)(s->n ? s->n : 1) * 48, len = 0;
  char *buf = malloc(cap);
  int rc = DPO_OK, binary = dpo_model_binary(m);
  MPI_File fh = MPI_FILE_NULL;
  if (!t || !buf) rc = dpo_err(DPO_ENOMEM, "predictions: out of memory");
  if (!rc) rc = dpo_model_local_predict(m, s, x, t);
  for (int64_t i = 0; !rc && i < s->n; i++) {
    if (binary) {
      /* P(y = +1) = sigma(t), computed without overflow for either sign */
      double p = t[i] >= 0 ? 1.0 / (1.0 + exp(-t[i])) : exp(t[i]) / (1.0 + exp(t[i]));
      len += (size_t)snprintf(buf + len, cap - len, "%d %.17g\n", t[i] >= 0 ? 1 : -1, p);
    } else {
      len += (size_t)snprintf(buf + len, cap - len, "%.17g\n", t[i]);
    }
  }
  if ((rc = dpo_agree(comm, rc))) goto out;
  long long mine = (long long)len, off = 0, total = 0;
  int rank;
  MPI_Comm_rank(comm, &rank);
  if (MPI_Exscan(&mine, &off, 1, MPI_LONG_LONG, MPI_SUM, comm) != MPI_SUCCESS ||
      MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, comm) != MPI_SUCCESS) {
    rc = dpo_agree(comm, dpo_err(DPO_EMPI, "predictions: MPI_Exscan failed"));
    goto out;
  }
  if (rank == 0) off = 0; /* MPI_Exscan leaves rank 0's result undefined */
  if (MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) !=
      MPI_SUCCESS) {
    fh = MPI_FILE_NULL;
    rc = dpo_err(DPO_EIO, "%s: cannot create the predictions file", path);
  }
  if ((rc = dpo_agree(comm, rc))) goto out;
  /* truncate a longer old file to exactly the new contents */
  if (MPI_File_set_size(fh, (MPI_Offset)total) != MPI_SUCCESS)
    rc = dpo_err(DPO_EIO, "%s: cannot set the file size", path);
  for (size_t w = 0; !rc && w < len;) {
    int k = len - w < DPO__WRITE_PIECE ? (int)(len - w) : DPO__WRITE_PIECE;
    MPI_Status st;
    if (MPI_File_write_at(fh, (MPI_Offset)(off + (long long)w), buf + w, k, MPI_CHAR, &st) !=
        MPI_SUCCESS)
      rc = dpo_err(DPO_EIO, "%s: write failed at byte %lld", path, off + (long long)w);
    w += (size_t)k;
  }
  if (MPI_File_close(&fh) != MPI_SUCCESS && !rc)
    rc = dpo_err(DPO_EIO, "%s: close failed", path);
  rc = dpo_agree(comm, rc);
out:
  free(t);
  free(buf);
  return rc;
}

static int dpo__predict_main(const dpo_cli_ctx_t *ctx, int argc, char **argv, int predict) {
  const char *cmd = predict ? "predict" : "eval";
  dpo_cli_opt_t opts[DPO__MAXOPTS], base[DPO__MAXOPTS];
  dpo_cli_opts_cat(base, DPO__MAXOPTS, dpo__pred_opts, predict ? dpo__pred_out_opt : NULL);
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, base, dpo_cli_data_opts);
  dpo_config_t *cfg = NULL;
  dpo_model_t *model = NULL;
  dpo_shard_t *data = NULL;
  double *x = NULL;
  int32_t d = 0;
  char *pos[1], usage[160], mpath[1024];
  int npos, rc, ex = 0, quiet = 0, lambda_known = 0;
  snprintf(usage, sizeof usage,
           "usage: mpirun -np P dpopt %s (--run DIR | --model-file FILE) --data FILE%s [options]",
           cmd, predict ? " --out FILE" : "");
  if (dpo_config_create(&cfg)) return dpo_cli_fail(ctx, cmd, DPO_ENOMEM);
  rc = dpo_cli_parse(ctx, argc, argv, opts, usage, dpo__pred_more, cfg, pos, 0, &npos);
  if (rc) {
    ex = rc > 0 ? 0 : DPO_EXIT_USAGE;
    goto out;
  }
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
  if (!mfile || !dpath || (predict && !opath)) {
    rc = dpo_err(DPO_EINVAL, "%s needs%s%s%s (see dpopt %s --help)", cmd,
                 mfile ? "" : " --run DIR or --model-file FILE", dpath ? "" : " --data FILE",
                 predict && !opath ? " --out FILE" : "", cmd);
    goto fail;
  }
  dpo_config_get_str(cfg, "model.name", "logreg", &mname);
  if ((rc = dpo_config_get_double(cfg, "model.lambda", 1e-4, &lambda))) goto fail;
  if (!strcmp(mname, "lsq") && !dpo_config_get(cfg, "model.lambda")) lambda = 0, lambda_known = 1;
  if ((rc = dpo_model_create(mname, lambda, &model))) goto fail;
  dpo_load_opts_t lo;
  if ((rc = dpo_cli_load_opts(cfg, &lo))) goto fail;
  lo.labels = dpo_model_binary(model) ? DPO_LABELS_BINARY : DPO_LABELS_REAL;
  dpo_cli_warn_unused(ctx, cfg);

  /* the model: read on rank 0, broadcast (one reader, one message for every error) */
  int icpt = 0; /* the model file's "intercept" line: a bias on the constant last column */
  rc = ctx->rank == 0 ? dpo_model_read_icpt(mfile, &x, &d, &icpt) : DPO_OK;
  if ((rc = dpo_agree(ctx->comm, rc))) goto fail;
  if (MPI_Bcast(&d, 1, MPI_INT32_T, 0, ctx->comm) != MPI_SUCCESS ||
      MPI_Bcast(&icpt, 1, MPI_INT, 0, ctx->comm) != MPI_SUCCESS) {
    rc = dpo_agree(ctx->comm, dpo_err(DPO_EMPI, "MPI_Bcast of the model dimension failed"));
    goto fail;
  }
  if (ctx->rank != 0 && !(x = malloc(((size_t)d + (size_t)icpt) * sizeof *x)))
    rc = dpo_err(DPO_ENOMEM, "out of memory");
  if ((rc = dpo_agree(ctx->comm, rc))) goto fail;
  if (MPI_Bcast(x, d + icpt, MPI_DOUBLE, 0, ctx->comm) != MPI_SUCCESS) {
    rc = dpo_agree(ctx->comm, dpo_err(DPO_EMPI, "MPI_Bcast of the model failed"));
    goto fail;
  }

  /* the data: dimension inferred (or --dim), then checked against the model's */
  if ((rc = dpo_shard_load(ctx->comm, dpath, &lo, &data))) goto fail;
  if (data->d < d && !data->sparse && lo.d == 0) {
    /* dense storage of a file without the last features: reload in the model's space */
    dpo_shard_destroy(data);
    data = NULL;
    lo.d = d;
    if ((rc = dpo_shard_load(ctx->comm, dpath, &lo, &data))) goto fail;
  }
  if (data->d < d && data->sparse && lo.d == 0) data->d = d; /* unused trailing features */
  if (data->d != d) {
    /* every rank sees the same (global) dimensions */
    rc = dpo_err(DPO_EFORMAT,
                 "dimension mismatch: model %s has %d coefficients but data %s has %d features "
                 "(%s): apply a model to data in its training feature space",
                 mfile, (int)d, dpath, (int)data->d,
                 lo.d ? "declared by --dim" : "inferred from the file; --dim D declares it");
    goto fail;
  }

  if ((rc = dpo_model_set_intercept(model, icpt)) || (rc = dpo_model_prepare_shard(model, data)))
    goto fail;
  double loss = NAN, metric = NAN;
  if ((rc = dpo_model_eval_shard(ctx->comm, model, data, x, &loss, &metric))) goto fail;
  if (predict && (rc = dpo__write_preds(ctx->comm, opath, model, data, x))) goto fail;

  if (ctx->rank == 0) {
    int binary = dpo_model_binary(model);
    double xx = 0;
    for (int32_t j = 0; j < d + icpt; j++) xx += x[j] * x[j];
    printf("model           %s (%s, d=%d%s%s)\n", mfile, mname, (int)d, icpt ? ", intercept" : "",
           lambda_known ? "" : ", lambda unknown: give --lambda or --run for F");
    printf("data            %s: %lld rows x %d features on %d rank%s\n", dpath,
           (long long)data->n_global, (int)data->d, ctx->size, ctx->size > 1 ? "s" : "");
    printf("data loss       %.17g   (mean %s loss, no regularizer)\n", loss,
           binary ? "logistic" : "squared");
    if (lambda_known)
      printf("objective F     %.17g   (data loss + lambda ||x||^2, lambda=%g)\n",
             loss + lambda * xx, lambda);
    printf("%-15s %.17g\n", binary ? "accuracy" : "mse", metric);
    if (predict)
      printf("predictions     %s (%lld lines: %s)\n", opath, (long long)data->n_global,
             binary ? "label probability" : "value");
  }
  goto out;
fail:
  ex = dpo_cli_fail(ctx, cmd, rc);
out:
  free(x);
  dpo_shard_destroy(data);
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
