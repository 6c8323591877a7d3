"""The app shell: page config, navigation (the pages of ui/pages.py), the shared sidebar (drawn once per run, before
the page, as Streamlit recommends for widgets shared across pages), the error boundary, and the View handed to the
page.

    app.py:            ui.shell.run()
    app_pages/x.py:    view = ui.shell.current_view()

The sidebar in three parts: `read_controls` draws the controls a user sets (language, examples, sentence, model,
device, lecture) and the model and trace are loaded; `ui.view.resolve` (pure) makes the View: block, layer, head and
token clamped to the model, the link's values checked, the notices; then the pickers (block, layer, head, token) are
drawn with the resolved values, the URL is written, and `draw_notices` shows the notices above the page.

Error boundary: any unexpected exception on a page becomes a short st.error, never a traceback; HeadlightError
messages (meant for users) are shown as they are. Streamlit's own control flow (st.stop, st.rerun) derives from
BaseException, so `except Exception` lets it through.
"""

from __future__ import annotations

import base64
import contextvars
import copy
import logging
import time
from pathlib import Path

import pandas  # noqa: F401 - imported once here: plotly imports it lazily, and two sessions doing that at once crashed
import streamlit as st

from i18n import LANG_NAMES, LANGS, error_message, t
from model import DEFAULT_MODEL, HeadlightError, get_spec
from model.device import resolve_device
from model.examples import DEFAULT_TEXT

from . import class_room, class_student, css, deck_add, present, readable, runs, share, store
from . import state as s
from .pages import BY_NAME, PAGES
from .view import (
    K_BLOCK,
    K_DEVICE,
    K_HEAD,
    K_LANG,
    K_LAYER,
    K_LECTURE,
    K_MODEL,
    K_PRESET,
    K_TEXT,
    K_TOKEN,
    Controls,
    Resolution,
    View,
    model_label,
    resolve,
)
from .widgets import document_lang, session_lang

# the favicon is the app's own PNG as a data: URL (no request at all): a :material/: page icon makes the browser fetch
# it from a CDN (the menu's material icons use the font bundled with Streamlit), and an emoji needs an emoji font the
# machine may lack. Made once: Streamlit passes a data: URL through, while a file path was read, decoded and
# registered with its media file manager on every script run (~5 % of a warm explorer run's server CPU, py-spy).
PAGE_ICON = "data:image/png;base64," + base64.b64encode(
    (Path(__file__).resolve().parents[1] / "assets" / "icon.png").read_bytes()).decode("ascii")
_VIEW: contextvars.ContextVar[View] = contextvars.ContextVar("headlight_view")
RUN_MS_KEY = "_hl_run_ms"  # server-side ms of this session's last page run (read by bench/bench_app.py)
PAGES_KEY = "_hl_pages"  # (lang, [st.Page]) of this session
# the sidebar's controls are the session's state on every page: kept across a page switch. A switch made by the app
# (st.switch_page: a deck's slide, the end of a presentation) reruns with no widget states from the browser, and
# Streamlit then drops every widget's value that is not kept this way (the language, lecture mode, model, layer
# and head came back as their defaults when a presentation ended, issue 34)
KEEP = dict(persist_state="session")


def current_view() -> View:
    """The View of this run, made by the shell before the page runs."""
    return _VIEW.get()


def run() -> None:
    st.set_page_config(page_title="Headlight", page_icon=PAGE_ICON, layout="wide")
    present.from_link()  # a deck's link on a session's first run: the deck, in its language (the menu's too)
    class_room.follow_room()  # a student's session takes its class's model (and, on joining, its language)
    lang = session_lang()
    page = st.navigation(session_pages(lang))
    present.follow()  # a lesson deck's slide chosen by a callback: its page
    started = time.perf_counter()
    try:
        # one run per core at a time: results are computed inside the run and held until it ends, so this bounds the
        # process's working set (48 students opening 512-token texts at once took it to 4-17 GB); Python's GIL and
        # the one torch thread per run mean more concurrent runs would not be faster
        prefetch_trace(page.url_path)
        with store.compute_slot():
            present.top(page.url_path, lang)  # a slide link's page, messages, the present mode's bar
            view = sidebar(page.url_path)
            class_student.top(view)  # a student's class (a link with ?room=CODE): the banner and its question
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
    document_lang(session_lang())  # after the sidebar: the language this run was drawn in
    st.session_state[RUN_MS_KEY] = (time.perf_counter() - started) * 1000


