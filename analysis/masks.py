"""Mask lab runs: a padded batch through an encoder, a padded teacher-forced target through a decoder, and the
stages of one head read from the model's own forward (analysis.stages reads a single sentence the same way).

Convention (model/masks.py): True = may attend. Blocked scores become -inf before the softmax, so blocked keys get
weight exactly 0 (Vaswani et al. 2017, section 3.2.3; seed 002's padding example "this is my car" / "that is not"
and look-ahead example "I am sam <pad>").

Notation: b batch, h heads, n length, L layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.masks import causal_mask, decoder_mask, padding_mask, sliding_window_mask
from model.run import Keep, Run

from .frozen import freeze, to_numpy
from .heads.common import encoder_input

STAGE_NAMES = ("scores", "scaled", "masked", "weights", "mask")


@dataclass(frozen=True)
class PaddedRun:
    """A padded batch through the encoder: what the mask lab draws."""

    tokens: list[list[str]]  # (b, n) pad token fills short rows
    ids: np.ndarray  # (b, n)
    mask: np.ndarray  # (b, n) bool, True = real token
    attention: np.ndarray  # (L, b, h, n, n) the layers' own attention weights
    stages: dict  # layer -> {stage name: (b, h, n, n)} for the layers asked for


@dataclass(frozen=True)
class DecoderRun:
    """One teacher-forced target, padded, through an encoder-decoder's decoder."""

    source_tokens: list[str]
    tokens: list[str]  # (T,) [<bos>, target..., <pad>...]
    ids: np.ndarray  # (T,)
    mask: np.ndarray  # (T, T) bool: padding AND look-ahead, exactly what the model used
    attention: np.ndarray  # (L, h, T, T) the decoder's own masked self-attention
    stages: dict  # layer -> {stage name: (h, T, T)}


def _stage_arrays(att_record, mask: torch.Tensor) -> dict[str, np.ndarray]:
    st = att_record.record["stages"]
    return {"scores": to_numpy(st.scores), "scaled": to_numpy(st.scaled), "masked": to_numpy(st.masked),
            "weights": to_numpy(st.weights), "mask": to_numpy(mask.expand(st.scores.shape))}


def padded_run(loaded, texts: list[str], layers: bool | set[int] = True, upto: int | None = None) -> PaddedRun:
    """Tokenize each text, pad to the longest, run the model's embedding + encoder with the padding mask, recording
    the stages of `layers` (True: all; a page asks for the one it shows, which bounds memory on long inputs).
    upto: run the layers up to that one only (then `attention` holds layers 0..upto)."""
    tokens, ids = loaded.pad_sources(texts)
    t_ids = torch.as_tensor(ids, device=loaded.device)  # (b, n)
    keep = t_ids != loaded.config.pad_id  # (b, n): the padding appended here is no key
    out = loaded.run(Run(t_ids, keep_mask=keep, keep=Keep(detail=_layers(layers)), upto=upto)).encoder
    stages = {i: _stage_arrays(r.detail["self"], out.mask) for i, r in out.layers.items() if r.detail is not None}
    return freeze(PaddedRun(tokens=tokens, ids=ids, mask=ids != loaded.config.pad_id,
                            attention=to_numpy(torch.stack([out.layers[i].attention for i in sorted(out.layers)])),
                            stages=stages))


def _layers(layers: bool | set[int]) -> bool | frozenset[int]:
    return layers if isinstance(layers, bool) else frozenset(layers)


def padded_stages(run: PaddedRun, layer: int, head: int, row: int) -> dict[str, np.ndarray]:
    """Stages of one encoder layer / head for batch row `row`, each (n, n); `mask` True = may attend."""
    if not (layer in run.stages and 0 <= head < run.attention.shape[2] and 0 <= row < len(run.tokens)):
        raise ValueError(f"layer {layer}, head {head} or row {row} out of range")
    return {k: v[row, head] for k, v in run.stages[layer].items()}


def decoder_run(loaded, source: str, target: str, n_pad: int = 1, layers: bool | set[int] = True) -> DecoderRun:
    """Teacher-force [<bos>, target tokens, <pad> x n_pad] into the decoder of an encoder-decoder model, with the
    model's own combined mask (padding AND look-ahead), recording every decoder layer."""
    cfg = loaded.config
    src = encoder_input(loaded, source)  # the model's source encoding (analysis.heads.common)
    ids = [loaded.bos_id, *loaded.encode_target(target)][: cfg.max_positions - n_pad] + [cfg.pad_id] * n_pad
    t = torch.tensor([ids], device=loaded.device)  # (1, T)
    keep = t != cfg.pad_id  # (1, T): the padding appended here is no key; the start token is one (Marian: <pad>)
    keep[:, 0] = True
    run = Run(src.ids, target=t, target_keep=keep, keep=Keep(detail=_layers(layers), logits="none"))
    out = loaded.run(run).decoder
    stages = {i: {k: v[0] for k, v in _stage_arrays(r.detail["self"], out.mask).items()}
              for i, r in out.layers.items() if r.detail is not None}
    return freeze(DecoderRun(source_tokens=list(src.tokens), tokens=loaded.token_texts(ids, "?"), ids=np.array(ids),
                             mask=to_numpy(out.mask[0, 0]),
                             attention=to_numpy(torch.stack([out.layers[i].attention[0] for i in sorted(out.layers)])),
                             stages=stages))


def decoder_stages(run: DecoderRun, layer: int, head: int) -> dict[str, np.ndarray]:
    """Stages of one decoder masked self-attention layer / head, each (T, T)."""
    if not (layer in run.stages and 0 <= head < run.attention.shape[1]):
        raise ValueError(f"layer {layer} or head {head} out of range")
    return {k: v[head] for k, v in run.stages[layer].items()}


def example_masks(words: list[str], pad: str = "<pad>") -> dict[str, np.ndarray]:
    """Seed 002's look-ahead example on word tokens ("I am sam <pad>"): padding, causal and combined, each (n, n),
    built with the model's own mask functions (True = may attend)."""
    ids = torch.tensor([[0 if w == pad else i + 1 for i, w in enumerate(words)]])  # (1, n); pad id 0
    n = len(words)
    return freeze({"padding": padding_mask(ids, 0)[0, 0].expand(n, n).numpy(), "causal": causal_mask(n).numpy(),
                   "combined": decoder_mask(ids, 0)[0, 0].numpy()})


def layer_kind_masks(loaded, n: int) -> dict[str, np.ndarray]:
    """A decoder-only model's masks over n tokens by layer kind, with the model's own mask functions (True = may
    attend): "global", the look-ahead triangle; and, where the model has sliding-window layers, "local", the band
    (a token sees itself and the window - 1 before it) AND the triangle. Empty for other models."""
    c = loaded.config
    if c.kind != "decoder":
        return {}
    causal = causal_mask(n)
    out = {"global": causal.numpy()}
    if c.local_layers:
        out["local"] = (causal & sliding_window_mask(n, c.sliding_window)).numpy()
    return freeze(out)


def stage_checks(stages: dict[str, np.ndarray]) -> dict[str, float]:
    """The lecture's two invariants on real numbers: rows of the weights sum to 1, blocked cells get exactly 0."""
    w, allowed = stages["weights"], stages["mask"]
    return {"max_row_sum_error": float(np.abs(w.sum(-1) - 1.0).max()),
            "max_blocked_weight": float(np.abs(w[~allowed]).max()) if (~allowed).any() else 0.0,
            "n_blocked": int((~allowed).sum())}
