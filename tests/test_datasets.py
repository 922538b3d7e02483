"""Dataset fetching: checksums, atomic writes, mirrors, offline errors, NIST copies, and the real mirrored data.

Network tests run against a loopback HTTP server (127.0.0.1, random port) serving a fixture tree generated in a
temporary directory; nothing here touches the real network (but the wheel build, which fetches a build backend from
the package index when the environment has no setuptools).
"""
import gzip
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irinnov import datasets as D
from irinnov.datasets import ChecksumError, DatasetInfo, FetchError, Source
from loopback import QuietHandler, serve

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


class _Handler(QuietHandler):

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
    with serve(www, _Handler) as url: yield url


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


def test_a_file_found_right_is_hashed_again_only_once_changed(server, env, monkeypatch):
    hashed, cached_sum = [], D._cached_sum
    monkeypatch.setattr(D, "_cached_sum", lambda path, packed: hashed.append(Path(path).name) or cached_sum(path, packed))
    root = D.fetch("fx-ok", base_url=server, progress=False)
    D.fetch("fx-ok", base_url=server, progress=False)
    # written a moment ago (within the clock's granularity a rewrite could show the same times): hashed each time
    assert sorted(hashed) == ["alpha", "beta", "qrels.txt"] and not (root / D._STAMPS).exists()
    monkeypatch.setattr(D, "_SETTLED", 0.0)       # as if they had been written long ago
    hashed.clear()
    D.fetch("fx-ok", base_url=server, progress=False)
    assert sorted(hashed) == ["alpha", "beta", "qrels.txt"] and (root / D._STAMPS).is_file()
    hashed.clear()
    D.fetch("fx-ok", base_url=server, progress=False)
    assert hashed == []                           # unchanged since found right: not hashed
    f = root / REPO / "runs/beta"
    f.write_bytes(b"tampered\n")
    D.fetch("fx-ok", base_url=server, progress=False)
    assert hashed == ["beta"] and f.read_bytes() == FILES["runs/beta"]     # changed: hashed, found wrong, fetched again
    assert list(D.verify("fx-ok")["status"]) == ["ok"] * 3                 # (verify hashes every file, always)


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


# ---------------------------------------------------------------- the packaged manifests (irinnov/data/sources)

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = ["trec-covid-round1", "trec-covid-round2", "trec-covid-round3", "trec-covid-round4", "trec-covid-round5",
           "web2012", "trec-dl-2020-passage", "trec-dl-2019-passage"]


def _manifests() -> dict:
    "{repo: (file name, text)} of the manifests shipped in the package, read through importlib.resources."
    from importlib.resources import files
    out = {}
    for f in (files("irinnov") / "data" / "sources").iterdir():
        if f.name.endswith(".tsv"):
            src = D.read_manifest(f.read_text(encoding="utf-8"), f.name)
            out[src.repo] = (f.name, f.read_text(encoding="utf-8"), src)
    return out


def test_registry_sums_come_from_the_packaged_manifests():
    """Every file of every built-in dataset has its sha256 (and its repository its commit) from the package's manifests;
    each manifest is named after its repository and reads back to its own text."""
    man = _manifests()
    assert set(man) == set(D._PINNED) and len(man) == 6
    for repo, (name, text, src) in man.items():
        assert name == repo.replace("/", "__") + ".tsv" and D.manifest_text(src) == text, name
        s = D.SOURCES[repo]
        assert s is D._PACKAGED[repo]
        assert (s.repo, s.commit, list(s.sums.items()), s.fetch_only) == \
               (src.repo, src.commit, list(src.sums.items()), src.fetch_only), repo
    files = 0
    for name in BUILTIN:
        info = D.REGISTRY[name]
        assert info.files and info.source == "; ".join(f"github.com/{r}@{man[r][2].commit[:7]}"
                                                       for r in dict.fromkeys(r for r, _ in info.files)), name
        for repo, p in info.files:
            assert D.SOURCES[repo].sums[p] == man[repo][2].sums[p], (name, repo, p)
        files += len(info.files)
    assert files == 145 + 138 + 81 + 74 + 128 + 11 + 62 + 40
    assert sum(len(src.sums) for *_, src in man.values()) == 685
    assert sum(len(src.fetch_only) for *_, src in man.values()) == 413 + 37


