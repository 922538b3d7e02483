"""irinnov.report on a small generated campaign: every table against direct calls of the measure functions and
independent oracles (scipy), and the written HTML, CSV and Parquet files."""
import base64
import re
from itertools import combinations

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from irinnov import asl, infotheory, meta, metrics, novelty, rareness, rpp
from irinnov.report import (CampaignReport, MeasureError, campaign_report, default_measures, measure_table,
                            parse_measure, plot_agreement, plot_power, plot_rank_shift, write_report)
from irinnov.trec import prepare

S, Q, D = 7, 9, 25


def generated(seed=0, S=S, Q=Q, D=D, pool=50):
    "Systems of falling quality over graded topics; system 3 returns short lists, system 5 skips a topic."
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    for q in range(Q):
        grades = rng.choice([-1, 0, 0, 0, 1, 1, 2], size=pool)
        grades[0] = 1
        judged = rng.random(pool) < 0.8
        qrels += [(f"t{q}", f"d{d:02d}", int(g)) for d, g in enumerate(grades) if judged[d]]
        for s in range(S):
            if s == 5 and q == 2: continue
            noise = rng.normal(size=pool) * (0.6 + 0.3 * s)
            n = 8 if s == 3 else D
            top = np.argsort(-(np.maximum(grades, 0) + noise), kind="stable")[:n]
            runs += [(f"s{s}", f"t{q}", f"d{d:02d}", float(D - r)) for r, d in enumerate(top)]
    return (pd.DataFrame(runs, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(qrels, columns=["query", "doc", "grade"]))


@pytest.fixture(scope="module")
def campaign():
    runs, qrels = generated()
    return prepare(runs, qrels)


@pytest.fixture(scope="module")
def rep(campaign):
    meta_ = pd.DataFrame({"team": [f"team{i // 2}" for i in range(S)], "kind": ["a", "b"] * 3 + ["a"]},
                         index=pd.Index([f"s{i}" for i in range(S)], name="system"))
    return campaign_report(campaign, k=10, B=300, trials=300, seed=1, meta=meta_)


def direct(c):
    "Every default measure computed by a direct call of its module's function."
    W = rpp.win_rate(rpp.preferences(c))
    return {"AP": metrics.average_precision(c), "nDCG@10": metrics.ndcg(c, k=10), "P@10": metrics.precision(c, k=10),
            "RR": metrics.reciprocal_rank(c), "AP@10": metrics.average_precision(c, depth=10),
            "P@10_rareness(alpha=0.5)": rareness.precision_rareness(c, k=10, alpha=0.5),
            "P@10_rareness(alpha=1)": rareness.precision_rareness(c, k=10, alpha=1),
            "AP@10_rareness(alpha=0.5)": rareness.ap_rareness(c, k=10, alpha=0.5),
            "AP@10_rareness(alpha=1)": rareness.ap_rareness(c, k=10, alpha=1),
            "U": novelty.utility(c), "RPP": W, f"ASL(pad={D})": asl.asl(c, pad_to=D),
            f"ASL@g1-10(pad={D})": asl.asl(c, n=10, pad_to=D), "RIC": infotheory.ric(c)}


def test_default_measures_and_names():
    assert default_measures(100, (0.5, 1), 1000) == [
        "AP", "nDCG@10", "P@10", "RR", "P@100", "AP@100", "P@100_rareness(alpha=0.5)", "P@100_rareness(alpha=1)",
        "AP@100_rareness(alpha=0.5)", "AP@100_rareness(alpha=1)", "U", "RPP", "ASL(pad=1000)", "ASL@g1-10(pad=1000)", "RIC"]
    for n in default_measures(100, (0.5, 1), 1000): assert parse_measure(n).name == n     # canonical names are fixed points


def test_tables_equal_direct_calls(campaign, rep):
    ref = direct(campaign)
    assert list(rep.tables) == list(ref)
    for m, t in ref.items():
        got = rep.tables[m]
        assert got.index.equals(t.index) and got.columns.equals(t.columns), m
        np.testing.assert_array_equal(got.to_numpy(), t.to_numpy(), err_msg=m)
        assert got.attrs["measure"] == m and got.attrs["higher_is_better"] == t.attrs["higher_is_better"]
        np.testing.assert_allclose(rep.scores[m].to_numpy(), t.to_numpy().mean(axis=1), rtol=0, atol=1e-12)
    assert rep.higher_is_better[f"ASL(pad={D})"] is False and rep.higher_is_better["RIC"] is True


def test_ranks_are_competition_ranks(rep):
    for m in rep.tables:
        s = rep.scores[m].round(12) * (1 if rep.higher_is_better[m] else -1)
        np.testing.assert_array_equal(rep.ranks[m].to_numpy(), stats.rankdata(-s.to_numpy(), method="min"), err_msg=m)
    asl_m = f"ASL(pad={D})"
    assert rep.ranks[asl_m].idxmin() == rep.scores[asl_m].idxmin()                  # lower is better
    assert rep.ranks["AP"].idxmin() == rep.scores["AP"].idxmax()


def test_mc4_column(campaign, rep):
    order = rpp.aggregate(rpp.preferences(campaign), "mc4")
    assert list(rep.ranks["RPP(MC4)"].sort_values().index) == list(order.index)
    np.testing.assert_array_equal(rep.scores.loc[order.index, "RPP(MC4)"].to_numpy(), order.to_numpy())
    assert "RPP(MC4)" not in rep.tables and "RPP(MC4)" not in rep.power.index
    assert rep.families["RPP(MC4)"] == "rpp"


def tau_ap_oracle(truth: np.ndarray, other: np.ndarray) -> float:
    "Yilmaz et al.'s AP correlation for tie-free scores, by its definition."
    order = np.argsort(-other)
    n = len(order)
    total = 0.0
    for i in range(1, n):
        above = order[:i]
        total += np.sum(truth[above] > truth[order[i]]) / i
    return 2 / (n - 1) * total - 1


def test_agreement_against_scipy_and_definition(rep):
    oriented = {m: rep.scores[m] * (1 if rep.higher_is_better[m] else -1) for m in rep.scores}
    n_checked = 0
    for a, b in combinations(rep.scores.columns, 2):
        x, y = oriented[a].round(12).to_numpy(), oriented[b].round(12).to_numpy()
        want = stats.kendalltau(x, y).statistic
        assert abs(rep.agreement.loc[a, ("tau", b)] - want) <= 1e-12, (a, b)
        assert abs(rep.agreement.loc[b, ("tau", a)] - want) <= 1e-12
        if len(set(x)) == len(x) and len(set(y)) == len(y):
            assert abs(rep.agreement.loc[a, ("tau_ap", b)] - tau_ap_oracle(x, y)) <= 1e-12, (a, b)
            n_checked += 1
    assert n_checked > 20
    assert (np.diag(rep.agreement["tau"].to_numpy()) == 1).all()


def test_power_t_bonferroni_against_scipy(rep):
    for m, t in rep.tables.items():
        X = t.to_numpy()
        pairs = list(combinations(range(len(X)), 2))
        count = 0
        for i, j in pairs:
            d = X[i] - X[j]
            if np.all(d == 0): continue                                             # identical rows: no evidence
            p = stats.ttest_rel(X[i], X[j]).pvalue
            count += min(1.0, p * len(pairs)) < 0.05
        assert rep.power.loc[m, "t-bonferroni"] == count, m
        assert rep.power.loc[m, "pairs"] == len(pairs)
        assert rep.power.loc[m, "t-bonferroni share"] == count / len(pairs)


def test_power_randomized_tukey_and_stability(rep):
    for m in ("AP", "RPP", f"ASL(pad={D})"):
        t = rep.tables[m]
        dp = meta.discriminative_power(t, "randomized-tukey", alpha=0.05, B=300, seed=1)
        assert rep.power.loc[m, "randomized-tukey"] == dp.count
        assert rep.power.loc[m, "stability"] == meta.stability(t, trials=300, seed=1)


def test_shifts_and_risers(rep):
    sh = rep.shifts()
    np.testing.assert_array_equal(sh["RIC"].to_numpy(), (rep.ranks["AP"] - rep.ranks["RIC"]).to_numpy())
    r = rep.risers(2)
    assert len(r) == 2 * len(rep.innovation) and list(r.columns[:5]) == ["measure", "system", "rank AP", "rank", "shift"]
    for m, g in r.groupby("measure", sort=False):
        assert g["shift"].iloc[0] == sh[m].max()
        assert (g["rank AP"] - g["rank"] == g["shift"]).all()
    assert {"team", "kind"} <= set(r.columns)
    assert rep.innovation == [m for m in rep.scores if rep.families[m] != "classic"]


def test_systems_table(rep):
    t = rep.systems()
    assert list(t.columns[:2]) == ["team", "kind"]
    assert t["rank AP"].is_monotonic_increasing
    assert set(rep.scores.columns) | {f"rank {m}" for m in rep.scores.columns} <= set(t.columns)


def test_same_report_from_frames(rep):
    runs, qrels = generated()
    other = campaign_report(runs, qrels, k=10, B=300, trials=300, seed=1)
    pd.testing.assert_frame_equal(other.scores, rep.scores)
    pd.testing.assert_frame_equal(other.power, rep.power)


def test_custom_measures_and_errors(campaign):
    r = campaign_report(campaign, measures=["nDCG", "ASL", "dcgRPP"], B=50, trials=50)
    assert list(r.scores.columns) == ["AP", "nDCG", "ASL", "dcgRPP", "dcgRPP(MC4)"]        # the reference joins
    assert r.innovation == ["ASL", "dcgRPP", "dcgRPP(MC4)"]
    np.testing.assert_array_equal(r.tables["ASL"].to_numpy(), asl.asl(campaign).to_numpy())
    with pytest.raises(MeasureError, match="known measures"): campaign_report(campaign, measures=["AP", "APP"])
    with pytest.raises(ValueError, match="at least two systems"): campaign_report(campaign.subset(systems=["s0"]))
    with pytest.raises(ValueError, match="hue"): write_report(r, out_dir="unused", hue="team")


def test_measure_table_matches_metrics(campaign):
    for n in ["AP", "map", "AP@5", "P_5", "R@20", "nDCG", "ndcg_cut_5", "RR", "Rprec", "bpref", "RBP(p=0.5)", "P(rel=2)@5"]:
        a, b = measure_table(campaign, name=n), metrics.measure(campaign, name=n)
        assert a.attrs["measure"] == b.attrs["measure"]
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_figures(rep):
    plt.close("all")
    for fig, axes in ((plot_rank_shift(rep, hue="kind"), len(rep.innovation)), (plot_agreement(rep), 2),
                      (plot_power(rep), 2)):
        visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
        assert len(visible) >= axes
        assert all(ax.get_xlabel() and ax.get_ylabel() for ax in visible[:1])
        assert fig._suptitle is not None or visible[0].get_title()
    plt.close("all")


def test_write_report(tmp_path, rep):
    plt.close("all")
    page = write_report(rep, out_dir=tmp_path / "out", title="A <test> campaign", hue="kind")
    assert page == tmp_path / "out" / "report.html"
    assert plt.get_fignums() == []                                                   # figures are closed
    html = page.read_text(encoding="utf-8")
    assert "<title>A &lt;test&gt; campaign</title>" in html
    imgs = re.findall(r'<img[^>]* src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == 3
    for b in imgs: assert base64.b64decode(b)[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.search(r"https?://", html) is None
    assert re.search(r"<(script|link|iframe)\b", html) is None and "url(" not in html
    assert re.search(r"""(src|href)\s*=\s*["'](?!data:)""", html) is None           # nothing to fetch
    for m in rep.scores.columns: assert m in html
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert names == {"report.html"} | {f"{t}.{e}" for t in ("systems", "per_topic", "agreement", "power", "risers")
                                        for e in ("csv", "parquet")}
    for t in ("systems", "per_topic", "agreement", "power", "risers"):
        csv = pd.read_csv(tmp_path / "out" / f"{t}.csv")
        pq = pd.read_parquet(tmp_path / "out" / f"{t}.parquet")
        assert list(csv.columns) == list(pq.columns) and len(csv) == len(pq), t
    sys_ = pd.read_parquet(tmp_path / "out" / "systems.parquet").set_index("system")
    np.testing.assert_array_equal(sys_.loc[rep.scores.index, "AP"].to_numpy(), rep.scores["AP"].to_numpy())
    np.testing.assert_array_equal(sys_.loc[rep.ranks.index, "rank RIC"].to_numpy(), rep.ranks["RIC"].to_numpy())
    pt = pd.read_parquet(tmp_path / "out" / "per_topic.parquet")
    assert list(pt.columns) == ["measure", "system", "query", "value"]
    assert len(pt) == sum(t.size for t in rep.tables.values())
    u = pt[pt.measure == "U"].pivot(index="system", columns="query", values="value")
    np.testing.assert_array_equal(u.loc[rep.tables["U"].index, rep.tables["U"].columns].to_numpy(), rep.tables["U"].to_numpy())
    ag = pd.read_csv(tmp_path / "out" / "agreement.csv")
    assert list(ag.columns) == ["reference", "measure", "tau", "tau_ap"] and len(ag) == len(rep.scores.columns) ** 2
    row = ag[(ag.reference == "AP") & (ag.measure == "RIC")].iloc[0]
    assert abs(row.tau - rep.agreement.loc["AP", ("tau", "RIC")]) <= 1e-15
    pw = pd.read_csv(tmp_path / "out" / "power.csv").set_index("measure")
    assert (pw["randomized-tukey"] == rep.power["randomized-tukey"]).all()


def test_write_report_from_runs(tmp_path):
    runs, qrels = generated(3, S=4, Q=5)
    page = write_report(runs, qrels, out_dir=tmp_path, k=5, B=50, trials=50)
    assert page.exists() and (tmp_path / "systems.csv").exists()
    assert "irinnov campaign report" in page.read_text()
