"""Mask lab computations and figures (no Streamlit here).

Convention (model/masks.py): True = may attend. Blocked scores become -inf
before the softmax, so blocked keys get weight exactly 0 (Vaswani et al. 2017,
section 3.2.3; seed 002's padding example "this is my car" / "that is not" and
look-ahead example "I am sam <pad>").

- `padded_run` runs a model's own embedding and encoder layers on a small
  padded batch with the padding mask (b, 1, 1, n), recording every layer input;
  `padded_stages` recomputes one layer / head from those inputs with
  `scaled_dot_product_attention(..., return_stages=True)`:
      scores = Q K^T, scaled = scores / sqrt(d_k), masked (blocked = -inf), weights = softmax(masked)
- `decoder_run` / `decoder_stages` do the same for an encoder-decoder model's
  masked decoder self-attention, whose mask is padding AND look-ahead.

Notation: b batch, h heads, n length, d d_model, k d_k, L layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from model.attention import scaled_dot_product_attention
from model.masks import causal_mask, decoder_mask, padding_mask
from viz.heatmap import MASKED_BG, heatmap, safe_label

ALLOWED_COLOUR = "#2a9d8f"
MASK_SCALE = [[0.0, MASKED_BG], [0.5, MASKED_BG], [0.5, ALLOWED_COLOUR], [1.0, ALLOWED_COLOUR]]


@dataclass
class PaddedRun:
    """A padded batch through the encoder: what the mask lab draws."""

    tokens: list[list[str]]  # (b, n) pad token fills short rows
    ids: np.ndarray  # (b, n)
    mask: np.ndarray  # (b, n) bool, True = real token
    hidden: torch.Tensor  # (L+1, b, n, d): input of each layer, then the final output
    attention: np.ndarray  # (L, b, h, n, n) the layers' own attention weights


@dataclass
class DecoderRun:
    """One teacher-forced target, padded, through an encoder-decoder's decoder."""

    source_tokens: list[str]
    tokens: list[str]  # (T,) [<bos>, target..., <pad>...]
    ids: np.ndarray  # (T,)
    mask: np.ndarray  # (T, T) bool: padding AND look-ahead, exactly what the model used
    hidden: torch.Tensor  # (L+1, 1, T, d) decoder layer inputs
    attention: np.ndarray  # (L, h, T, T) the decoder's own masked self-attention


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().float().cpu().numpy()


def padded_run(loaded, texts: list[str]) -> PaddedRun:
    """Tokenize each text, pad to the longest, run the model's embedding + encoder with the padding mask."""
    tokens, ids = loaded.pad_sources(texts)
    pad_id = loaded.config.pad_id
    with torch.inference_mode():
        t_ids = torch.as_tensor(ids, device=loaded.device)  # (b, n)
        key_mask = padding_mask(t_ids, pad_id)  # (b, 1, 1, n)
        out = loaded.module.encoder(loaded.source_embedding(t_ids), key_mask, record=True)
    return PaddedRun(tokens=tokens, ids=ids, mask=ids != pad_id,
                     hidden=torch.stack(out.hidden_states), attention=_np(torch.stack(out.self_attention)))


def _stages(mha, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor, n_heads: int) -> dict[str, torch.Tensor]:
    """x (b, n, d), memory (b, m, d), mask broadcasting to (b, h, n, m) -> stages, each (b, h, n, m)."""
    P = mha.projection_matrices()
    split = lambda t: t.view(t.shape[0], t.shape[1], n_heads, -1).transpose(1, 2)  # (b, n, d) -> (b, h, n, k)
    q = split(x @ P["W_Q"] + P["b_Q"])
    k = split(memory @ P["W_K"] + P["b_K"])
    v = split(memory @ P["W_V"] + P["b_V"])
    st = scaled_dot_product_attention(q, k, v, mask, return_stages=True)
    full = mask.expand(st.scores.shape)
    return {"scores": st.scores, "scaled": st.scaled, "masked": st.masked, "weights": st.weights, "mask": full}


