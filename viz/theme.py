"""The one theme of every figure: sizes and fonts for normal and lecture (projector) mode, head colours, safe text
for plotly, and a fast figure constructor. No Streamlit here.

Plotly renders a subset of HTML in titles, tick labels, hover text and annotations, so every user-derived string
(tokens, the sentence) goes through `esc()` before it reaches a figure.
"""

from __future__ import annotations

import html
import math

import plotly.graph_objects as go

HEAD_COLOURS = [  # one colour per head (Tableau 10 + 2), repeated beyond 12 heads
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#17becf", "#8c564b",
]
MASKED_BG = "#d9d9d9"  # colour of blocked (masked) cells: the plot background shows through NaN
HIGHLIGHT = "#e15759"  # the selected head / row / query token
LECTURE_SCALE = 1.35  # figure heights in lecture mode
SLIDE_FONT = {"title": 15, "label": 13, "token": 11, "legend": 10, "cell": 8}  # matplotlib exports (points)


def esc(text: object, limit: int = 40) -> str:
    """Plain text for plotly: non-printables shown as \\xNN, shortened, HTML-escaped."""
    s = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text))
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s, quote=False)


def head_colour(h: int) -> str:
    return HEAD_COLOURS[h % len(HEAD_COLOURS)]


def rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:.2f})"


def font_size(lecture: bool) -> int:
    return 20 if lecture else 13


def cell_font_size(lecture: bool) -> int:
    """Numbers written inside heatmap cells."""
    return 16 if lecture else 11


def base_layout(lecture: bool, height: int, title: str = "") -> dict:
    """Common plotly layout: font, height (x LECTURE_SCALE in lecture mode), margins, title."""
    fs = font_size(lecture)
    return dict(
        height=int(height * (LECTURE_SCALE if lecture else 1.0)),
        font=dict(size=fs),
        title=dict(text=title, font=dict(size=fs + 3)),
        margin=dict(l=10, r=10, t=60 if title else 20, b=10),
    )


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A plotly Figure from plain dicts without per-property validation (~1 ms instead of ~25 ms per figure). The
    dicts use only documented plotly attributes. An empty template: plotly's default one is ~7 kB per figure and a
    deep copy on every draw; Streamlit's theme styles the chart in the browser anyway."""
    return go.Figure({"data": data, "layout": {"template": {}, **layout}}, _validate=False)


def tick_step(n: int, limit: int) -> int:
    """The one label-thinning rule: label every k-th of n positions, k the smallest power of two that leaves at most
    `limit` labels (1 when n fits). Used by the plotly index axes (viz.heatmap.sparse_ticks) and the matplotlib
    exports' ticks (viz.export)."""
    return 1 if n <= limit else 2 ** math.ceil(math.log2(n / limit))
