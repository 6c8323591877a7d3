"""Encoder-decoder decoding page figures (no Streamlit here): decoder self-attention with its look-ahead triangle,
cross-attention rows, the newest token's cross-attention bar, the top-5 next tokens. The runs come from
analysis.decoding. Notation: L decoder layers, h heads, T steps, m source length.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from analysis.decoding import TOP_K, DecodingRun
from i18n import t

from .export_spec import ExportSpec, attach
from .heatmap import heatmap
from .theme import base_layout, esc, figure


# ---- figures ------------------------------------------------------------------------------------------------------
def pick(att: np.ndarray, layer: int, head: int | str) -> np.ndarray:
    """One layer's attention for a head, or the mean over heads (head == "mean"). att (L, h, ...) -> (...)"""
    a = att[layer]
    return a.mean(0) if head == "mean" else a[int(head)]


def head_name(layer: int, head: int | str, lang: str = "en") -> str:
    return t("s2s.layer_n", lang, i=layer) + " · " + (t("s2s.head_mean", lang) if head == "mean"
                                                     else t("s2s.head_n", lang, i=head))


def export_where(run: DecodingRun, layer: int, head: int | str, lang: str = "en") -> str:
    """The model, the task and the head an export's title names ("seq2seq-tiny · copy · Layer 0 · Head 1")."""
    return " · ".join(x for x in (run.model, run.task, head_name(layer, head, lang)) if x)


def self_attention_figure(run: DecodingRun, step: int, layer: int, head: int | str, *, full: bool = False,
                          lecture: bool = False, lang: str = "en", width: int | None = None,
                          title: str | None = None, xlabel: str | None = None,
                          ylabel: str | None = None) -> tuple[go.Figure, np.ndarray, np.ndarray, list[str]]:
    """Decoder self-attention at `step` (1-based): (t x t), or all T rows when `full` (teacher forcing).
    Blocked cells (above the diagonal) are grey. `title`, `xlabel`, `ylabel`: another page's names (the tour's).
    It exports the matrix, 0 to 1 with the blocked cells hatched, under the model, task and head.
    Returns (figure, matrix, blocked, labels)."""
    s = run.steps[(len(run.steps) if full else step) - 1]
    m = pick(s.self_attention, layer, head)  # (t, t)
    blocked = ~np.tril(np.ones(m.shape, dtype=bool))  # look-ahead: position i may not see j > i
    if title is None:
        title = t("s2s.fig.self", lang, where=head_name(layer, head, lang)) + (
            "" if full else " · " + t("s2s.step_n", lang, i=step))
    fig = heatmap(m, s.inputs, s.inputs, title=title, zmin=0.0, zmax=1.0, masked=blocked,
                  xlabel=t("s2s.axis.key_earlier", lang) if xlabel is None else xlabel,
                  ylabel=t("s2s.axis.query_input", lang) if ylabel is None else ylabel, lecture=lecture,
                  colorbar_title=t("s2s.axis.weight", lang), lang=lang, width=width,
                  extra_layout={"shapes": [_row_outline(step - 1, m.shape[1])]} if full else None,
                  export=ExportSpec(m, s.inputs, s.inputs,
                                    t("s2s.fig.self", lang, where=export_where(run, layer, head, lang)), vmin=0, vmax=1,
                                    masked=blocked))
    return fig, m, blocked, s.inputs


def cross_figure(run: DecodingRun, step: int, layer: int, head: int | str, *, full: bool = False,
                 lecture: bool = False, lang: str = "en", width: int | None = None, title: str | None = None,
                 xlabel: str | None = None, ylabel: str | None = None) -> tuple[go.Figure, np.ndarray, list[str]]:
    """Cross-attention rows (target rows x source columns) of steps 1..step (all T in teacher forcing);
    the current step's row is outlined (`title`, `xlabel`, `ylabel`: another page's names). It exports the rows, 0 to
    1, under the model, task and head. Returns (figure, matrix, row labels)."""
    upto = len(run.steps) if full else step
    m = pick(run.cross_matrix(upto), layer, head)  # (upto, m)
    rows = run.steps[upto - 1].inputs
    fig = heatmap(m, rows, run.source_tokens,
                  title=t("s2s.fig.cross", lang, where=head_name(layer, head, lang)) if title is None else title,
                  zmin=0.0, zmax=1.0, xlabel=t("s2s.axis.source", lang) if xlabel is None else xlabel,
                  ylabel=t("s2s.axis.input", lang) if ylabel is None else ylabel,
                  lecture=lecture, colorbar_title=t("s2s.axis.weight", lang), lang=lang, width=width,
                  extra_layout={"shapes": [_row_outline(step - 1, m.shape[1])]},
                  export=ExportSpec(m, rows, run.source_tokens,
                                    t("s2s.fig.cross", lang, where=export_where(run, layer, head, lang)), vmin=0,
                                    vmax=1, xlabel=t("s2s.axis.source_short", lang), ylabel=t("s2s.axis.input", lang)))
    return fig, m, rows


