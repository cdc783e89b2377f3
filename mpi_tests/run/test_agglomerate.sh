#!/bin/sh
# Agglomeration onto rank 0 (src/run/run_agglo.c, run.agglomerate): forced on at 2 and 3 ranks,
# the rows of every rank moved to rank 0, gives the same model, journal, trace (its time
# column aside) and test accuracy as a 1-rank run and as forced off, for CSR and dense rows,
# one meeting a step and traced runs with a test set; summary.json says what ran; the memory
# cap keeps the ranks; a parties run never agglomerates (on is refused, naming the key, with
# nothing written); auto keeps the ranks when the wait policy's probe saw free cores, else
# measures, and says so; summary.json's wait is what the solve ran; DPOPT_AGGLOMERATE sets the
# default, the key wins; an unknown value is refused; a budget refusal and a failure of rank 0 end every rank
# with its status.
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1
D="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --eps 1 --delta 1e-5 --quiet"
P="--public-n 32561 --iters 30 --seed 9"
notime() { cut -d, -f1,3- "$1"; } # the trace without its time_s column
same() { # label dir-a dir-b
  check "$1: the same model" cmp -s "$2/model.txt" "$3/model.txt"
  unchained "$2/ledger.jsonl" > "$T/la"
  unchained "$3/ledger.jsonl" > "$T/lb"
  check "$1: the same journal" cmp -s "$T/la" "$T/lb"
  notime "$2/trace.csv" > "$T/ta"
  notime "$3/trace.csv" > "$T/tb"
  check "$1: the same trace" cmp -s "$T/ta" "$T/tb"
}
run() { # name np args...
  n=$1 np=$2
  shift 2
  expect 0 $MPI -np "$np" "$DPOPT" train $D "$@" --out "$T/$n"
}
# one meeting a step (no trace rows), CSR rows
run one1 1 $P --trace-every 0
for np in 2 3; do
  run on$np $np $P --trace-every 0 --agglomerate on
  has "$T/on$np/summary.json" '"ranks_solving":1' "on at $np ranks: rank 0 solved alone"
  has "$T/on$np/summary.json" "\"agglomerated_from\":$np" "... with the rows of $np ranks"
  same "on at $np ranks" "$T/one1" "$T/on$np"
done
run off2 2 $P --trace-every 0 --agglomerate off
has "$T/off2/summary.json" '"ranks_solving":2' "off: both ranks solved"
hasnot "$T/off2/summary.json" 'agglomerated_from' "off: nothing agglomerated"
same "off at 2 ranks" "$T/one1" "$T/off2"
# trace rows (a full pass each, the request path) with a test set: the test rows move too
TR="$P --trace-every 5 --test $S/data/a9a.t"
run tr1 1 $TR
run tr3 3 $TR --agglomerate on
same "traced, test set, on at 3 ranks" "$T/tr1" "$T/tr3"
acc() { sed -n 's/.*"test_accuracy":\([^,]*\).*/\1/p' "$1/summary.json"; }
check "the same test accuracy" test -n "$(acc "$T/tr1")" -a "$(acc "$T/tr1")" = "$(acc "$T/tr3")"
# dense rows
run de1 1 $P --trace-every 0 --dense
run de2 2 $P --trace-every 0 --dense --agglomerate on
same "dense, on at 2 ranks" "$T/de1" "$T/de2"
# rank 0 stopped by the budget (a multiplier too small: step 4 of 30 refused): exit 3 on every
# rank, the last accepted iterate; rank 0 failing alone: its error once, its exit status
expect 3 $MPI -np 1 "$DPOPT" train $D $P --trace-every 0 --set algo.z=0.7 --out "$T/rf1"
expect 3 $MPI -np 2 "$DPOPT" train $D $P --trace-every 0 --set algo.z=0.7 --agglomerate on \
  --out "$T/rf2"
check "refused at step 4: the same model" cmp -s "$T/rf1/model.txt" "$T/rf2/model.txt"
expect 2 $MPI -np 3 "$DPOPT" train $D $P --trace-every 0 --agglomerate on --x0 "$T/none.txt" \
  --out "$T/x3"
