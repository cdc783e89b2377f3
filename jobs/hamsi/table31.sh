#!/bin/sh
# Table 3.1 of the thesis (000, Sec. 3.5) at small scale: final RMSE after a fixed training
# time for mb-GD and HAMSI, deterministic and shuffled schedules, under each partitioning, on
# MovieLens-like synthetic ratings (dpopt gen ratings --realistic: user and item biases,
# log-normal activity and popularity, noise; rank RANK signal) at the thesis's rank 50, with
# the held-out RMSE (10% split) beside it; plus Fig. 3.5 (RMSE against time, STRATA-B) and
# Fig. 3.7 (time per outer iteration in each phase: gradient, update, Hessian approximation;
# the maximum over ranks, from each run's summary.json) as PNGs, and the phase table
# phases37.txt.
#   jobs/hamsi/table31.sh [--out DIR] [--quick]
# --out DIR: where everything is written (default $TMPDIR/dpopt-jobs/hamsi-SIZE; never the source
# tree: doc/results/hamsi holds the committed reference results).  --quick: a smoke run (ml-100k,
# 1 s per run, 1 rank, deterministic schedule, STRATA-B only; seconds, not minutes).
# Environment: DPOPT (default ./dpopt or dpopt), SIZE (ml-1m; ml-100k, ml-10m, ml-20m), RUN_SECONDS
# per run (default 10 for ml-1m and smaller, 25 for ml-10m, 50 for ml-20m: the thesis gave
# 25 / 250 / 500 s to 16 threads; at rank 50 these take about 15 / 40 / 60 min on 2 idle cores
# (ml-10m at load average 20-50: 23 of its 40 runs in 53 min);
# every run evaluates every epoch, outside its training time, for Fig. 3.5), RANK (50, the
# thesis's; the factorization rank and the generated signal's),
# RANKS ("1 2": every partitioning runs at each of these rank counts), MPIRUN.
# strata/strata-b: item blocks travel around the ring, K = ranks strata; hogwild/color/color-b:
# K = 20 subsets, item factors replicated, one Allreduce of the ranks' item steps per subset
# (per color for color/color-b, whose results do not depend on the rank count; hogwild's do).
# The default run (ml-1m) takes about 15 minutes on 2 cores.  RMSE here is the TRAINING RMSE, as in
# the thesis: a NON-PRIVATE diagnostic; the held-out RMSE (10% split) is in the heldout column.
set -eu
OUT="" QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --out=*) OUT=${1#--out=}; shift ;;
    --quick) QUICK=1; shift ;;
    -h|--help) sed -n '2,/^set -eu$/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--out DIR] [--quick]   (environment: see --help)" >&2; exit 1 ;;
  esac
done
SCHEDS="det shuffle" PARTS_K20="hogwild color color-b" PARTS_KP="strata strata-b"
if [ "$QUICK" = 1 ]; then
  SIZE=${SIZE:-ml-100k} RUN_SECONDS=${RUN_SECONDS:-1} RANKS=${RANKS:-1}
  SCHEDS=det PARTS_K20="" PARTS_KP=strata-b
fi
top=$(cd "$(dirname "$0")/../.." && pwd)
DPOPT=${DPOPT:-$(command -v "$top/build/dpopt" || command -v ./dpopt || command -v dpopt || echo dpopt)}
SIZE=${SIZE:-ml-1m}
[ -n "$OUT" ] || OUT=${TMPDIR:-/tmp}/dpopt-jobs/hamsi-$SIZE
case "$SIZE" in
  ml-10m) SECONDS_RUN=${RUN_SECONDS:-25} ;;
  ml-20m) SECONDS_RUN=${RUN_SECONDS:-50} ;;
  *) SECONDS_RUN=${RUN_SECONDS:-10} ;;
