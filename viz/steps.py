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

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from .heatmap import heatmap

SECTIONS = ["X and W_Q, W_K, W_V", "Q, K, V", "QKᵀ, ÷√d_k, mask", "Softmax and Z = A V", "Concat and W_O"]
SECTION_OF = {"X": 0, "memory": 0, "W_Q": 0, "W_K": 0, "W_V": 0, "Q": 1, "K": 1, "V": 1, "scores": 2, "scaled": 2,
              "mask": 2, "masked": 2, "weights": 3, "Z": 3, "Z_all": 4, "W_O": 4, "output": 4}  # stage key -> section


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


def build_stages(steps: dict[str, np.ndarray], row_tokens: list[str], col_tokens: list[str], *,
                 head: int, n_heads: int, block: str = "encoder") -> list[Stage]:
    """Turn attention_steps(...) into ordered, labelled stages. row_tokens label queries, col_tokens keys."""
    n, d = steps["X"].shape
    k = steps["Q"].shape[1]
    m = steps["K"].shape[0]
    h = f"_{{{head}}}"  # head subscript in LaTeX, counted from 0 like everywhere in the UI
    src = "M" if "memory" in steps else "X"  # cross-attention: keys and values come from the encoder output M
    dims_d, dims_k = _dims(d), _dims(k)
    shape = lambda name, a: f"{name}: {a.shape[0]} × {a.shape[1]}"  # noqa: E731
    out: list[Stage] = [
        Stage("X", "X: input of this layer", steps["X"], row_tokens, dims_d, shape("X", steps["X"]),
              r"X \in \mathbb{R}^{n \times d_{model}}",
              f"One row per token ({n} tokens), d_model = {d} columns: the residual stream entering this layer.",
              xlabel="dimension", ylabel="token"),
    ]
    if "memory" in steps:
        out.append(Stage("memory", "M: encoder output", steps["memory"], col_tokens, dims_d,
                         shape("M", steps["memory"]), r"M \in \mathbb{R}^{m \times d_{model}}",
                         "Cross-attention takes its keys and values from the encoder's final output.",
                         xlabel="dimension", ylabel="source token"))
    for name in ("Q", "K", "V"):
        out.append(Stage(f"W_{name}", f"W_{name} (head {head})", steps[f"W_{name}"], dims_d, dims_k,
                         shape(f"W_{name}", steps[f"W_{name}"]), rf"W^{{{name}}}{h} \in \mathbb{{R}}^{{d_{{model}} \times d_k}}",
                         f"d_model × d_k = {d} × {k}; d_k = d_model / h = {d} / {n_heads}.", group="W",
                         xlabel="head dimension", ylabel="model dimension"))
    for name, toks, inp in (("Q", row_tokens, "X"), ("K", col_tokens, src), ("V", col_tokens, src)):
        out.append(Stage(name, f"{name} = {inp} W_{name}", steps[name], toks, dims_k, shape(name, steps[name]),
                         rf"{name}{h} = {inp}\,W^{{{name}}}{h} + b^{{{name}}}{h}",
                         f"{steps[name].shape[0]} tokens × d_k = {k} (the model adds a bias b).", group="QKV",
                         xlabel="head dimension", ylabel="token"))
    mask = steps["mask"].astype(bool)
    blocked = ~mask
    lim = float(np.abs(steps["scaled"][mask]).max()) if mask.any() else 1.0
    out += [
        Stage("scores", "Scores Q Kᵀ", steps["scores"], row_tokens, col_tokens, shape("QKᵀ", steps["scores"]),
              r"S = Q K^{\top}", f"Every query against every key: {n} × {m}.", xlabel="key", ylabel="query"),
        Stage("scaled", "Scaled: Q Kᵀ / √d_k", steps["scaled"], row_tokens, col_tokens,
              shape("QKᵀ/√d_k", steps["scaled"]), rf"\frac{{Q K^{{\top}}}}{{\sqrt{{d_k}}}} = \frac{{S}}{{\sqrt{{{k}}}}}",
              f"Divided by √{k} = {np.sqrt(k):.3f} so the softmax does not saturate (its gradients would vanish).",
              xlabel="key", ylabel="query"),
        Stage("mask", "Mask (1 = may attend)", mask.astype(np.float32), row_tokens, col_tokens,
              shape("mask", mask), r"\text{mask}_{ij} = \begin{cases} 0 & \text{may attend} \\ -\infty & \text{blocked}"
              r"\end{cases}",
              "The decoder's look-ahead mask blocks later positions." if block == "decoder_self" else
              "A single sentence has no padding and the encoder no look-ahead: every key is allowed.",
              colorscale="Greens", zmin=0, zmax=1, xlabel="key", ylabel="query", trivial=not blocked.any()),
        Stage("masked", "Masked scores", steps["scaled"], row_tokens, col_tokens, shape("masked", steps["scaled"]),
              r"\frac{Q K^{\top}}{\sqrt{d_k}} + \text{mask}",
              f"Blocked cells ({int(blocked.sum())}) are −∞: drawn grey with ✕, not as a colour.",
              masked=blocked, zmin=-lim, zmax=lim, xlabel="key", ylabel="query", trivial=not blocked.any()),
        Stage("weights", "Softmax weights A", steps["weights"], row_tokens, col_tokens, shape("A", steps["weights"]),
              r"A = \operatorname{softmax}\!\left(\frac{Q K^{\top}}{\sqrt{d_k}} + \text{mask}\right)",
              f"Each row sums to 1 (worst error {np.abs(steps['weights'].sum(1) - 1).max():.1e}); blocked cells are "
              "exactly 0.", colorscale="Viridis", zmin=0, zmax=1, xlabel="key", ylabel="query"),
        Stage("Z", f"Z = A V (head {head})", steps["Z"], row_tokens, dims_k, shape("Z", steps["Z"]),
              rf"Z{h} = A\,V{h}", f"This head's output: {n} × d_v = {k}.", xlabel="head dimension", ylabel="token"),
        Stage("Z_all", "Concat of all heads", steps["Z_all"], row_tokens, dims_d, shape("Concat", steps["Z_all"]),
              r"\operatorname{Concat}(Z_1, \dots, Z_h) \in \mathbb{R}^{n \times h d_v}",
              f"{n_heads} heads × d_v = {k} side by side: {n} × {n_heads * k}; head {head} is columns "
              f"{head * k}..{(head + 1) * k - 1}.", group="O", xlabel="dimension", ylabel="token"),
        Stage("W_O", "W_O", steps["W_O"], dims_d, dims_d, shape("W_O", steps["W_O"]),
              r"W^{O} \in \mathbb{R}^{h d_v \times d_{model}}", f"{n_heads * k} × {d}: mixes the heads back together.",
              group="O", xlabel="model dimension", ylabel="concat dimension"),
        Stage("output", "MultiHead = Concat W_O", steps["output"], row_tokens, dims_d, shape("output", steps["output"]),
              r"\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O} + b^{O}",
              "The attention sublayer's output, before Add & Norm.", xlabel="dimension", ylabel="token"),
    ]
    return out


def stage_figure(stage: Stage, *, lecture: bool = False, max_side: int = 256) -> go.Figure:
    """One stage as a heatmap titled with its shape; cell values written only on small matrices."""
    zmid = 0.0 if stage.zmin is None and stage.colorscale == "RdBu_r" else None
    return heatmap(stage.matrix, stage.rows, stage.cols, title=f"{stage.title}  ·  {stage.shape}",
                   colorscale=stage.colorscale, zmin=stage.zmin, zmax=stage.zmax, zmid=zmid, masked=stage.masked,
                   xlabel=stage.xlabel, ylabel=stage.ylabel, lecture=lecture, max_side=max_side)
