"""What a figure exports, described once by the builder that draws it: the numbers (a CSV) and the keyword arguments
of its matplotlib twin (viz.export.heatmap_figure, PNG / SVG / PDF). Plain data: no Streamlit, no torch.

    fig = heatmap(m, rows, cols, title="weights", zmin=0, zmax=1)
    spec = spec_of(fig)      # ExportSpec(matrix=m, rows=rows, cols=cols, title="weights", vmin=0, vmax=1)

The shell (ui.widgets.chart) reads it when a page gives no Export of its own, so a page never repeats the matrix,
the labels and the title the figure was built from. A builder that shows its data transformed (a mask drawn as
floats, NaN cells drawn blocked) passes the spec of what it exports (`heatmap(..., export=ExportSpec(...))`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ATTR = "_export_spec"  # where a figure keeps its spec (an underscore name: plotly lets it be set, never sends it)


@dataclass(frozen=True, eq=False)
class ExportSpec:
    matrix: np.ndarray  # (rows, cols): the numbers the CSV holds
    rows: list | None = None  # row labels (None: positions)
    cols: list | None = None  # column labels
    title: str = ""  # plain text, the matplotlib twin's title
    vmin: float | None = None  # the twin's colour range (None: the data's)
    vmax: float | None = None
    masked: np.ndarray | None = None  # bool, True = a blocked cell (drawn hatched in the twin)
    cmap: str | None = None  # the twin's matplotlib colour map (None: its default)
    xlabel: str | None = None  # the twin's axis titles (None: key / query in the interface language)
    ylabel: str | None = None

    def heatmap_kwargs(self) -> dict:
        """The keyword arguments of viz.export.heatmap_figure it sets (those left unset are not named)."""
        kw = {"vmin": self.vmin, "vmax": self.vmax, "masked": self.masked, "cmap": self.cmap, "xlabel": self.xlabel,
              "ylabel": self.ylabel}
        return {k: v for k, v in kw.items() if v is not None}


def attach(fig, spec: ExportSpec | None):
    """`fig` with `spec` kept on it (set without building a lazy viz.theme.Figure); returns `fig`."""
    if spec is not None:
        object.__setattr__(fig, ATTR, spec)
    return fig


def spec_of(fig) -> ExportSpec | None:
    """The spec a builder attached to `fig`, else None (read without building a lazy figure)."""
    return vars(fig).get(ATTR) if hasattr(fig, "__dict__") else None
