"""irinnov.scale: sharded evaluation on Dask equals one process; a loopback cluster of `dask scheduler` + two
`dask worker` processes; a worker killed mid-run; malformed input; `import irinnov` does not import dask."""
import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed", reason="dask[distributed] (the 'scale' extra) is not installed")

from irinnov import scale
from irinnov.measures import parse_measure
from irinnov.trec import TrecFormatError, prepare, read_qrels, read_runs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from make_scale_workload import write_workload  # noqa: E402

MEASURES = ["AP", "P@10", "nDCG@10", "RR", "bpref", "R-prec", "RBP(p=0.8)", "AP@100", "P@20_rareness(alpha=0.5)",
            "AP@20_rareness(alpha=1)", "P'@20_rareness(alpha=0.5)", "U", "U(log0=penalty)", "RPP", "dcgRPP", "invRPP",
            "ASL", "ASL@g1-10", "ASL(pad=100)", "RIC", "RIC(graded=0)"]


def one_process(runs, qrels, measures=MEASURES, depth=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = prepare(read_runs(runs) if not hasattr(runs, "columns") else runs,
                    read_qrels(qrels) if not hasattr(qrels, "columns") else qrels).truncate(depth)
        return {s.name: s(c) for s in map(parse_measure, measures)}


def assert_same(ref: dict, got: dict):
    assert list(ref) == list(got)
    for m, a in ref.items():
        b = got[m]
        assert list(a.index) == list(b.index) and list(a.columns) == list(b.columns), m
        assert a.attrs == b.attrs, m
        assert np.array_equal(a.to_numpy(), b.to_numpy(), equal_nan=True), m      # bit for bit, every family
        np.testing.assert_allclose(b.mean(axis=1), a.mean(axis=1), rtol=0, atol=1e-12, err_msg=m)


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    d = tmp_path_factory.mktemp("campaign")
    return write_workload(d, systems=8, topics=60, depth=120, seed=3)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackCluster:
    "`dask scheduler` and two `dask worker` processes (no nanny: a killed worker stays dead) on 127.0.0.1."
    def __init__(self, tmp: Path, workers: int = 2):
        bindir = Path(sys.executable).parent
        dask = str(bindir / "dask") if (bindir / "dask").exists() else "dask"
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        log = open(tmp / "dask.log", "w")
        self.procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", self.address.rsplit(":", 1)[1],
                                        "--no-dashboard"], stdout=log, stderr=log)]
        self.workers = [subprocess.Popen([dask, "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                          "--memory-limit", "2GB", "--local-directory", str(tmp)], stdout=log, stderr=log)
                        for _ in range(workers)]
        self.procs += self.workers

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None: p.terminate()
        for p in self.procs:
            try: p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@pytest.fixture
def loopback(tmp_path):
    from dask.distributed import Client
    cluster = LoopbackCluster(tmp_path)
    try:
        client = Client(cluster.address, timeout="60s")
        try:
            client.wait_for_workers(2, timeout=90)
            yield cluster, client
        finally:
            client.close()
    finally:
        cluster.stop()


def test_import_irinnov_does_not_import_dask():
    code = "import sys, irinnov, irinnov.scale, irinnov.trec, irinnov.cli; print(any(m == 'dask' or m.startswith(('dask.', 'distributed')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_shard_of_is_the_same_in_every_process():
    code = "from irinnov.scale import shard_of; print(shard_of(['1', 'q7', 'abc', '303'], 5).tolist())"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "random")}
    assert len(outs) == 1
    import zlib
    assert outs.pop().strip() == str([zlib.crc32(t.encode()) % 5 for t in ["1", "q7", "abc", "303"]])


