/* Sharded data sets.
 *
 * A dpo_shard_t is the part of a data set one rank holds: rows [row0, row0 + n) of a global
 * matrix with n_global rows and d columns, dense (row-major) or CSR, plus one label/target
 * per row.  Loaders are collective over the communicator passed in: each rank reads only its
 * own byte range (text) or row range (binary) of the file, so no rank ever holds the whole
 * set.  Global row ids (row0 + i) are what minibatch samplers use, so a sample never depends
 * on the number of ranks.
 *
 * Text files (LIBSVM, CSV, ratings) are split into P equal byte ranges; a rank owns the lines
 * that start in its range, so row counts per rank follow the bytes (a rank may hold 0 rows if
 * single lines are longer than a range).  IDX and binary files give balanced row ranges.
 * Blank lines and lines starting with '#' are skipped but counted in line numbers.
 *
 * Errors (malformed line, NaN/Inf, index past the dimension, unknown label, empty file, more
 * ranks than rows, truncated binary) come back on every rank with the same status and a detail
 * "FILE:LINE: reason" (dpo_errmsg()).
 */
#ifndef DPOPT_DATA_H
#define DPOPT_DATA_H

#include <mpi.h>
#include <stdint.h>

#include "dpopt/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CLASS: a class index 0, 1, 2, ... per row (an integer >= 0 stored as a double; the model
 * checks it against its number of classes); IDX files keep the digit's label itself. */
typedef enum { DPO_LABELS_BINARY = 0, DPO_LABELS_REAL = 1, DPO_LABELS_CLASS = 2 } dpo_labels_t;

typedef struct {
  int64_t n;        /* local rows */
  int64_t n_global; /* rows over all ranks */
  int64_t row0;     /* global id of local row 0 */
  int32_t d;        /* columns (features) */
  int sparse;       /* 1: CSR in rowptr/colind/val; 0: dense row-major in X */
  double *X;        /* dense: n * d */
  int64_t *rowptr;  /* CSR: n + 1 */
  int32_t *colind;  /* CSR: 0-based column of each nonzero */
  double *val;      /* CSR values */
  double *y;        /* labels: +1/-1 (binary), real targets, or class indices 0..K-1 */
  dpo_labels_t labels;
  char source[256]; /* file the shard came from (for messages) */
  int n_public;     /* 1: n_global is a declared public size, not the sum of the ranks' n, and
                     * row0 counts within this rank's party only: multi-party secagg with
                     * add-remove neighbours, where a party's row count is private (the ranks
                     * never exchange their counts across parties; README "Party counts") */
  int intercept;    /* 1: the last column (d - 1) is the model's constant bias column of ones,
                     * appended while loading (dpo_load_opts_t.intercept) or afterwards
                     * (dpo_shard_add_intercept); row norms and the validation split leave it
                     * out: they are about the features */
  void *map;        /* non-NULL: X lies inside this private (copy-on-write) mapping of the file,
                     * map_len bytes (dpo_load_opts_t.map); dpo_shard_destroy unmaps it.  The
                     * shard's own functions may move X; a caller never frees or reallocs it */
  size_t map_len;
  double *norms;    /* NULL, or the L1 (norms[i]) and L2 (norms[n + i]) norms of row i's
                     * features as dpo_shard_row_norms computes them, taken by the binary
                     * loader in its one pass over the rows (dpo_load_opts_t.row_norms).  They
                     * describe the rows as they are: dpo_shard_scale_row keeps them current; a
                     * caller changing X otherwise drops them (dpo_shard_drop_norms) */
} dpo_shard_t;

