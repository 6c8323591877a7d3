"""Shared controls and state for every page (written once, used by all pages).

Contract used by pages:
    view = sidebar()          # draws the shared sidebar, syncs the URL, returns a View
    view.model                # LoadedModel (cached once per process, shared)
    view.trace                # AttentionTrace (with intermediates) for (model, text), or None when there is no valid text
    view.layer, view.head     # counted from 0, already clamped to the model (and block) ranges
    view.token                # index of the selected query token (a row of view.block's attention)
    view.block                # "encoder" | "decoder_self" | "cross" (always "encoder" for encoder-only models)
    view.lecture, view.text, view.model_name, view.device ("cpu" / "cuda", resolved), view.notices

URL state: the query string mirrors `text`, `model`, `layer`, `head`, `token` (and `block`, `device`, `lecture`
when they differ from the defaults). It is read once per session, on the first run, and every value is validated:
an invalid one (layer 99, head -1, an unknown model, 100,000 characters of text) falls back to its default with a
visible notice. The page itself is in the URL path, as `st.navigation` gives it.

Caching: the model is an st.cache_resource shared by all sessions, so it must hold no per-request state (it holds
none: attention is returned, not stored). Traces are st.cache_resource too (bounded): an AttentionTrace is treated
as immutable, and cache_resource avoids pickling ~75 MB of attention at 512 tokens on every rerun, which
cache_data would do. Changing layer, head or token therefore never re-runs the model.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import streamlit as st
import torch

from model import DEFAULT_MODEL, HeadlightError, get_spec, list_models, load_model
from model.device import available_devices, resolve_device
from model.examples import DEFAULT_TEXT, EXAMPLE_SENTENCES
from model.trace import BLOCK_LABELS, AttentionTrace

_APP = Path(__file__).resolve().parents[1] / "app.py"
PRESETS = EXAMPLE_SENTENCES
MAX_TEXT_CHARS = 20_000  # the text box refuses more; a URL with more falls back to the default text
MAX_URL_TEXT = 4_000  # longer texts are not written into the link (browsers and servers cap URL length)
DEVICE_CHOICES = ("auto", "cpu", "cuda")
RENDER_MS: collections.deque = collections.deque(maxlen=256)  # (page, server-side ms per run), filled by pages

# keys of the shared widgets (stable: tests and the URL address them)
K_TEXT, K_MODEL, K_DEVICE, K_LAYER, K_HEAD, K_TOKEN, K_LECTURE, K_BLOCK, K_PRESET = (
    "text", "model", "device", "layer", "head", "token", "lecture", "block", "preset")
_URL_DONE, _URL_NOTICES, _PENDING, _TRACE_KEY = "_hl_url_done", "_hl_url_notices", "_hl_pending", "_hl_trace_key"
_CALLBACK_ERROR = "_hl_callback_error"
SHARED_KEYS = (K_TEXT, K_MODEL, K_DEVICE, K_LAYER, K_HEAD, K_TOKEN, K_LECTURE, K_BLOCK)

_LECTURE_CSS = """<style>
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,
[data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 1.3rem !important; }
[data-testid="stMain"] h1 { font-size: 3.2rem !important; }
[data-testid="stMain"] h2 { font-size: 2.4rem !important; }
[data-testid="stMain"] h3 { font-size: 1.9rem !important; }
</style>"""  # a constant: user text never goes through unsafe HTML


# Torch intra-op threads for the app process. Streamlit serves each session from its own thread; OpenMP threads of
# concurrent runs oversubscribe the CPU (measured on 2 busy cores: default sentence 15 ms with 1 thread vs 600-900 ms
# with 2; 512 tokens 470 ms vs 1,150 ms). Override with HEADLIGHT_TORCH_THREADS.
_THREADS = os.environ.get("HEADLIGHT_TORCH_THREADS", "1")
if _THREADS.isdigit() and int(_THREADS) > 0:
    torch.set_num_threads(int(_THREADS))


# ---- cached loaders -----------------------------------------------------------------------------------------
@st.cache_resource(max_entries=4, show_spinner="Loading model…")
def get_model(name: str, device: str):
    """Shared by all sessions: must hold no per-request state."""
    return load_model(name, device)


@st.cache_resource(max_entries=32, show_spinner="Running the model…")
def get_trace(name: str, device: str, text: str, task: str | None = None) -> AttentionTrace:
    """One trace per (model, device, text, task), with intermediates; shared and treated as immutable."""
    kw = {"task": task} if task else {}
    return get_model(name, device).trace(text, intermediates=True, **kw)


# ---- the view ---------------------------------------------------------------------------------------------------
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
    block: str = "encoder"

    @property
    def label(self) -> str:
        """'Layer 3 · Head 1', counted from 0 as in the URL."""
        return f"Layer {self.layer} · Head {self.head}"

    @property
    def n_layers(self) -> int:
        return block_layers(self.model, self.block)

    @property
    def n_heads(self) -> int:
        return self.model.config.n_heads


def available_models() -> list[str]:
    """Registered models whose loader module exists (a model being built elsewhere may not exist yet)."""
    out = []
    for name in list_models():
        mod = get_spec(name).loader.split(":")[0]
        try:
            if importlib.util.find_spec(mod) is not None:
                out.append(name)
        except (ImportError, ValueError):
            pass
    return out


def device_choices() -> list[str]:
    return ["auto", *available_devices()]


def block_layers(model, block: str) -> int:
    cfg = model.config
    return cfg.n_encoder_layers if block == "encoder" else cfg.n_decoder_layers


# ---- URL -> state (first run only) --------------------------------------------------------------------------


def md_escape(text: object) -> str:
    """User text made literal for st.markdown / st.warning / st.info (no emphasis, links, headings or HTML)."""
    s = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text))
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", s)


def _show(raw) -> str:
    s = str(raw)
    return md_escape(repr(s if len(s) <= 40 else s[:40] + "…"))


def _read_url() -> None:
    """Seed widget state from the query string, once per session, validating every value."""
    ss = st.session_state
    ss[_URL_DONE] = True
    qp = st.query_params
    notices: list[str] = []
    text = qp.get(K_TEXT)
    if text is not None:
        if len(text) > MAX_TEXT_CHARS:
            notices.append(f"The link's text has {len(text):,} characters (the limit is {MAX_TEXT_CHARS:,}); "
                           "showing the default sentence instead.")
            text = DEFAULT_TEXT
        ss[K_TEXT] = text
    name = qp.get(K_MODEL)
    if name is not None:
        if name in available_models():
            ss[K_MODEL] = name
        else:
            notices.append(f"Unknown model {_show(name)} in the link; using {DEFAULT_MODEL}. "
                           f"Models: {', '.join(available_models())}.")
            ss[K_MODEL] = DEFAULT_MODEL
    dev = qp.get(K_DEVICE)
    if dev is not None:
        if dev in device_choices():
            ss[K_DEVICE] = dev
        else:
            notices.append(f"Device {_show(dev)} is not available here; using auto.")
            ss[K_DEVICE] = "auto"
    lec = qp.get(K_LECTURE)
    if lec is not None:
        ss[K_LECTURE] = lec.strip().lower() in ("1", "true", "yes", "on")
    # layer / head / token / block are validated once the model and the trace are known
    ss[_PENDING] = {k: qp.get(k) for k in (K_LAYER, K_HEAD, K_TOKEN, K_BLOCK) if qp.get(k) is not None}
    ss[_URL_NOTICES] = notices


def safe_callback(fn):
    """Widget callbacks run before the page, outside app.py's error boundary: log and turn any exception into a
    notice shown by the next sidebar() instead of Streamlit's error screen."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the boundary for callbacks
            logging.getLogger("headlight").exception("callback %s failed", fn.__name__)
            st.session_state[_CALLBACK_ERROR] = f"That action failed ({type(exc).__name__}); the view is unchanged."
    return wrapper


