#!/bin/sh
# How ranks wait (src/comm/wait.c, DPOPT_WAIT): the sleeping wait gives the same bits as the
# spinning one, for evaluations and for rows fetched to rank 0 (it only adds a barrier before
# the same collectives); summary.json says which ran; auto chooses sleep with one warning when
# a node holds more ranks than cores, a forced policy says nothing, and a bad DPOPT_WAIT is
# refused once, before anything is written.
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1
C="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --lambda 0.01 --algo dp-sgd-rdp \
  --eps 1 --delta 1e-5 --iters 40 --batch 300 --seed 7"
unset DPOPT_WAIT
# the same private run, spinning and sleeping, at 2 and 3 ranks: the same model and trace, bit
# for bit (the comparison fails if a gate unpairs the collectives or changes what they carry)
for np in 2 3; do
  for w in spin sleep; do
    DPOPT_WAIT=$w expect 0 $MPI -np $np "$DPOPT" train $C --out "$T/$w$np"
    hasnot "$T/err" "warning: more ranks" "DPOPT_WAIT=$w at $np ranks: a forced policy warns not"
    has "$T/$w$np/summary.json" "\"wait\": *\"$w\"" "summary.json says how the ranks waited"
  done
  check "np $np: sleeping and spinning runs give the same model" \
    cmp -s "$T/spin$np/model.txt" "$T/sleep$np/model.txt"
  # the trace without its time column
  for w in spin sleep; do cut -d, -f1,3- "$T/$w$np/trace.csv" > "$T/$w$np.tr"; done
  check "np $np: ... and the same trace" cmp -s "$T/spin$np.tr" "$T/sleep$np.tr"
done
check "the runs wrote models" test -s "$T/spin3/model.txt"
# pnsgd fetches rows to rank 0 (a request of its own, from fetch.c): the same gates on every
# rank there too (a gate on one side only hangs the run: the timeout ends it)
"$DPOPT" gen logistic --n 1000 --d 5 "$T/g.txt" > /dev/null 2>&1
for w in spin sleep; do
  DPOPT_WAIT=$w expect 0 timeout 300 $MPI -np 2 "$DPOPT" train --data "$T/g.txt" --algo pnsgd \
    --eps 1 --delta 1e-5 --row-l2-bound 4 --set algo.D=3 --seed 3 --quiet --out "$T/p$w"
done
check "pnsgd (rows fetched): sleeping and spinning runs give the same model" \
  cmp -s "$T/pspin/model.txt" "$T/psleep/model.txt"
# auto with more ranks than cores (as many as the cores plus one, on small machines only):
# the sleeping wait, one warning from rank 0, and the same model as the forced sleep
nc=$(nproc)
if [ "$nc" -le 5 ]; then
  np=$((nc + 1))
  expect 0 $MPI -np $np "$DPOPT" train $C --out "$T/auto"
  check "auto at $np ranks on $nc cores: one warning" \
    test "$(grep -c 'warning: more ranks than cores' "$T/err")" = 1
  has "$T/err" "DPOPT_WAIT=spin" "the warning says how to keep spinning"
  DPOPT_WAIT=sleep expect 0 $MPI -np $np "$DPOPT" train $C --out "$T/sl"
  check "auto and sleep give the same model" cmp -s "$T/auto/model.txt" "$T/sl/model.txt"
  has "$T/auto/summary.json" '"wait": *"sleep"' "auto chose sleep"
  DPOPT_WAIT=spin expect 0 $MPI -np $np "$DPOPT" train $C --out "$T/sp"
  hasnot "$T/err" "warning" "DPOPT_WAIT=spin at $np ranks: no warning"
  expect 0 $MPI -np $np "$DPOPT" train $C --quiet --out "$T/q"
  hasnot "$T/err" "warning" "--quiet: no warning"
else
  echo "($nc cores: the oversubscribed case is not run)"
fi
# a bad value: exit 1, one message naming it, no run directory
DPOPT_WAIT=busy expect 1 $MPI -np 2 "$DPOPT" train $C --out "$T/bad"
check "a bad DPOPT_WAIT: one message" \
  test "$(grep -c 'DPOPT_WAIT=busy: unknown wait policy (auto, spin or sleep)' "$T/err")" = 1
check "a bad DPOPT_WAIT: nothing written" test ! -e "$T/bad"
DPOPT_WAIT= expect 0 "$DPOPT" train $C --out "$T/empty"
finish test_wait
