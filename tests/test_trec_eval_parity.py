"""irinnov against trec_eval 9.0.8 and 10.0 themselves, built from ../shared/oracles: every measure of `all_trec` that
irinnov offers, per topic and `all`, with and without -c, at two relevance levels and with -M, on 1,200 generated
campaigns (batched into a few files), trec_eval's own test files, TREC-COVID round 1, Web 2012 and TREC DL 2020."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import oracle_build as ob
from irinnov import metrics as M
from irinnov.trec import prepare, prepare_files, read_qrels, read_run

MIRROR = Path(os.environ.get("IRINNOV_MIRROR", ob.SHARED / "data"))
TREC_EVAL_TEST = MIRROR / "github" / "usnistgov" / "trec_eval" / "test"


@pytest.fixture(scope="session")
def binaries(tmp_path_factory):
    reason = ob.why_not()
    if reason: pytest.skip(reason)
    return ob.build(tmp_path_factory.mktemp("trec_eval"))


def generated(seed: int = 0, n_campaigns: int = 1200, n_sys: int = 4):
    """Many small campaigns with distinct topic ids in one qrels frame and one runs frame.

    Each campaign draws its own shape: 1-3 topics, a pool of 3-30 documents whose ids sort differently as strings
    and as numbers, heavy ties (4 distinct scores), float32-only ties (scores 1e-12 apart), or distinct scores;
    short lists, lists of 1-20 documents, topics a system skips (the last system answers every topic), negative grades
    (-1, -2), grades up to 4, topics without relevant documents, and topics only in the runs."""
    rng = np.random.default_rng(seed)
    q_rows, r_rows = [], []
    for c in range(n_campaigns):
        pool = int(rng.integers(3, 31))
        docs = np.array([f"d{i}" for i in range(pool)] + [f"D{i}" for i in range(pool // 3)] + ["d1x", "0"])
        tie = rng.choice(["heavy", "float32", "distinct"])
        topics = [f"c{c}t{j}" for j in range(int(rng.integers(1, 4)))]
        for j, t in enumerate(topics):
            judged = rng.choice(len(docs), size=int(rng.integers(1, len(docs) + 1)), replace=False)
            no_rel = rng.random() < 0.2
            for i, d in enumerate(judged):
                # the first judgment is >= 0: trec_eval fails on a topic whose grades are all negative
                g = 0 if i == 0 else int(rng.choice([-2, 0]) if no_rel else rng.choice([-2, -1, 0, 0, 1, 1, 2, 3, 4]))
                q_rows.append((t, docs[d], g))
        for s in range(n_sys):
            for t in topics + ([f"c{c}only"] if rng.random() < 0.1 else []):
                if s < n_sys - 1 and rng.random() < 0.2: continue
                n = int(rng.integers(1, min(20, len(docs)) + 1))
                chosen = rng.choice(len(docs), size=n, replace=False)
                if tie == "heavy": sc = rng.integers(0, 4, n) / 4 + 0.5
                elif tie == "float32": sc = 0.5 + rng.integers(0, 3, n) * 1e-12 + rng.integers(0, 2, n) * 0.25
                else: sc = rng.random(n) * 10
                r_rows += [(f"s{s}", t, docs[d], float(x)) for d, x in zip(chosen, sc)]
    return (pd.DataFrame(r_rows, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(q_rows, columns=["query", "doc", "grade"]))


def parity(binaries, runs, qrels, tmp: Path, flags_list, versions=("9", "10"), measures=("all_trec",),
           ragged: bool = False, files: dict | None = None):
    """Compare irinnov with both binaries on every run and flag set; returns (cases, values compared, mismatches).

    Every measure of the set that irinnov offers is compared (of all_trec: all but relstring, and 10.0's rbp,
    rbp_resid and unj). `files`: each system's own run file (plain), read by both, instead of files written from `runs`."""
    qp = ob.write_qrels(qrels, tmp / "qrels")
    if files is None: files = {s: ob.write_run(g, tmp / f"input.{s}", tag=s) for s, g in runs.groupby("system")}
    cases = compared = 0
    bad = []
    outputs = {}        # each binary's output on a run and flag set, read once for both campaigns
    for v in versions:
        dtype = "float64" if v == "10" else "float32"
        # the campaign of the frames, and the one read from the run files a batch at a time (several files a batch)
        for c in (prepare(runs, qrels, score_dtype=dtype, ragged=ragged),
                  prepare_files(list(files.values()), qrels, score_dtype=dtype, batch_rows=max(len(runs) // 5, 1),
                                ragged=ragged)):
          assert bool(c.overflow) == ragged
          for flags in flags_list:
            complete = "-c" in flags
            level = int(next((f[2:] for f in flags if f.startswith("-l")), 1))
            depth = int(next((f[2:] for f in flags if f.startswith("-M")), 0)) or None
            recs = M.trec_eval_records(c, measures=list(measures), per_query=True, complete=complete, threshold=level,
                                       depth=depth, trec_eval_version=v)
            for s, f in files.items():
                key = (v, tuple(flags), s)
                if key not in outputs:
                    outputs[key] = ob.run_frame(binaries[f"{v}-precise"], qp, f, "-q",
                                                *[x for m in measures for x in ("-m", m)], *flags)
                code, theirs, err = outputs[key]
                if code != 0:
                    # trec_eval 10.0 without -c stops when the run misses a qrels topic (irinnov averages over the
                    # topics the run has, as 9.0.x does): nothing to compare
                    assert v == "10" and not complete and "not found" in err, (v, flags, s, code, err)
                    continue
                mine = recs[recs.system == s]
                n, b = ob.compare_frames(theirs[theirs.measure.isin(set(mine.measure))], mine)
                cases += 1
                compared += n
                bad += [(v, flags, s, *x) for x in b]
    return cases, compared, bad


FLAGS = [[], ["-c"], ["-l2"], ["-c", "-l2"], ["-c", "-M5"]]
FLAGS_GENERATED = [[], ["-c", "-l2"], ["-c", "-M5"]]


def test_generated_campaigns(binaries, tmp_path):
    runs, qrels = generated()
    cases, compared, bad = parity(binaries, runs, qrels, tmp_path, FLAGS_GENERATED)
    assert not bad, f"{len(bad)} mismatches of {compared}: {bad[:10]}"
    assert cases >= 20 and compared > 1_000_000


def ragged_generated(seed: int = 3):
    """6 runs on 9 topics: lists of 1-12 documents and a few of 150-900 (heavy ties), topics a run skips, negative
    grades, a topic without relevant documents."""
    rng = np.random.default_rng(seed)
    docs = np.array([f"d{i}" for i in range(1200)])
    q_rows = [(f"t{t}", d, int(rng.choice([-1, 0, 0, 1, 2, 3]))) for t in range(8)
              for d in rng.choice(docs, 150, replace=False)]
    q_rows += [("t8", d, 0) for d in docs[:20]]                            # a topic without relevant documents
    r_rows = []
    for s in range(6):
        for t in range(9):
            if rng.random() < 0.15: continue                               # a topic the run skips
            n = int(rng.integers(150, 901)) if rng.random() < 0.12 else int(rng.integers(1, 13))
            sc = rng.integers(0, 6, n) / 4
            r_rows += [(f"s{s}", f"t{t}", d, float(x)) for d, x in zip(rng.choice(docs, n, replace=False), sc)]
    return (pd.DataFrame(r_rows, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(q_rows, columns=["query", "doc", "grade"]))


FLAGS_RAGGED = FLAGS + [["-c", "-M200"]]


def test_ragged_campaigns(binaries, tmp_path, monkeypatch):
    """The long lists kept apart (`ragged=True`, split however small the campaign): every measure, per topic and
    `all`, equals trec_eval's, with -c, -l 2 and -M."""
    import irinnov.trec as T
    monkeypatch.setattr(T, "_RAGGED_MIN_BYTES", 0)
    runs, qrels = ragged_generated()
    cases, compared, bad = parity(binaries, runs, qrels, tmp_path, FLAGS_RAGGED, ragged=True)
    assert not bad, f"{len(bad)} mismatches of {compared}: {bad[:10]}"
    assert cases >= 100 and compared > 50_000       # (10.0 without -c stops on a run that skips a topic)


def test_missing_topics_under_c_differ_between_versions(binaries, tmp_path):
    "A run that skips a qrels topic: 9.0.x -c -q does not list it and counts no num_rel; 10.0 lists it with num_rel."
    qrels = pd.DataFrame({"query": ["1", "1", "2"], "doc": ["a", "b", "c"], "grade": [1, 0, 1]})
    runs = pd.DataFrame({"system": "s", "query": ["1"], "doc": ["a"], "score": [1.0]})
    cases, compared, bad = parity(binaries, runs, qrels, tmp_path, [["-c"], []])
    assert not bad and cases == 6         # (each case twice: the frames' campaign and the files')
    for v, listed in (("9", ["1"]), ("10", ["1", "2"])):
        r = M.trec_eval_records(runs, qrels, ["num_rel", "map"], per_query=True, complete=True, trec_eval_version=v)
        assert sorted(set(r["query"]) - {"all"}) == listed


def test_spec_example_c_averages_every_qrels_topic(binaries, tmp_path):
    "qrels 1 0 a 1, 1 0 b 0, 2 0 c 0 and run 1 a, 2 c give map 0.5000 with -c (both versions)."
    qrels = pd.DataFrame({"query": ["1", "1", "2"], "doc": ["a", "b", "c"], "grade": [1, 0, 0]})
    runs = pd.DataFrame({"system": "s", "query": ["1", "2"], "doc": ["a", "c"], "score": [2.0, 1.0]})
    qp, rp = ob.write_qrels(qrels, tmp_path / "q"), ob.write_run(runs, tmp_path / "r")
    for v in ("9", "10"):
        assert ob.run(binaries[v], qp, rp, "-c", "-m", "map")[1][("map", "all")] == "0.5000"
        assert M.evaluate(runs, qrels, ["map"], complete=True, trec_eval_version=v).loc["s", "map"] == 0.5


def test_no_relevant_document_anywhere(binaries, tmp_path):
    "A qrels file without any relevant document: trec_eval's zeros, never nan."
    qrels = pd.DataFrame({"query": ["1", "2"], "doc": ["a", "b"], "grade": [0, 0]})
    runs = pd.DataFrame({"system": "s", "query": ["1", "2"], "doc": ["a", "x"], "score": [1.0, 1.0]})
    cases, compared, bad = parity(binaries, runs, qrels, tmp_path, [[], ["-c"]])
    assert not bad and cases == 8
    assert not M.evaluate(runs, qrels, ["official"]).isna().any().any()


@pytest.mark.parametrize("name", ["results.test", "results.trunc"])
def test_trec_eval_own_test_files(binaries, tmp_path, name):
    if not TREC_EVAL_TEST.is_dir(): pytest.skip(f"no trec_eval test files under {MIRROR}")
    res = tmp_path / name
    # results.trunc carries junk after the sixth column on some lines: trec_eval ignores it, irinnov refuses it
    res.write_text("".join(" ".join(line.split()[:6]) + "\n" for line in (TREC_EVAL_TEST / name).read_text().splitlines()
                           if line.strip()))
    total = [0, 0, []]
    for qname in ("qrels.test", "qrels.rel_level"):
        qrels = read_qrels(TREC_EVAL_TEST / qname)
        runs = read_run(res, system="s")
        cases, compared, bad = parity(binaries, runs, qrels, tmp_path, FLAGS + [["-M100"]])
        total[0] += cases; total[1] += compared; total[2] += bad
    assert not total[2], total[2][:10]
    assert total[0] >= 16


# --------------------------------------------------------------------------- real campaigns

DL2020 = MIRROR / "github" / "Parry-Parry" / "sigir25-annotation" / "runs" / "trec-dl-2020"
DL2020_QRELS = MIRROR / "github" / "castorini" / "anserini-tools" / "qrels" / "qrels.dl20-passage.txt"


def load(name):
    from irinnov import datasets
    try: return datasets.load(name)
    except Exception as e: pytest.skip(f"{name} not available: {e}")


def test_trec_covid_round1(binaries, tmp_path):
    ds = load("trec-covid-round1")
    cases, compared, bad = parity(binaries, ds.runs, ds.qrels, tmp_path, [["-c", "-M1000"]])
    assert not bad, bad[:10]
    assert cases == 4 * 143


@pytest.mark.parametrize("level", [1, 2, 0])     # the Web track grades -2..4: at level 0 judged non-relevant documents count
def test_web2012(binaries, tmp_path, level):
    ds = load("web2012")
    cases, compared, bad = parity(binaries, ds.runs, ds.qrels, tmp_path, [[f"-l{level}"], ["-c", f"-l{level}"]])
    assert not bad, bad[:10]
    assert cases >= 4 * 8


def test_web2012_ql_ap_rel2_averages_all_50_topics(binaries, tmp_path):
    "The ql category A baseline: AP(rel=2) over 50 topics (two have no document of grade >= 2) is 0.0272, not 0.0283."
    ds = load("web2012")
    values = M.evaluate(ds.runs, ds.qrels, ["map", "num_q"], complete=True, threshold=2).loc["ql-cata"]
    assert values["num_q"] == 50 and f"{values['map']:.4f}" == "0.0272"
    qp = ob.write_qrels(ds.qrels, tmp_path / "q")
    rp = ob.write_run(ds.runs[ds.runs.system == "ql-cata"], tmp_path / "r")
    for v in ("9", "10"):
        assert ob.run_frame(binaries[v], qp, rp, "-c", "-l2", "-m", "map")[1].value.tolist() == ["0.0272"]


def test_trec_dl_2020_passage(binaries, tmp_path):
    if not DL2020.is_dir() or not DL2020_QRELS.is_file(): pytest.skip(f"no TREC DL 2020 runs under {MIRROR}")
    import gzip, shutil
    from irinnov.trec import read_runs, system_name
    runs, qrels = read_runs(sorted(DL2020.glob("*.gz"))), read_qrels(DL2020_QRELS)
    (tmp_path / "runs").mkdir()
    files = {}
    for f in sorted(DL2020.glob("*.gz")):       # the runs as published (trec_eval reads no gzip), named as irinnov names them
        files[system_name(f)] = tmp_path / "runs" / f.name[:-3]
        with gzip.open(f, "rb") as src, open(files[system_name(f)], "wb") as dst: shutil.copyfileobj(src, dst)
    assert sorted(files) == sorted(runs.system.unique())
    cases, compared, bad = parity(binaries, runs, qrels, tmp_path, [["-c", "-l2"]], files=files)
    assert not bad, bad[:10]
    assert cases == 59 * 4


NOT_OFFERED = ("relstring", "rbp", "rbp_resid", "unj_5", "unj_10", "unj_20")   # said on stderr


@pytest.mark.parametrize("version", ["9", "10"])
@pytest.mark.parametrize("flags", [[], ["-q"], ["-q", "-c", "-l2"], ["-q", "-c", "-M100"]])
def test_cli_prints_what_trec_eval_prints(binaries, tmp_path, version, flags):
    "`irinnov evaluate` on one run: trec_eval's output line for line (the measures irinnov offers), both versions."
    import subprocess, sys
    if not TREC_EVAL_TEST.is_dir(): pytest.skip(f"no trec_eval test files under {MIRROR}")
    res = tmp_path / "results"
    # a run missing topic 302 (results.trunc, junk after column 6 cut off)
    res.write_text("".join(" ".join(l.split()[:6]) + "\n" for l in (TREC_EVAL_TEST / "results.trunc").read_text().splitlines()
                           if l.strip()))
    qrels = TREC_EVAL_TEST / ("qrels.rel_level" if "-l2" in flags else "qrels.test")
    if version == "10" and "-c" not in flags: res = TREC_EVAL_TEST / "results.test"     # 10.0 refuses a missing topic
    names = ["-m", "all_trec"]
    r = subprocess.run([str(binaries[version]), *flags, *names, str(qrels), str(res)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = [l for l in r.stdout.splitlines() if l.split("\t")[0].strip() not in NOT_OFFERED]
    irinnov = Path(sys.executable).with_name("irinnov")
    got = subprocess.run([str(irinnov), "evaluate", "--trec-eval", version, "--tag", *flags, *names, str(qrels), str(res)],
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == want


@pytest.mark.parametrize("flags", [[], ["-c", "-l2"], ["-c", "-M5"]])
def test_runs_evaluated_a_group_at_a_time(binaries, tmp_path, monkeypatch, flags):
    """trec_eval's text of the classic measures is computed a group of run files at a time (here one file a group):
    every run's values equal trec_eval's, the warnings are those of one campaign of them all, and `irinnov evaluate`
    prints the same bytes either way."""
    import contextlib, io, warnings
    from irinnov.cli import main
    from irinnov.conventions import EvalOptions
    runs, qrels = generated(seed=5, n_campaigns=120)
    qp = ob.write_qrels(qrels, tmp_path / "qrels")
    files = [ob.write_run(g, tmp_path / f"input.{s}", tag=s) for s, g in runs.groupby("system")]
    opts = EvalOptions(complete="-c" in flags, threshold=2 if "-l2" in flags else 1, depth=5 if "-M5" in flags else None)

    def arrays(group_rows):
        monkeypatch.setattr(M, "_GROUP_ROWS", group_rows)
        assert (M._run_groups(files) is None) == (group_rows > 10 ** 9)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            out, _ = M.evaluate_files(files, qp, ["all_trec"], options=opts, frame=False)
        return out, [str(w.message) for w in said]

    def command(group_rows):
        monkeypatch.setattr(M, "_GROUP_ROWS", group_rows)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["evaluate", "-q", "-m", "official", *flags, str(qp), *map(str, files)])
        return code, out.getvalue(), err.getvalue()

    (a, said), (b, said_whole) = arrays(1), arrays(1 << 40)
    assert said == said_whole and any("lacks" in s for s in said)       # (the last system alone answers every topic)
    assert len(a[1]) == len(b[1]) > 50 and all(np.allclose(x, y, rtol=0, atol=1e-12, equal_nan=True)
                                                for x, y in zip(a[1], b[1]))
    assert np.array_equal(a[2], b[2]) and np.allclose(a[3], b[3], rtol=0, atol=1e-12, equal_nan=True) and a[4] == b[4]
    assert list(a[5]) == list(b[5]) == [f.name.split(".", 1)[1] for f in files] and list(a[6]) == list(b[6])
    grouped = command(1)
    assert grouped == command(1 << 40) and grouped[0] == 0 and grouped[1].count("\n") > 3_000
    specs, values, listed, sums, runid, systems, topics = a
    mine = M.records(systems, topics, specs, [pd.DataFrame(v) for v in values], listed, pd.DataFrame(sums),
                     per_query=True, summary=True, runid=runid)
    bad = []
    for f in files:
        code, theirs, err = ob.run_frame(binaries["9-precise"], qp, f, "-q", "-m", "all_trec", *flags)
        assert code == 0, err
        ours = mine[mine.system == f.name.split(".", 1)[1]]
        n, b = ob.compare_frames(theirs[theirs.measure.isin(set(ours.measure))], ours)
        assert n > 500
        bad += b
    assert not bad, bad[:10]
