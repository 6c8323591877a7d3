"""The one widget that draws a figure with its Export popover: PNG / SVG / PDF (matplotlib, slide quality) and CSV.

Exports are lazy: nothing is rendered with matplotlib, and no CSV is made, until the user opens the popover and
picks a format; a rerun never pays for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

from viz.export import FORMATS, figure_bytes, heatmap_figure, matrix_csv
from viz.html import HTML_MIME, figure_html

PLOTLY_CONFIG = {"displaylogo": False}


@dataclass
class Export:
    """What a figure exports: its numbers (CSV) and a matplotlib twin (PNG / SVG / PDF). By default the twin is
    `viz.export.heatmap_figure(matrix, rows, cols, title=title, subtitle=subtitle, **heatmap)`."""

    matrix: np.ndarray
    rows: list | None = None
    cols: list | None = None
    title: str = ""
    subtitle: str = ""
    filename: str = "figure"
    make_figure: Callable[[], object] | None = None  # a custom matplotlib figure
    heatmap: dict | None = None  # keyword arguments for heatmap_figure (cmap, vmin, masked, xlabel ...)

    def figure(self):
        if self.make_figure is not None:
            return self.make_figure()
        return heatmap_figure(self.matrix, self.rows, self.cols, title=self.title, subtitle=self.subtitle,
                              **(self.heatmap or {}))


def slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in s)[:60].strip("-") or "figure"


def export_popover(key: str, export: Export, fig=None) -> None:
    """PNG / SVG / PDF (matplotlib), CSV, and, for a plotly figure, a standalone interactive HTML file that opens
    offline (plotly.js embedded; built only when clicked)."""
    name = slug(export.filename)
    with st.popover("⤓ Export", help="Download this figure for slides, or its numbers"):
        fmt = st.radio("Format", [*FORMATS, "csv", *(["html"] if fig is not None else [])], horizontal=True,
                       key=f"{key}-fmt", index=None)
        if fmt == "html":
            st.download_button("Download HTML", lambda: figure_html(fig, title=export.title or export.filename),
                               f"{name}.html", HTML_MIME, key=f"{key}-html",
                               help="An interactive chart that opens in any browser without a server or internet.")
        elif fmt == "csv":
            st.download_button("Download CSV", matrix_csv(export.matrix, export.rows, export.cols), f"{name}.csv",
                               "text/csv", key=f"{key}-csv")
        elif fmt:
            st.download_button(f"Download {fmt.upper()}", figure_bytes(export.figure(), fmt), f"{name}.{fmt}",
                               FORMATS[fmt], key=f"{key}-{fmt}")


def chart(fig, key: str, export: Export | None = None, **kwargs):
    """st.plotly_chart plus, when `export` is given, its Export popover under it. Returns the chart's event state."""
    state = st.plotly_chart(fig, key=key, config={**PLOTLY_CONFIG, **kwargs.pop("config", {})}, **kwargs)
    if export is not None:
        export_popover(f"{key}-export", export, fig)
    return state
