"""Step-by-step scaled dot-product attention as a list of labelled stages
(the brief's walk-through, rows 2 to 8). No Streamlit here.

The numbers come from `analysis.stages.attention_steps`, which reads one layer / head out of the model's own
forward (Vaswani et al. 2017, eq. 1 and section 3.2.2):

    Q = X W_Q,  K = X W_K,  V = X W_V            (each W: d_model x d_k)
    S = Q K^T,  S / sqrt(d_k),  mask (blocked = -inf)
    A = softmax(.) (rows sum to 1),  Z = A V
    MultiHead = Concat(Z_1, ..., Z_h) W_O         (n x d_model)

Shapes: n query length, m key length, d d_model, k d_k.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from i18n import t

from .export_spec import ExportSpec
from .heatmap import heatmap

# the Step by step page's tabs (catalogue keys "steps.tab.<name>"): the attention sections, then the rest of the
# layer; an encoder-decoder's decoder layer adds the cross-attention's Add & Norm and, at its last layer, the final
# linear layer and Softmax over the vocabulary
ATTENTION_TABS = ("x", "qkv", "scores", "softmax", "concat")
LAYER_TABS = {"encoder": ("add_norm", "ffn", "output"),
              "decoder": ("add_norm_dec", "cross_norm", "ffn_dec", "output_dec"),
              # a pre-LN decoder-only block (GPT-2): x + MultiHead(LN_1(x)), then LN_2; FFN; the second residual sum
              "pre_ln": ("add_norm_pre", "ffn", "output_pre")}
VOCAB_TAB = "vocab"
# axis labels of the stages -> catalogue keys (shared with the guided tour)
SHAPE_KEYS = {"output": "steps.shape_output", "mask": "steps.shape_mask", "masked": "steps.shape_masked"}  # "mask: 9 × 9"
AXIS_KEYS = {"concat dimension": "tour.axis.concat_dim", "dimension": "tour.axis.dim",
             "head dimension": "tour.axis.head_dim", "key": "tour.axis.key", "model dimension": "tour.axis.model_dim",
             "query": "tour.axis.query", "source token": "tour.axis.source_token", "token": "tour.axis.token"}
# stage key -> section (tab). The first tab holds only the input X (and the encoder output M for cross-attention):
# the three d_model-tall weight matrices sit with the Q, K, V they make, so the page opens on one light figure
# (measured: the four heatmaps of the former first tab kept Chromium's main thread busy ~0.8 s on every visit)
SECTION_OF = {"X": 0, "memory": 0, "W_Q": 1, "W_K": 1, "W_V": 1, "Q_proj": 1, "K_proj": 1, "Q_norm": 1, "K_norm": 1,
              "Q": 1, "K": 1, "V": 1,
              "scores": 2, "scaled": 2, "mask": 2, "masked": 2, "weights": 3, "Z": 3, "Z_all": 4, "W_O": 4, "output": 4}


@dataclass
class Stage:
    key: str  # name in attention_steps' dict, e.g. "Q"
    title: str  # "Q = X W_Q"
    matrix: np.ndarray  # (rows, cols)
    rows: list[str]
    cols: list[str]
    shape: str  # "Q: 13 × 32"
    latex: str  # formula for st.latex
    caption: str
    group: str = ""  # stages with the same group are drawn side by side (Q | K | V)
    colorscale: str = "RdBu_r"
    masked: np.ndarray | None = None  # bool, True = blocked cell
    zmin: float | None = None
    zmax: float | None = None
    xlabel: str = ""
    ylabel: str = ""
    trivial: bool = False  # nothing new to draw (no cell is masked): the page may show the formula only


def _dims(n: int, prefix: str = "") -> list[str]:
    return [f"{prefix}{j}" for j in range(n)]


def step_tabs(block: str, last_layer: bool, pre_ln: bool = False) -> list[str]:
    """The page's tabs for a block, in order (names, see ATTENTION_TABS / LAYER_TABS); `pre_ln`: a decoder-only
    model's one causal stack (no vocabulary tab: its next token is on the explorer)."""
    if pre_ln:
        return [*ATTENTION_TABS, *LAYER_TABS["pre_ln"]]
    rest = LAYER_TABS["encoder" if block == "encoder" else "decoder"]
    return [*ATTENTION_TABS, *rest, *([VOCAB_TAB] if block != "encoder" and last_layer else [])]


