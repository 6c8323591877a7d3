"""The app shell: page config, navigation, the shared sidebar (drawn once per run, before the page, as Streamlit
recommends for widgets shared across pages), the error boundary, and the View handed to the page.

    app.py:            ui.shell.run()
    app_pages/x.py:    view = ui.shell.current_view()

Pages live in app_pages/, not pages/: a folder named pages/ beside the entrypoint is Streamlit's legacy
multipage mechanism, which is active in a fresh server process until some session has run st.navigation; a
direct link opened in that window ran the page without this shell (see README, "Why app_pages/").

Error boundary: any unexpected exception on a page becomes a short st.error, never a traceback; HeadlightError
messages (meant for users) are shown as they are. Streamlit's own control flow (st.stop, st.rerun) derives from
BaseException, so `except Exception` lets it through.
"""

from __future__ import annotations

import base64
import contextvars
import logging
import time
from pathlib import Path

import pandas  # noqa: F401 - imported once here: plotly imports it lazily, and two sessions doing that at once crashed
import streamlit as st

from analysis.explore import default_token
from i18n import LANG_NAMES, LANGS, catalogue, error_message, t
from model import DEFAULT_MODEL, HeadlightError, get_spec
from model.device import resolve_device
from model.examples import DEFAULT_TEXT

from . import readable, runs, share, store
from . import state as s
from .state import View
from .widgets import session_lang

PAGES = [  # (file, title, icon, default)
    ("app_pages/explorer.py", "Attention explorer", ":material/grid_on:", True),
    ("app_pages/positional.py", "Positional-encoding lab", ":material/waves:", False),
    ("app_pages/masks.py", "Mask lab", ":material/visibility_off:", False),
    ("app_pages/steps.py", "Step by step", ":material/functions:", False),
    ("app_pages/seq2seq.py", "Encoder-decoder decoding", ":material/translate:", False),
    ("app_pages/heads.py", "Head lab", ":material/science:", False),
    ("app_pages/tour.py", "Guided tour", ":material/school:", False),
]
# the favicon is the app's own PNG as a data: URL (no request at all): a :material/: page icon makes the browser fetch
# it from a CDN (the menu's material icons use the font bundled with Streamlit), and an emoji needs an emoji font the
# machine may lack. Made once: Streamlit passes a data: URL through, while a file path was read, decoded and
# registered with its media file manager on every script run (~5 % of a warm explorer run's server CPU, py-spy).
PAGE_ICON = "data:image/png;base64," + base64.b64encode(
    (Path(__file__).resolve().parents[1] / "assets" / "icon.png").read_bytes()).decode("ascii")
TITLED = {"explorer", "positional", "masks", "steps", "seq2seq", "tour"}  # page titles in the catalogue (page.<stem>)
TITLE_KEYS = {"heads": "heads.page"}  # page titles in a catalogue part
_VIEW: contextvars.ContextVar[View] = contextvars.ContextVar("headlight_view")
RUN_MS_KEY = "_hl_run_ms"  # server-side ms of this session's last page run (read by bench/bench_app.py)


def current_view() -> View:
    """The View of this run, made by the shell before the page runs."""
    return _VIEW.get()


def run() -> None:
    st.set_page_config(page_title="Headlight", page_icon=PAGE_ICON, layout="wide")
    lang = session_lang()
    page = st.navigation([st.Page(path, title=page_title(path, title, lang), icon=icon, default=default)
                          for path, title, icon, default in PAGES])
    started = time.perf_counter()
    try:
        # one run per core at a time: results are computed inside the run and held until it ends, so this bounds the
        # process's working set (48 students opening 512-token texts at once took it to 4-17 GB); Python's GIL and
        # the one torch thread per run mean more concurrent runs would not be faster
        prefetch_trace(page.url_path)
        with store.compute_slot():
            view = sidebar(page.url_path)
            token = _VIEW.set(view)
            try:
                page.run()
            finally:
                _VIEW.reset(token)
    except HeadlightError as exc:
        st.error(error_message(exc, lang), icon=":material/warning:")
    except Exception as exc:  # noqa: BLE001 - the boundary: log it, show a short message
        logging.getLogger("headlight").exception("page %s failed", page.title)
        st.error(t("shell.error", lang, kind=type(exc).__name__), icon=":material/warning:")
    st.session_state[RUN_MS_KEY] = (time.perf_counter() - started) * 1000


