"""The package's structure: no import cycle, nothing imports a layer above it, and the command line is the only
place that parses arguments. Read from the source with `ast` (function-level imports count too), nothing is run."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "irinnov"

# The layers, bottom up: a module may import its own layer or the layers below it, never one above.
LAYERS = [
    ("core: reading", {"core", "core.read"}),          # (`core`: the package's empty __init__)
    ("core: trec_eval's order", {"core.order"}),
    ("core: the dense arrays", {"core.arrays"}),
    ("core: the campaign", {"core.campaign"}),
    ("core: encoding", {"core.encode"}),
    ("core", {"trec", "conventions"}),
    ("names", {"names"}),
    ("kernels", {"classic", "gap", "meta", "rareness", "novelty", "rpp", "lexicographic", "asl", "infotheory", "diversity", "fusion"}),
    ("registry", {"measures"}),
    ("trec_eval", {"metrics"}),
    ("data", {"datasets"}),
    ("analysis", {"report.model", "report.plots", "report.html", "report", "recsys", "leaderboard", "reusability", "experiments.rareness",
                  "experiments.novelty", "experiments.rpp", "experiments.asl", "experiments.infotheory", "experiments"}),
    ("scale", {"scale"}),
    ("command line", {"cli", "__main__"}),
]
LAYER = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}
SKIP = {"_modidx", "__init__"}


def modules() -> dict:
    "module name (relative to irinnov, dotted) -> path"
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).with_suffix("")
        name = ".".join(rel.parts)
        if rel.name in SKIP and len(rel.parts) == 1: continue
        out[name.removesuffix(".__init__")] = p
    return out


def imports_of(name: str, path: Path, known: set) -> set:
    "The irinnov modules `name` imports anywhere in its body (module-level and inside functions)."
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.rsplit(".", 1)[0] if "." in name else ""
    if path.name == "__init__.py": package = name
    found = set()
    def add(target: str):
        target = target.removeprefix("irinnov.").removeprefix("irinnov")
        while target and target not in known and "." in target: target = target.rsplit(".", 1)[0]
        if target in known and target != name: found.add(target)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "irinnov" or a.name.startswith("irinnov."): add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join(base + ([node.module] if node.module else []))
                if node.module: add(mod)
                else:
                    for a in node.names: add(".".join(base + [a.name]))
            elif node.module and (node.module == "irinnov" or node.module.startswith("irinnov.")):
                if node.module == "irinnov":
                    for a in node.names: add(a.name)
                else:
                    add(node.module)
                    for a in node.names: add(f"{node.module}.{a.name}")
    return found


def graph() -> dict:
    mods = modules()
    known = set(mods)
    return {m: imports_of(m, p, known) for m, p in mods.items()}


def cycles(g: dict) -> list:
    "Strongly connected components with more than one module (Tarjan)."
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in sorted(g):
        if v not in index: visit(v)
    return out


def test_the_graph_is_read():
    "The reader finds the imports it must (a broken reader would make the other tests pass vacuously)."
    g = graph()
    assert "core.encode" in g["conventions"] and "measures" in g["metrics"] and "classic" in g["measures"]
    assert "core.read" in g["core.order"] and "core.campaign" in g["core.encode"] and "core.encode" in g["trec"]
    assert {"names"} <= g["classic"] & g["rareness"] & g["measures"]
    assert {"measures", "metrics", "report"} <= g["cli"]
    assert sum(map(len, g.values())) > 40


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_cycle_detector_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_has_a_layer():
    assert sorted(m for m in graph() if m not in LAYER) == []


def test_nothing_imports_upward():
    g = graph()
    upward = sorted((m, t) for m, ts in g.items() for t in ts if LAYER[t] > LAYER[m])
    assert upward == [], "imports of a layer above: " + ", ".join(f"{m} -> {t}" for m, t in upward)


def test_the_report_package_is_layered():
    "Inside the analysis layer the report has an order of its own: the model, its figures, its HTML page, the re-exports."
    g = graph()
    order = ["report.model", "report.plots", "report.html", "report"]
    upward = sorted((m, t) for i, m in enumerate(order) for t in g[m] if t in order[i + 1:])
    assert upward == [], "imports of a later part of the report: " + ", ".join(f"{m} -> {t}" for m, t in upward)
    assert {"meta", "rpp"} <= g["report.model"]            # imported on first call, and still in the graph
    assert {"report.model", "report.plots"} <= g["report.html"] and "report.model" in g["scale"]


@pytest.mark.parametrize("name", sorted(set(modules()) - {"cli"}))
def test_only_the_command_line_parses_arguments(name):
    tree = ast.parse(modules()[name].read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in n.names} | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "argparse" not in names, f"irinnov.{name} imports argparse: command-line code belongs in irinnov.cli"


def test_the_library_imports_the_core_directly():
    "`irinnov.trec` is the users' compatibility path; the library's own modules import `irinnov.core.*`."
    g = graph()
    assert [m for m, deps in g.items() if "trec" in deps] == []