/* dpopt binary format (DPO_FMT_BIN), all integers and doubles little-endian:
 *   offset  0  char    magic[8] = "DPOBIN01"
 *           8  int64   n          rows
 *          16  int32   d          columns
 *          20  int32   sparse     1: CSR, 0: dense row-major
 *          24  int64   nnz        stored entries (sparse), 0 (dense)
 *          32  int32   labels     dpo_labels_t (0 binary +1/-1, 1 real, 2 class index)
 *          36  int32   reserved   0
 *          40  double  y[n]
 *   dense:     double  X[n * d]
 *   sparse:    int64   rowptr[n + 1] (rowptr[0] = 0, rowptr[n] = nnz)
 *              int32   colind[nnz]   0-based, increasing within a row
 *              double  val[nnz]
 * The file size must equal what the header describes (shorter: "truncated").  Loading gives
 * rank r of P the balanced row range (n/P rows, the remainder to the first ranks); the label
 * kind comes from the header (opts->labels is ignored for binary files). */

typedef enum {
  DPO_FMT_AUTO = 0,  /* by magic number / extension */
  DPO_FMT_LIBSVM,    /* "label idx:val ..." 1-based */
  DPO_FMT_CSV,       /* dense, label in first column, optional header line */
  DPO_FMT_IDX,       /* IDX images (+ labels file), optionally .gz */
  DPO_FMT_BIN        /* dpopt binary (dpopt convert) */
} dpo_format_t;

typedef struct {
  dpo_format_t format;
  dpo_labels_t labels;  /* binary: accept +1/-1 and 0/1 (0 -> -1); others are an error;
                         * class: integers >= 0 (IDX: the digit, idx_class is ignored) */
  int32_t d;            /* declared dimension; 0 = infer (max index over all ranks) */
  int dense;            /* 1: store as dense even if the file is sparse */
  const char *idx_labels; /* IDX: labels file (NULL: derive "...-labels-idx1-ubyte[.gz]") */
  int idx_class;        /* IDX, binary labels: this class is +1, all others -1 (one-vs-rest) */
  double idx_scale;     /* IDX: pixel scale (default 1/255) */
  /* 1 (private runs): a row outside the declared schema is projected onto it, never refused:
   * feature indices above d are dropped, a binary label other than +1/-1/0/1 becomes sign(y)
   * (+1 if y > 0, else -1), a negative or fractional class label becomes max(0, floor(y)).
   * A refusal would end the run on a fact about one row that no charge covers.  Needs d > 0
   * for sparse files (dpo_shard_width_declared).  0: such rows are refused (file:line). */
  int project;
  /* LIBSVM: 1 if feature indices start at 0 (scikit-learn's dump_svmlight_file writes them
   * so by default): index k is feature k + 1 of the 1-based convention.  0: they start at 1. */
  int zero_based;
  /* A validation split by row content (data.valid_fraction): each row's part is a hash of its
   * own label and features alone, so adding or removing one row moves that row only, into
   * exactly one part (a split by position would shift every later row).  valid_part 0: no
   * split; 1: keep the rows outside the fraction valid_frac (the fit part); 2: keep the
   * validation rows.  Identical rows share their part. */
  double valid_frac;
  int valid_part;
  /* A partition by position, never by content (dpopt tune's parallel composition): row g
   * (global index from 0, in file order) is kept iff u(part_key, g) lies in [part_lo,
   * part_hi), u a keyed hash in [0, 1).  The key comes from the secure stream and is never
   * written, so each row's part is an independent uniform draw that no row's content or
   * another row can move.  part_hi <= part_lo: no partition. */
  uint64_t part_key;
  double part_lo, part_hi;
  /* 1: append the constant column of ones (the model's bias feature, DPO_MODEL_ICPT in
   * model.h) as column d, shard->d counting it and shard->intercept = 1.  The binary loader
   * allocates the final arrays once and reads the rows straight into their widened places;
   * the other formats widen the loaded shard (dpo_shard_add_intercept).  d stays the
   * declared or inferred number of features. */
  int intercept;
  /* 1: a dense binary file whose layout the shard keeps (no intercept column to insert) is
   * mapped, not copied: the rank's own row range (whole pages around it) is mapped private
   * and read in place, its values checked once (dpo_shard_t.map).  No copy into the process
   * and no fresh pages to zero; the file must not be changed in place while the shard lives
   * (a shortened file ends the process with SIGBUS, rewritten rows change after their
   * checks), which is why private runs leave it 0.  Other formats and layouts ignore it. */
  int map;
  /* 1: a dense binary file's rows get their L1 and L2 norms computed while each chunk of
   * rows is in cache for its finiteness check (dpo_shard_t.norms), so that the declared row
   * bounds' checks need no further pass over the shard.  Not kept when the validation split
   * or a partition drops rows; other formats and layouts ignore it. */
  int row_norms;
} dpo_load_opts_t;

