#!/bin/sh
# The calibration cache across runs (calib_cache.c): dp-sgd-rdp's PLD multiplier search under
# the pld ledger, kept under $XDG_CACHE_HOME/dpopt/calib by the plan's digest.
#  - the identical plan hits and gets the identical multiplier (at 1 and 2 ranks), and its
#    ledger accepts the whole plan;
#  - a different plan (another eps) misses and gets its own file;
#  - an edited entry (a smaller multiplier) is not taken on trust: the ledger refuses it and the
#    run searches again, to the uncached multiplier;
#  - an entry whose plan text is another plan's misses; DPOPT_CALIB_CACHE=off misses.
. "$(dirname "$0")/../lib/testlib.sh"
export XDG_CACHE_HOME="$T/cache"
unset DPOPT_CALIB_CACHE
C="--data $S/data/a9a --model logreg --dim 123 --row-l2-bound 3.75 --public-n 32561 --no-trace-loss --trace-every 0 --iters 100 --delta 1e-5"
D="$T/cache/dpopt/calib"
z_of() { sed -n 's/.*"noise_multiplier": *\([-0-9.e+]*\).*/\1/p' "$1/summary.json" | head -1; }

expect 0 "$DPOPT" train $C --eps 1 --out "$T/a1"
hasnot "$T/err" "cached calibration" "first run: no cache yet"
has "$T/err" "PLD, the ledger's accountant" "first run: PLD multiplier"
z1=$(z_of "$T/a1")
check "one cache entry" test "$(ls "$D" | wc -l)" -eq 1
fa=$(ls "$D")

expect 0 "$DPOPT" train $C --eps 1 --out "$T/a2"
has "$T/err" "PLD, the ledger's accountant; cached calibration" "identical plan: hit"
z2=$(z_of "$T/a2")
check "identical plan: identical multiplier ($z1 = $z2)" test -n "$z1" -a "$z1" = "$z2"
has "$T/a2/summary.json" '"charges": *100,' "the ledger accepted all 100 charges"
has "$T/a2/summary.json" '"eps_bound": *"pld"' "charged by the PLD bound"

expect 0 $MPI -np 2 "$DPOPT" train $C --eps 1 --out "$T/a3"
has "$T/err" "cached calibration" "identical plan at 2 ranks: hit"
check "2 ranks: identical multiplier" test "$z1" = "$(z_of "$T/a3")"

expect 0 "$DPOPT" train $C --eps 0.9 --out "$T/b1"
hasnot "$T/err" "cached calibration" "different plan (eps 0.9): miss"
zb=$(z_of "$T/b1")
check "different plan: its own multiplier ($zb > $z1)" awk -v a="$zb" -v b="$z1" 'BEGIN {exit !(a + 0 > b + 0)}'
check "two cache entries" test "$(ls "$D" | wc -l)" -eq 2
fb=$(ls "$D" | grep -v "$fa")

# an edited entry: the multiplier halved; the ledger refuses it, the run searches again
sed -i '2s/.*/z 0x1p-1 fits 1/' "$D/$fa"
expect 0 "$DPOPT" train $C --eps 1 --out "$T/a4"
hasnot "$T/err" "cached calibration" "edited entry: not used"
check "edited entry: the searched multiplier" test "$z1" = "$(z_of "$T/a4")"

# plan b's entry under plan a's digest: its plan text differs, so it misses
cp "$D/$fb" "$D/$fa"
expect 0 "$DPOPT" train $C --eps 1 --out "$T/a5"
hasnot "$T/err" "cached calibration" "another plan's text under the digest: miss"
check "another plan's entry: the searched multiplier" test "$z1" = "$(z_of "$T/a5")"

expect 0 env DPOPT_CALIB_CACHE=off "$DPOPT" train $C --eps 0.9 --out "$T/b2"
hasnot "$T/err" "cached calibration" "DPOPT_CALIB_CACHE=off: miss"
check "cache off: the same multiplier" test "$zb" = "$(z_of "$T/b2")"
finish test_calib_cache
