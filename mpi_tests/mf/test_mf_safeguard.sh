#!/bin/sh
# HAMSI safeguards and failed runs (issue 15).
#  - rank 50 on generated ratings, plain model: without the safeguards the first quasi-Newton
#    epoch diverged with the latest pair's sigma (epoch 5, the issue's symptom); with the
#    only-shrinking sigma it finishes, finite and improved (metric diag(deg), eta 0.5), and so
#    it does with the defaults (safeguards on);
#  - the biased default model at rank 50 without the safeguards diverges (epoch 15);
#  - deliberately aggressive steps (--sigma0 50, --eta 0.02) diverge without the safeguards
#    and finish with a finite, improved RMSE with them (epochs undone, step scale halved,
#    or the steps capped);
#  - mb-GD: --sigma0 50 diverges without its safeguard (--reject-tol -1) and finishes, finite
#    and improved, with it, under STRATA-B and COLOR;
#  - with --repro the safeguards' decisions, hence the factors, do not depend on the ranks;
#  - a failing run (that one) leaves trace.csv (rows written as the run went), summary.json that parses
#    (failed, failed_epoch, the last good point's epoch and RMSE), X1.txt, X2t.txt and FAILED;
#  - `dpopt gen ratings --realistic` keeps the size and has >= 20 ratings per user and biases;
#  - rank 50 with --biases on realistic ratings diverges without the safeguards (epoch 10) and
#    with the defaults runs 60 epochs with a finite held-out RMSE that went down and stayed;
#  - COLOR at rank 50 diverges without the safeguards (epoch 9); with the step caps alone its training
#    RMSE falls in every epoch (quasi-Newton ones too), at 1 and 2 ranks and from --sigma0 50;
#  - a run ending right after an epoch that raised the RMSE returns the start of that epoch
#    (biased model);
#  - the evaluation budget (default 4% of the wall time) changes which epochs are evaluated,
#    never the factors, nor the point early stopping keeps.
. "$(dirname "$0")/../lib/testlib.sh"
R="$T/r.txt"
OFF="--step-cap 0 --reject-tol -1"
expect 0 "$DPOPT" gen ratings --users 300 --items 500 --ratings 20000 "$R"
RR="$T/real.txt"
expect 0 "$DPOPT" gen ratings --users 300 --items 500 --ratings 20000 --realistic "$RR"
jqt() { jq -e "$1" "$2" >/dev/null; }
finite() { jqt "$2 | (isnan or isinfinite or . == null) | not" "$1"; }

# ---- the failing run first: it shows the case is real (the biased model keeps the latest
# pair's sigma; at epochs 11..14 its RMSE rises to 1e13, epoch 15 is not finite)
expect 4 $MPI -np 2 "$DPOPT" mf --rank 50 --biases --early-stop 0 --epochs 20 $OFF --eval-budget 0 --out "$T/off" "$RR"
has "$T/err" "diverged at epoch 15" "rank 50 biased without safeguards diverges at epoch 15"
check "FAILED left" test -s "$T/off/FAILED"
has "$T/off/FAILED" "last good point (end of epoch 14)" "FAILED names the last good epoch"
check "summary.json parses" jqt . "$T/off/summary.json"
check "summary says failed" jqt '.failed == true and .failed_epoch == 15 and .epochs == 14' \
  "$T/off/summary.json"
check "summary holds the error" jqt '.error | test("diverged")' "$T/off/summary.json"
check "last good point has a finite RMSE" finite "$T/off/summary.json" .train_rmse_nonprivate
check "X1.txt of the last good point" test -s "$T/off/X1.txt"
check "X2t.txt of the last good point" test -s "$T/off/X2t.txt"
# trace.csv: header, then one row per evaluated epoch before the failure (1..14)
grep -v '^#' "$T/off/trace.csv" >"$T/trace"
check "trace.csv header" test "$(head -n 1 "$T/trace")" = \
  "epoch,t_train,t_wall,train_rmse_nonprivate,test_rmse,sigma,npairs"
