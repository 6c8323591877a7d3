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
import re
import unicodedata

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
from _plotly_utils.basevalidators import is_homogeneous_array
from _plotly_utils.utils import to_typed_array_spec
from plotly.basedatatypes import BasePlotlyType

from i18n import Shown

HEAD_COLOURS = [  # one colour per head, repeated beyond 20 heads: Tableau 10 without its grey (faint as a thin line),
    # then colours of Kelly's and Trubetskoy's distinct-colour lists chosen greedily for the largest CIELAB distance to
    # those already taken (every pair of the first 16 is at least ΔE 28 apart; tests/test_lecture.py checks 20)
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#f032e6", "#000075", "#8db600",  # 12 heads
    "#000000", "#800000", "#808000", "#911eb4",  # 16 heads
    "#4363d8", "#b3446c", "#dcbeff", "#42d4f4",  # 20 heads
]
MASKED_BG = "#d9d9d9"  # colour of blocked (masked) cells: the plot background shows through NaN
HIGHLIGHT = "#e15759"  # the selected head / row / query token
LECTURE_SCALE = 1.35  # figure heights in lecture mode
SLIDE_FONT = {"title": 15, "label": 13, "token": 11, "legend": 10, "cell": 8}  # matplotlib exports (points)
# The one table of the plotly figures' text sizes (px), normal and lecture (projector) mode. Streamlit's chart theme
# gives legends, tick labels, axis and colour bar titles and hover labels sizes of its own (12-14 px) that win over
# plotly's inheritance from layout.font, so `figure` writes every size a builder leaves unset from this table.
FONTS = {
    False: {"base": 13, "title": 16, "tick": 12, "axis_title": 14, "legend": 12, "annotation": 16, "cell": 11,
            "bar_text": 12, "hover": 12},
    True: {"base": 20, "title": 23, "tick": 18, "axis_title": 20, "legend": 18, "annotation": 20, "cell": 16,
           "bar_text": 18, "hover": 18},
}
MIN_CELL_FONT = {False: 9, True: 14}  # the smallest number worth writing in a heatmap cell (px)
# The width (px) a figure is drawn at when it fills the page: Streamlit's main area (wide layout) on a 1600 px wide
# window with the sidebar open. Builders that decide on pixels (cell numbers, tick angles) assume it, or a column of it.
PAGE_WIDTH = 1140
PHONE_WIDTH = 358  # the main area of a 390 px phone (Streamlit's 1rem padding each side)
COLUMN_GAP = 16  # st.columns' default gap ("small", 1rem)
CHAR_EM = 0.65  # plotly's own estimate of a character's width in a heatmap cell (its line spacing 1.3 / 2)


def esc(text: object, limit: int = 40) -> str:
    """Plain text for plotly: non-printables shown as \\xNN, shortened, HTML-escaped."""
    s = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text))
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return Shown(html.escape(s, quote=False), s)  # a Korean particle after it is chosen from `s`, not "&lt;…&gt;"


def number_text(v: float, digits: int = 2, *, short: bool = False) -> str:
    """The one way a number drawn in a figure cell is written: rounded to `digits` decimals first, then (`short`, for
    cramped cells) the leading zero of a value under 1 dropped. The drop is decided on the ROUNDED text, so 0.995-0.999
    read "1.00", never ".00" (a defect a lecturer met: `f"{v:.2f}"[1:]` cut the "1" of "1.00"). NaN / inf: "".

        number_text(0.4213) == "0.42";  number_text(0.4213, short=True) == ".42";  number_text(0.997, short=True) == "1.00"
    """
    v = float(v)
    if not math.isfinite(v):
        return ""
    s = f"{v:.{digits}f}"
    if s.startswith("-") and not any(c not in "-0." for c in s):
        s = s[1:]  # -0.00 is 0.00
    if short and digits > 0:
        if s.startswith("0."):
            s = s[1:]
        elif s.startswith("-0."):
            s = "-" + s[2:]
    return s


