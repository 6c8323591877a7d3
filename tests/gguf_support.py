"""Tiny random llama / qwen2 / qwen3 / gemma3 checkpoints, made at test time with `transformers` (tests only), written
as a Hugging Face folder and as GGUF files with ggml-org's own writer (`gguf.GGUFWriter`) the way llama.cpp's
converter writes them: W_Q and W_K rows interleaved for `llama`, Gemma's norm weights plus 1, Q8_0 where a row is
whole blocks of 32 and F32 elsewhere, the tokenizer in the metadata (a byte-level BPE trained here; for Gemma a
SentencePiece BPE with byte fallback, tests/hf_support.sentencepiece_bpe). Nothing is downloaded."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFWriter, RopeScalingType
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import quantize
from hf_support import byte_bpe, save, sentencepiece_bpe

ARCH_CLASSES = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
                "mistral": ("MistralConfig", "MistralForCausalLM"), "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
                "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM")}
# each family's tiny defaults beyond the common ones: Qwen3 and Gemma 3 with a head width of their own; Gemma 3 with a
# sliding window shorter than the test texts, a layer pattern of 3 and a local RoPE base of its own
FAMILY_DEFAULTS = {"qwen3": dict(head_dim=10),
                   "gemma3": dict(head_dim=10, num_hidden_layers=4, sliding_window=4, sliding_window_pattern=3,
                                  rope_local_base_freq=300.0, query_pre_attn_scalar=13, bos_token_id=2,
                                  eos_token_id=1, pad_token_id=0)}


def make_llama(out: Path, arch: str = "llama", seed: int = 0, std: float = 0.15, **overrides):
    """A random llama / qwen2 / mistral / qwen3 / gemma3 causal LM in `out` (a Hugging Face folder); returns (model,
    out, tokenizer)."""
    import transformers as tf

    torch.manual_seed(seed)
    # the 257 bytes and specials, then merges; Gemma: SentencePiece pieces with byte fallback
    tok = sentencepiece_bpe(420) if arch == "gemma3" else byte_bpe(420)
    cfg_name, cls_name = ARCH_CLASSES[arch]
    kw = dict(vocab_size=tok.get_vocab_size(), hidden_size=60, num_attention_heads=6, num_key_value_heads=2,
              num_hidden_layers=2, intermediate_size=64, max_position_embeddings=64, rms_norm_eps=1e-5,
              rope_theta=5000.0, tie_word_embeddings=False, bos_token_id=0, eos_token_id=0)
    cfg = getattr(tf, cfg_name)(**{**kw, **FAMILY_DEFAULTS.get(arch, {}), **overrides})
    model = getattr(tf, cls_name)(cfg).eval()
    with torch.no_grad():  # larger weights than the init, so attention is far from uniform
        for p in model.parameters():
            p.add_(torch.randn_like(p) * std)
    save(model, tok, out)
    return model, out, tok


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf `permute` (the halves of each head's rows interleaved for ggml's RoPE)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# gguf 0.19 dequantises the K-quants but cannot quantise to them (NotImplementedError): a file of these types gets
# random blocks, valid by construction (every bit pattern of the 4-, 5- and 6-bit parts and of the packed 6-bit
# scales and minimums is a value), with small finite f16 super-block scales
K_TYPES = ("Q4_K", "Q5_K", "Q6_K")
# the centre of the unsigned quant levels (Q4_K 0..15, Q5_K 0..31): dmin = d * this keeps each block's mean near 0
_K_CENTRE = {"Q4_K": 7.5, "Q5_K": 15.5}
# the range of the super-block scale d per type (normal f16 numbers): weights of std ~0.05 in each, so that attention
# on d_model 256 is neither uniform nor one-hot
_K_D = {"Q4_K": (1e-4, 2.7e-4), "Q5_K": (6.5e-5, 1.2e-4), "Q6_K": (3e-4, 8e-4)}


def random_k_blocks(shape: tuple[int, int], qtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random `qtype` (Q4_K, Q5_K or Q6_K) blocks for a float tensor of `shape` (rows of whole 256-value blocks), as
    the uint8 bytes GGUFWriter.add_tensor takes with raw_dtype; the values it decodes to have a std of ~0.05."""
    want = GGMLQuantizationType[qtype]
    block, size = GGML_QUANT_SIZES[want]
    rows, cols = shape
    assert cols % block == 0, f"{qtype} rows must be whole blocks of {block} values, not {cols}"
    n = rows * cols // block
    raw = rng.integers(0, 256, size=(n, size), dtype=np.uint8)  # the quants and packed scales: any bits are valid
    d = rng.uniform(*_K_D[qtype], n).astype(np.float16)
    if qtype == "Q6_K":  # ql (128) qh (64) scales (16 int8) d (f16): value = d * scale * (q - 32)
        raw[:, 192:208] = rng.integers(-8, 9, size=(n, 16)).astype(np.int8).view(np.uint8)
        raw[:, 208:210] = d.view(np.uint8).reshape(n, 2)
    else:  # d (f16) dmin (f16) scales and mins (12, 6-bit) [qh (32), Q5_K] qs: value = d * sc * q - dmin * m
        raw[:, 0:2] = d.view(np.uint8).reshape(n, 2)
        raw[:, 2:4] = (d.astype(np.float32) * _K_CENTRE[qtype]).astype(np.float16).view(np.uint8).reshape(n, 2)
    return raw.reshape(rows, cols // block * size)


def _write_tokenizer(w: GGUFWriter, tok, arch: str) -> None:
    """The tokenizer in llama.cpp's metadata: byte-level BPE ("gpt2") with its merges, or for Gemma a SentencePiece
    vocabulary ("llama": scores, byte pieces of type 6, no merges) that adds <bos>."""
    vocab = tok.get_vocab(with_added_tokens=True)
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv_: kv_[1])]
    if arch == "gemma3":
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores([-float(i) for i in range(len(tokens))])
        kinds = {"<pad>": 3, "<eos>": 3, "<bos>": 3, "<unk>": 2, "<mask>": 4}
        w.add_token_types([kinds.get(t, 6 if t.startswith("<0x") and len(t) == 6 else 1) for t in tokens])
        w.add_bos_token_id(2)
        w.add_eos_token_id(1)
        w.add_unk_token_id(3)
        w.add_pad_token_id(0)
        w.add_add_bos_token(True)
        return
    merges = json.loads(tok.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2" if arch in ("qwen2", "qwen3") else "default")
    w.add_token_list(tokens)
    w.add_token_types([3 if t == "<|endoftext|>" else 1 for t in tokens])
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)
    w.add_add_bos_token(False)


