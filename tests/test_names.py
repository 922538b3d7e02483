"""One namer: every method names its table through `irinnov.names.measure_name`, so a table computed by its method
function carries the name the registry prints for the same measure, and no other module writes a measure's name."""
import ast
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irinnov import asl, classic, infotheory, novelty, rareness, rpp
from irinnov.measures import measure_of, parse_measure
from irinnov.names import REGISTRY, TABLES, name_of
from irinnov.trec import prepare

PKG = Path(__file__).resolve().parents[1] / "irinnov"


@pytest.fixture(scope="module")
def c():
    rng = np.random.default_rng(7)
    runs, qrels = [], []
    for q in range(3):
        grades = rng.choice([0, 0, 1, 1, 2], size=25)
        qrels += [(f"t{q}", f"d{d:02d}", int(g)) for d, g in enumerate(grades)]
        for s in range(5):
            score = grades * (0.5 + 0.1 * s) + rng.normal(size=25)
            runs += [(f"s{s}", f"t{q}", f"d{d:02d}", float(x)) for d, x in enumerate(score)]
    return prepare(pd.DataFrame(runs, columns=["system", "query", "doc", "score"]),
                   pd.DataFrame(qrels, columns=["query", "doc", "relevance"]))


def method_tables(c, t: int) -> list:
    "(the method function's table, the registry's Measure of the same measure) at relevance level t."
    m = lambda *a, **kw: measure_of(*a, threshold=t, **kw)
    out = [(classic.precision(c, k=5, threshold=t), m("P", 5)), (classic.recall(c, k=10, threshold=t), m("R", 10)),
           (classic.average_precision(c, threshold=t), m("AP")),
           (classic.average_precision(c, depth=10, threshold=t), m("AP", 10)),
           (classic.reciprocal_rank(c, threshold=t), m("RR")), (classic.r_precision(c, threshold=t), m("R-prec")),
           (classic.bpref(c, threshold=t), m("bpref")), (classic.ndcg(c, k=10), measure_of("nDCG", 10)),
           (classic.ndcg(c), measure_of("nDCG"))]
    for p, graded in ((0.8, False), (0.5, True)):
        out.append((classic.rbp(c, p=p, graded=graded, threshold=t), m("RBP", p=p, graded=graded)))
    for normalized in (False, True):
        for a in (0.5, 1):
            out.append((rareness.precision_rareness(c, k=10, alpha=a, normalized=normalized, threshold=t),
                        m("P_rareness", 10, alpha=a, normalized=normalized)))
            out.append((rareness.ap_rareness(c, k=None, alpha=a, normalized=normalized, threshold=t),
                        m("AP_rareness", alpha=a, normalized=normalized)))
    for kw in ({}, {"base": math.e, "log0": "penalty"}, {"leave_one_out": False, "k": 10}, {"base": 10, "log0": "literal"}):
        opts = {"base": float(kw.get("base", 2)), "log0": kw.get("log0", "zero"), "loo": kw.get("leave_one_out", True)}
        out.append((novelty.utility(c, threshold=t, **kw), m("U", kw.get("k"), **opts)))
    for w, name in (("uniform", "RPP"), ("dcg", "dcgRPP"), ("inverse", "invRPP")):
        for graded in (True, False):
            out.append((rpp.preferences(c, weighting=w, graded=graded, threshold=t), m(name, graded=graded)))
    for n, pad in ((None, None), (5, None), (None, 100), (5, 100)):
        out.append((asl.asl(c, n=n, pad_to=pad, threshold=t), m("ASL", n, pad=pad)))
    for depth, graded in ((None, True), (10, False)):
        out.append((infotheory.ric(c, depth=depth, graded=graded, threshold=t), m("RIC", depth, graded=graded)))
    return out


@pytest.mark.parametrize("t", [1, 2])
def test_every_method_names_its_table_as_the_registry(c, t):
    "A method function's table carries the registry's canonical name of the same measure (and that name parses back)."
    pairs = method_tables(c, t)
    families = {m.definition.family for _, m in pairs}
    assert families == {"classic", "rareness", "novelty", "rpp", "asl", "ric"}
    for table, m in pairs:
        assert table.attrs["measure"] == m.name, (table.attrs["measure"], m.name)
        assert parse_measure(m.name) == m, m.name


