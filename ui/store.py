"""The app's store: the loaded models, the one shared store of results, the compute slots, and `memo`, the decorator
that keeps a function's results in that store. The computations themselves (each view's) are in ui/runs.py.

- the models: one st.cache_resource per (name, device), holding no per-request state;
- results: one process-wide LRU cache bounded by bytes (analysis.cache.ByteBudgetCache, HEADLIGHT_CACHE_MB, default
  1024 MiB), shared by all sessions and never changed (the analysis package returns frozen dataclasses with
  read-only arrays). A result larger than the whole budget is refused with a message (BudgetError), never kept;
  two sessions asking for the same missing result compute it once;
- compute slots: at most MAX_RUNS script runs (and the results they compute) at once.

    @memo(spinner="cache.reading_head")            # a message key, drawn only while this session waits for it
    def attention_steps(name, device, text, block, layer, head): ...

A memoised function is keyed by its qualified name and its arguments (defaults filled in, keyword order and lists
normalised), so changing layer, head or token re-runs neither the model nor a transform.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import threading
from collections.abc import Callable, Hashable

import streamlit as st

from analysis.cache import ByteBudgetCache, budget_bytes
from i18n import error_message, t
from model import DEFAULT_MODEL, HeadlightError, get_spec, list_models, load_model, models_with

from .widgets import session_lang

# the labs' encoder-decoder: the trained one with tasks (seq2seq-tiny) when it loads, else the untrained paper-base
LAB_ENCODER_DECODERS = (*models_with(tasks=True), *models_with(kind="encoder-decoder", trained=False))
FIRST_MODELS = (DEFAULT_MODEL, *models_with(tasks=True)[:1])  # a fresh process loads them first (serve/preload.py)


def msg(key: str, /, **fmt) -> str:
    """A progress message or notice in the session's language."""
    return t(key, session_lang(), **fmt)


# ---- models ----------------------------------------------------------------------------------------------------
@st.cache_resource(max_entries=4, show_spinner=False)
def _load_model(name: str, device: str):
    return load_model(name, device)


_LOADED: set[tuple[str, str]] = set()  # (name, device) loaded at least once: no spinner, no message


def get_model(name: str, device: str):
    """The shared model (loaded once per process); a spinner in the session's language while it loads (none inside
    a memoised computation: the caller draws)."""
    if (name, device) in _LOADED or computing():
        model = _load_model(name, device)
    else:
        with st.spinner(msg("cache.loading_model")):
            model = _load_model(name, device)
    _LOADED.add((name, device))
    return model


def preload_model(name: str, device: str) -> None:
    """Load a model into the shared cache outside any script run (serve/preload.py): no spinner."""
    _load_model(name, device)
    _LOADED.add((name, device))


def is_loaded(name: str, device: str) -> bool:
    """Whether the model has been loaded in this process (asking loads nothing)."""
    return (name, device) in _LOADED


def model_or_default(name: str, device: str, notices: list[str]) -> tuple[str, object]:
    """The model asked for, or the default one with a notice when it cannot load."""
    try:
        return name, get_model(name, device)
    except (HeadlightError, ImportError, OSError) as exc:
        if name == DEFAULT_MODEL:
            raise
        notices.append(msg("error.model_fallback", name=name, msg=error_message(exc, session_lang()), default=DEFAULT_MODEL))
        return DEFAULT_MODEL, get_model(DEFAULT_MODEL, device)


def warm_model_caches() -> list[str]:
    """Each registered model's on-disk caches prepared where it declares some (ModelSpec.warm) and they are missing;
    the names of those that did work. A model whose files are missing or broken is skipped: its page says why."""
    done = []
    for name in list_models():
        spec = get_spec(name)
        try:
            if spec.warm is not None and spec.warm():
                done.append(name)
        except (HeadlightError, ImportError, OSError):
            continue
    return done


@functools.cache
def positional_kind(name: str) -> str | None:
    """How the model's positions enter ("learned", "sinusoidal", "rotary", "none"), from its config read without
    loading it (model.spec.ModelSpec.read_config); None when it cannot be read. One read per model and process."""
    config = get_spec(name).read_config()
    return None if config is None else config.positional


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


