# Shared by the checkpoint tests (test_ckpt_resume.sh, test_ckpt_dpsgd.sh), sourced after
# testlib.sh; the caller sets COMMON (the train flags every run shares).
#   same FILE1 FILE2 MSG        the files are equal byte for byte
#   notime TRACE                the trace without its time_s column
#   run_pair NP NAME ARGS...    a seeded run, and the same run stopped at iteration 13 (a
#                               checkpoint every 4) then resumed: model.txt, the trace rows and
#                               the journal's charges must be the same; no checkpoint left
same() {
  if cmp -s "$1" "$2"; then ok; else bad "$3: $1 and $2 differ"; diff "$1" "$2" | head -n 6; fi
}
notime() { sed 's/^\([^,]*\),[^,]*,/\1,/' "$1"; }
run_pair() {
  np=$1; name=$2; shift 2
  expect 0 $MPI -np "$np" "$DPOPT" train $COMMON "$@" --seed 11 --out "$T/$name-full"
  expect 5 $MPI -np "$np" "$DPOPT" train $COMMON "$@" --seed 11 --out "$T/$name-part" \
    --checkpoint-every 4 --set run.stop_after=13
  [ -f "$T/$name-part/checkpoint" ] && ok || bad "$name: no checkpoint after the stop"
  [ ! -f "$T/$name-part/model.txt" ] && ok || bad "$name: an interrupted run wrote model.txt"
  expect 0 $MPI -np "$np" "$DPOPT" train --resume "$T/$name-part" --quiet
  same "$T/$name-full/model.txt" "$T/$name-part/model.txt" "$name (np $np) model"
  notime "$T/$name-full/trace.csv" >"$T/a"; notime "$T/$name-part/trace.csv" >"$T/b"
  same "$T/a" "$T/b" "$name (np $np) trace rows"
  if [ -f "$T/$name-full/ledger.jsonl" ]; then # the same charges (each journal its own chain)
    unchained "$T/$name-full/ledger.jsonl" >"$T/a"; unchained "$T/$name-part/ledger.jsonl" >"$T/b"
    same "$T/a" "$T/b" "$name (np $np) journal"
  fi
  [ ! -f "$T/$name-part/checkpoint" ] && ok || bad "$name: checkpoint left after completion"
}
