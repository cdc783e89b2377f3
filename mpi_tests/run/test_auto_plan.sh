#!/bin/sh
# The method auto-pick lives in the run API (src/run/run_auto.c, issue 36): a program that
# embeds it with only privacy.eps and privacy.delta (and the data's public bounds) gets the
# same method, relation, clip, batches and schedule as `dpopt train --eps E [--delta D]` (also
# with no delta given to either: the same default).
. "$(dirname "$0")/../lib/testlib.sh"
keys="algo.name privacy.neighbours privacy.clip algo.sampling algo.m algo.epochs algo.eta algo.eta_rule algo.c algo.iters algo.choose_T algo.beta"
cli_plan() { # RUN: the same keys from the run's config.ini
  for k in $keys; do
    sed -n "s/^$k = \([^ ]*\) .*/$k = \1/p" "$1/config.ini"
  done
}
i=0
# "-": no delta given to either (each side's own default delta)
for case in "1 1e-5 logreg" "0.1 0 logreg" "1 0 logreg" "3 1e-5 logreg" "1 1e-5 softmax" "0.1 0 softmax" "1 - logreg"; do
  set -- $case
  i=$((i + 1))
  if [ "$2" = - ]; then CD=""; AD=""; else CD="--delta $2"; AD="privacy.delta=$2"; fi
  if [ "$3" = softmax ]; then softmax3_data 1 3000 "$T/d$i"; M="--model softmax --classes 3"; MK="model.name=softmax model.classes=3"
  else head -n 3000 "$S/data/a9a" >"$T/d$i"; cp "$S/data/a9a.schema" "$T/d$i.schema"; M=""; MK=""; fi
  expect 0 "$DPOPT" train --data "$T/d$i" $M --row-l1-bound 14 --row-l2-bound 3.75 --eps "$1" \
    $CD --quiet --out "$T/r$i"
  cli_plan "$T/r$i" >"$T/cli$i"
  "$B/mpi_tests/run/auto_plan" data.train="$T/d$i" $MK data.row_l1_bound=14 \
    data.row_l2_bound=3.75 privacy.eps="$1" $AD \
    >"$T/api$i" 2>"$T/err"
  check "eps $1 delta $2 $3: the run API's plan = dpopt train's: $(diff "$T/api$i" "$T/cli$i" | head -n 4)" \
    cmp -s "$T/api$i" "$T/cli$i"
  check "eps $1 delta $2 $3: a plan was picked" grep -q "algo.name = dp-" "$T/api$i"
done
finish test_auto_plan
