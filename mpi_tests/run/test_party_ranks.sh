#!/bin/sh
# A resume may change how many ranks a party uses (party.K.ranks) where nothing of the party's
# state is per rank (doc/design.md, "Dropouts", *A party's ranks*): under secagg with per-party
# files its journal and store are the party's, its rows its own file.  dp-sgd-rdp with
# party-local Poisson batches, 3 parties of a9a on 3 ranks, collude 1, stopped at step 4:
#  - resumed on 4 ranks with party 1 on ranks 1-2: completes the 12 steps; party 1's own
#    journal (kept by its first rank, whichever it is) holds the 12 charges and replays to the
#    coordinator's view of it, as party 2's does;
#  - refused, naming why and writing nothing: party 0 (the coordinator's rank 0, whose own
#    journal exists only with a second rank) given a second rank, and a run whose parties share
#    one data file (dp-gd over a9a; its rows are split by rank: other ranks would move rows
#    between parties).
. "$(dirname "$0")/../lib/testlib.sh"

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$S/data/a9a" "$T/parts/p%d"
AR="--dim 123 --row-l2-bound 3.75 --clip l2:1 --eps 1 --delta 1e-5 --algo dp-sgd-rdp \
  --set algo.sampling=poisson --public-n 32561 --batch 256 --iters 12 --set algo.z=3 \
  --set privacy.trust=secagg --set parties.count=3 --quiet"
PF="--set parties.data=$T/parts/p%d --set privacy.neighbours=add-remove"
charges() { grep -c '"mechanism":"gaussian"' "$1"; }
ptotal() { tail -n 1 "$1" | sed -n 's/.*"party_total_eps":\[\([^]]*\)\].*/\1/p' |
  awk -F, -v k="$2" '{print $(k + 1)}'; }
sums() { (cd "$T" && find "$@" -type f | sort | xargs sha256sum); }

expect 5 $MPI -np 3 "$DPOPT" train $AR $PF --checkpoint-every 4 --set run.stop_after=4 \
  --set parties.out="$T/s.p%d" --out "$T/s"
[ "$(charges "$T/s.p1/ledger.party1.jsonl")" = 4 ] && ok || bad "stopped: party 1 holds $(charges "$T/s.p1/ledger.party1.jsonl") charges (want 4)"

# party 0 holds rank 0: a second rank would start a journal it never had
sums s s.p1 s.p2 >"$T/s.sum"
expect 1 $MPI -np 4 "$DPOPT" train --resume "$T/s" --set party.0.ranks=0-1 \
  --set party.1.ranks=2 --set party.2.ranks=3
has "$T/err" "--resume cannot change party.0.ranks (the run has no value): party 0 holds the coordinator's rank 0" \
  "party 0's ranks refused, naming why"
sums s s.p1 s.p2 | cmp -s - "$T/s.sum" && ok || bad "a refused resume wrote something"

# party 1 on two ranks: the run completes, every party's account intact
expect 0 $MPI -np 4 "$DPOPT" train --resume "$T/s" --set party.1.ranks=1-2 --set party.2.ranks=3
[ -f "$T/s/model.txt" ] && ok || bad "the resume on 4 ranks wrote no model"
[ "$(charges "$T/s/ledger.jsonl")" = 12 ] && ok || bad "the coordinator holds $(charges "$T/s/ledger.jsonl") charges (want 12)"
for k in 1 2; do
  j="$T/s.p$k/ledger.party$k.jsonl"
  [ "$(charges "$j")" = 12 ] && ok || bad "party $k holds $(charges "$j") charges (want 12)"
  expect 0 "$DPOPT" ledger "$j"
  close "$(sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p' "$T/out")" "$(ptotal "$T/s/ledger.jsonl" $k)" 1e-12 \
    "party $k's own journal replays to the coordinator's view"
done
grep -q "party.1.ranks = 1-2" "$T/s/config.ini" && ok || bad "config.ini does not record party 1's new ranks"

# parties over one shared file: their rows are split by rank, so their ranks stay
expect 5 $MPI -np 3 "$DPOPT" train --data "$S/data/a9a" --row-l1-bound 14 --row-l2-bound 3.75 \
  --clip l2:1 --eps 1 --delta 1e-5 --algo dp-gd --iters 4 --set privacy.trust=secagg \
  --set parties.count=3 --quiet --checkpoint-every 2 --set run.stop_after=2 \
  --set parties.out="$T/h.p%d" --out "$T/h"
sums h h.p1 h.p2 >"$T/h.sum"
expect 1 $MPI -np 4 "$DPOPT" train --resume "$T/h" --set party.1.ranks=1-2 --set party.2.ranks=3
has "$T/err" "--resume cannot change party.1.ranks (the run has no value): the parties share one data file" \
  "a shared file's party ranks refused, naming why"
sums h h.p1 h.p2 | cmp -s - "$T/h.sum" && ok || bad "a refused resume wrote something"
finish test_party_ranks
