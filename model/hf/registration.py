"""Local folders become registry entries only when whoever starts the app names them:
HEADLIGHT_MODELS=/path/a,/path/b (read when model.registry is imported) or `--model-dir` on the CLI.

A folder that cannot be read is still registered (its description says why), so the app starts and
loading it raises the clear error. Names are folder names; a taken name gets a suffix (-2, -3, ...).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import HeadlightError
from .folder import FAMILIES, inspect

ENV_VAR = "HEADLIGHT_MODELS"
LOADER = "model.hf.load:load_local"


def _free_name(base: str, taken) -> str:
    base = base or "local-model"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    return name


def register_folder(path: str | os.PathLike):
    """Register one folder (no weights are read); returns its ModelSpec. The same folder twice gives one entry."""
    from ..registry import REGISTRY, ModelSpec, register

    raw = os.path.abspath(os.path.expanduser(str(path)))
    for spec in REGISTRY.values():
        if spec.path == raw:
            return spec
    try:
        folder = inspect(raw)
        kind, mt, problem = folder.kind, folder.model_type, None
    except (HeadlightError, OSError) as e:  # never crash the app's start: loading says it again
        kind, mt, problem = "encoder", None, str(e)
    name = _free_name(Path(raw).name, REGISTRY)
    if problem is None:
        label = f"{name} (local {mt})"
        desc = f"A local {mt} folder ({kind}), {raw}, run by the project's own modules."
    else:
        label, desc = f"{name} (local folder, cannot be loaded)", f"Cannot be loaded: {problem}"
    return register(ModelSpec(name, label, desc, kind, True, LOADER, path=raw))


def folders_from_env(value: str | None = None) -> list[str]:
    value = os.environ.get(ENV_VAR, "") if value is None else value
    return [p.strip() for p in value.split(",") if p.strip()]


def register_local_models(value: str | None = None) -> list:
    """Register every folder named in HEADLIGHT_MODELS (or `value`); returns their ModelSpecs."""
    return [register_folder(p) for p in folders_from_env(value)]


__all__ = ["ENV_VAR", "FAMILIES", "register_folder", "register_local_models"]
