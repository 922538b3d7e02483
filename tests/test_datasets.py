"""Dataset fetching: checksums, atomic writes, mirrors, offline errors, NIST copies, and the real mirrored data.

Network tests run against a loopback HTTP server (127.0.0.1, random port) serving a fixture tree generated in a
temporary directory; nothing here touches the real network.
"""
import gzip
import hashlib
import http.server
import os
import threading
from pathlib import Path

import pandas as pd
import pytest

from irinnov import datasets as D
from irinnov.datasets import ChecksumError, DatasetInfo, FetchError, Source

REPO, COMMIT = "fixture-owner/fixture-repo", "0123456789abcdef0123456789abcdef01234567"


def _run_text(system_seed: int) -> bytes:
    lines = [f"{q} Q0 d{q}-{r}-{system_seed} {r} {100 - r}.5 tag{system_seed}" for q in (1, 2) for r in range(1, 11)]
    return ("\n".join(lines) + "\n").encode()


FILES = {
    "runs/alpha": _run_text(1),
    "runs/beta": _run_text(2),
    "qrels/qrels.txt": b"1 0 d1-1-1 1\n1 0 d1-2-2 2\n2 0 d2-3-1 0\n2 0 d2-1-2 1\n",
    "corrupt.txt": b"the pinned bytes\n" * 100,
    "big/truncated.txt": b"0123456789abcdef" * 50_000,   # 800 kB, served with a lying Content-Length
}
SERVED_CORRUPT = b"the served bytes differ\n" * 100
SUMS = {p: hashlib.sha256(b).hexdigest() for p, b in FILES.items()}


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass

    def do_GET(self):
        if self.path.endswith("/big/truncated.txt"):
            data = FILES["big/truncated.txt"]
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 3])   # then the server "dies": close mid-body
            self.wfile.flush()
            self.close_connection = True
            return
        return super().do_GET()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    www = tmp_path_factory.mktemp("www")
    for p, b in FILES.items():
        f = www / REPO / COMMIT / p
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(SERVED_CORRUPT if p == "corrupt.txt" else b)
    handler = lambda *a, **k: _Handler(*a, directory=str(www), **k)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def env(tmp_path, monkeypatch):
    "A private cache, no mirror, and fixture datasets registered (removed afterwards)."
    monkeypatch.setenv("IRINNOV_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("IRINNOV_MIRROR", raising=False)
    monkeypatch.delenv("IRINNOV_BASE_URL", raising=False)
    D.register_source(Source(REPO, COMMIT, dict(SUMS)))

    def parts(local):
        return {"runs": lambda: D.read_runs([local(REPO, "runs/alpha"), local(REPO, "runs/beta")]),
                "qrels": lambda: D.read_qrels(local(REPO, "qrels/qrels.txt")),
                "meta": lambda: pd.DataFrame({"system": ["alpha", "beta"]}).set_index("system")}
    names = {"fx-ok": ["runs/alpha", "runs/beta", "qrels/qrels.txt"], "fx-corrupt": ["runs/alpha", "corrupt.txt"],
             "fx-truncated": ["big/truncated.txt"]}
    for n, files in names.items():
        D.register(DatasetInfo(n, "fixture", [(REPO, p) for p in files], parts, source="loopback"))
    yield tmp_path / "cache"
    for n in names: D.unregister(n)
    D.SOURCES.pop(REPO, None)


def _leftovers(root: Path) -> list:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name.endswith(".part"))


def test_fetch_verify_and_load(server, env):
    root = D.fetch("fx-ok", base_url=server, progress=False)
    assert root == env / "fx-ok"
    for p in ["runs/alpha", "runs/beta", "qrels/qrels.txt"]:
        assert (root / REPO / p).read_bytes() == FILES[p]
    v = D.verify("fx-ok")
    assert v["ok"].all() and list(v["status"]) == ["ok"] * 3 and list(v["actual"]) == list(v["expected"])
    ds = D.load("fx-ok", base_url=server, progress=False)
    assert sorted(ds.runs.system.unique()) == ["alpha", "beta"] and len(ds.runs) == 40
    assert len(ds.qrels) == 4
    assert D.load("fx-ok") is ds                        # cached per process: no re-fetch, no re-parse
    assert ds.runs is ds.runs and ds.campaign() is ds.campaign()
    # the cache now serves the files even with the server unreachable
    again = D.load("fx-ok", base_url="http://127.0.0.1:9", progress=False, reload=True)
    assert again is not ds and len(again.runs) == 40


