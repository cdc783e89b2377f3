#!/bin/sh
# dpopt admm, the references of 004 Fig. 1 (issue 18), NOT private (seeded), on generated
# logistic data (n = 2000, d = 8, ||u||_1 <= 3), lambda = 0 and A = I so that the problem is
# plain logistic regression, whose optimum L-BFGS (dpopt train) finds independently:
#  - the NON-PRIVATE AccADMM and ADMM solve the unclipped problem: with --clip 0.05 given they
#    still reach the L-BFGS optimum to 1e-6 (a clipped reference ends far above it, which the
#    clipped DP-AccADMM below shows);
#  - 004 Fig. 1's claim: after 40 iterations AccADMM's gap to F* is below a fifth of ADMM's;
#  - DP-AccADMM with tiny noise (eps = 1e5) and a clip that does not bind (C = 3 >= ||u||_2)
#    ends within 1e-5 of AccADMM with its default restart schedule, while Alg. 3 as written
#    (no restart) ends several times further: its momentum accumulates the noise;
#  - --sigma-rule ledger: the run spends its eps to 1e-6 by the ledger's own account (and by
#    the replayed journal), with less noise than eq. (8) for the same (eps, delta).
. "$(dirname "$0")/../lib/testlib.sh"
cd "$T" # runs without --out go to runs/ here
objline() { sed -n 's/^objective *\([-0-9.eE+]*\).*/\1/p' "$1"; }
num() { sed -n "s/.*$2 *\([-0-9.eE+]*\).*/\1/p" "$1" | head -n 1; }

expect 0 "$DPOPT" gen logistic --n 2000 --d 8 --l1-bound 3 --seed 5 "$T/s.txt"
expect 0 "$DPOPT" train --algo lbfgs --no-intercept --lambda 0 --iters 500 --gtol 1e-12 --data "$T/s.txt" --out "$T/lb"
FSTAR=$(sed -n 's/.*"train_objective_nonprivate":\([-0-9.eE+]*\).*/\1/p' "$T/lb/summary.json")
P="$T/s.txt --lambda 0 --row-l2-bound 3 --maxit 3000"
for m in accadmm admm; do
  expect 0 $MPI -np 2 "$DPOPT" admm $P --method $m --clip 0.05
  has "$T/out" "clip        none" "$m: no clipping"
  close "$(objline "$T/out")" "$FSTAR" 1e-6 "$m (unclipped) vs the L-BFGS optimum"
done
expect 0 $MPI -np 2 "$DPOPT" admm $P --method accadmm --clip 0.05
FACC=$(objline "$T/out")
# 004 Fig. 1's claim: in the same (few) iterations AccADMM gets much closer to F* than ADMM
expect 0 $MPI -np 2 "$DPOPT" admm $P --method admm --maxit 40
GA=$(awk -v a="$(objline "$T/out")" -v b="$FSTAR" 'BEGIN {print a - b}')
expect 0 $MPI -np 2 "$DPOPT" admm $P --method accadmm --maxit 40
GC=$(awk -v a="$(objline "$T/out")" -v b="$FSTAR" 'BEGIN {print a - b}')
check "40 iterations: AccADMM gap $GC below a fifth of ADMM's $GA" awk -v a="$GC" -v b="$GA" 'BEGIN {exit !(a >= 0 && a < b / 5)}'
# the test can fail: the clipped problem's solution is far from the optimum
expect 0 $MPI -np 2 "$DPOPT" admm $P --method dpaccadmm --clip 0.05 --eps 1e5 --seed 1
if awk -v a="$(objline "$T/out")" -v b="$FSTAR" 'BEGIN {exit !(a - b > 1e-3)}'; then ok
else bad "clipped DP-AccADMM '$(objline "$T/out")' should end above F* = $FSTAR"; fi

# tiny noise, clip not binding: DP-AccADMM tracks AccADMM (restart schedule 50 and none)
expect 0 $MPI -np 2 "$DPOPT" admm $P --method dpaccadmm --clip 3 --eps 1e5 --seed 1
has "$T/out" "restarts    60 (every 50" "dpaccadmm restarts every 50 by default"
FR=$(objline "$T/out")
close "$FR" "$FACC" 1e-5 "DP-AccADMM (tiny noise, restart 50) vs AccADMM"
# the cause: Alg. 3's momentum carries every step's noise on; even this tiny noise (sigma
# 5e-4) leaves it several times further from AccADMM after 3000 iterations than the restarted
# run: 9.9 / 43 / 13 times at seeds 1 / 2 / 3 (with the exp(-x) loop split in the samplers;
# over 10 at seed 1 before); the check asks for 5
expect 0 $MPI -np 2 "$DPOPT" admm $P --method dpaccadmm --clip 3 --eps 1e5 --seed 1 --restart 0
F0=$(objline "$T/out")
if awk -v a="$F0" -v r="$FR" -v b="$FACC" 'BEGIN {exit !(a - b > 5 * (r > b ? r - b : b - r) && a - b > 1e-5)}'; then ok
else bad "Alg. 3 without restart ($F0) should end further from AccADMM ($FACC) than with ($FR)"; fi
expect 1 "$DPOPT" admm $P --method dpaccadmm --clip 3 --eps 1 --restart -1
expect 1 "$DPOPT" admm $P --method dpaccadmm --clip 3 --eps 1 --sigma-rule paper

# ledger calibration: spends eps (0.5) to 1e-6, less noise than eq. (8)
Q="$T/s.txt --lambda 0 --row-l2-bound 3 --maxit 300 --method dpaccadmm --clip 3 --eps 0.5 --seed 2"
expect 0 $MPI -np 2 "$DPOPT" admm $Q
S8=$(num "$T/out" "sigma"); E8=$(num "$T/out" "spent eps")
expect 0 $MPI -np 2 "$DPOPT" admm $Q --sigma-rule ledger --out "$T/j"
SL=$(num "$T/out" "sigma"); EL=$(num "$T/out" "spent eps")
close "$EL" 0.5 1e-6 "ledger-calibrated run spends its eps"
if awk -v a="$SL" -v b="$S8" -v e="$E8" 'BEGIN {exit !(a > 0 && a < b && e < 0.5)}'; then ok
else bad "ledger sigma $SL should be below eq. (8)'s $S8 (which spends $E8 < 0.5)"; fi
expect 0 "$DPOPT" ledger "$T/j/ledger.jsonl"
has "$T/out" "charges: 301" "301 releases journalled (T + 1)"
close "$(sed -n 's/^spent: *eps = \([-0-9.eE+]*\),.*/\1/p' "$T/out")" 0.5 1e-6 "journal replay spends eps"
finish test_admm_ref
