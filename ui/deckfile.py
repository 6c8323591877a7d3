"""A lesson deck: an ordered list of saved views of the app (page, the URL's query, the page's options), each with a
title and a note, plus the deck's title and language. Pure: no Streamlit here (the page and the present mode are
ui/deck.py), so it is tested without Streamlit's runtime (tests/test_deckfile.py).

    deck = Deck(title="Attention", lang="en")
    deck = deck.add(Slide("steps", {"text": "I am good", "layer": "0", "steps_tab": "qkv"}))
    text = to_json(deck)                 # a small JSON file (FORMAT, VERSION)
    deck, notes = from_json(text)        # validated; `notes`: what was dropped (unknown pages, keys), as DeckNotes

The JSON file:

    {"format": "headlight-deck", "version": 2, "title": "...", "lang": "en",
     "slides": [{"page": "steps", "title": "...", "note": "...",
                 "query": {"text": "...", "layer": "0", "steps_tab": "qkv"}, "options": {}}]}

`page` is the page's URL path (ui/pages.py; the default page by its name, "explorer"). `query` holds what the URL
carries (QUERY_KEYS: the sidebar's view and the page's own keys: the tour's step, the open tab by its id, the
Encoder-decoder page's model, task, teacher forcing, layer, head and step), every value a string as in a URL;
`options` the page's own choices that the URL does not carry (OPTION_KEYS: the explorer's display options), strings
or booleans. A tab is kept by its id ("qkv", the end of its catalogue key "steps.tab.qkv"), never by its label, so a
renamed label still opens the same tab; a version 1 file's tab label (among its options) is read as its id.
Importing is strict about shapes and lenient about content: a file that is
not a deck, too large, or with a value of the wrong type is refused with a DeckError (an i18n key and its values,
never a traceback); an unknown page drops its slide, an unknown key is dropped, an over-long title or note is cut,
each with a DeckNote. The values themselves (layer 99, an unknown model, a tab no page has) are checked by the app
when the slide is shown, as any link's are (ui/view.py), with the same notices.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from i18n import LANGS, catalogue

from .pages import BY_NAME, DEFAULT, PAGES
from .pages import HEADS_GENERATION as HEADS_GENERATION  # the Head lab's link groups, read by ui/present.py
from .pages import HEADS_TEXT as HEADS_TEXT
from .pages import S2S_QUERY as S2S_QUERY

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "decks"  # pipeline.<lang>.json: the lecture's pipeline
FORMAT = "headlight-deck"
VERSION = 2  # 2: a tab by its id in the query (1: by its label, among the options)
MAX_BYTES = 256 * 1024  # the largest file imported (and the short-link store's limit, ui/shortlinks.py)
MAX_SLIDES = 100
MAX_TITLE = 200  # characters of a deck's or a slide's title
MAX_NOTE = 2_000  # characters of a slide's note
MAX_TEXT = 20_000  # characters of a slide's sentence (ui/state.py MAX_TEXT_CHARS, the text box's limit)
MAX_VALUE = 200  # characters of any other query or option value
LONG_KEYS = ("text", "s2s_target", "hl_clean", "hl_corrupt")  # sentences and a typed target: up to MAX_TEXT

# what the URL carries (every page's: VIEW_KEYS, ui/view.py K_*; each page's own keys, declared on its Page in ui/pages.py:
# the tour's step, the open tab's id, the Encoder-decoder page's model, task, teacher forcing, layer, head, step, ...)
VIEW_KEYS = ("text", "model", "device", "layer", "head", "token", "block", "lecture", "lang")  # every page's
# the open tab of a page, by its id (the last part of its catalogue key: "ffn" for "steps.tab.ffn"), never its label
TAB_KEYS = {p.name: p.tab for p in PAGES if p.tab}  # each page's tab key: {"explorer": "ex_tab", ...} (ui/pages.py)
# the two labs' lazy tabs, by catalogue key (ui/pe_lab.py, ui/mask_lab.py; the handout draws them too, ui/handout.py)
PE_TAB_KEYS = ["pe.tab.table", "pe.tab.sentence", "pe.tab.learned", "pe.tab.rope"]
MASK_TAB_KEYS = ["masks.tab.padding", "masks.tab.look_ahead"]
TAB_LABELS = {p.tab: p.tab_labels for p in PAGES if p.tab}  # each tab key's label prefixes: {"ex_tab": ("ex.tab.",)}
PAGE_QUERY = {p.name: p.query for p in PAGES if p.query}  # each page's own keys in its link (ui/pages.py Page.query)
# the pages' own choices the URL does not carry, kept in session state: the explorer's options
PAGE_OPTIONS = {p.name: p.options for p in PAGES if p.options}
QUERY_KEYS = (*VIEW_KEYS, *dict.fromkeys(k for keys in PAGE_QUERY.values() for k in keys))
OPTION_KEYS = tuple(k for keys in PAGE_OPTIONS.values() for k in keys)
BOOL_OPTIONS = ("ex_hide_special", "ex_merge_words")
# a version 1 file kept a lab's open tab among its options, by its label, and the Encoder-decoder page's teacher
# forcing among its options: read as the query's tab id and `s2s_tf`
LEGACY_OPTIONS = {"ex_tab": "ex_tab", "steps_tab": "steps_tab", "pe_tab": "pe_tab", "mask_tab": "mask_tab",
                  "teacher_forcing": "s2s_tf"}
PRESENT_KEYS = ("deck", "slide", "back")  # the present mode's place in the URL and the view to go back to
# when it ends: never part of a slide's view


class DeckError(ValueError):
    """A file that cannot be imported: `key` is the i18n catalogue key of the message, `params` its values."""

    def __init__(self, key: str, **params):
        super().__init__(f"{key}: {params}")
        self.key = key
        self.params = params


@dataclass(frozen=True)
class DeckNote:
    """Something dropped or cut while importing (an i18n key and its values)."""
    key: str
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Slide:
    page: str  # the page's URL path name ("explorer", "steps", ...)
    query: dict[str, str] = field(default_factory=dict)
    options: dict[str, str | bool] = field(default_factory=dict)
    title: str = ""
    note: str = ""

    def url_query(self) -> dict[str, str]:
        """The query string to open this slide's view with."""
        return dict(self.query)


