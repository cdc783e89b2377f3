#!/bin/sh
# Table 3.1 of the thesis (000, Sec. 3.5) at small scale: final RMSE after a fixed training
# time for mb-GD and HAMSI, deterministic and shuffled schedules, under each partitioning, on
# MovieLens-shaped synthetic ratings; plus Fig. 3.5 (RMSE against time, STRATA-B) as a PNG.
#   jobs/hamsi/table31.sh [OUTDIR]
# Environment: DPOPT (default ./dpopt or dpopt), SIZE (ml-1m), SECONDS (4 per run), RANK (10),
# RANKS ("1 2": strata runs at these rank counts; hogwild/color need 1), MPIRUN.
# The default run takes about 3-5 minutes on 2 cores.  RMSE here is the TRAINING RMSE, as in
# the thesis: a NON-PRIVATE diagnostic; the held-out RMSE is in the last column.
set -eu
OUT=${1:-hamsi-table31}
DPOPT=${DPOPT:-$(command -v ./dpopt || command -v dpopt || echo dpopt)}
SIZE=${SIZE:-ml-1m}
SECONDS_RUN=${SECONDS:-4}
RANK=${RANK:-10}
RANKS=${RANKS:-"1 2"}
MPIRUN=${MPIRUN:-mpirun --oversubscribe}
export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$OUT"
DATA="$OUT/ratings-$SIZE.txt"
[ -s "$DATA" ] || $DPOPT gen ratings --size "$SIZE" --rank "$RANK" --seed 1 "$DATA"
# step constants (public, not tuned on the data): thesis beta_t = (eta t)^0.51; mb-GD and the
# first HAMSI epoch take gradient steps of sigma0 / beta_t
ETA=${ETA:-1}
SIGMA0=${SIGMA0:-1e-3}
# a STRATA block sums thousands of ratings per user: its plain gradient step must be smaller
# (HAMSI rescales itself with sigma = s'y/y'y after the first epoch; mb-GD never does)
SIGMA0_STRATA=${SIGMA0_STRATA:-2e-5}
TAB="$OUT/table31.txt"
printf '%-6s %-7s %-9s %5s %12s %12s %8s\n' method sched part ranks rmse_train heldout epochs > "$TAB"
run() { # method sched part np strata
  d="$OUT/$1-$2-$3-np$4"
  case $3 in strata*) s0=$SIGMA0_STRATA ;; *) s0=$SIGMA0 ;; esac
  $MPIRUN -np "$4" $DPOPT mf --method "$1" --sched "$2" --part "$3" --rank "$RANK" \
    --epochs 0 --time "$SECONDS_RUN" --eta "$ETA" --sigma0 "$s0" --strata "$5" \
    --seed 1 --out "$d" "$DATA" > "$d.log" 2>&1 || { echo "failed: $d (see $d.log)"; return 0; }
  tr=$(sed -n 's/^train RMSE *\([^ ]*\).*/\1/p' "$d.log")
  te=$(sed -n 's/^held-out RMSE *\([^ ]*\).*/\1/p' "$d.log")
  ep=$(sed -n 's/^epochs *\([^ ]*\).*/\1/p' "$d.log")
  printf '%-6s %-7s %-9s %5s %12s %12s %8s\n' "$1" "$2" "$3" "$4" "$tr" "$te" "$ep" | tee -a "$TAB"
}
for m in mbgd hamsi; do
  for s in det shuffle; do
    for p in hogwild color color-b; do run $m $s $p 1 20; done
    for np in $RANKS; do
      for p in strata strata-b; do run $m $s $p "$np" "$np"; done
    done
  done
done
echo "wrote $TAB"
# Fig. 3.5: RMSE against training time, STRATA-B, deterministic, at the largest rank count
np=$(echo $RANKS | awk '{print $NF}')
if command -v gnuplot > /dev/null; then
  gnuplot <<GP
set terminal pngcairo size 800,500
set output "$OUT/fig35.png"
set datafile separator ","
set xlabel "training time (s)"
set ylabel "training RMSE (non-private diagnostic)"
set logscale y
set title "HAMSI vs mb-GD, STRATA-B, $np rank(s), $SIZE-shaped synthetic ratings"
plot "$OUT/hamsi-det-strata-b-np$np/trace.csv" using 2:4 every ::1 with linespoints title "HAMSI det", \
     "$OUT/hamsi-shuffle-strata-b-np$np/trace.csv" using 2:4 every ::1 with linespoints title "HAMSI shuffle", \
     "$OUT/mbgd-det-strata-b-np$np/trace.csv" using 2:4 every ::1 with linespoints title "mb-GD det", \
     "$OUT/mbgd-shuffle-strata-b-np$np/trace.csv" using 2:4 every ::1 with linespoints title "mb-GD shuffle"
GP
  echo "wrote $OUT/fig35.png"
fi
