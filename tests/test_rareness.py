"Tests of irinnov.rareness: SPEC §1.7 worked examples (exact fractions) and §1.10 properties against oracles."
from fractions import Fraction as Fr
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings, strategies as st

from irinnov import datasets, meta, metrics
from irinnov.experiments.rareness import PAPER, reproduce_paper
from irinnov.rareness import (ap_rareness, precision_rareness, rareness_system_sampling, rarity,
                              sampled_means, synthetic_ranks)
from irinnov.trec import prepare

TOL = 1e-12
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mk(lists, qrels):
    "Runs and qrels frames from {system: {query: [(doc, score), ...]}} and {query: {doc: grade}}."
    rows = [(s, q, d, float(sc)) for s, qd in lists.items() for q, ds in qd.items() for d, sc in ds]
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qr = pd.DataFrame([(q, d, g) for q, dg in qrels.items() for d, g in dg.items()], columns=["query", "doc", "grade"])
    return runs, qr


def ranked(lists, qrels):
    "Like mk, from {system: {query: [docs best first]}}."
    return mk({s: {q: [(d, len(ds) - i) for i, d in enumerate(ds)] for q, ds in qd.items()} for s, qd in lists.items()},
              qrels)


def fr(xs):
    return np.array([float(Fr(x)) for x in xs.split()])


# ------------------------------------------------------------------------------------------------ Example A
RUNS_A, QRELS_A = mk({"A": {"q1": [("d1", .9), ("d2", .8), ("d5", .7), ("d3", .6)]},
                      "B": {"q1": [("d1", .9), ("d5", .8), ("d4", .5), ("d2", .4)]},
                      "C": {"q1": [("d3", 1.0), ("d4", .6), ("d1", .5), ("d2", .5)]}},
                     {"q1": dict(d1=2, d2=1, d3=1, d4=1, d5=0, d6=1)})


def test_example_a_rarity():
    r = rarity(RUNS_A, QRELS_A).set_index("doc")
    assert r.S_d.to_dict() == dict(d6=0, d3=2, d4=2, d1=3, d2=3)
    assert (r.S == 3).all()
    np.testing.assert_allclose(r.rarity[["d1", "d2", "d3", "d4", "d6"]], [0, 0, 1/3, 1/3, 1], atol=TOL)
    rn = rarity(RUNS_A, QRELS_A, normalized=True).set_index("doc")
    np.testing.assert_allclose(rn.rarity[["d1", "d2", "d3", "d4", "d6"]], [0, 0, .5, .5, 1], atol=TOL)
    r3 = rarity(RUNS_A, QRELS_A, depth=3).set_index("doc")      # C's 0.5 tie puts d2 before d1: d1 leaves C's top 3
    assert r3.S_d.to_dict() == dict(d6=0, d3=1, d1=2, d2=2, d4=2)
    np.testing.assert_allclose(r3.rarity[["d1", "d2", "d3", "d4", "d6"]], [1/3, 1/3, 2/3, 1/3, 1], atol=TOL)
    r3n = rarity(RUNS_A, QRELS_A, depth=3, normalized=True).set_index("doc")
    np.testing.assert_allclose(r3n.rarity[["d1", "d2", "d3", "d4", "d6"]], [.5, .5, 1, .5, 1], atol=TOL)
    assert list(r.grade[["d1", "d2"]]) == [2, 1]
    ws = rarity(RUNS_A, QRELS_A, depth=3, with_systems=True).set_index("doc").systems
    assert ws.to_dict() == dict(d6=(), d3=("C",), d1=("A", "B"), d2=("A", "C"), d4=("B", "C"))


EXAMPLE_A = [  # (function, kwargs, A B C)
    (precision_rareness, dict(alpha=0), "2/3 2/3 1"),
    (precision_rareness, dict(alpha=.5), "2/3 13/18 10/9"),
    (precision_rareness, dict(alpha=1), "2/3 7/9 11/9"),
    (precision_rareness, dict(alpha=1, depth=3), "8/9 8/9 13/9"),
    (precision_rareness, dict(alpha=.5, normalized=True), "1/3 5/12 2/3"),
    (precision_rareness, dict(alpha=1, normalized=True), "0 1/6 1/3"),
    (precision_rareness, dict(alpha=0, normalized=True), "2/3 2/3 1"),
    (ap_rareness, dict(alpha=0), "2/5 1/3 3/5"),
    (ap_rareness, dict(alpha=.5), "2/5 31/90 31/45"),
    (ap_rareness, dict(alpha=1), "2/5 16/45 7/9"),
    (ap_rareness, dict(alpha=1, depth=3), "8/15 4/9 83/90"),
    (ap_rareness, dict(alpha=.5, normalized=True), "1/5 11/60 13/30"),
    (ap_rareness, dict(alpha=0, k=None), "11/20 29/60 4/5"),
    (ap_rareness, dict(alpha=1, k=None), "17/30 47/90 91/90"),
]


@pytest.mark.parametrize("fn,kw,want", EXAMPLE_A)
def test_example_a_scores(fn, kw, want):
    kw = {"k": 3, **kw}
    t = fn(RUNS_A, QRELS_A, **kw)
    assert list(t.index) == ["A", "B", "C"] and list(t.columns) == ["q1"]
    np.testing.assert_allclose(t["q1"].to_numpy(), fr(want), atol=TOL, rtol=0)


def test_example_a_single_system():
    only_a = RUNS_A[RUNS_A.system == "A"]
    r = rarity(only_a, QRELS_A).set_index("doc")
    np.testing.assert_allclose(r.rarity[["d1", "d2", "d3"]], 0, atol=TOL)
    np.testing.assert_allclose(rarity(only_a, QRELS_A, normalized=True).rarity, 1, atol=TOL)
    for a in (0, .5, 1, 3):
        assert precision_rareness(only_a, QRELS_A, k=3, alpha=a).iloc[0, 0] == pytest.approx(2/3, abs=TOL)
    for a in (0, .5, 1):
        assert precision_rareness(only_a, QRELS_A, k=3, alpha=a, normalized=True).iloc[0, 0] == pytest.approx(2/3, abs=TOL)


