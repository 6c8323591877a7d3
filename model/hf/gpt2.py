"""GPT-2 (Radford et al. 2019) on the project's attention: a decoder-only, pre-LN stack.

    x = wte(ids) + wpe(positions)
    per block:  x = x + Attn(LN_1(x)) (causal);  x = x + MLP(LN_2(x)),  MLP = c_proj(gelu_new(c_fc(.)))
    logits = LN_f(x) wte^T   (the output matrix is the token embedding, tied)

HF stores c_attn / c_proj / c_fc as Conv1D weights of shape (in, out); they are transposed into
nn.Linear's (out, in). Notation: b batch, h heads, n length, d n_embd, f n_inner, V vocab, L layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..attention import HeadAblation, MultiHeadAttention
from ..config import TransformerConfig
from ..embeddings import Embedding
from ..layers import FeedForward, LayerStack, StackOutput, stack_ablations
from ..masks import causal_mask
from .checkpoint import Checkpoint
from .configs import Fields


class GPT2Block(nn.Module):
    """Pre-LN block; with `record`, every intermediate of the two sublayers."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.attn = MultiHeadAttention(config)
        self.ln_2 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.mlp = FeedForward(config)  # linear1 = c_fc, linear2 = c_proj

    @property
    def self_attn(self) -> MultiHeadAttention:
        """The masked self-attention, under the name every other layer uses."""
        return self.attn

    @property
    def ffn(self) -> FeedForward:
        """The MLP, under the name every other layer uses."""
        return self.mlp

    def forward(self, x, mask=None, *, record=False, ablation: dict[str, HeadAblation] | None = None):
        """x (b, n, d) -> (x (b, n, d), {"self": AttentionResult, "layer": sublayer record when recording})"""
        rec = {"x": x} if record else None
        ln1 = self.ln_1(x)
        a = self.attn(ln1, mask=mask, record=record, ablation=(ablation or {}).get("self"))
        s1 = x + a.output  # residual after attention
        ln2 = self.ln_2(s1)
        f = self.mlp(ln2, rec)  # rec gets ffn_pre, ffn_act (b, n, f)
        out = s1 + f  # residual after the MLP: the block's output
        if rec is not None:
            # ln_2_sum: what LN_2 normalises (the residual sum after attention), named as post-LN layers name theirs
            rec.update(ln_1=ln1, attn_out=a.output, ln_2_sum=s1, ln_2=ln2, ffn_out=f, out=out)
            return out, {"self": a, "layer": rec}
        return out, {"self": a}


class GPT2Stack(LayerStack):
    layer_cls = GPT2Block


@dataclass
class DecoderOnlyOutput:
    logits: torch.Tensor  # (b, n, V), or (b, 1, V) with last_only
    stack: StackOutput  # per-layer attention (b, h, n, n); hidden states L+1 x (b, n, d): block inputs + last output
    final: torch.Tensor  # (b, n, d) LN_f of the last block's output (what the logits read)
    mask: torch.Tensor  # (1, 1, n, n) causal, True = may attend


class GPT2(nn.Module):
    def __init__(self, config: TransformerConfig, tie: bool = True):
        super().__init__()
        self.config = config
        self.embed = Embedding(config)  # wte + wpe (learned, unscaled, no LayerNorm)
        self.blocks = GPT2Stack(config, config.n_encoder_layers)
        self.ln_f = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if tie:
            self.lm_head.weight = self.embed.token.weight

    def forward(self, ids: torch.Tensor, *, record: bool | set[int] = False, hidden: bool = False,
                ablations: dict | None = None, last_only: bool = False, upto: int | None = None) -> DecoderOnlyOutput:
        """ids (b, n) -> logits (b, n, V) and every attention. ablations: {("decoder_self", layer): HeadAblation}.
        last_only: logits of the last position only, (b, 1, V): the output matrix is a third of GPT-2's
        work at 128 tokens, and the next token needs one row. upto: stop after that layer, for its record (no
        logits: logits and final are None)."""
        mask = causal_mask(ids.shape[1], ids.device)[None, None]  # (1, 1, n, n)
        abl = stack_ablations(ablations, {"self": "decoder_self"}, len(self.blocks.layers))
        out = self.blocks(self.embed(ids), mask, record=record, hidden=hidden, ablations=abl, upto=upto)
        if upto is not None:
            return DecoderOnlyOutput(None, out, None, mask)
        final = self.ln_f(out.hidden)
        return DecoderOnlyOutput(self.lm_head(final[:, -1:] if last_only else final), out, final, mask)


