"""Headlight's model package: a from-scratch Transformer that returns its attention.

No Streamlit here. Public entry points:
    load_model(name, device=None) -> LoadedModel;  model.trace(text) -> AttentionTrace
"""

from .abilities import Abilities
from .config import PRESETS, TransformerConfig, preset
from .errors import HeadlightError, InputError, WeightsError
from .registry import DEFAULT_MODEL, REGISTRY, get_spec, list_models, load_model, models_with, register_local_models
from .trace import AttentionTrace

__all__ = [
    "PRESETS", "TransformerConfig", "preset", "HeadlightError", "InputError", "WeightsError",
    "DEFAULT_MODEL", "REGISTRY", "get_spec", "list_models", "load_model", "models_with", "register_local_models",
    "AttentionTrace", "Abilities",
]
