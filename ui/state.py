"""Shared controls and state for every page (written once, used by all pages).

Contract used by pages:
    view = sidebar()          # draws the shared sidebar, syncs the URL, returns a View
    view.model                # LoadedModel (cached once per process, shared)
    view.trace                # AttentionTrace for (model, text), or None when there is no valid text
    view.layer, view.head, view.token, view.lecture, view.text, view.model_name, view.device

Caching: the model is an st.cache_resource shared by all sessions, so it must
hold no per-request state (it holds none: attention is returned, not stored).
Traces are st.cache_resource too (bounded): an AttentionTrace is treated as
immutable, and cache_resource avoids pickling ~75 MB of attention at 512 tokens
on every rerun, which cache_data would do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from model import DEFAULT_MODEL, load_model
from model.trace import AttentionTrace

DEFAULT_TEXT = "The animal didn't cross the street because it was tired"


@st.cache_resource(max_entries=4, show_spinner="Loading model…")
def get_model(name: str, device: str):
    """Shared by all sessions: must hold no per-request state."""
    return load_model(name, device)


@st.cache_resource(max_entries=32, show_spinner="Running the model…")
def get_trace(name: str, device: str, text: str, task: str | None = None) -> AttentionTrace:
    kw = {"task": task} if task else {}
    return get_model(name, device).trace(text, intermediates=True, **kw)


@dataclass
class View:
    text: str
    model_name: str
    device: str
    layer: int = 0
    head: int = 0
    token: int = 0
    lecture: bool = False
    model: object = None
    trace: AttentionTrace | None = None
    notices: list[str] = field(default_factory=list)


def sidebar() -> View:
    """Minimal first version; the app issue elaborates it (presets, URL sync, validation)."""
    text = st.sidebar.text_area("Sentence", DEFAULT_TEXT, key="text")
    view = View(text=text, model_name=DEFAULT_MODEL, device="cpu")
    view.model = get_model(view.model_name, view.device)
    if text.strip():
        view.trace = get_trace(view.model_name, view.device, text)
    return view
