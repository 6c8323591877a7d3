"""Download buttons for any matrix figure: PNG / SVG / PDF (matplotlib, slide quality) and CSV.

Figures are rendered lazily (only when the user opens the export popover and
picks a format), so a rerun never pays for matplotlib."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from viz.export import FORMATS, figure_bytes, matrix_csv


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in s)[:60].strip("-") or "figure"


def download_buttons(key: str, make_figure: Callable[[], object], matrix: np.ndarray,
                     row_labels=None, col_labels=None, filename: str = "figure") -> None:
    """An 'Export' popover: choose a format, then download. `make_figure()` returns a matplotlib figure."""
    name = _slug(filename)
    with st.popover("⤓ Export", help="Download this figure for slides, or its numbers"):
        fmt = st.radio("Format", [*FORMATS, "csv"], horizontal=True, key=f"{key}-fmt", index=None)
        if fmt == "csv":
            st.download_button("Download CSV", matrix_csv(matrix, row_labels, col_labels), f"{name}.csv",
                               "text/csv", key=f"{key}-csv")
        elif fmt:
            st.download_button(f"Download {fmt.upper()}", figure_bytes(make_figure(), fmt), f"{name}.{fmt}",
                               FORMATS[fmt], key=f"{key}-{fmt}")
