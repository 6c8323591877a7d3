"""Add to deck: the view on screen becomes the lesson deck's last slide. Drawn on every page, so no page module:
`add_button()` by the shell (ui/shell.py) in the sidebar under "Share with the class", `add_view()` by the Head lab's
"Save in the deck" (ui/cause.py). The deck page itself: ui/deck.py; the deck in session state: ui/present.py."""

from __future__ import annotations

import dataclasses

import streamlit as st

from i18n import t

from .deckfile import OPTION_KEYS, QUERY_KEYS, DeckError, capture, page_name
from .pages import BY_NAME
from .present import DECK, PAGE, PAGE_NAME, current
from .present import message as _msg
from .present import say as _say
from .state import safe_callback
from .view import md_escape
from .widgets import session_lang


def add_button(where, lang: str) -> None:
    """"Add to deck": the view on screen becomes the deck's last slide."""
    on_deck = page_name(st.session_state.get(PAGE, "")) == PAGE_NAME
    where.button(t("deck.add", lang, n=len(current())), key="deck_add", on_click=add_view, width="stretch",
                 icon=":material/add_to_queue:", disabled=on_deck,
                 help=t("deck.add_help_here" if on_deck else "deck.add_help", lang))


@safe_callback
def add_view(extra: dict | None = None) -> None:
    """The view on screen as the deck's last slide (also the Head lab's "Save in the deck"); `extra`: link values the
    URL leaves out (a widget bound to it omits its default value)."""
    ss, lang = st.session_state, session_lang()
    deck = current()
    page = page_name(ss.get(PAGE, ""))
    query = {**{k: st.query_params.get(k) for k in QUERY_KEYS}, **(extra or {})}
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