@dataclass(frozen=True)
class Deck:
    title: str = ""
    lang: str = "en"
    slides: tuple[Slide, ...] = ()

    def __len__(self) -> int:
        return len(self.slides)

    def add(self, slide: Slide) -> Deck:
        if len(self.slides) >= MAX_SLIDES:
            raise DeckError("deck.err.too_many", n=MAX_SLIDES)
        return dataclasses.replace(self, slides=(*self.slides, slide))

    def move(self, i: int, delta: int) -> Deck:
        """Slide i moved by delta places (clamped to the ends; out of range: unchanged)."""
        if not 0 <= i < len(self.slides):
            return self
        j = min(max(i + delta, 0), len(self.slides) - 1)
        slides = list(self.slides)
        slides.insert(j, slides.pop(i))
        return dataclasses.replace(self, slides=tuple(slides))

    def delete(self, i: int) -> Deck:
        if not 0 <= i < len(self.slides):
            return self
        return dataclasses.replace(self, slides=self.slides[:i] + self.slides[i + 1:])

    def edit(self, i: int, **changes) -> Deck:
        """Slide i with `title` and / or `note` changed (cut to their limits)."""
        if not 0 <= i < len(self.slides):
            return self
        cut = {"title": MAX_TITLE, "note": MAX_NOTE}
        changes = {k: str(v)[:cut[k]] for k, v in changes.items() if k in cut}
        slides = list(self.slides)
        slides[i] = dataclasses.replace(slides[i], **changes)
        return dataclasses.replace(self, slides=tuple(slides))

    def retitled(self, title: str) -> Deck:
        return dataclasses.replace(self, title=str(title)[:MAX_TITLE])


# ---- a tab by its id ------------------------------------------------------------------------------------------------
def tab_id(key: str, value: str) -> str:
    """The id of the tab `value` names for the tab state `key` (TAB_LABELS): an id stays as it is, a label of any
    language (a version 1 deck, an old link) becomes its tab's id; anything else is returned unchanged (the page
    opens its first tab with a notice, ui/widgets.py localised_tabs)."""
    prefixes = TAB_LABELS.get(key, ())
    for lang in LANGS:
        for name, label in catalogue(lang).items():
            if name.startswith(prefixes) and value in (label, name[name.rindex(".") + 1:]):
                return name[name.rindex(".") + 1:]
    return value


def tab_label(key: str, value: str, lang: str) -> str:
    """The label in `lang` of the tab with this id (the value itself when no tab has it)."""
    cat = catalogue(lang)
    for prefix in TAB_LABELS.get(key, ()):
        if prefix + value in cat:
            return cat[prefix + value]
    return value


# ---- a view -> a slide ---------------------------------------------------------------------------------------------
def page_name(url_path: str) -> str:
    """The page's name from st.navigation's url path ("" is the default page)."""
    return (url_path or "").strip("/") or DEFAULT.name


def capture(url_path: str, query: dict, options: dict, title: str = "") -> Slide:
    """The slide of the view the user sees: the page, the query string's view keys, the page's options that are
    set. Values of unknown keys (the present mode's deck / slide among them) are left out."""
    page = page_name(url_path)
    if page not in BY_NAME:
        raise DeckError("deck.err.page", page=page)
    keys = (*VIEW_KEYS, *PAGE_QUERY.get(page, ()))
    q = {k: str(query[k])[:MAX_TEXT if k in LONG_KEYS else MAX_VALUE] for k in keys if query.get(k) is not None}
    o = {k: (bool(options[k]) if k in BOOL_OPTIONS else str(options[k])[:MAX_VALUE])
         for k in PAGE_OPTIONS.get(page, ()) if options.get(k) is not None}
    return Slide(page, q, o, title=str(title)[:MAX_TITLE])


# ---- JSON ---------------------------------------------------------------------------------------------------------
def to_dict(deck: Deck) -> dict:
    return {"format": FORMAT, "version": VERSION, "title": deck.title, "lang": deck.lang,
            "slides": [{"page": s.page, "title": s.title, "note": s.note, "query": dict(s.query),
                        "options": dict(s.options)} for s in deck.slides]}