def test_alpha_sequence_returns_dict():
    d = precision_rareness(RUNS_A, QRELS_A, k=3, alpha=np.array([0, .5, 1]))
    assert list(d) == [0.0, 0.5, 1.0]
    np.testing.assert_allclose(d[.5]["q1"], fr("2/3 13/18 10/9"), atol=TOL)
    assert d[1.0].attrs["measure"] == "P@3_rareness(alpha=1)" and d[1.0].attrs["higher_is_better"]
    d = ap_rareness(RUNS_A, QRELS_A, k=3, alpha=(1,))
    np.testing.assert_allclose(d[1.0]["q1"], fr("2/5 16/45 7/9"), atol=TOL)


# ------------------------------------------------------------------------------------------------ Example B
RUNS_B, QRELS_B = ranked({"X": {"q1": ["u1", "u4", "u2"], "q2": ["v1", "v9"], "q3": ["w1"]},
                          "Y": {"q1": ["u2", "u1", "u5"], "q3": ["w1"]},
                          "Z": {"q1": ["u4", "u5", "u9"], "q2": ["v9", "v8"], "q3": ["w2"]}},
                         {"q1": dict(u1=1, u2=2, u3=1, u4=0, u5=-2), "q2": dict(v1=1, v2=1), "q3": dict(w1=0)})


def test_example_b():
    r = rarity(RUNS_B, QRELS_B)
    assert r[["query", "doc", "S_d"]].values.tolist() == [["q1", "u3", 0], ["q1", "u1", 2], ["q1", "u2", 2],
                                                          ["q2", "v2", 0], ["q2", "v1", 1]]
    np.testing.assert_allclose(r.rarity, [1, 1/3, 1/3, 1, 2/3], atol=TOL)
    np.testing.assert_allclose(rarity(RUNS_B, QRELS_B, normalized=True).rarity, [1, .5, .5, 1, 1], atol=TOL)
    p = precision_rareness(RUNS_B, QRELS_B, k=2, alpha=1)
    assert list(p.columns) == ["q1", "q2"]
    np.testing.assert_allclose(p.to_numpy(), [[2/3, 5/6], [4/3, 0], [0, 0]], atol=TOL)
    np.testing.assert_allclose(p.mean(axis=1), [3/4, 2/3, 0], atol=TOL)
    pa = precision_rareness(RUNS_B, QRELS_B, k=2, alpha=1, all_qrels_topics=True)
    assert list(pa.columns) == ["q1", "q2", "q3"]
    np.testing.assert_allclose(pa.mean(axis=1), [1/2, 4/9, 0], atol=TOL)
    a = ap_rareness(RUNS_B, QRELS_B, k=2, alpha=1)
    np.testing.assert_allclose(a.to_numpy(), [[4/9, 5/6], [8/9, 0], [0, 0]], atol=TOL)
    np.testing.assert_allclose(a.mean(axis=1), [23/36, 4/9, 0], atol=TOL)
    np.testing.assert_allclose(ap_rareness(RUNS_B, QRELS_B, k=2, alpha=1, all_qrels_topics=True).mean(axis=1),
                               [23/54, 8/27, 0], atol=TOL)
    np.testing.assert_allclose(precision_rareness(RUNS_B, QRELS_B, k=2, alpha=0).mean(axis=1)[:2], [1/2, 1/2], atol=TOL)
    np.testing.assert_allclose(ap_rareness(RUNS_B, QRELS_B, k=2, alpha=0).mean(axis=1)[:2], [5/12, 1/3], atol=TOL)
    np.testing.assert_allclose(precision_rareness(RUNS_B, QRELS_B, k=2, alpha=.5).mean(axis=1)[:2], [5/8, 7/12], atol=TOL)
    pn = precision_rareness(RUNS_B, QRELS_B, k=2, alpha=.5, normalized=True)
    np.testing.assert_allclose(pn.loc["X"], [3/8, 1/2], atol=TOL)
    np.testing.assert_allclose(pn.mean(axis=1)[:2], [7/16, 3/8], atol=TOL)
    no_z = RUNS_B[RUNS_B.system != "Z"]
    r2 = rarity(no_z, QRELS_B).set_index("doc")
    np.testing.assert_allclose(r2.rarity[["u1", "u2", "v1"]], [0, 0, 1/2], atol=TOL)
    np.testing.assert_allclose(precision_rareness(no_z, QRELS_B, k=2, alpha=1).mean(axis=1), [5/8, 1/2], atol=TOL)


# ------------------------------------------------------------------------------------------------ Example C
def test_example_c_synthetic():
    sc = synthetic_ranks(RUNS_A, QRELS_A, query="q1", k=3)
    want = {("rare", 0.): ("1/3 2/3 1", [4, 3, 1.5]), ("common", 0.): ("1/3 2/3 1", [4, 3, 1.5]),
            ("rare", .5): ("11/24 11/12 11/8", [4, 2, 1]), ("rare", 1.): ("7/12 7/6 7/4", [4, 2, 1]),
            ("common", .5): ("1/3 2/3 25/24", [4, 3.5, 2]), ("common", 1.): ("1/3 2/3 13/12", [4, 3.5, 2])}
    assert len(sc) == 18
    for (kind, a), (scores, ranks) in want.items():
        got = sc[(sc.kind == kind) & (sc.alpha == a)]
        assert got.D.tolist() == [1, 2, 3]
        np.testing.assert_allclose(got.score, fr(scores), atol=TOL)
        assert got["rank"].tolist() == ranks


