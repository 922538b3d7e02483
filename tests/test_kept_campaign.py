"""`prepare_files(..., cache=DIR)`: the encoded arrays kept for the next call and read back only while the run files,
the qrels, the options and the code that encodes them are unchanged. Every reuse is checked against a fresh encoding
(`prepare_files` without a cache), field by field."""
import os
import warnings

import numpy as np
import pandas as pd
import pytest

import irinnov.core.encode as enc
from irinnov.core.encode import prepare_files

FIELDS = ("systems", "topics", "docs", "grades", "lengths", "judged_docs")


def write_runs(folder, seed=0, n_sys=3, n_top=5, depth=12):
    "Run files (one system each, the last gzipped) over a pool of 30 documents; their qrels."
    import gzip
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(n_sys):
        lines = "".join(f"t{q} Q0 d{d} {r + 1} {rng.random():.3f} sys{s}\n"
                        for q in range(n_top) for r, d in enumerate(rng.permutation(30)[:depth]))
        if s == n_sys - 1: (folder / f"sys{s}.gz").write_bytes(gzip.compress(lines.encode()))
        else: (folder / f"sys{s}").write_text(lines)
    return pd.DataFrame([(f"t{q}", f"d{d}", int(g)) for q in range(n_top) for d, g in
                         enumerate(rng.choice([0, 1, 2], 30)) if d % 2 == 0], columns=["query", "doc", "grade"])


def same(a, b):
    for k in FIELDS: np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    np.testing.assert_array_equal(a.scores, b.scores)          # (NaN where both pad)
    qa, qb = (q if isinstance(q, pd.DataFrame) else q.to_frame() for q in (a.qrels, b.qrels))
    assert {c: qa[c].tolist() for c in qa.columns} == {c: qb[c].tolist() for c in qb.columns}
    assert a.score_dtype == b.score_dtype and a.overflow == b.overflow


def kept(cache): return sorted(cache.glob("campaign-*.npz"))


def test_kept_then_read_back(tmp_path):
    qrels = write_runs(tmp_path / "runs")
    fresh = prepare_files(tmp_path / "runs", qrels)
    first = prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c")
    assert len(kept(tmp_path / "c")) == 1
    calls = []
    real = enc._encode_files
    enc._encode_files = lambda *a, **k: calls.append(1) or real(*a, **k)
    try: again = prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c")
    finally: enc._encode_files = real
    assert calls == []                                           # read back, not encoded
    same(first, fresh)
    same(again, fresh)
    pd.testing.assert_frame_equal(again.runs, fresh.runs)        # the files read again on first use, as before


def test_a_changed_file_qrels_or_option_is_encoded_again(tmp_path):
    qrels = write_runs(tmp_path / "runs")
    prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c")
    write_runs(tmp_path / "runs", seed=1)                        # new scores and documents, same names
    os.utime(tmp_path / "runs" / "sys0", ns=(1, 1))              # (even with an old modification time)
    same(prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c"), prepare_files(tmp_path / "runs", qrels))
    other = qrels.assign(grade=qrels["grade"].where(qrels.index % 3 > 0, 2))
    same(prepare_files(tmp_path / "runs", other, cache=tmp_path / "c"), prepare_files(tmp_path / "runs", other))
    same(prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c", depth=5),
         prepare_files(tmp_path / "runs", qrels, depth=5))
    same(prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c", score_dtype="float64"),
         prepare_files(tmp_path / "runs", qrels, score_dtype="float64"))
    assert len(kept(tmp_path / "c")) == enc._KEPT_MOST          # the most recently used, no more


def test_other_code_is_not_trusted(tmp_path, monkeypatch):
    qrels = write_runs(tmp_path / "runs")
    prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c")
    monkeypatch.setattr(enc, "_code_digest", lambda: "another version of the encoder")
    prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c")
    assert len(kept(tmp_path / "c")) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other arrays"])
def test_a_damaged_kept_file_is_encoded_again(tmp_path, damage):
    qrels = write_runs(tmp_path / "runs")
    prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c")
    [f] = kept(tmp_path / "c")
    if damage == "garbage": f.write_bytes(b"not an archive")
    elif damage == "truncated": f.write_bytes(f.read_bytes()[:500])
    else: np.savez(f, systems=np.array(["x"]), docs=np.zeros((1, 1, 1)), grades=np.zeros((1, 1, 1)),
                   scores=np.zeros((1, 1, 1)), lengths=np.zeros((1, 1)))
    same(prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c"), prepare_files(tmp_path / "runs", qrels))
    [f] = kept(tmp_path / "c")                                   # replaced by a good one
    same(prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c"), prepare_files(tmp_path / "runs", qrels))


def test_a_warning_is_said_every_time_and_nothing_kept(tmp_path):
    write_runs(tmp_path / "runs")
    elsewhere = pd.DataFrame({"query": ["t9"], "doc": ["d1"], "grade": [1]})      # no run topic in the qrels
    for _ in range(2):
        with pytest.warns(UserWarning, match="topic"):
            prepare_files(tmp_path / "runs", elsewhere, cache=tmp_path / "c")
    assert kept(tmp_path / "c") == []


def test_an_unwritable_cache_costs_only_time(tmp_path):
    qrels = write_runs(tmp_path / "runs")
    (tmp_path / "c").write_text("a file where the folder would be")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(prepare_files(tmp_path / "runs", qrels, cache=tmp_path / "c"), prepare_files(tmp_path / "runs", qrels))
    assert (tmp_path / "c").read_text() == "a file where the folder would be"


def test_qrels_as_a_file_or_columns(tmp_path):
    "The qrels given as a file, or as the reader's columns (`frame=False`): kept and read back the same way."
    from irinnov.core.read import read_qrels
    qrels = write_runs(tmp_path / "runs")
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    fresh = prepare_files(tmp_path / "runs", qrels)
    for given in (tmp_path / "qrels", read_qrels(tmp_path / "qrels", frame=False)):
        for _ in range(2): same(prepare_files(tmp_path / "runs", given, cache=tmp_path / "c"), fresh)
    assert len(kept(tmp_path / "c")) == 1                        # the same content, the same key
