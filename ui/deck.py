"""The lesson deck (Streamlit): "Add to deck" in the sidebar, the Lesson deck page (title, slides with a title and a
note each, reorder, delete, export / import as JSON, one short link, the example decks) and the present mode (a
small bar above every page with the slide's title and note, Back / Next bound to the arrow keys, Exit). The deck
itself, its file and its checks: ui/deckfile.py (pure).

How a slide is shown: its page is opened with its query string (st.switch_page) and the link is read again as on a
session's first run (ui/state.py read_url: every value checked, the same notices), its options (open tab, explorer
options) are set in session state; in present mode the URL also carries `deck=<id>&slide=<i>`, so a reload or a
shared link reopens the same slide of the same deck. The deck lives in session state; the short link
(ui/shortlinks.py, kind "deck") holds its JSON on the server's disk.

Order in a run (ui/shell.py): `follow()` right after st.navigation (a slide chosen by a callback: switch to its
page), `top()` before the sidebar (the deck link of a session's first run, messages, the bar), `add_button()` in
the sidebar under "Share with the class".
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging

import streamlit as st

from i18n import LANG_NAMES, LANGS, t

from . import shortlinks
from . import state as s
from .deckfile import (
    MAX_BYTES,
    MAX_NOTE,
    MAX_TITLE,
    OPTION_KEYS,
    QUERY_KEYS,
    Deck,
    DeckError,
    Slide,
    capture,
    example,
    from_json,
    page_name,
    to_json,
)
from .handout import handout_bytes
from .pages import BY_NAME, page_file
from .state import safe_callback
from .tour import STEP as TOUR_STEP
from .tour import URL_DONE as TOUR_URL_DONE
from .view import K_LANG, md_escape
from .widgets import ARROWS_TAKEN, session_lang, slug

DECK, PRESENT, GOTO, PAGE, MSGS, URL_DONE, LINK, HANDOUT = (
    "_deck", "_deck_present", "_deck_goto", "_deck_page", "_deck_msgs", "_deck_url_done", "_deck_link",
    "_deck_handout")
K_TITLE, K_DECK_LANG, K_UPLOAD = "deck_title", "deck_lang", "deck_upload"
PAGE_NAME = "deck"  # this page's URL path (ui/pages.py)

PRESENT_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none !important; }
</style>"""  # a constant: the present mode's slide takes the whole width


UPLOAD_CSS = """<style>
[data-testid="stFileUploaderDropzoneInstructions"] { display: none !important; }
[data-testid="stFileUploaderDropzone"] button > * { display: none !important; }
[data-testid="stFileUploaderDropzone"] button::after { content: "LABEL"; }
</style>"""


def current() -> Deck:
    deck = st.session_state.get(DECK)
    return deck if isinstance(deck, Deck) else Deck(lang=session_lang())


def _say(kind: str, text: str) -> None:
    """A message shown once, at the top of the next page drawn."""
    st.session_state.setdefault(MSGS, []).append((kind, text))


def _msg(key: str, params: dict, lang: str) -> str:
    """A deckfile message in `lang`: the file's own words are escaped for markdown; `want` is a word of the
    catalogue."""
    p = {k: md_escape(v) if isinstance(v, str) else v for k, v in params.items()}
    if "want" in params:
        p["want"] = t(f"deck.want.{params['want']}", lang)
    return t(key, lang, **p)


# ---- showing a slide -----------------------------------------------------------------------------------------------
def _open(deck: Deck, i: int, present: dict | None) -> None:
    """In a callback: set the session for slide i and ask the next run to switch to its page."""
    ss = st.session_state
    slide = deck.slides[i]
    query = slide.url_query()
    query.setdefault("lang", deck.lang)
    if present is not None:
        present["slide"] = i
        query.update({k: str(v) for k, v in (("deck", present.get("id")), ("slide", i)) if v is not None})
    ss[PRESENT] = present
    if query["lang"] in LANGS:
        ss[K_LANG] = query["lang"]  # this run's language already (the link is read again after it starts)
    for key, value in slide.options.items():
        ss[key] = value
    if "hl_tab" in query:
        ss["hl_tab"] = query["hl_tab"]
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
    st.session_state[PRESENT] = None
    st.session_state[GOTO] = (PAGE_NAME, {"lang": session_lang()})


