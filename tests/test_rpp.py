"Tests of irinnov.rpp: SPEC §3.4 worked examples (exact fractions) and §3.6 properties against a brute-force oracle."
from fractions import Fraction as Fr
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings, strategies as st, HealthCheck

from irinnov import rpp as R
from irinnov.trec import prepare

TOL = 1e-9


def mk(lists):
    "runs frame from [(system, query, [docs best first])]; scores fall with position."
    rows = []
    for s, q, docs in lists:
        for r, d in enumerate(docs): rows.append((s, q, d, float(len(docs) - r)))
    return pd.DataFrame(rows, columns=["system", "query", "doc", "score"])


# ---------------------------------------------------------------- E1
E1_QRELS = pd.DataFrame([("q1", "d1", 2), ("q1", "d2", 1), ("q1", "d3", 1), ("q1", "d4", 0), ("q1", "d5", -2), ("q1", "d6", 2),
                         ("q2", "e1", 1), ("q2", "e2", 1), ("q2", "e3", 0), ("q3", "g1", 0)], columns=["query", "doc", "grade"])
E1_RUNS = pd.DataFrame([("A", "q1", "d2", .9), ("A", "q1", "d1", .8), ("A", "q1", "d5", .8), ("A", "q1", "d3", .5), ("A", "q1", "d4", .4),
                        ("A", "q2", "e3", 2), ("A", "q2", "e1", 1),
                        ("B", "q1", "d1", 3), ("B", "q1", "d6", 2), ("B", "q1", "d4", 1), ("B", "q1", "d5", .5), ("B", "q1", "d2", .2),
                        ("B", "q2", "e2", 5), ("B", "q2", "e1", 4), ("B", "q2", "e3", 3),
                        ("C", "q1", "d3", .9), ("C", "q1", "d4", .8), ("C", "q1", "d2", .7), ("C", "q1", "d5", .6)],
                       columns=["system", "query", "doc", "score"])

INF = math.inf


def test_e1_positions_doc_id_tie_order_and_missing_topic():
    pos = R.relevant_positions(E1_RUNS, E1_QRELS)
    assert list(pos) == ["q1", "q2"]                              # q3 has no relevant document
    (l1, p1, m1, F1), (l2, p2, m2, F2) = pos["q1"]
    assert (l1, m1, l2, m2) == (1, 4, 2, 2)
    assert p1 == pytest.approx(4 / 6, abs=1e-15) and p2 == pytest.approx(2 / 6, abs=1e-15)
    # the d1/d5 tie at 0.8 is broken by doc id descending: A q1 = d2, d5, d1, d3, d4 → f_2 = 3, not 2
    assert F1.loc["A"].tolist() == [1, 3, 4, INF]
    assert F1.loc["B"].tolist() == [1, 2, 5, INF]
    assert F1.loc["C"].tolist() == [1, 3, INF, INF]
    assert F2.loc["A"].tolist() == [3, INF] and F2.loc["B"].tolist() == [1, 2] and F2.loc["C"].tolist() == [INF, INF]
    (_, _, _, Fq2), = pos["q2"]
    assert Fq2.loc["C"].tolist() == [INF, INF]                     # C has no q2 list: worst case


E1_TABLE = {  # (pair) -> {(graded, weighting): (q1, q2)}
    ("A", "B"): {(False, "uniform"): (0, -1), (True, "uniform"): (Fr(-1, 3), -1), (True, "dcg"): (-0.367408, -1),
                 (True, "inverse"): (Fr(-29, 75), -1), (False, "dcg"): (-0.051112, -1), (False, "inverse"): (Fr(-2, 25), -1)},
    ("A", "C"): {(False, "uniform"): (Fr(1, 4), Fr(1, 2)), (True, "uniform"): (Fr(1, 3), Fr(1, 2)),
                 (True, "dcg"): (0.334509, 0.613147), (True, "inverse"): (Fr(74, 225), Fr(2, 3)),
                 (False, "dcg"): (0.195190, 0.613147), (False, "inverse"): (Fr(4, 25), Fr(2, 3))},
    ("B", "C"): {(False, "uniform"): (Fr(1, 2), 1), (True, "uniform"): (Fr(2, 3), 1), (True, "dcg"): (0.627662, 1),
                 (True, "inverse"): (Fr(3, 5), 1), (False, "dcg"): (0.441492, 1), (False, "inverse"): (Fr(2, 5), 1)},
}


@pytest.mark.parametrize("graded,weighting", [(g, w) for g in (True, False) for w in R.WEIGHTINGS])
def test_e1_rpp_values(graded, weighting):
    P = R.preferences(E1_RUNS, E1_QRELS, weighting=weighting, graded=graded)
    assert list(P.columns) == ["q1", "q2"]
    for pair, vals in E1_TABLE.items():
        want = vals[(graded, weighting)]
        tol = 1e-6 if weighting == "dcg" else TOL                 # dcg values are printed to 6 places
        for q, v in zip(("q1", "q2"), want):
            assert P.loc[pair, q] == pytest.approx(float(v), abs=tol), (pair, q)
            assert P.loc[pair[::-1], q] == -P.loc[pair, q]         # exact antisymmetry
        s = R.rpp(E1_RUNS, E1_QRELS, a=pair[0], b=pair[1], weighting=weighting, graded=graded)
        assert s.name == "rpp" and list(s.index) == ["q1", "q2"]
        np.testing.assert_allclose(s.to_numpy(), P.loc[pair].to_numpy(), atol=1e-12)