check "trace.csv rows 1..14" test "$(tail -n +2 "$T/trace" | cut -d, -f1 | tr '\n' ' ')" = "$(seq -s ' ' 1 14) "
check "trace.csv rows parse" awk -F, 'NR > 1 && (NF != 7 || $4 + 0 != $4) {exit 1}' "$T/trace"

# ---- the plain model at rank 50 without the safeguards: the latest pair's sigma diverged at
# epoch 5 (the first quasi-Newton epoch); the only-shrinking sigma does not, in the metric
# diag(deg) with eta 0.5 (the plain defaults' longer steps in diag(sqrt(deg dbar)) need the
# safeguards on these uniform ratings: without them epoch 6 diverges, with them one epoch is
# undone)
expect 0 $MPI -np 2 "$DPOPT" mf --plain --rank 50 --epochs 20 $OFF --metric-pow 1 --eta 0.5 --eval-budget 0 --out "$T/offp" "$R"
check "plain rank 50 without safeguards: 20 epochs, finite" jqt '.failed == false and .epochs == 20' "$T/offp/summary.json"
check "plain rank 50 without safeguards: improved" jqt '.train_rmse_nonprivate < 0.5 * .train_rmse_initial_nonprivate' "$T/offp/summary.json"
# ---- and with the defaults: no divergence
expect 0 $MPI -np 2 "$DPOPT" mf --plain --rank 50 --epochs 20 --out "$T/on" "$R"
check "rank 50 with safeguards: not failed" jqt '.failed == false and .epochs == 20' "$T/on/summary.json"
check "rank 50 with safeguards: finite held-out RMSE" finite "$T/on/summary.json" .test_rmse
check "no FAILED on success" test ! -e "$T/on/FAILED"

# ---- aggressive steps
for A in "--sigma0 50" "--eta 0.02"; do
  expect 4 $MPI -np 2 "$DPOPT" mf --plain --epochs 20 $A $OFF "$R"
  expect 0 $MPI -np 2 "$DPOPT" mf --plain --epochs 20 $A --out "$T/agg" "$R"
  S="$T/agg/summary.json"
  check "$A: safeguard acted" jqt '.epochs_undone > 0 or .steps_capped > 0' "$S"
  check "$A: finite RMSE" finite "$S" .test_rmse
  check "$A: training RMSE improved" jqt '.train_rmse_nonprivate < 0.8 * .train_rmse_initial_nonprivate' "$S"
  rm -rf "$T/agg"
done
# ---- mb-GD: the same aggressive step diverges without its safeguard and finishes with it
# (epochs undone, step halved), also under a generic partitioning
for PT in strata-b color; do
  expect 4 $MPI -np 2 "$DPOPT" mf --plain --method mbgd --part $PT --sigma0 50 --epochs 20 --reject-tol -1 --out "$T/gdoff" "$R"
  has "$T/err" "diverged at epoch" "mb-GD $PT --sigma0 50 without the safeguard diverges"
  # its last good point's factors are finite but their RMSE may overflow: still written
  check "mb-GD $PT diverged: summary.json parses, failed" jqt '.failed == true' "$T/gdoff/summary.json"
  check "mb-GD $PT diverged: FAILED and X1.txt" test -s "$T/gdoff/FAILED" -a -s "$T/gdoff/X1.txt"
  rm -rf "$T/gdoff"
  expect 0 $MPI -np 2 "$DPOPT" mf --plain --method mbgd --part $PT --sigma0 50 --epochs 20 --out "$T/gd" "$R"
  S="$T/gd/summary.json"
  check "mb-GD $PT: safeguard acted" jqt '.epochs_undone > 0 and .failed == false' "$S"
  check "mb-GD $PT: finite RMSE" finite "$S" .test_rmse
  check "mb-GD $PT: training RMSE improved" jqt '.train_rmse_nonprivate < 0.8 * .train_rmse_initial_nonprivate' "$S"
  rm -rf "$T/gd"
done
# ---- safeguard decisions are rank-independent: with --repro, K = 4 strata on 1 and 2 ranks
# give the same factors bit for bit while steps are being capped or epochs undone
for P in 1 2; do
  expect 0 $MPI -np $P "$DPOPT" mf --plain --strata 4 --sigma0 50 --epochs 10 --repro --out "$T/rp$P" "$R"
