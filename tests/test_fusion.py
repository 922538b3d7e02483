"""irinnov.fusion against SPEC §5.7 Example 4 and brute-force recomputation on random runs."""
from itertools import permutations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, HealthCheck, strategies as st

from irinnov.fusion import normalize, combsum, combmnz, combanz, condorcet, naive_bound, pareto_bound, majoritarian_bound
from irinnov.infotheory import ric, ric_counts, joint_ric

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

F = pd.DataFrame([("F1", "t1", "a", 3.), ("F1", "t1", "x", 2.), ("F1", "t1", "b", 1.),
                  ("F2", "t1", "x", 10.), ("F2", "t1", "c", 8.), ("F2", "t1", "a", 4.), ("F2", "t1", "y", 2.),
                  ("F3", "t1", "b", .9), ("F3", "t1", "a", .5)], columns=["system", "query", "doc", "score"])
QRELS = pd.DataFrame([("t1", d, 1) for d in "abc"] + [("t1", d, 0) for d in "xyz"], columns=["query", "doc", "grade"])


def test_example4():
    n = normalize(F)
    assert dict(zip(n.system + n.doc, n.score)) == {"F1a": 1, "F1x": .5, "F1b": 0, "F2x": 1, "F2c": .75, "F2a": .25,
                                                    "F2y": 0, "F3b": 1, "F3a": 0}
    cs, cm, ca, cf = combsum(F), combmnz(F), combanz(F), condorcet(F)
    assert cs.doc.tolist() == list("xabcy") and cs.score.tolist() == [1.5, 1.25, 1, .75, 0]
    assert cm.doc.tolist() == list("axbcy") and cm.score.tolist() == [3.75, 3, 2, .75, 0]
    assert ca.doc.tolist() == list("xcbay") and ca.score.tolist() == pytest.approx([.75, .75, .5, 5 / 12, 0])
    assert cf.doc.tolist() == list("axbcy") and cf.score.tolist() == [5, 4, 3, 2, 1]
    assert set(cs.system) == {"CombSUM"} and set(cf.system) == {"Condorcet"}
    assert ric_counts(cs, QRELS)[["c", "d", "u"]].values.tolist() == [[6, 3, 0]]
    assert ric_counts(cm, QRELS)[["c", "d", "u"]].values.tolist() == [[7, 2, 0]]
    assert [round(ric(x, QRELS).iloc[0, 0], 6) for x in (cs, cm, ca, cf)] == [0.081704, 0.235795, 0.081704, 0.235795]
    assert ric(F, QRELS)["t1"].round(6).tolist() == [0.106462, 0.011489, 0.666667]
    nb = naive_bound(F, QRELS)
    assert nb.doc.tolist() == list("abcxy") and ric(nb, QRELS).iloc[0, 0] == 1
    assert joint_ric(F, QRELS, systems=["F1", "F2", "F3"]).iloc[0] == 1


def test_errors_and_depth():
    with pytest.raises(ValueError, match="norm"):
        combsum(F, norm="zscore")
    with pytest.raises(ValueError, match="unknown"):
        condorcet(F, systems=["F1", "F7"])
    with pytest.raises(ValueError, match="empty"):
        combmnz(F, systems=[])
    with pytest.raises(ValueError, match="threshold"):
        naive_bound(F, QRELS, threshold=-1)
    # depth=1 keeps each input's top document: a (F1), x (F2), b (F3), each normalised to 1 (max = min)
    assert sorted(combsum(F, depth=1).doc) == ["a", "b", "x"] and set(combsum(F, depth=1).score) == {1.0}


def random_runs(seed, n_sys=None):
    rng = np.random.default_rng(seed)
    S = n_sys or int(rng.integers(1, 5))
    rows = []
    for q in ("q1", "q2"):
        pool = [f"d{k}" for k in range(int(rng.integers(2, 9)))]
        for s in range(S):
            docs = rng.choice(pool, int(rng.integers(1, len(pool) + 1)), replace=False)
            for d in docs: rows.append((f"s{s}", q, str(d), float(rng.integers(0, 20))))
    return pd.DataFrame(rows, columns=["system", "query", "doc", "score"])


def trec_order(items):
    "items: {doc: score} → docs by score desc, ties doc id desc."
    return [d for d, _ in sorted(sorted(items.items(), key=lambda x: x[0], reverse=True), key=lambda x: -x[1])]


@SETTINGS
@given(st.integers(0, 10 ** 6))
def test_comb_matches_brute_force(seed):
    runs = random_runs(seed)
    for q in ("q1", "q2"):
        lists = {}
        for s, g in runs[runs["query"] == q].groupby("system"):
            sc = dict(zip(g.doc, g.score))
            lo, hi = min(sc.values()), max(sc.values())
            lists[s] = {d: (v - lo) / (hi - lo) if hi > lo else 1.0 for d, v in sc.items()}
        S, m = {}, {}
        for l in lists.values():
            for d, v in l.items(): S[d] = S.get(d, 0) + v; m[d] = m.get(d, 0) + 1
        for fn, f in ((combsum, lambda d: S[d]), (combmnz, lambda d: S[d] * m[d]), (combanz, lambda d: S[d] / m[d])):
            out = fn(runs)
            out = out[out["query"] == q]
            got = dict(zip(out.doc, out.score))
            assert set(got) == set(S)
            for d in S: assert got[d] == pytest.approx(f(d), abs=1e-12)


