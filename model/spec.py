"""What the registry holds for each model: its name, labels and its source (model/source.py), made when loaded."""

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
    source: Callable  # source() -> Source (model/source.py); imports what it needs only when called
    path: str | None = None  # a local model folder (HEADLIGHT_MODELS, --model-dir)
    scripts: tuple[str, ...] = ()  # the writing systems its vocabulary reads (model/scripts.py names); () unknown
    warm: Callable | None = None  # warm() -> bool: prepares on-disk caches that make its load fast (True: did work)

    def load(self, device):
        from .source import build

        return build(self.source(), device, self.name)

    def read_config(self):
        """The model's TransformerConfig without loading it (a preset, a config.json, a GGUF header), or None when
        it cannot be read (a broken folder: loading says why)."""
        from .source import read_config

        try:
            return read_config(self.source())
        except Exception:  # noqa: BLE001 - a folder that cannot be read has no config to show; loading reports it
            return None
