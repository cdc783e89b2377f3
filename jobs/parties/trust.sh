# jobs/parties/run --trust (sourced by run; issue 12): test accuracy of dp-gd on a9a.t under
# central, local and secagg trust at the same eps per party, a9a split over P parties by
# `dpopt simulate` (iid, and label-skewed: party 0 gets 80% of the positives).  Secagg sizes each
# party's discrete Gaussian share so that the P - k honest shares alone carry the charged noise
# (k = privacy.collude = 1), so its sum has about P/(P - k) times central's noise variance, plus
# the fixed-point rounding; local adds P independent noises.  dp-gd's sum does not depend on the
# split, so iid and label rows differ only through the rounding (secagg) and the per-party
# noises (local).  Seeded runs (reproducible, labelled NOT PRIVATE).
# Reads top, DPOPT, EPS, ITERS, REPS, out from run; PS (default "2 4"), SPLITS ("iid label"),
# DELTA (1e-5), ALGO_C (4, as in test_secagg_cli.sh).
PS=${PS:-"2 4"}
SPLITS=${SPLITS:-"iid label"}
ALGO_C=${ALGO_C:-4} # dp-gd step constant algo.c (the default leaves a9a near the all-negative 0.76)
DELTA=${DELTA:-1e-5} # secagg is charged in RDP and needs delta > 0; the same for every mode
csv=$out/trust.csv
echo "split,parties,trust,seed,eps_per_party,delta,iters,test_accuracy,oversubscribed" >"$csv"
ncpu=$(nproc)
for split in $SPLITS; do
  for P in $PS; do
    sp=$out/split-$split-$P
    "$DPOPT" simulate --parties "$P" --split "$split" --seed 1 "$top/data/a9a" "$sp/a9a.%d" >/dev/null
    for trust in central local secagg; do
      s=1
      while [ "$s" -le "$REPS" ]; do
        run=$out/run-$split-P$P-$trust-$s
        rm -rf "$run"
        mpirun --oversubscribe -np "$P" "$DPOPT" train --test "$top/data/a9a.t" \
          --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --iters "$ITERS" --eps "$EPS" \
          --delta "$DELTA" --set algo.c="$ALGO_C" --seed "$s" --quiet --set parties.count="$P" --set parties.data="$sp/a9a.%d" \
          --set privacy.trust="$trust" --out "$run" >/dev/null
        acc=$(sed -n 's/.*"test_accuracy": *\([-0-9.eE+]*\).*/\1/p' "$run/summary.json" | head -n 1)
        [ -n "$acc" ] || { echo "parties --trust: no test_accuracy in $run/summary.json" >&2; exit 1; }
        echo "$split,$P,$trust,$s,$EPS,$DELTA,$ITERS,$acc,$([ "$P" -gt "$ncpu" ] && echo yes || echo no)" >>"$csv"
        s=$((s + 1))
      done
    done
  done
done
# tables: mean accuracy per (split, P) and trust; secagg - central in accuracy points
awk -F, -v ac="$ALGO_C" -v md="$out/trust.md" -v dat="$out/trust.dat" '
  NR > 1 { eps = $5; de = $6; it = $7; k = $1 "," $2; a[k "," $3] += $8; c[k "," $3]++
           if (!(k in seen)) { seen[k] = 1; ks[++nk] = k } }
  END {
    printf "%-6s %-8s %-9s %-9s %-9s %s   (mean a9a.t test accuracy, dp-gd, eps = %s per party, delta %s, %s iterations, algo.c %s)\n", "split", "parties", "central", "local", "secagg", "secagg-central [points]", eps, de, it, ac
    printf "| split | parties | central | local | secagg | secagg - central (points) |\n|---|---|---|---|---|---|\n" >md
    for (i = 1; i <= nk; i++) {
      k = ks[i]; split(k, f, ",")
      ce = a[k ",central"] / c[k ",central"]; lo = a[k ",local"] / c[k ",local"]; se = a[k ",secagg"] / c[k ",secagg"]
      printf "%-6s %-8s %-9.4f %-9.4f %-9.4f %+.2f\n", f[1], f[2], ce, lo, se, 100 * (se - ce)
      printf "| %s | %s | %.4f | %.4f | %.4f | %+.2f |\n", f[1], f[2], ce, lo, se, 100 * (se - ce) >md
      printf "%d %s/P=%s %.6f %.6f %.6f\n", i - 1, f[1], f[2], ce, lo, se >dat
    }
    printf "\ndp-gd on a9a.t, eps = %s per party, delta = %s, %s iterations, algo.c = %s, mean over seeds; label = party 0 holds 80%% of the positives.\n", eps, de, it, ac >md
    printf "dp-gd releases the noised sum of every row'"'"'s clipped gradient, which does not depend on how the rows are split: iid and label rows differ only through the fixed-point rounding (secagg) and the per-party noises (local).\n" >md
  }' "$csv" | tee "$out/trust.txt"
if command -v gnuplot >/dev/null 2>&1; then
  gnuplot <<GP
set terminal pngcairo size 800,500
set output "$out/trust.png"
set title "dp-gd on a9a, eps = $EPS per party, $ITERS iterations (mean of $REPS seeds)"
set ylabel "a9a.t test accuracy"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left
set grid ytics
set yrange [0.5:0.9]
plot "$out/trust.dat" using 3:xtic(2) title "central", "" using 4 title "local", "" using 5 title "secagg"
GP
  echo "plot: $out/trust.png"
fi
