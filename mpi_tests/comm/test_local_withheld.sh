#!/bin/sh
# The withheld round of privacy.trust = local and shares (doc/design.md, "Threat model"): after
# its guard and its noise every rank all-reduces a failure flag before the reduce; if any rank
# failed, every rank zeroes its sums.  dpopt-test's --test-party-fail 3 (never in the installed
# dpopt) makes the last party fail in its 3rd noised request before its guard is asked, as a
# refusal.  For dp-gd with 3 parties under local and under shares:
#  - the run ends FAILED (exit 1), no model.txt, the party's reason printed once;
#  - nothing of release 3 reached the coordinator: every sum it received of that round is zero
#    (the "[TEST]" line of rank 0; with the flag's all-reduce removed the other parties' noised
#    sums, under shares their shares short of one, arrive and this check fails);
#  - nothing of it was applied: trace.csv's last row is iteration 2;
#  - the journals: the failing party's holds releases 1, 2; the other party's 1 to 3 (it
#    charged release 3 before the flag withheld it: an over-charge, never an under-charge);
#    the coordinator's 1 to 3 (charged before the request); each replays (dpopt ledger).
. "$(dirname "$0")/../lib/testlib.sh"

charges() { grep -c '"mechanism"' "$1"; }
for tr in local shares; do
  R="$T/$tr"
  expect 1 $MPI -np 3 "$DPOPT_TEST" train --data "$S/data/a9a" --row-l2-bound 3.75 --clip l2:1 \
    --eps 1 --set privacy.trust=$tr --set parties.count=3 --algo dp-gd --iters 5 --quiet \
    --set parties.out="$R.p%d" --out "$R" --test-party-fail 3
  [ "$(grep -c 'a planted local failure in noised release 3' "$T/err")" = 1 ] && ok ||
    bad "$tr: the party's reason is printed $(grep -c 'a planted local failure' "$T/err") times (want once)"
  check "$tr: FAILED, no model.txt" test -f "$R/FAILED" -a ! -f "$R/model.txt"
  has "$T/err" "the coordinator's view of the withheld round: 0 of its 125 sums nonzero" \
    "$tr: nothing of the withheld round reached the coordinator"
  last=$(grep -v '^#' "$R/trace.csv" | tail -n 1 | cut -d, -f1)
  [ "$last" = 2 ] && ok || bad "$tr: trace.csv's last row is iteration '$last' (want 2: release 3 not applied)"
  for j in "$R.p2/ledger.party2.jsonl:2" "$R.p1/ledger.party1.jsonl:3" "$R/ledger.jsonl:3"; do
    f=${j%:*}
    [ "$(charges "$f")" = "${j##*:}" ] && ok || bad "$tr: $f holds $(charges "$f") charges (want ${j##*:})"
    expect 0 "$DPOPT" ledger "$f"
  done
done
finish test_local_withheld
