"""Word alignment from cross-attention, and the decoder's SSRU, for the Encoder-decoder page (no Streamlit, no model
runs: pure functions of numpy arrays and token lists).

The translation models (Firefox Translations' "tiny" en→pt / pt→en students, Marian) cut text into SentencePiece
pieces that mark a word start with "▁" (U+2581). Alignment figures are read word by word, so the pieces are grouped
into words first (`merge_pieces`) and the piece-level cross-attention becomes a word-level alignment
(`word_alignment`). Two pictures of it:
- `alignment_matrix_figure`: the heatmap of Bahdanau et al. (2015) and the guided-alignment papers, source words
  on x, target words on y;
- `alignment_lines_figure`: source words on a top row, target words on a bottom row, a line per strong pair, so that
  a reordered phrase ("European Economic Area" → "Espaço Económico Europeu") shows as crossing lines.

The decoder of these models has no masked self-attention: each of its layers runs an SSRU (simpler simple recurrent
unit, Kim et al. 2019) instead,

    f_t = σ(W_f x_t + b_f)            (the forget gate, one value per channel)
    c_t = f_t ⊙ c_{t−1} + (1 − f_t) ⊙ (W x_t),    c_{−1} = 0
    h_t = ReLU(c_t)

`forget_gate_figure` shows f (how much of its memory each position keeps); `ssru_contributions` unrolls the
recurrence into how much each earlier position's input W x_j is still in the memory c_t, and
`ssru_contributions_figure` draws that lower triangle. It is a weighting of the recurrence, not attention: nothing
is compared with a query, and a row sums to 1 − ∏ f (the rest is the empty initial state), not to 1.

Every token reaches a figure through `theme.esc` (plotly renders a subset of HTML).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import t as tr

from .export_spec import ExportSpec, attach
from .heatmap import axis_labels, heatmap
from .theme import (
    PAGE_WIDTH,
    base_layout,
    colour_scale,
    esc,
    figure,
    fonts,
    number_text,
    rgba,
    text_width,
    title_margin,
)

WORD_START = "\u2581"  # SentencePiece's "▁": the piece starts a new word
SPECIAL_PIECES = frozenset({"</s>", "<s>", "<pad>", "<unk>"})  # Marian's specials (when `special` is not given)
LINE_COLOUR = "#4e79a7"  # theme.HEAD_COLOURS[0]: the alignment lines
COLORSCALE = "Viridis"  # as the attention heatmaps (viz.attention.COLORSCALE)
GATE_COLORSCALE = "Blues"  # plotly.py's (theme.colour_scale): 0 (forget everything) white, 1 (keep it all) dark blue
LABEL_LIMIT = 24  # characters of a word label before it is shortened with "…"

Group = tuple[str, list[int]]


# ---- pieces -> words -------------------------------------------------------------------------------------------------
def is_punctuation(text: str) -> bool:
    """Whether a piece's text (without "▁") is punctuation or symbols only (".", ",", "«", "%", "—")."""
    return bool(text) and all(unicodedata.category(c)[0] in "PS" for c in text)


