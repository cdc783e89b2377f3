#!/bin/sh
# dpopt tune (issue 13): private hyperparameter selection, one charge.
#  - pure eps (Liu-Talwar 2019; eps = 6 on 10000 rows: eps0 = 2 a repetition): the journal holds exactly ONE charge, equal to 3 eps0 computed
#    here from the per-repetition eps0 the summary states, within the budget; `dpopt ledger`
#    replays it; summary.json says nothing about how many repetitions ran (K is not covered);
#    the chosen model beats the majority class of the held-out data (evaluated by dpopt eval);
#  - delta > 0 (Papernot-Steinke 2022 Thm 2 on the RDP curve; the formula itself is checked
#    against its closed form in test_tune): one (eps, delta) charge within the budget, the
#    summary's spent eps equal to the journal's; the chosen dp-sgd-rdp beats the majority class;
#  - (with --valid FILE) the score is a noisy COUNT of correct held-out predictions (sensitivity 1): under
#    replace-one the summary also gives the noisy accuracy = count / rows of --test (public);
#    under add-remove it does not (the held-out size is private there), and one held-out row
#    added moves the released score by exactly 0 or 1 at the same seed (one repetition,
#    tune.mean = 1, so the same noise): the old score, an accuracy with a Laplace scale
#    1/(n_test - 1) that depends on the private n_test, moved by neither;
#  - softmax (three Gaussian classes in R^5, 3000 / 1000 rows, chance 1/3): a dp-sgd-rdp tune
#    under add-remove and a pure-eps tune (dp-nag-opt; 3 eps0 in the journal) write a
#    softmax model (config.ini: classes 3) whose held-out accuracy beats the majority class;
#  - refusals before anything is charged or written: dp-sgd-rdp at delta = 0, a candidate
#    without a public sensitivity (no row bound), a model without an accuracy (ridge): exit 1,
#    no directory left.
#  - the validation split by row content (data.valid_fraction): its two parts partition a file's
#    rows, and one row appended moves exactly one part's count by one;
#  - the default tune (no --algos) is centred on train's recipe (6 dp-sgd-rdp candidates, the
#    recipe's batch; 3 step constants of dp-nag-opt at delta = 0), selects on a split of --data,
#    prints no unused-setting line, and its reported --test accuracy is dpopt eval's on the
#    chosen model; a one-candidate grid and a split under replace-one are refused;
#  - without any grid or tune setting the tune trains once as dpopt train does (same seed: the
#    same model, charges, spending and test accuracy), also under add-remove without --public-n.
# The tunes are seeded (labelled NOT PRIVATE): the test checks the accounting and that the
# selection works, not a private run.
. "$(dirname "$0")/../lib/testlib.sh"
head -n 10000 "$S/data/a9a" > "$T/tr"
head -n 2000 "$S/data/a9a.t" > "$T/te"
C="--data $T/tr --valid $T/te --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --quiet"
js() { jq -r "$2" "$1/summary.json" 2>/dev/null; }
maj=$(awk '{if ($1 > 0) p++; n++} END {m = p / n; if (1 - m > m) m = 1 - m; printf "%.6f", m}' "$T/te")

expect 0 $MPI -np 2 "$DPOPT" tune $C --eps 6 --algos dp-nag-opt,dp-gd --mean 3 --seed 5 --out "$T/p"
has "$T/out" "NOT PRIVATE" "seeded tune labelled"
# train's plain lines; the theorem only in summary.json
has "$T/out" '^spent  *eps [0-9]\.[0-9][0-9][0-9] of 6 in one charge (every repetition and the selection)$' "the spent line"
has "$T/out" '^chosen  *algo=dp-' "the chosen line"
hasnot "$T/out" '(eps, delta) =\|Liu-Talwar\|Thm' "no jargon on the screen"
[ "$(grep -c '"cost_eps"' "$T/p/ledger.jsonl")" = 1 ] && ok || bad "pure tune: one charge"
e0=$(js "$T/p" .privacy.per_repetition_eps)
cost=$(grep '"cost_eps"' "$T/p/ledger.jsonl" | jq -r .cost_eps)
close "$cost" "$(awk -v e="$e0" 'BEGIN {printf "%.17g", 3 * e}')" 1e-15 "charge = 3 eps0 (Liu-Talwar)"
awk -v c="$cost" 'BEGIN {exit !(c <= 6 && c > 5.9999)}' && ok || bad "charge $cost within eps = 6"
[ "$(grep '"cost_eps"' "$T/p/ledger.jsonl" | jq -r .cost_delta)" = 0 ] && ok || bad "pure: delta 0"
has "$T/p/ledger.jsonl" '"kind":"plan","algo":"tune"' "the plan is journalled"
expect 0 "$DPOPT" ledger "$T/p"
has "$T/out" "charges: 1" "dpopt ledger replays one charge"
hasnot "$T/p/summary.json" "repetitions_run\|tried" "K is not released"
[ -e "$T/p/.rep" ] && bad "a repetition's directory left" || ok
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/p" --data "$T/te" --dim 123
a=$(sed -n 's/^accuracy *//p' "$T/out")
awk -v a="$a" -v m="$maj" 'BEGIN {exit !(a > m + 0.02)}' && ok || bad "pure tune: accuracy $a vs majority $maj"
close "$(js "$T/p" .heldout_accuracy_noisy)" "$(js "$T/p" '.heldout_correct_noisy / 2000')" 1e-12 \
  "replace-one: noisy accuracy = noisy count / 2000 (public)"

