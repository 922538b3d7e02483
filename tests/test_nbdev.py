"""The library is in sync with the notebooks, and nbdev's own notebook test passes."""
import shutil, subprocess, sys, filecmp
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bin(name):
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.exists() else name


def _snapshot():
    return {p.relative_to(ROOT): p.read_bytes() for p in sorted((ROOT / "irinnov").rglob("*.py"))}


def test_nbdev_export_leaves_library_unchanged():
    before = _snapshot()
    subprocess.run([_bin("nbdev_export")], cwd=ROOT, check=True, capture_output=True)
    after = _snapshot()
    changed = sorted(str(p) for p in set(before) | set(after) if before.get(p) != after.get(p))
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
