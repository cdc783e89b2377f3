#!/bin/sh
# dpopt tune --split S: the search by parallel composition (src/run/tune_split.c).
#  - the journal holds ONE charge, listing every part (validation, one per candidate, final:
#    2 + 6 accounts), each part charged the whole (eps, delta) once and the total equal to it;
#    `dpopt ledger` replays it;
#  - only the argmax leaves the selection: no noisy score in summary.json;
#  - it prints train's plain lines (run directory, privacy, spent, chosen, test accuracy);
#  - a seeded tune is reproducible (the same model, choice and journal charges twice);
#  - the chosen model (trained again on the final part) beats the majority class, and the
#    reported --test accuracy is dpopt eval's on it;
#  - the partition: by row position, never content (dpo_run_set_rows, checked on a training
#    run: the parts' row counts add up to the file's, and a row replaced in place, content
#    changed, leaves every part's count as it was);
#  - config.ini is the tune's own settings (the command run), not the final run's;
#  - a budget store is charged once, at the max over the parts (eps), not their sum;
#  - the default search: a grid alone is searched this way at S = 0.1; --mean keeps the
#    geometric search;
#  - refusals before anything is written: a fraction outside [0.05, 0.5], --mean beside --split;
#    without --eps one message names every missing requirement (a row bound too), and a refused
#    tune without a grid prints nothing on stdout.
. "$(dirname "$0")/../lib/testlib.sh"
head -n 6000 "$S/data/a9a" > "$T/tr"
head -n 2000 "$S/data/a9a.t" > "$T/te"
D="--data $T/tr --dim 123 --row-l1-bound 14 --row-l2-bound 3.7416573867739413 --public-n 6000 --delta 1e-5 --quiet"
js() { jq -r "$2" "$1/summary.json" 2>/dev/null; }
maj=$(awk '{if ($1 > 0) p++; n++} END {m = p / n; if (1 - m > m) m = 1 - m; printf "%.6f", m}' "$T/te")

for r in s1 s2; do
  expect 0 $MPI -np 2 "$DPOPT" tune $D --test "$T/te" --eps 1 --split 0.5 --seed 4 --out "$T/$r"
done
# what it prints: train's plain lines, the theorem only in summary.json
has "$T/out" "^run directory  *$T/s2\$" "the run directory line"
has "$T/out" '^privacy  *NOT PRIVATE: seeded' "the privacy line says a seeded tune is not private"
has "$T/out" '^spent  *eps 1\.000 of 1 and delta 1e-05 of 1e-05 (each of 8 disjoint parts of the rows spent it once)$' \
  "the spent line"
has "$T/out" '^chosen  *algo=dp-sgd-rdp eta=[0-9.]* epochs=[0-9.]* (of 6 candidates' "the chosen line"
hasnot "$T/out" '(eps, delta) =\|McSherry\|parallel composition' "no jargon on the screen"
L=$T/s1/ledger.jsonl
[ "$(grep -c '"cost_eps"' "$L")" = 1 ] && ok || bad "split tune: one charge line"
c=$(grep '"cost_eps"' "$L")
[ "$(echo "$c" | jq -c .parties)" = "[0,1,2,3,4,5,6,7]" ] && ok || bad "split tune: the charge lists 8 parts: $(echo "$c" | jq -c .parties)"
[ "$(echo "$c" | jq -c .party_total_eps)" = "[1,1,1,1,1,1,1,1]" ] && ok || bad "split tune: each part charged eps 1 once"
[ "$(echo "$c" | jq -r .total_eps)" = 1 ] && ok || bad "split tune: total eps $(echo "$c" | jq -r .total_eps), not 1"
[ "$(echo "$c" | jq -r .cost_delta)" = 1e-05 ] && ok || bad "split tune: delta"
close "$(js "$T/s1" .privacy.spent_eps)" 1 0 "split tune: summary's spent eps"
has "$L" '"kind":"plan","algo":"tune".*parallel composition over 8 disjoint parts' "the plan names the parts"
expect 0 "$DPOPT" ledger "$T/s1"
hasnot "$T/s1/summary.json" "heldout\|score" "no noisy score released"
[ -e "$T/s1/.rep" ] && bad "a part's run directory left" || ok
# reproducible when seeded
[ "$(grep -v '^#' "$T/s1/model.txt" | md5sum)" = "$(grep -v '^#' "$T/s2/model.txt" | md5sum)" ] && ok ||
  bad "seeded split tune: models differ"
