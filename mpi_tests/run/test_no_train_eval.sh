#!/bin/sh
# --no-train-eval (run.no_train_eval): no final pass over the training rows.  Seeded, with a
# test set: the same model and the same test loss and accuracy as without it; summary.json's
# train_*_nonprivate are null (not a number computed on no rows) and stdout says why; without
# the flag they are the evaluation's numbers.
. "$(dirname "$0")/../lib/testlib.sh"
C="--data $S/data/a9a --test $S/data/a9a.t --algo dp-sgd-rdp --eps 1 --delta 1e-5 --row-l2-bound 3.75 --batch 256 --epochs 0.3 --seed 3 --quiet --no-trace-loss"
expect 0 $MPI -np 2 "$DPOPT" train $C --out "$T/a"
cp "$T/out" "$T/out_a"
expect 0 $MPI -np 2 "$DPOPT" train $C --no-train-eval --out "$T/b"
check "the same model" cmp -s "$T/a/model.txt" "$T/b/model.txt"
has "$T/b/summary.json" '"train_loss_nonprivate":null' "no train loss"
has "$T/b/summary.json" '"train_accuracy_nonprivate":null' "no train accuracy"
has "$T/out" '^train metrics   not evaluated (--no-train-eval)' "stdout says why"
hasnot "$T/out" '^train data loss' "no train loss printed"
has "$T/out_a" '^train data loss 0\.[0-9]' "without the flag: the train loss"
has "$T/a/summary.json" '"train_loss_nonprivate":0\.[0-9]' "without the flag: a number"
ta=$(grep -o '"test_loss":[^,]*' "$T/a/summary.json")
tb=$(grep -o '"test_loss":[^,]*' "$T/b/summary.json")
check "the same test loss ($ta, $tb)" [ -n "$ta" -a "$ta" = "$tb" ]
aa=$(grep -o '"test_accuracy":[^,]*' "$T/a/summary.json")
ab=$(grep -o '"test_accuracy":[^,]*' "$T/b/summary.json")
check "the same test accuracy ($aa, $ab)" [ -n "$aa" -a "$aa" = "$ab" ]
finish test_no_train_eval
