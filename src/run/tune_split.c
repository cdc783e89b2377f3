/* dpopt tune by parallel composition (tune.split = S, doc/privacy.md "Tune by parallel
 * composition").  The rows of data.train are partitioned by a keyed draw per row position
 * (dpo_run_set_rows; the key comes from the secure stream and is never written) into
 *   V   = [0, S/4)                 the validation part that selects,
 *   P_k = S/4 + [k, k + 1) 3S/(4K)  candidate k's training part (K candidates),
 *   F   = [S, 1)                   the final part,
 * each row in exactly one part.  Candidate k trains on P_k at the WHOLE (eps, delta), the
 * candidates are scored on V by report-noisy-max (only the argmax is released), and the winner
 * is trained again on F at the whole (eps, delta).
 *
 * Why the total is (eps, delta) (McSherry 2009, "Privacy integrated queries", parallel
 * composition).  Each row's part is an independent uniform draw that depends neither on its
 * content nor on any other row.  Add-remove: for D and D' = D plus one row x, couple the
 * draws so that every row of D has the same part in both; x falls in exactly one part, so
 * for each fixed partition the outputs differ by one mechanism run on neighbouring inputs of
 * that part only, each (eps, delta)-DP; a mixture (over the draws) of pairs of (eps,
 * delta)-close laws is (eps, delta)-close.  Replace-one: the replaced row keeps its position,
 * hence its draw and its part, and the same argument holds with the partition fixed.  The
 * key must stay secret under add-remove (with the key known, inserting a row would shift
 * the positions, hence the parts, of the rows after it); no part of the partition is
 * released.  The selection: on V the candidates' models are fixed (trained on other rows),
 * and each score is a count of correct predictions, moved by at most 1 by one row (under
 * add-remove only upwards: monotone counts); report-noisy-max with Laplace(1/eps) noise
 * (monotone) or Laplace(2/eps) (replace-one) is eps-DP (Dwork and Roth 2014, Claim 3.9).
 * The ledger keeps one account per part (its party accounts) and charges each (eps, delta)
 * in one charge; the global account, and so the budget store, is charged the max over the
 * parts, (eps, delta), once. */
#define _XOPEN_SOURCE 700
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/data.h"
#include "dpopt/run.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "run/run_canary.h"
#include "run/tune_impl.h"


/* Train the run c on the rows [lo, hi), scored on data.test's rows [tlo, thi); res on rank 0;
 * a1 (not NULL: c is a one-run audit's, the final run's) its result on every rank.
 * Collective.  The run's own ledger (in DIR/.rep) holds it to the whole (eps, delta). */
static int part_run(dpo__tune_t *t, dpo_config_t *c, double lo, double hi, double tlo,
                    double thi, dpo_run_result_t *res, dpo_audit1_result_t *a1) {
  dpo_run_t *run = NULL;
  int rc;
  if (!(rc = dpo_run_create(t->comm, c, &run)) && !(rc = dpo_run_setup(run)) &&
      !(rc = dpo_agree(t->comm, dpo_run_set_rows(run, t->key, lo, hi, tlo, thi))) &&
      !(rc = dpo_run_load(run))) {
    dpo_run_set_stop(run, dpo_run_signal_flag()); /* DPO_EINTR: the tune checkpoints */
    rc = dpo_run_solve(run);
    if (rc == DPO_EBUDGET) rc = DPO_OK; /* the last released iterate is kept */
    if (!rc) rc = dpo_run_evaluate(run);
    if (!rc) rc = dpo_run_write(run);
    if (!rc && t->rank == 0) rc = dpo_run_result(run, res);
    if (!rc && a1) rc = dpo_run_audit1_result(run, a1);
  }
  dpo_run_destroy(run);
  return dpo_agree(t->comm, rc);
}

/* The rows of V (collective; under add-remove private: it only turns an accuracy back into
 * the count of correct predictions and never leaves rank 0's process). */
static int count_valid(dpo__tune_t *t, int64_t *n) {
  dpo_load_opts_t lo;
  dpo_shard_t *sh = NULL;
  const char *path = dpo_config_get(t->cfg, "data.train");
  int rc = dpo_load_opts_from_config(t->cfg, &lo);
  lo.labels = t->multi ? DPO_LABELS_CLASS : DPO_LABELS_BINARY;
  lo.part_key = t->key, lo.part_lo = 0, lo.part_hi = t->split / 4;
  if (!rc) rc = dpo_load_opts_private(path, &lo);
  if (!rc) rc = dpo_shard_load(t->comm, path, &lo, &sh);
  if (!rc) *n = sh->n_global;
  dpo_shard_destroy(sh);
  return rc;
}

