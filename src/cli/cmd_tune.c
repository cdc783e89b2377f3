/* dpopt tune: private hyperparameter selection (dpopt/tune.h does the work and carries the
 * guarantee); this file parses the command line. */
#include <stdio.h>

#include "cli/cli.h"
#include "dpopt/status.h"
#include "dpopt/run.h"
#include "dpopt/runout.h"
#include "dpopt/tune.h"

const dpo_cli_opt_t dpo_cli_tune_opts[] = {
    {"--data", "data.train", "FILE", "training data (the candidates' trainings and, by default, their validation rows)"},
    {"--test", "data.test", "FILE", "test data: the chosen model's accuracy on it is reported, never selected on"},
    {"--valid", "tune.valid", "FILE", "validation data that score the candidates (counted as private; default: a split of --data)"},
    {"--valid-fraction", "tune.valid_fraction", "F", "the fraction of --data's rows that score the candidates (default 0.1; add-remove)"},
    {"--row-l1-bound", "data.row_l1_bound", "B", "declared public bound on ||u_i||_1"},
    {"--row-l2-bound", "data.row_l2_bound", "B", "declared public bound on ||u_i||_2"},
    {"--row-bound-action", "data.row_bound_action", "A", "reject | clip rows over a declared bound"},
    {"--model", "model.name", "NAME", "logreg | softmax (K classes, labels 0..K-1; default logreg)"},
    {"--classes", "model.classes", "K", "softmax: the number of classes K (public)"},
    {"--lambda", "model.lambda", "L", "regularization lambda (default 1e-4)"},
    {"--no-intercept", "model.no_intercept", NULL, "no bias term (default: a bias, as in dpopt train)"},
    {"--algos", "tune.algo", "A,B", "candidate algorithms (default: train's pick at --eps, --delta, with its recipe)"},
    {"--steps", "tune.step", "X,Y", "candidate step constants: algo.eta of dp-sgd-rdp, algo.c of the others (default: the recipe's halved, kept, doubled)"},
    {"--lrs", "tune.lr", "X,Y", "dp-sgd-rdp candidate step sizes (default: its own)"},
    {"--clips", "tune.clip", "C,D", "dp-sgd-rdp candidate L2 clip norms (default: privacy.clip)"},
    {"--epochs", "tune.epochs", "E,F", "dp-sgd-rdp candidate epochs (default: the recipe's halved and kept)"},
    {"--batch", "algo.m", "M", "dp-sgd-rdp batch size (default: the recipe's, else ceil(sqrt n))"},
    {"--split", "tune.split", "S", "search by parallel composition: the candidates train and are selected on a fraction S of the rows (0.05..0.5), each at the whole eps, the chosen trains again on the rest (default 0.1 for a grid given without --mean, --valid, --valid-fraction)"},
    {"--mean", "tune.mean", "K", "the geometric search (instead of --split): mean number of repetitions (integer, default 5)"},
    {"--eps", "privacy.eps", "E", "total budget epsilon: every repetition and the selection"},
    {"--delta", "privacy.delta", "D", "total delta (default 0: pure eps, Liu-Talwar; > 0: RDP, Papernot-Steinke)"},
    {"--clip", "privacy.clip", "N:C", "per-example clipping of every candidate"},
    {"--public-n", "privacy.public_n", "N", "add-remove: the public training set size for dp-sgd-rdp's rate m/N and steps (required there: the row count is private)"},
    {"--budget-store", "privacy.store", "STORE", "the data set's budget store (dpopt budget): the tune's whole budget is reserved there before the data are read, refused (exit 3) if it does not fit what is left, and settled to its one charge"},
    {"--seed", "run.seed", "S", "reproducible randomness: the tune is then NOT private"},
    {"--out", "run.dir", "DIR", "tune directory (default runs/tune-YYYYmmdd-HHMMSS)"},
    {"--quiet", "run.quiet", NULL, "no messages on stderr"},
    {"--checkpoint-every", "run.checkpoint_every", "N", "write DIR/checkpoint every N finished repetitions (--split: candidates) (default 0: only on SIGTERM/SIGINT and run.stop_after N, which stops once N have finished)"},
    {"--resume", "run.resume", "DIR", "continue the stopped tune in DIR from its checkpoint (only run.* settings may change)"},
    {"--journal-key", "privacy.journal_key", "FILE", "key of the journal's hash chain (default $DPOPT_JOURNAL_KEY, else ~/.config/dpopt/journal.key); never saved in the tune: give it again with --resume"},
    {NULL, NULL, NULL, NULL}};

