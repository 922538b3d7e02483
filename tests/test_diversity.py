"""irinnov.diversity against the TREC Web track's own programs: ndeval (C) and gdeval.pl (Perl), built from
../shared/oracles in a temporary folder, on generated diversity campaigns and on Web 2012."""
import io
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irinnov.diversity import (NDEVAL_MEASURES, answered_topics, d_sharp_ndcg, gdeval, ndeval, ndeval_means, st_rpp,
                               read_ranked_run, rank_order, subtopic_judgments)
from irinnov.trec import prepare

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT.parent / "shared" / "oracles" / "ndeval"
MIRROR = Path(os.environ.get("IRINNOV_MIRROR", ROOT.parent / "shared" / "data"))
CC = shutil.which("gcc") or shutil.which("cc")
needs_ndeval = pytest.mark.skipif(not (ORACLE / "ndeval.c").exists() or CC is None,
                                  reason="ndeval needs ../shared/oracles/ndeval and a C compiler")
needs_perl = pytest.mark.skipif(not (ORACLE / "gdeval.pl").exists() or shutil.which("perl") is None,
                                reason="gdeval.pl needs ../shared/oracles/ndeval and perl")
needs_web = pytest.mark.skipif(not (MIRROR / "github" / "zuacubd" / "trec-web-track-2009-2014").is_dir(),
                               reason="the Web 2012 files are not in the mirror")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    "ndeval and gdeval.pl copies printing 17 significant digits (instead of 6 and 5), built in a temporary folder."
    d = tmp_path_factory.mktemp("ndeval")
    for f, fmt in (("ndeval.c", "%.6f"), ("gdeval.pl", "%.5f")):
        (d / f).write_text((ORACLE / f).read_text().replace(fmt, "%.17g"))
    subprocess.run([CC, "-O2", "-o", str(d / "ndeval"), str(d / "ndeval.c"), "-lm"], check=True, capture_output=True)
    return d


def _run_ndeval(binary, qrels_path, run_path, *flags) -> pd.DataFrame:
    out = subprocess.run([str(binary), *flags, str(qrels_path), str(run_path)], capture_output=True, text=True,
                         check=True).stdout
    return pd.read_csv(io.StringIO(out), dtype={"topic": str}, keep_default_na=False).set_index("topic")


def _write_qrels(q: pd.DataFrame, path: Path):
    "ndeval's qrels: negative grades given as 0 (ndeval refuses them), as the Web track did."
    q.assign(grade=q.grade.clip(lower=0))[["query", "subtopic", "doc", "grade"]].to_csv(path, sep=" ", header=False,
                                                                                           index=False)


def generated_campaign(rng, first_topic: int):
    """One small diversity campaign: ties in scores, topics some systems skip, runs topics missing from the qrels,
    documents relevant to several subtopics, subtopics without a relevant document, topics without any, negative
    and large grades, unjudged documents, ranks in an order unrelated to the scores."""
    nt = int(rng.integers(1, 5))
    topics = [str(first_topic + i) for i in range(nt)]
    qrows = []
    for t in topics:
        ns = int(rng.integers(1, 6))
        empty_topic = rng.random() < 0.12
        pool = [f"doc-{t}-{j:02d}" for j in range(int(rng.integers(3, 15)))]
        for s in range(1, ns + 1):
            sid = str(s * int(rng.integers(1, 3)))                                # gaps in subtopic ids
            if any(r[0] == t and r[1] == sid for r in qrows): continue
            dead = rng.random() < 0.2                                             # no relevant document
            for d in pool:
                if rng.random() < 0.6:
                    g = int(rng.choice([-2, 0, 0, 1, 1, 2, 3, 4])) if not (dead or empty_topic) else int(rng.choice([-2, 0]))
                    qrows.append((t, sid, d, g))
    if not qrows: qrows.append((topics[0], "1", f"doc-{topics[0]}-00", 1))
    qrels = pd.DataFrame(qrows, columns=["query", "subtopic", "doc", "grade"])
    rrows = []
    for s in range(int(rng.integers(1, 4))):
        for t in topics + [str(first_topic + 90)]:                             # the last one is not in the qrels
            if rng.random() < 0.15: continue                                   # this system skips the topic
            cand = sorted(set(qrels.doc[qrels["query"] == t])) + [f"unj-{t}-{j}" for j in range(6)]
            n = int(rng.integers(1, len(cand) + 1))
            docs = rng.choice(cand, n, replace=False)
            scores = rng.integers(0, 5, n) / 4.0                               # many ties
            ranks = rng.permutation(n) * 3 + 1
            rrows += [(f"s{s}", t, d, float(sc), int(rk)) for d, sc, rk in zip(docs, scores, ranks)]
    runs = pd.DataFrame(rrows, columns=["system", "query", "doc", "score", "rank"])
    return runs, qrels


