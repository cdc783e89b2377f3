#!/bin/sh
# dp-sgd-rdp's multiplier search under the pld ledger (sco_dpsgd.c, dpsgd_ledger_z_search):
# placed on a 16x coarser PLD grid, then on a 4x coarser one, then secant steps on the ledger's
# grid.  For a table of plans (Poisson and wor batches, 200 to 3000 steps, eps 0.5 to 2):
#  - the multiplier equals the previous search's (secant steps from the RDP multiplier on the
#    ledger's grid alone, revision e040ddf) within the stated tolerance: both put the plan's
#    PLD eps in [(1 - 1e-4) eps, eps], so the multipliers agree to ~1e-4 / |d log eps / d log z|
#    (1e-4 here);
#  - the ledger accepted every planned step and spent at most eps (never less noise than the
#    budget needs: the ledger's own bound decides);
#  - the search paid at most 3 compositions on the ledger's grid (the previous one paid 4-7)
#    and at most 8 on each coarse one (a quarter and a sixteenth of the window each).
# DP-ADMM's --sigma-rule ledger (dpadmm.c, ledger_sigma): secant steps on the pld ledger's
# bound, the spent eps within 1e-6 of the budget (as its bisection to 1e-10 in sigma) in at
# most 8 compositions (the bisection paid 33 on this plan).
. "$(dirname "$0")/../lib/testlib.sh"
export DPOPT_CALIB_CACHE=off
"$DPOPT" gen logistic --n 2000 --d 5 --seed 3 "$T/s.txt" >/dev/null 2>&1 || bad "gen"
A="--data $S/data/a9a --row-l2-bound 3.75 --public-n 32561"
P="--data $T/s.txt --row-l2-bound 3 --public-n 1000000 --batch 1000"
W="--set privacy.neighbours=replace-one --set algo.sampling=wor"
# eps | z of the previous search | plan
while read -r eps zp args; do
  rm -rf "$T/r"
  expect 0 "$DPOPT" train $args --eps "$eps" --delta 1e-5 --no-trace-loss --trace-every 0 \
    --verbose --out "$T/r"
  z=$(sed -n 's/.*"noise_multiplier": *\([0-9.e+-]*\).*/\1/p' "$T/r/summary.json" | head -1)
  spent=$(jq -r .privacy.eps_spent "$T/r/summary.json")
  close "$z" "$zp" "$(awk -v z="$zp" 'BEGIN {print 1e-4 * z}')" "$args --eps $eps: multiplier"
  check "$args --eps $eps: spent $spent <= $eps" awk -v s="$spent" -v e="$eps" \
    'BEGIN {exit !(s != "" && s + 0 <= e + 0 && s + 0 >= 0.999 * e)}'
  has "$T/r/summary.json" '"eps_bound": *"pld"' "$args: charged by the PLD bound"
  nf=$(sed -n "s/.*search: \([0-9]*\) PLD compositions on the ledger's grid, \([0-9]*\) .*, \([0-9]*\) on a 16x.*/\1 \2 \3/p" "$T/err")
  check "$args --eps $eps: compositions '$nf' (fine <= 3, 4x and 16x coarse <= 8 each)" awk -v n="$nf" \
    'BEGIN {split(n, a, " "); exit !(n != "" && a[1] >= 1 && a[1] <= 3 && a[2] <= 8 && a[3] <= 8)}'
done <<PLANS
1 0.8947724805719514 $A --iters 200
0.5 1.585722611434558 $A --iters 600
1 1.2924423646242653 $A --iters 1272
2 1.368103899471286 $A --iters 300 --batch 1024
1 0.934553460108018 $A $W --iters 300
1 0.6409737077491979 $P --iters 1000
2 0.5884650921463982 $P --iters 3000
PLANS
"$DPOPT" gen logistic --n 2000 --d 8 --l1-bound 3 --seed 5 "$T/a.txt" >/dev/null 2>&1 || bad "gen"
rm -rf "$T/r"
expect 0 "$DPOPT" admm "$T/a.txt" --lambda 0 --row-l2-bound 3 --maxit 20 --method dpaccadmm \
  --clip 3 --eps 0.5 --sigma-rule ledger --verbose --out "$T/r"
close "$(jq -r .privacy.eps_spent "$T/r/summary.json")" 0.5 1e-6 "dpadmm: ledger sigma spends eps"
n=$(sed -n 's/.*ledger sigma .*(secant on the PLD bound): \([0-9]*\) PLD compositions.*/\1/p' "$T/err")
check "dpadmm: ledger sigma by the secant in '$n' <= 8 compositions" \
  awk -v n="$n" 'BEGIN {exit !(n != "" && n + 0 >= 1 && n + 0 <= 8)}'
finish test_pld_search