def test_import_reads_no_manifest():
    "Importing irinnov.datasets reads no manifest; a dataset's files read only the manifests of their repositories."
    code = """if True:
        import irinnov.datasets as D
        loaded = lambda: sorted(r for r, s in D.SOURCES.items() if {"commit", "sums", "fetch_only"} & set(vars(s)))
        assert loaded() == [], loaded()
        assert [n for n, i in D.REGISTRY.items() if {"files", "source"} & set(vars(i))] == ["trec8", "trec5"]
        assert len(D.REGISTRY["web2012"].files) == 11
        assert loaded() == ["trec-web/trec-web-2014"], loaded()
        assert D.REGISTRY["web2012"].source.endswith("trec-web-track-2009-2014@c341048")
        assert loaded() == ["trec-web/trec-web-2014", "zuacubd/trec-web-track-2009-2014"], loaded()
        assert D.SOURCES["castorini/TREC-COVID"].commit.startswith("be3ed3f")
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def _builds_without_isolation() -> bool:
    "setuptools (and, before 70.1, wheel) here: pip can build the wheel without fetching a build backend."
    from importlib.metadata import PackageNotFoundError, version
    try: v = tuple(int(x) for x in version("setuptools").split(".")[:2])
    except PackageNotFoundError: return False
    return v >= (70, 1) or importlib.util.find_spec("wheel") is not None


def test_wheel_ships_the_manifests(tmp_path):
    """A non-editable wheel (`pip wheel --no-deps`) carries every manifest, byte for byte, and irinnov.datasets imported
    from that wheel, outside the repository, reads its sums there (from the zip itself: only importlib.resources can)."""
    src = tmp_path / "src"
    src.mkdir()
    for f in ("setup.py", "settings.ini", "README.md"): shutil.copy(ROOT / f, src / f)
    shutil.copytree(ROOT / "irinnov", src / "irinnov", ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(src)]
    r = subprocess.run(cmd + (["--no-build-isolation"] if _builds_without_isolation() else []),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    wheel, = (tmp_path / "dist").glob("irinnov-*.whl")
    with zipfile.ZipFile(wheel) as z:
        shipped = {n: z.read(n) for n in z.namelist() if n.startswith("irinnov/data/")}
    ours = {f"irinnov/data/sources/{f.name}": f.read_bytes() for f in (ROOT / "irinnov" / "data" / "sources").iterdir()}
    assert len(ours) == 6 and shipped == ours
    (tmp_path / "elsewhere").mkdir()
    code = f"""if True:
        import irinnov.datasets as D
        assert D.__file__.startswith({str(wheel)!r}), D.__file__
        assert len(D.REGISTRY["trec-covid-round1"].files) == 145
        assert sum(len(s.sums) for s in D.SOURCES.values()) == 685
        assert D.verify("web2012", path={str(tmp_path / "nothing")!r}).status.eq("missing").all()
    """
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "elsewhere",
                       env={**os.environ, "PYTHONPATH": str(wheel)}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


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
def test_packaged_sums_match_the_mirror():
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


# ---- gzip sources, fetch-only files, and the leaderboards of the TREC DL and TREC-COVID datasets -------------------

import tempfile

ORACLES = Path(__file__).resolve().parents[1] / ".." / "shared" / "oracles"


@pytest.fixture(scope="module")
def trec_eval(tmp_path_factory):
    "trec_eval 9.0.8 (the version NIST's summaries came from), built in a temporary folder."
    src = ORACLES / "trec_eval-9.0.8"
    if not src.is_dir(): pytest.skip("no ../shared/oracles/trec_eval-9.0.8 (a user's clone has no oracles)")
    if not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))): pytest.skip("no C compiler or make")
    d = tmp_path_factory.mktemp("te") / "te9"
    shutil.copytree(src, d)
    subprocess.run(["make", "-s", "-C", str(d)], check=True, capture_output=True)
    return d / "trec_eval"


def _te(binary, qrels, run, *args) -> dict:
    "{measure: value as trec_eval prints it (4 decimals)} from a summary."
    out = subprocess.run([str(binary), *args, str(qrels), str(run)], check=True, capture_output=True, text=True).stdout
    return {f[0]: f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3 and f[1] == "all"}


def _serve(tree: dict):
    "A loopback server for {url path: bytes}; returns (base url, stop)."
    www = Path(tempfile.mkdtemp())
    for p, b in tree.items():
        (www / p).parent.mkdir(parents=True, exist_ok=True)
        (www / p).write_bytes(b)
    server = serve(www, _Handler)
    url = server.__enter__()
    def stop():
        server.__exit__(None, None, None); shutil.rmtree(www, ignore_errors=True)
    return url, stop


def _random_run(rng, tag, queries, docs_per_query=30, depth=20):
    lines = []
    for q in queries:
        docs = rng.choice(docs_per_query, size=depth, replace=False)
        scores = np.round(rng.random(depth) * 10, 3)
        lines += [f"{q} Q0 p{q}-{d} {r} {s} {tag}" for r, (d, s) in enumerate(zip(docs, scores), 1)]
    return ("\n".join(lines) + "\n").encode()


def _random_qrels(rng, queries, docs_per_query=30, grades=(0, 1, 2, 3), n=15):
    lines = []
    for q in queries:
        for d in rng.choice(docs_per_query, size=n, replace=False):
            lines.append(f"{q} 0 p{q}-{d} {rng.choice(grades)}")
    return ("\n".join(lines) + "\n").encode()


def test_mirror_copies_a_gz_source_as_is(env, tmp_path):
    "A file whose public path is itself .gz is pinned by the sum of its gzip bytes and copied without decompressing."
    packed = gzip.compress(FILES["runs/alpha"])
    D.register_source(Source(REPO, COMMIT, {**SUMS, "runs/gamma.gz": hashlib.sha256(packed).hexdigest()}))
    D.register(DatasetInfo("fx-gz", "fixture", [(REPO, "runs/gamma.gz")],
                           lambda local: {"runs": lambda: D.read_runs([local(REPO, "runs/gamma.gz")])}))
    try:
        mirror = tmp_path / "mirror"
        (mirror / "github" / REPO / "runs").mkdir(parents=True)
        (mirror / "github" / REPO / "runs" / "gamma.gz").write_bytes(packed)
        root = D.fetch("fx-gz", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
        assert (root / REPO / "runs/gamma.gz").read_bytes() == packed          # kept compressed in the cache
        ds = D.load("fx-gz", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
        assert len(ds.runs) == 20 and set(ds.runs.system) == {"gamma"}
    finally:
        D.unregister("fx-gz")


def test_fetch_only_file_offline_says_so(env):
    only = {"runs/delta": hashlib.sha256(b"x\n").hexdigest()}
    D.register_source(Source(REPO, COMMIT, {**SUMS, **only}, frozenset(only)))
    D.register(DatasetInfo("fx-only", "fixture", [(REPO, "runs/delta")], lambda local: {}))
    try:
        with pytest.raises(FetchError) as e:
            D.fetch("fx-only", base_url="http://127.0.0.1:9", progress=False)
        msg = str(e.value)
        assert msg.startswith(f"{REPO}/runs/delta: cannot download") and "fetch-only" in msg and "IRINNOV_MIRROR" in msg
        assert _leftovers(env) == []
    finally:
        D.unregister("fx-only")


def test_trec_browser_parsers_name_file_and_line(tmp_path):
    f = tmp_path / "results.md"
    f.write_text('#### r1\n??? example "summary (trec_eval)"\n\t```\n\tmap\t\tall\t0.25\n\tP_10 all\n\t```\n---\n')
    with pytest.raises(ValueError, match=r"results.md:5: expected '<measure> all <value>'"):
        D.read_trec_browser_results(f)
    f.write_text('#### r1\n??? example "summary (trec_eval)"\n\t```\n\tmap\t\tall\t0.25\n\t```\n---\n#### r1\n')
    with pytest.raises(ValueError, match=r"results.md:7: run 'r1' listed twice"):
        D.read_trec_browser_results(f)
    g = tmp_path / "runs.md"
    g.write_text("- :x: **Participant:** team\n")
    with pytest.raises(ValueError, match=r"runs.md:1: a field before the first"):
        D.read_trec_browser_runs(g)


def _results_md(blocks: dict) -> bytes:
    "A TREC browser results.md: {run: {summary: {measure: value string}}}."
    out = []
    for run, summaries in blocks.items():
        out.append(f"#### {run} \n[**`Metadata`**](./runs.md#{run})")
        for s, vals in summaries.items():
            out += [f'??? example "summary ({s})"', "\t```"] + [f"\t{m}\t\tall\t{v}" for m, v in vals.items()] + ["", "\t```"]
        out.append("---")
    return ("\n".join(out) + "\n").encode()


def _runs_md(tags, year) -> bytes:
    return "".join(f"#### {t} \n\n- :material-rename: **Run ID:** {t} \n- :fontawesome-solid-user-group: **Participant:** "
                   f"team{i % 2} \n- :material-format-text: **Track:** Deep Learning \n- :material-calendar: **Year:** {year} \n"
                   f"- :fontawesome-solid-user-gear: **Type:** auto \n- :material-text-search: **Task:** passages \n"
                   f"- :material-text: **Run description:** run {t} \n\n---\n" for i, t in enumerate(tags)).encode()


DL_MEASURES = ["map", "bpref", "recip_rank", "P.10,100,1000", "recall.10,100,1000", "ndcg", "ndcg_cut.10,100,1000"]


def test_dl2019_leaderboard_code_path_through_loopback(env, trec_eval, tmp_path, monkeypatch):
    """A synthetic DL 2019 stand-in (3 gzip runs, graded qrels, runs.md, results.md) served over loopback and loaded by the
    real `trec-dl-2019-passage` code; its leaderboard is trec_eval's own output (-l 1 and -l 2), reproduced exactly."""
    rng = np.random.default_rng(7)
    queries, tags = ["101", "102", "103", "104"], ["runA", "run-B", "runC"]
    qrels = _random_qrels(rng, queries)
    runs = {t: _random_run(rng, t, queries) for t in tags}
    (tmp_path / "qrels").write_bytes(qrels)
    board = {}
    for t in tags:
        (tmp_path / t).write_bytes(runs[t])
        m = ([a for x in DL_MEASURES for a in ("-m", x)])
        board[t] = {"passages-eval": _te(trec_eval, tmp_path / "qrels", tmp_path / t, "-l", "2", *m),
                    "trec_eval": _te(trec_eval, tmp_path / "qrels", tmp_path / t, *m)}
    files = {f"runs/trec-dl-2019/dl-19-official-input.{t}.gz": gzip.compress(runs[t]) for t in tags}
    docs = {"browser/src/docs/trec28/deep/runs.md": _runs_md(tags, 2019),
            "browser/src/docs/trec28/deep/results.md": _results_md(board)}
    commit = "f" * 40
    tree = {f"{D._DLRUNS}/{commit}/{p}": b for p, b in files.items()}
    tree[f"{D._ANSERINI}/{commit}/qrels/qrels.dl19-passage.txt"] = qrels
    tree |= {f"{D._BROWSER}/{commit}/{p}": b for p, b in docs.items()}
    sha = lambda b: hashlib.sha256(b).hexdigest()
    monkeypatch.setitem(D.SOURCES, D._DLRUNS, Source(D._DLRUNS, commit, {p: sha(b) for p, b in files.items()},
                                                     frozenset(files)))
    monkeypatch.setitem(D.SOURCES, D._ANSERINI, Source(D._ANSERINI, commit, {"qrels/qrels.dl19-passage.txt": sha(qrels)}))
    monkeypatch.setitem(D.SOURCES, D._BROWSER, Source(D._BROWSER, commit, {p: sha(b) for p, b in docs.items()}))
    real = D.REGISTRY["trec-dl-2019-passage"]
    D.register(DatasetInfo(real.name, real.description, D._dl_files(2019), real.build, source="loopback",
                           threshold=real.threshold, official=real.official))
    base, stop = _serve(tree)
    try:
        ds = D.load("trec-dl-2019-passage", base_url=base, progress=False)
        assert ds.threshold == 2 and sorted(ds.runs.system.unique()) == sorted(tags)
        assert set(ds.meta.team) == {"team0", "team1"} and set(ds.meta.task) == {"passages"}
        rep = D.reproduce_leaderboard(ds)
        assert len(rep) == 3 * 26                              # 13 measures in each of the two summaries
        assert rep.match.all(), rep[~rep.match]
        # the -l 1 and -l 2 blocks differ, so the check can tell the two thresholds apart
        b = ds.leaderboard
        assert (b[("trec_eval", "map")] != b[("passages-eval", "map")]).any()
    finally:
        stop()
        D.register(real)


