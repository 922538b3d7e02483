"""The offline documentation site builds, and every page renders in headless Chromium.

Checks per page: the title is there, every figure image loads, no cell shows an error or a traceback,
math is typeset by the local MathJax (no CDN), and the pages link to each other.
"""
import re
from pathlib import Path

import pytest

from docsite import build, sidebar
from loopback import chromium, serve

ROOT = Path(__file__).resolve().parents[1]


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
    with chromium() as b: yield b


@pytest.fixture(scope="module")
def served(site):
    "The site served over HTTP on the loopback interface, as a reader (or `python -m http.server`) would see it."
    with serve(site[0].parent) as url: yield url


# MathJax 2 probes whether web fonts load with a font face whose source is about:blank; that request always fails
# by design and is not a missing file
_PROBE = "about:blank"
_TEX = re.compile(r"(?<![\\$])\$[^$\n]{1,200}\$|\\\(|\\\[")
_JARGON = re.compile(r"\bSPEC\b|\bthe issue\b|\bthe issue's\b")   # our working notes, which readers do not have


def _visible_text(page) -> str:
    "The page's text outside code blocks and outputs of code (where `$` and `#|` may legitimately appear)."
    return page.evaluate("""() => { const c = document.body.cloneNode(true);
        c.querySelectorAll('pre, code, .jp-InputArea, .jp-OutputArea-output pre, script, style').forEach(e => e.remove());
        return c.innerText; }""")


_MD_FRAGMENT = re.compile(r"\[`?[\w.]+`?\]\([^)\s]+\)")   # a Markdown link left as text, e.g. [`preferences`](https://...)
_BUILD_NOTES = re.compile(r"IRINNOV_\w*FULL\w*|\btests/\w+\.py")   # switches of the build, the test suite's files


