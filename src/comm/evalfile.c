/* Applying a saved model file to a data file (dpopt predict / eval; dpo_model_eval_file and
 * dpo_model_write_predictions in dpopt/comm.h): the model is read on rank 0 and broadcast, the
 * data loaded in shards in the model's feature space, evaluated by dpo_model_eval_shard, and
 * the prediction lines written with MPI-IO. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/comm.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

/* bytes per MPI_File_write_at call (an int count) */
#define DPO__WRITE_PIECE (1 << 28)

/* path "-": rank 0 prints every rank's lines on stdout, in rank order (= row order), taking
 * them one rank at a time in pieces of DPO__STDOUT_PIECE through one buffer. */
#define DPO__STDOUT_PIECE (1 << 20)
static int dpo__predictions_stdout(MPI_Comm comm, const char *buf, size_t len) {
  int rank, size, rc = DPO_OK, werr = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char *in = rank == 0 && size > 1 ? malloc(DPO__STDOUT_PIECE) : NULL;
  if (rank == 0 && size > 1 && !in) rc = dpo_err(DPO_ENOMEM, "predictions: out of memory");
  if ((rc = dpo_agree(comm, rc))) return rc; /* before any message: nobody is left sending */
  if (rank != 0) {
    long long mine = (long long)len;
    int bad = MPI_Send(&mine, 1, MPI_LONG_LONG, 0, 0, comm) != MPI_SUCCESS;
    for (size_t w = 0; !bad && w < len;) {
      int k = len - w < DPO__STDOUT_PIECE ? (int)(len - w) : DPO__STDOUT_PIECE;
      bad = MPI_Send(buf + w, k, MPI_CHAR, 0, 1, comm) != MPI_SUCCESS;
      w += (size_t)k;
    }
    return dpo_agree(comm, bad ? dpo_err(DPO_EMPI, "predictions: MPI_Send failed") : DPO_OK);
  }
  werr = fwrite(buf, 1, len, stdout) != len;
  for (int r = 1; !rc && r < size; r++) { /* received even after a failed write: no rank waits */
    long long n = 0;
    if (MPI_Recv(&n, 1, MPI_LONG_LONG, r, 0, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      rc = dpo_err(DPO_EMPI, "predictions: MPI_Recv from rank %d failed", r);
    for (long long w = 0; !rc && w < n;) {
      int k = n - w < DPO__STDOUT_PIECE ? (int)(n - w) : DPO__STDOUT_PIECE;
      if (MPI_Recv(in, k, MPI_CHAR, r, 1, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        rc = dpo_err(DPO_EMPI, "predictions: MPI_Recv from rank %d failed", r);
      else werr |= fwrite(in, 1, (size_t)k, stdout) != (size_t)k;
      w += k;
    }
  }
  free(in);
  werr |= fflush(stdout) != 0;
  if (!rc && werr) rc = dpo_err(DPO_EIO, "stdout: write failed");
  return dpo_agree(comm, rc);
}

/* Each rank writes its own lines at its offset of `path` (ranks hold consecutive row ranges
 * in rank order, so rank order is row order); "-": on stdout through rank 0. */
int dpo_model_write_predictions(MPI_Comm comm, const char *path, const dpo_model_t *m,
                            const dpo_shard_t *s, const double *x) {
  double *t = malloc((size_t)(s->n ? s->n : 1) * sizeof *t);
  size_t cap = (size_t)(s->n ? s->n : 1) * 48, len = 0;
  char *buf = malloc(cap);
  int rc = DPO_OK, binary = dpo_model_binary(m), multi = dpo_model_multiclass(m);
  int32_t *cls = NULL;
  MPI_File fh = MPI_FILE_NULL;
  if (!t || !buf) rc = dpo_err(DPO_ENOMEM, "predictions: out of memory");
  if (!rc && multi && !(cls = malloc((size_t)(s->n ? s->n : 1) * sizeof *cls)))
    rc = dpo_err(DPO_ENOMEM, "predictions: out of memory");
  if (!rc) rc = multi ? dpo_model_local_classify(m, s, x, cls, t) : dpo_model_local_predict(m, s, x, t);
  for (int64_t i = 0; !rc && i < s->n; i++) {
    if (multi) { /* the most probable class and its probability */
      len += (size_t)snprintf(buf + len, cap - len, "%d %.17g\n", (int)cls[i], t[i]);
    } else if (binary) {
      /* P(y = +1) = sigma(t), computed without overflow for either sign */
      double p = t[i] >= 0 ? 1.0 / (1.0 + exp(-t[i])) : exp(t[i]) / (1.0 + exp(t[i]));
      len += (size_t)snprintf(buf + len, cap - len, "%d %.17g\n", t[i] >= 0 ? 1 : -1, p);
    } else {
      len += (size_t)snprintf(buf + len, cap - len, "%.17g\n", t[i]);
    }
  }
  if ((rc = dpo_agree(comm, rc))) goto out;
  if (!strcmp(path, "-")) {
    rc = dpo__predictions_stdout(comm, buf, len);
    goto out;
  }
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
  free(cls);
  free(buf);
  return rc;
}

int dpo_model_read_bcast_k(MPI_Comm comm, const char *path, double **x, int32_t *d, int *icpt,
                           int32_t *K) {
  int rank, rc;
  MPI_Comm_rank(comm, &rank);
  *x = NULL;
  *d = 0;
  *icpt = 0;
  *K = 0;
  /* one reader, one message for every error */
  rc = rank == 0 ? dpo_model_read_k(path, x, d, icpt, K) : DPO_OK;
  if ((rc = dpo_agree(comm, rc))) return rc;
  int32_t hdr[3] = {*d, (int32_t)*icpt, *K};
  if (MPI_Bcast(hdr, 3, MPI_INT32_T, 0, comm) != MPI_SUCCESS)
    return dpo_agree(comm, dpo_err(DPO_EMPI, "MPI_Bcast of the model dimension failed"));
  *d = hdr[0];
  *icpt = (int)hdr[1];
  *K = hdr[2];
  size_t len = ((size_t)*d + (size_t)*icpt) * (size_t)(*K > 0 ? *K : 1);
  if (rank != 0 && !(*x = malloc((len ? len : 1) * sizeof **x)))
    rc = dpo_err(DPO_ENOMEM, "out of memory");
  if (!(rc = dpo_agree(comm, rc)) && MPI_Bcast(*x, (int)len, MPI_DOUBLE, 0, comm) != MPI_SUCCESS)
    rc = dpo_agree(comm, dpo_err(DPO_EMPI, "MPI_Bcast of the model failed"));
  if (rc) {
    free(*x);
    *x = NULL;
  }
  return rc;
}

int dpo_model_read_bcast(MPI_Comm comm, const char *path, double **x, int32_t *d, int *icpt) {
  int32_t K = 0;
  int rc = dpo_model_read_bcast_k(comm, path, x, d, icpt, &K);
  if (rc || K == 0) return rc;
  free(*x);
  *x = NULL;
  /* K came from the broadcast: every rank refuses alike */
  return dpo_err(DPO_EFORMAT, "%s: a multiclass model (classes %d): read it with --model softmax",
                 path, (int)K);
}

/* The data in the model's space of d features.  A data file matches the model when its
 * declared width (--dim, FILE.schema, or the columns / header of a dense format) is d, or,
 * for a sparse file without a declaration, when no row has an index above d: such a file
 * may legitimately leave the last features unused.  When a row goes beyond d the file is
 * read again with the model's d, so that the loader names the first such row (the lowest
 * failing rank holds the earliest rows). */
static int dpo__load_in_model_space(MPI_Comm comm, const char *mfile, int32_t d, const char *dpath,
                                    dpo_load_opts_t lo, dpo_shard_t **data) {
  char sp[1100], whence[1200];
  int rc, declared = 0, dim_given = lo.d > 0;
  snprintf(sp, sizeof sp, "%s.schema", dpath);
  /* not collective, the same answer on every rank */
  rc = dpo_load_opts_schema(dpath, &lo);
  if (!rc) rc = dpo_shard_width_declared(dpath, &lo, &declared);
  if ((rc = dpo_agree(comm, rc))) return rc;
  if (!declared) {
    if ((rc = dpo_shard_load(comm, dpath, &lo, data))) return rc;
    if ((*data)->d <= d) {
      if ((*data)->sparse) (*data)->d = d; /* unused trailing features */
      else { /* --dense: store it again in the model's width */
        dpo_shard_destroy(*data);
        *data = NULL;
        lo.d = d;
        rc = dpo_shard_load(comm, dpath, &lo, data);
      }
      return rc;
    }
    /* a row beyond the model: reload with its d, which names the first such row */
    dpo_shard_destroy(*data);
    *data = NULL;
    lo.d = d;
    rc = dpo_shard_load(comm, dpath, &lo, data);
    if (rc == DPO_EFORMAT) {
      /* same agreed detail on every rank: one message naming both files */
      const char *am = NULL;
      char why[700];
      snprintf(why, sizeof why, "%s", dpo_err_agreed(NULL, NULL, NULL, &am) ? am : dpo_errmsg());
      return dpo_err(DPO_EFORMAT,
                     "data %s does not match model %s (d=%d, its number of coefficients): %s; "
                     "apply a model to data in its training feature space",
                     dpath, mfile, (int)d, why);
    }
    return rc;
  }
  if ((rc = dpo_shard_load(comm, dpath, &lo, data))) return rc;
  if ((*data)->d == d) return DPO_OK;
  if (dim_given) snprintf(whence, sizeof whence, "declared by --dim");
  else if (lo.d > 0) snprintf(whence, sizeof whence, "declared by %s", sp);
  else snprintf(whence, sizeof whence, "fixed by the file's columns or header");
  /* every rank sees the same (global) dimensions */
  return dpo_err(DPO_EFORMAT,
                 "dimension mismatch: model %s has %d coefficients but data %s has %d features "
                 "(%s): apply a model to data in its training feature space",
                 mfile, (int)d, dpath, (int)(*data)->d, whence);
}

int dpo_model_eval_file(MPI_Comm comm, dpo_model_t *m, const char *model_file,
                        const char *data, const dpo_load_opts_t *lo, const char *pred_out,
                        dpo_eval_result_t *res) {
  dpo_shard_t *sh = NULL;
  double *x = NULL;
  int32_t d = 0;
  int rc, icpt = 0;
  memset(res, 0, sizeof *res);
  res->loss = res->metric = NAN;
  /* a model with an intercept line is applied to the rows with the public constant column
   * appended (dpo_model_prepare_shard), the bias its last coefficient */
  int32_t K = 0;
  if ((rc = dpo_model_read_bcast_k(comm, model_file, &x, &d, &icpt, &K))) goto out;
  /* the file says how many classes; the objective must be the one that has them */
  if (K > 0 && !dpo_model_multiclass(m))
    rc = dpo_err(DPO_EINVAL, "%s: a multiclass model (classes %d): use --model softmax",
                 model_file, (int)K);
  else if (K == 0 && dpo_model_multiclass(m))
    rc = dpo_err(DPO_EINVAL, "%s: not a multiclass model file (no \"classes K\" line): model %s "
                 "needs one", model_file, dpo_model_name(m));
  else rc = dpo_model_set_classes(m, K);
  if (rc) goto out; /* K and m are the same on every rank */
  if ((rc = dpo__load_in_model_space(comm, model_file, d, data, *lo, &sh)) ||
      (rc = dpo_model_set_intercept(m, icpt)) ||
      (rc = dpo_agree(comm, dpo_model_prepare_shard(m, sh))) ||
      (rc = dpo_model_eval_shard(comm, m, sh, x, &res->loss, &res->metric)) ||
      (pred_out && (rc = dpo_model_write_predictions(comm, pred_out, m, sh, x))))
    goto out;
  if (K > 0) {
    if (!(res->confusion = calloc((size_t)K * (size_t)K, sizeof *res->confusion)))
      rc = dpo_err(DPO_ENOMEM, "confusion matrix: out of memory");
    if ((rc = dpo_agree(comm, rc)) ||
        (rc = dpo_model_confusion(comm, m, sh, x, res->confusion)))
      goto out;
  }
  res->d = d;
  res->n = sh->n_global;
  res->intercept = icpt;
  res->classes = K;
  int64_t p = (int64_t)(d + icpt) * (K > 0 ? K : 1);
  for (int64_t j = 0; j < p; j++) res->xx += x[j] * x[j];
out:
  if (rc) {
    free(res->confusion);
    res->confusion = NULL;
  }
  free(x);
  dpo_shard_destroy(sh);
  return rc;
}