check "rank 0's error printed once" test "$(grep -c 'cannot open model' "$T/err")" = 1
hasnot "$T/err" "did not report this error" "... and no other rank's own"
# a signal to the ranks while rank 0 solves alone: exit 5 with rank 0's checkpoint, and the
# resume the message names runs (on every rank: a resume keeps its ranks) to the 1-rank model
SG="$P --iters 12000 --trace-every 0 --algo dp-sgd-rdp"
run sg1 1 $SG
$MPI -np 2 "$DPOPT" train $D $SG --agglomerate on --out "$T/sg2" > "$T/sg.out" 2> "$T/sg.err" &
pid=$!
i=0
while [ ! -s "$T/sg2/last_release.txt" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $(ps -o pid= --ppid $pid) 2>/dev/null
wait $pid; st=$?
check "a signal to an agglomerated run: exit 5 (got $st)" test "$st" = 5
check "... with rank 0's checkpoint" test -s "$T/sg2/checkpoint"
expect 0 $MPI -np 2 "$DPOPT" train --resume "$T/sg2" --quiet
has "$T/sg2/summary.json" '"ranks_solving":2' "resumed: every rank solved"
check "resumed: the 1-rank model" cmp -s "$T/sg1/model.txt" "$T/sg2/model.txt"
# the cap: rank 0 would hold up to 49 MB of a9a's rows (its public bound): on keeps the ranks
run cap2 2 $P --trace-every 0 --agglomerate on --agglomerate-max-mb 10
has "$T/cap2/summary.json" '"ranks_solving":2' "over the cap: both ranks solved"
has "$T/cap2/summary.json" 'over run.agglomerate_max_mb = 10' "... and summary.json says why"
same "over the cap" "$T/one1" "$T/cap2"
# the cap again on the rows held: a public size declared far below them (1000 rows: a bound
# of 1.5 MB, under a cap of 2 MB) must not let rank 0 take a9a's 5.9 MB
run capn 2 --public-n 1000 --iters 30 --seed 9 --trace-every 0 --agglomerate on --agglomerate-max-mb 2
has "$T/capn/summary.json" '"ranks_solving":2' "rows held over the cap, public size under it: both ranks solved"
has "$T/capn/summary.json" 'the rows the ranks hold exceed run.agglomerate_max_mb' "... and summary.json says why"
# parties: each party's rows stay with it; on is refused before anything is written
PT="--set privacy.trust=secagg --set parties.count=2 --algo dp-gd --iters 3 --clip l2:1"
expect 1 $MPI -np 2 "$DPOPT" train $D $PT --set parties.out="$T/pon.p%d" --agglomerate on \
  --out "$T/pon"
has "$T/err" "run.agglomerate = on: this run cannot solve on fewer ranks (parties" \
  "on with parties refused, naming the key and why"
check "... and nothing written" test ! -e "$T/pon" -a ! -e "$T/pon.p1"
expect 0 $MPI -np 2 "$DPOPT" train $D $PT --set parties.out="$T/pa.p%d" --agglomerate auto \
  --out "$T/pa"
has "$T/pa/summary.json" '"ranks_solving":2' "auto with parties: every rank solved"
has "$T/pa/summary.json" '"reason":"auto: parties' "... and summary.json says why"
DPOPT_AGGLOMERATE=on expect 0 $MPI -np 2 "$DPOPT" train $D $PT --set parties.out="$T/pe.p%d" \
  --out "$T/pe"
hasnot "$T/pe/summary.json" 'agglomerated_from' "DPOPT_AGGLOMERATE=on with parties: quietly not"
# the one-run audit keeps its ranks (its hooks see every rank's rows): on refused at set-up
head -n 3000 "$S/data/a9a" > "$T/a3k"
cp "$S/data/a9a.schema" "$T/a3k.schema"
expect 1 $MPI -np 2 "$DPOPT" audit --one-run --data "$T/a3k" --algo dp-gd --eps 1 --iters 30 \
  --row-l1-bound 14 --row-l2-bound 3.75 --canaries 200 --seed 5 --quiet \
  --set run.agglomerate=on --out "$T/a1"
has "$T/err" "run.agglomerate = on: this run cannot solve on fewer ranks (the one-run audit)" \
  "on with the one-run audit refused, naming the key and why"
check "... and nothing written" test ! -e "$T/a1"
# auto measures and decides (either way the 1-rank run's model); the environment's default
# (the test driver's is off) and the key over it
run auto2 2 $P --trace-every 0 --agglomerate auto
check "auto: summary.json says the probe kept the ranks or what was measured" \
  grep -Eq '"reason":"auto: every rank had a core of its own|"meeting_s":' "$T/auto2/summary.json"
same "auto at 2 ranks" "$T/one1" "$T/auto2"
# a forced wait policy has no probe to say the cores are free: auto measures
DPOPT_WAIT=sleep run autos 2 $P --trace-every 0 --agglomerate auto
has "$T/autos/summary.json" '"meeting_s":' "auto without the probe: the measured meeting"
has "$T/autos/summary.json" '"predicted_step_s_1":' "... and the predictions"
# rank 0 alone says how it waited (its own communicator's policy), the others slept
DPOPT_WAIT=sleep run ons 2 $P --trace-every 0 --agglomerate on
has "$T/ons/summary.json" '"wait":"sleep"' "on: summary.json's wait is rank 0's, as run"
has "$T/ons/summary.json" '"others_wait":"sleep"' "... and the waiting ranks slept"
DPOPT_AGGLOMERATE=on run env2 2 $P --trace-every 0
has "$T/env2/summary.json" '"agglomerated_from":2' "DPOPT_AGGLOMERATE=on: rank 0 solved alone"
DPOPT_AGGLOMERATE=on run key2 2 $P --trace-every 0 --agglomerate off
hasnot "$T/key2/summary.json" 'agglomerated_from' "run.agglomerate = off over the environment"
DPOPT_AGGLOMERATE=maybe expect 1 $MPI -np 2 "$DPOPT" train $D $P --out "$T/bad2"
has "$T/err" "DPOPT_AGGLOMERATE=maybe: expected auto, off or on" "a bad environment refused"
check "... and nothing written" test ! -e "$T/bad2"
expect 1 $MPI -np 2 "$DPOPT" train $D $P --agglomerate sometimes --out "$T/bad"
has "$T/err" "run.agglomerate = 'sometimes': expected auto, off or on" "an unknown value refused"
check "... and nothing written" test ! -e "$T/bad"
expect 1 $MPI -np 2 "$DPOPT" train $D $P --agglomerate off --agglomerate-max-mb 10 --out "$T/bad3"
has "$T/err" "run.agglomerate_max_mb is read only when run.agglomerate is auto or on" "a cap beside off refused (a setting nobody reads)"
check "... and nothing written" test ! -e "$T/bad3"
finish test_agglomerate
