"""Timing of irinnov.infotheory on a seeded TREC-8-shaped workload and on TREC-COVID round 1.

    python benchmarks/bench_infotheory.py [--systems 129] [--topics 50] [--judged 1700] [--covid]

The synthetic campaign has the shape of TREC-8 ad hoc: 129 runs x 50 topics x 1000 documents, ~1,700 judged
documents per topic of which ~5% relevant (binary). Each system scores a pool of 4,000 documents per topic with a
noisy relevance signal, so relevant documents tend to rank high. The target (issue #8) is RIC for every
(system, topic) in <= 10 s; the script times it end to end from DataFrames and on the prepared campaign.
Not a test: prints wall-clock times.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from irinnov.trec import prepare
from irinnov import infotheory as it


def synthetic(systems=129, topics=50, judged=1700, pool=4000, depth=1000, rel_share=0.05, seed=0):
    "Runs and binary qrels of a TREC-8-shaped campaign (seeded)."
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    skill = rng.uniform(0.5, 3.0, systems)
    for q in range(topics):
        qid = str(401 + q)
        n_rel = max(1, int(judged * rng.uniform(0.5, 1.5) * rel_share))
        rel = np.zeros(pool, bool); rel[:n_rel] = True
        judged_idx = np.r_[np.arange(n_rel), n_rel + rng.choice(pool - n_rel, judged - n_rel, replace=False)]
        docs = np.array([f"D{q:03d}-{d:05d}" for d in range(pool)], dtype=object)
        qrels.append(pd.DataFrame({"query": qid, "doc": docs[judged_idx], "grade": rel[judged_idx].astype(np.int64)}))
        score = rng.normal(size=(systems, pool)) + skill[:, None] * rel[None, :]
        top = np.argpartition(-score, depth, axis=1)[:, :depth]
        sc = np.take_along_axis(score, top, 1)
        runs.append(pd.DataFrame({"system": np.repeat([f"sys{s:03d}" for s in range(systems)], depth),
                                  "query": qid, "doc": docs[top.ravel()], "score": sc.ravel()}))
    return pd.concat(runs, ignore_index=True), pd.concat(qrels, ignore_index=True)


def timed(label, fn, *a, **kw):
    t = time.perf_counter(); out = fn(*a, **kw); dt = time.perf_counter() - t
    print(f"{label:<58s} {dt:8.2f} s")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", type=int, default=129)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--judged", type=int, default=1700)
    ap.add_argument("--covid", action="store_true", help="also time TREC-COVID round 1 (needs IRINNOV_MIRROR)")
    a = ap.parse_args()
    runs, qrels = timed(f"generate {a.systems} x {a.topics} x 1000, {a.judged} judged/topic", synthetic,
                        a.systems, a.topics, a.judged)
    J = qrels.groupby("query").size()
    print(f"workload: {len(runs):,} run lines, {len(qrels):,} judgments ({J.min()}-{J.max()} per topic), "
          f"{int((qrels.grade > 0).sum()):,} relevant")
    timed("ric(runs, qrels) end to end from DataFrames (prepare + ric)", it.ric, runs, qrels)
    c = timed("prepare (encode the campaign)", prepare, runs, qrels)
    t = timed("ric on the prepared campaign (counts + closed form)", it.ric, c)
    it._SPACES.pop(id(c), None)
    timed("ric again from a fresh cache", it.ric, c)
    timed("ric (cached counts, second call)", it.ric, c)
    timed("ric_counts (c, d, u table)", it.ric_counts, c)
    rng = np.random.default_rng(0)
    sel = list(rng.choice(c.systems.astype(str), 10, replace=False))
    timed("joint_ric of 10 systems (first: builds retained ranks)", it.joint_ric, c, systems=sel)
    timed("joint_ric of 10 systems (again)", it.joint_ric, c, systems=sel)
    timed("joint_ric of 39 systems (the bound)", it.joint_ric, c, systems=list(c.systems.astype(str)[:39]))
    pairs = [tuple(rng.choice(c.systems.astype(str), 2, replace=False)) for _ in range(300)]
    timed("information_differences, 300 random pairs", it.information_differences, c, pairs=pairs)
    m = pd.Series(rng.random(len(c.systems)), index=c.systems.astype(str))
    timed("binned_pairs (Table 4: 20 bins, 354 pairs)", it.binned_pairs, c, m, pd.Series("g", index=m.index),
          graded=False)
    print(f"mean RIC range: {t.mean(axis=1).min():.4f} .. {t.mean(axis=1).max():.4f}")
    if a.covid:
        from irinnov.datasets import load
        ds = load("trec-covid-round1", progress=False)
        cc = timed("TREC-COVID round 1: read runs + qrels, prepare", ds.campaign)
        timed("TREC-COVID round 1: ric (graded)", it.ric, cc)
        timed("TREC-COVID round 1: ric (binary)", it.ric, cc, graded=False)
        s10 = list(np.random.default_rng(0).choice(cc.systems.astype(str), 10, replace=False))
        timed("TREC-COVID round 1: joint_ric of 10 systems", it.joint_ric, cc, systems=s10)
        p = [tuple(np.random.default_rng(1).choice(cc.systems.astype(str), 2, replace=False)) for _ in range(300)]
        timed("TREC-COVID round 1: information_differences, 300 pairs", it.information_differences, cc, pairs=p)


if __name__ == "__main__":
    main()
