"""The Hugging Face model families as records: how to read config.json into a TransformerConfig, and the
weight-name table that maps the checkpoint's tensors onto the one Transformer's modules (model/transformer.py).
Adding a family is one record and its tests (TransformerLens' weight_conversions/<family>.py, as tables).

- bert, roberta, xlm-roberta, distilbert: post-LN encoders with word + position (+ token-type) embeddings and an
  embedding LayerNorm. RoBERTa's positions start after the pad row and skip pad tokens. DistilBERT's sinusoidal
  table (sinusoidal_pos_embds) is the paper's and is stored in the checkpoint anyway.
- gpt2: a pre-LN decoder-only stack, Conv1D weights stored (in, out), the output tied to the token table (or not).
- llama, mistral, qwen2: pre-RMSNorm decoder-only stacks with rotary positions, grouped-query attention and a SwiGLU
  FFN, no biases (Qwen2: on W_Q, W_K and W_V). Options the modules do not implement (RoPE scaling, sliding windows
  that would apply, mixture of experts, a head width of its own) are refused by name.
- qwen3: the same with RMSNorm on each head's q and k, its own head width and no Q/K/V biases.
- gemma3_text, gemma3 (its text_config): the same options, plus Gemma's (1 + γ) norms before and after each sublayer,
  a GeLU-tanh gated FFN, embeddings x sqrt(d_model), query_pre_attn_scalar, and sliding-window layers with their own
  RoPE base between the global ones (linear RoPE scaling on the global ones). Logit soft-capping is refused.
- bart, marian: post-LN encoder-decoders. BART: learned positions after two unused rows, LayerNorm on the
  embeddings. Marian: sinusoidal positions with the sines first ("halves"), decoding starts from <pad>. Both:
  logits = h E^T + final_logits_bias.

Only what the modules implement is accepted; any other option is refused by name (Fields.require).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..config import TransformerConfig
from ..weights import Cat, First, Row, T, zeros
from .configs import Fields


@dataclass(frozen=True)
class Family:
    model_type: str
    kind: str  # "encoder" | "decoder" | "encoder-decoder"
    config: Callable[[Fields], tuple[TransformerConfig, dict]]  # config.json -> (config, special ids by role)
    table: Callable[[TransformerConfig], dict]  # module key -> checkpoint source (model/weights.py)
    anchor: str  # a tensor every checkpoint of the family holds (finds the prefix: "bert.", "model.", ...)
    unread: tuple[str, ...] = ()  # stored tensors the modules do not read (regular expressions): any other is an error

    def ignored(self, ck) -> list[str]:
        """The checkpoint's tensors that the family declares unread (a strict load refuses any other left over)."""
        return [n for n in ck.tensors if any(re.fullmatch(p, n) for p in self.unread)]


def qkv(c: TransformerConfig, *names: str) -> Cat:
    """W_Q, W_K, W_V (or their biases), stored apart, into one in_proj."""
    d_q, d_kv = c.n_heads * c.d_k, c.kv_heads * c.d_k
    return Cat(names, (d_q, d_kv, d_kv))


# ---- bert, roberta, xlm-roberta, distilbert ------------------------------------------------------------------------
def bert_config(f: Fields) -> tuple[TransformerConfig, dict]:
    f.require("position_embedding_type", "absolute", "absolute")
    f.require("is_decoder", False, False)
    f.require("add_cross_attention", False, False)
    d, h = f.int("hidden_size"), f.int("num_attention_heads")
    f.heads(d, h, "num_attention_heads")
    rows = f.int("max_position_embeddings", 512)
    roberta = f.model_type != "bert"
    pad = f.int("pad_token_id", 1 if roberta else 0, minimum=0)
    offset = pad + 1 if roberta else 0  # RoBERTa's first pad + 1 rows are never a token's
    if rows - offset < 2:
        f.bad("max_position_embeddings", f"({rows}) leaves no positions after padding_idx {pad}")
    return TransformerConfig(
        d_model=d, n_heads=h, n_encoder_layers=f.int("num_hidden_layers"), n_decoder_layers=0,
        d_ff=f.int("intermediate_size"), dropout=0.0, vocab_size=f.int("vocab_size"), max_positions=rows - offset,
        activation=f.activation("hidden_act", "gelu"), positional="learned", position_offset=offset,
        positions_skip_pad=roberta, layer_norm_eps=f.float("layer_norm_eps", 1e-12),
        type_vocab_size=f.int("type_vocab_size", 2, minimum=0), embedding_layer_norm=True, scale_embeddings=False,
        tie_embeddings=False, mask_pad="none", pad_id=pad), {}


