#!/bin/sh
# Multi-party runs through the CLI (issue 7):
#  - `dpopt simulate` (iid, label, dirichlet): the parties' files hold exactly the original
#    data lines (same multiset), label skew puts the requested share of positives on party 0;
#  - parties with their own files and budgets, trust local, drop policy: party 1's smaller
#    budget runs out, it is dropped (journal event + trace line), the others go on (exit 0)
#    and no later charge touches party 1; summary.json names the trust mode;
#  - the same under the stop policy: exit 3, status budget_exhausted, nothing charged past
#    party 1's budget; two-rank parties over one data.train (shares mode) run;
#  - local and shares with minibatches: charges un-amplified (issue 11 item 2), and the printed
#    privacy line, summary.json and journal say what the coordinator sees.
. "$(dirname "$0")/../lib/testlib.sh"

grep -v '^#' "$S/data/a9a" | sort >"$T/orig"
n=$(wc -l <"$T/orig")
for split in iid label dirichlet; do
  expect 0 "$DPOPT" simulate --parties 3 --split $split --pos-frac 0.9 --alpha 0.3 --seed 5 \
    "$S/data/a9a" "$T/$split/p%d.svm"
  cat "$T/$split"/p0.svm "$T/$split"/p1.svm "$T/$split"/p2.svm | sort >"$T/got"
  if cmp -s "$T/orig" "$T/got"; then ok; else bad "$split: the parties' lines differ from the original"; fi
  for k in 0 1 2; do [ -s "$T/$split/p$k.svm" ] && ok || bad "$split: party $k empty"; done
done
# label: party 0 holds 90% of the positives (7841 in a9a), within rounding
p0=$(grep -c '^+1' "$T/label/p0.svm")
if [ "$p0" -ge 7050 ] && [ "$p0" -le 7060 ]; then ok; else bad "label split: party 0 has $p0 positives"; fi
sizes=$(for k in 0 1 2; do wc -l <"$T/iid/p$k.svm"; done | sort -n | tr '\n' ' ')
[ "$sizes" = "10853 10854 10854 " ] && ok || bad "iid sizes $sizes (n = $n)"

mkdir -p "$T/parts"
expect 0 "$DPOPT" simulate --parties 4 --seed 2 "$S/data/a9a" "$T/parts/a9a.%d"
COMMON="--row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --iters 20 --eps 1 --seed 3 --quiet \
  --set parties.count=4 --set parties.data=$T/parts/a9a.%d --set party.1.eps=0.5"

# drop: party 1 leaves at step 10, the run completes
expect 0 $MPI -np 4 "$DPOPT" train $COMMON --set privacy.trust=local \
  --set privacy.on_party_exhausted=drop --set parties.out="$T/drop.p%d" --out "$T/drop"
has "$T/drop/ledger.jsonl" '"event":"party_dropped","party":1,"step":10' "drop event"
has "$T/drop/trace.csv" '# step 10: party 1 dropped' "trace records the drop"
has "$T/drop/summary.json" '"trust":"local"' "trust in summary"
has "$T/drop/summary.json" '"trust_protects"' "trust sentence"
has "$T/drop/summary.json" '"dropped_at_step":10' "summary drop step"
c=$(grep -c '"parties":\[0,1,2,3\]' "$T/drop/ledger.jsonl")
[ "$c" = 10 ] && ok || bad "drop: $c charges touch all 4 parties (want 10)"
c=$(grep -c '"parties":\[0,2,3\]' "$T/drop/ledger.jsonl")
[ "$c" = 10 ] && ok || bad "drop: $c charges after the drop (want 10)"
"$DPOPT" ledger "$T/drop" >"$T/led" 2>&1
has "$T/led" 'party 1:   eps = 0.5 of 0.5' "party 1 spent its budget, no more"
has "$T/led" 'party 0:   eps = 1 of 1' "party 0 spent all"

# stop: exit 3 at party 1's budget
expect 3 $MPI -np 4 "$DPOPT" train $COMMON --out "$T/stop"
has "$T/stop/summary.json" '"status":"budget_exhausted"' "stop status"
c=$(grep -c '"charge_eps"' "$T/stop/ledger.jsonl")
[ "$c" = 10 ] && ok || bad "stop: $c charges (want 10)"
has "$T/stop/summary.json" '"trust":"central"' "central trust"

# minibatches (m < n) in local and shares modes: rank 0 draws the batch, so every charge is
# the un-amplified cost of its Laplace mechanism (recomputed from the journalled b, S1, d by
# test_parties --check-journal; main charged the amplified 0.1 where the cost was 1.49)
for tm in local shares; do
  expect 0 $MPI -np 4 "$DPOPT" train --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --iters 5 --eps 2 \
    --seed 3 --set parties.count=4 --set "parties.data=$T/parts/a9a.%d" --set algo.m=2000 \
    --set privacy.trust=$tm --set parties.out="$T/mb_$tm.p%d" --out "$T/mb_$tm"
  has "$T/out" "trust           $tm: the coordinator sees" "privacy line says what the coordinator sees"
  has "$T/mb_$tm/summary.json" '"trust_coordinator_sees"' "summary says what the coordinator sees"
  has "$T/mb_$tm/ledger.jsonl" "\"event\":\"trust $tm: the coordinator sees" "journal label"
  has "$T/mb_$tm/ledger.jsonl" '"sampling":"wor","accounting":"pure"' "sampled, not amplified"
  hasnot "$T/mb_$tm/ledger.jsonl" '"accounting":"subsampled"' "no amplification"
  check "$tm: charges are the un-amplified cost" "$B/mpi_tests/comm/test_parties" --check-journal \
    "$T/mb_$tm/ledger.jsonl"
done

# two parties of two ranks each over one file, shares mode
expect 0 $MPI -np 4 "$DPOPT" train --data "$S/data/a9a" --test "$S/data/a9a.t" \
  --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --iters 5 --eps 1 --quiet \
  --set parties.count=2 --set privacy.trust=shares --set parties.out="$T/shares.p%d" --out "$T/shares"
has "$T/shares/summary.json" '"first_rank":2' "party 1 starts at rank 2"
has "$T/shares/summary.json" '"trust":"shares"' "shares trust"
# trust modes are for private algorithms; bad values are usage errors
expect 1 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" --algo gd --iters 2 --quiet \
  --set privacy.trust=local --out "$T/bad1"
expect 1 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" --algo dp-gd --eps 1 --row-l1-bound 14 \
  --iters 2 --quiet --set privacy.trust=secure --out "$T/bad2"
expect 1 $MPI -np 2 "$DPOPT" train --data "$S/data/a9a" --algo dp-gd --eps 1 --row-l1-bound 14 \
  --iters 2 --quiet --set parties.count=3 --out "$T/bad3"

finish test_parties_cli
