#!/bin/sh
# A secure-aggregation run resumes without a party in the MIDDLE of its table: parties are
# named by their number in the run's first table and matched by their identity keys, not by
# their position (dp-sgd-rdp with party-local Poisson batches, 3 parties on 3 ranks, each its
# own file of a9a and its own Ed25519 identity key, collude 1; doc/design.md, "Dropouts",
# *Without the lost party*):
#  - the run is killed in release 13 (dpopt-test's --test-party-kill 13), then resumed on 2
#    ranks by parties 0 and 2 (--set parties.remaining=0,2): rank 1 is now party 2, with party
#    2's file, directory, journal, key and account;
#  - the coordinator's journal holds 13 charges naming parties 0-2, then 40 naming 0 and 2
#    (never 1); party 2's own journal holds 13 + 40 charges and replays (`dpopt ledger`) to the
#    coordinator's view of party 2: nothing charged twice or under; party 1's journal and the
#    coordinator's account of it stay as the kill left them (byte for byte; the same total);
#    every charge is at the plan's multiplier z = 3;
#  - a rank that holds party 1's identity key cannot take party 2's name; a name outside the
#    run's parties, or parties.remaining in a new run, are refused before anything is written.
. "$(dirname "$0")/../lib/testlib.sh"

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$S/data/a9a" "$T/parts/p%d"
K=""
for k in 0 1 2; do
  expect 0 "$DPOPT" party-key "$T/party$k.key"
  K="$K --set party.$k.public_key=$(cat "$T/party$k.key.pub")"
done
AR="--dim 123 --set parties.data=$T/parts/p%d --row-l2-bound 3.75 --clip l2:1 --eps 1 --delta 1e-5 --algo dp-sgd-rdp \
  --set algo.sampling=poisson --set privacy.neighbours=add-remove --public-n 32561 --batch 256 \
  --iters 50 --set algo.z=3 --seed 4 --set privacy.trust=secagg --set parties.count=3 \
  --set parties.key=$T/party%d.key $K"
charges() { grep -c '"mechanism":"gaussian"' "$1"; }
# party K's total in the coordinator's journal RUN, replayed by dpopt ledger
pview() { "$DPOPT" ledger "$1" | sed -n "s/^party $2: *eps = \([0-9.e+-]*\) of.*/\1/p"; }
# a party's own journal, replayed
jtotal() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }
sums() { (cd "$T" && find d d.p1 d.p2 -type f | sort | xargs sha256sum); }

# ---- a new run cannot name remaining parties
expect 1 $MPI -np 2 "$DPOPT" train $AR --set parties.remaining=0,2 --set parties.out="$T/n.p%d" --out "$T/n"
has "$T/err" "parties.remaining names the parties that continue a resumed" "a new run with parties.remaining refused"
[ ! -e "$T/n" ] && [ ! -e "$T/n.p1" ] && ok || bad "a refused new run wrote a directory"

# ---- killed in release 13
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 13 $AR --checkpoint-every 5 \
  --set parties.out="$T/d.p%d" --out "$T/d" >"$T/out" 2>"$T/err"
[ "$?" != 0 ] && ok || bad "the job with a killed rank exited 0"
[ "$(charges "$T/d.p2/ledger.party2.jsonl")" = 13 ] && ok || bad "killed: party 2 journalled $(charges "$T/d.p2/ledger.party2.jsonl") releases (want 13)"
cp "$T/d.p1/ledger.party1.jsonl" "$T/p1.killed"
v1=$(pview "$T/d" 1)

# ---- refused before anything is written: a name the run never had; party 1's key in party
# 2's place (the rank taking party 2's name must hold party 2's identity key)
sums >"$T/d.sum"
expect 1 $MPI -np 2 "$DPOPT" train --resume "$T/d" --set parties.remaining=0,3
has "$T/err" "cannot change parties.remaining" "a party the run never had refused"
mv "$T/party2.key" "$T/party2.key.real"
cp "$T/party1.key" "$T/party2.key"
expect 1 $MPI -np 2 "$DPOPT" train --resume "$T/d" --set parties.remaining=0,2
has "$T/err" "is not party 2's: its public half differs from party.2.public_key" "party 1's key as party 2 refused"
mv "$T/party2.key.real" "$T/party2.key"
sums | cmp -s - "$T/d.sum" && ok || bad "a refused resume wrote something"

# ---- resumed by parties 0 and 2: rank 1 is party 2
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/d" --set parties.remaining=0,2
[ -f "$T/d/model.txt" ] && ok || bad "resumed: no model.txt"
has "$T/out" "party 2 " "the summary names party 2"
hasnot "$T/out" "party 1 " "the summary names no party 1"
[ "$(grep -c '"parties":\[0,1,2\]' "$T/d/ledger.jsonl")" = 13 ] && ok || bad "want 13 charges of parties 0-2"
[ "$(grep -c '"parties":\[0,2\]' "$T/d/ledger.jsonl")" = 40 ] && ok || bad "want 40 charges of parties 0 and 2"
[ "$(charges "$T/d/ledger.jsonl")" = 53 ] && ok || bad "the coordinator holds $(charges "$T/d/ledger.jsonl") charges (want 53)"
[ "$(charges "$T/d.p2/ledger.party2.jsonl")" = 53 ] && ok ||
  bad "party 2's own journal holds $(charges "$T/d.p2/ledger.party2.jsonl") charges (want 13 + 40)"
expect 0 "$DPOPT" ledger "$T/d.p2/ledger.party2.jsonl"
v2=$(pview "$T/d" 2)
close "$(jtotal "$T/d.p2/ledger.party2.jsonl")" "$v2" 1e-12 "party 2's own journal replays to the coordinator's view"
check "party 2 was charged after the resume ($v2 of 1)" awk -v v="$v2" 'BEGIN {exit !(v > 0 && v < 1)}'
cmp -s "$T/d.p1/ledger.party1.jsonl" "$T/p1.killed" && ok || bad "the lost party 1's journal changed"
close "$(pview "$T/d" 1)" "$v1" 0 "the coordinator's account of party 1 stays as the kill left it"
grep '"mechanism":"gaussian"' "$T/d/ledger.jsonl" |
  sed -n 's/.*"noise_scale":\([0-9.e+-]*\),"sensitivity":\([0-9.e+-]*\),.*/\1 \2/p' >"$T/zs"
check "53 charges at the plan's multiplier 3" awk \
  '{z = $1 / $2; if (z < 3 || z > 3 * (1 + 1e-4)) b++; n++} END {exit !(n == 53 && !b)}' "$T/zs"
finish test_party_names
