"""Timing of irinnov.rpp on TREC-COVID round 1 (143 systems × 30 topics), run by hand:

    IRINNOV_MIRROR=../shared/data python benchmarks/bench_rpp.py

Target (issue #6): `preferences` for all ordered pairs and all topics in ≤ 5 s. Also times `preference_family` (the three
weightings in one pass), the per-pair API on a few pairs (to show what broadcasting saves), win rate + MC4, offline interleaving of 2000 sampled
(pair, topic) points, and ASL.
"""
import time

import numpy as np
import pandas as pd

from irinnov.datasets import load
from irinnov import rpp as R
from timing import best_of


def main():
    t = time.perf_counter()
    c = load("trec-covid-round1", progress=False).campaign()
    print(f"load + prepare: {time.perf_counter() - t:.2f} s  ({c})")
    for w in R.WEIGHTINGS:
        for graded in (True, False):
            s, P = best_of(lambda: R.preferences(c, weighting=w, graded=graded))
            print(f"preferences({w:8s}, graded={graded!s:5s}): {s:.3f} s   {P.shape[0]} pairs × {P.shape[1]} topics")
    s, fam = best_of(lambda: R.preference_family(c))
    print(f"preference_family (RPP, dcgRPP, invRPP in one pass): {s:.3f} s")
    P = fam["RPP"]
    s, _ = best_of(lambda: R.aggregate(P, method="mc4"))
    print(f"win rate + MC4 (10 iterations): {s:.3f} s")
    # per-pair loop through the public single-pair API, for scale
    names = list(c.systems)
    t = time.perf_counter()
    for b in names[1:11]: R.rpp(c, a=names[0], b=b)
    per = (time.perf_counter() - t) / 10
    print(f"rpp() one pair: {per * 1000:.1f} ms → all {len(names) ** 2} ordered pairs by a Python loop ≈ {per * len(names) ** 2:.0f} s")
    rng = np.random.default_rng(0)
    S, Q = len(names), int(c.evaluated().sum())
    a = rng.integers(0, S, 2000); b = (a + rng.integers(1, S, 2000)) % S
    topics = c.topics[c.evaluated()].astype(str)
    pts = pd.DataFrame({"a": np.array(names)[a], "b": np.array(names)[b], "query": topics[rng.integers(0, Q, 2000)]})
    s, _ = best_of(lambda: R.offline_interleaving_points(c, points=pts), repeat=1)
    print(f"offline interleaving, 2000 (pair, topic) points: {s:.3f} s")
    s, _ = best_of(lambda: R.corpus_asl(c), repeat=1)
    print(f"ASL score table: {s:.3f} s")


if __name__ == "__main__":
    main()
