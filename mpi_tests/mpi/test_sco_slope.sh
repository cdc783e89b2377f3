#!/bin/sh
# 003's rate in quick form (issue 18; jobs/sco/excess_vs_n.sh is the full job): on the job's
# synthetic data (gen logistic, d = 20, ||u||_1 <= 5, 10000 held-out rows), Phased-SGD with
# the ledger-calibrated noise (eps = 1, delta = 1e-5, D = 8) at n = 2000, 8000, 32000: the
# excess held-out loss over the best point of K (jobs/sco/bestk, non-private) falls with n,
# with a least-squares slope of log(excess) against log(n) below -0.3 (003 predicts -1/2 to
# -1; measured -0.58).  Seeded: NOT private.
. "$(dirname "$0")/testlib.sh"
export OPENBLAS_NUM_THREADS=1
expect 0 "$DPOPT" gen logistic --n 42000 --d 20 --l1-bound 5 --seed 11 "$T/all.txt"
head -n 32000 "$T/all.txt" > "$T/train.txt"
tail -n 10000 "$T/all.txt" > "$T/test.txt"
expect 0 "$B/jobs/sco/bestk" --data "$T/test.txt" --dim 20 --diam 8
FK=$(awk '/^F_K/ {print $2}' "$T/out")
has "$T/out" "NON-PRIVATE" "bestk: labelled non-private"
: > "$T/ex"
for n in 2000 8000 32000; do
  head -n $n "$T/train.txt" > "$T/d$n.txt"
  expect 0 "$DPOPT" train --no-intercept --data "$T/d$n.txt" --test "$T/test.txt" --dim 20 \
    --lambda 1e-4 --row-l2-bound 5 --algo phased-sgd --set algo.calibrate=ledger --iters 1000000 \
    --eps 1 --delta 1e-5 --set privacy.accountant=rdp --set algo.D=8 --seed 1 --out "$T/r$n" \
    --trace-every 0 --no-trace-loss --quiet
  tl=$(sed -n 's/.*"test_loss":\([^,}]*\).*/\1/p' "$T/r$n/summary.json")
  echo "$n $tl $FK" | awk '{print $1, $2 - $3}' >> "$T/ex"
done
slope=$(awk '$2 > 0 {x = log($1); y = log($2); k++; sx += x; sy += y; sxx += x * x; sxy += x * y}
  END {if (k == 3) printf "%.4f", (k * sxy - sx * sy) / (k * sxx - sx * sx)}' "$T/ex")
check "excess $(awk '{printf "%s ", $2}' "$T/ex")> 0 at each n" [ "$(awk '$2 > 0' "$T/ex" | wc -l)" -eq 3 ]
check "slope of log excess vs log n: $slope < -0.3" awk -v s="$slope" 'BEGIN {exit !(s != "" && s + 0 < -0.3)}'
echo "slope $slope"
finish test_sco_slope