@safe_callback
def _clear_url_notices() -> None:
    st.session_state[_URL_NOTICES] = []  # a new list: the old one may still be referenced by a running script


@safe_callback
def _apply_preset() -> None:
    ss = st.session_state
    if ss.get(K_PRESET):
        ss[K_TEXT] = ss[K_PRESET]
    ss[K_PRESET] = None
    _clear_url_notices()


def _write_url(view: View) -> None:
    """Mirror the view into the query string (only keys that changed, so no needless messages)."""
    want: dict[str, str | None] = {
        K_TEXT: view.text if len(quote(view.text)) <= MAX_URL_TEXT else None,
        K_MODEL: view.model_name,
        K_LAYER: str(view.layer), K_HEAD: str(view.head), K_TOKEN: str(view.token),
        K_BLOCK: view.block if view.block != "encoder" else None,
        K_DEVICE: st.session_state.get(K_DEVICE) if st.session_state.get(K_DEVICE, "auto") != "auto" else None,
        K_LECTURE: "1" if view.lecture else None,
    }
    qp = st.query_params
    for k, v in want.items():
        if v is None:
            if k in qp:
                del qp[k]
        elif qp.get(k) != v:
            qp[k] = v


# ---- validation helpers --------------------------------------------------------------------------------------
def _clamp_choice(key: str, n: int, label: str, notices: list[str], pending: dict, default: int = 0) -> None:
    """Make st.session_state[key] a valid index in range(n) before its widget is drawn."""
    ss = st.session_state
    if key in pending:
        raw = pending.pop(key)
        try:
            val = int(str(raw).strip())
        except ValueError:
            notices.append(f"The link's {label} {_show(raw)} is not a whole number; using {label} {default}.")
            val = default
        if not 0 <= val < n:
            notices.append(f"{label.capitalize()} {val} from the link does not exist (this view has {label}s "
                           f"0-{n - 1}); using {label} {default}.")
            val = default
        ss[key] = val
    cur = ss.get(key)
    if not isinstance(cur, int) or not 0 <= cur < n:
        ss[key] = default if not isinstance(cur, int) else min(max(cur, 0), n - 1)


