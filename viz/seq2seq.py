"""Encoder-decoder decoding page: computations and figures (no Streamlit here).

The paper's two ways of running the decoder (Vaswani et al. 2017, sections 3.1, 5):
- **greedy decoding** (inference): start from [<bos>]; at step t run the decoder
  on the t tokens so far, take the most probable next token, feed it back in;
  `greedy_run` really does this, one forward pass per step, and keeps what each
  step saw: the (t x t) masked decoder self-attention (look-ahead triangle), the
  new token's cross-attention row over the source, and the top-5 next tokens.
- **teacher forcing** (training): the whole shifted correct target
  [<bos>, y_1 .. y_n] in one pass; row t of every matrix is what step t would see
  if every earlier output had been right. `teacher_forced_run` does this.

Both return a `DecodingRun` with the same fields, so the page draws either.
Notation: L decoder layers, h heads, T steps, m source length, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
import torch

from model.data import apply_task
from viz.heatmap import heatmap
from viz.theme import base_layout, esc

TOP_K = 5


@dataclass
class Step:
    """What decoding step t (1-based) saw and produced."""

    inputs: list[str]  # (t,) decoder input tokens [<bos>, y_1 .. y_{t-1}]
    self_attention: np.ndarray  # (L, h, t, t) masked decoder self-attention of those inputs
    cross_row: np.ndarray  # (L, h, m) the newest input's cross-attention over the source
    top_tokens: list[str]  # (TOP_K,) most probable next tokens, best first
    top_probs: np.ndarray  # (TOP_K,)
    chosen: str  # the token this step emits (greedy: top_tokens[0]; teacher forcing: the correct one)


@dataclass
class DecodingRun:
    task: str
    mode: str  # "greedy" | "teacher forcing"
    source_tokens: list[str]  # (m,) [<task>, x_1 .. x_n, <eos>]
    steps: list[Step] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)  # the task's correct output tokens, <eos> included
    truncated: bool = False
    n_tokens_untruncated: int = 0

    @property
    def output_tokens(self) -> list[str]:
        return [s.chosen for s in self.steps]

    def cross_matrix(self, upto: int) -> np.ndarray:
        """(L, h, upto, m): the cross-attention rows of steps 1..upto."""
        return np.stack([s.cross_row for s in self.steps[:upto]], axis=2)

    @property
    def correct(self) -> bool:
        return self.output_tokens == self.expected


def _top(logits: torch.Tensor, tok, k: int = TOP_K) -> tuple[list[str], np.ndarray]:
    p = logits.float().softmax(-1)  # (V,)
    val, idx = p.topk(k)
    return [tok(i) for i in idx.tolist()], val.cpu().numpy()


def _expected(loaded, enc, task: str) -> list[str]:
    """The task's correct output: a permutation of the source text tokens, then <eos>."""
    text_tokens = enc.tokens[1:-1]  # drop <task> and <eos>
    return [*apply_task(task, text_tokens), loaded.tokenizer.id_to_token(loaded.eos_id)]


@torch.no_grad()
def greedy_run(loaded, text: str, task: str, max_steps: int | None = None) -> DecodingRun:
    """Greedy decoding, one decoder pass per step, each output fed back in."""
    enc = loaded.encode_source(text, task=task)
    model, dev, tok = loaded.module, loaded.device, loaded.tokenizer.id_to_token
    src = torch.tensor([enc.ids], device=dev)  # (1, m)
    memory, src_mask = model.encode(src)
    ys = [loaded.bos_id]
    limit = max_steps or min(len(enc.ids) + 4, loaded.config.max_positions - 1)
    run = DecodingRun(task, "greedy", enc.tokens, expected=_expected(loaded, enc, task), truncated=enc.truncated,
                      n_tokens_untruncated=enc.n_tokens_untruncated)
    for _ in range(limit):
        dec, _ = model.decode(torch.tensor([ys], device=dev), memory.hidden, src_mask)
        logits = model.generator(dec.hidden[0, -1])  # (V,) next-token scores from the newest position
        top_t, top_p = _top(logits, tok)
        nxt = int(logits.argmax())
        run.steps.append(Step(
            inputs=[tok(i) for i in ys],
            self_attention=torch.stack(dec.self_attention)[:, 0].float().cpu().numpy(),  # (L, h, t, t)
            cross_row=torch.stack(dec.cross_attention)[:, 0, :, -1].float().cpu().numpy(),  # (L, h, m)
            top_tokens=top_t, top_probs=top_p, chosen=tok(nxt)))
        ys.append(nxt)
        if nxt == loaded.eos_id:
            break
    return run


@torch.no_grad()
def teacher_forced_run(loaded, text: str, task: str) -> DecodingRun:
    """Training view: the whole shifted correct target in one pass."""
    enc = loaded.encode_source(text, task=task)
    model, dev, tok = loaded.module, loaded.device, loaded.tokenizer.id_to_token
    expected = _expected(loaded, enc, task)
    target_ids = [loaded.tokenizer.token_to_id(t) for t in expected]
    dec_in = [loaded.bos_id, *target_ids[:-1]]  # (T,) shifted right
    out = model(torch.tensor([enc.ids], device=dev), torch.tensor([dec_in], device=dev))
    self_att = torch.stack(out.decoder.self_attention)[:, 0].float().cpu().numpy()  # (L, h, T, T)
    cross = torch.stack(out.decoder.cross_attention)[:, 0].float().cpu().numpy()  # (L, h, T, m)
    run = DecodingRun(task, "teacher forcing", enc.tokens, expected=expected, truncated=enc.truncated,
                      n_tokens_untruncated=enc.n_tokens_untruncated)
    for t in range(len(dec_in)):
        top_t, top_p = _top(out.logits[0, t], tok)
        run.steps.append(Step(inputs=[tok(i) for i in dec_in[: t + 1]],
                              self_attention=self_att[:, :, : t + 1, : t + 1], cross_row=cross[:, :, t],
                              top_tokens=top_t, top_probs=top_p, chosen=expected[t]))
    return run


