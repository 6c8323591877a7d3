"""The URL state behind the View (ui/view.py) and the sidebar's widget callbacks (Streamlit, no drawing of pages here).

URL state: the query string mirrors `text`, `model`, `layer`, `head`, `token` (and `block`, `device`, `lecture`
when they differ from the defaults). It is read once per session, on the first run, and every value is validated:
an invalid one (layer 99, head -1, an unknown model, 100,000 characters of text) falls back to its default with a
visible notice (the checks: ui/view.py `read_link`, pure, beside `resolve`, which checks layer, head, token and block
once the model is known: they wait in PENDING until then). The
page itself is in the URL path, as `st.navigation` gives it. A page's own keys (ui/deckfile.py PAGE_QUERY: the open
tab's id, the Encoder-decoder page's choices) wait in PAGE_PENDING until the page draws their widgets (`page_param`),
which check them and write them back (`write_page_params`), so a share link and a deck slide carry them too. The
sidebar that owns these widgets is drawn once per run by the shell (ui/shell.py).
"""

from __future__ import annotations

import functools
import logging
import secrets
from urllib.parse import quote

import streamlit as st

from i18n import pick_lang, t
from model import list_models
from model.device import available_devices
from model.examples import EXAMPLE_SENTENCES, KOREAN_EXAMPLE_SENTENCES, TRANSLATION_SENTENCES
from model.registry import register_local_models
from model.trace import AttentionTrace

from .deckfile import PAGE_QUERY, page_name
from .view import (
    K_BLOCK,
    K_DEVICE,
    K_HEAD,
    K_LANG,
    K_LAYER,
    K_LECTURE,
    K_MODEL,
    K_PRESET,
    K_ROOM,
    K_SID,
    K_TEXT,
    K_TOKEN,
    SESSION_ID,
    View,
    read_link,
)

PRESETS = [*EXAMPLE_SENTENCES, *TRANSLATION_SENTENCES, *KOREAN_EXAMPLE_SENTENCES]
MAX_TEXT_CHARS = 20_000  # the text box refuses more; a URL with more falls back to the default text
MAX_URL_TEXT = 4_000  # longer texts are not written into the link (browsers and servers cap URL length)
DEVICE_CHOICES = ("auto", "cpu", "cuda")

URL_DONE, URL_NOTICES, PENDING = "_hl_url_done", "_hl_url_notices", "_hl_pending"  # the link read, its notices, its
# layer / head / token / block until the model is known
PAGE_PENDING = "_hl_page_pending"  # the link's pages' own keys until their page draws them
URL_PAGE = "_hl_url_page"  # the page whose view the URL holds (its own keys)
# the pages' own keys a link may carry (each page's has its own name), but the tour's step, which the tour reads
PAGE_KEYS = tuple(dict.fromkeys(k for name, keys in PAGE_QUERY.items() if name != "tour" for k in keys))
CALLBACK_ERROR = "_hl_callback_error"

LECTURE_CSS = """<style>
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,
[data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 1.3rem !important; }
[data-testid="stMain"] h1 { font-size: 3.2rem !important; }
[data-testid="stMain"] h2 { font-size: 2.4rem !important; }
[data-testid="stMain"] h3 { font-size: 1.9rem !important; }
[data-testid="stMain"] [data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap !important; row-gap: 0.4rem; }
[data-testid="stMain"] [data-testid="stWidgetLabel"] *, [data-testid="stMain"] [data-testid="stCheckbox"] label * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
[data-testid="stMain"] [data-testid="stTable"] th, [data-testid="stMain"] [data-testid="stTable"] td {
  font-size: 1.25rem !important; }
</style>"""  # tabs wrap to a second row instead of hiding behind an overflow arrow; widget labels wrap instead of
# ending in "…"; tables (ui.widgets.table draws st.table in lecture mode) take the bigger font  # a constant: user text never goes through unsafe HTML


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


# ---- URL -> state (first run only) --------------------------------------------------------------------------
def read_url() -> None:
    """Seed widget state from the query string, once per session, every value checked by ui/view.py `read_link`;
    layer / head / token / block wait for the model (PENDING, ui/view.py `resolve`), the pages' own keys for their
    page (`page_param`)."""
    ss = st.session_state
    ss[URL_DONE] = True
    qp = st.query_params.to_dict()  # one read (each key's last value, as st.query_params[key]); not 20 proxied ones
    link = read_link(qp, available_models(), device_choices(), MAX_TEXT_CHARS)
    ss.update(link.writes)
    if K_ROOM in link.writes and SESSION_ID not in link.writes:  # a new student: an anonymous id, in the link from
        ss.setdefault(SESSION_ID, secrets.token_urlsafe(16))  # this first run on (write_url)
    ss[PENDING] = link.pending
    ss[PAGE_PENDING] = {k: qp.get(k) for k in PAGE_KEYS if qp.get(k) is not None}
    ss[URL_NOTICES] = link.notices


def page_param(key: str) -> str | None:
    """The link's value of one of the page's own keys, once (None when the link had none): the page checks it
    before it draws the widget."""
    pending = st.session_state.get(PAGE_PENDING)
    return pending.pop(key, None) if isinstance(pending, dict) else None


def write_page_params(values: dict[str, str | None]) -> None:
    """Mirror a page's own keys into the query string (None: not in it), in one message when any changed."""
    qp = st.query_params
    for k in [k for k, v in values.items() if v is None and k in qp]:
        del qp[k]
    changed = {k: v for k, v in values.items() if v is not None and qp.get(k) != v}
    if changed:
        qp.update(changed)


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


def write_url(view: View, page: str = "") -> None:
    """Mirror the view into the query string (only keys that changed, so no needless messages); when the page has
    changed, the page before's own keys (its open tab) leave it. `page`: the url path of the page that runs."""
    want: dict[str, str | None] = {
        K_TEXT: view.text if len(quote(view.text)) <= MAX_URL_TEXT else None,
        K_MODEL: view.model_name,
        K_LAYER: str(view.layer), K_HEAD: str(view.head), K_TOKEN: str(view.token),
        K_BLOCK: view.block if view.block != "encoder" else None,
        K_DEVICE: st.session_state.get(K_DEVICE) if st.session_state.get(K_DEVICE, "auto") != "auto" else None,
        K_LECTURE: "1" if view.lecture else None,
        K_LANG: view.lang if view.lang != "en" else None,
        K_ROOM: st.session_state.get(K_ROOM),  # a student's class stays in the link on every page
        K_SID: st.session_state.get(SESSION_ID) if st.session_state.get(K_ROOM) else None,  # and its anonymous id
    }
    qp = st.query_params
    name = page_name(page)
    if st.session_state.get(URL_PAGE, name) != name:
        own = PAGE_QUERY.get(name, ())
        want.update({k: None for keys in PAGE_QUERY.values() for k in keys if k not in own})
    st.session_state[URL_PAGE] = name
    for k, v in want.items():
        if v is None and k in qp:
            del qp[k]  # rare: a default value again, or the page changed
    changed = {k: v for k, v in want.items() if v is not None and qp.get(k) != v}
    if changed:
        qp.update(changed)  # one message to the browser, however many keys changed (a new sentence: text and token)


def require_trace(view: View) -> AttentionTrace:
    """The page's trace, or stop the page quietly (sidebar() already showed why: empty text or a notice)."""
    if view.trace is None:
        st.stop()
    return view.trace