def _check(mine: pd.Series, theirs: pd.Series, undefined: list) -> tuple[int, int]:
    "(values compared, mismatches); ndeval's nan (0/0 on a topic without relevant documents) must be our 0."
    th = pd.to_numeric(theirs.replace({"nan": np.nan, "-nan": np.nan}))
    nan = th.isna()
    undefined.append(int(nan.sum()))
    assert (mine[nan] == 0).all()
    d = (mine[~nan] - th[~nan]).abs()
    return len(d), int((d > 1e-9).sum())


@needs_ndeval
def test_ndeval_generated_campaigns(oracle, tmp_path):
    "≥ 200 generated campaigns, numbered apart so that one ndeval call per system and order scores them all."
    rng = np.random.default_rng(2026)
    camps = [generated_campaign(rng, 100 * (i + 1)) for i in range(220)]
    runs = pd.concat([r for r, _ in camps], ignore_index=True)
    qrels = pd.concat([q for _, q in camps], ignore_index=True)
    qpath = tmp_path / "qrels"
    _write_qrels(qrels, qpath)
    compared = bad = 0
    undefined = []
    for order in ("traditional", "rank"):
        base = runs if order == "traditional" else rank_order(runs)
        c = prepare(base[["system", "query", "doc", "score"]], qrels, score_dtype="float64")
        ours = ndeval(c)
        for s in sorted(runs.system.unique()):
            r = runs[runs.system == s]
            rpath = tmp_path / f"run-{s}"
            with open(rpath, "w") as f:
                f.writelines(f"{q} Q0 {d} {k} {sc!r} {s}\n" for q, d, k, sc in zip(r["query"], r["doc"], r["rank"], r["score"]))
            o = _run_ndeval(oracle / "ndeval", qpath, rpath, *(["-traditional"] if order == "traditional" else []))
            topics = [t for t in o.index if t != "amean" and t in c.topics]
            assert len(topics) == (answered_topics(c).loc[s]).sum()
            for m in NDEVAL_MEASURES:
                n, b = _check(ours[m].loc[s, topics], o.loc[topics, m], undefined)
                compared, bad = compared + n, bad + b
    assert compared > 20000 and bad == 0, (compared, bad)
    assert sum(undefined) > 0          # topics without relevant documents were generated (nNRBP = nan in ndeval)
    print(f"ndeval, generated campaigns: {compared} values compared, {bad} mismatches, "
          f"{sum(undefined)} nan (ours 0)")


