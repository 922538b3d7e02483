"""GAP (graded average precision) against a direct transcription of Robertson, Kanoulas & Yilmaz's formula (a double
loop over ranks) and against AP at a fixed threshold, on random graded campaigns."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, HealthCheck, strategies as st

from irinnov.gap import graded_average_precision

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def brute_gap(ranking, grades, g):
    "The paper's formula, literally: Σ_n x_n/n Σ_{m≤n} x_m δ(i_m, i_n) / Σ_i R_i G(i)."
    G = np.r_[0.0, np.cumsum(g)]
    lv = [max(0, min(grades.get(d, 0), len(g))) for d in ranking]
    num = 0.0
    for n in range(len(lv)):
        if lv[n] == 0: continue
        num += sum(G[min(lv[m], lv[n])] for m in range(n + 1) if lv[m] > 0) / (n + 1)
    den = sum(G[max(0, min(x, len(g)))] for x in grades.values())
    return num / den


def brute_ap(ranking, grades, threshold):
    rel = {d for d, x in grades.items() if x >= threshold}
    hits, tot = 0, 0.0
    for n, d in enumerate(ranking, 1):
        if d in rel:
            hits += 1
            tot += hits / n
    return tot / len(rel)


def random_case(seed):
    rng = np.random.default_rng(seed)
    pool = [f"d{k:02d}" for k in range(int(rng.integers(2, 25)))]
    grades = {d: int(rng.choice([-2, 0, 0, 1, 1, 2, 3])) for d in pool if rng.random() < 0.8}
    if not any(x > 0 for x in grades.values()): grades[pool[0]] = 2
    grades.setdefault(pool[-1], 3)                                      # the largest grade is 3
    grades[pool[-1]] = 3
    ranking = list(rng.choice(pool + ["u1", "u2"], int(rng.integers(1, len(pool) + 3)), replace=False))
    return ranking, grades, rng


def frames(ranking, grades):
    runs = pd.DataFrame({"system": "S", "query": "7", "doc": ranking, "score": np.arange(len(ranking), 0, -1.0)})
    qrels = pd.DataFrame({"query": "7", "doc": list(grades), "grade": list(grades.values())})
    return runs, qrels


@SETTINGS
@given(st.integers(0, 10 ** 6))
def test_gap_equals_the_formula(seed):
    ranking, grades, rng = random_case(seed)
    runs, qrels = frames(ranking, grades)
    w = rng.random(3) + 0.01
    g = w / w.sum()
    got = graded_average_precision(runs, qrels, weights=w).iloc[0, 0]
    assert got == pytest.approx(brute_gap(ranking, grades, g), abs=1e-12)
    got = graded_average_precision(runs, qrels).iloc[0, 0]
    assert got == pytest.approx(brute_gap(ranking, grades, np.full(3, 1 / 3)), abs=1e-12)


@SETTINGS
@given(st.integers(0, 10 ** 6), st.integers(1, 3))
def test_gap_with_one_threshold_is_ap(seed, threshold):
    ranking, grades, _ = random_case(seed)
    runs, qrels = frames(ranking, grades)
    w = np.zeros(3)
    w[threshold - 1] = 1
    got = graded_average_precision(runs, qrels, weights=w).iloc[0, 0]
    assert got == pytest.approx(brute_ap(ranking, grades, threshold), abs=1e-12)


def test_systems_topics_and_missing_lists():
    qrels = pd.DataFrame({"query": ["1", "1", "2", "3"], "doc": ["a", "b", "c", "z"], "grade": [2, 1, 1, 0]})
    runs = pd.DataFrame({"system": ["A", "A", "B"], "query": ["1", "1", "2"], "doc": ["b", "a", "c"],
                         "score": [2.0, 1.0, 1.0]})
    t = graded_average_precision(runs, qrels)
    assert t.columns.tolist() == ["1", "2"]                # topic 3 has no relevant document
    G = np.array([0, .5, 1.0])
    assert t.loc["A", "1"] == pytest.approx((G[1] / 1 + (G[1] + G[2]) / 2) / (G[1] + G[2]), abs=1e-15)
    assert t.loc["B", "1"] == 0.0 and t.loc["A", "2"] == 0.0
    assert t.loc["B", "2"] == pytest.approx(1.0)


def test_gap_by_name_in_metrics_and_the_command():
    "`measure(name='GAP@k')` and `irinnov evaluate -m GAP` give graded_average_precision, a zero column where a qrels topic has no relevant document."
    import pandas as pd
    from irinnov.metrics import evaluate, measure
    from irinnov.trec import prepare
    runs = pd.DataFrame([("A", "t1", "d1", 3.0), ("A", "t1", "d2", 2.0), ("A", "t1", "d3", 1.0), ("B", "t1", "d3", 2.0),
                         ("B", "t1", "d1", 1.0), ("A", "t2", "d4", 1.0), ("B", "t2", "d5", 1.0)],
                        columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame([("t1", "d1", 2), ("t1", "d3", 1), ("t1", "d2", 0), ("t2", "d4", 0)], columns=["query", "doc", "grade"])
    c = prepare(runs, qrels)
    for k in (None, 2):
        want = graded_average_precision(c, depth=k)
        got = measure(c, name="GAP" if k is None else f"GAP@{k}")
        assert list(got.columns) == ["t1", "t2"] and (got["t2"] == 0).all()
        assert (got[want.columns] - want).abs().max().max() == 0
    assert abs(evaluate(c, ["GAP"])["GAP"] - graded_average_precision(c).reindex(columns=["t1", "t2"], fill_value=0).mean(axis=1)).max() < 1e-15
