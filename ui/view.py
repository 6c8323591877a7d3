"""The View every page reads, and `resolve`, which makes it from what the sidebar read; `read_link`, which checks a
link's values on a session's first run (pure: no Streamlit here, so it is tested without Streamlit's runtime,
tests/test_view.py). Every check of a link is here: `read_link` the text, model, device, language, lecture mode and
room, `resolve` the layer, head, token and block once the model is known.

    view.model                # LoadedModel (cached once per process, shared)
    view.trace                # AttentionTrace (with intermediates) for (model, text), or None when there is no valid text
    view.layer, view.head     # counted from 0, already clamped to the model (and block) ranges
    view.token                # index of the selected query token (a row of view.block's attention)
    view.block                # "encoder" | "decoder_self" | "cross" ("encoder" for encoder-only models,
                              # "decoder_self" for decoder-only ones)
    view.lecture, view.text, view.model_name, view.device ("cpu" / "cuda", resolved), view.notices, view.lang

The sidebar (ui/shell.py) reads its controls, loads the model and the trace, then asks `resolve` for the View: the
block, layer, head and token clamped to the model, the values a link asked for (`pending`, read once by
ui/state.py) validated, and the notices to show. `resolve` changes nothing: it returns the session-state writes
the shell applies before it draws the block, layer, head and token pickers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analysis.explore import default_token
from i18n import LANGS, Shown, catalogue, pick_lang, t
from model import DEFAULT_MODEL
from model.examples import DEFAULT_TEXT
from model.registry import get_spec, models_with
from model.tokenizer import shown_piece

if TYPE_CHECKING:
    from model.trace import AttentionTrace

# keys of the shared widgets (stable: tests and the URL address them)
K_TEXT, K_MODEL, K_DEVICE, K_LAYER, K_HEAD, K_TOKEN, K_LECTURE, K_BLOCK, K_PRESET, K_LANG = (
    "text", "model", "device", "layer", "head", "token", "lecture", "block", "preset", "lang")
K_ROOM = "room"  # a student's class (issue 29): the link `/?room=CODE`; kept in the URL on every page
# a student's anonymous id in a room, kept in the URL beside it: a browser that reconnects to another app process
# (one was killed) reruns with its URL, so the store still counts its answer once, as the same student's
K_SID = "sid"
SESSION_ID = "_hl_class_session"  # the session state's copy of it
SID = re.compile(r"[A-Za-z0-9_-]{16,43}")
ROOM_CODE = re.compile(r"[A-Za-z0-9_-]{4,64}")  # what a room code may look like (the store decides if it exists)
TRACE_KEY = "_hl_trace_key"  # (model, text, block) of the last run's token picker: a new one selects its default
TOUR_STEP, TOUR_URL_DONE = "_tour_step", "_tour_url_done"  # the tour's step, and whether it has read its link
TRANSLATORS = tuple(models_with(translation=True))  # real translators (model/bergamot.py), as the registry declares
BLOCKS_OF_KIND = {"encoder-decoder": ["encoder", "decoder_self", "cross"], "decoder": ["decoder_self"]}  # else encoder


# ---- the view ---------------------------------------------------------------------------------------------------
@dataclass
class View:
    text: str
    model_name: str
    device: str
    layer: int = 0
    head: int = 0
    token: int = 0
    lecture: bool = False
    model: object = None
    trace: AttentionTrace | None = None
    notices: list[str] = field(default_factory=list)
    block: str = "encoder"
    lang: str = "en"  # interface language: "en" | "ko" (i18n/)

    @property
    def n_layers(self) -> int:
        return block_layers(self.model, self.block)

    @property
    def n_heads(self) -> int:
        return self.model.n_heads(self.block)

    def shown(self, token: str) -> str:
        """A token as a reader sees it: a byte-level piece as the text it spells ("ĠParis" -> "␣Paris", a Hangul
        syllable's bytes as the syllable), any other token as it is (model.tokenizer.shown_piece)."""
        return shown_piece(token, self.model.tokenizer.scheme if self.model is not None else None)

    def on_block(self, block: str) -> View:
        """This view on another block of the model, its layer and head clamped to that block (an encoder-decoder's
        decoder may have more layers or heads than its encoder)."""
        return dataclasses.replace(self, block=block, layer=min(self.layer, block_layers(self.model, block) - 1),
                                   head=min(self.head, self.model.n_heads(block) - 1))


def is_translator(name: str) -> bool:
    return name in TRANSLATORS


def model_label(name: str, lang: str) -> str:
    """A model's label in the interface language: the catalogue's (shell.model.<name>), or (a folder registered by
    whoever started the app) the registry's."""
    key = f"shell.model.{name}"
    return t(key, lang) if key in catalogue(lang) else get_spec(name).label


def kind_blocks(model, kind: str) -> list[str]:
    """The attention blocks of a model with no trace yet (no text): its kind's, less the decoder self-attention that
    an SSRU decoder (a Bergamot translator) does not have."""
    blocks = BLOCKS_OF_KIND.get(kind, ["encoder"])
    ssru = model is not None and model.config.decoder_mixer == "ssru"
    return [b for b in blocks if not (ssru and b == "decoder_self")]


def block_layers(model, block: str) -> int:
    """Layers of a block (model.loaded.LoadedModel.n_layers)."""
    return model.n_layers(block)


# ---- user text in notices -----------------------------------------------------------------------------------------
def md_escape(text: object) -> str:
    """User text made literal for st.markdown / st.warning / st.info (no emphasis, links, headings or HTML). Only for
    markdown: a plain-text element (a selectbox option, a figure) or a code span would show the backslashes; there,
    pass the raw text (or the catalogue's code-span field, "{token:``}")."""
    s = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text))
    return Shown(re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", s), text)  # a particle reads the raw text


def show_value(raw) -> str:
    """A value from the link, shortened and made literal for a notice."""
    s = str(raw)
    return md_escape(repr(s if len(s) <= 40 else s[:40] + "…"))


# ---- from the sidebar's controls to the View ----------------------------------------------------------------------
@dataclass(frozen=True)
class Controls:
    """What the sidebar's first controls hold this run, the model as loaded (the default one when the chosen one
    could not load) and the device as resolved."""
    text: str
    model_name: str
    device: str
    lecture: bool = False
    lang: str = "en"


@dataclass
class Resolution:
    view: View
    blocks: list[str]  # the block picker's choices (one: no picker)
    writes: dict[str, object]  # session state to set before the pickers are drawn (key -> value), in this order
    used: list[str]  # the link's pending values read this run (removed from the pending ones)
    url_notices: list[str]  # notices about the link, kept until the user changes a control


def resolve(controls: Controls, model, trace: AttentionTrace | None, *, kind: str, session: Mapping,
            pending: Mapping, kept: Sequence[str] = (), notices: Sequence[str] = ()) -> Resolution:
    """The View of this run. `model`: the loaded model (`n_layers(block)`, `n_heads(block)`); `trace`: the sidebar's
    trace, or None (no text, an error, or a page with its own model); `kind`: the registry's kind of the model
    (its blocks when there is no trace); `session`: the session state as the run found it (the pickers' values,
    K_TOKEN's presence, TRACE_KEY); `pending`: the link's layer / head / token / block not read yet; `kept`: the
    link's notices of earlier runs; `notices`: this run's notices so far (device, model, trace)."""
    lang = controls.lang
    writes: dict[str, object] = {}
    used: list[str] = []
    url_notices: list[str] = []
    run_notices = list(notices)
    if trace is not None and trace.truncated:
        run_notices.append(t("shell.truncated", lang, n=trace.n_tokens_untruncated, shown=len(trace.source_tokens)))

    def now(key: str, default=None):  # the session value after this run's writes so far
        return writes[key] if key in writes else session.get(key, default)

    def choose(key: str, n: int, unit: str, default: int = 0) -> int:
        """A valid index in range(n) for the picker `key`: the link's value when it is one (else `default`, with a
        notice), else the session's, clamped."""
        if key in pending and key not in used:
            raw = pending[key]
            used.append(key)
            word = t(f"shell.unit.{unit}", lang)
            try:
                val = int(str(raw).strip())
            except ValueError:
                url_notices.append(t("shell.url.not_int", lang, label=word, value=show_value(raw), default=default))
                val = default
            if not 0 <= val < n:
                url_notices.append(t("shell.url.out_of_range", lang, Label=word[:1].upper() + word[1:], label=word,
                                     value=val, max=n - 1, default=default))
                val = default
            writes[key] = val
        cur = now(key)
        if not isinstance(cur, int) or not 0 <= cur < n:
            writes[key] = cur = default if not isinstance(cur, int) else min(max(cur, 0), n - 1)
        return cur

    # block (encoder-decoder only), then layer / head / token, clamped to this model
    blocks = trace.blocks if trace is not None else kind_blocks(model, kind)
    if K_BLOCK in pending:
        raw = pending[K_BLOCK]
        used.append(K_BLOCK)
        if raw not in blocks:
            url_notices.append(t("shell.url.block", lang, value=show_value(raw), model=controls.model_name))
            raw = blocks[0]
        writes[K_BLOCK] = raw
    block = blocks[0]  # the only block of an encoder-only or a decoder-only model
    if len(blocks) > 1:
        if now(K_BLOCK) not in blocks:
            writes[K_BLOCK] = "encoder"
        block = now(K_BLOCK)
    layer = choose(K_LAYER, block_layers(model, block), "layer")
    head = choose(K_HEAD, model.n_heads(block), "head")

    if trace is not None:
        rows, _ = trace.axis_tokens(block)
        trace_key = (controls.model_name, controls.text, block)
        fresh = now(TRACE_KEY) is not None and now(TRACE_KEY) != trace_key
        writes[TRACE_KEY] = trace_key
        first = default_token(rows)
        if (fresh or (K_TOKEN not in session and K_TOKEN not in writes)) and K_TOKEN not in pending:
            writes[K_TOKEN] = first
        token = choose(K_TOKEN, len(rows), "token", default=first)
    else:
        token = session.get(K_TOKEN, 0) if isinstance(session.get(K_TOKEN, 0), int) else 0

    view = View(text=controls.text, model_name=controls.model_name, device=controls.device, layer=layer, head=head,
                token=token, lecture=controls.lecture, model=model, trace=trace,
                notices=[*kept, *url_notices, *run_notices], block=block, lang=lang)
    return Resolution(view, list(blocks), writes, used, url_notices)


# ---- a link's values, checked (a session's first run) ----------------------------------------------------------
@dataclass
class Link:
    writes: dict[str, object]  # session state to set: the link's values, or their defaults where one is wrong
    pending: dict[str, str]  # layer / head / token / block as the link wrote them: `resolve` checks them later
    notices: list[str]  # one notice per wrong value, in the link's language


def read_link(query: Mapping, models: Sequence[str], devices: Sequence[str], max_text: int) -> Link:
    """The checked values of a link's query string (`query.get(key)`: the value or None): an invalid one (an unknown
    model, 100,000 characters of text, a malformed room code) falls back to its default with a notice."""
    notices: list[str] = []
    writes: dict[str, object] = {}
    lg = pick_lang(query.get(K_LANG))  # the notices below are in the link's language
    text = query.get(K_TEXT)
    if text is not None:
        if len(text) > max_text:
            notices.append(t("shell.url.text_long", lg, n=len(text), limit=max_text))
            text = DEFAULT_TEXT
        writes[K_TEXT] = text
    name = query.get(K_MODEL)
    if name is not None:
        if name in models:
            writes[K_MODEL] = name
        else:
            notices.append(t("shell.url.model", lg, value=show_value(name), default=DEFAULT_MODEL,
                             models=", ".join(models)))
            writes[K_MODEL] = DEFAULT_MODEL
    dev = query.get(K_DEVICE)
    if dev is not None:
        if dev in devices:
            writes[K_DEVICE] = dev
        else:
            notices.append(t("shell.url.device", lg, value=show_value(dev)))
            writes[K_DEVICE] = "auto"
    lang = query.get(K_LANG)
    if lang is not None:
        if lang in LANGS:
            writes[K_LANG] = lang
        else:
            notices.append(t("shell.url.lang", lg, value=show_value(lang), langs=", ".join(LANGS)))
            writes[K_LANG] = "en"
    lec = query.get(K_LECTURE)
    if lec is not None:
        writes[K_LECTURE] = lec.strip().lower() in ("1", "true", "yes", "on")
    room = query.get(K_ROOM)
    if room is not None:
        if ROOM_CODE.fullmatch(room):
            writes[K_ROOM] = room
            sid = query.get(K_SID)
            if sid is not None and SID.fullmatch(sid):  # the same student, back after a reconnect (else the caller
                writes[SESSION_ID] = sid  # gives a new student an anonymous id)
        else:
            notices.append(t("shell.url.room", lg, value=show_value(room)))
    # layer / head / token / block are checked once the model and the trace are known
    pending = {k: query.get(k) for k in (K_LAYER, K_HEAD, K_TOKEN, K_BLOCK) if query.get(k) is not None}
    return Link(writes, pending, notices)