def _insert(runs, qrels, query, kind, D, k):
    "Brute force: the synthetic run and (for S_rare) its qrels, as in SPEC E6."
    c = prepare(runs, qrels)
    r = rarity(c)
    r = r[r["query"] == str(query)].sort_values(["S_d", "doc"], ascending=[False, True])
    if kind == "rare":
        docs = [f"zzrare{i:03d}" for i in range(D)]
        qrels = pd.concat([qrels, pd.DataFrame({"query": str(query), "doc": docs, "grade": 1})], ignore_index=True)
    else:
        docs = r.doc.tolist()[:D]
    docs = docs + [f"zzfill{i:03d}" for i in range(k - D)]
    syn = pd.DataFrame({"system": "~syn", "query": str(query), "doc": docs, "score": np.arange(k, 0, -1, dtype=float)})
    return pd.concat([runs, syn], ignore_index=True), qrels


def _mid_rank(scores: pd.Series, name: str) -> float:
    x = scores[name]
    real = scores.drop(name).to_numpy()
    return 1 + (real > x + TOL).sum() + 0.5 * (np.abs(real - x) <= TOL).sum()


# ------------------------------------------------------------------------------------------------ Example D
RUNS_D, QRELS_D = ranked({"S": {"q1": ["d", "a", "e", "b", "n1"]}, "T": {"q1": ["e", "c", "n2", "n3"]},
                          "U": {"q1": ["a", "c", "b"]}, "V": {"q1": ["n4", "e", "n5", "d"]}},
                         {"q1": {x: 1 for x in "abcde"}})


def _kendall_b(x, y):
    from scipy.stats import kendalltau
    return kendalltau(x, y).statistic


def test_example_d_algorithm1_exhaustive():
    c = prepare(RUNS_D, QRELS_D)
    full = precision_rareness(c, k=3, alpha=1).mean(axis=1)
    np.testing.assert_allclose(full, [17/12, 11/12, 3/2, 5/12], atol=TOL)
    np.testing.assert_allclose(ap_rareness(c, k=3, alpha=1).mean(axis=1), [53/60, 21/40, 9/10, 1/8], atol=TOL)
    np.testing.assert_allclose(sampled_means(c, subsets=[[0, 2]], k=3, alpha=1), [[4/3, 7/6]], atol=TOL)
    for measure, fn in (("P", precision_rareness), ("AP", ap_rareness)):
        full = fn(c, k=3, alpha=1).mean(axis=1).to_numpy()
        for N, want in ((2, 2/3), (3, 5/6)):
            subs = np.array(list(combinations(range(4), N)))
            sub = sampled_means(c, subsets=subs, measure=measure, k=3, alpha=1)
            taus = [_kendall_b(full[s], m) for s, m in zip(subs, sub)]
            assert np.mean(taus) == pytest.approx(want, abs=TOL)
            generic = [_kendall_b(full[s], fn(c.subset(systems=list(s)), k=3, alpha=1).mean(axis=1).to_numpy()) for s in subs]
            assert np.mean(generic) == pytest.approx(want, abs=TOL)
    sub = sampled_means(c, subsets=[[0, 1, 2]], k=3, alpha=1)[0]        # {S, T, U}: 13/9, 8/9, 4/3
    np.testing.assert_allclose(sub, [13/9, 8/9, 4/3], atol=TOL)


