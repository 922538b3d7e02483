"""Reading TREC files: bad input, compression, naming, the trec_eval order, other inputs, campaign consistency."""
import functools
import gzip
from collections import namedtuple
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from irinnov.trec import (NO_GRADE, PAD, UNJUDGED, TrecFormatError, as_qrels, as_runs, order_runs, prepare,
                          read_qrels, read_run, read_runs, system_name, tie_report, write_run)


def write(path: Path, text: str, gz: bool = False) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


RUN = "1 Q0 a 1 0.5 tagA\n1 Q0 b 2 0.5 tagA\n1 Q0 c 3 0.9 tagA\n2 Q0 a 1 3 tagA\n"


# ---- bad input: the file and the line ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, where, what", [
    ("1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4\n", ":2:", "expected 6 columns"),
    ("1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4 t extra\n", ":2:", "expected 6 columns"),
    ("1 Q0 a 1 0.5 t\n\n1 Q0 b 2 high t\n", ":3:", "is not a number"),
    ("1 Q0 a 1 nan t\n", ":1:", "NaN"),
    ("1 Q0 a 1 0.5 t\n1 Q0 b 2 NaN t\n", ":2:", "NaN"),
    ("1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4 t\n1 Q0 a 3 0.3 t\n", ":3:", "duplicate run entry"),
])
def test_bad_run_lines(tmp_path, text, where, what):
    for gz in (False, True):
        f = write(tmp_path / ("bad.gz" if gz else "bad"), text, gz)
        with pytest.raises(TrecFormatError) as e: read_run(f)
        assert f"{f}{where}" in str(e.value) and what in str(e.value)


def test_empty_run(tmp_path):
    for text in ("", "\n\n  \n"):
        with pytest.raises(TrecFormatError, match="empty run file"): read_run(write(tmp_path / "e", text))
    with pytest.raises(FileNotFoundError): read_run(tmp_path / "missing")


def test_duplicates_first(tmp_path):
    f = write(tmp_path / "d", "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4 t\n1 Q0 a 3 0.3 t\n")
    df = read_run(f, duplicates="first")
    assert df.doc.tolist() == ["a", "b"] and df.score.tolist() == [0.5, 0.4]
    with pytest.raises(ValueError, match="duplicates"): read_run(f, duplicates="last")


@pytest.mark.parametrize("text, where, what", [
    ("1 0 a 1\n1 0 b 1.5\n", ":2:", "not an integer"),
    ("1 0 a 1\n1 0 b x\n", ":2:", "not an integer"),
    ("1 0 a 1\n1 0 b\n", ":2:", "expected 4 columns"),
    ("1 0 a 1\n1 0 b 0\n1 0 a 2\n", ":3:", "judged twice with different grades"),
])
def test_bad_qrels(tmp_path, text, where, what):
    f = write(tmp_path / "q", text)
    with pytest.raises(TrecFormatError) as e: read_qrels(f)
    assert f"{f}{where}" in str(e.value) and what in str(e.value)


def test_qrels_forms(tmp_path):
    f = write(tmp_path / "q.gz", "1 0 a 2\n1 Q0 b 0\n1 0.5 c -2\n2\t0   d 1\n", gz=True)
    q = read_qrels(f)
    assert q.to_dict("list") == {"query": ["1", "1", "1", "2"], "doc": list("abcd"), "grade": [2, 0, -2, 1]}
    with pytest.raises(TrecFormatError, match=r"r:2: query '1', doc 'a' judged twice \(lines 1, 2\)"):
        read_qrels(write(tmp_path / "r", "1 0 a 1\n1 0 a 1\n"))       # trec_eval stops on a repeated line too
    s = read_qrels(write(tmp_path / "s", "1 1 a 1\n1 2 a 0\n"), subtopics=True)
    assert s.subtopic.tolist() == ["1", "2"]
    with pytest.raises(TrecFormatError, match="empty qrels"): read_qrels(write(tmp_path / "e", ""))


# ---- compression, names, tags -----------------------------------------------------------------------------------

def test_gz_equals_plain(tmp_path):
    a = read_run(write(tmp_path / "input.x", RUN))
    b = read_run(write(tmp_path / "input.x.gz", RUN, gz=True))
    pd.testing.assert_frame_equal(a, b)
    # gzip is detected by content, not by name
    c = read_run(write(tmp_path / "input.x.txt", RUN, gz=True), system="x")
    pd.testing.assert_frame_equal(a, c)


def test_system_names(tmp_path):
    assert system_name("runs/input.bm25.gz") == "bm25"
    assert system_name("runs/input.bm25") == "bm25"
    assert system_name("runs/BERT") == "BERT"
    assert system_name("x/run.gz") == "run"
    assert system_name("input.") == "input."
    f = write(tmp_path / "input.mine.gz", RUN, gz=True)
    assert read_run(f).system.unique().tolist() == ["mine"]
    assert read_run(f, system="other").system.unique().tolist() == ["other"]
    assert read_run(f, tag=True).system.unique().tolist() == ["tagA"]
    with pytest.raises(ValueError, match="either system= or tag"): read_run(f, system="x", tag=True)


def test_whitespace_variants(tmp_path):
    f = write(tmp_path / "w", "1\tQ0\ta\t1\t0.5\tt\r\n  1 Q0  b 2 0.25 t  \n")
    assert read_run(f).doc.tolist() == ["a", "b"]
    ok = {"tabs": "1\tQ0\ta\t1\t0.5\tt\n1\tQ0\tb\t2\t0.25\tt\n",
          "mixed": "1\tQ0 a\t1 0.5\tt\n1 Q0 b 2 0.25 t\n",
          "crlf": "1 Q0 a 1 0.5 t\r\n1 Q0 b 2 0.25 t\r\n",
          "blank lines": "\n1 Q0 a 1 0.5 t\n\n\n1 Q0 b 2 0.25 t",
          "tabs and blank": "1\tQ0\ta\t1\t0.5\tt\n \n1\tQ0\tb\t2\t0.25\tt\n"}
    for name, text in ok.items():
        r = read_run(write(tmp_path / "ok", text), tag=True)
        assert r.doc.tolist() == ["a", "b"] and r.system.tolist() == ["t", "t"] and r.score.tolist() == [0.5, 0.25], name
    # a repeated separator must not hide a missing column (an empty field would shift the columns)
    bad = {"double tab": "1\tQ0\t\ta\t1\t0.5\n", "double space": "1 Q0  a 1 0.5\n",
           "trailing tab": "1\tQ0\ta\t1\t0.5\t\n", "leading tab": "\t1\tQ0\ta\t1\t0.5\n",
           "trailing space": "1 Q0 a 1 0.5 \n", "leading space": " 1 Q0 a 1 0.5\n"}
    for name, text in bad.items():
        f = write(tmp_path / "bad", "1 Q0 z 1 0.9 t\n" + text)
        with pytest.raises(TrecFormatError, match=r"bad:2: expected 6 columns"): read_run(f)