def localise(stage: Stage, lang: str, head: int) -> Stage:
    """A stage with its title (the catalogue's "stage.<key>"; Q, K and V keep their formula), axis labels and shape
    name in `lang`."""
    title = stage.title if stage.key in ("Q", "K", "V") else t(f"stage.{stage.key}", lang, head=head)
    name, sep, size = stage.shape.partition(": ")
    shape = t(SHAPE_KEYS[name], lang) + sep + size if name in SHAPE_KEYS else stage.shape
    return replace(stage, title=title, shape=shape,
                   xlabel=t(AXIS_KEYS[stage.xlabel], lang) if stage.xlabel in AXIS_KEYS else stage.xlabel,
                   ylabel=t(AXIS_KEYS[stage.ylabel], lang) if stage.ylabel in AXIS_KEYS else stage.ylabel)


def build_stages(steps: dict[str, np.ndarray], row_tokens: list[str], col_tokens: list[str], *,
                 head: int, n_heads: int, block: str = "encoder", lang: str = "en") -> list[Stage]:
    """Turn attention_steps(...) into ordered, labelled stages. row_tokens label queries, col_tokens keys.
    `lang`: titles, captions and axis labels in that language (the numbers, shapes and formulas are the same)."""
    stages = _build_stages(steps, row_tokens, col_tokens, head=head, n_heads=n_heads, block=block, lang=lang)
    return [localise(s, lang, head) for s in stages]