# ------------------------------------------------------------------------------------------------ random campaigns
@st.composite
def campaigns(draw, max_systems=5, allow_missing=True):
    "A small random campaign: distinct scores, some missing rankings, a topic without relevant documents."
    seed = draw(st.integers(0, 2**32 - 1))
    S = draw(st.integers(1, max_systems))
    Q = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    qrels, runs = [], []
    for q in range(Q):
        pool = [f"t{q}d{i}" for i in range(10)]
        judged = rng.choice(10, size=rng.integers(1, 9), replace=False)
        grades = rng.choice([-2, 0, 1, 2], size=len(judged), p=[.1, .4, .3, .2])
        if q == Q - 1 and Q > 1 and rng.random() < .5: grades[:] = 0       # a topic without relevant documents
        qrels += [(f"q{q}", pool[j], int(g)) for j, g in zip(judged, grades)]
        for s in range(S):
            if allow_missing and rng.random() < .15: continue               # no ranking for this topic
            n = int(rng.integers(1, 9))
            docs = rng.choice(10, size=n, replace=False)
            scores = rng.permutation(n) + rng.random() * 0.5                 # distinct scores
            runs += [(f"s{s}", f"q{q}", pool[d], float(x)) for d, x in zip(docs, scores)]
    runs.append(("s0", "q0", "t0d0", -1.0)) if not any(r[0] == "s0" and r[2] == "t0d0" for r in runs) else None
    runs = pd.DataFrame(runs, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame(qrels, columns=["query", "doc", "grade"])
    return runs, qrels


def _pytrec(runs, qrels, measures):
    qd = {}
    # negative grades are passed as 0 (the same for P and AP: relevant means ≥ 1): pytrec-eval-terrier 0.5.11
    # segfaults on some qrels holding negative grades (e.g. a topic whose only judgment is −2)
    for q, d, g in qrels.itertuples(index=False): qd.setdefault(q, {})[d] = max(int(g), 0)
    ev = pytrec_eval.RelevanceEvaluator(qd, set(measures))
    out = {}
    for s, grp in runs.groupby("system"):
        rd = {}
        for q, d, x in grp[["query", "doc", "score"]].itertuples(index=False): rd.setdefault(q, {})[d] = float(x)
        out[s] = ev.evaluate(rd)
    return out


@SETTINGS
@given(campaigns(), st.integers(1, 6))
def test_alpha_zero_equals_trec_eval(data, k):
    runs, qrels = data
    res = _pytrec(runs, qrels, [f"P.{k}", f"map_cut.{k}", "map"])
    for normalized in (False, True):
        p = precision_rareness(runs, qrels, k=k, alpha=0, normalized=normalized)
        a = ap_rareness(runs, qrels, k=k, alpha=0, normalized=normalized)
        m = ap_rareness(runs, qrels, k=None, alpha=0, normalized=normalized)
        for s in p.index:
            for q in p.columns:
                got = res[s].get(q)
                assert p.loc[s, q] == pytest.approx(got[f"P_{k}"] if got else 0, abs=TOL)
                assert a.loc[s, q] == pytest.approx(got[f"map_cut_{k}"] if got else 0, abs=TOL)
                assert m.loc[s, q] == pytest.approx(got["map"] if got else 0, abs=TOL)


def _same_on_rareness_topics(a: pd.DataFrame, b: pd.DataFrame):
    "The rareness table (topics with a relevant document) equals the classic one there; the classic table's other columns (trec_eval -c: every qrels topic) are 0."
    pd.testing.assert_frame_equal(a, b[a.columns], check_exact=False, atol=TOL, rtol=0, check_names=True)
    assert (b.drop(columns=a.columns).to_numpy() == 0).all()


def test_alpha_zero_equals_metrics_module_examples():
    c = prepare(RUNS_B, QRELS_B)
    _same_on_rareness_topics(precision_rareness(c, k=2, alpha=0), metrics.precision(c, k=2))
    _same_on_rareness_topics(ap_rareness(c, k=2, alpha=0), metrics.average_precision(c, depth=2))
    c = prepare(RUNS_A, QRELS_A)
    _same_on_rareness_topics(ap_rareness(c, k=None, alpha=0), metrics.average_precision(c))


@SETTINGS
@given(campaigns(), st.integers(1, 6), st.booleans())
def test_alpha_zero_equals_metrics_module(data, k, normalized):
    runs, qrels = data
    c = prepare(runs, qrels)
    if not c.evaluated().any(): return
    for a, b in ((precision_rareness(c, k=k, alpha=0, normalized=normalized), metrics.precision(c, k=k)),
                 (ap_rareness(c, k=k, alpha=0, normalized=normalized), metrics.average_precision(c, depth=k)),
                 (ap_rareness(c, k=None, alpha=0, normalized=normalized), metrics.average_precision(c))):
        _same_on_rareness_topics(a, b)


@SETTINGS
@given(campaigns(), st.integers(1, 5), st.sampled_from([None, 5, 8]))
def test_affine_and_bounds(data, k, depth):
    runs, qrels = data
    if depth is not None and depth < k: depth = None
    c = prepare(runs, qrels)
    S = c.n_systems
    for fn in (precision_rareness, ap_rareness):
        t = fn(c, k=k, alpha=[0, .3, 1, 2.5], depth=depth)
        for a in (.3, 2.5):                                                        # (R6)
            np.testing.assert_allclose(t[a], t[0.0] + a * (t[1.0] - t[0.0]), atol=TOL)
        base = t[0.0].to_numpy()
        for a in (.3, 1.0, 2.5):                                                   # (R7)
            x = t[a].to_numpy()
            assert (x >= base - TOL).all() and (x <= (1 + a * (S - 1) / S) * base + TOL).all()
        assert (t[1.0].to_numpy() < 2).all()
        n = fn(c, k=k, alpha=[0, .4, 1], depth=depth, normalized=True)
        np.testing.assert_allclose(n[0.0], base, atol=TOL)
        for a in (.4, 1.0):
            x = n[a].to_numpy()
            assert (x >= (1 - a) * base - TOL).all() and (x <= base + TOL).all()
        if S == 1:                                                                 # S = 1: classic for every α
            np.testing.assert_allclose(t[2.5], t[0.0], atol=TOL)
            np.testing.assert_allclose(n[1.0], t[0.0], atol=TOL)


@SETTINGS
@given(campaigns(), st.sampled_from([1, 2, 4]))
def test_rarity_properties(data, depth):
    runs, qrels = data
    c = prepare(runs, qrels)
    S = c.n_systems
    r = rarity(c)
    rn = rarity(c, normalized=True)
    rd = rarity(c, depth=depth)
    key = ["query", "doc"]
    m = (r.merge(rn[key + ["rarity"]].rename(columns={"rarity": "rarity_n"}), on=key)
          .merge(rd[key + ["S_d"]].rename(columns={"S_d": "S_d_d"}), on=key))
    assert len(m) == len(r) == len(rd) == int((qrels.grade >= 1).sum())
    assert (m.S_d_d <= m.S_d).all()                                                # S_d grows with depth
    hit = m.S_d >= 1
    assert ((m.rarity[hit] >= -TOL) & (m.rarity[hit] <= (S - 1) / S + TOL)).all()
    assert ((m.rarity_n >= -TOL) & (m.rarity_n <= 1 + TOL)).all()
    assert np.allclose(m.rarity[~hit], 1) and np.allclose(m.rarity_n[~hit], 1)
    if S >= 2: np.testing.assert_allclose(m.rarity_n[hit], S / (S - 1) * m.rarity[hit], atol=TOL)
    # brute force S_d
    top = c.runs
    for row in m.sample(min(len(m), 6), random_state=0).itertuples():
        lst = top[(top["query"] == row.query)]
        assert row.S_d == lst[lst.doc == row.doc].system.nunique()
        assert row.S_d_d == lst[(lst.doc == row.doc) & (lst["rank"] <= depth)].system.nunique()
    # sorted by query, S_d, doc
    assert r.equals(r.sort_values(["query", "S_d", "doc"]).reset_index(drop=True))


@SETTINGS
@given(campaigns(max_systems=4), st.integers(1, 4))
def test_adding_a_run_without_relevant_documents(data, k):
    runs, qrels = data
    junk = pd.DataFrame({"system": "zz_junk", "query": "q0", "doc": ["nojudge1", "nojudge2"], "score": [2.0, 1.0]})
    more = pd.concat([runs, junk], ignore_index=True)
    r0, r1 = rarity(runs, qrels), rarity(more, qrels)
    m = r0.merge(r1, on=["query", "doc"], suffixes=("0", "1"))
    hit = m.S_d0 >= 1
    assert (m.S_d0 == m.S_d1).all()
    assert (m.rarity1[hit] > m.rarity0[hit]).all()                                # R strictly rises
    n0, n1 = rarity(runs, qrels, normalized=True), rarity(more, qrels, normalized=True)
    mn = n0.merge(n1, on=["query", "doc"], suffixes=("0", "1"))
    assert (mn.rarity1[mn.S_d0 >= 2] > mn.rarity0[mn.S_d0 >= 2]).all()
    assert np.allclose(mn.rarity1[mn.S_d0 == 1], 1)
    for fn in (precision_rareness, ap_rareness):
        before, after = fn(runs, qrels, k=k, alpha=1), fn(more, qrels, k=k, alpha=1)
        assert (after.loc[before.index].to_numpy() >= before.to_numpy() - TOL).all()
        assert (after.loc["zz_junk"] == 0).all()


@SETTINGS
@given(campaigns(), st.integers(1, 4))
def test_all_qrels_topics_scales_means(data, k):
    runs, qrels = data
    c = prepare(runs, qrels)
    n_eval, n_all = int(c.evaluated().sum()), len(c.topics)
    for fn in (precision_rareness, ap_rareness):
        a, b = fn(c, k=k, alpha=.7), fn(c, k=k, alpha=.7, all_qrels_topics=True)
        assert list(b.columns) == sorted(b.columns) and set(a.columns) <= set(b.columns)
        assert (b.drop(columns=a.columns) == 0).all().all()
        if n_eval: np.testing.assert_allclose(b.mean(axis=1), a.mean(axis=1) * n_eval / n_all, atol=TOL)


@SETTINGS
@given(campaigns(), st.integers(0, 10**6))
def test_invariance_to_row_order_and_names(data, seed):
    runs, qrels = data
    shuffled = runs.sample(frac=1, random_state=seed % 2**31).reset_index(drop=True)
    names = {s: f"renamed_{s}" for s in runs.system.unique()}
    renamed = runs.assign(system=runs.system.map(names))
    for fn in (precision_rareness, ap_rareness):
        t = fn(runs, qrels, k=3, alpha=.8)
        pd.testing.assert_frame_equal(fn(shuffled, qrels.sample(frac=1, random_state=1), k=3, alpha=.8), t)
        u = fn(renamed, qrels, k=3, alpha=.8)
        np.testing.assert_array_equal(u.loc[[names[s] for s in t.index]].to_numpy(), t.to_numpy())
    pd.testing.assert_frame_equal(rarity(shuffled, qrels), rarity(runs, qrels))


@SETTINGS
@given(campaigns(max_systems=4))
def test_topic_rarity_depends_only_on_its_rankings(data):
    runs, qrels = data
    only_q0 = runs[runs["query"] == "q0"]
    r_all = rarity(runs, qrels)
    missing = set(runs.system) - set(only_q0.system)                    # keep S: add empty systems as rows on no topic
    extra = pd.DataFrame({"system": sorted(missing), "query": "not_a_topic", "doc": "x", "score": 0.0})
    r_q0 = rarity(pd.concat([only_q0, extra], ignore_index=True), qrels)
    pd.testing.assert_frame_equal(r_all[r_all["query"] == "q0"].reset_index(drop=True),
                                  r_q0[r_q0["query"] == "q0"].reset_index(drop=True))


def test_everyone_retrieves_everything():
    lists = {s: {"q1": ["a", "b", "c", "x"][::(1 if s != "B" else -1)]} for s in "ABC"}
    runs, qrels = ranked(lists, {"q1": dict(a=1, b=2, c=1, x=0)})
    assert (rarity(runs, qrels).rarity == 0).all()
    for fn in (precision_rareness, ap_rareness):
        np.testing.assert_allclose(fn(runs, qrels, k=3, alpha=1), fn(runs, qrels, k=3, alpha=0), atol=TOL)


@SETTINGS
@given(campaigns(max_systems=4), st.integers(2, 5), st.sampled_from(["rare", "common"]))
def test_synthetic_ranks_brute_force(data, k, kind):
    runs, qrels = data
    q = "q0"
    if not (qrels[qrels["query"] == q].grade >= 1).any(): return
    got = synthetic_ranks(runs, qrels, query=q, kinds=kind, alphas=(0, .5, 1), k=k)
    for row in got.itertuples():
        r2, q2 = _insert(runs, qrels, q, kind, int(row.D), k)
        scores = precision_rareness(r2, q2, k=k, alpha=row.alpha)[q]
        assert row.score == pytest.approx(scores["~syn"], abs=TOL)
        assert row.rank == _mid_rank(scores, "~syn")


@SETTINGS
@given(campaigns(max_systems=5, allow_missing=True), st.integers(1, 4), st.booleans(), st.sampled_from([0.5, 1.0]))
def test_sampled_means_equal_rescoring(data, k, normalized, alpha):
    runs, qrels = data
    c = prepare(runs, qrels)
    if not c.evaluated().any(): return
    S = c.n_systems
    for measure, fn in (("P", precision_rareness), ("AP", ap_rareness)):
        for N in range(1, S + 1):
            subs = np.array(list(combinations(range(S), N))[:4])
            got = sampled_means(c, subsets=subs, measure=measure, k=k, alpha=alpha, normalized=normalized)
            for sub, g in zip(subs, got):
                want = fn(c.subset(systems=list(sub)), k=k, alpha=alpha, normalized=normalized).mean(axis=1).to_numpy()
                np.testing.assert_allclose(g, want, atol=TOL)


def test_fast_algorithm1_equals_meta_system_sampling():
    rng = np.random.default_rng(3)
    pool = [f"d{i}" for i in range(30)]
    qrels = pd.DataFrame([(f"q{q}", d, int(g)) for q in range(4) for d, g in zip(pool, rng.choice([0, 0, 1, 2], 30))],
                         columns=["query", "doc", "grade"])
    runs = pd.DataFrame([(f"s{s}", f"q{q}", pool[d], float(20 - r)) for s in range(9) for q in range(4)
                         for r, d in enumerate(rng.choice(30, 12, replace=False))],
                        columns=["system", "query", "doc", "score"])
    c = prepare(runs, qrels)
    for measure, fn in (("P", precision_rareness), ("AP", ap_rareness)):
        gs = meta.system_sampling(c, lambda sub: fn(sub, k=5, alpha=1.0), sizes=(2, 4, 8), trials=30, seed=11,
                                  detail=True)
        g, gt = gs.summary, gs.taus
        res = rareness_system_sampling(c, measure=measure, k=5, alpha=1.0, sizes=(2, 4, 8), trials=30, seed=11,
                                       detail=True)
        f, ft = res.summary, res.taus
        assert f[["N", "trials", "excluded"]].values.tolist() == g[["N", "trials", "excluded"]].values.tolist()
        np.testing.assert_allclose(f.mean_tau, g.mean_tau, atol=TOL)
        np.testing.assert_allclose(ft.tau.fillna(9), gt.tau.fillna(9), atol=TOL)


# ------------------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("call,word", [
    (lambda: precision_rareness(RUNS_A, QRELS_A, k=0), "k"),
    (lambda: precision_rareness(RUNS_A, QRELS_A, k=2.5), "k"),
    (lambda: precision_rareness(RUNS_A, QRELS_A, k=None), "k"),
    (lambda: precision_rareness(RUNS_A, QRELS_A, alpha=-0.5), "alpha"),
    (lambda: ap_rareness(RUNS_A, QRELS_A, alpha=[0, -1]), "alpha"),
    (lambda: precision_rareness(RUNS_A, QRELS_A, alpha=1.2, normalized=True), "alpha"),
    (lambda: ap_rareness(RUNS_A, QRELS_A, alpha=1.2, normalized=True), "alpha"),
    (lambda: precision_rareness(RUNS_A, QRELS_A, k=10, depth=5), "depth"),
    (lambda: ap_rareness(RUNS_A, QRELS_A, k=None, depth=100), "depth"),
    (lambda: rarity(RUNS_A, QRELS_A, depth=0), "depth"),
    (lambda: precision_rareness(RUNS_A.iloc[:0], QRELS_A), "runs"),
    (lambda: synthetic_ranks(RUNS_A, QRELS_A, query="q9", k=3), "query"),
    (lambda: synthetic_ranks(RUNS_A, QRELS_A, query="q1", kinds="weird", k=3), "kinds"),
    (lambda: synthetic_ranks(RUNS_A, QRELS_A, query="q1", k=3, d_max=0), "d_max"),
    (lambda: sampled_means(RUNS_A, QRELS_A, subsets=[[0, 5]], k=3), "subsets"),
    (lambda: sampled_means(RUNS_A, QRELS_A, subsets=[[0, 1]], measure="nDCG", k=3), "measure"),
    (lambda: rareness_system_sampling(RUNS_A, QRELS_A, sizes=(4,), k=3), "sizes"),
])
def test_errors(call, word):
    with pytest.raises(ValueError, match=word):
        call()


