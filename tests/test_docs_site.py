"""The offline documentation site builds, and every page renders in headless Chromium.

Checks per page: the title is there, every figure image loads, no cell shows an error or a traceback,
math is typeset by the local MathJax (no CDN), and the pages link to each other.
"""
import os
import shutil
from pathlib import Path

import pytest

from docsite import build, sidebar

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    return build(out)


def test_site_has_a_page_per_notebook(site):
    expected = {Path(n).stem for _, names in sidebar() for n in names}
    assert {p.stem for p in site} == expected
    assert "index" in expected


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CI"): pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium not installed: apt-get install chromium")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"])
        yield b
        b.close()


def test_every_page_renders(site, browser):
    stems = {p.stem for p in site}
    problems = []
    for page_path in site:
        page = browser.new_page()
        external = []
        page.on("request", lambda r: external.append(r.url) if not r.url.startswith(("file:", "data:", "about:")) else None)
        page.goto(page_path.as_uri(), wait_until="load")
        # let the local MathJax finish typesetting (if the page has math)
        page.wait_for_function("!window.MathJax || !window.MathJax.Hub || window.MathJax.Hub.queue.pending === 0",
                               timeout=30000)
        page.wait_for_timeout(200)
        name = page_path.name
        title = page.locator("h1.irinnov-title").inner_text().strip()
        if not title: problems.append(f"{name}: no title")
        if not page.title().strip(): problems.append(f"{name}: empty <title>")
        broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length")
        if broken: problems.append(f"{name}: {broken} image(s) did not load")
        shown_errors = page.evaluate("""(document.body.innerText.includes('Traceback (most recent call last)') ? 1 : 0)
            + document.querySelectorAll("[data-mime-type='application/vnd.jupyter.error']").length""")
        if shown_errors: problems.append(f"{name}: a cell shows an error")
        links = page.evaluate("Array.from(document.querySelectorAll('a.irinnov-page')).map(a => a.getAttribute('href'))")
        targets = {l.split('#')[0][:-5] for l in links if l.endswith('.html') or '.html#' in l}
        if not stems <= targets: problems.append(f"{name}: navigation misses {sorted(stems - targets)}")
        raw_math = page.evaluate("document.querySelectorAll('.MathJax_Error, .MathJax_CHTML_Error').length")
        if raw_math: problems.append(f"{name}: {raw_math} MathJax error(s)")
        if external: problems.append(f"{name}: fetched from the network: {external[:3]}")
        page.close()
    assert not problems, "\n".join(problems)


def test_math_is_typeset_locally(site, browser):
    page = browser.new_page()
    page.goto((site[0].parent / "index.html").as_uri(), wait_until="load")
    has_mathjax = page.evaluate("typeof window.MathJax !== 'undefined'")
    page.close()
    assert has_mathjax, "MathJax did not load from the local copy"


# the paper each method page is built on: its first author must be cited on the page
CITED = {"10_rareness": "Türkmen", "11_novelty": "Fujii", "12_rpp": "Diaz", "13_asl": "Alex", "14_infotheory": "Golbus"}


def test_every_page_has_a_summary_and_methods_cite_their_paper(site):
    problems = []
    for page in site:
        text = page.read_text()
        if 'class="irinnov-description"' not in text: problems.append(f"{page.name}: no one-line summary")
        author = CITED.get(page.stem)
        if author and author not in text: problems.append(f"{page.name}: does not cite {author}")
    assert not problems, "\n".join(problems)


def test_sidebar_groups_start_methods_tools():
    sections = dict(sidebar())
    assert list(sections) == ["Start", "Methods", "Tools"]
    assert sections["Start"] == ["index.ipynb"]
    assert sections["Methods"] == [f"{n}.ipynb" for n in CITED]
