"""Parity of irinnov.metrics with trec_eval: pytrec-eval-terrier on generated campaigns, and trec_eval's own test files."""
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from irinnov import metrics as M
from irinnov.trec import TrecFormatError, prepare, read_qrels, read_run

pytrec_eval = pytest.importorskip("pytrec_eval")

MIRROR = Path(os.environ.get("IRINNOV_MIRROR", Path(__file__).resolve().parents[2] / "shared" / "data"))
TREC_EVAL_TEST = MIRROR / "github" / "usnistgov" / "trec_eval" / "test"


def campaign(seed: int, n_sys: int = 6, n_top: int = 8, depth: int = 40, pool: int = 60, ties: float = 0.5):
    """A random campaign with everything trec_eval is touchy about.

    Heavy score ties (few distinct values), scores that differ only beyond float32 precision, doc ids that sort
    differently as strings and as numbers, short and empty lists, topics a system skips, unjudged documents,
    negative grades (-1, -2), topics with no relevant document, topics only in the runs."""
    rng = np.random.default_rng(seed)
    topics = [f"t{i}" for i in range(n_top)]
    docs = np.array([f"d{i}" for i in range(pool)] + [f"D{i}" for i in range(pool // 4)] + [f"d{i}x" for i in range(5)])
    q_rows = []
    for j, t in enumerate(topics):
        judged = rng.choice(len(docs), size=rng.integers(1, len(docs) // 2), replace=False)
        kind = j % 4
        for i, d in enumerate(judged):
            if i == 0:        # every topic has a grade >= 0 (trec_eval crashes on a topic whose grades are all < 0)
                g = 0
            elif kind == 3:     # a topic with no relevant document
                g = rng.choice([0, -2])
            else:
                g = rng.choice([-2, -1, 0, 0, 0, 1, 1, 2, 3])
            q_rows.append((t, docs[d], int(g)))
    qrels = pd.DataFrame(q_rows, columns=["query", "doc", "grade"])
    r_rows = []
    for s in range(n_sys):
        for t in topics + ["extra"]:
            if rng.random() < 0.15: continue            # system skips the topic
            n = int(rng.integers(0, depth + 1)) if rng.random() < 0.5 else depth
            if n == 0: continue
            chosen = rng.choice(len(docs), size=min(n, len(docs)), replace=False)
            if rng.random() < ties:
                base = rng.integers(0, 4, size=len(chosen)).astype(np.float64) / 4 + 0.1
            else:
                base = rng.random(len(chosen))
            # scores equal in float32, different in float64
            tiny = rng.random(len(chosen)) < 0.3
            score = base + np.where(tiny, rng.integers(1, 5, size=len(chosen)) * 1e-12, 0.0)
            for d, sc in zip(chosen, score):
                r_rows.append((f"sys{s}", t, docs[d], float(sc)))
    runs = pd.DataFrame(r_rows, columns=["system", "query", "doc", "score"])
    return runs, qrels


def pytrec(runs, qrels, measures, threshold=1):
    "pytrec_eval's value per (system, topic), as a dict {(system, topic, measure): value}."
    qd = {}
    for q, d, g in qrels.itertuples(index=False): qd.setdefault(q, {})[d] = int(g)
    ev = pytrec_eval.RelevanceEvaluator(qd, set(measures), relevance_level=threshold)
    out = {}
    for s, g in runs.groupby("system"):
        rd = {}
        for q, d, sc in g[["query", "doc", "score"]].itertuples(index=False): rd.setdefault(q, {})[d] = float(sc)
        for q, vals in ev.evaluate(rd).items():
            for m, v in vals.items(): out[(s, q, m)] = v
    return out


def ours(c, threshold=1, k=5):
    "Our tables keyed by trec_eval's measure names."
    t = threshold
    return {f"P_{k}": M.precision(c, k=k, threshold=t), f"recall_{k}": M.recall(c, k=k, threshold=t),
            "map": M.average_precision(c, threshold=t), f"map_cut_{k}": M.average_precision(c, depth=k, threshold=t),
            "ndcg": M.ndcg(c), f"ndcg_cut_{k}": M.ndcg(c, k=k), "recip_rank": M.reciprocal_rank(c, threshold=t),
            "Rprec": M.r_precision(c, threshold=t), "bpref": M.bpref(c, threshold=t)}


def check_parity(runs, qrels, threshold=1, k=5):
    c = prepare(runs, qrels)
    tabs = ours(c, threshold, k)
    measures = [m.replace(f"_{k}", f".{k}") if m[-1].isdigit() else m for m in tabs]
    ref = pytrec(runs, qrels, measures, threshold)
    # a column for every qrels topic (trec_eval -c); a topic a run skips, or without a relevant document, scores 0
    want = sorted(qrels["query"].unique())
    n = 0
    for m, tab in tabs.items():
        assert tab.columns.tolist() == want, m
        assert tab.index.tolist() == sorted(runs.system.unique())
        for s in tab.index:
            for q in tab.columns:
                expected = ref.get((s, q, m), 0.0)
                assert abs(tab.loc[s, q] - expected) <= 1e-12, (m, s, q, tab.loc[s, q], expected)
                n += 1
    return n


@pytest.mark.parametrize("seed", range(6))
def test_parity_seeded(seed):
    runs, qrels = campaign(seed, ties=[0.0, 0.5, 1.0][seed % 3])
    assert check_parity(runs, qrels, k=[1, 5, 10][seed % 3]) > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), threshold=st.sampled_from([1, 2]), k=st.sampled_from([1, 3, 10, 50]),
       depth=st.integers(1, 30), ties=st.floats(0, 1))
def test_parity_property(seed, threshold, k, depth, ties):
    runs, qrels = campaign(seed, n_sys=3, n_top=5, depth=depth, pool=30, ties=ties)
    check_parity(runs, qrels, threshold=threshold, k=k)


def test_float32_ties_decide():
    # a's score is larger in float64 but equal in float32: trec_eval's float order puts c (doc id desc) first
    runs = pd.DataFrame({"system": "s", "query": "1", "doc": ["a", "c", "b"], "score": [0.1 + 1e-12, 0.1, 0.5]})
    qrels = pd.DataFrame({"query": "1", "doc": ["a", "b", "c"], "grade": [1, 0, 0]})
    assert M.reciprocal_rank(runs, qrels).loc["s", "1"] == 1 / 3
    assert pytrec(runs, qrels, ["recip_rank"])[("s", "1", "recip_rank")] == 1 / 3
    c64 = prepare(runs, qrels, score_dtype="float64")
    assert M.reciprocal_rank(c64).loc["s", "1"] == 1 / 2


def brute_rbp(ranked_grades, p, threshold=1, graded_max=None):
    total = 0.0
    for i, g in enumerate(ranked_grades):
        gain = (max(g, 0) / graded_max) if graded_max else float(g >= threshold)
        total += (1 - p) * p ** i * gain
    return total


@pytest.mark.parametrize("seed", range(3))
def test_rbp_brute_force(seed):
    runs, qrels = campaign(seed)
    c = prepare(runs, qrels)
    r = c.runs
    grade = {(q, d): g for q, d, g in qrels.itertuples(index=False)}
    top = qrels.grade.max()
    for graded in (False, True):
        tab = M.rbp(c, p=0.7, graded=graded)
        for (s, q), g in r[r["query"].isin(tab.columns)].groupby(["system", "query"]):
            gs = [grade.get((q, d), 0) for d in g.sort_values("rank").doc]
            assert abs(tab.loc[s, q] - brute_rbp(gs, 0.7, graded_max=top if graded else None)) < 1e-12
        # systems that skip a topic score 0 there
        have = set(zip(r.system, r["query"]))
        for s in tab.index:
            for q in tab.columns:
                if (s, q) not in have: assert tab.loc[s, q] == 0


def test_evaluate_matches_functions():
    runs, qrels = campaign(3)
    c = prepare(runs, qrels)
    e = M.evaluate(c, measures=["AP", "P@5", "P(rel=2)@5", "nDCG@10", "RR", "R-prec", "bpref", "RBP(p=0.5)", "R@20",
                                "map_cut_10"])
    # the names as typed, in the order given (not all are trec_eval's)
    assert e.columns.tolist() == ["AP", "P@5", "P(rel=2)@5", "nDCG@10", "RR", "R-prec", "bpref", "RBP(p=0.5)",
                                  "R@20", "map_cut_10"]
    np.testing.assert_allclose(e["P(rel=2)@5"], M.precision(c, k=5, threshold=2).mean(axis=1), atol=1e-15)
    np.testing.assert_allclose(e["map_cut_10"], M.average_precision(c, depth=10).mean(axis=1), atol=1e-15)
    pt = M.evaluate(c, measures=["AP", "bpref"], per_topic=True, trec_eval_version="10")    # 10.0 -c -q: every topic
    np.testing.assert_allclose(pt["AP"].unstack().values, M.average_precision(c).values, atol=1e-15)
    # RR@3 = RR on each list's top 3
    np.testing.assert_allclose(M.evaluate(c, measures=["RR@3"])["RR@3"],
                               M.reciprocal_rank(c.truncate(3)).mean(axis=1), atol=1e-15)


def test_bad_arguments():
    runs, qrels = campaign(0)
    with pytest.raises(ValueError, match="k must"): M.precision(runs, qrels, k=0)
    with pytest.raises(TypeError, match="threshold"): M.average_precision(runs, qrels, threshold=0.5)
    with pytest.raises(ValueError, match="≥ 0"): M.average_precision(runs, qrels, threshold=-1)
    assert M.average_precision(runs, qrels, threshold=0).shape[0] > 0      # level 0, as trec_eval -l0 (Web 2012 parity)
    with pytest.raises(ValueError, match="p must"): M.rbp(runs, qrels, p=0)
    with pytest.raises(ValueError, match="qrels are required"): M.ndcg(runs)
    with pytest.raises(ValueError, match="unknown measure"): M.evaluate(runs, qrels, measures=["ERRR@10"])
    with pytest.raises(ValueError, match="trec_eval_version"): M.evaluate(runs, qrels, trec_eval_version="8")


# ---- trec_eval's own test suite -------------------------------------------------------------------------------

def _trec_eval_out(path):
    "trec_eval output lines `measure  query  value` as {(measure, query): float}."
    out = {}
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            try: out[(parts[0], parts[1])] = float(parts[2])
            except ValueError: pass
    return out


def _six_columns(tmp_path):
    """results.trunc with the junk trec_eval ignores after column 6 cut off.

    trec_eval reads the first six fields of a run line and ignores the rest; irinnov refuses such a line (a wrong
    column count is an error naming the file and line), so the test strips the junk itself."""
    src = TREC_EVAL_TEST / "results.trunc"
    with pytest.raises(TrecFormatError, match=r"results\.trunc:1: expected 6 columns in a run line, found 9"):
        read_run(src, tag=True)
    f = tmp_path / "results.trunc6"
    f.write_text("".join(" ".join(l.split()[:6]) + "\n" for l in src.read_text().splitlines() if l.strip()))
    return f


# Makefile `quicktest` of trec_eval: output file, run file, qrels file, relevance level (-l), depth (-M)
QUICKTEST = [("out.test.aq", "results.test", "qrels.test", 1, None),        # -a -q
             ("out.test.aqc", "results.trunc", "qrels.test", 1, None),      # -a -q -c, a run missing topic 302
             ("out.test.aqcM", "results.trunc", "qrels.test", 1, 100),      # -a -q -c -M100
             ("out.test.aql", "results.test", "qrels.rel_level", 2, None)]  # -a -q -l2, grades -1..4


@pytest.mark.skipif(not (TREC_EVAL_TEST / "out.test.aq").exists(), reason="trec_eval test files not in the mirror")
@pytest.mark.parametrize("out, results, qrels, level, depth", QUICKTEST)
def test_trec_eval_test_suite(out, results, qrels, level, depth, tmp_path):
    run_file = _six_columns(tmp_path) if results == "results.trunc" else TREC_EVAL_TEST / results
    c = prepare(read_run(run_file, tag=True), read_qrels(TREC_EVAL_TEST / qrels)).truncate(depth)
    expected = _trec_eval_out(TREC_EVAL_TEST / out)
    t = level
    tabs = {"map": M.average_precision(c, threshold=t), "Rprec": M.r_precision(c, threshold=t),
            "bpref": M.bpref(c, threshold=t), "recip_rank": M.reciprocal_rank(c, threshold=t), "ndcg": M.ndcg(c)}
    for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000):
        tabs[f"P_{k}"] = M.precision(c, k=k, threshold=t)
        tabs[f"recall_{k}"] = M.recall(c, k=k, threshold=t)
        tabs[f"map_cut_{k}"] = M.average_precision(c, depth=k, threshold=t)
        tabs[f"ndcg_cut_{k}"] = M.ndcg(c, k=k)
    checked = 0
    for m, tab in tabs.items():
        assert tab.columns.tolist() == ["301", "302", "303"], m       # -c: topic 302 counts even when the run skips it
        for q in list(tab.columns) + ["all"]:
            value = tab.loc["STANDARD"].mean() if q == "all" else tab.loc["STANDARD", q]
            assert abs(value - expected[(m, q)]) <= 5e-5 + 1e-12, (m, q, value, expected[(m, q)])
            checked += 1
    assert checked == 4 * len(tabs) == 164       # three topics and the mean, for each of the 41 measures


@pytest.mark.skipif(not (TREC_EVAL_TEST / "out.test").exists(), reason="trec_eval test files not in the mirror")
def test_trec_eval_default_summary():
    "`trec_eval qrels.test results.test` (no options): the summary lines, to 4 decimals."
    c = prepare(read_run(TREC_EVAL_TEST / "results.test", tag=True), read_qrels(TREC_EVAL_TEST / "qrels.test"))
    summary = _trec_eval_out(TREC_EVAL_TEST / "out.test")
    got = {"map": M.average_precision(c), "Rprec": M.r_precision(c), "bpref": M.bpref(c),
           "recip_rank": M.reciprocal_rank(c), **{f"P_{k}": M.precision(c, k=k) for k in (5, 10, 15, 20, 30, 100, 200,
                                                                                       500, 1000)}}
    for m, tab in got.items():
        assert round(tab.loc["STANDARD"].mean(), 4) == summary[(m, "all")], m


# ---- TREC-COVID round 1: pytrec_eval cell by cell, and the official leaderboard ---------------------------------

needs_covid = pytest.mark.skipif(not (MIRROR / "github" / "castorini" / "TREC-COVID").is_dir(),
                                 reason="TREC-COVID round 1 not in the mirror")


@pytest.fixture(scope="module")
def covid():
    from irinnov.datasets import load
    return load("trec-covid-round1", mirror=MIRROR, progress=False)


@needs_covid
def test_trec_covid_parity_with_pytrec_eval(covid):
    runs, qrels, c = covid.runs, covid.qrels, covid.campaign()
    qd = {}
    for q, d, g in zip(qrels["query"].tolist(), qrels.doc.tolist(), qrels.grade.tolist()): qd.setdefault(q, {})[d] = g
    rd = {}
    for s, q, d, sc in zip(*(runs[k].tolist() for k in ("system", "query", "doc", "score"))):
        rd.setdefault(s, {}).setdefault(q, {})[d] = sc
    tabs = {"map": M.average_precision(c), "P_5": M.precision(c, k=5), "ndcg_cut_10": M.ndcg(c, k=10),
            "bpref": M.bpref(c), "ndcg": M.ndcg(c), "recip_rank": M.reciprocal_rank(c), "Rprec": M.r_precision(c),
            "recall_1000": M.recall(c, k=1000), "map_cut_100": M.average_precision(c, depth=100)}
    ev = pytrec_eval.RelevanceEvaluator(qd, set(tabs))
    res = {s: ev.evaluate(r) for s, r in rd.items()}
    cells = 0
    for m, tab in tabs.items():
        ref = np.array([[res[s].get(q, {}).get(m, 0.0) for q in tab.columns] for s in tab.index])
        assert tab.shape == (143, 30)
        np.testing.assert_allclose(tab.to_numpy(), ref, rtol=0, atol=1e-12, err_msg=m)
        cells += ref.size
    assert cells == 9 * 143 * 30


@needs_covid
def test_trec_covid_leaderboard(covid):
    "The official leaderboard (trec_eval -c -M1000, 4 decimals): MAP, P@5, nDCG@10, bpref for all 143 runs."
    cols = ["AP", "P@5", "nDCG@10", "bpref"]
    ours = M.evaluate(covid.campaign(), measures=cols)[cols]
    official = covid.meta[["MAP", "p@5", "ndcg@10", "bpref"]].set_axis(ours.columns, axis=1).loc[ours.index]
    assert len(ours) == 143
    np.testing.assert_array_equal(ours.round(4).to_numpy(), official.to_numpy())


def test_dict_of_dicts_and_paths(tmp_path):
    "pytrec_eval/ranx-style {query: {doc: score}} and {query: {doc: grade}}, and file paths, give the frames' values."
    runs, qrels = campaign(11, n_sys=1)
    run_d, qrels_d = {}, {}
    for q, d, s in runs[["query", "doc", "score"]].itertuples(index=False): run_d.setdefault(q, {})[d] = s
    for q, d, g in qrels.itertuples(index=False): qrels_d.setdefault(q, {})[d] = int(g)
    names = ["map", "P.5,10", "ndcg_cut.10", "Rprec", "bpref", "recip_rank", "num_rel_ret"]
    want = M.evaluate(runs, qrels, names, complete=False)
    got = M.evaluate(run_d, qrels_d, names, complete=False)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=0, atol=1e-15)
    # the dicts against pytrec_eval itself, per topic
    ev = pytrec_eval.RelevanceEvaluator(qrels_d, {"map", "P.5"})
    per = M.evaluate(run_d, qrels_d, ["map", "P_5"], per_topic=True)
    for q, vals in ev.evaluate(run_d).items():
        assert abs(per.loc[("run", q), "map"] - vals["map"]) <= 1e-12 and abs(per.loc[("run", q), "P_5"] - vals["P_5"]) <= 1e-12
    rp, qp = tmp_path / "run.txt", tmp_path / "qrels.txt"
    rp.write_text("".join(f"{q} Q0 {d} {i} {s!r} x\n" for i, (q, d, s) in enumerate(runs[["query", "doc", "score"]].itertuples(index=False))))
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    np.testing.assert_allclose(M.evaluate(str(rp), str(qp), names, complete=False).to_numpy(), want.to_numpy(), atol=1e-15)
    with pytest.raises(ValueError, match="q1|score|NaN|nan"):
        M.evaluate({"q1": {"a": float("nan")}}, qrels_d, ["map"])


@pytest.mark.filterwarnings("ignore:runs without every one")
@pytest.mark.parametrize("seed", range(4))
def test_dict_of_dicts_against_pytrec_eval(seed):
    "Random {query: {doc: score}} and {query: {doc: grade}} dicts against pytrec_eval, per topic: float and integer "
    "scores with many ties (equal as float32 too), lists of uneven length, unjudged documents, documents judged only "
    "for another topic, run topics missing from the qrels and qrels topics missing from the run, grades 0-3."
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(300)] + [f"D{i}x" for i in range(40)]
    run_d, qrels_d = {}, {}
    for t in range(60):
        q = f"q{t}"
        if t % 7 != 3:          # a qrels topic the run skips every seventh
            judged = rng.choice(len(pool), size=int(rng.integers(1, 30)), replace=False)
            qrels_d[q] = {pool[d]: int(rng.integers(0, 4)) for d in judged}
        if t % 11 != 5:         # a run topic without judgments every eleventh (t = 5, 16, ...)
            docs = rng.choice(len(pool), size=int(rng.integers(1, 120)), replace=False)
            if t % 3 == 0: scores = rng.integers(0, 5, len(docs)).tolist()                   # integer scores
            else: scores = (rng.integers(0, 8, len(docs)) / 8 + np.where(rng.random(len(docs)) < 0.3, 1e-12, 0)).tolist()
            run_d[q] = dict(zip((pool[d] for d in docs), scores))
    run_d["extra"] = {"d1": 1.0, "d2": 1.0}
    names = {"map": "map", "ndcg_cut_10": "ndcg_cut_10", "P_5": "P_5", "recip_rank": "recip_rank"}
    per = M.evaluate(run_d, qrels_d, list(names), per_topic=True)
    got = pytrec_eval.RelevanceEvaluator(qrels_d, set(names)).evaluate(run_d)
    assert got and set(got) <= {q for _, q in per.index}
    for q, vals in got.items():
        for m in names:
            assert abs(per.loc[("run", q), m] - vals[m]) <= 1e-12, (q, m)


def test_version_10_reads_comment_lines(tmp_path):
    "trec_eval 10.0 skips '#' lines in runs and qrels: so does evaluate(path, path, trec_eval_version='10'); 9.0.x refuses them."
    rp, qp = tmp_path / "run.txt", tmp_path / "qrels.txt"
    rp.write_text("# a comment\n1 Q0 a 1 2.0 x\n1 Q0 b 2 1.0 x\n")
    qp.write_text("# judged by hand\n1 0 a 0\n1 0 b 1\n")
    assert M.evaluate(str(rp), str(qp), ["map"], trec_eval_version="10").loc[:, "map"].tolist() == [0.5]
    with pytest.raises(ValueError, match="run.txt:1"):
        M.evaluate(str(rp), str(qp), ["map"])
