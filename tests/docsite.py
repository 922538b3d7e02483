"""Build the documentation site offline, without Quarto: nbdev's notebook processing, then nbconvert to HTML.

Quarto cannot be installed on our machines (PyPI's quarto-cli downloads its binary at install time), so the
tested site is built with nbdev's own processors (`nbdev_proc_nbs` minus its Quarto install: directives removed, hidden cells dropped,
`show_doc` rendered) and nbconvert's HTML exporter, with MathJax served from the `jupyter-server-mathjax`
package instead of a CDN. Figures are embedded as data URIs, so every page stands alone.

Usage: python tests/docsite.py [OUT_DIR]   (default _docs_offline/)
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]


def sidebar() -> list[tuple[str, list[str]]]:
    "Sections and notebook names in the order of nbs/sidebar.yml (only notebooks that exist)."
    spec = yaml.safe_load((ROOT / "nbs" / "sidebar.yml").read_text())["website"]["sidebar"]["contents"]
    out = []
    for sec in spec:
        names = [n for n in sec["contents"] if (ROOT / "nbs" / n).exists()]
        if names: out.append((sec["section"], names))
    return out


def _front_matter(nb) -> dict:
    "Title and description from nbdev's front-matter raw cell (or the first `# heading` and `> summary`)."
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.startswith("---"):
            fm = yaml.safe_load(cell.source.strip().strip("-")) or {}
            return {"title": str(fm.get("title", "")), "description": str(fm.get("description", ""))}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^# (.+)$", cell.source, re.M)
            d = re.search(r"^> (.+)$", cell.source, re.M)
            if m: return {"title": m.group(1).strip(), "description": d.group(1).strip() if d else ""}
    return {"title": "", "description": ""}


def _nav(current: str, titles: dict) -> str:
    "The site's navigation bar: a wrapping row of links, grouped by the sidebar's sections."
    parts = ['<nav class="irinnov-nav">', '<a class="irinnov-home" href="index.html"><b>irinnov</b></a>']
    for sec, names in sidebar():
        links = []
        for n in names:
            stem = Path(n).stem
            label = html.escape(titles.get(stem, stem))
            cur = ' aria-current="page"' if stem == current else ""
            links.append(f'<a class="irinnov-page" href="{stem}.html"{cur}>{label}</a>')
        parts.append(f'<span class="irinnov-section"><span class="irinnov-section-name">{html.escape(sec)}:</span> '
                     + " ".join(links) + "</span>")
    parts.append('<span class="irinnov-search"><input type="search" id="irinnov-search" placeholder="Search the site" '
                 'aria-label="Search the site" autocomplete="off"><ol id="irinnov-hits" hidden></ol></span>')
    parts.append("</nav>")
    return "".join(parts)


def _sections(stem: str, title: str, body: str) -> list[dict]:
    "The search index of one page: its prose, section by section (headings with their anchors), without code or outputs."
    prose = re.sub(r'<div class="jp-Cell jp-CodeCell.*?(?=<div class="jp-Cell |</main>|$)', " ", body, flags=re.S)
    parts = re.split(r'(<h[1-3] id="[^"]+"[^>]*>.*?</h[1-3]>)', prose, flags=re.S)
    out, anchor, heading = [], "", title
    for part in parts:
        m = re.match(r'<h[1-3] id="([^"]+)"[^>]*>(.*?)</h[1-3]>', part, flags=re.S)
        if m:
            anchor = m.group(1)
            heading = html.unescape(re.sub(r"<[^>]+>", "", m.group(2)).replace("¶", "")).strip()
            continue
        text = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", part, flags=re.S)
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
        if text or anchor: out.append({"page": stem, "anchor": anchor, "title": title, "heading": heading, "text": text[:3000]})
    return out


# a few lines of plain JavaScript: every word typed must occur in the section (its page title, heading or prose); a
# section whose heading is exactly what was typed comes first (an API name: its documentation before the prose; `leaderboard`
# before the class `Leaderboard`)
_SEARCH_JS = """(function () {
  const box = document.getElementById('irinnov-search'), hits = document.getElementById('irinnov-hits');
  if (!box || !window.IRINNOV_INDEX) return;
  const esc = s => s.replace(/[&<>"]/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
  box.addEventListener('input', () => {
    const words = box.value.toLowerCase().split(/\\s+/).filter(w => w.length > 1);
    if (!words.length) { hits.hidden = true; hits.innerHTML = ''; return; }
    const raw = box.value.trim(), q = raw.toLowerCase();
    const rank = e => (e.heading === raw ? 0 : e.heading.toLowerCase() === q ? (e.api ? 1 : 2) : 3);
    const found = window.IRINNOV_INDEX.filter(e => {
      const t = (e.title + ' ' + e.heading + ' ' + e.text).toLowerCase();
      return words.every(w => t.includes(w)); })
      .map((e, i) => [rank(e), i, e]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(x => x[2]).slice(0, 15);
    hits.innerHTML = found.length ? found.map(e => '<li><a href="' + e.page + '.html' + (e.anchor ? '#' + encodeURIComponent(e.anchor) : '')
      + '">' + esc(e.title) + (e.heading && e.heading !== e.title ? ' › ' + esc(e.heading) : '') + '</a></li>').join('')
      : '<li class="irinnov-none">no match</li>';
    hits.hidden = false; });
})();"""


_STYLE = """<link rel="icon" href="data:,"><style>
.irinnov-nav { display: flex; flex-wrap: wrap; gap: 0.3rem 1.2rem; padding: 0.6rem 1rem; border-bottom: 1px solid #ddd;
  font-family: sans-serif; font-size: 0.9rem; }
.irinnov-section { display: inline-flex; flex-wrap: wrap; gap: 0.2rem 0.6rem; }
.irinnov-section-name { color: #666; }
.irinnov-nav a[aria-current] { font-weight: bold; }
.irinnov-toc { font-family: sans-serif; font-size: 0.9rem; margin: 0 1rem 1rem 1rem; padding: 0.5rem 1rem;
  border: 1px solid #eee; border-radius: 4px; background: #fafafa; }
.irinnov-toc ul { margin: 0.2rem 0; padding-left: 1.2rem; }
.irinnov-toc .toc-h3 { margin-left: 1.2rem; }
.irinnov-search { position: relative; margin-left: auto; }
.irinnov-search input { font-size: 0.9rem; padding: 0.15rem 0.4rem; width: 14rem; }
#irinnov-hits { position: absolute; right: 0; z-index: 10; background: white; border: 1px solid #ccc; margin: 0;
  padding: 0.3rem 0.5rem 0.3rem 1.8rem; width: 26rem; max-height: 24rem; overflow-y: auto; }
</style>"""


def _toc(body: str) -> str:
    "A table of contents of the page's second- and third-level headings, linked to their anchors."
    items = []
    for level, anchor, text in re.findall(r'<h([23]) id="([^"]+)"[^>]*>(.*?)</h\1>', body, flags=re.S):
        label = re.sub(r"<[^>]+>", "", re.sub(r'<a class="anchor-link".*?</a>', "", text, flags=re.S)).strip()
        label = label.replace("¶", "").strip()
        if label: items.append(f'<li class="toc-h{level}"><a href="#{anchor}">{label}</a></li>')
    if len(items) < 2: return ""
    return '<nav class="irinnov-toc" aria-label="On this page"><b>On this page</b><ul>' + "".join(items) + "</ul></nav>"


_QUARTO_ATTRS = re.compile(r'\)\{target="_blank"[^}]*\}')   # Quarto link attributes in show_doc's markdown
_SOURCE_LINK = re.compile(r'^\[source\]\([^)]*\)(\{[^}]*\})?\n*', re.M)   # show_doc's link to the code on a forge
_FENCE = re.compile(r'^```.*?^```', re.M | re.S)
_MD_LINK = re.compile(r'\[`([^`\]]+)`\]\([^)\s]+\)')


def _show_doc_md(md: str) -> str:
    """show_doc's markdown as a reader needs it offline: no link to a forge (the site must not depend on one), and
    signatures (code blocks, where Markdown is not rendered) with plain names instead of `[`name`](url)` links."""
    md = _SOURCE_LINK.sub("", md)
    return _FENCE.sub(lambda m: _MD_LINK.sub(lambda l: l.group(1), m.group(0)), md)
_TEST_LINE = re.compile(r"^\s*(test_\w+\(|assert\b|#|$)")


def _is_test_only(cell) -> bool:
    "A code cell that only asserts (fastcore's test_* calls) and shows nothing: a test, not content."
    lines = cell.source.splitlines()
    return (cell.cell_type == "code" and not cell.get("outputs") and any(l.strip().startswith("test_") for l in lines)
            and all(_TEST_LINE.match(l) for l in lines))


def _clean(nb) -> None:
    """Do what Quarto does with nbdev's cell options: hide `echo: false` sources, drop `include: false` cells, keep no
    `#|` lines, no Quarto link attributes and no cells that are only tests."""
    cells = []
    for c in nb.cells:
        if c.cell_type == "raw" and c.source.startswith("---"): continue
        if c.cell_type == "code":
            opts = [l.strip() for l in c.source.splitlines() if l.startswith("#|")]
            if "#| include: false" in opts or _is_test_only(c): continue
            c.source = "\n".join(l for l in c.source.splitlines() if not l.startswith("#|")).strip("\n")
            if "#| echo: false" in opts or not c.source.strip():
                c.metadata["transient"] = {"remove_source": True}
            for o in c.get("outputs", []):
                md = o.get("data", {}).get("text/markdown")
                if md is not None: o["data"]["text/markdown"] = _show_doc_md(_QUARTO_ATTRS.sub(")", md))
        cells.append(c)
    nb.cells = cells


_MATHJAX_FONTS = ('"HTML-CSS": {availableFonts: ["STIX-Web"], preferredFont: "STIX-Web", webFont: "STIX-Web", '
                  'imageFont: null},')

_PROC_NBS = """
import nbdev.quarto as q
q._ensure_quarto = lambda: None
q.nbdev_proc_nbs.__wrapped__()
"""


def _settings() -> dict:
    "settings.ini's [DEFAULT] section (where nbdev's links point: the documentation host and the forge)."
    import configparser
    cp = configparser.ConfigParser(interpolation=None)
    cp.read(ROOT / "settings.ini")
    return dict(cp["DEFAULT"])


def _local_links(bodies: dict[str, str]) -> dict[str, str]:
    """Links that resolve where the site is read: nbdev writes the documentation host's address of each symbol
    (`{doc_host}{doc_baseurl}/trec.html#anchor`, named after the module); offline, that is the page of the notebook
    (`00_trec.html`) and the heading's id there (nbconvert keeps the symbol's case). Links to the forge are dropped
    (their text stays)."""
    from nbdev.doclinks import _nbpath2html
    cfg = _settings()
    host = (cfg.get("doc_host", "").rstrip("/") + "/" + cfg.get("doc_baseurl", "").strip("/")).rstrip("/") + "/"
    forge = cfg.get("git_url", "").rstrip("/")
    names = {_nbpath2html(Path(f"{stem}.ipynb")).stem: stem for stem in bodies}
    from urllib.parse import quote, unquote
    ids = {stem: {html.unescape(i) for i in re.findall(r'\sid="([^"]+)"', b)} for stem, b in bodies.items()}
    lower = {stem: {i.lower(): i for i in sorted(v, reverse=True)} for stem, v in ids.items()}

    def local(m):
        whole, name, anchor = m.group(0), m.group(1), m.group(2)
        if name in bodies and not whole.startswith('href="' + host): return whole   # already a page of this site
        stem = name if name in bodies else names.get(name)
        if stem is None: return whole
        a = unquote(html.unescape(anchor or ""))
        a = a if a in ids[stem] else lower[stem].get(a.lower(), "")
        return f'href="{stem}.html' + (f"#{html.escape(quote(a, safe=''))}" if a else "") + '"'

    # the documentation host's addresses, and relative links written with the host's page names (`measures.html`)
    link = re.compile('href="(?:' + re.escape(host) + r')?([\w.-]+?)\.html(?:#([^"]*))?"')
    out = {}
    for stem, body in bodies.items():
        body = link.sub(local, body)
        if forge: body = re.sub(r'<a [^>]*href="' + re.escape(forge) + r'[/"][^>]*>(.*?)</a>', r"\1", body, flags=re.S)
        out[stem] = body
    return out


def _api_entries(stem: str, title: str, body: str) -> list[dict]:
    """Search entries for the API: each documented symbol (show_doc's heading, in a code cell's output) with its
    docstring, so that a search for `win_rate` finds the function's own section."""
    out = []
    for m in re.finditer(r'<hr/>\s*<h([34]) id="([^"]+)"[^>]*>(.*?)</h\1>(.*?)(?=<hr/>|</div>\s*</div>\s*</div>\s*</div>|$)',
                         body, flags=re.S):
        name = html.unescape(re.sub(r"<[^>]+>", "", m.group(3)).replace("¶", "")).strip()
        doc = re.sub(r'<div class="highlight">.*?</div>', " ", m.group(4), flags=re.S)
        doc = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", doc)).split())
        out.append({"page": stem, "anchor": m.group(2), "title": title, "heading": name, "text": doc[:500], "api": True})
    return out


def build(out: Path | str = ROOT / "_docs_offline", proc: bool = True) -> list[Path]:
    "Process the notebooks with nbdev and write one self-contained HTML page per notebook into `out`."
    from nbconvert import HTMLExporter
    import jupyter_server_mathjax

    out = Path(out)
    if proc:
        # nbdev_proc_nbs, without its first step: when Quarto is missing it tries to install it with sudo and then
        # re-installs this package with `pip install -e` into the running environment (a race with every import)
        r = subprocess.run([sys.executable, "-c", _PROC_NBS], cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            err = r.stderr if len(r.stderr) < 8000 else r.stderr[:5000] + "\n[...]\n" + r.stderr[-3000:]
            raise RuntimeError(f"nbdev's notebook processing failed (exit {r.returncode}):\n{err}")
    procdir = ROOT / "_proc"
    if out.exists(): shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(Path(jupyter_server_mathjax.__file__).parent / "static", out / "mathjax")
    exporter = HTMLExporter(template_name="lab")
    exporter.mathjax_url = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
    exporter.exclude_input_prompt = exporter.exclude_output_prompt = True
    nbs = {Path(n).stem: nbformat.read(procdir / n, as_version=4) for _, names in sidebar() for n in names}
    titles = {stem: _front_matter(nb)["title"] or stem for stem, nb in nbs.items()}
    pages, index, bodies = [], [], {}
    for stem, nb in nbs.items():
        fm = _front_matter(nb)
        _clean(nb)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": fm["title"] or stem}})
        # the lab template loads require.js from a CDN for widgets; the pages have none and must work offline
        body = body.replace(f'<script src="{exporter.require_js_url}"></script>', "")
        # the packaged MathJax ships only the STIX-Web fonts: say so, or it asks for TeX fonts that are not there
        body = body.replace("messageStyle: 'none',", "messageStyle: 'none', " + _MATHJAX_FONTS, 1)
        body = re.sub(r'href="(?:nbs/)?([\w.-]+)\.ipynb(#[^"]*)?"', lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', body)
        header = (f'<header style="padding:1rem 1rem 0 1rem"><h1 class="irinnov-title">{html.escape(fm["title"] or stem)}</h1>'
                  + (f'<p class="irinnov-description"><em>{html.escape(fm["description"])}</em></p>' if fm["description"] else "")
                  + "</header>")
        body = body.replace("</head>", _STYLE + "</head>", 1)
        body = body.replace("</body>", '<script src="search-index.js"></script><script src="search.js"></script></body>', 1)
        bodies[stem] = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + _nav(stem, titles) + header + _toc(body), body, count=1)
    bodies = _local_links(bodies)
    for stem, body in bodies.items():
        index += _sections(stem, titles[stem], body) + _api_entries(stem, titles[stem], body)
        page = out / f"{stem}.html"
        page.write_text(body)
        pages.append(page)
    (out / "search-index.js").write_text("window.IRINNOV_INDEX = " + json.dumps(index, ensure_ascii=False) + ";\n")
    (out / "search.js").write_text(_SEARCH_JS)
    return pages


if __name__ == "__main__":
    pages = build(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_docs_offline")
    print(f"{len(pages)} pages written to {pages[0].parent}")
