#!/bin/sh
# The utility test of issue 13 (a test that can fail): on the shipped a9a at (eps, delta) =
# (1, 1e-5), `dpopt train` with no --algo picks the default private method for that budget
# (dp-sgd-rdp with an intercept, Poisson batches of 256, 10 epochs, clip l2:1; it says which
# and why) and reaches test accuracy >= 0.84 on a9a.t (measured 0.849-0.851; majority class
# 0.764).  Seeded, so reproducible and labelled NOT PRIVATE: a test of the defaults, not a
# private run.  With delta = 0 the pick is dp-nag-opt.
. "$(dirname "$0")/testlib.sh"
A9="--data $S/data/a9a --test $S/data/a9a.t --set data.dim=123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --no-trace-loss"
expect 0 $MPI -np 2 "$DPOPT" train $A9 --eps 1 --delta 1e-5 --seed 11 --out "$T/u"
has "$T/err" "no --algo: using dp-sgd-rdp" "the default method is named"
has "$T/out" "NOT PRIVATE" "seeded utility run labelled"
[ "$(jq -r .intercept "$T/u/summary.json")" = true ] && ok || bad "intercept on by default"
a=$(jq -r .test_accuracy "$T/u/summary.json")
awk -v a="$a" 'BEGIN {exit !(a >= 0.84)}' && ok || bad "default private method, a9a eps 1: accuracy $a < 0.84"
expect 0 $MPI -np 2 "$DPOPT" train $A9 --eps 1 --iters 3 --seed 11 --out "$T/p"
has "$T/err" "no --algo: using dp-nag-opt" "delta = 0: the pure-eps pick"
finish test_utility
