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
        """(b, n, d) -> (b, n, d_ff) -> (b, n, d); F.linear directly: two module calls fewer per layer."""
        h = self.act(F.linear(x, self.linear1.weight, self.linear1.bias))  # (b, n, d_ff)
        return F.linear(h, self.linear2.weight, self.linear2.bias)


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

    def forward(self, x, mask=None, *, record=False, weights_out=None):
        """x (b, n, d) -> (x (b, n, d), {"self": AttentionResult}); weights_out: {"self": (b, h, n, n)} buffers"""
        a = self.self_attn(x, mask=mask, record=record, weights_out=(weights_out or {}).get("self"))
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

    def forward(self, x, memory, self_mask=None, memory_mask=None, *, record=False, weights_out=None):
        """x (b, n, d), memory (b, m, d) -> (x, {"self": ..., "cross": ...})"""
        buf = weights_out or {}
        a = self.self_attn(x, mask=self_mask, record=record, weights_out=buf.get("self"))
        x = self.norm1(x + self._drop(a.output))
        c = self.cross_attn(x, memory, mask=memory_mask, record=record, weights_out=buf.get("cross"))
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
    # without autograd, every layer's weights are slices of one block per kind, (L, b, h, n, m):
    # `self_attention[i]` is `stacked["self"][i]`, so stacking them later needs no copy
    stacked: dict[str, torch.Tensor] = field(default_factory=dict)


class LayerStack(nn.Module):
    """N identical layers; `Encoder` and `Decoder` only choose the layer type."""

    layer_cls: type[nn.Module] = EncoderLayer

    def __init__(self, config: TransformerConfig, n_layers: int):
        super().__init__()
        self.layers = nn.ModuleList(self.layer_cls(config) for _ in range(n_layers))

    def key_lengths(self, x, *args) -> dict[str, int]:
        """Key length m of each attention kind in a layer: {"self": n} (+ {"cross": m} in the decoder)."""
        return {"self": x.shape[1]}

    def forward(self, x, *args, record: bool = False) -> StackOutput:
        out = StackOutput(hidden=x)
        if not torch.is_grad_enabled():  # inference: one (L, b, h, n, m) block per kind, filled in place
            b, n, _ = x.shape
            h = self.layers[0].self_attn.n_heads
            out.stacked = {kind: x.new_empty(len(self.layers), b, h, n, m)
                           for kind, m in self.key_lengths(x, *args).items()}
        if record:
            out.hidden_states.append(x)
        for i, layer in enumerate(self.layers):
            bufs = {kind: t[i] for kind, t in out.stacked.items()} or None
            x, attn = layer(x, *args, record=record, weights_out=bufs)
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

    def key_lengths(self, x, memory, *args) -> dict[str, int]:
        return {"self": x.shape[1], "cross": memory.shape[1]}
