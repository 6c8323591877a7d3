"""Encoder and decoder layers with post-LN Add & Norm (Vaswani et al. 2017, 3.1):

    x = LayerNorm(x + Dropout(Sublayer(x)))

The same layer serves the paper's model (ReLU FFN) and BERT/MiniLM (exact
GELU, eps 1e-12), which is also post-LN. One stack class; the decoder layer adds
masked self-attention and encoder-decoder attention.

Notation: b batch, h heads, n target/query length, m source/key length, d d_model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .config import TransformerConfig


class FeedForward(nn.Module):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2, applied at every position."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff)
        self.linear2 = nn.Linear(config.d_ff, config.d_model)
        self.act = F.relu if config.activation == "relu" else F.gelu  # F.gelu default is exact erf

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.act(self.linear1(x)))


class _Residual(nn.Module):
    """Shared by both layer types: Dropout on a sublayer output, skipped outright in
    eval mode (where it is the identity) to save a module call per sublayer."""

    drop: nn.Dropout

    def _drop(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(x) if self.training and self.drop.p > 0 else x


class EncoderLayer(_Residual):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.norm1 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config)
        self.norm2 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x, mask=None, *, record=False):
        """x (b, n, d) -> (x (b, n, d), {"self": AttentionResult})"""
        a = self.self_attn(x, mask=mask, record=record)
        x = self.norm1(x + self._drop(a.output))  # Add & Norm
        x = self.norm2(x + self._drop(self.ffn(x)))  # Add & Norm
        return x, {"self": a}


class DecoderLayer(_Residual):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)  # masked: padding + look-ahead
        self.norm1 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.cross_attn = MultiHeadAttention(config)  # Q from decoder, K and V from encoder
        self.norm2 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config)
        self.norm3 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None, *, record=False):
        """x (b, n, d), memory (b, m, d) -> (x, {"self": ..., "cross": ...})"""
        a = self.self_attn(x, mask=self_mask, record=record)
        x = self.norm1(x + self._drop(a.output))
        c = self.cross_attn(x, memory, mask=memory_mask, record=record)
        x = self.norm2(x + self._drop(c.output))
        x = self.norm3(x + self._drop(self.ffn(x)))
        return x, {"self": a, "cross": c}


@dataclass
class StackOutput:
    hidden: torch.Tensor  # (b, n, d) output of the last layer
    self_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, n)
    cross_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, m)
    hidden_states: list[torch.Tensor] = field(default_factory=list)  # on request: L+1 x (b, n, d)
    records: list[dict] = field(default_factory=list)  # on request: per layer {"self": {...}, "cross": {...}}


class LayerStack(nn.Module):
    """N identical layers; `Encoder` and `Decoder` only choose the layer type."""

    layer_cls: type[nn.Module] = EncoderLayer

    def __init__(self, config: TransformerConfig, n_layers: int):
        super().__init__()
        self.layers = nn.ModuleList(self.layer_cls(config) for _ in range(n_layers))

    def forward(self, x, *args, record: bool = False) -> StackOutput:
        out = StackOutput(hidden=x)
        if record:
            out.hidden_states.append(x)
        for layer in self.layers:
            x, attn = layer(x, *args, record=record)
            out.self_attention.append(attn["self"].weights)
            if "cross" in attn:
                out.cross_attention.append(attn["cross"].weights)
            if record:
                out.hidden_states.append(x)
                out.records.append({kind: r.record for kind, r in attn.items()})
        out.hidden = x
        return out


class Encoder(LayerStack):
    layer_cls = EncoderLayer


class Decoder(LayerStack):
    layer_cls = DecoderLayer