static const char dpo__tune_more[] =
    "Without any grid or tune option (--algos, --steps, --lrs, --clips, --epochs, --mean,\n"
    "--valid, --valid-fraction, --split) the tune trains once, as dpopt train with the same options:\n"
    "train's recipe at the whole --eps, --delta, and says so (a selection over the default grid\n"
    "leaves each candidate about a third of eps and lost to it on a9a at every eps measured).\n"
    "Without --algos the grid is centred on the recipe dpopt train picks at the same --eps and\n"
    "--delta (method, batch, epochs, clip, step): its step constant halved, kept and doubled\n"
    "and, for dp-sgd-rdp, its epochs halved and kept.  A grid of one candidate is refused (it\n"
    "would only split the budget of a plain train run).\n"
    "A grid without --mean, --valid or --valid-fraction is searched with --split 0.1 (below;\n"
    "on a9a within noise of train's recipe at eps 0.1 to 10, where the geometric search lost).\n"
    "With --mean, --valid or --valid-fraction the search is geometric:\n"
    "runs K private trainings, K geometric with mean tune.mean (drawn on rank 0, never\n"
    "released), each with a configuration drawn uniformly from the grid (the product of the\n"
    "lists), scores each by the number of correct predictions on the validation rows plus\n"
    "Laplace noise (sensitivity 1 under either neighbouring relation), and releases only the\n"
    "best.  The validation rows are --valid FILE, or by default a fraction (--valid-fraction,\n"
    "0.1) of --data's rows picked by a hash of each row's content, so one row added or removed\n"
    "changes one part only (add-remove neighbours); the candidates train on the other rows.\n"
    "--test is only evaluated on the chosen model and reported.\n"
    "With --split S the search is by parallel composition instead: a secret keyed draw per\n"
    "row position splits --data into a validation part (S/4), one training part per candidate\n"
    "and a final part (1 - S); each candidate trains on its part at the whole --eps, --delta,\n"
    "report-noisy-max on the validation part picks one, and it trains again on the final part\n"
    "at the whole budget.  Each row is in one part: the total is (eps, delta), one charge per\n"
    "part in ledger.jsonl; config.ini holds the tune's own settings, summary.json the chosen.\n"
    "Written: model.txt, config.ini (the chosen settings; with --split the tune's own; dpopt\n"
    "eval --run reads the model's from it), summary.json (the noisy count;\n"
    "under replace-one also the noisy accuracy, count / rows of --valid; under add-remove the\n"
    "number of validation rows is private and not released; the budget and its proof).\n"
    "The whole cost is ONE charge in ledger.jsonl, made before the first training:\n"
    "  delta = 0: every repetition eps0-DP, the tune 3 eps0-DP (Liu & Talwar 2019);\n"
    "  delta > 0: Papernot & Steinke 2022, Thm 2 (eta = 1) on the repetitions' RDP curve.\n"
    "Candidates: dp-sgd-rdp (over --lrs, --clips, --epochs) and the pure-eps dp-* algorithms.\n"
    "The run time grows with K: a tune is private only where its duration is not observed.\n"
    "Stop and resume: SIGTERM or SIGINT stop the tune at the next boundary between repetitions\n"
    "(candidates with --split), or inside a repetition's training, which then restarts from\n"
    "scratch (nothing of it was used); DIR/checkpoint (owner-only, sealed with the journal key)\n"
    "keeps the state, and dpopt tune --resume DIR continues the same search under the same\n"
    "charge (exit 5 when stopped).  Every finished repetition is journalled before its score\n"
    "is used, so a resume whose journal holds one the checkpoint does not know is refused.\n";

int dpo_cmd_tune(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_cli_opt_t opts[64];
  dpo_cli_opts_cat(opts, 64, dpo_cli_tune_opts, dpo_cli_data_opts);
  dpo_config_t *cfg = NULL;
  char *pos[1];
  int npos, rc, ex, quiet = 0;
  if ((ex = dpo_cli_start(ctx, "tune", argc, argv, opts,
                          "usage: mpirun --quiet -np P dpopt tune --data FILE --eps E [--test FILE] [options]",
                          dpo__tune_more, &cfg, pos, 0, &npos, NULL)) >= 0)
    goto out;
  if ((rc = dpo_config_get_bool(cfg, "run.quiet", 0, &quiet))) goto fail;
  if (!dpo_config_get(cfg, "model.intercept") && !dpo_config_get(cfg, "model.no_intercept"))
    dpo_config_set(cfg, "model.intercept", "1", "default (dpopt tune)");
  dpo_msg_set_quiet(quiet || ctx->rank != 0);
  dpo_run_signals_install(); /* every rank: SIGTERM/SIGINT stop the tune with a checkpoint */
  rc = dpo_tune_run_config(ctx->comm, cfg, ctx->rank == 0 ? stdout : NULL);
  dpo_run_signals_restore();
  if (rc == DPO_EINTR) { /* checkpoint written, every line journalled */
    if (ctx->rank == 0) fprintf(stderr, "dpopt tune: %s\n", dpo_errmsg());
    ex = DPO_EXIT_INTR;
    goto out;
  }
  if (rc) goto fail;
  ex = 0;
  goto out;
fail:
  ex = dpo_cli_fail(ctx, "tune", rc);
out:
  dpo_config_destroy(cfg);
  return ex;
}
