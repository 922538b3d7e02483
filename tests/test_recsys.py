"""irinnov.recsys: the MovieLens loader on wheel-shaped zips made here (no network), the split and qrels rules, the
recommenders against brute-force formulas, the runs' order against irinnov.trec, and the cache."""
import os, zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import irinnov.recsys as R
from irinnov.datasets import ChecksumError, FetchError, sha256
from irinnov.trec import order_runs, prepare


def synthetic_ratings(users=25, items=30, density=0.4, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mask = rng.random((users, items)) < density
    mask[:, 0] = True                                   # every user rates something
    u, i = np.nonzero(mask)
    order = rng.permutation(len(u))
    return pd.DataFrame({"user": u[order] + 1, "item": (i[order] + 1) * 7, "rating": rng.integers(1, 6, len(u)),
                         "timestamp": 800_000_000 + np.arange(len(u))})


@pytest.fixture
def wheel_dir(tmp_path):
    d = tmp_path / "index"
    d.mkdir()
    ratings = synthetic_ratings()
    R.make_wheel_like(d / R.RECBOLE_WHEEL, ratings)
    return d, ratings


def write_member(path, text: str) -> Path:
    with zipfile.ZipFile(path, "w") as z: z.writestr(R.ML100K_MEMBER, text)
    return path


HEADER = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"


# ---- reading the ratings ---------------------------------------------------------------------------------------------

def test_read_round_trip(tmp_path):
    ratings = synthetic_ratings()
    got = R.read_movielens_ratings(R.make_wheel_like(tmp_path / "w.whl", ratings))
    pd.testing.assert_frame_equal(got, ratings.reset_index(drop=True).astype("int64"))


@pytest.mark.parametrize("body, message", [
    ("1\t2\t3\n", "w.whl!recbole/dataset_example/ml-100k/ml-100k.inter: line 2: expected 4 tab-separated fields, found 3"),
    ("1\t2\t3\t4\n1\t3\tx\t5\n", "line 3: rating 'x' is not an integer"),
    ("1\t2\t3\t4\n1\t3\t2.5\t5\n", "line 3: rating '2.5' is not an integer"),
    ("1\t2\t6\t4\n", "line 2: rating 6 is outside 1..5"),
    ("1\t2\t3\t4\n2\t2\t3\t4\n1\t2\t5\t9\n", "line 4: user 1 rates item 2 a second time"),
    ("", "line 1: no ratings after the header"),
])
def test_bad_lines_name_member_and_line(tmp_path, body, message):
    path = write_member(tmp_path / "w.whl", HEADER + body)
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")):
        R.read_movielens_ratings(path)


def test_bad_header_and_bad_zip(tmp_path):
    with pytest.raises(ValueError, match="line 1: expected the header"):
        R.read_movielens_ratings(write_member(tmp_path / "h.whl", "user\titem\trating\ttime\n1\t2\t3\t4\n"))
    (tmp_path / "z.whl").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="z.whl: not a zip file"):
        R.read_movielens_ratings(tmp_path / "z.whl")
    with pytest.raises(ValueError, match="no member other"):
        R.read_movielens_ratings(write_member(tmp_path / "m.whl", HEADER + "1\t2\t3\t4\n"), member="other")


# ---- fetching the wheel with pip (a local file index: no network) ----------------------------------------------------

def test_fetch_checks_sha256_and_caches(wheel_dir, tmp_path, monkeypatch):
    index, ratings = wheel_dir
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError, match="sha256 mismatch"):          # the pinned digest refuses a synthetic wheel
        R.fetch_recbole_wheel(cache_dir=cache, find_links=index)
    assert not (cache / R.RECBOLE_WHEEL).exists()
    assert not [p for p in cache.iterdir() if p.name.startswith(".pip-")]   # no temporary left behind
    digest = sha256(index / R.RECBOLE_WHEEL)
    got = R.fetch_recbole_wheel(cache_dir=cache, find_links=index, expected_sha256=digest)
    assert got == cache / R.RECBOLE_WHEEL and sha256(got) == digest
    pd.testing.assert_frame_equal(R.read_movielens_ratings(got), ratings.reset_index(drop=True).astype("int64"))
    # a cached, verified wheel is used without pip: an index that has nothing still works
    empty = tmp_path / "empty"
    empty.mkdir()
    assert R.fetch_recbole_wheel(cache_dir=cache, find_links=empty, expected_sha256=digest) == got
    # a corrupted cache entry is fetched again
    got.write_bytes(b"corrupt")
    assert sha256(R.fetch_recbole_wheel(cache_dir=cache, find_links=index, expected_sha256=digest)) == digest
    # a symlink in the cache is replaced, never followed
    target = tmp_path / "elsewhere.whl"
    target.write_bytes(b"keep me")
    got.unlink()
    got.symlink_to(target)
    R.fetch_recbole_wheel(cache_dir=cache, find_links=index, expected_sha256=digest)
    assert not got.is_symlink() and target.read_bytes() == b"keep me"


