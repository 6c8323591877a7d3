"""The View every page reads, and the URL state behind it (Streamlit, no drawing of pages here).

    view.model                # LoadedModel (cached once per process, shared)
    view.trace                # AttentionTrace (with intermediates) for (model, text), or None when there is no valid text
    view.layer, view.head     # counted from 0, already clamped to the model (and block) ranges
    view.token                # index of the selected query token (a row of view.block's attention)
    view.block                # "encoder" | "decoder_self" | "cross" ("encoder" for encoder-only models,
                              # "decoder_self" for decoder-only ones)
    view.lecture, view.text, view.model_name, view.device ("cpu" / "cuda", resolved), view.notices

URL state: the query string mirrors `text`, `model`, `layer`, `head`, `token` (and `block`, `device`, `lecture`
when they differ from the defaults). It is read once per session, on the first run, and every value is validated:
an invalid one (layer 99, head -1, an unknown model, 100,000 characters of text) falls back to its default with a
visible notice. The page itself is in the URL path, as `st.navigation` gives it. The sidebar that owns these
widgets is drawn once per run by the shell (ui/shell.py).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from dataclasses import dataclass, field
from urllib.parse import quote

import streamlit as st

from i18n import LANGS, pick_lang, t
from model import DEFAULT_MODEL, list_models
from model.device import available_devices
from model.examples import DEFAULT_TEXT, EXAMPLE_SENTENCES, KOREAN_EXAMPLE_SENTENCES
from model.registry import register_local_models
from model.trace import AttentionTrace

PRESETS = [*EXAMPLE_SENTENCES, *KOREAN_EXAMPLE_SENTENCES]
MAX_TEXT_CHARS = 20_000  # the text box refuses more; a URL with more falls back to the default text
MAX_URL_TEXT = 4_000  # longer texts are not written into the link (browsers and servers cap URL length)
DEVICE_CHOICES = ("auto", "cpu", "cuda")

# keys of the shared widgets (stable: tests and the URL address them)
K_TEXT, K_MODEL, K_DEVICE, K_LAYER, K_HEAD, K_TOKEN, K_LECTURE, K_BLOCK, K_PRESET, K_LANG = (
    "text", "model", "device", "layer", "head", "token", "lecture", "block", "preset", "lang")
URL_DONE, URL_NOTICES, PENDING, TRACE_KEY = "_hl_url_done", "_hl_url_notices", "_hl_pending", "_hl_trace_key"
CALLBACK_ERROR = "_hl_callback_error"
SHARED_KEYS = (K_TEXT, K_MODEL, K_DEVICE, K_LAYER, K_HEAD, K_TOKEN, K_LECTURE, K_BLOCK, K_LANG)

LECTURE_CSS = """<style>
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,
[data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 1.3rem !important; }
[data-testid="stMain"] h1 { font-size: 3.2rem !important; }
[data-testid="stMain"] h2 { font-size: 2.4rem !important; }
[data-testid="stMain"] h3 { font-size: 1.9rem !important; }
</style>"""  # a constant: user text never goes through unsafe HTML


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
    lang: str = "en"  # interface language: "en" | "ko" (i18n/)

    @property
    def label(self) -> str:
        """'Layer 3 · Head 1', counted from 0 as in the URL."""
        return f"Layer {self.layer} · Head {self.head}"

    @property
    def n_layers(self) -> int:
        return block_layers(self.model, self.block)

    @property
    def n_heads(self) -> int:
        return self.model.n_heads(self.block)

    def on_block(self, block: str) -> View:
        """This view on another block of the model, its layer and head clamped to that block (an encoder-decoder's
        decoder may have more layers or heads than its encoder)."""
        return dataclasses.replace(self, block=block, layer=min(self.layer, block_layers(self.model, block) - 1),
                                   head=min(self.head, self.model.n_heads(block) - 1))


def available_models() -> list[str]:
    """The registered models, with the local folders whoever started the app named (HEADLIGHT_MODELS), registered
    once per process on the first run."""
    _register_local_models()
    return list_models()


@functools.cache
def _register_local_models() -> None:
    register_local_models()


def device_choices() -> list[str]:
    return ["auto", *available_devices()]


def block_layers(model, block: str) -> int:
    """Layers of a block (model.loaded.LoadedModel.n_layers)."""
    return model.n_layers(block)


# ---- URL -> state (first run only) --------------------------------------------------------------------------


def md_escape(text: object) -> str:
    """User text made literal for st.markdown / st.warning / st.info (no emphasis, links, headings or HTML)."""
    s = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text))
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", s)


def show_value(raw) -> str:
    """A value from the link, shortened and made literal for a notice."""
    s = str(raw)
    return md_escape(repr(s if len(s) <= 40 else s[:40] + "…"))


def read_url() -> None:
    """Seed widget state from the query string, once per session, validating every value."""
    ss = st.session_state
    ss[URL_DONE] = True
    qp = st.query_params
    notices: list[str] = []
    lg = pick_lang(qp.get(K_LANG))  # the notices below are in the link's language
    text = qp.get(K_TEXT)
    if text is not None:
        if len(text) > MAX_TEXT_CHARS:
            notices.append(t("shell.url.text_long", lg, n=len(text), limit=MAX_TEXT_CHARS))
            text = DEFAULT_TEXT
        ss[K_TEXT] = text
    name = qp.get(K_MODEL)
    if name is not None:
        if name in available_models():
            ss[K_MODEL] = name
        else:
            notices.append(t("shell.url.model", lg, value=show_value(name), default=DEFAULT_MODEL,
                             models=", ".join(available_models())))
            ss[K_MODEL] = DEFAULT_MODEL
    dev = qp.get(K_DEVICE)
    if dev is not None:
        if dev in device_choices():
            ss[K_DEVICE] = dev
        else:
            notices.append(t("shell.url.device", lg, value=show_value(dev)))
            ss[K_DEVICE] = "auto"
    lang = qp.get(K_LANG)
    if lang is not None:
        if lang in LANGS:
            ss[K_LANG] = lang
        else:
            notices.append(t("shell.url.lang", lg, value=show_value(lang), langs=", ".join(LANGS)))
            ss[K_LANG] = "en"
    lec = qp.get(K_LECTURE)
    if lec is not None:
        ss[K_LECTURE] = lec.strip().lower() in ("1", "true", "yes", "on")
    # layer / head / token / block are validated once the model and the trace are known
    ss[PENDING] = {k: qp.get(k) for k in (K_LAYER, K_HEAD, K_TOKEN, K_BLOCK) if qp.get(k) is not None}
    ss[URL_NOTICES] = notices


def safe_callback(fn):
    """Widget callbacks run before the page, outside app.py's error boundary: log and turn any exception into a
    notice shown by the next sidebar() instead of Streamlit's error screen."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the boundary for callbacks
            logging.getLogger("headlight").exception("callback %s failed", fn.__name__)
            st.session_state[CALLBACK_ERROR] = t("shell.callback_error", pick_lang(st.session_state.get(K_LANG)),
                                                 kind=type(exc).__name__)
    return wrapper


