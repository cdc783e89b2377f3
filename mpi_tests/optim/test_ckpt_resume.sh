#!/bin/sh
# Checkpoints, --resume and signals of `dpopt train` (issue 7) on data/a9a:
#  - a seeded run stopped at a checkpoint (run.stop_after, the same path a signal takes) and
#    resumed equals the uninterrupted run byte for byte: model.txt, ledger.jsonl, and the trace
#    (without its time column); gd, nag, lbfgs, dp-nag-opt, dp-gd with m < n; 1 and 3 ranks;
#  - SIGTERM to the ranks (what a scheduler's walltime warning does): exit status 5, a valid
#    journal, a loadable checkpoint, and --resume finishes with the uninterrupted model;
#    (Open MPI 4.1's mpirun does not forward a SIGTERM it receives itself: it aborts the job,
#    see doc/reference.md "Checkpoints and signals"; so the signal goes to the rank processes here)
#  - charges journaled after the last checkpoint (a kill -9 between a charge and the next
#    checkpoint) stay spent: the resumed journal keeps them, and the total never exceeds the
#    budget (the run stops with status 3 instead);
#  - refusals: --resume changing privacy.eps, the algorithm or the data, --resume of a completed
#    run (every algorithm of train checkpoints: test_ckpt_sco.sh has the 003 methods).
. "$(dirname "$0")/../lib/testlib.sh"
COMMON="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --lambda 0.01 --quiet"

# ---- 1. resume == uninterrupted, per algorithm and rank count (ckptlib.sh)
. "$(dirname "$0")/../lib/ckptlib.sh"
for np in 1 3; do
  run_pair $np gd$np --algo gd --iters 30
  run_pair $np nag$np --algo nag --iters 30
  run_pair $np lbfgs$np --algo lbfgs --iters 25
  run_pair $np dpnagopt$np --algo dp-nag-opt --eps 1 --iters 40
  run_pair $np dpgd$np --algo dp-gd --eps 1 --batch 2000 --iters 30
done
# a periodic checkpoint alone (no stop) is also a resume point: two stops in a row
expect 5 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-hb --eps 1 --iters 30 --seed 5 --out "$T/hb2" --set run.stop_after=7
expect 5 $MPI -np 2 "$DPOPT" train --resume "$T/hb2" --quiet --set run.stop_after=19
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/hb2" --quiet
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-hb --eps 1 --iters 30 --seed 5 --out "$T/hb2-full"
same "$T/hb2-full/model.txt" "$T/hb2/model.txt" "dp-hb resumed twice: model"
unchained "$T/hb2-full/ledger.jsonl" >"$T/a"; unchained "$T/hb2/ledger.jsonl" >"$T/b"
same "$T/a" "$T/b" "dp-hb resumed twice: journal"

# ---- 2. refusals
expect 5 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag --eps 1 --iters 30 --seed 2 --out "$T/ref" --set run.stop_after=5
expect 1 $MPI -np 2 "$DPOPT" train --resume "$T/ref" --eps 2
grep -q "cannot change privacy.eps" "$T/err" && ok || bad "eps change message: $(cat "$T/err")"
expect 1 $MPI -np 2 "$DPOPT" train --resume "$T/ref" --algo dp-gd
expect 1 $MPI -np 2 "$DPOPT" train --resume "$T/ref" --data "$S/data/a9a.t"
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/ref" --trace-every 2 --quiet
expect 2 $MPI -np 2 "$DPOPT" train --resume "$T/ref" --quiet   # completed: no checkpoint left
grep -q "checkpoint" "$T/err" && ok || bad "completed-run message: $(cat "$T/err")"

# ---- 3. charges after the last checkpoint stay spent (kill -9 between charge and checkpoint)
# stop at 10 with a checkpoint, keep a copy; go on to 16 (6 more charges journaled); put the
# iteration-10 checkpoint back, as if the process had died before checkpointing again.
expect 5 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag --eps 1 --iters 30 --seed 4 --out "$T/k9" --set run.stop_after=10
cp "$T/k9/checkpoint" "$T/ck10"
expect 5 $MPI -np 2 "$DPOPT" train --resume "$T/k9" --quiet --set run.stop_after=16
head -n 17 "$T/k9/ledger.jsonl" >"$T/j16"
mv "$T/ck10" "$T/k9/checkpoint"
# dp-nag spends eps/T per step: redoing steps 10..15 on top of 16 charges cannot fit in the
# budget, so the ledger refuses before the end (status 3) and nothing is ever re-spent for free
expect 3 $MPI -np 2 "$DPOPT" train --resume "$T/k9" --set run.quiet=false
grep -q "stay spent" "$T/err" && ok || bad "orphan charges not reported: $(cat "$T/err")"
head -n 17 "$T/k9/ledger.jsonl" >"$T/j16b"
same "$T/j16" "$T/j16b" "journal prefix kept after the resume"
n=$(grep -c '"step"' "$T/k9/ledger.jsonl")
[ "$n" -eq 30 ] && ok || bad "journal holds $n charges, want 16 + (30 - 10) - 6 refused = 30"
expect 0 "$DPOPT" ledger "$T/k9"
spent=$(sed -n 's/^spent: *eps = \([0-9.eE+-]*\).*/\1/p' "$T/out")
awk -v s="$spent" 'BEGIN { exit !(s <= 1 && s > 0.99) }' && ok || bad "spent $spent not in (0.99, 1]"

# ---- 4. SIGTERM: to the ranks (status 5), and to mpirun
LONG="--algo dp-gd --eps 1 --iters 1500 --seed 9 --no-trace-loss --trace-every 50"
expect 0 $MPI -np 2 "$DPOPT" train $COMMON $LONG --out "$T/sig-full"
for how in ranks; do
  R="$T/sig-$how"
  extra=""
  [ $how = mpirun ] && extra="--mca odls_base_sigkill_timeout 60"
  $MPI $extra -np 2 "$DPOPT" train $COMMON $LONG --out "$R" --checkpoint-every 5 >"$T/sout" 2>"$T/serr" &
  pid=$!
  i=0
  while [ ! -f "$R/checkpoint" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
  if [ $how = ranks ]; then
    kids=$(ps -o pid= --ppid $pid)
    kill -TERM $kids 2>/dev/null
  else
    kill -TERM $pid
  fi
  wait $pid; st=$?
  if [ $how = ranks ]; then
    [ $st = 5 ] && ok || { bad "SIGTERM to the ranks: exit $st (want 5)"; head -n 20 "$T/serr"; }
  else
    [ $st != 0 ] && ok || bad "SIGTERM to mpirun: exit 0"
  fi
  grep -q "interrupted before iteration" "$T/serr" && ok || { bad "$how: no interruption message"; head -n 20 "$T/serr"; }
  expect 0 "$DPOPT" ledger "$R"                 # the journal verifies
  [ -f "$R/checkpoint" ] && ok || bad "$how: no checkpoint"
  expect 0 $MPI -np 2 "$DPOPT" train --resume "$R" --quiet
  same "$T/sig-full/model.txt" "$R/model.txt" "SIGTERM to $how, resumed: model"
  unchained "$T/sig-full/ledger.jsonl" >"$T/a"; unchained "$R/ledger.jsonl" >"$T/b"
  same "$T/a" "$T/b" "SIGTERM to $how, resumed: journal"
done

finish test_ckpt_resume