def test_fetch_offline_is_one_clear_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FetchError) as e:
        R.fetch_recbole_wheel(cache_dir=tmp_path / "cache", find_links=empty)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"cannot fetch recbole=={R.RECBOLE_VERSION} from the folder {empty} with pip" in msg
    assert "find_links=DIR" in msg and R.RECBOLE_WHEEL in msg


def test_fetch_uses_the_mirror_pypi_folder(wheel_dir, tmp_path, monkeypatch):
    index, _ = wheel_dir
    mirror = tmp_path / "mirror"
    (mirror / "pypi").mkdir(parents=True)
    os.link(index / R.RECBOLE_WHEEL, mirror / "pypi" / R.RECBOLE_WHEEL)
    monkeypatch.setenv("IRINNOV_MIRROR", str(mirror))
    digest = sha256(index / R.RECBOLE_WHEEL)
    got = R.fetch_recbole_wheel(cache_dir=tmp_path / "cache", expected_sha256=digest)
    assert sha256(got) == digest


# ---- split and judgments ---------------------------------------------------------------------------------------------

def test_split_per_user_counts_and_seed():
    ratings = synthetic_ratings()
    train, test = R.split_ratings(ratings, test_fraction=0.2, seed=3)
    n = ratings.groupby("user").size()
    held = test.groupby("user").size().reindex(n.index, fill_value=0)
    expected = np.floor(0.2 * n + 0.5).astype(int)                      # round half up, per user
    assert (held == expected).all()
    both = pd.concat([train, test]).sort_values(["user", "item"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(both, ratings.sort_values(["user", "item"]).reset_index(drop=True))
    assert not set(map(tuple, train[["user", "item"]].values)) & set(map(tuple, test[["user", "item"]].values))
    pd.testing.assert_frame_equal(R.split_ratings(ratings, test_fraction=0.2, seed=3)[1], test)
    assert not R.split_ratings(ratings, test_fraction=0.2, seed=4)[1].equals(test)
    with pytest.raises(ValueError, match="test_fraction"):
        R.split_ratings(ratings, test_fraction=1.0)


def test_qrels_binary_and_users_without_relevant_dropped():
    test = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [5, 6, 5, 7, 9], "rating": [4, 2, 3, 1, 5]})
    q = R.ratings_qrels(test)
    assert q.values.tolist() == [["1", "5", 1], ["1", "6", 0], ["3", "9", 1]]
    assert R.ratings_qrels(test, threshold=5).values.tolist() == [["3", "9", 1]]


# ---- recommenders against brute force --------------------------------------------------------------------------------

def brute_cosine(A):
    n = np.linalg.norm(A, axis=1)
    C = (A @ A.T) / np.outer(n, n)
    return C


def test_user_knn_brute_force():
    rng = np.random.default_rng(0)
    A = (rng.random((12, 9)) < 0.4) * rng.random((12, 9))               # weighted: no ties among similarities
    A[:, 0] = rng.random(12) + 0.1                                       # no empty user
    X = sp.csr_matrix(A)
    for k in (1, 3, 11):
        got = R.user_knn_scores(X, k)
        for u in range(len(A)):
            sims = [(brute_cosine(A)[u, v], -v, v) for v in range(len(A)) if v != u]
            nbrs = [v for s, _, v in sorted(sims, reverse=True)[:k]]
            want = sum(brute_cosine(A)[u, v] * A[v] for v in nbrs)
            np.testing.assert_allclose(got[u], want, atol=1e-12)


