"""What the command line imports: evaluating one run into trec_eval's text, `--version` and `--help` load neither
pandas nor scipy, matplotlib, seaborn or Dask (pandas' import alone cost more than evaluating a run), nor
pyarrow.compute (a Python wrapper built for each of Arrow's kernels when imported: the kernels are called by name)
nor numpy.ma (which pyarrow's conversion of numpy arrays and `np.unique` import); `irinnov datasets list` loads neither
pandas nor scipy, numpy nor pyarrow. Each command runs in a fresh process, as the `irinnov` command does (`main()` reading `sys.argv`);
the modules are read from `sys.modules` when it returns."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "scipy", "matplotlib", "seaborn", "dask")
ALSO = ("pyarrow.compute", "numpy.ma")      # modules, not packages: pyarrow and numpy themselves are needed

CHILD = """import json, sys
from irinnov.cli import main
sys.argv = ["irinnov"] + json.loads(sys.argv[1])
code = main()
sys.stdout.flush()
print("\\n@@" + json.dumps({"code": code, "modules": sorted(m for m in sys.modules if m.split(".")[0] in %r
                                                           or any(m == a or m.startswith(a + ".") for a in %r))}))
""" % (HEAVY, ALSO)

QRELS = "301 0 d1 1\n301 0 d2 0\n301 0 d3 2\n302 0 d1 0\n302 0 d4 1\n"
RUN = ("301 Q0 d1 1 3.0 t\n301 Q0 d2 2 2.0 t\n301 Q0 d5 3 2.0 t\n301 Q0 d3 4 1.0 t\n"
       "302 Q0 d4 1 0.5 t\n302 Q0 d1 2 0.25 t\n")


def command(args: list) -> tuple[int, str, list]:
    "Run `irinnov ARGS` in a fresh process: its exit code, its output, the heavy modules loaded when it returned."
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out, _, tail = r.stdout.rpartition("\n@@")
    info = json.loads(tail)
    return info["code"], out, info["modules"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("imports")
    (d / "qrels.txt").write_text(QRELS)
    (d / "a.run").write_text(RUN)
    (d / "b.run").write_text(RUN.replace("3.0", "0.1"))
    return d


def test_the_child_sees_what_it_loads(files):
    "The check itself: a command that does need pandas (tsv output) is seen loading it (else the others pass vacuously)."
    code, out, mods = command(["evaluate", "-m", "map", "--format", "tsv", str(files / "qrels.txt"), str(files / "a.run")])
    assert code == 0 and "pandas" in mods


@pytest.mark.parametrize("args", [
    ["-m", "map", "-m", "ndcg", "-m", "P.10"],
    ["-q", "-c", "-m", "all_trec"],
    ["-q", "-l", "2", "-M", "3", "-m", "official", "-m", "runid"],
    ["-J", "-n", "-q", "-m", "AP", "-m", "P@10", "-m", "nDCG@10"],
    ["--trec-eval", "10", "-q", "-c"],
])
def test_evaluating_a_run_imports_no_pandas(files, args):
    "trec_eval's text of one run (and of two), for several options: printed from arrays, without pandas or the others "
    "(nor pyarrow.compute, nor numpy.ma)."
    for runs in ([files / "a.run"], [files / "a.run", files / "b.run"]):
        code, out, mods = command(["evaluate", *args, str(files / "qrels.txt"), *map(str, runs)])
        assert code == 0 and len(out.splitlines()) >= 2
        assert mods == [], f"{args}: {mods[:5]}"


def test_evaluate_prints_what_the_frames_print(files):
    "The text printed from arrays is the text printed from the records table (the same options, in one process each)."
    args = ["-q", "-c", "-m", "all_trec", str(files / "qrels.txt"), str(files / "a.run"), str(files / "b.run")]
    _, arrays, mods = command(["evaluate", *args])
    assert mods == []
    # the records table's path: the same command with `--format table` asked through a measure list that holds an
    # innovation-aware measure would differ in lines, so the comparison goes through the library's own records
    from irinnov import metrics
    from irinnov.cli import _fmt
    from irinnov.conventions import EvalOptions
    with pytest.warns(UserWarning, match="relstring"):      # (as the command says it, on stderr)
        recs, _ = metrics.evaluate_files([str(files / "a.run"), str(files / "b.run")], str(files / "qrels.txt"), ["all_trec"],
                                         options=EvalOptions(complete=True), per_query=True)
    recs = metrics.evaluation_records(recs, {}, per_query=True)
    lines = []
    for s in recs["system"].unique():
        lines.append(f"{'runid':<22}\tall\t{s}")
        lines += [f"{m:<22}\t{q}\t{_fmt(v, i)}" for m, q, v, i in
                  recs[recs.system == s][["measure", "query", "value", "integer"]].itertuples(index=False)]
    assert arrays.splitlines() == lines


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["evaluate", "--help"]])
def test_light_commands_import_nothing_heavy(args):
    "`--version` and `--help` load neither pandas nor numpy's users."
    code, out, mods = command(args)
    assert code == 0 and out.strip()
    assert mods == []


def test_the_child_sees_pyarrow_compute():
    "The check itself for the modules of ALSO: a process that imports them is seen loading them."
    code, out, mods = command(["--version"])
    assert "pyarrow.compute" not in mods
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", "import pyarrow.compute, numpy.ma\n" + CHILD, json.dumps(["--version"])],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    mods = json.loads(r.stdout.rpartition("\n@@")[2])["modules"]
    assert "pyarrow.compute" in mods and "numpy.ma" in mods


def test_listing_the_datasets_imports_no_pandas():
    "`irinnov datasets list` prints the registry (the recommender dataset's module included) without pandas or scipy, "
    "and without numpy or pyarrow: it reads no run."
    code, out, mods = command(["datasets", "list"])
    assert code == 0 and "movielens-100k-recsys" in out and "trec-covid-round1" in out
    assert mods == [], mods[:5]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", "import sys\nfrom irinnov.cli import main\nmain(['datasets', 'list'])\n"
                        "print('@@', sorted(m for m in ('numpy', 'pyarrow') if m in sys.modules))"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("@@ []"), (r.stdout[-200:], r.stderr[-2000:])


def test_the_report_imports_neither_scipy_stats_nor_seaborn(files, tmp_path):
    "`irinnov report` of six runs (every figure drawn) computes its tests through scipy.special and draws with matplotlib "
    "alone: scipy.stats and seaborn (which imports it) took a second and a half of the command's time."
    import random
    rng = random.Random(0)
    runs = []
    for s in range(6):
        lines = [f"{q} Q0 d{d} {r + 1} {rng.random():.4f} s{s}" for q in ("301", "302")
                 for r, d in enumerate(rng.sample(range(1, 6), 5))]
        (tmp_path / f"s{s}.run").write_text("\n".join(lines) + "\n")
        runs.append(str(tmp_path / f"s{s}.run"))
    code, out, mods = command(["report", str(files / "qrels.txt"), *runs, "-o", str(tmp_path / "out")])
    assert code == 0 and (tmp_path / "out" / "report.html").is_file() and "matplotlib" in mods
    assert "scipy.special" in mods and not [m for m in mods if m.startswith(("scipy.stats", "seaborn"))], mods
