#!/usr/bin/python3
"""The geometric tune's score audited through a canary in the validation rows: closed forms.

dpopt tune with tune.mean = M (Papernot and Steinke, "Hyperparameter tuning with Renyi
differential privacy", 2022: K geometric, stop probability g = 1/M after each repetition)
releases the best repetition's model and its noisy score, the count of correct validation
predictions plus Laplace(b), b = 1/eps0.  D' = D plus one validation row (the canary), the
training rows the same in both worlds.  A repetition's model is of type t with probability p_t
(a public function of the training noise, e.g. the sign of x along a direction: p = 1/2 on
zero rows), its count c_t on D and c_t + a_t on D' (a_t = 1 where the model classifies the
canary correctly: a zero-feature row labelled +1 is right for every linear model).  The
released (type, score) has density, with Q(s) the chance one repetition scores below s,
    P(t, s) = g p_t f_b(s - c_t - a_t [D']) / (1 - (1 - g) Q(s))^2
(the sum over K of k repetitions, one at (t, s), the others below it), so its log ratio is
the repetition's Laplace ratio (at most 1/b) plus twice the selection's factor (Liu and
Talwar's 3 eps0 as g -> 0; at g = 1/5 much less).  The training noise does not enter: halving
it changes no probability here.  For each construction and eps0 this prints the best interval
event's probabilities on D and D' and log ratio, the pointwise limit, and, at N trials a set,
the Clopper-Pearson bound ln((P_lo - delta) / P_hi) at the expected counts (alpha = 0.05
split over both sets) and the share of --reps binomial draws whose bound exceeds the claim
1, intact and with the score's noise halved; a Monte Carlo of the tune checks the closed form.
Usage: jobs/audit/tune-valid-canary.py [--eps0 E ...] [--reps R] [--seed S]
(python3 with numpy and scipy)
"""
import argparse

import numpy as np
from scipy.stats import beta

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--eps0", type=float, nargs="+", default=[0.2926, 0.3214])
ap.add_argument("--mean", type=float, default=5.0)
ap.add_argument("--delta", type=float, default=1e-5)
ap.add_argument("--reps", type=int, default=4000)
ap.add_argument("--seed", type=int, default=39)
o = ap.parse_args()
g, rng = 1.0 / o.mean, np.random.default_rng(o.seed)
NS = (30000, 60000, 100000)
# (name, [(p_t, c_t, a_t)]): type 0 is the one the event looks at
CONS = [("every model right on the canary, one type", [(1.0, 0, 1)]),
        ("sign of x: x >= 0 scores 1 more, p = 1/2", [(0.5, 1, 1), (0.5, 0, 1)]),
        ("a quarter of the models score 1 more", [(0.25, 1, 1), (0.75, 0, 1)]),
        ("two signs in d = 2: x0, x1 >= 0 score 2, one of them 1", [(0.25, 2, 1), (0.5, 1, 1),
                                                                  (0.25, 0, 1)])]


def lapF(u, b):
    return np.where(u < 0, 0.5 * np.exp(np.minimum(u, 0) / b), 1 - 0.5 * np.exp(-np.maximum(u, 0) / b))


def dens(types, b, s, w):
    Q = sum(p * lapF(s - c - w * a, b) for p, c, a in types)
    return [g * p * np.exp(-np.abs(s - c - w * a) / b) / (2 * b) / (1 - (1 - g) * Q) ** 2
            for p, c, a in types]


def prob(types, b, lo, hi, w):
    s = np.linspace(lo, hi, 4001)
    return np.trapz(dens(types, b, s, w)[0], s)


def cp(k1, k0, n):  # the event likelier on set 1: ln((P1_lo - delta) / P0_hi)
    lo = beta.ppf(0.025, k1, n - k1 + 1)
    hi = beta.ppf(0.975, k0 + 1, n - k0)
    return np.log(np.maximum(lo - o.delta, 1e-300) / hi)


def monte(types, b, lo, hi, w, n):  # the tune itself: K repetitions, the best score kept
    k = rng.geometric(g, n)
    hit = 0
    for kk in k:
        t = rng.choice(len(types), size=kk, p=[p for p, _, _ in types])
        s = np.array([types[i][1] + w * types[i][2] for i in t]) + rng.laplace(0, b, kk)
        j = int(np.argmax(s))
        hit += t[j] == 0 and lo <= s[j] <= hi
    return hit


for eps0 in o.eps0:
    for name, types in CONS:
        for h in (1, 2):
            b = 1 / (eps0 * h)
            s = np.linspace(-20 * b, 20 * b, 20001)
            lim = max(np.max(np.log(d0 / d1)) for d0, d1 in zip(dens(types, b, s, 0), dens(types, b, s, 1)))
            best = None  # the interval on type 0 likelier on D, best at N = 30000
            for lo in np.arange(-5, 3, 0.25):
                for hi in np.arange(lo + 0.25, 4.01, 0.25):  # counts 0 .. 3
                    P, Pp = prob(types, b, lo, hi, 0), prob(types, b, lo, hi, 1)
                    v = cp(P * NS[0], Pp * NS[0], NS[0])
                    if best is None or v > best[0]:
                        best = (v, lo, hi, P, Pp)
            _, lo, hi, P, Pp = best
            row = []
            for n in NS:
                lb = cp(rng.binomial(n, P, o.reps), rng.binomial(n, Pp, o.reps), n)
                row.append("N %d: %.3f, %.2f > 1" % (n, cp(P * n, Pp * n, n), np.mean(lb > 1)))
            mc = 20000
            print("eps0 %.4f %s, %s: type 0 with score in [%.2f, %.2f]: P(D) %.4f P(D') %.4f "
                  "log ratio %.3f (limit %.3f); %s; Monte Carlo %d trials: %d, %d (expected %.0f, %.0f)"
                  % (eps0, "halved" if h == 2 else "intact", name, lo, hi, P, Pp, np.log(P / Pp), lim,
                     "; ".join(row), mc, monte(types, b, lo, hi, 0, mc), monte(types, b, lo, hi, 1, mc),
                     mc * P, mc * Pp))