done
check "repro run: safeguards acted" jqt '.epochs_undone > 0 or .steps_capped > 0' "$T/rp1/summary.json"
check "repro with safeguards: X1 identical on 1 and 2 ranks" cmp -s "$T/rp1/X1.txt" "$T/rp2/X1.txt"
check "repro with safeguards: X2t identical on 1 and 2 ranks" cmp -s "$T/rp1/X2t.txt" "$T/rp2/X2t.txt"
for P in 1 2; do
  expect 0 $MPI -np $P "$DPOPT" mf --plain --method mbgd --strata 4 --sigma0 50 --epochs 10 --repro --out "$T/gp$P" "$R"
done
check "mb-GD repro run undid epochs" jqt '.epochs_undone > 0' "$T/gp1/summary.json"
check "mb-GD repro with safeguard: X1 identical on 1 and 2 ranks" cmp -s "$T/gp1/X1.txt" "$T/gp2/X1.txt"
check "mb-GD repro with safeguard: X2t identical on 1 and 2 ranks" cmp -s "$T/gp1/X2t.txt" "$T/gp2/X2t.txt"

# ---- gen ratings --realistic (MovieLens-like): same size, >= 20 ratings per user, biases
check "realistic: 20000 ratings" test "$(wc -l <"$T/real.txt")" -eq 20000
check "realistic: every user has >= 20 ratings" awk -F'::' '{n[$1]++} END {k = 0; for (u in n) {k++; if (n[u] < 20) exit 1}; exit k != 300}' "$T/real.txt"
# user means spread (biases): sd of the user means well above the default generator's
awk -F'::' '{s[$1] += $3; n[$1]++} END {for (u in s) {m = s[u] / n[u]; a += m; b += m * m; k++}
  print sqrt(b / k - (a / k) ^ 2)}' "$T/real.txt" >"$T/usd"
check "realistic: user bias spread $(cat "$T/usd") > 0.25" awk '{exit !($1 > 0.25)}' "$T/usd"

# ---- rank 50, biased model, realistic ratings: long enough to have diverged before the
# safeguards, then finite and improving held-out RMSE with the defaults
expect 4 $MPI -np 2 "$DPOPT" mf --rank 50 --biases --early-stop 0 --epochs 60 $OFF "$RR"
has "$T/err" "diverged at epoch" "rank 50 biased without safeguards diverges"
expect 0 $MPI -np 2 "$DPOPT" mf --rank 50 --biases --early-stop 0 --epochs 60 --eval-budget 0 --out "$T/b50" "$RR"
grep -v '^#' "$T/b50/trace.csv" | tail -n +2 | cut -d, -f1,5 >"$T/b50.tr"
check "rank 50 biased: 60 trace rows" test "$(wc -l <"$T/b50.tr")" -eq 60
check "rank 50 biased: every held-out RMSE finite" awk -F, '$2 + 0 != $2 || $2 != $2 + 0 || $2 > 10 {exit 1}' "$T/b50.tr"
# went down: the last is below the first by 1%, and the second half never rises 0.01 above the
# best of the first half (no blow-up)
check "rank 50 biased: held-out RMSE decreased" awk -F, 'NR == 1 {f = $2} {l = $2} NR <= 30 && (m == "" || $2 < m) {m = $2}
  NR > 30 && $2 > m + 0.01 {exit 1} END {exit !(l < 0.99 * f)}' "$T/b50.tr"
check "rank 50 biased: summary finite" finite "$T/b50/summary.json" .test_rmse