def test_e1_graded_differs_from_binary_and_dcg_weights():
    g = R.rpp(E1_RUNS, E1_QRELS, a="A", b="B")
    b = R.rpp(E1_RUNS, E1_QRELS, a="A", b="B", graded=False)
    assert g["q1"] == pytest.approx(-1 / 3, abs=TOL) and b["q1"] == pytest.approx(0, abs=TOL)
    assert g["q2"] == b["q2"]                                      # q2 has one grade: graded = binary
    np.testing.assert_allclose(R.recall_weights(4, weighting="dcg"), [0.390380, 0.246302, 0.195190, 0.168128], atol=1e-6)
    np.testing.assert_allclose(R.recall_weights(4, weighting="inverse"), np.array([12, 6, 4, 3]) / 25, atol=1e-15)
    np.testing.assert_allclose(R.recall_weights(2, weighting="dcg"), [0.613147, 0.386853], atol=1e-6)


def test_e1_win_rate_and_aggregation():
    P = R.preferences(E1_RUNS, E1_QRELS)
    W = R.win_rate(P)
    np.testing.assert_allclose(W.loc[["A", "B", "C"], "q1"], [0, .5, -.5], atol=TOL)
    np.testing.assert_allclose(W.loc[["A", "B", "C"], "q2"], [-.25, 1, -.75], atol=TOL)
    np.testing.assert_allclose(R.win_rate(P, normalize=False).to_numpy(), 2 * W.to_numpy(), atol=1e-15)
    mean = R.aggregate(P, method="mean")
    assert list(mean.index) == ["B", "A", "C"]
    np.testing.assert_allclose(mean.loc[["A", "B", "C"]], [-1 / 8, 3 / 4, -5 / 8], atol=TOL)
    bmean = R.aggregate(R.preferences(E1_RUNS, E1_QRELS, graded=False), method="mean")
    np.testing.assert_allclose(bmean.loc[["A", "B", "C"]], [-1 / 16, 5 / 8, -9 / 16], atol=TOL)
    borda = R.aggregate(P, method="borda")
    assert list(borda.index) == ["B", "A", "C"] and borda.loc[["A", "B", "C"]].tolist() == [4, 6, 2]
    mc = R.aggregate(P, method="mc4")
    assert list(mc.index) == ["B", "A", "C"]
    np.testing.assert_allclose(mc.loc[["A", "B", "C"]], np.array([2047, 175099, 1]) / 177147, rtol=1e-12)
    long = R.aggregate(P, method="mc4", iterations=200)                   # absorption: B is a Condorcet winner
    assert long["B"] == pytest.approx(1, abs=1e-12) and long["A"] < 1e-30 and long["C"] < 1e-90


def test_campaign_wide_preferences_refuse_one_system():
    "One rule: the methods comparing every system with the others need 2 (as U's leave-one-out), never a table of zeros."
    one = E1_RUNS[E1_RUNS.system == "A"]
    for f in (R.preferences, R.preference_family):
        with pytest.raises(ValueError, match=r"^runs: \w+ compares every system with the others and needs at least 2 "
                                             r"systems, got 1$"): f(one, E1_QRELS)
    from irinnov.novelty import utility
    with pytest.raises(ValueError, match="needs at least 2 systems"): utility(one, E1_QRELS)
    P = R.preferences(E1_RUNS, E1_QRELS).loc[[("A", "A")]]                 # a table cut down to one system
    for f in (R.win_rate, R.aggregate):
        with pytest.raises(ValueError, match="prefs must hold at least 2 systems, not 1"): f(P)
    assert R.rpp(one, E1_QRELS, a="A", b="A").tolist() == [0, 0]        # a pair (even a system with itself) is defined

def test_e1_offline_interleaving():
    oi = lambda a, b, u: R.offline_interleaving(E1_RUNS, E1_QRELS, a=a, b=b, user=u)
    np.testing.assert_allclose(oi("A", "B", "uniform"), [0, -1], atol=TOL)
    np.testing.assert_allclose(oi("A", "B", "dcg"), [-0.027062, -1], atol=1e-6)
    np.testing.assert_allclose(oi("A", "C", "uniform"), [0, 1], atol=TOL)
    np.testing.assert_allclose(oi("A", "C", "dcg"), [0, 1], atol=TOL)
    np.testing.assert_allclose(oi("B", "C", "uniform"), [0.25, 1], atol=TOL)
    np.testing.assert_allclose(oi("B", "C", "dcg"), [0.195190, 1], atol=1e-6)
    for u in ("uniform", "dcg"):
        np.testing.assert_array_equal(oi("B", "A", u).to_numpy(), -oi("A", "B", u).to_numpy())


