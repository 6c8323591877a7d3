"""Figures of the Head lab's cross-lingual view (results from analysis.crosslingual; no Streamlit, no model runs):
each language's layer x head grid of query-word -> target-word weight, and a scatter of one against the other."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import head_name
from i18n import t as tr

from .heads import head_grid
from .theme import HIGHLIGHT, base_layout, esc, figure


def weight_grid(side, *, zmax: float, shared: tuple, lecture: bool = False, lang: str = "en",
                width: int | None = None) -> go.Figure:
    """One language: (L, H) weight from the query word to the target word; the heads in both top-k outlined."""
    q = esc(side.query_word, 20)  # the word, its pieces merged with no spaces ("트로피는", not "▁ 트로 피 는")
    k = esc(side.target_word, 20)
    return head_grid(side.weight, diverging=False, zmax=zmax, chosen=list(shared), lecture=lecture, lang=lang, width=width,
                     colorbar_title=tr("e5.xl.weight", lang), title=tr("e5.xl.grid_title", lang, q=q, k=k),
                     export_title=tr("e5.xl.export", lang))


def agreement_scatter(result, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """Every head as a point: its weight in sentence A (x) against sentence B (y); the shared top-k heads marked."""
    wa, wb = result.a.weight, result.b.weight
    L, H = wa.shape
    names = [head_name(la, h, lang) for la in range(L) for h in range(H)]
    shared = {la * H + h for la, h in result.overlap}
    colour = [HIGHLIGHT if i in shared else "#4e79a7" for i in range(L * H)]
    m = float(max(np.nanmax(wa), np.nanmax(wb), 1e-6))
    points = dict(type="scatter", x=wa.reshape(-1).tolist(), y=wb.reshape(-1).tolist(), mode="markers", text=names,
                  marker=dict(color=colour, size=9 if lecture else 7, opacity=0.8),
                  hovertemplate="%{text}<br>A %{x:.3f} · B %{y:.3f}<extra></extra>")
    diagonal = dict(type="scatter", x=[0, m], y=[0, m], mode="lines", line=dict(color="#999", dash="dot"),
                    hoverinfo="skip")
    title = tr("e5.xl.scatter_title", lang, r=f"{result.spearman:.2f}", p=f"{result.pearson:.2f}")
    layout = {**base_layout(lecture, 420, title), "showlegend": False,
              "xaxis": dict(title=dict(text=tr("e5.xl.axis_a", lang))),
              "yaxis": dict(title=dict(text=tr("e5.xl.axis_b", lang)))}
    return figure([points, diagonal], layout)
