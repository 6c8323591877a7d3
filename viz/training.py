"""The Training page's figures (issue 36): the learning-rate schedule, label smoothing's targets, teacher forcing's
mask and logits, dropout's maps, and a lab run's curves and attention maps at one snapshot. They draw the frozen
results of analysis/training.py (no Streamlit, no torch); titles in `lang` from the catalogue ("train.*").
"""

from __future__ import annotations

import html
import re

import numpy as np
import plotly.graph_objects as go

from analysis.training import Dropout, RunView, Schedule, Smoothing, StepLogits, TeacherForcing
from i18n import head_name, t

from .export_spec import ExportSpec, attach
from .heatmap import heatmap
from .masks import mask_heatmap
from .theme import HIGHLIGHT, base_layout, esc, figure, fonts, subplot_axes, subplot_grid, title_margin

PAPER_COLOUR, CHOSEN_COLOUR, LAB_COLOUR = "#9c9c9c", "#4e79a7", "#f28e2b"


def _two_lines(title: str, sub: str) -> str:
    """A figure title in two lines (the second smaller), already escaped: long titles fit a phone's width."""
    return f"{esc(title, 120)}<br><sup>{esc(sub, 120)}</sup>"


def plain_title(title: str | None) -> str:
    """A figure's title as plain text (for an export's title): its two lines joined by " · ", markup removed."""
    return html.unescape(re.sub(r"<[^>]*>", "", str(title or "").replace("<br>", " · ")))


def _x_marker(step: int, colour: str = HIGHLIGHT) -> dict:
    """A vertical line at `step` across the whole figure."""
    return dict(type="line", xref="x", yref="paper", x0=step, x1=step, y0=0, y1=1,
                line=dict(color=colour, width=2, dash="dot"))


# ---- the schedule ---------------------------------------------------------------------------------------------------
def schedule_figure(paper: Schedule, chosen: Schedule, *, lang: str = "en", lecture: bool = False) -> go.Figure:
    """The paper's schedule (d_model 512, warm-up 4,000) and the sliders' one, with their peaks."""
    data = []
    for s, colour, name, dash in ((paper, PAPER_COLOUR, "train.sched.paper", "dash"),
                                  (chosen, CHOSEN_COLOUR, "train.sched.chosen", None)):
        label = t(name, lang, d=s.d_model, w=s.warmup)
        data.append(dict(type="scatter", x=s.steps, y=s.rate, mode="lines", name=label,
                         line=dict(color=colour, width=3, dash=dash),
                         hovertemplate=t("train.sched.hover", lang) + "<extra></extra>"))
        data.append(dict(type="scatter", x=[s.warmup], y=[s.peak_rate], mode="markers", showlegend=False,
                         marker=dict(color=colour, size=10), hoverinfo="skip"))
    layout = base_layout(lecture, 380, t("train.sched.fig", lang))
    layout.update(xaxis=dict(title=dict(text=t("train.axis.step", lang))),
                  yaxis=dict(title=dict(text=t("train.axis.lr", lang)), exponentformat="e"),
                  legend=dict(orientation="h", y=-0.25))
    return figure(data, layout)


def lab_schedule_figure(formula: Schedule, run: RunView, *, lang: str = "en", lecture: bool = False) -> go.Figure:
    """The lab's schedule (its formula) and the rates its recorded run actually used (the snapshots' lr)."""
    data = [dict(type="scatter", x=formula.steps, y=formula.rate, mode="lines", line=dict(color=LAB_COLOUR, width=3),
                 name=t("train.sched.formula", lang, d=formula.d_model, w=formula.warmup),
                 hovertemplate=t("train.sched.hover", lang) + "<extra></extra>"),
            dict(type="scatter", x=run.steps, y=run.lr, mode="markers", marker=dict(color="#333333", size=7),
                 name=t("train.sched.used", lang), hovertemplate=t("train.sched.hover", lang) + "<extra></extra>")]
    layout = base_layout(lecture, 320, t("train.sched.lab_fig", lang, steps=run.total_steps))
    layout.update(xaxis=dict(title=dict(text=t("train.axis.step", lang))),
                  yaxis=dict(title=dict(text=t("train.axis.lr", lang)), exponentformat="e"),
                  legend=dict(orientation="h", y=-0.3))
    return figure(data, layout)


# ---- label smoothing ------------------------------------------------------------------------------------------------
def smoothing_figure(sm: Smoothing, *, lang: str = "en", lecture: bool = False) -> go.Figure:
    """One position's targets (one-hot, smoothed) and the trained model's prediction over the top entries, the rest
    of the vocabulary pooled in the last bar."""
    x = [esc(w, 16) for w in sm.labels] + [t("train.smooth.rest", lang, n=sm.rest)]
    series = (("train.smooth.onehot", sm.onehot, "#bab0ac"), ("train.smooth.smoothed", sm.smoothed, LAB_COLOUR),
              ("train.smooth.model", sm.model, CHOSEN_COLOUR))
    data = [dict(type="bar", x=x, y=y, name=t(k, lang, eps=sm.eps), marker=dict(color=c),
                 text=[f"{v:.3f}" for v in y], textposition="outside", cliponaxis=False,
                 hovertemplate="%{x}: %{y:.4f}<extra></extra>") for k, y, c in series]
    layout = base_layout(lecture, 400, t("train.smooth.fig", lang, word=esc(sm.word, 16), pos=sm.position,
                                         v=sm.vocab_size))
    layout.update(barmode="group", yaxis=dict(title=dict(text=t("train.axis.prob", lang)), range=[0, 1.12]),
                  xaxis=dict(title=dict(text=t("train.axis.entry", lang))), legend=dict(orientation="h", y=-0.3))
    return figure(data, layout)