def _share_id(deck: Deck) -> str | None:
    """The deck's short-link id (stored), or None when the server cannot store it (a message says so)."""
    try:
        return shortlinks.put("deck", to_json(deck))
    except (OSError, ValueError) as exc:
        logging.getLogger("headlight").warning("deck short link: %s", exc)
        _say("warning", t("deck.link_failed", session_lang()))
        return None


@safe_callback
def _present(i: int) -> None:
    deck = _pull(current())
    st.session_state[DECK] = deck
    if 0 <= i < len(deck):
        _open(deck, i, {"id": _share_id(deck)})


@safe_callback
def _visit(i: int) -> None:
    deck = _pull(current())
    st.session_state[DECK] = deck
    if 0 <= i < len(deck):
        _open(deck, i, None)


# ---- above every page: the deck link, messages, the bar -----------------------------------------------------------
def top(url_path: str, lang: str) -> None:
    ss = st.session_state
    ss[PAGE] = url_path
    if not ss.get(URL_DONE):
        ss[URL_DONE] = True
        _from_url(lang)
    for kind, text in ss.pop(MSGS, []):
        getattr(st, kind)(text, icon=":material/warning:" if kind == "warning" else ":material/slideshow:")
    present = ss.get(PRESENT)
    deck = current()
    if isinstance(present, dict) and not 0 <= present.get("slide", -1) < len(deck):
        ss[PRESENT] = present = None
    ss[ARROWS_TAKEN] = bool(present)
    if present:
        bar(deck, present, lang)


def _from_url(lang: str) -> None:
    """A session's first run: `?deck=<id>` loads that deck; with `&slide=<i>` it is being presented."""
    qp = st.query_params
    sid = qp.get("deck")
    if sid is None:
        return
    payload = shortlinks.get("deck", sid)
    if payload is None:
        _say("warning", t("deck.link_unknown", lang, id=md_escape(sid[:40])))
        return
    try:
        deck, notes = from_json(payload)
    except DeckError as exc:
        _say("warning", _msg(exc.key, exc.params, lang))
        return
    for note in notes:
        _say("info", _msg(note.key, note.params, lang))
    st.session_state[DECK] = deck
    _push(deck)
    raw = qp.get("slide")
    if raw is not None:
        try:
            i = int(raw)
        except ValueError:
            i = -1
        if 0 <= i < len(deck):
            st.session_state[PRESENT] = present = {"id": sid, "slide": i}
            if page_name(st.session_state.get(PAGE, "")) != deck.slides[i].page:  # a link of another page: the
                _open(deck, i, present)  # slide's own view
                follow()
        else:
            _say("warning", t("deck.bad_slide", lang, value=md_escape(str(raw)[:20]), n=len(deck)))


def bar(deck: Deck, present: dict, lang: str) -> None:
    """The present mode's bar: Back, the slide's number and title, Next (the arrow keys), Exit; the note under it."""
    i, n = present["slide"], len(deck)
    slide = deck.slides[i]
    qp = st.query_params
    if present.get("id") and (qp.get("deck"), qp.get("slide")) != (present["id"], str(i)):
        qp.update({"deck": present["id"], "slide": str(i)})
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


# ---- the sidebar's button ------------------------------------------------------------------------------------------
def add_button(where, lang: str) -> None:
    """"Add to deck": the view on screen becomes the deck's last slide."""
    on_deck = page_name(st.session_state.get(PAGE, "")) == PAGE_NAME
    where.button(t("deck.add", lang, n=len(current())), key="deck_add", on_click=_add, width="stretch",
                 icon=":material/add_to_queue:", disabled=on_deck,
                 help=t("deck.add_help_here" if on_deck else "deck.add_help", lang))


