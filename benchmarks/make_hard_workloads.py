"""Write the seeded workloads where reading and encoding are hard (for bench_hard.py and bench_memory.py).

    python benchmarks/make_hard_workloads.py adversarial     # 100 systems x 50 topics x 1000 docs, lines shuffled,
                                                             #   every score rounded to 2 decimals (~5 M lines, 230 MB)
    python benchmarks/make_hard_workloads.py many_topics     # 10 systems x 5000 topics x 1000 docs (50 M lines, 2.3 GB)
    python benchmarks/make_hard_workloads.py long_list       # 4 systems x 1000 topics x 50 docs + one list of 50,000
    python benchmarks/make_hard_workloads.py NAME --topics 1000 --out DIR    # a smaller variant

Files go to benchmarks/data/NAME/ (gitignored): runs/input.sysNNN (plain TREC run files) and qrels.txt.
Every topic has 3,000 candidate documents (ids drawn from a 20 M collection); each system retrieves its top `depth`
by a Gumbel-perturbed popularity, so systems overlap as real runs do; ~3 % of candidates are relevant (grades 1, 2,
more often among popular ones); qrels are the union of every system's top 30 plus a fifth of the other relevant
candidates. Written with numpy and pandas a block of topics at a time (the many-topics workload never holds more than
one system's block in memory).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SPECS = {"adversarial": dict(systems=100, topics=50, depth=1000, shuffle=True, decimals=2, seed=1),
         "many_topics": dict(systems=10, topics=5000, depth=1000, shuffle=False, decimals=None, seed=2),
         "long_list": dict(systems=4, topics=1000, depth=50, shuffle=False, decimals=None, seed=3, long=50_000)}


def _write(path: Path, q, d, score, tag: str, mode: str):
    rank = np.ones(len(q), np.int64)
    df = pd.DataFrame({"q": q, "z": "Q0", "d": np.char.add("doc", np.char.zfill(d.astype(str), 8)), "r": rank,
                       "s": score, "t": tag})
    df.to_csv(path, sep=" ", header=False, index=False, mode=mode, float_format="%.10g")


def generate(name: str, systems: int, topics: int, depth: int, shuffle: bool, decimals, seed: int, long: int = 0,
             out: Path | None = None, candidates: int = 3000, block: int = 250) -> Path:
    rng = np.random.default_rng(seed)
    out = Path(out or HERE / "data" / name)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    for f in (out / "runs").glob("input.*"): f.unlink()
    skill = rng.uniform(0.0, 3.0, systems)
    pop = np.log(1.0 / np.arange(1, candidates + 1) ** 0.8)
    qrels = []
    for t0 in range(0, topics, block):
        T = min(block, topics - t0)
        tid = np.arange(t0, t0 + T) + 1
        cand = np.sort(rng.integers(0, 20_000_000, (T, candidates)), axis=1)
        rep = np.diff(cand, axis=1, prepend=-1) == 0           # a repeat within a topic (rare): a fresh id instead
        cand[rep] = 20_000_000 + np.flatnonzero(rep.ravel())
        cand = rng.permuted(cand, axis=1)                      # popularity rank independent of the id
        rel = rng.random((T, candidates)) < np.linspace(0.08, 0.01, candidates)
        grade = np.where(rel, rng.choice([1, 2], (T, candidates), p=[0.6, 0.4]), 0)
        pooled = rel & (rng.random((T, candidates)) < 0.2)
        for s in range(systems):
            k = depth
            key = pop + rng.gumbel(size=(T, candidates))
            idx = np.argpartition(-key, k - 1, axis=1)[:, :k]
            g = np.take_along_axis(grade, idx, 1)
            score = 10 + 2 * (rng.normal(0, 1, (T, k)) + skill[s] * (g > 0) + 0.3 * skill[s] * (g == 2))
            if decimals is not None: score = np.round(score, decimals)
            order = np.argsort(-score, axis=1, kind="stable")
            idx, score = np.take_along_axis(idx, order, 1), np.take_along_axis(score, order, 1)
            np.put_along_axis(pooled, idx[:, :30], True, 1)
            q = np.repeat(tid, k)
            d = np.take_along_axis(cand, idx, 1).ravel()
            sc = score.ravel()
            if s == 0 and long and t0 == 0:     # one very long list: system 0, topic 1
                extra = np.arange(long - k) + 90_000_000
                q, d = np.r_[q[:k], np.full(long - k, tid[0]), q[k:]], np.r_[d[:k], extra, d[k:]]
                sc = np.r_[sc[:k], np.linspace(sc[k - 1] - 1, sc[k - 1] - 50, long - k), sc[k:]]
            if shuffle:
                o = rng.permutation(len(q))
                q, d, sc = q[o], d[o], sc[o]
            _write(out / "runs" / f"input.sys{s:03d}", q, d, sc, f"sys{s:03d}", "a")
        for t in range(T):
            j = np.flatnonzero(pooled[t])
            qrels.append(pd.DataFrame({"q": tid[t], "z": 0, "d": cand[t, j], "g": grade[t, j]}))
    qr = pd.concat(qrels, ignore_index=True)
    qr["d"] = np.char.add("doc", np.char.zfill(qr["d"].to_numpy().astype(str), 8))
    qr.to_csv(out / "qrels.txt", sep=" ", header=False, index=False)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=sorted(SPECS))
    ap.add_argument("--systems", type=int)
    ap.add_argument("--topics", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    spec = dict(SPECS[a.name])
    if a.systems: spec["systems"] = a.systems
    if a.topics: spec["topics"] = a.topics
    path = generate(a.name, out=a.out, **spec)
    n = sum(sum(1 for _ in open(f, "rb")) for f in (path / "runs").iterdir())
    print(f"wrote {path}: {n:,} run lines, {sum(1 for _ in open(path / 'qrels.txt', 'rb')):,} judgments")