# ------------------------------------------------------------------------------------------------ reproduction (NIST layout)
TABLE4_SD = {"FBIS3-38782": 24, "LA020889-0003": 49, "LA102589-0109": 76, "LA092189-0061": 100, "FBIS4-44815": 119}
EXTRA_DEEP = 5          # runs that hold a Table 4 document only below rank 100


def _nist_tree(root, name, topics, seed=0):
    "A small collection laid out like NIST's (DIR/runs/input.<tag>.gz for every official run, DIR/qrels…)."
    import gzip
    info = datasets.parse_run_list(datasets.TREC8_ADHOC_RUNS if name == "trec8" else datasets.TREC5_ADHOC_RUNS)
    rng = np.random.default_rng(seed)
    d = root / name
    (d / "runs").mkdir(parents=True)
    pool = {q: [f"{q}-DOC{i:03d}" for i in range(200)] for q in topics}
    qrels = [(q, doc, int(rng.random() < .3)) for q in topics for doc in pool[q][:120]]
    if "431" in topics: qrels += [("431", doc, 1) for doc in TABLE4_SD]
    qname = "qrels.trec8.adhoc" if name == "trec8" else "qrels.251-300"
    (d / qname).write_text("".join(f"{q} 0 {doc} {g}\n" for q, doc, g in qrels))
    for i, tag in enumerate(info):
        lines = []
        for q in topics:
            docs = list(rng.choice(pool[q], size=110, replace=False))
            if q == "431":
                for j, (doc, n) in enumerate(TABLE4_SD.items()):
                    if i < n: docs[j] = doc                         # in this run's top 100
                    elif i < n + EXTRA_DEEP: docs[100 + j] = doc     # retrieved, but below rank 100
            lines += [f"{q} Q0 {doc} {r} {110 - r} {tag}\n" for r, doc in enumerate(docs, 1)]
        with gzip.open(d / "runs" / f"input.{tag}.gz", "wt") as f: f.write("".join(lines))
    return d


