#!/bin/sh
# Under add-remove the row count n is private (neighbours differ in size), so dp-sgd-rdp's
# Poisson rate q = m/n, its steps from --epochs and its default batch must not read it
# (sco_common.h, dpo__sco_public_n).  On a9a (D) and a9a without its last row (D'), seeded:
#  - --public-n 32561: the two runs have the same plan, the same q and the same noise in every
#    charge (the journals agree but for the running totals' rows) -- the old code took q from n
#    (256/32561 vs 256/32560) and calibrated different noise;
#  - default: a noisy count, charged eps/100 as a Laplace release BEFORE the plan line, is the
#    n of every charge; with one seed the two counts differ by exactly 1 (same noise draw);
#  - the ledger replays and stays within the budget; bad settings are refused, nothing charged;
#  - `dpopt audit` passes on the default (noisy count) and the declared public size (z fixed:
#    the ledger, not a calibration per trial, decides what fits).
. "$(dirname "$0")/../lib/testlib.sh"
head -n 32560 "$S/data/a9a" > "$T/a9a-1"
cp "$S/data/a9a.schema" "$T/a9a-1.schema" # the public schema (123 features) of the rows taken
C="--row-l2-bound 3.75 --eps 1 --delta 1e-5 --algo dp-sgd-rdp --set privacy.neighbours=add-remove --set algo.sampling=poisson --batch 256 --epochs 0.2 --seed 7 --quiet --no-trace-loss"

# declared public size: identical plans and charges on D and D'
expect 0 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" $C --public-n 32561 --out "$T/dp"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/a9a-1" $C --public-n 32561 --out "$T/dq"
has "$T/dp/ledger.jsonl" '"n":32561' "declared n in the charges"
hasnot "$T/dp/ledger.jsonl" '"mechanism":"laplace"' "declared n: no count charged"
strip() { unchained "$1" | sed 's/"\(charge\|total\)_[a-z]*":[^,}]*//g'; } # (each journal its own chain)
strip "$T/dp/ledger.jsonl" > "$T/j1"
strip "$T/dq/ledger.jsonl" > "$T/j2"
check "declared n: the journals of D and D' agree" cmp -s "$T/j1" "$T/j2"
grep '"plan"' "$T/dp/summary.json" > /dev/null || true
check "declared n: same plan in summary.json" sh -c \
  "grep -o '\"what\": *\"[^\"]*\"' '$T/dp/summary.json' > '$T/w1' && grep -o '\"what\": *\"[^\"]*\"' '$T/dq/summary.json' > '$T/w2' && cmp -s '$T/w1' '$T/w2'"

# default: the noisy count, charged first, then used everywhere
expect 0 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" $C --out "$T/cp"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/a9a-1" $C --out "$T/cq"
l1=$(sed -n 2p "$T/cp/ledger.jsonl")
case "$l1" in
  *'"step":-1,"mechanism":"laplace"'*'"sensitivity":1,'*'"cost_eps":0.0099999'*) ok ;;
  *) bad "the first charge is the count at eps/100: $l1" ;;
esac
check "the count is charged before the plan line" sh -c "sed -n 3p '$T/cp/ledger.jsonl' | grep -q '\"kind\":\"plan\"'"
n1=$(grep -o '"mechanism":"gaussian".*"n":[0-9]*' "$T/cp/ledger.jsonl" | head -1 | sed 's/.*"n"://')
n2=$(grep -o '"mechanism":"gaussian".*"n":[0-9]*' "$T/cq/ledger.jsonl" | head -1 | sed 's/.*"n"://')
check "the counts of D and D' differ by exactly 1 ($n1, $n2)" test "$((n1 - n2))" = 1
check "the steps use the count, not n = 32561 ($n1)" test "$n1" != 32561
has "$T/cp/summary.json" "q = 256.*/$n1, n from a noisy count" "summary.json names the count"
expect 0 "$DPOPT" ledger "$T/cp"
has "$T/out" "^bound: *pld" "count + steps: the PLD bound (C) holds the ledger"
spent=$(sed -n 's/^spent: *eps = \([0-9.e-]*\),.*/\1/p' "$T/out")
check "spent $spent <= 1" awk -v e="$spent" 'BEGIN{exit !(e <= 1 && e > 0.99)}'

# refusals: before anything is charged
expect 1 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" $C --set privacy.count_eps=1 --out "$T/r1"
has "$T/err" "privacy.count_eps = 1 must be in (0, eps = 1)" "count_eps >= eps refused"
expect 1 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" $C --public-n 0 --out "$T/r2"
has "$T/err" "privacy.public_n = 0 must be in" "public_n 0 refused"
expect 1 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" $C --set privacy.accountant=rdp --out "$T/r3"
has "$T/err" "privacy.accountant = rdp does not take" "a noisy count under the rdp accountant refused"
hasnot "$T/r3/ledger.jsonl" '"step"' "refused: nothing charged"

# the audit: the count is part of the mechanism and of the claim
G="--clip l2:1 --row-l2-bound 4 --eps 1 --delta 1e-5 --set privacy.neighbours=add-remove --set algo.sampling=poisson --set algo.m=4 --set algo.z=4 --iters 5 --trials 100 --alpha 1e-3 --quiet"
expect 0 "$DPOPT" audit --algo dp-sgd-rdp $G --json "$T/a1.json"
has "$T/a1.json" '"violation":false' "audit, noisy count"
expect 0 "$DPOPT" audit --algo dp-sgd-rdp $G --public-n 10 --json "$T/a2.json"
has "$T/a2.json" '"violation":false' "audit, declared size"
finish test_public_n
