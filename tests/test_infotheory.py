"""irinnov.infotheory against SPEC §5.7's worked examples and a brute-force enumeration of document pairs."""
from collections import Counter
from math import log2

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, HealthCheck, strategies as st
from scipy.stats import kendalltau

from irinnov.trec import prepare
from irinnov.infotheory import (information_tau, conditional_information_tau, information_tau_from_kendall, ric,
                                ric_counts, joint_ric, information_difference, information_differences)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ONE_LEVEL = pytest.mark.filterwarnings("ignore:RIC.*one relevance level:UserWarning")    # random topics may have one level


def hb(p):
    return 0.0 if p <= 0 or p >= 1 else -(p * log2(p) + (1 - p) * log2(1 - p))


def lists_to_runs(lists):
    rows = [(s, q, d, float(len(ds) - k)) for s, tl in lists.items() for q, ds in tl.items() for k, d in enumerate(ds)]
    return pd.DataFrame(rows, columns=["system", "query", "doc", "score"])


QRELS2 = pd.DataFrame([("t1", d, 1) for d in "abc"] + [("t1", d, 0) for d in "xyz"]
                      + [("t2", d, 1) for d in "ef"] + [("t2", d, 0) for d in "gh"], columns=["query", "doc", "grade"])
RUNS2 = lists_to_runs({"S1": {"t1": list("auxbyz"), "t2": list("egfh")}, "S2": {"t1": list("xyu")},
                       "S3": {"t1": list("xyza"), "t2": list("hgfe")}, "S4": {"t1": list("bcx"), "t2": list("fe")},
                       "S5": {"t1": list("xayb")}})
QRELS3 = pd.DataFrame([("t3", "h", 2), ("t3", "m1", 1), ("t3", "m2", 1), ("t3", "n1", 0), ("t3", "n2", 0)],
                      columns=["query", "doc", "grade"])
RUNS3 = lists_to_runs({"G1": {"t3": ["m1", "h", "v", "n1", "m2", "n2"]}, "G2": {"t3": ["h", "n1", "m1"]},
                       "G3": {"t3": ["n1", "n2", "m2", "h"]}})


# ---------------------------------------------------------------- brute force (independent of the library)
def bf_entropy(samples):
    n = len(samples)
    return -sum(c / n * log2(c / n) for c in Counter(samples).values())


def bf_levels(qrels, topic, graded, threshold):
    q = qrels[qrels["query"] == topic].groupby("doc")["grade"].max()
    return {d: (g if g >= threshold else 0) if graded else int(g >= threshold) for d, g in q.items()}


def bf_positions(runs, topic, system, levels, depth=None):
    "Retained positions: trec_eval order, depth cut, unjudged dropped, truncated after the last relevant."
    r = runs[(runs["system"] == system) & (runs["query"] == topic)]
    rows = sorted(((float(np.float32(s)), d) for d, s in zip(r["doc"], r["score"])), key=lambda x: x[1], reverse=True)
    rows = sorted(rows, key=lambda x: -x[0])
    docs = [d for _, d in rows][:depth] if depth else [d for _, d in rows]
    kept = [d for d in docs if d in levels]
    rel = [k for k, d in enumerate(kept) if levels[d] > 0]
    kept = kept[:rel[-1] + 1] if rel else []
    return {d: k for k, d in enumerate(kept)}


def bf_samples(runs, qrels, topic, systems, graded=True, threshold=1, depth=None):
    "(Q, R_1..R_n) over every ordered pair of judged documents with different levels."
    lv = bf_levels(qrels, topic, graded, threshold)
    pos = [bf_positions(runs, topic, s, lv, depth) for s in systems]
    inf = float("inf")
    out = []
    for i in lv:
        for j in lv:
            if i == j or lv[i] == lv[j]: continue
            q = 1 if lv[i] > lv[j] else -1
            rs = []
            for p in pos:
                a, b = p.get(i, inf), p.get(j, inf)
                rs.append(0 if a == b else (1 if a < b else -1))
            out.append((q, tuple(rs)))
    return out


def bf_mi(samples):
    if not samples: return 0.0
    return bf_entropy([q for q, _ in samples]) + bf_entropy([r for _, r in samples]) - bf_entropy(samples)


