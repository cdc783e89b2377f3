#!/bin/sh
# dpopt admm under privacy.trust = secagg gives its run an id as dpopt train does (doc/design.md,
# "Threat model (secagg)", *Run id*; train's: mpi_tests/run/test_party_run_id.sh): every rank
# contributes 32 random bytes, the id is their BLAKE2b hash, recorded by the coordinator's
# journal and by every party's own, and part of the agreed plan ("~run").  DP-ADMM, one party a
# rank, 3 parties, collude 1:
#  - two runs get different ids; the coordinator's journal and each party's journal record the
#    same one;
#  - a coordinator that announces an old run's id (dpopt-test's --test-coordinator run=ID, rank 0
#    only) is refused by every party before anything is charged, naming "~run";
#  - a resume whose party holds another run's journal (party 1's directory of run A in run B's
#    place) is refused naming both ids, writing nothing; with its own journal back the same
#    resume completes and the party's id is unchanged.
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/runidlib.sh"

ADMM="--method dpadmm --eps 1 --delta 1e-5 --clip 1 --row-l2-bound 3.75 --maxit 6 \
  --set privacy.sigma_rule=rdp --set privacy.trust=secagg --quiet"
charges() { if [ -f "$1" ]; then grep -c '"mechanism"' "$1"; else echo 0; fi; }

expect 0 $MPI -np 3 "$DPOPT" admm $ADMM --set parties.out="$T/a.p%d" --out "$T/a" "$S/data/a9a"
ida=$(rid "$T/a/ledger.jsonl")
[ "${#ida}" = 64 ] && ok || bad "run a: the coordinator's journal records no run id ('$ida')"
for k in 1 2; do
  [ "$(rid "$T/a.p$k/ledger.party$k.jsonl")" = "$ida" ] && ok ||
    bad "run a: party $k's journal records another id ('$(rid "$T/a.p$k/ledger.party$k.jsonl")')"
done
expect 0 "$DPOPT" ledger --all "$T/a.p2/ledger.party2.jsonl"
has "$T/out" "event: run_id $ida" "dpopt ledger shows the run id"

# run b stops cleanly after iteration 3 (checkpoint); its id is new
expect 5 $MPI -np 3 "$DPOPT" admm $ADMM --checkpoint-every 3 --set run.stop_after=3 \
  --set parties.out="$T/b.p%d" --out "$T/b" "$S/data/a9a"
idb=$(rid "$T/b/ledger.jsonl")
[ "${#idb}" = 64 ] && [ "$idb" != "$ida" ] && ok || bad "run b's id '$idb' is not a new one (a: $ida)"
[ "$(rid "$T/b.p1/ledger.party1.jsonl")" = "$idb" ] && ok || bad "run b: party 1 records another id"

# a coordinator that reuses run a's id: every party refuses, nothing charged
expect 1 $MPI -np 3 "$DPOPT_TEST" admm --test-coordinator "run=$ida" $ADMM \
  --set parties.out="$T/c.p%d" --out "$T/c" "$S/data/a9a"
runid_refused c

# resuming run b with party 1 holding run a's journal: refused, nothing written; then its own
runid_swap_resume admm
[ "$(charges "$T/b.p1/ledger.party1.jsonl")" = 7 ] && ok ||
  bad "run b: party 1 journalled $(charges "$T/b.p1/ledger.party1.jsonl") releases (want 7)"
finish test_admm_run_id
