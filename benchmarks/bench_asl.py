"""Timing of irinnov.asl on TREC-COVID round 1 (143 systems × 30 topics × 1000), run by hand:

    IRINNOV_MIRROR=../shared/data python benchmarks/bench_asl.py

Target (issue #7): ASL for all 143 runs "well under a second" on the prepared campaign. Also times ASL@g1-10,
`pad_to=1000`, the per-document table, the four ablation measures, the full Table 2 (ΔSort over all 10,153 pairs ×
4 steps, with paired t-tests), the A.1 shares, and, for scale, a plain Python loop over the ranked lists of a few runs
(the per-document computation without numpy), extrapolated to all 143 runs.
"""
import time
import warnings

import numpy as np

from irinnov.datasets import load
from irinnov import asl as A
from timing import best_of


def python_asl(runs, rel, systems):
    "ASL_q by a Python loop over each (system, topic) ranked list: the reference the numpy code replaces."
    out = {}
    for (s, q), g in runs[runs.system.isin(systems)].groupby(["system", "query"], sort=False):
        R = rel.get(q)
        if not R: continue
        irrel, tot, k = 0, 0, 0
        for d in g.sort_values("rank").doc:
            if d in R: tot += irrel + 1; k += 1
            else: irrel += 1
        out[s, q] = (tot + (len(R) - k) * irrel) / len(R)
    return out


def main():
    t = time.perf_counter()
    c = load("trec-covid-round1", progress=False).campaign()
    print(f"load + prepare: {time.perf_counter() - t:.2f} s  ({c})")
    for label, f in [("asl (ASL, Eq. 4)", lambda: A.asl(c)),
                     ("asl n=10 (ASL@g1-10)", lambda: A.asl(c, n=10)),
                     ("asl pad_to=1000", lambda: A.asl(c, pad_to=1000)),
                     ("document_asl (143 × 2352 rows)", lambda: A.document_asl(c)),
                     ("ablation_measures (M0-M3)", lambda: A.ablation_measures(c, pad_to=1000)),
                     ("ablation (Table 2, 4 steps)", lambda: A.ablation(c, pad_to=1000)),
                     ("effective_top_shares (map)", lambda: A.effective_top_shares(c))]:
        s, _ = best_of(f)
        print(f"{label:34s} {s:.3f} s")
    runs = c.runs
    qr = c.judged_grades()
    ev = c.evaluated()
    rel = {}
    tq, dc, gr = qr
    for q, d in zip(c.topics.astype(str)[tq[gr >= 1]], c.judged_docs.astype(str)[dc[gr >= 1]]):
        rel.setdefault(q, set()).add(d)
    some = list(c.systems.astype(str)[:10])
    t = time.perf_counter()
    ref = python_asl(runs, rel, some)
    per = (time.perf_counter() - t) / len(some)
    got = A.asl(c)
    err = max(abs(got.loc[s, q] - v) for (s, q), v in ref.items())
    print(f"Python loop over ranked lists: {per * 1000:.0f} ms per run → all {len(c.systems)} runs ≈ "
          f"{per * len(c.systems):.1f} s (max |difference| to asl on {len(some)} runs: {err:.1e})")


if __name__ == "__main__":
    warnings.simplefilter("error")
    main()
