"""One run on the command line, and the commands that should cost nothing: irinnov against its peers, whole processes.

    python benchmarks/bench_cli.py --repeat 7                       # needs IRINNOV_MIRROR or the datasets' cache
    python benchmarks/bench_cli.py --repeat 7 --baseline ../main   # also the irinnov of another checkout

Workloads (the files are decompressed once into a temporary folder, outside the clock):

  covid    one TREC-COVID round 1 run (`baseline`, 30,000 lines), its qrels, AP, nDCG and P@10
  dl2020   one TREC DL 2020 passage run (`bert_6`, 190,699 lines), its qrels, the same measures at relevance level 2
  startup  `irinnov --version`, `irinnov --help`, `import irinnov.trec`, and the peers' imports; `python -c pass`

How each tool is run (every one a fresh process, imports included; Python's bytecode cache on, as installed):

  irinnov       `irinnov evaluate -m map -m ndcg -m P.10 [-l 2] QRELS RUN`
  pytrec_eval   the five-line script its users write: parse_qrel, parse_run, RelevanceEvaluator, evaluate, means
  ir_measures   its command line, `python -m ir_measures QRELS RUN 'AP nDCG P@10'` (`AP(rel=2) nDCG P(rel=2)@10`)
  trec_eval     9.0.8 built from ../shared/oracles into a temporary folder, `trec_eval -m map -m ndcg -m P.10 [-l 2]`

Tools alternate repetition by repetition; the table gives medians (and the fastest). Never run by the tests."""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = HERE.parent.parent / "shared" / "oracles" / "trec_eval-9.0.8"
PY = sys.executable
IRINNOV = str(Path(PY).with_name("irinnov"))

PTE_SCRIPT = """import sys, pytrec_eval
with open(sys.argv[1]) as f: qrel = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f: run = pytrec_eval.parse_run(f)
res = pytrec_eval.RelevanceEvaluator(qrel, {"map", "ndcg", "P_10"}, relevance_level=int(sys.argv[3])).evaluate(run)
for m in ("map", "ndcg", "P_10"): print(m, "all", "%.4f" % (sum(r[m] for r in res.values()) / len(res)))
"""


def _files(tmp: Path) -> dict:
    "The two runs and their qrels, decompressed into `tmp`."
    from irinnov.datasets import load
    out = {}
    for key, name, run, qrels in (("covid", "trec-covid-round1", "round1/runs/baseline", "qrels-rnd1.txt"),
                                  ("dl2020", "trec-dl-2020-passage", "dl-20-official-input.bert_6.gz", "qrels.dl20-passage.txt")):
        root = Path(load(name, progress=False).root)          # fetched from the mirror on first use
        run_path = next(p for p in root.rglob("*") if p.as_posix().endswith(run))
        qrels_path = next(root.rglob(qrels))
        for src, dst in ((run_path, tmp / f"{key}.run"), (qrels_path, tmp / f"{key}.qrels")):
            with (gzip.open(src) if _gzipped(src) else open(src, "rb")) as f, open(dst, "wb") as g:
                shutil.copyfileobj(f, g)
        out[key] = (tmp / f"{key}.qrels", tmp / f"{key}.run")
    return out


def _gzipped(p) -> bool:
    with open(p, "rb") as f: return f.read(2) == b"\x1f\x8b"


def _trec_eval(tmp: Path) -> str | None:
    if not ORACLE.is_dir() or shutil.which("make") is None: return None
    shutil.copytree(ORACLE, tmp / "te")
    if subprocess.run(["make", "-s", "-C", str(tmp / "te")], capture_output=True).returncode: return None
    return str(tmp / "te" / "trec_eval")


def commands(files: dict, tmp: Path, te: str | None, baseline: str | None) -> dict:
    "{workload: {tool: (argv, env)}}"
    script = tmp / "pte.py"
    script.write_text(PTE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base_env = dict(env, PYTHONPATH=baseline) if baseline else None
    out = {}
    for key, level in (("covid", 1), ("dl2020", 2)):
        q, r = map(str, files[key])
        lv = ["-l", str(level)] if level != 1 else []
        rel = f"(rel={level})" if level != 1 else ""
        w = {"irinnov": ([IRINNOV, "evaluate", "-m", "map", "-m", "ndcg", "-m", "P.10", *lv, q, r], env),
             "pytrec_eval": ([PY, str(script), q, r, str(level)], env),
             "ir_measures": ([PY, "-m", "ir_measures", q, r, f"AP{rel} nDCG P{rel}@10"], env)}   # (nDCG has no rel=)
        if te: w["trec_eval"] = ([te, "-m", "map", "-m", "ndcg", "-m", "P.10", *lv, q, r], env)
        if baseline: w = {"irinnov_base": (w["irinnov"][0], base_env), **w}
        out[key] = w
    s = {"python -c pass": ([PY, "-c", "pass"], env),
         "irinnov --version": ([IRINNOV, "--version"], env), "irinnov --help": ([IRINNOV, "--help"], env),
         "import irinnov.trec": ([PY, "-c", "import irinnov.trec"], env),
         "import pytrec_eval": ([PY, "-c", "import pytrec_eval"], env),
         "import ir_measures": ([PY, "-c", "import ir_measures"], env)}
    if baseline:
        s["irinnov --version (baseline)"] = ([IRINNOV, "--version"], base_env)
        s["import irinnov.trec (baseline)"] = ([PY, "-c", "import irinnov.trec"], base_env)
    out["startup"] = s
    return out


def _time(argv, env) -> tuple[float, str]:
    t0 = time.perf_counter()
    # (run outside any checkout: `python -c` puts the working directory first on sys.path, which would import the
    # checkout the script was started from instead of the one PYTHONPATH names)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    if r.returncode: sys.exit(f"{argv[:3]} failed: {r.stderr[-1500:]}")
    return wall, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--baseline", help="a checkout whose irinnov runs as irinnov_base (PYTHONPATH=DIR)")
    ap.add_argument("--workloads", default="startup,covid,dl2020")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        files = _files(tmp)
        te = _trec_eval(tmp)
        cmds = commands(files, tmp, te, str(Path(a.baseline).resolve()) if a.baseline else None)
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        for key in a.workloads.split(","):
            tools = cmds[key]
            for argv, env in tools.values(): _time(argv, env)          # warm: bytecode cache, page cache
            times = {t: [] for t in tools}
            for _ in range(a.repeat):
                for t, (argv, env) in tools.items(): times[t].append(_time(argv, env)[0])
            print(f"\n{key} ({a.repeat} repetitions, alternated; load average now {os.getloadavg()[0]:.2f})")
            print(f"| tool | median s | fastest s |\n|---|---:|---:|")
            for t, v in times.items(): print(f"| {t} | {statistics.median(v):.3f} | {min(v):.3f} |")


if __name__ == "__main__":
    main()