def default_token(tokens: list[str]) -> int:
    """The flagship question is about "it": select it when present, else the first real token."""
    low = [t.lower() for t in tokens]
    if "it" in low:
        return low.index("it")
    return 1 if len(tokens) > 2 else 0


def _load(name: str, device: str, notices: list[str]):
    try:
        return name, get_model(name, device)
    except (HeadlightError, ImportError, OSError) as exc:
        if name == DEFAULT_MODEL:
            raise
        notices.append(f"Could not load {name}: {exc} Using {DEFAULT_MODEL} instead.")
        st.session_state[K_MODEL] = DEFAULT_MODEL
        return DEFAULT_MODEL, get_model(DEFAULT_MODEL, device)


def _ensure_app_shell() -> None:
    """Run every page through app.py. Streamlit treats a folder named `pages/` beside the main script as a legacy
    (v1) multipage app until app.py's st.navigation has run once in the process: until then a link such as /steps
    runs pages/steps.py directly (no set_page_config, no error boundary, file names in the menu), and AppTest does
    so on every rerun. A page that finds itself run that way switches the legacy mode off and reruns, so app.py
    takes over. (Renaming the folder, e.g. to app_pages/, would remove the need for this.)"""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a future Streamlit without this internal: nothing to undo
        return
    if getattr(PagesManager, "uses_pages_directory", None) and _APP.exists():
        PagesManager.uses_pages_directory = False
        st.rerun()


