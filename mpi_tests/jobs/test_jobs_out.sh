#!/bin/sh
# Issue 14: experiment scripts write to --out, never into the source tree.  jobs/parties/run
# (one party count, one seed, two iterations) runs with a temporary --out; a checksum of the
# source tree's jobs/, data/, src/ and include/ is unchanged and the outputs are in --out.
# The parties table names the budget it was run with (the committed one read "eps =  per").
# jobs/parties/run --trust --quick: the trust table's rows exist with accuracies in [0,1].
# jobs/sco/excess_vs_n.sh --plot-only redraws its panels from a copy of the committed table
# into --out; the admm scripts take --out and --help (their runs take minutes: not run here).
# The quick modes of jobs/scaling, jobs/costmodel (--fit-only), jobs/hamsi/table31.sh, jobs/plot,
# jobs/admm/dpadmm_fig12.sh (--plot-only) and jobs/slurm/train.sbatch run with --out into $T (and
# with no --out, TMPDIR=$T/tmp: the default is under $TMPDIR); `git status --porcelain` of the
# source tree is the same before and after (skipped when the source tree is not its own git
# work tree, as in make distcheck's read-only copy).
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1
tree() { (cd "$S" && find jobs data src include -type f | LC_ALL=C sort | xargs cksum); }
tree >"$T/before"
gitst=no
if command -v git >/dev/null 2>&1 && [ "$(git -C "$S" rev-parse --show-toplevel 2>/dev/null)" = "$S" ]; then
  gitst=yes
  git -C "$S" status --porcelain --untracked-files=all >"$T/git-before"
fi
expect 0 env PS=1 REPS=1 ITERS=2 EPS=0.3 BUILD="$B" sh "$S/jobs/parties/run" --out "$T/o"
check "parties.csv in --out" test -s "$T/o/parties.csv"
has "$T/o/parties.txt" "eps = 0.3 per party" "the table names the budget"
hasnot "$S/doc/results/parties/out/parties.txt" "eps =  per" "committed table names its budget"
# --trust --quick (issue 12): central, local and secagg on a9a over 2 parties, iid and label;
# every (split, trust) row is in the CSV with an accuracy in [0,1], and the markdown table too
expect 0 env BUILD="$B" sh "$S/jobs/parties/run" --trust --quick --out "$T/tq"
for sp in iid label; do
  for tr in central local secagg; do
    a=$(awk -F, -v s="$sp" -v t="$tr" '$1 == s && $2 == 2 && $3 == t { print $8 }' "$T/tq/trust.csv")
    if awk -v a="$a" 'BEGIN { exit !(a ~ /^[0-9.eE+-]+$/ && a + 0 >= 0 && a + 0 <= 1) }'; then ok; else
      bad "trust.csv: $sp $tr accuracy '$a' is not a number in [0,1]"; fi
  done
  has "$T/tq/trust.md" "| $sp | 2 | 0." "trust.md row for $sp"
done
if command -v gnuplot >/dev/null 2>&1; then check "trust.png in --out" test -s "$T/tq/trust.png"; fi
tree >"$T/after"
if cmp -s "$T/before" "$T/after"; then ok; else bad "jobs/parties/run modified the source tree"; diff "$T/before" "$T/after" | head; fi
if command -v gnuplot >/dev/null 2>&1; then
  mkdir "$T/sco"; cp "$S/doc/results/sco/table.txt" "$T/sco/"
  expect 0 sh "$S/jobs/sco/excess_vs_n.sh" --out "$T/sco" --plot-only
  check "sco a9a plot in --out" test -s "$T/sco/excess_vs_n_a9a.png"
fi
for f in admm/consensus_ranks.sh admm/dpadmm_fig12.sh sco/excess_vs_n.sh audit/tightness audit/one-run audit/one-run-power; do
  expect 0 sh "$S/jobs/$f" --help
  has "$T/out" "--out DIR" "jobs/$f documents --out"
  expect 1 sh "$S/jobs/$f" --bogus
done
for f in thesis4/run paper001/run; do
  has "$S/jobs/$f" 'OUT="${TMPDIR:-/tmp}/dpopt-jobs' "jobs/$f defaults to a directory outside the source tree"
done
# ---- the quick modes of the other scripts, with --out and with the default (TMPDIR=$T/tmp)
mkdir -p "$T/tmp"
expect 0 sh "$S/jobs/scaling" --mode strong --np 1 --n 300 --d 3 --iters 2 --out "$T/sc" \
  --dpopt "$DPOPT" --quiet --no-plot
