"""Leaderboards (irinnov.leaderboard): each test and correction against scipy and statsmodels on the same per-topic
numbers, the randomized Tukey HSD test against a brute-force permutation loop, letter groups against their defining
property, LaTeX escaping and structure, orientation, and `irinnov compare` in a subprocess."""
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from irinnov import cli
from irinnov.conventions import round_significant
from irinnov.leaderboard import (CORRECTIONS, FORMATS, TESTS, adjust_pvalues, compact_letters, comparison_pvalues,
                                 leaderboard, leaderboard_of_tables, paired_effects, wilcoxon_pvalues,
                                 write_text_atomic)

multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
IRINNOV = Path(sys.executable).with_name("irinnov")


def table(X, names=None, hib=True, measure="m"):
    X = np.asarray(X, float)
    names = names or [f"s{i}" for i in range(len(X))]
    t = pd.DataFrame(X, index=pd.Index(names, name="system"), columns=pd.Index([f"q{j}" for j in range(X.shape[1])], name="query"))
    t.attrs.update(measure=measure, higher_is_better=hib)
    return t


def scores(rng, S, n, ties=False):
    X = rng.random((S, n)) * rng.random(S)[:, None]
    return np.round(X, 1) if ties else X


@pytest.mark.parametrize("n", [3, 6, 12, 13, 14, 25, 50, 51, 80])
@pytest.mark.parametrize("ties", [False, True])
def test_t_and_wilcoxon_against_scipy(n, ties):
    rng = np.random.default_rng(n + 100 * ties)
    X = scores(rng, 6, n, ties)
    X[1] = X[0]                                   # an identical pair: p = 1
    X[2, : n // 2] = X[0, : n // 2]               # zeros among the differences
    ia, ib = np.triu_indices(6, 1)
    t = comparison_pvalues(X, ia, ib, test="t")
    w = comparison_pvalues(X, ia, ib, test="wilcoxon")
    for k, (a, b) in enumerate(zip(ia, ib)):
        d = round_significant(X[a] - X[b])
        if not d.any():
            assert t[k] == 1.0 and w[k] == 1.0
            continue
        assert t[k] == pytest.approx(stats.ttest_rel(X[a], X[b]).pvalue, rel=1e-9, abs=1e-15)
        assert w[k] == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-9, abs=1e-15), (a, b)


def test_wilcoxon_exact_branch_and_rounding():
    d = np.array([[0.1, 0.3, -0.2, 0.5, 0.4, 0.25, -0.05, 0.7]])
    assert wilcoxon_pvalues(d)[0] == pytest.approx(stats.wilcoxon(d[0], method="exact").pvalue, rel=1e-12)
    # 0.3 - 0.2 and 0.2 - 0.1 differ in floating point; rounded, they tie as they do in exact arithmetic
    assert wilcoxon_pvalues([[0.3 - 0.2, 0.2 - 0.1, 0.5, 0.6] * 4])[0] == pytest.approx(
        stats.wilcoxon([0.1, 0.1, 0.5, 0.6] * 4).pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_corrections_against_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.random(30) ** 3, [0.01, 0.01, 0.5, 1.0]])      # ties among the p-values too
    for ours, theirs in (("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")):
        np.testing.assert_allclose(adjust_pvalues(p, method=ours), multipletests(p, method=theirs)[1], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(adjust_pvalues(p, method="none"), p)
    with pytest.raises(ValueError): adjust_pvalues(p, method="fdr")


def test_effects_against_scipy():
    rng = np.random.default_rng(3)
    a, b = rng.random(20), rng.random(20)
    e = paired_effects([a - b], level=0.9).iloc[0]
    ci = stats.ttest_rel(a, b).confidence_interval(0.9)
    assert (e["ci low"], e["ci high"]) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert e["d"] == pytest.approx((a - b).mean() / (a - b).std(ddof=1), rel=1e-12)
    assert np.isnan(paired_effects([[0.1, 0.1, 0.1]]).loc[0, "d"])         # every topic the same difference


def hsd_brute_force(X, B, seed):
    "Carterette's randomized Tukey HSD, one trial and one topic at a time, from the same random stream."
    S, n = X.shape
    rng = np.random.default_rng(seed)
    obs = np.abs(X.mean(1)[:, None] - X.mean(1)[None, :])
    count = np.zeros((S, S))
    for _ in range(B):
        u = rng.random((n, S))
        Y = np.empty((n, S))
        for q in range(n):
            perm = np.argsort(u[q])
            for s in range(S): Y[q, s] = X[perm[s], q]
        m = Y.mean(0)
        count += (m.max() - m.min()) >= obs - 1e-12
    return count / B


def test_randomized_hsd_against_brute_force_loop():
    X = np.array([[0.5, 0.6, 0.2, 0.9], [0.3, 0.5, 0.3, 0.6], [0.2, 0.1, 0.3, 0.2]])
    ia, ib = np.triu_indices(3, 1)
    got = comparison_pvalues(X, ia, ib, test="hsd", B=300, seed=5)
    want = hsd_brute_force(X, 300, 5)[ia, ib]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_randomized_hsd_near_its_exact_permutation_distribution():
    X = np.array([[0.5, 0.6, 0.9], [0.3, 0.5, 0.6], [0.2, 0.1, 0.2]])
    S, n = X.shape
    ranges = []
    for perms in itertools.product(itertools.permutations(range(S)), repeat=n):     # all (3!)^3 relabellings
        m = np.array([[X[p[s], q] for s in range(S)] for q, p in enumerate(perms)]).mean(0)
        ranges.append(m.max() - m.min())
    ranges = np.array(ranges)
    ia, ib = np.triu_indices(S, 1)
    exact = [(ranges >= abs(X[a].mean() - X[b].mean()) - 1e-12).mean() for a, b in zip(ia, ib)]
    np.testing.assert_allclose(comparison_pvalues(X, ia, ib, test="hsd", B=20000, seed=0), exact, atol=0.015)


def letters_brute_force_ok(sig, L):
    "The definition: two systems share a letter exactly when they are not separated; each has a letter."
    sets = [set(x.split(",")) if "," in x or len(L) > 52 else set(x) for x in L]
    S = len(L)
    return all(sets[i] for i in range(S)) and all(bool(sets[i] & sets[j]) == (not sig[i, j])
                                                  for i in range(S) for j in range(S) if i != j)


@pytest.mark.parametrize("seed", range(40))
def test_letter_groups_definition(seed):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(2, 12))
    U = np.triu(rng.random((S, S)) < rng.random(), 1)
    sig = U | U.T
    L = compact_letters(sig, order=rng.permutation(S))
    assert letters_brute_force_ok(sig, L)