esac
RANK=${RANK:-50}
RANKS=${RANKS:-"1 2"}
MPIRUN=${MPIRUN:-mpirun --quiet --oversubscribe}
export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$OUT"
DATA="$OUT/ratings-$SIZE-r$RANK-realistic.txt"
[ -s "$DATA" ] || $DPOPT gen ratings --size "$SIZE" --rank "$RANK" --realistic --seed 1 "$DATA" >/dev/null
# step constants = dpopt mf's defaults, the same for every method, partitioning, size and rank
# count: beta_t = (eta t)^0.51 with eta = 1 (beta_t >= 1, Thm 3.1.3); gradient steps (mb-GD, and
# HAMSI until M pairs exist) are sigma0 D^-1 g / beta_t with D = the rows' rating counts, so
# sigma0 does not depend on the data's scale (see include/dpopt/hamsi.h)
ETA=${ETA:-1}
SIGMA0=${SIGMA0:-0.2}
TAB="$OUT/table31.txt"
printf '%-6s %-7s %-9s %5s %12s %12s %8s\n' method sched part ranks rmse_train heldout epochs > "$TAB"
run() { # method sched part np strata
  d="$OUT/$1-$2-$3-np$4"
  rm -rf "$d" # dpopt mf refuses to write into an existing directory
  $MPIRUN -np "$4" $DPOPT mf --plain --method "$1" --sched "$2" --part "$3" --rank "$RANK" \
    --epochs 0 --time "$SECONDS_RUN" --eval-budget 0 --eta "$ETA" --sigma0 "$SIGMA0" --strata "$5" \
    --seed 1 --out "$d" "$DATA" > "$d.log" 2>&1 || { echo "failed: $d (see $d.log)"; return 0; }
  tr=$(sed -n 's/^train RMSE  *\([-0-9.][^ ]*\).*/\1/p' "$d.log")
  te=$(sed -n 's/^held-out RMSE *\([^ ]*\).*/\1/p' "$d.log")
  ep=$(sed -n 's/^epochs *\([^ ]*\).*/\1/p' "$d.log")
  printf '%-6s %-7s %-9s %5s %12s %12s %8s\n' "$1" "$2" "$3" "$4" "$tr" "$te" "$ep" | tee -a "$TAB"
}
for m in mbgd hamsi; do
  for s in $SCHEDS; do
    for np in $RANKS; do
      for p in $PARTS_K20; do run $m $s $p "$np" 20; done
      for p in $PARTS_KP; do run $m $s $p "$np" "$np"; done
    done
  done
done
echo "wrote $TAB"
# Fig. 3.7 data: seconds per outer iteration in each phase (max over ranks), deterministic
# schedule, every partitioning at the largest rank count
np=$(echo $RANKS | awk '{print $NF}')
PH="$OUT/phases37.txt"
printf '# seconds per outer iteration, max over ranks (dpopt mf summary.json)\n' > "$PH"
printf '#%-21s %12s %12s %12s %12s\n' run gradient update hessian transfers >> "$PH"
for p in $PARTS_K20 $PARTS_KP; do
  n=$np
  for m in mbgd hamsi; do
    j="$OUT/$m-det-$p-np$n/summary.json"
    [ -s "$j" ] || continue
    jq -r --arg l "$m/$p/np$n" '[$l, (.t_grad_max, .t_update_max, .t_hess_max, .t_comm_max)
      / (if .epochs > 0 then .epochs else 1 end)] | @tsv' "$j" |
      awk '{printf "%-22s %12.6f %12.6f %12.6f %12.6f\n", $1, $2, $3, $4, $5}' >> "$PH"
  done
done
echo "wrote $PH"
# Fig. 3.5: RMSE against training time, STRATA-B, deterministic, at the largest rank count
F35="" # the STRATA-B traces of this run (--quick has no shuffled schedule)
# a colour per method, solid for det and dashed for shuffle: the shuffled curve lies on top of
# the deterministic one, so points would hide it
for ms in "hamsi det 1 1:HAMSI det" "hamsi shuffle 1 2:HAMSI shuffle" "mbgd det 2 1:mb-GD det" "mbgd shuffle 2 2:mb-GD shuffle"; do
  set -- ${ms%%:*}
  f="$OUT/$1-$2-strata-b-np$np/trace.csv"
  if [ -s "$f" ]; then F35="${F35:+$F35, }\"$f\" using 2:4 every ::1 with lines lw 2 lc $3 dt $4 title \"${ms#*:}\""; fi
done
if command -v gnuplot > /dev/null && [ -n "$F35" ]; then
  gnuplot <<GP
set terminal pngcairo size 800,500
set output "$OUT/fig35.png"
set datafile separator ","
set xlabel "training time (s)"
set ylabel "training RMSE (non-private diagnostic)"
set grid
set title "HAMSI vs mb-GD, STRATA-B, $np rank(s), rank $RANK, $SIZE-like synthetic ratings (--realistic)"
plot $F35
GP
  echo "wrote $OUT/fig35.png"
  gnuplot <<GP
set terminal pngcairo size 1100,500
set output "$OUT/fig37.png"
set title "Time per outer iteration by phase (max over ranks), rank $RANK, $SIZE-like ratings (--realistic)"
set ylabel "seconds per outer iteration"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.7
set key inside left top
set yrange [0:*]
set offsets 0, 0, graph 0.35, 0
set grid ytics
set xtics rotate by -30
plot "$PH" using 2:xtic(1) title "gradient (line 10)", '' using 3 title "update (line 13)", \
     '' using 4 title "Hessian approximation (lines 14-19)", \
     '' using 5 title "transfers (ring / Allreduce of item steps)"
GP
  echo "wrote $OUT/fig37.png"
fi
