#!/bin/sh
# dpopt audit --one-run (Steinke, Nasr and Jagielski 2023): one real training run on a9a with
# canary rows, observed release by release.
#  - the intact run's bound stays below the claim; with the noise scaled by 0.01 (dpopt-test's
#    --test-noise-factor, never installed) it is a VIOLATION (exit 6), for the DP-GD family
#    (Laplace) and dp-sgd-rdp (Gaussian, sampled batches).  Seeded (--seed: the canaries' bits
#    and the noise), so the outcome is reproducible; unseeded, the intact check fails with
#    probability <= alpha = 0.05;
#  - the output and JSON say what was assumed; the run directory (--out) is train's with the
#    audit's result in summary.json (test_audit_run.sh checks its stop and resume);
#  - what it cannot audit is refused by name.
. "$(dirname "$0")/../lib/testlib.sh"

lb() { awk 'NR == 2 {print $4}' "$T/out"; }
below() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0)}'; }
A9A="--config $S/jobs/configs/a9a-demo.ini --data $S/data/a9a --test $S/data/a9a.t --canaries 1000 --quiet --seed 11"

# DP-NAG-opt (Laplace, replace-one) at eps 1
expect 0 $MPI -np 2 "$DPOPT" audit --one-run $A9A --eps 1 --json "$T/nag.json" --out "$T/nag"
check "dp-nag-opt one-run: bound $(lb) below the claim 1" below "$(lb)" 1
has "$T/out" "^dp-nag-opt  *1  " "dp-nag-opt: the claim printed"
has "$T/out" "labelled -1 when excluded (replace-one)" "replace-one canaries said"
has "$T/out" "^assumes: " "the assumption printed"
has "$T/out" "seeded: not private" "a seeded audit says so"
has "$T/nag.json" '"audit":"one-run"' "json: kind"
has "$T/nag.json" '"canaries":1000' "json: canaries"
for f in config.ini ledger.jsonl trace.csv model.txt summary.json; do
  check "one-run: $f in the run directory" test -s "$T/nag/$f"
done
check "one-run: summary.json has the table's bound" \
  awk -v a="$(jq -r .audit.eps_lb "$T/nag/summary.json")" -v b="$(lb)" 'BEGIN {d = a - b; exit !(d < 1e-4 && d > -1e-4)}'
check "one-run: summary.json verdict pass" test "$(jq -r .verdict "$T/nag/summary.json")" = pass
expect 6 $MPI -np 2 "$DPOPT_TEST" audit --one-run $A9A --eps 1 --test-noise-factor 0.01 --out "$T/v"
check "dp-nag-opt, noise x 0.01: bound $(lb) above the claim 1" below 1 "$(lb)"
has "$T/out" "VIOLATION" "dp-nag-opt, noise x 0.01: reported"
check "violation: summary.json says so" test "$(jq -r .verdict "$T/v/summary.json")" = VIOLATION

# dp-sgd-rdp (Gaussian, batches without replacement) at eps 1, delta 1e-5
expect 0 $MPI -np 2 "$DPOPT" audit --one-run $A9A --algo dp-sgd-rdp --eps 1 --delta 1e-5 --out "$T/sgd"
check "dp-sgd-rdp one-run: bound $(lb) below the claim 1" below "$(lb)" 1
expect 6 $MPI -np 2 "$DPOPT_TEST" audit --one-run $A9A --algo dp-sgd-rdp --eps 1 --delta 1e-5 \
  --test-noise-factor 0.01 --out "$T/sgdv"
check "dp-sgd-rdp, noise x 0.01: bound $(lb) above the claim 1" below 1 "$(lb)"

# refused by name, nothing written
expect 1 $MPI -np 2 "$DPOPT" audit --one-run $A9A --algo gd --out "$T/x"
has "$T/err" "adds no noise" "a non-private algorithm is refused"
expect 1 $MPI -np 2 "$DPOPT" audit --one-run $A9A --eps 1 --canaries 1 --out "$T/x"
has "$T/err" "at least 2 canaries" "one canary is refused"
expect 1 $MPI -np 2 "$DPOPT" audit --one-run $A9A --eps 1 --model ridge --out "$T/x"
has "$T/err" "logistic regression" "another model is refused"
# --admm takes dpopt admm's options (test_audit_onerun_admm.sh), not train's
expect 1 $MPI -np 2 "$DPOPT" audit --one-run $A9A --admm dpadmm --eps 1 --out "$T/x"
has "$T/err" "unknown option '--data'" "--admm with train's options: refused by the option"
# --tune takes dpopt tune's options (test_audit_onerun_tune.sh); the geometric search refused
expect 1 $MPI -np 2 "$DPOPT" audit --one-run $A9A --tune --algos dp-gd --steps 0.5,1 --mean 3 \
  --valid "$S/data/a9a.t" --eps 1 --out "$T/x"
has "$T/err" "the geometric search (--mean, --valid, --valid-fraction) is not audited in one run: a training canary" "tune's geometric search refused, saying why"
has "$T/err" "bound eps by a median 0.35 at eps 1 and 0.83 at eps 2 with the noise halved" "tune refused with the modelled bounds"
check "nothing left behind by the refusals" test ! -e "$T/x"
finish test_audit_onerun
