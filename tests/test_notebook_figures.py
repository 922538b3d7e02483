"""Stored figures stay small: the notebooks are the documentation, and their PNGs are most of their weight."""
import base64, json, struct
from pathlib import Path

import pytest

NBS = sorted((Path(__file__).resolve().parents[1] / "nbs").glob("*.ipynb"))
MAX_BYTES, MAX_DPI = 150 * 1024, 100


def _pngs(nb_path: Path):
    nb = json.loads(nb_path.read_text())
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {}).get("image/png")
            if data: yield i, base64.b64decode(data if isinstance(data, str) else "".join(data))


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