[ "$(js "$T/s1" .chosen)" = "$(js "$T/s2" .chosen)" ] && ok || bad "seeded split tune: choices differ"
[ "$(grep '"cost_eps"' "$T/s2/ledger.jsonl" | jq -c '[.parties, .party_total_eps, .total_eps]')" = \
  "$(echo "$c" | jq -c '[.parties, .party_total_eps, .total_eps]')" ] && ok || bad "seeded split tune: charges differ"
# config.ini describes the tune (its own settings), not the final run in the scratch DIR/.rep
I=$T/s1/config.ini
has "$I" "^tune.split = 0.5 " "config.ini: the tune's --split"
has "$I" "^run.dir = $T/s1 " "config.ini: run.dir is the tune's directory"
has "$I" "^privacy.eps = 1 " "config.ini: the tune's eps"
hasnot "$I" "\.rep\|no_trace_loss\|; tune$" "config.ini: none of the final run's own settings"
a=$(js "$T/s1" .test_accuracy)
expect 0 $MPI -np 2 "$DPOPT" eval --run "$T/s1" --data "$T/te" --dim 123
close "$a" "$(sed -n 's/^accuracy *//p' "$T/out")" 1e-12 "reported test accuracy = dpopt eval on --test"
awk -v a="$a" -v m="$maj" 'BEGIN {exit !(a > m + 0.02)}' && ok || bad "split tune: accuracy $a vs majority $maj"

# the partition by position: three parts of a training run's rows add up to the file, and a
# row whose content changes in place keeps every part's count (a content hash would move it)
awk 'NR == 7 { $1 = ($1 == "-1" ? "+1" : "-1"); $0 = $0 " 120:1" } { print }' "$T/tr" > "$T/trx"
cmp -s "$T/tr" "$T/trx" && bad "the changed copy is not changed"
PARTRUN=$B/mpi_tests/run/part_rows
for f in tr trx; do
  for p in "0 0.3" "0.3 0.55" "0.55 1"; do
    set -- $p
    expect 0 $MPI -np 2 "$PARTRUN" "$T/$f" "$1" "$2"
    eval "n_${f}_$(echo "$1" | tr -d .)=$(cat "$T/out")"
  done
done
[ $((n_tr_0 + n_tr_03 + n_tr_055)) = 6000 ] && ok || bad "parts: $n_tr_0 + $n_tr_03 + $n_tr_055 rows, not 6000"
[ "$n_tr_0 $n_tr_03 $n_tr_055" = "$n_trx_0 $n_trx_03 $n_trx_055" ] && ok ||
  bad "a row changed in place moved parts: $n_tr_0 $n_tr_03 $n_tr_055 -> $n_trx_0 $n_trx_03 $n_trx_055"
awk -v a="$n_tr_0" 'BEGIN {exit !(a > 1650 && a < 1950)}' && ok || bad "part [0, 0.3): $n_tr_0 rows of 6000"
expect 0 $MPI -np 1 "$PARTRUN" "$T/tr" 0.3 0.55
[ "$(cat "$T/out")" = "$n_tr_03" ] && ok || bad "part [0.3, 0.55): $(cat "$T/out") rows on 1 rank, $n_tr_03 on 2"

# a budget store: charged once at the max over the parts
export DPOPT_JOURNAL_KEY="$T/journal.key"
expect 0 "$DPOPT" budget init "$T/st" --eps 1.5 --delta 1e-5 --data "$T/tr"
expect 0 $MPI -np 2 "$DPOPT" tune $D --eps 1 --split 0.5 --budget-store "$T/st" --out "$T/st1"
expect 0 "$DPOPT" budget show "$T/st"
e=$("$DPOPT" budget show "$T/st" | awk '/^spent/ { print $4 }' | tr -d ,)
awk -v e="$e" 'BEGIN { exit !(e > 0.999 && e < 1.001) }' && ok || bad "store spent $e, not the max over the parts (1)"