def test_loopback_cluster_equals_one_process(loopback, workload):
    cluster, client = loopback
    assert len(client.scheduler_info()["workers"]) == 2
    ref = one_process(workload["runs"], workload["qrels"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with scale.dask_client(scheduler=cluster.address) as c:
            got = scale.evaluate_sharded(workload["runs"], workload["qrels"], MEASURES, client=c, n_shards=5)
    assert_same(ref, got)
    # depth cut and a DataFrame input take the same path
    ref = one_process(workload["runs"], workload["qrels"], ["AP", "U", "RPP", "RIC"], depth=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = scale.evaluate_sharded(read_runs(workload["runs"]), read_qrels(workload["qrels"]), ["AP", "U", "RPP", "RIC"],
                                     client=client, depth=50, n_shards=7)
    assert_same(ref, got)


def test_every_shard_count_gives_the_same_tables(loopback, workload):
    _, client = loopback
    ref = one_process(workload["runs"], workload["qrels"], ["AP", "P@20_rareness(alpha=0.5)", "U", "RPP", "ASL", "RIC"])
    for n in (1, 2, 60, 200):    # one shard; more shards than topics (empty shards)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = scale.evaluate_sharded(workload["runs"], workload["qrels"], list(ref), client=client, n_shards=n)
        assert_same(ref, got)


def test_killed_worker_is_retried(loopback, tmp_path):
    cluster, client = loopback
    w = write_workload(tmp_path / "big", systems=12, topics=120, depth=300, seed=5)
    measures = ["AP", "U", "RPP", "ASL", "RIC"]
    ref = one_process(w["runs"], w["qrels"], measures)
    pids = client.run(os.getpid)                       # worker address -> process id
    assert sorted(pids.values()) == sorted(p.pid for p in cluster.workers)
    out, killed = {}, []

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["tables"] = scale.evaluate_sharded(w["runs"], w["qrels"], measures, client=client, n_shards=24)
    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 120
    while t.is_alive() and time.monotonic() < deadline and not killed:
        busy = [a for a, tasks in client.processing().items() if any("_on_shard" in str(k) for k in tasks)]
        if busy:
            os.kill(pids[busy[0]], signal.SIGKILL)     # a worker dies while measuring a shard
            killed.append(pids[busy[0]])
        time.sleep(0.01)
    t.join(timeout=300)
    assert killed, "the run ended before a worker could be killed"
    assert not t.is_alive()
    assert len(client.scheduler_info()["workers"]) == 1
    assert_same(ref, out["tables"])


def test_malformed_file_gives_the_one_process_error(loopback, tmp_path):
    cluster, client = loopback
    w = write_workload(tmp_path / "bad", systems=4, topics=10, depth=20, seed=1)
    bad = Path(w["runs"][2])
    lines = bad.read_text().splitlines()
    lines[6] = lines[6].rsplit(" ", 2)[0] + " 1.5e x"      # a non-numeric score on line 7
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrecFormatError) as one:
        read_runs(w["runs"])
    with pytest.raises(TrecFormatError) as sharded:
        scale.evaluate_sharded(w["runs"], w["qrels"], ["AP"], client=client, work_dir=tmp_path / "wd")
    assert str(sharded.value) == str(one.value)
    assert str(one.value).startswith(f"{bad}:7: ")
    assert type(sharded.value) is TrecFormatError and sharded.value.line == 7
    assert list((tmp_path / "wd").iterdir()) == []          # the shards' pieces are removed


def test_system_name_clash_and_errors(tmp_path, workload):
    from dask.distributed import Client  # noqa: F401
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    src = Path(workload["runs"][0]).read_text()
    (tmp_path / "a" / "input.x").write_text(src)
    (tmp_path / "b" / "input.x").write_text(src)
    files = [tmp_path / "a" / "input.x", tmp_path / "b" / "input.x"]
    with pytest.raises(ValueError) as one:
        read_runs(files)
    with scale.dask_client(workers=1, memory_limit="1GB") as client:
        with pytest.raises(ValueError) as sharded:
            scale.evaluate_sharded(files, workload["qrels"], ["AP"], client=client)
        assert str(sharded.value) == str(one.value)
        with pytest.raises(ValueError, match="U compares each run with the others"):
            scale.evaluate_sharded(files[:1], workload["qrels"], ["U"], client=client)
        with pytest.raises(ValueError, match="unknown measure"):
            scale.evaluate_sharded(files[:1], workload["qrels"], ["APX"], client=client)
    with pytest.raises(ValueError, match="not both"):
        with scale.dask_client(scheduler="tcp://127.0.0.1:1", workers=2): pass


def test_cli_functions(workload, capsys):
    "The Dask options of the command line, and the client they ask for, give the one-process tables."
    from irinnov.cli import add_dask_arguments, dask_client_of, wants_dask
    p = add_dask_arguments(argparse.ArgumentParser())
    p.add_argument("qrels")
    p.add_argument("runs", nargs="+")
    args = p.parse_args([workload["qrels"], *workload["runs"], "--workers", "2", "--memory-limit", "1GB", "--shards", "3"])
    assert wants_dask(args) and not wants_dask(p.parse_args([workload["qrels"], workload["runs"][0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with dask_client_of(args) as client:
            tables = scale.evaluate_sharded(args.runs, args.qrels, ["AP", "RPP", "nDCG@10"], client=client, n_shards=args.shards)
    assert list(tables) == ["AP", "RPP", "nDCG@10"]
    assert_same(one_process(workload["runs"], workload["qrels"], ["AP", "RPP", "nDCG@10"]), tables)
    with pytest.raises(SystemExit):
        p.parse_args([workload["qrels"], workload["runs"][0], "--workers", "0"])


IRINNOV = str(Path(sys.executable).parent / "irinnov")


def test_cli_subprocess(workload, tmp_path):
    base = [IRINNOV, "evaluate", workload["qrels"], *workload["runs"], "-m", "AP", "-m", "RPP",
            "-q", "--format", "tsv"]
    one = subprocess.run(base, capture_output=True, text=True)
    dask = subprocess.run(base + ["--workers", "2", "--memory-limit", "1GB"], capture_output=True, text=True)
    assert one.returncode == 0 and dask.returncode == 0, dask.stderr
    assert dask.stdout == one.stdout
    bad = tmp_path / "input.bad"
    bad.write_text("1 Q0 d 1 x s\n")
    err = subprocess.run(base[:3] + [str(bad), "--workers", "1"], capture_output=True, text=True)
    assert err.returncode != 0 and len(err.stderr.strip().splitlines()) == 1 and "Traceback" not in err.stderr


@pytest.mark.parametrize("flags", [["-m", "official"], ["-c", "-q", "-m", "all_trec"], ["-q", "-M", "50", "-l", "2",
                                   "--trec-eval", "10", "-m", "map,ndcg_cut.10,num_rel_ret", "-m", "U"]])
def test_cli_trec_eval_layout_on_dask(workload, flags):
    "trec_eval's layout, sets and summaries (num_q, gm_map, -c, -M, -l, version 10) are the same computed on Dask."
    base = [IRINNOV, "evaluate", workload["qrels"], *workload["runs"], *flags]
    one = subprocess.run(base, capture_output=True, text=True)
    dask = subprocess.run(base + ["--workers", "2", "--shards", "3"], capture_output=True, text=True)
    assert one.returncode == 0 and dask.returncode == 0, dask.stderr
    assert dask.stdout == one.stdout and len(one.stdout.splitlines()) > 10


def test_cli_report_on_dask(workload, tmp_path):
    "`irinnov report --workers` writes the report whose power and agreement tables equal one process's."
    base = [IRINNOV, "report", workload["qrels"], *workload["runs"], "--permutations", "50", "--trials", "50"]
    one = subprocess.run(base + ["-o", str(tmp_path / "one")], capture_output=True, text=True)
    dask = subprocess.run(base + ["-o", str(tmp_path / "dask"), "--workers", "2"], capture_output=True, text=True)
    assert one.returncode == 0 and dask.returncode == 0, dask.stderr
    for name in ("power.csv", "agreement.csv"):
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "dask" / name).read_text(), name
    assert (tmp_path / "dask" / "report.html").exists()


def _mirror_has(name: str) -> bool:
    from irinnov import datasets
    return name in datasets.REGISTRY and bool(os.environ.get("IRINNOV_MIRROR") or (ROOT.parent / "shared" / "data").exists())


@pytest.mark.parametrize("name,runs_glob,qrels_glob,shards", [
    ("trec-covid-round1", "**/round1/runs/*", "**/round1/qrels/qrels-rnd1.txt", 5),
    ("trec-dl-2020-passage", "**/runs/trec-dl-2020/*.gz", "**/qrels.dl20-passage.txt", 6)])
def test_real_campaigns_in_shards(name, runs_glob, qrels_glob, shards, monkeypatch):
    "A real campaign read from its run files, split into shards on two workers: every family equals one process."
    from irinnov import datasets
    if not _mirror_has(name): pytest.skip(f"{name}: not registered or no data mirror")
    if not os.environ.get("IRINNOV_MIRROR"): monkeypatch.setenv("IRINNOV_MIRROR", str(ROOT.parent / "shared" / "data"))
    root = datasets.fetch(name, progress=False)
    runs = sorted(p for p in root.glob(runs_glob) if p.is_file())
    qrels = next(root.glob(qrels_glob))
    measures = ["AP", "nDCG@10", "RR(rel=2)", "bpref", "P@100_rareness(alpha=0.5)", "AP@100_rareness(alpha=1)", "U",
                "RPP", "ASL", "ASL@g1-10", "RIC"]
    ref = one_process(runs, qrels, measures)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with scale.dask_client(workers=2, memory_limit="3GB") as client:
            got = scale.evaluate_sharded(runs, qrels, measures, client=client, n_shards=shards)
    assert_same(ref, got)


def test_report_sharded_equals_campaign_report(workload, tmp_path):
    "The sharded campaign report: same ranks, agreement and power as one process (same seed), and write_report takes it."
    from irinnov.report import campaign_report, write_report
    kw = dict(k=20, B=200, trials=100, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = campaign_report(prepare(read_runs(workload["runs"]), read_qrels(workload["qrels"])), **kw)
        with scale.dask_client(workers=2, memory_limit="1GB") as client:
            rep = scale.campaign_report_sharded(workload["runs"], workload["qrels"], client=client, n_shards=4, **kw)
    assert rep.measures == one.measures
    assert rep.ranks.equals(one.ranks) and rep.agreement.equals(one.agreement) and rep.power.equals(one.power)
    np.testing.assert_allclose(rep.scores.to_numpy(), one.scores.to_numpy(), rtol=0, atol=1e-12)
    assert (rep.campaign.evaluated() == one.campaign.evaluated()).all() and rep.campaign.depth == one.campaign.depth
    path = write_report(rep, out_dir=tmp_path / "report", title="sharded")
    assert path.exists() and (tmp_path / "report" / "per_topic.csv").exists()


def test_many_qrels_topics(loopback, tmp_path):
    "10,000 qrels topics (MS MARCO's dev set has 6,980): the topic set reaches the read tasks (once per worker)."
    _, client = loopback
    d = write_workload(tmp_path / "many", systems=3, topics=10_000, depth=2, seed=5)
    ref = one_process(d["runs"], d["qrels"], ["AP", "RPP"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = scale.evaluate_sharded(d["runs"], d["qrels"], ["AP", "RPP"], client=client, n_shards=3)
        sr = scale.shard_runs(d["runs"], d["qrels"], client=client, n_shards=3)
    assert_same(ref, got)
    try: assert sr.depth == 2          # the read tasks saw the qrels topics (the depth is that of judged topics)
    finally: sr.remove()


def _coverage_runs(with_stranger: bool):
    "Three runs on 4 qrels topics: B lacks q3 and q4; with_stranger: C answers only a topic the qrels do not hold."
    import pandas as pd
    rows = []
    for s, topics in (("A", ["q1", "q2", "q3", "q4"]), ("B", ["q1", "q2"]), ("C", ["zz"] if with_stranger else ["q1", "q2", "q3", "q4"])):
        for q in topics:
            for r, d in enumerate(["d1", "d2", "d3"] if s != "C" else ["d3", "d2", "d1"]):
                rows.append((s, q, d, float(10 - r)))
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([(q, d, g) for q in ["q1", "q2", "q3", "q4"] for d, g in (("d1", 1), ("d2", 0), ("d3", 2))],
                         columns=["query", "doc", "grade"])
    return runs, qrels


def test_report_sharded_checks_coverage_as_one_process(tmp_path):
    "The Dask report refuses a run sharing no topic with the qrels and says how many topics a run lacks, as one process does."
    from irinnov.metrics import NoCommonTopicError, PartialTopicsWarning
    from irinnov.report import campaign_report, write_report
    kw = dict(measures=["AP", "P@2"], B=20, trials=10, seed=0)
    runs, qrels = _coverage_runs(True)
    with pytest.raises(NoCommonTopicError) as one:
        campaign_report(runs, qrels, **kw)
    with scale.dask_client(workers=1, memory_limit="1GB") as client:
        with pytest.raises(NoCommonTopicError) as sharded:
            scale.campaign_report_sharded(runs, qrels, client=client, n_shards=2, **kw)
        assert str(sharded.value) == str(one.value) and "'C' shares no topic" in str(sharded.value)
        runs, qrels = _coverage_runs(False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rep = scale.campaign_report_sharded(runs, qrels, client=client, n_shards=2, **kw)
    said = [str(w.message) for w in caught if issubclass(w.category, PartialTopicsWarning)]
    assert len(said) == 1 and "'B' lacks 2" in said[0]
    html = write_report(rep, out_dir=tmp_path / "r", title="t").read_text()
    assert "1 run returns nothing for some of the 4 evaluated topics (they score 0 there): B (2)" in html
