"""A small shared plotly heatmap for the positional, mask and step-by-step labs.

What it guarantees, so every lab page stays light in the browser:
- big matrices are block-averaged (mean pooling) to at most `max_side`² cells
  before they are sent (a 2048 x 1024 PE table with max_side 384 becomes 512 x 256);
- values travel as float32 (plotly encodes them as base64 typed arrays), with
  no per-cell hover strings;
- blocked (masked) cells are NaN, drawn in the plot background colour with a
  hatch-like marker, never as a huge negative colour;
- token labels are HTML-escaped (plotly renders a subset of HTML in labels) and
  made unique, since a categorical axis would merge repeated tokens ("the").

No Streamlit here.
"""

from __future__ import annotations

import html
import math
import warnings
from collections import Counter

import numpy as np
import plotly.graph_objects as go

MAX_SIDE = 512  # most rows / columns a heatmap sends to the browser
MASKED_BG = "#d9d9d9"  # colour of blocked cells (NaN shows the plot background)


def safe_label(label: object, limit: int = 24) -> str:
    """A token or title as plain text for plotly: escaped, non-printables as U+FFFD-free codes, shortened."""
    s = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(label))
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s, quote=False)


def unique_labels(labels: list[str] | None, n: int) -> list[str]:
    """Escaped labels, with the position appended to tokens that occur more than once."""
    if labels is None:
        return [str(i) for i in range(n)]
    shown = [safe_label(t, 18) for t in labels]
    counts = Counter(shown)
    return [f"{t} ·{i}" if counts[t] > 1 else t for i, t in enumerate(shown)]


def pool_factor(n: int, max_side: int = MAX_SIDE) -> int:
    return max(1, math.ceil(n / max_side))


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


def pool_by(matrix: np.ndarray, fr: int, fc: int) -> np.ndarray:
    """Block-mean (r, c) -> (ceil(r/fr), ceil(c/fc)); NaN cells are ignored (an all-NaN block stays NaN)."""
    m = np.asarray(matrix, dtype=np.float32)
    if fr == 1 and fc == 1:
        return m
    r, c = m.shape
    pr, pc = math.ceil(r / fr) * fr, math.ceil(c / fc) * fc
    padded = np.full((pr, pc), np.nan, dtype=np.float32)
    padded[:r, :c] = m
    blocks = padded.reshape(pr // fr, fr, pc // fc, fc)  # (r', fr, c', fc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks stay NaN
        return np.nanmean(blocks, axis=(1, 3)).astype(np.float32)


def pool(matrix: np.ndarray, max_rows: int = MAX_SIDE, max_cols: int = MAX_SIDE) -> tuple[np.ndarray, int, int]:
    """Block-mean so that at most max_rows x max_cols remain; returns (pooled, fr, fc)."""
    m = np.asarray(matrix, dtype=np.float32)
    fr, fc = pool_factor(m.shape[0], max_rows), pool_factor(m.shape[1], max_cols)
    return pool_by(m, fr, fc), fr, fc


def _pooled_labels(labels: list[str], factor: int) -> list[str]:
    if factor == 1:
        return labels
    return labels[::factor]  # each block is labelled by its first row / column; the title says it is averaged


def heatmap(
    matrix: np.ndarray,
    row_labels: list[str] | None = None,
    col_labels: list[str] | None = None,
    *,
    title: str = "",
    colorscale: str = "Viridis",
    zmin: float | None = None,
    zmax: float | None = None,
    zmid: float | None = None,
    masked: np.ndarray | None = None,  # bool, True = blocked cell: drawn as grey background, not a colour
    xlabel: str = "",
    ylabel: str = "",
    max_side: int = MAX_SIDE,
    height: int | None = None,
    text_auto: bool | None = None,  # write the value in each cell (default: only small matrices)
    big: bool = False,  # lecture mode: larger fonts
    colorbar_title: str = "",
) -> go.Figure:
    """A (rows x cols) heatmap, pooled to fit `max_side`. Row 0 is drawn at the top."""
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {m.shape}")
    if masked is not None:
        m = np.where(np.asarray(masked, dtype=bool), np.nan, m)
    rows = unique_labels(row_labels, m.shape[0])
    cols = unique_labels(col_labels, m.shape[1])
    fr, fc = budget_factors(m.shape, max_side)
    z = pool_by(m, fr, fc)
    rows, cols = _pooled_labels(rows, fr), _pooled_labels(cols, fc)
    if text_auto is None:
        text_auto = z.size <= 144
    trace = go.Heatmap(
        z=z, x=cols, y=rows, colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid,
        hoverongaps=False, xgap=1 if z.shape[1] <= 40 else 0, ygap=1 if z.shape[0] <= 40 else 0,
        hovertemplate=f"{ylabel or 'row'} %{{y}}<br>{xlabel or 'col'} %{{x}}<br>%{{z:.4g}}<extra></extra>",
        colorbar={"title": {"text": safe_label(colorbar_title, 30)}, "thickness": 14},
    )
    if text_auto:
        trace.update(texttemplate="%{z:.2f}", textfont={"size": 16 if big else 11})
    fig = go.Figure(trace)
    if masked is not None and fr * fc == 1 and z.size <= 2500:
        ys, xs = np.nonzero(np.isnan(z))
        fig.add_trace(go.Scatter(x=[cols[j] for j in xs], y=[rows[i] for i in ys], mode="text", text=["✕"] * len(xs),
                                 textfont={"color": "#7a7a7a", "size": 14 if big else 10}, hoverinfo="skip",
                                 showlegend=False))
    note = f" (shown averaged in {fr}×{fc} blocks)" if fr * fc > 1 else ""
    n_rows = z.shape[0]
    fig.update_layout(
        title={"text": title + note, "font": {"size": 22 if big else 15}},
        height=height or int(min(720, max(260, 22 * n_rows + 140)) * (1.25 if big else 1)),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor=MASKED_BG,
        font={"size": 17 if big else 12},
    )
    fig.update_xaxes(title_text=xlabel, type="category", tickangle=-60 if len(cols) > 8 else 0, showgrid=False)
    fig.update_yaxes(title_text=ylabel, type="category", autorange="reversed", showgrid=False)
    return fig


def pooling_note(shape: tuple[int, int], max_side: int = MAX_SIDE) -> str | None:
    """A caption saying a matrix is shown downsampled, or None when it is shown as is."""
    fr, fc = budget_factors(shape, max_side)
    if fr * fc == 1:
        return None
    return (f"The {shape[0]} × {shape[1]} matrix is shown averaged over blocks of {fr} × {fc} cells "
            f"({math.ceil(shape[0] / fr)} × {math.ceil(shape[1] / fc)}) to keep the page fast; "
            "the export buttons give the full numbers.")


def mpl_plain(text: str) -> str:
    """User text for a matplotlib title: '$' escaped so it is never parsed as mathtext ("$\\frac$" would raise)."""
    return str(text).replace("$", r"\$")
