"""The Attention explorer's derived views of a trace: per head, average of heads or rollout, then optionally
without [CLS]/[SEP] (rows renormalised), then optionally with subword pieces merged into words (analysis.metrics).

Shapes: (L, H, n, m) attention; H' = H per head, 1 for mean / rollout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.trace import AttentionTrace

from . import metrics as am
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


def derive(trace: AttentionTrace, block: str, mode: str = "head", hide: bool = False, merge: bool = False) -> Derived:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    att = trace.attention(block)  # (L, H, n, m)
    rows_tok, cols_tok = trace.axis_tokens(block)
    rows_sp, cols_sp = trace.axis_special(block)
    if mode == "mean":
        att = am.head_average(att)
    elif mode == "rollout":
        att = am.rollout(att)[:, None]
    row_idx, col_idx = list(range(att.shape[-2])), list(range(att.shape[-1]))
    if hide:
        att, row_idx, col_idx = am.drop_special(att, rows_sp, cols_sp)
    rows = [rows_tok[i] for i in row_idx]
    cols = [cols_tok[j] for j in col_idx]
    row_of = {i: k for k, i in enumerate(row_idx)}
    if merge and block == "encoder":
        words = trace.source_word_ids
        r_units = am.word_units([words[i] for i in row_idx])
        c_units = am.word_units([words[j] for j in col_idx])
        att = am.merge_words(att, r_units, c_units)
        row_of = {row_idx[i]: u for u, unit in enumerate(r_units) for i in unit}
        rows, cols = am.unit_labels(rows, r_units), am.unit_labels(cols, c_units)
    if att is trace.attention(block):  # no transform: share the trace's read-only array (72 MB at 512 tokens)
        return freeze(Derived(att, rows, cols, row_of, att.shape[1]))
    return freeze(Derived(np.ascontiguousarray(att, dtype=np.float32), rows, cols, row_of, att.shape[1]))


def block_metrics(trace: AttentionTrace, block: str) -> dict[str, np.ndarray]:
    """Metrics of the raw per-head attention (before any option), each (L, H)."""
    _, cols_sp = trace.axis_special(block)
    return freeze(am.head_metrics(trace.attention(block), cols_sp, square=block != "cross"))


def default_token(tokens: list[str]) -> int:
    """The flagship question is about "it": select it when present, else the first real token."""
    low = [t.lower() for t in tokens]
    if "it" in low:
        return low.index("it")
    return 1 if len(tokens) > 2 else 0
