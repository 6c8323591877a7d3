"""Results a lecturer saved with a lesson deck, on the server's disk, keyed by what they were computed from, so a class
that opens the slide reads them instead of computing them again (the patching grids: ~10 s of a CPU each). No
Streamlit here; every app process behind `make serve` reads what another wrote.

    put("patching", ("smollm2-135m", clean, corrupt, " Paris", " Rome"), json_text)
    get("patching", ("smollm2-135m", clean, corrupt, " Paris", " Rome"))   # the JSON text, or None

Where: $HEADLIGHT_STATE_DIR/saved/<kind>/<sha256 of the key> (the short links' directory, ui/shortlinks.py), written
to a temporary file and renamed into place. Payloads are JSON text (analysis/cause.py), never a pickle, at most
MAX_BYTES; the file also holds its key, and a file whose key differs is not served.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .shortlinks import state_dir, write_atomic

KINDS = ("patching",)
MAX_BYTES = 512 * 1024


def _name(kind: str, key: tuple) -> tuple[Path, str]:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    text = json.dumps([kind, *key], ensure_ascii=False)
    return state_dir() / "saved" / kind / hashlib.sha256(text.encode("utf-8")).hexdigest()[:40], text


def put(kind: str, key: tuple, payload: str) -> None:
    """Store `payload` (JSON text) under `key` (idempotent; a ValueError over MAX_BYTES)."""
    path, text = _name(kind, key)
    data = json.dumps({"key": text, "payload": payload}, ensure_ascii=False).encode("utf-8")
    if len(data) > MAX_BYTES:
        raise ValueError(f"payload of {len(data):,} bytes is over the {MAX_BYTES:,}-byte limit")
    write_atomic(path, data)


def get(kind: str, key: tuple) -> str | None:
    """The payload saved under `key`, or None (never saved, unreadable, or another key's)."""
    path, text = _name(kind, key)
    try:
        data = path.read_bytes()
        if len(data) > MAX_BYTES:
            return None
        obj = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(obj, dict) or obj.get("key") != text or not isinstance(obj.get("payload"), str):
        return None
    return obj["payload"]
