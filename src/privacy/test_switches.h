/* Test switches (issue 36): faults planted on purpose, so that the empirical audit's own tests
 * can check that it catches them (a sound audit of a broken mechanism must report a
 * VIOLATION).  They exist only in objects compiled with -DDPO_TEST_SWITCHES: libdpopt_test.la
 * and the test tool dpopt-test (`dpopt-test audit --test-break-noise | --test-drop-share |
 * --test-keep-all-rows | --test-seed S`), built by make check and never installed.  libdpopt.so,
 * the installed headers and the installed dpopt hold none of them (test_switches_out.sh), so no
 * program that links the library can shrink a noise scale while its outputs say PRIVATE.
 *
 * Defined in the files that read them: mechanism.c, secagg.c (the noise factor), oracle.c
 * (keep every row; a deviating coordinator and a failing party for dpopt-test train; the
 * request path for every step),
 * consensus.c (a coordinator that ignores its ledger's refusal),
 * audit_run.c (the audit's switches).  Not thread-safe; process-wide. */
#ifndef DPO_PRIVACY_TEST_SWITCHES_H
#define DPO_PRIVACY_TEST_SWITCHES_H
#ifndef DPO_TEST_SWITCHES
#error "privacy/test_switches.h is for the test builds (-DDPO_TEST_SWITCHES) only"
#endif

#include <stdint.h>

/* mechanism.c (--test-break-noise): multiply every noise scale of the exact grid Laplace /
 * Gaussian mechanisms by `factor` (1 = normal; <= 0 resets to 1).  A factor < 1 breaks privacy
 * on purpose. */
void dpo__test_noise_factor(double factor);
/* The factor in force (secagg.c scales its integer shares' sigma by it). */
double dpo__test_noise_factor_get(void);

/* oracle.c (--test-keep-all-rows): on = 1 makes the party-local sampling of every oracle
 * (dpo_oracle_eval_sums_sampled) keep every row (rate n / n) while the caller charges m / n:
 * the defect an audit at q < 1 must catch. */
void dpo__oracle_test_keep_all(int on);

/* audit_run.c (--test-drop-share): on = 1 makes every privacy.trust = secagg audit trial add
 * one party's noise share fewer (audit.secagg_parties = P parties, P - 1 shares), a fault the
 * audit must catch when the shares are sized for all P (privacy.collude = 0). */
void dpo__test_drop_share(int on);
/* audit_run.c (--test-keep-all-rows): on = 1 makes every privacy.trust = secagg audit trial with
 * party-local Poisson sampling keep every row while the ledger charges the rate m / n_pub
 * (dpo__oracle_test_keep_all). */
void dpo__test_keep_all_rows(int on);
/* audit_run.c (--test-seed S): on = 1 draws every trial's noise from a seeded stream (seed S,
 * stream = the rank), so a test's audit outcome is reproducible (the table says
 * "[TEST: seeded]": such a run shows nothing about secure noise). */
void dpo__test_audit_seed(int on, uint64_t seed);

/* oracle.c (dpopt-test train --test-coordinator KIND[:N]): rank 0 deviates from the plan in
 * its secure-aggregation requests from the N-th on (default 1): kind 1 halves the announced
 * noise share sigma (or Laplace scale), 2 halves the fixed-point step gamma, 3 (pure eps)
 * announces one honest share more, 4 asks for one release more than the plan at its end; the
 * charge announced stays the plan's.  kind 0 resets.  Every party's guard must refuse.
 * Local / shares requests: 1 halves the noise scale on the sum, 3 (shares) announces one share
 * more, 4 as above, 5 asks for the other noise family (Laplace <-> Gaussian) at the same scale;
 * rank 0 itself goes on with the plan's header (a coordinator that announces what it does
 * not do). */
void dpo__oracle_test_deviate(int kind, int64_t at);
/* oracle.c (dpopt-test train --test-party-fail N): the last rank fails in its N-th secure-
 * aggregation release (0: never); the round must be withheld, never decoded.  Under
 * privacy.trust = local and shares it fails in its N-th noised request before its guard is
 * asked (as a refusal), and rank 0 prints how many of the sums it received of that withheld
 * round are nonzero (a "[TEST]" line; every rank must have zeroed them). */
void dpo__oracle_test_party_fail(int64_t at);
/* oracle.c (dpopt-test train --test-party-kill N): the last rank dies (SIGKILL, as a crashed
 * or killed party) in its N-th secure-aggregation release, after its guard journalled the
 * charge and before its share is sent (0: never); the job aborts, a resume continues. */
void dpo__oracle_test_party_kill(int64_t at);
/* oracle.c (dpopt-test train --test-step-request): on = 1 keeps every DP-SGD step on the
 * request path (rank 0 asks, the others serve), so a test can compare its outputs with those
 * of one meeting a step (comm/step1.h). */
void dpo__oracle_test_step_request(int on);
/* consensus.c (dpopt-test admm --test-coordinator ignore-refusal, consensus ADMM): rank 0
 * announces every next iteration accepted although its ledger refused it (it journals nothing
 * for it); every party's guard must refuse the release its own account cannot pay for. */
void dpo__test_cons_ignore_refusal(int on);
/* secagg.c (dpopt-test train --test-coordinator key): with authenticated keys, rank 0 publishes
 * another key-agreement key than the one it signed (a substituted key); every party must stop. */
void dpo__secagg_test_substitute_key(int on);
/* secagg.c (dpopt-test train --test-coordinator run=HEX): rank 0 takes HEX (an old run's id)
 * as a new multi-party run's id instead of the one every rank derived; every party must stop. */
void dpo__secagg_test_run_id(const char *hex);

#endif