def test_reproduce_paper_trec8_on_a_nist_layout_tree(tmp_path, monkeypatch):
    monkeypatch.delenv("IRINNOV_NIST", raising=False)
    monkeypatch.setenv("IRINNOV_MIRROR", str(tmp_path))
    _nist_tree(tmp_path / "nist", "trec8", ["401", "402", "403", "431"])
    res = reproduce_paper("trec8", trials=20, B=20)                  # found under $IRINNOV_MIRROR/nist/trec8
    assert set(res) == {"figure2", "table1", "table2", "table3", "table4"}
    # Table 4: the counts were planted so that R = 1 − S_d/129 rounds to the paper's values
    t4 = res["table4"]
    assert t4["S_d (top 100)"].to_dict() == TABLE4_SD
    assert t4["S_d (whole runs)"].to_dict() == {d: min(n + EXTRA_DEEP, 129) for d, n in TABLE4_SD.items()}
    np.testing.assert_allclose(t4["R (top 100)"].round(2), list(PAPER["table4"].values()), atol=1e-9)
    assert (t4["paper R"] == pd.Series(PAPER["table4"])).all()
    # Figure 2: same topics on both sides, so τ = 1 at α = 0
    assert (res["figure2"].loc[0.0] == 1).all() and (res["figure2"].to_numpy() <= 1).all()
    # Table 1: the authors' per-pair test, checked against scipy's pooled t-test on the same score tables
    from scipy.stats import ttest_ind
    c = datasets.load("trec8", path=tmp_path / "nist" / "trec8").campaign()
    t1 = res["table1"]
    for (metric, a), fn in (((("P@100", 0.0)), precision_rareness), ((("AP@100_R", 1.0)), ap_rareness)):
        X = fn(c, k=100, alpha=a, depth=100, all_qrels_topics=True).to_numpy()
        i, j = np.triu_indices(len(X), 1)
        p = ttest_ind(X[i], X[j], axis=1, equal_var=True).pvalue
        assert t1.loc[(metric, a), "pairwise-t-unpaired 95%"] == int((p < .05).sum())
        assert t1.loc[(metric, a), "pairwise-t-unpaired 99%"] == int((p < .01).sum())
        assert t1.loc[(metric, a), ["paper 95%", "paper 99%"]].tolist() == list(PAPER["table1"]["trec8"][(metric, a)])
    for test in ("tukey", "randomized-tukey"):
        assert (t1[f"{test} 99%"] <= t1[f"{test} 95%"]).all()
    # Table 2 and Table 3 sit beside the paper's numbers
    t2 = res["table2"]
    assert t2["paper"].tolist() == list(PAPER["table2"]["trec8"].values())
    assert ((t2["f = 0.05"] >= 0) & (t2["f = 0.05"] <= t2["f = 0"]) & (t2["f = 0"] <= 1)).all()   # fuzziness only adds ties
    t3 = res["table3"]
    assert t3.index.tolist() == [2, 4, 8, 16, 32, 64]
    assert t3["paper P@100_R"].tolist() == PAPER["table3"]["P"] and t3["paper AP@100_R"].tolist() == PAPER["table3"]["AP"]
    assert ((t3["P@100_R"] >= -1) & (t3["P@100_R"] <= 1)).all()


