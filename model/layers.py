"""The one Transformer layer and the one stack of them, built as the config says (model/config.py).

Add & Norm, post-LN (Vaswani et al. 2017, 3.1; BERT, BART, Marian):   x = Norm(x + Sublayer(x))
pre-LN (GPT-2, and the LLMs since):                                   x = x + Sublayer(Norm(x)),  Norm after the stack

A layer's sublayers, in order: self-attention (masked in a decoder), cross-attention (a decoder with an encoder: Q
from the decoder, K and V from the encoder output), the feed-forward net. Sublayer i has norm i (norm1, norm2,
norm3): after its residual sum (post-LN) or before the sublayer (pre-LN). An encoder and a decoder-only stack are the
same layer without cross-attention (x-transformers: Encoder and Decoder differ by `causal` and `cross_attend`).

With ``record``, a layer returns every intermediate (the tour and the step-by-step view read these, so they show the
model's own numbers), with one naming for both placements:
    x                the layer input;  memory  the encoder output (cross-attention)
    attn_in / cross_in / ffn_in    what each sublayer read;  attn_out / cross_out / ffn_out  what it returned
    ffn_pre, ffn_act               the FFN's hidden layer before and after the activation (ffn_gate: a gated FFN's)
    norm<i>_in, norm<i>            what norm i normalised (post-LN: the residual sum), and its output
    out              the layer output

Notation: b batch, h heads, n target/query length, m source/key length, d d_model, f d_ff.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .activations import activation
from .attention import HeadAblation, MaskBias, MultiHeadAttention, record_wanted
from .config import TransformerConfig


def make_norm(config: TransformerConfig) -> nn.Module:
    """LayerNorm: gamma * (x - mean) / sqrt(var + eps) + beta;  RMSNorm: gamma * x / sqrt(mean(x^2) + eps)."""
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.d_model, eps=config.layer_norm_eps)
    return nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)


class FeedForward(nn.Module):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2 at every position; gated: (act(x W_gate) * (x W_1 + b_1)) W_2 + b_2."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff, bias=config.bias)
        self.linear2 = nn.Linear(config.d_ff, config.d_model, bias=config.bias)
        self.gate = nn.Linear(config.d_model, config.d_ff, bias=config.bias) if config.gated_ffn else None
        self.act = activation(config.activation)

    def forward(self, x: torch.Tensor, record: dict | None = None) -> torch.Tensor:
        """(b, n, d) -> (b, n, f) -> (b, n, d); `record` (a dict) receives the hidden layer before and after act."""
        pre = self.linear1(x)  # (b, n, f) = x W_1 + b_1
        if self.gate is None:
            act = self.act(pre)
            hidden = act
        else:
            gate = self.gate(x)  # (b, n, f)
            act = self.act(gate)
            hidden = act * pre
            if record is not None:
                record.update(ffn_gate=gate, ffn_hidden=hidden)
        if record is not None:
            record.update(ffn_pre=pre, ffn_act=act)
        return self.linear2(hidden)  # (b, n, d)


class Layer(nn.Module):
    """One encoder or decoder layer (see the module docstring)."""

    def __init__(self, config: TransformerConfig, *, cross: bool = False):
        super().__init__()
        # built in this order (the paper's model draws its random weights in it: paper-base's seeded weights)
        self.self_attn = MultiHeadAttention(config)  # a decoder's is masked: padding + look-ahead
        self.norm1 = make_norm(config)
        if cross:
            self.cross_attn = MultiHeadAttention(config, cross=True)  # Q from the decoder, K and V from the encoder
            self.norm2 = make_norm(config)
        self.ffn = FeedForward(config)
        setattr(self, f"norm{3 if cross else 2}", make_norm(config))
        self.drop = nn.Dropout(config.dropout)
        self.pre_norm = config.norm_placement == "pre"
        self.has_cross = cross

    @property
    def norms(self) -> list[str]:
        """The norms' names, one per sublayer in order."""
        return ["norm1", "norm2", "norm3"] if self.has_cross else ["norm1", "norm2"]

    def _sublayer(self, x, run, norm: nn.Module, rec: dict | None, name: str, norm_name: str) -> torch.Tensor:
        """One sublayer with its residual and norm; `run(input) -> output`."""
        if self.pre_norm:
            inp = norm(x)
            out = run(inp)
            y = x + (self.drop(out) if self.training and self.drop.p > 0 else out)
            if rec is not None:
                rec.update({f"{norm_name}_in": x, norm_name: inp, f"{name}_in": inp, f"{name}_out": out})
            return y
        out = run(x)
        s = x + (self.drop(out) if self.training and self.drop.p > 0 else out)
        y = norm(s)
        if rec is not None:
            rec.update({f"{name}_in": x, f"{name}_out": out, f"{norm_name}_in": s, norm_name: y})
        return y

    def forward(self, x, mask=None, memory=None, memory_mask=None, *, record=False,
                ablation: dict[str, HeadAblation] | None = None, biases: tuple | None = None):
        """x (b, n, d), memory (b, m, d) for cross-attention -> (x (b, n, d), {"self": AttentionResult,
        "cross"?: ..., "layer": the record when recording}). biases: (MaskBias.of(mask), MaskBias.of(memory_mask)),
        made once by the stack (made here when not given)."""
        bias, memory_bias = biases or (None, None)
        rec = ({"x": x, "memory": memory} if memory is not None else {"x": x}) if record else None
        abl = ablation or {}
        attn = {}

        def self_attention(inp):
            attn["self"] = self.self_attn(inp, mask=mask, record=record, ablation=abl.get("self"),
                                          mask_bias=bias)
            return attn["self"].output

        def cross_attention(inp):
            attn["cross"] = self.cross_attn(inp, memory, mask=memory_mask, record=record, ablation=abl.get("cross"),
                                            mask_bias=memory_bias)
            return attn["cross"].output

        norms = self.norms
        x = self._sublayer(x, self_attention, self.norm1, rec, "attn", "norm1")
        if self.has_cross:
            x = self._sublayer(x, cross_attention, self.norm2, rec, "cross", "norm2")
        x = self._sublayer(x, lambda inp: self.ffn(inp, rec), getattr(self, norms[-1]), rec, "ffn", norms[-1])
        if rec is not None:
            rec["out"] = x
            attn["layer"] = rec
        return x, attn


