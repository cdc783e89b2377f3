#!/bin/sh
# The parties' guard under privacy.trust = secagg (doc/design.md, "Threat model"): a coordinator
# that deviates from the agreed plan gets nothing.  The deviations are planted by dpopt-test's
# test switches (--test-coordinator KIND[:N], --test-party-fail N; never in the installed
# dpopt: test_switches_out.sh), the plan differences by giving the ranks different settings
# (mpirun's MPMD form, no switch).  For every case:
#  - every honest party refuses before it contributes (its message names what differed: the
#    announced noise costs more than the charge journalled, the honest share count, its own
#    account exhausted), the round is withheld (no model.txt), the run ends with FAILED;
#  - the journal is intact (dpopt ledger replays it) and holds no more charges than requests
#    made, so nothing was released that the journal undercharges;
#  - an honest run of the same settings completes (the guards admit every planned release).
# Cases: a smaller noise (share sigma / Laplace scale halved, from the first release and from
# the third), a finer encoding (gamma halved), Polya shares sized for one honest party more,
# one release beyond the plan (each party's own account refuses it), the same for dp-sgd-rdp's
# party-local Poisson sampling (multiplier below the charged one); a party that fails in
# release 2 (the round withheld, never decoded); and parties whose settings differ
# (algo.iters, parties.eps): refused before the first release, naming the key and both values.
# Authenticated keys (dpopt party-key, party.K.public_key, parties.key): a run completes; a
# key-agreement key other than the one a party signed (--test-coordinator key), a listed key
# that is not the party's, a secret key others may read, keys for some parties only: refused.
# A party dropped on exhaustion is not charged for releases its rows are not in (the run goes
# on without it).
. "$(dirname "$0")/../lib/testlib.sh"

C="--data $S/data/a9a --row-l2-bound 3.75 --clip l2:1 --eps 1 --set privacy.trust=secagg \
  --set parties.count=3 --algo dp-gd --iters 5 --quiet"
charges() { grep -c '"mechanism"' "$1/ledger.jsonl"; }

# refused DIR N WHAT: the run in DIR failed at release N, withheld, journal intact, <= N charges
refused() {
  has "$T/err" "party [12] refuses release $2 of the coordinator: $3" "$1: refused ($3)"
  has "$T/err" "nothing contributed, the round is withheld" "$1: withheld"
  check "$1: FAILED, no model.txt" test -f "$1/FAILED" -a ! -f "$1/model.txt"
  c=$(charges "$1")
  check "$1: $c charges journalled for $2 requests" test "$c" -le "$2"
  expect 0 "$DPOPT" ledger "$1"
}

for dl in 0 1e-5; do
  expect 0 $MPI -np 3 "$DPOPT_TEST" train $C --delta "$dl" --set parties.out="$T/ok$dl.p%d" --out "$T/ok$dl"
  check "delta $dl: an honest run completes" test -f "$T/ok$dl/model.txt"
  [ "$(charges "$T/ok$dl")" = 5 ] && ok || bad "delta $dl: $(charges "$T/ok$dl") charges (want 5)"

  expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --delta "$dl" --set parties.out="$T/s$dl.p%d" --out "$T/s$dl" --test-coordinator sigma
  refused "$T/s$dl" 1 "its noise .* costs .* more than the .* its ledger charges"
  expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --delta "$dl" --set parties.out="$T/t$dl.p%d" --out "$T/t$dl" --test-coordinator sigma:3
  refused "$T/t$dl" 3 "its noise .* costs .* more than the .* its ledger charges"
  expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --delta "$dl" --set parties.out="$T/g$dl.p%d" --out "$T/g$dl" --test-coordinator gamma
  refused "$T/g$dl" 1 "its noise .* costs .* more than the .* its ledger charges"
  expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --delta "$dl" --set parties.out="$T/x$dl.p%d" --out "$T/x$dl" --test-coordinator extra
  refused "$T/x$dl" 6 "its own account refuses the charge"
  [ "$(charges "$T/x$dl")" = 5 ] && ok || bad "extra: $(charges "$T/x$dl") charges (want the plan's 5)"

  expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --delta "$dl" --set parties.out="$T/f$dl.p%d" --out "$T/f$dl" --test-party-fail 2
  has "$T/err" "planted local failure in release 2" "delta $dl: the failing party's message"
  check "delta $dl: the round with a failed party is withheld (FAILED, no model.txt)" \
    test -f "$T/f$dl/FAILED" -a ! -f "$T/f$dl/model.txt"
  expect 0 "$DPOPT" ledger "$T/f$dl"
done

# a party dropped on exhaustion (on_party_exhausted = drop) is not charged by its own account
# for the releases its rows are no longer in: the others go on and the run completes
expect 0 $MPI -np 3 "$DPOPT_TEST" train $C --delta 0 --iters 10 --set party.1.eps=0.5 \
  --set privacy.on_party_exhausted=drop --set parties.out="$T/drop.p%d" --out "$T/drop"
has "$T/drop/ledger.jsonl" '"event":"party_dropped","party":1,"step":5' "drop: party 1 leaves at step 5"
check "drop: the run completes" test -f "$T/drop/model.txt"

