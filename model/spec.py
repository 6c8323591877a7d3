"""What the registry holds for each model: its name, labels and a loader (a callable: device -> LoadedModel)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    name: str
    label: str  # what the model picker shows
    description: str
    kind: str  # "encoder" | "decoder" | "encoder-decoder"
    trained: bool
    loader: Callable  # loader(device) -> LoadedModel; imports what it needs only when called
    path: str | None = None  # a local model folder (HEADLIGHT_MODELS, --model-dir)

    def load(self, device):
        return self.loader(device)
