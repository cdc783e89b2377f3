/* The solver's trace rows (see include/dpopt/optim.h, dpo_run_opts_t.trace): written by rank 0
 * at the top of an iteration, at the iterate x_t.  Their loss and gradient columns are
 * computed on the training data and are therefore labelled non-private (privacy rule 4).
 *
 * On the request path the row asks the oracle for the full pass (and the held-out set) before
 * the step.  In a run of one meeting a step (comm/step1.h) the row's sums ride in step t's
 * meeting instead: the row is noted here before the step (its time and eps_spent, which are
 * those before the step's charge), the step's meeting carries the full pass's sums at x_t,
 * and the row is written after the step, from the same bits the request path's reductions
 * give (the fold of the ranks' sums in one order at <= 12 ranks). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/step1.h"
#include "dpopt/optim.h"
#include "dpopt/status.h"
#include "optim/solver_int.h"

/* the one-entry cache of the last full-batch evaluation (solver_int.h): here, below the trace
 * rows and the driver's gtol test, which both evaluate at x_t */
int dpo_solver_eval(dpo_solver_t *s, const double *x, double *F, double *g) {
  size_t nb = (size_t)s->d * sizeof *x;
  if (s->cvalid && memcmp(x, s->cx, nb) == 0) {
    if (F) *F = s->cF;
    if (g) memcpy(g, s->cg, nb);
    return DPO_OK;
  }
  s->cvalid = 0;
  int rc = dpo_oracle_eval(s->oracle, x, NULL, 1, &s->cF, s->cg);
  if (rc) return rc;
  memcpy(s->cx, x, nb);
  s->cvalid = 1;
  if (F) *F = s->cF;
  if (g) memcpy(g, s->cg, nb);
  return DPO_OK;
}

double dpo__nrm2(const double *v, int32_t d) {
  /* scaled, so huge gradients do not overflow */
  double scale = 0.0, ssq = 1.0;
  for (int32_t j = 0; j < d; j++) {
    double a = fabs(v[j]);
    if (a == 0.0) continue;
    if (scale < a) {
      ssq = 1.0 + ssq * (scale / a) * (scale / a);
      scale = a;
    } else {
      ssq += (a / scale) * (a / scale);
    }
  }
  return scale * sqrt(ssq);
}

static int dpo__trace_write(const dpo_run_opts_t *o, int64_t t, double time_s, double F,
                            double gn, double eps, double hl, double hm) {
  double fs = o->trace_loss && isfinite(o->fstar) ? F - o->fstar : NAN;
  int w = fprintf(o->trace, "%ld,%.6f,%.17g,%.17g,%.17g,%.17g", (long)t, time_s, F, gn, fs, eps);
  if (w >= 0 && o->trace_loss && o->heldout_metric) w = fprintf(o->trace, ",%.17g,%.17g", hl, hm);
  if (w < 0 || fputc('\n', o->trace) == EOF)
    return dpo_err(DPO_EIO, "cannot write the trace row of iteration %ld", (long)t);
  return DPO_OK;
}

int dpo__trace_row(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t t, double t0, double *diag,
                   double *g, int may_defer) {
  double F = NAN, gn = NAN, hl = NAN, hm = NAN;
  double a = MPI_Wtime();
  int held = o->trace_loss && o->heldout_metric;
  if (may_defer && o->trace_loss && s->one && dpo__oracle_step1_live(s->oracle, NULL)) {
    /* step t's meeting brings the sums: the row is written after it (dpo__trace_after) */
    s->row.t = t;
    s->row.time = a - t0 - *diag;
    s->row.eps = s->spent ? s->spent(s->spent_arg) : NAN;
    dpo__oracle_step1_point(s->oracle, t, s->x);
    return DPO_OK;
  }
  if (o->trace_loss) {
    int rc = dpo_solver_eval(s, s->x, &F, g);
    if (!rc && held) rc = dpo_oracle_eval_metric(s->oracle, s->x, 1, &hl, &hm);
    if (rc) return rc;
    gn = dpo__nrm2(g, s->d);
  }
  double b = MPI_Wtime();
  *diag += b - a;
  double eps = s->spent ? s->spent(s->spent_arg) : NAN;
  return dpo__trace_write(o, t, b - t0 - *diag, F, gn, eps, hl, hm);
}

int dpo__trace_after(dpo_solver_t *s, const dpo_run_opts_t *o, int64_t t, double *diag,
                     double *g, const double *xt, int rc) {
  if (s->row.t != t) return rc;
  s->row.t = -1;
  double loss = NAN, held[3], secs = 0.0, hl = NAN, hm = NAN;
  int64_t used = 0;
  /* no sums: the meeting failed, and the step's status says why */
  int trc = dpo__oracle_step1_trace(s->oracle, t, &loss, g, &used, held, &secs);
  if (trc) return rc ? rc : trc;
  *diag += secs;
  /* what dpo_oracle_eval and dpo_oracle_eval_metric make of the sums */
  if (used <= 0) return dpo_err(DPO_EINVAL, "dpo_oracle_eval: empty batch (mean undefined)");
  dpo_model_finish(dpo_oracle_model(s->oracle), s->d, used, xt, &loss, g);
  if (o->heldout_metric) {
    if (!(held[2] > 0)) return dpo_err(DPO_EINVAL, "dpo_oracle_eval_metric: no rows to evaluate");
    hl = held[0] / held[2];
    hm = held[1] / held[2];
  }
  trc = dpo__trace_write(o, t, s->row.time, loss, dpo__nrm2(g, s->d), s->row.eps, hl, hm);
  return trc ? trc : rc;
}