def write_gguf(model, tok, path: Path, arch: str = "llama", qtype: str = "Q8_0", seed: int = 0) -> Path:
    """The model as llama.cpp's converter would write it (arch "llama", "qwen2", "qwen3" or "gemma3"). A matrix whose
    rows are whole blocks of `qtype` is stored in it (F16 / BF16: every matrix), the rest in F32; for a K-quant
    (K_TYPES) the matrices are random blocks (random_k_blocks, drawn with `seed`), not the model's own weights.
    Gemma 3 as llama.cpp reads it: a layer pattern of 6 and local RoPE base 10,000 are implied, not written."""
    cfg = model.config
    h, kv = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // h
    gemma = arch == "gemma3"
    w = GGUFWriter(str(path), arch)
    w.add_name("tiny-test")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(h)
    w.add_head_count_kv(kv)
    rope = cfg.rope_parameters["full_attention"] if gemma else cfg.rope_parameters
    w.add_rope_freq_base(float(rope["rope_theta"]))
    if rope.get("rope_type", "default") == "linear":
        w.add_rope_scaling_type(RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(float(rope["factor"]))
    if gemma and "sliding_attention" in cfg.layer_types:
        w.add_sliding_window(cfg.sliding_window)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(head_dim)
    if arch in ("qwen3", "gemma3"):
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_vocab_size(cfg.vocab_size)
    _write_tokenizer(w, tok, arch)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    if gemma:  # llama.cpp's converter: Gemma's norm weights plus 1 (ggml multiplies by them)
        sd = {k: v + 1 if k.endswith("norm.weight") else v for k, v in sd.items()}
    want = GGMLQuantizationType[qtype]
    rng = np.random.default_rng(seed)

    def put(name: str, arr: np.ndarray) -> None:
        block = GGML_QUANT_SIZES[want][0]
        if want != GGMLQuantizationType.F32 and arr.ndim == 2 and arr.shape[-1] % block == 0:
            data = random_k_blocks(arr.shape, qtype, rng) if qtype in K_TYPES else quantize(arr, want)
            w.add_tensor(name, data, raw_dtype=want)  # shape: from the blocks
        else:  # norms, biases and rows that are not whole blocks stay F32, as llama.cpp keeps them
            w.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float32))

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    if not cfg.tie_word_embeddings:
        put("output.weight", sd["lm_head.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        q, k = sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"]
        if arch == "llama":
            q, k = _permute(q, h), _permute(k, kv)
        put(f"blk.{i}.attn_q.weight", q)
        put(f"blk.{i}.attn_k.weight", k)
        put(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        if arch == "qwen2":
            for x in "qkv":
                put(f"blk.{i}.attn_{x}.bias", sd[p + f"self_attn.{x}_proj.bias"])
        put(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        put(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        put(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        put(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
        put(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"])
        if arch in ("qwen3", "gemma3"):
            put(f"blk.{i}.attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"])
            put(f"blk.{i}.attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"])
        if gemma:
            put(f"blk.{i}.post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
            put(f"blk.{i}.ffn_norm.weight", sd[p + "pre_feedforward_layernorm.weight"])
            put(f"blk.{i}.post_ffw_norm.weight", sd[p + "post_feedforward_layernorm.weight"])
        else:
            put(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@contextlib.contextmanager
def _gguf_parsed_once():
    """While transformers reads one GGUF file: the `gguf` package's reader and tensor-name map memoised. transformers
    opens the file three times (config, weights, tokenizer), and each GGUFReader parses its 49,152-token vocabulary
    and merges in Python, and builds a TensorNameMap once per tensor (397 times for SmolLM2): 21 of the 30 s the
    reference took (2026-11-27). The same reader and map give the same config, weights and tokenizer; only the work
    is done once."""
    import functools

    import gguf

    saved = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = functools.cache(saved[0])
    gguf.get_tensor_name_map = functools.cache(saved[1])
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = saved


def reference_from_gguf(path: Path):
    """transformers' own reading of the same GGUF file (dequantised, W_Q / W_K put back), eager attention."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _gguf_parsed_once():
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32,
                                                     attn_implementation="eager").eval()
        return model, AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
