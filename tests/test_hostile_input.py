"""Hostile input, odd files and big lists: every case gives one clear error naming the file (and line) or the
argument, never a silent change (issue 14, part 3)."""
import gzip
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from irinnov.trec import (NO_GRADE, TrecFormatError, as_qrels, as_runs, prepare, read_qrels, read_run, read_runs)


# --- trec_eval 10.0 comment lines ----------------------------------------------------------------------------

def test_comment_lines_are_skipped_only_on_request_and_keep_line_numbers(tmp_path):
    f = tmp_path / "input.c"
    f.write_text("# header\n1 Q0 a 1 2 c\n\t# indented note\n1 Q0 b#x 2 1 c\n")
    assert read_run(f, comments=True).doc.tolist() == ["a", "b#x"]
    with pytest.raises(TrecFormatError, match=r"input\.c:1: expected 6 columns"): read_run(f)
    f.write_text("# header\n1 Q0 a 1 2 c\n# note\n1 Q0 b 2 oops c\n")
    with pytest.raises(TrecFormatError, match=r"input\.c:4: score 'oops'"): read_run(f, comments=True)
    q = tmp_path / "qrels"
    q.write_text("#c\n1 0 a 1\n#c\n1 0 a 2\n")
    with pytest.raises(TrecFormatError, match=r"qrels:4: query '1', doc 'a' judged twice"): read_qrels(q, comments=True)


# --- pytrec_eval / ranx dict-of-dicts and paths ---------------------------------------------------------------

def test_dict_of_dicts_equals_the_same_file(tmp_path):
    run = {"q1": {"d1": 1.5, "d2": 0.5, "d3": 0.5}, "q2": {"d9": 2.0}}
    qrels = {"q1": {"d1": 1, "d3": 2}, "q2": {"d8": 1}}
    f, g = tmp_path / "input.r", tmp_path / "qrels"
    f.write_text("".join(f"{q} Q0 {d} 0 {s} r\n" for q, ds in run.items() for d, s in ds.items()))
    g.write_text("".join(f"{q} 0 {d} {v}\n" for q, ds in qrels.items() for d, v in ds.items()))
    a, b = prepare(as_runs(run, system="r"), qrels), prepare(read_run(f), read_qrels(g))
    for k in ("docs", "grades", "scores", "lengths"): np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    c = prepare(str(f), str(g))                       # paths, read by the readers
    np.testing.assert_array_equal(c.grades, b.grades)
    several = as_runs({"x": run, "y": {"q1": {"d1": 1.0}}})
    assert sorted(set(several.system)) == ["x", "y"] and len(several) == 5


@pytest.mark.parametrize("bad, msg", [
    ({"q1": {"d1": 1.0, "d2": float("nan")}}, r"runs: score is NaN for system 'run', query 'q1', doc 'd2'"),
    ({"q1": {None: 1.0}}, r"runs: doc is missing \(None/NaN\) for system 'run', query 'q1'"),
    ({"q1": {"d1": None}}, r"runs: score is NaN for system 'run', query 'q1', doc 'd1'"),
    ({"q1": {"d1": "high"}}, r"runs: score 'high' is not a number for system 'run', query 'q1', doc 'd1'"),
    ({1: {"d1": 1.0}, "1": {"d1": 2.0}}, r"duplicate run entry for system 'run', query '1', doc 'd1'"),
])
def test_bad_run_dicts_name_the_argument_query_and_doc(bad, msg):
    with pytest.raises(ValueError, match=msg): as_runs(bad)


@pytest.mark.parametrize("bad, msg", [
    ({"q1": {"d1": 1.5}}, r"qrels: non-integer grade 1\.5 for query 'q1', doc 'd1'"),
    ({"q1": {"d1": None}}, r"qrels: grade is NaN for query 'q1', doc 'd1'"),
    ({"q1": {None: 1}}, r"qrels: doc is missing"),
    ({"1": {"d1": 1}, 1: {"d1": 2}}, r"qrels: query '1', doc 'd1' judged twice with different grades"),
    ({"q1": {"d1": 40000}}, r"qrels: grade 40000 is outside"),
])
def test_bad_qrels_dicts_name_the_argument_query_and_doc(bad, msg):
    with pytest.raises(ValueError, match=msg): as_qrels(bad)


# --- the DataFrame fast path gets the checks of a file -----------------------------------------------------------

