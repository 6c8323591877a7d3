"""Attention masks, one convention everywhere:

    **True means "may attend"**, False means "blocked".

Masks are boolean and broadcast against attention scores of shape
(batch, heads, query_len, key_len). Blocked scores are set to -inf before the
softmax, so blocked keys receive weight exactly 0 (model/attention.py).
"""

from __future__ import annotations

import torch


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """ids (b, m) -> (b, 1, 1, m): key positions that are not padding."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(n: int, device=None) -> torch.Tensor:
    """Look-ahead mask (n, n): position i may attend to positions 0..i (lower triangle)."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def sliding_window_mask(n: int, window: int, m: int | None = None, device=None) -> torch.Tensor:
    """The sliding window's band (n, m) (Mistral, Gemma 3's local layers): query i, at position m - n + i (the last n
    of m positions: m > n when earlier keys are cached), may attend to key j only when (m - n + i) - j < window,
    i.e. to itself and the window - 1 positions before it. AND it with the look-ahead mask: the band says nothing of
    later keys."""
    m = n if m is None else m
    rows = torch.arange(m - n, m, device=device)[:, None]  # (n, 1) query positions
    return rows - torch.arange(m, device=device)[None, :] < window  # (n, m)


def decoder_mask(tgt_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The decoder self-attention mask: padding AND look-ahead, (b, 1, n, n).

    This is the one place the two are combined (seed 002: "I am sam <pad>")."""
    n = tgt_ids.shape[1]
    return padding_mask(tgt_ids, pad_id) & causal_mask(n, tgt_ids.device)[None, None]
