"""GGUF files (llama.cpp, Ollama and LM Studio keep their models in them), read by path.

The header, the metadata and the tensor directory are parsed here in one pass over a memory map, with the format's
own constants from ggml-org's `gguf` package (value types, quantisation types and their block sizes); the tensors are
dequantised by `gguf.quants.dequantize`, ggml-org's reference code. gguf's `GGUFReader` is not used for the parse: it
builds a numpy object per element of every metadata array, 2-15 s for SmolLM2's 49,152 tokens and 48,900 merges, where
this pass takes ~0.1 s.

    f = GGUFFile(path)
    f.metadata["llama.block_count"]     # 30
    f.get("blk.0.attn_q.weight", (576, 576))   # float32 torch tensor in PyTorch's (out, in) layout

Every bound is checked: a truncated file, a wrong magic or version, an unknown value or tensor type, a tensor that
lies outside the file, each a WeightsError that names the file and what is wrong.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType
from gguf.quants import dequantize

if TYPE_CHECKING:
    from .config import TransformerConfig

from .errors import WeightsError
from .weights import Fn, map_file

MAGIC = b"GGUF"
VERSIONS = (2, 3)
ALIGNMENT = 32  # when the file does not say (general.alignment)
MAX_NESTING = 8  # arrays of arrays in the metadata (a deeper file would exhaust Python's recursion)
_SCALAR = {GGUFValueType.UINT8: "<B", GGUFValueType.INT8: "<b", GGUFValueType.UINT16: "<H",
           GGUFValueType.INT16: "<h", GGUFValueType.UINT32: "<I", GGUFValueType.INT32: "<i",
           GGUFValueType.FLOAT32: "<f", GGUFValueType.BOOL: "<?", GGUFValueType.UINT64: "<Q",
           GGUFValueType.INT64: "<q", GGUFValueType.FLOAT64: "<d"}
_NUMPY = {GGUFValueType.UINT8: "<u1", GGUFValueType.INT8: "<i1", GGUFValueType.UINT16: "<u2",
          GGUFValueType.INT16: "<i2", GGUFValueType.UINT32: "<u4", GGUFValueType.INT32: "<i4",
          GGUFValueType.FLOAT32: "<f4", GGUFValueType.BOOL: "?", GGUFValueType.UINT64: "<u8",
          GGUFValueType.INT64: "<i8", GGUFValueType.FLOAT64: "<f8"}
# what the app dequantises (gguf.quants implements these in numpy); anything else is refused by name
SUPPORTED_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K")


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    qtype: GGMLQuantizationType
    shape: tuple[int, ...]  # numpy / PyTorch order (GGUF lists the dimensions innermost first)
    offset: int  # absolute, in bytes
    nbytes: int


class GGUFFile:
    """A parsed GGUF file over a read-only memory map; a checkpoint for model.weights.load_weights (has, get)."""

    def __init__(self, path: str | Path, *, fix: str = ""):
        self.path = Path(path)
        self.source, self.fix = self.path.name, fix
        self._map = map_file(self.path, self.fail)
        self.pos = 0
        self.metadata: dict[str, object] = {}
        self.tensors: dict[str, GGUFTensor] = {}
        self.used: set[str] = set()
        self._parse()

    # ---- errors ---------------------------------------------------------------------------------------------
    def fail(self, problem: str):
        raise WeightsError(f"{self.path} is not a GGUF file this app can read: {problem}.", key="gguf_malformed",
                           path=str(self.path), problem=problem)

    # ---- the parse ------------------------------------------------------------------------------------------
    def _take(self, n: int) -> int:
        if n < 0 or self.pos + n > len(self._map):
            self.fail(f"it is truncated at byte {self.pos} (wanted {n} more)")
        start, self.pos = self.pos, self.pos + n
        return start

    def _unpack(self, fmt: str):
        return struct.unpack_from(fmt, self._map, self._take(struct.calcsize(fmt)))[0]

    def _string(self) -> str:
        n = self._unpack("<Q")
        start = self._take(n)
        try:
            return self._map[start:start + n].decode("utf-8")
        except UnicodeDecodeError:
            self.fail(f"a string at byte {start} is not UTF-8")

    def _value(self, vtype: int, depth: int = 0):
        try:
            vtype = GGUFValueType(vtype)
        except ValueError:
            self.fail(f"unknown metadata value type {vtype}")
        if depth > MAX_NESTING:
            self.fail(f"metadata arrays are nested more than {MAX_NESTING} deep")
        if vtype == GGUFValueType.STRING:
            return self._string()
        if vtype == GGUFValueType.ARRAY:
            etype, count = self._unpack("<I"), self._unpack("<Q")
            if etype in _NUMPY:
                size = np.dtype(_NUMPY[etype]).itemsize
                start = self._take(count * size)
                return np.frombuffer(self._map, dtype=_NUMPY[etype], count=count, offset=start).copy()
            if etype == GGUFValueType.STRING:
                out = []
                unpack, buf = struct.unpack_from, self._map
                for _ in range(count):  # the tokenizer's tokens and merges: one loop, no object per byte
                    (n,) = unpack("<Q", buf, self._take(8))
                    start = self._take(n)
                    out.append(buf[start:start + n].decode("utf-8", errors="replace"))
                return out
            return [self._value(etype, depth + 1) for _ in range(count)]
        return self._unpack(_SCALAR[vtype])

    def _parse(self) -> None:
        if len(self._map) < 24 or self._map[:4] != MAGIC:
            self.fail("wrong magic (it does not start with 'GGUF')")
        self.pos = 4
        version = self._unpack("<I")
        if version not in VERSIONS:
            self.fail(f"format version {version} (this app reads versions {', '.join(map(str, VERSIONS))})")
        n_tensors, n_kv = self._unpack("<Q"), self._unpack("<Q")
        if n_tensors > 1_000_000 or n_kv > 1_000_000:
            self.fail(f"implausible counts ({n_tensors} tensors, {n_kv} metadata keys)")
        for _ in range(n_kv):
            key = self._string()
            self.metadata[key] = self._value(self._unpack("<I"))
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            n_dims = self._unpack("<I")
            if not 1 <= n_dims <= 4:
                self.fail(f"tensor {name} has {n_dims} dimensions")
            dims = [self._unpack("<Q") for _ in range(n_dims)]
            raw_type, offset = self._unpack("<I"), self._unpack("<Q")
            try:
                qtype = GGMLQuantizationType(raw_type)
            except ValueError:
                self.fail(f"tensor {name} has an unknown type {raw_type}")
            infos.append((name, qtype, tuple(reversed(dims)), offset))
        align = self.metadata.get("general.alignment", ALIGNMENT)
        if isinstance(align, (bool, str, list, np.ndarray, float)) or not 0 < int(align) <= 1 << 20:
            self.fail(f"general.alignment is {align!r}, not a positive number of bytes")  # 0 divided by zero below
        align = int(align)
        data_start = (self.pos + align - 1) // align * align
        for name, qtype, shape, offset in infos:
            block, type_size = GGML_QUANT_SIZES[qtype]
            n = math.prod(shape)  # Python's integers: np.prod wraps at 2**64, and a hostile size then passed as 0 bytes
            if n == 0:
                self.fail(f"tensor {name} has an empty dimension {shape}")
            if shape[-1] % block:
                self.fail(f"tensor {name}'s rows of {shape[-1]} are not whole {qtype.name} blocks")
            nbytes = n // block * type_size
            start = data_start + offset
            if start + nbytes > len(self._map):
                self.fail(f"tensor {name} lies outside the file (it is truncated)")
            self.tensors[name] = GGUFTensor(name, qtype, shape, start, nbytes)

    # ---- tensors --------------------------------------------------------------------------------------------
    def prefetch(self, workers: int = 2) -> None:
        """Every tensor dequantised now, `workers` at a time (numpy lets go of the GIL in its array work), or read
        from the disk cache of an earlier process (model/dequant_cache.py): `array` then hands each out once."""
        from concurrent.futures import ThreadPoolExecutor

        from . import dequant_cache

        self._ready = dequant_cache.load(self.path, {n: t.shape for n, t in self.tensors.items()})
        if self._ready is None:
            with ThreadPoolExecutor(workers) as pool:
                self._ready = dict(zip(self.tensors, pool.map(self._dequantize, self.tensors)))
            dequant_cache.save(self.path, self._ready)

    def array(self, name: str) -> np.ndarray:
        """The tensor dequantised to float32, in PyTorch's order (shape as listed)."""
        ready = getattr(self, "_ready", None)
        if ready and name in ready:
            return ready.pop(name)
        return self._dequantize(name)

    def _dequantize(self, name: str) -> np.ndarray:
        t = self.tensors[name]
        if t.qtype.name not in SUPPORTED_TYPES:
            raise WeightsError(f"{self.path}: tensor {name} is of type {t.qtype.name}, which this app does not read; "
                               f"supported: {', '.join(SUPPORTED_TYPES)}.", key="gguf_type", path=str(self.path),
                               tensor=name, type=t.qtype.name, supported=", ".join(SUPPORTED_TYPES))
        raw = np.frombuffer(self._map, dtype=np.uint8, count=t.nbytes, offset=t.offset)
        block, type_size = GGML_QUANT_SIZES[t.qtype]
        rows = raw.reshape(-1, t.shape[-1] // block * type_size)
        kind = getattr(quants, t.qtype.name, None)  # gguf's class for the type (Q4_1, Q8_0, ...)
        if t.qtype.name not in ("F32", "F16") and hasattr(kind, "dequantize_rows"):
            out = kind.dequantize_rows(rows).reshape(t.shape)  # the whole tensor in one call (dequantize() goes
            # 16 rows at a time: 2.8 of SmolLM2's 4.4 s of loading on a busy machine)
        else:
            out = dequantize(rows, t.qtype).reshape(t.shape)
        if out.dtype != np.float32 or np.may_share_memory(out, raw):  # F32 comes back as a view of the file
            out = out.astype(np.float32, copy=True)
        return out

    def has(self, name: str) -> bool:
        return name in self.tensors

    def check(self, name: str, shape: tuple[int, ...]) -> None:
        """The file holds the tensor `name` in the `shape` the model's config gives, or a WeightsError."""
        t = self.tensors.get(name)
        if t is None:
            raise WeightsError(f"{self.path}: the file lacks the tensor {name!r} (expected shape {tuple(shape)}).",
                               key="hf_tensor_missing", path=str(self.path), tensor=name, expected=str(tuple(shape)))
        if tuple(t.shape) != tuple(shape):
            raise WeightsError(f"{self.path}: tensor {name!r} has shape {t.shape}, expected {tuple(shape)} from the "
                               "file's metadata.", key="gguf_tensor_shape", path=str(self.path), tensor=name,
                               found=str(t.shape), expected=str(tuple(shape)))

    def get(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """The tensor `name` as float32, checked against the `shape` the model's config gives."""
        self.check(name, shape)
        self.used.add(name)
        return torch.from_numpy(np.ascontiguousarray(self.array(name)))

    def unused(self, ignored=()) -> list[str]:
        return sorted(set(self.tensors) - self.used - set(ignored))

    def close(self) -> None:
        try:
            self._map.close()
        except BufferError:  # a view of it is still alive somewhere: the garbage collector closes it later
            pass


# ---- llama-family models from a GGUF file --------------------------------------------------------------------------
ARCHITECTURES = ("llama", "qwen2")  # what llama.cpp names them in general.architecture
MAX_POSITIONS = 512  # the longest text shown (the attention maps of every layer are kept: see LLAMA_MAX_POSITIONS)


def _unpermute(n_heads: int):
    """llama.cpp's converter interleaves the two halves of each head's rows of W_Q and W_K (ggml's RoPE turns pairs
    of neighbours); this puts them back in Hugging Face's order (transformers' _reverse_permute_weights)."""
    def fn(w: torch.Tensor) -> torch.Tensor:
        half = w.shape[0] // n_heads // 2
        return w.reshape(n_heads, half, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape).contiguous()

    return fn


def read_gguf_config(path) -> TransformerConfig:
    """The TransformerConfig of a GGUF file, from its header only (no tensor is read)."""
    f = GGUFFile(path)
    try:
        return gguf_config(f)
    finally:
        f.close()


def gguf_config(f: GGUFFile):
    """The TransformerConfig a llama / qwen2 GGUF file describes; anything the modules do not implement is refused by
    name (another architecture, RoPE scaling, a sliding window, experts, a partial rotation)."""
    from .config import TransformerConfig

    md = f.metadata
    arch = md.get("general.architecture")
    if arch not in ARCHITECTURES:
        raise WeightsError(f"{f.path}: architecture {arch!r} is not supported; supported: {', '.join(ARCHITECTURES)}.",
                           key="gguf_architecture", path=str(f.path), architecture=repr(arch),
                           supported=", ".join(ARCHITECTURES))

    def need(key: str):
        v = md.get(f"{arch}.{key}")
        if v is None or isinstance(v, (list, np.ndarray, str)):
            f.fail(f"the metadata lacks {arch}.{key}")
        return v

    def count(key: str) -> int:
        """A size or count of the model: a positive whole number (0 heads would divide by zero below)."""
        v = need(key)
        if isinstance(v, float) or not 0 < int(v) < 1 << 32:
            f.fail(f"{arch}.{key} is {v!r}, not a positive whole number")
        return int(v)

    def refuse(option: str, value) -> None:
        raise WeightsError(f"{f.path}: the option {option}={value!r} is not supported by this app.",
                           key="gguf_option", path=str(f.path), option=option, value=repr(value))

    for key in (f"{arch}.rope.scaling.type", f"{arch}.attention.sliding_window", f"{arch}.expert_count"):
        v = md.get(key)
        if v not in (None, "none", 0):
            refuse(key, v)
    d, h = count("embedding_length"), count("attention.head_count")
    kv = count("attention.head_count_kv") if f"{arch}.attention.head_count_kv" in md else h
    if d % h or h % kv:
        f.fail(f"{h} heads over {kv} key/value heads do not divide the width {d}")
    for key in ("rope.dimension_count", "attention.key_length", "attention.value_length"):
        v = md.get(f"{arch}.{key}")
        if v is not None and int(v) != d // h:
            refuse(f"{arch}.{key}", int(v))
    tokens = md.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens:
        raise WeightsError(f"{f.path}: the file holds no tokenizer (tokenizer.ggml.tokens is missing).",
                           key="gguf_no_tokenizer", path=str(f.path))
    emb = f.tensors.get("token_embd.weight")
    vocab = emb.shape[0] if emb is not None else len(tokens)
    n_layers, d_ff = count("block_count"), count("feed_forward_length")
    # the sizes the module is built with, checked against the file's tensors first: a header that says a million
    # layers or a width of 10^6 (each tensor lies inside the file; the metadata does not) is refused before any
    # memory is taken for it
    f.check("token_embd.weight", (vocab, d))
    f.check("blk.0.ffn_up.weight", (d_ff, d))
    f.check(f"blk.{n_layers - 1}.attn_norm.weight", (d,))
    eos = md.get("tokenizer.ggml.eos_token_id")
    pad = md.get("tokenizer.ggml.padding_token_id", eos)
    qwen2 = arch == "qwen2"
    return TransformerConfig(
        d_model=d, n_heads=h, n_kv_heads=kv, n_encoder_layers=0, n_decoder_layers=n_layers,
        d_ff=d_ff, dropout=0.0, vocab_size=vocab,
        max_positions=min(count("context_length"), MAX_POSITIONS), norm="rmsnorm", norm_placement="pre",
        layer_norm_eps=float(need("attention.layer_norm_rms_epsilon")), activation="silu", gated_ffn=True,
        bias=False, qkv_bias=qwen2, output_bias=False, positional="rotary",
        rope_theta=float(md.get(f"{arch}.rope.freq_base", 10000.0)), scale_embeddings=False,
        tie_embeddings="output.weight" not in f.tensors, mask_pad="none", pad_id=int(pad if pad is not None else 0))


def gguf_table(c, arch: str) -> dict:
    """The module's keys -> llama.cpp's tensor names (W_Q and W_K put back in order for `llama` files)."""
    from .hf.families import qkv

    layer, blk = "decoder.layers.{i}.", "blk.{i}."
    q, k = blk + "attn_q.weight", blk + "attn_k.weight"
    if arch == "llama":
        q, k = Fn(q, _unpermute(c.n_heads)), Fn(k, _unpermute(c.kv_heads))
    return {
        "tgt_embed.token.weight": "token_embd.weight",
        "decoder.final_norm.weight": "output_norm.weight",
        "generator.weight": "output.weight",  # an untied output; tied, it is the token table
        layer + "self_attn.in_proj.weight": qkv(c, q, k, blk + "attn_v.weight"),
        layer + "self_attn.in_proj.bias": qkv(c, *(blk + f"attn_{x}.bias" for x in "qkv")),  # qwen2
        layer + "self_attn.out_proj.weight": blk + "attn_output.weight",
        layer + "ffn.gate.weight": blk + "ffn_gate.weight",
        layer + "ffn.linear1.weight": blk + "ffn_up.weight",
        layer + "ffn.linear2.weight": blk + "ffn_down.weight",
        layer + "norm1.weight": blk + "attn_norm.weight",
        layer + "norm2.weight": blk + "ffn_norm.weight",
    }


def gguf_tokenizer(f: GGUFFile):
    """The byte-level BPE tokenizer the metadata describes (tokenizer.ggml.model "gpt2"), built with `tokenizers`
    as transformers builds it from a GGUF file: the vocabulary and merges, GPT-2's byte-level pre-tokenizer (or the
    split regex of the vocabulary's pre-tokenizer type, e.g. qwen2's), control tokens kept whole as special tokens,
    user-defined ones as added tokens, a BOS prepended when the file says so."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    md = f.metadata
    kind = md.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise WeightsError(f"{f.path}: tokenizer type {kind!r} is not supported; supported: 'gpt2' (byte-level BPE).",
                           key="gguf_tokenizer", path=str(f.path), tokenizer=repr(kind))
    tokens, merges = md["tokenizer.ggml.tokens"], md.get("tokenizer.ggml.merges")
    if not isinstance(merges, list):
        f.fail("the byte-level tokenizer has no merges (tokenizer.ggml.merges)")
    spelling = _byte_spelling()
    alphabet = set(spelling.values())
    vocab = {}
    for i, tok in enumerate(tokens):  # a token written in plain characters is respelled in the byte alphabet
        vocab.setdefault(tok if set(tok) <= alphabet else "".join(spelling[b] for b in tok.encode("utf-8")), i)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges], dropout=None,
                               continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    split = PRE_TOKENIZER_SPLITS.get(md.get("tokenizer.ggml.pre"))
    if split is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    types = md.get("tokenizer.ggml.token_type")
    types = [] if types is None else list(types)
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t, ty in zip(tokens, types)
                            if ty == 3 and set(t) <= alphabet])  # CONTROL
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t, ty in zip(tokens, types)
                    if ty == 4 and t in vocab])  # USER_DEFINED
    bos = md.get("tokenizer.ggml.bos_token_id")
    if md.get("tokenizer.ggml.add_bos_token") and bos is not None:
        tok.post_processor = processors.TemplateProcessing(single=f"{tokens[bos]}:0 $A:0",
                                                           pair=f"{tokens[bos]}:0 $A:0 $B:1",
                                                           special_tokens=[(tokens[bos], int(bos))])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def _byte_spelling() -> dict[int, str]:
    """GPT-2's printable spelling of the 256 bytes (bytes_to_unicode)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, n = keep[:], 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(keep, map(chr, chars)))


_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
# tokenizer.ggml.pre -> the split regex its merges were learned with (transformers' GGUF_PRE_TOKENIZER_SPLITS for the
# two families read here); any other type keeps GPT-2's byte-level split, as transformers does
PRE_TOKENIZER_SPLITS = {"llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT,
                        "smaug-bpe": _LLAMA3_SPLIT, "qwen2": _QWEN2_SPLIT, "deepseek-r1-qwen": _QWEN2_SPLIT}


def load_gguf(device: torch.device, path: str | Path, name: str | None = None, *, fix: str = "",
              description: str = ""):
    """A DecoderOnlyModel on the one Transformer from a llama / qwen2 GGUF file, its weights dequantised once."""
    from .hf.folder import check_size
    from .loaded import DecoderOnlyModel
    from .noinit import no_random_init
    from .tokenizer import TextTokenizer
    from .transformer import Transformer
    from .weights import load_weights

    path = Path(path)
    check_size(path, [path])
    f = GGUFFile(path, fix=fix)
    try:
        config = gguf_config(f)
        tok = TextTokenizer(gguf_tokenizer(f), config.max_positions)
        with no_random_init():  # every parameter is set below, strictly
            module = Transformer(config)
        f.prefetch()
        load_weights(module, f, gguf_table(config, f.metadata["general.architecture"]), strict=True,
                     ignored=("rope_freqs.weight",), name=path.name)
    finally:
        f.close()
    c = config
    desc = description or (f"{f.metadata['general.architecture']} GGUF from {path}: decoder-only, {c.n_decoder_layers} "
                           f"layers x {c.n_heads} query heads on {c.kv_heads} key/value heads, d_model {c.d_model}, "
                           f"d_k {c.d_k}, RMSNorm, RoPE (theta {c.rope_theta:g}), SwiGLU FFN of {c.d_ff}.")
    return DecoderOnlyModel(name or path.stem, module, tok, device, trained=True, description=desc, input_major=False)