def test_covid_round_leaderboard_code_path_through_loopback(env, trec_eval, tmp_path, monkeypatch):
    """A synthetic TREC-COVID round stand-in (round 2's leaderboard spelling: `tag`, `type`) over loopback, loaded by
    the real `trec-covid-round2` code; its leaderboard is `trec_eval -c -M1000` output, reproduced exactly."""
    rng = np.random.default_rng(11)
    queries, tags = ["1", "2", "3", "4", "5"], ["r2a", "r2b"]
    qrels = _random_qrels(rng, ["1", "2", "3", "5"], grades=(0, 1, 2))      # topic 4 unjudged
    qrels += b"3 0 p3-extra 0\n"
    runs = {t: _random_run(rng, t, queries) for t in tags}
    (tmp_path / "qrels").write_bytes(qrels)
    rows = ["tag,team,report,type,contributed judgments,topicformat,NDCG@10,P@5,RBP(p=.5),bpref,MAP"]
    for t in tags:
        (tmp_path / t).write_bytes(runs[t])
        v = _te(trec_eval, tmp_path / "qrels", tmp_path / t, "-c", "-M1000", "-m", "ndcg_cut.10", "-m", "P.5",
                "-m", "bpref", "-m", "map")
        rows.append(f"{t},team,reports/{t}.pdf,automatic,no,,{v['ndcg_cut_10']},{v['P_5']},0.5,{v['bpref']},{v['map']}")
    board = ("\n".join(rows) + "\n").encode()
    commit = "e" * 40
    runfiles = {f"round2/runs/{t}": runs[t] for t in tags}
    sha = lambda b: hashlib.sha256(b).hexdigest()
    monkeypatch.setitem(D.SOURCES, D._COVID, Source(D._COVID, commit, {**{p: sha(b) for p, b in runfiles.items()},
                                                                       "round2/leaderboard.csv": sha(board)}, frozenset(runfiles)))
    monkeypatch.setitem(D.SOURCES, D._ANSERINI, Source(D._ANSERINI, commit, {"qrels/qrels.covid-round2.txt": sha(qrels)}))
    tree = {f"{D._COVID}/{commit}/{p}": b for p, b in runfiles.items()}
    tree[f"{D._COVID}/{commit}/round2/leaderboard.csv"] = board
    tree[f"{D._ANSERINI}/{commit}/qrels/qrels.covid-round2.txt"] = qrels
    real = D.REGISTRY["trec-covid-round2"]
    D.register(DatasetInfo(real.name, real.description,
                           [(D._COVID, p) for p in runfiles] + [(D._COVID, "round2/leaderboard.csv"),
                                                                 (D._ANSERINI, "qrels/qrels.covid-round2.txt")],
                           real.build, source="loopback", official=real.official))
    base, stop = _serve(tree)
    try:
        ds = D.load("trec-covid-round2", base_url=base, progress=False)
        assert ds.threshold == 1 and list(ds.meta.runtype) == ["automatic"] * 2
        rep = D.reproduce_leaderboard(ds)
        assert len(rep) == 2 * 4 and rep.match.all(), rep[~rep.match]
    finally:
        stop()
        D.register(real)


