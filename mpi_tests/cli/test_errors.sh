#!/bin/sh
# Errors (issue 14, "One error, once" and "Small defects found by fuzzing and bad input"):
#  - every exit status of doc/reference.md's table, one case each (0 ok, 1 usage, 2 data, 3 budget,
#    4 runtime, 5 interrupted); a missing data file is 2, a usage error with bad data is 1;
#  - an error every rank has is printed once (rank 0), an agreed one names the rank that found
#    it, one only a single rank knows is printed by it and ends the job (no hang);
#  - "did you mean" for a mistyped flag and config key, the key's warning before the error;
#  - --eps 0, --dim past 2^30: messages that say what is wrong;
#  - a ragged CSV gets the same message at 1, 2 and 3 ranks, wherever the odd row is.
. "$(dirname "$0")/../lib/testlib.sh"
A="$S/data/a9a"
COMMON="--data $A --row-l1-bound 14 --row-l2-bound 3.75 --lambda 0.01 --quiet"
errs() { grep -c 'error:' "$T/err"; }

# ---- the exit-status table
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo gd --iters 2 --out "$T/ok"
expect 1 "$DPOPT" train $COMMON --algo gd --bogus 3
expect 2 "$DPOPT" train --data "$T/no-such-file" --algo gd --iters 2 --out "$T/miss"
has "$T/err" "no-such-file: cannot open" "missing data file named"
# usage is checked before the data are read: a bad flag with a missing file is still 1
expect 1 "$DPOPT" train --data "$T/no-such-file" --algo dp-gd --eps 0 --out "$T/miss2"
check "no run directory for a refused run" test ! -e "$T/miss2"
expect 3 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-gd --eps 1 --iters 50 --seed 3 \
  --set algo.noise=0.01 --out "$T/budget"
expect 4 "$DPOPT" newton "$A" --lambda 0.01 --maxit 1
has "$T/err" "gtol" "no convergence says so"
expect 5 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag --eps 1 --iters 30 --seed 2 \
  --set run.stop_after=3 --out "$T/intr"

# ---- one error, once
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --gtol 1e-3 --algo dp-gd --eps 1 --out "$T/g"
check "gtol refusal printed once: $(cat "$T/err")" test "$(errs)" = 1
has "$T/err" "algo.gtol" "gtol refusal"
hasnot "$T/err" "\[rank" "an error every rank has names no rank"
hasnot "$T/err" "loaded" "gtol refused before the data are loaded"
expect 1 $MPI -np 3 "$DPOPT" train $COMMON --algo dp-gd --eps 0 --out "$T/e0"
check "eps 0 printed once" test "$(errs)" = 1
has "$T/err" "eps must be > 0" "--eps 0 says eps must be > 0"
hasnot "$T/err" "give the budget" "--eps 0 is not a missing budget"
# a bad label on the last rank's part: found by rank 2 only, printed once naming it
awk 'NR == 30000 { $1 = "7" } { print }' "$A" >"$T/badlab"
expect 2 $MPI -np 3 "$DPOPT" train --data "$T/badlab" --algo gd --iters 2 --quiet --out "$T/bl"
check "data error printed once: $(cat "$T/err")" test "$(errs)" = 1
has "$T/err" "\[rank 2\] error: .*badlab:30000: unknown label" "data error names rank 2 and the line"
# the probe: all ranks / an agreed error / an error only rank 1 knows
expect 1 $MPI -np 3 "$B/mpi_tests/cli/fail_probe" all
check "all ranks failing: one line: $(cat "$T/err")" test "$(errs)" = 1
has "$T/err" "probe: error: rank 0 failed" "all ranks failing: rank 0's words, no rank named"
expect 2 $MPI -np 3 "$B/mpi_tests/cli/fail_probe" agreed
check "agreed: one line" test "$(errs)" = 1
has "$T/err" "\[rank 1\] error: only rank 1 saw this" "agreed: names the finder"
DPOPT_FAIL_WAIT=1 expect 2 $MPI -np 3 -x DPOPT_FAIL_WAIT "$B/mpi_tests/cli/fail_probe" one
has "$T/err" "\[rank 1\] error: rank 1 alone knows this" "an error one rank knows is printed"
has "$T/err" "did not report" "and the job is ended"