# ---- teacher forcing ------------------------------------------------------------------------------------------------
def _positions(tf: TeacherForcing) -> list[str]:
    """Row labels: each decoder input with the label it must predict ("<bos> → the")."""
    return [f"{a} → {b}" for a, b in zip(tf.decoder_input, tf.labels)]


def mask_figure(tf: TeacherForcing, *, lang: str = "en", lecture: bool = False, width: int | None = None) -> go.Figure:
    """The look-ahead mask over the decoder's input (the Mask lab's one mask builder: True = may attend); it exports
    the mask as 0.0 / 1.0 by the decoder's input tokens, in the data's own range."""
    fig = mask_heatmap(tf.mask, _positions(tf), list(tf.decoder_input), title=esc(t("train.tf.mask_fig", lang)),
                       xlabel=t("train.axis.key", lang), ylabel=t("train.axis.position", lang), lecture=lecture,
                       lang=lang, width=width)
    dec = list(tf.decoder_input)
    return attach(fig, ExportSpec(tf.mask.astype(float), dec, dec, t("train.tf.mask_fig", lang)))


def logits_figure(tf: TeacherForcing, which: StepLogits, title: str, *, lang: str = "en", lecture: bool = False,
                  width: int | None = None) -> go.Figure:
    """Softmax at every position of one training step (over the whole vocabulary; the sentence's entries shown),
    the label's cell framed. It exports the probabilities by the decoder's input tokens, under `title` (plain)."""
    cols = list(which.columns)
    frames = [dict(type="rect", xref="x", yref="y", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5, layer="above",
                   line=dict(color=HIGHLIGHT, width=3 if lecture else 2), fillcolor="rgba(0,0,0,0)")
              for i, j in enumerate(cols.index(lbl) for lbl in tf.labels)]
    return heatmap(which.probs, _positions(tf), cols, title=esc(title, 120), zmin=0.0, zmax=1.0,
                   xlabel=t("train.axis.entry", lang), ylabel=t("train.axis.position", lang), lecture=lecture,
                   colorbar_title=t("train.axis.prob", lang), lang=lang, width=width,
                   extra_layout={"shapes": frames},
                   export=ExportSpec(which.probs, list(tf.decoder_input), cols, title))  # its own range


def position_loss_figure(tf: TeacherForcing, *, lang: str = "en", lecture: bool = False) -> go.Figure:
    """Each position's label-smoothed loss, untrained against trained."""
    rows = _positions(tf)
    data = [dict(type="bar", x=[esc(r, 24) for r in rows], y=s.loss, name=t(k, lang), marker=dict(color=c),
                 hovertemplate="%{x}: %{y:.3f}<extra></extra>")
            for k, s, c in (("train.tf.untrained", tf.untrained, PAPER_COLOUR), ("train.tf.trained", tf.trained,
                                                                                 LAB_COLOUR))]
    layout = base_layout(lecture, 340, t("train.tf.loss_fig", lang, a=tf.untrained.mean_loss, b=tf.trained.mean_loss))
    layout.update(barmode="group", yaxis=dict(title=dict(text=t("train.axis.loss", lang))),
                  legend=dict(orientation="h", y=-0.45))
    return figure(data, layout)


# ---- dropout ------------------------------------------------------------------------------------------------------
def dropout_figures(d: Dropout, *, lang: str = "en", lecture: bool = False,
                    width: int | None = None) -> tuple[go.Figure, go.Figure]:
    """The head's weights in training mode (the dropped cells marked) and in inference mode, on one colour scale.
    Each exports its weights under its title as plain text, the twin in the data's own colour range."""
    top = float(max(d.train.max(), d.eval.max(), 1e-6))
    where = head_name(d.layer, d.head, lang, block=d.block if d.block != "encoder" else None)
    out = []
    for key, m in (("train.drop.train", d.train), ("train.drop.eval", d.eval)):
        fmt = dict(where=where, seed=d.seed, n=int(d.dropped.sum()), p=d.p)
        title = _two_lines(t(key + "_fig", lang, **fmt), t(key + "_sub", lang, **fmt))
        fig = heatmap(m, list(d.rows), list(d.cols), masked=~d.allowed, title=title, zmin=0.0, zmax=top,
                      xlabel=t("train.axis.key", lang), ylabel=t("train.axis.query", lang), lecture=lecture,
                      colorbar_title=t("train.axis.weight", lang), lang=lang, width=width, text_auto=False,
                      extra_layout={"margin": {"t": title_margin(lecture, 2)}})
        if key == "train.drop.train" and d.dropped.any():
            ys, xs = np.nonzero(d.dropped)
            cols, rows = fig.data[0].x, fig.data[0].y
            fig.add_trace(go.Scatter(x=[cols[j] for j in xs], y=[rows[i] for i in ys], mode="markers",
                                     name=t("train.drop.dropped", lang), hoverinfo="skip",
                                     marker=dict(symbol="x-thin", size=14 if lecture else 10,
                                                 line=dict(width=3, color=HIGHLIGHT))))
            fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.3))
        out.append(attach(fig, ExportSpec(m, list(d.rows), list(d.cols), plain_title(fig.layout.title.text))))
    return out[0], out[1]


