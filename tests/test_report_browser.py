"""The campaign report in a real browser (headless Chromium, as the docs-site test): it loads with no console error and
no network request, the table of contents lands on its sections, sorting and filtering work, the header row and the
system column stay in place when a table scrolls, the summary comes first, text columns are left-aligned with long
text cut (whole on hover), and no figure is wider than its container. Screenshots of the
top of the page and of one figure are written to the test's temporary folder (set IRINNOV_KEEP_SCREENSHOTS=DIR to keep
a copy for a look)."""
import os
import shutil
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import numpy as np
import pandas as pd
import pytest

from irinnov.report import campaign_report, write_report
from loopback import chromium, serve

S, Q = 40, 8
LONG = ("We pretrained the modified bert-large model on the document collection, then fine-tuned it on query-passage "
        "pairs with one positive and many negatives, and re-ranked the top 1000 of BM25 with an ensemble of five models.")


def field(seed=3):
    "S systems over Q graded topics; names include math markup and spreadsheet-formula prefixes."
    rng = np.random.default_rng(seed)
    names = [f"run{i:02d}" for i in range(S - 3)] + ["$x^$", "=SUM(A1)", "-minus"]
    runs, qrels = [], []
    for q in range(Q):
        grades = rng.choice([0, 0, 1, 1, 2], size=60)
        grades[0] = 2
        qrels += [(f"t{q}", f"d{d:02d}", int(g)) for d, g in enumerate(grades) if rng.random() < 0.7]
        for i, s in enumerate(names):
            top = np.argsort(-(grades + rng.normal(size=60) * (0.5 + i / 20)), kind="stable")[:30]
            runs += [(s, f"t{q}", f"d{d:02d}", float(30 - r)) for r, d in enumerate(top)]
    meta = pd.DataFrame({"team": [f"team{i // 3}" for i in range(S)], "pooled": ["yes", "no"] * (S // 2),
                         "description": [LONG if i % 2 else "BM25" for i in range(S)]},
                        index=pd.Index(names, name="system"))
    return (pd.DataFrame(runs, columns=["system", "query", "doc", "score"]),
            pd.DataFrame(qrels, columns=["query", "doc", "grade"]), meta)


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    runs, qrels, meta = field()
    rep = campaign_report(runs, qrels, k=10, B=200, trials=100, seed=0, meta=meta, teams=None)
    return write_report(rep, out_dir=tmp_path_factory.mktemp("report"), title="A generated campaign", hue="pooled")


@pytest.fixture(scope="module")
def browser():
    with chromium() as b: yield b


@pytest.fixture
def page(browser, page_path):
    p = browser.new_page(viewport={"width": 1400, "height": 900})
    p.errors, p.external = [], []
    p.on("console", lambda m: p.errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    p.on("request", lambda r: p.external.append(r.url) if not r.url.startswith(("file:", "data:", "about:")) else None)
    p.goto(page_path.as_uri(), wait_until="load")
    yield p
    p.close()


def test_loads_cleanly(page):
    assert page.title() == "A generated campaign"
    assert page.errors == [] and page.external == []
    broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length")
    assert broken == 0
    assert page.locator("td", has_text="$x^$").count() > 0          # math markup shown as typed


def test_toc_links_land(page):
    links = page.evaluate("Array.from(document.querySelectorAll('nav.toc a')).map(a => a.getAttribute('href'))")
    assert {"#glance", "#systems", "#coverage", "#significance", "#topics", "#teams", "#risers", "#power", "#files"} <= set(links)
    for href in links:
        page.click(f"nav.toc a[href='{href}']")
        top = page.evaluate(f"document.querySelector('{href}').getBoundingClientRect().top")
        at_end = page.evaluate("window.innerHeight + window.scrollY >= document.body.scrollHeight - 2")
        assert abs(top) <= 2 or (at_end and 0 <= top < 900), (href, top)
        assert page.evaluate("location.hash") == href


def column_values(page, table, col):
    return page.evaluate(f"""Array.from(document.querySelectorAll('#{table} tbody tr')).filter(r => r.style.display !== 'none')
        .map(r => r.cells[{col}].getAttribute('data-v') ?? r.cells[{col}].textContent)""")


def test_sorting_and_filtering(page):
    headers = page.evaluate("Array.from(document.querySelectorAll('#t-systems thead th')).map(h => h.textContent)")
    col = headers.index("AP")
    th = page.locator("#t-systems thead th").nth(col)
    th.click()
    up = [float(v) for v in column_values(page, "t-systems", col)]
    assert up == sorted(up) and len(up) == S
    th.click()
    down = [float(v) for v in column_values(page, "t-systems", col)]
    assert down == sorted(up, reverse=True)
    name = page.locator("#t-systems thead th").nth(0)
    name.click()
    names = column_values(page, "t-systems", 0)
    assert names == sorted(names, key=str.lower)
    page.fill("input[data-table='t-systems']", "run0")
    assert column_values(page, "t-systems", 0) == [f"run0{i}" for i in range(10)]


def test_sticky_header_and_column(page):
    page.evaluate("document.querySelector('#systems').scrollIntoView()")
    box = page.evaluate("""(() => { const d = document.querySelector('#t-systems').parentElement;
        d.scrollTop = 300; d.scrollLeft = 600; const r = d.getBoundingClientRect();
        const th = document.querySelector('#t-systems thead th:nth-child(3)').getBoundingClientRect();
        const td = document.querySelector('#t-systems tbody tr:nth-child(20) td:first-child').getBoundingClientRect();
        return {scrolledDown: d.scrollTop, scrolledRight: d.scrollLeft, top: r.top, left: r.left, thTop: th.top,
                tdLeft: td.left}; })()""")
    assert box["scrolledDown"] > 0 and box["scrolledRight"] > 0, "the systems table should overflow its box"
    assert abs(box["thTop"] - box["top"]) <= 2           # the header row stays at the top of the box
    assert abs(box["tdLeft"] - box["left"]) <= 2         # the system column stays at its left edge


def test_summary_first(page):
    "The first screen answers the organiser's questions: best system and its ties, risers with their judged share, coverage, input."
    first = page.evaluate("document.querySelector('h2').parentElement.id")
    assert first == "glance"
    assert page.evaluate("document.querySelector('#glance').compareDocumentPosition(document.querySelector('nav.toc')) & 4")
    text = page.locator("#glance").inner_text()
    for words in ("Best under AP", "not significantly different", "Biggest risers", "of its top 10 judged",
                  "Pool coverage", "In the input"):
        assert words in text, words
    top = page.evaluate("document.querySelector('#glance ul').getBoundingClientRect().bottom")
    assert top <= 900, "the summary is not on the first screen"
    order = page.evaluate("Array.from(document.querySelectorAll('section')).map(s => s.id)")
    assert order.index("glance") < order.index("measures") < order.index("systems")


def test_text_columns_left_aligned_and_long_text_cut(page):
    cols = page.evaluate("""Array.from(document.querySelectorAll('#t-systems thead th')).map((th, i) => [th.textContent,
        getComputedStyle(th).textAlign, getComputedStyle(document.querySelector(`#t-systems tbody tr td:nth-child(${i + 1})`)).textAlign])""")
    align = {name: (h, d) for name, h, d in cols}
    for name in ("system", "team", "pooled", "description", "group AP"):
        assert align[name] == ("left", "left"), (name, align[name])
    assert align["AP"] == ("right", "right")
    cut = page.evaluate("""(() => { const s = document.querySelector('#t-systems span.long');
        return {title: s.title, shown: s.getBoundingClientRect().width, full: s.scrollWidth, cell: s.textContent}; })()""")
    assert cut["title"] == LONG and cut["cell"] == LONG            # the whole text on hover and for the filter
    assert cut["shown"] < 450 < cut["full"]                          # shown cut to a column of reasonable width
    page.fill("input[data-table='t-systems']", "ensemble of five")
    assert len(column_values(page, "t-systems", 0)) == S // 2


def test_figures_fit_their_container_and_screenshots(page, tmp_path):
    "No figure is wider than its container (at 1,400 px and at 800 px); a figure that fits is shown at its natural size."
    for width in (800, 1400):
        page.set_viewport_size({"width": width, "height": 900})
        sizes = page.evaluate("""Array.from(document.querySelectorAll('figure img')).map(i => [i.naturalWidth,
            i.getBoundingClientRect().width, i.closest('figure').getBoundingClientRect().width,
            i.parentElement.scrollWidth, i.parentElement.clientWidth])""")
        assert len(sizes) == 4
        for natural, shown, box, scroll, client in sizes:
            assert shown <= box + 0.5 and scroll <= client + 0.5, (width, natural, shown, box)
            assert abs(min(natural, box) - shown) <= 1, (width, natural, shown, box)
    top, fig = tmp_path / "top.png", tmp_path / "figure.png"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(top))
    page.locator("#risers figure img").screenshot(path=str(fig))
    for f in (top, fig): assert f.stat().st_size > 10_000
    keep = os.environ.get("IRINNOV_KEEP_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for f in (top, fig): shutil.copy(f, Path(keep) / f.name)


def test_served_over_http_it_asks_for_nothing_it_lacks(browser, page_path):
    "Served by a web server (not opened as a file), the page requests nothing that is missing: not even an icon."
    with serve(page_path.parent) as base:
        p = browser.new_page()
        errors, failed = [], []
        p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        p.on("response", lambda r: failed.append((r.status, r.url)) if r.status >= 400 else None)
        p.goto(f"{base}/{page_path.name}", wait_until="load")
        p.wait_for_timeout(1500)           # (a browser asks for /favicon.ico after the load event)
        p.close()
    assert failed == [] and errors == []