def _row_outline(row: int, n_cols: int) -> dict:
    """A red rectangle around one row of a categorical heatmap (categories sit at 0, 1, 2 ...)."""
    return {"type": "rect", "xref": "x", "yref": "y", "x0": -0.5, "x1": n_cols - 0.5, "y0": row - 0.5,
            "y1": row + 0.5, "line": {"color": "#e63946", "width": 3}}


def cross_row_figure(run: DecodingRun, step: int, layer: int, head: int | str, *, lecture: bool = False,
                     lang: str = "en", width: int | None = None, title: str | None = None,
                     ylabel: str | None = None) -> go.Figure:
    """Bar chart: where the newest decoder token looks in the source at this step (`title`, `ylabel`: another
    page's names)."""
    s = run.steps[step - 1]
    row = pick(s.cross_row, layer, head)  # (m,)
    labels = [f"{esc(t, 16)}\u2009·{i}" for i, t in enumerate(run.source_tokens)]
    best = int(row.argmax())
    colours = ["#e63946" if i == best else "#4e79a7" for i in range(len(row))]
    bar = dict(type="bar", x=labels, y=row, marker=dict(color=colours), hovertemplate="%{x}: %{y:.3f}<extra></extra>")
    if title is None:
        title = t("s2s.fig.row", lang, step=step, token=esc(s.inputs[-1], 16), out=esc(s.chosen, 16))
    layout = base_layout(lecture, 320, title, width=width)  # a long title in lines (a half column)
    layout.update(yaxis=dict(range=[0, 1], title=dict(text=t("s2s.axis.weight", lang) if ylabel is None else ylabel)),
                  xaxis=dict(type="category", tickangle=-60 if len(labels) > 8 else 0))
    return figure([bar], layout)


def topk_figure(run: DecodingRun, step: int, *, lecture: bool = False, lang: str = "en",
                width: int | None = None, title: str | None = None, xlabel: str | None = None) -> go.Figure:
    """Horizontal bars: the five most probable next tokens at this step (softmax over the vocabulary; `title`,
    `xlabel`: another page's names). It exports every step's top-5 (topk_table), 0 to 1."""
    s = run.steps[step - 1]
    allowed = getattr(s, "top_allowed", None) or (True,) * len(s.top_tokens)  # a shortlist's verdict (translator)
    out = "\u2009" + t("s2s.not_in_shortlist", lang)
    labels = [f"{esc(tok, 20)}\u2009#{i + 1}{'' if ok else out}"
              for i, (tok, ok) in enumerate(zip(s.top_tokens, allowed))]
    colours = ["#2a9d8f" if tok == s.chosen else "#bab0ac" if ok else "#e9c46a"
               for tok, ok in zip(s.top_tokens, allowed)]
    bar = dict(type="bar", x=s.top_probs, y=labels, orientation="h", marker=dict(color=colours),
               text=[f"{p:.3f}" for p in s.top_probs], textposition="outside", cliponaxis=False,
               hovertemplate="%{y}: %{x:.4f}<extra></extra>")
    layout = base_layout(lecture, 300, t("s2s.fig.topk", lang, step=step, k=TOP_K) if title is None else title,
                         width=width)
    layout.update(xaxis=dict(range=[0, 1.12], title=dict(text=t("s2s.axis.probability", lang) if xlabel is None else xlabel),
                             tickvals=[0, 0.25, 0.5, 0.75, 1]),
                  yaxis=dict(autorange="reversed", type="category"))
    return attach(figure([bar], layout), ExportSpec(*topk_table(run), t("s2s.export.topk", lang, model=run.model),
                                                    vmin=0, vmax=1))


def topk_table(run: DecodingRun) -> tuple[np.ndarray, list[str], list[str]]:
    """(T, TOP_K) probabilities with row labels 'step t: input -> chosen' and column labels rank 1..k, for CSV."""
    m = np.stack([s.top_probs for s in run.steps])
    rows = [f"step {i + 1}: {s.inputs[-1]} -> {s.chosen} | top: {' '.join(s.top_tokens)}"
            for i, s in enumerate(run.steps)]
    return m, rows, [f"p{k + 1}" for k in range(TOP_K)]
