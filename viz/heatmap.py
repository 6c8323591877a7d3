"""The one plotly heatmap builder of the app (attention, masks, stages, PE tables). No Streamlit here.

What it guarantees, so every page stays light in the browser:
- big matrices are block-averaged (mean pooling) to at most `max_side`² cells before they are sent (a 2048 x 1024 PE
  table with max_side 384 becomes 512 x 256);
- values travel as float32 (plotly encodes them as base64 typed arrays), with a hover template, never a string per
  cell;
- blocked (masked) cells are NaN, drawn in the plot background colour with a ✕, never as a huge negative colour;
- labels are HTML-escaped (plotly renders a subset of HTML) and made unique, since a categorical axis would merge
  repeated tokens ("the" and "the"): the k-th repeat gets k written in binary with two invisible characters
  (zero-width space = 0, zero-width non-joiner = 1), so 512 repeats of one word cost a few bytes each, not k each.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import plotly.graph_objects as go

from i18n import t as tr

from .export_spec import ExportSpec, attach
from .theme import (
    HIGHLIGHT,
    MASKED_BG,
    MIN_CELL_FONT,
    PAGE_WIDTH,
    base_layout,
    cell_text_fits,
    esc,
    figure,
    fonts,
    merge,
    text_width,
    tick_step,
)

MAX_SIDE = 512  # most rows / columns a heatmap sends to the browser
# a numbered axis (model dimensions, positions) longer than this labels every k-th index (at most SPARSE_TICKS
# labels; hover still names every cell): plotly lays out and measures every category label it draws, and on Step by
# step's four 384-dimension heatmaps this cut Chromium's drawing time by about a quarter (median of 5, side by side).
# zsmooth "fast" (one image) halved it but Chromium smooths the scaled image, which blurs the cells: not used.
LONG_AXIS = 64
SPARSE_TICKS = 16
INVISIBLE_BITS = {"0": "\u200b", "1": "\u200c"}  # zero-width space / non-joiner: distinct, never shown


def axis_labels(labels: list | None, n: int | None = None, limit: int = 20) -> list[str]:
    """Escaped, shortened and unique labels (positions 0..n-1 when `labels` is None)."""
    if labels is None:
        return [str(i) for i in range(n or 0)]
    seen: dict[str, int] = {}
    out = []
    for t in labels:
        s = esc(t, limit) or "∅"
        k = seen.get(s, 0)
        seen[s] = k + 1
        out.append(s + "".join(INVISIBLE_BITS[b] for b in format(k, "b")) if k else s)
    return out


def budget_factors(shape: tuple[int, int], max_side: int = MAX_SIDE) -> tuple[int, int]:
    """Pooling factors (rows, cols) that keep a heatmap within max_side² cells, shrinking both axes alike
    (a 14 x 384 matrix is sent as is; 512 x 384 with max_side 256 becomes 256 x 192)."""
    r, c = shape
    if r * c <= max_side * max_side:
        return 1, 1
    f = math.ceil(math.sqrt(r * c / (max_side * max_side)))
    fr, fc = min(f, r), min(f, c)
    while math.ceil(r / fr) * math.ceil(c / fc) > max_side * max_side:  # one axis was too short to shrink
        fr, fc = min(fr + 1, r), min(fc + 1, c)
    return fr, fc


def block_mean(matrix: np.ndarray, row_starts: np.ndarray, col_starts: np.ndarray) -> np.ndarray:
    """The one pooler: the mean of each block between consecutive starts (rows x cols), NaN cells ignored (an all-NaN
    block stays NaN). pool_by (fixed factors) and viz.attention.pool (a target size, uneven blocks) choose the starts."""
    m = np.asarray(matrix, dtype=np.float32)
    valid = ~np.isnan(m)
    sums = np.add.reduceat(np.add.reduceat(np.where(valid, m, 0.0), row_starts, axis=0), col_starts, axis=1)
    counts = np.add.reduceat(np.add.reduceat(valid.astype(np.float32), row_starts, axis=0), col_starts, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).astype(np.float32)


def pool_by(matrix: np.ndarray, fr: int, fc: int) -> np.ndarray:
    """Block-mean (r, c) -> (ceil(r/fr), ceil(c/fc)); NaN cells are ignored (an all-NaN block stays NaN)."""
    m = np.asarray(matrix, dtype=np.float32)
    if fr == 1 and fc == 1:
        return m
    r, c = m.shape
    return block_mean(m, np.arange(0, r, fr), np.arange(0, c, fc))


def pooling_note(shape: tuple[int, int], max_side: int = MAX_SIDE, lang: str = "en") -> str | None:
    """A caption saying a matrix is shown downsampled, or None when it is shown as is."""
    fr, fc = budget_factors(shape, max_side)
    if fr * fc == 1:
        return None
    return tr("ex.viz.pooling_note", lang, n=shape[0], m=shape[1], fr=fr, fc=fc, rn=math.ceil(shape[0] / fr),
             cn=math.ceil(shape[1] / fc))


def heatmap(
    matrix: np.ndarray,
    row_labels: list | None = None,
    col_labels: list | None = None,
    *,
    title: str = "",
    colorscale: str = "Viridis",
    zmin: float | None = None,
    zmax: float | None = None,
    zmid: float | None = None,
    masked: np.ndarray | None = None,  # bool, True = blocked cell: drawn as grey background with a ✕
    xlabel: str = "",
    ylabel: str = "",
    max_side: int = MAX_SIDE,
    height: int | None = None,
    text_auto: bool | None = None,  # write the value in each cell (default: only small matrices)
    lecture: bool = False,
    colorbar_title: str = "",
    hover: str | None = None,  # a plotly hovertemplate; default "row %{y} / col %{x} / value"
    lang: str = "en",  # interface language of the words the figure adds (the pooling note, row / col)
    extra_trace: dict | None = None,  # more heatmap trace attributes, merged as plotly's update_traces would
    extra_layout: dict | None = None,  # more layout attributes (shapes, automargin), merged as update_layout would
    highlight_row: int | None = None,  # a row to outline (the chosen query token): a frame and a bold tick label
    width: int | None = None,  # px it is drawn at on a 1600 px projector (theme.column_width); None: PAGE_WIDTH
    export: ExportSpec | None = None,  # what it exports (None: the matrix, labels, title, zmin / zmax and mask given)
) -> go.Figure:
    """A (rows x cols) heatmap, pooled to fit `max_side`. Row 0 is drawn at the top. `title` must already be escaped
    (it may carry markup such as <sup>). `extra_trace` / `extra_layout` let a caller add to the dicts before the
    figure is built: any go.Figure method (update_traces, update_layout, add_shape) validates, at ~1 ms a call.
    Cell numbers are written only where they fit (`cell_text`), at the size plotly fits to the cells it draws;
    tick labels turn and shrink when the cells are narrower than they are (`tick_style`). The figure carries its
    export (viz.export_spec: `export`, else the data it was given)."""
    if export is None:
        export = ExportSpec(matrix, row_labels, col_labels, title, zmin, zmax, masked)
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {m.shape}")
    for labels, n, axis in ((row_labels, m.shape[0], "rows"), (col_labels, m.shape[1], "columns")):
        if labels is not None and len(labels) != n:
            raise ValueError(f"heatmap of shape {m.shape} got {len(labels)} labels for its {n} {axis}")
    if masked is not None:
        m = np.where(np.asarray(masked, dtype=bool), np.nan, m)
    fr, fc = budget_factors(m.shape, max_side)
    z = pool_by(m, fr, fc)
    rows, cols = axis_labels(row_labels, m.shape[0])[::fr], axis_labels(col_labels, m.shape[1])[::fc]
    if text_auto is None:
        text_auto = z.size <= 144
    finite = np.isfinite(z)
    f = fonts(lecture)
    layout = base_layout(lecture, height or int(min(820, max(300, 22 * z.shape[0] + 150))),
                         title + (tr("ex.viz.pooled", lang, fr=fr, fc=fc) if fr * fc > 1 else ""),
                         width=width or PAGE_WIDTH)  # a title wider than the figure in lines (a half column)
    xticks, yticks = sparse_ticks(cols), sparse_ticks(rows)
    cell_w, cell_h, angle, tick = tick_style(rows, cols, xticks, yticks, width=width or PAGE_WIDTH,
                                             height=layout["height"], lecture=lecture, titled=bool(title),
                                             xlabel=bool(xlabel), ylabel=bool(ylabel),
                                             title_lines=layout["title"]["text"].count("<br>") + 1)
    heat = dict(type="heatmap", z=z, x=cols, y=rows, colorscale=colorscale, hoverongaps=False,
                zmin=zmin, zmax=zmax if zmax is not None or zmin is None or not finite.any() else float(z[finite].max()),
                xgap=1 if z.shape[1] <= 40 else 0, ygap=1 if z.shape[0] <= 40 else 0,
                hovertemplate=hover or f"{esc(ylabel) or tr('ex.viz.row', lang)} %{{y}}<br>"
                                       f"{esc(xlabel) or tr('ex.viz.col', lang)} %{{x}}<br>"
                                       "%{z:.4g}<extra></extra>",
                colorbar=dict(title=dict(text=esc(colorbar_title, 30)), thickness=14))
    if zmid is not None:
        heat["zmid"] = zmid
    heat = {k: v for k, v in heat.items() if v is not None}  # unset = plotly's automatic range
    if text_auto:
        heat.update(texttemplate="%{z:.2f}")
    merge(heat, extra_trace)
    cell_text(heat, z, cell_w, cell_h, lecture)
    data = [heat]
    if masked is not None and fr * fc == 1 and z.size <= 2500:
        ys, xs = np.nonzero(~finite)
        mark = min(f["cell"] + 3, int(min(cell_w, cell_h) * 0.8))
        if mark >= 6:
            data.append(dict(type="scatter", x=[cols[j] for j in xs], y=[rows[i] for i in ys], mode="text",
                             text=["✕"] * len(xs), hoverinfo="skip", showlegend=False,
                             textfont=dict(color="#7a7a7a", size=mark)))
    layout.update(plot_bgcolor=MASKED_BG,
                  xaxis=dict(title=dict(text=esc(xlabel)), type="category", tickfont=dict(size=tick[0]),
                             showgrid=False, **({"tickangle": angle} if angle else {}), **_tickvals(xticks)),
                  yaxis=dict(title=dict(text=esc(ylabel)), type="category", autorange="reversed",
                             tickfont=dict(size=tick[1]), showgrid=False, **_tickvals(yticks)))
    if highlight_row is not None and 0 <= highlight_row < m.shape[0]:
        merge(layout, row_highlight(highlight_row // fr, rows, yticks, lecture))
    return attach(figure(data, merge(layout, extra_layout)), export)


def row_highlight(r: int, rows: list[str], yticks: list | None, lecture: bool = False) -> dict:
    """Layout that outlines row `r` of a heatmap drawn with these (category) row labels: a rectangle around the whole
    row and its tick label in bold, in the highlight colour."""
    frame = dict(type="rect", xref="x domain", yref="y", x0=0, x1=1, y0=r - 0.5, y1=r + 0.5, layer="above",
                 line=dict(color=HIGHLIGHT, width=4 if lecture else 3), fillcolor="rgba(0,0,0,0)")
    vals = list(yticks) if yticks is not None else list(rows)
    if rows[r] not in vals:
        vals = [x for x in rows if x in set(vals) or x == rows[r]]
    text = [f'<b><span style="color:{HIGHLIGHT}">{x}</span></b>' if x == rows[r] else x for x in vals]
    return {"shapes": [frame], "yaxis": {"tickvals": vals, "ticktext": text}}


def tick_style(rows: list[str], cols: list[str], xticks: list | None, yticks: list | None, *, width: int,
               height: int, lecture: bool, titled: bool = True, xlabel: bool = True,
               ylabel: bool = True, title_lines: int = 1) -> tuple[float, float, int, tuple[int, int]]:
    """(cell width, cell height, x tick angle, (x tick size, y tick size)) of a heatmap drawn `width` x `height` px:
    the plot area is what the tick labels, axis titles, colour bar and title leave. A column label wider than its
    cell turns the labels to -60°; tick labels shrink to the spacing of the ticks they label (not below 7 px, or in
    lecture mode the smallest readable cell number, MIN_CELL_FONT). Labels that fit are given no angle: plotly's own
    ("auto") keeps them level on the projector and turns them where the figure is drawn narrower (a phone)."""
    f = fonts(lecture)
    label_w = max((text_width(r, f["tick"]) for r in rows), default=0.0)
    left = label_w + (1.4 * f["axis_title"] if ylabel else 0) + 20
    right = 14 + 30 + text_width("-0.00", f["tick"])  # colour bar, its padding and tick labels
    cell_w = max(1.0, (width - left - right) / max(len(cols), 1))
    x_step = len(cols) / len(xticks) if xticks else 1
    col_w = max((text_width(c, f["tick"]) for c in (xticks or cols)), default=0.0)
    turned = col_w > cell_w * x_step * 0.9
    bottom = (col_w * 0.87 if turned else f["tick"] * 1.4) + (1.4 * f["axis_title"] if xlabel else 0) + 20
    top = (f["title"] * 1.4 * title_lines + 24) if titled else 20
    cell_h = max(1.0, (height - top - bottom) / max(len(rows), 1))
    y_step = len(rows) / len(yticks) if yticks else 1
    x_tick = int(min(f["tick"], cell_w * x_step / 1.3 if turned else f["tick"]))
    y_tick = int(min(f["tick"], cell_h * y_step / 1.25))
    least = MIN_CELL_FONT[True] if lecture else 7  # a projector keeps readable labels (plotly then skips some)
    return cell_w, cell_h, -60 if turned else 0, (max(least, x_tick), max(least, y_tick))


def cell_text(heat: dict, z: np.ndarray, cell_w: float, cell_h: float, lecture: bool) -> None:
    """Keep a heatmap trace's cell text (its texttemplate) only where its longest entry fits a cell at the smallest
    readable size (theme.cell_text_fits, MIN_CELL_FONT); a template with the trace's own text and a number falls back
    to the text alone, then to nothing. The size is left to plotly, which fits it to the cells it draws (up to the
    figure's base size), except for a single row or column, where plotly does not measure: there it is set here."""
    template = heat.get("texttemplate")
    if not template:
        return
    least = MIN_CELL_FONT[bool(lecture)]
    for tpl in (template, "%{text}" if "%{text}" in template and template != "%{text}" else None):
        if tpl is None:
            continue
        longest = _longest_cell(tpl, z, heat.get("text"))
        if cell_text_fits(cell_w - (heat.get("xgap") or 0), cell_h - (heat.get("ygap") or 0), longest, least):
            heat["texttemplate"] = tpl
            if min(z.shape) == 1:
                fit = min(cell_w / max(len(longest) * 0.65, 0.65), cell_h / 1.3, fonts(lecture)["base"])
                heat.setdefault("textfont", {})["size"] = int(fit)
            elif isinstance(heat.get("textfont"), dict):
                heat["textfont"].pop("size", None)  # plotly fits it
            return
    heat.pop("texttemplate", None)


def _longest_cell(template: str, z: np.ndarray, text) -> str:
    """The longest line a cell's texttemplate writes: each %{z:.Nf} as the longest formatted value, %{text} as the
    longest text entry, markup removed."""
    finite = np.asarray(z, dtype=np.float64)[np.isfinite(z)]

    def number(m: re.Match) -> str:
        digits = int(m.group(1))
        return max((f"{v:.{digits}f}" for v in (finite.min(), finite.max())), key=len) if finite.size else ""

    s = re.sub(r"%\{z:\.(\d)f\}", number, template)
    if "%{text}" in s:
        flat = [str(x) for row in (text or []) for x in (row if isinstance(row, (list, tuple)) else [row])]
        longest = max(flat, key=len, default="")
        s = s.replace("%{text}", longest)
    lines = re.split(r"<br\s*/?>", s)
    return max((html.unescape(re.sub(r"<[^>]*>", "", x)) for x in lines), key=len)


def _tickvals(ticks: list | None) -> dict:
    """The axis setting for sparse_ticks' choice: none at all when plotly chooses."""
    return {} if ticks is None else {"tickvals": ticks}


def sparse_ticks(labels: list) -> list | None:
    """Every k-th label of a long axis of plain indices ("0", "1", ... as for model dimensions), at most
    SPARSE_TICKS of them; every label of a word axis (tokens) of at most LONG_AXIS words: left to itself, plotly
    drops every other word when the labels are closer than it likes (a phone, 390 px, lost half the keys); None
    (plotly's own choice) for short numbered axes and long word axes."""
    numbered = all(str(x).isdigit() for x in labels)
    if len(labels) <= LONG_AXIS:
        return None if numbered else list(labels)
    return list(labels[::tick_step(len(labels), SPARSE_TICKS)]) if numbered else None