def test_verify_reports_and_fetch_repairs_corrupted_cache(server, env):
    root = D.fetch("fx-ok", base_url=server, progress=False)
    f = root / REPO / "runs/beta"
    f.write_bytes(b"tampered\n")
    v = D.verify("fx-ok").set_index("path")
    assert v.loc["runs/beta", "status"] == "MISMATCH" and not v.loc["runs/beta", "ok"]
    assert v.loc["runs/alpha", "status"] == "ok"
    f.unlink()
    assert D.verify("fx-ok").set_index("path").loc["runs/beta", "status"] == "missing"
    f.write_bytes(b"tampered\n")
    D.fetch("fx-ok", base_url=server, progress=False)   # a bad cached file is fetched again
    assert f.read_bytes() == FILES["runs/beta"]


def test_checksum_mismatch_removes_file_and_names_it(server, env):
    with pytest.raises(ChecksumError) as e:
        D.fetch("fx-corrupt", base_url=server, progress=False)
    msg = str(e.value)
    assert "corrupt.txt" in msg and SUMS["corrupt.txt"] in msg
    assert hashlib.sha256(SERVED_CORRUPT).hexdigest() in msg
    root = env / "fx-corrupt"
    assert not (root / REPO / "corrupt.txt").exists()
    assert (root / REPO / "runs/alpha").exists()        # files verified before the bad one are kept
    assert _leftovers(root) == []
    assert list(D.verify("fx-corrupt")["status"]) == ["ok", "missing"]


def test_interrupted_download_leaves_no_partial_file(server, env):
    with pytest.raises(FetchError) as e:
        D.fetch("fx-truncated", base_url=server, progress=False)
    assert "big/truncated.txt" in str(e.value) and "nothing was kept" in str(e.value)
    root = env / "fx-truncated"
    assert not (root / REPO / "big/truncated.txt").exists()
    assert _leftovers(root) == [] and [p for p in root.rglob("*") if p.is_file()] == []


def test_progress_bars(server, env, monkeypatch, capsys):
    "A bar per download and one for the dataset: shown on request (a terminal, or IRINNOV_PROGRESS=1), else silent."
    monkeypatch.setenv("IRINNOV_PROGRESS", "1")
    D.fetch("fx-ok", base_url=server, progress=True)
    err = capsys.readouterr().err
    assert "fetching fx-ok:" in err and "/3 [" in err                   # the dataset bar: 3 files
    for name, size in (("alpha", 484), ("beta", 484), ("qrels.txt", len(FILES["qrels/qrels.txt"]))):
        assert f"{name}:" in err and f"/{size}" in err                   # one bar per download, in bytes
    D.fetch("fx-ok", base_url=server, progress=False, path=env / "again")
    assert capsys.readouterr().err == ""                                 # progress=False: nothing
    monkeypatch.setenv("IRINNOV_PROGRESS", "0")
    D.fetch("fx-ok", base_url=server, progress=True, path=env / "third")
    assert capsys.readouterr().err == ""                                 # forced off


def test_offline_without_mirror_says_how_to_use_one(env):
    with pytest.raises(FetchError) as e:
        D.fetch("fx-ok", base_url="http://127.0.0.1:9", progress=False)
    msg = str(e.value)
    assert "IRINNOV_MIRROR" in msg and "mirror=" in msg and "runs/alpha" in msg
    assert _leftovers(env) == []


def test_base_url_from_environment(server, env, monkeypatch):
    monkeypatch.setenv("IRINNOV_BASE_URL", server)
    assert D.verify(D.fetch("fx-ok", progress=False).name)["ok"].all()


