"""The registry of measures: every declaration parses its canonical name back to itself, every alias resolves, an
unknown name lists every accepted name, and the library, the report and the command line name a measure the same."""
import warnings

import numpy as np
import pandas as pd
import pytest

from irinnov import cli, metrics
from irinnov.measures import REGISTRY, Measure, MeasureError, name_patterns, accepted_names, canonical_name, parse_measure
from irinnov.report import campaign_report
from irinnov.trec import prepare


def concrete(written: str) -> str:
    "A registry pattern (`P@k`, `IPrec@r`, `ASL@g1-n`, `P_rareness@k(alpha=a)`) with numbers filled in."
    return written.replace("@k", "@10").replace("@r", "@0.5").replace("@g1-n", "@g1-10").replace("alpha=a", "alpha=1")


def every_measure() -> list:
    return [parse_measure(concrete(w)) for d in REGISTRY.values() for w in name_patterns(d)]


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(3)
    runs, qrels = [], []
    for q in range(4):
        grades = rng.choice([0, 0, 1, 1, 2], size=30)
        qrels += [(f"t{q}", f"d{d:02d}", int(g)) for d, g in enumerate(grades)]
        for s in range(6):
            score = grades * (0.5 + 0.1 * s) + rng.normal(size=30)
            runs += [(f"s{s}", f"t{q}", f"d{d:02d}", float(x)) for d, x in enumerate(score)]
    return pd.DataFrame(runs, columns=["system", "query", "doc", "score"]), pd.DataFrame(qrels, columns=["query", "doc", "relevance"])


@pytest.fixture(scope="module")
def campaign(frames):
    return prepare(*frames)


def test_canonical_names_round_trip():
    ms = every_measure()
    assert len(ms) >= len(REGISTRY)
    for m in ms:
        assert isinstance(m, Measure)
        assert parse_measure(m.name) == m                     # the printer's output parses back to the same measure
        assert canonical_name(m.name) == m.name               # canonical names are fixed points
        assert parse_measure(m.name.lower()).definition == m.definition or m.definition.name in ("P", "R", "RR")


def test_every_alias_resolves():
    for d in REGISTRY.values():
        m = parse_measure(concrete(name_patterns(d)[-1]))
        for a in d.aliases:
            written = m.name.replace(d.stem, a, 1)
            assert parse_measure(written).definition is d, written
            assert parse_measure(written.upper()).definition is d, written          # any case
            assert parse_measure(written).name == m.name


def test_trec_eval_spellings():
    pairs = {"map": "AP", "map_cut_100": "AP@100", "map_cut.100": "AP@100", "P_10": "P@10", "P.5": "P@5",
             "ndcg_cut.10": "nDCG@10", "ndcg": "nDCG", "recip_rank": "RR", "Rprec": "R-prec", "recall_1000": "R@1000",
             "success_5": "Success@5", "iprec_at_recall_0.10": "IPrec@0.1", "set_P": "SetP", "set_F": "SetF",
             "num_rel_ret": "NumRelRet", "bpref": "bpref", "infAP": "infAP"}
    for written, canon in pairs.items(): assert canonical_name(written) == canon, written
    assert canonical_name("map", threshold=2) == "AP(rel=2)"
    assert canonical_name("P(rel=1)@5", threshold=2) == "P@5"          # an explicit rel= wins over -l


def test_unknown_name_gets_the_closest_names():
    with pytest.raises(MeasureError) as e: parse_measure("nDGC@10")
    assert str(e.value).startswith("unknown measure 'nDGC@10'; did you mean nDCG@10?")
    assert "known measures" not in str(e.value)                          # the closest names, not the whole list
    for typo, close in [("bperf", "bpref"), ("MAPP@10", "AP@10"), ("ERRR@20", "ERR@20"), ("alpha-ndgc@10", "alpha-nDCG@10"),
                        ("P_rarness@100(alpha=1)", "P_rareness@100(alpha=1)"), ("MAP@10x", "AP@k")]:
        with pytest.raises(MeasureError, match="did you mean") as e: parse_measure(typo)
        assert close in str(e.value), (typo, str(e.value))


def test_unknown_name_close_to_none_lists_every_name_and_alias():
    with pytest.raises(MeasureError) as e: parse_measure("zzzz@10")
    msg = str(e.value)
    assert msg.startswith("unknown measure 'zzzz@10'; known measures:")
    for d in REGISTRY.values():
        for w in name_patterns(d): assert w in msg
        for a in d.aliases: assert a in msg
    assert msg.endswith(accepted_names())
    for bad, why in [("ASL@10", "ASL takes @g1-n"), ("RIC(alpha=1)", "unknown parameter 'alpha'"),
                     ("P_rareness(alpha=1)", "needs a cutoff"), ("P@0", "must be ≥ 1"), ("P@5@10", "two cutoffs"),
                     ("RBP(p=2)", "p must be in (0, 1)"), ("U(log0=x)", "bad value"), ("P'@10", "unknown measure"),
                     ("IPrec@2", "recall level"), ("bpref@10", "takes no cutoff")]:
        with pytest.raises(MeasureError, match=why.replace("(", r"\(").replace(")", r"\)")): parse_measure(bad)