# ---- results and compute slots ---------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def results() -> ByteBudgetCache:
    """The one byte-bounded cache of results, shared by every session of this process."""
    return ByteBudgetCache(budget_bytes())


# At most this many script runs (and the results they compute) at once in a process: default one per core (more only
# wait for the CPU and multiply the working set: 48 students each opening a 512-token text at once took the process
# to 4-17 GB). The shell holds a slot for the whole run; a result computed outside a run takes one for itself.
MAX_RUNS = int(os.environ.get("HEADLIGHT_MAX_RUNS", "0")) or (os.cpu_count() or 1)
_RUNS = threading.BoundedSemaphore(MAX_RUNS)
_HELD = threading.local()  # re-entrant per thread: a result computed inside another's computation takes no second slot
_COMPUTING = threading.local()  # memoised computations running in this thread: they draw nothing


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


def computing() -> bool:
    """Whether this thread is inside a memoised computation (whose result other sessions may be waiting for: it
    must draw nothing)."""
    return getattr(_COMPUTING, "depth", 0) > 0


def _compute(call: Callable[[], object]):
    """Run one memoised computation in a compute slot, marked as such for this thread."""
    with compute_slot():
        _COMPUTING.depth = getattr(_COMPUTING, "depth", 0) + 1
        try:
            return call()
        finally:
            _COMPUTING.depth -= 1


def _normal(value) -> Hashable:
    """An argument as part of a key: lists as tuples, dicts and sets in a fixed order."""
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _normal(v)) for k, v in value.items())))
    if isinstance(value, (set, frozenset)):
        return frozenset(_normal(v) for v in value)
    return value


def memo(fn: Callable | None = None, *, spinner: str | None = None, progress: str | None = None):
    """Keep `fn`'s results in the shared store, keyed by its qualified name and its arguments.

    spinner   a message key (i18n catalogue, formatted with the call's arguments): the calling session shows it
              while the result is missing (while it computes it, or waits for another session computing it)
    progress  a message key likewise, for a progress bar: `fn` takes a `progress` callback (fraction 0..1), which
              is no part of the key; the calling session draws the bar and `fn` moves it. A session that waits for
              another's computation shows its bar at the start until the result is there.

    Nothing is drawn inside a computation (a memoised call made while another one computes draws nothing), so a
    result computed for one session never draws into another. `fn.key(*args, **kwargs)` is a call's key."""
    if fn is None:
        return lambda f: memo(f, spinner=spinner, progress=progress)
    if spinner and progress:
        raise ValueError(f"{fn.__qualname__}: a spinner or a progress bar, not both")
    name = f"{fn.__module__}.{fn.__qualname__}"
    sig = inspect.signature(fn)
    keyed = [p for p in sig.parameters if not (progress and p == "progress")]

    def bind(args, kwargs) -> dict:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    plain = len(keyed) == len(sig.parameters) and all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in sig.parameters.values())

    def key(*args, **kwargs) -> tuple:
        if plain and not kwargs and len(args) == len(keyed):  # every argument given by position: no binding needed
            out = (name, *(_normal(a) for a in args))
        else:
            arguments = bind(args, kwargs)
            out = (name, *(_normal(arguments[p]) for p in keyed))
        try:
            hash(out)
        except TypeError:
            raise TypeError(f"{name}: every argument of a memoised function must be hashable, got {out!r}") from None
        return out

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        k = key(*args, **kwargs)
        store = results()
        if (spinner is None and progress is None) or computing() or k in store:
            return store.get_or_create(k, lambda: _compute(lambda: fn(*args, **kwargs)))
        label = msg(spinner or progress, **bind(args, kwargs))
        if spinner is not None:
            with st.spinner(label):
                return store.get_or_create(k, lambda: _compute(lambda: fn(*args, **kwargs)))
        bar = st.progress(0.0, text=label)

        def tick(fraction: float) -> None:
            bar.progress(min(max(float(fraction), 0.0), 1.0), text=label)

        out = store.get_or_create(k, lambda: _compute(lambda: fn(*args, **kwargs, progress=tick)))
        bar.empty()
        return out

    wrapper.key = key
    return wrapper