def padded_stages(loaded, run: PaddedRun, layer: int, head: int, row: int) -> dict[str, np.ndarray]:
    """Stages of one encoder layer / head for batch row `row`, each (n, n); `mask` True = may attend."""
    layers = loaded.module.encoder.layers
    if not (0 <= layer < len(layers) and 0 <= head < loaded.config.n_heads and 0 <= row < len(run.tokens)):
        raise ValueError(f"layer {layer}, head {head} or row {row} out of range")
    with torch.inference_mode():
        x = run.hidden[layer]  # (b, n, d)
        mask = torch.as_tensor(run.mask, device=x.device)[:, None, None, :]  # (b, 1, 1, n)
        st = _stages(layers[layer].self_attn, x, x, mask, loaded.config.n_heads)
        return {k: _np(v[row, head]) if v.dtype != torch.bool else v[row, head].cpu().numpy() for k, v in st.items()}


def decoder_run(loaded, source: str, target: str, n_pad: int = 1) -> DecoderRun:
    """Teacher-force [<bos>, target tokens, <pad> x n_pad] into the decoder of an encoder-decoder model,
    with the model's own combined mask (padding AND look-ahead), recording every decoder layer input."""
    model = loaded.module
    cfg = loaded.config
    src = loaded.encode_source(source)
    tgt = loaded.tokenizer.encode(target, add_special_tokens=False)
    ids = [loaded.bos_id, *tgt.ids][: cfg.max_positions - n_pad] + [cfg.pad_id] * n_pad
    tok = loaded.tokenizer.id_to_token
    with torch.inference_mode():
        s = torch.tensor([src.ids], device=loaded.device)  # (1, m)
        t = torch.tensor([ids], device=loaded.device)  # (1, T)
        enc, src_mask = model.encode(s)
        dec, tgt_mask = model.decode(t, enc.hidden, src_mask, record=True)
    return DecoderRun(source_tokens=src.tokens, tokens=[tok(i) or "?" for i in ids], ids=np.array(ids),
                      mask=tgt_mask[0, 0].cpu().numpy(), hidden=torch.stack(dec.hidden_states),
                      attention=_np(torch.stack([a[0] for a in dec.self_attention])))


def decoder_stages(loaded, run: DecoderRun, layer: int, head: int) -> dict[str, np.ndarray]:
    """Stages of one decoder masked self-attention layer / head, each (T, T)."""
    layers = loaded.module.decoder.layers
    if not (0 <= layer < len(layers) and 0 <= head < loaded.config.n_heads):
        raise ValueError(f"layer {layer} or head {head} out of range")
    with torch.inference_mode():
        x = run.hidden[layer]  # (1, T, d)
        mask = torch.as_tensor(run.mask, device=x.device)[None, None]  # (1, 1, T, T)
        st = _stages(layers[layer].self_attn, x, x, mask, loaded.config.n_heads)
        return {k: _np(v[0, head]) if v.dtype != torch.bool else v[0, head].cpu().numpy() for k, v in st.items()}


def example_masks(words: list[str], pad: str = "<pad>") -> dict[str, np.ndarray]:
    """Seed 002's look-ahead example on word tokens ("I am sam <pad>"): padding, causal and combined, each (n, n),
    built with the model's own mask functions (True = may attend)."""
    ids = torch.tensor([[0 if w == pad else i + 1 for i, w in enumerate(words)]])  # (1, n); pad id 0
    n = len(words)
    return {"padding": padding_mask(ids, 0)[0, 0].expand(n, n).numpy(), "causal": causal_mask(n).numpy(),
            "combined": decoder_mask(ids, 0)[0, 0].numpy()}


# ---- figures ---------------------------------------------------------------------------------------------