def test_e1_disaggregation_sums():
    d = R.disaggregate(E1_RUNS, E1_QRELS, a="A", b="B", query="q1")
    assert list(d.columns) == ["f_a", "f_b", "AP", "nDCG", "RBP", "RR", "ASL", "RPP"]
    np.testing.assert_allclose(d["AP"], [0, -1 / 12, 3 / 80, 0], atol=1e-15)
    np.testing.assert_allclose(d["nDCG"], [0, -0.051112, 0.017108, 0], atol=1e-6)
    np.testing.assert_allclose(d["RBP"], [0, -1 / 8, 1 / 32, 0], atol=1e-15)
    np.testing.assert_allclose(d["RR"], 0, atol=0)
    np.testing.assert_allclose(d["ASL"], [0, -1 / 4, 1 / 4, 0], atol=1e-15)
    np.testing.assert_allclose(d["RPP"], [0, -1 / 4, 1 / 4, 0], atol=1e-15)
    assert d["AP"].sum() == pytest.approx(29 / 48 - 13 / 20, abs=1e-12)
    assert d["nDCG"].sum() == pytest.approx(-0.034004, abs=1e-6)
    assert d["RBP"].sum() == pytest.approx(0.6875 - 0.78125, abs=1e-12)
    assert d["RPP"].sum() == pytest.approx(R.rpp(E1_RUNS, E1_QRELS, a="A", b="B", graded=False)["q1"], abs=1e-12)
    raw = R.disaggregate(E1_RUNS, E1_QRELS, a="A", b="B", query="q1", normalize=False).loc[2]
    np.testing.assert_allclose(raw[["AP", "nDCG", "RBP", "ASL", "RPP"]].to_numpy(float),
                               [-1 / 3, -0.130930, -1 / 4, -1, -1], atol=1e-6)
    a = R.corpus_asl(E1_RUNS, E1_QRELS)
    assert a.attrs["higher_is_better"] is False
    assert a.loc["A", "q1"] == pytest.approx(1) and a.loc["B", "q1"] == pytest.approx(1)
    assert a.loc["C", "q2"] == pytest.approx(1)                    # missing topic: N - m = 3 - 2


# ---------------------------------------------------------------- E2
E2_QRELS = pd.DataFrame([("t1", "a1", 1), ("t1", "a2", 1), ("t1", "n1", 0), ("t2", "b1", 1), ("t2", "b2", 1)],
                        columns=["query", "doc", "grade"])
E2_RUNS = mk([("X", "t1", ["a1", "a2", "n1", "n2"]), ("Y", "t1", ["n1", "a1", "a2", "n2"]), ("Z", "t1", ["n1", "n2", "a1", "a2"]),
              ("X", "t2", ["b1", "n3", "n4", "n5", "b2"]), ("Y", "t2", ["b1", "n3", "n4", "b2", "n5"]),
              ("Z", "t2", ["n3", "b1", "b2", "n4", "n5"])])


def test_e2_mc4_disagrees_with_mean():
    P = R.preferences(E2_RUNS, E2_QRELS, graded=False)
    np.testing.assert_allclose(P.loc[[("X", "Y"), ("X", "Z"), ("Y", "Z")]].to_numpy(), [[1, -.5], [1, 0], [1, 0]], atol=TOL)
    mean = R.aggregate(P, method="mean")
    assert list(mean.index) == ["X", "Y", "Z"]
    np.testing.assert_allclose(mean.loc[["X", "Y", "Z"]], [3 / 8, 1 / 8, -1 / 2], atol=TOL)
    mc = R.aggregate(P, method="mc4")
    assert list(mc.index) == ["Y", "X", "Z"]
    np.testing.assert_allclose(mc.loc[["X", "Y", "Z"]], np.array([59049, 117074, 1024]) / 177147, rtol=1e-12)
    damped = R.aggregate(P, method="mc4", iterations=None, damping=0.15)
    assert list(damped.index) == ["Y", "X", "Z"]
    np.testing.assert_allclose(damped.loc[["X", "Y", "Z"]], [1 / 3, 43 / 78, 3 / 26], atol=1e-9)
    borda = R.aggregate(P, method="borda")
    assert list(borda.index) == ["Y", "X", "Z"] and borda.loc[["X", "Y", "Z"]].tolist() == [4, 5, 3]
    T = R._mc4_matrix(R.win_rate(P).to_numpy())
    np.testing.assert_allclose(T, [[1, 0, 0], [0, 1, 0], [0, 1 / 3, 2 / 3]], atol=1e-15)


# ---------------------------------------------------------------- E3
E3_QRELS = pd.DataFrame([("q", "1", "d1", 1), ("q", "1", "d2", 1), ("q", "1", "d4", 0), ("q", "2", "d1", 0), ("q", "2", "d2", 1),
                         ("q", "2", "d3", 1), ("q", "2", "d4", 0)], columns=["query", "subtopic", "doc", "grade"])
E3_RUNS = mk([("A", "q", ["d1", "d4", "d2", "d3"]), ("B", "q", ["d3", "d2", "d5", "d1"]), ("C", "q", ["d1", "d4", "d5"])])
E3 = {("uniform", True): (Fr(-1, 7), Fr(5, 7), Fr(4, 7)), ("uniform", False): (0, Fr(3, 4), Fr(1, 2)),
      ("dcg", True): (-0.126892, 0.623696, 0.448511), ("dcg", False): (0, 0.693426, 0.386853),
      ("inverse", True): (Fr(-9, 77), Fr(19, 33), Fr(89, 231)), ("inverse", False): (0, Fr(2, 3), Fr(1, 3))}