def merge_pieces(tokens: Sequence[str], special: Sequence[bool] | None = None, *,
                 drop_special: bool = False) -> list[Group]:
    """SentencePiece pieces grouped into words: [(word text without "▁", [piece indices])], in order.

    - a piece starting with "▁" starts a new word; any other piece continues the word before it;
    - a piece of punctuation or symbols only ("." or "▁(") is a word of its own, and the piece after it starts a new
      word even without "▁";
    - a bare "▁" piece (SentencePiece writes one before some characters) joins the piece after it;
    - special tokens (`special[i]` True; when `special` is None, the pieces in SPECIAL_PIECES such as "</s>") are
      groups of their own, text as written, or left out with `drop_special`.

        merge_pieces(["▁European", "▁Econom", "ic", "▁Area", ".", "</s>"])
        -> [("European", [0]), ("Economic", [1, 2]), ("Area", [3]), (".", [4]), ("</s>", [5])]
    """
    tokens = [str(x) for x in tokens]
    if special is None:
        special = [x in SPECIAL_PIECES for x in tokens]
    if len(special) != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {len(special)} special flags")
    groups: list[list] = []  # [text, indices, closed]: a closed group takes no continuation piece
    for i, (piece, is_special) in enumerate(zip(tokens, special)):
        if is_special:
            if not drop_special:
                groups.append([piece, [i], True])
            continue
        starts = piece.startswith(WORD_START)
        text = piece.lstrip(WORD_START) if starts else piece
        last = groups[-1] if groups else None
        open_blank = last is not None and not last[2] and last[0] == ""  # a bare "▁" waiting for its word
        if open_blank:
            last[0] = text
            last[1].append(i)
            last[2] = is_punctuation(text)
        elif starts or last is None or last[2] or is_punctuation(text):
            groups.append([text, [i], is_punctuation(text)])
        else:
            last[0] += text
            last[1].append(i)
    return [(text or WORD_START, idx) for text, idx, _ in groups]


def _indices(group: Group | Sequence[int]) -> list[int]:
    """A group's piece indices: a (text, indices) pair of merge_pieces, or the indices themselves."""
    if isinstance(group, tuple) and len(group) == 2 and isinstance(group[0], str):
        return list(group[1])
    return list(group)


