"""The experiment drivers of irinnov.experiments.novelty, .rpp and .asl on a small synthetic campaign, each checked
against a computation written apart from it: brute-force loops over the runs, scipy's tests and Kendall's τ, or
counts made by hand."""
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from irinnov.experiments import asl as XA, novelty as XN, rpp as XR
from irinnov.asl import asl
from irinnov.novelty import utility
from irinnov.trec import prepare

SYSTEMS, TOPICS, DOCS = ["A", "B", "C", "D", "E"], ["t1", "t2", "t3"], [f"d{i}" for i in range(12)]


def _synthetic(seed=1):
    "Five runs of 5–11 documents over three topics of twelve judged documents (grades 0, 1, 2); distinct scores."
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    for t in TOPICS:
        qrels += [(t, d, int(rng.integers(0, 3))) for d in DOCS]
        for s in SYSTEMS:
            for r, i in enumerate(rng.permutation(len(DOCS))[:int(rng.integers(5, 12))]):
                runs.append((s, t, DOCS[i], float(100 - r)))
    return (pd.DataFrame(runs, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(qrels, columns=["query", "doc", "grade"]))


RUNS, QRELS = _synthetic()
C = prepare(RUNS, QRELS)
GRADE = {(q, d): g for q, d, g in QRELS.itertuples(index=False)}


def _ranking(s, q):
    "A run's documents for a topic, best first."
    x = RUNS[(RUNS.system == s) & (RUNS["query"] == q)]
    return list(x.sort_values("score", ascending=False).doc)


def _ap(s, q, threshold):
    "Average precision by a loop: precision at each relevant document retrieved, over all relevant documents."
    rel = {d for (t, d), g in GRADE.items() if t == q and g >= threshold}
    hits, total = 0, 0.0
    for r, d in enumerate(_ranking(s, q), 1):
        if d in rel: hits += 1; total += hits / r
    return total / len(rel)


def _rank_min(values: dict, higher=True) -> dict:
    "1 + the number of strictly better values (ties share the smallest rank)."
    return {k: 1 + sum((w > v) if higher else (w < v) for w in values.values()) for k, v in values.items()}


# ------------------------------------------------------------------ novelty
@pytest.mark.parametrize("N,threshold", [(5, 1), (3, 2), (11, 1)])
def test_coverage_counts_runs_by_a_loop(N, threshold):
    rel = [(q, d) for (q, d), g in GRADE.items() if g >= threshold]
    found = {k: sum(k[1] in _ranking(s, k[0])[:N] for s in SYSTEMS) for k in rel}
    got = XN.coverage(C, N=N, threshold=threshold)
    assert got == dict(N=N, threshold=threshold, relevant=len(rel), by_nobody=sum(v == 0 for v in found.values()),
                       by_one=sum(v == 1 for v in found.values()))


def test_rank_changes_ranks_map_and_utility():
    out = XN.rank_changes(C, threshold=2)
    topics = [q for q in TOPICS if any(g >= 2 for (t, _), g in GRADE.items() if t == q)]
    mean_ap = {s: np.mean([_ap(s, q, 2) for q in topics]) for s in SYSTEMS}
    u = utility(C, threshold=2).mean(axis=1)
    ap_rank, u_rank = _rank_min(mean_ap), _rank_min(u.to_dict())
    r = out["ranks"]
    for s in SYSTEMS:
        assert r.loc[s, "MAP"] == pytest.approx(mean_ap[s], abs=1e-6)
        assert r.loc[s, "U"] == pytest.approx(u[s])
        assert (r.loc[s, "AP_rank"], r.loc[s, "U_rank"]) == (ap_rank[s], u_rank[s])
        assert r.loc[s, "difference"] == ap_rank[s] - u_rank[s]
    assert list(out["ap"].columns) == list(out["utility"].columns) == topics
    for q in topics:                                       # per topic: the same ranks within one topic
        a = _rank_min({s: _ap(s, q, 2) for s in SYSTEMS})
        b = _rank_min(out["utility"][q].to_dict())
        assert [out["per_topic"].loc[s, q] for s in SYSTEMS] == [a[s] - b[s] for s in SYSTEMS]


# ------------------------------------------------------------------ rpp
SCORES = pd.DataFrame(np.array([[.90, .80, .95, .85, .90, .88],     # A: far above the others
                                [.30, .35, .20, .40, .30, .25],
                                [.32, .30, .28, .35, .27, .30],
                                [.10, .50, .20, .45, .15, .40]]),
                      index=pd.Index(list("ABCD"), name="system"), columns=[f"q{i}" for i in range(6)])


def test_discriminative_power_table_t_test_by_scipy():
    pairs = list(combinations(SCORES.index, 2))
    p = [stats.ttest_rel(SCORES.loc[a], SCORES.loc[b]).pvalue for a, b in pairs]
    expected = 100 * np.mean([min(1.0, x * len(pairs)) < 0.05 for x in p])
    t = XR.discriminative_power_table({"m": SCORES, "m again": SCORES}, B=200, seed=3)
    assert list(t.columns) == ["Tukey HSD (randomized, B=200)", "t-test + Bonferroni"]
    assert list(t.index) == ["m", "m again"]
    assert t.loc["m", "t-test + Bonferroni"] == pytest.approx(expected)
    # A is far above B, C and D on every topic: the HSD separates its three pairs, and not the close pair B, C
    assert t.loc["m", "Tukey HSD (randomized, B=200)"] >= 50
    assert t.loc["m"].equals(t.loc["m again"])


def test_tau_scores_logs_mc4_only():
    x = pd.Series([1e-20, 1e-3, .5], name="mc4(x_T)")
    assert np.allclose(XR.tau_scores(x), np.log(x))
    y = pd.Series([1.0, 2.0, 3.0], name="mean")
    assert XR.tau_scores(y) is y


def test_ordering_correlations_by_scipy():
    mc = pd.Series([1e-20, 3e-1, 2e-3, 1e-12], index=SCORES.index, name="mc4(x_T)")
    low = (1 - SCORES).copy()
    low.attrs["higher_is_better"] = False                  # a lower-is-better score table (like ASL)
    orders = {"mc4": mc, "score": SCORES, "length": low}
    t = XR.ordering_correlations(orders)
    v = {"mc4": mc.to_numpy(), "score": SCORES.mean(axis=1).to_numpy(), "length": -low.mean(axis=1).to_numpy()}
    for a in orders:
        for b in orders:
            assert t.loc[a, b] == pytest.approx(stats.kendalltau(v[a], v[b]).statistic)
    assert t.loc["score", "length"] == pytest.approx(1.0)


def test_robustness_full_data_gives_tau_one_and_one_topic_matches_scipy():
    from irinnov.metrics import average_precision
    out = XR.robustness(C, ks=(1, 3), fractions=(1.0,), subsets=2, draws=2)
    top, jud = out["topics"], out["judgments"]
    measures = ["RPP", "dcgRPP", "invRPP", "AP", "nDCG", "RR"]
    assert len(top) == 2 * 2 * len(measures) and len(jud) == 2 * len(measures)
    assert set(top.measure) == set(jud.measure) == set(measures)
    assert np.allclose(top[top.k == 3].tau, 1.0) and np.allclose(jud.tau, 1.0)   # all topics, all judgments
    ap = average_precision(C)
    for trial in range(2):                                  # k = 1: the subset's topic is the permutation's first
        q = ap.columns[np.random.default_rng(trial).permutation(ap.shape[1])[0]]
        want = stats.kendalltau(ap.mean(axis=1), ap[q]).statistic
        got = top[(top.measure == "AP") & (top.k == 1) & (top.trial == trial)].tau.item()
        assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)