def test_reproduce_paper_trec5_and_the_skip_path(tmp_path, monkeypatch):
    monkeypatch.delenv("IRINNOV_NIST", raising=False)
    monkeypatch.setenv("IRINNOV_MIRROR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="NIST"):            # no copy anywhere: the notebook's skip path
        reproduce_paper("trec5")
    d = _nist_tree(tmp_path / "elsewhere", "trec5", ["251", "252", "253", "254"])
    res = reproduce_paper("trec5", path=d, trials=10, B=10)
    assert set(res) == {"figure2", "table1", "table2"}              # Tables 3–4 are TREC-8 only
    assert res["table1"]["paper 95%"].tolist() == [v[0] for v in PAPER["table1"]["trec5"].values()]
    with pytest.raises(ValueError, match="name"):
        reproduce_paper("wt14")


# ------------------------------------------------------------------------------------------------ teams
def test_example_a_teams_by_hand():
    "A alone in t1, B and C in t2: d4 is found by one team of two (R = 1/2); d1, d2, d3 by both (R = 0)."
    teams = {"A": "t1", "B": "t2", "C": "t2"}
    r = rarity(RUNS_A, QRELS_A, teams=teams).set_index("doc")
    assert r.S_d.to_dict() == dict(d6=0, d4=1, d1=2, d2=2, d3=2)
    assert (r.S == 2).all()
    np.testing.assert_allclose(r.rarity[["d1", "d2", "d3", "d4", "d6"]], [0, 0, 0, 1/2, 1], atol=TOL)
    rn = rarity(RUNS_A, QRELS_A, teams=teams, normalized=True).set_index("doc")   # R' = (2 − S_d)/(2 − 1)
    np.testing.assert_allclose(rn.rarity[["d1", "d4", "d6"]], [0, 1, 1], atol=TOL)
    # C's top 3: d3, d4, d2 -> P@3_R = (1 + 3/2 + 1)/3; prefix precisions 1, 5/4, 7/6 over N_R = 5
    np.testing.assert_allclose(precision_rareness(RUNS_A, QRELS_A, k=3, alpha=1, teams=teams)["q1"], fr("2/3 5/6 7/6"),
                               atol=TOL)
    np.testing.assert_allclose(ap_rareness(RUNS_A, QRELS_A, k=3, alpha=1, teams=teams)["q1"], fr("2/5 11/30 41/60"),
                               atol=TOL)
    # with_systems still lists the runs
    assert rarity(RUNS_A, QRELS_A, teams=teams, with_systems=True).set_index("doc").systems["d4"] == ("B", "C")


def test_teams_errors_and_keyword_only():
    with pytest.raises(ValueError, match=r"no team for system\(s\) \['C'\]"):
        rarity(RUNS_A, QRELS_A, teams={"A": "t1", "B": "t1"})
    with pytest.raises(ValueError, match="teams must be a mapping"):
        ap_rareness(RUNS_A, QRELS_A, teams=["t1", "t1", "t2"])
    with pytest.raises(TypeError):
        rarity(RUNS_A, QRELS_A, None, False, 1, False, {"A": "t"})   # teams is keyword-only


@SETTINGS
@given(campaigns(), st.sampled_from([None, 2]), st.integers(0, 10**6))
def test_teams_brute_force(data, depth, seed):
    "S_d over teams = distinct teams among the runs holding d (brute force); one team per run = run-level values."
    runs, qrels = data
    c = prepare(runs, qrels)
    names = [str(x) for x in c.systems]
    rng = np.random.default_rng(seed)
    teams = {s: f"team{int(rng.integers(0, 3))}" for s in names}
    r = rarity(c, depth=depth, teams=teams)
    top = c.runs if depth is None else c.runs[c.runs["rank"] <= depth]
    n_teams = len(set(teams.values()))
    assert (r.S == n_teams).all()
    for row in r.itertuples():
        holders = top[(top["query"] == row.query) & (top.doc == row.doc)].system.astype(str)
        assert row.S_d == len({teams[s] for s in holders})
        assert abs(row.rarity - (1 - row.S_d / n_teams)) < TOL
    # scores: P@k_R = P@k + α/k · Σ rarity of relevant docs in the top k (brute force over the runs frame)
    k = 2
    p = precision_rareness(c, k=k, alpha=1.0, depth=depth, teams=teams)
    R = r.set_index(["query", "doc"]).rarity
    for s in p.index:
        for q in p.columns:
            lst = c.runs[(c.runs.system.astype(str) == s) & (c.runs["query"] == q) & (c.runs["rank"] <= k)]
            g = qrels.set_index(["query", "doc"]).grade
            want = sum(1 + R[(q, d)] for d in lst.doc if g.get((q, d), 0) >= 1) / k
            assert abs(p.loc[s, q] - want) < TOL
    own = {s: s for s in names}
    np.testing.assert_array_equal(ap_rareness(c, k=k, alpha=1.0, depth=depth, teams=own).to_numpy(),
                                  ap_rareness(c, k=k, alpha=1.0, depth=depth).to_numpy())


# ------------------------------------------------------------------------------------------------ the one API
def test_options_are_keyword_only():
    c = prepare(RUNS_A, QRELS_A)
    with pytest.raises(TypeError, match="got a Campaign and qrels"):
        precision_rareness(c, 5)                                       # a cut-off given where qrels go
    with pytest.raises(TypeError, match="did you mean"):
        ap_rareness(c, "P")
    for call in (lambda: rarity(RUNS_A, QRELS_A, 3), lambda: precision_rareness(RUNS_A, QRELS_A, 3),
                 lambda: sampled_means(c, None, [[0, 1]]), lambda: rareness_system_sampling(c, None, "AP")):
        with pytest.raises(TypeError, match="positional"):
            call()
    with pytest.raises(TypeError, match="threshold"):
        precision_rareness(c, k=3, threshold=1.5)                      # a relevance level is an integer


@pytest.mark.parametrize("kw,name", [
    (dict(k=100, alpha=0.5), "P@100_rareness(alpha=0.5)"), (dict(k=3, alpha=1), "P@3_rareness(alpha=1)"),
    (dict(k=3, alpha=0.25, normalized=True), "P'@3_rareness(alpha=0.25)"),
    (dict(k=3, alpha=1.0, threshold=2), "P@3_rareness(alpha=1, rel=2)"),
])
def test_canonical_names(kw, name):
    t = precision_rareness(RUNS_A, QRELS_A, **kw)
    assert t.attrs["measure"] == name and t.attrs["higher_is_better"] is True
    assert ap_rareness(RUNS_A, QRELS_A, **kw).attrs["measure"] == "A" + name


def test_threshold_zero_counts_grade_zero_as_relevant():
    # d5 (grade 0) becomes relevant: then every top 3 (A: d1 d2 d5, B: d1 d5 d4, C: d3 d4 d2) is all relevant
    p0 = precision_rareness(RUNS_A, QRELS_A, k=3, alpha=0, threshold=0)["q1"]
    np.testing.assert_allclose(p0, [1, 1, 1], atol=TOL)
    assert rarity(RUNS_A, QRELS_A, threshold=0).doc.tolist().count("d5") == 1


def test_sweep_is_a_frozen_dataclass():
    import dataclasses
    sw = precision_rareness(RUNS_A, QRELS_A, k=3, alpha=[0, 0.5, 1])
    assert list(sw) == [0.0, 0.5, 1.0] and len(sw) == 3 and sw.keys() == [0.0, 0.5, 1.0]
    assert sw[0.5].equals(precision_rareness(RUNS_A, QRELS_A, k=3, alpha=0.5))
    assert "P@3_rareness(alpha=0.5)" in repr(sw)
    with pytest.raises(KeyError, match="alpha=0.7"):
        sw[0.7]
    with pytest.raises(dataclasses.FrozenInstanceError):
        sw.alphas = (1.0,)
    res = rareness_system_sampling(RUNS_A, QRELS_A, k=3, sizes=(2,), trials=5, detail=True)
    assert list(res.summary.columns) == ["N", "mean_tau", "trials", "excluded"] and len(res.taus) == 5
    assert "RarenessSampling(sizes=[2]" in repr(res)
