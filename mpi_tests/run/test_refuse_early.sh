#!/bin/sh
# Every private algorithm listed by `dpopt train --help`, run with public settings it may
# refuse (no row bound, so no L; lambda 0, so no mu; the default clipping): it either runs or
# refuses before it reads the data or claims the run directory.  Without clipping every one
# refuses (no public sensitivity); with it, the L and mu each needs decide.  A refusal that depends only
# on the configuration must not leave a FAILED run behind (issue 14).
. "$(dirname "$0")/../lib/testlib.sh"
"$DPOPT" gen logistic --n 200 --d 5 --seed 3 "$T/d.svm" >/dev/null 2>&1 ||
  bad "gen logistic"
algos=$("$DPOPT" train --help | awk '/\[private\]$/ { print $1 }')
check "train --help lists the private algorithms" [ "$(echo "$algos" | wc -w)" -ge 10 ]
for a in $algos; do
  for extra in "" "--clip l1:1" "--clip l1:1 --lambda 0" "--clip l1:1 --row-l2-bound 20 --lambda 0"; do
    o="$T/run_$a"
    rm -rf "$o"
    # shellcheck disable=SC2086
    "$DPOPT" train --algo "$a" --eps 1 --delta 1e-5 --seed 1 $extra \
      --data "$T/d.svm" --out "$o" >"$T/out" 2>"$T/err"
    st=$?
    if [ "$st" = 0 ]; then
      check "$a $extra: ran, model written" [ -s "$o/model.txt" ]
    else
      check "$a $extra: exit $st is a configuration error (1)" [ "$st" = 1 ]
      check "$a $extra: refused before claiming $o" [ ! -e "$o" ]
      if grep -q "loaded " "$T/err"; then
        bad "$a $extra: refused after reading the data: $(grep error "$T/err")"
      else ok; fi
    fi
  done
done
# dp-sgd-rdp's sampling against the relation (wor is analysed for replace-one, Poisson for
# add-remove): a configuration error, refused before the data are read or the run claimed
for pair in "wor add-remove" "poisson replace-one"; do
  set -- $pair
  o="$T/samp_$1"
  "$DPOPT" train --algo dp-sgd-rdp --eps 1 --delta 1e-5 --clip l2:1 --row-l2-bound 20 \
    --public-n 200 --set algo.sampling="$1" --set privacy.neighbours="$2" --data "$T/d.svm" \
    --out "$o" >"$T/out" 2>"$T/err"
  st=$?
  check "sampling $1 under $2: exit $st is 1" [ "$st" = 1 ]
  check "sampling $1 under $2: refused before claiming $o" [ ! -e "$o" ]
  has "$T/err" "algo.sampling = $1 is analysed for" "sampling $1 under $2: the reason"
  hasnot "$T/err" "loaded " "sampling $1 under $2: before reading the data"
done
finish test_refuse_early