@dataclass
class StackOutput:
    hidden: torch.Tensor  # (b, n, d) output of the last layer run
    final: torch.Tensor | None = None  # (b, n, d) what the output reads: the final norm of `hidden` (pre-LN), or it
    mask: torch.Tensor | None = None  # the self-attention mask the stack applied, True = may attend
    self_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, n)
    cross_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, m)
    hidden_states: list[torch.Tensor] = field(default_factory=list)  # when recording: L+1 x (b, n, d)
    # when recording: layer -> {"self": AttentionResult (with .record), "cross"?: ..., "layer": sublayer dict}
    records: dict[int, dict] = field(default_factory=dict)


class Stack(nn.Module):
    """N identical layers (the encoder, or the decoder with or without cross-attention); pre-LN stacks end with a
    final norm."""

    def __init__(self, config: TransformerConfig, n_layers: int, *, cross: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(Layer(config, cross=cross) for _ in range(n_layers))
        self.final_norm = make_norm(config) if config.norm_placement == "pre" else None

    def forward(self, x, mask=None, memory=None, memory_mask=None, *, record: bool | set[int] = False,
                hidden: bool = False, ablations: dict[int, dict[str, HeadAblation]] | None = None,
                upto: int | None = None) -> StackOutput:
        """record: every stage of True (every layer), a set of layer indices, or False. hidden: keep each layer's
        input and the output (L+1 hidden states); they are kept too whenever anything is recorded.
        ablations: {layer: {"self" | "cross": HeadAblation}}. upto: stop after that layer (a layer's record needs
        only the layers below it; the output is then that layer's, and `final` is None)."""
        out = StackOutput(hidden=x, mask=mask)
        keep_hidden = hidden or bool(record)
        if keep_hidden:
            out.hidden_states.append(x)
        biases = (MaskBias.of(mask, x.dtype), MaskBias.of(memory_mask, x.dtype))  # once for every layer
        for i, layer in enumerate(self.layers if upto is None else self.layers[: upto + 1]):
            want = record_wanted(record, i)
            x, attn = layer(x, mask, memory, memory_mask, record=want, ablation=(ablations or {}).get(i),
                            biases=biases)
            out.self_attention.append(attn["self"].weights)
            if "cross" in attn:
                out.cross_attention.append(attn["cross"].weights)
            if keep_hidden:
                out.hidden_states.append(x)
            if want:
                out.records[i] = attn
        out.hidden = x
        if upto is None:
            out.final = x if self.final_norm is None else self.final_norm(x)
        return out


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
