#!/bin/sh
# The utility test of issue 13 (a test that can fail): on the shipped a9a at (eps, delta) =
# (1, 1e-5), `dpopt train` with no --algo picks the default private method for that budget
# (dp-sgd-rdp with an intercept, Poisson batches of 256, 10 epochs, step eta 4, clip l2:1; it says which
# and why) and reaches test accuracy >= 0.84 on a9a.t (measured 0.849-0.851; majority class
# 0.764).  Seeded, so reproducible and labelled NOT PRIVATE: a test of the defaults, not a
# private run.  With delta = 0 the pick is dp-nag-opt with clip l1:B1/3 under add-remove
# neighbours (a noisy count first); below eps = 0.15 on a short fixed schedule (T = 8 at eps
# 0.1, step 12/L, momentum 0.5), which at eps = 0.1 must reach the issue's 0.80 (seeded
# 0.819-0.827 over seeds 11-14; replace-one 0.803-0.817; (4.6)'s T' = 2 of the old default
# gave the majority class 0.7638); at eps = 1 (200 steps, seeded 0.840-0.844) >= 0.835.
. "$(dirname "$0")/../lib/testlib.sh"
A9="--data $S/data/a9a --test $S/data/a9a.t --set data.dim=123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --no-trace-loss"
expect 0 $MPI -np 2 "$DPOPT" train $A9 --eps 1 --delta 1e-5 --seed 11 --out "$T/u"
has "$T/err" "no --algo: using dp-sgd-rdp" "the default method is named"
has "$T/out" "NOT PRIVATE" "seeded utility run labelled"
[ "$(jq -r .intercept "$T/u/summary.json")" = true ] && ok || bad "intercept on by default"
a=$(jq -r .test_accuracy "$T/u/summary.json")
awk -v a="$a" 'BEGIN {exit !(a >= 0.84)}' && ok || bad "default private method, a9a eps 1: accuracy $a < 0.84"
expect 0 $MPI -np 2 "$DPOPT" train $A9 --eps 1 --seed 11 --out "$T/p"
has "$T/err" "no --algo: using dp-nag-opt" "delta = 0: the pure-eps pick"
has "$T/err" "delta = 0: DP-NAG-opt is the most accurate" "eps >= 1: the long schedule"
has "$T/err" "add-remove neighbours" "pure eps: the relation is named"
grep -q "^privacy.neighbours = add-remove " "$T/p/config.ini" && ok || bad "pure eps: add-remove by default"
has "$T/p/ledger.jsonl" '"step":-1,"mechanism":"laplace".*"sensitivity":1,"dim":1' "pure eps: the noisy count charged first"
jq -e '.n == null and .n_nonprivate == 32561' "$T/p/summary.json" > /dev/null && ok ||
  bad "add-remove: the exact row count is labelled non-private in summary.json"
has "$T/err" "loaded .*: 32561 rows \[non-private diagnostic: under add-remove" "add-remove: the load line labels the row count"
has "$T/out" "32561 rows \[non-private diagnostic: private under add-remove\]" "add-remove: the report labels the row count"
grep -q "^privacy.clip = l1:4.66666" "$T/p/config.ini" && ok || bad "pure eps: clip l1:B1/3 (B1 = 14)"
a=$(jq -r .test_accuracy "$T/p/summary.json")
awk -v a="$a" 'BEGIN {exit !(a >= 0.835)}' && ok || bad "default pure-eps method, a9a eps 1: accuracy $a < 0.835"
expect 0 $MPI -np 2 "$DPOPT" train $A9 --eps 0.1 --seed 11 --out "$T/s"
has "$T/err" "small eps: DP-NAG-opt on a short fixed schedule" "small eps: the short schedule is named"
has "$T/out" "NOT PRIVATE" "seeded pure-eps utility run labelled"
has "$T/out" "^spent  *eps [0-9.]* of 0.1 in 8 steps (T = 8, as planned)" "eps 0.1: T = 8 fixed (not the T' of (4.6))"
a=$(jq -r .test_accuracy "$T/s/summary.json")
awk -v a="$a" 'BEGIN {exit !(a >= 0.80)}' && ok || bad "default pure-eps method, a9a eps 0.1: accuracy $a < 0.80 (majority 0.7638)"
expect 0 $MPI -np 2 "$DPOPT" train $A9 --eps 0.1 --iters 2 --set algo.c=1 --clip l1:2 --seed 11 --out "$T/s2"
has "$T/out" "^spent  *eps [0-9.]* of 0.1 in 2 steps (T = 2, as planned)" "a key the user set is kept (--iters)"
grep -q "^algo.c = 1 " "$T/s2/config.ini" && ok || bad "a key the user set is kept (algo.c)"
grep -q "^privacy.clip = l1:2 " "$T/s2/config.ini" && ok || bad "a key the user set is kept (--clip)"
expect 0 $MPI -np 2 "$DPOPT" train $A9 --eps 1 --set privacy.neighbours=replace-one --seed 11 --out "$T/r1"
grep -q "^privacy.neighbours = replace-one " "$T/r1/config.ini" && ok || bad "a relation the user set is kept"
expect 0 "$DPOPT" train $A9 --eps 0.1 --set privacy.neighbours=Add-Remove --seed 11 --out "$T/r2"
grep -q "^algo.iters = 8 " "$T/r2/config.ini" && ok || bad "the relation is read case-insensitively (add-remove schedule)"
jq -e '.n == 32561' "$T/r1/summary.json" > /dev/null && ok || bad "replace-one: n is public"
expect 1 "$DPOPT" train $A9 --eps 1 --algo dp-gd --batch 100 --set privacy.neighbours=add-remove --out "$T/bt0"
has "$T/err" "runs on the full batch" "add-remove: a batch of the DP-GD family is refused"
[ ! -e "$T/bt0" ] && ok || bad "--batch under add-remove: refused before the run directory (and the noisy count)"
# add-remove with a declared size: the resume is byte-identical (on a noisy count:
# test_ckpt_count.sh)
expect 5 "$DPOPT" train $A9 --eps 1 --public-n 32000 --seed 3 --checkpoint-every 5 --set run.stop_after=20 --out "$T/ck1"
expect 0 "$DPOPT" train --resume "$T/ck1"
expect 0 "$DPOPT" train $A9 --eps 1 --public-n 32000 --seed 3 --out "$T/ck2"
cmp -s "$T/ck1/model.txt" "$T/ck2/model.txt" && ok || bad "add-remove, --public-n: the resumed model differs"
finish test_utility