def distilbert_config(f: Fields) -> tuple[TransformerConfig, dict]:
    d, h = f.int("dim", 768), f.int("n_heads", 12)
    f.heads(d, h, "n_heads")
    return TransformerConfig(
        d_model=d, n_heads=h, n_encoder_layers=f.int("n_layers", 6), n_decoder_layers=0, d_ff=f.int("hidden_dim", 4 * d),
        dropout=0.0, vocab_size=f.int("vocab_size", 30522), max_positions=f.int("max_position_embeddings", 512),
        activation=f.activation("activation", "gelu"),
        positional="sinusoidal" if f.flag("sinusoidal_pos_embds", False) else "learned", layer_norm_eps=1e-12,
        type_vocab_size=0, embedding_layer_norm=True, scale_embeddings=False, tie_embeddings=False, mask_pad="none",
        pad_id=f.int("pad_token_id", 0, minimum=0)), {}


ENCODER_LAYER = {  # our name in a layer -> the family's, per family
    "bert": {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "norm1": "attention.output.LayerNorm",
             "linear1": "intermediate.dense", "linear2": "output.dense", "norm2": "output.LayerNorm"},
    "distilbert": {"q": "attention.q_lin", "k": "attention.k_lin", "v": "attention.v_lin", "o": "attention.out_lin",
                   "norm1": "sa_layer_norm", "linear1": "ffn.lin1", "linear2": "ffn.lin2",
                   "norm2": "output_layer_norm"},
}


def encoder_table(c: TransformerConfig, layout: str = "bert") -> dict:
    n, root = ENCODER_LAYER[layout], "transformer.layer" if layout == "distilbert" else "encoder.layer"

    def hf(name: str) -> str:
        return f"{root}.{{i}}.{n[name]}.{{p}}"

    return {
        "src_embed.token.weight": "embeddings.word_embeddings.weight",
        "src_embed.position.weight": "embeddings.position_embeddings.weight",
        "src_embed.position.table": "embeddings.position_embeddings.weight",  # DistilBERT's sinusoids, stored
        "src_embed.token_type.weight": "embeddings.token_type_embeddings.weight",
        "src_embed.norm.{p}": "embeddings.LayerNorm.{p}",
        "encoder.layers.{i}.self_attn.in_proj.{p}": qkv(c, hf("q"), hf("k"), hf("v")),
        "encoder.layers.{i}.self_attn.out_proj.{p}": hf("o"),
        "encoder.layers.{i}.norm1.{p}": hf("norm1"),
        "encoder.layers.{i}.ffn.linear1.{p}": hf("linear1"),
        "encoder.layers.{i}.ffn.linear2.{p}": hf("linear2"),
        "encoder.layers.{i}.norm2.{p}": hf("norm2"),
    }


# ---- gpt2 ----------------------------------------------------------------------------------------------------------
def gpt2_config(f: Fields) -> tuple[TransformerConfig, dict]:
    f.require("scale_attn_by_inverse_layer_idx", False, False)
    f.require("reorder_and_upcast_attn", False, False)
    f.require("add_cross_attention", False, False)
    f.require("scale_attn_weights", True, True)
    d, h = f.int("n_embd", 768), f.int("n_head", 12)
    f.heads(d, h, "n_head")
    inner = f.config.get("n_inner")
    eos = f.optional_id("eos_token_id")
    return TransformerConfig(
        d_model=d, n_heads=h, n_encoder_layers=0, n_decoder_layers=f.int("n_layer", 12),
        d_ff=f.int("n_inner") if inner is not None else 4 * d, dropout=0.0, vocab_size=f.int("vocab_size", 50257),
        max_positions=f.int("n_positions", 1024), norm_placement="pre",
        activation=f.activation("activation_function", "gelu_new"), positional="learned",
        layer_norm_eps=f.float("layer_norm_epsilon", 1e-5), scale_embeddings=False,
        tie_embeddings=f.flag("tie_word_embeddings", True), output_bias=False, mask_pad="none",
        pad_id=eos if eos is not None else 0), {}  # GPT-2 has no pad token; padding uses <|endoftext|>