@SETTINGS
@given(st.integers(0, 10 ** 6))
def test_one_system_reproduces_its_order(seed):
    runs = random_runs(seed, n_sys=1)
    for q in ("q1", "q2"):
        g = runs[runs["query"] == q]
        want = trec_order(dict(zip(g.doc, g.score)))
        got = condorcet(runs)
        assert got[got["query"] == q].doc.tolist() == want
        for fn in (combsum, combmnz, combanz):
            out = fn(runs)
            out = out[out["query"] == q]
            if out.score.nunique() == len(out):           # min-max can only create ties between tied inputs
                assert out.doc.tolist() == want


@SETTINGS
@given(st.integers(0, 10 ** 6))
def test_condorcet_respects_transitive_majorities(seed):
    rng = np.random.default_rng(seed)
    docs = [f"d{k}" for k in range(5)]
    rows = []
    for s in range(int(rng.choice([1, 3, 5]))):
        for k, d in enumerate(rng.permutation(docs)): rows.append((f"s{s}", "q", str(d), float(10 - k)))
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    pos = {s: {d: k for k, d in enumerate(trec_order(dict(zip(g.doc, g.score))))} for s, g in runs.groupby("system")}
    V = lambda a, b: sum(np.sign(p[b] - p[a]) for p in pos.values())
    beats = {(a, b) for a in docs for b in docs if a != b and V(a, b) > 0}
    cyclic = any((a, b) in beats and (b, c) in beats and (c, a) in beats for a, b, c in permutations(docs, 3))
    out = condorcet(runs).doc.tolist()
    assert sorted(out) == docs
    if not cyclic:                                         # odd number of full lists: a strict total order
        assert all(V(out[i], out[j]) > 0 for i in range(5) for j in range(i + 1, 5))


@SETTINGS
@given(st.integers(0, 10 ** 6))
def test_naive_bound_binary_ric_is_union_recall(seed):
    runs = random_runs(seed)
    rng = np.random.default_rng(seed + 1)
    pool = sorted(set(runs.doc))
    qrels = pd.DataFrame([(q, d, int(rng.integers(0, 3))) for q in ("q1", "q2") for d in pool]
                         + [(q, "zz-nonrel", 0) for q in ("q1", "q2")], columns=["query", "doc", "grade"])
    nb = naive_bound(runs, qrels, graded=False)
    r = ric(nb, qrels, graded=False)
    for q in r.columns:
        rel = set(qrels[(qrels["query"] == q) & (qrels.grade >= 1)].doc)
        union = set(runs[runs["query"] == q].doc)
        assert r.iloc[0][q] == pytest.approx(len(rel & union) / len(rel), abs=1e-12)


def _bound_cmp_brute(runs, qrels, rule):
    "Montague's comparator written out pair by pair from the definitions (positions; absent = below; abstentions)."
    pos = {s: dict(zip(g.sort_values("score", ascending=False, kind="stable").doc,
                       range(len(g)))) for s, g in runs.groupby("system")}
    level = dict(zip(qrels.doc, qrels.grade.clip(lower=0)))
    def cmp(a, b):
        votes_a = votes_b = 0
        for p in pos.values():
            if a not in p and b not in p: continue
            if p.get(a, 10 ** 9) < p.get(b, 10 ** 9): votes_a += 1
            else: votes_b += 1
        if rule == "pareto":
            if votes_a and not votes_b: return -1
            if votes_b and not votes_a: return 1
        else:
            if votes_a > votes_b: return -1
            if votes_b > votes_a: return 1
        la, lb = level.get(a, 0), level.get(b, 0)
        if la != lb: return -1 if la > lb else 1
        return -1 if a > b else 1                                   # doc id descending
    return cmp


@SETTINGS
@given(st.integers(0, 10 ** 6), st.sampled_from(["pareto", "majoritarian"]))
def test_bounds_follow_the_comparator(seed, rule):
    """Pareto and Majoritarian outputs put A before B whenever the brute-force comparator says so (when it is a total
    order: then the sort is unique), and the union is kept whole."""
    rng = np.random.default_rng(seed)
    docs = [f"d{k}" for k in range(6)]
    rows = []
    for s in range(int(rng.integers(1, 5))):
        for k, d in enumerate(rng.choice(docs, int(rng.integers(1, 7)), replace=False)):
            rows.append((f"s{s}", "q", str(d), float(10 - k)))
    runs = pd.DataFrame(rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([("q", d, int(rng.integers(-1, 3))) for d in docs], columns=["query", "doc", "grade"])
    f = pareto_bound if rule == "pareto" else majoritarian_bound
    out = f(runs, qrels).doc.tolist()
    union = sorted(set(runs.doc))
    assert sorted(out) == union
    cmp = _bound_cmp_brute(runs, qrels, rule)
    total = all(not (cmp(a, b) < 0 and cmp(b, c) < 0 and cmp(c, a) < 0) for a, b, c in permutations(union, 3))
    if total:
        assert all(cmp(out[i], out[j]) < 0 for i in range(len(out)) for j in range(i + 1, len(out)))