# ---- the sidebar -----------------------------------------------------------------------------------------------
def sidebar() -> View:
    """Draw the shared controls, sync them with the URL, return the View every page reads."""
    _ensure_app_shell()
    ss = st.session_state
    if not ss.get(_URL_DONE):
        _read_url()
    for k in SHARED_KEYS:  # re-assert: Streamlit would reset these widgets on a page switch (new widget ids)
        if k in ss:
            ss[k] = ss[k]
    ss.setdefault(K_TEXT, DEFAULT_TEXT)
    models = available_models()
    if ss.get(K_MODEL) not in models:
        ss[K_MODEL] = DEFAULT_MODEL
    if ss.get(K_DEVICE) not in device_choices():
        ss[K_DEVICE] = "auto"
    ss.setdefault(K_LECTURE, False)
    url_notices: list[str] = ss.setdefault(_URL_NOTICES, [])  # kept until the user changes a control
    notices: list[str] = []  # this run only
    if ss.get(_CALLBACK_ERROR):
        notices.append(ss.pop(_CALLBACK_ERROR))
    pending: dict = ss.setdefault(_PENDING, {})

    sb = st.sidebar
    sb.selectbox("Example sentences", PRESETS, index=None, key=K_PRESET, on_change=_apply_preset,
                 placeholder="Pick an example…")
    keep = dict(on_change=_clear_url_notices, persist_state="session")  # values survive page switches
    text = sb.text_area("Sentence", key=K_TEXT, max_chars=MAX_TEXT_CHARS, height=110, **keep,
                        help="Any text; it is tokenized as the model sees it. Beyond 512 tokens it is truncated.")
    sb.selectbox("Model", models, key=K_MODEL, format_func=lambda n: get_spec(n).label, **keep,
                 help="MiniLM is pretrained; paper-base has random weights (the paper's shapes, not learned attention).")
    sb.selectbox("Device", device_choices(), key=K_DEVICE, **keep,
                 help="auto: CUDA when a GPU is present, else CPU.")
    lecture = sb.toggle("Lecture mode (projector)", key=K_LECTURE, persist_state="session", help="Large fonts and figures for a projector.")

    try:
        device = str(resolve_device(ss[K_DEVICE]))
    except HeadlightError as exc:
        notices.append(str(exc))
        device = "cpu"
    model_name, model = _load(ss[K_MODEL], device, notices)
    view = View(text=text, model_name=model_name, device=device, lecture=lecture, model=model, notices=notices)
    spec = get_spec(model_name)
    if not spec.trained:
        sb.caption("⚠ Untrained model: random weights, so attention patterns are not meaningful.")

    if text.strip():
        try:
            view.trace = get_trace(model_name, device, text)
        except HeadlightError as exc:
            notices.append(str(exc))
    if view.trace is not None and view.trace.truncated:
        notices.append(f"The text has {view.trace.n_tokens_untruncated:,} tokens; only the first "
                       f"{len(view.trace.source_tokens):,} are shown (the model's limit).")

    # block (encoder-decoder only), then layer / head / token, clamped to this model
    blocks = view.trace.blocks if view.trace is not None else (
        ["encoder", "decoder_self", "cross"] if spec.kind == "encoder-decoder" else ["encoder"])
    if K_BLOCK in pending:
        raw = pending.pop(K_BLOCK)
        if raw not in blocks:
            url_notices.append(f"Attention block {_show(raw)} does not exist for {model_name}; using encoder.")
            raw = "encoder"
        ss[K_BLOCK] = raw
    if len(blocks) > 1:
        if ss.get(K_BLOCK) not in blocks:
            ss[K_BLOCK] = "encoder"
        view.block = sb.radio("Attention", blocks, key=K_BLOCK, format_func=BLOCK_LABELS.get, **keep)
    n_layers, n_heads = block_layers(model, view.block), model.config.n_heads
    _clamp_choice(K_LAYER, n_layers, "layer", url_notices, pending)
    _clamp_choice(K_HEAD, n_heads, "head", url_notices, pending)
    c1, c2 = sb.columns(2)
    view.layer = c1.selectbox("Layer", list(range(n_layers)), key=K_LAYER, format_func=lambda i: f"Layer {i}", **keep)
    view.head = c2.selectbox("Head", list(range(n_heads)), key=K_HEAD, format_func=lambda i: f"Head {i}", **keep)

    if view.trace is not None:
        rows, _ = view.trace.axis_tokens(view.block)
        trace_key = (model_name, text, view.block)
        fresh = ss.get(_TRACE_KEY) is not None and ss.get(_TRACE_KEY) != trace_key
        ss[_TRACE_KEY] = trace_key
        if fresh and K_TOKEN not in pending:
            ss[K_TOKEN] = default_token(rows)
        if K_TOKEN not in ss and K_TOKEN not in pending:
            ss[K_TOKEN] = default_token(rows)
        _clamp_choice(K_TOKEN, len(rows), "token", url_notices, pending, default=default_token(rows))
        view.token = sb.selectbox("Query token", list(range(len(rows))), key=K_TOKEN,
                                  format_func=lambda i: f"{i}: {rows[i]}", **keep,
                                  help="The token whose attention the token views follow (a row of the matrix).")
    else:
        view.token = ss.get(K_TOKEN, 0) if isinstance(ss.get(K_TOKEN, 0), int) else 0
    _write_url(view)

    if lecture:
        st.markdown(_LECTURE_CSS, unsafe_allow_html=True)  # constant CSS, no user text
    view.notices = [*url_notices, *notices]
    for msg in view.notices:
        st.warning(msg, icon="⚠️")
    if not text.strip():
        st.info("Type a sentence in the sidebar (or pick an example) to see its attention.", icon="✍️")
    return view


def require_trace(view: View) -> AttentionTrace:
    """The page's trace, or stop the page quietly (sidebar() already showed why: empty text or a notice)."""
    if view.trace is None:
        st.stop()
    return view.trace