@safe_callback
def _add() -> None:
    ss, lang = st.session_state, session_lang()
    deck = current()
    page = page_name(ss.get(PAGE, ""))
    query = {k: st.query_params.get(k) for k in QUERY_KEYS}
    options = {k: ss.get(k) for k in OPTION_KEYS}
    try:
        slide = capture(page, query, options, title=default_title(page, query, lang))
        deck = deck.add(slide)
    except DeckError as exc:
        _say("warning", _msg(exc.key, exc.params, lang))
        return
    if len(deck) == 1:
        deck = dataclasses.replace(deck, lang=lang)
    ss[DECK] = deck
    _say("success", t("deck.added", lang, i=len(deck), title=md_escape(slide.title)))


def default_title(page: str, query: dict, lang: str) -> str:
    title = t(BY_NAME[page].title_key, lang)
    if page == "tour" and query.get("step"):
        return t("deck.title_step", lang, page=title, step=query["step"])
    if query.get("layer") is not None and query.get("head") is not None and page != "seq2seq":
        return t("deck.title_where", lang, page=title, layer=query["layer"], head=query["head"])
    return title


# ---- the page -------------------------------------------------------------------------------------------------------
def _keys(i: int) -> tuple[str, str]:
    return f"deck_t{i}", f"deck_n{i}"


def _pull(deck: Deck) -> Deck:
    """The deck with what its widgets hold (a title or note typed just before a button was clicked)."""
    ss = st.session_state
    if isinstance(ss.get(K_TITLE), str):
        deck = deck.retitled(ss[K_TITLE])
    if ss.get(K_DECK_LANG) in LANGS:
        deck = dataclasses.replace(deck, lang=ss[K_DECK_LANG])
    for i in range(len(deck)):
        kt, kn = _keys(i)
        changes = {name: ss[k] for name, k in (("title", kt), ("note", kn)) if isinstance(ss.get(k), str)}
        deck = deck.edit(i, **changes)
    return deck


def _push(deck: Deck) -> None:
    """The widgets set to the deck (after its slides moved, went, or a new deck came)."""
    ss = st.session_state
    ss[K_TITLE], ss[K_DECK_LANG] = deck.title, deck.lang
    for i, slide in enumerate(deck.slides):
        kt, kn = _keys(i)
        ss[kt], ss[kn] = slide.title, slide.note
    for key in [k for k in ss if isinstance(k, str) and k[:6] in ("deck_t", "deck_n") and k[6:].isdigit()]:
        if int(key[6:]) >= len(deck):
            del ss[key]


def _replace(deck: Deck) -> None:
    st.session_state[DECK] = deck
    _push(deck)


@safe_callback
def _move(i: int, delta: int) -> None:
    _replace(_pull(current()).move(i, delta))


@safe_callback
def _delete(i: int) -> None:
    _replace(_pull(current()).delete(i))


@safe_callback
def _new() -> None:
    _replace(Deck(lang=session_lang()))


@safe_callback
def _example() -> None:
    lang = session_lang()
    deck, _ = example(lang)
    _replace(deck)
    _say("success", t("deck.loaded", lang, n=len(deck), title=md_escape(deck.title)))


@safe_callback
def _import() -> None:
    lang = session_lang()
    up = st.session_state.get(K_UPLOAD)
    if up is None:
        return
    if up.size > MAX_BYTES:
        _say("warning", t("deck.err.too_big", lang, size=up.size, limit=MAX_BYTES))
        return
    try:
        deck, notes = from_json(up.getvalue())
    except DeckError as exc:
        _say("warning", _msg(exc.key, exc.params, lang))
        return
    _replace(deck)
    for note in notes:
        _say("info", _msg(note.key, note.params, lang))
    _say("success", t("deck.imported", lang, n=len(deck), title=md_escape(deck.title)))


