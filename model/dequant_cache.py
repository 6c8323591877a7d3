"""The dequantised tensors of a GGUF file, kept on disk after the first load, so a later process (a fresh server, the
next `make serve` worker) reads them instead of dequantising again.

Dequantising SmolLM2's 272 tensors is most of its load: 1.0 s on a quiet 2-core machine, ~3 s on a loaded one
(2026-11-27, load 11); reading them back from this cache, a memory map of float32 arrays, takes ~0.05 s and copying
them into the modules ~0.2-0.5 s. The arrays are exactly what `GGUFFile` dequantised (float32, the same bits), in a
safetensors file (nothing is ever unpickled) under HEADLIGHT_CACHE (default ~/.cache/headlight, as the weight-file
stamps of model/weights.py), one file per GGUF file, named by a key of its path, size and modification time and of the
`gguf` package's version (its dequantisation code): a changed GGUF file or package makes a new key.

A cache file is trusted as the stamps of verified weight files are: beside it, the size and modification time it was
written with; anything else (another size, a touched file, a tensor missing, another shape or type) and it is not
used, the GGUF file is dequantised again and the cache rewritten (older files of the same name are removed then).
Written to a temporary name and renamed, so a reader never sees half a file. A home that cannot be written, or HEADLIGHT_DEQUANT_CACHE=0, only means no cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_all
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from .weights import CACHE_DIR as CACHE_ROOT

log = logging.getLogger("headlight.model")
FORMAT = 1  # the layout of a cache file; a new one makes new keys
WRITER = "headlight-dequant-cache"  # the writer threads' name


def enabled() -> bool:
    return os.environ.get("HEADLIGHT_DEQUANT_CACHE", "1") != "0"


def cache_path(path: Path) -> Path:
    """Where the dequantised tensors of the GGUF file `path` are kept."""
    st = path.stat()
    try:
        gguf_version = version("gguf")
    except PackageNotFoundError:
        gguf_version = "?"
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|gguf {gguf_version}|{FORMAT}".encode())
    return CACHE_ROOT / "dequantised" / f"{path.stem[:40]}-{key.hexdigest()[:32]}.safetensors"


def _stamp(file: Path) -> Path:
    return file.with_suffix(".ok")


def load(path: Path, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray] | None:
    """name -> float32 array for every tensor in `shapes` (the GGUF file's directory), from the cache of `path`, or
    None when there is no cache file it can trust."""
    if not enabled():
        return None
    try:
        file = cache_path(path)
        stamp = json.loads(_stamp(file).read_text())
        st = file.stat()
        if stamp != {"size": st.st_size, "mtime_ns": st.st_mtime_ns}:
            return None
        from safetensors import safe_open

        with safe_open(str(file), framework="pt") as sf:  # a memory map: tensors are read as they are copied
            if set(sf.keys()) != set(shapes):
                return None
            out = {}
            for name, shape in shapes.items():
                t = sf.get_tensor(name)
                if tuple(t.shape) != tuple(shape) or str(t.dtype) != "torch.float32":
                    return None
                out[name] = t.numpy()
        return out
    except (OSError, ValueError, KeyError, TypeError):  # no cache yet, or not one it can read: dequantise
        return None
    except Exception:  # noqa: BLE001 - safetensors' own errors on a damaged file: the same, logged
        log.warning("the dequantised cache of %s is unreadable; dequantising again", path, exc_info=True)
        return None


def cached(path: Path, shapes: dict[str, tuple[int, ...]]) -> dict[str, Future] | None:
    """`load`'s arrays as finished futures (what GGUFFile.prefetch hands out), or None."""
    arrays = load(path, shapes)
    if arrays is None:
        return None
    done = {}
    for name, a in arrays.items():
        done[name] = Future()
        done[name].set_result(a)
    return done


def save_when_done(path: Path, futures: dict[str, Future]) -> threading.Thread | None:
    """Keep the tensors of `futures` (GGUFFile.prefetch's dequantising) once every one has finished, from a
    background thread; nothing if one failed or was cancelled (a load that failed)."""
    if not enabled():
        return None
    futures = dict(futures)  # the loader pops its own dict's futures as it hands them out

    def keep() -> None:
        wait_all(futures.values())
        if all(not f.cancelled() and f.exception() is None for f in futures.values()):
            _write(path, {n: f.result() for n, f in futures.items()})

    thread = threading.Thread(target=keep, name=WRITER, daemon=True)
    thread.start()
    return thread


def save(path: Path, arrays: dict[str, np.ndarray], *, wait: bool = False) -> threading.Thread | None:
    """Keep `arrays` (the GGUF file's dequantised tensors) for later processes, written by a background thread so
    the load that made them does not wait for the disk (`wait`: write now); nothing when it cannot. Returns the
    thread writing, if any."""
    if not enabled():
        return None
    arrays = dict(arrays)  # the loader hands its own dict's arrays out (pops them); the writer keeps its own
    if wait:
        _write(path, arrays)
        return None
    thread = threading.Thread(target=_write, args=(path, arrays), name=WRITER, daemon=True)
    thread.start()
    return thread


def join() -> None:
    """Wait for the writers started in this process (a test; the preload's warm-up, which has time)."""
    for thread in threading.enumerate():
        if thread.name == WRITER:
            thread.join()


def _write(path: Path, arrays: dict[str, np.ndarray]) -> None:
    try:
        from safetensors.numpy import save_file

        file = cache_path(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        for left in file.parent.glob(f".{path.stem[:40]}-*.tmp"):  # a writer killed with its process (a daemon)
            if time.time() - left.stat().st_mtime > 600:
                left.unlink(missing_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        try:
            save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}, str(tmp))
            os.replace(tmp, file)
        finally:
            tmp.unlink(missing_ok=True)
        st = file.stat()
        _stamp(file).write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}))
        for old in file.parent.glob(f"{path.stem[:40]}-*"):  # this file name's older keys: stale (a changed file, a
            if old.stem != file.stem:  # new gguf package; tests' temporary files): half a GB each for SmolLM2
                old.unlink(missing_ok=True)
    except OSError:  # a read-only or full home: no cache, the next process dequantises again
        log.info("could not keep the dequantised tensors of %s", path, exc_info=True)

