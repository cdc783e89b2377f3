/* Run outputs: the run directory, model files, atomic writes, and messages on stderr.
 * All functions here are local (not collective); the CLI calls the writers on rank 0 only.
 */
#ifndef DPOPT_RUNOUT_H
#define DPOPT_RUNOUT_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* mkdir -p. */
int dpo_mkdirs(const char *path);
/* A NEW directory for one run: parents as with dpo_mkdirs, the directory itself with one
 * mkdir, then the empty file `claim` inside it with O_EXCL, so two processes can never share
 * it.  An existing directory is accepted only when empty (the claim still decides between
 * concurrent runs).  Otherwise *exists = 1 and DPO_EINVAL (the caller names the remedy);
 * DPO_EIO for other failures.  Nothing that existed before is modified. */
int dpo_mkdir_new(const char *path, const char *claim, int *exists);
/* Write `len` bytes to `path` atomically: write a temporary file, fsync, rename, fsync dir. */
int dpo_write_atomic(const char *path, const void *buf, size_t len);
/* The same, readable and writable by the owner only (mode 0600 whatever the umask): for files
 * that hold state not yet released, such as checkpoints (iterates a party has not published,
 * noise-stream positions). */
int dpo_write_atomic_private(const char *path, const void *buf, size_t len);
/* Model file (numpy.loadtxt reads it): '#' comment lines, among them the header
 * "# dpopt model: dimension d, intercept yes|no[, classes K]", and numbers only otherwise
 * (%.17g: round trips): one output, the d weights and then the intercept, one per line (x has
 * d + 1 entries with an intercept, the bias last, as the solver holds it; d counts the
 * features); K classes, K rows (class 0 first) of d weights and the intercept.  The readers
 * also take the older format without the header: "d" then one coefficient per line and an
 * optional last line "intercept B" (a file without it reads as a model without intercept). */
int dpo_model_write(const char *path, const double *x, int32_t d, const char *comment);
int dpo_model_write_icpt(const char *path, const double *x, int32_t d, int intercept,
                         const char *comment);
/* Read a model file; *x is malloc'ed. Errors name file:line.  dpo_model_read gives the whole
 * vector (*d = features + 1 with an intercept, the bias last); dpo_model_read_icpt gives
 * *d = features and *intercept (0/1), x still holding d + intercept entries. */
int dpo_model_read(const char *path, double **x, int32_t *d);
int dpo_model_read_icpt(const char *path, double **x, int32_t *d, int *intercept);
/* Multiclass models (K >= 2 classes, model softmax): the header names the classes and the
 * file holds a K x (d + intercept) matrix, one row per class (the older format: a line
 * "classes K" before the dimension line, K blocks of d coefficients, and with an intercept one
 * last line "intercept b_0 ... b_{K-1}").  x holds K rows of d + intercept entries (class k's
 * bias last in its row: the solver's layout, dpo_model_dim).  K = 0 is the one-output format
 * above (dpo_model_write_icpt, bit for bit); dpo_model_read_k gives *K = 0 for such files, and
 * dpo_model_read / dpo_model_read_icpt refuse a multiclass file. */
int dpo_model_write_k(const char *path, const double *x, int32_t d, int intercept, int32_t K,
                      const char *comment);
int dpo_model_read_k(const char *path, double **x, int32_t *d, int *intercept, int32_t *K);

/* Messages: dpo_msg prints "dpopt: ..." to stderr unless quiet; progress lines only on a tty. */
void dpo_msg_set_quiet(int quiet);
int dpo_msg_quiet(void);
/* run.verbose (every command's): the diagnostics a user asks for, e.g. how many PLD
 * compositions a calibration paid, printed with dpo_msg only when set */
void dpo_msg_set_verbose(int verbose);
int dpo_msg_verbose(void);
void dpo_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Overwritable progress line ("\r...") on stderr when it is a terminal and not quiet. */
void dpo_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dpo_progress_end(void);
/* JSON number for a summary: a json-c double, or NULL (written as null) when v is NaN or
 * infinite, which JSON cannot represent (json-c would print NaN / Infinity). */
struct json_object;
struct json_object *dpo_json_double(double v);
/* A K x K confusion matrix (cm[true * K + predicted]) as a table on out, rows = true class. */
void dpo_print_confusion(FILE *out, const int64_t *cm, int32_t K);
/* Wall clock in seconds (monotonic). */
double dpo_wtime(void);

#ifdef __cplusplus
}
#endif
#endif
