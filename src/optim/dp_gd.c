/* DP-GD: gradient descent on the noised gradient (001, (2.8)), the baseline of the thesis
 * (Sec. 4.4) and of (001, Sec. 5).  Every step spends eps / T (dpo_privacy_split; with delta > 0
 * scaled by the c of dpo__dp_calibrate to the ledger's composition), with the
 * Laplace scale of (001, Prop. 3.1): b = S1 / (m eps0), eps0 from (3.5) when m < n.
 * Step: algo.schedule = invsqrt (default) alpha_t = alpha0 / sqrt(t + 1), the "1/sqrt(t)" of
 * the thesis (Sec. 4.4, after [76]); const: alpha_t = alpha0 (001, Sec. 5).  alpha0 = algo.alpha
 * or c / L (the thesis applies 1/sqrt(t) to a SUM objective; on the mean objective used here
 * the dimensionally consistent analogue carries the 1/L). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dpopt/privacy.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/dp_common.h"
#include "optim/ckpt_int.h"

typedef struct {
  dpo__dp_t *dp;
  double alpha0, e;
  int invsqrt;
  int ran; /* a step was taken (a later run of the same solver keeps the request path) */
  double *g;
} dpo__dpgd_t;

static void dpgd_destroy(void *st) {
  dpo__dpgd_t *a = st;
  if (!a) return;
  dpo__dp_destroy(a->dp);
  free(a->g);
  free(a);
}

static int dpgd_create(dpo_solver_t *s, void **state) {
  int rc;
  const char *sch = "invsqrt";
  dpo__dpgd_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "dp-gd: out of memory");
  if ((rc = dpo__dp_create(s, 0, &a->dp))) goto fail;
  if ((rc = dpo__optim_step(s, "alpha", a->dp->c, &a->alpha0, NULL))) goto fail;
  if ((rc = dpo_solver_param_str(s, "schedule", "invsqrt", &sch))) goto fail;
  if (!strcasecmp(sch, "invsqrt")) a->invsqrt = 1;
  else if (strcasecmp(sch, "const")) {
    rc = dpo_err(DPO_EINVAL, "dp-gd: algo.schedule = '%s': expected invsqrt or const", sch);
    goto fail;
  }
  if (a->dp->fixed_b == 0 && ((rc = dpo_privacy_split(a->dp->eps, a->dp->T, &a->e)) ||
                              (rc = dpo__dp_calibrate(a->dp, 1.0, &a->e, 1, a->dp->T))))
    goto fail;
  if (!(a->g = malloc((size_t)dpo_solver_dim(s) * sizeof *a->g))) {
    rc = dpo_err(DPO_ENOMEM, "dp-gd: out of memory");
    goto fail;
  }
  *state = a;
  return DPO_OK;
fail:
  dpgd_destroy(a);
  return rc;
}

static int dpgd_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__dpgd_t *a = st;
  double *x = dpo_solver_x(s);
  a->ran = 1;
  int rc = dpo__dp_grad(a->dp, x, t, a->e, 1.0, a->g, NULL);
  if (rc) return rc;
  double al = a->invsqrt ? a->alpha0 / sqrt((double)t + 1.0) : a->alpha0;
  for (int32_t j = 0; j < a->dp->d; j++) x[j] -= al * a->g[j];
  return DPO_OK;
}

/* Every rank (dpo_algo_t.step1): one meeting a step with the full batch (dp_step1.c); the
 * other ranks get a copy of the step's numbers (alpha0, e, the schedule) and of the DP state,
 * in a state allocated before the ranks agree on it. */
static int dpgd_step1(dpo_solver_t *s, void **state, int want, int64_t *max_iter, int *on) {
  const int rank = dpo_oracle_rank(dpo_solver_oracle(s));
  dpo__dpgd_t *a = rank == 0 ? *state : NULL, *b = NULL;
  int lrc = DPO_OK;
  if (rank != 0 && (!(b = calloc(1, sizeof *b)) ||
                    !(b->g = malloc((size_t)dpo_solver_dim(s) * sizeof *b->g))))
    lrc = dpo_err(DPO_ENOMEM, "dp-gd: no memory for this rank's copy of the step");
  double pub[3] = {a ? a->alpha0 : 0, a ? a->e : 0, a ? a->invsqrt : 0};
  dpo__dp_t *copy = NULL;
  int rc = dpo__dp_step1_begin(s, a ? a->dp : NULL, want && a && !a->ran, lrc, max_iter, pub,
                               3, &copy, on);
  if (rc || !copy) {
    dpgd_destroy(b);
    return rc;
  }
  b->dp = copy, b->alpha0 = pub[0], b->e = pub[1], b->invsqrt = pub[2] != 0;
  if (*state) dpgd_destroy(*state);
  *state = b;
  return DPO_OK;
}

/* checkpoint: the common DP state; the step schedule depends on t only */
static int dpgd_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  dpo__dpgd_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_save(a->dp, w)) || (rc = dpo_ckpt_put_double(w, "alpha0", a->alpha0)) ||
      (rc = dpo_ckpt_put_double(w, "e", a->e)))
    return rc;
  return DPO_OK;
}
static int dpgd_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__dpgd_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__dp_load(a->dp, r)) || (rc = dpo__ckpt_check_double(r, "alpha0", a->alpha0)) ||
      (rc = dpo__ckpt_check_double(r, "e", a->e)))
    return rc;
  return DPO_OK;
}

static const dpo_algo_param_t dpgd_params[] = {
    {"alpha", "c/L", "step alpha0"},
    {"schedule", "invsqrt", "invsqrt (alpha0/sqrt(t+1)) | const"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_dp_gd = {"dp-gd", "DP gradient descent, step c/(L sqrt(t)) (Kuru 2019, Sec. 4.4)",
                                    1, dpgd_create, dpgd_step, dpgd_destroy, dpgd_save,
                                    dpgd_load, dpgd_params, dpo__dp_params, "alpha", NULL, 0, 0, 0, dpgd_step1};
