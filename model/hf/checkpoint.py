"""Read the tensors of a model folder (safetensors only, never a pickle) and hand them out by name,
each checked against the shape the module expects."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from ..errors import WeightsError


class Checkpoint:
    """name -> float32 tensor, read from one or more safetensors files. `prefix` (e.g. "bert.", "model.") is
    found from an anchor tensor, so base models and task-head models both load."""

    def __init__(self, files: tuple[Path, ...] | list[Path], *, anchor: str | None = None):
        self.tensors: dict[str, torch.Tensor] = {}
        for f in files:
            try:
                with safe_open(str(f), framework="pt") as st:
                    for name in st.keys():
                        self.tensors[name] = st.get_tensor(name)
            except (SafetensorError, OSError, ValueError, RuntimeError) as e:
                raise WeightsError(f"{str(f)!r} cannot be read as safetensors ({e}).", key="hf_weights_invalid",
                                   path=str(f), detail=str(e)) from None
        self.source = str(files[0].parent) if files else ""
        self.prefix = self.find_prefix(anchor) if anchor else ""

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
            raise WeightsError(f"{self.source}: the weights lack the tensor {self.prefix + name!r} "
                               f"(expected shape {tuple(shape)}).", key="hf_tensor_missing", path=self.source,
                               tensor=self.prefix + name, expected=str(tuple(shape)))
        t = self.tensors[key]
        if tuple(t.shape) != tuple(shape):
            raise WeightsError(f"{self.source}: tensor {key!r} has shape {tuple(t.shape)}, expected "
                               f"{tuple(shape)} from config.json.", key="hf_tensor_shape", path=self.source,
                               tensor=key, found=str(tuple(t.shape)), expected=str(tuple(shape)))
        return t.to(torch.float32)

    def optional(self, name: str, shape: tuple[int, ...]) -> torch.Tensor | None:
        return self.get(name, shape) if self.has(name) else None


def load_state(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Copy `state` into `module` (strict on the keys of `state`; a mismatch is a bug here, not user input)."""
    own = module.state_dict()
    missing = sorted(set(own) - set(state))
    extra = sorted(set(state) - set(own))
    if missing or extra:
        raise RuntimeError(f"internal: hf state map: missing {missing[:5]}, unexpected {extra[:5]}")
    module.load_state_dict(state, strict=True)
