/* Private: checkpoint helpers shared by the algorithms' save/load ops (checkpoint.c,
 * dp_ckpt.c).  Every algorithm stores its state under its own keys (the driver prefixes
 * them with "algo."); load() runs on a freshly created state, so values create() derives from
 * the config are recomputed and only checked (dpo__ckpt_check_*), never trusted blindly. */
#ifndef DPO_OPTIM_CKPT_INT_H
#define DPO_OPTIM_CKPT_INT_H

#include "dpopt/optim.h"
#include "optim/dp_common.h"

/* DPO_EINVAL unless the stored value equals (bitwise) the one recomputed from the config:
 * a changed parameter on resume would silently change the algorithm. */
int dpo__ckpt_check_double(const dpo_ckpt_t *r, const char *key, double now);
int dpo__ckpt_check_int(const dpo_ckpt_t *r, const char *key, int64_t now);
/* The same for an array of n values (a schedule recomputed from the config). */
int dpo__ckpt_check_f64s(const dpo_ckpt_t *r, const char *key, const double *now, int64_t n);
int dpo__ckpt_check_i64s(const dpo_ckpt_t *r, const char *key, const int64_t *now, int64_t n);

/* The momentum methods' shared state (hb, nag, dp-hb, dp-nag): step "alpha" and momentum
 * "beta" (checked against the config on load), "started" and x_{t-1} as "xprev" once the
 * first step stored it (d doubles, or none before that). */
int dpo__ckpt_put_momentum(dpo_ckpt_t *w, double alpha, double beta, int started,
                           const double *xprev, int64_t d);
int dpo__ckpt_get_momentum(const dpo_ckpt_t *r, double alpha, double beta, int *started,
                           double *xprev, int64_t d);

/* The private algorithms' common state: sampling mode, the disjoint-bucket permutation (an
 * unseeded run draws it from the OS key, so it must be stored), and the resume rule for a
 * disjoint pass (see optim.h).  Multi-party runs refuse (DPO_EUNSUP) for now. */
int dpo__dp_save(const dpo__dp_t *dp, dpo_ckpt_t *w);
int dpo__dp_load(dpo__dp_t *dp, const dpo_ckpt_t *r);

/* Resume of a run whose releases form one disjoint pass (disjoint batches or phases, parallel
 * composition): DPO_EUNSUP when the journal holds charges after the checkpoint.  Those
 * releases would be made again on the same rows, and counted as the same pass they would cost
 * nothing more, an under-count; who names the method. */
int dpo__ckpt_disjoint_resume(const dpo_solver_t *s, const char *who);

/* The noisy row count of an add-remove run without a declared size (dpo__public_n), rank 0;
 * solver_ckpt.c.  dpo__count_resumed: a solver created for a resume (dpo_solver_create_resume)
 * takes the count from the checkpoint (*value >= 1), after checking that the reopened journal
 * holds its charge at the line the checkpoint names (a Laplace release at step -1, sensitivity
 * 1, of scale b) and that the record carries the seal written with the journal key
 * (dpo_ledger_seal); it draws and charges nothing.  A checkpoint without the count is refused
 * (DPO_EINVAL: another plan), a journal without its charge or a broken seal too (DPO_EFORMAT).
 * Any other solver: *value = -1: charge, draw, then dpo__count_note(the value) at once, which
 * keeps it, its line and its seal for the checkpoints (nothing without a journal). */
int dpo__count_resumed(dpo_solver_t *s, double b, int64_t *value);
int dpo__count_note(dpo_solver_t *s, double b, int64_t value);

#endif