def test_letter_groups_small_cases_and_order():
    sig = np.zeros((4, 4), bool)
    sig[0, 3] = sig[3, 0] = True
    assert compact_letters(sig, order=[0, 1, 2, 3]) == ["a", "ab", "ab", "b"]
    assert compact_letters(sig, order=[3, 2, 1, 0]) == ["b", "ab", "ab", "a"]       # `a` holds the best
    # no transitivity: a chain A ≈ B ≈ C with A ≠ C
    chain = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], bool)
    assert compact_letters(chain) == ["a", "ab", "b"]
    # more than 52 groups: numbered, comma-separated, still exact
    S = 60
    assert letters_brute_force_ok(~np.eye(S, dtype=bool), compact_letters(~np.eye(S, dtype=bool)))


def test_leaderboard_pvalues_are_scipy_and_statsmodels_on_the_same_numbers():
    rng = np.random.default_rng(11)
    X = scores(rng, 5, 20)
    t = table(X)
    for test, corr in itertools.product(("t", "wilcoxon"), ("bonferroni", "holm", "bh", "none")):
        for baselines in ((), ("s0", "s3")):
            b = leaderboard_of_tables({"m": t}, test=test, correction=corr, baselines=baselines)
            c = b.comparisons
            f = (lambda x, y: stats.ttest_rel(x, y).pvalue) if test == "t" else (lambda x, y: stats.wilcoxon(x, y).pvalue)
            raw = [f(t.loc[s], t.loc[o]) for s, o in zip(c.system, c.other)]
            np.testing.assert_allclose(c.p, raw, rtol=1e-9)
            want = raw if corr == "none" else multipletests(raw, method={"bh": "fdr_bh"}.get(corr, corr))[1]
            np.testing.assert_allclose(c["p adjusted"], want, rtol=1e-9)
            assert (c.significant == (c["p adjusted"] < 0.05)).all()
            if not baselines: assert letters_brute_force_ok(
                np.array([[bool(c[((c.system == x) & (c.other == y)) | ((c.system == y) & (c.other == x))].significant.any())
                           for y in b.systems] for x in b.systems]), b.groups["m"].tolist())