def head_colour(h: int) -> str:
    return HEAD_COLOURS[h % len(HEAD_COLOURS)]


def rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:.2f})"


def fonts(lecture: bool) -> dict[str, int]:
    """The text sizes (px) of a figure in normal or lecture mode (FONTS)."""
    return FONTS[bool(lecture)]


def font_size(lecture: bool) -> int:
    return fonts(lecture)["base"]


def cell_font_size(lecture: bool) -> int:
    """Numbers written inside heatmap cells."""
    return fonts(lecture)["cell"]


def column_width(n: int, width: int = PAGE_WIDTH) -> int:
    """The width (px) of one of `n` equal st.columns in a container `width` px wide."""
    return int((width - COLUMN_GAP * (n - 1)) / max(n, 1))


def text_width(text: str, px: float) -> float:
    """Estimated width (px) of a line of text at font size `px`: a wide (CJK, Hangul) character 1 em, any other 0.6
    em; markup (<sup>, <br>) and the zero-width characters that keep labels unique are not counted."""
    s = html.unescape(re.sub(r"<[^>]*>", "", str(text)))  # markup off first: an escaped "&lt;pad&gt;" is text
    return px * sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.0 if unicodedata.category(c) == "Cf"
                    else 0.6 for c in s)


def cell_text_fits(cell_w: float, cell_h: float, text: str, px: float) -> bool:
    """Whether `text` (one line) at `px` fits in a heatmap cell of cell_w x cell_h pixels, by plotly's own measure
    (CHAR_EM per character, line height 1.3 em): the one rule that decides whether cells carry their numbers."""
    return len(text) * CHAR_EM * px <= cell_w and 1.3 * px <= cell_h


def base_layout(lecture: bool, height: int, title: str = "", width: int | None = None) -> dict:
    """Common plotly layout: font, height (x LECTURE_SCALE in lecture mode), margins, title. `figure` fills in the
    sizes of the other texts (legend, ticks, axis titles, annotations, bar text) from the same table (FONTS).
    `width`: the px the figure is drawn at; a title wider than that is broken into lines (`wrap_title`), with the
    margin for them: plotly never wraps a title, it cuts it at the figure's edge."""
    f = fonts(lecture)
    lines = 1
    if title and width:
        title, lines = wrap_title(title, width, f["title"])
    return dict(
        height=int(height * (LECTURE_SCALE if lecture else 1.0)),
        font=dict(size=f["base"]),
        title=dict(text=title, font=dict(size=f["title"])),
        # a title in lines sits in the middle of the margin: more room for it, clear of the plot's top tick label
        margin=dict(l=10, r=10, t=title_margin(lecture, lines, below=(lines - 1) * 0.6 * f["title"]) if title else 20,
                    b=10),
    )


def wrap_title(title: str, width: float, px: int) -> tuple[str, int]:
    """(`title` in lines no wider than `width` px at `px` px, the number of lines): broken at its " · " parts, then
    at spaces where one part alone is too wide; markup and escapes stay whole ("<sup>", "&lt;")."""
    room = width - 24  # the title's own padding
    if text_width(title, px) <= room:
        return title, 1
    lines: list[str] = []
    for part in title.split(" · "):
        joined = f"{lines[-1]} · {part}" if lines else part
        if lines and text_width(joined, px) <= room:
            lines[-1] = joined
            continue
        words, line = part.split(" "), ""
        for w in words:  # a part too wide alone: by words
            cand = f"{line} {w}" if line else w
            if line and text_width(cand, px) > room:
                lines.append(line)
                line = w
            else:
                line = cand
        lines.append(line)
    return "<br>".join(lines), len(lines)


def title_on_top(layout: dict, lecture: bool) -> None:
    """Pin a layout's title to the top of the figure (container coordinates), for figures with more text under it
    in the margin (a legend, the heads' numbers). Plotly anchors only the first line of a title at "top": each
    further line (<br>) moves the title up by a line, off the figure; the padding takes it back down."""
    extra = str(layout["title"].get("text", "")).count("<br>")
    layout["title"].update(y=1.0, yref="container", yanchor="top",
                           pad=dict(t=12 + int(extra * fonts(lecture)["title"] * 1.3)))


