#!/bin/sh
# CLI end-to-end: argument errors, bad data on every rank, and the same trained model at 1, 2
# and 3 ranks.  Run by mpi_tests/run_mpi.sh (sets MPIRUN and the root/oversubscribe variables).
. "$(dirname "$0")/../lib/testlib.sh"

# --- usage errors: exit 1 with a message naming the problem
expect 0 "$DPOPT" --help
has "$T/out" "Exit status" "top-level help lists exit statuses"
expect 0 "$DPOPT" train --help
has "$T/out" "lbfgs" "train --help lists algorithms"
expect 1 "$DPOPT" train --bogus 1
has "$T/err" "unknown option '--bogus'" "unknown option"
expect 1 "$DPOPT" train --iters
has "$T/err" "needs a value" "missing value"
expect 1 "$DPOPT" train
has "$T/err" "no training data" "missing --data"
expect 1 "$DPOPT" train --data "$S/data/a9a" --algo nosuch
has "$T/err" "unknown algorithm 'nosuch'" "unknown algorithm"
hasnot "$T/err" "did you mean" "no suggestion for a name close to none"
expect 1 "$DPOPT" train --data "$S/data/a9a" --algo dp-ngd-opt
has "$T/err" "unknown algorithm 'dp-ngd-opt': did you mean 'dp-nag-opt'?" "algorithm typo: nearest name"
n=$(grep -c . "$T/err")
check "algorithm typo: one line (got $n)" [ "$n" = 1 ]
expect 1 "$DPOPT" train --data "$S/data/a9a" --iters ten
has "$T/err" "is not an integer" "bad integer"
expect 1 "$DPOPT" frobnicate
has "$T/err" "unknown command" "unknown command"
hasnot "$T/err" "did you mean" "no suggestion for a command close to none"
expect 1 "$DPOPT" trian
has "$T/err" "unknown command 'trian': did you mean 'train'?" "command typo: nearest name"
n=$(grep -c . "$T/err")
check "command typo: one line (got $n)" [ "$n" = 1 ]
printf '[algo]\nname = gd\nthis line is broken\n' > "$T/bad.ini"
expect 1 "$DPOPT" train --config "$T/bad.ini"
has "$T/err" "bad.ini:3" "config error names file:line"

# --- bad data: every rank reports file:line:reason, exit 2, no hang
awk 'NR == 30000 {print "+1 3:1 11:abc"; next} {print}' "$S/data/a9a" > "$T/broken"
expect 2 timeout 60 $MPI -np 3 "$DPOPT" train --data "$T/broken" --iters 1 --out "$T/r0" --quiet
n=$(grep -c "broken:30000" "$T/err")
[ "$n" = 1 ] && ok || { bad "broken:30000 reported once, by rank 0 (got $n)"; cat "$T/err"; }
has "$T/err" "\[rank 2\] error: .*broken:30000" "the error names the rank that found it"
printf '' > "$T/empty"
expect 2 timeout 60 $MPI -np 2 "$DPOPT" info "$T/empty"
has "$T/err" "empty" "empty file"
head -n 2 "$S/data/a9a" > "$T/tiny"
expect 2 timeout 60 $MPI -np 3 "$DPOPT" info "$T/tiny"
has "$T/err" "ranks" "more ranks than rows"
expect 2 "$DPOPT" info "$T/does-not-exist"
has "$T/err" "does-not-exist" "missing file named"

# --- info on a9a
expect 0 timeout 60 $MPI -np 2 "$DPOPT" info "$S/data/a9a"
has "$T/out" "rows *32561" "a9a rows"
has "$T/out" "columns *123" "a9a columns"
has "$T/out" "^NON-PRIVATE: every figure above is read from the rows" "info labels its row norms non-private"

# --- declared row bound is enforced (public bound 3 < sqrt(14))
expect 2 timeout 60 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" --row-l2-bound 3 --iters 1 --out "$T/r1" --quiet
has "$T/err" "over the declared bound" "row bound rejection"

# --- the same model at 1, 2 and 3 ranks (L-BFGS, 30 iterations, lambda 1e-3)
for np in 1 2 3; do
  expect 0 timeout 300 $MPI -np $np "$DPOPT" train --data "$S/data/a9a" --test "$S/data/a9a.t" \
    --algo lbfgs --iters 30 --lambda 1e-3 --row-l2-bound 3.75 --out "$T/run$np" --quiet
done
for np in 2 3; do
  d=$(paste "$T/run1/model.txt" "$T/run$np/model.txt" | grep -v '^#' | \
      awk '{x = $1; y = $2; if (x == "intercept") {x = $2; y = $4}  # the bias line (on by default)
       e = x - y; if (e < 0) e = -e; a = x < 0 ? -x : x; if (a < 1) a = 1; if (e / a > m) m = e / a} END {printf "%.3g", m + 0}')
  awk -v d="$d" 'BEGIN {exit !(d < 1e-10)}' && ok || bad "model at $np ranks differs from 1 rank by $d"
done
for f in trace.csv summary.json model.txt config.ini; do
  [ -s "$T/run2/$f" ] && ok || bad "run directory lacks $f"