def word_alignment(weights: np.ndarray, target_groups: Sequence[Group | Sequence[int]],
                   source_groups: Sequence[Group | Sequence[int]]) -> np.ndarray:
    """Piece-level cross-attention (T target pieces, N source pieces) -> word-level alignment (Tw, Nw).

    The usual conversion of subword attention into word alignment (as in the alignment-extraction work on
    Transformers, e.g. Garg et al. 2019, Zenkel et al. 2019): a **source** word gets the **sum** of its pieces'
    weights, because attention is a distribution over the source pieces and splitting a word into pieces splits its
    share (summing keeps a target piece's distribution a distribution over words); a **target** word gets the
    **mean** of its pieces' rows, because each piece is one decoding step with a distribution of its own (a mean
    of distributions is again one, so a long word does not weigh more). Rows therefore still sum to the mass on the
    source groups given: 1 when every source piece is in a group, less when some (e.g. a dropped "</s>") are not.
    Groups are merge_pieces' (text, indices) pairs or plain index lists."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"word_alignment needs a (target, source) matrix, got shape {w.shape}")
    T, N = w.shape
    rows = np.zeros((len(target_groups), T))
    for g, group in enumerate(target_groups):
        idx = _indices(group)
        if not idx or min(idx) < 0 or max(idx) >= T:
            raise ValueError(f"target group {g} has pieces {idx} outside 0-{T - 1}")
        rows[g, idx] = 1.0 / len(idx)
    cols = np.zeros((N, len(source_groups)))
    for g, group in enumerate(source_groups):
        idx = _indices(group)
        if not idx or min(idx) < 0 or max(idx) >= N:
            raise ValueError(f"source group {g} has pieces {idx} outside 0-{N - 1}")
        cols[idx, g] = 1.0
    return (rows @ w @ cols).astype(np.float32)


def _prepare(source_tokens: Sequence[str], target_tokens: Sequence[str], weights: np.ndarray, merge: bool,
             drop_special: bool, source_special: Sequence[bool] | None,
             target_special: Sequence[bool] | None) -> tuple[list[Group], list[Group], np.ndarray]:
    """(source groups, target groups, word-level matrix) for the figures; one group per piece without `merge`."""
    w = np.asarray(weights, dtype=np.float32)
    if w.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(f"weights of shape {w.shape} for {len(target_tokens)} target and "
                         f"{len(source_tokens)} source tokens")
    if merge:
        src = merge_pieces(source_tokens, source_special, drop_special=drop_special)
        tgt = merge_pieces(target_tokens, target_special, drop_special=drop_special)
    else:
        def keep(tokens, special):
            flags = special if special is not None else [x in SPECIAL_PIECES for x in tokens]
            return [(str(x), [i]) for i, (x, s) in enumerate(zip(tokens, flags)) if not (drop_special and s)]
        src, tgt = keep(source_tokens, source_special), keep(target_tokens, target_special)
    if not src or not tgt:
        raise ValueError("nothing to align: no source or no target word left")
    return src, tgt, word_alignment(w, tgt, src)


def _pieces_note(group: Group, tokens: Sequence[str]) -> str:
    """" (▁Econom · ic)" for a word of several pieces (escaped), "" for one piece."""
    idx = group[1]
    return "" if len(idx) < 2 else " (" + " · ".join(esc(tokens[i], 16) for i in idx) + ")"


# ---- the matrix ------------------------------------------------------------------------------------------------------
def alignment_matrix_figure(source_tokens: Sequence[str], target_tokens: Sequence[str], weights: np.ndarray, *,
                            lang: str = "en", merge: bool = True, drop_special: bool = False,
                            source_special: Sequence[bool] | None = None,
                            target_special: Sequence[bool] | None = None, lecture: bool = False,
                            title: str | None = None, width: int | None = None) -> go.Figure:
    """The alignment as a heatmap: source words on x (top to bottom order of reading: left to right), target words
    on y (first at the top), cell = word_alignment of `weights` (T target tokens, N source tokens; row t is the
    cross-attention of the decoder step whose token is target_tokens[t]). `merge=False` keeps the pieces. Hover: both
    words (with their pieces when merged) and the weight, in `lang`. `title` must be escaped (default: the
    catalogue's). Both alignment figures export `weights` as given (pieces, specials kept), 0 to 1, under `title`."""
    src, tgt, m = _prepare(source_tokens, target_tokens, weights, merge, drop_special, source_special,
                           target_special)
    unit = "word" if merge else "token"
    xlabel, ylabel = tr(f"align.axis.source_{unit}", lang), tr(f"align.axis.target_{unit}", lang)
    cols, rows = [g[0] for g in src], [g[0] for g in tgt]  # heatmap escapes them and makes repeats unique
    src_note = [_pieces_note(g, source_tokens) for g in src]
    tgt_note = [_pieces_note(g, target_tokens) for g in tgt]
    custom = [[[tn, sn] for sn in src_note] for tn in tgt_note]
    hover = (f"{tr('align.hover.target', lang)}: %{{y}}%{{customdata[0]}}<br>"
             f"{tr('align.hover.source', lang)}: %{{x}}%{{customdata[1]}}<br>"
             f"{tr('align.axis.weight', lang)}: %{{z:.3f}}<extra></extra>")
    return heatmap(m, rows, cols, title=tr("align.matrix.title", lang) if title is None else title,
                   colorscale=COLORSCALE, zmin=0.0, zmax=1.0, xlabel=xlabel, ylabel=ylabel, lecture=lecture,
                   colorbar_title=tr("align.axis.weight", lang), hover=hover, lang=lang, width=width,
                   max_side=max(512, *m.shape), extra_trace={"customdata": custom},
                   height=int(min(900, max(320, 24 * len(rows) + 190))),
                   export=_spec(source_tokens, target_tokens, weights, title))


def _spec(source_tokens, target_tokens, weights: np.ndarray, title: str | None) -> ExportSpec:
    return ExportSpec(weights, list(target_tokens), list(source_tokens), title or "", vmin=0, vmax=1)


# ---- the lines -------------------------------------------------------------------------------------------------------
def alignment_pairs(m: np.ndarray, threshold: float) -> list[tuple[int, int, float, bool]]:
    """The lines to draw for a word alignment m (Tw, Nw): (target word, source word, weight, strong) for every pair
    with weight >= threshold (strong) and, for each target word, its strongest source word (strong or not)."""
    out = []
    for ti, row in enumerate(np.asarray(m, dtype=np.float64)):
        best = int(np.argmax(row))
        for si, w in enumerate(row):
            if w >= threshold or si == best:
                out.append((ti, si, float(w), bool(w >= threshold)))
    return out


def word_positions(n: int, span: float) -> list[float]:
    """x of n words spread evenly over [0, span] (one word in the middle)."""
    return [span / 2.0] if n == 1 else [i * span / (n - 1) for i in range(n)]


def label_angle(labels: list[str], slot: float, px: int) -> int:
    """The tick angle that keeps a row of word labels `slot` px apart from overlapping: 0 when the widest fits
    its slot, -60 when the slanted lines stay a line height apart, else -90 (one line height per slot)."""
    widest = max((text_width(x, px) for x in labels), default=0.0)
    if widest + 6 <= slot:
        return 0
    return -60 if slot * math.sin(math.radians(60)) >= 1.3 * px else -90


def label_extent(labels: list[str], angle: int, px: int) -> float:
    """Height (px) a row of tick labels takes at this angle."""
    widest = max((text_width(x, px) for x in labels), default=0.0)
    return 1.4 * px if angle == 0 else widest * abs(math.sin(math.radians(angle))) + px


def alignment_lines_figure(source_tokens: Sequence[str], target_tokens: Sequence[str], weights: np.ndarray, *,
                           lang: str = "en", merge: bool = True, threshold: float = 0.2,
                           drop_special: bool = False, source_special: Sequence[bool] | None = None,
                           target_special: Sequence[bool] | None = None, lecture: bool = False,
                           title: str | None = None, width: int | None = None) -> go.Figure:
    """Source words on a top row, target words on a bottom row, both spread over the same width; a line joins a
    target word and a source word whose alignment (word_alignment of `weights`, T target x N source tokens) is at
    least `threshold`, and always each target word's strongest source word (dotted when it is under the threshold).
    Width and opacity grow with the weight (lines are grouped by weight rounded to 0.1, one trace per group). A
    reordered phrase shows as crossing lines. Labels turn to -60° or -90° when they would overlap (40-word sentences
    stay legible); hovering a word lists its strongest partners. `title` must be escaped."""
    src, tgt, m = _prepare(source_tokens, target_tokens, weights, merge, drop_special, source_special,
                           target_special)
    f = fonts(lecture)
    span = float(max(len(src), len(tgt)) - 1) or 1.0
    xs, xt = word_positions(len(src), span), word_positions(len(tgt), span)
    src_labels = [esc(g[0], LABEL_LIMIT) for g in src]
    tgt_labels = [esc(g[0], LABEL_LIMIT) for g in tgt]
    plot_w = (width or PAGE_WIDTH) - 40
    slot = plot_w / (span + 1.0)
    top_angle, bottom_angle = label_angle(src_labels, slot, f["tick"]), label_angle(tgt_labels, slot, f["tick"])
    top_px, bottom_px = label_extent(src_labels, top_angle, f["tick"]), label_extent(tgt_labels, bottom_angle,
                                                                                   f["tick"])

    data: list[dict] = []
    buckets: dict[tuple[float, bool], tuple[list, list]] = {}
    for ti, si, w, strong in alignment_pairs(m, threshold):
        key = (max(0.1, round(min(1.0, w) * 10) / 10) if strong else 0.1, strong)
        bx, by = buckets.setdefault(key, ([], []))
        bx += [xs[si], xt[ti], None]
        by += [1.0, 0.0, None]
    scale = 1.3 if lecture else 1.0
    for (level, strong), (bx, by) in sorted(buckets.items()):
        data.append(dict(type="scatter", x=bx, y=by, mode="lines", hoverinfo="skip", showlegend=False,
                         line=dict(color=rgba(LINE_COLOUR, 0.25 + 0.75 * level if strong else 0.45),
                                   width=round((0.8 + 6.0 * level if strong else 1.2) * scale, 2),
                                   dash="solid" if strong else "dot"),
                         name=f"{'strong' if strong else 'argmax'} {level:.1f}"))

    weight_word = tr("align.axis.weight", lang)

    def partners(vec: np.ndarray, labels: list[str]) -> str:
        order = [int(i) for i in np.argsort(-vec, kind="stable")[:3] if vec[i] > 0]
        return "<br>".join(f"  {labels[i]} {number_text(vec[i])}" for i in order)

    src_hover = [f"{tr('align.hover.source', lang)}: {src_labels[j]}{_pieces_note(g, source_tokens)}<br>"
                 f"{tr('align.hover.best_target', lang)} ({weight_word}):<br>{partners(m[:, j], tgt_labels)}"
                 for j, g in enumerate(src)]
    tgt_hover = [f"{tr('align.hover.target', lang)}: {tgt_labels[i]}{_pieces_note(g, target_tokens)}<br>"
                 f"{tr('align.hover.best_source', lang)} ({weight_word}):<br>{partners(m[i], src_labels)}"
                 for i, g in enumerate(tgt)]
    marker = dict(size=9 if lecture else 7, color="#555555")
    data.append(dict(type="scatter", x=xs, y=[1.0] * len(xs), xaxis="x2", mode="markers", marker=marker,
                     hovertext=src_hover, hoverinfo="text", showlegend=False, name=tr("align.hover.source", lang)))
    data.append(dict(type="scatter", x=xt, y=[0.0] * len(xt), mode="markers", marker=marker,
                     hovertext=tgt_hover, hoverinfo="text", showlegend=False, name=tr("align.hover.target", lang)))

    area = 220 if len(src) + len(tgt) < 30 else 260
    text = tr("align.lines.title", lang) if title is None else title
    top = title_margin(lecture, below=top_px + 8) if text else int(top_px + 28)
    bottom = int(bottom_px + 16)
    layout = base_layout(lecture, area, text)
    layout["height"] += top + bottom  # the label rows' margins as measured, not scaled again in lecture mode
    if text:
        layout["title"].update(y=1.0, yref="container", yanchor="top", pad=dict(t=12))
    layout["margin"].update(t=top, b=bottom, l=20, r=20)
    x_range = [-0.5, span + 0.5]
    common = dict(range=x_range, showgrid=False, zeroline=False, showline=False, ticks="", fixedrange=True,
                  tickmode="array")
    layout.update(hovermode="closest", dragmode=False, showlegend=False,
                  xaxis=dict(common, tickvals=xt, ticktext=tgt_labels, tickangle=bottom_angle, side="bottom"),
                  xaxis2=dict(common, tickvals=xs, ticktext=src_labels, tickangle=top_angle, side="top",
                              overlaying="x", anchor="y"),
                  yaxis=dict(range=[-0.06, 1.06], visible=False, fixedrange=True))
    return attach(figure(data, layout), _spec(source_tokens, target_tokens, weights, title))


# ---- the SSRU --------------------------------------------------------------------------------------------------------
def ssru_contributions_per_channel(gates: np.ndarray) -> np.ndarray:
    """The SSRU recurrence c_t = f_t ⊙ c_{t−1} + (1 − f_t) ⊙ z_t (z_t = W x_t, c_{−1} = 0) unrolled:
    c_t = Σ_{j≤t} (1 − f_j) ∏_{k=j+1..t} f_k ⊙ z_j. Returns a (T, T, d) array w with w[t, j] = (1 − f_j)
    ∏_{k=j+1..t} f_k per channel for j ≤ t and 0 above the diagonal, so c_t = Σ_j w[t, j] ⊙ z_j exactly. Row t sums
    (telescoping) to 1 − ∏_{k≤t} f_k per channel: what the zero initial state would have kept is missing."""
    f = np.asarray(gates, dtype=np.float64)
    if f.ndim != 2:
        raise ValueError(f"gates must be (positions, channels), got shape {f.shape}")
    T, d = f.shape
    w = np.zeros((T, T, d))
    for t in range(T):
        tail = np.ones(d)  # ∏_{k=j+1..t} f_k, built from j = t downwards
        for j in range(t, -1, -1):
            w[t, j] = (1.0 - f[j]) * tail
            tail = tail * f[j]
    return w


def ssru_contributions(gates: np.ndarray) -> np.ndarray:
    """(T, d) forget gates -> (T, T): weight (t, j) = the mean over channels of (1 − f_j) ∏_{k=j+1..t} f_k, how much
    of position j's input is still in the SSRU's memory c_t (lower triangular). A row sums to the channel mean of
    1 − ∏_{k≤t} f_k ≤ 1. Not attention: the weights follow from the gates alone, no query meets a key."""
    return ssru_contributions_per_channel(gates).mean(axis=2).astype(np.float32)


def alignment_matrix_caption(lang: str = "en") -> str:
    """The caption under alignment_matrix_figure (markdown): how pieces became words."""
    return tr("align.matrix.caption", lang)


def alignment_lines_caption(lang: str = "en", threshold: float = 0.2) -> str:
    """The caption under alignment_lines_figure (markdown): what a line, its width and a dotted line mean."""
    return tr("align.lines.caption", lang, threshold=threshold)


def forget_gate_caption(lang: str = "en") -> str:
    """The caption under forget_gate_figure (markdown): what f_t does in c_t = f_t ⊙ c_{t−1} + (1 − f_t) ⊙ W x_t."""
    return tr("align.gate.caption", lang)


def ssru_contributions_caption(lang: str = "en") -> str:
    """The caption under ssru_contributions_figure (markdown)."""
    return tr("align.contrib.caption", lang)


FORMULA = "c<sub>t</sub> = f<sub>t</sub> ⊙ c<sub>t−1</sub> + (1 − f<sub>t</sub>) ⊙ W x<sub>t</sub>"


def forget_gate_figure(target_tokens: Sequence[str], gates: np.ndarray, *, lang: str = "en", lecture: bool = False,
                       sort_channels: bool = True, title: str | None = None, width: int | None = None,
                       export_title: str | None = None) -> go.Figure:
    """The SSRU's forget gate f_t = σ(W_f x_t + b_f) of one decoder layer: a heatmap of channels (rows; sorted by
    their mean gate with `sort_channels`, hover names the channel) x target positions (columns, `target_tokens`: the
    decoder's inputs, "</s>" first), and under it the mean over channels per position as a line. Near 1 the channel
    keeps its memory c_{t−1}; near 0 it takes the new input W x_t. `gates` (T, d) in [0, 1]. Caption:
    forget_gate_caption. `title` must be escaped (default: the catalogue's, with the formula under it). It exports
    `gates` as given, a row per channel (unsorted), 0 to 1, under `export_title` (plain text; default `title`)."""
    g = np.asarray(gates, dtype=np.float32)
    if g.ndim != 2 or g.shape[0] != len(target_tokens):
        raise ValueError(f"gates of shape {g.shape} for {len(target_tokens)} target tokens")
    T, d = g.shape
    f = fonts(lecture)
    order = np.argsort(-g.mean(axis=0), kind="stable") if sort_channels else np.arange(d)
    cols = axis_labels(list(target_tokens), limit=LABEL_LIMIT)
    channel = [str(int(c)) for c in order]
    mean = g.mean(axis=1)
    pos_label, ch_label = tr("align.gate.axis.position", lang), tr(
        "align.gate.axis.channel_sorted" if sort_channels else "align.gate.axis.channel", lang)
    heat = dict(type="heatmap", z=g[:, order].T, x=cols, y=channel, colorscale=colour_scale(GATE_COLORSCALE), zmin=0.0, zmax=1.0,
                hovertemplate=(f"{tr('align.gate.hover.channel', lang)} %{{y}}<br>{pos_label}: %{{x}}<br>"
                               "f = %{z:.3f}<extra></extra>"),
                colorbar=dict(title=dict(text="f"), thickness=14, len=0.66, y=1.0, yanchor="top"))
    line = dict(type="scatter", x=cols, y=mean, xaxis="x2", yaxis="y2", mode="lines+markers",
                line=dict(color=LINE_COLOUR, width=3 if lecture else 2), marker=dict(size=8 if lecture else 6),
                hovertemplate=f"%{{x}}<br>{tr('align.gate.axis.mean', lang)}: %{{y:.3f}}<extra></extra>",
                showlegend=False)
    slot = ((width or PAGE_WIDTH) - 140) / max(T, 1)
    angle = label_angle(cols, slot, f["tick"])
    bottom = int(label_extent(cols, angle, f["tick"]) + 1.4 * f["axis_title"] + 16)
    text = (tr("align.gate.title", lang) + f"<br><sup>{FORMULA}</sup>") if title is None else title
    layout = base_layout(lecture, int(min(640, max(420, 1.2 * d + 220))) + bottom, text)
    layout["margin"].update(t=title_margin(lecture, lines=2) if text else 20, b=bottom)
    layout.update(hovermode="closest", plot_bgcolor="#ffffff",
                  xaxis=dict(type="category", matches="x2", showticklabels=False, showgrid=False, ticks="", anchor="y"),
                  yaxis=dict(type="category", domain=[0.36, 1.0], showticklabels=False, showgrid=False, ticks="",
                             autorange="reversed",  # the first channel (the highest mean with sort_channels) on top
                             title=dict(text=esc(ch_label))),
                  xaxis2=dict(type="category", anchor="y2", tickangle=angle, showgrid=False,
                              title=dict(text=esc(pos_label))),
                  yaxis2=dict(domain=[0.0, 0.28], range=[0.0, 1.02], tickvals=[0, 0.5, 1], anchor="x2",
                              title=dict(text=esc(tr("align.gate.axis.mean_short", lang)))))
    spec = ExportSpec(np.asarray(gates).T, [f"c{i}" for i in range(d)], list(target_tokens),
                      (title or "") if export_title is None else export_title, vmin=0, vmax=1)
    return attach(figure([heat, line], layout), spec)


def ssru_contributions_figure(target_tokens: Sequence[str], gates: np.ndarray, *, lang: str = "en",
                              lecture: bool = False, title: str | None = None,
                              width: int | None = None) -> go.Figure:
    """ssru_contributions(gates) as a lower-triangular heatmap: row t = the memory c_t at target position t, column
    j = an earlier position, cell = how much of W x_j is still in c_t (mean over channels); cells above the
    diagonal (the future) are blocked. Titled so that nobody reads it as attention. Caption:
    ssru_contributions_caption. `title` must be escaped."""
    g = np.asarray(gates, dtype=np.float32)
    if g.ndim != 2 or g.shape[0] != len(target_tokens):
        raise ValueError(f"gates of shape {g.shape} for {len(target_tokens)} target tokens")
    m = ssru_contributions(g)
    labels = [str(x) for x in target_tokens]  # heatmap escapes them and makes repeats unique
    future = np.triu(np.ones(m.shape, dtype=bool), k=1)
    mem, earlier = tr("align.contrib.axis.memory", lang), tr("align.contrib.axis.earlier", lang)
    hover = f"{mem}: %{{y}}<br>{earlier}: %{{x}}<br>{tr('align.contrib.hover.share', lang)}: %{{z:.3f}}<extra></extra>"
    return heatmap(m, labels, labels, title=tr("align.contrib.title", lang) if title is None else title,
                   colorscale=COLORSCALE, zmin=0.0, masked=future, xlabel=earlier, ylabel=mem, lecture=lecture,
                   colorbar_title=tr("align.contrib.axis.share", lang), hover=hover, lang=lang, width=width)
