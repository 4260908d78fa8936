#!/usr/bin/env python3
"""How often `tailor demo`'s verdict calls FM worse (or better) when it is not.

A simulation of the verdict under the null: FM and four peers with one latency
distribution. Each round shares a base sequence of request costs across policies (the
demo's policies see the same arrivals and queries within a round); each run gets its own
speed factor, log-normal with sigma DRIFT (the machine's speed moving between runs),
and its own per-request noise. Compares three intervals for FM's p99 over the best
peer's:

  min-in-resample  the percentile interval of FM / (best peer of each resample), the
                   demo's first method;
  pairwise         Bonferroni intervals of FM / peer_j, each at 1 - 0.05 / 4, combined
                   into [max low_j, max high_j] (the demo's method since 2026-11-25),
                   each policy's runs resampled on their own;
  pairwise-paired  the same with a round's runs resampled together;
  pairwise-widened pairwise, each interval widened for the few rounds its spread
                   between rounds rests on (the demo's method since 2026-11-25
                   evening; crates/eval/src/bootstrap.rs): the log ratio's variance V
                   from the two-stage resamples, W from resamples with the rounds kept,
                   B = (V - W) R / (R - 1); Satterthwaite's degrees of freedom
                   (R - 1) ((W + B) / B)^2; the ends moved away from the estimate, on a
                   log scale, by sqrt((W + B) / V) t / z.

Usage: python3 scripts/verdict-null.py DRIFT ROUNDS REQUESTS_PER_RUN TRIALS SEED [LOADS [EFFECT]]
EFFECT (default 1) multiplies FM's latencies, to measure power instead of false calls.
Needs numpy and scipy. Prints better/same/worse counts per method.
"""
import sys

import numpy as np
from scipy import stats

drift, rounds, n, trials, seed = (float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                   int(sys.argv[4]), int(sys.argv[5]))
# Optional: the loads a run judges together; each pairwise interval is then at
# 1 - 0.05 / (4 x LOADS), so that all of a run's verdicts hold together (family-wise).
loads = int(sys.argv[6]) if len(sys.argv) > 6 else 1
effect = float(sys.argv[7]) if len(sys.argv) > 7 else 1.0
rng = np.random.default_rng(seed)
PEERS, B, ALPHA = 4, 400, 0.05


def p99(x):
    return np.quantile(x, 0.99)


def draw(runs, picks=None, idx=None):
    """One two-stage resample (runs with replacement, requests within), pooled."""
    picks = rng.integers(0, len(runs), len(runs)) if picks is None else picks
    idx = [rng.integers(0, n, n) for _ in picks] if idx is None else idx
    return p99(np.concatenate([runs[i][j] for i, j in zip(picks, idx)]))


def verdict(low, high):
    return 0 if high < 1 else (2 if low > 1 else 1)


METHODS = ("min-in-resample", "pairwise", "pairwise-paired", "pairwise-widened")
counts = {m: [0, 0, 0] for m in METHODS}


def widening(alpha, clusters, draws, within):
    """sqrt((W + B) / V) t / z with Satterthwaite's degrees of freedom, as bootstrap.rs."""
    v, w = np.var(np.log(draws), ddof=1), np.var(np.log(within), ddof=1)
    b = max(v - w, 0.0) * clusters / (clusters - 1)
    if b <= 0 or v <= 0:
        return 1.0
    df = (clusters - 1) * ((w + b) / b) ** 2
    t = stats.t.ppf(1 - alpha / 2, df) if df < 1000 else stats.norm.ppf(1 - alpha / 2)
    return np.sqrt((w + b) / v) * t / stats.norm.ppf(1 - alpha / 2)


def draw_within(runs):
    """One resample with the rounds kept (requests resampled within each)."""
    return draw(runs, picks=np.arange(len(runs)))

for _ in range(trials):
    base = [rng.exponential(1.0, n) for _ in range(rounds)]

    def policy(scale=1.0):
        return [scale * b * np.exp(rng.normal(0, drift)) * rng.lognormal(0, 0.3, n)
                for b in base]

    ours, peers = policy(effect), [policy() for _ in range(PEERS)]
    ratios = [draw(ours) / min(draw(p) for p in peers) for _ in range(B)]
    counts["min-in-resample"][verdict(*np.quantile(ratios, [ALPHA / 2, 1 - ALPHA / 2]))] += 1
    a = ALPHA / (PEERS * loads)
    wide = {"lows": [], "highs": []}
    for method in ("pairwise", "pairwise-paired"):
        lows, highs = [], []
        for p in peers:
            r = []
            for _ in range(B):
                if method == "pairwise":
                    r.append(draw(ours) / draw(p))
                else:
                    picks = rng.integers(0, rounds, rounds)
                    idx = [rng.integers(0, n, n) for _ in picks]
                    r.append(draw(ours, picks, idx) / draw(p, picks, idx))
            lo, hi = np.quantile(r, [a / 2, 1 - a / 2])
            lows.append(lo)
            highs.append(hi)
            if method == "pairwise":
                inside = [draw_within(ours) / draw_within(p) for _ in range(B)]
                k = widening(a, rounds, r, inside)
                est = p99(np.concatenate(ours)) / p99(np.concatenate(p))
                # As bootstrap.rs: an end on the wrong side of the estimate stays put.
                wide["lows"].append(est * (lo / est) ** k if lo < est else lo)
                wide["highs"].append(est * (hi / est) ** k if hi > est else hi)
        counts[method][verdict(max(lows), max(highs))] += 1
    counts["pairwise-widened"][verdict(max(wide["lows"]), max(wide["highs"]))] += 1
print(f"drift {drift}, {rounds} rounds of {n}, {trials} trials, alpha / {PEERS * loads}, "
      f"effect {effect}: better/same/worse")
for m, c in counts.items():
    print(f"  {m:16s} {c}")
