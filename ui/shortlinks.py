"""Short links: a small id for a long payload (a view's path and query, a lesson deck's JSON), kept on the server's
disk so every app process behind `make serve` reads what another wrote. No Streamlit here.

    sid = put("view", "/steps?text=철수는+영희에게…&lang=ko")   # 'k3m9x2ab5q'
    get("view", sid)                                              # the payload, or None

The id is content-addressed: the first ID_CHARS characters of the lower-case base32 of SHA-256(kind, payload), so
the same view always gets the same id in any process and a second `put` of it writes nothing. 10 base32 characters
are 50 bits: two different views in a class share an id with probability ~ n² / 2^51, nil for any realistic n.
Payloads over MAX_PAYLOAD_BYTES are refused (ValueError); ids that are not ID_CHARS of [a-z2-7] are never looked up
(`get` returns None), so a link cannot name a path outside the store.

Where: $HEADLIGHT_STATE_DIR/links/<kind>/<id> (default: $XDG_CACHE_HOME/headlight, else ~/.cache/headlight),
written to a temporary file and renamed into place, so a reader never sees half a payload.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tempfile
from pathlib import Path

ID_CHARS = 10
MAX_PAYLOAD_BYTES = 256 * 1024
KINDS = ("view", "deck")
_ID = re.compile(rf"[a-z2-7]{{{ID_CHARS}}}")


def state_dir() -> Path:
    """The directory that holds the links (not created here)."""
    env = os.environ.get("HEADLIGHT_STATE_DIR")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "headlight"


def link_id(kind: str, payload: str) -> str:
    """The id `put` gives this payload (pure: no disk)."""
    digest = hashlib.sha256(kind.encode() + b"\0" + payload.encode("utf-8")).digest()
    return base64.b32encode(digest).decode("ascii").lower()[:ID_CHARS]


def is_id(sid: str) -> bool:
    return isinstance(sid, str) and _ID.fullmatch(sid) is not None


def _path(kind: str, sid: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"unknown link kind {kind!r}; kinds: {', '.join(KINDS)}")
    return state_dir() / "links" / kind / sid


def put(kind: str, payload: str) -> str:
    """Store `payload` under its id and return the id (idempotent)."""
    data = payload.encode("utf-8")
    if len(data) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"payload of {len(data):,} bytes is over the {MAX_PAYLOAD_BYTES:,}-byte limit")
    sid = link_id(kind, payload)
    path = _path(kind, sid)
    if path.is_file():
        return sid
    write_atomic(path, data)
    return sid


def get(kind: str, sid: str) -> str | None:
    """The payload stored under `sid`, or None (unknown or malformed id, unreadable file)."""
    if not is_id(sid):
        return None
    try:
        data = _path(kind, sid).read_bytes()
    except (OSError, ValueError):
        return None
    if len(data) > MAX_PAYLOAD_BYTES:
        return None
    try:
        payload = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return payload if link_id(kind, payload) == sid else None  # a file changed by hand is not served


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all (a temporary file in the same folder, then os.replace): another
    process reading it never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
