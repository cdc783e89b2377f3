#!/bin/sh
# 003's rate in quick form (issue 18; jobs/sco/excess_vs_n.sh is the full job): on the job's
# synthetic data (gen logistic, d = 20, ||u||_1 <= 5, 10000 held-out rows), Phased-SGD with
# the ledger-calibrated noise (eps = 1, delta = 1e-5, D = 8) at n = 2000, 8000, 32000: the
# excess held-out loss over the best point of K (jobs/sco/bestk, non-private) falls with n:
# the least-squares slope of the mean over five seeds of log(excess) against log(n) lies in
# Feldman, Koren and Talwar (2020)'s -1/2 to -1, with a tolerance of 0.1 on the flat side
# and 0.2 on the steep side (five seeds leave a spread of about 0.1 in the mean slope; one
# seed alone ranged from -0.25 to -0.63).  Seeded: NOT private.
. "$(dirname "$0")/../lib/testlib.sh"
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
  for seed in 1 2 3 4 5; do
    expect 0 "$DPOPT" train --no-intercept --data "$T/d$n.txt" --test "$T/test.txt" --dim 20 \
      --lambda 1e-4 --row-l2-bound 5 --algo phased-sgd --set algo.calibrate=ledger --iters 1000000 \
      --eps 1 --delta 1e-5 --set privacy.accountant=rdp --set algo.D=8 --seed $seed --out "$T/r$n.$seed" \
      --trace-every 0 --no-trace-loss --quiet
    tl=$(sed -n 's/.*"test_loss":\([^,}]*\).*/\1/p' "$T/r$n.$seed/summary.json")
    echo "$n $seed $tl $FK" | awk '{print $1, $2, $3 - $4}' >> "$T/ex"
  done
done
cat "$T/ex"
# the mean over the seeds of log excess at each n, then the least-squares slope against log n
slope=$(awk '$3 > 0 {m[$1] += log($3); c[$1]++}
  END {for (n in m) {x = log(n); y = m[n] / c[n]; k++; sx += x; sy += y; sxx += x * x; sxy += x * y}
       if (k == 3) printf "%.4f", (k * sxy - sx * sy) / (k * sxx - sx * sx)}' "$T/ex")
check "excess > 0 in all 15 runs" [ "$(awk '$3 > 0' "$T/ex" | wc -l)" -eq 15 ]
check "slope of mean log excess vs log n: $slope in [-1.2, -0.4]" \
  awk -v s="$slope" 'BEGIN {exit !(s != "" && s + 0 <= -0.4 && s + 0 >= -1.2)}'
echo "slope $slope"
finish test_sco_slope
