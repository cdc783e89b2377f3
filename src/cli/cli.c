#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpopt/runout.h"
#include "dpopt/status.h"

static void dpo__cli_help(const char *usage, const dpo_cli_opt_t *opts, const char *more) {
  printf("%s\n\nOptions:\n", usage);
  printf("  %-28s %s\n", "--config FILE", "INI file; flags given on the command line override it");
  printf("  %-28s %s\n", "--set SECTION.KEY=VALUE", "set any config key");
  for (const dpo_cli_opt_t *o = opts; o->flag; o++) {
    char left[64];
    snprintf(left, sizeof left, "%s%s%s", o->flag, o->arg ? " " : "", o->arg ? o->arg : "");
    if (o->key)
      printf("  %-28s %s [%s]\n", left, o->help, o->key);
    else
      printf("  %-28s %s\n", left, o->help);
  }
  printf("  %-28s %s\n", "-h, --help", "show this help");
  if (more) printf("\n%s", more);
}

int dpo_cli_parse(const dpo_cli_ctx_t *ctx, int argc, char **argv, const dpo_cli_opt_t *opts,
                  const char *usage, const char *more_help, dpo_config_t *cfg, char **pos,
                  int maxpos, int *npos) {
  int rc;
  *npos = 0;
  /* the flag table's keys are valid whether or not this run reads them (typo hints) */
  for (const dpo_cli_opt_t *o = opts; o->flag; o++)
    if (o->key) dpo_config_declare(cfg, o->key);
  /* --config first, so flags override the file whatever their order */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      if (ctx->rank == 0) dpo__cli_help(usage, opts, more_help);
      return 1;
    }
    const char *path = NULL;
    if (!strcmp(argv[i], "--config") && i + 1 < argc) path = argv[++i];
    else if (!strncmp(argv[i], "--config=", 9)) path = argv[i] + 9;
    if (path && (rc = dpo_config_load_ini(cfg, path)) != DPO_OK) {
      if (ctx->rank == 0) fprintf(stderr, "dpopt: error: %s\n", dpo_errmsg());
      return -1;
    }
  }
  for (int i = 1; i < argc; i++) {
    char *a = argv[i];
    if (!strcmp(a, "--config")) {
      i++;
      continue;
    }
    if (!strncmp(a, "--config=", 9)) continue;
    if (strncmp(a, "--", 2) != 0 || !strcmp(a, "--")) {
      if (!strcmp(a, "--")) a = (i + 1 < argc) ? argv[++i] : NULL;
      if (!a) break;
      if (*npos >= maxpos) {
        if (ctx->rank == 0) fprintf(stderr, "dpopt: error: unexpected argument '%s' (see --help)\n", a);
        return -1;
      }
      pos[(*npos)++] = a;
      continue;
    }
    char flag[128];
    const char *val = NULL;
    const char *eq = strchr(a, '=');
    if (eq) {
      snprintf(flag, sizeof flag, "%.*s", (int)(eq - a), a);
      val = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", a);
    }
    if (!strcmp(flag, "--set")) {
      if (!val) val = (i + 1 < argc) ? argv[++i] : NULL;
      const char *e2 = val ? strchr(val, '=') : NULL;
      if (!e2 || e2 == val) {
        if (ctx->rank == 0) fprintf(stderr, "dpopt: error: --set needs SECTION.KEY=VALUE\n");
        return -1;
      }
      char key[256];
      snprintf(key, sizeof key, "%.*s", (int)(e2 - val), val);
      if (dpo_config_set(cfg, key, e2 + 1, "--set") != DPO_OK) {
        if (ctx->rank == 0) fprintf(stderr, "dpopt: error: %s\n", dpo_errmsg());
        return -1;
      }
      continue;
    }
    const dpo_cli_opt_t *o = opts;
    for (; o->flag; o++)
      if (!strcmp(o->flag, flag)) break;
    if (!o->flag) {
      if (ctx->rank == 0) {
        const char *cands[128];
        int nc = 0;
        cands[nc++] = "--config";
        cands[nc++] = "--set";
        cands[nc++] = "--help";
        for (const dpo_cli_opt_t *q = opts; q->flag && nc < 128; q++) cands[nc++] = q->flag;
        const char *sug = dpo_config_nearest(flag, cands, nc);
        if (sug)
          fprintf(stderr, "dpopt: error: unknown option '%s': did you mean %s? (see --help)\n", flag, sug);
        else
          fprintf(stderr, "dpopt: error: unknown option '%s' (see --help)\n", flag);
      }
      return -1;
    }
    if (o->arg) {
      if (!val) {
        if (i + 1 >= argc) {
          if (ctx->rank == 0) fprintf(stderr, "dpopt: error: option %s needs a value %s\n", flag, o->arg);
          return -1;
        }
        val = argv[++i];
      }
    } else {
      if (val) {
        if (ctx->rank == 0) fprintf(stderr, "dpopt: error: option %s takes no value\n", flag);
        return -1;
      }
      val = "true";
    }
    if (dpo_config_set(cfg, o->key ? o->key : o->flag, val, flag) != DPO_OK) {
      if (ctx->rank == 0) fprintf(stderr, "dpopt: error: %s\n", dpo_errmsg());
      return -1;
    }
  }
  return 0;
}

