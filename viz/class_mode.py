"""Class mode's figures (no Streamlit): the spread of a live question's answers (and, after the reveal, the model's
weight on each option beside it), and the class's head ranking as a layer x head grid (analysis.class_heads)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import t as tr

from .heads import head_grid
from .heatmap import heatmap
from .theme import HIGHLIGHT, base_layout, esc, figure, fonts, number_text, title_margin

_GREY, _GREEN, _BLUE = "#bab0ac", "#59a14f", "#4e79a7"


def answer_bars(counts: list[int], labels: list[str], *, answer: int | None = None,
                weights: list[float | None] | None = None, title: str = "", lecture: bool = False,
                lang: str = "en") -> go.Figure:
    """How many students chose each option (bars, the model's answer green once revealed); with `weights`, the
    weight the model gave each option as a second bar per option on a right-hand axis (0 to 1)."""
    xs = [f"{esc(lab, 18)}\u2009·{i}" for i, lab in enumerate(labels)]
    n = np.asarray(counts, dtype=np.int64)
    colours = [_GREEN if i == answer else HIGHLIGHT if answer is not None else _GREY for i in range(len(n))]
    data = [dict(type="bar", x=xs, y=n.tolist(), name=esc(tr("class.fig.students", lang)), marker=dict(color=colours),
                 text=[str(int(v)) for v in n], textposition="outside", offsetgroup="a",
                 hovertemplate="%{x}: %{y}<extra></extra>")]
    legend_px = int(fonts(lecture)["legend"] * 1.8) if weights is not None else 0  # one row of legend
    layout = base_layout(lecture, 380 + legend_px, title)
    layout.update(xaxis=dict(type="category", tickangle=-60 if len(xs) > 8 else 0),
                  yaxis=dict(title=dict(text=esc(tr("class.fig.students", lang))), rangemode="tozero",
                             range=[0, max(1, int(n.max(initial=0))) * 1.25],
                             **({"dtick": 1} if n.max(initial=0) < 10 else {})),  # whole students
                  bargap=0.25, showlegend=weights is not None)
    if weights is not None:
        # the title at the top of the figure, the legend's row between it and the plot (issue 34: the legend, placed
        # at y=1.12 of the plot, sat on the title)
        if title:
            layout["title"].update(y=1.0, yref="container", yanchor="top", pad=dict(t=12))
        layout["margin"]["t"] = (title_margin(lecture) if title else 10) + legend_px
        layout["legend"] = dict(orientation="h", x=0.0, xanchor="left", y=1.0, yanchor="bottom")
        w = [float("nan") if v is None else float(v) for v in weights]
        data.append(dict(type="bar", x=xs, y=w, name=esc(tr("class.fig.weight", lang)), yaxis="y2",
                         offsetgroup="b", marker=dict(color=_BLUE, opacity=0.6),
                         text=[number_text(v) for v in w], textposition="outside",
                         hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
        layout["yaxis2"] = dict(title=dict(text=esc(tr("class.fig.weight", lang))), overlaying="y", side="right",
                                range=[0, 1.15], showgrid=False)
    return figure(data, layout)


def ranking_grid(ranking, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """The class's agreement per head, 0 to 1, the best head outlined."""
    return head_grid(ranking.agreement, diverging=False, zmax=1.0, chosen=[ranking.best] if ranking.best else None,
                     lecture=lecture, lang=lang, colorbar_title=tr("class.fig.agreement", lang),
                     title=tr("class.fig.ranking", lang, n=ranking.used))


def head_map(att: np.ndarray, rows: list[str], cols: list[str], *, query: int, title: str = "",
             lecture: bool = False, lang: str = "en") -> go.Figure:
    """One head's attention map on a class sentence, the query's row outlined."""
    return heatmap(np.asarray(att, dtype=np.float32), rows, cols, title=title, zmin=0.0, zmax=1.0,
                   xlabel=tr("ex.axis.key", lang), ylabel=tr("ex.axis.query", lang), highlight_row=query,
                   lecture=lecture, lang=lang)