_PAGE_TEMPLATES: dict[str, list] = {}  # lang -> the st.Page objects made once per process, copied for each session


def session_pages(lang: str) -> list:
    """This session's st.Page objects in `lang`, made once per session and language: making one resolves its file on
    disk, seven lookups on every run otherwise. Never shared between sessions (a Page records whether it may run):
    each session gets shallow copies of the process's templates (made once per language; a new session's first run
    then copies seven small objects instead of resolving seven files, 1.5 % of an explorer run's CPU, issue 39)."""
    ss = st.session_state
    made = ss.get(PAGES_KEY)
    if made is None or made[0] != lang:
        templates = _PAGE_TEMPLATES.get(lang)
        if templates is None:
            templates = _PAGE_TEMPLATES[lang] = [
                st.Page(p.file, title=t(p.title_key, lang), icon=p.icon, default=p.default,
                        url_path=None if p.default else p.name) for p in PAGES]
        made = (lang, [copy.copy(page) for page in templates])
        ss[PAGES_KEY] = made
    return made[1]


def own_model(page: str) -> bool:
    """Whether the page at this url path runs its own model (no sidebar trace)."""
    return page in BY_NAME and BY_NAME[page].own_model


def settle_state() -> None:
    """The session's text, model and device before any widget is drawn: from the link on a session's first run,
    then from the widgets; unknown values fall back to the defaults."""
    ss = st.session_state
    if not ss.get(s.URL_DONE):
        s.read_url()
    ss.setdefault(K_TEXT, DEFAULT_TEXT)
    if ss.get(K_MODEL) not in s.available_models():
        ss[K_MODEL] = DEFAULT_MODEL
    if ss.get(K_DEVICE) not in s.device_choices():
        ss[K_DEVICE] = "auto"


def prefetch_trace(page: str) -> None:
    """The sidebar's trace of a short sentence, computed before this run waits for a compute slot: the sessions of
    a lecture hall that wait at once have their sentences run through the model together (runs.prefetch_trace, one
    padded forward). Whatever goes wrong here is met again, and shown, by the sidebar."""
    if own_model(page):
        return
    settle_state()
    ss = st.session_state
    try:
        runs.prefetch_trace(ss[K_MODEL], str(resolve_device(ss[K_DEVICE])), ss[K_TEXT])
    except HeadlightError:
        pass


def sidebar(page: str = "") -> View:
    """Draw the shared controls, sync them with the URL, return the View every page reads. `page`: the url path
    of the page that runs next."""
    ss = st.session_state
    settle_state()
    url_notices: list[str] = ss.setdefault(s.URL_NOTICES, [])  # kept until the user changes a control
    notices: list[str] = [ss.pop(s.CALLBACK_ERROR)] if ss.get(s.CALLBACK_ERROR) else []  # this run only
    pending: dict = ss.setdefault(s.PENDING, {})
    lang, text, lecture = read_controls()
    controls, model, trace = load(lang, text, lecture, page, notices)
    res = resolve(controls, model, trace, kind=get_spec(controls.model_name).kind, session=ss, pending=pending,
                  kept=url_notices, notices=notices)
    for key in res.used:
        pending.pop(key, None)
    url_notices.extend(res.url_notices)
    for key, value in res.writes.items():
        ss[key] = value
    view = res.view
    draw_pickers(res, lang)
    s.write_url(view, page)
    share.share_button(st.sidebar, lang, page=page)  # after the URL is written: the code holds this run's view
    deck_add.add_button(st.sidebar, lang)
    draw_notices(view, page)
    return view


