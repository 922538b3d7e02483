"""The ecosystem's objects and names in the library: ir_datasets' and ir_measures' namedtuples as runs and qrels,
ir_measures' measure objects as measures (their values equal to ir_measures' own), ir_datasets' dataset names, and
runs from a FIFO."""
import os
import threading
import warnings

import numpy as np
import pandas as pd
import pytest

ir_datasets = pytest.importorskip("ir_datasets")
ir_measures = pytest.importorskip("ir_measures")
from ir_datasets.formats import GenericDoc, GenericScoredDoc, TrecQrel

from irinnov import datasets, metrics
from irinnov.core.read import as_qrels, as_runs, read_runs, run_files
from irinnov.measures import MeasureError, parse_measure


def campaign(seed=3, n_top=8, depth=25, pool=40):
    """ir_datasets' Qrel and ScoredDoc rows of a random campaign of one run (unjudged documents, grades 0-2; no tied
    scores: trec_eval and ir_measures' own Judged provider break ties differently)."""
    rng = np.random.default_rng(seed)
    qrels = [TrecQrel(f"q{t}", f"d{d}", int(rng.integers(0, 3)), "0") for t in range(n_top)
             for d in rng.choice(pool, 15, replace=False)]
    run = [GenericScoredDoc(f"q{t}", f"d{d}", float(rng.random())) for t in range(n_top)
           for d in rng.choice(pool, depth, replace=False)]
    return qrels, run


def test_ir_datasets_namedtuples_are_runs_and_qrels():
    qrels, run = campaign()
    q = as_qrels(iter(qrels))                              # a generator, as `dataset.qrels_iter()` gives
    assert list(q.columns) == ["query", "doc", "grade"] and len(q) == len(qrels)
    r = as_runs(x for x in run)
    assert list(r.columns) == ["system", "query", "doc", "score"] and (r.system == "run").all() and len(r) == len(run)
    same = as_qrels([ir_measures.Qrel(x.query_id, x.doc_id, x.relevance) for x in qrels])
    pd.testing.assert_frame_equal(same, q)                 # ir_measures' Qrel: the same frame
    with pytest.raises(ValueError, match=r"lack column\(s\) \['query', 'score'\]"):
        as_runs([GenericDoc("d1", "some text")])          # documents are not a run: said, not guessed


def test_ir_measures_objects_are_measures_with_ir_measures_values():
    qrels, run = campaign()
    objs = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P(rel=2) @ 5, ir_measures.RR, ir_measures.R @ 20,
            ir_measures.Bpref, ir_measures.Judged @ 10]
    assert [parse_measure(m).name for m in objs] == ["AP", "nDCG@10", "P(rel=2)@5", "RR", "R@20", "bpref", "Judged@10"]
    ours = metrics.evaluate(iter(run), iter(qrels), measures=objs, complete=False).iloc[0]
    theirs = ir_measures.calc_aggregate(objs, [ir_measures.Qrel(*x[:3]) for x in qrels],
                                        [ir_measures.ScoredDoc(*x) for x in run])
    assert list(ours.index) == [str(m) for m in objs]                       # named as given, as trec_eval's names are
    for m in objs: assert abs(ours[str(m)] - theirs[m]) < 1e-12, m
    table = metrics.measure(run, qrels, name=ir_measures.nDCG @ 10)
    assert table.attrs["measure"] == "nDCG@10" and table.shape == (1, 8)
    with pytest.raises(MeasureError, match="unknown parameter 'judged_only'"):      # what irinnov lacks is said
        parse_measure(ir_measures.nDCG(judged_only=True) @ 10)


def test_ir_datasets_names_are_aliases():
    for alias, name in (("msmarco-passage/trec-dl-2020/judged", "trec-dl-2020-passage"),
                        ("msmarco-passage/trec-dl-2019/judged", "trec-dl-2019-passage"),
                        ("cord19/trec-covid/round1", "trec-covid-round1"), ("clueweb09/catb/trec-web-2012", "web2012")):
        assert alias in ir_datasets.registry, alias                           # ir_datasets' own spelling
        assert datasets.dataset_name(alias) == name
    with pytest.raises(ValueError) as e: datasets.dataset_name("cord19/trec-covid/round9")
    assert "did you mean" in str(e.value)
    assert str(e.value).endswith("available: " + ", ".join(datasets.available()["name"]))


def test_load_by_ir_datasets_name(tmp_path, monkeypatch):
    mirror = os.environ.get("IRINNOV_MIRROR")
    if not mirror or not os.path.isdir(os.path.join(mirror, "github", "trec-web")): pytest.skip("no offline mirror")
    monkeypatch.setenv("IRINNOV_HOME", str(tmp_path))
    ds = datasets.load("clueweb09/en/trec-web-2012", progress=False)
    assert ds.name == "web2012" and ds.root == tmp_path / "web2012"         # cached under irinnov's name
    assert datasets.verify("clueweb09/en/trec-web-2012")["ok"].all()


def test_runs_from_a_fifo(tmp_path):
    text = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"
    fifo = tmp_path / "63"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(text))
    writer.start()
    try:
        assert run_files(fifo) == [fifo]                                     # a FIFO is a run file
        r = read_runs(run_files(fifo))
    finally: writer.join(10)
    assert r.doc.tolist() == ["d1", "d2"] and r.system.unique().tolist() == ["63"]




def test_a_bar_while_many_runs_are_read(tmp_path, monkeypatch, capsys):
    for s in "abc": (tmp_path / f"input.{s}").write_text(f"q1 Q0 d1 1 1.0 {s}\n")
    monkeypatch.setenv("IRINNOV_PROGRESS", "1")
    read_runs(tmp_path)
    err = capsys.readouterr().err
    assert "reading runs" in err and "/3 [" in err
    monkeypatch.setenv("IRINNOV_PROGRESS", "0")
    read_runs(tmp_path)
    assert capsys.readouterr().err == ""
