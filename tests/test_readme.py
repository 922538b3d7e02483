"""README.md is rendered from nbs/index.ipynb, and .ci/run runs exactly the README's test command."""
import re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_in_sync_with_index():
    r = subprocess.run([sys.executable, ".ci/readme.py", "--check"], cwd=ROOT)
    assert r.returncode == 0, "README.md differs from nbs/index.ipynb: run `python .ci/readme.py`"


def _blocks(text):
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_ci_runs_readme_commands():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    setup, main_job, tests = _blocks(readme)[:3]
    venv, browser = setup.splitlines()[:2]
    assert venv.replace("pip install -e", "pip install -q -e") in ci
    assert "apt-get install" in browser and "chromium" in browser and "apt-get install -y -qq chromium" in ci
    assert tests.strip() in ci.splitlines()[-1]
    assert "python -m pytest" in tests and "--nbval" in tests
