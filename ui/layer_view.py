"""The figures of one layer's sublayers (Add & Norm, Feed Forward, the layer output) as the Step by step page and the
guided tour both draw them: viz.tour's builders, each matrix with its export, and the check of the layer output
against the model's own hidden state. Shared by ui/steps_page.py and ui/tour.py, so that neither page module
imports the other."""

from __future__ import annotations

import streamlit as st

from i18n import t
from viz import tour as vt

from .view import View
from .widgets import Export, chart

WEIGHTS = ("W_1", "W_2", "W_gate")  # figures whose rows are dimensions, not tokens


def draw_figures(view: View, figs: dict, prefix: str, tokens: list[str], layer: int) -> None:
    """Figures of viz.tour's Add & Norm / Feed Forward builders; the matrices with their exports."""
    for name, (fig, m) in figs.items():
        if m is None:
            st.plotly_chart(fig, key=f"{prefix}_{name}")
            continue
        rows = tokens if name not in WEIGHTS else [str(i) for i in range(m.shape[0])]
        chart(fig, f"{prefix}_{name}", Export(m, rows, [str(j) for j in range(m.shape[1])], fig.layout.title.text,
                                              view.text, f"{view.model_name}-L{layer}-{prefix}-{name}"))


def output_check(sub: dict, hidden, layer: int, lang: str) -> None:
    """The layer output recomputed from its sublayers against the model's own hidden state (≤ 1e-5: a success)."""
    diff = vt.layer_output_check(sub, hidden, layer)
    if diff is not None:
        (st.success if diff < 1e-5 else st.warning)(t("tour.ffn.check", lang, diff=diff, layer=layer))
