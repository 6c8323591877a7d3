"""The lesson deck (Streamlit): "Add to deck" in the sidebar and the Lesson deck page (title, slides with a title and a
note each, reorder, delete, export / import as JSON, one short link, the example decks, the PDF handout). The deck
itself, its file and its checks: ui/deckfile.py (pure); the present mode (showing a slide, the deck's link, the bar
above every page while presenting, leaving it): ui/present.py.

"Add to deck" (the sidebar's button, the Head lab's "Save in the deck"): ui/deck_add.py.
"""

from __future__ import annotations

import dataclasses
import hashlib

import streamlit as st

from i18n import LANG_NAMES, LANGS, t
from model.data import TASKS

from . import present, shortlinks
from .deckfile import (
    MAX_BYTES,
    MAX_NOTE,
    MAX_TITLE,
    TAB_KEYS,
    Deck,
    DeckError,
    Slide,
    example,
    from_json,
    tab_label,
    to_json,
)
from .handout import handout_bytes
from .pages import BY_NAME
from .present import DECK, K_DECK_LANG, K_TITLE, PAGE_NAME, current
from .present import message as _msg
from .present import push as _push
from .present import say as _say
from .present import share_id as _share_id
from .present import widget_keys as _keys
from .state import safe_callback
from .view import md_escape
from .widgets import session_lang, slug

LINK, HANDOUT = "_deck_link", "_deck_handout"
K_UPLOAD = "deck_upload"

UPLOAD_CSS = """<style>
[data-testid="stFileUploaderDropzoneInstructions"] { display: none !important; }
[data-testid="stFileUploaderDropzone"] button > * { display: none !important; }
[data-testid="stFileUploaderDropzone"] button::after { content: "LABEL"; }
</style>"""


# ---- the page -------------------------------------------------------------------------------------------------------
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


@safe_callback
def _present(i: int) -> None:
    deck = _pull(current())
    st.session_state[DECK] = deck
    present.start(deck, i)


@safe_callback
def _visit(i: int) -> None:
    deck = _pull(current())
    st.session_state[DECK] = deck
    present.visit(deck, i)


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
    if q.get("s2s_model"):  # the Encoder-decoder page's own model, task, teacher forcing, layer and step
        parts.append(md_escape(q["s2s_model"]))
    if q.get("s2s_task") in TASKS:
        parts.append(t(f"s2s.task.{q['s2s_task']}", lang))
    if q.get("s2s_tf") == "1":
        parts.append(t("s2s.teacher", lang))
    if q.get("s2s_layer") is not None:
        parts.append(f"{t('s2s.decoder_layer', lang)} {md_escape(q['s2s_layer'])}")
    for key in ("step", "s2s_step"):
        if q.get(key):
            parts.append(t("deck.step", lang, step=md_escape(q[key])))
    key = TAB_KEYS.get(slide.page)
    if key and q.get(key):
        parts.append(md_escape(tab_label(key, q[key], lang)))
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
