"""Write a seeded TREC-style workload for bench_metrics.py: 100 systems x 50 topics x 1000 documents.

    python benchmarks/make_metrics_workload.py [--systems 100] [--topics 50] [--depth 1000] [--seed 0] [--out DIR]

Files go to benchmarks/data/metrics/ (gitignored): runs/input.sysNNN (plain TREC run files) and qrels.txt.
Realism where tools disagree and where time goes:
- each topic has a candidate set of 30,000 documents drawn from a 2 M document collection, picked with a Zipf-like
  popularity so that systems overlap (as real runs do); ~1-3% of candidates are relevant (grades 1 and 2);
- each system has a skill: relevant documents get a score boost of that size on top of noise;
- ties: a third of the systems print scores with 2 or 3 decimals (many ties, broken by doc id), a sixth print
  BM25-like scores whose neighbours differ only beyond float32 precision, the rest print full floats;
- qrels are pooled: the union of every system's top 30 per topic is judged (grades 0/1/2 as in TREC-COVID), plus
  a fifth of the relevant candidates judged outside the pool (so recall is below 1).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def generate(systems=100, topics=50, depth=1000, seed=0, out=HERE / "data" / "metrics", pool_depth=30,
             candidates=30_000, collection=2_000_000):
    rng = np.random.default_rng(seed)
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    skill = rng.uniform(0.0, 3.0, systems)
    style = rng.choice(["round2", "round3", "f32tie", "full"], size=systems, p=[1 / 6, 1 / 6, 1 / 6, 1 / 2])
    lines = [[] for _ in range(systems)]
    qrels = []
    for q in range(topics):
        qid = str(q + 1)
        cand = rng.choice(collection, size=candidates, replace=False)
        pop = 1.0 / np.arange(1, candidates + 1) ** 0.8
        pop /= pop.sum()
        rel_share = rng.uniform(0.01, 0.03)
        grade = np.where(rng.random(candidates) < rel_share, rng.choice([1, 2], size=candidates, p=[0.6, 0.4]), 0)
        # relevant documents tend to be popular (found by many systems)
        grade[: candidates // 50] = np.maximum(grade[: candidates // 50], rng.random(candidates // 50) < 0.3)
        pooled = set()
        for s in range(systems):
            idx = rng.choice(candidates, size=depth, replace=False, p=pop)
            score = rng.normal(0, 1, depth) + skill[s] * (grade[idx] > 0) + 0.3 * skill[s] * (grade[idx] == 2)
            score = 10 + 2 * score
            if style[s] == "round2": score = np.round(score, 1)
            elif style[s] == "round3": score = np.round(score, 2)
            elif style[s] == "f32tie":
                # pairs of scores equal in float32, different in float64
                score = np.round(score, 3)
                score = score + np.where(rng.random(depth) < 0.5, 1e-9, 0.0)
            order = np.argsort(-score, kind="stable")
            idx, score = idx[order], score[order]
            pooled.update(idx[:pool_depth].tolist())
            tag = f"sys{s:03d}"
            lines[s].extend(f"{qid} Q0 doc{cand[i]:07d} {r} {float(sc)!r} {tag}\n" for r, (i, sc) in enumerate(zip(idx, score), 1))
        extra = np.flatnonzero(grade > 0)
        extra = extra[rng.random(len(extra)) < 0.2]
        for i in sorted(pooled | set(extra.tolist())):
            qrels.append(f"{qid} 0 doc{cand[i]:07d} {grade[i]}\n")
    for s in range(systems):
        (out / "runs" / f"input.sys{s:03d}").write_text("".join(lines[s]))
    (out / "qrels.txt").write_text("".join(qrels))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "data" / "metrics"))
    a = ap.parse_args()
    path = generate(a.systems, a.topics, a.depth, a.seed, a.out)
    print(f"wrote {path}")