def test_orientation_lower_is_better_ranks_first():
    qrels = pd.DataFrame({"query": [q for q in "123" for _ in range(4)], "doc": list("abcd") * 3,
                          "grade": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]})
    order = {"early": "abcd", "late": "dcba", "mid": "cbda"}
    runs = pd.DataFrame([(s, q, d, float(10 - r)) for s, o in order.items() for q in "123" for r, d in enumerate(o)],
                        columns=["system", "query", "doc", "score"])
    b = leaderboard(runs, qrels, ["ASL", "AP"], test="t", correction="none")
    asl = b.means["ASL"]
    assert b.higher_is_better == {"ASL": False, "AP": True}
    assert b.systems[0] == asl.idxmin() and b.systems[-1] == asl.idxmax()
    assert b.ranks()["ASL"][asl.idxmin()] == 1
    assert b.best()["ASL"] == [asl.idxmin()]
    assert "ASL: lower is better" in b.caption()
    # differences keep their sign; `better` follows the orientation
    c = b.comparisons.query("measure == 'ASL'")
    assert (c.better == (c["diff"] < 0)).all()


NASTY = ["bm25_base", "rm3 100%", "neural&co", "#4 $run", "a{b}~c^d\\e"]


def parse_latex_table(tex: str, n_measures: int) -> list:
    "Check a booktabs table's structure; return its body rows."
    body = re.sub(r"\\[{}&%$#_]", "", tex)                        # escaped characters out of the way
    depth = 0
    for ch in body:
        depth += (ch == "{") - (ch == "}")
        assert depth >= 0
    assert depth == 0, "unbalanced braces"
    assert body.count("$") % 2 == 0
    text = re.sub(r"\$[^$]*\$", "", body)                          # math out of the way
    for ch in "_%#":
        assert ch not in text, f"unescaped {ch!r}"
    lines = tex.splitlines()
    for rule in ("\\toprule", "\\midrule", "\\bottomrule"): assert lines.count(rule) == 1
    assert lines.index("\\toprule") < lines.index("\\midrule") < lines.index("\\bottomrule")
    assert any(l.startswith("\\begin{tabular}{l" + "r" * n_measures + "}") for l in lines)
    rows = lines[lines.index("\\midrule") + 1: lines.index("\\bottomrule")]
    for r in rows + [lines[lines.index("\\toprule") + 1]]:
        assert r.endswith(" \\\\")
        assert len(re.findall(r"(?<!\\)&", r)) == n_measures
    return rows


@pytest.mark.parametrize("baselines", [(), ("bm25_base", "rm3 100%")])
def test_latex_escapes_run_names_and_parses(baselines):
    rng = np.random.default_rng(2)
    X = scores(rng, len(NASTY), 12)
    b = leaderboard_of_tables({"P@10_rareness(alpha=0.5)": table(X, NASTY), "ASL": table(10 - 5 * X, NASTY, hib=False)},
                              baselines=baselines)
    tex = b.to_latex()
    rows = parse_latex_table(tex, 2)
    assert len(rows) == len(NASTY)
    assert [r.split(" & ")[0] for r in rows] == [
        {"bm25_base": r"bm25\_base", "rm3 100%": r"rm3 100\%", "neural&co": r"neural\&co", "#4 $run": r"\#4 \$run",
         "a{b}~c^d\\e": r"a\{b\}\textasciitilde{}c\textasciicircum{}d\textbackslash{}e"}[s] for s in b.systems]
    assert r"P@10\_rareness(alpha=0.5)" in tex
    cap = re.search(r"\\caption\{(.*)\}\n\\label", tex).group(1)
    assert "Benjamini–Hochberg" in cap and "Wilcoxon" in cap and "lower is better" in cap
    assert ("letter" in cap) == (not baselines)
    assert tex.count("\\textbf{") >= 2                               # the best value of each measure


def test_formats_hold_the_same_numbers(tmp_path):
    rng = np.random.default_rng(4)
    X = scores(rng, 4, 15)
    b = leaderboard_of_tables({"AP": table(X, NASTY[:4])}, baselines=["bm25_base"], test="t", correction="holm")
    f = b.to_frame()
    assert list(f.index) == b.systems and ("AP", "vs bm25_base: d") in f.columns
    csv = pd.read_csv(__import__("io").StringIO(b.to_csv()))
    np.testing.assert_allclose(csv["AP mean"], b.means["AP"])
    doc = json.loads(b.to_json())
    assert doc["settings"]["correction"] == "holm" and len(doc["comparisons"]) == 3
    assert [s["system"] for s in doc["systems"]] == b.systems
    md = b.to_markdown()
    assert "bm25\\_base" in md and "neural&co" in md and md.count("\n| ") >= 4 + 3
    assert str(b) == b.to_text() and set(FORMATS) == {"text", "markdown", "latex", "csv", "json"}
    for fmt in FORMATS: assert b.render(fmt)
    # atomic write: a symlink at the path is replaced, its target left alone
    target = tmp_path / "target.txt"
    target.write_text("keep")
    link = tmp_path / "board.tex"
    link.symlink_to(target)
    b.write(link)
    assert not link.is_symlink() and link.read_text().startswith("\\begin{table}") and target.read_text() == "keep"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]
    with pytest.raises(IsADirectoryError): write_text_atomic(tmp_path, "x")


