"""Whole-process timing and peak memory where reading and encoding are hard: irinnov (prepared once, and the naive
caller), pytrec_eval and trec_eval, side by side in one run.

    python benchmarks/make_hard_workloads.py adversarial          # once per workload (see that script)
    python benchmarks/bench_hard.py adversarial [--repeat 3]      # irinnov, irinnov_files, irinnov_naive, peers
    python benchmarks/bench_hard.py many_topics --repeat 1
    python benchmarks/bench_hard.py long_list --depth 1000 --tools irinnov,trec_eval      # memory: -M 1000
    python benchmarks/bench_hard.py long_list --tools irinnov,irinnov_files,trec_eval    # whole lists (ragged)
    python benchmarks/bench_hard.py metrics --tools irinnov        # the repository's workload: bytes per run line
    python benchmarks/bench_hard.py adversarial --baseline ../main # this checkout against another, side by side

Every tool runs in its own process, timed from start to exit (imports included, Python's bytecode cache on, as in
any installed package), with its peak RSS:
  irinnov        read_runs + read_qrels + prepare(depth=, ragged=True) once, then AP, nDCG and P@100 of the Campaign
                 (ragged: a list much longer than the rest is kept apart, not padded to: nothing else changes);
  irinnov_files  prepare_files(runs folder, qrels file, ragged=True): the files a batch at a time, no frame of all the runs;
                 then AP, nDCG and P@100 of the Campaign;
  irinnov_naive  read_runs + read_qrels, then average_precision(runs, qrels), ndcg(runs, qrels),
                 precision(runs, qrels, k=100): each call hands over the frames (the encoding cache serves the 2nd, 3rd);
  pytrec_eval    parse_qrel, RelevanceEvaluator(map, ndcg, P_100), then each run parsed, evaluated and dropped, as its
                 users write it (before 2026-11-30: every run parsed and held first, now the tool pytrec_eval_held;
                 slower where the runs' dicts fill the memory);
  trec_eval      9.0.8 built from ../shared/oracles in a temporary folder: `trec_eval -c -m map -m ndcg -m P.100
                 [-M depth] qrels run`, one process per run file, run one after another (the time is their sum).
Tools alternate repetition by repetition; the median and the best of --repeat are printed, with ratios to irinnov.
Run by hand only; other people's jobs share the machine, so note the load average printed with the table.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = HERE.parent.parent / "shared" / "oracles" / "trec_eval-9.0.8"


def _irinnov(data: Path, depth, naive: bool) -> dict:
    import numpy as np
    from irinnov.metrics import average_precision, ndcg, precision
    from irinnov.trec import prepare, read_qrels, read_runs
    t0 = time.perf_counter()
    runs, qrels = read_runs(data / "runs"), read_qrels(data / "qrels.txt")
    t1 = time.perf_counter()
    if naive:
        means = [m(runs, qrels).mean(axis=1) for m in (average_precision, ndcg)] + \
                [precision(runs, qrels, k=100).mean(axis=1)]
    else:
        c = prepare(runs, qrels, depth=depth, ragged=True)
        means = [average_precision(c).mean(axis=1), ndcg(c).mean(axis=1), precision(c, k=100).mean(axis=1)]
    t2 = time.perf_counter()
    return {"read": t1 - t0, "rest": t2 - t1, "lines": len(runs),
            "means": {k: v.to_dict() for k, v in zip(("AP", "nDCG", "P@100"), means)}}


def _irinnov_files(data: Path, depth) -> dict:
    "The run files straight into a Campaign (`prepare_files`: a batch of files at a time, no frame of all the runs)."
    from irinnov.metrics import average_precision, ndcg, precision
    from irinnov.trec import prepare_files
    t0 = time.perf_counter()
    c = prepare_files(data / "runs", data / "qrels.txt", depth=depth, ragged=True)
    t1 = time.perf_counter()
    means = [average_precision(c).mean(axis=1), ndcg(c).mean(axis=1), precision(c, k=100).mean(axis=1)]
    t2 = time.perf_counter()
    return {"read": t1 - t0, "rest": t2 - t1, "means": {k: v.to_dict() for k, v in zip(("AP", "nDCG", "P@100"), means)}}


def _pytrec_eval(data: Path, depth, naive: bool, held: bool = False) -> dict:
    "pytrec_eval as its users write it: the qrels, then each run parsed, evaluated and dropped (`held`: every run "
    "parsed first and kept, then evaluated; slower where the runs' dicts fill the memory)."
    import pytrec_eval
    t0 = time.perf_counter()
    with open(data / "qrels.txt") as f: qrels = pytrec_eval.parse_qrel(f)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "P_100"})
    topics = [q for q, d in qrels.items() if any(g >= 1 for g in d.values())]
    means = {"AP": {}, "nDCG": {}, "P@100": {}}
    files = sorted((data / "runs").iterdir())
    read, held_runs = time.perf_counter() - t0, {}

    def parse(p):
        with open(p) as f: return pytrec_eval.parse_run(f)

    if held:
        t = time.perf_counter()
        held_runs = {p: parse(p) for p in files}
        read += time.perf_counter() - t
    for p in files:
        t = time.perf_counter()
        run = held_runs.pop(p) if held else parse(p)
        read += time.perf_counter() - t
        res = ev.evaluate(run)
        for m, key in (("AP", "map"), ("nDCG", "ndcg"), ("P@100", "P_100")):
            means[m][p.name[len("input."):]] = sum(res.get(q, {}).get(key, 0.0) for q in topics) / len(topics)
        del run, res
    t2 = time.perf_counter()
    return {"read": read, "rest": t2 - t0 - read, "means": means}


def child(tool: str, data: Path, depth):
    fn = {"irinnov": lambda: _irinnov(data, depth, False), "irinnov_naive": lambda: _irinnov(data, depth, True),
          "irinnov_files": lambda: _irinnov_files(data, depth), "pytrec_eval": lambda: _pytrec_eval(data, depth, False),
          "pytrec_eval_held": lambda: _pytrec_eval(data, depth, False, held=True)}[tool]
    out = fn()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def build_trec_eval(tmp: Path) -> Path | None:
    if not ORACLE.is_dir() or shutil.which("make") is None: return None
    shutil.copytree(ORACLE, tmp / "te")
    if subprocess.run(["make", "-s", "-C", str(tmp / "te")], capture_output=True).returncode: return None
    return tmp / "te" / "trec_eval"


def _spawn(args: list, env=None) -> tuple[float, float, str]:
    "Run one process: (wall seconds, its own peak RSS in MB from wait4, its stdout)."
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode: sys.exit(f"{args[0]} failed: {err.decode()[-2000:]}")
    return wall, ru.ru_maxrss / 1024, out.decode()


def run_trec_eval(binary: Path, data: Path, depth) -> dict:
    "One trec_eval process per run file; wall time summed, the largest peak RSS of one process."
    t, peak = 0.0, 0.0
    for f in sorted((data / "runs").iterdir()):
        args = [str(binary), "-c", "-m", "map", "-m", "ndcg", "-m", "P.100"] + (["-M", str(depth)] if depth else [])
        wall, rss, _ = _spawn(args + [str(data / "qrels.txt"), str(f)])
        t, peak = t + wall, max(peak, rss)
    return {"process": t, "peak_rss_mb": peak}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", help="a folder under benchmarks/data (adversarial, many_topics, long_list, metrics)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--depth", type=int, help="cut every list at this depth (trec_eval -M)")
    ap.add_argument("--tools", default="irinnov,irinnov_files,irinnov_naive,pytrec_eval,trec_eval")
    ap.add_argument("--baseline", help="another checkout of irinnov (a folder holding irinnov/): adds the tool "
                    "irinnov_base, the first irinnov tool of --tools run against that code, to compare two versions "
                    "side by side")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    data = Path(a.workload) if Path(a.workload).is_dir() else HERE / "data" / a.workload
    if a.child: return child(a.child, data, a.depth)
    if not (data / "qrels.txt").exists(): sys.exit(f"{data}: no workload; run benchmarks/make_hard_workloads.py first")
    tools = a.tools.split(",")
    if a.baseline and "irinnov_base" not in tools: tools.insert(1, "irinnov_base")
    first = next((t for t in tools if t.startswith("irinnov") and t != "irinnov_base"), "irinnov")  # what irinnov_base runs
    tmp = Path(tempfile.mkdtemp())
    binary = build_trec_eval(tmp) if "trec_eval" in tools else None
    if "trec_eval" in tools and binary is None:
        print("trec_eval: no oracle sources or no compiler; left out"); tools.remove("trec_eval")
    procs, rss, inner, means = {}, {}, {}, {}
    # Python's bytecode cache on, as an installed package has it (pip compiles on install; an editable install writes
    # __pycache__ on first import), even where the shell sets PYTHONDONTWRITEBYTECODE: without it every process
    # compiles irinnov's modules again (about 0.05 s), which no user pays. One import first fills the cache.
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base_env["IRINNOV_PROGRESS"] = "0"
    for path in ([a.baseline] if a.baseline else []) + [None]:
        _spawn([sys.executable, "-c", "import irinnov.metrics, irinnov.trec, irinnov.measures"],
               env={**base_env, **({"PYTHONPATH": str(Path(path).resolve())} if path else {})})
    load = os.getloadavg()[0]
    for _ in range(a.repeat):
        for tool in tools:
            if tool == "trec_eval":
                r = run_trec_eval(binary, data, a.depth)
                procs.setdefault(tool, []).append(r["process"]); rss[tool] = r["peak_rss_mb"]
                continue
            env = dict(base_env)
            if tool == "irinnov_base":
                if not a.baseline: sys.exit("irinnov_base needs --baseline")
                env["PYTHONPATH"] = str(Path(a.baseline).resolve())
            wall, peak, out = _spawn([sys.executable, __file__, str(data), "--child",
                                      first if tool == "irinnov_base" else tool]
                                     + (["--depth", str(a.depth)] if a.depth else []), env=env)
            r = json.loads(out.strip().splitlines()[-1])
            procs.setdefault(tool, []).append(wall)
            inner.setdefault(tool, []).append(r["read"] + r["rest"])
            rss[tool] = max(rss.get(tool, 0), r["peak_rss_mb"])
            means[tool] = r["means"]
            if "lines" in r: rss["lines"] = r["lines"]
    shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(procs["irinnov"]) if "irinnov" in procs else None
    print(f"workload {data.name}{f' -M {a.depth}' if a.depth else ''}: {a.repeat} repetition(s), "
          f"load average {load:.1f} before -> {os.getloadavg()[0]:.1f} after")
    print(f"| tool | process s (median) | best | in-script s (median) | vs irinnov (median) | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for tool in tools:
        med = statistics.median(procs[tool])
        ins = f"{statistics.median(inner[tool]):.2f}" if tool in inner else "–"
        ratio = f"{med / base:.2f}×" if base else "–"
        print(f"| {tool} | {med:.2f} | {min(procs[tool]):.2f} | {ins} | {ratio} | {rss[tool]:.0f} |")
    if "lines" in rss:
        for tool in ("irinnov", "irinnov_base", "irinnov_naive", "irinnov_files"):
            if tool in rss: print(f"{tool}: {rss[tool] * 2**20 / rss['lines']:.0f} bytes per run line at peak "
                                  f"({rss['lines']:,} lines)")
    if "pytrec_eval" in means:
        ref = means["pytrec_eval"]
        for tool in ("irinnov", "irinnov_base", "irinnov_naive", "irinnov_files"):
            if tool in means and not a.depth:
                d = max(abs(means[tool][m][s] - ref[m][s]) for m in ref for s in ref[m])
                print(f"largest |{tool} - pytrec_eval| over system means: {d:.1e}")


if __name__ == "__main__":
    main()