def test_read_runs_dir_glob_list(tmp_path):
    d = tmp_path / "runs"; d.mkdir()
    write(d / "input.a.gz", RUN, gz=True)
    write(d / "input.b", RUN.replace("tagA", "tagB"))
    write(d / ".hidden", "junk")
    by_dir = read_runs(d)
    assert sorted(by_dir.system.unique()) == ["a", "b"] and len(by_dir) == 8
    assert sorted(read_runs(str(d / "input.*")).system.unique()) == ["a", "b"]
    assert sorted(read_runs([d / "input.a.gz"]).system.unique()) == ["a"]
    assert sorted(read_runs(d, tag=True).system.unique()) == ["tagA", "tagB"]
    write(d / "a", RUN)      # gives the system name "a" a second time
    with pytest.raises(ValueError, match="already taken"): read_runs(d)
    with pytest.raises(FileNotFoundError): read_runs(str(tmp_path / "nothing*"))


def test_write_run_round_trip(tmp_path):
    runs, _ = random_campaign(1)
    for name in ("out", "out.gz"):
        f = write_run(runs, tmp_path / name)
        back = read_run(f, tag=True)
        key = ["system", "query", "doc"]
        pd.testing.assert_frame_equal(back.sort_values(key).reset_index(drop=True),
                                      runs.sort_values(key).reset_index(drop=True), check_dtype=False)
        # the file is in trec_eval order with ranks 1..n per list
        lines = [l.split() for l in (gzip.decompress(f.read_bytes()) if name.endswith(".gz") else f.read_bytes()).decode().splitlines()]
        ordered = order_runs(runs)
        assert [l[2] for l in lines] == ordered.doc.tolist()
        assert [int(l[3]) for l in lines] == ordered["rank"].tolist()


# ---- the trec_eval order ----------------------------------------------------------------------------------------

def trec_eval_cmp(a, b):
    "trec_eval's comp_sim_docno on (float32 score, doc bytes): score desc, then doc id desc (strcmp)."
    if a[0] > b[0]: return -1
    if a[0] < b[0]: return 1
    da, db = a[1].encode(), b[1].encode()
    return (db > da) - (db < da)


def random_campaign(seed, n_sys=4, n_top=5, depth=30):
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(50)] + [f"D{i}" for i in range(10)] + ["d1x", "d1y", "é1", "e1"]
    rows = []
    for s in range(n_sys):
        for t in range(n_top):
            n = int(rng.integers(1, depth))
            chosen = rng.choice(len(docs), size=n, replace=False)
            base = rng.integers(0, 5, size=n) / 3.0
            score = base + np.where(rng.random(n) < 0.3, 1e-12, 0.0) - np.where(rng.random(n) < 0.2, base, 0)
            score = np.where(rng.random(n) < 0.1, -score, score)
            rows += [(f"s{s}", str(t + 1), docs[d], float(x)) for d, x in zip(chosen, score)]
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([(str(t + 1), docs[d], int(rng.choice([-2, 0, 0, 1, 2])))
                          for t in range(n_top + 1) for d in rng.choice(len(docs), 25, replace=False)],
                         columns=["query", "doc", "grade"])
    return runs, qrels


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_order_is_trec_eval_order(seed):
    runs, _ = random_campaign(seed)
    ordered = order_runs(runs)
    for (s, q), g in runs.groupby(["system", "query"]):
        keys = [(np.float32(x), d) for d, x in zip(g.doc, g.score)]
        want = [d for _, d in sorted(keys, key=functools.cmp_to_key(trec_eval_cmp))]
        got = ordered[(ordered.system == s) & (ordered["query"] == q)]
        assert got.doc.tolist() == want
        assert got["rank"].tolist() == list(range(1, len(want) + 1))


def test_order_matches_pytrec_eval():
    "pytrec_eval's reciprocal rank of each document judged alone reveals its rank in trec_eval's order."
    pytrec_eval = pytest.importorskip("pytrec_eval")
    runs, _ = random_campaign(7, n_sys=2, n_top=3)
    ordered = order_runs(runs)
    for (s, q), g in ordered.groupby(["system", "query"]):
        run = {q: dict(zip(g.doc, g.score.astype(float)))}
        for d, r in zip(g.doc[:12], g["rank"][:12]):
            ev = pytrec_eval.RelevanceEvaluator({q: {d: 1}}, {"recip_rank"})
            assert ev.evaluate(run)[q]["recip_rank"] == pytest.approx(1 / r, abs=1e-15)


def test_tie_report():
    runs = pd.DataFrame({"system": ["a"] * 4 + ["b"] * 2, "query": ["1", "1", "1", "2", "1", "1"],
                         "doc": list("wxyzwx"), "score": [1.0, 1.0 + 1e-12, 2.0, 1.0, 3.0, 2.0]})
    rep = tie_report(runs)
    assert rep.loc["a"].tolist() == [4, 2, 0.5] and rep.loc["b", "tied_rows"] == 0
    assert tie_report(runs, score_dtype="float64").loc["a", "tied_rows"] == 0


# ---- other inputs ------------------------------------------------------------------------------------------------