R="--delta 1e-5 --set privacy.neighbours=add-remove --algos dp-sgd-rdp --lrs 0.5,2 --clips 1 --epochs 2 --batch 200"
# under add-remove the row count is private: without a declared public size the tune is refused
expect 1 $MPI -np 2 "$DPOPT" tune $C --eps 1 $R --mean 2 --seed 6 --out "$T/r0"
has "$T/err" "declare a public size (--public-n N" "add-remove tune without --public-n refused"
[ -e "$T/r0" ] && bad "refused tune (no public n) left a directory" || ok
R="$R --public-n $(wc -l < "$T/tr")"
expect 0 $MPI -np 2 "$DPOPT" tune $C --eps 1 $R --mean 2 --seed 6 --out "$T/r"
[ "$(grep -c '"cost_eps"' "$T/r/ledger.jsonl")" = 1 ] && ok || bad "rdp tune: one charge"
cost=$(grep '"cost_eps"' "$T/r/ledger.jsonl" | jq -r .cost_eps)
close "$cost" "$(js "$T/r" .privacy.spent_eps)" 0 "rdp tune: summary spent = journal charge"
awk -v c="$cost" 'BEGIN {exit !(c <= 1 && c > 0.99)}' && ok || bad "rdp charge $cost within eps = 1"
[ "$(grep '"cost_eps"' "$T/r/ledger.jsonl" | jq -r .cost_delta)" = 1e-05 ] && ok || bad "rdp: delta"
[ "$(js "$T/r" .chosen.algo)" = dp-sgd-rdp ] && ok || bad "rdp: chosen algorithm"
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/r" --data "$T/te" --dim 123
a=$(sed -n 's/^accuracy *//p' "$T/out")
awk -v a="$a" -v m="$maj" 'BEGIN {exit !(a > m + 0.02)}' && ok || bad "rdp tune: accuracy $a vs majority $maj"

[ "$(js "$T/r" .heldout_accuracy_noisy)" = null ] && ok || bad "add-remove: no accuracy (n_test is private)"

# add-remove: one held-out row added moves the released score by 0 or 1 (same seed, one repetition)
cp "$T/te" "$T/te1"; head -n 1 "$T/te" >> "$T/te1"
for h in te te1; do
  expect 0 $MPI -np 2 "$DPOPT" tune $C --valid "$T/$h" --eps 1 $R --lrs 2,4 --mean 1 --seed 7 --out "$T/a$h"
done
dc=$(jq -n --argjson a "$(js "$T/ate" .heldout_correct_noisy)" --argjson b "$(js "$T/ate1" .heldout_correct_noisy)" '$b - $a')
awk -v d="$dc" 'BEGIN {exit !((d > -1e-6 && d < 1e-6) || (d > 1 - 1e-6 && d < 1 + 1e-6))}' && ok ||
  bad "add-remove: one held-out row added moved the score by $dc (not 0 or 1: sensitivity not 1)"

# softmax: three Gaussian classes (labels 0..2), chance 1/3
softmax3_data 1 3000 "$T/str"
softmax3_data 2 1000 "$T/ste"
K="--data $T/str --valid $T/ste --model softmax --classes 3 --row-l2-bound 4 --row-l1-bound 10 --quiet"
expect 0 $MPI -np 2 "$DPOPT" tune $K --eps 1 --delta 1e-5 --set privacy.neighbours=add-remove --public-n 3000 \
  --lrs 0.5,2 --clips 1 --epochs 2 --batch 100 --mean 2 --seed 8 --out "$T/k"
