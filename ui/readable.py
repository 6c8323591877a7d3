"""The notice for text the chosen model cannot read (Korean on MiniLM: jamo and [UNK]; on SmolLM2: UTF-8 byte
pieces; on a translator: unknown pieces), with a one-click switch to a model that reads it. What the notice says
the tokenizer did is measured on the text (analysis.readability: unknown tokens, jamo or byte pieces), and the
model it offers comes from the registry (model.registry.readers: the models declared to read the scripts of the
unreadable words), never from a name written here."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from analysis.readability import Readability, from_unknown_words, readability
from i18n import t
from i18n.catalog import catalogue, code_span
from model import get_spec, models_with
from model.registry import readers
from model.scripts import HANGUL, LATIN
from model.trace import AttentionTrace

from . import state as s
from .view import md_escape, model_label

# the multilingual encoder of the labs that need one (heads across languages): the first that reads Latin and Hangul
MULTILINGUAL = models_with(kind="encoder", reads=(LATIN, HANGUL))[0]


@s.safe_callback
def set_model(key: str, name: str) -> None:
    """A switch's callback: the model picker `key` (the sidebar's by default) takes `name`."""
    st.session_state[key] = name
    s.clear_url_notices()


def switch_to_multilingual() -> None:  # kept for callers of the old switch
    set_model(s.K_MODEL, MULTILINGUAL)


def switch_target(r: Readability, model_name: str, among: list[str] | None = None) -> str | None:
    """The model to offer for `r`'s unreadable words: among `among` (default: every model the app has), those the
    registry says read their scripts, other than `model_name`; one of the same kind first (a translator gets a
    translator-page model), else the first in the registry's order. None when no model reads them."""
    names = [n for n in readers(r.scripts, among if among is not None else s.available_models()) if n != model_name]
    if not names:
        return None
    kind = get_spec(model_name).kind if model_name in s.available_models() else None
    same = [n for n in names if get_spec(n).kind == kind]
    return (same or names)[0]


def how_split(r: Readability, lang: str) -> str:
    """What the tokenizer made of the unreadable words, as measured: "unknown tokens ([UNK])", "loose letters
    (jamo)", "pieces of their UTF-8 bytes", joined."""
    unk = ", ".join(code_span(u) for u in r.unknown_tokens or ("[UNK]",))  # "<unk>" shown as text, not a tag
    parts = [t(f"read.how.{k}", lang, unk=unk) for k in r.kinds]
    if not parts:
        return ""
    out = parts[-1]
    for p in reversed(parts[:-1]):
        out = t("read.how.join", lang, a=p, b=out)
    return out


def script_names(scripts: tuple[str, ...], lang: str) -> str:
    """The scripts in the interface language ("Hangul" -> "한글"), a name the catalogue lacks as it is."""
    cat = catalogue(lang)
    return ", ".join(cat.get(f"read.script.{x}", x) for x in scripts)


def notice(r: Readability, model_name: str, lang: str, *, stopped: bool = False, lead: str = "") -> None:
    """The warning: `lead` (a translator's "reads English only"), which words, what the tokenizer made of them,
    which models read them; `stopped`: the page shows nothing of this text (a translation of it would be noise)."""
    examples = ", ".join(f"“{md_escape(w)}”" for w in r.unreadable)
    msg = (lead + " " if lead else "") + t("read.unreadable", lang, model=model_name, n=r.n_unreadable, total=r.n_words, examples=examples,
            how=how_split(r, lang))
    names = readers(r.scripts, s.available_models())
    if names:
        msg += " " + t("read.readers", lang, scripts=script_names(r.scripts, lang), models=", ".join(names))
    if stopped:
        msg += " " + t("read.stopped", lang)
    st.warning(msg, icon=":material/translate:")


def unreadable_notice(trace: AttentionTrace | None, model_name: str, lang: str, *, key: str = "_hl_switch_e5",
                      on_click: Callable | None = None, args: tuple = (), picker: str | None = None,
                      among: list[str] | None = None, r: Readability | None = None,
                      stopped: bool = False, lead: str = "", switch: bool = True) -> bool:
    """Draw the notice (and the switch) when some words of the text are unreadable for this model; True if drawn.
    The switch sets the model picker `picker` (the sidebar's by default) to the model the registry offers (among
    `among`, when given: a lab's or a page's own models); `on_click(*args)` replaces that callback. `r`: the
    readability when the page measured it itself (a translator's unknown words), else it comes from `trace`;
    `stopped` and `lead`: see `notice`; `switch=False`: the notice alone."""
    if r is None:
        if trace is None:
            return False
        r = readability(trace)
    if not r.n_unreadable:
        return False
    target = switch_target(r, model_name, among) if switch else None
    notice(r, model_name, lang, stopped=stopped, lead=lead)
    if target is not None:
        click, click_args = (on_click, args) if on_click is not None else (set_model, (picker or s.K_MODEL, target))
        st.button(t("read.switch", lang, model=target), key=key, on_click=click, args=click_args, type="primary",
                  icon=":material/swap_horiz:")
    return True


def translator_notice(model, unknown: list[str], lang: str, *, text: str = "", among: list[str] | None = None,
                      picker: str | None = None, key: str = "s2s_switch", stop: bool = False) -> bool:
    """A translator met words its vocabulary lacks (Korean, say): it reads English or Portuguese only; what its
    vocabulary made of them and which models read them (the registry's). `text`: the whole text (its words are
    counted); `among`: the models a switch may offer, set in the model picker `picker` (None: no switch); `stop`: the
    caller shows nothing of a mostly unreadable text, and the notice says so. True when the text is mostly
    unreadable."""
    r = from_unknown_words(text or " ".join(unknown), unknown)
    lead = t("read.translator", lang, model=model_label(model.name, lang),
             source=t(f"s2s.lang.{model.abilities.translation.source}", lang))
    unreadable_notice(None, model.name, lang, key=key, picker=picker, among=among, r=r, lead=lead,
                      stopped=stop and r.mostly_unreadable, switch=among is not None)
    return r.mostly_unreadable
