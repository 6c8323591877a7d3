"""The notice for text the chosen model cannot read (Korean on MiniLM: jamo and [UNK]), with a one-click switch
to the model that can (multilingual-e5-small). Decided from the page's own trace (analysis.readability)."""

from __future__ import annotations

import streamlit as st

from analysis.readability import readability
from i18n import t
from model.trace import AttentionTrace

from . import state as s

MULTILINGUAL = "multilingual-e5-small"


@s.safe_callback
def switch_to_multilingual() -> None:
    st.session_state[s.K_MODEL] = MULTILINGUAL
    s.clear_url_notices()


def unreadable_notice(trace: AttentionTrace | None, model_name: str, lang: str) -> bool:
    """Draw the notice (and the switch) when some words of the text are unreadable for this model; True if drawn."""
    if trace is None or model_name == MULTILINGUAL or MULTILINGUAL not in s.available_models():
        return False
    r = readability(trace)
    if not r.n_unreadable:
        return False
    examples = ", ".join(f"“{w}”" for w in r.unreadable)
    st.warning(t("e5.unreadable", lang, model=model_name, n=r.n_unreadable, total=r.n_words, examples=examples),
               icon=":material/translate:")
    st.button(t("e5.switch", lang), key="_hl_switch_e5", on_click=switch_to_multilingual, type="primary",
              icon=":material/swap_horiz:")
    return True
