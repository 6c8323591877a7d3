"""Encoder and decoder layers with post-LN Add & Norm (Vaswani et al. 2017, 3.1):

    x = LayerNorm(x + Dropout(Sublayer(x)))

The same layer serves the paper's model (ReLU FFN) and BERT/MiniLM (exact
GELU, eps 1e-12), which is also post-LN. One stack class; the decoder layer adds
masked self-attention and encoder-decoder attention.

With ``record``, a layer returns every intermediate of its sublayers (the tour and
the step-by-step view read these, so they show the model's own numbers).

Notation: b batch, h heads, n target/query length, m source/key length, d d_model, f d_ff.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .attention import HeadAblation, MultiHeadAttention, record_wanted
from .config import TransformerConfig


class FeedForward(nn.Module):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2, applied at every position."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff)
        self.linear2 = nn.Linear(config.d_ff, config.d_model)
        self.act = F.relu if config.activation == "relu" else F.gelu  # F.gelu default is exact erf

    def forward(self, x: torch.Tensor, record: dict | None = None) -> torch.Tensor:
        """(b, n, d) -> (b, n, f) -> (b, n, d); `record` (a dict) receives the hidden layer before and after act."""
        pre = self.linear1(x)  # (b, n, f) = x W_1 + b_1
        act = self.act(pre)
        if record is not None:
            record.update(ffn_pre=pre, ffn_act=act)
        return self.linear2(act)  # (b, n, d)


class _Sublayers(nn.Module):
    """Add & Norm around each sublayer; dropout on the sublayer output (identity in eval)."""

    drop: nn.Dropout

    def add_norm(self, x, out, norm: nn.LayerNorm, rec: dict | None, name: str) -> torch.Tensor:
        """LayerNorm(x + Dropout(out)); `rec` receives f"{name}_in" (the sublayer's output), f"{name}_sum" and
        f"{name}" (the normalised result)."""
        s = x + (self.drop(out) if self.training and self.drop.p > 0 else out)
        y = norm(s)
        if rec is not None:
            rec.update({f"{name}_in": out, f"{name}_sum": s, name: y})
        return y


class EncoderLayer(_Sublayers):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.norm1 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config)
        self.norm2 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x, mask=None, *, record=False, ablation: dict[str, HeadAblation] | None = None):
        """x (b, n, d) -> (x (b, n, d), {"self": AttentionResult, "layer": sublayer record when recording})"""
        rec = {"x": x} if record else None
        a = self.self_attn(x, mask=mask, record=record, ablation=(ablation or {}).get("self"))
        x = self.add_norm(x, a.output, self.norm1, rec, "norm1")  # Add & Norm
        x = self.add_norm(x, self.ffn(x, rec), self.norm2, rec, "norm2")  # Add & Norm
        return x, {"self": a, **({"layer": rec} if record else {})}


class DecoderLayer(_Sublayers):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)  # masked: padding + look-ahead
        self.norm1 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.cross_attn = MultiHeadAttention(config)  # Q from decoder, K and V from encoder
        self.norm2 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config)
        self.norm3 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None, *, record=False,
                ablation: dict[str, HeadAblation] | None = None):
        """x (b, n, d), memory (b, m, d) -> (x, {"self": ..., "cross": ..., "layer": record when recording})"""
        rec = {"x": x, "memory": memory} if record else None
        abl = ablation or {}
        a = self.self_attn(x, mask=self_mask, record=record, ablation=abl.get("self"))
        x = self.add_norm(x, a.output, self.norm1, rec, "norm1")
        c = self.cross_attn(x, memory, mask=memory_mask, record=record, ablation=abl.get("cross"))
        x = self.add_norm(x, c.output, self.norm2, rec, "norm2")
        x = self.add_norm(x, self.ffn(x, rec), self.norm3, rec, "norm3")
        return x, {"self": a, "cross": c, **({"layer": rec} if record else {})}


@dataclass
class StackOutput:
    hidden: torch.Tensor  # (b, n, d) output of the last layer
    self_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, n)
    cross_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, m)
    hidden_states: list[torch.Tensor] = field(default_factory=list)  # when recording: L+1 x (b, n, d)
    # when recording: layer -> {"self": AttentionResult (with .record), "cross"?: ..., "layer": sublayer dict}
    records: dict[int, dict] = field(default_factory=dict)


class LayerStack(nn.Module):
    """N identical layers; `Encoder` and `Decoder` only choose the layer type."""

    layer_cls: type[nn.Module] = EncoderLayer

    def __init__(self, config: TransformerConfig, n_layers: int):
        super().__init__()
        self.layers = nn.ModuleList(self.layer_cls(config) for _ in range(n_layers))

    def forward(self, x, *args, record: bool | set[int] = False, hidden: bool = False,
                ablations: dict[int, dict[str, HeadAblation]] | None = None, upto: int | None = None) -> StackOutput:
        """record: every stage of True (every layer), a set of layer indices, or False. hidden: keep each layer's
        input and the output (L+1 hidden states); they are kept too whenever anything is recorded.
        ablations: {layer: {"self" | "cross": HeadAblation}}. upto: stop after that layer (a layer's record needs
        only the layers below it; the output is then that layer's, not the stack's)."""
        out = StackOutput(hidden=x)
        keep_hidden = hidden or bool(record)
        if keep_hidden:
            out.hidden_states.append(x)
        for i, layer in enumerate(self.layers if upto is None else self.layers[: upto + 1]):
            want = record_wanted(record, i)
            x, attn = layer(x, *args, record=want, ablation=(ablations or {}).get(i))
            out.self_attention.append(attn["self"].weights)
            if "cross" in attn:
                out.cross_attention.append(attn["cross"].weights)
            if keep_hidden:
                out.hidden_states.append(x)
            if want:
                out.records[i] = attn
        out.hidden = x
        return out


class Encoder(LayerStack):
    layer_cls = EncoderLayer


class Decoder(LayerStack):
    layer_cls = DecoderLayer


def stack_ablations(ablations, kinds: dict[str, str], n_layers: int) -> dict[int, dict[str, HeadAblation]]:
    """{(block, layer): HeadAblation} -> {layer: {kind: HeadAblation}} for one stack, where `kinds` maps the stack's
    attention kinds to block names (encoder: {"self": "encoder"}; decoder: {"self": "decoder_self",
    "cross": "cross"}). Raises ValueError on a layer out of range."""
    out: dict[int, dict[str, HeadAblation]] = {}
    for (block, layer), abl in (ablations or {}).items():
        for kind, name in kinds.items():
            if block == name:
                if not 0 <= layer < n_layers:
                    raise ValueError(f"layer {layer} out of range 0..{n_layers - 1} for {block}")
                out.setdefault(layer, {})[kind] = abl
    return out