/* Default options (format auto, binary labels, infer d). */
void dpo_load_opts_default(dpo_load_opts_t *o);
/* Not collective: options from config keys data.format (auto | libsvm | csv | idx | bin),
 * data.dim, data.dense, data.zero_based, data.labels (binary | real | class), data.idx_class, data.idx_labels,
 * data.idx_scale; unset keys keep the defaults.  DPO_EINVAL names the key's origin.  The
 * strings in *o point into cfg (keep cfg alive while o is used). */
int dpo_load_opts_from_config(const dpo_config_t *cfg, dpo_load_opts_t *o);
/* Not collective: the declared width from the schema file `path`.schema, if there is one
 * ("[schema]" section, "features = D"; any other key is an error): o->d = D (DPO_EINVAL if
 * o->d was set to another value).  No schema file: o unchanged. */
int dpo_load_opts_schema(const char *path, dpo_load_opts_t *o);
/* Not collective: the load options of a private run on `path`: the schema file first, then
 * DPO_EINVAL (saying what to declare) unless the width is declared (dpo_shard_width_declared);
 * then o->project = 1, so that a row outside the schema is projected onto it instead of
 * ending the run. */
int dpo_load_opts_private(const char *path, dpo_load_opts_t *o);
/* Not collective: write `path`.schema declaring d features (for writers that know d from a
 * public parameter, e.g. the generators; never from the rows). */
int dpo_schema_write(const char *path, int32_t d);

/* Collective: load this rank's shard of `path`. */
int dpo_shard_load(MPI_Comm comm, const char *path, const dpo_load_opts_t *opts,
                   dpo_shard_t **shard);
void dpo_shard_destroy(dpo_shard_t *shard);
/* Local: append the constant column of ones (shard->intercept = 1, d + 1 columns); nothing
 * if the shard has it already.  Dense rows are widened in place (one realloc). */
int dpo_shard_add_intercept(dpo_shard_t *shard);

/* Not collective: *declared = 1 if the width (number of features) of every data set `path`
 * could hold is fixed by a declaration rather than read from the rows: opts->d > 0, or a
 * format whose header or column count fixes it (IDX, CSV, a dense dpopt binary file).  A
 * sparse file (LIBSVM, a sparse dpopt binary) without opts->d gives 0: its largest index is a
 * fact about the rows.  Reads at most the file's header. */
int dpo_shard_width_declared(const char *path, const dpo_load_opts_t *opts, int *declared);

/* Row i's (local) L1 and L2 norms of the features (the bias column left out), computed in one
 * pass into caller arrays of length n (copied from shard->norms when the loader took them). */
void dpo_shard_row_norms(const dpo_shard_t *s, double *l1, double *l2);
/* Local: row i's features (not the bias column) multiplied by sc; shard->norms, when held,
 * gets the row's norms computed anew from the scaled values. */
void dpo_shard_scale_row(dpo_shard_t *s, int64_t i, double sc);
/* Local: free shard->norms and set it NULL (later calls compute the norms from the rows): for a
 * caller about to change X, or done with the loader's norms.  No-op without them. */
void dpo_shard_drop_norms(dpo_shard_t *s);

/* Collective: write the distributed shards as one dpopt binary file (MPI-IO, each rank writes
 * its rows at its offset). */
int dpo_shard_write_bin(MPI_Comm comm, const dpo_shard_t *s, const char *path);

