/* Run configuration: a flat table of "section.key" = value strings filled from an INI file
 * (libinih) and then from command-line flags, which override.  Every value remembers where it
 * came from ("run.ini:12" or "--eps"), so a bad value is reported with its origin.  Getters
 * mark keys as used; dpo_config_unused() lists the ones nothing read (typos).
 * Not collective: every rank parses the same file and flags.
 */
#ifndef DPOPT_CONFIG_H
#define DPOPT_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpo_config dpo_config_t;

int dpo_config_create(dpo_config_t **cfg);
void dpo_config_destroy(dpo_config_t *cfg);
/* Load an INI file: [section] key = value.  Errors name file and line. */
int dpo_config_load_ini(dpo_config_t *cfg, const char *path);
/* Set (or override) key = value; origin is kept for messages. */
int dpo_config_set(dpo_config_t *cfg, const char *key, const char *value, const char *origin);
/* Raw value or NULL; marks the key used. */
const char *dpo_config_get(const dpo_config_t *cfg, const char *key);
const char *dpo_config_origin(const dpo_config_t *cfg, const char *key);
/* Typed getters: *out = def when the key is absent; DPO_EINVAL naming origin when the value
 * does not parse completely. */
int dpo_config_get_str(const dpo_config_t *cfg, const char *key, const char *def,
                       const char **out);
int dpo_config_get_double(const dpo_config_t *cfg, const char *key, double def, double *out);
int dpo_config_get_int(const dpo_config_t *cfg, const char *key, int64_t def, int64_t *out);
int dpo_config_get_bool(const dpo_config_t *cfg, const char *key, int def, int *out);
/* Declare a key valid without reading it (e.g. the keys of a command's flag table), so a key
 * set close to it is reported as a typo of it. */
void dpo_config_declare(const dpo_config_t *cfg, const char *key);
/* Typo hints.  Known keys: those declared and those a getter asked for (set or not).
 * dpo_config_nearest: the candidate `word` is most likely a typo of (at most one edit for
 * names of 2+ characters, two for 5+, ignoring case; the same name in another section
 * counts), or NULL.  dpo_config_suggest: the same over the known keys.
 * dpo_config_typos: fn(key, origin, suggestion, arg) for every set key nothing has read, not
 * known, that has a suggestion; each is reported once (here or by dpo_config_unused).
 * Returns the count. */
const char *dpo_config_nearest(const char *word, const char *const *cands, int n);
const char *dpo_config_suggest(const dpo_config_t *cfg, const char *key);
int dpo_config_typos(const dpo_config_t *cfg,
                     void (*fn)(const char *key, const char *origin, const char *suggestion,
                                void *arg),
                     void *arg);
/* Iterate over keys nothing has read (and dpo_config_typos did not report): fn(key, origin,
 * arg).  Returns the count. */
int dpo_config_unused(const dpo_config_t *cfg, void (*fn)(const char *, const char *, void *),
                      void *arg);
/* Not collective: print "dpopt: warning: ORIGIN: unknown setting 'K': did you mean 'S'?" to
 * out for each key dpo_config_typos reports (out NULL: only mark them, so every rank of a
 * program keeps the same state while one prints).  Returns the count. */
int dpo_config_warn_typos(const dpo_config_t *cfg, FILE *out);
/* Not collective: print "dpopt: warning: ORIGIN: unused setting 'K'" (with "did you mean"
 * when one is close) to out for each key dpo_config_unused lists (out NULL: nothing). */
int dpo_config_warn_unused(const dpo_config_t *cfg, FILE *out);
/* Iterate over all keys in insertion order (for writing the effective config). */
/* Fail closed: DPO_EINVAL naming the origin (file:line or flag) of the first set key that
 * nothing has read and that is not declared, with "did you mean" when one is close and the
 * count of others; `what` names the reader ("dpopt train").  Call once every key the caller
 * will read is read or declared, before anything is written: a misspelt privacy.eps must stop
 * the run, not train without privacy. */
int dpo_config_check_known(const dpo_config_t *cfg, const char *what);
/* 1 if key is set and something has read it. */
int dpo_config_is_used(const dpo_config_t *cfg, const char *key);

/* A new config holding cfg's keys, values, origins and declared keys (none marked read). */
int dpo_config_copy(const dpo_config_t *cfg, dpo_config_t **out);

void dpo_config_foreach(const dpo_config_t *cfg,
                        void (*fn)(const char *key, const char *value, const char *origin,
                                   void *arg),
                        void *arg);

#ifdef __cplusplus
}
#endif
#endif
