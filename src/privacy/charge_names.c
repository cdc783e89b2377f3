/* The names of what a charge says (dpo_charge_t's mechanism, sampling and accounting): the one
 * place where these enums meet the words the journal records.  The ledger writes a charge line
 * with the names below and replay parses them back through the same table, so the journal
 * format is the one it always was and an old journal replays exactly as before. */
#include "privacy_int.h"

#include "dpopt/status.h"

#include <string.h>
#include <strings.h>

/* indexed by the enums; [0] (unset) has no journal name */
static const char *const dpo__mech_names[] = {
    [DPO_MECH_LAPLACE] = "laplace", [DPO_MECH_GAUSSIAN] = "gaussian",
    [DPO_MECH_RDP_RHO] = "rdp-rho"};
static const char *const dpo__sampling_names[] = {
    [DPO_SAMPLING_NONE] = "none", [DPO_SAMPLING_WOR] = "wor",
    [DPO_SAMPLING_POISSON] = "poisson", [DPO_SAMPLING_DISJOINT] = "disjoint"};
static const char *const dpo__accounting_names[] = {
    [DPO_ACCOUNTING_PURE] = "pure", [DPO_ACCOUNTING_SUBSAMPLED] = "subsampled",
    [DPO_ACCOUNTING_THESIS_2GAMMA] = "thesis-2gamma", [DPO_ACCOUNTING_RDP] = "rdp"};
#define DPO__N(t) ((int)(sizeof t / sizeof *t))

static const char *dpo__name(const char *const *t, int n, int v) {
  if (v == 0) return "(unset)";
  return v > 0 && v < n ? t[v] : "(unknown)";
}

static int dpo__parse(const char *const *t, int n, const char *s, int *v) {
  for (int i = 1; s && i < n; i++)
    if (!strcmp(s, t[i])) {
      *v = i;
      return DPO_OK;
    }
  return DPO_EINVAL;
}

const char *dpo_mech_name(dpo_mech_t m) {
  return dpo__name(dpo__mech_names, DPO__N(dpo__mech_names), (int)m);
}
const char *dpo_sampling_name(dpo_sampling_t s) {
  return dpo__name(dpo__sampling_names, DPO__N(dpo__sampling_names), (int)s);
}
const char *dpo_accounting_name(dpo_accounting_t a) {
  return dpo__name(dpo__accounting_names, DPO__N(dpo__accounting_names), (int)a);
}

int dpo_mech_parse(const char *name, dpo_mech_t *m) {
  int v, st = dpo__parse(dpo__mech_names, DPO__N(dpo__mech_names), name, &v);
  if (!st) *m = (dpo_mech_t)v;
  return st;
}
int dpo_sampling_parse(const char *name, dpo_sampling_t *s) {
  int v, st = dpo__parse(dpo__sampling_names, DPO__N(dpo__sampling_names), name, &v);
  if (!st) *s = (dpo_sampling_t)v;
  return st;
}
int dpo_accounting_parse(const char *name, dpo_accounting_t *a) {
  int v, st = dpo__parse(dpo__accounting_names, DPO__N(dpo__accounting_names), name, &v);
  if (!st) *a = (dpo_accounting_t)v;
  return st;
}

/* ------------------------------------------------------------ neighbouring relation */

const char *dpo_neighbours_name(dpo_neighbours_t rel) {
  return rel == DPO_NEIGHBOURS_ADD_REMOVE ? "add-remove" : "replace-one";
}

int dpo_neighbours_parse(const char *s, dpo_neighbours_t *rel) {
  if (!rel) return dpo_err(DPO_EINVAL, "neighbours_parse: NULL output");
  if (!s || !strcasecmp(s, "replace-one")) *rel = DPO_NEIGHBOURS_REPLACE_ONE;
  else if (!strcasecmp(s, "add-remove")) *rel = DPO_NEIGHBOURS_ADD_REMOVE;
  else
    return dpo_err(DPO_EINVAL, "privacy.neighbours = '%s': expected replace-one or add-remove",
                   s);
  return DPO_OK;
}

/* The one conversion from a per-example bound to a sensitivity: replacing a row changes two
 * terms of the sum (the old one leaves, the new one enters), adding or removing changes one. */
double dpo_sens(dpo_neighbours_t rel, double b) {
  return rel == DPO_NEIGHBOURS_ADD_REMOVE ? b : 2.0 * b;
}
