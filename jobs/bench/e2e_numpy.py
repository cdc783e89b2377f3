# One whole DP-SGD run written in numpy, the plain-Python peer of jobs/bench/e2e: load a dpopt
# binary dense file, calibrate the noise, one epoch of Poisson batches (logistic loss with a
# bias, per-example L2 clipping at CLIP, Gaussian noise, heavy-ball SGD), write the model.
# Calibration: RDP of the Poisson-subsampled Gaussian at integer orders 2..64 (Mironov, Talwar
# & Zhang, "Renyi Differential Privacy of the Sampled Gaussian Mechanism", 2019, Sec. 3.3),
# converted to (eps, delta) as Balle et al., "Hypothesis Testing Interpretations and Renyi
# Differential Privacy", 2020, Thm. 21, and bisected on the multiplier (add-remove neighbours,
# as Opacus). Batches are drawn by geometric gaps (each row in with probability q).
#   python3 e2e_numpy.py DATA OUTDIR EPS DELTA BATCH EPOCHS CLIP THREADS SEED
# Prints one line as e2e_opacus.py does. THREADS is set by the caller (OPENBLAS_NUM_THREADS).
import math
import os
import sys
import time

t0 = time.perf_counter()
import numpy as np
from e2e_data import load


def calibrate(eps, delta, q, steps):
    """The smallest multiplier (to ~1e-10 relative) whose eps over the orders is <= eps."""
    A = 64  # the best order here is ~9 (q = 1e-3, 1000 steps, eps 1)
    a = np.arange(2, A + 1, dtype=float)[:, None]  # orders, one a row; terms k = 0..a
    k = np.arange(A + 1, dtype=float)[None, :]
    lg = np.array([math.lgamma(j + 1) for j in range(A + 1)])
    ok = k <= a
    base = np.where(ok, lg[a.astype(int)] - lg[k.astype(int)] - lg[np.where(ok, a - k, 0).astype(int)]
                    + (a - k) * math.log1p(-q) + k * math.log(q), -np.inf)
    kk = (k * k - k) / 2.0
    conv = np.log1p(-1 / a[:, 0]) - (math.log(delta) + np.log(a[:, 0])) / (a[:, 0] - 1)

    def eps_of(sigma):
        lc = base + kk / (sigma * sigma)
        top = lc.max(axis=1)
        rdp = steps * (top + np.log(np.exp(lc - top[:, None]).sum(axis=1))) / (a[:, 0] - 1)
        return (rdp + conv).min()

    lo, hi = 0.1, 100.0
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        if eps_of(mid) > eps:
            lo = mid
        else:
            hi = mid
    return hi


def poisson(rng, n, q):
    """Indices of a Poisson batch: each of n rows in with probability q, by geometric gaps."""
    k = int(n * q + 10 * math.sqrt(n * q) + 10)
    pos = np.cumsum(rng.geometric(q, size=k)) - 1
    while pos[-1] < n:
        pos = np.concatenate([pos, pos[-1] + np.cumsum(rng.geometric(q, size=k))])
    return pos[pos < n]


def main():
    data, out = sys.argv[1], sys.argv[2]
    eps, delta = float(sys.argv[3]), float(sys.argv[4])
    batch, epochs, clip = int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
    rng = np.random.default_rng(int(sys.argv[9]))
    t1 = time.perf_counter()
    X, y = load(data)
    n, d = X.shape
    t2 = time.perf_counter()
    q = batch / n
    steps = epochs * (n // batch)
    sigma = calibrate(eps, delta, q, steps)
    t3 = time.perf_counter()
    w, b = np.zeros(d), 0.0
    vw, vb = np.zeros(d), 0.0
    lr, beta = 0.5, 0.9
    for _ in range(steps):
        idx = poisson(rng, n, q)
        Xb, yb = X[idx], y[idx]
        s = -yb / (1 + np.exp(yb * (Xb @ w + b)))  # d loss / d margin, per example
        norm = np.abs(s) * np.sqrt(np.einsum("ij,ij->i", Xb, Xb) + 1)
        s = s * np.minimum(1, clip / np.maximum(norm, 1e-300))
        gw = (s @ Xb + rng.normal(0, sigma * clip, d)) / batch
        gb = (s.sum() + rng.normal(0, sigma * clip)) / batch
        vw = beta * vw + gw
        vb = beta * vb + gb
        w -= lr * vw
        b -= lr * vb
    t4 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    np.savetxt(os.path.join(out, "model.txt"), np.append(w, b))
    t5 = time.perf_counter()
    print("TIMES start=%.3f load=%.3f calibrate=%.3f solve=%.3f write=%.3f sigma=%.6f steps=%d"
          % (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, sigma, steps))


main()