int dpo_cli_exit_status(int status) { return dpo_exit_status(status); }

/* How long a rank with an error nobody agreed on waits for the others (below). */
static double dpo__fail_wait(void) {
  const char *w = getenv("DPOPT_FAIL_WAIT");
  double v = w ? atof(w) : 0;
  return v > 0 ? v : 10.0;
}

/* An error this rank recorded itself (no dpo_agree since).  Nearly always every rank computed
 * the same one (flags and config are the same everywhere), so the ranks meet on errcomm, a
 * communicator no library code uses (no mismatch with a collective other ranks may be in),
 * and the first failing rank's detail goes to rank 0.  A rank the others never join (an
 * error only it knows) prints its own detail after DPOPT_FAIL_WAIT seconds (default 10) and
 * aborts the job, so nobody waits forever.  Returns the agreed status. */
static int dpo__fail_meet(const dpo_cli_ctx_t *ctx, const char *cmd, int status, int *first,
                          int *last, int *all, char *msg, size_t cap) {
  int mine[3] = {ctx->rank, -ctx->rank, 1}, red[3];
  MPI_Request rq;
  int done = 0;
  if (MPI_Iallreduce(mine, red, 3, MPI_INT, MPI_MIN, ctx->errcomm, &rq) == MPI_SUCCESS) {
    double t0 = dpo_wtime(), wait = dpo__fail_wait();
    while (MPI_Test(&rq, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
           dpo_wtime() - t0 < wait) {
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
  }
  if (!done) {
    fprintf(stderr,
            "dpopt %s: [rank %d] error: %s (%s)\n"
            "dpopt %s: [rank %d] the other ranks did not report this error: aborting the job\n",
            cmd, ctx->rank, msg, dpo_strerror(status), cmd, ctx->rank);
    fflush(stderr);
    MPI_Abort(ctx->comm, dpo_cli_exit_status(status));
  }
  *first = red[0];
  *last = -red[1];
  *all = red[2];
  struct { int code; char msg[1000]; } pkt;
  pkt.code = status;
  snprintf(pkt.msg, sizeof pkt.msg, "%s", msg);
  if (MPI_Bcast(&pkt, (int)sizeof pkt, MPI_BYTE, *first, ctx->errcomm) == MPI_SUCCESS) {
    snprintf(msg, cap, "%s", pkt.msg);
    status = pkt.code;
  }
  return status;
}

int dpo_cli_fail(const dpo_cli_ctx_t *ctx, const char *cmd, int status) {
  int first = ctx->rank, last = ctx->rank, all = 1;
  const char *am = NULL;
  char msg[1000];
  if (dpo_err_agreed(&first, &last, &all, &am)) {
    snprintf(msg, sizeof msg, "%s", am);
  } else {
    snprintf(msg, sizeof msg, "%s", dpo_errmsg());
    if (ctx->size > 1 && ctx->errcomm != MPI_COMM_NULL)
      status = dpo__fail_meet(ctx, cmd, status, &first, &last, &all, msg, sizeof msg);
  }
  int ex = dpo_cli_exit_status(status);
  if (ctx->rank != 0) return ex;
  dpo_progress_end();
  /* one line, on rank 0; the rank that found the error is named unless every rank did */
  if (ctx->size == 1 || all)
    fprintf(stderr, "dpopt %s: error: %s (%s)\n", cmd, msg, dpo_strerror(status));
  else if (first == last)
    fprintf(stderr, "dpopt %s: [rank %d] error: %s (%s)\n", cmd, first, msg, dpo_strerror(status));
  else
    fprintf(stderr, "dpopt %s: [rank %d and others] error: %s (%s)\n", cmd, first, msg,
            dpo_strerror(status));
  fflush(stderr);
  return ex;
}

void dpo_cli_warn_unused(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg) {
  if (ctx->rank == 0) dpo_config_warn_unused(cfg, stderr);
}

void dpo_cli_warn_typos(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg) {
  /* every rank marks the keys (the same on all), rank 0 prints */
  dpo_config_warn_typos(cfg, ctx->rank == 0 ? stderr : NULL);
}

/* run.expect_ranks (set by the jobs/slurm and jobs/pbs scripts from the scheduler's task
 * count): a launch whose MPI world differs -- typically srun starting N singletons because
 * Open MPI was built without the scheduler's PMI -- must fail at once, not run N copies. */
int dpo_cli_check_ranks(const dpo_cli_ctx_t *ctx, const dpo_config_t *cfg) {
  int64_t want = 0;
  int rc = dpo_config_get_int(cfg, "run.expect_ranks", 0, &want);
  if (rc) return rc;
  if (want < 0)
    return dpo_err(DPO_EINVAL, "%s: run.expect_ranks = %lld: expected a rank count >= 1 (0 = no check)",
                   dpo_config_origin(cfg, "run.expect_ranks"), (long long)want);
  if (want > 0 && want != ctx->size)
    return dpo_err(DPO_EINVAL,
                   "MPI world has %d rank%s but run.expect_ranks = %lld (the scheduler's task count, "
                   "from %s): the launcher did not start one MPI job of that size (srun without "
                   "PMI support starts singletons; check srun --mpi=list / mpirun -np)",
                   ctx->size, ctx->size == 1 ? "" : "s", (long long)want,
                   dpo_config_origin(cfg, "run.expect_ranks"));
  return DPO_OK;
}

#include <strings.h>

const dpo_cli_opt_t dpo_cli_data_opts[] = {
    {"--format", "data.format", "F", "auto|libsvm|csv|idx|bin (default auto)"},
    {"--dim", "data.dim", "D", "declared number of features; a private run on a sparse file needs it or FILE.schema ([schema] features = D beside the data); non-private runs infer it from the rows"},
    {"--dense", "data.dense", NULL, "store rows dense even if the file is sparse"},
    {"--zero-based", "data.zero_based", NULL, "LIBSVM/svmlight feature indices start at 0 (as scikit-learn's dump_svmlight_file writes them); default 1"},
    {"--labels", "data.labels", "KIND", "binary (+1/-1, 0/1), real or class (0..K-1); train/eval/predict: from --model"},
    {"--idx-class", "data.idx_class", "K", "IDX images, binary labels: class K is +1, the rest -1 (one-vs-rest; default 0)"},
    {"--idx-labels", "data.idx_labels", "FILE", "IDX labels file (default: derived from images)"},
    {NULL, NULL, NULL, NULL}};

void dpo_cli_opts_cat(dpo_cli_opt_t *out, int cap, const dpo_cli_opt_t *a, const dpo_cli_opt_t *b) {
  int k = 0;
  for (; a && a->flag && k < cap - 1; a++) out[k++] = *a;
  for (; b && b->flag && k < cap - 1; b++) out[k++] = *b;
  memset(&out[k], 0, sizeof out[k]);
}

/* Keys a command reads that have no flag (every flag's key is declared by its table).  tune
 * and audit are checked later, once the runs they drive have read their keys (dpo_run_setup;
 * cmd_audit.c), still before anything is written. */
static const struct {
  const char *cmd, *keys[8];
} dpo__cli_extra[] = {
    {"admm", {"privacy.accountant", "privacy.collude", "privacy.trust", "parties.count",
              "run.stop_after", NULL}},
    /* mf: run.stop_after; the rest are known so that the run refuses them with the reason
     * (mf.out was replaced by --out, mf keeps no last release and adds no noise) */
    {"mf", {"run.stop_after", "mf.out", "run.keep_every", "run.keep_seconds", "privacy.eps",
            NULL}},
    {NULL, {NULL}}};

int dpo_cli_start(const dpo_cli_ctx_t *ctx, const char *cmd, int argc, char **argv,
                  const dpo_cli_opt_t *opts, const char *usage, const char *more,
                  dpo_config_t **cfg, char **pos, int maxpos, int *npos, const char *npos_err) {
  if (dpo_config_create(cfg)) return dpo_cli_fail(ctx, cmd, DPO_ENOMEM);
  int rc = dpo_cli_parse(ctx, argc, argv, opts, usage, more, *cfg, pos, maxpos, npos);
  if (rc) return rc > 0 ? DPO_EXIT_OK : DPO_EXIT_USAGE;
  if (npos_err && *npos != maxpos) {
    if (ctx->rank == 0) fprintf(stderr, "dpopt %s: error: %s\n", cmd, npos_err);
    return DPO_EXIT_USAGE;
  }
  if (!strcmp(cmd, "tune") || !strcmp(cmd, "audit")) return -1;
  dpo_config_declare(*cfg, "run.expect_ranks"); /* the batch scripts set it for any command */
  for (int i = 0; dpo__cli_extra[i].cmd; i++)
    if (!strcmp(dpo__cli_extra[i].cmd, cmd))
      for (int k = 0; dpo__cli_extra[i].keys[k]; k++)
        dpo_config_declare(*cfg, dpo__cli_extra[i].keys[k]);
  /* dpopt admm under secagg reads the parties' identity keys (one party per rank) when it
   * makes the pairwise keys (admm_run.c, privacy/plan.c) and, under secagg and local, each
   * party's own run directory (its guard's journal), file and budget store (admm_pstore.c);
   * under any other trust they stay unknown, so setting them is refused */
  const char *trust = dpo_config_get(*cfg, "privacy.trust");
  const int sa = trust && !strcmp(trust, "secagg");
  if (!strcmp(cmd, "admm") && trust && (sa || !strcmp(trust, "local"))) {
    char key[48];
    if (sa) dpo_config_declare(*cfg, "parties.key");
    static const char *const own[] = {"out", "data", "budget_store"};
    for (int i = 0; i < 3; i++) {
      snprintf(key, sizeof key, "parties.%s", own[i]);
      dpo_config_declare(*cfg, key);
      for (int k = 0; k < ctx->size; k++) {
        snprintf(key, sizeof key, "party.%d.%s", k, own[i]);
        dpo_config_declare(*cfg, key);
      }
    }
    for (int k = 0; k < ctx->size; k++) {
      if (!sa) continue;
      snprintf(key, sizeof key, "party.%d.key", k);
      dpo_config_declare(*cfg, key);
      snprintf(key, sizeof key, "party.%d.public_key", k);
      dpo_config_declare(*cfg, key);
    }
  }
  char what[64];
  snprintf(what, sizeof what, "dpopt %s", cmd);
  /* fail closed: a key nothing reads stops the command before it writes anything */
  if ((rc = dpo_config_check_known(*cfg, what))) return dpo_cli_fail(ctx, cmd, rc);
  return -1;
}

int dpo_cli_run(const dpo_cli_ctx_t *ctx, const char *cmd, dpo_run_t *run, int *ex) {
  int rc;
  dpo_run_result_t res;
  if ((rc = dpo_cli_check_ranks(ctx, dpo_run_config(run))) || /* before any file */
      (rc = dpo_run_setup(run)) || (rc = dpo_run_load(run)))
    return rc;
  int solved = dpo_run_solve(run);
  if (solved == DPO_EINTR) { /* checkpoint written, every charge journalled */
    if (ctx->rank == 0)
      fprintf(stderr, "dpopt %s: %s; run directory %s\n", cmd, dpo_errmsg(), dpo_run_dir(run));
    *ex = DPO_EXIT_INTR;
    return DPO_OK;
  }
  /* DPO_EBUDGET: the ledger stopped the run (its last iterate is written), or a budget store
   * refused it before its first release (nothing to write) */
  if ((rc = solved) != DPO_OK && (rc != DPO_EBUDGET || !dpo_run_solved(run))) return rc;
  if ((rc = dpo_run_evaluate(run)) || (rc = dpo_run_write(run)) ||
      (rc = dpo_run_result(run, &res)))
    return rc;
  dpo_run_print(run, stdout);
  *ex = solved == DPO_EBUDGET ? DPO_EXIT_BUDGET : res.not_converged ? DPO_EXIT_RUNTIME : 0;
  return DPO_OK;
}