@needs_mirror
def test_packaged_sums_of_every_dataset_match_the_mirror():
    "Every pinned file of every registered dataset: the packaged sum is the mirror's (SHA256SUMS or .fetch-only)."
    for repo, src in D.SOURCES.items():
        base = Path(MIRROR, "github", repo)
        if not base.is_dir(): continue
        assert src.commit == (base / "SOURCE").read_text().split()[1], repo
        sums = D.parse_sums((base / "SHA256SUMS").read_text())
        only = D.parse_sums((base / "SHA256SUMS.fetch-only").read_text()) if (base / "SHA256SUMS.fetch-only").is_file() else {}
        assert {p: {**sums, **only}[p] for p in src.sums} == src.sums, repo
        assert set(src.fetch_only) == set(only), repo
    for info in D.REGISTRY.values():
        for repo, p in info.files:
            assert p in D.SOURCES[repo].sums, (info.name, repo, p)
    assert len(D.REGISTRY["trec-dl-2020-passage"].files) == 59 + 3
    assert [len(D.REGISTRY[f"trec-covid-round{n}"].files) - 2 for n in (2, 3, 4, 5)] == [136, 79, 72, 126]
    assert len(D.REGISTRY["trec-dl-2019-passage"].files) == 37 + 3


@needs_mirror
def test_dl2020_passage_from_mirror_and_nist_leaderboard():
    "All 59 official runs; NIST's published trec_eval and passages-eval summaries reproduced to 4 decimals, every value."
    ds = D.load("trec-dl-2020-passage", progress=False)
    assert ds.threshold == 2
    assert ds.runs.system.nunique() == 59 and ds.runs["query"].nunique() == 200
    q = ds.qrels
    assert q["query"].nunique() == 54 and sorted(q.grade.unique()) == [0, 1, 2, 3]
    assert (q.groupby("query").grade.max() >= 2).all()              # every judged question has a grade >= 2 passage
    assert round((q.grade >= 1).sum() / 54, 2) == 66.78             # the RPP paper's Table 1: relevant per request
    assert set(ds.meta.index) == set(ds.runs.system) == set(ds.leaderboard.index)
    assert ds.meta.loc["p_bm25", "team"] == "anserini" and ds.meta.loc["p_bm25", "type"] == "auto"
    assert ds.leaderboard.loc["p_bm25", ("trec_eval", "map")] == 0.2856
    rep = D.reproduce_leaderboard(ds)
    assert len(rep) == 59 * 16
    bad = rep[~rep.match]
    assert bad.empty, bad


