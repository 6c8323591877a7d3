"""Local models as registry entries: `folder_spec(path, taken)` inspects a Hugging Face-format folder or a GGUF file
(no weights are read) and returns its ModelSpec. Whoever starts the app names the folders (HEADLIGHT_MODELS=/path/a,/path/b, `make run MODELS=...`,
`--model-dir` on the CLI); the entry points register the specs (model.registry.register_local_models).

A folder that cannot be read still gets a spec (its description says why), so the app starts and loading it raises
the clear error. Names are folder names; a taken name gets a suffix (-2, -3, ...).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from ..abilities import Abilities
from ..errors import HeadlightError
from ..spec import ModelSpec
from .folder import inspect

ENV_VAR = "HEADLIGHT_MODELS"


def _free_name(base: str, taken: Collection[str]) -> str:
    base = base or "local-model"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    return name


def _source(path: str, name: str):
    def source():
        if path.lower().endswith(".gguf"):
            from ..gguf import gguf_source

            return gguf_source(path, name)
        from .load import folder_source

        return folder_source(path, name)

    return source


def _inspect_gguf(path: str) -> tuple[str, str]:
    """(kind, architecture) of a GGUF file, from its header (no tensor is read)."""
    from ..gguf import GGUFFile, gguf_config
    from .folder import check_size

    check_size(Path(path), [path])
    f = GGUFFile(path)
    try:
        gguf_config(f)
        return "decoder", f"{f.metadata['general.architecture']} GGUF"
    finally:
        f.close()


def folder_spec(path: str | os.PathLike, taken: Collection[str] = ()) -> ModelSpec:
    """The spec of one folder, named after it (not in `taken`)."""
    raw = os.path.abspath(os.path.expanduser(str(path)))
    gguf = raw.lower().endswith(".gguf")
    try:
        if gguf:
            kind, mt = _inspect_gguf(raw)
        else:
            folder = inspect(raw)
            kind, mt = folder.kind, folder.model_type
        problem = None
    except (HeadlightError, OSError) as e:  # never crash the app's start: loading says it again
        kind, mt, problem = "encoder", None, str(e)
    name = _free_name(Path(raw).stem if gguf else Path(raw).name, taken)
    if problem is None:
        label = f"{name} (local {mt})"
        desc = f"A local {mt} {'file' if gguf else 'folder'} ({kind}), {raw}, run by the project's own modules."
    else:
        label, desc = f"{name} (local folder, cannot be loaded)", f"Cannot be loaded: {problem}"
    return ModelSpec(name, label, desc, Abilities(kind), True, _source(raw, name), path=raw)


def folders_from_env(value: str | None = None) -> list[str]:
    value = os.environ.get(ENV_VAR, "") if value is None else value
    return [p.strip() for p in value.split(",") if p.strip()]