# ---- figures ------------------------------------------------------------------------------------------------------
def pick(att: np.ndarray, layer: int, head: int | str) -> np.ndarray:
    """One layer's attention for a head, or the mean over heads (head == "mean"). att (L, h, ...) -> (...)"""
    a = att[layer]
    return a.mean(0) if head == "mean" else a[int(head)]


def head_name(layer: int, head: int | str) -> str:
    return f"Layer {layer} · " + ("mean of heads" if head == "mean" else f"Head {head}")


def self_attention_figure(run: DecodingRun, step: int, layer: int, head: int | str, *, full: bool = False,
                          lecture: bool = False) -> tuple[go.Figure, np.ndarray, np.ndarray, list[str]]:
    """Decoder self-attention at `step` (1-based): (t x t), or all T rows when `full` (teacher forcing).
    Blocked cells (above the diagonal) are grey. Returns (figure, matrix, blocked, labels)."""
    s = run.steps[(len(run.steps) if full else step) - 1]
    m = pick(s.self_attention, layer, head)  # (t, t)
    blocked = ~np.tril(np.ones(m.shape, dtype=bool))  # look-ahead: position i may not see j > i
    title = f"Decoder self-attention · {head_name(layer, head)}" + ("" if full else f" · step {step}")
    fig = heatmap(m, s.inputs, s.inputs, title=title, zmin=0.0, zmax=1.0, masked=blocked, xlabel="key (earlier)",
                  ylabel="query (decoder input)", big=lecture, colorbar_title="weight")
    if full:
        _mark_row(fig, step - 1, m.shape[1])
    return fig, m, blocked, s.inputs


def cross_figure(run: DecodingRun, step: int, layer: int, head: int | str, *, full: bool = False,
                 lecture: bool = False) -> tuple[go.Figure, np.ndarray, list[str]]:
    """Cross-attention rows (target rows x source columns) of steps 1..step (all T in teacher forcing);
    the current step's row is outlined. Returns (figure, matrix, row labels)."""
    upto = len(run.steps) if full else step
    m = pick(run.cross_matrix(upto), layer, head)  # (upto, m)
    rows = run.steps[upto - 1].inputs
    fig = heatmap(m, rows, run.source_tokens, title=f"Cross-attention · {head_name(layer, head)}", zmin=0.0,
                  zmax=1.0, xlabel="source (encoder output)", ylabel="decoder input", big=lecture,
                  colorbar_title="weight")
    _mark_row(fig, step - 1, m.shape[1])
    return fig, m, rows


def _mark_row(fig: go.Figure, row: int, n_cols: int) -> None:
    fig.add_shape(type="rect", xref="x", yref="y", x0=-0.5, x1=n_cols - 0.5, y0=row - 0.5, y1=row + 0.5,
                  line={"color": "#e63946", "width": 3})


def cross_row_figure(run: DecodingRun, step: int, layer: int, head: int | str, *, lecture: bool = False) -> go.Figure:
    """Bar chart: where the newest decoder token looks in the source at this step."""
    s = run.steps[step - 1]
    row = pick(s.cross_row, layer, head)  # (m,)
    labels = [f"{esc(t, 16)}\u2009·{i}" for i, t in enumerate(run.source_tokens)]
    best = int(row.argmax())
    colours = ["#e63946" if i == best else "#4e79a7" for i in range(len(row))]
    fig = go.Figure(go.Bar(x=labels, y=row, marker_color=colours,
                           hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    title = f"Step {step}: {esc(s.inputs[-1], 16)} looks at the source (→ emits {esc(s.chosen, 16)})"
    fig.update_layout(**base_layout(lecture, 320, title))
    fig.update_yaxes(range=[0, 1], title_text="weight")
    fig.update_xaxes(type="category", tickangle=-60 if len(labels) > 8 else 0)
    return fig


def topk_figure(run: DecodingRun, step: int, *, lecture: bool = False) -> go.Figure:
    """Horizontal bars: the five most probable next tokens at this step (softmax over the vocabulary)."""
    s = run.steps[step - 1]
    labels = [f"{esc(t, 20)}\u2009#{i + 1}" for i, t in enumerate(s.top_tokens)]
    colours = ["#2a9d8f" if t == s.chosen else "#bab0ac" for t in s.top_tokens]
    fig = go.Figure(go.Bar(x=s.top_probs, y=labels, orientation="h", marker_color=colours,
                           text=[f"{p:.3f}" for p in s.top_probs], textposition="auto",
                           hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(**base_layout(lecture, 300, f"Step {step}: top-{TOP_K} next tokens"))
    fig.update_xaxes(range=[0, 1], title_text="probability")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


def topk_table(run: DecodingRun) -> tuple[np.ndarray, list[str], list[str]]:
    """(T, TOP_K) probabilities with row labels 'step t: input -> chosen' and column labels rank 1..k, for CSV."""
    m = np.stack([s.top_probs for s in run.steps])
    rows = [f"step {i + 1}: {s.inputs[-1]} -> {s.chosen} | top: {' '.join(s.top_tokens)}"
            for i, s in enumerate(run.steps)]
    return m, rows, [f"p{k + 1}" for k in range(TOP_K)]
