"""Seeded generator of TREC-format campaigns of any size (one run file per system, a qrels file), for irinnov.scale.

    python benchmarks/make_scale_workload.py OUT_DIR --systems 100 --topics 7000 --depth 1000 [--seed 0] [--sample 20]

Each topic has a pool of 2×depth documents; every system ranks `depth` of them (a random subset, scores on a grid of
1/1000 so that ties occur), a few systems skip a few topics, and the qrels judge a third of each pool with grades 0-2
(some topics judge nothing relevant; a few qrels topics appear in no run; a few run topics are not judged). With
`--sample K`, the lines of K topics (chosen by the seed) are also written, per system, under OUT_DIR/sample/: the same
rows, so a one-process run on the sample can be compared with the sharded run on everything.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv


def _write(table: pa.Table, path: Path, append: bool = False):
    "Space-separated lines without header or quotes (the TREC formats), appended or written under a temporary name."
    opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    if append:
        with open(path, "ab") as f: pacsv.write_csv(table, f, opts)
    else:
        tmp = path.with_name(f".{path.name}.tmp")
        pacsv.write_csv(table, tmp, opts)
        os.replace(tmp, path)


def topic_lists(rng: np.random.Generator, S: int, depth: int, skip: float = 0.02):
    "One topic: for each of S systems a ranked list of `depth` docs from a pool of 2×depth (some systems skip it)."
    pool = 2 * depth
    picks = np.argsort(rng.random((S, pool)), axis=1)[:, :depth]          # distinct docs per list
    scores = np.round(rng.random((S, depth)) * 10, 3)                       # a grid: ties happen
    present = rng.random(S) >= skip
    return picks, scores, present


def write_workload(out, systems: int, topics: int, depth: int, seed: int = 0, sample: int = 0, quiet: bool = True) -> dict:
    "Write `systems` run files and a qrels file under `out`; return the file paths and the sample topics."
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = [f"sys{s:03d}" for s in range(systems)]
    tids = [f"{1000 + t}" for t in range(topics)]
    sample_t = set(rng.choice(topics, size=min(sample, topics), replace=False).tolist()) if sample else set()
    if sample: (out / "sample" / "runs").mkdir(parents=True, exist_ok=True)
    paths = [out / "runs" / f"input.{n}" for n in names]
    spaths = [out / "sample" / "runs" / f"input.{n}" for n in names]
    for p in paths + (spaths if sample else []):
        if p.exists(): p.unlink()
    qrels = []
    block = max(1, 200_000 // max(depth * systems // 100, 1))      # topics per write: a few MB per system
    for t0 in range(0, topics, block):
        parts = [[] for _ in range(systems)]
        sparts = [[] for _ in range(systems)]
        for t in range(t0, min(t0 + block, topics)):
            picks, scores, present = topic_lists(rng, systems, depth)
            tid = tids[t]
            # qrels: a third of the pool judged, grades 0/1/2; 1 topic in 25 judges nothing relevant
            judged = np.flatnonzero(rng.random(2 * depth) < 1 / 3)
            grades = rng.choice([0, 0, 0, 1, 2], size=len(judged)) * (t % 25 != 7)
            qrels.append((tid, judged, grades))
            if t % 50 == 11: continue                   # 1 qrels topic in 50 is in no run at all
            for s in np.flatnonzero(present):
                tbl = pa.table({"q": pa.array([tid] * depth), "z": pa.array(["Q0"] * depth),
                                "d": pa.array(np.char.add(f"D{tid}-", picks[s].astype(str))),
                                "r": pa.array(np.arange(1, depth + 1)), "s": pa.array(scores[s]),
                                "t": pa.array([names[s]] * depth)})
                parts[s].append(tbl)
                if t in sample_t: sparts[s].append(tbl)
        for s in range(systems):
            if parts[s]: _write(pa.concat_tables(parts[s]), paths[s], append=True)
            if sparts[s]: _write(pa.concat_tables(sparts[s]), spaths[s], append=True)
        if not quiet: print(f"topics {min(t0 + block, topics)}/{topics}", file=sys.stderr)
    # a topic the runs hold but the qrels do not
    for s in range(systems):
        _write(pa.table({"q": ["999999"], "z": ["Q0"], "d": ["Dx"], "r": ["1"], "s": [1.0], "t": [names[s]]}), paths[s], append=True)
    qpath = out / "qrels.txt"
    rows = [(tid, f"D{tid}-{j}", g) for tid, judged, grades in qrels
            for j, g in zip(judged.tolist(), grades.tolist())]
    qtbl = pa.table({"q": [r[0] for r in rows], "i": ["0"] * len(rows), "d": [r[1] for r in rows], "g": [int(r[2]) for r in rows]})
    _write(qtbl, qpath)
    if sample:
        keep = {tids[t] for t in sample_t}
        _write(qtbl.filter(pa.array([r[0] in keep for r in rows])), out / "sample" / "qrels.txt")
    return {"runs": [str(p) for p in paths if p.exists()], "qrels": str(qpath),
            "sample_topics": sorted(tids[t] for t in sample_t),
            "sample_runs": [str(p) for p in spaths if p.exists()] if sample else []}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--topics", type=int, default=7000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", type=int, default=0)
    a = ap.parse_args(argv)
    info = write_workload(a.out, a.systems, a.topics, a.depth, a.seed, a.sample, quiet=False)
    print(f"{len(info['runs'])} run files, qrels {info['qrels']}, sample topics {info['sample_topics'][:5]}...")


if __name__ == "__main__":
    main()
