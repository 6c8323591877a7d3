"""A decoder-only model's next-token distribution as bars (the Attention explorer's "Next token" section). No
Streamlit here. The tokens come as the reader should see them (model.tokenizer.shown_piece: a byte-level piece
decoded, "ĊĠĠĠĠĠ" as "↵␣␣␣␣␣"); sizes follow the theme, lecture mode included.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import t

from .export_spec import ExportSpec, attach
from .theme import PAGE_WIDTH, base_layout, esc, figure


def next_token_figure(labels: list[str], probs: list[float], *, lecture: bool = False, lang: str = "en",
                      width: int = PAGE_WIDTH) -> go.Figure:
    """Horizontal bars, the most probable token on top: each token's probability, written beside its bar.
    labels: the k tokens as shown; probs: their probabilities (descending). It exports them as one row."""
    k = len(labels)
    # ranks keep repeated labels apart on the category axis ("␣the" twice would be one bar)
    ticks = [f"{esc(x, 24)}\u2009#{i + 1}" for i, x in enumerate(labels)]
    bar = dict(type="bar", x=list(probs), y=ticks, orientation="h", marker=dict(color="#4e79a7"),
               text=[f"{p:.3f}" for p in probs], textposition="outside", cliponaxis=False,
               hovertemplate="%{y}: %{x:.4f}<extra></extra>")
    layout = base_layout(lecture, 70 + 34 * k, esc(t("ex.next.fig", lang, k=k)), width=width)
    layout.update(xaxis=dict(range=[0, 1.12], tickvals=[0, 0.25, 0.5, 0.75, 1],
                             title=dict(text=esc(t("ex.next.prob", lang)))),
                  yaxis=dict(type="category", autorange="reversed"))
    return attach(figure([bar], layout), ExportSpec(np.array([probs]), [t("ex.next.prob", lang)], list(labels),
                                                    t("ex.next.fig", lang, k=k)))
