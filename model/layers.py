"""The one Transformer layer and the one stack of them, built as the config says (model/config.py).

Add & Norm, post-LN (Vaswani et al. 2017, 3.1; BERT, BART, Marian):   x = Norm(x + Sublayer(x))
pre-LN (GPT-2, and the LLMs since):                                   x = x + Sublayer(Norm(x)),  Norm after the stack
pre-LN with post-norms (Gemma 2 / 3, config.post_norms):             x = x + Norm'(Sublayer(Norm(x)))

A layer's sublayers, in order: self-attention (masked in a decoder; or an SSRU, a simple recurrent unit, where the
config says so: Marian's fast decoders), cross-attention (a decoder with an encoder: Q
from the decoder, K and V from the encoder output), the feed-forward net. Sublayer i has norm i (norm1, norm2,
norm3): after its residual sum (post-LN) or before the sublayer (pre-LN). An encoder and a decoder-only stack are the
same layer without cross-attention (x-transformers: Encoder and Decoder differ by `causal` and `cross_attend`).

With ``record``, a layer returns every intermediate (the tour and the step-by-step view read these, so they show the
model's own numbers), with one naming for both placements:
    x                the layer input;  memory  the encoder output (cross-attention)
    attn_in / cross_in / ffn_in    what each sublayer read;  attn_out / cross_out / ffn_out  what it returned
    ffn_pre, ffn_act               the FFN's hidden layer before and after the activation (ffn_gate: a gated FFN's)
    norm<i>_in, norm<i>            what norm i normalised (post-LN: the residual sum), and its output
    post_norm<i>_in, post_norm<i>  (post-norms) sublayer i's output and its norm, what the residual adds
    out              the layer output

Notation: b batch, h heads, n target/query length, m source/key length, d d_model, f d_ff.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .activations import activation
from .attention import MaskBias, MultiHeadAttention, record_wanted
from .config import TransformerConfig
from .masks import sliding_window_mask
from .norms import make_norm

__all__ = ["FeedForward", "Layer", "Stack", "StackOutput", "make_norm"]


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


@dataclass
class SSRUResult:
    """What an SSRU sublayer returns, in the place of an AttentionResult: it has no attention weights."""

    output: torch.Tensor  # (b, n, d) relu(c)
    gate: torch.Tensor  # (b, n, d) the forget gate f
    weights: None = None
    record: dict | None = None  # on request: z (b, n, d) and c (b, n, d), the memory


class SSRU(nn.Module):
    """The simple recurrent unit Marian's fast decoders use in place of masked self-attention (Kim et al. 2019, "From
    Research to Production and Back: Ludicrously Fast Neural Machine Translation"):

        z_t = x_t W              (no bias)
        f_t = sigmoid(x_t W_f + b_f)      the forget gate, per channel
        c_t = f_t * c_{t-1} + (1 - f_t) * z_t,   c_{-1} = 0
        out_t = relu(c_t)

    Position t reads only positions <= t (causal by construction, no mask), and nothing of the others but the running
    memory c: there are no attention weights to draw. The sublayer's residual and norm are the layer's."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.linear = nn.Linear(config.d_model, config.d_model, bias=False)  # W
        self.forget = nn.Linear(config.d_model, config.d_model)  # W_f, b_f

    def forward(self, x: torch.Tensor, mask=None, *, record: bool = False, ablation=None, mask_bias=None,
                cache: dict | None = None) -> SSRUResult:
        """x (b, n, d) -> SSRUResult with output (b, n, d); `mask` and `ablation` do not apply (no heads, causal).
        cache (incremental decoding): x holds only the new positions; the memory goes on from the cached c."""
        z = self.linear(x)  # (b, n, d)
        f = torch.sigmoid(self.forget(x))  # (b, n, d)
        keep = (1.0 - f) * z  # (b, n, d): what each position writes
        c = torch.empty_like(z)
        prev = cache["c"] if cache is not None and "c" in cache else torch.zeros_like(z[:, 0])  # (b, d)
        for t in range(x.shape[1]):  # the recurrence, one position at a time
            prev = f[:, t] * prev + keep[:, t]
            c[:, t] = prev
        if cache is not None:
            cache["c"] = prev
        return SSRUResult(torch.relu(c), f, None, {"z": z, "f": f, "c": c} if record else None)


