"""The Attention explorer's derived views of a trace: per head, average of heads or rollout, then optionally
without [CLS]/[SEP] (rows renormalised), then optionally with subword pieces merged into words (analysis.metrics), or
byte pieces merged into the characters they spell (analysis.pieces: Hangul read as bytes). The masks each layer
applied follow the same transforms, so the figures can draw the blocked cells (a sliding-window layer's band).

Shapes: (L, H, n, m) attention; H' = H per head, 1 for mean / rollout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.blocks import Block
from model.trace import AttentionTrace

from . import metrics as am
from . import pieces
from .frozen import freeze

MODES = ("head", "mean", "rollout")  # per head, the average of heads, rollout across layers (names: ex.mode.<key>)


@dataclass(frozen=True)
class Derived:
    """One view of a block's attention after the options, plus the labels and the token -> row map."""

    att: np.ndarray  # (L, H', n', m')
    rows: list[str]  # n' labels (tokens, or words when merged)
    cols: list[str]  # m' labels
    row_of_token: dict[int, int]  # original query-token index -> row of `att` (absent when hidden)
    n_heads: int  # heads shown: H, or 1 for the mean of heads and for rollout
    allowed: np.ndarray | None = None  # (K, n', m') bool, True = may attend: the distinct masks the layers applied
    layer_mask: tuple[int, ...] = ()  # per layer, its mask's index in `allowed`

    def allowed_at(self, layer: int) -> np.ndarray | None:
        """(n', m') the mask `layer` applied, as shown (hidden, merged); None where the trace holds none."""
        return None if self.allowed is None else self.allowed[self.layer_mask[layer]]


def mergeable(trace: AttentionTrace, block: Block) -> bool:
    """Whether a block's tokens carry word ids to merge by: the encoder's, or a decoder-only model's one stack."""
    return block == "encoder" or (block == "decoder_self" and trace.is_decoder_only)


def spellable(trace: AttentionTrace, block: Block) -> bool:
    """Whether some of the block's tokens are byte pieces of a character (Hangul through SmolLM2, GPT-2, Gemma's
    byte fallback): the explorer offers to show them as the characters they spell."""
    rows, _ = trace.axis_tokens(block)
    special, _ = trace.axis_special(block)
    return mergeable(trace, block) and pieces.has_byte_pieces(rows, special, trace.meta.get("scheme"))


def _layer_masks(trace: AttentionTrace, block: Block, n_layers: int, mode: str) -> tuple[np.ndarray | None, tuple]:
    """(K, n, m) the distinct masks the block's layers applied and each layer's index; rollout mixes the layers:
    the block's own (causal) mask only."""
    if block == "cross" or trace.masks.get(block) is None:
        return None, ()
    masks, index, which = [], [], {}
    for layer in range(n_layers):
        m = trace.mask_of(block, layer) if mode != "rollout" else trace.masks[block]
        key = id(m)
        if key not in which:
            which[key] = len(masks)
            masks.append(np.asarray(m, dtype=bool))
        index.append(which[key])
    return np.stack(masks), tuple(index)


def derive(trace: AttentionTrace, block: Block, mode: str = "head", hide: bool = False, merge: bool = False,
           spell: bool = False) -> Derived:
    """merge: subword pieces into words (their word ids); spell: byte pieces into the characters they spell (a word
    merge already spells them)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    att = trace.attention(block)  # (L, H, n, m)
    allowed, layer_mask = _layer_masks(trace, block, att.shape[0], mode)
    rows_tok, cols_tok = trace.axis_tokens(block)
    rows_sp, cols_sp = trace.axis_special(block)
    if mode == "mean":
        att = am.head_average(att)
    elif mode == "rollout":
        att = am.rollout(att)[:, None]
    row_idx, col_idx = list(range(att.shape[-2])), list(range(att.shape[-1]))
    if hide:
        att, row_idx, col_idx = am.drop_special(att, rows_sp, cols_sp)
        if allowed is not None:
            allowed = allowed[:, row_idx][:, :, col_idx]
    rows = [rows_tok[i] for i in row_idx]
    cols = [cols_tok[j] for j in col_idx]
    row_of = {i: k for k, i in enumerate(row_idx)}
    scheme = trace.meta.get("scheme")
    r_units = c_units = None
    if merge and mergeable(trace, block):
        words = trace.source_word_ids
        r_units = am.word_units([words[i] for i in row_idx])
        c_units = am.word_units([words[j] for j in col_idx])
    elif spell and mergeable(trace, block):  # the pieces of one character (a Hangul syllable read as bytes)
        r_units = pieces.spelled_units(rows, [rows_sp[i] for i in row_idx], scheme)
        c_units = pieces.spelled_units(cols, [cols_sp[j] for j in col_idx], scheme)
    if r_units is not None and c_units is not None:
        att = am.merge_words(att, r_units, c_units)
        if allowed is not None:  # a merged cell may be attended where any of its pieces' cells may
            pr, pc = am.merge_matrix(r_units, allowed.shape[1], mean=False), am.merge_matrix(c_units, allowed.shape[2],
                                                                                           mean=False)
            allowed = (pr @ allowed.astype(np.float32) @ pc.T) > 0
        row_of = {row_idx[i]: u for u, unit in enumerate(r_units) for i in unit}
        word = merge and mergeable(trace, block)
        rows = pieces.unit_labels(rows, r_units, scheme, word=word)
        cols = pieces.unit_labels(cols, c_units, scheme, word=word)
    if att is trace.attention(block):  # no transform: share the trace's read-only array (72 MB at 512 tokens)
        return freeze(Derived(att, rows, cols, row_of, att.shape[1], allowed, layer_mask))
    return freeze(Derived(np.ascontiguousarray(att, dtype=np.float32), rows, cols, row_of, att.shape[1], allowed,
                          layer_mask))


def block_metrics(trace: AttentionTrace, block: Block) -> dict[str, np.ndarray]:
    """Metrics of the raw per-head attention (before any option), each (L, H)."""
    _, cols_sp = trace.axis_special(block)
    return freeze(am.head_metrics(trace.attention(block), cols_sp, square=block != "cross"))


def default_token(tokens: list[str]) -> int:
    """The flagship question is about "it": select it when present, else the first real token."""
    low = [t.lower() for t in tokens]
    if "it" in low:
        return low.index("it")
    return 1 if len(tokens) > 2 else 0
