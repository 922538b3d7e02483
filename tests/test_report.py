"""irinnov.report on a small generated campaign: every table against direct calls of the measure functions and
independent oracles (scipy), and the written HTML, CSV and Parquet files."""
import base64
import os
from pathlib import Path
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
from irinnov.measures import MeasureError, parse_measure, supports_teams
from irinnov.report import (CampaignReport, campaign_report, default_measures, plot_agreement, plot_power, plot_rank_shift,
                            write_report)
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
    "The default measures are Measure objects, built without writing and parsing names, equal to the parsed names."
    names = ["AP", "nDCG@10", "P@10", "RR", "P@100", "AP@100", "P@100_rareness(alpha=0.5)", "P@100_rareness(alpha=1)",
             "AP@100_rareness(alpha=0.5)", "AP@100_rareness(alpha=1)", "U", "RPP", "ASL(pad=1000)", "ASL@g1-10(pad=1000)", "RIC"]
    assert default_measures(k=100, alphas=(0.5, 1), pad_to=1000) == [parse_measure(n) for n in names]
    assert [m.name for m in default_measures(k=100, alphas=(0.5, 1), pad_to=1000)] == names
    at2 = default_measures(k=10, alphas=(1,), threshold=2)
    assert [m.name for m in at2] == ["AP(rel=2)", "nDCG@10", "P(rel=2)@10", "RR(rel=2)", "P(rel=2)@10", "AP(rel=2)@10",
                                     "P@10_rareness(alpha=1, rel=2)", "AP@10_rareness(alpha=1, rel=2)", "U(rel=2)",
                                     "RPP(rel=2)", "ASL(rel=2)", "ASL@g1-10(rel=2)", "RIC(rel=2)"]


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
    order = rpp.aggregate(rpp.preferences(campaign), method="mc4")
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
        dp = meta.discriminative_power(t, test="randomized-tukey", alpha=0.05, B=300, seed=1)
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
    with pytest.raises(MeasureError, match="did you mean AP or RPP"): campaign_report(campaign, measures=["AP", "APP"])
    with pytest.raises(ValueError, match="at least two systems"): campaign_report(campaign.subset(systems=["s0"]))
    with pytest.raises(ValueError, match="hue"): write_report(r, out_dir="unused", hue="team")


def test_report_measure_matches_metrics(campaign):
    for n in ["AP", "map", "AP@5", "P_5", "R@20", "nDCG", "ndcg_cut_5", "RR", "Rprec", "bpref", "RBP(p=0.5)", "P(rel=2)@5"]:
        a, b = parse_measure(n)(campaign), metrics.measure(campaign, name=n)
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


TABLES = ("systems", "per_topic", "agreement", "power", "risers", "bonus_risers", "groups", "topics", "caveats",
          "rare_documents", "teams")


