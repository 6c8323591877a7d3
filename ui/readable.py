"""The notice for text the chosen model cannot read (Korean on MiniLM: jamo and [UNK]), with a one-click switch
to the model that can (multilingual-e5-small). Decided from the page's own trace (analysis.readability)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from analysis.readability import readability
from i18n import t
from model.trace import AttentionTrace

from . import state as s
from .view import md_escape, model_label

MULTILINGUAL = "multilingual-e5-small"


@s.safe_callback
def switch_to_multilingual() -> None:
    st.session_state[s.K_MODEL] = MULTILINGUAL
    s.clear_url_notices()


def unreadable_notice(trace: AttentionTrace | None, model_name: str, lang: str, *, key: str = "_hl_switch_e5",
                      on_click: Callable = switch_to_multilingual, args: tuple = ()) -> bool:
    """Draw the notice (and the switch) when some words of the text are unreadable for this model; True if drawn.
    The sidebar's notice switches the sidebar's model; a lab that runs a model of its own passes its own `key` and
    `on_click` (which sets its own model picker to MULTILINGUAL)."""
    if trace is None or model_name == MULTILINGUAL or MULTILINGUAL not in s.available_models():
        return False
    r = readability(trace)
    if not r.n_unreadable:
        return False
    examples = ", ".join(f"“{w}”" for w in r.unreadable)
    st.warning(t("e5.unreadable", lang, model=model_name, n=r.n_unreadable, total=r.n_words, examples=examples),
               icon=":material/translate:")
    st.button(t("e5.switch", lang), key=key, on_click=on_click, args=args, type="primary",
              icon=":material/swap_horiz:")
    return True


def translator_notice(model, unknown: list[str], lang: str) -> None:
    """A translator met words its vocabulary lacks (Korean, say): it reads English or Portuguese only; which models
    read the text."""
    examples = ", ".join(f"“{md_escape(w)}”" for w in unknown[:3])
    st.warning(t("s2s.translator_unreadable", lang, model=model_label(model.name, lang), n=len(unknown),
                 examples=examples, source=t(f"s2s.lang.{model.source_lang}", lang)), icon=":material/translate:")