def gpt2_config(f: Fields) -> tuple[TransformerConfig, str, bool]:
    """(config, activation, tied output) from a gpt2 config.json."""
    f.require("scale_attn_by_inverse_layer_idx", False, False)
    f.require("reorder_and_upcast_attn", False, False)
    f.require("add_cross_attention", False, False)
    f.require("scale_attn_weights", True, True)
    d, h = f.int("n_embd", 768), f.int("n_head", 12)
    f.heads(d, h, "n_head")
    inner = f.config.get("n_inner")
    eos = f.optional_id("eos_token_id")
    config = TransformerConfig(
        d_model=d, n_heads=h, n_encoder_layers=f.int("n_layer", 12), n_decoder_layers=0,
        d_ff=f.int("n_inner") if inner is not None else 4 * d, dropout=0.0, vocab_size=f.int("vocab_size", 50257),
        max_positions=f.int("n_positions", 1024), activation="gelu", positional="learned",
        layer_norm_eps=f.float("layer_norm_epsilon", 1e-5), type_vocab_size=0, embedding_layer_norm=False,
        scale_embeddings=False, tie_embeddings=f.flag("tie_word_embeddings", True),
        pad_id=eos if eos is not None else 0)  # GPT-2 has no pad token; padding uses <|endoftext|>
    return config, f.activation("activation_function", "gelu_new"), config.tie_embeddings


def gpt2_state(ck: Checkpoint, config: TransformerConfig, tie: bool) -> dict[str, torch.Tensor]:
    d, ff, V, P = config.d_model, config.d_ff, config.vocab_size, config.max_positions
    wte = ck.get("wte.weight", (V, d))
    s = {"embed.token.weight": wte, "embed.position.weight": ck.get("wpe.weight", (P, d)),
         "ln_f.weight": ck.get("ln_f.weight", (d,)), "ln_f.bias": ck.get("ln_f.bias", (d,)),
         "lm_head.weight": wte if tie else ck.get("lm_head.weight", (V, d))}
    for i in range(config.n_encoder_layers):
        src, dst = f"h.{i}.", f"blocks.layers.{i}."
        conv = lambda n, fan_in, fan_out, src=src: ck.get(src + n + ".weight", (fan_in, fan_out)).t()  # noqa: E731
        bias = lambda n, size, src=src: ck.get(src + n + ".bias", (size,))  # noqa: E731
        s.update({
            dst + "attn.in_proj.weight": conv("attn.c_attn", d, 3 * d), dst + "attn.in_proj.bias": bias("attn.c_attn", 3 * d),
            dst + "attn.out_proj.weight": conv("attn.c_proj", d, d), dst + "attn.out_proj.bias": bias("attn.c_proj", d),
            dst + "mlp.linear1.weight": conv("mlp.c_fc", d, ff), dst + "mlp.linear1.bias": bias("mlp.c_fc", ff),
            dst + "mlp.linear2.weight": conv("mlp.c_proj", ff, d), dst + "mlp.linear2.bias": bias("mlp.c_proj", d),
        })
        for ln in ("ln_1", "ln_2"):
            s[dst + f"{ln}.weight"], s[dst + f"{ln}.bias"] = ck.get(src + ln + ".weight", (d,)), bias(ln, d)
    return s
