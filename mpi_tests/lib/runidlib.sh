# Shared by the run-id tests (mpi_tests/run/test_party_run_id.sh, mpi_tests/admm/
# test_admm_run_id.sh), sourced after testlib.sh: 3 parties on 3 ranks, party K's directory
# $T/RUN.pK, run a complete and run b stopped at a checkpoint, their ids in $ida and $idb.
#   rid JOURNAL                   the run id a journal records ("run_id" event line)
#   runid_refused RUN             RUN, whose coordinator announced run a's id, was refused
#                                 naming ~run, with no charge, party journal or model
#   runid_swap_resume CMD         `dpopt CMD --resume $T/b` with party 1 holding run a's journal
#                                 is refused naming both ids, writing nothing; with its own
#                                 journal back it completes and keeps run b's id
rid() { sed -n 's/.*"event":"run_id \([0-9a-f]*\)".*/\1/p' "$1" | head -n 1; }
runid_refused() {
  has "$T/err" "~run is '" "an old run id refused by the plan"
  grep "~run is" "$T/err" | grep -q "'$ida' at the coordinator" && ok || bad "the refusal does not name run a's id"
  [ ! -f "$T/$1/ledger.jsonl" ] || [ "$(grep -c '"mechanism"' "$T/$1/ledger.jsonl")" = 0 ] && ok ||
    bad "the refused run charged the coordinator's journal"
  [ ! -e "$T/$1.p1/ledger.party1.jsonl" ] && [ ! -e "$T/$1.p2/ledger.party2.jsonl" ] && ok ||
    bad "a party journalled a refused run"
  [ ! -e "$T/$1/model.txt" ] && ok || bad "the refused run wrote a model"
}
runid_swap_resume() {
  mv "$T/b.p1" "$T/b.p1.own"
  cp -r "$T/a.p1" "$T/b.p1"
  (cd "$T" && find b b.p1 b.p2 -type f | sort | xargs sha256sum) >"$T/b.sum"
  expect 1 $MPI -np 3 "$DPOPT" "$1" --resume "$T/b"
  has "$T/err" "~run is '$ida' here, '$idb' at the coordinator" "another run's party journal refused, naming both ids"
  (cd "$T" && find b b.p1 b.p2 -type f | sort | xargs sha256sum) | cmp -s - "$T/b.sum" && ok ||
    bad "a refused resume wrote something"
  rm -r "$T/b.p1"
  mv "$T/b.p1.own" "$T/b.p1"
  expect 0 $MPI -np 3 "$DPOPT" "$1" --resume "$T/b"
  [ -f "$T/b/model.txt" ] && ok || bad "the resume with the party's own journal wrote no model"
  [ "$(rid "$T/b.p1/ledger.party1.jsonl")" = "$idb" ] && ok || bad "the resumed party journal's id changed"
}