@pytest.mark.parametrize("weighting,background", list(E3))
def test_e3_subtopics(weighting, background):
    P = R.preferences(E3_RUNS, E3_QRELS, weighting=weighting, subtopics=True, background=background)
    tol = 1e-6 if weighting == "dcg" else TOL
    got = P.loc[[("A", "B"), ("A", "C"), ("B", "C")], "q"].to_numpy()
    np.testing.assert_allclose(got, [float(v) for v in E3[(weighting, background)]], atol=tol)
    assert P.attrs["measure"].startswith("st-")


def test_e3_populations_and_errors():
    pops = R.relevant_positions(E3_RUNS, E3_QRELS, subtopics=True)["q"]
    assert [p[0] for p in pops] == ["1", "2", "*"]
    np.testing.assert_allclose([p[1] for p in pops], [2 / 7, 2 / 7, 3 / 7], atol=1e-15)
    assert pops[2][3].loc["C"].tolist() == [1, INF, INF]
    with pytest.raises(ValueError, match="subtopic"):
        R.preferences(E1_RUNS, E1_QRELS, subtopics=True)
    with pytest.raises(ValueError, match="weighting"):
        R.preferences(E1_RUNS, E1_QRELS, weighting="log")
    with pytest.raises(KeyError):
        R.rpp(E1_RUNS, E1_QRELS, a="A", b="nobody")
    with pytest.raises(ValueError, match="method"):
        R.aggregate(R.preferences(E1_RUNS, E1_QRELS), method="copeland")
    # subtopics=False on diversity qrels: a document's grade is its maximum over subtopics
    flat = R.preferences(E3_RUNS, E3_QRELS, graded=False)
    bgonly = E3_QRELS.assign(grade=E3_QRELS.grade).groupby(["query", "doc"], as_index=False)["grade"].max()
    np.testing.assert_array_equal(flat.to_numpy(), R.preferences(E3_RUNS, bgonly, graded=False).to_numpy())


# ---------------------------------------------------------------- brute-force oracle and properties
def ranking(runs, s, q):
    "System s's list for topic q in trec_eval order (float32 score descending, doc id descending); [] if absent."
    r = runs[(runs.system == s) & (runs["query"] == q)]
    return list(r.assign(f=r.score.astype(np.float32)).sort_values(["f", "doc"], ascending=[False, False]).doc)


def positions(runs, s, q):
    "1-based position of each document in system s's list for topic q."
    return {d: i + 1 for i, d in enumerate(ranking(runs, s, q))}


def population_preference(ra, rb, docs, weighting):
    "Σ_i w_i sign(f^b_i − f^a_i) over one population's recall levels, by a plain loop (unretrieved = ∞)."
    m = len(docs)
    fa = sorted(ra.get(d, math.inf) for d in docs)
    fb = sorted(rb.get(d, math.inf) for d in docs)
    w = R.recall_weights(m, weighting=weighting)
    return sum(w[i] * ((fb[i] > fa[i]) - (fb[i] < fa[i])) for i in range(m))


def oracle(runs, qrels, a, b, weighting="uniform", graded=True):
    "RPP_q(a, b) by a plain per-pair loop, exact fractions for uniform/inverse (SPEC D2-D5)."
    out = {}
    for q, g in qrels.groupby("query"):
        grade = dict(zip(g.doc, g.grade))
        rel = {d: x for d, x in grade.items() if x >= 1}
        if not rel: continue
        ra, rb = positions(runs, a, q), positions(runs, b, q)
        levels = sorted(set(rel.values())) if graded else [1]
        ms = [sum(1 for x in rel.values() if x >= lv) for lv in levels]
        total = 0.0
        for lv, m in zip(levels, ms):
            docs = [d for d, x in rel.items() if x >= lv]
            total += m / sum(ms) * population_preference(ra, rb, docs, weighting)
        out[q] = total
    return out


