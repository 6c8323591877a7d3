"""Warm a fresh app process while its server starts: import what the pages import and load the default models in a
background thread that `python -m serve run` (serve/__main__.py) starts just before Streamlit's server, so the
first students of a lecture hall meet loaded models instead of queueing behind `import torch` (~1 s), the rest of the stack (~1.5 s) and
the model loads (~0.5 s). The port opens at once (the browser loads Streamlit's page meanwhile); script runs wait for
the preload to end (`wait()`, the first thing app.py does).

Two threads importing one package at once can meet a half-initialised module (seen here: Streamlit's plotly theme
read `pandas.Series` while another thread was still importing pandas), so Streamlit is imported before this
thread starts, and no script runs until the thread is done. A failure is logged and left for the first run to
meet and report in its own way (a missing model's message, say).

    HEADLIGHT_PRELOAD=0   skip it (the first run then imports and loads on demand)
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time

from ui.pages import page_modules

from .process import configure_process

# what the pages import (ui.shell first, as app.py does; the page table, ui/pages.py), then the models they need first
MODULES = tuple(dict.fromkeys(("ui.shell", *page_modules(), "plotly.graph_objects")))
MODELS = ("minilm-l6", "seq2seq-tiny")  # the default model and the Encoder-decoder page's
WAIT_S = 300.0  # a script run waits at most this long for the preload

log = logging.getLogger("headlight.preload")
_DONE = threading.Event()
_STARTED: list[threading.Thread] = []


def enabled() -> bool:
    return os.environ.get("HEADLIGHT_PRELOAD", "1") != "0"


def start() -> None:
    """Run the preload in a background thread (once per process)."""
    if not _STARTED:
        thread = threading.Thread(target=_background, name="headlight-preload", daemon=True)
        _STARTED.append(thread)
        thread.start()


def ready() -> bool:
    """Whether script runs go ahead at once: no preload was started, or it has ended."""
    return not _STARTED or _DONE.is_set()


def wait() -> None:
    """Block until a started preload has ended (at most WAIT_S); at once when none was started."""
    if _STARTED:
        _DONE.wait(WAIT_S)


def models() -> tuple[str, ...]:
    """The models loaded before the first run: MODELS, or HEADLIGHT_PRELOAD_MODELS (comma-separated names) for a
    lecture that starts on another one (smollm2-135m, say: ~0.56 GB more per process)."""
    named = os.environ.get("HEADLIGHT_PRELOAD_MODELS")
    return tuple(n.strip() for n in named.split(",") if n.strip()) if named is not None else MODELS


def _background() -> None:
    try:
        log.info("preloaded the app's modules and models in %.1f s", run())
    finally:
        _DONE.set()
    warm_caches()


def warm_caches() -> None:
    """After the preload, while runs go on: the models' disk caches that are missing (SmolLM2's dequantised tensors,
    model/dequant_cache.py: once per machine, ~1-3 s of one core), so the first SmolLM2 page of this server and of
    every later one reads them instead of dequantising (most of a ~9 s first SmolLM2 page on a loaded machine)."""
    from ui import store

    t0 = time.perf_counter()
    warmed = store.warm_model_caches()
    if warmed:
        log.info("prepared the disk caches of %s in %.1f s", ", ".join(warmed), time.perf_counter() - t0)


def run() -> float:
    """Import MODULES and load MODELS into the app's model cache; returns the seconds it took."""
    t0 = time.perf_counter()
    try:
        for name in MODULES:
            importlib.import_module(name)
        from ui import store

        configure_process()
        # outside a script run, Streamlit warns that there is no ScriptRunContext: noise here, the cache needs none
        quiet = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            for name in models():
                try:
                    store.preload_model(name, "cpu")
                except Exception:  # noqa: BLE001 - logged; the page that needs it shows its own message
                    log.warning("preload: %s did not load", name, exc_info=True)
        finally:
            quiet.setLevel(level)
    except Exception:  # noqa: BLE001 - the first run meets the same failure and reports it to the user
        log.exception("preload failed; the first run will import and load on demand")
    return time.perf_counter() - t0