# ---- did you mean
expect 1 $MPI -np 2 "$DPOPT" train $COMMON --iter 5
has "$T/err" "unknown option '--iter': did you mean --iters?" "flag typo"
check "flag typo printed once" test "$(errs)" = 1
expect 1 "$DPOPT" train $COMMON --algo gd --quiett
has "$T/err" "did you mean --quiet?" "flag typo (extra letter)"
expect 1 "$DPOPT" train $COMMON --algo gd --zzz
hasnot "$T/err" "did you mean" "no hint for a flag far from every flag"
# data.row_l2_bnd: the run fails for another reason (no sensitivity), the hint comes first
expect 1 $MPI -np 2 "$DPOPT" train --data "$A" --lambda 0.01 --quiet --algo dp-gd --eps 1 \
  --set data.row_l2_bnd=3.75 --out "$T/typo"
has "$T/err" "unknown setting 'data.row_l2_bnd': did you mean 'data.row_l2_bound'?" "key typo"
check "key typo warning before the error: $(cat "$T/err")" \
  test "$(grep -n 'did you mean' "$T/err" | cut -d: -f1)" -lt "$(grep -n 'error:' "$T/err" | cut -d: -f1)"
check "key typo warned once" test "$(grep -c 'row_l2_bnd' "$T/err")" = 1
printf '[algo]\nname = gd\niter = 3\n' >"$T/c.ini"
# fail closed (a typo is an error, not a warning): exit 1, nothing written
expect 1 "$DPOPT" train --config "$T/c.ini" --data "$A" --row-l2-bound 3.75 --iters 2 --quiet --out "$T/ini"
has "$T/err" "c.ini:3: unknown setting 'algo.iter': did you mean 'algo.iters'?" "key typo in a config file"
check "a refused typo writes no run directory" test ! -e "$T/ini"
# a real key of an algorithm, read only after the data are loaded, is no typo
expect 0 "$DPOPT" train $COMMON --algo phased-erm --eps 1 --delta 1e-5 --set algo.D=2 --out "$T/D"
hasnot "$T/err" "algo.D" "algo.D is not reported"

# ---- small defects
expect 1 "$DPOPT" train $COMMON --algo gd --dim 99999999999
has "$T/err" "2^30" "--dim names the limit"
hasnot "$T/err" ">= 0" "--dim does not say >= 0"
# a 40-byte bin header with huge counts: a clean format error, at 1 and 2 ranks
printf 'DPOBIN01\377\377\377\377\377\377\377\007\001\000\000\000\001\000\000\000\377\377\377\377\377\377\377\007\000\000\000\000\000\000\000\000' >"$T/h.bin"
expect 2 "$DPOPT" info --format bin "$T/h.bin"
has "$T/err" "truncated file: 40 bytes" "huge bin header"
expect 2 $MPI -np 2 "$DPOPT" info "$T/h.bin"
has "$T/err" "truncated file: 40 bytes" "huge bin header at 2 ranks"
# IDX images whose header promises 3 x 2 x 151M pixels in a 28-byte file (found by make fuzz:
# the loader allocated 7 GB before reading): refused from the file size
printf '\000\000\010\001\000\000\000\003\000\001\002' >"$T/l.idx"
printf '\000\000\010\003\000\000\000\003\000\000\000\002\011\000\377\375\000\000\010\003\004\005\006\007\010\011\012\013' >"$T/i.idx"
expect 2 "$DPOPT" info --format idx --idx-labels "$T/l.idx" "$T/i.idx"
has "$T/err" "i.idx: truncated file: its header needs" "huge IDX header"
# ragged CSV: header + 9 rows of 4 fields, row k with 3 fields (k = 1: every later row blamed
# against it, as a single reader sees it)
for k in 1 4 8; do
  i=1; : >"$T/r$k.csv"; echo "y,a,b,c" >>"$T/r$k.csv"
  while [ $i -le 9 ]; do
    if [ $i = "$k" ]; then echo "1,0.5,0.25" >>"$T/r$k.csv"; else echo "-1,0.5,0.25,0.125" >>"$T/r$k.csv"; fi
    i=$((i + 1))
  done
  if [ "$k" = 1 ]; then want="r1.csv:3: 4 fields, expected 3 like the rows before"
  else want="r$k.csv:$((k + 1)): 3 fields, expected 4 like the rows before"; fi
  for np in 1 2 3; do
    expect 2 $MPI -np $np "$DPOPT" info "$T/r$k.csv"
    has "$T/err" "$want" "ragged CSV row $k at $np ranks"
  done
done
finish test_errors
