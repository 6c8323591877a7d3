"""The one theme of every figure: sizes and fonts for normal and lecture (projector) mode, head colours, safe text
for plotly, and a fast figure constructor (plain dicts, no validation) with what the validating graph_objects calls
used to do for it: merging into a layout or trace, make_subplots' grid, plotly.py's named colour scales. No Streamlit
here.

Plotly renders a subset of HTML in titles, tick labels, hover text and annotations, so every user-derived string
(tokens, the sentence) goes through `esc()` before it reaches a figure.
"""

from __future__ import annotations

import functools
import html
import math

import plotly.colors as pc
import plotly.graph_objects as go

from i18n import Shown

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
    return Shown(html.escape(s, quote=False), s)  # a Korean particle after it is chosen from `s`, not "&lt;…&gt;"


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


def colour_scale(name: str) -> list[list]:
    """A named plotly.py colour scale ("RdBu", "RdBu_r") as the [[position, colour], ...] list that plotly's
    validation sends to the browser. plotly.js has scales of its own under some of the same names and they differ
    (its "RdBu" runs blue to red, plotly.py's red to blue), so a builder that used to validate sends this list to
    keep its colours."""
    return [list(p) for p in _colour_scale(name)]


@functools.lru_cache(maxsize=16)
def _colour_scale(name: str) -> tuple[tuple[float, str], ...]:
    colours = [c for _, c in pc.get_colorscale(name)]
    d = len(colours) - 1
    return tuple((i / d, c) for i, c in enumerate(colours))  # plotly's own positions: i / d


def merge(base: dict, extra: dict | None) -> dict:
    """`base` updated in place by `extra` as plotly's update_layout / update_traces would: nested dicts key by key,
    anything else (lists, numbers, text) replaced. Returns `base`."""
    for k, v in (extra or {}).items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


def subplot_grid(rows: int, cols: int, titles: list[str], *, horizontal_spacing: float | None = None,
                 vertical_spacing: float | None = None, shared_xaxes: bool = False, shared_yaxes: bool = False) -> dict:
    """The layout that plotly's make_subplots(rows, cols, subplot_titles=titles, ...) builds for a plain grid (row 1
    at the top, no specs), without its ~1-3 ms of validation: axis domains with the same arithmetic, shared axes
    (`matches` the first axis of the column / row, the others' tick labels hidden) and the titles as annotations.
    A trace in row r, column c (1-based) names the axes of subplot i = (r - 1) * cols + c: xaxis "x{i}", yaxis "y{i}"
    ("x" and "y" for i = 1), see `subplot_axes`."""
    hs = 0.2 / cols if horizontal_spacing is None else horizontal_spacing
    vs = 0.5 / rows if vertical_spacing is None else vertical_spacing  # make_subplots' default with titles
    widths = [(1.0 - hs * (cols - 1)) / cols] * cols
    heights = [(1.0 - vs * (rows - 1)) / rows] * rows
    starts_x = [sum(widths[:c]) + c * hs for c in range(cols)]
    starts_y = [sum(heights[:r]) + r * vs for r in range(rows)][::-1]  # row 1 (index 0) at the top
    layout: dict = {}
    annotations = []
    for r in range(rows):
        for c in range(cols):
            x_dom = [starts_x[c], starts_x[c] + widths[c]]
            y_dom = [_unit(starts_y[r]), _unit(starts_y[r] + heights[-1 - r])]
            sx, sy = subplot_axes(r + 1, c + 1, cols)
            layout["xaxis" + sx[1:]] = {"anchor": sy, "domain": [max(0.0, x_dom[0]), min(1.0, x_dom[1])]}
            layout["yaxis" + sy[1:]] = {"anchor": sx, "domain": [max(0.0, y_dom[0]), min(1.0, y_dom[1])]}
            title = titles[r * cols + c] if r * cols + c < len(titles) else ""
            if title:
                annotations.append({"font": {"size": 16}, "showarrow": False, "text": title, "x": sum(x_dom) / 2.0,
                                    "xanchor": "center", "xref": "paper", "y": y_dom[1], "yanchor": "bottom",
                                    "yref": "paper"})
    if shared_xaxes:  # each column's axes match its bottom row's; only the bottom row keeps tick labels
        for c in range(cols):
            first = subplot_axes(rows, c + 1, cols)[0]
            for r in range(rows - 1):
                layout["xaxis" + subplot_axes(r + 1, c + 1, cols)[0][1:]].update(matches=first, showticklabels=False)
    if shared_yaxes:  # each row's axes match its first column's; only the first column keeps tick labels
        for r in range(rows):
            first = subplot_axes(r + 1, 1, cols)[1]
            for c in range(1, cols):
                layout["yaxis" + subplot_axes(r + 1, c + 1, cols)[1][1:]].update(matches=first, showticklabels=False)
    if annotations:
        layout["annotations"] = annotations
    return layout


def subplot_axes(row: int, col: int, cols: int) -> tuple[str, str]:
    """The (xaxis, yaxis) references of a trace in subplot (row, col) of `subplot_grid` (1-based): ("x", "y"),
    ("x2", "y2") ..."""
    i = (row - 1) * cols + col
    return ("x", "y") if i == 1 else (f"x{i}", f"y{i}")


def _unit(v: float) -> float:
    """make_subplots' rounding of a y domain end within 0.01 outside [0, 1]."""
    return 0.0 if -0.01 < v < 0.0 else 1.0 if 1.0 < v < 1.01 else v


def tick_step(n: int, limit: int) -> int:
    """The one label-thinning rule: label every k-th of n positions, k the smallest power of two that leaves at most
    `limit` labels (1 when n fits). Used by the plotly index axes (viz.heatmap.sparse_ticks) and the matplotlib
    exports' ticks (viz.export)."""
    return 1 if n <= limit else 2 ** math.ceil(math.log2(n / limit))
