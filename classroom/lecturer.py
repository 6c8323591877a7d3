"""The lecturer key: whoever starts the app sets `HEADLIGHT_LECTURER_KEY` (or `make run` / `make serve` generate one
and print it in the terminal, `python -m serve lecturer-key`). Every lecturer action needs it: the door's class
endpoints (`Authorization: Bearer <key>`) and the Class page's buttons. It never goes into a student's link.

    gate = Gate(failures=shared_store)              # the wrong keys counted in the class store (every process)
    gate.check(client_address, given_key)           # "ok" | "missing" | "wrong" | "limited" | "unset"

The key is compared in constant time (`hmac.compare_digest` on the UTF-8 bytes), first: **the right key is always
"ok"**, whatever wrong keys came before from the same address (a lecture hall behind one campus address shares one
address: ten students' guesses must never lock the lecturer out, issue 34). Wrong keys are counted per client
address: after MAX_FAILURES of them within WINDOW_S seconds, that address's further wrong keys are "limited" (the
door answers 429 with Retry-After, the Class page asks to wait) until the oldest leaves the window. The count lives
in the class store (classroom/store.py `key_failure`), so it holds across every process that shares the store
(`make serve`'s several processes, several hosts on PostgreSQL); a Gate without a store counts in its own memory.
When the store cannot be reached, a wrong key is still "wrong" (and logged) and the right key still "ok".

What keeps the key from being guessed is its length, not the limit (a limit that never refuses the right key tells a
right guess from a wrong one at whatever rate the server answers): a generated key has 192 bits; a key set by hand
should be as long (at least MIN_KEY_CHARS characters; a shorter one is logged as weak once per process).
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable

KEY_ENV = "HEADLIGHT_LECTURER_KEY"
KEY_BYTES = 24  # a generated key: 192 bits, 32 URL-safe characters
MAX_FAILURES = 10  # wrong keys per address ...
WINDOW_S = 60.0  # ... in this many seconds, then "limited"
MAX_ADDRESSES = 10_000  # addresses remembered (the oldest are forgotten first)
MAX_KEY_CHARS = 1024  # a longer "key" is wrong without being compared
MIN_KEY_CHARS = 20  # a key set by hand shorter than this is logged as weak
LOG = logging.getLogger("headlight.lecturer")


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def lecturer_key() -> str | None:
    """The key this process was started with, or None (then no lecturer action is possible)."""
    key = (os.environ.get(KEY_ENV) or "").strip()
    return key or None


def key_matches(given: str | None, key: str | None = None) -> bool:
    """Whether `given` is the lecturer key, compared in constant time; never with an unset key."""
    key = lecturer_key() if key is None else key
    if not key or not isinstance(given, str) or not given or len(given) > MAX_KEY_CHARS:
        return False
    return hmac.compare_digest(given.encode("utf-8"), key.encode("utf-8"))


def bearer(authorization: str | bytes | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value, or None."""
    if isinstance(authorization, bytes):
        authorization = authorization.decode("latin-1")
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class MemoryFailures:
    """Wrong keys per address in this process's memory (a Gate without a store; the tests); thread-safe."""

    def __init__(self) -> None:
        self._times: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def key_failure(self, address: str, now: float, window_s: float, limit: int) -> int:
        with self._lock:
            times = self._times.setdefault(address, deque())
            while times and times[0] <= now - window_s:
                times.popleft()
            before = len(times)
            if before < limit:
                times.append(now)
            if len(self._times) > MAX_ADDRESSES:  # forget the address seen least recently
                del self._times[min(self._times, key=lambda a: self._times[a][-1] if self._times[a] else -1.0)]
            return before

    def key_failures(self, address: str, now: float, window_s: float) -> list[float]:
        with self._lock:
            return [x for x in self._times.get(address, ()) if x > now - window_s]


class Gate:
    """The key check with the per-address limit on wrong keys. `key`: the key to check against (None:
    HEADLIGHT_LECTURER_KEY at each check); `failures`: where wrong keys are counted: an object with
    `key_failure` and `key_failures` (classroom.store.ClassStore), or a function returning one (called at each
    check: the process's shared store, opened on first use); None: this Gate's memory. `clock`: seconds since the
    epoch (shared by processes), injectable for the tests."""

    def __init__(self, key: str | None = None, *, failures=None, clock: Callable[[], float] = time.time,
                 max_failures: int = MAX_FAILURES, window_s: float = WINDOW_S) -> None:
        self._key = key
        self._failures = failures if failures is not None else MemoryFailures()
        self._clock = clock
        self.max_failures = max_failures
        self.window_s = window_s
        self._warned = False

    def _backend(self):
        f = self._failures
        return f if hasattr(f, "key_failure") else f()

    def retry_after(self, address: str) -> float:
        """Seconds until this address's wrong keys are counted again instead of "limited" (0: now)."""
        now = self._clock()
        try:
            times = self._backend().key_failures(address, now, self.window_s)
        except Exception:  # noqa: BLE001 - the store is down: nothing to wait for
            LOG.exception("the wrong-key count could not be read")
            return 0.0
        if len(times) < self.max_failures:
            return 0.0
        return max(0.0, times[0] + self.window_s - now)

    def check(self, address: str, given: str | None) -> str:
        """ "ok" (the right key: always, whatever came before); "unset" (no key configured: nothing is possible);
        "missing" (no key given: not counted); "wrong" (counted); "limited" (wrong, and MAX_FAILURES wrong keys came
        from this address within WINDOW_S: not counted)."""
        key = self._key if self._key is not None else lecturer_key()
        if not key:
            return "unset"
        if not self._warned and len(key) < MIN_KEY_CHARS:
            self._warned = True
            LOG.warning("the lecturer key has %d characters: a key under %d characters can be guessed "
                        "(python -m serve lecturer-key makes a 32-character one)", len(key), MIN_KEY_CHARS)
        if not given:
            return "missing"
        if key_matches(given, key):
            return "ok"
        try:
            before = self._backend().key_failure(address, self._clock(), self.window_s, self.max_failures)
        except Exception:  # noqa: BLE001 - the store is down: the wrong key is refused all the same
            LOG.exception("a wrong lecturer key could not be counted")
            return "wrong"
        return "limited" if before >= self.max_failures else "wrong"
