"""Render README.md from nbs/index.ipynb (markdown cells verbatim, code as fenced blocks, text outputs).

Quarto (which `nbdev_readme` needs) cannot be installed on our machines, so this small renderer keeps the
README in sync with the home notebook; tests/test_readme.py checks that it is.
Usage: python .ci/readme.py [--check]
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def render() -> str:
    nb = json.loads((ROOT / "nbs" / "index.ipynb").read_text())
    out = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            # links between notebooks are relative to nbs/ on the site; the README sits one folder up
            out.append(re.sub(r"\]\((\w+\.ipynb(#[^)]*)?)\)", r"](nbs/\1)", src.strip()))
            continue
        lines = [l for l in src.splitlines() if not l.startswith("#|")]
        if any(l.startswith("#| hide") for l in src.splitlines()) or not "".join(lines).strip():
            continue
        out.append("```python\n" + "\n".join(lines).strip() + "\n```")
        for o in cell.get("outputs", []):
            text = None
            if o.get("output_type") == "stream":
                text = "".join(o["text"])
            elif "data" in o and "text/plain" in o["data"] and not any(k.startswith("image/") for k in o["data"]):
                text = "".join(o["data"]["text/plain"])
            if text and text.strip():
                out.append("```\n" + text.rstrip() + "\n```")
    return "\n\n".join(out) + "\n"


if __name__ == "__main__":
    text = render()
    readme = ROOT / "README.md"
    if "--check" in sys.argv:
        sys.exit(0 if readme.read_text() == text else 1)
    readme.write_text(text)