def test_the_other_tables_are_named_by_the_same_function(c):
    "Tables outside the registry (needed depth, OI, joint RIC, ID, st-RPP, signed RIC) are named from their declarations."
    assert asl.needed_depth(c, n=5, threshold=2).attrs["measure"] == name_of("depth", 5, rel=2) == "depth@g1-5(rel=2)"
    assert infotheory.joint_ric(c, systems=["s0", "s1"], depth=10).attrs["measure"] == name_of("joint RIC", 10)
    assert infotheory.ric(c, signed=True, graded=False).attrs["measure"] == "RIC(graded=0, signed=1)"
    oi = rpp.offline_interleaving(c, a="s0", b="s1", user="dcg")
    assert oi.attrs["measure"] == name_of("OI", user="dcg") == "OI(user=dcg)"
    assert rpp.rpp_name("dcg", subtopics=True, threshold=2) == name_of("st-dcgRPP", rel=2) == "st-dcgRPP(rel=2)"
    assert {d.name for d in TABLES.values()} >= {"depth", "OI", "joint RIC", "ID", "st-RPP", "RIC"}


def test_public_namers_are_the_one_namer():
    "rareness_name, utility_name and rpp_name (kept for users' scripts) give what name_of gives."
    for which in ("P", "AP"):
        for k, a, nz, t in ((10, 0.5, False, 1), (100, 1, True, 2), (5, 0.25, True, 1)):
            assert rareness.rareness_name(which, k=k, alpha=a, normalized=nz, threshold=t) == \
                name_of(f"{which}_rareness", k, alpha=a, normalized=nz, rel=t)
    assert rareness.rareness_name("AP", k=None, alpha=1, threshold=2) == "AP_rareness(alpha=1, rel=2)"
    assert novelty.utility_name(k=100, base=math.e, log0="penalty", leave_one_out=False, threshold=2) == \
        name_of("U", 100, base=math.e, log0="penalty", loo=False, rel=2) == "U@100(base=e, log0=penalty, loo=0, rel=2)"
    assert [rpp.rpp_name(w, graded=False) for w in rpp.WEIGHTINGS] == ["RPP(graded=0)", "dcgRPP(graded=0)", "invRPP(graded=0)"]


def test_no_other_module_writes_a_measure_name():
    """Outside irinnov.names, no function is a private namer (`_name`, `_measure`, `_oi_name`, `_base_name`), and no
    f-string writes a measure's options (`rel=`, `graded=`, `_rareness(`, ...)."""
    allowed = {"names"}
    bad = []
    for p in sorted(PKG.rglob("*.py")):
        mod = ".".join(p.relative_to(PKG).with_suffix("").parts)
        if mod in allowed or mod == "_modidx": continue
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (
                    "_name", "_measure", "_oi_name", "_base_name"):
                bad.append(f"{mod}.{node.name}")
            if isinstance(node, ast.JoinedStr):        # an f-string writing rel={...}, graded={...}, ..._rareness(
                parts = node.values
                for a, b in zip(parts, parts[1:] + [None]):
                    text = a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else ""
                    if "_rareness(" in text or (isinstance(b, ast.FormattedValue) and text.endswith(
                            ("rel=", "graded=", "signed=", "pad=", "user=", "base=", "loo="))):
                        bad.append(f"{mod}:{node.lineno}: {text!r}")
    assert bad == [], "measure names written outside irinnov.names: " + "; ".join(bad)


def test_every_registry_declaration_is_named_by_measure_name():
    "The registry's Measure.name is irinnov.names.measure_name (one namer), for every declaration."
    from irinnov.names import measure_name
    for d in REGISTRY.values():
        cut = {"": None, "k": 10, "k?": None, "r": 0.5, "g1-n?": 10}[d.cutoff]
        m = measure_of(d.name, cut)
        assert m.name == measure_name(d, cut, m.options)
