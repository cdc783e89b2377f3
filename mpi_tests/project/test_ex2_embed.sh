#!/bin/sh
# Issue 17: examples/ex2_embed.c, a private training embedded in a host MPI program.  On 3
# ranks, the training runs on a 2-rank sub-communicator through the run API: its output is
# labelled PRIVATE, its test accuracy on a9a.t beats the majority class (0.7638), and it leaves
# a complete run directory whose journal holds the charges.
. "$(dirname "$0")/../lib/testlib.sh"
expect 0 $MPI -np 3 "$B/examples/ex2_embed" "$S/data/a9a" "$S/data/a9a.t" "$T/run"
has "$T/out" "ex2_embed: PRIVATE: (eps=1" "the example's output is labelled PRIVATE"
hasnot "$T/out" "NOT PRIVATE" "not seeded"
acc=$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' "$T/out")
if awk -v a="$acc" 'BEGIN { exit !(a > 0.7638) }'; then ok; else
  bad "ex2_embed test accuracy '$acc' (want > 0.7638, the majority class)"; cat "$T/out"; fi
has "$T/run/summary.json" '"ranks":2,' "trained on the 2-rank sub-communicator"
has "$T/run/model.txt" "PRIVATE: (eps=1" "model.txt carries the label"
has "$T/run/ledger.jsonl" '"step"' "the journal holds the charges"
check "a finished run keeps no checkpoint" test ! -e "$T/run/checkpoint"
check "no FAILED" test ! -e "$T/run/FAILED"
expect 1 $MPI -np 3 "$B/examples/ex2_embed"
has "$T/err" "usage" "usage without arguments"
finish test_ex2_embed