def test_item_knn_brute_force():
    pytest.importorskip("implicit")
    rng = np.random.default_rng(2)
    A = (rng.random((20, 8)) < 0.5) * rng.random((20, 8))               # weighted: no ties among similarities
    X = sp.csr_matrix(A.astype(np.float32))
    for k in (2, 4):
        got = R.implicit_scores(X, "item_knn", k=k)
        C = brute_cosine(A.T)
        S = np.zeros_like(C)
        for i in range(len(C)):                                          # each item keeps its k most similar (itself included)
            keep = np.argsort(-C[i])[:k]
            S[i, keep] = C[i, keep]
        np.testing.assert_allclose(got, A @ S, rtol=1e-5, atol=1e-6)


def test_pure_svd_and_ease_closed_forms():
    rng = np.random.default_rng(5)
    A = (rng.random((15, 10)) < 0.4).astype(float)
    X = sp.csr_matrix(A.astype(np.float32))
    U, s, Vt = np.linalg.svd(A)
    V = Vt[:3].T
    np.testing.assert_allclose(R.pure_svd_scores(X, 3), A @ V @ V.T, atol=1e-10)
    # EASE: each column j of B minimises ||X_j - X B_j||² + λ||B_j||² with B_jj = 0 (Steck 2019): solve it column by column
    lam = 2.0
    B = np.zeros((10, 10))
    for j in range(10):
        o = [i for i in range(10) if i != j]
        Xo = A[:, o]
        B[o, j] = np.linalg.solve(Xo.T @ Xo + lam * np.eye(9), Xo.T @ A[:, j])
    np.testing.assert_allclose(R.ease_scores(X, lam), A @ B, atol=1e-10)


def test_popularity_and_random():
    ratings = synthetic_ratings()
    users, items = np.sort(ratings.user.unique()), np.sort(ratings.item.unique())
    pop = R.score_matrix("popularity", ratings, users, items)
    assert pop[0].tolist() == [int((ratings.item == i).sum()) for i in items]
    liked = R.score_matrix("popularity", ratings, users, items, min_rating=4)
    assert liked[3].tolist() == [int(((ratings.item == i) & (ratings.rating >= 4)).sum()) for i in items]
    a = R.score_matrix("random", ratings, users, items, seed=7)
    assert np.array_equal(a, R.score_matrix("random", ratings, users, items, seed=7))
    assert not np.array_equal(a, R.score_matrix("random", ratings, users, items, seed=8))
    with pytest.raises(ValueError, match="unknown recommender family"):
        R.score_matrix("svdpp", ratings, users, items)


# ---- runs ------------------------------------------------------------------------------------------------------------

def test_top_n_is_trec_order_and_excludes_seen():
    rng = np.random.default_rng(4)
    users, items = np.array([3, 10, 200]), np.array([1, 2, 9, 10, 11, 100, 101])
    scores = rng.integers(0, 3, (3, 7)).astype(float)                   # many ties
    seen = sp.csr_matrix((rng.random((3, 7)) < 0.3).astype(np.float32))
    run = R.top_n_runs(scores, seen, users, items, n=4, system="s")
    for r, u in enumerate(users):
        cand = [(scores[r, j], str(items[j]).encode()) for j in range(7) if seen[r, j] == 0]
        # trec_eval's order: score descending, then doc id descending byte-wise ("10" before "1")
        want = [d.decode() for _, d in sorted(cand, reverse=True)][:4]
        assert run[run["query"] == str(u)]["doc"].tolist() == want
    ordered = order_runs(run)
    for u in users:
        assert ordered[ordered["query"] == str(u)]["doc"].tolist() == run[run["query"] == str(u)]["doc"].tolist()


