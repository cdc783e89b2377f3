#!/usr/bin/python3
"""What a one-run audit of private consensus ADMM could reach, by an independent model.

dpopt admm's private consensus: each of N parties (one a rank) clips its whole message
x_i + u_i to L2 norm C and adds Gaussian noise sigma = 2 C z per coordinate, T messages (z the
RDP multiplier for T releases at (eps, delta), as `dpopt calibrate` gives it).  A party's
canaries share its clip, so the audit of Steinke, Nasr and Jagielski ("Privacy auditing with one
(1) training run", 2023) gets one canary a party.  Whatever its shape, such a canary is at most
mu-GDP with mu = sqrt(T) / z (the party's T messages, sensitivity 2C each): the model gives
every canary that whole mu (2 mu with the noise halved), scores it by its likelihood ratio
(mu s + a standard normal, s its secret bit) and bounds eps as the audit does (guesses r = 2
floor(f N / 2), f in 0.1, 0.2, 0.5, 1, each at alpha / 4 with the delta term, the largest
reported).  Printed for N parties and eps: the ceiling (every guess right), mu, and over --reps
runs the median bound and how often it exceeds the claim, intact and halved.  With --per-party
K: K canaries a party, each given mu / sqrt(K) (they share the clip: K columns at the clip move
it by 2 C / sqrt(K) each), N K canaries.
With --tune instead: dpopt tune's geometric search at pure eps (Liu and Talwar's 3 eps0 =
eps), 1000 canaries in the training rows, seen through the released model, which is one
repetition's: in the case the one-run audit of train sees best (dp-gd, one Laplace release,
the l1 clip saturated by every canary of value a = sqrt(14), intercept on) each canary is
eps0 a / (a + 1) randomized response (twice that halved), guessed as train's audit does
(r in 100, 200, 500, 1000); claims eps 1, 2, 4.
Usage: jobs/audit/one-run-reach.py [--reps R] [--seed S] [--delta D] [--maxit T] [--per-party K]
       [--dpopt PATH] [--tune] (python3 with numpy; PATH default build/dpopt, for `dpopt
       calibrate`)
"""
import argparse
import math
import re
import subprocess

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--reps", type=int, default=2000)
ap.add_argument("--seed", type=int, default=5)
ap.add_argument("--delta", type=float, default=1e-3)
ap.add_argument("--maxit", type=int, default=200)
ap.add_argument("--per-party", type=int, default=1)
ap.add_argument("--dpopt", default="build/dpopt")
ap.add_argument("--tune", action="store_true")
o = ap.parse_args()
ALPHA, G = 0.05, 4


def lpmf(r, k, q):
    return (math.lgamma(r + 1) - math.lgamma(k + 1) - math.lgamma(r - k + 1)
            + k * math.log(q) + (r - k) * math.log1p(-q))


def pvalue(m, r, v, eps, delta):  # Theorem 3.1 with its delta term (as src/privacy/audit1.c)
    if v == 0:
        return 1.0
    q = 1 / (1 + math.exp(-eps))
    p = sum(math.exp(lpmf(r, k, q)) for k in range(v, r + 1))
    best = s = 0.0
    for i in range(1, v + 1):
        s += math.exp(lpmf(r, v - i, q))
        best = max(best, s / i)
    return min(1.0, p + 2 * m * delta * best)


def eps_lb(m, r, v, delta, beta):
    if pvalue(m, r, v, 0, delta) >= beta:
        return 0.0
    lo, hi = 0.0, 1.0
    while pvalue(m, r, v, hi, delta) < beta and hi < 1e3:
        lo, hi = hi, 2 * hi
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if pvalue(m, r, v, mid, delta) < beta else (lo, mid)
    return lo


def grid(m):
    return [r for r in (2 * int(f * m / 2) for f in (0.1, 0.2, 0.5, 1.0)) if r >= 2]


def z_of(eps):
    out = subprocess.run([o.dpopt, "calibrate", "--eps", str(eps), "--delta", str(o.delta),
                          "--steps", str(o.maxit), "--sensitivity", "1"],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"rdp_multiplier\s+([0-9.eE+-]+)", out).group(1))


def tune():
    m, a, table = 1000, math.sqrt(14.0), {}
    for eps in (1, 2, 4):
        line = f"tune, geometric search, pure eps {eps}: {m} canaries in the training rows;"
        for f, name in ((1, "intact"), (2, "halved")):
            e = f * eps / 3 * a / (a + 1)  # a canary's randomized response through the model
            lbs = []
            for _ in range(o.reps):
                s = rng.integers(0, 2, m)
                v = rng.laplace(size=m) + e * (s - 0.5)  # in units of the scale
                order = np.argsort(-(np.abs(v + e / 2) - np.abs(v - e / 2)
                                     + 1e-12 * rng.standard_normal(m)))
                best = 0.0
                for r in grid(m):
                    c = int(s[order[:r // 2]].sum() + (1 - s[order[m - r // 2:]]).sum())
                    if (r, c) not in table:
                        table[(r, c)] = eps_lb(m, r, c, 0, ALPHA / G)
                    best = max(best, table[(r, c)])
                lbs.append(best)
            line += f" {name} (eps' {e:.3f}): median {np.median(lbs):.3f}, max {max(lbs):.3f}, " \
                    f"above the claim {sum(x > eps for x in lbs)} of {o.reps};"
        print(line.rstrip(";"))


rng = np.random.default_rng(o.seed)
if o.tune:
    tune()
    raise SystemExit(0)
for eps in (1, 8):
    z = z_of(eps)
    mu = math.sqrt(o.maxit) / z / math.sqrt(o.per_party)
    for n in (8, 16, 32, 64):
        m = n * o.per_party
        table = {}  # (r, v) -> bound, memoised
        def bound(s, score):
            order = np.argsort(-score)
            best = 0.0
            for r in grid(m):
                v = int(s[order[:r // 2]].sum() + (1 - s[order[m - r // 2:]]).sum())
                if (r, v) not in table:
                    table[(r, v)] = eps_lb(m, r, v, o.delta, ALPHA / G)
                best = max(best, table[(r, v)])
            return best
        top = max(eps_lb(m, r, r, o.delta, ALPHA / G) for r in grid(m))
        line = f"eps {eps}, delta {o.delta:g}, T {o.maxit}: z {z:.4g}; {n} parties, {m} canaries " \
               f"(mu {mu:.3f} each): ceiling {top:.3f};"
        for f, name in ((1, "intact"), (2, "halved")):
            lbs = []
            for _ in range(o.reps):
                s = rng.integers(0, 2, m)
                lbs.append(bound(s, f * mu * s + rng.standard_normal(m)))
            line += f" {name}: median {np.median(lbs):.3f}, max {max(lbs):.3f}, above the claim " \
                    f"{sum(x > eps for x in lbs)} of {o.reps};"
        print(line.rstrip(";"))
