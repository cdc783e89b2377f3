#!/bin/sh
# The DP-GD family under secure aggregation resumes too (dp-gd, full batches, discrete Gaussian
# shares charged rdp-rho; 3 parties on 3 ranks, each its own file of a9a, collude 1;
# doc/design.md, "Dropouts"): its checkpoint keeps the active-party set (dp_ckpt.c).
#  - the last party's rank dies in release 8 (dpopt-test's --test-party-kill 8): the job ends
#    non-zero, the checkpoint (step 5) and every journal stay;
#  - `--resume RUN` with the three parties: steps 6-8 are redone and charged again, and since a
#    DP-GD plan spends its whole budget in its 20 equal charges, the run ends 3 steps short
#    with the budget exhausted (exit 3, model.txt = the last released iterate): the
#    coordinator's journal holds exactly 20 charges, every one at the plan's one rho, never
#    more than the budget; party 2's own journal (it journalled release 8) holds as many and
#    replays to the coordinator's view of it; party 1's is never above that view;
#  - dropping a party at the resume is refused for this family (its checkpoint holds the whole
#    table's active set), writing nothing.
. "$(dirname "$0")/../lib/testlib.sh"

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 3 --seed 4 "$S/data/a9a" "$T/parts/p%d"
AR="--dim 123 --set parties.data=$T/parts/p%d --row-l1-bound 14 --row-l2-bound 3.75 --clip l2:1 \
  --eps 1 --delta 1e-5 --algo dp-gd --iters 20 --set privacy.trust=secagg --set parties.count=3"
charges() { grep -c '"parties":\[0,1,2\]' "$1"; }
ptotal() { tail -n 1 "$1" | sed -n 's/.*"party_total_eps":\[\([^]]*\)\].*/\1/p' |
  awk -F, -v k="$2" '{print $(k + 1)}'; }
jtotal() { "$DPOPT" ledger "$1" | sed -n 's/^spent: *eps = \([0-9.e+-]*\),.*/\1/p'; }

$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 8 $AR --checkpoint-every 5 \
  --set parties.out="$T/k.p%d" --out "$T/k" >"$T/out" 2>"$T/err"
[ "$?" != 0 ] && ok || bad "the job with a killed rank exited 0"
[ -f "$T/k/checkpoint" ] && [ ! -e "$T/k/model.txt" ] && ok || bad "killed: want a checkpoint, no model.txt"
[ "$(charges "$T/k/ledger.jsonl")" = 8 ] && ok || bad "killed: the coordinator's journal holds $(charges "$T/k/ledger.jsonl") charges (want 8)"
[ "$(grep -c '"mechanism"' "$T/k.p2/ledger.party2.jsonl")" = 8 ] && ok || bad "killed: party 2 journalled $(grep -c '"mechanism"' "$T/k.p2/ledger.party2.jsonl") releases (want 8)"

expect 3 $MPI -np 3 "$DPOPT" train --resume "$T/k"
has "$T/err" "resuming $T/k at iteration 5" "resumed at the checkpoint"
has "$T/err" "the journal holds 3 charge(s) after the checkpoint" "orphans stay spent"
has "$T/err" "privacy budget exhausted" "the redone steps took the last 3 steps' budget"
[ -f "$T/k/model.txt" ] && ok || bad "resumed: no model.txt"
[ "$(charges "$T/k/ledger.jsonl")" = 20 ] && ok || bad "resumed: $(charges "$T/k/ledger.jsonl") charges (want 8 + 12)"
check "resumed: the coordinator spent at most its budget" awk -v e="$(jtotal "$T/k/ledger.jsonl")" \
  'BEGIN {exit !(e > 0.9 && e <= 1)}'
rho=$(grep '"parties":\[0,1,2\]' "$T/k/ledger.jsonl" | sed -n 's/.*"rho":\([0-9.e+-]*\)[,}].*/\1/p' | sort -u)
[ "$(echo "$rho" | wc -l)" = 1 ] && [ -n "$rho" ] && ok || bad "resumed: rho values '$rho' (want the plan's one)"
expect 0 "$DPOPT" ledger "$T/k"
[ "$(grep -c '"mechanism"' "$T/k.p2/ledger.party2.jsonl")" = 20 ] && ok || bad "party 2 holds $(grep -c '"mechanism"' "$T/k.p2/ledger.party2.jsonl") charges (want 8 + 12)"
close "$(jtotal "$T/k.p2/ledger.party2.jsonl")" "$(ptotal "$T/k/ledger.jsonl" 2)" 1e-12 \
  "party 2's own journal replays to the coordinator's view"
check "party 1's own total is not above the coordinator's view" awk -v p="$(jtotal "$T/k.p1/ledger.party1.jsonl")" \
  -v c="$(ptotal "$T/k/ledger.jsonl" 1)" 'BEGIN {exit !(p > 0 && p <= c * (1 + 1e-12))}'

# dropping a party is refused for this family, writing nothing
$MPI -np 3 "$DPOPT_TEST" train --test-party-kill 8 $AR --checkpoint-every 5 \
  --set parties.out="$T/d.p%d" --out "$T/d" >"$T/out" 2>"$T/err"
(cd "$T" && find d d.p? -type f | sort | xargs sha256sum) >"$T/d.sum"
expect 1 $MPI -np 2 "$DPOPT" train --resume "$T/d" --set parties.count=2
has "$T/err" "--resume cannot change parties.count" "dp-gd: dropping a party refused"
(cd "$T" && find d d.p? -type f | sort | xargs sha256sum) | cmp -s - "$T/d.sum" && ok ||
  bad "a refused resume wrote something"
# (central and local trust resume too: mpi_tests/run/test_parties_resume.sh)
finish test_secagg_resume_gd
