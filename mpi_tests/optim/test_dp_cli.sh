#!/bin/sh
# dpopt train with private algorithms on data/a9a (n = 32561, 14 binary features per row, so
# ||u||_1 <= 14 and ||u||_2 <= sqrt(14) < 3.75 are declared public bounds):
#  - dp-nag-opt --eps 1: the ledger journal of the run directory adds up to 1 (never more), as
#    printed by `dpopt ledger RUN`; a seeded run says NOT PRIVATE in every output;
#  - a fixed noise (algo.noise) too small for the budget: the ledger refuses, exit status 3,
#    the summary says budget_exhausted and the journal holds exactly the steps that fit;
#  - a private algorithm without a budget or without a sensitivity source is a usage error.
. "$(dirname "$0")/../lib/testlib.sh"
COMMON="--data $S/data/a9a --row-l1-bound 14 --row-l2-bound 3.75 --lambda 0.01 --quiet"

# --- dp-nag-opt spends exactly the budget
expect 0 $MPI -np 3 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --iters 60 --seed 7 --out "$T/run1"
has "$T/out" "NOT PRIVATE" "seeded run labelled in the summary"
has "$T/run1/summary.json" "NOT PRIVATE" "seeded run labelled in summary.json"
has "$T/run1/trace.csv" "NOT PRIVATE" "seeded run labelled in trace.csv"
expect 0 "$DPOPT" ledger "$T/run1"
cp "$T/out" "$T/ledger1"
spent=$(sed -n 's/^spent: *eps = \([0-9.eE+-]*\).*/\1/p' "$T/ledger1")
n=$(sed -n 's/^charges: *\([0-9]*\).*/\1/p' "$T/ledger1")
lines=$(grep -c '"step"' "$T/run1/ledger.jsonl")
# the journal's own per-step charges, summed independently
jsum=$(sed -n 's/.*"charge_eps":\([0-9.eE+-]*\).*/\1/p' "$T/run1/ledger.jsonl" | awk '{s += $1} END {printf "%.15f", s}')
if awk -v s="$spent" 'BEGIN {exit !(s <= 1 && s > 1 - 1e-9)}'; then ok; else bad "dpopt ledger total '$spent' is not 1 (within 1e-9, <= 1)"; cat "$T/ledger1"; fi
if awk -v s="$jsum" 'BEGIN {exit !(s > 1 - 1e-9 && s < 1 + 1e-12)}'; then ok; else bad "journal charges add up to $jsum"; fi
if [ -n "$n" ] && [ "$n" = "$lines" ] && [ "$n" -ge 1 ] && [ "$n" -le 60 ]; then ok; else bad "charges '$n' vs journal lines '$lines'"; fi
# an unseeded run is labelled PRIVATE
expect 0 $MPI -np 2 "$DPOPT" train $COMMON --algo dp-nag-opt --eps 1 --iters 20 --out "$T/run2"
has "$T/out" "PRIVATE: (eps=1" "unseeded run labelled private"

# --- budget exhausted: fixed noise b = 0.01 costs 28 / (32561 * 0.01) = 0.086 per step (no
# intercept: with it the L1 bound is 14 + 1)
expect 3 $MPI -np 2 "$DPOPT" train $COMMON --no-intercept --algo dp-gd --eps 1 --iters 50 --seed 3 --set algo.noise=0.01 --out "$T/run3"
has "$T/out" "budget exhausted" "summary says the budget is exhausted"
has "$T/run3/summary.json" "budget_exhausted" "summary.json status"
steps=$(grep -c '"step"' "$T/run3/ledger.jsonl")
# floor(1 / 0.0860) = 11 steps fit (the grid inflation is ~1e-10 relative)
if [ "$steps" = "11" ]; then ok; else bad "journal has $steps charges, want 11"; fi

# --- usage errors
expect 1 "$DPOPT" train $COMMON --algo dp-nag
has "$T/err" "give the budget" "private algorithm without --eps"
expect 1 "$DPOPT" train --data "$S/data/a9a" --quiet --algo dp-gd --eps 1 --lambda 0.01 --out "$T/nosens"
has "$T/err" "no public sensitivity" "no clip and no declared L1 bound"
# refused before the data are loaded and before the run directory exists (dpo_algo_check)
hasnot "$T/err" "loaded" "no-sensitivity refusal before loading the data"
check "a refused run leaves no run directory" test ! -e "$T/nosens"
# a misspelled key is named even when the run is refused for another reason
expect 1 "$DPOPT" train --data "$S/data/a9a" --quiet --algo dp-gd --eps 1 --set data.row_l1_bnd=14 \
  --out "$T/typo"
has "$T/err" "did you mean 'data.row_l1_bound'" "typo hint with the refusal"
has "$T/err" "no public sensitivity" "the refusal itself"
check "a refused run with a typo leaves no run directory" test ! -e "$T/typo"
# the SCO family: a Gaussian analysis needs delta > 0 and a public smoothness bound
expect 1 "$DPOPT" train --data "$S/data/a9a" --quiet --algo pnsgd --eps 1 --clip l2:1 --out "$T/sco"
has "$T/err" "pnsgd: declare data.row_l2_bound" "SCO without a smoothness bound refused"
expect 1 "$DPOPT" train --data "$S/data/a9a" --quiet --algo pnsgd --eps 1 --row-l2-bound 3.75 \
  --out "$T/sco"
has "$T/err" "delta > 0" "SCO without delta refused"
check "refused SCO runs leave no run directory" test ! -e "$T/sco"
# a step that needs L and has no declared bound is refused from the settings alone
expect 1 "$DPOPT" train --data "$S/data/a9a" --quiet --algo dp-gd --eps 1 --row-l1-bound 14 \
  --set data.row_l2_bnd=3.75 --out "$T/noL"
has "$T/err" "did you mean 'data.row_l2_bound'" "typo hint when the algorithm refuses"
has "$T/err" "declare data.row_l2_bound" "the refusal names the missing bound"
check "a refusal from the settings leaves no run directory" test ! -e "$T/noL"
# a run that fails after its directory exists leaves FAILED there (stage, reason, exit status);
# a non-private one (a private run clips rows over the bound instead: test_private_output.sh)
expect 2 "$DPOPT" train --data "$S/data/a9a" --quiet --algo gd --row-l1-bound 14 \
  --row-l2-bound 1 --out "$T/bigrow"
has "$T/bigrow/FAILED" "over the declared bound 1" "FAILED names the reason"
has "$T/bigrow/FAILED" "loading data" "FAILED names the stage"
has "$T/bigrow/FAILED" "exit status 2" "FAILED gives the exit status"
if [ ! -s "$T/bigrow/ledger.jsonl" ] || ! grep -q '"step"' "$T/bigrow/ledger.jsonl"; then ok; else
  bad "a run that failed before its first step has charges in its journal"; fi
# a completed run has no FAILED
[ ! -e "$T/run3/FAILED" ] && ok || bad "completed run has FAILED"

finish test_dp_cli
