/* dpopt info | convert | gen */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "dpopt/data.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"

#define DPO__MAXOPTS 48

int dpo_cmd_info(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  static const dpo_cli_opt_t own[] = {{"--ratings", "info.ratings", NULL, "FILE holds rating triplets (user item rating)"},
                                      {NULL, NULL, NULL, NULL}};
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, dpo_cli_data_opts, own);
  dpo_config_t *cfg = NULL;
  dpo_shard_t *sh = NULL;
  dpo_ratings_t *rt = NULL;
  char *pos[1];
  int npos, rc, ex = 0;
  if ((ex = dpo_cli_start(ctx, "info", argc, argv, opts, "usage: dpopt info [options] FILE",
                          "Prints the shape and statistics of a data file, read in parallel (each rank\n"
                          "its own part).  The statistics describe private data: they are for the data\n"
                          "owner, not for release.\n",
                          &cfg, pos, 1, &npos,
                          "one FILE expected (see --help)")) >= 0)
    goto out;
  ex = 0;
  int ratings = 0;
  if ((rc = dpo_config_get_bool(cfg, "info.ratings", 0, &ratings))) {
    ex = dpo_cli_fail(ctx, "info", rc);
    goto out;
  }
  if (ratings) {
    if ((rc = dpo_ratings_load(ctx->comm, pos[0], 1, &rt))) {
      ex = dpo_cli_fail(ctx, "info", rc);
      goto out;
    }
    if (ctx->rank == 0)
      printf("file      %s\nformat    ratings\nratings   %lld\nusers     %d\nitems     %d\ndensity   %.6g\n",
             pos[0], (long long)rt->n_global, rt->n_users, rt->n_items,
             (double)rt->n_global / ((double)rt->n_users * rt->n_items));
    goto out;
  }
  dpo_load_opts_t lo;
  if ((rc = dpo_load_opts_from_config(cfg, &lo)) || (rc = dpo_shard_load(ctx->comm, pos[0], &lo, &sh))) {
    ex = dpo_cli_fail(ctx, "info", rc);
    goto out;
  }
  dpo_shard_stats_t st;
  if ((rc = dpo_shard_stats(ctx->comm, sh, &st))) {
    ex = dpo_cli_fail(ctx, "info", rc);
    goto out;
  }
  if (ctx->rank == 0) {
    printf("file      %s\n", pos[0]);
    printf("rows      %lld\ncolumns   %d\nnonzeros  %lld (%.2f%% dense)\nstorage   %s\n",
           (long long)st.n, st.d, (long long)st.nnz,
           100.0 * (double)st.nnz / ((double)st.n * (double)st.d), st.sparse ? "CSR" : "dense");
    if (sh->labels == DPO_LABELS_BINARY)
      printf("labels    +1: %lld (%.2f%%)  -1: %lld (%.2f%%)\n", (long long)st.n_pos,
             100.0 * (double)st.n_pos / (double)st.n, (long long)st.n_neg,
             100.0 * (double)st.n_neg / (double)st.n);
    else
      printf("targets   min %.6g  mean %.6g  max %.6g\n", st.y_min, st.y_mean, st.y_max);
    printf("row L1    max %.6g  mean %.6g\nrow L2    max %.6g  mean %.6g\n", st.l1_max, st.l1_mean,
           st.l2_max, st.l2_mean);
    printf("ranks     %d (rows per rank %lld..%lld)\n", ctx->size, (long long)(st.n / ctx->size),
           (long long)((st.n + ctx->size - 1) / ctx->size));
    printf("NON-PRIVATE: every figure above is read from the rows (no noise, no charge). Do not "
           "take a private run's schema (--dim, FILE.schema) or row bounds from them: declare "
           "them from the data's public description.\n");
  }
out:
  dpo_shard_destroy(sh);
  dpo_ratings_destroy(rt);
  dpo_config_destroy(cfg);
  return ex;
}

