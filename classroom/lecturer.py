"""The lecturer key: whoever starts the app sets `HEADLIGHT_LECTURER_KEY` (or `make run` / `make serve` generate one
and print it in the terminal, `python -m serve lecturer-key`). Every lecturer action needs it: the door's class
endpoints (`Authorization: Bearer <key>`) and the Class page's buttons. It never goes into a student's link.

    gate = Gate()                                   # one per process
    gate.check(client_address, given_key)           # "ok" | "missing" | "wrong" | "limited" | "unset"

The key is compared in constant time (`hmac.compare_digest` on the UTF-8 bytes). Wrong keys are rate-limited per
client address: after MAX_FAILURES wrong keys within WINDOW_S seconds that address gets "limited" for every try,
the right key included (otherwise the limit would still tell a right guess from a wrong one), until the oldest
failure leaves the window. The limit lives in each process's memory: behind `make serve`'s N processes an address can
try at most N x MAX_FAILURES keys a minute, against a 192-bit generated key.
"""

from __future__ import annotations

import hmac
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


class Gate:
    """The key check with the per-address limit on wrong keys; thread-safe. `key`: the key to check against (None:
    HEADLIGHT_LECTURER_KEY at each check); `clock`: injectable for the tests."""

    def __init__(self, key: str | None = None, *, clock: Callable[[], float] = time.monotonic,
                 max_failures: int = MAX_FAILURES, window_s: float = WINDOW_S) -> None:
        self._key = key
        self._clock = clock
        self.max_failures = max_failures
        self.window_s = window_s
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if times is not None and not times:
            del self._failures[address]
            return None
        return times

    def retry_after(self, address: str) -> float:
        """Seconds until this address may try again (0: it may now)."""
        with self._lock:
            now = self._clock()
            times = self._recent(address, now)
            if times is None or len(times) < self.max_failures:
                return 0.0
            return max(0.0, times[0] + self.window_s - now)

    def check(self, address: str, given: str | None) -> str:
        """ "ok"; "unset" (no key configured: nothing is possible); "missing" (no key given: not counted);
        "limited" (too many wrong keys from this address lately, whatever was given); "wrong" (counted)."""
        key = self._key if self._key is not None else lecturer_key()
        if not key:
            return "unset"
        if self.retry_after(address) > 0:
            return "limited"
        if not given:
            return "missing"
        if key_matches(given, key):
            return "ok"
        with self._lock:
            now = self._clock()
            times = self._recent(address, now)
            if times is None:
                if len(self._failures) >= MAX_ADDRESSES:  # forget the address seen least recently
                    del self._failures[min(self._failures, key=lambda a: self._failures[a][-1])]
                times = self._failures[address] = deque()
            times.append(now)
        return "wrong"