/* Rank 0: one account per part, each with the whole budget (a resumed journal's restored) */
static int set_parts(dpo__tune_t *t, dpo_ledger_t *L) {
  int np = t->nc + 2, rc = DPO_OK;
  double *be = malloc((size_t)np * sizeof *be), *bd = malloc((size_t)np * sizeof *bd);
  if (!be || !bd) rc = dpo_err(DPO_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < np; i++) be[i] = t->eps, bd[i] = t->delta;
  if (!rc) rc = dpo_ledger_set_parties(L, np, be, bd);
  t->total_eps = t->eps, t->total_delta = t->delta; /* the max over the parts */
  free(be), free(bd);
  return rc;
}

int dpo__tune_split_parties(dpo__tune_t *t, dpo_ledger_t *L) {
  return dpo_agree(t->comm, t->rank == 0 ? set_parts(t, L) : DPO_OK);
}

static int charge_parts(dpo__tune_t *t, dpo_ledger_t *L) {
  int np = t->nc + 2, rc = set_parts(t, L);
  int *ids = malloc((size_t)np * sizeof *ids);
  char what[512];
  if (!ids && !rc) rc = dpo_err(DPO_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < np; i++) ids[i] = i;
  snprintf(what, sizeof what, "parallel composition over %d disjoint parts of the rows (a "
           "secret keyed draw per row position): account 0 = the validation part (a fraction "
           "%g; report-noisy-max, eps), accounts 1..%d = the candidates' training parts (%g "
           "each; eps, delta), account %d = the final part (%g; eps, delta); each part is "
           "charged the whole budget once, the total is the max over the parts", np,
           t->split / 4, t->nc, 0.75 * t->split / t->nc, np - 1, 1 - t->split);
  if (!rc) rc = dpo_ledger_record_plan(L, "tune", "whole", 1, what);
  dpo_charge_t ch = {.mechanism = t->rdp ? DPO_MECH_GAUSSIAN : DPO_MECH_LAPLACE,
                     .eps = t->eps, .delta = t->delta, .sampling = DPO_SAMPLING_NONE,
                     .accounting = DPO_ACCOUNTING_PURE, .neighbours = t->rel};
  if (!rc) rc = dpo_ledger_charge_parties(L, &ch, np, ids, NULL, NULL);
  free(ids);
  return rc;
}

static int write_split_summary(const dpo__tune_t *t, const dpo__cand_t *k, double acc,
                               const char *label, FILE *out) {
  char p[700], src[700];
  json_object *s = json_object_new_object(), *pj = json_object_new_object(),
              *cj = json_object_new_object();
  json_object_object_add(s, "command", json_object_new_string("tune"));
  json_object_object_add(s, "search", json_object_new_string("parallel composition (--split)"));
  json_object_object_add(cj, "algo", json_object_new_string(k->algo));
  if (!isnan(k->step)) json_object_object_add(cj, k->gauss ? "eta" : "c", dpo_json_double(k->step));
  if (!isnan(k->epochs)) json_object_object_add(cj, "epochs", dpo_json_double(k->epochs));
  if (!isnan(k->lr)) json_object_object_add(cj, "lr", dpo_json_double(k->lr));
  if (!isnan(k->clip)) json_object_object_add(cj, "clip_l2", dpo_json_double(k->clip));
  json_object_object_add(s, "chosen", cj);
  json_object_object_add(s, "candidates_in_grid", json_object_new_int(t->nc));
  json_object_object_add(s, "split", dpo_json_double(t->split));
  dpo__tune_json_common(t, s, pj, acc, label);
  json_object_object_add(pj, "parts", json_object_new_int(t->nc + 2));
  json_object_object_add(pj, "theorem", json_object_new_string(
      "parallel composition over a data-independent partition (McSherry 2009); selection by "
      "report-noisy-max (Dwork and Roth 2014, Claim 3.9)"));
  json_object_object_add(s, "privacy", pj);
  if (t->audit1) dpo__a1_summary_add(s, &t->a1); /* the final run's one-run audit */
  const char *txt = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PRETTY);
  snprintf(p, sizeof p, "%s/summary.json", t->dir);
  int rc = dpo_write_atomic(p, txt, strlen(txt));
  /* the final run's model; config.ini is the tune's own settings (what the user ran, with
   * train's recipe where it filled in, run.dir the tune's directory, not the final run's
   * scratch one): dpopt eval / predict --run read the model's keys from it */
  snprintf(src, sizeof src, "%s/.rep/model.txt", t->dir);
  snprintf(p, sizeof p, "%s/model.txt", t->dir);
  if (!rc && rename(src, p)) rc = dpo_err(DPO_EIO, "%s: cannot keep the final run's model", p);
  if (!rc) rc = dpo__tune_write_config(t);
  if (out && !rc) {
    /* train's plain lines (the theorem is in summary.json) */
    fprintf(out, "run directory   %s\nprivacy         %s\nspent           eps %.3f of %g", t->dir,
            label, t->eps, t->eps);
    if (t->delta > 0) fprintf(out, " and delta %.3g of %g", t->delta, t->delta);
    fprintf(out, " (each of %d disjoint parts of the rows spent it once)\nchosen          algo=%s",
            t->nc + 2, k->algo);
    if (!isnan(k->step)) fprintf(out, " %s=%g", k->gauss ? "eta" : "c", k->step);
    if (!isnan(k->epochs)) fprintf(out, " epochs=%g", k->epochs);
    fprintf(out, " (of %d candidates, each trained on %.3g of the rows; selected on %.3g; the "
            "chosen trained again on the other %.3g)\n", t->nc, 0.75 * t->split / t->nc,
            t->split / 4, 1 - t->split);
    if (t->test)
      fprintf(out, "test accuracy   %.4f   (%s; the chosen model, not used for selection)\n",
              acc, t->test);
  }
  json_object_put(s);
  return rc;
}


