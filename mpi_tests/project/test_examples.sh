#!/bin/sh
# The examples/ programs (issue 17), built by make check, run under mpirun and checked:
#   ex3_eval        a model saved by `dpopt train` evaluated by the example gives, at 1 and 3
#                   ranks, train's test accuracy exactly and `dpopt eval`'s loss and objective;
#   ex4_objective   a user objective (squared hinge) solved by L-BFGS: the example's own
#                   gradient sum vanishes at the result (its exit status), on 2 ranks;
#   ex5_accountant  RDP of the subsampled Gaussian and its (eps, delta) against the values
#                   published in TF Privacy's and Opacus's tests (its exit status).
. "$(dirname "$0")/../lib/testlib.sh"
A="$S/data/a9a" AT="$S/data/a9a.t" E="$B/examples"
same() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && a + 0 == b + 0)}'; }

expect 0 "$DPOPT" train --data "$A" --test "$AT" --algo lbfgs --iters 8 --quiet --out "$T/r1"
acc=$(sed -n 's/.*"test_accuracy": *\([^,}]*\).*/\1/p' "$T/r1/summary.json")
expect 0 "$DPOPT" eval --run "$T/r1" --data "$AT"
eloss=$(awk '$1 == "data" && $2 == "loss" {print $3}' "$T/out")
eobj=$(awk '$1 == "objective" && $2 == "F" {print $3}' "$T/out")
for np in 1 3; do
  expect 0 $MPI -np $np "$E/ex3_eval" "$T/r1/model.txt" "$AT"
  has "$T/out" "16281 rows, 123 features" "ex3 -np $np reads the whole test set"
  a=$(awk '$1 == "accuracy" {print $2}' "$T/out")
  check "ex3 -np $np accuracy $a == train's test_accuracy $acc" same "$a" "$acc"
  close "$(awk '$1 == "data" {print $3}' "$T/out")" "$eloss" 1e-12 "ex3 -np $np loss vs dpopt eval"
  close "$(awk '$1 == "objective" {print $2}' "$T/out")" "$eobj" 1e-12 "ex3 -np $np F vs dpopt eval"
done
printf '+1 1:1 200:1\n-1 2:1\n' > "$T/wide.svm"
expect 1 $MPI -np 2 "$E/ex3_eval" "$T/r1/model.txt" "$T/wide.svm"
has "$T/err" "ex3_eval: data .* does not match model" "ex3 refuses data of another feature space"
n=$(grep -c "ex3_eval:" "$T/err")
check "ex3 prints its error once ($n)" [ "$n" = 1 ]

expect 0 $MPI -np 2 "$E/ex4_objective" "$A"
has "$T/out" "ex4_objective: sqhinge, [0-9]* L-BFGS iterations, max |grad F(x\*)| = " "ex4 reports"

expect 0 $MPI -np 1 "$E/ex5_accountant"
has "$T/out" "eps 7.329" "ex5 prints Opacus's eps to 3 decimals"
n=$(grep -c "RDP" "$T/out")
check "ex5 checks three TF Privacy RDP values ($n)" [ "$n" = 3 ]
finish test_examples
