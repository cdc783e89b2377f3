#!/bin/sh
# The binary loader reads the bias column's slots with the rows (one allocation at the final
# size); the text loaders widen the loaded shard.  Both must give the same shards: a seeded
# training run on a dpopt binary file and on the LIBSVM text it was converted from writes the
# same model bytes, dense and CSR, at 1, 2 and 3 ranks, with and without the bias, and in a
# private run whose declared width drops columns (the projection moved into the read).
# Without the bias a non-private run maps the dense file in place (dpo_load_opts_t.map).
. "$(dirname "$0")/../lib/testlib.sh"
head -n 1500 "$S/data/a9a" >"$T/a.txt"
expect 0 "$DPOPT" convert "$T/a.txt" "$T/a.bin"
has "$T/out" "(CSR)" "sparse binary file"
expect 0 "$DPOPT" convert --dense "$T/a.txt" "$T/ad.bin"
has "$T/out" "(dense)" "dense binary file"
# the same model bytes (the first line names the data file)
same() { tail -n +2 "$T/$1/model.txt" >"$T/m1"; tail -n +2 "$T/$2/model.txt" >"$T/m2"
  check "$3: $(diff "$T/m1" "$T/m2" | head -n 4)" cmp -s "$T/m1" "$T/m2"; }
RUN="train --algo lbfgs --iters 15 --lambda 1e-3 --seed 3"
for np in 1 2 3; do
  expect 0 $MPI -np $np "$DPOPT" $RUN --data "$T/a.txt" --out "$T/t$np"
  expect 0 $MPI -np $np "$DPOPT" $RUN --data "$T/a.bin" --out "$T/b$np"
  same t$np b$np "np $np: CSR binary = LIBSVM text"
  expect 0 $MPI -np $np "$DPOPT" $RUN --dense --data "$T/a.txt" --out "$T/td$np"
  expect 0 $MPI -np $np "$DPOPT" $RUN --data "$T/ad.bin" --out "$T/bd$np"
  same td$np bd$np "np $np: dense binary = dense LIBSVM text"
  expect 0 $MPI -np $np "$DPOPT" $RUN --no-intercept --data "$T/ad.bin" --out "$T/bn$np"
  expect 0 $MPI -np $np "$DPOPT" $RUN --no-intercept --dense --data "$T/a.txt" --out "$T/tn$np"
  same tn$np bn$np "np $np: no bias, dense binary = LIBSVM text"
done
w=$(awk '{ for (i = 2; i <= NF; i++) { split($i, a, ":"); if (a[1] + 0 > m) m = a[1] + 0 } } END { print m + 1 }' "$T/a.txt")
has "$T/b2/summary.json" "\"d\":$w," "the width: the largest index + the bias"
has "$T/bd3/summary.json" "\"d\":$w," "the width: the largest index + the bias (dense)"
has "$T/bn3/summary.json" "\"d\":$((w - 1))," "the width without the bias (dense)"
# rows read in place only where the layout is kept and the run is not private: a mapping
# would show later changes to the file, after a private run's row checks
has "$T/bn3/summary.json" '"load_mapped":true' "a non-private dense run without the bias, mapped"
has "$T/bd3/summary.json" '"load_mapped":false' "with the bias the rows are read"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/ad.bin" --no-intercept --dim $((w - 1)) \
  --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --iters 5 --seed 7 --out "$T/pm"
