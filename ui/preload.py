"""Warm a fresh app process before it serves: import what the pages import and load the default models, in the
door (ui/door.py) before Streamlit's server starts, so the first students of a lecture hall meet loaded models
instead of queueing behind `import torch` (~1 s), the rest of the stack (~1.5 s) and the model loads (~0.5 s).

It runs in the main thread, before the server thread exists: two threads importing one package at once can meet a
half-initialised module (seen here: Streamlit's plotly theme read `pandas.Series` while another thread was still
importing pandas). A failure is logged and left for the first run to meet and report in its own way (a missing
model's message, say).

    HEADLIGHT_PRELOAD=0   skip it (the first run then imports and loads on demand)
"""

from __future__ import annotations

import importlib
import logging
import os
import time

# what app_pages/*.py import (ui.shell first, as app.py does), then the models the pages need first
MODULES = ("ui.shell", "ui.cache", "ui.runs", "ui.explorer", "ui.pe_lab", "ui.mask_lab", "ui.steps_page",
           "ui.seq2seq", "ui.heads", "ui.crosslingual", "ui.tour", "ui.labs", "viz.steps", "plotly.graph_objects")
MODELS = ("minilm-l6", "seq2seq-tiny")  # the default model and the Encoder-decoder page's

log = logging.getLogger("headlight.preload")


def enabled() -> bool:
    return os.environ.get("HEADLIGHT_PRELOAD", "1") != "0"


def run() -> float:
    """Import MODULES and load MODELS into the app's model cache; returns the seconds it took."""
    t0 = time.perf_counter()
    try:
        for name in MODULES:
            importlib.import_module(name)
        from ui import cache, shell

        shell.configure_process()
        # outside a script run, Streamlit warns that there is no ScriptRunContext: noise here, the cache needs none
        quiet = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            for name in MODELS:
                try:
                    cache.preload_model(name, "cpu")
                except Exception:  # noqa: BLE001 - logged; the page that needs it shows its own message
                    log.warning("preload: %s did not load", name, exc_info=True)
        finally:
            quiet.setLevel(level)
    except Exception:  # noqa: BLE001 - the first run meets the same failure and reports it to the user
        log.exception("preload failed; the first run will import and load on demand")
    return time.perf_counter() - t0
