"""Small figures of the guided tour (no Streamlit here): the neuron view of one query-key pair (BertViz's neuron
view: q, k, their elementwise product q ∘ k and its sum, which is the score S_ij = q · k in Q Kᵀ), a per-token bar
pair (an Add & Norm's mean and variance), a per-dimension line pair (γ and β) and a labelled bar chart (quiz
reveals); and the Add & Norm / Feed Forward figures of one layer (`add_norm_figures`, `ffn_figures`,
`layer_output_check`), shared by the tour and the Step by step page. Every number comes from analysis.stages / analysis.decoding; these builders only draw. Titles and labels
are passed in already translated; user-derived text goes through `esc()`.

Shapes: k d_k, n tokens, d d_model.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import t

from .export_spec import ExportSpec, attach
from .heatmap import heatmap
from .theme import HIGHLIGHT, base_layout, esc, figure, number_text, subplot_axes, subplot_grid

_BLUE, _ORANGE, _GREEN = "#4e79a7", "#f28e2b", "#59a14f"

# the tour's steps in the lecture's order (`?step=6` counts from 1); catalogue keys "tour.<step>.title" / ".body"
STEPS = ("tokens", "embedding", "positional", "qkv", "scores", "mask", "softmax", "attend", "concat", "add_norm",
         "ffn", "decoder_self", "cross", "output", "generate", "since")
# the attention stages (viz.steps Stage keys) each attention step draws, in order: the one table of what a step shows,
# read by the tour and by the handout of a tour slide
STEP_STAGES = {"qkv": ("Q", "K", "V"), "scores": ("scaled",), "mask": ("mask",), "softmax": ("weights",),
               "attend": ("Z",), "concat": ("Z_all", "output")}
# on a rotary model (positional "rotary": RoPE adds nothing to X) step 3 shows what RoPE does instead: q and k of the
# sidebar's layer and head as the projections make them, then turned by their positions (the same block's stages)
ROTARY_STAGES = {"positional": ("Q_proj", "K_proj", "Q", "K")}
# a decoder-only model's own decoder steps (decoder_source "own"): step 12 its masked self-attention (the sidebar's
# block "decoder_self", layer and head); step 14 its next-token probabilities after the text (no stages)
OWN_DECODER_STAGES = {"decoder_self": ("masked", "weights")}
# which model's decoder the decoder steps (12-14) show, by the sidebar model's kind (its config, never its name):
# "own" the sidebar's model, "fallback" the small trained encoder-decoder (seq2seq-tiny). An encoder has no decoder;
# a decoder-only model has its masked self-attention and its output layer but no cross-attention (no encoder);
# an encoder-decoder (seq2seq-tiny, a translator, a BART / Marian folder, paper-base) has all three
DECODER_STEPS = ("decoder_self", "cross", "output")
DECODER_SOURCE = {"encoder": dict.fromkeys(DECODER_STEPS, "fallback"),
                  "decoder": {"decoder_self": "own", "cross": "fallback", "output": "own"},
                  "encoder-decoder": dict.fromkeys(DECODER_STEPS, "own")}


def step_stages(key: str, *, positional: str = "sinusoidal", kind: str = "encoder") -> tuple[str, ...]:
    """The attention stages (viz.steps Stage keys) a tour step draws for a model with this position kind and model
    kind (TransformerConfig.positional, .kind); () for a step that draws no attention stage (tokens, the embedding
    and the paper's Positional Encoding, the sublayers, the decoder steps of another model, the table)."""
    if positional == "rotary" and key in ROTARY_STAGES:
        return ROTARY_STAGES[key]
    if key in DECODER_STEPS:
        return OWN_DECODER_STAGES.get(key, ()) if kind == "decoder" else ()
    return STEP_STAGES.get(key, ())


def decoder_source(key: str, kind: str) -> str:
    """"own" or "fallback": whose decoder step `key` (decoder_self, cross, output) shows for a sidebar model of
    `kind` ("encoder" | "decoder" | "encoder-decoder")."""
    return DECODER_SOURCE[kind][key]


def neuron_view(q: np.ndarray, k: np.ndarray, *, names: tuple[str, str, str], title: str = "",
                lecture: bool = False, lang: str = "en") -> go.Figure:
    """Three bar rows over the head dimensions: q (k,), k (k,) and q ∘ k; `names` are the three row titles (already
    escaped by the caller or plain text). The sum of the last row is the score Q Kᵀ[i, j]."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if q.shape != k.shape or q.ndim != 1:
        raise ValueError(f"q and k must be vectors of one length, got {q.shape} and {k.shape}")
    prod = q * k
    dims = np.arange(len(q))
    layout = subplot_grid(3, 1, list(names), vertical_spacing=0.09, shared_xaxes=True)  # make_subplots' layout
    hover = esc(t("tour.axis.dim", lang)) + " %{x}: %{y:.4f}<extra></extra>"
    data = []
    for row, (vec, colour) in enumerate(((q, _BLUE), (k, _ORANGE), (prod, None)), start=1):
        colours = colour or [_GREEN if v >= 0 else HIGHLIGHT for v in prod]
        xa, ya = subplot_axes(row, 1, 1)
        data.append(dict(type="bar", x=dims, y=vec, marker=dict(color=colours), showlegend=False, hovertemplate=hover,
                         xaxis=xa, yaxis=ya))
    layout.update(base_layout(lecture, 480, title), bargap=0.15)
    layout["xaxis3"]["title"] = {"text": "d_k"}
    return figure(data, layout)


def per_token_bars(values: dict[str, np.ndarray], tokens: list[str], *, title: str = "",
                   lecture: bool = False) -> go.Figure:
    """One bar row per named vector of length n (e.g. each token's mean and variance), tokens along x."""
    labels = [f"{i}: {esc(t, 16)}" for i, t in enumerate(tokens)]
    names = list(values)
    layout = subplot_grid(len(names), 1, [esc(n, 60) for n in names], vertical_spacing=0.12, shared_xaxes=True)
    data = []
    for row, name in enumerate(names, start=1):
        xa, ya = subplot_axes(row, 1, 1)
        data.append(dict(type="bar", x=labels, y=np.asarray(values[name], dtype=np.float32), showlegend=False,
                         marker=dict(color=_BLUE if row == 1 else _ORANGE),
                         hovertemplate="%{x}: %{y:.4f}<extra></extra>", xaxis=xa, yaxis=ya))
        layout["xaxis" + xa[1:]].update(type="category", tickangle=-60 if len(labels) > 8 else 0)
    layout.update(base_layout(lecture, 200 + 150 * len(names), title))
    return figure(data, layout)


def per_dim_lines(values: dict[str, np.ndarray], *, title: str = "", xlabel: str = "dimension",
                  lecture: bool = False) -> go.Figure:
    """Named vectors of length d drawn as lines over the dimensions (e.g. γ and β of a LayerNorm)."""
    data = []
    for (name, vec), colour in zip(values.items(), (_BLUE, _ORANGE, _GREEN)):
        v = np.asarray(vec, dtype=np.float32)
        data.append(dict(type="scatter", x=np.arange(len(v)), y=v, mode="lines", name=esc(name, 40),
                         line={"color": colour, "width": 1.5},
                         hovertemplate=esc(xlabel) + " %{x}: %{y:.4f}<extra></extra>"))
    layout = base_layout(lecture, 320, title)
    layout.update(legend={"orientation": "h", "y": -0.3}, xaxis={"title": {"text": esc(xlabel)}})
    return figure(data, layout)


def ranked_bars(values: np.ndarray, labels: list[str], *, highlight: int | None = None, answer: int | None = None,
                title: str = "", ylabel: str = "", lecture: bool = False, export_title: str = "") -> go.Figure:
    """Bars of one vector (e.g. a row of attention weights); the guessed bar red, the true maximum green. It exports
    the values as one row named `ylabel`, a column per label, under `export_title` (plain text)."""
    v = np.asarray(values, dtype=np.float32)
    xs = [f"{esc(t, 16)}\u2009·{i}" for i, t in enumerate(labels)]
    colours = [_GREEN if i == answer else HIGHLIGHT if i == highlight else "#bab0ac" for i in range(len(v))]
    bar = dict(type="bar", x=xs, y=v, marker=dict(color=colours), text=[number_text(x) for x in v],
               textposition="outside", hovertemplate="%{x}: %{y:.4f}<extra></extra>")
    layout = base_layout(lecture, 340, title)
    layout.update(xaxis=dict(type="category", tickangle=-60 if len(xs) > 8 else 0),
                  yaxis=dict(title=dict(text=esc(ylabel)), range=[0, max(1e-6, float(v.max()) * 1.2)]))
    return attach(figure([bar], layout), ExportSpec(np.array([values]), [ylabel], list(labels), export_title))


# ---- Add & Norm and Feed Forward (shared by the guided tour and the Step by step page) ---------------------------
def token_matrix(m: np.ndarray, tokens: list[str], title: str, *, lang: str = "en", cols: list[str] | None = None,
                 lecture: bool = False) -> go.Figure:
    """One (n, d) or (n, f) matrix of the layer: tokens down, dimensions across, zero white."""
    return heatmap(m, tokens, cols or [str(j) for j in range(m.shape[1])], title=title, colorscale="RdBu_r",
                   zmid=0.0, xlabel=t("tour.axis.dim", lang), ylabel=t("tour.axis.token", lang), lecture=lecture,
                   max_side=256, lang=lang)


def add_norm_figures(sub: dict, norm: str, tokens: list[str], *, sum_title: str, lang: str = "en",
                     lecture: bool = False) -> dict[str, tuple[go.Figure, np.ndarray | None]]:
    """One Add & Norm of analysis.stages.sublayer_steps (`norm` = "norm1" / "norm2" / "norm3"), in order: what the
    norm normalises (post-LN: the residual sum), each token's mean and variance, γ and β, the normalised result.
    {name: (figure, matrix to export or None)}."""
    s, y = sub[f"{norm}_in"], sub[norm]
    eps = float(sub[f"eps_{norm}"])
    if f"ms_{norm}" in sub:  # RMSNorm: y = γ s / √(mean(s²) + ε), no mean taken out and no β
        stats = per_token_bars({t("tour.rms.ms", lang): sub[f"ms_{norm}"]}, tokens,
                               title=t("tour.rms.stats_fig", lang), lecture=lecture)
        offset = f"offset_{norm}" in sub  # Gemma: the scale is 1 + γ, γ as stored
        gb = per_dim_lines({"1 + γ" if offset else "γ (gamma)": sub[f"gamma_{norm}"]},
                           title=t("tour.rms.g_fig_offset" if offset else "tour.rms.g_fig", lang),
                           xlabel=t("tour.axis.dim", lang), lecture=lecture)
        norm_title = t("tour.rms.norm_fig_offset" if offset else "tour.rms.norm_fig", lang, eps=eps)
    else:
        stats = per_token_bars({t("tour.add_norm.mean", lang): sub[f"mean_{norm}"],
                                t("tour.add_norm.var", lang): sub[f"var_{norm}"]}, tokens,
                               title=t("tour.add_norm.stats_fig", lang), lecture=lecture)
        gb = per_dim_lines({"γ (gamma)": sub[f"gamma_{norm}"], "β (beta)": sub[f"beta_{norm}"]},
                           title=t("tour.add_norm.gb_fig", lang), xlabel=t("tour.axis.dim", lang), lecture=lecture)
        norm_title = t("tour.add_norm.norm_fig", lang, eps=eps)
    return {"sum": (token_matrix(s, tokens, sum_title, lang=lang, lecture=lecture), s), "stats": (stats, None),
            "gb": (gb, None), "norm": (token_matrix(y, tokens, norm_title, lang=lang, lecture=lecture), y)}


def ffn_figures(sub: dict, tokens: list[str], *, layer: int, act: str, lang: str = "en", weights: bool = False,
                lecture: bool = False, norm: str | None = None) -> dict[str, tuple[go.Figure, np.ndarray | None]]:
    """The Feed Forward sublayer in order: (W_1,) x W_1 + b_1, the activation, (W_2,) and the layer output: after
    the last Add & Norm (post-LN), or, `norm` given ("LN", "RMSNorm": a pre-LN model's), the plain residual sum
    s + FFN(norm_2(s)). {name: (figure, matrix to export)}; `weights` adds W_1 (d, f) and W_2 (f, d). A gated FFN
    (SwiGLU: sub has "ffn_gate") shows x W_gate, act(x W_gate), x W_1 and their product, W_2's input. "+ b_1" only
    where the model has that bias (sub["bias_1"])."""
    bias = bool(sub["bias_1"])
    pre, hid = sub["ffn_pre"], sub["ffn_act"]
    out: dict[str, tuple[go.Figure, np.ndarray | None]] = {}

    def weight(name: str) -> None:
        w = sub[name]
        rows = [str(j) for j in range(w.shape[0])]
        out[name] = (heatmap(w, rows, [str(j) for j in range(w.shape[1])], colorscale="RdBu_r", zmid=0.0,
                             title=f"{name} · {w.shape[0]} × {w.shape[1]}", xlabel=t("tour.axis.dim", lang),
                             ylabel=t("tour.axis.dim", lang), lecture=lecture, max_side=256, lang=lang), w)

    if weights:
        weight("W_1")
    if "ffn_gate" in sub:  # gated (SwiGLU): act(x W_gate) ⊙ (x W_1 + b_1)
        gate = sub["ffn_gate"]
        n, f = gate.shape
        if weights:
            weight("W_gate")
        out["gate"] = (token_matrix(gate, tokens, t("tour.glu.gate_fig", lang, n=n, f=f), lang=lang, lecture=lecture),
                       gate)
        out["act"] = (token_matrix(hid, tokens, t("tour.glu.act_fig", lang, act=act), lang=lang, lecture=lecture), hid)
        out["pre"] = (token_matrix(pre, tokens, t("tour.glu.up_fig_bias" if bias else "tour.glu.up_fig", lang, n=n, f=f),
                                   lang=lang, lecture=lecture), pre)
        hidden = sub["ffn_hidden"]
        out["hidden"] = (token_matrix(hidden, tokens, t("tour.glu.hidden_fig", lang, act=act), lang=lang,
                                      lecture=lecture), hidden)
    else:
        out["pre"] = (token_matrix(pre, tokens, t("tour.ffn.pre_fig" if bias else "tour.ffn.pre_fig_no_bias", lang,
                                                  n=len(tokens), f=pre.shape[1]), lang=lang, lecture=lecture), pre)
        out["act"] = (token_matrix(hid, tokens, t("tour.ffn.act_fig", lang, act=act), lang=lang, lecture=lecture),
                      hid)
    if weights:
        weight("W_2")
    out["out"] = (token_matrix(sub["output"], tokens, out_title(layer, lang, norm), lang=lang, lecture=lecture),
                  sub["output"])
    return out


def out_title(layer: int, lang: str, norm: str | None = None) -> str:
    """The layer output's figure title: the second Add & Norm (post-LN), or, given a pre-LN model's `norm` ("LN",
    "RMSNorm"), the residual sum s + FFN(norm_2(s)) with no norm after it."""
    if norm is None:
        return t("tour.ffn.out_fig", lang, layer=layer)
    return t("tour.ffn.out_fig_pre", lang, layer=layer, norm=norm)


def layer_output_check(sub: dict, hidden: np.ndarray | None, layer: int) -> float | None:
    """Largest difference between the layer output read here and the model's own output of `layer`
    (hidden (L+1, n, d): the stack's hidden states); None when the trace has none."""
    if hidden is None:
        return None
    return float(np.abs(np.asarray(sub["output"], dtype=np.float64) - hidden[layer + 1]).max())


def rope_check(steps: dict) -> dict[str, float]:
    """What RoPE did to one head's q and k (analysis.stages.attention_steps of a rotary model): `moved`, the largest
    change of any value (Q - Q_proj, K - K_proj), and `length`, the largest change of a row's length (a rotation
    keeps it: float rounding only)."""
    moved = length = 0.0
    for name in ("Q", "K"):
        after, before = (np.asarray(steps[k], dtype=np.float64) for k in (name, f"{name}_proj"))
        moved = max(moved, float(np.abs(after - before).max()))
        length = max(length, float(np.abs(np.linalg.norm(after, axis=1) - np.linalg.norm(before, axis=1)).max()))
    return {"moved": moved, "length": length}


def rope_pair_figure(before: np.ndarray, after: np.ndarray, tokens: list[str], *, pair: int = 0, title: str = "",
                     names: tuple[str, str] = ("before", "after"), axes: tuple[str, str] = ("", ""),
                     lecture: bool = False) -> go.Figure:
    """What RoPE does to one pair of dimensions (pair, pair + k/2) of each token's vector (before (n, k), after
    (n, k): analysis.stages' K_proj and K, say): each token a hollow point before and a filled one after, joined by a
    dotted line; token i is turned about the origin by i times the pair's angle, its length kept."""
    b, a = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    half = b.shape[1] // 2
    lim = 1.15 * float(max(np.abs(b[:, [pair, pair + half]]).max(), np.abs(a[:, [pair, pair + half]]).max(), 1e-6))
    data = []
    for i, tok in enumerate(tokens):
        colour = _PALETTE[i % len(_PALETTE)]
        label = f"{i}: {esc(tok, 16)}"
        data.append(dict(type="scatter", x=[b[i, pair], a[i, pair]], y=[b[i, pair + half], a[i, pair + half]],
                         mode="lines+markers+text", text=["", label], textposition="top center",
                         marker=dict(size=[9, 11], color=colour, symbol=["circle-open", "circle"]),
                         line=dict(color=colour, width=1, dash="dot"), name=label, showlegend=False,
                         hovertemplate=f"{label}<br>({esc(names[0])} → {esc(names[1])})<extra></extra>"))
    layout = base_layout(lecture, 460, title)
    layout.update(xaxis=dict(range=[-lim, lim], zeroline=True, title=dict(text=esc(axes[0]))),
                  yaxis=dict(range=[-lim, lim], zeroline=True, scaleanchor="x", title=dict(text=esc(axes[1]))))
    return figure(data, layout)


_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")


def shown_token(text: str) -> str:
    """A decoded token as a reader sees it (a language model's next token): a space as ␣, a line break as ↵, a tab
    as ⇥, and nothing at all as ∅ ("ĊĠĠĠ" decodes to "\\n   ", shown "↵␣␣␣")."""
    if not text:
        return "∅"
    return text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
