"""The installed `irinnov` command, run in a subprocess: values against pytrec_eval and hand-derived numbers, formats,
one-line errors, datasets, and the campaign report end to end."""
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

IRINNOV = Path(sys.executable).with_name("irinnov")
MIRROR = Path(os.environ.get("IRINNOV_MIRROR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def irinnov(*args, cwd, env=None):
    "Run the installed command; return (exit code, stdout, stderr)."
    assert IRINNOV.exists(), f"{IRINNOV} is missing: install the package with `pip install -e .`"
    e = {k: v for k, v in os.environ.items() if k not in ("IRINNOV_DEBUG", "IRINNOV_PROGRESS")}
    e.update(env or {})
    e = {k: v for k, v in e.items() if v is not None}
    r = subprocess.run([str(IRINNOV), *map(str, args)], cwd=cwd, env=e, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def write_trec(tmp: Path, runs: dict, qrels: list, prefix: str = "input.") -> tuple[Path, Path]:
    "runs {system: [(query, doc, score), ...]} and qrels [(query, doc, grade)] as TREC files; returns (qrels, runs dir)."
    rd = tmp / "runs"
    rd.mkdir(exist_ok=True)
    for s, rows in runs.items():
        (rd / f"{prefix}{s}").write_text("".join(f"{q} Q0 {d} {i} {sc!r} {s}\n" for i, (q, d, sc) in enumerate(rows, 1)))
    qp = tmp / "qrels.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels))
    return qp, rd


def tsv(out: str) -> pd.DataFrame:
    df = pd.read_csv(io.StringIO(out), sep="\t", dtype={"system": str, "query": str, "value": str})
    df["value"] = df["value"].map(float)            # Python's float(): the exact double the command printed
    return df


def means(df: pd.DataFrame, measure: str) -> pd.Series:
    d = df[(df.measure == measure) & (df["query"] == "all")]
    return d.set_index("system")["value"].sort_index()


# --------------------------------------------------------------------------- classic measures vs pytrec_eval

def generated(seed: int, n_sys=5, n_top=6, depth=30, pool=50):
    "A random campaign: tied scores, short lists, skipped topics, unjudged and negative-grade documents, a topic without relevant documents."
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(pool)] + [f"D{i}" for i in range(pool // 5)]
    qrels = []
    for j in range(n_top):
        for i, d in enumerate(rng.choice(len(docs), size=pool // 2, replace=False)):
            g = 0 if i == 0 else (int(rng.choice([0, -1])) if j == n_top - 1 else int(rng.choice([-1, 0, 0, 1, 1, 2])))
            qrels.append((f"q{j}", docs[d], g))
    runs = {}
    for s in range(n_sys):
        rows = []
        for j in range(n_top):
            if rng.random() < 0.15: continue
            n = depth if rng.random() < 0.6 else int(rng.integers(1, depth))
            for d in rng.choice(len(docs), size=n, replace=False):
                rows.append((f"q{j}", docs[d], float(rng.integers(0, 8)) / 4))      # heavy ties, exact in float32
        runs[f"sys{s}"] = rows
    return runs, qrels


PYTREC = {"AP": "map", "AP@5": "map_cut_5", "P@10": "P_10", "R@20": "recall_20", "nDCG": "ndcg", "nDCG@10": "ndcg_cut_10",
          "RR": "recip_rank", "bpref": "bpref", "Rprec": "Rprec", "map": "map", "P_10": "P_10"}


def oracle(runs, qrels, measures, threshold=1):
    "pytrec_eval per (system, query, measure) for the topics in both the qrels and the run; and the qrels topics."
    qd = {}
    for q, d, g in qrels: qd.setdefault(q, {})[d] = g
    ev = pytrec_eval.RelevanceEvaluator(qd, {PYTREC[m].replace("_5", ".5").replace("_10", ".10").replace("_20", ".20")
                                             for m in measures}, relevance_level=threshold)
    topics = sorted(qd)
    out = {}
    for s, rows in runs.items():
        rd = {}
        for q, d, sc in rows: rd.setdefault(q, {})[d] = sc
        for q, vals in ev.evaluate(rd).items():
            for m in measures: out[(s, q, m)] = vals[PYTREC[m]]
    return out, topics


def trec_means(ref, runs, topics, m, complete):
    "trec_eval's average: over every qrels topic with -c (a missing topic counts 0), else over the run's topics."
    out = {}
    for s in runs:
        got = [ref[(s, q, m)] for q in topics if (s, q, m) in ref]
        out[s] = sum(got) / (len(topics) if complete else len(got))
    return pd.Series(out).sort_index()


@pytest.mark.parametrize("seed", range(3))
def test_evaluate_matches_pytrec_eval(tmp_path, seed):
    runs, qrels = generated(seed)
    qp, rd = write_trec(tmp_path, runs, qrels)
    measures = list(PYTREC)
    ref, topics = oracle(runs, qrels, measures)
    for complete in ([], ["-c"]):
        code, out, err = irinnov("evaluate", qp, rd, "-m", *measures, "-q", *complete, "--format", "tsv", cwd=tmp_path)
        assert code == 0, err
        df = tsv(out)
        per = df[df["query"] != "all"]
        # -q lists the topics in both the qrels and the run (trec_eval 9.0.x, with or without -c)
        assert sorted(zip(per.system, per["query"], per.measure)) == sorted(ref)
        for r in per.itertuples():
            assert abs(r.value - ref[(r.system, r.query, r.measure)]) <= 1e-12, r
        for m in measures:
            want = trec_means(ref, runs, topics, m, bool(complete))
            assert np.abs(means(df, m).to_numpy() - want.to_numpy()).max() <= 1e-12, m


def test_table_format_and_q(tmp_path):
    runs, qrels = generated(7, n_sys=2, n_top=3)
    qp, rd = write_trec(tmp_path, runs, qrels)
    ref, topics = oracle(runs, qrels, ["AP", "P@10"])
    # options before and after the files, -m repeated, a comma-separated list
    code, out, err = irinnov("evaluate", "-m", "AP", qp, rd / "input.sys0", rd / "input.sys1", "-m", "P@10", "-q", "-c",
                             cwd=tmp_path)
    code2, out2, _ = irinnov("evaluate", "-q", "-c", "-m", "AP,P@10", qp, rd / "input.sys0", rd / "input.sys1",
                             cwd=tmp_path)
    assert code == code2 == 0 and err == "" and out == out2
    lines = [l.split("\t") for l in out.splitlines()]
    # trec_eval layout: a runid line (several runs), then per query (every measure), then 'all'
    expected = []
    for s in ("sys0", "sys1"):
        expected.append(["runid", "all", s])
        for q in topics:
            if (s, q, "AP") in ref: expected += [["AP", q, ref[(s, q, "AP")]], ["P@10", q, ref[(s, q, "P@10")]]]
        expected += [["AP", "all", trec_means(ref, runs, topics, "AP", True)[s]],
                     ["P@10", "all", trec_means(ref, runs, topics, "P@10", True)[s]]]
    assert len(lines) == len(expected)
    for got, want in zip(lines, expected):
        assert len(got[0]) == 22 and got[0].strip() == want[0] and got[1] == want[1]      # %-22s, as trec_eval
        if want[0] == "runid": assert got[2] == want[2]
        else:
            assert len(got[2].split(".")[1]) == 4                          # four decimals, as trec_eval
            assert abs(float(got[2]) - want[2]) <= 5e-5 + 1e-12
    code, out, _ = irinnov("evaluate", qp, rd, "-m", "AP", cwd=tmp_path)       # without -q: only 'all'
    assert [l.split("\t")[1] for l in out.splitlines()] == ["all"] * 4
    code, out, _ = irinnov("evaluate", qp, rd, "-m", "AP", "-q", "-n", cwd=tmp_path)   # -n: no summary
    assert "all" not in [l.split("\t")[1] for l in out.splitlines() if not l.startswith("runid")]


def test_json_and_tsv_agree(tmp_path):
    runs, qrels = generated(3, n_sys=3, n_top=4)
    qp, rd = write_trec(tmp_path, runs, qrels)
    args = ("evaluate", qp, rd, "-m", "nDCG@10", "RR", "RIC", "-q")
    _, out_t, _ = irinnov(*args, "--format", "tsv", cwd=tmp_path)
    code, out_j, err = irinnov(*args, "--format", "json", cwd=tmp_path)
    assert code == 0, err
    recs = json.loads(out_j)
    assert list(recs[0]) == ["system", "measure", "query", "value"]
    t = tsv(out_t)
    assert len(recs) == len(t)
    for r, row in zip(recs, t.itertuples()):
        assert (r["system"], r["measure"], r["query"]) == (row.system, row.measure, row.query)
        assert r["value"] == row.value                                       # full precision in both


def test_runs_from_globs_and_directories(tmp_path):
    runs, qrels = generated(4, n_sys=3, n_top=3)
    qp, rd = write_trec(tmp_path, runs, qrels)
    (rd / ".hidden").write_text("not a run\n")
    _, by_dir, _ = irinnov("evaluate", qp, "runs", "-m", "AP", "--format", "tsv", cwd=tmp_path)
    _, by_glob, _ = irinnov("evaluate", qp, "runs/input.sys*", "-m", "AP", "--format", "tsv", cwd=tmp_path)
    _, by_files, _ = irinnov("evaluate", qp, "runs/input.sys2", "runs/input.sys0", "runs/input.sys1", "runs/input.sys0",
                             "-m", "AP", "--format", "tsv", cwd=tmp_path)
    assert by_dir == by_glob == by_files
    assert list(means(tsv(by_dir), "AP").index) == ["sys0", "sys1", "sys2"]


def test_depth_is_trec_eval_M(tmp_path):
    runs, qrels = generated(5, n_sys=2, n_top=4, depth=30)
    qp, rd = write_trec(tmp_path, runs, qrels)
    _, out, _ = irinnov("evaluate", qp, rd, "-m", "AP", "-M", "5", "--format", "tsv", cwd=tmp_path)
    ref, topics = oracle(runs, qrels, ["AP@5"])                                # -M5 then AP = map_cut_5
    want = trec_means(ref, runs, topics, "AP@5", False)
    assert np.abs(means(tsv(out), "AP").to_numpy() - want.to_numpy()).max() <= 1e-12


def test_echoed_names_are_the_typed_ones(tmp_path):
    runs, qrels = generated(6, n_sys=1, n_top=3)
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = irinnov("evaluate", qp, rd, "-m", "Rprec", "map", "AP", "P.5,10", "ndcg_cut.10", "Judged@10",
                             "--format", "tsv", cwd=tmp_path)
    assert code == 0, err
    # names as typed (trec_eval's names as trec_eval prints them), in the order given when not all are trec_eval's
    assert tsv(out).measure.tolist() == ["Rprec", "map", "AP", "P_5", "P_10", "ndcg_cut_10", "Judged@10"]
    code, out, err = irinnov("evaluate", qp, rd, "-m", "P.10,5", "Rprec", "map", "--format", "tsv", cwd=tmp_path)
    assert tsv(out).measure.tolist() == ["map", "Rprec", "P_5", "P_10"]          # all trec_eval's: trec_eval's order


# --------------------------------------------------------------------------- innovation measures vs hand-derived values

def test_rareness_spec_example_a(tmp_path):
    "SPEC §1.7 Example A (k = 3)."
    runs = {"A": [("q1", "d1", .9), ("q1", "d2", .8), ("q1", "d5", .7), ("q1", "d3", .6)],
            "B": [("q1", "d1", .9), ("q1", "d5", .8), ("q1", "d4", .5), ("q1", "d2", .4)],
            "C": [("q1", "d3", 1.0), ("q1", "d4", .6), ("q1", "d1", .5), ("q1", "d2", .5)]}
    qrels = [("q1", "d1", 2), ("q1", "d2", 1), ("q1", "d3", 1), ("q1", "d4", 1), ("q1", "d5", 0), ("q1", "d6", 1)]
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = irinnov("evaluate", qp, rd, "-m", "P@3_rareness(alpha=0.5)", "AP_rareness@3(alpha=1)",
                             "P'@3_rareness(alpha=0.5)", "AP_rareness(alpha=1)", "P_rareness@3(alpha=1)", "--format", "tsv",
                             cwd=tmp_path)
    assert code == 0, err
    df = tsv(out)
    expected = {"P@3_rareness(alpha=0.5)": [2/3, 13/18, 10/9], "AP@3_rareness(alpha=1)": [2/5, 16/45, 7/9],
                "P'@3_rareness(alpha=0.5)": [1/3, 5/12, 2/3], "AP_rareness(alpha=1)": [17/30, 47/90, 91/90],
                "P@3_rareness(alpha=1)": [2/3, 7/9, 11/9]}
    for m, v in expected.items():
        assert np.abs(means(df, m).to_numpy() - v).max() <= 1e-12, m


def test_novelty_spec_example_a(tmp_path):
    "SPEC §2.6 Example A (bits)."
    runs = {s: [("t", d, float(4 - i)) for i, d in enumerate(docs)]
            for s, docs in {"A": ["d1", "d2", "d3", "d4"], "B": ["d2", "d1", "d5", "d4"], "C": ["d1", "d6", "d2", "d7"]}.items()}
    qrels = [("t", "d1", 2), ("t", "d2", 1), ("t", "d3", 1), ("t", "d5", 1), ("t", "d8", 1), ("t", "d4", 0), ("t", "d6", -2)]
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = irinnov("evaluate", qp, rd, "-m", "U", "U(log0=penalty)", "U@2", "U(rel=2)", "--format", "tsv",
                             cwd=tmp_path)
    assert code == 0, err
    df = tsv(out)
    for m, v in {"U": [2.192645, 2.263034, -0.614710], "U(log0=penalty)": [1.192645, 1.263034, -2.614710],
                 "U@2": [0.415037, 1.0, 0.415037], "U(rel=2)": [0.192645, -0.415037, 0.192645]}.items():
        assert np.abs(means(df, m).to_numpy() - v).max() <= 1e-6, m
    assert abs(means(df, "U")["A"] - math.log2(32 / 7)) <= 1e-12


def test_rpp_spec_e1(tmp_path):
    "SPEC §3.4 E1: mean win rates, graded and binary, uniform weights; per-topic win rates."
    runs = {"A": [("q1", "d2", .9), ("q1", "d1", .8), ("q1", "d5", .8), ("q1", "d3", .5), ("q1", "d4", .4),
                  ("q2", "e3", 2.0), ("q2", "e1", 1.0)],
            "B": [("q1", "d1", 3.0), ("q1", "d6", 2.0), ("q1", "d4", 1.0), ("q1", "d5", .5), ("q1", "d2", .2),
                  ("q2", "e2", 5.0), ("q2", "e1", 4.0), ("q2", "e3", 3.0)],
            "C": [("q1", "d3", .9), ("q1", "d4", .8), ("q1", "d2", .7), ("q1", "d5", .6)]}
    qrels = [("q1", "d1", 2), ("q1", "d2", 1), ("q1", "d3", 1), ("q1", "d4", 0), ("q1", "d5", -2), ("q1", "d6", 2),
             ("q2", "e1", 1), ("q2", "e2", 1), ("q2", "e3", 0), ("q3", "g1", 0)]
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = irinnov("evaluate", qp, rd, "-m", "RPP", "RPP(graded=0)", "-q", "--format", "tsv", cwd=tmp_path)
    assert code == 0, err
    df = tsv(out)
    assert np.abs(means(df, "RPP").to_numpy() - [-1/8, 3/4, -5/8]).max() <= 1e-12
    assert np.abs(means(df, "RPP(graded=0)").to_numpy() - [-1/16, 5/8, -9/16]).max() <= 1e-12
    q = df[df.measure == "RPP"].pivot(index="system", columns="query", values="value")
    assert list(q.columns) == ["all", "q1", "q2"]                              # q3 has no relevant document
    assert np.abs(q["q1"].to_numpy() - [0, 1/2, -1/2]).max() <= 1e-12
    assert np.abs(q["q2"].to_numpy() - [-1/4, 1, -3/4]).max() <= 1e-12


def test_asl_spec_example_a(tmp_path):
    "SPEC §4.4 Example A: ASL, ASL@g1-1, padding (lower is better)."
    runs = {"A": [("1", "d1", 9.), ("1", "d2", 8.), ("1", "d3", 7.), ("1", "x9", 6.), ("1", "d4", 5.), ("2", "e1", 2.), ("2", "e2", 1.)],
            "B": [("1", "x1", 5.), ("1", "d2", 4.), ("1", "d4", 3.), ("1", "d1", 2.), ("1", "x2", 1.), ("2", "e2", 3.), ("2", "x3", 2.),
                  ("2", "e1", 1.), ("3", "f1", 1.)],
            "C": [("1", "d3", .9), ("1", "x5", .9), ("1", "d1", .5), ("1", "d5", .95)]}
    qrels = [("1", "d1", 2), ("1", "d2", 1), ("1", "d3", 1), ("1", "d4", 0), ("1", "d5", -2), ("2", "e1", 1), ("2", "e2", 0),
             ("3", "f1", 0)]
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = irinnov("evaluate", qp, rd, "-m", "ASL", "ASL@g1-1", "ASL@g1-2", "ASL(pad=5)", "ASL(rel=2)", "-q",
                             "--format", "tsv", cwd=tmp_path)
    assert code == 0, err
    df = tsv(out)
    for m, v in {"ASL": [1, 17/6, 17/6], "ASL@g1-1": [1, 5/2, 3], "ASL@g1-2": [1, 11/4, 3], "ASL(pad=5)": [1, 17/6, 4],
                 "ASL(rel=2)": [1, 4, 4]}.items():
        assert np.abs(means(df, m).to_numpy() - v).max() <= 1e-12, m
    b = df[(df.measure == "ASL") & (df.system == "B")].set_index("query")["value"]
    assert abs(b["1"] - 8/3) <= 1e-12 and b["2"] == 3


def test_ric_spec_example_2(tmp_path):
    "SPEC §5.7 Example 2 (binary qrels): per-topic and mean RIC in bits."
    lists = {"S1": {"t1": "a u x b y z", "t2": "e g f h"}, "S2": {"t1": "x y u"}, "S3": {"t1": "x y z a", "t2": "h g f e"},
             "S4": {"t1": "b c x", "t2": "f e"}, "S5": {"t1": "x a y b"}}
    runs = {s: [(q, d, float(10 - i)) for q, ds in t.items() for i, d in enumerate(ds.split())] for s, t in lists.items()}
    qrels = ([("t1", d, 1) for d in "abc"] + [("t1", d, 0) for d in "xyz"] + [("t2", d, 1) for d in "ef"]
             + [("t2", d, 0) for d in "gh"])
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = irinnov("evaluate", qp, rd, "-m", "RIC", "-q", "--format", "tsv", cwd=tmp_path)
    assert code == 0, err
    df = tsv(out)
    assert np.abs(means(df, "RIC").to_numpy() - [0.147592, 0, 1, 0.833333, 0.020252]).max() <= 1e-6
    s1 = df[(df.system == "S1")].set_index("query")["value"]
    assert abs(s1["t1"] - 0.106462) <= 1e-6 and abs(s1["t2"] - 0.188722) <= 1e-6


# --------------------------------------------------------------------------- errors: one line, no traceback

def assert_one_line_error(code, out, err, *needles, exit_code=None):
    assert code != 0
    if exit_code is not None: assert code == exit_code
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("irinnov: error: ") and "Traceback" not in err
    for n in needles: assert n in err, (n, err)


@pytest.fixture
def small(tmp_path):
    runs, qrels = generated(11, n_sys=2, n_top=3)
    return write_trec(tmp_path, runs, qrels)


def test_error_unknown_measure_names_the_closest(tmp_path, small):
    qp, rd = small
    res = irinnov("evaluate", qp, rd, "-m", "AP", "MAPP@10", cwd=tmp_path)
    assert_one_line_error(*res, "'MAPP@10'", "did you mean AP@10", exit_code=2)       # the closest names, not the list
    assert "known measures" not in res[2]
    res = irinnov("evaluate", qp, rd, "-m", "AP", "zzzz", cwd=tmp_path)                  # close to none: every name
    assert_one_line_error(*res, "'zzzz'", "known measures:", "AP@k", "nDCG@k", "AP_rareness@k(alpha=a)", "RPP", "ASL@g1-n",
                          "RIC", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-m", "ASL@10", cwd=tmp_path), "ASL takes @g1-n", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-m", "RIC(beta=1)", cwd=tmp_path), "unknown parameter 'beta'")


def test_error_missing_files(tmp_path, small):
    qp, rd = small
    assert_one_line_error(*irinnov("evaluate", qp, rd / "input.nope", cwd=tmp_path), "input.nope: no such run file")
    assert_one_line_error(*irinnov("evaluate", tmp_path / "nope.qrels", rd, cwd=tmp_path), "nope.qrels")
    assert_one_line_error(*irinnov("evaluate", qp, "runs/*.gz", cwd=tmp_path), "runs/*.gz: no run files match")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(*irinnov("evaluate", qp, "empty", cwd=tmp_path), "empty: directory holds no run files")
    assert_one_line_error(*irinnov("evaluate", rd, rd, cwd=tmp_path), str(rd))       # a directory as QRELS


def test_error_malformed_files_name_file_and_line(tmp_path, small):
    qp, rd = small
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "input.X").write_text("q0 Q0 d1 1 0.5 X\nq0 Q0 d2 2 0.4 X\nq0 Q0 d3 3 NaNa X\n")
    assert_one_line_error(*irinnov("evaluate", qp, bad, cwd=tmp_path), "input.X:3:", "not a number")
    (bad / "input.X").write_text("q0 Q0 d1 1 0.5 X\nq0 Q0 d2 0.4 X\n")
    assert_one_line_error(*irinnov("evaluate", qp, bad, cwd=tmp_path), "input.X:2:", "columns")
    (bad / "input.X").write_text("q0 Q0 d1 1 0.5 X\nq0 Q0 d1 2 0.4 X\n")
    assert_one_line_error(*irinnov("evaluate", qp, bad, cwd=tmp_path), "input.X:2:", "duplicate")
    bq = tmp_path / "bad.qrels"
    bq.write_text("q0 0 d1 1\nq0 0 d2 0\nq0 0 d3 high\n")
    assert_one_line_error(*irinnov("evaluate", bq, rd, cwd=tmp_path), "bad.qrels:3:", "not an integer")


def test_error_usage(tmp_path, small):
    qp, rd = small
    assert_one_line_error(*irinnov("evaluate", qp, cwd=tmp_path), "RUN", exit_code=2)
    assert irinnov("evaluate", "-m", "AP", qp, rd, cwd=tmp_path)[0] == 0           # options before the files work
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-m", cwd=tmp_path), "expected a measure name", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-l", "-1", cwd=tmp_path), "relevance level", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-l", "x", cwd=tmp_path), "relevance level", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "--trec-eval", "8", cwd=tmp_path), "invalid choice", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-m", "P.x", cwd=tmp_path), "P.x", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "--format", "xml", cwd=tmp_path), "invalid choice", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-M", "-3", cwd=tmp_path), "depth", exit_code=2)
    assert_one_line_error(*irinnov("report", qp, rd, cwd=tmp_path), "-o/--output", exit_code=2)
    assert_one_line_error(*irinnov("report", "--dataset", "web2012", qp, rd, "-o", "x", cwd=tmp_path), "not both", exit_code=2)
    assert_one_line_error(*irinnov("frobnicate", cwd=tmp_path), "invalid choice", exit_code=2)
    assert_one_line_error(*irinnov("evaluate", qp, rd / "input.sys0", "-m", "U", cwd=tmp_path), "at least two runs")


def test_error_unknown_dataset(tmp_path):
    for args in (("datasets", "fetch", "trec-covid-round9"), ("datasets", "verify", "nope"),
                 ("report", "--dataset", "nope", "-o", "out")):
        assert_one_line_error(*irinnov(*args, cwd=tmp_path), "unknown dataset", "trec-covid-round1", "web2012", exit_code=2)
    assert_one_line_error(*irinnov("datasets", "fetch", "trec8", cwd=tmp_path), "NIST", "--path")
    assert_one_line_error(*irinnov("datasets", "fetch", cwd=tmp_path), "NAME", exit_code=2)


def test_error_offline_without_mirror(tmp_path):
    env = {"IRINNOV_MIRROR": None, "IRINNOV_HOME": str(tmp_path / "home"), "IRINNOV_BASE_URL": "http://127.0.0.1:9",
           "IRINNOV_TIMEOUT": "5"}
    for args in (("datasets", "fetch", "web2012"), ("report", "--dataset", "web2012", "-o", "out")):
        res = irinnov(*args, cwd=tmp_path, env=env)
        assert_one_line_error(*res, "cannot download", "no offline mirror is set", "IRINNOV_MIRROR", exit_code=1)
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- datasets and report

def test_datasets_list(tmp_path):
    from irinnov.datasets import available
    code, out, err = irinnov("datasets", "list", cwd=tmp_path)
    assert code == 0 and err == ""
    names = [l.split()[0] for l in out.splitlines()[1:] if not l.startswith(" ")]
    assert names == list(available()["name"])
    assert {"trec-covid-round1", "web2012", "trec8", "trec5"} <= set(names)


def test_datasets_fetch_and_verify(tmp_path):
    if not (MIRROR / "github" / "trec-web").is_dir(): pytest.skip("no offline mirror")
    env = {"IRINNOV_MIRROR": str(MIRROR), "IRINNOV_HOME": str(tmp_path / "home")}
    code, out, err = irinnov("datasets", "verify", "web2012", cwd=tmp_path, env=env)
    assert code == 1 and "0 of 11 files verified" in out
    code, out, err = irinnov("datasets", "fetch", "web2012", cwd=tmp_path, env=env)
    assert code == 0 and "web2012: 11 files fetched and verified" in out, err
    code, out, err = irinnov("datasets", "verify", "web2012", cwd=tmp_path, env=env)
    assert code == 0 and out.strip() == "web2012: 11 of 11 files verified"
    victim = next((tmp_path / "home" / "web2012").rglob("qrels.adhoc.txt"))
    victim.write_text(victim.read_text()[:-10])
    code, out, err = irinnov("datasets", "verify", "web2012", cwd=tmp_path, env=env)
    assert code == 1 and "MISMATCH" in out and "10 of 11 files verified" in out


def test_report_on_files(tmp_path):
    runs, qrels = generated(21, n_sys=4, n_top=5)
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = irinnov("report", qp, rd, "-o", "out", "-B", "50", "--trials", "50", "--k", "10", cwd=tmp_path)
    assert code == 0, err
    assert out.strip() == "wrote out/report.html and its tables (CSV, Parquet) for 4 systems"
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.count('src="data:image/svg+xml;base64,') == 4 and "http://" not in html and "https://" not in html
    sys_ = pd.read_csv(tmp_path / "out" / "systems.csv").set_index("system")
    ref, topics = oracle(runs, qrels, ["AP"])
    for s in runs:
        assert abs(sys_.at[s, "AP"] - trec_means(ref, runs, topics, "AP", True)[s]) <= 1e-12
    assert "P@10_rareness(alpha=1)" in sys_.columns and "rank ASL(pad=30)" in sys_.columns


def test_report_trec_covid_end_to_end(tmp_path):
    "The README's main job on a fresh cache, from the offline mirror: MAP in the report equals the leaderboard."
    if not (MIRROR / "github" / "castorini" / "TREC-COVID").is_dir(): pytest.skip("no offline mirror")
    env = {"IRINNOV_MIRROR": str(MIRROR), "IRINNOV_HOME": str(tmp_path / "home")}
    code, out, err = irinnov("report", "--dataset", "trec-covid-round1", "-o", "report/", cwd=tmp_path, env=env)
    assert code == 0, err
    assert out.strip() == "wrote report/report.html and its tables (CSV, Parquet) for 143 systems"
    assert err == ""                                                            # no bar, no warning off a terminal
    board = pd.read_csv(next((tmp_path / "home").rglob("leaderboard.csv"))).set_index("run")
    sys_ = pd.read_csv(tmp_path / "report" / "systems.csv").set_index("system")
    assert len(sys_) == 143 and {"team", "runtype"} <= set(sys_.columns)
    assert (sys_["AP"].round(4) == board.loc[sys_.index, "MAP"]).all()
    assert (sys_["rank AP"] == sys_["AP"].rank(ascending=False, method="min")).all()
    html = (tmp_path / "report" / "report.html").read_text()
    assert html.count('src="data:image/svg+xml;base64,') == 4 and re.search(r"https?://", html) is None
    # the encoded campaign was kept in the cache: a second report reads it back and writes the same files, byte for byte
    [kept] = (tmp_path / "home" / "campaigns" / "trec-covid-round1").glob("campaign-*.npz")
    inode = kept.stat().st_ino
    code, out, err = irinnov("report", "--dataset", "trec-covid-round1", "-o", "again/", cwd=tmp_path, env=env)
    assert code == 0 and err == "", err
    assert kept.stat().st_ino == inode                          # read back, not written again
    files = sorted(p.name for p in (tmp_path / "report").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "again").iterdir())
    for f in files: assert (tmp_path / "report" / f).read_bytes() == (tmp_path / "again" / f).read_bytes(), f


