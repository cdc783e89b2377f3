#!/bin/sh
# Every algorithm of `dpopt train --help` runs with its defaults on data/a9a (issue 14,
# "Commands that fail as documented or with their defaults"): exit 0 and a test accuracy on
# data/a9a.t above the majority class 0.7638.  The list comes from the help text (lines
# "  NAME  summary [private]"), so a new algorithm is tested without editing this file.
# Only public facts are given: the row bounds of the a9a encoding (data/README.md) and, for
# private algorithms, the budget eps = 1, delta = 1e-5.  --seed makes the noise reproducible
# (a test, not a private run).  pnsgd (one pass of ~19k steps, ~16 s) is the slow one.
# Also: every algorithm's entry lists its keys (generated from its parameter table), e.g.
# the algo.D that pnsgd and phased-erm read.
. "$(dirname "$0")/../lib/testlib.sh"
MAJ=0.7638
"$DPOPT" train --help >"$T/help" 2>&1 || bad "train --help"
ALGOS=$(sed -n '/^Algorithms/,/^$/p' "$T/help" | awk '/^  [a-z]/ {print $1}')
[ "$(echo $ALGOS | wc -w)" -ge 20 ] && ok || bad "algorithm list from --help: '$ALGOS'"
for k in "algo.D " "algo.eta " "algo.rho " "algo.iters " "algo.alpha "; do has "$T/help" "$k" "--help lists $k"; done
# pnsgd's entry names algo.D (read by the shared 003 reader)
sed -n '/^  pnsgd /,/^  [a-z]/p' "$T/help" >"$T/pnsgd.help"
has "$T/pnsgd.help" "algo.D " "pnsgd's entry lists algo.D"
C="--data $S/data/a9a --test $S/data/a9a.t --row-l1-bound 14 --row-l2-bound 3.75 --quiet --no-trace-loss --seed 5"
for a in $ALGOS; do
  if grep -q "^  $a .*\[private\]" "$T/help"; then P="--eps 1 --delta 1e-5"; else P=""; fi
  expect 0 $MPI -np 2 "$DPOPT" train $C $P --algo "$a" --out "$T/$a"
  acc=$(sed -n 's/^test accuracy *\([0-9.]*\).*/\1/p' "$T/out")
  echo "$a: test accuracy $acc"
  awk -v a="$acc" -v m="$MAJ" 'BEGIN {exit !(a != "" && a > m)}' && ok ||
    bad "$a: test accuracy '$acc' not above the majority class $MAJ"
  rm -rf "$T/$a"
done
finish test_algos_a9a