[ "$(grep -c '"cost_eps"' "$T/k/ledger.jsonl")" = 1 ] && ok || bad "softmax tune: one charge"
close "$(grep '"cost_eps"' "$T/k/ledger.jsonl" | jq -r .cost_eps)" "$(js "$T/k" .privacy.spent_eps)" 0 \
  "softmax tune: summary spent = journal charge"
has "$T/k/config.ini" "^classes = 3$" "softmax tune: config.ini keeps the classes"
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/k" --data "$T/ste"
a=$(sed -n 's/^accuracy *//p' "$T/out")
awk -v a="$a" 'BEGIN {exit !(a > 0.6)}' && ok || bad "softmax rdp tune: accuracy $a vs majority 1/3"
expect 0 $MPI -np 2 "$DPOPT" tune $K --eps 3 --algos dp-nag-opt --steps 1,2 --mean 2 --seed 9 --out "$T/kp"
cost=$(grep '"cost_eps"' "$T/kp/ledger.jsonl" | jq -r .cost_eps)
close "$cost" "$(awk -v e="$(js "$T/kp" .privacy.per_repetition_eps)" 'BEGIN {printf "%.17g", 3 * e}')" \
  1e-15 "softmax pure tune: charge = 3 eps0"
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/kp" --data "$T/ste"
a=$(sed -n 's/^accuracy *//p' "$T/out")
awk -v a="$a" 'BEGIN {exit !(a > 0.6)}' && ok || bad "softmax pure tune: accuracy $a vs majority 1/3"

# every missing requirement in one error
expect 1 "$DPOPT" tune --quiet
has "$T/err" "give --data FILE (the training rows) and --eps E" "tune without --data and --eps: one error names both"
expect 1 $MPI -np 2 "$DPOPT" tune $C --model ridge --eps 1 --algos dp-gd --out "$T/x3"
[ -e "$T/x3" ] && bad "refused tune (ridge) left a directory" || ok
expect 1 $MPI -np 2 "$DPOPT" tune $C --eps 1 --algos dp-sgd-rdp --out "$T/x1"
[ -e "$T/x1" ] && bad "refused tune left a directory" || ok
expect 1 $MPI -np 2 "$DPOPT" tune --data "$T/tr" --valid "$T/te" --dim 123 --eps 1 --algos dp-gd,dp-nag-opt --quiet --out "$T/x2"
[ -e "$T/x2" ] && bad "refused tune (no bound) left a directory" || ok

# the validation split by row content: the two parts of a file partition its rows (fit rows +
# validation rows = all), and one row appended lands in exactly one part (one count moves by 1)
for f in tr tr1; do
  [ $f = tr1 ] && { cp "$T/tr" "$T/tr1"; sed -n 7p "$T/tr" | sed 's/^[-+]*1 /+1 /; s/ 3:1/ 3:1 120:1/' >> "$T/tr1"; }
  expect 0 $MPI -np 2 "$DPOPT" train --data "$T/$f" --dim 123 --row-l2-bound 3.7416573867739413 --algo gd \
    --iters 1 --set data.valid_fraction=0.2 --out "$T/sp$f"
  eval "fit_$f=$(sed -n 's/^algorithm .* \([0-9]*\) rows x .*/\1/p' "$T/out")"
  eval "val_$f=$(sed -n 's/^test data loss .*, \([0-9]*\) rows)$/\1/p' "$T/out")"
done
[ $((fit_tr + val_tr)) = 10000 ] && ok || bad "split: $fit_tr + $val_tr rows, not 10000"
awk -v v="$val_tr" 'BEGIN {exit !(v > 1700 && v < 2300)}' && ok || bad "split: $val_tr validation rows of 10000 at 0.2"
[ $(( (fit_tr1 - fit_tr) + (val_tr1 - val_tr) )) = 1 ] && [ $(( (fit_tr1 - fit_tr) * (val_tr1 - val_tr) )) = 0 ] && ok ||
  bad "split: one row appended moved fit $fit_tr -> $fit_tr1 and validation $val_tr -> $val_tr1"

