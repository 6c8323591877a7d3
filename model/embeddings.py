"""Input embeddings, returned in parts so the app can show X, PE and X + PE.

- Paper (Vaswani et al. 2017, 3.4-3.5): X = Embedding(ids) * sqrt(d_model), then X + PE with the fixed sinusoidal
  table, then dropout.
- BERT / MiniLM: word + learned position + token-type embeddings, summed, then LayerNorm and dropout. RoBERTa's
  positions skip padding and start after the pad row; BART's start after two unused rows (`position_offset`).
- GPT-2: word + learned position. A model with rotary or no positions adds none here.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import TransformerConfig
from .positional import SinusoidalPositionalEncoding


class LearnedPositions(nn.Module):
    """A learned table; position p reads row `offset` + p."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.offset = config.position_offset
        self.weight = nn.Parameter(torch.empty(config.max_positions + self.offset, config.d_model))
        nn.init.normal_(self.weight)

    def forward(self, n: int) -> torch.Tensor:
        """(n, d): the rows of positions 0..n-1."""
        return self.weight[self.offset: self.offset + n]


class Embedding(nn.Module):
    def __init__(self, config: TransformerConfig, token: nn.Module | None = None, *, zero_first: bool = False):
        """zero_first: position 0 reads a zero vector, not its token's embedding (Marian's decoder start)."""
        super().__init__()
        self.config = config
        self.zero_first = zero_first
        # token: a ready lookup module (ids -> (.., d)) instead of a new float table, e.g. a quantised one
        self.token = token if token is not None else nn.Embedding(config.vocab_size, config.d_model)
        if config.positional == "learned":
            self.position = LearnedPositions(config)
        elif config.positional == "sinusoidal":
            self.position = SinusoidalPositionalEncoding(config.d_model, config.max_positions, config.sinusoid_layout)
        else:  # rotary positions turn queries and keys in the attention (model/attention.py); none adds nothing
            self.position = None
        self.token_type = nn.Embedding(config.type_vocab_size, config.d_model) if config.type_vocab_size else None
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.embedding_layer_norm else None
        self.drop = nn.Dropout(config.dropout)
        self.scale = math.sqrt(config.d_model) if config.scale_embeddings else 1.0

    def position_table(self, n: int) -> torch.Tensor | None:
        """(n, d): the position vectors of an unpadded input (the sinusoidal rows, or the learned ones); None when
        positions are not added to the embeddings."""
        return None if self.position is None else self.position(n)

    def _positions(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """ids (b, n) at positions start.. -> (b, n, d) or (1, n, d): what is added for the positions."""
        if self.config.positions_skip_pad:  # RoBERTa: pad tokens stay at row pad_id, the others count real tokens
            if start:
                raise ValueError("positions that skip padding are counted from the first token: start must be 0")
            real = (ids != self.config.pad_id).long()  # (b, n)
            rows = torch.cumsum(real, dim=1) * real + self.config.pad_id  # (b, n) rows of the table
            return self.position.weight[rows]
        return self.position(start + ids.shape[1])[start:].unsqueeze(0)

    def parts(self, ids: torch.Tensor, type_ids: torch.Tensor | None = None, start: int = 0) -> dict[str, torch.Tensor]:
        """ids (b, n) at positions start..start+n-1 -> {"token": X, "position": PE?, "token_type": T?, "sum": before
        norm}, each (b, n, d)."""
        x = self.token(ids)
        if self.scale != 1.0:
            x = x * self.scale
        if self.zero_first and start == 0:  # (b, n, d): the first row is no token's
            x = torch.cat([torch.zeros_like(x[:, :1]), x[:, 1:]], dim=1)
        parts = {"token": x}
        total = x
        if self.position is not None:
            pe = self._positions(ids, start).expand_as(x)
            parts["position"] = pe
            total = total + pe
        if self.token_type is not None:
            tt = self.token_type(type_ids if type_ids is not None else torch.zeros_like(ids))
            parts["token_type"] = tt
            total = total + tt
        parts["sum"] = total
        return parts

    def forward(self, ids: torch.Tensor, type_ids: torch.Tensor | None = None, start: int = 0) -> torch.Tensor:
        """ids (b, n) at positions start..start+n-1 -> (b, n, d)"""
        x = self.parts(ids, type_ids, start)["sum"]
        if self.norm is not None:
            x = self.norm(x)
        return self.drop(x) if self.training and self.drop.p > 0 else x  # identity in eval: skip the call
