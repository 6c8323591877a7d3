"""Slide-quality export of any matrix figure: PNG / SVG / PDF drawn with
matplotlib (readable token labels, colourbar, a title with model / layer / head /
sentence), and CSV of the numbers. No Streamlit here.

Usage (pages go through ui.downloads.download_buttons):
    fig = heatmap_figure(matrix, row_labels, col_labels, title="minilm-l6 · Layer 3 · Head 1", subtitle=text)
    png = figure_bytes(fig, "png");  csv = matrix_csv(matrix, row_labels, col_labels)
"""

from __future__ import annotations

import csv
import io
import threading

import numpy as np

from .theme import MASKED_BG, SLIDE_FONT, number_text, tick_step

FORMATS = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf"}
_CJK_FONTS = ("Noto Sans CJK KR", "Noto Sans CJK JP", "Noto Sans CJK SC", "NanumGothic", "UnDotum")


_SETUP = threading.Lock()


def pyplot():
    """matplotlib.pyplot, imported when an export is first drawn (not at start-up: ~0.4 s of every fresh process,
    when a lecture hall waits for it) and set up once: the Agg backend, and no mathtext parsing of labels, which carry
    user text ("$\\frac$"). Under a lock: two sessions exporting at once must not import it twice."""
    with _SETUP:
        import matplotlib

        if matplotlib.get_backend().lower() != "agg":
            matplotlib.use("Agg")
        matplotlib.rcParams["text.parse_math"] = False
        import matplotlib.pyplot as plt
    return plt


def font_family() -> list[str]:
    """DejaVu Sans first, then a CJK font when installed, so Korean labels render."""
    pyplot()
    from matplotlib import font_manager

    have = {f.name for f in font_manager.fontManager.ttflist}
    return ["DejaVu Sans", *[f for f in _CJK_FONTS if f in have]]


def short_label(label: str, limit: int = 18) -> str:
    label = "".join(ch if ch.isprintable() else "\ufffd" for ch in str(label))
    label = label if len(label) <= limit else label[: limit - 1] + "…"
    return label


def heatmap_figure(
    matrix: np.ndarray,
    row_labels: list[str] | None = None,
    col_labels: list[str] | None = None,
    *,
    title: str = "",
    subtitle: str = "",
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    xlabel: str = "key",
    ylabel: str = "query",
    colorbar_label: str = "",
    annotate: bool | None = None,
    masked: np.ndarray | None = None,  # bool, True = cell is blocked (drawn hatched grey, not as a colour)
):
    """A (rows x cols) heatmap sized for a slide. Labels are thinned above ~60 per axis."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {m.shape}")
    rows, cols = m.shape
    plt = pyplot()
    plt.rcParams["font.family"] = font_family()
    side = min(16.0, max(6.0, 0.32 * max(rows, cols) + 3))
    fig, ax = plt.subplots(figsize=(side * 1.15, side), dpi=150)
    shown = np.ma.masked_where(masked, m) if masked is not None else np.ma.masked_invalid(m)
    cm = plt.get_cmap(cmap).with_extremes(bad=MASKED_BG)
    im = ax.imshow(shown, cmap=cm, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    if masked is not None and masked.any():
        ys, xs = np.nonzero(masked)
        ax.scatter(xs, ys, marker="x", s=max(4, 600 / max(rows, cols)), c="#888888", linewidths=0.8)
    for labels, n, setter, rot in ((col_labels, cols, ax.set_xticks, 90), (row_labels, rows, ax.set_yticks, 0)):
        if labels is None:
            continue
        step = tick_step(n, 60)
        idx = list(range(0, n, step))
        setter(idx, [short_label(labels[i]) for i in idx], rotation=rot, fontsize=max(6, min(14, 300 / max(len(idx), 1))))
    if annotate is None:
        annotate = rows * cols <= 256
    if annotate:
        for (i, j), v in np.ndenumerate(m):
            if np.isfinite(v) and not (masked is not None and masked[i, j]):
                ax.text(j, i, number_text(v), ha="center", va="center", fontsize=SLIDE_FONT["cell"],
                        color="white" if (vmax is None or v < 0.6 * (vmax or 1)) else "black")
    ax.set_xlabel(xlabel, fontsize=SLIDE_FONT["label"])
    ax.set_ylabel(ylabel, fontsize=SLIDE_FONT["label"])
    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if colorbar_label:
        cb.set_label(colorbar_label, fontsize=SLIDE_FONT["label"])
    full = title + (f"\n“{short_label(subtitle, 90)}”" if subtitle else "")
    ax.set_title(full, fontsize=SLIDE_FONT["title"])
    fig.tight_layout()
    return fig


def figure_bytes(fig, fmt: str = "png") -> bytes:
    """Render and close a matplotlib figure."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt, bbox_inches="tight")
    finally:
        pyplot().close(fig)
    return buf.getvalue()


def matrix_csv(matrix: np.ndarray, row_labels: list[str] | None = None, col_labels: list[str] | None = None) -> bytes:
    """CSV with a header row of column labels and a first column of row labels (position-prefixed, so repeated
    tokens stay distinct). Cells that could start a spreadsheet formula are quoted with a leading apostrophe."""
    m = np.asarray(matrix)
    m2 = m.reshape(m.shape[0], -1) if m.ndim != 1 else m[:, None]
    rows = row_labels or [str(i) for i in range(m2.shape[0])]
    cols = col_labels or [str(j) for j in range(m2.shape[1])]
    safe = lambda s: ("'" + s) if s[:1] in ("=", "+", "-", "@") else s  # noqa: E731
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["", *[safe(f"{j}:{c}") for j, c in enumerate(cols)]])
    for i, (label, row) in enumerate(zip(rows, m2)):
        w.writerow([safe(f"{i}:{label}"), *[f"{v:.6g}" for v in row]])
    return buf.getvalue().encode("utf-8")
