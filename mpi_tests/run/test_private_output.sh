#!/bin/sh
# Nothing data-dependent leaves a private run unless a charge covers it (issue 11, items 5-6):
#  - phased-erm runs its inner solver for a step count fixed by public constants: the oracle
#    evaluation count is the same on neighbouring data sets (one label flipped; on 06c7150
#    a stopping rule on the certified gap gave 33, 32 and 33 here) and no gap is printed;
#  - row bounds: a private run clips a row over a declared bound, silently (a refusal would
#    release, uncharged, whether such a row exists: issue 35); asking it to reject or to
#    report rows is refused before anything runs; non-private algorithms keep the details.
. "$(dirname "$0")/../lib/testlib.sh"
head -n 1000 "$S/data/a9a" >"$T/s"
flip() { awk -v k="$1" 'NR == k { $1 = ($1 == "-1") ? "+1" : "-1" } { print }' "$T/s" >"$T/s$1"; }
flip 5; flip 8
evals() { sed -n 's/.*"oracle_evals": *\([0-9]*\).*/\1/p' "$1/summary.json"; }
ERM="--dim 123 --row-l2-bound 3.75 --lambda 0.01 --algo phased-erm --eps 1 --delta 1e-5 --set privacy.accountant=rdp"
for f in s s5 s8; do
  expect 0 $MPI -np 2 "$DPOPT" train --data "$T/$f" $ERM --out "$T/erm-$f"
  hasnot "$T/err" "gap" "phased-erm prints no solver gap"
done
e0=$(evals "$T/erm-s") e5=$(evals "$T/erm-s5") e8=$(evals "$T/erm-s8")
if [ -n "$e0" ] && [ "$e0" = "$e5" ] && [ "$e0" = "$e8" ]; then ok; else
  bad "phased-erm oracle_evals differ between neighbouring data sets: $e0 / $e5 / $e8"; fi

# ---- row bounds: row 37 gets a 15th feature, L2 norm sqrt(15) = 3.873 > 3.75
head -n 200 "$S/data/a9a" | awk 'NR == 37 { $0 = $0 " 120:1" } { print }' >"$T/r"
PRIV="--data $T/r --dim 123 --row-l1-bound 15 --row-l2-bound 3.75 --lambda 0.01 --algo dp-gd --eps 1 --iters 3"
expect 0 $MPI -np 2 "$DPOPT" train $PRIV --out "$T/p1"
hasnot "$T/err" "row 37" "private clip: the row is not named"
hasnot "$T/err" "3.87" "private clip: the norm is not printed"
hasnot "$T/err" "scaled" "private clip is silent"
expect 1 $MPI -np 2 "$DPOPT" train $PRIV --row-bound-action reject --out "$T/p2"
has "$T/err" "a private run cannot stop on a row over the declared bound" "private reject refused"
check "private reject: nothing written" test ! -e "$T/p2"
expect 1 "$DPOPT" train $PRIV --report-rows --out "$T/p4"
has "$T/err" "drop --report-rows" "private --report-rows refused"
check "private --report-rows: nothing written" test ! -e "$T/p4"
# the clipped run equals a run on the row scaled onto the bound by hand (sqrt(15) -> 3.75)
awk -v CONVFMT=%.17g -v OFMT=%.17g 'NR == 37 { s = 3.75 / sqrt(15); o = $1; for (i = 2; i <= NF; i++) { split($i, a, ":"); o = o " " a[1] ":" a[2] * s } $0 = o } { print }' "$T/r" >"$T/rc"
expect 0 "$DPOPT" train $PRIV --seed 4 --out "$T/p5"
expect 0 "$DPOPT" train $PRIV --data "$T/rc" --seed 4 --out "$T/p6"
tail -n +2 "$T/p5/model.txt" >"$T/m5"; tail -n +2 "$T/p6/model.txt" >"$T/m6" # line 1 names the file
check "private clip = the row scaled onto the bound" cmp -s "$T/m5" "$T/m6"
PUB="--data $T/r --row-l2-bound 3.75 --lambda 0.01 --algo gd --iters 3"
expect 2 "$DPOPT" train $PUB --out "$T/g1"
has "$T/err" "row 37 has L2 norm 3.87" "non-private reject names the row"
hasnot "$T/err" "NON-PRIVATE" "non-private: no report label"
expect 0 "$DPOPT" train $PUB --row-bound-action clip --out "$T/g2"
has "$T/err" "1 rows scaled" "non-private clip counts"
finish test_private_output
