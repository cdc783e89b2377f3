#!/bin/sh
# dpopt mf's factor files as numpy reads them (numpy.loadtxt; '#' lines skipped): skipped
# (exit 77) when no python3 with numpy is found.
#  - X1.txt loads as a users x r matrix and X2t.txt as an items x r one (the shapes in their
#    '# dpopt mf factors: ROWS x COLS' lines), biases.txt as the mean, then the user biases,
#    then the item biases;
#  - numpy's ratings from them (mean + b_u + b_i + X1[u] . X2t[i], or X1[u] . X2t[i] for the
#    factors-only model) equal mf-predict's for every pair of the ratings file (1e-9).
. "$(dirname "$0")/../lib/testlib.sh"
need_numpy
export OPENBLAS_NUM_THREADS=1
R=$T/r.txt
awk 'BEGIN { srand(3); for (u = 1; u <= 120; u++) for (k = 0; k < 15; k++)
  printf "%d::%d::%d\n", u, 1 + (u * 7 + k * 13) % 90, 1 + int(5 * rand()) }' > "$R"
cat > "$T/np.py" <<'PYEOF'
import sys, numpy as np
run, pred, users, items, r, biased = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1"
X1, X2t = np.loadtxt(run + "/X1.txt"), np.loadtxt(run + "/X2t.txt")
if X1.shape != (users, r) or X2t.shape != (items, r):
    sys.exit(print("shapes %s and %s, want (%d, %d) and (%d, %d)" % (X1.shape, X2t.shape, users, r, items, r)))
P = np.loadtxt(pred)
u, i = P[:, 0].astype(int) - 1, P[:, 1].astype(int) - 1
y = (X1[u] * X2t[i]).sum(axis=1)
if biased:
    b = np.loadtxt(run + "/biases.txt")
    if b.shape != (1 + users + items,): sys.exit(print("biases shape %s" % (b.shape,)))
    y += b[0] + b[1 + u] + b[1 + users + i]
m = np.abs(y - P[:, 2]).max()
print("ok" if m <= 1e-9 else "ratings differ by %g" % m)
PYEOF
for b in 1 0; do
  f=--biases; [ $b = 1 ] || f=--plain
  expect 0 $MPI -np 2 "$DPOPT" mf --rank 3 $f --epochs 5 --quiet --out "$T/m$b" "$R"
  expect 0 "$DPOPT" mf-predict --run "$T/m$b" --out "$T/p$b" "$R"
  r=$("$PY" "$T/np.py" "$T/m$b" "$T/p$b" 120 90 3 $b)
  [ "$r" = ok ] && ok || bad "mf $f factors with numpy: $r"
done
# the check can fail: factors of users and items swapped are not the model
mkdir "$T/sw" && cp "$T/m0/X2t.txt" "$T/sw/X1.txt" && cp "$T/m0/X1.txt" "$T/sw/X2t.txt"
r=$("$PY" "$T/np.py" "$T/sw" "$T/p0" 120 90 3 0)
[ "$r" != ok ] && ok || bad "swapped factors passed the numpy check"
finish test_mf_numpy