def title_margin(lecture: bool, lines: int = 1, below: float = 0.0) -> int:
    """Top margin (px) for a figure title of `lines` lines with `below` px of other text (top tick labels, subplot
    titles) between it and the plot."""
    return int(fonts(lecture)["title"] * 1.4 * lines + 24 + below)


_PLAIN = (str, int, float, bool, type(None))
_SKIPPED = frozenset(("geojson", "layer", "layers", "range"))  # keys plotly never turns into typed arrays


def _copy(obj):
    """A copy of the dicts, lists and tuples in `obj`; the leaves shared."""
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_copy(v) for v in obj)
    return obj


def _typed(obj):
    """plotly's `convert_to_base64(deepcopy(obj))` in one pass: containers copied, every array that is a dict's value
    (not under a skipped key) replaced by its typed-array spec, other leaves shared."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in _SKIPPED:
                out[k] = _copy(v)
            elif isinstance(v, np.ndarray) or (not isinstance(v, (*_PLAIN, dict, list, tuple))
                                               and is_homogeneous_array(v)):
                out[k] = to_typed_array_spec(v)
            else:
                out[k] = _typed(v)
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_typed(v) for v in obj)
    return obj


_ORDER: dict[tuple, tuple | None] = {}  # (trace type or "layout", its keys) -> the key order plotly stores, or None


def _key_order(kind: str, d: dict) -> tuple | None:
    """The order in which go.Figure (unvalidated) stores a trace's or the layout's top-level keys: its class's
    property order (a trace's "type" after them), found once per set of keys by making the plotly object; None
    where plotly would not store the values as given (a subplot's second axis is rebuilt as an object, an alias is
    renamed, a trace type is unknown): such figures are built for real."""
    key = (kind, tuple(d))
    if key not in _ORDER:
        try:
            if kind == "layout":
                obj = go.Layout(d, _validate=False)
            else:
                obj = go.Figure()._data_validator.get_trace_class(kind)(d, _validate=False)
        except (KeyError, ValueError, TypeError):
            obj = None
        props = {} if obj is None else obj._props
        same = (obj is not None and sorted(props) == sorted(d)
                and all(props[k] is v for k, v in d.items() if k != "type") and props.get("type") == d.get("type"))
        _ORDER[key] = tuple(props) if same else None
    return _ORDER[key]


def _plotly_ordered(spec: dict) -> tuple[list, dict] | None:
    """(traces, layout) of an unbuilt figure with their keys in the order plotly would store them (None-valued
    top-level keys dropped, as plotly does), or None when plotly would store them otherwise."""
    out = []
    for kind, d in [*((t.get("type"), t) for t in spec["data"]), ("layout", spec["layout"])]:
        d = {k: v for k, v in d.items() if v is not None}
        if kind is None or any(isinstance(v, BasePlotlyType) for v in d.values()):
            return None
        order = _key_order(kind, d)
        if order is None:
            return None
        out.append({k: d[k] for k in order})
    return out[:-1], out[-1]


class Figure(go.Figure):
    """go.Figure whose `to_dict` (what st.plotly_chart and plotly.io serialise) is the same dict as plotly's, made
    without its copy.deepcopy of every container and array and its second walk testing every value for an array:
    0.7-0.96 -> 0.18-0.23 ms for the explorer's heatmap (issue 39). The figure itself is never changed (an array's
    spec is made from a copy of it).

    `Figure.lazy(spec)` (what `figure` returns) is not built until something other than `to_dict` reads it: plotly's
    constructor sets every property one by one and deep-copies them, ~1.2 ms a figure, 2-6 % of the server's CPU
    on an explorer run, and st.plotly_chart only asks for the dict. Any attribute (fig.data, fig.layout,
    update_layout, ...) builds it first, so it behaves as the figure plotly would have built."""

    @classmethod
    def lazy(cls, spec: dict) -> Figure:
        fig = cls.__new__(cls)
        object.__setattr__(fig, "_lazy", _copy(spec))  # the caller's dicts may change later; plotly copies too
        return fig

    def __getattr__(self, name: str):
        spec = self.__dict__.pop("_lazy", None)
        if spec is None:
            raise AttributeError(name)
        go.Figure.__init__(self, spec, _validate=False)
        return getattr(self, name)

    def to_dict(self) -> dict:
        spec = self.__dict__.get("_lazy")
        ordered = _plotly_ordered(spec) if spec is not None else None
        if ordered is not None:
            return {"data": [_typed(t) for t in ordered[0]], "layout": _typed(ordered[1])}
        res = {"data": _typed(self._data), "layout": _typed(self._layout)}
        frames = [_typed(f._props) for f in self._frame_objs]
        if frames:
            res["frames"] = frames
        return res


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A plotly Figure from plain dicts without per-property validation (~1 ms instead of ~25 ms per figure). The
    dicts use only documented plotly attributes. An empty template: plotly's default one is ~7 kB per figure and a
    deep copy on every draw; Streamlit's theme styles the chart in the browser anyway. Every text size the builder
    left unset is written from FONTS (`apply_fonts`). Built only when read, serialised without plotly's deep copy
    (`Figure`)."""
    apply_fonts(data, layout)
    return Figure.lazy({"data": data, "layout": {"template": {}, **layout}})