def test_every_page_renders(site, served, browser):
    stems = {p.stem for p in site}
    problems, internal, anchors = [], [], {}
    for page_path in site:
        name = page_path.name
        source = page_path.read_text()
        page = browser.new_page()
        external, failed, console = [], [], []
        page.on("request", lambda r: external.append(r.url)
                if not r.url.startswith((served, "data:", "about:")) else None)
        page.on("requestfailed", lambda r: failed.append(r.url) if r.url != _PROBE else None)
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.on("console", lambda m: console.append(m.text)
                if m.type == "error" and _PROBE not in m.text and "Failed to load resource" not in m.text else None)
        page.on("pageerror", lambda e: console.append(str(e)))
        page.goto(f"{served}/{name}", wait_until="load")
        # let the local MathJax finish typesetting (if the page has math)
        page.wait_for_function("!window.MathJax || !window.MathJax.Hub || window.MathJax.Hub.queue.pending === 0",
                               timeout=60000)
        page.wait_for_timeout(200)
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
        mj_errors = page.evaluate("document.querySelectorAll('.MathJax_Error, .MathJax_CHTML_Error, merror').length")
        if mj_errors: problems.append(f"{name}: {mj_errors} MathJax error(s)")
        # formulas are typeset: a page whose notebook holds TeX shows MathJax nodes and no raw $...$ in its prose
        text = _visible_text(page)
        typeset = page.evaluate("document.querySelectorAll('.MathJax, .MathJax_Display').length")
        if "$" in re.sub(r"<(pre|code|script)[^>]*>.*?</\1>", "", source, flags=re.S) and typeset == 0:
            problems.append(f"{name}: the page holds TeX but no formula was typeset")
        raw = _TEX.findall(text)
        if raw: problems.append(f"{name}: {len(raw)} formula(s) left as raw TeX, e.g. {raw[0]!r}")
        # no build material and no working notes on the page
        if "#|" in text or re.search(r"#\| (echo|output|export|hide)", page.evaluate("document.body.innerText")):
            problems.append(f"{name}: nbdev cell directives shown")
        if '{target="_blank"' in page.evaluate("document.body.innerText"): problems.append(f"{name}: Quarto attributes shown")
        jargon = _JARGON.findall(text)
        if jargon: problems.append(f"{name}: internal references shown: {sorted(set(jargon))}")
        # the table of contents lands on its sections
        missing = page.evaluate("""Array.from(document.querySelectorAll('.irinnov-toc a')).map(a => a.getAttribute('href'))
            .filter(h => !document.getElementById(h.slice(1)) && !document.getElementById(decodeURIComponent(h.slice(1))))""")
        if missing: problems.append(f"{name}: table-of-contents links without a target: {missing[:3]}")
        if external: problems.append(f"{name}: fetched from the network: {external[:3]}")
        if failed: problems.append(f"{name}: failed to load: {failed[:3]}")
        if console: problems.append(f"{name}: console errors: {console[:3]}")
        # signatures (show_doc's code blocks) hold no Markdown that was left unrendered
        sigs = page.evaluate("Array.from(document.querySelectorAll('.jp-RenderedMarkdown pre')).map(e => e.innerText)")
        raw_md = [f for s in sigs for f in _MD_FRAGMENT.findall(s)]
        if raw_md: problems.append(f"{name}: {len(raw_md)} raw Markdown fragment(s) in signatures, e.g. {raw_md[0]!r}")
        # no build notes in the prose (environment switches of the build, paths of test files)
        prose = " ".join(page.evaluate("Array.from(document.querySelectorAll('.jp-MarkdownCell')).map(e => e.innerText)"))
        notes = sorted({m.group(0) for m in _BUILD_NOTES.finditer(prose)})
        if notes: problems.append(f"{name}: build notes shown: {notes}")
        # every link is collected: links to other pages of the site must land (checked below), none leaves for the
        # documentation host or the forge (they do not exist where the site is read offline)
        anchors[name] = set(page.evaluate("Array.from(document.querySelectorAll('[id]')).map(e => e.id)"))
        for href, url in page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => [a.getAttribute('href'), a.href])"):
            if url.startswith(served): internal.append((name, href, url[len(served) + 1:]))
            elif re.match(r"https?://(irinnov\.github\.io|github\.com/irinnov)", url): problems.append(f"{name}: links to {url}")
        page.close()
    from urllib.parse import unquote
    for name, href, target in internal:
        path, _, anchor = target.partition("#")
        path = path or name
        if path not in anchors: problems.append(f"{name}: link {href!r} lands on no page")
        elif anchor and anchor not in anchors[path] and unquote(anchor) not in anchors[path]: problems.append(f"{name}: link {href!r} lands on no anchor")
    assert len(internal) > 1000, f"only {len(internal)} internal links found"
    assert not problems, "\n".join(problems)


def test_search_finds_api_names(site, served, browser):
    "A public function's name typed in the search box lists its documentation first; the hit lands on its heading."
    page = browser.new_page()
    page.goto(f"{served}/index.html", wait_until="load")
    for name, stem in [("win_rate", "12_rpp"), ("parse_measure", "06_measures"), ("leaderboard", "22_leaderboard")]:
        page.fill("#irinnov-search", name)
        hrefs = page.evaluate("Array.from(document.querySelectorAll('#irinnov-hits a')).map(a => a.getAttribute('href'))")
        assert hrefs and hrefs[0] == f"{stem}.html#{name}", (name, hrefs[:3])
    page.goto(f"{served}/index.html", wait_until="load")
    page.fill("#irinnov-search", "win_rate")
    page.locator('#irinnov-hits a[href="12_rpp.html#win_rate"]').click()
    page.wait_for_load_state("load")
    assert page.url.endswith("12_rpp.html#win_rate")
    assert page.locator("[id='win_rate']").inner_text().startswith("win_rate")
    page.close()


