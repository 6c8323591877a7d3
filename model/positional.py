"""Positional encodings as plain matrices.

Sinusoidal table from Vaswani et al. 2017, section 3.5:
    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
It is *added* to the token embeddings; every value lies in [-1, 1] and the table extends to any length. For odd
d_model the last column is a sine. Marian (and Hugging Face's MarianSinusoidalPositionalEmbedding) stores the same
numbers in another order, "halves": the sines of every frequency first, then the cosines. Marian itself (the C++
toolkit, and the Bergamot / Firefox Translations models trained with it) spaces the frequencies a little differently,
"marian": the i-th of the d/2 frequencies is 10000^(-i / (d/2 - 1)), so the slowest one is exactly 1/10000; computed in
float32, as Marian computes it.
"""

from __future__ import annotations

import torch
from torch import nn


def sinusoidal_table(n_positions: int, d_model: int, dtype=torch.float32, layout: str = "interleaved") -> torch.Tensor:
    """Return PE of shape (n_positions, d_model)."""
    if n_positions < 0 or d_model < 1:
        raise ValueError(f"need n_positions >= 0 and d_model >= 1, got {n_positions}, {d_model}")
    if layout == "marian":
        half = d_model // 2
        inv = torch.pow(torch.tensor(10000.0), -torch.arange(half, dtype=torch.float32) / max(half - 1, 1))  # (d/2,)
        angle = torch.arange(n_positions, dtype=torch.float32)[:, None] * inv  # (n, d/2)
        return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).to(dtype)
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (n, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),) the "2i" of the formula
    angle = pos / torch.pow(10000.0, two_i / d_model)  # (n, ceil(d/2))
    sin, cos = torch.sin(angle), torch.cos(angle[:, : d_model // 2])
    if layout == "halves":
        return torch.cat([sin, cos], dim=1).to(dtype)
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = sin
    pe[:, 1::2] = cos
    return pe.to(dtype)


class SinusoidalPositionalEncoding(nn.Module):
    """The fixed table, kept as a non-persistent buffer so it never appears among checkpoint keys (x-transformers
    does the same). A checkpoint that stores its own copy (DistilBERT, Marian) may overwrite it at load
    (model/weights.py load_weights: fixed tables)."""

    def __init__(self, d_model: int, max_positions: int, layout: str = "interleaved"):
        super().__init__()
        self.layout = layout
        self.register_buffer("table", sinusoidal_table(max_positions, d_model, layout=layout), persistent=False)

    def forward(self, n: int) -> torch.Tensor:
        """PE rows for positions 0..n-1: (n, d_model)."""
        if n > self.table.shape[0]:
            return sinusoidal_table(n, self.table.shape[1], layout=self.layout).to(self.table)
        return self.table[:n]
