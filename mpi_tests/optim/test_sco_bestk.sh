#!/bin/sh
# Issue 18: the reference of jobs/sco/excess_vs_n.sh is the best point of the feasible ball
# K = {||x|| <= D/2} (build/jobs/sco/bestk, non-private, on held-out data).  Checked here on
# the first 3000 rows of a9a.t with lambda = 0.01: with K large the minimizer is interior and
# F_K is dpopt newton's F*; with K small the constraint is active (||x_K|| = D/2) and F_K > F*;
# bestk's own fixed-point check x = P_K(x - t grad F(x)) passes in both (exit 0) and fails after
# 2 iterations (exit 3); 1 and 2 ranks agree.
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1
head -n 3000 "$S/data/a9a.t" > "$T/a"
BK="$B/jobs/sco/bestk"
val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
expect 0 $MPI -np 1 "$DPOPT" newton --lambda 0.01 --dim 123 "$T/a"
fs=$(awk '/^F\*/ { print $2 }' "$T/out")
expect 0 $MPI -np 1 "$BK" --data "$T/a" --dim 123 --diam 100 --lambda 0.01
cp "$T/out" "$T/big1"
close "$(val F_K "$T/big1")" "$fs" 1e-10 "interior K: F_K = newton F*"
check "interior K: ||x_K|| < D/2" awk -v x="$(val norm "$T/big1")" 'BEGIN { exit !(x < 49) }'
check "interior K: residual <= 1e-7" awk -v x="$(val residual "$T/big1")" 'BEGIN { exit !(x <= 1e-7) }'
expect 0 $MPI -np 2 "$BK" --data "$T/a" --dim 123 --diam 100 --lambda 0.01
close "$(val F_K "$T/out")" "$(val F_K "$T/big1")" 1e-12 "1 and 2 ranks agree"
expect 0 $MPI -np 1 "$BK" --data "$T/a" --dim 123 --diam 1 --lambda 0.01
close "$(val norm "$T/out")" 0.5 1e-12 "small K: the constraint is active"
check "small K: F_K above the unconstrained F*" awk -v a="$(val F_K "$T/out")" -v b="$fs" 'BEGIN { exit !(a > b + 1e-3) }'
expect 3 $MPI -np 1 "$BK" --data "$T/a" --dim 123 --diam 100 --lambda 0.01 --iters 2
check "2 iterations: the fixed-point check fails" awk -v x="$(val residual "$T/out")" 'BEGIN { exit !(x > 1e-7) }'
expect 2 $MPI -np 1 "$BK" --data "$T/a" --dim 123
finish test_sco_bestk
