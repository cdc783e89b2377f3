/* Data-loading options from config keys (dpo_load_opts_from_config in dpopt/data.h): the
 * one reading of data.* keys shared by every command and by programs that embed a config. */
#include <strings.h>

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
  return DPO_OK;
}