# by default (no --algos) the grid is centred on train's recipe, scored on a split of --data;
# --test is only reported: the reported accuracy is dpopt eval's on the chosen model
D="--data $T/tr --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --public-n 10000"
expect 0 $MPI -np 2 "$DPOPT" tune $D --test "$T/te" --eps 3 --delta 1e-5 --mean 2 --seed 11 --out "$T/d"
hasnot "$T/err" "unused setting" "default tune: no unused-setting lines"
[ "$(js "$T/d" .candidates_in_grid)" = 6 ] && ok || bad "default dp-sgd-rdp grid: $(js "$T/d" .candidates_in_grid) candidates"
has "$T/d/summary.json" '"grid_centre":"delta > 0' "default grid centred on train's recipe"
has "$T/d/summary.json" '"selected_on":"a validation split' "selected on a split of --data"
[ "$(js "$T/d" .chosen.batch)" = 256 ] && ok || bad "the recipe's batch 256 kept"
t_acc=$(js "$T/d" .test_accuracy)
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/d" --data "$T/te" --dim 123
close "$t_acc" "$(sed -n 's/^accuracy *//p' "$T/out")" 1e-12 "reported test accuracy = dpopt eval on --test"
awk -v a="$t_acc" -v m="$maj" 'BEGIN {exit !(a > m + 0.02)}' && ok || bad "default tune: accuracy $t_acc vs majority $maj"
expect 0 $MPI -np 2 "$DPOPT" tune $D --eps 3 --mean 2 --seed 12 --out "$T/dp"
[ "$(js "$T/dp" .candidates_in_grid)" = 3 ] && ok || bad "default pure-eps grid: 3 step constants"
[ "$(js "$T/dp" .chosen.algo)" = dp-nag-opt ] && ok || bad "pure default: train's dp-nag-opt"
# a one-candidate grid only splits eps: refused; a split under replace-one too (a replaced row
# may change part)
expect 1 $MPI -np 2 "$DPOPT" tune $D --eps 3 --steps 4 --out "$T/x4"
has "$T/err" "the grid holds one candidate" "one-candidate grid refused"
[ -e "$T/x4" ] && bad "refused tune (one candidate) left a directory" || ok
expect 1 $MPI -np 2 "$DPOPT" tune $D --eps 3 --mean 2 --set privacy.neighbours=replace-one --out "$T/x5"
has "$T/err" "validation split of --data needs add-remove" "replace-one split refused"
[ -e "$T/x5" ] && bad "refused tune (replace-one split) left a directory" || ok

# no grid and no tune setting: train's recipe once at the whole budget, says so, and is the run
# dpopt train makes with the same settings (same seed: the same model, charges and spending)
P="--data $T/tr --test $T/te --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --eps 1 --delta 1e-5 --seed 13"
expect 0 $MPI -np 2 "$DPOPT" tune $P --public-n 10000 --out "$T/pl"
has "$T/out" "no grid given: train's recipe at the whole budget" "a tune without a grid says it trains once"
expect 0 $MPI -np 2 "$DPOPT" train $P --public-n 10000 --quiet --out "$T/pt"
[ "$(grep -v '^#' "$T/pl/model.txt" | md5sum)" = "$(grep -v '^#' "$T/pt/model.txt" | md5sum)" ] && ok ||
  bad "tune without a grid: model differs from dpopt train's"
close "$(js "$T/pl" .privacy.eps_spent)" "$(js "$T/pt" .privacy.eps_spent)" 0 "tune without a grid: train's spending"
s=$(js "$T/pl" .privacy.eps_spent)
awk -v s="$s" 'BEGIN {exit !(s > 0.999 && s <= 1)}' && ok || bad "tune without a grid: spent $s, not the whole eps 1"
[ "$(grep -c '"cost_eps"' "$T/pl/ledger.jsonl")" = "$(grep -c '"cost_eps"' "$T/pt/ledger.jsonl")" ] && ok ||
  bad "tune without a grid: not train's charges"
close "$(js "$T/pl" .test_accuracy)" "$(js "$T/pt" .test_accuracy)" 0 "tune without a grid: train's accuracy"
# add-remove without --public-n: train's own rule (a noisy count charged first), not a refusal
expect 0 $MPI -np 2 "$DPOPT" tune $P --quiet --out "$T/pn"
expect 0 $MPI -np 2 "$DPOPT" train $P --quiet --out "$T/ptn"
[ "$(grep -v '^#' "$T/pn/model.txt" | md5sum)" = "$(grep -v '^#' "$T/ptn/model.txt" | md5sum)" ] && ok ||
  bad "tune without a grid or --public-n: model differs from dpopt train's"
finish test_tune
