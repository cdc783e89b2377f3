/* Data-loading options from config keys (dpo_load_opts_from_config in dpopt/data.h): the
 * one reading of data.* keys shared by every command and by programs that embed a config. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dpopt/config.h"
#include "dpopt/data.h"
#include "dpopt/status.h"

int dpo_load_opts_from_config(const dpo_config_t *cfg, dpo_load_opts_t *o) {
  int rc;
  const char *s;
  int64_t v;
  double dv;
  dpo_load_opts_default(o);
  dpo_config_get_str(cfg, "data.format", "auto", &s);
  if (!strcasecmp(s, "auto")) o->format = DPO_FMT_AUTO;
  else if (!strcasecmp(s, "libsvm")) o->format = DPO_FMT_LIBSVM;
  else if (!strcasecmp(s, "csv")) o->format = DPO_FMT_CSV;
  else if (!strcasecmp(s, "idx")) o->format = DPO_FMT_IDX;
  else if (!strcasecmp(s, "bin")) o->format = DPO_FMT_BIN;
  else
    return dpo_err(DPO_EINVAL, "%s: data.format = '%s': expected auto, libsvm, csv, idx or bin",
                   dpo_config_origin(cfg, "data.format"), s);
  if ((rc = dpo_config_get_int(cfg, "data.dim", 0, &v))) return rc;
  if (v < 0 || v > (1 << 30))
    return dpo_err(DPO_EINVAL, "%s: data.dim = %lld: expected 0 (infer) to 2^30 = %d features",
                   dpo_config_origin(cfg, "data.dim"), (long long)v, 1 << 30);
  o->d = (int32_t)v;
  if ((rc = dpo_config_get_bool(cfg, "data.dense", 0, &o->dense))) return rc;
  if ((rc = dpo_config_get_bool(cfg, "data.zero_based", 0, &o->zero_based))) return rc;
  dpo_config_get_str(cfg, "data.labels", "binary", &s);
  if (!strcasecmp(s, "binary")) o->labels = DPO_LABELS_BINARY;
  else if (!strcasecmp(s, "real")) o->labels = DPO_LABELS_REAL;
  else if (!strcasecmp(s, "class")) o->labels = DPO_LABELS_CLASS;
  else
    return dpo_err(DPO_EINVAL, "%s: data.labels = '%s': expected binary, real or class",
                   dpo_config_origin(cfg, "data.labels"), s);
  if ((rc = dpo_config_get_int(cfg, "data.idx_class", 0, &v))) return rc;
  o->idx_class = (int)v;
  dpo_config_get_str(cfg, "data.idx_labels", NULL, &o->idx_labels);
  if ((rc = dpo_config_get_double(cfg, "data.idx_scale", 1.0 / 255.0, &dv))) return rc;
  o->idx_scale = dv;
  /* data.valid_fraction F: train on the rows outside a validation fraction F (split by row
   * content, dpo_load_opts_t) and score on the others */
  if ((rc = dpo_config_get_double(cfg, "data.valid_fraction", 0, &dv))) return rc;
  if (dpo_config_get(cfg, "data.valid_fraction") && !(dv > 0 && dv < 1))
    return dpo_err(DPO_EINVAL, "%s: data.valid_fraction = %g: expected a fraction in (0, 1)",
                   dpo_config_origin(cfg, "data.valid_fraction"), dv);
  o->valid_frac = dv;
  o->valid_part = dv > 0;
  return DPO_OK;
}

/* The schema file PATH.schema: a declaration the data holder writes once beside the data,
 *   [schema]
 *   features = D
 * read by the config reader (origins "file:line"); any other key is refused, a typo must not
 * pass (dpo_config_check_known). */
int dpo_load_opts_schema(const char *path, dpo_load_opts_t *o) {
  char sp[4096];
  if (!path) return dpo_err(DPO_EINVAL, "no data file");
  if (snprintf(sp, sizeof sp, "%s.schema", path) >= (int)sizeof sp)
    return dpo_err(DPO_EINVAL, "%s: path too long", path);
  if (access(sp, F_OK) != 0)
    return errno == ENOENT ? DPO_OK : dpo_err(DPO_EIO, "%s: %s", sp, strerror(errno));
  dpo_config_t *sc = NULL;
  int64_t D = 0;
  int rc = dpo_config_create(&sc);
  if (!rc) rc = dpo_config_load_ini(sc, sp);
  if (!rc) rc = dpo_config_get_int(sc, "schema.features", 0, &D);
  if (!rc) rc = dpo_config_check_known(sc, "a schema file ([schema] features = D)");
  if (!rc && (D < 1 || D > (1 << 30)))
    rc = D ? dpo_err(DPO_EINVAL, "%s: features = %lld: expected an integer in [1, 2^30]",
                     dpo_config_origin(sc, "schema.features"), (long long)D)
           : dpo_err(DPO_EINVAL, "%s: no '[schema] features = D'", sp);
  if (!rc && o->d > 0 && o->d != D)
    rc = dpo_err(DPO_EINVAL, "%s: features = %lld, but data.dim = %d",
                 dpo_config_origin(sc, "schema.features"), (long long)D, (int)o->d);
  if (!rc) o->d = (int32_t)D;
  dpo_config_destroy(sc);
  return rc;
}

int dpo_load_opts_private(const char *path, dpo_load_opts_t *o) {
  int declared = 0, rc = dpo_load_opts_schema(path, o);
  if (!rc) rc = dpo_shard_width_declared(path, o, &declared);
  if (rc) return rc;
  if (!declared)
    return dpo_err(DPO_EINVAL, "%s: a private run needs the number of features declared: --dim D "
                   "(data.dim = D), or a schema file %s.schema holding '[schema] features = D' "
                   "written once beside the data.  A sparse file's largest feature index is a "
                   "fact about its rows (one row can change it), so it is never read from them.  "
                   "Take D from the data's public description (its documentation; a9a: 123), not "
                   "from `dpopt info`, whose statistics are private.  Nothing was run or written",
                   path, path);
  o->project = 1;
  return DPO_OK;
}

int dpo_schema_write(const char *path, int32_t d) {
  char sp[4096];
  if (!path || d < 1) return dpo_err(DPO_EINVAL, "dpo_schema_write: need a path and d >= 1");
  if (snprintf(sp, sizeof sp, "%s.schema", path) >= (int)sizeof sp)
    return dpo_err(DPO_EINVAL, "%s: path too long", path);
  FILE *f = fopen(sp, "w");
  if (!f) return dpo_err(DPO_EIO, "%s: cannot create: %s", sp, strerror(errno));
  fprintf(f, "# public schema, declared by the program that wrote %s (not read from its rows)\n"
          "[schema]\nfeatures = %d\n", path, (int)d);
  return fclose(f) ? dpo_err(DPO_EIO, "%s: write error", sp) : DPO_OK;
}
