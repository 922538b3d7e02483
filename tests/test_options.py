"""The run-wide options (relevance level, depth, -c, trec_eval version) are one `EvalOptions`, validated by one rule,
and reach every measure alike: the command line in a subprocess against the library called with the same options."""
import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irinnov import metrics
from irinnov.conventions import EvalOptions
from irinnov.measures import parse_measure
from irinnov.trec import prepare, read_qrels, read_runs

IRINNOV = Path(sys.executable).with_name("irinnov")


def irinnov(*args, cwd):
    e = {k: v for k, v in os.environ.items() if k not in ("IRINNOV_DEBUG",)}
    e["IRINNOV_PROGRESS"] = "0"
    r = subprocess.run([str(IRINNOV), *map(str, args)], cwd=cwd, env=e, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout, r.stderr


def campaign_files(tmp: Path, seed: int = 0, S: int = 6, Q: int = 5, D: int = 25):
    "A graded campaign as TREC files (grades 0-3, every run answering every topic, lists of varying length)."
    rng = np.random.default_rng(seed)
    (tmp / "runs").mkdir()
    qrels = [(f"t{q}", f"d{d:02d}", int(rng.integers(0, 4))) for q in range(Q) for d in range(40) if rng.random() < 0.6]
    (tmp / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels))
    for s in range(S):
        lines = []
        for q in range(Q):
            docs = rng.permutation(40)[:int(rng.integers(5, D))]
            lines += [f"t{q} Q0 d{d:02d} {i} {100 - i + rng.random():.6f} s{s}\n" for i, d in enumerate(docs, 1)]
        (tmp / "runs" / f"input.s{s}").write_text("".join(lines))
    return tmp / "qrels.txt", tmp / "runs"


def all_lines(out: str) -> pd.DataFrame:
    df = pd.read_csv(io.StringIO(out), sep="\t", dtype={"system": str, "query": str})
    return df[df["query"] == "all"].pivot(index="system", columns="measure", values="value").sort_index()


def assert_means(got: pd.DataFrame, column: str, values: pd.Series):
    "The command line's means in `column` equal the library's (a Series indexed by system), to 1e-12."
    np.testing.assert_allclose(got[column].to_numpy(), values.sort_index().to_numpy(), rtol=0, atol=1e-12, err_msg=column)


def library(qp, rd, names, threshold):
    "Each measure's system means as the library gives them at relevance level `threshold`."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = prepare(read_runs(sorted(rd.iterdir())), read_qrels(qp))
        out = {}
        for n in names:
            m = parse_measure(n, threshold=threshold)
            if m.family == "classic":      # trec_eval's average: the topics the run answers (all of them here)
                out[m.name] = metrics.evaluate(c, measures=[n], threshold=threshold, complete=False)[n]
            else: out[m.name] = m(c).mean(axis=1)
    return out


def test_evaluate_level_reaches_every_measure(tmp_path):
    "`irinnov evaluate -l 2 -m U RPP ASL RIC AP` equals the library with threshold=2, for every measure."
    qp, rd = campaign_files(tmp_path)
    names = ["U", "RPP", "ASL", "RIC", "AP"]
    code, out, err = irinnov("evaluate", "-l", "2", "-m", *names, "--format", "tsv", qp, rd, cwd=tmp_path)
    assert code == 0, err
    got = all_lines(out)
    want = library(qp, rd, names, 2)
    assert sorted(got.columns) == sorted(["AP", "U(rel=2)", "RPP(rel=2)", "ASL(rel=2)", "RIC(rel=2)"])
    for name, values in want.items(): assert_means(got, "AP" if name == "AP(rel=2)" else name, values)
    # the level changes the values: at grade >= 1 they differ
    at1 = library(qp, rd, ["U", "AP"], 1)
    assert not np.allclose(at1["U"].sort_index().to_numpy(), got["U(rel=2)"].to_numpy())