@st.composite
def campaigns(draw):
    n_sys = draw(st.integers(2, 4)); n_q = draw(st.integers(1, 3)); n_docs = draw(st.integers(2, 8))
    docs = [f"d{i}" for i in range(n_docs)]
    qrows = []
    for q in range(n_q):
        for d in docs:
            g = draw(st.sampled_from([None, -2, 0, 1, 2, 3]))
            if g is not None: qrows.append((f"q{q}", d, g))
    if not qrows: qrows = [("q0", "d0", 1)]
    rrows = []
    for s in range(n_sys):
        for q in range(n_q):
            if draw(st.booleans()) and q > 0: continue            # a topic missing from a run
            chosen = draw(st.lists(st.sampled_from(docs + ["u1", "u2"]), unique=True, max_size=6))
            for d in chosen: rrows.append((f"S{s}", f"q{q}", d, float(draw(st.integers(0, 3)))))   # many score ties
    if not rrows: rrows = [("S0", "q0", "d0", 1.0)]
    rrows.append(("S_last", "q0", "u9", 0.0))
    return pd.DataFrame(rrows, columns=["system", "query", "doc", "score"]), pd.DataFrame(qrows, columns=["query", "doc", "grade"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns(), st.sampled_from(R.WEIGHTINGS), st.booleans())
def test_properties_against_oracle(camp, weighting, graded):
    runs, qrels = camp
    P = R.preferences(runs, qrels, weighting=weighting, graded=graded)
    systems, topics, T = R.preference_tensor(P)
    assert (T == -T.transpose(0, 2, 1)).all()                      # exact antisymmetry, zero diagonal
    assert (np.abs(T) <= 1).all()
    for a in systems:
        for b in systems:
            want = oracle(runs, qrels, a, b, weighting, graded)
            assert sorted(want) == list(topics)
            for q, v in want.items():
                assert P.loc[(a, b), q] == pytest.approx(v, abs=1e-12)
    a, b = systems[0], systems[-1]
    np.testing.assert_allclose(R.rpp(runs, qrels, a=a, b=b, weighting=weighting, graded=graded).to_numpy(), P.loc[(a, b)].to_numpy(), atol=1e-12)
    W = R.win_rate(P)
    np.testing.assert_allclose(W.sum(axis=0), 0, atol=1e-12)      # sum_a W_q(a) = 0
    np.testing.assert_allclose(W.to_numpy(), T.sum(axis=2).T / (len(systems) - 1), atol=1e-15)
    x = R.aggregate(P, method="mc4", damping=0.1)
    assert x.sum() == pytest.approx(1, abs=1e-12) and (x > 0).all()
    # invariance to the order of systems in the input and to relabelling documents
    shuffled = runs.iloc[::-1].reset_index(drop=True)
    pd.testing.assert_frame_equal(R.preferences(shuffled, qrels, weighting=weighting, graded=graded), P)
    ren = lambda s: s.map(lambda d: "x" + d)
    P2 = R.preferences(runs.assign(doc=ren(runs.doc)), qrels.assign(doc=ren(qrels.doc)), weighting=weighting, graded=graded)
    # relabelling can change the doc-id tie order, so compare only where no two scores tie
    if not runs.assign(f=runs.score.astype(np.float32)).duplicated(["system", "query", "f"]).any():
        pd.testing.assert_frame_equal(P2, P)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns(), st.sampled_from(["uniform", "dcg"]))
def test_oi_and_disaggregation_properties(camp, user):
    runs, qrels = camp
    P = R.preferences(runs, qrels, graded=False)
    systems = sorted(runs.system.unique())
    a, b = systems[0], systems[-1]
    oab = R.offline_interleaving(runs, qrels, a=a, b=b, user=user)
    oba = R.offline_interleaving(runs, qrels, a=b, b=a, user=user)
    np.testing.assert_array_equal(oab.to_numpy(), -oba.to_numpy())
    assert (np.abs(oab) <= 1 + 1e-12).all()
    assert (R.offline_interleaving(runs, qrels, a=a, b=a, user=user) == 0).all()
    for q in P.columns:
        d = R.disaggregate(runs, qrels, a=a, b=b, query=q)
        assert d["RPP"].sum() == pytest.approx(P.loc[(a, b), q], abs=1e-12)
        aslt = R.corpus_asl(runs, qrels)
        assert d["ASL"].sum() == pytest.approx(aslt.loc[b, q] - aslt.loc[a, q], abs=1e-9)


def test_missing_topic_is_worst_case_and_identical_positions_tie():
    qrels = pd.DataFrame([("q", "r1", 1), ("q", "r2", 2), ("p", "r1", 1)], columns=["query", "doc", "grade"])
    runs = mk([("A", "q", ["x", "r2", "y", "r1"]), ("A", "p", ["r1"]), ("B", "q", ["z", "r2", "w", "r1"]), ("C", "p", ["r1"])])
    P = R.preferences(runs, qrels)
    assert P.loc[("A", "B"), "q"] == 0                              # same relevant positions, different non-relevant docs
    assert P.loc[("A", "C"), "q"] == 1 and P.loc[("C", "A"), "q"] == -1   # C has no list for q
    assert P.loc[("B", "C"), "q"] == 1 and P.loc[("A", "C"), "p"] == 0


# ---------------------------------------------------------------- more oracles: subtopics, offline interleaving, disaggregation
def st_oracle(runs, qrels, a, b, weighting="uniform", background=True):
    "ST-RPP_q(a, b) by a plain loop over populations (SPEC D2, D5): one per subtopic with a relevant document, plus background."
    out = {}
    for q, g in qrels.groupby("query"):
        rel = g[g.grade >= 1]
        if rel.empty: continue
        pops = [set(x.doc) for _, x in sorted(rel.groupby("subtopic"), key=lambda kv: str(kv[0]))]
        if background: pops.append(set(rel.doc))
        ra, rb = positions(runs, a, q), positions(runs, b, q)
        msum = sum(len(p) for p in pops)
        out[q] = sum(len(docs) / msum * population_preference(ra, rb, docs, weighting) for docs in pops)
    return out


