#!/bin/sh
# The papers' qualitative claims the reproduction jobs show (issue 18), in quick form: seeded
# runs (NOT private; errors are non-private diagnostics on the training data).
#  - 001 Sec. 5 on the paper's data model (gen logistic --sign01: uniform [0,1]^20 rows,
#    y = sign(U w), n = 1e5 as in the paper; L = d/4 + 2 lambda from the public bound):
#    full batch, c = 1, eps = 1, x0 = 10 ones: at T = 200 DP-MASG-opt's final F - F* is below
#    DP-NAG's (committed job: 0.0088 vs 0.141), and at T = 500 slow DP-GD ends below DP-NAG
#    (0.088 vs 0.738: DP-NAG's noise grows with T); at c = 0.1 (a poor step) DP-NAG-opt still
#    ends far below DP-NAG; one seeded repetition, the margins are wide; the run lines are the
#    job's own (jobs/paper001/run --runs-only), so the job's pinned settings are what is tested;
#  - thesis Fig. 4.3 (DP-GDwS, d = 10, n = 1e4, lambda = 0.01, L1 clip 2, T = 1000), its U
#    shape at 10 repetitions as the thesis averages: at eps = 1 beta = 0.1 ends below beta = 1
#    (plain DP-GD with the noise-aware step; 0.072 vs 0.287) and below beta = 0.01.
#  - a run line that fails to set up is reported as LIST:LINE and skipped, exit 1, no crash.
#  - 004 Fig. 2 on a9a, from the job's own settings (jobs/admm/dpadmm_fig12.sh --fig2-only, 30
#    iterations): as eps grows DP-ADMM and DP-AccADMM reach their non-private ADMM and AccADMM
#    (eps = 3: within 0.1% of the objective), while at eps = 0.01 they end clearly above them.
#    With the clip C = 1 the job used before (a9a's rows have norm 3.74), DP-ADMM's limit is a
#    clipped problem's optimum instead and the first half fails.
# (004's claim, AccADMM below ADMM in the same iterations: test_admm_ref.sh; 003's rate:
# test_sco_slope.sh.)
. "$(dirname "$0")/../lib/testlib.sh"
export OPENBLAS_NUM_THREADS=1
R="$B/jobs/paper001/repro"
fin() { awk -F, -v l="$1" '$1 == l {print $3}' "$T/$2_final.csv"; }
below() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0)}'; }

expect 0 "$DPOPT" gen logistic --sign01 --n 100000 --d 20 --seed 1 "$T/p.bin"
# the job's own run lines (so a setting the job stops pinning shows here)
expect 0 sh "$S/jobs/paper001/run" --runs-only --ts "200 500" --out "$T/job"
for l in dp-nag_m100000_c1_T200 dp-masg-opt_m100000_c1_T200 dp-nag_m100000_c1_T500 \
  dp-gd_m100000_c1_T500 dp-nag-opt_m100000_c0.1_T500 dp-nag_m100000_c0.1_T500; do
  grep "^$l " "$T/job/runs.txt"
done >"$T/p.runs"
check "001: six run lines from the job" test "$(grep -c . "$T/p.runs")" = 6
expect 0 $MPI -np 2 "$R" --data "$T/p.bin" --runs "$T/p.runs" --out "$T/p" --reps 1 --trace-every 100 \
  --lambda 0.01 --l1 20 --l2 4.4721359549995796 --x0 10
has "$T/out" "NOT PRIVATE" "001: labelled not private"
nag200=dp-nag_m100000_c1_T200 masgopt200=dp-masg-opt_m100000_c1_T200
nag500=dp-nag_m100000_c1_T500 gd500=dp-gd_m100000_c1_T500
check "001: DP-MASG-opt $(fin $masgopt200 p) below DP-NAG $(fin $nag200 p) at T = 200" \
  below "$(fin $masgopt200 p)" "$(fin $nag200 p)"
check "001: DP-GD $(fin $gd500 p) below DP-NAG $(fin $nag500 p) at T = 500" \
  below "$(fin $gd500 p)" "$(fin $nag500 p)"