# ---- a lab run ------------------------------------------------------------------------------------------------------
def curves_figure(run: RunView, step: int | None, *, lang: str = "en", lecture: bool = False) -> go.Figure:
    """Loss, alignment (and token accuracy) and learning rate against the step, a marker at `step`. Lines without
    point markers and one marker shape: the slider redraws this figure on every move, and each SVG node costs."""
    titles = [t("train.run.loss", lang), t("train.run.alignment", lang), t("train.run.lr", lang)]
    layout = base_layout(lecture, 560, "")
    layout.update(subplot_grid(3, 1, titles, vertical_spacing=0.09, shared_xaxes=True))
    series = ((1, run.loss, "train.run.loss", LAB_COLOUR), (2, run.alignment, "train.run.alignment", CHOSEN_COLOUR),
              (2, run.accuracy, "train.run.accuracy", "#59a14f"), (3, run.lr, "train.run.lr", PAPER_COLOUR))
    data = []
    for row, y, key, colour in series:
        xa, ya = subplot_axes(row, 1, 1)
        data.append(dict(type="scatter", x=run.steps, y=y, mode="lines", name=t(key, lang), xaxis=xa,
                         yaxis=ya, line=dict(color=colour, width=3),
                         hovertemplate=t("train.run.hover", lang) + "<extra></extra>"))
    f = fonts(lecture)
    layout["yaxis2"].update(range=[0, 1.05])
    layout["yaxis3"].update(exponentformat="e")
    layout["xaxis3"].update(range=[0, run.total_steps], title=dict(text=t("train.axis.step", lang)))
    layout.update(legend=dict(orientation="h", y=-0.12, font=dict(size=f["legend"])),
                  margin=dict(l=10, r=10, t=40, b=10))
    if step is not None:  # one line across the three panels (their x axes match the bottom one's)
        layout["shapes"] = [dict(_x_marker(step), xref=subplot_axes(3, 1, 1)[0], yref="paper")]
    return figure(data, layout)


def _attention_rows(run: RunView) -> list[str]:
    return [f"{a} → {b}" for a, b in zip(run.decoder_input, (*run.target, "<eos>"))]


def cross_figure(run: RunView, i: int, head: int | str = "mean", *, lang: str = "en", lecture: bool = False,
                 width: int | None = None) -> go.Figure:
    """The fixed sentence's cross-attention at snapshot i (the last decoder layer, one head or their mean: the
    alignment's own reading), the cells the task says are right circled (layout shapes: no second trace to
    validate, so the slider's redraw stays cheap)."""
    layer = run.cross.shape[1] - 1
    maps = run.cross[i, layer]  # (h, n, m)
    m = maps.mean(0) if head == "mean" else maps[int(head)]
    where = t("train.run.mean_heads", lang, layer=layer) if head == "mean" else head_name(layer, int(head), lang,
                                                                                          block="cross")
    title = _two_lines(t("train.run.cross_fig", lang, step=int(run.steps[i])), where)
    r = 0.32  # the circles' radius, in cells
    rings = [dict(type="circle", xref="x", yref="y", x0=j - r, x1=j + r, y0=row - r, y1=row + r, layer="above",
                  line=dict(color=HIGHLIGHT, width=3 if lecture else 2)) for row, j in enumerate(run.right)]
    fig = heatmap(m, _attention_rows(run), list(run.source), title=title, zmin=0.0, zmax=1.0,
                  xlabel=t("train.axis.source", lang), ylabel=t("train.axis.position", lang), lecture=lecture,
                  colorbar_title=t("train.axis.weight", lang), lang=lang, width=width, text_auto=False,
                  extra_layout={"shapes": rings, "margin": {"t": title_margin(lecture, 2)}})
    return fig


def encoder_figure(run: RunView, i: int, layer: int, head: int, *, lang: str = "en", lecture: bool = False,
                   width: int | None = None) -> go.Figure:
    """One encoder head's self-attention on the fixed sentence at snapshot i."""
    title = _two_lines(t("train.run.enc_fig", lang, step=int(run.steps[i])), head_name(layer, head, lang))
    return heatmap(run.encoder[i, layer, head], list(run.source), list(run.source), title=title, zmin=0.0, zmax=1.0,
                   xlabel=t("train.axis.key", lang), ylabel=t("train.axis.query", lang), lecture=lecture,
                   colorbar_title=t("train.axis.weight", lang), lang=lang, width=width, text_auto=False,
                   extra_layout={"margin": {"t": title_margin(lecture, 2)}})
