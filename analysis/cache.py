"""A thread-safe LRU cache bounded by bytes, not by entries (no Streamlit here).

A count-bounded cache (`st.cache_resource(max_entries=32)`) holds 32 short sentences in a few MB but 32 traces of
512 tokens in ~2.5 GB. This one evicts the least recently used results until the sum of their sizes fits the
budget, and refuses a single result that is larger than the whole budget with a message meant for the user.

    cache = ByteBudgetCache(budget_bytes())            # HEADLIGHT_CACHE_MB, default 1024
    trace = cache.get_or_create(("minilm-l6", "cpu", text), lambda: model.trace(text))

Concurrency: one global lock guards the LRU order and the byte count; each key has its own lock, so when several
threads ask for the same missing key the factory runs once and the others wait for its result, while factories for
different keys run in parallel (the factory always runs outside the global lock). A factory that raises caches
nothing: the exception goes to the thread that ran it, and a waiting thread then tries once more itself.

Sizes come from `nbytes_of`, which counts numpy arrays and torch tensors reachable through dataclasses, dicts,
lists, tuples, sets and objects' `__dict__` (each buffer once, cycle-safe), plus a small constant per entry. An array
is counted at the size of the whole buffer it keeps alive: a slice of a tensor keeps the tensor's whole storage.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from model.errors import HeadlightError

ENV_BUDGET = "HEADLIGHT_CACHE_MB"
DEFAULT_BUDGET_MB = 1024
ENTRY_OVERHEAD = 1024  # bytes added per object graph: Python objects, lists of tokens, dict slots
_MB = 1024 * 1024


class BudgetError(HeadlightError):
    """One result needs more memory than the whole cache budget."""


def budget_bytes(default_mb: float = DEFAULT_BUDGET_MB) -> int:
    """The budget from the environment (HEADLIGHT_CACHE_MB, in MiB; invalid or <= 0 falls back to the default)."""
    raw = os.environ.get(ENV_BUDGET, "").strip()
    try:
        mb = float(raw) if raw else float(default_mb)
    except ValueError:
        mb = float(default_mb)
    if not mb > 0 or mb != mb or mb == float("inf"):
        mb = float(default_mb)
    return int(mb * _MB)


DEFAULT_BUDGET_BYTES = budget_bytes()


def _is_tensor(obj: Any) -> bool:
    """A torch tensor (torch is not imported here)."""
    return type(obj).__module__.startswith("torch") and hasattr(obj, "untyped_storage")


def _root(arr: np.ndarray) -> np.ndarray:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _buffer(obj: Any) -> tuple[int, int] | None:
    """(identity, bytes) of the memory a numpy array or torch tensor keeps alive; None for anything else.

    That is the whole buffer behind it, not only the part it shows: a numpy view keeps its base array, and an array
    made from a tensor (`tensor.numpy()`) or a tensor view keeps the tensor's whole storage. One head sliced from a
    (1, heads, n, n) tensor of attention scores shows n x n numbers but keeps all heads' (12x at 12 heads). The
    identity (the storage's address, the base array's id) counts a buffer once however many views reach it."""
    if isinstance(obj, np.ndarray):
        root = _root(obj)
        if _is_tensor(root.base):
            obj = root.base  # memory owned by a tensor: its storage
        else:
            return id(root), max(int(obj.nbytes), int(root.nbytes))
    elif not _is_tensor(obj):
        return None
    try:
        storage = obj.untyped_storage()
        return storage.data_ptr() or id(obj), int(storage.nbytes())
    except Exception:  # noqa: BLE001 - a meta/sparse tensor: count its elements, or nothing rather than fail
        try:
            return id(obj), int(obj.element_size()) * int(obj.nelement())
        except Exception:  # noqa: BLE001
            return id(obj), 0


# scalars, and what a value may reference without owning: classes, modules, functions (their globals are not its)
_SKIP = (bool, int, float, complex, type, types.ModuleType, types.FunctionType, types.MethodType,
         types.BuiltinFunctionType, types.CodeType)


def nbytes_of(obj: Any, *, overhead: int = ENTRY_OVERHEAD) -> int:
    """Approximate bytes held by `obj`: every numpy array / torch tensor found recursively in dataclasses, dicts,
    lists, tuples, sets and objects' `__dict__` / `__slots__`, each at the size of the whole buffer it keeps alive
    (a view: its base array; an array made from a tensor, or a tensor view: the tensor's whole storage), each buffer
    counted once, plus `overhead`.
    Strings and bytes count their length; classes, modules and functions are not followed. Cycle-safe; iterative,
    so deep nesting never hits the recursion limit."""
    seen: set[int] = set()
    buffers: dict[int, int] = {}
    other = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if o is None or isinstance(o, _SKIP):
            continue
        if id(o) in seen:
            continue
        seen.add(id(o))
        buf = _buffer(o)
        if buf is not None:
            key, n = buf
            buffers[key] = max(buffers.get(key, 0), n)
            continue
        if isinstance(o, (str, bytes, bytearray, memoryview)):
            other += len(o) if not isinstance(o, memoryview) else o.nbytes
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
            continue
        if isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
            continue
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            stack.extend(getattr(o, f.name, None) for f in dataclasses.fields(o))
        d = getattr(o, "__dict__", None)
        if isinstance(d, dict):
            stack.extend(d.values())
        for slot in getattr(type(o), "__slots__", ()) or ():
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                stack.append(getattr(o, slot, None))
    return sum(buffers.values()) + other + overhead


@dataclasses.dataclass
class _Entry:
    value: Any
    nbytes: int


class ByteBudgetCache:
    """Thread-safe LRU cache whose entries together stay within `budget_bytes`.

    get_or_create(key, factory)  the cached value, or factory() computed once (per-key lock) and stored
    get(key, default=None)        the cached value (marked recently used) or default; never computes
    nbytes / budget_bytes / len() bytes held, the budget, number of entries
    clear(), stats()              drop everything; counters as a dict
    """

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES, *, sizeof: Callable[[Any], int] = nbytes_of,
                 name: str = "cache"):
        if int(budget_bytes) <= 0:
            raise ValueError(f"budget_bytes must be positive, got {budget_bytes!r}")
        self._budget = int(budget_bytes)
        self._sizeof = sizeof
        self.name = name
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._key_locks: dict[Hashable, list] = {}  # key -> [lock, number of threads using it]
        self._nbytes = 0
        self._hits = self._misses = self._evictions = self._rejected = 0

    # ---- reading --------------------------------------------------------------------------------------------
    @property
    def budget_bytes(self) -> int:
        return self._budget

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._nbytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def keys(self) -> list[Hashable]:
        """Keys from least to most recently used."""
        with self._lock:
            return list(self._entries)

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return default
            self._entries.move_to_end(key)
            self._hits += 1
            return entry.value

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"entries": len(self._entries), "nbytes": self._nbytes, "budget_bytes": self._budget,
                    "hits": self._hits, "misses": self._misses, "evictions": self._evictions,
                    "rejected": self._rejected}

    # ---- writing --------------------------------------------------------------------------------------------
    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._nbytes = 0

    def get_or_create(self, key: Hashable, factory: Callable[[], Any]) -> Any:
        """The value for `key`; on a miss `factory()` runs once (concurrent callers for the same key wait for it).
        Raises BudgetError when the new value alone is larger than the budget (nothing is evicted then)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return entry.value
            slot = self._key_locks.setdefault(key, [threading.Lock(), 0])
            slot[1] += 1
        try:
            with slot[0]:
                with self._lock:  # another thread may have filled it while we waited for the key lock
                    entry = self._entries.get(key)
                    if entry is not None:
                        self._entries.move_to_end(key)
                        self._hits += 1
                        return entry.value
                    self._misses += 1
                value = factory()  # outside the global lock: other keys are served meanwhile
                size = int(self._sizeof(value))
                if size > self._budget:
                    with self._lock:
                        self._rejected += 1
                    raise BudgetError(
                        f"This input needs about {_fmt_mb(size)} MB, more than the cache budget of "
                        f"{_fmt_mb(self._budget)} MB ({ENV_BUDGET}). Try a shorter text, or start the app with a "
                        f"larger {ENV_BUDGET}.", key="budget", need=_fmt_mb(size), budget=_fmt_mb(self._budget),
                        env=ENV_BUDGET)
                with self._lock:
                    self._insert(key, value, size)
                return value
        finally:
            with self._lock:
                slot[1] -= 1
                if slot[1] == 0 and self._key_locks.get(key) is slot:
                    del self._key_locks[key]

    def _insert(self, key: Hashable, value: Any, size: int) -> None:
        """Store and evict least recently used entries until the total fits (caller holds the global lock)."""
        old = self._entries.pop(key, None)
        if old is not None:
            self._nbytes -= old.nbytes
        while self._entries and self._nbytes + size > self._budget:
            _, evicted = self._entries.popitem(last=False)
            self._nbytes -= evicted.nbytes
            self._evictions += 1
        self._entries[key] = _Entry(value, size)
        self._nbytes += size

    def __repr__(self) -> str:
        s = self.stats()
        return (f"ByteBudgetCache({self.name!r}, {s['entries']} entries, {_fmt_mb(s['nbytes'])} / "
                f"{_fmt_mb(s['budget_bytes'])} MB)")


def _fmt_mb(n: int) -> str:
    mb = n / _MB
    return f"{mb:,.0f}" if mb >= 10 else f"{mb:.1f}"