@needs_ndeval
def test_ndeval_means_and_depth(oracle, tmp_path):
    "Averages without -c (topics in qrels and run), with -c (every qrels topic), and the -M depth cut, per campaign."
    rng = np.random.default_rng(7)
    checked = 0
    for i in range(40):
        runs, qrels = generated_campaign(rng, 100)
        qrels = qrels[qrels.grade.gt(0).groupby(qrels["query"]).transform("any")]   # ndeval's mean is nan otherwise
        if qrels.empty or not runs["query"].isin(qrels["query"]).any(): continue
        qpath = tmp_path / "qrels"
        _write_qrels(qrels, qpath)
        c = prepare(runs[["system", "query", "doc", "score"]], qrels, score_dtype="float64")
        for s in sorted(runs.system.unique()):
            r = runs[runs.system == s]
            if not r["query"].isin(qrels["query"]).any(): continue
            rpath = tmp_path / "run"
            with open(rpath, "w") as f:
                f.writelines(f"{q} Q0 {d} 0 {sc!r} {s}\n" for q, d, sc in zip(r["query"], r["doc"], r["score"]))
            cs = c.subset(systems=[s])
            for flags, mine in ((["-traditional"], ndeval_means(ndeval(cs), answered_topics(cs))),
                                (["-traditional", "-c"], ndeval_means(ndeval(cs))),
                                (["-traditional", "-M", "3"], ndeval_means(ndeval(cs, depth=3), answered_topics(cs)))):
                o = _run_ndeval(oracle / "ndeval", qpath, rpath, *flags)
                theirs = o.loc["amean", list(NDEVAL_MEASURES)].astype(float)
                assert np.allclose(mine.iloc[0][list(NDEVAL_MEASURES)].to_numpy(float), theirs.to_numpy(), atol=1e-9,
                                   rtol=0), (flags, s)
                checked += 1
    assert checked >= 40


@needs_ndeval
@needs_web
def test_ndeval_web2012(oracle, tmp_path):
    "The 8 Web 2012 baselines on the diversity qrels, per topic and mean, both orders."
    from irinnov.datasets import load
    ds = load("web2012", progress=False)
    qpath = tmp_path / "qrels"
    _write_qrels(ds.diversity_qrels, qpath)
    tabs = ndeval(prepare(ds.runs, ds.diversity_qrels, score_dtype="float64"))
    for s in sorted(ds.runs.system.unique()):
        r = ds.runs[ds.runs.system == s]
        rpath = tmp_path / "run"
        with open(rpath, "w") as f:
            f.writelines(f"{q} Q0 {d} {k} {sc!r} x\n" for k, (q, d, sc) in
                         enumerate(zip(r["query"], r["doc"], r["score"]), 1))
        o = _run_ndeval(oracle / "ndeval", qpath, rpath, "-traditional")
        topics = [t for t in o.index if t != "amean"]
        assert len(topics) == 50
        for m in NDEVAL_MEASURES:
            np.testing.assert_allclose(tabs[m].loc[s, topics].to_numpy(), o.loc[topics, m].to_numpy(float), atol=1e-9, rtol=0)
            assert abs(tabs[m].loc[s].mean() - float(o.loc["amean", m])) < 1e-9
        # rank order: ndeval's default reads the rank column, which read_ranked_run keeps
        ranked = read_ranked_run(rpath, system=s)
        mine = ndeval(prepare(ranked, ds.diversity_qrels))
        o = _run_ndeval(oracle / "ndeval", qpath, rpath)
        for m in NDEVAL_MEASURES:
            np.testing.assert_allclose(mine[m].loc[s, topics].to_numpy(), o.loc[topics, m].to_numpy(float), atol=1e-9, rtol=0)


@needs_perl
@needs_web
def test_gdeval_web2012(oracle, tmp_path):
    from irinnov.datasets import load
    ds = load("web2012", progress=False)
    qpath = MIRROR / "github" / "zuacubd" / "trec-web-track-2009-2014" / "2012" / "qrels.adhoc.txt"
    tabs = gdeval(prepare(ds.runs, ds.qrels, score_dtype="float64"))
    for s in sorted(ds.runs.system.unique()):
        r = ds.runs[ds.runs.system == s]
        rpath = tmp_path / "run"
        with open(rpath, "w") as f:
            f.writelines(f"{q} Q0 {d} 0 {sc!r} x\n" for q, d, sc in zip(r["query"], r["doc"], r["score"]))
        out = subprocess.run(["perl", str(oracle / "gdeval.pl"), str(qpath), str(rpath)], capture_output=True,
                             text=True, check=True).stdout
        o = pd.read_csv(io.StringIO(out), dtype={"topic": str}).set_index("topic")
        topics = [t for t in o.index if t != "amean"]
        for m, col in (("nDCG@20", "ndcg@20"), ("ERR@20", "err@20")):
            np.testing.assert_allclose(tabs[m].loc[s, topics].to_numpy(), o.loc[topics, col].to_numpy(float), atol=1e-9, rtol=0)
            assert abs(tabs[m].loc[s].mean() - float(o.loc["amean", col])) < 1e-9


