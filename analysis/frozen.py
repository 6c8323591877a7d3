"""Results of the analysis package are frozen: dataclasses with frozen=True whose numpy arrays are read-only, so a
cached result shared by every session can never be changed by one of them."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch


def to_numpy(x: torch.Tensor) -> np.ndarray:
    """A tensor as numpy on the CPU: float32 for floating point, bool and int kept. A view into a larger tensor (one
    head of a (1, heads, n, n) record, one row of a batch) is copied, so the array keeps only its own numbers alive,
    not the whole storage (12x at 12 heads: Step by step's one head of a 512-token text kept 44 MiB for 7 MiB)."""
    x = x.detach().cpu()
    if x.is_floating_point():
        x = x.float()
    if x.untyped_storage().nbytes() > x.nelement() * x.element_size():
        x = x.clone(memory_format=torch.contiguous_format)
    return x.numpy()


def readonly(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    a.setflags(write=False)
    return a


def ro(a, dtype=np.float32) -> np.ndarray:
    """A read-only copy of `a` as `dtype` (the one helper for frozen results' arrays)."""
    return readonly(np.array(a, dtype=dtype))


def freeze(obj):
    """Make every numpy array reachable from `obj` (dataclass fields, dicts, lists, tuples) read-only; returns obj."""
    if isinstance(obj, np.ndarray):
        obj.setflags(write=False)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            freeze(getattr(obj, f.name))
    elif isinstance(obj, dict):
        for v in obj.values():
            freeze(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            freeze(v)
    return obj