def test_namedtuple_and_ir_measures_inputs():
    ScoredDoc = namedtuple("ScoredDoc", "query_id doc_id score")
    Qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")
    runs = as_runs([ScoredDoc("1", "a", 2), ScoredDoc("1", "b", 1.5)], system="bm25")
    assert runs.to_dict("list") == {"system": ["bm25"] * 2, "query": ["1", "1"], "doc": ["a", "b"], "score": [2.0, 1.5]}
    qrels = as_qrels([Qrel("1", "a", 1, "0"), Qrel("1", "b", 0, "0")])
    assert qrels.grade.tolist() == [1, 0]
    frame = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0], "run_id": ["x"]})
    assert as_runs(frame).system.tolist() == ["x"]
    both = as_runs({"s1": [ScoredDoc("1", "a", 1.0)], "s2": frame.drop(columns="run_id")})
    assert sorted(both.system) == ["s1", "s2"]
    c = prepare([ScoredDoc("1", "a", 2), ScoredDoc("1", "b", 1.5)], [Qrel("1", "b", 1, "0")])
    assert c.grades[0, 0].tolist() == [NO_GRADE, 1]
    with pytest.raises(ValueError, match="non-integer grade"): as_qrels([Qrel("1", "a", 1.5, "0")])
    with pytest.raises(ValueError, match="NaN"): as_runs([ScoredDoc("1", "a", float("nan"))])
    with pytest.raises(ValueError, match="empty"): as_runs([])


# ---- the campaign ------------------------------------------------------------------------------------------------

def test_campaign_arrays_match_ordered_runs():
    runs, qrels = random_campaign(3)
    c = prepare(runs, qrels)
    grade = {(q, d): g for q, d, g in qrels.itertuples(index=False)}
    judged = set(qrels.doc)
    o = c.runs
    assert o.columns.tolist()[:4] == ["system", "query", "doc", "score"]
    for (s, q), g in o[o["query"].isin(c.topics)].groupby(["system", "query"]):
        si, ti = list(c.systems).index(s), list(c.topics).index(q)
        n = len(g)
        assert c.lengths[si, ti] == n
        docs = [c.judged_docs[x] if x >= 0 else None for x in c.docs[si, ti, :n]]
        assert docs == [d if d in judged else None for d in g.doc]
        assert (c.docs[si, ti, :n] == UNJUDGED).sum() == sum(d not in judged for d in g.doc)
        assert c.grades[si, ti, :n].tolist() == [grade.get((q, d), NO_GRADE) for d in g.doc]
        assert (c.docs[si, ti, n:] == PAD).all() and (c.grades[si, ti, n:] == NO_GRADE).all()
    # qrels topic 6 has no list from anyone
    assert list(c.topics).count("6") == 1 and c.lengths[:, list(c.topics).index("6")].sum() == 0


def test_subset_and_truncate_consistent():
    from irinnov.metrics import average_precision, bpref, ndcg
    runs, qrels = random_campaign(5)
    c = prepare(runs, qrels)
    sub = c.subset(systems=["s2", "s0"], topics=["3", "1"])
    direct = prepare(runs[runs.system.isin(["s0", "s2"])], qrels[qrels["query"].isin(["1", "3"])])
    for f in (average_precision, bpref, ndcg):
        pd.testing.assert_frame_equal(f(sub).sort_index().sort_index(axis=1), f(direct), atol=1e-15)
    t = c.truncate(5)
    direct = prepare(order_runs(runs).query("rank <= 5")[["system", "query", "doc", "score"]], qrels)
    for f in (average_precision, bpref, ndcg):
        pd.testing.assert_frame_equal(f(t), f(direct), atol=1e-15)
    assert len(t.runs) == len(direct.runs)
    with pytest.raises(ValueError, match="depth"): c.truncate(0)
    with pytest.raises(ValueError, match="unknown topic"): c.subset(topics=["nope"])


def test_with_qrels_and_campaign_passthrough():
    runs, qrels = random_campaign(2)
    c = prepare(runs, qrels)
    assert prepare(c) is c
    with pytest.raises(ValueError, match="already holds"): prepare(c, qrels)
    fewer = qrels.iloc[::2]
    c2 = c.with_qrels(fewer)
    np.testing.assert_array_equal(c2.grades, prepare(runs, fewer).grades)


def test_prepare_refuses_qrels_without_judgments(tmp_path):
    "No judgment at all, in any form, is refused naming the qrels, as an empty qrels file is: every measure would be over no topic."
    from irinnov.trec import prepare_files
    runs = read_run(write(tmp_path / "input.r", RUN))
    qrels = read_qrels(write(tmp_path / "q", "1 0 a 1\n2 0 b 0\n"))
    with pytest.raises(TrecFormatError, match="empty qrels"): read_qrels(write(tmp_path / "e", ""))
    for empty in (qrels.iloc[:0], qrels.iloc[:0].astype({"grade": float}), pd.DataFrame(columns=["query", "doc", "grade"]), {}):
        with pytest.raises(ValueError, match="^qrels: no judgments"): prepare(runs, empty)
    with pytest.raises(ValueError, match="^qrels: no judgments"): prepare_files([tmp_path / "input.r"], qrels.iloc[:0])
    c = prepare(runs, qrels)
    with pytest.raises(ValueError, match="^qrels: no judgments"): c.with_qrels(qrels.iloc[:0])
    assert c.topics.tolist() == ["1", "2"] and c.n_relevant().tolist() == [1, 0]     # a judgment of grade 0 suffices


# ---- the encoding against a brute-force one ----------------------------------------------------------------------

def brute_campaign(runs, qrels):
    "Dense arrays built the slow way: per (system, topic), sort with trec_eval's comparator, look each doc up."
    systems, topics = sorted(runs.system.unique()), sorted(qrels["query"].unique())
    judged = sorted(qrels.doc.unique())
    code = {d: i for i, d in enumerate(judged)}
    grade = {(q, d): g for q, d, g in qrels[["query", "doc", "grade"]].itertuples(index=False)}
    lists = {}
    for (s, q), g in runs.groupby(["system", "query"]):
        if q not in topics: continue
        keys = [(np.float32(x), d, x) for d, x in zip(g.doc, g.score)]
        lists[(s, q)] = sorted(keys, key=functools.cmp_to_key(lambda a, b: trec_eval_cmp(a[:2], b[:2])))
    D = max((len(v) for v in lists.values()), default=0)
    docs = np.full((len(systems), len(topics), D), PAD, np.int32)
    grades = np.full(docs.shape, NO_GRADE, np.int16)
    scores = np.full(docs.shape, np.nan)
    for (s, q), ranked in lists.items():
        i, j = systems.index(s), topics.index(q)
        for r, (_, d, x) in enumerate(ranked):
            docs[i, j, r] = code.get(d, UNJUDGED)
            grades[i, j, r] = grade.get((q, d), NO_GRADE)
            scores[i, j, r] = x
    return systems, topics, docs, grades, scores


