"""irinnov.scale by hand (never run by the tests): one process against Dask workers, sharded by topic.

    python benchmarks/make_scale_workload.py /tmp/scale-mid --systems 100 --topics 100 --depth 1000
    python benchmarks/bench_scale.py scaling /tmp/scale-mid            # (b) one process vs 1 and 2 workers; memory vs shards
    python benchmarks/make_scale_workload.py /tmp/scale-big --systems 100 --topics 1000 --depth 1000 --sample 10
    python benchmarks/bench_scale.py big /tmp/scale-big --limit-gb 6 --worker-gb 2.5   # (a) fails in one process, not on Dask

Every run happens in a child process, so that its peak resident memory (ru_maxrss) is its own: one process runs
`read_runs` + `read_qrels` + `prepare` + the measures under an address-space limit (RLIMIT_AS, `--limit-gb`); the Dask
path runs `irinnov.scale.evaluate_sharded` on a LocalCluster whose workers have a memory limit (`--worker-gb`, enforced
by Dask's nanny) and reports each worker's peak resident memory and the per-task times Dask recorded.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

MEASURES = ["AP", "nDCG@10", "P@10", "RR", "U", "RPP"]

ONE = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
limit = float(sys.argv[3])
if limit > 0:
    resource.setrlimit(resource.RLIMIT_AS, (int(limit * 2**30), int(limit * 2**30)))
from irinnov.trec import read_runs, read_qrels, prepare
from irinnov.measures import parse_measure
runs, qrels, measures = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[4])
out = {"ok": False}
t0 = time.perf_counter()
try:
    c = prepare(read_runs(runs), read_qrels(qrels))
    out["prepare_s"] = time.perf_counter() - t0
    tables = {s.name: s(c) for s in map(parse_measure, measures)}
    out.update(ok=True, total_s=time.perf_counter() - t0, shape=list(c.docs.shape))
    if len(sys.argv) > 5:
        import pandas as pd
        pd.concat({k: t for k, t in tables.items()}, names=["measure"]).to_parquet(sys.argv[5])
except MemoryError as e:
    out.update(error=f"MemoryError after {time.perf_counter() - t0:.1f} s")
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

DASK = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
from irinnov import scale
runs, qrels, workers, wgb, shards, measures = (json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4],
                                               int(sys.argv[5]), json.loads(sys.argv[6]))
out = {}
with scale.dask_client(workers=workers, memory_limit=f"{wgb}GiB") as client:
    client.run(lambda: None)
    from dask.distributed import get_task_stream
    t0 = time.perf_counter()
    with get_task_stream(client) as ts:
        tables = scale.evaluate_sharded(runs, qrels, measures, client=client, n_shards=shards or None)
    out["total_s"] = time.perf_counter() - t0
    peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["worker_peak_rss_mb"] = sorted(peaks.values())
    # per-task compute time Dask recorded: the read tasks (_split_run) and the shard tasks (_on_shard)
    acc = {}
    for ev in ts.data:
        name = ev["key"][0] if isinstance(ev["key"], tuple) else str(ev["key"])
        kind = "read" if "_split_run" in name else "shard" if "_on_shard" in name else None
        if kind is None: continue
        for s in ev["startstops"]:
            if s["action"] == "compute":
                acc.setdefault(kind, []).append(s["stop"] - s["start"])
    out["tasks"] = {k: {"n": len(v), "sum_s": sum(v), "max_s": max(v)} for k, v in acc.items()}
    out["client_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if len(sys.argv) > 7:
        import pandas as pd
        pd.concat({k: t for k, t in tables.items()}, names=["measure"]).to_parquet(sys.argv[7])
print(json.dumps(out))
"""


def child(code: str, *args) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    try: out = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        out = {"ok": False, "error": (p.stderr.strip().splitlines() or ["?"])[-1][:300], "returncode": p.returncode}
    out["wall_s"] = wall
    return out


def files(d: str):
    return sorted(glob.glob(os.path.join(d, "runs", "input.*"))), os.path.join(d, "qrels.txt")


def lines(runs) -> int:
    n = 0
    for f in runs:
        with open(f, "rb") as fh:
            n += sum(buf.count(b"\n") for buf in iter(lambda: fh.read(1 << 24), b""))
    return n