@safe_callback
def clear_url_notices() -> None:
    st.session_state[URL_NOTICES] = []  # a new list: the old one may still be referenced by a running script


@safe_callback
def apply_preset() -> None:
    ss = st.session_state
    if ss.get(K_PRESET):
        ss[K_TEXT] = ss[K_PRESET]
    ss[K_PRESET] = None
    clear_url_notices()


def write_url(view: View) -> None:
    """Mirror the view into the query string (only keys that changed, so no needless messages)."""
    want: dict[str, str | None] = {
        K_TEXT: view.text if len(quote(view.text)) <= MAX_URL_TEXT else None,
        K_MODEL: view.model_name,
        K_LAYER: str(view.layer), K_HEAD: str(view.head), K_TOKEN: str(view.token),
        K_BLOCK: view.block if view.block != "encoder" else None,
        K_DEVICE: st.session_state.get(K_DEVICE) if st.session_state.get(K_DEVICE, "auto") != "auto" else None,
        K_LECTURE: "1" if view.lecture else None,
        K_LANG: view.lang if view.lang != "en" else None,
    }
    qp = st.query_params
    for k, v in want.items():
        if v is None:
            if k in qp:
                del qp[k]
        elif qp.get(k) != v:
            qp[k] = v


# ---- validation helpers --------------------------------------------------------------------------------------
def clamp_choice(key: str, n: int, label: str, notices: list[str], pending: dict, default: int = 0) -> None:
    """Make st.session_state[key] a valid index in range(n) before its widget is drawn."""
    ss = st.session_state
    if key in pending:
        raw = pending.pop(key)
        lg = pick_lang(ss.get(K_LANG))
        word = t(f"shell.unit.{label}", lg) if label in ("layer", "head", "token") else label
        try:
            val = int(str(raw).strip())
        except ValueError:
            notices.append(t("shell.url.not_int", lg, label=word, value=show_value(raw), default=default))
            val = default
        if not 0 <= val < n:
            notices.append(t("shell.url.out_of_range", lg, Label=word[:1].upper() + word[1:], label=word, value=val,
                             max=n - 1, default=default))
            val = default
        ss[key] = val
    cur = ss.get(key)
    if not isinstance(cur, int) or not 0 <= cur < n:
        ss[key] = default if not isinstance(cur, int) else min(max(cur, 0), n - 1)


def require_trace(view: View) -> AttentionTrace:
    """The page's trace, or stop the page quietly (sidebar() already showed why: empty text or a notice)."""
    if view.trace is None:
        st.stop()
    return view.trace