def layouts(seed):
    "The same kind of campaign laid out the ways `prepare` takes different paths for."
    rng = np.random.default_rng(seed)
    docs = np.array([f"d{i}" for i in range(40)] + ["D1", "d1x", "é"])
    rows = []
    for s in range(3):
        for t in range(4):
            chosen = rng.choice(len(docs), 12, replace=False)            # every list exactly 12 long
            score = np.round(rng.random(12), 1) + np.where(rng.random(12) < 0.3, 1e-12, 0)
            order = np.argsort(-score, kind="stable")                      # as a run file is written
            rows += [(f"s{s}", f"t{t}", docs[chosen[o]], float(score[o])) for o in order]
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([(f"t{t}", d, int(rng.choice([-2, 0, 1, 2]))) for t in range(5)
                          for d in rng.choice(docs, 20, replace=False)], columns=["query", "doc", "grade"])
    complete = runs
    missing = runs[~((runs.system == "s1") & (runs["query"] == "t2"))]              # a cell with no list
    extra = runs.assign(query=runs["query"].replace({"t3": "not-in-qrels"}))         # a list of no qrels topic
    shuffled = runs.sample(frac=1, random_state=seed)                                  # rows in any order
    split = pd.concat([runs.iloc[::2], runs.iloc[1::2]])                               # each list in two blocks
    short = runs.groupby(["system", "query"]).head(int(rng.integers(1, 12)))           # shorter lists
    return {"complete": complete, "missing": missing, "extra": extra, "shuffled": shuffled, "split": split,
            "short": short}, qrels


def assert_brute_campaign(runs, qrels, name, c=None):
    "`prepare(runs, qrels)` (or the campaign `c` of those runs) equals the brute-force encoding, array by array."
    c = prepare(runs, qrels) if c is None else c
    systems, topics, docs, grades, scores = brute_campaign(runs, qrels)
    assert c.systems.tolist() == systems and c.topics.tolist() == topics, name
    np.testing.assert_array_equal(c.docs, docs, err_msg=name)
    np.testing.assert_array_equal(c.grades, grades, err_msg=name)
    np.testing.assert_array_equal(c.scores, scores, err_msg=name)
    np.testing.assert_array_equal(c.lengths, (docs != PAD).sum(2), err_msg=name)
    return c


@pytest.mark.parametrize("seed", range(4))
def test_prepare_equals_brute_force_on_every_layout(seed):
    all_runs, qrels = layouts(seed)
    for name, runs in all_runs.items():
        assert_brute_campaign(runs, qrels, name)


def test_runs_of_topics_outside_the_qrels_are_ranked_per_query():
    runs = pd.DataFrame({"system": "s", "query": ["x", "x", "y", "y", "1"], "doc": list("abcde"),
                         "score": [1.0, 2.0, 3.0, 0.5, 1.0]})
    qrels = pd.DataFrame({"query": ["1"], "doc": ["e"], "grade": [1]})
    r = prepare(runs, qrels).runs
    assert r[["query", "doc", "rank"]].values.tolist() == [["1", "e", 1], ["x", "b", 1], ["x", "a", 2],
                                                          ["y", "c", 1], ["y", "d", 2]]
    pd.testing.assert_frame_equal(r, order_runs(runs))
    # no list of any qrels topic at all: an empty campaign, whose runs are still all there
    with pytest.warns(UserWarning, match="no run topic is in the qrels"): c = prepare(runs[runs["query"] != "1"], qrels)
    # one padding column keeps reductions over ranks (argmax, any) defined
    assert c.docs.shape == (1, 1, 1) and c.docs.tolist() == [[[PAD]]] and c.lengths.tolist() == [[0]] and len(c.runs) == 4


