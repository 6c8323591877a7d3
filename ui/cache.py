"""The app's caches: the loaded models, the one shared store of results and the compute slots. Results are shared
by all sessions and never changed: the analysis package returns frozen dataclasses with read-only arrays. The
computations each view caches live in ui/runs.py (re-exported here: `cache.derived(...)`).

- the models: one st.cache_resource per (name, device), holding no per-request state;
- traces and every derived result: one process-wide LRU cache bounded by bytes (analysis.cache.ByteBudgetCache,
  HEADLIGHT_CACHE_MB, default 1024 MiB), keyed by the inputs that determine them, so changing layer, head or token
  re-runs neither the model nor a transform, and 48 texts of 512 tokens cannot grow the process past the budget.
  One result larger than the whole budget is refused with a message (BudgetError), never kept. Two sessions asking
  for the same missing result compute it once.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

import streamlit as st

from analysis import trace as traces
from analysis.batching import MicroBatcher
from analysis.cache import ByteBudgetCache, budget_bytes
from i18n import error_message, t
from model import DEFAULT_MODEL, HeadlightError, load_model
from model.trace import AttentionTrace

from .widgets import session_lang

THUMB = 24  # thumbnail side in the all-heads grid (pooled)
LAB_ENCODER_DECODERS = ("seq2seq-tiny", "paper-base")  # the labs' encoder-decoder: the trained one when it loads


def msg(key: str, **fmt) -> str:
    """A progress message or notice in the session's language."""
    return t(key, session_lang(), **fmt)


@st.cache_resource(max_entries=4, show_spinner=False)
def _load_model(name: str, device: str):
    return load_model(name, device)


_LOADED: set[tuple[str, str]] = set()  # (name, device) loaded at least once: no spinner, no message


def get_model(name: str, device: str):
    """The shared model (loaded once per process); a spinner in the session's language while it loads."""
    if (name, device) in _LOADED:
        return _load_model(name, device)
    with st.spinner(msg("cache.loading_model")):
        model = _load_model(name, device)
    _LOADED.add((name, device))
    return model


def preload_model(name: str, device: str) -> None:
    """Load a model into the shared cache outside any script run (serve/preload.py): no spinner."""
    _load_model(name, device)
    _LOADED.add((name, device))


@st.cache_resource(show_spinner=False)
def results() -> ByteBudgetCache:
    """The one byte-bounded cache of results, shared by every session of this process."""
    return ByteBudgetCache(budget_bytes())


# At most this many script runs (and the results they compute) at once in a process: default one per core (more only
# wait for the CPU and multiply the working set: 48 students each opening a 512-token text at once took the process
# to 4-17 GB). The shell holds a slot for the whole run; a result computed outside a run takes one for itself.
MAX_RUNS = int(os.environ.get("HEADLIGHT_MAX_RUNS", "0")) or (os.cpu_count() or 1)
_RUNS = threading.BoundedSemaphore(MAX_RUNS)
_HELD = threading.local()  # re-entrant per thread: a result computed inside another's factory takes no second slot


@contextlib.contextmanager
def compute_slot():
    if getattr(_HELD, "depth", 0):
        _HELD.depth += 1
        try:
            yield
        finally:
            _HELD.depth -= 1
        return
    with _RUNS:
        _HELD.depth = 1
        try:
            yield
        finally:
            _HELD.depth = 0


def _in_slot(factory: Callable[[], object]):
    with compute_slot():
        return factory()


def cached(key: tuple, factory: Callable[[], object], spinner: str | None = None):
    """The result for `key` from the shared cache, computed by `factory` (under a spinner, in a compute slot) when
    missing."""
    cache = results()
    make = lambda: _in_slot(factory)  # noqa: E731
    if spinner is None or key in cache:
        return cache.get_or_create(key, make)
    with st.spinner(spinner):
        return cache.get_or_create(key, make)


def get_trace(name: str, device: str, text: str) -> AttentionTrace:
    """One trace per (model, device, text), with the per-layer hidden states."""
    return cached(("trace", name, device, text), lambda: traces.trace(get_model(name, device), text),
                  msg("cache.running_model"))


PREFETCH_CHARS = 400  # texts up to this long go through the batcher (a sentence; ~100 tokens at most)
BATCH_ITEMS = 16  # at most this many texts per padded forward
BATCH_CHARS = 4096  # and at most this many characters: bounds the padded batch's memory


@st.cache_resource(show_spinner=False)
def _batcher(name: str, device: str) -> MicroBatcher:
    """One worker per model and device that traces the short texts waiting at once in one padded forward."""
    loaded = _load_model(name, device)
    return MicroBatcher(lambda texts: traces.trace_many(loaded, texts), max_items=BATCH_ITEMS, max_cost=BATCH_CHARS,
                        cost=len, name=f"headlight-batch-{name}")


def prefetch_trace(name: str, device: str, text: str) -> None:
    """get_trace's result for a short text, computed through the model's batcher and outside any compute slot (the
    shell calls this before the run takes its slot, so the sessions waiting for slots are batched together). Only
    for a model already loaded that traces in batches; errors are left to get_trace, which the sidebar calls."""
    if not text.strip() or len(text) > PREFETCH_CHARS or (name, device) not in _LOADED:
        return
    key = ("trace", name, device, text)
    store = results()
    if key in store or not traces.can_batch(_load_model(name, device)):
        return
    try:
        store.get_or_create(key, lambda: _batcher(name, device).submit(text))
    except HeadlightError:
        pass


def model_or_default(name: str, device: str, notices: list[str]) -> tuple[str, object]:
    """The model asked for, or the default one with a notice when it cannot load."""
    try:
        return name, get_model(name, device)
    except (HeadlightError, ImportError, OSError) as exc:
        if name == DEFAULT_MODEL:
            raise
        notices.append(msg("error.model_fallback", name=name, msg=error_message(exc, session_lang()), default=DEFAULT_MODEL))
        return DEFAULT_MODEL, get_model(DEFAULT_MODEL, device)


def lab_encoder_decoder(device: str):
    """(loaded, note): the first encoder-decoder that loads; the note says when its weights are untrained."""
    errors = []
    for name in LAB_ENCODER_DECODERS:
        try:
            loaded = get_model(name, device)
        except (HeadlightError, ImportError, OSError):
            errors.append(name)
            continue
        note = None if loaded.trained else (msg("error.lab_untrained_missing", name=name, missing=errors[0]) if errors
                                            else msg("error.lab_untrained", name=name))
        return loaded, note
    raise HeadlightError("No encoder-decoder model could be loaded: " + ", ".join(errors), key="no_encoder_decoder",
                         names=", ".join(errors))


from .runs import *  # noqa: E402, F403 - the views' cached computations, after the store they use