def gpt2_table(c: TransformerConfig) -> dict:
    layer = "decoder.layers.{i}."
    return {
        "tgt_embed.token.weight": "wte.weight",
        "tgt_embed.position.weight": "wpe.weight",
        "decoder.final_norm.{p}": "ln_f.{p}",
        "generator.weight": "lm_head.weight",  # an untied output; tied, it is the token table
        layer + "self_attn.in_proj.weight": T("h.{i}.attn.c_attn.weight"),
        layer + "self_attn.in_proj.bias": "h.{i}.attn.c_attn.bias",
        layer + "self_attn.out_proj.weight": T("h.{i}.attn.c_proj.weight"),
        layer + "self_attn.out_proj.bias": "h.{i}.attn.c_proj.bias",
        layer + "ffn.linear1.weight": T("h.{i}.mlp.c_fc.weight"),
        layer + "ffn.linear1.bias": "h.{i}.mlp.c_fc.bias",
        layer + "ffn.linear2.weight": T("h.{i}.mlp.c_proj.weight"),
        layer + "ffn.linear2.bias": "h.{i}.mlp.c_proj.bias",
        layer + "norm1.{p}": "h.{i}.ln_1.{p}",
        layer + "norm2.{p}": "h.{i}.ln_2.{p}",
    }


# ---- llama, mistral, qwen2, qwen3, gemma3 --------------------------------------------------------------------------
LLAMA_MAX_POSITIONS = 512  # the longest text shown: 30 layers x 9 heads x 512 x 512 maps are 280 MB of attention


def rope_theta(f: Fields, rope: dict, name: str = "rope_theta", default: float = 10000.0) -> float:
    """RoPE's base from a rope_parameters dict (transformers 5) or the config's own field (older files)."""
    theta = rope.get("rope_theta", f.config.get(name, default))
    if isinstance(theta, bool) or not isinstance(theta, int | float) or theta <= 0:
        f.bad(name, f"must be a positive number, found {theta!r}")
    return float(theta)


