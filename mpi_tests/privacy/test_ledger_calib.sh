#!/bin/sh
# Tighter accounting (issue 13, privacy.calibrate): with delta > 0 the pure-eps algorithms
# scale their per-step budgets by the largest c for which the ledger's own composition of the
# declared plan fits (eps, delta) (dpo__dp_calibrate, src/optim/dp_common.c):
#  - at --eps 1 --delta 1e-5 the ledger spends between 0.99 and 1 of the budget (it spent
#    0.375 with the basic eps/T split), for dp-gd (uniform), dp-nag-opt (optimal allocation,
#    001 (4.4)), dp-gdws (weighted gradient), dp-smag (sampled, per-stage shares);
#  - the summary's total is the ledger's replay of the journal (`dpopt ledger`);
#  - stdout's release plan (--verbose) says "per-step budgets scaled by c = ...";
#  - privacy.calibrate = basic reproduces the papers' split (no scaling, 0.375 spent) and
#    --delta 0 has nothing to gain (no scaling); a bad value is refused.
. "$(dirname "$0")/../lib/testlib.sh"
"$DPOPT" gen logistic --n 2000 --d 5 --l1-bound 5 --seed 4 "$T/g.txt" >/dev/null 2>&1 || bad "gen"
C="--data $T/g.txt --row-l1-bound 5 --row-l2-bound 5 --lambda 0.01 --quiet --verbose --eps 1"
js() { jq -r "$2" "$1/summary.json" 2>/dev/null; }
in01() { awk -v s="$1" -v lo="$2" 'BEGIN {exit !(s != "" && s >= lo && s <= 1)}'; }

for a in dp-gd dp-nag-opt dp-gdws dp-smag; do
  extra=""
  case $a in dp-smag) extra="--batch 200 --set algo.n1=4";; esac
  expect 0 $MPI -np 2 "$DPOPT" train $C --delta 1e-5 $extra --algo $a --out "$T/$a"
  has "$T/out" "per-step budgets scaled by c = " "$a: stdout states the scaling"
  spent=$(js "$T/$a" .privacy.eps_spent)
  check "$a: ledger spent '$spent' in [0.99, 1]" in01 "$spent" 0.99
  expect 0 "$DPOPT" ledger "$T/$a"
  replay=$(sed -n 's/^spent: *eps = \([0-9.eE+-]*\),.*/\1/p' "$T/out")
  close "$spent" "$replay" 1e-12 "$a: summary total vs the ledger's replay"
done

# the papers' split: basic composition, no scaling
expect 0 $MPI -np 2 "$DPOPT" train $C --delta 1e-5 --set privacy.calibrate=basic --algo dp-gd --out "$T/basic"
hasnot "$T/out" "scaled by c" "privacy.calibrate = basic"
spent=$(js "$T/basic" .privacy.eps_spent)
check "basic split spends '$spent' < 0.5 at delta 1e-5 (the ledger's RDP bound of eps/T shares)" \
  awk -v s="$spent" 'BEGIN {exit !(s != "" && s > 0 && s < 0.5)}'
# pure budget: the ledger composes by the basic sum, nothing to gain
expect 0 $MPI -np 2 "$DPOPT" train $C --algo dp-gd --out "$T/pure"
hasnot "$T/out" "scaled by c" "delta = 0: no scaling"
check "delta = 0 spends <= 1" in01 "$(js "$T/pure" .privacy.eps_spent)" 0.99
expect 1 $MPI -np 2 "$DPOPT" train $C --delta 1e-5 --set privacy.calibrate=rdp --algo dp-gd --out "$T/bad"
has "$T/err" "privacy.calibrate = 'rdp'" "a bad privacy.calibrate is refused"
finish test_ledger_calib