def mask_heatmap(mask: np.ndarray, rows: list[str], cols: list[str], *, title: str, big: bool = False,
                 xlabel: str = "key", ylabel: str = "query") -> go.Figure:
    """A boolean mask: teal = may attend (1), grey = blocked (0)."""
    fig = heatmap(np.asarray(mask, dtype=np.float32), rows, cols, title=title, colorscale=MASK_SCALE, zmin=0, zmax=1,
                  xlabel=xlabel, ylabel=ylabel, big=big, text_auto=np.asarray(mask).size <= 400)
    fig.update_traces(texttemplate="%{z:.0f}", colorbar={"tickvals": [0.25, 0.75], "ticktext": ["blocked", "may attend"]},
                      selector={"type": "heatmap"})
    return fig


def batch_mask_heatmap(tokens: list[list[str]], mask: np.ndarray, *, big: bool = False) -> go.Figure:
    """The (b, n) padding mask of a batch, each cell labelled with its token."""
    b, n = mask.shape
    text = [[safe_label(t, 12) for t in row] for row in tokens]
    fig = go.Figure(go.Heatmap(z=mask.astype(np.float32), x=[str(j) for j in range(n)],
                               y=[f"sentence {i + 1}" for i in range(b)], text=text, texttemplate="%{text}",
                               textfont={"size": 16 if big else 12}, colorscale=MASK_SCALE, zmin=0, zmax=1,
                               xgap=2, ygap=2, hovertemplate="%{y}, position %{x}: %{text}<extra></extra>",
                               colorbar={"tickvals": [0.25, 0.75], "ticktext": ["[PAD]: blocked", "real token"]}))
    fig.update_xaxes(title_text="position", type="category")
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_layout(title="Padding mask of the batch (True = real token, may be attended to)",
                      height=int((120 + 70 * b) * (1.25 if big else 1)), font={"size": 17 if big else 12},
                      margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig


def with_row_sums(weights: np.ndarray, col_labels: list[str]) -> tuple[np.ndarray, list[str]]:
    """Append a 'Σ row' column to the weights: every entry should read 1.000."""
    w = np.asarray(weights, dtype=np.float64)
    return np.concatenate([w, w.sum(axis=1, keepdims=True)], axis=1), [*col_labels, "Σ row"]


def stage_figures(stages: dict[str, np.ndarray], rows: list[str], cols: list[str], *, title: str,
                  big: bool = False, max_side: int = 256) -> dict[str, go.Figure]:
    """Raw scores, masked scores (blocked = grey ✕, not a colour) and softmax weights with a row-sum column.
    `title` is plain text made by the page (model, layer, head), never user text: it may hold plotly's <sup>."""
    blocked = ~stages["mask"]
    lim = float(np.abs(stages["scaled"][~blocked]).max()) if (~blocked).any() else 1.0
    w_sum, cols_sum = with_row_sums(stages["weights"], cols)
    return {
        "scores": heatmap(stages["scores"], rows, cols, title=f"Raw scores QKᵀ<br><sup>{title}</sup>", colorscale="RdBu_r",
                          zmid=0, xlabel="key", ylabel="query", big=big, max_side=max_side),
        "masked": heatmap(stages["scaled"], rows, cols, masked=blocked, colorscale="RdBu_r", zmin=-lim, zmax=lim,
                          title=f"Scaled + masked: blocked = −∞ (grey ✕)<br><sup>{title}</sup>", xlabel="key",
                          ylabel="query", big=big, max_side=max_side),
        "weights": heatmap(w_sum, rows, cols_sum, zmin=0, zmax=1, xlabel="key", ylabel="query", big=big,
                           max_side=max_side,
                           title=f"Softmax weights, then Σ row<br><sup>{title}: blocked = exactly 0</sup>"),
    }


def stage_checks(stages: dict[str, np.ndarray]) -> dict[str, float]:
    """Numbers the page prints under the weights: worst row-sum error, and the largest weight on a blocked key."""
    w = stages["weights"].astype(np.float64)
    blocked = ~stages["mask"]
    return {"max_row_sum_error": float(np.abs(w.sum(axis=1) - 1).max()),
            "max_blocked_weight": float(w[blocked].max()) if blocked.any() else 0.0,
            "n_blocked": int(blocked.sum())}