def test_movielens_runs_end_to_end_and_reproducible():
    ratings = synthetic_ratings()
    recs = [r for r in R.RECOMMENDERS if r[1] in ("random", "popularity", "user_knn", "pure_svd", "ease")]
    runs, qrels = R.movielens_runs(ratings, seed=0, depth=5, recommenders=recs)
    train, test = R.split_ratings(ratings, seed=0)
    seen = set(zip(train.user.astype(str), train.item.astype(str)))
    assert not seen & set(zip(runs["query"], runs["doc"]))
    assert runs.groupby(["system", "query"]).size().max() == 5
    assert sorted(runs.system.unique()) == sorted(r[0] for r in recs)
    pd.testing.assert_frame_equal(qrels, R.ratings_qrels(test))
    again = R.movielens_runs(ratings, seed=0, depth=5, recommenders=recs)
    pd.testing.assert_frame_equal(again[0], runs)
    c = prepare(runs, qrels)
    assert len(c.systems) == len(recs)


def test_implicit_models_are_seeded():
    pytest.importorskip("implicit")
    ratings = synthetic_ratings()
    users, items = np.sort(ratings.user.unique()), np.sort(ratings.item.unique())
    for kind, params in (("als", {"factors": 4, "iterations": 3}), ("bpr", {"factors": 4, "iterations": 5}),
                         ("lmf", {"factors": 4, "iterations": 3})):
        a = R.score_matrix(kind, ratings, users, items, seed=1, **params)
        assert np.array_equal(a, R.score_matrix(kind, ratings, users, items, seed=1, **params)), kind


def test_load_caches_atomically_and_registers(wheel_dir, tmp_path, monkeypatch):
    index, ratings = wheel_dir
    monkeypatch.setattr(R, "RECBOLE_SHA256", sha256(index / R.RECBOLE_WHEEL))
    recs = tuple(r for r in R.RECOMMENDERS if r[1] in ("random", "popularity", "ease"))
    cache = tmp_path / "cache"
    runs, qrels = R.load_movielens_runs(cache_dir=cache, find_links=index, recommenders=recs, depth=5)
    want = R.movielens_runs(ratings, depth=5, recommenders=recs)
    pd.testing.assert_frame_equal(runs, want[0])
    pd.testing.assert_frame_equal(qrels, want[1])
    files = sorted(p.name for p in cache.iterdir() if p.suffix == ".parquet")
    assert len(files) == 2 and all(f.startswith(("runs-seed0-", "qrels-seed0-")) for f in files)
    assert not [p for p in cache.iterdir() if p.name.endswith(".part")]
    (index / R.RECBOLE_WHEEL).unlink()                                   # the cache is read: no wheel needed
    (cache / R.RECBOLE_WHEEL).unlink()
    again = R.load_movielens_runs(cache_dir=cache, find_links=index, recommenders=recs, depth=5)
    pd.testing.assert_frame_equal(again[0], runs)
    with pytest.raises(FetchError):                                       # refresh trains again: needs the wheel
        R.load_movielens_runs(cache_dir=cache, find_links=index, recommenders=recs, depth=5, refresh=True)
    from irinnov.datasets import available
    assert R.DATASET in set(available()["name"])


def test_registered_dataset_loads_through_the_registry(wheel_dir, tmp_path, monkeypatch):
    pytest.importorskip("implicit")
    index, ratings = wheel_dir
    mirror = tmp_path / "mirror"
    (mirror / "pypi").mkdir(parents=True)
    os.link(index / R.RECBOLE_WHEEL, mirror / "pypi" / R.RECBOLE_WHEEL)
    monkeypatch.setenv("IRINNOV_MIRROR", str(mirror))
    monkeypatch.setenv("IRINNOV_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(R, "RECBOLE_SHA256", sha256(index / R.RECBOLE_WHEEL))
    from irinnov.datasets import load
    ds = load(R.DATASET, progress=False, reload=True)
    runs, qrels = R.movielens_runs(ratings)                              # the full run set, seed 0, top 100
    pd.testing.assert_frame_equal(ds.runs, runs)
    pd.testing.assert_frame_equal(ds.qrels, qrels)
    pd.testing.assert_frame_equal(ds.ratings, ratings.reset_index(drop=True).astype("int64"))
    assert sorted(ds.runs.system.unique()) == sorted(r[0] for r in R.RECOMMENDERS)
    assert (tmp_path / "home" / R.DATASET / R.RECBOLE_WHEEL).is_file()