# the default search: a grid without --mean, --valid or --valid-fraction is searched by
# parallel composition at S = 0.1 (config.ini says where it came from); --mean keeps the
# geometric search (no split in its summary)
expect 0 $MPI -np 2 "$DPOPT" tune $D --eps 1 --steps 2,4 --seed 4 --out "$T/df"
[ "$(js "$T/df" .search)" = "parallel composition (--split)" ] && [ "$(js "$T/df" .split)" = 0.1 ] && ok ||
  bad "a grid alone: search '$(js "$T/df" .search)', split $(js "$T/df" .split)"
has "$T/df/config.ini" "^tune.split = 0.1 *; default" "config.ini: the default split and its origin"
# steps {2, 4} x the recipe's epochs halved and kept: 4 candidates, 6 parts
[ "$(js "$T/df" .candidates_in_grid) $(grep '"cost_eps"' "$T/df/ledger.jsonl" | jq -c .parties)" = "4 [0,1,2,3,4,5]" ] && ok ||
  bad "default split: $(js "$T/df" .candidates_in_grid) candidates, parts $(grep '"cost_eps"' "$T/df/ledger.jsonl" | jq -c .parties)"
expect 0 $MPI -np 2 "$DPOPT" tune $D --eps 1 --steps 2,4 --mean 2 --seed 4 --out "$T/dg"
[ "$(js "$T/dg" .split)" = null ] && [ "$(js "$T/dg" .privacy.mean_repetitions)" = 2 ] && ok ||
  bad "--mean: not the geometric search: $(js "$T/dg" .search) $(js "$T/dg" .split)"

# refusals, nothing written
expect 1 $MPI -np 2 "$DPOPT" tune $D --eps 1 --split 0.7 --out "$T/x1"
has "$T/err" "tune.split = 0.7" "a split fraction out of range refused"
expect 1 $MPI -np 2 "$DPOPT" tune $D --eps 1 --split 0.2 --mean 3 --out "$T/x2"
has "$T/err" "tune.mean is not read by a tune with --split" "--mean beside --split refused"
# without --eps, every missing requirement in one message (train's set-up of the method the
# tune would train: a grid's first --algos, else the recipe's for the delta)
U="--data $T/tr --dim 123 --quiet"
expect 1 $MPI -np 2 "$DPOPT" tune $U --delta 1e-5 --steps 2,4 --out "$T/x3"
has "$T/err" "tune: two requirements are missing: (1) .*--eps E.*; (2) dp-sgd-rdp: needs a public Lipschitz bound" \
  "no --eps, no row bound: both named (delta > 0)"
check "one error line (got $(grep -c 'error:' "$T/err"))" [ "$(grep -c 'error:' "$T/err")" = 1 ]
expect 1 $MPI -np 2 "$DPOPT" tune $U --row-l1-bound 14 --out "$T/x4"
has "$T/err" "tune: two requirements are missing: (1) .*--eps E.*; (2) dp-nag-opt needs the smoothness L" \
  "no --eps, no L2 bound: both named (delta = 0)"
expect 1 $MPI -np 2 "$DPOPT" tune $U --delta 1e-5 --row-l2-bound 3.7416573867739413 --out "$T/x5"
has "$T/err" "tune: give --eps E (the total budget" "only --eps missing: the tune's own message"
# a tune without a grid refused by train's set-up does not announce its run first
expect 1 $MPI -np 2 "$DPOPT" tune $U --eps 1 --delta 1e-5 --out "$T/x6"
has "$T/err" "row_l2_bound" "no row bound: refused"
hasnot "$T/out" "no grid given" "the refused tune announced no run"
for x in x1 x2 x3 x4 x5 x6; do [ -e "$T/$x" ] && bad "a refused tune left $x" || ok; done
finish test_tune_split
