#!/bin/sh
# dpopt predict / eval (issue 14): a saved model applied to sharded data gives exactly train's
# test metric at 1 and 3 ranks; prediction files; dimension checks (a file that does not
# match the model: rows beyond it, a schema or dense file of another width); --x0 FILE warm start;
# --progress / --quiet under mpirun; predictions on stdout; --zero-based svmlight files; the
# names "data loss" and "objective F".
. "$(dirname "$0")/../lib/testlib.sh"
A="$S/data/a9a" AT="$S/data/a9a.t"

expect 0 "$DPOPT" train --data "$A" --test "$AT" --algo lbfgs --iters 8 --quiet --out "$T/r1"
has "$T/out" "train data loss" "stdout names the data term"
has "$T/out" "train objective F" "stdout names the objective"
has "$T/r1/summary.json" "train_objective_nonprivate" "summary has the objective"
has "$T/r1/trace.csv" "objective_nonprivate" "trace names F the objective"
acc=$(sed -n 's/.*"test_accuracy": *\([^,}]*\).*/\1/p' "$T/r1/summary.json")
tloss=$(sed -n 's/.*"test_loss": *\([^,}]*\).*/\1/p' "$T/r1/summary.json")
fobj=$(sed -n 's/.*"train_objective_nonprivate": *\([^,}]*\).*/\1/p' "$T/r1/summary.json")
flast=$(grep -v '^#' "$T/r1/trace.csv" | tail -n 1 | cut -d, -f3)
close "$fobj" "$flast" 1e-12 "summary's objective is the trace's F"
same() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && a + 0 == b + 0)}'; }

for np in 1 3; do
  expect 0 $MPI -np $np "$DPOPT" eval --run "$T/r1" --data "$AT"
  e=$(awk '$1 == "accuracy" {print $2}' "$T/out")
  check "eval -np $np accuracy $e == train's test_accuracy $acc" same "$e" "$acc"
  l=$(awk '$1 == "data" && $2 == "loss" {print $3}' "$T/out")
  close "$l" "$tloss" 1e-12 "eval -np $np data loss vs train's test_loss"
  has "$T/out" "objective F" "eval prints F with the run's lambda"
done

expect 0 $MPI -np 3 "$DPOPT" predict --model-file "$T/r1/model.txt" --data "$AT" --out "$T/p.txt"
has "$T/out" "predictions" "predict reports its file"
e=$(awk '$1 == "accuracy" {print $2}' "$T/out")
hasnot "$T/out" "objective F" "no lambda, no objective"
n=$(wc -l < "$T/p.txt" | tr -d ' ')
check "predictions: $n lines (want 16281)" [ "$n" = 16281 ]
pa=$(cut -d' ' -f1 "$AT" | paste -d' ' - "$T/p.txt" |
     awk '{n++; if ($1 + 0 == $2 + 0) c++; if ($3 < 0 || $3 > 1 || ($3 >= 0.5) != ($2 > 0)) bad++}
          END {if (bad) print "bad"; else printf "%.17g\n", c / n}')
check "accuracy of the prediction file $pa == eval's $e" same "$pa" "$e"
# an old, longer file is replaced, not overwritten in place
expect 0 $MPI -np 2 "$DPOPT" predict --run "$T/r1" --data "$AT" --out "$T/p.txt"
n=$(wc -l < "$T/p.txt" | tr -d ' ')
check "rewritten predictions: $n lines" [ "$n" = 16281 ]

printf '# three coefficients\n3\n1\n2\n3\n' > "$T/m3.txt"
expect 2 $MPI -np 2 "$DPOPT" eval --model-file "$T/m3.txt" --data "$AT"
has "$T/err" "m3.txt has 3 coefficients but data .*a9a.t has 123 features (declared by .*a9a.t.schema)" \
  "mismatch names both, and where the data's width came from"
# A data file that does not match the model is refused (exit 2), one message naming both:
# a sparse file whose rows go beyond the model (the first such row named), a schema or a
# dense file of another width.  A sparse file whose rows leave the last features unused fits.
awk 'NR <= 50' "$AT" > "$T/head.svm" # no schema beside it
awk 'BEGIN {print 20; for (j = 1; j <= 20; j++) print 0.01 * j}' > "$T/m20.txt"
expect 2 $MPI -np 2 "$DPOPT" eval --model-file "$T/m20.txt" --data "$T/head.svm"
has "$T/err" "data .*head.svm does not match model .*m20.txt (d=20.*head.svm:1: feature index 21 > " \
  "a row beyond a 20-feature model: both files and the first such row"
n=$(grep -c "error:" "$T/err")
check "one message for the mismatch (got $n)" [ "$n" = 1 ]
awk '{printf "%s", $1; for (i = 2; i <= NF; i++) {split($i, f, ":"); if (f[1] + 0 <= 20) printf " %s", $i}
      print ""}' "$T/head.svm" > "$T/w20.svm"
