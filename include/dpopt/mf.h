/* Matrix factorization: the defaults of `dpopt mf` and the predictions of its runs.  The
 * algorithms, partitions and options are in dpopt/hamsi.h. */
#ifndef DPOPT_MF_H
#define DPOPT_MF_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "dpopt/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `dpopt mf` is a run of the run API (dpopt/run.h, run.command = mf, data.train the ratings
 * file, the mf.* keys of dpopt mf --help): method, partition, schedule, rank, strata, step
 * sizes, epochs or time, held-out fraction, seed, mf.zero_based, mf.biases, mf.early_stop,
 * mf.plain.  By default the model is biased (mf.biases), regularized (DPO_MF_LAMBDA_BIASED)
 * and early-stopped (DPO_MF_PATIENCE) on the held-out split, the best epoch returned;
 * mf.plain is the thesis's (factors only, lambda 0, the last epoch).  The run directory
 * receives config.ini, trace.csv, X1.txt, X2t.txt, summary.json (and biases.txt for the
 * biased model).  Seeded and without noise: the output is NOT private. */
/* Default L2 weight of the biased model (mf.biases = 1; mf.lambda overrides).  A fixed
 * constant, chosen on `dpopt gen ratings --size ml-100k --realistic` (held-out RMSE at rank
 * 10 and 50; see doc/design.md), not from the data being factorized. */
#define DPO_MF_LAMBDA_BIASED 10.0
/* Default early-stopping patience of the default model (mf.early_stop without mf.plain; needs
 * a held-out split and evaluations, else off).  On real MovieLens-100K (90/10 split) the held-out
 * RMSE of rank 50 sits on a plateau from about epoch 26 to 90 before it falls again: patience 10
 * stopped there (0.934), 60 reached 0.894 at epoch 146. */
#define DPO_MF_PATIENCE 60
/* Default epoch cap of the default model when it stops early (mf.epochs not given): early
 * stopping, not the cap, ends most runs; rank 10 on MovieLens-100K still improved at epoch 428
 * (held-out RMSE 0.894; 0.944 after 20 epochs, the bias-only level). */
#define DPO_MF_EPOCHS 500
/* Default rank of the default model (mf.rank without mf.plain, which keeps the library's 10):
 * on gen ratings --size ml-100k --realistic, 90/10 split, rank 10 scored held-out RMSE 0.961,
 * no better than a regularized bias-only model (0.959), rank 50 0.943. */
#define DPO_MF_RANK 50
/* Default share of the wall time dpopt mf spends evaluating (mf.eval_budget; the library's
 * default is 0, every due epoch): under 5% with room for the final one. */
#define DPO_MF_EVAL_BUDGET 0.04

/* Predictions of a run directory's model (X1.txt, X2t.txt, biases.txt when summary.json says
 * "biases": true) for the (user, item) pairs of the text file `pairs`: one pair per line, the
 * first two fields (separated by blanks, ',' or '::'; more fields, e.g. a rating, are
 * ignored; '#' lines and blank lines skipped), ids 1-based unless zero_based.  Writes "user
 * item prediction" lines (the ids as given, %.17g) to `out`; *n gets the number of pairs.
 * Local (the CLI calls it on rank 0).  Errors name the file and line. */
int dpo_mf_predict_file(const char *rundir, const char *pairs, int zero_based, FILE *out,
                        int64_t *n);

#ifdef __cplusplus
}
#endif
#endif