def test_write_report(tmp_path, rep):
    plt.close("all")
    page = write_report(rep, out_dir=tmp_path / "out", title="A <test> campaign", hue="kind")
    assert page == tmp_path / "out" / "report.html"
    assert plt.get_fignums() == []                                                   # figures are closed
    html = page.read_text(encoding="utf-8")
    assert "<title>A &lt;test&gt; campaign</title>" in html
    imgs = re.findall(r'<img[^>]* src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == 4                               # per-topic heatmap, rank shifts, agreement, power
    for b in imgs: assert b"<svg" in base64.b64decode(b)[:400]
    assert re.search(r"https?://", html) is None
    assert re.search(r"<iframe\b", html) is None and "url(" not in html
    assert re.findall(r"<link\b[^>]*>", html) == ["<link rel='icon' href='data:,'>"]     # an empty icon, inline
    assert re.findall(r"<script\b[^>]*>", html) == ["<script>"]                    # one inline script, nothing fetched
    assert re.search(r"""src\s*=\s*["'](?!data:)""", html) is None
    hrefs = re.findall(r"""href\s*=\s*["']([^"']+)""", html)
    ids = set(re.findall(r'id="([^"]+)"', html))
    names = {p.name for p in (tmp_path / "out").iterdir()}
    for h in hrefs:                                  # anchors and table files exist (and the inline icon)
        assert (h[1:] in ids) if h.startswith("#") else (h in names or h == "data:,"), h
    for m in rep.scores.columns: assert m in html
    assert names == {"report.html"} | {f"{t}.{e}" for t in TABLES for e in ("csv", "parquet")}
    for t in TABLES:
        csv = pd.read_csv(tmp_path / "out" / f"{t}.csv")
        pq = pd.read_parquet(tmp_path / "out" / f"{t}.parquet")
        assert list(csv.columns) == list(pq.columns) and len(csv) == len(pq), t
    sys_ = pd.read_parquet(tmp_path / "out" / "systems.parquet").set_index("system")
    np.testing.assert_array_equal(sys_.loc[rep.scores.index, "AP"].to_numpy(), rep.scores["AP"].to_numpy())
    np.testing.assert_array_equal(sys_.loc[rep.ranks.index, "rank RIC"].to_numpy(), rep.ranks["RIC"].to_numpy())
    cols = list(sys_.columns)
    assert cols.index("rank AP") == cols.index("AP") + 1                               # score and rank side by side
    assert "RPP(MC4)" not in cols and "rank RPP(MC4)" in cols                          # MC4: an ordering, a rank
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


# ---- coverage, groups, intervals, topics, teams, rare documents (against brute force and scipy) ----

from irinnov.report import html as report_html      # the writer: its names are the ones write_report calls
from irinnov.report import (against_field, claim_output, judged_at, mean_ci, official_measures, rare_documents,
                            significance_groups, team_best, topic_summary)


def test_judged_at_brute_force(campaign):
    runs, qrels = generated()
    judged = set(zip(qrels["query"], qrels["doc"]))
    for k in (1, 10, 30):
        got = judged_at(campaign, k=k)
        assert list(got.columns) == sorted(qrels["query"].unique())                 # every qrels topic
        ranked = campaign.runs
        for s in got.index:
            for q in got.columns:
                top = ranked[(ranked.system == s) & (ranked["query"] == q) & (ranked["rank"] <= k)]
                want = sum((q, d) in judged for d in top.doc) / k
                assert abs(got.at[s, q] - want) <= 1e-15, (s, q, k)


def brute_groups(P, alpha):
    "Every maximal interval [i, j] of the ordered systems whose pairs all have p ≥ alpha, by enumeration."
    S = len(P)
    ok = lambda i, j: all(not (P[a, b] < alpha) for a in range(i, j + 1) for b in range(i, j + 1) if a != b)
    runs = [(i, j) for i in range(S) for j in range(i, S) if ok(i, j)]
    return [r for r in runs if not any(o != r and o[0] <= r[0] and r[1] <= o[1] for o in runs)]


@pytest.mark.parametrize("seed", range(6))
def test_significance_groups_brute_force(seed):
    rng = np.random.default_rng(seed)
    S = 9
    names = [f"s{i}" for i in range(S)]
    means = pd.Series(rng.random(S), index=names)
    P = rng.random((S, S)) ** 3
    P = np.triu(P, 1) + np.triu(P, 1).T
    np.fill_diagonal(P, np.nan)
    pv = pd.DataFrame(P, index=names, columns=names)
    g = significance_groups(pv, means, alpha=0.2)
    order = means.sort_values(ascending=False).index
    Po = pv.loc[order, order].to_numpy()
    want = brute_groups(Po, 0.2)
    assert g.attrs["n_groups"] == len(want)
    for pos, s in enumerate(order):
        assert g.at[s, "groups"] == [n for n, (i, j) in enumerate(want) if i <= pos <= j]
        assert g.at[s, "tied with top"] == (pos == 0 or Po[0, pos] >= 0.2)
    for a in names:                                   # sharing a group means no test separates the two
        for b in names:
            if a != b and set(g.at[a, "groups"]) & set(g.at[b, "groups"]): assert pv.at[a, b] >= 0.2
    low = significance_groups(pv, -means, alpha=0.2, higher_is_better=False)       # lower is better: same groups
    assert (low["group"] == g["group"]).all()


def test_mean_ci_against_scipy(rep):
    t = rep.tables["AP"]
    got = mean_ci(t, level=0.9)
    for s in t.index:
        x = t.loc[s].to_numpy()
        lo, hi = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert abs(got.at[s, "ci low"] - lo) <= 1e-12 and abs(got.at[s, "ci high"] - hi) <= 1e-12


def test_report_groups(rep):
    g = rep.groups("AP")
    pv = rep.pvalues["randomized-tukey"]["AP"]
    best = rep.scores["AP"].idxmax()
    assert g.index[0] == best and list(g["rank"]) == sorted(g["rank"])
    for s in g.index: assert g.at[s, "tied with top"] == (s == best or pv.at[best, s] >= 0.05)
    asl_g = rep.groups(f"ASL(pad={D})", test="t-bonferroni")
    assert asl_g.index[0] == rep.scores[f"ASL(pad={D})"].idxmin()            # lower is better
    with pytest.raises(ValueError, match="MC4"): rep.groups("RPP(MC4)")


def test_topic_summary_brute_force(rep):
    t = rep.tables["nDCG@10"]
    ts = topic_summary(t)
    for q in t.columns:
        col = t[q]
        assert abs(ts.at[q, "sd"] - np.std(col.to_numpy(), ddof=1)) <= 1e-12
        winners = sorted(col.index[col == col.max()])
        assert ts.at[q, "winners"] == len(winners) and ts.at[q, "winner"].split(", ")[0] == winners[0]
    assert list(ts["sd"]) == sorted(ts["sd"], reverse=True)
    a = topic_summary(rep.tables[f"ASL(pad={D})"])                  # lower is better: the winner has the lowest value
    q = a.index[0]
    assert a.at[q, "best"] == rep.tables[f"ASL(pad={D})"][q].min()


def test_team_best_brute_force(rep):
    tb = team_best(rep)
    teams = rep.meta["team"]
    for team in teams.unique():
        runs = teams.index[teams == team]
        for m in ("AP", "U", f"ASL(pad={D})"):
            r = rep.ranks.loc[runs, m]
            assert tb.at[team, f"rank {m}"] == r.min() and tb.at[team, f"best {m}"] in set(r.index[r == r.min()])
        assert tb.at[team, "runs"] == len(runs)
    with pytest.raises(ValueError, match="team"): team_best(rep, team="nope")


def test_rare_documents_brute_force(campaign):
    runs = campaign.runs
    qrels = campaign.qrels
    rel = {(q, d): g for q, d, g in zip(qrels["query"], qrels["doc"], qrels["grade"]) if g >= 1}
    found_by = runs[[(q, d) in rel for q, d in zip(runs["query"], runs.doc)]].groupby(["query", "doc"]).system.nunique()
    for s in ("s0", "s3"):
        got = rare_documents(campaign, system=s, k=10)
        mine = runs[(runs.system == s) & (runs["rank"] <= 10)]
        want = {(q, d): r for q, d, r in zip(mine["query"], mine.doc, mine["rank"]) if (q, d) in rel}
        assert set(zip(got["query"], got.doc)) == set(want)
        for r in got.itertuples():
            assert r.runs == found_by[(r.query, r.doc)] and r.grade == rel[(r.query, r.doc)] and r.rank == want[(r.query, r.doc)]
            assert abs(r.rarity - (1 - r.runs / S)) <= 1e-15
        assert list(got.runs) == sorted(got.runs)
    assert (rare_documents(campaign, system="s0", k=10, max_runs=2).runs <= 2).all()


def test_official_measures_and_reference(campaign):
    assert official_measures("trec-covid-round1") == ["nDCG@10", "P@5", "bpref", "AP", "RBP(p=0.5)"]
    assert official_measures("trec-dl-2020-passage") == ["nDCG@10", "AP(rel=2)", "RR(rel=2)"]
    with pytest.raises(ValueError, match="no official measures"): official_measures("web2012")
    r = campaign_report(campaign, k=10, B=20, trials=20, official="trec-covid-round1")
    assert r.reference == "nDCG@10" and r.measures[:7] == ["nDCG@10", "P@5", "bpref", "AP", "RBP(p=0.5)", "P@10", "RR"]
    assert r.families["bpref"] == "classic" and "bpref" not in r.innovation
    r2 = campaign_report(campaign, measures=["AP", "U"], B=20, trials=20, reference="RR")
    assert r2.reference == "RR" and r2.measures[0] == "RR"


def test_against_places_a_run_where_the_full_campaign_does(campaign):
    runs, qrels = generated()
    full = campaign_report(runs, qrels, k=10, B=200, trials=0, seed=4)
    for out in ("s2", "s5"):
        field = runs[runs.system != out]
        mine = runs[runs.system == out]
        rep_ = campaign_report(field, qrels, k=10, B=200, trials=0, seed=4, against=mine)
        assert rep_.new_systems == (out,)
        pl = rep_.placement().set_index("measure")
        for m in full.measures:
            assert pl.at[m, "rank"] == full.ranks.at[out, m], (out, m)
            assert abs(pl.at[m, "score"] - full.scores.at[out, m]) <= 1e-12, (out, m)
            others = full.scores[m].drop(out)
            assert pl.at[m, "best in field"] == (others.max() if full.higher_is_better[m] else others.min())
        g = full.groups("AP")
        assert pl.at["AP", "group"] == g.at[out, "group"] and pl.at["AP", "tied with top"] == g.at[out, "tied with top"]
        assert abs(pl.at["AP", "Judged@10"] - judged_at(campaign, k=10).loc[out].mean()) <= 1e-15
    table = against_field(runs[runs.system == "s2"], runs[runs.system != "s2"], qrels, ["AP", "U"], B=100)
    assert list(table.measure) == ["AP", "U"] and (table["rank"] == full.ranks.loc["s2", ["AP", "U"]].to_numpy()).all()
    with pytest.raises(ValueError, match="already in the campaign"):
        campaign_report(runs, qrels, ["AP"], against=runs[runs.system == "s1"])


def test_small_field_warns_and_small_report_says_so(tmp_path):
    runs, qrels = generated(5, S=3, Q=4)
    with pytest.warns(UserWarning, match="field, here only 1 run"):
        parse_measure("AP_rareness@10(alpha=1)")(runs[runs.system == "s0"], qrels)
    with pytest.warns(UserWarning, match="here only 3 runs") as w:
        page = write_report(runs, qrels, out_dir=tmp_path, k=5, B=50, trials=50)
    assert len([x for x in w if "field" in str(x.message)]) == 1                   # one warning, not one per measure
    html = page.read_text()
    assert "Only 3 runs: rank shifts and Kendall τ" in html
    assert html.count("data:image/svg+xml") == 2 and "#risers" not in html           # no shift plot, no risers
    assert not (tmp_path / "risers.csv").exists()


def test_math_markup_and_csv_safe_names(tmp_path):
    runs, qrels = generated(6, S=6)
    weird = {"s0": "$x^$", "s1": "=SUM(A1)", "s2": "+1", "s3": "-2", "s4": "@me", "s5": "$\\\\alpha$ run"}
    runs["system"] = runs.system.map(weird)
    meta = pd.DataFrame({"kind": ["=a", "b", "=a", "b", "=a", "b"]}, index=pd.Index(list(weird.values()), name="system"))
    page = write_report(runs, qrels, out_dir=tmp_path, meta=meta, hue="kind", k=5, B=50, trials=50)
    plt.close("all")
    csv = pd.read_csv(tmp_path / "systems.csv", keep_default_na=False)
    pq = pd.read_parquet(tmp_path / "systems.parquet")
    assert set(pq.system) == set(weird.values())
    assert set(csv.system) == {"$x^$", "'=SUM(A1)", "'+1", "'-2", "'@me", "$\\\\alpha$ run"}
    assert set(csv.kind) == {"'=a", "b"}
    assert "$x^$" in page.read_text()


def test_writes_are_atomic_and_never_follow_symlinks(tmp_path, rep, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.csv"
    victim.write_text("keep me")
    for name in ("systems.csv", "report.html"):          # a file no report wrote is refused, never written through
        (out / name).symlink_to(victim)
        with pytest.raises(FileExistsError, match=rf"{name} was not written by irinnov"): write_report(rep, out_dir=out)
        assert victim.read_text() == "keep me" and (out / name).is_symlink()
        (out / name).unlink()
    (out / "notes.txt").write_text("mine")               # the user's other files and folders stay
    (out / "sub").mkdir()
    (out / "sub" / "x").write_text("y")
    write_report(rep, out_dir=out, title="first")
    listing = lambda: sorted(p.name for p in out.iterdir())
    first, files = (out / "report.html").read_text(), listing()
    assert "notes.txt" in files and (out / "sub" / "x").read_text() == "y" and "systems.parquet" in files
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []              # no staging folder, no lock
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []         # nor beside the folder
    # an interrupted re-run leaves the previous files as they were
    monkeypatch.setattr(report_html, "plot_power", lambda r: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt): write_report(rep, out_dir=out, title="second")
    assert (out / "report.html").read_text() == first
    monkeypatch.undo()
    # interrupted at any step of the publication: the whole old report, never a mix
    for k in range(1, 20):
        calls = []
        def step(real):
            def f(*a, **kw):
                calls.append(1)
                if len(calls) == k: raise KeyboardInterrupt()
                return real(*a, **kw)
            return f
        monkeypatch.setattr(report_html.os, "link", step(os.link))
        monkeypatch.setattr(report_html.os, "rename", step(os.rename))
        monkeypatch.setattr(report_html, "_exchange", step(report_html._exchange))
        try: write_report(rep, out_dir=out, title="third")
        except KeyboardInterrupt: pass
        else: break                                     # every step interrupted once; this time it went through
        finally: monkeypatch.undo()
        assert (out / "report.html").read_text() == first and listing() == files, k
        assert (out / "sub" / "x").read_text() == "y" and (out / "notes.txt").read_text() == "mine"
    assert k == 5 and "<title>third</title>" in (out / "report.html").read_text()    # link, rename, link, swap
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # a table the new report does not write leaves with the old one; a killed run's staging folders are removed
    (tmp_path / ".out.irinnov-999999999-abc").mkdir()
    (out / ".irinnov-report-old").mkdir()
    write_report(rep, out_dir=out, title="fourth", formats="csv")
    assert "<title>fourth</title>" in (out / "report.html").read_text()
    assert not list(out.glob("*.parquet")) and (out / "notes.txt").exists() and (out / "sub" / "x").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    # where the swap is impossible: moved one by one, the old page first; the stale Parquet files still go
    write_report(rep, out_dir=out, title="fifth")
    monkeypatch.setattr(report_html, "_exchange", lambda a, b: False)
    write_report(rep, out_dir=out, title="sixth", formats="csv")
    assert "<title>sixth</title>" in (out / "report.html").read_text() and not list(out.glob("*.parquet"))
    with pytest.raises(ValueError, match="out_dir: empty path"): write_report(rep, out_dir="")
    import errno
    def full(*a, **k): raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(report_html, "_render", full)                  # a full disk (or ulimit -f) names the folder
    with pytest.raises(OSError, match=rf"No space left on device while writing the report: '{re.escape(str(out))}'"):
        write_report(rep, out_dir=out)
    def too_large(*a, **k): raise OSError(errno.EFBIG, "Error writing bytes to file. Detail: [errno 27] File too large")
    monkeypatch.setattr(report_html, "_render", too_large)             # pyarrow's wording of ulimit -f: the system's
    with pytest.raises(OSError, match=rf"^\[Errno 27\] File too large while writing the report: '{re.escape(str(out))}'$"):
        write_report(rep, out_dir=out)
    assert "<title>sixth</title>" in (out / "report.html").read_text()


def test_unusable_or_busy_output_folder(tmp_path, rep, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    computed = []
    monkeypatch.setattr(report_html, "campaign_report", lambda *a, **k: computed.append(1))
    runs, qrels = generated()
    with pytest.raises(NotADirectoryError, match="not a directory"): write_report(runs, qrels, out_dir=f)
    assert computed == []                                                       # refused before computing
    with pytest.raises(ZeroDivisionError):
        with claim_output(tmp_path / "new" / "deep"): 1 / 0
    assert (tmp_path / "new").is_dir() and not (tmp_path / "new" / "deep").exists()   # a failed run leaves no folder
    monkeypatch.undo()
    out = tmp_path / "busy"
    out.mkdir()
    with claim_output(out):
        import subprocess, sys
        code = ("import sys; sys.path.insert(0, 'tests'); from test_report import generated; "
                "from irinnov.report import write_report; r, q = generated(); "
                f"write_report(r, q, out_dir={str(out)!r}, B=10, trials=10)")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=str(Path(__file__).resolve().parents[1]))
        assert p.returncode != 0 and "another irinnov report is writing into this folder" in p.stderr
        assert not (out / "report.html").exists()
    assert out.is_dir()                                                          # it existed before: kept
    (out / ".irinnov-report.lock").write_text("999999999")                       # left by a process that is gone
    write_report(rep, out_dir=out)
    assert (out / "report.html").exists() and not (out / ".irinnov-report.lock").exists()


def test_team_rarity_option(rep, campaign):
    if supports_teams("rareness"):
        teams = {f"s{i}": f"team{i // 2}" for i in range(S)}
        r = campaign_report(campaign, measures=["AP_rareness@10(alpha=1)"], B=20, trials=20, teams=teams)
        assert r.params["team_rarity"]
    else:
        with pytest.raises(ValueError, match="teams="): campaign_report(campaign, measures=["AP"], B=20, trials=20, teams={"s0": "a"})
    with pytest.raises(ValueError, match="team"): campaign_report(campaign, measures=["AP"], B=20, trials=20, teams=True)


# ---- the command line: `irinnov report` options and `evaluate --against` ----

import argparse
import json
import subprocess
import sys

from irinnov.cli import (add_against_arguments, add_options_arguments, add_report_arguments, against_command,
                         report_command)

ROOT = Path(__file__).resolve().parents[1]
MIRROR = ROOT.parent / "shared" / "data"


def write_trec(tmp_path, runs, qrels):
    (tmp_path / "runs").mkdir(exist_ok=True)
    qp = tmp_path / "qrels.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    for s, r in runs.groupby("system"):
        (tmp_path / "runs" / f"input.{s}").write_text("".join(
            f"{q} Q0 {d} {i + 1} {sc} {s}\n" for i, (q, d, sc) in enumerate(r[["query", "doc", "score"]].itertuples(index=False))))
    return qp, tmp_path / "runs"


def report_main(*argv, cwd, env=None):
    "`irinnov report ARGS` in a subprocess, as a user runs it."
    e = {**os.environ, "IRINNOV_PROGRESS": "0", **(env or {})}
    cmd = Path(sys.executable).with_name("irinnov")
    p = subprocess.run([str(cmd), "report", *argv], cwd=cwd, capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def test_report_arguments_parse():
    p = add_report_arguments(argparse.ArgumentParser())
    a = p.parse_args(["q", "r1", "-o", "out", "-m", "AP", "U", "-m", "RIC", "--reference", "nDCG@10", "--alpha", "0.01",
                      "--tests", "t-holm", "--depth", "100", "--cutoff", "20", "--permutations", "50", "--trials", "40",
                      "--team-rarity", "--no-official", "--format", "csv"])
    assert a.measure == ["AP", "U", "RIC"] and a.reference == "nDCG@10" and a.alpha == 0.01 and a.tests == ["t-holm"]
    assert (a.depth, a.k, a.B, a.trials, a.team_rarity, a.official, a.format) == (100, 20, 50, 40, True, False, "csv")
    old = p.parse_args(["q", "r", "-o", "o", "--k", "10", "-B", "30"])                # the former spellings still work
    assert (old.k, old.B, old.official) == (10, 30, None)
    for bad in (["-o", "o", "--alpha", "2"], ["-o", "o", "--trials", "0"], ["-o", "o", "--depth", "-1"]):
        with pytest.raises(SystemExit): p.parse_args(bad)


def test_report_command_on_files(tmp_path):
    runs, qrels = generated(21, S=6, Q=5)
    qp, rd = write_trec(tmp_path, runs, qrels)
    code, out, err = report_main(str(qp), str(rd), "-o", "out", "--permutations", "50", "--trials", "50", "--cutoff", "10",
                                 "-m", "AP", "P@10", "U", "--reference", "P@10", "--format", "csv", cwd=tmp_path)
    assert code == 0, err
    assert out.strip() == "wrote out/report.html and its tables (CSV) for 6 systems"
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert "systems.csv" in names and not any(n.endswith(".parquet") for n in names)
    sys_ = pd.read_csv(tmp_path / "out" / "systems.csv").set_index("system")
    c = prepare(runs, qrels)
    ap = metrics.average_precision(c).mean(axis=1)
    np.testing.assert_allclose(sys_.loc[ap.index, "AP"].to_numpy(), ap.to_numpy(), rtol=0, atol=1e-12)
    assert list(sys_.index) == list(sys_.sort_values("rank P@10", kind="stable").index)   # best by the reference first
    assert "U" in sys_.columns and "RIC" not in sys_.columns


def test_report_command_errors_are_one_line(tmp_path):
    runs, qrels = generated(2, S=3, Q=3)
    qp, rd = write_trec(tmp_path, runs, qrels)
    (tmp_path / "afile").write_text("x")
    cases = [((str(qp), str(rd), "-o", "afile"), "not a directory", 1),
             ((str(qp), str(rd), "-o", "o", "-m", "nDGC@10"), "unknown measure 'nDGC@10'", 2),
             ((str(qp), str(rd), "-o", "o", "--official"), "--official needs --dataset or --against", 2),
             (("--against", "nope", str(rd), "-o", "o"), "unknown dataset 'nope'", 2),
             (("--against", "web2012", "-o", "o"), "needs your RUN files", 2),
             ((str(qp), str(rd), "-o", "o", "--team-rarity"), "--team-rarity needs a dataset", 2)]
    for args, msg, want in cases:
        code, out, err = report_main(*args, cwd=tmp_path)
        assert code == want and err.startswith("irinnov: error: ") and msg in err and err.count("\n") == 1, (args, err)
        assert "Traceback" not in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_report_command_in_process(tmp_path, monkeypatch):
    runs, qrels = generated(4, S=5, Q=4)
    qp, rd = write_trec(tmp_path, runs, qrels)
    p = add_report_arguments(argparse.ArgumentParser())
    monkeypatch.chdir(tmp_path)
    assert report_command(p.parse_args([str(qp), str(rd), "-o", "o", "-B", "20", "--trials", "20", "--k", "5"])) == 0
    assert (tmp_path / "o" / "report.html").exists() and (tmp_path / "o" / "groups.parquet").exists()


def evaluate_parser():
    "The evaluate parser as irinnov.cli builds it, RUNs optional, with the --against options added."
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="*")
    p.add_argument("-m", "--measure", action="extend", nargs="+")
    p.add_argument("--format", choices=("table", "tsv", "json"), default="table")
    p.add_argument("--tag", action="store_true")
    return add_against_arguments(add_options_arguments(p))


@pytest.mark.skipif(not (MIRROR / "github" / "castorini" / "TREC-COVID").is_dir(), reason="no offline mirror of TREC-COVID")
def test_evaluate_against_trec_covid(tmp_path, monkeypatch, capsys):
    "A campaign run taken out of TREC-COVID round 1 and brought back as the user's run places where it did."
    from irinnov.datasets import load
    monkeypatch.setenv("IRINNOV_MIRROR", str(MIRROR))
    ds = load("trec-covid-round1", progress=False)
    name = "BBGhelani2"
    mine = ds.runs[ds.runs.system == name]
    path = tmp_path / f"input.{name}"
    path.write_text("".join(f"{q} Q0 {d} {i} {s} {name}\n" for i, (q, d, s) in
                            enumerate(mine[["query", "doc", "score"]].itertuples(index=False))))
    measures = ["AP", "P@5", "AP_rareness@100(alpha=1)", "U"]
    args = evaluate_parser().parse_args([str(path), "--against", "trec-covid-round1", "-m", *measures,
                                         "--format", "json", "--permutations", "100"])
    import irinnov.datasets as datasets_mod
    real_load = datasets_mod.load
    monkeypatch.setattr(datasets_mod, "load", lambda *a, **k: _without(real_load(*a, **k), name))
    assert against_command(args) == 0
    rows = {r["measure"]: r for r in json.loads(capsys.readouterr().out)}
    board = ds.meta
    assert rows["AP"]["rank"] == int(board["MAP"].rank(ascending=False, method="min")[name])
    assert rows["P@5"]["rank"] == int(board["p@5"].rank(ascending=False, method="min")[name])
    assert abs(rows["AP"]["score"] - board.at[name, "MAP"]) < 5e-5 and rows["AP"]["of"] == 143
    full = campaign_report(ds.runs, ds.qrels, measures, B=100, trials=0, mc4=False)
    for m in ("AP@100_rareness(alpha=1)", "U"):
        assert rows[m]["rank"] == full.ranks.at[name, m] and abs(rows[m]["score"] - full.scores.at[name, m]) <= 1e-12
    assert 0 < rows["AP"]["Judged@10"] <= 1


def _without(ds, name):
    "The dataset with one run taken out of its field (the user brings it back with --against)."
    from types import SimpleNamespace
    return SimpleNamespace(runs=ds.runs[ds.runs.system != name], qrels=ds.qrels, meta=ds.meta.drop(index=name),
                           parts=ds.parts)


@pytest.mark.skipif(not (MIRROR / "github" / "castorini" / "TREC-COVID").is_dir(), reason="no offline mirror of TREC-COVID")
def test_report_against_trec_covid(tmp_path):
    "`report --against`: a user's run joins the 143 campaign runs, is marked, and its placement table is written."
    from irinnov.datasets import load
    env = {"IRINNOV_MIRROR": str(MIRROR), "IRINNOV_HOME": str(tmp_path / "home")}
    os.environ.setdefault("IRINNOV_MIRROR", str(MIRROR))
    ds = load("trec-covid-round1", progress=False)
    copy = ds.runs[ds.runs.system == "BBGhelani2"]
    (tmp_path / "mine").mkdir()
    for name in ("myrun", "BBGhelani1"):
        (tmp_path / "mine" / f"input.{name}").write_text("".join(
            f"{q} Q0 {d} {i} {s} {name}\n" for i, (q, d, s) in enumerate(copy[["query", "doc", "score"]].itertuples(index=False))))
    code, out, err = report_main("--against", "trec-covid-round1", str(tmp_path / "mine" / "input.BBGhelani1"), "-o", "clash",
                                 cwd=tmp_path, env=env)
    assert code == 1 and "already in the campaign" in err and err.count("\n") == 1
    code, out, err = report_main("--against", "trec-covid-round1", str(tmp_path / "mine" / "input.myrun"), "-o", "out",
                                 "-m", "AP", "U", "--permutations", "20", "--trials", "10", cwd=tmp_path, env=env)
    assert code == 0, err
    assert out.strip() == "wrote out/report.html and its tables (CSV, Parquet) for 144 systems"
    pl = pd.read_parquet(tmp_path / "out" / "placement.parquet").set_index("measure")
    assert set(pl.system) == {"myrun"} and (pl["of"] == 144).all()
    sys_ = pd.read_parquet(tmp_path / "out" / "systems.parquet").set_index("system")
    assert sys_.at["myrun", "AP"] == sys_.at["BBGhelani2", "AP"]                    # a copy scores as its original
    assert pl.at["AP", "rank"] == sys_.at["myrun", "rank AP"] == sys_.at["BBGhelani2", "rank AP"]
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="yours"' in html and '<tr class="yours"><td class="text">myrun</td>' in html


def test_team_rarity_passes_teams_where_supported(campaign, monkeypatch):
    "With a rareness function that takes teams=, the report hands it the system -> team mapping (and not to others)."
    import irinnov.rareness as rareness_mod
    seen = []
    real = rareness_mod.precision_rareness
    def with_teams(runs, qrels=None, k=100, alpha=0.5, depth=None, normalized=False, threshold=1, all_qrels_topics=False,
                   teams=None):
        seen.append(teams)
        return real(runs, qrels, k=k, alpha=alpha, depth=depth, normalized=normalized, threshold=threshold)
    monkeypatch.setattr(rareness_mod, "precision_rareness", with_teams)
    real_ap = rareness_mod.ap_rareness
    monkeypatch.setattr(rareness_mod, "ap_rareness", lambda *a, teams=None, **k: real_ap(*a, **k))
    meta_ = pd.DataFrame({"team": [f"team{i // 2}" for i in range(S)]}, index=pd.Index([f"s{i}" for i in range(S)], name="system"))
    r = campaign_report(campaign, measures=["AP", "P@10_rareness(alpha=1)"], B=20, trials=20, meta=meta_, teams=True)
    assert seen == [{f"s{i}": f"team{i // 2}" for i in range(S)}]
    assert r.params["team_rarity"] and "rareness" in r.params["team_families"]


def test_reusability_section(tmp_path, campaign):
    "campaign_report(reusability=d) holds leave_one_team_out's analysis of the report's measures; the page says which to trust."
    from irinnov.reusability import leave_one_team_out
    meta_ = pd.DataFrame({"team": ["A", "A", "B", "B", "C", "C", "D"]}, index=[f"s{s}" for s in range(S)])
    ms = ["AP", "P@10", "P@10_rareness(alpha=1)", "U@10", "RPP"]
    rep = campaign_report(campaign, measures=ms, meta=meta_, reusability=3, B=100, trials=20, mc4=False)
    want = leave_one_team_out(campaign, measures=[rep.specs[m] for m in ms], depth=3, teams=meta_["team"], progress=False)
    pd.testing.assert_frame_equal(rep.reusability.summary, want.summary)
    assert set(rep.reusability.runs.team) == {"A", "B", "C", "D"}
    assert rep.params["reusability"] == 3
    html = Path(write_report(rep, out_dir=tmp_path / "out")).read_text(encoding="utf-8")
    assert '<section id="reusability">' in html and "Zobel" in html and "Sakai" in html
    assert re.search(r"<b>Reusability</b> \(each team left out of the pool of depth 3 in turn\)", html)
    low = want.summary.index[~(want.summary.tau >= 0.9)]
    for m in low: assert m in html.split('<section id="glance">')[1].split("</section>")[0]   # named at a glance
    back = pd.read_csv(tmp_path / "out" / "reusability.csv", index_col=0)
    np.testing.assert_allclose(back["tau"].to_numpy(float), want.summary["tau"].to_numpy(float), equal_nan=True)
    assert campaign_report(campaign, measures=ms, B=100, trials=20, mc4=False).reusability is None


def test_why_they_rise_lists_documents_relevant_at_the_reports_level(campaign):
    "The 'why they rise' table lists documents relevant where the report's rarity measures count them: at level 2 "
    "no grade-1 document (DL 2020's passages are judged so), at level 1 the grade-1 ones too."
    from irinnov.report.model import _why_rise
    seen = {}
    for level in (1, 2):
        r = campaign_report(campaign, k=10, B=20, trials=20, mc4=False, threshold=level)
        why = _why_rise(r)
        assert len(why) and (why.grade >= level).all()
        rel = {(q, d) for q, d, g in zip(campaign.qrels["query"], campaign.qrels["doc"], campaign.qrels["grade"]) if g >= level}
        assert set(zip(why["query"], why.doc)) <= rel
        seen[level] = set(why.grade)
    assert 1 in seen[1] and 1 not in seen[2]


def test_a_laid_out_figure_is_drawn_once_when_saved(monkeypatch):
    import base64, io
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from irinnov.report.html import _svg

    def laid_out():
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([1, 3, 2])
        ax.set(title="a title", xlabel="rank by AP", ylabel="rank by the measure")
        fig.tight_layout()
        return fig
    # matplotlib's own save: drawn twice (once for the placeholder layout engine tight_layout leaves behind)
    fig, buf = laid_out(), io.BytesIO()
    with plt.rc_context({"svg.hashsalt": "irinnov", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    draws, draw = [], Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: draws.append(1) or draw(self, renderer))
    once = _svg(laid_out())
    assert len(draws) == 1
    assert base64.b64decode(once) == buf.getvalue()       # the same bytes