# DP-NAG-opt is robust to a poor step (c = 0.1): it stops at its T' and ends below DP-NAG run
# the whole T = 500 (paper 0.0233 vs DP-NAG's 0.101; 3 seeded repetitions here gave 0.034 vs 0.20,
# and 0.89 with dpopt's default momentum cap instead of the paper's beta = 0.9609)
opt01=dp-nag-opt_m100000_c0.1_T500 nag01=dp-nag_m100000_c0.1_T500
check "001: c = 0.1: DP-NAG-opt $(fin $opt01 p) below DP-NAG $(fin $nag01 p) / 3 at T = 500" \
  below "$(fin $opt01 p)" "$(awk -v v="$(fin $nag01 p)" 'BEGIN { if (v != "") print v / 3 }')"

expect 0 "$DPOPT" gen logistic --n 10000 --d 10 --l1-bound 10 --seed 1 "$T/t.bin"
cat > "$T/t.runs" <<R
b0.01 algo.name=dp-gdws algo.iters=1000 algo.beta=0.01 privacy.eps=1
b0.1 algo.name=dp-gdws algo.iters=1000 algo.beta=0.1 privacy.eps=1
b1 algo.name=dp-gdws algo.iters=1000 algo.beta=1 privacy.eps=1
R
expect 0 $MPI -np 2 "$R" --data "$T/t.bin" --runs "$T/t.runs" --out "$T/t" --reps 10 --trace-every 100 \
  --lambda 0.01 --clip l1:2 --x0 1
check "thesis: beta = 0.1 $(fin b0.1 t) below beta = 1 $(fin b1 t) at eps = 1" \
  below "$(fin b0.1 t)" "$(fin b1 t)"
check "thesis: beta = 0.1 $(fin b0.1 t) below beta = 0.01 $(fin b0.01 t) at eps = 1 (the U of Fig. 4.3)" \
  below "$(fin b0.1 t)" "$(fin b0.01 t)"

(cd "$S" && sh jobs/admm/dpadmm_fig12.sh --out "$T/f2" --sets a9a --iters 30 --eps "0.01 3" \
  --fig2-only "$B" 2) >"$T/f2.log" 2>&1 && ok || { sed 5q "$T/f2.log"; bad "004 Fig. 2 job failed"; }
obj() { awk -v m="$1" -v e="$2" '$1 == "a9a" && $2 == m && $3 == e {print $5}' "$T/f2/fig2_table.txt"; }
near() { awk -v a="$1" -v b="$2" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1e-3 * b)}'; }
for p in "dpadmm admm" "dpaccadmm accadmm"; do
  set -- $p
  check "004 Fig. 2: $1 at eps 3 ($(obj $1 3)) within 0.1% of $2 ($(obj $2 inf))" near "$(obj $1 3)" "$(obj $2 inf)"
  check "004 Fig. 2: $1 at eps 0.01 ($(obj $1 0.01)) above $2 + 0.02" \
    below "$(awk -v v="$(obj $2 inf)" 'BEGIN {if (v != "") print v + 0.02}')" "$(obj $1 0.01)"
done

# a run line that cannot be set up is named (LIST:LINE), once, and skipped; the others still run
# and the exit status is 1 (it used to crash reading the missing solver)
cat > "$T/bad.runs" <<R
good algo.name=dp-gd algo.iters=3 privacy.eps=1
badc algo.name=dp-gd algo.iters=3 privacy.eps=1 algo.c=-1
nope algo.name=dp-nope
R
expect 1 $MPI -np 2 "$R" --data "$T/t.bin" --runs "$T/bad.runs" --out "$T/bad" --clip l1:2 --l2 10
has "$T/err" "bad.runs:2: badc: algo.c = -1" "the failed line named"
has "$T/err" "bad.runs:3: nope: unknown algorithm 'dp-nope'" "an unknown algorithm named"
[ "$(grep -c 'bad.runs:2' "$T/err")" = 1 ] && ok || bad "the failed line reported $(grep -c 'bad.runs:2' "$T/err") times"
[ -n "$(fin good bad)" ] && ok || bad "the good line's result missing"
[ -z "$(fin badc bad)" ] && ok || bad "a failed line has a result"
finish test_repro_claims