def test_mirror_plain_and_gz(env, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    base = mirror / "github" / REPO
    (base / "runs").mkdir(parents=True)
    (base / "qrels").mkdir()
    (base / "runs/alpha.gz").write_bytes(gzip.compress(FILES["runs/alpha"]))     # only the .gz copy
    (base / "runs/beta").write_bytes(FILES["runs/beta"])                        # a plain copy
    (base / "qrels/qrels.txt.gz").write_bytes(gzip.compress(FILES["qrels/qrels.txt"]))
    root = D.fetch("fx-ok", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
    assert (root / REPO / "runs/alpha").read_bytes() == FILES["runs/alpha"]    # decompressed, then checked
    assert D.verify("fx-ok")["ok"].all()
    # the environment variable works the same way
    monkeypatch.setenv("IRINNOV_MIRROR", str(mirror))
    ds = D.load("fx-ok", path=tmp_path / "other-cache", base_url="http://127.0.0.1:9", progress=False)
    assert len(ds.runs) == 40 and (tmp_path / "other-cache" / REPO / "qrels/qrels.txt").is_file()


def test_mirror_corrupted_gz_and_missing_file(env, tmp_path):
    mirror = tmp_path / "mirror"
    base = mirror / "github" / REPO / "runs"
    base.mkdir(parents=True)
    (base / "alpha.gz").write_bytes(gzip.compress(b"not the run\n"))
    with pytest.raises(ChecksumError) as e:
        D.fetch("fx-ok", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
    assert "runs/alpha" in str(e.value) and SUMS["runs/alpha"] in str(e.value)
    assert not (env / "fx-ok" / REPO / "runs/alpha").exists() and _leftovers(env) == []
    (base / "alpha.gz").write_bytes(gzip.compress(FILES["runs/alpha"])[:-20])   # a truncated gzip stream
    with pytest.raises(FetchError, match="runs/alpha: cannot read the mirror file alpha.gz"):
        D.fetch("fx-ok", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
    assert not (env / "fx-ok" / REPO / "runs/alpha").exists() and _leftovers(env) == []
    (base / "alpha.gz").write_bytes(gzip.compress(FILES["runs/alpha"]))
    with pytest.raises(FetchError) as e:                 # beta is in neither the mirror nor reachable
        D.fetch("fx-ok", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
    assert "runs/beta" in str(e.value) and "mirror" in str(e.value)


def test_registry_errors_and_available():
    with pytest.raises(ValueError, match="name: unknown dataset 'nope'"):
        D.load("nope")
    with pytest.raises(ValueError, match="NIST"):
        D.fetch("trec8")
    av = D.available()
    assert list(av.columns) == ["name", "description", "source", "files"]
    assert {"trec-covid-round1", "web2012", "trec8", "trec5"} <= set(av.name)
    assert av.set_index("name").loc["trec-covid-round1", "files"] == 145
    with pytest.raises(ValueError, match="line 1"):
        D.parse_sums("not a sum line")


# ---------------------------------------------------------------- NIST collections (synthetic trees)

def _nist_tree(root: Path, tags, qrels_name="qrels.trec8.adhoc", extra=()) -> Path:
    (root / "runs").mkdir(parents=True)
    for i, t in enumerate(list(tags) + list(extra)):
        lines = [f"{q} Q0 D{q}-{i}-{r} {r} {10 - r} {t}" for q in (401, 402) for r in range(1, 4)]
        (root / "runs" / f"input.{t}.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    (root / qrels_name).write_text("401 0 D401-0-1 1\n401 0 D401-1-1 0\n402 0 D402-2-2 1\n")
    return root


TREC8 = list(D.parse_run_list(D.TREC8_ADHOC_RUNS))
TREC5 = list(D.parse_run_list(D.TREC5_ADHOC_RUNS))


def test_official_run_lists():
    assert len(TREC8) == len(set(TREC8)) == 129
    assert len(TREC5) == len(set(TREC5)) == 61
    assert not set(TREC5) & set(D.TREC5_CATEGORY_B_RUNS) and len(D.TREC5_CATEGORY_B_RUNS) == 19
    for t in ["ok8amxc", "INQ603", "READWARE", "8manexT3D1N0", "1", "weaver2", "Sab8A4"]: assert t in TREC8
    for t in ["ETHme1", "INQ301", "Cor5A1se", "city96a1", "genrl4", "vtwnB1"]: assert t in TREC5


def test_nist_complete_tree(tmp_path, monkeypatch):
    monkeypatch.delenv("IRINNOV_NIST", raising=False)
    d = _nist_tree(tmp_path / "t8", TREC8)
    (d / "runs_table.adhoc").write_text("ok8amxc:microsoft:x:adhoc:y:z:adhoc\n")
    (d / "runs-list").write_text("input.ok8amxc\ninput.INQ603\n")
    ds = D.load("trec8", path=d, progress=False)
    assert ds.runs.system.nunique() == 129 and len(ds.runs) == 129 * 6 and ds.missing == []
    assert len(ds.qrels) == 3
    m = ds.meta
    assert len(m) == 129 and m.loc["ok8amxc", "group"] == "microsoft" and m["present"].all()
    assert m["pooled"].sum() == 2 and m.loc["ok8amxc", "runs_table_track"] == "adhoc"
    assert not any(tmp_path.rglob("*.part")) and D.load("trec8", path=d) is ds


def test_nist_missing_and_extra_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("IRINNOV_NIST", raising=False)
    gone = ["ok8amxc", "INQ603", "weaver2"]
    d = _nist_tree(tmp_path / "t8", [t for t in TREC8 if t not in gone], qrels_name="qrels.401-450.txt",
                   extra=["notarun"])
    with pytest.raises(FileNotFoundError) as e:
        D.load("trec8", path=d)
    msg = str(e.value)
    assert "3 of the 129" in msg and all(t in msg for t in gone) and "strict=False" in msg
    with pytest.warns(UserWarning) as w:
        ds = D.load("trec8", path=d, strict=False)
    text = " ".join(str(x.message) for x in w)
    assert "notarun" in text and "ok8amxc" in text
    assert ds.missing == [t for t in TREC8 if t in gone] and ds.runs.system.nunique() == 126
    assert "notarun" not in set(ds.runs.system) and (~ds.meta["present"]).sum() == 3


def test_nist_trec5_and_qrels_rules(tmp_path, monkeypatch):
    monkeypatch.delenv("IRINNOV_NIST", raising=False)
    d = _nist_tree(tmp_path / "t5", TREC5, qrels_name="qrels.251-300.parts1-5")
    ds = D.load("trec5", path=d)
    assert ds.runs.system.nunique() == 61 and ds.meta.loc["ETHme1", "group"] == "ETH"
    (d / "qrels.other").write_text("251 0 x 1\n")         # two unrelated qrels: the collection's name wins
    assert len(D.load("trec5", path=d, reload=True).qrels) == 3
    (d / "qrels.251-300.parts1-5").unlink()
    (d / "qrels.more").write_text("251 0 x 1\n")
    with pytest.raises(ValueError, match="several qrels"):
        D.load("trec5", path=d, reload=True)
    for f in d.glob("qrels*"): f.unlink()
    with pytest.raises(FileNotFoundError, match="no qrels"):
        D.load("trec5", path=d, reload=True)
    monkeypatch.setenv("IRINNOV_NIST", str(tmp_path))    # $IRINNOV_NIST/trec5 is found without path=
    (tmp_path / "trec5").mkdir()
    with pytest.raises(FileNotFoundError, match="has no runs/ directory"):
        D.load("trec5")


@pytest.mark.parametrize("name", ["trec8", "trec5"])
def test_nist_without_data_explains(name, tmp_path, monkeypatch):
    monkeypatch.delenv("IRINNOV_NIST", raising=False)
    for path in [None, tmp_path / "nothing-here"]:
        with pytest.raises(FileNotFoundError) as e:
            D.load(name, path=path)
        msg = str(e.value)
        assert "NIST" in msg and "path=" in msg and "runs/input.<tag>.gz" in msg


# ---------------------------------------------------------------- the real mirror (skipped without it)

MIRROR = os.environ.get("IRINNOV_MIRROR")
needs_mirror = pytest.mark.skipif(not MIRROR or not Path(MIRROR, "github").is_dir(), reason="IRINNOV_MIRROR not set")


@needs_mirror
def test_embedded_sums_match_the_mirror():
    for repo in ["castorini/TREC-COVID", "trec-web/trec-web-2014", "zuacubd/trec-web-track-2009-2014"]:
        base = Path(MIRROR, "github", repo)
        commit = (base / "SOURCE").read_text().split()[1]
        sums = D.parse_sums((base / "SHA256SUMS").read_text())
        assert D.SOURCES[repo].commit == commit
        used = {p for r, p in D.REGISTRY["trec-covid-round1"].files + D.REGISTRY["web2012"].files if r == repo}
        assert used and {p: sums[p] for p in used} == {p: D.SOURCES[repo].sums[p] for p in used}


@needs_mirror
def test_trec_covid_round1_from_mirror():
    ds = D.load("trec-covid-round1", progress=False)
    assert ds.runs.system.nunique() == 143
    assert ds.qrels["query"].nunique() == 30 and len(ds.qrels) == 8691
    assert len(ds.meta) == 143 and set(ds.meta.index) == set(ds.runs.system)
    assert {"team", "runtype", "ndcg@10", "p@5", "RBP(p=.5)", "bpref", "MAP"} <= set(ds.meta.columns)
    assert set(ds.meta.runtype) == {"automatic", "manual"}      # round 1 had no feedback runs
    assert sorted(ds.qrels.grade.unique()) == [0, 1, 2]


@needs_mirror
def test_web2012_from_mirror():
    ds = D.load("web2012", progress=False)
    assert sorted(ds.runs.system.unique()) == sorted(
        f"{m}-cat{c}{f}" for m in ("ql", "rm") for c in "ab" for f in ("", "-filtered"))
    assert ds.runs["query"].nunique() == 50 and ds.qrels["query"].nunique() == 50
    assert sorted(ds.qrels.grade.unique()) == [-2, 0, 1, 2, 3, 4]
    assert "subtopic" in ds.diversity_qrels.columns
    assert len(ds.topics) == 50 and ds.topics.loc[0, "title"] == "403b"
    assert ds.topics.subtopics.sum() == len(ds.subtopics)