check "scaling: CSV in --out" test -s "$T/sc/scaling.csv"
expect 0 env TMPDIR="$T/tmp" sh "$S/jobs/scaling" --mode strong --np 1 --n 300 --d 3 --iters 2 \
  --dpopt "$DPOPT" --quiet --no-plot
check "scaling: default output under \$TMPDIR" test -s "$T/tmp/dpopt-jobs/scaling/scaling.csv"
awk 'BEGIN { OFS = ","; print "h"; for (i = 1; i <= 3; i++) { for (k = 1; k <= 29; k++) f[k] = 0
    f[6] = "synthetic"; f[8] = 1; f[17] = 1000 * i * i; f[18] = 10; f[20] = 10 * (1e-5 + 2e-9 * f[17])
    s = f[1]; for (k = 2; k <= 29; k++) s = s OFS f[k]; print s } }' > "$T/cm.csv"
expect 0 env TMPDIR="$T/tmp" sh "$S/jobs/costmodel" --fit-only --compute-csv "$T/cm.csv"
check "costmodel: default output under \$TMPDIR" test -s "$T/tmp/dpopt-jobs/costmodel/fit.txt"
expect 0 env DPOPT="$DPOPT" MPIRUN="$MPI" sh "$S/jobs/hamsi/table31.sh" --quick --out "$T/h31"
check "table31 --quick: two rows in --out" [ "$(grep -c strata-b "$T/h31/table31.txt")" -eq 2 ]
expect 1 sh "$S/jobs/hamsi/table31.sh" --bogus
printf '[data]\ntrain = %s\nrow_l2_bound = 3.75\n[algo]\nname = gd\niters = 2\n[run]\nquiet = true\n' \
  "$S/data/a9a.t" > "$T/tiny.ini"
expect 0 env SLURM_NTASKS=1 MPIRUN="$MPI" DPOPT="$DPOPT" CONFIG="$T/tiny.ini" \
  bash "$S/jobs/slurm/train.sbatch" --out "$T/slurm" --iters 1
check "train.sbatch --out: the run directory" test -s "$T/slurm/summary.json"
if command -v gnuplot >/dev/null 2>&1; then
  expect 0 sh "$S/jobs/plot" --out "$T/pl" "$T/slurm"
  check "plot: PNG in --out" test -s "$T/pl/convergence.png"
  expect 0 env TMPDIR="$T/tmp" sh "$S/jobs/plot" "$T/slurm"
  check "plot: default output under \$TMPDIR" test -s "$T/tmp/dpopt-jobs/plot/convergence.png"
  # one quantity on the y axis: a trace with F - F* and one without are both drawn as objectives
  printf 'iter,time_s,objective_nonprivate,gradnorm_nonprivate,f_minus_fstar_nonprivate,eps_spent\n0,0,0.69,1,0.3,0\n1,0.1,0.5,1,0.1,0.5\n' >"$T/fs.csv"
  printf 'iter,time_s,objective_nonprivate,gradnorm_nonprivate,f_minus_fstar_nonprivate,eps_spent\n0,0,0.69,1,nan,0\n1,0.1,0.6,1,nan,0.5\n' >"$T/nofs.csv"
  expect 0 sh "$S/jobs/plot" -o "$T/mix.png" "$T/fs.csv" "$T/nofs.csv"
  has "$T/err" "plotting objective_nonprivate for all" "plot: mixed traces plot one quantity"
  expect 0 sh "$S/jobs/plot" -o "$T/same.png" "$T/fs.csv" "$T/fs.csv"
  hasnot "$T/err" "plotting objective_nonprivate" "plot: traces that agree keep F - F*"
  mkdir "$T/ad"; cp "$S/doc/results/admm/fig2_table.txt" "$T/ad/"
  expect 0 sh "$S/jobs/admm/dpadmm_fig12.sh" --out "$T/ad" --plot-only
  check "admm fig2 redrawn in --out" test -s "$T/ad/fig2.png"
fi
tree >"$T/after2"
if cmp -s "$T/before" "$T/after2"; then ok; else bad "a jobs script modified the source tree"; diff "$T/before" "$T/after2" | head; fi
expect 1 sh "$S/jobs/parties/run" --bogus
if [ "$gitst" = yes ]; then
  git -C "$S" status --porcelain --untracked-files=all >"$T/git-after"
  if cmp -s "$T/git-before" "$T/git-after"; then ok; else
    bad "git status of the source tree changed"; diff "$T/git-before" "$T/git-after" | head
  fi
fi
finish test_jobs_out