@st.composite
def diversity_campaigns(draw):
    n_sys = draw(st.integers(2, 3)); n_q = draw(st.integers(1, 2)); n_docs = draw(st.integers(2, 7))
    docs = [f"d{i}" for i in range(n_docs)]
    qrows = []
    for q in range(n_q):
        for t in range(draw(st.integers(1, 3))):
            for d in docs:
                g = draw(st.sampled_from([None, 0, 1, 1, 2]))
                if g is not None: qrows.append((f"q{q}", str(t + 1), d, g))
    if not any(r[3] >= 1 for r in qrows):          # one relevant judgment, replacing any other of the same key
        qrows = [r for r in qrows if r[:3] != ("q0", "1", "d0")] + [("q0", "1", "d0", 1)]
    rrows = []
    for s in range(n_sys):
        for q in range(n_q):
            chosen = draw(st.lists(st.sampled_from(docs + ["u1"]), unique=True, max_size=6))
            for r, d in enumerate(chosen): rrows.append((f"S{s}", f"q{q}", d, float(len(chosen) - r)))
    rrows.append(("S0", "q0", "u9", -1.0))
    return (pd.DataFrame(rrows, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(qrows, columns=["query", "subtopic", "doc", "grade"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(diversity_campaigns(), st.sampled_from(R.WEIGHTINGS), st.booleans())
def test_subtopic_rpp_against_oracle(camp, weighting, background):
    runs, qrels = camp
    assume(runs.system.nunique() >= 2)          # one system: no pair, refused (test_campaign_wide_preferences_refuse_one_system)
    P = R.preferences(runs, qrels, weighting=weighting, subtopics=True, background=background)
    systems, topics, T = R.preference_tensor(P)
    assert (T == -T.transpose(0, 2, 1)).all() and (np.abs(T) <= 1).all()
    for a in systems:
        for b in systems:
            want = st_oracle(runs, qrels, a, b, weighting, background)
            assert sorted(want) == list(topics)
            for q, v in want.items():
                assert P.loc[(a, b), q] == pytest.approx(v, abs=1e-12), (a, b, q)
    # §3.6 (6): one subtopic without background equals binary RPP on that subtopic's relevance
    one = qrels[qrels.subtopic == "1"]
    if (one.grade >= 1).any():
        Pst = R.preferences(runs, one, weighting=weighting, subtopics=True, background=False)
        Pbin = R.preferences(runs, one.drop(columns="subtopic"), weighting=weighting, graded=False)
        common = [q for q in Pbin.columns if q in Pst.columns]
        np.testing.assert_allclose(Pst[common].to_numpy(), Pbin[common].to_numpy(), atol=1e-12)


def oi_oracle(A, B, rel, user):
    "Offline interleaving by literally building both balanced interleavings and walking every simulated user (SPEC D9)."
    m = len(rel)
    w = R.recall_weights(m, weighting=user)
    total = 0.0
    for afirst in (True, False):
        inter, ka, kb = [], 0, 0
        while ka < len(A) or kb < len(B):
            take_a = kb >= len(B) or (ka < len(A) and (ka < kb or (ka == kb and afirst)))
            if take_a: d = A[ka]; ka += 1
            else: d = B[kb]; kb += 1
            if d not in inter: inter.append(d)
        found = [d for d in inter if d in rel]
        for i in range(1, m + 1):
            clicks = found[:i]
            if not clicks: continue
            last = clicks[-1]
            k = min(A.index(last) + 1 if last in A else math.inf, B.index(last) + 1 if last in B else math.inf)
            h_a = sum(1 for d in clicks if d in A[:k]); h_b = sum(1 for d in clicks if d in B[:k])
            total += w[i - 1] * ((h_a > h_b) - (h_a < h_b))
    return total / 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns(), st.sampled_from(["uniform", "dcg"]))
def test_offline_interleaving_against_literal_simulation(camp, user):
    runs, qrels = camp
    systems = sorted(runs.system.unique())
    pts = pd.DataFrame([(a, b, q) for a in systems for b in systems for q in sorted(qrels["query"].unique())
                        if (qrels[(qrels["query"] == q)].grade >= 1).any()], columns=["a", "b", "query"])
    got = R.offline_interleaving_points(runs, qrels, points=pts, user=user)
    for (a, b, q), v in zip(pts.itertuples(index=False), got):
        g = qrels[qrels["query"] == q]
        rel = set(g.doc[g.grade >= 1])
        assert v == pytest.approx(oi_oracle(ranking(runs, a, q), ranking(runs, b, q), rel, user), abs=1e-12), (a, b, q)
    a, b = systems[0], systems[-1]
    one = R.offline_interleaving(runs, qrels, a=a, b=b, user=user)
    np.testing.assert_allclose(one.to_numpy(), got[(pts.a == a) & (pts.b == b)].to_numpy(), atol=0)


pytrec_eval = pytest.importorskip("pytrec_eval")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns())
def test_disaggregation_sums_equal_trec_eval_differences(camp):
    "§3.6 (9): with normalize=True the columns sum to the binary AP, nDCG and RR differences (pytrec_eval) and RBP's."
    runs, qrels = camp
    binq = qrels.assign(grade=(qrels.grade >= 1).astype(int))
    qd = {}
    for q, d, g in binq.itertuples(index=False): qd.setdefault(q, {})[d] = int(g)
    ev = pytrec_eval.RelevanceEvaluator(qd, {"map", "ndcg", "recip_rank"})
    val = {}
    for s, g in runs.groupby("system"):
        rd = {}
        for q, d, sc in g[["query", "doc", "score"]].itertuples(index=False): rd.setdefault(q, {})[d] = float(sc)
        for q, v in ev.evaluate(rd).items(): val[(s, q)] = v
    systems = sorted(runs.system.unique())
    a, b = systems[0], systems[-1]
    for q in sorted(binq["query"][binq.grade >= 1].unique()):
        d = R.disaggregate(runs, binq, a=a, b=b, query=q)
        for col, key in (("AP", "map"), ("nDCG", "ndcg"), ("RR", "recip_rank")):
            want = val.get((a, q), {}).get(key, 0.0) - val.get((b, q), {}).get(key, 0.0)
            assert d[col].sum() == pytest.approx(want, abs=1e-9), (col, q)
        rel = set(binq[(binq["query"] == q) & (binq.grade >= 1)].doc)
        rbp = lambda s: 0.5 * sum(0.5 ** r for r, doc in enumerate(ranking(runs, s, q)) if doc in rel)
        assert d["RBP"].sum() == pytest.approx(rbp(a) - rbp(b), abs=1e-12)


# ---------------------------------------------------------------- §3.6 properties 3, 4, 6 and options
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns())
def test_dominance_missing_topic_and_single_item_properties(camp):
    runs, qrels = camp
    P = R.preferences(runs, qrels)
    pos = R.relevant_positions(runs, qrels)
    systems = sorted(runs.system.unique())
    for q, pops in pos.items():
        for a in systems:
            for b in systems:
                fa = np.concatenate([F.loc[a].to_numpy() for *_, F in pops])
                fb = np.concatenate([F.loc[b].to_numpy() for *_, F in pops])
                v = P.loc[(a, b), q]
                if (fa <= fb).all() and (fa < fb).any(): assert v > 0            # (3) dominance
                if np.isfinite(fa).all() and (fa < fb).all(): assert v == pytest.approx(1, abs=1e-12)
                if not ((runs.system == b) & (runs["query"] == q)).any():        # (4) b has no list for q
                    assert v >= 0 and ((v == 0) == (not np.isfinite(fa).any()))
        if all(m == 1 for _, _, m, _ in pops):                                   # (6) m_u = 1: all weightings agree
            for w in ("dcg", "inverse"):
                np.testing.assert_array_equal(R.preferences(runs, qrels, weighting=w)[q].to_numpy(), P[q].to_numpy())


def test_depth_and_threshold_options():
    # depth=3 cuts A q1 = d2, d5, d1 | d3, d4: d3 (rank 4) becomes unretrieved, B's d2 (rank 5) too
    pos = R.relevant_positions(E1_RUNS, E1_QRELS, graded=False, depth=3)["q1"][0].positions
    assert pos.loc["A"].tolist() == [1, 3, INF, INF] and pos.loc["B"].tolist() == [1, 2, INF, INF]
    # binary q1 (A, B) at depth 3: signs [0, -1, 0, 0] → -1/4
    assert R.rpp(E1_RUNS, E1_QRELS, a="A", b="B", graded=False, depth=3)["q1"] == pytest.approx(-1 / 4, abs=TOL)
    # threshold=2: only the λ=2 population of q1 (d1, d6); q2 has no grade-2 document and drops out
    t2 = R.preferences(E1_RUNS, E1_QRELS, threshold=2)
    assert list(t2.columns) == ["q1"]
    np.testing.assert_allclose(t2.loc[[("A", "B"), ("A", "C"), ("B", "C")], "q1"], [-1, 1 / 2, 1], atol=TOL)
    with pytest.raises(TypeError, match="threshold"):                # a relevance level is an integer
        R.preferences(E1_RUNS, E1_QRELS, threshold=1.5)
    with pytest.raises(ValueError, match="user"):
        R.offline_interleaving(E1_RUNS, E1_QRELS, a="A", b="B", user="cascade")


def test_borda_ties_share_points_and_condorcet_winner_first():
    # S2 is a copy of S1 (ties everywhere); S0 wins topic t; three systems: 3/2/1 points, S1 and S2 share 2+1
    qrels = pd.DataFrame([("t", "r1", 1), ("t", "r2", 1)], columns=["query", "doc", "grade"])
    runs = mk([("S0", "t", ["r1", "r2"]), ("S1", "t", ["x", "r1", "r2"]), ("S2", "t", ["x", "r1", "r2"])])
    P = R.preferences(runs, qrels)
    borda = R.aggregate(P, method="borda")
    assert list(borda.index) == ["S0", "S1", "S2"] and borda.tolist() == [3, 1.5, 1.5]
    mc = R.aggregate(P, method="mc4")
    assert mc.index[0] == "S0" and mc["S1"] == mc["S2"]
    assert R.aggregate(P, method="mc4", damping=0.2).gt(0).all()
    with pytest.raises(ValueError, match="damping"):
        R.aggregate(P, method="mc4", damping=1.0)
    with pytest.raises(ValueError, match="at least 2"):
        R.win_rate(R.preferences(runs[runs.system == "S0"], qrels))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns(), st.booleans())
