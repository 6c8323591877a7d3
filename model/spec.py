"""What the registry holds for each model: its name, labels, what it can do (model/abilities.py) and its source
(model/source.py), built when loaded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .abilities import Abilities


@dataclass(frozen=True)
class ModelSpec:
    name: str
    label: str  # what the model picker shows
    description: str
    abilities: Abilities  # its kind, the scripts it reads, tasks, shortlist, translation ... (declared, never guessed)
    trained: bool
    source: Callable  # source() -> Source (model/source.py); imports what it needs only when called
    path: str | None = None  # a local model folder (HEADLIGHT_MODELS, --model-dir)
    warm: Callable | None = None  # warm() -> bool: prepares on-disk caches that make its load fast (True: did work)

    @property
    def kind(self) -> str:
        """"encoder" | "decoder" | "encoder-decoder" (its declared abilities')."""
        return self.abilities.kind

    @property
    def scripts(self) -> tuple[str, ...]:
        """The writing systems its vocabulary reads (model/scripts.py names); () unknown."""
        return self.abilities.reads

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