@safe_callback
def _share() -> None:
    deck = _pull(current())
    st.session_state[DECK] = deck
    st.session_state[LINK] = _share_id(deck)


def deck_link(sid: str) -> str:
    """The link that opens the deck page with this deck."""
    base = (getattr(st.context, "url", None) or "").split("?", 1)[0].split("#", 1)[0]
    if not base.rstrip("/").endswith("/" + PAGE_NAME):
        base = base.rstrip("/") + "/" + PAGE_NAME if base else "/" + PAGE_NAME
    return f"{base}?deck={sid}"


def summary(slide: Slide, lang: str) -> str:
    """What a slide shows, in one line (literal markdown)."""
    q = slide.query
    parts = [t(BY_NAME[slide.page].title_key, lang)]
    if q.get("model"):
        parts.append(md_escape(q["model"]))
    if q.get("layer") is not None and q.get("head") is not None:
        parts.append(t("widgets.layer_head", lang, layer=md_escape(q["layer"]), head=md_escape(q["head"])))
    if q.get("step"):
        parts.append(t("deck.step", lang, step=md_escape(q["step"])))
    for key in ("steps_tab", "pe_tab", "mask_tab", "ex_tab"):
        if slide.options.get(key):
            parts.append(md_escape(slide.options[key]))
    if q.get("hl_tab"):
        parts.append(md_escape(q["hl_tab"]))
    text = q.get("text", "")
    if text:
        parts.append("“" + md_escape(text if len(text) <= 60 else text[:60] + "…") + "”")
    return " · ".join(parts)


def render(lang: str, device: str = "cpu") -> None:
    """The Lesson deck page."""
    ss = st.session_state
    deck = current()
    st.title(t("page.deck", lang))
    st.caption(t("deck.caption", lang))
    ss.setdefault(K_TITLE, deck.title)
    ss.setdefault(K_DECK_LANG, deck.lang)
    c1, c2 = st.columns([4, 1])
    c1.text_input(t("deck.title", lang), key=K_TITLE, max_chars=MAX_TITLE, placeholder=t("deck.title_ph", lang))
    c2.selectbox(t("deck.lang", lang), LANGS, key=K_DECK_LANG, format_func=LANG_NAMES.get, help=t("deck.lang_help", lang))
    b1, b2, b3 = st.columns(3)
    b1.button(t("deck.present", lang), key="deck_present", on_click=_present, args=(0,), type="primary",
              disabled=not deck.slides, width="stretch", icon=":material/slideshow:")
    b2.button(t("deck.example", lang), key="deck_example", on_click=_example, width="stretch",
              icon=":material/school:", help=t("deck.example_help", lang))
    b3.button(t("deck.new", lang), key="deck_new", on_click=_new, width="stretch", disabled=not deck.slides,
              icon=":material/delete_sweep:")
    if not deck.slides:
        st.info(t("deck.empty", lang), icon=":material/add_to_queue:")
        outline(example(lang)[0], lang)
    n = len(deck)
    for i, slide in enumerate(deck.slides):
        kt, kn = _keys(i)
        ss.setdefault(kt, slide.title)
        ss.setdefault(kn, slide.note)
        with st.container(border=True, key=f"deck_slide_{i}"):
            st.markdown(f"**{t('deck.slide_n', lang, i=i + 1, n=n)}** · {summary(slide, lang)}")
            row = st.container(horizontal=True, key=f"deck_buttons_{i}")
            for label, icon, fn, args, off, key in (
                    (t("deck.open", lang), ":material/open_in_new:", _visit, (i,), False, "open"),
                    (t("deck.present_here", lang), ":material/slideshow:", _present, (i,), False, "from"),
                    (t("deck.up", lang), ":material/arrow_upward:", _move, (i, -1), i == 0, "up"),
                    (t("deck.down", lang), ":material/arrow_downward:", _move, (i, 1), i == n - 1, "down"),
                    (t("deck.delete", lang), ":material/delete:", _delete, (i,), False, "del")):
                row.button(label, key=f"deck_{key}_{i}", on_click=fn, args=args, disabled=off, icon=icon)
            st.text_input(t("deck.slide_title", lang), key=kt, max_chars=MAX_TITLE)
            st.text_area(t("deck.note", lang), key=kn, max_chars=MAX_NOTE, height=80,
                         placeholder=t("deck.note_ph", lang))
    deck = _pull(deck)
    ss[DECK] = deck
    st.divider()
    files(deck, lang)
    handout(deck, device)