def is_lecture(layout: dict) -> bool:
    """Whether a layout was made for lecture mode: its base font is the lecture one (base_layout sets it)."""
    return (layout.get("font") or {}).get("size", 0) >= FONTS[True]["base"]


def apply_fonts(data: list[dict], layout: dict) -> None:
    """The one place that sizes a figure's texts: legend (and its title), hover labels, every axis' tick labels and
    title, annotations (subplot titles), colour bars, bar and text-trace labels, from FONTS for the layout's mode
    (`is_lecture`). Only sizes the builder left unset are written (a builder may shrink the ticks of a long axis), but
    annotations are never smaller than the table's size."""
    f = fonts(is_lecture(layout))

    def size(d: dict, key: str, value: int) -> None:
        font = d.setdefault(key, {})
        if isinstance(font, dict) and font.get("size") is None:
            font["size"] = value

    if not any(re.fullmatch(r"[xy]axis\d*", k) for k in layout) and any(
            tr.get("type") in ("heatmap", "scatter", "bar") for tr in data):
        layout["xaxis"], layout["yaxis"] = {}, {}
    for k, axis in layout.items():
        if re.fullmatch(r"[xy]axis\d*", k) and isinstance(axis, dict):
            size(axis, "tickfont", f["tick"])
            title = axis.setdefault("title", {})
            if isinstance(title, dict):
                size(title, "font", f["axis_title"])
    legend = layout.setdefault("legend", {})
    size(legend, "font", f["legend"])
    size(legend.setdefault("title", {}), "font", f["legend"])
    size(layout.setdefault("hoverlabel", {}), "font", f["hover"])
    if isinstance(layout.get("title"), dict):
        size(layout["title"], "font", f["title"])
    for note in layout.get("annotations") or []:  # subplot titles come at make_subplots' 16 px: at least the table's
        font = note.setdefault("font", {})
        font["size"] = max(font.get("size") or 0, f["annotation"])
    for tr in data:
        if isinstance(tr.get("colorbar"), dict):
            size(tr["colorbar"], "tickfont", f["tick"])
            size(tr["colorbar"].setdefault("title", {}), "font", f["axis_title"])
        if tr.get("type") == "bar" and tr.get("text") is not None:
            size(tr, "textfont", f["bar_text"])
        if tr.get("type") == "scatter" and "text" in str(tr.get("mode", "")):
            size(tr, "textfont", f["base"])


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