class Layer(nn.Module):
    """One encoder or decoder layer (see the module docstring)."""

    def __init__(self, config: TransformerConfig, *, cross: bool = False, mixer: str = "attention",
                 local: bool = False):
        """local: the layer attends through the sliding window (its mask is the stack's; its RoPE base its own)."""
        super().__init__()
        # built in this order (the paper's model draws its random weights in it: paper-base's seeded weights)
        # a decoder's self-attention is masked: padding + look-ahead; an SSRU stands in its place where asked
        self.self_attn = SSRU(config) if mixer == "ssru" else MultiHeadAttention(config, local=local)
        self.norm1 = make_norm(config)
        if cross:
            self.cross_attn = MultiHeadAttention(config, cross=True)  # Q from the decoder, K and V from the encoder
            self.norm2 = make_norm(config)
        self.ffn = FeedForward(config)
        if cross:  # the FFN's norm: the third sublayer's on a decoder layer with cross-attention, else the second's
            self.norm3 = make_norm(config)
        else:
            self.norm2 = make_norm(config)
        self.drop = nn.Dropout(config.dropout)
        self.pre_norm = config.norm_placement == "pre"
        self.has_cross = cross
        self.local = local
        if config.post_norms:  # Gemma: each sublayer's output normalised before the residual adds it
            for name in self.norms:
                self.add_module(f"post_{name}", make_norm(config))

    @property
    def norms(self) -> list[str]:
        """The norms' names, one per sublayer in order."""
        return ["norm1", "norm2", "norm3"] if self.has_cross else ["norm1", "norm2"]

    @property
    def post_norms(self) -> list[str]:
        """The post-norms' names (config.post_norms), one per sublayer in order; [] without them."""
        return [f"post_{n}" for n in self.norms if hasattr(self, f"post_{n}")]

    def _sublayer(self, x, run, norm: nn.Module, rec: dict | None, name: str, norm_name: str) -> torch.Tensor:
        """One sublayer with its residual and norm; `run(input) -> output`."""
        if self.pre_norm:
            inp = norm(x)
            out = run(inp)
            post = getattr(self, f"post_{norm_name}", None)
            added = out if post is None else post(out)  # post-norms: Norm'(Sublayer(Norm(x)))
            y = x + (self.drop(added) if self.training and self.drop.p > 0 else added)
            if rec is not None:
                rec.update({f"{norm_name}_in": x, norm_name: inp, f"{name}_in": inp, f"{name}_out": out})
                if post is not None:
                    rec.update({f"post_{norm_name}_in": out, f"post_{norm_name}": added})
            return y
        out = run(x)
        s = x + (self.drop(out) if self.training and self.drop.p > 0 else out)
        y = norm(s)
        if rec is not None:
            rec.update({f"{name}_in": x, f"{name}_out": out, f"{norm_name}_in": s, norm_name: y})
        return y

    def forward(self, x, mask=None, memory=None, memory_mask=None, *, record=False,
                ablation: dict | None = None, biases: tuple | None = None,
                cache: dict | None = None):
        """x (b, n, d), memory (b, m, d) for cross-attention -> (x (b, n, d), {"self": AttentionResult,
        "cross"?: ..., "ffn": the Feed Forward's output, "layer": the record when recording}). biases: (MaskBias.of(mask), MaskBias.of(memory_mask)),
        made once by the stack (made here when not given). cache (incremental decoding): {"self": {}, "cross": {}}
        filled in place, x holds only the new positions."""
        bias, memory_bias = biases or (None, None)
        rec = ({"x": x, "memory": memory} if memory is not None else {"x": x}) if record else None
        abl = ablation or {}
        attn = {}
        kw = {} if cache is None else {"cache": cache.setdefault("self", {})}

        def self_attention(inp):  # (or the SSRU)
            attn["self"] = self.self_attn(inp, mask=mask, record=record, ablation=abl.get("self"), mask_bias=bias,
                                          **kw)
            return attn["self"].output

        def cross_attention(inp):
            attn["cross"] = self.cross_attn(inp, memory, mask=memory_mask, record=record, ablation=abl.get("cross"),
                                            mask_bias=memory_bias,
                                            **({} if cache is None else {"cache": cache.setdefault("cross", {})}))
            return attn["cross"].output

        norms = self.norms
        x = self._sublayer(x, self_attention, self.norm1, rec, "attn", "norm1")
        if self.has_cross:
            x = self._sublayer(x, cross_attention, self.norm2, rec, "cross", "norm2")

        def feed_forward(inp):
            attn["ffn"] = self.ffn(inp, rec)  # (b, n, d): kept for model/run.py's records
            return attn["ffn"]

        x = self._sublayer(x, feed_forward, getattr(self, norms[-1]), rec, "ffn", norms[-1])
        if rec is not None:
            rec["out"] = x
            attn["layer"] = rec
        return x, attn