# pure eps: the Polya shares are sized for the P - k honest parties of every party's own plan
expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --delta 0 --set parties.out="$T/h.p%d" --out "$T/h" --test-coordinator shares
refused "$T/h" 1 "it announces noise shares for 3 honest parties; this party's plan (3 parties, privacy.collude = 1) has 2"

# party-local Poisson sampling (dp-sgd-rdp, add-remove): the multiplier each party computes
P="--data $S/data/a9a --row-l2-bound 3.75 --clip l2:1 --eps 2 --delta 1e-5 \
  --set privacy.trust=secagg --set parties.count=2 --algo dp-sgd-rdp --set algo.sampling=poisson \
  --set privacy.neighbours=add-remove --public-n 32561 --batch 2000 --iters 3 --quiet"
expect 0 $MPI -np 2 "$DPOPT_TEST" train $P --set parties.out="$T/pok.p%d" --out "$T/pok"
expect 1 $MPI -np 2 "$DPOPT_TEST" train $P --set parties.out="$T/ps.p%d" --out "$T/ps" --test-coordinator sigma
refused "$T/ps" 1 "its noise .* has multiplier .*, below the .* its ledger charges"

# the plan: parties with different settings stop before anything is charged or released
expect 1 $MPI -np 2 "$DPOPT" train $C --delta 0 --set parties.out="$T/p1.p%d" --out "$T/p1" : -np 1 "$DPOPT" train $C \
  --delta 0 --iters 6 --set parties.out="$T/p1.p%d" --out "$T/p1"
has "$T/err" "the parties do not agree on the plan (rank 2's digest differs from the coordinator's): algo.iters is '6' here, '5' at the coordinator; nothing was released" "plan: iters named"
[ "$(charges "$T/p1")" = 0 ] && ok || bad "plan: $(charges "$T/p1") charges (want 0)"
expect 1 $MPI -np 1 "$DPOPT" train $C --delta 0 --set parties.out="$T/p2.p%d" --out "$T/p2" : -np 2 "$DPOPT" train $C \
  --delta 0 --set parties.eps=0.5 --set parties.out="$T/p2.p%d" --out "$T/p2"
has "$T/err" "parties.eps is '0.5' here, unset at the coordinator" "plan: a party's budget named"
# one number in two spellings is one plan
expect 0 $MPI -np 2 "$DPOPT" train $C --delta 0 --set parties.out="$T/p3.p%d" --out "$T/p3" : -np 1 "$DPOPT" train $C \
  --delta 0.0 --set parties.out="$T/p3.p%d" --out "$T/p3"

# authenticated keys: dpopt party-key makes each party's identity key; every party lists all
# public keys (part of the plan) and its own secret key file; each rank signs its per-run
# key-agreement key over the plan digest and a run nonce
for k in 0 1 2; do
  expect 0 "$DPOPT" party-key "$T/party$k.key"
  check "party $k: secret key 0600" test "$(stat -c %a "$T/party$k.key")" = 600
done
expect 2 "$DPOPT" party-key "$T/party0.key"
has "$T/err" "cannot create" "an existing key is never overwritten"
K="--set parties.key=$T/party%d.key"
for k in 0 1 2; do K="$K --set party.$k.public_key=$(cat "$T/party$k.key.pub")"; done
expect 0 $MPI -np 3 "$DPOPT_TEST" train $C --delta 0 $K --set parties.out="$T/k1.p%d" --out "$T/k1"
check "authenticated keys: the run completes" test -f "$T/k1/model.txt"
# a substituted key (rank 0 publishes another key than the one it signed): every party stops
expect 1 $MPI -np 3 "$DPOPT_TEST" train $C --delta 0 $K --set parties.out="$T/k2.p%d" --out "$T/k2" --test-coordinator key
has "$T/err" "rank 0's key-agreement key is not signed by the identity key listed for its party (party.0.public_key) over this plan and run: a substituted or unsigned key; the run stops before any release" "substituted key refused"
[ "$(charges "$T/k2")" = 0 ] && ok || bad "substituted key: $(charges "$T/k2") charges (want 0)"
# party 2 listed with party 1's public key: its own secret key does not match
K2=$(echo "$K" | sed "s/party.2.public_key=[0-9a-f]*/party.2.public_key=$(cat "$T/party1.key.pub")/")
expect 1 $MPI -np 3 "$DPOPT" train $C --delta 0 $K2 --set parties.out="$T/k3.p%d" --out "$T/k3"
has "$T/err" "is not party 2's: its public half differs from party.2.public_key" "a wrong listed key"
# a secret key others may read is refused
chmod 644 "$T/party1.key"
expect 1 $MPI -np 3 "$DPOPT" train $C --delta 0 $K --set parties.out="$T/k4.p%d" --out "$T/k4"
has "$T/err" "readable by others" "a world-readable secret key"
chmod 600 "$T/party1.key"
# only some parties list a key: refused
expect 1 $MPI -np 3 "$DPOPT" train $C --delta 0 --set party.0.public_key="$(cat "$T/party0.key.pub")" \
  --set parties.key="$T/party%d.key" --set parties.out="$T/k5.p%d" --out "$T/k5"
has "$T/err" "1 of 3 parties list an identity key" "keys for some parties only"

finish test_party_guard
