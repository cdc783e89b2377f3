#!/bin/sh
# The deployable rating model of dpopt mf (issue 15): --biases, --early-stop, mf-predict.
# Data: a small generator below with known biases and rank-3 structure, y = 3.5 + b_u + b_i
# + u'v + N(0, 0.3^2) (not rounded), 400 users x 300 items, 60 ratings per user; the true
# biases go to side files.
#  - the biased model's held-out RMSE is within 20% of the noise sd 0.3 and below the
#    unbiased model's; the fitted b_u and b_i correlate with the true ones (> 0.9);
#  - early stopping (overfitting: the training fit goes on) stops `patience` epochs after the
#    best held-out RMSE, whose value is the
#    minimum of trace.csv, and keeps that epoch's factors: identical files to a run of
#    exactly best_epoch epochs;
#  - mf-predict on the ratings file reproduces the model's values: the RMSE of its
#    predictions equals the one the run reports (training and held-out combined), with and
#    without biases; pairs outside the model are refused, naming the line;
#  - with --repro the biased model is bit-identical on 1 and 2 ranks;
#  - --x0 DIR starts from DIR's factors: zero epochs give them back unchanged (1 and 2 ranks),
#    biased or not, and factors of the wrong shape are refused.
. "$(dirname "$0")/../lib/testlib.sh"
R="$T/syn.txt"
awk -v buf="$T/bu.true" -v bif="$T/bi.true" '
function nrm() { return sqrt(-2 * log(1 - rand())) * cos(6.283185307179586 * rand()) }
BEGIN {
  srand(7); U = 400; I = 300; K = 3; D = 60; s = 0.3
  for (i = 1; i <= I; i++) { bi[i] = 0.5 * nrm(); print bi[i] > bif; for (q = 1; q <= K; q++) v[i, q] = 0.5 * nrm() }
  for (u = 1; u <= U; u++) {
    bu = 0.5 * nrm(); print bu > buf
    for (q = 1; q <= K; q++) w[q] = 0.5 * nrm()
    split("", seen)
    for (k = 0; k < D; k++) {
      do i = 1 + int(I * rand()); while (i in seen)
      seen[i] = 1; sig = 0
      for (q = 1; q <= K; q++) sig += w[q] * v[i, q]
      printf "%d::%d::%.6f\n", u, i, 3.5 + bu + bi[i] + sig + s * nrm()
    }
  }
}' >"$R"
check "generator: 24000 ratings" test "$(wc -l <"$R")" -eq 24000
jqt() { jq -e "$1" "$2" >/dev/null; }
jv() { jq -r "$1" "$2"; }
corr() { paste "$1" "$2" | awk '{x = $1; y = $2; sx += x; sy += y; sxx += x * x; syy += y * y; sxy += x * y; n++}
  END {print (sxy - sx * sy / n) / sqrt((sxx - sx * sx / n) * (syy - sy * sy / n))}'; }
# RMSE of mf-predict's output against the ratings file, and the run's own (train + held out)
pred_rmse() { paste -d' ' "$1" "$2" | awk -F'[ :]+' '{e = $3 - $6; s += e * e; n++} END {printf "%.12g\n", sqrt(s / n)}'; }
run_rmse() { jq -r '((.n_train * .train_rmse_nonprivate * .train_rmse_nonprivate + .n_test * .test_rmse * .test_rmse) / (.n_train + .n_test)) | sqrt' "$1"; }

# ---- biased model: noise level, biases recovered (lambda = noise var / prior var ~ 0.09 / 0.25)
expect 0 $MPI -np 2 "$DPOPT" mf --rank 3 --biases --lambda 0.5 --epochs 60 --early-stop 5 --out "$T/b" "$R"
has "$T/out" "mean + user/item biases" "report names the biased model"
S="$T/b/summary.json"
check "summary: biases, mean near 3.5" jqt '.biases == true and .mean > 3.3 and .mean < 3.7' "$S"
check "biased: held-out RMSE $(jv .test_rmse "$S") < 1.2 x noise 0.3" jqt '.test_rmse < 0.36' "$S"
grep -v "^#" "$T/b/biases.txt" >"$T/allb"  # numbers only outside "#" lines
check "biases.txt: 1 + 400 + 300 entries" test "$(wc -l <"$T/allb")" -eq 701
sed -n 2,401p "$T/allb" >"$T/bu.fit"
sed -n 402,701p "$T/allb" >"$T/bi.fit"
cu=$(corr "$T/bu.true" "$T/bu.fit")
ci=$(corr "$T/bi.true" "$T/bi.fit")
check "user biases correlate with the true ones: $cu > 0.9" awk -v c="$cu" 'BEGIN {exit !(c > 0.9)}'
check "item biases correlate with the true ones: $ci > 0.9" awk -v c="$ci" 'BEGIN {exit !(c > 0.9)}'
expect 0 $MPI -np 2 "$DPOPT" mf --plain --rank 3 --epochs 60 --early-stop 5 --out "$T/nb" "$R"
check "without biases the held-out RMSE is worse" \
  awk -v a="$(jv .test_rmse "$S")" -v b="$(jv .test_rmse "$T/nb/summary.json")" 'BEGIN {exit !(a < b)}'
check "without biases: no biases.txt" test ! -e "$T/nb/biases.txt"

# ---- the mean and the bias columns keep --repro rank-independent (K = 4 strata, 1 vs 2 ranks)
for P in 1 2; do
  expect 0 $MPI -np $P "$DPOPT" mf --rank 3 --biases --strata 4 --epochs 10 --repro --out "$T/rp$P" "$R"
done
for f in X1.txt X2t.txt biases.txt; do
  check "biased --repro: $f identical on 1 and 2 ranks" cmp -s "$T/rp1/$f" "$T/rp2/$f"
done

# ---- early stopping keeps the best epoch (overfitting setting: rank 10, no L2)
expect 0 $MPI -np 2 "$DPOPT" mf --rank 10 --biases --lambda 0 --epochs 60 --early-stop 5 --out "$T/es" "$R"
S="$T/es/summary.json"
be=$(jv .best_epoch "$S")
check "early stop: stopped 5 epochs after the best ($be)" jqt '.best_epoch > 1 and .epochs == .best_epoch + 5 and .epochs < 60' "$S"
has "$T/out" "best held-out RMSE at epoch $be" "report names the best epoch"
tmin=$(grep -v '^#' "$T/es/trace.csv" | tail -n +2 | cut -d, -f5 | sort -g | head -n 1)
check "early stop: best_test_rmse = test_rmse = min of trace.csv ($tmin)" test \
  "$(jq -r '"\(.best_test_rmse) \(.test_rmse)"' "$S" | awk '{printf "%.10g %.10g", $1, $2}')" = "$tmin $tmin"
check "early stop: the trace's best row is epoch $be" test \
  "$(grep -v '^#' "$T/es/trace.csv" | awk -F, -v m="$tmin" '$5 == m {print $1; exit}')" = "$be"
expect 0 $MPI -np 2 "$DPOPT" mf --rank 10 --biases --lambda 0 --epochs "$be" --out "$T/be" "$R"
for f in X1.txt X2t.txt biases.txt; do
  check "early stop keeps epoch $be: $f identical to a $be-epoch run" cmp -s "$T/es/$f" "$T/be/$f"
done

# ---- mf-predict reproduces the model's values
for rn in b nb; do
  expect 0 "$DPOPT" mf-predict --run "$T/$rn" --out "$T/pred" "$R"
  check "mf-predict ($rn): one line per pair" test "$(wc -l <"$T/pred")" -eq 24000
  close "$(pred_rmse "$T/pred" "$R")" "$(run_rmse "$T/$rn/summary.json")" 1e-9 "mf-predict ($rn): RMSE of the predictions = the run's"
done
# ---- factor files are matrices (numpy.loadtxt: '#' lines skipped, one row per user / item);
# a run directory with the older one-number-per-line files predicts the same
check "X1.txt: 400 rows of 3 numbers" awk '/^#/ {next} NF != 3 {exit 1} {n++} END {exit n != 400}' "$T/b/X1.txt"
check "X2t.txt: 300 rows of 3 numbers" awk '/^#/ {next} NF != 3 {exit 1} {n++} END {exit n != 300}' "$T/b/X2t.txt"
has "$T/b/X1.txt" "^# dpopt mf factors: 400 x 3" "X1.txt header names its shape"
mkdir "$T/old"
cp "$T/b/summary.json" "$T/b/biases.txt" "$T/old/"
for f in X1 X2t; do
  { echo "# $f (older layout)"; printf '# dpopt model: dimension %d, intercept no\n' "$(grep -v '^#' "$T/b/$f.txt" | wc -w)"
    grep -v '^#' "$T/b/$f.txt" | tr ' ' '\n'; } >"$T/old/$f.txt"
done
expect 0 "$DPOPT" mf-predict --run "$T/b" --out "$T/pnew" "$R"
expect 0 "$DPOPT" mf-predict --run "$T/old" --out "$T/pold" "$R"
check "older one-per-line factor files: the same predictions" cmp -s "$T/pnew" "$T/pold"
sed '$d' "$T/b/X1.txt" >"$T/old/X1.txt"
expect 2 "$DPOPT" mf-predict --run "$T/old" "$R"
has "$T/err" "X1.txt: 399 rows, the header says 400" "a truncated factor matrix is refused"
expect 0 $MPI -np 2 "$DPOPT" mf-predict --run "$T/b" "$R"
check "mf-predict to stdout (2 ranks, rank 0 writes)" test "$(wc -l <"$T/out")" -eq 24000
printf '1 1\n# comment\n\n401 1\n' >"$T/pairs"
expect 1 "$DPOPT" mf-predict --run "$T/b" "$T/pairs"
has "$T/err" "pairs:4: user or item outside the model" "out-of-range pair names its line"
expect 1 "$DPOPT" mf-predict "$T/pairs"
has "$T/err" "run DIR is required" "mf-predict needs --run"
expect 1 "$DPOPT" mf --biases --early-stop 3 --holdout 0 "$R"
has "$T/err" "early stopping needs a held-out split" "early stopping without a held-out split is refused"
# ---- --x0: start from given factors (here a run's own output)
expect 0 $MPI -np 2 "$DPOPT" mf --plain --rank 4 --epochs 3 --out "$T/x0src" "$R"
for P in 1 2; do
  for B in --plain --biases; do
    expect 0 $MPI -np $P "$DPOPT" mf --rank 4 --epochs 0 $B --x0 "$T/x0src" --out "$T/x0$P$B" "$R"
    check "x0 np $P $B: zero epochs give X1 back" cmp -s "$T/x0src/X1.txt" "$T/x0$P$B/X1.txt"
    check "x0 np $P $B: zero epochs give X2t back" cmp -s "$T/x0src/X2t.txt" "$T/x0$P$B/X2t.txt"
  done
done
expect 0 $MPI -np 2 "$DPOPT" mf --plain --rank 4 --epochs 3 --x0 "$T/x0src" --out "$T/x0run" "$R"
check "x0: training goes on from there" jq -e '.train_rmse_nonprivate < .train_rmse_initial_nonprivate' "$T/x0run/summary.json"
expect 2 $MPI -np 2 "$DPOPT" mf --plain --rank 5 --epochs 1 --x0 "$T/x0src" "$R"
has "$T/err" "the ratings and --rank need" "x0 of the wrong shape is refused"
finish test_mf_model
