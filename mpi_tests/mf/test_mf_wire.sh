#!/bin/sh
# HAMSI's ring moves, byte for byte: what `dpopt mf` counts as sent (summary.json
# ring_bytes_epochs_sum and its history part, summed over the ranks) equals jobs/costmodel's
# formula (--mf-bytes: x in doubles, the history in 4-byte (s, y) slots, P + 1 moves an epoch,
# the first epoch's P; with the cache one slot on P - 1 of them, none in the first epoch),
# at 2 and 3 ranks and at 2 ranks with 4 strata, with and without the history cache; and the
# blocks a rank computes while another is still arriving.  Counts, not timings: the machine's
# load cannot move them.
. "$(dirname "$0")/../lib/testlib.sh"
R="$T/r.txt"
expect 0 "$DPOPT" gen ratings --users 300 --items 500 --ratings 20000 "$R"
jqv() { jq -r "$1" "$2/summary.json"; }
E=6
for np in 2 3; do
  for cache in 0 1; do
    n=np$np-c$cache o=$T/$n
    cm=; [ "$cache" = 0 ] && cm="--cache-mb 0"
    expect 0 $MPI -np "$np" "$DPOPT" mf --plain --epochs $E --rank 10 --seed 5 --eval-every 0 \
      $cm --out "$o" "$R"
    # the formula assumes every pair accepted and no epoch undone (no moves back)
    check "$n: $E pairs accepted, none rejected, no epoch undone" test \
      "$(jqv '[.pairs_accepted, .pairs_rejected, .epochs_undone, .strata, .sched] | map(tostring) | join(" ")' "$o")" = "$E 0 0 $np det"
    set -- $(sh "$S/jobs/costmodel" --mf-bytes "$(jqv .items "$o"),$(jqv .r "$o"),5,$np,$E,$cache")
    [ "$1" = BYTES ] || bad "$n: jobs/costmodel --mf-bytes printed '$*'"
    got=$(jqv '[.ring_bytes_epochs_sum, .ring_hist_bytes_epochs_sum] | map(tostring) | join(" ")' "$o")
    check "$n: ring bytes (total, history) counted '$got', modelled '$7 $5'" test "$got" = "$7 $5"
    check "$n: no rank sent more than the total" test "$(jqv .ring_bytes_epochs_max "$o")" -le "$7"
  done
done
# the cache's saving is the model's too: at 3 ranks 23 moves of x (8 bytes an entry) and 10
# slots (4 bytes) instead of 23 x 5 slots
check "the cache cut the history bytes" test \
  "$(jqv .ring_hist_bytes_epochs_sum "$T/np3-c1")" -lt "$(jqv .ring_hist_bytes_epochs_sum "$T/np3-c0")"
# more strata than ranks (K = 2P = 4): a move sends the blocks that cross a rank's edge, 4 moves
# take each across both edges, so 5 epochs (24 moves) are exact rounds; the cache's slot reaches
# each block's other rank once an epoch.  And in each stratum after a switch a rank computes
# the block that stayed while its neighbour's travels (dpo__hm_travel_switch): one block a rank
# in each of the K - 1 inner strata an epoch, none at K = P, where every block travels
for cache in 0 1; do
  o=$T/k4-c$cache cm=; [ "$cache" = 0 ] && cm="--cache-mb 0"
  expect 0 $MPI -np 2 "$DPOPT" mf --plain --epochs 5 --rank 10 --seed 5 --eval-every 0 --strata 4 \
    $cm --out "$o" "$R"
  check "K = 4, cache $cache: 5 pairs, none rejected, no epoch undone" test \
    "$(jqv '[.pairs_accepted, .pairs_rejected, .epochs_undone] | map(tostring) | join(" ")' "$o")" = "5 0 0"
  set -- $(sh "$S/jobs/costmodel" --mf-bytes "$(jqv .items "$o"),$(jqv .r "$o"),5,2,5,$cache,4")
  got=$(jqv '[.ring_bytes_epochs_sum, .ring_hist_bytes_epochs_sum] | map(tostring) | join(" ")' "$o")
  check "K = 4, cache $cache: ring bytes counted '$got', modelled '$7 $5'" test "$got" = "$7 $5"
  check "K = 4, cache $cache: 2 x 3 x 5 blocks computed while one was arriving" \
    test "$(jqv .blocks_early_sum "$o")" = 30
done
check "K = P: none" test "$(jqv .blocks_early_sum "$T/np3-c1")" = 0
finish test_mf_wire
