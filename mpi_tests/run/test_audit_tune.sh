#!/bin/sh
# The audit of dpopt tune (issue 39: tune is one of the families every audit covers):
# `dpopt audit --tune` runs tune's default search by parallel composition (--split 0.1) in
# memory, one tune a trial: the grid's candidates on their parts, report-noisy-max on the
# validation part, the chosen candidate trained again on the final part, which holds the
# canary (D or D').  The adversary sees the chosen candidate and the final model.
#  - power: with every noise scale halved (dpopt-test --test-break-noise: the candidates', the
#    selection's and the final run's; true eps 2x the one charge) the audit reports a
#    VIOLATION (exit 6), and the intact tune passes (exit 0) with a bound of at least 0.5 of
#    the claim.  Seeded (--test-seed 41), so the outcome is reproducible.  Measured at 4000
#    trials, seeds 39-43: intact 0.947, 0.882, 0.824, 0.881, 0.831; halved 1.859, 1.922,
#    1.668, 1.766, 1.832 (claim 1).  Unseeded, the intact check fails with probability at
#    most alpha = 0.05 (the bound's confidence: the false-alarm rate);
#  - the test and its assumption are printed and in the JSON; a stopped, resumed audit gives
#    the uninterrupted one's bound;
#  - what the audit does not cover is refused by name, before anything is written.
. "$(dirname "$0")/../lib/testlib.sh"

lb() { awk 'NR == 2 {print $4}' "$T/out"; }
claim() { awk 'NR == 2 {print $2}' "$T/out"; }
below() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0)}'; }

# dp-gd, one step (its final model is one Laplace release of the canary's clipped gradient),
# three step constants: the candidates differ in the final model's scale, hence the
# statistic's standardisation per chosen candidate
TUNE="--tune --algos dp-gd --steps 0.5,1,2 --eps 1 --clip l1:1 --row-l1-bound 4
  --row-l2-bound 1000 --iters 1 --trials 4000 --quiet --test-seed 41"
# shellcheck disable=SC2086
expect 0 "$DPOPT_TEST" audit $TUNE --out "$T/intact" --json "$T/intact.json"
check "tune (intact): bound $(lb) below the claim $(claim)" below "$(lb)" "$(claim)"
check "tune (intact): bound $(lb) >= 0.5 (power)" below 0.5 "$(lb)"
has "$T/out" "^tune " "the table names the tune"
has "$T/out" "standardised per chosen candidate" "the statistic"
has "$T/out" "^tune: the adversary sees the chosen candidate and its final model" "what it sees"
has "$T/out" "^assumes: .*canary in the final part" "the assumption is printed"
has "$T/intact.json" '"method":"tune"' "json method"
has "$T/intact.json" '"assumption":' "json assumption"
has "$T/intact/summary.json" '"algorithm":"tune"' "summary.json"
# shellcheck disable=SC2086
expect 6 "$DPOPT_TEST" audit $TUNE --test-break-noise --out "$T/halved"
check "tune (noise halved): bound $(lb) above the claim $(claim)" below "$(claim)" "$(lb)"
has "$T/out" "VIOLATION" "tune (noise halved): reported"
has "$T/out" "noise halved" "the planted fault is labelled"

# a seeded tune audit stopped and resumed gives the uninterrupted one's bound (the trials
# done are kept in the checkpoint; the tune's settings are read again)
R="--tune --algos dp-gd --steps 0.5,1,2 --eps 1 --clip l1:1 --row-l1-bound 4 --row-l2-bound 1000
  --iters 1 --trials 1000 --quiet"
# shellcheck disable=SC2086
expect 0 "$DPOPT_TEST" audit $R --test-seed 41 --out "$T/whole"
whole=$(lb)
# shellcheck disable=SC2086
expect 5 "$DPOPT_TEST" audit $R --test-seed 41 --out "$T/stopped" --set run.stop_after=300
expect 0 "$DPOPT_TEST" audit --resume "$T/stopped" --test-seed 41 --quiet
close "$(lb)" "$whole" 0 "tune audit resumed: the uninterrupted bound"

# two algorithms, no clip (the d = 2 construction): runs, and passes intact
expect 0 "$DPOPT_TEST" audit --tune --algos dp-gd,dp-nag-opt --eps 1 --row-l1-bound 4 \
  --row-l2-bound 1000 --iters 1 --trials 1000 --quiet --test-seed 41 --out "$T/two"
check "tune of dp-gd, dp-nag-opt: bound $(lb) below the claim $(claim)" below "$(lb)" "$(claim)"

# refusals: named, exit 1, nothing written
BASE="--eps 1 --clip l1:1 --row-l1-bound 4 --row-l2-bound 1000 --iters 1 --quiet"
# shellcheck disable=SC2086
expect 1 "$DPOPT" audit --tune $BASE --out "$T/r1"
has "$T/err" "give the candidates' algorithms (--algos A,B)" "no --algos"
# shellcheck disable=SC2086
expect 1 "$DPOPT" audit --tune --algo dp-gd $BASE --out "$T/r2"
has "$T/err" "not --algo or --admm" "--algo with --tune"
# shellcheck disable=SC2086
expect 1 "$DPOPT" audit --tune --algos dp-gd --steps 1,2 --set tune.valid_fraction=0.2 $BASE \
  --out "$T/r3"
has "$T/err" "places the validation rows itself" "a validation split of the tune's own"
# shellcheck disable=SC2086
expect 1 "$DPOPT" audit --tune --algos dp-gd,dp-nope $BASE --out "$T/r4"
has "$T/err" "'dp-nope'" "an unknown candidate named"
# shellcheck disable=SC2086
expect 1 "$DPOPT" audit --tune --algos dp-gd --steps 1 $BASE --out "$T/r5"
has "$T/err" "the grid holds one candidate" "tune's own refusal of a one-candidate grid"
for r in r1 r2 r3 r4 r5; do check "refused audit $r wrote nothing" test ! -e "$T/$r"; done
finish test_audit_tune
