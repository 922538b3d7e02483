"""Runs and qrels as Python dicts (`{query: {doc: score}}`, the form of pytrec_eval, BEIR and most notebooks): nDCG@10
and AP in process, irinnov against pytrec_eval and ir_measures.

    python benchmarks/bench_dict.py --queries 100000 --docs 100 --repeat 5
    python benchmarks/bench_dict.py --queries 100000 --repeat 5 --baseline /path/to/older/checkout
    python benchmarks/bench_dict.py --queries 20000 --tools irinnov_tuples,ir_measures_tuples --baseline DIR

The workload (seeded, built inside each child before its clock starts): Q queries × D retrieved documents drawn from
a corpus of 1 M ids (`doc123456`), scores rounded to 4 decimals (ties occur), and 10 judgments per query with grades
0-2, five of them on retrieved documents. Each tool runs in its own process, tools alternating repetition by
repetition; "convert" is irinnov's `prepare(run, qrels)` (pytrec_eval and ir_measures convert inside their one call),
"total" is convert plus both measures for every query. Peak RSS includes the dicts themselves (about the same in
every child).

  irinnov       c = prepare(run, qrels); ndcg(c, k=10); average_precision(c)
  pytrec_eval   RelevanceEvaluator(qrels, {"ndcg_cut_10", "map"}).evaluate(run)
  ir_measures   calc_aggregate([nDCG@10, AP], qrels, run)
  irinnov_tuples, ir_measures_tuples   the same two, given the workload as lists of ir_measures' ScoredDoc and Qrel
                namedtuples (built before the clock starts; pytrec_eval takes only dicts)

Never run by the tests."""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def workload(Q: int, D: int, seed: int = 0) -> tuple[dict, dict]:
    import numpy as np
    rng = np.random.default_rng(seed)
    names = np.char.add("doc", rng.integers(0, 1_000_000, (Q, D)).astype(str)).tolist()
    scores = rng.random((Q, D)).round(4).tolist()
    jdocs = rng.integers(0, 1_000_000, (Q, 5)).astype(str)
    grades = rng.integers(0, 3, (Q, 10)).tolist()
    run, qrels = {}, {}
    for q in range(Q):
        run[f"q{q}"] = dict(zip(names[q], scores[q]))
        judged = names[q][:5] + ["doc" + x for x in jdocs[q]]
        qrels[f"q{q}"] = dict(zip(judged, grades[q]))
    return run, qrels


def rows(run: dict, qrels: dict) -> tuple[list, list]:
    "The same workload as ir_measures' namedtuples (`ScoredDoc`, `Qrel`), the rows ir_datasets and ir_measures hand over."
    from ir_measures import Qrel, ScoredDoc
    return ([ScoredDoc(q, d, s) for q, ds in run.items() for d, s in ds.items()],
            [Qrel(q, d, g) for q, ds in qrels.items() for d, g in ds.items()])


def child(tool: str, Q: int, D: int) -> dict:
    run, qrels = workload(Q, D)
    if tool.endswith("_tuples"): run, qrels = rows(run, qrels)
    out = {}
    t0 = time.perf_counter()
    if tool.startswith("irinnov"):
        from irinnov.trec import prepare
        from irinnov.metrics import average_precision, ndcg
        t0 = time.perf_counter()
        c = prepare(run, qrels)
        t1 = time.perf_counter()
        means = {"nDCG@10": float(ndcg(c, k=10).to_numpy().mean()), "AP": float(average_precision(c).to_numpy().mean())}
        out["convert"] = t1 - t0
    elif tool == "pytrec_eval":
        import pytrec_eval
        t0 = time.perf_counter()
        res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map"}).evaluate(run)
        means = {"nDCG@10": sum(r["ndcg_cut_10"] for r in res.values()) / len(res),
                 "AP": sum(r["map"] for r in res.values()) / len(res)}
    else:
        import ir_measures
        from ir_measures import AP, nDCG
        t0 = time.perf_counter()
        agg = ir_measures.calc_aggregate([nDCG @ 10, AP], qrels, run)
        means = {"nDCG@10": agg[nDCG @ 10], "AP": agg[AP]}
    out["total"] = time.perf_counter() - t0
    out["means"] = means
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tools", default="irinnov,pytrec_eval,ir_measures")
    ap.add_argument("--baseline", help="a checkout whose irinnov runs as irinnov_base (PYTHONPATH=DIR)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.queries, a.docs)))
        return
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    tools = {t: (t, env) for t in a.tools.split(",")}
    if a.baseline:
        first = next((t for t in tools if t.startswith("irinnov")), "irinnov")   # the baseline takes the same input
        tools = {"irinnov_base": (first, dict(env, PYTHONPATH=os.path.abspath(a.baseline))), **tools}
    print(f"{a.queries:,} queries × {a.docs} documents; load average before: {os.getloadavg()[0]:.2f}", flush=True)
    res = {t: [] for t in tools}
    for _ in range(a.repeat):
        for name, (tool, e) in tools.items():
            r = subprocess.run([sys.executable, __file__, "--child", tool, "--queries", str(a.queries), "--docs",
                                str(a.docs)], env=e, capture_output=True, text=True)
            if r.returncode: sys.exit(f"{name} failed: {r.stderr[-2000:]}")
            res[name].append(json.loads(r.stdout))
            x = res[name][-1]
            print(f"  {name}: total {x['total']:.2f} s" + (f", convert {x['convert']:.2f} s" if "convert" in x else "") +
                  f", peak {x['peak_rss_mb']:.0f} MB (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}; medians of {a.repeat} (fastest in brackets)\n")
    ref = statistics.median(x["total"] for x in res[next(t for t in res if t.startswith("irinnov") and t != "irinnov_base")]) \
        if any(t.startswith("irinnov") and t != "irinnov_base" for t in res) else None
    print("| tool | convert s | total s | vs irinnov | peak RSS MB | nDCG@10 | AP |\n|---|---:|---:|---:|---:|---:|---:|")
    for name, rs in res.items():
        tot = [x["total"] for x in rs]
        conv = [x["convert"] for x in rs if "convert" in x]
        c = f"{statistics.median(conv):.2f} ({min(conv):.2f})" if conv else "–"
        ratio = f"{statistics.median(tot) / ref:.2f}×" if ref else "–"
        m = rs[-1]["means"]
        print(f"| {name} | {c} | {statistics.median(tot):.2f} ({min(tot):.2f}) | {ratio} | "
              f"{max(x['peak_rss_mb'] for x in rs):.0f} | {m['nDCG@10']:.6f} | {m['AP']:.6f} |")


if __name__ == "__main__":
    main()
