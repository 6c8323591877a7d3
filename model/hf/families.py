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
- bart, marian: post-LN encoder-decoders. BART: learned positions after two unused rows, LayerNorm on the
  embeddings. Marian: sinusoidal positions with the sines first ("halves"), decoding starts from <pad>. Both:
  logits = h E^T + final_logits_bias.

Only what the modules implement is accepted; any other option is refused by name (Fields.require).
"""

from __future__ import annotations

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


# ---- llama, mistral, qwen2 -----------------------------------------------------------------------------------------
LLAMA_MAX_POSITIONS = 512  # the longest text shown: 30 layers x 9 heads x 512 x 512 maps are 280 MB of attention


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
    d, h = f.int("hidden_size"), f.int("num_attention_heads")
    f.heads(d, h, "num_attention_heads")
    kv = f.int("num_key_value_heads", h)
    if h % kv:
        f.bad("num_key_value_heads", f"({kv}) must divide num_attention_heads {h}")
    f.require("head_dim", d // h, d // h)
    positions = f.int("max_position_embeddings", 2048)
    window = f.config.get("sliding_window")
    if window is not None and (not qwen2 or f.flag("use_sliding_window", False)):
        positions = min(positions, f.int("sliding_window"))  # within the window attention is full: never past it
    f.require("hidden_act", "silu", "silu")
    eos = f.optional_id("eos_token_id")
    pad = f.optional_id("pad_token_id")
    theta = rope.get("rope_theta", f.config.get("rope_theta", 10000.0))
    if isinstance(theta, bool) or not isinstance(theta, int | float) or theta <= 0:
        f.bad("rope_theta", f"must be a positive number, found {theta!r}")
    return TransformerConfig(
        d_model=d, n_heads=h, n_kv_heads=kv, n_encoder_layers=0, n_decoder_layers=f.int("num_hidden_layers"),
        d_ff=f.int("intermediate_size"), dropout=0.0, vocab_size=f.int("vocab_size"),
        max_positions=min(positions, LLAMA_MAX_POSITIONS), norm="rmsnorm", norm_placement="pre",
        layer_norm_eps=f.float("rms_norm_eps", 1e-6), activation="silu", gated_ffn=True, bias=False,
        qkv_bias=qwen2, output_bias=False, positional="rotary", rope_theta=float(theta), scale_embeddings=False,
        tie_embeddings=f.flag("tie_word_embeddings", False), mask_pad="none",
        pad_id=pad if pad is not None else (eos if eos is not None else 0)), {}


def llama_table(c: TransformerConfig) -> dict:
    layer, src = "decoder.layers.{i}.", "layers.{i}."  # the checkpoint's prefix ("model.") is found from the anchor
    return {
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


FAMILIES: dict[str, Family] = {f.model_type: f for f in (
    Family("bert", "encoder", bert_config, encoder_table, "embeddings.word_embeddings.weight"),
    Family("roberta", "encoder", bert_config, encoder_table, "embeddings.word_embeddings.weight"),
    Family("xlm-roberta", "encoder", bert_config, encoder_table, "embeddings.word_embeddings.weight"),
    Family("distilbert", "encoder", distilbert_config, lambda c: encoder_table(c, "distilbert"),
           "embeddings.word_embeddings.weight"),
    Family("gpt2", "decoder", gpt2_config, gpt2_table, "wte.weight"),
    Family("llama", "decoder", llama_config, llama_table, "layers.0.self_attn.q_proj.weight"),
    Family("mistral", "decoder", llama_config, llama_table, "layers.0.self_attn.q_proj.weight"),
    Family("qwen2", "decoder", llama_config, llama_table, "layers.0.self_attn.q_proj.weight"),
    Family("bart", "encoder-decoder", seq2seq_config, seq2seq_table, "encoder.layers.0.self_attn.q_proj.weight"),
    Family("marian", "encoder-decoder", seq2seq_config, seq2seq_table, "encoder.layers.0.self_attn.q_proj.weight"),
)}