# ---- COLOR's quasi-Newton epochs: the single-rating steps in the stratum's metric overshot
# their rating's curvature (rank 50: RMSE 0.82 -> 0.95 at epoch 6, diverged at epoch 7 with
# only the epoch check off and the latest pair's sigma; epoch 9 with the only-shrinking one and
# the --plain steps; with summed steps of 2 ranks later).  With the curvature caps
# alone (epoch check off) the training RMSE now falls in every epoch, at 1 rank and at 2
# (items two ranks step in a quasi-Newton epoch get the average); also from --sigma0 50
expect 4 "$DPOPT" mf --plain --part color --rank 50 --epochs 12 $OFF "$RR"
has "$T/err" "diverged at epoch 9" "COLOR rank 50 without safeguards diverges at epoch 9"
falls() { grep -v '^#' "$1/trace.csv" | tail -n +"$2" | cut -d, -f4 |
  awk 'NR > 1 && !($1 < p) {exit 1} {p = $1} END {exit NR < 5}'; }
for P in 1 2; do
  expect 0 $MPI -np $P "$DPOPT" mf --plain --part color --rank 50 --epochs 12 --reject-tol -1 --eval-budget 0 --out "$T/qn$P" "$RR"
  check "COLOR rank 50, $P rank(s), caps only: training RMSE falls every epoch" falls "$T/qn$P" 2
  check "COLOR rank 50, $P rank(s): quasi-Newton epochs ran" jqt '.pairs_accepted >= 10 and .epochs_undone == 0' "$T/qn$P/summary.json"
done
expect 0 "$DPOPT" mf --plain --part color --rank 50 --epochs 10 --sigma0 50 --reject-tol -1 --eval-budget 0 --out "$T/qns" "$RR"
check "COLOR --sigma0 50, caps only: falls every epoch after the first" falls "$T/qns" 3
check "COLOR --sigma0 50: capped, improved" jqt '.steps_capped > 0 and .train_rmse_nonprivate < 0.5 * .train_rmse_initial_nonprivate' "$T/qns/summary.json"

# ---- a run that stops right after a bad epoch: its last step is seen by no epoch check
# (COLOR, biased rank 50 without the step caps: epoch 11 takes the RMSE from 0.93 to 11; the
# plain model's only-shrinking sigma leaves no such epoch here), so the end is compared with
# the start of the last accepted epoch and that point returned
expect 0 "$DPOPT" mf --rank 50 --biases --early-stop 0 --part color --epochs 11 --step-cap 0 --eval-budget 0 --out "$T/fc" "$RR"
grep -v '^#' "$T/fc/trace.csv" | tail -n +2 | cut -d, -f4 >"$T/fc.tr"
jq .train_rmse_nonprivate "$T/fc/summary.json" >"$T/fc.end"
check "final check: epoch 11 raised the RMSE 10% above epoch 10" awk 'NR == 10 {a = $1} NR == 11 {b = $1} END {exit !(b > 1.1 * a)}' "$T/fc.tr"
check "final check: the run returns epoch 10's point" awk 'NR == FNR {e = $1; next} FNR == 10 {exit !(($1 - e) ^ 2 < 1e-12)}' "$T/fc.end" "$T/fc.tr"
check "final check: counted as undone" jqt '.epochs_undone >= 1 and .epochs == 11' "$T/fc/summary.json"
# ---- evaluation budget: same factors with the default budget and with every epoch evaluated;
# early stopping keeps the same epoch either way
expect 0 $MPI -np 2 "$DPOPT" mf --rank 50 --biases --early-stop 0 --epochs 60 --out "$T/b50d" "$RR"
check "budget: X1 identical to every-epoch evaluation" cmp -s "$T/b50/X1.txt" "$T/b50d/X1.txt"
check "budget: X2t identical to every-epoch evaluation" cmp -s "$T/b50/X2t.txt" "$T/b50d/X2t.txt"
check "budget: at most one row per epoch" test "$(grep -vc '^#' "$T/b50d/trace.csv")" -le 61
for B in 0 0.04; do
  expect 0 $MPI -np 2 "$DPOPT" mf --rank 10 --biases --epochs 40 --early-stop 5 --eval-budget $B --out "$T/es$B" "$RR"
done
check "budget: early stopping keeps the same epoch" test \
  "$(jq .best_epoch "$T/es0/summary.json")" = "$(jq .best_epoch "$T/es0.04/summary.json")"
check "budget: early stopping keeps the same factors" cmp -s "$T/es0/X1.txt" "$T/es0.04/X1.txt"
finish test_mf_safeguard