def test_kernels_name_their_tables_as_the_registry_prints(campaign):
    c = campaign
    tables = {"P@5": metrics.precision(c, k=5), "P(rel=2)@5": metrics.precision(c, k=5, threshold=2),
              "R@10": metrics.recall(c, k=10), "AP": metrics.average_precision(c),
              "AP@10": metrics.average_precision(c, depth=10), "RR": metrics.reciprocal_rank(c),
              "R-prec": metrics.r_precision(c), "RBP(p=0.5,graded)": metrics.rbp(c, p=0.5, graded=True), "RBP(p=0.8)": metrics.rbp(c),
              "nDCG@10": metrics.ndcg(c, k=10), "bpref(rel=2)": metrics.bpref(c, threshold=2)}
    for name, t in tables.items():
        assert parse_measure(name).name == name == t.attrs["measure"]


def test_library_report_and_cli_name_a_measure_the_same(frames, campaign, tmp_path, capsys):
    names = ["map", "P_10", "ndcg_cut.10", "AP_rareness@10(alpha=1)", "U@10", "invrpp(graded=0)", "asl@g1-5", "RIC"]
    canon = [canonical_name(n) for n in names]
    assert canon == ["AP", "P@10", "nDCG@10", "AP@10_rareness(alpha=1)", "U@10", "invRPP(graded=0)", "ASL@g1-5", "RIC"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n, cn in zip(names, canon):
            t = metrics.measure(campaign, name=n)
            assert t.attrs["measure"] == cn
            assert t.attrs["higher_is_better"] == parse_measure(n).higher_is_better
            np.testing.assert_array_equal(t.to_numpy(), parse_measure(n)(campaign).to_numpy())
        rep = campaign_report(campaign, measures=names, B=20, trials=20, seed=0)
    assert [m for m in rep.measures if m in canon] == canon
    # the command line: trec_eval's names echo as typed (trec_eval's output), the others print their canonical names
    runs, qrels = frames
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    for s, run in runs.groupby("system"):
        run = run.sort_values(["query", "score"], ascending=[True, False])
        (tmp_path / f"{s}.run").write_text("".join(f"{q} Q0 {d} {i} {x!r} {s}\n" for i, (_, q, d, x) in
                                                   enumerate(run.itertuples(index=False))))
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli.main(["evaluate", str(tmp_path / "qrels"), *sorted(map(str, tmp_path.glob("*.run"))), "-m", *names])
    out = capsys.readouterr().out
    assert code == 0
    printed = list(dict.fromkeys(line.split("\t")[0].strip() for line in out.splitlines() if "\t" in line))
    assert [m for m in printed if m != "runid"] == names[:2] + ["ndcg_cut_10"] + canon[3:]


def test_orientation_and_campaign_hint(campaign):
    assert parse_measure("ASL").higher_is_better is False
    assert all(m.higher_is_better for m in every_measure() if m.family != "asl")
    with pytest.raises(TypeError, match=r"did you mean measure\(campaign, name='GAP'\)"):
        metrics.measure(campaign, "GAP")


def test_diversity_measures_through_the_registry():
    "The diversity family computes through the registry what irinnov.diversity computes (ndeval's values, tested there)."
    from irinnov import diversity
    rng = np.random.default_rng(5)
    qrels = pd.DataFrame([(f"t{q}", s, f"d{d:02d}", int(rng.random() < 0.3)) for q in range(3) for s in (1, 2, 3)
                          for d in range(12)], columns=["query", "subtopic", "doc", "grade"])
    runs = pd.DataFrame([(f"s{s}", f"t{q}", f"d{d:02d}", float(rng.random())) for s in range(4) for q in range(3)
                         for d in range(12)], columns=["system", "query", "doc", "score"])
    c = prepare(runs, qrels, score_dtype="float64")
    direct = {"alpha-nDCG@5": diversity.alpha_ndcg(c, k=5), "alpha-nDCG(alpha=0.8)@5": diversity.alpha_ndcg(c, k=5, alpha=0.8),
              "ERR-IA@5": diversity.err_ia(c, k=5), "NRBP": diversity.nrbp(c), "MAP-IA": diversity.map_ia(c),
              "P-IA@5": diversity.precision_ia(c, k=5), "S-recall@5": diversity.subtopic_recall(c, k=5),
              "strec@5": diversity.subtopic_recall(c, k=5)}
    for name, want in direct.items():
        m = parse_measure(name)
        got = m(c)
        assert m.family == "diversity" and got.attrs["measure"] == canonical_name(name)
        pd.testing.assert_frame_equal(got, want, check_names=False)
    with pytest.raises(ValueError, match="subtopic"):
        parse_measure("alpha-nDCG@5")(prepare(runs, qrels.drop(columns="subtopic").drop_duplicates(["query", "doc"])))