@needs_mirror
def test_trec_covid_round1_leaderboard_through_reproduce_leaderboard():
    ds = D.load("trec-covid-round1", progress=False)
    rep = D.reproduce_leaderboard(ds)
    assert len(rep) == 143 * 5 and rep.match.all(), rep[~rep.match]


def _packed_dataset():
    parts = lambda local: {"runs": lambda: D.read_runs([local(REPO, "runs/alpha"), local(REPO, "runs/beta")]),
                           "qrels": lambda: D.read_qrels(local(REPO, "qrels/qrels.txt"))}
    D.register(DatasetInfo("fx-packed", "fixture", [(REPO, "runs/alpha"), (REPO, "runs/beta"), (REPO, "qrels/qrels.txt")],
                           parts, source="loopback", packed=("runs/",)))


def _is_gz(f: Path) -> bool:
    return f.read_bytes()[:2] == b"\x1f\x8b"


def test_packed_runs_stay_gzip_compressed_in_the_cache(server, env):
    "Downloaded run files are cached gzip-compressed (sum of the plain bytes); other files plain; verify and load work."
    _packed_dataset()
    try:
        root = D.fetch("fx-packed", base_url=server, progress=False)
        for p in ["runs/alpha", "runs/beta"]:
            f = root / REPO / p
            assert _is_gz(f) and gzip.decompress(f.read_bytes()) == FILES[p]
        assert (root / REPO / "qrels/qrels.txt").read_bytes() == FILES["qrels/qrels.txt"]
        v = D.verify("fx-packed")
        assert v.ok.all() and list(v.actual) == [SUMS[p] for p in v.path]
        ds = D.load("fx-packed", base_url="http://127.0.0.1:9", progress=False)    # from the cache only
        assert len(ds.runs) == 40 and sorted(ds.runs.system.unique()) == ["alpha", "beta"]
        # a packed cache entry whose content is wrong is reported and fetched again
        (root / REPO / "runs/beta").write_bytes(gzip.compress(b"1 Q0 x 1 1 t\n"))
        v = D.verify("fx-packed")
        assert list(v.status) == ["ok", "MISMATCH", "ok"]
        (root / REPO / "runs/alpha").write_bytes(b"\x1f\x8b not a gzip stream")     # a corrupt gzip entry
        assert list(D.verify("fx-packed").status) == ["MISMATCH", "MISMATCH", "ok"]
        D.fetch("fx-packed", base_url=server, progress=False)
        assert D.verify("fx-packed").ok.all() and _is_gz(root / REPO / "runs/beta")
        # a plain copy (an older cache) is accepted as it is: no network needed
        (root / REPO / "runs/alpha").write_bytes(FILES["runs/alpha"])
        assert D.fetch("fx-packed", base_url="http://127.0.0.1:9", progress=False) == root
        assert (root / REPO / "runs/alpha").read_bytes() == FILES["runs/alpha"] and _leftovers(env) == []
    finally:
        D.unregister("fx-packed")


