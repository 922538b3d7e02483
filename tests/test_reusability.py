"""Leave-one-team-out reusability (`irinnov.reusability`) against a brute-force loop that rebuilds each team's qrels as a
frame and re-evaluates from scratch with the public API, and AP under the reduced qrels against trec_eval 9.0.8."""
from __future__ import annotations

import io
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import oracle_build as ob
from irinnov.measures import parse_measure
from irinnov.reusability import leave_one_team_out
from irinnov.trec import prepare

MEASURES = ["AP", "nDCG@10", "P@5", "P@5_rareness", "AP_rareness", "U@5", "RPP", "ASL", "RIC"]


def worked():
    "The one-topic worked example: d1, d2, d4, d5 relevant, d3 judged non-relevant; A (T1), B (T2), C (T3)."
    qrels = pd.DataFrame([("q1", d, g) for d, g in [("d1", 1), ("d2", 1), ("d3", 0), ("d4", 1), ("d5", 1)]],
                         columns=["query", "doc", "grade"])
    lists = {"A": ["d1", "d4", "d3"], "B": ["d1", "d2", "d3"], "C": ["d5", "d2", "d1"]}
    runs = pd.DataFrame([(s, "q1", d, 3.0 - i) for s, ds in lists.items() for i, d in enumerate(ds)],
                        columns=["system", "query", "doc", "score"])
    return runs, qrels, {"A": "T1", "B": "T2", "C": "T3"}


def test_worked_example_exact():
    runs, qrels, teams = worked()
    res = leave_one_team_out(runs, qrels, measures=["AP"], depth=2, teams=teams, progress=False)
    df = res.to_frame().set_index("system")
    frac = lambda x: Fraction(float(x)).limit_denominator(100)
    assert [frac(x) for x in df.full] == [Fraction(1, 2), Fraction(1, 2), Fraction(3, 4)]
    assert [frac(x) for x in df.leave_out] == [Fraction(1, 3), Fraction(1, 2), Fraction(7, 18)]
    assert res.removed.to_dict() == {"T1": 1, "T2": 0, "T3": 1}          # d4 by T1, d5 by T3, nothing by T2
    assert df.full.sort_values(ascending=False).index[0] == "C"           # C first under the full qrels
    assert list(df.leave_out.sort_values(ascending=False).index) == ["B", "C", "A"]   # 1/2 > 7/18 > 1/3
    assert df.full_rank.tolist() == [2, 2, 1] and df.leave_out_rank.tolist() == [3, 2, 3]
    s = res.summary.loc["AP"]
    assert s.max_drop == 2 and s.tau == pytest.approx(0.0)
    assert s.mean_change == pytest.approx(float((Fraction(-1, 3) + 0 + Fraction(-13, 27)) / 3))


def generated(seed: int, n_teams: int = 4, n_topics: int = 4):
    "A small campaign: teams of 1-3 runs, a topic without relevant documents, missing lists, ties, graded qrels."
    rng = np.random.default_rng(seed)
    runs, qrels, teams, pooled = [], [], {}, []
    pool = [f"d{i:02d}" for i in range(25)]
    for q in range(n_topics):
        topic = f"t{q}"
        judged = rng.choice(pool, size=rng.integers(6, 15), replace=False)
        top = 0 if q == n_topics - 1 else 2                                  # the last topic: nothing relevant
        qrels += [(topic, d, int(rng.integers(-1, top + 1))) for d in judged]
    k = 0
    for t in range(n_teams):
        for r in range(int(rng.integers(1, 4))):
            name = f"s{k}"; k += 1
            teams[name] = f"team{t}"
            if r == 0 or rng.random() < 0.3: pooled.append(name)
            for q in range(n_topics):
                if rng.random() < 0.15: continue                                  # a missing list
                docs = rng.choice(pool, size=rng.integers(1, 16), replace=False)
                scores = rng.integers(0, 6, size=len(docs)).astype(float)         # ties
                runs += [(name, f"t{q}", d, s) for d, s in zip(docs, scores)]
    runs = pd.DataFrame(runs, columns=["system", "query", "doc", "score"])
    return runs, pd.DataFrame(qrels, columns=["query", "doc", "grade"]), teams, pooled


def brute_force(runs, qrels, measures, depth, teams, pooled, condensed=False):
    "Per team: its uniquely contributed judgments found with pandas, the qrels without them, everything re-evaluated."
    ordered = prepare(runs, qrels).runs                          # trec_eval's order, with ranks
    top = ordered[(ordered["rank"] <= depth) & ordered.system.isin(pooled)].merge(qrels[["query", "doc"]])
    top = top.assign(team=top.system.map(teams))
    n = top.groupby(["query", "doc"]).team.nunique()
    unique = top.drop_duplicates(["query", "doc"]).set_index(["query", "doc"]).loc[n[n == 1].index, "team"]
    def scores(q):
        r = runs.merge(q[["query", "doc"]]) if condensed else runs
        c = prepare(r, q)
        return {m: parse_measure(m)(c, warn=False).mean(axis=1) for m in measures}
    full, out = scores(qrels), {m: {} for m in measures}
    for team in sorted(set(teams.values())):
        gone = set(unique[unique == team].index)
        q = qrels[[(a, b) not in gone for a, b in zip(qrels["query"], qrels["doc"])]]
        s = scores(q) if gone else full
        for m in measures:
            for sys_ in [x for x, t in teams.items() if t == team]: out[m][sys_] = s[m].get(sys_, np.nan)
    return full, out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("condensed", [False, True])