done
has "$T/run2/trace.csv" "objective_nonprivate" "trace marks non-private columns"
has "$T/run2/summary.json" "test_accuracy" "summary has test accuracy"
# the held-out columns come last; the last row is the final model's, which summary.json scores
hdr=$(grep -v '^#' "$T/run2/trace.csv" | head -n 1)
[ "$hdr" = "iter,time_s,objective_nonprivate,gradnorm_nonprivate,f_minus_fstar_nonprivate,eps_spent,heldout_loss_nonprivate,heldout_accuracy_nonprivate" ] &&
  ok || bad "trace header with --test: $hdr"
close "$(tail -n 1 "$T/run2/trace.csv" | cut -d, -f8)" "$(jq -r .test_accuracy "$T/run2/summary.json")" 1e-12 \
  "trace: the last held-out accuracy is the model's test accuracy"
close "$(tail -n 1 "$T/run2/trace.csv" | cut -d, -f7)" "$(jq -r .test_loss "$T/run2/summary.json")" 1e-12 \
  "trace: the last held-out loss is the model's test loss"
acc=$(sed -n 's/.*"test_accuracy": *\([0-9.]*\).*/\1/p' "$T/run2/summary.json")
awk -v a="$acc" 'BEGIN {exit !(a > 0.84 && a < 0.86)}' && ok || bad "a9a test accuracy $acc not in (0.84, 0.86)"

# --- convert to binary and train again: same model
expect 0 timeout 60 $MPI -np 2 "$DPOPT" convert "$S/data/a9a" "$T/a9a.bin"
expect 0 timeout 300 $MPI -np 3 "$DPOPT" train --data "$T/a9a.bin" --algo lbfgs --iters 30 \
  --lambda 1e-3 --row-l2-bound 3.75 --out "$T/runbin" --quiet
d=$(paste "$T/run1/model.txt" "$T/runbin/model.txt" | grep -v '^#' | \
    awk '{x = $1; y = $2; if (x == "intercept") {x = $2; y = $4}  # the bias line (on by default)
       e = x - y; if (e < 0) e = -e; a = x < 0 ? -x : x; if (a < 1) a = 1; if (e / a > m) m = e / a} END {printf "%.3g", m + 0}')
awk -v d="$d" 'BEGIN {exit !(d < 1e-10)}' && ok || bad "model from binary differs by $d"

# --- gen logistic: rows within the declared L1 bound (001 Sec. 5)
expect 0 "$DPOPT" gen logistic --n 2000 --d 20 --seed 3 "$T/syn.svm"
expect 0 timeout 60 $MPI -np 2 "$DPOPT" info "$T/syn.svm"
l1=$(sed -n 's/^row L1 *max \([0-9.e+-]*\).*/\1/p' "$T/out")
awk -v a="$l1" 'BEGIN {exit !(a > 5 && a <= 20)}' && ok || bad "synthetic max L1 norm $l1 not in (5, 20]"

# --version names the build of the vector kernels this CPU runs (the benchmarks' ratios depend on
# it) and the MPI library, once (rank 0) under mpirun
expect 0 $MPI -np 2 "$DPOPT" --version
has "$T/out" "^dpopt [0-9]" "--version: the package version first"
has "$T/out" "^kernels: \(AVX-512\|AVX2\|generic\) " "--version: the kernels' build"
has "$T/out" "^MPI: ." "--version: the MPI library"
check "--version printed once under mpirun -np 2" [ "$(grep -c '^kernels:' "$T/out")" = 1 ]
# MPI start-up on one node asks for Open MPI's ob1 layer (main.c: the cm layer's probing tripled
# MPI_Init's time), unless the user chose a layer (the environment, or --mca pml / mtl)
if [ -z "${OMPI_MCA_pml:-}${OMPI_MCA_mtl:-}" ] && ! grep -qs '^ *pml *= *[^ ^]' \
    "$HOME/.openmpi/mca-params.conf" /etc/openmpi/openmpi-mca-params.conf; then
  has "$T/out" "^MPI start-up: pml ob1 (every rank on this node" "--version: ob1 on one node"
  expect 0 env OMPI_MCA_pml=ob1 $MPI -np 2 "$DPOPT" --version
  hasnot "$T/out" "^MPI start-up" "--version: the environment's pml is the user's"
  expect 0 $MPI --mca mtl ^psm -np 1 "$DPOPT" --version
  hasnot "$T/out" "^MPI start-up" "--version: --mca mtl is the user's choice"
  # a parameter file that excludes other layers leaves the choice to dpopt (one that excludes
  # ob1 is the user's choice: main.c; not run, since this Open MPI has no other layer that
  # starts here); parameter files of the user's own (mca_base_param_files) are theirs
  mkdir -p "$T/h/.openmpi"
  echo "pml = ^cm" > "$T/h/.openmpi/mca-params.conf"
  expect 0 env HOME="$T/h" $MPI -np 1 "$DPOPT" --version
  has "$T/out" "^MPI start-up: pml ob1" "--version: a file's pml = ^cm leaves ob1 to dpopt"
  : > "$T/mca.conf"
  expect 0 env OMPI_MCA_mca_base_param_files="$T/mca.conf" $MPI -np 1 "$DPOPT" --version
  hasnot "$T/out" "^MPI start-up" "--version: the user's mca_base_param_files"
  expect 0 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" --algo gd --iters 3 --row-l2-bound 3.75 --quiet \
    --out "$T/ob1"
fi

finish test_cli