def bf_cond(samples, k_target, k_given):
    "I(Q; R_target | R_given) by entropies."
    if not samples: return 0.0
    Z = [tuple(r[k] for k in k_given) for _, r in samples]
    X = [r[k_target] for _, r in samples]
    Q = [q for q, _ in samples]
    return (bf_entropy(list(zip(Q, Z))) + bf_entropy(list(zip(X, Z))) - bf_entropy(list(zip(Q, X, Z)))
            - bf_entropy(Z))


def evaluated_topics(qrels, graded=True, threshold=1):
    "Topics with a relevant document and at least two different levels among the judged documents (SPEC §5.3 item 17)."
    out = []
    for q in sorted(set(qrels["query"])):
        lv = bf_levels(qrels, q, graded, threshold)
        if max(lv.values()) > 0 and len(set(lv.values())) > 1: out.append(q)
    return out


def random_campaign(seed, n_sys=None, n_topics=None):
    rng = np.random.default_rng(seed)
    S = n_sys or int(rng.integers(1, 5))
    Q = n_topics or int(rng.integers(1, 3))
    runs, qrels = [], []
    for q in range(Q):
        pool = [f"d{k}" for k in range(int(rng.integers(3, 10)))]
        judged = rng.random(len(pool)) < 0.75
        for d, j in zip(pool, judged):
            if j: qrels.append((f"t{q}", d, int(rng.choice([-1, 0, 0, 1, 1, 2]))))
        for s in range(S):
            if rng.random() < 0.15: continue                       # no list for this topic
            n = int(rng.integers(1, len(pool) + 1))
            docs = rng.choice(pool, n, replace=False)
            for d in docs: runs.append((f"s{s}", f"t{q}", str(d), float(rng.integers(0, 4))))
    if not runs: runs.append(("s0", "t0", "d0", 1.0))
    if not qrels: qrels.append(("t0", "d0", 1))
    return (pd.DataFrame(runs, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(qrels, columns=["query", "doc", "grade"]))


# ---------------------------------------------------------------- information tau (Example 1, Theorem 1)
R = pd.Series(dict(A=.40, B=.30, C=.20, D=.10))
S = pd.Series(dict(A=.35, B=.40, C=.10, D=.20))
T = pd.Series(dict(A=.50, B=.50, C=.20, D=.10))


def test_example1():
    assert information_tau(R, S) == pytest.approx(1 - hb(2 / 3), abs=1e-12)
    assert round(information_tau(R, S), 6) == 0.081704
    assert information_tau(R, T) == pytest.approx(5 / 6, abs=1e-12)
    assert information_tau(R, T, ties="drop") == pytest.approx(1, abs=1e-12)
    assert round(information_tau(S, T), 6) == 0.231727
    assert information_tau(S, T, ties="drop") == pytest.approx(information_tau_from_kendall(3 / 5), abs=1e-12)
    assert round(information_tau(S, T, ties="drop"), 6) == 0.278072
    assert conditional_information_tau(R, S, T) == pytest.approx(1 / 6, abs=1e-12)
    assert conditional_information_tau(R, S, T, ties="drop") == pytest.approx(0, abs=1e-12)
    assert conditional_information_tau(R, S, R) == pytest.approx(0, abs=1e-12)
    assert conditional_information_tau(R, R, S) == pytest.approx(hb(1 / 3), abs=1e-12)
    assert information_tau(R, R) == pytest.approx(1, abs=1e-12)
    u = pd.Series([1, 1, 1, 0, 0, 0.], index=list("abcdef"))
    assert information_tau(u, u) == pytest.approx(-(2 * .3 * log2(.3) + .4 * log2(.4)), abs=1e-12)


def test_theorem1_table():
    taus = [1, 0.9, 0.8, 0.5, 1 / 3, 0, -0.5, -1]
    want = [1, 0.713603, 0.531004, 0.188722, 0.081704, 0, 0.188722, 1]
    assert np.round(information_tau_from_kendall(taus), 6).tolist() == want
    from scipy.optimize import brentq
    assert round(brentq(lambda t: information_tau_from_kendall(t) - 0.9, 0, 1, xtol=1e-14), 6) == 0.974026
    assert round(brentq(lambda t: information_tau_from_kendall(t) - 0.25, 0, 1, xtol=1e-14), 6) == 0.570997
    with pytest.raises(ValueError, match="tau"):
        information_tau_from_kendall(1.2)


@SETTINGS
@given(st.integers(2, 12), st.integers(0, 10 ** 6))
def test_theorem1_property(n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.permutation(n).astype(float), rng.permutation(n).astype(float)
    tau = kendalltau(a, b).statistic
    assert information_tau(pd.Series(a), pd.Series(b)) == pytest.approx(information_tau_from_kendall(tau), abs=1e-12)
    # even in tau: reversing one ranking changes nothing; strictly increasing transforms change nothing
    assert information_tau(pd.Series(a), pd.Series(-b)) == pytest.approx(information_tau(pd.Series(a), pd.Series(b)), abs=1e-12)
    assert information_tau(pd.Series(np.exp(a)), pd.Series(b ** 3)) == pytest.approx(
        information_tau(pd.Series(a), pd.Series(b)), abs=1e-12)


@SETTINGS
@given(st.integers(3, 10), st.integers(0, 10 ** 6))
def test_ties_properties(n, seed):
    rng = np.random.default_rng(seed)
    r, s, t = (pd.Series(rng.integers(0, 4, n).astype(float)) for _ in range(3))
    v = information_tau(r, s)
    assert 0 <= v <= log2(3) + 1e-12
    assert v == pytest.approx(information_tau(s, r), abs=1e-12)                       # symmetric
    # ties="drop" follows Theorem 1 with tau_A on the pairs tied in neither ranking
    i, j = np.triu_indices(n, 1)
    x, y = np.sign(r.values[i] - r.values[j]), np.sign(s.values[i] - s.values[j])
    keep = (x != 0) & (y != 0)
    if keep.any():
        tau_a = (x[keep] * y[keep]).sum() / keep.sum()
        assert information_tau(r, s, ties="drop") == pytest.approx(information_tau_from_kendall(tau_a), abs=1e-12)
    else:
        assert np.isnan(information_tau(r, s, ties="drop"))
    # chain rule: I(X_r; X_s, X_t) = ι(r, t) + ι(r, s | t), with the joint term by brute force over ordered pairs
    xr, xs, xt = (np.sign(z.values[i] - z.values[j]) for z in (r, s, t))
    samples = [(a, (b, c)) for a, b, c in zip(xr, xs, xt)] + [(-a, (-b, -c)) for a, b, c in zip(xr, xs, xt)]
    assert bf_mi(samples) == pytest.approx(information_tau(r, t) + conditional_information_tau(r, s, t), abs=1e-12)
    assert conditional_information_tau(r, s, r) == pytest.approx(0, abs=1e-12)


def test_tau_inputs_and_errors():
    assert information_tau(list("ABCD"), list("BADC")) == pytest.approx(information_tau_from_kendall(1 / 3), abs=1e-12)
    assert information_tau(dict(a=1, b=2, c=3), pd.Series(dict(c=9, b=5, a=1))) == pytest.approx(1, abs=1e-12)
    with pytest.raises(ValueError, match="1 item"):
        information_tau(R, S.drop("A"))
    with pytest.raises(ValueError, match="at least 2"):
        information_tau(["x"], ["x"])
    with pytest.raises(ValueError, match="NaN"):
        information_tau(R, S.replace(.35, np.nan))
    with pytest.raises(ValueError, match="ties"):
        information_tau(R, S, ties="x")


# ---------------------------------------------------------------- RIC (Examples 2 and 3)
def test_example2_ric():
    t = ric(RUNS2, QRELS2)
    want = [[(7 / 9) * (1 - hb(5 / 7)), 1 - hb(3 / 4)], [0, 0], [1, 1], [2 / 3, 1], [(8 / 9) * (1 - hb(3 / 8)), 0]]
    np.testing.assert_allclose(t.values, want, atol=1e-12)
    assert t.attrs["measure"] == "RIC" and t.index.name == "system" and list(t.columns) == ["t1", "t2"]
    np.testing.assert_allclose(t.mean(axis=1).round(6), [0.147592, 0, 1, 0.833333, 0.020252])
    s = ric(RUNS2, QRELS2, signed=True)
    assert s.loc["S3", "t1"] == -1 and round(s.loc["S5", "t1"], 6) == -0.040503
    k = ric_counts(RUNS2, QRELS2)
    got = {(r.system, r.query): (r.c, r.d, r.u) for r in k.itertuples()}
    assert got[("S1", "t1")] == (5, 2, 2) and got[("S2", "t1")] == (0, 0, 9) and got[("S3", "t1")] == (0, 9, 0)
    assert got[("S4", "t1")] == (6, 0, 3) and got[("S5", "t1")] == (3, 5, 1) and got[("S1", "t2")] == (3, 1, 0)
    assert (k.c + k.d + k.u == k.n_pairs).all()


def test_example3_graded():
    g, b = ric(RUNS3, QRELS3)["t3"], ric(RUNS3, QRELS3, graded=False)["t3"]
    np.testing.assert_allclose(g.values, [1 - hb(3 / 4), (7 / 8) * (1 - hb(5 / 7)), 1 - hb(1 / 8)], atol=1e-12)
    np.testing.assert_allclose(b.values, [1 - hb(5 / 6), (5 / 6) * (1 - hb(3 / 5)), 1], atol=1e-12)
    assert ric_counts(RUNS3, QRELS3)[["c", "d", "u"]].values.tolist() == [[6, 2, 0], [5, 2, 1], [1, 7, 0]]
    assert round(joint_ric(RUNS3, QRELS3, systems=["G1", "G2"]).iloc[0], 6) == 0.298795
    assert round(information_difference(RUNS3, QRELS3, a="G1", b="G2").iloc[0], 6) == 0.289099
    assert round(joint_ric(RUNS3, QRELS3, systems=["G1", "G2"], graded=False).iloc[0], 6) == 0.459148
    assert round(information_difference(RUNS3, QRELS3, a="G1", b="G2", graded=False).iloc[0], 6) == 0.544110


def test_example2_joint_and_id():
    c = prepare(RUNS2, QRELS2)
    j = joint_ric(c, systems=["S1", "S5"])
    assert j.iloc[0] == pytest.approx(1 - 5 / 9 * hb(3 / 5) - 1 / 9, abs=1e-12)
    assert round(j.mean(), 6) == 0.269097
    idf = information_differences(c, pairs=[("S1", "S5"), ("S1", "S4"), ("S1", "S2"), ("S3", "S4"), ("S4", "S5"), ("S1", "S1")])
    want = [[0.551979, 0.188722], [1.226872, 0.811278], [0.106462, 0.188722], [0.333333, 0], [0.680633, 1], [0, 0]]
    np.testing.assert_allclose(idf.values.round(6), want)
    assert round(idf.iloc[0].mean(), 6) == 0.370350
    assert joint_ric(c, systems=["S1", "S2", "S3", "S4", "S5"]).tolist() == [1.0, 1.0]
    assert round(joint_ric(c, systems=["S4", "S5"]).iloc[0], 6) == 0.693901


def test_ric_properties():
    qrels = pd.DataFrame([("q", d, g) for d, g in [("r1", 2), ("r2", 1), ("r3", 1), ("n1", 0), ("n2", 0), ("n3", -2)]],
                         columns=["query", "doc", "grade"])
    perfect = lists_to_runs({"P": {"q": ["r1", "r2", "r3", "n1"]}, "W": {"q": ["n3", "n2", "n1", "r3", "r2", "r1"]},
                             "E": {"q": ["n1", "n2", "u"]}})
    t = ric(perfect, qrels)["q"]
    assert t["P"] == pytest.approx(1) and t["W"] == pytest.approx(1) and t["E"] == 0
    assert ric(perfect, qrels, signed=True)["q"]["W"] == pytest.approx(-1)
    # inserting unjudged documents, adding a non-relevant tail, renaming documents: RIC unchanged
    base = lists_to_runs({"A": {"q": ["n1", "r2", "r1", "n2", "r3"]}})
    noisy = lists_to_runs({"A": {"q": ["u1", "n1", "u2", "r2", "r1", "u3", "n2", "r3", "n3", "u4"]}})
    assert ric(base, qrels).iloc[0, 0] == pytest.approx(ric(noisy, qrels).iloc[0, 0], abs=1e-15)
    ren = {d: d + "x" for d in qrels.doc}
    assert ric(base.assign(doc=base.doc.map(ren)), qrels.assign(doc=qrels.doc.map(ren))).iloc[0, 0] == pytest.approx(
        ric(base, qrels).iloc[0, 0], abs=1e-15)
    # depth cuts count unjudged documents
    assert ric(noisy, qrels, depth=5).iloc[0, 0] == pytest.approx(
        ric(lists_to_runs({"A": {"q": ["n1", "r2", "r1"]}}), qrels).iloc[0, 0], abs=1e-15)
    with pytest.raises(ValueError, match="threshold"):
        ric(base, qrels, threshold=-1)


@ONE_LEVEL
@SETTINGS
@given(st.integers(0, 10 ** 6), st.booleans(), st.sampled_from([None, 2, 4]))
def test_ric_matches_brute_force(seed, graded, depth):
    runs, qrels = random_campaign(seed)
    c = prepare(runs, qrels)
    t = ric(c, graded=graded, depth=depth)
    k = ric_counts(c, graded=graded, depth=depth)
    assert list(t.columns) == evaluated_topics(qrels, graded)
    assert ((t.values >= 0) & (t.values <= 1 + 1e-12)).all()
    assert (k.c + k.d + k.u == k.n_pairs).all()
    for s in t.index:
        for q in t.columns:
            want = bf_mi(bf_samples(runs, qrels, q, [s], graded=graded, depth=depth))
            assert t.loc[s, q] == pytest.approx(want, abs=1e-12)


@ONE_LEVEL
@SETTINGS
@given(st.integers(0, 10 ** 6), st.booleans())
def test_joint_and_id_match_brute_force(seed, graded):
    runs, qrels = random_campaign(seed, n_sys=3)
    c = prepare(runs, qrels)
    systems = list(c.systems)
    single = ric(c, graded=graded)
    joint_all = joint_ric(c, systems=systems, graded=graded)
    for q in single.columns:
        samples = bf_samples(runs, qrels, q, systems, graded=graded)
        assert joint_all[q] == pytest.approx(bf_mi(samples), abs=1e-12)
        assert joint_all[q] <= 1 + 1e-12
        assert all(joint_all[q] >= single.loc[s, q] - 1e-12 for s in systems)          # joint ≥ every member
    pairs = [(a, b) for a in systems for b in systems]
    idf = information_differences(c, pairs=pairs, graded=graded)
    for a, b in pairs:
        j2 = joint_ric(c, systems=[a, b], graded=graded)
        assert (j2 <= joint_all + 1e-12).all()                                       # ≤ joint of a superset
        for q in single.columns:
            samples = bf_samples(runs, qrels, q, [a, b], graded=graded)
            want = bf_cond(samples, 0, [1]) + bf_cond(samples, 1, [0])
            assert idf.loc[(a, b), q] == pytest.approx(want, abs=1e-9)
            assert idf.loc[(a, b), q] == pytest.approx(idf.loc[(b, a), q], abs=1e-12)  # symmetric
            assert idf.loc[(a, b), q] == pytest.approx(2 * j2[q] - single.loc[a, q] - single.loc[b, q], abs=1e-12)
            assert idf.loc[(a, b), q] >= 0
        if a == b:
            assert (idf.loc[(a, b)] == 0).all()
    # joint of one system is its RIC; order and duplicates do not matter
    for s in systems:
        np.testing.assert_allclose(joint_ric(c, systems=[s, s], graded=graded).values, single.loc[s].values, atol=1e-12)
    np.testing.assert_allclose(joint_ric(c, systems=systems[::-1], graded=graded).values, joint_all.values, atol=1e-15)


def test_id_with_empty_run_is_ric():
    assert information_difference(RUNS2, QRELS2, a="S1", b="S2").tolist() == pytest.approx(
        ric(RUNS2, QRELS2).loc["S1"].tolist(), abs=1e-12)


def test_errors():
    c = prepare(RUNS2, QRELS2)
    with pytest.raises(ValueError, match="systems"):
        joint_ric(c, systems=[])
    with pytest.raises(ValueError, match="unknown"):
        joint_ric(c, systems=["S1", "nope"])
    with pytest.raises(ValueError, match="unknown"):
        information_difference(c, a="S1", b="nope")
    many = lists_to_runs({f"s{k:02d}": {"t1": ["a", "x"]} for k in range(40)})
    with pytest.raises(ValueError, match="39"):
        joint_ric(many, QRELS2, systems=[f"s{k:02d}" for k in range(40)])
    assert joint_ric(many, QRELS2, systems=[f"s{k:02d}" for k in range(39)]).iloc[0] == pytest.approx(
        ric(many, QRELS2).iloc[0, 0], abs=1e-12)


# ---------------------------------------------------------------- topics without pairs, many systems, the TREC-8 path
def test_one_level_topic_dropped_with_warning():
    qrels = pd.concat([QRELS3, pd.DataFrame([("t4", "h", 1), ("t4", "k", 1), ("t5", "p", 2), ("t5", "r", 1)],
                                            columns=["query", "doc", "grade"])], ignore_index=True)
    runs = pd.concat([RUNS3, lists_to_runs({"G1": {"t4": ["k", "h"], "t5": ["p", "r"]}})], ignore_index=True)
    with pytest.warns(UserWarning, match="one relevance level.*t4"):
        g = ric(runs, qrels)
    assert list(g.columns) == ["t3", "t5"] and g.loc["G1", "t5"] == 1 and g.loc["G2", "t5"] == 0
    with pytest.warns(UserWarning, match="2 topic.*t4, t5"):                 # binary: t5 is one level too
        b = ric(runs, qrels, graded=False)
    assert list(b.columns) == ["t3"]
    with pytest.warns(UserWarning, match="t4"):
        assert list(joint_ric(runs, qrels, systems=["G1", "G2"]).index) == ["t3", "t5"]
    with pytest.warns(UserWarning, match="t4"):
        assert list(information_difference(runs, qrels, a="G1", b="G2").index) == ["t3", "t5"]
    with pytest.warns(UserWarning, match="t4"):
        assert sorted(set(ric_counts(runs, qrels)["query"])) == ["t3", "t5"]


def sparse_campaign(seed, n_sys=15):
    "One topic, 24 judged documents, n_sys short lists: many documents that no system retains, joint RIC below 1."
    rng = np.random.default_rng(seed)
    qrels = pd.DataFrame([("t0", f"d{k}", int(rng.choice([0, 0, 0, 1, 2]))) for k in range(24)],
                         columns=["query", "doc", "grade"])
    qrels.loc[0, "grade"], qrels.loc[1, "grade"] = 1, 0               # at least one relevant and one non-relevant
    rows = [(f"s{s:02d}", "t0", f"d{d}", float(10 - k)) for s in range(n_sys)
            for k, d in enumerate(rng.choice(30, int(rng.integers(1, 5)), replace=False))]   # d24..d29 unjudged
    return pd.DataFrame(rows, columns=["system", "query", "doc", "score"]), qrels


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10 ** 6), st.booleans())
def test_joint_of_many_systems_matches_brute_force(seed, graded):
    "15 systems take the np.unique path of the pattern counter; short lists leave many documents no system retains."
    runs, qrels = sparse_campaign(seed)
    c = prepare(runs, qrels)
    systems = list(c.systems)
    j = joint_ric(c, systems=systems, graded=graded)
    single = ric(c, graded=graded)
    assert j["t0"] == pytest.approx(bf_mi(bf_samples(runs, qrels, "t0", systems, graded=graded)), abs=1e-12)
    assert (j["t0"] >= single["t0"] - 1e-12).all() and j["t0"] <= 1
    half = systems[:7]                                                # a subset: the n ≤ 12 path, and ≤ the whole set
    j7 = joint_ric(c, systems=half, graded=graded)
    assert j7["t0"] == pytest.approx(bf_mi(bf_samples(runs, qrels, "t0", half, graded=graded)), abs=1e-12)
    assert j7["t0"] <= j["t0"] + 1e-12


