#!/bin/sh
# model.txt as numpy reads it (numpy.loadtxt; the metadata in '#' lines): skipped (exit 77)
# when no python3 with numpy is found.
#  - a logreg model with an intercept loads as a vector of d + 1 numbers, equal to the file's
#    own numbers read as floats, and numpy's probabilities sigmoid(X w + b) on a test file
#    (parsed by Python here) equal dpopt predict's (1e-9) with the same labels;
#  - a softmax model (3 classes) loads as a 3 x (d + 1) matrix (a row per class, the
#    intercept last) whose argmax of X W' + b gives predict's classes and its probabilities.
. "$(dirname "$0")/../lib/testlib.sh"
need_numpy
export OPENBLAS_NUM_THREADS=1
# python3 CHECK MODEL DATA PREDICTIONS D: prints "ok" or what differs
cat > "$T/np.py" <<'PYEOF'
import sys, numpy as np
kind, mfile, dfile, pfile, d = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
W = np.loadtxt(mfile)
own = [[float(t) for t in l.split()] for l in open(mfile) if l.strip() and not l.startswith("#")]
rows = [l.split() for l in open(dfile) if l.strip()]
X = np.zeros((len(rows), d))
for r, t in enumerate(rows):
    for f in t[1:]:
        j, v = f.split(":")
        X[r, int(j) - 1] = float(v)
P = np.loadtxt(pfile)
if kind == "logreg":
    if W.shape != (d + 1,): sys.exit(print("shape %s, want (%d,)" % (W.shape, d + 1)))
    if not np.array_equal(W, np.array([v for l in own for v in l])): sys.exit(print("values differ"))
    p = 1 / (1 + np.exp(-(X @ W[:d] + W[d])))
    lab = np.where(p >= 0.5, 1, -1)
else:
    K = W.shape[0]
    if W.shape != (3, d + 1): sys.exit(print("shape %s, want (3, %d)" % (W.shape, d + 1)))
    if not np.array_equal(W, np.array(own)): sys.exit(print("values differ"))
    z = X @ W[:, :d].T + W[:, d]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    lab = s.argmax(axis=1)
    p = s.max(axis=1)
if not np.array_equal(lab, P[:, 0]): sys.exit(print("labels differ on %d rows" % (lab != P[:, 0]).sum()))
m = np.abs(p - P[:, 1]).max()
print("ok" if m <= 1e-9 else "probabilities differ by %g" % m)
PYEOF
head -n 3000 "$S/data/a9a" > "$T/tr"
head -n 1000 "$S/data/a9a.t" > "$T/te"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/tr" --dim 123 --algo lbfgs --iters 40 --intercept --quiet --out "$T/lg"
expect 0 $MPI -np 2 "$DPOPT" predict --run "$T/lg" --data "$T/te" --dim 123 --out "$T/lg.p"
r=$("$PY" "$T/np.py" logreg "$T/lg/model.txt" "$T/te" "$T/lg.p" 123)
[ "$r" = ok ] && ok || bad "logreg model.txt with numpy: $r"
softmax3_data 1 1500 "$T/str"
softmax3_data 2 500 "$T/ste"
expect 0 $MPI -np 2 "$DPOPT" train --data "$T/str" --model softmax --classes 3 --intercept --algo lbfgs --iters 40 --quiet --out "$T/sm"
expect 0 $MPI -np 2 "$DPOPT" predict --run "$T/sm" --data "$T/ste" --out "$T/sm.p"
r=$("$PY" "$T/np.py" softmax "$T/sm/model.txt" "$T/ste" "$T/sm.p" 5)
[ "$r" = ok ] && ok || bad "softmax model.txt with numpy: $r"
# the check can fail: the same model with its intercept moved by 0.5 is not predict's
awk '{l[NR] = $0; if ($0 !~ /^#/) last = NR} END {for (i = 1; i <= NR; i++) print (i == last ? l[i] + 0.5 : l[i])}' \
  "$T/lg/model.txt" > "$T/bad.txt"
r=$("$PY" "$T/np.py" logreg "$T/bad.txt" "$T/te" "$T/lg.p" 123)
[ "$r" != ok ] && ok || bad "a changed model passed the numpy check"
finish test_numpy
