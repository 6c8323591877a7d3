"""Input embeddings, returned in parts so the app can show X, PE and X + PE.

- Paper (Vaswani et al. 2017, 3.4-3.5): X = Embedding(ids) * sqrt(d_model), then
  X + PE with the fixed sinusoidal table, then dropout.
- BERT / MiniLM: word + learned position + token-type embeddings, summed, then
  LayerNorm and dropout.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import TransformerConfig
from .positional import SinusoidalPositionalEncoding


class Embedding(nn.Module):
    def __init__(self, config: TransformerConfig, token: nn.Module | None = None):
        super().__init__()
        self.config = config
        # token: a ready lookup module (ids -> (.., d)) instead of a new float table, e.g. a quantised one
        self.token = token if token is not None else nn.Embedding(config.vocab_size, config.d_model)
        if config.positional == "learned":
            self.position = nn.Embedding(config.max_positions, config.d_model)
        else:
            self.position = SinusoidalPositionalEncoding(config.d_model, config.max_positions)
        self.token_type = (
            nn.Embedding(config.type_vocab_size, config.d_model) if config.type_vocab_size else None
        )
        self.norm = (
            nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.embedding_layer_norm else None
        )
        self.drop = nn.Dropout(config.dropout)
        self.scale = math.sqrt(config.d_model) if config.scale_embeddings else 1.0

    def position_table(self, n: int) -> torch.Tensor:
        """(n, d): the sinusoidal rows, or the first n learned position vectors."""
        if isinstance(self.position, nn.Embedding):
            return self.position.weight[:n]
        return self.position(n)

    def parts(self, ids: torch.Tensor, type_ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """ids (b, n) -> {"token": X, "position": PE, "token_type": T?, "sum": before norm}, each (b, n, d)."""
        n = ids.shape[1]
        x = self.token(ids)
        if self.scale != 1.0:
            x = x * self.scale
        pe = self.position_table(n).unsqueeze(0).expand_as(x)
        parts = {"token": x, "position": pe}
        total = x + pe
        if self.token_type is not None:
            tt = self.token_type(type_ids if type_ids is not None else torch.zeros_like(ids))
            parts["token_type"] = tt
            total = total + tt
        parts["sum"] = total
        return parts

    def forward(self, ids: torch.Tensor, type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """ids (b, n) -> (b, n, d)"""
        x = self.parts(ids, type_ids)["sum"]
        if self.norm is not None:
            x = self.norm(x)
        return self.drop(x) if self.training and self.drop.p > 0 else x  # identity in eval: skip the call
