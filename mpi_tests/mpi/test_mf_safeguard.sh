#!/bin/sh
# HAMSI safeguards and failed runs (issue 15).
#  - rank 50 on generated ratings: without the safeguards the first quasi-Newton epoch
#    diverges (epoch 7, the issue's symptom); with the defaults the run finishes, finite;
#  - deliberately aggressive steps (--sigma0 50, --eta 0.02) diverge without the safeguards
#    and finish with a finite, improved RMSE with them (epochs undone, step scale halved);
#  - with --repro the safeguards' decisions, hence the factors, do not depend on the ranks;
#  - a failing run leaves trace.csv (rows written as the run went), summary.json that parses
#    (failed, failed_epoch, the last good point's epoch and RMSE), X1.txt, X2t.txt and FAILED;
#  - `dpopt gen ratings --realistic` keeps the size and has >= 20 ratings per user and biases.
. "$(dirname "$0")/testlib.sh"
R="$T/r.txt"
OFF="--step-cap 0 --reject-tol -1"
expect 0 "$DPOPT" gen ratings --users 300 --items 500 --ratings 20000 "$R"
jqt() { jq -e "$1" "$2" >/dev/null; }
finite() { jqt "$2 | (isnan or isinfinite or . == null) | not" "$1"; }

# ---- the failing run first: it shows the case is real
expect 4 $MPI -np 2 "$DPOPT" mf --rank 50 --epochs 20 $OFF --out "$T/off" "$R"
has "$T/err" "diverged at epoch 7" "rank 50 without safeguards diverges at epoch 7"
check "FAILED left" test -s "$T/off/FAILED"
has "$T/off/FAILED" "last good point (end of epoch 6)" "FAILED names the last good epoch"
check "summary.json parses" jqt . "$T/off/summary.json"
check "summary says failed" jqt '.failed == true and .failed_epoch == 7 and .epochs == 6' \
  "$T/off/summary.json"
check "summary holds the error" jqt '.error | test("diverged")' "$T/off/summary.json"
check "last good point has a finite RMSE" finite "$T/off/summary.json" .train_rmse_nonprivate
check "X1.txt of the last good point" test -s "$T/off/X1.txt"
check "X2t.txt of the last good point" test -s "$T/off/X2t.txt"
# trace.csv: header, then one row per evaluated epoch before the failure (1..6)
grep -v '^#' "$T/off/trace.csv" >"$T/trace"
check "trace.csv header" test "$(head -n 1 "$T/trace")" = \
  "epoch,t_train,t_wall,train_rmse_nonprivate,test_rmse,sigma,npairs"
check "trace.csv rows 1..6" test "$(tail -n +2 "$T/trace" | cut -d, -f1 | tr '\n' ' ')" = "1 2 3 4 5 6 "
check "trace.csv rows parse" awk -F, 'NR > 1 && (NF != 7 || $4 + 0 != $4) {exit 1}' "$T/trace"

# ---- the same run with the defaults: no divergence
expect 0 $MPI -np 2 "$DPOPT" mf --rank 50 --epochs 20 --out "$T/on" "$R"
check "rank 50 with safeguards: not failed" jqt '.failed == false and .epochs == 20' "$T/on/summary.json"
check "rank 50 with safeguards: finite held-out RMSE" finite "$T/on/summary.json" .test_rmse
check "no FAILED on success" test ! -e "$T/on/FAILED"

# ---- aggressive steps
for A in "--sigma0 50" "--eta 0.02"; do
  expect 4 $MPI -np 2 "$DPOPT" mf --epochs 20 $A $OFF "$R"
  expect 0 $MPI -np 2 "$DPOPT" mf --epochs 20 $A --out "$T/agg" "$R"
  S="$T/agg/summary.json"
  check "$A: safeguard acted" jqt '.epochs_undone > 0' "$S"
  check "$A: finite RMSE" finite "$S" .test_rmse
  check "$A: training RMSE improved" jqt '.train_rmse_nonprivate < 0.8 * .train_rmse_initial_nonprivate' "$S"
  rm -rf "$T/agg"
done
# ---- safeguard decisions are rank-independent: with --repro, K = 4 strata on 1 and 2 ranks
# give the same factors bit for bit while epochs are being undone
for P in 1 2; do
  expect 0 $MPI -np $P "$DPOPT" mf --strata 4 --sigma0 50 --epochs 10 --repro --out "$T/rp$P" "$R"
done
check "repro run undid epochs" jqt '.epochs_undone > 0' "$T/rp1/summary.json"
check "repro with safeguards: X1 identical on 1 and 2 ranks" cmp -s "$T/rp1/X1.txt" "$T/rp2/X1.txt"
check "repro with safeguards: X2t identical on 1 and 2 ranks" cmp -s "$T/rp1/X2t.txt" "$T/rp2/X2t.txt"

# ---- gen ratings --realistic (MovieLens-like): same size, >= 20 ratings per user, biases
expect 0 "$DPOPT" gen ratings --users 300 --items 500 --ratings 20000 --realistic "$T/real.txt"
check "realistic: 20000 ratings" test "$(wc -l <"$T/real.txt")" -eq 20000
check "realistic: every user has >= 20 ratings" awk -F'::' '{n[$1]++} END {k = 0; for (u in n) {k++; if (n[u] < 20) exit 1}; exit k != 300}' "$T/real.txt"
# user means spread (biases): sd of the user means well above the default generator's
awk -F'::' '{s[$1] += $3; n[$1]++} END {for (u in s) {m = s[u] / n[u]; a += m; b += m * m; k++}
  print sqrt(b / k - (a / k) ^ 2)}' "$T/real.txt" >"$T/usd"
check "realistic: user bias spread $(cat "$T/usd") > 0.25" awk '{exit !($1 > 0.25)}' "$T/usd"
finish test_mf_safeguard
