#!/bin/sh
# A multi-party run's id is not the coordinator's choice (doc/design.md, "Threat model
# (secagg)", *Run id*): every rank contributes 32 random bytes and the id is their BLAKE2b
# hash, recorded by the coordinator's journal and by every party's own, and part of the agreed
# plan ("~run").  dp-sgd-rdp with party-local Poisson batches, 3 parties on 3 ranks, each its
# own file of a9a, collude 1:
#  - two runs get different ids; the coordinator's journal and each party's journal record the
#    same one (a "run_id" line near their header);
#  - a coordinator that announces an old run's id (dpopt-test's --test-coordinator run=ID, rank
#    0 only) is refused by every party before anything is charged or released, naming "~run";
#  - a resume whose party holds the journal of another run (party 1's directory of run A in
#    run B's place) is refused naming "~run", before anything is written; with its own
#    journal back the same resume completes.
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/runidlib.sh"

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$S/data/a9a" "$T/parts/p%d"
AR="--dim 123 --set parties.data=$T/parts/p%d --row-l2-bound 3.75 --clip l2:1 --eps 1 --delta 1e-5 --algo dp-sgd-rdp \
  --set algo.sampling=poisson --set privacy.neighbours=add-remove --public-n 32561 --batch 256 \
  --iters 10 --set algo.z=3 --set privacy.trust=secagg --set parties.count=3 --quiet"

expect 0 $MPI -np 3 "$DPOPT" train $AR --set parties.out="$T/a.p%d" --out "$T/a"
ida=$(rid "$T/a/ledger.jsonl")
[ "${#ida}" = 64 ] && ok || bad "run a: the coordinator's journal records no run id ('$ida')"
for k in 1 2; do
  [ "$(rid "$T/a.p$k/ledger.party$k.jsonl")" = "$ida" ] && ok || bad "run a: party $k's journal records another id"
done
expect 0 "$DPOPT" ledger --all "$T/a.p1/ledger.party1.jsonl"
has "$T/out" "event: run_id $ida" "dpopt ledger shows the run id"

# run b stops cleanly at step 4 (checkpoint); its id is new
expect 5 $MPI -np 3 "$DPOPT" train $AR --checkpoint-every 2 --set run.stop_after=4 \
  --set parties.out="$T/b.p%d" --out "$T/b"
idb=$(rid "$T/b/ledger.jsonl")
[ "${#idb}" = 64 ] && [ "$idb" != "$ida" ] && ok || bad "run b's id '$idb' is not a new one (a: $ida)"

# a coordinator that reuses run a's id: every party refuses, nothing charged or released
expect 1 $MPI -np 3 "$DPOPT_TEST" train --test-coordinator "run=$ida" $AR \
  --set parties.out="$T/c.p%d" --out "$T/c"
has "$T/err" "the parties do not agree on the plan (rank 1's digest differs from the coordinator's): ~run is '" "an old run id refused"
has "$T/err" "' at the coordinator; nothing was released" "the refusal names the coordinator's id"
runid_refused c

# resuming run b with party 1 holding run a's journal: refused, nothing written; then its own
runid_swap_resume train
finish test_party_run_id