def page_title(path: str, title: str, lang: str) -> str:
    """A page's title in the interface language (the English title when the catalogue has none)."""
    stem = Path(path).stem
    if stem in TITLED:
        return t(f"page.{stem}", lang)
    return t(TITLE_KEYS[stem], lang) if stem in TITLE_KEYS else title


def model_label(name: str, lang: str) -> str:
    """The model picker's label in the interface language: the catalogue's, or (a folder registered by whoever started
    the app) the registry's."""
    key = f"shell.model.{name}"
    return t(key, lang) if key in catalogue(lang) else get_spec(name).label


OWN_MODEL_PAGES = {"seq2seq"}  # pages that run their own model (seq2seq-tiny), whatever the sidebar's model


def settle_state() -> None:
    """The session's text, model and device before any widget is drawn: from the link on a session's first run,
    then from the widgets; unknown values fall back to the defaults."""
    ss = st.session_state
    if not ss.get(s.URL_DONE):
        s.read_url()
    ss.setdefault(s.K_TEXT, DEFAULT_TEXT)
    if ss.get(s.K_MODEL) not in s.available_models():
        ss[s.K_MODEL] = DEFAULT_MODEL
    if ss.get(s.K_DEVICE) not in s.device_choices():
        ss[s.K_DEVICE] = "auto"


def prefetch_trace(page: str) -> None:
    """The sidebar's trace of a short sentence, computed before this run waits for a compute slot: the sessions of
    a lecture hall that wait at once have their sentences run through the model together (runs.prefetch_trace, one
    padded forward). Whatever goes wrong here is met again, and shown, by the sidebar."""
    if page in OWN_MODEL_PAGES:
        return
    settle_state()
    ss = st.session_state
    try:
        runs.prefetch_trace(ss[s.K_MODEL], str(resolve_device(ss[s.K_DEVICE])), ss[s.K_TEXT])
    except HeadlightError:
        pass


