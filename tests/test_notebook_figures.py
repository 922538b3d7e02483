"""Stored figures stay small: the notebooks are the documentation, and their images were most of their weight.
The notebooks that draw figures store them at no more than 72 dpi with a 256-colour palette (a hidden setup cell);
the caps below are on what the notebook files carry (base64 text for PNG, the text itself for SVG)."""
import base64, json, struct
from pathlib import Path

import pytest

NBS = sorted((Path(__file__).resolve().parents[1] / "nbs").glob("*.ipynb"))
MAX_BYTES, MAX_DPI = 150 * 1024, 100      # one decoded PNG
MAX_STORED, MAX_TOTAL = 60 * 1024, 1024 * 1024  # one stored image, and all stored images of all notebooks


def _pngs(nb_path: Path):
    nb = json.loads(nb_path.read_text())
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {}).get("image/png")
            if data: yield i, base64.b64decode(data if isinstance(data, str) else "".join(data))


def _stored(nb_path: Path):
    "(cell, mime type, stored size in bytes) of every image output."
    nb = json.loads(nb_path.read_text())
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            for mime, data in out.get("data", {}).items():
                if mime.startswith("image/"):
                    yield i, mime, len((data if isinstance(data, str) else "".join(data)).encode())


def _dpi(png: bytes) -> float | None:
    "Resolution from the PNG's pHYs chunk (pixels per metre), which matplotlib writes from savefig's dpi."
    at = png.find(b"pHYs")
    if at < 0: return None
    ppm_x, _, unit = struct.unpack(">IIB", png[at + 4:at + 13])
    return ppm_x * 0.0254 if unit == 1 else None


@pytest.mark.parametrize("nb_path", NBS, ids=[p.stem for p in NBS])
def test_stored_figures_are_small(nb_path):
    big = []
    for cell, png in _pngs(nb_path):
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        dpi = _dpi(png)
        if len(png) > MAX_BYTES or (dpi is not None and dpi > MAX_DPI + 0.5):
            big.append(f"cell {cell}: {len(png) // 1024} KB at {dpi and round(dpi)} dpi")
    assert not big, f"{nb_path.name}: figures over {MAX_BYTES // 1024} KB or {MAX_DPI} dpi: {big}"


@pytest.mark.parametrize("nb_path", NBS, ids=[p.stem for p in NBS])
def test_stored_images_under_the_cap(nb_path):
    big = [f"cell {cell}: {mime} {size // 1024} KB" for cell, mime, size in _stored(nb_path) if size > MAX_STORED]
    assert not big, f"{nb_path.name}: stored images over {MAX_STORED // 1024} KB: {big}"


def test_stored_images_within_the_budget():
    sizes = {p.name: sum(size for _, _, size in _stored(p)) for p in NBS}
    total = sum(sizes.values())
    heaviest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total <= MAX_TOTAL, f"stored images weigh {total // 1024} KB, over {MAX_TOTAL // 1024} KB; heaviest: {heaviest}"


def test_the_check_reads_resolution():
    import io
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72)
    plt.close(fig)
    assert round(_dpi(buf.getvalue())) == 72