def test_reproduce_trec8_on_a_synthetic_nist_tree(tmp_path, monkeypatch):
    "The notebook's TREC-8 reproduction path on a NIST-style tree with the 129 official run names (synthetic runs)."
    import gzip
    from scipy.stats import spearmanr
    from irinnov import datasets as D
    from irinnov.experiments.infotheory import reproduce_trec8
    monkeypatch.delenv("IRINNOV_NIST", raising=False)
    groups = D.parse_run_list(D.TREC8_ADHOC_RUNS)                       # {tag: group}
    rng = np.random.default_rng(8)
    root = tmp_path / "trec8"
    (root / "runs").mkdir(parents=True)
    qrels_rows, run_rows = [], []
    for q in (401, 402, 403):
        for k in range(25): qrels_rows.append((str(q), f"D{q}-{k:02d}", int(k < 5 + q % 3)))
    for t in groups:
        lines = []
        for q in (401, 402, 403):
            for r, k in enumerate(rng.permutation(40)[:30]):
                lines.append(f"{q} Q0 D{q}-{k:02d} {r + 1} {30 - r} {t}")
                run_rows.append((t, str(q), f"D{q}-{k:02d}", float(30 - r)))
        (root / "runs" / f"input.{t}.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    (root / "qrels.trec8.adhoc").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels_rows))
    runs = pd.DataFrame(run_rows, columns=["system", "query", "doc", "score"])
    qrels = pd.DataFrame(qrels_rows, columns=["query", "doc", "grade"])

    rep = reproduce_trec8(D.load("trec8", path=root))
    m, bp = rep["means"], rep["pairs"]
    assert len(m) == 129 and len(bp) == 354                  # 20 bins of 129 runs: 9 of 7 and 11 of 6 → 9·21 + 11·15
    order = sorted(m.index, key=lambda s: (-m.loc[s, "MAP"], s))
    bins, k = [], 0
    for size in [7] * 9 + [6] * 11: bins.append(order[k:k + size]); k += size
    assert set(zip(bp.a, bp.b)) == {(x[i], x[j]) for x in bins for i in range(len(x)) for j in range(i + 1, len(x))}
    assert bp["same group"].tolist() == [groups[a] == groups[b] for a, b in zip(bp.a, bp.b)]
    assert (np.diff(bp["ID"].to_numpy()) >= 0).all()
    for s in order[:3]:                                      # binary RIC means against pair enumeration
        want = np.mean([bf_mi(bf_samples(runs, qrels, q, [s], graded=False)) for q in ("401", "402", "403")])
        assert m.loc[s, "RIC"] == pytest.approx(want, abs=1e-12)
    for a, b, idv in bp.head(3)[["a", "b", "ID"]].itertuples(index=False):   # ID against conditional entropies
        want = np.mean([bf_cond(S, 0, [1]) + bf_cond(S, 1, [0]) for S in
                        (bf_samples(runs, qrels, q, [a, b], graded=False) for q in ("401", "402", "403"))])
        assert idv == pytest.approx(want, abs=1e-9)
    same = bp["same group"].to_numpy()
    K = int(same.sum())
    lead = lambda f: next((i for i, x in enumerate(f) if not x), len(f))
    by_map = bp.sort_values(["|ΔMAP|", "ID", "a", "b"], kind="stable")["same group"].to_numpy()
    assert rep["summary"].values.tolist() == [[lead(same), int(same[:K].sum())], [lead(by_map), int(by_map[:K].sum())]]
    for x in ("MAP", "nDCG"):
        row = rep["correlations"].loc[f"RIC vs {x}"]
        assert row["τ all"] == pytest.approx(kendalltau(m[x], m["RIC"]).statistic, abs=1e-12)
        assert row["ρ all"] == pytest.approx(spearmanr(m[x], m["RIC"]).statistic, abs=1e-12)
        top = sorted(m.index, key=lambda s: -m.loc[s, x])[:10]
        assert row["τ top 10"] == pytest.approx(kendalltau(m.loc[top, x], m.loc[top, "RIC"]).statistic, abs=1e-12)


def test_cache_lives_beside_the_campaign_and_dies_with_it():
    "The per-campaign cache is not written into the Campaign, and it goes when the campaign is garbage-collected."
    import gc, weakref
    from irinnov import infotheory as it
    c = prepare(RUNS3, QRELS3)
    first = ric(c)
    assert "_infotheory_cache" not in c.__dict__ and id(c) in it._SPACES
    assert ric(c).equals(first)                                   # the second call reads the cache
    ref = weakref.ref(c)
    del c
    gc.collect()
    assert ref() is None and all(v[0]() is not None for v in it._SPACES.values())


def test_names_and_attrs_follow_the_canonical_form():
    assert ric(RUNS3, QRELS3).attrs["measure"] == "RIC"
    assert ric(RUNS3, QRELS3, graded=False, depth=100).attrs["measure"] == "RIC@100(graded=0)"
    assert ric(RUNS3, QRELS3, threshold=2).attrs["measure"] == "RIC(rel=2)"
    j = joint_ric(RUNS3, QRELS3, systems=["G1", "G2"])
    assert (j.name, j.attrs["measure"], j.attrs["higher_is_better"]) == ("joint RIC", "joint RIC", True)
    with pytest.raises(TypeError, match="holds its own qrels"):
        ric(prepare(RUNS3, QRELS3), 100)                          # depth is keyword-only