def sidebar(page: str = "") -> View:
    """Draw the shared controls, sync them with the URL, return the View every page reads. `page`: the url path
    of the page that runs next."""
    ss = st.session_state
    settle_state()
    models = s.available_models()
    ss.setdefault(s.K_LECTURE, False)
    url_notices: list[str] = ss.setdefault(s.URL_NOTICES, [])  # kept until the user changes a control
    notices: list[str] = []  # this run only
    if ss.get(s.CALLBACK_ERROR):
        notices.append(ss.pop(s.CALLBACK_ERROR))
    pending: dict = ss.setdefault(s.PENDING, {})

    sb = st.sidebar
    on = dict(on_change=s.clear_url_notices)
    ss.setdefault(s.K_LANG, "en")
    lang = sb.selectbox(t("sidebar.lang", ss[s.K_LANG]), LANGS, key=s.K_LANG, format_func=LANG_NAMES.get, **on)
    sb.selectbox(t("sidebar.examples", lang), s.PRESETS, index=None, key=s.K_PRESET, on_change=s.apply_preset,
                 placeholder=t("sidebar.examples_placeholder", lang))
    text = sb.text_area(t("sidebar.sentence", lang), key=s.K_TEXT, max_chars=s.MAX_TEXT_CHARS, height=110, **on,
                        help=t("sidebar.sentence_help", lang))
    sb.selectbox(t("sidebar.model", lang), models, key=s.K_MODEL, format_func=lambda n: model_label(n, lang), **on,
                 help=t("sidebar.model_help", lang))
    sb.selectbox(t("sidebar.device", lang), s.device_choices(), key=s.K_DEVICE, **on,
                 format_func=lambda d: t("shell.device_auto", lang) if d == "auto" else d,
                 help=t("sidebar.device_help", lang))
    lecture = sb.toggle(t("sidebar.lecture", lang), key=s.K_LECTURE, help=t("sidebar.lecture_help", lang))

    try:
        device = str(resolve_device(ss[s.K_DEVICE]))
    except HeadlightError as exc:
        notices.append(error_message(exc, lang))
        device = "cpu"
    model_name, model = store.model_or_default(ss[s.K_MODEL], device, notices)
    if model_name != ss[s.K_MODEL]:
        ss[s.K_MODEL] = model_name
    view = View(text=text, model_name=model_name, device=device, lecture=lecture, model=model, notices=notices,
                lang=lang)
    spec = get_spec(model_name)
    if not spec.trained:
        sb.caption(":material/warning: " + t("sidebar.untrained", lang))

    if text.strip() and page not in OWN_MODEL_PAGES:  # a page with its own model does not read the sidebar's trace
        try:
            view.trace = runs.get_trace(model_name, device, text)
        except HeadlightError as exc:
            notices.append(error_message(exc, lang))
    if view.trace is not None and view.trace.truncated:
        notices.append(t("shell.truncated", lang, n=view.trace.n_tokens_untruncated,
                         shown=len(view.trace.source_tokens)))

    # block (encoder-decoder only), then layer / head / token, clamped to this model
    blocks = view.trace.blocks if view.trace is not None else {
        "encoder-decoder": ["encoder", "decoder_self", "cross"], "decoder": ["decoder_self"]}.get(spec.kind, ["encoder"])
    if s.K_BLOCK in pending:
        raw = pending.pop(s.K_BLOCK)
        if raw not in blocks:
            url_notices.append(t("shell.url.block", lang, value=s.show_value(raw), model=model_name))
            raw = blocks[0]
        ss[s.K_BLOCK] = raw
    view.block = blocks[0]  # the only block of an encoder-only or a decoder-only model
    if len(blocks) > 1:
        if ss.get(s.K_BLOCK) not in blocks:
            ss[s.K_BLOCK] = "encoder"
        view.block = sb.radio(t("sidebar.block", lang), blocks, key=s.K_BLOCK, format_func=lambda b: t(f"block.{b}", lang),
                              **on)
    n_layers, n_heads = s.block_layers(model, view.block), model.n_heads(view.block)
    s.clamp_choice(s.K_LAYER, n_layers, "layer", url_notices, pending)
    s.clamp_choice(s.K_HEAD, n_heads, "head", url_notices, pending)
    c1, c2 = sb.columns(2)
    view.layer = c1.selectbox(t("sidebar.layer", lang), list(range(n_layers)), key=s.K_LAYER,
                              format_func=lambda i: t("sidebar.layer_n", lang, i=i), **on)
    view.head = c2.selectbox(t("sidebar.head", lang), list(range(n_heads)), key=s.K_HEAD,
                             format_func=lambda i: t("sidebar.head_n", lang, i=i), **on)

    if view.trace is not None:
        rows, _ = view.trace.axis_tokens(view.block)
        trace_key = (model_name, text, view.block)
        fresh = ss.get(s.TRACE_KEY) is not None and ss.get(s.TRACE_KEY) != trace_key
        ss[s.TRACE_KEY] = trace_key
        first = default_token(rows)
        if (fresh or s.K_TOKEN not in ss) and s.K_TOKEN not in pending:
            ss[s.K_TOKEN] = first
        s.clamp_choice(s.K_TOKEN, len(rows), "token", url_notices, pending, default=first)
        view.token = sb.selectbox(t("sidebar.token", lang), list(range(len(rows))), key=s.K_TOKEN,
                                  format_func=lambda i: f"{i}: {rows[i]}", **on, help=t("sidebar.token_help", lang))
    else:
        view.token = ss.get(s.K_TOKEN, 0) if isinstance(ss.get(s.K_TOKEN, 0), int) else 0
    s.write_url(view)
    share.share_button(sb, lang)  # after the URL is written: the code holds this run's view

    if lecture:
        st.markdown(s.LECTURE_CSS, unsafe_allow_html=True)  # constant CSS, no user text
    view.notices = [*url_notices, *notices]
    for msg in view.notices:
        st.warning(msg, icon=":material/warning:")
    if page not in OWN_MODEL_PAGES:
        readable.unreadable_notice(view.trace, model_name, lang)
    if not text.strip():
        st.info(t("shell.empty_text", lang), icon=":material/edit:")
    return view
