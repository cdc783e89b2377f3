#!/bin/sh
# Issue 13 (Experiments): jobs/acceps/run --quick (a9a, first 3000 / 2000 rows, eps 0.1 and 1,
# one repetition) writes into --out only: acceps.csv with the documented header and exactly one
# row per (private method, eps) plus the non-private lbfgs row; every run finished, its test
# accuracy is a number in [0, 1] and the non-private line beats the majority class (0.7638 on
# a9a.t); table.md has a row per method; the PNG is a PNG; method tune (not in the default list)
# runs dpopt tune and evaluates its chosen model.  Bad options exit 1.
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1
ls -R "$S/jobs/acceps" > "$T/before"
expect 0 env MPIRUN="$MPI" timeout 120 sh "$S/jobs/acceps/run" --quick --dpopt "$DPOPT" --out "$T/q"
csv=$T/q/acceps.csv
check "CSV header" [ "$(head -n 1 "$csv")" = "data,method,eps,delta,rep,status,test_accuracy,iterations,wall_s,elapsed_s" ]
methods="default default-pure dp-sgd-rdp pnsgd phased-sgd phased-erm sc-reduce phased-sc dp-gd dp-hb dp-shb dp-gdws dp-sgdws dp-onlinegdws dp-nag dp-nag-opt dp-masg dp-masg-opt dp-mag dp-smag"
want=$( (echo "lbfgs inf"; for e in 0.1 1; do for m in $methods; do echo "$m $e"; done; done) | sort)
got=$(tail -n +2 "$csv" | awk -F, '{print $2, $3}' | sort)
if [ "$got" = "$want" ]; then ok; else
  bad "CSV rows (method eps) differ:"; echo "$want" > "$T/want"; echo "$got" > "$T/got"; diff "$T/want" "$T/got" | head -20
fi
badrow=$(tail -n +2 "$csv" | awk -F, 'NF != 10 || $6 != "ok" || $7 !~ /^[0-9.eE+-]+$/ || $7 < 0 || $7 > 1 || $1 != "a9a" || $5 != 1 {print}')
check "every run ok with an accuracy in [0,1] (bad: $badrow)" [ -z "$badrow" ]
dbad=$(tail -n +2 "$csv" | awk -F, '($2 ~ /^(default$|dp-sgd-rdp|pnsgd|phased-|sc-reduce)/ && $4 != "1e-5") || ($2 ~ /^(dp-|default-pure)/ && $2 != "dp-sgd-rdp" && $4 != 0) {print $2}')
check "delta 1e-5 for the RDP methods, 0 for the pure-eps family (bad: $dbad)" [ -z "$dbad" ]
lb=$(awk -F, '$2 == "lbfgs" {print $7}' "$csv")
check "non-private lbfgs ($lb) beats the majority class 0.7638" awk -v a="$lb" 'BEGIN {exit !(a > 0.7638)}'
for m in $methods "lbfgs (non-private)"; do has "$T/q/table.md" "^| $m |" "table.md row for $m"; done
if command -v gnuplot >/dev/null; then
  check "PNG written" [ "$(head -c 4 "$T/q/acceps.png" | tail -c 3)" = PNG ]
fi
# --merge runs nothing and tables the rows of both directories: the runs column counts them
expect 0 sh "$S/jobs/acceps/run" --merge "$T/q $T/q" --no-plot --out "$T/m"
has "$T/m/table.md" '^| default | 1e-5 | [0-9.]* | [0-9.]* | 2 | ' "merged table: 2 runs a cell"
has "$T/m/table.md" '^| dp-gd | 0 | [0-9.]* | [0-9.]* | 2 | ' "merged table: 2 runs a cell (dp-gd)"
# method tune: dpopt tune on the split training rows, the chosen model evaluated on the test rows
expect 0 env MPIRUN="$MPI" timeout 120 sh "$S/jobs/acceps/run" --quick --methods tune --eps 1 --no-plot \
  --dpopt "$DPOPT" --out "$T/t"
trow=$(awk -F, '$2 == "tune" && $3 == 1 && $4 == "1e-5" && $6 == "ok" && $7 ~ /^[0-9.]+$/ && $7 >= 0 && $7 <= 1' "$T/t/acceps.csv")
check "tune row: ok, accuracy in [0,1] ($(tail -n 1 "$T/t/acceps.csv"))" [ -n "$trow" ]
check "tune: the chosen model's config.ini" [ -s "$T/t/runs/tune-eps1-r1/config.ini" ]
ls -R "$S/jobs/acceps" > "$T/after"
check "nothing written into jobs/acceps" cmp -s "$T/before" "$T/after"
expect 1 sh "$S/jobs/acceps/run" --bogus
expect 1 sh "$S/jobs/acceps/run" --reps 0 --dpopt "$DPOPT" --out "$T/r0"
expect 1 sh "$S/jobs/acceps/run" --data mnist --dpopt "$DPOPT" --out "$T/r1"
expect 0 sh "$S/jobs/acceps/run" --help
has "$T/out" "--out DIR" "--help documents --out"
finish test_acceps
