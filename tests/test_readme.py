"""README.md is rendered from nbs/index.ipynb, its two commands are the Makefile's, and .ci/run runs the test one."""
import configparser, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_in_sync_with_index():
    r = subprocess.run([sys.executable, ".ci/readme.py", "--check"], cwd=ROOT)
    assert r.returncode == 0, "README.md differs from nbs/index.ipynb: run `python .ci/readme.py`"


def _blocks(text):
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def _targets(makefile: str) -> dict:
    "Each Makefile target with its recipe lines."
    out, cur = {}, None
    for line in makefile.splitlines():
        m = re.match(r"^([\w$().-]+(?:/[\w.-]+)*):", line)
        if m and not line.startswith("\t"): cur = m.group(1); out[cur] = [line]
        elif line.startswith("\t") and cur: out[cur].append(line.strip())
    return out


def test_readme_gives_two_commands_and_ci_runs_the_test_one():
    blocks = [b.strip() for b in _blocks((ROOT / "README.md").read_text())]
    assert blocks[:2] == ["make report", "make test"]
    ci = [l for l in (ROOT / ".ci" / "run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert ci[-1] == "make test"
    targets = _targets((ROOT / "Makefile").read_text())
    assert any("irinnov report --dataset trec-covid-round1" in l for l in targets["report"])
    test = targets["test"]
    assert "chromium" in test[0] and "test-floor" in test[0]
    assert any("python -m pytest" in l and "--nbval" in l and "tests nbs" in l and "$(XDIST)" in l for l in test)
    assert any("apt-get install -y -qq chromium" in l for l in targets["chromium"])
    # two workers, a file (a notebook and its kernel) per worker, in the order tests/conftest.py gives
    xdist = re.search(r"^XDIST\s*:= (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    assert xdist[:4] == ["-n", "2", "--dist", "loadfile"] and "--no-loadscope-reorder" in xdist
    floor = " ".join(targets["test-floor"])
    assert "-m floor tests" in floor and "$(XDIST)" in floor


def test_floor_selection_names_existing_tests():
    "Every file and test that tests/conftest.py's FLOOR names exists (a renamed test would silently join the floor run)."
    import ast, importlib.util
    spec = importlib.util.spec_from_file_location("tests_conftest", ROOT / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    FIRST, FLOOR = conftest.FIRST, conftest.FLOOR
    for name, left_out in FLOOR.items():
        tree = ast.parse((ROOT / name).read_text())
        tests = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")}
        missing = {t for t in left_out if t.split("[")[0] not in tests}
        assert not missing, f"{name}: FLOOR leaves out tests that are not there: {sorted(missing)}"
    assert all((ROOT / name).is_file() for name in FIRST), "FIRST names a file that is not there"


def test_floor_pins_are_the_declared_floors():
    cfg = configparser.ConfigParser(delimiters=["="])
    cfg.read(ROOT / "settings.ini")
    floors = dict(r.split(">=") for r in cfg["DEFAULT"]["requirements"].split())
    pins = re.search(r"^FLOOR_PINS := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    pinned = dict(p.split("==") for p in pins)
    assert set(pinned) == set(floors)
    for name, floor in floors.items():
        assert tuple(map(int, pinned[name].split("."))) [:len(floor.split("."))] == tuple(map(int, floor.split("."))), name
    py = cfg["DEFAULT"]["min_python"]
    assert "pandas>=3" in cfg["DEFAULT"]["requirements"] and py == "3.11"   # pandas 3 needs Python 3.11
