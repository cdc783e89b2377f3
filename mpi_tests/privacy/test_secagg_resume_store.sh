#!/bin/sh
# A secure-aggregation run with party budget stores (parties.budget_store = DIR%d) that loses a
# party's rank resumes, each store charged against the run's one reservation (dp-sgd-rdp with
# party-local Poisson batches, 3 parties on 3 ranks, each its own file of a9a and its own
# store, collude 1; doc/design.md, "Budget stores", Resume):
#  - the last party's rank dies in release 13 (dpopt-test's --test-party-kill 13): every store
#    keeps the run's reservation open (counted whole);
#  - `--resume RUN` with the three parties completes: each store holds the one run, reserved
#    once and settled once, to what that party was charged: store k's settlement equals party
#    k's total replayed from the coordinator's journal (`dpopt ledger`), which for party 2 is
#    also its own journal's replayed total (it journalled release 13 before it died), and is
#    never below a party's own journal (party 1 may not have admitted release 13); the store's
#    spent is python3's composition of its records (chain verified);
#  - a run stopped cleanly (run.stop_after) settles every store; its resume reserves each
#    party's budget again under the same id (its journals hold at least what was settled) and
#    settles it to the whole run: one run per store, settled to the party's replayed total;
#  - resumed WITHOUT the lost party (2 ranks, parties.count = 2): the remaining stores are
#    settled to their parties' totals, the lost party's store is byte for byte as the kill left
#    it, its chain verifies (python3) and it counts the open reservation whole;
#  - a resume whose party's store has no room for a settled run's new reservation is refused
#    naming only that party, and writes nothing (no store, no run directory changes).
. "$(dirname "$0")/../lib/testlib.sh"
export DPOPT_JOURNAL_KEY="$T/journal.key"

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$S/data/a9a" "$T/parts/p%d"
AR="--dim 123 --set parties.data=$T/parts/p%d --row-l2-bound 3.75 --clip l2:1 --eps 1 --delta 1e-5 --algo dp-sgd-rdp \
  --set algo.sampling=poisson --set privacy.neighbours=add-remove --public-n 32561 --batch 256 \
  --iters 50 --set algo.z=3 --set privacy.trust=secagg --set parties.count=3 --quiet"
spent() { "$DPOPT" budget show "$1" | awk '/^spent/ { print $4 }' | tr -d ,; }
# the eps of the store's last settlement (the run's own spent bound; spent above composes at
# the store's delta)
settled() { grep '"kind":"settle"' "$1/records.jsonl" | tail -n 1 |
  sed -n 's/.*"kind":"settle","run":"[0-9a-f]*","eps":\([0-9.e+-]*\),.*/\1/p'; }
runs() { "$DPOPT" budget show "$1" | awk '/^runs/ { print $2 }'; }
nrec() { grep -c "\"kind\":\"$2\"" "$1/records.jsonl"; }
# party K's total in the coordinator's journal RUN, replayed by dpopt ledger
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }
# a party's own journal, replayed
jtotal() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }
mkstores() {
  for k in 0 1 2; do
    expect 0 "$DPOPT" budget init "$T/$1$k" --eps "${2:-10}" --delta 1e-4 --data "$T/parts/p$k"
  done
}

# ---- killed in release 13, resumed with its three parties
mkstores s
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 13 $AR --checkpoint-every 5 \
  --set parties.budget_store="$T/s%d" --set parties.out="$T/k.p%d" --out "$T/k" >"$T/out" 2>"$T/err"
[ "$?" != 0 ] && ok || bad "the job with a killed rank exited 0"
for k in 0 1 2; do
  tail -n 1 "$T/s$k/records.jsonl" | grep -q '"kind":"reserve"' && ok ||
    bad "killed: store $k's reservation is not the open last record"
  close "$(spent "$T/s$k")" 1 1e-9 "killed: store $k counts the reservation whole"
done
expect 0 $MPI -np 3 "$DPOPT" train --resume "$T/k"
[ -f "$T/k/model.txt" ] && ok || bad "resumed: no model.txt"
for k in 0 1 2; do
  [ "$(runs "$T/s$k")" = 1 ] && [ "$(nrec "$T/s$k" reserve)" = 1 ] && [ "$(nrec "$T/s$k" settle)" = 1 ] &&
    ok || bad "resumed: store $k holds $(nrec "$T/s$k" reserve) reservations, $(nrec "$T/s$k" settle) settlements (want 1, 1)"
  v=$(pview "$T/k" $k)
  close "$(settled "$T/s$k")" "$v" 1e-12 "resumed: store $k settled to party $k's replayed total"
  py=$(store_compose "$T/s$k/records.jsonl" "$DPOPT_JOURNAL_KEY")
  close "$(spent "$T/s$k")" "${py#1 }" 1e-8 "resumed: store $k's spent is python3's composition of its one run ($py)"
  check "resumed: party $k's total $v is below its budget 1 and above 0" awk -v v="$v" 'BEGIN {exit !(v > 0 && v < 1)}'