def test_a_measure_keeps_its_own_rel(tmp_path):
    "`-l 2 -m 'U(rel=1)' 'P(rel=3)@5'`: a measure's own rel= overrides the run-wide level."
    qp, rd = campaign_files(tmp_path, seed=1)
    code, out, err = irinnov("evaluate", "-l", "2", "-m", "U(rel=1)", "P(rel=3)@5", "U", "--format", "tsv", qp, rd, cwd=tmp_path)
    assert code == 0, err
    got = all_lines(out)
    lib1, lib3 = library(qp, rd, ["U"], 1), library(qp, rd, ["P(rel=3)@5"], 1)
    assert_means(got, "U", lib1["U"])
    assert_means(got, "P(rel=3)@5", lib3["P(rel=3)@5"])
    assert "U(rel=2)" in got.columns


def test_level_zero_is_trec_evals(tmp_path):
    "-l 0 is accepted, as trec_eval accepts it: every judged document of grade >= 0 is relevant."
    qp, rd = campaign_files(tmp_path, seed=2)
    code, out, err = irinnov("evaluate", "-l", "0", "-m", "map", "P.5", "U", "--format", "tsv", qp, rd, cwd=tmp_path)
    assert code == 0, err
    got = all_lines(out)
    want = library(qp, rd, ["map", "P_5", "U"], 0)
    assert_means(got, "map", want["AP(rel=0)"])
    assert_means(got, "U(rel=0)", want["U(rel=0)"])
    for bad in ("-1", "1.5", "two"):
        code, out, err = irinnov("evaluate", "-l", bad, qp, rd, cwd=tmp_path)
        assert code == 2 and err.startswith("irinnov: error: ") and "relevance level" in err and err.count("\n") == 1


def test_depth_reaches_every_measure(tmp_path):
    "-M 5 cuts every list before every measure, as `truncate(5)` does in the library."
    qp, rd = campaign_files(tmp_path, seed=3)
    code, out, err = irinnov("evaluate", "-M", "5", "-m", "AP", "U", "RIC", "--format", "tsv", qp, rd, cwd=tmp_path)
    assert code == 0, err
    got = all_lines(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = prepare(read_runs(sorted(rd.iterdir())), read_qrels(qp)).truncate(5)
        for n in ("U", "RIC"): assert_means(got, n, parse_measure(n)(c).mean(axis=1))
        assert_means(got, "AP", metrics.evaluate(c, ["AP"], complete=False)["AP"])


def test_report_takes_the_level(tmp_path):
    "`irinnov report -l 2` exists and computes every measure at grade >= 2."
    qp, rd = campaign_files(tmp_path, seed=4)
    code, out, err = irinnov("report", qp, rd, "-o", "out", "-l", "2", "-m", "AP", "U", "RIC", "--permutations", "20",
                             "--trials", "20", "--format", "csv", cwd=tmp_path)
    assert code == 0, err
    systems = pd.read_csv(tmp_path / "out" / "systems.csv").set_index("system").sort_index()
    want = library(qp, rd, ["U", "RIC"], 2)
    for name in ("U(rel=2)", "RIC(rel=2)"): assert_means(systems, name, want[name])
    assert "AP(rel=2)" in systems.columns


def test_one_rule_for_the_options():
    "EvalOptions holds trec_eval's rule (levels from 0, depth >= 0 or whole lists: 0 empties every list), with the argument named."
    assert EvalOptions(threshold=0).threshold == 0 and EvalOptions(depth=None).depth is None
    assert EvalOptions(depth=0).depth == 0 and EvalOptions(judged_only=True).judged_only
    for kw, msg in (({"threshold": -1}, "threshold"), ({"threshold": 1.5}, "threshold"), ({"depth": -1}, "depth"),
                    ({"judged_only": "yes"}, "judged_only"),
                    ({"trec_eval": "8"}, "trec_eval_version"), ({"complete": 1}, "complete")):
        with pytest.raises((TypeError, ValueError), match=msg): EvalOptions(**kw)
    with pytest.raises(Exception): EvalOptions().threshold = 2          # frozen: passed down, never changed on the way