def scaling(a):
    runs, qrels = files(a.dir)
    n = lines(runs)
    print(f"workload: {len(runs)} run files, {n:,} lines, {sum(map(os.path.getsize, runs)) / 2**20:.0f} MiB", flush=True)
    m = json.dumps(a.measures)
    rows = []
    for rep in range(a.repeat):
        r = child(ONE, json.dumps(runs), qrels, 0, m)
        rows.append({"path": "one process", "workers": "-", "shards": "-", **r}); print(rows[-1], flush=True)
        for w in (1, 2):
            r = child(DASK, json.dumps(runs), qrels, w, a.worker_gb, 2 * w, m)
            rows.append({"path": "dask", "workers": w, "shards": 2 * w, **r}); print(rows[-1], flush=True)
    for s in a.shards:
        r = child(DASK, json.dumps(runs), qrels, 2, a.worker_gb, s, m)
        rows.append({"path": "dask", "workers": 2, "shards": s, **r}); print(rows[-1], flush=True)
    Path(a.out).write_text(json.dumps({"lines": n, "files": len(runs), "measures": a.measures, "rows": rows}, indent=1))


def big(a):
    runs, qrels = files(a.dir)
    sruns, sqrels = files(os.path.join(a.dir, "sample"))
    n = lines(runs)
    print(f"workload: {len(runs)} run files, {n:,} lines, {sum(map(os.path.getsize, runs)) / 2**30:.2f} GiB", flush=True)
    m = json.dumps(a.measures)
    res = {"lines": n, "files": len(runs), "measures": a.measures, "limit_gb": a.limit_gb, "worker_gb": a.worker_gb}
    if a.one_process_from:     # the one-process attempt of an earlier run of the same workload (it takes the machine's memory)
        res["one_process"] = json.loads(Path(a.one_process_from).read_text())["one_process"]
    else:
        res["one_process"] = child(ONE, json.dumps(runs), qrels, a.limit_gb, m)
    print(res["one_process"], flush=True)
    res["dask"] = child(DASK, json.dumps(runs), qrels, 2, a.worker_gb, a.shards, m, a.out + ".dask.parquet")
    print(res["dask"], flush=True)
    res["sample_one_process"] = child(ONE, json.dumps(sruns), sqrels, a.limit_gb, m, a.out + ".sample.parquet")
    print(res["sample_one_process"], flush=True)
    import numpy as np
    import pandas as pd
    whole, samp = pd.read_parquet(a.out + ".dask.parquet"), pd.read_parquet(a.out + ".sample.parquet")
    cmp = {}
    for meas in a.measures:
        x, y = whole.loc[meas], samp.loc[meas].dropna(axis=1, how="all")
        x = x[y.columns]
        cmp[meas] = {"topics": int(y.shape[1]), "systems": int(y.shape[0]), "same_labels": list(x.index) == list(y.index),
                     "bitwise": bool(np.array_equal(x.to_numpy(), y.to_numpy(), equal_nan=True)),
                     "max_abs_diff": float(np.nanmax(np.abs(x.to_numpy() - y.to_numpy())))}
    res["sample_check"] = cmp
    print(json.dumps(cmp, indent=1))
    Path(a.out).write_text(json.dumps(res, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scaling")
    s.add_argument("dir")
    s.add_argument("--worker-gb", type=float, default=3)
    s.add_argument("--repeat", type=int, default=1)
    s.add_argument("--shards", type=int, nargs="*", default=[2, 4, 8, 16])
    s.add_argument("--measures", nargs="*", default=MEASURES)
    s.add_argument("--out", default="scale_scaling.json")
    b = sub.add_parser("big")
    b.add_argument("dir")
    b.add_argument("--limit-gb", type=float, default=6)
    b.add_argument("--worker-gb", type=float, default=2.5)
    b.add_argument("--shards", type=int, default=0)
    b.add_argument("--measures", nargs="*", default=MEASURES)
    b.add_argument("--out", default="scale_big.json")
    b.add_argument("--one-process-from", default=None, help="reuse the one-process result of an earlier JSON output")
    a = ap.parse_args()
    scaling(a) if a.cmd == "scaling" else big(a)


if __name__ == "__main__":
    main()