def test_packed_runs_from_a_mirror_stand_in(env, tmp_path):
    _packed_dataset()
    try:
        mirror = tmp_path / "mirror"
        base = mirror / "github" / REPO
        (base / "runs").mkdir(parents=True); (base / "qrels").mkdir()
        (base / "runs/alpha.gz").write_bytes(gzip.compress(FILES["runs/alpha"]))
        (base / "runs/beta").write_bytes(FILES["runs/beta"])
        (base / "qrels/qrels.txt.gz").write_bytes(gzip.compress(FILES["qrels/qrels.txt"]))
        root = D.fetch("fx-packed", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
        for p in ["runs/alpha", "runs/beta"]:
            assert _is_gz(root / REPO / p) and gzip.decompress((root / REPO / p).read_bytes()) == FILES[p]
        assert (root / REPO / "qrels/qrels.txt").read_bytes() == FILES["qrels/qrels.txt"]   # not a run: plain
        assert D.verify("fx-packed").ok.all()
        (base / "runs/alpha.gz").write_bytes(gzip.compress(b"tampered\n"))
        (root / REPO / "runs/alpha").unlink()
        with pytest.raises(ChecksumError, match="runs/alpha"):
            D.fetch("fx-packed", mirror=mirror, base_url="http://127.0.0.1:9", progress=False)
        assert not (root / REPO / "runs/alpha").exists() and _leftovers(env) == []
    finally:
        D.unregister("fx-packed")


@needs_mirror
def test_trec_covid_round1_runs_cached_compressed(tmp_path):
    ds = D.load("trec-covid-round1", path=tmp_path / "c", progress=False)
    runs = sorted((tmp_path / "c" / "castorini/TREC-COVID/round1/runs").iterdir())
    assert len(runs) == 143 and all(_is_gz(f) for f in runs)
    assert not _is_gz(tmp_path / "c" / "castorini/TREC-COVID/round1/qrels/qrels-rnd1.txt")
    assert D.verify("trec-covid-round1", path=tmp_path / "c").ok.all()
    assert ds.runs.system.nunique() == 143 and len(ds.runs) > 3_000_000


@needs_mirror
def test_run_files_encode_as_the_runs_frame():
    "`Dataset.run_files` ({system: file}, DL's from the file names) encodes to the campaign of the runs frame (DL: read "
    "with tag=True), array for array; each DL file holds the one tag its name ends with."
    from irinnov.core.encode import prepare, prepare_files
    from irinnov.core.read import read_run
    for name in ("trec-dl-2020-passage", "trec-covid-round1"):
        ds = D.load(name, progress=False)
        files = ds.run_files()
        frame = prepare(ds.runs, ds.qrels, keep_runs=False)
        streamed = prepare_files(files, ds.qrels, keep_runs=False)
        assert streamed.systems.tolist() == frame.systems.tolist() == sorted(files, key=str.encode)
        for k in ("topics", "docs", "grades", "lengths", "judged_docs"):
            assert np.array_equal(getattr(streamed, k), getattr(frame, k)), (name, k)
        assert np.array_equal(streamed.scores, frame.scores, equal_nan=True), name
        if name.startswith("trec-dl"):
            for s, f in files.items(): assert read_run(f, tag=True).system.unique().tolist() == [s], (f, s)