def _brute_alpha_ndcg(ranking, judged, k, alpha=0.5):
    "α-nDCG@k by brute force: the best of all orderings of the judged documents as the ideal (small cases)."
    from itertools import permutations
    def dcg(lst):
        seen, tot = {}, 0.0
        for r, d in enumerate(lst[:k], 1):
            g = 0.0
            for s in judged.get(d, ()):
                g += (1 - alpha) ** seen.get(s, 0)
                seen[s] = seen.get(s, 0) + 1
            tot += g / np.log2(r + 1)
        return tot
    best = max(dcg(list(p)) for p in permutations(judged))
    return dcg(ranking) / best if best else 0.0


def test_alpha_ndcg_small_exact_ideal():
    "On small topics where the greedy ideal is optimal, α-nDCG equals the brute-force definition."
    judged = {"a": {"1", "2"}, "b": {"1"}, "c": {"3"}, "d": set(), "e": {"2", "3"}}
    q = pd.DataFrame([("1", s, d, 1) for d, ss in judged.items() for s in ss] + [("1", "1", "d", 0)],
                     columns=["query", "subtopic", "doc", "grade"])
    for ranking in (["a", "b", "c"], ["c", "e", "a", "d"], ["d", "b"], ["e", "a", "b", "c"]):
        runs = pd.DataFrame({"system": "S", "query": "1", "doc": ranking, "score": np.arange(len(ranking), 0, -1.0)})
        got = ndeval(runs, q)["alpha-nDCG@5"].iloc[0, 0]
        assert abs(got - _brute_alpha_ndcg(ranking, judged, 5)) < 1e-12


def test_bad_input():
    runs = pd.DataFrame({"system": "S", "query": "1", "doc": ["a"], "score": [1.0]})
    with pytest.raises(ValueError, match="subtopics=True"):
        ndeval(runs, pd.DataFrame({"query": ["1"], "doc": ["a"], "grade": [1]}))
    with pytest.raises(ValueError, match="duplicate rank"):
        rank_order(pd.DataFrame({"system": "S", "query": "1", "doc": ["a", "b"], "rank": [1, 1]}))


def test_read_ranked_run_errors(tmp_path):
    p = tmp_path / "run"
    p.write_text("1 Q0 a 1 0.5 x\n1 Q0 b 1 0.4 x\n")
    with pytest.raises(ValueError, match="duplicate rank"):
        read_ranked_run(p)
    p.write_text("1 Q0 a one 0.5 x\n")
    with pytest.raises(ValueError, match=r"run:1: rank .one. is not"):
        read_ranked_run(p)


def _brute_st_rpp(ra, rb, populations):
    "Diaz & Ferraro eq. 6 written out: Σ_t p(t) Σ_i (1/m_t) sgn(f^b_{i,t} − f^a_{i,t}), p(t) ∝ m_t, missing = ∞."
    total = sum(len(m) for m in populations.values())
    out = 0.0
    for members in populations.values():
        m = len(members)
        fa = sorted(r for r, d in enumerate(ra, 1) if d in members) + [np.inf] * m
        fb = sorted(r for r, d in enumerate(rb, 1) if d in members) + [np.inf] * m
        out += (m / total) * sum(np.sign(fb[i] - fa[i]) if fa[i] != fb[i] else 0.0 for i in range(m)) / m
    return out


