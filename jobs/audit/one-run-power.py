#!/usr/bin/python3
"""The one-run audit's power where test_audit_onerun_power.sh runs it, by an independent model.

dpopt audit --one-run of dp-gd with one Laplace release at pure eps, the l1 clip C saturated by
every canary (canary value a, intercept on), replace-one: canary i's own column moves by
+-C a / (a + 1) against the Laplace scale 2 C / eps, so each canary is eps' = eps a / (a + 1)
randomized response (2 eps' with the noise halved).  The audit guesses the r/2 highest and
r/2 lowest log-likelihood ratios for r in 100, 200, 500, 1000 (M = 1000), each bound at
alpha / 4 (Steinke, Nasr and Jagielski, "Privacy auditing with one (1) training run", 2023,
Theorem 3.1, delta = 0).  Prints, intact and halved: the binomial expectation of the right
guesses at r = 500, the smallest count whose bound exceeds the claim for each r, the binomial
tails (false alarm intact, power halved) and a Monte Carlo of the whole construction.
With --gauss instead: ideal Gaussian canaries (the l2 clip saturated, each canary mu a /
sqrt(a^2 + 1)-GDP, mu the claim's at delta 1e-5), claims eps 1, 2, 4, 8, intact and halved,
the median, smallest and largest bound over --reps runs (20 is enough: each bound is bisected).
Usage: jobs/audit/one-run-power.py [--eps E] [--reps N] [--seed S] [--gauss]
(python3 with numpy)
"""
import argparse
import math

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--eps", type=float, default=1.0)
ap.add_argument("--reps", type=int, default=20000)
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--gauss", action="store_true")
o = ap.parse_args()
M, GRID, BETA, A = 1000, (100, 200, 500, 1000), 0.05 / 4, math.sqrt(14.0)


def tail(v, r, q):  # P[Bin(r, q) >= v] by direct summation of the pmf
    return sum(math.exp(math.lgamma(r + 1) - math.lgamma(k + 1) - math.lgamma(r - k + 1)
                        + k * math.log(q) + (r - k) * math.log1p(-q)) for k in range(v, r + 1))


def q_of(e):
    return 1 / (1 + math.exp(-e))


def vstar(r, eps):  # the smallest count right of r whose p-value at eps is below BETA
    for v in range(r // 2, r + 1):
        if tail(v, r, q_of(eps)) < BETA:
            return v
    return r + 1


def eps_lb(r, v):  # the largest eps whose p-value is still below BETA (0 if none)
    if tail(v, r, 0.5) >= BETA:
        return 0.0
    lo, hi = 0.0, 1.0
    while tail(v, r, q_of(hi)) < BETA and hi < 1e3:
        lo, hi = hi, 2 * hi
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(v, r, q_of(mid)) < BETA else (lo, mid)
    return lo


def gauss():
    phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))
    dlt = lambda e, mu: phi(-e / mu + mu / 2) - math.exp(e) * phi(-e / mu - mu / 2)
    for eps in (1, 2, 4, 8):
        lo, hi = 1e-3, 50.0  # mu of the claim (eps, 1e-5): Dong, Roth and Su's delta(eps)
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if dlt(eps, mid) > 1e-5 else (mid, hi)
        for f in (1, 2):
            mu = f * lo * A / math.sqrt(A * A + 1)
            lbs = []
            for _ in range(o.reps):
                s = rng.integers(0, 2, M)
                order = np.argsort(-(rng.standard_normal(M) + mu * s))
                lbs.append(max(eps_lb(r, int(s[order[:r // 2]].sum() + (1 - s[order[M - r // 2:]]).sum()))
                               for r in GRID))
            print(f"Gaussian, claim eps {eps} (mu {lo:.3f}), noise {'halved' if f == 2 else 'intact'}: "
                  f"canary mu {mu:.3f}; eps_lb median {np.median(lbs):.3f}, min {min(lbs):.3f}, "
                  f"max {max(lbs):.3f}, above the claim in {sum(x > eps for x in lbs)} of {o.reps} runs")


rng = np.random.default_rng(o.seed)
if o.gauss:
    gauss()
    raise SystemExit(0)
vs = {r: vstar(r, o.eps) for r in GRID}
for f, name in ((1, "intact"), (2, "noise halved")):
    e = f * o.eps * A / (A + 1)
    q = q_of(e)
    print(f"{name}: eps' = {e:.4f} per canary; right of 500: expected {500 * q:.1f} "
          f"+- {math.sqrt(500 * q * (1 - q)):.1f}")
    for r in GRID:  # r = 1000 guesses every canary: q overstates its accuracy
        print(f"  r = {r}: bound > {o.eps:g} from {vs[r]} right; P[Bin(r, q) >= that] = "
              f"{tail(vs[r], r, q):.3g}")
    over = 0
    for _ in range(o.reps):
        s = rng.integers(0, 2, M)
        v = rng.laplace(size=M) + e * (s - 0.5)  # in units of the scale
        llr = np.abs(v + e / 2) - np.abs(v - e / 2) + 1e-12 * rng.standard_normal(M)
        order = np.argsort(-llr)
        over += any(s[order[:r // 2]].sum() + (1 - s[order[M - r // 2:]]).sum() >= vs[r]
                    for r in GRID)
    print(f"  Monte Carlo: the bound exceeds the claim in {over} of {o.reps} runs")
