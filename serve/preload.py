"""Warm a fresh app process while its server starts: import what the pages import and load the default models in a
background thread that `python -m serve run` (serve/__main__.py) starts just before Streamlit's server, so the
first students of a lecture hall meet loaded models instead of queueing behind `import torch` (~1 s), the rest of the stack (~1.5 s) and
the model loads (~0.5 s). The port opens at once (the browser loads Streamlit's page meanwhile); script runs wait for
the preload to end (`wait()`, the first thing app.py does).

Two threads importing one package at once can meet a half-initialised module (seen here: Streamlit's plotly theme
read `pandas.Series` while another thread was still importing pandas), so Streamlit is imported before this
thread starts, and no script runs until the thread is done. A failure is logged and left for the first run to
meet and report in its own way (a missing model's message, say).

Then, for class mode (issue 34: "a student joining a room, cold: 7-10 s"), the same thread keeps looking every
ROOM_WATCH_S seconds for the models of the live class rooms (classroom/store.py `live_models`) and loads any this
process lacks: a lecturer who opens a room on multilingual-e5-small loads it in her own process, and every other
process of `make serve` loads it within seconds, before the students have scanned the code (the first student of a
process waited ~6 s for the load, on a loaded 2-core machine). Only a process that has a class store looks:
HEADLIGHT_CLASS_DB, or the SQLite file of an earlier class (none is made here). The preload also does once, outside
any student's run, three things Streamlit and plotly do on their first use in a process: Streamlit's check that it
runs under `streamlit run` (an `inspect.stack()` of the first run's deep stack: ~0.15 s of the first student's run),
plotly's first encoding of a figure (narwhals scans every installed package's entry points: ~0.14 s), and the import
of PIL that st.set_page_config's favicon makes (~0.16 s; each measured in a first run under cProfile, on a loaded
machine).

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
WAIT_S = 300.0  # a script run waits at most this long for the preload
ROOM_WATCH_S = 3.0  # how often a process looks for the models of live class rooms
MAX_ROOM_MODELS = 2  # the models of the newest rooms that a process keeps loaded for them
RUNTIME_WAIT_S = 30.0  # the warm-up waits at most this long for Streamlit's server to exist

log = logging.getLogger("headlight.preload")
_DONE = threading.Event()
_STARTED: list[threading.Thread] = []
_FAILED: set[str] = set()  # room models that would not load in this process


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
    """The models loaded before the first run: default_models(), or HEADLIGHT_PRELOAD_MODELS (comma-separated names)
    for a lecture that starts on another one (smollm2-135m, say: ~0.56 GB more per process)."""
    named = os.environ.get("HEADLIGHT_PRELOAD_MODELS")
    return tuple(n.strip() for n in named.split(",") if n.strip()) if named is not None else default_models()


def default_models() -> tuple[str, ...]:
    """The default model and the Encoder-decoder page's (ui.store.FIRST_MODELS, asked of the registry); the import
    of the app's modules is the preload's own work, so it happens here, when asked, not at this module's import."""
    from ui import store

    return store.FIRST_MODELS


def _background() -> None:
    try:
        log.info("preloaded the app's modules and models in %.1f s", run())
        warm_up()
    finally:
        _DONE.set()
    warm_caches()
    watch_rooms()


def warm_caches() -> None:
    """After the preload, while runs go on: the models' disk caches that are missing (SmolLM2's dequantised tensors,
    model/dequant_cache.py: once per machine, ~1-3 s of one core), so the first SmolLM2 page of this server and of
    every later one reads them instead of dequantising (most of a ~9 s first SmolLM2 page on a loaded machine)."""
    from ui import store

    t0 = time.perf_counter()
    try:
        warmed = store.warm_model_caches()
    except Exception:  # noqa: BLE001 - only time is at stake; the watch of the class rooms goes on
        log.warning("preload: the models' disk caches could not be prepared", exc_info=True)
        return
    if warmed:
        log.info("prepared the disk caches of %s in %.1f s", ", ".join(warmed), time.perf_counter() - t0)


def warm_up() -> None:
    """Streamlit's and plotly's first-use work, here rather than in the first student's run: PIL's import (for the
    favicon), plotly's first encoding of a figure (one of the app's own, as st.plotly_chart encodes it), and
    Streamlit's one check whether it runs under `streamlit run`, which its first element makes with `inspect.stack()` (here on this thread's short stack;
    once the server exists, so that it finds it and prints nothing)."""
    try:
        import numpy as np
        import plotly.io
        import streamlit as st
        from PIL import Image, ImageFile  # noqa: F401 - st.set_page_config's favicon (image_to_url) imports them
        from streamlit import runtime

        from viz.heatmap import heatmap

        # as st.plotly_chart encodes a figure: narwhals scans every package's entry points once (~0.14 s)
        plotly.io.to_json(heatmap(np.zeros((2, 2), dtype=np.float32), ["a", "b"], ["a", "b"]), validate=False)
        deadline = time.monotonic() + RUNTIME_WAIT_S
        while not runtime.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if runtime.exists():
            st.empty()  # outside a script run: no element is sent anywhere
    except Exception:  # noqa: BLE001 - only time is at stake
        log.warning("preload: the warm-up failed", exc_info=True)


def room_models() -> list[str]:
    """The models of the live class rooms (newest first, at most MAX_ROOM_MODELS) when this process has a class
    store: HEADLIGHT_CLASS_DB, or the SQLite file of an earlier class; [] otherwise (no file is made)."""
    from classroom import store as cs

    if not os.environ.get(cs.DB_ENV) and not cs.default_sqlite_path().exists():
        return []
    return cs.shared_store().live_models(MAX_ROOM_MODELS)


def watch_once(device: str) -> list[str]:
    """Load the live rooms' models this process lacks (on `device`, the students' "auto"); the ones it loaded."""
    from ui import state, store

    loaded = []
    for name in room_models():
        if name in _FAILED or name not in state.available_models() or store.is_loaded(name, device):
            continue
        t0 = time.perf_counter()
        try:
            store.preload_model(name, device)
        except Exception:  # noqa: BLE001 - not tried again; the students' runs show the model's own message
            _FAILED.add(name)
            log.warning("preload: %s did not load for a class room", name, exc_info=True)
            continue
        log.info("loaded %s for a class room in %.1f s", name, time.perf_counter() - t0)
        loaded.append(name)
    return loaded


def watch_rooms(stop: threading.Event | None = None) -> None:
    """watch_once every ROOM_WATCH_S seconds until `stop` (never, in the app: a daemon thread). A failure (the
    database is down, a model will not load) is logged once per kind and the watch goes on."""
    from model.device import resolve_device

    stop = stop or threading.Event()
    seen: set[str] = set()
    try:
        device = str(resolve_device("auto"))
    except Exception:  # noqa: BLE001 - a bad device setting: the runs report it
        device = "cpu"
    while not stop.wait(ROOM_WATCH_S):
        try:
            watch_once(device)
        except Exception as exc:  # noqa: BLE001 - logged, and looked at again next time
            if type(exc).__name__ not in seen:
                seen.add(type(exc).__name__)
                log.warning("preload: the class rooms' models could not be loaded", exc_info=True)


def run() -> float:
    """Import MODULES and load models() into the app's model cache; returns the seconds it took."""
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
