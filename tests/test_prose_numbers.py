"""Numbers quoted in the experiment notebooks' prose are the numbers their stored outputs print.

Every number written with four decimals in a Markdown cell (0.7943, .9211) must be, rounded to four decimals, a number
printed by a code cell of the same notebook. Differences and other values the prose derives from the outputs are
listed below with the notebook they belong to; anything else is a quote that went stale when the outputs changed.
Cells marked `#| cpu_dependent` (18_rpp_recsys) are covered too: nbval does not compare their outputs with a fresh run,
but the prose quotes the outputs stored on the page, so it must follow them whenever they are re-executed.
"""
import json
import re
from pathlib import Path

import pytest

NBS = Path(__file__).resolve().parent.parent / "nbs"

DERIVED = {   # notebook: four-decimal numbers the prose computes from the outputs (differences), not quotes
    "10_rareness_experiments.ipynb": {"0.0006"},
    "12_rpp_experiments.ipynb": {".0105"},
    "17_diversity_experiments.ipynb": {"0.0005"},
    "18_rpp_recsys.ipynb": {".0008", ".0147"},
    "21_campaigns.ipynb": {"0.0002", "0.0004", "0.0012", "0.0098", "0.0091"},
}
ELSEWHERE = {   # notebook: {number: the notebook whose outputs print it}, for the prose that quotes a sibling notebook
    "21_campaigns.ipynb": {"0.9875": "10_rareness_experiments.ipynb", "0.9947": "10_rareness_experiments.ipynb",
                           "0.7943": "14_infotheory_experiments.ipynb", "0.8574": "14_infotheory_experiments.ipynb"},
}
NOTEBOOKS = ["10_rareness_experiments.ipynb", "11_novelty_experiments.ipynb", "12_rpp_experiments.ipynb",
             "13_asl_experiments.ipynb", "14_infotheory_experiments.ipynb", "17_diversity_experiments.ipynb",
             "18_rpp_recsys.ipynb", "21_campaigns.ipynb"]
QUOTED = re.compile(r"(?<![\w./])-?(\d*\.\d{4})(?![\d/])")   # not inside a URL or DOI (10.1145/...)
PRINTED = re.compile(r"\d*\.\d+")


def _outputs(nb: dict) -> str:
    out = []
    for c in nb["cells"]:
        for o in c.get("outputs", []) if c["cell_type"] == "code" else []:
            for t in (o.get("text"), o.get("data", {}).get("text/plain"), o.get("data", {}).get("text/html")):
                if t: out.append("".join(t) if isinstance(t, list) else t)
    return "\n".join(out)


def _printed(name: str) -> set:
    return {round(float(x), 4) for x in PRINTED.findall(_outputs(json.loads((NBS / name).read_text())))}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_prose_quotes_the_stored_outputs(name):
    nb = json.loads((NBS / name).read_text())
    printed = _printed(name)
    assert printed, f"{name}: no stored outputs (execute the notebook first)"
    elsewhere = ELSEWHERE.get(name, {})
    stale = [(i, q) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"
             for q in QUOTED.findall("".join(c["source"])) if q not in DERIVED.get(name, set())
             and round(float(q), 4) not in (_printed(elsewhere[q]) if q in elsewhere else printed)]
    assert not stale, f"{name}: numbers in the prose that no output prints (cell, number): {stale}"


def test_the_check_catches_a_stale_quote():
    printed = {round(float(x), 4) for x in PRINTED.findall("RIC vs MAP   0.8352  0.9540")}
    assert round(float("0.7943"), 4) not in printed and round(float(".8352"), 4) in printed