def _frames():
    runs = pd.DataFrame({"system": ["s"] * 3, "query": ["q1"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query": ["q1", "q1"], "doc": ["a", "c"], "grade": [1, 2]})
    return runs, qrels

def test_runs_frame_with_nan_score_or_missing_doc_is_refused():
    runs, qrels = _frames()
    with pytest.raises(ValueError, match=r"runs: score is NaN for system 's', query 'q1', doc 'b' \(row 1\)"):
        prepare(runs.assign(score=[3.0, np.nan, 1.0]), qrels)
    with pytest.raises(ValueError, match=r"runs: doc is missing \(None/NaN\) for system 's', query 'q1' \(row 2\)"):
        prepare(runs.assign(doc=["a", "b", None]), qrels)
    with pytest.raises(ValueError, match=r"runs: query is missing"):
        prepare(runs.astype({"query": object}).assign(query=["q1", None, "q1"]), qrels)

def test_qrels_frame_with_conflicting_grades_or_missing_doc_is_refused():
    runs, qrels = _frames()
    conflict = pd.concat([qrels, pd.DataFrame({"query": ["q1"], "doc": ["a"], "grade": [0]})], ignore_index=True)
    with pytest.raises(ValueError, match=r"qrels: query 'q1', doc 'a' judged twice with different grades"):
        prepare(runs, conflict)
    with pytest.raises(ValueError, match=r"qrels: doc is missing"):
        prepare(runs, qrels.astype({"doc": object}).assign(doc=["a", None]))
    repeat = pd.concat([qrels, qrels.iloc[:1]], ignore_index=True)
    with pytest.raises(ValueError, match=r"query 'q1', doc 'a' judged twice \(rows 0, 2\); trec_eval refuses"):
        prepare(runs, repeat)


# --- grades outside int16: refused with file:line, never wrapped -------------------------------------------------

@pytest.mark.parametrize("grade", [40000, 65536, -40000, 2 ** 40])
def test_grades_outside_int16_are_refused_with_file_and_line(tmp_path, grade):
    q = tmp_path / "qrels"
    q.write_text(f"1 0 a 1\n1 0 b {grade}\n")
    with pytest.raises(TrecFormatError, match=rf"qrels:2: grade {grade} is outside"): read_qrels(q)
    runs, _ = _frames()
    with pytest.raises(ValueError, match=rf"qrels: grade {grade} is outside .* for query '1', doc 'b' \(row 1\)"):
        prepare(runs, pd.DataFrame({"query": ["1", "1"], "doc": ["a", "b"], "grade": [1, grade]}))

def test_largest_int16_grades_are_kept_exactly(tmp_path):
    q = tmp_path / "qrels"
    q.write_text("q1 0 a 32767\nq1 0 c -32767\n")
    runs, _ = _frames()
    c = prepare(runs, read_qrels(q))
    assert c.grades[0, 0].tolist() == [32767, NO_GRADE, -32767]


# --- odd files: corrupt gzip, size caps, odd directory entries ---------------------------------------------------

_GOOD = b"1 Q0 a 1 2 r\n1 Q0 b 2 1 r\n"
_GZ = gzip.compress(_GOOD)

@pytest.mark.parametrize("name, data, msg", [
    ("truncated.gz", _GZ[:-5], "truncated gzip file"),
    ("header.gz", _GZ[:6], "truncated gzip file"),
    ("crc.gz", _GZ[:-8] + bytes(4) + _GZ[-4:], "corrupt gzip data .*incorrect data check"),
    ("length.gz", _GZ[:-4] + b"\x01\x02\x03\x04", "corrupt gzip data .*incorrect length check"),
    ("deflate.gz", _GZ[:10] + b"\xff" * 6 + _GZ[16:], "corrupt gzip data"),
    ("trailing.gz", _GZ + b"garbage", "7 bytes of trailing garbage after the gzip data"),
])
def test_corrupt_gzip_names_the_file(tmp_path, name, data, msg):
    f = tmp_path / name
    f.write_bytes(data)
    with pytest.raises(TrecFormatError, match=rf"{name}: {msg}"): read_run(f)
    with pytest.raises(TrecFormatError, match=rf"{name}: {msg}"): read_qrels(f)

def test_gzip_padding_and_several_members_read_as_gzip_reads_them(tmp_path):
    f = tmp_path / "ok.gz"
    f.write_bytes(_GZ + gzip.compress(b"2 Q0 a 1 1 r\n") + bytes(16))
    assert read_run(f).to_dict("list") == {"system": ["ok"] * 3, "query": ["1", "1", "2"], "doc": ["a", "b", "a"],
                                           "score": [2.0, 1.0, 1.0]}
    assert gzip.decompress(f.read_bytes()).count(b"\n") == 3          # the oracle: Python's gzip

def test_gzip_bomb_and_endless_file_stop_at_the_cap(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(bytes(8 << 20)))
    with pytest.raises(TrecFormatError, match=r"bomb\.gz: decompresses to more than 1,048,576 bytes"):
        read_run(bomb, max_bytes=1 << 20)
    with pytest.raises(TrecFormatError, match=r"/dev/zero: holds more than 65,536 bytes"):
        read_run("/dev/zero", max_bytes=1 << 16)
    with pytest.raises(TrecFormatError, match=r"/dev/zero: holds more than 4,096 bytes"):
        read_qrels("/dev/zero", max_bytes=4096)
    monkeypatch.setenv("IRINNOV_MAX_FILE_BYTES", "100000")
    with pytest.raises(TrecFormatError, match=r"bomb\.gz: decompresses to more than 100,000 bytes"): read_runs([bomb])
    monkeypatch.setenv("IRINNOV_MAX_FILE_BYTES", "lots")
    with pytest.raises(ValueError, match="IRINNOV_MAX_FILE_BYTES='lots'"): read_run(bomb)
    monkeypatch.delenv("IRINNOV_MAX_FILE_BYTES")
    small = tmp_path / "input.s"
    small.write_bytes(_GOOD)
    assert len(read_run(small, max_bytes=len(_GOOD))) == 2               # exactly at the cap is fine
    with pytest.raises(TrecFormatError, match="holds more than"): read_run(small, max_bytes=len(_GOOD) - 1)

def test_dangling_symlink_or_fifo_in_a_run_directory_is_refused_with_its_path(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    (d / "input.a").write_bytes(_GOOD.replace(b" r\n", b" a\n"))
    (d / "sub").mkdir()                                                  # folders are not runs: skipped, and said so
    (d / ".hidden").write_text("x")
    with pytest.warns(UserWarning, match=r"skipped 2 entries \(not run files\): \.hidden, sub/"):
        assert read_runs(d).system.unique().tolist() == ["a"]
    os.symlink(tmp_path / "missing", d / "input.b")
    with pytest.raises(TrecFormatError, match=r"runs/input\.b: dangling symbolic link"): read_runs(d)
    with pytest.raises(TrecFormatError, match=r"runs/input\.b: dangling symbolic link"): read_runs(str(d / "input.*"))
    os.remove(d / "input.b")
    os.mkfifo(d / "input.c")
    with pytest.raises(TrecFormatError, match=r"runs/input\.c: a FIFO in a run directory"): read_runs(d)

def test_cli_reports_a_corrupt_gzip_in_one_line(tmp_path, capsys):
    from irinnov.cli import main
    q, r = tmp_path / "qrels", tmp_path / "input.r.gz"
    q.write_text("1 0 a 1\n")
    r.write_bytes(_GZ[:-3])
    code = main(["evaluate", str(q), str(r)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "input.r.gz: truncated gzip file" in err[0]


# --- campaigns: no topic in common, the depth cut while encoding, the dense-array cap ----------------------------

def test_no_topic_in_common_warns_and_gives_empty_lists():
    runs, _ = _frames()
    other = pd.DataFrame({"query": ["x", "y"], "doc": ["a", "b"], "grade": [1, 1]})
    with pytest.warns(UserWarning, match=r"no run topic is in the qrels: wrong qrels file\?"): c = prepare(runs, other)
    assert c.docs.shape == (1, 2, 1) and (c.lengths == 0).all() and (c.grades == NO_GRADE).all()
    with pytest.raises(ValueError, match="no run topic is in the qrels"): prepare(runs, other, disjoint="error")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare(runs, other, disjoint="ignore")
        prepare(runs, pd.DataFrame({"query": ["q1", "y"], "doc": ["a", "b"], "grade": [1, 1]}))   # one in common: quiet


def _brute(runs: pd.DataFrame, qrels: pd.DataFrame, depth):
    "The dense arrays by plain Python sorting: score desc (float32), doc id desc; top `depth`."
    systems, topics = sorted(set(runs.system)), sorted(set(qrels["query"]))
    judged = sorted(set(qrels.doc))
    code = {d: i for i, d in enumerate(judged)}
    grade = {(q, d): g for q, d, g in qrels[["query", "doc", "grade"]].itertuples(index=False)}
    lists = {}
    for s, q, d, sc in runs[["system", "query", "doc", "score"]].itertuples(index=False):
        lists.setdefault((s, q), []).append((d, sc))
    n = {k: len(v) if depth is None else min(len(v), depth) for k, v in lists.items() if k[1] in topics}
    D = max([1] + list(n.values()))
    docs = np.full((len(systems), len(topics), D), -1)
    grades = np.full((len(systems), len(topics), D), NO_GRADE)
    for (s, q), v in lists.items():
        if q not in topics: continue
        v = sorted(v, key=lambda x: x[0], reverse=True)
        v = sorted(v, key=lambda x: -float(np.float32(x[1])))        # stable: ties keep doc id descending
        for r, (d, _) in enumerate(v[:n[s, q]]):
            docs[systems.index(s), topics.index(q), r] = code.get(d, -2)
            grades[systems.index(s), topics.index(q), r] = grade.get((q, d), NO_GRADE)
    return docs, grades

@pytest.mark.parametrize("seed", range(6))
def test_depth_cut_while_encoding_equals_brute_force_and_truncate(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(3):
        for q in range(6):
            for d in rng.choice(60, int(rng.integers(0, 40)), replace=False):
                rows.append((f"s{s}", f"q{q}", f"d{d:02d}", float(rng.integers(0, 5)) / 4))
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    if seed % 2: runs = runs.sample(frac=1, random_state=seed).reset_index(drop=True)   # the sorting path
    qrels = pd.DataFrame([(f"q{q}", f"d{d:02d}", int(rng.integers(-1, 3))) for q in range(7)
                          for d in rng.choice(60, 15, replace=False)], columns=["query", "doc", "grade"])
    full = prepare(runs, qrels)
    for depth in (1, 2, 5, 17, 39, 1000, None):
        c = prepare(runs, qrels, depth=depth)
        docs, grades = _brute(runs, qrels, depth)
        np.testing.assert_array_equal(c.docs, docs)
        np.testing.assert_array_equal(c.grades, grades)
        t = full.truncate(depth)
        np.testing.assert_array_equal(c.lengths, t.lengths)
        np.testing.assert_array_equal(c.scores, t.scores)
        pd.testing.assert_frame_equal(c.runs, t.runs)

def test_depth_must_be_positive():
    runs, qrels = _frames()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="depth must be a positive integer"): prepare(runs, qrels, depth=bad)

def test_dense_arrays_beyond_the_cap_are_refused_before_allocating(monkeypatch):
    runs = pd.DataFrame({"system": "s", "query": ["q1"] * 5000 + ["q2"], "doc": [f"d{i}" for i in range(5001)],
                         "score": np.arange(5001, 0, -1.0)})
    qrels = pd.DataFrame({"query": ["q1", "q2"], "doc": ["d1", "d5000"], "grade": [1, 1]})
    with pytest.raises(MemoryError, match=r"1 systems × 2 topics × 5000 ranks: the longest list, system 's' topic 'q1'"
                                          r".*cut the lists with depth="):
        prepare(runs, qrels, max_dense_bytes=100_000)
    assert prepare(runs, qrels, depth=10, max_dense_bytes=1000).depth == 10
    monkeypatch.setenv("IRINNOV_MAX_DENSE_BYTES", "1000")
    with pytest.raises(MemoryError, match="IRINNOV_MAX_DENSE_BYTES"): prepare(runs, qrels)


# --- the naive caller's cache: the same unchanged frames are encoded once ----------------------------------------

def test_cache_reuses_one_encoding_and_is_invalidated_by_any_change():
    import gc
    import irinnov.trec as trec
    from irinnov.metrics import average_precision, ndcg
    trec.clear_cache()
    runs, qrels = _frames()
    runs = as_runs(runs)
    a, b = prepare(runs, qrels), prepare(runs, qrels)
    assert a is not b and a.docs is b.docs and len(trec._CACHE) == 1           # one encoding, two campaign objects
    pd.testing.assert_frame_equal(a.runs, b.runs)
    assert prepare(runs, qrels, depth=2).depth == 2 and len(trec._CACHE) == 2   # other options: another entry
    expected = [[1.0, NO_GRADE, 2]]
    runs.loc[1, "score"] = 5.0                                                  # edited in place: re-encoded
    c = prepare(runs, qrels)
    assert c.docs is not a.docs and c.grades[0].tolist() == [[NO_GRADE, 1, 2]]
    qrels.loc[0, "grade"] = 0                                                   # qrels edited in place
    d = prepare(runs, qrels)
    assert d.grades is not c.grades and d.grades[0].tolist() == [[NO_GRADE, 0, 2]]
    d.grades[0, 0, 0] = 9                                                       # a caller wrote into the arrays
    assert prepare(runs, qrels).grades[0].tolist() == [[NO_GRADE, 0, 2]]
    runs["doc"] = ["a", "b", "x"]                                               # a column replaced
    assert prepare(runs, qrels).grades[0].tolist() == [[NO_GRADE, 0, NO_GRADE]]
    # the measures called one after another agree with a fresh encoding
    fresh = prepare(runs.copy(), qrels.copy())
    pd.testing.assert_frame_equal(average_precision(runs, qrels), average_precision(fresh))
    pd.testing.assert_frame_equal(ndcg(runs, qrels), ndcg(fresh))
    del runs, a, b, c, d, fresh
    gc.collect()
    assert len(trec._CACHE) == 0 or all(e.refs[0]() is not None for e in trec._CACHE.values())

def test_cache_is_bounded_and_skips_object_columns():
    import irinnov.trec as trec
    trec.clear_cache()
    frames = [as_runs(_frames()[0]) for _ in range(trec.CACHE_SIZE + 3)]
    qrels = _frames()[1]
    for f in frames: prepare(f, qrels)
    assert len(trec._CACHE) == trec.CACHE_SIZE
    trec.clear_cache()
    obj = _frames()[0].astype({"doc": object})
    prepare(obj, qrels)
    assert len(trec._CACHE) == 0           # an object column can change in place unseen: never cached


# --- rows in random order: the packed-key sort and its lexsort fallback equal the brute-force order ---------------

@pytest.mark.parametrize("bits", [64, 40])
def test_shuffled_rows_packed_key_and_lexsort_fallback(bits, monkeypatch):
    import irinnov.trec as trec
    monkeypatch.setattr(trec, "_KEY_BITS", bits)
    rng = np.random.default_rng(bits)
    rows = [(f"s{s}", f"q{q}", f"d{d:03d}", float(rng.integers(0, 4)) / 2 + (1e-9 if rng.random() < 0.2 else 0))
            for s in range(4) for q in range(5) for d in rng.choice(300, 40, replace=False)]
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"]).sample(frac=1, random_state=0)
    runs = runs.reset_index(drop=True)
    qrels = pd.DataFrame([(f"q{q}", f"d{d:03d}", int(rng.integers(0, 3))) for q in range(5)
                          for d in rng.choice(300, 60, replace=False)], columns=["query", "doc", "grade"])
    c = prepare(runs, qrels, keep_runs=False)
    docs, grades = _brute(runs, qrels, None)
    np.testing.assert_array_equal(c.docs, docs)
    np.testing.assert_array_equal(c.grades, grades)


def test_hashed_duplicate_check_never_misses_a_repeat():
    import pyarrow as pa
    from irinnov.trec import _maybe_duplicates
    rng = np.random.default_rng(7)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        q = [f"q{int(x)}" for x in np.sort(rng.integers(0, 4, n))]
        d = ["".join(rng.choice(list("ab€x"), int(rng.integers(1, 5)))) for _ in range(n)]
        truth = pd.DataFrame({"q": q, "d": d}).duplicated().any()           # the oracle: pandas
        for typ in (pa.string(), pa.large_string()):
            got = _maybe_duplicates([pa.array(q, typ), pa.array(d, typ)])
            assert got == truth       # never a missed repeat (and, with 64-bit hashes on 60 rows, no collision)


def test_word_hash_equal_exactly_where_strings_are():
    "The 8-bytes-at-a-time hash: equal strings give equal hashes, and distinct ones (lengths across word boundaries, "
    "shared prefixes, trailing NUL bytes, multi-byte UTF-8, sliced arrays, several blocks) distinct hashes."
    import pyarrow as pa
    from irinnov.trec import _hash64
    rng = np.random.default_rng(11)
    base = ["", "a", "a\x00", "a\x00\x00", "ab", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgi", "€", "€€€",
            "doc00012345", "doc00012346", "x" * 255, "x" * 256, "x" * 254 + "y"]
    base += ["".join(rng.choice(list("ab€\x00z"), int(rng.integers(0, 40)))) for _ in range(300)]
    vals = [base[i] for i in rng.integers(0, len(base), 2000)]
    for typ in (pa.string(), pa.large_string()):
        arr = pa.array(["pad"] * 7 + vals, typ).slice(7)        # a non-zero array offset
        for step in (1 << 16, 5):                               # one block, many blocks
            h = _hash64(arr, step=step)
            assert h is not None and len(h) == len(vals)
            by_value = {}
            for v, x in zip(vals, h.tolist()): by_value.setdefault(v, set()).add(x)
            assert all(len(s) == 1 for s in by_value.values())          # equal strings, one hash
            assert len({next(iter(s)) for s in by_value.values()}) == len(by_value)   # distinct strings, distinct hashes
    assert _hash64(pa.array(["x" * 257])) is None               # longer strings: left to dictionary codes
    assert len(_hash64(pa.array([], pa.string()))) == 0


# --- bytes read as trec_eval reads them (9.0.8 and 10.0, built from the shared sources), or refused at file:line ---

import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import oracle_build as ob      # noqa: E402


@pytest.fixture(scope="module")
def trec_eval(tmp_path_factory):
    why = ob.why_not()
    if why: pytest.skip(why)
    d = tmp_path_factory.mktemp("oracles")
    return {v: ob._make(ob.ORACLES / folder, d / folder, False) for v, folder in ob.VERSIONS.items()}


def _campaign():
    rng = random.Random(3)
    q = b"".join(f"{t} 0 D1_{d} {rng.randint(0, 2 if t == 1 else 1)}\n".encode() for t in (1, 2) for d in range(20))
    r = b"".join(f"{t} Q0 D1_{d} {k + 1} {30 - k}.5 runA\n".encode()
                 for t in (1, 2) for k, d in enumerate(rng.sample(range(25), 15)))
    return q, r

_MEASURES = ["-m", "map", "-m", "P.5", "-m", "ndcg"]

def _theirs(binary, q, r):
    p = subprocess.run([str(binary), *_MEASURES, str(q), str(r)], capture_output=True, text=True)
    return p.returncode, [line.split() for line in p.stdout.splitlines()]

def _ours(q, r, capsys):
    from irinnov.cli import main
    capsys.readouterr()
    code = main(["evaluate", str(q), str(r), *_MEASURES])
    out, err = capsys.readouterr()
    return code, [line.split() for line in out.splitlines()], err.strip()

Q, R = _campaign()
_SAME = {      # trec_eval gives a number: irinnov must give the same one
    "crlf": (Q.replace(b"\n", b"\r\n"), R.replace(b"\n", b"\r\n")),
    "vt-ff-separators": (Q.replace(b" 0 ", b"\x0b0\x0c"), R.replace(b" runA", b"\x0brunA").replace(b" Q0", b"\x0cQ0")),
    "cr-separator": (Q, R.replace(b" Q0 ", b"\rQ0\r")),
    "leading-spaces": (Q.replace(b"\n1 ", b"\n  1 "), b" \t" + R.replace(b"\n", b"\n\t ")[:-2]),
    "plus-grade": (Q.replace(b" 1\n", b" +1\n").replace(b" 2\n", b" 02\n"), R),
    "blank-run-lines": (Q, b"\n\n" + R.replace(b"\n", b"\n \n")),
}
_REFUSED = {   # trec_eval reads these otherwise than a text reader would (or crashes): refused at file:line
    "hex-grade": (Q.replace(b"D1_3 1\n", b"D1_3 0x1\n").replace(b"D1_3 2\n", b"D1_3 0X2\n").replace(b"D1_3 0\n", b"D1_3 0x7fff\n"),
                  R, r"q:4: grade '0x(1|7fff)' is not an integer \(trec_eval reads it as 0\)|q:4: grade '0X2' is not an integer"),
    "wrapping-hex-grade": (Q.replace(b"D1_5 ", b"D1_5 0xFFFFFFFFFFFFFFFF#").split(b"#")[0] + b"\n" + Q.split(b"D1_5 ")[1].split(b"\n", 1)[1],
                           R, r"q:6: grade '0xFFFFFFFFFFFFFFFF' is not an integer \(trec_eval reads it as 0\)"),
    "cr-in-run-id": (Q, R.replace(b"Q0 D1_1", b"Q0 D1_\r1", 1), r"input\.r:\d+: expected 6 columns in a run line, found 7"),
    "cr-in-qrels-id": (Q.replace(b"0 D1_4 ", b"0 D1_\r4 ", 1), R, r"q:5: expected 4 columns in a qrels line, found 5"),
    "vt-in-run-id": (Q, R.replace(b"Q0 D1_1", b"Q0 D1_\x0b1", 1), r"input\.r:\d+: expected 6 columns in a run line, found 7"),
    "nul-in-id": (Q, R.replace(b"Q0 D1_1", b"Q0 D1_\x001", 1), r"input\.r:\d+: a NUL byte"),
    "bom-run": (Q, b"\xef\xbb\xbf" + R, r"input\.r:1: the file starts with a UTF-8 byte order mark"),
    "bom-qrels": (b"\xef\xbb\xbf" + Q, R, r"q:1: the file starts with a UTF-8 byte order mark"),
    "score-underscore": (Q, R.replace(b" 17.5 ", b" 1_000 "), r"input\.r:14: score '1_000' is not a number \(trec_eval reads it as 1\)"),
    "score-fullwidth": (Q, R.replace(b" 17.5 ", " １２ ".encode()), r"input\.r:14: score '１２' is not a number \(trec_eval reads it as 0\)"),
    "score-arabic": (Q, R.replace(b" 17.5 ", " ١ ".encode()), r"input\.r:14: score '١' is not a number"),
    "grade-underscore": (Q.replace(b"D1_7 ", b"D1_7 1_"), R, r"q:8: grade '1_\d' is not an integer \(trec_eval reads it as 1\)"),
    "grade-arabic": (Q.replace(b"D1_7 ", "D1_7 ١".encode()), R, r"q:8: grade '١\d' is not an integer"),
    "grade-fullwidth": (Q.replace(b"D1_7 ", "D1_7 ２".encode()), R, r"q:8: grade '２\d' is not an integer"),
    "grade-overflow": (Q.replace(b"D1_7 ", b"D1_7 99999999999999999999999"), R, r"q:8: grade 99999999999999999999999\d is outside"),
    "blank-lines-then-bad": (Q, b"\n\n\n" + R.replace(b" 17.5 ", b" oops "), r"input\.r:17: score 'oops' is not a number"),
    "long-topic": (Q + b"T" * 20000 + b" 0 D1_1 1\n", R, r"q:41: query id of 20,000 bytes; ids longer than 1,024 bytes are refused"),
    "long-doc": (Q, R + b"1 Q0 " + b"D" * 2000 + b" 99 3 runA\n", r"input\.r:31: document id of 2,000 bytes"),
}

@pytest.mark.parametrize("case", sorted(_SAME))
def test_bytes_give_trec_eval_numbers(trec_eval, tmp_path, capsys, case):
    q, r = tmp_path / "q", tmp_path / "input.r"
    q.write_bytes(_SAME[case][0]); r.write_bytes(_SAME[case][1])
    code, mine, err = _ours(q, r, capsys)
    assert code == 0, err
    for v, binary in trec_eval.items():
        c, theirs = _theirs(binary, q, r)
        assert c == 0 and theirs == mine, (v, theirs, mine)
    q.write_bytes(Q); r.write_bytes(R)
    assert _ours(q, r, capsys)[1] == mine          # the clean files' numbers: the bytes changed nothing

@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_bytes_read_otherwise_by_trec_eval_are_refused_at_their_line(trec_eval, tmp_path, capsys, case):
    qb, rb, msg = _REFUSED[case]
    q, r = tmp_path / "q", tmp_path / "input.r"
    q.write_bytes(qb); r.write_bytes(rb)
    code, mine, err = _ours(q, r, capsys)
    assert code != 0 and not mine and len(err.splitlines()) == 1, err
    import re
    assert re.search(msg, err), err
    outcome = {v: _theirs(binary, q, r)[0] for v, binary in trec_eval.items()}   # what trec_eval does instead
    if case == "nul-in-id": assert outcome["9"] < 0                  # 9.0.8 crashes (SIGSEGV)
    if case == "cr-in-qrels-id": assert outcome["9"] and outcome["10"]     # "Malformed line 5": refused by both


# --- library input: one-line errors naming the argument -----------------------------------------------------------

@pytest.mark.parametrize("make, kind, msg", [
    (lambda R, Q: (R.assign(score=[True, False, True]), Q), TypeError, r"runs: score True is a bool, expected a number"),
    (lambda R, Q: (R, Q.assign(grade=[True, False])), TypeError, r"qrels: grade True is a bool, expected a number"),
    (lambda R, Q: (R, Q.assign(grade=[1.0, np.inf])), ValueError, r"qrels: non-integer grade inf for query 'q1', doc 'c'"),
    (lambda R, Q: (R.assign(doc=["a", 5, "c"]), Q), TypeError, r"runs: doc 5 \(int\) is not a string id"),
    (lambda R, Q: (R, Q.assign(doc=["a", 5])), TypeError, r"qrels: doc 5 \(int\) is not a string id"),
    (lambda R, Q: (None, Q), TypeError, r"runs: got NoneType, expected a DataFrame"),
    (lambda R, Q: (R, 5), TypeError, r"qrels: got int, expected a DataFrame"),
    (lambda R, Q: (R.assign(doc=[" a", "b", " c"]), Q), ValueError, r"runs: doc ' a' holds whitespace for system 's', query 'q1' \(row 0\); trec_eval splits"),
    (lambda R, Q: (R, Q.assign(doc=["a", "c\t"])), ValueError, r"qrels: doc 'c\\t' holds whitespace"),
    (lambda R, Q: ({"q1": {"a b": 1.0}}, Q), ValueError, r"runs: doc 'a b' holds whitespace"),
])
def test_library_input_errors_name_the_argument(make, kind, msg):
    runs, qrels = make(*_frames())
    with pytest.raises(kind, match=msg) as e: prepare(runs, qrels)
    assert "\n" not in str(e.value)


# --- a gzip bomb is refused with memory bounded by the chunk size -------------------------------------------------

def test_gzip_bomb_is_counted_with_bounded_memory(tmp_path):
    import tracemalloc
    import zlib
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(b"".join([c.compress(bytes(1 << 24)) for _ in range(16)] + [c.flush()]))    # 256 MiB of zeros
    tracemalloc.start()
    try:
        with pytest.raises(TrecFormatError, match=r"bomb\.gz: decompresses to more than 201,326,592 bytes"):
            read_run(bomb, max_bytes=192 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally: tracemalloc.stop()
    assert peak < 80 << 20, peak          # the chunks, not the cap (before: the whole 192 MiB, twice over)

def test_gzip_inflating_like_a_bomb_within_the_cap_is_read_whole(tmp_path, monkeypatch):
    import irinnov.core.read as rd
    monkeypatch.setattr(rd, "_GZ_KEEP", 1000)      # a small file takes the bomb's path: counted, then read again
    monkeypatch.setattr(rd, "_GZ_OUT", 512)
    monkeypatch.setattr(rd, "_GZ_IN", 64)
    lines = b"".join(f"1 Q0 d{i} {i + 1} {1000 - i} r\n".encode() for i in range(400))
    f = tmp_path / "input.z.gz"
    f.write_bytes(gzip.compress(lines) + gzip.compress(b"2 Q0 a 1 1 r\n") + bytes(8))
    got = read_run(f)
    assert len(got) == 401 and got.doc.iloc[-2] == "d399" and got["query"].iloc[-1] == "2"
    with pytest.raises(TrecFormatError, match="decompresses to more than 5,000 bytes"): read_run(f, max_bytes=5000)


def test_partial_downloads_of_killed_fetches_are_removed(tmp_path):
    import hashlib
    from irinnov.datasets import _copy_verified
    dest = tmp_path / "runs" / "input.x.gz"
    dest.parent.mkdir()
    dead, live = dest.parent / ".input.x.gz.999999999-abc.part", dest.parent / f".input.x.gz.{os.getppid()}-abc.part"
    other = dest.parent / ".input.y.gz.999999999-abc.part"
    for p in (dead, live, other): p.write_bytes(b"half")
    data = b"1 Q0 a 1 1 x\n"
    _copy_verified(lambda: [data], dest, hashlib.sha256(data).hexdigest(), "x", "here")
    assert dest.read_bytes() == data and not dead.exists() and live.exists() and other.exists()


# --- command line: an empty -m, a topic named 'all', a run file named with a newline -------------------------------

def test_cli_refuses_an_empty_measure_a_topic_named_all_and_a_newline_in_a_run_name(tmp_path, capsys):
    from irinnov.cli import main
    q, r = tmp_path / "q", tmp_path / "input.r"
    q.write_bytes(Q); r.write_bytes(R)
    assert main(["evaluate", str(q), str(r), "-m", ""]) == 2
    assert "-m: no measure named (an empty -m)" in capsys.readouterr().err
    bad = tmp_path / "input.a\nb"
    bad.write_bytes(R)
    assert main(["evaluate", str(q), str(bad), "-m", "map"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a file name holding a control character" in err
    qa, ra = tmp_path / "qa", tmp_path / "input.ra"
    qa.write_bytes(Q.replace(b"1 0 ", b"all 0 ")); ra.write_bytes(R.replace(b"1 Q0 ", b"all Q0 "))
    for fmt in ("json", "tsv"):
        assert main(["evaluate", str(qa), str(ra), "-m", "map", "-q", "--format", fmt]) == 2
        assert "a topic named 'all' cannot be told from the means" in capsys.readouterr().err
    assert main(["evaluate", str(qa), str(ra), "-m", "map", "-q"]) == 0          # trec_eval's own layout: as trec_eval


def test_a_measure_over_no_topic_is_said_once(tmp_path):
    "Qrels with no relevant document: the innovation-aware measures are undefined, said once (CLI) or per table (library)."
    import subprocess, sys
    from pathlib import Path
    from irinnov.core.campaign import UndefinedMeasureWarning
    from irinnov.core.encode import prepare
    from irinnov.infotheory import ric
    from irinnov.rareness import precision_rareness
    (tmp_path / "q").write_text("1 0 d1 0\n1 0 d2 0\n")
    rd = tmp_path / "runs"; rd.mkdir()
    for s in "abcde": (rd / f"input.{s}").write_text(f"1 Q0 d1 1 2 {s}\n1 Q0 d2 2 1 {s}\n")
    r = subprocess.run([str(Path(sys.executable).with_name("irinnov")), "evaluate", "q", "runs", "-m", "U", "RPP", "ASL",
                        "RIC", "P@10_rareness(alpha=1)", "map"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == ["irinnov: warning: no qrels topic has a document relevant at the level of U, RPP, ASL, "
                                     "RIC, P@10_rareness(alpha=1): they are averaged over no topic and undefined (nan)"]
    assert "map                   \tall\t0.0000" in r.stdout and "U                     \tall\t  -nan" in r.stdout
    c = prepare(rd, tmp_path / "q")
    with pytest.warns(UndefinedMeasureWarning, match="no qrels topic has a document of grade ≥ 1"):
        assert precision_rareness(c, k=10).shape == (5, 0)
    with pytest.raises(TypeError, match="graded must be True or False, not 'no'"): ric(c, graded="no")


# --- blank and comment lines: as trec_eval 9.0.8 and 10.0 read them, or refused at their line --------------------

_LINES = {   # (qrels, run, --trec-eval, None if trec_eval gives numbers, else our message); trec_eval then refuses
    "blank-qrels-line": (Q.replace(b"\n2 ", b"\n\n2 ", 1), R, "9", r"q:21: a blank line, which trec_eval refuses"),
    "space-qrels-line": (Q.replace(b"\n2 ", b"\n \t\n2 ", 1), R, "10", r"q:21: a blank line"),
    "crlf-blank-qrels-line": (Q.replace(b"\n2 ", b"\n\r\n2 ", 1), R, "9", r"q:21: a blank line"),
    "blank-last-qrels-line": (Q + b"\n", R, "9", r"q:41: a blank line"),
    "blank-first-qrels-line": (b"\n" + Q, R, "9", r"q:1: a blank line"),
    "space-first-qrels-line": (b" \t\n" + Q, R, "10", r"q:1: a blank line"),
    "space-last-qrels-line": (Q + b"   ", R, "10", r"q:41: a blank line"),
    "blank-run-lines-10": (Q, b"\n" + R.replace(b"\n2 ", b"\n  \n2 ", 1) + b"\t\n", "10", None),
    "qrels-comments-10": (b"# first\n" + Q.replace(b"\n2 ", b"\n#mid dle\n2 ", 1), R, "10", None),
    "run-comments-10": (Q, b"# a\n  # b\n" + R.replace(b"\n2 ", b"\n\t#c\n2 ", 1) + b"# end\n", "10", None),
    "indented-qrels-comment": (b" # 0 D1_1 1\n" + Q, R, "10", r"q:1: an indented '#' line"),
    "two-qrels-comments": (b"# a\n# b\n" + Q, R, "10", r"q:2: a comment line right after another"),
    "qrels-ending-in-comment": (Q + b"# end\n", R, "10", r"q:41: the qrels file ends with a comment line"),
}

@pytest.mark.parametrize("case", sorted(_LINES))
def test_blank_and_comment_lines_as_trec_eval_reads_them(trec_eval, tmp_path, capsys, case):
    qb, rb, version, msg = _LINES[case]
    q, r = tmp_path / "q", tmp_path / "input.r"
    q.write_bytes(qb); r.write_bytes(rb)
    from irinnov.cli import main
    capsys.readouterr()
    code = main(["evaluate", str(q), str(r), *_MEASURES, "--trec-eval", version])
    out, err = capsys.readouterr()
    c, theirs = _theirs(trec_eval[version], q, r)
    if msg is None:
        assert code == 0 and c == 0 and theirs == [line.split() for line in out.splitlines()], (theirs, out, err)
    else:
        import re
        assert code != 0 and not out and len(err.strip().splitlines()) == 1 and re.search(msg, err), err
        assert c != 0 and not theirs             # trec_eval refuses it too ("Malformed line"), or crashes
