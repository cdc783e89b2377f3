#!/bin/sh
# HAMSI's history cache (src/mf/hamsi_ring.c, --cache-mb, issue 15): with it, a ring move
# sends an item block's factor rows and only the L-BFGS history slots the receiver lacks.
#  - the factors are bit for bit those of the same run without the cache (--cache-mb 0), at
#    2 and 3 ranks, with more strata than ranks, memory 2, the biased model, and a run whose
#    safeguard undoes epochs (memory resets, which zero every copy);
#  - the MB sent in ring moves (summary ring_mb_max) fall to under half at memory 5, and are
#    unchanged when the histories do not fit the budget.
. "$(dirname "$0")/../lib/testlib.sh"
R="$T/r.txt"
expect 0 "$DPOPT" gen ratings --users 300 --items 500 --ratings 20000 "$R"
jqv() { jq -r "$1" "$2/summary.json"; }

same_run() { # NAME NP OPTIONS...: without and with the cache, same factors
  n=$1 np=$2; shift 2
  M=--plain # the thesis's model unless the run asks for biases
  case "$*" in *--biases*) M= ;; esac
  expect 0 $MPI -np "$np" "$DPOPT" mf $M --epochs 30 --holdout 0.1 --seed 5 --eval-every 0 \
    --cache-mb 0 --out "$T/$n-off" "$@" "$R"
  expect 0 $MPI -np "$np" "$DPOPT" mf $M --epochs 30 --holdout 0.1 --seed 5 --eval-every 0 \
    --out "$T/$n-on" "$@" "$R"
  check "$n: X1 identical with the cache" cmp -s "$T/$n-off/X1.txt" "$T/$n-on/X1.txt"
  check "$n: X2t identical with the cache" cmp -s "$T/$n-off/X2t.txt" "$T/$n-on/X2t.txt"
}
same_run np2 2 --rank 20
same_run np3-strata6-m2 3 --rank 20 --strata 6 --memory 2
same_run np2-biases 2 --rank 16 --biases --lambda 5
same_run np2-resets 2 --rank 50 --eta 0.05
check "the aggressive run undid epochs (memory resets)" \
  test "$(jqv .epochs_undone "$T/np2-resets-on")" -gt 0
check "the run accepted pairs" test "$(jqv .pairs_accepted "$T/np2-on")" -gt 5

# ring volume: x is 1 of the 2M + 1 units of a block; with the cache a move adds at most the
# slots written since the receiver held it (one pair an epoch)
off=$(jqv .ring_mb_max "$T/np2-off") on=$(jqv .ring_mb_max "$T/np2-on")
check "ring MB with the cache ($on) under half of without ($off)" \
  awk -v a="$on" -v b="$off" 'BEGIN {exit !(a > 0 && b > 0 && a < 0.5 * b)}'
expect 0 $MPI -np 2 "$DPOPT" mf --plain --epochs 30 --holdout 0.1 --seed 5 --eval-every 0 --rank 20 \
  --cache-mb 0.001 --out "$T/tiny" "$R"
check "a budget the histories exceed sends them whole" \
  test "$(jqv .ring_mb_max "$T/tiny")" = "$off"
check "and gives the same factors" cmp -s "$T/np2-off/X2t.txt" "$T/tiny/X2t.txt"
finish test_mf_cache