def test_preference_family_equals_one_weighting_at_a_time(camp, graded):
    runs, qrels = camp
    fam = R.preference_family(runs, qrels, graded=graded)
    assert list(fam) == (["RPP", "dcgRPP", "invRPP"] if graded else ["RPP(graded=0)", "dcgRPP(graded=0)", "invRPP(graded=0)"])
    for w, P in zip(R.WEIGHTINGS, fam.values()):
        pd.testing.assert_frame_equal(P, R.preferences(runs, qrels, weighting=w, graded=graded))
    with pytest.raises(ValueError, match="preference table"):
        R.preference_tensor(R.win_rate(fam[R.rpp_name("uniform", graded=graded)]))


# ---------------------------------------------------------------- the paper's own data: TREC 2020 DL passages

import os
from pathlib import Path

_MIRROR = os.environ.get("IRINNOV_MIRROR")
needs_dl20 = pytest.mark.skipif(
    not _MIRROR or not Path(_MIRROR, "github", "Parry-Parry", "sigir25-annotation").is_dir(),
    reason="the TREC 2020 DL passage runs are not in the mirror (IRINNOV_MIRROR)")


@needs_dl20
def test_deep_pass_2020_table1_and_table4a_rpp_family():
    """The paper's Table 1 row (54 requests, 59 runs, 66.78 relevant per request at grade >= 1) and its Table 4a
    RPP-family values (t-test + Bonferroni: 51.49, 54.59, 55.93 % of the 1711 pairs), on the paper's own data."""
    from irinnov.datasets import load
    from irinnov import meta
    ds = load("trec-dl-2020-passage", progress=False)
    c = ds.campaign()
    assert c.docs.shape[:2] == (59, 54)
    assert round(float((ds.qrels.grade >= 1).groupby(ds.qrels["query"]).sum().mean()), 2) == 66.78
    fam = R.preference_family(c)
    got = [round(100 * meta.discriminative_power(fam[k], test="t-bonferroni").fraction, 2) for k in ("RPP", "dcgRPP", "invRPP")]
    assert got == [51.49, 54.59, 55.93]