def test_options_are_checked():
    t = table(np.random.default_rng(0).random((3, 5)))
    with pytest.raises(ValueError, match="family-wise"): leaderboard_of_tables({"m": t}, test="hsd", correction="holm")
    with pytest.raises(ValueError, match="did you mean 's1'"): leaderboard_of_tables({"m": t}, baselines=["S1"])
    with pytest.raises(ValueError): leaderboard_of_tables({"m": t}, test="anova")
    with pytest.raises(ValueError, match="sort"): leaderboard_of_tables({"m": t}, sort="AP")
    b = leaderboard_of_tables({"m": t}, test="hsd", B=100)
    assert b.correction == "none" and b.B == 100 and "relabellings" in b.caption()


def test_cli_choices_are_the_library_ones():
    assert set(cli.COMPARE_TESTS) == set(TESTS)
    assert set(cli.COMPARE_CORRECTIONS) == set(CORRECTIONS)
    assert set(cli.COMPARE_FORMATS) == set(FORMATS)


def irinnov(*args, cwd):
    assert IRINNOV.exists(), f"{IRINNOV} is missing: install the package with `pip install -e .`"
    env = {k: v for k, v in os.environ.items() if k not in ("IRINNOV_DEBUG", "IRINNOV_PROGRESS")}
    r = subprocess.run([str(IRINNOV), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(9)
    topics, docs = [str(q) for q in range(1, 9)], [f"d{i}" for i in range(8)]
    grades = {(q, d): int(rng.integers(0, 3)) for q in topics for d in docs}
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()))
    rd = tmp_path / "runs"
    rd.mkdir()
    for name, skill in {"bm25_base": 0.5, "rm3&x": 1.0, "neural": 3.0}.items():
        rows = []
        for q in topics:
            s = {d: skill * grades[(q, d)] + rng.normal() for d in docs}
            rows += [f"{q} Q0 {d} {r} {v!r} {name}\n" for r, (d, v) in enumerate(sorted(s.items(), key=lambda x: -x[1]), 1)]
        (rd / name).write_text("".join(rows))
    return tmp_path


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_compare_each_format(files, fmt):
    code, out, err = irinnov("compare", "qrels.txt", "runs", "-m", "AP,nDCG@10", "-m", "ASL", "--baseline", "bm25_base",
                             "--format", fmt, cwd=files)
    assert code == 0, err
    want = leaderboard(str(files / "runs"), str(files / "qrels.txt"), ["AP", "nDCG@10", "ASL"], baselines=["bm25_base"])
    assert out == want.render(fmt)
    if fmt == "json": assert len(json.loads(out)["systems"]) == 3
    if fmt == "csv": assert len(pd.read_csv(__import__("io").StringIO(out))) == 3
    if fmt == "latex": assert len(parse_latex_table(out, 3)) == 3


def test_cli_compare_options_and_output_file(files):
    code, out, err = irinnov("compare", "qrels.txt", "runs", "-m", "ASL", "-m", "AP", "--test", "hsd", "--permutations",
                             "200", "--sort", "map", "-l", "2", "-o", "board.tex", cwd=files)
    assert (code, out) == (0, ""), err
    tex = (files / "board.tex").read_text()
    assert "randomized Tukey HSD" in tex and "B = 200" in tex and "sorted by AP" in tex and "rel=2" in tex
    assert len(parse_latex_table(tex, 2)) == 3


@pytest.mark.parametrize("args,needle", [
    (["--baseline", "BM25_base"], "did you mean 'bm25_base'"),
    (["--baseline", "nothing"], "not one of the runs"),
    (["-m", "nDGC@10"], "unknown measure"),
    (["--test", "hsd", "--correction", "bh"], "family-wise"),
    (["--sort", "P@10"], "sort"),
    (["-o", "no-such-dir/board.tex"], "no such directory"),
])
def test_cli_compare_errors_are_one_line(files, args, needle):
    code, out, err = irinnov("compare", "qrels.txt", "runs", *args, cwd=files)
    assert code != 0 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("irinnov: error:") and needle in err, err