def test_prepare_refuses_duplicates_in_frames():
    runs = pd.DataFrame({"system": "s", "query": "1", "doc": ["a", "b", "a"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query": ["1"], "doc": ["a"], "grade": [1]})
    with pytest.raises(ValueError, match=r"system 's', query '1', doc 'a' appears twice \(rows 0 and 2\)"):
        prepare(runs, qrels)
    kept = as_runs(runs, duplicates="first")
    assert kept.doc.tolist() == ["a", "b"] and prepare(kept, qrels).lengths.tolist() == [[2]]
    # a checked frame whose doc ids are then changed is checked again
    kept.loc[1, "doc"] = "a"
    with pytest.raises(ValueError, match="appears twice"): prepare(kept, qrels)
    with pytest.raises(ValueError, match="duplicates must be"): as_runs(runs, duplicates="last")


def test_read_runs_tag_duplicates_name_both_files(tmp_path):
    write(tmp_path / "a", "1 Q0 x 1 0.5 t\n")
    write(tmp_path / "b", "1 Q0 y 1 0.4 t\n1 Q0 x 2 0.3 t\n")
    with pytest.raises(ValueError) as e: read_runs(tmp_path, tag=True)
    assert f"{tmp_path / 'a'} and {tmp_path / 'b'}" in str(e.value) and "doc 'x'" in str(e.value)
    r = read_runs(tmp_path, tag=True, duplicates="first")
    assert r.doc.tolist() == ["x", "y"] and r.score.tolist() == [0.5, 0.4]


def test_more_bad_lines(tmp_path):
    f = tmp_path / "u"
    f.write_bytes(b"1 Q0 a 1 0.5 t\n1 Q0 \xff\xfe 2 0.4 t\n")
    with pytest.raises(TrecFormatError, match=r"u:2: the line is not valid UTF-8"): read_run(f)
    with pytest.raises(ValueError, match=r"qrels: non-integer grade 1\.5 for query '1', doc 'b' \(row 1\)"):
        as_qrels(pd.DataFrame({"query": ["1", "1"], "doc": ["a", "b"], "grade": [1, 1.5]}))
    with pytest.raises(ValueError, match="either system= or tag"): read_run(tmp_path / "missing", system="x", tag=True)


@pytest.mark.parametrize("at", [131072, 262144])
@pytest.mark.parametrize("shift", [-2, -1, 0, 1])
def test_empty_column_at_a_block_edge(tmp_path, at, shift):
    """The clean-file check scans in 128 kB blocks; a doubled separator across a block edge must still be seen.

    `1 Q0  a 1 0.5` has five columns, but split on single spaces it has six with an empty doc id, and pyarrow
    would take `a` as the rank and `1` as the score: only folding the whitespace first exposes the missing column."""
    head = "".join(f"1 Q0 d{i:06d} 1 0.5 t\n" for i in range((at - 100) // 21))
    target = at + shift                              # the doubled space takes bytes target and target + 1
    filler = "1 Q0 " + "p" * (target - 4 - len(head) - 14) + " 1 0.5 t\n"
    text = head + filler + "1 Q0  a 1 0.5\n"
    assert text[target:target + 2] == "  " and text.count("  ") == 1
    f = write(tmp_path / "edge", text)
    line = text.count("\n")
    with pytest.raises(TrecFormatError, match=rf"edge:{line}: expected 6 columns in a run line, found 5"):
        read_run(f)
    # and the same file with the line repaired reads whole
    assert len(read_run(write(tmp_path / "edge", head + filler + "1 Q0 a 1 0.5 t\n"))) == line


@pytest.mark.parametrize("block", [1, 3, 16, 1 << 20])
@pytest.mark.parametrize("seed", range(2))
def test_batches_and_chunks_do_not_change_the_campaign(tmp_path, monkeypatch, block, seed):
    """`_lists` and `prepare` work a batch of rows at a time, look judged documents up in parts on several threads,
    and take strings chunk by chunk: with batches (and parts) of 1, 3 or 16 rows (cutting lists and tie groups) and
    runs read from several files (one Arrow chunk each, lists spread over two files with `tag=True`), the campaign
    still equals the brute-force one."""
    import irinnov.trec as trec
    monkeypatch.setattr(trec, "_BLOCK", block)
    # the judged-document lookup split between threads (as on inputs of millions of rows), parts of `block` rows
    monkeypatch.setattr(trec, "_SPLIT_ROWS", block)
    monkeypatch.setattr(trec, "_cpus", lambda: 3)
    all_runs, qrels = layouts(seed)
    for name in ("complete", "missing", "extra", "shuffled", "split", "short"):
        runs = all_runs[name].reset_index(drop=True)
        d = tmp_path / f"{name}-{block}-{seed}"
        d.mkdir()
        for i, part in enumerate((runs.iloc[: len(runs) // 3], runs.iloc[len(runs) // 3:])):  # every list cut
            lines = part["query"] + " Q0 " + part.doc + " 0 " + part.score.map(repr) + " " + part.system
            write(d / f"part{i}", "\n".join(lines) + "\n")
        read = read_runs(d, tag=True)
        assert len(trec._chunked(read["doc"]).chunks) == 2
        for frame in (runs, read):
            c = assert_brute_campaign(frame, qrels, name)
            pd.testing.assert_frame_equal(c.runs, order_runs(frame))
            tied = {s: 0 for s in c.systems}      # rows whose float32 score another row of their list has
            for (s, _), g in frame.groupby(["system", "query"]):
                n = np.unique(np.float32(g.score), return_counts=True)[1]
                tied[s] += int(n[n > 1].sum())
            assert tie_report(frame).tied_rows.to_dict() == tied, name


def test_progress_shows_in_jupyter_and_on_terminals_only(monkeypatch):
    "A bar in Jupyter and on a terminal; silent in pipes, under CI, and whenever IRINNOV_PROGRESS=0 (nbval's kernels)."
    import sys
    import types
    from irinnov.trec import progress
    for var in ("IRINNOV_PROGRESS", "CI"): monkeypatch.delenv(var, raising=False)
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert progress(range(3)).disable                                   # a pipe
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    assert progress(range(3)).disable               # ipykernel merely imported (pytest's nbval plugin does): a pipe
    ZMQInteractiveShell = type("ZMQInteractiveShell", (), {})
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: ZMQInteractiveShell()
    monkeypatch.setitem(sys.modules, "IPython", fake)
    bar = progress(range(3))
    assert not bar.disable                                              # code run by a Jupyter kernel
    bar.close()
    monkeypatch.setenv("IRINNOV_PROGRESS", "0")
    assert progress(range(3)).disable
    monkeypatch.delenv("IRINNOV_PROGRESS")
    monkeypatch.setenv("CI", "true")
    assert progress(range(3)).disable


# ---- run files straight into a campaign, a batch of files at a time ------------------------------------------------

def write_system_files(runs: pd.DataFrame, folder: Path, gz_every: int = 0) -> Path:
    "One run file `input.<system>` per system (every `gz_every`-th gzipped), lines in the frame's order."
    folder.mkdir(parents=True, exist_ok=True)
    for i, (s, g) in enumerate(runs.groupby("system", sort=False)):
        lines = g["query"] + " Q0 " + g.doc + " 0 " + g.score.map(repr) + " tag"
        write(folder / f"input.{s}", "\n".join(lines) + "\n", gz=bool(gz_every) and i % gz_every == 0)
    return folder


def growing_layout(seed):
    "Systems whose lists get longer in the files' sorted order (so later batches are deeper) and shorter again."
    rng = np.random.default_rng(seed)
    rows = []
    for s, n in (("a", 3), ("b", 7), ("c", 2), ("d", 12), ("e", 5)):
        for t in range(4):
            docs = rng.choice(60, n, replace=False)
            score = np.round(rng.random(n), 1)
            rows += [(s, f"t{t}", f"d{d}", float(x)) for d, x in zip(docs, score)]
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([(f"t{t}", f"d{d}", int(rng.choice([0, 1, 2]))) for t in range(5)
                          for d in rng.choice(60, 25, replace=False)], columns=["query", "doc", "grade"])
    return runs, qrels


@pytest.mark.parametrize("batch_rows", [1, 20, 100, None])
@pytest.mark.parametrize("seed", range(2))
def test_prepare_files_equals_brute_force(tmp_path, seed, batch_rows):
    """`prepare_files` reads a batch of files at a time and deepens the arrays when a later batch holds longer lists:
    on every layout, one file or many per batch, the campaign equals the brute-force encoding of the same runs, and
    `Campaign.runs` (the files read again) equals the ordered runs."""
    from irinnov.trec import prepare_files
    all_runs, qrels = layouts(seed)
    all_runs["growing"], grow_qrels = growing_layout(seed)
    for name, runs in all_runs.items():
        if name == "split": continue            # a system's rows in two blocks: one file per system keeps them apart
        q = grow_qrels if name == "growing" else qrels
        folder = write_system_files(runs, tmp_path / f"{name}-{batch_rows}", gz_every=2)
        c = assert_brute_campaign(runs, q, name, prepare_files(folder, q, batch_rows=batch_rows))
        pd.testing.assert_frame_equal(c.runs, order_runs(read_runs(folder)))
        cut = prepare_files(folder, q, batch_rows=batch_rows, depth=4)      # trec_eval -M 4
        np.testing.assert_array_equal(cut.docs, c.docs[:, :, :4], err_msg=name)
        np.testing.assert_array_equal(cut.lengths, np.minimum(c.lengths, 4), err_msg=name)
        assert cut.runs["rank"].max() <= 4


def test_prepare_files_equals_prepare_of_the_frame(tmp_path):
    "`prepare(folder, qrels)` takes the file path; its campaign is the one `prepare(read_runs(folder), qrels)` builds."
    from irinnov.trec import prepare_files
    runs, qrels = growing_layout(7)
    folder = write_system_files(runs, tmp_path / "runs")
    a, b = prepare(read_runs(folder), qrels), prepare(folder, qrels)
    for k in ("systems", "topics", "judged_docs", "docs", "grades", "lengths"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    np.testing.assert_array_equal(a.scores, b.scores)
    pd.testing.assert_frame_equal(a.qrels, b.qrels)
    c = prepare_files(sorted(folder.iterdir())[:2], qrels, keep_runs=False)        # a list of files
    assert c.systems.tolist() == ["a", "b"] and c.runs_fn is None


def test_prepare_files_errors(tmp_path):
    "The file path keeps every check: file and line of a bad line, two files of one system, a changed file, the cap."
    from irinnov.trec import prepare_files
    runs, qrels = growing_layout(3)
    folder = write_system_files(runs, tmp_path / "runs")
    # 5 systems × 5 topics × 7 ranks (system b's lists) fit in 3,000 bytes; 12 ranks (system d's) do not
    with pytest.raises(MemoryError, match="12 ranks: the longest list read so far, system 'd' topic 't"):
        prepare_files(folder, qrels, max_dense_bytes=3000, batch_rows=1)
    with pytest.warns(UserWarning, match="no run topic is in the qrels"):
        prepare_files(folder, qrels.assign(query=qrels["query"] + "x"))
    with pytest.raises(ValueError, match="no run topic is in the qrels"):
        prepare_files(folder, qrels.assign(query=qrels["query"] + "x"), disjoint="error")
    c = prepare_files(folder, qrels)
    write(folder / "input.b", (folder / "input.b").read_text() + "t9 Q0 dx 0 0.5 tag\n")
    with pytest.raises(ValueError, match="input.b: the run file changed since the campaign was prepared"):
        c.runs
    write(folder / "input.c", "t1 Q0 d1 0 0.5 tag\nt1 Q0 d2 0 high tag\n")
    with pytest.raises(TrecFormatError, match=r"input\.c:2: score 'high' is not a number"):
        prepare_files(folder, qrels, batch_rows=1)
    (tmp_path / "x").mkdir()
    write(tmp_path / "x" / "input.a", "t1 Q0 d1 0 0.5 tag\n")
    with pytest.raises(ValueError, match="system name 'a' already taken"):
        prepare_files([folder / "input.a", tmp_path / "x" / "input.a"], qrels)
    for bad, what in (({"batch_rows": 0}, "batch_rows"), ({"depth": 0}, "depth"), ({"duplicates": "x"}, "duplicates"),
                      ({"score_dtype": "int"}, "score_dtype")):
        with pytest.raises(ValueError, match=what): prepare_files(folder, qrels, **bad)


def test_files_parsed_in_many_chunks(tmp_path, monkeypatch):
    """A file over 64 MB is parsed in blocks and its columns stay in one chunk per block (joining them copied every
    column), and a file over 16 MB lets its bytes go once parsed: with blocks of 256 bytes and every file counted as
    large, the frame is the one read in one block, and a repeated document is still found across blocks, with the
    line numbers of both lines (the file read again for them)."""
    import irinnov.trec as trec
    rng = np.random.default_rng(5)
    lines = [f"q{q} Q0 doc{d} {r} {float(s)!r} run" for q in range(4) for r, (d, s) in
             enumerate(zip(rng.choice(1000, 50, replace=False), np.round(rng.random(50), 2)), 1)]
    f = write(tmp_path / "input.run", "\n".join(lines) + "\n")
    whole = read_run(f)
    monkeypatch.setattr(trec, "_block_size", lambda n: 256)
    monkeypatch.setattr(trec, "_REUSED", 0)          # every file "large": read a piece at a time
    monkeypatch.setattr(trec, "_PIECE", 300)         # pieces of a few lines, cut inside lines
    chunked = read_run(f)
    assert trec._chunked(chunked["doc"]).num_chunks > 10
    pd.testing.assert_frame_equal(chunked, whole)
    pd.testing.assert_frame_equal(order_runs(chunked), order_runs(whole))
    dup = lines[:150] + [lines[2].replace(" 3 ", " 151 ")] + lines[150:]          # doc of line 3 again at line 151
    write(f, "\n".join(dup) + "\n")
    with pytest.raises(TrecFormatError, match=r"input\.run:151: duplicate run entry .* \(lines 3, 151\)"):
        read_run(f)
    assert len(read_run(f, duplicates="first")) == len(lines)
    # pieces with other separators (tabs, CRLF, runs of spaces) and comments, and a bad line in a late piece
    messy = [l.replace(" ", "\t") if i % 3 == 0 else l.replace(" Q0 ", "  Q0   ") + ("\r" if i % 5 == 0 else "")
             for i, l in enumerate(lines)]
    write(f, "# a comment\n" + "\n".join(messy[:100]) + "\n  # another\n" + "\n".join(messy[100:]) + "\n")
    pd.testing.assert_frame_equal(read_run(f, comments=True), whole)
    bad = lines[:170] + [lines[170].replace(" run", " run extra")] + lines[171:]
    write(f, "\n".join(bad) + "\n")
    with pytest.raises(TrecFormatError, match=r"input\.run:171: expected 6 columns in a run line, found 7"):
        read_run(f)


def ragged_layout(seed):
    "Most lists 0-8 documents long, a few of 40-400 (tied scores): the shape `ragged=True` keeps apart."
    rng = np.random.default_rng(seed)
    rows = []
    for s in "abcde":
        for t in range(6):
            n = int(rng.integers(0, 9))
            if rng.random() < 0.15 or (s, t) == ("c", 2): n = int(rng.integers(40, 401))
            docs = rng.choice(500, n, replace=False)
            score = np.round(rng.random(n), 1) + np.where(rng.random(n) < 0.2, 1e-12, 0)
            rows += [(s, f"t{t}", f"d{d}", float(x)) for d, x in zip(docs, score)]
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([(f"t{t}", f"d{d}", int(rng.choice([-1, 0, 0, 1, 2, 3]))) for t in range(7)
                          for d in rng.choice(500, 80, replace=False)], columns=["query", "doc", "grade"])
    qrels.loc[qrels["query"] == "t5", "grade"] = 0                        # a topic without relevant documents
    return runs.sample(frac=1, random_state=seed), qrels


def assert_same_arrays(a, b, name=""):
    for k in ("systems", "topics", "judged_docs", "docs", "grades", "scores", "lengths"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=f"{name} {k}")


@pytest.mark.parametrize("seed", range(3))
def test_ragged_campaign_equals_brute_force(tmp_path, monkeypatch, seed):
    """`ragged=True` keeps the lists much longer than the rest apart, whole, in blocks of similar lengths: the dense
    arrays stop at about 2 cells per run position, and `dense()` puts the long lists back, equal to the brute-force
    encoding. Frames and files (a few files a batch) alike; `depth`, `truncate` and `subset` agree with the dense."""
    import irinnov.trec as T
    from irinnov.trec import prepare_files
    monkeypatch.setattr(T, "_RAGGED_MIN_BYTES", 0)             # (split however small the campaign)
    runs, qrels = ragged_layout(seed)
    folder = write_system_files(runs, tmp_path / "runs", gz_every=2)
    dense = assert_brute_campaign(runs, qrels, "dense")
    assert not dense.overflow
    assert prepare(runs, qrels, ragged=True) is not None and not prepare(runs, qrels, ragged=True).overflow
    T.clear_cache()               # (the dense encoding of these very frames serves ragged calls too, until then)
    for name, c in (("frames", prepare(runs, qrels, ragged=True)),
                    ("files", prepare_files(folder, qrels, ragged=True, batch_rows=40)),
                    ("files, one batch", prepare_files(folder, qrels, ragged=True))):
        assert c.overflow and c.depth < dense.depth, name
        long = sum(len(b.system) for b in c.overflow)
        assert long == int((dense.lengths > c.depth).sum()), name     # exactly the lists deeper than the arrays
        assert c.docs.size <= 2 * dense.lengths.sum() + c.docs.shape[0] * c.docs.shape[1], name
        for b in c.overflow:                                           # each block padded to ≤ 2 × its positions
            assert b.campaign.docs.size <= 2 * b.campaign.lengths.sum(), name
            np.testing.assert_array_equal(b.campaign.lengths[0], dense.lengths[b.system, b.topic], err_msg=name)
        np.testing.assert_array_equal(c.lengths, np.minimum(dense.lengths, c.depth), err_msg=name)
        assert_same_arrays(c.dense(), dense, name)
        assert_same_arrays(prepare(c), dense, name)                    # what every other method receives
        assert "longer list" in repr(c)
        for d in (1, c.depth, c.depth + 1, 60, 1000):
            assert_same_arrays(c.truncate(d).dense(), dense.truncate(d), f"{name} depth {d}")
        assert_same_arrays(prepare(runs, qrels, ragged=True, depth=60).dense(), dense.truncate(60), name)
        sub = c.subset(["e", "c", "a"], ["t2", "t0", "t6"])
        assert_same_arrays(sub.dense(), dense.subset(["e", "c", "a"], ["t2", "t0", "t6"]), name)
        pd.testing.assert_frame_equal(c.runs, dense.runs)


def test_ragged_measures_equal_the_dense_ones(monkeypatch):
    "Every measure computed list by list on a ragged campaign equals its value on the dense one, per topic and mean."
    import irinnov.trec as T
    from irinnov import metrics as M
    from irinnov.measures import parse_measure
    monkeypatch.setattr(T, "_RAGGED_MIN_BYTES", 0)
    runs, qrels = ragged_layout(5)
    dense = prepare(runs, qrels)
    T.clear_cache()                                    # (a dense encoding of these frames would serve ragged calls)
    c = prepare(runs, qrels, ragged=True)
    assert c.overflow
    names = ["all_trec", "ERR@20", "nDCG(dcg=exp-log2)@10", "Judged@10", "GAP", "RBP(p=0.5)", "RBP(p=0.5,graded)",
             "infAP", "SetF", "Success@5", "P(rel=2)@5", "NumRet", "IPrec@0.3"]
    for kw in ({}, {"per_topic": True}, {"complete": False}, {"depth": 20}, {"threshold": 2},
               {"trec_eval_version": "10"}):
        pd.testing.assert_frame_equal(M.evaluate(c, measures=names, **kw), M.evaluate(dense, measures=names, **kw))
    for fn in (M.average_precision, M.ndcg, M.precision, M.recall, M.reciprocal_rank, M.r_precision, M.bpref,
               lambda x: M.rbp(x, graded=True), lambda x: M.ndcg(x, k=10), lambda x: M.precision(x, k=100)):
        pd.testing.assert_frame_equal(fn(c), fn(dense))
    for name in ("map", "ERR@20", "ndcg_cut.10", "RR"):
        pd.testing.assert_frame_equal(M.measure(c, name=name), M.measure(dense, name=name))
    for name in ("AP", "nDCG@10", "AP_rareness@10", "U@10", "RPP", "RIC", "GAP"):   # other families: the dense campaign
        m = parse_measure(name)
        pd.testing.assert_frame_equal(m(c, warn=False), m(dense, warn=False))
    assert (c.relevant() == dense.relevant()).all()


def test_ragged_only_where_it_pays(monkeypatch):
    "With the real threshold a small campaign stays dense under `ragged=True`; `dense()` refuses arrays over the cap, "
    "naming the longest list."
    import irinnov.trec as T
    runs, qrels = ragged_layout(1)
    T.clear_cache()
    assert not prepare(runs, qrels, ragged=True).overflow             # 5 × 7 × 400 cells: under 16 MB, left dense
    monkeypatch.setattr(T, "_RAGGED_MIN_BYTES", 0)
    T.clear_cache()
    c = prepare(runs, qrels, ragged=True)
    b = max(c.overflow, key=lambda b: b.campaign.depth)
    i = int(np.argmax(b.campaign.lengths[0]))
    with pytest.raises(MemoryError, match=f"system '{c.systems[b.system[i]]}' topic '{c.topics[b.topic[i]]}'"):
        c.dense(max_dense_bytes=1000)
    with pytest.raises(MemoryError, match="evaluate it with irinnov.metrics"):
        prepare(c, max_dense_bytes=1000)


@pytest.mark.parametrize("shuffled", [True, False])
def test_prepare_files_finds_a_repeat_after_ordering(tmp_path, shuffled):
    """The file path looks for a repeated (query, doc) once a batch's lists are ordered (rows in any order: one sort of
    list and order-preserving doc codes; rows in order: the reader's check over the batch). A repeat is reported as
    the reader reports it, with its file and both lines, whichever batch it is in; the same doc in two systems' files,
    or in two topics of one file, is no repeat; `duplicates='first'` keeps the first."""
    from irinnov.trec import prepare_files
    runs, qrels = layouts(0)[0]["complete"], layouts(0)[1]
    if shuffled: runs = runs.sample(frac=1, random_state=1)
    folder = write_system_files(runs, tmp_path / "runs")
    ok = prepare_files(folder, qrels, batch_rows=20)
    assert_brute_campaign(runs, qrels, "no repeat", ok)
    lines = (folder / "input.s1").read_text().splitlines()
    q, d = lines[4].split()[0], lines[4].split()[2]
    lines.append(f"{q} Q0 {d} 0 -7.5 tag")                     # line 5 again, another score (not adjacent when ordered)
    write(folder / "input.s1", "\n".join(lines) + "\n")
    for batch_rows in (1, 20, None):
        with pytest.raises(TrecFormatError, match=rf"input\.s1:{len(lines)}: duplicate run entry .*\(lines 5, {len(lines)}\)"):
            prepare_files(folder, qrels, batch_rows=batch_rows)
    first = prepare_files(folder, qrels, duplicates="first")
    assert_same_arrays(first, ok, "duplicates='first'")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab09-_zé\u00ff\u4e00 ")), max_size=14), min_size=2, max_size=40,
                unique=True),
       st.sampled_from(["", "doc", "clueweb12-0000tw-"]), st.booleans())
def test_string_order_is_byte_order(strings, prefix, large):
    "Distinct ids ordered by 8-byte keys past their common prefix, or by Arrow when the keys cannot tell two apart: "
    "always the byte-wise order (as strcmp compares), prefixes before their extensions."
    import pyarrow as pa
    from irinnov.trec import _prefix_order, _string_order
    d = pa.array([prefix + s for s in strings], pa.large_string() if large else pa.string())
    want = sorted(range(len(d)), key=lambda i: d[i].as_py().encode())
    assert _string_order(d).tolist() == want
    fast = _prefix_order(d)
    if fast is not None: assert fast.tolist() == want
    sliced = pa.array(["zz"] + [prefix + s for s in strings], pa.string())[1:]     # an array with an offset
    assert _string_order(sliced).tolist() == want


def test_string_order_takes_the_fast_path_on_numbered_ids():
    import pyarrow as pa
    from irinnov.trec import _prefix_order
    ids = pa.array([f"doc{i}" for i in np.random.default_rng(0).permutation(100_000)])
    o = _prefix_order(ids)
    assert o is not None and ids.take(pa.array(o)).to_pylist() == sorted(ids.to_pylist())
    assert _prefix_order(pa.array(["clueweb12-0000tw-00-00001", "clueweb12-0000tw-00-00002"])) is not None
    assert _prefix_order(pa.array(["x-aaaaaaaa-1", "x-aaaaaaaa-2", "x-b"])) is None   # the same 8 bytes past "x-"
    assert _prefix_order(pa.array(["a\0b", "a\0c"])) is None                       # a NUL byte


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab09-z\u00e9\u4e00")), max_size=9), min_size=1, max_size=60),
       st.sampled_from(["", "doc", "MARCO_"]), st.integers(1, 4), st.booleans())
def test_sorted_dict_codes_rows_in_byte_order(strings, prefix, n_chunks, large):
    "Order-preserving codes of a chunked doc column: the distinct strings sorted byte-wise, and each row's index "
    "among them."
    import pyarrow as pa
    from irinnov.trec import _sorted_dict
    rows = [prefix + s for s in strings]
    t = pa.large_string() if large else pa.string()
    cuts = np.linspace(0, len(rows), n_chunks + 1).astype(int)
    col = pa.chunked_array([pa.array(rows[a:b], t) for a, b in zip(cuts[:-1], cuts[1:])], t)
    values, codes = _sorted_dict(col)
    want = sorted(set(rows), key=str.encode)
    assert values.to_pylist() == want
    assert [want[i] for i in codes] == rows
