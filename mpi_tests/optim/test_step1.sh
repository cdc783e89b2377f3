#!/bin/sh
# One meeting of the ranks per DP-SGD or full-batch DP-GD step (src/optim/sco_dpsgd_step1.c,
# src/optim/dp_step1.c, src/comm/step1.h):
# seeded private runs give the same model and the same journal (its random nonce and chain
# aside) as the request path (dpopt-test train --test-step-request) at 1, 2 and 3 ranks, for
# wor and Poisson batches, under either wait policy, and when the ledger refuses a step
# mid-run; summary.json says which path ran; traced runs (the default row every other step,
# a held-out set, rows every 3 steps) give the same trace.csv (time_s aside), checkpoints
# included; a run stopped by a signal ends on every rank.
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1
D="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --eps 1 --delta 1e-5 --quiet"
strip() { sed 's/"nonce":"[^"]*"//; s/"chain":"[^"]*"//' "$1"; }
same() { # label dir-a dir-b
  check "$1: the same model" cmp -s "$2/model.txt" "$3/model.txt"
  strip "$2/ledger.jsonl" > "$T/la"
  strip "$3/ledger.jsonl" > "$T/lb"
  check "$1: the same journal" cmp -s "$T/la" "$T/lb"
  cut -d, -f1,3- "$2/trace.csv" > "$T/ta"
  cut -d, -f1,3- "$3/trace.csv" > "$T/tb"
  check "$1: the same trace (time_s aside)" cmp -s "$T/ta" "$T/tb"
}
rows() { grep -c '^[0-9]' "$1/trace.csv"; }
pair() { # name np want-exit wait args... (no trace unless the args ask for one)
  n=$1 np=$2 ex=$3 w=$4
  shift 4
  DPOPT_WAIT=$w expect "$ex" $MPI -np "$np" "$DPOPT_TEST" train $D --trace-every 0 "$@" \
    --out "$T/$n.one"
  has "$T/$n.one/summary.json" '"step":"one-meeting"' "$n: one meeting a step"
  DPOPT_WAIT=$w expect "$ex" $MPI -np "$np" "$DPOPT_TEST" train $D --trace-every 0 "$@" \
    --test-step-request --out "$T/$n.req"
  has "$T/$n.req/summary.json" '"step":"request"' "$n: the request path"
  same "$n" "$T/$n.one" "$T/$n.req"
}
W="--algo dp-sgd-rdp --iters 40 --batch 300 --seed 7"
P="--public-n 32561 --iters 40 --seed 9"
for np in 1 2 3; do
  pair wor$np $np 0 spin $W
  pair poi$np $np 0 sleep $P
done
# the ledger refuses step 4 of 30 (a fixed multiplier too small for the budget): every rank
# drops it, the model is the last accepted iterate's on both paths, exit 3
pair ref2 2 3 sleep $P --iters 30 --set algo.z=0.7
has "$T/ref2.one/summary.json" '"status":"budget_exhausted"' "the refusal is reported"
check "the refused run charged some steps, not all" \
  test "$(grep -c '"step":' "$T/ref2.one/ledger.jsonl")" -ge 1 -a \
  "$(grep -c '"step":' "$T/ref2.one/ledger.jsonl")" -lt 30
# trace rows: their sums ride in the step's meeting; the same rows and model as the request
# path; the default trace (a row every other step), with a held-out set and checkpoints every
# 7 steps, rows every 3 steps (the last row after the steps: a request)
for np in 1 2 3; do
  pair trw$np $np 0 spin $W --trace-every 2
  pair trp$np $np 0 sleep $P --trace-every 3 --test $S/data/a9a.t --checkpoint-every 7
done
check "the default trace has its 21 rows (got $(rows "$T/trw3.one"))" test "$(rows "$T/trw3.one")" = 21
check "a traced run: the same model as an untraced one" cmp -s "$T/trw2.one/model.txt" \
  "$T/wor2.one/model.txt"
