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

import numpy as np
import plotly.graph_objects as go

HTML_MIME = "text/html"
SVG_MIME = "image/svg+xml"
CONFIG = {"displaylogo": False, "responsive": True}


def figure_html(fig: go.Figure, *, title: str = "") -> bytes:
    """The figure as a complete HTML document that needs nothing but a browser. `title` (plain text) becomes the
    page's <title>."""
    doc = fig.to_html(include_plotlyjs=True, full_html=True, include_mathjax=False, config=CONFIG,
                      default_width="100%")
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
