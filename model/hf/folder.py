"""Inspect a local Hugging Face-format model folder without loading it: where it is, its config.json, which family,
which weight files, how big.

A folder holds config.json, model.safetensors (or model.safetensors.index.json with its shards) and
tokenizer.json. A folder with only pytorch_model.bin is refused: that file is a pickle, never loaded here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, WeightsError
from .families import FAMILIES

SUPPORTED = ", ".join(FAMILIES)  # the families with a record (families.py)
MAX_BYTES_ENV = "HEADLIGHT_MAX_MODEL_BYTES"
DEFAULT_MAX_BYTES = 2_000_000_000
PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
CONVERT = ("load it once with transformers and save it with save_pretrained(DIR, safe_serialization=True), "
           "or convert it with the safetensors conversion script")


@dataclass(frozen=True)
class Folder:
    path: Path  # resolved
    config: dict  # the parsed config.json
    model_type: str
    kind: str  # "encoder" | "decoder" | "encoder-decoder"
    weight_files: tuple[Path, ...]  # model.safetensors, or the shards named by the index
    n_bytes: int  # total size of the weight files


def max_bytes() -> int:
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        value = int(float(raw))
    except ValueError:
        value = -1
    if value <= 0:
        raise InputError(f"{MAX_BYTES_ENV}={raw!r} is not a positive number of bytes (e.g. 2000000000).",
                         key="hf_budget_invalid", env=MAX_BYTES_ENV, value=repr(raw))
    return value


def resolve_dir(path: str | os.PathLike) -> Path:
    """The folder as an absolute path; clear errors for a missing path, a symlink loop, a file."""
    raw = Path(os.path.expanduser(str(path)))
    try:
        resolved = raw.resolve(strict=True)
    except RuntimeError:  # Python < 3.13: "Symlink loop"
        raise InputError(f"The model folder {str(raw)!r} is a symbolic link loop: it points back to itself.",
                         key="hf_symlink_loop", path=str(raw)) from None
    except FileNotFoundError:
        raise InputError(f"The model folder {str(raw)!r} does not exist.", key="hf_not_found",
                         path=str(raw)) from None
    except OSError as e:
        if e.errno == 40:  # ELOOP
            raise InputError(f"The model folder {str(raw)!r} is a symbolic link loop: it points back to itself.",
                             key="hf_symlink_loop", path=str(raw)) from None
        raise InputError(f"The model folder {str(raw)!r} cannot be read: {e.strerror or e}.", key="hf_unreadable",
                         path=str(raw), detail=str(e.strerror or e)) from None
    if not resolved.is_dir():
        raise InputError(f"{str(raw)!r} is not a folder: give the folder that holds config.json, "
                         "model.safetensors and tokenizer.json.", key="hf_not_dir", path=str(raw))
    return resolved


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise InputError(f"{str(folder)!r} has no config.json: a Hugging Face model folder needs config.json, "
                         "model.safetensors and tokenizer.json.", key="hf_config_missing", path=str(folder))
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{str(path)!r} is not UTF-8 text (byte {e.start}): config.json must be UTF-8 JSON.",
                         key="hf_config_invalid", path=str(path), detail=f"not UTF-8 (byte {e.start})") from None
    except OSError as e:
        raise InputError(f"{str(path)!r} cannot be read: {e.strerror or e}.", key="hf_unreadable", path=str(path),
                         detail=str(e.strerror or e)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        detail = f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        raise InputError(f"{str(path)!r} is not valid JSON ({detail}).", key="hf_config_invalid", path=str(path),
                         detail=detail) from None
    if not isinstance(data, dict):
        raise InputError(f"{str(path)!r} is not a JSON object.", key="hf_config_invalid", path=str(path),
                         detail="not a JSON object")
    return data


def model_type_of(config: dict, folder: Path) -> str:
    mt = config.get("model_type")
    if mt not in FAMILIES:
        raise InputError(f"{str(folder)!r}: model_type {mt!r} is not supported; supported model types: "
                         f"{SUPPORTED}.", key="hf_unsupported_type", model_type=repr(mt), supported=SUPPORTED)
    return mt


def weight_files(folder: Path) -> tuple[Path, ...]:
    """model.safetensors, or the shards of model.safetensors.index.json; a pickle-only folder is refused."""
    single = folder / "model.safetensors"
    if single.is_file():
        return (single,)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return _shards(folder, index)
    pickles = [p for p in PICKLES if (folder / p).exists()]
    if pickles:
        raise WeightsError(
            f"{str(folder)!r} has only {pickles[0]}, no model.safetensors. Such a file is a pickle (it can run "
            f"code when loaded) and is never opened here. Fix: {CONVERT}.",
            key="hf_pickle_only", path=str(folder), file=pickles[0], fix=CONVERT)
    raise WeightsError(f"{str(folder)!r} has no model.safetensors (nor model.safetensors.index.json).",
                       key="hf_weights_missing", path=str(folder))


def _shards(folder: Path, index: Path) -> tuple[Path, ...]:
    try:
        weight_map = json.loads(index.read_bytes().decode("utf-8"))["weight_map"]
        names = sorted(set(weight_map.values()))
        if not names or not all(isinstance(n, str) for n in names):
            raise ValueError("empty weight_map")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise WeightsError(f"{str(index)!r} is not a valid safetensors index ({e}).", key="hf_weights_invalid",
                           path=str(index), detail=str(e)) from None
    files = []
    for name in names:
        p = (folder / name).resolve()
        if p.parent != folder or not p.is_file():  # no path outside the folder, no missing shard
            raise WeightsError(f"{str(index)!r} names the shard {name!r}, which is not a file in the folder.",
                               key="hf_shard_missing", path=str(index), shard=name)
        files.append(p)
    return tuple(files)


def check_size(where: Path, files) -> int:
    """The files' bytes, or a WeightsError when they are over HEADLIGHT_MAX_MODEL_BYTES (the machine's memory)."""
    n_bytes = sum(Path(f).stat().st_size for f in files)
    limit = max_bytes()
    if n_bytes > limit:
        raise WeightsError(
            f"{str(where)!r} holds {n_bytes / 1e9:.2f} GB of weights, more than the limit of {limit / 1e9:.2f} GB. "
            f"Choose a smaller model or raise {MAX_BYTES_ENV} (bytes) when starting the app.",
            key="hf_too_large", path=str(where), size=f"{n_bytes / 1e9:.2f}", limit=f"{limit / 1e9:.2f}",
            env=MAX_BYTES_ENV)
    return n_bytes


def inspect(path: str | os.PathLike) -> Folder:
    """Check a folder without reading its weights; raises InputError / WeightsError saying what is wrong."""
    folder = resolve_dir(path)
    config = read_config(folder)
    mt = model_type_of(config, folder)
    files = weight_files(folder)
    return Folder(folder, config, mt, FAMILIES[mt].kind, files, check_size(folder, files))