has "$T/pm/summary.json" '"load_mapped":false' "a private run reads its rows, never mapped"
# a different model with and without the bias (the comparison above can fail)
check "the bias changes the model" sh -c "! cmp -s '$T/bd2/model.txt' '$T/bn2/model.txt'"
# private, declared width 100: the entries at columns 100..122 dropped while reading
PRIV="--dim 100 --row-l1-bound 14 --row-l2-bound 3.75 --algo dp-gd --eps 1 --iters 5 --seed 7"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/a.txt" $PRIV --out "$T/pt"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/a.bin" $PRIV --out "$T/pb"
same pt pb "private, projected: CSR binary = LIBSVM text"
has "$T/pb/summary.json" '"d":101' "the declared width (100 features + the bias)"
# the declared row bounds are about the features, not the bias column: clipping at a bound
# under the rows' norms scales the same entries on either path
CLIP="--row-l2-bound 1.5 --row-bound-action clip"
expect 0 "$DPOPT" $RUN $CLIP --dense --data "$T/a.txt" --out "$T/ct"
has "$T/err" "rows scaled onto the declared L2 bound 1.5" "rows were clipped"
expect 0 "$DPOPT" $RUN $CLIP --data "$T/ad.bin" --out "$T/cb"
same ct cb "clipped rows: dense binary = LIBSVM text"
# ... and the bias column is not scaled: the same model as the rows scaled beforehand
awk '{ s = 0; for (i = 2; i <= NF; i++) { split($i, a, ":"); s += a[2] * a[2] }
  n = sqrt(s); c = n > 1.5 ? 1.5 / n : 1; printf "%s", $1
  for (i = 2; i <= NF; i++) { split($i, a, ":"); printf " %s:%.17g", a[1], a[2] * c }
  printf "\n" }' "$T/a.txt" >"$T/as.txt"
expect 0 "$DPOPT" $RUN --dense --data "$T/as.txt" --out "$T/cs"
same cs cb "clipped rows: the features scaled, the bias column kept"
# both bounds: a row scaled onto the L1 bound gets its L2 norm anew (the binary loader took
# the norms in its pass over the rows: dpo_load_opts_t.row_norms); 12 and 3.4 tell a9a's rows
# of 13 ones (L2 3.33 once scaled) from those of 12 (L2 3.46)
CLIP2="--row-l1-bound 12 --row-l2-bound 3.4 --row-bound-action clip"
expect 0 $MPI -np 2 "$DPOPT" $RUN $CLIP2 --dense --data "$T/a.txt" --out "$T/c2t"
expect 0 $MPI -np 2 "$DPOPT" $RUN $CLIP2 --data "$T/ad.bin" --out "$T/c2b"
same c2t c2b "both bounds, clipped rows: dense binary = LIBSVM text"
# ... and in a private run (rows read, never mapped; clipped silently) at 3 ranks
P2="--dim $((w - 1)) --row-l1-bound 12 --row-l2-bound 3.4 --algo dp-gd --eps 1 --iters 5 --seed 7"
expect 0 $MPI -np 3 "$DPOPT" train $P2 --dense --data "$T/a.txt" --out "$T/p2t"
expect 0 $MPI -np 3 "$DPOPT" train $P2 --data "$T/ad.bin" --out "$T/p2b"
same p2t p2b "private, both bounds: dense binary = LIBSVM text"
# without the bias a non-private run maps the dense file's rows in place (the loop above: 1-3
# ranks, each rank's rows starting inside a page): clipping scales the rows of the process's
# private copy, never the file
sum0=$(cksum <"$T/ad.bin")
expect 0 $MPI -np 2 "$DPOPT" $RUN $CLIP --no-intercept --dense --data "$T/a.txt" --out "$T/cnt"
expect 0 $MPI -np 2 "$DPOPT" $RUN $CLIP --no-intercept --data "$T/ad.bin" --out "$T/cnb"
same cnt cnb "no bias, clipped rows at 2 ranks: mapped dense binary = LIBSVM text"
check "the mapped file is unchanged by the clipping" test "$(cksum <"$T/ad.bin")" = "$sum0"
# a shortened file is refused before any rank maps it, once, naming the file and the reason
head -c $(($(stat -c %s "$T/ad.bin") - 8)) "$T/ad.bin" >"$T/short.bin"
expect 2 $MPI -np 2 "$DPOPT" $RUN --no-intercept --data "$T/short.bin" --out "$T/sh"
has "$T/err" "short.bin: truncated file" "the truncated file named with its reason"
check "the refusal printed once" test "$(grep -c 'truncated file' "$T/err")" = 1
finish test_bin_shards