def outline(deck: Deck, lang: str) -> None:
    """A deck's slides as a table: number, title, page (the example deck's, under an empty deck)."""
    st.markdown(t("deck.outline", lang, title=md_escape(deck.title)))
    st.table([{t("deck.col.n", lang): i, t("deck.col.title", lang): s.title,
               t("deck.col.page", lang): t(BY_NAME[s.page].title_key, lang)}
              for i, s in enumerate(deck.slides, start=1)], hide_index=True)


def files(deck: Deck, lang: str) -> None:
    """Export, import, the short link."""
    st.subheader(t("deck.files", lang))
    if lang != "en":  # Streamlit's drop zone speaks English: its button in the interface language, its hint hidden
        st.markdown(UPLOAD_CSS.replace("LABEL", t("deck.upload_button", lang).replace('"', "")),
                    unsafe_allow_html=True)  # a catalogue string, no user text
    c1, c2 = st.columns(2)
    with c1:
        st.download_button(t("deck.export", lang), to_json(deck).encode("utf-8"),
                           f"{slug(deck.title or 'deck')}.json", "application/json", key="deck_export",
                           disabled=not deck.slides, icon=":material/download:", help=t("deck.export_help", lang))
        st.button(t("deck.share", lang), key="deck_share", on_click=_share, disabled=not deck.slides,
                  icon=":material/link:", help=t("deck.share_help", lang))
        sid = st.session_state.get(LINK)
        if sid and shortlinks.get("deck", sid) == to_json(deck):
            st.code(deck_link(sid), language=None, wrap_lines=True)
            st.caption(t("deck.share_caption", lang))
        elif sid:
            st.caption(t("deck.share_stale", lang))
    with c2:
        st.file_uploader(t("deck.import", lang), type=["json"], key=K_UPLOAD, on_change=_import,
                         help=t("deck.import_help", lang, kb=MAX_BYTES // 1024))


# ---- the handout ----------------------------------------------------------------------------------------------------
def handout(deck: Deck, device: str) -> None:
    """Make the handout (a button: it runs the slides' sentences), then download it."""
    ss, lang = st.session_state, session_lang()
    key = hashlib.sha256((to_json(deck) + device).encode("utf-8")).hexdigest()
    st.subheader(t("deck.handout", lang))
    st.caption(t("deck.handout_caption", lang, lang_name=LANG_NAMES.get(deck.lang, deck.lang)))
    made = ss.get(HANDOUT)
    if st.button(t("deck.handout.make", lang), key="deck_handout_make", disabled=not deck.slides,
                 icon=":material/picture_as_pdf:"):
        with st.spinner(t("deck.handout.making", lang, n=len(deck))):
            ss[HANDOUT] = made = (key, handout_bytes(deck, device))
    if made and made[0] == key:
        st.download_button(t("deck.handout.download", lang, kb=max(1, len(made[1]) // 1024)), made[1],
                           f"{slug(deck.title or 'deck')}.pdf", "application/pdf", key="deck_handout",
                           icon=":material/download:", type="primary")
    elif made:
        st.caption(t("deck.handout.stale", lang))
