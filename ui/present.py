"""The lesson deck's present mode (Streamlit): showing a slide, a deck's link, the bar above every page while
presenting (the slide's title and note, Back / Next bound to the arrow keys, Exit) and leaving it; and what the deck
page (ui/deck.py) shares with it: the deck in session state, the messages shown once, its widgets set to a deck.

How a slide is shown: its page is opened with its query string (st.switch_page) and the link is read again as on a
session's first run (ui/state.py read_url: every value checked, the same notices; the page's own keys, such as the
open tab's id, wait for the page), its options (the explorer's) are set in session state; in present mode the URL
also carries `deck=<id>&slide=<i>&back=<id>`, so a reload or a shared link reopens the same slide of the same deck.
The deck lives in session state; the short link (ui/shortlinks.py, kind "deck") holds its JSON on the server's disk,
and opens in the deck's language unless the link names one.

Leaving a presentation returns to the view it started from: `start` keeps that view as a slide (`here()`: the page,
the sidebar's whole state, the page's own keys), in session state and, for a reload, in the link store (`back=<id>`),
and "Exit" opens it as it opens any slide. (Streamlit drops the widgets' values on a page switch made by the app; the
sidebar's controls are kept across it, ui/shell.py KEEP.)

Order in a run (ui/shell.py): `from_link()` before the menu is made (a deck link on a session's first run: the deck
and its language), `follow()` right after st.navigation (a slide chosen by a callback: switch to its page), `top()`
before the sidebar (a slide link's page, messages, the bar).
"""

from __future__ import annotations

import logging

import streamlit as st

from i18n import LANGS, t

from . import shortlinks
from . import state as s
from .deckfile import (
    HEADS_GENERATION,
    HEADS_TEXT,
    OPTION_KEYS,
    QUERY_KEYS,
    Deck,
    DeckError,
    Slide,
    capture,
    from_json,
    page_name,
    to_json,
)
from .pages import BY_NAME, page_file
from .state import safe_callback
from .view import (
    K_BLOCK,
    K_DEVICE,
    K_HEAD,
    K_LANG,
    K_LAYER,
    K_LECTURE,
    K_MODEL,
    K_TEXT,
    K_TOKEN,
    TOUR_STEP,
    TOUR_URL_DONE,
    md_escape,
)
from .widgets import ARROWS_TAKEN, NO_FOCUS_FRAME_CSS, session_lang

DECK, PRESENT, GOTO, PAGE, MSGS, URL_DONE = (
    "_deck", "_deck_present", "_deck_goto", "_deck_page", "_deck_msgs", "_deck_url_done")
BACK = "_deck_back"  # the view a presentation started from (a Slide): where "Exit" returns
LINK_SLIDE = "_deck_link_slide"  # a first run's `?deck=<id>&slide=<i>`: its page is checked once the page is known
K_TITLE, K_DECK_LANG = "deck_title", "deck_lang"  # the deck page's widgets of the deck's title and language
PAGE_NAME = "deck"  # the deck page's URL path (ui/pages.py)

PRESENT_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"] {
  display: none !important; }
</style>""" + NO_FOCUS_FRAME_CSS  # constants: the present mode's slide takes the whole width, with no focus frame


def current() -> Deck:
    deck = st.session_state.get(DECK)
    return deck if isinstance(deck, Deck) else Deck(lang=session_lang())


def say(kind: str, text: str) -> None:
    """A message shown once, at the top of the next page drawn."""
    st.session_state.setdefault(MSGS, []).append((kind, text))


def message(key: str, params: dict, lang: str) -> str:
    """A deckfile message in `lang`: the file's own words are escaped for markdown; `want` is a word of the
    catalogue."""
    p = {k: md_escape(v) if isinstance(v, str) else v for k, v in params.items()}
    if "want" in params:
        p["want"] = t(f"deck.want.{params['want']}", lang)
    return t(key, lang, **p)


# ---- showing a slide -----------------------------------------------------------------------------------------------
def _open(deck: Deck, i: int, present: dict | None) -> None:
    """In a callback: set the session for slide i and ask the next run to switch to its page."""
    if present is not None:
        present["slide"] = i
    _show(deck.slides[i], deck.lang, present)


def _show(slide: Slide, lang: str, present: dict | None) -> None:
    """Set the session for a slide (in `lang` unless it names its own) and ask the next run to switch to its page;
    `present`: the present mode's place ({"id", "slide", "back"}), or None."""
    ss = st.session_state
    query = slide.url_query()
    query.setdefault("lang", lang)
    if present is not None:
        where = {"deck": present.get("id"), "slide": present.get("slide"), "back": present.get("back")}
        query.update({k: str(v) for k, v in where.items() if v is not None})
    ss[PRESENT] = present
    if query["lang"] in LANGS:
        ss[K_LANG] = query["lang"]  # this run's language already (the link is read again after it starts)
    for key, value in slide.options.items():
        ss[key] = value
    for key in HEADS_TEXT:  # the Head lab's prompts as the slide says (their widgets would keep an earlier value)
        if key in query:
            ss[key] = query[key]
    for key in HEADS_GENERATION:  # numbers and switches: their widgets read them from the link again
        ss.pop(key, None)
    if slide.page == "tour":
        ss.pop(TOUR_URL_DONE, None)  # the tour reads its step from the link again
        if "step" not in query and isinstance(ss.get(TOUR_STEP), int):
            query["step"] = str(ss[TOUR_STEP])
    ss[s.URL_DONE] = False  # the shell reads the link again (ui/state.py read_url), as on a first run
    ss[GOTO] = (slide.page, query)


