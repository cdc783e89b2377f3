#!/bin/sh
# Consensus ADMM (issue 5): lasso and l1-logistic on a9a and on synthetic data at 1, 2 and 4
# ranks: iterations and time to the residual tolerance (Boyd et al. 2011 Sec. 3.3.1, eps_abs =
# 1e-6, eps_rel = 1e-5), objective (NON-PRIVATE diagnostic on the training data).
# Problems:
#   lasso-a9a    lsq on a9a's +-1 labels, lambda 1e-3, exact (Cholesky) x-update, rho 1
#   l1log-a9a    logistic on a9a, lambda 1e-4, inexact warm L-BFGS x-update, rho 0.01
#   lasso-syn    lsq on `dpopt gen ridge` (N rows x 50), lambda 1e-3, rho 1
#   l1log-syn    logistic on `dpopt gen logistic` (N rows x 50), lambda 1e-4, rho 0.1
# 4 ranks on this 2-core machine are OVERSUBSCRIBED (marked in the table and the plot): their
# times measure time-sharing, not scaling.  More ranks = more consensus constraints, so the
# iteration count grows with the rank count (expected for consensus ADMM).
# Output (--out DIR, default $TMPDIR/dpopt-jobs/admm): consensus_table.txt, consensus_time.png, consensus_iters.png.
# Usage (top of the source tree): jobs/admm/consensus_ranks.sh [--out DIR] [--full] [BUILD_DIR]
# Default N = 50,000 synthetic rows (~1-2 minutes); --full: N = 500,000 and 1, 2, 4, 8 ranks.
set -eu
FULL=0
OUT=
while [ $# -gt 0 ]; do
  case $1 in
    --full) FULL=1; shift ;;
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --out=*) OUT=${1#--out=}; shift ;;
    -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "usage: $0 [--out DIR] [--full] [BUILD_DIR]" >&2; exit 1 ;;
    *) break ;;
  esac
done
B=${1:-build}
[ -n "$OUT" ] || OUT=${TMPDIR:-/tmp}/dpopt-jobs/admm # never the source tree (doc/results/admm: committed reference)
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
D="$B/dpopt"
CORES=$(nproc 2>/dev/null || echo 1)
if [ $FULL = 1 ]; then NSYN=500000; RANKS="1 2 4 8"; else NSYN=50000; RANKS="1 2 4"; fi
[ -s "$OUT/ridge$NSYN.txt" ] || "$D" gen ridge --n $NSYN --d 50 --seed 5 "$OUT/ridge$NSYN.txt" >/dev/null
[ -s "$OUT/logit$NSYN.txt" ] || "$D" gen logistic --n $NSYN --d 50 --l1-bound 5 --seed 6 "$OUT/logit$NSYN.txt" >/dev/null

T="$OUT/consensus_table.txt"
printf "# consensus ADMM to eps_abs 1e-6 / eps_rel 1e-5 (max 5000 it.); %s cores; '*' = oversubscribed\n" "$CORES" > "$T"
printf "# objective: NON-PRIVATE diagnostic on the training data\n" >> "$T"
printf "%-10s %6s %1s %6s %4s %9s %10s %9s %18s\n" problem ranks o iters conv time_s s_per_it passes objective >> "$T"
run() { # name np args...
  name=$1 np=$2; shift 2
  rm -rf "$OUT/c.run"
  mpirun --quiet --oversubscribe -np "$np" "$D" admm "$@" --maxit 5000 --eps-abs 1e-6 --eps-rel 1e-5 --set admm.adapt_rho=false --out "$OUT/c.run" > "$OUT/c.out" 2>/dev/null || true
  awk -v n="$name" -v p="$np" -v o="$([ "$np" -gt "$CORES" ] && echo '*' || echo '-')" '
    /^iterations/ {it = $2; cv = $4}
    /^inner/ {ps = $5}
    /^time/ {t = $2}
    /^objective/ {f = $2}
    END {if (ps == "") ps = "-"; printf "%-10s %6d %1s %6d %4d %9.3f %10.2e %9s %18.12f\n", n, p, o, it, cv, t, t / (it > 0 ? it : 1), ps, f}' "$OUT/c.out" >> "$T"
}
for np in $RANKS; do
  run lasso-a9a $np data/a9a --model lsq --reg l1 --lambda 1e-3 --rho 1
  run l1log-a9a $np data/a9a --model logreg --reg l1 --lambda 1e-4 --rho 0.01
  run lasso-syn $np "$OUT/ridge$NSYN.txt" --model lsq --reg l1 --lambda 1e-3 --rho 1
  run l1log-syn $np "$OUT/logit$NSYN.txt" --model logreg --reg l1 --lambda 1e-4 --rho 0.1
done
rm -f "$OUT/c.out"
cat "$T"
for what in time iters; do
  col=$([ $what = time ] && echo 6 || echo 4)
  gnuplot <<EOF
set terminal pngcairo size 800,560 noenhanced
set output "$OUT/consensus_$what.png"
set title "consensus ADMM to the residual tolerance: $what vs ranks\n($CORES cores: runs with more ranks are OVERSUBSCRIBED, shaded)"
set xlabel "ranks"
set ylabel "$([ $what = time ] && echo 'time to tolerance (s)' || echo 'iterations to tolerance')"
set logscale x 2
set logscale y
set key top left
set object 1 rect from $CORES.5, graph 0 to graph 1, graph 1 fc rgb "gray90" behind
plot for [p in "lasso-a9a l1log-a9a lasso-syn l1log-syn"] sprintf("< awk '\$1==\"%s\"' $T", p) using 2:$col with linespoints lw 2 title p
EOF
done