@pytest.mark.parametrize("seed", range(25))
def test_st_rpp_both_backgrounds_brute_force(seed):
    "st_rpp with the union and with the ad hoc background equals eq. 6 computed pair by pair."
    rng = np.random.default_rng(seed)
    pool = [f"d{k}" for k in range(10)]
    rows, adhoc = [], []
    for s in ("1", "2", "3"):
        for d in pool:
            if rng.random() < 0.5: rows.append(("q", s, d, int(rng.choice([0, 1, 2]))))
    if not any(g > 0 for *_, g in rows): rows.append(("q", "1", "d0", 1))
    for d in pool:
        if rng.random() < 0.6: adhoc.append(("q", d, int(rng.choice([0, 1, 2]))))
    if not any(g > 0 for *_, g in adhoc): adhoc.append(("q", "d1", 1))
    qrels = pd.DataFrame(rows, columns=["query", "subtopic", "doc", "grade"])
    adhoc_q = pd.DataFrame(adhoc, columns=["query", "doc", "grade"])
    ranks = {n: list(rng.choice(pool, int(rng.integers(1, 9)), replace=False)) for n in ("A", "B")}
    runs = pd.DataFrame([(n, "q", d, float(len(r) - i)) for n, r in ranks.items() for i, d in enumerate(r)],
                        columns=["system", "query", "doc", "score"])
    subs = {s: set(g.doc[g.grade > 0]) for s, g in qrels.groupby("subtopic")}
    subs = {s: m for s, m in subs.items() if m}
    for bg, members in (("union", set(qrels.doc[qrels.grade > 0])), ("adhoc", set(adhoc_q.doc[adhoc_q.grade > 0]))):
        pops = dict(subs, **{"*": members})
        got = st_rpp(runs, qrels, background=bg, adhoc_qrels=adhoc_q).loc[("A", "B"), "q"]
        assert got == pytest.approx(_brute_st_rpp(ranks["A"], ranks["B"], pops), abs=1e-12), bg


@pytest.mark.parametrize("seed", range(20))
def test_d_sharp_ndcg_brute_force(seed):
    "D#-nDCG@k = γ I-rec@k + (1−γ) D-nDCG@k (Sakai & Song 2011) with uniform intent probabilities, written out."
    rng = np.random.default_rng(100 + seed)
    pool = [f"d{k}" for k in range(12)]
    rows = [("q", s, d, int(rng.choice([0, 1, 2, 3]))) for s in ("1", "2", "3", "4") for d in pool if rng.random() < 0.5]
    rows.append(("q", "1", "d0", 2))
    qrels = pd.DataFrame(rows, columns=["query", "subtopic", "doc", "grade"]).drop_duplicates(["subtopic", "doc"])
    ranking = list(rng.choice(pool, int(rng.integers(1, 12)), replace=False))
    runs = pd.DataFrame({"system": "S", "query": "q", "doc": ranking, "score": np.arange(len(ranking), 0, -1.0)})
    k, gamma = int(rng.integers(1, 10)), float(rng.choice([0.0, 0.5, 0.8]))
    for graded in (False, True):
        rel = qrels[qrels.grade >= 1]
        intents = sorted(rel.subtopic.unique())
        gain = lambda d: sum((r.grade if graded else 1) for r in rel[rel.doc == d].itertuples()) / len(intents)
        dcg = sum(gain(d) / np.log2(r + 1) for r, d in enumerate(ranking[:k], 1))
        ideal = sorted((gain(d) for d in set(qrels.doc)), reverse=True)[:k]
        idcg = sum(g / np.log2(r + 1) for r, g in enumerate(ideal, 1))
        irec = len(set(rel[rel.doc.isin(ranking[:k])].subtopic)) / len(intents)
        want = gamma * irec + (1 - gamma) * dcg / idcg
        got = d_sharp_ndcg(runs, qrels, k=k, gamma=gamma, graded=graded).iloc[0, 0]
        assert got == pytest.approx(want, abs=1e-12)