def read_controls() -> tuple[str, str, bool]:
    """The sidebar's first controls, drawn: (language, sentence, lecture mode); the model and device pickers and
    the examples act through the session state."""
    ss = st.session_state
    ss.setdefault(K_LECTURE, False)
    sb = st.sidebar
    on = dict(on_change=s.clear_url_notices, **KEEP)
    ss.setdefault(K_LANG, "en")
    lang = sb.selectbox(t("sidebar.lang", ss[K_LANG]), LANGS, key=K_LANG, format_func=LANG_NAMES.get, **on)
    sb.selectbox(t("sidebar.examples", lang), s.PRESETS, index=None, key=K_PRESET, on_change=s.apply_preset,
                 placeholder=t("sidebar.examples_placeholder", lang))
    text = sb.text_area(t("sidebar.sentence", lang), key=K_TEXT, max_chars=s.MAX_TEXT_CHARS, height=110, **on,
                        help=t("sidebar.sentence_help", lang))
    sb.selectbox(t("sidebar.model", lang), s.available_models(), key=K_MODEL,
                 format_func=lambda n: model_label(n, lang), **on, help=t("sidebar.model_help", lang))
    sb.selectbox(t("sidebar.device", lang), s.device_choices(), key=K_DEVICE, **on,
                 format_func=lambda d: t("shell.device_auto", lang) if d == "auto" else d,
                 help=t("sidebar.device_help", lang))
    lecture = sb.toggle(t("sidebar.lecture", lang), key=K_LECTURE, help=t("sidebar.lecture_help", lang), **KEEP)
    return lang, text, lecture


def load(lang: str, text: str, lecture: bool, page: str, notices: list[str]) -> tuple[Controls, object, object]:
    """(controls, model, trace): the device resolved, the chosen model loaded (or the default one, with a notice),
    and the sidebar's trace of the text (None without text, on an error, with a notice, or on a page that runs its
    own model). Notices of this run are added to `notices`."""
    ss = st.session_state
    try:
        device = str(resolve_device(ss[K_DEVICE]))
    except HeadlightError as exc:
        notices.append(error_message(exc, lang))
        device = "cpu"
    model_name, model = store.model_or_default(ss[K_MODEL], device, notices)
    if model_name != ss[K_MODEL]:
        ss[K_MODEL] = model_name
    trace = None
    if text.strip() and not own_model(page):  # a page with its own model does not read the sidebar's trace
        try:
            trace = runs.get_trace(model_name, device, text)
        except HeadlightError as exc:
            notices.append(error_message(exc, lang))
    return Controls(text=text, model_name=model_name, device=device, lecture=lecture, lang=lang), model, trace


def draw_pickers(res: Resolution, lang: str) -> None:
    """The untrained-model caption, then block (an encoder-decoder's only), layer, head and token, on the values
    `resolve` chose (already in the session state)."""
    view, sb = res.view, st.sidebar
    on = dict(on_change=s.clear_url_notices, **KEEP)
    if not get_spec(view.model_name).trained:
        sb.caption(":material/warning: " + t("sidebar.untrained", lang))
    if len(res.blocks) > 1:
        sb.radio(t("sidebar.block", lang), res.blocks, key=K_BLOCK, format_func=lambda b: t(f"block.{b}", lang), **on)
    c1, c2 = sb.columns(2)
    c1.selectbox(t("sidebar.layer", lang), list(range(view.n_layers)), key=K_LAYER,
                 format_func=lambda i: t("sidebar.layer_n", lang, i=i), **on)
    c2.selectbox(t("sidebar.head", lang), list(range(view.n_heads)), key=K_HEAD,
                 format_func=lambda i: t("sidebar.head_n", lang, i=i), **on)
    if view.trace is not None:
        rows, _ = view.trace.axis_tokens(view.block)
        sb.selectbox(t("sidebar.token", lang), list(range(len(rows))), key=K_TOKEN,
                     format_func=lambda i: f"{i}: {rows[i]}", **on, help=t("sidebar.token_help", lang))


def draw_notices(view: View, page: str) -> None:
    """Above the page: lecture mode's CSS, this run's notices, the switch-model notice, the empty-text hint."""
    st.html(css.app_css(view.lang))  # phones, Korean line breaks, "No results": a style only, it takes no room
    if view.lecture:
        st.markdown(s.LECTURE_CSS, unsafe_allow_html=True)  # constant CSS, no user text
    for msg in view.notices:
        st.warning(msg, icon=":material/warning:")
    if not own_model(page):
        readable.unreadable_notice(view.trace, view.model_name, view.lang)
    if not view.text.strip():
        st.info(t("shell.empty_text", view.lang), icon=":material/edit:")
