"Tests of irinnov.lexicographic: the worked example of the method page (exact) and the properties against a brute-force loop over levels."
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from irinnov import lexicographic as L
from irinnov import meta, rpp
from irinnov.classic import reciprocal_rank

INF = math.inf


def listing(system, query, docs):
    return [(system, query, d, float(len(docs) - i)) for i, d in enumerate(docs)]


# ---------------------------------------------------------------- the worked example
WX_QRELS = pd.DataFrame([("q1", d, 1) for d in ("r1", "r2", "r3")] + [("q1", f"n{i}", 0) for i in range(1, 7)]
                        + [("q2", "n1", 0)], columns=["query", "doc", "grade"])
WX_RUNS = pd.DataFrame(listing("a", "q1", ["r1", "n1", "n2", "n3", "r2", "n4", "n5", "n6", "r3"])
                       + listing("b", "q1", ["n1", "r1", "r2", "r3"]) + listing("c", "q1", ["r1", "n1", "n2", "n3", "r2", "n4"])
                       + listing("d", "q2", ["n1", "n2"]), columns=["system", "query", "doc", "score"])
WX = {"a": (1, 5, 9), "b": (2, 3, 4), "c": (1, 5, INF), "d": (INF, INF, INF)}
# pair -> (lexiprecision, lexirecall, uniform RPP)
WX_TABLE = {("a", "b"): (1, -1, -1 / 3), ("a", "c"): (1, 1, 1 / 3), ("b", "c"): (-1, 1, 1 / 3),
            ("c", "d"): (1, 1, 2 / 3), ("a", "d"): (1, 1, 1.0), ("a", "a"): (0, 0, 0.0)}


def test_worked_example_positions():
    pos = rpp.relevant_positions(WX_RUNS, WX_QRELS, graded=False)
    assert list(pos) == ["q1"]                                       # q2 has no relevant document
    F = pos["q1"][0].positions
    for s, f in WX.items(): assert tuple(F.loc[s]) == f              # d has no list for q1: all ∞


@pytest.mark.parametrize("pair", list(WX_TABLE))
def test_worked_example_pairwise_and_tables(pair):
    x, y = pair
    lp, lr, r = WX_TABLE[pair]
    assert L.lexicographic(WX[x], WX[y]) == lp
    assert L.lexicographic(WX[x], WX[y], measure="lexirecall") == lr
    assert L.lexicographic(WX[y], WX[x]) == -lp and L.lexicographic(WX[y], WX[x], measure="lexirecall") == -lr
    LP, LR = L.lexiprecision(WX_RUNS, WX_QRELS), L.lexirecall(WX_RUNS, WX_QRELS)
    assert list(LP.columns) == ["q1"] and list(LR.columns) == ["q1"]
    assert LP.loc[pair, "q1"] == lp and LR.loc[pair, "q1"] == lr
    assert LP.loc[pair[::-1], "q1"] == -lp and LR.loc[pair[::-1], "q1"] == -lr
    assert rpp.preferences(WX_RUNS, WX_QRELS, graded=False).loc[pair, "q1"] == pytest.approx(r, abs=1e-15)


def test_table_format_is_rpps():
    P = rpp.preferences(WX_RUNS, WX_QRELS, graded=False)
    for f, name in ((L.lexiprecision, "lexiprecision"), (L.lexirecall, "lexirecall")):
        T = f(WX_RUNS, WX_QRELS)
        assert T.index.equals(P.index) and T.columns.equals(P.columns) and T.dtypes.eq(np.float64).all()
        assert T.attrs == {"measure": name, "higher_is_better": True, "kind": "preference"}
        assert f(WX_RUNS, WX_QRELS, threshold=2).attrs["measure"] == f"{name}(rel=2)"
        assert f(WX_RUNS, WX_QRELS, threshold=2).shape == (16, 0)     # no grade-2 document: no topic
    assert list(rpp.aggregate(L.lexiprecision(WX_RUNS, WX_QRELS), method="mean").index) == ["a", "c", "b", "d"]
    assert list(rpp.aggregate(L.lexirecall(WX_RUNS, WX_QRELS), method="mean").index) == ["b", "a", "c", "d"]