# ---------------------------------------------------------------- the one API
def test_options_are_keyword_only():
    c = prepare(E1_RUNS, E1_QRELS)
    with pytest.raises(TypeError, match="positional"):
        R.rpp(c, "A", "B")
    with pytest.raises(TypeError, match="did you mean"):
        R.preferences(c, "dcg")
    for call in (lambda: R.offline_interleaving(E1_RUNS, E1_QRELS, "A", "B"),
                 lambda: R.disaggregate(E1_RUNS, E1_QRELS, "A", "B", "q1"),
                 lambda: R.aggregate(R.preferences(c), "mc4"), lambda: R.recall_weights(3, "dcg"),
                 lambda: R.corpus_asl(c, None, 100), lambda: R.mc4(np.eye(2), 10)):
        with pytest.raises(TypeError, match="positional"):
            call()
    with pytest.raises(TypeError, match="missing 2 required keyword-only"):
        R.rpp(c)


def test_canonical_names_and_orientation():
    c = prepare(E1_RUNS, E1_QRELS)
    P = R.preferences(c)
    assert [P.attrs["measure"], R.preferences(c, weighting="dcg", graded=False).attrs["measure"],
            R.preferences(c, weighting="inverse", threshold=2).attrs["measure"],
            R.preferences(E3_RUNS, E3_QRELS, subtopics=True).attrs["measure"]] == [
        "RPP", "dcgRPP(graded=0)", "invRPP(rel=2)", "st-RPP"]
    W = R.win_rate(P)
    assert W.attrs["measure"] == "RPP" and W.attrs["higher_is_better"] is True
    assert R.aggregate(P).attrs["measure"] == "RPP(MC4)" and R.aggregate(P, method="borda").attrs["measure"] == "RPP(Borda)"
    s = R.rpp(c, a="A", b="B", weighting="dcg")
    assert s.attrs["measure"] == "dcgRPP" and s.attrs["higher_is_better"] is True
    a = R.corpus_asl(c)
    assert a.attrs["measure"] == "ASL" and a.attrs["higher_is_better"] is False
    pop = R.relevant_positions(c)["q1"][0]
    assert isinstance(pop, R.Population) and (pop.label, pop.m) == (1, 4) and pop.positions.shape == (3, 4)


def test_order_systems_breaks_ties_by_name():
    names = np.array(["c", "a", "b", "d"])
    assert names[R.order_systems(np.array([1.0, 2.0, 1.0 + 1e-13, 0.5]), names)].tolist() == ["a", "b", "c", "d"]
    # relative tolerance: 2e-20 stands apart from 1e-20 (an absolute 1e-12 would tie all three); 1e-20 and
    # 1e-20·(1 + 1e-14) tie, and the tie falls back to the names
    names = np.array(["c", "z", "b", "d"])
    x = np.array([1e-20 * (1 + 1e-14), 2e-20, 1e-20, 5.0])
    assert names[R.order_systems(x, names, relative=True)].tolist() == ["d", "z", "b", "c"]
    assert names[R.order_systems(x, names)].tolist() == ["d", "b", "c", "z"]