def to_json(deck: Deck) -> str:
    """The deck as a small JSON file (UTF-8 text, Hangul as it is)."""
    return json.dumps(to_dict(deck), ensure_ascii=False, indent=1)


def from_json(data: str | bytes) -> tuple[Deck, list[DeckNote]]:
    """A deck from an imported file: (deck, notes), or DeckError."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    if len(data) > MAX_BYTES:
        raise DeckError("deck.err.too_big", size=len(data), limit=MAX_BYTES)
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise DeckError("deck.err.encoding") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise DeckError("deck.err.json", line=getattr(exc, "lineno", 0), col=getattr(exc, "colno", 0)) from None
    return from_dict(obj)


def from_dict(obj) -> tuple[Deck, list[DeckNote]]:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise DeckError("deck.err.not_deck")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise DeckError("deck.err.type", where="version", want="number")
    if version > VERSION:
        raise DeckError("deck.err.version", version=version, supported=VERSION)
    notes: list[DeckNote] = []
    title = _text(obj.get("title", ""), "title", MAX_TITLE, notes)
    lang = obj.get("lang", "en")
    if lang not in LANGS:
        notes.append(DeckNote("deck.note.lang", {"value": _show(lang)}))
        lang = "en"
    slides_raw = obj.get("slides", [])
    if not isinstance(slides_raw, list):
        raise DeckError("deck.err.type", where="slides", want="list")
    if len(slides_raw) > MAX_SLIDES:
        raise DeckError("deck.err.too_many", n=MAX_SLIDES)
    slides = []
    for n, raw in enumerate(slides_raw, start=1):
        slide = _slide(raw, n, notes)
        if slide is not None:
            slides.append(slide)
    return Deck(title=title, lang=lang, slides=tuple(slides)), notes


def _show(value) -> str:
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)[:60]
    return s if len(s) <= 40 else s[:40] + "…"


def _text(value, where: str, limit: int, notes: list[DeckNote]) -> str:
    if not isinstance(value, str):
        raise DeckError("deck.err.type", where=where, want="text")
    if len(value) > limit:
        notes.append(DeckNote("deck.note.cut", {"where": where, "n": len(value), "limit": limit}))
        value = value[:limit]
    return value


def _slide(raw, n: int, notes: list[DeckNote]) -> Slide | None:
    where = f"slides[{n}]"
    if not isinstance(raw, dict):
        raise DeckError("deck.err.type", where=where, want="object")
    page = raw.get("page")
    if not isinstance(page, str):
        raise DeckError("deck.err.type", where=f"{where}.page", want="text")
    if page not in BY_NAME:
        notes.append(DeckNote("deck.note.page", {"n": n, "page": _show(page)}))
        return None
    title = _text(raw.get("title", ""), f"{where}.title", MAX_TITLE, notes)
    note = _text(raw.get("note", ""), f"{where}.note", MAX_NOTE, notes)
    query: dict[str, str] = {}
    options_raw = _mapping(raw.get("options", {}), f"{where}.options")
    for key, value in _mapping(raw.get("query", {}), f"{where}.query").items():
        if key not in QUERY_KEYS:
            notes.append(DeckNote("deck.note.key", {"n": n, "key": _show(key)}))
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise DeckError("deck.err.type", where=f"{where}.query.{_show(key)}", want="text")
        limit = MAX_TEXT if key in LONG_KEYS else MAX_VALUE
        query[key] = _text(str(value), f"{where}.query.{key}", limit, notes)
    for key, value in options_raw.items():  # a version 1 file's tab label or teacher forcing
        if key in LEGACY_OPTIONS and isinstance(value, (str, bool)):
            value = ("1" if value else "0") if isinstance(value, bool) else value[:MAX_VALUE]
            query.setdefault(LEGACY_OPTIONS[key], value)
    for key in TAB_LABELS:
        if key in query:
            query[key] = tab_id(key, query[key])
    options: dict[str, str | bool] = {}
    for key, value in options_raw.items():
        if key in LEGACY_OPTIONS:
            continue
        if key not in OPTION_KEYS:
            notes.append(DeckNote("deck.note.key", {"n": n, "key": _show(key)}))
            continue
        if key in BOOL_OPTIONS:
            if not isinstance(value, bool):
                raise DeckError("deck.err.type", where=f"{where}.options.{key}", want="bool")
            options[key] = value
        else:
            if not isinstance(value, str):
                raise DeckError("deck.err.type", where=f"{where}.options.{key}", want="text")
            options[key] = _text(value, f"{where}.options.{key}", MAX_VALUE, notes)
    return Slide(page, query, options, title=title, note=note)


def _mapping(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise DeckError("deck.err.type", where=where, want="object")
    return value


def example(lang: str) -> tuple[Deck, list[DeckNote]]:
    """The example deck of the lecture's pipeline in `lang` (English when there is none in it)."""
    path = EXAMPLES / f"pipeline.{lang}.json"
    return from_json((path if path.is_file() else EXAMPLES / "pipeline.en.json").read_bytes())
