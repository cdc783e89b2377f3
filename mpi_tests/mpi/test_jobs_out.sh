#!/bin/sh
# Issue 14: experiment scripts write to --out, never into the source tree.  jobs/parties/run
# (one party count, one seed, two iterations) runs with a temporary --out; a checksum of the
# source tree's jobs/, data/, src/ and include/ is unchanged and the outputs are in --out.
# The parties table names the budget it was run with (the committed one read "eps =  per").
# jobs/sco/excess_vs_n.sh --plot-only redraws its panels from a copy of the committed table
# into --out; the admm scripts take --out and --help (their runs take minutes: not run here).
. "$(dirname "$0")/testlib.sh"
tree() { (cd "$S" && find jobs data src include -type f | LC_ALL=C sort | xargs cksum); }
tree >"$T/before"
expect 0 env PS=1 REPS=1 ITERS=2 EPS=0.3 BUILD="$B" sh "$S/jobs/parties/run" --out "$T/o"
check "parties.csv in --out" test -s "$T/o/parties.csv"
has "$T/o/parties.txt" "eps = 0.3 per party" "the table names the budget"
hasnot "$S/jobs/parties/out/parties.txt" "eps =  per" "committed table names its budget"
tree >"$T/after"
if cmp -s "$T/before" "$T/after"; then ok; else bad "jobs/parties/run modified the source tree"; diff "$T/before" "$T/after" | head; fi
if command -v gnuplot >/dev/null 2>&1; then
  mkdir "$T/sco"; cp "$S/jobs/sco/out/table.txt" "$T/sco/"
  expect 0 sh "$S/jobs/sco/excess_vs_n.sh" --out "$T/sco" --plot-only
  check "sco a9a plot in --out" test -s "$T/sco/excess_vs_n_a9a.png"
fi
for f in admm/consensus_ranks.sh admm/dpadmm_fig12.sh sco/excess_vs_n.sh; do
  expect 0 sh "$S/jobs/$f" --help
  has "$T/out" "--out DIR" "jobs/$f documents --out"
  expect 1 sh "$S/jobs/$f" --bogus
done
for f in thesis4/run paper001/run; do
  has "$S/jobs/$f" 'OUT="${TMPDIR:-/tmp}/dpopt-jobs' "jobs/$f defaults to a directory outside the source tree"
done
tree >"$T/after2"
if cmp -s "$T/before" "$T/after2"; then ok; else bad "a jobs script modified the source tree"; diff "$T/before" "$T/after2" | head; fi
expect 1 sh "$S/jobs/parties/run" --bogus
finish test_jobs_out