int dpo_cmd_convert(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  dpo_cli_opt_t opts[DPO__MAXOPTS];
  dpo_cli_opts_cat(opts, DPO__MAXOPTS, dpo_cli_data_opts, NULL);
  dpo_config_t *cfg = NULL;
  dpo_shard_t *sh = NULL;
  char *pos[2];
  int npos, rc, ex = 0;
  if ((ex = dpo_cli_start(ctx, "convert", argc, argv, opts, "usage: dpopt convert [options] IN OUT.bin",
                          "Reads IN in parallel (libsvm, csv or IDX) and writes the dpopt binary format,\n"
                          "which every rank can then read at its own row range without parsing.\n",
                          &cfg, pos, 2, &npos,
                          "IN and OUT expected (see --help)")) >= 0)
    goto out;
  ex = 0;
  dpo_load_opts_t lo;
  /* a declared width (--dim or IN.schema) stays declared: OUT.schema beside a sparse OUT */
  if ((rc = dpo_load_opts_from_config(cfg, &lo)) || (rc = dpo_load_opts_schema(pos[0], &lo)) ||
      (rc = dpo_shard_load(ctx->comm, pos[0], &lo, &sh)) ||
      (rc = dpo_shard_write_bin(ctx->comm, sh, pos[1])) ||
      (rc = dpo_agree(ctx->comm, ctx->rank == 0 && lo.d > 0 && sh->sparse
                                     ? dpo_schema_write(pos[1], lo.d) : DPO_OK))) {
    ex = dpo_cli_fail(ctx, "convert", rc);
    goto out;
  }
  if (ctx->rank == 0)
    printf("wrote %s: %lld rows x %d columns (%s)\n", pos[1], (long long)sh->n_global, sh->d,
           sh->sparse ? "CSR" : "dense");
out:
  dpo_shard_destroy(sh);
  dpo_config_destroy(cfg);
  return ex;
}

static const struct {
  const char *name;
  int32_t users, items;
  int64_t ratings;
} dpo__ml_sizes[] = {
    {"ml-100k", 943, 1682, 100000},
    {"ml-1m", 6040, 3883, 1000209},
    {"ml-10m", 69878, 10681, 10000054},
    {"ml-20m", 138493, 26744, 20000263},
};

