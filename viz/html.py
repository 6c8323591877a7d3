"""Slides that work offline: any plotly figure as one standalone, interactive HTML file (plotly.js embedded,
~4.8 MB, so it opens from a USB stick with no server and no internet: zoom, pan and hover all work), and the token
view as SVG through its matplotlib twin. No Streamlit here.

    html = figure_html(fig, title="minilm-l6 · Layer 3 · Head 1")      # bytes, text/html
    svg = token_view_svg(layer_att, query, rows, cols, heads, title=...)  # bytes, image/svg+xml

`include_plotlyjs=True` writes the whole plotly.js bundle into the file ("cdn" or "directory" would need a network
or a second file); MathJax is not included (figures use no LaTeX) and the page has no other external reference.
"""

from __future__ import annotations

import html
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

HTML_MIME = "text/html"
SVG_MIME = "image/svg+xml"
CONFIG = {"displaylogo": False, "responsive": True}
MIN_MARGIN = 20  # px on each side of an exported figure (automargin adds the room its labels need)
TITLE_STANDOFF = 16  # px between the tick labels and the axis title (Streamlit's theme: 16-24)
AXIS_KEY = re.compile(r"[xy]axis\d*")


def standalone(fig: go.Figure) -> dict:
    """The figure (as a plain dict, the figure itself untouched) with what the page's figure gets from Streamlit's
    chart theme in the browser: automargin on every axis, so the tick labels (tokens) and axis titles get the room
    they need, and the axis titles set off from the labels. The app's figures keep 10 px side margins (viz/theme.py base_layout) and an empty template; in the
    app, Streamlit's theme turns automargin on, but a standalone file has no theme, so the labels fell outside the
    picture. Margins are kept at least MIN_MARGIN px."""
    d = fig.to_dict()
    layout = d.setdefault("layout", {})
    axes = {k for k in layout if AXIS_KEY.fullmatch(k)} | {"xaxis", "yaxis"}
    for trace in d.get("data", []):  # axes only named by a trace (xaxis2 ...)
        for ref, prefix in ((trace.get("xaxis"), "xaxis"), (trace.get("yaxis"), "yaxis")):
            if isinstance(ref, str) and ref[1:].isdigit():
                axes.add(prefix + ref[1:])
    for k in axes:
        axis = layout.setdefault(k, {})
        axis.setdefault("automargin", True)
        if isinstance(axis.get("title"), dict) and axis["title"].get("text"):  # below / beside the labels, as on the page
            axis["title"].setdefault("standoff", TITLE_STANDOFF)
    template = layout.setdefault("template", {}).setdefault("layout", {})
    for k in ("xaxis", "yaxis"):  # any axis plotly adds by itself
        template.setdefault(k, {}).setdefault("automargin", True)
    margin = layout.setdefault("margin", {})
    for side in ("l", "r", "t", "b"):
        margin[side] = max(MIN_MARGIN, margin.get(side, MIN_MARGIN))
    return d


def figure_html(fig: go.Figure, *, title: str = "") -> bytes:
    """The figure as a complete HTML document that needs nothing but a browser, laid out as on the page (`standalone`).
    `title` (plain text) becomes the page's <title>."""
    doc = pio.to_html(standalone(fig), include_plotlyjs=True, full_html=True, include_mathjax=False, config=CONFIG,
                      default_width="100%", validate=False)
    head = f"<title>{html.escape(title or 'Headlight figure')}</title>"
    doc = doc.replace('<meta charset="utf-8" />', f'<meta charset="utf-8" />\n    {head}', 1)
    return doc.encode("utf-8")


def token_view_svg(layer_att: np.ndarray, query: int, row_tokens: list[str], col_tokens: list[str],
                   heads: list[int], *, title: str = "", subtitle: str = "", top_k: int | None = None,
                   min_weight: float = 0.01) -> bytes:
    """The token view (viz.attention.token_view_mpl) as SVG bytes. layer_att (H, n, m)."""
    from .attention import token_view_mpl
    from .export import figure_bytes

    fig = token_view_mpl(layer_att, query, row_tokens, col_tokens, heads, top_k=top_k, min_weight=min_weight,
                         title=title, subtitle=subtitle)
    return figure_bytes(fig, "svg")