int dpo__tune_split_run(dpo__tune_t *t, dpo_ledger_t *L, dpo_rng_t *rng, dpo__tune_state_t *s,
                        const char *label, FILE *out) {
  double b = 0;
  int64_t nv = 0;
  /* before anything runs: the charge per part (resumed: the journal holds it) */
  int rc = t->rank == 0 && !t->resuming ? charge_parts(t, L) : DPO_OK;
  if ((rc = dpo_agree(t->comm, rc)) || (rc = count_valid(t, &nv))) return rc;
  if (t->rank == 0) rc = dpo__tune_split_scale(t, &b);
  if ((rc = dpo_agree(t->comm, rc))) return rc;
  const double v0 = t->split / 4, w = 0.75 * t->split / t->nc;
  for (int i = (int)s->done; i < t->nc; i++) {
    dpo_config_t *c = NULL;
    dpo_run_result_t res;
    if ((rc = dpo__tune_pause(t, L, rng, s))) return rc;
    rc = dpo_agree(t->comm, dpo__tune_split_config(t, &t->c[i], i, &c));
    if (!rc)
      rc = part_run(t, c, v0 + i * w, i + 1 == t->nc ? t->split : v0 + (i + 1) * w, 0, v0, &res,
                    NULL);
    dpo_config_destroy(c);
    dpo__tune_rm_rep(t);
    if (rc) return rc == DPO_EINTR ? dpo__tune_interrupted(t, L, rng, s) : rc;
    /* journalled before its count is used; rank 0: the count of correct predictions on V,
     * noised; only the argmax ever leaves this process (the noisy counts themselves would
     * cost eps each) */
    if ((rc = dpo__tune_finished(t, L, i))) return rc;
    if (t->rank == 0)
      rc = dpo__tune_split_pick(s->noisy, i, (double)llround(res.test_metric * (double)nv), b, rng,
                                &s->best);
    if ((rc = dpo_agree(t->comm, rc))) return rc;
    s->done = i + 1;
  }
  /* the boundary before the final run (a stop there trains it again from scratch) */
  if ((rc = dpo__tune_pause(t, L, rng, s))) return rc;
  int best = s->best;
  MPI_Bcast(&best, 1, MPI_INT, 0, t->comm);
  /* the winner on F at the whole budget; --test only reported */
  dpo_config_t *c = NULL;
  dpo_run_result_t res = {0};
  rc = dpo_agree(t->comm, dpo__tune_split_config(t, &t->c[best], -1, &c));
  /* audited: the canaries are rows of F, the part the plan names before any row is read; the
   * run on F is (eps, delta)-DP in each of them for every partition of the other rows */
  if (!rc) rc = part_run(t, c, t->split, 1, 0, 0, &res, t->audit1 ? &t->a1 : NULL);
  dpo_config_destroy(c);
  if (rc == DPO_EINTR) {
    dpo__tune_rm_rep(t);
    return dpo__tune_interrupted(t, L, rng, s);
  }
  if (!rc && t->rank == 0)
    rc = write_split_summary(t, &t->c[best], res.test_metric, label, out);
  if (!rc && t->rank == 0) rc = dpo__tune_ckpt_remove(t);
  dpo__tune_rm_rep(t);
  return dpo_agree(t->comm, rc);
}