# ------------------------------------------------------------------ asl
DOC_ASL = pd.DataFrame([("A", "q", "a", 0, True), ("A", "q", "b", 10, True), ("A", "q", "c", 11, True),
                        ("A", "q", "d", 25, False), ("A", "r", "a", 30, False), ("A", "r", "b", 31, False),
                        ("B", "q", "a", 5, True), ("B", "q", "b", 10, True), ("B", "q", "c", 1200, False),
                        ("B", "q", "d", 20, True), ("B", "r", "a", 30, True), ("B", "r", "b", 1, True)],
                       columns=["system", "query", "doc", "asl", "retrieved"])


def test_asl_histogram_by_hand():
    h = XA.asl_histogram(DOC_ASL, "A", width=10, depth=30)   # buckets 0-10, 11-20, 21-30; 31 falls outside
    assert list(h.index) == ["0-10", "11-20", "21-30"]
    assert h["retrieved"].tolist() == [2, 1, 0] and h["unretrieved"].tolist() == [0, 0, 2]
    assert list(XA.asl_histogram(DOC_ASL, "A").index[:2]) == ["0-100", "101-200"]


def test_asl_differences_by_hand():
    d = XA.asl_differences(DOC_ASL, "A", "B")                # A − B: -5, 0, -1189, 5, 0, 30
    assert d.to_dict() == {"<=-1000": 1, "-999..-100": 0, "-99..-10": 0, "-9..-1": 1, "0": 2, "1..9": 1, "10..99": 1,
                           "100..999": 0, ">=1000": 0}


def test_ablation_table_last_rows_and_headline_by_loops():
    t = XA.ablation_table(C, pad_to=20)
    assert list(t.index[-2:]) == ["P@20 -> ASL@g1-10", "RR -> ASL@g1-1"]
    assert len(t) == 6
    rr = {s: np.mean([next((1 / r for r, d in enumerate(_ranking(s, q), 1) if GRADE[(q, d)] >= 1), 0.0) for q in TOPICS])
          for s in SYSTEMS}
    asl1 = asl(C, n=1, pad_to=20).mean(axis=1)
    tau = stats.kendalltau([rr[s] for s in SYSTEMS], [-asl1[s] for s in SYSTEMS]).statistic
    assert t.loc["RR -> ASL@g1-1", "kendall_tau"] == pytest.approx(tau)
    h = XA.headline(C, pad_to=20)
    for s in SYSTEMS:
        p20 = np.mean([sum(GRADE[(q, d)] >= 1 for d in _ranking(s, q)[:20]) / 20 for q in TOPICS])
        assert h.loc[s, "P@20"] == pytest.approx(p20)
        assert h.loc[s, "MAP"] == pytest.approx(np.mean([_ap(s, q, 1) for q in TOPICS]), abs=1e-6)
        assert h.loc[s, "ASL"] == pytest.approx(asl(C, pad_to=20).mean(axis=1)[s])