@dataclass
class StackOutput:
    hidden: torch.Tensor  # (b, n, d) output of the last layer run
    final: torch.Tensor | None = None  # (b, n, d) what the output reads: the final norm of `hidden` (pre-LN), or it
    mask: torch.Tensor | None = None  # the self-attention mask the stack applied, True = may attend
    local_mask: torch.Tensor | None = None  # the local layers' (sliding window AND `mask`); None: as `mask`
    self_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, n); [] for an SSRU stack
    cross_attention: list[torch.Tensor] = field(default_factory=list)  # per layer (b, h, n, m)
    forget_gates: list[torch.Tensor] = field(default_factory=list)  # an SSRU stack's, per layer (b, n, d)
    hidden_states: list[torch.Tensor] = field(default_factory=list)  # when recording: L+1 x (b, n, d)
    # when recording: layer -> {"self": AttentionResult (with .record), "cross"?: ..., "layer": sublayer dict}
    records: dict[int, dict] = field(default_factory=dict)
    kept: dict = field(default_factory=dict)  # with a plan: layer -> model.run.LayerRecord (what its Keep asks for)


class Stack(nn.Module):
    """N identical layers (the encoder, or the decoder with or without cross-attention); pre-LN stacks end with a
    final norm."""

    def __init__(self, config: TransformerConfig, n_layers: int, *, cross: bool = False, mixer: str = "attention"):
        super().__init__()
        self.layers = nn.ModuleList(Layer(config, cross=cross, mixer=mixer, local=config.is_local(i))
                                    for i in range(n_layers))
        self.final_norm = make_norm(config) if config.norm_placement == "pre" else None
        self.window = config.sliding_window if config.local_layers else None  # the local layers' sliding window

    def local_mask(self, mask: torch.Tensor | None, n: int, device) -> torch.Tensor | None:
        """The local layers' self-attention mask: the sliding window's band AND `mask` ((.., n, m); m - n earlier
        keys are cached). None: the stack has no local layer, or the band blocks nothing here (m <= window)."""
        m = n if mask is None else mask.shape[-1]
        if self.window is None or m <= self.window:
            return None
        band = sliding_window_mask(n, self.window, m, device)  # (n, m)
        return band if mask is None else mask & band

    def forward(self, x, mask=None, memory=None, memory_mask=None, *, record: bool | set[int] = False,
                hidden: bool = False, upto: int | None = None, cache: list[dict] | None = None, plan=None) -> StackOutput:
        """record: every stage of True (every layer), a set of layer indices, or False. hidden: keep each layer's
        input and the output (L+1 hidden states); they are kept too whenever anything is recorded.
        upto: stop after that layer (a layer's record needs
        only the layers below it; the output is then that layer's, and `final` is None). cache: one dict per layer
        (incremental decoding: x holds only the new positions; see Transformer.greedy_decode).
        plan: a model.run.StackPlan, one run request's edits and what to keep (model/run.py): its Residual edits
        set the stream entering a layer, its head edits change the per-head outputs Z_i, a Resume begins at its layer with `x` as
        that layer's input (the layers below are not run)."""
        start = 0 if plan is None else plan.start
        local = self.local_mask(mask, x.shape[1], x.device)
        out = StackOutput(hidden=x, mask=mask, local_mask=local)
        keep_hidden = hidden or bool(record)
        if keep_hidden:
            out.hidden_states.append(x)
        memory_bias = MaskBias.of(memory_mask, x.dtype)
        biases = (MaskBias.of(mask, x.dtype), memory_bias)  # once for every layer
        local_biases = None if local is None else (MaskBias.of(local, x.dtype), memory_bias)  # and once for local ones
        for i, layer in enumerate(self.layers[start:] if upto is None else self.layers[start: upto + 1], start):
            want = record_wanted(record, i)
            lm, lb = (local, local_biases) if layer.local and local is not None else (mask, biases)
            ablation = None
            if plan is not None:
                x = plan.before(i, x)
                ablation = plan.ablation(i)
            x_in = x
            x, attn = layer(x, lm, memory, memory_mask, record=want, ablation=ablation,
                            biases=lb, **({} if cache is None else {"cache": cache[i]}))
            if attn["self"].weights is not None:
                out.self_attention.append(attn["self"].weights)
            else:  # an SSRU: no weights, its forget gate instead
                out.forget_gates.append(attn["self"].gate)
            if "cross" in attn:
                out.cross_attention.append(attn["cross"].weights)
            if keep_hidden:
                out.hidden_states.append(x)
            if want:
                out.records[i] = attn
            if plan is not None and (kept := plan.layer_record(x_in, attn)) is not None:
                out.kept[i] = kept
        if plan is not None and upto is None:
            x = plan.before(len(self.layers), x)  # a Residual edit of the stack's output
        out.hidden = x
        if upto is None:
            out.final = x if self.final_norm is None else self.final_norm(x)
        return out
