"""`irinnov report` of whole campaigns: wall-clock time and peak memory of the command, each run a fresh process.

    python benchmarks/bench_report.py --repeat 3                        # needs IRINNOV_MIRROR or the datasets' cache
    python benchmarks/bench_report.py --repeat 3 --baseline ../main    # also the irinnov of another checkout, alternated

Workloads (the command line a user types; the datasets fetched into the cache first, outside the clock):

  dl2020   `irinnov report --dataset trec-dl-2020-passage -o DIR`  (59 runs, 11.5 M run lines, 54 judged topics)
  covid    `irinnov report --dataset trec-covid-round1 -o DIR`     (143 runs, 30 topics)

This checkout's report runs twice per repetition: `first`, with the encoded campaign that an earlier report keeps in
`$IRINNOV_HOME/campaigns/NAME` removed (the runs read, decompressed and encoded, then kept), and `again`, reading it
back; the baseline runs once, after the kept campaign is removed (older code keeps none).

Each repetition is a child process (`python -m irinnov report ...`, Python's bytecode cache on and written for both
checkouts before the first clock, even where the shell sets PYTHONDONTWRITEBYTECODE); its wall-clock time
is measured around it and its peak resident memory read from the kernel's accounting of the waited-for child
(`os.wait4`: the largest of the command and any process it forked), with the user and system CPU seconds beside
them (on a shared machine the CPU time moves less than the wall time). The checkouts alternate repetition by
repetition; the table gives medians (and the fastest) and the load average before the first run. Never run by the tests.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = {"dl2020": "trec-dl-2020-passage", "covid": "trec-covid-round1"}


def run(checkout: Path, dataset: str, out: Path) -> dict:
    "One `irinnov report` in a child process: wall seconds, peak RSS (MB), user and system CPU seconds."
    # Python's bytecode cache on, as an installed package has it, even where the shell sets PYTHONDONTWRITEBYTECODE
    # (without it each repetition compiles every module it imports that has no cached bytecode yet)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(checkout),
           "IRINNOV_PROGRESS": "0"}
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    # (run from the checkout: `python -m` puts the working directory first on the path)
    p = subprocess.Popen([sys.executable, "-m", "irinnov", "report", "--dataset", dataset, "-o", str(out)], env=env,
                         cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if p.returncode: raise SystemExit(f"{checkout}: irinnov report --dataset {dataset} failed ({p.returncode}):\n{err}")
    return {"wall": wall, "rss": ru.ru_maxrss / 1024, "user": ru.ru_utime, "sys": ru.ru_stime}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="another checkout, run alternately with this one")
    ap.add_argument("--only", choices=sorted(WORKLOADS), nargs="+", default=list(WORKLOADS))
    a = ap.parse_args()
    from irinnov import datasets
    for w in a.only: datasets.load(WORKLOADS[w], progress=False).run_files     # fetched before any clock starts
    checkouts = {"irinnov": HERE.parent} | ({"before": Path(a.baseline).resolve()} if a.baseline else {})
    for root in checkouts.values():        # the bytecode written before any clock starts, as `pip install` compiles it
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "irinnov")], check=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        for w in a.only:
            kept = datasets.home() / "campaigns" / WORKLOADS[w]       # where `irinnov report` keeps the encoded runs
            runs = [("first", HERE.parent, True), ("again", HERE.parent, False)] + \
                   ([("before", checkouts["before"], True)] if a.baseline else [])
            got = {k: [] for k, _, _ in runs}
            for _ in range(a.repeat):
                for k, root, fresh in runs:
                    if fresh: shutil.rmtree(kept, ignore_errors=True)
                    got[k].append(run(root, WORKLOADS[w], Path(tmp) / k))
            for k, rs in got.items():
                med = lambda f: statistics.median(r[f] for r in rs)
                print(f"{w:7s} {k:7s} wall {med('wall'):6.2f} s (fastest {min(r['wall'] for r in rs):.2f}), "
                      f"peak RSS {med('rss'):6.0f} MB (max {max(r['rss'] for r in rs):.0f}), "
                      f"CPU {med('user') + med('sys'):6.2f} s ({med('user'):.2f} user + {med('sys'):.2f} sys)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