def test_evaluate_keeps_a_long_list_apart(tmp_path):
    """One list of 4,000 among lists of at most 20 on 300 topics: `irinnov evaluate` keeps it apart from the dense
    arrays (a ragged campaign, whose arrays padded to it would take 34 MB) and prints pytrec_eval's values, per topic
    and mean; an innovation measure in the same call reads the campaign with the long list put back."""
    from irinnov.measures import parse_measure
    from irinnov.trec import prepare, read_qrels, read_runs
    runs, qrels = generated(11, n_sys=2, n_top=300, depth=20)
    runs["sys0"] = [r for r in runs["sys0"] if r[0] != "q1"] + \
        [("q1", f"x{i}", 1000.0 - i) for i in range(3990)] + [("q1", f"d{i}", -float(i)) for i in range(10)]
    qp, rd = write_trec(tmp_path, runs, qrels)
    c = prepare(rd, qp, ragged=True)
    assert [len(b.system) for b in c.overflow] == [1] and c.overflow[0].campaign.depth == 4000 and c.depth < 4000
    measures = ["AP", "nDCG", "P@10", "R@20", "bpref", "Rprec"]
    ref, topics = oracle(runs, qrels, measures)
    code, out, err = irinnov("evaluate", qp, rd, "-m", *measures, "-m", "RPP", "-q", "-c", "--format", "tsv",
                             cwd=tmp_path)
    assert code == 0, err
    df = tsv(out)
    per = df[(df["query"] != "all") & df.measure.isin(measures)]
    assert sorted(zip(per.system, per["query"], per.measure)) == sorted(ref)
    for r in per.itertuples(): assert abs(r.value - ref[(r.system, r.query, r.measure)]) <= 1e-12, r
    for m in measures:
        assert np.abs(means(df, m).to_numpy() - trec_means(ref, runs, topics, m, True).to_numpy()).max() <= 1e-12, m
    rpp = parse_measure("RPP")(prepare(read_runs(rd), read_qrels(qp)), warn=False).mean(axis=1)
    np.testing.assert_allclose(means(df, "RPP").to_numpy(), rpp.sort_index().to_numpy(), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- habits of the ecosystem

def test_python_dash_m_is_the_command(tmp_path, small):
    qp, rd = small
    r = subprocess.run([sys.executable, "-m", "irinnov", "evaluate", str(qp), str(rd), "-m", "map", "--format", "tsv"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == irinnov("evaluate", qp, rd, "-m", "map", "--format", "tsv", cwd=tmp_path)[1]
    r = subprocess.run([sys.executable, "-m", "irinnov", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("irinnov ")


def test_runs_from_standard_input_and_process_substitution(tmp_path, small):
    import gzip, shutil
    qp, rd = small
    run = rd / "input.sys0"
    want = irinnov("evaluate", qp, run, "-m", "map", "P.5", cwd=tmp_path)[1]
    r = subprocess.run([str(IRINNOV), "evaluate", str(qp), "-", "-m", "map", "P.5"], input=run.read_text(),
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stderr == "" and r.stdout == want               # `-`: standard input
    if shutil.which("bash") is None or shutil.which("zcat") is None: pytest.skip("no bash/zcat for process substitution")
    (tmp_path / "run.gz").write_bytes(gzip.compress(run.read_bytes()))
    r = subprocess.run(["bash", "-c", f"'{IRINNOV}' evaluate '{qp}' <(zcat run.gz) -m map P.5"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr                                           # a FIFO is a run file
    assert r.stdout == want
    r = subprocess.run(["bash", "-c", f"'{IRINNOV}' evaluate '{qp}' <(zcat run.gz) --workers 1"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "cannot be sent to Dask workers" in r.stderr       # a pipe cannot be shipped to Dask


def test_mistyped_qrels_after_a_measure_list(tmp_path, small):
    qp, rd = small
    assert_one_line_error(*irinnov("evaluate", "-m", "map", "P.5", "qrels.txx", rd, cwd=tmp_path),
                          "qrels.txx: no such qrels file", exit_code=1)
    assert_one_line_error(*irinnov("evaluate", "-m", "map", "P.5", "data/qrels", rd, cwd=tmp_path),
                          "data/qrels: no such qrels file", exit_code=1)
    assert_one_line_error(*irinnov("evaluate", qp, rd / "input.sys0", "-m", "map", "runs/input.nope", cwd=tmp_path),
                          "runs/input.nope: no such run file", exit_code=1)
    assert_one_line_error(*irinnov("evaluate", qp, rd, "-m", "map", "P.x", cwd=tmp_path), "unknown measure 'P.x'",
                          exit_code=2)                                             # a measure-like word stays a measure


def test_options_that_do_nothing_are_refused(tmp_path, small):
    qp, rd = small
    for args, needle in ((("--test", "t-holm"), "--test only acts with --against"),
                         (("--alpha", "0.01", "--permutations", "100"), "--alpha, --permutations only act with --against"),
                         (("--memory-limit", "2GB"), "--memory-limit"), (("--shards", "4"), "--shards")):
        assert_one_line_error(*irinnov("evaluate", qp, rd, *args, cwd=tmp_path), needle, exit_code=2)
    assert_one_line_error(*irinnov("report", qp, rd, "-o", "out", "--memory-limit", "1GB", cwd=tmp_path), "--workers",
                          exit_code=2)
    assert not (tmp_path / "out").exists()
    code, out, err = irinnov("evaluate", qp, rd, "-m", "nope@@", "--workers", "4096", cwd=tmp_path)   # fails before Dask
    assert code == 2 and err.splitlines()[0].startswith("irinnov: warning: --workers 4096 is more than the ")


def test_run_directory_skips_are_said_and_recursive_reads_them(tmp_path, small):
    qp, rd = small
    (rd / ".input.sys0.swp").write_text("junk\n")
    (rd / "older").mkdir()
    (rd / "older" / "input.old").write_text((rd / "input.sys0").read_text().replace("sys0", "old"))
    code, out, err = irinnov("evaluate", qp, rd, "-m", "map", cwd=tmp_path)
    assert code == 0 and "runid" in out and "\told\n" not in out
    assert err.splitlines() == [f"irinnov: warning: {rd}: skipped 2 entries (not run files): .input.sys0.swp, older/; "
                                "pass recursive=True (--recursive) to read subdirectories"]
    code, out, err = irinnov("evaluate", qp, rd, "-m", "map", "--recursive", cwd=tmp_path)
    assert code == 0 and "\told\n" in out and err == f"irinnov: warning: {rd}: skipped 1 entry (not run files): .input.sys0.swp\n"


def test_ir_datasets_names_and_the_datasets_list(tmp_path):
    from irinnov.datasets import available
    listed = [l.split()[0] for l in irinnov("datasets", "list", cwd=tmp_path)[1].splitlines()[1:] if not l.startswith(" ")]
    assert listed == list(available()["name"]) and "movielens-100k-recsys" in listed
    for args in (("datasets", "fetch", "trec-covid-round9"), ("report", "--dataset", "trec-dl-2020-pasage", "-o", "o"),
                 ("evaluate", "--against", "nope", "run"), ("report", "--against", "nope", "run", "-o", "o")):
        code, out, err = irinnov(*args, cwd=tmp_path)
        assert_one_line_error(code, out, err, "unknown dataset", exit_code=2)
        assert err.rstrip("\n").endswith("available: " + ", ".join(listed)), err        # exactly `irinnov datasets list`
    assert "did you mean trec-covid-round" in irinnov("datasets", "fetch", "trec-covid-round9", cwd=tmp_path)[2]
    assert "did you mean trec-dl-2020-passage" in irinnov("report", "--dataset", "trec-dl-2020-pasage", "-o", "o", cwd=tmp_path)[2]
    if not (MIRROR / "github" / "castorini" / "TREC-COVID").is_dir(): pytest.skip("no offline mirror")
    env = {"IRINNOV_MIRROR": str(MIRROR), "IRINNOV_HOME": str(tmp_path / "home")}
    for name in ("cord19/trec-covid/round1", "msmarco-passage/trec-dl-2020/judged", "msmarco-passage/trec-dl-2019/judged"):
        code, out, err = irinnov("datasets", "verify", name, cwd=tmp_path, env=env)
        assert "unknown dataset" not in err and "files verified" in out, (name, out, err)   # the alias is known


def _modules_after(argv: list, cwd) -> set:
    "The top modules and irinnov modules a fresh process has loaded after `irinnov ARGV` (what the command imports)."
    code = ("import sys, io, contextlib\nfrom irinnov.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): main({argv!r})\n"
            "print('\\n'.join(sorted(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def test_light_commands_import_only_what_they_use(tmp_path):
    "`--version` and `--help` import neither numpy nor pandas; `evaluate` of a run file no report, Dask, Parquet, scipy or plotting."
    from irinnov import cli, report
    assert cli.REPORT_TESTS == report.TESTS
    for argv in (["--version"], ["--help"], ["evaluate", "--help"]):
        loaded = _modules_after(argv, tmp_path)
        assert not {"numpy", "pandas", "pyarrow"} & loaded, argv
    qp, rd = write_trec(tmp_path, {"a": [("1", "d1", 2.0), ("1", "d2", 1.0)]}, [("1", "d1", 1), ("1", "d3", 1)])
    loaded = _modules_after(["evaluate", "-m", "map", "-m", "ndcg", "-m", "P.10", str(qp), str(rd / "input.a")], tmp_path)
    assert "irinnov.metrics" in loaded
    heavy = {"irinnov.report", "irinnov.scale", "pyarrow.parquet", "scipy", "matplotlib", "seaborn", "dask"}
    assert not heavy & loaded, heavy & loaded


def test_report_reusability_option(tmp_path, small):
    qp, rd = small
    code, out, err = irinnov("report", qp, rd, "-o", "out", "-m", "AP", "U@10", "--reusability", "2", "--trials", "10",
                             "-B", "50", cwd=tmp_path)
    assert code == 0, err
    s = pd.read_csv(tmp_path / "out" / "reusability.csv", index_col=0)
    assert list(s.index) == ["AP", "U@10"] and {"max_drop", "mean_change", "tau", "tau_condensed"} <= set(s.columns)
    assert '<section id="reusability">' in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert_one_line_error(*irinnov("report", qp, rd, "-o", "out2", "--reusability", "--workers", "1", cwd=tmp_path),
                          "--reusability", exit_code=2)


def test_measure_lists_in_compare_and_reusability(tmp_path, small):
    "`-m A B C` is a list in `compare` and `reusability` as in `evaluate`, before or after the files."
    qp, rd = small
    code, out, err = irinnov("reusability", qp, rd, "-m", "AP", "U@10", "--pool-depth", "2", "--format", "csv", cwd=tmp_path)
    assert code == 0, err
    assert [l.split(",")[0] for l in out.splitlines()[1:]] == ["AP", "U@10"]
    assert irinnov("reusability", "-m", "AP", "U@10", qp, rd, "--pool-depth", "2", "--format", "csv", cwd=tmp_path)[1] == out
    code, out2, err = irinnov("compare", qp, rd, "-m", "AP", "P@5", "--format", "csv", cwd=tmp_path)
    assert code == 0, err
    code, out3, err = irinnov("compare", qp, rd, "-m", "AP,P@5", "--format", "csv", cwd=tmp_path)
    assert out2 == out3