int dpo_cmd_gen(const dpo_cli_ctx_t *ctx, int argc, char **argv) {
  static const dpo_cli_opt_t opts[] = {
      {"--n", "gen.n", "N", "rows (logistic default 100000, ridge default 10000)"},
      {"--d", "gen.d", "D", "features (default 20)"},
      {"--l1-bound", "gen.l1_bound", "B", "logistic: rows have ||u||_1 <= B (default 20, Kuru et al. 2022, Sec. 5)"},
      {"--l2-bound", "gen.l2_bound", "B", "ridge: rows have ||u||_2 <= B (default 1)"},
      {"--noise", "gen.noise", "S", "ridge: target noise standard deviation (default 0.1)"},
      {"--size", "gen.size", "NAME", "ratings: ml-100k | ml-1m | ml-10m | ml-20m (default ml-100k)"},
      {"--users", "gen.users", "K", "ratings: users (overrides --size)"},
      {"--items", "gen.items", "N", "ratings: items (overrides --size)"},
      {"--ratings", "gen.ratings", "R", "ratings: number of ratings (overrides --size)"},
      {"--rank", "gen.rank", "R", "ratings: rank of the signal (default 10)"},
      {"--realistic", "gen.realistic", NULL, "ratings: MovieLens-like statistics: user/item biases, >= 20 ratings per user, more noise"},
      {"--seed", "gen.seed", "S", "random seed (default 1)"},
      {"--sign01", "gen.sign01", NULL, "logistic: Kuru et al. 2022, Sec. 5 as the authors ran it: rows uniform in [0,1]^d, y = sign(u'w) (declare data.row_l2_bound = sqrt(d))"},
      {NULL, NULL, NULL, NULL}};
  dpo_config_t *cfg = NULL;
  char *pos[2];
  int npos, rc, ex = 0;
  if ((ex = dpo_cli_start(ctx, "gen", argc, argv, opts, "usage: dpopt gen KIND [options] OUT",
                          "KIND is one of:\n"
                          "  logistic  synthetic logistic regression of Kuru et al. 2022, Sec. 5 (n=1e5, d=20, ||u||_1<=20)\n"
                          "  ridge     linear model with Gaussian noise\n"
                          "  ratings   MovieLens-shaped ratings (power-law degrees, low rank + noise, 1..5)\n"
                          "An OUT ending in .bin is written in the dpopt binary format (logistic, ridge).\n",
                          &cfg, pos, 2, &npos,
                          "KIND and OUT expected (see --help)")) >= 0)
    goto out;
  ex = 0;
  int64_t n, d, seed, rank_r, users, items, nr;
  double b1, b2, noise;
  const char *size;
  const char *kind = pos[0];
  int is_ridge = !strcmp(kind, "ridge");
  if ((rc = dpo_config_get_int(cfg, "gen.n", is_ridge ? 10000 : 100000, &n)) ||
      (rc = dpo_config_get_int(cfg, "gen.d", 20, &d)) ||
      (rc = dpo_config_get_int(cfg, "gen.seed", 1, &seed)) ||
      (rc = dpo_config_get_double(cfg, "gen.l1_bound", 20.0, &b1)) ||
      (rc = dpo_config_get_double(cfg, "gen.l2_bound", 1.0, &b2)) ||
      (rc = dpo_config_get_double(cfg, "gen.noise", 0.1, &noise)) ||
      (rc = dpo_config_get_int(cfg, "gen.rank", 10, &rank_r)) ||
      (rc = dpo_config_get_str(cfg, "gen.size", "ml-100k", &size))) {
    ex = dpo_cli_fail(ctx, "gen", rc);
    goto out;
  }
  if (n <= 0 || d <= 0 || d > (1 << 30) || b1 <= 0 || b2 <= 0 || noise < 0 || rank_r <= 0) {
    ex = dpo_cli_fail(ctx, "gen", dpo_err(DPO_EINVAL, "n, d, bounds and rank must be positive"));
    goto out;
  }
  /* generation is serial on rank 0 (a file writer); the others wait for its status */
  rc = DPO_OK;
  if (!strcmp(kind, "logistic")) {
    int s01 = 0;
    if (!(rc = dpo_config_get_bool(cfg, "gen.sign01", 0, &s01)) && ctx->rank == 0)
      rc = dpo_gen_logistic_ex(pos[1], n, (int32_t)d, b1, (uint64_t)seed, s01, NULL);
  } else if (is_ridge) {
    if (ctx->rank == 0) rc = dpo_gen_ridge(pos[1], n, (int32_t)d, b2, noise, (uint64_t)seed);
  } else if (!strcmp(kind, "ratings")) {
    int k = 0, nsz = (int)(sizeof dpo__ml_sizes / sizeof dpo__ml_sizes[0]);
    for (; k < nsz; k++)
      if (!strcasecmp(size, dpo__ml_sizes[k].name)) break;
    if (k == nsz) {
      rc = dpo_err(DPO_EINVAL, "%s: unknown size '%s' (ml-100k, ml-1m, ml-10m, ml-20m)",
                   dpo_config_origin(cfg, "gen.size"), size);
    } else if (!(rc = dpo_config_get_int(cfg, "gen.users", dpo__ml_sizes[k].users, &users)) &&
               !(rc = dpo_config_get_int(cfg, "gen.items", dpo__ml_sizes[k].items, &items)) &&
               !(rc = dpo_config_get_int(cfg, "gen.ratings", dpo__ml_sizes[k].ratings, &nr))) {
      int real = 0;
      if (!(rc = dpo_config_get_bool(cfg, "gen.realistic", 0, &real)) && ctx->rank == 0)
        rc = dpo_gen_ratings_ex(pos[1], (int32_t)users, (int32_t)items, nr, (int32_t)rank_r,
                                (uint64_t)seed, real);
    }
  } else {
    rc = dpo_err(DPO_EINVAL, "unknown KIND '%s' (logistic, ridge, ratings)", kind);
  }
  rc = dpo_agree(ctx->comm, rc);
  if (rc) {
    ex = dpo_cli_fail(ctx, "gen", rc);
    goto out;
  }
  if (ctx->rank == 0) printf("wrote %s\n", pos[1]);
  dpo_cli_warn_unused(ctx, cfg);
out:
  dpo_config_destroy(cfg);
  return ex;
}