expect 0 "$DPOPT" eval --run "$T/r1" --data "$T/w20.svm"
has "$T/out" "w20.svm: 50 rows x 123 features" "sparse rows within the model's first 20 features fit"
printf '[schema]\nfeatures = 20\n' > "$T/w20.svm.schema"
expect 2 $MPI -np 2 "$DPOPT" predict --run "$T/r1" --data "$T/w20.svm" --out "$T/p20.txt"
has "$T/err" "model .*r1/model.txt has 123 coefficients but data .*w20.svm has 20 features (declared by .*w20.svm.schema)" \
  "a schema of another width is refused"
check "no predictions written" [ ! -e "$T/p20.txt" ]
awk 'NR <= 30 {printf "%d", ($1 > 0); for (j = 1; j <= 20; j++) printf ",%d", (NR + j) % 2; print ""}' \
  "$AT" > "$T/w20.csv"
expect 2 "$DPOPT" eval --run "$T/r1" --data "$T/w20.csv"
has "$T/err" "123 coefficients but data .*w20.csv has 20 features (fixed by the file's columns or header)" \
  "a dense 20-column file vs the a9a model"
# --out - or no --out: the predictions alone on stdout (in row order from every rank), the
# metrics on stderr
expect 0 $MPI -np 3 "$DPOPT" predict --run "$T/r1" --data "$AT" --out -
same_file() { if cmp -s "$1" "$2"; then ok; else bad "$3: $1 and $2 differ"; fi; }
same_file "$T/out" "$T/p.txt" "predict --out - (np 3) prints the prediction file"
has "$T/err" "^accuracy" "--out -: the metrics on stderr"
has "$T/err" "predictions *stdout (16281 lines" "--out -: stderr names stdout"
expect 0 $MPI -np 2 "$DPOPT" predict --run "$T/r1" --data "$AT" --quiet
same_file "$T/out" "$T/p.txt" "predict without --out (np 2) prints the prediction file"
check "--quiet: no metrics on stderr" [ ! -s "$T/err" ]

# svmlight files written zero-based (scikit-learn's dump_svmlight_file default): refused with
# a hint, read with --zero-based as the same rows
awk '{printf "%s", $1; for (i = 2; i <= NF; i++) {split($i, f, ":"); printf " %d:%s", f[1] - 1, f[2]}
      print ""}' "$T/head.svm" > "$T/z.svm"
expect 2 "$DPOPT" eval --run "$T/r1" --data "$T/z.svm"
has "$T/err" "z.svm:[0-9]*: feature index 0 < 1 .*needs --zero-based" "index 0 suggests --zero-based"
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/r1" --data "$T/head.svm"
cp "$T/out" "$T/e1"
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/r1" --data "$T/z.svm" --zero-based
z=$(awk '$1 == "accuracy" || $2 == "loss" {print}' "$T/out")
o=$(awk '$1 == "accuracy" || $2 == "loss" {print}' "$T/e1")
check "--zero-based reads the rows of the one-based file (got '$z', want '$o')" [ -n "$z" -a "$z" = "$o" ]
expect 0 "$DPOPT" predict --run "$T/r1" --data "$T/z.svm" --zero-based --out "$T/pz.txt"
expect 0 "$DPOPT" predict --run "$T/r1" --data "$T/head.svm" --out "$T/p1.txt"
same_file "$T/pz.txt" "$T/p1.txt" "zero-based predictions"
printf -- '-1 0:1 123:1\n' > "$T/z123.svm"
expect 2 "$DPOPT" eval --run "$T/r1" --data "$T/z123.svm" --zero-based
has "$T/err" "feature index 123 " "zero-based: index 123 is beyond a 123-feature model"

# warm start: F at iteration 0 is the previous run's final F
expect 0 "$DPOPT" train --data "$A" --algo lbfgs --iters 3 --quiet --x0 "$T/r1/model.txt" --out "$T/r2"
f0=$(grep -v '^#' "$T/r2/trace.csv" | awk -F, '$1 == "0" {print $3}')
check "--x0 FILE: F(x_0) $f0 == previous final F $flast" [ -n "$f0" -a "$f0" = "$flast" ]
expect 2 "$DPOPT" train --data "$A" --algo lbfgs --iters 3 --quiet --x0 "$T/m3.txt" --out "$T/r3"
has "$T/err" "m3.txt: dimension mismatch" "--x0 FILE of another dimension"
expect 0 "$DPOPT" train --data "$A" --algo lbfgs --iters 2 --quiet --x0 0.01 --out "$T/r4"

# progress under mpirun (stderr is a pipe there)
expect 0 $MPI -np 2 "$DPOPT" train --data "$A" --algo lbfgs --iters 3 --progress --out "$T/r5"
has "$T/err" "\[dpopt\] lbfgs: iteration 3/3 (100%)" "--progress prints progress lines"
expect 0 $MPI -np 2 "$DPOPT" train --data "$A" --algo lbfgs --iters 3 --progress --quiet --out "$T/r6"
check "--quiet: nothing on stderr" [ ! -s "$T/err" ]
finish test_predict
