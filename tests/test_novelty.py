"""Tests of irinnov.novelty: SPEC §2.6 worked examples, §2.8 properties, and a brute-force oracle."""
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from irinnov.novelty import document_utility, rank_difference, utility
from irinnov.trec import prepare

L2 = math.log2


def example_a(**lists):
    lists = lists or dict(A=["d1", "d2", "d3", "d4"], B=["d2", "d1", "d5", "d4"], C=["d1", "d6", "d2", "d7"])
    runs = pd.DataFrame([(s, "t", d, float(len(ds) - i)) for s, ds in lists.items() for i, d in enumerate(ds)],
                        columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame({"query": "t", "doc": ["d1", "d2", "d3", "d5", "d8", "d4", "d6"],
                          "grade": [2, 1, 1, 1, 1, 0, -2]})
    return runs, qrels


def example_b():
    rows = [("X", "t1", "a", .9), ("X", "t1", "c", .8), ("X", "t1", "b", .7), ("X", "t2", "p", .6),
            ("X", "t2", "s", .5), ("X", "t2", "q", .5), ("X", "t2", "r", .1), ("X", "t3", "u", 1), ("X", "t3", "v", .5),
            ("Y", "t1", "a", 10), ("Y", "t1", "c", 5), ("Y", "t1", "b", 5), ("Y", "t2", "r", .9), ("Y", "t2", "q", .8),
            ("Y", "t2", "p", .7), ("Y", "t3", "v", 1), ("Z", "t1", "b", 2), ("Z", "t1", "a", 1), ("Z", "t3", "u", 1)]
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([("t1", "a", 1), ("t1", "b", 2), ("t1", "c", 0), ("t2", "p", 1), ("t2", "q", 1), ("t2", "r", 1),
                          ("t2", "s", 0), ("t3", "u", 0), ("t3", "v", -1)], columns=["query", "doc", "grade"])
    return runs, qrels


def col(t):
    return t["t"].to_numpy()


# ---------------------------------------------------------------- SPEC §2.6 Example A
def test_example_a_bits_and_nats():
    u = utility(*example_a())
    assert list(u.index) == ["A", "B", "C"] and list(u.columns) == ["t"]
    assert u.index.name == "system" and u.columns.name == "query"
    np.testing.assert_allclose(col(u), [L2(Fraction(32, 7)), L2(Fraction(24, 5)), L2(Fraction(32, 49))], atol=1e-12)
    np.testing.assert_allclose(col(u), [2.192645, 2.263034, -0.614710], atol=1e-6)
    n = utility(*example_a(), base=math.e)
    np.testing.assert_allclose(col(n), [1.519826, 1.568616, -0.426084], atol=1e-6)
    np.testing.assert_allclose(col(n), np.log([32 / 7, 24 / 5, 32 / 49]), atol=1e-12)
    assert u.attrs["measure"] == "U" and u.attrs["N"] == 4
    assert u.attrs["higher_is_better"] is True
    assert (u.attrs["N"], u.attrs["base"], u.attrs["threshold"], u.attrs["log0"], u.attrs["leave_one_out"]) == (
        4, 2, 1, "zero", True)


def test_example_a_variants():
    r = example_a()
    np.testing.assert_allclose(col(utility(*r, threshold=2)), [0.192645, -0.415037, 0.192645], atol=1e-6)
    np.testing.assert_allclose(col(utility(*r, threshold=2, base=math.e)), [0.133531, -0.287682, 0.133531], atol=1e-6)
    np.testing.assert_allclose(col(utility(*r, k=2)), [L2(4 / 3), 1.0, L2(4 / 3)], atol=1e-12)
    assert utility(*r, k=2).attrs["N"] == 2
    np.testing.assert_allclose(col(utility(*r, log0="penalty")), np.log2([16 / 7, 12 / 5, 8 / 49]), atol=1e-12)
    np.testing.assert_allclose(col(utility(*r, log0="penalty")), [1.192645, 1.263034, -2.614710], atol=1e-6)
    np.testing.assert_allclose(col(utility(*r, log0="penalty", base=math.e)), [0.826679, 0.875469, -1.812379], atol=1e-6)
    lit = col(utility(*r, log0="literal"))
    assert np.isnan(lit[0]) and np.isnan(lit[1]) and lit[2] == -np.inf
    np.testing.assert_allclose(col(utility(*r, leave_one_out=False)), np.log2([36 / 11, 36 / 11, 8 / 11]), atol=1e-12)
    np.testing.assert_allclose(col(utility(*r, leave_one_out=False)), [1.710493, 1.710493, -0.459432], atol=1e-6)


def test_example_a_renaming_and_added_system():
    ren = utility(*example_a(C=["d1", "d2", "d3", "d4"], A=["d2", "d1", "d5", "d4"], B=["d1", "d6", "d2", "d7"]))
    np.testing.assert_allclose(col(ren), [2.263034, -0.614710, 2.192645], atol=1e-6)
    lists = dict(A=["d1", "d2", "d3", "d4"], B=["d2", "d1", "d5", "d4"], C=["d1", "d6", "d2", "d7"],
                 D=["d4", "d6", "d9", "d7"])
    u = utility(*example_a(**lists))
    np.testing.assert_allclose(col(u), [3.947533, 4.017922, 0.555215, 0.0], atol=1e-6)
    base = col(utility(*example_a()))
    np.testing.assert_allclose(col(u)[:3] - base, np.array([3, 3, 2]) * L2(1.5), atol=1e-12)  # property 8


@pytest.mark.parametrize("log0", ["zero", "penalty", "literal"])
@pytest.mark.parametrize("loo", [True, False])
def test_identical_campaign_exactly_zero(log0, loo):
    r = example_a(A=["d1", "d2", "d3", "d4"], B=["d1", "d2", "d3", "d4"], C=["d1", "d2", "d3", "d4"])
    u = utility(*r, log0=log0, leave_one_out=loo)
    assert (col(u) == 0.0).all()
    d = document_utility(*r, log0=log0, leave_one_out=loo)
    assert (d["utility"].to_numpy() == 0.0).all()


def test_document_utility_example_a():
    d = document_utility(*example_a())
    assert list(d.columns) == ["system", "query", "doc", "grade", "rank", "p_sys", "p_others", "n_others", "utility"]
    assert len(d) == 15 and d["rank"].dtype == "Int64"
    assert list(d.doc[:5]) == ["d1", "d2", "d3", "d5", "d8"]
    a = d[d.system == "A"].set_index("doc")
    assert a.loc["d1", "grade"] == 2 and a.loc["d1", "rank"] == 1 and a.loc["d3", "rank"] == 3
    assert pd.isna(a.loc["d5", "rank"]) and pd.isna(a.loc["d8", "rank"])
    assert a.loc["d1", "p_others"] == Fraction(7, 8) and a.loc["d3", "p_others"] == 0 and a.loc["d5", "p_others"] == .25
    assert a.loc["d2", "p_sys"] == .75 and a.loc["d1", "n_others"] == 2 and a.loc["d5", "n_others"] == 1
    assert a.loc["d3", "utility"] == 2.0  # floor: log2((N - r + 1) m) = log2(2·2)
    b = d[d.system == "B"].set_index("doc")
    assert b.loc["d2", "p_others"] == Fraction(5, 8)
    np.testing.assert_allclose(b.loc["d2", "utility"], L2(1.6), atol=1e-12)
    c = d[d.system == "C"].set_index("doc")
    np.testing.assert_allclose(c.loc["d2", "utility"], L2(4 / 7), atol=1e-12)
    full = document_utility(*example_a(), leave_one_out=False).set_index(["system", "doc"])
    assert full.loc[("A", "d1"), "p_others"] == pytest.approx(11 / 12, abs=1e-15)  # all-system mean C/(N|S|)


# ---------------------------------------------------------------- SPEC §2.6 Example B
def test_example_b():
    u = utility(*example_b())
    assert list(u.columns) == ["t1", "t2"]
    np.testing.assert_allclose(u.to_numpy(), np.log2([[16 / 21, 8 / 3], [16 / 21, 24], [3 / 2, 1]]), atol=1e-12)
    np.testing.assert_allclose(u.mean(axis=1), [0.511360, 2.096323, 0.292481], atol=1e-6)
    np.testing.assert_allclose(utility(*example_b(), base=math.e).mean(axis=1), [0.354448, 1.453060, 0.202733], atol=1e-6)
    assert u.loc["X", "t1"] != 0  # identical to Y on t1 but not to Z
    d2 = utility(*example_b(), k=2)
    np.testing.assert_allclose(d2.to_numpy(), [[L2(4 / 3), 2.0], [L2(4 / 3), 3.0], [1.0, 0.0]], atol=1e-12)
    p = utility(*example_b(), log0="penalty")
    np.testing.assert_allclose(p.loc["Z", "t2"], -7.228819, atol=1e-6)
    np.testing.assert_allclose(p.loc["Z"].mean(), -L2(10), atol=1e-12)
    p2 = utility(*example_b(), log0="penalty", k=2)
    np.testing.assert_allclose([p2.loc["X", "t1"], p2.loc["Z", "t2"]], [L2(2 / 3), -2.0], atol=1e-12)


# ---------------------------------------------------------------- errors
def test_errors():
    r = example_a()
    one = r[0][r[0].system == "A"]
    with pytest.raises(ValueError, match="2 systems"): utility(one, r[1])
    with pytest.raises(ValueError, match="depth"): utility(*r, depth=0)
    with pytest.raises(ValueError, match="k"): utility(*r, k=0)
    with pytest.raises(TypeError, match="threshold"): utility(*r, threshold=1.0)
    with pytest.raises(ValueError, match="base"): utility(*r, base=1)
    with pytest.raises(ValueError, match="base"): utility(*r, base=0)
    with pytest.raises(ValueError, match="log0"): utility(*r, log0="floor")
    with pytest.raises(ValueError, match="log0"): document_utility(*r, log0="nan")


# ---------------------------------------------------------------- rank_difference
def test_rank_difference():
    ap = pd.DataFrame({"q1": [.9, .5, .5, .1], "q2": [.2, .4, .6, .8]}, index=pd.Index(list("wxyz"), name="system"))
    ut = pd.DataFrame({"q1": [0., 1, 2, 3], "q2": [5., 5, 1, 0]}, index=pd.Index(list("wxyz"), name="system"))
    t2 = rank_difference(ap, ut)
    # means: ap w .55 x .45 y .55 z .45 → ranks 1,3,1,3; ut w 2.5 x 3 y 1.5 z 1.5 → 2,1,3,3
    assert t2["reference_rank"].tolist() == [1, 3, 1, 3] and t2["other_rank"].tolist() == [2, 1, 3, 3]
    assert t2["difference"].tolist() == [-1, 2, -2, 0]
    t3 = rank_difference(ap, ut, per_topic=True)
    assert t3["q1"].tolist() == [1 - 4, 2 - 3, 2 - 2, 4 - 1] and t3["q2"].tolist() == [4 - 1, 3 - 1, 2 - 3, 1 - 4]
    low = ut.copy(); low.attrs["higher_is_better"] = False
    assert rank_difference(ap, low)["other_rank"].tolist() == [3, 4, 1, 1]
    with pytest.raises(ValueError, match="other"): rank_difference(ap, ut.drop("z"))
    with pytest.raises(ValueError): rank_difference(ap.mean(axis=1), ut, per_topic=True)


# ---------------------------------------------------------------- brute-force oracle
def oracle(runs, qrels, k=None, base=2, threshold=1, log0="zero", leave_one_out=True):
    """Loop over systems, topics and documents with exact fractions; returns {(system, topic): U}."""
    systems = sorted(set(runs.system))
    ranks = {}
    for (s, q), grp in runs.groupby(["system", "query"]):
        order = sorted(zip(grp.score.astype(np.float32), grp.doc), reverse=True)  # score desc, doc id desc
        ranks[s, q] = {d: i + 1 for i, (_, d) in enumerate(order)}
    qtopics = set(qrels["query"])
    longest = max((len(v) for (s, q), v in ranks.items() if q in qtopics), default=1)
    N = k if k is not None else longest
    rel = {}
    for q, d, g in zip(qrels["query"], qrels.doc, qrels.grade):
        if g >= threshold: rel.setdefault(q, []).append(d)
    lg = (lambda x: math.log(x, base)) if base != 2 else math.log2
    out = {}
    for x in systems:
        for q in sorted(rel):
            total = 0.0
            for d in rel[q]:
                def reach(y):
                    r = ranks.get((y, q), {}).get(d)
                    return N - r + 1 if r is not None and r <= N else 0
                ax = reach(x)
                others = [y for y in systems if y != x] if leave_one_out else systems
                T = sum(reach(y) for y in others)
                m = len(others)
                if ax == 0 and T == 0: term = 0.0
                elif T == 0: term = {"literal": math.inf}.get(log0, lg(Fraction(m * ax, 1)))
                elif ax == 0: term = {"zero": 0.0, "penalty": -lg(T), "literal": -math.inf}[log0]
                else: term = lg(Fraction(m * ax, T))
                total += term
            out[x, q] = total
    return out


@st.composite
def campaigns(draw):
    n_sys = draw(st.integers(2, 5))
    topics = ["q1", "q2", "q3"][:draw(st.integers(1, 3))]
    pool = [f"d{i}" for i in range(9)]
    rows = []
    for s in range(n_sys):
        for q in topics:
            if draw(st.booleans()) and s > 0 and draw(st.integers(0, 4)) == 0: continue  # a missing list
            docs = draw(st.lists(st.sampled_from(pool), unique=True, max_size=6))
            for d in docs:
                rows.append((f"s{s}", q, d, float(draw(st.integers(0, 4)))))  # small score range: ties
    for s in ("s0", "s1"):  # at least two systems
        if s not in {r[0] for r in rows}: rows.append((s, topics[-1], "d8", 1.0))
    qrows = [(topics[0], "d0", 1)]  # at least one relevant document (first: drop_duplicates keeps it)
    for q in topics:
        for d in pool:
            g = draw(st.sampled_from([None, None, -1, 0, 1, 1, 2]))
            if g is not None: qrows.append((q, d, g))
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame(qrows, columns=["query", "doc", "grade"]).drop_duplicates(["query", "doc"])
    return runs, qrels


def check_against_oracle(runs, qrels, **kw):
    u = utility(runs, qrels, **kw)
    want = oracle(runs, qrels, **kw)
    assert set(want) == {(s, q) for s in u.index for q in u.columns}
    got = np.array([u.loc[s, q] for s, q in want])
    exp = np.array(list(want.values()))
    np.testing.assert_allclose(got, exp, atol=1e-9, rtol=0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns(), st.sampled_from(["zero", "penalty", "literal"]), st.booleans(), st.sampled_from([None, 1, 2, 3, 8]),
       st.sampled_from([1, 2]), st.sampled_from([2, math.e, 10, 3.5]))
def test_oracle(camp, log0, loo, k, threshold, base):
    runs, qrels = camp
    if not (qrels.grade >= threshold).any(): return
    check_against_oracle(runs, qrels, k=k, base=base, threshold=threshold, log0=log0, leave_one_out=loo)


def test_oracle_random_numpy():
    rng = np.random.default_rng(5)
    for _ in range(30):
        S, Q, P = rng.integers(2, 7), rng.integers(1, 4), 12
        rows = [(f"s{s}", f"q{q}", f"d{d}", float(rng.integers(0, 5)))
                for s in range(S) for q in range(Q) for d in rng.choice(P, rng.integers(0, 9), replace=False)]
        rows += [(f"s{s}", "q0", "dx", 9.0) for s in range(S) if rng.random() < .3]
        runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
        qrels = pd.DataFrame([(f"q{q}", f"d{d}", int(rng.integers(-1, 3))) for q in range(Q) for d in range(P)
                              if rng.random() < .6] + [("q0", "dx", 1)], columns=["query", "doc", "grade"])
        if runs.system.nunique() < 2: continue
        for log0 in ("zero", "penalty", "literal"):
            for loo in (True, False):
                check_against_oracle(runs, qrels, log0=log0, leave_one_out=loo, k=[None, 3][int(rng.integers(2))])


# ---------------------------------------------------------------- SPEC §2.8 properties
@settings(max_examples=40, deadline=None)
@given(campaigns(), st.sampled_from(["zero", "penalty"]), st.booleans(), st.randoms(use_true_random=False))
def test_permutation_and_grouped_sums(camp, log0, loo, rnd):
    runs, qrels = camp
    u = utility(runs, qrels, log0=log0, leave_one_out=loo)
    # renaming systems (a permutation of names) and shuffling rows permutes the table
    names = sorted(runs.system.unique())
    perm = names[:]; rnd.shuffle(perm)
    ren = dict(zip(names, [f"z{p}" for p in perm]))
    runs2 = runs.assign(system=runs.system.map(ren)).sample(frac=1, random_state=rnd.randint(0, 999))
    u2 = utility(runs2, qrels.sample(frac=1, random_state=1), log0=log0, leave_one_out=loo)
    for s in names:
        np.testing.assert_array_equal(u.loc[s].to_numpy(), u2.loc[ren[s]].to_numpy())
    # grouped document utilities sum to the topic utilities
    d = document_utility(runs, qrels, log0=log0, leave_one_out=loo)
    g = d.groupby(["system", "query"])["utility"].sum().unstack()
    np.testing.assert_allclose(g.loc[u.index, u.columns].to_numpy(), u.to_numpy(), atol=1e-12)
    # the base only rescales
    ue = utility(runs, qrels, log0=log0, leave_one_out=loo, base=math.e)
    np.testing.assert_allclose(u.to_numpy() * math.log(2), ue.to_numpy(), atol=1e-12)
    # bounds under "zero" with leave-one-out
    if log0 == "zero" and loo:
        N, m = u.attrs["N"], runs.system.nunique() - 1
        hit = d["rank"].notna().to_numpy()
        x = d.utility.to_numpy()[hit]
        assert (x >= -L2(N) - 1e-12).all() and (x <= L2(N * m) + 1e-12).all()
        assert (d.utility.to_numpy()[~hit] == 0).all()
    if not loo:
        assert (d.utility.to_numpy() <= L2(runs.system.nunique()) + 1e-12).all()


@settings(max_examples=30, deadline=None)
@given(campaigns())
def test_identical_systems_property(camp):
    runs, qrels = camp
    first = runs[runs.system == runs.system.iloc[0]]
    clones = pd.concat([first.assign(system=f"c{i}") for i in range(3)], ignore_index=True)
    for log0 in ("zero", "penalty", "literal"):
        for loo in (True, False):
            assert (utility(clones, qrels, log0=log0, leave_one_out=loo).to_numpy() == 0.0).all()


def test_policy_cases():
    # s0 retrieves u (unique, rank 2) and shared doc v; s1 retrieves v twice deeper; w missed by s0, found by s1, s2
    runs = pd.DataFrame([("s0", "q", "x", 5.), ("s0", "q", "u", 4.), ("s0", "q", "v", 3.),
                         ("s1", "q", "v", 5.), ("s1", "q", "w", 4.), ("s2", "q", "w", 5.), ("s2", "q", "y", 4.),
                         ("s2", "q", "z", 3.)], columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([("q", d, 1) for d in "uvwn"], columns=["query", "doc", "grade"])
    N, m = 3, 2
    for log0, unique, missed in (("zero", L2((N - 2 + 1) * m), 0.0), ("penalty", L2((N - 2 + 1) * m), -L2(2 + 3)),
                                 ("literal", math.inf, -math.inf)):
        d = document_utility(runs, qrels, log0=log0).set_index(["system", "doc"])["utility"]
        assert d["s0", "u"] == pytest.approx(unique, abs=1e-12) if math.isfinite(unique) else d["s0", "u"] == unique
        assert d["s0", "w"] == missed or d["s0", "w"] == pytest.approx(missed, abs=1e-12)
        assert d["s0", "n"] == 0 and d["s1", "n"] == 0 and d["s2", "n"] == 0  # nobody retrieved n
    # two systems: U_d(x) = -U_d(y) on shared documents (property 9)
    two = runs[runs.system.isin(["s0", "s1"])]
    d2 = document_utility(two, qrels).set_index(["system", "doc"])["utility"]
    assert d2["s0", "v"] == pytest.approx(-d2["s1", "v"], abs=1e-12) and d2["s0", "v"] == pytest.approx(L2(1 / 3), abs=1e-12)


def test_threshold_equals_regrading_and_k_none():
    runs, qrels = example_b()
    regr = qrels.assign(grade=qrels.grade.where(qrels.grade != 1, 0))
    np.testing.assert_array_equal(utility(runs, qrels, threshold=2).to_numpy(), utility(runs, regr, threshold=2).to_numpy())
    np.testing.assert_array_equal(utility(runs, qrels).to_numpy(), utility(runs, qrels, k=4).to_numpy())
    c = prepare(runs, qrels)
    np.testing.assert_array_equal(utility(c).to_numpy(), utility(runs, qrels).to_numpy())


def test_swaps_property_10():
    base = dict(A=["d1", "d2", "d3", "d4"], B=["d2", "d1", "d5", "d4"], C=["d1", "d6", "d2", "d7"])
    before = document_utility(*example_a(**base)).set_index(["system", "doc"])["utility"]
    up = document_utility(*example_a(**{**base, "C": ["d1", "d2", "d6", "d7"]})).set_index(["system", "doc"])["utility"]
    assert up["C", "d2"] > before["C", "d2"]
    assert up["A", "d2"] <= before["A", "d2"] and up["B", "d2"] <= before["B", "d2"]
    others = [k for k in before.index if k[1] != "d2"]
    np.testing.assert_array_equal(up[others].to_numpy(), before[others].to_numpy())
    # one non-relevant document for another, or a grade change below the threshold: nothing moves
    same = document_utility(*example_a(**{**base, "C": ["d1", "d4", "d2", "d9"]}))["utility"].to_numpy()
    np.testing.assert_array_equal(same, before.to_numpy())
    runs, qrels = example_a()
    regr = qrels.assign(grade=qrels.grade.replace({0: -1, -2: 0}))
    np.testing.assert_array_equal(utility(runs, regr).to_numpy(), utility(runs, qrels).to_numpy())


def _one_doc(lists, n_rel=("d",)):
    """Runs from {system: [doc, ...]} in list order, one topic `q`; the documents in `n_rel` are relevant."""
    runs = pd.DataFrame([(s, "q", d, float(len(ds) - i)) for s, ds in lists.items() for i, d in enumerate(ds)],
                        columns=["system", "query", "doc", "score"])
    return runs, pd.DataFrame([("q", d, 1) for d in n_rel], columns=["query", "doc", "grade"])


def test_zero_cases_property_2():
    # x's reach equals the others' mean: others at ranks 1 and 3, x at 2 (N = 3): m·a = 2·2 = 4 = T = 3 + 1
    r = _one_doc(dict(x=["n1", "d", "n2"], y=["d", "n1", "n2"], z=["n1", "n2", "d"]))
    assert document_utility(*r).set_index("system").loc["x", "utility"] == 0.0
    # two systems, a unique document at rank N: m·a = 1·1 = 1, floor T = 1 → exactly 0
    r = _one_doc(dict(x=["n1", "n2", "d"], y=["n1", "n2", "n3"]))
    d = document_utility(*r).set_index("system")["utility"]
    assert d["x"] == 0.0 and d["y"] == 0.0
    # under "penalty" a miss costs nothing iff T <= 1: y misses d, found only by x at rank N
    assert document_utility(*r, log0="penalty").set_index("system").loc["y", "utility"] == 0.0


def test_bounds_reached_property_6():
    N, m = 4, 2
    # unique document at rank 1: log2(N m)
    r = _one_doc(dict(x=["d", "n1", "n2", "n3"], y=["n1", "n2", "n3", "n4"], z=["n4", "n3", "n2", "n1"]))
    assert document_utility(*r).set_index("system").loc["x", "utility"] == pytest.approx(L2(N * m), abs=1e-12)
    # x at rank 1, the only other retrieval at rank N: m·N / 1, the same upper bound
    r = _one_doc(dict(x=["d", "n1", "n2", "n3"], y=["n1", "n2", "n3", "d"], z=["n4", "n3", "n2", "n1"]))
    assert document_utility(*r).set_index("system").loc["x", "utility"] == pytest.approx(L2(N * m), abs=1e-12)
    # x at rank N, every other system at rank 1: m·1 / (m·N) → the lower bound −log2 N
    r = _one_doc(dict(x=["n1", "n2", "n3", "d"], y=["d", "n1", "n2", "n3"], z=["d", "n3", "n2", "n1"]))
    assert document_utility(*r).set_index("system").loc["x", "utility"] == pytest.approx(-L2(N), abs=1e-12)


def test_renaming_topics_permutes_columns():
    runs, qrels = example_b()
    ren = {"t1": "z9", "t2": "a0", "t3": "m5"}
    u = utility(runs, qrels)
    v = utility(runs.assign(query=runs["query"].map(ren)), qrels.assign(query=qrels["query"].map(ren)))
    assert list(v.columns) == ["a0", "z9"]
    for q in u.columns:
        np.testing.assert_array_equal(u[q].to_numpy(), v[ren[q]].to_numpy())


# ---------------------------------------------------------------- the one API
def test_options_are_keyword_only_and_names_are_canonical():
    r = example_a()
    c = prepare(*r)
    with pytest.raises(TypeError, match="got a Campaign and qrels"): utility(c, 10)
    with pytest.raises(TypeError, match="positional"): utility(*r, 10)
    with pytest.raises(TypeError, match="positional"): document_utility(*r, 10)
    with pytest.raises(TypeError, match="positional"): rank_difference(utility(c), utility(c), True)
    names = [utility(c).attrs["measure"], utility(c, k=10).attrs["measure"], utility(c, base=math.e).attrs["measure"],
             utility(c, k=2, log0="penalty", leave_one_out=False, threshold=2).attrs["measure"]]
    assert names == ["U", "U@10", "U(base=e)", "U@2(log0=penalty, loo=0, rel=2)"]
    assert utility(c).attrs["higher_is_better"] is True


def test_depth_truncates_the_lists_k_is_the_cutoff():
    r = example_a()
    # lists of 4: truncating them to 2 makes N = 2, the same table as k = 2; k beyond the lists keeps them whole
    np.testing.assert_array_equal(utility(*r, depth=2).to_numpy(), utility(*r, k=2).to_numpy())
    assert utility(*r, depth=2).attrs["N"] == 2 and utility(*r, depth=10).attrs["N"] == 4
    assert utility(*r, k=10).attrs["N"] == 10
    # with depth 2 and k = 3, the third rank is empty: every reach is one more than under k = 2 (N − r + 1)
    d = document_utility(*r, depth=2, k=3)
    assert set(d["rank"].dropna()) <= {1, 2} and d.attrs["N"] == 3
