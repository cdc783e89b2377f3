#!/bin/sh
# The one-run audit's power (Steinke, Nasr and Jagielski 2023): a noise halved after the charge
# (dpopt-test's --test-break-noise, never installed) is a VIOLATION, the intact run passes.
# Setting where the theory gives it the power: dp-gd, one release, pure eps 1 (Laplace), the
# l1 clip C = 1 saturated by every canary (|g| (a + 1) = (a + 1) / 2 > C at the start, a =
# sqrt(14) the canary's value), replace-one.  Canary i's column then moves by +-C a / (a + 1)
# against the release's Laplace scale 2 C / eps: each canary is eps' = eps a / (a + 1) = 0.789
# randomized response (1.578 with the noise halved), and the 250 top and 250 bottom scores
# all sit where the log-likelihood ratio saturates, so the 500 guesses are right with
# probability q = e^eps' / (1 + e^eps'): 343.8 +- 10.4 expected intact, 414.5 +- 8.4 halved.
# At 500 guesses (alpha / 4) the bound exceeds 1 from 388 right: binomial power 0.999 halved.
# False alarm (intact bound above the claim at any of the four guess counts): at most alpha =
# 0.05 for any sound run (the bound's confidence), here about 5e-4 (the binomial tails add to
# 5.4e-4; 11 of 20000 in jobs/audit/one-run-power.py's simulation; 0 of 40 seeds with the real
# code, jobs/audit/one-run-power; doc/results.md).  Seeded (--seed: the canaries' bits and the
# noise), so the outcome here is reproducible, on 2 ranks as on 3.
. "$(dirname "$0")/../lib/testlib.sh"

field() { awk -v k="$1" '/^one run:/ {for (i = 1; i <= NF; i++) if (split($i, p, ":") == 2 && p[1] == k) print p[2]}' "$T/out"; }
lb() { awk 'NR == 2 {print $4}' "$T/out"; }
below() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0)}'; }
# within 4 standard deviations of the binomial expectation
near() { awk -v v="$1" -v e="$2" -v s="$3" 'BEGIN {exit !(v != "" && (v - e) ^ 2 <= 16 * s * s)}'; }
RUN="--config $S/jobs/configs/a9a-demo.ini --data $S/data/a9a --test $S/data/a9a.t --canaries 1000 --quiet
  --seed 11 --algo dp-gd --iters 1 --eps 1 --clip l1:1"

expect 0 $MPI -np 2 "$DPOPT_TEST" audit --one-run $RUN --out "$T/ok"
check "intact: bound $(lb) below the claim 1" below "$(lb)" 1
check "intact: $(field 500) of 500 right, theory 343.8 +- 10.4" near "$(field 500)" 343.8 10.4
has "$T/out" "^one run: 1 releases observed" "one release observed"
expect 6 $MPI -np 2 "$DPOPT_TEST" audit --one-run $RUN --test-break-noise --out "$T/half"
check "noise halved: bound $(lb) above the claim 1" below 1 "$(lb)"
check "noise halved: $(field 500) of 500 right, theory 414.5 +- 8.4" near "$(field 500)" 414.5 8.4
has "$T/out" "VIOLATION" "noise halved: reported"
has "$T/out" "TEST: noise halved" "noise halved: the table says so"
check "noise halved: summary.json says VIOLATION" test "$(jq -r .verdict "$T/half/summary.json")" = VIOLATION
# the same seeded audit on 3 ranks (the canaries on another rank, the rows split otherwise)
g2=$(sed -n 3p "$T/out" | cut -d';' -f3)
expect 6 $MPI -np 3 "$DPOPT_TEST" audit --one-run $RUN --test-break-noise --out "$T/half3"
check "noise halved, 3 ranks: the 2 ranks' guesses ($g2)" test "$(sed -n 3p "$T/out" | cut -d';' -f3)" = "$g2"
finish test_audit_onerun_power