def test_pairwise_broadcasts_and_checks():
    F = np.array(list(WX.values()), dtype=float)
    M = L.lexicographic(F[:, None, :], F[None, :, :])
    assert M.shape == (4, 4) and (M == -M.T).all()
    assert L.lexicographic([INF, INF], [7, INF], measure="lexirecall") == -1
    assert L.lexicographic([1, 2, INF], [1, 2, INF]) == 0
    assert L.lexicographic(np.zeros((3, 0)), np.zeros((3, 0))).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="measure"): L.lexicographic([1], [2], measure="lexi")
    with pytest.raises(ValueError, match="NaN"): L.lexicographic([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match="last axis"): L.lexicographic(1, 2)


def test_depth_truncates_first():
    # at depth 4: a = (1, ∞, ∞), b = (2, 3, 4), c = (1, ∞, ∞)
    T = L.lexirecall(WX_RUNS, WX_QRELS, depth=4)
    assert T.loc[("a", "b"), "q1"] == -1 and T.loc[("a", "c"), "q1"] == 0
    assert L.lexiprecision(WX_RUNS, WX_QRELS, depth=4).loc[("a", "b"), "q1"] == 1


# ---------------------------------------------------------------- brute force on generated campaigns
def ranking(runs, s, q):
    "System s's list for topic q in trec_eval order (float32 score descending, doc id descending); [] if absent."
    r = runs[(runs.system == s) & (runs["query"] == q)]
    return list(r.assign(f=r.score.astype(np.float32)).sort_values(["f", "doc"], ascending=[False, False]).doc)


def rankings(runs):
    "{(system, topic): list in trec_eval order}."
    return {(s, q): ranking(runs, s, q) for s in runs.system.unique() for q in runs["query"].unique()}


def brute(lists, qrels, a, b, threshold=1, depth=None, last=False):
    "{topic: preference} by a plain loop over the levels, from the lists (`rankings`) and the raw qrels."
    out = {}
    for q, g in qrels.groupby("query"):
        rel = set(g.doc[g.grade >= threshold])
        if not rel: continue                                     # topics without relevant documents are not evaluated
        def vec(s):
            lst = lists.get((s, q), [])[:depth]
            return sorted([i + 1 for i, d in enumerate(lst) if d in rel] + [INF] * len(rel - set(lst)))
        fa, fb = vec(a), vec(b)
        levels = range(len(fa) - 1, -1, -1) if last else range(len(fa))
        v = 0
        for j in levels:
            if fa[j] != fb[j]:
                v = 1 if fa[j] < fb[j] else -1
                break
        out[q] = v
    return out


@st.composite
def campaigns(draw):
    "Heavy ties: few documents, scores in {0, 1}, graded qrels, topics missing from runs and topics without relevant documents."
    n_sys = draw(st.integers(2, 5)); n_q = draw(st.integers(1, 3)); n_docs = draw(st.integers(1, 6))
    docs = [f"d{i}" for i in range(n_docs)]
    qrows = [(f"q{q}", d, g) for q in range(n_q) for d in docs if (g := draw(st.sampled_from([None, 0, 1, 1, 2]))) is not None]
    qrows += [(f"q{n_q}", "d0", 0), ("q0", "u1", 0)]                # a topic with no relevant document; q0 always judged
    rrows = []
    for s in range(n_sys):
        for q in range(n_q + 1):
            if draw(st.booleans()) and (s, q) != (0, 0): continue   # no list for this topic
            chosen = draw(st.lists(st.sampled_from(docs + ["u1"]), unique=True, max_size=5))
            rrows += [(f"S{s}", f"q{q}", d, float(draw(st.integers(0, 1)))) for d in chosen]
    if draw(st.booleans()):                                          # a system that duplicates another (identical vectors)
        rrows += [("T", q, d, sc) for s, q, d, sc in rrows if s == "S0"]
    rrows.append(("Z", "q0", "u9", 0.0))
    return (pd.DataFrame(rrows, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(qrows, columns=["query", "doc", "grade"]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns(), st.sampled_from([1, 2]), st.sampled_from([None, 1, 3]))
def test_against_brute_force(camp, threshold, depth):
    runs, qrels = camp
    lists = rankings(runs)
    for last, f in ((False, L.lexiprecision), (True, L.lexirecall)):
        T = f(runs, qrels, threshold=threshold, depth=depth)
        systems, _, P = rpp.preference_tensor(T)
        assert (P == -P.transpose(0, 2, 1)).all() and np.isin(P, (-1, 0, 1)).all()
        for a in systems:
            for b in systems:
                want = brute(lists, qrels, a, b, threshold, depth, last)
                assert list(T.columns) == sorted(want)
                assert [T.loc[(a, b), q] for q in T.columns] == [want[q] for q in T.columns], (a, b, last)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns(), st.sampled_from([1, 2]))
def test_refines_rr_and_full_recall_wins(camp, threshold):
    runs, qrels = camp
    LP, LR = L.lexiprecision(runs, qrels, threshold=threshold), L.lexirecall(runs, qrels, threshold=threshold)
    rr = reciprocal_rank(runs, qrels, threshold=threshold)
    pos = rpp.relevant_positions(runs, qrels, graded=False, threshold=threshold)
    for q in LP.columns:
        F = pos[q][0].positions
        complete = np.isfinite(F).all(axis=1)
        for a in F.index:
            for b in F.index:
                if rr.loc[a, q] != rr.loc[b, q]: assert LP.loc[(a, b), q] == np.sign(rr.loc[a, q] - rr.loc[b, q])
                else: assert LP.loc[(a, b), q] == L.lexicographic(F.loc[a].to_numpy()[1:], F.loc[b].to_numpy()[1:])
                if complete[a] and not complete[b]: assert LR.loc[(a, b), q] == 1


def test_rr_refinement_against_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(12)]
    qrels = pd.DataFrame([(f"q{q}", d, int(rng.integers(0, 3))) for q in range(6) for d in docs], columns=["query", "doc", "grade"])
    runs = pd.DataFrame([(f"S{s}", f"q{q}", d, float(rng.integers(0, 4))) for s in range(6) for q in range(6)
                         for d in rng.choice(docs, 6, replace=False)], columns=["system", "query", "doc", "score"])
    qd = {q: dict(zip(g.doc, g.grade.astype(int))) for q, g in qrels.groupby("query")}
    ev = pytrec_eval.RelevanceEvaluator(qd, {"recip_rank"})
    rr = {s: ev.evaluate({q: dict(zip(g2.doc, g2.score)) for q, g2 in g.groupby("query")}) for s, g in runs.groupby("system")}
    LP = L.lexiprecision(runs, qrels)
    n = 0
    for q in LP.columns:
        for a in rr:
            for b in rr:
                x, y = rr[a].get(q, {}).get("recip_rank", 0.0), rr[b].get(q, {}).get("recip_rank", 0.0)
                if x != y: assert LP.loc[(a, b), q] == np.sign(x - y); n += 1
    assert n > 50


def test_discriminative_power_takes_the_table():
    twice = lambda df: pd.concat([df, df[df["query"] == "q1"].assign(query="q3")], ignore_index=True)
    T = L.lexiprecision(twice(WX_RUNS), twice(WX_QRELS))
    assert list(T.columns) == ["q1", "q3"]
    dp = meta.discriminative_power(T, test="t-bonferroni")
    assert dp.n_pairs == 6 and dp.measure == "lexiprecision"
    assert meta.pairwise_pvalues(T, test="randomized-tukey", B=50).shape == (4, 4)


def test_registry_measures_are_the_win_rates():
    "`lexiprecision` and `lexirecall` by name (the registry, the command line's -m) are the win rates of the tables, named alike."
    import warnings
    from irinnov.measures import parse_measure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # a field of four runs: the small-field warning
        for name, fn in (("lexiprecision", L.lexiprecision), ("lexirecall", L.lexirecall)):
            for t in (1, 2):
                m = parse_measure(name if t == 1 else f"{name}(rel={t})")
                got, want = m(WX_RUNS, WX_QRELS), rpp.win_rate(fn(WX_RUNS, WX_QRELS, threshold=t))
                assert m.name == want.attrs.get("measure", m.name) == (name if t == 1 else f"{name}(rel={t})")
                np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