done
close "$(settled "$T/s2")" "$(jtotal "$T/k.p2/ledger.party2.jsonl")" 1e-12 \
  "resumed: store 2 settled to party 2's own journal replayed"
j1=$(jtotal "$T/k.p1/ledger.party1.jsonl")
check "resumed: store 1 is not below party 1's own journal ($j1)" awk -v s="$(settled "$T/s1")" -v j="$j1" \
  'BEGIN {exit !(j > 0 && s >= j * (1 - 1e-12))}'

# ---- stopped cleanly: every store settled; the resume reserves again and settles the whole run
mkstores c
expect 5 $MPI -np 3 "$DPOPT" train $AR --checkpoint-every 5 --set run.stop_after=20 \
  --set parties.budget_store="$T/c%d" --set parties.out="$T/c.p%d" --out "$T/c"
for k in 0 1 2; do
  [ "$(nrec "$T/c$k" settle)" = 1 ] && ok || bad "stopped: store $k not settled"
  close "$(settled "$T/c$k")" "$(pview "$T/c" $k)" 1e-12 "stopped: store $k settled to party $k's total"
done
half=$(settled "$T/c1")
expect 0 $MPI -np 3 "$DPOPT" train --resume "$T/c"
for k in 0 1 2; do
  [ "$(runs "$T/c$k")" = 1 ] && [ "$(nrec "$T/c$k" reserve)" = 2 ] && [ "$(nrec "$T/c$k" settle)" = 2 ] &&
    ok || bad "stopped+resumed: store $k holds $(nrec "$T/c$k" reserve) reservations, $(nrec "$T/c$k" settle) settlements (want 2, 2 of one run)"
  close "$(settled "$T/c$k")" "$(pview "$T/c" $k)" 1e-12 "stopped+resumed: store $k settled to party $k's total"
done
check "stopped+resumed: the whole run costs more than its first 20 steps ($half)" awk \
  -v a="$(settled "$T/c1")" -v b="$half" 'BEGIN {exit !(a > b)}'

# ---- killed, resumed WITHOUT the lost party: its store stays as the kill left it
mkstores d
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 13 $AR --checkpoint-every 5 \
  --set parties.budget_store="$T/d%d" --set parties.out="$T/d.p%d" --out "$T/d" >"$T/out" 2>"$T/err"
cp "$T/d2/records.jsonl" "$T/d2.killed"
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/d" --set parties.count=2
for k in 0 1; do
  [ "$(nrec "$T/d$k" reserve)" = 1 ] && [ "$(nrec "$T/d$k" settle)" = 1 ] && ok ||
    bad "drop: store $k not reserved once and settled once"
  close "$(settled "$T/d$k")" "$(pview "$T/d" $k)" 1e-12 "drop: store $k settled to party $k's total"
done
cmp -s "$T/d2/records.jsonl" "$T/d2.killed" && ok || bad "drop: the lost party's store changed"
expect 0 "$DPOPT" budget show "$T/d2"
[ "$(store_compose "$T/d2/records.jsonl" "$DPOPT_JOURNAL_KEY")" = "not-rdp reserve" ] && ok ||
  bad "drop: the lost party's store does not verify with an open reservation (python3)"
close "$(spent "$T/d2")" 1 1e-9 "drop: the lost party's store counts its reservation whole"

# ---- a stopped (settled) run whose party 1 has no room left for the new reservation: another
# run (killed, its reservation of 0.5 open) took it; the resume is refused naming party 1 only,
# before any store or the run directory is written
for k in 0 1 2; do
  expect 0 "$DPOPT" budget init "$T/f$k" --eps "$([ $k = 1 ] && echo 1.4 || echo 10)" --delta 1e-4 --data "$T/parts/p$k"
done
expect 5 $MPI -np 3 "$DPOPT" train $AR --checkpoint-every 5 --set run.stop_after=20 \
  --set parties.budget_store="$T/f%d" --set parties.out="$T/f.p%d" --out "$T/f"
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 3 $AR --set privacy.eps=0.5 \
  --set parties.budget_store="$T/f%d" --set parties.out="$T/o.p%d" --out "$T/o" >"$T/out" 2>"$T/err"
[ "$(nrec "$T/f1" reserve)" = 2 ] && ok || bad "the other run did not reserve in store 1"
sums() { cat "$T"/f?/records.jsonl; (cd "$T" && find f f.p? -type f | sort | xargs sha256sum); }
sums >"$T/f.sum"
expect 3 $MPI -np 3 "$DPOPT" train --resume "$T/f"
has "$T/err" "party 1: its budget store refused the resumed run" "the refusal names party 1"
hasnot "$T/err" "party [02]" "the refusal names no other party"
sums | cmp -s - "$T/f.sum" && ok || bad "a refused resume changed a store or a run directory"
finish test_secagg_resume_store
