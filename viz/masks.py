"""Mask lab figures (no Streamlit here): boolean masks, a padded batch's mask, and one head's raw scores, masked
scores (blocked = grey ✕, not a colour) and softmax weights with a Σ-row column. The numbers come from
analysis.masks (the model's own forward). Convention: True = may attend.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import t

from .export_spec import ExportSpec
from .heatmap import heatmap
from .theme import MASKED_BG, MIN_CELL_FONT, PAGE_WIDTH, base_layout, esc, figure, fonts, text_width

ALLOWED_COLOUR = "#2a9d8f"
MASK_SCALE = [[0.0, MASKED_BG], [0.5, MASKED_BG], [0.5, ALLOWED_COLOUR], [1.0, ALLOWED_COLOUR]]


def mask_heatmap(mask: np.ndarray, rows: list[str], cols: list[str], *, title: str, lecture: bool = False,
                 xlabel: str | None = None, ylabel: str | None = None, lang: str = "en",
                 width: int | None = None) -> go.Figure:
    """A boolean mask: teal = may attend (1), grey = blocked (0). Axis labels default to key / query in `lang`."""
    colorbar = {"tickvals": [0.25, 0.75], "ticktext": [t("masks.blocked", lang), t("masks.may_attend", lang)]}
    return heatmap(np.asarray(mask, dtype=np.float32), rows, cols, title=title, colorscale=MASK_SCALE, zmin=0, zmax=1,
                   xlabel=t("masks.axis.key", lang) if xlabel is None else xlabel,
                   ylabel=t("masks.axis.query", lang) if ylabel is None else ylabel, lecture=lecture,
                   text_auto=np.asarray(mask).size <= 400, lang=lang, width=width,
                   extra_trace={"texttemplate": "%{z:.0f}", "colorbar": colorbar},
                   export=ExportSpec(np.asarray(mask).astype(int), rows, cols, title, vmin=0, vmax=1))  # 0 / 1 cells


def batch_mask_heatmap(tokens: list[list[str]], mask: np.ndarray, *, lecture: bool = False,
                       lang: str = "en", pad: str | None = None) -> go.Figure:
    """The (b, n) padding mask of a batch, each cell labelled with its token where the tokens fit their cells at a
    readable size on a projector-wide page (else on hover only); `pad` names the model's padding token in the colour
    bar ("[PAD]", "<pad>"; default "padding")."""
    b, n = mask.shape
    blocked = t("masks.pad_blocked", lang, pad=esc(pad or t("notes.pad.none", lang)))
    text = [[esc(t, 12) for t in row] for row in tokens]
    cell_w = (PAGE_WIDTH - 220) / max(n, 1) - 4  # the sentence names and the colour bar take ~220 px
    longest = max((text_width(x, 1.0) for row in text for x in row), default=0.0)  # em
    size = int(min(fonts(lecture)["cell"] + 1, cell_w / longest if longest else 99))
    shown = {"texttemplate": "%{text}", "textfont": {"size": size}} if size >= MIN_CELL_FONT[bool(lecture)] else {}
    heat = dict(type="heatmap", z=mask.astype(np.float32), x=[str(j) for j in range(n)],
                y=[t("masks.sentence_n", lang, i=i + 1) for i in range(b)], text=text, **shown,
                colorscale=MASK_SCALE, zmin=0, zmax=1,
                xgap=2, ygap=2, hovertemplate="%{y}, " + t("masks.axis.position", lang) + " %{x}: %{text}<extra></extra>",
                colorbar=dict(tickvals=[0.25, 0.75], ticktext=[blocked, t("masks.real_token", lang)]))
    layout = base_layout(lecture, 120 + 70 * b, t("masks.fig.batch", lang))
    layout.update(xaxis=dict(title=dict(text=t("masks.axis.position", lang)), type="category"),
                  yaxis=dict(autorange="reversed", type="category"))
    return figure([heat], layout)


def with_row_sums(weights: np.ndarray, col_labels: list[str], lang: str = "en") -> tuple[np.ndarray, list[str]]:
    """Append a 'Σ row' column to the weights: every entry should read 1.000."""
    w = np.asarray(weights, dtype=np.float64)
    return np.concatenate([w, w.sum(axis=1, keepdims=True)], axis=1), [*col_labels, t("masks.row_sum", lang)]


def stage_figures(stages: dict[str, np.ndarray], rows: list[str], cols: list[str], *, title: str,
                  lecture: bool = False, max_side: int = 256, lang: str = "en",
                  width: int | None = None) -> dict[str, go.Figure]:
    """Raw scores, masked scores (blocked = grey ✕, not a colour) and softmax weights with a row-sum column.
    `title` is plain text made by the page (model, layer, head), never user text: it may hold plotly's <sup>. Each
    exports its matrix as computed ("scores · title"; the weights without their row sums, the masked scores with
    their blocked cells), the matplotlib twin in the data's own colour range."""
    blocked = ~stages["mask"]
    spec = {name: ExportSpec(stages["scaled" if name == "masked" else name], rows, cols, f"{name} · {title}",
                             masked=blocked if name == "masked" else None) for name in ("scores", "masked", "weights")}
    lim = float(np.abs(stages["scaled"][~blocked]).max()) if (~blocked).any() else 1.0
    w_sum, cols_sum = with_row_sums(stages["weights"], cols, lang)
    key, query = t("masks.axis.key", lang), t("masks.axis.query", lang)
    return {
        "scores": heatmap(stages["scores"], rows, cols, title=t("masks.fig.scores", lang, title=title),
                          colorscale="RdBu_r", zmid=0, xlabel=key, ylabel=query, lecture=lecture, max_side=max_side, lang=lang, width=width,
                          export=spec["scores"]),
        "masked": heatmap(stages["scaled"], rows, cols, masked=blocked, colorscale="RdBu_r", zmin=-lim, zmax=lim,
                          title=t("masks.fig.masked", lang, title=title), xlabel=key, ylabel=query, lecture=lecture,
                          max_side=max_side, lang=lang, width=width, export=spec["masked"]),
        "weights": heatmap(w_sum, rows, cols_sum, zmin=0, zmax=1, xlabel=key, ylabel=query, lecture=lecture,
                           max_side=max_side, title=t("masks.fig.weights", lang, title=title), lang=lang, width=width,
                           export=spec["weights"]),
    }