has "$T/trp2.one/trace.csv" 'heldout_loss_nonprivate' "the held-out columns are there"
# a refusal at a trace step: its row (the last released iterate's) is written, then exit 3
pair trref2 2 3 sleep $P --iters 30 --set algo.z=0.7 --trace-every 1
check "the refused run's rows end at the refused step" \
  test "$(rows "$T/trref2.one")" = $(($(grep -c '"step":' "$T/trref2.one/ledger.jsonl") + 1))
# full-batch DP-GD (dp_step1.c): the same model, journal and trace at 1, 2 and 3 ranks, the
# default trace; a fixed Laplace scale the budget refuses at a step: exit 3, the same bits
G="--algo dp-gd --iters 30 --seed 5"
for np in 1 2 3; do
  pair gd$np $np 0 spin $G --trace-every 2
done
pair gdref2 2 3 sleep $G --trace-every 1 --set algo.noise=0.02
check "the refused dp-gd run charged some steps, not all" \
  test "$(grep -c '"step":' "$T/gdref2.one/ledger.jsonl")" -ge 1 -a \
  "$(grep -c '"step":' "$T/gdref2.one/ledger.jsonl")" -lt 30
# a traced one-meeting run stopped at its checkpoint (run.stop_after) and resumed with one
# meeting a step gives the uninterrupted run's model, journal and trace: the checkpoint of rank
# 0's state is complete, and the copies get its momentum and mean; the stop comes before a
# trace step (21): its last meeting has that step's shape (a wrong shape went unseen here:
# Open MPI does not flag an allgather whose counts differ, and the run's outputs are rank 0's)
expect 5 $MPI -np 2 "$DPOPT_TEST" train $D $P --trace-every 3 --test $S/data/a9a.t \
  --checkpoint-every 7 --set run.stop_after=21 --out "$T/stop"
expect 0 $MPI -np 2 "$DPOPT_TEST" train --resume "$T/stop" --quiet
has "$T/stop/summary.json" '"step":"one-meeting"' "the resumed run met once a step"
same "stopped and resumed" "$T/trp2.one" "$T/stop"
# the iteration limit below the plan (--iters 12 of algo.T = 20): a resumed run's workers
# leave their loop at the limit, counted from the checkpoint's step, so rank 0 calls them to
# no further meeting (it did when it counted its steps from 0: an MPI failure, exit 4)
L="--algo dp-sgd-rdp --iters 12 --set algo.T=20 --batch 300 --seed 7 --trace-every 0"
expect 0 $MPI -np 2 "$DPOPT_TEST" train $D $L --out "$T/lim"
expect 5 $MPI -np 2 "$DPOPT_TEST" train $D $L --checkpoint-every 7 --set run.stop_after=7 \
  --out "$T/limr"
expect 0 $MPI -np 2 "$DPOPT_TEST" train --resume "$T/limr" --quiet
has "$T/limr/summary.json" '"step":"one-meeting"' "the limited resumed run met once a step"
check "the limited resumed run: the uninterrupted run's model" cmp -s "$T/lim/model.txt" \
  "$T/limr/model.txt"
# a signal to the ranks (as in test_ckpt_resume.sh: Open MPI's mpirun aborts on one of its
# own) stops rank 0 between two steps: its last meeting sends the other ranks on to the finish
# (without it they would wait in the next step's meeting), exit 5, the checkpoint written
$MPI -np 2 "$DPOPT_TEST" train $D $P --iters 200000 --set algo.z=20 --trace-every 0 \
  --out "$T/sig" > "$T/sig.out" 2> "$T/sig.err" &
pid=$!
i=0
while [ ! -s "$T/sig/last_release.txt" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $(ps -o pid= --ppid $pid) 2>/dev/null
i=0 # a run left waiting is ended after 120 s (and fails below)
while kill -0 $pid 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid 2>/dev/null
wait $pid; st=$?
check "a stopped one-meeting run exits 5 (got $st)" test "$st" = 5
check "... on every rank, with its message" grep -q "interrupted before iteration" "$T/sig.err"
check "... and its checkpoint" test -s "$T/sig/checkpoint"
finish test_step1