def test_equals_brute_force(seed, condensed):
    runs, qrels, teams, pooled = generated(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = leave_one_team_out(runs, qrels, measures=MEASURES, depth=3, teams=teams, pooled=pooled, progress=False)
        full, lo = brute_force(runs, qrels, MEASURES, 3, teams, pooled, condensed)
    df = res.to_frame()
    v = "_condensed" if condensed else ""
    for m in MEASURES:
        name = parse_measure(m).name
        got = df[df.measure == name].set_index("system")
        want_full = full[m].reindex(got.index)
        want_lo = pd.Series(lo[m]).reindex(got.index)
        np.testing.assert_allclose(got[f"full{v}"], want_full, atol=1e-12, err_msg=f"{m} full")
        np.testing.assert_allclose(got[f"leave_out{v}"], want_lo, atol=1e-12, err_msg=f"{m} leave-out")
    assert res.removed.sum() > 0


@pytest.fixture(scope="module")
def trec_eval_9(tmp_path_factory):
    reason = ob.why_not()
    if reason: pytest.skip(reason)
    v = ob.VERSIONS["9"]
    return ob._make(ob.ORACLES / v, tmp_path_factory.mktemp("trec_eval") / f"{v}-precise", True)


@pytest.mark.parametrize("seed", range(3))
def test_ap_under_reduced_qrels_equals_trec_eval(trec_eval_9, tmp_path, seed):
    "Each team's runs scored by trec_eval 9.0.8 (-c) with the qrels that lack its unique contributions."
    runs, qrels, teams, pooled = generated(seed, n_teams=5, n_topics=6)
    res = leave_one_team_out(runs, qrels, measures=["AP"], depth=3, teams=teams, pooled=pooled, condensed=False,
                             progress=False).to_frame().set_index("system")
    ordered = prepare(runs, qrels).runs
    top = ordered[(ordered["rank"] <= 3) & ordered.system.isin(pooled)].merge(qrels[["query", "doc"]])
    owners = top.assign(team=top.system.map(teams)).groupby(["query", "doc"]).team.agg(lambda t: set(t))
    checked = 0
    for team in sorted(set(teams.values())):
        gone = {k for k, t in owners.items() if t == {team}}
        if not gone: continue
        q = qrels[[(a, b) not in gone for a, b in zip(qrels["query"], qrels["doc"])]]
        qf = ob.write_qrels(q, tmp_path / f"qrels.{team}")
        for s in [x for x, t in teams.items() if t == team]:
            rf = ob.write_run(runs[runs.system == s], tmp_path / f"run.{s}", tag=s)
            code, vals, err = ob.run(trec_eval_9, qf, rf, "-c", "-m", "map")
            assert code == 0, err
            assert float(vals[("map", "all")]) == pytest.approx(res.loc[s, "leave_out"], abs=1e-12), (team, s)
            checked += 1
    assert checked > 0


def test_command_line(tmp_path, capsys):
    "`irinnov reusability` on the worked example: the summary, the per-run CSV, and one-line errors."
    from irinnov.cli import main
    runs, qrels, teams = worked()
    (tmp_path / "runs").mkdir()
    for s, g in runs.groupby("system"):
        (tmp_path / "runs" / s).write_text("".join(f"q1 Q0 {d} {i} {sc} {s}\n" for i, (d, sc) in enumerate(zip(g.doc, g.score), 1)))
    qp = tmp_path / "qrels"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    tp = tmp_path / "teams"
    tp.write_text("".join(f"{s} {t}\n" for s, t in teams.items()))
    assert main(["reusability", str(qp), str(tmp_path / "runs"), "-m", "AP", "--pool-depth", "2", "--teams", str(tp)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["measure", "max_drop", "mean_change", "tau"]
    assert out[1].split()[:4] == ["AP", "2.0000", "-0.2716", "0.0000"]
    assert main(["reusability", str(qp), str(tmp_path / "runs"), "-m", "AP", "-d", "2", "--per-run", "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("system")
    assert df.leave_out.round(6).tolist() == [round(1 / 3, 6), 0.5, round(7 / 18, 6)]
    bad = tmp_path / "bad"
    bad.write_text("A T1 maybe\n")
    for argv, code, text in [(["-m", "nope"], 2, "unknown measure 'nope'"), (["-d", "0"], 2, "pool-depth"),
                             (["--teams", str(bad)], 1, "bad:1: expected 'RUN TEAM [yes|no]'"),
                             (["--teams", str(tmp_path / "none")], 1, "No such file")]:
        assert main(["reusability", str(qp), str(tmp_path / "runs"), *argv]) == code
        err = capsys.readouterr().err
        assert text in err and err.count("\n") == 1, err


def test_a_topic_left_without_judgments():
    "When a team contributed every judgment of a topic, qrels₋T has no such topic: its runs are averaged without it (as trec_eval -c)."
    runs, qrels, teams = worked()
    qrels = pd.concat([qrels, pd.DataFrame([("q2", "x1", 1), ("q2", "x2", 0)], columns=qrels.columns)], ignore_index=True)
    more = [("A", "q2", "x1", 2.0), ("A", "q2", "x2", 1.0), ("B", "q2", "y1", 2.0), ("C", "q2", "y2", 1.0)]
    runs = pd.concat([runs, pd.DataFrame(more, columns=runs.columns)], ignore_index=True)
    measures = ["AP", "P@5", "RPP", "U@5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = leave_one_team_out(runs, qrels, measures=measures, depth=2, teams=teams, progress=False)
        full, lo = brute_force(runs, qrels, measures, 2, teams, list(teams))
    df = res.to_frame()
    ap = df[df.measure == "AP"].set_index("system")
    assert ap.loc["A", "full"] == pytest.approx(0.75) and ap.loc["A", "leave_out"] == pytest.approx(1 / 3)
    for m in measures:
        got = df[df.measure == parse_measure(m).name].set_index("system")
        np.testing.assert_allclose(got.leave_out, pd.Series(lo[m]).reindex(got.index), atol=1e-12, err_msg=m)
