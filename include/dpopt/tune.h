/* Private hyperparameter selection (dpopt tune, src/run/tune.c).
 *
 * A tune runs K private trainings, K random and never released, each on a configuration drawn
 * uniformly from the candidate grid, scores each on the held-out data with a Laplace-noised
 * count of correct predictions, and releases only the best (configuration, model, noisy
 * score).  K is geometric with mean tune.mean (P[K = k] = g (1 - g)^(k-1), g = 1/mean): the
 * truncated negative binomial of Papernot & Steinke (2022) with shape eta = 1, which is also
 * the random stopping of Liu & Talwar (2019).
 *
 * One repetition Q = (training on the training rows, noisy score on the held-out rows): a
 * neighbouring data set changes one row, which is in one of the two disjoint parts (the
 * held-out data count as private), so Q is as private as the worse of the two (parallel
 * composition, per Renyi order for RDP).  The cost of the whole tune:
 *  - pure eps (delta = 0): every repetition eps0-DP  =>  the tune is 3 eps0-DP (Liu & Talwar
 *    2019, Thm 3.4; Papernot & Steinke 2022, Thm 2 with eta = 1 as lambda -> inf);
 *  - Renyi (delta > 0): every repetition (lambda, e(lambda))-RDP on the order grid  =>  the
 *    tune is (lambda, e'(lambda))-RDP with (Papernot & Steinke 2022, Thm 2, eta = 1,
 *    gamma = 1/mean, E[K] = mean)
 *      e'(lambda) = e(lambda) + log(mean)/(lambda - 1)
 *                   + 2 min_{lambda^ on the grid} [ (1 - 1/lambda^) e(lambda^) + log(mean)/lambda^ ]
 *    then e'(lambda) is replaced by min over the orders >= lambda (RDP is monotone in the
 *    order), and converted to (eps, delta) by dpo_rdp_eps.
 * The total is ONE charge in the tune's ledger, made before any candidate runs. */
#ifndef DPOPT_TUNE_H
#define DPOPT_TUNE_H

#include <mpi.h>

#include "dpopt/config.h"
#include "dpopt/privacy.h"
#include "dpopt/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Not collective.  The pure-eps cost of a geometric tune whose repetitions are eps0-DP:
 * 3 eps0 rounded up (never below the exact product). */
int dpo_tune_pure_eps(double eps0, double *eps);

/* Not collective.  The RDP curve of a geometric tune (mean >= 1) whose repetitions have the
 * curve `base` (Papernot & Steinke 2022, Thm 2 with eta = 1; formula above), on base's orders,
 * rounded up.  out may alias base. */
int dpo_tune_rdp(const dpo_rdp_curve_t *base, double mean, dpo_rdp_curve_t *out);

/* Not collective.  c = the RDP curve of one eps-DP release: min(eps, alpha eps^2 / 2) per
 * order (Bun & Steinke 2016), on the default orders. */
void dpo_tune_pure_curve(double eps, dpo_rdp_curve_t *c);

/* Collective over comm: the whole tune from a configuration (what `dpopt tune` does): the
 * keys of dpopt train plus tune.algo, tune.lr, tune.clip, tune.epochs (comma-separated
 * candidate lists), tune.mean; writes run.dir (ledger.jsonl with the plan and the one
 * charge, model.txt of the chosen candidate, summary.json, config.ini: the model keys and the chosen settings) and prints the result
 * on rank 0 to out (may be NULL).  Stop and resume as a run's (src/run/tune_ckpt.c): with
 * dpo_run_signals_install() a SIGTERM/SIGINT, or run.stop_after = N finished repetitions
 * (candidates under tune.split), writes run.dir/checkpoint and returns DPO_EINTR;
 * run.checkpoint_every = N writes one every N; run.resume = DIR continues a stopped tune
 * (only run.* keys may change). */
int dpo_tune_run_config(MPI_Comm comm, const dpo_config_t *cfg, FILE *out);

/* Collective over comm: dpopt audit --one-run --tune.  The tune of dpo_tune_run_config with
 * audit.one_run = 1 (audit.canaries, audit.alpha, audit.json as dpopt audit --one-run reads
 * them) under the search by parallel composition (tune.split): the final part's run is train's
 * one-run audit, its canary rows added to that part's rows; res (every rank) its result.
 * Refused before anything is read: a plain tune, the geometric search, softmax, stop and
 * resume. */
int dpo_tune_audit1_run(MPI_Comm comm, const dpo_config_t *cfg, FILE *out,
                        dpo_audit1_result_t *res);

#ifdef __cplusplus
}
#endif
#endif
