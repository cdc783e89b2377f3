#!/bin/sh
# The journal's fsync deferred during a train run's solve (doc/design.md, "The ledger journal"):
#  - a seeded dp-sgd-rdp run gives the same model and the same journal (its chain aside) whether
#    its lines are fsynced in groups (the default on one node) or at every step (a checkpoint
#    after every step syncs the journal first); summary.json says which;
#  - a budget store keeps the fsync of every charge (its head must not get ahead of the journal);
#  - killed (SIGKILL) mid-run, the journal verifies and reaches the charge the kept last release
#    names: every line was written before its release;
#  - a journal fsync that fails (fsync_fail.so, an LD_PRELOAD shim: the N-th fsync of a
#    ledger.jsonl gets EIO) at the kept release's sync during the solve, or at the sync after
#    it, on 2 ranks: every rank stops alike (FAILED, no model.txt, the fsync's own error printed
#    once; not rank 0 alone, aborted after DPOPT_FAIL_WAIT).
. "$(dirname "$0")/../lib/testlib.sh"
export DPOPT_JOURNAL_KEY="$T/journal.key"
C="--row-l2-bound 3.75 --eps 1 --delta 1e-5 --algo dp-sgd-rdp --set privacy.neighbours=add-remove --set algo.sampling=poisson --batch 256 --epochs 0.5 --public-n 32561 --seed 7 --quiet --no-trace-loss"
expect 0 "$DPOPT" train --data "$S/data/a9a" $C --out "$T/a"
expect 0 "$DPOPT" train --data "$S/data/a9a" $C --checkpoint-every 1 --out "$T/b"
check "deferred and per-step synced: the same model" cmp -s "$T/a/model.txt" "$T/b/model.txt"
unchained "$T/a/ledger.jsonl" > "$T/ja"
unchained "$T/b/ledger.jsonl" > "$T/jb"
check "deferred and per-step synced: the same journal" cmp -s "$T/ja" "$T/jb"
check "64 charges journalled" [ "$(grep -c '"mechanism":"gaussian"' "$T/a/ledger.jsonl")" = 64 ]
has "$T/a/summary.json" '"journal_fsync":"deferred' "one node: deferred"
expect 0 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" $C --out "$T/c"
has "$T/c/summary.json" '"journal_fsync":"deferred' "two ranks on one node: deferred"
check "2 ranks: 64 charges" [ "$(grep -c '"mechanism":"gaussian"' "$T/c/ledger.jsonl")" = 64 ]

# a budget store: every charge fsynced
R="--row-l2-bound 3.75 --eps 1 --delta 1e-5 --algo dp-sgd-rdp --batch 64 --iters 300 --quiet"
expect 0 "$DPOPT" budget init "$T/st" --eps 30 --delta 1e-5 --data "$S/data/a9a"
expect 0 "$DPOPT" train --data "$S/data/a9a" $R --budget-store "$T/st" --out "$T/s"
has "$T/s/summary.json" '"journal_fsync":"every charge"' "budget store: every charge"

# killed mid-run: the journal verifies and covers the kept release
i=0
while [ $i -lt 4 ]; do
  i=$((i + 1))
  "$DPOPT" train --data "$S/data/a9a" $R --iters 3000 --set run.keep_every=25 --out "$T/k$i" \
    > /dev/null 2>&1 &
  pid=$!
  sleep "$(awk -v s="$i" 'BEGIN { srand(s * 31 + 5); printf "%.3f", 0.4 + rand() * 0.8 }')"
  kill -9 $pid 2> /dev/null
  wait $pid 2> /dev/null
  [ -f "$T/k$i/ledger.jsonl" ] || continue
  expect 0 "$DPOPT" ledger "$T/k$i"
  if [ -f "$T/k$i/last_release.txt" ]; then
    k=$(sed -n 's/.*after ledger charge \([0-9]*\).*/\1/p' "$T/k$i/last_release.txt" | head -1)
    n=$(grep -c '"mechanism"' "$T/k$i/ledger.jsonl")
    check "kill $i: the journal's $n charges reach the kept release's charge $k" [ "$n" -ge "$k" ]
  fi
done
# a failed fsync: a clean run's journal fsyncs are the open, the kept first release, the sync
# after the solve and the close; the N-th of them fails
so="$B/mpi_tests/run/.libs/fsync_fail.so"
check "the shim is built" test -f "$so"
F="--row-l2-bound 3.75 --eps 1 --delta 1e-5 --algo dp-sgd-rdp --batch 256 --epochs 0.3 --quiet --no-trace-loss --set run.keep_every=1000000"
expect 0 $MPI -np 2 -x LD_PRELOAD="$so" -x DPO_T_FSYNC_COUNT="$T/n" "$DPOPT" train \
  --data "$S/data/a9a" $F --out "$T/f0"
n=$(cat "$T/n" 2>/dev/null)
check "a clean run fsyncs its journal 4 times (got '$n')" [ "$n" = 4 ]
for at in 2 3; do # the kept release's sync, the sync after the solve
  expect 2 $MPI -np 2 -x LD_PRELOAD="$so" -x DPO_T_FSYNC_FAIL_AT=$at \
    "$DPOPT" train --data "$S/data/a9a" $F --out "$T/f$at"
  [ "$(grep -c 'journal fsync failed: Input/output error' "$T/err")" = 1 ] && ok ||
    bad "fsync $at fails: the error is printed $(grep -c 'journal fsync failed' "$T/err") times (want once)"
  hasnot "$T/err" "did not report this error" "fsync $at fails: every rank stops, not rank 0 alone"
  check "fsync $at fails: FAILED, no model.txt" test -f "$T/f$at/FAILED" -a ! -f "$T/f$at/model.txt"
done
finish test_journal_sync