/* Collective statistics for `dpopt info` over all ranks. */
typedef struct {
  int64_t n, nnz;
  int32_t d;
  int64_t n_pos, n_neg;          /* binary labels */
  double y_min, y_max, y_mean;   /* real targets */
  double l1_max, l1_mean, l2_max, l2_mean;
  int sparse;
} dpo_shard_stats_t;
int dpo_shard_stats(MPI_Comm comm, const dpo_shard_t *s, dpo_shard_stats_t *st);

/* ---- rating triplets (matrix factorization) ---- */
typedef struct {
  int64_t n;        /* local ratings */
  int64_t n_global;
  int32_t n_users;  /* K: rows of Y (max user id + 1 after 0-basing) */
  int32_t n_items;  /* N: columns of Y */
  int32_t *user;    /* 0-based */
  int32_t *item;    /* 0-based */
  double *r;
  char source[256];
} dpo_ratings_t;

/* Collective: load "user item rating [timestamp]" lines separated by tab, comma, spaces or
 * "::" (1-based ids if one_based).  Each rank reads its byte range. */
int dpo_ratings_load(MPI_Comm comm, const char *path, int one_based, dpo_ratings_t **out);
void dpo_ratings_destroy(dpo_ratings_t *r);

/* ---- synthetic generators (dpopt gen); rank 0 writes the file, deterministic in seed ----
 * Not collective.  gen_logistic / gen_ridge write LIBSVM text with all d features of every row
 * (9 significant digits; rows stay inside the bound after rounding), or the dpopt binary
 * format if `path` ends in ".bin".  gen_ratings writes "user::item::rating" lines (1-based,
 * integer ratings 1..5, grouped by user), streaming: memory O(users + items * rank). */
/* Logistic data of (001, Sec. 5): rows u_i with ||u_i||_1 <= l1_bound, labels from a random
 * x_true: z_i = sign-sampled from the logistic model. */
int dpo_gen_logistic(const char *path, int64_t n, int32_t d, double l1_bound, uint64_t seed);
/* The same with sign01 = 1: the data model of the authors' code for 001 Sec. 5 (uniform rows
 * in [0,1]^d, scaled down to ||u||_1 <= l1_bound if above it; labels z = sign(u'x_true), no
 * noise).  Every written entry lies in [0,1], so ||u||_2 <= sqrt(d) is a public row bound
 * (declare data.row_l2_bound = sqrt(d): the logistic L bound is then d/4 + 2 lambda).
 * sign01 = 0 is dpo_gen_logistic, bit for bit.  x_true (d doubles) receives the true
 * parameter if not NULL. */
int dpo_gen_logistic_ex(const char *path, int64_t n, int32_t d, double l1_bound, uint64_t seed,
                        int sign01, double *x_true);
/* Ridge data: y = u'x_true + noise_sd * N(0,1), rows with ||u||_2 <= l2_bound. */
int dpo_gen_ridge(const char *path, int64_t n, int32_t d, double l2_bound, double noise_sd,
                  uint64_t seed);
/* MovieLens-shaped ratings: power-law user/item degrees, rank-r signal + noise, 1..5. */
int dpo_gen_ratings(const char *path, int32_t n_users, int32_t n_items, int64_t n_ratings,
                    int32_t rank, uint64_t seed);
/* The same with realistic = 1: MovieLens-like statistics: user and item biases
 * (item bias correlated with popularity), at least min(20, ratings / users) ratings per user,
 * a weaker low-rank signal and more noise, so that, as on real ratings, a biased model
 * predicts well and an unregularized high-rank one overfits.  realistic = 0 is
 * dpo_gen_ratings, bit for bit. */
int dpo_gen_ratings_ex(const char *path, int32_t n_users, int32_t n_items, int64_t n_ratings,
                       int32_t rank, uint64_t seed, int realistic);

#ifdef __cplusplus
}
#endif
#endif
