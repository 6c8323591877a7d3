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
import mmap
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
    pass

from .dequant_rows import by_chunks, q8_0
from .errors import WeightsError
from .weights import Fn, map_file, renamed

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
# (Q5_0 and Q5_1: what llama.cpp's Q4_K_M / Q5_K_M store rows in where they are not whole 256-value blocks, as
# Gemma 3 270M's rows of 640 are)
SUPPORTED_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K")


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
    def prefetch(self, workers: int = 2) -> GGUFFile:
        """Dequantise every tensor, `workers` at a time, in the background while the tokenizer and module are built
        (or take those an earlier process kept, model/dequant_cache.py): `array` hands each out once, waiting."""
        from concurrent.futures import ThreadPoolExecutor

        from . import dequant_cache

        self._ready = dequant_cache.cached(self.path, {n: t.shape for n, t in self.tensors.items()})
        if self._ready is None:  # none kept (the first load on this machine): dequantise, then keep them
            pool = ThreadPoolExecutor(workers)
            self._ready = {name: pool.submit(self._dequantize, name) for name in self.tensors}
            pool.shutdown(wait=False)
            dequant_cache.save_when_done(self.path, self._ready)
        return self

    def array(self, name: str) -> np.ndarray:
        """The tensor dequantised to float32, in PyTorch's order (shape as listed)."""
        ready = getattr(self, "_ready", None)
        if ready and name in ready:
            return ready.pop(name).result()  # its error (an unsupported type), if any, is raised here
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
        if t.qtype == GGMLQuantizationType.Q8_0:
            out = by_chunks(rows, q8_0, t.shape)
        elif t.qtype.name not in ("F32", "F16") and hasattr(kind, "dequantize_rows"):
            out = by_chunks(rows, kind.dequantize_rows, t.shape)  # whole rows per call (dequantize() goes 16
            # rows at a time: 2.8 of SmolLM2's 4.4 s of loading on a busy machine)
        else:
            out = dequantize(rows, t.qtype).reshape(t.shape)
        if out.dtype != np.float32 or np.may_share_memory(out, raw):  # F32 comes back as a view of the file
            out = out.astype(np.float32, copy=True)
        del raw, rows
        self._release(t.offset, t.nbytes)
        return out

    def _release(self, start: int, nbytes: int) -> None:
        """Drop the pages of a tensor read once from this process's memory (they stay in the page cache, and the
        map stays valid: a later read faults them in again): SmolLM2's 98 MB file no longer adds to the peak of a
        first load, when every tensor is dequantised. Only whole pages inside the tensor (a neighbour may be read
        by the other worker)."""
        first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
        end = (start + nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
        if end > first and hasattr(self._map, "madvise"):
            try:
                self._map.madvise(mmap.MADV_DONTNEED, first, end - first)
            except (OSError, ValueError, AttributeError):  # a platform without it: the pages stay, nothing else
                pass

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
        for fut in getattr(self, "_ready", {}).values():  # a failed load: stop the dequantising, let it finish
            fut.cancel()
        for fut in getattr(self, "_ready", {}).values():
            if not fut.cancelled():
                fut.exception()  # waits; the error was (or will be) said elsewhere
        self._ready = {}
        try:
            self._map.close()
        except BufferError:  # a view of it is still alive somewhere: the garbage collector closes it later
            pass


# ---- llama-family models from a GGUF file --------------------------------------------------------------------------
ARCHITECTURES = ("llama", "qwen2", "qwen3", "gemma3")  # what llama.cpp names them in general.architecture
MAX_POSITIONS = 512  # the longest text shown (the attention maps of every layer are kept: see LLAMA_MAX_POSITIONS)
GEMMA3_LAYER_PATTERN = 6  # llama.cpp (src/llama-model.cpp, LLM_ARCH_GEMMA3): five sliding-window layers, a global one
GEMMA3_LOCAL_THETA = 10000.0  # and their RoPE base, when the file does not state rope.freq_base_swa
GEMMA3_27B_LAYERS = 62  # llama.cpp scales Gemma 3 27B's scores by sqrt(d_model / heads), the others' by sqrt(d_k)
# Hugging Face's module names in a llama-family checkpoint -> llama.cpp's (gguf-py's tensor_mapping), so the tables
# of model/hf/families.py are written once and read in either format; with post-norms (Gemma) post_attention_layernorm
# is the attention's post-norm, not the norm before the FFN
GGUF_NAMES = {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight",
              "lm_head.weight": "output.weight", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
              "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
              "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm"}
GGUF_POST_NORM_NAMES = {"post_attention_layernorm": "post_attention_norm"}
VISION_PREFIXES = ("v.", "mm.")  # a multimodal file's vision tower and projector (the language model reads none)


def _unpermute(n_heads: int):
    """llama.cpp's converter interleaves the two halves of each head's rows of W_Q and W_K (ggml's RoPE turns pairs
    of neighbours); this puts them back in Hugging Face's order (transformers' _reverse_permute_weights)."""
    def fn(w: torch.Tensor) -> torch.Tensor:
        half = w.shape[0] // n_heads // 2
        return w.reshape(n_heads, half, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape).contiguous()

    return fn


def _minus_one(w: torch.Tensor) -> torch.Tensor:
    """llama.cpp's converter stores Gemma's norm weights plus 1 (ggml multiplies by them); Gemma's γ is that minus 1
    (transformers' Gemma2TensorProcessor)."""
    return w - 1


def gguf_config(f: GGUFFile):
    """The TransformerConfig a llama / qwen2 / qwen3 / gemma3 GGUF file describes, read as llama.cpp reads it;
    anything the modules do not implement is refused by name (another architecture, RoPE scaling (but Gemma 3's
    linear), a sliding window (but Gemma 3's), experts, a partial rotation, logit soft-capping)."""
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

    gemma, own_width = arch == "gemma3", arch in ("qwen3", "gemma3")  # Qwen3 and Gemma state their head width
    scaling = md.get(f"{arch}.rope.scaling.type")
    for key in (f"{arch}.rope.scaling.type", f"{arch}.attention.sliding_window", f"{arch}.expert_count",
                f"{arch}.final_logit_softcapping", f"{arch}.attn_logit_softcapping"):
        v = md.get(key)
        if v not in (None, "none", 0) and not (gemma and (key.endswith("sliding_window") or v == "linear")):
            refuse(key, v)
    d, h = count("embedding_length"), count("attention.head_count")
    kv = count("attention.head_count_kv") if f"{arch}.attention.head_count_kv" in md else h
    if (not own_width and d % h) or h % kv:
        f.fail(f"{h} heads over {kv} key/value heads do not divide the width {d}")
    k = count("attention.key_length") if own_width and f"{arch}.attention.key_length" in md else d // h
    if k % 2:
        refuse(f"{arch}.attention.key_length", k)  # RoPE turns pairs of dimensions
    for key in ("rope.dimension_count", "attention.key_length", "attention.value_length"):
        v = md.get(f"{arch}.{key}")
        if v is not None and int(v) != k:
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
    f.check("blk.0.attn_q.weight", (h * k, d))
    eos = md.get("tokenizer.ggml.eos_token_id")
    pad = md.get("tokenizer.ggml.padding_token_id", eos)
    options = {}
    if gemma:
        window = int(md.get(f"{arch}.attention.sliding_window") or 0)
        local = tuple(i for i in range(n_layers) if (i + 1) % GEMMA3_LAYER_PATTERN) if window else ()
        options = dict(activation="gelu_pytorch_tanh", scale_embeddings=True, post_norms=True, norm_offset=1.0,
                       sliding_window=window if local else None, local_layers=local,
                       rope_theta_local=float(md.get(f"{arch}.rope.freq_base_swa", GEMMA3_LOCAL_THETA)) if local
                       else None, rope_scaling=float(need("rope.scaling.factor")) if scaling == "linear" else 1.0,
                       attn_scalar=float(d // h) if n_layers == GEMMA3_27B_LAYERS and d // h != k else None)
    return TransformerConfig(**{**dict(
        d_model=d, n_heads=h, n_kv_heads=kv, n_encoder_layers=0, n_decoder_layers=n_layers,
        d_ff=d_ff, dropout=0.0, vocab_size=vocab,
        max_positions=min(count("context_length"), MAX_POSITIONS), norm="rmsnorm", norm_placement="pre",
        layer_norm_eps=float(need("attention.layer_norm_rms_epsilon")), activation="silu", gated_ffn=True,
        bias=False, qkv_bias=arch == "qwen2", output_bias=False, positional="rotary",
        rope_theta=float(md.get(f"{arch}.rope.freq_base", 10000.0)), scale_embeddings=False,
        tie_embeddings="output.weight" not in f.tensors, mask_pad="none", pad_id=int(pad if pad is not None else 0),
        head_dim=k if k * h != d else None, qk_norm=own_width), **options})


def gguf_name(name: str, c) -> str:
    """A Hugging Face tensor name of the llama tables ("layers.{i}.self_attn.q_proj.{p}") in llama.cpp's names
    ("blk.{i}.attn_q.{p}")."""
    names = {**GGUF_NAMES, **GGUF_POST_NORM_NAMES} if c.post_norms else GGUF_NAMES
    if not name.startswith("layers.{i}."):
        return names[name]
    module, _, part = name[len("layers.{i}."):].rpartition(".")
    return f"blk.{{i}}.{names[module]}.{part}"


def gguf_table(c, arch: str) -> dict:
    """The module's keys -> llama.cpp's tensor names: the family's one table (model/hf/families.llama_table) in GGUF
    names, with W_Q and W_K put back in order for `llama` files and Gemma's norms less the 1 llama.cpp added."""
    from .hf.families import llama_table

    def source(name: str):
        g = gguf_name(name, c)
        if arch == "llama" and g.startswith(("blk.{i}.attn_q.", "blk.{i}.attn_k.")):
            return Fn(g, _unpermute(c.n_heads if ".attn_q." in g else c.kv_heads))
        if arch == "gemma3" and g.endswith("norm.weight"):
            return Fn(g, _minus_one)
        return g

    return {key: renamed(src, source) for key, src in llama_table(c).items()}


def gguf_source(path: str | Path, name: str | None = None, *, fix: str = "", sha256: str | None = None,
                description: str = ""):
    """A llama / qwen2 / qwen3 / gemma3 GGUF file: its config, tokenizer and weights (dequantised once) all in it."""
    from .gguf_tokenizer import gguf_tokenizer
    from .hf.folder import check_size
    from .source import Source
    from .tokenizer import TextTokenizer
    path = Path(path)

    def open_file(r) -> GGUFFile:
        check_size(path, [path])
        return GGUFFile(path, fix=fix)

    def ignored(r) -> tuple:  # a Gemma 3 file's vision tower (Ollama keeps it there, "v." and "mm."): not read
        gemma = r.file.metadata["general.architecture"] == "gemma3"
        return ("rope_freqs.weight", *(n for n in r.file.tensors if gemma and n.startswith(VISION_PREFIXES)))

    def describe(r) -> str:
        c = r.config
        return description or (
            f"{r.file.metadata['general.architecture']} GGUF from {path}: decoder-only, {c.n_decoder_layers} layers x "
            f"{c.n_heads} query heads on {c.kv_heads} key/value heads, d_model {c.d_model}, d_k {c.d_k}, RMSNorm, RoPE "
            f"(theta {c.rope_theta:g}), {'GeGLU' if c.activation != 'silu' else 'SwiGLU'} FFN of {c.d_ff}"
            f"{f', sliding window {c.sliding_window} on {len(c.local_layers)} layers' if c.local_layers else ''}.")

    return Source(name or path.stem, {"model": path}, digests={"model": sha256} if sha256 else {}, fix=fix,
                  open=open_file, config=lambda r: gguf_config(r.file), weights=lambda r: r.file.prefetch(),
                  tokenizer=lambda r: TextTokenizer(gguf_tokenizer(r.file.metadata, path), r.config.max_positions),
                  table=lambda r: gguf_table(r.config, r.file.metadata["general.architecture"]), ignored=ignored,
                  description=describe, input_major=False)


def load_gguf(device: torch.device, path: str | Path, name: str | None = None):  # a DecoderOnlyModel
    from .source import build
    return build(gguf_source(path, name), device)