def _build_stages(steps: dict[str, np.ndarray], row_tokens: list[str], col_tokens: list[str], *,
                  head: int, n_heads: int, block: str, lang: str) -> list[Stage]:
    n, d = steps["X"].shape
    k = steps["Q"].shape[1]
    m = steps["K"].shape[0]
    h = f"_{{{head}}}"  # head subscript in LaTeX, counted from 0 like everywhere in the UI
    src = "M" if "memory" in steps else "X"  # cross-attention: keys and values come from the encoder output M
    dims_d, dims_k = _dims(d), _dims(k)
    shape = lambda name, a: f"{name}: {a.shape[0]} × {a.shape[1]}"  # noqa: E731
    out: list[Stage] = [
        Stage("X", "", steps["X"], row_tokens, dims_d, shape("X", steps["X"]),
              r"X \in \mathbb{R}^{n \times d_{model}}",
              t("steps.cap.X", lang, n=n, d=d),
              xlabel="dimension", ylabel="token"),
    ]
    if "memory" in steps:
        out.append(Stage("memory", "", steps["memory"], col_tokens, dims_d,
                         shape("M", steps["memory"]), r"M \in \mathbb{R}^{m \times d_{model}}",
                         t("steps.cap.memory", lang),
                         xlabel="dimension", ylabel="source token"))
    for name in ("Q", "K", "V"):
        out.append(Stage(f"W_{name}", "", steps[f"W_{name}"], dims_d, dims_k,
                         shape(f"W_{name}", steps[f"W_{name}"]), rf"W^{{{name}}}{h} \in \mathbb{{R}}^{{d_{{model}} \times d_k}}",
                         t("steps.cap.W", lang, d=d, k=k, h=n_heads), group="W",
                         xlabel="head dimension", ylabel="model dimension"))
    rotary = "rope_theta" in steps  # rotary positions (llama family): Q and K are the projections turned by RoPE
    normed = "Q_norm" in steps  # Qwen3 / Gemma 3: each head's q and k RMS-normalised before RoPE
    qkv_bias = bool(steps["bias_QKV"])  # the model's own: "+ b" only where it has the bias (SmolLM2 has none)
    b = (lambda name: rf" + b^{{{name}}}{h}") if qkv_bias else (lambda name: "")  # noqa: E731
    if "Q_proj" in steps:
        for name, toks in (("Q", row_tokens), ("K", col_tokens)):
            a = steps[f"{name}_proj"]
            out.append(Stage(f"{name}_proj", "", a, toks, dims_k, shape(f"X W_{name}", a),
                             rf"X\,W^{{{name}}}{h}{b(name)}",
                             t("steps.cap.rope_proj" if rotary else "steps.cap.norm_proj", lang),
                             group="rope", xlabel="head dimension", ylabel="token"))
    if normed:
        out += _qk_norm_stages(steps, row_tokens, col_tokens, h, lang)
    for name, toks, inp in (("Q", row_tokens, "X"), ("K", col_tokens, src), ("V", col_tokens, src)):
        turned = rotary and name != "V"
        inner = (rf"\operatorname{{RMSNorm}}(X\,W^{{{name}}}{h}{b(name)})" if normed and name != "V"
                 else rf"(X\,W^{{{name}}}{h}{b(name)})")
        title = (t("steps.rope_norm_title" if normed else "steps.rope_title", lang, name=name) if turned
                 else f"{name} = {inp} W_{name}")
        latex = (rf"{name}{h}[i] = R_{{\Theta,\,i}}\,{inner}[i]" if turned
                 else rf"{name}{h} = {inp}\,W^{{{name}}}{h}{b(name)}")
        caption = (_rope_caption(steps, k, lang) if turned else
                   t("steps.cap.QKV" if qkv_bias else "steps.cap.QKV_no_bias", lang, n=steps[name].shape[0], k=k,
                     name=name))
        out.append(Stage(name, title, steps[name], toks, dims_k, shape(name, steps[name]), latex, caption,
                         group="QKV", xlabel="head dimension", ylabel="token"))
    mask = steps["mask"].astype(bool)
    blocked = ~mask
    word = t("steps.shape_mask", lang)  # the formulas' words in `lang`: "mask", "may attend", "blocked"
    mask_tex = rf"\text{{{word}}}"
    lim = float(np.abs(steps["scaled"][mask]).max()) if mask.any() else 1.0
    scalar = float(steps["scalar"]) if "scalar" in steps else float(k)  # d_k, or Gemma's query_pre_attn_scalar
    root = f"{scalar:g}"
    window = int(steps["window"]) if "window" in steps else None  # a sliding-window layer: the band
    mask_caption = (t("steps.cap.mask_window", lang, w=window, w1=window - 1) if window is not None
                    else t("steps.cap.mask_decoder" if block == "decoder_self" else "steps.cap.mask", lang))
    out += [
        Stage("scores", "", steps["scores"], row_tokens, col_tokens, shape("QKᵀ", steps["scores"]),
              r"S = Q K^{\top}", t("steps.cap.scores", lang, n=n, m=m), xlabel="key", ylabel="query"),
        Stage("scaled", "", steps["scaled"], row_tokens, col_tokens,
              shape("QKᵀ/√d_k", steps["scaled"]),
              rf"\frac{{Q K^{{\top}}}}{{\sqrt{{d_k}}}} = \frac{{S}}{{\sqrt{{{k}}}}}" if scalar == k else
              rf"\frac{{Q K^{{\top}}}}{{\sqrt{{s}}}} = \frac{{S}}{{\sqrt{{{root}}}}}",
              t("steps.cap.scaled", lang, k=k, sqrt=float(np.sqrt(k))) if scalar == k else
              t("steps.cap.scaled_scalar", lang, s=root, k=k, sqrt=float(np.sqrt(scalar))),
              xlabel="key", ylabel="query"),
        Stage("mask", "", mask.astype(np.float32), row_tokens, col_tokens,
              shape("mask", mask), rf"{mask_tex}_{{ij}} = \begin{{cases}} 0 & \text{{{t('masks.may_attend', lang)}}} \\ "
              rf"-\infty & \text{{{t('masks.blocked', lang)}}} \end{{cases}}",
              mask_caption,
              colorscale="Greens", zmin=0, zmax=1, xlabel="key", ylabel="query", trivial=not blocked.any()),
        Stage("masked", "", steps["scaled"], row_tokens, col_tokens, shape("masked", steps["scaled"]),
              rf"\frac{{Q K^{{\top}}}}{{\sqrt{{d_k}}}} + {mask_tex}",
              t("steps.cap.masked", lang, b=int(blocked.sum())),
              masked=blocked, zmin=-lim, zmax=lim, xlabel="key", ylabel="query", trivial=not blocked.any()),
        Stage("weights", "", steps["weights"], row_tokens, col_tokens, shape("A", steps["weights"]),
              rf"A = \operatorname{{softmax}}\!\left(\frac{{Q K^{{\top}}}}{{\sqrt{{d_k}}}} + {mask_tex}\right)",
              t("steps.cap.weights", lang, err=float(np.abs(steps["weights"].sum(1) - 1).max())), colorscale="Viridis", zmin=0, zmax=1, xlabel="key", ylabel="query"),
        Stage("Z", "", steps["Z"], row_tokens, dims_k, shape("Z", steps["Z"]),
              rf"Z{h} = A\,V{h}", t("steps.cap.Z", lang, n=n, k=k), xlabel="head dimension", ylabel="token"),
        Stage("Z_all", "", steps["Z_all"], row_tokens, _dims(steps["Z_all"].shape[1]), shape("Concat", steps["Z_all"]),
              r"\operatorname{Concat}(Z_1, \dots, Z_h) \in \mathbb{R}^{n \times h d_v}",
              t("steps.cap.Z_all", lang, h=n_heads, k=k, n=n, hk=n_heads * k, head=head,
                a=head * k, b=(head + 1) * k - 1), group="O", xlabel="dimension", ylabel="token"),
        Stage("W_O", "", steps["W_O"], _dims(steps["W_O"].shape[0]), dims_d, shape("W_O", steps["W_O"]),
              r"W^{O} \in \mathbb{R}^{h d_v \times d_{model}}", t("steps.cap.W_O", lang, hk=n_heads * k, d=d),
              group="O", xlabel="model dimension", ylabel="concat dimension"),
        Stage("output", "", steps["output"], row_tokens, dims_d, shape("output", steps["output"]),
              r"\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O}"
              + (r" + b^{O}" if bool(steps["bias_O"]) else ""),
              t("steps.cap.output" if bool(steps["bias_O"]) else "steps.cap.output_no_bias", lang),
              xlabel="dimension", ylabel="token"),
    ]
    return out