def test_math_is_typeset_locally(site, served, browser):
    page = browser.new_page()
    page.goto(f"{served}/10_rareness.html", wait_until="load")
    page.wait_for_function("window.MathJax && window.MathJax.Hub && window.MathJax.Hub.queue.pending === 0", timeout=60000)
    fonts = page.evaluate("window.MathJax.OutputJax['HTML-CSS'] ? MathJax.OutputJax['HTML-CSS'].fontInUse : ''")
    n = page.evaluate("document.querySelectorAll('.MathJax').length")
    page.close()
    assert n > 20, f"only {n} formulas typeset on the rareness page"
    assert fonts == "STIX-Web", f"MathJax used {fonts!r} fonts, not the packaged STIX-Web"


def test_home_page_links_every_method(site, served, browser):
    page = browser.new_page()
    page.goto(f"{served}/index.html", wait_until="load")
    hrefs = set(page.evaluate("""Array.from(document.querySelectorAll('main a, .jp-Notebook a, body a'))
        .filter(a => !a.closest('nav')).map(a => a.getAttribute('href'))"""))
    page.close()
    missing = [m for m in CITED if f"{m}.html" not in {h.split('#')[0] for h in hrefs if h}]
    assert not missing, f"the home page does not link the method pages {missing}"


# the paper each method page is built on: its first author must be cited on the page
CITED = {"10_rareness": "Türkmen", "10_rareness_experiments": "Türkmen", "11_novelty": "Fujii",
         "11_novelty_experiments": "Fujii", "12_rpp": "Diaz", "12_rpp_experiments": "Diaz", "18_rpp_recsys": "Diaz",
         "19_lexicographic": "Diaz",
         "13_asl": "Alex", "13_asl_experiments": "Alex", "14_infotheory": "Golbus", "14_infotheory_experiments": "Golbus",
         "21_campaigns": "Türkmen", "23_reusability": "Zobel"}


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


def test_search_box_finds_sections(site, served, browser):
    "Typing words in the search box lists the sections whose title, heading or prose holds them; a hit lands there."
    page = browser.new_page()
    console = []
    page.on("pageerror", lambda e: console.append(str(e)))
    page.goto(f"{served}/index.html", wait_until="load")
    page.fill("#irinnov-search", "average search length")
    hits = page.locator("#irinnov-hits a")
    assert hits.count() >= 1
    hrefs = [hits.nth(i).get_attribute("href") for i in range(hits.count())]
    assert any(h.startswith("13_asl") for h in hrefs), hrefs
    first = next(h for h in hrefs if h.startswith("13_asl"))
    page.locator(f'#irinnov-hits a[href="{first}"]').click()
    page.wait_for_load_state("load")
    assert page.url.split("/")[-1].split("#")[0] == first.split("#")[0]
    if "#" in first:
        anchor = first.split("#", 1)[1]
        from urllib.parse import unquote
        assert page.evaluate(f"!!document.getElementById({unquote(anchor)!r})")
    page.fill("#irinnov-search", "zzzqqq")
    assert page.locator("#irinnov-hits li").inner_text() == "no match"
    page.close()
    assert console == []


def test_no_build_notes_in_shown_cells():
    "No cell a page shows (prose, code, or a code cell's text output) names a build switch or a test file: hidden cells (`#| hide`, `include: false`, test-only) may."
    import nbformat
    from docsite import _is_test_only
    shown = []
    for path in sorted((ROOT / "nbs").glob("*.ipynb")):
        for i, c in enumerate(nbformat.read(path, as_version=4).cells):
            opts = {l.strip() for l in c.source.splitlines() if l.startswith("#|")}
            if c.cell_type == "raw" or "#| hide" in opts or "#| include: false" in opts or _is_test_only(c): continue
            texts = [] if "#| echo: false" in opts else [c.source]
            texts += ["".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) for o in c.get("outputs", [])]
            shown += [f"{path.name} cell {i}: {m.group(0)}" for t in texts for m in _BUILD_NOTES.finditer(t)]
    assert not shown, shown