def follow() -> None:
    """Right after st.navigation: switch to the page a callback chose (st.switch_page ends this run)."""
    goto = st.session_state.pop(GOTO, None)
    if goto:
        page, query = goto
        st.switch_page(page_file(page), query_params=query)


@safe_callback
def _go(i: int) -> None:
    deck = current()
    present = st.session_state.get(PRESENT)
    if 0 <= i < len(deck):
        _open(deck, i, dict(present) if isinstance(present, dict) else {"id": None})


@safe_callback
def _exit() -> None:
    """Leave the presentation: back to the view it started from (after a reload, the one its link keeps)."""
    ss = st.session_state
    present = ss.get(PRESENT) if isinstance(ss.get(PRESENT), dict) else {}
    back = ss.pop(BACK, None)
    if not isinstance(back, Slide):
        back = _stored_back(present.get("back"))
    if back is None:  # a presentation from an older link: the deck page, the session as it is
        ss[PRESENT] = None
        ss[GOTO] = (PAGE_NAME, {"lang": session_lang()})
        return
    _show(back, session_lang(), None)


def here() -> Slide:
    """The view on screen as a slide, from the session's own state: its page, the sidebar's every value (the URL
    leaves out the defaults and a long sentence), the page's own keys and options."""
    ss, qp = st.session_state, st.query_params
    query = {k: qp.get(k) for k in QUERY_KEYS}
    query.update({K_TEXT: ss.get(K_TEXT), K_MODEL: ss.get(K_MODEL), K_DEVICE: ss.get(K_DEVICE),
                  K_LAYER: ss.get(K_LAYER), K_HEAD: ss.get(K_HEAD), K_TOKEN: ss.get(K_TOKEN),
                  K_LECTURE: "1" if ss.get(K_LECTURE) else "0", K_LANG: session_lang()})
    query[K_BLOCK] = qp.get(K_BLOCK)  # the block in view (a stale one of another model is not in the URL)
    return capture(ss.get(PAGE, ""), query, {k: ss.get(k) for k in OPTION_KEYS})


def _stored_back(sid) -> Slide | None:
    """The view a presentation started from, kept in the link store under `sid` (a one-slide deck)."""
    payload = shortlinks.get("deck", sid) if isinstance(sid, str) else None
    try:
        deck = from_json(payload)[0] if payload is not None else None
    except DeckError:
        return None
    return deck.slides[0] if deck is not None and len(deck) == 1 else None


def _back_id(back: Slide) -> str | None:
    """Keep the view to go back to in the link store, for a reload while presenting (None if it cannot be kept)."""
    try:
        return shortlinks.put("deck", to_json(Deck(lang=back.query.get("lang", "en"), slides=(back,))))
    except (OSError, ValueError) as exc:
        logging.getLogger("headlight").warning("deck: the view to go back to: %s", exc)
        return None


def share_id(deck: Deck) -> str | None:
    """The deck's short-link id (stored), or None when the server cannot store it (a message says so)."""
    try:
        return shortlinks.put("deck", to_json(deck))
    except (OSError, ValueError) as exc:
        logging.getLogger("headlight").warning("deck short link: %s", exc)
        say("warning", t("deck.link_failed", session_lang()))
        return None


def start(deck: Deck, i: int) -> None:
    """In a callback: present the deck from slide i, keeping the view on screen to come back to."""
    if 0 <= i < len(deck):
        st.session_state[BACK] = back = here()
        _open(deck, i, {"id": share_id(deck), "back": _back_id(back)})


def visit(deck: Deck, i: int) -> None:
    """In a callback: open slide i's view, not presenting."""
    if 0 <= i < len(deck):
        _open(deck, i, None)


