"""Slide export (viz/export.py): real PNG/SVG/PDF bytes, user text never parsed as mathtext, CSV safe for
spreadsheets."""

import csv
import io

import numpy as np
import pytest

from viz.export import FORMATS, figure_bytes, heatmap_figure, matrix_csv

MAGIC = {"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_formats_produce_real_files(fmt):
    m = np.random.default_rng(0).random((4, 5))
    fig = heatmap_figure(m, list("abcd"), list("vwxyz"), title="minilm-l6 · Layer 3 · Head 1", subtitle="I am good")
    data = figure_bytes(fig, fmt)
    assert data.startswith(MAGIC[fmt])
    assert len(data) > 1000


def test_hostile_labels_render():
    tokens = ["$\\frac$", "<script>", "그", "동물은", "😀", "\u200b", "\x07", "שלום"]
    m = np.eye(len(tokens))
    fig = heatmap_figure(m, tokens, tokens, title="t $\\frac$", subtitle="$x$ <b>bold</b>",
                         masked=np.triu(np.ones_like(m, dtype=bool), 1))
    svg = figure_bytes(fig, "svg").decode()
    assert "<script>" not in svg  # matplotlib escapes text in SVG
    assert svg.startswith("<?xml")


def test_unknown_format_and_bad_shape():
    with pytest.raises(ValueError, match="unknown format"):
        figure_bytes(heatmap_figure(np.eye(2)), "gif")
    with pytest.raises(ValueError, match="2-D"):
        heatmap_figure(np.zeros((2, 2, 2)))


def test_csv_labels_values_and_formula_guard():
    data = matrix_csv(np.array([[0.5, 0.25], [1.0, 0.0]]), ["=cmd", "it"], ["+a", "b"])
    rows = list(csv.reader(io.StringIO(data.decode())))
    assert rows[0] == ["", "0:+a", "1:b"]
    assert rows[1] == ["0:=cmd", "0.5", "0.25"]
    assert float(rows[2][1]) == 1.0
    assert not any(c.startswith(("=", "+", "-", "@")) for row in rows for c in row)  # no cell opens a formula
    rows = list(csv.reader(io.StringIO(matrix_csv(np.eye(1), None, None).decode())))
    assert rows == [["", "0:0"], ["0:0", "1"]]


def test_dollar_signs_in_titles_stay_as_typed():
    """mathtext is off for every exported text, so a '$' is printed as typed (never escaped to '\\$')."""
    fig = heatmap_figure(np.eye(2), ["a", "b"], ["c", "d"], title="it costs $5", subtitle="and $\\frac$ too")
    title = fig.axes[0].get_title()
    assert "it costs $5" in title and "$\\frac$" in title and "\\$" not in title
    assert figure_bytes(fig, "png")[:4] == b"\x89PNG"


def test_matplotlib_is_imported_only_when_an_export_is_drawn():
    """A fresh app process imports every page's modules before it is ready (serve/preload.py); matplotlib (~0.4 s) is
    not among them: it comes with the first export, set up for headless rendering."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; from serve import preload; [__import__(m) for m in preload.MODULES]; "
            "assert 'matplotlib' not in sys.modules, 'imported at start-up'; "
            "from viz.export import pyplot; plt = pyplot(); "
            "import matplotlib; assert matplotlib.get_backend().lower() == 'agg'; "
            "assert matplotlib.rcParams['text.parse_math'] is False")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