def _qk_norm_stages(steps: dict, row_tokens: list[str], col_tokens: list[str], h: str, lang: str) -> list[Stage]:
    """Qwen3 / Gemma 3: RMSNorm(X W_Q) and RMSNorm(X W_K), each head's vectors normalised over d_k before RoPE."""
    out = []
    for name, toks in (("Q", row_tokens), ("K", col_tokens)):
        a, g = steps[f"{name}_norm"], steps[f"gamma_{name.lower()}"]
        out.append(Stage(f"{name}_norm", "", a, toks, _dims(a.shape[1]), f"RMSNorm(X W_{name}): {a.shape[0]} × {a.shape[1]}",
                         rf"\operatorname{{RMSNorm}}(X\,W^{{{name}}}{h}) = \gamma_{{{name.lower()}}} \odot "
                         rf"\frac{{X\,W^{{{name}}}{h}}}{{\sqrt{{\operatorname{{mean}}((X\,W^{{{name}}}{h})^2) + \epsilon}}}}",
                         t("steps.cap.qk_norm", lang, name=name, k=a.shape[1], lo=float(g.min()), hi=float(g.max())),
                         group="qknorm", xlabel="head dimension", ylabel="token"))
    return out


def _rope_caption(steps: dict, k: int, lang: str) -> str:
    """What RoPE did, with the layer's own base (a sliding-window layer's may differ) and linear scaling."""
    text = t("steps.cap.rope", lang, half=k // 2, k=k, theta=float(steps["rope_theta"]))
    scaling = float(steps.get("rope_scaling", 1.0))
    if scaling != 1.0:
        text += " " + t("steps.cap.rope_scaling", lang, s=f"{scaling:g}")
    if "window" in steps:
        text += " " + t("steps.cap.rope_local", lang, theta=float(steps["rope_theta"]))
    return text


def stage_figure(stage: Stage, *, lecture: bool = False, max_side: int = 256, lang: str = "en",
                 width: int | None = None) -> go.Figure:
    """One stage as a heatmap titled with its shape; cell values written only on small matrices whose cells hold
    them at `width` px (viz.heatmap)."""
    zmid = 0.0 if stage.zmin is None and stage.colorscale == "RdBu_r" else None
    export = ExportSpec(stage.matrix, stage.rows, stage.cols, f"{stage.title} ({stage.shape})", masked=stage.masked,
                        cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r", xlabel=stage.xlabel,
                        ylabel=stage.ylabel)  # the twin in the data's own range, under the page's context
    return heatmap(stage.matrix, stage.rows, stage.cols, title=f"{stage.title}  ·  {stage.shape}",
                   colorscale=stage.colorscale, zmin=stage.zmin, zmax=stage.zmax, zmid=zmid, masked=stage.masked,
                   xlabel=stage.xlabel, ylabel=stage.ylabel, lecture=lecture, max_side=max_side, lang=lang,
                   width=width, export=export)