def heads_and_width(f: Fields, head_dim: int | None = None) -> tuple[int, int, int, int | None]:
    """(d_model, query heads, kv heads, head_dim or None where it is d_model / heads) of a decoder-only LM; `head_dim`:
    the family's default for an explicit head width (Qwen3 128, Gemma 3 256), None: it must be d_model / heads."""
    d, h = f.int("hidden_size"), f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", h)
    if h % kv:
        f.bad("num_key_value_heads", f"({kv}) must divide num_attention_heads {h}")
    if head_dim is None:
        f.heads(d, h, "num_attention_heads")
        f.require("head_dim", d // h, d // h)
        return d, h, kv, None
    k = f.int("head_dim", head_dim)
    if k % 2:
        f.bad("head_dim", f"({k}) must be even (RoPE turns pairs of dimensions)")
    return d, h, kv, None if k * h == d else k


def language_model(f: Fields, d: int, h: int, kv: int, **options) -> TransformerConfig:
    """A pre-RMSNorm decoder-only LM with rotary positions and a gated FFN, no biases (the llama family's common
    ground); `options`: what the family changes (activation, qk_norm, post_norms, a sliding window, ...)."""
    eos, pad = f.optional_id("eos_token_id"), f.optional_id("pad_token_id")
    kw = dict(d_model=d, n_heads=h, n_kv_heads=kv, n_encoder_layers=0, n_decoder_layers=f.int("num_hidden_layers"),
              d_ff=f.int("intermediate_size"), dropout=0.0, vocab_size=f.int("vocab_size"),
              max_positions=min(f.int("max_position_embeddings", 2048), LLAMA_MAX_POSITIONS), norm="rmsnorm",
              norm_placement="pre", layer_norm_eps=f.float("rms_norm_eps", 1e-6), activation="silu", gated_ffn=True,
              bias=False, output_bias=False, positional="rotary", scale_embeddings=False,
              tie_embeddings=f.flag("tie_word_embeddings", False), mask_pad="none",
              pad_id=pad if pad is not None else (eos if eos is not None else 0))
    return TransformerConfig(**{**kw, **options})


def llama_config(f: Fields) -> tuple[TransformerConfig, dict]:
    """(config, {}) for llama / mistral / qwen2 (transformers' LlamaConfig, MistralConfig, Qwen2Config names)."""
    qwen2 = f.model_type == "qwen2"
    f.require("rope_scaling", None, None)
    rope = f.config.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default":
        f.unsupported("rope_parameters.rope_type", rope.get("rope_type"), "'default'")
    for name in ("num_local_experts", "num_experts", "n_routed_experts"):
        f.require(name, None, None)
    f.require("mlp_bias", False, False)
    f.require("attention_bias", qwen2, qwen2)
    d, h, kv, _ = heads_and_width(f)
    positions = f.int("max_position_embeddings", 2048)
    window = f.config.get("sliding_window")
    if window is not None and (not qwen2 or f.flag("use_sliding_window", False)):
        positions = min(positions, f.int("sliding_window"))  # within the window attention is full: never past it
    f.require("hidden_act", "silu", "silu")
    return language_model(f, d, h, kv, max_positions=min(positions, LLAMA_MAX_POSITIONS),
                          layer_norm_eps=f.float("rms_norm_eps", 1e-6), qkv_bias=qwen2,
                          rope_theta=rope_theta(f, rope)), {}


def local_layers(f: Fields, n_layers: int, default: list[bool]) -> tuple[int, ...]:
    """The sliding-window layers: config.json's layer_types ("sliding_attention" / "full_attention") when given,
    else `default` (one flag per layer)."""
    types = f.config.get("layer_types")
    if types is None:
        return tuple(i for i, local in enumerate(default) if local)
    if not isinstance(types, list) or len(types) != n_layers or \
            not set(types) <= {"sliding_attention", "full_attention"}:
        f.bad("layer_types", f"must list 'sliding_attention' or 'full_attention' for each of the {n_layers} layers")
    return tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")


def qwen3_config(f: Fields) -> tuple[TransformerConfig, dict]:
    """(config, {}) for qwen3 (transformers' Qwen3Config): RMSNorm on each head's q and k, its own head width
    (128 when config.json does not say), sliding-window layers above max_window_layers when use_sliding_window."""
    rope = f.config.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default":
        f.unsupported("rope_parameters.rope_type", rope.get("rope_type"), "'default'")
    f.require("rope_scaling", None, None)
    f.require("attention_bias", False, False)
    f.require("hidden_act", "silu", "silu")
    d, h, kv, k = heads_and_width(f, 128)
    n = f.int("num_hidden_layers")
    window = f.int("sliding_window", 4096) if f.flag("use_sliding_window", False) else None
    first = f.int("max_window_layers", 28, minimum=0)
    local = local_layers(f, n, [window is not None and i >= first for i in range(n)]) if window else ()
    return language_model(f, d, h, kv, head_dim=k, qk_norm=True, rope_theta=rope_theta(f, rope),
                          max_positions=min(f.int("max_position_embeddings", 32768), LLAMA_MAX_POSITIONS),
                          sliding_window=window if local else None, local_layers=local), {}


GEMMA3_LAYER_PATTERN = 6  # transformers' and llama.cpp's default: five sliding-window layers, then a global one


def gemma3_rope(f: Fields) -> tuple[float, float, float]:
    """(global base, local base, global linear scaling) from rope_parameters {"full_attention": ..,
    "sliding_attention": ..} (transformers 5) or rope_theta, rope_local_base_freq and rope_scaling (older files)."""
    rope = f.config.get("rope_parameters") or {}
    if "full_attention" in rope or "sliding_attention" in rope:
        full, local = rope.get("full_attention") or {}, rope.get("sliding_attention") or {}
    else:
        full = {**(f.config.get("rope_scaling") or {}), "rope_theta": f.config.get("rope_theta", 1_000_000.0)}
        local = {"rope_theta": f.config.get("rope_local_base_freq", 10_000.0)}
    kind = full.get("rope_type", full.get("type", "default"))
    if kind not in ("default", "linear"):
        f.unsupported("rope_parameters.full_attention.rope_type", kind, "'default', 'linear'")
    if local.get("rope_type", "default") != "default":
        f.unsupported("rope_parameters.sliding_attention.rope_type", local.get("rope_type"), "'default'")
    factor = full.get("factor", 1.0) if kind == "linear" else 1.0
    if isinstance(factor, bool) or not isinstance(factor, int | float) or factor <= 0:
        f.bad("rope_scaling.factor", f"must be a positive number, found {factor!r}")
    return (rope_theta(f, full, "rope_theta", 1_000_000.0), rope_theta(f, local, "rope_local_base_freq", 10_000.0),
            float(factor))


def gemma3_config(f: Fields) -> tuple[TransformerConfig, dict]:
    """(config, {}) for gemma3_text (Gemma3ForCausalLM) and gemma3 (the multimodal folder: its text_config; the
    vision tower is not read). Gemma 3: embeddings x sqrt(d_model), RMSNorms that scale by (1 + γ), four norms a layer
    (before and after attention and the FFN), RMSNorm on each head's q and k, a GeLU-tanh gated FFN, scores divided by
    sqrt(query_pre_attn_scalar), five sliding-window layers (RoPE base 10,000) to each global one (1,000,000)."""
    if f.model_type == "gemma3":
        text = f.config.get("text_config")
        if not isinstance(text, dict):
            f.bad("text_config", "is missing (a gemma3 folder keeps its language model's config there)")
        f = Fields(text, "gemma3_text", f.path)
    for name in ("final_logit_softcapping", "attn_logit_softcapping"):
        f.require(name, None, None)
    f.require("use_bidirectional_attention", False, False)
    f.require("attention_bias", False, False)
    d, h, kv, k = heads_and_width(f, 256)
    n = f.int("num_hidden_layers")
    window = f.config.get("sliding_window", 4096)
    window = f.int("sliding_window") if window is not None else None
    pattern = f.int("sliding_window_pattern", GEMMA3_LAYER_PATTERN)
    local = local_layers(f, n, [bool((i + 1) % pattern) for i in range(n)]) if window else ()
    theta, theta_local, scaling = gemma3_rope(f)
    scalar = f.float("query_pre_attn_scalar", 256)
    return language_model(
        f, d, h, kv, head_dim=k, activation=f.activation("hidden_activation", "gelu_pytorch_tanh"),
        max_positions=min(f.int("max_position_embeddings", 131072), LLAMA_MAX_POSITIONS), qk_norm=True,
        post_norms=True, norm_offset=1.0, scale_embeddings=True, tie_embeddings=f.flag("tie_word_embeddings", True),
        attn_scalar=None if scalar == (k or d // h) else scalar, sliding_window=window if local else None,
        local_layers=local, rope_theta=theta, rope_theta_local=theta_local if local else None, rope_scaling=scaling,
        pad_id=pad if (pad := f.optional_id("pad_token_id")) is not None else 0), {}  # Gemma3TextConfig: <pad> 0


def llama_table(c: TransformerConfig) -> dict:
    """The llama family's names (llama, mistral, qwen2, qwen3, gemma3), as the config's options call for: RMSNorm on
    q and k (qwen3, gemma3); Gemma's four norms a layer, whose second is post_attention_layernorm's successor."""
    layer, src = "decoder.layers.{i}.", "layers.{i}."  # the checkpoint's prefix ("model.") is found from the anchor
    t = {
        "tgt_embed.token.weight": "embed_tokens.weight",
        "decoder.final_norm.weight": "norm.weight",
        "generator.weight": "lm_head.weight",  # an untied output; tied, it is the token table
        layer + "self_attn.in_proj.{p}": qkv(c, *(f"{src}self_attn.{x}_proj.{{p}}" for x in "qkv")),
        layer + "self_attn.out_proj.weight": src + "self_attn.o_proj.weight",
        layer + "ffn.gate.weight": src + "mlp.gate_proj.weight",
        layer + "ffn.linear1.weight": src + "mlp.up_proj.weight",
        layer + "ffn.linear2.weight": src + "mlp.down_proj.weight",
        layer + "norm1.weight": src + "input_layernorm.weight",
        layer + "norm2.weight": src + "post_attention_layernorm.weight",
    }
    if c.qk_norm:
        t.update({layer + f"self_attn.{x}_norm.weight": src + f"self_attn.{x}_norm.weight" for x in "qk"})
    if c.post_norms:  # Gemma: norm1 and its post-norm around attention, norm2 and its post-norm around the FFN
        t.update({layer + "post_norm1.weight": src + "post_attention_layernorm.weight",
                  layer + "norm2.weight": src + "pre_feedforward_layernorm.weight",
                  layer + "post_norm2.weight": src + "post_feedforward_layernorm.weight"})
    return t


# ---- bart, marian --------------------------------------------------------------------------------------------------
BART_POSITION_OFFSET = 2


def seq2seq_config(f: Fields) -> tuple[TransformerConfig, dict]:
    """(config, special ids {start, eos}) for bart / marian."""
    bart = f.model_type == "bart"
    for name in ("normalize_before", "add_final_layer_norm", "add_bias_logits"):
        f.require(name, False, False)
    if bart:
        f.require("static_position_embeddings", False, False)
        f.require("extra_pos_embeddings", BART_POSITION_OFFSET, BART_POSITION_OFFSET)
        f.require("normalize_embedding", True, True)
    else:
        f.require("share_encoder_decoder_embeddings", True, True)
    d = f.int("d_model")
    heads, dec_heads = f.int("encoder_attention_heads"), f.int("decoder_attention_heads")
    f.heads(d, heads, "encoder_attention_heads")
    f.heads(d, dec_heads, "decoder_attention_heads")
    vocab = f.int("vocab_size")
    if not bart and f.config.get("decoder_vocab_size") not in (None, vocab):
        f.unsupported("decoder_vocab_size", f.config["decoder_vocab_size"], f"equal to vocab_size ({vocab})")
    pad = f.int("pad_token_id", 1 if bart else 0, minimum=0)
    ids = {"start": f.optional_id("decoder_start_token_id"), "eos": f.optional_id("eos_token_id")}
    ids["start"] = pad if ids["start"] is None and not bart else ids["start"]
    for role, name in (("start", "decoder_start_token_id"), ("eos", "eos_token_id")):
        if ids[role] is None:
            f.bad(name, "is missing (decoding needs it)")
        if ids[role] >= vocab:
            f.bad(name, f"({ids[role]}) is not below vocab_size {vocab}")
    tied = f.flag("tie_word_embeddings", True)
    return TransformerConfig(
        d_model=d, n_heads=heads, n_encoder_layers=f.int("encoder_layers"), n_decoder_layers=f.int("decoder_layers"),
        d_ff=f.int("encoder_ffn_dim"), d_ff_decoder=f.int("decoder_ffn_dim"), n_heads_decoder=dec_heads, dropout=0.0,
        vocab_size=vocab, max_positions=f.int("max_position_embeddings", 1024),
        activation=f.activation("activation_function", "gelu" if bart else "swish"),
        positional="learned" if bart else "sinusoidal", sinusoid_layout="halves",
        position_offset=BART_POSITION_OFFSET if bart else 0, layer_norm_eps=1e-5, embedding_layer_norm=bart,
        scale_embeddings=f.flag("scale_embedding", not bart), share_embeddings=tied, tie_embeddings=tied,
        mask_pad="source", pad_id=pad), ids


SEQ2SEQ_LAYER = {  # our sublayer -> the family's, per stack
    "encoder": {"self_attn": "self_attn", "norm1": "self_attn_layer_norm", "norm2": "final_layer_norm"},
    "decoder": {"self_attn": "self_attn", "cross_attn": "encoder_attn", "norm1": "self_attn_layer_norm",
                "norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"},
}


def seq2seq_table(c: TransformerConfig) -> dict:
    t = {
        # tied (the usual case, one table saved as `shared`); untied (transformers 5, tie_word_embeddings false): each
        # stack's own table and lm_head
        "src_embed.token.weight": First(("shared.weight", "encoder.embed_tokens.weight")) if c.share_embeddings
        else First(("encoder.embed_tokens.weight", "shared.weight")),
        "tgt_embed.token.weight": First(("decoder.embed_tokens.weight", "shared.weight")),
        "generator.weight": "lm_head.weight",
        "generator.bias": First((Row("final_logits_bias"),), zeros),
    }
    for stack, embed in (("encoder", "src_embed"), ("decoder", "tgt_embed")):
        t[f"{embed}.position.weight"] = f"{stack}.embed_positions.weight"  # BART: learned, offset 2
        t[f"{embed}.position.table"] = f"{stack}.embed_positions.weight"  # Marian: sinusoids, when stored
        t[f"{embed}.norm.{{p}}"] = f"{stack}.layernorm_embedding.{{p}}"
        src = f"{stack}.layers.{{i}}."
        for ours, theirs in SEQ2SEQ_LAYER[stack].items():
            if ours.endswith("attn"):
                t[f"{src}{ours}.in_proj.{{p}}"] = qkv(c, *(f"{src}{theirs}.{x}_proj.{{p}}" for x in "qkv"))
                t[f"{src}{ours}.out_proj.{{p}}"] = f"{src}{theirs}.out_proj.{{p}}"
            else:
                t[f"{src}{ours}.{{p}}"] = f"{src}{theirs}.{{p}}"
        t[f"{src}ffn.linear1.{{p}}"] = f"{src}fc1.{{p}}"
        t[f"{src}ffn.linear2.{{p}}"] = f"{src}fc2.{{p}}"
    return t


# what a family's checkpoints may hold that the modules do not read, by name (any other tensor left over is an error):
# buffers older versions saved, a task's head on top of the model, a tied table stored twice, Gemma 3's vision tower
HEADS = r"(pooler|cls|classifier|pre_classifier|qa_outputs|lm_head|vocab_(transform|layer_norm|projector))\..*"
ENCODER = ("embeddings.word_embeddings.weight", (HEADS, r".*position_ids"))
LM = ((r"(.*\.)?(lm_head|score)\.weight", r"(.*\.)?attn\.(masked_)?bias", r".*rotary_emb\.inv_freq",
       r"(.*\.)?(vision_tower|multi_modal_projector)\..*"))
SEQ2SEQ = ("encoder.layers.0.self_attn.q_proj.weight",
           (r"(model\.)?shared\.weight", r"(model\.)?(encoder|decoder)\.embed_tokens\.weight", r"lm_head\.weight"))

FAMILIES: dict[str, Family] = {f.model_type: f for f in (
    Family("bert", "encoder", bert_config, encoder_table, *ENCODER),
    Family("roberta", "encoder", bert_config, encoder_table, *ENCODER),
    Family("xlm-roberta", "encoder", bert_config, encoder_table, *ENCODER),
    Family("distilbert", "encoder", distilbert_config, lambda c: encoder_table(c, "distilbert"), *ENCODER),
    Family("gpt2", "decoder", gpt2_config, gpt2_table, "wte.weight", LM),
    Family("llama", "decoder", llama_config, llama_table, "layers.0.self_attn.q_proj.weight", LM),
    Family("mistral", "decoder", llama_config, llama_table, "layers.0.self_attn.q_proj.weight", LM),
    Family("qwen2", "decoder", llama_config, llama_table, "layers.0.self_attn.q_proj.weight", LM),
    Family("qwen3", "decoder", qwen3_config, llama_table, "layers.0.self_attn.q_norm.weight", LM),
    Family("gemma3_text", "decoder", gemma3_config, llama_table, "layers.0.pre_feedforward_layernorm.weight", LM),
    Family("gemma3", "decoder", gemma3_config, llama_table, "layers.0.pre_feedforward_layernorm.weight", LM),
    Family("bart", "encoder-decoder", seq2seq_config, seq2seq_table, *SEQ2SEQ),
    Family("marian", "encoder-decoder", seq2seq_config, seq2seq_table, *SEQ2SEQ),
)}
