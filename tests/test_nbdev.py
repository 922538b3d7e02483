"""The library is in sync with the notebooks, and nbdev's own notebook test passes."""
import shutil, subprocess, sys, filecmp
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bin(name):
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.exists() else name


def _snapshot():
    "The library's modules and its package data (irinnov/data/: the pinned-source manifests, which nbdev_export must keep)."
    files = [*(ROOT / "irinnov").rglob("*.py"), *(p for p in (ROOT / "irinnov" / "data").rglob("*") if p.is_file())]
    return {p.relative_to(ROOT): p.read_bytes() for p in sorted(files)}


def test_nbdev_export_leaves_library_unchanged():
    before = _snapshot()
    subprocess.run([_bin("nbdev_export")], cwd=ROOT, check=True, capture_output=True)
    after = _snapshot()
    changed = sorted(str(p) for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert any(p.parts[:2] == ("irinnov", "data") for p in before), "no package data under irinnov/data"
    assert not changed, f"irinnov/ is out of sync with nbs/ (run nbdev_export): {changed}"


def test_nbdev_test_passes():
    r = subprocess.run([_bin("nbdev_test"), "--n_workers", "2", "--timing"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"nbdev_test failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"


def test_notebooks_are_clean():
    import json
    dirty = []
    for nb in sorted((ROOT / "nbs").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        if any(c.get("execution_count") for c in cells if c["cell_type"] == "code"):
            dirty.append(nb.name)
    assert not dirty, f"run nbdev_clean on: {dirty}"


def test_no_cell_mixes_imports_with_other_code():
    """nbdev's doc processor executes every cell that imports something; such a cell must do nothing else, or
    building the documentation re-runs data loading (and fails where the data is not at hand)."""
    import ast, json
    directives = {"export", "exports", "exporti", "exec_doc"}
    mixed = []
    for nb in sorted((ROOT / "nbs").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
            if cell["cell_type"] != "code": continue
            src = "".join(cell["source"])
            dirs = {l[2:].strip().split(":")[0].split()[0] for l in src.splitlines() if l.startswith("#|") and l[2:].strip()}
            if dirs & directives or "eval: false" in src: continue
            code = "\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("!", "%", "#|")))
            nodes = list(ast.walk(ast.parse(code)))
            if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes) and \
               any(isinstance(n, (ast.Expr, ast.Assign)) for n in nodes):
                mixed.append(f"{nb.name} cell {i}")
    assert not mixed, f"put imports in cells of their own: {mixed}"