# ---- above every page: the deck link, messages, the bar -----------------------------------------------------------
def from_link() -> None:
    """A session's first run, before the menu is made: `?deck=<id>` loads that deck and, unless the link names a
    language, takes the deck's (the whole page, its menu too, is drawn in it); with `&slide=<i>` it is being
    presented (`top()` opens the slide's page)."""
    ss, qp = st.session_state, st.query_params
    if ss.get(URL_DONE):
        return
    ss[URL_DONE] = True
    sid = qp.get("deck")
    if sid is None:
        return
    payload = shortlinks.get("deck", sid)
    if payload is None:
        say("warning", t("deck.link_unknown", session_lang(), id=md_escape(sid[:40])))
        return
    try:
        deck, notes = from_json(payload)
    except DeckError as exc:
        say("warning", message(exc.key, exc.params, session_lang()))
        return
    if qp.get(K_LANG) not in LANGS:
        ss[K_LANG] = deck.lang
    lang = session_lang()
    for note in notes:
        say("info", message(note.key, note.params, lang))
    ss[DECK] = deck
    push(deck)
    raw = qp.get("slide")
    if raw is not None:
        try:
            i = int(raw)
        except ValueError:
            i = -1
        if 0 <= i < len(deck):
            ss[PRESENT] = {"id": sid, "slide": i, "back": qp.get("back")}
            ss[LINK_SLIDE] = True
        else:
            say("warning", t("deck.bad_slide", lang, value=md_escape(str(raw)[:20]), n=len(deck)))


def top(url_path: str, lang: str) -> None:
    ss = st.session_state
    ss[PAGE] = url_path
    present = ss.get(PRESENT)
    deck = current()
    if ss.pop(LINK_SLIDE, False) and isinstance(present, dict) and 0 <= present["slide"] < len(deck):
        if page_name(url_path) != deck.slides[present["slide"]].page:  # a link of another page: the slide's own view
            _open(deck, present["slide"], present)
            follow()
    for kind, text in ss.pop(MSGS, []):
        getattr(st, kind)(text, icon=":material/warning:" if kind == "warning" else ":material/slideshow:")
    if isinstance(present, dict) and not 0 <= present.get("slide", -1) < len(deck):
        ss[PRESENT] = present = None
    ss[ARROWS_TAKEN] = bool(present)
    if present:
        bar(deck, present, lang)


def bar(deck: Deck, present: dict, lang: str) -> None:
    """The present mode's bar: Back, the slide's number and title, Next (the arrow keys), Exit; the note under it."""
    i, n = present["slide"], len(deck)
    slide = deck.slides[i]
    qp = st.query_params
    where = {"deck": present.get("id"), "slide": str(i), "back": present.get("back")}
    if present.get("id") and any(v is not None and qp.get(k) != v for k, v in where.items()):
        qp.update({k: v for k, v in where.items() if v is not None})
    st.markdown(PRESENT_CSS, unsafe_allow_html=True)
    with st.container(border=True, key="deck_bar"):
        c1, c2, c3, c4 = st.columns([1, 6, 1, 1], vertical_alignment="center")
        c1.button(t("deck.back", lang), key="deck_back", on_click=_go, args=(i - 1,), disabled=i == 0,
                  shortcut="Left", width="stretch", help=t("deck.keys", lang))
        title = slide.title or t(BY_NAME[slide.page].title_key, lang)
        c2.markdown(t("deck.bar_title", lang, i=i + 1, n=n, title=md_escape(title), deck=md_escape(deck.title)))
        c3.button(t("deck.next", lang), key="deck_next", on_click=_go, args=(i + 1,), disabled=i == n - 1,
                  type="primary", shortcut="Right", width="stretch", help=t("deck.keys", lang))
        c4.button(t("deck.exit", lang), key="deck_exit", on_click=_exit, width="stretch", icon=":material/close:")
        if slide.note.strip():
            st.markdown(note_md(slide.note))


def note_md(note: str) -> str:
    """A slide's note as literal markdown, its line breaks kept."""
    return "  \n".join(md_escape(line) for line in note.splitlines())


# ---- the deck page's widgets ---------------------------------------------------------------------------------
def widget_keys(i: int) -> tuple[str, str]:
    return f"deck_t{i}", f"deck_n{i}"


def push(deck: Deck) -> None:
    """The widgets set to the deck (after its slides moved, went, or a new deck came)."""
    ss = st.session_state
    ss[K_TITLE], ss[K_DECK_LANG] = deck.title, deck.lang
    for i, slide in enumerate(deck.slides):
        kt, kn = widget_keys(i)
        ss[kt], ss[kn] = slide.title, slide.note
    for key in [k for k in ss if isinstance(k, str) and k[:6] in ("deck_t", "deck_n") and k[6:].isdigit()]:
        if int(key[6:]) >= len(deck):
            del ss[key]
