"""`irinnov report` for every `-m` selection and on qrels without a relevant document, and a run placed against a
field under one measure: the report is written and says so where a section or figure has nothing to show. Scores are
checked against AP and P@10 computed by hand from the files' lines."""
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irinnov.report import against_field, campaign_report, plot_rank_shift
from irinnov.trec import prepare

ROOT = Path(__file__).resolve().parents[1]
MIRROR = ROOT.parent / "shared" / "data"


def generated(seed=0, S=6, Q=5, D=20, zero=False):
    "S runs of D distinct documents (scores falling with rank) over Q topics of 30 judged documents each."
    rng = np.random.default_rng(seed)
    qrels = [(str(q + 1), f"d{d}", 0 if zero else int(d == 0 or rng.choice([0, 0, 1, 2]))) for q in range(Q) for d in range(30)]
    runs = [(f"r{s}", str(q + 1), f"d{d}", float(D - r)) for s in range(S) for q in range(Q)
            for r, d in enumerate(rng.permutation(40)[:D])]
    return (pd.DataFrame(runs, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(qrels, columns=["query", "doc", "grade"]))


def by_hand(runs, qrels):
    "Mean AP and P@10 per run over the qrels topics, from the definitions (grade ≥ 1 relevant; no relevant: 0)."
    rel = {(q, d) for q, d, g in qrels.itertuples(index=False) if g >= 1}
    out = {}
    for s, r in runs.groupby("system"):
        ap, p10 = [], []
        for q in sorted(set(qrels["query"])):
            docs = r[r["query"] == q].sort_values("score", ascending=False)["doc"].tolist()
            R = sum(1 for t, _ in rel if t == q)
            hits, total = 0, 0.0
            for i, d in enumerate(docs, 1):
                if (q, d) in rel:
                    hits += 1
                    total += hits / i
            ap.append(total / R if R else 0.0)
            p10.append(sum((q, d) in rel for d in docs[:10]) / 10)
        out[s] = (np.mean(ap), np.mean(p10))
    return pd.DataFrame(out, index=["AP", "P@10"]).T


def write_trec(folder: Path, runs, qrels):
    (folder / "runs").mkdir()
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    for s, r in runs.groupby("system"):
        (folder / "runs" / f"input.{s}").write_text("".join(
            f"{q} Q0 {d} {i + 1} {sc} {s}\n" for i, (q, d, sc) in enumerate(r[["query", "doc", "score"]].itertuples(index=False))))
    return folder / "qrels.txt", folder / "runs"


def report(tmp_path, monkeypatch, capsys, measures, zero=False):
    "`irinnov report QRELS RUNS -o out [-m ...]` as a user types it; (exit code, stderr, page text, systems table, runs, qrels)."
    from irinnov.cli import main
    runs, qrels = generated(3, zero=zero)
    qp, rd = write_trec(tmp_path, runs, qrels)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IRINNOV_PROGRESS", "0")
    code = main(["report", str(qp), str(rd), "-o", "out", "--permutations", "50", "--trials", "20", "--cutoff", "10",
                 *(["-m", *measures] if measures else [])])
    err = capsys.readouterr().err
    if code: return code, err, None, None, runs, qrels
    return (code, err, (tmp_path / "out" / "report.html").read_text(),
            pd.read_csv(tmp_path / "out" / "systems.csv", dtype={"system": str}).set_index("system"), runs, qrels)


def figures(page: str) -> int:
    return page.count('src="data:image/svg+xml;base64,')


def headings(page: str) -> list:
    return re.findall(r"<h2>([^<]*)</h2>", page)


# ---- every -m selection ------------------------------------------------------------------------------------------

def test_report_classic_measures_only(tmp_path, monkeypatch, capsys):
    "-m AP P@10: no innovation-aware measure, so no rank-shift figure; the report says so and the scores are right."
    code, err, page, sys_, runs, qrels = report(tmp_path, monkeypatch, capsys, ["AP", "P@10"])
    assert code == 0, err
    assert figures(page) == 3                             # per-topic heatmap, agreement, power: no rank-shift plot
    assert "No innovation-aware measure in this report (measures: AP, P@10)" in page
    assert "Who rises under the innovation measures" in headings(page)
    want = by_hand(runs, qrels)
    np.testing.assert_allclose(sys_.loc[want.index, ["AP", "P@10"]].to_numpy(), want.to_numpy(), rtol=0, atol=1e-12)


def test_report_one_measure(tmp_path, monkeypatch, capsys):
    "-m AP: one measure, so neither rank shifts nor agreement between measures; AP's ordering agrees with itself."
    code, err, page, sys_, runs, qrels = report(tmp_path, monkeypatch, capsys, ["AP"])
    assert code == 0, err
    assert figures(page) == 2                             # per-topic heatmap and power only
    assert "Only one measure (AP): no agreement between measures to show." in page
    assert "No innovation-aware measure in this report (measures: AP)" in page
    want = by_hand(runs, qrels)["AP"]
    assert want.nunique() == len(want)                    # (distinct scores: τ of the ordering with itself is 1)
    np.testing.assert_allclose(sys_.loc[want.index, "AP"].to_numpy(), want.to_numpy(), rtol=0, atol=1e-12)
    assert sys_.loc[want.index, "rank AP"].tolist() == want.rank(ascending=False).astype(int).tolist()
    agree = pd.read_csv(tmp_path / "out" / "agreement.csv")
    assert len(agree) == 1 and agree.loc[0, "tau"] == 1 and agree.loc[0, "tau_ap"] == 1


@pytest.mark.parametrize("measures", [["U"], None])
def test_report_innovation_and_default_measures(tmp_path, monkeypatch, capsys, measures):
    "-m U (AP joins as the reference) and the default measures: the rank-shift figure is drawn."
    code, err, page, sys_, runs, qrels = report(tmp_path, monkeypatch, capsys, measures)
    assert code == 0, err
    assert figures(page) == 4                             # heatmap, rank shifts, agreement, power
    assert "No innovation-aware measure" not in page and "Only one measure" not in page
    assert {"AP", "U", "rank U"} <= set(sys_.columns)
    risers = pd.read_csv(tmp_path / "out" / "risers.csv", dtype={"system": str})
    u = risers[risers.measure == "U"]
    assert len(u) == 3 and (u["shift"] == sys_.loc[u.system, "rank AP"].to_numpy() - sys_.loc[u.system, "rank U"].to_numpy()).all()
    # the rarity bonus's section only where a rareness measure is (the defaults hold two), never an empty table
    assert ("What the rarity bonus alone does" in page) == (measures is None)


def test_plot_rank_shift_without_innovation_measures_is_a_clear_error():
    runs, qrels = generated(3)
    rep = campaign_report(prepare(runs, qrels), measures=["AP", "P@10"], B=20, trials=0)
    with pytest.raises(ValueError, match="no innovation-aware measure to plot against AP"): plot_rank_shift(rep)


# ---- qrels without a relevant document ---------------------------------------------------------------------------

@pytest.mark.parametrize("measures", [None, ["AP", "P@10"], ["U"]])
def test_report_on_qrels_without_relevant_documents(tmp_path, monkeypatch, capsys, measures):
    "Every grade 0: the report is written, says the qrels hold no relevant document, the classic measures are 0 and the others are left out as undefined."
    code, err, page, sys_, runs, qrels = report(tmp_path, monkeypatch, capsys, measures, zero=True)
    assert code == 0, err
    assert "The qrels hold no relevant document (no judgment of grade ≥ 1)" in page
    assert (sys_["AP"] == 0).all() and (sys_["rank AP"] == 1).all()          # no relevant document: AP 0, all tied
    assert (by_hand(runs, qrels)["AP"] == 0).all()
    assert "U" not in sys_.columns and "rank U" not in sys_.columns
    if measures != ["AP", "P@10"]:
        left_out = re.search(r"left out: ([^<]*)\.</p>", page).group(1).split(", ")
        assert "U" in left_out
    assert "No innovation-aware measure in this report" in page


def test_undefined_reference_is_a_clear_error():
    runs, qrels = generated(3, zero=True)
    with pytest.raises(ValueError, match="reference: U is undefined on this campaign"):
        campaign_report(prepare(runs, qrels), measures=["AP", "U"], reference="U", B=20, trials=0)


# ---- a run against the field under one measure --------------------------------------------------------------------

def test_against_field_with_one_measure():
    "One measure: the placement table of that measure (rank: 1 + the field's runs with a higher AP, by hand)."
    runs, qrels = generated(5, S=7)
    mine, field = runs[runs.system == "r4"], runs[runs.system != "r4"]
    table = against_field(mine, field, qrels, ["AP"], B=50)
    assert table["measure"].tolist() == ["AP"] and table["system"].tolist() == ["r4"]
    ap = by_hand(runs, qrels)["AP"]
    row = table.iloc[0]
    assert row["rank"] == 1 + int((ap.drop("r4") > ap["r4"] + 1e-12).sum()) and row["of"] == 7
    assert abs(row["score"] - ap["r4"]) < 1e-12 and abs(row["best in field"] - ap.drop("r4").max()) < 1e-12


@pytest.mark.skipif(not (MIRROR / "github" / "castorini" / "TREC-COVID").is_dir(), reason="no offline mirror of TREC-COVID")
def test_evaluate_against_trec_covid_with_one_measure(tmp_path, monkeypatch, capsys):
    "`irinnov evaluate --against trec-covid-round1 myrun -m AP`: a copy of a campaign run places where the leaderboard has it."
    from irinnov.cli import main
    from irinnov.datasets import load
    monkeypatch.setenv("IRINNOV_MIRROR", str(MIRROR))
    monkeypatch.setenv("IRINNOV_PROGRESS", "0")
    ds = load("trec-covid-round1", progress=False)
    name = "BBGhelani2"
    copy = ds.runs[ds.runs.system == name]
    path = tmp_path / "myrun"
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} myrun\n" for i, (q, d, s) in
                            enumerate(copy[["query", "doc", "score"]].itertuples(index=False))))
    code = main(["evaluate", "--against", "trec-covid-round1", str(path), "-m", "AP", "--permutations", "100"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].split()[:6] == ["system", "measure", "score", "rank", "of", "best"] and len(lines) == 2
    system, measure, score, rank, of = lines[1].split()[:5]
    board = ds.meta["MAP"]
    assert (system, measure, int(of)) == ("myrun", "AP", 144)
    assert int(rank) == int(board.rank(ascending=False, method="min")[name])     # the copy ties its original
    assert abs(float(score) - board[name]) < 5e-5
